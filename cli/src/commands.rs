//! What the subcommands compute, as JSON values: shared by the command line and the web
//! tester's API. Protocols come from the library's table of built-in protocols
//! (`ProtocolRegistry::builtin`), library types are written by serde.

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::Engine;
use tool_calling::exec::{ExecutionContext, Executor, ResolvedRequest};
use tool_calling::model::{AssistantTurn, Message, TurnDelta};
use tool_calling::protocol::Diagnostic;
use tool_calling::protocol::DiagnosticKind;
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::vcp::{
    Language, RequestIdStyle, VcpOptions, VcpProtocol, ViewEvent, command_alias,
};
use tool_calling::protocol::{
    BuiltinOptions, BuiltinProtocol, ProtocolError, ProtocolRegistry, StreamCollector, ToolCallingProtocol,
    TurnState,
};
use tool_calling::providers::{Provider, ResponseStream, WireFormat};
use tool_calling::tools::MethodExample;
use tool_calling::tools::{DiscoveryService, MethodFilter, MethodSpec, ToolMetadata, ToolRegistry, ToolSpec};
use tool_calling::{ErrorKind, Span, ToolExecutionResult, ToolRequest};

use super::{BenchApi, CycleArgs, ExecArgs, Failure, Lang};
use tool_calling::grammar::{Constraint, Dialect, GrammarError, Scope};

/// The keys of a request in the output, in order (the contract's; the library's type
/// has more).
const REQUEST_KEYS: [&str; 7] = ["request_id", "tool_name", "args", "complete", "problems", "start", "end"];
/// The keys of a result in the output, in order.
const RESULT_KEYS: [&str; 6] = ["request_id", "tool_name", "status", "result", "error_kind", "duration_ms"];
/// The keys of each call of a batch's result.
const CALL_KEYS: [&str; 4] = ["tool_name", "status", "result", "error_kind"];

/// The built-in protocol `id` (the library's table), with the tester's options: the VCP
/// flags, and sequential ids for reproducible output.
pub(crate) fn protocol(id: &str, vcp: VcpOptions) -> Result<BuiltinProtocol, Failure> {
    builtin(id, &BuiltinOptions::default().vcp(vcp).request_ids(RequestIdStyle::Sequential))
}

/// Where a native protocol's replies come from and its results go: its provider's wire
/// format. `None` for a text protocol.
pub(crate) fn wire_of(protocol: &BuiltinProtocol) -> Option<Provider> {
    Provider::from_protocol_id(protocol.id())
}

/// The built-in protocol `id` with `options`.
fn builtin(id: &str, options: &BuiltinOptions) -> Result<BuiltinProtocol, Failure> {
    ProtocolRegistry::builtin(id, options).map_err(|error| match error {
        ProtocolError::Unknown { id, known } => {
            Failure::msg(format!("unknown protocol `{id}`; one of {known}"))
        }
        other => Failure::msg(other.to_string()),
    })
}

/// Whether the protocol's documents carry the reply's `normal_text` (the open-model
/// formats and `auto`).
fn has_normal_text(protocol: &BuiltinProtocol) -> bool {
    matches!(protocol, BuiltinProtocol::TextFormat(_) | BuiltinProtocol::Auto(_))
}

/// Reads FILE (or standard input for `-`) and checks that it is UTF-8.
pub(crate) fn read_input(path: &Path) -> Result<String, Failure> {
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

/// Prints `value` pretty, with a final newline.
pub(crate) fn print_json(value: &Value) -> Result<(), Failure> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| Failure::msg(format!("cannot encode JSON: {e}")))?;
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure::msg(format!("cannot write output: {e}")))
}

/// Prints `text` as it is.
fn print_text(text: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::msg(format!("cannot write output: {e}")))
}

/// `value` serialised by serde, keeping only `keys`, in that order.
fn with_keys<T: Serialize>(value: &T, keys: &[&str]) -> Result<Value, Failure> {
    let mut map = match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        Ok(other) => return Err(Failure::msg(format!("cannot encode JSON: not an object: {other}"))),
        Err(e) => return Err(Failure::msg(format!("cannot encode JSON: {e}"))),
    };
    Ok(Value::Object(keys.iter().filter_map(|key| Some((key.to_string(), map.remove(*key)?))).collect()))
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<Value, Failure> {
    serde_json::to_value(value).map_err(|e| Failure::msg(format!("cannot encode JSON: {e}")))
}

fn requests_json(requests: &[ToolRequest]) -> Result<Value, Failure> {
    requests.iter().map(|r| with_keys(r, &REQUEST_KEYS)).collect::<Result<_, _>>().map(Value::Array)
}

/// The results; one a protocol resolved to several calls (a VCP batch) also has `calls`,
/// each call's own outcome in order.
fn results_json(results: &[ToolExecutionResult]) -> Result<Value, Failure> {
    results
        .iter()
        .map(|r| {
            let mut out = with_keys(r, &RESULT_KEYS)?;
            if !r.calls.is_empty()
                && let Value::Object(map) = &mut out
            {
                let calls = r.calls.iter().map(|c| with_keys(c, &CALL_KEYS)).collect::<Result<_, _>>()?;
                map.insert("calls".into(), Value::Array(calls));
            }
            Ok(out)
        })
        .collect::<Result<_, _>>()
        .map(Value::Array)
}

/// `{"requests", "diagnostics"}` (and `"normal_text"` when given).
fn outcome_json(outcome: &ParseOutcome, normal_text: Option<&str>) -> Result<Value, Failure> {
    let mut document = Map::new();
    document.insert("requests".into(), requests_json(&outcome.requests)?);
    document.insert("diagnostics".into(), to_json(&outcome.diagnostics)?);
    if let Some(text) = normal_text {
        document.insert("normal_text".into(), Value::String(text.to_string()));
    }
    Ok(Value::Object(document))
}

// ---------------------------------------------------------------------------------------
// parse

/// The requests and diagnostics `protocol` reads in `text` (and, for the open-model
/// formats and `auto`, the normal text), one-shot or streamed `stream_chunk` bytes at a
/// time.
pub(crate) fn parse_value(
    protocol_id: &str,
    options: VcpOptions,
    text: &str,
    stream_chunk: Option<usize>,
) -> Result<Value, Failure> {
    if stream_chunk == Some(0) {
        return Err(Failure::msg("--stream-chunk must be at least 1"));
    }
    let protocol = protocol(protocol_id, options)?;
    let outcome = match (wire_of(&protocol), stream_chunk) {
        (Some(wire), None) => parse_native_body(&protocol, &wire, text)?.1,
        (Some(wire), Some(size)) => {
            let (deltas, error) = native_deltas(&wire, text, size);
            let mut outcome = collect_stream(protocol.as_protocol(), deltas).into_outcome();
            if let Some(error) = error {
                outcome.diagnostics.extend(invalid_payload(&error.to_string()).diagnostics);
            }
            outcome
        }
        (None, Some(size)) => {
            let deltas = chunks(text, size).map(|chunk| TurnDelta::Text(chunk.to_string()));
            collect_stream(protocol.as_protocol(), deltas).into_outcome()
        }
        (None, None) => protocol.as_protocol().parse_turn(&AssistantTurn::from_text(text)),
    };
    outcome_json(&outcome, has_normal_text(&protocol).then_some(outcome.normal_text.as_str()))
}

/// Feeds `deltas` to the protocol's streaming parser and collects what it reports: the
/// one loop for every protocol (text chunks for a text protocol, a provider stream's
/// deltas for a native one).
fn collect_stream(
    protocol: &dyn ToolCallingProtocol,
    deltas: impl IntoIterator<Item = TurnDelta>,
) -> StreamCollector {
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    let mut collector = StreamCollector::new();
    for delta in deltas {
        parser.push(&delta, &mut events);
        collector.extend(events.drain(..));
    }
    parser.finish(&mut events);
    collector.extend(events);
    collector
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

/// A server-sent-events transcript fed `size` bytes at a time (cuts may split lines and
/// characters, as a network does) through the provider's decoder: the deltas, and the
/// error that ended the stream early, if one did.
fn native_deltas(
    wire: &dyn WireFormat,
    text: &str,
    size: usize,
) -> (Vec<TurnDelta>, Option<tool_calling::providers::WireError>) {
    let mut stream = ResponseStream::new(wire);
    let mut deltas = Vec::new();
    let mut error = None;
    for chunk in text.as_bytes().chunks(size) {
        if let Err(e) = stream.push(chunk, &mut deltas) {
            error = Some(e);
            break;
        }
    }
    // A stream cut inside an event is an error like any other.
    if let (Err(cut), None) = (stream.finish(&mut deltas), &error) {
        error = Some(cut);
    }
    (deltas, error)
}

/// A response body's turn and what the protocol reads in it. A body the provider's
/// format cannot read (an error body, another shape) gives no turn and an
/// `invalid_payload` diagnostic; text that is not JSON at all is a usage error.
fn parse_native_body(
    protocol: &BuiltinProtocol,
    wire: &dyn WireFormat,
    text: &str,
) -> Result<(AssistantTurn, ParseOutcome), Failure> {
    let body: Value = serde_json::from_str(text)
        .map_err(|e| Failure::msg(format!("the input is not a JSON response body: {e}")))?;
    Ok(match wire.parse_response(&body) {
        Ok(turn) => {
            let outcome = protocol.as_protocol().parse_turn(&turn);
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

// ---------------------------------------------------------------------------------------
// discover and prompt

/// The demo tools, collected from link-time registrations.
fn demo_registry() -> Result<Arc<ToolRegistry>, Failure> {
    ToolRegistry::from_inventory()
        .map(Arc::new)
        .map_err(|e| Failure::msg(format!("bad tool definition: {e}")))
}

/// A tool as `discover` prints it.
#[derive(Serialize)]
struct ToolView<'a> {
    tool_id: &'a str,
    tool_name: &'a str,
    description: &'a str,
    #[serde(flatten)]
    metadata: &'a ToolMetadata,
    methods: Vec<MethodView<'a>>,
}

/// A method as `discover` prints it: its parameters listed one by one, its schema whole.
#[derive(Serialize)]
struct MethodView<'a> {
    name: &'a str,
    description: &'a str,
    agent_callable: bool,
    vcp_command: Option<&'a str>,
    parameters: Vec<ParameterView<'a>>,
    examples: &'a [MethodExample],
    schema: &'a Value,
}

#[derive(Serialize)]
struct ParameterView<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    type_name: String,
    required: bool,
    default: Option<Value>,
    description: Option<String>,
}

/// The demo tools as the discovery service sees them (`all`: not only agent-callable).
pub(crate) fn discover_value(all: bool) -> Result<Value, Failure> {
    let discovery = DiscoveryService::new(demo_registry()?);
    let everything = |_: &ToolSpec, _: &MethodSpec| true;
    let filter: Option<MethodFilter<'_>> = if all { Some(&everything) } else { None };
    let discovered = discovery.discovered_methods(filter);
    let tools: Vec<ToolView<'_>> = discovered
        .iter()
        .map(|tool| ToolView {
            tool_id: &tool.tool_id,
            tool_name: &tool.tool_name,
            description: &tool.description,
            metadata: &tool.metadata,
            methods: tool
                .methods
                .iter()
                .map(|method| {
                    let definition = &method.definition;
                    MethodView {
                        name: &definition.name,
                        description: &definition.description,
                        agent_callable: method.agent_callable,
                        vcp_command: command_alias(&definition.protocol_config),
                        parameters: definition
                            .parameter_list()
                            .into_iter()
                            .map(|p| ParameterView {
                                name: p.name,
                                type_name: p.type_name(),
                                required: p.required,
                                default: p.default().cloned(),
                                description: p.description().map(str::to_string),
                            })
                            .collect(),
                        examples: &definition.examples,
                        schema: &definition.parameters,
                    }
                })
                .collect(),
        })
        .collect();
    Ok(json!({ "tools": to_json(&tools)? }))
}

pub(crate) fn prompt(protocol: &str, lang: Lang) -> Result<(), Failure> {
    match prompt_value(protocol, lang)? {
        Value::String(text) => print_text(&text),
        tools => print_json(&tools),
    }
}

/// The tool-definition prompt of `protocol`: text for a text protocol (VCP in `lang`),
/// the JSON `tools` value for a native one.
pub(crate) fn prompt_value(protocol_id: &str, lang: Lang) -> Result<Value, Failure> {
    let discovery = DiscoveryService::new(demo_registry()?);
    let definitions = ToolCallConfig::default().enabled_definitions(discovery.registry());
    let declarations = match protocol(protocol_id, VcpOptions::default())? {
        BuiltinProtocol::Vcp(vcp) => {
            let language = match lang {
                Lang::En => Language::En,
                Lang::Zh => Language::Zh,
            };
            vcp.with_language(language).tool_declarations(&definitions)
        }
        other => other.as_protocol().tool_declarations(&definitions),
    };
    Ok(match (declarations.as_prompt(), declarations.as_native()) {
        (Some(text), _) => Value::String(text.to_string()),
        (None, Some(tools)) => tools.clone(),
        (None, None) => Value::Null,
    })
}

/// `grammar`: the grammar of `protocol` for the demo tools' offered methods, printed as
/// the server takes it (text for Lark and GBNF, a JSON document for the JSON dialects).
pub(crate) fn grammar(
    protocol_id: &str,
    dialect: &str,
    scope: &str,
    max_text: Option<u32>,
    max_calls: u32,
) -> Result<(), Failure> {
    let dialect: Dialect = dialect.parse().map_err(|e: GrammarError| Failure::msg(e.to_string()))?;
    let scope: Scope = scope.parse().map_err(|e: GrammarError| Failure::msg(e.to_string()))?;
    let mut constraint = Constraint::new(dialect, scope).max_calls(max_calls);
    if let Some(n) = max_text {
        constraint = constraint.max_text(n);
    }
    let discovery = DiscoveryService::new(demo_registry()?);
    let definitions = ToolCallConfig::default().enabled_definitions(discovery.registry());
    let protocol = protocol(protocol_id, VcpOptions::default())?;
    let grammar =
        protocol.as_protocol().grammar(&definitions, &constraint).map_err(|e| Failure::msg(e.to_string()))?;
    for note in grammar.notes() {
        eprintln!("note: {note}");
    }
    print_text(grammar.text())
}

// ---------------------------------------------------------------------------------------
// exec and cycle

/// The context for `exec` and `cycle`: default config, with `--timeout-ms` and
/// `--serial` applied.
pub(crate) fn execution_context(timeout_ms: Option<u64>, serial: bool) -> Result<ExecutionContext, Failure> {
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
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::msg(format!("cannot start the async runtime: {e}")))
}

pub(crate) fn exec(args: &ExecArgs) -> Result<(), Failure> {
    let value: Value = serde_json::from_str(&args.args)
        .map_err(|e| Failure::msg(format!("--args is not valid JSON: {e}")))?;
    let result =
        runtime()?.block_on(exec_value(&args.tool_name, args.command.as_deref(), value, args.timeout_ms))?;
    print_json(&result)
}

/// Runs one demo-tool call through the executor: `tool_name` with `args` (a JSON
/// object), routed as VCP routes a request when `command` is given or the name is not a
/// full method name. A call that names no method is a usage error.
pub(crate) async fn exec_value(
    tool_name: &str,
    command: Option<&str>,
    args: Value,
    timeout_ms: Option<u64>,
) -> Result<Value, Failure> {
    let Value::Object(map) = args else {
        return Err(Failure::msg(format!("--args must be a JSON object, not {}", json_kind(&args))));
    };
    let mut request = ToolRequest::new("req_1", tool_name);
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
        ResolvedRequest::exact(&request).calls
    } else {
        VcpProtocol::default().resolve(&request, &TurnState::default(), &registry.catalog())
    };
    if let Some(unknown) =
        calls.iter().find_map(|call| call.as_ref().err().filter(|e| e.kind == ErrorKind::NotFound))
    {
        return Err(Failure::msg(unknown.message.clone()));
    }
    let executor = Executor::new(registry);
    let result = executor.execute_request(ResolvedRequest::new(&request, calls), &ctx).await;
    with_keys(&result, &RESULT_KEYS)
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

pub(crate) fn cycle(args: &CycleArgs) -> Result<(), Failure> {
    let text = read_input(&args.input)?;
    let ctx = execution_context(args.timeout_ms, args.serial)?;
    let value = runtime()?.block_on(cycle_value(&args.protocol, args.vcp.options(), &text, &ctx))?;
    match (&value["context"], args.raw) {
        (Value::String(context), true) => print_text(context),
        (context, true) => print_json(context),
        (_, false) => print_json(&value),
    }
}

/// The full parse → execute → format cycle on a reply (a response body for a native
/// protocol) with the demo tools.
pub(crate) async fn cycle_value(
    protocol_id: &str,
    options: VcpOptions,
    text: &str,
    ctx: &ExecutionContext,
) -> Result<Value, Failure> {
    let protocol = protocol(protocol_id, options)?;
    let registry = demo_registry()?;
    let Some(wire) = wire_of(&protocol) else {
        let engine = Engine::new(registry).with_protocol(protocol.clone().into_protocol());
        let cycle = engine
            .run_turn(text, ctx)
            .await
            .map_err(|e| Failure::msg(format!("cannot run the cycle: {e}")))?;
        let context = json!(cycle.result_text());
        return cycle_json(
            cycle.has_tool_requests,
            &cycle.parsed_requests,
            &cycle.execution_results,
            context,
            &cycle.diagnostics,
        );
    };
    // A native protocol: the body's turn through the engine; `context` is what goes back
    // to the provider, in its own shape.
    let (turn, _) = parse_native_body(&protocol, &wire, text)?;
    let engine = Engine::new(registry).with_protocol(protocol.clone().into_protocol());
    let cycle =
        engine.run_turn(&turn, ctx).await.map_err(|e| Failure::msg(format!("cannot run the cycle: {e}")))?;
    // The turn first, so that a provider that echoes call ids (Gemini) sees which calls
    // had one; then the results, which are the context.
    let mut history = vec![Message::from_turn(turn)];
    history.extend(cycle.result_messages.iter().cloned());
    let turn_items = wire.wire_messages(&history[..1]).as_array().map_or(0, Vec::len);
    let mut results: Vec<Value> = wire.wire_messages(&history).as_array().cloned().unwrap_or_default();
    let results = results.split_off(turn_items.min(results.len()));
    // Anthropic and Gemini carry every result in one message (content); the others one
    // message (item) per result.
    let context = match wire {
        Provider::Anthropic | Provider::Gemini => results.into_iter().next().unwrap_or(Value::Null),
        _ => Value::Array(results),
    };
    cycle_json(
        cycle.has_tool_requests,
        &cycle.parsed_requests,
        &cycle.execution_results,
        context,
        &cycle.diagnostics,
    )
}

fn cycle_json(
    has_tool_requests: bool,
    parsed: &[ToolRequest],
    results: &[ToolExecutionResult],
    context: Value,
    diagnostics: &[Diagnostic],
) -> Result<Value, Failure> {
    Ok(json!({
        "has_tool_requests": has_tool_requests,
        "parsed": requests_json(parsed)?,
        "results": results_json(results)?,
        "context": context,
        "diagnostics": to_json(diagnostics)?,
    }))
}

// ---------------------------------------------------------------------------------------
// bench

pub(crate) fn bench(protocol_id: &str, api: BenchApi, iterations: u32, input: &Path) -> Result<(), Failure> {
    // The parser a library user gets by default.
    let protocol = builtin(protocol_id, &BuiltinOptions::default())?;
    if wire_of(&protocol).is_some() {
        return Err(Failure::msg(format!(
            "bench measures text protocols; --protocol {protocol_id} is a native API"
        )));
    }
    if iterations == 0 {
        return Err(Failure::msg("--iterations must be at least 1"));
    }
    let text = read_input(input)?;
    // VCP: the API asked for (the pull parser unless told otherwise); the open-model
    // formats and `auto` have the owned parse only.
    let api = match &protocol {
        BuiltinProtocol::Vcp(_) => api,
        _ => BenchApi::Owned,
    };
    let parse_once = |text: &str| -> usize {
        match (&protocol, api) {
            (BuiltinProtocol::Vcp(vcp), BenchApi::Pull) => {
                // Every request is made, with all its fields and values, then dropped.
                vcp.view_events(text).filter(|event| matches!(event, ViewEvent::Request(_))).count()
            }
            (BuiltinProtocol::Vcp(vcp), BenchApi::View) => vcp.parse_view(text).requests.len(),
            (BuiltinProtocol::Vcp(vcp), BenchApi::Owned) => vcp.parse(text).requests.len(),
            (BuiltinProtocol::TextFormat(format), _) => format.parse(text).requests.len(),
            (BuiltinProtocol::Auto(auto), _) => auto.parse(text).requests.len(),
            (other, _) => other.as_protocol().parse_turn(&AssistantTurn::from_text(text)).requests.len(),
        }
    };
    // One untimed parse: warms caches and counts the requests.
    let requests = parse_once(&text);

    let mut times: Vec<Duration> = Vec::with_capacity(iterations as usize);
    for _ in 0..iterations {
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
        "api": api.as_str(),
        "bytes": text.len(),
        "requests": requests,
        "iterations": iterations,
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
