//! Fuzz target: grammars built from untrusted parameter schemas.
//!
//! Input: a JSON document, the parameter schema of one method (inputs that are not JSON
//! are skipped). Every text protocol builds its grammar of every dialect and scope for
//! it. Checks, besides "never panics": a grammar is non-empty text, a JSON dialect's is
//! a JSON document, and an error says something.
//!
//! Run from the repository root:
//! `cd fuzz && cargo +nightly fuzz run grammar_schema corpus/grammar_schema`

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_calling::grammar::{Constraint, Dialect, Scope};
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::tools::{MethodDefinition, ToolDefinition};

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else { return };
    let tools = vec![
        ToolDefinition::new("t", "T").with_method(MethodDefinition::new("m", "M.").with_parameters(schema)),
    ];
    let mut protocols: Vec<Box<dyn ToolCallingProtocol>> = vec![Box::new(VcpProtocol::default())];
    protocols.extend(
        TextFormat::ALL.map(|f| Box::new(TextFormatProtocol::new(f)) as Box<dyn ToolCallingProtocol>),
    );
    for protocol in &protocols {
        for dialect in Dialect::ALL {
            for scope in Scope::ALL {
                match protocol.grammar(&tools, &Constraint::new(dialect, scope)) {
                    Ok(grammar) => {
                        assert!(!grammar.text().is_empty());
                        if matches!(dialect, Dialect::JsonSchema | Dialect::StructuralTag) {
                            assert!(grammar.to_json().is_some(), "{dialect} is a JSON document");
                        }
                    }
                    Err(error) => assert!(!error.to_string().is_empty()),
                }
            }
        }
    }
});
