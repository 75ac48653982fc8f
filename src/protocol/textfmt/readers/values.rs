//! Arguments written as text (the XML-style formats): how the formats read them without
//! a schema, and by the tool's schema when they resolve a call. Both go through the
//! library's one text coercer ([`TextCoercion`]), with Python literals on (these models
//! were trained on Python); what is left here is the formats' own layout (entities, the
//! lines around a value).

use std::borrow::Cow;

use serde_json::Value;

use crate::tools::TextCoercion;

/// How the formats read text: JSON, and Python's literals.
fn coercion() -> TextCoercion {
    TextCoercion::new().python_literals(true)
}

/// The value text stands for, without a schema: valid JSON becomes that value (number,
/// `true`/`false`/`null`, object, array, quoted string); the Python words `True`,
/// `False`, `None` become `true`, `false`, `null`; anything else stays a string.
pub(crate) fn infer(text: &str) -> Value {
    coercion().infer(text)
}

/// The value text stands for, given the parameter's JSON Schema (`root` is the method's
/// parameter schema, which `$ref`s point into); `None` when the schema says nothing that
/// fits, and the schema-less reading stands.
pub(crate) fn by_schema(text: &str, schema: &Value, root: &Value) -> Option<Value> {
    coercion().by_schema(text, schema, root)
}

/// MiniMax's reading without a schema: only `null` is not a string.
pub(crate) fn infer_minimax(text: &str) -> Value {
    if text.trim() == "null" { Value::Null } else { Value::String(text.to_string()) }
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
    fn inference_and_typing_are_the_coercers_with_python_literals() {
        assert_eq!(infer("42"), json!(42));
        assert_eq!(infer("True"), json!(true));
        assert_eq!(infer("None"), json!(null));
        assert_eq!(infer("Paris"), json!("Paris"));
        assert_eq!(infer_minimax("5"), json!("5"));
        assert_eq!(infer_minimax("null"), json!(null));
        let root = json!({"$defs": {"n": {"type": "integer"}}});
        assert_eq!(by_schema("3", &json!({"type": "string"}), &root), Some(json!("3")));
        assert_eq!(by_schema("3", &json!({"$ref": "#/$defs/n"}), &root), Some(json!(3)));
        assert_eq!(by_schema("True", &json!({"type": "boolean"}), &root), Some(json!(true)));
        assert_eq!(by_schema("x", &json!({"type": ["integer", "null"]}), &root), None);
        assert_eq!(by_schema("x", &json!({"description": "no type"}), &root), None);
        assert_eq!(
            by_schema("[{'a': True}, None]", &json!({"type": "array"}), &root),
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
