//! `#[tool]` and `#[tool_fn]` as a user writes them: link-time and run-time
//! registration, the generated definitions and schemas, and calls through the registry.

use std::sync::atomic::{AtomicBool, Ordering};

use futures::executor::block_on;
use serde_json::{Value, json};
use std::sync::Arc;

use tool_calling::protocol::vcp::command_alias;
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::{ArgMap, ToolProvider};
use tool_calling::{Args, ErrorKind, ToolError, tool, tool_fn};

mod support;

static SECRET_RAN: AtomicBool = AtomicBool::new(false);

#[derive(Default)]
struct Calc;

/// Arithmetic on numbers.
#[tool(
    id = "calc",
    name = "Calculator",
    category = "math",
    tags("math", "demo"),
    version = "1.0",
    documentation_url = "https://example.invalid/calc"
)]
impl Calc {
    /// Add two numbers.
    #[tool_method(param(a, description = "first addend"), param(b, description = "second addend"))]
    fn add(&self, a: f64, b: f64) -> f64 {
        a + b
    }

    /// Divide a by b.
    #[tool_method(
        vcp_command = "Divide",
        example(input = r#"{"a": 6, "b": 3}"#, output = "2", description = "six by three")
    )]
    fn divide(&self, a: f64, b: f64) -> Result<f64, String> {
        if b == 0.0 { Err("division by zero".into()) } else { Ok(a / b) }
    }

    /// Internal bookkeeping.
    #[tool_method(internal)]
    fn secret_internal(&self) -> String {
        SECRET_RAN.store(true, Ordering::SeqCst);
        "secret".into()
    }

    /// Repeat a message.
    #[tool_method(
        param(times, minimum = 1, maximum = 10),
        param(sep, default = " ", description = "separator"),
        param(message, min_length = 1, pattern = "^[^\\n]*$")
    )]
    async fn repeat(&self, message: String, times: u32, sep: Option<String>) -> String {
        futures::future::ready(()).await;
        let sep = sep.unwrap_or_default();
        vec![message; times as usize].join(&sep)
    }

    /// Does nothing and says so.
    #[tool_method(description = "Explicit description wins.")]
    fn noop(&self) {}

    /// A static method: no instance needed.
    #[tool_method]
    fn shout(text: String) -> String {
        text.to_uppercase()
    }

    #[allow(dead_code)]
    fn helper(&self) {}
}

/// A counter made by a factory, registered at run time.
struct Counter {
    start: u64,
    hits: std::sync::atomic::AtomicU64,
}

impl Counter {
    fn new() -> Result<Self, String> {
        Ok(Counter { start: 100, hits: std::sync::atomic::AtomicU64::new(0) })
    }
}

fn reject_negative(args: ArgMap) -> Result<ArgMap, ToolError> {
    match args.get("by").and_then(Value::as_i64) {
        Some(n) if n < 0 => Err(ToolError::validation("parameter `by` must not be negative")),
        _ => Ok(args),
    }
}

#[tool(id = "counter", factory = "Counter::new", register = false)]
impl Counter {
    /// Count a hit and return the total.
    #[tool_method(validate_with = "reject_negative", param(by, default = 1))]
    fn hit(&self, by: i64) -> u64 {
        self.start + self.hits.fetch_add(by as u64, Ordering::SeqCst) + by as u64
    }
}

struct Broken;

#[tool(id = "broken", factory = "Broken::make", register = false)]
impl Broken {
    fn make() -> Result<Broken, String> {
        Err("no database".into())
    }

    /// Never runs.
    #[tool_method]
    fn ping(&self) -> bool {
        true
    }
}

/// Tells the time.
#[tool_fn(id = "clock", name = "Clock", method = "now", category = "time")]
async fn current_time(param_zone: Option<String>) -> String {
    format!("12:00 {}", param_zone.unwrap_or_else(|| "UTC".into()))
}

/// Greets someone.
#[tool_fn(id = "greeter", register = false, param(name, description = "who to greet", max_length = 20))]
pub fn greet(name: String) -> Result<String, String> {
    if name == "nobody" { Err("nobody to greet".into()) } else { Ok(format!("Hello, {name}!")) }
}

fn args(pairs: &[(&str, &str)]) -> Args {
    pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
}

fn registry() -> Arc<ToolRegistry> {
    match ToolRegistry::from_inventory() {
        Ok(r) => Arc::new(r),
        Err(e) => panic!("inventory registration failed: {e}"),
    }
}

#[test]
fn link_time_tools_are_in_the_inventory() {
    let registry = registry();
    let calc = registry.tool("calc").expect("calc registered");
    assert!(registry.tool("clock").is_some());
    assert!(registry.tool("counter").is_none(), "register = false stays out of the inventory");
    assert!(registry.tool("greeter").is_none());

    let spec = calc.spec();
    assert_eq!(spec.tool_name, "Calculator");
    assert_eq!(spec.description, "Arithmetic on numbers.");
    assert_eq!(spec.metadata.category.as_deref(), Some("math"));
    assert_eq!(spec.metadata.tags, ["math", "demo"]);
    assert_eq!(spec.metadata.version.as_deref(), Some("1.0"));
    assert_eq!(spec.metadata.documentation_url.as_deref(), Some("https://example.invalid/calc"));

    let methods: Vec<(&str, &str, bool)> = spec
        .methods
        .iter()
        .map(|m| (m.definition.name.as_str(), m.definition.description.as_str(), m.agent_callable))
        .collect();
    assert_eq!(
        methods,
        [
            ("add", "Add two numbers.", true),
            ("divide", "Divide a by b.", true),
            ("secret_internal", "Internal bookkeeping.", false),
            ("repeat", "Repeat a message.", true),
            ("noop", "Explicit description wins.", true),
            ("shout", "A static method: no instance needed.", true),
        ]
    );
    assert!(spec.method("helper").is_none());
    assert_eq!(<Calc as ToolProvider>::tool_spec().methods.len(), 6);

    let divide = &spec.method("divide").expect("divide").definition;
    assert_eq!(command_alias(&divide.protocol_config), Some("Divide"));
    assert_eq!(divide.examples.len(), 1);
    assert_eq!(divide.examples[0].input, json!({"a": 6, "b": 3}));
    assert_eq!(divide.examples[0].output, Some(json!(2)));
    assert_eq!(divide.examples[0].description, "six by three");

    let add = &spec.method("add").expect("add").definition.parameters;
    assert_eq!(add["properties"]["a"]["description"], "first addend");
    assert_eq!(add["required"], json!(["a", "b"]));
    assert!(add.get("$schema").is_none() && add.get("title").is_none());
}

#[test]
fn repeat_schema_carries_the_param_attributes() {
    let spec = Calc::tool_spec();
    let schema = &spec.method("repeat").expect("repeat").definition.parameters;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["message", "times"]));
    let props = &schema["properties"];
    assert_eq!(props["times"]["minimum"], 1);
    assert_eq!(props["times"]["maximum"], 10);
    assert_eq!(props["sep"]["default"], " ");
    assert_eq!(props["sep"]["description"], "separator");
    assert_eq!(props["message"]["minLength"], 1);
    assert_eq!(props["message"]["pattern"], "^[^\\n]*$");
}

#[test]
fn calls_run_through_the_registry() {
    let registry = registry();
    let out = support::invoke(&registry, "calc_add", &args(&[("a", "2"), ("b", "40")])).expect("add");
    assert_eq!(out.into_text().parse::<f64>().ok(), Some(42.0));

    let out = support::invoke(&registry, "calc_divide", &args(&[("a", "6"), ("b", "3")])).expect("divide");
    assert_eq!(out.into_text().parse::<f64>().ok(), Some(2.0));
    let err = support::invoke(&registry, "calc_divide", &args(&[("a", "1"), ("b", "0")])).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Execution);
    assert_eq!(err.message, "division by zero");

    let out = support::invoke(&registry, "calc_shout", &args(&[("text", "hi")])).expect("shout");
    assert_eq!(out.into_text(), "HI");
    let out = support::invoke(&registry, "calc_noop", &Args::new()).expect("noop");
    assert_eq!(out.into_text(), "");
}

#[test]
fn internal_methods_are_refused_and_never_run() {
    let registry = registry();
    let err = support::invoke(&registry, "calc_secret_internal", &Args::new()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Permission);
    assert!(!SECRET_RAN.load(Ordering::SeqCst));
}

#[test]
fn async_method_with_default_and_constraints() {
    let registry = registry();
    let out = support::invoke(&registry, "calc_repeat", &args(&[("message", "ab"), ("times", "3")]))
        .expect("repeat");
    assert_eq!(out.into_text(), "ab ab ab", "the schema's default separator is applied");
    let out =
        support::invoke(&registry, "calc_repeat", &args(&[("message", "ab"), ("times", "2"), ("sep", "-")]))
            .expect("repeat");
    assert_eq!(out.into_text(), "ab-ab");

    let err =
        support::invoke(&registry, "calc_repeat", &args(&[("message", "ab"), ("times", "12")])).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Validation);
    assert!(err.message.contains("parameter `times`"), "{}", err.message);

    let err = support::invoke(&registry, "calc_repeat", &args(&[("times", "2")])).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Validation);
    assert!(err.message.contains("parameter `message` (required)"), "{}", err.message);
}

#[test]
fn handler_rejects_arguments_that_do_not_deserialise() {
    // Bypass the registry's validation: the handler reports its own validation error.
    let spec = Calc::tool_spec();
    let instance = spec.create_instance().expect("instance");
    let method = spec.method("add").expect("add");
    let mut bad = ArgMap::new();
    bad.insert("a".into(), json!("not a number"));
    bad.insert("b".into(), json!(1));
    let err = block_on(method.handler().call(instance, bad)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Validation);
    assert!(err.message.starts_with("invalid arguments:"), "{}", err.message);

    let wrong = spec_instance_of_other_type();
    let err = block_on(method.handler().call(wrong, ArgMap::new())).unwrap_err();
    assert_eq!(err.message, "internal error: the tool's instance is not of the tool's type");
}

fn spec_instance_of_other_type() -> tool_calling::tools::Instance {
    std::sync::Arc::new(5_u8)
}

#[test]
fn factory_tools_register_at_run_time() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Counter::tool_spec()).expect("counter registers");
    let out = support::invoke(&registry, "counter_hit", &Args::new()).expect("hit");
    assert_eq!(out.into_text(), "101", "default `by = 1`, start from the factory");
    let out = support::invoke(&registry, "counter_hit", &args(&[("by", "4")])).expect("hit");
    assert_eq!(out.into_text(), "105", "the instance is shared");
    let err = support::invoke(&registry, "counter_hit", &args(&[("by", "-3")])).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Validation);
    assert!(err.message.contains("must not be negative"));
    let schema = &Counter::tool_spec().methods[0].definition.parameters;
    assert_eq!(schema["properties"]["by"]["default"], 1);
    assert!(schema.get("required").is_none_or(|r| r == &json!([])), "{schema}");

    registry.register(Broken::tool_spec()).expect("broken registers");
    let err = support::invoke(&registry, "broken_ping", &Args::new()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Execution);
    assert!(err.message.contains("no database"), "{}", err.message);
}

#[test]
fn function_style_tools() {
    let registry = registry();
    let clock = registry.tool("clock").expect("clock");
    assert_eq!(clock.spec().tool_name, "Clock");
    assert_eq!(clock.spec().description, "Tells the time.");
    assert_eq!(clock.spec().metadata.category.as_deref(), Some("time"));
    assert_eq!(clock.spec().methods[0].definition.description, "Tells the time.");
    let out = support::invoke(&registry, "clock_now", &Args::new()).expect("now");
    assert_eq!(out.into_text(), "12:00 UTC");

    let registry = Arc::new(ToolRegistry::new());
    registry.register(greet_tool_spec()).expect("greeter registers");
    let spec = greet_tool_spec();
    assert_eq!(spec.tool_name, "greeter");
    let schema = &spec.methods[0].definition.parameters;
    assert_eq!(schema["properties"]["name"]["description"], "who to greet");
    assert_eq!(schema["properties"]["name"]["maxLength"], 20);
    let out = support::invoke(&registry, "greeter_greet", &args(&[("name", "Ada")])).expect("greet");
    assert_eq!(out.into_text(), "Hello, Ada!");
    let err = support::invoke(&registry, "greeter_greet", &args(&[("name", "nobody")])).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Execution);
    assert_eq!(greet("x".into()), Ok("Hello, x!".into()), "the function stays callable");
}
