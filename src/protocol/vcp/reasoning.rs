//! Finding reasoning (`<think>` … `</think>`) to cut out before parsing (spec §3).
//!
//! A tag is `<\s*/?\s*think(ing)?\b[^>]*>` with ASCII `\s` and `\b`, any case. Opening
//! and closing tags pair by depth only; a tag ending in `/>` hides only itself; an
//! unpaired closing tag hides only itself; an unclosed opening tag hides the rest.

use memchr::memchr;
use nom::bytes::complete::{tag_no_case, take_while};
use nom::character::complete::char;
use nom::combinator::opt;
use nom::{IResult, Parser};

/// What one tag does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TagKind {
    Open,
    Close,
    SelfClosing,
}

fn ascii_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{0B}' | '\u{0C}')
}

fn ascii_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `<\s*/?\s*think(ing)?\b`: the head of a tag, up to the word boundary. Returns whether
/// it is a closing tag.
fn tag_head(input: &str) -> IResult<&str, bool> {
    let (rest, (_, _, slash, _, _, _)) = (
        char('<'),
        take_while(ascii_space),
        opt(char('/')),
        take_while(ascii_space),
        tag_no_case("think"),
        opt(tag_no_case("ing")),
    )
        .parse(input)?;
    if rest.chars().next().is_some_and(ascii_word) {
        return Err(nom::Err::Error(nom::error::Error::new(rest, nom::error::ErrorKind::Tag)));
    }
    Ok((rest, slash.is_some()))
}

/// A cheap filter before the full tag parser: after `<`, white space and `/`, the next
/// byte must be `t` or `T`. Markers (`<<<[`) and most prose `<` fail here at once.
fn could_be_tag(after_lt: &[u8]) -> bool {
    after_lt
        .iter()
        .skip(1)
        .find(|&&b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C | b'/'))
        .is_some_and(|&b| b == b't' || b == b'T')
}

/// What [`find_hidden`] found.
#[derive(Debug, Default)]
pub(crate) struct Reasoning {
    /// Byte ranges to cut out, ascending and disjoint.
    pub(crate) hidden: Vec<(usize, usize)>,
    /// The opening tag that was never closed, if any.
    pub(crate) unclosed: Option<(usize, usize)>,
}

/// Finds the reasoning in `text`. Linear: every `<` is looked at once, and the search
/// for a tag's closing `>` is shared between candidates.
pub(crate) fn find_hidden(text: &str) -> Reasoning {
    let bytes = text.as_bytes();
    let mut out = Reasoning::default();
    let mut depth = 0usize;
    let mut region_start = 0usize;
    let mut outermost: Option<(usize, usize)> = None;
    // `gt_cache = (from, found)`: `found` is the first `>` at or after `from`.
    let mut gt_cache: Option<(usize, Option<usize>)> = None;
    let mut pos = 0usize;
    while let Some(lt) = bytes.get(pos..).and_then(|b| memchr(b'<', b)).map(|i| pos + i) {
        pos = lt + 1;
        let Some(rest_of_text) = text.get(lt..) else { break };
        if !could_be_tag(rest_of_text.as_bytes()) {
            continue;
        }
        let Ok((after_head, closing)) = tag_head(rest_of_text) else { continue };
        let head_end = text.len() - after_head.len();
        // `[^>]*>`: the first `>` at or after the head's end. A cached answer serves
        // while it lies ahead, so the text is searched for `>` once in all.
        let next_gt = match gt_cache {
            Some((from, found)) if from <= head_end && found.is_none_or(|g| g >= head_end) => found,
            _ => {
                let found = bytes.get(head_end..).and_then(|b| memchr(b'>', b)).map(|i| head_end + i);
                gt_cache = Some((head_end, found));
                found
            }
        };
        let Some(gt) = next_gt else { break };
        let end = gt + 1;
        let kind = if gt.checked_sub(1).and_then(|i| bytes.get(i)) == Some(&b'/') {
            TagKind::SelfClosing
        } else if closing {
            TagKind::Close
        } else {
            TagKind::Open
        };
        match kind {
            TagKind::SelfClosing => {
                if depth == 0 {
                    out.hidden.push((lt, end));
                }
            }
            TagKind::Open => {
                if depth == 0 {
                    region_start = lt;
                    outermost = Some((lt, end));
                }
                depth += 1;
            }
            TagKind::Close => {
                if depth == 0 {
                    out.hidden.push((lt, end));
                } else {
                    depth -= 1;
                    if depth == 0 {
                        out.hidden.push((region_start, end));
                    }
                }
            }
        }
        pos = end;
    }
    if depth > 0 {
        out.hidden.push((region_start, text.len()));
        out.unclosed = outermost;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> String {
        let r = find_hidden(text);
        let mut out = String::new();
        let mut from = 0;
        for (s, e) in r.hidden {
            out.push_str(&text[from..s]);
            from = e;
        }
        out.push_str(&text[from..]);
        out
    }

    #[test]
    fn tags() {
        assert_eq!(cut("a<think>x</think>b"), "ab");
        assert_eq!(cut("a< / THINKING >x"), "ax");
        assert_eq!(cut("a<Thinking mode=\"x\">y</THINK>b"), "ab");
        assert_eq!(cut("a<thinker>b"), "a<thinker>b");
        assert_eq!(cut("a<think_x>b"), "a<think_x>b");
        assert_eq!(cut("a<think-x>b</think>c"), "ac");
        assert_eq!(cut("a<think/>b"), "ab");
        assert_eq!(cut("a<think />b"), "ab");
        assert_eq!(cut("a</think>b"), "ab");
        assert_eq!(cut("a<think><think>x</think>y"), "a");
        assert_eq!(cut("a<think><think>x</think>y</thinking>z"), "az");
        assert_eq!(cut("a<think"), "a<think");
        assert_eq!(cut("a<think <think>b</think>c"), "ac");
    }

    #[test]
    fn unclosed_reports_the_outermost_tag() {
        let r = find_hidden("x<think>a<think>b</think>");
        assert_eq!(r.unclosed, Some((1, 8)));
        assert_eq!(r.hidden, vec![(1, 25)]);
    }

    #[test]
    fn many_candidates_without_closing_bracket_is_linear() {
        let text = "<think ".repeat(100_000);
        let r = find_hidden(&text);
        assert!(r.hidden.is_empty());
    }
}
