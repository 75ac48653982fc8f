//! Every field of every configuration type can be set from outside the crate. The
//! configuration types are `#[non_exhaustive]` (a struct literal cannot build them here),
//! so each is made by its constructor or `Default` and each field set by its setter, or
//! by assignment where it has none; an integration test is compiled as a crate of its
//! own, so this file compiles only while that holds. Each value set is then read back,
//! and where a setter exists, it is the one used.

#![cfg(all(feature = "gateway", feature = "rest"))]

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::json;
use tool_calling::config::{ToolCallConfig, ToolCallMode};
use tool_calling::exec::{ExecutionContext, ExecutorMessages, ExecutorOptions, ToolRetry};
use tool_calling::gateway::{Constrain, GatewayConfig};
use tool_calling::grammar::{Constraint, Dialect, Scope};
use tool_calling::model::{ModelRequest, RequestOptions, ToolChoice};
use tool_calling::protocol::native::NativeOptions;
use tool_calling::protocol::textfmt::TextFormatOptions;
use tool_calling::protocol::vcp::{VcpLimits, VcpOptions};
use tool_calling::protocol::{BuiltinOptions, RequestIdStyle};
use tool_calling::protocol::{FallbackProtocol, ModelCapabilities, ThinkingStyle};
use tool_calling::providers::{GrammarServer, HttpRetry};
use tool_calling::tools::rest::{RestMethodConfig, RestToolConfig};

#[test]
fn tool_call_config() {
    let constraint = Constraint::new(Dialect::Lark, Scope::Calls);
    let mut config = ToolCallConfig::default()
        .with_enabled(false)
        .with_mode(ToolCallMode::Manual)
        .with_toggle("calc", false)
        .with_default_tool_enabled(false)
        .with_max_iterations(3)
        .with_timeout_ms(1500)
        .with_require_confirmation(true)
        .with_parallel_execution(false)
        .with_protocol("hermes")
        .with_grammar(constraint);
    assert!(!config.enabled && config.mode == ToolCallMode::Manual && !config.default_tool_enabled);
    assert_eq!(config.tool_toggles, BTreeMap::from([("calc".to_string(), false)]));
    assert_eq!((config.max_iterations, config.timeout_ms), (3, 1500));
    assert!(config.require_confirmation && !config.parallel_execution);
    assert_eq!((config.protocol.as_deref(), config.grammar), (Some("hermes"), Some(constraint)));
    config.tool_toggles.clear();
    assert!(config.tool_toggles.is_empty());
}

#[test]
fn executor_options_and_retries() {
    let retry =
        ToolRetry::new(3, Duration::from_millis(50)).multiplier(1.5).max_retry_after(Duration::from_secs(2));
    assert_eq!((retry.max_attempts, retry.initial_backoff), (3, Duration::from_millis(50)));
    assert_eq!((retry.multiplier, retry.max_retry_after), (1.5, Duration::from_secs(2)));
    let mut messages = ExecutorMessages::default();
    messages.timed_out = "too slow".into();
    let options = ExecutorOptions::default()
        .max_concurrency(2)
        .max_running_calls(10)
        .retry(retry)
        .run_incomplete(true)
        .messages(messages)
        .max_result_bytes(4096);
    assert_eq!((options.max_concurrency, options.max_running_calls), (2, 10));
    assert_eq!(options.retry, retry);
    assert!(options.run_incomplete);
    assert_eq!(options.messages.timed_out, "too slow");
    assert_eq!(options.max_result_bytes, 4096);
}

#[test]
fn execution_context() {
    let mut context = ExecutionContext::new(ToolCallConfig::default().with_max_iterations(2))
        .with_agent("agent")
        .with_preset("calc_add", Default::default())
        .with_conversation("c1");
    assert_eq!(context.config.max_iterations, 2);
    assert_eq!(
        (context.agent_id.as_deref(), context.conversation_id.as_deref()),
        (Some("agent"), Some("c1"))
    );
    assert!(context.presets.contains_key("calc_add"));
    context.presets = HashMap::new();
    assert!(context.presets.is_empty());
}

#[test]
fn protocol_options() {
    let limits = VcpLimits::default().max_reply_bytes(1000).max_requests(2).max_fields(3).max_value_bytes(40);
    assert_eq!(
        (limits.max_reply_bytes, limits.max_requests, limits.max_fields, limits.max_value_bytes),
        (1000, 2, 3, 40)
    );
    let mut vcp = VcpOptions::default();
    vcp.fuzzy_markers = false;
    vcp.skip_fenced = false;
    vcp.keep_reasoning = true;
    vcp.starts_in_reasoning = true;
    vcp.request_ids = RequestIdStyle::Sequential;
    vcp.limits = limits;
    assert!(!vcp.fuzzy_markers && !vcp.skip_fenced && vcp.keep_reasoning && vcp.starts_in_reasoning);
    let text = TextFormatOptions::default()
        .request_ids(RequestIdStyle::Sequential)
        .skip_reasoning(false)
        .starts_in_reasoning(true)
        .max_reply_bytes(2048);
    assert!(!text.skip_reasoning && text.starts_in_reasoning && text.max_reply_bytes == 2048);
    let mut native = NativeOptions::default();
    native.request_ids = RequestIdStyle::Sequential;
    native.strict = true;
    native.max_argument_depth = 8;
    assert!(native.strict && native.max_argument_depth == 8);
    let builtin = BuiltinOptions::default().vcp(vcp).text_formats(text).native(native);
    assert_eq!((builtin.vcp, builtin.text_formats, builtin.native), (vcp, text, native));
}

#[test]
fn grammar_and_gateway() {
    let constraint = Constraint::new(Dialect::Gbnf, Scope::Call)
        .dialect(Dialect::Lark)
        .scope(Scope::Reply)
        .max_text(64)
        .max_calls(2);
    assert_eq!((constraint.dialect, constraint.scope), (Dialect::Lark, Scope::Reply));
    assert_eq!((constraint.max_text, constraint.max_calls), (Some(64), 2));
    let constrain = Constrain::new(GrammarServer::LlamaCpp, Dialect::Gbnf).max_text(32).max_calls(1);
    assert_eq!((constrain.server, constrain.dialect), (GrammarServer::LlamaCpp, Dialect::Gbnf));
    assert_eq!((constrain.max_text, constrain.max_calls), (Some(32), 1));
    let gateway = GatewayConfig::new("http://127.0.0.1:1")
        .protocol("hermes")
        .api_key("k")
        .model("m")
        .timeout(Duration::from_secs(5))
        .max_request_bytes(100)
        .max_reply_bytes(200)
        .retry_required(true)
        .constrain(constrain);
    assert_eq!((gateway.upstream.as_str(), gateway.protocol.as_str()), ("http://127.0.0.1:1", "hermes"));
    assert_eq!((gateway.api_key.as_deref(), gateway.model.as_deref()), (Some("k"), Some("m")));
    assert_eq!(
        (gateway.timeout, gateway.max_request_bytes, gateway.max_reply_bytes),
        (Duration::from_secs(5), 100, 200)
    );
    assert!(gateway.retry_required);
    assert_eq!(gateway.constrain, Some(constrain));
}

#[test]
fn model_requests_and_capabilities() {
    let retry = HttpRetry::default()
        .max_retries(4)
        .initial_backoff(Duration::from_millis(10))
        .max_backoff(Duration::from_secs(1))
        .max_retry_after(Duration::from_secs(3));
    assert_eq!((retry.max_retries, retry.max_backoff), (4, Duration::from_secs(1)));
    let mut options = RequestOptions::default();
    options.stream = Some(true);
    options.max_tokens = Some(64);
    options.temperature = Some(0.0);
    options.timeout = Some(Duration::from_secs(9));
    options.thinking = None;
    assert_eq!((options.stream, options.max_tokens), (Some(true), Some(64)));
    let mut request = ModelRequest::new(Vec::new());
    request.tool_prompt = Some("tools".into());
    request.tools = Some(json!([]));
    request.tool_choice = ToolChoice::Required;
    request.parallel_tool_calls = Some(false);
    request.options = options;
    request.grammar = None;
    request.messages.clear();
    assert_eq!((request.tool_prompt.as_deref(), request.parallel_tool_calls), (Some("tools"), Some(false)));
    assert_eq!(request.options, options);
    let mut capabilities = ModelCapabilities::default();
    capabilities.native_tools = false;
    capabilities.parallel_calls = false;
    capabilities.thinking = ThinkingStyle::None;
    capabilities.streaming = false;
    capabilities.fallback = FallbackProtocol::default();
    capabilities.context_tokens = Some(8192);
    capabilities.max_output_tokens = Some(512);
    capabilities.defaults = options;
    capabilities.starts_in_reasoning = true;
    assert_eq!((capabilities.context_tokens, capabilities.max_output_tokens), (Some(8192), Some(512)));
    assert!(capabilities.starts_in_reasoning && !capabilities.native_tools);
}

#[test]
fn rest_tools_built_in_code() {
    let mut method = RestMethodConfig::new("comment");
    method.description = "Adds a comment.".into();
    method.http_method = "POST".into();
    method.path = "/tickets/{id}/comments".into();
    method.parameters = json!({"type": "object", "properties": {
        "id": {"type": "integer"}, "text": {"type": "string"}, "trace": {"type": "string"}, "page": {"type": "integer"}}});
    method.query = vec!["page".into()];
    method.header_params = BTreeMap::from([("trace".into(), "X-Trace-Id".into())]);
    method.body = vec!["text".into()];
    method.timeout_ms = Some(300);
    let mut tool = RestToolConfig::new("tickets", "https://tickets.example/api");
    tool.name = Some("Tickets".into());
    tool.description = "The ticket tracker.".into();
    tool.headers = BTreeMap::from([("Accept".into(), "application/json".into())]);
    tool.timeout_ms = Some(1000);
    tool.max_response_bytes = 4096;
    tool.methods.push(method);
    tool.id = "tickets2".into();
    tool.base_url = "https://tickets.example/v2".into();
    let spec = tool.tool_spec().expect("a tool built in code is a valid tool");
    assert_eq!((spec.tool_id.as_str(), spec.tool_name.as_str()), ("tickets2", "Tickets"));
    assert_eq!(spec.methods[0].name(), "comment");
    assert_eq!(spec.methods[0].timeout, Some(Duration::from_millis(300)));
}
