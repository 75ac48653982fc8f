//! Argument values from their JSON Schema: as JSON (the JSON-bodied formats, and objects
//! or arrays written into a text value) and as text (VCP and the XML-like formats, whose
//! values are plain text that the tool's schema types).
//!
//! What is enforced: `type` (one or several), `enum`, `const`, `anyOf`/`oneOf` (as
//! alternatives), `properties` with `required` (every required key, no unknown key,
//! keys in the order of `properties`), `items`, `minItems`/`maxItems`,
//! `minLength`/`maxLength`, integer `minimum`/`maximum` (and the exclusive forms, and
//! the range an integer `format` such as `uint32` implies),
//! `minimum: 0` on numbers, and local `$ref`s (`#/$defs/…`, `#/definitions/…`, read
//! through chains by the [`schema`](crate::schema) module; one it refuses, such as a
//! cycle of references, is a [`GrammarError::Schema`]). Everything
//! else (`pattern`, `format`, `multipleOf`, `uniqueItems`, number bounds other than 0,
//! `not`, conditionals) is left to validation: the grammar admits the base type, and
//! says so in [`Grammar::notes`](super::Grammar::notes).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::GrammarError;
use super::ir::{Builder, CharSet, Expr, Pattern};
use crate::schema;

/// Keywords no grammar says: left to validation, with a note.
const UNENFORCED: [&str; 13] = [
    "multipleOf",
    "uniqueItems",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "propertyNames",
    "contains",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
];

/// Digits an integer or a number's integer part may have: enough for every `i64` and
/// `u64`, few enough that every such number reads back as a finite JSON number.
const MAX_DIGITS: u32 = 20;

/// How values are written inside a protocol.
#[derive(Debug, Clone)]
pub(crate) struct ValueStyle {
    /// Characters JSON strings must escape beyond JSON's own (`<`, so that no string
    /// can open a reasoning tag or close the call's markup; VCP adds `「`).
    pub string_escapes: String,
    /// For protocols whose values are text: the forms a string value may take (empty:
    /// the protocol writes no text values).
    pub text: Vec<TextForm>,
    /// For protocols whose values are text: what opens and closes a value that is not
    /// a string (a number, a boolean, JSON).
    pub open: String,
    pub close: String,
    /// For protocols that trim their text values: text a value may hold before its
    /// closing delimiter beyond what the writer writes (VCP: a line break).
    pub slack: Option<String>,
}

impl ValueStyle {
    /// JSON values, strings escaping `escapes` beyond JSON's own.
    pub(crate) fn json(escapes: &str) -> Self {
        ValueStyle {
            string_escapes: escapes.into(),
            text: Vec::new(),
            open: String::new(),
            close: String::new(),
            slack: None,
        }
    }

    /// The slack before a closing delimiter, if any.
    fn slack(&self) -> Expr {
        self.slack.as_ref().map_or(Expr::lit(""), |slack| Expr::lit(slack.clone()).opt())
    }
}

/// One form of a string value in a protocol whose values are text: `open`, any text that
/// holds none of `avoid`, then `close` (VCP has two: plain and escaped).
#[derive(Debug, Clone)]
pub(crate) struct TextForm {
    /// The names of its terminals: the text alone, and the whole value.
    pub text_name: &'static str,
    pub value_name: &'static str,
    pub open: String,
    pub avoid: Vec<Pattern>,
    pub close: String,
}

/// Builds value expressions for one grammar, remembering shared definitions.
pub(crate) struct Values<'b> {
    builder: &'b mut Builder,
    style: ValueStyle,
    method: String,
    /// The method's whole schema, which `$ref`s point into.
    root: &'b Value,
    /// The rule of each reference already written, by form and reference (see
    /// [`reference`](Self::reference)).
    refs: HashMap<String, String>,
    depth: u32,
    /// For protocols whose markup names a text value's JSON type (DSML's `string="true"`,
    /// Kimi K3's `type="number"`): what opens a value of each type (`string`, `integer`,
    /// `number`, `boolean`, `null`, `object`, `array`), in place of the style's `open`
    /// for a value that is not free text ([`with_kind_open`](Self::with_kind_open)).
    kind_open: Option<&'b dyn Fn(&str) -> String>,
}

impl<'b> Values<'b> {
    pub(crate) fn new(builder: &'b mut Builder, style: ValueStyle, method: &str, root: &'b Value) -> Self {
        Values {
            builder,
            style,
            method: method.to_string(),
            root,
            refs: HashMap::new(),
            depth: 0,
            kind_open: None,
        }
    }

    /// With text values opened by markup that names their JSON type: `open(kind)` opens a
    /// constant, an `enum` value, and every value that is not free text (whose forms are
    /// the style's own), one kind at a time.
    pub(crate) fn with_kind_open(mut self, open: &'b dyn Fn(&str) -> String) -> Self {
        self.kind_open = Some(open);
        self
    }

    fn error(&self, message: impl Into<String>) -> GrammarError {
        GrammarError::Schema { method: self.method.clone(), message: message.into() }
    }

    /// Notes the keywords of `schema` the grammar does not say (see the module docs):
    /// the grammar admits the base type, and validation checks the rest.
    pub(crate) fn note_unenforced(&mut self, schema: &Map<String, Value>) {
        let is = |kind: &str| match schema.get("type") {
            Some(Value::String(t)) => t == kind,
            Some(Value::Array(types)) => types.iter().any(|t| t == kind),
            _ => false,
        };
        let mut unsaid: Vec<&str> = UNENFORCED.iter().copied().filter(|k| schema.contains_key(*k)).collect();
        if is("string") && schema.contains_key("format") {
            unsaid.push("format");
        }
        if is("number") {
            let non_negative = |v: &Value| v.as_f64() == Some(0.0);
            if schema.get("minimum").is_some_and(|v| !non_negative(v)) {
                unsaid.push("minimum");
            }
            unsaid.extend(
                ["maximum", "exclusiveMinimum", "exclusiveMaximum"]
                    .into_iter()
                    .filter(|k| schema.contains_key(*k)),
            );
        }
        for keyword in unsaid {
            self.note_keyword(keyword);
        }
    }

    /// Notes that `keyword` in the method's schema is left to validation.
    fn note_keyword(&mut self, keyword: &str) {
        let note = format!("`{keyword}` in the schema of `{}` is left to validation", self.method);
        if !self.builder.notes.contains(&note) {
            self.builder.notes.push(note);
        }
    }

    /// The `pattern` of a string schema as a regular expression over the whole value (see
    /// [`pattern_regex`]), with the note GBNF gives it; `None`, with a note, when it is no
    /// regular expression the grammar can say.
    fn pattern(&mut self, schema: &Map<String, Value>) -> Option<(String, String)> {
        let pattern = schema.get("pattern")?;
        match pattern.as_str().map(pattern_regex) {
            Some(Ok(regex)) => Some((
                regex,
                format!(
                    "`pattern` in the schema of `{}` is left to validation (GBNF has no regular expressions)",
                    self.method
                ),
            )),
            _ => {
                self.note_keyword("pattern");
                None
            }
        }
    }

    /// `string`, a string literal between `quote`s, narrowed to the schema's `pattern` (if
    /// any): of characters written as themselves (so that the text the pattern reads is
    /// the value), and matching it.
    pub(crate) fn quoted_pattern(&mut self, schema: &Map<String, Value>, string: Expr, quote: char) -> Expr {
        let Some((regex, note)) = self.pattern(schema) else { return string };
        let quote = if quote == '"' { "\"" } else { "'" };
        let plain = format!(r"{quote}[^{quote}\\\x00-\x1f]*{quote}");
        let regexes = vec![plain, format!("{quote}(?:{regex}){quote}")];
        self.matched("STRING_PATTERN", string, regexes, note)
    }

    /// Free text of `min` to `max` characters that holds none of `avoid`, as a terminal
    /// named after `hint`; narrowed to `schema`'s `pattern`, if it has one.
    pub(crate) fn pattern_text(
        &mut self,
        hint: &str,
        schema: &Map<String, Value>,
        avoid: Vec<Pattern>,
        min: u32,
        max: Option<u32>,
    ) -> Expr {
        let pattern = self.pattern(schema);
        self.text_matching(hint, &pattern, avoid, min, max)
    }

    /// [`pattern_text`](Self::pattern_text) with the pattern read.
    fn text_matching(
        &mut self,
        hint: &str,
        pattern: &Option<(String, String)>,
        avoid: Vec<Pattern>,
        min: u32,
        max: Option<u32>,
    ) -> Expr {
        let Some((regex, note)) = pattern else {
            return self.builder.avoiding_bounded(hint, avoid, min, max);
        };
        // Text a pattern narrows holds no character that could begin the markup it
        // avoids: an engine intersects a pattern with that cheaply, and with "holds none
        // of the markup" at a cost past its limits.
        match self.builder.guarded(hint, avoid.clone(), min, max) {
            Some(text) => self.matched("TEXT_PATTERN", text, vec![regex.clone()], note.clone()),
            None => {
                self.note_keyword("pattern");
                self.builder.avoiding_bounded(hint, avoid, min, max)
            }
        }
    }

    /// `inner` narrowed to the texts `regexes` match, or `inner` with a note when it is not
    /// one lexeme (bounded text written as rules).
    fn matched(&mut self, hint: &str, inner: Expr, regexes: Vec<String>, note: String) -> Expr {
        match self.builder.matching(hint, inner.clone(), regexes, note) {
            Some(narrowed) => narrowed,
            None => {
                self.note_keyword("pattern");
                inner
            }
        }
    }

    /// The optional space after `:` and `,`.
    fn ws(&mut self) -> Expr {
        Expr::lit(" ").opt()
    }

    /// A JSON string (with `min`..`max` characters).
    pub(crate) fn string(&mut self, min: u32, max: Option<u32>) -> Expr {
        let mut plain = String::from("\"\\");
        plain.push_str(&self.style.string_escapes);
        let unit = Expr::alt([
            Expr::set(
                CharSet::ranges(&[('\u{0}', '\u{1F}'), ('\u{7F}', '\u{7F}')])
                    .union(&CharSet::of(&plain))
                    .not(),
            ),
            Expr::seq([
                Expr::lit("\\"),
                Expr::alt([
                    Expr::set(CharSet::of("\"\\/bfnrt")),
                    Expr::seq([Expr::lit("u"), unicode_escape()]),
                ]),
            ]),
        ]);
        let name = if (min, max) == (0, None) { "STRING".to_string() } else { format!("STRING_{min}") };
        self.builder.terminal(&name, Expr::seq([Expr::lit("\""), unit.times(min, max), Expr::lit("\"")]))
    }

    /// An integer between the bounds.
    pub(crate) fn integer(&mut self, min: Option<i128>, max: Option<i128>) -> Expr {
        let body = integer_range(min, max);
        self.builder.terminal("INTEGER", body)
    }

    /// A JSON number; non-negative when `min` is at least 0.
    pub(crate) fn number(&mut self, non_negative: bool) -> Expr {
        let digit = Expr::set(CharSet::range('0', '9'));
        let int = Expr::alt([
            Expr::lit("0"),
            Expr::seq([Expr::set(CharSet::range('1', '9')), digit.clone().times(0, Some(MAX_DIGITS - 1))]),
        ]);
        let body = Expr::seq([
            if non_negative { Expr::lit("") } else { Expr::lit("-").opt() },
            int,
            Expr::seq([Expr::lit("."), digit.clone().times(1, Some(MAX_DIGITS))]).opt(),
            Expr::seq([
                Expr::set(CharSet::of("eE")),
                Expr::set(CharSet::of("+-")).opt(),
                digit.clone(),
                digit.opt(),
            ])
            .opt(),
        ]);
        self.builder.terminal(if non_negative { "NUMBER_NON_NEGATIVE" } else { "NUMBER" }, body)
    }

    /// Any JSON value.
    pub(crate) fn any_json(&mut self) -> Expr {
        let name = self.builder.reserve("json_value");
        let value = Expr::Ref(name.clone());
        let string = self.string(0, None);
        let number = self.number(false);
        let ws = self.ws();
        let member = Expr::seq([string.clone(), Expr::lit(":"), ws.clone(), value.clone()]);
        let object = Expr::seq([
            Expr::lit("{"),
            Expr::seq([member.clone(), Expr::seq([Expr::lit(","), ws.clone(), member]).star()]).opt(),
            Expr::lit("}"),
        ]);
        let array = Expr::seq([
            Expr::lit("["),
            Expr::seq([value.clone(), Expr::seq([Expr::lit(","), ws, value.clone()]).star()]).opt(),
            Expr::lit("]"),
        ]);
        let body = Expr::alt([
            object,
            array,
            string,
            number,
            Expr::lit("true"),
            Expr::lit("false"),
            Expr::lit("null"),
        ]);
        self.builder.define_reserved(&name, body);
        value
    }

    /// A value of `schema` written as JSON.
    pub(crate) fn json(&mut self, schema: &Value) -> Result<Expr, GrammarError> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(self.error("the schema nests deeper than 64 levels"));
        }
        let out = self.json_inner(schema);
        self.depth -= 1;
        out
    }

    fn json_inner(&mut self, schema: &Value) -> Result<Expr, GrammarError> {
        let object = match schema {
            Value::Bool(true) => return Ok(self.any_json()),
            Value::Bool(false) => return Err(self.error("a schema of `false` admits no value")),
            Value::Object(object) => object,
            _ => return Err(self.error(format!("a schema must be an object or a boolean, not {schema}"))),
        };
        self.note_unenforced(object);
        if object.contains_key("$ref") {
            return self.reference("json", schema, |values, target| values.json(target));
        }
        if let Some(constant) = object.get("const") {
            return Ok(Expr::lit(constant.to_string()));
        }
        if let Some(options) = object.get("enum").and_then(Value::as_array) {
            if options.is_empty() {
                return Err(self.error("an empty `enum` admits no value"));
            }
            return Ok(Expr::alt(options.iter().map(|v| Expr::lit(v.to_string()))));
        }
        if let Some((key, options)) = schema::alternatives(object) {
            if options.is_empty() {
                return Err(self.error(format!("an empty `{key}` admits no value")));
            }
            let alternatives =
                options.iter().map(|option| self.json(option)).collect::<Result<Vec<_>, _>>()?;
            return Ok(Expr::alt(alternatives));
        }
        match object.get("type") {
            Some(Value::Array(types)) => {
                let mut alternatives = Vec::new();
                for kind in types.iter().filter_map(Value::as_str) {
                    alternatives.push(self.json_of_type(kind, object)?);
                }
                if alternatives.is_empty() {
                    return Err(self.error("an empty `type` list admits no value"));
                }
                Ok(Expr::alt(alternatives))
            }
            Some(Value::String(kind)) => self.json_of_type(kind, object),
            _ if object.contains_key("properties") => self.json_of_type("object", object),
            _ if object.contains_key("items") => self.json_of_type("array", object),
            _ => {
                if object.contains_key("pattern") {
                    self.note_keyword("pattern");
                }
                Ok(self.any_json())
            }
        }
    }

    fn json_of_type(&mut self, kind: &str, schema: &Map<String, Value>) -> Result<Expr, GrammarError> {
        Ok(match kind {
            "string" => {
                let (min, max) = self.builder.string_bounds(schema);
                let string = self.string(min, max);
                self.quoted_pattern(schema, string, '"')
            }
            "integer" => {
                let (min, max) = integer_bounds(schema);
                self.integer(min, max)
            }
            "number" => self.number(number_non_negative(schema)),
            "boolean" => Expr::alt([Expr::lit("true"), Expr::lit("false")]),
            "null" => Expr::lit("null"),
            "array" => {
                let item = match schema.get("items") {
                    Some(items) => self.json(items)?,
                    None => self.any_json(),
                };
                let (min, max) = schema::item_bounds(schema);
                let ws = self.ws();
                let rest = Expr::seq([Expr::lit(","), ws, item.clone()]);
                let items =
                    Expr::seq([item, rest.times(min.saturating_sub(1), max.map(|m| m.saturating_sub(1)))]);
                let body = if min == 0 && max == Some(0) {
                    Expr::lit("[]")
                } else if min == 0 {
                    Expr::seq([Expr::lit("["), items.opt(), Expr::lit("]")])
                } else {
                    Expr::seq([Expr::lit("["), items, Expr::lit("]")])
                };
                self.builder.rule("array", body)
            }
            "object" => self.object(schema)?,
            other => return Err(self.error(format!("unknown type `{other}`"))),
        })
    }

    /// An object: keys in the order of `properties`, every required key present, no
    /// unknown key. With no `properties`, any object.
    fn object(&mut self, schema: &Map<String, Value>) -> Result<Expr, GrammarError> {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            let ws = self.ws();
            let string = self.string(0, None);
            let value = self.any_json();
            let member = Expr::seq([string, Expr::lit(":"), ws.clone(), value]);
            return Ok(Expr::seq([
                Expr::lit("{"),
                Expr::seq([member.clone(), Expr::seq([Expr::lit(","), ws, member]).star()]).opt(),
                Expr::lit("}"),
            ]));
        };
        let required = schema::required(schema);
        let mut members = Vec::new();
        for (key, property) in properties {
            let value = self.json(property)?;
            let ws = self.ws();
            members.push((
                Expr::seq([Expr::lit(Value::String(key.clone()).to_string()), Expr::lit(":"), ws, value]),
                required.contains(&key.as_str()),
            ));
        }
        let ws = self.ws();
        let list = self.member_list(members, Expr::seq([Expr::lit(","), ws]));
        Ok(Expr::seq([Expr::lit("{"), list, Expr::lit("}")]))
    }

    /// `members` in order, each required one present, separated by `separator`: a rule
    /// per position and "has an earlier member been written", so the size stays linear.
    pub(crate) fn member_list(&mut self, members: Vec<(Expr, bool)>, separator: Expr) -> Expr {
        // tail[i][first]: the members from i on, when none (first) or some came before.
        let mut after_first = Expr::lit("");
        let mut as_first = Expr::lit("");
        for (member, required) in members.into_iter().rev() {
            let with_sep = Expr::seq([separator.clone(), member.clone(), after_first.clone()]);
            let leading = Expr::seq([member, after_first.clone()]);
            let (next_after, next_first) = if required {
                (with_sep, leading)
            } else {
                (Expr::alt([with_sep, after_first.clone()]), Expr::alt([leading, as_first.clone()]))
            };
            after_first = self.builder.rule("members", next_after);
            as_first = self.builder.rule("members", next_first);
        }
        as_first
    }

    /// A value of `schema` written as text (VCP, the XML-like formats): a string is the
    /// protocol's text, numbers and booleans their JSON text, objects and arrays JSON.
    pub(crate) fn text(&mut self, schema: &Value) -> Result<Expr, GrammarError> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(self.error("the schema nests deeper than 64 levels"));
        }
        let out = self.text_inner(schema);
        self.depth -= 1;
        out
    }

    fn text_inner(&mut self, schema: &Value) -> Result<Expr, GrammarError> {
        let object = match schema {
            Value::Object(object) => object,
            _ => return self.free_text(0, self.builder.max_text, None),
        };
        self.note_unenforced(object);
        if object.contains_key("$ref") {
            return self.reference("text", schema, |values, target| values.text(target));
        }
        if let Some(constant) = object.get("const") {
            if self.kind_open.is_some() {
                return Ok(self.delimited_as(kind_of(constant), Expr::lit(text_of(constant))));
            }
            return Ok(self.delimited(Expr::lit(text_of(constant))));
        }
        if let Some(options) = object.get("enum").and_then(Value::as_array) {
            if options.is_empty() {
                return Err(self.error("an empty `enum` admits no value"));
            }
            if self.kind_open.is_some() {
                let each: Vec<Expr> =
                    options.iter().map(|v| self.delimited_as(kind_of(v), Expr::lit(text_of(v)))).collect();
                return Ok(Expr::alt(each));
            }
            return Ok(self.delimited(Expr::alt(options.iter().map(|v| Expr::lit(text_of(v))))));
        }
        if let Some((_, options)) = schema::alternatives(object) {
            let alternatives =
                options.iter().map(|option| self.text(option)).collect::<Result<Vec<_>, _>>()?;
            return Ok(Expr::alt(alternatives));
        }
        let kinds: Vec<&str> = match object.get("type") {
            Some(Value::String(kind)) => vec![kind.as_str()],
            // `null` has no text of its own: an optional value is left out instead.
            Some(Value::Array(kinds)) => {
                kinds.iter().filter_map(Value::as_str).filter(|k| *k != "null").collect()
            }
            _ => vec!["string"],
        };
        // A string alternative admits any text, so it stands alone.
        if kinds.contains(&"string") {
            let (min, max) = self.builder.string_bounds(object);
            let pattern = self.pattern(object);
            return self.free_text(min, max, pattern);
        }
        let mut alternatives = Vec::new();
        for kind in kinds {
            let inner = match kind {
                "integer" => {
                    let (min, max) = integer_bounds(object);
                    self.integer(min, max)
                }
                "number" => self.number(number_non_negative(object)),
                "boolean" => Expr::alt([Expr::lit("true"), Expr::lit("false")]),
                "object" | "array" => self.json_of_type(kind, object)?,
                "null" => Expr::lit("null"),
                other => return Err(self.error(format!("unknown type `{other}`"))),
            };
            alternatives.push((kind, inner));
        }
        if alternatives.is_empty() {
            return Err(self.error("the schema admits only `null`, which a text value cannot hold"));
        }
        if self.kind_open.is_some() {
            let each: Vec<Expr> =
                alternatives.into_iter().map(|(kind, inner)| self.delimited_as(kind, inner)).collect();
            return Ok(Expr::alt(each));
        }
        Ok(self.delimited(Expr::alt(alternatives.into_iter().map(|(_, inner)| inner))))
    }

    /// `inner`, a value of JSON type `kind`, between the opener of its kind
    /// ([`with_kind_open`](Self::with_kind_open)) and the value's closer.
    fn delimited_as(&mut self, kind: &str, inner: Expr) -> Expr {
        let open = self.kind_open.map_or_else(|| self.style.open.clone(), |open| open(kind));
        let body =
            Expr::seq([Expr::lit(open), inner, self.style.slack(), Expr::lit(self.style.close.clone())]);
        self.builder.token("VALUE", body)
    }

    /// `inner` between the value delimiters: one lexeme when it is regular.
    fn delimited(&mut self, inner: Expr) -> Expr {
        let body = Expr::seq([
            Expr::lit(self.style.open.clone()),
            inner,
            self.style.slack(),
            Expr::lit(self.style.close.clone()),
        ]);
        self.builder.token("VALUE", body)
    }

    /// A string value of `min` to `max` characters, in each of the protocol's text forms,
    /// matching `pattern` (from [`pattern`](Self::pattern)) when there is one.
    fn free_text(
        &mut self,
        min: u32,
        max: Option<u32>,
        pattern: Option<(String, String)>,
    ) -> Result<Expr, GrammarError> {
        if self.style.text.is_empty() {
            return Err(self.error("this protocol writes no text values"));
        }
        let mut forms = Vec::new();
        for form in self.style.text.clone() {
            let text = self.text_matching(form.text_name, &pattern, form.avoid, min, max);
            // The closer after the slack spelled out, as after free text (see
            // `Expr::spelled`).
            let close =
                if self.style.slack.is_some() { Expr::spelled(&form.close) } else { Expr::lit(form.close) };
            let value = Expr::seq([Expr::lit(form.open), text, self.style.slack(), close]);
            forms.push(self.builder.token(form.value_name, value));
        }
        Ok(Expr::alt(forms))
    }

    /// The value of `schema`, which holds a `$ref`, written as `form` (`json` or `text`):
    /// a rule for the schema its chain of references ends at, defined once per reference
    /// and form (so a recursive schema is a recursive rule, and a definition used both as
    /// a text value and inside JSON has a rule for each); an error for a reference the
    /// schema module refuses.
    fn reference(
        &mut self,
        form: &str,
        schema: &Value,
        build: impl FnOnce(&mut Self, &Value) -> Result<Expr, GrammarError>,
    ) -> Result<Expr, GrammarError> {
        let reference = schema.get("$ref").and_then(Value::as_str).unwrap_or_default();
        let key = format!("{form} {reference}");
        if let Some(name) = self.refs.get(&key) {
            return Ok(Expr::Ref(name.clone()));
        }
        let target = schema::resolve(self.root, schema).map_err(|e| self.error(e.to_string()))?;
        let name = self.builder.reserve(reference.rsplit('/').next().unwrap_or("ref"));
        self.refs.insert(key, name.clone());
        let body = build(self, target)?;
        self.builder.define_reserved(&name, body);
        Ok(Expr::Ref(name))
    }
}

impl Builder {
    /// The bounds of a string of `schema`: its `minLength`, and its `maxLength` capped
    /// by [`max_text`](Self::max_text) (the grammar's
    /// [`Constraint::max_text`](super::Constraint::max_text)).
    pub(crate) fn string_bounds(&self, schema: &Map<String, Value>) -> (u32, Option<u32>) {
        let max = match (schema::count(schema, "maxLength"), self.max_text) {
            (Some(own), Some(cap)) => Some(own.min(cap)),
            (own, cap) => own.or(cap),
        };
        (schema::count(schema, "minLength").unwrap_or(0), max)
    }
}

impl CharSet {
    /// The characters of `self` and of `other` (both positive sets).
    pub(crate) fn union(&self, other: &CharSet) -> CharSet {
        let mut ranges = self.ranges_of();
        ranges.extend(other.ranges_of());
        CharSet::ranges(&ranges)
    }
}

fn hex() -> CharSet {
    CharSet::ranges(&[('0', '9'), ('a', 'f'), ('A', 'F')])
}

/// What follows `\u` in a JSON string that a JSON reader decodes: a code point that is
/// no surrogate, or a high surrogate and then `\u` and a low one (a lone surrogate is an
/// error to serde_json, which would leave the call unread).
fn unicode_escape() -> Expr {
    let hex_n = |n: u32| Expr::set(hex()).times(n, Some(n));
    Expr::alt([
        Expr::seq([
            Expr::set(CharSet::ranges(&[('0', '9'), ('a', 'c'), ('A', 'C'), ('e', 'f'), ('E', 'F')])),
            hex_n(3),
        ]),
        Expr::seq([Expr::set(CharSet::of("dD")), Expr::set(CharSet::range('0', '7')), hex_n(2)]),
        Expr::seq([
            Expr::set(CharSet::of("dD")),
            Expr::set(CharSet::of("89abAB")),
            hex_n(2),
            Expr::lit("\\u"),
            Expr::set(CharSet::of("dD")),
            Expr::set(CharSet::of("cdefCDEF")),
            hex_n(2),
        ]),
    ])
}

/// A schema's `pattern` (an ECMA-262 regular expression that may match anywhere in the
/// value) as a regular expression in llguidance's Lark syntax that matches the whole
/// value: anchors `^` and `$` at its ends are taken off, and an end without one gets
/// `(?s:.*)`; `\d`, `\w` and their negations mean ASCII as in ECMA-262. Refused (`Err`):
/// what Rust's `regex-syntax` does not read (lookaround, back-references) and assertions
/// anywhere else (`\b`, an inner `^`).
pub(crate) fn pattern_regex(pattern: &str) -> Result<String, String> {
    let from_start = pattern.starts_with('^');
    let mut body = pattern.strip_prefix('^').unwrap_or(pattern);
    // A final `$` is an anchor unless a backslash escapes it.
    let mut to_end = false;
    if let Some(head) = body.strip_suffix('$')
        && (head.len() - head.trim_end_matches('\\').len()) % 2 == 0
    {
        body = head;
        to_end = true;
    }
    let mut ascii = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            ascii.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => ascii.push_str("[0-9]"),
            Some('D') => ascii.push_str("[^0-9]"),
            Some('w') => ascii.push_str("[0-9A-Za-z_]"),
            Some('W') => ascii.push_str("[^0-9A-Za-z_]"),
            Some(other) => {
                ascii.push('\\');
                ascii.push(other);
            }
            None => return Err("the pattern ends in a lone `\\`".into()),
        }
    }
    let hir = regex_syntax::Parser::new().parse(&ascii).map_err(|e| e.to_string())?;
    if !hir.properties().look_set().is_empty() {
        return Err("the pattern has an assertion inside it".into());
    }
    let mut out = String::new();
    if !from_start {
        out.push_str("(?s:.*)");
    }
    out.push_str("(?:");
    // (`/` ends a Lark regular expression.)
    out.push_str(&hir.to_string().replace('/', "\\/"));
    out.push(')');
    if !to_end {
        out.push_str("(?s:.*)");
    }
    Ok(out)
}

/// The JSON type of `value`, as a schema names it (a whole number is an `integer`).
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value's text in a text protocol: a string as itself, anything else as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn number_non_negative(schema: &Map<String, Value>) -> bool {
    schema.get("minimum").and_then(Value::as_f64).is_some_and(|m| m >= 0.0)
        || schema.get("exclusiveMinimum").and_then(Value::as_f64).is_some_and(|m| m >= 0.0)
}

/// An integer schema's bounds (exclusive bounds made inclusive; fractional bounds
/// rounded inward).
fn integer_bounds(schema: &Map<String, Value>) -> (Option<i128>, Option<i128>) {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let mut min = bound("minimum").map(|m| m.ceil() as i128);
    if let Some(m) = bound("exclusiveMinimum") {
        let m = m.floor() as i128 + 1;
        min = Some(min.map_or(m, |x| x.max(m)));
    }
    let mut max = bound("maximum").map(|m| m.floor() as i128);
    if let Some(m) = bound("exclusiveMaximum") {
        let m = m.ceil() as i128 - 1;
        max = Some(max.map_or(m, |x| x.min(m)));
    }
    // The range a Rust integer `format` (as schemars writes it) implies.
    let implied: Option<(i128, i128)> = match schema.get("format").and_then(Value::as_str) {
        Some("int8") => Some((i8::MIN.into(), i8::MAX.into())),
        Some("int16") => Some((i16::MIN.into(), i16::MAX.into())),
        Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
        Some("int64") => Some((i64::MIN.into(), i64::MAX.into())),
        Some("uint8") => Some((0, u8::MAX.into())),
        Some("uint16") => Some((0, u16::MAX.into())),
        Some("uint32") => Some((0, u32::MAX.into())),
        Some("uint64") => Some((0, u64::MAX.into())),
        _ => None,
    };
    if let Some((lo, hi)) = implied {
        min = Some(min.map_or(lo, |m| m.max(lo)));
        max = Some(max.map_or(hi, |m| m.min(hi)));
    }
    (min, max)
}

/// Every integer from `min` to `max` (either may be open), in its shortest decimal text.
/// An open bound is the end of what the crate reads as an integer (an `i64` below zero,
/// a `u64` above it): a longer run of digits would read as a float, or stay text in a
/// text protocol, and fail an `integer` schema.
pub(crate) fn integer_range(min: Option<i128>, max: Option<i128>) -> Expr {
    let (lowest, highest) = (i128::from(i64::MIN), i128::from(u64::MAX));
    let (min, max) = (min.unwrap_or(lowest).max(lowest), max.unwrap_or(highest).min(highest));
    if min > max {
        // No integer: a text no value has, so that nothing is admitted.
        return Expr::Alt(Vec::new());
    }
    let mut alternatives = Vec::new();
    if min < 0 {
        let upper = max.min(-1);
        alternatives.push(Expr::seq([Expr::lit("-"), non_negative_range((-upper) as u128, (-min) as u128)]));
    }
    if max >= 0 {
        alternatives.push(non_negative_range(min.max(0) as u128, max as u128));
    }
    Expr::alt(alternatives)
}

fn non_negative_range(lo: u128, hi: u128) -> Expr {
    let digits = |n: u128| n.to_string().len();
    let mut alternatives = Vec::new();
    let mut lo = lo;
    while lo <= hi {
        let n = digits(lo);
        let top = 10u128.pow(n as u32) - 1;
        let upper = hi.min(top);
        alternatives.push(same_length(lo.to_string().as_bytes(), upper.to_string().as_bytes()));
        if upper == hi {
            break;
        }
        lo = upper + 1;
    }
    Expr::alt(alternatives)
}

/// The decimal numbers from `lo` to `hi`, both of the same length.
fn same_length(lo: &[u8], hi: &[u8]) -> Expr {
    let digit = |d: u8| d as char;
    match (lo.split_first(), hi.split_first()) {
        (Some((&l, [])), Some((&h, []))) => {
            if l == h {
                Expr::lit(digit(l).to_string())
            } else {
                Expr::set(CharSet::range(digit(l), digit(h)))
            }
        }
        (Some((&l, lo_rest)), Some((&h, hi_rest))) => {
            let rest = lo_rest.len() as u32;
            let any = || Expr::set(CharSet::range('0', '9')).times(rest, Some(rest));
            if l == h {
                return Expr::seq([Expr::lit(digit(l).to_string()), same_length(lo_rest, hi_rest)]);
            }
            let lo_all_zero = lo_rest.iter().all(|&d| d == b'0');
            let hi_all_nine = hi_rest.iter().all(|&d| d == b'9');
            let mut alternatives = Vec::new();
            let first_full = if lo_all_zero { l } else { l + 1 };
            let last_full = if hi_all_nine { h } else { h - 1 };
            if !lo_all_zero {
                let nines = vec![b'9'; lo_rest.len()];
                alternatives.push(Expr::seq([Expr::lit(digit(l).to_string()), same_length(lo_rest, &nines)]));
            }
            if first_full <= last_full {
                let head = if first_full == last_full {
                    Expr::lit(digit(first_full).to_string())
                } else {
                    Expr::set(CharSet::range(digit(first_full), digit(last_full)))
                };
                alternatives.push(Expr::seq([head, any()]));
            }
            if !hi_all_nine {
                let zeros = vec![b'0'; hi_rest.len()];
                alternatives.push(Expr::seq([Expr::lit(digit(h).to_string()), same_length(&zeros, hi_rest)]));
            }
            Expr::alt(alternatives)
        }
        _ => Expr::Alt(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(expr: &Expr, text: &str) -> bool {
        // A small backtracking matcher over the regular subset, for these tests only.
        fn go<'t>(expr: &Expr, text: &'t str, k: &mut dyn FnMut(&'t str) -> bool) -> bool {
            match expr {
                Expr::Lit(l) | Expr::Spelled(l) => text.strip_prefix(l.as_str()).is_some_and(&mut *k),
                Expr::Set(set) => {
                    let mut chars = text.chars();
                    chars.next().is_some_and(|c| set.contains(c)) && k(chars.as_str())
                }
                Expr::Seq(items) => seq(items, text, k),
                Expr::Alt(items) => items.iter().any(|i| go(i, text, k)),
                Expr::Rep(inner, min, max) => rep(inner, *min, *max, text, k),
                _ => false,
            }
        }
        fn seq<'t>(items: &[Expr], text: &'t str, k: &mut dyn FnMut(&'t str) -> bool) -> bool {
            match items.split_first() {
                None => k(text),
                Some((first, rest)) => go(first, text, &mut |t| seq(rest, t, k)),
            }
        }
        fn rep<'t>(
            inner: &Expr,
            min: u32,
            max: Option<u32>,
            text: &'t str,
            k: &mut dyn FnMut(&'t str) -> bool,
        ) -> bool {
            if min == 0 && k(text) {
                return true;
            }
            if max == Some(0) {
                return false;
            }
            go(inner, text, &mut |t| {
                t.len() < text.len() && rep(inner, min.saturating_sub(1), max.map(|m| m - 1), t, k)
            })
        }
        go(expr, text, &mut |rest| rest.is_empty())
    }

    #[test]
    fn patterns_become_whole_text_regular_expressions() {
        for (pattern, regex) in [
            ("^[A-Z]{3}$", "(?:[A-Z]{3})"),
            ("ab", "(?s:.*)(?:(?:ab))(?s:.*)"),
            ("^ab", "(?:(?:ab))(?s:.*)"),
            ("ab$", "(?s:.*)(?:(?:ab))"),
            // An escaped `$` is a character, not an anchor.
            (r"^a\$", r"(?:(?:a\$))(?s:.*)"),
            (r"^a\\$", r"(?:(?:a\\))"),
            // ECMA-262's `\d` and `\w` are ASCII.
            (r"^\d\w$", "(?:(?:[0-9][0-9A-Z_a-z]))"),
            ("^a/b$", r"(?:(?:a\/b))"),
        ] {
            assert_eq!(pattern_regex(pattern).as_deref(), Ok(regex), "{pattern}");
        }
        for refused in [r"\bword", "a(?=b)", r"(a)\1", "a^b", "(", r"a\"] {
            assert!(pattern_regex(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn integer_ranges_admit_exactly_their_integers() {
        for (min, max) in [
            (Some(1), Some(10)),
            (Some(0), None),
            (Some(-15), Some(7)),
            (Some(17), Some(123)),
            (None, Some(-3)),
        ] {
            let expr = integer_range(min, max);
            for n in -200i128..=200 {
                let inside = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
                assert_eq!(matches(&expr, &n.to_string()), inside, "{n} in {min:?}..={max:?}");
            }
            assert!(!matches(&expr, "01"), "no leading zeros");
            assert!(!matches(&expr, "-0"));
        }
    }
}
