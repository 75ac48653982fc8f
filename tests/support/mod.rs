//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::sync::Arc;

use tool_calling::exec::{ExecutionContext, Executor};
use tool_calling::tools::{ToolOutput, ToolRegistry};
use tool_calling::{Args, Invocation, ToolError};

/// Runs one call of `name` through the executor (every check, default context), on a
/// runtime of its own.
pub fn invoke(registry: &Arc<ToolRegistry>, name: &str, args: &Args) -> Result<ToolOutput, ToolError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let executor = Executor::new(registry.clone());
    runtime.block_on(executor.invoke(
        "call_1",
        &Invocation::new(name, args.clone()),
        &ExecutionContext::default(),
    ))
}

/// `pairs` as string arguments, the way a text protocol sends them.
pub fn args(pairs: &[(&str, &str)]) -> Args {
    pairs.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect()
}
