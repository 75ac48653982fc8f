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
//!
//! Grammar ([`syntax`]): a call as [`write_block`] writes it, `OPEN` `call:NAME{…}`
//! `CLOSE`, the arguments `key:value` in schema order separated by `,` (keys bare where
//! the writer leaves them bare, else between delimiters), values in the notation of their
//! schema: strings between delimiters, holding neither the delimiter nor the closing
//! token (the notation has no escapes) nor a reasoning tag while reasoning is hidden;
//! numbers as JSON writes them; `true`, `false`, `null`; objects `{key:value,…}` and lists
//! `[value,…]`, nested the same way. Free text holds no opening token.

use serde_json::{Map, Value};

use super::values::infer;
use crate::ToolExecutionResult;
use crate::grammar::{
    Builder, CharSet, Expr, GrammarError, Pattern, Syntax, ValueStyle, Values, properties, reasoning_heads,
};
use crate::protocol::textfmt::driver::{Found, RawCall, Reading, Region, Scan, ScanState, Searches, inside};
use crate::protocol::textfmt::escape::neutralize_tokens;
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::prompt::{content, methods};
use crate::schema;
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

    /// One level deeper, into an object or a list whose opening bracket is read.
    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("the arguments nest too deeply".into());
        }
        Ok(())
    }

    /// Past separators, whether the object or list ends here with `close` (then read,
    /// one level up); `cut_off` when the text ends first.
    fn ends(&mut self, close: u8, cut_off: &str) -> Result<bool, String> {
        self.separators();
        match self.peek() {
            None => Err(cut_off.into()),
            Some(byte) if byte == close => {
                self.pos += 1;
                self.depth -= 1;
                Ok(true)
            }
            Some(_) => Ok(false),
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
        self.enter()?;
        let mut map = Map::new();
        loop {
            if self.ends(b'}', "the arguments are cut off before `}`")? {
                return Ok(map);
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
                self.enter()?;
                let mut items = Vec::new();
                while !self.ends(b']', "a list is cut off before `]`")? {
                    items.push(self.value()?);
                }
                Ok(Value::Array(items))
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

/// The calls the offer holds as a grammar of a Gemma format written with `blocks`'
/// tokens (see the module docs); free text holds none of `avoid` either.
pub(crate) fn syntax(
    blocks: &Blocks,
    avoid: Vec<Pattern>,
    b: &mut Builder,
    offer: &Offer<'_>,
) -> Result<Syntax, GrammarError> {
    let mut inside = vec![Pattern::text(blocks.quote), Pattern::text(blocks.close)];
    if offer.options.skip_reasoning {
        inside.extend(reasoning_heads());
    }
    let mut calls = Vec::new();
    for (name, schema) in offer.methods {
        let notation = Notation { quote: blocks.quote, avoid: &inside, method: name, root: schema };
        let object = notation.object(b, schema, 0)?;
        calls.push(
            b.rule(name, Expr::seq([Expr::lit(format!("call:{name}")), object, Expr::lit(blocks.close)])),
        );
    }
    Ok(Syntax { avoid, ..offer.syntax(blocks.open, b.rule("call", Expr::alt(calls))) })
}

/// Deepest schema nesting a grammar follows.
const MAX_SCHEMA_DEPTH: u32 = 32;

/// The Gemma notation of one format, for the grammar of one method: its string
/// delimiter, what a string may not hold, and the method (named in errors) whose
/// parameter schema `$ref`s point into.
struct Notation<'a> {
    quote: &'a str,
    avoid: &'a [Pattern],
    method: &'a str,
    root: &'a Value,
}

impl Notation<'_> {
    fn error(&self, message: impl Into<String>) -> GrammarError {
        GrammarError::Schema { method: self.method.to_string(), message: message.into() }
    }

    /// A string between delimiters, of `min` to `max` characters (and of `schema`'s
    /// `pattern`).
    fn string(&self, b: &mut Builder, schema: &Map<String, Value>, min: u32, max: Option<u32>) -> Expr {
        let text = Values::new(b, ValueStyle::json("<"), self.method, &Value::Null).pattern_text(
            "STRING_TEXT",
            schema,
            self.avoid.to_vec(),
            min,
            max,
        );
        b.token("STRING", Expr::seq([Expr::lit(self.quote), text, Expr::lit(self.quote)]))
    }

    /// `value` as [`encode`] writes it, when it can and the grammar's strings may hold it.
    fn constant(&self, value: &Value) -> Option<Expr> {
        let mut out = String::new();
        encode(value, self.quote, &mut out)?;
        Some(Expr::lit(out))
    }

    /// An object of `schema`'s properties, in order: `{key:value,…}`; with no
    /// `properties`, any object.
    fn object(&self, b: &mut Builder, schema: &Value, depth: u32) -> Result<Expr, GrammarError> {
        if schema.get("properties").and_then(Value::as_object).is_none() {
            return Ok(self.any_object(b));
        }
        let mut members = Vec::new();
        for (key, property, required) in properties(schema) {
            let mut written = String::new();
            encode(
                &Value::Object([(key.to_string(), Value::Null)].into_iter().collect()),
                self.quote,
                &mut written,
            )
            .ok_or_else(|| self.error(format!("the key `{key}` holds the string delimiter")))?;
            // `{KEY:null}`: the key as the writer writes it, then `:`.
            let head = written.strip_prefix('{').and_then(|w| w.strip_suffix("null}")).unwrap_or_default();
            let value = self.value(b, property, depth + 1)?;
            members.push((Expr::seq([Expr::lit(head), value]), required));
        }
        let list = Values::new(b, ValueStyle::json("<"), self.method, self.root)
            .member_list(members, Expr::lit(","));
        Ok(Expr::seq([Expr::lit("{"), list, Expr::lit("}")]))
    }

    /// A value of `schema` in the notation.
    fn value(&self, b: &mut Builder, schema: &Value, depth: u32) -> Result<Expr, GrammarError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(self.error(format!("the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")));
        }
        let Value::Object(object) = schema else {
            return match schema {
                Value::Bool(false) => Err(self.error("a schema of `false` admits no value")),
                _ => Ok(self.any_value(b)),
            };
        };
        Values::new(b, ValueStyle::json("<"), self.method, self.root).note_unenforced(object);
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let target = schema::target(self.root, reference).map_err(|e| self.error(e.to_string()))?;
            return self.value(b, target, depth + 1);
        }
        if let Some(constant) = object.get("const") {
            return self
                .constant(constant)
                .ok_or_else(|| self.error("the `const` holds the string delimiter"));
        }
        if let Some(options) = object.get("enum").and_then(Value::as_array) {
            let options: Vec<Expr> = options.iter().filter_map(|v| self.constant(v)).collect();
            if options.is_empty() {
                return Err(self.error("the `enum` admits no value the notation can write"));
            }
            return Ok(Expr::alt(options));
        }
        if let Some((key, options)) = schema::alternatives(object) {
            if options.is_empty() {
                return Err(self.error(format!("an empty `{key}` admits no value")));
            }
            let mut alternatives = Vec::new();
            for option in &options {
                alternatives.push(self.value(b, option, depth + 1)?);
            }
            return Ok(Expr::alt(alternatives));
        }
        let Some(kinds) = schema::kinds(object) else { return Ok(self.any_value(b)) };
        let mut alternatives = Vec::new();
        for kind in kinds {
            alternatives.push(match kind {
                "string" => {
                    let (min, max) = b.string_bounds(object);
                    self.string(b, object, min, max)
                }
                "integer" | "number" => {
                    let mut one = object.clone();
                    one.insert("type".into(), Value::String(kind.to_string()));
                    Values::new(b, ValueStyle::json("<"), self.method, self.root).json(&Value::Object(one))?
                }
                "boolean" => Expr::alt([Expr::lit("true"), Expr::lit("false")]),
                "null" => Expr::lit("null"),
                "object" => self.object(b, schema, depth)?,
                "array" => {
                    let item = match object.get("items") {
                        Some(items) => self.value(b, items, depth + 1)?,
                        None => self.any_value(b),
                    };
                    let (min, max) = schema::item_bounds(object);
                    let rest = Expr::seq([Expr::lit(","), item.clone()]);
                    let items = Expr::seq([
                        item,
                        rest.times(min.saturating_sub(1), max.map(|m| m.saturating_sub(1))),
                    ]);
                    let body = match (min, max) {
                        (0, Some(0)) => Expr::lit("[]"),
                        (0, _) => Expr::seq([Expr::lit("["), items.opt(), Expr::lit("]")]),
                        _ => Expr::seq([Expr::lit("["), items, Expr::lit("]")]),
                    };
                    b.rule("list", body)
                }
                other => return Err(self.error(format!("unknown type `{other}`"))),
            });
        }
        if alternatives.is_empty() {
            return Err(self.error("an empty `type` list admits no value"));
        }
        Ok(Expr::alt(alternatives))
    }

    /// Any value in the notation (keys of its objects bare identifiers or delimited).
    fn any_value(&self, b: &mut Builder) -> Expr {
        self.any(b).0
    }

    /// Any object in the notation.
    fn any_object(&self, b: &mut Builder) -> Expr {
        self.any(b).1
    }

    /// Any value, and any object.
    fn any(&self, b: &mut Builder) -> (Expr, Expr) {
        let name = b.reserve("any_value");
        let value = Expr::Ref(name.clone());
        let string = self.string(b, &Map::new(), 0, None);
        let key = b.token(
            "KEY",
            Expr::alt([
                Expr::seq([
                    Expr::set(CharSet::ranges(&[('a', 'z'), ('A', 'Z'), ('_', '_')])),
                    Expr::set(CharSet::ranges(&[('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')])).star(),
                ]),
                string.clone(),
            ]),
        );
        let member = Expr::seq([key, Expr::lit(":"), value.clone()]);
        let object = b.rule(
            "any_object",
            Expr::seq([
                Expr::lit("{"),
                Expr::seq([member.clone(), Expr::seq([Expr::lit(","), member]).star()]).opt(),
                Expr::lit("}"),
            ]),
        );
        let list = Expr::seq([
            Expr::lit("["),
            Expr::seq([value.clone(), Expr::seq([Expr::lit(","), value.clone()]).star()]).opt(),
            Expr::lit("]"),
        ]);
        let number = Values::new(b, ValueStyle::json("<"), "", &Value::Null).number(false);
        let body = Expr::alt([
            object.clone(),
            list,
            string,
            number,
            Expr::lit("true"),
            Expr::lit("false"),
            Expr::lit("null"),
        ]);
        b.define_reserved(&name, body);
        (value, object)
    }
}
