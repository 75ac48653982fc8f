//! MCP tools: the tools of a Model Context Protocol server, run as tools of this crate.
//!
//! [`McpServer`] connects to an MCP server (a child process over stdio, or a URL over
//! streamable HTTP), lists its tools, and turns them into one [`ToolSpec`] whose tool id
//! is the server's name: the server `everything`'s tool `get-sum` is called as
//! `everything_get-sum`, with the input schema the server declared. From there an MCP
//! tool is a tool like any other: listed in every protocol's prompt, its arguments
//! validated, its calls under the executor's policies, time limits and retries.
//!
//! A call is an MCP `tools/call`. Text, image and structured content become the result's
//! parts; a result the server marks `isError` becomes an error result with the server's
//! text. When a call is given up (its time limit, the cycle cancelled) the request future
//! is dropped, and the SDK sends the server `notifications/cancelled` for it. When the
//! server goes away, the calls in flight end with a `network` error, and
//! [`McpServer::reconnect`] starts a new session the same tools use from then on.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tool_calling::prelude::*;
//! use tool_calling::tools::mcp::{McpServer, McpTransport};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let transport = McpTransport::command("npx", ["-y", "@modelcontextprotocol/server-everything"]);
//!     let server = McpServer::connect("everything", transport).await?;
//!     let registry = ToolRegistry::new();
//!     registry.register(server.tool_spec().await?)?;
//!     let engine = Engine::new(Arc::new(registry));
//!     let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」everything_get-sum「末」,\na:「始」2「末」,\nb:「始」40「末」\n<<<[END_TOOL_REQUEST]>>>";
//!     let cycle = engine.run_turn(reply, &ExecutionContext::default()).await?;
//!     assert_eq!(cycle.execution_results[0].result, "The sum of 2 and 40 is 42.");
//!     Ok(())
//! }
//! ```

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Map, Value};
use tokio::sync::RwLock;

use super::spec::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolSpec};
use crate::tools::MethodDefinition;
use crate::{ContentPart, ErrorKind, ToolError};

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP on its standard input and output.
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
    },
    /// A server at a URL, over streamable HTTP.
    StreamableHttp {
        /// The MCP endpoint, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
    },
}

impl McpTransport {
    /// A child process: `program` with `args`.
    ///
    /// ```
    /// use tool_calling::tools::mcp::McpTransport;
    ///
    /// let t = McpTransport::command("node", ["server.js", "stdio"]).with_env("DEBUG", "1");
    /// assert!(matches!(t, McpTransport::Command { ref args, .. } if args.len() == 2));
    /// ```
    pub fn command<I, S>(program: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        McpTransport::Command {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        }
    }

    /// A server at `url`, over streamable HTTP.
    pub fn http(url: impl Into<String>) -> Self {
        McpTransport::StreamableHttp { url: url.into() }
    }

    /// Adds an environment variable for a child process (no effect on HTTP).
    #[must_use]
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Command { env, .. } = &mut self {
            env.push((key.into(), value.into()));
        }
        self
    }
}

/// Why an MCP server could not be reached or listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MCP server `{server}`: {message}")]
#[non_exhaustive]
pub struct McpError {
    /// The server's name.
    pub server: String,
    /// What went wrong.
    pub message: String,
}

type Session = RunningService<RoleClient, ()>;

/// A connection to one MCP server, shared by the tool it becomes. `Send + Sync`, cheap
/// to clone.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    transport: McpTransport,
    session: RwLock<Arc<Session>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.name)
            .field("transport", &self.inner.transport)
            .finish_non_exhaustive()
    }
}

async fn open(name: &str, transport: &McpTransport) -> Result<Session, McpError> {
    let error = |message: String| McpError { server: name.to_string(), message };
    match transport {
        McpTransport::Command { program, args, env } => {
            let command = tokio::process::Command::new(program).configure(|cmd| {
                cmd.args(args);
                cmd.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            });
            let child = TokioChildProcess::new(command)
                .map_err(|e| error(format!("`{program}` could not be started: {e}")))?;
            ().serve(child).await.map_err(|e| error(format!("the MCP session did not start: {e}")))
        }
        McpTransport::StreamableHttp { url } => {
            let http = rmcp::transport::StreamableHttpClientTransport::from_uri(url.clone());
            ().serve(http).await.map_err(|e| error(format!("the MCP session with {url} did not start: {e}")))
        }
    }
}

impl McpServer {
    /// Starts a session with the server at `transport`, to be known as `name` (the
    /// tool id of its tools, so it must be unique among registered tools).
    pub async fn connect(name: impl Into<String>, transport: McpTransport) -> Result<Self, McpError> {
        let name = name.into();
        let session = open(&name, &transport).await?;
        Ok(McpServer { inner: Arc::new(Inner { name, transport, session: RwLock::new(Arc::new(session)) }) })
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Ends the current session (if it is still running) and starts a new one with the
    /// same transport; the tool's calls use the new one from then on.
    pub async fn reconnect(&self) -> Result<(), McpError> {
        let session = open(&self.inner.name, &self.inner.transport).await?;
        let old = std::mem::replace(&mut *self.inner.session.write().await, Arc::new(session));
        old.cancellation_token().cancel();
        Ok(())
    }

    /// Lists the server's tools (every page) and makes them one tool: id = the server's
    /// name, one method per MCP tool, each with its input schema and description.
    pub async fn tool_spec(&self) -> Result<ToolSpec, McpError> {
        let session = self.inner.session.read().await.clone();
        let tools =
            session.list_all_tools().await.map_err(|e| self.error(format!("tools/list failed: {e}")))?;
        let mut spec = ToolSpec::stateless(self.inner.name.clone(), self.inner.name.clone())
            .with_description(format!("Tools of the MCP server `{}`", self.inner.name));
        for tool in tools {
            let tool = serde_json::to_value(&tool)
                .map_err(|e| self.error(format!("a tool could not be read: {e}")))?;
            let Some(name) = tool.get("name").and_then(Value::as_str).map(str::to_string) else {
                continue;
            };
            let description = tool
                .get("description")
                .or_else(|| tool.get("title"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let schema = input_schema(tool.get("inputSchema"));
            let definition = MethodDefinition::new(name.clone(), description).with_parameters(schema);
            let server = self.clone();
            let handler = move |_, args: ArgMap| {
                let server = server.clone();
                let name = name.clone();
                Box::pin(async move { server.call(&name, args).await })
                    as BoxFuture<'static, Result<ToolOutput, ToolError>>
            };
            spec = spec.with_method(MethodSpec::new(definition, handler));
        }
        Ok(spec)
    }

    /// Calls the server's tool `name` with `args` (a `tools/call`).
    pub async fn call(&self, name: &str, args: ArgMap) -> Result<ToolOutput, ToolError> {
        let session = self.inner.session.read().await.clone();
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(args);
        let result = session.call_tool(params).await.map_err(|e| self.call_error(name, &e))?;
        let result = serde_json::to_value(&result)
            .map_err(|e| ToolError::execution(format!("the result of `{name}` could not be read: {e}")))?;
        from_result(name, &result)
    }

    fn error(&self, message: String) -> McpError {
        McpError { server: self.inner.name.clone(), message }
    }

    fn call_error(&self, name: &str, error: &ServiceError) -> ToolError {
        let server = &self.inner.name;
        match error {
            ServiceError::McpError(data) => {
                ToolError::execution(format!("the MCP server `{server}` refused `{name}`: {}", data.message))
            }
            ServiceError::Timeout { .. } => ToolError::new(
                ErrorKind::Timeout,
                format!("the MCP server `{server}` did not answer `{name}` in time"),
            ),
            other => ToolError::network(format!("the MCP server `{server}` could not run `{name}`: {other}")),
        }
    }
}

/// The input schema, as an object schema (a server that declares none takes no
/// parameters).
fn input_schema(schema: Option<&Value>) -> Value {
    match schema {
        Some(Value::Object(object)) => {
            let mut object = object.clone();
            object.entry("type").or_insert_with(|| Value::String("object".into()));
            object.entry("properties").or_insert_with(|| Value::Object(Map::new()));
            Value::Object(object)
        }
        _ => serde_json::json!({ "type": "object", "properties": {} }),
    }
}

/// A `tools/call` result (as JSON) as this crate's output or error.
fn from_result(name: &str, result: &Value) -> Result<ToolOutput, ToolError> {
    let mut parts = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                parts.push(ContentPart::text(block.get("text").and_then(Value::as_str).unwrap_or("")))
            }
            Some("image") => parts.push(ContentPart::image(
                block.get("mimeType").and_then(Value::as_str).unwrap_or("application/octet-stream"),
                block.get("data").and_then(Value::as_str).unwrap_or(""),
            )),
            Some("resource") => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => parts.push(ContentPart::text(text)),
                    None => parts.push(ContentPart::json(resource)),
                }
            }
            // Audio, resource links and kinds to come: passed on as they are.
            _ => parts.push(ContentPart::json(block.clone())),
        }
    }
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    if is_error {
        let text: Vec<String> = parts.iter().map(ContentPart::render_text).collect();
        let message = if text.is_empty() { format!("`{name}` failed") } else { text.join("\n") };
        return Err(ToolError::execution(message));
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        // Structured content is what the tool returned, its text parts a rendering of it.
        if parts.iter().all(|p| matches!(p, ContentPart::Text { .. })) {
            return Ok(ToolOutput::Json(structured.clone()));
        }
        parts.push(ContentPart::json(structured.clone()));
    }
    Ok(match parts.as_slice() {
        [ContentPart::Text { text, .. }] => ToolOutput::Text(text.clone()),
        _ => ToolOutput::Parts(parts),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_map_to_outputs_and_errors() {
        let text = json!({"content": [{"type": "text", "text": "42"}]});
        assert_eq!(from_result("t", &text), Ok(ToolOutput::Text("42".into())));
        let image = json!({"content": [{"type": "text", "text": "a dot"}, {"type": "image", "mimeType": "image/png", "data": "iVBO"}]});
        assert_eq!(
            from_result("t", &image),
            Ok(ToolOutput::Parts(vec![ContentPart::text("a dot"), ContentPart::image("image/png", "iVBO")]))
        );
        let structured =
            json!({"content": [{"type": "text", "text": "{\"t\":21}"}], "structuredContent": {"t": 21}});
        assert_eq!(from_result("t", &structured), Ok(ToolOutput::Json(json!({"t": 21}))));
        let error = json!({"content": [{"type": "text", "text": "disk full"}], "isError": true});
        let error = from_result("t", &error).unwrap_err();
        assert_eq!((error.kind, error.message.as_str()), (ErrorKind::Execution, "disk full"));
        let bare_error = json!({"isError": true});
        assert_eq!(from_result("t", &bare_error).unwrap_err().message, "`t` failed");
        assert_eq!(from_result("t", &json!({})), Ok(ToolOutput::Parts(vec![])));
    }

    #[test]
    fn schemas_become_object_schemas() {
        assert_eq!(input_schema(None), json!({"type": "object", "properties": {}}));
        assert_eq!(
            input_schema(Some(&json!({"properties": {"a": {"type": "number"}}}))),
            json!({"properties": {"a": {"type": "number"}}, "type": "object"})
        );
    }
}
