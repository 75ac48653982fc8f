//! The one cycle driver behind every entry point of the engine; its rules are in the
//! engine's documentation (`engine/mod.rs`).

use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;

use futures::stream::{FuturesUnordered, Stream, StreamExt};
use serde::{Deserialize, Serialize};
use tracing::Instrument;

use super::{Engine, EngineError};
use crate::exec::{CycleEvent, ExecutionContext, Executor, ExecutorMessages, ResolvedRequest};
use crate::model::{AssistantTurn, FinishReason, Message, TurnAccumulator, TurnDelta};
use crate::protocol::Diagnostic;
use crate::protocol::DiagnosticKind;
use crate::protocol::{
    StreamCollector, StreamEvent, StreamParser, ToolCallingProtocol, TurnState, whole_turn_events,
};
use crate::tools::ToolCatalog;
use crate::{ErrorKind, Invocation, Span, ToolError, ToolExecutionResult, ToolRequest};

/// Everything one cycle produced: the turn, what was read in it, one result per request,
/// and the messages that carry the results back.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::engine::Engine;
/// use tool_calling::model::FinishReason;
/// use tool_calling::tools::ToolRegistry;
///
/// // No tool is registered: the request is still answered, with an error result.
/// let engine = Engine::new(Arc::new(ToolRegistry::new()));
/// let reply = "Sure.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」\n<<<[END_TOOL_REQUEST]>>>";
/// let runtime = tokio::runtime::Runtime::new()?;
/// let cycle = runtime.block_on(engine.run_turn(reply, &Default::default()))?;
/// assert!(cycle.has_tool_requests);
/// assert_eq!(cycle.parsed_requests.len(), cycle.execution_results.len());
/// assert_eq!(cycle.execution_results[0].error_kind, Some(tool_calling::ErrorKind::NotFound));
/// assert_eq!(cycle.result_messages.len(), 1, "VCP answers in one message");
/// assert_eq!(cycle.normal_text, "Sure.\n");
/// assert_eq!(cycle.finish_reason, FinishReason::ToolCalls);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallCycleResult {
    /// Whether the reply held any request at all.
    pub has_tool_requests: bool,
    /// The requests, in order of appearance.
    pub parsed_requests: Vec<ToolRequest>,
    /// One result per parsed request, in the same order.
    pub execution_results: Vec<ToolExecutionResult>,
    /// What the parser noticed (and the engine: repeated request ids, a turn cut at the
    /// limit).
    pub diagnostics: Vec<Diagnostic>,
    /// The messages that carry the results back to the model, as the protocol writes
    /// them for this turn (empty when there were no requests).
    pub result_messages: Vec<Message>,
    /// The turn the cycle was run on, as it arrived.
    pub turn: AssistantTurn,
    /// The turn's normal text: prose outside requests, reasoning removed, as the protocol
    /// read it.
    pub normal_text: String,
    /// What the protocol learnt about the turn (see [`TurnState`]).
    #[serde(default, skip_serializing_if = "TurnState::is_empty")]
    pub state: TurnState,
    /// Why the cycle ended: [`Stop`](FinishReason::Stop) (no requests) or
    /// [`ToolCalls`](FinishReason::ToolCalls) when the turn ended, else
    /// [`Length`](FinishReason::Length) (cut at the turn limit),
    /// [`Error`](FinishReason::Error) (the stream failed) or
    /// [`Cancelled`](FinishReason::Cancelled).
    pub finish_reason: FinishReason,
}

impl ToolCallCycleResult {
    /// The text of the result messages, joined: what a text protocol feeds back.
    pub fn result_text(&self) -> String {
        self.result_messages.iter().map(|m| m.text()).collect()
    }
}

/// Why a cycle over a stream ([`Engine::run_stream`]) did not end normally.
///
/// ```
/// use std::sync::Arc;
/// use futures::stream;
/// use tool_calling::engine::{Engine, StreamCycleError};
/// use tool_calling::model::FinishReason;
/// use tool_calling::tools::ToolRegistry;
///
/// let engine = Engine::new(Arc::new(ToolRegistry::new()));
/// // The connection drops after the first chunk.
/// let reply = stream::iter([Ok("Let me look"), Err("connection reset")]);
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let err = runtime.block_on(engine.run_stream(reply, &Default::default())).unwrap_err();
/// let StreamCycleError::Stream { error, partial } = err else { panic!("expected a stream error") };
/// assert_eq!(error, "connection reset");
/// assert_eq!(partial.turn.text(), "Let me look");
/// assert_eq!(partial.finish_reason, FinishReason::Error);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StreamCycleError<E> {
    /// The engine could not run the cycle (the config names an unknown protocol, no
    /// runtime); nothing was read.
    Engine(EngineError),
    /// The stream failed. The calls started before the failure were still waited for:
    /// `partial` holds their results, and the requests of what arrived (a cut-off
    /// request answered as incomplete).
    Stream {
        /// The stream's error.
        error: E,
        /// The cycle run on what arrived before the failure
        /// ([`FinishReason::Error`]).
        partial: Box<ToolCallCycleResult>,
    },
}

impl<E: std::fmt::Display> std::fmt::Display for StreamCycleError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamCycleError::Engine(error) => error.fmt(f),
            StreamCycleError::Stream { error, .. } => write!(f, "the reply stream failed: {error}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for StreamCycleError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamCycleError::Engine(error) => Some(error),
            StreamCycleError::Stream { error, .. } => Some(error),
        }
    }
}

impl<E> From<EngineError> for StreamCycleError<E> {
    fn from(error: EngineError) -> Self {
        StreamCycleError::Engine(error)
    }
}

mod sealed {
    use std::borrow::Cow;

    use crate::model::TurnDelta;

    pub trait Sealed {}
    impl Sealed for &str {}
    impl Sealed for String {}
    impl Sealed for TurnDelta {}
    impl<P: Sealed, E> Sealed for Result<P, E> {}

    /// A piece of a turn, in the form it came in: a text chunk (borrowed when it came
    /// borrowed) or a delta.
    pub enum Piece<'a> {
        Text(Cow<'a, str>),
        Delta(TurnDelta),
    }
}

use sealed::Piece;

/// What [`Engine::run_stream`] reads: a piece of a turn (a text chunk as `&str` or
/// `String`, or a [`TurnDelta`] as [`ChatModel::stream`](crate::model::ChatModel::stream)
/// yields), or a `Result` of one for a stream that can fail. Sealed: these are the
/// forms a turn's pieces take.
///
/// ```
/// use futures::stream;
/// use tool_calling::model::TurnDelta;
/// # async fn run(engine: tool_calling::engine::Engine) {
/// let ctx = Default::default();
/// // Text chunks, deltas, or fallible items: the same entry point.
/// engine.run_stream(stream::iter(["Hi", " there."]), &ctx).await.unwrap();
/// engine.run_stream(stream::iter([TurnDelta::Text("Hi.".into())]), &ctx).await.unwrap();
/// engine.run_stream(stream::iter([Ok::<_, std::io::Error>("Hi.")]), &ctx).await.unwrap();
/// # }
/// ```
pub trait TurnStreamItem: sealed::Sealed {
    /// The error a failed item carries ([`Infallible`] for plain pieces).
    type Error;

    /// The piece, or the stream's error.
    #[doc(hidden)]
    fn into_piece<'a>(self) -> Result<Piece<'a>, Self::Error>
    where
        Self: 'a;
}

impl TurnStreamItem for &str {
    type Error = Infallible;
    fn into_piece<'a>(self) -> Result<Piece<'a>, Infallible>
    where
        Self: 'a,
    {
        Ok(Piece::Text(std::borrow::Cow::Borrowed(self)))
    }
}

impl TurnStreamItem for String {
    type Error = Infallible;
    fn into_piece<'a>(self) -> Result<Piece<'a>, Infallible> {
        Ok(Piece::Text(std::borrow::Cow::Owned(self)))
    }
}

impl TurnStreamItem for TurnDelta {
    type Error = Infallible;
    fn into_piece<'a>(self) -> Result<Piece<'a>, Infallible> {
        Ok(Piece::Delta(self))
    }
}

impl<P: TurnStreamItem<Error = Infallible>, E> TurnStreamItem for Result<P, E> {
    type Error = E;
    fn into_piece<'a>(self) -> Result<Piece<'a>, E>
    where
        Self: 'a,
    {
        match self?.into_piece() {
            Ok(piece) => Ok(piece),
            Err(never) => match never {},
        }
    }
}

impl Piece<'_> {
    /// What holding this piece costs against [`Engine::with_max_turn_bytes`].
    fn cost(&self) -> usize {
        match self {
            Piece::Text(text) => text.len(),
            Piece::Delta(delta) => delta_cost(delta),
        }
    }

    /// The bytes of reply text it adds.
    fn text_len(&self) -> usize {
        match self {
            Piece::Text(text) => text.len(),
            Piece::Delta(TurnDelta::Text(text)) => text.len(),
            Piece::Delta(_) => 0,
        }
    }
}

/// The least a delta that opens or marks something (a call, a reasoning block) counts
/// against the turn limit, whatever it carries.
const STRUCTURE_COST: usize = 64;

/// What a turn holds so far against [`Engine::with_max_turn_bytes`]: the one rule for
/// what fits, for the cycle and for a turn read with tools off.
pub(crate) struct TurnBudget {
    held: usize,
    max: usize,
}

impl TurnBudget {
    pub(crate) fn new(max: usize) -> Self {
        TurnBudget { held: 0, max }
    }

    /// Counts `cost` if the turn can still hold it; `false`, counting nothing, when it
    /// would take the turn past the limit.
    pub(crate) fn take(&mut self, cost: usize) -> bool {
        let total = self.held.saturating_add(cost);
        if total > self.max {
            return false;
        }
        self.held = total;
        true
    }
}

/// What holding `delta` costs against [`Engine::with_max_turn_bytes`].
pub(crate) fn delta_cost(delta: &TurnDelta) -> usize {
    match delta {
        TurnDelta::Text(text) | TurnDelta::Reasoning(text) => text.len(),
        TurnDelta::Finish(_) => 0,
        TurnDelta::ReasoningSignature(text) => STRUCTURE_COST + text.len(),
        TurnDelta::ReasoningBlock(reasoning) => {
            STRUCTURE_COST + reasoning.text.len() + reasoning.signature.as_ref().map_or(0, String::len)
        }
        TurnDelta::ToolCallStart { id, name, .. } => STRUCTURE_COST + id.len() + name.len(),
        TurnDelta::ToolCallArguments { fragment, .. } => STRUCTURE_COST + fragment.len(),
        TurnDelta::ToolCallSignature { signature, .. } => STRUCTURE_COST + signature.len(),
        _ => STRUCTURE_COST,
    }
}

impl Engine {
    /// Runs the cycle on a whole turn: reads it with the protocol the config selects,
    /// runs its requests, and returns everything that happened. Every request gets
    /// exactly one result, in order. A turn made only of text can be given as text
    /// (`&str`, `String`); a [`&AssistantTurn`](AssistantTurn) is taken as it is.
    ///
    /// It is the stream of one piece: the result equals what [`run_stream`](Self::run_stream)
    /// returns for the same turn in pieces, durations aside.
    pub async fn run_turn(
        &self,
        turn: impl Into<AssistantTurn>,
        ctx: &ExecutionContext,
    ) -> Result<ToolCallCycleResult, EngineError> {
        crate::engine::require_runtime()?;
        let protocol = self.protocol_for(&ctx.config)?;
        let pieces = futures::stream::iter(turn.into().into_deltas()).map(TurnStreamItem::into_piece);
        let (cycle, failure) = self.drive(&protocol, pieces, Reading::Whole, ctx).await;
        match failure {
            None => Ok(cycle),
            Some(never) => match never {},
        }
    }

    /// Runs the cycle on a turn that streams in: text chunks, or the [`TurnDelta`]s a
    /// streaming model yields (text, reasoning, native tool calls), or `Result`s of
    /// either for a stream that can fail (see [`TurnStreamItem`]). Each request runs as
    /// soon as it is complete, while the rest of the turn is still arriving; this returns
    /// once the stream has ended and every request has its result. The
    /// [engine's documentation](crate::engine#the-cycle) has the rules.
    ///
    /// At the first error the engine stops reading, reads what arrived (a cut-off
    /// request becomes an incomplete request), waits for the calls already started, and
    /// returns the error with that partial cycle. Cancelling [`ExecutionContext::cancel`]
    /// stops reading too: the calls running are cancelled, and the turn is what had
    /// arrived. The stream need not be `Unpin`; the returned future is `Send` when the
    /// stream is.
    pub async fn run_stream<St>(
        &self,
        stream: St,
        ctx: &ExecutionContext,
    ) -> Result<ToolCallCycleResult, StreamCycleError<<St::Item as TurnStreamItem>::Error>>
    where
        St: Stream,
        St::Item: TurnStreamItem,
    {
        crate::engine::require_runtime()?;
        let protocol = self.protocol_for(&ctx.config).map_err(EngineError::from)?;
        let (cycle, failure) =
            self.drive(&protocol, stream.map(TurnStreamItem::into_piece), Reading::Streamed, ctx).await;
        match failure {
            None => Ok(cycle),
            Some(error) => Err(StreamCycleError::Stream { error, partial: Box::new(cycle) }),
        }
    }

    /// The one cycle driver: reads `stream` with `protocol` and runs the calls together,
    /// until the stream has ended (or failed, or the cycle was cancelled) and every call
    /// has finished.
    pub(crate) async fn drive<'p, St, E>(
        &self,
        protocol: &Arc<dyn ToolCallingProtocol>,
        stream: St,
        reading: Reading,
        ctx: &ExecutionContext,
    ) -> (ToolCallCycleResult, Option<E>)
    where
        St: Stream<Item = Result<Piece<'p>, E>>,
    {
        let span = tracing::info_span!("tool_call_cycle", protocol = protocol.id());
        async {
            let mut stream = pin!(stream);
            let mut cycle = CycleState::new(self, ctx, protocol.as_ref(), reading);
            // Serial mode: one call at a time, in request order.
            let limit =
                if ctx.config.parallel_execution { self.executor().options().max_concurrency.max(1) } else { 1 };
            let mut running = FuturesUnordered::new();
            let mut reading = true;
            let mut failure = None;
            let mut end = None;
            loop {
                while running.len() < limit {
                    let Some((index, request, calls)) = cycle.queue.pop_front() else { break };
                    ctx.emit(|| CycleEvent::Started {
                        request_id: request.request_id.clone(),
                        tool_name: request.tool_name.clone(),
                    });
                    running.push(run_one(self.executor(), ctx, index, request, calls));
                }
                if !reading && running.is_empty() {
                    break;
                }
                let step = tokio::select! {
                    biased;
                    () = ctx.cancel.cancelled(), if reading => Step::Cancelled,
                    Some((index, result)) = running.next(), if !running.is_empty() => Step::Finished(index, result),
                    item = stream.next(), if reading => Step::Read(item),
                    else => break,
                };
                match step {
                    Step::Finished(index, result) => cycle.finished(index, result),
                    Step::Read(Some(Ok(piece))) if cycle.fits(&piece) => cycle.push(piece),
                    Step::Read(Some(Ok(_))) => {
                        tracing::debug!(max = self.max_turn_bytes, "turn limit: the rest of the reply is not read");
                        reading = false;
                        end = Some(FinishReason::Length);
                        cycle.cut_off(FinishReason::Length);
                        cycle.limit_exceeded();
                        cycle.finish();
                    }
                    Step::Read(Some(Err(error))) => {
                        failure = Some(error);
                        reading = false;
                        end = Some(FinishReason::Error);
                        cycle.cut_off(FinishReason::Error);
                        cycle.finish();
                    }
                    Step::Read(None) => {
                        reading = false;
                        cycle.finish();
                    }
                    Step::Cancelled => {
                        tracing::debug!("cancelled: the rest of the reply is not read");
                        reading = false;
                        end = Some(FinishReason::Cancelled);
                        cycle.cut_off(FinishReason::Error);
                        cycle.finish();
                    }
                }
            }
            let finish_reason = end.unwrap_or(if cycle.results.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            });
            let result = cycle.into_result(finish_reason);
            ctx.emit(|| CycleEvent::CycleEnded { finish_reason });
            (result, failure)
        }
        .instrument(span)
        .await
    }

    /// Starts a fire-and-forget request in the background; its failure is kept in the
    /// context for a later turn ([`ExecutionContext::take_background_failures`]).
    fn spawn_background(
        &self,
        request: ToolRequest,
        calls: Vec<Result<Invocation, ToolError>>,
        ctx: &ExecutionContext,
    ) {
        let executor = self.executor().clone();
        let ctx = ctx.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let message = executor.options().messages.background_no_runtime.clone();
            let result = ToolExecutionResult::error(
                &request.request_id,
                &request.tool_name,
                ErrorKind::Execution,
                message,
            );
            ctx.report_background_failure(result);
            return;
        };
        runtime.spawn(async move {
            let result = executor.execute_request(ResolvedRequest::new(&request, calls), &ctx).await;
            if !result.is_success() {
                ctx.report_background_failure(result);
            }
        });
    }
}

/// How the driver reads a turn: with the protocol's streaming parser, so that each call
/// starts as soon as its request is complete, or, when the turn is already whole, with
/// its one-shot parse ([`parse_turn`](ToolCallingProtocol::parse_turn)), which finds the
/// same requests for less work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    Streamed,
    Whole,
}

/// What the select loop of a cycle woke up for.
enum Step<T, E> {
    /// The cycle was cancelled.
    Cancelled,
    /// A call finished: the index of its request, and its result.
    Finished(usize, ToolExecutionResult),
    /// The stream yielded (or ended).
    Read(Option<Result<T, E>>),
}

/// Runs one request; returns its result with the index of its request.
fn run_one<'a>(
    executor: &'a Executor,
    ctx: &'a ExecutionContext,
    index: usize,
    request: ToolRequest,
    calls: Vec<Result<Invocation, ToolError>>,
) -> impl Future<Output = (usize, ToolExecutionResult)> + 'a {
    let span = tracing::info_span!("execute", request_id = %request.request_id);
    async move { (index, executor.execute_request(ResolvedRequest::new(&request, calls), ctx).await) }
        .instrument(span)
}

/// The immediate result of a fire-and-forget request.
fn started_in_background(request: &ToolRequest, words: &ExecutorMessages) -> ToolExecutionResult {
    ToolExecutionResult::success(&request.request_id, &request.tool_name, words.started_in_background.clone())
}

/// A request waiting for a free slot: its index, the request, and its resolved calls.
type Queued = (usize, ToolRequest, Vec<Result<Invocation, ToolError>>);

/// The reading side of a cycle: the turn so far, the parser, the requests and their
/// results, and the requests waiting for a free slot.
struct CycleState<'e> {
    engine: &'e Engine,
    ctx: &'e ExecutionContext,
    protocol: &'e dyn ToolCallingProtocol,
    catalog: Arc<ToolCatalog>,
    /// The protocol's streaming parser; `None` for a whole turn, which is parsed once it
    /// is all in `turn`.
    parser: Option<Box<dyn StreamParser + 'e>>,
    turn: TurnAccumulator,
    /// A whole turn, once read and parsed.
    whole: Option<AssistantTurn>,
    collector: StreamCollector,
    /// The request ids seen so far (repeated ones get a diagnostic).
    ids: HashSet<String>,
    /// One slot per request, in request order.
    results: Vec<Option<ToolExecutionResult>>,
    /// Requests not started yet, in request order.
    queue: VecDeque<Queued>,
    /// Reused buffer of parser events.
    events: Vec<StreamEvent>,
    /// What the turn holds so far, against [`Engine::with_max_turn_bytes`].
    budget: TurnBudget,
    /// The bytes of reply text read so far.
    text_len: usize,
    /// Whether the reading was cut before the reply ended.
    cut: bool,
}

impl<'e> CycleState<'e> {
    fn new(
        engine: &'e Engine,
        ctx: &'e ExecutionContext,
        protocol: &'e dyn ToolCallingProtocol,
        reading: Reading,
    ) -> Self {
        CycleState {
            engine,
            ctx,
            parser: match reading {
                Reading::Streamed => Some(protocol.stream_parser()),
                Reading::Whole => None,
            },
            whole: None,
            protocol,
            catalog: engine.registry().catalog(),
            turn: TurnAccumulator::new(),
            collector: StreamCollector::new(),
            ids: HashSet::new(),
            results: Vec::new(),
            queue: VecDeque::new(),
            events: Vec::new(),
            budget: TurnBudget::new(engine.max_turn_bytes),
            text_len: 0,
            cut: false,
        }
    }

    fn words(&self) -> &ExecutorMessages {
        &self.engine.executor().options().messages
    }

    /// Whether `piece` fits in what is left of the turn limit; counts it if so.
    fn fits(&mut self, piece: &Piece<'_>) -> bool {
        if !self.budget.take(piece.cost()) {
            return false;
        }
        self.text_len = self.text_len.saturating_add(piece.text_len());
        true
    }

    /// A call finished: its result goes to its request's slot.
    fn finished(&mut self, index: usize, result: ToolExecutionResult) {
        tracing::debug!(request_id = %result.request_id, status = result.status.as_str(), "finished");
        self.ctx.emit(|| CycleEvent::Finished { result: result.clone() });
        if let Some(slot) = self.results.get_mut(index) {
            *slot = Some(result);
        }
    }

    /// The turn limit was reached: the diagnostic that says so, where the text stopped.
    fn limit_exceeded(&mut self) {
        let TurnBudget { held, max } = self.budget;
        let diagnostic = Diagnostic::new(
            DiagnosticKind::LimitExceeded,
            format!(
                "the reply was not read past {held} bytes: the engine holds at most {max} bytes of a turn \
                 (Engine::with_max_turn_bytes)"
            ),
            Span::new(self.text_len, self.text_len),
        );
        self.ctx.emit(|| CycleEvent::Diagnostic { diagnostic: diagnostic.clone() });
        self.collector.add(StreamEvent::Diagnostic(diagnostic));
        self.turn.push(&TurnDelta::Finish(FinishReason::Length));
    }

    /// Takes in the next piece of the turn.
    fn push(&mut self, piece: Piece<'_>) {
        match piece {
            Piece::Text(text) => {
                self.turn.push_text(&text);
                if let Some(parser) = &mut self.parser {
                    parser.push_text(&text, &mut self.events);
                }
            }
            Piece::Delta(delta) => self.push_delta(&delta),
        }
        self.take_events();
    }

    fn push_delta(&mut self, delta: &TurnDelta) {
        self.turn.push(delta);
        if let Some(parser) = &mut self.parser {
            parser.push(delta, &mut self.events);
        }
        match delta {
            TurnDelta::Reasoning(text) => self.ctx.emit(|| CycleEvent::Reasoning { text: text.clone() }),
            TurnDelta::ToolCallStart { .. } | TurnDelta::ToolCallArguments { .. } => {
                self.ctx.emit(|| CycleEvent::CallPiece { delta: delta.clone() });
            }
            _ => {}
        }
    }

    /// The reply will not be read further, before its end (a limit, a broken stream, a
    /// cancellation): native calls that started and did not end are marked incomplete,
    /// so they are reported and answered, never run with what arrived of them.
    fn cut_off(&mut self, reason: FinishReason) {
        self.cut = true;
        let open = self.turn.open_calls();
        if open.is_empty() {
            return;
        }
        self.push_delta(&TurnDelta::Finish(reason));
        for index in open {
            self.push_delta(&TurnDelta::ToolCallIncomplete { index });
            self.push_delta(&TurnDelta::ToolCallEnd { index });
        }
        self.take_events();
    }

    /// The turn has ended (or will not be read further): flushes the parser.
    fn finish(&mut self) {
        match &mut self.parser {
            Some(parser) => parser.finish(&mut self.events),
            None => {
                let turn = std::mem::take(&mut self.turn).finish();
                whole_turn_events(self.protocol, &turn, &mut self.events);
                self.whole = Some(turn);
            }
        }
        self.take_events();
        tracing::debug!(
            protocol = self.protocol.id(),
            bytes = self.text_len,
            requests = self.collector.requests().len(),
            "reply parsed"
        );
        let collector = &self.collector;
        self.ctx.emit(|| CycleEvent::Parsed { requests: collector.requests().to_vec() });
    }

    /// Handles the parser's new events: collects them, answers fire-and-forget requests
    /// and queues the others, and reports them.
    fn take_events(&mut self) {
        let mut events = std::mem::take(&mut self.events);
        for mut event in events.drain(..) {
            // A request still open when the reading was cut is incomplete, even if its
            // protocol would accept it unterminated at the end of a whole reply.
            if let (true, StreamEvent::RequestCompleted(request)) = (self.cut, &mut event)
                && request.complete
            {
                request.complete = false;
                request.problems.push(self.words().reply_cut.clone());
            }
            match &event {
                StreamEvent::Text { text, .. } => self.ctx.emit(|| CycleEvent::Text { text: text.clone() }),
                StreamEvent::Diagnostic(diagnostic) => {
                    diagnostic.log();
                    self.ctx.emit(|| CycleEvent::Diagnostic { diagnostic: diagnostic.clone() });
                }
                StreamEvent::RequestCompleted(request) => {
                    if !self.ids.insert(request.request_id.clone()) {
                        let diagnostic = crate::protocol::duplicate_id_diagnostic(request);
                        self.ctx.emit(|| CycleEvent::Diagnostic { diagnostic: diagnostic.clone() });
                        self.collector.add(StreamEvent::Diagnostic(diagnostic));
                    }
                    self.accept(request);
                }
                _ => {}
            }
            self.collector.add(event);
        }
        self.events = events;
    }

    /// A request is complete: starts it in the background if it is fire-and-forget,
    /// else queues it.
    fn accept(&mut self, request: &ToolRequest) {
        let index = self.results.len();
        tracing::debug!(request_id = %request.request_id, tool_name = %request.tool_name, "request completed");
        self.ctx.emit(|| CycleEvent::RequestParsed { request: request.clone() });
        let calls = self.protocol.resolve(request, self.collector.state(), &self.catalog);
        if request.fire_and_forget && request.complete {
            self.ctx.emit(|| CycleEvent::Started {
                request_id: request.request_id.clone(),
                tool_name: request.tool_name.clone(),
            });
            self.engine.spawn_background(request.clone(), calls, self.ctx);
            let result = started_in_background(request, self.words());
            self.ctx.emit(|| CycleEvent::Finished { result: result.clone() });
            self.results.push(Some(result));
        } else {
            self.results.push(None);
            self.queue.push_back((index, request.clone(), calls));
        }
    }

    /// The cycle's result, once every call has finished.
    fn into_result(self, finish_reason: FinishReason) -> ToolCallCycleResult {
        let words = &self.engine.executor().options().messages;
        let outcome = self.collector.into_outcome();
        let results: Vec<ToolExecutionResult> = self
            .results
            .into_iter()
            .zip(&outcome.requests)
            .map(|(result, request)| {
                // Every request was run or answered before the loop ended; never leave
                // one unanswered all the same.
                result.unwrap_or_else(|| {
                    ToolExecutionResult::error(
                        &request.request_id,
                        &request.tool_name,
                        ErrorKind::Execution,
                        words.stream_ended.clone(),
                    )
                })
            })
            .collect();
        let result_messages = self.protocol.result_messages(&results, &outcome.state);
        ToolCallCycleResult {
            has_tool_requests: !outcome.requests.is_empty(),
            parsed_requests: outcome.requests,
            execution_results: results,
            diagnostics: outcome.diagnostics,
            result_messages,
            turn: self.whole.unwrap_or_else(|| self.turn.finish()),
            normal_text: outcome.normal_text,
            state: outcome.state,
            finish_reason,
        }
    }
}
