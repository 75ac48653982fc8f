//! Python call lists (`[get_weather(city="Paris"), add(a=1)]`): where one starts,
//! Python literals written for `pythonic`, `lfm2` and `sarashina`, and the grammar of
//! Python calls with literal arguments ([`calls`]) for `pythonic`, `lfm2` and `olmo3`.

use serde_json::Value;

use crate::grammar::{Builder, CharSet, Expr, GrammarError, ValueStyle, Values, properties};

/// Longest function name a list may start with.
const MAX_NAME: usize = 256;

/// Whether a call list starts at `at` (`[`, spaces, a name, spaces, `(`): `Some(true)`
/// yes, `Some(false)` no, `None` undecided (the text ends first).
pub(crate) fn list_starts(text: &str, at: usize) -> Option<bool> {
    let bytes = text.as_bytes();
    let mut i = at + 1;
    while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    let name_start = i;
    match bytes.get(i) {
        None => return None,
        Some(b) if b.is_ascii_alphabetic() || *b == b'_' => {}
        Some(_) => return Some(false),
    }
    while bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) {
        i += 1;
        if i - name_start > MAX_NAME {
            return Some(false);
        }
    }
    while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    match bytes.get(i) {
        None => None,
        Some(b'(') => Some(true),
        Some(_) => Some(false),
    }
}

/// `value` as a Python literal, as `pythonic`'s grammar admits it: strings in double quotes
/// (`\`, `"`, control characters and `<` escaped), `True`/`False`/`None`, numbers and
/// nested lists and dicts as JSON (`<` in their strings written `\u003c`).
pub(crate) fn python_text(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            let mut out = String::with_capacity(s.len() + 2);
            python_string(s, '"', &mut out);
            out
        }
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => crate::protocol::textfmt::grammar::json_text(other),
    }
}

/// `s` as a Python string literal in `quote`s, appended to `out`: the quote, `\`,
/// control characters and `<` escaped (so no string opens a tag).
pub(crate) fn python_string(s: &str, quote: char, out: &mut String) {
    out.push(quote);
    for c in s.chars() {
        match c {
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7F}' || c == '<' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// A list of one call, `[name(key=value, …)]`, as `pythonic` writes it.
pub(crate) fn write_list(name: &str, args: &serde_json::Map<String, serde_json::Value>) -> String {
    let args: Vec<String> = args.iter().map(|(key, value)| format!("{key}={}", python_text(value))).collect();
    format!("[{name}({})]", args.join(", "))
}

/// How the literals of a call are written in a grammar.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Literals {
    /// JSON's words and strings (`true`, `false`, `null`; strings with JSON's escapes, as
    /// OLMo 3's template writes values), not Python's (`True`, `False`, `None`; strings
    /// with the escapes [`python_string`] writes).
    pub json_words: bool,
    /// No raw `<` in a string (it is written `\u003c`): while reasoning is hidden, so that
    /// no string opens a reasoning tag, or where a token ends the call list wherever it
    /// stands.
    pub no_raw_lt: bool,
}

/// One call `NAME(key=value, …)` of any of `methods`, keyword arguments in schema order
/// separated by `, `, values the literals of their schemas.
pub(crate) fn calls(
    b: &mut Builder,
    methods: &[(String, &Value)],
    literals: Literals,
) -> Result<Expr, GrammarError> {
    let style = ValueStyle::json("<");
    let mut calls = Vec::new();
    for (name, schema) in methods {
        let mut members = Vec::new();
        for (key, property, required) in properties(schema) {
            let value = literal(b, &style, literals, name, property, schema, 0)?;
            members.push((Expr::seq([Expr::lit(format!("{key}=")), value]), required));
        }
        let mut values = Values::new(b, style.clone(), name, schema);
        let list = values.member_list(members, Expr::lit(", "));
        let body = Expr::seq([Expr::lit(format!("{name}(")), list, Expr::lit(")")]);
        calls.push(b.rule(name, body));
    }
    Ok(b.rule("call", Expr::alt(calls)))
}

/// `value` as a literal in the words of `literals` (JSON's, or Python's as
/// [`python_text`] writes it).
fn literal_text(value: &Value, literals: Literals) -> String {
    if literals.json_words { crate::protocol::textfmt::grammar::json_text(value) } else { python_text(value) }
}

/// A Python literal of `schema` (`root`: the method's parameters, which `$ref`s point
/// into).
fn literal(
    b: &mut Builder,
    style: &ValueStyle,
    literals: Literals,
    method: &str,
    schema: &Value,
    root: &Value,
    depth: u32,
) -> Result<Expr, GrammarError> {
    let error =
        |message: &str| GrammarError::Schema { method: method.to_string(), message: message.to_string() };
    if depth > 32 {
        return Err(error("the schema nests deeper than 32 levels"));
    }
    let Value::Object(object) = schema else {
        return Values::new(b, style.clone(), method, root).json(schema);
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .ok_or_else(|| error(&format!("`$ref` {reference} does not name a definition of the schema")))?;
        return literal(b, style, literals, method, target, root, depth + 1);
    }
    if let Some(constant) = object.get("const") {
        return Ok(Expr::lit(literal_text(constant, literals)));
    }
    if let Some(options) = object.get("enum").and_then(Value::as_array) {
        if options.is_empty() {
            return Err(error("an empty `enum` admits no value"));
        }
        return Ok(Expr::alt(options.iter().map(|v| Expr::lit(literal_text(v, literals)))));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = object.get(key).and_then(Value::as_array) {
            let mut alternatives = Vec::new();
            for option in options {
                let mut merged = object.clone();
                merged.remove(key);
                if let Value::Object(inner) = option {
                    merged.extend(inner.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                alternatives.push(literal(
                    b,
                    style,
                    literals,
                    method,
                    &Value::Object(merged),
                    root,
                    depth + 1,
                )?);
            }
            if alternatives.is_empty() {
                return Err(error(&format!("an empty `{key}` admits no value")));
            }
            return Ok(Expr::alt(alternatives));
        }
    }
    let kinds: Vec<String> = match object.get("type") {
        Some(Value::String(kind)) => vec![kind.clone()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => return Values::new(b, style.clone(), method, root).json(schema),
    };
    let mut alternatives = Vec::new();
    for kind in kinds {
        alternatives.push(match kind.as_str() {
            "string" => {
                let count = |key: &str| {
                    object.get(key).and_then(Value::as_u64).map(|n| n.min(u32::MAX.into()) as u32)
                };
                let max = match (count("maxLength"), b.max_text) {
                    (Some(own), Some(cap)) => Some(own.min(cap)),
                    (own, cap) => own.or(cap),
                };
                string(b, literals, count("minLength").unwrap_or(0), max)
            }
            "boolean" if literals.json_words => Expr::alt([Expr::lit("true"), Expr::lit("false")]),
            "boolean" => Expr::alt([Expr::lit("True"), Expr::lit("False")]),
            "null" if literals.json_words => Expr::lit("null"),
            "null" => Expr::lit("None"),
            _ => {
                let mut one = object.clone();
                one.insert("type".into(), Value::String(kind.clone()));
                Values::new(b, style.clone(), method, root).json(&Value::Object(one))?
            }
        });
    }
    if alternatives.is_empty() {
        return Err(error("an empty `type` list admits no value"));
    }
    Ok(Expr::alt(alternatives))
}

/// A Python string in double quotes, of `min`..`max` characters, with the escapes the
/// reader decodes: `\\ \" \' \n \r \t`, `\uXXXX` but no surrogate, and with JSON's words
/// `\b \f` too.
fn string(b: &mut Builder, literals: Literals, min: u32, max: Option<u32>) -> Expr {
    let no_raw_lt = literals.no_raw_lt;
    let hex = || CharSet::ranges(&[('0', '9'), ('a', 'f'), ('A', 'F')]);
    let hex_n = |n: u32| Expr::set(hex()).times(n, Some(n));
    let excluded = if no_raw_lt { "\"\\<" } else { "\"\\" };
    let plain =
        CharSet::ranges(&[('\u{0}', '\u{1F}'), ('\u{7F}', '\u{7F}')]).union(&CharSet::of(excluded)).not();
    // `\uXXXX` but no surrogate (which the reader does not decode).
    let unicode = Expr::alt([
        Expr::seq([
            Expr::set(CharSet::ranges(&[('0', '9'), ('a', 'c'), ('A', 'C'), ('e', 'f'), ('E', 'F')])),
            hex_n(3),
        ]),
        Expr::seq([Expr::set(CharSet::of("dD")), Expr::set(CharSet::range('0', '7')), hex_n(2)]),
    ]);
    let unit = Expr::alt([
        Expr::set(plain),
        Expr::seq([
            Expr::lit("\\"),
            Expr::alt([
                Expr::set(CharSet::of(if literals.json_words { "\\\"'bfnrt" } else { "\\\"'nrt" })),
                Expr::seq([Expr::lit("u"), unicode]),
            ]),
        ]),
    ]);
    let kind = if literals.json_words { "JSON" } else { "PY" };
    let name =
        if (min, max) == (0, None) { format!("{kind}_STRING") } else { format!("{kind}_STRING_{min}") };
    b.terminal(&name, Expr::seq([Expr::lit("\""), unit.times(min, max), Expr::lit("\"")]))
}
