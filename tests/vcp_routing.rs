//! VCP's routing of a parsed request to registered methods, on tools built by hand.

use serde_json::{Value, json};
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::TurnState;
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::protocol::vcp::{RouteError, command_alias_config};
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::{ArgMap, BoxFuture, Instance, MethodSpec, ToolOutput, ToolSpec};
use tool_calling::{ErrorKind, Invocation, ToolError, ToolRequest};

/// VCP's routing of `request` against what `registry` holds.
fn route(registry: &ToolRegistry, request: &ToolRequest) -> Vec<Result<Invocation, RouteError>> {
    tool_calling::protocol::vcp::route(&registry.catalog(), request)
}

fn handler()
-> impl Fn(Instance, ArgMap) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync + 'static {
    |_, _| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>
}

fn method(name: &str) -> MethodSpec {
    MethodSpec::new(MethodDefinition::new(name, format!("{name} things")), handler())
}

fn aliased(name: &str, alias: &str) -> MethodSpec {
    MethodSpec::new(
        MethodDefinition::new(name, format!("{name} things"))
            .with_protocol_config("vcp", command_alias_config(alias)),
        handler(),
    )
}

fn tool(id: &str, methods: Vec<MethodSpec>) -> ToolSpec {
    methods.into_iter().fold(ToolSpec::stateless(id, id.to_uppercase()), ToolSpec::with_method)
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let tools = [
        tool("directory-tree", vec![method("listFiles"), method("generate_tree")]),
        tool("file_ops", vec![method("read"), aliased("write", "WriteFile")]),
        tool("DailyNote", vec![method("create")]),
        tool("admin", vec![method("status"), method("reset").agent_callable(false)]),
        tool("calc", vec![method("add"), method("sub")]),
    ];
    for spec in tools {
        registry.register(spec).unwrap();
    }
    registry
}

fn request(tool_name: &str, pairs: &[(&str, &str)]) -> ToolRequest {
    pairs.iter().fold(ToolRequest::new("call_1", tool_name), |r, (k, v)| r.with_arg(*k, *v))
}

/// Routes a request that must yield exactly one successful call.
fn one(registry: &ToolRegistry, request: &ToolRequest) -> Invocation {
    let mut calls = route(registry, request);
    assert_eq!(calls.len(), 1, "{calls:?}");
    calls.remove(0).unwrap_or_else(|e| panic!("`{}` did not route: {e}", request.tool_name))
}

/// Routes a request that must yield exactly one error.
fn error(registry: &ToolRegistry, request: &ToolRequest) -> RouteError {
    let mut calls = route(registry, request);
    assert_eq!(calls.len(), 1, "{calls:?}");
    match calls.remove(0) {
        Ok(call) => panic!("`{}` routed to `{}`", request.tool_name, call.method),
        Err(e) => e,
    }
}

/// Asserts the call's method and exact arguments (with order).
fn assert_call(call: &Invocation, full_name: &str, expected: &[(&str, &str)]) {
    assert_eq!(call.method, full_name);
    let got: Vec<(&str, &Value)> = call.args.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let want: Vec<(&str, Value)> = expected.iter().map(|(k, v)| (*k, Value::from(*v))).collect();
    let want: Vec<(&str, &Value)> = want.iter().map(|(k, v)| (*k, v)).collect();
    assert_eq!(got, want, "arguments of `{full_name}`");
}

#[test]
fn rule1_exact_full_name_with_underscore_in_the_method_name() {
    let registry = registry();
    let call = one(&registry, &request("directory-tree_generate_tree", &[("path", "src"), ("depth", "2")]));
    assert_call(&call, "directory-tree_generate_tree", &[("path", "src"), ("depth", "2")]);
    let call = one(&registry, &request("directory-tree_listFiles", &[]));
    assert_call(&call, "directory-tree_listFiles", &[]);
    // Exact names keep everything as an argument, `command` included.
    let call = one(&registry, &request("file_ops_read", &[("command", "x"), ("filePath", "a.txt")]));
    assert_call(&call, "file_ops_read", &[("command", "x"), ("filePath", "a.txt")]);
}

#[test]
fn rule1_tool_id_and_alias_and_bare_alias() {
    let registry = registry();
    let call = one(&registry, &request("file_ops_WriteFile", &[("filePath", "a.txt"), ("content", "hi")]));
    assert_call(&call, "file_ops_write", &[("filePath", "a.txt"), ("content", "hi")]);
    let call = one(&registry, &request("WriteFile", &[("filePath", "a.txt")]));
    assert_call(&call, "file_ops_write", &[("filePath", "a.txt")]);
    // A bare method name (not an alias) is not accepted.
    assert!(matches!(error(&registry, &request("listFiles", &[])), RouteError::UnknownName { .. }));
}

#[test]
fn rule1_bare_alias_must_be_unique() {
    let registry = registry();
    registry.register(tool("backup", vec![aliased("save", "WriteFile")])).unwrap();
    let err = error(&registry, &request("WriteFile", &[]));
    assert!(matches!(&err, RouteError::UnknownName { name, .. } if name == "WriteFile"), "{err:?}");
    // The qualified aliases still work.
    assert_call(&one(&registry, &request("backup_WriteFile", &[])), "backup_save", &[]);
    assert_call(&one(&registry, &request("file_ops_WriteFile", &[])), "file_ops_write", &[]);
}

#[test]
fn rule2_tool_id_and_command_which_is_consumed() {
    let registry = registry();
    let req = request("directory-tree", &[("path", "src"), ("command", "generate_tree"), ("depth", "3")]);
    assert_call(&one(&registry, &req), "directory-tree_generate_tree", &[("path", "src"), ("depth", "3")]);
    // A tool id containing `_`, and a command given as the VCP alias.
    let req = request("file_ops", &[("command", "WriteFile"), ("filePath", "b.txt"), ("content", "x")]);
    assert_call(&one(&registry, &req), "file_ops_write", &[("filePath", "b.txt"), ("content", "x")]);
    let req = request("file_ops", &[("command", "read"), ("filePath", "b.txt")]);
    assert_call(&one(&registry, &req), "file_ops_read", &[("filePath", "b.txt")]);
    // A single-method tool whose command names its method: rule 2, command consumed.
    let req = request("DailyNote", &[("command", "create"), ("text", "hi")]);
    assert_call(&one(&registry, &req), "DailyNote_create", &[("text", "hi")]);
    // Routing does not check agent-callability: the executor refuses later.
    let call = one(&registry, &request("admin", &[("command", "reset")]));
    assert_call(&call, "admin_reset", &[]);
    assert!(registry.catalog().method("admin_reset").is_some_and(|(_, m)| !m.agent_callable));
}

#[test]
fn rule3_batch_splits_indexed_keys_and_shares_the_rest() {
    let registry = registry();
    let req = request(
        "file_ops",
        &[
            ("command1", "read"),
            ("filePath1", "a.txt"),
            ("encoding", "utf-8"),
            ("command2", "WriteFile"),
            ("filePath2", "b.txt"),
            ("content2", "hello"),
        ],
    );
    let calls = route(&registry, &req);
    assert_eq!(calls.len(), 2);
    let first = calls[0].as_ref().unwrap();
    assert_call(first, "file_ops_read", &[("filePath", "a.txt"), ("encoding", "utf-8")]);
    let second = calls[1].as_ref().unwrap();
    assert_call(
        second,
        "file_ops_write",
        &[("encoding", "utf-8"), ("filePath", "b.txt"), ("content", "hello")],
    );
}

#[test]
fn rule3_batch_runs_in_ascending_index_order_and_own_keys_win() {
    let registry = registry();
    let req = request(
        "file_ops",
        &[
            ("command10", "read"),
            ("command2", "read"),
            ("filePath", "shared.txt"),
            ("filePath10", "ten.txt"),
            ("md5", "kept"),
            ("path01", "kept too"),
        ],
    );
    let calls = route(&registry, &req);
    assert_eq!(calls.len(), 2);
    // Call 2 first, then call 10 (its own `filePath10`).
    // `md5` and `path01` end in digits that are no batch index: shared by every call.
    assert_call(
        calls[0].as_ref().unwrap(),
        "file_ops_read",
        &[("filePath", "shared.txt"), ("md5", "kept"), ("path01", "kept too")],
    );
    assert_call(
        calls[1].as_ref().unwrap(),
        "file_ops_read",
        &[("filePath", "ten.txt"), ("md5", "kept"), ("path01", "kept too")],
    );
}

#[test]
fn rule3_batch_with_one_bad_command_fails_that_call_only() {
    let registry = registry();
    let req = request(
        "file_ops",
        &[("command1", "read"), ("filePath1", "a.txt"), ("command2", "delete"), ("filePath2", "b.txt")],
    );
    let calls = route(&registry, &req);
    assert_eq!(calls.len(), 2);
    assert_call(calls[0].as_ref().unwrap(), "file_ops_read", &[("filePath", "a.txt")]);
    let err = calls[1].as_ref().unwrap_err();
    assert!(
        matches!(err, RouteError::UnknownCommand { tool, command, batch_index: Some(2), available, .. }
            if tool == "file_ops" && command == "delete" && available == &["read", "WriteFile"]),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("`command2`"), "{message}");
    assert!(message.contains("`read`, `WriteFile`"), "{message}");
}

#[test]
fn rule4_single_callable_method_keeps_command_as_an_argument() {
    let registry = registry();
    let req = request("DailyNote", &[("command", "append"), ("text", "today")]);
    assert_call(&one(&registry, &req), "DailyNote_create", &[("command", "append"), ("text", "today")]);
    let req = request("DailyNote", &[("text", "today")]);
    assert_call(&one(&registry, &req), "DailyNote_create", &[("text", "today")]);
    // Only agent-callable methods count: `admin` has one (`status`) besides `reset`.
    assert_call(&one(&registry, &request("admin", &[("x", "1")])), "admin_status", &[("x", "1")]);
    // `commandN` naming no method of a single-method tool are the plugin's own arguments.
    let req = request("DailyNote", &[("command1", "open"), ("command2", "close")]);
    assert_call(&one(&registry, &req), "DailyNote_create", &[("command1", "open"), ("command2", "close")]);
}

#[test]
fn a_known_tool_id_with_an_unknown_method_lists_the_tools_methods() {
    let registry = registry();
    // `toolId_alias` is an exact name (rule 1); splitting at the last `_` would find the
    // same method, so no rule of its own does.
    let call = one(&registry, &request("file_ops_WriteFile", &[("content", "x")]));
    assert_call(&call, "file_ops_write", &[("content", "x")]);
    // A known tool id before the last `_`, but no such method: the tool's methods are listed.
    let err = error(&registry, &request("file_ops_delete", &[]));
    assert!(
        matches!(&err, RouteError::UnknownMethod { name, tool, available, .. }
            if name == "file_ops_delete" && tool == "file_ops" && available == &["file_ops_read", "file_ops_write"]),
        "{err:?}"
    );
    assert!(err.to_string().ends_with("has: `file_ops_read`, `file_ops_write`."), "{err}");
    // The longest known tool id wins, even when the method part holds `_`.
    let err = error(&registry, &request("directory-tree_generate_treee", &[]));
    assert!(
        matches!(&err, RouteError::UnknownMethod { tool, suggestions, .. }
            if tool == "directory-tree" && suggestions == &["directory-tree_generate_tree"]),
        "{err:?}"
    );
    // A typo in an alias is matched against `toolId_alias` too.
    let err = error(&registry, &request("file_ops_WriteFil", &[]));
    assert!(err.to_string().contains("Did you mean `file_ops_WriteFile`"), "{err}");
}

#[test]
fn typo_names_the_closest_callable_names() {
    let registry = registry();
    let err = error(&registry, &request("calc_ad", &[]));
    assert_eq!(
        err.to_string(),
        "No tool method matches `calc_ad`. Did you mean `calc_add` or `calc_sub`? \
         Tool `calc` has: `calc_add`, `calc_sub`."
    );
    // A typo in the tool id: tool ids and full names are candidates.
    let err = error(&registry, &request("calk_add", &[]));
    assert!(
        matches!(&err, RouteError::UnknownName { suggestions, .. } if suggestions.first().is_some_and(|s| s == "calc_add")),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("No tool method matches `calk_add`. Did you mean `calc_add`"),
        "{err}"
    );
    let err = error(&registry, &request("DailyNot", &[]));
    assert!(err.to_string().contains("Did you mean `DailyNote`"), "{err}");
    // Case is ignored when measuring.
    let err = error(&registry, &request("CALC_ADD", &[]));
    assert!(err.to_string().contains("Did you mean `calc_add`"), "{err}");
    // Internal methods are never suggested nor listed.
    let err = error(&registry, &request("admin_rese", &[]));
    assert!(
        matches!(&err, RouteError::UnknownMethod { tool, suggestions, available, .. }
            if tool == "admin" && suggestions.is_empty() && available == &["admin_status"]),
        "{err:?}"
    );
    let err = error(&registry, &request("admn_reset", &[]));
    assert!(!err.to_string().contains("admin_reset"), "{err}");
}

#[test]
fn unknown_command_of_a_known_tool_lists_its_methods() {
    let registry = registry();
    let err = error(&registry, &request("directory-tree", &[("command", "listFile")]));
    assert_eq!(
        err.to_string(),
        "Tool `directory-tree` has no method `listFile`. Did you mean `listFiles`? \
         Tool `directory-tree` has: `listFiles`, `generate_tree`."
    );
    let err = error(&registry, &request("calc", &[]));
    assert!(matches!(&err, RouteError::MissingCommand { tool, .. } if tool == "calc"), "{err:?}");
    assert!(err.to_string().contains("`command`") && err.to_string().contains("`add` or `sub`"), "{err}");
    // A non-string command (native JSON) is quoted as JSON.
    let req = ToolRequest::new("1", "calc").with_arg("command", json!(3));
    let err = error(&registry, &req);
    assert!(matches!(&err, RouteError::UnknownCommand { command, .. } if command == "3"), "{err:?}");
}

#[test]
fn completely_unknown_name_gets_a_clear_message_without_suggestions() {
    let registry = registry();
    let err = error(&registry, &request("weather_forecast_tomorrow", &[]));
    assert!(matches!(&err, RouteError::UnknownName { suggestions, .. } if suggestions.is_empty()), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with("No tool method matches `weather_forecast_tomorrow`. No registered tool"),
        "{message}"
    );
    assert!(!message.contains("Did you mean"), "{message}");
    // With a `command`, the model meant a tool id: only tool ids are suggested.
    let err = error(&registry, &request("DailyNotes", &[("command", "create")]));
    assert!(
        matches!(&err, RouteError::UnknownName { suggestions, .. } if suggestions == &["DailyNote"]),
        "{err:?}"
    );
}

#[test]
fn empty_tool_name_is_an_error() {
    let registry = registry();
    for name in ["", "  "] {
        let err = error(&registry, &request(name, &[("command", "read")]));
        assert_eq!(err, RouteError::EmptyToolName);
        assert!(err.to_string().starts_with("The request has no tool_name"), "{err}");
    }
}

#[test]
fn empty_registry_routes_nothing() {
    let registry = ToolRegistry::new();
    let err = error(&registry, &request("calc_add", &[]));
    assert!(matches!(&err, RouteError::UnknownName { suggestions, .. } if suggestions.is_empty()), "{err:?}");
}

#[test]
fn control_keys_steer_the_host_and_never_reach_a_method() {
    let registry = registry();
    let keys = [("archery", "no_reply"), ("ink", "i"), ("river", "r"), ("vref", "v")];
    let with = |pairs: &[(&'static str, &'static str)]| {
        let mut all = pairs.to_vec();
        all.extend(keys);
        all
    };
    // Every rule: exact name, tool id + command, batch, single-method tool, bare alias.
    let cases: Vec<(ToolRequest, Vec<(&str, &str)>)> = vec![
        (request("calc_add", &with(&[("a", "1")])), vec![("a", "1")]),
        (request("calc", &with(&[("command", "add"), ("a", "1")])), vec![("a", "1")]),
        (request("DailyNote", &with(&[("text", "t")])), vec![("text", "t")]),
        (request("WriteFile", &with(&[("content", "c")])), vec![("content", "c")]),
    ];
    for (req, expected) in cases {
        let call = one(&registry, &req);
        let method = call.method.clone();
        assert_call(&call, &method, &expected);
        // The request itself keeps them, for the host to read.
        assert_eq!(req.arg_str("river"), Some("r"));
    }
    let batch = request("file_ops", &with(&[("command1", "read"), ("command2", "read")]));
    for call in route(&registry, &batch) {
        assert!(call.unwrap().args.is_empty());
    }
}

#[test]
fn the_vcp_protocol_resolves_requests_to_invocations_by_exact_name() {
    let registry = registry();
    let vcp = VcpProtocol::default();
    let catalog = registry.catalog();
    let batch = request("file_ops", &[("command1", "read"), ("command2", "WriteFile"), ("river", "r")]);
    let calls = vcp.resolve(&batch, &TurnState::default(), &catalog);
    let methods: Vec<String> = calls.iter().map(|c| c.as_ref().unwrap().method.clone()).collect();
    assert_eq!(methods, ["file_ops_read", "file_ops_write"]);
    assert!(calls.iter().all(|c| c.as_ref().unwrap().args.is_empty()));
    let unknown = vcp.resolve(&request("calc_ad", &[]), &TurnState::default(), &catalog);
    let err: &ToolError = unknown[0].as_ref().unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert!(err.message.contains("Did you mean `calc_add`"), "{}", err.message);

    // Any other protocol names methods exactly and passes every argument on.
    struct Exact;
    impl ToolCallingProtocol for Exact {
        fn id(&self) -> &str {
            "exact"
        }
        fn tool_declarations(
            &self,
            _: &[tool_calling::tools::ToolDefinition],
        ) -> tool_calling::protocol::ToolDeclarations {
            tool_calling::protocol::ToolDeclarations::Prompt(String::new())
        }
        fn parse_turn(&self, _: &tool_calling::model::AssistantTurn) -> tool_calling::protocol::ParseOutcome {
            tool_calling::protocol::ParseOutcome::default()
        }
        fn result_messages(
            &self,
            _: &[tool_calling::ToolExecutionResult],
            _: &TurnState,
        ) -> Vec<tool_calling::model::Message> {
            Vec::new()
        }
    }
    let req = request("calc", &[("command", "add"), ("river", "r")]);
    assert_eq!(Exact.resolve(&req, &TurnState::default(), &catalog), [Ok(Invocation::exact(&req))]);
}

#[test]
fn a_tool_that_is_one_function_is_called_by_its_own_name() {
    // A method named "" is the tool itself (an OpenAI function, an MCP tool): its full
    // name is the tool id, VCP's prompt and grammar name no command for it, and a
    // request naming the tool reaches it.
    use tool_calling::grammar::{Constraint, Dialect, Scope};
    use tool_calling::tools::{ToolCatalog, ToolDefinition};
    let weather = ToolDefinition::new("get_weather", "get_weather").with_method(
        MethodDefinition::new("", "The weather.").with_parameters(json!({
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]
        })),
    );
    assert_eq!(weather.methods[0].full_name("get_weather"), "get_weather");
    let vcp = VcpProtocol::default();
    let prompt = vcp.tool_declarations(std::slice::from_ref(&weather));
    let prompt = prompt.as_prompt().expect("a prompt");
    let definition = &prompt[prompt.find("<<<[TOOL_DEFINITION]>>>").expect("a definition")..];
    assert!(definition.contains("tool_name:「始」get_weather「末」"), "{prompt}");
    assert!(!definition.contains("command:"), "no command for the tool itself: {definition}");
    let catalog = ToolCatalog::from_definitions(std::slice::from_ref(&weather));
    let request = vcp.parse("<<<[TOOL_REQUEST]>>>\ntool_name:「始」get_weather「末」,\ncity:「始」Oslo「末」\n<<<[END_TOOL_REQUEST]>>>");
    let calls = vcp.resolve(&request.requests[0], &TurnState::default(), &catalog);
    let call = calls[0].as_ref().expect("routed");
    assert_eq!((call.method.as_str(), call.args["city"].clone()), ("get_weather", json!("Oslo")));
    let grammar = vcp.grammar(&[weather], &Constraint::new(Dialect::Lark, Scope::Call)).expect("a grammar");
    assert!(!grammar.text().contains("command"), "{}", grammar.text());
}
