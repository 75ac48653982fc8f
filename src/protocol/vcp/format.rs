//! (in progress)
use crate::ToolExecutionResult;
/// Why a request could not be formatted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// placeholder
    #[error("x")]
    X,
}
/// Neutralises markers.
pub fn neutralize_markers(text: &str) -> String {
    text.to_string()
}
pub(crate) fn format_request<'a, I, K, V>(_tool_name: &str, _args: I) -> Result<String, FormatError>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str> + 'a,
    V: AsRef<str> + 'a,
{
    Ok(String::new())
}
pub(crate) fn format_results(_results: &[ToolExecutionResult]) -> String {
    String::new()
}
