//! The gateway under load, over real HTTP on loopback: the same streamed conversations
//! sent straight to a model server and through the gateway, side by side, in one run.
//!
//! The model server is the replay upstream (`examples/support/replay_upstream.rs`): an
//! OpenAI-compatible Chat Completions server streaming recorded text (reasoning, some
//! prose, then two tool calls in the protocol's markup), pausing `GATEWAY_LOAD_PAUSE_MS`
//! (default 5) before every chunk. It runs in this process, beside the clients (reqwest,
//! one shared client per side, HTTP/1.1, connections kept alive). The gateway runs in a
//! CHILD process (this binary, re-executed with `GATEWAY_LOAD_CHILD=<upstream URL>`: it
//! serves `Gateway::router()` on a free port and prints the address), so that its memory
//! can be read on its own (`VmRSS` in `/proc/<pid>/status`).
//!
//! Phases, all with `GATEWAY_LOAD_N` (default 1,000) conversations started at once:
//! 1. **memory**: the child's RSS when idle (after a few warm-up requests), then with N
//!    streams open through it at once (the `fault_slow` reply: some text, then the
//!    upstream keeps the stream open and silent), sampled once every stream has
//!    delivered its text; `(RSS_open - RSS_idle) / N` is the memory per open stream;
//! 2. **warm-up**: one unmeasured round per side (connections opened, pools filled);
//! 3. **direct**: N conversations (`stream: true`, no tools) to the upstream;
//! 4. **gateway**: the same N conversations through the gateway, with `tools`
//!    (get_weather, get_time), protocol `hermes` for `hermes_parallel` (`vcp` for
//!    `vcp_parallel`; `GATEWAY_LOAD_SCENARIO` picks one), the child's RSS sampled every
//!    10 ms for its peak.
//!
//! Every conversation records, relative to its own request start, the arrival of every
//! `reasoning_content` / `content` chunk and the text offset it completes, and (through
//! the gateway) the arrival of the first `delta.tool_calls`.
//!
//! **Added latency per chunk.** Directly, the raw text is one timeline: the reasoning,
//! then the content (markup included); an offset in it "arrived" with the first chunk
//! that reached it. Through the gateway the same prose comes back without the call
//! markup (and `<think>` moved to reasoning), so each chunk the gateway sends is located
//! in the raw text (right after the previous chunk's match when it follows on, else by
//! searching forward): the raw offset its last character completes. Two figures, both
//! over every aligned chunk of every gateway conversation:
//! - *paired*: its arrival minus the arrival of the same raw offset in the direct
//!   conversation of the same index (both started at once, in rounds of the same size);
//! - *vs. direct median*: its arrival minus the median, over all direct conversations,
//!   of the arrival of that raw offset (pairing noise removed).
//!
//! **Time to the first call.** Through the gateway: the first `delta.tool_calls` chunk.
//! Directly: the arrival of the end of the first call's markup (`</tool_call>`,
//! `<<<[END_TOOL_REQUEST]>>>`), the earliest a client parsing the text itself could have
//! the whole call.
//!
//! **Throughput**: conversations and chunks (events carrying reasoning, content or tool
//! calls) per second of wall time, from the round's start to its last conversation's end.
//!
//! The machine is shared: clients, upstream and gateway (two processes) run on the same
//! cores, so the gateway's figures include its competition with the other two for CPU.
//!
//! `cargo bench -p tool-calling-benches --bench gateway_load` runs it (about 15 s on two
//! cores at the defaults), prints a table and writes `target/gateway_load.json`
//! (`GATEWAY_LOAD_JSON` to write elsewhere). `-- --test` (or running it without
//! `--bench`, as `cargo test --benches` does) is a smoke run of 20 conversations that
//! writes no JSON; `GATEWAY_LOAD_DUMP=1` also prints the first conversation of each side
//! piece by piece, with the alignment. N conversations need about 3 N + 512 open files (sockets, both ends
//! on loopback): the run checks the limit first; raise it with `ulimit -n 8192`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_calling::gateway::{Gateway, GatewayConfig};

#[path = "../examples/support/replay_upstream.rs"]
mod replay_upstream;

/// Set in the child: the upstream's URL; the child serves the gateway.
const CHILD_ENV: &str = "GATEWAY_LOAD_CHILD";
/// Set in the child: the gateway's protocol.
const PROTOCOL_ENV: &str = "GATEWAY_LOAD_PROTOCOL";
/// What the child prints, before its URL.
const LISTENING: &str = "gateway_load child listening on ";
/// The longest one conversation may take before the run calls it a hang.
const BOUND: Duration = Duration::from_secs(60);
/// Conversations in the smoke run.
const SMOKE_N: usize = 20;

fn main() {
    if let Ok(upstream) = std::env::var(CHILD_ENV) {
        child(&upstream);
        return;
    }
    let settings = match Settings::read() {
        Ok(settings) => settings,
        Err(error) => fail(&error),
    };
    if let Err(error) = run(&settings) {
        fail(&error);
    }
}

fn fail(error: &str) -> ! {
    eprintln!("gateway_load: error: {error}");
    std::process::exit(1);
}

struct Settings {
    n: usize,
    pause_ms: u64,
    scenario: String,
    protocol: String,
    smoke: bool,
}

impl Settings {
    fn read() -> Result<Settings, String> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        // As criterion: `--test`, or no `--bench` (`cargo test --benches`), is a smoke run.
        let smoke = args.iter().any(|a| a == "--test") || !args.iter().any(|a| a == "--bench");
        let number = |name: &str, default: u64| -> Result<u64, String> {
            match std::env::var(name) {
                Ok(text) => text.trim().parse().map_err(|_| format!("{name}={text:?} is not a number")),
                Err(_) => Ok(default),
            }
        };
        let n = if smoke { SMOKE_N } else { number("GATEWAY_LOAD_N", 1000)? as usize };
        let pause_ms = number("GATEWAY_LOAD_PAUSE_MS", 5)?;
        let scenario = std::env::var("GATEWAY_LOAD_SCENARIO").unwrap_or_else(|_| "hermes_parallel".into());
        let protocol = match scenario.as_str() {
            "hermes_parallel" => "hermes",
            "vcp_parallel" => "vcp",
            other => return Err(format!("scenario {other:?}: use hermes_parallel or vcp_parallel")),
        };
        if n == 0 {
            return Err("GATEWAY_LOAD_N must be at least 1".into());
        }
        Ok(Settings { n, pause_ms, scenario, protocol: protocol.into(), smoke })
    }
}

/// The child: serves the gateway in front of `upstream` on a free loopback port, prints
/// its URL, and ends when its stdin closes (the parent ended or let it go).
fn child(upstream: &str) {
    let protocol = std::env::var(PROTOCOL_ENV).unwrap_or_else(|_| "hermes".into());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let gateway = Gateway::new(GatewayConfig::new(upstream).protocol(protocol))
            .expect("a valid gateway configuration");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let address = listener.local_addr().expect("an address");
        // As `tool-calling gateway` serves it: each event sent at once (TCP_NODELAY).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, gateway.router()).await });
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "{LISTENING}http://{address}/v1");
        let _ = stdout.flush();
        let _ = tokio::task::spawn_blocking(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
        })
        .await;
    });
    std::process::exit(0);
}

/// The gateway's process; killed when dropped.
struct GatewayChild {
    process: Child,
    url: String,
}

impl GatewayChild {
    fn spawn(upstream: &str, protocol: &str) -> Result<GatewayChild, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this binary's path: {e}"))?;
        let mut process = Command::new(exe)
            .env(CHILD_ENV, upstream)
            .env(PROTOCOL_ENV, protocol)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("the gateway's child process: {e}"))?;
        let stdout = process.stdout.take().ok_or("the child's stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map_err(|e| format!("the child's stdout: {e}"))?;
        let Some(url) = line.trim().strip_prefix(LISTENING) else {
            let _ = process.kill();
            let _ = process.wait();
            return Err(format!("the child printed {line:?}, not its address"));
        };
        Ok(GatewayChild { url: url.to_string(), process })
    }

    /// Its resident set, in KiB.
    fn rss_kib(&self) -> Result<u64, String> {
        rss_kib(self.process.id())
    }
}

impl Drop for GatewayChild {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// `VmRSS` of process `pid`, in KiB.
fn rss_kib(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no VmRSS in /proc/{pid}/status"))
}

/// Checks that the open-file limit allows `n` conversations (each side of each loopback
/// connection is a file: client and upstream here, the gateway's pool to the upstream
/// too).
fn check_open_files(n: usize) -> Result<u64, String> {
    let needed = 3 * n as u64 + 512;
    let Ok(limits) = std::fs::read_to_string("/proc/self/limits") else {
        return Ok(needed);
    };
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| if v == "unlimited" { Some(u64::MAX) } else { v.parse().ok() });
    match soft {
        Some(soft) if soft < needed => Err(format!(
            "the open-file limit is {soft}; {n} conversations need about {needed}: \
             raise it (`ulimit -n 8192`) or lower GATEWAY_LOAD_N"
        )),
        Some(soft) => Ok(soft),
        None => Ok(needed),
    }
}

fn tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "get_time", "description": "The time in a zone.",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}},
    ])
}

/// A streamed request for `scenario`, with the tools or without.
fn body(scenario: &str, with_tools: bool) -> Arc<String> {
    let mut body = json!({
        "model": "replay",
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": format!("Weather and time in Paris? replay:{scenario}")},
        ],
    });
    if with_tools {
        body["tools"] = tools();
    }
    Arc::new(body.to_string())
}

/// What a chunk carried.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reasoning,
    Content,
}

/// One conversation, as its client saw it. Times are milliseconds since its request
/// started.
struct Trace {
    /// Every reasoning or content piece: when it arrived, what, and its text.
    pieces: Vec<(f64, Kind, String)>,
    /// The first `delta.tool_calls`.
    first_call: Option<f64>,
    /// The names of the calls.
    calls: Vec<String>,
    /// Events carrying reasoning, content or tool calls.
    chunks: usize,
    /// The end of the stream.
    end: f64,
    finished: Instant,
}

impl Trace {
    fn text(&self) -> String {
        self.pieces.iter().map(|(_, _, t)| t.as_str()).collect()
    }

    /// Each piece's arrival and the raw offset (bytes) reached after it.
    fn offsets(&self) -> Vec<(f64, usize)> {
        let mut offset = 0;
        self.pieces
            .iter()
            .map(|(at, _, text)| {
                offset += text.len();
                (*at, offset)
            })
            .collect()
    }
}

/// Server-sent events read from byte chunks.
#[derive(Default)]
struct Sse {
    buffer: Vec<u8>,
}

impl Sse {
    /// The `data` of every event completed by `bytes`.
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buffer.extend_from_slice(bytes);
        let mut data = Vec::new();
        while let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let event = String::from_utf8_lossy(&event);
            let lines: Vec<&str> =
                event.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
            if !lines.is_empty() {
                data.push(lines.join("\n"));
            }
        }
        data
    }
}

/// Reads one event's data into the trace; false at `[DONE]`.
fn take_event(data: &str, at: f64, trace: &mut Trace) -> Result<bool, String> {
    if data == "[DONE]" {
        return Ok(false);
    }
    let event: Value =
        serde_json::from_str(data).map_err(|e| format!("an event that is not JSON ({e}): {data}"))?;
    if let Some(error) = event.get("error") {
        return Err(format!("an error event: {error}"));
    }
    let Some(delta) = event.pointer("/choices/0/delta") else {
        return Ok(true);
    };
    let mut carried = false;
    for (field, kind) in [("reasoning_content", Kind::Reasoning), ("content", Kind::Content)] {
        if let Some(text) = delta.get(field).and_then(Value::as_str).filter(|t| !t.is_empty()) {
            trace.pieces.push((at, kind, text.to_string()));
            carried = true;
        }
    }
    if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array).filter(|c| !c.is_empty()) {
        trace.first_call.get_or_insert(at);
        for call in calls {
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                trace.calls.push(name.to_string());
            }
        }
        carried = true;
    }
    trace.chunks += usize::from(carried);
    Ok(true)
}

fn millis(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// One streamed conversation, to its end.
async fn converse(client: reqwest::Client, url: String, body: Arc<String>) -> Result<Trace, String> {
    let started = Instant::now();
    let mut response = client
        .post(format!("{url}/chat/completions"))
        .header("content-type", "application/json")
        .body(body.as_str().to_owned())
        .send()
        .await
        .map_err(|e| format!("the request failed: {e}"))?;
    if !response.status().is_success() {
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        return Err(format!("status {status}: {text}"));
    }
    let mut trace = Trace {
        pieces: Vec::new(),
        first_call: None,
        calls: Vec::new(),
        chunks: 0,
        end: 0.0,
        finished: started,
    };
    let mut sse = Sse::default();
    let mut done = false;
    while let Some(bytes) = response.chunk().await.map_err(|e| format!("the stream broke: {e}"))? {
        let at = millis(started);
        for data in sse.push(&bytes) {
            done |= !take_event(&data, at, &mut trace)?;
        }
    }
    if !done {
        return Err("the stream ended without [DONE]".into());
    }
    trace.end = millis(started);
    trace.finished = Instant::now();
    Ok(trace)
}

/// A round: `n` conversations started at once.
struct Round {
    traces: Vec<Trace>,
    wall: Duration,
}

async fn round(client: &reqwest::Client, url: &str, body: &Arc<String>, n: usize) -> Result<Round, String> {
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let conversation = converse(client.clone(), url.to_string(), Arc::clone(body));
            tokio::spawn(tokio::time::timeout(BOUND, conversation))
        })
        .collect();
    let mut traces = Vec::with_capacity(n);
    for task in tasks {
        let trace = task.await.map_err(|e| format!("a conversation panicked: {e}"))?;
        traces.push(trace.map_err(|_| format!("a conversation took more than {BOUND:?}"))??);
    }
    let last = traces.iter().map(|t| t.finished).max().unwrap_or(started);
    Ok(Round { traces, wall: last.duration_since(started) })
}

/// Opens a stream and reads until its first content: the response, still open.
async fn open_stream(
    client: reqwest::Client,
    url: String,
    body: Arc<String>,
) -> Result<reqwest::Response, String> {
    let mut response = client
        .post(format!("{url}/chat/completions"))
        .header("content-type", "application/json")
        .body(body.as_str().to_owned())
        .send()
        .await
        .map_err(|e| format!("the request failed: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("status {}", response.status()));
    }
    let mut sse = Sse::default();
    let mut trace = Trace {
        pieces: Vec::new(),
        first_call: None,
        calls: Vec::new(),
        chunks: 0,
        end: 0.0,
        finished: Instant::now(),
    };
    let started = Instant::now();
    while trace.pieces.iter().all(|(_, kind, _)| *kind != Kind::Content) {
        let Some(bytes) = response.chunk().await.map_err(|e| format!("the stream broke: {e}"))? else {
            return Err("the stream ended before its text".into());
        };
        for data in sse.push(&bytes) {
            take_event(&data, millis(started), &mut trace)?;
        }
    }
    Ok(response)
}

/// The memory phase: the child's RSS idle, and with `n` streams open through it.
async fn memory(gateway: &GatewayChild, n: usize) -> Result<(u64, u64), String> {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = gateway.rss_kib()?;
    let client = reqwest::Client::new();
    let body = body("fault_slow", true);
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            tokio::spawn(tokio::time::timeout(
                BOUND,
                open_stream(client.clone(), gateway.url.clone(), Arc::clone(&body)),
            ))
        })
        .collect();
    let mut open = Vec::with_capacity(n);
    for task in tasks {
        let response = task.await.map_err(|e| format!("a stream panicked: {e}"))?;
        open.push(response.map_err(|_| format!("a stream took more than {BOUND:?} to open"))??);
    }
    // Every stream is open and has delivered its text; let the last allocations land.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let with_open = gateway.rss_kib()?;
    drop(open);
    drop(client);
    tokio::time::sleep(Duration::from_millis(300)).await;
    Ok((idle, with_open))
}

/// The `p`-quantile (0 to 1) of `values`, nearest rank; NaN when empty.
fn quantile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

#[derive(Clone, Copy)]
struct Spread {
    p50: f64,
    p99: f64,
    samples: usize,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Spread {
        Spread { p50: quantile(&mut values, 0.5), p99: quantile(&mut values, 0.99), samples: values.len() }
    }

    fn json(self) -> Value {
        json!({"p50": round3(self.p50), "p99": round3(self.p99), "samples": self.samples})
    }
}

fn round3(x: f64) -> Value {
    if x.is_finite() { json!((x * 1000.0).round() / 1000.0) } else { Value::Null }
}

/// The arrival of raw offset `offset`: the first piece that reached it.
fn time_at(offsets: &[(f64, usize)], offset: usize) -> Option<f64> {
    offsets.iter().find(|(_, reached)| *reached >= offset).map(|(at, _)| *at)
}

/// Each piece of a gateway conversation located in the raw text: its arrival and the
/// raw offset its last byte completes (`None`: left out). A piece that follows on from
/// the previous one is placed right after it; one that does not (markup was taken out
/// before it) is searched forward, unless it is whitespace only (the newline between
/// two calls): that one could match anywhere, and is left out.
fn align(raw: &str, gateway: &Trace) -> Vec<(f64, Option<usize>)> {
    let mut cursor = 0;
    gateway
        .pieces
        .iter()
        .map(|(at, _, text)| {
            let found = if raw[cursor..].starts_with(text.as_str()) {
                Some(cursor)
            } else if text.trim().is_empty() {
                None
            } else {
                raw[cursor..].find(text.as_str()).map(|i| cursor + i)
            };
            let end = found.map(|start| {
                cursor = start + text.len();
                cursor
            });
            (*at, end)
        })
        .collect()
}

/// The end of the first call's markup in the raw text of `protocol`.
fn first_call_end(raw: &str, protocol: &str) -> Option<usize> {
    let close = match protocol {
        "hermes" => "</tool_call>",
        "vcp" => "<<<[END_TOOL_REQUEST]>>>",
        _ => return None,
    };
    raw.find(close).map(|at| at + close.len())
}

struct Side {
    wall_s: f64,
    conversations_per_s: f64,
    chunks_per_s: f64,
    chunks_per_conversation: f64,
    conversation_ms: Spread,
    first_chunk_ms: Spread,
}

impl Side {
    fn of(round: &Round) -> Side {
        let wall_s = round.wall.as_secs_f64();
        let n = round.traces.len() as f64;
        let chunks: usize = round.traces.iter().map(|t| t.chunks).sum();
        Side {
            wall_s,
            conversations_per_s: n / wall_s,
            chunks_per_s: chunks as f64 / wall_s,
            chunks_per_conversation: chunks as f64 / n,
            conversation_ms: Spread::of(round.traces.iter().map(|t| t.end).collect()),
            first_chunk_ms: Spread::of(
                round.traces.iter().filter_map(|t| t.pieces.first().map(|p| p.0)).collect(),
            ),
        }
    }

    fn json(&self) -> Value {
        json!({
            "wall_s": round3(self.wall_s),
            "conversations_per_s": round3(self.conversations_per_s),
            "chunks_per_s": round3(self.chunks_per_s),
            "chunks_per_conversation": round3(self.chunks_per_conversation),
            "conversation_ms": self.conversation_ms.json(),
            "first_chunk_ms": self.first_chunk_ms.json(),
        })
    }
}

fn run(settings: &Settings) -> Result<(), String> {
    let n = settings.n;
    let limit = check_open_files(n)?;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("a runtime: {e}"))?;
    let pause = Duration::from_millis(settings.pause_ms);
    let upstream =
        runtime.block_on(replay_upstream::start(pause)).map_err(|e| format!("the replay upstream: {e}"))?;
    let gateway = GatewayChild::spawn(&upstream.url, &settings.protocol)?;
    let run_started = Instant::now();
    println!(
        "gateway_load: {n} conversations at once{}, scenario {} (protocol {}), upstream pause {} ms per chunk, \
         {cores} cores, open-file limit {limit}",
        if settings.smoke { " (smoke run)" } else { "" },
        settings.scenario,
        settings.protocol,
        settings.pause_ms,
    );

    let direct_body = body(&settings.scenario, false);
    let gateway_body = body(&settings.scenario, true);
    let direct_client = reqwest::Client::new();
    let gateway_client = reqwest::Client::new();
    let (idle, with_open, peak, direct, through) = runtime.block_on(async {
        // A few conversations each way: code paths and lazy statics warmed.
        round(&direct_client, &upstream.url, &direct_body, 4).await?;
        round(&gateway_client, &gateway.url, &gateway_body, 4).await?;
        let (idle, with_open) = memory(&gateway, n).await?;
        // Unmeasured rounds at full size: connections opened, pools filled.
        round(&direct_client, &upstream.url, &direct_body, n).await?;
        round(&gateway_client, &gateway.url, &gateway_body, n).await?;
        let direct = round(&direct_client, &upstream.url, &direct_body, n).await?;
        // The child's peak RSS during the measured gateway round.
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (peak, stop, pid) = (Arc::clone(&peak), Arc::clone(&stop), gateway.process.id());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(rss) = rss_kib(pid) {
                        peak.fetch_max(rss, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        let through = round(&gateway_client, &gateway.url, &gateway_body, n).await;
        stop.store(true, Ordering::Relaxed);
        let _ = sampler.join();
        Ok::<_, String>((idle, with_open, peak.load(Ordering::Relaxed), direct, through?))
    })?;

    // The raw text is the same in every direct conversation, and the gateway's output
    // the same calls in every one.
    let raw = direct.traces[0].text();
    if let Some(other) = direct.traces.iter().find(|t| t.text() != raw) {
        return Err(format!("direct replies differ: {raw:?} / {:?}", other.text()));
    }
    if let Some(trace) = through.traces.iter().find(|t| t.calls != ["get_weather", "get_time"]) {
        return Err(format!("a gateway reply's calls: {:?} (text {:?})", trace.calls, trace.text()));
    }
    let direct_offsets: Vec<Vec<(f64, usize)>> = direct.traces.iter().map(Trace::offsets).collect();
    if std::env::var_os("GATEWAY_LOAD_DUMP").is_some() {
        // The first conversation of each side, piece by piece (to see what was aligned).
        for (side, trace) in [("direct", &direct.traces[0]), ("gateway", &through.traces[0])] {
            for (at, kind, text) in &trace.pieces {
                let kind = if *kind == Kind::Reasoning { "reasoning" } else { "content" };
                println!("  {side:<8} {at:>9.2} ms {kind:<9} {text:?}");
            }
            println!("  {side:<8} first call {:?} ms, end {:.2} ms", trace.first_call, trace.end);
        }
        for (at, offset) in align(&raw, &through.traces[0]) {
            let direct_at = offset.and_then(|o| time_at(&direct_offsets[0], o));
            println!("  aligned  {at:>9.2} ms at raw offset {offset:?}, directly {direct_at:?} ms");
        }
    }

    // Added latency per chunk: paired by index, and against the direct median.
    let mut median_at: HashMap<usize, f64> = HashMap::new();
    let (mut paired, mut vs_median, mut unaligned) = (Vec::new(), Vec::new(), 0usize);
    for (index, trace) in through.traces.iter().enumerate() {
        for (at, offset) in align(&raw, trace) {
            let Some(offset) = offset else {
                unaligned += 1;
                continue;
            };
            if let Some(direct_at) = time_at(&direct_offsets[index], offset) {
                paired.push(at - direct_at);
            }
            let median = *median_at.entry(offset).or_insert_with(|| {
                let mut times: Vec<f64> = direct_offsets.iter().filter_map(|o| time_at(o, offset)).collect();
                quantile(&mut times, 0.5)
            });
            vs_median.push(at - median);
        }
    }
    let paired = Spread::of(paired);
    let vs_median = Spread::of(vs_median);

    // Time to the first call.
    let direct_call = first_call_end(&raw, &settings.protocol)
        .map(|end| Spread::of(direct_offsets.iter().filter_map(|o| time_at(o, end)).collect()));
    let gateway_call = Spread::of(through.traces.iter().filter_map(|t| t.first_call).collect());

    let direct_side = Side::of(&direct);
    let gateway_side = Side::of(&through);
    let per_stream = (with_open as f64 - idle as f64) / n as f64;
    let peak_per_stream = (peak as f64 - idle as f64) / n as f64;

    let line = |name: &str, d: String, g: String| println!("  {name:<44} {d:>16} {g:>16}");
    let pair = |s: Spread| format!("{:.2} / {:.2}", s.p50, s.p99);
    println!();
    println!("  {:<44} {:>16} {:>16}", "", "direct", "gateway");
    line(
        "conversations/s",
        format!("{:.0}", direct_side.conversations_per_s),
        format!("{:.0}", gateway_side.conversations_per_s),
    );
    line(
        "chunks/s [4]",
        format!("{:.0}", direct_side.chunks_per_s),
        format!("{:.0}", gateway_side.chunks_per_s),
    );
    let upstream_chunks = direct_side.chunks_per_conversation;
    line(
        "upstream chunks/s (read by the client / gateway)",
        format!("{:.0}", direct_side.chunks_per_s),
        format!("{:.0}", gateway_side.conversations_per_s * upstream_chunks),
    );
    line(
        "chunks per conversation",
        format!("{:.1}", direct_side.chunks_per_conversation),
        format!("{:.1}", gateway_side.chunks_per_conversation),
    );
    line("round wall time (s)", format!("{:.3}", direct_side.wall_s), format!("{:.3}", gateway_side.wall_s));
    line(
        "conversation time p50 / p99 (ms)",
        pair(direct_side.conversation_ms),
        pair(gateway_side.conversation_ms),
    );
    line(
        "first text chunk p50 / p99 (ms)",
        pair(direct_side.first_chunk_ms),
        pair(gateway_side.first_chunk_ms),
    );
    line("first call p50 / p99 (ms) [1]", direct_call.map_or_else(|| "n/a".into(), pair), pair(gateway_call));
    println!();
    println!("  added latency per chunk through the gateway [2]     p50 (ms)   p99 (ms)   chunks");
    println!(
        "    paired by conversation index                  {:>10.2} {:>10.2} {:>8}",
        paired.p50, paired.p99, paired.samples
    );
    println!(
        "    vs. the direct median at that offset          {:>10.2} {:>10.2} {:>8}",
        vs_median.p50, vs_median.p99, vs_median.samples
    );
    if unaligned > 0 {
        println!(
            "    ({unaligned} gateway chunks left out: whitespace between calls, or not found in the raw text)"
        );
    }
    println!();
    println!(
        "  gateway memory: RSS idle {idle} KiB, with {n} streams open {with_open} KiB: \
         {per_stream:.1} KiB per open stream [3]"
    );
    println!(
        "  gateway peak RSS during the measured round {peak} KiB: {peak_per_stream:.1} KiB per conversation over idle"
    );
    println!();
    println!(
        "  [1] direct: the arrival of the end of the first call's markup in the raw text; gateway: the first \
         delta.tool_calls."
    );
    println!(
        "  [2] each reasoning/content chunk the gateway sent, located in the raw text (markup removed), minus \
         the arrival of the same raw offset directly: in the direct conversation of the same index (paired), \
         or the median over all direct conversations. Times from each conversation's own request start."
    );
    println!(
        "  [3] (VmRSS with every stream open and its text delivered - VmRSS idle) / N, the gateway in a child \
         process, the upstream holding each stream open (fault_slow)."
    );
    println!(
        "  [4] events carrying reasoning, content or tool calls; through the gateway each call's markup is \
         one tool_calls event."
    );
    println!("  run time {:.1} s", run_started.elapsed().as_secs_f64());

    let report = json!({
        "settings": {"n": n, "pause_ms": settings.pause_ms, "scenario": settings.scenario,
                     "protocol": settings.protocol, "cores": cores},
        "direct": direct_side.json(),
        "gateway": gateway_side.json(),
        "gateway_upstream_chunks_per_s": round3(gateway_side.conversations_per_s * upstream_chunks),
        "added_latency_per_chunk_ms": {
            "paired_by_index": paired.json(),
            "vs_direct_median": vs_median.json(),
            "unaligned_chunks": unaligned,
        },
        "first_call_ms": {
            "direct_end_of_first_call_markup": direct_call.map(Spread::json),
            "gateway_first_tool_calls_delta": gateway_call.json(),
        },
        "memory": {
            "rss_idle_kib": idle,
            "rss_open_kib": with_open,
            "per_open_stream_kib": round3(per_stream),
            "rss_peak_measured_round_kib": peak,
            "peak_per_conversation_kib": round3(peak_per_stream),
        },
    });
    if settings.smoke {
        println!("  (smoke run: no JSON written)");
    } else {
        let path = json_path();
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        println!("  figures written to {}", path.display());
    }
    drop(gateway);
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}

/// `target/gateway_load.json`: the target directory is the bench binary's
/// (`target/release/deps/gateway_load-…`) grandparent.
fn json_path() -> std::path::PathBuf {
    if let Ok(path) = std::env::var("GATEWAY_LOAD_JSON") {
        return path.into();
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(|target| target.join("gateway_load.json")))
        .unwrap_or_else(|| "gateway_load.json".into())
}
