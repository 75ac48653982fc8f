//! Fuzz target: grammars built from untrusted parameter schemas.
//!
//! Input: four bytes that choose what to build, then a JSON document, the parameter
//! schema of one method (inputs whose rest is not JSON are skipped). The first byte
//! chooses the protocol (VCP or one of the open-model formats), the second the dialect,
//! the third the scope, the fourth the bounds (`max_calls` 1 to 4, and `max_text` off or
//! a few characters). One grammar per input, so that the fuzzer runs thousands of inputs
//! a second. Checks, besides "never panics": a grammar is non-empty text, a JSON
//! dialect's is a JSON document, and an error says something.
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
    let [which, dialect, scope, bounds, schema @ ..] = data else { return };
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else { return };
    let tools = vec![
        ToolDefinition::new("t", "T").with_method(MethodDefinition::new("m", "M.").with_parameters(schema)),
    ];
    let protocol: Box<dyn ToolCallingProtocol> = match usize::from(*which) % (TextFormat::ALL.len() + 1) {
        0 => Box::new(VcpProtocol::default()),
        n => Box::new(TextFormatProtocol::new(TextFormat::ALL[n - 1])),
    };
    let dialect = Dialect::ALL[usize::from(*dialect) % Dialect::ALL.len()];
    let scope = Scope::ALL[usize::from(*scope) % Scope::ALL.len()];
    let mut constraint = Constraint::new(dialect, scope).max_calls(u32::from(bounds % 4) + 1);
    if bounds & 0x80 != 0 {
        constraint = constraint.max_text(u32::from((bounds >> 2) & 0x1f));
    }
    match protocol.grammar(&tools, &constraint) {
        Ok(grammar) => {
            assert!(!grammar.text().is_empty());
            if matches!(dialect, Dialect::JsonSchema | Dialect::StructuralTag) {
                assert!(grammar.to_json().is_some(), "{dialect} is a JSON document");
            }
        }
        Err(error) => assert!(!error.to_string().is_empty()),
    }
});
