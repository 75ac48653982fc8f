//! `auto`: recognises which text protocol a reply uses (VCP or one of the open-model
//! formats) from the reply itself, and reads it with that protocol.

use std::ops::ControlFlow;

use super::escape::neutralize_tokens;
use super::format::Marker;
use super::readers::pythonic::list_starts;
use super::readers::shapes::{Look, Looked, Shape, opens_with};
use super::{TextFormat, TextFormatOptions, TextFormatProtocol};
use crate::model::{AssistantTurn, Message, TurnDelta};
use crate::protocol::reasoning::{Change, Tokens, VisibleStretches, unclosed_diagnostic};
use crate::protocol::vcp::VcpProtocol;
use crate::protocol::{
    EventSink, ParseOutcome, StreamCollector, StreamEvent, StreamParser, ToolCallingProtocol,
    ToolDeclarations, TurnState,
};
use crate::request::Invocation;
use crate::tools::ToolCatalog;
use crate::tools::ToolDefinition;
use crate::{Span, ToolError, ToolExecutionResult};

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

    /// The protocol of id `id` (`vcp`, or a format's id), if `auto` reads it.
    ///
    /// ```
    /// use tool_calling::protocol::textfmt::{Detected, TextFormat};
    /// assert_eq!(Detected::from_id("mistral"), Some(Detected::Format(TextFormat::Mistral)));
    /// assert_eq!(Detected::from_id("vcp"), Some(Detected::Vcp));
    /// assert_eq!(Detected::from_id("smoke-signals"), None);
    /// ```
    pub fn from_id(id: &str) -> Option<Detected> {
        if id == "vcp" { Some(Detected::Vcp) } else { TextFormat::from_id(id).map(Detected::Format) }
    }

    /// What a turn written in this protocol tells the resolving and writing steps.
    fn state(self) -> TurnState {
        TurnState::dialect(self)
    }

    /// The protocol a turn was read in, from its state: VCP when it says nothing (a reply
    /// without markup has no requests to answer).
    fn of(state: &TurnState) -> Detected {
        state.dialect.unwrap_or(Detected::Vcp)
    }
}

/// Written as its id.
impl serde::Serialize for Detected {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

/// Read from its id; an id that names no protocol `auto` reads is an error.
impl<'de> serde::Deserialize<'de> for Detected {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        Detected::from_id(&id).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown text protocol `{id}`: `vcp` or a text format's id"))
        })
    }
}

const VCP_START: &str = "<<<[TOOL_REQUEST";

/// What a marker decides.
#[derive(Debug, Clone)]
enum Then {
    /// This protocol.
    Is(Detected),
    /// A marker several formats write: `look` names the shape of what follows, and the
    /// format that declared that shape takes the reply.
    Look { look: Look, claims: Vec<(Shape, TextFormat)> },
}

/// What `auto` looks for, gathered from every format's
/// [`markers`](super::format::Format::markers), in the order of [`TextFormat::ALL`]
/// (VCP's marker first).
struct Table {
    /// Markers that decide a protocol by themselves, or after a look at what follows.
    markers: Vec<(&'static str, Then)>,
    /// The markers alone, in the same order (for the search and the held tail).
    tokens: Vec<&'static str>,
    /// One search for every marker at once (`None` only if the automaton could not be
    /// built, which fixed markers rule out).
    search: Option<aho_corasick::AhoCorasick>,
    /// The bytes some marker begins with.
    leads: [bool; 256],
    /// Openings of a reply that decide a format (a bare JSON call or call list).
    openings: Vec<(&'static [&'static str], TextFormat)>,
    /// The format that reads a Python call list in prose.
    call_list: Option<TextFormat>,
}

/// The table, built once.
fn table() -> &'static Table {
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut markers: Vec<(&'static str, Then)> = vec![(VCP_START, Then::Is(Detected::Vcp))];
        let mut openings = Vec::new();
        let mut call_list = None;
        for format in TextFormat::ALL {
            for marker in format.format().markers {
                match *marker {
                    Marker::Token(token) => markers.push((token, Then::Is(Detected::Format(format)))),
                    Marker::Shared { token, look, shape } => {
                        match markers.iter_mut().find(|(known, _)| *known == token) {
                            Some((_, Then::Look { claims, .. })) => claims.push((shape, format)),
                            _ => markers.push((token, Then::Look { look, claims: vec![(shape, format)] })),
                        }
                    }
                    Marker::Opening(pieces) => openings.push((pieces, format)),
                    Marker::CallList => {
                        call_list.get_or_insert(format);
                    }
                }
            }
        }
        let tokens: Vec<&'static str> = markers.iter().map(|(marker, _)| *marker).collect();
        let search = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(&tokens)
            .ok();
        let mut leads = [false; 256];
        for lead in tokens.iter().filter_map(|marker| marker.bytes().next()) {
            if let Some(slot) = leads.get_mut(usize::from(lead)) {
                *slot = true;
            }
        }
        Table { markers, tokens, search, leads, openings, call_list }
    })
}

/// The formats that `token`, found in a reply, may decide (for the layout test).
#[cfg(test)]
pub(super) fn formats_of(token: &str) -> Vec<TextFormat> {
    let decided = |then: &Then| match then {
        Then::Is(Detected::Format(format)) => vec![*format],
        Then::Is(Detected::Vcp) => Vec::new(),
        Then::Look { claims, .. } => claims.iter().map(|(_, format)| *format).collect(),
    };
    table().markers.iter().filter(|(known, _)| *known == token).flat_map(|(_, then)| decided(then)).collect()
}

/// The formats a reply's opening decides, and the one a Python call list decides (for
/// the layout test).
#[cfg(test)]
pub(super) fn openings_and_call_list() -> (Vec<(&'static [&'static str], TextFormat)>, Option<TextFormat>) {
    (table().openings.clone(), table().call_list)
}

/// Whether a reply detected as `detected` may be read as `preferred`: the two share
/// their markup (one names the other in its
/// [`same_markup`](super::format::Format::same_markup)). `auto` detects the format that
/// declares the markers, and takes the other when it is the format its tools were
/// offered in (the model table's choice).
fn shares_markup(detected: TextFormat, preferred: TextFormat) -> bool {
    preferred.format().same_markup.contains(&detected) || detected.format().same_markup.contains(&preferred)
}

/// Bytes of which every marker holds one (a test checks it), and with which the other
/// things the detector decides on begin: a Python call list (`[`) and a reasoning tag
/// (`<`). Text without them, after decided prose and with no tail that may begin a
/// marker, is prose.
const DECIDING: &[u8] = b"[<`";
static DECIDING_BYTES: [bool; 256] = byte_table(DECIDING);

/// A table of `bytes`.
#[allow(clippy::indexing_slicing)] // Evaluated at compile time: an index out of range fails the build.
const fn byte_table(bytes: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
}

/// Whether `bytes` holds a byte of `table`.
fn holds_lead(table: &[bool; 256], bytes: &[u8]) -> bool {
    bytes.iter().any(|&b| table.get(usize::from(b)).copied().unwrap_or(false))
}

/// Where a tail of `text[from..]` that may begin one of the markers starts (else its
/// end): only a byte some marker begins with is looked at.
fn hold_start(text: &str, from: usize) -> usize {
    const LONGEST: usize = 32;
    let table = table();
    let bytes = text.as_bytes();
    let first = text.len().saturating_sub(LONGEST).max(from);
    (first..text.len())
        .find(|&i| {
            bytes.get(i).is_some_and(|&b| table.leads.get(usize::from(b)).copied().unwrap_or(false))
                && text.get(i..).is_some_and(|tail| {
                    table.tokens.iter().any(|m| {
                        // Byte by byte: most markers differ from a tail within two bytes.
                        m.len() > tail.len() && m.bytes().zip(tail.bytes()).all(|(a, b)| a == b)
                    })
                })
        })
        .unwrap_or(text.len())
}

/// What the text says so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The reply uses `Detected`; its markup begins at `at`.
    Decided(Detected, usize),
    /// Nothing decided: the text before `at` is prose in every protocol.
    Undecided(usize),
}

/// The detector's place in a reply (reasoning is cut out before it looks: it is given
/// each stretch of visible text in turn).
#[derive(Debug, Clone, Copy)]
struct Detector {
    /// Everything before is prose.
    pos: usize,
    /// Only whitespace so far.
    reply_start: bool,
}

impl Detector {
    fn new() -> Self {
        Detector { pos: 0, reply_start: true }
    }

    /// Looks at `text` (the reply so far, up to the end of the visible stretch being
    /// read) from where it stopped. `at_end`: the stretch is complete.
    fn step(&mut self, text: &str, at_end: bool) -> Step {
        let table = table();
        if self.reply_start {
            let rest = text.get(self.pos..).unwrap_or_default();
            let blank = rest.len() - rest.trim_start().len();
            let opening = rest.get(blank..).unwrap_or_default();
            for (pieces, format) in &table.openings {
                match opens_with(opening, pieces, at_end) {
                    Some(true) => return Step::Decided(Detected::Format(*format), self.pos + blank),
                    Some(false) => {}
                    None => return Step::Undecided(self.pos),
                }
            }
        }
        loop {
            // The earliest marker from here.
            let from = self.pos;
            let hay = text.get(from..).unwrap_or_default();
            let best = table
                .search
                .as_ref()
                .and_then(|search| search.find(hay))
                .map(|m| (from + m.start(), m.pattern().as_usize()));
            // A cut-off marker at the end of the text (nothing decides before it).
            let hold = if at_end { text.len() } else { hold_start(text, from) };
            let limit = best.map_or(hold, |(at, _)| at);
            // A Python call list in prose, before that.
            if let Some(format) = table.call_list
                && let Some(step) = self.call_list(format, text, from, limit, at_end)
            {
                return step;
            }
            let Some((at, i)) = best else {
                self.note_prose(text, from, hold);
                return Step::Undecided(hold);
            };
            let Some((marker, then)) = table.markers.get(i) else {
                self.note_prose(text, from, hold);
                return Step::Undecided(hold);
            };
            let detected = match then {
                Then::Is(detected) => Some(*detected),
                Then::Look { look, claims } => match look(text, at, marker.len(), at_end) {
                    Looked::Shape(shape) => claims
                        .iter()
                        .find(|(claimed, _)| *claimed == shape)
                        .or(claims.first())
                        .map(|(_, format)| Detected::Format(*format)),
                    Looked::Prose => {
                        // An ordinary code block: prose, and the search goes on after it.
                        self.note_prose(text, from, at + marker.len());
                        continue;
                    }
                    Looked::Undecided => None,
                },
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

    /// A Python call list (read by `format`) before `limit`: decided, undecided, or none.
    fn call_list(
        &mut self,
        format: TextFormat,
        text: &str,
        from: usize,
        limit: usize,
        at_end: bool,
    ) -> Option<Step> {
        let mut search = from;
        while let Some(found) = text.as_bytes().get(search..limit).and_then(|hay| memchr::memchr(b'[', hay)) {
            let at = search + found;
            match list_starts(text, at) {
                Some(true) => {
                    self.note_prose(text, from, at);
                    return Some(Step::Decided(Detected::Format(format), at));
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

/// What the lookout reports while it reads, offsets relative to the text it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// The text before this is prose (visible, decides nothing).
    Prose(usize),
    /// The text before this that is not prose yet is hidden reasoning.
    Hidden(usize),
}

/// The [`Detector`] with the reasoning rule in front of it: reasoning is cut out, and the
/// detector reads each stretch of visible text between two pieces of reasoning as a whole
/// (a marker never spans reasoning), as the protocol it decides on will read it.
#[derive(Debug, Clone)]
struct Lookout {
    detector: Detector,
    stretches: VisibleStretches,
}

impl Lookout {
    /// A lookout that hides reasoning when `hide_reasoning` (the tags, and every
    /// format's own reasoning markup), the reply starting inside it when
    /// `starts_in_reasoning`.
    fn new(hide_reasoning: bool, starts_in_reasoning: bool) -> Self {
        let stretches = VisibleStretches::new(hide_reasoning, starts_in_reasoning, every_format_reasoning());
        Lookout { detector: Detector::new(), stretches }
    }

    /// Reads `text` (the reply from offset `base` on, from where it stopped); returns the
    /// decision and where its markup begins, once made. `seen` hears where prose and
    /// hidden text end before that.
    fn look(
        &mut self,
        text: &str,
        base: usize,
        at_end: bool,
        seen: &mut dyn FnMut(Seen),
    ) -> Option<(Detected, usize)> {
        if !self.stretches.hides() {
            return step(&mut self.detector, text, at_end, seen);
        }
        let detector = &mut self.detector;
        let flow = self.stretches.advance(text, base, at_end, |change| match change {
            Change::StretchResumes(start) => {
                seen(Seen::Hidden(start - base));
                detector.pos = detector.pos.max(start - base);
                ControlFlow::Continue(())
            }
            Change::StretchEnds(visible_to) => {
                // Reasoning begins: the visible stretch before it is complete.
                let stretch = text.get(..visible_to - base).unwrap_or_default();
                match step(detector, stretch, true, seen) {
                    Some(decided) => ControlFlow::Break(decided),
                    None => ControlFlow::Continue(()),
                }
            }
        });
        if let ControlFlow::Break(decided) = flow {
            return Some(decided);
        }
        if self.stretches.hidden() {
            let done = self.stretches.decided().saturating_sub(base).min(text.len());
            seen(Seen::Hidden(done));
            self.detector.pos = self.detector.pos.max(done);
            return None;
        }
        let stretch = text.get(..self.stretches.visible_to() - base).unwrap_or_default();
        step(&mut self.detector, stretch, at_end, seen)
    }

    /// Whether text that arrives at reply offset `end`, holding no byte of
    /// [`DECIDING`] and no tail that may begin a marker, is prose as it stands: the
    /// reply has begun with prose, and everything before is decided, visible and
    /// reported (the caller's buffer is empty).
    fn reads_as_prose(&self, end: usize) -> bool {
        !self.detector.reply_start && self.detector.pos == 0 && self.stretches.all_visible(end)
    }

    /// Takes text that [`reads_as_prose`](Self::reads_as_prose), ending at reply offset
    /// `end`, as read prose. The caller reports it.
    fn pass_prose(&mut self, end: usize) {
        self.stretches.pass_visible(end);
    }

    /// The opening tag of reasoning never closed, once the text has ended.
    fn unclosed(&self) -> Option<(usize, usize)> {
        self.stretches.unclosed()
    }

    /// Moves offsets `by` bytes back (the caller dropped that much text).
    fn shift(&mut self, by: usize) {
        self.detector.pos = self.detector.pos.saturating_sub(by);
    }
}

/// The reasoning markup of every format at once: before a decision, any of it is
/// reasoning (and ends the reasoning a reply starts in).
fn every_format_reasoning() -> Option<&'static Tokens> {
    static TOKENS: std::sync::OnceLock<Option<Tokens>> = std::sync::OnceLock::new();
    TOKENS
        .get_or_init(|| Tokens::new(TextFormat::ALL.iter().filter_map(|format| format.format().reasoning)))
        .as_ref()
}

/// One step of the detector over `text`, prose reported to `seen`.
fn step(
    detector: &mut Detector,
    text: &str,
    at_end: bool,
    seen: &mut dyn FnMut(Seen),
) -> Option<(Detected, usize)> {
    match detector.step(text, at_end) {
        Step::Decided(detected, at) => Some((detected, at)),
        Step::Undecided(upto) => {
            seen(Seen::Prose(upto));
            None
        }
    }
}

/// The `auto` protocol: reads a reply in whichever text protocol it uses, VCP or one of
/// the [`TextFormat`]s, deciding as soon as the text decides it (streaming included),
/// and answers each turn's results in the protocol it was read in. It keeps no memory
/// between turns: the protocol a turn was read in travels with the turn, as its
/// [`TurnState`], so one `AutoProtocol` serves any number of conversations at once.
///
/// Text before the first markup is normal text in every protocol, so it is reported
/// before the decision; reasoning is hidden by the rule every text protocol shares
/// ([`reasoning`](crate::protocol::reasoning)) and decides nothing. Markers that several formats
/// share are told apart by what follows: `<tool_call>` then `{` is `hermes`, then
/// `<function=` is `qwen3_coder_xml`, then a name and a line break is `glm45`, a name
/// and anything else `glm47`; DeepSeek's first call says V3 (`function<｜tool▁sep｜>`) or
/// V3.1. A reply that starts with `{"name"` is `llama3_json`; a `[name(` list is
/// `pythonic`. Every format's markers are in one table, made from what each format
/// declares (the [formats chapter](crate::guide::formats) shows it); formats that write the same markup (`hermes` and `ernie45`,
/// `hunyuan` and `jamba`, …) read as the one the tools were offered in. The tools are
/// offered in the format given to
/// [`with_prompt_format`](Self::with_prompt_format) (VCP by default).
///
/// ```
/// use tool_calling::protocol::textfmt::{AutoProtocol, Detected, TextFormat};
///
/// let auto = AutoProtocol::new();
/// let reply = "Sure.\n[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]";
/// assert_eq!(AutoProtocol::detect(reply), Some(Detected::Format(TextFormat::Mistral)));
/// let parsed = auto.parse(reply);
/// assert_eq!(parsed.state.dialect, Some(Detected::Format(TextFormat::Mistral)));
/// assert_eq!(parsed.requests[0].tool_name, "get_weather");
/// assert_eq!(parsed.normal_text, "Sure.\n");
/// ```
#[derive(Debug, Clone)]
pub struct AutoProtocol {
    vcp: VcpProtocol,
    options: TextFormatOptions,
    prompt: Detected,
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
        }
    }

    setters! {
        /// Reads VCP with `vcp`.
        pub fn with_vcp(vcp: VcpProtocol) { self.vcp = vcp }

        /// Reads the formats with `options`.
        pub fn with_options(options: TextFormatOptions) { self.options = options }

        /// Offers tools in `prompt`'s shape.
        pub fn with_prompt_format(prompt: Detected) { self.prompt = prompt }
    }

    /// Offers tools in the format `model` writes ([`TextFormat::for_model`]), VCP for a
    /// model it does not know, and reads its replies as starting inside reasoning when
    /// the built-in model table says its template opens it
    /// ([`ModelCapabilities::starts_in_reasoning`](crate::protocol::ModelCapabilities::starts_in_reasoning)).
    #[must_use]
    pub fn for_model(mut self, model: &str) -> Self {
        let capabilities = crate::protocol::ModelProfiles::builtin().lookup(model);
        let prompt = TextFormat::from_fallback(capabilities.fallback).map_or(Detected::Vcp, Detected::Format);
        self.options = self.options.starts_in_reasoning(capabilities.starts_in_reasoning);
        self.with_prompt_format(prompt)
    }

    /// Which protocol `text` uses, if it holds any markup (outside reasoning).
    pub fn detect(text: &str) -> Option<Detected> {
        Lookout::new(true, false).look(text, 0, true, &mut |_| {}).map(|(detected, _)| detected)
    }

    /// Reads a whole reply: the requests, diagnostics and normal text, and in its
    /// [`state`](ParseOutcome::state) the protocol found (none when the reply holds no
    /// markup).
    pub fn parse(&self, text: &str) -> ParseOutcome {
        let mut parser = self.stream_parser();
        let mut events = Vec::new();
        parser.push_text(text, &mut events);
        parser.finish(&mut events);
        let mut collector = StreamCollector::new();
        collector.extend(events);
        collector.into_outcome()
    }

    /// A parser for a reply that streams in.
    pub fn stream_parser(&self) -> AutoStreamParser {
        AutoStreamParser {
            vcp: self.vcp.clone(),
            options: self.options,
            lookout: Lookout::new(self.options.skip_reasoning, self.options.starts_in_reasoning),
            buffer: String::new(),
            base: 0,
            emitted: 0,
            inner: None,
            finished: false,
            prefer: self.prompt,
        }
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
        self.parse(&turn.text())
    }

    /// Writes the call in the protocol tools are offered in.
    fn write_call(&self, name: &str, args: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
        match self.prompt {
            Detected::Vcp => self.vcp.write_call(name, args),
            Detected::Format(format) => {
                TextFormatProtocol::new(format).with_options(self.options).write_call(name, args)
            }
        }
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + '_> {
        Box::new(AutoProtocol::stream_parser(self))
    }

    /// Resolves with the rules of the protocol the turn was read in.
    fn resolve(
        &self,
        request: &crate::ToolRequest,
        turn: &TurnState,
        catalog: &ToolCatalog,
    ) -> Vec<Result<Invocation, ToolError>> {
        match Detected::of(turn) {
            Detected::Vcp => self.vcp.resolve(request, turn, catalog),
            Detected::Format(_) => vec![Ok(super::typed_invocation(request, catalog))],
        }
    }

    /// Writes the results in the protocol the turn was read in.
    fn result_messages(&self, results: &[ToolExecutionResult], turn: &TurnState) -> Vec<Message> {
        match Detected::of(turn) {
            // `auto` reads every format, so VCP result blocks must not hold any format's
            // markup either; the results kept on the message stay as the tools gave them.
            Detected::Vcp if !results.is_empty() => {
                let safe: Vec<ToolExecutionResult> = results.iter().map(neutralized).collect();
                let text = crate::protocol::vcp::format_results(&safe);
                vec![Message::tool(text).with_tool_results(results.iter().cloned())]
            }
            Detected::Vcp => Vec::new(),
            Detected::Format(format) => TextFormatProtocol::new(format).result_messages(results, turn),
        }
    }
}

/// `result` with no format's markup in its text, nor in its calls' (the parts a protocol
/// writes from).
fn neutralized(result: &ToolExecutionResult) -> ToolExecutionResult {
    ToolExecutionResult {
        result: neutralize_tokens(&result.result).into_owned(),
        calls: result.calls.iter().map(neutralized).collect(),
        ..result.clone()
    }
}

/// The parser a decision hands the rest of the reply to, and the protocol it reads.
struct Inner {
    parser: Box<dyn StreamParser>,
    detected: Detected,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").field("detected", &self.detected).finish_non_exhaustive()
    }
}

/// Reads a reply with [`AutoProtocol`] as it streams in: normal text until the first
/// markup, then the protocol that markup decides.
///
/// ```
/// use tool_calling::protocol::textfmt::{AutoProtocol, Detected, TextFormat};
/// use tool_calling::protocol::{StreamParser, StreamEvent};
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
    lookout: Lookout,
    /// The reply until a decision (from offset `base` on).
    buffer: String,
    /// Offset of `buffer[0]` in the reply.
    base: usize,
    /// Bytes of `buffer` reported as prose.
    emitted: usize,
    /// After the decision: the chosen parser, and where its text begins in the reply.
    inner: Option<(Inner, usize)>,
    finished: bool,
    /// The format the tools were offered in: taken over a detected format whose markup
    /// it shares.
    prefer: Detected,
}

impl AutoStreamParser {
    /// Reads `text` while no protocol is chosen. Prose after decided prose, with nothing
    /// in it to decide on (no byte of [`DECIDING`], here or in what is held back), is
    /// reported at once without the searches, but for a tail that may begin a marker (a
    /// `\n` may begin `\n\n<｜DSML｜`, an `f` `functools[`), which is held back until
    /// the next push shows what it is. Anything else goes through the lookout.
    fn push_undecided(&mut self, text: &str, events: &mut dyn EventSink) {
        let held = self.buffer.len();
        // The lookout's state first: when it holds, what is held back is at most a
        // marker's start, so the byte checks below never sweep a long buffer per push.
        let prose = self.lookout.reads_as_prose(self.base + held)
            && !holds_lead(&DECIDING_BYTES, text.as_bytes())
            && !holds_lead(&DECIDING_BYTES, self.buffer.as_bytes());
        if !prose {
            self.buffer.push_str(text);
            self.decide(false, events);
            return;
        }
        self.lookout.pass_prose(self.base + held + text.len());
        if held > 0 {
            self.buffer.push_str(text);
        }
        let prose = if held == 0 { text } else { self.buffer.as_str() };
        // Where the held tail begins: a marker's first byte, so a char boundary (else
        // nothing is reported yet, and nothing is lost).
        let keep = Some(hold_start(prose, 0)).filter(|&at| prose.is_char_boundary(at)).unwrap_or(0);
        if let Some(reported) = prose.get(..keep).filter(|p| !p.is_empty()) {
            events.text(reported, Span::new(self.base, self.base + keep));
        }
        self.base += keep;
        if held == 0 {
            self.buffer.push_str(text.get(keep..).unwrap_or_default());
        } else {
            self.buffer.replace_range(..keep, "");
        }
    }

    /// The protocol decided so far.
    pub fn detected(&self) -> Option<Detected> {
        self.inner.as_ref().map(|(inner, _)| inner.detected)
    }

    fn decide(&mut self, at_end: bool, events: &mut dyn EventSink) {
        let AutoStreamParser { lookout, buffer, base, emitted, .. } = self;
        let base = *base;
        let decision = lookout.look(buffer, base, at_end, &mut |s| match s {
            Seen::Prose(upto) => prose(buffer, base, emitted, upto, events),
            Seen::Hidden(to) => *emitted = (*emitted).max(to),
        });
        match decision {
            None => {
                if at_end && let Some((start, end)) = self.lookout.unclosed() {
                    events.event(StreamEvent::Diagnostic(unclosed_diagnostic(start, end)));
                }
                // Drop reported prose once it is most of the buffer: amortised linear.
                if self.emitted > 0 && self.emitted >= self.buffer.len() / 2 {
                    let n = self.emitted;
                    self.buffer.drain(..n);
                    self.base += n;
                    self.emitted = 0;
                    self.lookout.shift(n);
                }
            }
            Some((detected, at)) => {
                let detected = match (detected, self.prefer) {
                    (Detected::Format(found), Detected::Format(offered)) if shares_markup(found, offered) => {
                        self.prefer
                    }
                    _ => detected,
                };
                prose(&self.buffer, self.base, &mut self.emitted, at, events);
                events.event(StreamEvent::TurnState(detected.state()));
                // The protocol reads on from the decision, which stands outside
                // reasoning: not at the start of the reply.
                let parser: Box<dyn StreamParser> = match detected {
                    Detected::Vcp => Box::new(self.vcp.mid_reply().stream_parser()),
                    Detected::Format(format) => {
                        let options = self.options.starts_in_reasoning(false);
                        Box::new(TextFormatProtocol::new(format).with_options(options).stream_parser())
                    }
                };
                let inner = Inner { parser, detected };
                self.inner = Some((inner, self.base + at));
                let rest = self.buffer.get(at..).unwrap_or_default().to_string();
                self.buffer = String::new();
                self.forward(Some(&rest), events);
            }
        }
    }

    /// Feeds the chosen parser `text`, or the end of the reply (`None`); shifts its
    /// offsets into the reply's.
    fn forward(&mut self, text: Option<&str>, events: &mut dyn EventSink) {
        let Some((inner, base)) = self.inner.as_mut() else { return };
        let mut shifted = Shifted { base: *base, events };
        match text {
            Some(text) => inner.parser.push_text(text, &mut shifted),
            None => inner.parser.finish(&mut shifted),
        }
    }
}

/// Reports `buffer` (the reply from offset `base` on) as prose from `emitted` to `upto`.
fn prose(buffer: &str, base: usize, emitted: &mut usize, upto: usize, events: &mut dyn EventSink) {
    if upto > *emitted
        && let Some(text) = buffer.get(*emitted..upto)
    {
        events.text(text, Span::new(base + *emitted, base + upto));
        *emitted = upto;
    }
}

/// Passes the chosen parser's events on, their offsets shifted by `base` (where its text
/// begins in the reply).
struct Shifted<'e> {
    base: usize,
    events: &'e mut dyn EventSink,
}

impl Shifted<'_> {
    fn shift(&self, span: Span) -> Span {
        Span::new(span.start + self.base, span.end + self.base)
    }
}

impl EventSink for Shifted<'_> {
    fn event(&mut self, event: StreamEvent) {
        let event = match event {
            StreamEvent::Text { text, span } => StreamEvent::Text { text, span: self.shift(span) },
            StreamEvent::RequestStarted { offset } => {
                StreamEvent::RequestStarted { offset: offset + self.base }
            }
            StreamEvent::FieldCompleted { key, value, closed, span } => {
                StreamEvent::FieldCompleted { key, value, closed, span: self.shift(span) }
            }
            StreamEvent::RequestCompleted(mut request) => {
                request.span = self.shift(request.span);
                StreamEvent::RequestCompleted(request)
            }
            StreamEvent::BlockDiscarded { span } => StreamEvent::BlockDiscarded { span: self.shift(span) },
            StreamEvent::Diagnostic(mut diagnostic) => {
                diagnostic.span = self.shift(diagnostic.span);
                StreamEvent::Diagnostic(diagnostic)
            }
            StreamEvent::TurnState(state) => StreamEvent::TurnState(state),
        };
        self.events.event(event);
    }

    fn text(&mut self, text: &str, span: Span) {
        let span = self.shift(span);
        self.events.text(text, span);
    }

    fn field(&mut self, key: &str, value: &str, closed: bool, span: Span) {
        let span = self.shift(span);
        self.events.field(key, value, closed, span);
    }
}

impl StreamParser for AutoStreamParser {
    fn push(&mut self, delta: &TurnDelta, events: &mut dyn EventSink) {
        if let TurnDelta::Text(text) = delta {
            self.push_text(text, events);
        }
    }

    fn push_text(&mut self, text: &str, events: &mut dyn EventSink) {
        match (self.finished || text.is_empty(), self.inner.is_some()) {
            (true, _) => {}
            (false, true) => self.forward(Some(text), events),
            (false, false) => self.push_undecided(text, events),
        }
    }

    fn finish(&mut self, events: &mut dyn EventSink) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        if self.inner.is_none() {
            self.decide(true, events);
        }
        self.forward(None, events);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_marker_holds_a_deciding_byte() {
        // The streaming fast path reads text without these bytes (and with no tail that
        // may begin a marker) as prose: a marker without one would be missed.
        for (marker, _) in &table().markers {
            assert!(marker.bytes().any(|b| DECIDING.contains(&b)), "{marker:?} holds none of {DECIDING:?}");
        }
    }

    #[test]
    fn a_push_ending_in_a_marker_prefix_is_held() {
        let mut parser = AutoProtocol::new().stream_parser();
        let mut events = Vec::new();
        parser.push_text("Some prose. ", &mut events);
        events.clear();
        // `f` may begin `functools[`: held until the next push decides it.
        parser.push_text("if", &mut events);
        assert_eq!(events, vec![StreamEvent::Text { text: "i".into(), span: Span::new(12, 13) }]);
        events.clear();
        // A held tail that the next push shows to be prose comes out with it.
        parser.push_text("f.\n", &mut events);
        assert_eq!(events, vec![StreamEvent::Text { text: "ff.".into(), span: Span::new(13, 16) }]);
        events.clear();
        parser.push_text("More.\nif", &mut events);
        assert_eq!(events, vec![StreamEvent::Text { text: "\nMore.\ni".into(), span: Span::new(16, 24) }]);
        events.clear();
        parser.push_text("unctools[{\"name\": \"t\", \"arguments\": {}}]", &mut events);
        parser.finish(&mut events);
        assert!(events.iter().any(|e| matches!(e, StreamEvent::RequestCompleted(r) if r.tool_name == "t")));
    }
}
