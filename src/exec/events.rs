//! What a cycle reports while it runs: the one event channel of the engine.

use std::sync::Arc;

use crate::model::{FinishReason, TurnDelta};
use crate::protocol::Diagnostic;
use crate::{ToolExecutionResult, ToolRequest};

/// One step of a cycle, reported to the observer set with
/// [`ExecutionContext::on_event`](super::ExecutionContext::on_event) as soon as the engine
/// takes it. A cycle reports the same steps whether its turn arrived whole or streamed
/// in: the normal text and the requests as the protocol decides them, each call's start
/// and result, and last [`CycleEnded`](Self::CycleEnded).
///
/// A request's events come in this order: [`RequestParsed`](Self::RequestParsed),
/// [`Started`](Self::Started) (at once, or when a slot frees up), then
/// [`Finished`](Self::Finished) (results arrive in completion order, not request order:
/// match them by `request_id`). [`Parsed`](Self::Parsed) comes once the turn has ended,
/// with all its requests.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tool_calling::engine::Engine;
/// use tool_calling::exec::{CycleEvent, ExecutionContext};
/// use tool_calling::tools::ToolRegistry;
///
/// let events = Arc::new(Mutex::new(Vec::new()));
/// let log = Arc::clone(&events);
/// let ctx = ExecutionContext::default().on_event(move |event: &CycleEvent| log.lock().unwrap().push(event.clone()));
/// let engine = Engine::new(Arc::new(ToolRegistry::new()));
/// let reply = "Checking.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」\n<<<[END_TOOL_REQUEST]>>>";
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// runtime.block_on(engine.run_turn(reply, &ctx)).unwrap();
/// let events = events.lock().unwrap();
/// assert!(matches!(&events[0], CycleEvent::Text { text } if text == "Checking.\n"));
/// assert!(matches!(&events[1], CycleEvent::RequestParsed { request } if request.tool_name == "weather"));
/// assert!(events.iter().any(|e| matches!(e, CycleEvent::Started { tool_name, .. } if tool_name == "weather")));
/// assert!(events.iter().any(|e| matches!(e, CycleEvent::Finished { result } if !result.is_success())));
/// assert!(matches!(events.last(), Some(CycleEvent::CycleEnded { .. })));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CycleEvent {
    /// Normal text (prose outside requests, reasoning removed) the protocol has decided.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning the provider streams apart from the text (reasoning written inline in
    /// a text reply, such as `<think>`, is removed from the text by the protocol).
    Reasoning {
        /// The reasoning text.
        text: String,
    },
    /// A piece of a native tool call as it arrives, before the call is complete: its
    /// start ([`TurnDelta::ToolCallStart`]) or a fragment of its arguments
    /// ([`TurnDelta::ToolCallArguments`]).
    CallPiece {
        /// The piece.
        delta: TurnDelta,
    },
    /// A request is complete: its call starts now, or when a slot frees up.
    RequestParsed {
        /// The request.
        request: ToolRequest,
    },
    /// Something the parser or the engine noticed.
    Diagnostic {
        /// What was noticed.
        diagnostic: Diagnostic,
    },
    /// A request's call starts.
    Started {
        /// The request's id.
        request_id: String,
        /// Its tool name as written.
        tool_name: String,
    },
    /// A request has its result.
    Finished {
        /// The result.
        result: ToolExecutionResult,
    },
    /// The turn has ended (or will not be read further): all its requests.
    Parsed {
        /// The requests, in order.
        requests: Vec<ToolRequest>,
    },
    /// The cycle is over: the turn has ended and every request has its result.
    CycleEnded {
        /// Why it ended.
        finish_reason: FinishReason,
    },
}

/// The observer of a context's cycles.
#[derive(Clone)]
pub(crate) struct Observer(pub(crate) Arc<dyn Fn(&CycleEvent) + Send + Sync>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}
