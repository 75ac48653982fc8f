//! REST tools against a real HTTP server on 127.0.0.1 (started by each test):
//! arguments placed in path, query, headers and body; secrets from the environment;
//! every failure mapped to its error kind; `Retry-After` honoured; configuration errors
//! that name the file, the tool and the field; and a VCP reply run through the engine.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::Engine;
use tool_calling::exec::{ExecutionContext, Executor, ExecutorOptions, ToolRetry};
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::rest::{RestConfigError, RestTools};
use tool_calling::{ErrorKind, ExecutionStatus};

#[path = "support/vcp_block.rs"]
mod vcp_block;
use vcp_block::block;

#[path = "../examples/support/http_server.rs"]
mod http_server;
use http_server::{Request, Response};

/// The variable the tests' bearer token is read from. Set once, before any tool is built.
const TOKEN_VAR: &str = "TOOL_CALLING_REST_TEST_TOKEN";
const TOKEN: &str = "s3cret-token-value";

fn set_token() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: the variable is set once, before any thread of this test binary reads the
    // environment through it, and never changed again.
    ONCE.call_once(|| unsafe { std::env::set_var(TOKEN_VAR, TOKEN) });
}

#[derive(Default)]
struct Seen {
    flaky_hits: AtomicUsize,
    notes: Mutex<Vec<(String, String)>>,
    headers: Mutex<Vec<HashMap<String, String>>>,
}

fn authorised(request: &Request) -> bool {
    request.header("authorization") == Some(&format!("Bearer {TOKEN}"))
}

fn weather(seen: &Seen, request: &Request, city: &str) -> Response {
    seen.headers.lock().unwrap().push(request.headers.iter().cloned().collect());
    if !authorised(request) {
        return Response::text(401, "missing or wrong bearer token");
    }
    let units = request.query("units").unwrap_or("metric");
    Response::json(200, &json!({ "city": city, "units": units, "temperature": 21 }))
}

fn add_note(seen: &Seen, request: &Request) -> Response {
    let author = request.header("x-author").unwrap_or("nobody").to_string();
    let Some(body) = request.json() else {
        return Response::text(400, "the body is not JSON");
    };
    let Some(text) = body.get("text").and_then(Value::as_str).filter(|t| !t.trim().is_empty()) else {
        return Response::text(422, "a note needs `text`");
    };
    seen.notes.lock().unwrap().push((text.to_string(), author.clone()));
    Response::text(201, format!("saved note {} by {author}", seen.notes.lock().unwrap().len()))
}

fn get_note(seen: &Seen, id: &str) -> Response {
    let Ok(id) = id.parse::<usize>() else {
        return Response::text(400, format!("not a note id: {id}"));
    };
    match seen.notes.lock().unwrap().get(id.wrapping_sub(1)) {
        Some((text, _)) => Response::text(200, text.clone()),
        None => Response::text(404, format!("no note {id}")),
    }
}

fn flaky(seen: &Seen) -> Response {
    if seen.flaky_hits.fetch_add(1, Ordering::SeqCst) == 0 {
        Response::text(503, "busy, come back").header("retry-after", "0")
    } else {
        Response::text(200, "fine now")
    }
}

async fn route(seen: Arc<Seen>, request: Request) -> Response {
    let segments = request.segments();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    match (request.method.as_str(), segments.as_slice()) {
        ("GET", ["api", "weather", city]) => weather(&seen, &request, city),
        ("POST", ["api", "notes"]) => add_note(&seen, &request),
        ("GET", ["api", "notes", id]) => get_note(&seen, id),
        ("GET", ["api", "flaky"]) => flaky(&seen),
        ("GET", ["api", "slow"]) => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Response::text(200, "too late")
        }
        ("GET", ["api", "big"]) => Response::text(200, "x".repeat(3000)),
        ("GET", ["api", "admin"]) => Response::text(403, "not for you"),
        _ => Response::new(404),
    }
}

/// Starts the server; returns its base URL and what it saw.
async fn server() -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let served = seen.clone();
    let address = http_server::spawn(move |request| route(served.clone(), request)).await.unwrap();
    (format!("http://{address}/api"), seen)
}

/// The configuration the tests use, for a server at `base`.
fn config(base: &str) -> String {
    format!(
        r#"
[[tools]]
id = "weather"
description = "Weather reports"
base_url = "{base}"
headers = {{ Authorization = "Bearer ${{{TOKEN_VAR}}}" }}

[[tools.methods]]
name = "today"
description = "Today's weather in a city"
path = "/weather/{{city}}"
parameters = {{ type = "object", properties = {{ city = {{ type = "string" }}, units = {{ type = "string", enum = ["metric", "imperial"] }} }}, required = ["city"] }}

[[tools]]
id = "anon_weather"
description = "The same, without a token"
base_url = "{base}"

[[tools.methods]]
name = "today"
path = "/weather/{{city}}"
parameters = {{ type = "object", properties = {{ city = {{ type = "string" }} }}, required = ["city"] }}

[[tools]]
id = "notes"
description = "A notebook"
base_url = "{base}"
timeout_ms = 200
max_response_bytes = 1000

[[tools.methods]]
name = "add"
description = "Save a note"
http_method = "POST"
path = "/notes"
header_params = {{ author = "X-Author" }}
parameters = {{ type = "object", properties = {{ text = {{ type = "string" }}, author = {{ type = "string" }} }}, required = ["text"] }}

[[tools.methods]]
name = "get"
description = "Read a note"
path = "/notes/{{id}}"
parameters = {{ type = "object", properties = {{ id = {{ type = "integer" }} }}, required = ["id"] }}

[[tools.methods]]
name = "flaky"
path = "/flaky"

[[tools.methods]]
name = "slow"
path = "/slow"

[[tools.methods]]
name = "big"
path = "/big"

[[tools.methods]]
name = "admin"
path = "/admin"
"#
    )
}

async fn engine(base: &str, retry: ToolRetry) -> Engine {
    set_token();
    let registry = ToolRegistry::new();
    for spec in RestTools::from_toml_str(&config(base)).unwrap().tool_specs().unwrap() {
        registry.register(spec).unwrap();
    }
    let mut options = ExecutorOptions::default();
    options.retry = retry;
    let executor = Executor::new(Arc::new(registry)).with_options(options);
    Engine::new(executor.registry().clone()).with_executor(executor)
}

fn context() -> ExecutionContext {
    let mut config = ToolCallConfig::default();
    config.parallel_execution = false;
    ExecutionContext::new(config)
}

#[tokio::test]
async fn a_vcp_reply_calls_rest_tools_through_the_engine() {
    let (base, seen) = server().await;
    let engine = engine(&base, ToolRetry::default()).await;
    // The tools are in the prompt like any other.
    let prompt = engine.declarations(&ExecutionContext::default()).unwrap();
    let prompt = prompt.as_prompt().unwrap();
    assert!(prompt.contains("tool_name:「始」weather「末」") && prompt.contains("Save a note"), "{prompt}");

    let reply = [
        "Let me check.\n".to_string(),
        block(&[("tool_name", "weather_today"), ("city", "São Paulo"), ("units", "imperial")]),
        block(&[("tool_name", "notes_add"), ("text", "buy milk"), ("author", "ana")]),
        block(&[("tool_name", "notes_get"), ("id", "1")]),
        block(&[("tool_name", "notes_get"), ("id", "7")]),
    ]
    .concat();
    let cycle = engine.run_turn(&reply, &context()).await.unwrap();
    let results = &cycle.execution_results;
    assert_eq!(results.len(), 4);

    // Path (percent-encoded and decoded back by the server), query, secret header.
    assert_eq!(results[0].status, ExecutionStatus::Success, "{results:?}");
    let weather: Value = serde_json::from_str(&results[0].result).unwrap();
    assert_eq!(weather, json!({ "city": "São Paulo", "units": "imperial", "temperature": 21 }));
    // JSON body and a parameter sent as a header.
    assert_eq!(results[1].result, "saved note 1 by ana");
    assert_eq!(seen.notes.lock().unwrap().as_slice(), [("buy milk".to_string(), "ana".to_string())]);
    // An integer argument in the path.
    assert_eq!(results[2].result, "buy milk");
    // An HTTP error comes back to the model as an error result of the right kind.
    assert_eq!(results[3].status, ExecutionStatus::Error);
    assert_eq!(results[3].error_kind, Some(ErrorKind::NotFound));
    assert_eq!(results[3].result, "GET /notes/{id} answered HTTP 404 Not Found: no note 7");
    // ... and in the text fed back.
    let fed_back = cycle.result_text();
    assert!(fed_back.contains("status:「始」error「末」") && fed_back.contains("no note 7"), "{fed_back}");
    // The secret went to the server and nowhere else.
    assert!(!fed_back.contains(TOKEN) && !format!("{cycle:?}").contains(TOKEN));
    assert!(seen.headers.lock().unwrap()[0].get("authorization").is_some_and(|v| v.ends_with(TOKEN)));
}

/// Everything logged while REST tools run, at every level and from every crate
/// (reqwest and hyper included).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bearer token from the environment reaches the server, and no log line, at any
/// level, from this crate or the HTTP stack, on success or on a refusal.
#[tokio::test(flavor = "current_thread")]
async fn the_secret_never_reaches_the_logs() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let (base, seen) = server().await;
    let engine = engine(&base, ToolRetry::default()).await;
    let reply = [
        block(&[("tool_name", "weather_today"), ("city", "Lima")]),
        block(&[("tool_name", "notes_add"), ("text", "x"), ("author", "ana")]),
    ]
    .concat();
    let cycle = engine.run_turn(&reply, &context()).await.unwrap();
    assert_eq!(cycle.execution_results.len(), 2);
    assert!(seen.headers.lock().unwrap()[0].get("authorization").is_some_and(|v| v.ends_with(TOKEN)));
    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    // The capture works: the calls themselves are logged.
    assert!(logs.contains("tool=weather_today") && logs.contains("tool=notes_add"), "{logs}");
    assert!(!logs.contains(TOKEN), "the token is in the logs:\n{logs}");
}

#[tokio::test]
async fn each_failure_has_its_kind() {
    let (base, _) = server().await;
    let engine = engine(&base, ToolRetry::default()).await;
    let reply = [
        block(&[("tool_name", "anon_weather_today"), ("city", "Oslo")]),
        block(&[("tool_name", "notes_admin")]),
        block(&[("tool_name", "notes_add"), ("author", "ana")]),
        block(&[("tool_name", "notes_add"), ("author", "ana"), ("text", " ")]),
        block(&[("tool_name", "notes_slow")]),
        block(&[("tool_name", "notes_flaky")]),
        block(&[("tool_name", "notes_big")]),
    ]
    .concat();
    let cycle = engine.run_turn(&reply, &context()).await.unwrap();
    let kinds: Vec<Option<ErrorKind>> = cycle.execution_results.iter().map(|r| r.error_kind).collect();
    assert_eq!(
        kinds,
        [
            Some(ErrorKind::Permission), // 401
            Some(ErrorKind::Permission), // 403
            Some(ErrorKind::Validation), // the schema: `text` is required
            Some(ErrorKind::Validation), // the server's 422 for a blank note
            Some(ErrorKind::Timeout),    // the tool's 200 ms
            Some(ErrorKind::Network),    // 503, and no retries configured
            None,
        ],
        "{:#?}",
        cycle.execution_results
    );
    let big = &cycle.execution_results[6].result;
    assert!(cycle.execution_results[3].result.contains("HTTP 422"));
    assert!(
        big.starts_with(&"x".repeat(1000)) && big.ends_with("[… 2000 more bytes of the response were cut]")
    );
}

#[tokio::test]
async fn a_retryable_failure_is_retried_and_then_succeeds() {
    let (base, seen) = server().await;
    let engine = engine(&base, ToolRetry::new(2, Duration::from_millis(1))).await;
    let cycle = engine.run_turn(&block(&[("tool_name", "notes_flaky")]), &context()).await.unwrap();
    assert_eq!(cycle.execution_results[0].result, "fine now");
    assert_eq!(seen.flaky_hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_server_that_is_gone_is_a_network_error() {
    // Bind a port, then free it: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/api", listener.local_addr().unwrap());
    drop(listener);
    let engine = engine(&base, ToolRetry::default()).await;
    let cycle = engine.run_turn(&block(&[("tool_name", "notes_flaky")]), &context()).await.unwrap();
    let result = &cycle.execution_results[0];
    assert_eq!(result.error_kind, Some(ErrorKind::Network), "{result:?}");
    assert!(result.result.starts_with("GET /flaky failed: "), "{}", result.result);
}

fn config_error(file_name: &str, text: &str) -> RestConfigError {
    let dir = std::env::temp_dir().join(format!("tool-calling-rest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(file_name);
    std::fs::File::create(&path).unwrap().write_all(text.as_bytes()).unwrap();
    let error = RestTools::from_file(&path).and_then(|tools| tools.tool_specs().map(|_| ())).unwrap_err();
    assert_eq!(error.file.as_deref(), Some(path.as_path()));
    error
}

#[test]
fn a_bad_config_names_the_file_the_tool_and_the_field() {
    let tool = |method: &str| {
        format!(
            "[[tools]]\nid = \"books\"\nbase_url = \"http://127.0.0.1:1/\"\n\n[[tools.methods]]\nname = \"find\"\n{method}\n"
        )
    };
    // A value of the wrong kind (found by deserialising).
    let e = config_error("a.toml", &tool("http_method = 3"));
    assert_eq!((e.tool.as_deref(), e.field.as_str()), (Some("books"), "methods[0].http_method"), "{e}");
    // A misspelt field.
    let e = config_error("b.toml", &tool("pth = \"/x\""));
    assert_eq!(e.tool.as_deref(), Some("books"), "{e}");
    assert!(e.message.contains("pth"), "{e}");
    // Found when building.
    let e = config_error("c.toml", &tool("http_method = \"GTE\""));
    assert_eq!((e.tool.as_deref(), e.field.as_str()), (Some("books"), "methods[0].http_method"));
    assert!(
        e.to_string().contains("c.toml, tool `books`, field `methods[0].http_method`: `GTE` is not one of")
    );
    let e = config_error("d.toml", &tool("path = \"/books/{isbn}\""));
    assert_eq!(e.field, "methods[0].path");
    assert!(e.message.contains("`isbn` is not a parameter"), "{e}");
    let e = config_error("e.toml", &tool("query = [\"q\"]"));
    assert_eq!(e.field, "methods[0].query");
    let e = config_error("f.toml", "[[tools]]\nid = \"x\"\nbase_url = \"ftp://host/\"\nmethods = []\n");
    assert_eq!((e.tool.as_deref(), e.field.as_str()), (Some("x"), "base_url"));
    // A tool without an id is named by its position; JSON works the same way.
    let e = config_error("g.json", r#"{"tools": [{"base_url": "http://h/", "methods": []}]}"#);
    assert_eq!(e.tool.as_deref(), Some("tools[0]"), "{e}");
    assert!(e.message.contains("id"), "{e}");
    let e = config_error("h.json", "{ not json");
    assert!(e.message.starts_with("not valid JSON"), "{e}");
    // A missing secret names its variable.
    let e = config_error(
        "i.toml",
        "[[tools]]\nid = \"s\"\nbase_url = \"http://h/\"\nheaders = { \"X-Key\" = \"${TOOL_CALLING_TEST_UNSET_VARIABLE}\" }\nmethods = []\n",
    );
    assert_eq!(e.field, "headers.X-Key");
    assert!(e.message.contains("`TOOL_CALLING_TEST_UNSET_VARIABLE` is not set"), "{e}");
}
