//! The registry's checks at registration, argument coercion and validation, and the
//! discovery service (toggles, cache, invalidation), on tools built by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_calling::config::ToolCallConfig;
use tool_calling::discovery::DiscoveryService;
use tool_calling::registry::{RegistryError, ToolRegistry};
use tool_calling::tool::{ArgMap, BoxFuture, MethodSpec, ToolError, ToolOutput, ToolSpec};
use tool_calling::{Args, ErrorKind, MethodDefinition, VcpProtocol};

fn echo_handler()
-> impl Fn(tool_calling::tool::Instance, ArgMap) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
+ Send
+ Sync
+ 'static {
    |_, args| Box::pin(async move { Ok(ToolOutput::Json(Value::Object(args))) })
}

fn method(name: &str, schema: Value) -> MethodSpec {
    MethodSpec::new(
        MethodDefinition::new(name, format!("{name} things")).with_parameters(schema),
        echo_handler(),
    )
}

fn tool(id: &str, methods: Vec<MethodSpec>) -> ToolSpec {
    methods.into_iter().fold(ToolSpec::stateless(id, id.to_uppercase()), ToolSpec::with_method)
}

fn object(properties: Value, required: Value) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

#[test]
fn bad_definitions_are_refused_at_registration_naming_tool_method_and_field() {
    let cases: Vec<(ToolSpec, &str)> = vec![
        (tool("", vec![]), "empty id"),
        (tool("t", vec![method("", object(json!({}), json!([])))]), "empty name"),
        (tool("t", vec![method("m", json!({"type": "array"}))]), "tool `t`, method `m`, schema at `/type`"),
        (tool("t", vec![method("m", json!("nope"))]), "tool `t`, method `m`, schema at ``"),
        (
            tool("t", vec![method("m", object(json!({"a": {"type": "string"}}), json!(["a", "b"])))]),
            "`/required/1`",
        ),
        (
            tool("t", vec![method("m", object(json!({"a": {"description": "untyped"}}), json!([])))]),
            "`/properties/a`",
        ),
        (
            tool(
                "t",
                vec![method(
                    "m",
                    object(json!({"o": {"type": "object", "properties": {"deep": {}}}}), json!([])),
                )],
            ),
            "`/properties/o/properties/deep`",
        ),
        (
            tool("t", vec![method("m", object(json!({"l": {"type": "array", "items": {}}}), json!([])))]),
            "`/properties/l/items`",
        ),
        (
            tool("t", vec![method("m", object(json!({"a": {"type": "strnig"}}), json!([])))]),
            "not a valid schema",
        ),
        (
            tool(
                "t",
                vec![method("m", object(json!({}), json!([]))), method("m", object(json!({}), json!([])))],
            ),
            "declares method `m` more than once",
        ),
    ];
    for (spec, expected) in cases {
        let registry = ToolRegistry::new();
        let err = registry.register(spec).expect_err(expected);
        assert!(err.to_string().contains(expected), "`{err}` should mention `{expected}`");
    }
}

#[test]
fn duplicate_tools_and_clashing_names_are_refused() {
    let registry = ToolRegistry::new();
    registry.register(tool("calc", vec![method("add", object(json!({}), json!([])))])).unwrap();
    let again = registry.register(tool("calc", vec![]));
    assert_eq!(again, Err(RegistryError::DuplicateTool { tool: "calc".into() }));
    // `calc` + `x_add` and `calc_x` + `add` both make `calc_x_add`.
    registry.register(tool("calc_x", vec![method("add", object(json!({}), json!([])))])).unwrap();
    let clash =
        registry.register(tool("calc", vec![]).with_method(method("x_add", object(json!({}), json!([])))));
    assert!(matches!(clash, Err(RegistryError::DuplicateTool { .. })));
    let clash = registry.register(tool("c", vec![]).with_method(MethodSpec::new(
        MethodDefinition::new("y", "y").with_vcp_command("add_alias"),
        echo_handler(),
    )));
    assert!(clash.is_ok());
    let clash =
        registry.register(tool("c_add", vec![]).with_method(method("alias", object(json!({}), json!([])))));
    assert!(
        matches!(&clash, Err(RegistryError::NameClash { name, .. }) if name == "c_add_alias"),
        "{clash:?}"
    );
}

fn typed_schema() -> Value {
    object(
        json!({
            "flag": {"type": "boolean"},
            "count": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "opts": {"type": "object", "properties": {"depth": {"type": "integer"}}, "required": ["depth"]},
            "name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
            "mode": {"enum": ["fast", "slow"]},
            "maybe": {"type": ["integer", "null"]},
            "note": {"type": "string"}
        }),
        json!(["name"]),
    )
}

fn registry_with_typed() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register(tool("t", vec![method("m", typed_schema())])).unwrap();
    registry
}

fn args(pairs: &[(&str, &str)]) -> Args {
    pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
}

#[test]
fn string_arguments_are_coerced_by_schema() {
    let registry = registry_with_typed();
    let table: Vec<(&str, &str, Option<Value>)> = vec![
        ("flag", "false", Some(json!(false))),
        ("flag", "TRUE", Some(json!(true))),
        ("count", " 7 ", Some(json!(7))),
        ("ratio", "2.5", Some(json!(2.5))),
        ("ratio", "3", Some(json!(3))),
        ("tags", r#"["a","b"]"#, Some(json!(["a", "b"]))),
        ("opts", r#"{"depth": 2}"#, Some(json!({"depth": 2}))),
        ("maybe", "null", Some(Value::Null)),
        ("maybe", "5", Some(json!(5))),
        ("note", "42", Some(json!("42"))),
        ("note", "", None),
        ("count", "", None),
        ("mode", "fast", Some(json!("fast"))),
    ];
    for (key, raw, expected) in table {
        let out = futures::executor::block_on(registry.invoke("t_m", &args(&[("name", "ok"), (key, raw)])))
            .unwrap_or_else(|e| panic!("{key}={raw:?}: {e}"));
        let ToolOutput::Json(Value::Object(got)) = out else { panic!("not an object") };
        assert_eq!(got.get(key), expected.as_ref(), "{key}={raw:?}");
    }
}

#[test]
fn invalid_arguments_name_the_parameter_and_rule_and_the_tool_never_runs() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let registry = ToolRegistry::new();
    registry
        .register(tool("t", vec![]).with_method(MethodSpec::new(
            MethodDefinition::new("m", "m").with_parameters(typed_schema()),
            move |_, _| {
                counter.fetch_add(1, Ordering::SeqCst);
                Box::pin(async { Ok(ToolOutput::Text("ran".into())) }) as BoxFuture<'static, _>
            },
        )))
        .unwrap();
    let table: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (vec![], "parameter `name` (required)"),
        (vec![("name", "")], "parameter `name` (minLength)"),
        (vec![("name", "A1")], "parameter `name` (pattern)"),
        (vec![("name", "ok"), ("count", "12")], "parameter `count` (maximum)"),
        (vec![("name", "ok"), ("count", "0")], "parameter `count` (minimum)"),
        (vec![("name", "ok"), ("count", "many")], "parameter `count` (type)"),
        (vec![("name", "ok"), ("flag", "yes")], "parameter `flag` (type)"),
        (vec![("name", "ok"), ("mode", "medium")], "parameter `mode` (enum)"),
        (vec![("name", "ok"), ("tags", r#"["a","a"]"#)], "parameter `tags` (uniqueItems)"),
        (vec![("name", "ok"), ("tags", r#"["a",1]"#)], "parameter `tags` (type): at `1`"),
        (vec![("name", "ok"), ("opts", "{}")], "parameter `opts` (required): `depth` is required"),
        (vec![("name", "ok"), ("opts", r#"{"depth": "x"}"#)], "parameter `opts` (type): at `depth`"),
    ];
    for (pairs, expected) in table {
        let err = futures::executor::block_on(registry.invoke("t_m", &args(&pairs))).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Validation, "{pairs:?}");
        assert!(err.message.contains(expected), "{pairs:?}: `{}` should contain `{expected}`", err.message);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the tool ran on invalid input");
    futures::executor::block_on(registry.invoke("t_m", &args(&[("name", "ok")]))).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn unknown_and_internal_methods_are_refused_by_kind() {
    let registry = ToolRegistry::new();
    registry
        .register(tool(
            "t",
            vec![
                method("open", object(json!({}), json!([]))),
                method("hidden", object(json!({}), json!([]))).agent_callable(false),
            ],
        ))
        .unwrap();
    let run = |name: &str| futures::executor::block_on(registry.invoke(name, &Args::new()));
    assert_eq!(run("t_nope").unwrap_err().kind, ErrorKind::NotFound);
    assert_eq!(run("t_hidden").unwrap_err().kind, ErrorKind::Permission);
    assert!(run("t_open").is_ok());
    assert_eq!(registry.full_names(true), ["t_open"]);
    assert_eq!(registry.full_names(false), ["t_open", "t_hidden"]);
}

#[test]
fn argument_hook_runs_before_validation() {
    let registry = ToolRegistry::new();
    let schema = object(json!({"n": {"type": "integer"}}), json!(["n"]));
    registry
        .register(tool("t", vec![]).with_method(method("m", schema).with_argument_hook(|mut args| {
            // Accept "n" written as "N" by sloppy models; refuse negative numbers.
            if let Some(v) = args.remove("N") {
                args.insert("n".into(), v);
            }
            match args.get("n").and_then(Value::as_i64) {
                Some(n) if n < 0 => Err(ToolError::validation("n must not be negative")),
                _ => Ok(args),
            }
        })))
        .unwrap();
    let ok = futures::executor::block_on(registry.invoke("t_m", &args(&[("N", "3")]))).unwrap();
    assert_eq!(ok, ToolOutput::Json(json!({"n": 3})));
    let err = futures::executor::block_on(registry.invoke("t_m", &args(&[("n", "-1")]))).unwrap_err();
    assert_eq!(err.message, "n must not be negative");
}

fn discovery() -> DiscoveryService {
    let registry = ToolRegistry::new();
    registry
        .register(
            tool(
                "calc",
                vec![
                    method("add", object(json!({}), json!([]))),
                    method("divide", object(json!({}), json!([]))),
                ],
            )
            .with_method(method("secret", object(json!({}), json!([]))).agent_callable(false)),
        )
        .unwrap();
    registry.register(tool("text", vec![method("echo", object(json!({}), json!([])))])).unwrap();
    DiscoveryService::new(Arc::new(registry))
}

#[test]
fn discovery_lists_callable_methods_or_what_a_filter_selects() {
    let discovery = discovery();
    let names = |tools: Vec<tool_calling::discovery::DiscoveredTool>| -> Vec<String> {
        tools
            .iter()
            .flat_map(|t| t.methods.iter().map(|m| format!("{}_{}", t.tool_id, m.definition.name)))
            .collect()
    };
    assert_eq!(names(discovery.discovered_methods(None)), ["calc_add", "calc_divide", "text_echo"]);
    let all = |_: &ToolSpec, _: &MethodSpec| true;
    assert_eq!(
        names(discovery.discovered_methods(Some(&all))),
        ["calc_add", "calc_divide", "calc_secret", "text_echo"]
    );
}

#[test]
fn prompts_honour_enabled_toggles_and_defaults() {
    let discovery = discovery();
    let vcp = VcpProtocol::default();
    let prompt = |config: &ToolCallConfig| discovery.generate_prompt(&vcp, config, None).to_string();
    let all = prompt(&ToolCallConfig::default());
    for command in ["command:「始」add「末」", "command:「始」divide「末」", "command:「始」echo「末」"]
    {
        assert!(all.contains(command), "{command}");
    }
    assert!(!all.contains("secret"));
    assert_eq!(prompt(&ToolCallConfig::default().with_enabled(false)), "");
    let no_divide = prompt(&ToolCallConfig::default().with_toggle("calc_divide", false));
    assert!(no_divide.contains("command:「始」add「末」") && !no_divide.contains("divide"));
    let only_add =
        prompt(&ToolCallConfig::default().with_default_tool_enabled(false).with_toggle("calc_add", true));
    assert!(
        only_add.contains("command:「始」add「末」")
            && !only_add.contains("echo")
            && !only_add.contains("divide")
    );
    let tool_off_method_on =
        prompt(&ToolCallConfig::default().with_toggle("calc", false).with_toggle("calc_divide", true));
    assert!(tool_off_method_on.contains("divide") && !tool_off_method_on.contains("command:「始」add「末」"));
}

#[test]
fn prompt_cache_is_keyed_and_invalidated() {
    let discovery = discovery();
    let vcp = VcpProtocol::default();
    let config = ToolCallConfig::default();
    let first = discovery.generate_prompt(&vcp, &config, Some("agent-1"));
    let again = discovery.generate_prompt(&vcp, &config, Some("agent-1"));
    assert!(Arc::ptr_eq(&first, &again), "the second call is served from the cache");
    assert_eq!(discovery.cached_prompts(), 1);
    discovery.generate_prompt(&vcp, &config, Some("agent-2"));
    discovery.generate_prompt(&vcp.clone().with_id("vcp-zh"), &config, Some("agent-1"));
    discovery.generate_prompt(&vcp, &config.clone().with_toggle("calc_add", false), Some("agent-1"));
    assert_eq!(discovery.cached_prompts(), 4);
    discovery.invalidate_cache();
    assert_eq!(discovery.cached_prompts(), 0);
    let fresh = discovery.generate_prompt(&vcp, &config, Some("agent-1"));
    assert!(!Arc::ptr_eq(&first, &fresh) && first == fresh);
    // Registering a tool makes cached prompts stale by itself.
    discovery.registry().register(tool("late", vec![method("hello", object(json!({}), json!([])))])).unwrap();
    let after = discovery.generate_prompt(&vcp, &config, Some("agent-1"));
    assert!(after.contains("command:「始」hello「末」"));
}

#[test]
fn discovery_is_shareable_across_threads() {
    let discovery = Arc::new(discovery());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let d = discovery.clone();
            std::thread::spawn(move || {
                d.generate_prompt(&VcpProtocol::default(), &ToolCallConfig::default(), None)
            })
        })
        .collect();
    let prompts: Vec<Arc<str>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(prompts.windows(2).all(|w| w[0] == w[1]));
}
