//! Parameter types through the macro: enums, nested structs, `Vec`, `Option`, and how
//! their schemas (`$defs`/`$ref` from schemars) coerce and validate.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

use tool_calling::tools::ToolProvider;
use tool_calling::tools::ToolRegistry;
use tool_calling::{Args, ErrorKind, ToolError, tool};

mod support;

#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Thorough,
}

/// Where to look.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Scope {
    /// Directory to start from.
    root: String,
    /// How deep to go.
    depth: Option<u32>,
}

#[derive(Default)]
struct Search;

/// Searches things.
#[tool(id = "search", register = false)]
impl Search {
    /// Run a search.
    #[tool_method(param(terms, min_items = 1, description = "words to look for"))]
    fn run(&self, terms: Vec<String>, mode: Mode, scope: Scope, limit: Option<u32>) -> Value {
        json!({"terms": terms, "mode": mode, "root": scope.root, "depth": scope.depth, "limit": limit})
    }
}

fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(Search::tool_spec()).expect("schemars output passes the registry's checks");
    Arc::new(registry)
}

fn call(pairs: &[(&str, &str)]) -> Result<Value, ToolError> {
    let args: Args = pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    support::invoke(&registry(), "search_run", &args).map(|out| match out {
        tool_calling::tools::ToolOutput::Json(v) => v,
        other => panic!("expected JSON, got {other:?}"),
    })
}

#[test]
fn schema_has_enums_nested_structs_and_optional_fields() {
    let registry = registry();
    let method = registry.method("search_run").unwrap();
    let schema = &method.spec().unwrap().definition.parameters;
    assert_eq!(schema["required"], json!(["terms", "mode", "scope"]));
    assert_eq!(schema["properties"]["terms"]["minItems"], 1);
    let params = method.spec().unwrap().definition.parameter_list();
    assert_eq!(params[1].allowed_values(), Some(&vec![json!("fast"), json!("thorough")]));
    let names: Vec<(String, String, bool)> = method
        .spec()
        .unwrap()
        .definition
        .parameter_list()
        .iter()
        .map(|p| (p.name.to_string(), p.type_name(), p.required))
        .collect();
    assert_eq!(
        names,
        [
            ("terms".into(), "array<string>".into(), true),
            ("mode".into(), "string".into(), true),
            ("scope".into(), "object".into(), true),
            ("limit".into(), "integer".into(), false),
        ]
    );
}

#[test]
fn vcp_strings_become_arrays_enums_and_objects() {
    let out = call(&[
        ("terms", r#"["rust", "nom"]"#),
        ("mode", "thorough"),
        ("scope", r#"{"root": "src", "depth": 2}"#),
        ("limit", "5"),
    ])
    .unwrap();
    assert_eq!(
        out,
        json!({"terms": ["rust", "nom"], "mode": "thorough", "root": "src", "depth": 2, "limit": 5})
    );
    let optional_omitted =
        call(&[("terms", r#"["x"]"#), ("mode", "fast"), ("scope", r#"{"root": "."}"#), ("limit", "")]);
    assert_eq!(optional_omitted.unwrap()["limit"], Value::Null);
}

#[test]
fn nested_and_enum_violations_name_the_parameter() {
    let base = [("terms", r#"["x"]"#), ("mode", "fast"), ("scope", r#"{"root": "."}"#)];
    let with = |key: &str, value: &str| -> Vec<(String, String)> {
        base.iter()
            .map(|(k, v)| (k.to_string(), if *k == key { value.to_string() } else { v.to_string() }))
            .collect()
    };
    for (key, value, expected) in [
        ("mode", "slow", "parameter `mode`"),
        ("scope", r#"{"depth": 1}"#, "parameter `scope` (required): `root` is required"),
        ("scope", r#"{"root": ".", "depth": -1}"#, "parameter `scope`"),
        ("terms", "[]", "parameter `terms` (minItems)"),
        ("terms", "rust", "parameter `terms` (type)"),
    ] {
        let pairs = with(key, value);
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let err = call(&borrowed).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Validation, "{key}={value}");
        assert!(err.message.contains(expected), "{key}={value}: {}", err.message);
    }
}
