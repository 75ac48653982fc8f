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

use crate::protocol::textfmt::format::{Format, Marker};
use crate::protocol::textfmt::readers::glm::{ESCAPES, Glm};
use crate::protocol::textfmt::readers::shapes::{Shape, after_tool_call};
use crate::protocol::textfmt::readers::tagged::TOOL_CALL;

/// The format: what `auto` looks for and what tool output may not hold; the GLM
/// reader reads and writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[Marker::Shared { token: TOOL_CALL, look: after_tool_call, shape: Shape::NameLine }],
    escapes: ESCAPES,
    ..Format::of(&Glm { v47: false })
};
