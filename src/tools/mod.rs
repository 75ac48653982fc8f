//! Tools: what they are ([`ToolSpec`], [`MethodSpec`]), where they are registered
//! ([`ToolRegistry`], at link time with `#[tool]` or at run time), how a call's
//! arguments are read from text ([`TextCoercion`]), put together and checked
//! ([`ArgumentValidator`]), and which of them an
//! agent is offered ([`DiscoveryService`], [`ToolDefinition`]).
//!
//! The tool layer knows nothing of protocols or models. It hands protocols plain data:
//! [`ToolDefinition`]s to write prompts from, and a [`ToolCatalog`] of names to resolve
//! requests against. Tools run through the [`Executor`](crate::exec::Executor).

#[cfg(feature = "runtime")]
mod arguments;
mod catalog;
mod coerce;
mod definition;
#[cfg(feature = "runtime")]
mod discovery;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
#[cfg(feature = "runtime")]
mod registry;
#[cfg(feature = "rest")]
#[cfg_attr(docsrs, doc(cfg(feature = "rest")))]
pub mod rest;
mod spec;

#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub use arguments::{ArgumentError, ArgumentErrors, ArgumentValidator};
pub use catalog::{CatalogMethod, CatalogTool, MAX_SUGGESTION_QUERY, ToolCatalog, closest};
pub use coerce::TextCoercion;
pub use definition::{
    MethodDefinition, MethodExample, ParameterInfo, ToolDefinition, full_name, protocol_alias,
};
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub use discovery::{DiscoveredMethod, DiscoveredTool, DiscoveryService, MethodFilter};
#[cfg(feature = "runtime")]
pub(crate) use registry::Unprepared;
#[cfg(feature = "runtime")]
#[cfg_attr(docsrs, doc(cfg(feature = "runtime")))]
pub use registry::{MethodRef, RegisteredTool, RegistryError, ToolRegistry};
pub use spec::{
    ArgMap, ArgumentHook, BoxFuture, Instance, InstanceFactory, MethodHandler, MethodSpec, ToolMetadata,
    ToolOutput, ToolProvider, ToolRegistration, ToolSpec,
};
