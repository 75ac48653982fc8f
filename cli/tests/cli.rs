//! Runs the built `tool-calling` binary and checks its command-line contract: JSON
//! shape, byte offsets, exit codes, one-line errors.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

/// The binary under test (cargo builds it before the tests).
fn tester_path() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_tool-calling"))
}

/// A file of the library's tests (`tests/…` at the workspace root).
fn library_test_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests").join(path)
}

/// A file under the temp dir with a unique name, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("tool_calling_cli_{}_{n}_{name}", std::process::id()));
        std::fs::write(&path, contents).expect("write temp file");
        TempFile(path)
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("temp path is UTF-8")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn run(args: &[&str]) -> Output {
    run_with_stdin(args, None)
}

fn run_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(tester_path())
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tool-calling");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin pipe");
        pipe.write_all(bytes).expect("write stdin");
    }
    child.wait_with_output().expect("wait for tool-calling")
}

/// Asserts exit 0 and returns stdout parsed as JSON.
fn success_json(output: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "tool-calling failed; stderr: {stderr}");
    let stdout = std::str::from_utf8(&output.stdout).expect("stdout is UTF-8");
    assert!(stdout.ends_with('\n'), "stdout must end with a newline: {stdout:?}");
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"))
}

/// Asserts exit 2, nothing on stdout, exactly one line on stderr; returns that line.
fn usage_error(output: &Output) -> String {
    let stderr = String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8");
    assert_eq!(output.status.code(), Some(2), "expected exit 2; stderr: {stderr:?}");
    assert!(output.stdout.is_empty(), "stdout must be empty: {:?}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(stderr.matches('\n').count(), 1, "stderr must be exactly one line: {stderr:?}");
    assert!(stderr.ends_with('\n'), "stderr must end with a newline: {stderr:?}");
    let line = stderr.trim_end().to_string();
    assert!(!line.is_empty(), "stderr line is empty");
    line
}

fn keys(value: &Value) -> Vec<&str> {
    value.as_object().expect("a JSON object").keys().map(String::as_str).collect()
}

const START: &str = "<<<[TOOL_REQUEST]>>>";
const END: &str = "<<<[END_TOOL_REQUEST]>>>";

/// One complete request whose args are written `b` before `a` (so order is testable).
fn one_request_reply() -> String {
    format!(
        "Let me add those.\n{START}\ntool_name:「始」calc_add「末」,\nb:「始」2「末」,\na:「始」1「末」\n{END}\nDone."
    )
}

fn expected_one_request(input: &str) -> Value {
    let start = input.find(START).unwrap();
    let end = input.find(END).unwrap() + END.len();
    json!({
        "requests": [{
            "request_id": "req_1",
            "tool_name": "calc_add",
            "args": {"b": "2", "a": "1"},
            "complete": true,
            "problems": [],
            "start": start,
            "end": end,
        }],
        "diagnostics": [],
    })
}

#[test]
fn parse_prints_the_contract_json() {
    let input = one_request_reply();
    let file = TempFile::new("one.txt", input.as_bytes());
    let out = success_json(&run(&["parse", file.arg()]));

    assert_eq!(keys(&out), ["requests", "diagnostics"]);
    let request = &out["requests"][0];
    assert_eq!(keys(request), ["request_id", "tool_name", "args", "complete", "problems", "start", "end"]);
    assert_eq!(keys(&request["args"]), ["b", "a"], "args must keep the order written");
    assert_eq!(out, expected_one_request(&input));

    let (start, end) =
        (request["start"].as_u64().unwrap() as usize, request["end"].as_u64().unwrap() as usize);
    assert!(input[start..end].starts_with(START) && input[start..end].ends_with(END));
}

#[test]
fn parse_spec_example_block() {
    let input = format!("{START}\ntool_name:「始」calc_add「末」,\na:「始」1「末」\n{END}");
    let file = TempFile::new("spec.txt", input.as_bytes());
    let out = success_json(&run(&["parse", file.arg()]));
    assert_eq!(
        out,
        json!({
            "requests": [{
                "request_id": "req_1",
                "tool_name": "calc_add",
                "args": {"a": "1"},
                "complete": true,
                "problems": [],
                "start": 0,
                "end": input.len(),
            }],
            "diagnostics": [],
        })
    );
}

#[test]
fn parse_reads_stdin_and_matches_file_output() {
    let input = one_request_reply();
    let file = TempFile::new("stdin.txt", input.as_bytes());
    let from_file = run(&["parse", file.arg()]);
    let from_stdin = run_with_stdin(&["parse", "-"], Some(input.as_bytes()));
    assert_eq!(success_json(&from_stdin), expected_one_request(&input));
    assert_eq!(from_stdin.stdout, from_file.stdout, "stdin and file output must be identical");
}

#[test]
fn parse_numbers_requests_sequentially() {
    let block = |tool: &str| format!("{START}\ntool_name:「始」{tool}「末」,\nx:「始」1「末」\n{END}\n");
    let with_id =
        format!("{START}\ntool_name:「始」text_echo「末」,\nrequest_id:「始」mine-7「末」\n{END}\n");
    let input = format!("{}{}{}", block("calc_add"), with_id, block("calc_divide"));
    let file = TempFile::new("three.txt", input.as_bytes());
    let out = success_json(&run(&["parse", file.arg()]));
    let ids: Vec<&str> =
        out["requests"].as_array().unwrap().iter().map(|r| r["request_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3, "{out:#}");
    assert_eq!(ids[0], "req_1");
    assert_eq!(ids[1], "mine-7");
    assert!(ids[2].starts_with("req_") && ids[2] != "req_1", "{ids:?}");
    assert!(out["requests"][1]["args"].as_object().unwrap().is_empty(), "request_id is not an arg");
}

#[test]
fn parse_reports_truncated_request_and_diagnostics() {
    let input = format!("{START}\ntool_name:「始」text_echo「末」,\nmessage:「始」hello wor");
    let file = TempFile::new("truncated.txt", input.as_bytes());
    let out = success_json(&run(&["parse", file.arg()]));
    let request = &out["requests"][0];
    assert_eq!(request["tool_name"], "text_echo");
    assert_eq!(request["args"], json!({"message": "hello wor"}));
    assert_eq!(request["complete"], false);
    let problems = request["problems"].as_array().unwrap();
    assert!(!problems.is_empty() && problems.iter().all(|p| p.as_str().is_some_and(|p| !p.is_empty())));
    assert_eq!(request["start"], 0);
    assert_eq!(request["end"], input.len());

    let diagnostics = out["diagnostics"].as_array().unwrap();
    assert!(diagnostics.iter().any(|d| d["kind"] == "unclosed_value"), "{out:#}");
    for d in diagnostics {
        assert_eq!(keys(d), ["kind", "message", "start", "end"]);
        let (start, end) = (d["start"].as_u64().unwrap(), d["end"].as_u64().unwrap());
        assert!(start <= end && end as usize <= input.len(), "{d}");
    }
}

#[test]
fn parse_keep_think_flag() {
    let input = format!(
        "<think>\n{START}\ntool_name:「始」calc_add「末」,\na:「始」1「末」\n{END}\n</think>\nNo call."
    );
    let file = TempFile::new("think.txt", input.as_bytes());
    let hidden = success_json(&run(&["parse", file.arg()]));
    assert_eq!(hidden["requests"], json!([]));
    let kept = success_json(&run(&["parse", "--keep-think", file.arg()]));
    assert_eq!(kept["requests"][0]["tool_name"], "calc_add");
    assert_eq!(kept["requests"][0]["start"], input.find(START).unwrap());
}

#[test]
fn parse_skip_fenced_flag() {
    let input = format!("```\n{START}\ntool_name:「始」calc_add「末」,\na:「始」1「末」\n{END}\n```\n");
    let file = TempFile::new("fenced.txt", input.as_bytes());
    let parsed = success_json(&run(&["parse", file.arg()]));
    assert_eq!(parsed["requests"][0]["tool_name"], "calc_add");
    let skipped = success_json(&run(&["parse", "--skip-fenced", file.arg()]));
    assert_eq!(skipped["requests"], json!([]));
}

#[test]
fn parse_fuzzy_flag() {
    let input =
        "<<[tool_request]>>\ntool_name:「始」calc_add「末」,\na:「始」1「末」\n<<[END_TOOL_REQUEST]>>";
    let file = TempFile::new("fuzzy.txt", input.as_bytes());
    let exact = success_json(&run(&["parse", file.arg()]));
    assert_eq!(exact["requests"], json!([]));
    let fuzzy = success_json(&run(&["parse", "--fuzzy", file.arg()]));
    assert_eq!(fuzzy["requests"][0]["tool_name"], "calc_add");
    assert_eq!(fuzzy["requests"][0]["end"], input.len());
}

#[test]
fn parse_without_requests_prints_empty_lists() {
    let file = TempFile::new("prose.txt", "Just prose, no tools. 「始」 <<<[END_TOOL_REQUEST]>>>".as_bytes());
    let out = success_json(&run(&["parse", file.arg()]));
    assert_eq!(out["requests"], json!([]));
    assert_eq!(keys(&out), ["requests", "diagnostics"]);
}

#[test]
fn bad_flag_is_a_one_line_usage_error() {
    let file = TempFile::new("flag.txt", b"hi");
    let line = usage_error(&run(&["parse", "--no-such-flag", file.arg()]));
    assert!(line.contains("--no-such-flag"), "{line}");
}

#[test]
fn missing_arguments_and_subcommands_are_one_line_errors() {
    usage_error(&run(&[]));
    usage_error(&run(&["parse"]));
    usage_error(&run(&["frobnicate"]));
    usage_error(&run(&["parse", "--protocol", "smoke-signals", "-"]));
}

#[test]
fn missing_file_is_a_one_line_error() {
    let missing =
        std::env::temp_dir().join(format!("tool_calling_cli_{}_does_not_exist.txt", std::process::id()));
    let line = usage_error(&run(&["parse", missing.to_str().unwrap()]));
    assert!(line.starts_with("tool-calling: "), "{line}");
    assert!(line.contains("does_not_exist.txt"), "the message names the file: {line}");
    usage_error(&run(&["bench", missing.to_str().unwrap()]));
}

#[test]
fn invalid_utf8_names_the_byte_offset() {
    // "héllo " is 7 bytes (é is two), then a lone continuation byte.
    let mut bytes = "héllo ".as_bytes().to_vec();
    let offset = bytes.len();
    bytes.extend_from_slice(&[0x80, b'x']);
    let file = TempFile::new("bad.txt", &bytes);
    let line = usage_error(&run(&["parse", file.arg()]));
    assert_eq!(line, format!("tool-calling: input is not valid UTF-8 at byte offset {offset}"));

    let from_stdin = usage_error(&run_with_stdin(&["parse", "-"], Some(&bytes)));
    assert_eq!(from_stdin, line);
    assert_eq!(usage_error(&run(&["bench", file.arg()])), line);
}

/// A native fixture's path.
fn native_fixture(provider: &str, name: &str) -> String {
    library_test_file(&format!("fixtures/native/{provider}/{name}")).to_string_lossy().into_owned()
}

const NATIVE: [&str; 4] = ["openai", "openai_responses", "anthropic", "gemini"];

#[test]
fn native_parse_reads_bodies_and_streams_alike_at_every_chunk_size() {
    for provider in NATIVE {
        let body = native_fixture(provider, "two_calls_reasoning.json");
        let one_shot = success_json(&run(&["parse", "--protocol", provider, &body]));
        let names: Vec<&str> = one_shot["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["tool_name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["get_weather", "calc_add"], "{provider}");
        assert_eq!(one_shot["requests"][1]["args"], json!({"a": 2, "b": 40}), "{provider}");
        let sse = native_fixture(provider, "two_calls_reasoning.sse");
        for n in ["1", "7", "64", "100000"] {
            let streamed = success_json(&run(&["parse", "--protocol", provider, "--stream-chunk", n, &sse]));
            assert_eq!(streamed, one_shot, "{provider} --stream-chunk {n}");
        }
    }
    let not_json = TempFile::new("not_json.txt", b"<<<[TOOL_REQUEST]>>>");
    let line = usage_error(&run(&["parse", "--protocol", "openai", not_json.arg()]));
    assert!(line.contains("not a JSON response body"), "{line}");
}

#[test]
fn native_prompt_prints_the_tools_value() {
    let tools = |protocol: &str| success_json(&run(&["prompt", "--protocol", protocol]));
    assert_eq!(tools("openai")[0]["function"]["name"], "calc_add");
    assert_eq!(tools("openai")[0]["type"], "function");
    assert_eq!(tools("openai_responses")[0]["name"], "calc_add");
    assert_eq!(tools("anthropic")[0]["input_schema"]["type"], "object");
    let gemini = tools("gemini");
    assert_eq!(gemini[0]["functionDeclarations"][0]["name"], "calc_add");
    assert!(gemini.to_string().contains("text_label"));
    assert!(!gemini.to_string().contains("secret_internal"));
}

#[test]
fn native_cycle_gives_the_context_in_each_providers_shape() {
    let cycle = |provider: &str| {
        success_json(&run(&[
            "cycle",
            "--protocol",
            provider,
            &native_fixture(provider, "two_calls_reasoning.json"),
        ]))
    };
    // get_weather is no demo tool (an error); calc_add is.
    let openai = cycle("openai");
    assert_eq!(openai["results"][1]["result"], "42.0");
    assert_eq!(
        openai["context"],
        json!([
            {"role": "tool", "tool_call_id": "call_00_Qm3vX8rT1kLw5Zp9NcB2aYe7", "content": openai["results"][0]["result"]},
            {"role": "tool", "tool_call_id": "call_01_Hd6sJ4gU0fVn2Rq8WtK1oLx3", "content": "42.0"}
        ])
    );
    let responses = cycle("openai_responses");
    assert_eq!(
        responses["context"][1],
        json!({"type": "function_call_output", "call_id": "call_Yj6fP3sD1nQa8ZuE4kMw2hBt", "output": "42.0"})
    );
    let anthropic = cycle("anthropic");
    let message = &anthropic["context"];
    assert_eq!(message["role"], "user");
    assert_eq!(message["content"][0]["type"], "tool_result");
    assert_eq!(message["content"][0]["tool_use_id"], "toolu_01Gh5NkT8wQz3VmX1cRb7JpL");
    assert_eq!(message["content"][0]["is_error"], true);
    assert_eq!(message["content"][1]["is_error"], false);
    let gemini = cycle("gemini");
    let parts = &gemini["context"]["parts"];
    assert_eq!(gemini["context"]["role"], "user");
    assert_eq!(
        parts[1]["functionResponse"],
        json!({"id": "m8w3ty6v", "name": "calc_add", "response": {"output": 42.0}})
    );
    assert!(parts[0]["functionResponse"]["response"].get("error").is_some());
}

#[test]
fn native_cycle_answers_bad_arguments_without_running_anything() {
    for provider in NATIVE {
        let out = success_json(&run(&[
            "cycle",
            "--protocol",
            provider,
            &native_fixture(provider, "bad_arguments.json"),
        ]));
        for result in out["results"].as_array().unwrap() {
            if result["status"] == "success" {
                continue; // Gemini's call without `args` is a call without arguments.
            }
            let text = result["result"].as_str().unwrap();
            assert!(
                text.contains("not valid JSON")
                    || text.contains("not a JSON object")
                    || text.contains("no tool method"),
                "{provider}: {text}"
            );
        }
    }
}

const RESULT_KEYS: [&str; 6] = ["request_id", "tool_name", "status", "result", "error_kind", "duration_ms"];

/// Runs `exec` with `args`, asserts exit 0 and the result's keys, returns the result.
fn exec(args: &[&str]) -> Value {
    let mut full = vec!["exec"];
    full.extend_from_slice(args);
    let out = success_json(&run(&full));
    assert_eq!(keys(&out), RESULT_KEYS, "{out:#}");
    assert_eq!(out["request_id"], "req_1");
    assert!(out["duration_ms"].is_u64(), "{out:#}");
    out
}

#[test]
fn exec_success_coerces_string_arguments() {
    let out = exec(&["calc_add", "--args", r#"{"a":"2","b":"40"}"#]);
    assert_eq!(out["tool_name"], "calc_add");
    assert_eq!(out["status"], "success");
    assert_eq!(out["result"], "42.0");
    assert_eq!(out["error_kind"], Value::Null);
}

#[test]
fn exec_routes_tool_id_and_command() {
    let out = exec(&["calc", "--command", "add", "--args", r#"{"a":1,"b":2}"#]);
    assert_eq!(out["tool_name"], "calc_add");
    assert_eq!(out["status"], "success");
    assert_eq!(out["result"], "3.0");
}

#[test]
fn exec_label_gets_its_control_key_named_arguments_unless_routed_as_vcp() {
    let out = exec(&["text_label", "--args", r#"{"ink":"blue","river":"Thames"}"#]);
    assert_eq!((out["status"].as_str(), out["result"].as_str()), (Some("success"), Some("Thames in blue")));
    // Routed as a VCP request, `ink` and `river` steer the host and never reach the tool.
    let out = exec(&["text", "--command", "label", "--args", r#"{"ink":"blue","river":"Thames"}"#]);
    assert_eq!(out["error_kind"], "validation", "{out:#}");
}

#[test]
fn cycle_under_vcp_keeps_control_keys_from_the_tool() {
    let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」text_label「末」,\nink:「始」blue「末」,\nriver:「始」Thames「末」\n<<<[END_TOOL_REQUEST]>>>";
    let out = success_json(&run_with_stdin(&["cycle", "-"], Some(reply.as_bytes())));
    assert_eq!(out["parsed"][0]["args"], json!({"ink": "blue", "river": "Thames"}));
    assert_eq!(out["results"][0]["error_kind"], "validation");
}

#[test]
fn exec_tool_error_is_a_result_not_a_usage_error() {
    let out = exec(&["calc_divide", "--args", r#"{"a":1,"b":0}"#]);
    assert_eq!(out["status"], "error");
    assert_eq!(out["error_kind"], "execution");
    assert_eq!(out["result"], "division by zero");
}

#[test]
fn exec_validation_error_names_the_field() {
    let out = exec(&["text_repeat", "--args", r#"{"message":"hi","times":11}"#]);
    assert_eq!(out["status"], "error");
    assert_eq!(out["error_kind"], "validation");
    let message = out["result"].as_str().unwrap();
    assert!(message.contains("times"), "{message}");
}

#[test]
fn exec_internal_method_is_refused() {
    let out = exec(&["calc_secret_internal", "--args", "{}"]);
    assert_eq!(out["status"], "error");
    assert_eq!(out["error_kind"], "permission");
}

/// A method that does not exist is bad usage, not a result: exit 2, one line, the
/// closest name suggested.
#[test]
fn exec_unknown_name_is_a_usage_error_that_suggests_the_closest() {
    let message = usage_error(&run(&["exec", "calc_ad", "--args", "{}"]));
    assert!(message.starts_with("tool-calling: "), "{message}");
    assert!(message.contains("calc_add"), "{message}");
    // Routed as VCP (a tool id and a command), an unknown command is the same.
    let message = usage_error(&run(&["exec", "calc", "--command", "multiply", "--args", "{}"]));
    assert!(message.contains("multiply"), "{message}");
    let message = usage_error(&run(&["exec", "nosuchtool", "--args", "{}"]));
    assert!(message.contains("nosuchtool"), "{message}");
}

#[test]
fn exec_timeout() {
    let out = exec(&["text_sleep", "--timeout-ms", "50", "--args", r#"{"ms":2000}"#]);
    assert_eq!(out["status"], "error");
    assert_eq!(out["error_kind"], "timeout");
    // A timeout proves the call was not waited for; it cannot fire before its limit.
    assert!(out["duration_ms"].as_u64().unwrap() >= 50, "{out:#}");
}

#[test]
fn exec_bad_args_are_one_line_usage_errors() {
    let line = usage_error(&run(&["exec", "calc_add", "--args", "[1, 2]"]));
    assert!(line.contains("--args") && line.contains("object"), "{line}");
    let line = usage_error(&run(&["exec", "calc_add", "--args", "{not json"]));
    assert!(line.contains("--args") && line.contains("JSON"), "{line}");
    let line = usage_error(&run(&["exec", "calc_add"]));
    assert!(line.contains("--args"), "{line}");
    usage_error(&run(&["exec", "--args", "{}"]));
    usage_error(&run(&["exec", "calc", "--command", "add", "--args", r#"{"command":"add"}"#]));
    usage_error(&run(&["exec", "calc_add", "--timeout-ms", "0", "--args", "{}"]));
}

#[test]
fn cycle_runs_parses_executes_and_formats() {
    let input = format!(
        "Two calls.\n{START}\ntool_name:「始」calc_add「末」,\na:「始」2「末」,\nb:「始」40「末」\n{END}\n\
         {START}\ntool_name:「始」text_repeat「末」,\nmessage:「始」hi「末」,\ntimes:「始」11「末」\n{END}\nDone."
    );
    let file = TempFile::new("cycle.txt", input.as_bytes());
    for serial in [false, true] {
        let mut args = vec!["cycle"];
        if serial {
            args.push("--serial");
        }
        args.push(file.arg());
        let out = success_json(&run(&args));
        assert_eq!(&keys(&out)[..4], ["has_tool_requests", "parsed", "results", "context"]);
        assert_eq!(out["has_tool_requests"], true);

        // `parsed` is exactly what `parse` prints as `requests`.
        let parsed = success_json(&run(&["parse", file.arg()]));
        assert_eq!(out["parsed"], parsed["requests"]);

        let results = out["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "{out:#}");
        for (result, parsed) in results.iter().zip(out["parsed"].as_array().unwrap()) {
            assert_eq!(keys(result), RESULT_KEYS);
            assert_eq!(result["request_id"], parsed["request_id"]);
        }
        assert_eq!(results[0]["request_id"], "req_1");
        assert_eq!(results[0]["tool_name"], "calc_add");
        assert_eq!(results[0]["status"], "success");
        assert_eq!(results[0]["result"], "42.0");
        assert_eq!(results[1]["request_id"], "req_2");
        assert_eq!(results[1]["status"], "error");
        assert_eq!(results[1]["error_kind"], "validation");
        assert!(results[1]["result"].as_str().unwrap().contains("times"));

        let context = out["context"].as_str().unwrap();
        assert_eq!(context.matches("<<<[TOOL_RESULT]>>>").count(), 2, "{context}");
        assert!(context.contains("req_1") && context.contains("req_2"), "{context}");
    }
}

#[test]
fn cycle_on_prose_has_no_requests() {
    let out = success_json(&run_with_stdin(&["cycle", "-"], Some("Just prose, nothing to run.".as_bytes())));
    assert_eq!(out["has_tool_requests"], false);
    assert_eq!(out["parsed"], json!([]));
    assert_eq!(out["results"], json!([]));
    assert_eq!(out["context"], "");
}

fn method_names(discovered: &Value) -> Vec<(String, bool)> {
    discovered["tools"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| {
            let id = t["tool_id"].as_str().unwrap().to_string();
            t["methods"].as_array().unwrap().iter().map(move |m| {
                (format!("{id}_{}", m["name"].as_str().unwrap()), m["agent_callable"].as_bool().unwrap())
            })
        })
        .collect()
}

#[test]
fn discover_lists_the_demo_tools_and_hides_the_internal_method() {
    let out = run(&["discover"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let discovered: Value = serde_json::from_slice(&out.stdout).unwrap();
    let callable = [
        ("calc_add", true),
        ("calc_divide", true),
        ("text_echo", true),
        ("text_repeat", true),
        ("text_sleep", true),
        ("text_label", true),
    ];
    assert_eq!(method_names(&discovered), callable.map(|(n, c)| (n.to_string(), c)));
    let calc = &discovered["tools"][0];
    assert_eq!(calc["tool_name"], "Calculator");
    assert_eq!(calc["category"], "math");
    let repeat = &discovered["tools"][1]["methods"][1];
    assert_eq!(
        repeat["parameters"],
        json!([
            {"name": "message", "type": "string", "required": true, "default": null, "description": "the text to repeat"},
            {"name": "times", "type": "integer", "required": true, "default": null, "description": "how many copies, 1 to 10"},
            {"name": "sep", "type": "string", "required": false, "default": " ", "description": "what goes between copies"}
        ])
    );
    assert_eq!(repeat["schema"]["properties"]["times"]["maximum"], 10);

    let all: Value = serde_json::from_slice(&run(&["discover", "--all"]).stdout).unwrap();
    assert!(method_names(&all).contains(&("calc_secret_internal".to_string(), false)));
}

#[test]
fn prompt_is_plain_text_in_both_languages_without_the_internal_method() {
    for (lang, heading) in [("en", "Tool: Calculator (calc)"), ("zh", "工具：Calculator (calc)")] {
        let out = run(&["prompt", "--lang", lang]);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(heading), "{lang}");
        assert!(text.contains("command:「始」repeat「末」"));
        assert!(text.contains("times:「始」(integer, ") && text.contains("maximum: 10"));
        assert!(!text.contains("secret_internal"), "{lang}");
    }
}

#[test]
fn help_and_version_exit_zero() {
    for flag in ["--help", "--version"] {
        let out = run(&[flag]);
        assert_eq!(out.status.code(), Some(0), "{flag}");
        assert!(!out.stdout.is_empty(), "{flag} prints to stdout");
    }
    let out = run(&["parse", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--skip-fenced"));
}

fn bench_output(input: &str, iterations: &str) -> Value {
    let file = TempFile::new("bench.txt", input.as_bytes());
    let out = success_json(&run(&["bench", "--iterations", iterations, file.arg()]));
    assert_eq!(keys(&out), ["api", "bytes", "requests", "iterations", "median_ns", "mb_per_s"]);
    out
}

#[test]
fn bench_prints_the_figures_and_the_api_it_timed() {
    let input = one_request_reply().repeat(5);
    let out = bench_output(&input, "7");
    assert_eq!(out["api"], "pull", "VCP's fastest complete parse");
    assert_eq!(out["bytes"], input.len());
    assert_eq!(out["iterations"], 7);
    assert!(out["requests"].is_u64());
    assert!(out["median_ns"].is_u64());
    let mb_per_s = out["mb_per_s"].as_f64().expect("mb_per_s is a number");
    assert!(mb_per_s.is_finite() && mb_per_s > 0.0, "{out}");
}

#[test]
fn bench_counts_requests_and_defaults_to_20_iterations() {
    let input = one_request_reply().repeat(3);
    let file = TempFile::new("bench_default.txt", input.as_bytes());
    let out = success_json(&run(&["bench", file.arg()]));
    assert_eq!(out["iterations"], 20);
    assert_eq!(out["requests"], 3);
    let owned = success_json(&run(&["bench", "--owned", "--iterations", "2", file.arg()]));
    assert_eq!((owned["api"].as_str(), owned["requests"].as_u64()), (Some("owned"), Some(3)));
    // Each API counts the same requests; the APIs' method names are accepted for them.
    for (api, alias) in [("pull", "view_events"), ("view", "parse_view"), ("owned", "parse")] {
        for name in [api, alias] {
            let out = success_json(&run(&["bench", "--api", name, "--iterations", "2", file.arg()]));
            assert_eq!((out["api"].as_str(), out["requests"].as_u64()), (Some(api), Some(3)), "--api {name}");
        }
    }
    usage_error(&run(&["bench", "--api", "fastest", file.arg()]));
}

#[test]
fn bench_rejects_zero_iterations() {
    let file = TempFile::new("bench_zero.txt", b"hi");
    let line = usage_error(&run(&["bench", "--iterations", "0", file.arg()]));
    assert!(line.contains("--iterations"), "{line}");
}

/// The flags a corpus case's JSON names (`{"flags": ["--fuzzy", …]}`), as arguments.
fn case_flags(case_json: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(case_json).unwrap_or_else(|e| panic!("{}: {e}", case_json.display()));
    let case: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", case_json.display()));
    let flags: Vec<String> = case["flags"]
        .as_array()
        .map(|flags| flags.iter().map(|f| f.as_str().expect("flags are strings").to_string()).collect())
        .unwrap_or_default();
    for flag in &flags {
        assert!(["--fuzzy", "--skip-fenced", "--keep-think"].contains(&flag.as_str()), "unknown flag {flag}");
    }
    flags
}

/// Every corpus reply (the library's `tests/corpus/vcp/` and `tests/corpus/vcp-extra/`),
/// with its flags.
fn corpus_cases() -> Vec<(PathBuf, Vec<String>)> {
    let root = library_test_file("corpus");
    let mut cases = Vec::new();
    for dir in ["vcp", "vcp-extra"] {
        let dir = root.join(dir);
        let mut txts: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        txts.sort();
        assert!(!txts.is_empty(), "no cases in {}", dir.display());
        cases.extend(txts.into_iter().map(|txt| {
            let flags = case_flags(&txt.with_extension("json"));
            (txt, flags)
        }));
    }
    cases
}

/// `parse` with `flags` and then `extra` on `file`: asserts exit 0, returns stdout.
fn parse_stdout(flags: &[String], extra: &[&str], file: &str) -> Vec<u8> {
    let mut args: Vec<&str> = vec!["parse"];
    args.extend(flags.iter().map(String::as_str));
    args.extend_from_slice(extra);
    args.push(file);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// The contract: `parse --stream-chunk N` prints exactly what one-shot `parse` prints, for
/// every corpus case with its options, at N = 1 (every character its own chunk) and N = 7
/// (cuts inside markers, value brackets and multi-byte characters).
#[test]
fn parse_stream_chunk_matches_one_shot_on_every_corpus_case() {
    let cases = corpus_cases();
    assert!(cases.len() >= 100, "only {} corpus cases", cases.len());
    // Two workers: a few hundred short-lived processes.
    let next = AtomicUsize::new(0);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let mut failures = Vec::new();
                    while let Some((txt, flags)) = cases.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let file = txt.to_str().expect("corpus path is UTF-8");
                        let one_shot = parse_stdout(flags, &[], file);
                        for n in ["1", "7"] {
                            let streamed = parse_stdout(flags, &["--stream-chunk", n], file);
                            if streamed != one_shot {
                                failures.push(format!(
                                    "{} {flags:?} --stream-chunk {n}:\n--- one-shot\n{}\n--- streamed\n{}",
                                    txt.display(),
                                    String::from_utf8_lossy(&one_shot),
                                    String::from_utf8_lossy(&streamed)
                                ));
                            }
                        }
                    }
                    failures
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("worker panicked")).collect()
    });
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

/// Chunk sizes around the input's length and inside multi-byte characters (a 1- or 2-byte
/// budget cannot hold `始`, so that chunk takes the whole character), every option on, and
/// standard input.
#[test]
fn parse_stream_chunk_any_size_and_stdin() {
    let input = format!(
        "<think>plan 「末」</think>前言 ✓ {}\r\n`{START}` is a mention.\n```\n{START}\ntool_name:「始」text_echo「末」\n{END}\n```\n\
         <<[tool_request]>>>>\nTOOL_NAME:{{始}}calc_add{{末}},\na：「始ESCAPE」x {END} y「末ESCAPE」\n<<<[END_TOOL_REQUEST]>>>\n\
         {START}\nmessage:「始」trunc",
        one_request_reply()
    );
    let file = TempFile::new("stream_sizes.txt", input.as_bytes());
    let all_flags = ["--fuzzy", "--skip-fenced", "--keep-think"].map(String::from);
    for flags in [&[][..], &all_flags[..]] {
        let one_shot = parse_stdout(flags, &[], file.arg());
        let parsed: Value = serde_json::from_slice(&one_shot).expect("JSON");
        assert!(parsed["requests"].as_array().is_some_and(|r| r.len() >= 2), "{parsed:#}");
        for n in [1, 2, 3, 5, 13, 64, input.len() - 1, input.len(), input.len() + 1, 1 << 20] {
            let n = n.to_string();
            let streamed = parse_stdout(flags, &["--stream-chunk", &n], file.arg());
            assert_eq!(
                String::from_utf8_lossy(&streamed),
                String::from_utf8_lossy(&one_shot),
                "{flags:?} --stream-chunk {n}"
            );
        }
    }
    let from_stdin = run_with_stdin(&["parse", "--stream-chunk", "3", "-"], Some(input.as_bytes()));
    assert_eq!(from_stdin.status.code(), Some(0), "{}", String::from_utf8_lossy(&from_stdin.stderr));
    assert_eq!(from_stdin.stdout, parse_stdout(&[], &[], file.arg()));
    let empty = run_with_stdin(&["parse", "--stream-chunk", "1", "-"], Some(b""));
    assert_eq!(success_json(&empty), json!({"requests": [], "diagnostics": []}));
}

#[test]
fn parse_stream_chunk_zero_is_a_usage_error() {
    let file = TempFile::new("stream_zero.txt", one_request_reply().as_bytes());
    let line = usage_error(&run(&["parse", "--stream-chunk", "0", file.arg()]));
    assert!(line.contains("--stream-chunk"), "{line}");
    let line = usage_error(&run(&["parse", "--stream-chunk", "many", file.arg()]));
    assert!(line.contains("--stream-chunk"), "{line}");
    // Invalid UTF-8 is reported the same way when streaming.
    let file = TempFile::new("stream_bad.txt", b"ok \xff");
    let line = usage_error(&run(&["parse", "--stream-chunk", "2", file.arg()]));
    assert_eq!(line, "tool-calling: input is not valid UTF-8 at byte offset 3");
}

#[test]
fn parse_open_model_formats_prints_normal_text_and_streams_the_same() {
    let reply =
        "Adding.\n<tool_call>\n{\"name\": \"calc_add\", \"arguments\": {\"a\": 2, \"b\": 40}}\n</tool_call>";
    for protocol in ["hermes", "auto"] {
        let one_shot =
            success_json(&run_with_stdin(&["parse", "--protocol", protocol, "-"], Some(reply.as_bytes())));
        assert_eq!(one_shot["normal_text"], "Adding.\n", "{protocol}");
        assert_eq!(one_shot["requests"][0]["tool_name"], "calc_add");
        assert_eq!(one_shot["requests"][0]["args"], serde_json::json!({"a": 2, "b": 40}));
        assert_eq!(one_shot["requests"][0]["start"], 8);
        for size in ["1", "5"] {
            let streamed = success_json(&run_with_stdin(
                &["parse", "--protocol", protocol, "--stream-chunk", size, "-"],
                Some(reply.as_bytes()),
            ));
            assert_eq!(streamed, one_shot, "{protocol} in chunks of {size}");
        }
    }
}

#[test]
fn prompt_and_cycle_speak_each_format() {
    let prompt = run(&["prompt", "--protocol", "glm47"]);
    assert!(prompt.status.success());
    let text = String::from_utf8(prompt.stdout).unwrap();
    assert!(text.contains("<arg_key>") && text.contains("\"name\":\"calc_add\""), "{text}");
    // Under a format other than VCP, `ink` and `river` are ordinary arguments.
    let reply = "<tool_call>text_label\n<arg_key>ink</arg_key>\n<arg_value>blue</arg_value>\n<arg_key>river</arg_key>\n<arg_value>Seine</arg_value>\n</tool_call>";
    let cycle = success_json(&run_with_stdin(&["cycle", "--protocol", "glm45", "-"], Some(reply.as_bytes())));
    assert_eq!(cycle["results"][0]["result"], "Seine in blue", "{cycle}");
    assert_eq!(cycle["context"], "<|observation|>\n<tool_response>\nSeine in blue\n</tool_response>");
    let bench = success_json(&run_with_stdin(
        &["bench", "--protocol", "glm45", "--iterations", "2", "-"],
        Some(reply.as_bytes()),
    ));
    assert_eq!((bench["requests"].as_u64(), bench["api"].as_str()), (Some(1), Some("owned")));
}

/// `tool-calling serve --port 0`, stopped when dropped.
struct Server {
    child: std::process::Child,
    address: String,
}

impl Server {
    fn start() -> Self {
        Server::start_with(&["serve", "--port", "0"])
    }

    /// Runs the tester with `args`, a server that prints its address on stderr.
    fn start_with(args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = Command::new(tester_path())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tool-calling serve");
        let stderr = child.stderr.take().expect("stderr pipe");
        let mut line = String::new();
        std::io::BufReader::new(stderr).read_line(&mut line).expect("read the address line");
        let address = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split(['/', ' ']).next())
            .map(str::trim)
            .unwrap_or_else(|| panic!("no address on stderr: {line:?}"))
            .to_string();
        assert!(address.starts_with("127.0.0.1:"), "listens on loopback only: {address}");
        Server { child, address }
    }

    /// One HTTP/1.1 exchange: (status, content type, body).
    fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String, String) {
        use std::io::Read;
        let mut stream = std::net::TcpStream::connect(&self.address).expect("connect");
        let body = body.unwrap_or("");
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.address,
            body.len()
        );
        stream.write_all(request.as_bytes()).expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status");
        let kind =
            head.lines().find_map(|l| l.strip_prefix("content-type: ")).unwrap_or_default().to_string();
        (status, kind, body.to_string())
    }

    fn json(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let body = body.map(Value::to_string);
        let (status, kind, text) = self.call(method, path, body.as_deref());
        assert!(kind.starts_with("application/json"), "{path} answers JSON, not {kind}: {text}");
        (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}")))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_answers_what_the_command_line_prints() {
    let server = Server::start();
    let (status, kind, page) = server.call("GET", "/", None);
    assert_eq!(status, 200);
    assert!(kind.starts_with("text/html"), "{kind}");
    for pane in ["id=\"discovery\"", "id=\"executor\"", "id=\"parser\"", "src=\"/app.js\""] {
        assert!(page.contains(pane), "the page has {pane}");
    }
    assert_eq!(server.call("GET", "/app.js", None).0, 200);
    assert_eq!(server.call("GET", "/style.css", None).0, 200);

    let all = success_json(&run(&["discover", "--all"]));
    assert_eq!(server.json("GET", "/api/tools", None), (200, all));

    let vcp = String::from_utf8(run(&["prompt"]).stdout).unwrap();
    let (_, prompt) = server.json("GET", "/api/prompt?protocol=vcp", None);
    assert_eq!(prompt["text"].as_str(), Some(vcp.as_str()), "the prompt as `prompt` prints it");
    let (_, prompt) = server.json("GET", "/api/prompt?protocol=gemini", None);
    assert_eq!(prompt["json"], success_json(&run(&["prompt", "--protocol", "gemini"])));

    let args = json!({"tool_name": "calc_add", "args": {"a": 2, "b": 40}});
    let (status, result) = server.json("POST", "/api/exec", Some(&args));
    assert_eq!(status, 200);
    assert_eq!((result["status"].as_str(), result["result"].as_str()), (Some("success"), Some("42.0")));

    let reply = format!("<think>hidden</think>{}", one_request_reply());
    let file = TempFile::new("serve.txt", reply.as_bytes());
    let mut expected = success_json(&run(&["parse", file.arg()]));
    let (status, parsed) =
        server.json("POST", "/api/parse", Some(&json!({"protocol": "vcp", "text": reply})));
    assert_eq!(status, 200);
    let hidden = json!([{"start": 0, "end": "<think>hidden</think>".len(), "kind": "reasoning"}]);
    expected.as_object_mut().unwrap().insert("hidden".into(), hidden);
    assert_eq!(parsed, expected, "parse plus the hidden spans");

    // The same cycle, but for how long the tool took (in the results and the context).
    let timeless = |mut cycle: Value| {
        for result in cycle["results"].as_array_mut().unwrap() {
            result["duration_ms"] = json!(0);
        }
        let context = cycle["context"].as_str().unwrap().to_string();
        let lines: Vec<&str> = context
            .split('\n')
            .map(|line| {
                if line.starts_with("duration_ms:「始」") {
                    "duration_ms:「始」0「末」,"
                } else {
                    line
                }
            })
            .collect();
        cycle["context"] = json!(lines.join("\n"));
        cycle
    };
    let (_, cycle) = server.json("POST", "/api/cycle", Some(&json!({"protocol": "vcp", "text": reply})));
    assert_eq!(cycle["results"][0]["result"], "3.0");
    assert_eq!(timeless(cycle), timeless(success_json(&run(&["cycle", file.arg()]))));

    let (_, samples) = server.json("GET", "/api/samples", None);
    let protocols: Vec<&str> =
        samples.as_array().unwrap().iter().filter_map(|s| s["protocol"].as_str()).collect();
    assert!(protocols.contains(&"vcp") && protocols.contains(&"openai"), "{protocols:?}");
    // Every bundled sample parses in its protocol with no diagnostic and at least one call.
    for sample in samples.as_array().unwrap() {
        let (status, parsed) = server.json(
            "POST",
            "/api/parse",
            Some(&json!({"protocol": sample["protocol"], "text": sample["text"]})),
        );
        assert_eq!(status, 200, "{sample}");
        assert!(!parsed["requests"].as_array().unwrap().is_empty(), "{}: {parsed}", sample["name"]);
    }
    let (_, names) = server.json("GET", "/api/protocols", None);
    assert!(names.as_array().unwrap().iter().any(|p| p["name"] == "anthropic" && p["native"] == true));

    let (status, error) = server.json("POST", "/api/parse", Some(&json!({"protocol": "nope", "text": ""})));
    assert_eq!(status, 400);
    assert!(error["error"].as_str().unwrap().contains("unknown protocol `nope`"), "{error}");
}

#[test]
fn cycle_raw_prints_the_context_as_it_is_sent() {
    let file = TempFile::new("raw.txt", one_request_reply().as_bytes());
    let whole = success_json(&run(&["cycle", file.arg()]));
    let raw = run(&["cycle", "--raw", file.arg()]);
    assert_eq!(raw.status.code(), Some(0));
    let text = String::from_utf8(raw.stdout).unwrap();
    assert!(text.starts_with("<<<[TOOL_RESULT]>>>\nrequest_id:「始」req_1「末」"), "{text}");
    // The same text as the JSON document's `context`, but for the call's duration.
    let strip = |t: &str| t.lines().filter(|l| !l.starts_with("duration_ms:")).collect::<Vec<_>>().join("\n");
    assert_eq!(strip(&text), strip(whole["context"].as_str().unwrap()));
    let body = native_fixture("openai", "two_calls_reasoning.json");
    let native = success_json(&run(&["cycle", "--raw", "--protocol", "openai", &body]));
    assert_eq!(native[0]["role"], "tool", "the tool messages themselves: {native}");
}

/// The bundled reply for the demo tools (`samples/demo_reply.txt`, which the tester's
/// examples use): every call reaches a demo tool, hidden reasoning included.
#[test]
fn the_demo_reply_runs_against_the_demo_tools() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/demo_reply.txt");
    let sample = sample.to_str().unwrap();
    let parsed = success_json(&run(&["parse", sample]));
    let names: Vec<&str> =
        parsed["requests"].as_array().unwrap().iter().map(|r| r["tool_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["calc", "text_repeat", "calc_divide"], "the call in the reasoning stays hidden");
    assert_eq!(parsed["requests"][2]["complete"], false, "the last call is cut off");

    let out = success_json(&run(&["cycle", sample]));
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{out:#}");
    assert_eq!(
        (results[0]["tool_name"].as_str(), results[0]["result"].as_str()),
        (Some("calc_add"), Some("42.0"))
    );
    assert_eq!(results[1]["result"], "hello hello hello");
    assert_eq!(results[2]["status"], "error", "an incomplete call is not run");
    assert_eq!(results[2]["error_kind"], "validation");
    assert!(results.iter().all(|r| r["error_kind"] != "not_found"), "every call names a demo tool: {out:#}");
}

#[test]
fn grammar_prints_each_supported_pair_and_refuses_the_others() {
    let lark = run(&["grammar"]);
    assert_eq!(lark.status.code(), Some(0));
    let text = String::from_utf8(lark.stdout).unwrap();
    assert!(text.starts_with("%llguidance {}\n"), "lark by default: {text}");
    assert!(text.contains("command:「始」repeat「末」") && !text.contains("secret_internal"), "{text}");
    for scope in ["call", "calls", "reply"] {
        let gbnf = run(&["grammar", "--protocol", "hermes", "--dialect", "gbnf", "--scope", scope]);
        assert_eq!(gbnf.status.code(), Some(0), "{scope}");
        let text = String::from_utf8(gbnf.stdout).unwrap();
        assert!(text.starts_with("root ::= "), "{text}");
        assert!(text.contains("\\\"name\\\": \\\"calc_add\\\""), "{text}");
    }
    let schema = run(&["grammar", "--protocol", "hermes", "--dialect", "json-schema", "--scope", "call"]);
    let schema: Value = serde_json::from_slice(&schema.stdout).expect("a JSON document");
    assert_eq!(schema["anyOf"][0]["properties"]["name"]["const"], "calc_add");
    let tag = run(&["grammar", "--protocol", "hermes", "--dialect", "structural-tag"]);
    let tag: Value = serde_json::from_slice(&tag.stdout).expect("a JSON document");
    assert_eq!(tag["triggers"][0], "<tool_call>");
    for (args, message) in [
        (
            &["grammar", "--dialect", "json-schema"][..],
            "tool-calling: protocol `vcp` has no json-schema grammar for scope `reply`\n",
        ),
        (
            &["grammar", "--protocol", "openai"][..],
            "tool-calling: protocol `openai` writes no grammar: grammars are written by the text protocols \
             (VCP and the open-model formats); a native API's provider constrains its own calls, and `auto` \
             reads any format, so name one\n",
        ),
        (
            &["grammar", "--dialect", "xml"][..],
            "tool-calling: unknown dialect `xml`: one of lark, gbnf, json-schema, structural-tag\n",
        ),
        (
            &["grammar", "--scope", "all"][..],
            "tool-calling: unknown scope `all`: one of call, calls, reply\n",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
        assert_eq!(String::from_utf8(out.stderr).unwrap(), message);
    }
}

/// A one-reply upstream on loopback: answers every request with a Chat Completions stream
/// of `text` (Hermes calls in it), and hands each request body it read to the test.
fn hermes_upstream(text: &'static str) -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Read};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = listener.local_addr().expect("an address");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = tx.send(String::from_utf8_lossy(&body).into_owned());
            let chunk =
                json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]});
            let events = format!("data: {chunk}\n\ndata: [DONE]\n\n");
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{events}",
                events.len()
            );
            let _ = reader.get_mut().write_all(response.as_bytes());
        }
    });
    (format!("http://{address}/v1"), rx)
}

#[test]
fn gateway_gives_tool_calls_to_a_server_without_a_tools_api() {
    let (upstream, sent) = hermes_upstream(
        "Checking.<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>",
    );
    let gateway =
        Server::start_with(&["gateway", "--upstream", &upstream, "--protocol", "hermes", "--port", "0"]);
    let request = json!({
        "model": "m", "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
    });
    let (status, reply) = gateway.json("POST", "/v1/chat/completions", Some(&request));
    assert_eq!(status, 200, "{reply}");
    let message = &reply["choices"][0]["message"];
    assert_eq!(message["content"], "Checking.");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "get_weather");
    assert_eq!(message["tool_calls"][0]["function"]["arguments"], r#"{"city":"Oslo"}"#);
    assert_eq!(reply["choices"][0]["finish_reason"], "tool_calls");
    let upstream_body: Value = serde_json::from_str(&sent.recv().expect("a request")).expect("JSON");
    assert!(upstream_body.get("tools").is_none());
    assert!(upstream_body["messages"][0]["content"].as_str().unwrap_or_default().contains("<tool_call>"));
    assert_eq!(gateway.json("GET", "/health", None), (200, json!({"status": "ok"})));
}

#[test]
fn gateway_refuses_a_bad_configuration_in_one_line() {
    let out = run(&["gateway", "--upstream", "ftp://example.com"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("http://"), "{stderr}");
    let out = run(&["gateway", "--upstream", "http://127.0.0.1:1/v1", "--protocol", "openai"]);
    assert_eq!(out.status.code(), Some(2), "a provider's API is not a gateway protocol");
}

#[test]
fn an_unknown_protocol_gets_the_closest_one_suggested() {
    for (args, suggested) in [
        (&["parse", "--protocol", "vpc", "-"][..], Some("vcp")),
        (&["grammar", "--protocol", "hermez"][..], Some("hermes")),
        (&["prompt", "--protocol", "Mistral"][..], Some("mistral")),
        (&["gateway", "--upstream", "http://127.0.0.1:9", "--protocol", "natve"][..], Some("native")),
        (&["parse", "--protocol", "zzzzzzzz", "-"][..], None),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let name = args[args.iter().position(|a| *a == "--protocol").unwrap() + 1];
        assert!(stderr.contains(&format!("unknown protocol `{name}`")), "{stderr}");
        match suggested {
            Some(id) => assert!(stderr.contains(&format!("did you mean `{id}`?")), "{stderr}"),
            None => assert!(!stderr.contains("did you mean"), "{stderr}"),
        }
        // Not the whole list: `--help` has it.
        assert!(!stderr.contains("deepseek_v31"), "{stderr}");
    }
}

#[test]
fn cycle_shows_each_call_of_a_batch() {
    let reply = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc「末」,\ncommand1:「始」add「末」,\na1:「始」1「末」,\n\
                 b1:「始」2「末」,\ncommand2:「始」divide「末」,\na2:「始」1「末」,\nb2:「始」0「末」\n\
                 <<<[END_TOOL_REQUEST]>>>\n";
    let out = run_with_stdin(&["cycle", "-"], Some(reply.as_bytes()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let document: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let result = &document["results"][0];
    assert_eq!(result["status"], "error");
    assert_eq!(
        result["calls"],
        json!([
            {"tool_name": "calc_add", "status": "success", "result": "3.0", "error_kind": null},
            {"tool_name": "calc_divide", "status": "error", "result": "division by zero", "error_kind": "execution"}
        ])
    );
    // A single call has no `calls`.
    let single = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc「末」,\ncommand:「始」add「末」,\na:「始」1「末」,\n\
                  b:「始」2「末」\n<<<[END_TOOL_REQUEST]>>>\n";
    let out = run_with_stdin(&["cycle", "-"], Some(single.as_bytes()));
    let document: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(document["results"][0].get("calls").is_none(), "{document}");
}
