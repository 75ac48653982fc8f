//! `glm47` (GLM-4.7, GLM-5): as `glm45`, line breaks optional.
//!
//! ```text
//! <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>
//! ```
//!
//! The name is the first run of characters up to white space or `<`, so
//! `<tool_call>NAME</tool_call>` is a call with `{}`. Read and written by the GLM reader
//! (`readers/glm.rs`), which says how keys and values are read.

use crate::protocol::textfmt::TextFormat;
use crate::protocol::textfmt::format::{Format, Marker};
use crate::protocol::textfmt::readers::glm::{ESCAPES, Glm};
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_call};
use crate::protocol::textfmt::readers::tagged::TOOL_CALL;

/// The format: what `auto` looks for and what tool output may not hold; the GLM
/// reader reads and writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Shared { token: TOOL_CALL, look: after_tool_call, shape: Shape::Name }],
    same_markup: &[TextFormat::Glm45],
    escapes: ESCAPES,
    ..Format::of(&Glm { v47: true })
};
