//! `glm47` (GLM-4.7, GLM-5): as `glm45`, line breaks optional.
//!
//! ```text
//! <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>
//! ```
//!
//! The name is the first run of characters up to white space or `<`, so
//! `<tool_call>NAME</tool_call>` is a call with `{}`. Read and written by the GLM reader
//! (`readers/glm.rs`), which says how keys and values are read.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::TextFormat;
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::readers::glm::{self, ESCAPES, Glm};
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_call};
use crate::protocol::textfmt::readers::tagged::TOOL_CALL;
use crate::tools::ToolDefinition;

/// The rules of `glm47`.
pub(crate) struct Rules;

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) const FORMAT: Format = Format {
    markers: &[Marker::Shared { token: TOOL_CALL, look: after_tool_call, shape: Shape::Name }],
    same_markup: &[TextFormat::Glm45],
    escapes: ESCAPES,
    ..Format::new(&Glm { v47: true }, &Rules)
};

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        glm::prompt(tools)
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        glm::results(results)
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        glm::write_call(true, name, args)
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        glm::syntax(true, b, offer)
    }
}
