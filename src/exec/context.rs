//! What a cycle runs with: the agent's config and identity, presets, cancellation, and
//! the executor's own options (concurrency, retries).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::events::{CycleEvent, Observer};
use crate::ToolExecutionResult;
use crate::config::ToolCallConfig;
use crate::request::Args;

/// Retries of retryable failures (timeouts, network errors). Off by default.
///
/// ```
/// use std::time::Duration;
/// use tool_calling::exec::ToolRetry;
///
/// assert_eq!(ToolRetry::default().max_attempts, 1, "no retries by default");
/// let retry = ToolRetry::new(3, Duration::from_millis(100));
/// assert_eq!((retry.max_attempts, retry.initial_backoff), (3, Duration::from_millis(100)));
/// assert_eq!(retry.multiplier, 2.0);
/// // At least one attempt is always made.
/// assert_eq!(ToolRetry::new(0, Duration::ZERO).max_attempts, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ToolRetry {
    /// Attempts in all (1 = no retry).
    pub max_attempts: u32,
    /// Wait before the first retry.
    pub initial_backoff: Duration,
    /// Factor applied to the wait after each retry.
    pub multiplier: f64,
    /// The longest wait a failure may ask for ([`ToolError::retry_after`], from a
    /// server's `Retry-After`): a failure asking for longer is returned at once instead
    /// of retried.
    ///
    /// [`ToolError::retry_after`]: crate::ToolError::retry_after
    pub max_retry_after: Duration,
}

impl Default for ToolRetry {
    fn default() -> Self {
        ToolRetry {
            max_attempts: 1,
            initial_backoff: Duration::from_millis(200),
            multiplier: 2.0,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl ToolRetry {
    /// Up to `max_attempts` attempts with exponential backoff from `initial_backoff`.
    pub fn new(max_attempts: u32, initial_backoff: Duration) -> Self {
        ToolRetry { max_attempts: max_attempts.max(1), initial_backoff, ..ToolRetry::default() }
    }

    setters! {
        /// Sets `multiplier`.
        pub fn multiplier(factor: f64) { self.multiplier = factor }

        /// Sets `max_retry_after`.
        pub fn max_retry_after(longest: Duration) { self.max_retry_after = longest }
    }

    /// The wait before retry number `retry` (from 0) after `error`: what the error asks
    /// for, else the exponential backoff; `None` when it asks for longer than
    /// `max_retry_after`.
    pub(crate) fn wait_after(&self, error: &crate::ToolError, retry: u32) -> Option<Duration> {
        match error.retry_after {
            Some(asked) if asked > self.max_retry_after => None,
            Some(asked) => Some(asked),
            None => Some(self.backoff(retry)),
        }
    }

    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        let factor = self.multiplier.max(1.0).powi(i32::try_from(retry).unwrap_or(i32::MAX));
        self.initial_backoff.mul_f64(factor.min(1e6))
    }
}

/// How the executor runs calls.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tool_calling::exec::{Executor, ExecutorOptions, ToolRetry};
/// use tool_calling::tools::ToolRegistry;
///
/// let mut options = ExecutorOptions::default();
/// options.max_concurrency = 2; // at most two calls of a cycle at once
/// options.max_running_calls = 64; // at most 64 calls at once in all
/// options.retry = ToolRetry::new(3, Duration::from_millis(100)); // retryable kinds only
/// let executor = Executor::new(Arc::new(ToolRegistry::new())).with_options(options);
/// assert_eq!(executor.options().max_concurrency, 2);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExecutorOptions {
    /// Most calls of one cycle running at once in parallel mode.
    pub max_concurrency: usize,
    /// Most tool calls running at once across every cycle and conversation this
    /// executor serves (1,024 by default; clones of an executor share the count, and
    /// fire-and-forget calls hold a slot too). A call waits for a slot before it starts;
    /// its time limit counts from then, and cancelling the cycle ends the wait.
    pub max_running_calls: usize,
    /// Retries of retryable failures.
    pub retry: ToolRetry,
    /// Run incomplete requests anyway (off: they are answered with what to fix).
    pub run_incomplete: bool,
    /// What the executor tells the model when a call does not run or fails for a
    /// reason of its own (English by default).
    pub messages: super::ExecutorMessages,
    /// The most bytes of one result's text fed back to the model (1 MiB by default):
    /// longer text (a result, a text part, a JSON part's text) is cut at a character
    /// boundary and ends with [`ExecutorMessages::result_cut`](super::ExecutorMessages::result_cut),
    /// which says how much was cut. Image parts are passed on whole.
    pub max_result_bytes: usize,
}

impl ExecutorOptions {
    setters! {
        /// Sets `max_concurrency`.
        pub fn max_concurrency(calls: usize) { self.max_concurrency = calls }

        /// Sets `max_running_calls`.
        pub fn max_running_calls(calls: usize) { self.max_running_calls = calls }

        /// Sets `retry`.
        pub fn retry(retry: ToolRetry) { self.retry = retry }

        /// Sets `run_incomplete`.
        pub fn run_incomplete(on: bool) { self.run_incomplete = on }

        /// Sets `messages`.
        pub fn messages(messages: super::ExecutorMessages) { self.messages = messages }

        /// Sets `max_result_bytes`.
        pub fn max_result_bytes(bytes: usize) { self.max_result_bytes = bytes }
    }
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        ExecutorOptions {
            max_concurrency: 8,
            max_running_calls: 1024,
            retry: ToolRetry::default(),
            run_incomplete: false,
            messages: super::ExecutorMessages::default(),
            max_result_bytes: 1 << 20,
        }
    }
}

/// What a cycle runs with: the agent's config and identity, its argument presets, the
/// cancellation token, the observer of the cycle's events, and the failures of
/// fire-and-forget calls still to report. Use one context per conversation (clones
/// share the observer, the token and the failures).
///
/// ```
/// use tool_calling::config::ToolCallConfig;
/// use tool_calling::exec::ExecutionContext;
/// use tool_calling::Args;
///
/// let mut presets = Args::new();
/// presets.insert("units".into(), "metric".into());
/// let ctx = ExecutionContext::new(ToolCallConfig::default())
///     .with_agent("planner")
///     .with_conversation("thread-7")
///     .with_preset("weather_today", presets);
/// assert_eq!(ctx.agent_id.as_deref(), Some("planner"));
/// ctx.cancel.cancel(); // stops every call of the cycle still running
/// assert!(ctx.cancel.is_cancelled());
/// ```
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
    /// Hears every step of the cycles run with this context.
    observer: Option<Observer>,
    /// Failures of fire-and-forget calls, reported with a later turn's results.
    background: Arc<Mutex<Vec<ToolExecutionResult>>>,
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

    setters! {
        /// Sets the conversation id.
        pub fn with_conversation(conversation_id: impl Into<String>) { self.conversation_id = Some(conversation_id.into()) }

        /// Uses `token` to cancel the cycle.
        pub fn with_cancel(token: CancellationToken) { self.cancel = token }
    }

    /// Calls `observer` with every [`CycleEvent`] of the cycles run with this context,
    /// as it happens: the one way to watch a cycle or a conversation (text as it is
    /// decided, requests, each call's start and result, the end of each turn). It runs
    /// on the engine's task: keep it quick.
    ///
    /// ```
    /// use tool_calling::exec::{CycleEvent, ExecutionContext};
    /// let ctx = ExecutionContext::default().on_event(|event: &CycleEvent| {
    ///     if let CycleEvent::Text { text } = event {
    ///         print!("{text}");
    ///     }
    /// });
    /// # let _ = ctx;
    /// ```
    #[must_use]
    pub fn on_event(mut self, observer: impl Fn(&CycleEvent) + Send + Sync + 'static) -> Self {
        self.observer = Some(Observer(Arc::new(observer)));
        self
    }

    /// Reports the event `event` makes to the observer, if there is one (the event is
    /// only made when someone listens).
    pub(crate) fn emit(&self, event: impl FnOnce() -> CycleEvent) {
        if let Some(Observer(observer)) = &self.observer {
            observer(&event());
        }
    }

    /// Keeps the failure of a fire-and-forget call for a later turn.
    pub(crate) fn report_background_failure(&self, result: ToolExecutionResult) {
        self.background.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(result);
    }

    /// Failures of fire-and-forget calls run with this context (or a clone of it) not
    /// yet reported; taking them clears them. A conversation loop reports them with the
    /// next turn's results.
    pub fn take_background_failures(&self) -> Vec<ToolExecutionResult> {
        std::mem::take(&mut *self.background.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}
