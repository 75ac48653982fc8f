//! (in progress)
use super::VcpOptions;
use crate::ParseOutcome;
pub(crate) fn parse(_text: &str, _options: &VcpOptions) -> ParseOutcome {
    ParseOutcome::default()
}
