//! (in progress)
use crate::ToolDefinition;
/// Language of the built-in templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Language {
    /// English.
    #[default]
    En,
    /// Chinese.
    Zh,
}
/// Templates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VcpTemplates {}
impl VcpTemplates {
    /// Built-in templates for `language`.
    pub fn for_language(_language: Language) -> Self {
        Self {}
    }
}
pub(crate) fn generate(_tools: &[ToolDefinition], _t: &VcpTemplates) -> String {
    String::new()
}
