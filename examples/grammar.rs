//! A grammar for constrained decoding, and what it lets a model write.
//!
//! Builds the VCP grammar (Lark, as llguidance reads it) for two small tools, compiles it
//! with llguidance (the grammar engine vLLM and SGLang run), and walks a call through it
//! one byte at a time, showing at a few points which next bytes the model may write:
//! only the offered tools, only their methods, only an integer where the schema says
//! integer, and no unknown key.
//!
//! `cargo run --example grammar` (add `-- --print` to see the whole grammar).

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::ApproximateTokEnv;
use llguidance::{Matcher, ParserFactory};
use serde_json::json;
use tool_calling::grammar::{Constraint, Dialect, Scope};
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::tools::{MethodDefinition, ToolDefinition};

fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new("weather", "Weather").with_method(
            MethodDefinition::new("forecast", "The forecast for a city.").with_parameters(json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7}
                },
                "required": ["city", "days"]
            })),
        ),
        ToolDefinition::new("calc", "Calculator").with_method(
            MethodDefinition::new("add", "Add two numbers.").with_parameters(json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            })),
        ),
    ]
}

/// The bytes the matcher allows next, shown as text (ranges of ASCII, then a count of
/// the others).
fn allowed(matcher: &mut Matcher) -> String {
    let mask = matcher.compute_mask().expect("a mask");
    let bytes: Vec<u8> = (0u32..256).filter(|&b| mask.is_allowed(b)).map(|b| b as u8).collect();
    if bytes.len() > 200 {
        return format!("any of {} bytes (free text)", bytes.len());
    }
    let printable = |b: &u8| b.is_ascii_graphic() || *b == b' ' || *b == b'\n';
    let shown: String = bytes.iter().filter(|b| printable(b)).map(|&b| b as char).collect();
    match bytes.iter().filter(|b| !printable(b)).count() {
        0 => format!("{shown:?}"),
        n => format!("{shown:?} and {n} other bytes (the first bytes of non-ASCII characters)"),
    }
}

fn main() {
    let tools = tools();
    let protocol = VcpProtocol::default();
    let grammar = protocol
        .grammar(&tools, &Constraint::new(Dialect::Lark, Scope::Call))
        .expect("VCP writes Lark grammars");
    if std::env::args().any(|a| a == "--print") {
        println!("{}", grammar.text());
        return;
    }
    println!(
        "The VCP grammar (Lark, exactly one call) for {} methods: {} bytes.\n",
        tools.iter().map(|t| t.methods.len()).sum::<usize>(),
        grammar.text().len()
    );

    let mut factory =
        ParserFactory::new_simple(&ApproximateTokEnv::single_byte_env()).expect("a parser factory");
    factory.quiet();
    let factory = Arc::new(factory);
    let mut matcher =
        Matcher::new(factory.create_parser(TopLevelGrammar::from_lark(grammar.text().to_string())));
    assert!(matcher.get_error().is_none(), "{:?}", matcher.get_error());

    // A call, and the points at which to look at what may come next.
    let call = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」,\ncommand:「始」forecast「末」,\ncity:「始」Paris「末」,\ndays:「始」3「末」\n<<<[END_TOOL_REQUEST]>>>";
    let stops = [
        ("after the start marker and `tool_name:「始」`", "<<<[TOOL_REQUEST]>>>\ntool_name:「始」"),
        ("inside the tool name", "<<<[TOOL_REQUEST]>>>\ntool_name:「始」w"),
        ("after `command:「始」`", "<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」,\ncommand:「始」"),
        (
            "inside a string value",
            "<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」,\ncommand:「始」forecast「末」,\ncity:「始」Pa",
        ),
        (
            "where `days` (an integer from 1 to 7) begins",
            "<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」,\ncommand:「始」forecast「末」,\ncity:「始」Paris「末」,\ndays:「始」",
        ),
        (
            "after the last required field",
            "<<<[TOOL_REQUEST]>>>\ntool_name:「始」weather「末」,\ncommand:「始」forecast「末」,\ncity:「始」Paris「末」,\ndays:「始」3「末」",
        ),
    ];
    let mut written = 0;
    for (label, prefix) in stops {
        let bytes = &prefix.as_bytes()[written..];
        for &b in bytes {
            matcher.consume_tokens(&[u32::from(b)]).expect("the call is admitted");
        }
        written = prefix.len();
        println!("{label}:\n    next: {}", allowed(&mut matcher));
    }
    for &b in &call.as_bytes()[written..] {
        matcher.consume_tokens(&[u32::from(b)]).expect("the call is admitted");
    }
    println!("\nThe whole call is admitted: {}", matcher.is_accepting().unwrap_or(false));
    let parsed = protocol.parse(call);
    println!(
        "and VCP reads it back: {} with {} (values as text; the method's schema types them when the call is resolved)",
        parsed.requests[0].tool_name,
        serde_json::Value::Object(parsed.requests[0].args.clone().into_iter().collect())
    );
}
