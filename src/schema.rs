//! What a JSON Schema says, read in one place.
//!
//! Every reader of tool schemas in the crate asks its questions here: text coercion
//! ([`TextCoercion`](crate::tools::TextCoercion)), declarations
//! ([`ParameterInfo`](crate::tools::ParameterInfo)), argument defaults, the registry's
//! check of a tool's schemas, the schemas
//! rewritten for native providers
//! ([`gemini`](crate::protocol::native::schema::gemini)), and the grammars' walks (JSON
//! and text values, Python literals, Gemma's and MiniMax-M3's notations). So a schema
//! reads the same whichever of them reads it.
//!
//! **References.** A `$ref` is local: a JSON pointer into the document after `#`
//! (`#/$defs/x`, `#/definitions/x`, `#` for the root itself; `%XX` escapes in it
//! decoded). It is followed through chains (a reference to a reference), up to
//! [`MAX_REF_CHAIN`] of them. A reference that is not a string, not local, or names
//! nothing; a chain that comes back to a schema it passed (a cycle, which never reaches
//! a schema that says anything); and a chain past the limit are refused with a
//! [`SchemaError`]. Recursion through structure (a node whose `next` property refers to
//! the node) is no cycle: each reference ends at an object schema. Keywords beside a
//! `$ref` are annotations (`description`, `default`: the ones beside it win); what a
//! value must be is read from the schema the chain ends at.
//!
//! **Types** are a schema's `type` (a name, or a list such as `["string", "null"]` for a
//! nullable value), else `object` for a schema with `properties` and `array` for one with
//! `items`, else the types of its `anyOf` (or `oneOf`) options in order. **Alternatives**
//! are the options of `anyOf` (else `oneOf`), each merged into the rest of the schema.
//! `allOf` is not merged: no reader of the crate reads it, and validation checks it.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

/// How many `$ref`s one chain may pass before it is refused
/// ([`SchemaError::TooLong`]).
pub const MAX_REF_CHAIN: usize = 32;

/// How deep `anyOf`/`oneOf` options inside options are read for their types.
const MAX_NESTING: usize = 32;

/// Why a schema's `$ref` cannot be read. Every reader of schemas in the crate refuses
/// the same references with the same error (see the [module docs](self)).
///
/// ```
/// use serde_json::json;
/// use tool_calling::schema::{SchemaError, resolve};
///
/// let root = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}});
/// let error = resolve(&root, &json!({"$ref": "#/$defs/a"})).unwrap_err();
/// assert_eq!(error, SchemaError::Cycle { reference: "#/$defs/a".into() });
/// assert_eq!(error.to_string(), "`$ref` #/$defs/a closes a cycle of references");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaError {
    /// A reference that is not a string, not local (`#…`), or names nothing in the
    /// document.
    Unresolved {
        /// The reference as written (JSON text when it is not a string).
        reference: String,
    },
    /// A chain of references that comes back to a schema it passed.
    Cycle {
        /// The reference that closes the cycle.
        reference: String,
    },
    /// A chain of more than [`MAX_REF_CHAIN`] references.
    TooLong {
        /// The first reference past the limit.
        reference: String,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::Unresolved { reference } => {
                write!(f, "`$ref` {reference} does not name a definition of the schema")
            }
            SchemaError::Cycle { reference } => write!(f, "`$ref` {reference} closes a cycle of references"),
            SchemaError::TooLong { reference } => {
                write!(f, "`$ref` {reference} is more than {MAX_REF_CHAIN} references down a chain")
            }
        }
    }
}

impl std::error::Error for SchemaError {}

/// The schema `schema` stands for in the document `root`: itself when it holds no
/// `$ref`, else the schema at the end of its chain of local references (see the
/// [module docs](self)). `schema` need not be part of `root`.
///
/// ```
/// use serde_json::json;
/// use tool_calling::schema::{SchemaError, resolve};
///
/// let root = json!({"$defs": {"alias": {"$ref": "#/$defs/n"}, "n": {"type": "integer"}}});
/// assert_eq!(resolve(&root, &json!({"$ref": "#/$defs/alias"})), Ok(&json!({"type": "integer"})));
/// assert_eq!(resolve(&root, &json!({"type": "string"})), Ok(&json!({"type": "string"})));
/// assert_eq!(
///     resolve(&root, &json!({"$ref": "other.json#/n"})),
///     Err(SchemaError::Unresolved { reference: "other.json#/n".into() })
/// );
/// ```
pub fn resolve<'s>(root: &'s Value, schema: &'s Value) -> Result<&'s Value, SchemaError> {
    follow(root, schema, vec![schema], 0)
}

/// The schema the local reference `reference` stands for in `root`, followed through
/// chains as [`resolve`] follows them.
pub(crate) fn target<'s>(root: &'s Value, reference: &str) -> Result<&'s Value, SchemaError> {
    let first = hop(root, reference)?;
    follow(root, first, vec![first], 1)
}

/// `current` followed through its references; `passed` holds the schemas the chain has
/// reached so far, after `hops` references.
fn follow<'s>(
    root: &'s Value,
    mut current: &'s Value,
    mut passed: Vec<&'s Value>,
    mut hops: usize,
) -> Result<&'s Value, SchemaError> {
    while let Some(reference) = current.get("$ref") {
        let Some(reference) = reference.as_str() else {
            return Err(SchemaError::Unresolved { reference: reference.to_string() });
        };
        if hops >= MAX_REF_CHAIN {
            return Err(SchemaError::TooLong { reference: reference.to_string() });
        }
        let next = hop(root, reference)?;
        if passed.iter().any(|seen| std::ptr::eq(*seen, next)) {
            return Err(SchemaError::Cycle { reference: reference.to_string() });
        }
        passed.push(next);
        current = next;
        hops += 1;
    }
    Ok(current)
}

/// The schema one local reference names, not followed further.
fn hop<'s>(root: &'s Value, reference: &str) -> Result<&'s Value, SchemaError> {
    let unresolved = || SchemaError::Unresolved { reference: reference.to_string() };
    let fragment = reference.strip_prefix('#').ok_or_else(unresolved)?;
    let pointer = percent_decoded(fragment).ok_or_else(unresolved)?;
    root.pointer(&pointer).ok_or_else(unresolved)
}

/// A URI fragment with its `%XX` escapes decoded; `None` for a malformed escape or
/// bytes that are no UTF-8.
fn percent_decoded(fragment: &str) -> Option<Cow<'_, str>> {
    if !fragment.contains('%') {
        return Some(Cow::Borrowed(fragment));
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(byte);
            i += 1;
        }
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// A keyword that annotates a schema (`description`, `default`): the one beside its
/// `$ref`, else that of the schema the reference stands for (`None` when it is refused).
pub(crate) fn annotation<'s>(root: &'s Value, schema: &'s Value, key: &str) -> Option<&'s Value> {
    schema.get(key).or_else(|| resolve(root, schema).ok()?.get(key))
}

/// A schema's alternatives: for `anyOf` (else `oneOf`), the keyword and each option
/// merged into the rest of the schema (the option's keywords win). `None` when the
/// schema has neither list.
pub(crate) fn alternatives(object: &Map<String, Value>) -> Option<(&'static str, Vec<Value>)> {
    ["anyOf", "oneOf"].into_iter().find_map(|key| {
        let options = object.get(key)?.as_array()?;
        Some((key, options.iter().map(|option| merged(object, option, key)).collect()))
    })
}

/// `outer` with one option of its `key` merged in (the option wins).
fn merged(outer: &Map<String, Value>, option: &Value, key: &str) -> Value {
    let mut out = outer.clone();
    out.remove(key);
    if let Value::Object(inner) = option {
        out.extend(inner.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Value::Object(out)
}

/// A whole-number keyword of a schema (`minLength`, `maxItems`, …), capped at
/// `u32::MAX`; `None` when absent or not a whole number.
pub(crate) fn count(object: &Map<String, Value>, key: &str) -> Option<u32> {
    object.get(key).and_then(Value::as_u64).map(|n| n.min(u64::from(u32::MAX)) as u32)
}

/// How many items an array of `object` holds: its `minItems` (0 when absent) and
/// `maxItems`.
pub(crate) fn item_bounds(object: &Map<String, Value>) -> (u32, Option<u32>) {
    (count(object, "minItems").unwrap_or(0), count(object, "maxItems"))
}

/// The JSON types one schema object names: its `type` (a name or a list of names),
/// else `object` for a schema with `properties`, `array` for one with `items`; `None`
/// when it says nothing of its type. References and alternatives are not read (see
/// [`types`]).
pub(crate) fn kinds(object: &Map<String, Value>) -> Option<Vec<&str>> {
    match object.get("type") {
        Some(Value::String(kind)) => Some(vec![kind.as_str()]),
        Some(Value::Array(kinds)) => Some(kinds.iter().filter_map(Value::as_str).collect()),
        _ if object.contains_key("properties") => Some(vec!["object"]),
        _ if object.contains_key("items") => Some(vec!["array"]),
        _ => None,
    }
}

/// The JSON types `schema` admits, in the order it names them: those of the schema its
/// references stand for ([`kinds`]), else those of its `anyOf` (else `oneOf`) options,
/// each resolved, in order. Empty when the schema says nothing of its type (any value,
/// or only an `enum`/`const`); an error when a reference on the way is refused.
pub(crate) fn types<'s>(root: &'s Value, schema: &'s Value) -> Result<Vec<&'s str>, SchemaError> {
    let mut out = Vec::new();
    collect_types(root, schema, 0, &mut out)?;
    Ok(out)
}

fn collect_types<'s>(
    root: &'s Value,
    schema: &'s Value,
    depth: usize,
    out: &mut Vec<&'s str>,
) -> Result<(), SchemaError> {
    let Value::Object(object) = resolve(root, schema)? else { return Ok(()) };
    if let Some(kinds) = kinds(object) {
        out.extend(kinds);
        return Ok(());
    }
    if depth >= MAX_NESTING {
        return Ok(());
    }
    let options = ["anyOf", "oneOf"].into_iter().find_map(|key| object.get(key)?.as_array());
    for option in options.into_iter().flatten() {
        collect_types(root, option, depth + 1, out)?;
    }
    Ok(())
}

/// The values an `enum` (else a `const`) allows; `None` when the schema has neither.
pub(crate) fn values(schema: &Value) -> Option<&[Value]> {
    match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(values)), _) => Some(values),
        (_, Some(value)) => Some(std::slice::from_ref(value)),
        _ => None,
    }
}

/// The names an object schema lists in `required` (none when it lists none).
pub(crate) fn required(object: &Map<String, Value>) -> Vec<&str> {
    object
        .get("required")
        .and_then(Value::as_array)
        .map(|required| required.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// An object schema's properties (name, schema, whether it is required) in the order of
/// `properties`; a schema that is no object schema has none.
pub(crate) fn properties(schema: &Value) -> Vec<(&str, &Value, bool)> {
    let Value::Object(object) = schema else { return Vec::new() };
    let required = required(object);
    object
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.as_str(), v, required.contains(&k.as_str()))).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn defs() -> Value {
        json!({
            "type": "object",
            "$defs": {
                "n": {"type": "integer"},
                "alias": {"$ref": "#/$defs/n"},
                "alias2": {"$ref": "#/$defs/alias"},
                "self": {"$ref": "#/$defs/self"},
                "a": {"$ref": "#/$defs/b"},
                "b": {"$ref": "#/$defs/a"},
                "odd name": {"type": "boolean"},
                "node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}
            }
        })
    }

    #[test]
    fn references_are_followed_through_chains() {
        let root = defs();
        let n = json!({"type": "integer"});
        assert_eq!(target(&root, "#/$defs/n"), Ok(&n));
        assert_eq!(target(&root, "#/$defs/alias2"), Ok(&n));
        assert_eq!(resolve(&root, &json!({"$ref": "#/$defs/alias2"})), Ok(&n));
        assert_eq!(target(&root, "#"), Ok(&root));
        assert_eq!(target(&root, "#/$defs/odd%20name"), Ok(&json!({"type": "boolean"})));
        // Recursion through a property is no cycle.
        assert_eq!(target(&root, "#/$defs/node").map(|node| node["type"].clone()), Ok(json!("object")));
    }

    #[test]
    fn refused_references() {
        let root = defs();
        let unresolved = |r: &str| Err(SchemaError::Unresolved { reference: r.into() });
        assert_eq!(target(&root, "#/$defs/missing"), unresolved("#/$defs/missing"));
        assert_eq!(target(&root, "other.json#/x"), unresolved("other.json#/x"));
        assert_eq!(target(&root, "#/$defs/bad%2"), unresolved("#/$defs/bad%2"));
        assert_eq!(target(&root, "#anchor"), unresolved("#anchor"));
        assert_eq!(resolve(&root, &json!({"$ref": 7})), unresolved("7"));
        let cycle = |r: &str| Err(SchemaError::Cycle { reference: r.into() });
        assert_eq!(target(&root, "#/$defs/self"), cycle("#/$defs/self"));
        assert_eq!(resolve(&root, &root["$defs"]["self"]), cycle("#/$defs/self"));
        assert_eq!(resolve(&root, &json!({"$ref": "#/$defs/a"})), cycle("#/$defs/a"));
        assert_eq!(target(&root, "#/$defs/b"), cycle("#/$defs/b"));
        // d1 → d2 → … → d33, the last one no reference: from `{"$ref": "#/$defs/dN"}`
        // the chain passes 34 - N references.
        let mut long = Map::new();
        for i in 1..=MAX_REF_CHAIN {
            long.insert(format!("d{i}"), json!({"$ref": format!("#/$defs/d{}", i + 1)}));
        }
        long.insert(format!("d{}", MAX_REF_CHAIN + 1), json!({"type": "null"}));
        let long = json!({"$defs": long});
        let null = Ok(&long["$defs"]["d33"]);
        assert_eq!(
            resolve(&long, &json!({"$ref": "#/$defs/d2"})),
            null,
            "the most references a chain may pass"
        );
        assert_eq!(target(&long, "#/$defs/d2"), null);
        let too_long = Err(SchemaError::TooLong { reference: "#/$defs/d33".into() });
        assert_eq!(resolve(&long, &json!({"$ref": "#/$defs/d1"})), too_long);
        assert_eq!(target(&long, "#/$defs/d1"), too_long);
    }

    #[test]
    fn alternatives_keep_the_rest_of_the_schema() {
        let schema = object(json!({"description": "d", "anyOf": [{"type": "string"}, {"description": "e"}]}));
        let (key, options) = alternatives(&schema).unwrap();
        assert_eq!(key, "anyOf");
        assert_eq!(options, vec![json!({"description": "d", "type": "string"}), json!({"description": "e"})]);
        let one = object(json!({"oneOf": [{"type": "null"}]}));
        assert_eq!(alternatives(&one), Some(("oneOf", vec![json!({"type": "null"})])));
        assert_eq!(alternatives(&object(json!({"type": "string"}))), None);
    }

    #[test]
    fn kinds_are_named_or_implied() {
        assert_eq!(kinds(&object(json!({"type": "string"}))), Some(vec!["string"]));
        assert_eq!(kinds(&object(json!({"type": ["string", "null", 3]}))), Some(vec!["string", "null"]));
        assert_eq!(kinds(&object(json!({"properties": {}}))), Some(vec!["object"]));
        assert_eq!(kinds(&object(json!({"items": {}}))), Some(vec!["array"]));
        assert_eq!(kinds(&object(json!({"description": "x"}))), None);
    }

    #[test]
    fn types_read_through_references_and_options() {
        let root = defs();
        let types = |schema: Value| types(&root, &schema).map(|t| t.join(","));
        assert_eq!(types(json!({"$ref": "#/$defs/alias2"})), Ok("integer".into()));
        assert_eq!(types(json!({"type": ["string", "null"]})), Ok("string,null".into()));
        assert_eq!(
            types(json!({"anyOf": [{"$ref": "#/$defs/alias"}, {"type": "null"}]})),
            Ok("integer,null".into())
        );
        assert_eq!(types(json!({"oneOf": [{"properties": {}}, {"enum": [1]}]})), Ok("object".into()));
        assert_eq!(types(json!({"enum": [1, 2]})), Ok(String::new()));
        assert!(matches!(
            types(json!({"anyOf": [{"type": "null"}, {"$ref": "#/$defs/a"}]})),
            Err(SchemaError::Cycle { .. })
        ));
        // Options that refer back to themselves end.
        let selfish = json!({"$defs": {"s": {"anyOf": [{"$ref": "#/$defs/s"}]}}});
        assert_eq!(super::types(&selfish, &json!({"$ref": "#/$defs/s"})), Ok(Vec::new()));
    }

    #[test]
    fn values_required_and_annotations() {
        assert_eq!(values(&json!({"enum": [1, "a"]})), Some(&[json!(1), json!("a")][..]));
        assert_eq!(values(&json!({"const": true})), Some(&[json!(true)][..]));
        assert_eq!(values(&json!({"enum": "no"})), None);
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"$ref": "#/$defs/d", "default": 2}, "c": {"$ref": "#/$defs/d"}},
            "required": ["a", 7, "zz"],
            "$defs": {"d": {"type": "integer", "default": 1, "description": "D"}}
        });
        let listed: Vec<(&str, bool)> = properties(&schema).into_iter().map(|(k, _, r)| (k, r)).collect();
        assert_eq!(listed, [("a", true), ("b", false), ("c", false)]);
        assert_eq!(required(&object(schema.clone())), ["a", "zz"]);
        assert!(properties(&json!([1])).is_empty());
        let property = |k: &str| &schema["properties"][k];
        assert_eq!(annotation(&schema, property("b"), "default"), Some(&json!(2)), "beside the $ref wins");
        assert_eq!(annotation(&schema, property("c"), "default"), Some(&json!(1)));
        assert_eq!(annotation(&schema, property("c"), "description"), Some(&json!("D")));
        assert_eq!(annotation(&schema, property("a"), "default"), None);
    }
}
