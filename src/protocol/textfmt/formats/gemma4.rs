//! `gemma4`: Gemma 4: `<|tool_call>call:NAME{…}<tool_call|>`.
//!
//! ```text
//! <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>
//! ```
//!
//! One block per call. Arguments are `key:value` pairs in braces, separated by commas
//! (a missing comma is tolerated); a key is bare or written between `<|"|>` tokens. A
//! value is a string between two `<|"|>` tokens (taken as written: the format has no
//! escapes), a bare number, `true`, `false` or `null`, a nested `{key:value,…}` object
//! or a `[value,…]` list. A bare word that is none of these is read as a string. `{}` is
//! a call without arguments. Several calls are several blocks, back to back or with text
//! between them, which is normal text.
//!
//! Gemma 4's thought channel `<|channel>…<channel|>` is reasoning, declared to the one
//! reasoning rule (`Format::reasoning`, a frame): with `skip_reasoning` it is hidden
//! (neither normal text nor calls); a `<|tool_call>` inside an unclosed channel ends it,
//! as in vLLM; a channel that nothing ends hides the rest of the reply (with an
//! `unclosed_reasoning` diagnostic); a stray `<channel|>` is dropped. Without
//! `skip_reasoning` its tokens are dropped and its text is normal text. A block never closed by `<tool_call|>`, or whose content
//! does not read as `call:NAME{…}`, is an incomplete request (other calls still count).
//!
//! Implementation-defined choices: the first `<tool_call|>` ends a block (it is a special
//! token, so strings do not hold it; its `write_call` refuses a string that does);
//! `<turn|>` is not taken as a substitute end; a top-level string argument is also
//! recorded as text ([`RawCall::text_arg`]) so that the tool's schema may type it
//! (`<|"|>42<|"|>` for an integer parameter).
//!
//! Grammar: Gemma's (`readers/gemma.rs`) with `<|"|>` as the delimiter; free text holds
//! no `<|tool_call>`, `<|channel>` or `<channel|>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Pattern, Syntax};
use crate::protocol::reasoning::{Markup, Section};
use crate::protocol::textfmt::driver::{
    Found, InSection, RawCall, Reading, Region, Scan, ScanState, Searches,
};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::readers::gemma::{self, Blocks, declarations, responses};
use crate::tools::ToolDefinition;

pub(crate) const OPEN: &str = "<|tool_call>";
pub(crate) const CLOSE: &str = "<tool_call|>";
const QUOTE: &str = "<|\"|>";
const CHANNEL_OPEN: &str = "<|channel>";
const CHANNEL_CLOSE: &str = "<channel|>";

/// Section kind: a channel token, dropped.
const TOKEN: u8 = 3;

/// Reasoning: the thought channel, up to `<channel|>` or a call block.
static REASONING: Markup = Markup::new(&[Section::frame(CHANNEL_OPEN, &[CHANNEL_CLOSE], &[OPEN])], &[]);

/// Gemma 4's call blocks.
const BLOCKS: Blocks = Blocks { open: OPEN, close: CLOSE, quote: QUOTE };

/// The rules of `gemma4`.
pub(crate) struct Rules;

impl Reading for Rules {
    fn find(&self, text: &str, from: usize, _reply_start: bool, search: &mut Searches) -> Found {
        // (The channel's tokens are dropped; its text is prose when reasoning is read
        // as text.)
        search.marked(text, from, [(OPEN, None), (CHANNEL_OPEN, Some(TOKEN)), (CHANNEL_CLOSE, Some(TOKEN))])
    }

    fn in_section(&self, _text: &str, from: usize, _kind: u8, _search: &mut Searches) -> InSection {
        InSection::Leave(from)
    }

    fn scan(&self, region: &mut Region<'_>) -> Scan {
        BLOCKS.scan(region)
    }

    fn read(&self, region: &str, state: &ScanState, closed: bool, calls: &mut Vec<RawCall>) {
        BLOCKS.read(region, state, closed, calls);
    }
}

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<|tool_call>"), Marker::Token("<|channel>"), Marker::Token("<channel|>")],
    escapes: &[Escape::Tag("channel|"), Escape::Tag("tool|")],
    reasoning: Some(&REASONING),
    ..Format::of(&Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: Gemma 4's declarations, then how to call.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "{}\n\nTo call a function, write {OPEN}call:NAME{{key:{QUOTE}text{QUOTE},number:42,flag:true}}{CLOSE}: \
         strings between {QUOTE} tokens, numbers, booleans, objects {{key:value}} and lists [value,value] \
         as they are. Write one such block for each call.",
            declarations(tools, QUOTE, "<|tool>", "<tool|>")
        )
    }

    /// The text of the tool message that carries `results` back: one
    /// `<|tool_response>response:NAME{value:…}<tool_response|>` each.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        responses(results, &[QUOTE, OPEN, CLOSE, "<tool_response|>"], "<|tool_response>", "<tool_response|>")
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        BLOCKS.write(name, args)
    }

    /// The calls of `gemma4` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        let avoid = vec![Pattern::text(CHANNEL_OPEN), Pattern::text(CHANNEL_CLOSE)];
        gemma::syntax(&BLOCKS, avoid, b, offer)
    }
}

#[cfg(test)]
mod tests {

    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::test_support::parse;
    use serde_json::json;

    #[test]
    fn channel_is_hidden_and_values_typed() {
        let reply = parse(
            TextFormat::Gemma4,
            "<|channel>thought\nplan {a:1}<channel|>Hi<|tool_call>call:f{a:1,b:<|\"|>2<|\"|>}<tool_call|>",
        );
        assert_eq!(reply.normal_text, "Hi");
        assert_eq!(reply.requests.len(), 1);
        assert_eq!(reply.requests[0].args["a"], json!(1));
        assert_eq!(reply.requests[0].args["b"], json!("2"));
        assert_eq!(reply.requests[0].text_args["b"], "2");
    }
}
