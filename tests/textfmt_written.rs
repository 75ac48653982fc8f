//! What every open-model text format writes, against the files of
//! `tests/corpus/textfmt_written/` (one a format, named by its id): the tool prompt for
//! one method, the message that carries two results back, and a call. The files are
//! the formats' templates as this crate renders them, to read in review; a change to
//! what a format writes changes its file. `BLESS=1 cargo test --test textfmt_written`
//! writes them anew from the code (then read the diff).
//!
//! Beside the exact text, what must hold for every format whatever its template:
//! - the prompt names the method and its parameters;
//! - the results message holds each output, and output that imitates the format (a call
//!   and a results block, as the format writes them) is carried as plain text: read as
//!   a reply, the message holds no call;
//! - a call is read back as the call written, and awkward arguments are either refused
//!   (`None`) or read back exactly; which ones a format refuses is in its file.

use std::path::Path;

use serde_json::{Map, Value, json};
use tool_calling::ToolExecutionResult;
use tool_calling::model::Message;
use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
use tool_calling::protocol::{ToolCallingProtocol, ToolDeclarations, TurnState};
use tool_calling::tools::{MethodDefinition, ToolCatalog, ToolDefinition};

/// The tool every format's prompt is written for: `calc_add`, two parameters.
fn tools() -> Vec<ToolDefinition> {
    let parameters = json!({
        "type": "object",
        "properties": {"a": {"type": "integer", "description": "first"}, "b": {"type": "string"}},
        "required": ["a"],
    });
    vec![
        ToolDefinition::new("calc", "Calculator")
            .with_method(MethodDefinition::new("add", "Adds numbers.").with_parameters(parameters)),
    ]
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// The call each file shows.
fn call_args() -> Map<String, Value> {
    object(json!({"a": 1, "b": "x"}))
}

/// Output a tool could return to fool the model: the format's own call and results
/// markup.
fn imitation(protocol: &TextFormatProtocol) -> String {
    let call = protocol.write_call("calc_add", &call_args()).unwrap_or_default();
    let block = messages_text(
        &protocol
            .result_messages(&[ToolExecutionResult::success("9", "calc_add", "42")], &TurnState::default()),
    );
    format!("{call}\n{block}\n{call}")
}

fn messages_text(messages: &[Message]) -> String {
    messages.iter().map(|m| m.text().into_owned()).collect::<Vec<_>>().join("\n")
}

/// The text of a format's file.
fn written(format: TextFormat) -> String {
    let protocol = TextFormatProtocol::new(format);
    let prompt = match protocol.tool_declarations(&tools()) {
        ToolDeclarations::Prompt(text) => text,
        other => panic!("{format}: a text format declares tools in the prompt, not {other:?}"),
    };
    let results = [
        ToolExecutionResult::success("1", "calc_add", "3"),
        ToolExecutionResult::success("2", "calc_add", imitation(&protocol)),
    ];
    let messages = protocol.result_messages(&results, &TurnState::default());
    let roles: Vec<String> = messages.iter().map(|m| format!("{:?}", m.role)).collect();
    let call = protocol.write_call("calc_add", &call_args()).unwrap_or_else(|| "(none)".into());
    let refused: Vec<String> = refused(&protocol).iter().map(usize::to_string).collect();
    format!(
        "=== prompt\n{prompt}\n=== results ({}): \"3\", then the format's call and results markup\n{}\n=== call calc_add {}\n{call}\n=== awkward arguments refused (of {}): {}\n",
        roles.join(", "),
        messages_text(&messages),
        Value::Object(call_args()),
        awkward().len(),
        if refused.is_empty() { "none".to_string() } else { refused.join(" ") },
    )
}

#[test]
fn every_format_writes_its_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/textfmt_written");
    let bless = std::env::var_os("BLESS").is_some();
    let mut stale = Vec::new();
    for format in TextFormat::ALL {
        let path = dir.join(format!("{}.txt", format.id()));
        let text = written(format);
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(format!("{} (now writes:\n{text})", path.display()));
        }
    }
    assert!(stale.is_empty(), "written text differs from its file:\n{}", stale.join("\n"));
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(files, TextFormat::ALL.len(), "one file a format in {}", dir.display());
}

#[test]
fn the_prompt_names_the_method_and_its_parameters() {
    for format in TextFormat::ALL {
        let ToolDeclarations::Prompt(prompt) = TextFormatProtocol::new(format).tool_declarations(&tools())
        else {
            panic!("{format}");
        };
        for needle in ["calc_add", "Adds numbers.", "first"] {
            assert!(prompt.contains(needle), "{format}: no {needle:?} in\n{prompt}");
        }
    }
}

#[test]
fn results_carry_each_output_and_no_call() {
    for format in TextFormat::ALL {
        let protocol = TextFormatProtocol::new(format);
        let imitation = imitation(&protocol);
        let results = [
            ToolExecutionResult::success("1", "calc_add", "3"),
            ToolExecutionResult::success("2", "calc_add", imitation.clone()),
        ];
        let text = messages_text(&protocol.result_messages(&results, &TurnState::default()));
        assert!(text.contains('3'), "{format}: {text}");
        let parsed = protocol.parse(&text);
        assert!(parsed.requests.is_empty(), "{format}: the results read as calls:\n{text}\n{parsed:#?}");
        // The imitation's own call does read as one: what the results hold is made plain.
        assert!(!protocol.parse(&imitation).requests.is_empty(), "{format}: {imitation}");
    }
}

/// Arguments that test a writer, one difficulty each: numbers and literals, nesting,
/// unicode, white space at the ends and line breaks, quotes and backslashes, code,
/// entities, control characters, and markup of many formats. Which of them a format
/// refuses is part of its file.
fn awkward() -> Vec<Map<String, Value>> {
    let mut samples = vec![
        json!({}),
        json!({"city": "Paris", "days": 3, "ok": false, "none": null, "x": -1.5, "big": 12345678901234_i64}),
        json!({"nested": {"a": [1, "two", {"b": true}], "c:d": "e,f"}, "s": "{x:1}, [y] <b>"}),
        json!({"list": ["a", "b"], "e": [], "o": {}, "ratio": -0.5}),
        json!({"unicode": "Grüße 日本 — 🚀 Привет", "num_text": "7", "tab": "a\tb", "empty": ""}),
        json!({"padded": "  spaced  "}),
        json!({"lines": "\nx\n"}),
        json!({"lead": "\nafter a blank line"}),
        json!({"only_break": "\n", "two_breaks": "\n\n"}),
        json!({"q": "it's \"q\" (x) [y] \\ \n"}),
        json!({"code": "fn main() {\n    println!(\"<hi> & bye\");\n}"}),
        json!({"indented": "    def f():\n        return 1\n"}),
        json!({"html": "Paris <b>&amp;</b> \"quoted\"", "amp": "x<y & z"}),
        json!({"expression": "a < b && b > c"}),
        json!({"ctl": "\u{1}"}),
        json!({"think": "<think>"}),
        json!({"blanks": "<\u{b}think>"}),
        json!({"thinking_budget": 1, "think_time": "<thinker>"}),
    ];
    for markup in [
        "</tool_call>",
        "<tool_call>",
        "</parameter></function>",
        "]]>",
        "</arg_value>",
        "<escape>",
        "<end_function_call>",
        "<|\"|>",
        "<tool_call|>",
        "<|end_message|>",
        "<|call|>",
        "<|close|>argument<|sep|>",
        "</steptml:invoke>",
        "]<]minimax[>[",
        "</functions>",
        "[TOOL_CALLS]",
        "functools[",
        "<｜tool▁call▁end｜>",
        "</｜DSML｜tool_calls>",
        "</seed:think>",
        "<mm:think>",
        "<|START_THINKING|>",
    ] {
        samples.push(json!({"markup": format!("a {markup} b")}));
    }
    samples.into_iter().map(object).collect()
}

/// The numbers (from 1) of the [`awkward`] samples `protocol` refuses to write.
fn refused(protocol: &TextFormatProtocol) -> Vec<usize> {
    (1..)
        .zip(awkward())
        .filter(|(_, args)| protocol.write_call("calc_add", args).is_none())
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn calls_read_back_or_are_refused() {
    for format in TextFormat::ALL {
        let protocol = TextFormatProtocol::new(format);
        let plain = call_args();
        let text = protocol.write_call("calc_add", &plain);
        let text = text.unwrap_or_else(|| panic!("{format} cannot write {plain:?}"));
        reads_back(&protocol, &text, &plain);
        for args in awkward() {
            if let Some(text) = protocol.write_call("calc_add", &args) {
                reads_back(&protocol, &text, &args);
            }
        }
    }
}

/// The schema of a method taking `args`: each key required and typed as its value is.
fn schema_of(args: &Map<String, Value>) -> Value {
    let kind = |value: &Value| match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let properties: Map<String, Value> =
        args.iter().map(|(key, value)| (key.clone(), json!({"type": kind(value)}))).collect();
    json!({"type": "object", "properties": properties, "required": args.keys().collect::<Vec<_>>()})
}

/// `text` reads as one complete call of `calc_add` with `args` and nothing else, its
/// arguments typed by a schema that says what each is (as a call is resolved: the
/// formats whose values are text read `1` without a schema as a string or a number).
fn reads_back(protocol: &TextFormatProtocol, text: &str, args: &Map<String, Value>) {
    let format = protocol.format();
    let parsed = protocol.parse(text);
    assert_eq!(parsed.requests.len(), 1, "{format}: {text}\n{parsed:#?}");
    let request = &parsed.requests[0];
    assert!(request.complete, "{format}: {text}\n{request:#?}");
    assert_eq!(request.tool_name, "calc_add", "{format}: {text}");
    assert_eq!(parsed.normal_text, "", "{format}: {text}");
    let tool = ToolDefinition::new("calc", "Calculator")
        .with_method(MethodDefinition::new("add", "Adds.").with_parameters(schema_of(args)));
    let catalog = ToolCatalog::from_definitions(&[tool]);
    let resolved = protocol.resolve(request, &TurnState::default(), &catalog);
    let [Ok(invocation)] = resolved.as_slice() else { panic!("{format}: {resolved:?}") };
    let read = serde_json::to_value(&invocation.args).unwrap();
    assert_eq!(read, Value::Object(args.clone()), "{format}: {text}");
}
