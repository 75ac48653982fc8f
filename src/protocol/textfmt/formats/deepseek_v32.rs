//! `deepseek_v32`: DeepSeek V3.2's DSML markup (the bars are U+FF5C).
//!
//! ```text
//! <｜DSML｜function_calls>
//! <｜DSML｜invoke name="get_weather">
//! <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
//! <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
//! </｜DSML｜invoke>
//! </｜DSML｜function_calls>
//! ```
//!
//! Arguments: one key per `<｜DSML｜parameter>`. `string="true"`: the value is the text
//! between the tags byte for byte (quotes, `<`, `&`, line breaks; nothing trimmed).
//! `string="false"`: the value is JSON and is decoded; text that is not JSON stays a
//! string. A parameter without a `string` attribute is typed as the module docs say
//! for text values. An invoke whose body is a JSON object instead of parameter tags
//! has that object as its arguments; an invoke with neither has `{}`.
//!
//! Several calls: several invokes in one `function_calls` block, or several blocks.
//! Text before, between and after the blocks is normal text.
//!
//! Malformed: an invoke without a name, a parameter without a name or given twice
//! (neither is kept), an invoke whose body is text that is neither parameters nor a
//! JSON object, one whose JSON body does not parse, or one not closed by
//! `</｜DSML｜invoke>` (it ends where the next invoke or the block's end begins) is an
//! incomplete request; the other invokes still count. A block that never closes keeps
//! its closed invokes.
//!
//! The grammar is read by the shared DSML reader (`readers/dsml.rs`), with V3.2's tokens.
//!
//! Implementation-defined choices: invokes count only inside a `function_calls` block
//! (a bare `<｜DSML｜invoke …>` is text); DeepSeek V4's `tool_calls` block name is not
//! read; the invoke's name is trimmed; a parameter value ends at the first
//! `</｜DSML｜parameter>`, and while a value is open only a new invoke or the block's end
//! cut it short, so a value may hold `</｜DSML｜invoke>` (it cannot hold
//! `</｜DSML｜parameter>`, `<｜DSML｜invoke` or `</｜DSML｜function_calls>`).
//!
//! Grammar: DSML's (`readers/dsml.rs`), in a `<｜DSML｜function_calls>` block; free text
//! holds no `<｜DSML｜function_calls>`.

use serde_json::Value;

use crate::ToolExecutionResult;
use crate::protocol::textfmt::format::{Escape, Format, Marker};
use crate::protocol::textfmt::prompt::{bare_functions, content};
use crate::protocol::textfmt::readers::dsml::{Dsml, Markup, V32, example_block};
use crate::tools::ToolDefinition;

/// The format: what `auto` looks for and what tool output may not hold; [`DSML`] reads
/// and writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<｜DSML｜function_calls>")],
    escapes: &[Escape::Tag("result"), Escape::Tag("function_results")],
    ..Format::of(&DSML)
};

/// `deepseek_v32` as the DSML reader reads and writes it: V3.2's tokens, prompt and
/// results.
const DSML: Dsml = Dsml { markup: &V32, leads: &[], dropped: &[], prompt, results };

/// The tool-definition prompt, worded as DeepSeek V3.2's template words it.
fn prompt(m: &Markup, tools: &[ToolDefinition]) -> String {
    let (block, example) = (m.block, example_block(m, "FUNCTION"));
    let schemas = bare_functions(tools).iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    format!(
        "## Tools\n\n\
         You have access to a set of tools you can use to answer the user's question.\n\
         You can invoke functions by writing a \"{block}\" block like the following as part of your reply to the user:\n\
         {example}\n\n\
         String and scalar parameters should be specified as is without any escaping or quotes, while lists and \
         objects should use JSON format. The \"string\" attribute should be set to \"true\" for string type \
         parameters and \"false\" for other types (numbers, booleans, arrays, objects).\n\n\
         Here are the functions available in JSONSchema format:\n<functions>\n{schemas}\n</functions>\n"
    )
}

/// The text of the tool message that carries `results` back: one `<result>` each, in a
/// `<function_results>` block.
fn results(results: &[ToolExecutionResult]) -> String {
    let each: String = results.iter().map(|r| format!("\n<result>{}</result>", content(r))).collect();
    format!("<function_results>{each}\n</function_results>")
}
