//! Quickstart: two tools, the prompt a model is shown, a realistic reply, and the whole
//! parse → execute → format cycle through the engine.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! The reply (`examples/data/reply.txt`) is what models really write: a `<think>` block
//! that considers a destructive call and drops it, two ordinary requests (one naming a
//! tool and a command, one a full method name, with a multi-line value), and a third
//! request cut off mid-value, as happens when a reply is truncated. The output is the same
//! on every run (ids are numbered, durations shown as 0).

use std::sync::Arc;

use tool_calling::ExecutionStatus;
use tool_calling::prelude::*;
use tool_calling::protocol::RequestIdStyle;
use tool_calling::protocol::vcp::HiddenKind;

#[path = "support/logging.rs"]
mod logging;

/// The project's files (a small fixed tree, so the output is always the same).
#[derive(Default)]
struct Files;

/// Look at the project's files.
#[tool(id = "files")]
impl Files {
    /// List the entries of a directory.
    #[tool_method(param(path, description = "the directory, relative to the project root"))]
    fn list(&self, path: String) -> Result<String, String> {
        match path.trim_end_matches('/') {
            "src" => Ok("lib.rs\nprotocol/\nrequest.rs".to_string()),
            "src/protocol" => Ok("mod.rs\nvcp/".to_string()),
            other => Err(format!("no directory `{other}`")),
        }
    }

    /// Count the lines of a file.
    #[tool_method(param(path, description = "the file, relative to the project root"))]
    fn count_lines(&self, path: String) -> Result<u64, String> {
        match path.as_str() {
            "src/lib.rs" => Ok(120),
            "src/protocol/vcp/parser.rs" => Ok(512),
            other => Err(format!("no file `{other}`")),
        }
    }
}

/// Notes the user can find later.
#[derive(Default)]
struct Notes;

/// Keep notes.
#[tool(id = "notes")]
impl Notes {
    /// Save a note.
    #[tool_method]
    fn write(&self, title: String, body: String) -> String {
        format!("Saved note \"{title}\" ({} lines).", body.lines().count())
    }
}

/// The model's reply, exactly as it arrived.
const REPLY: &str = include_str!("data/reply.txt");

fn indented(text: &str) -> String {
    text.lines().map(|line| format!("    {line}\n")).collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    logging::init();
    // VCP with numbered ids (`req_1`, …) instead of random ones, for a stable output.
    let vcp = VcpProtocol::new(VcpOptions::default().request_ids(RequestIdStyle::Sequential));
    // Every tool marked with #[tool] above, offered and run in VCP.
    let engine = Engine::from_inventory()?.with_protocol(Arc::new(vcp.clone()));

    // 1. What the model is shown: the tools, in VCP's prompt section.
    if let Some(prompt) = engine.declarations(&ExecutionContext::default())?.as_prompt() {
        let lines: Vec<&str> = prompt.lines().collect();
        println!("1. The prompt the model is shown (first 12 of {} lines):\n", lines.len());
        print!("{}", indented(&lines[..12.min(lines.len())].join("\n")));
        println!("    …\n");
    }

    // 2. What the model wrote back.
    println!("2. The model's reply:\n");
    print!("{}", indented(REPLY));

    // 3. What the parser makes of it (the engine does this too; shown here step by step).
    let outcome = vcp.parse(REPLY);
    println!("\n3. The requests in it ({}):\n", outcome.requests.len());
    for request in &outcome.requests {
        println!(
            "    {} → {:?} (bytes {}..{})",
            request.request_id, request.tool_name, request.span.start, request.span.end
        );
        for (key, value) in &request.args {
            println!("        {key} = {value}");
        }
        if !request.complete {
            println!("        INCOMPLETE: {}", request.problems.join(" "));
        }
    }
    for (span, kind) in vcp.hidden_spans(REPLY) {
        if kind == HiddenKind::Reasoning {
            let hidden = span.slice(REPLY).unwrap_or_default();
            println!(
                "\n    Hidden: bytes {}..{} are reasoning ({} lines). Requests inside reasoning are never read,\n    so the `shell_run` in it does not run.",
                span.start,
                span.end,
                hidden.lines().count()
            );
        }
    }
    println!("\n    Diagnostics:");
    for diagnostic in &outcome.diagnostics {
        let span = diagnostic.span;
        println!("    {}..{} {}: {}", span.start, span.end, diagnostic.kind, diagnostic.message);
    }

    // 4. The whole cycle through the engine: route, check, validate, run, format.
    let cycle = engine.run_turn(REPLY, &ExecutionContext::default()).await?;
    println!("\n4. The results (every request gets exactly one):\n");
    for result in &cycle.execution_results {
        let status = if result.status == ExecutionStatus::Success { "ok   " } else { "error" };
        println!(
            "    {} {status} {}: {}",
            result.request_id,
            result.tool_name,
            result.result.replace('\n', ", ")
        );
    }

    // 5. What goes back to the model in its next turn. Durations are set to 0 so that
    //    this output is the same on every run; a real program sends them as measured.
    let results: Vec<ToolExecutionResult> =
        cycle.execution_results.iter().map(|r| r.clone().with_duration_ms(0)).collect();
    println!("\n5. The text fed back to the model:\n");
    let fed_back = vcp.result_messages(&results, &cycle.state);
    print!("{}", indented(&fed_back[0].text()));
    Ok(())
}
