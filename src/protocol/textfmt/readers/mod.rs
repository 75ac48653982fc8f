//! What several formats share: readers of a kind of markup, parameterised by each
//! format's tokens, and the helpers of the text they carry. A format file imports these,
//! the driver and [`format`](super::format)'s types, never another format.
//!
//! - [`tagged`]: one JSON call object between two tags (`hermes` and its kin).
//! - [`json_list`]: a JSON list of call objects after a marker or in tags.
//! - [`json`]: balanced-bracket scans and JSON call objects.
//! - [`deepseek`]: DeepSeek's call tokens (`deepseek_v3`, `deepseek_v31`).
//! - [`dsml`]: DSML invokes (the DeepSeek V3.2, V4, V4.1 formats and GigaChat 3.5).
//! - [`glm`]: `<tool_call>NAME` with `<arg_key>`/`<arg_value>` pairs (the GLM formats,
//!   poolside).
//! - [`xml_function`]: `<function=NAME>` with `<parameter=KEY>` values (Qwen3-Coder,
//!   Seed-OSS).
//! - [`xml_elements`]: nested value elements and attributes (MiniMax-M3, MiniCPM).
//! - [`gemma`]: Gemma's `call:NAME{…}` blocks (Gemma 4, FunctionGemma).
//! - [`pythonic`]: Python call lists and literals.
//! - [`values`]: text values typed without a schema, entities, line breaks.
//! - [`shapes`]: what follows a marker several formats write, for `auto`.

pub(crate) mod deepseek;
pub(crate) mod dsml;
pub(crate) mod gemma;
pub(crate) mod glm;
pub(crate) mod json;
pub(crate) mod json_list;
pub(crate) mod pythonic;
pub(crate) mod shapes;
pub(crate) mod tagged;
pub(crate) mod values;
pub(crate) mod xml_elements;
pub(crate) mod xml_function;
