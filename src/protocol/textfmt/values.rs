//! Arguments written as text (the XML-style formats): typing them without a schema,
//! and by the tool's schema when there is one.

use std::borrow::Cow;

use serde_json::Value;

/// The value text stands for, without a schema: valid JSON becomes that value (number,
/// `true`/`false`/`null`, object, array, quoted string); the Python words `True`,
/// `False`, `None` become `true`, `false`, `null`; anything else stays a string.
pub(crate) fn infer(text: &str) -> Value {
    match text.trim() {
        "True" => return Value::Bool(true),
        "False" => return Value::Bool(false),
        "None" => return Value::Null,
        _ => {}
    }
    let first = text.trim_start().bytes().next();
    let looks_like_json = matches!(first, Some(b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'));
    if looks_like_json && let Ok(value) = serde_json::from_str::<Value>(text) {
        return value;
    }
    Value::String(text.to_string())
}

/// MiniMax's reading without a schema: only `null` is not a string.
pub(crate) fn infer_minimax(text: &str) -> Value {
    if text.trim() == "null" { Value::Null } else { Value::String(text.to_string()) }
}

/// The value text stands for, given the parameter's JSON Schema: a `string` parameter
/// keeps the text; `integer`, `number`, `boolean`, `object`, `array` and `null` take
/// the text's JSON (or Python word) when it is of that type. Otherwise `None`: the
/// schema says nothing usable, and the schema-less reading stands.
pub(crate) fn by_schema(text: &str, schema: &Value) -> Option<Value> {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let inferred = infer(text);
    let fits = |t: &str, v: &Value| match t {
        "integer" => v.as_i64().is_some() || v.as_u64().is_some(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => false,
    };
    if types.iter().any(|t| fits(t, &inferred)) {
        return Some(inferred);
    }
    // A list or dict written as a Python literal (single quotes, True, None), for a
    // parameter that takes one.
    if types.iter().any(|t| *t == "array" || *t == "object")
        && let Some(value) = super::python::parse_literal(text.trim())
        && types.iter().any(|t| fits(t, &value))
    {
        return Some(value);
    }
    if types.contains(&"string") {
        return Some(Value::String(text.to_string()));
    }
    None
}

/// The five XML entities decoded (`&lt; &gt; &amp; &quot; &apos;`); other text kept.
pub(crate) fn decode_entities(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(rest.get(..at).unwrap_or_default());
        let tail = rest.get(at..).unwrap_or_default();
        let entity = [("&lt;", '<'), ("&gt;", '>'), ("&amp;", '&'), ("&quot;", '"'), ("&apos;", '\'')]
            .into_iter()
            .find(|(name, _)| tail.starts_with(name));
        match entity {
            Some((name, ch)) => {
                out.push(ch);
                rest = tail.get(name.len()..).unwrap_or_default();
            }
            None => {
                out.push('&');
                rest = tail.get(1..).unwrap_or_default();
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A value written between tags on lines of its own: the line break after the opening
/// tag and the one before the closing tag are layout, not value, and so is the
/// indentation of a closing tag on its own line. A value on one line is also trimmed of
/// surrounding spaces. The indentation of the value's own lines is kept (code stays code).
pub(crate) fn unwrap_lines(text: &str) -> &str {
    // Blanks after the opening tag, up to and including its line break.
    let first_break = text.find('\n');
    let text = match first_break {
        Some(at) if text.get(..at).is_some_and(|head| head.trim().is_empty()) => {
            text.get(at + 1..).unwrap_or_default()
        }
        _ => text,
    };
    // The closing tag's line: a last line of blanks, with the line break before it.
    let text = match text.rfind('\n') {
        Some(at) if text.get(at + 1..).is_some_and(|tail| tail.trim().is_empty()) => {
            let body = text.get(..at).unwrap_or_default();
            body.strip_suffix('\r').unwrap_or(body)
        }
        _ => text,
    };
    if text.contains('\n') { text } else { text.trim() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inference() {
        assert_eq!(infer("42"), json!(42));
        assert_eq!(infer("2.5"), json!(2.5));
        assert_eq!(infer("true"), json!(true));
        assert_eq!(infer("True"), json!(true));
        assert_eq!(infer("None"), json!(null));
        assert_eq!(infer(r#"{"k": 1}"#), json!({"k": 1}));
        assert_eq!(infer(r#""quoted""#), json!("quoted"));
        assert_eq!(infer("Paris"), json!("Paris"));
        assert_eq!(infer("12 apples"), json!("12 apples"));
        assert_eq!(infer_minimax("5"), json!("5"));
        assert_eq!(infer_minimax("null"), json!(null));
    }

    #[test]
    fn schema_typing() {
        assert_eq!(by_schema("3", &json!({"type": "string"})), Some(json!("3")));
        assert_eq!(by_schema("3", &json!({"type": "integer"})), Some(json!(3)));
        assert_eq!(by_schema("True", &json!({"type": "boolean"})), Some(json!(true)));
        assert_eq!(by_schema("x", &json!({"type": ["integer", "null"]})), None);
        assert_eq!(by_schema("null", &json!({"type": ["string", "null"]})), Some(json!(null)));
        assert_eq!(by_schema("[1]", &json!({"type": "array"})), Some(json!([1])));
        assert_eq!(by_schema("x", &json!({"description": "no type"})), None);
        assert_eq!(
            by_schema("[{'a': True}, None]", &json!({"type": "array"})),
            Some(json!([{"a": true}, null]))
        );
    }

    #[test]
    fn entities_and_layout() {
        assert_eq!(
            decode_entities("a &lt;b&gt; &amp; &quot;c&quot; &apos; &#60; &x"),
            "a <b> & \"c\" ' &#60; &x"
        );
        assert_eq!(unwrap_lines("\nline one\n  line two\n"), "line one\n  line two");
        assert_eq!(unwrap_lines("\n  x  \n"), "x");
        assert_eq!(unwrap_lines("\n    indented\n    code\n"), "    indented\n    code");
        assert_eq!(unwrap_lines("\n        Line 1\n        Line 2\n    "), "        Line 1\n        Line 2");
        assert_eq!(unwrap_lines("  \r\nx\r\ny\r\n"), "x\r\ny");
    }
}
