//! Options of one model call: thinking, streaming, output length, temperature, time limit.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How hard a model that reasons should think.
///
/// ```
/// use tool_calling::model::Effort;
/// assert_eq!(Effort::Medium.as_str(), "medium");
/// assert_eq!(Effort::High.budget(), 24_576);
/// assert_eq!(Effort::from_budget(Effort::Low.budget()), Effort::Low);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Effort {
    /// As little as the model allows.
    Minimal,
    /// Light reasoning.
    Low,
    /// The usual amount.
    Medium,
    /// Deep reasoning.
    High,
}

impl Effort {
    /// The name providers use (`minimal`, `low`, `medium`, `high`).
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// A token budget standing for this effort (for providers that take a budget).
    pub fn budget(self) -> u32 {
        match self {
            Effort::Minimal => 1_024,
            Effort::Low => 2_048,
            Effort::Medium => 8_192,
            Effort::High => 24_576,
        }
    }

    /// The effort a token budget stands for (for providers that take an effort).
    pub fn from_budget(budget: u32) -> Effort {
        match budget {
            0..=1_500 => Effort::Minimal,
            1_501..=4_096 => Effort::Low,
            4_097..=16_384 => Effort::Medium,
            _ => Effort::High,
        }
    }
}

/// Whether a model reasons before it answers, and how much.
///
/// ```
/// use tool_calling::model::{Effort, Thinking};
/// assert!(Thinking::Budget(4_096).is_on());
/// assert!(Thinking::Effort(Effort::Low).is_on());
/// assert!(!Thinking::Off.is_on());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Thinking {
    /// No reasoning.
    Off,
    /// Reasoning, at the provider's default amount.
    On,
    /// Reasoning within this many tokens.
    Budget(u32),
    /// Reasoning at this effort.
    Effort(Effort),
}

impl Thinking {
    /// Whether reasoning is asked for.
    pub fn is_on(self) -> bool {
        self != Thinking::Off
    }
}

/// Options of one model call. Unset options take the model's defaults
/// ([`ModelCapabilities`](crate::protocol::ModelCapabilities)); a client drops an option the model
/// does not support, with a [`RequestNote`] saying so, rather than send it.
///
/// ```
/// use tool_calling::model::{Effort, RequestOptions, Thinking};
/// let options = RequestOptions::default().thinking(Thinking::Effort(Effort::High)).max_tokens(2_000);
/// assert_eq!(options.thinking, Some(Thinking::Effort(Effort::High)));
/// assert_eq!(options.stream, None, "the model's default");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestOptions {
    /// Reasoning on, off, or how much.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// Stream the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The most tokens the answer may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// How long the call may take.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "duration_ms")]
    pub timeout: Option<Duration>,
}

impl RequestOptions {
    setters! {
        /// Sets [`thinking`](Self::thinking).
        pub fn thinking(thinking: Thinking) { self.thinking = Some(thinking) }

        /// Sets [`stream`](Self::stream).
        pub fn stream(on: bool) { self.stream = Some(on) }

        /// Sets [`max_tokens`](Self::max_tokens).
        pub fn max_tokens(tokens: u32) { self.max_tokens = Some(tokens) }

        /// Sets [`temperature`](Self::temperature).
        pub fn temperature(temperature: f32) { self.temperature = Some(temperature) }

        /// Sets [`timeout`](Self::timeout).
        pub fn timeout(timeout: Duration) { self.timeout = Some(timeout) }
    }

    /// These options, with the unset ones taken from `defaults`.
    #[must_use]
    pub fn or(self, defaults: RequestOptions) -> RequestOptions {
        RequestOptions {
            thinking: self.thinking.or(defaults.thinking),
            stream: self.stream.or(defaults.stream),
            max_tokens: self.max_tokens.or(defaults.max_tokens),
            temperature: self.temperature.or(defaults.temperature),
            timeout: self.timeout.or(defaults.timeout),
        }
    }
}

/// Something a client changed in a request before sending it: an option the model does
/// not support (dropped), or one the provider would refuse in this combination
/// (adjusted). Also logged as a `tracing` warning.
///
/// ```
/// use tool_calling::model::RequestNote;
/// let note = RequestNote::new("temperature", "dropped: the model does not support it");
/// assert_eq!(note.option, "temperature");
/// assert_eq!(note.to_string(), "temperature: dropped: the model does not support it");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestNote {
    /// The option (`thinking`, `temperature`, `tools`, …).
    pub option: String,
    /// What was done, and why.
    pub message: String,
}

impl RequestNote {
    /// A note on `option`.
    pub fn new(option: impl Into<String>, message: impl Into<String>) -> Self {
        RequestNote { option: option.into(), message: message.into() }
    }
}

impl std::fmt::Display for RequestNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.option, self.message)
    }
}

/// `Option<Duration>` as milliseconds.
mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(clippy::ref_option)]
    pub(super) fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => serializer.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(deserializer)?.map(Duration::from_millis))
    }
}
