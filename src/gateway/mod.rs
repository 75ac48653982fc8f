//! A gateway that gives tool calling to any model behind an OpenAI-compatible server
//! (cargo feature `gateway`).
//!
//! Agents and SDKs speak OpenAI's Chat Completions with `tools`; many models cannot
//! answer it: a llama.cpp or vLLM server started without a tool parser, a fine-tune whose
//! format no server knows, a model that calls tools better in VCP than in JSON. The
//! gateway stands in front of such a server and speaks the tools API for it, with a text
//! protocol in between:
//!
//! - **Going up**, the client's `tools` become the protocol's prompt (joined to the
//!   system message), earlier `assistant` calls the protocol's call text, `tool`
//!   results the protocol's result text (neutralised, as the engine writes them), so
//!   the upstream sees one coherent text conversation. Everything else the client sent
//!   (sampling options, `max_tokens`, `stop`, `user`, …) passes through as it is.
//! - **Coming back**, the upstream's text is read with the protocol as it streams in:
//!   the client gets `tool_calls` (a call is sent as soon as the protocol has read it
//!   whole, so a client can start a tool before the upstream has finished),
//!   `finish_reason: "tool_calls"`, the rest as `content`, reasoning (the upstream's own
//!   `reasoning_content`, or `<think>` in its text) as `reasoning_content`, and the
//!   upstream's `usage`.
//!
//! It serves three fronts, with the same translation behind them; the upstream is
//! always a Chat Completions server:
//!
//! | route | API | calls | results |
//! | --- | --- | --- | --- |
//! | `POST /v1/chat/completions` | OpenAI Chat Completions | `tool_calls` | `tool` messages |
//! | `POST /v1/responses` | OpenAI Responses | `function_call` items | `function_call_output` items |
//! | `POST /v1/messages` | Anthropic Messages | `tool_use` blocks | `tool_result` blocks |
//!
//! plus `GET /v1/models` (the upstream's, passed through) and `GET /health`.
//!
//! **Rules.** A call to a tool the client did not offer, or one the reply cut off, is
//! returned as text, never as a call. With `tool_choice` `required` (or a named
//! function), a reply is held back until its first call; a reply with none is asked
//! again once with a reminder ([`GatewayConfig::retry_required`]), then returned as text
//! with the `x-tool-calling-diagnostic` header saying so. With `parallel_tool_calls:
//! false` only the first call is a call. Protocol `native` sends the tools to the
//! upstream as they are (a server with its own tool parser): the Chat Completions front
//! then passes request and reply through untouched.
//!
//! **Faults.** An upstream that cannot be reached, answers an error or breaks off gives
//! the client an error in its API's shape (with the upstream's status for an error it
//! answered, 502 otherwise, 504 past [`GatewayConfig::timeout`]); in a stream already
//! under way the error is the last event. A client that goes away cancels the upstream
//! request. Requests and replies are bounded ([`GatewayConfig::max_request_bytes`],
//! [`GatewayConfig::max_reply_bytes`]).
//!
//! **Stateless.** Every request carries its whole conversation and the gateway keeps
//! nothing between requests (the format `auto` detects is kept for the one request), so
//! replicas behind any load balancer scale out with no shared state. Each request is a
//! `tracing` span (`gateway_request`: protocol, model, detected dialect, calls) ending
//! with an event giving its total, upstream and added time.
//!
//! Served with TCP_NODELAY, so that each event goes out as soon as it is written (as
//! `tool-calling gateway` serves it):
//!
//! ```no_run
//! use axum::serve::ListenerExt;
//! use tool_calling::gateway::{Gateway, GatewayConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = GatewayConfig::new("http://127.0.0.1:8080/v1").protocol("hermes");
//! let gateway = Gateway::new(config)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:4000").await?.tap_io(|tcp| {
//!     let _ = tcp.set_nodelay(true);
//! });
//! axum::serve(listener, gateway.router()).await?;
//! # Ok(())
//! # }
//! ```

mod chat;
mod error;
mod messages;
mod reply;
mod request;
mod responses;
mod upstream;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::mpsc;

pub use error::GatewayError;

use crate::grammar::Dialect;
use crate::protocol::textfmt::AutoProtocol;
use crate::protocol::{
    BuiltinOptions, BuiltinProtocol, ProtocolError, ProtocolRegistry, ToolCallingProtocol,
};
use crate::providers::{GrammarServer, Provider};
use upstream::Item;

/// The header that says why a reply that had to call a tool holds none.
pub const DIAGNOSTIC_HEADER: &str = "x-tool-calling-diagnostic";

/// How a [`Gateway`] reaches its upstream and reads its replies.
///
/// ```
/// use std::time::Duration;
/// use tool_calling::gateway::GatewayConfig;
/// let config = GatewayConfig::new("http://127.0.0.1:8080/v1/")
///     .protocol("auto")
///     .timeout(Duration::from_secs(60));
/// assert_eq!(config.upstream, "http://127.0.0.1:8080/v1", "the trailing slash is dropped");
/// assert_eq!(config.protocol, "auto");
/// assert!(config.retry_required);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// The upstream's base URL, up to and including `/v1` (`{upstream}/chat/completions`
    /// is posted to).
    pub upstream: String,
    /// The protocol the upstream's model is prompted in and read with: `vcp` (the
    /// default), an open-model format's id (`hermes`, `mistral`, `pythonic`, …), `auto`
    /// (tools offered in the format the request's model name suggests, VCP for a model
    /// it does not know; replies read in whatever format they are written in), or
    /// `native` (the upstream's own tools API).
    pub protocol: String,
    /// The key sent upstream as a bearer token. Without one, the client's own
    /// `Authorization` (or Anthropic's `x-api-key`, as a bearer token) is passed on.
    pub api_key: Option<String>,
    /// The model named upstream, whatever the client asks for (`None`: the client's).
    pub model: Option<String>,
    /// The longest a request may take, upstream included (default 10 minutes).
    pub timeout: Duration,
    /// The largest request body taken (default 16 MiB).
    pub max_request_bytes: usize,
    /// The most of the upstream's reply read (default 64 MiB): past it the reply ends
    /// with an error.
    pub max_reply_bytes: usize,
    /// Whether a reply that called no tool when `tool_choice` required one is asked
    /// again once, with a reminder (default on).
    pub retry_required: bool,
    /// Send the protocol's grammar for the offered tools so that the upstream can only
    /// write valid calls (constrained decoding): to which server, in which dialect.
    pub constrain: Option<Constrain>,
}

/// Where, and in which dialect, the gateway sends the grammar of the offered tools, and
/// the bounds it sets (see [`Constraint`](crate::grammar::Constraint)).
///
/// The grammar follows each request: with `tool_choice` `required` (or a named
/// function, whose grammar offers that function alone) it holds calls only (scope
/// `calls`, or `call` with `parallel_tool_calls: false`); otherwise it is a whole reply
/// (scope `reply`, so that a turn after tool results can answer in text) of at most
/// [`max_calls`](Self::max_calls) calls (one with `parallel_tool_calls: false`).
///
/// ```
/// use tool_calling::gateway::Constrain;
/// use tool_calling::grammar::Dialect;
/// use tool_calling::providers::GrammarServer;
/// let llama = Constrain::new(GrammarServer::LlamaCpp, Dialect::Gbnf).max_text(200);
/// assert_eq!(llama.dialect, Dialect::Gbnf);
/// assert_eq!((llama.max_text, llama.max_calls), (Some(200), 4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Constrain {
    /// The server's request fields for a grammar.
    pub server: GrammarServer,
    /// The grammar's dialect.
    pub dialect: Dialect,
    /// The most characters of a string value whose schema sets no smaller `maxLength`
    /// (`None`, the default: unbounded; see
    /// [`Constraint::max_text`](crate::grammar::Constraint::max_text)).
    pub max_text: Option<u32>,
    /// The most calls in one reply (4 by default).
    pub max_calls: u32,
}

impl Constrain {
    /// Grammars in `dialect`, sent as `server` takes them.
    pub fn new(server: GrammarServer, dialect: Dialect) -> Self {
        let defaults = crate::grammar::Constraint::new(dialect, crate::grammar::Scope::Reply);
        Constrain { server, dialect, max_text: defaults.max_text, max_calls: defaults.max_calls }
    }

    /// Sets [`max_text`](Self::max_text).
    #[must_use]
    pub fn max_text(mut self, characters: u32) -> Self {
        self.max_text = Some(characters);
        self
    }

    /// Sets [`max_calls`](Self::max_calls) (0 is taken as 1).
    #[must_use]
    pub fn max_calls(mut self, calls: u32) -> Self {
        self.max_calls = calls.max(1);
        self
    }
}

impl GatewayConfig {
    /// A gateway in front of `upstream` (a base URL such as `http://127.0.0.1:8080/v1`),
    /// prompting in VCP.
    pub fn new(upstream: impl Into<String>) -> Self {
        let upstream: String = upstream.into();
        GatewayConfig {
            upstream: upstream.trim_end_matches('/').to_string(),
            protocol: "vcp".to_string(),
            api_key: None,
            model: None,
            timeout: Duration::from_secs(600),
            max_request_bytes: 16 << 20,
            max_reply_bytes: crate::providers::DEFAULT_MAX_STREAM_BYTES,
            retry_required: true,
            constrain: None,
        }
    }

    /// Sets [`protocol`](Self::protocol).
    #[must_use]
    pub fn protocol(mut self, id: impl Into<String>) -> Self {
        self.protocol = id.into();
        self
    }

    /// Sets [`api_key`](Self::api_key).
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets [`model`](Self::model).
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets [`timeout`](Self::timeout).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`max_request_bytes`](Self::max_request_bytes).
    #[must_use]
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// Sets [`max_reply_bytes`](Self::max_reply_bytes).
    #[must_use]
    pub fn max_reply_bytes(mut self, bytes: usize) -> Self {
        self.max_reply_bytes = bytes;
        self
    }

    /// Sets [`retry_required`](Self::retry_required).
    #[must_use]
    pub fn retry_required(mut self, retry: bool) -> Self {
        self.retry_required = retry;
        self
    }

    /// Sets [`constrain`](Self::constrain).
    #[must_use]
    pub fn constrain(mut self, constrain: Constrain) -> Self {
        self.constrain = Some(constrain);
        self
    }
}

/// Why a [`Gateway`] could not be made from its configuration.
///
/// ```
/// use tool_calling::gateway::{Gateway, GatewayConfig, GatewaySetupError};
/// let error = Gateway::new(GatewayConfig::new("http://x/v1").protocol("klingon")).unwrap_err();
/// assert!(matches!(error, GatewaySetupError::Protocol(_)));
/// let error = Gateway::new(GatewayConfig::new("ftp://x")).unwrap_err();
/// assert!(error.to_string().contains("http"), "{error}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewaySetupError {
    /// The protocol id names no built-in protocol.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The protocol is a provider's own tools API (`openai`, `anthropic`, …): the
    /// gateway's upstream speaks Chat Completions, whose tools API is `native`.
    #[error(
        "`{0}` is a provider's own tools API: the gateway's upstream speaks Chat Completions, whose tools API is the protocol `native`"
    )]
    ProviderApi(String),
    /// The upstream URL is not an `http://` or `https://` URL.
    #[error("the upstream URL `{0}` does not start with http:// or https://")]
    Upstream(String),
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built: {0}")]
    Http(String),
}

/// How replies are read.
enum Mode {
    /// One text protocol.
    Text(Arc<dyn ToolCallingProtocol>),
    /// `auto`: the prompt in the format the model's name suggests, replies in any.
    Auto,
    /// The upstream's own tools API.
    Native,
}

/// What every request of a gateway shares: the configuration, the protocol, the HTTP
/// client (its connection pool).
pub(crate) struct Shared {
    config: GatewayConfig,
    mode: Mode,
    http: reqwest::Client,
}

impl Shared {
    /// The protocol a request for `model` is read with (`None`: native).
    fn protocol_for(&self, model: &str) -> Option<Arc<dyn ToolCallingProtocol>> {
        match &self.mode {
            // A model whose template opens reasoning: its replies start inside it.
            Mode::Text(protocol)
                if crate::protocol::ModelProfiles::builtin()
                    .lookup(&self.model_for(model))
                    .starts_in_reasoning =>
            {
                let options = BuiltinOptions::default().starts_in_reasoning(true);
                ProtocolRegistry::builtin(protocol.id(), &options)
                    .map(BuiltinProtocol::into_protocol)
                    .ok()
                    .or_else(|| Some(Arc::clone(protocol)))
            }
            Mode::Text(protocol) => Some(Arc::clone(protocol)),
            Mode::Auto => Some(Arc::new(AutoProtocol::new().for_model(self.model_for(model).as_str()))),
            Mode::Native => None,
        }
    }

    fn protocol_id(&self) -> &str {
        &self.config.protocol
    }

    /// The model named upstream.
    fn model_for(&self, requested: &str) -> String {
        self.config.model.clone().unwrap_or_else(|| requested.to_string())
    }
}

/// The gateway: build it from a [`GatewayConfig`], then serve its [`router`](Self::router)
/// (or mount it in an application of your own). Cheap to clone; clones share the
/// connection pool.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("upstream", &self.shared.config.upstream)
            .field("protocol", &self.shared.config.protocol)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway of `config`: checks the protocol id and the upstream URL.
    pub fn new(config: GatewayConfig) -> Result<Self, GatewaySetupError> {
        if !(config.upstream.starts_with("http://") || config.upstream.starts_with("https://")) {
            return Err(GatewaySetupError::Upstream(config.upstream));
        }
        let mode = match config.protocol.as_str() {
            "native" => Mode::Native,
            "auto" => Mode::Auto,
            id => Mode::Text(ProtocolRegistry::builtin(id, &BuiltinOptions::default())?.into_protocol()),
        };
        if let Mode::Text(protocol) = &mode
            && Provider::from_protocol_id(protocol.id()).is_some()
        {
            return Err(GatewaySetupError::ProviderApi(protocol.id().to_string()));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| GatewaySetupError::Http(crate::http::error_chain(&e)))?;
        Ok(Gateway { shared: Arc::new(Shared { config, mode, http }) })
    }

    /// The configuration.
    pub fn config(&self) -> &GatewayConfig {
        &self.shared.config
    }

    /// The routes: `POST /v1/chat/completions`, `POST /v1/responses`,
    /// `POST /v1/messages`, `GET /v1/models`, `GET /health`.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/v1/chat/completions", post(chat::handle))
            .route("/v1/responses", post(serve::<responses::Frames>))
            .route("/v1/messages", post(serve::<messages::Frames>))
            .route("/v1/models", get(models))
            .route("/health", get(health))
            .layer(DefaultBodyLimit::max(self.shared.config.max_request_bytes))
            .with_state(Arc::clone(&self.shared))
    }
}

async fn health() -> Response {
    axum::Json(json!({"status": "ok"})).into_response()
}

/// `GET /v1/models`: the upstream's answer, passed through.
async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let mut request = shared.http.get(format!("{}/models", shared.config.upstream));
    if let Some(auth) = upstream_auth(&shared, &headers) {
        request = request.header(reqwest::header::AUTHORIZATION, auth);
    }
    let result = tokio::time::timeout(shared.config.timeout, async {
        let response = request
            .send()
            .await
            .map_err(|e| GatewayError::Unreachable { reason: crate::http::error_chain(&e) })?;
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| GatewayError::Stream { reason: crate::http::error_chain(&e) })?;
        Ok::<_, GatewayError>((status, bytes))
    })
    .await
    .unwrap_or_else(|_| Err(GatewayError::Timeout { seconds: shared.config.timeout.as_secs_f64() }));
    match result {
        Ok((status, bytes)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
        }
        Err(error) => openai_error(&error),
    }
}

/// The `Authorization` value sent upstream: the gateway's key, else the client's
/// `Authorization`, else its `x-api-key` as a bearer token.
fn upstream_auth(shared: &Shared, headers: &HeaderMap) -> Option<String> {
    if let Some(key) = &shared.config.api_key {
        return Some(format!("Bearer {key}"));
    }
    let text = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    text(header::AUTHORIZATION.as_str())
        .map(str::to_string)
        .or_else(|| text("x-api-key").map(|key| format!("Bearer {key}")))
}

/// An error as OpenAI's APIs answer it.
fn openai_error(error: &GatewayError) -> Response {
    (error.http_status(), axum::Json(error.openai())).into_response()
}

/// The request's body, or why it was not read: longer than `limit` (the router's body
/// limit), or broken off.
pub(crate) type RequestBody = Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>;

fn request_bytes(body: RequestBody, limit: usize) -> Result<axum::body::Bytes, GatewayError> {
    body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => GatewayError::TooLarge { limit },
        _ => GatewayError::bad(format!("the body could not be read: {}", rejection.body_text()), None),
    })
}

/// Reads a JSON request body, or says where it is malformed.
fn json_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, GatewayError> {
    let mut reader = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut reader).map_err(|error| {
        let path = error.path().to_string();
        let param = (path != ".").then_some(path);
        GatewayError::bad(format!("the body is not a valid request: {}", error.inner()), param)
    })
}

/// What differs between the fronts: how a request is read, and how an error, a streamed
/// event and a whole reply are written. [`serve`] does the rest, the same for each.
pub(crate) trait Front: Sized + Send + 'static {
    /// Reads a request body: the turn, and the writer of its reply.
    fn read(body: &[u8]) -> Result<(request::TurnRequest, Self), GatewayError>;

    /// An error as this API answers it.
    fn error(error: &GatewayError) -> Response;

    /// What `item` becomes in the stream, and whether it ends the stream.
    fn frame(&mut self, item: Item) -> (String, bool);

    /// The body of the whole reply.
    fn body(&self, reply: Reply, end: &upstream::End) -> Value;
}

/// A reply gathered whole, for a response body.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    pub text: String,
    pub reasoning: String,
    pub calls: Vec<reply::Call>,
}

impl Reply {
    pub(crate) fn add(&mut self, piece: reply::Piece) {
        match piece {
            reply::Piece::Text(text) => self.text.push_str(&text),
            reply::Piece::Reasoning(text) => self.reasoning.push_str(&text),
            reply::Piece::Call(call) => self.calls.push(call),
        }
    }
}

/// One request through a front: read, run upstream, then the reply streamed or whole.
pub(crate) async fn serve<F: Front>(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: RequestBody,
) -> Response {
    let read = request_bytes(body, shared.config.max_request_bytes).and_then(|body| F::read(&body));
    let (turn, mut front) = match read {
        Ok(read) => read,
        Err(error) => return F::error(&error),
    };
    let stream = turn.stream;
    let mut rx = upstream::start(Arc::clone(&shared), turn, upstream_auth(&shared, &headers));
    let diagnostic = match started(&mut rx).await {
        Ok(diagnostic) => diagnostic,
        Err(error) => return F::error(&error),
    };
    if stream {
        return event_stream(rx, diagnostic, move |item| front.frame(item));
    }
    let mut reply = Reply::default();
    while let Some(item) = rx.recv().await {
        match item {
            Item::Piece(piece) => reply.add(piece),
            Item::End(end) => {
                let body = front.body(reply, &end);
                return with_diagnostic(axum::Json(body).into_response(), diagnostic);
            }
            Item::Failed(error) => return F::error(&error),
            Item::Ready { .. } => {}
        }
    }
    F::error(&GatewayError::Stream { reason: "the run ended without a reply".into() })
}

/// Waits for the run to start replying: `Ok(diagnostic)`, or the error it failed with
/// before anything was sent.
async fn started(rx: &mut mpsc::Receiver<Item>) -> Result<Option<String>, GatewayError> {
    match rx.recv().await {
        Some(Item::Ready { diagnostic }) => Ok(diagnostic),
        Some(Item::Failed(error)) => Err(error),
        Some(other) => Err(GatewayError::Stream { reason: format!("the run began with {other:?}") }),
        None => Err(GatewayError::Stream { reason: "the run ended without a reply".into() }),
    }
}

/// A response of server-sent events made from `rx` by `frames` (which turns each item
/// into the front's event text), with the diagnostic header if any.
fn event_stream<F>(rx: mpsc::Receiver<Item>, diagnostic: Option<String>, frames: F) -> Response
where
    F: FnMut(Item) -> (String, bool) + Send + 'static,
{
    let stream = futures::stream::unfold((rx, frames, false), |(mut rx, mut frames, ended)| async move {
        if ended {
            return None;
        }
        let item = rx.recv().await?;
        let (text, last) = frames(item);
        Some((Ok::<_, std::convert::Infallible>(text), (rx, frames, last)))
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    with_diagnostic(response, diagnostic)
}

/// Adds the diagnostic header.
fn with_diagnostic(mut response: Response, diagnostic: Option<String>) -> Response {
    if let Some(value) = diagnostic.and_then(|d| HeaderValue::from_str(&d).ok()) {
        response.headers_mut().insert(DIAGNOSTIC_HEADER, value);
    }
    response
}

/// One server-sent event: `data: JSON`, with an `event:` line when named.
fn sse(event: Option<&str>, data: &impl serde::Serialize) -> String {
    // The payloads are strings, numbers and JSON values under string keys: writing them
    // cannot fail.
    let data = serde_json::to_string(data).unwrap_or_default();
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// Seconds since the epoch, for `created` fields.
fn now_seconds() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
