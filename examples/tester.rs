//! `tester`: the project's command-line tester.
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
//! tester parse [--protocol vcp|openai|openai_responses|anthropic|gemini|FORMAT|auto] [--fuzzy] [--skip-fenced] [--keep-think] [--stream-chunk N] FILE|-
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
//!
//! `--stream-chunk N` (N ≥ 1) feeds the reply to the streaming parser
//! (`VcpProtocol::stream_parser`) N bytes at a time and prints what the collected events
//! give (`StreamCollector::into_outcome`): the same document as without the flag, for
//! every N. A cut that would split a character moves back to the character's start, but
//! every chunk holds at least one character (so `--stream-chunk 1` feeds a 3-byte `始` as
//! one chunk).
//!
//! `--protocol openai|openai_responses|anthropic|gemini` reads a native API's response:
//! FILE is a JSON response body, or with `--stream-chunk N` a server-sent-events
//! transcript, fed N bytes at a time (cuts anywhere, as a network makes them) through the
//! provider's stream decoder; both print the same document. `args` are the JSON values of
//! each call. A body the provider's format cannot read (an error body) gives no request
//! and an `invalid_payload` diagnostic; input that is not JSON at all exits 2.
//!
//! `--protocol FORMAT` reads an open-model text format (FORMAT is one of `hermes`,
//! `qwen3_coder_xml`, `mistral`, `llama3_json`, `pythonic`, `deepseek_v3`,
//! `deepseek_v31`, `kimi_k2`, `glm45`, `glm47`, `minimax_m2`), and `--protocol auto`
//! detects which text protocol (VCP or one of those) the reply uses; the document then also carries `"normal_text"`, the reply
//! without its call markup. `args` are the JSON values of each call.
//!
//! # `bench`
//!
//! ```text
//! tester bench [--protocol vcp|FORMAT|auto] [--iterations K] [--api view_events|parse_view|parse] [--owned] FILE
//! ```
//!
//! Parses FILE K times in-process (default 20) with the default parser options and prints
//! `{"api", "bytes", "requests", "iterations", "median_ns", "mb_per_s"}`, where
//! `mb_per_s` is bytes / median seconds / 10^6 and `api` names what was timed: for VCP
//! by default the fastest complete parse, the pull parser `view_events` (every request
//! with every field and value, borrowed from the input, one at a time), or with `--api`
//! the collected `parse_view` or the owned `parse` (`--owned` is `--api parse`); for the
//! other formats `parse`.
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
//! tester prompt [--protocol vcp|openai|openai_responses|anthropic|gemini|FORMAT|auto] [--lang en|zh]
//! ```
//!
//! Prints the VCP tool-definition prompt for the demo tools, as plain text; for an
//! open-model format, that format's prompt (plain text; `auto` offers VCP's); for a native
//! protocol, the JSON `tools` value it sends.
//!
//! # `exec`
//!
//! ```text
//! tester exec TOOL_NAME [--command METHOD] [--timeout-ms T] --args JSON
//! ```
//!
//! Runs one demo-tool call through the real executor (the agent-callable check, toggles,
//! argument defaults, coercion and validation, the time limit) and prints its result: `{"request_id", "tool_name", "status", "result", "error_kind",
//! "duration_ms"}`. `status` is `"success"` or `"error"`; `error_kind` is `null` on
//! success, else `"validation"`, `"not_found"`, `"permission"`, `"timeout"`,
//! `"execution"`, …; `tool_name` is the resolved full method name (or the name as given
//! when routing failed); the request id is always `req_1`.
//!
//! `--args` must be a JSON object; its values are passed to the executor as they are
//! (JSON numbers stay numbers, strings are coerced by the method's schema, as for a VCP
//! reply). A full method name (`calc_add`, `text_label`) runs that method with every
//! argument as given. `--command METHOD` adds a `command` argument, and the call is then
//! routed as a VCP request naming the tool id and the command (`exec calc --command add
//! --args '{"a":1,"b":2}'`), VCP's rules included (its control keys `archery`, `ink`,
//! `river`, `vref` do not reach the method); so is a name that is not a full method name.
//! Giving both `--command` and a `command` key is a usage error. `--timeout-ms T`
//! (at least 1) replaces the default time limit of 30 000 ms for methods without their
//! own. A failed call (a tool error, a validation error, an unknown name, a timeout) is
//! a result, not a usage error: it is printed and the exit code is 0.
//!
//! # `cycle`
//!
//! ```text
//! tester cycle [--protocol vcp|openai|openai_responses|anthropic|gemini|FORMAT|auto] [--serial] [--timeout-ms T] [--raw] [--fuzzy] [--skip-fenced] [--keep-think] FILE|-
//! ```
//!
//! `--raw` prints only `context`, as it is sent: the text itself for a text protocol (no
//! JSON quoting), the JSON of the messages for a native one.
//!
//! Runs the engine's full parse → execute → format cycle on a model reply with the demo
//! tools and prints `{"has_tool_requests", "parsed", "results", "context",
//! "diagnostics"}`: `parsed` holds the requests exactly as `parse` prints them
//! (sequential ids), `results` one `exec`-shaped result per request in the same order,
//! `context` the text that would be fed back to the model (empty when there were no
//! requests), `diagnostics` what the parser noticed, as in `parse`. Calls run in
//! parallel unless `--serial`; `--timeout-ms` and the parser flags mean what they mean
//! for `exec` and `parse`. With an open-model FORMAT (or `auto`), `context` is the text of
//! the results in that format's shape (`<tool_response>…`, `[TOOL_RESULTS]…`, …).
//!
//! With a native `--protocol`, FILE is a response body and `context` is the JSON of what
//! goes back to the provider, one entry per call in call order: for `openai` an array of
//! `{"role": "tool", "tool_call_id", "content"}` messages, for `openai_responses` an array
//! of `{"type": "function_call_output", "call_id", "output"}` items, for `anthropic` one
//! `{"role": "user", "content": [tool_result blocks]}` message (`is_error` on failures),
//! for `gemini` one `{"role": "user", "parts": [functionResponse parts]}` content (with
//! the call's `id` when it had one). A call whose arguments are not valid JSON, or not an
//! object, gets an error result that says so; it never runs.
//!
//! # `serve`
//!
//! ```text
//! tester serve [--port P]
//! ```
//!
//! Serves the tester in a browser on `127.0.0.1:P` (default 8787; 0 picks a free port)
//! until stopped, and prints the address on stderr. One page, built into the binary (no
//! build step, no network), with three panes over the demo tools: **Discovery** (search,
//! sort, a method's parameters, constraints and examples, the prompt per protocol, "load
//! into the executor"), **Executor** (a form made from the parameter schema or raw JSON,
//! the result with status, duration and error kind, the last 10 runs) and **Parser**
//! (paste a reply or pick a sample, see requests, hidden reasoning and fenced parts
//! highlighted in the text, the diagnostics, and "run this cycle"). The page talks to a
//! small JSON API that calls the same functions as the subcommands above (routes in
//! `tester_web/server.rs`).

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
#[path = "tester_web/server.rs"]
mod web;

use tool_calling::config::ToolCallConfig;
use tool_calling::engine::Engine;
use tool_calling::exec::{ExecutionContext, Executor, PlannedRequest};
use tool_calling::model::{AssistantTurn, Message, TurnAccumulator};
use tool_calling::protocol::native::{
    Anthropic, Gemini, NativeOptions, OpenAiChat, OpenAiResponses, ResponseStream, WireFormat,
};
use tool_calling::protocol::textfmt::{
    AutoProtocol, ParsedReply, TextFormat, TextFormatOptions, TextFormatProtocol,
};
use tool_calling::protocol::vcp::{
    Language, RequestIdStyle, VcpOptions, VcpProtocol, ViewEvent, command_alias,
};
use tool_calling::protocol::{IncrementalParser, StreamCollector};
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::{DiscoveryService, MethodFilter};
use tool_calling::tools::{MethodSpec, ToolSpec};
use tool_calling::{Diagnostic, ParseOutcome, ParsedToolRequest, ToolCallingProtocol, ToolExecutionResult};
use tool_calling::{DiagnosticKind, Span};

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
    /// Run one demo-tool call through the executor and print its result.
    Exec(ExecArgs),
    /// Run the full parse → execute → format cycle on a reply with the demo tools.
    Cycle(CycleArgs),
    /// Serve the tester in a browser, on 127.0.0.1.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 8787)]
    port: u16,
}

/// Protocols named by the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProtocolName {
    Vcp,
    Openai,
    #[value(name = "openai_responses")]
    OpenaiResponses,
    Anthropic,
    Gemini,
    Hermes,
    #[value(name = "qwen3_coder_xml")]
    Qwen3CoderXml,
    Mistral,
    #[value(name = "llama3_json")]
    Llama3Json,
    Pythonic,
    #[value(name = "deepseek_v3")]
    DeepseekV3,
    #[value(name = "deepseek_v31")]
    DeepseekV31,
    #[value(name = "kimi_k2")]
    KimiK2,
    Glm45,
    Glm47,
    #[value(name = "minimax_m2")]
    MinimaxM2,
    Auto,
}

/// A native protocol: its tool-calling side and its wire format.
trait Native: ToolCallingProtocol + WireFormat {
    fn as_wire(&self) -> &dyn WireFormat;
    fn into_protocol(self: Arc<Self>) -> Arc<dyn ToolCallingProtocol>;
}

impl<T: ToolCallingProtocol + WireFormat + 'static> Native for T {
    fn as_wire(&self) -> &dyn WireFormat {
        self
    }

    fn into_protocol(self: Arc<Self>) -> Arc<dyn ToolCallingProtocol> {
        self
    }
}

impl ProtocolName {
    fn as_str(self) -> &'static str {
        match self {
            ProtocolName::Vcp => "vcp",
            ProtocolName::Openai => "openai",
            ProtocolName::OpenaiResponses => "openai_responses",
            ProtocolName::Anthropic => "anthropic",
            ProtocolName::Gemini => "gemini",
            ProtocolName::Auto => "auto",
            other => other.text_format().map_or("vcp", TextFormat::id),
        }
    }

    /// The native protocol (sequential ids, for reproducible output), or `None` for VCP.
    fn native(self) -> Option<Arc<dyn Native>> {
        let options = NativeOptions::default().request_ids(RequestIdStyle::Sequential);
        Some(match self {
            ProtocolName::Vcp => return None,
            ProtocolName::Openai => Arc::new(OpenAiChat::new(options)),
            ProtocolName::OpenaiResponses => Arc::new(OpenAiResponses::new(options)),
            ProtocolName::Anthropic => Arc::new(Anthropic::new(options)),
            ProtocolName::Gemini => Arc::new(Gemini::new(options)),
            _ => return None,
        })
    }

    /// The open-model text format, if this names one.
    fn text_format(self) -> Option<TextFormat> {
        Some(match self {
            ProtocolName::Hermes => TextFormat::Hermes,
            ProtocolName::Qwen3CoderXml => TextFormat::Qwen3CoderXml,
            ProtocolName::Mistral => TextFormat::Mistral,
            ProtocolName::Llama3Json => TextFormat::Llama3Json,
            ProtocolName::Pythonic => TextFormat::Pythonic,
            ProtocolName::DeepseekV3 => TextFormat::DeepSeekV3,
            ProtocolName::DeepseekV31 => TextFormat::DeepSeekV31,
            ProtocolName::KimiK2 => TextFormat::KimiK2,
            ProtocolName::Glm45 => TextFormat::Glm45,
            ProtocolName::Glm47 => TextFormat::Glm47,
            ProtocolName::MinimaxM2 => TextFormat::MinimaxM2,
            _ => return None,
        })
    }

    /// A text protocol other than VCP (a format, or `auto`), with sequential ids.
    fn text_protocol(self, vcp: VcpOptions) -> Option<TextProtocol> {
        let options = TextFormatOptions::default().request_ids(RequestIdStyle::Sequential);
        if self == ProtocolName::Auto {
            return Some(TextProtocol::Auto(Box::new(
                AutoProtocol::new().with_options(options).with_vcp(VcpProtocol::new(vcp)),
            )));
        }
        self.text_format()
            .map(|format| TextProtocol::Format(TextFormatProtocol::new(format).with_options(options)))
    }
}

/// `auto` or an open-model format.
enum TextProtocol {
    Auto(Box<AutoProtocol>),
    Format(TextFormatProtocol),
}

impl TextProtocol {
    fn protocol(&self) -> Arc<dyn ToolCallingProtocol> {
        match self {
            TextProtocol::Auto(auto) => Arc::new((**auto).clone()),
            TextProtocol::Format(format) => Arc::new(*format),
        }
    }

    /// The reply read one-shot, or streamed `size` bytes at a time.
    fn parse(&self, text: &str, stream_chunk: Option<usize>) -> ParsedReply {
        let Some(size) = stream_chunk else {
            return match self {
                TextProtocol::Auto(auto) => auto.parse(text).1,
                TextProtocol::Format(format) => format.parse(text),
            };
        };
        let mut parser: Box<dyn IncrementalParser> = match self {
            TextProtocol::Auto(auto) => Box::new(auto.stream_parser()),
            TextProtocol::Format(format) => Box::new(format.stream_parser()),
        };
        let mut events = Vec::new();
        let mut collector = StreamCollector::new();
        for chunk in chunks(text, size) {
            parser.push_text(chunk, &mut events);
            collector.extend(events.drain(..));
        }
        parser.finish(&mut events);
        collector.extend(events);
        let mut reply = ParsedReply::default();
        reply.normal_text = collector.prose().to_string();
        let outcome = collector.into_outcome();
        reply.requests = outcome.requests;
        reply.diagnostics = outcome.diagnostics;
        reply
    }
}

/// The VCP parser options, shared by `parse` and `cycle`.
#[derive(Debug, Args)]
struct VcpFlags {
    /// Accept fuzzy VCP markers (`<<[tool_request]>>`, `{始}` …).
    #[arg(long)]
    fuzzy: bool,
    /// Ignore START markers inside backtick code fences.
    #[arg(long)]
    skip_fenced: bool,
    /// Parse inside `<think>` reasoning instead of hiding it.
    #[arg(long)]
    keep_think: bool,
}

impl VcpFlags {
    /// The parser options these flags select.
    fn options(&self) -> VcpOptions {
        vcp_options(self.fuzzy, self.skip_fenced, self.keep_think)
    }
}

/// The parser options the tester's flags (and the web page's checkboxes) select, with
/// sequential ids (deterministic output).
fn vcp_options(fuzzy: bool, skip_fenced: bool, keep_think: bool) -> VcpOptions {
    VcpOptions::default()
        .fuzzy_markers(fuzzy)
        .skip_fenced(skip_fenced)
        .keep_reasoning(keep_think)
        .request_ids(RequestIdStyle::Sequential)
}

#[derive(Debug, Args)]
struct ParseArgs {
    /// Protocol the reply is written in.
    #[arg(long, value_enum, default_value = "vcp")]
    protocol: ProtocolName,
    #[command(flatten)]
    vcp: VcpFlags,
    /// Feed the input to the streaming parser N bytes at a time (N ≥ 1; cuts move back
    /// to char boundaries) and print the same document.
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

/// The VCP parsing APIs `bench` can time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BenchApi {
    #[value(name = "view_events")]
    ViewEvents,
    #[value(name = "parse_view")]
    ParseView,
    #[value(name = "parse")]
    Parse,
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// Protocol the file is written in.
    #[arg(long, value_enum, default_value = "vcp")]
    protocol: ProtocolName,
    /// How many timed parses to run.
    #[arg(long, value_name = "K", default_value_t = 20)]
    iterations: u32,
    /// Time the owned parse (`parse`) instead of the fastest complete one (same as
    /// `--api parse`).
    #[arg(long)]
    owned: bool,
    /// For VCP, which API to time: the pull parser `view_events` (the default, and the
    /// fastest), the collected `parse_view`, or the owned `parse`.
    #[arg(long, value_enum)]
    api: Option<BenchApi>,
    /// The reply to parse, or `-` for standard input.
    #[arg(value_name = "FILE")]
    input: PathBuf,
}

#[derive(Debug, Args)]
struct ExecArgs {
    /// The method to call: a full name (`calc_add`), or a tool id with `--command`.
    #[arg(value_name = "TOOL_NAME")]
    tool_name: String,
    /// Adds a `command` argument (routes `TOOL_NAME` + METHOD like a VCP request).
    #[arg(long, value_name = "METHOD")]
    command: Option<String>,
    /// Time limit of the call in milliseconds (default 30000).
    #[arg(long, value_name = "T")]
    timeout_ms: Option<u64>,
    /// The arguments, as a JSON object.
    #[arg(long, value_name = "JSON", allow_hyphen_values = true)]
    args: String,
}

#[derive(Debug, Args)]
struct CycleArgs {
    /// Protocol the reply is written in.
    #[arg(long, value_enum, default_value = "vcp")]
    protocol: ProtocolName,
    /// Run the calls one after another instead of in parallel.
    #[arg(long)]
    serial: bool,
    /// Time limit of each call in milliseconds (default 30000).
    #[arg(long, value_name = "T")]
    timeout_ms: Option<u64>,
    /// Print only what goes back to the model, as it is sent: the text for a text
    /// protocol, the messages' JSON for a native one.
    #[arg(long)]
    raw: bool,
    #[command(flatten)]
    vcp: VcpFlags,
    /// The reply, or `-` for standard input.
    #[arg(value_name = "FILE|-")]
    input: PathBuf,
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
                    "error: a subcommand is required (parse, bench, discover, prompt, exec, cycle, serve); \
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
        Command::Exec(args) => exec(&args),
        Command::Cycle(args) => cycle(&args),
        Command::Serve(args) => web::serve(args.port),
    }
}

/// The demo tools, collected from link-time registrations.
fn demo_registry() -> Result<Arc<ToolRegistry>, Failure> {
    ToolRegistry::from_inventory()
        .map(Arc::new)
        .map_err(|e| Failure::msg(format!("bad tool definition: {e}")))
}

fn discover(args: &DiscoverArgs) -> Result<(), Failure> {
    print_json(&discover_value(args.all)?)
}

/// The demo tools as the discovery service sees them (`all`: not only agent-callable).
fn discover_value(all: bool) -> Result<Value, Failure> {
    let discovery = DiscoveryService::new(demo_registry()?);
    let everything = |_: &ToolSpec, _: &MethodSpec| true;
    let filter: Option<MethodFilter<'_>> = if all { Some(&everything) } else { None };
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
                        "vcp_command": command_alias(&method.definition.protocol_config),
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
    Ok(json!({ "tools": tools }))
}

fn prompt(args: &PromptArgs) -> Result<(), Failure> {
    match prompt_value(args.protocol, args.lang)? {
        Value::String(text) => {
            let mut out = io::stdout().lock();
            out.write_all(text.as_bytes()).map_err(|e| Failure::msg(format!("cannot write output: {e}")))
        }
        tools => print_json(&tools),
    }
}

/// The tool-definition prompt of `protocol`: text for a text protocol, the JSON `tools`
/// value for a native one.
fn prompt_value(protocol: ProtocolName, lang: Lang) -> Result<Value, Failure> {
    let discovery = DiscoveryService::new(demo_registry()?);
    let definitions = discovery.enabled_definitions(&ToolCallConfig::default());
    if let Some(text_protocol) = protocol.text_protocol(VcpOptions::default()) {
        let declarations = text_protocol.protocol().tool_declarations(&definitions);
        return Ok(Value::String(declarations.as_prompt().unwrap_or_default().to_string()));
    }
    if let Some(native) = protocol.native() {
        return Ok(native.tool_declarations(&definitions).as_native().cloned().unwrap_or(Value::Null));
    }
    let language = match lang {
        Lang::En => Language::En,
        Lang::Zh => Language::Zh,
    };
    let declarations = VcpProtocol::default().with_language(language).tool_declarations(&definitions);
    Ok(Value::String(declarations.as_prompt().unwrap_or_default().to_string()))
}

fn parse(args: &ParseArgs) -> Result<(), Failure> {
    let text = read_input(&args.input)?;
    print_json(&parse_value(args.protocol, args.vcp.options(), &text, args.stream_chunk)?)
}

/// The requests and diagnostics `protocol` reads in `text` (and, for the open-model
/// formats, the normal text), one-shot or streamed `stream_chunk` bytes at a time.
fn parse_value(
    protocol: ProtocolName,
    options: VcpOptions,
    text: &str,
    stream_chunk: Option<usize>,
) -> Result<Value, Failure> {
    if stream_chunk == Some(0) {
        return Err(Failure::msg("--stream-chunk must be at least 1"));
    }
    if let Some(text_protocol) = protocol.text_protocol(options) {
        let reply = text_protocol.parse(text, stream_chunk);
        let normal_text = reply.normal_text.clone();
        let mut document = outcome_json(&reply.into_outcome());
        if let Some(map) = document.as_object_mut() {
            map.insert("normal_text".into(), Value::String(normal_text));
        }
        return Ok(document);
    }
    if let Some(native) = protocol.native() {
        let outcome = match stream_chunk {
            None => parse_native_body(native.as_ref(), text)?.1,
            Some(size) => parse_native_stream(native.as_ref(), text, size).1,
        };
        return Ok(outcome_json(&outcome));
    }
    let vcp = VcpProtocol::new(options);
    let outcome = match stream_chunk {
        None => vcp.parse(text),
        Some(size) => parse_streaming(&vcp, text, size),
    };
    Ok(outcome_json(&outcome))
}

/// Feeds `text` to the streaming parser in chunks of `size` bytes (see [`chunks`]) and
/// collects the events into the outcome the one-shot parser would give.
fn parse_streaming(protocol: &VcpProtocol, text: &str, size: usize) -> ParseOutcome {
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    let mut collector = StreamCollector::new();
    for chunk in chunks(text, size) {
        parser.push_text(chunk, &mut events);
        collector.extend(events.drain(..));
    }
    parser.finish(&mut events);
    collector.extend(events.drain(..));
    collector.into_outcome()
}

/// A response body's turn and what the protocol reads in it. A body the provider's
/// format cannot read (an error body, another shape) gives no turn and an
/// `invalid_payload` diagnostic; text that is not JSON at all is a usage error.
fn parse_native_body(native: &dyn Native, text: &str) -> Result<(AssistantTurn, ParseOutcome), Failure> {
    let body: Value = serde_json::from_str(text)
        .map_err(|e| Failure::msg(format!("the input is not a JSON response body: {e}")))?;
    Ok(match native.parse_response(&body) {
        Ok(turn) => {
            let outcome = native.parse_turn(&turn);
            (turn, outcome)
        }
        Err(error) => (AssistantTurn::new(), invalid_payload(&error.to_string())),
    })
}

/// An outcome of no request and one `invalid_payload` diagnostic.
fn invalid_payload(message: &str) -> ParseOutcome {
    ParseOutcome::new(
        Vec::new(),
        vec![Diagnostic::new(DiagnosticKind::InvalidPayload, message, Span::default())],
    )
}

/// A server-sent-events transcript fed `size` bytes at a time (cuts may split lines and
/// characters, as a network does) through the provider's decoder and the protocol's
/// incremental parser: the turn, and the outcome the collected events give. An error
/// event ends the stream with an `invalid_payload` diagnostic.
fn parse_native_stream(native: &dyn Native, text: &str, size: usize) -> (AssistantTurn, ParseOutcome) {
    let mut stream = ResponseStream::new(native.as_wire());
    let mut parser = native.incremental_parser().unwrap_or_else(|| unreachable_parser());
    let mut turn = TurnAccumulator::new();
    let (mut deltas, mut events) = (Vec::new(), Vec::new());
    let mut collector = StreamCollector::new();
    let mut error = None;
    for chunk in text.as_bytes().chunks(size) {
        if let Err(e) = stream.push(chunk, &mut deltas) {
            error = Some(e);
            break;
        }
        for delta in deltas.drain(..) {
            turn.push(&delta);
            parser.push(&delta, &mut events);
        }
        collector.extend(events.drain(..));
    }
    stream.finish(&mut deltas);
    for delta in deltas.drain(..) {
        turn.push(&delta);
        parser.push(&delta, &mut events);
    }
    parser.finish(&mut events);
    collector.extend(events);
    let mut outcome = collector.into_outcome();
    if let Some(error) = error {
        outcome.diagnostics.extend(invalid_payload(&error.to_string()).diagnostics);
    }
    (turn.finish(), outcome)
}

/// Native protocols always have an incremental parser; this is never called.
fn unreachable_parser() -> Box<dyn IncrementalParser> {
    Box::new(tool_calling::protocol::native::NativeStreamParser::new(RequestIdStyle::Sequential))
}

/// `text` in chunks of `size` bytes (`size` ≥ 1): a cut inside a character moves back to
/// the character's start, but every chunk holds at least one character.
fn chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (chunk, tail) = rest.split_at(cut.max(first.len_utf8()));
        rest = tail;
        Some(chunk)
    })
}

/// The context for `exec` and `cycle`: default config, with `--timeout-ms` and
/// `--serial` applied.
fn execution_context(timeout_ms: Option<u64>, serial: bool) -> Result<ExecutionContext, Failure> {
    let mut config = ToolCallConfig::default();
    if let Some(timeout_ms) = timeout_ms {
        if timeout_ms == 0 {
            return Err(Failure::msg("--timeout-ms must be at least 1"));
        }
        config.timeout_ms = timeout_ms;
    }
    config.parallel_execution = !serial;
    Ok(ExecutionContext::new(config))
}

/// A runtime for the executor: async tools and time limits need one.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::msg(format!("cannot start the async runtime: {e}")))
}

fn exec(args: &ExecArgs) -> Result<(), Failure> {
    let value: Value = serde_json::from_str(&args.args)
        .map_err(|e| Failure::msg(format!("--args is not valid JSON: {e}")))?;
    let result =
        runtime()?.block_on(exec_value(&args.tool_name, args.command.as_deref(), value, args.timeout_ms))?;
    print_json(&result)
}

/// Runs one demo-tool call through the executor: `tool_name` with `args` (a JSON
/// object), routed as VCP routes a request when `command` is given or the name is not a
/// full method name.
async fn exec_value(
    tool_name: &str,
    command: Option<&str>,
    args: Value,
    timeout_ms: Option<u64>,
) -> Result<Value, Failure> {
    let Value::Object(map) = args else {
        return Err(Failure::msg(format!("--args must be a JSON object, not {}", json_kind(&args))));
    };
    let mut request = ParsedToolRequest::new("req_1", tool_name);
    if let Some(command) = command {
        if map.contains_key("command") {
            return Err(Failure::msg("give the command either with --command or in --args, not both"));
        }
        request = request.with_arg("command", command);
    }
    for (key, value) in map {
        request = request.with_arg(key, value);
    }
    let ctx = execution_context(timeout_ms, false)?;
    let registry = demo_registry()?;
    // A full method name runs that method with the arguments as given; anything else (a
    // tool id with `--command`, an alias) is routed as VCP routes a request.
    let calls = if command.is_none() && registry.method(&request.tool_name).is_some() {
        PlannedRequest::exact(&request).calls
    } else {
        VcpProtocol::default().resolve(&request, &registry.catalog())
    };
    let executor = Executor::new(registry);
    let result = executor.execute_request(PlannedRequest::new(&request, calls), &ctx).await;
    Ok(result_json(&result))
}

fn cycle(args: &CycleArgs) -> Result<(), Failure> {
    let text = read_input(&args.input)?;
    let ctx = execution_context(args.timeout_ms, args.serial)?;
    let value = runtime()?.block_on(cycle_value(args.protocol, args.vcp.options(), &text, &ctx))?;
    match (&value["context"], args.raw) {
        (Value::String(context), true) => {
            print!("{context}");
            io::stdout().flush().map_err(|e| Failure::msg(format!("cannot write the output: {e}")))
        }
        (context, true) => print_json(context),
        (_, false) => print_json(&value),
    }
}

/// The full parse → execute → format cycle on a reply (a response body for a native
/// protocol) with the demo tools.
async fn cycle_value(
    protocol: ProtocolName,
    options: VcpOptions,
    text: &str,
    ctx: &ExecutionContext,
) -> Result<Value, Failure> {
    if let Some(native) = protocol.native() {
        return cycle_native(native, text, ctx).await;
    }
    let protocol: Arc<dyn ToolCallingProtocol> = match protocol.text_protocol(options) {
        Some(text_protocol) => text_protocol.protocol(),
        None => Arc::new(VcpProtocol::new(options)),
    };
    let engine = Engine::new(demo_registry()?).with_protocol(protocol);
    let cycle = engine
        .process_tool_call_cycle(text, ctx)
        .await
        .map_err(|e| Failure::msg(format!("cannot run the cycle: {e}")))?;
    let context = cycle.result_text();
    Ok(json!({
        "has_tool_requests": cycle.has_tool_requests,
        "parsed": cycle.parsed_requests.iter().map(request_json).collect::<Vec<_>>(),
        "results": cycle.execution_results.iter().map(result_json).collect::<Vec<_>>(),
        "context": context,
        "diagnostics": cycle.diagnostics.iter().map(diagnostic_json).collect::<Vec<_>>(),
    }))
}

/// The cycle on a native response body; `context` is what goes back to the provider, in
/// its own shape: the result messages as its API takes them (for Anthropic and Gemini
/// the one message or content they make).
async fn cycle_native(native: Arc<dyn Native>, text: &str, ctx: &ExecutionContext) -> Result<Value, Failure> {
    let (turn, _) = parse_native_body(native.as_ref(), text)?;
    let protocol = native.clone().into_protocol();
    let engine = Engine::new(demo_registry()?).with_protocol(protocol);
    let cycle = engine
        .process_turn(&turn, ctx)
        .await
        .map_err(|e| Failure::msg(format!("cannot run the cycle: {e}")))?;
    // The turn first, so that a provider that echoes call ids (Gemini) sees which calls
    // had one; then the results, which are the context.
    let mut history = vec![Message::from_turn(turn)];
    history.extend(cycle.result_messages.iter().cloned());
    let turn_items = native.wire_messages(&history[..1]).as_array().map_or(0, Vec::len);
    let mut results: Vec<Value> = native.wire_messages(&history).as_array().cloned().unwrap_or_default();
    let results = results.split_off(turn_items.min(results.len()));
    let context = match args_shape(native.id()) {
        Shape::List => Value::Array(results),
        Shape::One => results.into_iter().next().unwrap_or(Value::Null),
    };
    Ok(json!({
        "has_tool_requests": cycle.has_tool_requests,
        "parsed": cycle.parsed_requests.iter().map(request_json).collect::<Vec<_>>(),
        "results": cycle.execution_results.iter().map(result_json).collect::<Vec<_>>(),
        "context": context,
        "diagnostics": cycle.diagnostics.iter().map(diagnostic_json).collect::<Vec<_>>(),
    }))
}

/// How a provider's results are printed: a list of messages or items, or the one
/// message (Anthropic) or content (Gemini) holding them all.
enum Shape {
    List,
    One,
}

fn args_shape(protocol: &str) -> Shape {
    match protocol {
        "anthropic" | "gemini" => Shape::One,
        _ => Shape::List,
    }
}

/// What kind of JSON value `value` is, for messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn bench(args: &BenchArgs) -> Result<(), Failure> {
    if args.protocol.native().is_some() {
        return Err(Failure::msg(format!(
            "bench measures text protocols; --protocol {} is a native API",
            args.protocol.as_str()
        )));
    }
    if args.iterations == 0 {
        return Err(Failure::msg("--iterations must be at least 1"));
    }
    let text = read_input(&args.input)?;
    // The parser a library user gets by default.
    let text_protocol = args.protocol.text_protocol(VcpOptions::default());
    let vcp = VcpProtocol::default();
    // The fastest API that still gives every request with every field and value: VCP's
    // pull parser (each request borrowed from the input, one at a time), unless another
    // is asked for; the open-model formats have the owned parse only.
    let chosen = if args.owned { BenchApi::Parse } else { args.api.unwrap_or(BenchApi::ViewEvents) };
    let api = match (&text_protocol, chosen) {
        (None, BenchApi::ViewEvents) => "view_events",
        (None, BenchApi::ParseView) => "parse_view",
        _ => "parse",
    };
    let parse_once = |text: &str| -> usize {
        match &text_protocol {
            Some(TextProtocol::Format(format)) => format.parse(text).requests.len(),
            Some(TextProtocol::Auto(auto)) => auto.parse(text).1.requests.len(),
            None => match chosen {
                BenchApi::Parse => vcp.parse(text).requests.len(),
                BenchApi::ParseView => vcp.parse_view(text).requests.len(),
                // Every request is made, with all its fields and values, then dropped.
                BenchApi::ViewEvents => {
                    vcp.view_events(text).filter(|event| matches!(event, ViewEvent::Request(_))).count()
                }
            },
        }
    };
    // One untimed parse: warms caches and counts the requests.
    let requests = parse_once(&text);

    let mut times: Vec<Duration> = Vec::with_capacity(args.iterations as usize);
    for _ in 0..args.iterations {
        let started = Instant::now();
        let found = parse_once(std::hint::black_box(text.as_str()));
        std::hint::black_box(found);
        times.push(started.elapsed());
    }
    let median = median(&mut times);
    let median_ns = u64::try_from(median.as_nanos()).unwrap_or(u64::MAX);
    // Guard the division: a timer may report 0 for a tiny input.
    let seconds = median.as_secs_f64().max(1e-9);
    let mb_per_s = text.len() as f64 / seconds / 1e6;

    print_json(&json!({
        "api": api,
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
        Some(low) if times.len().is_multiple_of(2) => (*low + middle) / 2,
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

fn result_json(result: &ToolExecutionResult) -> Value {
    json!({
        "request_id": result.request_id,
        "tool_name": result.tool_name,
        "status": result.status.as_str(),
        "result": result.result,
        "error_kind": result.error_kind.map(|kind| kind.as_str()),
        "duration_ms": result.duration_ms,
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
