//! Tool names as providers accept them, mapped reversibly.
//!
//! This crate names methods `toolId_methodName`, and tool ids may hold characters a
//! provider refuses (OpenAI and Anthropic take `^[a-zA-Z0-9_-]{1,64}$`; Gemini takes
//! letters, digits, `_`, `.`, `:` and `-`, starting with a letter or `_`, at most 64). A
//! name that fits is sent as it is. One that does not is sent with every refused
//! character replaced by `_`, cut to fit, and ended with 8 hex digits of a hash of the
//! whole name, so that different names stay different; [`resolve_wire_name`] maps it
//! back by computing the same for each registered method.

use std::borrow::Cow;

use crate::tools::ToolCatalog;

/// Which characters and length a provider allows in a tool's name.
///
/// ```
/// use tool_calling::protocol::native::NameRule;
/// assert!(NameRule::Strict.fits("calc_add"));
/// assert!(!NameRule::Strict.fits("files.read"), "no dots for OpenAI or Anthropic");
/// assert!(NameRule::Gemini.fits("files.read"));
/// assert!(!NameRule::Gemini.fits("9lives"), "Gemini names start with a letter or `_`");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NameRule {
    /// `^[a-zA-Z0-9_-]{1,64}$` (OpenAI Chat Completions and Responses, Anthropic).
    Strict,
    /// `^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$` (Gemini).
    Gemini,
}

/// The longest name any provider takes.
const MAX_LEN: usize = 64;

impl NameRule {
    fn allows(self, c: char, first: bool) -> bool {
        match self {
            NameRule::Strict => c.is_ascii_alphanumeric() || c == '_' || c == '-',
            NameRule::Gemini if first => c.is_ascii_alphabetic() || c == '_',
            NameRule::Gemini => c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'),
        }
    }

    /// Whether `name` is acceptable as it is.
    pub fn fits(self, name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_LEN
            && name.chars().enumerate().all(|(i, c)| self.allows(c, i == 0))
    }
}

/// FNV-1a, 64 bits: a small stable hash (names must map the same way in every process).
fn fnv1a(text: &str) -> u64 {
    text.bytes()
        .fold(0xcbf2_9ce4_8422_2325, |hash, b| (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The name `full_name` is sent under to a provider with `rule`.
///
/// ```
/// use tool_calling::protocol::native::{NameRule, wire_name};
/// assert_eq!(wire_name("calc_add", NameRule::Strict), "calc_add");
/// let mapped = wire_name("files.v2_read", NameRule::Strict);
/// assert!(mapped.starts_with("files_v2_read_") && NameRule::Strict.fits(&mapped));
/// assert_eq!(wire_name("files.v2_read", NameRule::Gemini), "files.v2_read");
/// ```
pub fn wire_name(full_name: &str, rule: NameRule) -> Cow<'_, str> {
    if rule.fits(full_name) {
        return Cow::Borrowed(full_name);
    }
    let suffix = format!("_{:08x}", fnv1a(full_name) & 0xffff_ffff);
    let mut name: String = full_name
        .chars()
        .enumerate()
        .map(|(i, c)| if rule.allows(c, i == 0) { c } else { '_' })
        .take(MAX_LEN - suffix.len())
        .collect();
    name.push_str(&suffix);
    Cow::Owned(name)
}

/// The registered method a provider's name stands for: the name itself when a method
/// has it, else the method whose [`wire_name`] under `rule` it is.
pub fn resolve_wire_name(name: &str, catalog: &ToolCatalog, rule: NameRule) -> Option<String> {
    if catalog.method(name).is_some() {
        return Some(name.to_string());
    }
    catalog.tools().iter().find_map(|tool| {
        tool.methods.iter().map(|m| tool.full_name(m)).find(|full| wire_name(full, rule) == name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_fit_are_kept_and_others_mapped_within_the_rule() {
        assert!(NameRule::Strict.fits("calc_add-2"));
        assert!(!NameRule::Strict.fits("calc.add"));
        assert!(!NameRule::Strict.fits(""));
        assert!(!NameRule::Gemini.fits("9lives"));
        let long = "t".repeat(80);
        for rule in [NameRule::Strict, NameRule::Gemini] {
            for name in ["a b", "日本_語", "9lives", long.as_str(), "x/y\\z"] {
                let mapped = wire_name(name, rule);
                assert!(rule.fits(&mapped), "{rule:?} {name} -> {mapped}");
            }
        }
        assert_ne!(wire_name("a.b", NameRule::Strict), wire_name("a:b", NameRule::Strict));
    }
}
