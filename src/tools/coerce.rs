//! The one reading of an argument written as text: by the parameter's JSON Schema when
//! there is one, by the text alone when there is not.
//!
//! Text protocols (VCP, the XML-style open-model formats) hand every argument over as
//! text. The executor types it before validation, and the open-model formats type it when
//! they resolve a call; both read it here, so `"42"` means the same number whichever
//! protocol it came through. Compiled in the parser-only build too.

use serde_json::Value;

use crate::{python, schema};

/// Reads a text argument as a JSON value.
///
/// **By schema** ([`by_schema`](Self::by_schema)): the parameter's schema is read as
/// the [`schema`](crate::schema) module reads it: through chains of local `$ref`s
/// (`#/$defs/…`, `#/definitions/…`), its types its `type` (a name or a list), else the
/// type its `properties` or `items` imply, else the types of its `anyOf`/`oneOf`
/// variants, in order. A reference the module refuses (to nothing, a cycle, a chain too
/// long) types nothing. Then:
/// - `null` allowed and the text is `null`: null.
/// - `string` allowed: the text as written.
/// - otherwise the first type the text reads as: `integer` (a whole number that fits 64
///   bits), `number` (an integer, or a finite decimal), `boolean` (`true`/`false`, any
///   case), `array`/`object` (JSON text of that kind).
/// - no type, but an `enum` (or `const`): the text itself when it is one of the values,
///   else the JSON it reads as when that is one (`"2"` for `enum: [1, 2]` is `2`).
///
/// Nothing fits: `None`, and the caller keeps what it had (the executor the text, which
/// validation then refuses with a message for the model).
///
/// **Without a schema** ([`infer`](Self::infer)): JSON text becomes that value (number,
/// `true`/`false`/`null`, quoted string, array, object); anything else stays a string.
///
/// **Python literals** ([`python_literals`](Self::python_literals), off by default; the
/// open-model formats turn it on, since those models were trained on Python): `None` is
/// null, `True`/`False` are booleans without a schema too, and a list or dict in Python
/// syntax (single quotes, `True`, `None`) is read for an `array` or `object` parameter.
///
/// Malformed text or schemas never fail: what cannot be read stays text.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::TextCoercion;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "n": {"$ref": "#/$defs/count"},
///         "tags": {"type": "array"},
///         "note": {"type": ["string", "null"]},
///         "level": {"enum": [1, 2, 3]}
///     },
///     "$defs": {"count": {"type": "integer"}}
/// });
/// let param = |name: &str| &schema["properties"][name];
/// let coercion = TextCoercion::new();
/// assert_eq!(coercion.coerce("42", param("n"), &schema), json!(42));
/// assert_eq!(coercion.coerce("null", param("note"), &schema), json!(null));
/// assert_eq!(coercion.coerce("3", param("note"), &schema), json!("3"));
/// assert_eq!(coercion.coerce("2", param("level"), &schema), json!(2));
/// assert_eq!(coercion.by_schema("many", param("n"), &schema), None);
/// assert_eq!(coercion.coerce("['a', 'b']", param("tags"), &schema), json!("['a', 'b']"));
///
/// let python = TextCoercion::new().python_literals(true);
/// assert_eq!(python.coerce("['a', 'b']", param("tags"), &schema), json!(["a", "b"]));
/// assert_eq!(python.infer("None"), json!(null));
/// assert_eq!(coercion.infer("None"), json!("None"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TextCoercion {
    /// Read Python's literals as well (see the type's documentation).
    pub python_literals: bool,
}

impl TextCoercion {
    /// The JSON reading, without Python literals.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`python_literals`](Self::python_literals).
    #[must_use]
    pub fn python_literals(mut self, on: bool) -> Self {
        self.python_literals = on;
        self
    }

    /// `text` read by `schema`, a parameter's schema; `root` is the document its local
    /// `$ref`s point into (the method's whole parameter schema). `None` when the schema
    /// declares nothing the text fits.
    pub fn by_schema(&self, text: &str, schema: &Value, root: &Value) -> Option<Value> {
        let schema = schema::resolve(root, schema).ok()?;
        let types = schema::types(root, schema).ok()?;
        if types.is_empty() {
            return self.by_values(text, schema);
        }
        let trimmed = text.trim();
        if types.contains(&"null") && (trimmed == "null" || (self.python_literals && trimmed == "None")) {
            return Some(Value::Null);
        }
        if types.contains(&"string") {
            return Some(Value::String(text.to_string()));
        }
        types.into_iter().find_map(|ty| self.as_type(trimmed, ty))
    }

    /// [`by_schema`](Self::by_schema), or the text as a string when nothing fits.
    pub fn coerce(&self, text: &str, schema: &Value, root: &Value) -> Value {
        self.by_schema(text, schema, root).unwrap_or_else(|| Value::String(text.to_string()))
    }

    /// A call's arguments read by its method's parameter schema (`schema`, an object
    /// schema): each string argument with a declared parameter as [`coerce`](Self::coerce)
    /// reads it, an empty string for an optional parameter left out, everything else as
    /// it is. This is how the executor types a text protocol's arguments before
    /// validation, and how a host that hands calls on (a gateway) types them.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_calling::tools::TextCoercion;
    /// let schema = json!({"type": "object", "required": ["n"],
    ///     "properties": {"n": {"type": "integer"}, "note": {"type": "string"}, "on": {"type": "boolean"}}});
    /// let args = json!({"n": "3", "note": "", "on": true, "extra": "x"});
    /// let typed = TextCoercion::new().coerce_args(args.as_object().unwrap(), &schema);
    /// assert_eq!(serde_json::Value::Object(typed), json!({"n": 3, "on": true, "extra": "x"}));
    /// ```
    pub fn coerce_args<'a>(
        &self,
        args: impl IntoIterator<Item = (&'a String, &'a Value)>,
        schema: &Value,
    ) -> serde_json::Map<String, Value> {
        let empty = serde_json::Map::new();
        let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let required = schema.as_object().map(schema::required).unwrap_or_default();
        let mut out = serde_json::Map::new();
        for (key, value) in args {
            let coerced = match (value, properties.get(key)) {
                (Value::String(s), _) if s.trim().is_empty() && !required.contains(&key.as_str()) => continue,
                (Value::String(s), Some(parameter)) => self.coerce(s, parameter, schema),
                (other, _) => other.clone(),
            };
            out.insert(key.clone(), coerced);
        }
        out
    }

    /// `text` read without a schema: the JSON it is, else a string.
    pub fn infer(&self, text: &str) -> Value {
        if self.python_literals {
            match text.trim() {
                "True" => return Value::Bool(true),
                "False" => return Value::Bool(false),
                "None" => return Value::Null,
                _ => {}
            }
        }
        let first = text.trim_start().bytes().next();
        let looks_like_json =
            matches!(first, Some(b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'));
        if looks_like_json && let Ok(value) = serde_json::from_str::<Value>(text) {
            return value;
        }
        Value::String(text.to_string())
    }

    /// The text read as one JSON type, if it is one.
    fn as_type(&self, trimmed: &str, ty: &str) -> Option<Value> {
        let whole = || {
            trimmed
                .parse::<i64>()
                .ok()
                .map(Value::from)
                .or_else(|| trimmed.parse::<u64>().ok().map(Value::from))
        };
        match ty {
            "integer" => whole(),
            "number" => {
                whole().or_else(|| trimmed.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::from))
            }
            "boolean" => {
                if trimmed.eq_ignore_ascii_case("true") {
                    Some(Value::Bool(true))
                } else if trimmed.eq_ignore_ascii_case("false") {
                    Some(Value::Bool(false))
                } else {
                    None
                }
            }
            "array" | "object" => {
                let is_kind = |v: &Value| if ty == "array" { v.is_array() } else { v.is_object() };
                serde_json::from_str::<Value>(trimmed).ok().filter(is_kind).or_else(|| {
                    self.python_literals.then(|| python::parse_literal(trimmed)).flatten().filter(is_kind)
                })
            }
            _ => None,
        }
    }

    /// A schema without a type, read by its `enum` (or `const`) values.
    fn by_values(&self, text: &str, schema: &Value) -> Option<Value> {
        let values = schema::values(schema)?;
        let as_text = Value::String(text.to_string());
        if values.contains(&as_text) {
            return Some(as_text);
        }
        let parsed = self.infer(text.trim());
        values.contains(&parsed).then_some(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params() -> Value {
        json!({
            "type": "object",
            "properties": {
                "s": {"type": "string"},
                "i": {"type": "integer"},
                "n": {"type": "number"},
                "b": {"type": "boolean"},
                "z": {"type": "null"},
                "o": {"type": "object"},
                "a": {"type": "array"},
                "opt": {"type": ["integer", "null"]},
                "maybe": {"type": ["string", "null"]},
                "ref": {"$ref": "#/$defs/level"},
                "chain": {"$ref": "#/$defs/alias"},
                "any": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/flags"}]},
                "one": {"oneOf": [{"type": "boolean"}, {"type": "array"}]},
                "e": {"enum": [1, 2, "three"]},
                "c": {"const": true},
                "loop": {"$ref": "#/$defs/loop"},
                "selfish": {"anyOf": [{"$ref": "#/$defs/selfish"}]},
                "untyped": {"description": "anything"}
            },
            "$defs": {
                "level": {"type": "integer"},
                "alias": {"$ref": "#/$defs/level"},
                "flags": {"type": "object"},
                "loop": {"$ref": "#/$defs/loop"},
                "selfish": {"anyOf": [{"$ref": "#/$defs/selfish"}]}
            }
        })
    }

    fn by(coercion: TextCoercion, key: &str, text: &str) -> Option<Value> {
        let root = params();
        coercion.by_schema(text, &root["properties"][key], &root)
    }

    #[test]
    fn scalars_by_type() {
        let c = TextCoercion::new();
        assert_eq!(by(c, "s", " 3 "), Some(json!(" 3 ")), "a string keeps the text as written");
        assert_eq!(by(c, "i", " 42 "), Some(json!(42)));
        assert_eq!(by(c, "i", "18446744073709551615"), Some(json!(u64::MAX)));
        assert_eq!(by(c, "i", "4.5"), None);
        assert_eq!(by(c, "i", "99999999999999999999999"), None);
        assert_eq!(by(c, "n", "4.5"), Some(json!(4.5)));
        assert_eq!(by(c, "n", "-7"), Some(json!(-7)));
        assert_eq!(by(c, "n", "NaN"), None);
        assert_eq!(by(c, "n", "inf"), None);
        assert_eq!(by(c, "b", "TRUE"), Some(json!(true)));
        assert_eq!(by(c, "b", "false"), Some(json!(false)));
        assert_eq!(by(c, "b", "yes"), None);
        assert_eq!(by(c, "z", "null"), Some(json!(null)));
        assert_eq!(by(c, "z", "None"), None);
        assert_eq!(by(c, "opt", "null"), Some(json!(null)));
        assert_eq!(by(c, "opt", "5"), Some(json!(5)));
        assert_eq!(by(c, "maybe", "null"), Some(json!(null)), "null wins where null is allowed");
        assert_eq!(by(c, "maybe", "nothing"), Some(json!("nothing")));
    }

    #[test]
    fn objects_and_arrays() {
        let c = TextCoercion::new();
        assert_eq!(by(c, "o", r#"{"k": [1]}"#), Some(json!({"k": [1]})));
        assert_eq!(by(c, "o", "[1]"), None, "JSON of the wrong kind");
        assert_eq!(by(c, "a", " [1, 2] "), Some(json!([1, 2])));
        assert_eq!(by(c, "a", "[1, 2"), None, "malformed JSON");
        assert_eq!(by(c, "a", "['x', True, None]"), None, "Python syntax only with the option");
        let py = c.python_literals(true);
        assert_eq!(by(py, "a", "['x', True, None]"), Some(json!(["x", true, null])));
        assert_eq!(by(py, "o", "{'k': (1"), None, "malformed Python");
        assert_eq!(by(py, "o", "{'k': {'n': 1.5}}"), Some(json!({"k": {"n": 1.5}})));
    }

    #[test]
    fn references_and_variants() {
        let c = TextCoercion::new();
        assert_eq!(by(c, "ref", "3"), Some(json!(3)));
        assert_eq!(by(c, "chain", "3"), Some(json!(3)), "a reference to a reference");
        assert_eq!(by(c, "any", "3"), Some(json!(3)));
        assert_eq!(by(c, "any", r#"{"x": true}"#), Some(json!({"x": true})), "the variant behind a $ref");
        assert_eq!(by(c, "one", "true"), Some(json!(true)));
        assert_eq!(by(c, "one", "[true]"), Some(json!([true])));
        assert_eq!(by(c, "one", "maybe"), None);
        // A schema that refers to itself, directly or through a variant, ends.
        assert_eq!(by(c, "loop", "3"), None);
        assert_eq!(by(c, "selfish", "3"), None);
        assert_eq!(by(c, "untyped", "3"), None, "no type: the caller keeps what it has");
        let root = params();
        assert_eq!(c.coerce("3", &root["properties"]["untyped"], &root), json!("3"));
        assert_eq!(c.coerce("x", &json!({"$ref": "#/nowhere"}), &root), json!("x"));
        assert_eq!(c.coerce("x", &json!({"$ref": 7}), &root), json!("x"));
    }

    #[test]
    fn enums_and_constants() {
        let c = TextCoercion::new();
        assert_eq!(by(c, "e", "2"), Some(json!(2)));
        assert_eq!(by(c, "e", " 1 "), Some(json!(1)));
        assert_eq!(by(c, "e", "three"), Some(json!("three")));
        assert_eq!(by(c, "e", "4"), None);
        assert_eq!(by(c, "c", "true"), Some(json!(true)));
        assert_eq!(by(c, "c", "True"), None);
        assert_eq!(by(c.python_literals(true), "c", "True"), Some(json!(true)));
        let both = json!({"enum": ["1", 1]});
        assert_eq!(c.by_schema("1", &both, &both), Some(json!("1")), "the text itself first");
    }

    #[test]
    fn inference_without_a_schema() {
        let c = TextCoercion::new();
        let py = c.python_literals(true);
        assert_eq!(c.infer("42"), json!(42));
        assert_eq!(c.infer("2.5"), json!(2.5));
        assert_eq!(c.infer("true"), json!(true));
        assert_eq!(c.infer(" null "), json!(null));
        assert_eq!(c.infer(r#"{"k": 1}"#), json!({"k": 1}));
        assert_eq!(c.infer(r#""quoted""#), json!("quoted"));
        assert_eq!(c.infer("Paris"), json!("Paris"));
        assert_eq!(c.infer("12 apples"), json!("12 apples"));
        assert_eq!(c.infer("True"), json!("True"));
        assert_eq!(c.infer("None"), json!("None"));
        assert_eq!(py.infer("True"), json!(true));
        assert_eq!(py.infer(" False "), json!(false));
        assert_eq!(py.infer("None"), json!(null));
        assert_eq!(py.infer("nothing"), json!("nothing"));
    }

    #[test]
    fn malformed_input_never_panics() {
        let root = params();
        let schemas = [
            json!(null),
            json!(true),
            json!([1, 2]),
            json!({"type": 7}),
            json!({"type": ["integer", 3, null]}),
            json!({"anyOf": "no"}),
            json!({"anyOf": [null, 1, {"type": "integer"}]}),
            json!({"enum": "no"}),
            json!({"$ref": "#/properties/loop"}),
            json!({"$ref": "#/$defs/loop/$ref"}),
        ];
        let texts = [
            "",
            " ",
            "\u{0}",
            "{",
            "[",
            "'",
            "[{'a': [",
            "((((",
            "1e999999",
            "-",
            "–5",
            "\u{feff}1",
            "ünïcödé",
        ];
        for coercion in [TextCoercion::new(), TextCoercion::new().python_literals(true)] {
            for schema in &schemas {
                for text in texts {
                    let _ = coercion.coerce(text, schema, &root);
                    let _ = coercion.infer(text);
                }
            }
            let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
            assert_eq!(
                coercion.coerce(&deep, &json!({"type": "array"}), &root),
                json!(deep),
                "too deep to read"
            );
        }
    }
}
