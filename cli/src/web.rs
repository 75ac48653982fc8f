//! `tool-calling serve`: the tester in a browser. One page (plain HTML, CSS and JavaScript,
//! built into the binary) with three panes over the demo tools, and a small JSON API
//! that calls the same functions as the command line (nothing of the library's logic is
//! copied into JavaScript):
//!
//! | route | answers |
//! | --- | --- |
//! | `GET /api/tools` | the tools and methods, as `discover --all` prints them |
//! | `GET /api/prompt?protocol=P&lang=en` | `{"protocol", "text"}` or `{"protocol", "json"}`: the prompt as sent |
//! | `POST /api/exec` `{"tool_name", "args", "command"?, "timeout_ms"?}` | one result, as `exec` prints it |
//! | `POST /api/parse` `{"protocol", "text", "fuzzy"?, "skip_fenced"?, "keep_think"?, "stream_chunk"?}` | as `parse` prints it, plus `hidden` spans (VCP) |
//! | `POST /api/cycle` `{"protocol", "text", …}` | as `cycle` prints it |
//! | `GET /api/samples` | bundled replies to try: `[{"name", "protocol", "text"}]` |
//! | `GET /api/protocols` | the protocol names `--protocol` takes: `[{"name", "native"}]` |
//!
//! Errors are `{"error": "…"}` with status 400. It listens on 127.0.0.1 only.

use axum::Json;
use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use tool_calling::protocol::vcp::{HiddenKind, VcpOptions};
use tool_calling::protocol::{BuiltinProtocol, ProtocolRegistry};

use super::commands;
use super::{Failure, Lang, PROGRAM};

const INDEX: &str = include_str!("../web/index.html");
const SCRIPT: &str = include_str!("../web/app.js");
const STYLE: &str = include_str!("../web/style.css");

/// The bundled samples: name, protocol, text.
const SAMPLES: [(&str, &str, &str); 7] = [
    ("VCP: reasoning, three calls, one cut off", "vcp", include_str!("../samples/demo_reply.txt")),
    ("VCP: calls to the demo tools", "vcp", include_str!("../samples/vcp_demo.txt")),
    ("Hermes (Qwen): two calls", "hermes", include_str!("../samples/hermes.txt")),
    ("Mistral: a call list", "mistral", include_str!("../samples/mistral.txt")),
    (
        "gpt-oss (harmony): reasoning, a preamble, two calls",
        "harmony",
        include_str!("../samples/harmony.txt"),
    ),
    ("DeepSeek V3.2 (DSML): one call", "deepseek_v32", include_str!("../samples/deepseek_v32.txt")),
    ("OpenAI response body", "openai", include_str!("../samples/openai.json")),
];

/// Serves the tester on `127.0.0.1:port` until the process is stopped.
pub(super) fn serve(port: u16) -> Result<(), Failure> {
    let runtime = commands::runtime()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| Failure::msg(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
        let address = listener.local_addr().map_err(|e| Failure::msg(e.to_string()))?;
        eprintln!("{PROGRAM}: serving on http://{address}/ (Ctrl-C stops it)");
        axum::serve(listener, router()).await.map_err(|e| Failure::msg(format!("the server stopped: {e}")))
    })
}

fn router() -> axum::Router {
    axum::Router::new()
        .route("/", get(|| async { page(INDEX, "text/html; charset=utf-8") }))
        .route("/app.js", get(|| async { page(SCRIPT, "text/javascript; charset=utf-8") }))
        .route("/style.css", get(|| async { page(STYLE, "text/css; charset=utf-8") }))
        .route("/api/tools", get(tools))
        .route("/api/prompt", get(prompt))
        .route("/api/samples", get(samples))
        .route("/api/protocols", get(protocols))
        .route("/api/exec", post(exec))
        .route("/api/parse", post(parse))
        .route("/api/cycle", post(cycle))
}

fn page(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-store")], body).into_response()
}

/// A JSON answer, or `{"error"}` with status 400.
fn answer(result: Result<Value, Failure>) -> Response {
    match result {
        Ok(value) => Json(value).into_response(),
        Err(failure) => {
            (StatusCode::BAD_REQUEST, Json(json!({"error": failure.to_string()}))).into_response()
        }
    }
}

async fn tools() -> Response {
    answer(commands::discover_value(true))
}

#[derive(Deserialize)]
struct PromptQuery {
    protocol: Option<String>,
    lang: Option<String>,
}

async fn prompt(Query(query): Query<PromptQuery>) -> Response {
    let result = (|| {
        let name = query.protocol.unwrap_or_else(|| "vcp".into());
        let lang = if query.lang.as_deref() == Some("zh") { Lang::Zh } else { Lang::En };
        Ok(match commands::prompt_value(&name, lang)? {
            Value::String(text) => json!({"protocol": name, "text": text}),
            tools => json!({"protocol": name, "json": tools}),
        })
    })();
    answer(result)
}

async fn samples() -> Response {
    let samples: Vec<Value> = SAMPLES
        .iter()
        .map(|(name, protocol, text)| json!({"name": name, "protocol": protocol, "text": text}))
        .collect();
    Json(Value::Array(samples)).into_response()
}

/// The built-in protocols, as `--protocol` takes them.
async fn protocols() -> Response {
    let names: Vec<Value> = ProtocolRegistry::builtin_ids()
        .into_iter()
        .map(|id| {
            let native =
                commands::protocol(id, VcpOptions::default()).is_ok_and(|p| commands::wire_of(&p).is_some());
            json!({"name": id, "native": native})
        })
        .collect();
    Json(Value::Array(names)).into_response()
}

#[derive(Deserialize)]
struct ExecRequest {
    tool_name: String,
    #[serde(default)]
    args: Value,
    command: Option<String>,
    timeout_ms: Option<u64>,
}

async fn exec(Json(request): Json<ExecRequest>) -> Response {
    let args = if request.args.is_null() { json!({}) } else { request.args };
    answer(
        commands::exec_value(&request.tool_name, request.command.as_deref(), args, request.timeout_ms).await,
    )
}

#[derive(Deserialize)]
struct ParseRequest {
    protocol: String,
    text: String,
    #[serde(default)]
    fuzzy: bool,
    #[serde(default)]
    skip_fenced: bool,
    #[serde(default)]
    keep_think: bool,
    stream_chunk: Option<usize>,
}

impl ParseRequest {
    fn options(&self) -> VcpOptions {
        super::vcp_options(self.fuzzy, self.skip_fenced, self.keep_think)
    }
}

async fn parse(Json(request): Json<ParseRequest>) -> Response {
    let result = (|| {
        let options = request.options();
        let mut document =
            commands::parse_value(&request.protocol, options, &request.text, request.stream_chunk)?;
        if let BuiltinProtocol::Vcp(vcp) = commands::protocol(&request.protocol, options)? {
            let hidden: Vec<Value> = vcp
                .hidden_spans(&request.text)
                .into_iter()
                .map(|(span, kind)| {
                    let kind = match kind {
                        HiddenKind::Reasoning => "reasoning",
                        HiddenKind::Fenced => "fenced",
                        _ => "hidden",
                    };
                    json!({"start": span.start, "end": span.end, "kind": kind})
                })
                .collect();
            if let Some(map) = document.as_object_mut() {
                map.insert("hidden".into(), Value::Array(hidden));
            }
        }
        Ok::<_, Failure>(document)
    })();
    answer(result)
}

async fn cycle(Json(request): Json<ParseRequest>) -> Response {
    let result = async {
        let ctx = commands::execution_context(None, false)?;
        commands::cycle_value(&request.protocol, request.options(), &request.text, &ctx).await
    }
    .await;
    answer(result)
}
