//! `tester`: the project's command-line tester (contract: `spec/tester.md`).
//!
//! ```text
//! cargo run --release --example tester -- SUBCOMMAND [OPTIONS] [FILE|-]
//! ```
//!
//! Every subcommand prints one JSON document (pretty-printed) on stdout and exits 0 on
//! success. Bad usage, an unreadable file, or input that is not UTF-8 exits 2 with exactly
//! one line on stderr (for non-UTF-8 input the line names the byte offset). `FILE` may be
//! `-` to read standard input.
//!
//! # `parse`
//!
//! ```text
//! tester parse [--protocol vcp] [--fuzzy] [--skip-fenced] [--keep-think] FILE|-
//! ```
//!
//! Parses a model reply and prints
//! `{"requests": [{"request_id", "tool_name", "args", "complete", "problems", "start",
//! "end"}], "diagnostics": [{"kind", "message", "start", "end"}]}`. Offsets are byte
//! offsets into the input as read, `end` exclusive; `args` keep the order the model wrote
//! them in.
//!
//! Requests without a model-chosen `request_id` get **sequential** ids (`req_1`, `req_2`,
//! … per run) rather than the library's default random ones, so that the output is
//! deterministic and can be compared byte for byte.
//!
//! `--fuzzy`, `--skip-fenced` and `--keep-think` switch on the parser options of the same
//! meaning (`VcpOptions::fuzzy_markers`, `skip_fenced`, `keep_reasoning`).
//! `--protocol openai|anthropic|gemini` and `--stream-chunk N` are part of the contract but
//! not yet available (exit 2).
//!
//! # `bench`
//!
//! ```text
//! tester bench [--protocol vcp] [--iterations K] FILE
//! ```
//!
//! Parses FILE K times in-process (default 20) with the default parser options and prints
//! `{"bytes", "requests", "iterations", "median_ns", "mb_per_s"}`, where `mb_per_s` is
//! bytes / median seconds / 10^6.
//!
//! # `discover`
//!
//! ```text
//! tester discover [--all]
//! ```
//!
//! Prints the demo tools (`support/demo_tools.rs`, registered with `#[tool]`) as the
//! discovery service sees them: `{"tools": [{"tool_id", "tool_name", "description",
//! "category", "tags", "version", "documentation_url", "methods": [{"name",
//! "description", "agent_callable", "vcp_command", "parameters": [{"name", "type",
//! "required", "default", "description"}], "examples", "schema"}]}]}`. Only
//! agent-callable methods unless `--all`.
//!
//! # `prompt`
//!
//! ```text
//! tester prompt [--protocol vcp] [--lang en|zh]
//! ```
//!
//! Prints the VCP tool-definition prompt for the demo tools, as plain text.
//!
//! # Not yet available
//!
//! `exec` and `cycle`, and the native protocols, are recognised but exit 2 for now.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Map, Value, json};
use std::sync::Arc;

#[path = "support/demo_tools.rs"]
mod demo_tools;

use tool_calling::config::ToolCallConfig;
use tool_calling::discovery::{DiscoveryService, MethodFilter};
use tool_calling::protocol::vcp::{Language, RequestIdStyle, VcpOptions, VcpProtocol};
use tool_calling::registry::ToolRegistry;
use tool_calling::tool::{MethodSpec, ToolSpec};
use tool_calling::{Diagnostic, ParseOutcome, ParsedToolRequest};

/// Command-line tester for the tool-calling library.
#[derive(Debug, Parser)]
#[command(name = "tester", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Parse a model reply and print the requests and diagnostics found.
    Parse(ParseArgs),
    /// Parse a file repeatedly in-process and print timing figures.
    Bench(BenchArgs),
    /// Print the demo tools as the discovery service sees them.
    Discover(DiscoverArgs),
    /// Print the tool-definition prompt exactly as it would be sent.
    Prompt(PromptArgs),
    /// Run one demo-tool call through the executor (not yet available).
    Exec(PendingArgs),
    /// Run the full parse → execute → format cycle on a reply (not yet available).
    Cycle(PendingArgs),
}

impl Command {
    fn name(&self) -> &'static str {
        match self {
            Command::Parse(_) => "parse",
            Command::Bench(_) => "bench",
            Command::Discover(_) => "discover",
            Command::Prompt(_) => "prompt",
            Command::Exec(_) => "exec",
            Command::Cycle(_) => "cycle",
        }
    }
}

/// Protocols named by the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProtocolName {
    Vcp,
    Openai,
    Anthropic,
    Gemini,
}

impl ProtocolName {
    fn as_str(self) -> &'static str {
        match self {
            ProtocolName::Vcp => "vcp",
            ProtocolName::Openai => "openai",
            ProtocolName::Anthropic => "anthropic",
            ProtocolName::Gemini => "gemini",
        }
    }
}

#[derive(Debug, Args)]
struct ParseArgs {
    /// Protocol the reply is written in.
    #[arg(long, value_enum, default_value = "vcp")]
    protocol: ProtocolName,
    /// Accept fuzzy VCP markers (`<<[tool_request]>>`, `{始}` …).
    #[arg(long)]
    fuzzy: bool,
    /// Ignore START markers inside backtick code fences.
    #[arg(long)]
    skip_fenced: bool,
    /// Parse inside `<think>` reasoning instead of hiding it.
    #[arg(long)]
    keep_think: bool,
    /// Feed the input to the streaming parser N bytes at a time.
    #[arg(long, value_name = "N")]
    stream_chunk: Option<usize>,
    /// The reply to parse, or `-` for standard input.
    #[arg(value_name = "FILE|-")]
    input: PathBuf,
}

#[derive(Debug, Args)]
struct DiscoverArgs {
    /// Also list methods that are not agent-callable.
    #[arg(long)]
    all: bool,
}

/// Languages of the built-in prompt templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Lang {
    En,
    Zh,
}

#[derive(Debug, Args)]
struct PromptArgs {
    /// Protocol whose prompt to print.
    #[arg(long, value_enum, default_value = "vcp")]
    protocol: ProtocolName,
    /// Language of the template.
    #[arg(long, value_enum, default_value = "en")]
    lang: Lang,
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// Protocol the file is written in.
    #[arg(long, value_enum, default_value = "vcp")]
    protocol: ProtocolName,
    /// How many timed parses to run.
    #[arg(long, value_name = "K", default_value_t = 20)]
    iterations: u32,
    /// The reply to parse, or `-` for standard input.
    #[arg(value_name = "FILE")]
    input: PathBuf,
}

/// Arguments of a subcommand that is not implemented yet: anything is accepted, so the
/// answer is always the "not yet available" line.
#[derive(Debug, Args)]
struct PendingArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// Why the run failed; every failure exits 2 with one line on stderr.
#[derive(Debug)]
enum Failure {
    /// A clap usage error, already worded (`error: …`).
    Usage(String),
    /// Any other failure; printed as `tester: <message>`.
    Message(String),
}

impl Failure {
    fn msg(message: impl Into<String>) -> Self {
        Failure::Message(message.into())
    }

    fn not_yet_available(what: impl fmt::Display) -> Self {
        Failure::Message(format!("{what} is not yet available"))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Failure::Usage(text) => text.clone(),
            Failure::Message(text) => format!("tester: {text}"),
        };
        // The contract promises exactly one line.
        let one_line: String =
            text.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
        f.write_str(&one_line)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            use clap::error::ErrorKind;
            return match err.kind() {
                // Help and version go to stdout and are a success.
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => match err.print() {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(_) => ExitCode::from(2),
                },
                // Bare `tester`: clap would print the whole help as an error.
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => fail(&Failure::Usage(
                    "error: a subcommand is required (parse, bench, discover, prompt, exec, cycle); \
                     try 'tester --help'"
                        .to_string(),
                )),
                _ => fail(&Failure::Usage(clap_one_line(&err.to_string()))),
            };
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => fail(&failure),
    }
}

/// The single exit path for failures.
fn fail(failure: &Failure) -> ExitCode {
    // If stderr itself is gone there is nothing left to report to.
    let _ = writeln!(io::stderr().lock(), "{failure}");
    ExitCode::from(2)
}

/// Condenses a clap error (message, indented details, tips, usage, help hint) into one
/// line: everything before the usage section, with lines joined.
fn clap_one_line(rendered: &str) -> String {
    let mut line = String::new();
    for part in rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
    {
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(part);
    }
    if line.is_empty() { "error: invalid usage".to_string() } else { line }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Parse(args) => parse(&args),
        Command::Bench(args) => bench(&args),
        Command::Discover(args) => discover(&args),
        Command::Prompt(args) => prompt(&args),
        other => Err(Failure::not_yet_available(other.name())),
    }
}

/// The demo tools, collected from link-time registrations.
fn demo_registry() -> Result<Arc<ToolRegistry>, Failure> {
    ToolRegistry::from_inventory()
        .map(Arc::new)
        .map_err(|e| Failure::msg(format!("bad tool definition: {e}")))
}

fn discover(args: &DiscoverArgs) -> Result<(), Failure> {
    let discovery = DiscoveryService::new(demo_registry()?);
    let everything = |_: &ToolSpec, _: &MethodSpec| true;
    let filter: Option<MethodFilter<'_>> = if args.all { Some(&everything) } else { None };
    let tools: Vec<Value> = discovery
        .discovered_methods(filter)
        .iter()
        .map(|tool| {
            let methods: Vec<Value> = tool
                .methods
                .iter()
                .map(|method| {
                    let parameters: Vec<Value> = method
                        .definition
                        .parameter_list()
                        .iter()
                        .map(|p| {
                            json!({
                                "name": p.name,
                                "type": p.type_name(),
                                "required": p.required,
                                "default": p.default(),
                                "description": p.description(),
                            })
                        })
                        .collect();
                    json!({
                        "name": method.definition.name,
                        "description": method.definition.description,
                        "agent_callable": method.agent_callable,
                        "vcp_command": method.definition.vcp_command,
                        "parameters": parameters,
                        "examples": method.definition.examples.iter().map(|e| json!({
                            "description": e.description, "input": e.input, "output": e.output,
                        })).collect::<Vec<_>>(),
                        "schema": method.definition.parameters,
                    })
                })
                .collect();
            json!({
                "tool_id": tool.tool_id,
                "tool_name": tool.tool_name,
                "description": tool.description,
                "category": tool.metadata.category,
                "tags": tool.metadata.tags,
                "version": tool.metadata.version,
                "documentation_url": tool.metadata.documentation_url,
                "methods": methods,
            })
        })
        .collect();
    print_json(&json!({ "tools": tools }))
}

fn prompt(args: &PromptArgs) -> Result<(), Failure> {
    if args.protocol != ProtocolName::Vcp {
        return Err(Failure::not_yet_available(format!("prompt --protocol {}", args.protocol.as_str())));
    }
    let language = match args.lang {
        Lang::En => Language::En,
        Lang::Zh => Language::Zh,
    };
    let discovery = DiscoveryService::new(demo_registry()?);
    let protocol = VcpProtocol::default().with_language(language);
    let text = discovery.generate_prompt(&protocol, &ToolCallConfig::default(), None);
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).map_err(|e| Failure::msg(format!("cannot write output: {e}")))
}

fn parse(args: &ParseArgs) -> Result<(), Failure> {
    if args.protocol != ProtocolName::Vcp {
        return Err(Failure::not_yet_available(format!("parse --protocol {}", args.protocol.as_str())));
    }
    if args.stream_chunk.is_some() {
        return Err(Failure::not_yet_available("parse --stream-chunk"));
    }
    let text = read_input(&args.input)?;
    let options = VcpOptions::default()
        .fuzzy_markers(args.fuzzy)
        .skip_fenced(args.skip_fenced)
        .keep_reasoning(args.keep_think)
        .request_ids(RequestIdStyle::Sequential);
    let outcome = VcpProtocol::new(options).parse(&text);
    print_json(&outcome_json(&outcome))
}

fn bench(args: &BenchArgs) -> Result<(), Failure> {
    if args.protocol != ProtocolName::Vcp {
        return Err(Failure::not_yet_available(format!("bench --protocol {}", args.protocol.as_str())));
    }
    if args.iterations == 0 {
        return Err(Failure::msg("--iterations must be at least 1"));
    }
    let text = read_input(&args.input)?;
    // The parser a library user gets by default.
    let protocol = VcpProtocol::default();
    // One untimed parse: warms caches and counts the requests.
    let requests = protocol.parse(&text).requests.len();

    let mut times: Vec<Duration> = Vec::with_capacity(args.iterations as usize);
    for _ in 0..args.iterations {
        let started = Instant::now();
        let outcome = protocol.parse(std::hint::black_box(text.as_str()));
        std::hint::black_box(outcome);
        times.push(started.elapsed());
    }
    let median = median(&mut times);
    let median_ns = u64::try_from(median.as_nanos()).unwrap_or(u64::MAX);
    // Guard the division: a timer may report 0 for a tiny input.
    let seconds = median.as_secs_f64().max(1e-9);
    let mb_per_s = text.len() as f64 / seconds / 1e6;

    print_json(&json!({
        "bytes": text.len(),
        "requests": requests,
        "iterations": args.iterations,
        "median_ns": median_ns,
        "mb_per_s": mb_per_s,
    }))
}

/// The median of `times` (the mean of the two middle values for an even count).
fn median(times: &mut [Duration]) -> Duration {
    times.sort_unstable();
    let mid = times.len() / 2;
    let middle = times.get(mid).copied().unwrap_or_default();
    match mid.checked_sub(1).and_then(|i| times.get(i)) {
        Some(low) if times.len() % 2 == 0 => (*low + middle) / 2,
        _ => middle,
    }
}

/// Reads FILE (or standard input for `-`) and checks that it is UTF-8.
fn read_input(path: &Path) -> Result<String, Failure> {
    let bytes = if path == Path::new("-") {
        let mut bytes = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::msg(format!("cannot read standard input: {e}")))?;
        bytes
    } else {
        std::fs::read(path).map_err(|e| Failure::msg(format!("cannot read {}: {e}", path.display())))?
    };
    String::from_utf8(bytes).map_err(|e| {
        Failure::msg(format!("input is not valid UTF-8 at byte offset {}", e.utf8_error().valid_up_to()))
    })
}

fn outcome_json(outcome: &ParseOutcome) -> Value {
    let requests: Vec<Value> = outcome.requests.iter().map(request_json).collect();
    let diagnostics: Vec<Value> = outcome.diagnostics.iter().map(diagnostic_json).collect();
    json!({ "requests": requests, "diagnostics": diagnostics })
}

fn request_json(request: &ParsedToolRequest) -> Value {
    // `serde_json` is built with `preserve_order`: args stay in the order written.
    let args: Map<String, Value> = request.args.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    json!({
        "request_id": request.request_id,
        "tool_name": request.tool_name,
        "args": args,
        "complete": request.complete,
        "problems": request.problems,
        "start": request.span.start,
        "end": request.span.end,
    })
}

fn diagnostic_json(diagnostic: &Diagnostic) -> Value {
    json!({
        "kind": diagnostic.kind.as_str(),
        "message": diagnostic.message,
        "start": diagnostic.span.start,
        "end": diagnostic.span.end,
    })
}

/// Prints `value` pretty, with a final newline.
fn print_json(value: &Value) -> Result<(), Failure> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| Failure::msg(format!("cannot encode JSON: {e}")))?;
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure::msg(format!("cannot write output: {e}")))
}
