//! `gigachat35`: GigaChat 3.5 (GigaChat3.5-432B-A28B): GCML invokes in a `tool_calls`
//! block (the bars are U+FF5C).
//!
//! ```text
//! <｜GCML｜tool_calls>
//! <｜GCML｜invoke name="get_weather">
//! <｜GCML｜parameter name="city" string="true">Москва</｜GCML｜parameter>
//! <｜GCML｜parameter name="days" string="false">3</｜GCML｜parameter>
//! </｜GCML｜invoke>
//! </｜GCML｜tool_calls>
//! ```
//!
//! This is DeepSeek V4's DSML markup with `GCML` in place of `DSML`, read by the shared
//! DSML reader (`readers/dsml.rs`). One reading differs: a parameter without a `string`
//! attribute is a string (vLLM's default), where DeepSeek V4 types its text.
//!
//! Arguments: one key per `<｜GCML｜parameter>` tag. `string="true"`: the value is the
//! text between the tags exactly as written (nothing trimmed, no escapes).
//! `string="false"`: the text is JSON and is decoded; text that is not JSON stays a
//! string. An invoke whose body is one JSON object takes that object as its arguments;
//! an invoke with no parameters has `{}`.
//!
//! Several calls: several invokes in one block (or several blocks). Text before,
//! between and after the blocks is normal text; what stands between the invokes of a
//! block is markup. GigaChat's end markers `</s>` and `<|message_sep|>` are markup
//! wherever they stand (the serving stacks strip them from the end of the text).
//! `<think>…</think>` reasoning (GigaChat 3.5 Reasoning) is the crate's one reasoning
//! rule.
//!
//! Malformed: an invoke without a name, a parameter without one or named twice, a body
//! holding text that is neither parameter tags nor one JSON object, a JSON body that
//! does not parse, or an invoke not closed by `</｜GCML｜invoke>` make an incomplete
//! request; the other invokes still count. An unclosed invoke ends where the next invoke
//! or the block's end begins.
//!
//! Implementation-defined choices: as for `deepseek_v4` (invokes count only inside a
//! block; a value ends at the first `</｜GCML｜parameter>`, and a value cannot hold
//! `<｜GCML｜invoke` or `</｜GCML｜tool_calls>`); an untagged parameter is a string as
//! vLLM reads it (sglang skips a parameter without `string`); sglang's check of the
//! function name against the request's tools is left to the engine.
//!
//! Grammar: DSML's (`readers/dsml.rs`) with the GCML tokens, in a `<｜GCML｜tool_calls>`
//! block, every parameter with its `string` attribute; free text holds no
//! `<｜GCML｜tool_calls>`, `</s>` or `<|message_sep|>`.

use serde_json::Value;

use crate::ToolExecutionResult;
use crate::protocol::textfmt::format::{Format, Marker};
use crate::protocol::textfmt::prompt::{functions, named_results};
use crate::protocol::textfmt::readers::dsml::{Dsml, GCML, Markup};
use crate::tools::ToolDefinition;

/// GigaChat's end-of-sequence and end-of-message markers.
const EOS: &str = "</s>";
const MESSAGE_SEP: &str = "<|message_sep|>";

/// The format: what `auto` looks for; [`DSML`] reads and writes it.
pub(crate) static FORMAT: Format =
    Format { markers: &[Marker::Token("<｜GCML｜tool_calls>")], ..Format::of(&DSML) };

/// `gigachat35` as the DSML reader reads and writes it: the GCML tokens, GigaChat's end
/// markers dropped wherever they stand, its prompt and its results.
const DSML: Dsml = Dsml { markup: &GCML, leads: &[], dropped: &[EOS, MESSAGE_SEP], prompt, results };

/// The tool-definition prompt. GigaChat 3.5's chat template is not public in the
/// sources read; this is a plain prompt: the functions as JSON, then the GCML block
/// the parsers read.
fn prompt(m: &Markup, tools: &[ToolDefinition]) -> String {
    let Markup { block, block_end, invoke, invoke_end, param, param_end, .. } = m;
    let list = serde_json::to_string_pretty(&Value::Array(functions(tools))).unwrap_or_default();
    format!(
        "You can call the following functions:\n{list}\n\n\
         To call functions, write one {block} block holding one invoke per call:\n\
         {block}\n\
         {invoke} name=\"FUNCTION_NAME\">\n\
         {param} name=\"PARAMETER_NAME\" string=\"true\">text written as it is{param_end}\n\
         {param} name=\"PARAMETER_NAME\" string=\"false\">a JSON value{param_end}\n\
         {invoke_end}\n\
         {block_end}\n\
         Give a string parameter as it is with string=\"true\"; give every other value (number, boolean, \
         array, object, null) as JSON with string=\"false\". Each result comes back as a function result \
         message."
    )
}

/// The text of the tool message that carries `results` back: GigaChat 3's `function
/// result` content, one JSON object per result (`"result"` or `"error"`), one a line.
fn results(results: &[ToolExecutionResult]) -> String {
    named_results(results, "result", "error")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::test_support::parse;

    #[test]
    fn untagged_parameter_is_a_string() {
        let Markup { block, block_end, invoke, invoke_end, param, param_end, .. } = GCML;
        let parsed = parse(
            TextFormat::Gigachat35,
            &format!("{block}{invoke} name=\"f\">{param} name=\"n\">42{param_end}{invoke_end}{block_end}"),
        );
        assert!(parsed.requests[0].complete, "{parsed:#?}");
        assert_eq!(parsed.requests[0].args["n"], "42");
    }

    #[test]
    fn end_markers_are_not_text() {
        let parsed = parse(TextFormat::Gigachat35, "The answer is 4.<|message_sep|></s>");
        assert!(parsed.requests.is_empty());
        assert_eq!(parsed.normal_text, "The answer is 4.");
    }
}
