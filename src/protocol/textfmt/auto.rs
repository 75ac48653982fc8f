//! `auto`: recognises which text protocol a reply uses (VCP or one of the open-model
//! formats) from the reply itself, and reads it with that protocol.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::deepseek::{CALL_BEGIN as DS_CALL, CALLS_BEGIN as DS_CALLS};
use super::escape::neutralize_tokens;
use super::hermes::OPEN as TOOL_CALL;
use super::kimi_k2::SECTION as KIMI;
use super::llama3::TAG as PYTHON_TAG;
use super::mistral::TOKEN as MISTRAL;
use super::pythonic::{START as PYTHON_START, list_starts};
use super::{ParsedReply, TextFormat, TextFormatOptions, TextFormatProtocol, TextFormatStreamParser};
use crate::model::{AssistantTurn, Message, TurnDelta};
use crate::protocol::vcp::{VcpProtocol, VcpStreamParser};
use crate::protocol::{
    IncrementalParser, ParseOutcome, StreamCollector, StreamEvent, ToolCallingProtocol, ToolDeclarations,
};
use crate::request::Invocation;
use crate::tools::ToolCatalog;
use crate::{Span, ToolDefinition, ToolError, ToolExecutionResult};

/// Which text protocol a reply was found to use.
///
/// ```
/// use tool_calling::protocol::textfmt::{AutoProtocol, Detected, TextFormat};
/// let vcp = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n<<<[END_TOOL_REQUEST]>>>";
/// assert_eq!(AutoProtocol::detect(vcp), Some(Detected::Vcp));
/// let detected = AutoProtocol::detect(r#"[get_weather(city="Paris")]"#).unwrap();
/// assert_eq!(detected, Detected::Format(TextFormat::Pythonic));
/// assert_eq!(detected.id(), "pythonic");
/// assert_eq!(AutoProtocol::detect("Just prose."), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Detected {
    /// VCP (`<<<[TOOL_REQUEST]>>>` blocks).
    Vcp,
    /// One of the open-model formats.
    Format(TextFormat),
}

impl Detected {
    /// The protocol id: `vcp`, or the format's.
    pub fn id(self) -> &'static str {
        match self {
            Detected::Vcp => "vcp",
            Detected::Format(format) => format.id(),
        }
    }
}

const VCP_START: &str = "<<<[TOOL_REQUEST";
const FUNCTION: &str = "<function=";
const MINIMAX: &str = "<minimax:tool_call>";
const DS_SEP: &str = "<｜tool▁sep｜>";
const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Markers that decide a format by themselves, or after a look at what follows.
const MARKERS: [&str; 10] =
    [VCP_START, TOOL_CALL, FUNCTION, MISTRAL, PYTHON_TAG, PYTHON_START, DS_CALLS, DS_CALL, KIMI, MINIMAX];

/// What the text says so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The reply uses `Detected`; its markup begins at `at`.
    Decided(Detected, usize),
    /// Nothing decided: the text before `at` is prose in every protocol.
    Undecided(usize),
}

/// The detector's place in a reply.
#[derive(Debug, Clone, Copy)]
struct Detector {
    /// Everything before is prose.
    pos: usize,
    in_think: bool,
    /// Only whitespace so far.
    reply_start: bool,
}

impl Detector {
    fn new() -> Self {
        Detector { pos: 0, in_think: false, reply_start: true }
    }

    /// Looks at `text` (the whole reply so far) from where it stopped.
    fn step(&mut self, text: &str, at_end: bool) -> Step {
        loop {
            if self.in_think {
                let from = self.pos;
                match text.as_bytes().get(from..).and_then(|h| super::driver::find_in(h, THINK_CLOSE)) {
                    Some(at) => {
                        self.pos = from + at + THINK_CLOSE.len();
                        self.in_think = false;
                        self.reply_start = false;
                        continue;
                    }
                    None => {
                        // All of it is prose (reasoning); only a cut-off closing tag waits.
                        let hold = if at_end { text.len() } else { hold_start(text, from, &[THINK_CLOSE]) };
                        self.pos = hold.max(from);
                        return Step::Undecided(hold);
                    }
                }
            }
            if self.reply_start {
                let rest = text.get(self.pos..).unwrap_or_default();
                let blank = rest.len() - rest.trim_start().len();
                if let Some(decision) = bare_llama(rest.get(blank..).unwrap_or_default(), at_end) {
                    match decision {
                        Some(true) => {
                            return Step::Decided(Detected::Format(TextFormat::Llama3Json), self.pos + blank);
                        }
                        Some(false) => {}
                        None => return Step::Undecided(self.pos),
                    }
                }
            }
            // The earliest marker (or `<think>`) from here.
            let from = self.pos;
            let hay = text.as_bytes().get(from..).unwrap_or_default();
            let mut best: Option<(usize, usize)> = None;
            for (i, marker) in MARKERS.iter().chain([&THINK_OPEN]).enumerate() {
                if let Some(at) = super::driver::find_in(hay, marker)
                    && best.is_none_or(|(b, _)| from + at < b)
                {
                    best = Some((from + at, i));
                }
            }
            // A cut-off marker at the end of the text (nothing decides before it).
            let hold = if at_end { text.len() } else { hold_start(text, from, &all_tokens()) };
            let limit = best.map_or(hold, |(at, _)| at);
            // A Python call list in prose, before that.
            if let Some(step) = self.pythonic(text, from, limit, at_end) {
                return step;
            }
            let Some((at, i)) = best else {
                self.note_prose(text, from, hold);
                return Step::Undecided(hold);
            };
            if i == MARKERS.len() {
                // `<think>`: prose in every protocol, and what is inside decides nothing.
                self.note_prose(text, from, at);
                self.pos = at + THINK_OPEN.len();
                self.in_think = true;
                continue;
            }
            let detected = match MARKERS.get(i).copied().unwrap_or_default() {
                VCP_START => Some(Detected::Vcp),
                TOOL_CALL => after_tool_call(text, at + TOOL_CALL.len(), at_end),
                FUNCTION => Some(Detected::Format(TextFormat::Qwen3CoderXml)),
                MISTRAL => Some(Detected::Format(TextFormat::Mistral)),
                PYTHON_TAG => Some(Detected::Format(TextFormat::Llama3Json)),
                PYTHON_START => Some(Detected::Format(TextFormat::Pythonic)),
                DS_CALLS | DS_CALL => deepseek_version(text, at, at_end),
                KIMI => Some(Detected::Format(TextFormat::KimiK2)),
                _ => Some(Detected::Format(TextFormat::MinimaxM2)),
            };
            self.note_prose(text, from, at);
            return match detected {
                Some(detected) => Step::Decided(detected, at),
                None => {
                    self.pos = at;
                    Step::Undecided(at)
                }
            };
        }
    }

    /// A pythonic call list before `limit`: decided, undecided, or none.
    fn pythonic(&mut self, text: &str, from: usize, limit: usize, at_end: bool) -> Option<Step> {
        let mut search = from;
        while let Some(found) = text.as_bytes().get(search..limit).and_then(|hay| memchr::memchr(b'[', hay)) {
            let at = search + found;
            match list_starts(text, at) {
                Some(true) => {
                    self.note_prose(text, from, at);
                    return Some(Step::Decided(Detected::Format(TextFormat::Pythonic), at));
                }
                None if !at_end => {
                    self.note_prose(text, from, at);
                    self.pos = at;
                    return Some(Step::Undecided(at));
                }
                _ => search = at + 1,
            }
        }
        None
    }

    fn note_prose(&mut self, text: &str, from: usize, to: usize) {
        if self.reply_start && text.get(from..to).is_some_and(|t| !t.trim().is_empty()) {
            self.reply_start = false;
        }
        self.pos = self.pos.max(to);
    }
}

fn all_tokens() -> Vec<&'static str> {
    MARKERS.iter().copied().chain([THINK_OPEN]).collect()
}

/// Where a tail of `text[from..]` that may begin one of `tokens` starts (else its end).
fn hold_start(text: &str, from: usize, tokens: &[&str]) -> usize {
    super::driver::partial_suffix(text, from, tokens).unwrap_or(text.len())
}

/// How much whitespace a decision waits through before deciding without what follows it
/// (so that a stream of blanks costs linear time).
const MAX_UNDECIDED_BLANK: usize = 256;

/// A reply that opens with `{`: is it a Llama call (`{"name": …`)? `None`: not a bare
/// object at all; `Some(None)`: undecided.
fn bare_llama(rest: &str, at_end: bool) -> Option<Option<bool>> {
    let body = rest.strip_prefix('{')?;
    if body.len() - body.trim_start().len() > MAX_UNDECIDED_BLANK {
        return Some(Some(false));
    }
    let body = body.trim_start();
    const KEY: &str = "\"name\"";
    if body.starts_with(KEY) {
        return Some(Some(true));
    }
    if !at_end && (body.is_empty() || KEY.starts_with(body)) {
        return Some(None);
    }
    Some(Some(false))
}

/// After `<tool_call>`: a JSON object (hermes), `<function=` (Qwen3-Coder), or a name:
/// GLM-4.5 when a line break follows the name, else GLM-4.7.
fn after_tool_call(text: &str, from: usize, at_end: bool) -> Option<Detected> {
    let rest = text.get(from..).unwrap_or_default().trim_start();
    let blank = text.get(from..).map_or(0, |r| r.len() - r.trim_start().len());
    if blank > MAX_UNDECIDED_BLANK {
        // A decision does not wait through unbounded whitespace (whatever follows it):
        // `<tool_call>` and blanks are hermes'.
        return Some(Detected::Format(TextFormat::Hermes));
    }
    if rest.starts_with('{') || rest.starts_with('[') {
        return Some(Detected::Format(TextFormat::Hermes));
    }
    const FUNCTION_TAG: &str = "<function";
    if rest.starts_with(FUNCTION_TAG) {
        return Some(Detected::Format(TextFormat::Qwen3CoderXml));
    }
    if rest.is_empty() || (rest.starts_with('<') && FUNCTION_TAG.starts_with(rest)) {
        return at_end.then_some(Detected::Format(TextFormat::Hermes));
    }
    let name_end = rest.find(|c: char| c.is_whitespace() || c == '<');
    if name_end.unwrap_or(rest.len()) > MAX_UNDECIDED_BLANK {
        // Not a name a model writes; GLM-4.7's reading takes anything.
        return Some(Detected::Format(TextFormat::Glm47));
    }
    match name_end.and_then(|end| rest.get(end..)) {
        // A carriage return may be the first half of a line break.
        Some("\r") if !at_end => None,
        Some(after) if after.starts_with('\n') || after.starts_with("\r\n") => {
            Some(Detected::Format(TextFormat::Glm45))
        }
        Some(_) => Some(Detected::Format(TextFormat::Glm47)),
        None => at_end.then_some(Detected::Format(TextFormat::Glm47)),
    }
}

/// DeepSeek V3 writes `function<｜tool▁sep｜>NAME`, V3.1 `NAME<｜tool▁sep｜>`: decided at
/// the first separator, looked for within a bounded distance of the markers (beyond it,
/// V3.1).
fn deepseek_version(text: &str, at: usize, at_end: bool) -> Option<Detected> {
    let window = |from: usize| {
        let rest = text.get(from..).unwrap_or_default();
        let mut end = rest.len().min(MAX_UNDECIDED_BLANK + DS_CALL.len() + DS_SEP.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        (rest.get(..end).unwrap_or_default(), rest.len() > end)
    };
    let (rest, longer) = window(at);
    let Some(call) = rest.find(DS_CALL).map(|c| at + c + DS_CALL.len()) else {
        return (longer || at_end).then_some(Detected::Format(TextFormat::DeepSeekV31));
    };
    let (head, longer) = window(call);
    match head.find(DS_SEP).and_then(|s| head.get(..s)) {
        Some(head) if head.trim() == "function" => Some(Detected::Format(TextFormat::DeepSeekV3)),
        Some(_) => Some(Detected::Format(TextFormat::DeepSeekV31)),
        None if longer => Some(Detected::Format(TextFormat::DeepSeekV31)),
        None => at_end.then_some(Detected::Format(TextFormat::DeepSeekV3)),
    }
}

/// Which format each recent request was read in, so results go back in it. Bounded.
#[derive(Debug, Default)]
struct Memory {
    by_id: HashMap<String, Detected>,
    order: VecDeque<String>,
}

const MEMORY: usize = 4096;

impl Memory {
    fn note(&mut self, id: &str, detected: Detected) {
        if self.by_id.insert(id.to_string(), detected).is_none() {
            self.order.push_back(id.to_string());
            while self.order.len() > MEMORY {
                if let Some(old) = self.order.pop_front() {
                    self.by_id.remove(&old);
                }
            }
        }
    }
}

/// The `auto` protocol: reads a reply in whichever text protocol it uses, VCP or one of
/// the [`TextFormat`]s, deciding as soon as the text decides it (streaming included),
/// and answers each request's results in the protocol it was read in.
///
/// Text before the first markup is normal text in every protocol, so it is reported
/// before the decision; a `<think>` block decides nothing. Markers that several formats
/// share are told apart by what follows: `<tool_call>` then `{` is `hermes`, then
/// `<function=` is `qwen3_coder_xml`, then a name and a line break is `glm45`, a name
/// and anything else `glm47`; DeepSeek's first call says V3 (`function<｜tool▁sep｜>`) or
/// V3.1. A reply that starts with `{"name"` is `llama3_json`; a `[name(` list is
/// `pythonic`. The tools are offered in the format given to
/// [`with_prompt_format`](Self::with_prompt_format) (VCP by default).
///
/// ```
/// use tool_calling::protocol::textfmt::{AutoProtocol, Detected, TextFormat};
///
/// let auto = AutoProtocol::new();
/// let reply = "Sure.\n[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]";
/// assert_eq!(AutoProtocol::detect(reply), Some(Detected::Format(TextFormat::Mistral)));
/// let (detected, parsed) = auto.parse(reply);
/// assert_eq!(detected, Some(Detected::Format(TextFormat::Mistral)));
/// assert_eq!(parsed.requests[0].tool_name, "get_weather");
/// assert_eq!(parsed.normal_text, "Sure.\n");
/// ```
#[derive(Debug, Clone)]
pub struct AutoProtocol {
    vcp: VcpProtocol,
    options: TextFormatOptions,
    prompt: Detected,
    memory: Arc<Mutex<Memory>>,
}

impl Default for AutoProtocol {
    fn default() -> Self {
        Self::new()
    }
}

impl AutoProtocol {
    /// Detection over VCP (default options) and every format.
    pub fn new() -> Self {
        AutoProtocol {
            vcp: VcpProtocol::default(),
            options: TextFormatOptions::default(),
            prompt: Detected::Vcp,
            memory: Arc::default(),
        }
    }

    /// Reads VCP with `vcp`.
    #[must_use]
    pub fn with_vcp(mut self, vcp: VcpProtocol) -> Self {
        self.vcp = vcp;
        self
    }

    /// Reads the formats with `options`.
    #[must_use]
    pub fn with_options(mut self, options: TextFormatOptions) -> Self {
        self.options = options;
        self
    }

    /// Offers tools in `prompt`'s shape.
    #[must_use]
    pub fn with_prompt_format(mut self, prompt: Detected) -> Self {
        self.prompt = prompt;
        self
    }

    /// Offers tools in the format `model` writes ([`TextFormat::for_model`]), VCP for a
    /// model it does not know.
    #[must_use]
    pub fn for_model(self, model: &str) -> Self {
        let prompt = TextFormat::for_model(model).map_or(Detected::Vcp, Detected::Format);
        self.with_prompt_format(prompt)
    }

    /// Which protocol `text` uses, if it holds any markup.
    pub fn detect(text: &str) -> Option<Detected> {
        match Detector::new().step(text, true) {
            Step::Decided(detected, _) => Some(detected),
            Step::Undecided(_) => None,
        }
    }

    /// Reads a whole reply: the protocol found (if any), the requests and normal text.
    pub fn parse(&self, text: &str) -> (Option<Detected>, ParsedReply) {
        let mut parser = self.stream_parser();
        let mut events = Vec::new();
        parser.push_text(text, &mut events);
        parser.finish(&mut events);
        let mut collector = StreamCollector::new();
        collector.extend(events);
        let normal_text = collector.prose().to_string();
        let outcome = collector.into_outcome();
        (
            parser.detected(),
            ParsedReply { requests: outcome.requests, diagnostics: outcome.diagnostics, normal_text },
        )
    }

    /// A parser for a reply that streams in.
    pub fn stream_parser(&self) -> AutoStreamParser {
        AutoStreamParser {
            vcp: self.vcp.clone(),
            options: self.options,
            memory: self.memory.clone(),
            detector: Detector::new(),
            buffer: String::new(),
            base: 0,
            emitted: 0,
            inner: None,
            finished: false,
        }
    }

    fn detected_for(&self, request_id: &str) -> Detected {
        self.memory.lock().ok().and_then(|m| m.by_id.get(request_id).copied()).unwrap_or(Detected::Vcp)
    }
}

impl ToolCallingProtocol for AutoProtocol {
    fn id(&self) -> &str {
        "auto"
    }

    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        match self.prompt {
            Detected::Vcp => self.vcp.tool_declarations(tools),
            Detected::Format(format) => TextFormatProtocol::new(format).tool_declarations(tools),
        }
    }

    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
        self.parse(&turn.text()).1.into_outcome()
    }

    fn parse_text(&self, text: &str) -> ParseOutcome {
        self.parse(text).1.into_outcome()
    }

    fn incremental_parser(&self) -> Option<Box<dyn IncrementalParser>> {
        Some(Box::new(self.stream_parser()))
    }

    fn resolve(
        &self,
        request: &crate::ParsedToolRequest,
        catalog: &ToolCatalog,
    ) -> Vec<Result<Invocation, ToolError>> {
        match self.detected_for(&request.request_id) {
            Detected::Vcp => self.vcp.resolve(request, catalog),
            Detected::Format(_) => vec![Ok(super::typed_invocation(request, catalog))],
        }
    }

    fn result_messages(&self, results: &[ToolExecutionResult]) -> Vec<Message> {
        let detected = results.first().map_or(Detected::Vcp, |r| self.detected_for(&r.request_id));
        match detected {
            // `auto` reads every format, so VCP result blocks must not hold any format's
            // markup either; the results kept on the message stay as the tools gave them.
            Detected::Vcp if !results.is_empty() => {
                let safe: Vec<ToolExecutionResult> = results
                    .iter()
                    .map(|r| ToolExecutionResult {
                        result: neutralize_tokens(&r.result).into_owned(),
                        ..r.clone()
                    })
                    .collect();
                vec![Message::tool(self.vcp.format_results(&safe)).with_tool_results(results.iter().cloned())]
            }
            Detected::Vcp => Vec::new(),
            Detected::Format(format) => TextFormatProtocol::new(format).result_messages(results),
        }
    }
}

/// The parser a decision hands the rest of the reply to.
#[derive(Debug)]
enum Inner {
    Vcp(Box<VcpStreamParser>, Detected),
    Format(Box<TextFormatStreamParser>, Detected),
}

/// Reads a reply with [`AutoProtocol`] as it streams in: normal text until the first
/// markup, then the protocol that markup decides.
///
/// ```
/// use tool_calling::protocol::textfmt::{AutoProtocol, Detected, TextFormat};
/// use tool_calling::protocol::{IncrementalParser, StreamEvent};
/// let mut parser = AutoProtocol::new().stream_parser();
/// let mut events = Vec::new();
/// parser.push_text("Checking. ", &mut events);
/// assert_eq!(parser.detected(), None, "prose decides nothing");
/// parser.push_text(r#"<tool_call>{"name": "clock", "arguments": {}}</tool_call>"#, &mut events);
/// parser.finish(&mut events);
/// assert_eq!(parser.detected(), Some(Detected::Format(TextFormat::Hermes)));
/// assert!(events.iter().any(|e| matches!(e, StreamEvent::RequestCompleted(r) if r.tool_name == "clock")));
/// ```
#[derive(Debug)]
pub struct AutoStreamParser {
    vcp: VcpProtocol,
    options: TextFormatOptions,
    memory: Arc<Mutex<Memory>>,
    detector: Detector,
    /// The reply until a decision (from offset `base` on).
    buffer: String,
    /// Offset of `buffer[0]` in the reply.
    base: usize,
    /// Bytes of `buffer` reported as prose.
    emitted: usize,
    /// After the decision: the chosen parser, and where its text begins in the reply.
    inner: Option<(Inner, usize)>,
    finished: bool,
}

impl AutoStreamParser {
    /// The protocol decided so far.
    pub fn detected(&self) -> Option<Detected> {
        self.inner.as_ref().map(|(inner, _)| match inner {
            Inner::Vcp(_, d) | Inner::Format(_, d) => *d,
        })
    }

    fn decide(&mut self, at_end: bool, events: &mut Vec<StreamEvent>) {
        match self.detector.step(&self.buffer, at_end) {
            Step::Undecided(upto) => {
                self.prose(upto, events);
                // Drop reported prose once it is most of the buffer: amortised linear.
                if self.emitted > 0 && self.emitted >= self.buffer.len() / 2 {
                    let n = self.emitted;
                    self.buffer.drain(..n);
                    self.base += n;
                    self.emitted = 0;
                    self.detector.pos = self.detector.pos.saturating_sub(n);
                }
            }
            Step::Decided(detected, at) => {
                self.prose(at, events);
                let inner = match detected {
                    Detected::Vcp => Inner::Vcp(Box::new(self.vcp.stream_parser()), detected),
                    Detected::Format(format) => Inner::Format(
                        Box::new(TextFormatProtocol::new(format).with_options(self.options).stream_parser()),
                        detected,
                    ),
                };
                self.inner = Some((inner, self.base + at));
                let rest = self.buffer.get(at..).unwrap_or_default().to_string();
                self.buffer = String::new();
                self.forward(&rest, events);
            }
        }
    }

    fn prose(&mut self, upto: usize, events: &mut Vec<StreamEvent>) {
        if upto > self.emitted
            && let Some(text) = self.buffer.get(self.emitted..upto)
        {
            let span = Span::new(self.base + self.emitted, self.base + upto);
            events.push(StreamEvent::Text { text: text.to_string(), span });
            self.emitted = upto;
        }
    }

    /// Feeds the chosen parser; shifts its offsets into the reply's; remembers ids.
    fn forward(&mut self, text: &str, events: &mut Vec<StreamEvent>) {
        let Some((inner, base)) = self.inner.as_mut() else { return };
        let base = *base;
        let mut inner_events = Vec::new();
        let detected = match inner {
            Inner::Vcp(parser, d) => {
                parser.push_text(text, &mut inner_events);
                *d
            }
            Inner::Format(parser, d) => {
                parser.push_text(text, &mut inner_events);
                *d
            }
        };
        self.relay(inner_events, base, detected, events);
    }

    fn relay(
        &self,
        inner_events: Vec<StreamEvent>,
        base: usize,
        detected: Detected,
        events: &mut Vec<StreamEvent>,
    ) {
        let shift = |span: Span| Span::new(span.start + base, span.end + base);
        for event in inner_events {
            events.push(match event {
                StreamEvent::Text { text, span } => StreamEvent::Text { text, span: shift(span) },
                StreamEvent::RequestStarted { offset } => {
                    StreamEvent::RequestStarted { offset: offset + base }
                }
                StreamEvent::FieldCompleted { key, value, closed, span } => {
                    StreamEvent::FieldCompleted { key, value, closed, span: shift(span) }
                }
                StreamEvent::RequestCompleted(mut request) => {
                    request.span = shift(request.span);
                    if let Ok(mut memory) = self.memory.lock() {
                        memory.note(&request.request_id, detected);
                    }
                    StreamEvent::RequestCompleted(request)
                }
                StreamEvent::BlockDiscarded { span } => StreamEvent::BlockDiscarded { span: shift(span) },
                StreamEvent::Diagnostic(mut diagnostic) => {
                    diagnostic.span = shift(diagnostic.span);
                    StreamEvent::Diagnostic(diagnostic)
                }
            });
        }
    }
}

impl IncrementalParser for AutoStreamParser {
    fn push(&mut self, delta: &TurnDelta, events: &mut Vec<StreamEvent>) {
        if let TurnDelta::Text(text) = delta {
            self.push_text(text, events);
        }
    }

    fn push_text(&mut self, text: &str, events: &mut Vec<StreamEvent>) {
        if self.finished || text.is_empty() {
            return;
        }
        if self.inner.is_some() {
            self.forward(text, events);
            return;
        }
        self.buffer.push_str(text);
        self.decide(false, events);
    }

    fn finish(&mut self, events: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        self.finished = true;
        if self.inner.is_none() {
            self.decide(true, events);
        }
        let Some((inner, base)) = self.inner.as_mut() else { return };
        let base = *base;
        let mut inner_events = Vec::new();
        let detected = match inner {
            Inner::Vcp(parser, d) => {
                parser.finish(&mut inner_events);
                *d
            }
            Inner::Format(parser, d) => {
                parser.finish(&mut inner_events);
                *d
            }
        };
        self.relay(inner_events, base, detected, events);
    }
}
