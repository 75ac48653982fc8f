//! A borrowed view of a parse: requests whose names, keys and values point into the
//! reply, in the style of a pull parser's events. The owned [`ParseOutcome`] is made
//! from it ([`ParseView::into_owned`]), so both come from the one parser.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use super::fence::Fences;
use super::scanner::{Scanner, Sink, prepare};
use super::visible::VisibleText;
use super::{VcpOptions, VcpTemplates};
use crate::protocol::Diagnostic;
use crate::protocol::ParseOutcome;
use crate::request::{Args, RequestIdSource};
use crate::{Span, ToolRequest};

/// Everything one parse found, borrowing from the reply: see
/// [`VcpProtocol::parse_view`](super::VcpProtocol::parse_view).
///
/// ```
/// use tool_calling::prelude::*;
/// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」2「末」\n<<<[END_TOOL_REQUEST]>>>";
/// let view: ParseView<'_> = VcpProtocol::default().parse_view(reply);
/// assert_eq!(view.requests.len(), 1);
/// assert!(view.diagnostics.is_empty());
/// let owned = view.into_owned();
/// assert_eq!(owned.requests[0].args["a"], "2");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ParseView<'a> {
    /// The requests, in order of appearance, damaged ones included.
    pub requests: Vec<RequestView<'a>>,
    /// What the parser noticed and tolerated, in input order.
    pub diagnostics: Vec<Diagnostic>,
}

impl<'a> ParseView<'a> {
    /// The requests and diagnostics, owned. The view does not gather the normal text
    /// (its cost is a copy of the prose): [`VcpProtocol::parse`](super::VcpProtocol::parse)
    /// returns the same requests and diagnostics with it.
    ///
    /// ```
    /// use tool_calling::protocol::RequestIdStyle;
    /// use tool_calling::protocol::vcp::VcpOptions;
    /// use tool_calling::protocol::vcp::VcpProtocol;
    /// let reply = "Adding.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」\n<<<[END_TOOL_REQUEST]>>>";
    /// let vcp = VcpProtocol::new(VcpOptions::default().request_ids(RequestIdStyle::Sequential));
    /// let (owned, parsed) = (vcp.parse_view(reply).into_owned(), vcp.parse(reply));
    /// assert_eq!(owned.requests, parsed.requests);
    /// assert_eq!(owned.diagnostics, parsed.diagnostics);
    /// assert_eq!((owned.normal_text.as_str(), parsed.normal_text.as_str()), ("", "Adding.\n"));
    /// ```
    pub fn into_owned(self) -> ParseOutcome {
        ParseOutcome::new(self.requests.into_iter().map(RequestView::into_owned).collect(), self.diagnostics)
    }
}

/// One request, borrowing from the reply where it can.
///
/// Text is borrowed ([`Cow::Borrowed`]) unless the parser had to change it: a value
/// with `\r\n` line ends (folded to `\n`), an escaped value whose escaped markers were
/// restored, text with hidden reasoning cut out of it, or an id the parser assigned.
///
/// ```
/// use std::borrow::Cow;
/// use tool_calling::RequestIdSource;
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」2「末」\n<<<[END_TOOL_REQUEST]>>>";
/// let view = VcpProtocol::default().parse_view(reply);
/// let request = &view.requests[0];
/// assert!(matches!(request.tool_name, Cow::Borrowed("calc_add")));
/// assert_eq!(request.id_source, RequestIdSource::Assigned);
/// assert!(request.complete && request.problems.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RequestView<'a> {
    /// The model's `request_id`, or one the parser assigned (see
    /// [`id_source`](Self::id_source)).
    pub request_id: Cow<'a, str>,
    /// Whether the model or the parser chose the id.
    pub id_source: RequestIdSource,
    /// The routing target as written (empty when the model gave none).
    pub tool_name: Cow<'a, str>,
    /// Every other field, in order of appearance; a key written twice appears once, at
    /// the place of its last occurrence, with that occurrence's value.
    pub args: Vec<FieldView<'a>>,
    /// The whole block in the input.
    pub span: Span,
    /// `true` when the request has a tool name and nothing in it was cut off.
    pub complete: bool,
    /// Why the request is not complete, for the model to read; empty when it is.
    pub problems: Vec<String>,
    /// The model asked not to wait for this call (`archery`).
    pub fire_and_forget: bool,
}

impl<'a> RequestView<'a> {
    /// The value of argument `key`, if the request has it.
    ///
    /// ```
    /// use tool_calling::protocol::vcp::VcpProtocol;
    /// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」2「末」\n<<<[END_TOOL_REQUEST]>>>";
    /// let view = VcpProtocol::default().parse_view(reply);
    /// assert_eq!(view.requests[0].arg("a"), Some("2"));
    /// assert_eq!(view.requests[0].arg("b"), None);
    /// ```
    pub fn arg(&self, key: &str) -> Option<&str> {
        self.args.iter().find(|f| f.key == key).map(|f| f.value.as_ref())
    }

    /// The owned request, as [`VcpProtocol::parse`](super::VcpProtocol::parse) gives
    /// it (values as JSON strings).
    pub fn into_owned(self) -> ToolRequest {
        let mut args = Args::with_capacity(self.args.len());
        for field in self.args {
            args.insert(field.key.into_owned(), serde_json::Value::String(field.value.into_owned()));
        }
        ToolRequest {
            request_id: self.request_id.into_owned(),
            id_source: self.id_source,
            tool_name: self.tool_name.into_owned(),
            args,
            span: self.span,
            complete: self.complete,
            problems: self.problems,
            fire_and_forget: self.fire_and_forget,
            text_args: indexmap::IndexMap::new(),
        }
    }
}

/// One argument of a [`RequestView`].
///
/// ```
/// use tool_calling::protocol::vcp::VcpProtocol;
/// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\na:「始」 2 「末」\n<<<[END_TOOL_REQUEST]>>>";
/// let view = VcpProtocol::default().parse_view(reply);
/// let field = &view.requests[0].args[0];
/// assert_eq!((field.key.as_ref(), field.value.as_ref()), ("a", "2"));
/// assert_eq!(field.span.slice(reply), Some("a:「始」 2 「末」"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldView<'a> {
    /// The key as written.
    pub key: Cow<'a, str>,
    /// The value, trimmed (see [`RequestView`] for when it is not borrowed).
    pub value: Cow<'a, str>,
    /// The field in the input, from its key to its value's closer (or to where the
    /// value was cut off).
    pub span: Span,
}

/// One thing the pull parser ([`VcpProtocol::view_events`](super::VcpProtocol::view_events))
/// found.
///
/// ```
/// use tool_calling::protocol::vcp::{ViewEvent, VcpProtocol};
/// let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n";
/// let events: Vec<ViewEvent<'_>> = VcpProtocol::default().view_events(reply).collect();
/// assert!(matches!(&events[0], ViewEvent::Diagnostic(d) if d.kind.as_str() == "missing_end_marker"));
/// assert!(matches!(&events[1], ViewEvent::Request(r) if r.tool_name == "clock"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ViewEvent<'a> {
    /// A request block ended: the request, borrowing from the reply.
    Request(RequestView<'a>),
    /// Something the parser noticed and tolerated. A block's diagnostics come before
    /// its request.
    Diagnostic(Diagnostic),
}

/// The pull parser: every request and diagnostic of a reply, one at a time, borrowing
/// from the reply (see [`VcpProtocol::view_events`](super::VcpProtocol::view_events)).
///
/// It reads only as far as the next request, so memory stays bounded by one request
/// however many the reply holds, and a caller can stop early. Collecting it gives what
/// [`ParseView`] holds, with diagnostics in the order they were found (a `ParseView`
/// sorts them by position).
///
/// ```
/// use tool_calling::protocol::vcp::{ViewEvent, VcpProtocol};
/// let block = |tool: &str| format!("<<<[TOOL_REQUEST]>>>\ntool_name:「始」{tool}「末」\n<<<[END_TOOL_REQUEST]>>>\n");
/// let reply = format!("{}{}{}", block("a"), block("b"), block("c"));
/// let mut events = VcpProtocol::default().view_events(&reply);
/// // Stop after the first request: the other two blocks are never read.
/// let first = events.find_map(|event| match event {
///     ViewEvent::Request(request) => Some(request),
///     _ => None,
/// });
/// assert_eq!(first.map(|r| r.tool_name), Some("a".into()));
/// ```
#[derive(Debug)]
pub struct ViewEvents<'a> {
    input: &'a str,
    src: VisibleText<'a>,
    fences: Option<Fences>,
    scanner: Scanner,
    queue: VecDeque<ViewEvent<'a>>,
    done: bool,
}

impl<'a> ViewEvents<'a> {
    pub(super) fn new(input: &'a str, options: &VcpOptions, templates: Arc<VcpTemplates>) -> Self {
        let (src, fences, first) = prepare(input, options);
        ViewEvents {
            input,
            src,
            fences,
            scanner: Scanner::new(options, templates),
            queue: first.into_iter().map(ViewEvent::Diagnostic).collect(),
            done: false,
        }
    }
}

impl<'a> Iterator for ViewEvents<'a> {
    type Item = ViewEvent<'a>;

    fn next(&mut self) -> Option<ViewEvent<'a>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            let mut sink = Queue { input: self.input, events: &mut self.queue, ended: false };
            self.scanner.run(&self.src, self.fences.as_ref(), true, &mut sink);
            // The scanner returns early only after a block ended; otherwise it read the
            // whole text.
            self.done = !sink.ended;
        }
    }
}

impl std::iter::FusedIterator for ViewEvents<'_> {}

/// The sink of [`ViewEvents`]: queues what one run of the scanner found, and pauses it
/// after each block.
struct Queue<'q, 'i> {
    input: &'i str,
    events: &'q mut VecDeque<ViewEvent<'i>>,
    ended: bool,
}

impl<'i> Sink<'i> for Queue<'_, 'i> {
    fn input(&self) -> Option<&'i str> {
        Some(self.input)
    }

    fn request(&mut self, request: RequestView<'i>) {
        self.events.push_back(ViewEvent::Request(request));
        self.ended = true;
    }

    fn discarded(&mut self, _span: Span) {
        self.ended = true;
    }

    fn diagnostic(&mut self, diagnostic: Diagnostic) {
        self.events.push_back(ViewEvent::Diagnostic(diagnostic));
    }

    fn paused(&self) -> bool {
        self.ended
    }
}
