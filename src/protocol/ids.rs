//! Ids for requests the model gave none: one style for every protocol.

use crate::ToolRequest;
use crate::request::RequestIdSource;

/// How a parser names requests the model gave no id.
///
/// ```
/// use tool_calling::protocol::RequestIdStyle;
/// use tool_calling::protocol::textfmt::{TextFormat, TextFormatOptions, TextFormatProtocol};
/// let reply = r#"<tool_call>{"name": "clock", "arguments": {}}</tool_call>"#;
/// let hermes = TextFormatProtocol::new(TextFormat::Hermes);
/// assert!(hermes.parse(reply).requests[0].request_id.starts_with("call_"));
/// let options = TextFormatOptions::default().request_ids(RequestIdStyle::Sequential);
/// let parsed = hermes.with_options(options).parse(reply);
/// assert_eq!(parsed.requests[0].request_id, "req_1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum RequestIdStyle {
    /// `call_<16 random hex digits>_<N>` (N as in [`Sequential`](Self::Sequential)):
    /// one random draw per parse; unique across replies. The default.
    #[default]
    Random,
    /// `req_N`, where N is the request's 1-based position among all requests of the
    /// parse (requests carrying the model's own id count too, so ids never shift when
    /// one is added): deterministic, for tests and tools that compare outputs.
    Sequential,
}

/// Hands out ids to the requests of one parse that have none.
#[derive(Debug)]
pub(crate) struct IdAssigner {
    style: RequestIdStyle,
    prefix: Option<String>,
    /// Requests seen so far.
    seen: usize,
}

impl IdAssigner {
    pub(crate) fn new(style: RequestIdStyle) -> Self {
        IdAssigner { style, prefix: None, seen: 0 }
    }

    /// Counts `request`, and names it when its id is not the model's.
    /// How many requests have been numbered (given an id or not).
    pub(crate) fn seen(&self) -> usize {
        self.seen
    }

    pub(crate) fn assign(&mut self, request: &mut ToolRequest) {
        if let Some(id) = self.next_id(request.id_source == RequestIdSource::Assigned) {
            request.request_id = id;
        }
    }

    /// Counts one more request; returns the id to give it when it needs one
    /// (`assigned`). The random style draws once per parse, not once per request.
    pub(crate) fn next_id(&mut self, assigned: bool) -> Option<String> {
        self.seen += 1;
        if !assigned {
            return None;
        }
        let style = self.style;
        let prefix = self.prefix.get_or_insert_with(|| match style {
            RequestIdStyle::Sequential => "req_".to_string(),
            RequestIdStyle::Random => format!("call_{:016x}_", uuid::Uuid::new_v4().as_u64_pair().0),
        });
        // The digits by hand: `write!` costs several hundred instructions per id.
        let mut digits = [0u8; 20];
        let mut n = self.seen;
        let mut first = digits.len();
        loop {
            first -= 1;
            if let Some(d) = digits.get_mut(first) {
                *d = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 || first == 0 {
                break;
            }
        }
        let digits = digits.get(first..).unwrap_or_default();
        let mut id = String::with_capacity(prefix.len() + digits.len());
        id.push_str(prefix);
        // ASCII digits: each byte is a char (no UTF-8 check needed).
        id.extend(digits.iter().map(|&d| char::from(d)));
        Some(id)
    }
}
