//! Server-sent events (`text/event-stream`), read incrementally.
//!
//! Providers stream their responses as server-sent events: lines of `field: value`, an
//! event ending at a blank line. [`SseParser`] takes the bytes as they arrive, in chunks
//! of any size (a chunk may end inside a line, a `\r\n` pair, or a UTF-8 character), and
//! yields each event once its blank line has arrived. Lines may end in `\n`, `\r\n` or a
//! lone `\r`; lines starting with `:` are comments (keep-alives); `data` lines of one event
//! are joined with `\n`. Each byte is looked at once: the cost is linear in the input.

/// One server-sent event.
///
/// ```
/// use tool_calling::providers::SseParser;
/// let mut events = Vec::new();
/// SseParser::new().push(b"id: 7\nevent: delta\ndata: line 1\ndata: line 2\n\n", &mut events);
/// let event = &events[0];
/// assert_eq!(event.id.as_deref(), Some("7"));
/// assert_eq!(event.event.as_deref(), Some("delta"));
/// assert_eq!(event.data, "line 1\nline 2");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field, if the event had one.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The `id:` field, if the event had one.
    pub id: Option<String>,
}

/// Reads server-sent events from bytes fed in chunks.
///
/// ```
/// use tool_calling::providers::SseParser;
/// let mut parser = SseParser::new();
/// let mut events = Vec::new();
/// parser.push(b"event: ping\r\ndata: {\"a\"", &mut events);
/// assert!(events.is_empty(), "the event has not ended yet");
/// parser.push(b": 1}\r\n\r\n: keep-alive\n\ndata: [DONE]\n\n", &mut events);
/// assert_eq!(events[0].event.as_deref(), Some("ping"));
/// assert_eq!(events[0].data, "{\"a\": 1}");
/// assert_eq!(events[1].data, "[DONE]");
/// ```
#[derive(Debug, Default)]
pub struct SseParser {
    /// The current line, until its end arrives.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting this one belongs to it.
    after_cr: bool,
    /// The first line has been read (a byte-order mark is skipped at its start).
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
    /// The event handed out last by [`push_each`](Self::push_each): its strings are
    /// reused for the next one, rather than allocated per event.
    out: SseEvent,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in the next bytes; appends the events they complete to `events`.
    pub fn push(&mut self, bytes: &[u8], events: &mut Vec<SseEvent>) {
        self.push_each(bytes, |event| events.push(std::mem::take(event)));
    }

    /// Takes in the next bytes; hands each event they complete to `each`, as soon as it
    /// completes. The event is lent: its strings are reused for the next event unless
    /// `each` takes them.
    pub(crate) fn push_each(&mut self, mut bytes: &[u8], mut each: impl FnMut(&mut SseEvent)) {
        // (An empty chunk leaves a pending `\r` pending.)
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = line_end(bytes) {
            let (head, tail) = bytes.split_at(end);
            if self.started && self.line.is_empty() {
                // The whole line lies in this chunk: it is read in place.
                self.take_line(head, &mut each);
            } else {
                self.line.extend_from_slice(head);
                let line = std::mem::take(&mut self.line);
                // The first line may start with a byte-order mark (which may have come
                // in pieces): it is skipped.
                let content = if self.started {
                    line.as_slice()
                } else {
                    self.started = true;
                    line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&line)
                };
                self.take_line(content, &mut each);
                self.line = line;
                self.line.clear();
            }
            let cr = tail.first() == Some(&b'\r');
            bytes = tail.get(1..).unwrap_or_default();
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = bytes.get(1..).unwrap_or_default(),
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        if let [byte] = bytes {
            // (A byte at a time: no call to copy one.)
            self.line.push(*byte);
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    /// The stream has ended. An event whose blank line never came is dropped, as the
    /// format says: a stream cut off inside an event gives no half event. Returns whether
    /// one was dropped: whether data had arrived for it (a `data` line, or a last line
    /// cut off that is, or may have been, one). A last comment, or an event with no data
    /// (never given anyway), drops nothing.
    ///
    /// ```
    /// use tool_calling::providers::SseParser;
    /// let mut events = Vec::new();
    /// let mut parser = SseParser::new();
    /// parser.push(b"data: {\"a\": 1}\n\ndata: {\"b\"", &mut events);
    /// assert_eq!(events.len(), 1);
    /// assert!(parser.finish(), "the second event was cut off");
    /// let mut parser = SseParser::new();
    /// parser.push(b"data: [DONE]\n\n: keep-alive", &mut events);
    /// assert!(!parser.finish(), "a comment cut off drops nothing");
    /// ```
    pub fn finish(&mut self) -> bool {
        let dropped = self.has_data || self.last_line_may_be_data();
        self.line.clear();
        self.event = None;
        self.id = None;
        self.data.clear();
        self.has_data = false;
        dropped
    }

    /// Whether the line cut off by the end of the stream is a `data` line, or the start
    /// of one (`da`, `data`).
    fn last_line_may_be_data(&self) -> bool {
        const BOM: &[u8] = "\u{feff}".as_bytes();
        let line = if self.started {
            self.line.as_slice()
        } else if BOM.starts_with(&self.line) {
            return false;
        } else {
            self.line.strip_prefix(BOM).unwrap_or(&self.line)
        };
        match memchr::memchr(b':', line) {
            Some(colon) => line.get(..colon) == Some(b"data".as_slice()),
            None => !line.is_empty() && b"data".starts_with(line),
        }
    }

    /// One complete line (without its ending).
    fn take_line(&mut self, line: &[u8], each: &mut impl FnMut(&mut SseEvent)) {
        if line.is_empty() {
            self.dispatch(each);
            return;
        }
        if line.first() == Some(&b':') {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let (field, rest) = line.split_at(colon);
                let value = rest.get(1..).unwrap_or_default();
                (field, value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        // Valid UTF-8 (the rule) is checked without the lossy decoder's bookkeeping.
        let value = match std::str::from_utf8(value) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(value),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => {
                // The last event's name, or the one before it, is reused.
                let mut name = self.event.take().or_else(|| self.out.event.take()).unwrap_or_default();
                name.clear();
                name.push_str(&value);
                self.event = Some(name);
            }
            b"id" => self.id = Some(value.into_owned()),
            // `retry` and unknown fields are ignored, as the format says.
            _ => {}
        }
    }

    fn dispatch(&mut self, each: &mut impl FnMut(&mut SseEvent)) {
        if self.has_data {
            std::mem::swap(&mut self.out.data, &mut self.data);
            self.out.event = self.event.take();
            self.out.id = self.id.take();
            each(&mut self.out);
        }
        self.event = None;
        self.id = None;
        self.data.clear();
        self.has_data = false;
    }
}

/// Where the first line ending (`\n` or `\r`) in `bytes` is. A few bytes (a stream
/// pushed as it trickles in) are scanned directly, without the vector search's set-up.
fn line_end(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < 16 {
        bytes.iter().position(|&byte| byte == b'\n' || byte == b'\r')
    } else {
        memchr::memchr2(b'\n', b'\r', bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(bytes: &[u8], chunk: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for piece in bytes.chunks(chunk.max(1)) {
            parser.push(piece, &mut events);
        }
        let _ = parser.finish();
        events
    }

    #[test]
    fn line_endings_comments_and_multi_line_data() {
        let text = "\u{feff}: hello\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\nid: 7\rdata: x\r\rdata: cut";
        let events = all(text.as_bytes(), 1000);
        assert_eq!(events.len(), 2, "a last event without its blank line is dropped");
        assert_eq!(events[0], SseEvent { event: Some("a".into()), data: "one\ntwo".into(), id: None });
        assert_eq!(events[1], SseEvent { event: None, data: "x".into(), id: Some("7".into()) });
    }

    #[test]
    fn any_chunking_gives_the_same_events() {
        let text = "event: e\r\ndata: {\"k\": \"日本\"}\r\n\r\ndata: a\n\ndata: b\r\rdata: c\n\n";
        let whole = all(text.as_bytes(), text.len());
        assert_eq!(whole.len(), 4);
        assert_eq!(whole[3].data, "c");
        for size in 1..text.len() {
            assert_eq!(all(text.as_bytes(), size), whole, "chunks of {size}");
        }
    }

    #[test]
    fn a_byte_order_mark_in_pieces_is_still_skipped() {
        let text = "\u{feff}data: x\n\n".as_bytes();
        for size in 1..4 {
            assert_eq!(
                all(text, size),
                vec![SseEvent { data: "x".into(), ..SseEvent::default() }],
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn empty_chunks_keep_a_pending_carriage_return() {
        // `\r` ends a chunk, empty chunks follow, then `\n`: one line ending, not two.
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for piece in [&b"data: d\r"[..], b"", b"", b"\n"] {
            parser.push(piece, &mut events);
        }
        assert!(events.is_empty(), "{events:?}");
        parser.push(b"\n", &mut events);
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn finish_says_whether_an_event_was_cut_off() {
        let cases: [(&str, bool); 11] = [
            ("data: a\n\n", false),
            ("data: a\n\ndata: b", true),
            ("data: a\n\ndata: b\n", true),
            ("data: a\ndata: b\r", true),
            ("data: a\n\nda", true),
            ("data: a\n\ndata", true),
            ("data: a\n\nevent: ping", false),
            ("data: a\n\nevent: ping\nid: 1\n", false),
            ("data: a\n\n: keep-alive", false),
            ("\u{feff}data: x", true),
            ("", false),
        ];
        for (text, dropped) in cases {
            for size in 1..=text.len().max(1) {
                let mut parser = SseParser::new();
                let mut events = Vec::new();
                for piece in text.as_bytes().chunks(size) {
                    parser.push(piece, &mut events);
                }
                assert_eq!(parser.finish(), dropped, "{text:?} in chunks of {size}");
            }
        }
        // A byte-order mark cut off is not an event.
        let mut parser = SseParser::new();
        parser.push(&"\u{feff}".as_bytes()[..2], &mut Vec::new());
        assert!(!parser.finish());
    }

    #[test]
    fn events_without_data_are_not_given() {
        assert!(all(b"event: ping\n\n: comment\n\n", 3).is_empty());
    }
}
