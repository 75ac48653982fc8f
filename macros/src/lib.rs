//! Procedural macros for `tool-calling`: `#[tool]` on an `impl` block and `#[tool_fn]`
//! on a free function. Use them through the `tool_calling` crate
//! (`use tool_calling::{tool, tool_fn};`).
//!
//! The macros are thin. `attrs` reads the attributes, `analysis` checks each
//! method's signature, and `expand` writes code that only names things and calls
//! ordinary generic functions of `tool_calling::__private` (the schema, the instance,
//! the arguments, the conversion of the return value), the way an MCP SDK's macros call
//! its router types. What those functions do is tested in the library.

mod analysis;
mod attrs;
mod expand;

use proc_macro::TokenStream;

/// Turns an `impl` block into a tool: implements `ToolProvider` for the type and
/// registers it at link time (unless `register = false`).
///
/// ```ignore
/// /// Arithmetic on numbers.
/// #[tool(id = "calc", name = "Calculator", category = "math", tags("math"), version = "1.0")]
/// impl Calc {
///     /// Add two numbers.
///     #[tool_method(param(a, description = "first addend"))]
///     fn add(&self, a: f64, b: f64) -> f64 { a + b }
/// }
/// ```
///
/// Keys of `#[tool(...)]`: `id` (required), `name` (defaults to `id`), `description`
/// (defaults to the doc comment), `category`, `tags("a", "b")`, `version`,
/// `documentation_url`, `factory = "path::to::fn"` (a `fn() -> T` or
/// `fn() -> Result<T, E: Display>`; default `T::default()`), `stateful` (one instance
/// per conversation instead of one shared), `register = false`.
///
/// Keys of `#[tool_method(...)]`: `description` (defaults to the doc comment; one of the
/// two is required), `vcp_command = "Alias"`, `example(input = "{json}", output = "...",
/// description = "...")` (repeatable), `internal` (not agent-callable),
/// `validate_with = "path::to::hook"`, `timeout_ms = N`, and `param(name, ...)`
/// (repeatable) with `description`, `default`, `minimum`, `maximum`, `min_length`,
/// `max_length`, `pattern`, `min_items`, `max_items`.
///
/// A method takes `&self` (or nothing) and owned parameters, and may be `async`. It
/// returns `()`, any `Serialize` value, a `ToolOutput`, or a `Result` of these, whatever
/// the `Result` is called (aliases work): an error type of `ToolError` keeps its kind
/// (network errors are retried by a retry policy), any other error becomes an execution
/// error with its message. A synchronous method runs on Tokio's blocking pool, so it may
/// block its thread without holding up other calls, and its time limit still holds.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand::expand_tool(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Turns a free function into a stateless tool with one method.
///
/// ```ignore
/// /// The current time.
/// #[tool_fn(id = "clock", name = "Clock", method = "now")]
/// fn now() -> String { "12:00".into() }
/// ```
///
/// Takes the keys of `#[tool(...)]` (except `factory`, and `stateful`, which is refused:
/// a free function has no instance) and of `#[tool_method(...)]`, plus
/// `method = "name"` (defaults to the function's name). Besides registering the tool
/// (unless `register = false`), it defines `fn <name>_tool_spec() -> ToolSpec` with the
/// function's visibility, for registering by hand.
#[proc_macro_attribute]
pub fn tool_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand::expand_tool_fn(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}
