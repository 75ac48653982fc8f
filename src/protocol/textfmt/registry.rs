//! The registry: every format, one line each. The line names the variant of
//! [`TextFormat`] and the format's file in `formats/` (whose name is the format's id);
//! the macro makes the enum, [`TextFormat::ALL`] (in the order of the lines), the ids
//! and the [`Format`] of each variant from it. Everything that lists the formats
//! elsewhere (`auto`'s markers, the tokens `neutralize_tokens` covers, the model
//! layer's `TEXT_PROTOCOL_IDS`) is derived from these lines.
//!
//! Adding a format: its file in `formats/` (a `pub(crate) static FORMAT` of type
//! [`Format`] and the `Rules` that write it), one line here, its written text in
//! `tests/corpus/textfmt_written/` (`BLESS=1`), and the rows of
//! the model table that select it (`src/protocol/profile.rs`).

use super::format::Format;
use super::formats;

/// Makes [`TextFormat`] and its lookups from one line per format: the variant's doc
/// comment, then `Variant => module`.
macro_rules! registry {
    ($($(#[doc = $doc:literal])* $variant:ident => $module:ident,)*) => {
        /// One of the open-weight models' text formats.
        ///
        /// ```
        /// use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
        /// let format = TextFormat::for_model("Qwen/Qwen3-8B").unwrap();
        /// assert_eq!(format, TextFormat::Hermes);
        /// assert_eq!(format.to_string(), "hermes");
        /// let reply = r#"<tool_call>{"name": "clock", "arguments": {}}</tool_call>"#;
        /// let parsed = TextFormatProtocol::new(format).parse(reply);
        /// assert_eq!(parsed.requests[0].tool_name, "clock");
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum TextFormat {
            $($(#[doc = $doc])* $variant,)*
        }

        /// How many formats there are.
        const COUNT: usize = [$(stringify!($variant)),*].len();

        impl TextFormat {
            /// Every format, in the order of the table above.
            pub const ALL: [TextFormat; COUNT] = [$(TextFormat::$variant),*];

            /// The protocol id (`hermes`, `qwen3_coder_xml`, …).
            pub const fn id(self) -> &'static str {
                match self {
                    $(TextFormat::$variant => stringify!($module),)*
                }
            }

            /// Everything about the format.
            pub(crate) fn format(self) -> &'static Format {
                match self {
                    $(TextFormat::$variant => &formats::$module::FORMAT,)*
                }
            }
        }

        /// Every format's id, in the order of [`TextFormat::ALL`].
        pub(crate) const IDS: [&str; COUNT] = [$(stringify!($module)),*];
    };
}

registry! {
    /// `hermes`: JSON in `<tool_call>` tags (Hermes 2 Pro, Qwen 2.5, Qwen 3).
    Hermes => hermes,
    /// `qwen3_coder_xml`: `<function=NAME>` with `<parameter=KEY>` text values.
    Qwen3CoderXml => qwen3_coder_xml,
    /// `mistral`: `[TOOL_CALLS]` with a JSON array, or `NAME[ARGS]{…}` per call.
    Mistral => mistral,
    /// `llama3_json`: `<|python_tag|>` (or a bare reply) with `{"name", "parameters"}`
    /// objects separated by `;`.
    Llama3Json => llama3_json,
    /// `pythonic`: a Python list of calls with keyword arguments.
    Pythonic => pythonic,
    /// `deepseek_v3`: DeepSeek's tokens, `function<｜tool▁sep｜>NAME` and a fenced JSON
    /// block.
    DeepSeekV3 => deepseek_v3,
    /// `deepseek_v31`: DeepSeek's tokens, `NAME<｜tool▁sep｜>{…}`.
    DeepSeekV31 => deepseek_v31,
    /// `kimi_k2`: Kimi's section tokens, `functions.NAME:INDEX` ids.
    KimiK2 => kimi_k2,
    /// `glm45`: `<tool_call>NAME` on its own line, `<arg_key>`/`<arg_value>` pairs.
    Glm45 => glm45,
    /// `glm47`: as `glm45`, line breaks optional.
    Glm47 => glm47,
    /// `minimax_m2`: `<minimax:tool_call>` with `<invoke name="…">` and `<parameter
    /// name="…">` text values.
    MinimaxM2 => minimax_m2,
    /// `cohere`: Cohere Command R / Command A: `<|START_ACTION|>` with a JSON list of `tool_name`/`parameters` objects.
    Cohere => cohere,
    /// `deepseek_v32`: DeepSeek V3.2: DSML markup, `<｜DSML｜invoke name=…>` with `<｜DSML｜parameter …>` values.
    DeepSeekV32 => deepseek_v32,
    /// `step3`: StepFun Step-3: `<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=…>`.
    Step3 => step3,
    /// `kimi_k3`: Kimi K3: `<|open|>call tool="…"<|sep|>` blocks in a `tools` channel.
    KimiK3 => kimi_k3,
    /// `harmony`: gpt-oss (OpenAI Harmony): `commentary to=functions.NAME` messages ending in `<|call|>`.
    Harmony => harmony,
    /// `seed_oss`: ByteDance Seed-OSS: Qwen3-Coder's XML in `<seed:tool_call>` tags.
    SeedOss => seed_oss,
    /// `granite`: IBM Granite 3.x: `<|tool_call|>` or `<tool_call>` and a JSON array of calls.
    Granite => granite,
    /// `xlam`: Salesforce xLAM: a JSON array of `{"name", "arguments"}` objects.
    Xlam => xlam,
    /// `phi4_mini`: Phi-4-mini: `functools[…]` with a JSON array of calls.
    Phi4Mini => phi4_mini,
    /// `hunyuan`: Hunyuan A13B: a JSON array in `<tool_calls>` tags.
    Hunyuan => hunyuan,
    /// `internlm`: InternLM2 / 2.5: `<|action_start|><|plugin|>` and a JSON object.
    Internlm => internlm,
    /// `function_gemma`: FunctionGemma: `<start_function_call>call:NAME{…}<end_function_call>`.
    FunctionGemma => function_gemma,
    /// `gemma4`: Gemma 4: `<|tool_call>call:NAME{…}<tool_call|>`.
    Gemma4 => gemma4,
    /// `jamba`: AI21 Jamba: a JSON array in `<tool_calls>` tags.
    Jamba => jamba,
    /// `olmo3`: OLMo 3: Python-style calls in `<function_calls>` tags.
    Olmo3 => olmo3,
    /// `longcat`: LongCat-Flash: JSON in `<longcat_tool_call>` tags.
    Longcat => longcat,
    /// `ernie45`: ERNIE 4.5: JSON in `<tool_call>` tags, after reasoning.
    Ernie45 => ernie45,
    /// `gigachat3`: GigaChat 3 / 3.1: one JSON call after a `function call` header.
    Gigachat3 => gigachat3,
    /// `minimax_m1`: MiniMax-M1: JSON lines in `<tool_calls>` tags.
    MinimaxM1 => minimax_m1,
    /// `inkling`: Inkling: TML frames, `<|content_invoke_tool_json|>` payloads.
    Inkling => inkling,
    /// `sarashina`: SoftBank Sarashina: a Python-literal list of dicts after `<|tool_calls|>`.
    Sarashina => sarashina,
    /// `deepseek_v4`: DeepSeek V4: DSML invokes in a `<｜DSML｜tool_calls>` block.
    DeepSeekV4 => deepseek_v4,
    /// `hunyuan_v3`: Hunyuan 3: `<tool_call>NAME<tool_sep>` and key/value tags in `<tool_calls>`.
    HunyuanV3 => hunyuan_v3,
    /// `lfm2`: Liquid LFM2: a Python call list between `<|tool_call_start|>` and `<|tool_call_end|>`.
    Lfm2 => lfm2,
    /// `minimax_m3`: MiniMax-M3: namespaced `]<]minimax[>[` tags, `<invoke name=…>` with nested value tags.
    MinimaxM3 => minimax_m3,
    /// `apertus`: Swiss AI Apertus: `<|tools_prefix|>[{"NAME": {…}}]<|tools_suffix|>`.
    Apertus => apertus,
    /// `minicpm5`: MiniCPM 4/5: `<function name=…>` with `<param name=…>` values.
    Minicpm5 => minicpm5,
    /// `poolside_v1`: poolside Laguna: GLM-4.5's `<tool_call>NAME` with `<arg_key>`/`<arg_value>` pairs.
    PoolsideV1 => poolside_v1,
    /// `gigachat35`: GigaChat 3.5.
    Gigachat35 => gigachat35,
    /// `deepseek_v41`: DeepSeek V4.1: DSML with spaced tags, `<｜DSML｜ calls>` blocks.
    DeepSeekV41 => deepseek_v41,
}
