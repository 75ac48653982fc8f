//! Python literals and calls with keyword arguments, read into JSON: the literals for
//! the text-argument coercer (`tools::TextCoercion`, with Python literals on), the call
//! lists for the `pythonic` text format. Neutral, so that both can use it.

use serde_json::{Map, Number, Value};

/// Deepest nesting read; deeper input is refused (it would only serve to exhaust the
/// stack).
const MAX_DEPTH: usize = 128;

/// A parse failure: what was expected, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PyError {
    pub at: usize,
    pub message: String,
}

/// One call: its name, the keyword arguments, and its bytes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PyCall {
    pub name: String,
    pub args: Map<String, Value>,
    pub span: std::ops::Range<usize>,
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    depth: usize,
}

/// Parses `[call, call, …]` (the whole text).
pub(crate) fn parse_call_list(text: &str) -> Result<Vec<PyCall>, PyError> {
    let mut p = Parser { text, pos: 0, depth: 0 };
    p.ws();
    p.expect(b'[')?;
    let mut calls = Vec::new();
    p.ws();
    if p.eat(b']') {
        return p.end(calls);
    }
    loop {
        p.ws();
        calls.push(p.call()?);
        p.ws();
        if p.eat(b',') {
            p.ws();
            if p.eat(b']') {
                return p.end(calls);
            }
            continue;
        }
        p.expect(b']')?;
        return p.end(calls);
    }
}

/// One Python literal (the whole text), as JSON.
pub(crate) fn parse_literal(text: &str) -> Option<Value> {
    let mut p = Parser { text, pos: 0, depth: 0 };
    p.ws();
    let value = p.value().ok()?;
    p.end(value).ok()
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, PyError> {
        Err(PyError { at: self.pos, message: message.into() })
    }

    fn expect(&mut self, b: u8) -> Result<(), PyError> {
        if self.eat(b) { Ok(()) } else { self.fail(format!("expected `{}`", b as char)) }
    }

    fn end<T>(&mut self, value: T) -> Result<T, PyError> {
        self.ws();
        if self.pos == self.text.len() { Ok(value) } else { self.fail("unexpected text after the list") }
    }

    fn ident(&mut self) -> Option<&str> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        if !bytes.get(self.pos).is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') {
            return None;
        }
        while bytes
            .get(self.pos)
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        {
            self.pos += 1;
        }
        self.text.get(start..self.pos)
    }

    fn call(&mut self) -> Result<PyCall, PyError> {
        let start = self.pos;
        let Some(name) = self.ident().map(str::to_string) else {
            return self.fail("expected a function name");
        };
        self.ws();
        self.expect(b'(')?;
        let mut args = Map::new();
        self.items(b')', |p| {
            let Some(key) = p.ident().map(str::to_string) else {
                return p.fail("expected a keyword argument (name=value)");
            };
            args.insert(key, p.after(b'=')?);
            Ok(())
        })?;
        Ok(PyCall { name, args, span: start..self.pos })
    }

    /// Reads items with `item` up to `close`, separated by commas (a trailing comma
    /// allowed).
    fn items(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<(), PyError>,
    ) -> Result<(), PyError> {
        loop {
            self.ws();
            if self.eat(close) {
                return Ok(());
            }
            item(self)?;
            self.ws();
            if !self.eat(b',') {
                return self.expect(close);
            }
        }
    }

    /// The value after `separator` (`=` of a keyword argument, `:` of a dict entry).
    fn after(&mut self, separator: u8) -> Result<Value, PyError> {
        self.ws();
        self.expect(separator)?;
        self.ws();
        self.value()
    }

    fn value(&mut self) -> Result<Value, PyError> {
        if self.depth >= MAX_DEPTH {
            return self.fail("the value is nested too deeply");
        }
        match self.peek() {
            Some(b'"' | b'\'') => self.string().map(Value::String),
            Some(b'[') => self.sequence(b']'),
            Some(b'(') => self.sequence(b')'),
            Some(b'{') => self.dict(),
            Some(b'-' | b'+' | b'0'..=b'9' | b'.') => self.number(),
            Some(_) => match self.ident() {
                Some("True" | "true") => Ok(Value::Bool(true)),
                Some("False" | "false") => Ok(Value::Bool(false)),
                Some("None" | "null") => Ok(Value::Null),
                _ => self.fail("expected a Python literal (string, number, True, False, None, list or dict)"),
            },
            None => self.fail("the value is cut off"),
        }
    }

    fn sequence(&mut self, close: u8) -> Result<Value, PyError> {
        self.pos += 1;
        self.depth += 1;
        let mut items = Vec::new();
        self.items(close, |p| {
            items.push(p.value()?);
            Ok(())
        })?;
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn dict(&mut self) -> Result<Value, PyError> {
        self.pos += 1;
        self.depth += 1;
        let mut map = Map::new();
        self.items(b'}', |p| {
            let key = match p.value()? {
                Value::String(key) => key,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => "null".to_string(),
                _ => return p.fail("a dict key must be a string, number, bool or None"),
            };
            map.insert(key, p.after(b':')?);
            Ok(())
        })?;
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    fn number(&mut self) -> Result<Value, PyError> {
        let start = self.pos;
        let bytes = self.text.as_bytes();
        while bytes
            .get(self.pos)
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+' | b'_'))
        {
            self.pos += 1;
        }
        let raw: String =
            self.text.get(start..self.pos).unwrap_or_default().chars().filter(|c| *c != '_').collect();
        let raw = raw.strip_prefix('+').unwrap_or(&raw);
        if let Ok(int) = raw.parse::<i64>() {
            return Ok(Value::Number(int.into()));
        }
        match raw.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Ok(Value::Number(n)),
            None => {
                self.pos = start;
                self.fail("expected a number")
            }
        }
    }

    fn string(&mut self) -> Result<String, PyError> {
        let quote = self.peek().unwrap_or(b'"');
        let bytes = self.text.as_bytes();
        // Triple-quoted strings.
        let triple = bytes.get(self.pos..self.pos + 3) == Some(&[quote, quote, quote][..]);
        let open = if triple { 3 } else { 1 };
        self.pos += open;
        let mut out = String::new();
        loop {
            let rest = self.text.get(self.pos..).unwrap_or_default();
            let Some(at) = rest.find([quote as char, '\\']) else {
                return self.fail("the string is never closed");
            };
            out.push_str(rest.get(..at).unwrap_or_default());
            self.pos += at;
            if self.peek() == Some(b'\\') {
                self.pos += 1;
                let Some(escaped) = self.text.get(self.pos..).and_then(|r| r.chars().next()) else {
                    return self.fail("the string is never closed");
                };
                self.pos += escaped.len_utf8();
                match escaped {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    'a' => out.push('\u{7}'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'v' => out.push('\u{b}'),
                    // `\xNN`, `\uNNNN`, `\UNNNNNNNN`: a code point in hex.
                    'x' | 'u' | 'U' => {
                        let digits = match escaped {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex = self.text.get(self.pos..self.pos + digits).unwrap_or_default();
                        let all_hex = hex.len() == digits && hex.bytes().all(|b| b.is_ascii_hexdigit());
                        match u32::from_str_radix(hex, 16).ok().and_then(char::from_u32) {
                            Some(c) if all_hex => {
                                out.push(c);
                                self.pos += digits;
                            }
                            _ => {
                                out.push('\\');
                                out.push(escaped);
                            }
                        }
                    }
                    '\\' | '\'' | '"' => out.push(escaped),
                    '\n' => {}
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
                continue;
            }
            if triple {
                if bytes.get(self.pos..self.pos + 3) == Some(&[quote, quote, quote][..]) {
                    self.pos += 3;
                    return Ok(out);
                }
                out.push(quote as char);
                self.pos += 1;
                continue;
            }
            self.pos += 1;
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_and_literals() {
        let calls = parse_call_list(
            r#"[get_weather(city="Paris", days=3), search(q='it\'s', opts={'a': [1, 2.5, True, None]}), now()]"#,
        )
        .unwrap();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(Value::Object(calls[0].args.clone()), json!({"city": "Paris", "days": 3}));
        assert_eq!(
            Value::Object(calls[1].args.clone()),
            json!({"q": "it's", "opts": {"a": [1, 2.5, true, null]}})
        );
        assert!(calls[2].args.is_empty());
        assert_eq!(
            &r#"[get_weather(city="Paris", days=3)"#[calls[0].span.clone()],
            r#"get_weather(city="Paris", days=3)"#
        );
    }

    #[test]
    fn string_escapes_are_python_s() {
        let call = |text: &str| parse_call_list(text).unwrap().remove(0).args;
        let args = call(r#"[f(a='\x41\u00e9\U0001F600', b="\a\b\f\v\t", c='\xZZ\q', d='\x4')]"#);
        assert_eq!(args["a"], "Aé😀");
        assert_eq!(args["b"], "\u{7}\u{8}\u{c}\u{b}\t");
        assert_eq!(args["c"], "\\xZZ\\q", "an escape Python would refuse is kept as written");
        assert_eq!(args["d"], "\\x4");
    }

    #[test]
    fn failures_say_where() {
        assert!(parse_call_list("[f(x=)]").is_err());
        assert!(parse_call_list("[f(1)]").is_err());
        assert!(parse_call_list("[f(x='open)]").is_err());
        assert!(parse_call_list("[f()] trailing").is_err());
        let deep = format!("[f(x={}{})]", "[".repeat(500), "]".repeat(500));
        assert!(parse_call_list(&deep).unwrap_err().message.contains("deeply"));
    }
}
