//! The five readers of tool schemas agree: the same schemas are fed to text coercion
//! (`TextCoercion`), declarations (`MethodDefinition::parameter_list`), the native
//! schema rewrite (`protocol::native::schema::gemini`), the grammars' JSON and text
//! walks (`hermes`, `qwen3_coder_xml`), the Python literals (`pythonic`) and the Gemma
//! and MiniMax-M3 notations, each grammar compiled by llguidance and driven over calls
//! the formats write. A `$ref` to a `$ref` ends at the same schema everywhere (its range
//! holds in every grammar), nullable, nested, enum and default parameters read alike,
//! and a cycle of references (or a reference to nothing) is refused by every reader, and
//! by `ToolRegistry::register`, with the error `tool_calling::schema::resolve` gives.

#[path = "support/llg.rs"]
mod llg;

use serde_json::{Map, Value, json};
use tool_calling::grammar::{Constraint, Dialect, GrammarError, Scope};
use tool_calling::protocol::native::schema::gemini;
use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
use tool_calling::protocol::{ToolCallingProtocol, TurnState};
use tool_calling::schema::{SchemaError, resolve};
use tool_calling::tools::{MethodDefinition, ParameterInfo, TextCoercion, ToolCatalog, ToolDefinition};

/// The grammars checked: JSON values, Python literals, Gemma's notation, MiniMax-M3's
/// elements, text values.
const FORMATS: [&str; 5] = ["hermes", "pythonic", "function_gemma", "minimax_m3", "qwen3_coder_xml"];

/// The formats whose values are JSON or literals (a number is not a string there).
const TYPED: [&str; 3] = ["hermes", "pythonic", "function_gemma"];

/// One method's parameters: a chained `$ref` with a range, a nullable string, a nested
/// object behind a `$ref` (whose own property is the chained `$ref`), an enum with a
/// default, and a default held by the referenced definition.
fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "count": {"$ref": "#/$defs/Count"},
            "note": {"type": ["string", "null"]},
            "place": {"$ref": "#/$defs/Place"},
            "unit": {"enum": ["c", "f"], "default": "c"},
            "level": {"$ref": "#/$defs/Level", "description": "How loud."}
        },
        "required": ["count"],
        "$defs": {
            "Count": {"$ref": "#/$defs/Amount"},
            "Amount": {"type": "integer", "minimum": 1, "maximum": 9},
            "Place": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "zip": {"$ref": "#/$defs/Count"}},
                "required": ["city"]
            },
            "Level": {"type": "integer", "default": 3, "description": "A level."}
        }
    })
}

/// Parameters whose one property is a cycle of references (`A` to `B` to `A`).
fn cyclic() -> Value {
    json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/A"}},
        "required": ["x"],
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}
    })
}

/// Parameters whose one property refers to nothing.
fn dangling() -> Value {
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/Nowhere"}}, "required": ["x"], "$defs": {}})
}

fn tools(parameters: Value) -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new("t", "T")
            .with_method(MethodDefinition::new("check", "Check.").with_parameters(parameters)),
    ]
}

fn protocol(id: &str) -> TextFormatProtocol {
    TextFormatProtocol::new(TextFormat::from_id(id).expect("a text format"))
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

fn param<'a>(method: &'a MethodDefinition, name: &str) -> ParameterInfo<'a> {
    method.parameter_list().into_iter().find(|p| p.name == name).expect("a parameter")
}

#[test]
fn a_chained_reference_ends_at_the_same_schema_everywhere() {
    let root = parameters();
    let count = &root["properties"]["count"];
    let amount = &root["$defs"]["Amount"];
    // The module.
    assert_eq!(resolve(&root, count), Ok(amount));
    // Coercion: an integer.
    let coercion = TextCoercion::new();
    assert_eq!(coercion.by_schema("7", count, &root), Some(json!(7)));
    assert_eq!(coercion.by_schema("seven", count, &root), None);
    // Declarations: the same schema, named by its type.
    let tool = &tools(root.clone())[0];
    let method = &tool.methods[0];
    let info = param(method, "count");
    assert_eq!(info.resolution(), Ok(amount));
    assert_eq!(info.resolved, amount);
    assert_eq!((info.type_name().as_str(), info.required), ("integer", true));
    // Gemini: the definition inlined, bounds and all, also inside the nested object.
    let native = gemini(&root);
    let inlined = json!({"type": "integer", "minimum": 1, "maximum": 9});
    assert_eq!(native["properties"]["count"], inlined);
    assert_eq!(native["properties"]["place"]["properties"]["zip"], inlined);
    // Text formats type the chained parameter by the same schema when they resolve a call.
    let xml = protocol("qwen3_coder_xml");
    let text = xml.write_call("t_check", &args(json!({"count": 7}))).expect("written");
    let parsed = xml.parse(&text);
    let catalog = ToolCatalog::from_definitions(&tools(root.clone()));
    let resolved = xml.resolve(&parsed.requests[0], &TurnState::default(), &catalog);
    let [Ok(invocation)] = resolved.as_slice() else { panic!("{resolved:?}") };
    assert_eq!(invocation.args.get("count"), Some(&json!(7)), "read as an integer");
}

#[test]
fn the_grammars_admit_and_refuse_alike() {
    let tools = tools(parameters());
    // (arguments, admitted, only in the formats whose values are typed)
    let cases = [
        (json!({"count": 7}), true, false),
        (json!({"count": 1, "note": "hi", "unit": "f", "level": 2}), true, false),
        (json!({"count": 9, "place": {"city": "Paris", "zip": 4}}), true, false),
        (json!({"count": 2, "place": {"city": "Paris"}}), true, false),
        (json!({"count": 3, "note": null}), true, true),
        // The chained reference's range and type hold in every grammar.
        (json!({"count": 12}), false, false),
        (json!({"count": 0}), false, false),
        (json!({"count": "seven"}), false, false),
        // So do the nested object's required key and its chained property.
        (json!({"count": 2, "place": {"zip": 4}}), false, false),
        (json!({"count": 2, "place": {"city": "Paris", "zip": 10}}), false, false),
        // The enum.
        (json!({"count": 2, "unit": "k"}), false, false),
        // The required key.
        (json!({"note": "hi"}), false, false),
        // Nullable is a string or null, not a number.
        (json!({"count": 3, "note": 5}), false, true),
    ];
    for id in FORMATS {
        let protocol = protocol(id);
        let grammar = protocol
            .grammar(&tools, &Constraint::new(Dialect::Lark, Scope::Call))
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        let engine = llg::compile(&grammar).unwrap_or_else(|e| panic!("{id}: {e}"));
        let mut checked = 0;
        for (arguments, admitted, typed_only) in &cases {
            if *typed_only && !TYPED.contains(&id) {
                continue;
            }
            let Some(text) = protocol.write_call("t_check", &args(arguments.clone())) else {
                panic!("{id} writes no call of {arguments}");
            };
            let verdict = engine.admits(&text);
            assert_eq!(verdict.is_ok(), *admitted, "{id}: {arguments} as\n{text}\n{verdict:?}");
            checked += 1;
        }
        assert!(checked >= 11, "{id}: {checked} cases");
    }
}

#[test]
fn nullable_enum_and_default_read_alike() {
    let root = parameters();
    let property = |name: &str| &root["properties"][name];
    let coercion = TextCoercion::new();
    let tool = &tools(root.clone())[0];
    let method = &tool.methods[0];
    let native = gemini(&root);

    // Nullable.
    assert_eq!(coercion.by_schema("null", property("note"), &root), Some(Value::Null));
    assert_eq!(coercion.by_schema("5", property("note"), &root), Some(json!("5")));
    assert_eq!(param(method, "note").type_name(), "string");
    assert_eq!(native["properties"]["note"], json!({"type": "string", "nullable": true}));

    // Enum, with a default.
    assert_eq!(coercion.by_schema("f", property("unit"), &root), Some(json!("f")));
    assert_eq!(coercion.by_schema("k", property("unit"), &root), None);
    let unit = param(method, "unit");
    assert_eq!(unit.allowed_values(), Some(&vec![json!("c"), json!("f")]));
    assert_eq!(unit.default(), Some(&json!("c")));
    assert_eq!(native["properties"]["unit"], json!({"enum": ["c", "f"], "default": "c"}));

    // A default held by the referenced definition; the description beside the `$ref` wins.
    assert_eq!(coercion.by_schema("3", property("level"), &root), Some(json!(3)));
    let level = param(method, "level");
    assert_eq!((level.default(), level.description()), (Some(&json!(3)), Some("How loud.")));
    assert_eq!(level.type_name(), "integer");
    assert_eq!(
        native["properties"]["level"],
        json!({"type": "integer", "default": 3, "description": "How loud."})
    );

    // The nested object behind a `$ref`.
    let place = r#"{"city": "Paris", "zip": 4}"#;
    assert_eq!(coercion.by_schema(place, property("place"), &root), Some(json!({"city": "Paris", "zip": 4})));
    assert_eq!(coercion.by_schema("[1]", property("place"), &root), None);
    assert_eq!(param(method, "place").type_name(), "object");
    assert_eq!(native["properties"]["place"]["required"], json!(["city"]));
}

#[cfg(feature = "runtime")]
#[test]
fn validation_defaults_read_through_references() {
    let validator = tool_calling::tools::ArgumentValidator::new(&parameters()).unwrap();
    let defaults = validator.defaults();
    assert_eq!(Value::Object(defaults), json!({"unit": "c", "level": 3}));
}

/// Every reader refuses the broken reference of `root`'s parameter `x` with `expected`.
fn refused_everywhere(root: Value, expected: SchemaError) {
    let x = &root["properties"]["x"];
    assert_eq!(resolve(&root, x), Err(expected.clone()));
    // Coercion types nothing: the text stays as written, and validation refuses it.
    let coercion = TextCoercion::new();
    assert_eq!(coercion.by_schema("3", x, &root), None);
    assert_eq!(coercion.coerce("3", x, &root), json!("3"));
    // Declarations report the same error, and name no type.
    let tools = tools(root.clone());
    let info = param(&tools[0].methods[0], "x");
    assert_eq!(info.resolution(), Err(expected.clone()));
    assert_eq!(info.type_name(), "any");
    // Gemini, which has no way to refuse, declares an open object.
    assert_eq!(gemini(&root)["properties"]["x"], json!({"type": "object"}));
    // The registry refuses the tool, naming the reference.
    #[cfg(feature = "runtime")]
    registry_refuses(&tools[0], &expected);
    // Every grammar refuses the schema with the same message.
    for id in FORMATS {
        let error = protocol(id).grammar(&tools, &Constraint::new(Dialect::Lark, Scope::Call)).map(|_| ());
        let message = expected.to_string();
        assert!(
            matches!(&error, Err(GrammarError::Schema { method, message: m }) if method == "t_check" && *m == message),
            "{id}: {error:?}"
        );
    }
}

#[test]
fn a_cycle_of_references_is_refused_the_same_way_everywhere() {
    refused_everywhere(cyclic(), SchemaError::Cycle { reference: "#/$defs/A".into() });
}

#[test]
fn a_reference_to_nothing_is_refused_the_same_way_everywhere() {
    refused_everywhere(dangling(), SchemaError::Unresolved { reference: "#/$defs/Nowhere".into() });
}

/// `ToolRegistry::register` refuses `tool` at its parameter `x`'s `$ref` with `expected`.
#[cfg(feature = "runtime")]
fn registry_refuses(tool: &ToolDefinition, expected: &SchemaError) {
    use std::sync::Arc;
    use tool_calling::tools::{
        ArgMap, BoxFuture, Instance, MethodSpec, RegistryError, ToolOutput, ToolRegistry, ToolSpec,
    };

    let run = |_, _: ArgMap| Box::pin(async { Ok(ToolOutput::Text("ok".into())) }) as BoxFuture<'static, _>;
    let spec = ToolSpec::new("t", "T", || Ok(Arc::new(()) as Instance))
        .with_method(MethodSpec::new(tool.methods[0].clone(), run));
    match ToolRegistry::new().register(spec) {
        Err(RegistryError::InvalidSchema { field, reason, .. }) => {
            assert_eq!((field.as_str(), reason), ("/properties/x/$ref", expected.to_string()));
        }
        other => panic!("registered: {other:?}"),
    }
}
