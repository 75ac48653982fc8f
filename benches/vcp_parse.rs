//! Throughput of the one-shot VCP parser.
//!
//! Inputs are generated in code (`support/inputs.rs`), deterministically:
//! - `vcp_parse/prose`: markdown-ish English prose with exactly three request blocks;
//! - `vcp_parse/requests`: request blocks back to back;
//!
//! each at 16 KiB, 1 MiB and 16 MiB, with `parse` (owned requests), `parse_view`
//! (borrowed) and `view_events` (borrowed, one request at a time), reported as bytes per
//! second; and
//! - `vcp_parse/options`: the 1 MiB prose input with default options vs `skip_fenced`;
//! - `vcp_parse/floor`: each input at 1 MiB, the three APIs beside `scan_floor`, which
//!   only finds every marker (`<<<[`, the start of `<<<[TOOL_REQUEST]>>>` and
//!   `<<<[END_TOOL_REQUEST]>>>`) and every value opener (`「始`) with `memchr::memmem`
//!   and does nothing else: the floor no parser can beat. Criterion measures one after
//!   the other while a shared machine's speed drifts, so the group also prints each
//!   API's share of the floor measured side by side (the fastest of 15 alternating runs
//!   of each), e.g. `vcp_parse/floor/requests (…): scan floor … MB/s; view_events …
//!   MB/s (…% of the floor); …`.
//!
//! `cargo bench -p tool-calling-benches --bench vcp_parse` runs everything in a few minutes;
//! `cargo bench -p tool-calling-benches --bench vcp_parse -- --test` runs each benchmark once, as a smoke test;
//! `cargo bench -p tool-calling-benches --bench vcp_parse -- vcp_parse/floor` runs the floor group alone.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use tool_calling::protocol::vcp::{VcpLimits, VcpOptions, VcpProtocol, ViewEvent};

#[path = "support/floor.rs"]
mod floor;
#[path = "support/inputs.rs"]
mod inputs;

use floor::{ScanFloor, alternating};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
const SIZES: [(&str, usize); 3] = [("16KiB", 16 * KIB), ("1MiB", MIB), ("16MiB", 16 * MIB)];

/// Checks once, outside the measurement, that the parser reads every generated block as a
/// complete request; otherwise the numbers would measure something else.
fn check(name: &str, text: &str, protocol: &VcpProtocol) {
    let expected = inputs::count_blocks(text);
    let outcome = protocol.parse(text);
    let complete = outcome.complete_requests().count();
    assert!(
        outcome.requests.len() == expected && complete == expected,
        "{name}: generated {expected} blocks, parser found {} requests ({complete} complete)",
        outcome.requests.len()
    );
}

fn by_size(c: &mut Criterion, group_name: &str, generate: fn(usize) -> String) {
    let protocol = VcpProtocol::new(VcpOptions::default().limits(VcpLimits::none()));
    let mut group = c.benchmark_group(group_name);
    for (label, size) in SIZES {
        let text = generate(size);
        check(&format!("{group_name}/{label}"), &text, &protocol);
        // Large inputs take milliseconds per parse: flat sampling keeps the iteration
        // count (and the total time) bounded.
        let (samples, mode, seconds) = match size {
            s if s >= 16 * MIB => (10, SamplingMode::Flat, 8),
            s if s >= MIB => (20, SamplingMode::Flat, 5),
            _ => (30, SamplingMode::Auto, 3),
        };
        group.sample_size(samples);
        group.sampling_mode(mode);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(seconds));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("parse", label), text.as_str(), |b, text| {
            b.iter(|| protocol.parse(black_box(text)));
        });
        group.bench_with_input(BenchmarkId::new("parse_view", label), text.as_str(), |b, text| {
            b.iter(|| protocol.parse_view(black_box(text)));
        });
        // The pull parser: every request made, with all its fields and values, then dropped.
        group.bench_with_input(BenchmarkId::new("view_events", label), text.as_str(), |b, text| {
            b.iter(|| {
                protocol.view_events(black_box(text)).filter(|e| matches!(e, ViewEvent::Request(_))).count()
            });
        });
    }
    group.finish();
}

fn prose(c: &mut Criterion) {
    by_size(c, "vcp_parse/prose", inputs::prose_with_requests);
}

fn requests(c: &mut Criterion) {
    by_size(c, "vcp_parse/requests", inputs::requests_only);
}

fn options(c: &mut Criterion) {
    let text = inputs::prose_with_requests(MIB);
    let variants = [
        ("default", VcpOptions::default().limits(VcpLimits::none())),
        ("skip_fenced", VcpOptions::default().limits(VcpLimits::none()).skip_fenced(true)),
    ];
    let mut group = c.benchmark_group("vcp_parse/options");
    group.sample_size(20);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Bytes(text.len() as u64));
    for (label, options) in variants {
        let protocol = VcpProtocol::new(options);
        check(&format!("vcp_parse/options/{label}"), &text, &protocol);
        group.bench_with_input(BenchmarkId::new("prose_1MiB", label), text.as_str(), |b, text| {
            b.iter(|| protocol.parse(black_box(text)));
        });
    }
    group.finish();
}

fn floor(c: &mut Criterion) {
    let protocol = VcpProtocol::new(VcpOptions::default().limits(VcpLimits::none()));
    let floor = ScanFloor::new("<<<[", "「始");
    let count_requests =
        |text: &str| protocol.view_events(text).filter(|e| matches!(e, ViewEvent::Request(_))).count();
    let mut group = c.benchmark_group("vcp_parse/floor");
    group.sample_size(20);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    for (name, text) in
        [("prose", inputs::prose_with_requests(MIB)), ("requests", inputs::requests_only(MIB))]
    {
        check(&format!("vcp_parse/floor/{name}"), &text, &protocol);
        let blocks = inputs::count_blocks(&text);
        assert_eq!(floor.counts(&text).0, 2 * blocks, "{name}: markers");
        let speeds = alternating(
            text.len(),
            &[
                &|| floor.scan(&text),
                &|| count_requests(&text),
                &|| protocol.parse_view(&text).requests.len(),
                &|| protocol.parse(&text).requests.len(),
            ],
        );
        let share =
            |i: usize| format!("{:.0} MB/s ({:.1}% of the floor)", speeds[i], 100.0 * speeds[i] / speeds[0]);
        println!(
            "vcp_parse/floor/{name} ({} bytes, {blocks} requests): scan floor {:.0} MB/s; view_events {}; \
             parse_view {}; parse {} (fastest of 15 alternating runs)",
            text.len(),
            speeds[0],
            share(1),
            share(2),
            share(3),
        );
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("scan_floor", name), text.as_str(), |b, text| {
            b.iter(|| floor.scan(black_box(text)));
        });
        group.bench_with_input(BenchmarkId::new("view_events", name), text.as_str(), |b, text| {
            b.iter(|| count_requests(black_box(text)));
        });
        group.bench_with_input(BenchmarkId::new("parse_view", name), text.as_str(), |b, text| {
            b.iter(|| protocol.parse_view(black_box(text)));
        });
        group.bench_with_input(BenchmarkId::new("parse", name), text.as_str(), |b, text| {
            b.iter(|| protocol.parse(black_box(text)));
        });
    }
    group.finish();
}

criterion_group!(benches, prose, requests, options, floor);
criterion_main!(benches);
