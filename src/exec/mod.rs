//! Execution: running calls of registered methods, safely. The one way this crate runs
//! a tool.
//!
//! The executor takes calls by exact method name ([`Invocation`]s): a protocol has
//! already resolved each request to them. For every call, in this order:
//! 1. the method must exist (else `not_found`, naming the closest registered names);
//! 2. it must be agent-callable (else `permission`);
//! 3. it must be switched on by the agent's config (else `permission`);
//! 4. its arguments are put together (schema defaults < the agent's preset < the
//!    model's), coerced by the schema, passed through the method's argument hook, and
//!    validated (else `validation`);
//! 5. the [`SecurityPolicy`] may allow, deny (`permission`), or require approval;
//! 6. the confirmation callback ([`ConfirmCall`]: asked when one is set, and required by
//!    `require_confirmation`, manual mode, or the policy) may refuse (`permission`);
//! 7. the method runs in its own task once one of the executor's
//!    [`max_running_calls`](ExecutorOptions::max_running_calls) slots is free, under a
//!    time limit (its own, else the config's), on the blocking pool if it blocks a
//!    thread, with retries of retryable failures when a [`ToolRetry`] allows them,
//!    until the cycle is cancelled.
//!
//! So a person is only ever asked about a call that would run, with the arguments it
//! would run with. Refused calls never run. A panic in a tool becomes an error result
//! and leaves other calls alone.
//!
//! For a cycle ([`Executor::execute`]): a cancelled cycle or an incomplete request is
//! answered without running anything (incomplete requests run only with
//! [`ExecutorOptions::run_incomplete`]); a request that resolved to several calls (a VCP
//! batch) gets one result listing each call's outcome. Every request gets exactly one
//! result, in request order, whether calls run in parallel or one after another.
//!
//! The executor runs on Tokio: call it inside a runtime with timers enabled (as
//! `#[tokio::main]` and `#[tokio::test]` make). Outside one, calls are not run and each
//! gets an error result saying so.

mod context;
mod events;
#[cfg(feature = "mcp")]
mod mcp;
mod messages;
mod policy;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

pub use context::{ExecutionContext, ExecutorOptions, ToolRetry};
pub use events::CycleEvent;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub use mcp::{McpServeError, McpToolServer};
pub use messages::ExecutorMessages;
pub use policy::{ConfirmCall, PolicyDecision, PreparedCall, SecurityPolicy};

use crate::config::ToolCallMode;
use crate::tools::{ArgMap, MethodRef, ToolOutput, ToolRegistry, Unprepared};
use crate::{ErrorKind, Invocation, ToolError, ToolExecutionResult, ToolRequest};

/// How many closest names a not-found error suggests.
const SUGGESTIONS: usize = 3;

/// A request with the calls its protocol resolved it to: what the executor runs for one
/// request, answered with one result.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::exec::{ExecutionContext, Executor, ResolvedRequest};
/// use tool_calling::tools::ToolRegistry;
/// use tool_calling::{ErrorKind, ToolRequest};
///
/// let request = ToolRequest::new("call_1", "calc_add").with_arg("a", 2);
/// let planned = ResolvedRequest::exact(&request);
/// assert_eq!(planned.calls[0].as_ref().unwrap().method, "calc_add");
///
/// let executor = Executor::new(Arc::new(ToolRegistry::new()));
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let results = runtime.block_on(executor.execute(vec![planned], &ExecutionContext::default()));
/// assert_eq!(results[0].request_id, "call_1");
/// assert_eq!(results[0].error_kind, Some(ErrorKind::NotFound), "nothing is registered");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResolvedRequest<'r> {
    /// The request as parsed.
    pub request: &'r ToolRequest,
    /// Its calls by exact method name, or the error the model gets for a call that names
    /// nothing runnable (from [`ToolCallingProtocol::resolve`](crate::protocol::ToolCallingProtocol::resolve)).
    pub calls: Vec<Result<Invocation, ToolError>>,
}

impl<'r> ResolvedRequest<'r> {
    /// `request` with its resolved `calls`.
    pub fn new(request: &'r ToolRequest, calls: Vec<Result<Invocation, ToolError>>) -> Self {
        ResolvedRequest { request, calls }
    }

    /// `request` as one call of the method it names exactly.
    pub fn exact(request: &'r ToolRequest) -> Self {
        ResolvedRequest { request, calls: vec![Ok(Invocation::exact(request))] }
    }
}

/// Runs calls against a registry. `Send + Sync` and cheap to clone: share it.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use tool_calling::exec::{ExecutionContext, Executor};
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::{ErrorKind, Invocation};
/// use tool_calling::tools::MethodDefinition;
///
/// let add = MethodDefinition::new("add", "Add two numbers.").with_parameters(json!({
///     "type": "object",
///     "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
///     "required": ["a", "b"]
/// }));
/// let handler = |_, args: ArgMap| {
///     Box::pin(async move { Ok(ToolOutput::Json(json!(args["a"].as_f64().unwrap() + args["b"].as_f64().unwrap()))) })
///         as BoxFuture<'static, _>
/// };
/// let registry = ToolRegistry::new();
/// registry.register(ToolSpec::stateless("calc", "Calculator").with_method(MethodSpec::new(add, handler))).unwrap();
/// let executor = Executor::new(Arc::new(registry));
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let ctx = ExecutionContext::default();
/// // A text protocol's strings are coerced by the schema.
/// let call = Invocation::new("calc_add", [("a".to_string(), json!("2")), ("b".to_string(), json!(40))].into_iter().collect());
/// assert_eq!(executor.invoke("call_1", &call, &ctx).await.unwrap().into_text(), "42.0");
/// // A missing argument is refused before the tool runs, naming the parameter.
/// let call = Invocation::new("calc_add", [("a".to_string(), json!(2))].into_iter().collect());
/// let err = executor.invoke("call_2", &call, &ctx).await.unwrap_err();
/// assert_eq!(err.kind, ErrorKind::Validation);
/// assert!(err.message.contains("parameter `b` (required)"));
/// # });
/// ```
#[derive(Clone)]
pub struct Executor {
    registry: Arc<ToolRegistry>,
    options: ExecutorOptions,
    policy: Option<Arc<dyn SecurityPolicy>>,
    confirm: Option<Arc<dyn ConfirmCall>>,
    /// One permit per running call, [`ExecutorOptions::max_running_calls`] in all;
    /// shared by clones.
    slots: Arc<tokio::sync::Semaphore>,
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

/// The semaphore of running calls for `options` (at least one slot).
fn slots(options: &ExecutorOptions) -> Arc<tokio::sync::Semaphore> {
    let permits = options.max_running_calls.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
    Arc::new(tokio::sync::Semaphore::new(permits))
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

/// What a call's outcome is reported under: the resolved full name (or the name as
/// written when it resolved to nothing), and the output or the failure.
type CallOutcome = (String, Result<ToolOutput, ToolError>);

impl Executor {
    /// An executor over `registry` with default options, no policy, no confirmation.
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        let options = ExecutorOptions::default();
        let slots = slots(&options);
        Executor { registry, options, policy: None, confirm: None, slots }
    }

    /// Sets the options (and with them a new count of running calls, shared by the
    /// clones made from here on).
    #[must_use]
    pub fn with_options(mut self, options: ExecutorOptions) -> Self {
        self.slots = slots(&options);
        self.options = options;
        self
    }

    /// How many more calls may start now before one has to wait for a slot
    /// ([`ExecutorOptions::max_running_calls`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tool_calling::exec::{Executor, ExecutorOptions};
    /// use tool_calling::tools::ToolRegistry;
    ///
    /// let mut options = ExecutorOptions::default();
    /// options.max_running_calls = 16;
    /// let executor = Executor::new(Arc::new(ToolRegistry::new())).with_options(options);
    /// assert_eq!(executor.free_call_slots(), 16, "nothing is running");
    /// ```
    pub fn free_call_slots(&self) -> usize {
        self.slots.available_permits()
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
        requests: Vec<ResolvedRequest<'_>>,
        ctx: &ExecutionContext,
    ) -> Vec<ToolExecutionResult> {
        if ctx.config.parallel_execution {
            // A loop, not `map` with a closure: a closure over `ResolvedRequest<'_>` makes
            // this future not `Send` for every lifetime, which `tokio::spawn` needs.
            let mut runs = Vec::with_capacity(requests.len());
            for request in requests {
                runs.push(self.execute_request(request, ctx));
            }
            futures::stream::iter(runs).buffered(self.options.max_concurrency.max(1)).collect().await
        } else {
            let mut results = Vec::with_capacity(requests.len());
            for request in requests {
                results.push(self.execute_request(request, ctx).await);
            }
            results
        }
    }

    /// Runs one request (all its calls) and returns its single result, with the time it
    /// took.
    pub async fn execute_request(
        &self,
        planned: ResolvedRequest<'_>,
        ctx: &ExecutionContext,
    ) -> ToolExecutionResult {
        let started = Instant::now();
        let result = self.execute_inner(planned, ctx).await;
        let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let result = self.cap(result.with_duration_ms(elapsed));
        log_result(&result);
        result
    }

    async fn execute_inner(
        &self,
        planned: ResolvedRequest<'_>,
        ctx: &ExecutionContext,
    ) -> ToolExecutionResult {
        let request = planned.request;
        let fail = |error: ToolError| {
            ToolExecutionResult::error(&request.request_id, &request.tool_name, error.kind, error.message)
        };
        if ctx.cancel.is_cancelled() {
            let message = self
                .options
                .messages
                .about(&self.options.messages.cancelled_before_start, &request.tool_name);
            return fail(ToolError::new(ErrorKind::Cancelled, message));
        }
        if !request.complete && !self.options.run_incomplete {
            return fail(ToolError::validation(self.options.messages.incomplete(&request.problems)));
        }
        if planned.calls.is_empty() {
            return fail(ToolError::not_found(self.options.messages.nothing_to_run.clone()));
        }
        let mut outcomes = Vec::with_capacity(planned.calls.len());
        for call in planned.calls {
            outcomes.push(match call {
                Ok(call) => {
                    let outcome = self.invoke(&request.request_id, &call, ctx).await;
                    (call.method, outcome)
                }
                Err(error) => (request.tool_name.clone(), Err(error)),
            });
        }
        combine(request, outcomes, &self.options.messages)
    }

    /// The result with its text cut to `max_result_bytes` (see [`ExecutorOptions`]), and
    /// the text of each of its calls.
    fn cap(&self, mut result: ToolExecutionResult) -> ToolExecutionResult {
        result.calls = std::mem::take(&mut result.calls).into_iter().map(|call| self.cap(call)).collect();
        let (max, words) = (self.options.max_result_bytes, &self.options.messages);
        if let Some(cut) = words.cut(&result.result, max) {
            result.result = cut;
        }
        for part in &mut result.parts {
            let text = match part {
                crate::ContentPart::Text { text, .. } => words.cut(text, max),
                crate::ContentPart::Json { value, .. } => words.cut(&value.to_string(), max),
                _ => None,
            };
            if let Some(text) = text {
                *part = crate::ContentPart::text(text);
            }
        }
        result
    }

    /// Runs one call of the method `call` names exactly, through every check (see the
    /// [module documentation](self) for their order). `request_id` is what policies and
    /// confirmation callbacks are told the call belongs to.
    pub async fn invoke(
        &self,
        request_id: &str,
        call: &Invocation,
        ctx: &ExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let full_name = call.method.as_str();
        let words = &self.options.messages;
        // 1. The method exists.
        let Some(method) = self.registry.method(full_name) else {
            return Err(self.not_found(full_name));
        };
        let Some(spec) = method.spec() else {
            return Err(ToolError::not_found(self.options.messages.no_longer_registered.clone()));
        };
        let tool_id = method.tool.spec().tool_id.as_str();
        // 2. It is agent-callable.
        if !spec.agent_callable {
            return Err(ToolError::permission(words.about(&words.not_callable, full_name)));
        }
        // 3. It is switched on.
        if !ctx.config.enabled || !ctx.config.is_method_enabled(tool_id, &spec.definition.name) {
            return Err(ToolError::permission(words.about(&words.switched_off, full_name)));
        }
        // 4. The arguments: layered, coerced, hooked, validated.
        let args = method.prepare(&call.args, ctx.presets.get(full_name)).map_err(|e| match e {
            Unprepared::Unregistered => ToolError::not_found(words.no_longer_registered.clone()),
            Unprepared::Arguments(errors) => ToolError::validation(words.arguments(&errors)),
            Unprepared::Hook(error) => error,
        })?;
        // 5. The policy, 6. the confirmation, both about the call as it would run.
        let mut needs_confirmation =
            ctx.config.require_confirmation || ctx.config.mode == ToolCallMode::Manual;
        let pending = || PreparedCall {
            request_id: request_id.to_string(),
            full_name: full_name.to_string(),
            tool_id: tool_id.to_string(),
            method: spec.definition.name.clone(),
            args: args.clone(),
            agent_id: ctx.agent_id.clone(),
        };
        if let Some(policy) = &self.policy {
            match policy.decide(&pending()) {
                PolicyDecision::Allow => {}
                PolicyDecision::Deny(reason) => {
                    let message = crate::language::fill(
                        &words.refused_by_policy,
                        &[("method", full_name), ("reason", &reason)],
                    );
                    return Err(ToolError::permission(message));
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
                return Err(ToolError::permission(words.about(&words.not_approved, full_name)));
            }
        }
        // 7. Run, with retries.
        self.run_with_retries(&method, full_name, args, ctx).await
    }

    /// The error for a name no method has, with the closest registered names.
    fn not_found(&self, name: &str) -> ToolError {
        let suggestions = self.registry.catalog().suggest(name, SUGGESTIONS);
        ToolError::not_found(self.options.messages.unknown(name, &suggestions))
    }

    /// Attempts the call, retrying retryable failures as the retry policy allows.
    async fn run_with_retries(
        &self,
        method: &MethodRef,
        full_name: &str,
        args: ArgMap,
        ctx: &ExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let Some(spec) = method.spec() else {
            return Err(ToolError::not_found(self.options.messages.no_longer_registered.clone()));
        };
        let timeout = spec.timeout.unwrap_or(Duration::from_millis(ctx.config.timeout_ms));
        let retry = self.options.retry;
        let mut attempt = 1;
        let mut args = Some(args);
        loop {
            // Keep a copy of the arguments only while another attempt may follow.
            let this_attempt = if attempt < retry.max_attempts {
                args.clone().unwrap_or_default()
            } else {
                args.take().unwrap_or_default()
            };
            match self.attempt(method, full_name, this_attempt, timeout, ctx).await {
                Err(e) if e.kind.is_retryable() && attempt < retry.max_attempts => {
                    // `None`: the failure asks to wait longer than the policy allows, so
                    // no retry follows and the failure is the answer.
                    let Some(wait) = retry.wait_after(&e, attempt - 1) else {
                        return Err(e);
                    };
                    // A retry would follow. A cancelled cycle stops it: the call answers
                    // `Cancelled`, whether the cancellation came before this failure or
                    // during the wait, as it does for a call cancelled while it runs.
                    let cancelled = || {
                        let words = &self.options.messages;
                        let message = words.about(&words.cancelled_while_running, full_name);
                        Err(ToolError::new(ErrorKind::Cancelled, message))
                    };
                    if ctx.cancel.is_cancelled() {
                        return cancelled();
                    }
                    attempt += 1;
                    tokio::select! {
                        biased;
                        () = ctx.cancel.cancelled() => return cancelled(),
                        () = tokio::time::sleep(wait) => {}
                    }
                }
                other => return other,
            }
        }
    }

    /// One attempt: the handler in its own task, bounded by `timeout` and the cycle's
    /// cancellation.
    async fn attempt(
        &self,
        method: &MethodRef,
        full_name: &str,
        args: ArgMap,
        timeout: Duration,
        ctx: &ExecutionContext,
    ) -> Result<ToolOutput, ToolError> {
        let words = &self.options.messages;
        let Some(spec) = method.spec() else {
            return Err(ToolError::not_found(words.no_longer_registered.clone()));
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(ToolError::execution(words.about(&words.no_runtime, full_name)));
        };
        let instance = method.tool.instance_for(ctx.conversation_id.as_deref())?;
        // A slot among the executor's running calls; the time limit starts once held.
        let permit = tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                return Err(ToolError::new(ErrorKind::Cancelled, words.about(&words.cancelled_before_start, full_name)));
            }
            permit = self.slots.clone().acquire_owned() => permit.ok(),
        };
        let call = spec.handler().call(instance, args);
        // The task holds the slot until it ends or is aborted (a blocking call keeps it
        // while its thread is still busy).
        let future = async move {
            let _slot = permit;
            call.await
        };
        let task = if spec.blocking {
            let handle = runtime.clone();
            runtime.spawn_blocking(move || handle.block_on(future))
        } else {
            runtime.spawn(future)
        };
        let abort = task.abort_handle();
        // A call that has ended answers what it returned, even when the cycle was
        // cancelled in the same instant (`biased`: the outcome is looked at first).
        let outcome = tokio::select! {
            biased;
            joined = tokio::time::timeout(timeout, task) => joined,
            () = ctx.cancel.cancelled() => {
                abort.abort();
                let message = words.about(&words.cancelled_while_running, full_name);
                return Err(ToolError::new(ErrorKind::Cancelled, message));
            }
        };
        match outcome {
            Err(_elapsed) => {
                abort.abort();
                let ms = timeout.as_millis().to_string();
                Err(ToolError::new(
                    ErrorKind::Timeout,
                    crate::language::fill(&words.timed_out, &[("method", full_name), ("ms", &ms)]),
                ))
            }
            Ok(Err(join_error)) => {
                let message = if join_error.is_panic() {
                    let panic = panic_message(join_error.into_panic().as_ref());
                    crate::language::fill(&words.panicked, &[("method", full_name), ("message", &panic)])
                } else {
                    words.about(&words.stopped, full_name)
                };
                Err(ToolError::execution(message))
            }
            Ok(Ok(result)) => result,
        }
    }
}

/// One result for a request from its calls' outcomes (one call, or several).
fn combine(
    request: &ToolRequest,
    outcomes: Vec<CallOutcome>,
    words: &ExecutorMessages,
) -> ToolExecutionResult {
    let id = &request.request_id;
    if outcomes.len() == 1 {
        return match outcomes.into_iter().next() {
            Some((name, Ok(ToolOutput::Parts(parts)))) => ToolExecutionResult::success_parts(id, name, parts),
            // JSON stays JSON for protocols that carry it (a Gemini function response).
            Some((name, Ok(ToolOutput::Json(value)))) => {
                ToolExecutionResult::success_parts(id, name, vec![crate::ContentPart::json(value)])
            }
            Some((name, Ok(output))) => ToolExecutionResult::success(id, name, output.into_text()),
            Some((name, Err(error))) => ToolExecutionResult::error(id, name, error.kind, error.message),
            None => ToolExecutionResult::error(
                id,
                &request.tool_name,
                ErrorKind::NotFound,
                words.nothing_to_run.clone(),
            ),
        };
    }
    let calls = outcomes
        .into_iter()
        .map(|(name, outcome)| match outcome {
            Ok(output) => ToolExecutionResult::success(id, name, output.into_text()),
            Err(e) => ToolExecutionResult::error(id, name, e.kind, e.message),
        })
        .collect();
    ToolExecutionResult::batch(id, &request.tool_name, calls)
}

/// Every call's outcome, for the program's logs: INFO with the tool, status and
/// duration; WARN for a failure, with its kind and text.
fn log_result(result: &ToolExecutionResult) {
    match result.error_kind {
        None => tracing::info!(
            request_id = %result.request_id,
            tool = %result.tool_name,
            status = result.status.as_str(),
            duration_ms = result.duration_ms,
            "tool call finished"
        ),
        Some(kind) => tracing::warn!(
            request_id = %result.request_id,
            tool = %result.tool_name,
            error_kind = kind.as_str(),
            duration_ms = result.duration_ms,
            error = %result.result,
            "tool call failed"
        ),
    }
}
