//! A response stream read from its bytes: server-sent-event framing, then the
//! provider's decoder, with the call lifecycle kept sound whatever the provider sent.

use std::collections::HashMap;

use super::{SseEvent, SseParser, StreamDecoder, WireError, WireFormat};
use crate::model::{FinishReason, TurnDelta};

/// A response stream read from its bytes: server-sent-event framing, then the
/// provider's decoder.
///
/// ```
/// use tool_calling::model::{TurnAccumulator, TurnDelta};
/// use tool_calling::providers::{Provider, ResponseStream};
///
/// let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n\
///            data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
/// let mut stream = ResponseStream::new(&Provider::OpenAiChat);
/// let mut deltas = Vec::new();
/// stream.push(sse.as_bytes(), &mut deltas).unwrap();
/// stream.finish(&mut deltas).unwrap();
/// let mut turn = TurnAccumulator::new();
/// deltas.iter().for_each(|d| turn.push(d));
/// assert_eq!(turn.finish().text(), "Hi");
/// ```
pub struct ResponseStream {
    sse: SseParser,
    decoder: Box<dyn StreamDecoder>,
    /// The decoder's deltas, before they are checked.
    decoded: Vec<TurnDelta>,
    /// The provider said how the turn finished.
    finished: bool,
    /// An error was reported: nothing more is decoded.
    failed: bool,
    /// Each call seen: the position of its first delta while it is open, `None` once it
    /// has ended.
    calls: HashMap<usize, Option<usize>>,
    /// The call of the last call delta passed on, while it is open: its deltas (one per
    /// token) pass without a look in `calls`.
    open_call: Option<usize>,
    /// The stream went past `max_bytes`: whatever the provider said, the turn was cut.
    cut: bool,
    /// Bytes taken in so far.
    read: usize,
    /// Bytes that may be taken in.
    max_bytes: usize,
}

/// The default of [`ResponseStream::max_bytes`]: 64 MiB.
pub const DEFAULT_MAX_STREAM_BYTES: usize = 64 << 20;

impl std::fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseStream").field("sse", &self.sse).finish_non_exhaustive()
    }
}

impl ResponseStream {
    /// A stream in `format`.
    pub fn new(format: &dyn WireFormat) -> Self {
        ResponseStream::with_decoder(format.stream_decoder())
    }

    /// A stream read by `decoder`.
    fn with_decoder(decoder: Box<dyn StreamDecoder>) -> Self {
        ResponseStream {
            sse: SseParser::new(),
            decoder,
            decoded: Vec::new(),
            finished: false,
            failed: false,
            calls: HashMap::new(),
            open_call: None,
            cut: false,
            read: 0,
            max_bytes: DEFAULT_MAX_STREAM_BYTES,
        }
    }

    /// Sets how many bytes of the stream are read ([`DEFAULT_MAX_STREAM_BYTES`] by
    /// default). This bounds everything the stream holds: a line or event whose end never
    /// comes, a call's arguments that never stop. Past the limit, [`push`](Self::push)
    /// returns [`WireError::TooLarge`] once and reads nothing more; [`finish`](Self::finish)
    /// then ends the turn with [`FinishReason::Error`] (whatever the provider said before
    /// the cut) and marks the calls still open incomplete, so that none of them runs.
    ///
    /// ```
    /// use tool_calling::model::TurnDelta;
    /// use tool_calling::providers::{Provider, ResponseStream, WireError};
    /// let mut stream = ResponseStream::new(&Provider::OpenAiChat).max_bytes(64);
    /// let mut deltas = Vec::new();
    /// let endless = format!("data: {}", "x".repeat(100));
    /// let error = stream.push(endless.as_bytes(), &mut deltas).unwrap_err();
    /// assert_eq!(error, WireError::TooLarge { what: "response stream", limit: 64 });
    /// assert_eq!(stream.push(b"more", &mut deltas), Ok(()), "reported once, then ignored");
    /// ```
    #[must_use]
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Takes in the next bytes; appends the deltas they decide. Events without data are
    /// skipped. The first error (a provider's error event, an event that is not JSON)
    /// is returned, and the stream decodes nothing after it.
    pub fn push(&mut self, bytes: &[u8], deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        if self.failed {
            return Ok(());
        }
        let room = self.max_bytes.saturating_sub(self.read);
        let (taken, over) = match bytes.get(..room) {
            Some(head) if head.len() < bytes.len() => (head, true),
            _ => (bytes, false),
        };
        self.read += taken.len();
        // Each event is decoded as soon as it completes, in the parser's reused event.
        let (decoder, decoded, failed) = (&mut self.decoder, &mut self.decoded, &mut self.failed);
        let mut result = Ok(());
        self.sse.push_each(taken, |event| {
            if let Err(error) = decode(decoder.as_mut(), event, decoded, failed) {
                result = Err(error);
            }
        });
        if !self.decoded.is_empty() {
            self.check(deltas);
        }
        if over && result.is_ok() {
            self.failed = true;
            self.cut = true;
            return Err(WireError::TooLarge { what: "response stream", limit: self.max_bytes });
        }
        result
    }

    /// The provider's token counts for the turn, in its own shape, once the stream has
    /// carried them (OpenAI Chat Completions: the `usage` of the last chunk, sent when
    /// the request asks for `stream_options.include_usage`).
    ///
    /// ```
    /// use tool_calling::providers::{Provider, ResponseStream};
    /// let mut stream = ResponseStream::new(&Provider::OpenAiChat);
    /// let sse = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\n";
    /// stream.push(sse.as_bytes(), &mut Vec::new()).unwrap();
    /// assert_eq!(stream.usage().unwrap()["prompt_tokens"], 9);
    /// ```
    pub fn usage(&self) -> Option<&serde_json::Value> {
        self.decoder.usage()
    }

    /// The stream has ended; appends the last deltas.
    ///
    /// Every call that started is ended. A stream that ended before the provider said
    /// how the turn finished was cut off: the turn finishes with
    /// [`FinishReason::Error`], and each call still open is marked
    /// [`ToolCallIncomplete`](TurnDelta::ToolCallIncomplete) before its end, so that it
    /// is reported, not run.
    ///
    /// A stream that ended inside an event had that event dropped, as the format says
    /// (half an event is not read), and that is reported: the deltas are appended all the
    /// same (the turn as far as it was read, finishing as above), then
    /// [`WireError::Truncated`] is returned. Whether that fails the turn is the caller's
    /// choice: a turn the provider had already finished lost only what came after its
    /// end (a usage chunk, a `[DONE]` whose blank line never came); one it had not
    /// finished ends with [`FinishReason::Error`] anyway. Nothing is returned for a
    /// stream that [`push`](Self::push) already reported an error for.
    ///
    /// ```
    /// use tool_calling::model::{FinishReason, TurnDelta};
    /// use tool_calling::providers::{Provider, ResponseStream, WireError};
    /// let mut stream = ResponseStream::new(&Provider::OpenAiChat);
    /// let mut deltas = Vec::new();
    /// let cut = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\":[{\"del";
    /// stream.push(cut.as_bytes(), &mut deltas).unwrap();
    /// let report = stream.finish(&mut deltas);
    /// assert_eq!(report, Err(WireError::Truncated { what: "response stream" }));
    /// assert_eq!(deltas, [TurnDelta::Text("Hi".into()), TurnDelta::Finish(FinishReason::Error)]);
    /// ```
    pub fn finish(&mut self, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        // (The end of the stream completes no event.)
        let dropped = self.sse.finish();
        // What the decoder decides at the end: a finish reason it held back, the calls
        // it closes.
        self.decoder.finish(&mut self.decoded);
        if self.cut {
            // A finish reason held back until the end is not the turn's: it was cut.
            self.decoded.retain(|delta| !matches!(delta, TurnDelta::Finish(_)));
        }
        let provider_finished =
            self.finished || self.decoded.iter().any(|delta| matches!(delta, TurnDelta::Finish(_)));
        if !provider_finished || self.cut {
            deltas.push(TurnDelta::Finish(FinishReason::Error));
            self.cut_open_calls(deltas);
        }
        self.check(deltas);
        // A call whose end never came was cut off, whatever the provider said.
        self.cut_open_calls(deltas);
        self.finished = true;
        if dropped && !self.failed {
            return Err(WireError::Truncated { what: "response stream" });
        }
        Ok(())
    }

    /// Marks the calls still open incomplete and ends them, in the order they began.
    fn cut_open_calls(&mut self, deltas: &mut Vec<TurnDelta>) {
        let mut open: Vec<(usize, usize)> =
            self.calls.iter().filter_map(|(index, open)| open.map(|at| (at, *index))).collect();
        open.sort_unstable();
        self.open_call = None;
        for (_, index) in open {
            self.calls.insert(index, None);
            deltas.push(TurnDelta::ToolCallIncomplete { index });
            deltas.push(TurnDelta::ToolCallEnd { index });
        }
    }

    /// Passes the decoded deltas on, keeping the call lifecycle sound whatever the
    /// provider sent: nothing of a call after its end, one end per call. Notes whether
    /// the provider gave a finish reason.
    fn check(&mut self, deltas: &mut Vec<TurnDelta>) {
        for delta in self.decoded.drain(..) {
            let index = match &delta {
                TurnDelta::Finish(_) => {
                    self.finished = true;
                    None
                }
                TurnDelta::ToolCallStart { index, .. }
                | TurnDelta::ToolCallArguments { index, .. }
                | TurnDelta::ToolCallSignature { index, .. }
                | TurnDelta::ToolCallIncomplete { index }
                | TurnDelta::ToolCallEnd { index } => Some(*index),
                _ => None,
            };
            if let Some(index) = index {
                let end = matches!(delta, TurnDelta::ToolCallEnd { .. });
                if self.open_call == Some(index) && !end {
                    deltas.push(delta);
                    continue;
                }
                self.open_call = None;
                let seen = self.calls.len();
                let state = self.calls.entry(index).or_insert(Some(seen));
                if state.is_none() {
                    continue;
                }
                if end {
                    *state = None;
                } else {
                    self.open_call = Some(index);
                }
            }
            deltas.push(delta);
        }
    }
}

/// Decodes one event into `decoded`, unless an error came before it.
fn decode(
    decoder: &mut dyn StreamDecoder,
    event: &SseEvent,
    decoded: &mut Vec<TurnDelta>,
    failed: &mut bool,
) -> Result<(), WireError> {
    // An event without data (a bare `data` line) says nothing.
    if *failed || event.data.trim().is_empty() {
        return Ok(());
    }
    let result = decoder.event(event, decoded);
    *failed = result.is_err();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decoder that turns each event's data (a JSON array of deltas) into deltas.
    struct Scripted;

    impl StreamDecoder for Scripted {
        fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
            let parsed: Vec<TurnDelta> = serde_json::from_str(&event.data)
                .map_err(|e| WireError::NotJson { what: "stream event", reason: e.to_string() })?;
            deltas.extend(parsed);
            Ok(())
        }
        fn finish(&mut self, _deltas: &mut Vec<TurnDelta>) {}
    }

    fn scripted() -> ResponseStream {
        ResponseStream::with_decoder(Box::new(Scripted))
    }

    /// The deltas of `body`, pushed whole, and what the stream's end said.
    fn read(body: &str) -> (Vec<TurnDelta>, Result<(), WireError>) {
        let mut stream = scripted();
        let mut deltas = Vec::new();
        stream.push(body.as_bytes(), &mut deltas).unwrap();
        let end = stream.finish(&mut deltas);
        (deltas, end)
    }

    fn event(deltas: &[TurnDelta]) -> String {
        format!("data: {}\n\n", serde_json::to_string(deltas).unwrap())
    }

    fn start(index: usize) -> TurnDelta {
        TurnDelta::ToolCallStart { index, id: format!("c{index}"), name: "f".into() }
    }

    fn args(index: usize, fragment: &str) -> TurnDelta {
        TurnDelta::ToolCallArguments { index, fragment: fragment.into() }
    }

    #[test]
    fn nothing_of_a_call_passes_after_its_end() {
        let end = TurnDelta::ToolCallEnd { index: 0 };
        let body = event(&[start(0), args(0, "{}"), end.clone(), args(0, "x"), end.clone(), start(0)])
            + &event(&[TurnDelta::Finish(FinishReason::ToolCalls)]);
        let (deltas, finished) = read(&body);
        assert_eq!(finished, Ok(()));
        assert_eq!(deltas, vec![start(0), args(0, "{}"), end, TurnDelta::Finish(FinishReason::ToolCalls)]);
    }

    #[test]
    fn a_stream_cut_mid_call_finishes_with_an_error_and_marks_the_call() {
        let cut = [start(0), args(0, "{}"), TurnDelta::ToolCallEnd { index: 0 }, start(1), args(1, "{\"a\"")];
        // Cut mid-call; or the provider gave a finish reason but never ended the call.
        let cases = [
            (event(&cut), 5, FinishReason::Error, 1),
            (event(&[start(3), TurnDelta::Finish(FinishReason::Length)]), 1, FinishReason::Length, 3),
        ];
        for (body, before, reason, index) in cases {
            let (deltas, finished) = read(&body);
            assert_eq!(finished, Ok(()));
            assert_eq!(
                deltas.get(before..).unwrap(),
                [
                    TurnDelta::Finish(reason),
                    TurnDelta::ToolCallIncomplete { index },
                    TurnDelta::ToolCallEnd { index },
                ]
            );
        }
    }

    #[test]
    fn the_first_error_stops_decoding() {
        let mut stream = scripted();
        let mut deltas = Vec::new();
        let body = event(&[TurnDelta::Text("a".into())])
            + "data: not json\n\n"
            + &event(&[TurnDelta::Text("b".into())]);
        assert!(matches!(stream.push(body.as_bytes(), &mut deltas), Err(WireError::NotJson { .. })));
        assert!(stream.push(event(&[TurnDelta::Text("c".into())]).as_bytes(), &mut deltas).is_ok());
        assert_eq!(deltas, vec![TurnDelta::Text("a".into())]);
    }

    #[test]
    fn a_stream_cut_inside_an_event_is_reported() {
        let end = TurnDelta::ToolCallEnd { index: 0 };
        // Cut before the provider finished: the turn ends as an error, and that is why.
        let (deltas, finished) = read(&(event(&[start(0)]) + "data: [{\"Text\": \"lost\""));
        assert_eq!(finished, Err(WireError::Truncated { what: "response stream" }));
        assert_eq!(
            deltas,
            [
                start(0),
                TurnDelta::Finish(FinishReason::Error),
                TurnDelta::ToolCallIncomplete { index: 0 },
                end.clone()
            ]
        );
        assert_eq!(
            WireError::Truncated { what: "response stream" }.to_string(),
            "the response stream ended inside an event: the part of it that arrived was dropped"
        );
        // Cut after the provider finished: the turn is whole, the cut still reported.
        let body = event(&[start(0), end.clone(), TurnDelta::Finish(FinishReason::ToolCalls)]) + "data: [DON";
        let (deltas, finished) = read(&body);
        assert!(matches!(finished, Err(WireError::Truncated { .. })));
        assert_eq!(deltas, [start(0), end.clone(), TurnDelta::Finish(FinishReason::ToolCalls)]);
        // A last comment cut off is no event.
        let (_, finished) = read(&(event(&[TurnDelta::Finish(FinishReason::Stop)]) + ": keep-al"));
        assert_eq!(finished, Ok(()));
    }

    #[test]
    fn a_cut_already_reported_is_not_reported_again() {
        // Past the byte limit.
        let mut stream = scripted().max_bytes(10);
        let mut deltas = Vec::new();
        let error = stream.push(b"data: [1, 2, 3]\n\n", &mut deltas).unwrap_err();
        assert!(matches!(error, WireError::TooLarge { .. }));
        assert_eq!(stream.finish(&mut deltas), Ok(()));
        // After an error event.
        let mut stream = scripted();
        let mut deltas = Vec::new();
        assert!(stream.push(b"data: not json\n\ndata: [", &mut deltas).is_err());
        assert_eq!(stream.finish(&mut deltas), Ok(()));
    }

    #[test]
    fn blank_events_are_skipped() {
        let mut stream = scripted();
        let mut deltas = Vec::new();
        assert!(stream.push(b"data\n\ndata:  \n\n", &mut deltas).is_ok());
        assert!(deltas.is_empty());
    }
}
