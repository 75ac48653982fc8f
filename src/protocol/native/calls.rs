//! A turn's native tool calls as requests, read one-shot or as the turn streams in.
//!
//! Every native protocol reads calls the same way once its provider's payload has become
//! an [`AssistantTurn`]: the call's id (one is assigned when the provider gave none), its
//! name as written, and its arguments, which must be a JSON object. Arguments that are
//! not valid JSON, or not an object, make the request incomplete with a problem that says
//! so (and an `invalid_payload` diagnostic): it is answered with an error, never run with
//! `{}`.

use std::collections::HashMap;

use serde_json::Value;

use super::NativeOptions;
use crate::model::{AssistantTurn, FinishReason, ToolCall, TurnAccumulator, TurnDelta};
use crate::protocol::ids::IdAssigner;
use crate::protocol::{
    Diagnostic, DiagnosticKind, EventSink, ParseOutcome, RequestIdStyle, StreamEvent, StreamParser,
};
use crate::request::RequestIdSource;
use crate::{Span, ToolRequest};

/// The request for one call; a diagnostic is added for arguments that cannot be used.
///
/// A call the reply ended before completing ([`ToolCall::incomplete`]) is reported as
/// cut off, with `finish`, the turn's finish reason.
pub(crate) fn request_from_call(
    call: &ToolCall,
    finish: Option<FinishReason>,
    ids: &mut IdAssigner,
    diagnostics: &mut Vec<Diagnostic>,
    max_depth: usize,
) -> ToolRequest {
    let mut request = ToolRequest::new(call.id.clone(), call.name.clone());
    request.id_source = if call.id.is_empty() { RequestIdSource::Assigned } else { RequestIdSource::Model };
    ids.assign(&mut request);
    let arguments = if call.incomplete { None } else { Some(call.arguments_json()) };
    let problem = match arguments {
        None => Some(format!(
            "the reply ended (finish reason: {}) before the call to `{}` was complete",
            finish.map_or("none given", |reason| reason.as_str()),
            call.name
        )),
        Some(Ok(Value::Object(args))) => {
            let depth = depth_of(&args);
            request.args = args.into_iter().collect();
            (depth > max_depth).then(|| {
                format!(
                    "the arguments of `{}` nest {depth} levels deep, more than the limit of {max_depth}: \
                     send flatter arguments",
                    call.name
                )
            })
        }
        Some(Ok(other)) => Some(format!(
            "the arguments of `{}` are {}, not a JSON object: send them as an object of named values",
            call.name,
            crate::protocol::json_kind(&other)
        )),
        Some(Err(e)) => Some(format!(
            "the arguments of `{}` are not valid JSON ({e}): send them as one JSON object",
            call.name
        )),
    };
    if let Some(problem) = problem {
        diagnostics.push(Diagnostic::new(DiagnosticKind::InvalidPayload, problem.clone(), Span::default()));
        request = request.with_problem(problem);
    }
    if call.name.is_empty() {
        request = request.with_problem("the call has no tool name: name the tool to call");
    }
    request
}

/// How deeply the values of `args` nest: 1 for an object of plain values, one more for
/// each object or array inside. Counted without recursion, so any depth is safe.
fn depth_of(args: &serde_json::Map<String, Value>) -> usize {
    let mut deepest = 1;
    let mut stack: Vec<(&Value, usize)> = args.values().map(|v| (v, 1)).collect();
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            _ => continue,
        }
        deepest = deepest.max(depth + 1);
    }
    deepest
}

/// Every native call of `turn` as a request, in order.
pub(crate) fn parse_calls(turn: &AssistantTurn, options: &NativeOptions) -> ParseOutcome {
    let mut ids = IdAssigner::new(options.request_ids);
    let mut diagnostics = Vec::new();
    let requests = turn
        .tool_calls()
        .map(|call| {
            request_from_call(
                call,
                turn.finish_reason,
                &mut ids,
                &mut diagnostics,
                options.max_argument_depth,
            )
        })
        .collect();
    ParseOutcome::new(requests, diagnostics).with_normal_text(turn.text())
}

/// Reads a native turn as its deltas arrive: text is reported at once, and each call as
/// a request as soon as its end arrives (so an engine can run it while the rest of the
/// turn streams), in call order. Whatever the deltas' grouping, the requests and
/// diagnostics equal what the one-shot parse of the whole turn gives.
///
/// ```
/// use tool_calling::model::TurnDelta;
/// use tool_calling::protocol::native::NativeStreamParser;
/// use tool_calling::protocol::{StreamParser, RequestIdStyle, StreamEvent};
///
/// let mut parser = NativeStreamParser::new(RequestIdStyle::Sequential);
/// let mut events = Vec::new();
/// parser.push(&TurnDelta::ToolCallStart { index: 0, id: "c1".into(), name: "calc_add".into() }, &mut events);
/// parser.push(&TurnDelta::ToolCallArguments { index: 0, fragment: "{\"a\": 1}".into() }, &mut events);
/// assert!(!events.iter().any(|e| matches!(e, StreamEvent::RequestCompleted(_))));
/// parser.push(&TurnDelta::ToolCallEnd { index: 0 }, &mut events);
/// assert!(matches!(events.last(), Some(StreamEvent::RequestCompleted(r)) if r.args["a"] == 1));
/// ```
#[derive(Debug)]
pub struct NativeStreamParser {
    turn: TurnAccumulator,
    ids: IdAssigner,
    /// Call indexes in the order the calls started.
    order: Vec<usize>,
    /// Position of each call index in `order`.
    position: HashMap<usize, usize>,
    /// Which calls (by position) have ended.
    ended: Vec<bool>,
    /// Calls before this position have been reported.
    reported: usize,
    /// Bytes of text reported so far.
    text_len: usize,
    finished: bool,
    max_depth: usize,
}

impl NativeStreamParser {
    /// A parser naming id-less calls in `style`.
    pub fn new(style: RequestIdStyle) -> Self {
        Self::with_options(NativeOptions::default().request_ids(style))
    }

    /// A parser with `options` (id style, argument depth limit).
    pub fn with_options(options: NativeOptions) -> Self {
        NativeStreamParser {
            turn: TurnAccumulator::new(),
            ids: IdAssigner::new(options.request_ids),
            order: Vec::new(),
            position: HashMap::new(),
            ended: Vec::new(),
            reported: 0,
            text_len: 0,
            finished: false,
            max_depth: options.max_argument_depth,
        }
    }

    /// The turn so far.
    pub fn turn(&self) -> &AssistantTurn {
        self.turn.turn()
    }

    fn position_of(&mut self, index: usize) -> usize {
        *self.position.entry(index).or_insert_with(|| {
            self.order.push(index);
            self.ended.push(false);
            self.order.len() - 1
        })
    }

    /// Reports the calls, in order, up to the first that has not ended (all of them when
    /// `all`). A call that ended incomplete waits for the end of the turn: its problem
    /// names the turn's finish reason, which only the end of the stream gives.
    fn report(&mut self, all: bool, events: &mut dyn EventSink) {
        while self.reported < self.order.len()
            && (all || self.ended.get(self.reported).copied().unwrap_or(false))
        {
            let index = self.order.get(self.reported).copied().unwrap_or_default();
            if !all && self.turn.call(index).is_some_and(|call| call.incomplete) {
                break;
            }
            self.reported += 1;
            let Some(call) = self.turn.call(index) else { continue };
            let mut diagnostics = Vec::new();
            let finish = self.turn.turn().finish_reason;
            let request = request_from_call(call, finish, &mut self.ids, &mut diagnostics, self.max_depth);
            diagnostics.into_iter().for_each(|d| events.event(StreamEvent::Diagnostic(d)));
            events.event(StreamEvent::RequestCompleted(request));
        }
    }
}

impl StreamParser for NativeStreamParser {
    fn push(&mut self, delta: &TurnDelta, events: &mut dyn EventSink) {
        if self.finished {
            return;
        }
        self.turn.push(delta);
        match delta {
            TurnDelta::Text(text) if !text.is_empty() => {
                let span = Span::new(self.text_len, self.text_len + text.len());
                self.text_len += text.len();
                events.text(text, span);
            }
            TurnDelta::ToolCallStart { index, .. } if !self.position.contains_key(index) => {
                self.position_of(*index);
                events.event(StreamEvent::RequestStarted { offset: self.text_len });
            }
            TurnDelta::ToolCallArguments { index, .. }
            | TurnDelta::ToolCallSignature { index, .. }
            | TurnDelta::ToolCallIncomplete { index } => {
                self.position_of(*index);
            }
            TurnDelta::ToolCallEnd { index } => {
                let position = self.position_of(*index);
                if let Some(ended) = self.ended.get_mut(position) {
                    *ended = true;
                }
                self.report(false, events);
            }
            _ => {}
        }
    }

    fn finish(&mut self, events: &mut dyn EventSink) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.report(true, events);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::StreamCollector;

    /// A call that ends incomplete in the middle of a stream (a Vertex piece that cannot be
    /// placed) is reported once the turn's finish reason is known, as the one-shot read
    /// reports it; the complete call after it waits with it, in order.
    #[test]
    fn a_call_cut_mid_stream_is_reported_with_the_turn_s_finish_reason() {
        let start = |index: usize, name: &str| TurnDelta::ToolCallStart {
            index,
            id: String::new(),
            name: name.to_string(),
        };
        let deltas = [
            start(0, "f"),
            TurnDelta::ToolCallIncomplete { index: 0 },
            TurnDelta::ToolCallEnd { index: 0 },
            start(1, "g"),
            TurnDelta::ToolCallArguments { index: 1, fragment: "{}".into() },
            TurnDelta::ToolCallEnd { index: 1 },
            TurnDelta::Finish(FinishReason::ToolCalls),
        ];
        let mut parser = NativeStreamParser::new(RequestIdStyle::Sequential);
        let mut events = Vec::new();
        let mut accumulator = TurnAccumulator::new();
        for delta in &deltas {
            accumulator.push(delta);
            parser.push(delta, &mut events);
            if matches!(delta, TurnDelta::ToolCallEnd { index: 0 }) {
                assert!(!events.iter().any(|e| matches!(e, StreamEvent::RequestCompleted(_))));
            }
        }
        parser.finish(&mut events);
        let mut collector = StreamCollector::new();
        collector.extend(events);
        let streamed = collector.into_outcome();
        let one_shot = parse_calls(
            &accumulator.finish(),
            &NativeOptions::default().request_ids(RequestIdStyle::Sequential),
        );
        assert_eq!(streamed.requests, one_shot.requests);
        assert!(
            streamed.requests[0].problems[0].contains("finish reason: tool_calls"),
            "{:?}",
            streamed.requests
        );
        assert!(streamed.requests[1].complete);
    }
}
