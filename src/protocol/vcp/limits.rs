//! Bounds on the work and memory one reply can cost the VCP parser.

/// How much of a reply the VCP parser reads: bounds on its bytes, its requests, and each
/// request block's fields, bytes and values, so that a hostile or runaway model cannot
/// make a parse (one-shot or streamed) take unbounded memory.
///
/// Each limit says what happens past it; every case also gives a
/// [`LimitExceeded`](crate::protocol::DiagnosticKind::LimitExceeded) diagnostic, and a request cut
/// by a limit is incomplete, with a problem the model reads, so it never runs. The
/// defaults are far above what a model writes in one reply; [`VcpLimits::none`] lifts
/// them all.
///
/// | limit | default | past it |
/// | --- | --- | --- |
/// | [`max_reply_bytes`](Self::max_reply_bytes) | 64 MiB | the rest of the reply is not read |
/// | [`max_requests`](Self::max_requests) | 10,000 | later blocks are not read (they stay text) |
/// | [`max_fields`](Self::max_fields) | 1,000 per block | later fields are dropped; the request is incomplete |
/// | [`max_value_bytes`](Self::max_value_bytes) | 8 MiB | the value is emptied; the request is incomplete |
///
/// `max_reply_bytes` also bounds what the streaming parser holds back: it keeps at most
/// the open block's text, and reads no more than that many bytes in all.
///
/// ```
/// use tool_calling::protocol::vcp::{VcpLimits, VcpOptions, VcpProtocol};
/// let block = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n<<<[END_TOOL_REQUEST]>>>\n";
/// let reply = block.repeat(3);
/// let vcp = VcpProtocol::new(VcpOptions::default().limits(VcpLimits::default().max_requests(2)));
/// let outcome = vcp.parse(&reply);
/// assert_eq!(outcome.requests.len(), 2);
/// assert_eq!(outcome.diagnostics[0].kind.as_str(), "limit_exceeded");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct VcpLimits {
    /// Bytes of a reply that are read (cut at a character boundary).
    pub max_reply_bytes: usize,
    /// Requests read from one reply.
    pub max_requests: usize,
    /// Fields kept in one request block (the tool name and id count as fields).
    pub max_fields: usize,
    /// Bytes of one value (as written, before trimming).
    pub max_value_bytes: usize,
}

impl Default for VcpLimits {
    fn default() -> Self {
        VcpLimits {
            max_reply_bytes: 64 << 20,
            max_requests: 10_000,
            max_fields: 1_000,
            max_value_bytes: 8 << 20,
        }
    }
}

impl VcpLimits {
    /// No limit at all: for trusted text, and for measuring the parser itself.
    ///
    /// ```
    /// use tool_calling::protocol::vcp::VcpLimits;
    /// assert_eq!(VcpLimits::none().max_requests, usize::MAX);
    /// ```
    pub fn none() -> Self {
        VcpLimits {
            max_reply_bytes: usize::MAX,
            max_requests: usize::MAX,
            max_fields: usize::MAX,
            max_value_bytes: usize::MAX,
        }
    }

    /// Sets [`max_reply_bytes`](Self::max_reply_bytes).
    #[must_use]
    pub fn max_reply_bytes(mut self, bytes: usize) -> Self {
        self.max_reply_bytes = bytes;
        self
    }

    /// Sets [`max_requests`](Self::max_requests).
    #[must_use]
    pub fn max_requests(mut self, requests: usize) -> Self {
        self.max_requests = requests;
        self
    }

    /// Sets [`max_fields`](Self::max_fields).
    #[must_use]
    pub fn max_fields(mut self, fields: usize) -> Self {
        self.max_fields = fields;
        self
    }

    /// Sets [`max_value_bytes`](Self::max_value_bytes).
    #[must_use]
    pub fn max_value_bytes(mut self, bytes: usize) -> Self {
        self.max_value_bytes = bytes;
        self
    }
}
