//! Early execution: running requests while the model is still writing its turn.
//!
//! [`Engine::process_tool_call_stream`] reads a reply as a [`Stream`] of text chunks
//! ([`Engine::process_delta_stream`]: of [`TurnDelta`]s, as [`ChatModel::stream`]
//! yields them) and feeds each piece to the protocol's
//! [`incremental_parser`](crate::ToolCallingProtocol::incremental_parser). As soon as a
//! request is complete ([`StreamEvent::RequestCompleted`]) its call starts, while the
//! rest of the turn is still arriving; the calls run concurrently with the stream. When
//! the stream ends, the engine waits for the calls still running and returns the same
//! [`ToolCallCycleResult`] that [`process_turn`](Engine::process_turn) returns for the
//! whole turn (durations aside), inside a [`StreamedCycle`] that also holds the turn.
//!
//! The executor's rules all hold: checks, time limits, retries, cancellation through
//! [`ExecutionContext::cancel`], at most
//! [`max_concurrency`](crate::exec::ExecutorOptions::max_concurrency) calls at once
//! in parallel mode, and in serial mode (`parallel_execution: false`) one call after
//! another in request order. Fire-and-forget requests start in the background and are
//! answered at once, as in a one-shot cycle. A protocol without an incremental parser
//! still works: its turn is collected and parsed once, at the end.
//!
//! The engine holds at most [`Engine::with_max_turn_bytes`] of a turn (64 MiB by
//! default) and stops reading there. A request still open when the reading stops
//! before the reply's end (that limit, a broken stream, a cancellation) is incomplete:
//! it is answered, never run.
//!
//! Hosts that prefer callbacks pass an `on_chunk` closure
//! ([`process_tool_call_stream_with`](Engine::process_tool_call_stream_with)): it
//! receives a [`StreamChunk`] for every step (prose decided, requests completed, results
//! finished), then a last chunk with [`done`](StreamChunk::done) set.
//!
//! [`ChatModel::stream`]: crate::model::ChatModel::stream
//!
//! ```
//! use std::sync::Arc;
//! use futures::stream;
//! use tool_calling::engine::Engine;
//! use tool_calling::exec::ExecutionContext;
//! use tool_calling::model::FinishReason;
//! use tool_calling::tools::{ToolProvider, ToolRegistry};
//! use tool_calling::tool;
//!
//! #[derive(Default)]
//! struct Calc;
//!
//! /// Arithmetic.
//! #[tool(id = "calc", register = false)]
//! impl Calc {
//!     /// Add two numbers.
//!     #[tool_method]
//!     fn add(&self, a: f64, b: f64) -> f64 {
//!         a + b
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let registry = ToolRegistry::new();
//! registry.register(Calc::tool_spec()).unwrap();
//! let engine = Engine::new(Arc::new(registry));
//!
//! // The reply as the model streams it: `calc_add` starts as soon as its block has
//! // ended, before "Meanwhile…" has arrived.
//! let chunks = [
//!     "Let me add.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」,\n",
//!     "a:「始」2「末」,\nb:「始」40「末」\n<<<[END_TOOL_",
//!     "REQUEST]>>>\n",
//!     "Meanwhile, a joke.",
//! ];
//! let streamed = engine.process_tool_call_stream(stream::iter(chunks), &ExecutionContext::default()).await.unwrap();
//! assert_eq!(streamed.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(streamed.turn.text(), chunks.concat());
//! assert_eq!(streamed.cycle.execution_results[0].result, "42.0");
//! # });
//! ```

use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;

use futures::stream::{FuturesUnordered, Stream, StreamExt};
use tracing::Instrument;

use super::cycle::started_in_background;
use super::{Engine, EngineError, EngineEvent, ToolCallCycleResult};
use crate::exec::{ExecutionContext, Executor, PlannedRequest};
use crate::model::{AssistantTurn, FinishReason, TurnAccumulator, TurnDelta};
use crate::protocol::{IncrementalParser, ParseOutcome, StreamCollector, StreamEvent, ToolCallingProtocol};
use crate::tools::ToolCatalog;
use crate::{
    Diagnostic, DiagnosticKind, ErrorKind, Invocation, ParsedToolRequest, Span, ToolError,
    ToolExecutionResult,
};

/// One step of a streamed cycle, for hosts that take callbacks. Every field but
/// [`done`](Self::done) and [`finish_reason`](Self::finish_reason) holds only what is
/// new in this step.
///
/// Steps come as the engine decides them: after a piece of the reply was read (prose,
/// completed requests, diagnostics), whenever a call finishes (one result), and last a
/// chunk with `done: true`, a finish reason, and nothing else. Reasoning a native API
/// streams apart comes in [`reasoning`](Self::reasoning), never in the prose; reasoning
/// written inline in a text reply (`<think>`) is removed from the prose by the protocol.
///
/// ```
/// use std::sync::Arc;
/// use futures::stream;
/// use tool_calling::engine::{Engine, StreamChunk};
/// use tool_calling::model::FinishReason;
/// use tool_calling::tools::ToolRegistry;
///
/// assert!(StreamChunk::default().is_empty());
/// let engine = Engine::new(Arc::new(ToolRegistry::new()));
/// let mut chunks: Vec<StreamChunk> = Vec::new();
/// let reply = stream::iter(["Just ", "prose, ", "no requests."]);
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// runtime
///     .block_on(engine.process_tool_call_stream_with(reply, &Default::default(), |c| chunks.push(c)))
///     .unwrap();
/// let prose: String = chunks.iter().map(|c| c.content.as_str()).collect();
/// assert_eq!(prose, "Just prose, no requests.");
/// let last = chunks.last().unwrap();
/// assert!(last.done && last.finish_reason == Some(FinishReason::Stop));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct StreamChunk {
    /// Prose (text outside requests) decided in this step.
    pub content: String,
    /// Reasoning (thinking) that arrived in this step, apart from the prose: what a
    /// native API streams as reasoning.
    pub reasoning: String,
    /// Native tool calls as they arrive, before they are complete: each call's start
    /// (id, name) and argument fragments ([`TurnDelta::ToolCallStart`],
    /// [`TurnDelta::ToolCallArguments`]). A complete call is in
    /// [`tool_calls`](Self::tool_calls).
    pub call_pieces: Vec<TurnDelta>,
    /// Requests completed in this step, in order; their calls are starting.
    pub tool_calls: Vec<ParsedToolRequest>,
    /// Results that arrived in this step, in completion order (not request order:
    /// match them by [`request_id`](ToolExecutionResult::request_id)).
    pub results: Vec<ToolExecutionResult>,
    /// What the parser noticed in this step.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether this is the last chunk: the reply has ended and every request has its
    /// result.
    pub done: bool,
    /// Why the cycle ended; set on the last chunk only.
    pub finish_reason: Option<FinishReason>,
}

impl StreamChunk {
    /// Adds what `other` carries to this chunk (in order).
    fn absorb(&mut self, other: StreamChunk) {
        self.content.push_str(&other.content);
        self.reasoning.push_str(&other.reasoning);
        self.call_pieces.extend(other.call_pieces);
        self.tool_calls.extend(other.tool_calls);
        self.results.extend(other.results);
        self.diagnostics.extend(other.diagnostics);
        self.done |= other.done;
        self.finish_reason = other.finish_reason.or(self.finish_reason);
    }

    /// Whether the chunk carries nothing (no prose, request, result or diagnostic, and
    /// is not the last).
    pub fn is_empty(&self) -> bool {
        self.content.is_empty()
            && self.reasoning.is_empty()
            && self.call_pieces.is_empty()
            && self.tool_calls.is_empty()
            && self.results.is_empty()
            && self.diagnostics.is_empty()
            && !self.done
    }
}

/// What a streamed cycle produced: the cycle result, and the turn it was run on.
///
/// ```
/// use std::sync::Arc;
/// use futures::stream;
/// use tool_calling::engine::{Engine, ToolCallCycleResult};
/// use tool_calling::model::FinishReason;
/// use tool_calling::tools::ToolRegistry;
///
/// let engine = Engine::new(Arc::new(ToolRegistry::new()));
/// let chunks = [
///     "Let me check.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」\n",
///     "<<<[END_TOOL_REQUEST]>>>",
/// ];
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let streamed =
///     runtime.block_on(engine.process_tool_call_stream(stream::iter(chunks), &Default::default())).unwrap();
/// assert_eq!(streamed.turn.text(), chunks.concat());
/// assert_eq!(streamed.prose.trim(), "Let me check.");
/// assert_eq!(streamed.finish_reason, FinishReason::ToolCalls);
/// let cycle: ToolCallCycleResult = streamed.into();
/// assert_eq!(cycle.execution_results.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StreamedCycle {
    /// Requests, one result each in request order, diagnostics and result messages:
    /// equal to what [`Engine::process_turn`] returns for [`turn`](Self::turn),
    /// durations aside.
    pub cycle: ToolCallCycleResult,
    /// The whole turn as it arrived.
    pub turn: AssistantTurn,
    /// The prose of the turn: text outside requests, reasoning removed, as the
    /// protocol's incremental parser reports it. For a protocol without one, the text
    /// outside the requests' spans.
    pub prose: String,
    /// Why the cycle ended: [`Stop`](FinishReason::Stop) or
    /// [`ToolCalls`](FinishReason::ToolCalls) when the stream ended, else
    /// [`Error`](FinishReason::Error) or [`Cancelled`](FinishReason::Cancelled).
    pub finish_reason: FinishReason,
}

impl From<StreamedCycle> for ToolCallCycleResult {
    fn from(streamed: StreamedCycle) -> Self {
        streamed.cycle
    }
}

/// Why a fallible streamed cycle ([`Engine::try_process_tool_call_stream`],
/// [`Engine::process_delta_stream`]) did not end normally.
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
/// let err = runtime.block_on(engine.try_process_tool_call_stream(reply, &Default::default())).unwrap_err();
/// let StreamCycleError::Stream { error, partial } = err else { panic!("expected a stream error") };
/// assert_eq!(error, "connection reset");
/// assert_eq!(partial.turn.text(), "Let me look");
/// assert_eq!(partial.finish_reason, FinishReason::Error);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StreamCycleError<E> {
    /// The engine could not run the cycle (the config names an unknown protocol);
    /// nothing was read.
    Engine(EngineError),
    /// The stream failed. The calls started before the failure were still waited for:
    /// `partial` holds their results, and the requests of what arrived (a cut-off
    /// request answered as incomplete).
    Stream {
        /// The stream's error.
        error: E,
        /// The cycle run on what arrived before the failure
        /// ([`FinishReason::Error`]).
        partial: Box<StreamedCycle>,
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

/// A piece of a streamed turn: a text chunk, or a delta.
trait TurnPiece {
    fn feed(&self, parser: &mut dyn IncrementalParser, events: &mut Vec<StreamEvent>);
    fn record(&self, turn: &mut TurnAccumulator);
    /// What holding this piece costs, against [`Engine::with_max_turn_bytes`].
    fn cost(&self) -> usize;
    /// The bytes of reply text it adds.
    fn text_len(&self) -> usize;
    /// Reasoning text this piece carries (reported apart from the prose).
    fn reasoning(&self) -> Option<&str> {
        None
    }

    /// The native tool-call piece this is (a start, an argument fragment), if any.
    fn call_piece(&self) -> Option<&TurnDelta> {
        None
    }
}

/// A text chunk of a text-only reply.
struct TextChunk<S>(S);

impl<S: AsRef<str>> TurnPiece for TextChunk<S> {
    fn feed(&self, parser: &mut dyn IncrementalParser, events: &mut Vec<StreamEvent>) {
        parser.push_text(self.0.as_ref(), events);
    }

    fn record(&self, turn: &mut TurnAccumulator) {
        turn.push_text(self.0.as_ref());
    }

    fn cost(&self) -> usize {
        self.0.as_ref().len()
    }

    fn text_len(&self) -> usize {
        self.0.as_ref().len()
    }
}

/// The least a delta that opens or marks something (a call, a reasoning block) counts
/// against the turn limit, whatever it carries.
const STRUCTURE_COST: usize = 64;

/// What a turn holds so far against [`Engine::with_max_turn_bytes`]: the one rule for
/// what fits, for the streamed cycle and for a streamed turn read with tools off.
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

impl TurnPiece for TurnDelta {
    fn feed(&self, parser: &mut dyn IncrementalParser, events: &mut Vec<StreamEvent>) {
        parser.push(self, events);
    }

    fn record(&self, turn: &mut TurnAccumulator) {
        turn.push(self);
    }

    fn cost(&self) -> usize {
        delta_cost(self)
    }

    fn text_len(&self) -> usize {
        match self {
            TurnDelta::Text(text) => text.len(),
            _ => 0,
        }
    }

    fn reasoning(&self) -> Option<&str> {
        match self {
            TurnDelta::Reasoning(text) => Some(text),
            _ => None,
        }
    }

    fn call_piece(&self) -> Option<&TurnDelta> {
        matches!(self, TurnDelta::ToolCallStart { .. } | TurnDelta::ToolCallArguments { .. }).then_some(self)
    }
}

impl Engine {
    /// Reads a reply as a stream of text chunks and runs each request as soon as it is
    /// complete, while the rest of the reply is still arriving; returns once the stream
    /// has ended and every request has its result. See the
    /// [module documentation](crate::engine::streamed) for the rules and an example.
    ///
    /// The returned cycle equals what
    /// [`process_tool_call_cycle`](Self::process_tool_call_cycle) returns for the whole
    /// text (durations aside). Cancelling [`ExecutionContext::cancel`] stops reading the
    /// stream: the calls running are cancelled, and the reply is what had arrived.
    ///
    /// The stream need not be `Unpin`; the returned future is `Send` when the stream is.
    pub async fn process_tool_call_stream<St>(
        &self,
        stream: St,
        ctx: &ExecutionContext,
    ) -> Result<StreamedCycle, EngineError>
    where
        St: Stream,
        St::Item: AsRef<str>,
    {
        self.process_tool_call_stream_with(stream, ctx, |_| {}).await
    }

    /// [`process_tool_call_stream`](Self::process_tool_call_stream) that also reports
    /// every step to `on_chunk`: prose as it is decided, requests as they complete,
    /// results as they arrive, and last a chunk with [`done`](StreamChunk::done) set.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::stream;
    /// use tool_calling::engine::{Engine, StreamChunk};
    /// use tool_calling::exec::ExecutionContext;
    /// use tool_calling::model::FinishReason;
    /// use tool_calling::tools::ToolRegistry;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let engine = Engine::new(Arc::new(ToolRegistry::new()));
    /// let chunks = ["Checking.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n", "<<<[END_TOOL_REQUEST]>>>\n"];
    /// let mut seen: Vec<StreamChunk> = Vec::new();
    /// let streamed = engine
    ///     .process_tool_call_stream_with(stream::iter(chunks), &ExecutionContext::default(), |chunk| {
    ///         seen.push(chunk)
    ///     })
    ///     .await
    ///     .unwrap();
    /// let last = seen.last().unwrap();
    /// assert!(last.done);
    /// assert_eq!(last.finish_reason, Some(FinishReason::ToolCalls));
    /// let requested: usize = seen.iter().map(|c| c.tool_calls.len()).sum();
    /// let answered: usize = seen.iter().map(|c| c.results.len()).sum();
    /// assert_eq!((requested, answered), (1, 1));
    /// assert_eq!(streamed.cycle.execution_results.len(), 1);
    /// # });
    /// ```
    pub async fn process_tool_call_stream_with<St, F>(
        &self,
        stream: St,
        ctx: &ExecutionContext,
        mut on_chunk: F,
    ) -> Result<StreamedCycle, EngineError>
    where
        St: Stream,
        St::Item: AsRef<str>,
        F: FnMut(StreamChunk),
    {
        let pieces = stream.map(|chunk| Ok::<_, Infallible>(TextChunk(chunk)));
        let (streamed, _) = self.run_stream(pieces, ctx, &mut on_chunk).await?;
        Ok(streamed)
    }

    /// [`process_tool_call_stream`](Self::process_tool_call_stream) for a stream that
    /// can fail (a network reply). At the first error the engine stops reading, parses
    /// what arrived (a cut-off request becomes an incomplete request), waits for the
    /// calls already started, and returns the error with that partial cycle.
    pub async fn try_process_tool_call_stream<St, S, E>(
        &self,
        stream: St,
        ctx: &ExecutionContext,
    ) -> Result<StreamedCycle, StreamCycleError<E>>
    where
        St: Stream<Item = Result<S, E>>,
        S: AsRef<str>,
    {
        self.try_process_tool_call_stream_with(stream, ctx, |_| {}).await
    }

    /// [`try_process_tool_call_stream`](Self::try_process_tool_call_stream) with an
    /// `on_chunk` callback, as in
    /// [`process_tool_call_stream_with`](Self::process_tool_call_stream_with). After a
    /// failure the last chunk's finish reason is [`FinishReason::Error`].
    pub async fn try_process_tool_call_stream_with<St, S, E, F>(
        &self,
        stream: St,
        ctx: &ExecutionContext,
        mut on_chunk: F,
    ) -> Result<StreamedCycle, StreamCycleError<E>>
    where
        St: Stream<Item = Result<S, E>>,
        S: AsRef<str>,
        F: FnMut(StreamChunk),
    {
        let pieces = stream.map(|item| item.map(TextChunk));
        finish(self.run_stream(pieces, ctx, &mut on_chunk).await)
    }

    /// Reads a turn as a stream of [`TurnDelta`]s (what
    /// [`ChatModel::stream`](crate::model::ChatModel::stream) yields: text, reasoning and
    /// native tool calls) and runs each request as soon as it is complete, as
    /// [`try_process_tool_call_stream_with`](Self::try_process_tool_call_stream_with)
    /// does for text. The returned cycle equals what [`process_turn`](Self::process_turn)
    /// returns for the accumulated turn.
    pub async fn process_delta_stream<St, E, F>(
        &self,
        stream: St,
        ctx: &ExecutionContext,
        mut on_chunk: F,
    ) -> Result<StreamedCycle, StreamCycleError<E>>
    where
        St: Stream<Item = Result<TurnDelta, E>>,
        F: FnMut(StreamChunk),
    {
        finish(self.run_stream(stream, ctx, &mut on_chunk).await)
    }

    /// The streamed cycle: reads `stream` and runs the calls together, until the stream
    /// has ended (or failed, or the cycle was cancelled) and every call has finished.
    async fn run_stream<St, P, E, F>(
        &self,
        stream: St,
        ctx: &ExecutionContext,
        on_chunk: &mut F,
    ) -> Result<(StreamedCycle, Option<E>), EngineError>
    where
        St: Stream<Item = Result<P, E>>,
        P: TurnPiece,
        F: FnMut(StreamChunk),
    {
        crate::engine::require_runtime()?;
        let protocol = self.protocol_for(&ctx.config)?;
        let span = tracing::info_span!("tool_call_stream", protocol = protocol.id());
        let streamed = async {
            let mut stream = pin!(stream);
            let mut cycle = CycleState::new(self, ctx, protocol);
            // Serial mode: one call at a time, in request order.
            let limit =
                if ctx.config.parallel_execution { self.executor.options().max_concurrency.max(1) } else { 1 };
            let mut running = FuturesUnordered::new();
            let mut reading = true;
            let mut failure = None;
            let mut cancelled = false;
            let mut limited = false;
            loop {
                while running.len() < limit {
                    let Some((index, request, calls)) = cycle.queue.pop_front() else { break };
                    self.emit(|| EngineEvent::Started {
                        request_id: request.request_id.clone(),
                        tool_name: request.tool_name.clone(),
                    });
                    running.push(run_one(&self.executor, ctx, index, request, calls));
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
                let chunk = match step {
                    Step::Finished(index, result) => {
                        tracing::debug!(request_id = %result.request_id, status = result.status.as_str(), "finished");
                        self.emit(|| EngineEvent::Finished { result: result.clone() });
                        if let Some(slot) = cycle.results.get_mut(index) {
                            *slot = Some(result.clone());
                        }
                        StreamChunk { results: vec![result], ..StreamChunk::default() }
                    }
                    Step::Read(Some(Ok(piece))) if cycle.fits(&piece) => cycle.push(&piece),
                    Step::Read(Some(Ok(_))) => {
                        tracing::debug!(max = self.max_turn_bytes, "turn limit: the rest of the reply is not read");
                        limited = true;
                        reading = false;
                        let mut chunk = cycle.cut_off(FinishReason::Length);
                        chunk.absorb(cycle.limit_exceeded());
                        chunk.absorb(cycle.finish());
                        chunk
                    }
                    Step::Read(Some(Err(error))) => {
                        failure = Some(error);
                        reading = false;
                        let mut chunk = cycle.cut_off(FinishReason::Error);
                        chunk.absorb(cycle.finish());
                        chunk
                    }
                    Step::Read(None) => {
                        reading = false;
                        cycle.finish()
                    }
                    Step::Cancelled => {
                        tracing::debug!("cancelled: the rest of the reply is not read");
                        cancelled = true;
                        reading = false;
                        let mut chunk = cycle.cut_off(FinishReason::Error);
                        chunk.absorb(cycle.finish());
                        chunk
                    }
                };
                if !chunk.is_empty() {
                    on_chunk(chunk);
                }
            }
            let finish_reason = if failure.is_some() {
                FinishReason::Error
            } else if cancelled {
                FinishReason::Cancelled
            } else if limited {
                FinishReason::Length
            } else if cycle.results.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            };
            let streamed = cycle.into_streamed(finish_reason);
            on_chunk(StreamChunk { done: true, finish_reason: Some(finish_reason), ..StreamChunk::default() });
            (streamed, failure)
        }
        .instrument(span)
        .await;
        Ok(streamed)
    }
}

/// The result of a fallible streamed cycle.
fn finish<E>(
    outcome: Result<(StreamedCycle, Option<E>), EngineError>,
) -> Result<StreamedCycle, StreamCycleError<E>> {
    match outcome {
        Err(error) => Err(StreamCycleError::Engine(error)),
        Ok((streamed, None)) => Ok(streamed),
        Ok((streamed, Some(error))) => Err(StreamCycleError::Stream { error, partial: Box::new(streamed) }),
    }
}

/// What the select loop of a streamed cycle woke up for.
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
    request: ParsedToolRequest,
    calls: Vec<Result<Invocation, ToolError>>,
) -> impl Future<Output = (usize, ToolExecutionResult)> + 'a {
    let span = tracing::info_span!("execute", request_id = %request.request_id);
    async move { (index, executor.execute_request(PlannedRequest::new(&request, calls), ctx).await) }
        .instrument(span)
}

/// A request waiting for a free slot: its index, the request, and its resolved calls.
type Queued = (usize, ParsedToolRequest, Vec<Result<Invocation, ToolError>>);

/// The reading side of a streamed cycle: the turn so far, the parser, the requests and
/// their results, and the requests waiting for a free slot.
struct CycleState<'e> {
    engine: &'e Engine,
    ctx: &'e ExecutionContext,
    protocol: Arc<dyn ToolCallingProtocol>,
    catalog: Arc<ToolCatalog>,
    /// `None`: the protocol has no incremental parser; the turn is parsed at the end.
    parser: Option<Box<dyn IncrementalParser>>,
    turn: TurnAccumulator,
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
    fn new(engine: &'e Engine, ctx: &'e ExecutionContext, protocol: Arc<dyn ToolCallingProtocol>) -> Self {
        CycleState {
            engine,
            ctx,
            parser: protocol.incremental_parser(),
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

    /// Whether `piece` fits in what is left of the turn limit; counts it if so.
    fn fits(&mut self, piece: &impl TurnPiece) -> bool {
        if !self.budget.take(piece.cost()) {
            return false;
        }
        self.text_len = self.text_len.saturating_add(piece.text_len());
        true
    }

    /// The turn limit was reached: the diagnostic that says so, where the text stopped.
    fn limit_exceeded(&mut self) -> StreamChunk {
        let TurnBudget { held, max } = self.budget;
        let diagnostic = Diagnostic::new(
            DiagnosticKind::LimitExceeded,
            format!(
                "the reply was not read past {held} bytes: the engine holds at most {max} bytes of a turn \
                 (Engine::with_max_turn_bytes)"
            ),
            Span::new(self.text_len, self.text_len),
        );
        self.collector.add(StreamEvent::Diagnostic(diagnostic.clone()));
        self.turn.push(&TurnDelta::Finish(FinishReason::Length));
        StreamChunk { diagnostics: vec![diagnostic], ..StreamChunk::default() }
    }

    /// Takes in the next piece of the turn.
    fn push(&mut self, piece: &impl TurnPiece) -> StreamChunk {
        piece.record(&mut self.turn);
        if let Some(parser) = self.parser.as_mut() {
            piece.feed(parser.as_mut(), &mut self.events);
        }
        let mut chunk = self.take_events();
        if let Some(reasoning) = piece.reasoning() {
            chunk.reasoning.push_str(reasoning);
        }
        if let Some(call) = piece.call_piece() {
            chunk.call_pieces.push(call.clone());
        }
        chunk
    }

    /// The reply will not be read further, before its end (a broken stream, a
    /// cancellation): native calls that started and did not end are marked incomplete,
    /// so they are reported and answered, never run with what arrived of them.
    fn cut_off(&mut self, reason: FinishReason) -> StreamChunk {
        self.cut = true;
        let open = self.turn.open_calls();
        if open.is_empty() {
            return StreamChunk::default();
        }
        let mut cuts = vec![TurnDelta::Finish(reason)];
        for index in open {
            cuts.push(TurnDelta::ToolCallIncomplete { index });
            cuts.push(TurnDelta::ToolCallEnd { index });
        }
        let mut chunk = StreamChunk::default();
        for delta in &cuts {
            chunk.absorb(self.push(delta));
        }
        chunk
    }

    /// The turn has ended (or will not be read further): flushes the parser, or parses
    /// the collected turn when the protocol has no incremental parser.
    fn finish(&mut self) -> StreamChunk {
        match self.parser.as_mut() {
            Some(parser) => parser.finish(&mut self.events),
            None => {
                let turn = self.turn.turn();
                let outcome = self.protocol.parse_turn(turn);
                events_from_outcome(&turn.text(), outcome, &mut self.events);
            }
        }
        let chunk = self.take_events();
        tracing::debug!(requests = self.collector.requests().len(), "reply ended");
        let collector = &self.collector;
        self.engine.emit(|| EngineEvent::Parsed { requests: collector.requests().to_vec() });
        chunk
    }

    /// Handles the parser's new events: collects them, answers fire-and-forget requests
    /// and queues the others; returns them as a chunk.
    fn take_events(&mut self) -> StreamChunk {
        let mut chunk = StreamChunk::default();
        let mut events = std::mem::take(&mut self.events);
        for mut event in events.drain(..) {
            // A request still open when the reading was cut is incomplete, even if its
            // protocol would accept it unterminated at the end of a whole reply.
            if let (true, StreamEvent::RequestCompleted(request)) = (self.cut, &mut event)
                && request.complete
            {
                request.complete = false;
                request.problems.push(self.engine.executor().options().messages.reply_cut.clone());
            }
            match &event {
                StreamEvent::Text { text, .. } => chunk.content.push_str(text),
                StreamEvent::Diagnostic(diagnostic) => chunk.diagnostics.push(diagnostic.clone()),
                StreamEvent::RequestCompleted(request) => {
                    if !self.ids.insert(request.request_id.clone()) {
                        let diagnostic = crate::protocol::duplicate_id_diagnostic(request);
                        chunk.diagnostics.push(diagnostic.clone());
                        self.collector.add(StreamEvent::Diagnostic(diagnostic));
                    }
                    self.accept(request, &mut chunk);
                }
                _ => {}
            }
            self.collector.add(event);
        }
        self.events = events;
        chunk
    }

    /// A request is complete: starts it in the background if it is fire-and-forget,
    /// else queues it.
    fn accept(&mut self, request: &ParsedToolRequest, chunk: &mut StreamChunk) {
        let engine = self.engine;
        let index = self.results.len();
        tracing::debug!(request_id = %request.request_id, tool_name = %request.tool_name, "request completed");
        engine.emit(|| EngineEvent::RequestParsed { request: request.clone() });
        let calls = self.protocol.resolve(request, &self.catalog);
        if request.fire_and_forget && request.complete {
            engine.emit(|| EngineEvent::Started {
                request_id: request.request_id.clone(),
                tool_name: request.tool_name.clone(),
            });
            engine.spawn_background(request.clone(), calls, self.ctx.clone());
            let result = started_in_background(request, &engine.executor().options().messages);
            engine.emit(|| EngineEvent::Finished { result: result.clone() });
            chunk.results.push(result.clone());
            self.results.push(Some(result));
        } else {
            self.results.push(None);
            self.queue.push_back((index, request.clone(), calls));
        }
        chunk.tool_calls.push(request.clone());
    }

    /// The cycle's result, once every call has finished.
    fn into_streamed(self, finish_reason: FinishReason) -> StreamedCycle {
        let prose = self.collector.prose().to_string();
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
                        self.engine.executor().options().messages.stream_ended.clone(),
                    )
                })
            })
            .collect();
        let messages = self.protocol.result_messages(&results);
        let turn = self.turn.finish();
        StreamedCycle {
            cycle: ToolCallCycleResult::new(outcome.requests, results, outcome.diagnostics, messages),
            turn,
            prose,
            finish_reason,
        }
    }
}

/// The events a whole-turn parse amounts to (for a protocol without an incremental
/// parser): the prose around the requests' spans, the requests, the diagnostics.
fn events_from_outcome(text: &str, outcome: ParseOutcome, events: &mut Vec<StreamEvent>) {
    let mut cursor = 0;
    let prose = |from: usize, to: usize, events: &mut Vec<StreamEvent>| {
        if let Some(piece) = text.get(from..to).filter(|p| !p.is_empty()) {
            events.push(StreamEvent::Text { text: piece.to_string(), span: Span::new(from, to) });
        }
    };
    for request in outcome.requests {
        let span = request.span;
        if span.start >= cursor && !span.is_empty() && span.slice(text).is_some() {
            prose(cursor, span.start, events);
            cursor = span.end;
        }
        events.push(StreamEvent::RequestCompleted(request));
    }
    prose(cursor, text.len(), events);
    events.extend(outcome.diagnostics.into_iter().map(StreamEvent::Diagnostic));
}
