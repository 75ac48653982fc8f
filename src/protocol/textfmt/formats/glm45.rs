//! `glm45` (GLM-4.5, GLM-4.6): `<tool_call>NAME` on its own line, then key/value pairs
//! in tags, one a line.
//!
//! ```text
//! <tool_call>get_weather
//! <arg_key>city</arg_key>
//! <arg_value>Paris</arg_value>
//! </tool_call>
//! ```
//!
//! The name runs up to the first line break (or, tolerated, up to the first `<arg_key>`
//! when there is none). Read and written by the GLM reader (`readers/glm.rs`), which
//! says how keys and values are read.

use serde_json::{Map, Value};

use crate::ToolExecutionResult;
use crate::grammar::{Builder, GrammarError, Syntax};
use crate::protocol::textfmt::format::{Format, Marker, Writing};
use crate::protocol::textfmt::grammar::Offer;
use crate::protocol::textfmt::readers::glm::{self, ESCAPES, Glm};
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_call};
use crate::protocol::textfmt::readers::tagged::TOOL_CALL;
use crate::tools::ToolDefinition;

/// The rules of `glm45`.
pub(crate) struct Rules;

/// The format: what `auto` looks for, what tool output may not hold and how calls
/// are read; [`Rules`] writes it.
pub(crate) const FORMAT: Format = Format {
    markers: &[Marker::Shared { token: TOOL_CALL, look: after_tool_call, shape: Shape::NameLine }],
    escapes: ESCAPES,
    ..Format::new(&Glm { v47: false }, &Rules)
};

impl Writing for Rules {
    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        glm::prompt(tools)
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        glm::results(results)
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        glm::write_call(false, name, args)
    }

    fn syntax(&self, b: &mut Builder, offer: &Offer<'_>) -> Result<Syntax, GrammarError> {
        glm::syntax(false, b, offer)
    }
}
