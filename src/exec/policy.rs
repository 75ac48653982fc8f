//! Who may stop a call before it runs: the host's security policy and the confirmation
//! callback (a person, or the host, approving each call).

use crate::tools::{ArgMap, BoxFuture};

/// What a [`SecurityPolicy`] decides about a call.
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::exec::{ExecutionContext, Executor, PreparedCall, PolicyDecision};
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::{ErrorKind, Invocation};
/// use tool_calling::tools::MethodDefinition;
///
/// let wipe = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("wiped".into())) }) as BoxFuture<'static, _>;
/// let registry = ToolRegistry::new();
/// let method = MethodSpec::new(MethodDefinition::new("wipe", "Wipe the disk."), wipe);
/// registry.register(ToolSpec::stateless("disk", "Disk").with_method(method)).unwrap();
/// // Approval is required, and no confirmation callback is set: the call is refused.
/// let executor =
///     Executor::new(Arc::new(registry)).with_policy(|_: &PreparedCall| PolicyDecision::RequireApproval);
/// let call = Invocation::new("disk_wipe", Default::default());
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let err = runtime.block_on(executor.invoke("c1", &call, &ExecutionContext::default())).unwrap_err();
/// assert_eq!(err.kind, ErrorKind::Permission);
/// ```
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
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::exec::{ExecutionContext, Executor, PreparedCall, PolicyDecision};
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::{ErrorKind, Invocation};
/// use tool_calling::tools::MethodDefinition;
///
/// let ping = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("pong".into())) }) as BoxFuture<'static, _>;
/// let registry = ToolRegistry::new();
/// let method = MethodSpec::new(MethodDefinition::new("ping", "Ping."), ping);
/// registry.register(ToolSpec::stateless("net", "Net").with_method(method)).unwrap();
/// // Policies see the call as it would run: method, arguments, agent.
/// let executor = Executor::new(Arc::new(registry)).with_policy(|call: &PreparedCall| {
///     match call.agent_id.as_deref() {
///         Some("admin") if call.full_name == "net_ping" => PolicyDecision::Allow,
///         _ => PolicyDecision::Deny("admins only".into()),
///     }
/// });
/// let call = Invocation::new("net_ping", Default::default());
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let admin = ExecutionContext::default().with_agent("admin");
/// assert_eq!(runtime.block_on(executor.invoke("c1", &call, &admin)).unwrap().into_text(), "pong");
/// let guest = ExecutionContext::default().with_agent("guest");
/// let refused = runtime.block_on(executor.invoke("c2", &call, &guest)).unwrap_err();
/// assert_eq!(refused.kind, ErrorKind::Permission);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PreparedCall {
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
/// use tool_calling::exec::{Executor, PreparedCall, PolicyDecision};
/// use tool_calling::tools::ToolRegistry;
///
/// let executor = Executor::new(Arc::new(ToolRegistry::new())).with_policy(|call: &PreparedCall| {
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
    fn decide(&self, call: &PreparedCall) -> PolicyDecision;
}

impl<F: Fn(&PreparedCall) -> PolicyDecision + Send + Sync> SecurityPolicy for F {
    fn decide(&self, call: &PreparedCall) -> PolicyDecision {
        self(call)
    }
}

/// Asks (a user, a host) whether a call may run (`onBeforeExecute`).
///
/// ```
/// use std::sync::Arc;
/// use tool_calling::exec::{ExecutionContext, Executor, PreparedCall};
/// use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
/// use tool_calling::{Args, ErrorKind, Invocation};
/// use tool_calling::tools::MethodDefinition;
///
/// let pay = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("paid".into())) }) as BoxFuture<'static, _>;
/// let schema = serde_json::json!({"type": "object", "properties": {"amount": {"type": "integer"}}});
/// let registry = ToolRegistry::new();
/// let method = MethodSpec::new(MethodDefinition::new("pay", "Pay.").with_parameters(schema), pay);
/// registry.register(ToolSpec::stateless("bank", "Bank").with_method(method)).unwrap();
/// // A closure is a confirmation callback: here, approve small payments only.
/// let executor = Executor::new(Arc::new(registry)).with_confirmation(|call: PreparedCall| {
///     let small = call.args["amount"].as_i64().is_some_and(|amount| amount < 100);
///     Box::pin(async move { small }) as BoxFuture<'static, bool>
/// });
/// let payment = |amount: &str| {
///     Invocation::new("bank_pay", Args::from([("amount".to_string(), amount.into())]))
/// };
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let ctx = ExecutionContext::default();
/// assert!(runtime.block_on(executor.invoke("c1", &payment("20"), &ctx)).is_ok());
/// let refused = runtime.block_on(executor.invoke("c2", &payment("5000"), &ctx)).unwrap_err();
/// assert_eq!(refused.kind, ErrorKind::Permission);
/// ```
pub trait ConfirmCall: Send + Sync {
    /// `true` to run the call.
    fn confirm(&self, call: PreparedCall) -> BoxFuture<'static, bool>;
}

impl<F: Fn(PreparedCall) -> BoxFuture<'static, bool> + Send + Sync> ConfirmCall for F {
    fn confirm(&self, call: PreparedCall) -> BoxFuture<'static, bool> {
        self(call)
    }
}
