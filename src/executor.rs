//! The executor: runs parsed requests against the registry, safely (seed 004 §4.5,
//! seed 002).
//!
//! For each request, in this order (the seed's flowchart):
//! 1. an incomplete request is answered with what to fix (not run unless
//!    [`ExecutorOptions::run_incomplete`]);
//! 2. routing (`spec/vcp.md` §4) finds the method, or names the closest ones;
//! 3. the method must be enabled by the agent's toggles;
//! 4. the [`SecurityPolicy`] may allow, deny, or require approval;
//! 5. the confirmation callback ([`ConfirmCall`]: asked when one is set, and required
//!    by `require_confirmation`, manual mode, or the policy) may deny: "not authorised";
//! 6. the method must be agent-callable;
//! 7. arguments: schema defaults < agent preset < the model's arguments, VCP control
//!    keys (`archery`, `ink`, `river`, `vref`) stripped, then coerced and validated;
//! 8. the call runs in its own task, under a time limit (per method, else the default),
//!    on the blocking pool if it blocks a thread, with retries for retryable failures
//!    when a [`RetryPolicy`] allows them.
//!
//! Denied, disabled and non-callable methods never run. A panic in a tool becomes an
//! error result and leaves other calls alone. Every request gets exactly one result,
//! in request order, whether calls run in parallel or one after another.
//!
//! The executor runs on Tokio: call it inside a runtime with timers enabled (as
//! `#[tokio::main]` and `#[tokio::test]` make). Outside one, calls are not run and
//! each gets an error result saying so. `ToolRegistry::invoke` needs no runtime.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::ToolCallConfig;
use crate::registry::{MethodRef, ToolRegistry};
use crate::request::Args;
use crate::routing::{RoutedCall, route};
use crate::tool::{BoxFuture, ToolError, ToolOutput};
use crate::{ErrorKind, ParsedToolRequest, ToolExecutionResult};

/// Keys VCPToolBox uses to steer the host; never validated as arguments.
pub const CONTROL_KEYS: [&str; 4] = ["archery", "ink", "river", "vref"];

/// What a [`SecurityPolicy`] decides about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyDecision {
    /// Run it.
    Allow,
    /// Refuse it, with a reason for the model.
    Deny(String),
    /// Run it only if the confirmation callback approves.
    RequireApproval,
}

/// A call about to be checked: what policies and confirmation callbacks see.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PendingCall {
    /// The request's id.
    pub request_id: String,
    /// `toolId_methodName` of the resolved method.
    pub full_name: String,
    /// The tool id.
    pub tool_id: String,
    /// The method name.
    pub method: String,
    /// The arguments as the model wrote them.
    pub args: Args,
    /// The agent making the call, if known.
    pub agent_id: Option<String>,
}

/// Decides whether calls may run (allow / deny / require approval).
pub trait SecurityPolicy: Send + Sync {
    /// The decision for `call`.
    fn decide(&self, call: &PendingCall) -> PolicyDecision;
}

impl<F: Fn(&PendingCall) -> PolicyDecision + Send + Sync> SecurityPolicy for F {
    fn decide(&self, call: &PendingCall) -> PolicyDecision {
        self(call)
    }
}

/// Asks (a user, a host) whether a call may run: seed 004's `onBeforeExecute`.
pub trait ConfirmCall: Send + Sync {
    /// `true` to run the call.
    fn confirm(&self, call: PendingCall) -> BoxFuture<'static, bool>;
}

impl<F: Fn(PendingCall) -> BoxFuture<'static, bool> + Send + Sync> ConfirmCall for F {
    fn confirm(&self, call: PendingCall) -> BoxFuture<'static, bool> {
        self(call)
    }
}

/// Retries of retryable failures (timeouts, network errors). Off by default.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all (1 = no retry).
    pub max_attempts: u32,
    /// Wait before the first retry.
    pub initial_backoff: Duration,
    /// Factor applied to the wait after each retry.
    pub multiplier: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_attempts: 1, initial_backoff: Duration::from_millis(200), multiplier: 2.0 }
    }
}

impl RetryPolicy {
    /// Up to `max_attempts` attempts with exponential backoff from `initial_backoff`.
    pub fn new(max_attempts: u32, initial_backoff: Duration) -> Self {
        RetryPolicy { max_attempts: max_attempts.max(1), initial_backoff, multiplier: 2.0 }
    }

    fn backoff(&self, retry: u32) -> Duration {
        let factor = self.multiplier.max(1.0).powi(i32::try_from(retry).unwrap_or(i32::MAX));
        self.initial_backoff.mul_f64(factor.min(1e6))
    }
}

/// How the executor runs calls.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExecutorOptions {
    /// Most calls running at once in parallel mode.
    pub max_concurrency: usize,
    /// Retries of retryable failures.
    pub retry: RetryPolicy,
    /// Run incomplete requests anyway (off: they are answered with what to fix).
    pub run_incomplete: bool,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        ExecutorOptions { max_concurrency: 8, retry: RetryPolicy::default(), run_incomplete: false }
    }
}

/// Per-cycle inputs: the agent's config and identity, its argument presets, and the
/// cancellation token of the cycle.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ExecutionContext {
    /// Toggles, default timeout, parallel or serial, confirmation.
    pub config: ToolCallConfig,
    /// The agent making the calls.
    pub agent_id: Option<String>,
    /// Argument presets per full method name: between schema defaults and the model's
    /// own arguments.
    pub presets: HashMap<String, Args>,
    /// Cancels the whole cycle.
    pub cancel: CancellationToken,
    /// The conversation (thread) the calls belong to: stateful tools keep one instance
    /// per conversation.
    pub conversation_id: Option<String>,
}

impl ExecutionContext {
    /// A context with `config`.
    pub fn new(config: ToolCallConfig) -> Self {
        ExecutionContext { config, ..Self::default() }
    }

    /// Sets the agent id.
    #[must_use]
    pub fn with_agent(mut self, agent_id: impl Into<String>) -> Self {
        self.agent_id = Some(agent_id.into());
        self
    }

    /// Sets presets for `full_name`.
    #[must_use]
    pub fn with_preset(mut self, full_name: impl Into<String>, args: Args) -> Self {
        self.presets.insert(full_name.into(), args);
        self
    }

    /// Sets the conversation id.
    #[must_use]
    pub fn with_conversation(mut self, conversation_id: impl Into<String>) -> Self {
        self.conversation_id = Some(conversation_id.into());
        self
    }

    /// Uses `token` to cancel the cycle.
    #[must_use]
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }
}

/// Runs requests against a registry. `Send + Sync`: share it.
#[derive(Clone)]
pub struct Executor {
    registry: Arc<ToolRegistry>,
    options: ExecutorOptions,
    policy: Option<Arc<dyn SecurityPolicy>>,
    confirm: Option<Arc<dyn ConfirmCall>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("options", &self.options)
            .field("policy", &self.policy.is_some())
            .field("confirm", &self.confirm.is_some())
            .finish_non_exhaustive()
    }
}

/// A failure before or during a call: its kind and the text for the model.
fn fail(request: &ParsedToolRequest, name: &str, error: ToolError) -> ToolExecutionResult {
    ToolExecutionResult::error(&request.request_id, name, error.kind, error.message)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

impl Executor {
    /// An executor over `registry` with default options, no policy, no confirmation.
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        Executor { registry, options: ExecutorOptions::default(), policy: None, confirm: None }
    }

    /// Sets the options.
    #[must_use]
    pub fn with_options(mut self, options: ExecutorOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets the security policy.
    #[must_use]
    pub fn with_policy(mut self, policy: impl SecurityPolicy + 'static) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// Sets the confirmation callback (`on_before_execute`).
    #[must_use]
    pub fn with_confirmation(mut self, confirm: impl ConfirmCall + 'static) -> Self {
        self.confirm = Some(Arc::new(confirm));
        self
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The options.
    pub fn options(&self) -> &ExecutorOptions {
        &self.options
    }

    /// Runs `requests`: one result each, in request order. Parallel (bounded by
    /// `max_concurrency`) or serial as `ctx.config.parallel_execution` says.
    pub async fn execute(
        &self,
        requests: &[ParsedToolRequest],
        ctx: &ExecutionContext,
    ) -> Vec<ToolExecutionResult> {
        if ctx.config.parallel_execution {
            futures::stream::iter(requests.iter().map(|r| self.execute_one(r, ctx)))
                .buffered(self.options.max_concurrency.max(1))
                .collect()
                .await
        } else {
            let mut results = Vec::with_capacity(requests.len());
            for request in requests {
                results.push(self.execute_one(request, ctx).await);
            }
            results
        }
    }

    /// Runs one request (all its batch calls) and returns its single result.
    pub async fn execute_one(
        &self,
        request: &ParsedToolRequest,
        ctx: &ExecutionContext,
    ) -> ToolExecutionResult {
        let started = Instant::now();
        let result = self.execute_inner(request, ctx).await;
        let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        result.with_duration_ms(elapsed)
    }

    async fn execute_inner(
        &self,
        request: &ParsedToolRequest,
        ctx: &ExecutionContext,
    ) -> ToolExecutionResult {
        if ctx.cancel.is_cancelled() {
            let message = format!("the cycle was cancelled before `{}` ran", request.tool_name);
            return fail(request, &request.tool_name, ToolError::new(ErrorKind::Cancelled, message));
        }
        if !request.complete && !self.options.run_incomplete {
            let message =
                format!("Not run: {} Send the request again with this fixed.", request.problems.join("; "));
            return fail(request, &request.tool_name, ToolError::validation(message));
        }
        let routed = route(&self.registry, request);
        let mut outcomes = Vec::with_capacity(routed.len());
        for call in routed {
            outcomes.push(match call {
                Ok(call) => self.run_call(request, call, ctx).await,
                Err(e) => {
                    Err((request.tool_name.clone(), ToolError::new(ErrorKind::NotFound, e.to_string())))
                }
            });
        }
        combine(request, outcomes)
    }

    /// Checks and runs one routed call: `Ok((full name, output text))` or the failure.
    async fn run_call(
        &self,
        request: &ParsedToolRequest,
        call: RoutedCall,
        ctx: &ExecutionContext,
    ) -> Result<(String, ToolOutput), (String, ToolError)> {
        let method = call.method;
        let full_name = method.full_name();
        let Some(spec) = method.spec() else {
            return Err((
                full_name,
                ToolError::new(ErrorKind::NotFound, "the method is no longer registered"),
            ));
        };
        let tool_id = method.tool.spec().tool_id.clone();
        let denied =
            |message: String| Err((full_name.clone(), ToolError::new(ErrorKind::Permission, message)));
        if !ctx.config.enabled || !ctx.config.is_method_enabled(&tool_id, &spec.definition.name) {
            return denied(format!("`{full_name}` is switched off for this agent; do not call it again"));
        }
        // Only built when someone will look at it.
        let pending = || PendingCall {
            request_id: request.request_id.clone(),
            full_name: full_name.clone(),
            tool_id: tool_id.clone(),
            method: spec.definition.name.clone(),
            args: call.args.clone(),
            agent_id: ctx.agent_id.clone(),
        };
        // Manual mode: the host decides every call, through the confirmation callback.
        let mut needs_confirmation =
            ctx.config.require_confirmation || ctx.config.mode == crate::config::ToolCallMode::Manual;
        if let Some(policy) = &self.policy {
            match policy.decide(&pending()) {
                PolicyDecision::Allow => {}
                PolicyDecision::Deny(reason) => {
                    return denied(format!("`{full_name}` was refused by the security policy: {reason}"));
                }
                PolicyDecision::RequireApproval => needs_confirmation = true,
            }
        }
        if needs_confirmation || self.confirm.is_some() {
            let approved = match &self.confirm {
                Some(confirm) => confirm.confirm(pending()).await,
                None => false,
            };
            if !approved {
                return denied(format!("not authorised: the call of `{full_name}` was not approved"));
            }
        }
        if !spec.agent_callable {
            return denied(format!("`{full_name}` may not be called by a model"));
        }
        let args = self.arguments(&method, &full_name, call.args, ctx);
        let prepared = method.prepare_args(&args).map_err(|e| (full_name.clone(), e))?;
        let timeout = spec.timeout.unwrap_or(Duration::from_millis(ctx.config.timeout_ms));
        let retry = self.options.retry;
        let mut attempt = 1;
        let mut prepared = Some(prepared);
        loop {
            // Keep a copy of the arguments only while another attempt may follow.
            let args = if attempt < retry.max_attempts {
                prepared.clone().unwrap_or_default()
            } else {
                prepared.take().unwrap_or_default()
            };
            let outcome = self.attempt(&method, &full_name, args, timeout, ctx).await;
            match outcome {
                Err(e)
                    if e.kind.is_retryable()
                        && attempt < retry.max_attempts
                        && !ctx.cancel.is_cancelled() =>
                {
                    let wait = retry.backoff(attempt - 1);
                    attempt += 1;
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = ctx.cancel.cancelled() => {
                            let message = format!("the cycle was cancelled before `{full_name}` finished");
                            return Err((full_name, ToolError::new(ErrorKind::Cancelled, message)));
                        }
                    }
                }
                other => return other.map(|output| (full_name.clone(), output)).map_err(|e| (full_name, e)),
            }
        }
    }

    /// Schema defaults < agent preset < the model's arguments; control keys dropped.
    fn arguments(&self, method: &MethodRef, full_name: &str, model: Args, ctx: &ExecutionContext) -> Args {
        let mut args = Args::new();
        if let Some(spec) = method.spec() {
            for param in spec.definition.parameter_list() {
                if let Some(default) = param.default() {
                    args.insert(param.name.to_string(), default.clone());
                }
            }
        }
        if let Some(preset) = ctx.presets.get(full_name) {
            args.extend(preset.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for (key, value) in model {
            if CONTROL_KEYS.contains(&key.as_str()) {
                continue;
            }
            args.insert(key, value);
        }
        args
    }

    /// One attempt: the handler in its own task, bounded by `timeout` and the cycle's
    /// cancellation.
    async fn attempt(
        &self,
        method: &MethodRef,
        full_name: &str,
        args: crate::tool::ArgMap,
        timeout: Duration,
        ctx: &ExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(spec) = method.spec() else {
            return Err(ToolError::new(ErrorKind::NotFound, "the method is no longer registered"));
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(ToolError::execution(format!(
                "`{full_name}` was not run: the executor needs a Tokio runtime (with timers enabled)"
            )));
        };
        let instance = method.tool.instance_for(ctx.conversation_id.as_deref())?;
        let future = spec.handler().call(instance, args);
        let task = if spec.blocking {
            let handle = runtime.clone();
            runtime.spawn_blocking(move || handle.block_on(future))
        } else {
            runtime.spawn(future)
        };
        let abort = task.abort_handle();
        let outcome = tokio::select! {
            joined = tokio::time::timeout(timeout, task) => joined,
            () = ctx.cancel.cancelled() => {
                abort.abort();
                let message = format!("the cycle was cancelled before `{full_name}` finished");
                return Err(ToolError::new(ErrorKind::Cancelled, message));
            }
        };
        match outcome {
            Err(_elapsed) => {
                abort.abort();
                Err(ToolError::new(
                    ErrorKind::Timeout,
                    format!("`{full_name}` did not finish within {} ms", timeout.as_millis()),
                ))
            }
            Ok(Err(join_error)) => {
                let why = if join_error.is_panic() {
                    format!("it panicked: {}", panic_message(join_error.into_panic().as_ref()))
                } else {
                    "it was stopped".to_string()
                };
                Err(ToolError::execution(format!("`{full_name}` failed unexpectedly ({why})")))
            }
            Ok(Ok(result)) => result,
        }
    }
}

/// One result for a request from its calls' outcomes (one call, or a batch).
fn combine(
    request: &ParsedToolRequest,
    outcomes: Vec<Result<(String, ToolOutput), (String, ToolError)>>,
) -> ToolExecutionResult {
    if outcomes.len() == 1 {
        return match outcomes.into_iter().next() {
            Some(Ok((name, ToolOutput::Parts(parts)))) => {
                ToolExecutionResult::success_parts(&request.request_id, name, parts)
            }
            Some(Ok((name, output))) => {
                ToolExecutionResult::success(&request.request_id, name, output.into_text())
            }
            Some(Err((name, error))) => fail(request, &name, error),
            None => fail(request, &request.tool_name, ToolError::new(ErrorKind::NotFound, "nothing to run")),
        };
    }
    let first_error = outcomes.iter().find_map(|o| o.as_ref().err().map(|(_, e)| e.kind));
    let parts: Vec<Value> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| match o {
            Ok((name, output)) => serde_json::json!({
                "index": i + 1, "tool_name": name, "status": "success", "result": output.clone().into_text()
            }),
            Err((name, e)) => serde_json::json!({
                "index": i + 1, "tool_name": name, "status": "error", "error_kind": e.kind.as_str(), "result": e.message
            }),
        })
        .collect();
    let text = Value::Array(parts).to_string();
    match first_error {
        None => ToolExecutionResult::success(&request.request_id, &request.tool_name, text),
        Some(kind) => ToolExecutionResult::error(&request.request_id, &request.tool_name, kind, text),
    }
}
