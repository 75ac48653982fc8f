//! Grammars for constrained decoding: what a model may write so that every call it
//! writes is a complete, valid call to a registered tool.
//!
//! Serving engines (vLLM, SGLang, llama.cpp's server, anything built on llguidance or
//! XGrammar) accept a grammar with a request and mask out every token that would leave
//! it. A protocol that knows its own syntax builds that grammar from the same tool
//! definitions its prompt is written from
//! ([`ToolCallingProtocol::grammar`](crate::protocol::ToolCallingProtocol::grammar)),
//! so a constrained model cannot write a malformed call, an unknown tool, a missing
//! required argument or `"ten"` for an integer.
//!
//! - **Dialects** ([`Dialect`]): Lark as llguidance reads it, GBNF as llama.cpp reads it,
//!   and for the formats whose calls are JSON, the JSON Schema of one call and a
//!   structural tag (begin text, arguments schema, end text per method).
//! - **Scopes** ([`Scope`]): exactly one call, one or more calls, or a whole reply (free
//!   text, a reasoning block at the start where the protocol hides reasoning, calls
//!   anywhere).
//!
//! **What a grammar guarantees.** Text that a Lark or GBNF grammar admits parses, with
//! the same protocol, into complete requests for the methods offered, whose arguments
//! pass validation against each method's schema, and into nothing else: free text can
//! hold no call markup and no reasoning tag, and no value can close its field early.
//! Keys come in the order of the schema's `properties` (the order the prompt shows), so
//! that the grammar stays linear in the number of keys; every required key is present
//! and no other key is. The schema keywords enforced are listed in
//! [the values module](self#schema-keywords); the others are left to validation.
//!
//! **What it costs the model.** Some text the parser would read is not admitted: keys in
//! another order, white space in JSON beyond one space after `:` and `,`, a `<` written
//! raw inside a JSON string (it is written `\u003c`), a lone surrogate `\u` escape, a null
//! written for an optional argument (it is left out instead), numbers with more than 20
//! digits.
//!
//! # Schema keywords
//!
//! Enforced: `type` (one or several), `enum`, `const`, `anyOf`/`oneOf` (as
//! alternatives), `properties` with `required`, `items`, `minItems`/`maxItems`,
//! `minLength`/`maxLength` (JSON strings), integer `minimum`/`maximum` and their
//! exclusive forms, `minimum: 0` on numbers, local `$ref`s. Left to validation:
//! `pattern`, `format`, `multipleOf`, `uniqueItems`, other number bounds, `not`,
//! `if`/`then`/`else`, `patternProperties`.
//!
//! ```
//! use tool_calling::grammar::{Constraint, Dialect, Scope};
//! use tool_calling::protocol::ToolCallingProtocol;
//! use tool_calling::protocol::vcp::VcpProtocol;
//! use tool_calling::tools::{MethodDefinition, ToolDefinition};
//!
//! let calc = ToolDefinition::new("calc", "Calculator").with_method(
//!     MethodDefinition::new("add", "Add two integers.").with_parameters(serde_json::json!({
//!         "type": "object",
//!         "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
//!         "required": ["a", "b"]
//!     })),
//! );
//! let grammar = VcpProtocol::default().grammar(&[calc], &Constraint::new(Dialect::Lark, Scope::Call))?;
//! assert!(grammar.text().starts_with("%llguidance {}"));
//! assert!(grammar.text().contains("command:「始」add「末」"));
//! # Ok::<(), tool_calling::grammar::GrammarError>(())
//! ```

mod ir;
mod values;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub(crate) use ir::{Builder, CharSet, Expr, Pattern};
pub(crate) use values::{TextForm, ValueStyle, Values, integer_range};

/// The language a grammar is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Dialect {
    /// Lark as llguidance reads it (vLLM and SGLang take it through llguidance).
    Lark,
    /// GBNF, llama.cpp's grammar format (its server's `grammar` field).
    Gbnf,
    /// The JSON Schema of a call object (the format's: `{"name", "arguments"}` for most,
    /// one alternative per method): for the formats whose calls are JSON objects.
    JsonSchema,
    /// A structural tag: per method, the text that begins its call, the JSON Schema of
    /// its arguments and the text that ends it, with the triggers that start a call in
    /// free text (XGrammar's and llguidance's form).
    StructuralTag,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 4] = [Dialect::Lark, Dialect::Gbnf, Dialect::JsonSchema, Dialect::StructuralTag];

    /// Its name on the command line: `lark`, `gbnf`, `json-schema`, `structural-tag`.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Lark => "lark",
            Dialect::Gbnf => "gbnf",
            Dialect::JsonSchema => "json-schema",
            Dialect::StructuralTag => "structural-tag",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Dialect {
    type Err = GrammarError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dialect::ALL.into_iter().find(|d| d.as_str() == s).ok_or_else(|| GrammarError::UnknownName {
            what: "dialect",
            name: s.to_string(),
            expected: Dialect::ALL.map(Dialect::as_str).join(", "),
        })
    }
}

/// How much of a reply a grammar covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Scope {
    /// Exactly one call and nothing else (for `tool_choice: required` or a named tool).
    Call,
    /// One or more calls, with only white space (or the format's own separator) between
    /// them.
    Calls,
    /// A whole reply: free text, a reasoning block first where the protocol hides
    /// reasoning, calls anywhere the protocol reads them.
    Reply,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 3] = [Scope::Call, Scope::Calls, Scope::Reply];

    /// Its name on the command line: `call`, `calls`, `reply`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Call => "call",
            Scope::Calls => "calls",
            Scope::Reply => "reply",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = GrammarError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL.into_iter().find(|d| d.as_str() == s).ok_or_else(|| GrammarError::UnknownName {
            what: "scope",
            name: s.to_string(),
            expected: Scope::ALL.map(Scope::as_str).join(", "),
        })
    }
}

/// A grammar, in its dialect's text (a JSON document for the JSON dialects).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grammar {
    dialect: Dialect,
    scope: Scope,
    text: String,
    /// What the grammar leaves to validation, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

impl Grammar {
    /// A grammar of `dialect` and `scope` whose text is `text` (for protocols of your
    /// own).
    pub fn new(dialect: Dialect, scope: Scope, text: impl Into<String>) -> Self {
        Grammar { dialect, scope, text: text.into(), notes: Vec::new() }
    }

    /// With a note on what the grammar leaves to validation.
    #[must_use]
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// What the grammar leaves to validation, and why: a schema keyword the dialect
    /// cannot express (a `pattern` in GBNF, a text length whose automaton would be too
    /// large), each said once. Text the grammar admits still parses into complete
    /// requests; validation refuses what these keywords rule out.
    ///
    /// ```
    /// use tool_calling::grammar::{Constraint, Dialect, Scope};
    /// use tool_calling::protocol::ToolCallingProtocol;
    /// use tool_calling::protocol::vcp::VcpProtocol;
    /// use tool_calling::tools::{MethodDefinition, ToolDefinition};
    /// let shout = ToolDefinition::new("shout", "Shout").with_method(
    ///     MethodDefinition::new("say", "Say it loud.").with_parameters(serde_json::json!({
    ///         "type": "object",
    ///         "properties": {"text": {"type": "string", "maxLength": 40}},
    ///         "required": ["text"]
    ///     })),
    /// );
    /// let grammar = VcpProtocol::default().grammar(&[shout], &Constraint::new(Dialect::Gbnf, Scope::Call))?;
    /// assert!(grammar.notes().is_empty(), "40 characters are written out in GBNF");
    /// # Ok::<(), tool_calling::grammar::GrammarError>(())
    /// ```
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Its dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Its scope.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// Its text, as a server takes it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its text, owned.
    pub fn into_text(self) -> String {
        self.text
    }

    /// The JSON document of a JSON dialect (`None` for Lark and GBNF).
    pub fn to_json(&self) -> Option<Value> {
        match self.dialect {
            Dialect::JsonSchema | Dialect::StructuralTag => serde_json::from_str(&self.text).ok(),
            _ => None,
        }
    }
}

/// Which grammar to build: its dialect, its scope, and the bounds it sets on what a
/// model may write (in a [`ToolCallConfig`](crate::config::ToolCallConfig),
/// `{"dialect": "gbnf", "scope": "calls", "max_text": 200}`).
///
/// The bounds are what a small model needs to finish: without one, a model that does
/// not know when to stop writes a value, or another call, until its token limit.
///
/// - [`max_calls`](Self::max_calls) bounds the calls of the `calls` and `reply` scopes
///   (4 by default; 1 gives exactly one call; 0 a reply of text alone).
/// - [`max_text`](Self::max_text) bounds every string value whose schema sets no smaller
///   `maxLength` (off by default). It costs a long value its end: a model that needs
///   more characters is cut off where the grammar closes the value, and the value it
///   wrote is the first `max_text` characters of the one it meant. A bounded text
///   value of a protocol whose values are plain text admits none of the characters its
///   markup begins with (VCP: `「` and `<`), which keeps the grammar small.
///
/// ```
/// use tool_calling::grammar::{Constraint, Dialect, Scope};
/// let constraint: Constraint = serde_json::from_str(r#"{"dialect": "gbnf", "scope": "calls"}"#).unwrap();
/// assert_eq!(constraint, Constraint::new(Dialect::Gbnf, Scope::Calls));
/// assert_eq!(constraint.max_calls, 4);
/// let bounded = Constraint::new(Dialect::Lark, Scope::Call).max_text(200);
/// assert_eq!(bounded.max_text, Some(200));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Constraint {
    /// The grammar's dialect (what the server reads).
    pub dialect: Dialect,
    /// How much of the reply it covers. In a conversation loop (the engine's, the
    /// gateway's) this is the scope of a turn that must call; a turn after tool results
    /// gets [`Scope::Reply`].
    pub scope: Scope,
    /// The most characters of a string value whose schema sets no smaller `maxLength`
    /// (`None`, the default: unbounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_text: Option<u32>,
    /// The most calls in one reply ([`Scope::Calls`], [`Scope::Reply`]). 0 in the
    /// `reply` scope admits text alone (what a conversation loop asks for when the
    /// model should answer); the `call` and `calls` scopes take it as 1.
    #[serde(default = "default_max_calls")]
    pub max_calls: u32,
}

/// [`Constraint::max_calls`] by default.
const DEFAULT_MAX_CALLS: u32 = 4;

fn default_max_calls() -> u32 {
    DEFAULT_MAX_CALLS
}

impl Constraint {
    /// A grammar of `dialect` for `scope`, with the default bounds.
    pub fn new(dialect: Dialect, scope: Scope) -> Self {
        Constraint { dialect, scope, max_text: None, max_calls: DEFAULT_MAX_CALLS }
    }

    /// Sets [`dialect`](Self::dialect).
    #[must_use]
    pub fn dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// Sets [`scope`](Self::scope).
    #[must_use]
    pub fn scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    /// Sets [`max_text`](Self::max_text).
    #[must_use]
    pub fn max_text(mut self, characters: u32) -> Self {
        self.max_text = Some(characters);
        self
    }

    /// Sets [`max_calls`](Self::max_calls): 0 makes a reply of text alone (the `call`
    /// and `calls` scopes take it as 1).
    #[must_use]
    pub fn max_calls(mut self, calls: u32) -> Self {
        self.max_calls = calls;
        self
    }

    /// The calls a reply may hold under this constraint.
    fn call_bound(&self) -> u32 {
        if self.scope == Scope::Reply { self.max_calls } else { self.max_calls.max(1) }
    }
}

/// Why no grammar could be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrammarError {
    /// The protocol has no grammar in this dialect for this scope.
    #[error("protocol `{protocol}` has no {dialect} grammar for scope `{scope}`")]
    Unsupported {
        /// The protocol's id.
        protocol: String,
        /// The dialect asked for.
        dialect: Dialect,
        /// The scope asked for.
        scope: Scope,
    },
    /// A call grammar needs at least one method to call.
    #[error("no method is offered: a grammar of calls needs at least one")]
    NoMethods,
    /// A method's parameter schema cannot be written as a grammar.
    #[error("the parameters of `{method}`: {message}")]
    Schema {
        /// The method's full name.
        method: String,
        /// What is wrong with its schema.
        message: String,
    },
    /// A dialect or scope name that does not exist.
    #[error("unknown {what} `{name}`: one of {expected}")]
    UnknownName {
        /// `dialect` or `scope`.
        what: &'static str,
        /// The name given.
        name: String,
        /// The names there are, comma-separated.
        expected: String,
    },
    /// The protocol writes no grammar in any dialect: a native API (whose provider
    /// constrains its own calls) or `auto` (which reads any format; a grammar needs one).
    #[error(
        "protocol `{protocol}` writes no grammar: grammars are written by the text protocols (VCP and \
         the open-model formats); a native API's provider constrains its own calls, and `auto` reads \
         any format, so name one"
    )]
    NoGrammar {
        /// The protocol's id.
        protocol: String,
    },
}

/// A section of calls: markup that opens it, what stands between two calls, and
/// markup that closes it (Mistral's `[TOOL_CALLS][…]`, DeepSeek's calls tokens).
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub between: Expr,
    pub close: String,
}

/// A method's call in a JSON-bodied format, for the JSON dialects.
#[derive(Debug, Clone)]
pub(crate) struct JsonCall {
    /// The method's full name.
    pub name: String,
    /// Its arguments' schema.
    pub arguments: Value,
    /// The text that begins a call of it (trigger included), up to its arguments.
    pub begin: String,
    /// The text that ends it, after the arguments.
    pub end: String,
    /// The JSON object that holds the call, for the JSON Schema dialect.
    pub object: CallObject,
}

/// How a JSON-bodied format's call is one JSON object (the JSON Schema dialect's).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallObject {
    /// The name and the arguments under the keys of [`Syntax::json`], after `before`:
    /// members each a key and the JSON Schema of its value, all required (Cohere's
    /// `tool_call_id`).
    Named { before: Vec<(String, Value)> },
    /// One member, whose key is the name and whose value is the arguments (Apertus'
    /// `{"NAME": {…}}`).
    Keyed,
    /// No object holds the call: the name stands in the markup around the arguments
    /// (Harmony's header), so the format has no JSON Schema of one call.
    Markup,
}

/// How a protocol writes calls, as a grammar: everything a scope is built from.
#[derive(Debug)]
pub(crate) struct Syntax {
    /// The protocol's id (for errors).
    pub protocol: String,
    /// Markup that begins each call (or the section, when there is one): free text
    /// may not hold it.
    pub open: String,
    /// One call after `open` (without a section), or one call inside the section.
    pub call: Expr,
    /// The section calls are grouped in, if any.
    pub section: Option<Section>,
    /// More text that free text may not hold (other markup the parser reads).
    pub avoid: Vec<Pattern>,
    /// Whether the protocol hides reasoning (then free text holds no reasoning tag, and
    /// a reply may open with one reasoning block).
    pub reasoning: bool,
    /// The format's own reasoning markup (Cohere's thinking tokens, Harmony's analysis
    /// frame, …): while reasoning is hidden, neither free text nor the reasoning block
    /// holds it, as neither holds a reasoning tag. The markup nests with `<think>` or
    /// ends a frame, so a token of it in the block would hide the calls after it.
    pub reasoning_markup: Vec<Pattern>,
    /// For JSON-bodied formats: the key of the name and of the arguments in a call
    /// object, and each method's call.
    pub json: Option<(&'static str, &'static str, Vec<JsonCall>)>,
}

/// Every text that could open or close reasoning: `<`, white space, an optional `/`
/// and white space, then `think` in any case.
pub(crate) fn reasoning_heads() -> Vec<Pattern> {
    vec![
        Pattern::text("<").then_any(CharSet::ascii_space()).then_any_case("think"),
        Pattern::text("<")
            .then_any(CharSet::ascii_space())
            .then_text("/")
            .then_any(CharSet::ascii_space())
            .then_any_case("think"),
    ]
}

impl Syntax {
    /// The syntax of `protocol`'s calls, each opened by `open`: no section, no markup to
    /// avoid beyond the calls' own, reasoning hidden when `reasoning` (the format's
    /// `skip_reasoning` option), no JSON Schema. Formats set the rest with struct update
    /// syntax.
    pub(crate) fn new(protocol: &str, open: impl Into<String>, call: Expr, reasoning: bool) -> Syntax {
        Syntax {
            protocol: protocol.to_string(),
            open: open.into(),
            call,
            section: None,
            avoid: Vec::new(),
            reasoning,
            reasoning_markup: Vec::new(),
            json: None,
        }
    }

    /// The grammar `constraint` asks for.
    pub(crate) fn grammar(
        self,
        mut builder: Builder,
        constraint: &Constraint,
    ) -> Result<Grammar, GrammarError> {
        let (dialect, scope) = (constraint.dialect, constraint.scope);
        match dialect {
            Dialect::Lark | Dialect::Gbnf => {
                let mut start = self.start(&mut builder, scope, constraint.call_bound());
                if let Some(close) = builder.opened_reasoning {
                    // The rest of the reasoning the prompt opened, then its closing tag:
                    // without it the reader would hide the whole reply as reasoning.
                    let mut patterns = reasoning_heads();
                    patterns.extend(self.reasoning_markup.iter().cloned());
                    let rest = builder.avoiding("OPENED_REASONING", patterns);
                    // (A line break or two after it, as a model writes them.)
                    let space = Expr::set(CharSet::of("\n")).times(0, Some(2));
                    let closed =
                        builder.terminal("CLOSED_REASONING", Expr::seq([rest, Expr::lit(close), space]));
                    start = builder.rule("after_reasoning", Expr::seq([closed, start]));
                }
                debug_assert_eq!(builder.check(&start), Ok(()));
                let (text, mut notes) =
                    if dialect == Dialect::Lark { builder.lark(&start) } else { builder.gbnf(&start) };
                notes.splice(0..0, std::mem::take(&mut builder.notes));
                let mut grammar = Grammar::new(dialect, scope, text);
                for note in notes {
                    if !grammar.notes.contains(&note) {
                        grammar.notes.push(note);
                    }
                }
                Ok(grammar)
            }
            Dialect::JsonSchema | Dialect::StructuralTag => self.json_grammar(dialect, scope, constraint),
        }
    }

    fn unsupported(&self, dialect: Dialect, scope: Scope) -> GrammarError {
        GrammarError::Unsupported { protocol: self.protocol.clone(), dialect, scope }
    }

    /// What follows `open` for one call, or for one to `most` calls in a section.
    fn after_open(&self, most: u32) -> Expr {
        match &self.section {
            Some(section) => Expr::seq([
                self.call.clone(),
                Expr::seq([section.between.clone(), self.call.clone()])
                    .times(0, Some(most.saturating_sub(1))),
                Expr::lit(section.close.clone()),
            ]),
            None => self.call.clone(),
        }
    }

    fn free_text_patterns(&self) -> Vec<Pattern> {
        let mut patterns = vec![Pattern::text(&self.open)];
        patterns.extend(self.avoid.iter().filter(|p| !p.is_before_call()).cloned());
        if self.reasoning {
            patterns.extend(reasoning_heads());
            patterns.extend(self.reasoning_markup.iter().cloned());
        }
        patterns
    }

    /// The start of a grammar of `scope`, whose replies hold at most `most` calls.
    fn start(&self, b: &mut Builder, scope: Scope, most: u32) -> Expr {
        let open = Expr::lit(self.open.clone());
        match scope {
            Scope::Call => b.rule("call", Expr::seq([open, self.after_open(1)])),
            Scope::Calls => {
                let first = Expr::seq([open.clone(), self.after_open(most)]);
                let body = if self.section.is_some() {
                    first
                } else {
                    // Between calls, a line break or two (what a model writes), never a
                    // run of white space it could write until its token limit.
                    let space = b.terminal("WS", Expr::set(CharSet::of(" \t\n")).times(1, Some(2)));
                    let more = Expr::seq([space.opt(), open, self.after_open(1)]);
                    Expr::seq([first, more.times(0, Some(most.saturating_sub(1)))])
                };
                b.rule("calls", body)
            }
            Scope::Reply => {
                let patterns = self.free_text_patterns();
                let text = b.avoiding("TEXT", patterns.clone());
                // Text before a call: it must not end with something that would change
                // how the opening markup reads (a backtick makes VCP's a mention).
                let mut before_patterns = patterns;
                before_patterns.extend(self.avoid_before_open());
                let before = b.avoiding("TEXT_BEFORE_CALL", before_patterns);
                let lead = b.terminal("TEXT_THEN_CALL", Expr::seq([before, open]));
                let calls = b.rule("calls", Expr::seq([lead, self.after_open(most)]));
                let mut items = Vec::new();
                if self.reasoning {
                    let mut inner = reasoning_heads();
                    inner.extend(self.reasoning_markup.iter().cloned());
                    let inner = b.avoiding("REASONING_TEXT", inner);
                    // The opening tag spelled out: a reply may also start with free text
                    // or a call, which begin with `<` too, and an engine that reads a
                    // literal as one lexeme (llguidance's GBNF reader) would otherwise
                    // commit to `<think>` at the `<` of `<tool_call>`.
                    let block = b.terminal(
                        "REASONING",
                        Expr::seq([Expr::spelled("<think>"), inner, Expr::lit("</think>")]),
                    );
                    items.push(block.opt());
                }
                // At most `most` calls: in that many places, or in one section of that
                // many.
                let places = if self.section.is_some() { most.min(1) } else { most };
                items.push(calls.times(0, Some(places)));
                items.push(text);
                b.rule("reply", Expr::seq(items))
            }
        }
    }

    /// Patterns the text right before a call must not hold beyond free text's: the
    /// `avoid` patterns that hold only there ([`Pattern::before_call`]), and for VCP a
    /// backtick at its end.
    fn avoid_before_open(&self) -> Vec<Pattern> {
        let mut patterns: Vec<Pattern> = self.avoid.iter().filter(|p| p.is_before_call()).cloned().collect();
        if self.open.starts_with("<<<[") {
            patterns.push(Pattern::text("`").at_end());
        }
        patterns
    }

    fn json_grammar(
        &self,
        dialect: Dialect,
        scope: Scope,
        constraint: &Constraint,
    ) -> Result<Grammar, GrammarError> {
        let Some((name_key, args_key, calls)) = &self.json else {
            return Err(self.unsupported(dialect, scope));
        };
        if calls.is_empty() {
            return Err(GrammarError::NoMethods);
        }
        // The document must read back as JSON (serde_json reads 128 levels deep).
        if let Some(call) = calls.iter().find(|call| depth(&call.arguments) > 100) {
            return Err(GrammarError::Schema {
                method: call.name.clone(),
                message: "the schema nests deeper than 100 levels".into(),
            });
        }
        let value = match (dialect, scope) {
            (Dialect::JsonSchema, Scope::Call | Scope::Calls) => {
                let mut one: Vec<Value> = Vec::new();
                for call in calls {
                    let arguments = strict(&call.arguments, constraint.max_text);
                    let (properties, required) = match &call.object {
                        CallObject::Named { before } => {
                            let mut properties = serde_json::Map::new();
                            let mut required = Vec::new();
                            for (key, schema) in before {
                                properties.insert(key.clone(), schema.clone());
                                required.push(Value::String(key.clone()));
                            }
                            properties.insert((*name_key).to_string(), json!({"const": call.name}));
                            properties.insert((*args_key).to_string(), arguments);
                            required.extend([json!(name_key), json!(args_key)]);
                            (properties, required)
                        }
                        CallObject::Keyed => {
                            let mut properties = serde_json::Map::new();
                            properties.insert(call.name.clone(), arguments);
                            (properties, vec![Value::String(call.name.clone())])
                        }
                        CallObject::Markup => return Err(self.unsupported(dialect, scope)),
                    };
                    one.push(json!({
                        "type": "object",
                        "properties": properties,
                        "required": required,
                        "additionalProperties": false,
                    }));
                }
                let one = if one.len() == 1 {
                    one.into_iter().next().unwrap_or_default()
                } else {
                    json!({"anyOf": one})
                };
                if scope == Scope::Call {
                    one
                } else {
                    json!({"type": "array", "items": one, "minItems": 1, "maxItems": constraint.call_bound()})
                }
            }
            // A structural tag leaves the text between calls free: a format that holds
            // the text right before a call to more than that (xLAM's bare array, a call
            // only at the start of a reply) has none.
            (Dialect::StructuralTag, Scope::Reply) if self.avoid.iter().any(Pattern::is_before_call) => {
                return Err(self.unsupported(dialect, scope));
            }
            (Dialect::StructuralTag, Scope::Reply) => {
                let structures: Vec<Value> = calls
                    .iter()
                    .map(|call| {
                        json!({"begin": call.begin, "schema": strict(&call.arguments, constraint.max_text), "end": call.end})
                    })
                    .collect();
                json!({"type": "structural_tag", "structures": structures, "triggers": [self.open]})
            }
            _ => return Err(self.unsupported(dialect, scope)),
        };
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        Ok(Grammar::new(dialect, scope, text))
    }
}

/// How deeply `value` nests (without recursion).
fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1)];
    while let Some((value, level)) = stack.pop() {
        deepest = deepest.max(level);
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, level + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, level + 1))),
            _ => {}
        }
    }
    deepest
}

/// `schema` with `"additionalProperties": false` on every object that lists its
/// properties and says nothing of others (a call may hold no unknown key), and, with
/// `max_text`, every string bounded by it ([`Constraint::max_text`]).
pub(crate) fn strict(schema: &Value, max_text: Option<u32>) -> Value {
    strict_at(schema, max_text, 0)
}

/// [`strict`] at nesting `depth`: deeper than 64 levels, the schema is left as it is.
fn strict_at(schema: &Value, max_text: Option<u32>, depth: u32) -> Value {
    if depth > 64 {
        return schema.clone();
    }
    let strict = |value: &Value| strict_at(value, max_text, depth + 1);
    match schema {
        Value::Object(object) => {
            let mut out = serde_json::Map::new();
            for (key, value) in object {
                let value = match key.as_str() {
                    "properties" | "$defs" | "definitions" => match value {
                        Value::Object(children) => {
                            Value::Object(children.iter().map(|(k, v)| (k.clone(), strict(v))).collect())
                        }
                        other => other.clone(),
                    },
                    "items" | "anyOf" | "oneOf" | "allOf" => match value {
                        Value::Array(items) => Value::Array(items.iter().map(&strict).collect()),
                        other => strict(other),
                    },
                    _ => value.clone(),
                };
                out.insert(key.clone(), value);
            }
            if out.contains_key("properties") && !out.contains_key("additionalProperties") {
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            if let Some(cap) = max_text {
                let string = match out.get("type") {
                    Some(Value::String(kind)) => kind == "string",
                    Some(Value::Array(kinds)) => kinds.iter().any(|k| k == "string"),
                    _ => false,
                };
                let own = out.get("maxLength").and_then(Value::as_u64);
                let least = out.get("minLength").and_then(Value::as_u64).unwrap_or(0);
                if string && own.is_none_or(|own| own > u64::from(cap)) {
                    out.insert("maxLength".into(), Value::from(u64::from(cap).max(least)));
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// Every method of `tools` with its full name and parameter schema, in prompt order.
pub(crate) fn methods(tools: &[crate::tools::ToolDefinition]) -> Vec<(String, &Value)> {
    tools
        .iter()
        .flat_map(|tool| tool.methods.iter().map(move |m| (m.full_name(&tool.tool_id), &m.parameters)))
        .collect()
}

pub(crate) use crate::schema::properties;
