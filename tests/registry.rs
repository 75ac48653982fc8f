//! The registry's checks at registration, argument coercion and validation, the
//! discovery service (toggles), and the engine's cache of what protocols offer, on tools
//! built by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::Engine;
use tool_calling::exec::ExecutionContext;
use tool_calling::protocol::ToolDeclarations;
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::tools::DiscoveryService;
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolSpec};
use tool_calling::tools::{RegistryError, ToolRegistry};
use tool_calling::{Args, ErrorKind, ToolError};

mod support;
use support::invoke;

fn echo_handler()
-> impl Fn(tool_calling::tools::Instance, ArgMap) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
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
    // `a` + `b_c` and `a_b` + `c` both make `a_b_c`.
    registry.register(tool("a", vec![method("b_c", object(json!({}), json!([])))])).unwrap();
    let clash = registry.register(tool("a_b", vec![method("c", object(json!({}), json!([])))]));
    assert!(
        matches!(&clash, Err(RegistryError::NameClash { name, other_tool, .. }) if name == "a_b_c" && other_tool == "a"),
        "{clash:?}"
    );
    assert!(registry.tool("a_b").is_none(), "a refused tool is not registered");
    let twice = registry.register(tool(
        "d",
        vec![method("m", object(json!({}), json!([]))), method("m", object(json!({}), json!([])))],
    ));
    assert_eq!(twice, Err(RegistryError::DuplicateMethod { tool: "d".into(), method: "m".into() }));
    // A hand-built spec gets the check `#[tool]` makes: within a tool, method names and
    // each protocol's aliases are one namespace.
    let aliased = |name: &str, protocol: &str, alias: &str| {
        MethodSpec::new(
            MethodDefinition::new(name, name).with_protocol_config(protocol, json!({"command": alias})),
            echo_handler(),
        )
    };
    let same = registry.register(tool("e", vec![aliased("x", "vcp", "Same"), aliased("y", "vcp", "Same")]));
    let expected = RegistryError::DuplicateAlias {
        tool: "e".into(),
        protocol: "vcp".into(),
        alias: "Same".into(),
        method: "y".into(),
        other_method: "x".into(),
    };
    assert_eq!(same, Err(expected));
    assert_eq!(
        same.unwrap_err().to_string(),
        "tool `e`: method `y` declares the vcp alias `Same`, which already names method `x`"
    );
    assert!(registry.tool("e").is_none(), "a refused tool is not registered");
    // An alias that is another method's name, whichever comes first.
    for methods in [
        vec![aliased("x", "vcp", "y"), method("y", object(json!({}), json!([])))],
        vec![method("y", object(json!({}), json!([]))), aliased("x", "vcp", "y")],
    ] {
        let clash = registry.register(tool("f", methods));
        assert!(
            matches!(&clash, Err(RegistryError::DuplicateAlias { alias, method, other_method, .. })
                if alias == "y" && method == "x" && other_method == "y"),
            "{clash:?}"
        );
    }
    // A method's alias may be its own name; aliases of different protocols do not meet;
    // the same alias in two tools is two names (`g_Same`, `h_Same`).
    let fine = vec![aliased("x", "vcp", "x"), aliased("y", "vcp", "Same"), aliased("z", "other", "Same")];
    registry.register(tool("g", fine)).unwrap();
    registry.register(tool("h", vec![aliased("x", "vcp", "Same")])).unwrap();
    assert_eq!(registry.catalog().tool("g").map(|t| t.methods.len()), Some(3));
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

fn registry_with_typed() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(tool("t", vec![method("m", typed_schema())])).unwrap();
    Arc::new(registry)
}

use support::args;

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
        let out = invoke(&registry, "t_m", &args(&[("name", "ok"), (key, raw)]))
            .unwrap_or_else(|e| panic!("{key}={raw:?}: {e}"));
        let ToolOutput::Json(Value::Object(got)) = out else { panic!("not an object") };
        assert_eq!(got.get(key), expected.as_ref(), "{key}={raw:?}");
    }
}

#[test]
fn invalid_arguments_name_the_parameter_and_rule_and_the_tool_never_runs() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let registry = Arc::new(ToolRegistry::new());
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
        let err = invoke(&registry, "t_m", &args(&pairs)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Validation, "{pairs:?}");
        assert!(err.message.contains(expected), "{pairs:?}: `{}` should contain `{expected}`", err.message);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the tool ran on invalid input");
    invoke(&registry, "t_m", &args(&[("name", "ok")])).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn unknown_and_internal_methods_are_refused_by_kind() {
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(tool(
            "t",
            vec![
                method("open", object(json!({}), json!([]))),
                method("hidden", object(json!({}), json!([]))).agent_callable(false),
            ],
        ))
        .unwrap();
    let run = |name: &str| invoke(&registry, name, &Args::new());
    assert_eq!(run("t_nope").unwrap_err().kind, ErrorKind::NotFound);
    assert_eq!(run("t_hidden").unwrap_err().kind, ErrorKind::Permission);
    assert!(run("t_open").is_ok());
    assert_eq!(registry.full_names(true), ["t_open"]);
    assert_eq!(registry.full_names(false), ["t_open", "t_hidden"]);
}

#[test]
fn argument_hook_runs_before_validation() {
    let registry = Arc::new(ToolRegistry::new());
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
    let ok = invoke(&registry, "t_m", &args(&[("N", "3")])).unwrap();
    assert_eq!(ok, ToolOutput::Json(json!({"n": 3})));
    let err = invoke(&registry, "t_m", &args(&[("n", "-1")])).unwrap_err();
    assert_eq!(err.message, "n must not be negative");
}

fn registry_for_discovery() -> Arc<ToolRegistry> {
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
    Arc::new(registry)
}

fn discovery() -> DiscoveryService {
    DiscoveryService::new(registry_for_discovery())
}

/// The prompt VCP writes for what `config` enables, through the engine's cache.
fn prompt_of(engine: &Engine, config: &ToolCallConfig, agent: Option<&str>) -> Arc<ToolDeclarations> {
    let mut ctx = ExecutionContext::new(config.clone());
    ctx.agent_id = agent.map(str::to_owned);
    engine.declarations(&ctx).unwrap()
}

fn text(declarations: &ToolDeclarations) -> String {
    declarations.as_prompt().unwrap_or_default().to_string()
}

#[test]
fn discovery_lists_callable_methods_or_what_a_filter_selects() {
    let discovery = discovery();
    let names = |tools: Vec<tool_calling::tools::DiscoveredTool>| -> Vec<String> {
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
    let engine = Engine::new(registry_for_discovery());
    let prompt = |config: &ToolCallConfig| text(&prompt_of(&engine, config, None));
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
fn declarations_are_cached_by_protocol_agent_and_config_and_invalidated() {
    let mut engine = Engine::new(registry_for_discovery());
    engine.register_protocol(Arc::new(VcpProtocol::default().with_id("vcp-zh"))).unwrap();
    let config = ToolCallConfig::default();
    let first = prompt_of(&engine, &config, Some("agent-1"));
    let again = prompt_of(&engine, &config, Some("agent-1"));
    assert!(Arc::ptr_eq(&first, &again), "the second call is served from the cache");
    assert_eq!(engine.cached_declarations(), 1);
    prompt_of(&engine, &config, Some("agent-2"));
    prompt_of(&engine, &config.clone().with_protocol("vcp-zh"), Some("agent-1"));
    prompt_of(&engine, &config.clone().with_toggle("calc_add", false), Some("agent-1"));
    assert_eq!(engine.cached_declarations(), 4);
    engine.invalidate_declarations();
    assert_eq!(engine.cached_declarations(), 0);
    let fresh = prompt_of(&engine, &config, Some("agent-1"));
    assert!(!Arc::ptr_eq(&first, &fresh) && first == fresh);
    // Registering a tool makes cached declarations stale by itself.
    engine.registry().register(tool("late", vec![method("hello", object(json!({}), json!([])))])).unwrap();
    let after = prompt_of(&engine, &config, Some("agent-1"));
    assert!(text(&after).contains("command:「始」hello「末」"));
}

#[test]
fn the_engine_is_shareable_across_threads() {
    let engine = Arc::new(Engine::new(registry_for_discovery()));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let e = engine.clone();
            std::thread::spawn(move || prompt_of(&e, &ToolCallConfig::default(), None))
        })
        .collect();
    let prompts: Vec<Arc<ToolDeclarations>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(prompts.windows(2).all(|w| w[0] == w[1]));
    assert!(!prompts[0].is_empty());
}
