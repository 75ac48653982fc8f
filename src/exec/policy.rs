//! Who may stop a call before it runs: the host's security policy and the confirmation
//! callback (a person, or the host, approving each call).

use crate::tools::{ArgMap, BoxFuture};

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
    /// The arguments the call would run with: defaults, the agent's presets and the
    /// model's arguments, coerced and validated (a call whose arguments are invalid is
    /// refused before anyone is asked).
    pub args: ArgMap,
    /// The agent making the call, if known.
    pub agent_id: Option<String>,
}

/// Decides whether calls may run (allow / deny / require approval). A closure is a
/// policy; the executor asks it after the arguments are validated, before any person is
/// asked to confirm.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::exec::{Executor, PendingCall, PolicyDecision};
/// use tool_calling::tools::ToolRegistry;
///
/// let executor = Executor::new(Arc::new(ToolRegistry::new())).with_policy(|call: &PendingCall| {
///     if call.tool_id == "shell" {
///         PolicyDecision::Deny("shell commands are not allowed here".into())
///     } else {
///         PolicyDecision::Allow
///     }
/// });
/// # let _ = executor;
/// ```
pub trait SecurityPolicy: Send + Sync {
    /// The decision for `call`.
    fn decide(&self, call: &PendingCall) -> PolicyDecision;
}

impl<F: Fn(&PendingCall) -> PolicyDecision + Send + Sync> SecurityPolicy for F {
    fn decide(&self, call: &PendingCall) -> PolicyDecision {
        self(call)
    }
}

/// Asks (a user, a host) whether a call may run (`onBeforeExecute`).
pub trait ConfirmCall: Send + Sync {
    /// `true` to run the call.
    fn confirm(&self, call: PendingCall) -> BoxFuture<'static, bool>;
}

impl<F: Fn(PendingCall) -> BoxFuture<'static, bool> + Send + Sync> ConfirmCall for F {
    fn confirm(&self, call: PendingCall) -> BoxFuture<'static, bool> {
        self(call)
    }
}
