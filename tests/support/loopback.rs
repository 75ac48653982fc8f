//! A real HTTP server on 127.0.0.1 for the client tests: it records each request and
//! answers from a script (JSON bodies, server-sent-event streams that can wait for a
//! tool to start or drop the connection, or no answer at all).

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::Value;
use tokio::sync::Notify;
use tool_calling::providers::{HttpChatModel, HttpChatModelBuilder, HttpRetry, Provider};

#[path = "../../examples/support/http_server.rs"]
mod http_server;
use http_server::{Request, Response};

/// A piece of a scripted event stream.
#[derive(Clone)]
pub enum Part {
    Bytes(String),
    /// Wait until a tool has started, then log `server: rest of the stream`.
    WaitForTool,
    /// Drop the connection (the body ends with an error, mid-chunk).
    Break,
}

/// One scripted answer.
pub enum Reply {
    Json {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    Sse(Vec<Part>),
    /// Never answers.
    Hang,
}

/// A request as the server received it.
#[derive(Debug)]
pub struct Recorded {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

pub struct ServerState {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    pub log: Log,
    pub tool_started: Arc<Notify>,
}

pub struct Server {
    pub url: String,
    pub state: Arc<ServerState>,
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Server {
        let state = Arc::new(ServerState {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
            log: Log::default(),
            tool_started: Arc::new(Notify::new()),
        });
        let served = state.clone();
        let address = http_server::spawn(move |request| handle(served.clone(), request)).await.unwrap();
        Server { url: format!("http://{address}"), state }
    }

    /// The base URL a provider's client is given: where its API's paths start.
    pub fn base_url(&self, provider: Provider) -> String {
        match provider {
            Provider::Anthropic => self.url.clone(),
            Provider::Gemini => format!("{}/v1beta", self.url),
            _ => format!("{}/v1", self.url),
        }
    }

    pub fn client(&self, provider: Provider) -> HttpChatModelBuilder {
        HttpChatModel::builder(provider)
            .env(|_| None)
            .base_url(self.base_url(provider))
            .api_key("test-key")
            .model("test-model")
            .retry(HttpRetry::default().initial_backoff(Duration::from_millis(1)))
    }

    pub fn requests(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.state.requests.lock().unwrap()
    }
}

async fn handle(state: Arc<ServerState>, request: Request) -> Response {
    state.requests.lock().unwrap().push(Recorded {
        path: request.target.clone(),
        headers: request.headers.iter().cloned().collect(),
        body: request.json().unwrap_or(Value::Null),
    });
    let reply = state.replies.lock().unwrap().pop_front();
    let reply =
        reply.unwrap_or(Reply::Json { status: 500, headers: vec![], body: "no reply scripted".into() });
    match reply {
        Reply::Json { status, headers, body } => {
            let mut response = Response::new(status).header("content-type", "application/json").body(body);
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response
        }
        Reply::Sse(parts) => {
            let stream =
                futures::stream::unfold((parts.into_iter(), state), |(mut parts, state)| async move {
                    loop {
                        match parts.next()? {
                            Part::Bytes(text) => return Some((Ok(Bytes::from(text)), (parts, state))),
                            Part::WaitForTool => {
                                // A guard against a hang, not a measurement.
                                let _ = tokio::time::timeout(
                                    Duration::from_secs(20),
                                    state.tool_started.notified(),
                                )
                                .await;
                                state.log.push("server: rest of the stream");
                            }
                            Part::Break => {
                                // Returning `Pending` once lets the server flush what was sent.
                                tokio::task::yield_now().await;
                                return Some((
                                    Err(std::io::Error::other("connection dropped")),
                                    (parts, state),
                                ));
                            }
                        }
                    }
                });
            Response::stream(200, "text/event-stream", stream)
        }
        Reply::Hang => std::future::pending().await,
    }
}

/// A JSON answer with `status`.
pub fn json_reply(status: u16, body: String) -> Reply {
    Reply::Json { status, headers: vec![], body }
}
