//! The runnable examples, run as a user runs them: their output says what they did.
//! (The tester, `tool-calling`, is a package of its own with its own suite, `cli/tests/`.)

use std::process::{Command, Output};

#[path = "support/example_bin.rs"]
mod example_bin;

/// Runs example `name` with `args`, with no model endpoint configured.
fn run(name: &str, args: &[&str]) -> String {
    let output: Output = Command::new(example_bin::example_path(name))
        .args(args)
        .env_remove("OPENAI_MODEL")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("LIBRARY_TOKEN")
        .output()
        .expect("run the example");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
    assert!(output.status.success(), "{name} failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

/// The position of the line containing `needle`, which must exist.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

#[test]
fn quickstart_runs_the_whole_cycle_the_same_way_every_time() {
    let out = run("quickstart", &[]);
    assert!(out.contains("3. The requests in it (3):"), "{out}");
    assert!(out.contains("INCOMPLETE: the value of `path` is not closed"), "the cut-off request: {out}");
    assert!(out.contains("Hidden: bytes 0..340 are reasoning"), "what was hidden: {out}");
    assert!(
        out.contains("req_1 ok    files_list: lib.rs, protocol/, request.rs"),
        "run by the engine: {out}"
    );
    assert!(out.contains("req_2 ok    notes_write: Saved note \"Refactoring plan\" (3 lines)."), "{out}");
    assert!(out.contains("req_3 error files_count_lines: Not run"), "{out}");
    assert!(!out.contains("shell_run:") && !out.contains("rm -rf build\n    <<<[TOOL_RESULT"), "{out}");
    assert!(out.contains("<<<[TOOL_RESULT]>>>\n    request_id:「始」req_1「末」"), "{out}");
    assert_eq!(out, run("quickstart", &[]), "deterministic");
}

#[test]
fn agent_without_an_endpoint_says_so_and_replays_natively() {
    let out = run("agent", &[]);
    assert!(out.contains("LOCAL RECORDED CONVERSATION"), "labelled: {out}");
    assert!(out.contains("protocol `openai`"), "native tools for a model that has them: {out}");
    // The first call started and finished while the reply was still streaming: before
    // the second call arrived and before the turn ended.
    let first_result = line_of(&out, "◀ calc_add Success: 42.0");
    assert!(first_result < line_of(&out, "▶ text_repeat"), "{out}");
    assert!(first_result < line_of(&out, "end of the model's turn (ToolCalls)"), "{out}");
    assert!(out.contains("◀ text_repeat Success: hello hello hello"), "{out}");
    assert!(
        out.contains("2 + 40 = 42, and the greeting three times"),
        "the results reached the server: {out}"
    );
    assert!(out.contains("2 model turn(s), 2 tool call(s), stopped: Finished"), "{out}");
}

#[test]
fn agent_with_text_offers_the_tools_as_vcp() {
    let out = run("agent", &["--text"]);
    assert!(out.contains("protocol `vcp`"), "{out}");
    assert!(!out.contains("<<<[TOOL_REQUEST]>>>"), "request blocks are not shown as prose: {out}");
    let first_result = line_of(&out, "◀ calc_add Success: 42.0");
    assert!(first_result < line_of(&out, "▶ text_repeat"), "{out}");
    assert!(out.contains("2 + 40 = 42, and the greeting three times"), "{out}");
}

#[test]
fn custom_protocol_answers_every_call_and_runs_the_loop() {
    let out = run("custom_protocol", &[]);
    assert!(out.contains("A damaged reply gives 3 requests, each answered"), "{out}");
    assert!(out.contains("→ Error: division by zero"), "{out}");
    assert!(out.contains("the call is cut off: close it with </tool_call>"), "{out}");
    assert!(out.contains("diagnostic missing_end_marker"), "{out}");
    assert!(out.contains("{\"name\":\"calc_add\",\"status\":\"success\",\"content\":\"42.0\"}"), "{out}");
    assert!(out.contains("The conversation (2 rounds, stopped: Finished)"), "{out}");
}

#[test]
fn rest_tools_calls_a_real_http_server_and_feeds_back_its_404() {
    let out = run("rest_tools", &[]);
    assert!(out.contains("LIBRARY_TOKEN is not set: using a demo token"), "{out}");
    // The prompt describes the configured method with its schema.
    assert!(out.contains("q:「始」(string, required) words of the title「末」"), "{out}");
    assert!(
        out.contains("limit:「始」(integer, optional, default: 5, minimum: 1, maximum: 20)「末」"),
        "{out}"
    );
    // The search went out with its query, the book with its id in the path.
    assert!(out.contains("library_search Success: {\"books\":[{\"id\":1,"), "{out}");
    assert!(out.contains("library_book Success: {\"id\":2,\"title\":\"Rust for Rustaceans\""), "{out}");
    // The POST reached the server (past its token check) and its 404 came back as a result.
    assert!(
        out.contains("library_reserve Error (not_found): POST /books/{id}/reservations answered HTTP 404 Not Found: no book 99"),
        "{out}"
    );
    assert!(out.contains("error_kind:「始」not_found「末」"), "{out}");
}

#[test]
fn mcp_client_calls_the_mcp_server_example_over_stdio() {
    // The client starts the `mcp_server` example as a child process: a round trip through
    // this crate's MCP client and server, over stdio.
    let out = run("mcp_client", &[]);
    assert!(out.contains("== Tools of the MCP server ==\ndemo_calc_add\ndemo_calc_divide\n"), "{out}");
    assert!(!out.contains("demo_calc_secret_internal\n"), "an internal method is not listed: {out}");
    assert!(out.contains("demo_calc_add Success: 42.0"), "{out}");
    assert!(out.contains("demo_calc_divide Error (execution): division by zero"), "{out}");
    assert!(out.contains("demo_calc_secret_internal Error (not_found): No tool method matches"), "{out}");
}

#[test]
fn grammar_shows_what_a_constrained_model_may_write_next() {
    let out = run("grammar", &[]);
    let next = |label: &str| {
        let at = line_of(&out, label);
        out.lines().nth(at + 1).unwrap_or_default().trim().to_string()
    };
    assert_eq!(next("after the start marker"), "next: \"cw\"", "{out}");
    assert_eq!(next("after `command:"), "next: \"f\"", "{out}");
    assert_eq!(next("where `days`"), "next: \"1234567\"", "{out}");
    assert_eq!(next("after the last required field"), "next: \"\\n\"", "{out}");
    assert!(out.contains("The whole call is admitted: true"), "{out}");
    let printed = run("grammar", &["--print"]);
    assert!(printed.starts_with("%llguidance {}"), "{printed}");
}

#[test]
fn gateway_gives_tool_calls_to_a_server_without_a_tools_api() {
    let out = run("gateway", &[]);
    assert!(out.contains("tool call: call_"), "{out}");
    assert!(out.contains("get_weather {\"city\":\"Paris\"}"), "{out}");
    assert!(out.contains("get_time {\"zone\":\"Europe/Paris\"}"), "{out}");
    assert!(out.contains("finish:    Some(ToolCalls)"), "{out}");
    assert!(out.contains("Round two: the weather and the time arrived in a user message."), "{out}");
    // The upstream saw one text conversation, the results in Hermes' own markup.
    assert!(out.contains("user      <tool_response>"), "{out}");
}
