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
use crate::grammar::{Builder, Constraint, GrammarError, Syntax};
use crate::protocol::textfmt::driver::Reading;
use crate::protocol::textfmt::format::{Escape, Format, Marker};
use crate::protocol::textfmt::readers::glm::{self, ESCAPES, Glm};
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_call};
use crate::protocol::textfmt::readers::tagged::TOOL_CALL;
use crate::protocol::textfmt::{TextFormat, TextFormatOptions};
use crate::tools::ToolDefinition;

/// The format's id.
pub(crate) const ID: &str = "glm47";

/// The rules of `glm47`.
pub(crate) struct Rules;

impl Format for Rules {
    fn id(&self) -> &'static str {
        ID
    }

    fn markers(&self) -> &'static [Marker] {
        &[Marker::Shared { token: TOOL_CALL, look: after_tool_call, shape: Shape::Name }]
    }

    fn same_markup(&self) -> &'static [TextFormat] {
        &[TextFormat::Glm45]
    }

    fn escapes(&self) -> &'static [Escape] {
        ESCAPES
    }

    fn reading(&self) -> &dyn Reading {
        &Glm { v47: true }
    }

    fn prompt(&self, tools: &[ToolDefinition]) -> String {
        glm::prompt(tools)
    }

    fn results(&self, results: &[ToolExecutionResult]) -> String {
        glm::results(results)
    }

    fn write_call(&self, name: &str, args: &Map<String, Value>) -> Option<String> {
        glm::write_call(true, name, args)
    }

    fn syntax(
        &self,
        b: &mut Builder,
        methods: &[(String, &Value)],
        options: &TextFormatOptions,
        _constraint: &Constraint,
    ) -> Result<Syntax, GrammarError> {
        glm::syntax(ID, true, options, b, methods)
    }
}
