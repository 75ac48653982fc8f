//! Turning a model's arguments into a method's input: defaults, coercion, validation.

use serde_json::{Map, Value};

use super::spec::ArgMap;
use crate::request::Args;

/// One problem with one argument.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::ArgumentValidator;
///
/// let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
/// let validator = ArgumentValidator::new(&schema).unwrap();
/// let errors = validator.validate(&Default::default()).unwrap_err();
/// let error = &errors.0[0];
/// assert_eq!((error.parameter.as_str(), error.rule.as_str()), ("city", "required"));
/// assert_eq!(error.missing.as_deref(), Some("city"));
/// assert_eq!(error.to_string(), "parameter `city` (required): is required but was not given");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgumentError {
    /// The parameter concerned (`""` when the problem is with the arguments as a whole).
    pub parameter: String,
    /// The JSON-Schema keyword that failed (`required`, `type`, `maximum`, …).
    pub rule: String,
    /// What is wrong, in English, with where inside the parameter it is.
    pub message: String,
    /// Where inside the parameter the problem is, as a JSON-pointer path without its
    /// leading `/` (`""` at the parameter itself).
    pub path: String,
    /// The validator's own words for the problem (without where it is).
    pub detail: String,
    /// For a `required` failure, the name that was not given.
    pub missing: Option<String>,
}

impl std::fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.parameter.is_empty() {
            write!(f, "arguments ({}): {}", self.rule, self.message)
        } else {
            write!(f, "parameter `{}` ({}): {}", self.parameter, self.rule, self.message)
        }
    }
}

/// Every problem found with a call's arguments.
///
/// ```
/// use serde_json::json;
/// use tool_calling::tools::{ArgMap, ArgumentValidator};
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "maximum": 10}},
///     "required": ["a"]
/// });
/// let validator = ArgumentValidator::new(&schema).unwrap();
/// let args: ArgMap = serde_json::from_value(json!({"b": 99})).unwrap();
/// let errors = validator.validate(&args).unwrap_err();
/// assert_eq!(errors.0.len(), 2, "every problem, not just the first");
/// assert!(errors.to_string().starts_with("invalid arguments: "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid arguments: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct ArgumentErrors(pub Vec<ArgumentError>);

/// A method's argument checker: its schema and the validator compiled from it.
///
/// Text protocols send every value as a string. Before validation each one is coerced
/// by the type its parameter's schema declares: `"false"` → `false`, `"42"` → `42`,
/// JSON text → arrays and objects, and `""` for an optional parameter → absent. Values
/// that are already JSON (native protocols) are left as they are. Then the arguments
/// are validated with a validator compiled once per method. Errors name the parameter
/// and the rule, in words meant for the model.
///
/// ```
/// use serde_json::json;
/// use tool_calling::Args;
/// use tool_calling::tools::ArgumentValidator;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"count": {"type": "integer"}, "loud": {"type": "boolean", "default": false}},
///     "required": ["count"]
/// });
/// let validator = ArgumentValidator::new(&schema).unwrap();
/// assert_eq!(validator.defaults()["loud"], false);
/// // What a text protocol sends: strings only.
/// let args = validator.coerce(&Args::from([("count".to_string(), json!("3"))]));
/// assert_eq!(args["count"], 3);
/// assert!(validator.validate(&args).is_ok());
/// ```
pub struct ArgumentValidator {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentValidator").field("schema", &self.schema).finish_non_exhaustive()
    }
}

fn json_type_matches(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => false,
    }
}

impl ArgumentValidator {
    /// Compiles `schema`; an invalid schema is an error naming what is wrong.
    pub fn new(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
        Ok(ArgumentValidator { schema: schema.clone(), validator })
    }

    /// The schema this validator checks.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Resolves a local `$ref` (`#/$defs/…`, `#/definitions/…`) one level.
    fn resolve<'s>(&'s self, schema: &'s Value) -> &'s Value {
        match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
            Some(pointer) => self.schema.pointer(pointer).unwrap_or(schema),
            None => schema,
        }
    }

    /// The JSON types a parameter's schema allows, in the order declared (from `type`,
    /// or from the variants of `anyOf`/`oneOf`).
    fn types_of<'s>(&'s self, schema: &'s Value) -> Vec<&'s str> {
        let schema = self.resolve(schema);
        match schema.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => ["anyOf", "oneOf"]
                .iter()
                .filter_map(|k| schema.get(k).and_then(Value::as_array))
                .flatten()
                .flat_map(|variant| self.types_of(variant))
                .collect(),
        }
    }

    /// A string coerced to the first type it fits, or kept as a string.
    fn coerce_string(&self, text: &str, schema: &Value) -> Value {
        let types = self.types_of(schema);
        if types.is_empty() {
            // No declared type: an enum of non-strings may still say what is meant.
            if let Some(values) = self.resolve(schema).get("enum").and_then(Value::as_array)
                && let Ok(parsed) = serde_json::from_str::<Value>(text.trim())
                && values.contains(&parsed)
                && !values.iter().any(|v| v == text)
            {
                return parsed;
            }
            return Value::String(text.to_string());
        }
        if types.contains(&"string") {
            return Value::String(text.to_string());
        }
        let trimmed = text.trim();
        for ty in types {
            let coerced = match ty {
                "integer" => trimmed
                    .parse::<i64>()
                    .ok()
                    .map(Value::from)
                    .or_else(|| trimmed.parse::<u64>().ok().map(Value::from)),
                "number" => trimmed
                    .parse::<i64>()
                    .ok()
                    .map(Value::from)
                    .or_else(|| trimmed.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::from)),
                "boolean" => match trimmed.to_ascii_lowercase().as_str() {
                    "true" => Some(Value::Bool(true)),
                    "false" => Some(Value::Bool(false)),
                    _ => None,
                },
                "null" => (trimmed == "null").then_some(Value::Null),
                "array" | "object" => {
                    serde_json::from_str::<Value>(trimmed).ok().filter(|v| json_type_matches(v, ty))
                }
                _ => None,
            };
            if let Some(value) = coerced {
                return value;
            }
        }
        Value::String(text.to_string())
    }

    /// The defaults the schema declares for its parameters (a parameter's own `default`,
    /// else that of the schema its local `$ref` points to).
    pub fn defaults(&self) -> ArgMap {
        let mut defaults = Map::new();
        if let Some(properties) = self.schema.get("properties").and_then(Value::as_object) {
            for (name, schema) in properties {
                let default = schema.get("default").or_else(|| self.resolve(schema).get("default"));
                if let Some(default) = default {
                    defaults.insert(name.clone(), default.clone());
                }
            }
        }
        defaults
    }

    /// Coerces `args` by the schema (see the module docs); does not validate.
    pub fn coerce(&self, args: &Args) -> ArgMap {
        self.coerce_pairs(args.iter())
    }

    /// Coerces arguments already in a JSON object (e.g. after an argument hook renamed
    /// some); values that are not strings are left as they are.
    pub fn coerce_map(&self, args: &ArgMap) -> ArgMap {
        self.coerce_pairs(args.iter())
    }

    fn coerce_pairs<'a>(&self, args: impl Iterator<Item = (&'a String, &'a Value)>) -> ArgMap {
        let empty = Map::new();
        let properties = self.schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
        let required = super::definition::required_keys(&self.schema);
        let mut out = Map::new();
        for (key, value) in args {
            let coerced = match (value, properties.get(key)) {
                (Value::String(s), _) if s.trim().is_empty() && !required.contains(&key.as_str()) => continue,
                (Value::String(s), Some(schema)) => self.coerce_string(s, schema),
                (other, _) => other.clone(),
            };
            out.insert(key.clone(), coerced);
        }
        out
    }

    /// Validates already-coerced arguments.
    pub fn validate(&self, args: &ArgMap) -> Result<(), ArgumentErrors> {
        let instance = Value::Object(args.clone());
        let errors: Vec<ArgumentError> = self
            .validator
            .iter_errors(&instance)
            .map(|error| {
                let rule = error.kind().keyword().to_string();
                let unescape = |segment: &str| segment.replace("~1", "/").replace("~0", "~");
                let path = error.instance_path().as_str().trim_start_matches('/');
                let (first, inner) = match path.split_once('/') {
                    Some((first, inner)) => (unescape(first), inner.to_string()),
                    None => (unescape(path), String::new()),
                };
                let at = if inner.is_empty() { String::new() } else { format!("at `{inner}`: ") };
                let detail = error.to_string();
                let (parameter, message, missing) = match error.kind() {
                    jsonschema::error::ValidationErrorKind::Required { property } => {
                        let missing = property.as_str().unwrap_or_default().to_string();
                        if first.is_empty() {
                            (missing.clone(), "is required but was not given".to_string(), Some(missing))
                        } else {
                            let message = format!("{at}`{missing}` is required but was not given");
                            (first, message, Some(missing))
                        }
                    }
                    _ => (first, format!("{at}{detail}"), None),
                };
                ArgumentError { parameter, rule, message, path: inner, detail, missing }
            })
            .collect();
        if errors.is_empty() { Ok(()) } else { Err(ArgumentErrors(errors)) }
    }
}
