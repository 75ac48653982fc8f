//! Turning a model's arguments into a method's input: defaults, coercion, validation.

use serde_json::{Map, Value};

use super::coerce::TextCoercion;
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
/// by the type its parameter's schema declares, as [`TextCoercion`] reads text (the one
/// reading every protocol's text goes through): `"false"` → `false`, `"42"` → `42`,
/// JSON text → arrays and objects; and `""` for an optional parameter → absent. Values
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

    /// The defaults the schema declares for its parameters (a parameter's own `default`,
    /// else that of the schema its chain of local `$ref`s ends at).
    pub fn defaults(&self) -> ArgMap {
        let mut defaults = Map::new();
        if let Some(properties) = self.schema.get("properties").and_then(Value::as_object) {
            for (name, schema) in properties {
                if let Some(default) = crate::schema::annotation(&self.schema, schema, "default") {
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
        TextCoercion::new().coerce_args(args, &self.schema)
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
