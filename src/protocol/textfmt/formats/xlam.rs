//! `xlam`: Salesforce xLAM: a JSON array of `{"name", "arguments"}` objects.
//!
//! ````text
//! [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "add", "arguments": {"a": 1}}]
//! Let me check.[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]
//! <tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_call>
//! ```json
//! [{"name": "get_weather", "arguments": {"city": "Paris"}}]
//! ```
//! ````
//!
//! The array stands in one of four places: the whole reply (blanks before it; a leading
//! `<think>…</think>` is reasoning, cut out before), after `[TOOL_CALLS]`, between
//! `<tool_call>` and `</tool_call>`, or in a ```` ```json ```` fence. Each element is a
//! call object with `"name"` and `"arguments"` (an object, or a JSON-encoded string
//! holding one; `"parameters"` is accepted too; absent: `{}`). After `[TOOL_CALLS]`, in
//! the tags and in the fence a single call object is accepted in place of the array.
//!
//! Normal text: everything else (text before and after the array). After `[TOOL_CALLS]`
//! or in the tags, an element that is not a call is an incomplete request (the others
//! count), and JSON that does not parse or never closes is one. A bare array or a fence
//! is read only when it holds call objects: otherwise it is normal text (an ordinary JSON
//! list or code sample). A bare array is a call begun once it opens with `[`, blanks,
//! `{`, blanks and `"name"` (what `auto` also takes for xLAM): cut off there or later
//! (by the reply's end, or by reasoning that begins inside it) it is one incomplete
//! request, never run; cut off before that (`[ {"city": …`) it is normal text.
//! Implementation-defined choices: only ```` ```json ```` fences are read (not
//! bare ```` ``` ```` ones); the template's empty list `[]` ("no call") stays normal
//! text; several marked arrays in one reply are all read, in order.
//!
//! **Grammar.** The bare list the prompt teaches, `[{"name": …, "arguments": {…}}, …]`
//! (objects joined by `, `), only where the reply starts: nothing but blanks (or the
//! reasoning block) before it. Free text holds none of `[TOOL_CALLS]`, `<tool_call>`,
//! ```` ```json ```` and `[{"name": `, and does not open with `[`. The JSON Schema is that of
//! one call object (the `calls` scope's array of them is the list itself); there is no
//! structural tag, which would admit the list anywhere in text, where it is prose.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, CharSet, Expr, GrammarError, Pattern, Section, Syntax};
use crate::protocol::textfmt::TextFormat;
use crate::protocol::textfmt::driver::{Found, RawCall, Reading, Region, Scan, ScanState, Searches};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer, json_text, opening};
use crate::protocol::textfmt::prompt::named_results;
use crate::protocol::textfmt::readers::json::call_json;
use crate::protocol::textfmt::readers::json::name_guess;
use crate::protocol::textfmt::readers::json_list::{
    Block, bare_array, pretty_functions, read_block, scan_block,
};
use crate::protocol::textfmt::readers::shapes::{Shape, after_fence};
use crate::tools::ToolDefinition;

/// The markers that open a call list.
pub(crate) const TOOL_CALLS: &str = "[TOOL_CALLS]";
pub(crate) const TAG: &str = "<tool_call>";
const TAG_CLOSE: &str = "</tool_call>";
pub(crate) const FENCE: &str = "```json";
const FENCE_CLOSE: &str = "```";

const KEYS: &[&str] = &["arguments", "parameters"];

/// The block a region opens, by its opening.
fn block(region: &str) -> Block {
    let marked = |open: &'static str, close, tentative| Block {
        open_len: open.len(),
        close,
        tentative,
        single: true,
        keys: KEYS,
        require: false,
        what: open,
    };
    if region.starts_with(TOOL_CALLS) {
        marked(TOOL_CALLS, None, false)
    } else if region.starts_with(TAG) {
        marked(TAG, Some(TAG_CLOSE), false)
    } else if region.starts_with(FENCE) {
        marked(FENCE, Some(FENCE_CLOSE), true)
    } else {
        Block {
            open_len: 0,
            close: None,
            tentative: true,
            single: false,
            keys: KEYS,
            require: false,
            what: "the reply",
        }
    }
}

/// The rules of `xlam`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, reply_start: bool, search: &mut Searches) -> Found {
        if let Some(found) = bare_array(text, from, reply_start) {
            return found;
        }
        search.tokens(text, from, &[TOOL_CALLS, TAG, FENCE]).0
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        // A reply that opens with `[` may be opening `[TOOL_CALLS]`: wait to see.
        if !region.at_end && region.text.len() < TOOL_CALLS.len() && TOOL_CALLS.starts_with(region.text) {
            return Scan::Open;
        }
        let block = block(region.text);
        scan_block(region, &block)
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let block = block(region);
        let before = calls.len();
        read_block(region, state, closed, &block, calls);
        // A bare array cut off once it has begun a call is a call cut off, not prose.
        if !closed && block.open_len == 0 && calls.len() == before && call_begun(region) {
            calls.push(RawCall::broken(
                0..region.len(),
                name_guess(region),
                "the call list is never closed: write [{\"name\": …, \"arguments\": {…}}]",
            ));
        }
    }
}

/// Whether a bare array has begun a call: `[`, blanks, `{`, blanks, `"name"` (what
/// `auto` also takes for xLAM).
fn call_begun(region: &str) -> bool {
    fn blanks(s: &str) -> &str {
        s.trim_start_matches(|c: char| c.is_ascii_whitespace())
    }
    region
        .strip_prefix('[')
        .and_then(|rest| blanks(rest).strip_prefix('{'))
        .is_some_and(|rest| blanks(rest).starts_with("\"name\""))
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Shared { token: FENCE, look: after_fence, shape: Shape::FencedCalls },
        Marker::Opening(&["[", "{", "\"name\""]),
    ],
    same_markup: &[TextFormat::Mistral, TextFormat::Granite],
    escapes: &[Escape::Bracket("[TOOL_CALLS]"), Escape::CallFence(FENCE), Escape::Tag("tool_call")],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt, as the xLAM template words it: the instruction, then each
    /// tool as indented JSON.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        pretty_functions(
            "You have access to a set of tools. When using tools, make calls in a single JSON array: \n\n\
         [{\"name\": \"tool_call_name\", \"arguments\": {\"arg1\": \"value1\", \"arg2\": \"value2\"}}, ... \
         (additional parallel tool calls as needed)]\n\n\
         If no tool is suitable, state that explicitly. If the user's input lacks required parameters, ask for \
         clarification. Do not interpret or respond until tool results are returned. Once they are available, \
         process them or make additional calls if needed. For tasks that don't require tools, such as casual \
         conversation or general advice, respond directly in plain text. The available tools are:\n\n",
            tools,
        )
    }

    /// The text of the tool message that carries `results` back: one JSON object per line,
    /// `{"name": …, "content": …}` (the xLAM template writes a tool turn's content as is, or
    /// as JSON when it is structured).
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        named_results(results, "content", "content")
    }

    /// A call of `name` with `args`, as the prompt teaches it: a one-element array (which
    /// reads as a call when it opens the reply).
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("[{}]", call_json(name, "arguments", args)))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        // The list's opening up to the first name is the markup: free text may hold a
        // `[` (a bare list is a call only at the start of a reply), but not that.
        const OPEN: &str = "[{\"name\": ";
        let head = |name: &str| format!("{}, \"arguments\": ", json_text(&Value::String(name.to_string())));
        let markup = JsonMarkup { head: &head, index: None, tail: "}", tag_open: OPEN, tag_close: "]" };
        JsonSyntax {
            markup,
            open: OPEN,
            section: Some(Section { between: Expr::lit(", {\"name\": "), close: "]".into() }),
            avoid: vec![
                // The list is a call only where the reply starts: nothing but blanks
                // (or reasoning) before it.
                Pattern::new().then(CharSet::of(" \t\n\r\x0c").not()).before_call(),
                // Free text that opens with `[` would be read for a list.
                opening("["),
                Pattern::text(TOOL_CALLS),
                Pattern::text(TAG),
                Pattern::text(FENCE),
            ],
            arguments: "arguments",
        }
        .build(b, offer)
    }
}

#[cfg(test)]
mod tests {

    use crate::protocol::textfmt::TextFormat;

    #[test]
    fn a_bare_array_cut_off_is_a_call_once_it_names_one() {
        use crate::protocol::textfmt::test_support::parse;
        for text in ["[{\"name\"", "[{\"name\": \"f\",", " [ {\n \"name\": \"f\", \"arguments\": {\"a\": [1"]
        {
            let reply = parse(TextFormat::Xlam, text);
            assert_eq!(reply.requests.len(), 1, "{text:?}: {reply:?}");
            assert!(reply.requests.iter().all(|r| !r.complete), "{text:?}: {reply:?}");
            assert_eq!(reply.normal_text.trim(), "", "{text:?}");
        }
        for text in ["[", "[ {", "[{\"nam", "[{\"city\": \"Paris\"", "[1, 2"] {
            let reply = parse(TextFormat::Xlam, text);
            assert!(reply.requests.is_empty(), "{text:?}: {reply:?}");
            assert_eq!(reply.normal_text, text);
        }
    }
}
