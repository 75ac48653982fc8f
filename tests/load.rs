//! Load: one `Engine` serving 10,000 concurrent conversations whose replies stream in
//! small chunks, with tools of random latency that sometimes fail or hang past their
//! time limit (tokio's paused clock: the virtual hours pass in seconds). No result may be
//! lost, duplicated or matched to the wrong call.

use std::sync::Arc;
use std::sync::atomic::Ordering;

#[path = "support/load_scenario.rs"]
mod load_scenario;
use load_scenario::{
    CALLS_PER_TURN, Fate, TOOL_TURNS, Tally, check, engine, fate, paused_runtime, serve_all, token,
};

const CONVERSATIONS: usize = 10_000;

#[test]
fn ten_thousand_streamed_conversations_lose_nothing() {
    let runtime = paused_runtime();
    let tally = Arc::new(Tally::default());
    let engine = Arc::new(engine(&tally));
    let checks = runtime.block_on(serve_all(&engine, CONVERSATIONS, |n, conversation, outcome| {
        check(n, &conversation, &outcome)
    }));
    let checked: usize = checks.into_iter().map(|c| c.unwrap_or_else(|e| panic!("{e}"))).sum();
    let calls = CONVERSATIONS * TOOL_TURNS * CALLS_PER_TURN;
    assert_eq!(checked, calls, "every call checked");
    assert_eq!(tally.invocations.load(Ordering::Relaxed), calls, "every call ran once");
    assert_eq!(tally.duplicates.load(Ordering::Relaxed), 0, "no call ran twice");
    assert_eq!(tally.tokens.lock().unwrap().len(), calls);
    assert_eq!(engine.cached_declarations(), 1, "one prompt for every conversation, not one each");
    // Thousands of calls wanted to run at once; the executor let its limit run.
    let limit = engine.executor().options().max_running_calls;
    assert_eq!(tally.peak_running.load(Ordering::Relaxed), limit, "the limit bound, and held");
    assert_eq!(tally.running.load(Ordering::Relaxed), 0);
    assert_eq!(engine.executor().free_call_slots(), limit);
}

#[test]
fn the_scenario_exercises_every_fate() {
    // Successes, failures and time-outs all occur among the calls above, so the check
    // of each kind of result is not vacuous.
    let fates: Vec<Fate> = (0..CONVERSATIONS)
        .flat_map(|n| {
            (0..TOOL_TURNS).flat_map(move |t| (0..CALLS_PER_TURN).map(move |k| fate(&token(n, t, k))))
        })
        .collect();
    let hangs = fates.iter().filter(|f| **f == Fate::Hang).count();
    let fails = fates.iter().filter(|f| matches!(f, Fate::Fail(_))).count();
    let echoes = fates.len() - hangs - fails;
    assert!(hangs > 1_000 && fails > 2_000 && echoes > 50_000, "{hangs} {fails} {echoes}");
}
