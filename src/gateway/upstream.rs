//! One request's run against the upstream: the body it is sent, the stream read back
//! with the protocol, the retry when a call was required, the time limit, and the end
//! of it all when the client goes away.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tracing::Instrument;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::reply::{Call, Finish, Piece, ReplyReader};
use super::request::{Offer, TurnRequest};
use super::{GatewayError, Shared};
use crate::model::{FinishReason, Message, TurnDelta};
use crate::protocol::ToolCallingProtocol;
use crate::providers::openai_chat::{
    self, ChatFunctionChoice, ChatRequest, ChatTool, ChatToolFunction, FunctionType, StreamOptions,
    ToolChoiceParam,
};
use crate::providers::{Provider, ResponseStream, WireError};

/// The tool fields of a Chat Completions request.
type ToolFields<'a> = openai_chat::ToolFields<'a, ChatFunctionChoice<'a>>;

/// What a run tells the front that answers the client, in order: `Ready` once (or
/// `Failed` instead), then pieces, then `End` or `Failed`.
#[derive(Debug)]
pub(crate) enum Item {
    /// The reply is under way: the front may send its headers. `diagnostic` says why a
    /// reply that had to call a tool holds none.
    Ready {
        diagnostic: Option<String>,
    },
    Piece(Piece),
    End(End),
    Failed(GatewayError),
}

/// How the reply ended.
#[derive(Debug, Clone)]
pub(crate) struct End {
    pub finish: Finish,
    /// The upstream's usage object, as it gave it.
    pub usage: Option<Value>,
}

/// Starts the run of `request`; its items arrive on the receiver. Dropping the receiver
/// (the client went away) cancels the run and the upstream request with it.
pub(crate) fn start(shared: Arc<Shared>, request: TurnRequest, auth: Option<String>) -> mpsc::Receiver<Item> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let started = Instant::now();
        let span = tracing::info_span!(
            "gateway_request",
            protocol = %shared.protocol_id(),
            model = %request.model,
            stream = request.stream,
            dialect = tracing::field::Empty,
            calls = tracing::field::Empty,
        );
        let limit = shared.config.timeout;
        let run = Run {
            shared: &shared,
            request: &request,
            auth: auth.as_deref(),
            tx: &tx,
            upstream_micros: AtomicU64::new(0),
        };
        let outcome = tokio::select! {
            () = tx.closed() => {
                tracing::debug!(parent: &span, "the client went away: the upstream request is dropped");
                return;
            }
            outcome = tokio::time::timeout(limit, run.go(&span)).instrument(span.clone()) => outcome,
        };
        let error = match outcome {
            Err(_) => Some(GatewayError::Timeout { seconds: limit.as_secs_f64() }),
            Ok(Err(error)) => Some(error),
            Ok(Ok(())) => None,
        };
        let upstream = std::time::Duration::from_micros(run.upstream_micros.load(Ordering::Relaxed));
        tracing::info!(
            parent: &span,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            upstream_ms = upstream.as_secs_f64() * 1e3,
            added_ms = started.elapsed().saturating_sub(upstream).as_secs_f64() * 1e3,
            error = error.as_ref().map(tracing::field::display),
            "gateway request done"
        );
        if let Some(error) = error {
            let _ = tx.send(Item::Failed(error)).await;
        }
    });
    rx
}

/// The request's run.
struct Run<'a> {
    shared: &'a Shared,
    request: &'a TurnRequest,
    auth: Option<&'a str>,
    tx: &'a mpsc::Sender<Item>,
    /// Time spent waiting on the upstream, in microseconds.
    upstream_micros: AtomicU64,
}

/// The client went away: nothing more is sent.
struct Gone;

impl Run<'_> {
    async fn go(&self, span: &tracing::Span) -> Result<(), GatewayError> {
        let offer = self.request.offer()?;
        let protocol = self.shared.protocol_for(&self.request.model);
        let protocol = protocol.as_deref();
        let mut retry: Option<(String, String)> = None;
        loop {
            let body = match protocol {
                Some(protocol) => {
                    let reminder =
                        retry.as_ref().map(|(reply, reminder)| (reply.as_str(), reminder.as_str()));
                    let messages = self.request.text_conversation(protocol, &offer, reminder)?;
                    self.body(Some(protocol), &messages, ToolFields::default())
                }
                None => {
                    let tools = native_tools(&offer);
                    self.body(None, &self.request.messages, tools)
                }
            };
            let attempt = match self.attempt(protocol, &offer, body, retry.is_none()).await {
                Ok(attempt) => attempt,
                Err(Ok(error)) => return Err(error),
                Err(Err(Gone)) => return Ok(()),
            };
            span.record("calls", attempt.calls);
            if let Some(dialect) = &attempt.dialect {
                span.record("dialect", dialect.as_str());
            }
            match attempt.held {
                Some(reply) if retry.is_none() && self.shared.config.retry_required => {
                    tracing::debug!(parent: span, "no call where one was required: one retry with a reminder");
                    retry = Some((reply.text, self.reminder(&attempt.withheld)));
                }
                Some(reply) => {
                    let why = match attempt.withheld.first() {
                        Some(first) => format!(" (the last attempt's call was withheld: {first})"),
                        None => String::new(),
                    };
                    let diagnostic = format!(
                        "the model wrote no valid tool call, though `tool_choice` asked for one{}{why}",
                        if retry.is_some() { ", even when reminded" } else { "" }
                    );
                    self.send(Item::Ready { diagnostic: Some(diagnostic) }).await.ok();
                    for piece in reply.pieces {
                        self.send(Item::Piece(piece)).await.ok();
                    }
                    return self.send(Item::End(attempt.end)).await.or(Ok(()));
                }
                None => return self.send(Item::End(attempt.end)).await.or(Ok(())),
            }
        }
    }

    /// The reminder after a reply that called nothing: what was wrong with the calls it
    /// did write (as the engine tells a model whose call it could not run), then what to
    /// do.
    fn reminder(&self, withheld: &[String]) -> String {
        let mut text =
            if withheld.is_empty() { "Your reply called no tool.".to_string() } else { withheld.join(" ") };
        match &self.request.tool_choice {
            crate::model::ToolChoice::Tool(name) => {
                text.push_str(&format!(" Answer again with a call to `{name}`, written as described."));
            }
            _ => text.push_str(" Answer again with at least one tool call, written as described."),
        }
        text
    }

    fn waited(&self, since: Instant) {
        let micros = u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.upstream_micros.fetch_add(micros, Ordering::Relaxed);
    }

    async fn send(&self, item: Item) -> Result<(), Gone> {
        self.tx.send(item).await.map_err(|_| Gone)
    }

    /// The upstream body: the client's other fields as they came, the conversation, a
    /// stream with usage; with a native protocol, the tools too.
    fn body(
        &self,
        protocol: Option<&dyn ToolCallingProtocol>,
        messages: &[Message],
        tools: ToolFields<'_>,
    ) -> Value {
        let mut extra = self.request.options.clone();
        if let Some(fields) = protocol.and_then(|p| self.grammar_fields(p)) {
            extra.extend(fields);
        }
        let body = ChatRequest {
            model: Cow::Owned(self.shared.model_for(&self.request.model)),
            messages: openai_chat::messages(messages),
            tools,
            stream: Some(true),
            stream_options: Some(StreamOptions { include_usage: true }),
            extra,
            ..ChatRequest::default()
        };
        crate::providers::to_value(&body)
    }

    /// The fields that send the protocol's grammar for the offered tools, when the
    /// gateway constrains decoding and the protocol writes one (else none: the request
    /// goes unconstrained, noted in the log).
    fn grammar_fields(&self, protocol: &dyn ToolCallingProtocol) -> Option<Map<String, Value>> {
        let constrain = self.shared.config.constrain?;
        let offer = self.request.offer().ok()?;
        if offer.definitions.is_empty() {
            return None;
        }
        let one = self.request.parallel_tool_calls == Some(false);
        let scope = match (offer.required, one) {
            (true, true) => crate::grammar::Scope::Call,
            (true, false) => crate::grammar::Scope::Calls,
            (false, _) => crate::grammar::Scope::Reply,
        };
        let mut constraint = crate::grammar::Constraint::new(constrain.dialect, scope).max_calls(if one {
            1
        } else {
            constrain.max_calls
        });
        constraint.max_text = constrain.max_text;
        let fields = protocol
            .grammar(&offer.definitions, &constraint)
            .inspect(|grammar| {
                for note in grammar.notes() {
                    tracing::debug!(%note, "the grammar leaves a keyword to validation");
                }
            })
            .map_err(|e| e.to_string())
            .and_then(|grammar| constrain.server.request_fields(&grammar));
        match fields {
            Ok(fields) => Some(fields),
            Err(reason) => {
                tracing::warn!(%reason, "the request goes upstream without a grammar");
                None
            }
        }
    }

    /// One request upstream, read to its end. `Err(Ok)` is a failure, `Err(Err)` the
    /// client's departure.
    async fn attempt(
        &self,
        protocol: Option<&dyn ToolCallingProtocol>,
        offer: &Offer,
        body: Value,
        first: bool,
    ) -> Result<Attempt, Result<GatewayError, Gone>> {
        let waited = Instant::now();
        let mut response = self.post(&body).await.map_err(Ok)?;
        self.waited(waited);
        let parallel = self.request.parallel_tool_calls != Some(false);
        let mut reader = protocol.map(|p| ReplyReader::new(p, parallel));
        let mut native = NativeCalls::default();
        let mut stream =
            ResponseStream::new(&Provider::OpenAiChat).max_bytes(self.shared.config.max_reply_bytes);
        // A reply that must call a tool is held back until it does.
        let mut ready = !offer.required;
        if ready && first {
            self.send(Item::Ready { diagnostic: None }).await.map_err(Err)?;
        }
        let mut held = Held::default();
        let mut finish = None;
        let mut deltas = Vec::new();
        let mut pieces = Vec::new();
        let mut done = false;
        while !done {
            let waited = Instant::now();
            let chunk = response.chunk().await;
            self.waited(waited);
            match chunk {
                Ok(Some(bytes)) => stream.push(&bytes, &mut deltas).map_err(|e| Ok(broken(&e)))?,
                Ok(None) => {
                    let end = stream.finish(&mut deltas);
                    // Half an event after the upstream's finish lost nothing of the reply.
                    if let Err(error) = end
                        && !deltas
                            .iter()
                            .any(|d| matches!(d, TurnDelta::Finish(r) if *r != FinishReason::Error))
                    {
                        return Err(Ok(broken(&error)));
                    }
                    done = true;
                }
                Err(error) => {
                    let reason = format!("reading it: {}", crate::http::error_chain(&error));
                    return Err(Ok(GatewayError::Stream { reason }));
                }
            }
            for delta in deltas.drain(..) {
                match delta {
                    TurnDelta::Text(text) => match &mut reader {
                        Some(reader) => reader.push(&text, offer, &mut pieces),
                        None => pieces.push(Piece::Text(text)),
                    },
                    TurnDelta::Reasoning(text) => pieces.push(Piece::Reasoning(text)),
                    TurnDelta::Finish(FinishReason::Error) => {
                        let reason = "the upstream's stream ended before the reply did".to_string();
                        return Err(Ok(GatewayError::Stream { reason }));
                    }
                    TurnDelta::Finish(reason) => finish = Some(reason),
                    other if reader.is_none() => native.delta(other, offer, &mut pieces),
                    _ => {}
                }
            }
            if done && let Some(reader) = &mut reader {
                reader.finish(offer, &mut pieces);
            }
            for piece in pieces.drain(..) {
                held.text_of(&piece);
                if !ready && matches!(piece, Piece::Call(_)) {
                    ready = true;
                    self.send(Item::Ready { diagnostic: None }).await.map_err(Err)?;
                    for earlier in held.pieces.drain(..) {
                        self.send(Item::Piece(earlier)).await.map_err(Err)?;
                    }
                }
                if ready {
                    self.send(Item::Piece(piece)).await.map_err(Err)?;
                } else {
                    held.pieces.push(piece);
                }
            }
        }
        let calls = reader.as_ref().map_or(native.calls, ReplyReader::calls);
        let end = End { finish: Finish::of(calls, finish), usage: stream.usage().cloned() };
        let dialect = reader.as_ref().and_then(|r| r.dialect().map(str::to_string));
        let withheld = reader.as_ref().map(|r| r.withheld().to_vec()).unwrap_or_default();
        Ok(Attempt { held: (!ready).then_some(held), end, calls, dialect, withheld })
    }

    /// Posts `body`; the response once its status says it streams.
    async fn post(&self, body: &Value) -> Result<reqwest::Response, GatewayError> {
        let config = &self.shared.config;
        let mut request = self
            .shared
            .http
            .post(format!("{}/chat/completions", config.upstream))
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        match (&config.api_key, self.auth) {
            (Some(key), _) => request = request.bearer_auth(key),
            (None, Some(auth)) => request = request.header(reqwest::header::AUTHORIZATION, auth),
            (None, None) => {}
        }
        let response = request.send().await.map_err(|error| {
            let reason = crate::http::error_chain(&error);
            if error.is_connect() {
                GatewayError::Unreachable { reason }
            } else {
                // Connected, but no answer came: the upstream broke off.
                GatewayError::Stream { reason: format!("no answer came: {reason}") }
            }
        })?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(status_error(response).await)
    }
}

/// The error an upstream's error status stands for (its body read up to 64 KiB).
pub(crate) async fn status_error(mut response: reqwest::Response) -> GatewayError {
    let status = response.status().as_u16();
    let mut text = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        text.extend_from_slice(&chunk);
        if text.len() > 64 << 10 {
            break;
        }
    }
    let text = String::from_utf8_lossy(&text);
    let parsed: Option<Value> = serde_json::from_str(&text).ok();
    let (_, message) = crate::providers::error_details(&text, parsed.as_ref());
    GatewayError::Upstream { status, message }
}

fn broken(error: &WireError) -> GatewayError {
    GatewayError::Stream { reason: error.to_string() }
}

/// One attempt's outcome.
struct Attempt {
    /// The reply, when it had to call a tool and did not: nothing of it was sent.
    held: Option<Held>,
    end: End,
    calls: usize,
    dialect: Option<String>,
    /// Why each call the reply wrote was withheld (cut off, or invalid arguments).
    withheld: Vec<String>,
}

/// A reply held back, and its text (for the retry's history).
#[derive(Default)]
struct Held {
    pieces: Vec<Piece>,
    text: String,
}

impl Held {
    fn text_of(&mut self, piece: &Piece) {
        if let Piece::Text(text) = piece {
            self.text.push_str(text);
        }
    }
}

/// The offered tools as Chat Completions' own tool fields (the native protocol).
fn native_tools(offer: &Offer) -> ToolFields<'_> {
    if offer.definitions.is_empty() {
        return ToolFields::default();
    }
    let tools: Vec<ChatTool<'_>> = offer
        .definitions
        .iter()
        .flat_map(|tool| {
            tool.methods.iter().map(|m| ChatTool {
                kind: FunctionType::Function,
                function: ChatToolFunction {
                    name: Cow::Owned(m.full_name(&tool.tool_id)),
                    description: Some(Cow::Borrowed(&m.description)),
                    parameters: Some(Cow::Borrowed(&m.parameters)),
                },
            })
        })
        .collect();
    let choice = if offer.required { "required" } else { "auto" };
    ToolFields {
        tools: Some(Cow::Owned(crate::providers::to_value(&tools))),
        tool_choice: Some(ToolChoiceParam::Mode(Cow::Borrowed(choice))),
        parallel_tool_calls: None,
    }
}

/// Calls the upstream made itself (the native protocol): whole once each has ended.
#[derive(Default)]
struct NativeCalls {
    open: std::collections::BTreeMap<usize, (String, String, String, bool)>,
    calls: usize,
}

impl NativeCalls {
    fn delta(&mut self, delta: TurnDelta, offer: &Offer, out: &mut Vec<Piece>) {
        match delta {
            TurnDelta::ToolCallStart { index, id, name } => {
                let entry = self.open.entry(index).or_default();
                if entry.0.is_empty() {
                    entry.0 = id;
                }
                if entry.1.is_empty() {
                    entry.1 = name;
                }
            }
            TurnDelta::ToolCallArguments { index, fragment } => {
                self.open.entry(index).or_default().2.push_str(&fragment)
            }
            TurnDelta::ToolCallIncomplete { index } => self.open.entry(index).or_default().3 = true,
            TurnDelta::ToolCallEnd { index } => {
                let Some((id, name, arguments, incomplete)) = self.open.remove(&index) else { return };
                if incomplete || !offer.callable.contains(&name) {
                    tracing::debug!(%name, incomplete, "an upstream call that is not handed on");
                    return;
                }
                let id = if id.is_empty() { super::reply::call_id() } else { id };
                let arguments = if arguments.trim().is_empty() { "{}".to_string() } else { arguments };
                out.push(Piece::Call(Call { index: self.calls, id, name, arguments }));
                self.calls += 1;
            }
            _ => {}
        }
    }
}
