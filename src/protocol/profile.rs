//! What each model can do, by name: a built-in table of the common families, which a
//! configuration file (TOML or JSON) overrides.

use std::path::Path;

use serde_json::Value;

use super::textfmt::{IDS as FORMAT_IDS, TextFormat};
use crate::model::{Effort, RequestNote, RequestOptions, Thinking};

/// How a model takes a request to reason.
///
/// ```
/// use tool_calling::protocol::{ModelProfiles, ThinkingStyle};
/// let profiles = ModelProfiles::builtin();
/// assert_eq!(profiles.lookup("gemini-2.5-flash").thinking, ThinkingStyle::GeminiBudget);
/// assert_eq!(profiles.lookup("gpt-4o").thinking, ThinkingStyle::None);
/// assert_eq!(ThinkingStyle::GeminiLevel.as_str(), "gemini_level");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThinkingStyle {
    /// It does not reason (or not on request).
    None,
    /// Anthropic's `thinking: {type: enabled, budget_tokens}`.
    Anthropic,
    /// OpenAI's `reasoning_effort` (Chat Completions) or `reasoning.effort` (Responses).
    OpenAi,
    /// Gemini's `thinkingConfig.thinkingBudget` (Gemini 2.5).
    GeminiBudget,
    /// Gemini's `thinkingConfig.thinkingLevel` (Gemini 3).
    GeminiLevel,
    /// It always reasons and returns `reasoning_content` (DeepSeek's reasoner and other
    /// OpenAI-compatible servers); nothing to ask for, nothing to turn off.
    Always,
}

impl ThinkingStyle {
    /// The configuration name (`none`, `anthropic`, `openai`, `gemini_budget`,
    /// `gemini_level`, `always`).
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingStyle::None => "none",
            ThinkingStyle::Anthropic => "anthropic",
            ThinkingStyle::OpenAi => "openai",
            ThinkingStyle::GeminiBudget => "gemini_budget",
            ThinkingStyle::GeminiLevel => "gemini_level",
            ThinkingStyle::Always => "always",
        }
    }

    fn from_name(name: &str) -> Option<ThinkingStyle> {
        [
            ThinkingStyle::None,
            ThinkingStyle::Anthropic,
            ThinkingStyle::OpenAi,
            ThinkingStyle::GeminiBudget,
            ThinkingStyle::GeminiLevel,
            ThinkingStyle::Always,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// The ids of the text protocols a model can be spoken to in when it has no native
/// tools: `vcp`, then the open-model formats in the order of
/// `TextFormat::ALL` of `protocol::textfmt`. It is made from the formats' registry
/// (`protocol/textfmt/registry.rs`), so the two cannot drift apart.
///
/// ```
/// use tool_calling::protocol::TEXT_PROTOCOL_IDS;
/// assert_eq!(TEXT_PROTOCOL_IDS[0], "vcp");
/// assert!(TEXT_PROTOCOL_IDS.contains(&"qwen3_coder_xml"));
/// ```
pub const TEXT_PROTOCOL_IDS: [&str; TextFormat::ALL.len() + 1] = text_protocol_ids();

/// `vcp`, then every format's id.
#[allow(clippy::indexing_slicing)] // Evaluated at compile time: an index out of range fails the build.
const fn text_protocol_ids() -> [&'static str; TextFormat::ALL.len() + 1] {
    let mut ids = ["vcp"; TextFormat::ALL.len() + 1];
    let mut i = 0;
    while i < FORMAT_IDS.len() {
        ids[i + 1] = FORMAT_IDS[i];
        i += 1;
    }
    ids
}

/// The text protocol a model without native tools is spoken to in, by protocol id: `vcp`
/// (the default) or the id of the open-model format the model was trained on. Always one
/// of [`TEXT_PROTOCOL_IDS`]; `protocol::textfmt::TextFormat::from_id` turns a format's
/// id into its format.
///
/// ```
/// use tool_calling::protocol::{FallbackProtocol, ModelProfiles};
/// use tool_calling::protocol::textfmt::TextFormat;
/// assert_eq!(FallbackProtocol::default(), FallbackProtocol::VCP);
/// assert_eq!(FallbackProtocol::default().id(), "vcp");
/// let mistral = ModelProfiles::builtin().lookup("mistral-small-24b");
/// assert_eq!(mistral.fallback.id(), "mistral");
/// assert_eq!(TextFormat::from_id(mistral.fallback.id()), Some(TextFormat::Mistral));
/// assert_eq!(FallbackProtocol::from_id("hermes").map(|f| f.id()), Some("hermes"));
/// assert_eq!(FallbackProtocol::from_id("hermes2"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FallbackProtocol {
    /// One of [`TEXT_PROTOCOL_IDS`].
    id: &'static str,
}

impl Default for FallbackProtocol {
    fn default() -> Self {
        FallbackProtocol::VCP
    }
}

impl FallbackProtocol {
    /// VCP (the default).
    pub const VCP: FallbackProtocol = FallbackProtocol { id: "vcp" };

    /// The protocol id (one of [`TEXT_PROTOCOL_IDS`]).
    pub fn id(self) -> &'static str {
        self.id
    }

    /// Whether it is VCP.
    pub fn is_vcp(self) -> bool {
        self.id == FallbackProtocol::VCP.id
    }

    /// The protocol with id `id`, if it is one of [`TEXT_PROTOCOL_IDS`].
    pub fn from_id(id: &str) -> Option<FallbackProtocol> {
        TEXT_PROTOCOL_IDS.iter().find(|known| **known == id).map(|&id| FallbackProtocol { id })
    }
}

impl std::fmt::Display for FallbackProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}

/// What a model supports, and its defaults.
///
/// ```
/// use tool_calling::protocol::{ModelProfiles, ThinkingStyle};
/// let profiles = ModelProfiles::builtin();
/// let claude = profiles.lookup("claude-sonnet-4-5");
/// assert!(claude.native_tools);
/// assert_eq!(claude.thinking, ThinkingStyle::Anthropic);
/// let qwen = profiles.lookup("Qwen/Qwen3-8B");
/// assert!(!qwen.native_tools, "served raw, it writes hermes text");
/// assert_eq!(qwen.fallback.id(), "hermes");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ModelCapabilities {
    /// The provider's tool API works for it.
    pub native_tools: bool,
    /// It may make several calls in one turn.
    pub parallel_calls: bool,
    /// How it reasons on request.
    pub thinking: ThinkingStyle,
    /// Its answers can stream.
    pub streaming: bool,
    /// The text protocol used when it has no native tools.
    pub fallback: FallbackProtocol,
    /// Its context window, in tokens.
    pub context_tokens: Option<u32>,
    /// The most tokens one answer may take.
    pub max_output_tokens: Option<u32>,
    /// Options used when a call sets none (thinking and streaming on when supported,
    /// unless configured otherwise).
    pub defaults: RequestOptions,
    /// Its chat template ends the prompt inside an open reasoning tag (`<think>\n`, Kimi
    /// K3's `think` channel), so its text replies start inside reasoning: the text
    /// protocols built for it read them with
    /// [`TextFormatOptions::starts_in_reasoning`](crate::protocol::textfmt::TextFormatOptions::starts_in_reasoning)
    /// (VCP's and `auto`'s alike). Set for the families whose templates always (or by
    /// default) open it; a reply that opens reasoning of its own still reads right.
    pub starts_in_reasoning: bool,
}

impl Default for ModelCapabilities {
    /// A model of unknown family: native tools, parallel calls, streaming, no reasoning.
    fn default() -> Self {
        ModelCapabilities {
            native_tools: true,
            parallel_calls: true,
            thinking: ThinkingStyle::None,
            streaming: true,
            fallback: FallbackProtocol::VCP,
            context_tokens: None,
            max_output_tokens: None,
            defaults: RequestOptions::default(),
            starts_in_reasoning: false,
        }
    }
}

impl ModelCapabilities {
    /// The options of a call: `options`, then the model's defaults (thinking on when it
    /// reasons, streaming when it streams); then dropped or adapted where the model does
    /// not support them, each change noted. Provider rules (which combinations a
    /// provider refuses) are the provider's wire format's to apply.
    pub fn effective_options(&self, options: RequestOptions, notes: &mut Vec<RequestNote>) -> RequestOptions {
        let thinking_default = match self.thinking {
            ThinkingStyle::None => None,
            _ => Some(Thinking::On),
        };
        let mut defaults = self.defaults;
        defaults.thinking = defaults.thinking.or(thinking_default);
        defaults.stream = defaults.stream.or(Some(self.streaming));
        let mut out = options.or(defaults);
        if out.stream == Some(true) && !self.streaming {
            notes.push(RequestNote::new("stream", "the model does not stream: the answer comes whole"));
            out.stream = Some(false);
        }
        if let (Some(asked), Some(limit)) = (out.max_tokens, self.max_output_tokens)
            && asked > limit
        {
            notes.push(RequestNote::new(
                "max_tokens",
                format!("{asked} is above the model's {limit}: {limit} sent"),
            ));
            out.max_tokens = Some(limit);
        }
        // A thinking value translated to the model's form is noted when the call asked for
        // it, not when it is the model's configured default.
        let mut translated = Vec::new();
        out.thinking = match (out.thinking, self.thinking) {
            (None, _) => None,
            (Some(thinking), ThinkingStyle::None) => {
                if thinking.is_on() && options.thinking.is_some() {
                    notes
                        .push(RequestNote::new("thinking", "the model does not reason on request: not sent"));
                }
                None
            }
            (Some(thinking), ThinkingStyle::Always) => {
                if thinking == Thinking::Off && options.thinking.is_some() {
                    notes.push(RequestNote::new(
                        "thinking",
                        "the model always reasons: it cannot be turned off",
                    ));
                }
                None
            }
            (Some(Thinking::Off), ThinkingStyle::GeminiLevel) => {
                translated.push(RequestNote::new(
                    "thinking",
                    "Gemini 3 cannot stop thinking: the lowest level sent",
                ));
                Some(Thinking::Effort(Effort::Minimal))
            }
            (Some(Thinking::Budget(budget)), ThinkingStyle::OpenAi | ThinkingStyle::GeminiLevel) => {
                let effort = Effort::from_budget(budget);
                translated.push(RequestNote::new(
                    "thinking",
                    format!(
                        "the model takes an effort, not a budget: {budget} tokens sent as `{}`",
                        effort.as_str()
                    ),
                ));
                Some(Thinking::Effort(effort))
            }
            (Some(Thinking::Effort(effort)), ThinkingStyle::Anthropic | ThinkingStyle::GeminiBudget) => {
                translated.push(RequestNote::new(
                    "thinking",
                    format!(
                        "the model takes a budget, not an effort: `{}` sent as {} tokens",
                        effort.as_str(),
                        effort.budget()
                    ),
                ));
                Some(Thinking::Budget(effort.budget()))
            }
            (thinking, _) => thinking,
        };
        if options.thinking.is_some() {
            notes.append(&mut translated);
        }
        out
    }
}

/// A configuration entry: the models it matches and the fields it sets.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    pattern: String,
    patch: Patch,
}

/// The fields an entry sets (unset fields keep what came before).
#[derive(Debug, Clone, Default, PartialEq)]
struct Patch {
    native_tools: Option<bool>,
    parallel_calls: Option<bool>,
    thinking: Option<ThinkingStyle>,
    streaming: Option<bool>,
    fallback: Option<FallbackProtocol>,
    context_tokens: Option<u32>,
    max_output_tokens: Option<u32>,
    default_thinking: Option<Thinking>,
    default_stream: Option<bool>,
    starts_in_reasoning: Option<bool>,
}

impl Patch {
    fn apply(&self, caps: &mut ModelCapabilities) {
        if let Some(v) = self.native_tools {
            caps.native_tools = v;
        }
        if let Some(v) = self.parallel_calls {
            caps.parallel_calls = v;
        }
        if let Some(v) = self.thinking {
            caps.thinking = v;
        }
        if let Some(v) = self.streaming {
            caps.streaming = v;
        }
        if let Some(v) = self.fallback {
            caps.fallback = v;
        }
        if let Some(v) = self.context_tokens {
            caps.context_tokens = Some(v);
        }
        if let Some(v) = self.max_output_tokens {
            caps.max_output_tokens = Some(v);
        }
        if let Some(v) = self.default_thinking {
            caps.defaults.thinking = Some(v);
        }
        if let Some(v) = self.default_stream {
            caps.defaults.stream = Some(v);
        }
        if let Some(v) = self.starts_in_reasoning {
            caps.starts_in_reasoning = v;
        }
    }
}

/// Why a configuration file could not be used: the file, the entry, the field.
///
/// ```
/// use tool_calling::protocol::ModelProfiles;
/// let text = "[[model]]\nmatch = \"gpt-*\"\ncontext_tokens = \"many\"";
/// let err = ModelProfiles::builtin().with_config_toml("models.toml", text).unwrap_err();
/// assert_eq!(err.file, "models.toml");
/// assert_eq!(err.entry.as_deref(), Some("1 (`gpt-*`)"));
/// assert_eq!(err.field.as_deref(), Some("context_tokens"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}{}: {message}",
    entry.as_ref().map(|e| format!(": entry {e}")).unwrap_or_default(),
    field.as_ref().map(|f| format!(": field `{f}`")).unwrap_or_default())]
#[non_exhaustive]
pub struct ProfileError {
    /// The file (or the name given for text).
    pub file: String,
    /// The entry (`1`-based position, with its `match` pattern when it has one).
    pub entry: Option<String>,
    /// The field.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// Model capabilities by model name: the built-in table, overridden by configuration.
///
/// A configuration file holds a list of entries under `model` (TOML `[[model]]` tables,
/// or a JSON `{"model": [...]}` object). Each entry has a `match` pattern (`*` any run of
/// characters, `?` one; case does not matter; matched against the whole model name and
/// against the part after its last `/`) and any of these fields:
///
/// | field | value |
/// | --- | --- |
/// | `native_tools` | `true` / `false`: the provider's tool API works for the model |
/// | `parallel_calls` | `true` / `false` |
/// | `thinking` | `none`, `anthropic`, `openai`, `gemini_budget`, `gemini_level`, `always` |
/// | `streaming` | `true` / `false` |
/// | `fallback` | the text protocol without native tools: `vcp` or an open-model format id |
/// | `context_tokens`, `max_output_tokens` | token counts |
/// | `default_thinking` | `true`/`false`, a token budget, or `minimal`/`low`/`medium`/`high` |
/// | `default_stream` | `true` / `false` |
///
/// A model's capabilities are the first built-in entry that matches (or
/// [`ModelCapabilities::default`]), then every matching configuration entry in file
/// order, each setting the fields it names.
///
/// ```
/// use tool_calling::protocol::{ModelProfiles, ThinkingStyle};
/// let profiles = ModelProfiles::builtin()
///     .with_config_toml("models.toml", r#"
///         [[model]]
///         match = "my-llama-*"
///         native_tools = false
///         fallback = "llama3_json"
///     "#)
///     .unwrap();
/// assert_eq!(profiles.lookup("my-llama-70b").fallback.id(), "llama3_json");
/// let err = ModelProfiles::builtin().with_config_toml("models.toml", "[[model]]\nmatch = \"x\"\nthinking = \"antropic\"").unwrap_err();
/// assert_eq!(err.to_string(), "models.toml: entry 1 (`x`): field `thinking`: unknown value `antropic`; one of none, anthropic, openai, gemini_budget, gemini_level, always");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ModelProfiles {
    builtin: Vec<Entry>,
    config: Vec<Entry>,
}

impl Default for ModelProfiles {
    fn default() -> Self {
        Self::builtin()
    }
}

impl ModelProfiles {
    /// The built-in table of common model families: OpenAI (GPT-4, GPT-5, o-series),
    /// Anthropic Claude, Google Gemini, DeepSeek, and open-weight families served raw
    /// (Qwen, Llama, Mistral, GLM, Kimi, MiniMax, gpt-oss, Cohere, Granite, Gemma and the
    /// rest below), which get no native tools and their own text format as fallback.
    ///
    /// It is the one answer to "which text format does this model write":
    /// `TextFormat::for_model`, the HTTP clients and [`lookup`](Self::lookup) all read it.
    /// Open-weight families are found anywhere in the name (`*qwen*`), so a hub path or
    /// a quantised build's name finds its family too:
    ///
    /// | model name contains | fallback |
    /// | --- | --- |
    /// | `qwen3-coder`, `qwen3.5`, `mimo`, `nemotron-3`, `step-3.5` | `qwen3_coder_xml` |
    /// | `qwen`, `qwq`, `hermes` | `hermes` |
    /// | `mistral`, `mixtral`, `ministral`, `magistral`, `devstral`, `codestral` | `mistral` |
    /// | `llama-4`, `llama4`, `llama-3.2-1b`, `llama-3.2-3b` | `pythonic` |
    /// | `llama-3`, `llama3` | `llama3_json` |
    /// | `gpt-oss` | `harmony` |
    /// | `deepseek-v4.1` | `deepseek_v41` |
    /// | `deepseek-v4` | `deepseek_v4` |
    /// | `deepseek-v3.2` (not `-exp`) | `deepseek_v32` |
    /// | `deepseek-v3.1`, `deepseek-v3.2-exp` | `deepseek_v31` |
    /// | `deepseek-v3`, `deepseek-r1`; `deepseek-chat`, `deepseek-reasoner` (native tools) | `deepseek_v3` |
    /// | `kimi-k2` | `kimi_k2` |
    /// | `kimi-k3` | `kimi_k3` |
    /// | `glm-4.7`, `glm-5` | `glm47` |
    /// | `glm` | `glm45` |
    /// | `minimax-m1` | `minimax_m1` |
    /// | `minimax-m3` | `minimax_m3` |
    /// | `minimax` | `minimax_m2` |
    /// | `command-r`, `command-a`, `c4ai-command` | `cohere` |
    /// | `step3`, `step-3` | `step3` |
    /// | `seed-oss` | `seed_oss` |
    /// | `granite-3`, `granite3` | `granite` |
    /// | `xlam` | `xlam` |
    /// | `phi-4-mini`, `phi4-mini` | `phi4_mini` |
    /// | `hunyuan-a13b` | `hunyuan` |
    /// | `hy3`, `hunyuan-3` | `hunyuan_v3` |
    /// | `internlm`, `intern-s1` | `internlm` |
    /// | `functiongemma`, `function-gemma` | `function_gemma` |
    /// | `gemma-4`, `gemma4` | `gemma4` |
    /// | `jamba` | `jamba` |
    /// | `olmo-3`, `olmo3` | `olmo3` |
    /// | `longcat` | `longcat` |
    /// | `ernie-4.5`, `ernie4.5` | `ernie45` |
    /// | `gigachat3.5`, `gigachat-3.5` | `gigachat35` |
    /// | `gigachat3`, `gigachat-3` | `gigachat3` |
    /// | `inkling` | `inkling` |
    /// | `sarashina` | `sarashina` |
    /// | `minicpm` | `minicpm5` |
    /// | `lfm2` | `lfm2` |
    /// | `apertus` | `apertus` |
    /// | `laguna` | `poolside_v1` |
    /// | names starting `gemma`, `phi` (other than the above) | `vcp` |
    ///
    /// ```
    /// use tool_calling::protocol::ModelProfiles;
    /// let profiles = ModelProfiles::builtin();
    /// assert_eq!(profiles.lookup("Qwen/Qwen3.5-35B-A3B").fallback.id(), "qwen3_coder_xml");
    /// assert_eq!(profiles.lookup("ministral-8b-2410").fallback.id(), "mistral");
    /// assert_eq!(profiles.lookup("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF").fallback.id(), "llama3_json");
    /// assert!(profiles.lookup("gpt-4o").fallback.is_vcp());
    /// ```
    pub fn builtin() -> Self {
        let e = |pattern: &str, patch: Patch| Entry { pattern: pattern.to_string(), patch };
        let native = |thinking: ThinkingStyle, context: u32, output: u32| Patch {
            native_tools: Some(true),
            parallel_calls: Some(true),
            thinking: Some(thinking),
            streaming: Some(true),
            context_tokens: Some(context),
            max_output_tokens: Some(output),
            ..Patch::default()
        };
        // Ids from `TEXT_PROTOCOL_IDS` (a unit test checks each one).
        let fallback = |id: &'static str| Some(FallbackProtocol { id });
        let deepseek = |patch: Patch| Patch { fallback: fallback("deepseek_v3"), ..patch };
        let raw = |id: &'static str| Patch {
            native_tools: Some(false),
            fallback: fallback(id),
            ..Patch::default()
        };
        // A family whose template ends the prompt inside an open reasoning tag.
        let thinking = |patch: Patch| Patch { starts_in_reasoning: Some(true), ..patch };
        let builtin = vec![
            // Open-weight OpenAI models: raw harmony text when served without a parser.
            e("*gpt-oss*", raw("harmony")),
            e("gpt-5*", native(ThinkingStyle::OpenAi, 400_000, 128_000)),
            e("o1*", native(ThinkingStyle::OpenAi, 200_000, 100_000)),
            e("o3*", native(ThinkingStyle::OpenAi, 200_000, 100_000)),
            e("o4*", native(ThinkingStyle::OpenAi, 200_000, 100_000)),
            e("gpt-4.1*", native(ThinkingStyle::None, 1_047_576, 32_768)),
            e("gpt-4*", native(ThinkingStyle::None, 128_000, 16_384)),
            e("claude-3-5*", native(ThinkingStyle::None, 200_000, 8_192)),
            e("claude-3-haiku*", native(ThinkingStyle::None, 200_000, 4_096)),
            e("claude-3-opus*", native(ThinkingStyle::None, 200_000, 4_096)),
            e("claude-*", native(ThinkingStyle::Anthropic, 200_000, 64_000)),
            e("gemini-3*", native(ThinkingStyle::GeminiLevel, 1_048_576, 65_536)),
            e("gemini-2.5*", native(ThinkingStyle::GeminiBudget, 1_048_576, 65_536)),
            e("gemini-*", native(ThinkingStyle::None, 1_048_576, 8_192)),
            e("deepseek-reasoner*", deepseek(native(ThinkingStyle::Always, 128_000, 64_000))),
            e("deepseek-chat*", deepseek(native(ThinkingStyle::None, 128_000, 8_192))),
            e("*qwen3-coder*", raw("qwen3_coder_xml")),
            e("*mimo*", raw("qwen3_coder_xml")),
            e("*nemotron-3*", raw("qwen3_coder_xml")),
            e("*qwen3.5*", raw("qwen3_coder_xml")),
            e("*qwen3-5*", raw("qwen3_coder_xml")),
            // Qwen3's thinking-only models (2507): the template opens `<think>`, their
            // replies hold only `</think>`.
            e("*qwen3*thinking*", thinking(raw("hermes"))),
            // QwQ's template ends the prompt with `<think>\n` (before `*qwen*`, which
            // `Qwen/QwQ-32B` also matches).
            e("*qwq*", thinking(raw("hermes"))),
            e("*qwen*", raw("hermes")),
            e("*hermes*", raw("hermes")),
            e("*mistral*", raw("mistral")),
            e("*mixtral*", raw("mistral")),
            e("*ministral*", raw("mistral")),
            e("*magistral*", raw("mistral")),
            e("*devstral*", raw("mistral")),
            e("*codestral*", raw("mistral")),
            e("*llama-4*", raw("pythonic")),
            e("*llama4*", raw("pythonic")),
            e("*llama-3.2-1b*", raw("pythonic")),
            e("*llama-3.2-3b*", raw("pythonic")),
            e("*llama-3*", raw("llama3_json")),
            e("*llama3*", raw("llama3_json")),
            e("*deepseek-v4.1*", raw("deepseek_v41")),
            e("*deepseek-v4-1*", raw("deepseek_v41")),
            e("*deepseek-v41*", raw("deepseek_v41")),
            e("*deepseek-v4*", raw("deepseek_v4")),
            // V3.2-Exp writes V3.1's calls; V3.2 its DSML markup.
            e("*deepseek-v3.2-exp*", raw("deepseek_v31")),
            e("*deepseek-v3-2-exp*", raw("deepseek_v31")),
            e("*deepseek-v3.2*", raw("deepseek_v32")),
            e("*deepseek-v3-2*", raw("deepseek_v32")),
            e("*deepseek-v32*", raw("deepseek_v32")),
            e("*deepseek-v3.1*", raw("deepseek_v31")),
            e("*deepseek-v3-1*", raw("deepseek_v31")),
            e("*deepseek-v31*", raw("deepseek_v31")),
            e("*deepseek-v3*", raw("deepseek_v3")),
            // R1's template ends with `<think>\n` (R1-0528 writes its own `<think>`,
            // which the option reads as a reply that did not start in reasoning).
            e("*deepseek-r1*", thinking(raw("deepseek_v3"))),
            e("*kimi-k2*", raw("kimi_k2")),
            // Thinking mode (the default) opens the `think` channel in the prompt.
            e("*kimi-k3*", thinking(raw("kimi_k3"))),
            e("*glm-4.7*", raw("glm47")),
            e("*glm4.7*", raw("glm47")),
            e("*glm-5*", raw("glm47")),
            e("*glm5*", raw("glm47")),
            e("*glm*", raw("glm45")),
            e("*minimax-m1*", raw("minimax_m1")),
            e("*minimax-m3*", raw("minimax_m3")),
            // MiniMax-M2 never writes `<think>`: its template opens it.
            e("*minimax-m2*", thinking(raw("minimax_m2"))),
            e("*minimax*", raw("minimax_m2")),
            e("*command-r*", raw("cohere")),
            e("*command-a*", raw("cohere")),
            e("*c4ai-command*", raw("cohere")),
            // Step-3.5 writes Qwen3-Coder's XML.
            e("*step-3.5*", raw("qwen3_coder_xml")),
            e("*step3.5*", raw("qwen3_coder_xml")),
            e("*step3p5*", raw("qwen3_coder_xml")),
            // Step3 writes only `</think>`: everything before it is reasoning.
            e("*step3*", thinking(raw("step3"))),
            e("*step-3*", thinking(raw("step3"))),
            e("*seed-oss*", raw("seed_oss")),
            e("*granite-3*", raw("granite")),
            e("*granite3*", raw("granite")),
            e("*xlam*", raw("xlam")),
            e("*phi-4-mini*", raw("phi4_mini")),
            e("*phi4-mini*", raw("phi4_mini")),
            e("*hunyuan-a13b*", raw("hunyuan")),
            e("*hy3*", raw("hunyuan_v3")),
            e("*hunyuan-3*", raw("hunyuan_v3")),
            e("*internlm*", raw("internlm")),
            e("*intern-s1*", raw("internlm")),
            e("*functiongemma*", raw("function_gemma")),
            e("*function-gemma*", raw("function_gemma")),
            e("*gemma-4*", raw("gemma4")),
            e("*gemma4*", raw("gemma4")),
            e("*jamba*", raw("jamba")),
            e("*olmo-3*", raw("olmo3")),
            e("*olmo3*", raw("olmo3")),
            e("*longcat*", raw("longcat")),
            // ERNIE 4.5 thinking models: the reply starts inside reasoning
            // (`…\n</think>\n\n<response>…`), thinking cannot be turned off.
            e("*ernie-4.5*thinking*", thinking(raw("ernie45"))),
            e("*ernie4.5*thinking*", thinking(raw("ernie45"))),
            e("*ernie-4-5*thinking*", thinking(raw("ernie45"))),
            e("*ernie-4.5*", raw("ernie45")),
            e("*ernie4.5*", raw("ernie45")),
            e("*ernie-4-5*", raw("ernie45")),
            e("*gigachat3.5*", raw("gigachat35")),
            e("*gigachat-3.5*", raw("gigachat35")),
            e("*gigachat3*", raw("gigachat3")),
            e("*gigachat-3*", raw("gigachat3")),
            e("*inkling*", raw("inkling")),
            e("*sarashina*", raw("sarashina")),
            e("*minicpm*", raw("minicpm5")),
            e("*lfm2*", raw("lfm2")),
            e("*apertus*", raw("apertus")),
            e("*laguna*", raw("poolside_v1")),
            e("gemma*", raw("vcp")),
            e("phi*", raw("vcp")),
        ];
        ModelProfiles { builtin, config: Vec::new() }
    }

    /// The patterns of the built-in table, in order (for tests that walk it).
    #[cfg(test)]
    pub(crate) fn builtin_patterns() -> Vec<String> {
        ModelProfiles::builtin().builtin.into_iter().map(|e| e.pattern).collect()
    }

    /// No built-in table: every model is [`ModelCapabilities::default`] until configured.
    pub fn empty() -> Self {
        ModelProfiles { builtin: Vec::new(), config: Vec::new() }
    }

    /// Whether an entry (built-in or configured) matches `model`: `false` means
    /// [`lookup`](Self::lookup) gives the defaults of a model of unknown family.
    ///
    /// ```
    /// use tool_calling::protocol::ModelProfiles;
    /// let profiles = ModelProfiles::builtin();
    /// assert!(profiles.knows("Qwen3-8B"));
    /// assert!(!profiles.knows("smollm2"));
    /// ```
    pub fn knows(&self, model: &str) -> bool {
        self.builtin.iter().chain(&self.config).any(|e| matches_model(&e.pattern, model))
    }

    /// The capabilities of `model`.
    pub fn lookup(&self, model: &str) -> ModelCapabilities {
        let mut caps = ModelCapabilities::default();
        if let Some(entry) = self.builtin.iter().find(|e| matches_model(&e.pattern, model)) {
            entry.patch.apply(&mut caps);
        }
        for entry in self.config.iter().filter(|e| matches_model(&e.pattern, model)) {
            entry.patch.apply(&mut caps);
        }
        caps
    }

    /// Adds the entries of a configuration file (`.toml`, or `.json`).
    pub fn with_config_file(self, path: impl AsRef<Path>) -> Result<Self, ProfileError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| error(&name, None, None, format!("cannot read it: {e}")))?;
        if path.extension().is_some_and(|x| x.eq_ignore_ascii_case("json")) {
            self.with_config_json(&name, &text)
        } else {
            self.with_config_toml(&name, &text)
        }
    }

    /// Adds the entries of TOML configuration text (`name` names it in errors).
    pub fn with_config_toml(self, name: &str, text: &str) -> Result<Self, ProfileError> {
        let value: toml::Value =
            toml::from_str(text).map_err(|e| error(name, None, None, format!("not valid TOML: {e}")))?;
        let value = serde_json::to_value(value).map_err(|e| error(name, None, None, e.to_string()))?;
        self.with_config_value(name, &value)
    }

    /// Adds the entries of JSON configuration text (`name` names it in errors).
    pub fn with_config_json(self, name: &str, text: &str) -> Result<Self, ProfileError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| error(name, None, None, format!("not valid JSON: {e}")))?;
        self.with_config_value(name, &value)
    }

    fn with_config_value(mut self, name: &str, value: &Value) -> Result<Self, ProfileError> {
        let Some(root) = value.as_object() else {
            return Err(error(
                name,
                None,
                None,
                "the configuration must be a table with a `model` list".into(),
            ));
        };
        if let Some(key) = root.keys().find(|k| k.as_str() != "model") {
            return Err(error(
                name,
                None,
                Some(key),
                "unknown key at the top level; entries go in the `model` list".into(),
            ));
        }
        let entries = match root.get("model") {
            None => return Ok(self),
            Some(Value::Array(entries)) => entries,
            Some(_) => return Err(error(name, None, Some("model"), "must be a list of entries".into())),
        };
        for (i, entry) in entries.iter().enumerate() {
            self.config.push(parse_entry(name, i + 1, entry)?);
        }
        Ok(self)
    }
}

fn error(file: &str, entry: Option<String>, field: Option<&str>, message: String) -> ProfileError {
    ProfileError { file: file.to_string(), entry, field: field.map(str::to_string), message }
}

fn parse_entry(file: &str, number: usize, value: &Value) -> Result<Entry, ProfileError> {
    let Some(map) = value.as_object() else {
        return Err(error(file, Some(number.to_string()), None, "an entry must be a table".into()));
    };
    let label = match map.get("match").and_then(Value::as_str) {
        Some(pattern) => format!("{number} (`{pattern}`)"),
        None => number.to_string(),
    };
    let fail = |field: &str, message: String| error(file, Some(label.clone()), Some(field), message);
    let pattern = match map.get("match") {
        Some(Value::String(p)) if !p.trim().is_empty() => p.clone(),
        Some(_) => return Err(fail("match", "must be a non-empty pattern string".into())),
        None => return Err(fail("match", "is missing: name the models this entry is for".into())),
    };
    let mut patch = Patch::default();
    for (key, value) in map {
        let boolean =
            || value.as_bool().ok_or_else(|| fail(key, format!("must be true or false, not {value}")));
        let count = || {
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| fail(key, format!("must be a whole number of tokens, not {value}")))
        };
        match key.as_str() {
            "match" => {}
            "native_tools" => patch.native_tools = Some(boolean()?),
            "parallel_calls" => patch.parallel_calls = Some(boolean()?),
            "streaming" => patch.streaming = Some(boolean()?),
            "default_stream" => patch.default_stream = Some(boolean()?),
            "starts_in_reasoning" => patch.starts_in_reasoning = Some(boolean()?),
            "context_tokens" => patch.context_tokens = Some(count()?),
            "max_output_tokens" => patch.max_output_tokens = Some(count()?),
            "thinking" => {
                let name = value.as_str().unwrap_or_default();
                patch.thinking = Some(ThinkingStyle::from_name(name).ok_or_else(|| {
                    fail(key, format!(
                        "unknown value `{}`; one of none, anthropic, openai, gemini_budget, gemini_level, always",
                        value.as_str().map_or_else(|| value.to_string(), str::to_string)
                    ))
                })?);
            }
            "fallback" => {
                let id = value.as_str().unwrap_or_default();
                patch.fallback = Some(FallbackProtocol::from_id(id).ok_or_else(|| {
                    fail(
                        key,
                        format!(
                            "unknown protocol `{}`; one of {}",
                            value.as_str().map_or_else(|| value.to_string(), str::to_string),
                            TEXT_PROTOCOL_IDS.join(", ")
                        ),
                    )
                })?);
            }
            "default_thinking" => {
                patch.default_thinking = Some(match value {
                    Value::Bool(true) => Thinking::On,
                    Value::Bool(false) => Thinking::Off,
                    Value::Number(_) => Thinking::Budget(count()?),
                    Value::String(s) => match s.as_str() {
                        "off" => Thinking::Off,
                        "on" => Thinking::On,
                        "minimal" => Thinking::Effort(Effort::Minimal),
                        "low" => Thinking::Effort(Effort::Low),
                        "medium" => Thinking::Effort(Effort::Medium),
                        "high" => Thinking::Effort(Effort::High),
                        other => {
                            return Err(fail(
                                key,
                                format!(
                                    "unknown value `{other}`; true, false, a budget, or minimal/low/medium/high"
                                ),
                            ));
                        }
                    },
                    other => {
                        return Err(fail(
                            key,
                            format!("must be true, false, a budget or an effort, not {other}"),
                        ));
                    }
                });
            }
            _ => return Err(fail(key, "unknown field".into())),
        }
    }
    Ok(Entry { pattern, patch })
}

/// Whether `pattern` matches `model`, or the part of it after its last `/`. Case does
/// not matter, and neither do separators: `_` and spaces read as `-`.
fn matches_model(pattern: &str, model: &str) -> bool {
    let fold = |text: &str| -> String {
        text.chars().map(|c| if c == '_' || c == ' ' { '-' } else { c.to_ascii_lowercase() }).collect()
    };
    let pattern = fold(pattern);
    let model = fold(model);
    let last = model.rsplit('/').next().unwrap_or(&model);
    glob(pattern.as_bytes(), model.as_bytes()) || glob(pattern.as_bytes(), last.as_bytes())
}

/// `*` and `?` matching, in linear time with one backtrack point.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || text.get(t) == Some(&c) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern.get(p..).unwrap_or_default().iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob(b"claude-*", b"claude-sonnet-4-5"));
        assert!(glob(b"*hermes*", b"nous-hermes-2"));
        assert!(glob(b"gpt-4?", b"gpt-4o"));
        assert!(!glob(b"gpt-4?", b"gpt-4o-mini"));
        assert!(glob(b"llama*3*", b"llama-3.1-8b-instruct"));
        assert!(!glob(b"o1*", b"gpt-o1"));
        assert!(matches_model("qwen*", "Qwen/Qwen2.5-7B-Instruct"));
    }

    #[test]
    fn families_whose_templates_open_reasoning() {
        let p = ModelProfiles::builtin();
        for model in [
            "baidu/ERNIE-4.5-21B-A3B-Thinking",
            "moonshotai/Kimi-K3",
            "MiniMaxAI/MiniMax-M2",
            "stepfun-ai/step3",
            "deepseek-ai/DeepSeek-R1-0528",
            "Qwen/QwQ-32B",
            "Qwen/Qwen3-235B-A22B-Thinking-2507",
        ] {
            assert!(p.lookup(model).starts_in_reasoning, "{model}");
        }
        for model in [
            "baidu/ERNIE-4.5-300B-A47B-PT",
            "Qwen/Qwen3-8B",
            "deepseek-ai/DeepSeek-V3.1",
            "MiniMaxAI/MiniMax-M1-80k",
            "stepfun-ai/Step-3.5-Flash",
            "zai-org/GLM-4.5",
            "gpt-4o",
        ] {
            assert!(!p.lookup(model).starts_in_reasoning, "{model}");
        }
        // The fallback is the family's, whatever the mode.
        assert_eq!(p.lookup("baidu/ERNIE-4.5-21B-A3B-Thinking").fallback.id(), "ernie45");
        assert_eq!(p.lookup("MiniMaxAI/MiniMax-M2").fallback.id(), "minimax_m2");
        assert_eq!(p.lookup("Qwen/Qwen3-235B-A22B-Thinking-2507").fallback.id(), "hermes");
        // A profile turns it off (or on) for a deployment.
        let text = "[[model]]\nmatch = \"*kimi-k3*\"\nstarts_in_reasoning = false";
        let p = ModelProfiles::builtin().with_config_toml("models.toml", text).unwrap_or_default();
        assert!(!p.lookup("kimi-k3").starts_in_reasoning);
    }

    #[test]
    fn builtin_families() {
        let p = ModelProfiles::builtin();
        assert_eq!(p.lookup("gpt-5-mini").thinking, ThinkingStyle::OpenAi);
        assert_eq!(p.lookup("gpt-4o").thinking, ThinkingStyle::None);
        assert_eq!(p.lookup("claude-3-5-haiku-latest").thinking, ThinkingStyle::None);
        assert_eq!(p.lookup("claude-opus-4-1").thinking, ThinkingStyle::Anthropic);
        assert_eq!(p.lookup("models/gemini-2.5-flash").thinking, ThinkingStyle::GeminiBudget);
        assert_eq!(p.lookup("gemini-3-pro-preview").thinking, ThinkingStyle::GeminiLevel);
        assert_eq!(p.lookup("deepseek-reasoner").thinking, ThinkingStyle::Always);
        assert_eq!(p.lookup("meta-llama/Llama-3.3-70B-Instruct").fallback.id(), "llama3_json");
        assert_eq!(p.lookup("gemma-3-27b").fallback, FallbackProtocol::VCP);
        assert!(!p.lookup("gemma-3-27b").native_tools);
        assert_eq!(p.lookup("some-new-model"), ModelCapabilities::default());
        // The two answers that once disagreed with the text formats' own table.
        assert_eq!(p.lookup("qwen3.5-27b").fallback.id(), "qwen3_coder_xml");
        assert_eq!(p.lookup("Qwen/Qwen3_5-Plus").fallback.id(), "qwen3_coder_xml");
        assert_eq!(p.lookup("ministral-8b-instruct").fallback.id(), "mistral");
        assert!(!p.lookup("ministral-8b-instruct").native_tools);
        assert_eq!(p.lookup("deepseek-chat").fallback.id(), "deepseek_v3");
        assert!(p.lookup("deepseek-chat").native_tools);
    }

    #[test]
    fn every_builtin_entry_is_reachable() {
        let builtin = ModelProfiles::builtin().builtin;
        for (i, entry) in builtin.iter().enumerate() {
            let sample = entry.pattern.replace('*', "");
            let first = builtin.iter().position(|e| matches_model(&e.pattern, &sample));
            assert_eq!(first, Some(i), "`{}` is shadowed by an earlier entry", entry.pattern);
        }
    }

    #[test]
    fn builtin_fallbacks_are_known_ids() {
        for entry in &ModelProfiles::builtin().builtin {
            if let Some(fallback) = entry.patch.fallback {
                assert_eq!(FallbackProtocol::from_id(fallback.id()), Some(fallback), "{}", entry.pattern);
            }
        }
    }

    #[test]
    fn options_are_adapted_to_the_model() {
        let p = ModelProfiles::builtin();
        let mut notes = Vec::new();
        // Defaults: thinking on for a model that reasons, streaming on.
        let claude = p.lookup("claude-sonnet-4-5").effective_options(RequestOptions::default(), &mut notes);
        assert_eq!((claude.thinking, claude.stream), (Some(Thinking::On), Some(true)));
        assert!(notes.is_empty());
        // An effort to a budget model, and a budget to an effort model.
        let claude = p.lookup("claude-sonnet-4-5").effective_options(
            RequestOptions::default().thinking(Thinking::Effort(Effort::High)),
            &mut notes,
        );
        assert_eq!(claude.thinking, Some(Thinking::Budget(24_576)));
        let gpt = p
            .lookup("o3")
            .effective_options(RequestOptions::default().thinking(Thinking::Budget(2_000)), &mut notes);
        assert_eq!(gpt.thinking, Some(Thinking::Effort(Effort::Low)));
        assert_eq!(notes.len(), 2);
        // Thinking asked of a model that cannot: dropped, noted; max_tokens clamped.
        notes.clear();
        let old = p.lookup("gpt-4o").effective_options(
            RequestOptions::default().thinking(Thinking::On).max_tokens(1_000_000),
            &mut notes,
        );
        assert_eq!((old.thinking, old.max_tokens), (None, Some(16_384)));
        assert_eq!(notes.iter().map(|n| n.option.as_str()).collect::<Vec<_>>(), ["max_tokens", "thinking"]);
    }

    #[test]
    fn configuration_overrides_and_errors() {
        let json = r#"{"model": [{"match": "gpt-4o*", "native_tools": false, "fallback": "hermes", "default_stream": false},
                                 {"match": "gpt-4o-mini", "max_output_tokens": 100, "default_thinking": "high"}]}"#;
        let p = ModelProfiles::builtin().with_config_json("cfg.json", json).unwrap();
        let mini = p.lookup("gpt-4o-mini");
        assert!(!mini.native_tools);
        assert_eq!(mini.fallback.id(), "hermes");
        assert_eq!(mini.max_output_tokens, Some(100));
        assert_eq!(mini.defaults.stream, Some(false));
        assert_eq!(mini.defaults.thinking, Some(Thinking::Effort(Effort::High)));
        assert!(mini.parallel_calls, "fields not named keep the built-in values");

        let err =
            |text: &str| ModelProfiles::builtin().with_config_toml("m.toml", text).unwrap_err().to_string();
        assert_eq!(
            err("[[model]]\nnative_tools = true"),
            "m.toml: entry 1: field `match`: is missing: name the models this entry is for"
        );
        assert_eq!(
            err("[[model]]\nmatch = \"a\"\nstreams = true"),
            "m.toml: entry 1 (`a`): field `streams`: unknown field"
        );
        assert_eq!(
            err("[[model]]\nmatch = \"a\"\n[[model]]\nmatch = \"b\"\nmax_output_tokens = \"lots\""),
            "m.toml: entry 2 (`b`): field `max_output_tokens`: must be a whole number of tokens, not \"lots\""
        );
        assert!(err("[[model]\n").starts_with("m.toml: not valid TOML"));
        assert_eq!(
            err("models = []"),
            "m.toml: field `models`: unknown key at the top level; entries go in the `model` list"
        );
        assert_eq!(
            err("[[model]]\nmatch = \"a\"\nfallback = \"hermes2\""),
            format!(
                "m.toml: entry 1 (`a`): field `fallback`: unknown protocol `hermes2`; one of {}",
                TEXT_PROTOCOL_IDS.join(", ")
            )
        );
        let missing = ModelProfiles::builtin().with_config_file("/nonexistent/models.toml").unwrap_err();
        assert!(missing.to_string().starts_with("/nonexistent/models.toml: cannot read it"), "{missing}");
    }
}
