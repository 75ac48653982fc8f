//! Python call lists (`[get_weather(city="Paris"), add(a=1)]`): where one starts, Python
//! literals written for `pythonic`, `lfm2` and `sarashina`, and their grammar: one builder
//! of literals ([`PyLiterals`], shaped by [`Literals`]) for `pythonic`, `lfm2`, `olmo3`
//! and `sarashina`, and the Python calls with literal arguments ([`calls`]) of the first
//! three.

use serde_json::Value;

use crate::grammar::{Builder, CharSet, Expr, GrammarError, ValueStyle, Values, properties};
use crate::schema;

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

/// `value` as a Python literal all the way down: strings in `quote`s (as
/// [`python_string`] escapes them), `True`/`False`/`None`, numbers as JSON writes them,
/// lists `[a, b]` and dicts `{'k': v}` (`sarashina` writes its calls so).
pub(crate) fn python_literal(value: &Value, quote: char, out: &mut String) {
    match value {
        Value::String(s) => python_string(s, quote, out),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Null => out.push_str("None"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_literal(item, quote, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_string(key, quote, out);
                out.push_str(": ");
                python_literal(item, quote, out);
            }
            out.push('}');
        }
    }
}

/// How the literals of a grammar are written: what sets `pythonic`'s, `lfm2`'s,
/// `olmo3`'s and `sarashina`'s apart.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Literals {
    /// The quote strings stand in (`"`, or `'` for `sarashina`).
    pub quote: char,
    /// JSON's words and strings (`true`, `false`, `null`; strings in double quotes with
    /// JSON's escapes, as OLMo 3's template writes values), not Python's (`True`,
    /// `False`, `None`; strings with the escapes [`python_string`] writes).
    pub json_words: bool,
    /// No raw `<` in a string (it is written `\u003c`): while reasoning is hidden, so that
    /// no string opens a reasoning tag, or where a token ends the call list wherever it
    /// stands.
    pub no_raw_lt: bool,
    /// Lists and dicts as Python literals (`[a, b]`, `{'k': v}`, strings in the quotes,
    /// `True`, `None`), not JSON (which the Python readers also take).
    pub python_containers: bool,
}

impl Literals {
    /// Python's words, strings in double quotes, lists and dicts as JSON.
    pub(crate) fn python(no_raw_lt: bool) -> Self {
        Literals { quote: '"', json_words: false, no_raw_lt, python_containers: false }
    }

    /// JSON's words and strings, lists and dicts as JSON.
    pub(crate) fn json(no_raw_lt: bool) -> Self {
        Literals { json_words: true, ..Self::python(no_raw_lt) }
    }
}

/// One call `NAME(key=value, …)` of any of `methods`, keyword arguments in schema order
/// separated by `, `, values the literals of their schemas (see [`PyLiterals`]).
pub(crate) fn calls(
    b: &mut Builder,
    methods: &[(String, &Value)],
    literals: Literals,
) -> Result<Expr, GrammarError> {
    let mut calls = Vec::new();
    for (name, schema) in methods {
        let mut members = Vec::new();
        let mut values = PyLiterals::new(b, name, schema, literals);
        for (key, property, required) in properties(schema) {
            let value = values.literal(property)?;
            members.push((Expr::seq([Expr::lit(format!("{key}=")), value]), required));
        }
        let list = values.values().member_list(members, Expr::lit(", "));
        let body = Expr::seq([Expr::lit(format!("{name}(")), list, Expr::lit(")")]);
        calls.push(b.rule(name, body));
    }
    Ok(b.rule("call", Expr::alt(calls)))
}

/// The literals of a method's JSON Schema, as a grammar (see [`grammar`](crate::grammar)):
/// what `pythonic`, `lfm2`, `olmo3` and `sarashina` write into their calls, shaped by
/// [`Literals`]. Strings are in the quotes with the escapes the reader decodes
/// (`\\ \" \' \n \r \t`, and `\b \f` with JSON's words; `\uXXXX` but no surrogate) and no
/// raw control character, nor a raw `<` with `no_raw_lt`; `True`/`False`, `None` (or
/// JSON's words); numbers as JSON writes them. Lists and dicts are JSON, or with
/// `python_containers` Python literals: `[a, b]`, `{'k': v}` with keys in the order of
/// the schema's `properties`, every required key present and no other. A `$ref` is
/// defined once, so a recursive schema is a recursive rule.
pub(crate) struct PyLiterals<'b> {
    b: &'b mut Builder,
    method: &'b str,
    root: &'b Value,
    literals: Literals,
    refs: std::collections::HashMap<String, String>,
    any: Option<Expr>,
    depth: u32,
}

impl<'b> PyLiterals<'b> {
    /// The literals of method `method`, whose parameters are `root` (which `$ref`s point
    /// into), rules in `b`.
    pub(crate) fn new(b: &'b mut Builder, method: &'b str, root: &'b Value, literals: Literals) -> Self {
        PyLiterals { b, method, root, literals, refs: std::collections::HashMap::new(), any: None, depth: 0 }
    }

    fn error(&self, message: impl Into<String>) -> GrammarError {
        GrammarError::Schema { method: self.method.to_string(), message: message.into() }
    }

    /// The JSON builder of the same grammar.
    pub(crate) fn values(&mut self) -> Values<'_> {
        Values::new(self.b, ValueStyle::json("<"), self.method, self.root)
    }

    /// A literal's text as a constant of the grammar.
    fn text(&self, value: &Value) -> String {
        let Literals { quote, json_words, python_containers, .. } = self.literals;
        if json_words {
            crate::protocol::textfmt::grammar::json_text(value)
        } else if python_containers || value.is_string() {
            let mut out = String::new();
            python_literal(value, quote, &mut out);
            out
        } else {
            python_text(value)
        }
    }

    /// A literal of `schema`.
    pub(crate) fn literal(&mut self, schema: &Value) -> Result<Expr, GrammarError> {
        self.depth += 1;
        if self.depth > 32 {
            return Err(self.error("the schema nests deeper than 32 levels"));
        }
        let out = self.literal_inner(schema);
        self.depth -= 1;
        out
    }

    fn literal_inner(&mut self, schema: &Value) -> Result<Expr, GrammarError> {
        let python_containers = self.literals.python_containers;
        let object = match schema {
            Value::Object(object) => object,
            Value::Bool(true) if python_containers => return Ok(self.any()),
            _ => return self.values().json(schema),
        };
        self.values().note_unenforced(object);
        if object.contains_key("$ref") {
            return self.reference(schema);
        }
        if let Some(constant) = object.get("const") {
            return Ok(Expr::lit(self.text(constant)));
        }
        if let Some(options) = object.get("enum").and_then(Value::as_array) {
            if options.is_empty() {
                return Err(self.error("an empty `enum` admits no value"));
            }
            return Ok(Expr::alt(options.iter().map(|v| Expr::lit(self.text(v)))));
        }
        if let Some((key, options)) = schema::alternatives(object) {
            if options.is_empty() {
                return Err(self.error(format!("an empty `{key}` admits no value")));
            }
            let mut alternatives = Vec::new();
            for option in &options {
                alternatives.push(self.literal(option)?);
            }
            return Ok(Expr::alt(alternatives));
        }
        let named = matches!(object.get("type"), Some(Value::String(_) | Value::Array(_)));
        let kinds = match schema::kinds(object) {
            _ if !named && !python_containers => return self.values().json(schema),
            Some(kinds) => kinds,
            None => return Ok(self.any()),
        };
        let json_words = self.literals.json_words;
        let mut alternatives = Vec::new();
        for kind in kinds {
            alternatives.push(match kind {
                "string" => {
                    let (min, max) = self.b.string_bounds(object);
                    let string = self.string(min, max);
                    let quote = self.literals.quote;
                    self.values().quoted_pattern(object, string, quote)
                }
                "boolean" if json_words => Expr::alt([Expr::lit("true"), Expr::lit("false")]),
                "boolean" => Expr::alt([Expr::lit("True"), Expr::lit("False")]),
                "null" if json_words => Expr::lit("null"),
                "null" => Expr::lit("None"),
                "array" if python_containers => self.array(object)?,
                "object" if python_containers => self.object(object)?,
                _ => {
                    let mut one = object.clone();
                    one.insert("type".into(), Value::String(kind.into()));
                    self.values().json(&Value::Object(one))?
                }
            });
        }
        if alternatives.is_empty() {
            return Err(self.error("an empty `type` list admits no value"));
        }
        Ok(Expr::alt(alternatives))
    }

    /// A string in the quotes, of `min`..`max` characters.
    fn string(&mut self, min: u32, max: Option<u32>) -> Expr {
        let Literals { quote, json_words, no_raw_lt, .. } = self.literals;
        let hex = || CharSet::ranges(&[('0', '9'), ('a', 'f'), ('A', 'F')]);
        let hex_n = |n: u32| Expr::set(hex()).times(n, Some(n));
        let mut excluded = String::from(quote);
        excluded.push('\\');
        if no_raw_lt {
            excluded.push('<');
        }
        let plain = CharSet::ranges(&[('\u{0}', '\u{1F}'), ('\u{7F}', '\u{7F}')])
            .union(&CharSet::of(&excluded))
            .not();
        // `\uXXXX` but no surrogate (which the reader does not decode).
        let unicode = Expr::alt([
            Expr::seq([
                Expr::set(CharSet::ranges(&[('0', '9'), ('a', 'c'), ('A', 'C'), ('e', 'f'), ('E', 'F')])),
                hex_n(3),
            ]),
            Expr::seq([Expr::set(CharSet::of("dD")), Expr::set(CharSet::range('0', '7')), hex_n(2)]),
        ]);
        let escaped = if json_words { "\\\"'bfnrt" } else { "\\\"'nrt" };
        let unit = Expr::alt([
            Expr::set(plain),
            Expr::seq([
                Expr::lit("\\"),
                Expr::alt([Expr::set(CharSet::of(escaped)), Expr::seq([Expr::lit("u"), unicode])]),
            ]),
        ]);
        let kind = if json_words { "JSON" } else { "PY" };
        let name =
            if (min, max) == (0, None) { format!("{kind}_STRING") } else { format!("{kind}_STRING_{min}") };
        let quote = Expr::lit(quote.to_string());
        self.b.terminal(&name, Expr::seq([quote.clone(), unit.times(min, max), quote]))
    }

    /// The optional space after `:` and `,`.
    fn ws() -> Expr {
        Expr::lit(" ").opt()
    }

    /// A list of the schema's `items`, `minItems` to `maxItems` of them.
    fn array(&mut self, schema: &serde_json::Map<String, Value>) -> Result<Expr, GrammarError> {
        let item = match schema.get("items") {
            Some(items) => self.literal(items)?,
            None => self.any(),
        };
        let (min, max) = schema::item_bounds(schema);
        let rest = Expr::seq([Expr::lit(","), Self::ws(), item.clone()]);
        let items = Expr::seq([item, rest.times(min.saturating_sub(1), max.map(|m| m.saturating_sub(1)))]);
        let body = if min == 0 && max == Some(0) {
            Expr::lit("[]")
        } else if min == 0 {
            Expr::seq([Expr::lit("["), items.opt(), Expr::lit("]")])
        } else {
            Expr::seq([Expr::lit("["), items, Expr::lit("]")])
        };
        Ok(self.b.rule("py_list", body))
    }

    /// A dict: keys in the order of `properties`, every required key present, no other;
    /// without `properties`, any dict.
    fn object(&mut self, schema: &serde_json::Map<String, Value>) -> Result<Expr, GrammarError> {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            let any = self.any();
            return Ok(self.dict_of(any));
        };
        let required = schema::required(schema);
        let mut members = Vec::new();
        for (key, property) in properties {
            let value = self.literal(property)?;
            let key_text = self.text(&Value::String(key.clone()));
            members.push((
                Expr::seq([Expr::lit(key_text), Expr::lit(":"), Self::ws(), value]),
                required.contains(&key.as_str()),
            ));
        }
        let list = self.values().member_list(members, Expr::seq([Expr::lit(","), Self::ws()]));
        Ok(Expr::seq([Expr::lit("{"), list, Expr::lit("}")]))
    }

    /// Any dict whose values are `value`.
    fn dict_of(&mut self, value: Expr) -> Expr {
        let key = self.string(0, None);
        let member = Expr::seq([key, Expr::lit(":"), Self::ws(), value]);
        Expr::seq([
            Expr::lit("{"),
            Expr::seq([member.clone(), Expr::seq([Expr::lit(","), Self::ws(), member]).star()]).opt(),
            Expr::lit("}"),
        ])
    }

    /// Any literal.
    fn any(&mut self) -> Expr {
        if let Some(any) = &self.any {
            return any.clone();
        }
        let name = self.b.reserve("py_value");
        let value = Expr::Ref(name.clone());
        self.any = Some(value.clone());
        let string = self.string(0, None);
        let number = self.values().number(false);
        let list = Expr::seq([
            Expr::lit("["),
            Expr::seq([value.clone(), Expr::seq([Expr::lit(","), Self::ws(), value.clone()]).star()]).opt(),
            Expr::lit("]"),
        ]);
        let dict = self.dict_of(value.clone());
        let body =
            Expr::alt([dict, list, string, number, Expr::lit("True"), Expr::lit("False"), Expr::lit("None")]);
        self.b.define_reserved(&name, body);
        value
    }

    /// The literal of `schema`, which holds a local `$ref`: the literal of the schema its
    /// chain of references ends at, defined once; an error for a reference the schema
    /// module refuses.
    fn reference(&mut self, schema: &Value) -> Result<Expr, GrammarError> {
        let reference = schema.get("$ref").and_then(Value::as_str).unwrap_or_default();
        if let Some(name) = self.refs.get(reference) {
            return Ok(Expr::Ref(name.clone()));
        }
        let target = schema::resolve(self.root, schema).map_err(|e| self.error(e.to_string()))?;
        let name = self.b.reserve(reference.rsplit('/').next().unwrap_or("ref"));
        self.refs.insert(reference.to_string(), name.clone());
        let body = self.literal(target)?;
        self.b.define_reserved(&name, body);
        Ok(Expr::Ref(name))
    }
}
