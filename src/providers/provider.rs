//! Where each provider's requests go, how they authenticate, which environment
//! variables configure them. (The enum itself is named where the native protocol is.)

use crate::protocol::native::provider::Provider;

/// The version header Anthropic requires.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

impl Provider {
    /// The base URL used when none is given.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
            Provider::Gemini => "https://generativelanguage.googleapis.com/v1beta",
        }
    }

    /// The environment variables read for the key, in order of preference.
    pub fn key_variables(self) -> &'static [&'static str] {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => &["OPENAI_API_KEY"],
            Provider::Anthropic => &["ANTHROPIC_API_KEY"],
            Provider::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        }
    }

    /// The environment variable read for the base URL.
    pub fn base_url_variable(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "OPENAI_BASE_URL",
            Provider::Anthropic => "ANTHROPIC_BASE_URL",
            Provider::Gemini => "GEMINI_BASE_URL",
        }
    }

    /// The environment variable read for the model.
    pub fn model_variable(self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "OPENAI_MODEL",
            Provider::Anthropic => "ANTHROPIC_MODEL",
            Provider::Gemini => "GEMINI_MODEL",
        }
    }

    /// The URL a request for `model` is posted to.
    #[cfg(feature = "http")]
    pub(crate) fn url(self, base: &str, model: &str, stream: bool) -> String {
        let base = base.trim_end_matches('/');
        match self {
            Provider::OpenAiChat => format!("{base}/chat/completions"),
            Provider::OpenAiResponses => format!("{base}/responses"),
            Provider::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            Provider::Anthropic => format!("{base}/v1/messages"),
            Provider::Gemini => {
                let model = model.strip_prefix("models/").unwrap_or(model);
                if stream {
                    format!("{base}/models/{model}:streamGenerateContent?alt=sse")
                } else {
                    format!("{base}/models/{model}:generateContent")
                }
            }
        }
    }

    /// The headers that carry `key`, and any the provider always wants.
    #[cfg(feature = "http")]
    pub(crate) fn auth_headers(self, key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => {
                if let Some(key) = key {
                    headers.push(("authorization", format!("Bearer {key}")));
                }
            }
            Provider::Anthropic => {
                if let Some(key) = key {
                    headers.push(("x-api-key", key.to_owned()));
                }
                headers.push(("anthropic-version", ANTHROPIC_VERSION.to_owned()));
            }
            Provider::Gemini => {
                if let Some(key) = key {
                    headers.push(("x-goog-api-key", key.to_owned()));
                }
            }
        }
        headers
    }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let base = "http://127.0.0.1:9/v1/";
        assert_eq!(Provider::OpenAiChat.url(base, "m", true), "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(Provider::OpenAiResponses.url(base, "m", false), "http://127.0.0.1:9/v1/responses");
        assert_eq!(
            Provider::Anthropic.url("https://api.anthropic.com", "m", true),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(Provider::Anthropic.url("http://proxy/v1", "m", true), "http://proxy/v1/messages");
        assert_eq!(
            Provider::Gemini.url("https://g/v1beta", "models/gemini-2.5-flash", false),
            "https://g/v1beta/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(
            Provider::Gemini.url("https://g/v1beta", "gemini-2.5-flash", true),
            "https://g/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn headers() {
        assert_eq!(
            Provider::OpenAiChat.auth_headers(Some("k")),
            vec![("authorization", "Bearer k".to_owned())]
        );
        assert!(Provider::OpenAiChat.auth_headers(None).is_empty());
        assert_eq!(
            Provider::Anthropic.auth_headers(Some("k")),
            vec![("x-api-key", "k".to_owned()), ("anthropic-version", ANTHROPIC_VERSION.to_owned())]
        );
        assert_eq!(Provider::Gemini.auth_headers(Some("k")), vec![("x-goog-api-key", "k".to_owned())]);
    }

    #[test]
    fn protocol_ids_match_the_protocols() {
        use crate::protocol::ToolCallingProtocol;
        for provider in Provider::ALL {
            assert_eq!(provider.protocol().id(), provider.protocol_id());
            assert_eq!(provider.to_string(), provider.protocol_id());
            assert_eq!(Provider::from_protocol_id(provider.protocol_id()), Some(provider));
        }
    }
}
