//! The engine under load: many conversations at once, each a model streaming its VCP
//! replies in chunks of 5 to 20 characters and a tool whose latency (0 to 400 ms),
//! failures and time-outs are decided by a hash of its argument. Three turns with three
//! calls each, then a final answer, per conversation. Time runs on tokio's paused clock,
//! so the virtual waits cost nothing and what is measured is the engine's own work:
//! streaming parse, early execution, result formatting and the conversation loop.
//!
//! Two figures:
//! - **cycles per second**: criterion's throughput, where one element is one tool cycle
//!   (a turn parsed, its calls run, its results written back), 1,000 and 10,000
//!   conversations per iteration, all open at once;
//! - **memory per open conversation**: printed before the benchmark runs, from a
//!   counting allocator: the peak of live heap bytes while 10,000 conversations are
//!   open at once, less the bytes live before they started, divided by 10,000.
//!
//! `cargo bench -p tool-calling-benches --bench engine_load` runs both;
//! `cargo bench -p tool-calling-benches --bench engine_load -- --test` runs each once.
//! With `ENGINE_LOAD_ONCE=N` in the environment the binary instead serves N
//! conversations once and prints the time taken: what to run under `valgrind
//! --tool=callgrind` to count instructions at several N.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{BatchSize, Criterion, Throughput};

#[path = "../tests/support/load_scenario.rs"]
mod load_scenario;
use load_scenario::{TOOL_TURNS, Tally, engine, paused_runtime, serve_all};

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let live =
                    LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(live, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `conversations` conversations at once on one engine; returns how many finished.
async fn serve(engine: Arc<tool_calling::engine::Engine>, conversations: usize) -> usize {
    let finished = serve_all(&engine, conversations, |_, _, outcome| outcome.rounds.len() == TOOL_TURNS + 1);
    finished.await.into_iter().filter(|&done| done).count()
}

/// Peak live heap bytes per open conversation, with `conversations` open at once.
fn memory_per_conversation(conversations: usize) -> usize {
    let runtime = paused_runtime();
    let engine = Arc::new(engine(&Arc::new(Tally::default())));
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let finished = runtime.block_on(serve(engine, conversations));
    assert_eq!(finished, conversations);
    (PEAK.load(Ordering::Relaxed) - before) / conversations
}

fn cycles(c: &mut Criterion) {
    let runtime = paused_runtime();
    let mut group = c.benchmark_group("engine_load");
    group.sample_size(10);
    for conversations in [1_000, 10_000] {
        group.throughput(Throughput::Elements((conversations * TOOL_TURNS) as u64));
        group.bench_function(format!("streamed_conversations_{conversations}"), |b| {
            b.iter_batched(
                || Arc::new(engine(&Arc::new(Tally::default()))),
                |engine| black_box(runtime.block_on(serve(engine, conversations))),
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn main() {
    if let Some(conversations) = std::env::var("ENGINE_LOAD_ONCE").ok().and_then(|n| n.parse().ok()) {
        let runtime = paused_runtime();
        let engine = Arc::new(engine(&Arc::new(Tally::default())));
        let start = std::time::Instant::now();
        let finished = runtime.block_on(serve(engine, conversations));
        assert_eq!(finished, conversations);
        println!("engine_load: {conversations} conversations in {:?}", start.elapsed());
        return;
    }
    const OPEN: usize = 10_000;
    let bytes = memory_per_conversation(OPEN);
    println!("engine_load: peak heap per open conversation, {OPEN} open at once: {bytes} bytes");
    let mut criterion = Criterion::default().configure_from_args();
    cycles(&mut criterion);
    criterion.final_summary();
}
