//! `granite`: IBM Granite 3.x: `<|tool_call|>` or `<tool_call>` and a JSON array of calls.
//!
//! ```text
//! <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]
//! <tool_call> [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}]
//! [{"name": "get_weather", "arguments": {"city": "Paris"}}]
//! ```
//!
//! Granite 3.0 writes the special token `<|tool_call|>`, Granite 3.1 the plain string
//! `<tool_call>` (never closed); blanks may follow the marker. Each array element is a
//! call object with `"name"` and `"arguments"` (an object, or a JSON-encoded string
//! holding one; `"parameters"` is accepted too; absent: `{}`); the array's elements come
//! out as calls in order, several arrays in a reply one after the other. After a marker,
//! a single call object is accepted in place of the array (some Granite builds write
//! one). A reply that is
//! nothing but the array (blanks before it) is read as calls too, when its elements are
//! call objects; otherwise it is normal text.
//!
//! Normal text: everything else, before and after the array. An element that is not a
//! call is an incomplete request (the others count); an array that does not parse, or is
//! never closed, or a marker followed by something else than `[` or `{`, is one incomplete
//! request. Implementation-defined choices: text after the array is normal text (vLLM
//! reads a reply only when it holds nothing but the array); the array is found by
//! balancing brackets outside strings, so `]` inside a string does not end it.
//!
//! **Grammar.** One list after Granite 3.0's token, `<|tool_call|>[` then call objects
//! `{"name": …, "arguments": {…}}` joined by `, ` then `]`. Free text holds neither marker,
//! and does not open (after blanks) with `[`, which a reply would read as a bare list.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::textfmt::driver::{Found, RawCall, Reading, Region, Scan, ScanState, Searches};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{Offer, opening};
use crate::protocol::textfmt::prompt::{functions, wrapped};
use crate::protocol::textfmt::readers::json::call_json;
use crate::protocol::textfmt::readers::json_list::{Block, bare_array, list_syntax, read_block, scan_block};
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_call};
use crate::protocol::textfmt::readers::tagged::TOOL_CALL;
use crate::tools::ToolDefinition;

/// Granite 3.0's special token.
pub(crate) const TOKEN: &str = "<|tool_call|>";
/// Granite 3.1's plain-text marker.
pub(crate) const TAG: &str = "<tool_call>";

const KEYS: &[&str] = &["arguments", "parameters"];

/// The blocks of `granite`, by the region's opening.
fn block(region: &str) -> Block {
    let (open_len, tentative) = if region.starts_with(TOKEN) {
        (TOKEN.len(), false)
    } else if region.starts_with(TAG) {
        (TAG.len(), false)
    } else {
        (0, true)
    };
    Block { open_len, close: None, tentative, single: !tentative, keys: KEYS, require: false, what: TOKEN }
}

/// The rules of `granite`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, reply_start: bool, search: &mut Searches) -> Found {
        if let Some(found) = bare_array(text, from, reply_start) {
            return found;
        }
        search.tokens(text, from, &[TOKEN, TAG]).0
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        let block = block(region.text);
        scan_block(region, &block)
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        read_block(region, state, closed, &block(region), calls);
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Token("<|tool_call|>"),
        Marker::Shared { token: TOOL_CALL, look: after_tool_call, shape: Shape::JsonArray },
    ],
    escapes: &[Escape::Tag("tool_call")],
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: the tools as the Granite 3 template's `available_tools`
    /// turn lists them, and its instruction.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let listed = functions(tools)
            .iter()
            .map(|f| serde_json::to_string_pretty(f).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n\n");
        format!(
            "You are a helpful AI assistant with access to the following tools. When a tool is required to \
         answer the user's query, respond with {TOKEN} followed by a JSON list of tools used, written as \
         [{{\"name\": <function-name>, \"arguments\": <args-json-object>}}]. If a tool does not exist in the \
         provided list of tools, notify the user that you do not have the ability to fulfill the request.\n\n\
         <|start_of_role|>available_tools<|end_of_role|>\n{listed}<|end_of_text|>"
        )
    }

    /// The text of the tool message that carries `results` back: each result in a
    /// `tool_response` turn, as the Granite 3 template renders tool output.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        wrapped(results, "<|start_of_role|>tool_response<|end_of_role|>", "<|end_of_text|>")
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("{TOKEN}[{}]", call_json(name, "arguments", args)))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        // Granite 3.1's marker opens a list too, and so does a reply that opens with one.
        let avoid = vec![Pattern::text(TOKEN), Pattern::text(TAG), opening("[")];
        list_syntax(b, offer, (&format!("{TOKEN}["), "]"), avoid)
    }
}

#[cfg(test)]
mod tests {

    use crate::protocol::textfmt::{TextFormat, TextFormatProtocol};

    /// Replies pieced together from these formats' markup, JSON fragments, prose and
    /// reasoning tags: never a panic, and streamed in any chunking they read as in one
    /// shot.
    #[test]
    fn pieced_replies_stream_as_they_parse() {
        use crate::protocol::{StreamCollector, StreamParser};
        const PIECES: &[&str] = &[
            "<|tool_call|>",
            "<tool_call>",
            "</tool_call>",
            "[TOOL_CALLS]",
            "```json",
            "```",
            "functools[",
            "<tool_calls>",
            "</tool_calls>",
            "<answer>",
            "</answer>",
            "助手：",
            "<think>",
            "</think>",
            "[",
            "]",
            "{",
            "}",
            "{\"name\": \"f\", \"arguments\": {\"a\": [1, \"]}\"]}}",
            ", ",
            "\"",
            "\\",
            "\n",
            " ",
            "text ",
            "東京",
            "{\"name\": \"g\"}",
            "null",
        ];
        let formats = [
            TextFormat::Granite,
            TextFormat::Xlam,
            TextFormat::Phi4Mini,
            TextFormat::Hunyuan,
            TextFormat::Jamba,
            TextFormat::MinimaxM1,
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n.max(1) as u64).unwrap_or_default()
        };
        for round in 0..600 {
            let text: String =
                (0..next(24)).map(|_| PIECES.get(next(PIECES.len())).copied().unwrap_or("")).collect();
            let format = formats.get(round % formats.len()).copied().unwrap_or(TextFormat::Granite);
            let protocol = TextFormatProtocol::new(format).with_options(
                crate::protocol::textfmt::TextFormatOptions::default()
                    .request_ids(crate::protocol::RequestIdStyle::Sequential),
            );
            let one_shot = protocol.parse(&text);
            let size = 1 + next(7);
            let mut parser = protocol.stream_parser();
            let mut events = Vec::new();
            let mut rest = text.as_str();
            while !rest.is_empty() {
                let mut cut = size.min(rest.len());
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                let (chunk, tail) = rest.split_at(cut);
                parser.push_text(chunk, &mut events);
                rest = tail;
            }
            parser.finish(&mut events);
            let mut collector = StreamCollector::new();
            collector.extend(events);
            assert_eq!(collector.into_outcome(), one_shot, "{format} in chunks of {size}: {text:?}");
        }
    }
}
