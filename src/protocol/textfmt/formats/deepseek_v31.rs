//! `deepseek_v31` (DeepSeek V3.1, V3.2-Exp): calls between DeepSeek's special tokens,
//! each `NAME<｜tool▁sep｜>` and its JSON arguments (the bars are U+FF5C, the underscores
//! U+2581).
//!
//! ```text
//! <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//! ```
//!
//! Read and written by the DeepSeek reader (`readers/deepseek.rs`), as `deepseek_v3` is:
//! each call is reported when its `<｜tool▁call▁end｜>` arrives; a call whose argument JSON
//! does not parse is an incomplete request, the others count. Implementation-defined
//! choices: a call outside a `<｜tool▁calls▁begin｜>` section is read too; an
//! `<｜end▁of▁sentence｜>` right after the section is markup.

use crate::protocol::textfmt::format::{Format, Marker};
use crate::protocol::textfmt::readers::deepseek::{CALL_BEGIN, CALLS_BEGIN, DeepSeek};
use crate::protocol::textfmt::readers::shapes::{Shape, deepseek_version};

/// The format: what `auto` looks for; the DeepSeek reader reads and writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Shared { token: CALLS_BEGIN, look: deepseek_version, shape: Shape::NamedCall },
        Marker::Shared { token: CALL_BEGIN, look: deepseek_version, shape: Shape::NamedCall },
    ],
    ..Format::of(&DeepSeek { v31: true })
};
