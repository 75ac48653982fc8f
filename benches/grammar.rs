//! The cost of a grammar: building it from the tool definitions (this crate's work,
//! once per tool set), its size, and compiling it in llguidance (the serving engine's
//! work, once per request unless it caches), for 1, 10 and 100 tools.
//!
//! Each tool has one method with four parameters (a string, an integer with bounds, a
//! number, an optional enum), so that the grammar holds every kind of value.
//!
//! `cargo bench -p tool-calling-benches --bench grammar` prints the sizes, then times
//! each step; `-- --test` runs each once.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::ApproximateTokEnv;
use llguidance::{Matcher, ParserFactory};
use serde_json::json;
use tool_calling::grammar::{Constraint, Dialect, Scope};
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::tools::{MethodDefinition, ToolDefinition};

/// `n` tools, each with one method of four parameters.
fn tools(n: usize) -> Vec<ToolDefinition> {
    (0..n)
        .map(|i| {
            ToolDefinition::new(format!("tool{i}"), format!("Tool {i}")).with_method(
                MethodDefinition::new("run", "Run it.").with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 500},
                        "weight": {"type": "number"},
                        "mode": {"type": "string", "enum": ["fast", "exact", "fuzzy"]}
                    },
                    "required": ["query", "limit", "weight"]
                })),
            )
        })
        .collect()
}

fn protocols() -> Vec<(&'static str, Box<dyn ToolCallingProtocol>)> {
    vec![
        ("vcp", Box::new(VcpProtocol::default())),
        ("hermes", Box::new(TextFormatProtocol::new(TextFormat::Hermes))),
    ]
}

fn factory() -> Arc<ParserFactory> {
    let mut factory = ParserFactory::new_simple(&ApproximateTokEnv::single_byte_env()).expect("a factory");
    factory.quiet();
    Arc::new(factory)
}

fn grammar_cost(c: &mut Criterion) {
    let factory = factory();
    for (id, protocol) in protocols() {
        for n in [1, 10, 100] {
            let tools = tools(n);
            for dialect in [Dialect::Lark, Dialect::Gbnf] {
                let text = protocol
                    .grammar(&tools, &Constraint::new(dialect, Scope::Reply))
                    .expect("a grammar")
                    .into_text();
                println!("grammar size: {id} {dialect} reply, {n} tools: {} bytes", text.len());
            }
        }
    }
    let mut build = c.benchmark_group("grammar_build");
    for (id, protocol) in protocols() {
        for n in [1, 10, 100] {
            let tools = tools(n);
            for dialect in [Dialect::Lark, Dialect::Gbnf] {
                build.bench_with_input(BenchmarkId::new(format!("{id}_{dialect}"), n), &tools, |b, tools| {
                    b.iter(|| {
                        protocol
                            .grammar(black_box(tools), &Constraint::new(dialect, Scope::Reply))
                            .expect("a grammar")
                    })
                });
            }
        }
    }
    build.finish();
    let mut compile = c.benchmark_group("grammar_compile_llguidance");
    compile.sample_size(10);
    for (id, protocol) in protocols() {
        for n in [1, 10, 100] {
            let lark = protocol
                .grammar(&tools(n), &Constraint::new(Dialect::Lark, Scope::Reply))
                .expect("a grammar")
                .into_text();
            compile.bench_with_input(BenchmarkId::new(format!("{id}_lark"), n), &lark, |b, lark| {
                b.iter(|| {
                    let mut matcher =
                        Matcher::new(factory.create_parser(TopLevelGrammar::from_lark(lark.clone())));
                    // The first mask is where the lexer and parser tables are built.
                    black_box(matcher.compute_mask().expect("a mask"))
                })
            });
        }
    }
    compile.finish();
}

criterion_group!(benches, grammar_cost);
criterion_main!(benches);
