//! `internlm`: InternLM2 / InternLM2.5: a JSON object after `<|action_start|><|plugin|>`.
//!
//! ```text
//! I will look that up.<|action_start|><|plugin|>
//! {"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>
//! ```
//!
//! An action opens with `<|action_start|>`, names its kind (`<|plugin|>`: a tool call;
//! white space between the two tokens is allowed, as sglang does), holds one JSON object
//! with `"name"` and `"parameters"` (`"arguments"` is taken too; neither: `{}`; a
//! JSON-encoded string is decoded), and ends with `<|action_end|>`, looked for outside
//! JSON strings. Text before and after an action is normal text.
//!
//! The model writes one action per reply (vLLM reads only the first); this crate reads
//! every action of the reply, each its own call (implementation-defined). An action of
//! another kind (`<|interpreter|>` code) or a body that is not a call object is an
//! incomplete request; an action never closed is an incomplete request. A lone
//! `<|action_start|>` at the very end of the reply (nothing after it but white space) is
//! dropped as markup.
//!
//! **Grammar.** Each call one action, `<|action_start|><|plugin|>`, a line break,
//! `{"name": …, "parameters": {…}}<|action_end|>`; free text holds no `<|action_start|>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches, after_blanks,
};
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::{JsonMarkup, JsonSyntax, Offer};
use crate::protocol::textfmt::prompt::{functions, named_results};
use crate::protocol::textfmt::readers::json::{call_json, call_json_head};
use crate::protocol::textfmt::readers::tagged::{read_call_object, scan_json_block};
use crate::tools::ToolDefinition;

pub(crate) const ACTION_START: &str = "<|action_start|>";
const PLUGIN: &str = "<|plugin|>";
const ACTION_END: &str = "<|action_end|>";

/// The rules of `internlm`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        search.section(text, from, ACTION_START)
    }

    fn in_section(&self, text: &str, from: usize, _kind: u8, _search: &mut Searches) -> InSection {
        // After the action (its region ends with `<|action_end|>`): prose again.
        if text.get(..from).is_some_and(|before| before.ends_with(ACTION_END)) {
            return InSection::Leave(from);
        }
        let at = after_blanks(text.as_bytes(), from);
        let rest = text.get(at..).unwrap_or_default();
        if rest.is_empty() || (PLUGIN.starts_with(rest) && rest.len() < PLUGIN.len()) {
            return InSection::Hold(at);
        }
        // The action's kind and body are one region, whatever the kind.
        InSection::Call(at)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        if region.text.starts_with(PLUGIN) {
            scan_json_block(region, PLUGIN.len(), ACTION_END)
        } else {
            region.until(0, ACTION_END)
        }
    }

    fn read(&self, region: &str, _state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        let span = 0..region.len();
        if !region.starts_with(PLUGIN) {
            calls.push(RawCall::broken(
                span,
                "",
                format!(
                    "only a {PLUGIN} action calls a tool: write {ACTION_START}{PLUGIN} and a JSON call object"
                ),
            ));
            return;
        }
        read_call_object(
            region,
            PLUGIN.len(),
            ACTION_END,
            closed,
            &["parameters", "arguments"],
            calls,
            format_args!(
                "write one JSON object with \"name\" and \"parameters\" between {ACTION_START}{PLUGIN} and {ACTION_END}"
            ),
        );
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format =
    Format { markers: &[Marker::Token("<|action_start|>")], ..Format::of(&Rules) };

impl Writing for Rules {
    /// The tool-definition prompt.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        let list = serde_json::to_string_pretty(&Value::Array(functions(tools))).unwrap_or_default();
        format!(
            "You can call external plugins (tools) to help with the user's request. The plugins \
         available are:\n{list}\n\n\
         To call a plugin, write {ACTION_START}{PLUGIN} followed by a JSON object with the plugin's \
         \"name\" and its \"parameters\", then {ACTION_END}:\n\
         {ACTION_START}{PLUGIN}\n{{\"name\": <plugin-name>, \"parameters\": <params-json-object>}}{ACTION_END}\n\
         The plugin's output comes back to you from the environment."
        )
    }

    /// The text of the tool message that carries `results` back: the environment's message,
    /// one JSON object per result (`"name"`, and `"content"` or `"error"`), one per line.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        named_results(results, "content", "error")
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        Some(format!("{ACTION_START}{PLUGIN}\n{}{ACTION_END}", call_json(name, "parameters", args)))
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let open = format!("{ACTION_START}{PLUGIN}\n");
        let head = |name: &str| call_json_head(name, "parameters");
        let tail = format!("}}{ACTION_END}");
        let markup = JsonMarkup { head: &head, index: None, tail: &tail, tag_open: &open, tag_close: "" };
        JsonSyntax {
            markup,
            open: &open,
            section: None,
            avoid: vec![Pattern::text(ACTION_START)],
            arguments: "parameters",
        }
        .build(b, offer)
    }
}
