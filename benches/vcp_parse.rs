//! Throughput of the one-shot VCP parser.
//!
//! Inputs are generated in code (`support/inputs.rs`), deterministically:
//! - `vcp_parse/prose`: markdown-ish English prose with exactly three request blocks;
//! - `vcp_parse/requests`: request blocks back to back;
//!
//! each at 16 KiB, 1 MiB and 16 MiB, with `parse` (owned requests), `parse_view`
//! (borrowed) and `view_events` (borrowed, one request at a time), reported as bytes per
//! second; and
//! - `vcp_parse/options`: the 1 MiB prose input with default options vs `skip_fenced`.
//!
//! `cargo bench -p tool-calling-benches --bench vcp_parse` runs everything in a few minutes;
//! `cargo bench -p tool-calling-benches --bench vcp_parse -- --test` runs each benchmark once, as a smoke test.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use tool_calling::protocol::vcp::{VcpLimits, VcpOptions, VcpProtocol, ViewEvent};

#[path = "support/inputs.rs"]
mod inputs;

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

criterion_group!(benches, prose, requests, options);
criterion_main!(benches);
