//! This crate's tools as an MCP server: the demo tools (`cli/src/demo_tools.rs`,
//! defined with `#[tool]`) for any MCP client, in any language.
//!
//! ```text
//! cargo run --features mcp --example mcp_server                        # stdio
//! cargo run --features mcp --example mcp_server -- --http 127.0.0.1:8000 # http://127.0.0.1:8000/mcp
//! ```
//!
//! Over stdio it is the program an MCP client starts (Claude Desktop, an IDE, the
//! `mcp_client` example); over HTTP it serves MCP's streamable HTTP at `/mcp`. Each call
//! runs through the same executor as a model's: the schema, the switches, the policy and
//! the time limits apply, and methods marked internal are neither listed nor callable.

use std::sync::Arc;

use tool_calling::exec::{Executor, McpToolServer};
use tool_calling::tools::ToolRegistry;

#[path = "../cli/src/demo_tools.rs"]
mod demo_tools;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Arc::new(ToolRegistry::from_inventory()?);
    let server = McpToolServer::new(Executor::new(registry)).with_name("tool-calling-demo");
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => server.serve_stdio().await?,
        [flag, address] if flag == "--http" => {
            let listener = tokio::net::TcpListener::bind(address.as_str()).await?;
            // Standard error: standard output is the protocol's, over stdio.
            eprintln!("MCP server at http://{}/mcp", listener.local_addr()?);
            // `http_service()` is a tower service: any HTTP server runs it. Here hyper runs
            // it (through hyper-util's adapter), one task per connection.
            let service = hyper_util::service::TowerToHyperService::new(server.http_service());
            loop {
                let (stream, _) = listener.accept().await?;
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service.clone());
                tokio::spawn(connection);
            }
        }
        _ => return Err("usage: mcp_server [--http ADDRESS]".into()),
    }
    Ok(())
}
