//! Calls written as an element with a `name` attribute (`<invoke name="…">`,
//! `<function name="…">`) whose content holds the arguments: the element and its
//! attributes, read for `minimax_m3` and `minicpm5`.

use super::values::decode_entities;
use crate::protocol::textfmt::driver::RawCall;

/// The call of a region that is an element `<TAG name="…">…</TAG>` (`tag`, closed by
/// `end`; `cut`: it ended without it), its head from `head_at` to the first `>`: the name
/// and what `read_body` reads from the content.
pub(crate) fn read_element(
    region: &str,
    head_at: usize,
    tag: &str,
    end: &str,
    cut: bool,
    read_body: fn(&str, &mut RawCall) -> Result<(), String>,
) -> RawCall {
    let span = 0..region.len();
    let Some(head_end) = region.get(head_at..).and_then(|rest| rest.find('>')).map(|at| at + head_at) else {
        return RawCall::broken(span, "", format!("the <{tag}> tag is not closed with `>`"));
    };
    let head = region.get(head_at..head_end).unwrap_or_default();
    let name = attribute(head, "name").unwrap_or_default();
    let mut call = RawCall { span, name, ..RawCall::default() };
    if call.name.is_empty() {
        call.problems.push(format!("the <{tag}> has no name attribute: write <{tag} name=\"…\">"));
    }
    if cut {
        call.problems.push(format!("the <{tag}> is not closed with {end}"));
    }
    let body = region.get(head_end + 1..).unwrap_or_default();
    let body = body.strip_suffix(end).unwrap_or(body);
    if let Err(problem) = read_body(body, &mut call) {
        call.problems.push(problem);
    }
    call
}

/// The value of attribute `name` (in double or single quotes, or bare) in a tag's text.
pub(crate) fn attribute(tag: &str, name: &str) -> Option<String> {
    let mut rest = tag;
    while let Some(at) = rest.find(name) {
        let boundary = at == 0 || rest.as_bytes().get(at - 1).is_some_and(u8::is_ascii_whitespace);
        let after = rest.get(at + name.len()..).unwrap_or_default();
        if boundary && let Some(value) = after.trim_start().strip_prefix('=') {
            let value = value.trim_start();
            let quote = value.chars().next()?;
            if quote == '"' || quote == '\'' {
                let inner = value.get(1..)?;
                let end = inner.find(quote)?;
                return Some(decode_entities(inner.get(..end)?).trim().to_string());
            }
            let end = value.find(|c: char| c.is_whitespace() || c == '/').unwrap_or(value.len());
            return Some(value.get(..end)?.to_string());
        }
        rest = after;
    }
    None
}
