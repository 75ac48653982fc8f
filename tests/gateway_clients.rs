//! The gateway driven by the clients its users run: the official `openai` Python package
//! (Chat Completions and Responses) and the `anthropic` one (Messages), from PyPI, in a
//! virtual environment made under the target directory on first use. The script
//! (`tests/gateway/clients.py`) checks calls, streamed and not, in VCP, Hermes, Mistral
//! and pythonic replies, a second round that carries the results back upstream, the
//! `tool_choice` forms, and upstream faults.

#![cfg(feature = "gateway")]

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use tool_calling::gateway::{Gateway, GatewayConfig};

#[path = "../examples/support/replay_upstream.rs"]
mod replay_upstream;

/// The client versions the script is checked against.
const PACKAGES: [&str; 2] = ["openai==3.57.0", "anthropic==2.14.0"];

/// The virtual environment's Python, with the clients installed.
fn python() -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gateway-clients-venv");
    let python = venv.join("bin").join("python");
    let ready = Command::new(&python)
        .args(["-c", "import openai, anthropic, sys; sys.exit(0 if (openai.__version__, anthropic.__version__) == ('3.57.0', '2.14.0') else 1)"])
        .status()
        .is_ok_and(|s| s.success());
    if ready {
        return python;
    }
    let run = |command: &mut Command| {
        let output = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
        assert!(output.status.success(), "{command:?}: {}", String::from_utf8_lossy(&output.stderr));
    };
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    run(Command::new(&python)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .args(PACKAGES));
    python
}

async fn serve(config: GatewayConfig) -> String {
    let gateway = Gateway::new(config).expect("a valid configuration");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
    format!("http://{address}/v1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_clients_get_parsed_tool_calls() {
    let python = tokio::task::spawn_blocking(python).await.expect("the environment");
    let upstream = replay_upstream::start(Duration::from_millis(1)).await.expect("the replay server");
    let mut gateways = serde_json::Map::new();
    for protocol in ["vcp", "hermes", "mistral", "pythonic"] {
        let url = serve(GatewayConfig::new(&upstream.url).protocol(protocol)).await;
        gateways.insert(protocol.to_string(), Value::String(url));
    }
    let quick = serve(GatewayConfig::new(&upstream.url).timeout(Duration::from_millis(500))).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/gateway/clients.py");
    let mut command = tokio::process::Command::new(python);
    command.arg(script).env("GATEWAYS", json!(gateways).to_string()).env("QUICK", quick);
    let output = tokio::time::timeout(Duration::from_secs(300), command.output())
        .await
        .expect("the script ends")
        .expect("the script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the client script failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("all checks passed"), "{stdout}");
    println!("{stdout}");
    // The second rounds reached the upstream with the results in the protocols' text.
    let bodies = upstream.requests();
    let has = |needle: &str| bodies.iter().any(|b| b["messages"].to_string().contains(needle));
    assert!(has("<tool_response>") && has("[TOOL_RESULTS]"), "hermes and mistral results");
}
