//! When to ask again: the retry policy, and reading how long a provider asks to wait
//! (`retry-after-ms`, `Retry-After` in seconds or as an HTTP date, Gemini's `RetryInfo`).

pub(crate) use crate::http::retry_after_from_headers;
use std::time::Duration;

use serde_json::Value;

use crate::model::ChatModelError;

/// How a client retries a request the provider refused for a passing reason (429, 5xx,
/// a dropped connection; see [`ChatModelError::is_retryable`]).
///
/// Only the sending of a request is retried, never a stream that has begun: a turn that
/// was half delivered is reported, not silently asked for again. The wait before retry
/// `n` (from 0) is what the provider asked for (`retry-after-ms`, `Retry-After`, or
/// Gemini's `RetryInfo`), else `initial_backoff × 2ⁿ` capped at `max_backoff`. A provider
/// asking for longer than `max_retry_after` gets its error returned instead.
///
/// ```
/// use std::time::Duration;
/// use tool_calling::providers::HttpRetry;
///
/// let policy = HttpRetry::default().max_retries(4).initial_backoff(Duration::from_millis(250));
/// assert_eq!(policy.backoff(0), Duration::from_millis(250));
/// assert_eq!(policy.backoff(2), Duration::from_secs(1));
/// assert_eq!(HttpRetry::none().max_retries, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpRetry {
    /// Retries after the first attempt (default 2).
    pub max_retries: u32,
    /// The first wait when the provider did not say (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest computed wait (default 8 s).
    pub max_backoff: Duration,
    /// The longest wait the provider may ask for (default 60 s).
    pub max_retry_after: Duration,
}

impl Default for HttpRetry {
    fn default() -> Self {
        HttpRetry {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl HttpRetry {
    /// No retries.
    pub fn none() -> Self {
        HttpRetry { max_retries: 0, ..HttpRetry::default() }
    }

    /// Sets [`max_retries`](Self::max_retries).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets [`initial_backoff`](Self::initial_backoff).
    #[must_use]
    pub fn initial_backoff(mut self, wait: Duration) -> Self {
        self.initial_backoff = wait;
        self
    }

    /// Sets [`max_backoff`](Self::max_backoff).
    #[must_use]
    pub fn max_backoff(mut self, wait: Duration) -> Self {
        self.max_backoff = wait;
        self
    }

    /// Sets [`max_retry_after`](Self::max_retry_after).
    #[must_use]
    pub fn max_retry_after(mut self, wait: Duration) -> Self {
        self.max_retry_after = wait;
        self
    }

    /// The computed wait before retry `attempt` (from 0).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.initial_backoff.saturating_mul(factor).min(self.max_backoff)
    }

    /// The wait before retrying after `error` on attempt `attempt` (from 0), or `None`
    /// when it must not be retried.
    pub(crate) fn wait_before_retry(&self, error: &ChatModelError, attempt: u32) -> Option<Duration> {
        if attempt >= self.max_retries || !error.is_retryable() {
            return None;
        }
        match error.retry_after() {
            Some(asked) if asked > self.max_retry_after => None,
            Some(asked) => Some(asked),
            None => Some(self.backoff(attempt)),
        }
    }
}

/// Gemini's wait: the `retryDelay` (`"13s"`, `"1.5s"`) of a `google.rpc.RetryInfo` in
/// `error.details`.
pub(crate) fn retry_after_from_body(body: &Value) -> Option<Duration> {
    let details = body.get("error")?.get("details")?.as_array()?;
    details.iter().find_map(|detail| {
        let kind = detail.get("@type")?.as_str()?;
        if !kind.ends_with("google.rpc.RetryInfo") {
            return None;
        }
        let delay = detail.get("retryDelay")?.as_str()?;
        let seconds = delay.strip_suffix('s')?.parse::<f64>().ok()?;
        if seconds.is_finite() && seconds >= 0.0 { Duration::try_from_secs_f64(seconds).ok() } else { None }
    })
}

/// The error type and message of a provider's error body: `{"error": {"message", "type"
/// | "status" | "code"}}` (OpenAI, Gemini) or `{"type": "error", "error": {…}}`
/// (Anthropic). A body of another shape gives its start as the message.
pub(crate) fn error_details(body_text: &str, parsed: Option<&Value>) -> (Option<String>, String) {
    let error = parsed.and_then(|body| body.get("error"));
    if let Some(error) = error {
        let message = match error.get("message") {
            Some(Value::String(message)) => message.clone(),
            _ if error.is_string() => error.as_str().unwrap_or_default().to_owned(),
            _ => truncate(body_text),
        };
        let kind = ["type", "status", "code"].iter().find_map(|key| match error.get(*key) {
            Some(Value::String(kind)) if !kind.is_empty() => Some(kind.clone()),
            Some(Value::Number(code)) if *key == "code" => Some(code.to_string()),
            _ => None,
        });
        return (kind, message);
    }
    (None, truncate(body_text))
}

/// At most 1000 characters of an error body (which may be a whole HTML page).
fn truncate(text: &str) -> String {
    const LIMIT: usize = 1000;
    let text = text.trim();
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", text.get(..end).unwrap_or_default()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::SystemTime;

    fn now() -> SystemTime {
        httpdate::parse_http_date("Sun, 22 Nov 2026 10:00:00 GMT").unwrap()
    }

    #[test]
    fn retry_after_headers_in_every_form() {
        assert_eq!(
            retry_after_from_headers(Some("1500"), Some("9"), now()),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(retry_after_from_headers(None, Some("7"), now()), Some(Duration::from_secs(7)));
        assert_eq!(retry_after_from_headers(None, Some(" 0.25 "), now()), Some(Duration::from_millis(250)));
        assert_eq!(
            retry_after_from_headers(None, Some("Sun, 22 Nov 2026 10:00:30 GMT"), now()),
            Some(Duration::from_secs(30))
        );
        // A date in the past means "now".
        assert_eq!(
            retry_after_from_headers(None, Some("Sun, 22 Nov 2026 09:00:00 GMT"), now()),
            Some(Duration::ZERO)
        );
        // Nonsense is ignored, and a bad `retry-after-ms` falls back to `Retry-After`.
        assert_eq!(retry_after_from_headers(None, Some("soon"), now()), None);
        assert_eq!(retry_after_from_headers(None, Some("-3"), now()), None);
        assert_eq!(retry_after_from_headers(None, Some("1e400"), now()), None);
        assert_eq!(retry_after_from_headers(Some("NaN"), Some("2"), now()), Some(Duration::from_secs(2)));
        assert_eq!(retry_after_from_headers(None, None, now()), None);
    }

    #[test]
    fn gemini_retry_info() {
        let body = json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13.5s"}
        ]}});
        assert_eq!(retry_after_from_body(&body), Some(Duration::from_millis(13_500)));
        assert_eq!(retry_after_from_body(&json!({"error": {"details": [{"@type": "x.RetryInfo"}]}})), None);
        assert_eq!(retry_after_from_body(&json!({"error": {"message": "no"}})), None);
    }

    #[test]
    fn error_bodies_of_each_provider() {
        let openai = json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}});
        assert_eq!(error_details("", Some(&openai)), (Some("requests".into()), "Rate limit reached".into()));
        let anthropic =
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert_eq!(
            error_details("", Some(&anthropic)),
            (Some("overloaded_error".into()), "Overloaded".into())
        );
        let gemini = json!({"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}});
        assert_eq!(error_details("", Some(&gemini)), (Some("RESOURCE_EXHAUSTED".into()), "Quota".into()));
        let numeric = json!({"error": {"code": 503, "message": "down"}});
        assert_eq!(error_details("", Some(&numeric)), (Some("503".into()), "down".into()));
        let plain = json!({"error": "bad key"});
        assert_eq!(error_details("", Some(&plain)), (None, "bad key".into()));
        let html = format!("<html>{}</html>", "x".repeat(5000));
        let (kind, message) = error_details(&html, None);
        assert_eq!(kind, None);
        assert_eq!(message.chars().count(), 1001);
        assert!(message.ends_with('…'));
    }

    #[test]
    fn policy_waits() {
        let policy = HttpRetry::default();
        let busy = |after: Option<u64>| ChatModelError::Status {
            status: 429,
            kind: None,
            message: String::new(),
            retry_after: after.map(Duration::from_secs),
        };
        assert_eq!(policy.wait_before_retry(&busy(None), 0), Some(Duration::from_millis(500)));
        assert_eq!(policy.wait_before_retry(&busy(None), 1), Some(Duration::from_secs(1)));
        assert_eq!(policy.wait_before_retry(&busy(Some(3)), 0), Some(Duration::from_secs(3)));
        assert_eq!(policy.wait_before_retry(&busy(Some(60)), 0), Some(Duration::from_secs(60)));
        assert_eq!(policy.wait_before_retry(&busy(Some(61)), 0), None, "longer than max_retry_after");
        assert_eq!(policy.wait_before_retry(&busy(None), 2), None, "retries used up");
        assert_eq!(policy.wait_before_retry(&ChatModelError::other("no"), 0), None, "not retryable");
        assert_eq!(policy.backoff(10), Duration::from_secs(8));
        assert_eq!(policy.backoff(u32::MAX), Duration::from_secs(8));
        assert_eq!(HttpRetry::none().wait_before_retry(&busy(None), 0), None);
    }
}
