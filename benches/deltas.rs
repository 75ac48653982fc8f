//! Token-sized deltas: what one push costs when a reply streams in a few bytes at a time.
//!
//! Every streaming parser reads the same shapes of 64 KiB reply:
//! - `prose`: markdown-ish English prose with no call at all (the VCP generator of
//!   `support/inputs.rs` with its request blocks taken out);
//! - `plain` (the text protocols): the same prose with every `<`, `[`, `{` and `` ` ``
//!   made a space, so that no push holds a byte that could begin markup;
//! - `calls`: a reply made only of the protocol's calls (`inputs::requests_only` for
//!   VCP, `inputs::hermes_calls_only` for Hermes and `auto`).
//!
//! The protocols: `vcp` (`VcpProtocol::default()`), `hermes`
//! (`TextFormatProtocol::new(TextFormat::Hermes)`), `auto` (`AutoProtocol::new()`) and
//! `openai`, a native stream: an OpenAI Chat Completions SSE stream read by
//! `ResponseStream` (`Provider::OpenAiChat`), its deltas handed to the native protocol's
//! stream parser (`NativeStreamParser`). For the text protocols a delta is text, cut on
//! char boundaries (a cut inside a char moves back, a delta holds at least one char); for
//! `openai` a delta is network bytes of the SSE text, cut anywhere. The native `prose` is
//! the same prose sent as content deltas of about one token (4 bytes) each; its `calls`
//! are calls whose arguments arrive in token-sized fragments, as in `native_stream.rs`.
//!
//! For each protocol and input: `one_shot` (the protocol's `parse` of the whole text; for
//! `openai` the whole SSE text pushed in one piece through the same `ResponseStream` and
//! stream parser) against the text pushed in deltas of 1, 4 and 16 bytes (`delta_1`,
//! `delta_4`, `delta_16`): a new parser, every delta pushed, the events looked at and the
//! vector cleared after each push, as a consumer that handles them as they come, then
//! `finish`. The deltas are cut before timing. Criterion reports the time of the whole
//! text; the figures that matter are printed, measured side by side (one-shot and
//! streamed runs alternate 15 times and the fastest of each is kept, since a shared
//! machine's speed drifts between criterion's configurations), e.g.
//! `deltas/hermes/calls/delta_4: 65578 bytes, 16395 pushes, 225.0 ns/push; streamed /
//! one_shot = 2.82 (fastest of 15 alternating runs: 3.688 ms / 1.309 ms)`. A filter
//! (`-- deltas/auto`) skips the checks and side-by-side runs of what it leaves out.
//!
//! For the text protocols the same deltas are also streamed to a consumer that borrows
//! the prose and the fields (`EventSink::text` and `EventSink::field`, the `Lending`
//! sink below) instead of receiving owned events; its figure is printed on the same
//! line (`lending sink … ns/push, … × one_shot`), from the same alternating runs.
//!
//! Before timing, each configuration is checked once: the streamed events, collected,
//! equal the one-shot outcome and hold every generated call (none for `prose`).
//!
//! Targets: a 4-byte push of prose with no call open costs at most 50 ns; streaming calls
//! costs at most 3× their one-shot parse, for every protocol.
//!
//! `cargo bench -p tool-calling-benches --bench deltas` runs everything in about a
//! minute; `-- --test` runs each configuration once (and the side-by-side runs once).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use tool_calling::Span;
use tool_calling::model::{TurnAccumulator, TurnDelta};
use tool_calling::protocol::native::{NativeOptions, NativeProtocol, NativeStreamParser};
use tool_calling::protocol::textfmt::{AutoProtocol, TextFormat, TextFormatOptions, TextFormatProtocol};
use tool_calling::protocol::vcp::{VcpOptions, VcpProtocol};
use tool_calling::protocol::{
    EventSink, ParseOutcome, RequestIdStyle, StreamCollector, StreamEvent, StreamParser, ToolCallingProtocol,
};
use tool_calling::providers::{Provider, ResponseStream};

#[path = "support/inputs.rs"]
mod inputs;

const SIZE: usize = 64 << 10;
const DELTAS: [usize; 3] = [1, 4, 16];

/// Whether criterion runs in test mode (`-- --test`): everything once.
fn test_mode() -> bool {
    std::env::args().any(|arg| arg == "--test")
}

/// The filter given on the command line (`-- deltas/auto`), if any: the checks and the
/// side-by-side runs of a configuration it leaves out are skipped too. Read as a plain
/// substring (criterion reads it as a regex; a name is both).
fn filter() -> Option<String> {
    const WITH_VALUE: &[&str] = &[
        "--sample-size",
        "--warm-up-time",
        "--measurement-time",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--save-baseline",
        "-s",
        "--baseline",
        "-b",
        "--load-baseline",
        "--profile-time",
        "--color",
        "-c",
        "--output-format",
        "--plotting-backend",
        "--format",
    ];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if WITH_VALUE.contains(&arg.as_str()) {
            args.next();
        } else if !arg.starts_with('-') {
            return Some(arg);
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// Inputs.

/// About `size` bytes of prose with no call: the VCP prose generator's text with its
/// request blocks taken out, cut at a paragraph's end.
fn prose(size: usize) -> String {
    let mut text = inputs::prose_with_requests(4 * size);
    while let Some(start) = text.find(inputs::START) {
        let end = text[start..].find(inputs::END).expect("every block is closed") + start;
        // The block, its END line and the blank line after it.
        let stop = (end + inputs::END.len() + 2).min(text.len());
        text.replace_range(start..stop, "");
    }
    let mut cut = size.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind("\n\n").map_or(cut, |at| at + 2);
    text.truncate(cut);
    text
}

/// [`prose`] with every byte that could begin markup in some text protocol (`<`, `[`,
/// `{`, `` ` ``) made a space: the pushes a parser can pass on at once, which the
/// 50 ns target is about. (In `prose`, a push holding such a byte runs the parser's
/// full reading.)
fn plain_prose(size: usize) -> String {
    prose(size).chars().map(|c| if matches!(c, '<' | '[' | '{' | '`') { ' ' } else { c }).collect()
}

/// An OpenAI stream of about `size` bytes of SSE text carrying prose (no call) in content
/// deltas of about one token (4 bytes, cut on char boundaries).
fn openai_prose(size: usize) -> String {
    let prose = prose(size);
    let mut out = String::new();
    let mut rest = prose.as_str();
    while !rest.is_empty() && out.len() < size {
        let mut cut = 4.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (token, tail) = rest.split_at(cut);
        rest = tail;
        let content = serde_json::to_string(token).expect("a string is JSON");
        out.push_str(&inputs::openai_chunk(&format!("{{\"content\":{content}}}")));
    }
    out.push_str(&inputs::openai_end("stop"));
    out
}

/// An OpenAI stream of about `size` bytes of SSE text made of calls whose arguments
/// arrive in token-sized fragments (one chunk per fragment); and how many calls.
fn openai_calls(size: usize) -> (String, usize) {
    let mut out = String::new();
    let calls = inputs::openai_calls(&mut out, size, 8, "lorem ");
    (out, calls)
}

// ---------------------------------------------------------------------------------------
// The protocols.

/// A protocol under test, as a consumer builds it.
enum Protocol {
    Vcp(VcpProtocol),
    Hermes(TextFormatProtocol),
    Auto(AutoProtocol),
    /// OpenAI Chat Completions SSE, read by `ResponseStream` and the native stream parser.
    OpenAi(NativeOptions),
}

impl Protocol {
    /// The protocols as the bench times them (default options).
    fn timed() -> [(&'static str, Protocol); 4] {
        [
            ("vcp", Protocol::Vcp(VcpProtocol::default())),
            ("hermes", Protocol::Hermes(TextFormatProtocol::new(TextFormat::Hermes))),
            ("auto", Protocol::Auto(AutoProtocol::new())),
            ("openai", Protocol::OpenAi(NativeOptions::default())),
        ]
    }

    /// The same protocol with sequential request ids, so that two readings compare equal.
    fn sequential(&self) -> Protocol {
        let style = RequestIdStyle::Sequential;
        let text = TextFormatOptions::default().request_ids(style);
        match self {
            Protocol::Vcp(_) => Protocol::Vcp(VcpProtocol::new(VcpOptions::default().request_ids(style))),
            Protocol::Hermes(_) => {
                Protocol::Hermes(TextFormatProtocol::new(TextFormat::Hermes).with_options(text))
            }
            Protocol::Auto(_) => Protocol::Auto(
                AutoProtocol::new()
                    .with_vcp(VcpProtocol::new(VcpOptions::default().request_ids(style)))
                    .with_options(text),
            ),
            Protocol::OpenAi(_) => Protocol::OpenAi(NativeOptions::default().request_ids(style)),
        }
    }

    /// The inputs in this protocol's shape: name, text, calls it holds.
    fn inputs(&self) -> Vec<(&'static str, String, usize)> {
        match self {
            Protocol::Vcp(_) => {
                let calls = inputs::requests_only(SIZE);
                let count = inputs::count_blocks(&calls);
                vec![("prose", prose(SIZE), 0), ("plain", plain_prose(SIZE), 0), ("calls", calls, count)]
            }
            Protocol::Hermes(_) | Protocol::Auto(_) => {
                let calls = inputs::hermes_calls_only(SIZE);
                let count = calls.matches("<tool_call>").count();
                vec![("prose", prose(SIZE), 0), ("plain", plain_prose(SIZE), 0), ("calls", calls, count)]
            }
            Protocol::OpenAi(_) => {
                let (calls, count) = openai_calls(SIZE);
                vec![("prose", openai_prose(SIZE), 0), ("calls", calls, count)]
            }
        }
    }

    /// `text` cut in deltas of `size` bytes: on char boundaries for a text protocol,
    /// anywhere for the SSE bytes of a native stream.
    fn deltas<'t>(&self, text: &'t str, size: usize) -> Deltas<'t> {
        match self {
            Protocol::OpenAi(_) => Deltas::Bytes(text.as_bytes().chunks(size).collect()),
            _ => Deltas::Text(inputs::char_pieces(text, size)),
        }
    }

    /// The one-shot parse of `text`; for the native stream, the whole SSE text pushed in
    /// one piece. Returns the outcome for the checks.
    fn one_shot(&self, text: &str, scratch: &mut Scratch) -> ParseOutcome {
        match self {
            Protocol::Vcp(p) => p.parse(text),
            Protocol::Hermes(p) => p.parse(text),
            Protocol::Auto(p) => p.parse(text),
            Protocol::OpenAi(options) => {
                // What the one-shot read of the stream decides: the turn, read by
                // `parse_turn`.
                let mut stream = ResponseStream::new(&Provider::OpenAiChat);
                stream.push(text.as_bytes(), &mut scratch.turn).expect("the generated stream is well formed");
                stream.finish(&mut scratch.turn).expect("the generated stream ends after its last event");
                let mut turn = TurnAccumulator::new();
                scratch.turn.drain(..).for_each(|delta| turn.push(&delta));
                NativeProtocol::openai_chat().with_options(*options).parse_turn(&turn.finish())
            }
        }
    }

    /// The timed one-shot run: `parse` of the whole text (for the native stream: the
    /// whole SSE text in one push through the same stream and parser as `stream`).
    fn time_one_shot(&self, text: &str, scratch: &mut Scratch) {
        match self {
            Protocol::Vcp(p) => drop(black_box(p.parse(black_box(text)))),
            Protocol::Hermes(p) => drop(black_box(p.parse(black_box(text)))),
            Protocol::Auto(p) => drop(black_box(p.parse(black_box(text)))),
            Protocol::OpenAi(options) => stream_sse(*options, &[black_box(text.as_bytes())], scratch),
        }
    }

    /// Streams `deltas` as a consumer would: after each push, the events are looked at
    /// and the vector is cleared for the next push; then `finish`.
    fn stream(&self, deltas: &Deltas, scratch: &mut Scratch) {
        match self {
            Protocol::Vcp(p) => stream_text(p.stream_parser(), deltas.text(), &mut scratch.events),
            Protocol::Hermes(p) => stream_text(p.stream_parser(), deltas.text(), &mut scratch.events),
            Protocol::Auto(p) => stream_text(p.stream_parser(), deltas.text(), &mut scratch.events),
            Protocol::OpenAi(options) => stream_sse(*options, deltas.bytes(), scratch),
        }
    }

    /// Streams `deltas` to a consumer that borrows the prose ([`Lending`]); `false` for
    /// the native stream, whose prose the bench reads from owned deltas.
    fn stream_lending(&self, deltas: &Deltas, scratch: &mut Scratch) -> bool {
        let sink = &mut scratch.lending;
        match self {
            Protocol::Vcp(p) => stream_lending(p.stream_parser(), deltas.text(), sink),
            Protocol::Hermes(p) => stream_lending(p.stream_parser(), deltas.text(), sink),
            Protocol::Auto(p) => stream_lending(p.stream_parser(), deltas.text(), sink),
            Protocol::OpenAi(_) => return false,
        }
        true
    }

    /// The events of streaming `deltas`, all kept.
    fn streamed_events(&self, deltas: &Deltas) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        let mut text = |mut parser: Box<dyn StreamParser + '_>| {
            for delta in deltas.text() {
                parser.push_text(delta, &mut events);
            }
            parser.finish(&mut events);
        };
        match self {
            Protocol::Vcp(p) => text(Box::new(p.stream_parser())),
            Protocol::Hermes(p) => text(Box::new(p.stream_parser())),
            Protocol::Auto(p) => text(Box::new(p.stream_parser())),
            Protocol::OpenAi(options) => {
                let mut stream = ResponseStream::new(&Provider::OpenAiChat);
                let mut parser = NativeStreamParser::with_options(*options);
                let mut turn = Vec::new();
                for delta in deltas.bytes() {
                    stream.push(delta, &mut turn).expect("the generated stream is well formed");
                }
                stream.finish(&mut turn).expect("the generated stream ends after its last event");
                for delta in &turn {
                    parser.push(delta, &mut events);
                }
                parser.finish(&mut events);
            }
        }
        events
    }
}

/// The vectors a consumer reuses from push to push.
#[derive(Default)]
struct Scratch {
    events: Vec<StreamEvent>,
    turn: Vec<TurnDelta>,
    lending: Lending,
}

/// A reply cut in deltas: text for a text protocol, the SSE bytes for a native stream.
enum Deltas<'t> {
    Text(Vec<&'t str>),
    Bytes(Vec<&'t [u8]>),
}

impl Deltas<'_> {
    fn len(&self) -> usize {
        match self {
            Deltas::Text(deltas) => deltas.len(),
            Deltas::Bytes(deltas) => deltas.len(),
        }
    }

    fn text(&self) -> &[&str] {
        match self {
            Deltas::Text(deltas) => deltas,
            Deltas::Bytes(_) => panic!("a text protocol is given text"),
        }
    }

    fn bytes(&self) -> &[&[u8]] {
        match self {
            Deltas::Bytes(deltas) => deltas,
            Deltas::Text(_) => panic!("a native stream is given bytes"),
        }
    }
}

/// A consumer that reads prose as it passes, borrowed ([`EventSink::text`]), and keeps
/// the other events in a vector it looks at and clears after each push.
#[derive(Default)]
struct Lending {
    events: Vec<StreamEvent>,
    text_bytes: usize,
}

impl EventSink for Lending {
    fn event(&mut self, event: StreamEvent) {
        self.events.push(event);
    }

    fn text(&mut self, text: &str, span: Span) {
        black_box((text, span));
        self.text_bytes += text.len();
    }

    fn field(&mut self, key: &str, value: &str, closed: bool, span: Span) {
        black_box((key, value, closed, span));
    }
}

fn stream_lending(mut parser: impl StreamParser, deltas: &[&str], sink: &mut Lending) {
    for delta in deltas {
        parser.push_text(delta, sink);
        handle(&mut sink.events);
    }
    parser.finish(sink);
    handle(&mut sink.events);
}

/// Looks at every event (as a consumer handles them), then clears the vector.
fn handle(events: &mut Vec<StreamEvent>) {
    for event in events.iter() {
        black_box(event);
    }
    events.clear();
}

fn stream_text(mut parser: impl StreamParser, deltas: &[&str], events: &mut Vec<StreamEvent>) {
    for delta in deltas {
        parser.push_text(delta, events);
        handle(events);
    }
    parser.finish(events);
    handle(events);
}

fn stream_sse(options: NativeOptions, deltas: &[&[u8]], scratch: &mut Scratch) {
    let mut stream = ResponseStream::new(&Provider::OpenAiChat);
    let mut parser = NativeStreamParser::with_options(options);
    for delta in deltas {
        stream.push(delta, &mut scratch.turn).expect("the generated stream is well formed");
        for delta in &scratch.turn {
            parser.push(delta, &mut scratch.events);
        }
        scratch.turn.clear();
        handle(&mut scratch.events);
    }
    stream.finish(&mut scratch.turn).expect("the generated stream ends after its last event");
    for delta in &scratch.turn {
        parser.push(delta, &mut scratch.events);
    }
    scratch.turn.clear();
    parser.finish(&mut scratch.events);
    handle(&mut scratch.events);
}

// ---------------------------------------------------------------------------------------
// Checks and side-by-side runs.

/// Checks once, outside the measurement, that streaming `deltas` gives the one-shot
/// outcome, with `calls` complete requests.
fn check(name: &str, protocol: &Protocol, text: &str, deltas: &Deltas, calls: usize) {
    let protocol = protocol.sequential();
    let expected = protocol.one_shot(text, &mut Scratch::default());
    assert_eq!(expected.complete_requests().count(), calls, "{name}: the one-shot parse");
    assert_eq!(expected.requests.len(), calls, "{name}: the one-shot parse");
    let mut collector = StreamCollector::new();
    collector.extend(protocol.streamed_events(deltas));
    assert!(collector.into_outcome() == expected, "{name}: streaming differs from the one-shot parse");
}

/// The fastest runs of `rounds`, alternating so that all see the machine at the same
/// speed: one-shot, streamed to a vector, streamed to a lending sink (`None` for the
/// native stream).
fn side_by_side(
    protocol: &Protocol,
    text: &str,
    deltas: &Deltas,
    rounds: usize,
) -> (Duration, Duration, Option<Duration>) {
    let mut scratch = Scratch::default();
    let (mut one_shot, mut streamed, mut lending) = (Duration::MAX, Duration::MAX, None::<Duration>);
    for _ in 0..rounds {
        let start = Instant::now();
        protocol.time_one_shot(text, &mut scratch);
        one_shot = one_shot.min(start.elapsed());
        let start = Instant::now();
        protocol.stream(black_box(deltas), &mut scratch);
        streamed = streamed.min(start.elapsed());
        let start = Instant::now();
        if protocol.stream_lending(black_box(deltas), &mut scratch) {
            let elapsed = start.elapsed();
            lending = Some(lending.map_or(elapsed, |l| l.min(elapsed)));
        }
    }
    (one_shot, streamed, lending)
}

fn bench(c: &mut Criterion) {
    let rounds = if test_mode() { 1 } else { 15 };
    let filter = filter();
    for (name, protocol) in Protocol::timed() {
        for (input, text, calls) in protocol.inputs() {
            let group_name = format!("deltas/{name}/{input}");
            let mut group = c.benchmark_group(&group_name);
            group.sample_size(10);
            group.sampling_mode(SamplingMode::Flat);
            group.warm_up_time(Duration::from_millis(300));
            group.measurement_time(Duration::from_millis(700));
            group.throughput(Throughput::Bytes(text.len() as u64));
            let mut scratch = Scratch::default();
            group.bench_function(BenchmarkId::from_parameter("one_shot"), |b| {
                b.iter(|| protocol.time_one_shot(&text, &mut scratch));
            });
            for size in DELTAS {
                let label = format!("delta_{size}");
                let deltas = protocol.deltas(&text, size);
                let id = format!("{group_name}/{label}");
                if filter.as_ref().is_some_and(|filter| !id.contains(filter.as_str())) {
                    continue;
                }
                check(&id, &protocol, &text, &deltas, calls);
                let (one_shot, streamed, lending) = side_by_side(&protocol, &text, &deltas, rounds);
                let per_push = |time: Duration| time.as_secs_f64() * 1e9 / deltas.len() as f64;
                let lending = lending.map_or(String::new(), |lending| {
                    format!(
                        "; lending sink {:.1} ns/push, {:.2} × one_shot ({:.3} ms)",
                        per_push(lending),
                        lending.as_secs_f64() / one_shot.as_secs_f64(),
                        lending.as_secs_f64() * 1e3
                    )
                });
                println!(
                    "{group_name}/{label}: {} bytes, {} pushes, {:.1} ns/push; streamed / one_shot = {:.2} \
                     (fastest of {rounds} alternating runs: {:.3} ms / {:.3} ms){lending}",
                    text.len(),
                    deltas.len(),
                    per_push(streamed),
                    streamed.as_secs_f64() / one_shot.as_secs_f64(),
                    streamed.as_secs_f64() * 1e3,
                    one_shot.as_secs_f64() * 1e3,
                );
                group.bench_function(BenchmarkId::from_parameter(&label), |b| {
                    b.iter(|| protocol.stream(black_box(&deltas), &mut scratch));
                });
            }
            group.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
