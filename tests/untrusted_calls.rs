//! Model output is untrusted: a call the model must not make gets an error result and
//! nothing runs (every tool counts its invocations, and the counts stay at zero), and
//! every request gets exactly one result, in order, whatever happens to the others
//! (time limits, panics, cancellation, retries; a property on tokio's paused clock).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::Engine;
use tool_calling::exec::{
    ExecutionContext, Executor, ExecutorOptions, PolicyDecision, PreparedCall, ResolvedRequest, ToolRetry,
};
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolRegistry, ToolSpec};
use tool_calling::{ErrorKind, ExecutionStatus, ToolError, ToolRequest};

#[path = "support/vcp_block.rs"]
mod vcp_block;
use vcp_block::block;

/// How often each method body was entered, by full name.
#[derive(Default)]
struct Calls(Mutex<HashMap<String, usize>>);

impl Calls {
    fn hit(&self, name: &str) {
        *self.0.lock().unwrap().entry(name.to_string()).or_default() += 1;
    }

    fn total(&self) -> usize {
        self.0.lock().unwrap().values().sum()
    }

    fn of(&self, name: &str) -> usize {
        self.0.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

fn object(properties: Value, required: Value) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// A method that records that it ran, then answers `ran <name>`.
fn counted(calls: &Arc<Calls>, tool: &str, definition: MethodDefinition) -> MethodSpec {
    let calls = calls.clone();
    let name = format!("{tool}_{}", definition.name);
    MethodSpec::new(definition, move |_, _| {
        calls.hit(&name);
        let answer = format!("ran {name}");
        Box::pin(async move { Ok(ToolOutput::Text(answer)) }) as BoxFuture<'static, _>
    })
}

/// Tool `fs`: `read` (a path, required), `write` (denied by the policy below),
/// `secret` (internal), `disabled` (switched off in [`config`]); tool `off` (switched
/// off as a whole) with `run`.
fn registry(calls: &Arc<Calls>) -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    let read = MethodDefinition::new("read", "Read a file.").with_parameters(object(
        json!({"path": {"type": "string", "maxLength": 64}, "lines": {"type": "integer", "minimum": 1}}),
        json!(["path"]),
    ));
    registry
        .register(
            ToolSpec::stateless("fs", "Files")
                .with_method(counted(calls, "fs", read))
                .with_method(counted(calls, "fs", MethodDefinition::new("write", "Write a file.")))
                .with_method(
                    counted(calls, "fs", MethodDefinition::new("secret", "Internal.")).agent_callable(false),
                )
                .with_method(counted(calls, "fs", MethodDefinition::new("disabled", "Switched off."))),
        )
        .unwrap();
    registry
        .register(ToolSpec::stateless("off", "Switched off").with_method(counted(
            calls,
            "off",
            MethodDefinition::new("run", "Run."),
        )))
        .unwrap();
    Arc::new(registry)
}

fn executor(calls: &Arc<Calls>) -> Executor {
    Executor::new(registry(calls)).with_policy(|call: &PreparedCall| {
        if call.full_name == "fs_write" {
            PolicyDecision::Deny("writing is not allowed".into())
        } else {
            PolicyDecision::Allow
        }
    })
}

fn config() -> ToolCallConfig {
    ToolCallConfig::default().with_toggle("off", false).with_toggle("fs_disabled", false)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap()
}

/// A call: the method's name, its arguments, and the kind of its refusal.
type Case = (String, Vec<(&'static str, &'static str)>, ErrorKind);

/// Every call a model must not make, with the kind of its refusal.
fn forbidden() -> Vec<Case> {
    let long = "fs_read".repeat(100 * 1024 / 7 + 1);
    let mut cases: Vec<Case> = vec![
        ("fs_secret".into(), vec![], ErrorKind::Permission),
        ("nothere_read".into(), vec![], ErrorKind::NotFound),
        ("fs_nothere".into(), vec![], ErrorKind::NotFound),
        ("off_run".into(), vec![], ErrorKind::Permission),
        ("fs_disabled".into(), vec![], ErrorKind::Permission),
        ("fs_write".into(), vec![], ErrorKind::Permission),
        ("fs_read".into(), vec![], ErrorKind::Validation),
        ("fs_read".into(), vec![("path", "a"), ("lines", "many")], ErrorKind::Validation),
        ("fs_read".into(), vec![("path", "a"), ("lines", "0")], ErrorKind::Validation),
        (
            "fs_read".into(),
            vec![(
                "path",
                "../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../etc/shadow",
            )],
            ErrorKind::Validation,
        ),
        (long, vec![("path", "a")], ErrorKind::NotFound),
    ];
    for name in [
        "../../etc/passwd",
        "/etc/passwd",
        "fs/../fs_secret",
        "fs_read/../fs_secret",
        "fs_read/../../etc/passwd",
        "..\\..\\windows\\system32",
        "fs_read\0",
        "fs_read\0fs_secret",
        "fs_read\nfs_write",
        "fs_read; rm -rf /",
        "fs_read`id`",
        "fs_read$(id)",
        "fs.read",
        "fs::read",
        "https://evil.example/fs_read",
        "",
    ] {
        cases.push((name.to_string(), vec![("path", "a")], ErrorKind::NotFound));
    }
    cases
}

#[test]
fn calls_a_model_must_not_make_are_refused_and_nothing_runs() {
    let calls = Arc::new(Calls::default());
    let executor = executor(&calls);
    let cases = forbidden();
    let requests: Vec<ToolRequest> = cases
        .iter()
        .enumerate()
        .map(|(i, (name, args, _))| {
            args.iter().fold(ToolRequest::new(format!("r{i}"), name.as_str()), |r, (k, v)| r.with_arg(*k, *v))
        })
        .collect();
    let ctx = ExecutionContext::new(config());
    for parallel in [true, false] {
        let mut ctx = ctx.clone();
        ctx.config.parallel_execution = parallel;
        let planned = requests.iter().map(ResolvedRequest::exact).collect();
        let results = runtime().block_on(executor.execute(planned, &ctx));
        assert_eq!(results.len(), cases.len(), "every request gets exactly one result");
        for (i, ((name, args, kind), result)) in cases.iter().zip(&results).enumerate() {
            let shown: String = name.chars().take(40).collect();
            assert_eq!(result.request_id, format!("r{i}"), "in order");
            assert_eq!(result.tool_name, *name);
            assert_eq!(result.status, ExecutionStatus::Error, "{shown:?} {args:?}: {}", result.result);
            assert_eq!(result.error_kind, Some(*kind), "{shown:?} {args:?}: {}", result.result);
            assert!(result.result.len() < 1024, "{shown:?}: a refusal of {} bytes", result.result.len());
        }
    }
    assert_eq!(calls.total(), 0, "a refused call ran: {:?}", calls.0.lock().unwrap());

    // The same registry and context run a call that is allowed: the counts above are
    // zero because the calls were refused, not because nothing could ever run.
    let allowed = ToolRequest::new("ok", "fs_read").with_arg("path", "notes.txt");
    let result = runtime().block_on(executor.execute(vec![ResolvedRequest::exact(&allowed)], &ctx)).remove(0);
    assert_eq!(result.result, "ran fs_read");
    assert_eq!((calls.of("fs_read"), calls.total()), (1, 1));
}

#[test]
fn an_oversized_name_is_not_repeated_whole_to_the_model() {
    let calls = Arc::new(Calls::default());
    let name = "x".repeat(100 * 1024);
    let request = ToolRequest::new("big", name.as_str());
    let result = runtime()
        .block_on(
            executor(&calls).execute(vec![ResolvedRequest::exact(&request)], &ExecutionContext::default()),
        )
        .remove(0);
    assert_eq!(result.error_kind, Some(ErrorKind::NotFound));
    assert!(result.result.contains(&"x".repeat(64)), "{}", result.result);
    assert!(result.result.contains("(102400 bytes)"), "{}", result.result);
    assert!(result.result.len() < 300, "{} bytes", result.result.len());
    // A name of ordinary length is repeated whole.
    let request = ToolRequest::new("small", "fs_raed");
    let result = runtime()
        .block_on(
            executor(&calls).execute(vec![ResolvedRequest::exact(&request)], &ExecutionContext::default()),
        )
        .remove(0);
    assert!(result.result.contains("`fs_raed`") && result.result.contains("fs_read"), "{}", result.result);
}

#[test]
fn a_vcp_reply_full_of_forbidden_calls_runs_only_the_allowed_one() {
    let calls = Arc::new(Calls::default());
    let executor = executor(&calls);
    let engine = Engine::new(executor.registry().clone()).with_executor(executor);
    let mut reply = String::from("Let me try a few things.\n");
    let cases = forbidden();
    for (name, args, _) in &cases {
        // A VCP value cannot hold its own end marker; every name here is plain text.
        let mut fields = vec![("tool_name", name.as_str())];
        fields.extend(args.iter().copied());
        reply.push_str(&block(&fields));
    }
    reply.push_str(&block(&[("tool_name", "fs_read"), ("path", "notes.txt")]));
    let ctx = ExecutionContext::new(config());
    let cycle = runtime().block_on(engine.run_turn(&reply, &ctx)).unwrap();
    assert_eq!(cycle.parsed_requests.len(), cases.len() + 1);
    assert_eq!(cycle.execution_results.len(), cycle.parsed_requests.len(), "exactly one result each");
    for (request, result) in cycle.parsed_requests.iter().zip(&cycle.execution_results) {
        assert_eq!(request.request_id, result.request_id, "in order");
    }
    let (last, refused) = cycle.execution_results.split_last().unwrap();
    for (result, (name, _, _)) in refused.iter().zip(&cases) {
        let shown: String = name.chars().take(40).collect();
        assert_eq!(result.status, ExecutionStatus::Error, "{shown:?}: {}", result.result);
    }
    assert_eq!(last.result, "ran fs_read");
    assert_eq!(calls.total(), 1, "only the allowed call ran: {:?}", calls.0.lock().unwrap());
    // Everything was answered in the text fed back, and nothing there reads as a request.
    let fed_back = cycle.result_text();
    assert!(fed_back.contains("ran fs_read"));
    let echoed = tool_calling::protocol::vcp::VcpProtocol::default().parse(&fed_back);
    assert!(echoed.requests.is_empty(), "{:?}", echoed.requests.len());
}

// ---------------------------------------------------------------------------------
// Exactly one result per request, under random delays, time limits, panics, retries
// and cancellation.

/// What one generated request asks for.
#[derive(Debug, Clone)]
enum Step {
    /// `t_sleep` for this many ms (a multiple of 10 plus 5, never equal to a limit).
    Sleep(u64),
    /// `t_panic`.
    Panic,
    /// `t_flaky`, failing with a retryable error this many times first.
    Flaky(u32),
    /// `t_fail`: a failure that is not retried.
    Fail,
    /// A name no method has.
    Unknown(String),
    /// `t_sleep` with arguments the schema refuses.
    Invalid,
    /// `t_internal`, not agent-callable.
    Internal,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u64..80).prop_map(|n| Step::Sleep(n * 10 + 5)),
        1 => Just(Step::Panic),
        2 => (0u32..4).prop_map(Step::Flaky),
        1 => Just(Step::Fail),
        1 => "[a-z_./\\\\\0\n ]{0,24}".prop_map(Step::Unknown),
        1 => Just(Step::Invalid),
        1 => Just(Step::Internal),
    ]
}

/// Tool `t` for the property: every body counts its entries in `calls`; `t_flaky`
/// counts attempts per `key` in `attempts`.
fn property_registry(calls: &Arc<Calls>, attempts: &Arc<Mutex<HashMap<String, u32>>>) -> Arc<ToolRegistry> {
    let sleep_calls = calls.clone();
    let panic_calls = calls.clone();
    let flaky_calls = calls.clone();
    let fail_calls = calls.clone();
    let attempts = attempts.clone();
    let spec = ToolSpec::stateless("t", "Test tools")
        .with_method(MethodSpec::new(
            MethodDefinition::new("sleep", "sleep")
                .with_parameters(object(json!({"ms": {"type": "integer"}}), json!(["ms"]))),
            move |_, args: ArgMap| {
                sleep_calls.hit("t_sleep");
                Box::pin(async move {
                    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(ToolOutput::Text(format!("slept {ms}")))
                }) as BoxFuture<'static, _>
            },
        ))
        .with_method(MethodSpec::new(MethodDefinition::new("panic", "panic"), move |_, _| {
            panic_calls.hit("t_panic");
            Box::pin(async {
                if std::hint::black_box(true) {
                    panic!("tool blew up");
                }
                Ok(ToolOutput::Text("unreachable".into()))
            }) as BoxFuture<'static, _>
        }))
        .with_method(MethodSpec::new(
            MethodDefinition::new("flaky", "flaky").with_parameters(object(
                json!({"key": {"type": "string"}, "fails": {"type": "integer"}}),
                json!(["key", "fails"]),
            )),
            move |_, args: ArgMap| {
                flaky_calls.hit("t_flaky");
                let key = args.get("key").and_then(Value::as_str).unwrap_or("").to_string();
                let fails = args.get("fails").and_then(Value::as_u64).unwrap_or(0) as u32;
                let attempt = {
                    let mut attempts = attempts.lock().unwrap();
                    let n = attempts.entry(key).or_default();
                    *n += 1;
                    *n
                };
                Box::pin(async move {
                    if attempt <= fails {
                        Err(ToolError::network("connection reset"))
                    } else {
                        Ok(ToolOutput::Text(format!("ok after {attempt} attempts")))
                    }
                }) as BoxFuture<'static, _>
            },
        ))
        .with_method(MethodSpec::new(MethodDefinition::new("fail", "fail"), move |_, _| {
            fail_calls.hit("t_fail");
            Box::pin(async { Err(ToolError::execution("disk full")) }) as BoxFuture<'static, _>
        }))
        .with_method(
            counted(calls, "t", MethodDefinition::new("internal", "internal")).agent_callable(false),
        );
    let registry = ToolRegistry::new();
    registry.register(spec).unwrap();
    Arc::new(registry)
}

fn request_for(i: usize, step: &Step) -> ToolRequest {
    let id = format!("call_{i}");
    match step {
        Step::Sleep(ms) => ToolRequest::new(id, "t_sleep").with_arg("ms", ms.to_string()),
        Step::Panic => ToolRequest::new(id, "t_panic"),
        Step::Flaky(fails) => {
            ToolRequest::new(id.clone(), "t_flaky").with_arg("key", id).with_arg("fails", fails.to_string())
        }
        Step::Fail => ToolRequest::new(id, "t_fail"),
        Step::Unknown(name) => ToolRequest::new(id, name.as_str()),
        Step::Invalid => ToolRequest::new(id, "t_sleep").with_arg("ms", "soon"),
        Step::Internal => ToolRequest::new(id, "t_internal"),
    }
}

const NAMES: [&str; 5] = ["t_sleep", "t_panic", "t_flaky", "t_fail", "t_internal"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn every_request_gets_exactly_one_result_in_order(
        steps in prop::collection::vec(step(), 0..12),
        parallel in any::<bool>(),
        max_concurrency in 1usize..5,
        max_attempts in 1u32..4,
        timeout_tens in 5u64..60,
        cancel_at in prop::option::of(0u64..900),
    ) {
        let timeout_ms = timeout_tens * 10;
        let calls = Arc::new(Calls::default());
        let attempts = Arc::new(Mutex::new(HashMap::new()));
        let mut options = ExecutorOptions::default();
        options.max_concurrency = max_concurrency;
        options.retry = ToolRetry::new(max_attempts, Duration::from_millis(20));
        let executor = Executor::new(property_registry(&calls, &attempts)).with_options(options);
        let requests: Vec<ToolRequest> =
            steps.iter().enumerate().map(|(i, s)| request_for(i, s)).collect();
        let mut config = ToolCallConfig::default();
        config.parallel_execution = parallel;
        config.timeout_ms = timeout_ms;
        let token = CancellationToken::new();
        let ctx = ExecutionContext::new(config).with_cancel(token.clone());

        let results = runtime().block_on(async {
            if let Some(at) = cancel_at {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(at)).await;
                    token.cancel();
                });
            }
            executor.execute(requests.iter().map(ResolvedRequest::exact).collect(), &ctx).await
        });

        prop_assert_eq!(results.len(), requests.len(), "one result per request");
        let cancelled = cancel_at.is_some();
        for ((request, result), step) in requests.iter().zip(&results).zip(&steps) {
            prop_assert_eq!(&result.request_id, &request.request_id, "in order");
            prop_assert_eq!(&result.tool_name, &request.tool_name);
            let kind = result.error_kind;
            if cancelled && kind == Some(ErrorKind::Cancelled) {
                continue; // anything may be cancelled once the token fires
            }
            match step {
                Step::Sleep(ms) if *ms < timeout_ms => {
                    prop_assert_eq!(&result.result, &format!("slept {ms}"));
                }
                Step::Sleep(_) => prop_assert_eq!(kind, Some(ErrorKind::Timeout), "{}", result.result),
                Step::Panic => prop_assert_eq!(kind, Some(ErrorKind::Execution)),
                Step::Flaky(fails) if *fails < max_attempts => {
                    prop_assert_eq!(&result.result, &format!("ok after {} attempts", fails + 1));
                }
                // A retryable failure is the answer only once no attempt remains: after a
                // cancellation the retry that would follow is cut, and the call answers
                // `Cancelled` (above).
                Step::Flaky(_) => prop_assert_eq!(kind, Some(ErrorKind::Network)),
                Step::Fail => prop_assert_eq!(kind, Some(ErrorKind::Execution)),
                Step::Unknown(name) if NAMES.contains(&name.as_str()) => {}
                Step::Unknown(_) => prop_assert_eq!(kind, Some(ErrorKind::NotFound)),
                Step::Invalid => prop_assert_eq!(kind, Some(ErrorKind::Validation)),
                Step::Internal => prop_assert_eq!(kind, Some(ErrorKind::Permission)),
            }
        }
        // Refused calls never ran; retried calls ran no more often than allowed (time-outs
        // are retried too). An invalid request never reaches `t_sleep`: with no sleep
        // step, the count is zero.
        prop_assert_eq!(calls.of("t_internal"), 0);
        let may_sleep = steps
            .iter()
            .filter(|s| matches!(s, Step::Sleep(_)) || matches!(s, Step::Unknown(n) if n == "t_sleep"))
            .count();
        prop_assert!(calls.of("t_sleep") <= may_sleep * max_attempts as usize);
        for ((i, step), result) in steps.iter().enumerate().zip(&results) {
            if let Step::Flaky(_) = step {
                let tried = attempts.lock().unwrap().get(&format!("call_{i}")).copied().unwrap_or(0);
                prop_assert!(tried <= max_attempts, "call_{} tried {} times", i, tried);
                if result.error_kind == Some(ErrorKind::Network) {
                    prop_assert_eq!(tried, max_attempts, "call_{} answered its failure with attempts left", i);
                }
            }
        }
    }
}
