//! `tool-calling`: the command-line and web tester of the tool-calling library.
//!
//! ```text
//! tool-calling SUBCOMMAND [OPTIONS] [FILE|-]
//! ```
//!
//! Every subcommand prints one JSON document (pretty-printed) on stdout and exits 0 on
//! success. Bad usage, an unreadable file, input that is not UTF-8 (the line names the
//! byte offset) or a method that does not exist exits 2 with exactly one line on stderr.
//! `FILE` may be `-` to read standard input.
//!
//! # `parse`
//!
//! ```text
//! tool-calling parse [--protocol ID] [--fuzzy] [--skip-fenced] [--keep-think] [--stream-chunk N] FILE|-
//! ```
//!
//! Parses a model reply and prints
//! `{"requests": [{"request_id", "tool_name", "args", "complete", "problems", "start",
//! "end"}], "diagnostics": [{"kind", "message", "start", "end"}]}`. Offsets are byte
//! offsets into the input as read, `end` exclusive; `args` keep the order the model wrote
//! them in.
//!
//! `ID` is any built-in protocol of the library (`ProtocolRegistry::builtin_ids`): `vcp`
//! (the default), the native APIs `openai`, `openai_responses`, `anthropic`, `gemini`,
//! the open-model formats (`hermes`, `qwen3_coder_xml`, `harmony`, `deepseek_v32`, …: every
//! id of `TextFormat::ALL`, which `tool-calling parse --help` lists) and `auto`, which detects which text protocol a reply uses.
//!
//! Requests without a model-chosen `request_id` get **sequential** ids (`req_1`, `req_2`,
//! … per run) rather than the library's default random ones, so that the output is
//! deterministic and can be compared byte for byte.
//!
//! `--fuzzy`, `--skip-fenced` and `--keep-think` switch on the VCP parser options of the
//! same meaning (`VcpOptions::fuzzy_markers`, `skip_fenced`, `keep_reasoning`).
//!
//! `--stream-chunk N` (N ≥ 1) feeds the reply to the protocol's streaming parser
//! (`StreamParser`) N bytes at a time and prints what the collected events give: the
//! same document as without the flag, for every N. For a text protocol a cut that would
//! split a character moves back to the character's start, but every chunk holds at least
//! one character (so `--stream-chunk 1` feeds a 3-byte `始` as one chunk).
//!
//! For a native protocol FILE is a JSON response body, or with `--stream-chunk N` a
//! server-sent-events transcript, fed N bytes at a time (cuts anywhere, as a network
//! makes them) through the provider's stream decoder; both print the same document.
//! `args` are the JSON values of each call. A body the provider's format cannot read (an
//! error body) gives no request and an `invalid_payload` diagnostic; input that is not
//! JSON at all exits 2.
//!
//! For an open-model format or `auto` the document also carries `"normal_text"`, the
//! reply without its call markup; `args` are the JSON values of each call.
//!
//! # `bench`
//!
//! ```text
//! tool-calling bench [--protocol vcp|FORMAT|auto] [--iterations K] [--api pull|view|owned] [--owned] FILE
//! ```
//!
//! Parses FILE K times in-process (default 20) with the default parser options and prints
//! `{"api", "bytes", "requests", "iterations", "median_ns", "mb_per_s"}`, where
//! `mb_per_s` is bytes / median seconds / 10^6 and `api` names what was timed. For VCP,
//! `--api` picks the API by shape: `pull` (the default: `VcpProtocol::view_events`, each
//! request with every field and value borrowed from the input, one at a time, the
//! fastest), `view` (`parse_view`, the whole parse borrowing the text) or `owned`
//! (`parse`, the whole parse into owned values; `--owned` is the same). The names
//! `view_events`, `parse_view` and `parse` are accepted for them. The open-model formats
//! have the owned parse only.
//!
//! # `discover`
//!
//! ```text
//! tool-calling discover [--all]
//! ```
//!
//! Prints the demo tools (`demo_tools.rs`, registered with `#[tool]`) as the discovery
//! service sees them: `{"tools": [{"tool_id", "tool_name", "description", "category",
//! "tags", "version", "documentation_url", "methods": [{"name", "description",
//! "agent_callable", "vcp_command", "parameters": [{"name", "type", "required",
//! "default", "description"}], "examples", "schema"}]}]}`. Only agent-callable methods
//! unless `--all`.
//!
//! # `prompt`
//!
//! ```text
//! tool-calling prompt [--protocol ID] [--lang en|zh]
//! ```
//!
//! Prints the tool-definition prompt for the demo tools as it is sent: plain text for a
//! text protocol (VCP in the language asked for; an open-model format's own prompt;
//! `auto` offers VCP's), the JSON `tools` value for a native protocol.
//!
//! # `exec`
//!
//! ```text
//! tool-calling exec TOOL_NAME [--command METHOD] [--timeout-ms T] --args JSON
//! ```
//!
//! Runs one demo-tool call through the real executor (the agent-callable check, toggles,
//! argument defaults, coercion and validation, the time limit) and prints its result:
//! `{"request_id", "tool_name", "status", "result", "error_kind", "duration_ms"}`.
//! `status` is `"success"` or `"error"`; `error_kind` is `null` on success, else
//! `"validation"`, `"permission"`, `"timeout"`, `"execution"`, …; `tool_name` is the
//! resolved full method name; the request id is always `req_1`.
//!
//! `--args` must be a JSON object; its values are passed to the executor as they are
//! (JSON numbers stay numbers, strings are coerced by the method's schema, as for a VCP
//! reply). A full method name (`calc_add`, `text_label`) runs that method with every
//! argument as given. `--command METHOD` adds a `command` argument, and the call is then
//! routed as a VCP request naming the tool id and the command (`exec calc --command add
//! --args '{"a":1,"b":2}'`), VCP's rules included (its control keys `archery`, `ink`,
//! `river`, `vref` do not reach the method); so is a name that is not a full method name.
//! A name that routes to no method is a usage error (exit 2, the closest name suggested),
//! as is giving both `--command` and a `command` key. `--timeout-ms T` (at least 1)
//! replaces the default time limit of 30 000 ms for methods without their own. A call
//! that fails (a tool error, a validation error, a refusal, a timeout) is a result: it is
//! printed and the exit code is 0.
//!
//! # `cycle`
//!
//! ```text
//! tool-calling cycle [--protocol ID] [--serial] [--timeout-ms T] [--raw] [--fuzzy] [--skip-fenced] [--keep-think] FILE|-
//! ```
//!
//! Runs the engine's full parse → execute → format cycle on a model reply with the demo
//! tools (`samples/demo_reply.txt` is one) and prints `{"has_tool_requests", "parsed",
//! "results", "context", "diagnostics"}`: `parsed` holds the requests exactly as `parse`
//! prints them (sequential ids), `results` one `exec`-shaped result per request in the
//! same order (a VCP batch's, `command1`, `command2`, …, also has `calls`: each call's
//! `{"tool_name", "status", "result", "error_kind"}` in order, beside the joined
//! `result`), `context` the text that would be fed back to the model (empty when there
//! were no requests), `diagnostics` what the parser noticed, as in `parse`. Calls run in
//! parallel unless `--serial`; `--timeout-ms` and the parser flags mean what they mean
//! for `exec` and `parse`. With an open-model format (or `auto`), `context` is the text
//! of the results in that format's shape (`<tool_response>…`, `[TOOL_RESULTS]…`, …).
//! `--raw` prints only `context`, as it is sent: the text itself for a text protocol (no
//! JSON quoting), the JSON of the messages for a native one.
//!
//! With a native protocol, FILE is a response body and `context` is the JSON of what
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
//! tool-calling serve [--port P]
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
//! `web.rs`).

//!
//! # `gateway`
//!
//! ```text
//! tool-calling gateway --upstream URL [--protocol vcp|auto|FORMAT|native] [--host H] [--port P]
//!     [--model NAME] [--api-key-env VAR] [--timeout SECONDS] [--no-retry] [--constrain SERVER]
//! ```
//!
//! Serves the library's gateway (`tool_calling::gateway`) on `H:P` (default
//! `127.0.0.1:4000`; port 0 picks a free one) until killed, and prints
//! `listening on http://H:PORT` as the first line on stderr. OpenAI clients use
//! `http://H:PORT/v1` (`POST /v1/chat/completions`, `POST /v1/responses`), Anthropic
//! clients `http://H:PORT` (`POST /v1/messages`): their `tools` become the protocol's
//! prompt for the upstream (an OpenAI-compatible Chat Completions server at `URL`, up
//! to `/v1`), and the upstream's text comes back as tool calls. `RUST_LOG=tool_calling=info`
//! logs each request with its timings.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand, ValueEnum};
use tool_calling::protocol::ProtocolRegistry;
use tool_calling::protocol::vcp::{RequestIdStyle, VcpOptions};

mod commands;
mod demo_tools;
mod web;

/// The name the program calls itself in its messages.
const PROGRAM: &str = "tool-calling";

/// Command-line tester for the tool-calling library.
#[derive(Debug, Parser)]
#[command(name = "tool-calling", version, about)]
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
    /// Print a grammar for constrained decoding that admits only valid calls to the
    /// demo tools.
    Grammar(GrammarArgs),
    /// Run one demo-tool call through the executor and print its result.
    Exec(ExecArgs),
    /// Run the full parse → execute → format cycle on a reply with the demo tools.
    Cycle(CycleArgs),
    /// Serve the tester in a browser, on 127.0.0.1.
    Serve(ServeArgs),
    /// Serve an OpenAI-compatible gateway that gives tool calling to the model of an
    /// upstream Chat Completions server, through a text protocol.
    Gateway(GatewayArgs),
}

/// `--protocol`: the id of one of the library's built-in protocols.
fn protocol_ids() -> ProtocolIds {
    ProtocolIds(ProtocolRegistry::builtin_ids())
}

/// A protocol id among `.0`; a name that is none of them is answered with the closest
/// one, not with the whole list (`--help` has it).
#[derive(Debug, Clone)]
struct ProtocolIds(Vec<&'static str>);

impl ProtocolIds {
    /// The id nearest to `name` (a typo or two away), if one is.
    fn closest(&self, name: &str) -> Option<&'static str> {
        let name = name.to_ascii_lowercase();
        let (distance, id) =
            self.0.iter().map(|id| (strsim::damerau_levenshtein(id, &name), *id)).min_by_key(|(d, _)| *d)?;
        (distance <= 2.max(name.len() / 3)).then_some(id)
    }
}

impl TypedValueParser for ProtocolIds {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let name = value.to_string_lossy();
        if self.0.contains(&name.as_ref()) {
            return Ok(name.into_owned());
        }
        let flag = arg.map_or_else(|| "--protocol".to_string(), |arg| format!("--{}", arg.get_id()));
        let mut message = format!("unknown protocol `{name}` for {flag}");
        if let Some(id) = self.closest(&name) {
            message.push_str(&format!("; did you mean `{id}`?"));
        }
        message.push_str(&format!(" (`--help` lists the {} protocols)", self.0.len()));
        Err(cmd.clone().error(ErrorKind::InvalidValue, message))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(PossibleValue::new)))
    }
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 8787)]
    port: u16,
}

#[derive(Debug, Args)]
struct GatewayArgs {
    /// The upstream's base URL, up to `/v1` (it is sent `POST {URL}/chat/completions`).
    #[arg(long)]
    upstream: String,
    /// How the upstream's model is prompted and read: `vcp`, an open-model format's id,
    /// `auto` (prompt in the format the model's name suggests, read any), or `native`
    /// (the upstream's own tools API; requests pass through).
    #[arg(long, default_value = "vcp", value_parser = gateway_protocols())]
    protocol: String,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 4000)]
    port: u16,
    /// The model named upstream, whatever the client asks for.
    #[arg(long)]
    model: Option<String>,
    /// The environment variable holding the key sent upstream (without it, the client's
    /// own `Authorization` is passed on).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// The longest one request may take, in seconds.
    #[arg(long, default_value_t = 600.0)]
    timeout: f64,
    /// Do not ask again when `tool_choice` required a call and the reply made none.
    #[arg(long)]
    no_retry: bool,
    /// Send the protocol's grammar for the offered tools, for constrained decoding by
    /// this server: `vllm` (Lark), `sglang` (GBNF) or `llama-cpp` (GBNF).
    #[arg(long, value_name = "SERVER", value_parser = ["vllm", "sglang", "llama-cpp"])]
    constrain: Option<String>,
    /// With --constrain: the most characters of a string value whose schema sets no
    /// smaller `maxLength` (default: unbounded).
    #[arg(long, value_name = "N", requires = "constrain")]
    max_text: Option<u32>,
    /// With --constrain: the most calls in one reply (`parallel_tool_calls: false`
    /// allows one).
    #[arg(long, value_name = "N", default_value_t = 4, requires = "constrain")]
    max_calls: u32,
}

/// `gateway --protocol`: every built-in text protocol, `auto` and `native`.
fn gateway_protocols() -> ProtocolIds {
    let ids = ProtocolRegistry::builtin_ids()
        .into_iter()
        .filter(|id| !matches!(*id, "openai" | "openai_responses" | "anthropic" | "gemini"))
        .chain(["native"]);
    ProtocolIds(ids.collect())
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

/// The VCP options the tester's flags (and the web page's checkboxes) select, with
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
    #[arg(long, value_parser = protocol_ids(), default_value = "vcp")]
    protocol: String,
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
    #[arg(long, value_parser = protocol_ids(), default_value = "vcp")]
    protocol: String,
    /// Language of the template.
    #[arg(long, value_enum, default_value = "en")]
    lang: Lang,
}

#[derive(Debug, Args)]
struct GrammarArgs {
    /// Protocol whose calls the grammar admits.
    #[arg(long, value_parser = protocol_ids(), default_value = "vcp")]
    protocol: String,
    /// The grammar's language: `lark` (llguidance), `gbnf` (llama.cpp), `json-schema`,
    /// `structural-tag`.
    #[arg(long, default_value = "lark")]
    dialect: String,
    /// How much of a reply it covers: `call` (exactly one), `calls` (one or more),
    /// `reply` (text with calls anywhere).
    #[arg(long, default_value = "reply")]
    scope: String,
    /// The most characters of a string value whose schema sets no smaller `maxLength`
    /// (default: unbounded).
    #[arg(long, value_name = "N")]
    max_text: Option<u32>,
    /// The most calls of the `calls` and `reply` scopes.
    #[arg(long, value_name = "N", default_value_t = 4)]
    max_calls: u32,
}

/// The VCP parsing APIs `bench` can time, by shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BenchApi {
    /// Requests taken one at a time, borrowing the text (`view_events`).
    #[value(alias = "view_events")]
    Pull,
    /// The whole parse, borrowing the text (`parse_view`).
    #[value(alias = "parse_view")]
    View,
    /// The whole parse into owned values (`parse`).
    #[value(alias = "parse")]
    Owned,
}

impl BenchApi {
    fn as_str(self) -> &'static str {
        match self {
            BenchApi::Pull => "pull",
            BenchApi::View => "view",
            BenchApi::Owned => "owned",
        }
    }
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// Protocol the file is written in.
    #[arg(long, value_parser = protocol_ids(), default_value = "vcp")]
    protocol: String,
    /// How many timed parses to run.
    #[arg(long, value_name = "K", default_value_t = 20)]
    iterations: u32,
    /// Time the owned parse instead of the fastest complete one (same as `--api owned`).
    #[arg(long)]
    owned: bool,
    /// For VCP, which API to time: `pull` (the default, and the fastest), `view` or
    /// `owned`.
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
    #[arg(long, value_parser = protocol_ids(), default_value = "vcp")]
    protocol: String,
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
    /// Any other failure; printed as `tool-calling: <message>`.
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
            Failure::Message(text) => format!("{PROGRAM}: {text}"),
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
                // No subcommand: clap would print the whole help as an error.
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => fail(&Failure::Usage(format!(
                    "error: a subcommand is required (parse, bench, discover, prompt, grammar, exec, cycle, serve, gateway); \
                     try '{PROGRAM} --help'"
                ))),
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
        Command::Parse(args) => {
            let text = commands::read_input(&args.input)?;
            commands::print_json(&commands::parse_value(
                &args.protocol,
                args.vcp.options(),
                &text,
                args.stream_chunk,
            )?)
        }
        Command::Bench(args) => {
            let api = if args.owned { BenchApi::Owned } else { args.api.unwrap_or(BenchApi::Pull) };
            commands::bench(&args.protocol, api, args.iterations, &args.input)
        }
        Command::Discover(args) => commands::print_json(&commands::discover_value(args.all)?),
        Command::Prompt(args) => commands::prompt(&args.protocol, args.lang),
        Command::Grammar(args) => {
            commands::grammar(&args.protocol, &args.dialect, &args.scope, args.max_text, args.max_calls)
        }
        Command::Exec(args) => commands::exec(&args),
        Command::Cycle(args) => commands::cycle(&args),
        Command::Serve(args) => web::serve(args.port),
        Command::Gateway(args) => gateway(args),
    }
}

/// `gateway`: serves until stopped.
fn gateway(args: GatewayArgs) -> Result<(), Failure> {
    use tool_calling::gateway::{Constrain, Gateway, GatewayConfig};
    use tool_calling::grammar::Dialect;
    use tool_calling::providers::GrammarServer;

    let timeout = std::time::Duration::try_from_secs_f64(args.timeout)
        .ok()
        .filter(|t| !t.is_zero())
        .ok_or_else(|| {
            Failure::Usage(format!(
                "error: --timeout must be a positive number of seconds, not {}",
                args.timeout
            ))
        })?;
    let mut config = GatewayConfig::new(&args.upstream)
        .protocol(&args.protocol)
        .timeout(timeout)
        .retry_required(!args.no_retry);
    if let Some(model) = args.model {
        config = config.model(model);
    }
    if let Some(var) = args.api_key_env {
        let key = std::env::var(&var)
            .map_err(|_| Failure::Usage(format!("error: the environment variable {var} is not set")))?;
        config = config.api_key(key);
    }
    config.constrain = match args.constrain.as_deref() {
        Some("vllm") => Some(Constrain::new(GrammarServer::Vllm, Dialect::Lark)),
        Some("sglang") => Some(Constrain::new(GrammarServer::Sglang, Dialect::Gbnf)),
        Some("llama-cpp") => Some(Constrain::new(GrammarServer::LlamaCpp, Dialect::Gbnf)),
        _ => None,
    }
    .map(|constrain| {
        let constrain = constrain.max_calls(args.max_calls);
        match args.max_text {
            Some(n) => constrain.max_text(n),
            None => constrain,
        }
    });
    let gateway = Gateway::new(config).map_err(|e| Failure::Usage(format!("error: {e}")))?;
    // Each request's span and timings, on stderr, when RUST_LOG asks for them.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(io::stderr).try_init();
    let runtime = commands::runtime()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
            .await
            .map_err(|e| Failure::msg(format!("cannot listen on {}:{}: {e}", args.host, args.port)))?;
        let address = listener.local_addr().map_err(|e| Failure::msg(e.to_string()))?;
        // One line (whoever started us may read just that one and close the pipe).
        let _ = writeln!(
            io::stderr(),
            "listening on http://{address} (gateway to {}, protocol {}: OpenAI clients use http://{address}/v1, \
             Anthropic clients http://{address}; Ctrl-C stops it)",
            args.upstream,
            args.protocol
        );
        // Each event goes out at once: no waiting for the last segment's ack (Nagle).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, gateway.router()).await.map_err(|e| Failure::msg(format!("the server stopped: {e}")))
    })
}
