//! The tester's demo tools end to end: defined in `cli/src/demo_tools.rs` with
//! one attribute each (exactly as a downstream crate would), they are discovered,
//! offered in the VCP prompt, callable by full name, reject wrong arguments naming the
//! field, and the internal method cannot be reached.

#[path = "../cli/src/demo_tools.rs"]
mod demo_tools;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tool_calling::Language;
use tool_calling::config::ToolCallConfig;
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::tools::DiscoveryService;
use tool_calling::tools::ToolRegistry;
use tool_calling::{ErrorKind, ToolError};

mod support;

fn registry() -> Arc<ToolRegistry> {
    Arc::new(ToolRegistry::from_inventory().expect("demo tools are valid"))
}

fn invoke(registry: &Arc<ToolRegistry>, name: &str, pairs: &[(&str, &str)]) -> Result<String, ToolError> {
    support::invoke(registry, name, &support::args(pairs)).map(|out| out.into_text())
}

/// The VCP prompt `protocol` writes for every enabled demo method.
fn prompt(protocol: &VcpProtocol) -> String {
    let discovery = DiscoveryService::new(registry());
    let declarations =
        protocol.tool_declarations(&ToolCallConfig::default().enabled_definitions(discovery.registry()));
    declarations.as_prompt().unwrap_or_default().to_string()
}

#[test]
fn discovered_and_offered_without_the_internal_method() {
    let discovery = DiscoveryService::new(registry());
    let ids: Vec<String> = discovery.discovered_methods(None).iter().map(|t| t.tool_id.clone()).collect();
    assert_eq!(ids, ["calc", "text"]);
    let prompt = prompt(&VcpProtocol::default());
    assert!(prompt.contains("command:「始」divide「末」"));
    assert!(!prompt.contains("secret_internal"));
}

#[test]
fn prompts_in_both_languages() {
    insta::assert_snapshot!("demo_prompt_en", prompt(&VcpProtocol::default()));
    let zh = VcpProtocol::default().with_language(Language::Zh).with_id("vcp-zh");
    insta::assert_snapshot!("demo_prompt_zh", prompt(&zh));
}

#[test]
fn callable_by_full_name_with_coerced_arguments() {
    let registry = registry();
    assert_eq!(invoke(&registry, "calc_add", &[("a", "2"), ("b", "40")]).unwrap(), "42.0");
    assert_eq!(invoke(&registry, "text_repeat", &[("message", "ab"), ("times", "3")]).unwrap(), "ab ab ab");
    assert_eq!(
        invoke(&registry, "text_repeat", &[("message", "ab"), ("times", "2"), ("sep", "-")]).unwrap(),
        "ab-ab"
    );
    assert_eq!(invoke(&registry, "text_sleep", &[("ms", "5")]).unwrap(), "slept 5 ms");
    let err = invoke(&registry, "calc_divide", &[("a", "1"), ("b", "0")]).unwrap_err();
    assert_eq!((err.kind, err.message.as_str()), (ErrorKind::Execution, "division by zero"));
}

#[test]
fn wrong_arguments_name_the_field() {
    let registry = registry();
    let err = invoke(&registry, "text_repeat", &[("message", "ab"), ("times", "11")]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Validation);
    assert!(err.message.contains("parameter `times` (maximum)"), "{}", err.message);
    let err = invoke(&registry, "calc_add", &[("a", "two"), ("b", "2")]).unwrap_err();
    assert!(err.message.contains("parameter `a` (type)"), "{}", err.message);
    let err = invoke(&registry, "text_echo", &[]).unwrap_err();
    assert!(err.message.contains("parameter `message` (required)"), "{}", err.message);
}

#[test]
fn synchronous_methods_run_on_the_blocking_pool() {
    let registry = registry();
    let blocking = |name: &str| registry.method(name).and_then(|m| m.spec().map(|s| s.blocking));
    assert_eq!(blocking("calc_add"), Some(true));
    assert_eq!(blocking("text_sleep"), Some(false));
}

#[test]
fn the_internal_method_cannot_be_reached() {
    let registry = registry();
    let err = invoke(&registry, "calc_secret_internal", &[]).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Permission);
    assert_eq!(demo_tools::SECRET_CALLS.load(Ordering::SeqCst), 0, "the internal method ran");
    assert!(!registry.full_names(true).contains(&"calc_secret_internal".to_string()));
}
