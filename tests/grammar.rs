//! Grammars proven by a real grammar engine: every protocol's grammar, in every dialect
//! and scope it offers, is compiled by llguidance (no error, no warning) and driven one
//! byte at a time:
//! - the calls the project's own prompts show are admitted (VCP's prompt shows a call of
//!   every method; the open-model prompts show their layout with placeholders);
//! - **round trip**: random valid arguments for every demo method, written the way the
//!   protocol writes a call, are admitted, and the protocol's parser reads back exactly
//!   those arguments;
//! - **soundness**: random walks through the grammar (at each byte, one of the bytes the
//!   engine allows) end in text that the parser reads as complete calls to existing
//!   methods whose arguments pass validation, and nothing else;
//! - **near misses** are refused: an unknown tool, an unknown key, a missing required
//!   key, a value outside an `enum` or a range, text in an integer field, a call cut
//!   short.
//!
//! The JSON dialects of the JSON-bodied formats get the same round trip and random
//! walks: a structural tag admits the calls the format writes, inside text, and its walks
//! parse back as valid calls; a JSON Schema admits the call objects (in the format's own
//! shape) of random arguments, and its walks are call objects whose arguments pass
//! validation.
//!
//! Each grammar is compiled once and its engine copied for every text; seeds are fixed
//! and case counts small, so the whole file runs in about a minute on two cores; a
//! failing case is printed as text.

#[path = "../cli/src/demo_tools.rs"]
mod demo_tools;
#[path = "support/llg.rs"]
mod llg;

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};
use tool_calling::config::ToolCallConfig;
use tool_calling::grammar::{Constraint, Dialect, Grammar, GrammarError, Scope};
use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::protocol::{BuiltinOptions, ProtocolRegistry, ToolCallingProtocol};
use tool_calling::tools::{MethodDefinition, ToolDefinition, ToolRegistry};

/// The built-in protocols that write a Lark grammar of one call for the demo tools
/// (every text protocol but `auto`; none of the native ones).
fn grammar_protocols() -> Vec<&'static str> {
    let tools = definitions();
    ProtocolRegistry::builtin_ids()
        .into_iter()
        .filter(|id| protocol(id).grammar(&tools, &Constraint::new(Dialect::Lark, Scope::Call)).is_ok())
        .collect()
}

/// The text dialects every protocol offers in every scope.
const TEXT_DIALECTS: [Dialect; 2] = [Dialect::Lark, Dialect::Gbnf];

fn registry() -> Arc<ToolRegistry> {
    static REGISTRY: std::sync::OnceLock<Arc<ToolRegistry>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| Arc::new(ToolRegistry::from_inventory().expect("demo tools are valid"))).clone()
}

/// The demo tools as offered to a model: agent-callable, enabled methods only.
fn definitions() -> Vec<ToolDefinition> {
    ToolCallConfig::default().enabled_definitions(&registry())
}

fn protocol(id: &str) -> Arc<dyn ToolCallingProtocol> {
    ProtocolRegistry::builtin(id, &BuiltinOptions::default())
        .unwrap_or_else(|e| panic!("{id}: {e}"))
        .into_protocol()
}

/// `(tool id, method name, full name, schema)` of every offered method.
fn methods(tools: &[ToolDefinition]) -> Vec<(String, String, String, Value)> {
    tools
        .iter()
        .flat_map(|t| {
            t.methods.iter().map(move |m| {
                (t.tool_id.clone(), m.name.clone(), m.full_name(&t.tool_id), m.parameters.clone())
            })
        })
        .collect()
}

fn grammar(id: &str, tools: &[ToolDefinition], dialect: Dialect, scope: Scope) -> Grammar {
    protocol(id)
        .grammar(tools, &Constraint::new(dialect, scope))
        .unwrap_or_else(|e| panic!("{id} {dialect} {scope}: {e}"))
}

/// A call of a method written the way `id` writes calls; `None` when an argument holds
/// text the format cannot carry.
fn write_call(
    id: &str,
    tool: &str,
    method: &str,
    full_name: &str,
    args: &Map<String, Value>,
) -> Option<String> {
    if id == "vcp" {
        let mut fields = vec![("command".to_string(), method.to_string())];
        for (key, value) in args {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            fields.push((key.clone(), text));
        }
        return Some(
            VcpProtocol::default()
                .write_block(tool, fields.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .expect("a request the formatter writes"),
        );
    }
    let format = TextFormat::from_id(id).expect("a text format id");
    TextFormatProtocol::new(format).write_call(full_name, args)
}

/// The formats whose text values have no escape: a value cannot hold their closing
/// tags, so they write no call with such a value (and their grammars admit none).
const NO_ESCAPE: &[&str] = &[
    "qwen3_coder_xml",
    "glm45",
    "glm47",
    "seed_oss",
    "poolside_v1",
    "hunyuan_v3",
    "step3",
    "deepseek_v32",
    "deepseek_v4",
    "deepseek_v41",
    "gigachat35",
];

/// The formats whose writer refuses a string that reads as another value without a
/// schema (`"42"`): their grammars admit it, since the tool's schema keeps it a string.
const TYPED_TEXT: &[&str] = &["hunyuan_v3", "minicpm5", "minimax_m3"];

/// Whether `value` is a string that reads as another value without a schema.
fn reads_as_other(value: &Value) -> bool {
    value.as_str().is_some_and(|s| {
        tool_calling::tools::TextCoercion::new().python_literals(true).infer(s)
            != Value::String(s.to_string())
    })
}

/// The arguments every request of `text` resolves to (full name, arguments after the
/// method's coercion and validation); `Err` for anything incomplete, unknown or invalid.
fn read_back(id: &str, text: &str) -> Result<Vec<(String, Value)>, String> {
    let protocol = protocol(id);
    let parsed = protocol.parse_turn(&tool_calling::model::AssistantTurn::from_text(text));
    if !parsed.diagnostics.is_empty() {
        return Err(format!("diagnostics: {:?}", parsed.diagnostics));
    }
    let catalog = registry().catalog();
    let mut out = Vec::new();
    for request in &parsed.requests {
        if !request.complete {
            return Err(format!("incomplete request: {request:?}"));
        }
        for invocation in protocol.resolve(request, &parsed.state, &catalog) {
            let invocation = invocation.map_err(|e| format!("does not resolve: {e}"))?;
            let method =
                registry().method(&invocation.method).ok_or(format!("no method {}", invocation.method))?;
            let args = method.prepare_args(&invocation.args, None).map_err(|e| format!("invalid: {e}"))?;
            out.push((invocation.method.clone(), Value::Object(args)));
        }
    }
    Ok(out)
}

#[test]
fn every_grammar_compiles_without_warnings() {
    let tools = definitions();
    for id in &grammar_protocols() {
        for dialect in Dialect::ALL {
            for scope in Scope::ALL {
                match protocol(id).grammar(&tools, &Constraint::new(dialect, scope)) {
                    Ok(grammar) => {
                        if let Err(e) = llg::compile(&grammar) {
                            panic!("{id} {dialect} {scope}: {e}\n{}", grammar.text());
                        }
                    }
                    Err(GrammarError::Unsupported { .. }) => {
                        assert!(!TEXT_DIALECTS.contains(&dialect), "{id} must offer {dialect} for {scope}");
                    }
                    Err(e) => panic!("{id} {dialect} {scope}: {e}"),
                }
            }
        }
    }
}

#[test]
fn the_calls_vcp_prompts_show_are_admitted() {
    let tools = definitions();
    let prompt = VcpProtocol::default().tool_declarations(&tools).as_prompt().unwrap_or_default().to_string();
    let blocks: Vec<&str> = prompt
        .match_indices("<<<[TOOL_REQUEST]>>>\ntool_name")
        .map(|(at, _)| {
            let end = prompt[at..].find("<<<[END_TOOL_REQUEST]>>>").expect("closed") + at;
            &prompt[at..end + "<<<[END_TOOL_REQUEST]>>>".len()]
        })
        // The preamble's block shows the syntax with placeholders; `label` takes two
        // control keys, which VCP never passes as arguments.
        .filter(|block| !block.contains("「始」tool id「末」") && !block.contains("「始」label「末」"))
        .collect();
    assert_eq!(blocks.len(), methods(&tools).len() - 1, "one example per method but label");
    for dialect in TEXT_DIALECTS {
        let one = llg::compile(&grammar("vcp", &tools, dialect, Scope::Call)).unwrap();
        for block in &blocks {
            one.admits(block).unwrap_or_else(|e| panic!("{dialect}: {e}\n{block}"));
        }
        // (One call per method: more than the default bound of four.)
        let every = |scope| Constraint::new(dialect, scope).max_calls(blocks.len() as u32);
        let calls = protocol("vcp").grammar(&tools, &every(Scope::Calls)).unwrap();
        llg::admits(&calls, &blocks.join("\n")).unwrap_or_else(|e| panic!("{dialect}: {e}"));
        let reply = protocol("vcp").grammar(&tools, &every(Scope::Reply)).unwrap();
        let text = format!("<think>Which tool?</think>Let me check.\n{}\nDone.", blocks.join("\n\n"));
        llg::admits(&reply, &text).unwrap_or_else(|e| panic!("{dialect}: {e}\n{text}"));
    }
}

/// Strings a model may write into a value of any protocol: any text but what no
/// protocol can carry as written (a reasoning tag, which every protocol cuts out; `\r`
/// and white space at either end, which VCP's values lose).
fn value_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ,.:;!?'\"{}\\[\\]<>/\\\\=_-]{0,24}",
        "\\PC{0,12}",
        Just("「末」 and <<<[END_TOOL_REQUEST]>>>".to_string()),
        Just("</tool_call> \\u0022 }]".to_string()),
    ]
    .prop_filter("no reasoning tag, no surrounding space, no CR", |s| {
        let lower = s.to_ascii_lowercase();
        let squeezed: String = lower.chars().filter(|c| !c.is_ascii_whitespace() && *c != '/').collect();
        !squeezed.contains("<think") && !s.contains('\r') && s.trim() == s
    })
}

/// A value of `schema` (the demo tools' kinds).
fn value_of(schema: &Value, required: bool) -> BoxedStrategy<Value> {
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => {
            kinds.iter().filter_map(Value::as_str).find(|k| *k != "null").unwrap_or("string")
        }
        Some(Value::String(kind)) => kind.as_str(),
        _ => "string",
    };
    match kind {
        "integer" => {
            let min = schema.get("minimum").and_then(Value::as_i64).unwrap_or(-1_000_000);
            let max = schema.get("maximum").and_then(Value::as_i64).unwrap_or(1_000_000);
            (min..=max).prop_map(Value::from).boxed()
        }
        "number" => prop_oneof![
            (-1_000_000i64..1_000_000).prop_map(Value::from),
            (-1e6f64..1e6).prop_map(|f| json!((f * 1000.0).round() / 1000.0)),
        ]
        .boxed(),
        "boolean" => any::<bool>().prop_map(Value::from).boxed(),
        // An optional string is never empty: text protocols read an empty optional value
        // as "not given".
        _ if required => value_string().prop_map(Value::from).boxed(),
        _ => value_string().prop_filter("not empty", |s| !s.is_empty()).prop_map(Value::from).boxed(),
    }
}

/// Arguments for `schema`: every required key, each optional key or not, in order.
fn args_of(schema: &Value) -> BoxedStrategy<Map<String, Value>> {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let mut strategy: BoxedStrategy<Map<String, Value>> = Just(Map::new()).boxed();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (key, property) in properties {
            let key = key.clone();
            let is_required = required.contains(&key);
            let value = value_of(property, is_required);
            strategy = if is_required {
                (strategy, value)
                    .prop_map(move |(mut map, v)| {
                        map.insert(key.clone(), v);
                        map
                    })
                    .boxed()
            } else {
                (strategy, proptest::option::of(value))
                    .prop_map(move |(mut map, v)| {
                        if let Some(v) = v {
                            map.insert(key.clone(), v);
                        }
                        map
                    })
                    .boxed()
            };
        }
    }
    strategy
}

fn runner(cases: u32) -> TestRunner {
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]))
}

/// Whether two argument objects are equal, numbers compared as numbers.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w)),
        _ => a == b,
    }
}

/// `args` with the schema's defaults for the keys it leaves out, as the method gets them.
fn with_defaults(schema: &Value, args: &Map<String, Value>) -> Value {
    let mut out = args.clone();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (key, property) in properties {
            if let (false, Some(default)) = (out.contains_key(key), property.get("default")) {
                out.insert(key.clone(), default.clone());
            }
        }
    }
    Value::Object(out)
}

/// Methods a protocol can call with every argument (VCP passes no parameter named like
/// one of its control keys).
fn callable(id: &str, tools: &[ToolDefinition]) -> Vec<(String, String, String, Value)> {
    methods(tools).into_iter().filter(|(_, method, ..)| id != "vcp" || method != "label").collect()
}

#[test]
fn round_trip_random_arguments_are_admitted_and_read_back() {
    let tools = definitions();
    for id in &grammar_protocols() {
        for dialect in TEXT_DIALECTS {
            let one = grammar(id, &tools, dialect, Scope::Call);
            let compiled = llg::compile(&one).unwrap();
            for (tool, method, full_name, schema) in callable(id, &tools) {
                runner(24)
                    .run(&args_of(&schema), |args| {
                        let Some(text) = write_call(id, &tool, &method, &full_name, &args) else {
                            let markup = args.values().any(|v| v.as_str().is_some_and(|s| s.contains("</")));
                            let typed = TYPED_TEXT.contains(id) && args.values().any(reads_as_other);
                            prop_assert!(
                                (NO_ESCAPE.contains(id) && markup) || typed,
                                "{id} refused to write {args:?}"
                            );
                            return Ok(());
                        };
                        let mut engine = compiled.fork();
                        if let Err(at) = engine.feed(text.as_bytes()) {
                            return Err(TestCaseError::fail(format!(
                                "{id} {dialect}: rejected at byte {at} of\n{text}"
                            )));
                        }
                        prop_assert!(engine.accepting(), "{id} {dialect}: not complete:\n{text}");
                        let read =
                            read_back(id, &text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
                        prop_assert_eq!(read.len(), 1, "{}", text);
                        prop_assert_eq!(&read[0].0, &full_name);
                        let expected = with_defaults(&schema, &args);
                        prop_assert!(
                            same(&read[0].1, &expected),
                            "{:?} != {:?}\n{}",
                            read[0].1,
                            expected,
                            text
                        );
                        Ok(())
                    })
                    .unwrap_or_else(|e| panic!("{id} {dialect} {full_name}: {e}"));
            }
        }
    }
}

/// Every string literal of a Lark grammar (the markup a walk may write in one go), and
/// those that end a definition (what closes a value, a call, a block).
fn literals(lark: &str) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut closers = Vec::new();
    for line in lark.lines() {
        let before = out.len();
        let mut rest = line;
        while let Some(start) = rest.find('"') {
            let tail = &rest[start + 1..];
            let mut end = None;
            let mut escaped = false;
            for (i, c) in tail.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        end = Some(i);
                        break;
                    }
                    _ => escaped = false,
                }
            }
            let Some(end) = end else { break };
            if let Ok(Value::String(s)) = serde_json::from_str(&format!("\"{}\"", &tail[..end]))
                && !s.is_empty()
            {
                out.push(s);
            }
            rest = &tail[end + 1..];
        }
        if out.len() > before && line.trim_end().ends_with('"') {
            closers.push(out[out.len() - 1].clone());
        }
    }
    out.sort();
    out.dedup();
    closers.sort();
    closers.dedup();
    (out, closers)
}

/// A random walk through `engine`: at each step a byte the engine allows (or one of
/// the grammar's literals, when the engine allows all of it), until the text is
/// complete and a coin says stop. `None` when the walk did not finish within its budget.
fn walk(
    engine: &llg::Engine,
    literals: &(Vec<String>, Vec<String>),
    rng: &mut TestRng,
    budget: usize,
) -> Option<String> {
    walk_where(engine, literals, rng, budget, false)
}

/// [`walk`], its literals written only in free text with `free_only` (a structural
/// tag's: its JSON strings take any markup, which a string of the format cannot hold).
fn walk_where(
    engine: &llg::Engine,
    (literals, closers): &(Vec<String>, Vec<String>),
    rng: &mut TestRng,
    budget: usize,
    free_only: bool,
) -> Option<String> {
    let mut engine = engine.fork();
    let mut text: Vec<u8> = Vec::new();
    while text.len() < budget * 4 {
        if engine.accepting() && (text.len() >= budget || rng.random_bool(0.05)) {
            return String::from_utf8(text).ok();
        }
        // Past the budget, only what closes things is written in one go (half the time:
        // a structural tag's JSON strings hold every markup, so a walk inside one would
        // write closers into it forever).
        let closing = text.len() >= budget;
        // (Free text takes a control character; JSON, in a string or out, does not.)
        let free = !free_only || engine.fork().feed(b"\x01").is_ok();
        if free && rng.random_bool(if closing { 0.5 } else { 0.3 }) {
            let literals = if closing { closers } else { literals };
            let start = rng.random_range(0..literals.len().max(1));
            let mut done = false;
            // A few tries, not all of them: a fork of the matcher per try is the walk's
            // main cost.
            for k in 0..literals.len().min(6) {
                let literal = &literals[(start + k * 7) % literals.len()];
                let mut trial = engine.fork();
                if trial.feed(literal.as_bytes()).is_ok() {
                    engine = trial;
                    text.extend_from_slice(literal.as_bytes());
                    done = true;
                    break;
                }
            }
            if done {
                continue;
            }
        }
        // (Asked before the mask: a matcher with nothing left to allow stops.)
        let complete = engine.accepting();
        let allowed = engine.allowed();
        if allowed.is_empty() {
            if !complete && std::env::var("WALK_DEBUG").is_ok() {
                eprintln!("stuck after: {:?}", String::from_utf8_lossy(&text));
            }
            // Nothing may follow: the text is complete, or the walk is stuck.
            return if complete { String::from_utf8(text).ok() } else { None };
        }
        // Mostly printable ASCII, so that walks read like text.
        let ascii: Vec<u8> =
            allowed.iter().copied().filter(|b| (0x20..0x7F).contains(b) || *b == b'\n').collect();
        let pool = if !ascii.is_empty() && rng.random_bool(0.9) { &ascii } else { &allowed };
        // Past the budget, what ends a string, an object or a list half the time.
        let ends: Vec<u8> = pool.iter().copied().filter(|b| b"\"}]".contains(b)).collect();
        let pool = if closing && !ends.is_empty() && rng.random_bool(0.5) { &ends } else { pool };
        let byte = pool[rng.random_range(0..pool.len())];
        if engine.feed(&[byte]).is_err() {
            if std::env::var("WALK_DEBUG").is_ok() {
                eprintln!("refused {byte:?} after: {:?}", String::from_utf8_lossy(&text));
            }
            return None;
        }
        text.push(byte);
    }
    if engine.accepting() {
        return String::from_utf8(text).ok();
    }
    if std::env::var("WALK_DEBUG").is_ok() {
        eprintln!("unfinished: {:?}", String::from_utf8_lossy(&text));
    }
    None
}

/// Random walks per protocol, dialect and scope.
const WALKS: usize = 12;

#[test]
fn random_walks_through_every_grammar_read_as_valid_calls() {
    let tools = definitions();
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[11; 32]);
    for id in &grammar_protocols() {
        for dialect in TEXT_DIALECTS {
            for scope in Scope::ALL {
                let g = grammar(id, &tools, dialect, scope);
                let lark = grammar(id, &tools, Dialect::Lark, scope);
                let literals = literals(lark.text());
                let engine = llg::compile(&g).unwrap();
                let mut finished = 0;
                for _ in 0..WALKS {
                    let Some(text) = walk(&engine, &literals, &mut rng, 120) else { continue };
                    finished += 1;
                    let read = read_back(id, &text)
                        .unwrap_or_else(|e| panic!("{id} {dialect} {scope}: {e}\n{text}"));
                    match scope {
                        Scope::Call => assert_eq!(read.len(), 1, "{id} {dialect}:\n{text}"),
                        Scope::Calls => assert!(!read.is_empty(), "{id} {dialect}:\n{text}"),
                        _ => {}
                    }
                }
                assert!(
                    finished >= WALKS / 2,
                    "{id} {dialect} {scope}: only {finished} of {WALKS} walks finished"
                );
            }
        }
    }
}

/// The demo tools and one more with an `enum`, for the near misses.
fn tools_with_enum() -> Vec<ToolDefinition> {
    let mut tools = definitions();
    tools.push(ToolDefinition::new("units", "Units").with_method(
        MethodDefinition::new("convert", "Convert a length.").with_parameters(json!({
            "type": "object",
            "properties": {"unit": {"type": "string", "enum": ["m", "km"]}, "value": {"type": "integer"}},
            "required": ["unit", "value"]
        })),
    ));
    tools
}

#[test]
fn near_misses_are_refused() {
    let tools = tools_with_enum();
    for id in &grammar_protocols() {
        for dialect in TEXT_DIALECTS {
            let one = llg::compile(&grammar(id, &tools, dialect, Scope::Call)).unwrap();
            let call = |tool: &str, method: &str, args: Value| {
                write_call(id, tool, method, &format!("{tool}_{method}"), args.as_object().unwrap())
                    .expect("plain values are written")
            };
            let good = call("units", "convert", json!({"unit": "km", "value": 3}));
            one.admits(&good).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{good}"));
            let repeat = call("text", "repeat", json!({"message": "hi", "times": 3}));
            one.admits(&repeat).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{repeat}"));
            for (what, text) in [
                ("an unknown tool", call("units", "explode", json!({"unit": "km", "value": 3}))),
                ("an unknown key", call("units", "convert", json!({"unit": "km", "value": 3, "extra": 1}))),
                ("a missing required key", call("units", "convert", json!({"unit": "km"}))),
                ("a value outside the enum", call("units", "convert", json!({"unit": "mile", "value": 3}))),
                ("text in an integer field", call("units", "convert", json!({"unit": "km", "value": "ten"}))),
                (
                    "a number in an integer field",
                    call("units", "convert", json!({"unit": "km", "value": 2.5})),
                ),
                ("a value above the maximum", call("text", "repeat", json!({"message": "hi", "times": 11}))),
                ("a value below the minimum", call("text", "repeat", json!({"message": "hi", "times": 0}))),
                // (Three characters: some formats' markup is not ASCII.)
                (
                    "a call cut short",
                    good.char_indices().rev().nth(2).map_or(String::new(), |(i, _)| good[..i].to_string()),
                ),
            ] {
                assert!(one.admits(&text).is_err(), "{id} {dialect} admits {what}:\n{text}");
            }
        }
    }
}

#[test]
fn unsupported_pairs_say_so() {
    let tools = definitions();
    let error =
        protocol("vcp").grammar(&tools, &Constraint::new(Dialect::JsonSchema, Scope::Call)).unwrap_err();
    assert_eq!(error.to_string(), "protocol `vcp` has no json-schema grammar for scope `call`");
    // Native APIs and `auto` write none, and say why.
    for id in ["openai", "anthropic", "auto"] {
        let error = protocol(id).grammar(&tools, &Constraint::new(Dialect::Lark, Scope::Reply)).unwrap_err();
        assert_eq!(error, GrammarError::NoGrammar { protocol: id.to_string() });
        assert!(error.to_string().contains("native API") && error.to_string().contains("`auto`"), "{error}");
    }
    let error: GrammarError = "ebnf".parse::<Dialect>().unwrap_err();
    assert_eq!(error.to_string(), "unknown dialect `ebnf`: one of lark, gbnf, json-schema, structural-tag");
    let error: GrammarError = "all".parse::<Scope>().unwrap_err();
    assert_eq!(error.to_string(), "unknown scope `all`: one of call, calls, reply");
    assert_eq!(
        protocol("hermes").grammar(&[], &Constraint::new(Dialect::Lark, Scope::Call)),
        Err(GrammarError::NoMethods)
    );
    // The formats without a grammar yet say so for every dialect and scope.
    let with_grammars = grammar_protocols();
    for format in TextFormat::ALL.into_iter().filter(|f| !with_grammars.contains(&f.id())) {
        for dialect in Dialect::ALL {
            for scope in [Scope::Call, Scope::Calls, Scope::Reply] {
                let error = TextFormatProtocol::new(format)
                    .grammar(&tools, &Constraint::new(dialect, scope))
                    .unwrap_err();
                assert!(matches!(error, GrammarError::Unsupported { .. }), "{format}: {error}");
            }
        }
    }
}

#[test]
fn the_engine_gives_the_grammar_of_the_tools_it_offers() {
    let engine = tool_calling::engine::Engine::new(registry());
    let ctx = tool_calling::exec::ExecutionContext::default();
    let from_engine = engine.grammar(&ctx, &Constraint::new(Dialect::Gbnf, Scope::Calls)).unwrap();
    assert_eq!(*from_engine, grammar("vcp", &definitions(), Dialect::Gbnf, Scope::Calls), "VCP by default");
    assert!(!from_engine.text().contains("secret_internal"), "internal methods are not offered");
    let again = engine.grammar(&ctx, &Constraint::new(Dialect::Gbnf, Scope::Calls)).unwrap();
    assert!(Arc::ptr_eq(&from_engine, &again), "built once, then cached");
    engine.invalidate_declarations();
    let rebuilt = engine.grammar(&ctx, &Constraint::new(Dialect::Gbnf, Scope::Calls)).unwrap();
    assert!(!Arc::ptr_eq(&from_engine, &rebuilt) && rebuilt == from_engine, "rebuilt after invalidation");
}

/// The formats whose calls are JSON: those with a JSON Schema of one call or a
/// structural tag (a format may have only one: Harmony's name is in its header, so no
/// object holds its call; xLAM's bare list is a call only at the start of a reply,
/// which no structural tag can say).
fn json_bodied() -> Vec<&'static str> {
    let tools = definitions();
    grammar_protocols()
        .into_iter()
        .filter(|id| {
            json_dialect(id, &tools, Dialect::JsonSchema, Scope::Call).is_some()
                || json_dialect(id, &tools, Dialect::StructuralTag, Scope::Reply).is_some()
        })
        .collect()
}

/// The grammar of a JSON dialect, if `id` offers it.
fn json_dialect(id: &str, tools: &[ToolDefinition], dialect: Dialect, scope: Scope) -> Option<Grammar> {
    match protocol(id).grammar(tools, &Constraint::new(dialect, scope)) {
        Ok(grammar) => Some(grammar),
        Err(GrammarError::Unsupported { .. }) => None,
        Err(e) => panic!("{id} {dialect} {scope}: {e}"),
    }
}

/// How one call is a JSON object in a JSON Schema, read from the schema.
enum CallShape {
    /// The name under `name` (the property with a `const`), the arguments under `args`,
    /// and `fixed` members (each property with an `enum`, its first value: Cohere's
    /// `tool_call_id`).
    Named { name: String, args: String, fixed: Map<String, Value> },
    /// `{NAME: ARGUMENTS}` (Apertus).
    Keyed,
}

impl CallShape {
    fn of(doc: &Value) -> CallShape {
        let one = doc.get("anyOf").and_then(|all| all.get(0)).unwrap_or(doc);
        let properties = one["properties"].as_object().expect("a call object schema");
        let Some(name) = properties.iter().find(|(_, v)| v.get("const").is_some()).map(|(k, _)| k.clone())
        else {
            assert_eq!(properties.len(), 1, "a call object names its method: {one}");
            return CallShape::Keyed;
        };
        let fixed: Map<String, Value> = properties
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.get("enum")?.get(0)?.clone())))
            .collect();
        let args = properties.keys().find(|k| **k != name && !fixed.contains_key(*k)).cloned().unwrap();
        CallShape::Named { name, args, fixed }
    }

    /// The call object of `name` with `args`.
    fn object(&self, name: &str, args: &Map<String, Value>) -> Value {
        match self {
            CallShape::Named { name: name_key, args: args_key, fixed } => {
                let mut object = fixed.clone();
                object.insert(name_key.clone(), json!(name));
                object.insert(args_key.clone(), json!(args));
                Value::Object(object)
            }
            CallShape::Keyed => json!({ name: args }),
        }
    }

    /// The name and arguments of a call object.
    fn read<'v>(&self, value: &'v Value) -> Result<(&'v str, &'v Map<String, Value>), String> {
        let (name, args) = match self {
            CallShape::Named { name, args, .. } => {
                (value.get(name).and_then(Value::as_str), value.get(args).and_then(Value::as_object))
            }
            CallShape::Keyed => match value.as_object() {
                Some(object) if object.len() == 1 => {
                    object.iter().next().map_or((None, None), |(k, v)| (Some(k.as_str()), v.as_object()))
                }
                _ => (None, None),
            },
        };
        Ok((name.ok_or("no name")?, args.ok_or("no arguments object")?))
    }
}

/// Whether a call of `name` with `args` is a call of an offered method whose arguments
/// pass validation (`Err` says why not).
fn valid_call(name: &str, args: &Map<String, Value>) -> Result<(), String> {
    let method = registry().method(name).ok_or(format!("no method {name}"))?;
    method
        .prepare_args(&args.clone().into_iter().collect(), None)
        .map(drop)
        .map_err(|e| format!("invalid: {e}"))
}

#[test]
fn each_json_schema_is_the_call_object_of_its_format() {
    let tools = definitions();
    let mut with_schema = Vec::new();
    for id in json_bodied() {
        let Some(schema) = json_dialect(id, &tools, Dialect::JsonSchema, Scope::Call) else { continue };
        with_schema.push(id);
        let keys = match CallShape::of(&schema.to_json().unwrap()) {
            CallShape::Named { name, args, fixed } => {
                let fixed: Vec<&str> = fixed.keys().map(String::as_str).collect();
                format!("{fixed:?} {name} {args}")
            }
            CallShape::Keyed => "{NAME: ARGUMENTS}".to_string(),
        };
        let expected = match id {
            "llama3_json" | "internlm" => "[] name parameters",
            "inkling" => "[] name args",
            "cohere" => "[\"tool_call_id\"] tool_name parameters",
            "apertus" => "{NAME: ARGUMENTS}",
            _ => "[] name arguments",
        };
        assert_eq!(keys, expected, "{id}");
    }
    // The JSON-bodied formats without one dialect, as docs/grammar.md says.
    assert!(
        !with_schema.contains(&"harmony") && json_bodied().contains(&"harmony"),
        "harmony: a structural tag only"
    );
    assert!(
        json_dialect("xlam", &tools, Dialect::StructuralTag, Scope::Reply).is_none(),
        "xlam: no structural tag"
    );
    assert!(with_schema.contains(&"xlam"), "xlam: a JSON Schema");
    assert!(!json_bodied().contains(&"sarashina"), "sarashina: no JSON dialect");
}

#[test]
fn json_dialects_admit_the_calls_and_only_valid_ones() {
    let tools = definitions();
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[13; 32]);
    for id in &json_bodied() {
        let schema_grammar = json_dialect(id, &tools, Dialect::JsonSchema, Scope::Call);
        let shape = schema_grammar.as_ref().map(|g| CallShape::of(&g.to_json().unwrap()));
        let schema = schema_grammar.as_ref().map(|g| llg::compile(g).unwrap());
        let tag_grammar = json_dialect(id, &tools, Dialect::StructuralTag, Scope::Reply);
        let tag = tag_grammar.as_ref().map(|g| llg::compile(g).unwrap());
        for (tool, method, full_name, schema_of) in methods(&tools) {
            runner(8)
                .run(&args_of(&schema_of), |args| {
                    if let Some(tag) = &tag {
                        let call =
                            write_call(id, &tool, &method, &full_name, &args).expect("JSON carries any text");
                        // llguidance's JSON writes `<` raw (it admits `\u` escapes only
                        // where JSON needs them); the format's writer escapes it for the
                        // Lark and GBNF grammars.
                        let call = call.replace("\\u003c", "<");
                        let text = format!("Let me check.\n{call}\nDone.");
                        let mut engine = tag.fork();
                        let fed = engine.feed(text.as_bytes());
                        prop_assert!(
                            fed.is_ok() && engine.accepting(),
                            "{id} structural tag: {fed:?}\n{text}"
                        );
                    }
                    if let (Some(schema), Some(shape)) = (&schema, &shape) {
                        let object_text = shape.object(&full_name, &args).to_string();
                        let mut engine = schema.fork();
                        let fed = engine.feed(object_text.as_bytes());
                        prop_assert!(
                            fed.is_ok() && engine.accepting(),
                            "{id} JSON Schema: {fed:?}\n{object_text}"
                        );
                    }
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{id} {full_name}: {e}"));
        }
        // Walks: the schema's are call objects of valid arguments; the tag's, text whose
        // calls parse back valid (strings may hold any text, so only calls are checked).
        let (mut tag_done, mut schema_done, mut out_of_range) = (0, 0, 0);
        for _ in 0..WALKS {
            if let (Some(schema), Some(shape)) = (&schema, &shape)
                && let Some(text) = walk(schema, &(Vec::new(), Vec::new()), &mut rng, 120)
            {
                schema_done += 1;
                match serde_json::from_str::<Value>(&text) {
                    Ok(value) => shape
                        .read(&value)
                        .and_then(|(name, args)| valid_call(name, args))
                        .unwrap_or_else(|e| panic!("{id} JSON Schema walk: {e}\n{text}")),
                    // The engine's JSON bounds no exponent (docs/grammar.md says so): a
                    // number beyond f64 is the one thing it may write that no reader holds.
                    Err(e) if e.to_string().starts_with("number out of range") => out_of_range += 1,
                    Err(e) => panic!("{id}: {e}\n{text}"),
                }
            }
            // A structural tag constrains a call once its trigger starts one; the text
            // between calls, and the strings, are free (docs/grammar.md says so). So the
            // walk writes no markup whole but the tag's own begin texts, in free text
            // (the rest of a call is the only way on).
            let (Some(tag), Some(tag_grammar)) = (&tag, &tag_grammar) else { continue };
            let doc = tag_grammar.to_json().unwrap();
            let begins: Vec<String> = doc["structures"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["begin"].as_str().unwrap().into())
                .collect();
            if let Some(text) = walk_where(tag, &(begins, Vec::new()), &mut rng, 120, true) {
                tag_done += 1;
                let parsed = protocol(id).parse_turn(&tool_calling::model::AssistantTurn::from_text(&text));
                for request in &parsed.requests {
                    // (A reader may report it as JSON that does not parse.)
                    let call = text.get(request.span.start..request.span.end).unwrap_or(&text);
                    if request.problems.iter().any(|p| p.contains("number out of range"))
                        || (!request.complete && beyond_f64(call))
                    {
                        out_of_range += 1;
                        continue;
                    }
                    prop_assert_complete(id, request, &text);
                }
            }
        }
        assert!(
            (schema.is_none() || schema_done >= WALKS / 2) && (tag.is_none() || tag_done >= WALKS / 2),
            "{id}: {schema_done} and {tag_done} walks finished"
        );
        assert!(out_of_range < WALKS, "{id}: {out_of_range} walks wrote unreadable numbers");
    }
}

/// Whether `text` holds a number beyond an `f64` (`1e999`).
fn beyond_f64(text: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
        .any(|number| number.parse::<f64>().is_ok_and(f64::is_infinite))
}

/// A request from a structural tag's walk: complete, resolving to an offered method with
/// valid arguments.
fn prop_assert_complete(id: &str, request: &tool_calling::ToolRequest, text: &str) {
    assert!(request.complete, "{id} structural tag walk: incomplete {request:?}\n{text}");
    let args: Map<String, Value> = request.args.clone().into_iter().collect();
    valid_call(&request.tool_name, &args).unwrap_or_else(|e| panic!("{id} structural tag walk: {e}\n{text}"));
}

/// Schema-like JSON: the keywords the grammar reads, with values of every shape,
/// nested.
fn schema_like() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({})),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(null)),
        Just(json!(7)),
        prop_oneof![
            Just("string"),
            Just("integer"),
            Just("number"),
            Just("boolean"),
            Just("null"),
            Just("object"),
            Just("array"),
            Just("tuple")
        ]
        .prop_map(|t| json!({"type": t})),
        (any::<i64>(), any::<i64>())
            .prop_map(|(a, b)| json!({"type": "integer", "minimum": a, "maximum": b})),
        (any::<f64>(), 0u64..u64::MAX)
            .prop_map(|(a, b)| json!({"type": "number", "exclusiveMinimum": a, "maxItems": b})),
        Just(json!({"type": "integer", "format": "uint8", "exclusiveMaximum": 0.5})),
        Just(json!({"enum": []})),
        Just(json!({"enum": ["a", 1, null, {"x": [1]}, "「末」</tool_call>"]})),
        Just(json!({"const": "<think>"})),
        Just(json!({"$ref": "#"})),
        Just(json!({"$ref": "#/$defs/missing"})),
        Just(json!({"$ref": "http://example.com/schema"})),
        Just(json!({"type": "string", "minLength": 5, "maxLength": 2})),
        Just(json!({"type": "array", "minItems": 4294967295u64})),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(("[a-z<「]{1,3}", inner.clone()), 0..4).prop_map(|props| {
                let required: Vec<Value> = props.iter().map(|(k, _)| json!(k)).chain([json!("ghost")]).collect();
                json!({"type": "object", "properties": props.into_iter().collect::<Map<String, Value>>(), "required": required})
            }),
            inner.clone().prop_map(|items| json!({"type": "array", "items": items, "minItems": 1, "maxItems": 3})),
            proptest::collection::vec(inner.clone(), 0..3).prop_map(|options| json!({"anyOf": options})),
            proptest::collection::vec(inner.clone(), 0..3).prop_map(|options| json!({"oneOf": options, "type": ["string", "integer"]})),
            inner.clone().prop_map(|d| json!({"$defs": {"d": d}, "$ref": "#/$defs/d"})),
            inner.prop_map(|d| json!({"type": "object", "properties": {"self": {"$ref": "#"}}, "$defs": {"d": d}})),
        ]
    })
}

#[test]
fn any_schema_gives_a_grammar_or_a_typed_error_never_a_panic() {
    let ids: Vec<&str> = ProtocolRegistry::builtin_ids();
    runner(12)
        .run(&schema_like(), |schema| {
            let tools = vec![
                ToolDefinition::new("t", "T")
                    .with_method(MethodDefinition::new("m", "M.").with_parameters(schema.clone())),
            ];
            for id in &ids {
                for dialect in Dialect::ALL {
                    for scope in Scope::ALL {
                        // Ok or an error that says what and where; a panic fails the test.
                        if let Err(e) = protocol(id).grammar(&tools, &Constraint::new(dialect, scope)) {
                            prop_assert!(!e.to_string().is_empty());
                        }
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    // Nesting deeper than the grammar follows is an error, not a stack overflow.
    let mut deep = json!({"type": "integer"});
    // (Deeper than serde_json reads from text, 128; not so deep that cloning or dropping
    // the value itself, recursive in serde_json, overflows a test thread's stack.)
    for _ in 0..200 {
        deep = json!({"anyOf": [deep]});
    }
    let tools = vec![
        ToolDefinition::new("t", "T").with_method(
            MethodDefinition::new("m", "M.")
                .with_parameters(json!({"type": "object", "properties": {"x": deep}, "required": ["x"]})),
        ),
    ];
    for id in ["vcp", "hermes", "qwen3_coder_xml"] {
        let error = protocol(id).grammar(&tools, &Constraint::new(Dialect::Lark, Scope::Call)).unwrap_err();
        assert!(error.to_string().contains("deeper than 64"), "{id}: {error}");
    }
    let error =
        protocol("hermes").grammar(&tools, &Constraint::new(Dialect::JsonSchema, Scope::Call)).unwrap_err();
    assert!(error.to_string().contains("deeper than 64"), "the JSON dialects too: {error}");
}

/// A tool whose parameters carry the bounds a small model needs: a string of at most 12
/// characters, a free string, an integer with no bounds of its own.
fn bounded_tools() -> Vec<ToolDefinition> {
    vec![ToolDefinition::new("notes", "Notes").with_method(
        MethodDefinition::new("put", "Put a note.").with_parameters(json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "maxLength": 12},
                "body": {"type": "string"},
                "count": {"type": "integer"}
            },
            "required": ["title", "body", "count"]
        })),
    )]
}

#[test]
fn lengths_integers_and_counts_are_bounded() {
    let tools = bounded_tools();
    let put = |id: &str, title: &str, body: &str, count: Value| {
        write_call(
            id,
            "notes",
            "put",
            "notes_put",
            json!({"title": title, "body": body, "count": count}).as_object().unwrap(),
        )
        .expect("plain values are written")
    };
    for id in &grammar_protocols() {
        for dialect in TEXT_DIALECTS {
            let constraint = Constraint::new(dialect, Scope::Call).max_text(20);
            let one =
                protocol(id).grammar(&tools, &constraint).unwrap_or_else(|e| panic!("{id} {dialect}: {e}"));
            assert!(one.notes().is_empty(), "{id} {dialect}: {:?}", one.notes());
            // Bounds cost little: a grammar an engine walks at every token stays about
            // the size of the unbounded one (a product of automaton and count did not).
            let unbounded = protocol(id).grammar(&tools, &Constraint::new(dialect, Scope::Call)).unwrap();
            assert!(
                one.text().len() <= 2 * unbounded.text().len(),
                "{id} {dialect}: {} bytes bounded, {} unbounded",
                one.text().len(),
                unbounded.text().len()
            );
            let one = llg::compile(&one).unwrap();
            let fits = put(id, "twelve chars", "twenty characters ok", json!(u64::MAX));
            one.admits(&fits).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{fits}"));
            let low = put(id, "t", "b", json!(i64::MIN));
            one.admits(&low).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{low}"));
            // Integers no integer type holds, as a model may write them (written in
            // place of a number the format wrote itself).
            let with_count = |digits: &str| put(id, "t", "b", json!(777_777)).replacen("777777", digits, 1);
            for (what, text) in [
                ("a title over its maxLength", put(id, "thirteen char", "b", json!(1))),
                ("a body over max_text", put(id, "t", "twenty-one characters", json!(1))),
                ("an integer past u64", with_count("18446744073709551616")),
                ("an integer below i64", with_count("-9223372036854775809")),
                ("a run of 20 digits", with_count("41250876931111111111")),
            ] {
                assert!(one.admits(&text).is_err(), "{id} {dialect} admits {what}:\n{text}");
            }
        }
    }
}

#[test]
fn a_reply_holds_at_most_max_calls() {
    let tools = definitions();
    for id in &grammar_protocols() {
        for dialect in TEXT_DIALECTS {
            let call = |n: i64| {
                let args = json!({"a": n, "b": 1});
                write_call(id, "calc", "add", "calc_add", args.as_object().unwrap()).expect("a call")
            };
            for scope in [Scope::Calls, Scope::Reply] {
                let two = protocol(id)
                    .grammar(&tools, &Constraint::new(dialect, scope).max_calls(2))
                    .unwrap_or_else(|e| panic!("{id} {dialect} {scope}: {e}"));
                let two = llg::compile(&two).unwrap();
                let (one_call, two_calls, three_calls) =
                    (call(1), joined(id, &[call(1), call(2)]), joined(id, &[call(1), call(2), call(3)]));
                for text in [&one_call, &two_calls] {
                    two.admits(text).unwrap_or_else(|e| panic!("{id} {dialect} {scope}: {e}\n{text}"));
                }
                assert!(
                    two.admits(&three_calls).is_err(),
                    "{id} {dialect} {scope} admits 3 calls:\n{three_calls}"
                );
            }
            // A reply of no call: the answer the loop asks for after repeated calls.
            let none = protocol(id)
                .grammar(&tools, &Constraint::new(dialect, Scope::Reply).max_calls(0))
                .unwrap_or_else(|e| panic!("{id} {dialect}: {e}"));
            let none = llg::compile(&none).unwrap();
            let answer = "The sum is 3.";
            none.admits(answer).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{answer}"));
            let with_call = format!("{answer}\n{}", call(1));
            assert!(none.admits(&call(1)).is_err(), "{id} {dialect} max_calls 0 admits a call");
            assert!(none.admits(&with_call).is_err(), "{id} {dialect} max_calls 0 admits a call");
        }
    }
    // Kimi K2's call index counts calls: it cannot run on.
    let one = llg::compile(&grammar("kimi_k2", &tools, Dialect::Lark, Scope::Call)).unwrap();
    let good = write_call("kimi_k2", "calc", "add", "calc_add", json!({"a": 1, "b": 2}).as_object().unwrap())
        .unwrap();
    one.admits(&good).unwrap();
    for index in [":00", ":4", ":1234"] {
        let bad = good.replacen(":0", index, 1);
        assert!(one.admits(&bad).is_err(), "kimi_k2 admits the index {index}");
    }
    // Kimi K3's counts from 1.
    let two = protocol("kimi_k3")
        .grammar(&tools, &Constraint::new(Dialect::Lark, Scope::Calls).max_calls(2))
        .unwrap();
    let two = llg::compile(&two).unwrap();
    let good = write_call("kimi_k3", "calc", "add", "calc_add", json!({"a": 1, "b": 2}).as_object().unwrap())
        .unwrap();
    two.admits(&good.replacen("index=\"1\"", "index=\"2\"", 1)).unwrap();
    for index in ["0", "3", "01", "10"] {
        let bad = good.replacen("index=\"1\"", &format!("index=\"{index}\""), 1);
        assert!(two.admits(&bad).is_err(), "kimi_k3 admits the index {index}");
    }
    // Nor can Cohere's tool_call_id, in either text dialect.
    let good = write_call("cohere", "calc", "add", "calc_add", json!({"a": 1, "b": 2}).as_object().unwrap())
        .unwrap();
    for dialect in TEXT_DIALECTS {
        let calls = llg::compile(&grammar("cohere", &tools, dialect, Scope::Calls)).unwrap();
        calls.admits(&good.replacen("\"0\"", "\"3\"", 1)).unwrap();
        for id in ["\"00\"", "\"4\"", "\"1234\"", "0"] {
            let bad = good.replacen("\"0\"", id, 1);
            assert!(calls.admits(&bad).is_err(), "cohere {dialect} admits the id {id}");
        }
    }
    // Its JSON Schema too: the id is one of the numbers below the most calls.
    for most in [4, 2] {
        let schema = protocol("cohere")
            .grammar(&tools, &Constraint::new(Dialect::JsonSchema, Scope::Call).max_calls(most))
            .unwrap();
        let schema = llg::compile(&schema).unwrap();
        let object = |id: Value| {
            json!({"tool_call_id": id, "tool_name": "calc_add", "parameters": {"a": 1, "b": 2}}).to_string()
        };
        for id in 0..most {
            let text = object(json!(id.to_string()));
            schema.admits(&text).unwrap_or_else(|e| panic!("cohere JSON Schema, {most} calls: {e}\n{text}"));
        }
        for id in [json!(most.to_string()), json!("00"), json!("-1"), json!(0)] {
            let text = object(id);
            assert!(schema.admits(&text).is_err(), "cohere JSON Schema, {most} calls, admits\n{text}");
        }
    }
}

#[test]
fn an_xlam_list_is_a_call_only_where_the_reply_starts() {
    let tools = definitions();
    let call =
        write_call("xlam", "calc", "add", "calc_add", json!({"a": 1, "b": 2}).as_object().unwrap()).unwrap();
    for dialect in TEXT_DIALECTS {
        let reply = llg::compile(&grammar("xlam", &tools, dialect, Scope::Reply)).unwrap();
        for text in [
            call.clone(),
            format!(" \n{call}\nDone, [1] and [a]."),
            format!("<think>Add.</think>\n{call}"),
            "A list [1, 2] in prose.".to_string(),
        ] {
            reply.admits(&text).unwrap_or_else(|e| panic!("{dialect}: {e}\n{text}"));
            // What the grammar admits reads back as it means: calls only first.
            assert_eq!(
                read_back("xlam", &text).unwrap().len(),
                usize::from(text.contains("calc_add")),
                "{text}"
            );
        }
        for text in [format!("Sure.\n{call}"), format!("{call}\n{call}"), "[1, 2] first.".to_string()] {
            assert!(reply.admits(&text).is_err(), "xlam {dialect} admits\n{text}");
        }
    }
}

/// What a protocol's free text may not hold, as docs/grammar.md lists it.
struct FreeText {
    id: &'static str,
    /// Markup anywhere in free text.
    anywhere: &'static [&'static str],
    /// Markup a stretch of free text may not open with, after blanks (at the start of
    /// the reply, or right after a call): elsewhere it is text.
    opening: &'static [&'static str],
    /// The format's own reasoning markup: neither free text nor the reasoning block
    /// that may open the reply holds it.
    reasoning: &'static [&'static str],
}

const FREE_TEXT: &[FreeText] = &[
    FreeText {
        id: "vcp",
        anywhere: &["<<<[TOOL_REQUEST]>>>", "<<<[TOOL_REQUEST_EXP]>>>"],
        opening: &[],
        reasoning: &[],
    },
    FreeText { id: "hermes", anywhere: &["<tool_call>"], opening: &[], reasoning: &[] },
    FreeText {
        id: "qwen3_coder_xml",
        anywhere: &["<tool_call>", "<function="],
        opening: &[],
        reasoning: &[],
    },
    FreeText { id: "mistral", anywhere: &["[TOOL_CALLS]"], opening: &[], reasoning: &[] },
    FreeText { id: "llama3_json", anywhere: &["<|python_tag|>"], opening: &["{"], reasoning: &[] },
    FreeText { id: "pythonic", anywhere: &["[", "<|python_start|>"], opening: &[], reasoning: &[] },
    FreeText {
        id: "deepseek_v3",
        anywhere: &["<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>"],
        opening: &[],
        reasoning: &[],
    },
    FreeText {
        id: "deepseek_v31",
        anywhere: &["<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>"],
        opening: &[],
        reasoning: &[],
    },
    FreeText { id: "kimi_k2", anywhere: &["<|tool_calls_section_begin|>"], opening: &[], reasoning: &[] },
    FreeText { id: "glm45", anywhere: &["<tool_call>"], opening: &[], reasoning: &[] },
    FreeText { id: "glm47", anywhere: &["<tool_call>"], opening: &[], reasoning: &[] },
    FreeText { id: "minimax_m2", anywhere: &["<minimax:tool_call>"], opening: &[], reasoning: &[] },
    FreeText {
        id: "cohere",
        anywhere: &[
            "<|START_ACTION|>",
            "<|START_RESPONSE|>",
            "<|END_RESPONSE|>",
            "<|START_TEXT|>",
            "<|END_TEXT|>",
        ],
        opening: &[],
        reasoning: &["<|START_THINKING|>", "<|END_THINKING|>"],
    },
    FreeText { id: "granite", anywhere: &["<|tool_call|>", "<tool_call>"], opening: &["["], reasoning: &[] },
    FreeText {
        id: "xlam",
        anywhere: &["[TOOL_CALLS]", "<tool_call>", "```json", "[{\"name\": "],
        opening: &["["],
        reasoning: &[],
    },
    FreeText { id: "phi4_mini", anywhere: &["functools["], opening: &[], reasoning: &[] },
    FreeText {
        id: "hunyuan",
        anywhere: &["<tool_calls>", "<answer>", "</answer>"],
        opening: &["助手："],
        reasoning: &[],
    },
    FreeText { id: "jamba", anywhere: &["<tool_calls>"], opening: &[], reasoning: &[] },
    FreeText { id: "minimax_m1", anywhere: &["<tool_calls>"], opening: &[], reasoning: &[] },
    FreeText { id: "internlm", anywhere: &["<|action_start|>"], opening: &[], reasoning: &[] },
    FreeText { id: "longcat", anywhere: &["<longcat_tool_call>"], opening: &[], reasoning: &[] },
    FreeText {
        id: "ernie45",
        anywhere: &["<tool_call>", "<response>", "</response>"],
        opening: &[],
        reasoning: &[],
    },
    FreeText {
        id: "gigachat3",
        anywhere: &["<|function_call|>", "<|message_sep|>"],
        opening: &["</s>"],
        reasoning: &[],
    },
    FreeText {
        id: "apertus",
        anywhere: &["<|tools_prefix|>", "<|inner_prefix|>", "<|inner_suffix|>"],
        opening: &[],
        reasoning: &[],
    },
    FreeText {
        id: "inkling",
        anywhere: &["<|content_invoke", "<|content_text|>"],
        opening: &[],
        reasoning: &[
            "<|content_thinking|>",
            "<|end_message|>",
            "<|message_model|>",
            "<|content_model_end_sampling|>",
        ],
    },
    FreeText {
        id: "harmony",
        anywhere: &["<|message|>", "<|constrain|>"],
        opening: &[],
        reasoning: &[
            "<|channel|>analysis<|message|>",
            "<|start|>",
            "<|channel|>",
            "<|end|>",
            "<|call|>",
            "<|return|>",
        ],
    },
    FreeText { id: "sarashina", anywhere: &["<|tool_calls|>"], opening: &["[", "{"], reasoning: &[] },
    FreeText {
        id: "seed_oss",
        anywhere: &["<seed:tool_call>"],
        opening: &[],
        reasoning: &["<seed:think>", "</seed:think>"],
    },
    FreeText { id: "poolside_v1", anywhere: &["<tool_call>"], opening: &[], reasoning: &[] },
    FreeText {
        id: "hunyuan_v3",
        anywhere: &["<tool_calls>", "<tool_calls:opensource>"],
        opening: &[],
        reasoning: &[],
    },
    FreeText { id: "minicpm5", anywhere: &["<function "], opening: &[], reasoning: &[] },
    FreeText {
        id: "minimax_m3",
        anywhere: &["]<]minimax[>[<tool_call>"],
        opening: &[],
        reasoning: &["<mm:think>", "</mm:think>"],
    },
    FreeText { id: "step3", anywhere: &["<｜tool_calls_begin｜>"], opening: &[], reasoning: &[] },
    FreeText { id: "deepseek_v32", anywhere: &["<｜DSML｜function_calls>"], opening: &[], reasoning: &[] },
    FreeText { id: "deepseek_v4", anywhere: &["<｜DSML｜tool_calls>"], opening: &[], reasoning: &[] },
    FreeText { id: "deepseek_v41", anywhere: &["<｜DSML｜ calls>"], opening: &[], reasoning: &[] },
    FreeText {
        id: "gigachat35",
        anywhere: &["<｜GCML｜tool_calls>", "</s>", "<|message_sep|>"],
        opening: &[],
        reasoning: &[],
    },
    FreeText {
        id: "kimi_k3",
        anywhere: &["<|open|>", "<|close|>", "<|end_of_msg|>"],
        opening: &[],
        reasoning: &["<|open|>think<|sep|>", "<|close|>think<|sep|>"],
    },
    FreeText { id: "function_gemma", anywhere: &["<start_function_call>"], opening: &[], reasoning: &[] },
    FreeText {
        id: "gemma4",
        anywhere: &["<|tool_call>"],
        opening: &[],
        reasoning: &["<|channel>", "<channel|>"],
    },
    FreeText { id: "olmo3", anywhere: &["<function_calls>"], opening: &[], reasoning: &[] },
    FreeText {
        id: "lfm2",
        anywhere: &["<|tool_call_start|>", "<|tool_call_end|>"],
        opening: &[],
        reasoning: &[],
    },
];

#[test]
fn free_text_holds_no_markup_its_reader_reads() {
    let tools = definitions();
    let mut listed: Vec<&str> = FREE_TEXT.iter().map(|f| f.id).collect();
    let mut offered = grammar_protocols();
    listed.sort();
    offered.sort();
    assert_eq!(listed, offered, "every protocol with a grammar is listed");
    for free in FREE_TEXT {
        let id = free.id;
        let call =
            write_call(id, "calc", "add", "calc_add", json!({"a": 1, "b": 2}).as_object().unwrap()).unwrap();
        for dialect in TEXT_DIALECTS {
            let reply = llg::compile(&grammar(id, &tools, dialect, Scope::Reply)).unwrap();
            // What is admitted reads back as it means: its calls, no others.
            let admitted = |text: &str, calls: usize| {
                reply.admits(text).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{text}"));
                let read = read_back(id, text).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{text}"));
                assert_eq!(read.len(), calls, "{id} {dialect}:\n{text}");
            };
            let refused = |text: &str| assert!(reply.admits(text).is_err(), "{id} {dialect} admits\n{text}");
            admitted("Plain text.", 0);
            // (xLAM's list is a call only first in the reply.)
            let lead = if id == "xlam" { "\n" } else { "Let me check.\n" };
            admitted(&format!("<think>Which tool?</think>{lead}{call}\nDone."), 1);
            // A reasoning tag, opening or closing, anywhere but the reply's first block.
            for tag in ["<think>", "</think>", "< THINKING >", "</Think >"] {
                refused(&format!("Plain {tag} text."));
            }
            for markup in free.anywhere.iter().chain(free.reasoning) {
                refused(&format!("Plain {markup} text."));
                refused(&format!("{call}\nPlain {markup} text."));
            }
            for markup in free.reasoning {
                refused(&format!("<think>Plan {markup} more.</think>Done."));
            }
            // VCP reads a start marker right after a backtick as a mention, not a call.
            if id == "vcp" {
                admitted(&format!("See `it`.\n{call}"), 1);
                refused(&format!("See `{call}"));
            }
            for markup in free.opening {
                for text in
                    [format!("{markup} text."), format!(" \n{markup} text."), format!("{call}{markup} text.")]
                {
                    refused(&text);
                }
                if !free.anywhere.contains(markup) {
                    admitted(&format!("Plain {markup} text."), 0);
                }
            }
        }
    }
}

/// Several calls of `id` as one reply of the `calls` scope writes them: VCP and the
/// tag formats one after the other on lines of their own; the section formats inside
/// one section.
fn joined(id: &str, calls: &[String]) -> String {
    let sections: &[(&str, &str, &str, &str)] = &[
        ("mistral", "[TOOL_CALLS][", ", ", "]"),
        ("pythonic", "[", ", ", "]"),
        ("deepseek_v3", "<｜tool▁calls▁begin｜>", "", "<｜tool▁calls▁end｜>"),
        ("deepseek_v31", "<｜tool▁calls▁begin｜>", "", "<｜tool▁calls▁end｜>"),
        ("kimi_k2", "<|tool_calls_section_begin|>", "", "<|tool_calls_section_end|>"),
        ("minimax_m2", "<minimax:tool_call>", "", "\n</minimax:tool_call>"),
        ("hunyuan_v3", "<tool_calls>", "", "\n</tool_calls>"),
        ("minimax_m3", "]<]minimax[>[<tool_call>", "", "\n]<]minimax[>[</tool_call>"),
        ("step3", "<｜tool_calls_begin｜>", "", "\n<｜tool_calls_end｜>"),
        ("deepseek_v32", "<｜DSML｜function_calls>", "", "\n</｜DSML｜function_calls>"),
        ("deepseek_v4", "<｜DSML｜tool_calls>", "", "\n</｜DSML｜tool_calls>"),
        ("deepseek_v41", "<｜DSML｜ calls>", "", "\n</｜DSML｜ calls>"),
        ("gigachat35", "<｜GCML｜tool_calls>", "", "\n</｜GCML｜tool_calls>"),
        ("kimi_k3", "<|open|>tools<|sep|>", "", "<|close|>tools<|sep|>"),
        ("olmo3", "<function_calls>", "\n", "</function_calls>"),
        ("lfm2", "<|tool_call_start|>[", ", ", "]<|tool_call_end|>"),
        ("cohere", "<|START_ACTION|>[\n    ", ",\n    ", "\n]<|END_ACTION|>"),
        ("granite", "<|tool_call|>[", ", ", "]"),
        ("xlam", "[", ", ", "]"),
        ("phi4_mini", "functools[", ", ", "]"),
        ("hunyuan", "<tool_calls>[", ", ", "]</tool_calls>"),
        ("jamba", "<tool_calls>[", ", ", "]</tool_calls>"),
        ("minimax_m1", "<tool_calls>\n", "\n", "\n</tool_calls>"),
        ("apertus", "<|tools_prefix|>[", ", ", "]<|tools_suffix|>"),
        ("sarashina", "<|tool_calls|>[", ", ", "]"),
    ];
    match sections.iter().find(|(name, ..)| *name == id) {
        Some((_, open, between, close)) => {
            let inner: Vec<&str> = calls
                .iter()
                .map(|c| {
                    c.strip_prefix(open).and_then(|c| c.strip_suffix(close)).expect("one call in a section")
                })
                .collect();
            format!("{open}{}{close}", inner.join(between))
        }
        None => calls.join("\n"),
    }
}

#[test]
fn a_bound_too_large_for_gbnf_is_left_to_validation_with_a_note() {
    let tools = vec![ToolDefinition::new("notes", "Notes").with_method(
        MethodDefinition::new("put", "Put a note.").with_parameters(json!({
            "type": "object",
            "properties": {"body": {"type": "string", "maxLength": 100000}},
            "required": ["body"]
        })),
    )];
    for dialect in TEXT_DIALECTS {
        let grammar = protocol("vcp").grammar(&tools, &Constraint::new(dialect, Scope::Call)).unwrap();
        assert!(grammar.notes().iter().any(|n| n.contains("left to validation")), "{:?}", grammar.notes());
        let one = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」notes「末」,\ncommand:「始」put「末」,\nbody:「始」a note「末」\n<<<[END_TOOL_REQUEST]>>>";
        llg::admits(&grammar, one).unwrap_or_else(|e| panic!("{dialect}: {e}"));
    }
    // A bound the automaton can hold is enforced, whatever the protocol.
    let small = |max: u32| {
        vec![ToolDefinition::new("notes", "Notes").with_method(MethodDefinition::new("put", "Put a note.").with_parameters(
            json!({"type": "object", "properties": {"body": {"type": "string", "maxLength": max}}, "required": ["body"]}),
        ))]
    };
    let grammar = protocol("vcp").grammar(&small(200), &Constraint::new(Dialect::Gbnf, Scope::Call)).unwrap();
    assert!(grammar.notes().is_empty(), "{:?}", grammar.notes());
}

/// A tool whose arguments nest (an object, a list, an enum without a type), for the
/// notations that nest values of their own (MiniMax-M3's elements, Gemma's braces,
/// Python literals) and those that write them as JSON.
fn nested_tools() -> Vec<ToolDefinition> {
    vec![ToolDefinition::new("plan", "Plan").with_method(MethodDefinition::new("trip", "Plan a trip.").with_parameters(
        json!({
            "type": "object",
            "properties": {
                "where": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
                    "required": ["city"]
                },
                "stops": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "mode": {"enum": ["car", "train"]},
                "flags": {"type": "object", "properties": {"quick": {"type": "boolean"}, "cost": {"type": "number"}}}
            },
            "required": ["where"]
        }),
    ))]
}

#[test]
fn nested_values_are_admitted_and_read_back() {
    let tools = nested_tools();
    let schema = tools[0].methods[0].parameters.clone();
    let cases = [
        json!({"where": {"city": "Paris", "days": 3}, "stops": ["Lyon", "Dijon"], "mode": "train", "flags": {"quick": true, "cost": 12.5}}),
        json!({"where": {"city": "Oslo"}, "stops": [], "flags": {}}),
        json!({"where": {"city": "x < y & z"}, "flags": {"cost": -2}}),
    ];
    // (VCP names its tool and method among the arguments: its own tests cover it.)
    for id in grammar_protocols().iter().filter(|id| TextFormat::from_id(id).is_some()) {
        for dialect in TEXT_DIALECTS {
            let one = grammar(id, &tools, dialect, Scope::Call);
            for args in &cases {
                let args = args.as_object().unwrap();
                let text =
                    write_call(id, "plan", "trip", "plan_trip", args).expect("plain values are written");
                llg::admits(&one, &text).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{text}"));
                let parsed = protocol(id).parse_turn(&tool_calling::model::AssistantTurn::from_text(&text));
                assert_eq!(parsed.requests.len(), 1, "{id}: {text}");
                let read = tool_calling::tools::TextCoercion::new()
                    .python_literals(true)
                    .coerce_args(&parsed.requests[0].args, &schema);
                assert!(
                    same(&Value::Object(read.clone()), &Value::Object(args.clone())),
                    "{id}: {read:?}\n{text}"
                );
            }
        }
    }
}

/// While reasoning is hidden (the default), a format's own reasoning markup is cut out
/// of a reply wherever it stands, a value too: no grammar admits it in a value.
#[test]
fn no_value_holds_the_formats_own_reasoning_markup() {
    let tools = definitions();
    let tokens = [
        ("seed_oss", "<seed:think>"),
        ("seed_oss", "</seed:think>"),
        ("minimax_m3", "<mm:think>"),
        ("gemma4", "<|channel>"),
        ("gemma4", "<channel|>"),
        ("kimi_k3", "<|open|>think<|sep|>"),
    ];
    for (id, token) in tokens {
        let args = |message: &str| json!({"message": message, "times": 2}).as_object().unwrap().clone();
        let plain =
            write_call(id, "text", "repeat", "text_repeat", &args("a PLACE b")).expect("a plain call");
        let marked = plain.replacen("PLACE", token, 1);
        let as_written =
            vec![("text_repeat".to_string(), json!({"message": format!("a {token} b"), "times": 2}))];
        assert_ne!(read_back(id, &marked).ok(), Some(as_written), "{id} reads {token} in a value");
        for dialect in TEXT_DIALECTS {
            let one = grammar(id, &tools, dialect, Scope::Call);
            llg::admits(&one, &plain).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{plain}"));
            assert!(
                llg::admits(&one, &marked).is_err(),
                "{id} {dialect} admits {token} in a value:\n{marked}"
            );
        }
    }
}

/// The formats whose writer refuses a string that reads as another value without a
/// schema admit it in their grammars: the tool's schema keeps it a string.
#[test]
fn a_string_that_reads_as_a_number_is_admitted_and_stays_a_string() {
    let tools = definitions();
    for id in TYPED_TEXT {
        let args = |message: &str| json!({"message": message, "times": 2}).as_object().unwrap().clone();
        assert_eq!(write_call(id, "text", "repeat", "text_repeat", &args("42")), None, "{id} writes \"42\"");
        let plain = write_call(id, "text", "repeat", "text_repeat", &args("PLACE")).expect("a plain call");
        let text = plain.replacen("PLACE", "42", 1);
        let read = read_back(id, &text).unwrap_or_else(|e| panic!("{id}: {e}\n{text}"));
        assert_eq!(read.len(), 1, "{id}: {text}");
        assert_eq!((read[0].0.as_str(), &read[0].1["message"]), ("text_repeat", &json!("42")), "{id}");
        for dialect in TEXT_DIALECTS {
            let one = grammar(id, &tools, dialect, Scope::Call);
            llg::admits(&one, &text).unwrap_or_else(|e| panic!("{id} {dialect}: {e}\n{text}"));
        }
    }
}

#[test]
fn a_reply_holds_no_result_markup() {
    // A small model answers its result by imitating it (`<tool_response>\n42.0`); the
    // reply's free text refuses the markup the protocol's results open with.
    let tools = definitions();
    let result = tool_calling::ToolExecutionResult::success("1", "calc_add", "42");
    let mut checked = Vec::new();
    for id in &grammar_protocols() {
        let written: String = protocol(id)
            .result_messages(std::slice::from_ref(&result), &tool_calling::protocol::TurnState::default())
            .iter()
            .map(|m| m.text().into_owned())
            .collect();
        // (Formats whose results open with plain text, such as Kimi K2's `## Return of`,
        // or JSON, such as Llama 3's and Apertus' `["42"]`, have no markup to refuse.)
        let before = written.split("42").next().unwrap_or_default().trim_start();
        if !before.starts_with(['<', '[']) || !before.contains(['>', ']']) {
            continue;
        }
        checked.push(*id);
        for dialect in TEXT_DIALECTS {
            let reply = grammar(id, &tools, dialect, Scope::Reply);
            llg::admits(&reply, "The answer is 42.").unwrap_or_else(|e| panic!("{id} {dialect}: {e}"));
            let imitation = format!("The answer:\n{written}");
            assert!(
                llg::admits(&reply, &imitation).is_err(),
                "{id} {dialect} admits its result:\n{imitation}"
            );
        }
    }
    for id in ["vcp", "hermes", "mistral", "deepseek_v3", "minimax_m2"] {
        assert!(checked.contains(&id), "{id} was not checked: {checked:?}");
    }
}

#[test]
fn a_reply_that_starts_in_reasoning_closes_it_first() {
    // A model whose template opens reasoning (the table's `starts_in_reasoning`): the
    // reader hides everything up to the first closing tag, so every grammar starts with
    // the rest of that reasoning and the tag, and what it admits reads back as the call.
    let tools = definitions();
    let args = json!({"a": 1, "b": 2});
    let mut checked = 0;
    for id in &grammar_protocols() {
        let options = BuiltinOptions::default().starts_in_reasoning(true);
        let opened = ProtocolRegistry::builtin(id, &options).unwrap().into_protocol();
        let call = write_call(id, "calc", "add", "calc_add", args.as_object().unwrap()).expect("a call");
        for dialect in TEXT_DIALECTS {
            for scope in [Scope::Call, Scope::Calls, Scope::Reply] {
                let g = opened.grammar(&tools, &Constraint::new(dialect, scope)).unwrap();
                for text in [format!("</think>{call}"), format!("I add them.\n</think>\n\n{call}")] {
                    llg::admits(&g, &text).unwrap_or_else(|e| panic!("{id} {dialect} {scope}: {e}\n{text}"));
                    let read = opened.parse_turn(&tool_calling::model::AssistantTurn::from_text(&text));
                    assert_eq!(read.requests.len(), 1, "{id}: {text}");
                    assert!(read.requests[0].complete, "{id}: {text}");
                }
                // The call alone would be hidden as reasoning never closed: refused.
                assert!(llg::admits(&g, &call).is_err(), "{id} {dialect} {scope} admits a call in reasoning");
            }
        }
        checked += 1;
    }
    assert!(checked >= 12, "{checked}");
}

#[test]
fn a_keyword_no_grammar_says_is_left_to_validation_with_a_note() {
    let tools = vec![ToolDefinition::new("codes", "Codes").with_method(
        MethodDefinition::new("put", "Put a code.").with_parameters(json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "step": {"type": "number", "multipleOf": 0.5},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                "word": {"type": "string", "pattern": "\\bword(?=s)"}
            },
            "required": ["code"]
        })),
    )];
    let noted = |g: &Grammar, keyword: &str| {
        g.notes().iter().filter(|n| n.contains(&format!("`{keyword}`")) && n.contains("codes_put")).count()
    };
    for id in ["vcp", "hermes", "qwen3_coder_xml"] {
        for dialect in TEXT_DIALECTS {
            let g = protocol(id).grammar(&tools, &Constraint::new(dialect, Scope::Call)).unwrap();
            for keyword in ["multipleOf", "uniqueItems"] {
                assert_eq!(noted(&g, keyword), 1, "{id} {dialect}: {:?}", g.notes());
            }
            // `pattern`: a lookahead is said in neither dialect; `^[A-Z]{3}$` is said in
            // Lark, and GBNF, which has no regular expressions, notes it.
            let patterns = noted(&g, "pattern");
            let want = if dialect == Dialect::Gbnf { 2 } else { 1 };
            assert_eq!(patterns, want, "{id} {dialect}: {:?}", g.notes());
        }
    }
    // A schema with none of them has no note.
    let plain =
        protocol("hermes").grammar(&definitions(), &Constraint::new(Dialect::Gbnf, Scope::Call)).unwrap();
    assert!(plain.notes().is_empty(), "{:?}", plain.notes());
}

/// A tool with patterns: one anchored at both ends with ECMA's `\d`, and `tag`.
fn pattern_tools(tag: &str) -> Vec<ToolDefinition> {
    vec![ToolDefinition::new("codes", "Codes").with_method(
        MethodDefinition::new("put", "Put a code.").with_parameters(json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{2}$"},
                "tag": {"type": "string", "pattern": tag}
            },
            "required": ["code", "tag"]
        })),
    )]
}

#[test]
fn a_pattern_is_enforced_in_lark() {
    // An unanchored pattern for the calls below; an anchored one for the random walks,
    // which would seldom write `abc` by chance.
    let tools = pattern_tools("ab+c");
    let walked = pattern_tools("^[a-z]{2}$");
    let code = regex::Regex::new("^[A-Z]{3}-[0-9]{2}$").unwrap();
    let tag = regex::Regex::new("^[a-z]{2}$").unwrap();
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[5; 32]);
    for id in &grammar_protocols() {
        let g = grammar(id, &tools, Dialect::Lark, Scope::Call);
        assert!(g.notes().is_empty(), "{id}: {:?}", g.notes());
        let engine = llg::compile(&g).unwrap_or_else(|e| panic!("{id}: {e}\n{}", g.text()));
        let put = |c: &str, t: &str| {
            write_call(id, "codes", "put", "codes_put", json!({"code": c, "tag": t}).as_object().unwrap())
                .expect("plain values are written")
        };
        for (c, t) in [("ABC-12", "abc"), ("XYZ-99", "xx abbbc yy")] {
            let text = put(c, t);
            engine.admits(&text).unwrap_or_else(|e| panic!("{id} refuses {c} {t}: {e}\n{text}"));
        }
        for (c, t) in
            [("abc-12", "abc"), ("ABC-123", "abc"), ("ABC-1x", "abc"), ("ABC-12", "ac"), ("ABC-12", "")]
        {
            let text = put(c, t);
            assert!(engine.admits(&text).is_err(), "{id} admits {c:?} {t:?}:\n{text}");
        }
        // Every call a random walk finishes has values that match.
        let g = grammar(id, &walked, Dialect::Lark, Scope::Call);
        let engine = llg::compile(&g).unwrap_or_else(|e| panic!("{id}: {e}\n{}", g.text()));
        let literals = literals(g.text());
        let mut finished = 0;
        for _ in 0..WALKS {
            let Some(text) = walk(&engine, &literals, &mut rng, 120) else { continue };
            finished += 1;
            let parsed = protocol(id).parse_turn(&tool_calling::model::AssistantTurn::from_text(&text));
            assert!(parsed.diagnostics.is_empty(), "{id}: {:?}\n{text}", parsed.diagnostics);
            assert_eq!(parsed.requests.len(), 1, "{id}: {text}");
            let args = tool_calling::tools::TextCoercion::new()
                .python_literals(true)
                .coerce_args(&parsed.requests[0].args, &walked[0].methods[0].parameters);
            let text_of = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
            let (c, t) = (text_of("code"), text_of("tag"));
            assert!(code.is_match(&c) && tag.is_match(&t), "{id}: {c:?} {t:?}\n{text}");
        }
        assert!(finished >= WALKS / 2, "{id}: only {finished} of {WALKS} walks finished");
        // GBNF has no regular expressions: it says so.
        let gbnf = grammar(id, &tools, Dialect::Gbnf, Scope::Call);
        assert!(gbnf.notes().iter().any(|n| n.contains("`pattern`")), "{id}: {:?}", gbnf.notes());
    }
}
