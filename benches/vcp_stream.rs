//! Throughput of the streaming VCP parser against the one-shot parser.
//!
//! Inputs are generated in code (`support/inputs.rs`), deterministically, at 1 MiB:
//! - `vcp_stream/requests`: request blocks back to back (request-heavy);
//! - `vcp_stream/prose`: markdown-ish prose with three request blocks.
//!
//! For each: `one_shot` (`VcpProtocol::parse` of the whole text) against streaming the
//! same text in one piece (`whole`: what the events cost) and in 1-byte, 16-byte and
//! 4 KiB chunks (`chunk_1`, `chunk_16`, `chunk_4096`):
//! a new `VcpStreamParser`, every chunk pushed, the events handled after each push in one
//! reused `Vec` (as a consumer that handles events as they come), then `finish`. The
//! chunks are cut before timing (cuts moved back to char boundaries). Reported as input
//! bytes per second.
//!
//! Before timing, each configuration is checked once (the collected outcome equals the
//! one-shot parse and holds every generated block) and its peak `buffered_len()` is
//! printed, e.g. `vcp_stream/requests/chunk_16: peak buffered_len 1234 bytes`.
//!
//! Criterion measures one configuration after another, and on a shared machine the speed
//! drifts between them. So the ratio that matters (1-byte and 16-byte chunks against
//! `parse`) is also measured side by side: `one_shot` and the chunked run alternate 15
//! times, and the fastest of each is compared, e.g.
//! `vcp_stream/requests: chunk_1 / one_shot = 2.81 (fastest of 15 alternating runs)`.
//!
//! `cargo bench -p tool-calling-benches --bench vcp_stream` runs everything in about a minute;
//! `cargo bench -p tool-calling-benches --bench vcp_stream -- --test` runs each benchmark once, as a smoke test.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use tool_calling::protocol::vcp::{RequestIdStyle, VcpLimits, VcpOptions, VcpProtocol};
use tool_calling::protocol::{StreamCollector, StreamEvent, StreamParser};

#[path = "support/inputs.rs"]
mod inputs;

const MIB: usize = 1024 * 1024;
const CHUNK_SIZES: [usize; 3] = [1, 16, 4096];

/// Streams `chunks` as a consumer would: after each push, the events are handled (here:
/// looked at) and the vector is cleared for the next push.
fn stream(protocol: &VcpProtocol, chunks: &[&str], events: &mut Vec<StreamEvent>) {
    let mut parser = protocol.stream_parser();
    for chunk in chunks {
        parser.push_text(chunk, events);
        for event in events.iter() {
            black_box(event);
        }
        events.clear();
    }
    parser.finish(events);
    for event in events.iter() {
        black_box(event);
    }
    events.clear();
}

/// Checks once, outside the measurement, that streaming yields the one-shot outcome with
/// every generated block; prints the peak `buffered_len()`.
fn check(name: &str, text: &str, chunks: &[&str]) {
    let protocol = VcpProtocol::new(
        VcpOptions::default().limits(VcpLimits::none()).request_ids(RequestIdStyle::Sequential),
    );
    let expected = protocol.parse(text);
    let blocks = inputs::count_blocks(text);
    assert!(
        expected.requests.len() == blocks && expected.complete_requests().count() == blocks,
        "{name}: generated {blocks} blocks, the parser found {} requests",
        expected.requests.len()
    );
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    let mut peak = 0;
    for chunk in chunks {
        parser.push_text(chunk, &mut events);
        peak = peak.max(parser.buffered_len());
    }
    parser.finish(&mut events);
    let mut collector = StreamCollector::new();
    collector.extend(events);
    assert!(collector.into_outcome() == expected, "{name}: streaming differs from the one-shot parse");
    println!(
        "{name}: peak buffered_len {peak} bytes ({} chunks of {} input bytes)",
        chunks.len(),
        text.len()
    );
}

/// The fastest of `ROUNDS` one-shot parses against the fastest of `ROUNDS` chunked runs,
/// alternating, so that both see the machine at the same speed.
fn side_by_side(name: &str, label: &str, protocol: &VcpProtocol, text: &str, chunks: &[&str]) {
    const ROUNDS: usize = 15;
    let mut events = Vec::new();
    let (mut one_shot, mut chunked) = (Duration::MAX, Duration::MAX);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        black_box(protocol.parse(black_box(text)));
        one_shot = one_shot.min(start.elapsed());
        let start = Instant::now();
        stream(protocol, black_box(chunks), &mut events);
        chunked = chunked.min(start.elapsed());
    }
    println!(
        "{name}: {label} / one_shot = {:.2} (fastest of {ROUNDS} alternating runs: {:.3} ms / {:.3} ms)",
        chunked.as_secs_f64() / one_shot.as_secs_f64(),
        chunked.as_secs_f64() * 1e3,
        one_shot.as_secs_f64() * 1e3,
    );
}

fn bench_input(c: &mut Criterion, input: &str, text: &str) {
    let protocol = VcpProtocol::new(VcpOptions::default().limits(VcpLimits::none()));
    let group_name = format!("vcp_stream/{input}");
    let mut group = c.benchmark_group(&group_name);
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(text.len() as u64));

    group.bench_with_input(BenchmarkId::from_parameter("one_shot"), text, |b, text| {
        b.iter(|| protocol.parse(black_box(text)));
    });
    // `whole`: the streaming parser fed the text in one piece (events and all), the
    // baseline for what chunking itself costs.
    let sizes = CHUNK_SIZES.map(|size| (format!("chunk_{size}"), size));
    for (label, size) in std::iter::once(("whole".to_string(), text.len())).chain(sizes) {
        let chunks = inputs::char_pieces(text, size);
        check(&format!("{group_name}/{label}"), text, &chunks);
        if size <= 16 {
            side_by_side(&group_name, &label, &protocol, text, &chunks);
        }
        let mut events = Vec::new();
        group.bench_with_input(BenchmarkId::from_parameter(&label), &chunks, |b, chunks| {
            b.iter(|| stream(&protocol, black_box(chunks), &mut events));
        });
    }
    group.finish();
}

fn requests(c: &mut Criterion) {
    bench_input(c, "requests", &inputs::requests_only(MIB));
}

fn prose(c: &mut Criterion) {
    bench_input(c, "prose", &inputs::prose_with_requests(MIB));
}

criterion_group!(benches, requests, prose);
criterion_main!(benches);
