//! The streaming VCP parser. (Temporary naive implementation: re-parses the buffer.)

use super::VcpOptions;
use super::parser;
use crate::stream::{IncrementalParser, StreamEvent};

/// A VCP parser fed chunk by chunk.
#[derive(Debug)]
pub struct VcpStreamParser {
    options: VcpOptions,
    buf: String,
    emitted: usize,
    done: bool,
}

impl VcpStreamParser {
    /// A streaming parser with `options`.
    pub fn new(options: VcpOptions) -> Self {
        VcpStreamParser { options, buf: String::new(), emitted: 0, done: false }
    }

    /// Bytes of text the parser holds (undecided text and the open request block).
    pub fn buffered_len(&self) -> usize {
        self.buf.len()
    }
}

impl IncrementalParser for VcpStreamParser {
    fn push(&mut self, chunk: &str, events: &mut Vec<StreamEvent>) {
        if self.done {
            return;
        }
        self.buf.push_str(chunk);
        if chunk.contains('>') {
            let outcome = parser::parse(&self.buf, &self.options);
            for request in outcome.requests.into_iter().skip(self.emitted) {
                let ended = request.span.slice(&self.buf).is_some_and(|t| t.ends_with(super::markers::END));
                if !ended || request.span.end >= self.buf.len() {
                    break;
                }
                self.emitted += 1;
                events.push(StreamEvent::RequestCompleted(request));
            }
        }
    }

    fn finish(&mut self, events: &mut Vec<StreamEvent>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let outcome = parser::parse(&self.buf, &self.options);
        for request in outcome.requests.into_iter().skip(self.emitted) {
            events.push(StreamEvent::RequestCompleted(request));
        }
        events.extend(outcome.diagnostics.into_iter().map(StreamEvent::Diagnostic));
    }
}
