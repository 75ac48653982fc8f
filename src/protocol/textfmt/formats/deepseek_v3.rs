//! `deepseek_v3` (DeepSeek V3, R1): calls between DeepSeek's special tokens, each
//! `function<｜tool▁sep｜>NAME` and its arguments in a ```` ```json ```` fence (the bars
//! are U+FF5C, the underscores U+2581).
//!
//! ```text
//! <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//! ```json
//! {"city": "Paris"}
//! ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//! ```
//!
//! Read and written by the DeepSeek reader (`readers/deepseek.rs`), as `deepseek_v31` is:
//! each call is reported when its `<｜tool▁call▁end｜>` arrives; a call whose argument JSON
//! does not parse is an incomplete request, the others count. Implementation-defined
//! choices: the type word is not checked; a call outside a `<｜tool▁calls▁begin｜>` section
//! is read too; an `<｜end▁of▁sentence｜>` right after the section is markup.

use crate::protocol::textfmt::format::{Format, Marker};
use crate::protocol::textfmt::readers::deepseek::{CALL_BEGIN, CALLS_BEGIN, DeepSeek};
use crate::protocol::textfmt::readers::shapes::{Shape, deepseek_version};

/// The format: what `auto` looks for; the DeepSeek reader reads and writes it.
pub(crate) static FORMAT: Format = Format {
    markers: &[
        Marker::Shared { token: CALLS_BEGIN, look: deepseek_version, shape: Shape::TypedCall },
        Marker::Shared { token: CALL_BEGIN, look: deepseek_version, shape: Shape::TypedCall },
    ],
    ..Format::of(&DeepSeek { v31: false })
};
