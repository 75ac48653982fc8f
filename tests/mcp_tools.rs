//! MCP tools against real servers on this machine:
//! - the reference server `@modelcontextprotocol/server-everything` (from npm, pinned
//!   in `tests/mcp/package-lock.json`; the first test that needs it installs it into
//!   `tests/mcp/node_modules` with `npm ci`), over stdio;
//! - a server written with rmcp in this file, over streamable HTTP on 127.0.0.1, which
//!   records the cancellations it receives.
//!
//! One VCP reply calls a REST tool and MCP tools through the same engine.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam, ContentBlock,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::Engine;
use tool_calling::exec::ExecutionContext;
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::mcp::{McpServer, McpTransport};
use tool_calling::tools::rest::RestTools;
use tool_calling::{ContentPart, ErrorKind, ExecutionStatus};

#[path = "support/vcp_block.rs"]
mod vcp_block;
use vcp_block::block;

#[path = "../examples/support/http_server.rs"]
mod http_server;
use http_server::{Request, Response};

/// The reference server over stdio: its entry point in `tests/mcp/node_modules`,
/// installed on first use (see [`install_everything`]).
fn everything() -> McpTransport {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match INSTALLED.get_or_init(install_everything) {
        Ok(script) => {
            McpTransport::command("node", [script.to_string_lossy().into_owned(), "stdio".to_string()])
        }
        Err(why) => panic!("{why}"),
    }
}

/// What installs the reference server by hand (and what the tests run themselves).
const NPM_CI: &str = "npm ci --prefix tests/mcp --no-audit --no-fund";

/// Installs the reference server, at the version pinned in `tests/mcp/package-lock.json`,
/// unless that install is already there: `npm ci` in `tests/mcp`, once, however many
/// tests (threads, and test processes) ask at the same time. The tests of one process
/// share the answer through a `OnceLock`; processes take turns through a lock
/// directory, `tests/mcp/.install.lock` (`mkdir` is atomic), and the one that gets it
/// first installs while the others wait and then find it done. An install counts as
/// done when `node_modules` holds a copy of the lock file it was made from, written
/// only after `npm ci` succeeded, so an install that was cut off is made again.
fn install_everything() -> Result<PathBuf, String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    let script = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let stamp = dir.join("node_modules/.installed-from-package-lock.json");
    let pinned = std::fs::read(dir.join("package-lock.json"))
        .map_err(|e| format!("tests/mcp/package-lock.json: {e}"))?;
    let done = || script.exists() && std::fs::read(&stamp).is_ok_and(|installed| installed == pinned);
    if done() {
        return Ok(script);
    }
    let _lock = InstallLock::acquire(&dir.join(".install.lock"))?;
    if done() {
        return Ok(script); // another test process installed it while this one waited
    }
    eprintln!("installing the MCP reference server for the tests: {NPM_CI}");
    let output = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(&dir)
        .output()
        .map_err(|e| {
            format!(
                "the MCP tests run the reference server @modelcontextprotocol/server-everything from npm, \
                 and `npm` could not be started ({e}): install Node.js (20 or later) with npm, or run \
                 `{NPM_CI}` yourself"
            )
        })?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = said.lines().rev().take(20).collect();
        return Err(format!(
            "`{NPM_CI}` failed ({}), so the MCP reference server is not installed; npm said:\n{}",
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    std::fs::write(&stamp, &pinned).map_err(|e| format!("{}: {e}", stamp.display()))?;
    if !script.exists() {
        return Err(format!("`{NPM_CI}` succeeded but {} is missing", script.display()));
    }
    Ok(script)
}

/// A lock shared by processes: a directory that exists while one of them holds it
/// (`create_dir` fails for all but one), with the holder's process id inside. A lock
/// left by a process that died (on Linux: its id is gone from `/proc`), or older than
/// any install takes, is broken.
struct InstallLock(PathBuf);

impl InstallLock {
    fn acquire(path: &Path) -> Result<Self, String> {
        const GIVE_UP: Duration = Duration::from_secs(20 * 60);
        let started = std::time::Instant::now();
        loop {
            match std::fs::create_dir(path) {
                Ok(()) => {
                    let _ = std::fs::write(path.join("pid"), std::process::id().to_string());
                    return Ok(InstallLock(path.to_path_buf()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if Self::is_stale(path) {
                        let _ = std::fs::remove_dir_all(path);
                        continue;
                    }
                    if started.elapsed() > GIVE_UP {
                        return Err(format!(
                            "waited {} minutes for {} (another test process installing the MCP \
                             reference server); if none is, remove it",
                            GIVE_UP.as_secs() / 60,
                            path.display()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
    }

    fn is_stale(path: &Path) -> bool {
        let age = std::fs::metadata(path).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
        if age.is_some_and(|age| age > Duration::from_secs(15 * 60)) {
            return true;
        }
        let holder = std::fs::read_to_string(path.join("pid")).ok();
        match holder.as_deref().map(str::trim) {
            // On Linux a process that has ended has no /proc entry.
            Some(pid) if Path::new("/proc/self").exists() => !Path::new("/proc").join(pid).exists(),
            Some(_) => false,
            // Created but never given an id: the holder died in between (or is about to
            // write it: give it a moment).
            None => age.is_some_and(|age| age > Duration::from_secs(10)),
        }
    }
}

impl Drop for InstallLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn context(timeout_ms: u64) -> ExecutionContext {
    let mut config = ToolCallConfig::default();
    config.timeout_ms = timeout_ms;
    config.parallel_execution = false;
    ExecutionContext::new(config)
}

/// A REST endpoint for the mixed reply: `GET /api/greet/{name}`.
async fn rest_server() -> String {
    let address = http_server::spawn(|request: Request| async move {
        match request.segments().as_slice() {
            [api, greet, name] if api == "api" && greet == "greet" => {
                Response::text(200, format!("hello, {name}"))
            }
            _ => Response::new(404),
        }
    })
    .await
    .unwrap();
    format!("http://{address}/api")
}

#[tokio::test]
async fn a_vcp_reply_calls_a_rest_tool_and_the_reference_mcp_server() {
    let server = McpServer::connect("everything", everything()).await.unwrap();
    let mcp_spec = server.tool_spec().await.unwrap();
    let names: Vec<&str> = mcp_spec.methods.iter().map(|m| m.definition.name.as_str()).collect();
    for expected in ["echo", "get-sum", "get-tiny-image", "get-structured-content", "gzip-file-as-resource"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let base = rest_server().await;
    let rest = format!(
        "[[tools]]\nid = \"greeter\"\nbase_url = \"{base}\"\n[[tools.methods]]\nname = \"greet\"\n\
         description = \"Greet someone\"\npath = \"/greet/{{name}}\"\n\
         parameters = {{ type = \"object\", properties = {{ name = {{ type = \"string\" }} }}, required = [\"name\"] }}\n\
         [[tools.methods]]\nname = \"farewell\"\ndescription = \"Not served\"\npath = \"/farewell\"\n"
    );
    let registry = ToolRegistry::new();
    registry.register(mcp_spec).unwrap();
    for spec in RestTools::from_toml_str(&rest).unwrap().tool_specs().unwrap() {
        registry.register(spec).unwrap();
    }
    // The engine knows every built-in protocol, the native ones included.
    let engine = Engine::new(Arc::new(registry));
    // The MCP tools are in the prompt, with their input schemas.
    let prompt = engine.declarations(&ExecutionContext::default()).unwrap();
    let prompt = prompt.as_prompt().unwrap();
    assert!(
        prompt.contains("tool_name:「始」everything「末」") && prompt.contains("command:「始」get-sum「末」")
    );
    // ... and in the native tool lists, under each provider's naming rules.
    for protocol in ["openai", "anthropic", "gemini"] {
        let config = ToolCallConfig::default().with_protocol(protocol);
        let declared = engine.declarations(&ExecutionContext::new(config)).unwrap();
        let native = serde_json::to_string(declared.as_native().unwrap()).unwrap();
        assert!(native.contains("get-sum") || native.contains("get_sum"), "{protocol}: {native}");
        assert!(native.contains("\"greet"), "{protocol}: {native}");
    }

    let reply = [
        block(&[("tool_name", "greeter_greet"), ("name", "Ana")]),
        // An HTTP error (the server has no such route), fed back as an error result.
        block(&[("tool_name", "greeter_farewell")]),
        block(&[("tool_name", "everything_get-sum"), ("a", "2"), ("b", "40")]),
        block(&[("tool_name", "everything"), ("command", "echo"), ("message", "「quoted」 text")]),
        block(&[("tool_name", "everything_get-tiny-image")]),
        block(&[("tool_name", "everything_get-structured-content"), ("location", "New York")]),
        // The server's own error (isError: the fetch fails), fed back as an error result.
        block(&[
            ("tool_name", "everything_gzip-file-as-resource"),
            ("name", "x.gz"),
            ("data", "http://127.0.0.1:1/x"),
        ]),
        // Arguments the server's schema refuses never reach it.
        block(&[("tool_name", "everything_get-sum"), ("a", "two"), ("b", "40")]),
    ]
    .concat();
    let cycle = engine.run_turn(&reply, &context(30_000)).await.unwrap();
    let mut results = cycle.execution_results.clone();
    assert_eq!(results.len(), 8);
    assert_eq!(results[0].result, "hello, Ana");
    let http_error = results.remove(1);
    assert_eq!(http_error.error_kind, Some(ErrorKind::NotFound), "{http_error:?}");
    assert!(http_error.result.starts_with("GET /farewell answered HTTP 404"), "{http_error:?}");
    assert_eq!(results[1].result, "The sum of 2 and 40 is 42.");
    assert_eq!(results[2].result, "Echo: 「quoted」 text");
    let image = results[3].parts.iter().find(|p| matches!(p, ContentPart::Image { .. }));
    assert!(
        matches!(image, Some(ContentPart::Image { mime_type, data_base64 }) if mime_type == "image/png" && data_base64.starts_with("iVBOR")),
        "{:?}",
        results[3]
    );
    let weather: Value = serde_json::from_str(&results[4].result).unwrap();
    assert!(weather.get("temperature").is_some(), "{weather}");
    assert_eq!(results[5].status, ExecutionStatus::Error);
    assert_eq!(results[5].error_kind, Some(ErrorKind::Execution));
    assert!(!results[5].result.is_empty());
    assert_eq!(results[6].error_kind, Some(ErrorKind::Validation), "{:?}", results[6]);
    // The results go back to the model in the VCP text, both errors among them.
    let fed_back = cycle.result_text();
    assert!(fed_back.contains("The sum of 2 and 40 is 42."), "{fed_back}");
    assert!(fed_back.contains("answered HTTP 404") && fed_back.contains(&results[5].result), "{fed_back}");
}

/// A server written with rmcp: `slow` waits until it is cancelled (and records the
/// cancellation), `fail` answers with `isError`, `add` adds.
#[derive(Clone, Default)]
struct TestServer {
    cancelled: Arc<Mutex<Vec<CancelledNotificationParam>>>,
    slow_started: Arc<Notify>,
    got_cancel: Arc<Notify>,
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = |value: Value| Arc::new(value.as_object().cloned().unwrap_or_default());
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("slow", "Never finishes on its own", schema(json!({"type": "object"}))),
            Tool::new("fail", "Always fails", schema(json!({"type": "object"}))),
            Tool::new(
                "add",
                "Add two numbers",
                schema(
                    json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
                ),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            "slow" => {
                self.slow_started.notify_one();
                context.ct.cancelled().await;
                Err(ErrorData::internal_error("cancelled", None))
            }
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("the disk is full")]).into()),
            "add" => {
                let args = request.arguments.unwrap_or_default();
                let sum = args.get("a").and_then(Value::as_f64).unwrap_or(0.0)
                    + args.get("b").and_then(Value::as_f64).unwrap_or(0.0);
                Ok(CallToolResult::success(vec![ContentBlock::text(sum.to_string())]).into())
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.cancelled.lock().unwrap().push(notification);
        self.got_cancel.notify_one();
    }
}

/// Serves `handler` over streamable HTTP on 127.0.0.1; returns the MCP endpoint.
async fn serve_http(handler: TestServer) -> (String, tokio::task::JoinHandle<()>) {
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    // A tower service, run by hyper (it answers at every path).
    let service = hyper_util::service::TowerToHyperService::new(service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(async move { http_server::serve_hyper(listener, service).await.unwrap() });
    (format!("http://{address}/mcp"), task)
}

#[tokio::test]
async fn over_http_errors_come_back_and_a_timeout_is_sent_as_a_cancellation() {
    let handler = TestServer::default();
    let (url, _server) = serve_http(handler.clone()).await;
    let server = McpServer::connect("test", McpTransport::http(url)).await.unwrap();
    let registry = ToolRegistry::new();
    registry.register(server.tool_spec().await.unwrap()).unwrap();
    let engine = Engine::new(Arc::new(registry));

    let reply = [
        block(&[("tool_name", "test_add"), ("a", "2"), ("b", "40")]),
        block(&[("tool_name", "test_fail")]),
        block(&[("tool_name", "test_slow")]),
    ]
    .concat();
    // 1 s for each call: `slow` runs out of it.
    let cycle = engine.run_turn(&reply, &context(1_000)).await.unwrap();
    let results = &cycle.execution_results;
    assert_eq!(results[0].result, "42");
    assert_eq!(
        (results[1].error_kind, results[1].result.as_str()),
        (Some(ErrorKind::Execution), "the disk is full")
    );
    assert_eq!(results[2].error_kind, Some(ErrorKind::Timeout), "{:?}", results[2]);
    // The server hears that the call was given up.
    tokio::time::timeout(Duration::from_secs(10), handler.got_cancel.notified()).await.unwrap();
    assert_eq!(handler.cancelled.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_server_that_dies_fails_the_calls_in_flight_and_can_be_reconnected() {
    // The reference server, started through a shell that writes down its process id.
    let McpTransport::Command { args, .. } = everything() else { unreachable!() };
    let pid_file = std::env::temp_dir().join(format!("tool-calling-mcp-{}.pid", std::process::id()));
    let script = format!("echo $$ > '{}'; exec node '{}' stdio", pid_file.display(), args[0]);
    let server = McpServer::connect("everything", McpTransport::command("sh", ["-c".to_string(), script]))
        .await
        .unwrap();
    let registry = ToolRegistry::new();
    registry.register(server.tool_spec().await.unwrap()).unwrap();
    let engine = Arc::new(Engine::new(Arc::new(registry)));

    // A long call in flight when the server is killed.
    let call = tokio::spawn({
        let engine = engine.clone();
        let reply = block(&[
            ("tool_name", "everything_trigger-long-running-operation"),
            ("duration", "30"),
            ("steps", "3"),
        ]);
        async move { engine.run_turn(&reply, &context(60_000)).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let killed = std::process::Command::new("kill").args(["-9", pid.trim()]).status().unwrap();
    assert!(killed.success());
    let cycle = tokio::time::timeout(Duration::from_secs(20), call).await.unwrap().unwrap().unwrap();
    let result = &cycle.execution_results[0];
    assert_eq!(result.error_kind, Some(ErrorKind::Network), "{result:?}");
    assert!(result.result.contains("MCP server `everything`"), "{result:?}");

    // A new session (a new process); the registered tools use it.
    server.reconnect().await.unwrap();
    let cycle = engine
        .run_turn(&block(&[("tool_name", "everything_get-sum"), ("a", "1"), ("b", "2")]), &context(30_000))
        .await
        .unwrap();
    assert_eq!(cycle.execution_results[0].result, "The sum of 1 and 2 is 3.");
    let _ = std::fs::remove_file(pid_file);
}

/// Tools of this crate, served over MCP.
fn served_registry(wipes: Arc<std::sync::atomic::AtomicUsize>) -> tool_calling::exec::Executor {
    use tool_calling::ToolError;
    use tool_calling::tools::MethodDefinition;
    use tool_calling::tools::{BoxFuture, MethodSpec, ToolOutput, ToolSpec};
    let registry = ToolRegistry::new();
    let add = |_, args: tool_calling::tools::ArgMap| {
        let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
        Box::pin(async move { Ok(ToolOutput::Text(sum.to_string())) })
            as BoxFuture<'static, Result<ToolOutput, ToolError>>
    };
    let wipe = move |_, _| {
        wipes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { Ok(ToolOutput::Text("wiped".into())) })
            as BoxFuture<'static, Result<ToolOutput, ToolError>>
    };
    let schema = json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]});
    registry
        .register(
            ToolSpec::stateless("calc", "Calculator")
                .with_method(MethodSpec::new(
                    MethodDefinition::new("add", "Add two numbers").with_parameters(schema),
                    add,
                ))
                .with_method(MethodSpec::new(MethodDefinition::new("wipe", "Wipe the memory"), wipe))
                .with_method(
                    MethodSpec::new(MethodDefinition::new("reset", "Internal"), |_, _| {
                        Box::pin(async { Ok(ToolOutput::Text("reset".into())) })
                            as BoxFuture<'static, Result<ToolOutput, ToolError>>
                    })
                    .agent_callable(false),
                ),
        )
        .unwrap();
    tool_calling::exec::Executor::new(Arc::new(registry)).with_policy(
        |call: &tool_calling::exec::PreparedCall| {
            if call.method == "wipe" {
                tool_calling::exec::PolicyDecision::Deny("wiping is not allowed".into())
            } else {
                tool_calling::exec::PolicyDecision::Allow
            }
        },
    )
}

#[tokio::test]
async fn an_rmcp_client_lists_and_calls_this_crates_tools_over_http() {
    use rmcp::ServiceExt;
    let wipes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server =
        tool_calling::exec::McpToolServer::new(served_registry(wipes.clone())).with_name("calc-server");
    let service = hyper_util::service::TowerToHyperService::new(server.http_service());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { http_server::serve_hyper(listener, service).await.unwrap() });

    // rmcp's own client.
    let client =
        ().serve(rmcp::transport::StreamableHttpClientTransport::from_uri(url.clone())).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["calc_add", "calc_wipe"], "the internal method is not offered");
    assert_eq!(tools[0].input_schema.get("required"), Some(&json!(["a", "b"])));
    let text = |result: &CallToolResult| -> String {
        let value = serde_json::to_value(result).unwrap();
        value["content"][0]["text"].as_str().unwrap_or_default().to_string()
    };
    let args = |v: Value| v.as_object().cloned().unwrap();
    let sum = client
        .call_tool(CallToolRequestParams::new("calc_add").with_arguments(args(json!({"a": 2, "b": 40}))))
        .await
        .unwrap();
    assert_eq!((text(&sum), sum.is_error.unwrap_or(false)), ("42".to_string(), false));
    // The same checks as for a model: the schema, the policy, internal methods.
    let invalid = client
        .call_tool(CallToolRequestParams::new("calc_add").with_arguments(args(json!({"a": "two"}))))
        .await
        .unwrap();
    assert_eq!(invalid.is_error, Some(true));
    assert!(text(&invalid).starts_with("invalid arguments: "), "{}", text(&invalid));
    let denied = client.call_tool(CallToolRequestParams::new("calc_wipe")).await.unwrap();
    assert_eq!(denied.is_error, Some(true));
    assert!(text(&denied).contains("refused by the security policy: wiping is not allowed"));
    assert_eq!(wipes.load(std::sync::atomic::Ordering::SeqCst), 0, "a refused call never runs");
    let internal = client.call_tool(CallToolRequestParams::new("calc_reset")).await.unwrap();
    assert!(text(&internal).contains("may not be called by a model"), "{}", text(&internal));
    client.cancel().await.unwrap();

    // And this crate's own client, through a VCP reply: tools served by one engine's
    // registry, called by another engine's model.
    let remote = McpServer::connect("remote", McpTransport::http(url)).await.unwrap();
    let registry = ToolRegistry::new();
    registry.register(remote.tool_spec().await.unwrap()).unwrap();
    let engine = Engine::new(Arc::new(registry));
    let cycle = engine
        .run_turn(&block(&[("tool_name", "remote_calc_add"), ("a", "1.5"), ("b", "2")]), &context(5_000))
        .await
        .unwrap();
    assert_eq!(cycle.execution_results[0].result, "3.5");
}
