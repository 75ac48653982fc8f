//! `deepseek_v4`: DeepSeek V4 (Flash, Pro): DSML invokes in a `tool_calls` block (the
//! bars are U+FF5C).
//!
//! ```text
//! <｜DSML｜tool_calls>
//! <｜DSML｜invoke name="get_weather">
//! <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
//! <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
//! </｜DSML｜invoke>
//! </｜DSML｜tool_calls>
//! ```
//!
//! This is DeepSeek V3.2's DSML grammar with the block named `tool_calls` instead of
//! `function_calls`, read by the shared DSML reader (`readers/dsml.rs`).
//!
//! Arguments: one key per `<｜DSML｜parameter>` tag. `string="true"`: the value is the
//! text between the tags exactly as written (quotes, `<`, `&`, line breaks; nothing is
//! trimmed). `string="false"`: the value is JSON and is decoded; text that is not JSON
//! stays a string. A parameter without a `string` attribute is typed as the module docs
//! say for text values. An invoke whose body is a JSON object instead of parameter tags
//! takes that object as its arguments; an invoke with neither has `{}`.
//!
//! Several calls: several invokes in one `tool_calls` block, or several blocks. Text
//! before, between and after the blocks is normal text; what stands between the invokes
//! of a block is markup.
//!
//! Malformed: an invoke without a name, a parameter without one, a parameter named
//! twice, a body holding text that is neither parameter tags nor one JSON object, a
//! JSON body that does not parse, or an invoke not closed by `</｜DSML｜invoke>` make an
//! incomplete request; the other invokes still count. An unclosed invoke ends where the
//! next invoke or the block's end begins. A block that never closes keeps its closed
//! invokes.
//!
//! Implementation-defined choices: invokes count only inside a `tool_calls` block (a bare
//! `<｜DSML｜invoke …>`, which sglang reads, is text here, as smg and vLLM have it); V3.2's
//! `function_calls` block is not read; a value ends at the first
//! `</｜DSML｜parameter>`, and while a value is open only a new invoke or the block's end
//! cut it short, so a value may hold `</｜DSML｜invoke>` but not `</｜DSML｜parameter>`,
//! `<｜DSML｜invoke` or `</｜DSML｜tool_calls>`; sglang's schema validation of the
//! arguments is not done here (the engine checks them against the tool).
//!
//! Grammar: DSML's (`readers/dsml.rs`), in a `<｜DSML｜tool_calls>` block; free text holds
//! no `<｜DSML｜tool_calls>`.

use crate::protocol::textfmt::format::{Escape, Format, Marker};
use crate::protocol::textfmt::readers::dsml::{Dsml, V4, tool_results, tools_section};

/// The format: what `auto` looks for and what tool output may not hold; [`DSML`] reads
/// and writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<｜DSML｜tool_calls>")],
    escapes: &[Escape::Tag("tool_result")],
    ..Format::of(&DSML)
};

/// `deepseek_v4` as the DSML reader reads and writes it: V4's tokens, the `## Tools`
/// section its chat encoding writes, and its results.
const DSML: Dsml =
    Dsml { markup: &V4, leads: &[], dropped: &[], prompt: tools_section, results: tool_results };
