//! Early execution on tokio's paused clock: a scripted model streams its reply chunk by
//! chunk (with paused-clock pauses between chunks) and the engine runs each request as
//! soon as its block has ended. Times below are virtual (the paused clock), never wall
//! time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, StreamExt, stream};
use serde_json::{Value, json};
use tokio::time::Instant;
use tool_calling::config::ToolCallConfig;
use tool_calling::engine::{Engine, StreamCycleError, ToolCallCycleResult};
use tool_calling::exec::{CycleEvent, ExecutionContext, Executor, ExecutorOptions};
use tool_calling::model::{AssistantTurn, FinishReason, Message, TurnDelta};
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::RequestIdStyle;
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::vcp::VcpOptions;
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::protocol::{
    EventSink, StreamCollector, StreamEvent, StreamParser, ToolDeclarations, TurnState,
};
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::ToolDefinition;
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::{ArgMap, BoxFuture, MethodSpec, ToolOutput, ToolSpec};
use tool_calling::{ErrorKind, Span, ToolError, ToolExecutionResult, ToolRequest};

#[path = "support/vcp_block.rs"]
mod vcp_block;
use vcp_block::block;

/// What happened, in order, each entry stamped with the paused clock's milliseconds.
#[derive(Clone)]
struct Log {
    start: Instant,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Log {
    fn new() -> Self {
        Log { start: Instant::now(), lines: Arc::default() }
    }

    fn note(&self, what: impl std::fmt::Display) {
        let ms = self.start.elapsed().as_millis();
        self.lines.lock().unwrap().push(format!("{ms} {what}"));
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    fn ms(&self) -> u128 {
        self.start.elapsed().as_millis()
    }
}

/// Tool `t`: `t_sleep` (logs its start and end) and `t_fail`.
fn registry(log: &Log) -> Arc<ToolRegistry> {
    let sleep_log = log.clone();
    let spec = ToolSpec::stateless("t", "Test tools")
        .with_method(MethodSpec::new(
            MethodDefinition::new("sleep", "sleep").with_parameters(json!({
                "type": "object",
                "properties": {"ms": {"type": "integer"}},
                "required": ["ms"]
            })),
            move |_, args: ArgMap| {
                let log = sleep_log.clone();
                Box::pin(async move {
                    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                    log.note(format!("start sleep {ms}"));
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    log.note(format!("end sleep {ms}"));
                    Ok(ToolOutput::Text(format!("slept {ms}")))
                }) as BoxFuture<'static, _>
            },
        ))
        .with_method(MethodSpec::new(MethodDefinition::new("fail", "fail"), |_, _| {
            Box::pin(async { Err(ToolError::execution("disk full")) }) as BoxFuture<'static, _>
        }));
    let registry = ToolRegistry::new();
    registry.register(spec).unwrap();
    Arc::new(registry)
}

fn vcp() -> Arc<VcpProtocol> {
    Arc::new(VcpProtocol::new(VcpOptions::default().request_ids(RequestIdStyle::Sequential)))
}

fn engine(log: &Log) -> Engine {
    Engine::new(registry(log)).with_protocol(vcp())
}

fn context() -> ExecutionContext {
    let mut config = ToolCallConfig::default();
    config.timeout_ms = 1_000;
    ExecutionContext::new(config)
}

fn sleep_block(ms: u64) -> String {
    block(&[("tool_name", "t_sleep"), ("ms", &ms.to_string())])
}

/// A model reply: each chunk is produced after waiting its delay (paused clock), and
/// logged when produced.
fn scripted(log: &Log, steps: Vec<(u64, String)>) -> impl Stream<Item = String> + Send + 'static {
    let log = log.clone();
    stream::iter(steps.into_iter().enumerate()).then(move |(i, (delay, text))| {
        let log = log.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            log.note(format!("model chunk {i}"));
            text
        }
    })
}

/// `text` in chunks of `size` characters.
fn chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The cycle with durations zeroed (the only field allowed to differ), in the results
/// and in the result messages written from them.
fn normalised(mut cycle: ToolCallCycleResult) -> ToolCallCycleResult {
    for result in &mut cycle.execution_results {
        result.duration_ms = 0;
    }
    for message in &mut cycle.result_messages {
        for result in &mut message.tool_results {
            result.duration_ms = 0;
        }
        for block in &mut message.content {
            if let tool_calling::model::ContentBlock::Text { text } = block {
                *text = zero_durations(text);
            }
        }
    }
    cycle
}

/// `duration_ms:「始」N「末」` → `duration_ms:「始」0「末」` in VCP result blocks.
fn zero_durations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let marker = "duration_ms:「始」";
    while let Some(i) = rest.find(marker) {
        out.push_str(&rest[..i + marker.len()]);
        rest = &rest[i + marker.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        out.push('0');
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// Every event of the cycles run with the returned context, stamped with the paused
/// clock's milliseconds.
type Seen = Arc<Mutex<Vec<(u128, CycleEvent)>>>;

fn observed(log: &Log, ctx: ExecutionContext) -> (ExecutionContext, Seen) {
    let seen: Seen = Arc::default();
    let (sink, log) = (seen.clone(), log.clone());
    (ctx.on_event(move |event| sink.lock().unwrap().push((log.ms(), event.clone()))), seen)
}

/// The events of `seen`, without their times.
fn events(seen: &Seen) -> Vec<CycleEvent> {
    seen.lock().unwrap().iter().map(|(_, e)| e.clone()).collect()
}

/// The normal text the events reported.
fn text_of(events: &[CycleEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            CycleEvent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The requests the events reported as parsed, in order.
fn requests_of(events: &[CycleEvent]) -> Vec<ToolRequest> {
    events
        .iter()
        .filter_map(|e| match e {
            CycleEvent::RequestParsed { request } => Some(request.clone()),
            _ => None,
        })
        .collect()
}

/// The results the events reported, in the order they came.
fn results_of(events: &[CycleEvent]) -> Vec<ToolExecutionResult> {
    events
        .iter()
        .filter_map(|e| match e {
            CycleEvent::Finished { result } => Some(result.clone()),
            _ => None,
        })
        .collect()
}

fn ids(requests: &[ToolRequest]) -> Vec<&str> {
    requests.iter().map(|r| r.request_id.as_str()).collect()
}

fn result_ids(results: &[ToolExecutionResult]) -> Vec<&str> {
    results.iter().map(|r| r.request_id.as_str()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_tool_starts_before_the_reply_has_finished_streaming() {
    let log = Log::new();
    let events = log.clone();
    let engine = engine(&log);
    let ctx = context().on_event(move |event| match event {
        CycleEvent::RequestParsed { request } => events.note(format!("event parsed {}", request.tool_name)),
        CycleEvent::Started { tool_name, .. } => events.note(format!("event started {tool_name}")),
        CycleEvent::Finished { result } => events.note(format!("event finished {}", result.tool_name)),
        CycleEvent::Parsed { requests } => events.note(format!("event reply parsed ({})", requests.len())),
        CycleEvent::CycleEnded { finish_reason } => events.note(format!("event ended ({finish_reason})")),
        _ => {}
    });
    let reply = scripted(
        &log,
        vec![
            (0, format!("Let me sleep.\n{}", sleep_block(10))),
            (1_000, "Still writing while it sleeps.\n".to_string()),
            (1_000, "Done.".to_string()),
        ],
    );

    let streamed = engine.run_stream(reply, &ctx).await.unwrap();

    assert_eq!(
        log.lines(),
        [
            "0 model chunk 0",
            "0 event parsed t_sleep",
            "0 event started t_sleep",
            "0 start sleep 10",
            "10 end sleep 10",
            "10 event finished t_sleep",
            "1000 model chunk 1",
            "2000 model chunk 2",
            "2000 event reply parsed (1)",
            "2000 event ended (tool_calls)",
        ],
        "the tool started and finished while the model was still writing"
    );
    assert_eq!(log.ms(), 2_000, "the call added no time to the reply's own");
    assert_eq!(streamed.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        streamed.turn.text(),
        format!("Let me sleep.\n{}Still writing while it sleeps.\nDone.", sleep_block(10))
    );
    assert_eq!(streamed.execution_results[0].result, "slept 10");
}

#[tokio::test(start_paused = true)]
async fn results_come_back_in_request_order_even_when_a_later_call_finishes_first() {
    let log = Log::new();
    let engine = engine(&log);
    let reply = scripted(&log, vec![(0, sleep_block(500)), (20, sleep_block(10)), (0, "bye".into())]);
    let (ctx, seen) = observed(&log, context());

    let streamed = engine.run_stream(reply, &ctx).await.unwrap();

    let finished: Vec<String> = results_of(&events(&seen)).into_iter().map(|r| r.result).collect();
    assert_eq!(finished, ["slept 10", "slept 500"], "the observer sees results as they arrive");
    let results: Vec<&str> = streamed.execution_results.iter().map(|r| r.result.as_str()).collect();
    assert_eq!(results, ["slept 500", "slept 10"], "the cycle has them in request order");
    assert_eq!(ids(&streamed.parsed_requests), ["req_1", "req_2"]);
    assert_eq!(result_ids(&streamed.execution_results), ["req_1", "req_2"]);
    assert_eq!(log.ms(), 500, "the calls overlapped each other and the stream");
}

#[tokio::test(start_paused = true)]
async fn every_request_gets_one_result_including_incomplete_ones() {
    let log = Log::new();
    let engine = engine(&log);
    let text = format!(
        "{}{}Cut off:\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」t_sleep「末」,\nms:「始」20",
        sleep_block(5),
        block(&[("ms", "1")]),
    );
    let streamed = engine.run_stream(stream::iter(chunks(&text, 5)), &context()).await.unwrap();

    let cycle = &streamed;
    assert_eq!(cycle.parsed_requests.len(), 3);
    assert_eq!(result_ids(&cycle.execution_results), ids(&cycle.parsed_requests));
    let kinds: Vec<Option<ErrorKind>> = cycle.execution_results.iter().map(|r| r.error_kind).collect();
    assert_eq!(kinds, [None, Some(ErrorKind::Validation), Some(ErrorKind::Validation)]);
    assert!(!cycle.parsed_requests[2].complete);
    assert!(!log.lines().iter().any(|l| l.contains("start sleep 20")), "the cut-off call never ran");

    let one_shot = engine.run_turn(&text, &context()).await.unwrap();
    assert_eq!(normalised(streamed), normalised(one_shot));
}

#[tokio::test(start_paused = true)]
async fn the_streamed_cycle_equals_the_one_shot_cycle_whatever_the_chunking() {
    let text = format!(
        "<think>Which tools? <<<[TOOL_REQUEST]>>> not this one</think>Here goes.\n{}{}{}{}{}{}\
         And an unfinished one:\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」t_sleep「末」,\nms:「始」7「末」\n",
        sleep_block(30),
        block(&[("tool_name", "t_fail")]),
        block(&[("tool_name", "nope_missing")]),
        block(&[("tool_name", "t_sleep"), ("ms", "50"), ("archery", "no_reply")]),
        block(&[("tool_name", "t_sleep"), ("ms", "2"), ("ms", "3"), ("request_id", "mine")]),
        "<<<[TOOL_REQUEST]>>>\n<<<[END_TOOL_REQUEST]>>>\nEmpty block above.\n",
    );
    let log = Log::new();
    let engine = engine(&log);
    let one_shot = normalised(engine.run_turn(&text, &context()).await.unwrap());
    assert_eq!(one_shot.parsed_requests.len(), 6);
    assert!(!one_shot.diagnostics.is_empty());

    for size in [1, 2, 3, 7, 16, 64, text.chars().count()] {
        let (ctx, seen) = observed(&log, context());
        let streamed = engine.run_stream(stream::iter(chunks(&text, size)), &ctx).await.unwrap();
        assert_eq!(streamed.turn.text(), text);
        assert_eq!(streamed.finish_reason, FinishReason::ToolCalls);
        let seen = events(&seen);
        assert_eq!(
            requests_of(&seen),
            one_shot.parsed_requests,
            "chunks of {size}: the observer saw every request"
        );
        assert_eq!(text_of(&seen), one_shot.normal_text, "chunks of {size}: the observer saw the text");
        assert_eq!(normalised(streamed), one_shot, "chunks of {size}");
    }
}

#[tokio::test(start_paused = true)]
async fn serial_mode_runs_streamed_calls_one_after_another_in_order() {
    let log = Log::new();
    let engine = engine(&log);
    let mut ctx = context();
    ctx.config.parallel_execution = false;
    let reply = scripted(&log, vec![(0, sleep_block(100)), (50, sleep_block(10))]);

    let streamed = engine.run_stream(reply, &ctx).await.unwrap();

    assert_eq!(
        log.lines(),
        [
            "0 model chunk 0",
            "0 start sleep 100",
            "50 model chunk 1",
            "100 end sleep 100",
            "100 start sleep 10",
            "110 end sleep 10",
        ]
    );
    assert_eq!(result_ids(&streamed.execution_results), ["req_1", "req_2"]);
}

#[tokio::test(start_paused = true)]
async fn parallel_mode_honours_max_concurrency() {
    let log = Log::new();
    let mut options = ExecutorOptions::default();
    options.max_concurrency = 2;
    let executor = Executor::new(registry(&log)).with_options(options);
    let engine = Engine::new(executor.registry().clone()).with_executor(executor).with_protocol(vcp());
    let text = format!("{}{}{}", sleep_block(100), sleep_block(101), sleep_block(102));

    let streamed = engine.run_stream(stream::iter([text]), &context()).await.unwrap();

    assert_eq!(log.ms(), 202, "the third call waited for a free slot (100 ms + 102 ms)");
    assert!(log.lines().contains(&"100 start sleep 102".to_string()), "{:?}", log.lines());
    assert_eq!(streamed.execution_results.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn fire_and_forget_calls_are_answered_at_once_and_not_waited_for() {
    let log = Log::new();
    let engine = engine(&log);
    let archery = block(&[("tool_name", "t_sleep"), ("ms", "300"), ("archery", "true")]);
    let reply = scripted(&log, vec![(0, archery), (100, "Carrying on.".into())]);
    let (ctx, seen) = observed(&log, context());

    let streamed = engine.run_stream(reply, &ctx).await.unwrap();

    let answered_at: Vec<u128> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, e)| matches!(e, CycleEvent::Finished { .. }))
        .map(|(ms, _)| *ms)
        .collect();
    assert_eq!(log.ms(), 100, "the cycle did not wait for the background call");
    assert_eq!(answered_at, [0]);
    assert!(streamed.execution_results[0].result.starts_with("started in the background"));
    assert!(log.lines().contains(&"0 start sleep 300".to_string()));
}

#[tokio::test(start_paused = true)]
async fn the_observer_hears_text_requests_results_and_the_end_as_they_happen() {
    let log = Log::new();
    let engine = Engine::new(registry(&log)).with_protocol(Arc::new(LineProtocol));
    let reply = scripted(
        &log,
        vec![
            (0, "I'll sleep.\nCALL t_sleep 30\nWhile that ".into()),
            (10, "runs, more words.\nCALL t_sl".into()),
            (10, "eep 5\nBye.".into()),
        ],
    );
    let (ctx, seen) = observed(&log, context());

    let streamed = engine.run_stream(reply, &ctx).await.unwrap();

    let timed = seen.lock().unwrap().clone();
    let all = events(&seen);
    assert_eq!(text_of(&all), "I'll sleep.\nWhile that runs, more words.\nBye.");
    assert_eq!(streamed.normal_text, text_of(&all));
    let calls: Vec<(u128, String)> = timed
        .iter()
        .filter_map(|(ms, e)| match e {
            CycleEvent::RequestParsed { request } => Some((*ms, request.request_id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls, [(0, "line_1".to_string()), (20, "line_2".to_string())]);
    let results: Vec<(u128, String)> = timed
        .iter()
        .filter_map(|(ms, e)| match e {
            CycleEvent::Finished { result } => Some((*ms, result.result.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results, [(25, "slept 5".to_string()), (30, "slept 30".to_string())]);
    assert!(all.iter().all(|e| !matches!(e, CycleEvent::Text { text } if text.is_empty())), "no empty text");
    let (last_ms, last) = timed.last().unwrap();
    assert_eq!(*last_ms, 30);
    assert_eq!(*last, CycleEvent::CycleEnded { finish_reason: FinishReason::ToolCalls });
    assert_eq!(all.iter().filter(|e| matches!(e, CycleEvent::CycleEnded { .. })).count(), 1);

    let one_shot = engine.run_turn(streamed.turn.text().as_ref(), &context()).await.unwrap();
    assert_eq!(normalised(streamed), normalised(one_shot));
}

#[tokio::test(start_paused = true)]
async fn the_observer_hears_what_the_vcp_stream_parser_decides() {
    let log = Log::new();
    let engine = engine(&log);
    let text = format!("Working.\n{}Between.\n{}The end.", sleep_block(40), sleep_block(20));
    let pieces = chunks(&text, 9);
    let (ctx, seen) = observed(&log, context());

    let streamed = engine.run_stream(stream::iter(pieces.clone()), &ctx).await.unwrap();

    // What the protocol's own stream parser reports for the same chunks.
    let mut parser = vcp().stream_parser();
    let mut parsed = Vec::new();
    for piece in &pieces {
        parser.push_text(piece, &mut parsed);
    }
    parser.finish(&mut parsed);
    let mut collector = StreamCollector::new();
    collector.extend(parsed);
    let all = events(&seen);
    assert_eq!(text_of(&all), collector.normal_text());
    assert_eq!(streamed.normal_text, collector.normal_text());

    assert_eq!(requests_of(&all), streamed.parsed_requests);
    let mut results = results_of(&all);
    assert_eq!(result_ids(&results), ["req_2", "req_1"], "completion order");
    results.sort_by(|a, b| a.request_id.cmp(&b.request_id));
    assert_eq!(results, streamed.execution_results);
    assert_eq!(all.last(), Some(&CycleEvent::CycleEnded { finish_reason: FinishReason::ToolCalls }));
}

#[tokio::test(start_paused = true)]
async fn a_reply_without_requests_finishes_with_stop() {
    let log = Log::new();
    let (ctx, seen) = observed(&log, context());
    let streamed = engine(&log).run_stream(stream::iter(["Just ", "talking."]), &ctx).await.unwrap();
    assert_eq!(streamed.finish_reason, FinishReason::Stop);
    assert!(!streamed.has_tool_requests);
    assert_eq!(events(&seen).last(), Some(&CycleEvent::CycleEnded { finish_reason: FinishReason::Stop }));
}

#[tokio::test(start_paused = true)]
async fn a_protocol_without_a_stream_parser_of_its_own_is_read_once_at_the_end() {
    let log = Log::new();
    let engine = Engine::new(registry(&log)).with_protocol(Arc::new(WholeLineProtocol));
    let reply = scripted(&log, vec![(0, "Sleeping.\nCALL t_sl".into()), (100, "eep 10\nBye.".into())]);
    let (ctx, seen) = observed(&log, context());

    let streamed = engine.run_stream(reply, &ctx).await.unwrap();

    assert_eq!(
        log.lines(),
        ["0 model chunk 0", "100 model chunk 1", "100 start sleep 10", "110 end sleep 10"],
        "nothing can start before the reply has ended"
    );
    assert_eq!(streamed.normal_text, "Sleeping.\nBye.", "the text outside the requests' spans");
    let timed = seen.lock().unwrap().clone();
    assert!(timed.iter().all(|(ms, _)| *ms >= 100), "nothing is reported before the end: {timed:?}");
    let all = events(&seen);
    assert_eq!(text_of(&all), "Sleeping.\nBye.");
    assert_eq!(ids(&requests_of(&all)), ["line_1"]);
    assert_eq!(results_of(&all)[0].result, "slept 10");
    assert_eq!(all.last(), Some(&CycleEvent::CycleEnded { finish_reason: FinishReason::ToolCalls }));
    let one_shot = engine.run_turn(streamed.turn.text().as_ref(), &context()).await.unwrap();
    assert_eq!(normalised(streamed), normalised(one_shot));
}

#[tokio::test(start_paused = true)]
async fn a_failing_stream_keeps_what_ran_and_reports_the_error() {
    let log = Log::new();
    let engine = engine(&log);
    let cut = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」t_sleep「末」,\nms:「始」5";
    let reply = stream::iter([
        Ok(sleep_block(50)),
        Ok(cut.to_string()),
        Err(std::io::Error::other("connection reset")),
        Ok(sleep_block(1)),
    ]);
    let (ctx, seen) = observed(&log, context());

    let error = engine.run_stream(reply, &ctx).await.unwrap_err();

    assert_eq!(error.to_string(), "the reply stream failed: connection reset");
    assert!(std::error::Error::source(&error).is_some());
    let StreamCycleError::Stream { partial, .. } = error else { panic!("not a stream error: {error}") };
    let partial: ToolCallCycleResult = *partial;
    assert_eq!(partial.finish_reason, FinishReason::Error);
    assert_eq!(partial.turn.text(), format!("{}{cut}", sleep_block(50)));
    let outcomes: Vec<(&str, Option<ErrorKind>)> =
        partial.execution_results.iter().map(|r| (r.result.as_str(), r.error_kind)).collect();
    assert_eq!(outcomes[0], ("slept 50", None), "the call already started was waited for");
    assert_eq!(outcomes[1].1, Some(ErrorKind::Validation), "the cut-off block is answered as incomplete");
    assert_eq!(outcomes.len(), 2, "nothing after the error was read");
    assert_eq!(log.ms(), 50);
    assert_eq!(events(&seen).last(), Some(&CycleEvent::CycleEnded { finish_reason: FinishReason::Error }));

    // Without a failure, the fallible variant returns the cycle.
    let ok =
        engine.run_stream(stream::iter([Ok::<_, std::io::Error>(sleep_block(1))]), &context()).await.unwrap();
    assert_eq!(ok.execution_results[0].result, "slept 1");
}

#[tokio::test(start_paused = true)]
async fn cancelling_stops_reading_and_cancels_running_calls() {
    let log = Log::new();
    let engine = engine(&log);
    let ctx = context();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let reply = scripted(&log, vec![(0, sleep_block(500)), (1_000, sleep_block(1))]);

    let streamed = engine.run_stream(reply, &ctx).await.unwrap();

    assert_eq!(log.ms(), 50);
    assert_eq!(streamed.finish_reason, FinishReason::Cancelled);
    assert_eq!(streamed.turn.text(), sleep_block(500));
    assert_eq!(streamed.execution_results.len(), 1);
    assert_eq!(streamed.execution_results[0].error_kind, Some(ErrorKind::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn the_streamed_cycle_can_run_in_a_spawned_task() {
    let log = Log::new();
    let engine = engine(&log);
    let reply = scripted(&log, vec![(0, sleep_block(5)), (10, "done".into())]);
    let handle = tokio::spawn(async move { engine.run_stream(reply, &context()).await.unwrap() });
    let streamed = handle.await.unwrap();
    assert_eq!(streamed.execution_results[0].result, "slept 5");
}

/// One call per line, `CALL tool_name ms`; every other line is prose. Requests' spans
/// cover their whole line.
struct LineProtocol;

fn parse_line(line: &str, offset: usize, number: usize) -> Option<ToolRequest> {
    let call = line.trim_end_matches('\n').strip_prefix("CALL ")?;
    let mut words = call.split_whitespace();
    let mut request = ToolRequest::new(format!("line_{number}"), words.next().unwrap_or_default())
        .with_span(Span::new(offset, offset + line.len()));
    if let Some(ms) = words.next() {
        request = request.with_arg("ms", ms);
    }
    Some(request)
}

impl ToolCallingProtocol for LineProtocol {
    fn id(&self) -> &str {
        "line"
    }

    fn tool_declarations(&self, _tools: &[ToolDefinition]) -> ToolDeclarations {
        ToolDeclarations::Prompt(String::new())
    }

    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
        let text = turn.text();
        let mut offset = 0;
        let mut requests = Vec::new();
        for line in text.split_inclusive('\n') {
            if let Some(request) = parse_line(line, offset, requests.len() + 1) {
                requests.push(request);
            }
            offset += line.len();
        }
        ParseOutcome::new(requests, Vec::new())
    }

    fn result_messages(&self, results: &[ToolExecutionResult], _turn: &TurnState) -> Vec<Message> {
        let text: String = results.iter().map(|r| format!("RESULT {}\n", r.result)).collect();
        vec![Message::tool(text).with_tool_results(results.iter().cloned())]
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + '_> {
        Box::new(LineParser::default())
    }
}

/// [`LineProtocol`] without a stream parser of its own: the trait's default reads the
/// turn whole once it has ended.
struct WholeLineProtocol;

impl ToolCallingProtocol for WholeLineProtocol {
    fn id(&self) -> &str {
        "line"
    }

    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        LineProtocol.tool_declarations(tools)
    }

    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
        LineProtocol.parse_turn(turn)
    }

    fn result_messages(&self, results: &[ToolExecutionResult], turn: &TurnState) -> Vec<Message> {
        LineProtocol.result_messages(results, turn)
    }
}

/// [`LineProtocol`]'s stream parser: decides a line when its newline arrives.
#[derive(Default)]
struct LineParser {
    line: String,
    offset: usize,
    requests: usize,
}

impl LineParser {
    fn decide(&mut self, events: &mut dyn EventSink) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            return;
        }
        match parse_line(&line, self.offset, self.requests + 1) {
            Some(request) => {
                self.requests += 1;
                events.event(StreamEvent::RequestCompleted(request));
            }
            None => {
                let span = Span::new(self.offset, self.offset + line.len());
                events.text(&line, span);
            }
        }
        self.offset += line.len();
    }
}

impl StreamParser for LineParser {
    fn push(&mut self, delta: &TurnDelta, events: &mut dyn EventSink) {
        let TurnDelta::Text(chunk) = delta else { return };
        for piece in chunk.split_inclusive('\n') {
            self.line.push_str(piece);
            if piece.ends_with('\n') {
                self.decide(events);
            }
        }
    }

    fn finish(&mut self, events: &mut dyn EventSink) {
        self.decide(events);
    }
}

#[tokio::test(start_paused = true)]
async fn a_streamed_reply_at_the_turn_limit_is_whole_and_one_byte_past_it_is_cut() {
    let log = Log::new();
    let reply = format!("Sleeping.\n{}", sleep_block(10).trim_end());
    let read = |max: usize| {
        let engine = engine(&log).with_max_turn_bytes(max);
        let pieces = chunks(&reply, 1);
        async move { engine.run_stream(stream::iter(pieces), &context()).await.unwrap() }
    };
    let whole = read(reply.len()).await;
    assert_eq!(whole.turn.text(), reply);
    assert_eq!(whole.finish_reason, FinishReason::ToolCalls);
    assert_eq!(whole.execution_results[0].result, "slept 10");
    assert!(whole.diagnostics.is_empty(), "{:?}", whole.diagnostics);

    // One byte less: the last `>` of the end marker is not read; the request is cut and
    // never runs.
    let runs_before = log.lines().iter().filter(|l| l.ends_with("start sleep 10")).count();
    let cut = read(reply.len() - 1).await;
    assert_eq!(cut.turn.text(), reply[..reply.len() - 1]);
    assert_eq!(cut.finish_reason, FinishReason::Length);
    assert!(!cut.parsed_requests[0].complete);
    assert_eq!(cut.execution_results[0].error_kind, Some(ErrorKind::Validation));
    let runs_after = log.lines().iter().filter(|l| l.ends_with("start sleep 10")).count();
    assert_eq!(runs_after, runs_before, "the cut request ran");
    let limit = cut.diagnostics.iter().find(|d| d.kind.as_str() == "limit_exceeded").unwrap();
    assert_eq!(limit.span, Span::new(reply.len() - 1, reply.len() - 1), "where the text stopped");
}

#[tokio::test(start_paused = true)]
async fn a_request_still_open_when_the_stream_breaks_never_runs() {
    // Every value of the block is closed, and VCP accepts a block with no end marker at
    // the end of a whole reply; but this reply did not end, it broke.
    let log = Log::new();
    let engine = engine(&log);
    let pieces: Vec<Result<String, &str>> = vec![
        Ok(format!("Sleeping.\n{}", sleep_block(10))),
        Ok("<<<[TOOL_REQUEST]>>>\ntool_name:「始」t_sleep「末」,\nms:「始」20「末」\n".to_string()),
        Err("connection reset"),
    ];
    let Err(StreamCycleError::Stream { error, partial }) =
        engine.run_stream(stream::iter(pieces), &context()).await
    else {
        panic!("the stream's error is returned");
    };
    assert_eq!(error, "connection reset");
    let results = &partial.execution_results;
    assert_eq!(results[0].result, "slept 10", "the finished request ran");
    assert_eq!(results[1].error_kind, Some(ErrorKind::Validation), "{}", results[1].result);
    assert!(results[1].result.contains("cut off before this request ended"), "{}", results[1].result);
    assert!(!log.lines().iter().any(|l| l.ends_with("start sleep 20")), "the open request ran");

    // The same text as a whole reply: the unterminated block is accepted and runs.
    let whole = format!(
        "Sleeping.\n{}<<<[TOOL_REQUEST]>>>\ntool_name:「始」t_sleep「末」,\nms:「始」20「末」\n",
        sleep_block(10)
    );
    let cycle = engine.run_turn(&whole, &context()).await.unwrap();
    assert_eq!(cycle.execution_results[1].result, "slept 20");
}
