//! MCP tools: a model calls the tools of an MCP server through VCP.
//!
//! ```text
//! cargo run --features mcp --example mcp_client                   # starts the mcp_server example
//! cargo run --features mcp --example mcp_client -- npx -y @modelcontextprotocol/server-everything
//! ```
//!
//! With no arguments it starts this crate's own `mcp_server` example (built beside it)
//! as a child process over stdio; any other command that speaks MCP on stdio works the
//! same way. The server's tools are registered under the server's name (`demo`), shown in
//! the prompt like any tool, and one reply calls them: a sum, a division by zero (the
//! server's error, fed back as an error result), and an internal method, which the server
//! does not even list.

use std::sync::Arc;

use tool_calling::prelude::*;
use tool_calling::tools::mcp::{McpServer, McpTransport};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let transport = match args.split_first() {
        Some((program, rest)) => McpTransport::command(program.clone(), rest.to_vec()),
        None => {
            let sibling = std::env::current_exe()?.with_file_name("mcp_server");
            if !sibling.exists() {
                return Err("build the server first: cargo build --features mcp --example mcp_server".into());
            }
            McpTransport::command(sibling.to_string_lossy().into_owned(), Vec::<String>::new())
        }
    };
    let server = McpServer::connect("demo", transport).await?;
    let spec = server.tool_spec().await?;
    let names: Vec<String> = spec.methods.iter().map(|m| m.definition.full_name("demo")).collect();
    println!("== Tools of the MCP server ==\n{}\n", names.join("\n"));
    let registry = ToolRegistry::new();
    registry.register(spec)?;
    let engine = Engine::new(Arc::new(registry));

    let reply = "Let me compute that.
<<<[TOOL_REQUEST]>>>
tool_name:「始」demo_calc_add「末」,
a:「始」2「末」,
b:「始」40「末」
<<<[END_TOOL_REQUEST]>>>
<<<[TOOL_REQUEST]>>>
tool_name:「始」demo_calc_divide「末」,
a:「始」1「末」,
b:「始」0「末」
<<<[END_TOOL_REQUEST]>>>
<<<[TOOL_REQUEST]>>>
tool_name:「始」demo_calc_secret_internal「末」
<<<[END_TOOL_REQUEST]>>>";
    println!("== The reply ==\n{reply}\n");
    let cycle = engine.run_turn(reply, &ExecutionContext::default()).await?;
    println!("== Results ==");
    for result in &cycle.execution_results {
        let kind = result.error_kind.map(|k| format!(" ({k})")).unwrap_or_default();
        println!("{} {:?}{kind}: {}", result.tool_name, result.status, result.result);
    }
    Ok(())
}
