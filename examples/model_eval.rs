//! Does constrained decoding work with my model? Asks a model served behind an
//! OpenAI-compatible server 20 single-function questions (a triangle's area, a
//! factorial, a hypotenuse, …) in each text protocol, without and with the protocol's
//! grammar, and prints, per protocol and mode, the share of replies that held a complete
//! call, a valid one (a tool offered, arguments that fit its schema) and the right one
//! (the function and arguments the question names), with the tokens and seconds a reply
//! took.
//!
//! ```text
//! cargo run --release --features http --example model_eval -- --url http://127.0.0.1:8080/v1
//! cargo run --release --features http --example model_eval -- --url URL --protocols vcp,hermes --modes grammar
//! ```
//!
//! Options: `--url URL` (required), `--model NAME` (default `smollm2`), `--protocols
//! a,b,…` (default: every protocol with a grammar), `--modes none,grammar` (default
//! both), `--questions N` (default 20), `--skip K` (leave out the first K questions, to
//! run the rest of a table later), `--dialect gbnf|lark` and `--server
//! llama-cpp|vllm|sglang` (default GBNF for llama.cpp), `--max-tokens N` (default 200),
//! `--verbose` (every reply).
//!
//! The grammar is the scope `call` (exactly one call: what a client that requires a tool
//! call gets from the gateway). Decoding is greedy (`temperature: 0`). The table is
//! Markdown, the one docs/grammar.md shows for SmolLM2-135M.

use std::time::Instant;

use serde_json::{Value, json};
use tool_calling::grammar::{Constraint, Dialect, Scope};
use tool_calling::model::{AssistantTurn, Message, ModelRequest, RequestOptions, ToolChoice};
use tool_calling::protocol::{BuiltinOptions, ProtocolRegistry, ToolCallingProtocol, TurnState};
use tool_calling::providers::{GrammarServer, HttpChatModel, HttpRetry, Provider};
use tool_calling::tools::{ArgumentValidator, MethodDefinition, ToolCatalog, ToolDefinition};

/// The functions the questions call, one tool each.
fn tools() -> Vec<ToolDefinition> {
    let number = |description: &str| json!({"type": "number", "description": description});
    let integer = |description: &str, min: i64, max: i64| json!({"type": "integer", "description": description, "minimum": min, "maximum": max});
    let function = |name: &str, description: &str, properties: Value| {
        let required: Vec<String> =
            properties.as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default();
        ToolDefinition::new(name, name).with_method(MethodDefinition::new("", description).with_parameters(
            json!({
                "type": "object", "properties": properties, "required": required,
            }),
        ))
    };
    vec![
        function(
            "triangle_area",
            "The area of a triangle from its base and height.",
            json!({"base": number("the base"), "height": number("the height")}),
        ),
        function("factorial", "The factorial of a whole number.", json!({"n": integer("the number", 0, 20)})),
        function(
            "hypotenuse",
            "The hypotenuse of a right triangle from its two legs.",
            json!({"a": number("the first leg"), "b": number("the second leg")}),
        ),
        function(
            "circle_area",
            "The area of a circle from its radius.",
            json!({"radius": number("the radius")}),
        ),
        function(
            "celsius_to_fahrenheit",
            "A temperature in degrees Celsius, in degrees Fahrenheit.",
            json!({"celsius": number("the temperature in degrees Celsius")}),
        ),
        function(
            "simple_interest",
            "The simple interest on a principal.",
            json!({
                "principal": number("the amount lent"),
                "rate": number("the yearly rate, in percent"),
                "years": number("how many years"),
            }),
        ),
        function(
            "power",
            "A number raised to a whole power.",
            json!({"base": number("the number"), "exponent": integer("the power", -100, 100)}),
        ),
        function(
            "average",
            "The average of a list of numbers.",
            json!({"numbers": {"type": "array", "items": {"type": "number"}, "minItems": 1, "description": "the numbers"}}),
        ),
        function(
            "gcd",
            "The greatest common divisor of two whole numbers.",
            json!({"a": integer("the first number", 1, 1_000_000), "b": integer("the second number", 1, 1_000_000)}),
        ),
        function(
            "repeat_word",
            "A word repeated a number of times.",
            json!({"word": {"type": "string", "description": "the word"}, "times": integer("how many times", 1, 10)}),
        ),
    ]
}

/// The questions, each with the call that answers it.
fn questions() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "What is the area of a triangle with base 10 and height 5?",
            "triangle_area",
            json!({"base": 10, "height": 5}),
        ),
        (
            "Find the area of a triangle whose base is 7 cm and height is 3 cm.",
            "triangle_area",
            json!({"base": 7, "height": 3}),
        ),
        ("What is the factorial of 5?", "factorial", json!({"n": 5})),
        ("Compute 8 factorial.", "factorial", json!({"n": 8})),
        (
            "What is the hypotenuse of a right triangle with legs 3 and 4?",
            "hypotenuse",
            json!({"a": 3, "b": 4}),
        ),
        (
            "A right triangle has legs of 5 and 12. How long is its hypotenuse?",
            "hypotenuse",
            json!({"a": 5, "b": 12}),
        ),
        ("What is the area of a circle with radius 2?", "circle_area", json!({"radius": 2})),
        ("Find the area of a circle of radius 10 meters.", "circle_area", json!({"radius": 10})),
        ("Convert 100 degrees Celsius to Fahrenheit.", "celsius_to_fahrenheit", json!({"celsius": 100})),
        ("What is 37 degrees Celsius in Fahrenheit?", "celsius_to_fahrenheit", json!({"celsius": 37})),
        (
            "What is the simple interest on 1000 dollars at 5 percent a year for 3 years?",
            "simple_interest",
            json!({"principal": 1000, "rate": 5, "years": 3}),
        ),
        (
            "How much simple interest do 2500 dollars earn at 4 percent a year over 2 years?",
            "simple_interest",
            json!({"principal": 2500, "rate": 4, "years": 2}),
        ),
        ("What is 2 to the power of 10?", "power", json!({"base": 2, "exponent": 10})),
        ("Calculate 3 raised to the 4th power.", "power", json!({"base": 3, "exponent": 4})),
        ("What is the average of 4, 8 and 15?", "average", json!({"numbers": [4, 8, 15]})),
        ("Find the mean of 10, 20, 30 and 40.", "average", json!({"numbers": [10, 20, 30, 40]})),
        ("What is the greatest common divisor of 48 and 18?", "gcd", json!({"a": 48, "b": 18})),
        ("Find the GCD of 100 and 75.", "gcd", json!({"a": 100, "b": 75})),
        ("Repeat the word hello 3 times.", "repeat_word", json!({"word": "hello", "times": 3})),
        ("Write the word yes twice.", "repeat_word", json!({"word": "yes", "times": 2})),
    ]
}

/// Whether `got` is the value `want`: numbers as numbers, text without case or the
/// white space around it.
fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) => a.trim().eq_ignore_ascii_case(b.trim()),
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        _ => got == want,
    }
}

/// How one reply went.
#[derive(Debug, Default, Clone, Copy)]
struct Score {
    replies: u32,
    complete: u32,
    valid: u32,
    right: u32,
    tokens: u64,
    seconds: f64,
}

/// What a reply holds: a complete call, a valid one, the right one.
fn judge(
    protocol: &dyn ToolCallingProtocol,
    catalog: &ToolCatalog,
    tools: &[ToolDefinition],
    text: &str,
    want_name: &str,
    want: &Value,
) -> (bool, bool, bool) {
    let parsed = protocol.parse_turn(&AssistantTurn::from_text(text));
    let Some(request) = parsed.requests.first().filter(|r| r.complete) else { return (false, false, false) };
    let invocations = protocol.resolve(request, &TurnState::default(), catalog);
    let Some(Ok(invocation)) = invocations.into_iter().next() else { return (true, false, false) };
    let Some(method) = tools.iter().find(|t| t.tool_id == invocation.method).and_then(|t| t.methods.first())
    else {
        return (true, false, false);
    };
    let Ok(validator) = ArgumentValidator::new(&method.parameters) else { return (true, false, false) };
    let args = validator.coerce(&invocation.args);
    if validator.validate(&args).is_err() {
        return (true, false, false);
    }
    let right = invocation.method == want_name && same(&Value::Object(args), want);
    (true, true, right)
}

struct Options {
    url: String,
    model: String,
    protocols: Vec<String>,
    modes: Vec<String>,
    questions: usize,
    skip: usize,
    dialect: Dialect,
    server: GrammarServer,
    max_tokens: u32,
    verbose: bool,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        url: String::new(),
        model: "smollm2".into(),
        protocols: Vec::new(),
        modes: vec!["none".into(), "grammar".into()],
        questions: 20,
        skip: 0,
        dialect: Dialect::Gbnf,
        server: GrammarServer::LlamaCpp,
        max_tokens: 200,
        verbose: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--url" => options.url = value()?,
            "--model" => options.model = value()?,
            "--protocols" => options.protocols = value()?.split(',').map(str::to_string).collect(),
            "--modes" => options.modes = value()?.split(',').map(str::to_string).collect(),
            "--questions" => options.questions = value()?.parse().map_err(|e| format!("--questions: {e}"))?,
            "--skip" => options.skip = value()?.parse().map_err(|e| format!("--skip: {e}"))?,
            "--dialect" => options.dialect = value()?.parse().map_err(|e| format!("--dialect: {e}"))?,
            "--server" => {
                options.server = match value()?.as_str() {
                    "llama-cpp" => GrammarServer::LlamaCpp,
                    "vllm" => GrammarServer::Vllm,
                    "sglang" => GrammarServer::Sglang,
                    other => return Err(format!("--server: unknown server {other}")),
                }
            }
            "--max-tokens" => {
                options.max_tokens = value()?.parse().map_err(|e| format!("--max-tokens: {e}"))?
            }
            "--verbose" => options.verbose = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.url.is_empty() {
        return Err("--url is required".into());
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("error: {message}");
            }
            eprintln!(
                "usage: model_eval --url URL [--model NAME] [--protocols a,b] [--modes none,grammar] [--questions N] [--skip K] \
                 [--dialect gbnf|lark] [--server llama-cpp|vllm|sglang] [--max-tokens N] [--verbose]"
            );
            std::process::exit(2);
        }
    };
    let tools = tools();
    let catalog = ToolCatalog::from_definitions(&tools);
    let builtin =
        |id: &str| ProtocolRegistry::builtin(id, &BuiltinOptions::default()).map(|p| p.into_protocol());
    let protocols: Vec<String> = if options.protocols.is_empty() {
        ProtocolRegistry::builtin_ids()
            .into_iter()
            .filter(|id| {
                builtin(id)
                    .is_ok_and(|p| p.grammar(&tools, &Constraint::new(options.dialect, Scope::Call)).is_ok())
            })
            .map(str::to_string)
            .collect()
    } else {
        options.protocols.clone()
    };
    let model = HttpChatModel::builder(Provider::OpenAiChat)
        .base_url(&options.url)
        .model(&options.model)
        .grammar_server(options.server)
        .retry(HttpRetry::none())
        .build()?;
    let http = reqwest::Client::new();
    let questions: Vec<_> = questions().into_iter().take(options.questions).skip(options.skip).collect();
    println!("| protocol | grammar | calls | valid | right | tokens/reply | s/reply |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for id in &protocols {
        let protocol = builtin(id)?;
        let prompt = protocol.tool_declarations(&tools).as_prompt().map(str::to_string);
        for mode in &options.modes {
            let grammar = match mode.as_str() {
                "grammar" => Some(protocol.grammar(&tools, &Constraint::new(options.dialect, Scope::Call))?),
                _ => None,
            };
            let mut score = Score::default();
            for (question, want_name, want) in &questions {
                let mut request = ModelRequest::new(vec![Message::user(*question)]);
                request.tool_prompt = prompt.clone();
                request.tool_choice = ToolChoice::Required;
                request.grammar = grammar.clone();
                request.options =
                    RequestOptions::default().temperature(0.0).max_tokens(options.max_tokens).stream(false);
                let body = model.prepare(&request).body;
                let started = Instant::now();
                let response = http
                    .post(format!("{}/chat/completions", options.url.trim_end_matches('/')))
                    .header("content-type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await?
                    .error_for_status()?;
                let reply: Value = serde_json::from_slice(&response.bytes().await?)?;
                score.seconds += started.elapsed().as_secs_f64();
                let text = reply["choices"][0]["message"]["content"].as_str().unwrap_or_default();
                score.tokens += reply["usage"]["completion_tokens"].as_u64().unwrap_or_default();
                let (complete, valid, right) =
                    judge(protocol.as_ref(), &catalog, &tools, text, want_name, want);
                score.replies += 1;
                score.complete += u32::from(complete);
                score.valid += u32::from(valid);
                score.right += u32::from(right);
                if options.verbose {
                    let mark = if right {
                        "right"
                    } else if valid {
                        "valid"
                    } else if complete {
                        "call"
                    } else {
                        "-"
                    };
                    eprintln!("{id} {mode} [{mark}] {question} => {text:?}");
                }
            }
            let share = |n: u32| format!("{}%", (100 * n).checked_div(score.replies).unwrap_or(0));
            let replies = f64::from(score.replies.max(1));
            println!(
                "| {id} | {} | {} | {} | {} | {:.0} | {:.2} |",
                if grammar.is_some() { "yes" } else { "no" },
                share(score.complete),
                share(score.valid),
                share(score.right),
                score.tokens as f64 / replies,
                score.seconds / replies,
            );
        }
    }
    Ok(())
}
