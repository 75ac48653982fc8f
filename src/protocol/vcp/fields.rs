//! A field: `KEY SEP VALUE-OPEN value VALUE-CLOSE`. Its head (key, separator, value
//! opener) is read a byte at a time; its value's closer is found with `memchr` searches;
//! its value is normalised. Each reader says when the text so far does not decide yet,
//! so that the scanner can stop and resume.

use std::borrow::Cow;

use memchr::memmem;

use super::markers::{could_become, floor_boundary, strip_prefix_ignore_ascii_case};
use super::visible::VisibleText;

/// The three kinds of value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ValueKind {
    /// `「始」…「末」`
    Plain,
    /// `「始ESCAPE」…「末ESCAPE」`: markers inside are content.
    Escaped,
    /// `「始exp」…「末exp」`: documentation; its block is an example.
    Doc,
}

/// The UTF-8 bytes of `末`, the character every value closer has.
const CLOSER_CHAR: &[u8] = "末".as_bytes();

/// Its first byte, which `memchr` looks for.
pub(super) const CLOSER_LEAD: u8 = match CLOSER_CHAR.first() {
    Some(&b) => b,
    None => 0,
};

/// Characters that can never be part of a key.
fn is_key_char(c: char) -> bool {
    !(c.is_whitespace() || matches!(c, ':' | '：' | ',' | '「' | '」'))
}

/// White space as `char::is_whitespace` sees it, for an ASCII byte.
fn ascii_white(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

/// The length of the key `input` begins with: its key characters (0: none). Keys are
/// nearly always ASCII, which is read a byte at a time; the first non-ASCII byte hands
/// over to a char-by-char reader.
fn key_len(input: &str) -> usize {
    let ascii =
        input.bytes().take_while(|&b| b.is_ascii() && !(ascii_white(b) || b == b':' || b == b',')).count();
    match input.as_bytes().get(ascii) {
        Some(b) if !b.is_ascii() => {
            let rest = input.get(ascii..).unwrap_or_default();
            ascii + rest.find(|c| !is_key_char(c)).unwrap_or(rest.len())
        }
        _ => ascii,
    }
}

/// The separator `input` begins with, spaces or tabs then `:` or `：`: its length, or
/// (`Err`) how many spaces and tabs lead to something else.
fn separator_len(input: &str) -> Result<usize, usize> {
    let bytes = input.as_bytes();
    let mut at = 0;
    loop {
        match bytes.get(at..) {
            Some([b':', ..]) => return Ok(at + 1),
            Some([0xEF, 0xBC, 0x9A, ..]) => return Ok(at + '：'.len_utf8()),
            Some([b' ' | b'\t', ..]) => at += 1,
            _ => return Err(at),
        }
    }
}

/// The length of `[「{]` MARK WORD `[」}]` at the start of `input` (WORD in any ASCII
/// case): an escaped opener or closer (`始` or `末`, then `ESCAPE`), or a fuzzy opener.
pub(super) fn bracketed_word(input: &str, mark: char, word: &str) -> Option<usize> {
    let rest = input.strip_prefix('「').or_else(|| input.strip_prefix('{'))?;
    let rest = strip_prefix_ignore_ascii_case(rest.strip_prefix(mark)?, word)?;
    let rest = rest.strip_prefix('」').or_else(|| rest.strip_prefix('}'))?;
    Some(input.len() - rest.len())
}

/// The length of an escaped value opener, `[「{]始ESCAPE[」}]` (ESCAPE in any case), at
/// the start of `input`.
fn escaped_opener(input: &str) -> Option<usize> {
    bracketed_word(input, '始', "ESCAPE")
}

/// The usual field head after its key: a `:` right before a plain value opener.
const PLAIN_HEAD: &str = ":「始」";

/// The value opener `input` begins with: `「始」`, escaped, documentation, or (with
/// `fuzzy`) a plain one with `{`/`}` for either bracket; its kind and length.
fn opener(input: &str, fuzzy: bool) -> Option<(ValueKind, usize)> {
    const PLAIN: &str = "「始」";
    const DOC: &str = "「始exp」";
    if input.starts_with(PLAIN) {
        Some((ValueKind::Plain, PLAIN.len()))
    } else if let Some(len) = escaped_opener(input) {
        Some((ValueKind::Escaped, len))
    } else if input.starts_with(DOC) {
        Some((ValueKind::Doc, DOC.len()))
    } else if fuzzy {
        bracketed_word(input, '始', "").map(|len| (ValueKind::Plain, len))
    } else {
        None
    }
}

/// `\r\n` → `\n`, then surrounding white space trimmed; escaped values also get their
/// escaped literals restored (`<<<[TOOL_REQUEST_ESCAPE]>>>` → `<<<[TOOL_REQUEST]>>>`,
/// likewise END, and escaped openers → `「始」`). Borrowed text stays borrowed unless
/// one of those changes applies. With `cr_free`, `raw` is known to hold no `\r` (its
/// whole text has none), and is not searched for one.
pub(super) fn normalize<'a>(raw: Cow<'a, str>, kind: ValueKind, cr_free: bool) -> Cow<'a, str> {
    let may_hold_cr = |text: &str| !cr_free && has_cr(text.as_bytes());
    // The usual value: borrowed, not escaped, no `\r`: only trimmed.
    let raw = match raw {
        Cow::Borrowed(text) if kind != ValueKind::Escaped && !may_hold_cr(text) => {
            return Cow::Borrowed(trim(text));
        }
        raw => raw,
    };
    let raw = if kind == ValueKind::Escaped && (raw.contains("_ESCAPE]>>>") || raw.contains('始')) {
        Cow::Owned(restore_escaped(&raw))
    } else {
        raw
    };
    if may_hold_cr(&raw) && raw.contains("\r\n") {
        return Cow::Owned(raw.replace("\r\n", "\n").trim().to_string());
    }
    match raw {
        Cow::Borrowed(text) => Cow::Borrowed(trim(text)),
        Cow::Owned(text) if trim(&text).len() == text.len() => Cow::Owned(text),
        Cow::Owned(text) => Cow::Owned(trim(&text).to_string()),
    }
}

/// Whether `bytes` holds a `\r`: the standard library's search for the short values most fields have
/// (a `memchr` call costs more to set up than it saves there).
fn has_cr(bytes: &[u8]) -> bool {
    if bytes.len() <= 32 { bytes.contains(&b'\r') } else { memchr::memchr(b'\r', bytes).is_some() }
}

/// `str::trim`, with ASCII ends checked a byte at a time first.
fn trim(text: &str) -> &str {
    let bytes = text.as_bytes();
    let plain_end = |b: Option<&u8>| b.is_some_and(|&b| b.is_ascii() && !ascii_white(b));
    if plain_end(bytes.first()) && plain_end(bytes.last()) {
        // The usual value: nothing to trim.
        return text;
    }
    let start = bytes.iter().take_while(|&&b| ascii_white(b)).count();
    let end = bytes.len() - bytes.iter().rev().take_while(|&&b| ascii_white(b)).count();
    let inner = text.get(start..end.max(start)).unwrap_or_default();
    let ends_ascii = |b: Option<&u8>| b.is_none_or(u8::is_ascii);
    if ends_ascii(inner.as_bytes().first()) && ends_ascii(inner.as_bytes().last()) {
        inner
    } else {
        inner.trim()
    }
}

/// Restores `<<<[TOOL_REQUEST_ESCAPE]>>>`, `<<<[END_TOOL_REQUEST_ESCAPE]>>>` and escaped
/// openers (written back as `「始」`) inside an escaped value.
fn restore_escaped(raw: &str) -> String {
    const FORMS: [(&str, &str); 2] = [
        ("<<<[TOOL_REQUEST_ESCAPE]>>>", "<<<[TOOL_REQUEST]>>>"),
        ("<<<[END_TOOL_REQUEST_ESCAPE]>>>", "<<<[END_TOOL_REQUEST]>>>"),
    ];
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    'scan: while let Some((i, c)) = rest.char_indices().find(|&(_, c)| matches!(c, '<' | '「' | '{')) {
        let (before, at) = rest.split_at(i);
        out.push_str(before);
        if c == '<' {
            for (escaped, plain) in FORMS {
                if let Some(after) = at.strip_prefix(escaped) {
                    out.push_str(plain);
                    rest = after;
                    continue 'scan;
                }
            }
        } else if let Some(len) = escaped_opener(at) {
            out.push_str("「始」");
            rest = at.get(len..).unwrap_or("");
            continue 'scan;
        }
        out.push(c);
        rest = at.get(c.len_utf8()..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// One field of a block. Offsets are into the cleaned text.
#[derive(Debug)]
pub(super) struct Field {
    pub(super) key: (usize, usize),
    pub(super) start: usize,
    pub(super) end: usize,
    /// The raw value (before [`normalize`]), closer excluded.
    pub(super) value: (usize, usize),
    pub(super) kind: ValueKind,
    pub(super) closed: bool,
}

/// A field head: its key and where its value begins.
pub(super) struct Head {
    pub(super) key: (usize, usize),
    pub(super) kind: ValueKind,
    pub(super) opener_end: usize,
}

/// What reading a field head gave.
pub(super) enum HeadRead {
    Field(Head),
    /// No field here: scanning resumes at this offset.
    Resume(usize),
    /// The text so far does not decide; the key is read up to `key_end`.
    NeedMore {
        key_end: usize,
    },
}

/// An undecided field head is tried again with every new byte while the text after its
/// key is at most this long, and after that text has doubled beyond: retries stay
/// linear, and a head of ordinary length is decided by the byte that decides it.
pub(super) const SHORT_HEAD_REST: usize = 64;

/// What a value-closer search gave.
pub(super) enum Close {
    /// The closer's range.
    At(usize, usize),
    /// Not decided: search again from this offset when more text has arrived.
    Wait(usize),
    /// There is none: the value is unclosed.
    Absent,
}

/// A closer candidate.
enum Bracket {
    Match(usize, usize),
    No,
    Undecided,
}

/// The longest value opener, `「始ESCAPE」`.
const LONGEST_OPENER: usize = "「始ESCAPE」".len();

/// Skips white space (any) from `from` up to `limit`.
#[inline]
pub(super) fn skip_ws(text: &str, from: usize, limit: usize) -> usize {
    // The usual cases, a key or a value opener right there or after one line break (the
    // next field's key): its first characters looked at, no call, no loop.
    if from < limit && limit <= text.len() {
        let rest = text.as_bytes().get(from..limit).unwrap_or_default();
        let plain = |b: u8| b.is_ascii() && !ascii_white(b);
        match *rest {
            [b, ..] if plain(b) => return from,
            [b'\n', b, ..] if plain(b) => return from + 1,
            [b, ..] if !b.is_ascii() && wide_white(rest) == 0 => return from,
            _ => {}
        }
    }
    skip_ws_from(text, from, limit)
}

/// [`skip_ws`] past its first byte's check.
fn skip_ws_from(text: &str, from: usize, limit: usize) -> usize {
    let Some(rest) = text.as_bytes().get(from..limit) else { return from.max(limit) };
    let mut at = 0;
    while let Some(&b) = rest.get(at) {
        at += match b {
            b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r' => 1,
            b if b.is_ascii() => break,
            _ => match wide_white(rest.get(at..).unwrap_or_default()) {
                0 => break,
                len => len,
            },
        };
    }
    from + at
}

/// The length of the non-ASCII white-space character `bytes` begins with (U+0085,
/// U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000: all that
/// `char::is_whitespace` accepts above ASCII), or 0, read from the bytes without
/// decoding.
fn wide_white(bytes: &[u8]) -> usize {
    match bytes {
        [0xC2, 0x85 | 0xA0, ..] => 2,
        [0xE1, 0x9A, 0x80, ..]
        | [0xE2, 0x80, 0x80..=0x8A | 0xA8 | 0xA9 | 0xAF, ..]
        | [0xE2, 0x81, 0x9F, ..]
        | [0xE3, 0x80, 0x80, ..] => 3,
        _ => 0,
    }
}

/// Offsets of `末` in `from..limit`, in order. Values are short, so a `memchr` for the
/// first byte of `末` (then a check of the rest) beats a substring searcher's set-up.
pub(super) fn closer_chars(text: &str, from: usize, limit: usize) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes().get(..limit).unwrap_or_default();
    let mut at = from;
    std::iter::from_fn(move || {
        while let Some(i) = bytes.get(at..).and_then(|b| memchr::memchr(CLOSER_LEAD, b)) {
            let mid = at + i;
            at = mid + 1;
            if bytes.get(mid..mid + CLOSER_CHAR.len()) == Some(CLOSER_CHAR) {
                at = mid + CLOSER_CHAR.len();
                return Some(mid);
            }
        }
        None
    })
}

/// Reads a field head at `at`, says where to resume scanning, or that the text so
/// far (up to `limit`, which is final when `settled`) does not decide. The text from
/// `at` to `known_key` (when above `at`) is known to be key characters; `fuzzy` accepts the
/// fuzzy value openers.
pub(super) fn read_head(
    src: &VisibleText<'_>,
    at: usize,
    known_key: usize,
    limit: usize,
    settled: bool,
    fuzzy: bool,
) -> HeadRead {
    let text = src.text();
    let key_limit = src.next_break_after(at).map_or(limit, |b| b.min(limit));
    let key_end = if known_key > at && known_key <= key_limit {
        let more = text.get(known_key..key_limit).unwrap_or("");
        known_key + more.find(|c| !is_key_char(c)).unwrap_or(more.len())
    } else {
        match key_len(text.get(at..key_limit).unwrap_or("")) {
            0 => {
                let skip = text.get(at..).and_then(|r| r.chars().next()).map_or(1, char::len_utf8);
                return HeadRead::Resume(at + skip);
            }
            len => at + len,
        }
    };
    if key_end == limit && !settled {
        return HeadRead::NeedMore { key_end };
    }
    let key = (at, key_end);
    // The usual head, `key:「始」`: separator and opener compared at once, with none of
    // the readers below (which would find the same).
    if text.as_bytes().get(key_end..limit).is_some_and(|rest| rest.starts_with(PLAIN_HEAD.as_bytes())) {
        let sep_end = key_end + 1;
        return head(src, key, sep_end, sep_end, (ValueKind::Plain, "「始」".len()));
    }
    // Every suffix of this key fails the same way, so resume after what was read.
    let sep_end = match separator_len(text.get(key_end..limit).unwrap_or("")) {
        Ok(len) => key_end + len,
        Err(blanks) if key_end + blanks == limit && !settled => return HeadRead::NeedMore { key_end },
        Err(_) => return HeadRead::Resume(key_end),
    };
    let opener_at = skip_ws(text, sep_end, limit);
    if opener_at == limit && !settled {
        return HeadRead::NeedMore { key_end };
    }
    match opener(text.get(opener_at..limit).unwrap_or(""), fuzzy) {
        Some(opener) => head(src, key, sep_end, opener_at, opener),
        None if !settled && limit - opener_at < LONGEST_OPENER => HeadRead::NeedMore { key_end },
        None => HeadRead::Resume(sep_end),
    }
}

/// The head of `key` whose value opener (its kind and length) is at `opener_at`, after
/// a separator that ends at `sep_end`; no head when hidden text splits the opener.
fn head(
    src: &VisibleText<'_>,
    key: (usize, usize),
    sep_end: usize,
    opener_at: usize,
    (kind, len): (ValueKind, usize),
) -> HeadRead {
    let opener_end = opener_at + len;
    if src.crosses_break(opener_at, opener_end) {
        return HeadRead::Resume(sep_end);
    }
    HeadRead::Field(Head { key, kind, opener_end })
}

/// A bracketed closer around the `末` at `mid` (bytes of `末`: `mid..mid + 3`), whose
/// opening bracket is at or after `from` and which ends by `limit`.
#[allow(clippy::too_many_arguments)]
fn bracketed(
    src: &VisibleText<'_>,
    mid: usize,
    word: &str,
    from: usize,
    fuzzy: bool,
    limit: usize,
    settled: bool,
) -> Bracket {
    let text = src.text();
    let Some(before) = text.get(..mid) else { return Bracket::No };
    let start = if before.ends_with('「') {
        mid - '「'.len_utf8()
    } else if fuzzy && before.ends_with('{') {
        mid - 1
    } else {
        return Bracket::No;
    };
    let Some(after_mid) = text.get(mid + '末'.len_utf8()..) else { return Bracket::No };
    let after_word = if word.is_empty() {
        after_mid
    } else {
        match strip_prefix_ignore_ascii_case(after_mid, word) {
            Some(rest) => rest,
            None if !settled && could_become(after_mid, word, true) => return Bracket::Undecided,
            None => return Bracket::No,
        }
    };
    let close_len = if after_word.starts_with('」') {
        '」'.len_utf8()
    } else if fuzzy && after_word.starts_with('}') {
        1
    } else if after_word.is_empty() && !settled {
        return Bracket::Undecided;
    } else {
        return Bracket::No;
    };
    let end = text.len() - after_word.len() + close_len;
    if start < from || src.crosses_break(start, end) {
        return Bracket::No;
    }
    if end > limit {
        return if settled { Bracket::No } else { Bracket::Undecided };
    }
    Bracket::Match(start, end)
}

/// The first bracketed closer, `[「{]末WORD[」}]` (WORD in any ASCII case; `{`/`}` only
/// with `fuzzy`), of a value that began at `from`, searched from `scan` up to `limit`.
/// A plain value's closer has no WORD; an escaped value's is `「末ESCAPE」` (any bracket),
/// and markers do not end the value, so its search runs to the end of the text.
pub(super) fn bracket_close(
    src: &VisibleText<'_>,
    word: &str,
    from: usize,
    scan: usize,
    limit: usize,
    settled: bool,
    fuzzy: bool,
) -> Close {
    for mid in closer_chars(src.text(), scan, limit) {
        match bracketed(src, mid, word, from, fuzzy, limit, settled) {
            Bracket::Match(start, end) => return Close::At(start, end),
            Bracket::Undecided => return Close::Wait(mid),
            Bracket::No => {}
        }
    }
    if settled { Close::Absent } else { Close::Wait(limit.max(scan)) }
}

/// The first `「末exp」` from `scan` up to `limit`.
pub(super) fn doc_close(
    closer: &memmem::Finder<'_>,
    src: &VisibleText<'_>,
    scan: usize,
    limit: usize,
    settled: bool,
) -> Close {
    let text = src.text();
    let bytes = text.as_bytes().get(..limit).unwrap_or_default();
    let mut at = scan;
    while let Some(i) = bytes.get(at..).and_then(|b| closer.find(b)) {
        let start = at + i;
        let end = start + "「末exp」".len();
        if !src.crosses_break(start, end) {
            return Close::At(start, end);
        }
        at = start + 1;
    }
    if settled {
        Close::Absent
    } else {
        let resume = floor_boundary(text, limit.saturating_sub("「末exp」".len() - 1));
        Close::Wait(resume.max(scan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `skip_ws` skips exactly what `str::trim_start` does, for every white-space
    /// character (it reads them from their bytes without decoding).
    #[test]
    fn skip_ws_agrees_with_trim_start() {
        let white: Vec<char> =
            (0..=0x10FFFFu32).filter_map(char::from_u32).filter(|c| c.is_whitespace()).collect();
        assert_eq!(white.iter().filter(|c| !c.is_ascii()).count(), 19, "{white:?}");
        for c in (0x80..=0x10FFFFu32).filter_map(char::from_u32) {
            let mut buf = [0u8; 4];
            let bytes = c.encode_utf8(&mut buf).as_bytes();
            assert_eq!(wide_white(bytes) != 0, c.is_whitespace(), "{c:?}");
        }
        assert!(white.len() > 20, "{white:?}");
        for &c in &white {
            for tail in ["x", "「始」", "\u{3001}", "é", ""] {
                let text = format!("k:{c} {c}{tail}");
                let want = text.len() - text[2..].trim_start().len();
                assert_eq!(skip_ws(&text, 2, text.len()), want, "{c:?} before {tail:?}");
            }
        }
        // Non-white characters behind the same lead bytes stop it.
        for c in ['\u{a9}', '\u{1681}', '\u{2010}', '\u{3001}', '「'] {
            let text = format!(" {c}");
            assert_eq!(skip_ws(&text, 0, text.len()), 1, "{c:?}");
        }
    }

    /// The value openers, exactly: `「始」`, `「始exp」`, `[「{]始ESCAPE[」}]` with ESCAPE in
    /// any ASCII case, and with fuzzy markers also `[「{]始[」}]`.
    #[test]
    fn openers_are_the_dialects_and_no_more() {
        use ValueKind::{Doc, Escaped, Plain};
        // (text, without fuzzy markers, with them)
        let cases = [
            ("「始」x", Some(Plain), Some(Plain)),
            ("{始}x", None, Some(Plain)),
            ("{始」x", None, Some(Plain)),
            ("「始}x", None, Some(Plain)),
            ("「始exp」x", Some(Doc), Some(Doc)),
            ("{始exp}x", None, None),
            ("「始exp}x", None, None),
            ("「始ESCAPE」x", Some(Escaped), Some(Escaped)),
            ("{始escape}x", Some(Escaped), Some(Escaped)),
            ("「始Escape}x", Some(Escaped), Some(Escaped)),
            ("「始ESCAP」x", None, None),
            ("「始 」x", None, None),
            ("「末」x", None, None),
            ("(始)x", None, None),
            ("「始", None, None),
            ("", None, None),
        ];
        for (text, exact, fuzzy) in cases {
            assert_eq!(opener(text, false).map(|(kind, _)| kind), exact, "{text:?}");
            assert_eq!(opener(text, true).map(|(kind, _)| kind), fuzzy, "{text:?} with fuzzy markers");
            if let Some((_, len)) = opener(text, true) {
                assert_eq!(&text[len..], "x", "{text:?}");
            }
        }
    }

    #[test]
    fn separators_are_blanks_then_a_colon() {
        let cases = [
            (":「", Ok(1)),
            ("：「", Ok(3)),
            (" \t:", Ok(3)),
            ("  ：x", Ok(5)),
            ("", Err(0)),
            ("  ", Err(2)),
            (" \n:", Err(1)),
            ("\u{3000}:", Err(0)),
            ("x:", Err(0)),
            (",", Err(0)),
        ];
        for (text, want) in cases {
            assert_eq!(separator_len(text), want, "{text:?}");
        }
    }

    #[test]
    fn keys_end_at_what_cannot_be_in_them() {
        let cases = [
            ("path:", "path"),
            ("a b", "a"),
            ("a,b", "a"),
            ("名前：「始」", "名前"),
            ("é,x", "é"),
            ("k「始」", "k"),
            ("aé」", "aé"),
            ("a\u{3000}b", "a"),
            ("ключ", "ключ"),
            ("IMAGE-SIZE:", "IMAGE-SIZE"),
            (":x", ""),
            ("\u{3000}", ""),
            ("", ""),
        ];
        for (text, want) in cases {
            assert_eq!(&text[..key_len(text)], want, "{text:?}");
        }
    }

    #[test]
    fn trim_agrees_with_str_trim() {
        for text in ["a", " a", "a ", "\u{3000}a\u{3000}", "\r\nab\t", "", " ", "é", " é ", "a\u{85}"] {
            assert_eq!(trim(text), text.trim(), "{text:?}");
        }
    }
}
