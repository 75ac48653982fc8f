//! What a JSON Schema says, read in one place: the definition a local `$ref` names, the
//! alternatives of `anyOf`/`oneOf`, and the types a schema admits. The grammars' walks
//! (`grammar::Values`, the Python, Gemma and MiniMax-M3 notations) ask these questions
//! here, so a schema reads the same in every format.

use serde_json::{Map, Value};

/// The definition a local `$ref` names in `root` (`#/$defs/x`, `#/definitions/x`, `#`
/// for the root itself); `None` for a reference that is not local or names nothing.
pub(crate) fn target<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    reference.strip_prefix('#').and_then(|pointer| root.pointer(pointer))
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

/// The JSON types a schema admits: its `type` (a name or a list of names), else
/// `object` for a schema with `properties`, `array` for one with `items`; `None` when
/// it says nothing of its type.
pub(crate) fn kinds(object: &Map<String, Value>) -> Option<Vec<&str>> {
    match object.get("type") {
        Some(Value::String(kind)) => Some(vec![kind.as_str()]),
        Some(Value::Array(kinds)) => Some(kinds.iter().filter_map(Value::as_str).collect()),
        _ if object.contains_key("properties") => Some(vec!["object"]),
        _ if object.contains_key("items") => Some(vec!["array"]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_local_reference_names_its_definition() {
        let root = json!({"$defs": {"n": {"type": "integer"}}, "type": "object"});
        assert_eq!(target(&root, "#/$defs/n"), Some(&json!({"type": "integer"})));
        assert_eq!(target(&root, "#"), Some(&root));
        assert_eq!(target(&root, "#/$defs/missing"), None);
        assert_eq!(target(&root, "other.json#/x"), None);
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
}
