//! The [`Format`] trait: everything about one text format, in the format's own file.
//!
//! A format is one file in `formats/` that implements this trait, and one line in the
//! registry (`registry.rs`). The rest of the module asks the trait: the protocol reads
//! with [`Format::reading`], prompts with [`Format::prompt`], answers with
//! [`Format::results`], writes calls with [`Format::write_call`] and grammars with
//! [`Format::syntax`]; `auto` builds its table of markers from every format's
//! [`Format::markers`] and [`Format::same_markup`], and
//! [`neutralize_tokens`](super::neutralize_tokens) makes plain every format's
//! [`Format::escapes`]. What several formats share (a reader, a prompt layout, the
//! question of what follows a marker they all write) is in `readers/`, never in another
//! format's file.

use serde_json::{Map, Value};

use super::TextFormat;
use super::TextFormatOptions;
use super::driver::Reading;
use super::readers::shapes::{Look, Shape};
use crate::ToolExecutionResult;
use crate::grammar::{Builder, Constraint, GrammarError, Syntax};
use crate::protocol::reasoning::Markup;
use crate::tools::ToolDefinition;

/// What tells `auto` that a reply is written in a format.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Marker {
    /// A token that decides this format wherever it stands in visible text.
    Token(&'static str),
    /// A token several formats write: `look` reads what follows it and names its
    /// [`Shape`], and the reply is this format's when the shape is `shape`. Every format
    /// that writes the token declares it with the same `look` and a shape of its own.
    Shared { token: &'static str, look: Look, shape: Shape },
    /// A reply that opens (after blanks) with these pieces, blanks allowed between them
    /// (`{` then `"name"`: a bare JSON call). The first piece must be there; a later one
    /// may still be arriving.
    Opening(&'static [&'static str]),
    /// A Python call list (`[name(`) anywhere in prose.
    CallList,
}

/// Markup of a format that [`neutralize_tokens`](super::neutralize_tokens) makes plain
/// in tool output. Every special token (`<|…`, `<｜…`) is made plain whatever the
/// formats declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Escape {
    /// A tag name that follows `<` or `</` (case and blanks before it do not matter; a
    /// name that begins with it counts).
    Tag(&'static str),
    /// A token that begins with `[` (case does not matter).
    Bracket(&'static str),
    /// A word whose `[` right after it opens a call list (Phi-4's `functools`).
    ListAfter(&'static str),
    /// A fence that opens a JSON list of call objects when `[{"name"` follows it.
    CallFence(&'static str),
    /// A Python call list (`[name(`).
    CallList,
}

/// One text format: its id, how `auto` recognises it, what tool output must not hold,
/// how its calls are found and read, and what it writes (the tool prompt, results,
/// calls, a grammar).
pub(crate) trait Format: Send + Sync {
    /// The protocol id (`hermes`, `qwen3_coder_xml`, …), the file's `ID`.
    fn id(&self) -> &'static str;

    /// What tells `auto` that a reply is in this format. A format whose markup another
    /// format writes the same way declares none of it, and names that format in
    /// [`same_markup`](Self::same_markup) instead.
    fn markers(&self) -> &'static [Marker] {
        &[]
    }

    /// Formats whose replies read the same as this one's: `auto` detects them by their
    /// markers, and reads the reply in this format when the tools were offered in it.
    /// The relation is symmetric; one side declaring it is enough.
    fn same_markup(&self) -> &'static [TextFormat] {
        &[]
    }

    /// The markup of this format that tool output must not hold.
    fn escapes(&self) -> &'static [Escape] {
        &[]
    }

    /// How calls are found and read in a reply (the rules the reading machine runs).
    fn reading(&self) -> &dyn Reading;

    /// The format's own reasoning markup, read by the rule every text protocol shares
    /// ([`reasoning`](crate::protocol::reasoning)): hidden with `<think>` while
    /// reasoning is hidden, read like any other text when it is not, ending the
    /// reasoning a reply [starts in](super::TextFormatOptions::starts_in_reasoning).
    /// Its reading ([`reading`](Self::reading)) treats that markup as it treats the
    /// rest of the text (its tokens as markup, the text in them as prose). The default:
    /// none (`<think>` alone).
    fn reasoning(&self) -> Option<&'static Markup> {
        None
    }

    /// The tool-definition prompt, in the shape the family's chat template renders
    /// tools (`tools` hold at least one method).
    fn prompt(&self, tools: &[ToolDefinition]) -> String;

    /// The text of the one tool message that carries `results` back (at least one), in
    /// the shape the template renders tool output; every text from a tool goes through
    /// [`neutralize_tokens`](super::neutralize_tokens).
    fn results(&self, results: &[ToolExecutionResult]) -> String;

    /// A call of `name` with `args`, written the way the prompt teaches it and the
    /// grammar admits it; `None` when an argument holds text the format cannot carry.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String>;

    /// The format's calls as a grammar [`Syntax`], each method of `methods` (full name
    /// and parameter schema, at least one) a call as [`write_call`](Self::write_call)
    /// writes it; rules go into `b`, within the bounds `constraint` sets (its dialect
    /// and scope are the caller's). The default: no grammar
    /// ([`GrammarError::Unsupported`]).
    fn syntax(
        &self,
        b: &mut Builder,
        methods: &[(String, &Value)],
        options: &TextFormatOptions,
        constraint: &Constraint,
    ) -> Result<Syntax, GrammarError> {
        let _ = (b, methods, options);
        Err(GrammarError::Unsupported {
            protocol: self.id().to_string(),
            dialect: constraint.dialect,
            scope: constraint.scope,
        })
    }
}
