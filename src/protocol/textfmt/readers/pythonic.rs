//! Python call lists (`[get_weather(city="Paris"), add(a=1)]`): where one starts, and
//! Python literals written for `pythonic`, `lfm2` and `sarashina`.

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
