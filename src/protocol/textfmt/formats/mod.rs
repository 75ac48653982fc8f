//! The formats, one file each, named by the format's id. Each file holds the
//! format's [`Format`](super::format::Format) (`FORMAT`) and the `Rules` that write it,
//! and imports readers (`super::readers`), the driver and the traits, never another
//! format.

pub(crate) mod apertus;
pub(crate) mod cohere;
pub(crate) mod deepseek_v3;
pub(crate) mod deepseek_v31;
pub(crate) mod deepseek_v32;
pub(crate) mod deepseek_v4;
pub(crate) mod deepseek_v41;
pub(crate) mod ernie45;
pub(crate) mod function_gemma;
pub(crate) mod gemma4;
pub(crate) mod gigachat3;
pub(crate) mod gigachat35;
pub(crate) mod glm45;
pub(crate) mod glm47;
pub(crate) mod granite;
pub(crate) mod harmony;
pub(crate) mod hermes;
pub(crate) mod hunyuan;
pub(crate) mod hunyuan_v3;
pub(crate) mod inkling;
pub(crate) mod internlm;
pub(crate) mod jamba;
pub(crate) mod kimi_k2;
pub(crate) mod kimi_k3;
pub(crate) mod lfm2;
pub(crate) mod llama3_json;
pub(crate) mod longcat;
pub(crate) mod minicpm5;
pub(crate) mod minimax_m1;
pub(crate) mod minimax_m2;
pub(crate) mod minimax_m3;
pub(crate) mod mistral;
pub(crate) mod olmo3;
pub(crate) mod phi4_mini;
pub(crate) mod poolside_v1;
pub(crate) mod pythonic;
pub(crate) mod qwen3_coder_xml;
pub(crate) mod sarashina;
pub(crate) mod seed_oss;
pub(crate) mod step3;
pub(crate) mod xlam;
