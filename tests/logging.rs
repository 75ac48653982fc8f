//! What the engine logs. Alone in its test binary: `tracing` caches per call site
//! whether anyone listens, and tests running beside this one without a subscriber
//! would make that cache say no.

use std::sync::{Arc, Mutex};

use tool_calling::engine::Engine;
use tool_calling::exec::ExecutionContext;
use tool_calling::tools::ToolProvider;
use tool_calling::tools::ToolRegistry;

#[path = "support/engine_tools.rs"]
mod engine_tools;
use engine_tools::{Calc, Text};
#[path = "support/vcp_block.rs"]
mod vcp_block;
use vcp_block::block;

fn engine() -> Engine {
    let registry = ToolRegistry::new();
    registry.register(Calc::tool_spec()).unwrap();
    registry.register(Text::tool_spec()).unwrap();
    Engine::new(Arc::new(registry))
}

/// A writer into a shared buffer, for reading what was logged.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Each call is logged: INFO with tool, status and duration; WARN for a failure, with
/// its kind and text; the parser's findings at DEBUG.
#[test]
fn every_call_is_logged_info_or_warn_and_the_parse_at_debug() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let reply = [
        block(&[("tool_name", "calc_add"), ("a", "2"), ("b", "40")]),
        block(&[("tool_name", "text_repeat"), ("message", "hi"), ("times", "99")]),
    ]
    .concat();
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(engine().run_turn(&reply, &ExecutionContext::default())).unwrap();
    });
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let line = |needle: &str| {
        logs.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle:?} in:\n{logs}"))
    };
    let ok = line("tool=calc_add");
    assert!(ok.contains("INFO") && ok.contains("status=\"success\"") && ok.contains("duration_ms="), "{ok}");
    let failed = line("tool=text_repeat");
    assert!(failed.contains("WARN") && failed.contains("error_kind=\"validation\""), "{failed}");
    assert!(failed.contains("error=") && failed.contains("times"), "the error's text: {failed}");
    assert!(line("reply parsed").contains("DEBUG"));
}

/// The gateway logs each request as a span with the protocol, the dialect `auto` found
/// and the calls, closed by an event with its total, upstream and added time.
#[cfg(feature = "gateway")]
#[test]
fn every_gateway_request_is_a_span_with_its_timings() {
    #[path = "../examples/support/replay_upstream.rs"]
    mod replay_upstream;
    use tool_calling::gateway::{Gateway, GatewayConfig};

    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let logs = || String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let upstream = replay_upstream::start(std::time::Duration::ZERO).await.unwrap();
            let gateway = Gateway::new(GatewayConfig::new(&upstream.url).protocol("auto")).unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
            let body = serde_json::json!({
                "model": "replay", "messages": [{"role": "user", "content": "replay:hermes_parallel"}],
                "tools": [{"type": "function", "function": {"name": "get_weather"}},
                          {"type": "function", "function": {"name": "get_time"}}],
            });
            let reply = reqwest::Client::new()
                .post(format!("http://{address}/v1/chat/completions"))
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(reply.contains("tool_calls"), "{reply}");
            // The closing event follows the reply's last byte: wait for it, boundedly.
            let wait = tokio::time::timeout(std::time::Duration::from_secs(10), async {
                while !logs().contains("gateway request done") {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            });
            assert!(wait.await.is_ok(), "no closing event: {}", logs());
        });
    });
    let logs = logs();
    let line = logs.lines().find(|l| l.contains("gateway request done")).unwrap();
    for field in [
        "gateway_request{",
        "protocol=auto",
        "model=replay",
        "dialect=\"hermes\"",
        "calls=2",
        "total_ms=",
        "upstream_ms=",
        "added_ms=",
    ] {
        assert!(line.contains(field), "{field} in {line}");
    }
}
