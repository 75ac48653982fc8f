//! Protocol-neutral descriptions of tools, from which protocols write their prompts.
//!
//! The tool layer produces these; protocols consume them. Neither knows the other:
//! a [`ToolDefinition`] is plain data, and a method's parameters are one JSON Schema.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::schema::{self, SchemaError};

/// A tool as a protocol presents it: an id, a display name, and its callable methods.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::ToolDefinition;
///
/// let tool = ToolDefinition::new("calc", "Calculator")
///     .with_description("Arithmetic.")
///     .with_method(
///         MethodDefinition::new("add", "Add two numbers.").with_parameters(json!({
///             "type": "object",
///             "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
///             "required": ["a", "b"]
///         })),
///     );
/// assert_eq!(tool.methods[0].full_name(&tool.tool_id), "calc_add");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// Stable identifier, used in full method names (`toolId_methodName`).
    pub tool_id: String,
    /// Human-readable name.
    pub tool_name: String,
    /// What the tool is for.
    pub description: String,
    /// The agent-callable methods.
    pub methods: Vec<MethodDefinition>,
}

impl ToolDefinition {
    /// A tool with no methods yet.
    pub fn new(tool_id: impl Into<String>, tool_name: impl Into<String>) -> Self {
        ToolDefinition {
            tool_id: tool_id.into(),
            tool_name: tool_name.into(),
            description: String::new(),
            methods: Vec::new(),
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Adds a method.
    #[must_use]
    pub fn with_method(mut self, method: MethodDefinition) -> Self {
        self.methods.push(method);
        self
    }
}

/// One callable method of a tool.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::MethodDefinition;
///
/// let search = MethodDefinition::new("search", "Search the web.").with_parameters(json!({
///     "type": "object",
///     "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 5}},
///     "required": ["query"]
/// }));
/// assert_eq!(search.full_name("web"), "web_search");
/// let names: Vec<&str> = search.parameter_list().iter().map(|p| p.name).collect();
/// assert_eq!(names, ["query", "limit"]);
/// assert!(search.examples.is_empty() && search.protocol_config.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MethodDefinition {
    /// The method's name (without the tool id). An empty name makes the method the tool
    /// itself: its full name is the tool id alone, the way a tool that is one function
    /// (an OpenAI function, an MCP tool) is called by its own name.
    pub name: String,
    /// What the method does.
    pub description: String,
    /// The parameters as a JSON Schema of `"type": "object"`.
    pub parameters: Value,
    /// Settings for particular protocols, by protocol id, opaque to the tool layer: each
    /// protocol reads its own entry (VCP reads `"vcp": {"command": "Alias"}`, the
    /// command a VCP request may use instead of the method's name).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub protocol_config: Map<String, Value>,
    /// Worked examples, shown to the model.
    pub examples: Vec<MethodExample>,
}

impl MethodDefinition {
    /// A method with no parameters.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        MethodDefinition {
            name: name.into(),
            description: description.into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
            protocol_config: Map::new(),
            examples: Vec::new(),
        }
    }

    /// Sets the parameter schema (a JSON Schema object).
    #[must_use]
    pub fn with_parameters(mut self, schema: Value) -> Self {
        self.parameters = schema;
        self
    }

    /// Sets the settings `protocol` reads for this method (see
    /// [`protocol_config`](Self::protocol_config)).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_calling::tools::MethodDefinition;
    /// let write = MethodDefinition::new("write", "Write a file.")
    ///     .with_protocol_config("vcp", json!({"command": "WriteFile"}));
    /// assert_eq!(write.protocol_config_of("vcp").unwrap()["command"], "WriteFile");
    /// ```
    #[must_use]
    pub fn with_protocol_config(mut self, protocol: impl Into<String>, config: Value) -> Self {
        self.protocol_config.insert(protocol.into(), config);
        self
    }

    /// The settings for `protocol`, if any.
    pub fn protocol_config_of(&self, protocol: &str) -> Option<&Value> {
        self.protocol_config.get(protocol)
    }

    /// The alias this method answers to in `protocol` (see [`protocol_alias`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_calling::tools::MethodDefinition;
    /// let write = MethodDefinition::new("write", "Write a file.")
    ///     .with_protocol_config("vcp", json!({"command": "WriteFile"}));
    /// assert_eq!(write.alias("vcp"), Some("WriteFile"));
    /// assert_eq!(write.alias("hermes"), None);
    /// ```
    pub fn alias(&self, protocol: &str) -> Option<&str> {
        protocol_alias(&self.protocol_config, protocol)
    }

    /// Every alias the method declares, as `(protocol, alias)` pairs, in the order of
    /// [`protocol_config`](Self::protocol_config).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_calling::tools::MethodDefinition;
    /// let write = MethodDefinition::new("write", "Write a file.")
    ///     .with_protocol_config("vcp", json!({"command": "WriteFile"}))
    ///     .with_protocol_config("other", json!({"timeout": 3}));
    /// assert_eq!(write.aliases().collect::<Vec<_>>(), [("vcp", "WriteFile")]);
    /// ```
    pub fn aliases(&self) -> impl Iterator<Item = (&str, &str)> {
        self.protocol_config.keys().filter_map(|protocol| {
            Some((protocol.as_str(), protocol_alias(&self.protocol_config, protocol)?))
        })
    }

    /// Adds an example.
    #[must_use]
    pub fn with_example(mut self, example: MethodExample) -> Self {
        self.examples.push(example);
        self
    }

    /// `toolId_methodName`, or the tool id alone for a method named `""` (see
    /// [`full_name`]).
    pub fn full_name(&self, tool_id: &str) -> String {
        full_name(tool_id, &self.name)
    }

    /// The parameters in schema order, read from the schema's `properties` and
    /// `required`. A schema that is not an object yields no parameters.
    pub fn parameter_list(&self) -> Vec<ParameterInfo<'_>> {
        let root = &self.parameters;
        schema::properties(root)
            .into_iter()
            .map(|(name, schema, required)| ParameterInfo {
                name,
                required,
                schema,
                resolved: schema::resolve(root, schema).unwrap_or(schema),
                root,
            })
            .collect()
    }
}

/// A parameter as read from a method's schema.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::MethodDefinition;
///
/// let method = MethodDefinition::new("list", "List files.").with_parameters(json!({
///     "type": "object",
///     "properties": {
///         "dir": {"type": "string", "description": "Where to look."},
///         "sort": {"enum": ["name", "size"], "default": "name"},
///         "tags": {"type": ["array", "null"], "items": {"type": "string"}}
///     },
///     "required": ["dir"]
/// }));
/// let params = method.parameter_list();
/// assert!(params[0].required && params[0].description() == Some("Where to look."));
/// assert_eq!((params[1].type_name(), params[1].default()), ("enum".to_string(), Some(&json!("name"))));
/// assert_eq!(params[1].allowed_values().unwrap().len(), 2);
/// assert_eq!(params[2].type_name(), "array");
/// ```
///
/// A `$ref` is read through its chain of references, as everywhere in the crate (see
/// [`schema`](crate::schema)); one the crate refuses is reported by
/// [`resolution`](Self::resolution):
///
/// ```
/// use serde_json::json;
/// use tool_calling::schema::SchemaError;
/// use tool_calling::tools::MethodDefinition;
///
/// let method = MethodDefinition::new("m", "").with_parameters(json!({
///     "type": "object",
///     "properties": {"n": {"$ref": "#/$defs/alias"}, "bad": {"$ref": "#/$defs/loop"}},
///     "$defs": {"alias": {"$ref": "#/$defs/n"}, "n": {"type": "integer"}, "loop": {"$ref": "#/$defs/loop"}}
/// }));
/// let params = method.parameter_list();
/// assert_eq!(params[0].type_name(), "integer");
/// assert_eq!(params[0].resolution(), Ok(&json!({"type": "integer"})));
/// assert_eq!(params[1].resolution(), Err(SchemaError::Cycle { reference: "#/$defs/loop".into() }));
/// assert_eq!(params[1].type_name(), "any");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ParameterInfo<'a> {
    /// The parameter's name.
    pub name: &'a str,
    /// Whether the schema lists it in `required`.
    pub required: bool,
    /// Its own schema, as written.
    pub schema: &'a Value,
    /// The schema its chain of local `$ref`s ends at (the same as `schema` when it has
    /// no `$ref`, or one the crate refuses: see [`resolution`](Self::resolution)): what
    /// type names and allowed values are read from.
    pub resolved: &'a Value,
    /// The method's whole parameter schema, which references point into.
    root: &'a Value,
}

impl<'a> ParameterInfo<'a> {
    /// The schema its `$ref`s stand for, or why the crate refuses them (a reference to
    /// nothing, a cycle, a chain too long: [`SchemaError`]); the schema itself when it
    /// has no `$ref`.
    pub fn resolution(&self) -> Result<&'a Value, SchemaError> {
        schema::resolve(self.root, self.schema)
    }

    /// A short type name: the schema's `type` (several joined by `|`, `null` left out
    /// when another type remains, as for `Option<T>`), `array<T>` for typed arrays, the
    /// variants of `anyOf`/`oneOf`, `object` or `array` for a schema with `properties` or
    /// `items` only, `enum` for bare enums, else `any`. References are followed
    /// throughout; one the crate refuses reads as `any`.
    pub fn type_name(&self) -> String {
        fn join(mut names: Vec<String>) -> String {
            if names.len() > 1 {
                names.retain(|n| n != "null");
            }
            names.dedup();
            if names.is_empty() { "any".to_string() } else { names.join("|") }
        }
        fn name_of(root: &Value, schema: &Value, depth: usize) -> String {
            let Ok(schema) = schema::resolve(root, schema) else { return "any".to_string() };
            let Value::Object(object) = schema else { return "any".to_string() };
            if depth > MAX_NAME_DEPTH {
                return "any".to_string();
            }
            match object.get("type") {
                Some(Value::String(t)) if t == "array" => match object.get("items") {
                    Some(items) if schema::resolve(root, items).is_ok_and(|i| i.get("type").is_some()) => {
                        format!("array<{}>", name_of(root, items, depth + 1))
                    }
                    _ => "array".to_string(),
                },
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => {
                    join(ts.iter().filter_map(Value::as_str).map(str::to_string).collect())
                }
                _ => {
                    if let Some(variants) =
                        object.get("anyOf").or_else(|| object.get("oneOf")).and_then(Value::as_array)
                    {
                        join(variants.iter().map(|v| name_of(root, v, depth + 1)).collect())
                    } else if let Some(kinds) = schema::kinds(object) {
                        join(kinds.into_iter().map(str::to_string).collect())
                    } else if object.get("enum").is_some() {
                        "enum".to_string()
                    } else {
                        "any".to_string()
                    }
                }
            }
        }
        name_of(self.root, self.schema, 0)
    }

    /// The parameter's description, if the schema has one (the one beside a `$ref`,
    /// else the referenced schema's).
    pub fn description(&self) -> Option<&'a str> {
        schema::annotation(self.root, self.schema, "description").and_then(Value::as_str)
    }

    /// The parameter's default value, if the schema has one (the one beside a `$ref`,
    /// else the referenced schema's).
    pub fn default(&self) -> Option<&'a Value> {
        schema::annotation(self.root, self.schema, "default")
    }

    /// The allowed values, if the schema restricts them with `enum`.
    pub fn allowed_values(&self) -> Option<&Vec<Value>> {
        self.resolved.get("enum").and_then(Value::as_array)
    }
}

/// How deep [`ParameterInfo::type_name`] reads nested items and variants.
const MAX_NAME_DEPTH: usize = 8;

/// An example call of a method: the arguments, optionally the output, and what it shows.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::MethodExample;
///
/// let example = MethodExample::new("Add two small numbers.", json!({"a": 1, "b": 2})).with_output(json!(3));
/// let add = MethodDefinition::new("add", "Add two numbers.").with_example(example);
/// assert_eq!(add.examples[0].input["b"], 2);
/// assert_eq!(add.examples[0].output, Some(json!(3)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MethodExample {
    /// What the example demonstrates.
    pub description: String,
    /// The arguments (an object).
    pub input: Value,
    /// The output the call would give, if worth showing.
    pub output: Option<Value>,
}

impl MethodExample {
    /// An example with arguments `input`.
    pub fn new(description: impl Into<String>, input: Value) -> Self {
        MethodExample { description: description.into(), input, output: None }
    }

    /// Sets the expected output.
    #[must_use]
    pub fn with_output(mut self, output: Value) -> Self {
        self.output = Some(output);
        self
    }
}

/// The full name of method `method` of tool `tool_id`: `toolId_methodName`, or the tool
/// id alone when the method is named `""` (a tool that is one function). Every full
/// name in the crate is made here.
///
/// ```
/// use tool_calling::tools::full_name;
/// assert_eq!(full_name("calc", "add"), "calc_add");
/// assert_eq!(full_name("get_weather", ""), "get_weather");
/// ```
pub fn full_name(tool_id: &str, method: &str) -> String {
    if method.is_empty() { tool_id.to_string() } else { format!("{tool_id}_{method}") }
}

/// The alias a method answers to in `protocol`: the non-empty string `command` of its
/// `protocol_config` entry for that protocol (`"vcp": {"command": "WriteFile"}` makes
/// `WriteFile` the method's VCP command). One accessor for every protocol, so that the
/// registry checks aliases without knowing any protocol, and each protocol reads its
/// own alias the same way.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::protocol_alias;
/// let config = json!({"vcp": {"command": "WriteFile"}, "x": {"command": ""}});
/// let config = config.as_object().unwrap();
/// assert_eq!(protocol_alias(config, "vcp"), Some("WriteFile"));
/// assert_eq!(protocol_alias(config, "x"), None, "an empty alias is none");
/// ```
pub fn protocol_alias<'c>(protocol_config: &'c Map<String, Value>, protocol: &str) -> Option<&'c str> {
    protocol_config.get(protocol)?.get("command")?.as_str().filter(|alias| !alias.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_names() {
        let method = MethodDefinition::new("m", "").with_parameters(json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": ["integer", "null"]},
                "c": {"type": "array", "items": {"type": "number"}},
                "d": {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]},
                "e": {"enum": ["x", "y"]},
                "f": {},
                "g": {"type": ["string", "integer"]},
                "h": {"anyOf": [{"$ref": "#/$defs/Y"}, {"type": "null"}]},
                "i": {"type": "array", "items": {"$ref": "#/$defs/Y"}},
                "j": {"$ref": "#/$defs/Missing"}
            },
            "required": ["a"],
            "$defs": {"X": {"type": "object"}, "Y": {"$ref": "#/$defs/Z"}, "Z": {"type": "integer"}}
        }));
        let names: Vec<(String, bool)> =
            method.parameter_list().iter().map(|p| (p.type_name(), p.required)).collect();
        let expected = [
            ("string", true),
            ("integer", false),
            ("array<number>", false),
            ("object", false),
            ("enum", false),
            ("any", false),
            ("string|integer", false),
            ("integer", false),
            ("array<integer>", false),
            ("any", false),
        ];
        assert_eq!(names, expected.map(|(n, r)| (n.to_string(), r)));
    }
}
