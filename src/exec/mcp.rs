//! Serving the registry's tools over MCP, so that MCP clients in any language can call
//! them: every call goes through [`Executor::invoke`], with the same argument
//! validation, switches, policy, confirmation, time limits and retries as a model's.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::Value;

use super::{ExecutionContext, Executor};
use crate::tools::{DiscoveryService, ToolOutput};
use crate::{Args, ContentPart, Invocation};

/// The tools of an [`Executor`]'s registry as an MCP server.
///
/// It lists the agent-callable methods the context's config switches on (named
/// `toolId_methodName`, with their parameter schemas) and runs `tools/call` through
/// [`Executor::invoke`]. A failed call is an MCP result with `isError` and the same
/// message a model would read; a client's `notifications/cancelled` cancels the call.
///
/// Over stdio (a program an MCP client starts):
///
/// ```no_run
/// use std::sync::Arc;
/// use tool_calling::exec::{Executor, McpToolServer};
/// use tool_calling::tools::ToolRegistry;
///
/// #[tokio::main]
/// async fn main() -> Result<(), Box<dyn std::error::Error>> {
///     let registry = Arc::new(ToolRegistry::from_inventory()?);
///     McpToolServer::new(Executor::new(registry)).serve_stdio().await?;
///     Ok(())
/// }
/// ```
///
/// Over streamable HTTP, as a route of an axum (or any tower) server:
/// `axum::Router::new().nest_service("/mcp", server.http_service())`.
#[derive(Clone)]
pub struct McpToolServer {
    executor: Executor,
    ctx: ExecutionContext,
    name: String,
}

impl std::fmt::Debug for McpToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolServer").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Why serving over stdio stopped with an error.
#[derive(Debug, thiserror::Error)]
#[error("the MCP server stopped: {message}")]
#[non_exhaustive]
pub struct McpServeError {
    /// What happened.
    pub message: String,
}

impl McpToolServer {
    /// A server over `executor`'s tools, with the default context (every tool switched
    /// on, the default time limit).
    pub fn new(executor: Executor) -> Self {
        McpToolServer { executor, ctx: ExecutionContext::default(), name: "tool-calling".to_string() }
    }

    /// Runs calls with `ctx`: its config's switches decide which tools are listed and
    /// callable, its time limit bounds each call, its agent id is what policies see.
    #[must_use]
    pub fn with_context(mut self, ctx: ExecutionContext) -> Self {
        self.ctx = ctx;
        self
    }

    /// The name the server gives in its `initialize` answer.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The tools it lists: every agent-callable method the config switches on (what
    /// [`ToolCallConfig::enabled_definitions`](crate::config::ToolCallConfig::enabled_definitions) offers a model).
    pub fn tools(&self) -> Vec<Tool> {
        let discovery = DiscoveryService::new(self.executor.registry().clone());
        let mut tools = Vec::new();
        for tool in self.ctx.config.enabled_definitions(discovery.registry()) {
            for method in &tool.methods {
                let schema = match &method.parameters {
                    Value::Object(object) => object.clone(),
                    _ => serde_json::Map::new(),
                };
                tools.push(Tool::new(
                    method.full_name(&tool.tool_id),
                    method.description.clone(),
                    Arc::new(schema),
                ));
            }
        }
        tools
    }

    /// Serves one client on standard input and output, until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), McpServeError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| McpServeError { message: format!("the session did not start: {e}") })?;
        running.waiting().await.map_err(|e| McpServeError { message: e.to_string() })?;
        Ok(())
    }

    /// A tower service speaking MCP's streamable HTTP (a session per client), to mount
    /// in a web server. It accepts requests addressed to `localhost` and `127.0.0.1`
    /// only; use [`http_service_with`](Self::http_service_with) to allow other hosts.
    pub fn http_service(self) -> StreamableHttpService<Self, LocalSessionManager> {
        self.http_service_with(StreamableHttpServerConfig::default())
    }

    /// [`http_service`](Self::http_service) with `config` (allowed hosts and origins,
    /// keep-alive, stateless mode).
    pub fn http_service_with(
        self,
        config: StreamableHttpServerConfig,
    ) -> StreamableHttpService<Self, LocalSessionManager> {
        StreamableHttpService::new(move || Ok(self.clone()), Arc::new(LocalSessionManager::default()), config)
    }
}

impl ServerHandler for McpToolServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args: Args = request.arguments.unwrap_or_default().into_iter().collect();
        let call = Invocation::new(request.name.to_string(), args);
        let mut ctx = self.ctx.clone();
        ctx.cancel = self.ctx.cancel.child_token();
        let request_id = format!("mcp-{:?}", context.id);
        let run = self.executor.invoke(&request_id, &call, &ctx);
        tokio::pin!(run);
        let outcome = tokio::select! {
            outcome = &mut run => outcome,
            () = context.ct.cancelled() => {
                // The client gave up: cancel the call, and let it end as cancelled.
                ctx.cancel.cancel();
                run.await
            }
        };
        let result = match outcome {
            Ok(output) => CallToolResult::success(content(output)),
            Err(error) => CallToolResult::error(vec![ContentBlock::text(error.message)]),
        };
        Ok(result.into())
    }
}

/// A tool's output as MCP content blocks.
fn content(output: ToolOutput) -> Vec<ContentBlock> {
    match output {
        ToolOutput::Text(text) => vec![ContentBlock::text(text)],
        ToolOutput::Json(value) => vec![ContentBlock::text(value.to_string())],
        ToolOutput::Parts(parts) => parts
            .into_iter()
            .map(|part| match part {
                ContentPart::Image { mime_type, data_base64 } => ContentBlock::image(data_base64, mime_type),
                other => ContentBlock::text(other.render_text()),
            })
            .collect(),
    }
}
