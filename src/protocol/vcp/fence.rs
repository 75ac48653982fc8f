//! Backtick code fences, for `skip_fenced` (spec §3).
//!
//! Lines end at `\n` (a `\r` before it is ignored). A fence opens at a line of up to 3
//! spaces and 3 or more backticks, optionally followed by an info string without
//! backticks, and closes at a line of up to 3 spaces and at least as many backticks,
//! then only spaces or tabs. An unclosed fence runs to the end. The opening and closing
//! lines belong to the fence.

use memchr::memchr;

/// The fenced ranges of a text, ascending.
#[derive(Debug, Default)]
pub(crate) struct Fences {
    ranges: Vec<(usize, usize)>,
}

/// Up to three leading spaces, then the run of backticks: its length.
fn backtick_run(line: &str) -> (usize, &str) {
    let indent = line.bytes().take(4).take_while(|&b| b == b' ').count();
    if indent > 3 {
        return (0, line);
    }
    let rest = line.get(indent..).unwrap_or("");
    let ticks = rest.bytes().take_while(|&b| b == b'`').count();
    (ticks, rest.get(ticks..).unwrap_or(""))
}

fn opening(line: &str) -> Option<usize> {
    let (ticks, info) = backtick_run(line);
    (ticks >= 3 && !info.contains('`')).then_some(ticks)
}

fn closes(line: &str, open_ticks: usize) -> bool {
    let (ticks, rest) = backtick_run(line);
    ticks >= open_ticks && rest.bytes().all(|b| b == b' ' || b == b'\t')
}

impl Fences {
    /// Finds the fences in `text`: one pass over its lines.
    pub(crate) fn find(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut ranges = Vec::new();
        let mut open: Option<(usize, usize)> = None;
        let mut line_start = 0;
        loop {
            let line_end = bytes.get(line_start..).and_then(|b| memchr(b'\n', b)).map(|i| line_start + i);
            let end = line_end.unwrap_or(text.len());
            let raw = text.get(line_start..end).unwrap_or("");
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            match open {
                Some((start, ticks)) => {
                    if closes(line, ticks) {
                        ranges.push((start, end));
                        open = None;
                    }
                }
                None => open = opening(line).map(|ticks| (line_start, ticks)),
            }
            match line_end {
                Some(nl) => line_start = nl + 1,
                None => break,
            }
        }
        if let Some((start, _)) = open {
            ranges.push((start, text.len()));
        }
        Fences { ranges }
    }

    /// Whether byte `pos` stands inside a fence (its opening or closing line included).
    pub(crate) fn contains(&self, pos: usize) -> bool {
        let i = self.ranges.partition_point(|&(start, _)| start <= pos);
        i.checked_sub(1).and_then(|i| self.ranges.get(i)).is_some_and(|&(_, end)| pos < end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fences() {
        let t = "a\n```rust\nX\n```\nY\n   ````\nZ\n```\nW\n````  \nV";
        let f = Fences::find(t);
        assert!(f.contains(t.find('X').unwrap()));
        assert!(!f.contains(t.find('Y').unwrap()));
        assert!(f.contains(t.find('Z').unwrap()));
        assert!(f.contains(t.find('W').unwrap()));
        assert!(!f.contains(t.find('V').unwrap()));
    }

    #[test]
    fn not_fences() {
        for t in ["    ```\nX", "~~~\nX", "``\nX", "```a`b\nX"] {
            assert!(!Fences::find(t).contains(t.find('X').unwrap()), "{t:?}");
        }
        let unclosed = "```\nX\n``` no\nY";
        assert!(Fences::find(unclosed).contains(unclosed.find('Y').unwrap()));
        let crlf = "```\r\nX\r\n```\r\nY";
        assert!(!Fences::find(crlf).contains(crlf.find('Y').unwrap()));
    }
}
