//! Streaming parse events: what a protocol reports while a model's turn is still
//! arriving.

use super::{Diagnostic, DiagnosticKind, ParseOutcome, ToolCallingProtocol, TurnState};
use crate::model::{AssistantTurn, TurnAccumulator, TurnDelta};
use crate::{Span, ToolRequest};

/// One thing an [`StreamParser`] decided.
///
/// ```
/// use tool_calling::protocol::vcp::VcpProtocol;
/// use tool_calling::protocol::{StreamParser, StreamEvent};
/// let mut parser = VcpProtocol::default().stream_parser();
/// let mut events = Vec::new();
/// let reply = "Hi.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n<<<[END_TOOL_REQUEST]>>>";
/// parser.push_text(reply, &mut events);
/// parser.finish(&mut events);
/// assert!(matches!(&events[0], StreamEvent::Text { text, .. } if text == "Hi.\n"));
/// assert!(events.iter().any(|e| matches!(e, StreamEvent::RequestStarted { offset: 4 })));
/// assert!(events.iter().any(|e| matches!(e, StreamEvent::FieldCompleted { key, value, .. }
///     if key == "tool_name" && value == "clock")));
/// assert!(matches!(events.last(), Some(StreamEvent::RequestCompleted(request)) if request.complete));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// Prose outside request blocks (reasoning removed), in order. One piece of prose may
    /// arrive as several events; `span` is where the piece stands in the input.
    Text {
        /// The prose.
        text: String,
        /// Its bytes in the input.
        span: Span,
    },
    /// A request block began at input offset `offset` (its START marker is decided).
    /// The block ends with [`RequestCompleted`](Self::RequestCompleted) or
    /// [`BlockDiscarded`](Self::BlockDiscarded).
    RequestStarted {
        /// Input offset of the START marker.
        offset: usize,
    },
    /// A field of the open block is complete (its value is closed, or it was cut short by
    /// a marker or the end of the text).
    FieldCompleted {
        /// The key as written.
        key: String,
        /// The value, normalised as in requests.
        value: String,
        /// Whether the value was closed.
        closed: bool,
        /// The field's bytes in the input.
        span: Span,
    },
    /// A block ended and yielded this request (complete or not).
    RequestCompleted(ToolRequest),
    /// A block ended without yielding a request (it was empty, or an example); a
    /// [`Diagnostic`](Self::Diagnostic) event says why.
    BlockDiscarded {
        /// The block's bytes in the input.
        span: Span,
    },
    /// Something the parser noticed and tolerated.
    Diagnostic(Diagnostic),
    /// The parser learnt something about the turn that resolving its requests and
    /// writing their results need (for `auto`: the dialect the reply is written in). It
    /// comes before the first request it concerns; a later one replaces it.
    TurnState(TurnState),
}

/// Where a [`StreamParser`] puts what it decides.
///
/// A `Vec<StreamEvent>` is a sink: every event is pushed to it, prose as an owned
/// [`StreamEvent::Text`]. A consumer that reads prose as it passes (a UI, a gateway, a
/// collector) can implement [`text`](Self::text) to borrow each piece instead: a model
/// streams its reply a few bytes at a time, and an allocation per piece is most of what
/// a push of prose costs. [`StreamCollector`] is a sink of that kind.
///
/// ```
/// use tool_calling::Span;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// use tool_calling::protocol::{EventSink, StreamEvent, StreamParser};
///
/// /// Shows prose as it comes; keeps the rest.
/// #[derive(Default)]
/// struct Screen {
///     shown: String,
///     events: Vec<StreamEvent>,
/// }
///
/// impl EventSink for Screen {
///     fn event(&mut self, event: StreamEvent) {
///         self.events.push(event);
///     }
///     fn text(&mut self, text: &str, _span: Span) {
///         self.shown.push_str(text);
///     }
/// }
///
/// let mut parser = VcpProtocol::default().stream_parser();
/// let mut screen = Screen::default();
/// for chunk in ["Let me ", "check.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n", "<<<[END_TOOL_REQUEST]>>>"] {
///     parser.push_text(chunk, &mut screen);
/// }
/// parser.finish(&mut screen);
/// assert_eq!(screen.shown, "Let me check.\n");
/// assert!(screen.events.iter().any(|e| matches!(e, StreamEvent::RequestCompleted(r) if r.tool_name == "clock")));
/// ```
pub trait EventSink {
    /// Takes one event. Prose and fields come through [`text`](Self::text) and
    /// [`field`](Self::field) instead.
    fn event(&mut self, event: StreamEvent);

    /// Takes a piece of prose, lent for the call: `span` is where it stands in the input,
    /// as in [`StreamEvent::Text`]. The default makes it that event.
    fn text(&mut self, text: &str, span: Span) {
        self.event(StreamEvent::Text { text: text.to_owned(), span });
    }

    /// Takes a completed field of the open request block, lent for the call (see
    /// [`StreamEvent::FieldCompleted`]). The default makes it that event; a consumer
    /// that only wants whole requests can ignore it.
    fn field(&mut self, key: &str, value: &str, closed: bool, span: Span) {
        self.event(StreamEvent::FieldCompleted {
            key: key.to_owned(),
            value: value.to_owned(),
            closed,
            span,
        });
    }
}

impl EventSink for Vec<StreamEvent> {
    #[inline]
    fn event(&mut self, event: StreamEvent) {
        self.push(event);
    }
}

impl EventSink for StreamCollector {
    fn event(&mut self, event: StreamEvent) {
        self.add(event);
    }

    fn text(&mut self, text: &str, _span: Span) {
        self.normal_text.push_str(text);
    }

    fn field(&mut self, _key: &str, _value: &str, _closed: bool, _span: Span) {}
}

/// A parser that reads a turn as it streams in.
///
/// Offsets in events are into the concatenation of all text pushed. Text comes as
/// `&str`, so a chunk boundary never splits a character. Events go to an [`EventSink`],
/// most simply a `Vec<StreamEvent>`.
///
/// An [`StreamParser`] is fed the turn delta by delta
/// ([`push`](StreamParser::push)) and reports [`StreamEvent`]s as soon as they are
/// decided: prose a UI can show at once, the start of a request, each completed field,
/// and each completed request (which an engine can run while the model is still
/// writing). [`finish`](StreamParser::finish) flushes what the end of the turn
/// decides.
///
/// Whatever the chunking, the requests and diagnostics reported equal what the protocol's
/// one-shot [`parse_turn`](crate::protocol::ToolCallingProtocol::parse_turn) returns for the whole
/// turn; [`StreamCollector`] assembles them into the same [`ParseOutcome`].
///
/// ```
/// use tool_calling::protocol::{StreamParser, StreamCollector, StreamEvent};
/// use tool_calling::protocol::vcp::VcpProtocol;
///
/// let vcp = VcpProtocol::default();
/// let mut parser = vcp.stream_parser();
/// let mut events = Vec::new();
/// for chunk in ["Let me check.\n<<<[TOOL_", "REQUEST]>>>\ntool_name:「始」clock「末」\n", "<<<[END_TOOL_REQUEST]>>>\nDone."] {
///     parser.push_text(chunk, &mut events);
/// }
/// parser.finish(&mut events);
/// assert!(events.iter().any(|e| matches!(e, StreamEvent::RequestCompleted(r) if r.tool_name == "clock")));
///
/// let mut collector = StreamCollector::new();
/// collector.extend(events);
/// assert_eq!(collector.normal_text(), "Let me check.\n\nDone.");
/// let outcome = collector.into_outcome();
/// assert_eq!(outcome.requests.len(), 1);
/// ```
pub trait StreamParser: Send {
    /// Feeds the next piece of the turn; appends the events it decides to `events`. A
    /// text protocol reads [`TurnDelta::Text`] and ignores the rest; a native protocol
    /// reads the tool-call deltas.
    fn push(&mut self, delta: &TurnDelta, events: &mut dyn EventSink);

    /// Feeds the next piece of the turn's text: the same as pushing a
    /// [`TurnDelta::Text`], without making one. Text protocols override it to read the
    /// text in place.
    fn push_text(&mut self, text: &str, events: &mut dyn EventSink) {
        self.push(&TurnDelta::Text(text.to_string()), events);
    }

    /// Declares the end of the turn; appends the remaining events to `events`. After
    /// this the parser is spent: further pushes and finishes add nothing.
    fn finish(&mut self, events: &mut dyn EventSink);
}

/// Assembles stream events into the [`ParseOutcome`] the one-shot parser returns, and
/// the prose.
///
/// ```
/// use tool_calling::protocol::{StreamParser, StreamCollector};
/// use tool_calling::protocol::vcp::VcpProtocol;
///
/// let vcp = VcpProtocol::default();
/// let mut parser = vcp.stream_parser();
/// let mut collector = StreamCollector::new();
/// let mut events = Vec::new();
/// for chunk in ["Sure.\n<<<[TOOL_REQ", "UEST]>>>\ntool_name:「始」t「末」\n", "<<<[END_TOOL_REQUEST]>>>"] {
///     parser.push_text(chunk, &mut events);
///     collector.extend(events.drain(..));
/// }
/// parser.finish(&mut events);
/// collector.extend(events);
/// assert_eq!(collector.normal_text(), "Sure.\n");
/// let outcome = collector.into_outcome();
/// assert_eq!(outcome.requests[0].tool_name, "t");
/// ```
#[derive(Debug, Default, Clone)]
pub struct StreamCollector {
    requests: Vec<ToolRequest>,
    diagnostics: Vec<Diagnostic>,
    normal_text: String,
    state: TurnState,
}

impl StreamCollector {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one event into account.
    pub fn add(&mut self, event: StreamEvent) {
        match event {
            StreamEvent::Text { text, .. } => self.normal_text.push_str(&text),
            StreamEvent::RequestCompleted(request) => self.requests.push(request),
            StreamEvent::Diagnostic(diagnostic) => self.diagnostics.push(diagnostic),
            StreamEvent::TurnState(state) => self.state = state,
            StreamEvent::RequestStarted { .. }
            | StreamEvent::FieldCompleted { .. }
            | StreamEvent::BlockDiscarded { .. } => {}
        }
    }

    /// The normal text seen so far (prose outside requests, reasoning removed).
    pub fn normal_text(&self) -> &str {
        &self.normal_text
    }

    /// What the parser has said about the turn so far.
    pub fn state(&self) -> &TurnState {
        &self.state
    }

    /// The requests seen so far.
    pub fn requests(&self) -> &[ToolRequest] {
        &self.requests
    }

    /// The outcome: requests in order, diagnostics sorted as the one-shot parser sorts
    /// them (by start offset; an unclosed-reasoning diagnostic first among equals), the
    /// normal text and the turn's state.
    pub fn into_outcome(self) -> ParseOutcome {
        let mut diagnostics = self.diagnostics;
        sort_diagnostics(&mut diagnostics);
        ParseOutcome::new(self.requests, diagnostics)
            .with_normal_text(self.normal_text)
            .with_state(self.state)
    }
}

impl Extend<StreamEvent> for StreamCollector {
    fn extend<I: IntoIterator<Item = StreamEvent>>(&mut self, events: I) {
        for event in events {
            self.add(event);
        }
    }
}

/// The order of [`ParseOutcome::diagnostics`]: by start offset, a reasoning diagnostic
/// (found before anything else in one pass) first among equals, otherwise as found.
pub(crate) fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by_key(|d| (d.span.start, d.kind != DiagnosticKind::UnclosedReasoning));
}

/// The stream parser of a protocol that reads turns whole: it keeps the turn as it
/// arrives and reads it with [`parse_turn`](ToolCallingProtocol::parse_turn) when it
/// ends, reporting then the normal text around the requests' spans, the requests, the
/// diagnostics and the turn's state. The default of
/// [`ToolCallingProtocol::stream_parser`].
pub(crate) struct WholeTurn<'p, P: ?Sized> {
    protocol: &'p P,
    turn: TurnAccumulator,
    finished: bool,
}

impl<'p, P: ToolCallingProtocol + ?Sized> WholeTurn<'p, P> {
    pub(crate) fn new(protocol: &'p P) -> Self {
        WholeTurn { protocol, turn: TurnAccumulator::new(), finished: false }
    }
}

impl<P: ToolCallingProtocol + ?Sized> StreamParser for WholeTurn<'_, P> {
    fn push(&mut self, delta: &TurnDelta, _events: &mut dyn EventSink) {
        if !self.finished {
            self.turn.push(delta);
        }
    }

    fn push_text(&mut self, text: &str, _events: &mut dyn EventSink) {
        if !self.finished {
            self.turn.push_text(text);
        }
    }

    fn finish(&mut self, events: &mut dyn EventSink) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let turn = std::mem::take(&mut self.turn).finish();
        whole_turn_events(self.protocol, &turn, events);
    }
}

/// The events of `turn` read whole by `protocol` (its one-shot
/// [`parse_turn`](ToolCallingProtocol::parse_turn)).
pub(crate) fn whole_turn_events<P: ToolCallingProtocol + ?Sized>(
    protocol: &P,
    turn: &AssistantTurn,
    events: &mut dyn EventSink,
) {
    outcome_events(&turn.text(), protocol.parse_turn(turn), events);
}

/// The events a whole-turn parse amounts to: the turn's state, then, in order, the
/// normal text between the requests' spans and the requests, then the diagnostics. The
/// outcome's own normal text, when it has one, is reported whole instead, first.
fn outcome_events(text: &str, outcome: ParseOutcome, events: &mut dyn EventSink) {
    if !outcome.state.is_empty() {
        events.event(StreamEvent::TurnState(outcome.state));
    }
    if !outcome.normal_text.is_empty() {
        let span = Span::new(0, text.len());
        events.event(StreamEvent::Text { text: outcome.normal_text, span });
        outcome.requests.into_iter().for_each(|r| events.event(StreamEvent::RequestCompleted(r)));
        outcome.diagnostics.into_iter().for_each(|d| events.event(StreamEvent::Diagnostic(d)));
        return;
    }
    let mut cursor = 0;
    let prose = |from: usize, to: usize, events: &mut dyn EventSink| {
        if let Some(piece) = text.get(from..to).filter(|p| !p.is_empty()) {
            events.text(piece, Span::new(from, to));
        }
    };
    for request in outcome.requests {
        let span = request.span;
        if span.start >= cursor && !span.is_empty() && span.slice(text).is_some() {
            prose(cursor, span.start, events);
            cursor = span.end;
        }
        events.event(StreamEvent::RequestCompleted(request));
    }
    prose(cursor, text.len(), events);
    outcome.diagnostics.into_iter().for_each(|d| events.event(StreamEvent::Diagnostic(d)));
}
