//! The VCP parser on inputs a hostile model could write (`support/hostile.rs`: many
//! blocks, repeated keys, unclosed markers, values and reasoning tags, fences, runs of
//! `<` and `>` in fuzzy mode, one huge key, separators with no values, …), at 1 MiB and
//! 4 MiB. Linear cost shows as a time ratio near 4 between the two sizes.
//!
//! First a side-by-side table: for each family, the fastest of 5 runs at each size, for
//! `parse`, `parse_view`, the pull parser `view_events` and the streaming parser in
//! 64-byte chunks, with the 4 MiB /
//! 1 MiB ratio of each (the machine's noise affects both sizes alike). Then criterion's
//! measurements of `parse`, group `vcp_parse/adversarial`.
//!
//! `cargo bench -p tool-calling-benches --bench vcp_adversarial`; `-- --test` runs each once (and skips the table).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use tool_calling::protocol::StreamParser;
use tool_calling::protocol::vcp::VcpProtocol;

#[path = "../tests/support/chunks.rs"]
mod chunks;
#[path = "support/hostile.rs"]
mod hostile;

use chunks::char_chunks;

const MIB: usize = 1 << 20;

fn fastest(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn stream(protocol: &VcpProtocol, text: &str, chunk: usize) -> usize {
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    let mut seen = 0;
    for piece in char_chunks(text, chunk) {
        parser.push_text(piece, &mut events);
        seen += events.len();
        events.clear();
    }
    parser.finish(&mut events);
    seen + events.len()
}

fn table() {
    println!(
        "{:<28} {:>10} {:>10} {:>6}   {:>10} {:>6}   {:>10} {:>6}   {:>10} {:>6}",
        "family",
        "parse 1MiB",
        "4MiB",
        "ratio",
        "view 4MiB",
        "ratio",
        "pull 4MiB",
        "ratio",
        "stream 4MiB",
        "ratio"
    );
    for family in hostile::families() {
        let protocol = VcpProtocol::new(family.options);
        let small = (family.make)(MIB);
        let large = (family.make)(4 * MIB);
        let time = |text: &str, which: u8| {
            fastest(5, || match which {
                0 => drop(black_box(protocol.parse(black_box(text)))),
                1 => drop(black_box(protocol.parse_view(black_box(text)))),
                2 => drop(black_box(protocol.view_events(black_box(text)).count())),
                _ => drop(black_box(stream(&protocol, black_box(text), 64))),
            })
        };
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let (p1, p4) = (time(&small, 0), time(&large, 0));
        let (v1, v4) = (time(&small, 1), time(&large, 1));
        let (e1, e4) = (time(&small, 2), time(&large, 2));
        let (s1, s4) = (time(&small, 3), time(&large, 3));
        println!(
            "{:<28} {:>8.2}ms {:>8.2}ms {:>6.2}   {:>8.2}ms {:>6.2}   {:>8.2}ms {:>6.2}   {:>8.2}ms {:>6.2}",
            family.name,
            ms(p1),
            ms(p4),
            ms(p4) / ms(p1),
            ms(v4),
            ms(v4) / ms(v1),
            ms(e4),
            ms(e4) / ms(e1),
            ms(s4),
            ms(s4) / ms(s1)
        );
    }
}

fn measure(c: &mut Criterion) {
    let mut group = c.benchmark_group("vcp_parse/adversarial");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    for family in hostile::families() {
        let protocol = VcpProtocol::new(family.options);
        for (label, size) in [("1MiB", MIB), ("4MiB", 4 * MIB)] {
            let text = (family.make)(size);
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_with_input(BenchmarkId::new(family.name, label), text.as_str(), |b, text| {
                b.iter(|| protocol.parse(black_box(text)))
            });
        }
    }
    group.finish();
}

fn main() {
    let smoke = std::env::args().any(|a| a == "--test");
    if !smoke {
        table();
    }
    let mut criterion = Criterion::default().configure_from_args();
    measure(&mut criterion);
    criterion.final_summary();
}
