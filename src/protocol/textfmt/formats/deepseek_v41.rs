//! `deepseek_v41`: DeepSeek V4.1: DSML with spaced tags, `<｜DSML｜ calls>` blocks (the
//! bars are U+FF5C; every tag name begins with a space after `｜DSML｜`).
//!
//! ```text
//! Let me look.
//!
//! <｜DSML｜ calls>
//! <｜DSML｜ invoke name="get_weather">
//! <｜DSML｜ parameter name="city" string="true">Paris</｜DSML｜ parameter>
//! <｜DSML｜ parameter name="days" string="false">3</｜DSML｜ parameter>
//! </｜DSML｜ invoke>
//! </｜DSML｜ calls>
//! ```
//!
//! This is DeepSeek V4's grammar with every tag name spaced and the block renamed
//! (`tool_calls` → ` calls`), read by the shared DSML reader (`readers/dsml.rs`). V4.1's
//! encoder joins the reply's text and the block with a blank line (`\n\n`), and writes
//! it even when there is no text: exactly one `\n\n` right before a block is that
//! separator and is markup, not normal text (more line breaks before it stay text).
//!
//! Arguments: one key per `<｜DSML｜ parameter>` tag. `string="true"`: the value is the
//! text between the tags exactly as written (nothing trimmed, no escapes).
//! `string="false"`: the text is JSON and is decoded; text that is not JSON stays a
//! string. A parameter without a `string` attribute is typed as the module docs say for
//! text values. An invoke whose body is one JSON object takes that object as its
//! arguments (the shape sglang's constrained decoding writes); an invoke with neither
//! has `{}`.
//!
//! Several calls: several invokes in one block (the encoder's way), or several blocks.
//! Text before, between and after the blocks is normal text; what stands between the
//! invokes of a block is markup.
//!
//! Malformed: an invoke without a name, a parameter without one or named twice, a body
//! holding text that is neither parameter tags nor one JSON object, a JSON body that
//! does not parse, or an invoke not closed by `</｜DSML｜ invoke>` make an incomplete
//! request; the other invokes still count. An unclosed invoke ends where the next
//! invoke or the block's end begins. A block that never closes keeps its closed
//! invokes.
//!
//! Implementation-defined choices: invokes count only inside a ` calls` block (smg's
//! V4.1 dialect also reads a bare `<｜DSML｜ invoke …>`; here, as for `deepseek_v4`, it is
//! text); V4's unspaced tags (`<｜DSML｜tool_calls>`, `<｜DSML｜invoke`) are not read (they
//! are `deepseek_v4`'s); text after a block stays normal text (the reference parser
//! rejects it and smg drops it); a value ends at the first `</｜DSML｜ parameter>`, and
//! while a value is open only a new invoke or the block's end cut it short, so a value
//! may hold `</｜DSML｜ invoke>` but not `</｜DSML｜ parameter>`, `<｜DSML｜ invoke` or
//! `</｜DSML｜ calls>`; its `write_call` writes the block without the leading separator
//! (a call on its own; the separator belongs between text and a block).
//!
//! Grammar: DSML's (`readers/dsml.rs`) with the spaced tags, in a `<｜DSML｜ calls>` block
//! written as `write_call` writes it (without the separator; a reply's text may end with
//! one, which is then read as markup); free text holds no `<｜DSML｜ calls>`.

use crate::protocol::textfmt::format::{Escape, Format, Marker};
use crate::protocol::textfmt::readers::dsml::{Dsml, V41, tool_results, tools_section};

/// A block with the encoder's blank line before it: the blank line is markup too.
const SEPARATED_BLOCK: &str = "\n\n<｜DSML｜ calls>";

/// The format: what `auto` looks for and what tool output may not hold; [`DSML`] reads
/// and writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<｜DSML｜ calls>"), Marker::Token(SEPARATED_BLOCK)],
    escapes: &[Escape::Tag("tool_result")],
    ..Format::of(&DSML)
};

/// `deepseek_v41` as the DSML reader reads and writes it: V4.1's spaced tokens, a block
/// with the encoder's blank line before it ([`SEPARATED_BLOCK`]), V4's `## Tools`
/// section with the spaced tags (as V4.1's encoder renders it), and V4's results (V4.1
/// merges tool messages into the next user turn as V4 does).
const DSML: Dsml = Dsml {
    markup: &V41,
    leads: &[SEPARATED_BLOCK],
    dropped: &[],
    prompt: tools_section,
    results: tool_results,
};

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::format::Writing;
    use crate::protocol::textfmt::test_support::parse;

    const FORMAT: TextFormat = TextFormat::DeepSeekV41;

    #[test]
    fn write_call_is_the_encoders_layout() {
        let text = DSML.write_call("calc_add", json!({"a": 1, "s": "x"}).as_object().unwrap());
        assert_eq!(
            text.as_deref(),
            Some(
                "<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"calc_add\">\n\
                 <｜DSML｜ parameter name=\"a\" string=\"false\">1</｜DSML｜ parameter>\n\
                 <｜DSML｜ parameter name=\"s\" string=\"true\">x</｜DSML｜ parameter>\n\
                 </｜DSML｜ invoke>\n</｜DSML｜ calls>"
            )
        );
    }

    #[test]
    fn one_blank_line_before_a_block_is_markup() {
        let call = DSML.write_call("f", &Map::new()).unwrap();
        for (before, normal) in [
            ("Checking.\n\n", "Checking."),
            ("\n\n", ""),
            ("Checking.\n\n\n", "Checking.\n"),
            ("Checking.\n", "Checking.\n"),
            ("Checking. ", "Checking. "),
        ] {
            let text = format!("{before}{call} Done.\n\n");
            let parsed = parse(FORMAT, &text);
            assert_eq!(parsed.requests.len(), 1, "{text:?}: {parsed:#?}");
            assert!(parsed.requests[0].complete, "{text:?}: {parsed:#?}");
            assert_eq!(parsed.normal_text, format!("{normal} Done.\n\n"), "{text:?}");
        }
        let parsed = parse(FORMAT, "No call.\n\n");
        assert!(parsed.requests.is_empty());
        assert_eq!(parsed.normal_text, "No call.\n\n");
    }
}
