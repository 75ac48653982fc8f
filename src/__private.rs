//! What the `#[tool]` and `#[tool_fn]` macros' generated code calls: ordinary generic
//! functions over library types, so that the macros only read attributes and write
//! calls (the way an MCP SDK's macros call its router types). Not public API.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

pub use futures;
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ToolError;
use crate::tools::MethodExample;
use crate::tools::{ArgMap, Instance, ToolOutput};

/// One `param(name, keyword = value, …)`: the parameter and its JSON-Schema keywords.
pub type ParamKeywords = (&'static str, Vec<(&'static str, Value)>);

/// The parameter schema of a method whose arguments deserialise into `A`: `A`'s JSON
/// Schema without `$schema` and `title`, each parameter's keywords added, and a
/// parameter with a `default` no longer required (the executor applies the default).
///
/// ```
/// # use tool_calling::__private::{parameters_schema, schemars, serde, serde_json::json};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args { message: String, sep: String }
/// let schema = parameters_schema::<Args>(vec![("sep", vec![("default", json!(" "))])]);
/// assert_eq!(schema["required"], json!(["message"]));
/// assert_eq!(schema["properties"]["sep"]["default"], " ");
/// assert!(schema.get("title").is_none());
/// ```
pub fn parameters_schema<A: schemars::JsonSchema>(params: Vec<ParamKeywords>) -> Value {
    let mut schema: Value = schemars::schema_for!(A).into();
    let Value::Object(root) = &mut schema else { return schema };
    root.remove("$schema");
    root.remove("title");
    let mut defaulted: Vec<&str> = Vec::new();
    if let Some(Value::Object(properties)) = root.get_mut("properties") {
        for (name, keywords) in params {
            let Some(Value::Object(property)) = properties.get_mut(name) else { continue };
            for (keyword, value) in keywords {
                if keyword == "default" {
                    defaulted.push(name);
                }
                property.insert(keyword.to_string(), value);
            }
        }
    }
    if let Some(Value::Array(required)) = root.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| defaulted.contains(&r)));
    }
    schema
}

/// The tool's instance as its own type `T`.
pub fn downcast<T: Any + Send + Sync>(instance: Instance) -> Result<Arc<T>, ToolError> {
    instance
        .downcast::<T>()
        .map_err(|_| ToolError::execution("internal error: the tool's instance is not of the tool's type"))
}

/// The arguments, already validated against the schema, as the method's argument
/// struct.
pub fn parse_args<A: DeserializeOwned>(args: ArgMap) -> Result<A, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::validation(format!("invalid arguments: {e}")))
}

/// A worked example from the JSON text of `example(input = …, output = …)`; text that
/// is not JSON is kept as a string.
pub fn example(description: &str, input: &str, output: Option<&str>) -> MethodExample {
    let json = |text: &str| serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()));
    let example = MethodExample::new(description, json(input));
    match output {
        Some(output) => example.with_output(json(output)),
        None => example,
    }
}

/// What a tool's factory may return for a tool of type `T`: a `T`, or a
/// `Result<T, E: Display>`.
pub trait FactoryOutput<T> {
    /// The instance, or why it could not be made.
    fn into_instance(self, tool_id: &str) -> Result<Instance, ToolError>;
}

impl<T: Any + Send + Sync> FactoryOutput<T> for T {
    fn into_instance(self, _tool_id: &str) -> Result<Instance, ToolError> {
        Ok(Arc::new(self))
    }
}

impl<T: Any + Send + Sync, E: std::fmt::Display> FactoryOutput<T> for Result<T, E> {
    fn into_instance(self, tool_id: &str) -> Result<Instance, ToolError> {
        match self {
            Ok(value) => Ok(Arc::new(value)),
            Err(e) => Err(ToolError::execution(format!("tool `{tool_id}` could not be created: {e}"))),
        }
    }
}

/// The instance of a tool of type `T` from what its factory returned.
pub fn instance<T: Any + Send + Sync, R: FactoryOutput<T>>(
    tool_id: &str,
    made: R,
) -> Result<Instance, ToolError> {
    made.into_instance(tool_id)
}

/// Turning a method's return value into a call result, chosen by the value's type (not
/// by how the type is spelled, so aliases of `Result` work):
///
/// | returned | result |
/// | --- | --- |
/// | `Result<ToolOutput, ToolError>` | as is |
/// | `Result<T: Serialize, ToolError>` | the value serialised; the error as is (its kind kept) |
/// | `ToolOutput` | as is |
/// | `()` | empty text |
/// | `Result<T: Serialize, E: Display>` | the value serialised; the error an execution error with `E`'s message |
/// | `T: Serialize` | the value serialised (a string as text, anything else as JSON) |
///
/// The generated code writes `(&&probe(&out)).kind().convert(out)`: method lookup tries
/// the impls on `&Probe<_>` first, then `&&Probe<_>`, then `Probe<_>`, and the first
/// that applies picks the conversion.
pub mod returns {
    use super::*;

    /// A zero-sized stand-in for a value of type `T`, used only to pick a conversion.
    pub struct Probe<T>(PhantomData<T>);

    /// The probe for `value`'s type.
    pub fn probe<T>(_value: &T) -> Probe<T> {
        Probe(PhantomData)
    }

    /// Converts a `Result<T: Serialize, ToolError>`.
    pub struct ToolResultKind;
    /// Converts a `Result<ToolOutput, ToolError>`.
    pub struct OutputResultKind;
    /// Converts a `ToolOutput`.
    pub struct OutputKind;
    /// Converts `()`.
    pub struct UnitKind;
    /// Converts a `Result<T: Serialize, E: Display>`.
    pub struct ResultKind;
    /// Converts a `T: Serialize`.
    pub struct SerializeKind;

    /// Picks [`ToolResultKind`].
    pub trait ViaToolResult {
        /// The conversion.
        fn kind(&self) -> ToolResultKind {
            ToolResultKind
        }
    }
    impl<T: Serialize> ViaToolResult for &Probe<Result<T, ToolError>> {}

    /// Picks [`OutputResultKind`].
    pub trait ViaOutputResult {
        /// The conversion.
        fn kind(&self) -> OutputResultKind {
            OutputResultKind
        }
    }
    impl ViaOutputResult for &Probe<Result<ToolOutput, ToolError>> {}

    /// Picks [`OutputKind`].
    pub trait ViaOutput {
        /// The conversion.
        fn kind(&self) -> OutputKind {
            OutputKind
        }
    }
    impl ViaOutput for &Probe<ToolOutput> {}

    /// Picks [`UnitKind`].
    pub trait ViaUnit {
        /// The conversion.
        fn kind(&self) -> UnitKind {
            UnitKind
        }
    }
    impl ViaUnit for &Probe<()> {}

    /// Picks [`ResultKind`].
    pub trait ViaResult {
        /// The conversion.
        fn kind(&self) -> ResultKind {
            ResultKind
        }
    }
    impl<T, E> ViaResult for &&Probe<Result<T, E>> {}

    /// Picks [`SerializeKind`].
    pub trait ViaSerialize {
        /// The conversion.
        fn kind(&self) -> SerializeKind {
            SerializeKind
        }
    }
    impl<T> ViaSerialize for Probe<T> {}

    impl ToolResultKind {
        /// The call result.
        pub fn convert<T: Serialize>(self, value: Result<T, ToolError>) -> Result<ToolOutput, ToolError> {
            value.and_then(|v| ToolOutput::from_serialize(&v))
        }
    }

    impl OutputResultKind {
        /// The call result.
        pub fn convert(self, value: Result<ToolOutput, ToolError>) -> Result<ToolOutput, ToolError> {
            value
        }
    }

    impl OutputKind {
        /// The call result.
        pub fn convert(self, value: ToolOutput) -> Result<ToolOutput, ToolError> {
            Ok(value)
        }
    }

    impl UnitKind {
        /// The call result.
        pub fn convert(self, (): ()) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::Text(String::new()))
        }
    }

    impl ResultKind {
        /// The call result.
        pub fn convert<T: Serialize, E: std::fmt::Display>(
            self,
            value: Result<T, E>,
        ) -> Result<ToolOutput, ToolError> {
            match value {
                Ok(v) => ToolOutput::from_serialize(&v),
                Err(e) => Err(ToolError::execution(e.to_string())),
            }
        }
    }

    impl SerializeKind {
        /// The call result.
        pub fn convert<T: Serialize>(self, value: T) -> Result<ToolOutput, ToolError> {
            ToolOutput::from_serialize(&value)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::returns::*;
    use super::*;
    use crate::ErrorKind;

    macro_rules! convert {
        ($value:expr) => {{
            let out = $value;
            (&&probe(&out)).kind().convert(out)
        }};
    }

    type Aliased<T> = std::result::Result<T, String>;

    #[test]
    fn returns_are_converted_by_type_not_by_name() {
        assert_eq!(convert!(()), Ok(ToolOutput::Text(String::new())));
        assert_eq!(convert!("hi".to_string()), Ok(ToolOutput::Text("hi".into())));
        assert_eq!(convert!(2.5), Ok(ToolOutput::Json(serde_json::json!(2.5))));
        assert_eq!(convert!(ToolOutput::Text("t".into())), Ok(ToolOutput::Text("t".into())));
        let ok: Result<ToolOutput, ToolError> = Ok(ToolOutput::Text("o".into()));
        assert_eq!(convert!(ok), Ok(ToolOutput::Text("o".into())));
        let network: Result<u8, ToolError> = Err(ToolError::network("reset"));
        assert_eq!(convert!(network).unwrap_err().kind, ErrorKind::Network, "the error kind is kept");
        let aliased: Aliased<u8> = Err("boom".into());
        assert_eq!(convert!(aliased), Err(ToolError::execution("boom")));
        let io: std::io::Result<u8> = Ok(7);
        assert_eq!(convert!(io), Ok(ToolOutput::Json(serde_json::json!(7))));
    }

    #[test]
    fn factories_may_fail() {
        struct Tool;
        assert!(instance::<Tool, _>("t", Tool).is_ok());
        let failed = instance::<Tool, _>("t", Err::<Tool, _>("no disk"));
        assert_eq!(
            failed.err().map(|e| e.message),
            Some("tool `t` could not be created: no disk".to_string())
        );
    }
}
