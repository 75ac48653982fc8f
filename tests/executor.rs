//! The executor, on tokio's paused clock: ordering, parallel and serial timing,
//! timeouts, cancellation, panics, retries, and every check of the flowchart (proved by
//! side effects: a denied call never runs).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tool_calling::config::ToolCallConfig;
use tool_calling::exec::{
    ExecutionContext, Executor, ExecutorOptions, PolicyDecision, PreparedCall, ResolvedRequest, ToolRetry,
};
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::{BoxFuture, MethodSpec, ToolOutput, ToolSpec};
use tool_calling::{Args, ErrorKind, ExecutionStatus, ToolError, ToolRequest};

#[derive(Default)]
struct Counters {
    count: AtomicUsize,
    internal: AtomicUsize,
    flaky: AtomicUsize,
    confirmations: AtomicUsize,
}

fn schema(properties: Value, required: Value) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn registry(counters: &Arc<Counters>) -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    let c = counters.clone();
    let c2 = counters.clone();
    let c3 = counters.clone();
    let spec = ToolSpec::stateless("t", "Test tools")
        .with_method(MethodSpec::new(
            MethodDefinition::new("sleep", "sleep")
                .with_parameters(schema(json!({"ms": {"type": "integer"}}), json!(["ms"]))),
            |_, args: tool_calling::tools::ArgMap| {
                Box::pin(async move {
                    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(ToolOutput::Text(format!("slept {ms}")))
                }) as BoxFuture<'static, _>
            },
        ))
        .with_method(MethodSpec::new(MethodDefinition::new("panic", "panic"), |_, _| {
            Box::pin(async {
                if std::hint::black_box(true) {
                    panic!("tool blew up");
                }
                Ok(ToolOutput::Text("unreachable".into()))
            }) as BoxFuture<'static, _>
        }))
        .with_method(
            MethodSpec::new(MethodDefinition::new("block", "blocks its thread"), |_, _| {
                Box::pin(async {
                    std::thread::sleep(Duration::from_millis(300));
                    Ok(ToolOutput::Text("woke".into()))
                }) as BoxFuture<'static, _>
            })
            .blocking(true)
            .with_timeout(Duration::from_millis(50)),
        )
        .with_method(MethodSpec::new(MethodDefinition::new("count", "count"), move |_, _| {
            c.count.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(ToolOutput::Text("counted".into())) }) as BoxFuture<'static, _>
        }))
        .with_method(
            MethodSpec::new(MethodDefinition::new("internal", "internal"), move |_, _| {
                c2.internal.fetch_add(1, Ordering::SeqCst);
                Box::pin(async { Ok(ToolOutput::Text("secret".into())) }) as BoxFuture<'static, _>
            })
            .agent_callable(false),
        )
        .with_method(MethodSpec::new(
            MethodDefinition::new("flaky", "fails twice with a network error").with_parameters(schema(
                json!({"kind": {"type": "string", "default": "network"}}),
                json!([]),
            )),
            move |_, args: tool_calling::tools::ArgMap| {
                let attempt = c3.flaky.fetch_add(1, Ordering::SeqCst);
                let kind = args.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
                Box::pin(async move {
                    let busy =
                        |secs| ToolError::network("HTTP 503").with_retry_after(Duration::from_secs(secs));
                    match (attempt, kind.as_str()) {
                        (0 | 1, "network") => Err(ToolError::network("connection reset")),
                        (0 | 1, "busy") => Err(busy(5)),
                        (0 | 1, "very_busy") => Err(busy(120)),
                        (_, "logic") => Err(ToolError::execution("bad input")),
                        _ => Ok(ToolOutput::Text(format!("ok after {} attempts", attempt + 1))),
                    }
                }) as BoxFuture<'static, _>
            },
        ))
        .with_method(MethodSpec::new(
            MethodDefinition::new("echo", "echo").with_parameters(schema(
                json!({
                    "a": {"type": "string", "default": "schema"},
                    "b": {"type": "string", "default": "schema"},
                    "c": {"type": "string", "default": "schema"}
                }),
                json!([]),
            )),
            |_, args| {
                Box::pin(async move { Ok(ToolOutput::Json(Value::Object(args))) }) as BoxFuture<'static, _>
            },
        ))
        .with_method(
            MethodSpec::new(
                MethodDefinition::new("slow", "slow").with_parameters(schema(json!({}), json!([]))),
                |_, _| {
                    Box::pin(async {
                        tokio::time::sleep(Duration::from_secs(10)).await;
                        Ok(ToolOutput::Text("done".into()))
                    }) as BoxFuture<'static, _>
                },
            )
            .with_timeout(Duration::from_millis(500)),
        );
    registry.register(spec).unwrap();
    Arc::new(registry)
}

fn request(id: &str, name: &str, args: &[(&str, &str)]) -> ToolRequest {
    args.iter().fold(ToolRequest::new(id, name), |r, (k, v)| r.with_arg(*k, *v))
}

/// Each request as one call of the method it names exactly.
fn exact(requests: &[ToolRequest]) -> Vec<ResolvedRequest<'_>> {
    requests.iter().map(ResolvedRequest::exact).collect()
}

fn context(parallel: bool) -> ExecutionContext {
    let mut config = ToolCallConfig::default();
    config.parallel_execution = parallel;
    ExecutionContext::new(config)
}

fn sleepers() -> Vec<ToolRequest> {
    vec![
        request("r1", "t_sleep", &[("ms", "100")]),
        request("r2", "t_sleep", &[("ms", "200")]),
        request("r3", "t_sleep", &[("ms", "150")]),
    ]
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_finish_with_the_slowest_and_keep_request_order() {
    let executor = Executor::new(registry(&Arc::default()));
    let start = Instant::now();
    let results = executor.execute(exact(&sleepers()), &context(true)).await;
    assert_eq!(start.elapsed(), Duration::from_millis(200));
    let got: Vec<(&str, &str)> = results.iter().map(|r| (r.request_id.as_str(), r.result.as_str())).collect();
    assert_eq!(got, [("r1", "slept 100"), ("r2", "slept 200"), ("r3", "slept 150")]);
    let durations: Vec<u64> = results.iter().map(|r| r.duration_ms).collect();
    assert_eq!(durations, [100, 200, 150]);
}

#[tokio::test(start_paused = true)]
async fn serial_calls_add_up() {
    let executor = Executor::new(registry(&Arc::default()));
    let start = Instant::now();
    let results = executor.execute(exact(&sleepers()), &context(false)).await;
    assert_eq!(start.elapsed(), Duration::from_millis(450));
    assert!(results.iter().all(|r| r.status == ExecutionStatus::Success));
}

#[tokio::test(start_paused = true)]
async fn concurrency_limit_is_respected() {
    let mut options = ExecutorOptions::default();
    options.max_concurrency = 2;
    let executor = Executor::new(registry(&Arc::default())).with_options(options);
    let start = Instant::now();
    executor.execute(exact(&sleepers()), &context(true)).await;
    // r1 and r2 start at once; r3 starts when r1 ends (100) and ends at 250.
    assert_eq!(start.elapsed(), Duration::from_millis(250));
}

#[tokio::test(start_paused = true)]
async fn timeouts_default_and_per_method() {
    let executor = Executor::new(registry(&Arc::default()));
    let mut ctx = context(true);
    ctx.config.timeout_ms = 120;
    let start = Instant::now();
    let results = executor.execute(exact(&sleepers()), &ctx).await;
    assert_eq!(start.elapsed(), Duration::from_millis(120));
    let kinds: Vec<Option<ErrorKind>> = results.iter().map(|r| r.error_kind).collect();
    assert_eq!(kinds, [None, Some(ErrorKind::Timeout), Some(ErrorKind::Timeout)]);
    assert!(results[1].result.contains("did not finish within 120 ms"), "{}", results[1].result);

    let start = Instant::now();
    let slow = executor.execute(exact(&[request("s", "t_slow", &[])]), &context(true)).await;
    assert_eq!(start.elapsed(), Duration::from_millis(500), "the method's own limit wins over the default");
    assert_eq!(slow[0].error_kind, Some(ErrorKind::Timeout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_blocks_its_thread_is_still_bounded() {
    let executor = Executor::new(registry(&Arc::default()));
    let results = executor
        .execute(exact(&[request("b", "t_block", &[]), request("c", "t_count", &[])]), &context(true))
        .await;
    assert_eq!(results[0].error_kind, Some(ErrorKind::Timeout), "{}", results[0].result);
    assert_eq!(results[1].status, ExecutionStatus::Success);
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_cycle_returns_promptly_with_a_result_for_each_call() {
    let executor = Executor::new(registry(&Arc::default()));
    let token = CancellationToken::new();
    let ctx = context(true).with_cancel(token.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(120)).await;
        token.cancel();
    });
    let start = Instant::now();
    let results = executor.execute(exact(&sleepers()), &ctx).await;
    canceller.await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(120));
    let kinds: Vec<Option<ErrorKind>> = results.iter().map(|r| r.error_kind).collect();
    assert_eq!(kinds, [None, Some(ErrorKind::Cancelled), Some(ErrorKind::Cancelled)]);
    let again = executor.execute(exact(&sleepers()), &ctx).await;
    assert!(again.iter().all(|r| r.error_kind == Some(ErrorKind::Cancelled)));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_tool_becomes_an_error_and_others_are_unaffected() {
    let executor = Executor::new(registry(&Arc::default()));
    let requests = [request("p", "t_panic", &[]), request("s", "t_sleep", &[("ms", "10")])];
    let results = executor.execute(exact(&requests), &context(true)).await;
    assert_eq!(results[0].error_kind, Some(ErrorKind::Execution));
    assert!(results[0].result.contains("panicked: tool blew up"), "{}", results[0].result);
    assert_eq!(results[1].result, "slept 10");
}

#[tokio::test(start_paused = true)]
async fn retries_apply_only_to_retryable_failures_and_are_off_by_default() {
    let counters = Arc::new(Counters::default());
    let off = Executor::new(registry(&counters));
    let result = off.execute(exact(&[request("f", "t_flaky", &[])]), &context(true)).await;
    assert_eq!(result[0].error_kind, Some(ErrorKind::Network));
    assert_eq!(counters.flaky.load(Ordering::SeqCst), 1);

    let counters = Arc::new(Counters::default());
    let mut options = ExecutorOptions::default();
    options.retry = ToolRetry::new(3, Duration::from_millis(100));
    let on = Executor::new(registry(&counters)).with_options(options.clone());
    let start = Instant::now();
    let result = on.execute(exact(&[request("f", "t_flaky", &[])]), &context(true)).await;
    assert_eq!(result[0].result, "ok after 3 attempts");
    assert_eq!(start.elapsed(), Duration::from_millis(300), "backoff 100 ms, then 200 ms");

    let counters = Arc::new(Counters::default());
    let on = Executor::new(registry(&counters)).with_options(options);
    let result = on.execute(exact(&[request("f", "t_flaky", &[("kind", "logic")])]), &context(true)).await;
    assert_eq!(result[0].error_kind, Some(ErrorKind::Execution));
    assert_eq!(counters.flaky.load(Ordering::SeqCst), 1, "execution errors are not retried");
}

#[tokio::test(start_paused = true)]
async fn a_retry_waits_as_long_as_the_failure_asks_within_a_bound() {
    let mut options = ExecutorOptions::default();
    options.retry = ToolRetry::new(3, Duration::from_millis(100));
    // `Retry-After: 5` twice: 5 s each instead of the 100 ms and 200 ms backoff.
    let counters = Arc::new(Counters::default());
    let executor = Executor::new(registry(&counters)).with_options(options.clone());
    let start = Instant::now();
    let result =
        executor.execute(exact(&[request("f", "t_flaky", &[("kind", "busy")])]), &context(true)).await;
    assert_eq!(result[0].result, "ok after 3 attempts");
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    // Asking for longer than `max_retry_after` (60 s by default): returned at once.
    let counters = Arc::new(Counters::default());
    let executor = Executor::new(registry(&counters)).with_options(options);
    let start = Instant::now();
    let result =
        executor.execute(exact(&[request("f", "t_flaky", &[("kind", "very_busy")])]), &context(true)).await;
    assert_eq!(result[0].error_kind, Some(ErrorKind::Network));
    assert_eq!(counters.flaky.load(Ordering::SeqCst), 1);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

/// An executor with one method, `t_cut`, that cancels `token` and then fails with a
/// retryable error, so that its attempt ends with the failure while the cycle is already
/// cancelled (on the paused clock's one thread, the same way every run).
fn cancelling_then_failing(token: &CancellationToken, attempts: &Arc<AtomicUsize>, max: u32) -> Executor {
    let (token, attempts) = (token.clone(), attempts.clone());
    let method = MethodSpec::new(
        MethodDefinition::new("cut", "cancels its cycle, then fails retryably"),
        move |_, _| {
            attempts.fetch_add(1, Ordering::SeqCst);
            let token = token.clone();
            Box::pin(async move {
                token.cancel();
                Err(ToolError::network("connection reset"))
            }) as BoxFuture<'static, _>
        },
    );
    let registry = ToolRegistry::new();
    registry.register(ToolSpec::stateless("t", "Test tools").with_method(method)).unwrap();
    let mut options = ExecutorOptions::default();
    options.retry = ToolRetry::new(max, Duration::from_millis(100));
    Executor::new(Arc::new(registry)).with_options(options)
}

#[tokio::test(start_paused = true)]
async fn a_retryable_failure_after_the_cycle_was_cancelled_answers_cancelled() {
    // Attempts remain: the retry that would follow is cancelled, and the call answers
    // `Cancelled` (as it does when cancelled while running or between attempts), at once.
    let token = CancellationToken::new();
    let attempts = Arc::new(AtomicUsize::new(0));
    let executor = cancelling_then_failing(&token, &attempts, 3);
    let start = Instant::now();
    let ctx = context(true).with_cancel(token);
    let result = executor.execute(exact(&[request("c", "t_cut", &[])]), &ctx).await;
    assert_eq!(result[0].error_kind, Some(ErrorKind::Cancelled), "{}", result[0].result);
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "no retry after the cancellation");
    assert_eq!(start.elapsed(), Duration::ZERO, "no backoff waited");

    // The last attempt: no retry would follow, so the failure is the answer.
    let token = CancellationToken::new();
    let attempts = Arc::new(AtomicUsize::new(0));
    let executor = cancelling_then_failing(&token, &attempts, 1);
    let ctx = context(true).with_cancel(token);
    let result = executor.execute(exact(&[request("c", "t_cut", &[])]), &ctx).await;
    assert_eq!(result[0].error_kind, Some(ErrorKind::Network), "{}", result[0].result);
    assert_eq!(result[0].result, "connection reset");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}

fn run_count(executor: &Executor, ctx: &ExecutionContext) -> ToolExecutionResult {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(executor.execute(exact(&[request("c", "t_count", &[])]), ctx)).remove(0)
}

use tool_calling::ToolExecutionResult;

#[test]
fn toggles_policy_and_confirmation_are_checked_in_order_and_denied_calls_never_run() {
    let counters = Arc::new(Counters::default());
    let registry = registry(&counters);

    // 1. Toggles: before the policy and the confirmation are even asked.
    let confirm_counter = counters.clone();
    let confirming = move |_: PreparedCall| {
        confirm_counter.confirmations.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { true }) as BoxFuture<'static, bool>
    };
    let executor = Executor::new(registry.clone())
        .with_policy(|_: &PreparedCall| PolicyDecision::Deny("never".into()))
        .with_confirmation(confirming.clone());
    let off = ExecutionContext::new(ToolCallConfig::default().with_toggle("t_count", false));
    let result = run_count(&executor, &off);
    assert_eq!(result.error_kind, Some(ErrorKind::Permission));
    assert!(result.result.contains("switched off"), "{}", result.result);
    assert_eq!(counters.confirmations.load(Ordering::SeqCst), 0);

    // 2. The policy: a deny stops the call before confirmation.
    let result = run_count(&executor, &ExecutionContext::default());
    assert!(result.result.contains("refused by the security policy: never"), "{}", result.result);
    assert_eq!(counters.confirmations.load(Ordering::SeqCst), 0);

    // 3. Require approval, then the confirmation callback refuses.
    let refusing = |_: PreparedCall| Box::pin(async { false }) as BoxFuture<'static, bool>;
    let executor = Executor::new(registry.clone())
        .with_policy(|_: &PreparedCall| PolicyDecision::RequireApproval)
        .with_confirmation(refusing);
    let result = run_count(&executor, &ExecutionContext::default());
    assert!(result.result.starts_with("not authorised"), "{}", result.result);

    // Approval required with no one to ask: refused.
    let executor =
        Executor::new(registry.clone()).with_policy(|_: &PreparedCall| PolicyDecision::RequireApproval);
    assert!(run_count(&executor, &ExecutionContext::default()).result.starts_with("not authorised"));
    let mut config = ToolCallConfig::default();
    config.require_confirmation = true;
    assert!(
        run_count(&Executor::new(registry.clone()), &ExecutionContext::new(config))
            .result
            .starts_with("not authorised")
    );
    assert_eq!(counters.count.load(Ordering::SeqCst), 0, "a denied call ran");

    // Approved: it runs.
    let executor = Executor::new(registry.clone()).with_confirmation(confirming);
    assert_eq!(run_count(&executor, &ExecutionContext::default()).status, ExecutionStatus::Success);
    assert_eq!(counters.count.load(Ordering::SeqCst), 1);
    assert_eq!(counters.confirmations.load(Ordering::SeqCst), 1);

    // Not agent-callable: refused even when everything else allows it.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let result = runtime
        .block_on(
            Executor::new(registry.clone())
                .execute(exact(&[request("i", "t_internal", &[])]), &ExecutionContext::default()),
        )
        .remove(0);
    assert_eq!(result.error_kind, Some(ErrorKind::Permission));
    assert_eq!(counters.internal.load(Ordering::SeqCst), 0, "the internal method ran");
}

#[tokio::test(start_paused = true)]
async fn unknown_and_incomplete_requests_get_a_result_telling_the_model_what_to_do() {
    let counters = Arc::new(Counters::default());
    let executor = Executor::new(registry(&counters));
    let incomplete =
        request("x", "t_count", &[]).with_problem("the value of `a` is not closed: end it with 「末」");
    let results = executor.execute(exact(&[request("u", "t_cuont", &[]), incomplete]), &context(true)).await;
    assert_eq!(results.len(), 2, "every request gets exactly one result");
    assert_eq!(results[0].error_kind, Some(ErrorKind::NotFound));
    assert!(results[0].result.contains("t_count"), "suggests the closest name: {}", results[0].result);
    assert_eq!(results[1].error_kind, Some(ErrorKind::Validation));
    assert!(results[1].result.contains("not closed: end it with 「末」"), "{}", results[1].result);
    assert_eq!(counters.count.load(Ordering::SeqCst), 0, "an incomplete request ran");
}

#[tokio::test(start_paused = true)]
async fn arguments_are_layered_in_one_place_and_blank_values_let_the_layer_below_show() {
    let executor = Executor::new(registry(&Arc::default()));
    let mut preset = Args::new();
    preset.insert("b".into(), json!("preset"));
    preset.insert("c".into(), json!("preset"));
    let ctx = context(true).with_preset("t_echo", preset);
    let req = request("e", "t_echo", &[("c", "model"), ("b", " ")]);
    let result = executor.execute(exact(&[req]), &ctx).await.remove(0);
    let got: Value = serde_json::from_str(&result.result).unwrap();
    assert_eq!(got, json!({"a": "schema", "b": "preset", "c": "model"}));
}

#[tokio::test(start_paused = true)]
async fn the_executor_knows_no_protocol_keys_every_argument_reaches_the_tool() {
    // `archery`, `ink`, `river` and `vref` steer a VCP host; the executor runs calls by
    // exact name and passes every argument it is given.
    let executor = Executor::new(registry(&Arc::default()));
    let req = request("e", "t_echo", &[("river", "r"), ("archery", "true"), ("ink", "i"), ("vref", "v")]);
    let result = executor.execute(exact(&[req]), &context(true)).await.remove(0);
    let got: Value = serde_json::from_str(&result.result).unwrap();
    assert_eq!(
        got,
        json!({"a": "schema", "b": "schema", "c": "schema", "river": "r", "archery": "true", "ink": "i", "vref": "v"})
    );
}

#[test]
fn outside_a_tokio_runtime_calls_fail_with_a_result_instead_of_panicking() {
    let executor = Executor::new(registry(&Arc::default()));
    let results = futures::executor::block_on(
        executor.execute(exact(&[request("c", "t_count", &[])]), &ExecutionContext::default()),
    );
    assert_eq!(results[0].error_kind, Some(ErrorKind::Execution));
    assert!(results[0].result.contains("needs a Tokio runtime"), "{}", results[0].result);
}

/// Runs one call of `name` with `args` through an executor that approves everything but
/// counts how often it was asked.
fn asked_about(
    counters: &Arc<Counters>,
    name: &str,
    args: &[(&str, &str)],
    ctx: &ExecutionContext,
) -> ToolExecutionResult {
    let confirm_counter = counters.clone();
    let executor = Executor::new(registry(counters)).with_confirmation(move |_: PreparedCall| {
        confirm_counter.confirmations.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { true }) as BoxFuture<'static, bool>
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(executor.execute(exact(&[request("q", name, args)]), ctx)).remove(0)
}

#[test]
fn no_one_is_asked_to_confirm_a_call_that_would_be_refused() {
    let counters = Arc::new(Counters::default());
    let default = ExecutionContext::default();
    let cases = [
        ("t_nothing", vec![], &default, ErrorKind::NotFound),
        ("t_internal", vec![], &default, ErrorKind::Permission),
        ("t_sleep", vec![("ms", "soon")], &default, ErrorKind::Validation),
        ("t_sleep", vec![], &default, ErrorKind::Validation),
    ];
    for (name, args, ctx, kind) in cases {
        let result = asked_about(&counters, name, &args, ctx);
        assert_eq!(result.error_kind, Some(kind), "{name}: {}", result.result);
    }
    let off = ExecutionContext::new(ToolCallConfig::default().with_toggle("t", false));
    assert_eq!(asked_about(&counters, "t_count", &[], &off).error_kind, Some(ErrorKind::Permission));
    let denying = Executor::new(registry(&counters))
        .with_policy(|_: &PreparedCall| PolicyDecision::Deny("no".into()))
        .with_confirmation({
            let c = counters.clone();
            move |_: PreparedCall| {
                c.confirmations.fetch_add(1, Ordering::SeqCst);
                Box::pin(async { true }) as BoxFuture<'static, bool>
            }
        });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let denied =
        runtime.block_on(denying.execute(exact(&[request("d", "t_count", &[])]), &default)).remove(0);
    assert_eq!(denied.error_kind, Some(ErrorKind::Permission));
    assert_eq!(counters.confirmations.load(Ordering::SeqCst), 0, "asked about a call that would be refused");
    assert_eq!((counters.count.load(Ordering::SeqCst), counters.internal.load(Ordering::SeqCst)), (0, 0));

    // A call that would run is asked about, with the arguments it would run with.
    let seen = Arc::new(std::sync::Mutex::new(None));
    let record = seen.clone();
    let executor = Executor::new(registry(&counters)).with_confirmation(move |call: PreparedCall| {
        *record.lock().unwrap() = Some(call.args.clone());
        Box::pin(async { true }) as BoxFuture<'static, bool>
    });
    let result =
        runtime.block_on(executor.execute(exact(&[request("s", "t_sleep", &[("ms", "5")])]), &default));
    assert_eq!(result[0].status, ExecutionStatus::Success);
    assert_eq!(
        *seen.lock().unwrap(),
        Some(json!({"ms": 5}).as_object().unwrap().clone()),
        "coerced arguments"
    );
}

/// A tool that returns its `text` argument, as text or inside a JSON part.
fn echo_registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    let schema = schema(json!({"text": {"type": "string"}, "json": {"type": "boolean"}}), json!(["text"]));
    registry
        .register(ToolSpec::stateless("e", "Echo").with_method(MethodSpec::new(
            MethodDefinition::new("echo", "echo").with_parameters(schema),
            |_, args: tool_calling::tools::ArgMap| {
                let text = args["text"].as_str().unwrap_or("").to_string();
                let json = args.get("json").and_then(Value::as_bool).unwrap_or(false);
                Box::pin(async move {
                    Ok(if json {
                        ToolOutput::Parts(vec![tool_calling::ContentPart::json(json!({ "t": text }))])
                    } else {
                        ToolOutput::Text(text)
                    })
                }) as BoxFuture<'static, _>
            },
        )))
        .unwrap();
    Arc::new(registry)
}

#[tokio::test(start_paused = true)]
async fn results_longer_than_the_limit_are_cut_with_a_note() {
    let mut options = ExecutorOptions::default();
    assert_eq!(options.max_result_bytes, 1 << 20, "the documented default");
    options.max_result_bytes = 10;
    let executor = Executor::new(echo_registry()).with_options(options);
    let run = |text: &str, json: bool| {
        let mut request = request("r", "e_echo", &[("text", text)]);
        if json {
            request = request.with_arg("json", "true");
        }
        let executor = executor.clone();
        async move { executor.execute(exact(&[request]), &context(false)).await.remove(0) }
    };
    // At the limit: whole.
    assert_eq!(run("0123456789", false).await.result, "0123456789");
    // One byte past it: cut, and the note says by how much.
    assert_eq!(
        run("0123456789X", false).await.result,
        "0123456789\n[… the result was too long: 1 more bytes were cut]"
    );
    // Never inside a character: five two-byte letters, cut at 9 bytes, keep four.
    let mut options = ExecutorOptions::default();
    options.max_result_bytes = 9;
    let narrow = Executor::new(echo_registry()).with_options(options);
    let result =
        narrow.execute(exact(&[request("r", "e_echo", &[("text", "ééééé")])]), &context(false)).await;
    assert_eq!(result[0].result, "éééé\n[… the result was too long: 2 more bytes were cut]");
    // A JSON part too long is cut as text, in the parts and in the rendering.
    let result = run("abcdefghijklmnop", true).await;
    assert!(result.result.starts_with("{\"t\":\"abcd") && result.result.ends_with("were cut]"), "{result:?}");
    assert!(
        matches!(&result.parts[0], tool_calling::ContentPart::Text { text } if text == &result.result),
        "{result:?}"
    );
}

fn limited(max_running_calls: usize) -> Executor {
    let mut options = ExecutorOptions::default();
    options.max_running_calls = max_running_calls;
    Executor::new(registry(&Arc::default())).with_options(options)
}

fn hundreds(prefix: &str) -> Vec<ToolRequest> {
    (0..2).map(|i| request(&format!("{prefix}{i}"), "t_sleep", &[("ms", "100")])).collect()
}

#[tokio::test(start_paused = true)]
async fn running_calls_are_bounded_across_cycles_at_the_limit_and_one_past_it() {
    assert_eq!(ExecutorOptions::default().max_running_calls, 1024, "the documented default");
    // Two cycles (two conversations) of two 100 ms calls each, sharing one executor.
    for (limit, expected_ms) in [(4, 100), (3, 200), (2, 200), (1, 400)] {
        let executor = limited(limit);
        let (a, b) = (hundreds("a"), hundreds("b"));
        let other = executor.clone();
        let ctx = context(true);
        let start = Instant::now();
        let (ra, rb) = tokio::join!(executor.execute(exact(&a), &ctx), other.execute(exact(&b), &ctx));
        assert_eq!(start.elapsed(), Duration::from_millis(expected_ms), "limit {limit}");
        assert!(ra.iter().chain(&rb).all(|r| r.result == "slept 100"), "limit {limit}");
        assert_eq!(executor.free_call_slots(), limit, "every slot is given back");
    }
}

#[tokio::test(start_paused = true)]
async fn the_time_limit_counts_from_the_slot_and_a_timed_out_call_frees_it() {
    let executor = limited(1);
    let mut ctx = context(true);
    ctx.config.timeout_ms = 150;
    // The second call waits 100 ms for the slot, then has its own 150 ms.
    let start = Instant::now();
    let results = executor.execute(exact(&hundreds("w")), &ctx).await;
    assert_eq!(start.elapsed(), Duration::from_millis(200));
    assert!(results.iter().all(|r| r.result == "slept 100"), "{results:?}");
    // A call cut at its time limit gives its slot back.
    let slow = executor.execute(exact(&[request("s", "t_slow", &[])]), &ctx).await;
    assert_eq!(slow[0].error_kind, Some(ErrorKind::Timeout));
    // The aborted task is dropped (and its slot given back) when the runtime next runs.
    tokio::task::yield_now().await;
    assert_eq!(executor.free_call_slots(), 1);
}

#[tokio::test(start_paused = true)]
async fn waiting_for_a_slot_ends_when_the_cycle_is_cancelled() {
    let executor = limited(1);
    let holder = executor.clone();
    let long = [request("long", "t_sleep", &[("ms", "1000")])];
    let token = CancellationToken::new();
    let waiting_ctx = context(true).with_cancel(token.clone());
    let waiting = [request("w", "t_sleep", &[("ms", "10")])];
    let start = Instant::now();
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    };
    let waiter = async {
        let results = executor.execute(exact(&waiting), &waiting_ctx).await;
        (results, start.elapsed())
    };
    let holder_ctx = context(true);
    let (held, (waited, waited_for), ()) =
        tokio::join!(holder.execute(exact(&long), &holder_ctx), waiter, canceller);
    assert_eq!(waited[0].error_kind, Some(ErrorKind::Cancelled), "{}", waited[0].result);
    assert!(waited[0].result.contains("before"), "{}", waited[0].result);
    assert_eq!(waited_for, Duration::from_millis(50), "the wait ended with the cancellation");
    assert_eq!(held[0].result, "slept 1000", "the running call is not disturbed");
}

#[tokio::test(start_paused = true)]
async fn a_rule_on_the_arguments_as_a_whole_is_worded_for_the_whole() {
    let registry = ToolRegistry::new();
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "minProperties": 2
    });
    registry
        .register(ToolSpec::stateless("w", "Whole").with_method(MethodSpec::new(
            MethodDefinition::new("both", "needs two arguments").with_parameters(schema),
            |_, _| Box::pin(async { Ok(ToolOutput::Text("ran".into())) }) as BoxFuture<'static, _>,
        )))
        .unwrap();
    let executor = Executor::new(Arc::new(registry));
    let result = executor.execute(exact(&[request("w", "w_both", &[("a", "x")])]), &context(true)).await;
    assert_eq!(result[0].error_kind, Some(ErrorKind::Validation));
    assert!(
        result[0].result.contains("invalid arguments: arguments (minProperties): "),
        "{}",
        result[0].result
    );
    assert!(!result[0].result.contains("parameter `"), "{}", result[0].result);
}
