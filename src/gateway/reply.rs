//! The upstream's reply, read with the protocol as it streams in: text the client may
//! show, reasoning, and calls of the tools it offered.

use serde_json::Value;

use super::request::Offer;
use crate::Span;
use crate::model::FinishReason;
use crate::protocol::textfmt::Detected;
use crate::protocol::{EventSink, StreamEvent, StreamParser, ToolCallingProtocol, TurnState, reasoning};
use crate::providers::openai_chat::ChatFinishReason;
use crate::tools::TextCoercion;

/// One piece of the reply, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    /// Text for the client (`content`).
    Text(String),
    /// Reasoning (`reasoning_content`).
    Reasoning(String),
    /// A call of an offered tool.
    Call(Call),
}

/// A call as the client gets it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    /// The call's number in the reply, from 0.
    pub index: usize,
    pub id: String,
    pub name: String,
    /// The arguments' JSON text (an object).
    pub arguments: String,
}

/// How the reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
}

impl Finish {
    /// The reply's finish: `tool_calls` when it holds a call, else the upstream's.
    pub(crate) fn of(calls: usize, upstream: Option<FinishReason>) -> Self {
        match upstream {
            _ if calls > 0 => Finish::ToolCalls,
            Some(FinishReason::Length) => Finish::Length,
            Some(FinishReason::ContentFilter) => Finish::ContentFilter,
            _ => Finish::Stop,
        }
    }

    /// Chat Completions' `finish_reason`.
    pub(crate) fn openai(self) -> ChatFinishReason {
        match self {
            Finish::Stop => ChatFinishReason::Stop,
            Finish::Length => ChatFinishReason::Length,
            Finish::ToolCalls => ChatFinishReason::ToolCalls,
            Finish::ContentFilter => ChatFinishReason::ContentFilter,
        }
    }
}

/// Reads the upstream's text with the protocol, one delta at a time.
pub(crate) struct ReplyReader<'p> {
    parser: Box<dyn StreamParser + 'p>,
    read: Read<'p>,
}

/// What the reader knows of the reply so far.
struct Read<'p> {
    protocol: &'p dyn ToolCallingProtocol,
    /// Everything the upstream wrote, for the spans the parser reports.
    text: String,
    /// Where the last piece that was shown or read ended.
    covered: usize,
    state: TurnState,
    /// Calls handed out so far.
    calls: usize,
    /// Requests returned as text (naming a tool that was not offered, or past the one
    /// call `parallel_tool_calls: false` allows).
    refused: usize,
    /// Calls withheld, each with why: cut off by the end of the reply, or with
    /// arguments that fail the tool's schema. Neither reaches the client, as a call or
    /// as its markup.
    withheld: Vec<String>,
    /// Whether the client gets several calls (`parallel_tool_calls` not `false`).
    parallel: bool,
}

impl<'p> ReplyReader<'p> {
    pub(crate) fn new(protocol: &'p dyn ToolCallingProtocol, parallel: bool) -> Self {
        ReplyReader {
            parser: protocol.stream_parser(),
            read: Read {
                protocol,
                text: String::new(),
                covered: 0,
                state: TurnState::default(),
                calls: 0,
                refused: 0,
                withheld: Vec::new(),
                parallel,
            },
        }
    }

    /// Calls handed out so far.
    pub(crate) fn calls(&self) -> usize {
        self.read.calls
    }

    /// Requests returned as text (naming a tool that was not offered, or past the one
    /// call `parallel_tool_calls: false` allows).
    #[cfg(test)]
    fn refused(&self) -> usize {
        self.read.refused
    }

    /// Calls withheld (cut off, or with arguments that fail the tool's schema), each
    /// with why, in words meant for the model.
    pub(crate) fn withheld(&self) -> &[String] {
        &self.read.withheld
    }

    /// What the protocol found the reply written in (`auto`'s detected format).
    pub(crate) fn dialect(&self) -> Option<&'static str> {
        self.read.state.dialect.map(Detected::id)
    }

    /// The upstream wrote `text`; appends the pieces now decided.
    pub(crate) fn push(&mut self, text: &str, offer: &Offer, out: &mut Vec<Piece>) {
        self.read.text.push_str(text);
        self.parser.push_text(text, &mut Pieces { read: &mut self.read, offer, out });
    }

    /// The upstream's reply ended; appends the last pieces.
    pub(crate) fn finish(&mut self, offer: &Offer, out: &mut Vec<Piece>) {
        self.parser.finish(&mut Pieces { read: &mut self.read, offer, out });
        let end = self.read.text.len();
        self.read.hidden_until(end, out);
    }
}

/// The parser's events as pieces of the reply, in order, as they come (prose borrowed).
struct Pieces<'r, 'p> {
    read: &'r mut Read<'p>,
    offer: &'r Offer,
    out: &'r mut Vec<Piece>,
}

impl EventSink for Pieces<'_, '_> {
    fn event(&mut self, event: StreamEvent) {
        let Pieces { read, offer, out } = self;
        match event {
            StreamEvent::Text { text, span } => read.text_piece(&text, span, out),
            StreamEvent::RequestCompleted(request) => {
                read.hidden_until(request.span.start, out);
                read.request(&request, offer, out);
                read.covered = read.covered.max(request.span.end);
            }
            StreamEvent::BlockDiscarded { span } => {
                read.hidden_until(span.start, out);
                read.covered = read.covered.max(span.end);
            }
            StreamEvent::TurnState(state) => read.state = state,
            StreamEvent::Diagnostic(diagnostic) => {
                tracing::debug!(kind = ?diagnostic.kind, message = %diagnostic.message, "upstream reply");
            }
            _ => {}
        }
    }

    fn text(&mut self, text: &str, span: Span) {
        self.read.text_piece(text, span, self.out);
    }

    fn field(&mut self, _key: &str, _value: &str, _closed: bool, _span: Span) {}
}

impl Read<'_> {
    /// Prose the protocol decided.
    fn text_piece(&mut self, text: &str, span: Span, out: &mut Vec<Piece>) {
        self.hidden_until(span.start, out);
        push_text(out, text);
        self.covered = self.covered.max(span.end);
    }

    /// The text between the last piece and `start` was hidden by the protocol: its
    /// reasoning (`<think>` … `</think>`) goes to the client as reasoning.
    fn hidden_until(&mut self, start: usize, out: &mut Vec<Piece>) {
        if start <= self.covered {
            return;
        }
        let Some(gap) = self.text.get(self.covered..start) else { return };
        for span in reasoning::hidden_spans(gap) {
            // A hidden span is its tags and what they enclose; the tags are not reasoning.
            let Some(hidden) = span.slice(gap) else { continue };
            let inner = strip_tags(hidden);
            if !inner.trim().is_empty() {
                out.push(Piece::Reasoning(inner));
            }
        }
        self.covered = start;
    }

    /// A request the protocol read: a call of an offered tool whose arguments fit its
    /// schema; a request cut off or whose arguments do not fit, withheld (its markup
    /// shown to no one); any other, its text as written.
    fn request(&mut self, request: &crate::ToolRequest, offer: &Offer, out: &mut Vec<Piece>) {
        if !request.complete {
            let why = request.problems.first().map_or("the call is incomplete", String::as_str);
            tracing::warn!(tool = %request.tool_name, problem = %why, "a call cut off: not handed on, nor shown");
            self.withheld.push(format!("Your call to `{}` was not made: {why}.", request.tool_name));
            return;
        }
        let invocations = self.protocol.resolve(request, &self.state, &offer.catalog);
        let callable = !invocations.is_empty()
            && invocations.iter().all(|i| i.as_ref().is_ok_and(|i| offer.callable.contains(&i.method)))
            && (self.parallel || self.calls + invocations.len() <= 1);
        if !callable {
            self.refused += 1;
            tracing::debug!(tool = %request.tool_name, "a request returned as text");
            if let Some(raw) = request.span.slice(&self.text) {
                push_text(out, raw);
            }
            return;
        }
        let mut calls = Vec::new();
        for invocation in invocations.into_iter().flatten() {
            let schema = offer.catalog.method(&invocation.method).map(|(_, m)| &m.parameters);
            let args = match schema {
                Some(schema) => TextCoercion::new().coerce_args(&invocation.args, schema),
                None => invocation.args.into_iter().collect(),
            };
            if let Some(Err(errors)) = offer.validators.get(&invocation.method).map(|v| v.validate(&args)) {
                tracing::warn!(tool = %invocation.method, %errors, "a call whose arguments fail the tool's schema: not handed on");
                self.withheld.push(format!("Your call to `{}` was not made: {errors}.", invocation.method));
                return;
            }
            calls.push((invocation.method, args));
        }
        for (name, args) in calls {
            out.push(Piece::Call(Call {
                index: self.calls,
                id: call_id(),
                name,
                arguments: Value::Object(args).to_string(),
            }));
            self.calls += 1;
        }
    }
}

/// Appends text, joined to the text before it when that is the last piece.
fn push_text(out: &mut Vec<Piece>, text: &str) {
    if text.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(Piece::Text(last)) => last.push_str(text),
        _ => out.push(Piece::Text(text.to_string())),
    }
}

/// A hidden span without its reasoning tags: the opening tag it starts with, and the
/// closing tag it ends with when it was closed. (Tags nested inside are kept: they are
/// the model's text.)
fn strip_tags(hidden: &str) -> String {
    let inner = match hidden.find('>').and_then(|end| hidden.get(end + 1..)) {
        Some(rest) if hidden.starts_with('<') => rest,
        _ => hidden,
    };
    let closing = inner.rfind('<').and_then(|start| Some((inner.get(..start)?, inner.get(start + 1..)?)));
    let inner = match closing {
        Some((before, tag)) if inner.ends_with('>') && tag.trim_start().starts_with('/') => before,
        _ => inner,
    };
    inner.to_string()
}

/// A call id in OpenAI's style.
pub(crate) fn call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::gateway::request::{Function, TurnRequest};
    use crate::protocol::textfmt::{TextFormat, TextFormatProtocol};
    use crate::protocol::vcp::VcpProtocol;

    fn offer(names: &[&str]) -> Offer {
        let functions = names
            .iter()
            .map(|name| Function {
                name: name.to_string(),
                description: String::new(),
                parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            })
            .collect();
        TurnRequest { functions, ..TurnRequest::default() }.offer().unwrap()
    }

    fn read(protocol: &dyn ToolCallingProtocol, chunks: &[&str], offer: &Offer) -> Vec<Piece> {
        let mut reader = ReplyReader::new(protocol, true);
        let mut out = Vec::new();
        for chunk in chunks {
            reader.push(chunk, offer, &mut out);
        }
        reader.finish(offer, &mut out);
        // Adjacent text pieces from different pushes are one for the comparison.
        let mut merged: Vec<Piece> = Vec::new();
        for piece in out {
            match (merged.last_mut(), piece) {
                (Some(Piece::Text(a)), Piece::Text(b)) => a.push_str(&b),
                (_, piece) => merged.push(piece),
            }
        }
        merged
    }

    #[test]
    fn vcp_calls_text_and_reasoning() {
        let vcp = VcpProtocol::default();
        let reply = "<think>Need a count.</think>Sure.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」count「末」,\nn:「始」3「末」\n<<<[END_TOOL_REQUEST]>>>";
        let offer = offer(&["count"]);
        let pieces = read(&vcp, &[reply], &offer);
        assert_eq!(pieces[0], Piece::Reasoning("Need a count.".into()));
        assert_eq!(pieces[1], Piece::Text("Sure.\n".into()));
        let Piece::Call(call) = &pieces[2] else { panic!("{pieces:?}") };
        assert_eq!((call.index, call.name.as_str()), (0, "count"));
        assert_eq!(call.arguments, r#"{"n":3}"#, "typed by the schema");
        // Streamed a byte at a time, the same pieces (ids aside).
        let chunks: Vec<String> = reply.chars().map(String::from).collect();
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let streamed = read(&vcp, &chunks, &offer);
        assert_eq!(streamed.len(), 3);
        assert!(matches!(&streamed[2], Piece::Call(c) if c.arguments == call.arguments));
    }

    #[test]
    fn calls_of_tools_not_offered_are_text_and_cut_off_calls_are_withheld() {
        let hermes = TextFormatProtocol::new(TextFormat::Hermes);
        let offer = offer(&["count"]);
        let unknown = r#"A<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>B"#;
        let reply = format!(r#"{unknown}<tool_call>{{"name": "count", "arg"#);
        for chunks in [vec![reply.as_str()], reply.split_inclusive('"').collect()] {
            let mut reader = ReplyReader::new(&hermes, true);
            let mut out = Vec::new();
            for chunk in &chunks {
                reader.push(chunk, &offer, &mut out);
            }
            reader.finish(&offer, &mut out);
            let text: String =
                out.iter().map(|p| if let Piece::Text(t) = p { t.as_str() } else { "" }).collect();
            assert_eq!(text, unknown, "the unknown call is text; the cut one is not shown");
            assert!(!out.iter().any(|p| matches!(p, Piece::Call(_))));
            assert_eq!(reader.withheld().len(), 1, "{:?}", reader.withheld());
            assert!(reader.withheld()[0].contains("`count`"), "{:?}", reader.withheld());
        }
    }

    #[test]
    fn calls_whose_arguments_fail_the_schema_are_withheld() {
        let hermes = TextFormatProtocol::new(TextFormat::Hermes);
        let offer = offer(&["count"]);
        // `n` is an integer: a string of digits is coerced, a word is not.
        let good = r#"<tool_call>{"name": "count", "arguments": {"n": "7"}}</tool_call>"#;
        let bad = r#"<tool_call>{"name": "count", "arguments": {"n": "seven"}}</tool_call>"#;
        let mut reader = ReplyReader::new(&hermes, true);
        let mut out = Vec::new();
        reader.push(&format!("{bad}{good}"), &offer, &mut out);
        reader.finish(&offer, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(matches!(&out[0], Piece::Call(c) if c.arguments == r#"{"n":7}"#), "{out:?}");
        assert_eq!(reader.calls(), 1);
        assert!(reader.withheld()[0].contains("invalid arguments"), "{:?}", reader.withheld());
    }

    #[test]
    fn without_parallel_calls_only_the_first_is_a_call() {
        let hermes = TextFormatProtocol::new(TextFormat::Hermes);
        let offer = offer(&["count"]);
        let one = r#"<tool_call>{"name": "count", "arguments": {"n": 1}}</tool_call>"#;
        let mut reader = ReplyReader::new(&hermes, false);
        let mut out = Vec::new();
        reader.push(&format!("{one}{one}"), &offer, &mut out);
        reader.finish(&offer, &mut out);
        assert!(matches!(&out[0], Piece::Call(_)));
        assert_eq!(out[1], Piece::Text(one.into()));
        assert_eq!((reader.calls(), reader.refused()), (1, 1));
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(Finish::of(1, Some(FinishReason::Stop)), Finish::ToolCalls);
        assert_eq!(Finish::of(0, Some(FinishReason::Length)).openai(), ChatFinishReason::Length);
        assert_eq!(
            Finish::of(0, Some(FinishReason::ContentFilter)).openai(),
            ChatFinishReason::ContentFilter
        );
        assert_eq!(Finish::of(0, None), Finish::Stop);
    }
}
