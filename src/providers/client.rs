//! HTTP model clients (cargo feature `http`): [`ChatModel`]s for OpenAI-compatible Chat
//! Completions servers, the OpenAI Responses API, Anthropic Messages and Gemini.
//!
//! A client is thin: it posts the body its provider's wire format writes
//! ([`WireFormat::request_body`]) and hands the answer back to it, whole
//! ([`WireFormat::parse_response`]) or as server-sent events read as they arrive
//! ([`ResponseStream`]). Use the protocol the client names in the engine
//! ([`HttpChatModel::protocol`]) so the tools are offered, and the results returned, in
//! the shape the provider expects.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tool_calling::engine::Engine;
//! use tool_calling::exec::ExecutionContext;
//! use tool_calling::providers::{HttpChatModel, Provider};
//! use tool_calling::model::{Conversation, Message};
//! use tool_calling::tools::ToolRegistry;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // The key comes from ANTHROPIC_API_KEY.
//! let claude = HttpChatModel::builder(Provider::Anthropic).model("claude-sonnet-4-5").build()?;
//! let engine = Engine::new(Arc::new(ToolRegistry::from_inventory()?)).with_protocol(claude.protocol());
//! let mut conversation = Conversation::new();
//! conversation.push(Message::user("What is 2 + 40?"));
//! let outcome = engine.run_conversation_streamed(&claude, &mut conversation, &ExecutionContext::default()).await?;
//! println!("{}", outcome.final_text());
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::Value;

use super::retry::{self, HttpRetry};
use super::{DEFAULT_MAX_STREAM_BYTES, GrammarServer, Provider, ResponseStream, WireError, WireFormat};
use crate::model::{
    AssistantTurn, ChatModel, ChatModelError, ModelRequest, RequestNote, RequestOptions, TurnDelta,
};
use crate::protocol::ToolCallingProtocol;
use crate::protocol::native::NativeOptions;
use crate::protocol::{BuiltinOptions, BuiltinProtocol, ProtocolRegistry};
use crate::protocol::{FallbackProtocol, ModelCapabilities, ModelProfiles};

/// A chat model behind an HTTP API: one of the [`Provider`]s, at a base URL, with a key
/// and a model name. Cheap to clone (the connection pool is shared), `Send + Sync`.
///
/// Build one with [`HttpChatModel::builder`]. [`complete`](ChatModel::complete) posts a
/// request and reads the whole answer; [`stream`](ChatModel::stream) asks for
/// server-sent events and yields each [`TurnDelta`] as soon as its bytes arrive, so an
/// engine can start a tool while the model is still writing.
///
/// Failures are typed ([`ChatModelError`]): an error status with the provider's message
/// and requested wait, a transport failure, a timeout, a provider error inside a stream,
/// or a body that cannot be read. Retryable refusals (429, 5xx, dropped connections) are
/// retried before anything was received, as the [`HttpRetry`] says. A stream the
/// server ends cleanly but early is not an error: its turn ends with
/// [`FinishReason::Error`](crate::model::FinishReason::Error) and its unfinished calls
/// are incomplete (see [`ResponseStream::finish`]); one that ended inside an event is
/// also logged as a warning.
///
/// ```
/// use tool_calling::providers::{HttpChatModel, Provider};
/// let claude = HttpChatModel::builder(Provider::Anthropic)
///     .env(|_| None)
///     .api_key("k")
///     .model("claude-sonnet-4-5")
///     .build()
///     .unwrap();
/// assert_eq!(claude.base_url(), "https://api.anthropic.com");
/// assert_eq!(claude.protocol().id(), "anthropic", "Claude has native tools");
/// let qwen = HttpChatModel::builder(Provider::OpenAiChat)
///     .base_url("http://127.0.0.1:8080/v1")
///     .model("qwen3-8b")
///     .build()
///     .unwrap();
/// assert!(!qwen.capabilities().native_tools);
/// assert_eq!(qwen.protocol().id(), "hermes", "tools are offered in its text format");
/// // A template that opens reasoning: the reply starts inside it.
/// let ernie = HttpChatModel::builder(Provider::OpenAiChat)
///     .base_url("http://127.0.0.1:8080/v1")
///     .model("baidu/ERNIE-4.5-21B-A3B-Thinking")
///     .build()
///     .unwrap();
/// let reply = tool_calling::model::AssistantTurn::from_text("Plan.</think>Done.");
/// assert_eq!(ernie.protocol().parse_turn(&reply).normal_text, "Done.");
/// ```
#[derive(Clone)]
pub struct HttpChatModel {
    inner: Arc<Inner>,
    /// Options of this view's calls (under each request's own).
    options: RequestOptions,
}

struct Inner {
    provider: Provider,
    base_url: String,
    api_key: Option<String>,
    model: String,
    headers: Vec<(String, String)>,
    request_timeout: Duration,
    idle_timeout: Duration,
    max_response_bytes: usize,
    retry: HttpRetry,
    capabilities: ModelCapabilities,
    /// Whether the capabilities are known (the model table has the model, or they were
    /// given), not a guess.
    known: bool,
    /// Where a request's grammar goes (OpenAI-compatible servers only).
    grammar_server: Option<GrammarServer>,
    /// The provider's protocol.
    native: Arc<dyn ToolCallingProtocol>,
    /// The protocol the engine should speak: `native`, or the fallback text protocol.
    protocol: Arc<dyn ToolCallingProtocol>,
    format: Arc<dyn WireFormat>,
    http: reqwest::Client,
}

impl fmt::Debug for HttpChatModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        f.debug_struct("HttpChatModel")
            .field("provider", &inner.provider)
            .field("base_url", &inner.base_url)
            .field("model", &inner.model)
            .field("api_key", &inner.api_key.as_ref().map(|_| "<redacted>"))
            .field("request_timeout", &inner.request_timeout)
            .field("idle_timeout", &inner.idle_timeout)
            .field("retry", &inner.retry)
            .field("capabilities", &inner.capabilities)
            .field("protocol", &inner.protocol.id())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The text protocol a model the table does not know is spoken to in behind a grammar
/// server (see [`HttpChatModel::protocol_choice`]): Hermes, the format small open models
/// wrote right most often in the [grammar chapter](crate::guide::grammar)'s measurements (VCP's markers and
/// field syntax are far from what they were trained on).
const UNKNOWN_MODEL_FALLBACK: &str = "hermes";

/// Reads an environment variable; the builder's source of defaults.
type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Configures an [`HttpChatModel`]. Values not given are read from the provider's
/// environment variables (see [`Provider`]) when [`build`](Self::build) runs.
///
/// ```
/// use std::time::Duration;
/// use tool_calling::providers::{HttpChatModel, Provider, HttpRetry};
///
/// // A llama.cpp or vLLM server on this machine: no key needed.
/// let local = HttpChatModel::builder(Provider::OpenAiChat)
///     .base_url("http://127.0.0.1:8080/v1")
///     .model("qwen3-8b")
///     .request_timeout(Duration::from_secs(300))
///     .retry(HttpRetry::none())
///     .build()
///     .unwrap();
/// assert_eq!(local.model(), "qwen3-8b");
///
/// // The hosted API without a key is refused before any request is made.
/// let err = HttpChatModel::builder(Provider::OpenAiChat)
///     .env(|_| None)
///     .model("gpt-5")
///     .build()
///     .unwrap_err();
/// assert!(err.to_string().contains("OPENAI_API_KEY"));
/// ```
#[must_use]
pub struct HttpChatModelBuilder {
    provider: Provider,
    base_url: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    headers: Vec<(String, String)>,
    options: NativeOptions,
    connect_timeout: Duration,
    request_timeout: Duration,
    idle_timeout: Duration,
    max_response_bytes: usize,
    retry: HttpRetry,
    http: Option<reqwest::Client>,
    env: EnvLookup,
    profiles: Option<ModelProfiles>,
    capabilities: Option<ModelCapabilities>,
    grammar_server: Option<GrammarServer>,
}

impl fmt::Debug for HttpChatModelBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpChatModelBuilder")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl HttpChatModel {
    /// A builder for `provider`'s API.
    pub fn builder(provider: Provider) -> HttpChatModelBuilder {
        HttpChatModelBuilder {
            provider,
            base_url: None,
            api_key: None,
            model: None,
            headers: Vec::new(),
            options: NativeOptions::default(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(120),
            max_response_bytes: DEFAULT_MAX_STREAM_BYTES,
            retry: HttpRetry::default(),
            http: None,
            env: Arc::new(|name| std::env::var(name).ok().filter(|value| !value.is_empty())),
            profiles: None,
            capabilities: None,
            grammar_server: None,
        }
    }

    /// The provider this client speaks to.
    pub fn provider(&self) -> Provider {
        self.inner.provider
    }

    /// The model requests name.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// The protocol to speak to this model: give it to the engine. The provider's native
    /// protocol when the model has native tools ([`ModelCapabilities::native_tools`]),
    /// else its fallback text protocol (VCP, or the open-model format it was trained on),
    /// with the same tools; [`protocol_choice`](Self::protocol_choice) says which and why.
    pub fn protocol(&self) -> Arc<dyn ToolCallingProtocol> {
        self.inner.protocol.clone()
    }

    /// The provider's native protocol, whatever the model's capabilities say.
    pub fn native_protocol(&self) -> Arc<dyn ToolCallingProtocol> {
        self.inner.native.clone()
    }

    /// Which protocol [`protocol`](Self::protocol) is, and why.
    ///
    /// A model the built-in table does not know is taken to have native tools, unless
    /// the client sends grammars ([`HttpChatModelBuilder::grammar_server`]): a grammar
    /// server (llama.cpp, vLLM, SGLang) hosts open models that are then spoken to in a
    /// text protocol, Hermes, the one small models wrote best in the project's
    /// measurements ([grammar chapter](crate::guide::grammar#a-real-model)). Either is a guess, and the text says so; a profile of the
    /// model ([`ModelProfiles::with_config_file`](crate::protocol::ModelProfiles::with_config_file),
    /// [`HttpChatModelBuilder::capabilities`]) decides instead.
    ///
    /// ```
    /// use tool_calling::providers::{GrammarServer, HttpChatModel, Provider};
    /// let local = HttpChatModel::builder(Provider::OpenAiChat)
    ///     .base_url("http://127.0.0.1:8080/v1")
    ///     .model("smollm2")
    ///     .grammar_server(GrammarServer::LlamaCpp)
    ///     .build()
    ///     .unwrap();
    /// assert!(local.protocol_choice().contains("a guess"));
    /// assert_eq!(local.protocol().id(), "hermes");
    /// ```
    pub fn protocol_choice(&self) -> String {
        let inner = &*self.inner;
        if !inner.known {
            let why = if inner.capabilities.native_tools {
                "a model of unknown family is taken to have native tools"
            } else {
                "a model behind a grammar server is taken to have no native tools, so the tools are offered as text"
            };
            return format!(
                "`{}`: a guess: {} is not in the model table, and {why} (give the model a profile to choose)",
                inner.protocol.id(),
                inner.model
            );
        }
        if inner.capabilities.native_tools {
            format!("`{}`: {} has native tools", inner.protocol.id(), inner.model)
        } else {
            format!(
                "`{}`: {} has no native tools, so the tools are offered as text",
                inner.protocol.id(),
                inner.model
            )
        }
    }

    /// What the model supports, and its defaults.
    pub fn capabilities(&self) -> &ModelCapabilities {
        &self.inner.capabilities
    }

    /// The same client, its calls made with `options` (under each request's own).
    ///
    /// ```
    /// use tool_calling::providers::{HttpChatModel, Provider};
    /// use tool_calling::model::{RequestOptions, Thinking};
    /// let claude = HttpChatModel::builder(Provider::Anthropic).api_key("k").model("claude-sonnet-4-5").build().unwrap();
    /// let quick = claude.with_options(RequestOptions::default().thinking(Thinking::Off).max_tokens(512));
    /// assert_eq!(quick.options().max_tokens, Some(512));
    /// assert_eq!(claude.options().max_tokens, None, "the original is unchanged");
    /// ```
    #[must_use]
    pub fn with_options(&self, options: RequestOptions) -> HttpChatModel {
        HttpChatModel { inner: self.inner.clone(), options }
    }

    /// The options this view's calls are made with.
    pub fn options(&self) -> &RequestOptions {
        &self.options
    }

    /// The request as it will be sent: options merged (the request's, this view's, the
    /// model's defaults), what the model does not support dropped, what the provider
    /// would refuse adjusted, each change noted; then the body.
    ///
    /// ```
    /// use tool_calling::providers::{HttpChatModel, Provider};
    /// use tool_calling::model::{Message, ModelRequest, RequestOptions, Thinking};
    /// let gpt4o = HttpChatModel::builder(Provider::OpenAiChat).api_key("k").model("gpt-4o").build().unwrap();
    /// let mut request = ModelRequest::new(vec![Message::user("hi")]);
    /// request.options = RequestOptions::default().thinking(Thinking::On);
    /// let prepared = gpt4o.prepare(&request);
    /// assert_eq!(prepared.notes[0].option, "thinking", "gpt-4o does not reason: dropped");
    /// assert!(prepared.body.get("reasoning_effort").is_none());
    /// ```
    pub fn prepare(&self, request: &ModelRequest) -> PreparedRequest {
        let inner = &*self.inner;
        let mut request = request.clone();
        let mut notes = Vec::new();
        request.options = inner.capabilities.effective_options(request.options.or(self.options), &mut notes);
        if request.tools.is_some() && !inner.capabilities.native_tools {
            notes.push(RequestNote::new(
                "tools",
                format!(
                    "{} has no native tools: not sent (speak `{}` to it, with the tools in the prompt)",
                    inner.model,
                    inner.capabilities.fallback.id()
                ),
            ));
            request.tools = None;
        }
        if request.parallel_tool_calls == Some(true) && !inner.capabilities.parallel_calls {
            notes.push(RequestNote::new(
                "parallel_tool_calls",
                "the model makes one call at a time: not sent",
            ));
            request.parallel_tool_calls = None;
        }
        inner.format.adjust(&mut request, &mut notes);
        let stream = request.options.stream.unwrap_or(false);
        let mut body = inner.format.request_body(&request, &inner.model, stream);
        if let Some(grammar) = &request.grammar {
            let fields = match (inner.provider, inner.grammar_server) {
                (Provider::OpenAiChat, Some(server)) => server.request_fields(grammar),
                (Provider::OpenAiChat, None) => {
                    Err("no grammar server is set (HttpChatModelBuilder::grammar_server)".into())
                }
                (provider, _) => Err(format!("{provider:?} takes no grammar")),
            };
            match (fields, body.as_object_mut()) {
                (Ok(fields), Some(object)) => object.extend(fields),
                (Err(why), _) => notes.push(RequestNote::new("grammar", format!("dropped: {why}"))),
                (Ok(_), None) => {
                    notes.push(RequestNote::new("grammar", "dropped: the body is not an object"))
                }
            }
        }
        PreparedRequest { body, stream, timeout: request.options.timeout, notes }
    }

    /// The provider's wire format (request bodies, responses, stream events).
    pub fn wire_format(&self) -> Arc<dyn WireFormat> {
        self.inner.format.clone()
    }

    /// Posts `body`, retrying refusals as the policy says; returns the successful
    /// response (its headers read, its body not).
    async fn send(
        &self,
        prepared: &PreparedRequest,
        stream: bool,
    ) -> Result<reqwest::Response, ChatModelError> {
        let inner = &*self.inner;
        let body = &prepared.body;
        let request_timeout = prepared.timeout.unwrap_or(inner.request_timeout);
        for note in &prepared.notes {
            tracing::warn!(model = %inner.model, option = %note.option, "{}", note.message);
        }
        let url = inner.provider.url(&inner.base_url, &inner.model, stream);
        let body =
            serde_json::to_vec(body).map_err(|e| ChatModelError::Config(format!("request body: {e}")))?;
        let mut attempt = 0;
        loop {
            let mut request = inner
                .http
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(
                    reqwest::header::ACCEPT,
                    if stream { "text/event-stream" } else { "application/json" },
                )
                .body(body.clone());
            for (name, value) in inner.provider.auth_headers(inner.api_key.as_deref()) {
                request = request.header(name, value);
            }
            for (name, value) in &inner.headers {
                request = request.header(name.as_str(), value.as_str());
            }
            let error = match tokio::time::timeout(request_timeout, request.send()).await {
                Err(_) => {
                    ChatModelError::Timeout { stage: "waiting for the response", after: request_timeout }
                }
                Ok(Err(error)) => transport("sending the request", &error),
                Ok(Ok(response)) if response.status().is_success() => return Ok(response),
                Ok(Ok(response)) => self.status_error(response).await,
            };
            let Some(wait) = inner.retry.wait_before_retry(&error, attempt) else {
                return Err(error);
            };
            tracing::debug!(%error, attempt, ?wait, "retrying the model request");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    /// The error an unsuccessful response stands for: its status, the provider's
    /// message, and the wait it asked for.
    async fn status_error(&self, response: reqwest::Response) -> ChatModelError {
        let status = response.status().as_u16();
        let header =
            |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let header_wait = retry::retry_after_from_headers(
            header("retry-after-ms").as_deref(),
            header("retry-after").as_deref(),
            SystemTime::now(),
        );
        let limit = self.inner.max_response_bytes;
        let text = match tokio::time::timeout(self.inner.request_timeout, read_body(response, limit)).await {
            Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            _ => String::new(),
        };
        let parsed: Option<Value> = serde_json::from_str(&text).ok();
        // A streamed error body may come as an array of one object (Gemini).
        let parsed = match parsed {
            Some(Value::Array(mut items)) if items.len() == 1 => Some(items.remove(0)),
            other => other,
        };
        let (kind, message) = retry::error_details(&text, parsed.as_ref());
        let retry_after = header_wait.or_else(|| parsed.as_ref().and_then(retry::retry_after_from_body));
        ChatModelError::Status { status, kind, message, retry_after }
    }

    async fn complete_turn(&self, request: &ModelRequest) -> Result<AssistantTurn, ChatModelError> {
        let mut whole = request.clone();
        whole.options.stream = Some(false);
        self.complete_prepared(&self.prepare(&whole)).await
    }

    async fn complete_prepared(&self, prepared: &PreparedRequest) -> Result<AssistantTurn, ChatModelError> {
        let inner = &*self.inner;
        let response = self.send(prepared, false).await?;
        let bytes =
            match tokio::time::timeout(inner.request_timeout, read_body(response, inner.max_response_bytes))
                .await
            {
                Err(_) => {
                    return Err(ChatModelError::Timeout {
                        stage: "reading the response",
                        after: inner.request_timeout,
                    });
                }
                Ok(Err(error)) => return Err(error),
                Ok(Ok(bytes)) => bytes,
            };
        let body: Value = serde_json::from_slice(&bytes).map_err(|e| {
            ChatModelError::from_wire(WireError::NotJson { what: "response body", reason: e.to_string() })
        })?;
        inner.format.parse_response(&body).map_err(ChatModelError::from_wire)
    }
}

/// A request as a client will send it (see [`HttpChatModel::prepare`]).
///
/// ```
/// use std::time::Duration;
/// use tool_calling::providers::{HttpChatModel, Provider};
/// use tool_calling::model::{Message, ModelRequest, RequestOptions};
/// let claude =
///     HttpChatModel::builder(Provider::Anthropic).api_key("k").model("claude-sonnet-4-5").build().unwrap();
/// let mut request = ModelRequest::new(vec![Message::system("Be brief."), Message::user("hi")]);
/// request.options = RequestOptions::default().stream(true).timeout(Duration::from_secs(30));
/// let prepared = claude.prepare(&request);
/// assert!(prepared.stream);
/// assert_eq!(prepared.timeout, Some(Duration::from_secs(30)));
/// assert_eq!(prepared.body["model"], "claude-sonnet-4-5");
/// assert_eq!(prepared.body["system"], "Be brief.");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PreparedRequest {
    /// The body.
    pub body: Value,
    /// Whether the answer is asked to stream.
    pub stream: bool,
    /// The time limit of the call, when its options set one.
    pub timeout: Option<Duration>,
    /// What was changed, and why.
    pub notes: Vec<RequestNote>,
}

/// A transport error at `stage`.
/// Reads `response`'s whole body, failing past `limit` bytes (what came until then is
/// dropped).
async fn read_body(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, ChatModelError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport("reading the response", &e))? {
        if chunk.len() > limit.saturating_sub(body.len()) {
            return Err(ChatModelError::from_wire(WireError::TooLarge { what: "response body", limit }));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn transport(stage: &'static str, error: &reqwest::Error) -> ChatModelError {
    ChatModelError::Transport { stage, message: crate::http::error_chain(error) }
}

impl ChatModelError {
    /// The error a provider's payload stands for.
    fn from_wire(error: WireError) -> Self {
        match error {
            WireError::Provider { kind, message } => ChatModelError::Provider { kind, message },
            other => ChatModelError::Malformed(other.to_string()),
        }
    }
}

impl HttpChatModelBuilder {
    /// The base URL (default: the provider's environment variable, else its public API;
    /// see [`Provider::default_base_url`]).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The API key (default: the provider's environment variable).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The model (default: the provider's environment variable; required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The serving engine behind an OpenAI-compatible base URL that constrains decoding
    /// with a grammar: a request's [`grammar`](ModelRequest::grammar) is then sent in
    /// its fields (see [`GrammarServer`]). Without one, or for another provider, a
    /// grammar is dropped with a [`RequestNote`].
    pub fn grammar_server(mut self, server: GrammarServer) -> Self {
        self.grammar_server = Some(server);
        self
    }

    /// An extra header sent with every request (an organisation, a project, a beta flag).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Options of the provider's protocol (strict schemas, request-id style).
    pub fn options(mut self, options: NativeOptions) -> Self {
        self.options = options;
        self
    }

    /// How long connecting may take (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long the response may take to begin, and a whole answer to arrive when not
    /// streaming (default 600 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long a stream may stay silent between two chunks (default 120 s).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How many bytes of a response are read, streamed or not (default 64 MiB,
    /// [`DEFAULT_MAX_STREAM_BYTES`]). A longer answer fails with
    /// [`ChatModelError::Malformed`], saying so; a stream cut there ends its turn as an
    /// error, with its unfinished calls incomplete.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// How refused requests are retried (default [`HttpRetry::default`]).
    pub fn retry(mut self, policy: HttpRetry) -> Self {
        self.retry = policy;
        self
    }

    /// The capabilities of models are looked up in `profiles` (default: the built-in
    /// table, [`ModelProfiles::builtin`]).
    pub fn profiles(mut self, profiles: ModelProfiles) -> Self {
        self.profiles = Some(profiles);
        self
    }

    /// This model's capabilities, instead of looking them up.
    pub fn capabilities(mut self, capabilities: ModelCapabilities) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// A `reqwest` client to share (its own timeouts and proxies apply; the connect
    /// timeout set here does not).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// Where defaults are read from instead of the process environment (for tests, or
    /// for configuration kept elsewhere).
    pub fn env(mut self, lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Arc::new(lookup);
        self
    }

    /// The client. Fails when no model is named, when the provider's public API would be
    /// called without a key, or when a header is not valid HTTP.
    pub fn build(self) -> Result<HttpChatModel, ChatModelError> {
        let provider = self.provider;
        let env = &self.env;
        let model = self
            .model
            .or_else(|| env(provider.model_variable()))
            .filter(|model| !model.trim().is_empty())
            .ok_or_else(|| {
                ChatModelError::Config(format!(
                    "no model: name one with .model(…) or set {}",
                    provider.model_variable()
                ))
            })?;
        let base_url = self
            .base_url
            .or_else(|| env(provider.base_url_variable()))
            .unwrap_or_else(|| provider.default_base_url().to_owned());
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(ChatModelError::Config(format!("the base URL {base_url:?} is not an http(s) URL")));
        }
        let api_key = self.api_key.or_else(|| provider.key_variables().iter().find_map(|name| env(name)));
        if api_key.is_none() && base_url.trim_end_matches('/') == provider.default_base_url() {
            return Err(ChatModelError::Config(format!(
                "no API key for {}: pass .api_key(…) or set {}",
                provider.default_base_url(),
                provider.key_variables().join(" or ")
            )));
        }
        for (name, value) in &self.headers {
            let valid = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
                && reqwest::header::HeaderValue::from_str(value).is_ok();
            if !valid {
                return Err(ChatModelError::Config(format!("the header {name:?} is not valid HTTP")));
            }
        }
        let http = match self.http {
            Some(http) => http,
            None => reqwest::Client::builder()
                .connect_timeout(self.connect_timeout)
                .build()
                .map_err(|e| ChatModelError::Config(format!("the HTTP client could not be built: {e}")))?,
        };
        let format: Arc<dyn WireFormat> = Arc::new(provider);
        let profiles = self.profiles.unwrap_or_default();
        // A model the table does not know, served behind a grammar server: such a server
        // constrains text, and a model it serves is most likely one it hosts without a
        // tool API of its own. A guess, said so in `protocol_choice`.
        let known = self.capabilities.is_some() || profiles.knows(&model);
        let capabilities = match self.capabilities {
            Some(capabilities) => capabilities,
            None if !known && self.grammar_server.is_some() => {
                let mut capabilities = profiles.lookup(&model);
                capabilities.native_tools = false;
                capabilities.fallback = FallbackProtocol::from_id(UNKNOWN_MODEL_FALLBACK).unwrap_or_default();
                capabilities
            }
            None => profiles.lookup(&model),
        };
        // Both protocols come from the registry, as a protocol picked by id does: the
        // native one with this client's options, the fallback with the model's reasoning.
        let options = BuiltinOptions::default()
            .native(self.options)
            .starts_in_reasoning(capabilities.starts_in_reasoning);
        let builtin = |id: &str| {
            ProtocolRegistry::builtin(id, &options)
                .map(BuiltinProtocol::into_protocol)
                .map_err(|e| ChatModelError::Config(e.to_string()))
        };
        let native = builtin(provider.protocol_id())?;
        let protocol =
            if capabilities.native_tools { native.clone() } else { builtin(capabilities.fallback.id())? };
        tracing::info!(
            %model,
            protocol = protocol.id(),
            native_tools = capabilities.native_tools,
            "model client ready: tools will be offered through this protocol"
        );
        Ok(HttpChatModel {
            options: RequestOptions::default(),
            inner: Arc::new(Inner {
                provider,
                base_url,
                api_key,
                model,
                headers: self.headers,
                request_timeout: self.request_timeout,
                idle_timeout: self.idle_timeout,
                max_response_bytes: self.max_response_bytes,
                retry: self.retry,
                capabilities,
                known,
                grammar_server: self.grammar_server,
                native,
                protocol,
                format,
                http,
            }),
        })
    }
}

impl ChatModel for HttpChatModel {
    fn request_notes(&self, request: &ModelRequest) -> Vec<RequestNote> {
        self.prepare(request).notes
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<AssistantTurn, ChatModelError>> {
        Box::pin(self.complete_turn(request))
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> BoxStream<'a, Result<TurnDelta, ChatModelError>> {
        let state = StreamState { model: self, request, phase: Phase::Start, pending: VecDeque::new() };
        stream::unfold(state, StreamState::next).boxed()
    }
}

/// The state of one streamed turn.
struct StreamState<'a> {
    model: &'a HttpChatModel,
    request: &'a ModelRequest,
    phase: Phase,
    /// Deltas (and at most one error, last) decided but not yet yielded.
    pending: VecDeque<Result<TurnDelta, ChatModelError>>,
}

enum Phase {
    Start,
    Reading(reqwest::Response, Box<ResponseStream>),
    Done,
}

impl<'a> StreamState<'a> {
    async fn next(mut self) -> Option<(Result<TurnDelta, ChatModelError>, Self)> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some((item, self));
            }
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Start => self.open().await,
                Phase::Reading(response, decoder) => self.read(response, decoder).await,
            }
        }
    }

    /// Sends the request; a server that answers with a whole body instead of events
    /// (some compatible servers ignore `stream`) has that body read as the turn. A call
    /// whose options say not to stream is made whole, and its turn given as deltas.
    async fn open(&mut self) {
        let inner = &*self.model.inner;
        let mut streamed = self.request.clone();
        // Asked to stream, unless the call's options (or this view's) say otherwise.
        streamed.options.stream = streamed.options.stream.or(self.model.options.stream).or(Some(true));
        let prepared = self.model.prepare(&streamed);
        if !prepared.stream {
            match self.model.complete_prepared(&prepared).await {
                Ok(turn) => self.pending.extend(turn.into_deltas().into_iter().map(Ok)),
                Err(error) => self.pending.push_back(Err(error)),
            }
            return;
        }
        let response = match self.model.send(&prepared, true).await {
            Ok(response) => response,
            Err(error) => return self.pending.push_back(Err(error)),
        };
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_none_or(|v| v.starts_with("text/event-stream"));
        if is_sse {
            let stream = ResponseStream::new(inner.format.as_ref()).max_bytes(inner.max_response_bytes);
            self.phase = Phase::Reading(response, Box::new(stream));
            return;
        }
        let read = read_body(response, inner.max_response_bytes);
        let turn = match tokio::time::timeout(inner.request_timeout, read).await {
            Err(_) => {
                Err(ChatModelError::Timeout { stage: "reading the response", after: inner.request_timeout })
            }
            Ok(Err(error)) => Err(error),
            Ok(Ok(bytes)) => serde_json::from_slice::<Value>(&bytes)
                .map_err(|e| WireError::NotJson { what: "response body", reason: e.to_string() })
                .and_then(|body| inner.format.parse_response(&body))
                .map_err(ChatModelError::from_wire),
        };
        match turn {
            Ok(turn) => self.pending.extend(turn.into_deltas().into_iter().map(Ok)),
            Err(error) => self.pending.push_back(Err(error)),
        }
    }

    /// Reads the next chunk of the event stream.
    async fn read(&mut self, mut response: reqwest::Response, mut decoder: Box<ResponseStream>) {
        let idle = self.model.inner.idle_timeout;
        let mut deltas = Vec::new();
        let outcome = match tokio::time::timeout(idle, response.chunk()).await {
            Err(_) => {
                Err(ChatModelError::Timeout { stage: "waiting for the next part of the stream", after: idle })
            }
            Ok(Err(error)) => Err(transport("reading the stream", &error)),
            Ok(Ok(None)) => {
                // A stream that ended inside an event is noted here; its turn, if the
                // provider had not finished it, ends as an error with its open calls
                // incomplete (reported to the model, never run).
                if let Err(error) = decoder.finish(&mut deltas) {
                    tracing::warn!(model = %self.model.inner.model, %error, "the response stream was cut off");
                }
                Ok(false)
            }
            Ok(Ok(Some(bytes))) => {
                decoder.push(&bytes, &mut deltas).map(|()| true).map_err(ChatModelError::from_wire)
            }
        };
        self.pending.extend(deltas.into_iter().map(Ok));
        match outcome {
            Ok(true) => self.phase = Phase::Reading(response, decoder),
            Ok(false) => {}
            Err(error) => self.pending.push_back(Err(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
        let vars: HashMap<String, String> =
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| vars.get(name).cloned()
    }

    #[test]
    fn configuration_from_the_environment() {
        let model = HttpChatModel::builder(Provider::Gemini)
            .env(env(&[("GOOGLE_API_KEY", "g"), ("GEMINI_MODEL", "gemini-2.5-flash")]))
            .build()
            .unwrap();
        assert_eq!(model.model(), "gemini-2.5-flash");
        assert_eq!(model.base_url(), Provider::Gemini.default_base_url());
        assert_eq!(model.inner.api_key.as_deref(), Some("g"));
        assert_eq!(model.protocol().id(), "gemini");

        // Arguments win over the environment; GEMINI_API_KEY over GOOGLE_API_KEY.
        let model = HttpChatModel::builder(Provider::Gemini)
            .env(env(&[("GEMINI_API_KEY", "first"), ("GOOGLE_API_KEY", "second"), ("GEMINI_MODEL", "a")]))
            .model("b")
            .base_url("http://127.0.0.1:1/v1beta")
            .build()
            .unwrap();
        assert_eq!((model.model(), model.inner.api_key.as_deref()), ("b", Some("first")));
        assert_eq!(model.base_url(), "http://127.0.0.1:1/v1beta");
    }

    #[test]
    fn configuration_errors_name_the_fix() {
        let no_model =
            HttpChatModel::builder(Provider::Anthropic).env(env(&[("ANTHROPIC_API_KEY", "k")])).build();
        assert!(
            matches!(&no_model, Err(ChatModelError::Config(m)) if m.contains("ANTHROPIC_MODEL")),
            "{no_model:?}"
        );
        let no_key = HttpChatModel::builder(Provider::Gemini).env(env(&[])).model("m").build();
        assert!(
            matches!(&no_key, Err(ChatModelError::Config(m)) if m.contains("GEMINI_API_KEY or GOOGLE_API_KEY"))
        );
        let bad_url = HttpChatModel::builder(Provider::OpenAiChat)
            .env(env(&[]))
            .base_url("localhost:8080")
            .model("m")
            .build();
        assert!(matches!(&bad_url, Err(ChatModelError::Config(m)) if m.contains("not an http(s) URL")));
        let bad_header = HttpChatModel::builder(Provider::OpenAiChat)
            .env(env(&[("OPENAI_API_KEY", "k")]))
            .model("m")
            .header("bad header", "v")
            .build();
        assert!(matches!(&bad_header, Err(ChatModelError::Config(m)) if m.contains("bad header")));
        // A key is optional away from the provider's own host.
        let local = HttpChatModel::builder(Provider::OpenAiChat)
            .env(env(&[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")]))
            .model("m")
            .build();
        assert!(local.is_ok());
    }

    #[test]
    fn debug_output_hides_the_key() {
        let model = HttpChatModel::builder(Provider::OpenAiChat)
            .env(env(&[]))
            .api_key("sk-secret")
            .model("m")
            .build()
            .unwrap();
        let shown = format!("{model:?}");
        assert!(!shown.contains("sk-secret") && shown.contains("<redacted>"), "{shown}");
        let builder = HttpChatModel::builder(Provider::OpenAiChat).api_key("sk-secret");
        assert!(!format!("{builder:?}").contains("sk-secret"));
    }
}
