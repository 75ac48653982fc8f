//! Gemma's call blocks, read and written for `gemma4` (`<|tool_call>call:NAME{…}<tool_call|>`)
//! and `function_gemma` (`<start_function_call>call:NAME{…}<end_function_call>`): the
//! same notation with each format's string delimiter (`<|"|>`, `<escape>`) and tokens.
//!
//! Arguments are `key:value` pairs in braces, separated by commas (a missing comma is
//! tolerated); a key is bare or written between delimiters. A value is a string between
//! two delimiters (taken as written: the notation has no escapes), a bare number,
//! `true`, `false` or `null`, a nested `{key:value,…}` object or a `[value,…]` list. A
//! bare word that is none of these is read as a string. A top-level string argument is
//! also recorded as text ([`RawCall::text_arg`]) so that the tool's schema may type it.

use serde_json::{Map, Value};

use super::values::infer;
use crate::ToolExecutionResult;
use crate::protocol::textfmt::driver::{Found, RawCall, Reading, Region, Scan, ScanState, Searches, inside};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::prompt::{content, methods};
use crate::tools::ToolDefinition;

/// Deepest nesting of argument values read.
const MAX_DEPTH: usize = 128;

/// Gemma-style call blocks between `open` and `close`, strings between `quote`s: the
/// reading of `function_gemma`, and the calls of `gemma4` (which also has a thought
/// channel).
pub(crate) struct Blocks {
    pub open: &'static str,
    pub close: &'static str,
    pub quote: &'static str,
}

impl Reading for Blocks {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.token(text, from, self.open)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until(self.open.len(), self.close)
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let body = inside(region, self.open.len(), self.close, closed);
        read_block(region, body, closed, self.quote, self.close, calls);
    }
}

impl Blocks {
    /// One call, as [`write_block`] writes it with these tokens.
    pub(crate) fn write(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        write_block(name, args, self.quote, self.open, self.close)
    }
}

/// Reads one Gemma-style call block (`body` is what stands between its tokens) into
/// `calls`: the call, or an incomplete request saying what is wrong.
pub(crate) fn read_block(
    region: &str,
    body: &str,
    closed: bool,
    quote: &str,
    close: &str,
    calls: &mut Vec<RawCall>,
) {
    let span = 0..region.len();
    if !closed {
        calls.push(RawCall::broken(span, guess_name(body), format!("the call is never closed with {close}")));
        return;
    }
    match read_call(body, quote) {
        Ok((name, args, texts)) => {
            let mut call = RawCall { span, name, args: args.into_iter().collect(), ..RawCall::default() };
            for (key, text) in texts {
                call.text_arg(key, &text, Value::String(text.clone()));
            }
            calls.push(call);
        }
        Err(problem) => calls.push(RawCall::broken(
            span,
            guess_name(body),
            format!("{problem}: write call:NAME{{key:{quote}text{quote},number:1}}"),
        )),
    }
}

/// The name a damaged block seems to give (for its incomplete request).
fn guess_name(body: &str) -> String {
    let rest = body.trim_start();
    let rest = rest.strip_prefix("call:").unwrap_or(rest);
    let end = rest.find(|c: char| c == '{' || c == '<' || c.is_whitespace()).unwrap_or(rest.len());
    rest.get(..end).unwrap_or_default().to_string()
}

/// A call read from `call:NAME{…}`: name, arguments, and the top-level string arguments
/// as written.
type Read = (String, Map<String, Value>, Vec<(String, String)>);

/// Reads `call:NAME{ARGS}` (surrounding white space allowed) with `quote` as the string
/// delimiter.
pub(crate) fn read_call(body: &str, quote: &str) -> Result<Read, String> {
    let mut p = Parser { text: body, pos: 0, quote, depth: 0 };
    p.ws();
    if !p.rest().starts_with("call:") {
        return Err("the block does not start with `call:`".into());
    }
    p.pos += "call:".len();
    let Some(brace) = p.rest().find('{') else {
        return Err("the name is not followed by `{`".into());
    };
    let name = p.rest().get(..brace).unwrap_or_default().trim().to_string();
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || matches!(c, '<' | '}' | ',' | ':')) {
        return Err(format!("`{name}` is not a function name"));
    }
    p.pos += brace + 1;
    let mut texts = Vec::new();
    let args = p.object(Some(&mut texts))?;
    p.ws();
    if p.pos < body.len() {
        return Err("unexpected text after the arguments' closing `}`".into());
    }
    Ok((name, args, texts))
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    quote: &'a str,
    depth: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        self.text.get(self.pos..).unwrap_or_default()
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    /// White space and commas (separators, which FunctionGemma may leave out).
    fn separators(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace() || b == b',') {
            self.pos += 1;
        }
    }

    /// A delimited string whose opening delimiter is at `pos`.
    fn string(&mut self) -> Result<String, String> {
        self.pos += self.quote.len();
        let Some(end) = self.rest().find(self.quote) else {
            return Err(format!("a string is never closed with {}", self.quote));
        };
        let text = self.rest().get(..end).unwrap_or_default().to_string();
        self.pos += end + self.quote.len();
        Ok(text)
    }

    /// The entries of an object up to its `}` (the `{` is read); `texts` collects the
    /// string values as written (top level only).
    fn object(
        &mut self,
        mut texts: Option<&mut Vec<(String, String)>>,
    ) -> Result<Map<String, Value>, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("the arguments nest too deeply".into());
        }
        let mut map = Map::new();
        loop {
            self.separators();
            match self.peek() {
                None => return Err("the arguments are cut off before `}`".into()),
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(map);
                }
                Some(_) => {}
            }
            let key = if self.rest().starts_with(self.quote) {
                self.string()?
            } else {
                let rest = self.rest();
                let Some(end) = rest.find([':', ',', '{', '}', '[', ']']) else {
                    return Err("an argument has no `:`".into());
                };
                if rest.as_bytes().get(end) != Some(&b':') {
                    return Err(format!(
                        "expected `:` after `{}`",
                        rest.get(..end).unwrap_or_default().trim()
                    ));
                }
                let key = rest.get(..end).unwrap_or_default().trim().to_string();
                self.pos += end;
                key
            };
            self.ws();
            if self.peek() != Some(b':') {
                return Err(format!("expected `:` after the key `{key}`"));
            }
            self.pos += 1;
            self.ws();
            let is_text = self.rest().starts_with(self.quote);
            let value = self.value()?;
            if is_text && let (Some(texts), Value::String(text)) = (texts.as_deref_mut(), &value) {
                texts.push((key.clone(), text.clone()));
            }
            map.insert(key, value);
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        if self.rest().starts_with(self.quote) {
            return self.string().map(Value::String);
        }
        match self.peek() {
            None => Err("a value is cut off".into()),
            Some(b'{') => {
                self.pos += 1;
                self.object(None).map(Value::Object)
            }
            Some(b'[') => {
                self.pos += 1;
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err("the arguments nest too deeply".into());
                }
                let mut items = Vec::new();
                loop {
                    self.separators();
                    match self.peek() {
                        None => return Err("a list is cut off before `]`".into()),
                        Some(b']') => {
                            self.pos += 1;
                            self.depth -= 1;
                            return Ok(Value::Array(items));
                        }
                        Some(_) => items.push(self.value()?),
                    }
                }
            }
            Some(_) => {
                let rest = self.rest();
                let end = rest.find([',', '}', ']']).unwrap_or(rest.len());
                let raw = rest.get(..end).unwrap_or_default().trim();
                if raw.is_empty() {
                    return Err("expected a value".into());
                }
                if end == rest.len() {
                    return Err("a value is cut off".into());
                }
                let value = infer(raw);
                self.pos += end;
                Ok(value)
            }
        }
    }
}

/// `value` in the Gemma notation with `quote` as the string delimiter: strings between
/// delimiters, numbers, booleans and `null` bare, objects as `{key:value,…}` (keys bare
/// when they read back bare, else delimited), lists as `[value,…]`. `None` when a string
/// (or key) holds the delimiter, or a bare word would not read back as itself.
pub(crate) fn encode(value: &Value, quote: &str, out: &mut String) -> Option<()> {
    match value {
        Value::String(s) => {
            if s.contains(quote) {
                return None;
            }
            out.push_str(quote);
            out.push_str(s);
            out.push_str(quote);
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, value)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let bare = !key.is_empty()
                    && key.trim() == key
                    && !key.contains([':', ',', '{', '}', '[', ']'])
                    && !key.starts_with(quote.get(..1).unwrap_or("<"));
                if bare {
                    out.push_str(key);
                } else if key.contains(quote) {
                    return None;
                } else {
                    out.push_str(quote);
                    out.push_str(key);
                    out.push_str(quote);
                }
                out.push(':');
                encode(value, quote, out)?;
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode(item, quote, out)?;
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
    Some(())
}

/// A JSON Schema in the Gemma declaration notation: as [`encode`], with `type` names in
/// capitals (`STRING`, `OBJECT`) as the chat templates write them, and any delimiter in
/// its text made plain ([`defuse`]).
pub(crate) fn encode_schema(schema: &Value, quote: &str) -> String {
    fn prepare(value: &Value, in_type: bool, quote: &str) -> Value {
        match value {
            Value::String(s) if in_type => Value::String(defuse(&s.to_uppercase(), quote)),
            Value::String(s) => Value::String(defuse(s, quote)),
            Value::Array(items) => Value::Array(items.iter().map(|v| prepare(v, in_type, quote)).collect()),
            Value::Object(map) => Value::Object(
                map.iter().map(|(k, v)| (defuse(k, quote), prepare(v, k == "type", quote))).collect(),
            ),
            other => other.clone(),
        }
    }
    let mut out = String::new();
    let _ = encode(&prepare(schema, false, quote), quote, &mut out);
    out
}

/// The declarations of `tools`, each `{open}declaration:NAME{description:…,parameters:…}{close}`.
pub(crate) fn declarations(tools: &[ToolDefinition], quote: &str, open: &str, close: &str) -> String {
    methods(tools)
        .into_iter()
        .map(|(name, description, parameters)| {
            let description = defuse(description, quote);
            format!(
                "{open}declaration:{name}{{description:{quote}{description}{quote},parameters:{}}}{close}",
                encode_schema(parameters, quote)
            )
        })
        .collect()
}

/// `text` with every `quote` token made plain (its `<` written `&lt;`), so that it
/// cannot end the string it stands in.
pub(crate) fn defuse(text: &str, quote: &str) -> String {
    match quote.strip_prefix('<') {
        Some(tail) => text.replace(quote, &format!("&lt;{tail}")),
        None => text.to_string(),
    }
}

/// Each result as `{open}response:NAME{value:TEXT}{close}`, the text with each of
/// `guard` (the string delimiter and the format's tokens) made plain ([`defuse`]).
pub(crate) fn responses(results: &[ToolExecutionResult], guard: &[&str], open: &str, close: &str) -> String {
    let quote = guard.first().copied().unwrap_or_default();
    results
        .iter()
        .map(|r| {
            let name = neutralize_tokens(&r.tool_name).replace(['{', '}'], "");
            let text = guard.iter().fold(content(r), |text, token| defuse(&text, token));
            format!("{open}response:{name}{{value:{quote}{text}{quote}}}{close}")
        })
        .collect()
}

/// One call `{open}call:NAME{ARGS}{close}`, or `None` when an argument cannot be written
/// (a string holding the delimiter or the closing token).
pub(crate) fn write_block(
    name: &str,
    args: &Map<String, Value>,
    quote: &str,
    open: &str,
    close: &str,
) -> Option<String> {
    let mut body = String::new();
    encode(&Value::Object(args.clone()), quote, &mut body)?;
    if body.contains(close) || name.contains(close) {
        return None;
    }
    Some(format!("{open}call:{name}{body}{close}"))
}
