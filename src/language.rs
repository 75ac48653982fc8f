//! The language of what the model reads, and the one way sentence templates are filled.
//!
//! Everything this crate writes for a model to read (the VCP definitions prompt, VCP's
//! notes on damaged requests and unknown tool names, the executor's and the engine's
//! error results) comes from a template set with a built-in English and Chinese
//! version: [`VcpTemplates`](crate::protocol::vcp::VcpTemplates) for the VCP protocol,
//! and, with the `runtime` feature, `ExecutorMessages` for the executor. Templates
//! name their blanks in braces, such as `{method}`; each template's documentation lists
//! the blanks it may use.

/// The language of a built-in template set.
///
/// ```
/// use tool_calling::Language;
/// use tool_calling::protocol::vcp::VcpTemplates;
///
/// let zh = VcpTemplates::for_language(Language::Zh);
/// assert_eq!(zh.required, "必填");
/// assert_eq!(Language::default(), Language::En);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Language {
    /// English (the default).
    #[default]
    En,
    /// Chinese.
    Zh,
}

/// `template` with each `{name}` of `values` replaced by its value, in one pass: values
/// are inserted as they are (braces in a value are never expanded), and a `{…}` that
/// names no value is kept as written.
pub(crate) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let (before, from_open) = rest.split_at(open);
        out.push_str(before);
        let blank = from_open
            .get(1..)
            .and_then(|after| after.find('}').map(|close| (after.get(..close), close)))
            .and_then(|(name, close)| {
                let name = name?;
                values.iter().find(|(n, _)| *n == name).map(|(_, value)| (*value, close + 2))
            });
        match blank {
            Some((value, len)) => {
                out.push_str(value);
                rest = from_open.get(len..).unwrap_or("");
            }
            None => {
                out.push('{');
                rest = from_open.get(1..).unwrap_or("");
            }
        }
    }
    out.push_str(rest);
    out
}

/// `` `a` ``, `` `a` or `b` ``, `` `a`, `b` or `c` `` (with the template's words for
/// the separators).
pub(crate) fn quoted_list(names: &[String], separator: &str, last_separator: &str) -> String {
    let mut out = String::new();
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == names.len() { last_separator } else { separator });
        }
        out.push('`');
        out.push_str(name);
        out.push('`');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_named_blanks_once() {
        assert_eq!(fill("`{method}` took {ms} ms", &[("method", "a_b"), ("ms", "5")]), "`a_b` took 5 ms");
        // A value holding a blank's name is not expanded again.
        assert_eq!(fill("{a}{b}", &[("a", "{b}"), ("b", "x")]), "{b}x");
        // Unknown and unclosed blanks stay as written.
        assert_eq!(fill("{nope} {a", &[("a", "1")]), "{nope} {a");
        assert_eq!(fill("{}{", &[]), "{}{");
        assert_eq!(fill("「始」{key}「末」", &[("key", "值")]), "「始」值「末」");
    }

    #[test]
    fn quoted_lists() {
        let names = |n: &[&str]| n.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        assert_eq!(quoted_list(&names(&[]), ", ", " or "), "");
        assert_eq!(quoted_list(&names(&["a"]), ", ", " or "), "`a`");
        assert_eq!(quoted_list(&names(&["a", "b"]), ", ", " or "), "`a` or `b`");
        assert_eq!(quoted_list(&names(&["a", "b", "c"]), "、", " 或 "), "`a`、`b` 或 `c`");
    }
}
