//! A small HTTP/1.1 server on 127.0.0.1, on hyper, for the examples and tests that need a
//! real one: the clients they run (reqwest, rmcp) talk real HTTP to it.
//!
//! A handler takes a [`Request`] (method, path, query, headers and the whole body, read)
//! and returns a [`Response`] (a status, headers, and a body that is whole or streamed,
//! as server-sent events are). [`serve_hyper`] serves any hyper service instead, such as
//! a tower service (`McpToolServer::http_service()`) wrapped in hyper-util's
//! `TowerToHyperService`.

#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// A request, read whole.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path as sent (percent-encoded, without the query).
    pub path: String,
    /// The path and the query as sent.
    pub target: String,
    /// The query's pairs, decoded, in order.
    pub query: Vec<(String, String)>,
    /// The headers, names in lower case, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Bytes,
}

impl Request {
    /// The value of header `name` (any case), the first if it was sent more than once.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The value of query parameter `name`, decoded.
    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The path's segments, each percent-decoded: `/api/notes/7` is `["api", "notes", "7"]`.
    pub fn segments(&self) -> Vec<String> {
        self.path.trim_start_matches('/').split('/').map(|s| decode(s, false)).collect()
    }

    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// A streamed body: its pieces, or an error that breaks the connection where it stands.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

enum Body {
    Whole(Bytes),
    Stream(BodyStream),
}

/// A response: a status, headers and a body.
pub struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
}

impl Response {
    /// `status` with no body.
    pub fn new(status: u16) -> Self {
        Response { status, headers: Vec::new(), body: Body::Whole(Bytes::new()) }
    }

    /// `status` with a plain-text body.
    pub fn text(status: u16, text: impl Into<String>) -> Self {
        Response::new(status).header("content-type", "text/plain; charset=utf-8").body(text.into())
    }

    /// `status` with a JSON body.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Response::new(status).header("content-type", "application/json").body(value.to_string())
    }

    /// `status` with a body of `content_type` sent piece by piece as `stream` yields it
    /// (chunked); an error from the stream drops the connection.
    pub fn stream(
        status: u16,
        content_type: &str,
        stream: impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    ) -> Self {
        let mut response = Response::new(status).header("content-type", content_type);
        response.body = Body::Stream(Box::pin(stream));
        response
    }

    /// Sets header `name` (replacing a value set before).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        self.headers.push((name, value.into()));
        self
    }

    /// Sets the whole body.
    #[must_use]
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = Body::Whole(body.into());
        self
    }

    fn into_hyper(self) -> hyper::Response<UnsyncBoxBody<Bytes, std::io::Error>> {
        let body = match self.body {
            Body::Whole(bytes) => Full::new(bytes).map_err(|never| match never {}).boxed_unsync(),
            Body::Stream(stream) => {
                StreamBody::new(stream.map(|piece| piece.map(Frame::data))).boxed_unsync()
            }
        };
        let mut response = hyper::Response::new(body);
        *response.status_mut() =
            hyper::StatusCode::from_u16(self.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
        for (name, value) in self.headers {
            if let (Ok(name), Ok(value)) =
                (hyper::header::HeaderName::try_from(name), hyper::header::HeaderValue::try_from(value))
            {
                response.headers_mut().append(name, value);
            }
        }
        response
    }
}

/// Binds a free port on 127.0.0.1, serves `handler` there in a task of its own, and
/// returns the address.
pub async fn spawn<H, F>(handler: H) -> std::io::Result<SocketAddr>
where
    H: Fn(Request) -> F + Send + Sync + 'static,
    F: Future<Output = Response> + Send + 'static,
{
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let address = listener.local_addr()?;
    tokio::spawn(serve(listener, handler));
    Ok(address)
}

/// Serves `handler` on `listener`, one task per connection, until accepting fails.
pub async fn serve<H, F>(listener: TcpListener, handler: H) -> std::io::Result<()>
where
    H: Fn(Request) -> F + Send + Sync + 'static,
    F: Future<Output = Response> + Send + 'static,
{
    let handler = Arc::new(handler);
    let service = service_fn(move |request: hyper::Request<Incoming>| {
        let handler = handler.clone();
        async move { Ok::<_, Infallible>(handler(read(request).await).await.into_hyper()) }
    });
    serve_hyper(listener, service).await
}

/// Serves a hyper `service` on `listener`, one task per connection, until accepting
/// fails.
pub async fn serve_hyper<S, B>(listener: TcpListener, service: S) -> std::io::Result<()>
where
    S: hyper::service::Service<hyper::Request<Incoming>, Response = hyper::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        tokio::spawn(async move {
            // A connection that breaks (a client gone, a stream dropped on purpose) just ends.
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// The request with its body read (an unreadable body reads as empty).
async fn read(request: hyper::Request<Incoming>) -> Request {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map(|collected| collected.to_bytes()).unwrap_or_default();
    let query = parts
        .uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name, true), decode(value, true))
        })
        .collect();
    Request {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        target: parts.uri.path_and_query().map(ToString::to_string).unwrap_or_default(),
        query,
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned())
            })
            .collect(),
        body,
    }
}

/// Percent-decodes `text` (and `+` as a space in a query).
fn decode(text: &str, plus_is_space: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok());
        match (byte, hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            (b'+', _) if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
