//! `function_gemma`: FunctionGemma: `<start_function_call>call:NAME{…}<end_function_call>`.
//!
//! ```text
//! <start_function_call>call:get_weather{city:<escape>Paris<escape>,days:3}<end_function_call>
//! ```
//!
//! One block per call; several calls are several blocks (back to back, or with text
//! between them, which is normal text). Arguments are `key:value` pairs in braces,
//! separated by commas (arguments written with no comma between them are read too). A
//! value is text between two `<escape>` tokens (taken as written: the format has no
//! escapes), a bare number, `true`, `false` or `null`, a nested `{key:value}` object or a
//! `[value,…]` list; a bare word that is none of these is a string. `{}` is a call
//! without arguments. The notation is Gemma 4's with `<escape>` as the string delimiter
//! (the reader is shared, see `gemma4`).
//!
//! A block never closed by `<end_function_call>`, or whose content does not read as
//! `call:NAME{…}`, is an incomplete request; other calls still count.
//!
//! Implementation-defined choices: text between `<escape>` tokens is a string, as the
//! chat template writes strings (vLLM reads it as JSON when it can, so `<escape>42<escape>`
//! is a number there); each such top-level value is also recorded as text
//! ([`RawCall::text_arg`]), so that the tool's schema types it when the request is
//! resolved (an `integer` parameter gets `42`). The first `<end_function_call>` ends a
//! block (it is a special token); its `write_call` refuses a string holding it or
//! `<escape>`.
//!
//! Grammar: Gemma's (`readers/gemma.rs`) with `<escape>` as the delimiter; free text holds
//! no `<start_function_call>`.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::format::{Escape, Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::readers::gemma::{self, Blocks, declarations, responses};
use crate::tools::ToolDefinition;

pub(crate) const OPEN: &str = "<start_function_call>";
pub(crate) const CLOSE: &str = "<end_function_call>";
const QUOTE: &str = "<escape>";
const RESPONSE_OPEN: &str = "<start_function_response>";
const RESPONSE_CLOSE: &str = "<end_function_response>";

/// The reading of `function_gemma`: Gemma's blocks with its tokens.
const BLOCKS: Blocks = Blocks { open: OPEN, close: CLOSE, quote: QUOTE };

/// The rules of `function_gemma`.
pub(crate) struct Rules;

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Token("<start_function_call>")],
    escapes: &[Escape::Tag("start_function"), Escape::Tag("end_function"), Escape::Tag("escape")],
    ..Format::new(&BLOCKS, &Rules)
};

impl Writing for Rules {
    /// The tool-definition prompt: FunctionGemma's trigger sentence and declarations.
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        format!(
            "You are a model that can do function calling with the following functions{}\n\n\
         To call a function, write {OPEN}call:NAME{{key:{QUOTE}text{QUOTE},number:42}}{CLOSE}, \
         one block for each call.",
            declarations(tools, QUOTE, "<start_function_declaration>", "<end_function_declaration>")
        )
    }

    /// The text of the tool message that carries `results` back: one
    /// `<start_function_response>response:NAME{value:…}<end_function_response>` each.
    fn results(&self, results: &[ToolExecutionResult]) -> String {
        responses(
            results,
            &[QUOTE, OPEN, CLOSE, RESPONSE_OPEN, RESPONSE_CLOSE],
            RESPONSE_OPEN,
            RESPONSE_CLOSE,
        )
    }

    /// A call of `name` with `args`, as the prompt teaches it.
    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        BLOCKS.write(name, args)
    }

    /// The calls of `function_gemma` as a grammar: see the module docs.
    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        gemma::syntax(&BLOCKS, Vec::new(), b, offer)
    }
}

#[cfg(test)]
mod tests {

    use crate::protocol::textfmt::TextFormat;
    use crate::protocol::textfmt::test_support::calls;
    use serde_json::json;

    #[test]
    fn missing_commas_and_escaped_numbers() {
        let text = "<start_function_call>call:f{a:<escape>1<escape>b:<escape>x<escape>}<end_function_call>";
        assert_eq!(
            calls(TextFormat::FunctionGemma, text),
            vec![("f".to_string(), json!({"a": "1", "b": "x"}), true)]
        );
    }
}
