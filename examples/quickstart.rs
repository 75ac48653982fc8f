//! Quickstart: read the tool requests out of a model reply, then answer them.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! The reply (`examples/data/reply.txt`) holds prose, a `<think>` block with a request
//! that must never run, two ordinary VCP requests (one with a multi-line value) and a
//! third request cut off mid-value, as happens when a reply is truncated.

use tool_calling::{ErrorKind, ToolExecutionResult, VcpProtocol};

/// The model's reply, exactly as it arrived.
const REPLY: &str = include_str!("data/reply.txt");

fn main() {
    // Default options: exact markers, reasoning hidden, random request ids.
    let protocol = VcpProtocol::default();
    let outcome = protocol.parse(REPLY);

    // 1. The requests, in order of appearance. Damaged ones are returned too.
    println!("Found {} request(s):", outcome.requests.len());
    for request in &outcome.requests {
        println!("\n  {} -> {:?}", request.request_id, request.tool_name);
        for (key, value) in &request.args {
            // VCP values are always strings; printed as JSON so newlines show as `\n`.
            println!("    {key} = {value}");
        }
        if request.complete {
            println!("    complete");
        } else {
            println!("    INCOMPLETE: {}", request.problems.join(" "));
        }
        println!("    bytes {}..{} of the reply", request.span.start, request.span.end);
    }

    // 2. Everything the parser noticed and tolerated, with byte offsets.
    println!("\nDiagnostics:");
    for diagnostic in &outcome.diagnostics {
        let span = diagnostic.span;
        println!("  {}..{} {}: {}", span.start, span.end, diagnostic.kind, diagnostic.message);
    }

    // 3. Answer every request. These results are FAKE: a real program would run the
    //    tools here. An incomplete request is never run; the model is told what to fix.
    let results: Vec<ToolExecutionResult> = outcome
        .requests
        .iter()
        .map(|request| {
            let (id, tool) = (&request.request_id, &request.tool_name);
            if !request.complete {
                let why = format!("Not run: {} Please send the request again.", request.problems.join(" "));
                return ToolExecutionResult::error(id, tool, ErrorKind::Validation, why);
            }
            let output = match tool.as_str() {
                "directory-tree" => "lib.rs\nprotocol/\nrequest.rs",
                "notes_write" => "Saved note \"Refactoring plan\".",
                _ => "ok",
            };
            ToolExecutionResult::success(id, tool, output).with_duration_ms(3)
        })
        .collect();

    // 4. The text to send back to the model in its next turn.
    println!("\nResults for the model:\n{}", protocol.format_results(&results));
}
