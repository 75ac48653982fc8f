//! [`Format`]: everything about one text format, in the format's own file.
//!
//! A format is one file in `formats/` holding its `FORMAT` (a [`Format`]: the data) and
//! its `Rules` (the [`Writing`] it does), and one line in the registry
//! (`registry.rs`), whose module name is the format's id. The rest of the module asks
//! the `Format`: the protocol reads with [`Format::reading`], prompts with
//! [`Writing::prompt`], answers with [`Writing::results`], writes calls with
//! [`Writing::write_call`] and grammars with [`Writing::syntax`]; `auto` builds its
//! table of markers from every format's [`Format::markers`] and [`Format::same_markup`],
//! and [`neutralize_tokens`](super::neutralize_tokens) makes plain every format's
//! [`Format::escapes`]. What several formats share (a reader, a prompt layout, the
//! question of what follows a marker they all write) is in `readers/`, never in another
//! format's file.

use serde_json::{Map, Value};

use super::TextFormat;
use super::driver::Reading;
use super::grammar::Offer;
use super::readers::shapes::{Look, Shape};
use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
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

/// One text format, as data: how `auto` recognises it, what tool output must not hold,
/// its reasoning markup, how its calls are read, and what writes it. Each format's file
/// holds one, its `FORMAT`.
pub(crate) struct Format {
    /// What tells `auto` that a reply is in this format. A format whose markup another
    /// format writes the same way declares none of it, and names that format in
    /// [`same_markup`](Self::same_markup) instead.
    pub markers: &'static [Marker],
    /// Formats whose replies read the same as this one's: `auto` detects them by their
    /// markers, and reads the reply in this format when the tools were offered in it.
    /// The relation is symmetric; one side declaring it is enough.
    pub same_markup: &'static [TextFormat],
    /// The markup of this format that tool output must not hold.
    pub escapes: &'static [Escape],
    /// The format's own reasoning markup, read by the rule every text protocol shares
    /// ([`reasoning`](crate::protocol::reasoning)): hidden with `<think>` while
    /// reasoning is hidden, read like any other text when it is not, ending the
    /// reasoning a reply [starts in](super::TextFormatOptions::starts_in_reasoning).
    /// Its [`reading`](Self::reading) treats that markup as it treats the rest of the
    /// text (its tokens as markup, the text in them as prose). `None`: `<think>` alone.
    pub reasoning: Option<&'static Markup>,
    /// How calls are found and read in a reply (the rules the reading machine runs).
    pub reading: &'static dyn Reading,
    /// What the format writes: the tool prompt, results, calls and its grammar.
    pub writing: &'static dyn Writing,
}

impl Format {
    /// A format read by `reading` and written by `writing`, with no markers, escapes or
    /// reasoning markup of its own (a format's `FORMAT` sets those it has).
    pub(crate) const fn new(reading: &'static dyn Reading, writing: &'static dyn Writing) -> Format {
        Format { markers: &[], same_markup: &[], escapes: &[], reasoning: None, reading, writing }
    }

    /// A format that `rules` both reads and writes (see [`new`](Self::new)).
    pub(crate) const fn of<R: Reading + Writing>(rules: &'static R) -> Format {
        Format::new(rules, rules)
    }
}

/// What a text format writes: the tool prompt, the results message, a call, and the
/// grammar of its calls.
pub(crate) trait Writing: Send + Sync {
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

    /// The format's calls as a grammar [`Syntax`], each method the `offer` holds a call
    /// as [`write_call`](Self::write_call) writes it; rules go into `b`, within the
    /// bounds of the offer's constraint (its dialect and scope are the caller's).
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError>;
}
