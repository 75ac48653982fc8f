//! The four provider APIs that have native tool calling, named once: the native
//! protocol, the wire formats, the HTTP client and the gateway all take this enum.
//! (It lives beside the protocol, the lowest layer that needs it; its public path is
//! [`providers::Provider`](crate::providers::Provider), where its wire formats and
//! endpoints are.)

use super::names::NameRule;
use super::protocol::NativeProtocol;

/// A provider's API: its native tool-calling protocol ([`protocol`](Self::protocol)),
/// its wire format (a `Provider` is a [`WireFormat`](crate::providers::WireFormat)), and
/// the API an `HttpChatModel` speaks (cargo feature `http`).
///
/// | provider | protocol id | endpoint (after the base URL) | key header | environment |
/// |---|---|---|---|---|
/// | `OpenAiChat` | `openai` | `/chat/completions` | `Authorization: Bearer` | `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_MODEL` |
/// | `OpenAiResponses` | `openai_responses` | `/responses` | `Authorization: Bearer` | the same |
/// | `Anthropic` | `anthropic` | `/v1/messages` | `x-api-key` (+ `anthropic-version`) | `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_MODEL` |
/// | `Gemini` | `gemini` | `/models/{model}:generateContent`, `:streamGenerateContent?alt=sse` | `x-goog-api-key` | `GEMINI_API_KEY` (or `GOOGLE_API_KEY`), `GEMINI_BASE_URL`, `GEMINI_MODEL` |
///
/// `OpenAiChat` also serves every server that speaks the Chat Completions API: vLLM,
/// llama.cpp's server, Ollama, DeepSeek, Groq, … (set the base URL; a key is optional
/// away from the default host).
///
/// ```
/// use tool_calling::protocol::ToolCallingProtocol;
/// use tool_calling::providers::Provider;
/// assert_eq!(Provider::OpenAiChat.default_base_url(), "https://api.openai.com/v1");
/// assert_eq!(Provider::Gemini.key_variables(), ["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
/// assert_eq!(Provider::Anthropic.model_variable(), "ANTHROPIC_MODEL");
/// assert_eq!(Provider::OpenAiResponses.to_string(), "openai_responses");
/// assert_eq!(Provider::Anthropic.protocol().id(), "anthropic");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions, and compatible servers.
    OpenAiChat,
    /// The OpenAI Responses API.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini (the Generative Language API).
    Gemini,
}

impl Provider {
    /// Every provider, in the order of the table above.
    pub const ALL: [Provider; 4] =
        [Provider::OpenAiChat, Provider::OpenAiResponses, Provider::Anthropic, Provider::Gemini];

    /// The id of the provider's native protocol (`openai`, `openai_responses`,
    /// `anthropic`, `gemini`).
    pub fn protocol_id(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai",
            Provider::OpenAiResponses => "openai_responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }

    /// The provider whose native protocol has the id `id` (`openai`,
    /// `openai_responses`, `anthropic`, `gemini`), or `None`: where the replies of a
    /// protocol picked by id come from, and where its results go.
    ///
    /// ```
    /// use tool_calling::providers::Provider;
    /// assert_eq!(Provider::from_protocol_id("gemini"), Some(Provider::Gemini));
    /// assert_eq!(Provider::from_protocol_id("vcp"), None);
    /// ```
    pub fn from_protocol_id(id: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|provider| provider.protocol_id() == id)
    }

    /// The provider's native tool-calling protocol (give it options with
    /// [`NativeProtocol::with_options`]).
    pub fn protocol(self) -> NativeProtocol {
        NativeProtocol::of(self)
    }

    /// Which tool names the provider accepts: Gemini allows dots and colons, the others
    /// do not.
    pub(crate) fn name_rule(self) -> NameRule {
        match self {
            Provider::Gemini => NameRule::Gemini,
            Provider::OpenAiChat | Provider::OpenAiResponses | Provider::Anthropic => NameRule::Strict,
        }
    }
}

display_by_name!(Provider, protocol_id);
