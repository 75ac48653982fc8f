//! What the HTTP model clients and the REST tools share.

use std::time::{Duration, SystemTime};

/// How long the response headers ask to wait: `retry-after-ms` (OpenAI), else
/// `Retry-After` as seconds or as an HTTP date (relative to `now`).
pub(crate) fn retry_after_from_headers(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = retry_after?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return if seconds.is_finite() && seconds >= 0.0 {
            Duration::try_from_secs_f64(seconds).ok()
        } else {
            None
        };
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// `error` and its sources, joined with `: ` (what actually failed: connection refused,
/// reset, …).
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
