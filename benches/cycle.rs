//! Overhead of the engine's parse → execute cycle itself.
//!
//! One stateless tool with one no-op method (`noop_run`, empty object schema, returns
//! empty text) and a reply with three requests to it, so that what is measured is the
//! cycle's own work: parsing, routing, argument preparation and validation, one task per
//! call under a time limit, collecting the results in order, and writing the result
//! messages. Each iteration is one
//! `Engine::process_tool_call_cycle` call, driven by `block_on` on a current-thread tokio
//! runtime, with calls run in parallel (the default) and, separately, serially.
//!
//! `cargo bench -p tool-calling-benches --bench cycle` runs both; `cargo bench -p tool-calling-benches --bench cycle -- --test` runs each
//! once, as a smoke test.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::{Engine, ToolCallCycleResult};
use tool_calling::exec::ExecutionContext;
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::{BoxFuture, MethodSpec, ToolOutput, ToolSpec};

/// An engine over a registry holding only `noop_run`.
fn engine() -> Engine {
    let method = MethodSpec::new(
        MethodDefinition::new("run", "does nothing")
            .with_parameters(serde_json::json!({"type": "object", "properties": {}})),
        |_, _| Box::pin(async { Ok(ToolOutput::Text(String::new())) }) as BoxFuture<'static, _>,
    );
    let registry = ToolRegistry::new();
    registry.register(ToolSpec::stateless("noop", "No-op").with_method(method)).expect("register noop");
    Engine::new(Arc::new(registry))
}

/// A short reply with three requests to `noop_run`.
fn reply() -> String {
    let block = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」noop_run「末」\n<<<[END_TOOL_REQUEST]>>>\n";
    format!("I will call the tool three times.\n{block}Then again.\n{block}And once more.\n{block}Done.")
}

fn context(parallel: bool) -> ExecutionContext {
    let mut config = ToolCallConfig::default();
    config.parallel_execution = parallel;
    ExecutionContext::new(config)
}

/// Checks once, outside the measurement, that every request ran successfully; otherwise
/// the numbers would measure error paths.
fn check(label: &str, cycle: &ToolCallCycleResult) {
    assert_eq!(cycle.parsed_requests.len(), 3, "{label}: {cycle:?}");
    assert_eq!(cycle.execution_results.len(), 3, "{label}: {cycle:?}");
    assert!(cycle.execution_results.iter().all(|r| r.is_success()), "{label}: {cycle:?}");
}

fn cycle(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let engine = engine();
    let text = reply();
    let mut group = c.benchmark_group("cycle");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    for (label, parallel) in [("parallel_3_requests", true), ("serial_3_requests", false)] {
        let ctx = context(parallel);
        check(label, &runtime.block_on(engine.run_turn(&text, &ctx)).expect("VCP is known"));
        group.bench_function(label, |b| {
            b.iter(|| runtime.block_on(engine.run_turn(black_box(&text), &ctx)));
        });
    }
    group.finish();
}

criterion_group!(benches, cycle);
criterion_main!(benches);
