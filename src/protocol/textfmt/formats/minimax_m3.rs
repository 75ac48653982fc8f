//! `minimax_m3`: MiniMax-M3: every tag prefixed with the namespace token `]<]minimax[>[`;
//! arguments as elements named by their key, nested for objects and arrays.
//!
//! ```text
//! <mm:think>The user wants the weather.</mm:think>Let me look.
//! ]<]minimax[>[<tool_call>
//! ]<]minimax[>[<invoke name="get_weather">
//! ]<]minimax[>[<city>Paris]<]minimax[>[</city>
//! ]<]minimax[>[<days>3]<]minimax[>[</days>
//! ]<]minimax[>[<options>]<]minimax[>[<units>metric]<]minimax[>[</units>]<]minimax[>[</options>
//! ]<]minimax[>[<hours>]<]minimax[>[<item>9]<]minimax[>[</item>]<]minimax[>[<item>18]<]minimax[>[</item>]<]minimax[>[</hours>
//! ]<]minimax[>[</invoke>
//! ]<]minimax[>[</tool_call>
//! ```
//!
//! Arguments: each top-level element `]<]minimax[>[<KEY>…]<]minimax[>[</KEY>` is one
//! argument. An element holding only text is a value: the text with the five XML entities
//! decoded and its white space kept, typed as the module docs say (JSON text becomes that
//! value, `True`/`False`/`None` become `true`/`false`/`null`, anything else stays a
//! string; the tool's schema types top-level values when the engine resolves the call).
//! An element holding elements is an object (a key written twice collects its values in
//! an array; text beside the children is kept under `$text`), or an array when every
//! child is `<item>`.
//!
//! Several calls: several `<invoke>` elements in one `<tool_call>` block, or several
//! blocks. Text inside a block that is not an `<invoke>` is markup.
//!
//! Normal text: everything outside the blocks. Reasoning written `<mm:think>…</mm:think>`
//! is read by the one reasoning rule as `<think>` tags are: hidden with `skip_reasoning`
//! (calls quoted inside it are not read; never closed, it hides the rest), text without
//! it; a `</mm:think>` without its opening tag hides only itself, the text before it
//! stays normal text (unless the reply is read with `starts_in_reasoning`).
//!
//! Malformed: an `<invoke>` without a name, an element never closed, a closing tag that
//! does not match the open element, or a stray namespace token inside an element make
//! the call an incomplete request; an `<invoke>` whose `</invoke>` is missing ends at the
//! next `<invoke` or at the block's end and is incomplete; a block never closed leaves
//! its open call incomplete. Other calls still count.
//!
//! Implementation-defined choices (the sources disagree): leaf text is kept as written
//! (smg; sglang strips it) and entities are decoded (smg; sglang keeps them); an element
//! whose children are all `<item>` is an array without a schema (the template writes
//! arrays that way; smg and sglang make it `{"item": …}` unless the schema says array);
//! white space between the namespace token and `<` is not tolerated (smg; sglang removes
//! it); stray text between top-level elements is ignored (smg stops reading there).
//!
//! Grammar: one block holding the calls, as the writer writes them: `BLOCK`, then per call
//! `\nNS<invoke name="NAME">`, `\nNS<KEY>…NS</KEY>` per key in schema order and
//! `\nNS</invoke>`, then `\nNS</tool_call>` (`NS` the namespace token). A value holds no
//! `<` (so no tag, no namespace token and no reasoning tag; `&lt;` stands for it), and
//! its entities are decoded (so a bound on its length counts what is written); numbers,
//! booleans and null are JSON; an object of listed properties is its children in schema
//! order (`{}` when it has none), a list its `<item>` children (`[]` when empty). Below
//! the top level, where the reader types text without a schema, a string may not read as
//! another value: it does not begin with white space, `{`, `[`, `"`, `-`, a digit, `t`,
//! `f`, `n` or `&`, nor end with white space, nor is it `True`, `False` or `None` (so
//! some strings the writer writes there, `false alarm`, are not admitted). An object
//! without listed properties, a list without items and a value of no type are a JSON
//! leaf (with `<` and `&` escaped in its strings), which the reader also reads. Free text
//! holds no `BLOCK`, `<mm:think>` or `</mm:think>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{
    Builder, CharSet, Expr, GrammarError, Pattern, Section, Syntax, ValueStyle, Values, properties,
};
use crate::protocol::reasoning::{Markup, Section as Reasoning};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, UNCLOSED,
};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::prompt::{bare_functions, wrapped};
use crate::protocol::textfmt::readers::values::{decode_entities, infer};
use crate::protocol::textfmt::readers::xml_elements::read_element;
use crate::schema;
use crate::tools::ToolDefinition;

/// The namespace token every structural tag begins with.
pub(crate) const NS: &str = "]<]minimax[>[";
const BLOCK: &str = "]<]minimax[>[<tool_call>";
const BLOCK_END: &str = "]<]minimax[>[</tool_call>";
const INVOKE: &str = "]<]minimax[>[<invoke ";
const INVOKE_END: &str = "]<]minimax[>[</invoke>";
const THINK: &str = "<mm:think>";
const THINK_END: &str = "</mm:think>";
/// The element name of an array's items.
const ITEM: &str = "item";
/// The key under which text beside an object's children is kept.
const MIXED_TEXT: &str = "$text";
const RESULT_OPEN: &str = "<response>";
const RESULT_CLOSE: &str = "</response>";

/// Section kinds: a block of calls.
const CALLS: u8 = 1;

/// Reasoning: `<mm:think>` tags, read as `<think>` is.
static REASONING: Markup = Markup::new(&[Reasoning::tags(THINK, &[THINK_END])], &[]);

/// The rules of `minimax_m3`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        match search.token(text, from, BLOCK) {
            Found::Call(at) => Found::Section { at, len: BLOCK.len(), kind: CALLS },
            found => found,
        }
    }

    fn in_section(&self, text: &str, from: usize, kind: u8, search: &mut Searches) -> InSection {
        match kind {
            CALLS => search.call_or_end(text, from, INVOKE, BLOCK_END),
            _ => InSection::Leave(from),
        }
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        region.until_first(INVOKE.len(), &[INVOKE_END, INVOKE, BLOCK_END])
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let cut = state.stage == UNCLOSED || !closed;
        calls.push(read_element(region, INVOKE.len(), "invoke", INVOKE_END, cut, read_elements));
    }
}

/// An element being read: its name, its text so far, the children it closed.
struct Open<'b> {
    name: &'b str,
    text: String,
    children: Vec<(String, Value)>,
}

impl Open<'_> {
    /// The element's value: its text typed, or its children as an object or array.
    fn value(self) -> Value {
        if self.children.is_empty() {
            return infer(&decode_entities(&self.text));
        }
        if self.children.iter().all(|(name, _)| name == ITEM) {
            return Value::Array(self.children.into_iter().map(|(_, value)| value).collect());
        }
        let mut object = Map::new();
        for (name, value) in self.children {
            add(&mut object, name, value);
        }
        if !self.text.trim().is_empty() {
            let mut key = MIXED_TEXT.to_string();
            while object.contains_key(&key) {
                key.insert(0, '$');
            }
            object.insert(key, Value::String(decode_entities(&self.text).into_owned()));
        }
        Value::Object(object)
    }
}

/// Adds `value` under `name`; a name written twice collects its values in an array.
fn add(object: &mut Map<String, Value>, name: String, value: Value) {
    match object.get_mut(&name) {
        Some(Value::Array(values)) => values.push(value),
        Some(existing) => {
            let first = existing.take();
            *existing = Value::Array(vec![first, value]);
        }
        None => {
            object.insert(name, value);
        }
    }
}

/// Reads the elements of an invoke's body into `call`'s arguments (without recursion, so
/// that deep nesting costs no stack). A top-level leaf is also kept as text, for the
/// schema to type.
fn read_elements(body: &str, call: &mut RawCall) -> Result<(), String> {
    let mut stack: Vec<Open<'_>> = Vec::new();
    let mut pos = 0;
    loop {
        let rest = body.get(pos..).unwrap_or_default();
        let Some(at) = rest.find(NS) else {
            return match stack.last() {
                Some(open) => Err(format!("the element <{}> is not closed", open.name)),
                None => Ok(()),
            };
        };
        if let Some(open) = stack.last_mut() {
            open.text.push_str(rest.get(..at).unwrap_or_default());
        }
        let tag = rest.get(at + NS.len()..).unwrap_or_default();
        let Some(tag_body) = tag.strip_prefix('<') else {
            if stack.is_empty() {
                // A stray token between arguments: not an argument, read on.
                pos += at + NS.len();
                continue;
            }
            return Err(format!("a stray {NS} inside an element: each one must begin a tag"));
        };
        let Some(tag_end) = tag_body.find('>') else {
            return Err("a tag is not closed with `>`".into());
        };
        let tag_name = tag_body.get(..tag_end).unwrap_or_default();
        pos += at + NS.len() + 1 + tag_end + 1;
        if let Some(closing) = tag_name.strip_prefix('/') {
            let closing = closing.trim();
            let Some(open) = stack.pop() else {
                return Err(format!("the closing tag </{closing}> closes no element"));
            };
            if open.name != closing {
                return Err(format!("the element <{}> is closed with </{closing}>", open.name));
            }
            let name = open.name.to_string();
            let text = (open.children.is_empty()).then(|| decode_entities(&open.text).into_owned());
            let value = open.value();
            match stack.last_mut() {
                Some(parent) => parent.children.push((name, value)),
                None => match text {
                    Some(text) if !call.args.contains_key(&name) => call.text_arg(name, &text, value),
                    _ => {
                        call.text_args.shift_remove(&name);
                        match call.args.get_mut(&name) {
                            Some(Value::Array(values)) => values.push(value),
                            Some(existing) => {
                                let first = existing.take();
                                *existing = Value::Array(vec![first, value]);
                            }
                            None => {
                                call.args.insert(name, value);
                            }
                        }
                    }
                },
            }
        } else {
            let name = tag_name.trim();
            if name.is_empty() {
                return Err("an element has no name".into());
            }
            stack.push(Open { name, text: String::new(), children: Vec::new() });
        }
    }
}

/// How deep [`write_element`] nests before it gives up.
const MAX_DEPTH: usize = 128;

fn write_element(out: &mut String, key: &str, value: &Value, depth: usize) -> Option<()> {
    let bad_key =
        key.is_empty() || key.contains(['<', '>', '/']) || key.trim() != key || key.starts_with('$');
    if bad_key || depth > MAX_DEPTH {
        return None;
    }
    out.push_str(&format!("{NS}<{key}>"));
    match value {
        Value::Object(object) if !object.is_empty() => {
            if object.keys().all(|k| k == ITEM) {
                return None;
            }
            for (k, v) in object {
                write_element(out, k, v, depth + 1)?;
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                write_element(out, ITEM, item, depth + 1)?;
            }
        }
        Value::String(s) => {
            if infer(s) != *value {
                return None;
            }
            out.push_str(&s.replace('&', "&amp;").replace('<', "&lt;"));
        }
        other => out.push_str(&other.to_string().replace('&', "&amp;").replace('<', "&lt;")),
    }
    out.push_str(&format!("{NS}</{key}>"));
    Some(())
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("]<]minimax[>["), Marker::Token("<mm:think>"), Marker::Token("</mm:think>")],
    escapes: &[Escape::Tag("]minimax["), Escape::Tag("mm:think"), Escape::Tag("response")],
    reasoning: Some(&REASONING),
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt, in the shape of MiniMax's templates: the tools as JSON in
    /// `<tools>`, then the namespaced call syntax with nested elements for objects and
    /// `<item>` elements for arrays.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let defs =
            bare_functions(tools).iter().map(|f| format!("<tool>{f}</tool>")).collect::<Vec<_>>().join("\n");
        format!(
            "# Tools\nYou may call one or more tools to assist with the user query.\n\
         Here are the tools available in JSONSchema format:\n\n<tools>\n{defs}\n</tools>\n\n\
         When making tool calls, use XML format to invoke tools and pass parameters, every tag \
         beginning with {NS}:\n\n\
         {BLOCK}\n{NS}<invoke name=\"tool-name-1\">\n\
         {NS}<param-key-1>param-value-1{NS}</param-key-1>\n\
         {NS}<param-key-2>{NS}<nested-key>nested-value{NS}</nested-key>{NS}</param-key-2>\n\
         {NS}<param-key-3>{NS}<item>list-value-1{NS}</item>{NS}<item>list-value-2{NS}</item>{NS}</param-key-3>\n\
         ...\n{INVOKE_END}\n{BLOCK_END}\n\n\
         Write an object parameter as nested elements and a list as <item> elements; \
         write `&` as &amp; and `<` as &lt; in values."
        )
    }

    /// The text of the tool message that carries `results` back: each result in
    /// `<response>` tags, as MiniMax's templates render tool output.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        wrapped(results, RESULT_OPEN, RESULT_CLOSE)
    }

    /// A call of `name` with `args`, as the prompt teaches it: one block, one element a line;
    /// strings as text with `&` and `<` written as entities, numbers, booleans and null as
    /// JSON, objects as nested elements, arrays as `<item>` elements (empty ones as `{}` and
    /// `[]`). `None` when something would not read back as written: a string that reads as
    /// another value (`"42"`, `"true"`), a key that is empty, holds `<`, `>`, `/` or white
    /// space at either end, an object whose keys are all `item` (it reads as an array) or
    /// that has a key `$text`, or a name that holds a quote or `>`.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        if name.is_empty() || name.contains(['"', '>', '&']) || name.trim() != name {
            return None;
        }
        let mut out = format!("{BLOCK}\n{NS}<invoke name=\"{name}\">");
        for (key, value) in args {
            out.push('\n');
            write_element(&mut out, key, value, 0)?;
        }
        out.push_str(&format!("\n{INVOKE_END}\n{BLOCK_END}"));
        Some(out)
    }

    /// The calls of `minimax_m3` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let mut calls = Vec::new();
        for (name, schema) in offer.methods {
            let elements = Elements { method: name, root: schema };
            let list = elements.children(b, schema, 0, true, "\n")?;
            let head = format!("\n{NS}<invoke name=\"{name}\">");
            calls
                .push(b.rule(name, Expr::seq([Expr::lit(head), list, Expr::lit(format!("\n{INVOKE_END}"))])));
        }
        Ok(Syntax {
            section: Some(Section { between: Expr::lit(""), close: format!("\n{BLOCK_END}") }),
            avoid: vec![Pattern::text(THINK), Pattern::text(THINK_END)],
            ..offer.syntax(BLOCK, b.rule("call", Expr::alt(calls)))
        })
    }
}

/// Deepest schema nesting a grammar follows.
const MAX_SCHEMA_DEPTH: u32 = 32;

/// The elements of one method's arguments, for its grammar.
struct Elements<'s> {
    method: &'s str,
    /// The method's parameter schema, which `$ref`s point into.
    root: &'s Value,
}

impl Elements<'_> {
    fn error(&self, message: impl Into<String>) -> GrammarError {
        GrammarError::Schema { method: self.method.to_string(), message: message.into() }
    }

    /// The children of an object of `schema`'s properties, in order, each after `lead`;
    /// `top`: they are the call's arguments. Every required one is there; `None` of them
    /// may be when none is required.
    fn children(
        &self,
        b: &mut Builder,
        schema: &Value,
        depth: u32,
        top: bool,
        lead: &str,
    ) -> Result<Expr, GrammarError> {
        let mut members = Vec::new();
        for (key, property, required) in properties(schema) {
            let mut probe = String::new();
            if write_element(&mut probe, key, &Value::Null, 0).is_none() || key == MIXED_TEXT {
                return Err(self.error(format!("the key `{key}` cannot be written as an element name")));
            }
            let content = self.content(b, property, depth + 1, top)?;
            members.push((element(b, &format!("{lead}{NS}<{key}>"), content, key), required));
        }
        Ok(Values::new(b, ValueStyle::json("<&"), self.method, self.root).member_list(members, Expr::lit("")))
    }

    /// The content of an element holding a value of `schema` (`top`: an argument, which the
    /// tool's schema types; else the reader types its text alone).
    fn content(&self, b: &mut Builder, schema: &Value, depth: u32, top: bool) -> Result<Expr, GrammarError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(self.error(format!("the schema nests deeper than {MAX_SCHEMA_DEPTH} levels")));
        }
        let Value::Object(object) = schema else {
            return match schema {
                Value::Bool(false) => Err(self.error("a schema of `false` admits no value")),
                _ => self.json_leaf(b, schema),
            };
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let target = schema::target(self.root, reference).map_err(|e| self.error(e.to_string()))?;
            return self.content(b, target, depth + 1, top);
        }
        let constants: Option<Vec<&Value>> = match (object.get("const"), object.get("enum")) {
            (Some(constant), _) => Some(vec![constant]),
            (None, Some(Value::Array(options))) => Some(options.iter().collect()),
            _ => None,
        };
        if let Some(constants) = constants {
            let written: Vec<Expr> = constants.into_iter().filter_map(|v| constant_content(v, top)).collect();
            if written.is_empty() {
                return Err(self.error("the `enum` or `const` admits no value an element can hold"));
            }
            return Ok(Expr::alt(written));
        }
        if let Some((key, options)) = schema::alternatives(object) {
            if options.is_empty() {
                return Err(self.error(format!("an empty `{key}` admits no value")));
            }
            let mut alternatives = Vec::new();
            for option in &options {
                alternatives.push(self.content(b, option, depth + 1, top)?);
            }
            return Ok(Expr::alt(alternatives));
        }
        let Some(kinds) = schema::kinds(object) else { return self.json_leaf(b, schema) };
        let mut alternatives = Vec::new();
        for kind in kinds {
            alternatives.push(match kind {
                "string" => {
                    let (min, max) = b.string_bounds(object);
                    let (name, avoid) =
                        if top { ("LEAF_TEXT", top_text()) } else { ("NESTED_TEXT", nested_text()) };
                    Values::new(b, ValueStyle::json("<&"), self.method, self.root)
                        .pattern_text(name, object, avoid, min, max)
                }
                "integer" | "number" => {
                    let mut one = object.clone();
                    one.insert("type".into(), Value::String(kind.to_string()));
                    Values::new(b, ValueStyle::json("<&"), self.method, self.root)
                        .json(&Value::Object(one))?
                }
                "boolean" => Expr::alt([Expr::lit("true"), Expr::lit("false")]),
                "null" => Expr::lit("null"),
                "object"
                    if object.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty()) =>
                {
                    if object
                        .get("properties")
                        .and_then(Value::as_object)
                        .is_some_and(|p| p.keys().all(|k| k == ITEM))
                    {
                        return Err(self.error("an object whose keys are all `item` reads as a list"));
                    }
                    let any_required = properties(schema).iter().any(|(_, _, required)| *required);
                    let children = self.children(b, schema, depth, false, "")?;
                    if any_required {
                        children
                    } else {
                        // Without children the element would be text: an empty object is `{}`.
                        Expr::alt([Expr::lit("{}"), self.some_children(b, schema, depth)?])
                    }
                }
                "array" if object.get("items").is_some() => {
                    let items = object.get("items").unwrap_or(&Value::Null);
                    let content = self.content(b, items, depth + 1, false)?;
                    let item = element(b, &format!("{NS}<{ITEM}>"), content, ITEM);
                    let (min, max) = schema::item_bounds(object);
                    let some = item.times(min.max(1), max);
                    match (min, max) {
                        (0, Some(0)) => Expr::lit("[]"),
                        (0, _) => Expr::alt([Expr::lit("[]"), some]),
                        _ => some,
                    }
                }
                "object" | "array" => {
                    let mut one = object.clone();
                    one.insert("type".into(), Value::String(kind.to_string()));
                    self.json_leaf(b, &Value::Object(one))?
                }
                other => return Err(self.error(format!("unknown type `{other}`"))),
            });
        }
        if alternatives.is_empty() {
            return Err(self.error("an empty `type` list admits no value"));
        }
        Ok(Expr::alt(alternatives))
    }

    /// The children of an object none of whose properties is required, at least one.
    fn some_children(&self, b: &mut Builder, schema: &Value, depth: u32) -> Result<Expr, GrammarError> {
        let all = properties(schema);
        let mut firsts = Vec::new();
        for (at, (key, property, _)) in all.iter().enumerate() {
            let content = self.content(b, property, depth + 1, false)?;
            let first = element(b, &format!("{NS}<{key}>"), content, key);
            // The members after this one, each optional.
            let rest: serde_json::Map<String, Value> =
                all.iter().skip(at + 1).map(|(k, p, _)| ((*k).to_string(), (*p).clone())).collect();
            let rest = self.children(b, &serde_json::json!({"properties": rest}), depth, false, "")?;
            firsts.push(Expr::seq([first, rest]));
        }
        Ok(b.rule("children", Expr::alt(firsts)))
    }

    /// A value of `schema` as JSON text in a leaf (strings escaping `<` and `&`).
    fn json_leaf(&self, b: &mut Builder, schema: &Value) -> Result<Expr, GrammarError> {
        Values::new(b, ValueStyle::json("<&"), self.method, self.root).json(schema)
    }
}

/// An element: `open`, `content`, then the closing tag of `key`; one lexeme where it can
/// be (so that text in it is read up to its closing tag, not to a `]` that may begin it).
fn element(b: &mut Builder, open: &str, content: Expr, key: &str) -> Expr {
    b.token("ELEMENT", Expr::seq([Expr::lit(open), content, Expr::lit(format!("{NS}</{key}>"))]))
}

/// What an argument's text may not hold: `<` (a tag; the reader decodes `&lt;`).
fn top_text() -> Vec<Pattern> {
    vec![Pattern::text("<")]
}

/// What a nested leaf's text may not hold: `<`, nor anything that would make the reader,
/// typing it without a schema, read another value than a string.
fn nested_text() -> Vec<Pattern> {
    let mut avoid = top_text();
    avoid.push(Pattern::new().then(CharSet::of("{[\"-0123456789tfn&")).at_start());
    avoid.extend(Pattern::trimmed_text(&[]));
    for word in ["True", "False", "None"] {
        avoid.push(Pattern::text(word).at_start().at_end());
    }
    avoid
}

/// The content the writer gives constant `value` (`top`: as an argument), if it can.
fn constant_content(value: &Value, top: bool) -> Option<Expr> {
    if let (true, Value::String(s)) = (top, value) {
        return Some(Expr::lit(s.replace('&', "&amp;").replace('<', "&lt;")));
    }
    let mut out = String::new();
    write_element(&mut out, ITEM, value, 0)?;
    let inner = out.strip_prefix(&format!("{NS}<{ITEM}>"))?.strip_suffix(&format!("{NS}</{ITEM}>"))?;
    Some(Expr::lit(inner))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::test_support::{object, parse};
    use serde_json::json;

    #[test]
    fn write_call_refuses_what_it_cannot_carry() {
        for args in [
            json!({"v": "42"}),
            json!({"v": "true"}),
            json!({"v": {"item": 1}}),
            json!({"a>b": 1}),
            json!({"": 1}),
            json!({"$text": 1}),
        ] {
            assert_eq!(Rules.write_call("f", args.as_object().unwrap()), None, "{args}");
        }
        assert_eq!(Rules.write_call("f\"", &Map::new()), None);
        assert_eq!(Rules.write_call("", &Map::new()), None);
    }

    #[test]
    fn top_level_leaves_keep_their_text_for_the_schema() {
        let reply = format!(
            "{BLOCK}\n{NS}<invoke name=\"f\">{NS}<zip>5{NS}</zip>{NS}<o>{NS}<k>1{NS}</k>{NS}</o>{INVOKE_END}\n{BLOCK_END}"
        );
        let parsed = parse(TextFormat::MinimaxM3, &reply);
        let request = &parsed.requests[0];
        assert_eq!(request.text_args["zip"], "5");
        assert!(!request.text_args.contains_key("o"));
        assert_eq!(object(&request.args), json!({"zip": 5, "o": {"k": 1}}));
    }

    #[test]
    fn reasoning_is_hidden_and_holds_no_call() {
        let call = format!("{BLOCK}{NS}<invoke name=\"a\">{INVOKE_END}{BLOCK_END}");
        let parsed = parse(TextFormat::MinimaxM3, &format!("<mm:think>maybe {call}</mm:think>Sure."));
        assert!(parsed.requests.is_empty(), "{parsed:#?}");
        assert_eq!(parsed.normal_text, "Sure.");
        let stray = parse(TextFormat::MinimaxM3, &format!("thought</mm:think>Sure.{call}"));
        assert_eq!(stray.normal_text, "thoughtSure.");
        assert_eq!(stray.requests.len(), 1);
        let unclosed = parse(TextFormat::MinimaxM3, "Hi.<mm:think>still thinking");
        assert_eq!(unclosed.normal_text, "Hi.");
    }

    #[test]
    fn malformed_elements_make_the_call_incomplete() {
        for body in [
            format!("{NS}<a>1{NS}</b>"),
            format!("{NS}<a>1"),
            format!("{NS}<a>1{NS}x{NS}</a>"),
            format!("{NS}</a>"),
            format!("{NS}<>1{NS}</>"),
        ] {
            let reply = format!("{BLOCK}{NS}<invoke name=\"f\">{body}{INVOKE_END}{BLOCK_END}");
            let parsed = parse(TextFormat::MinimaxM3, &reply);
            assert_eq!(parsed.requests.len(), 1, "{body}");
            assert!(!parsed.requests[0].complete, "{body}");
        }
    }
}
