//! The open-model text formats: this crate's `hermes` protocol side by side with the
//! `tool-parser` crate (the SGLang gateway's parsers) on the same replies, and the
//! formats on hostile inputs, to show the cost stays linear.
//!
//! Inputs (generated here, the same bytes every run):
//! - `prose`: about 1.4 MB of prose (mixed English and Chinese, with `<b>` tags and
//!   backticks) holding three Hermes calls;
//! - `dense`: about 1 MiB made only of Hermes calls
//!   (`<tool_call>\n{"name": "directory_tree", "arguments": {…}}\n</tool_call>\n`).
//!
//! Both libraries return the calls and the normal text. `tool-parser`'s parser is async;
//! it is driven by `futures::executor::block_on`, which adds no measurable cost to a
//! future that never waits.
//!
//! The `adversarial` group parses inputs built to defeat a naive parser (unclosed tags
//! repeated, deep bracket nesting, long runs of `[` or `<`, many calls in one section,
//! whitespace that keeps `auto` undecided), one-shot and streamed in 16-byte chunks, at
//! 64 KiB and 1 MiB. Linear cost shows as the same throughput at both sizes.
//!
//! `cargo bench -p tool-calling-benches --bench textfmt`; `-- --test` runs each once.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tool_calling::protocol::IncrementalParser;
use tool_calling::protocol::textfmt::{AutoProtocol, TextFormat, TextFormatProtocol};
use tool_parser::{QwenParser, ToolParser};

/// The prose paragraph of the inputs.
const PARA: &str = "The quick brown fox jumps over the lazy dog. 我们先看看目录结构，然后再决定下一步。 Some more <b>html</b> and `code` here.\n";

fn hermes_call(i: usize) -> String {
    format!(
        "<tool_call>\n{{\"name\": \"directory_tree\", \"arguments\": {{\"command\": \"listFiles\", \"path\": \"src/tools/{i}\", \"recursive\": false}}}}\n</tool_call>\n"
    )
}

fn prose_input() -> String {
    let mut prose = String::new();
    while prose.len() < 1 << 20 {
        prose.push_str(PARA);
    }
    let chars: Vec<char> = prose.chars().collect();
    let third = chars.len() / 3;
    let part = |a: usize, b: usize| chars[a..b].iter().collect::<String>();
    format!(
        "{}{}{}{}{}{}",
        part(0, third),
        hermes_call(1),
        part(third, 2 * third),
        hermes_call(2),
        part(2 * third, chars.len()),
        hermes_call(3)
    )
}

fn dense_input() -> String {
    let mut dense = String::new();
    let mut i = 0;
    while dense.len() < 1 << 20 {
        dense.push_str(&hermes_call(i));
        i += 1;
    }
    dense
}

fn side_by_side(c: &mut Criterion) {
    let ours = TextFormatProtocol::new(TextFormat::Hermes);
    let theirs = QwenParser::new();
    let mut group = c.benchmark_group("textfmt/hermes");
    for (name, input) in [("prose", prose_input()), ("dense", dense_input())] {
        let expected = input.matches("<tool_call>").count();
        let parsed = ours.parse(&input);
        assert_eq!(parsed.requests.iter().filter(|r| r.complete).count(), expected, "{name}");
        let (_, calls) =
            futures::executor::block_on(theirs.parse_complete(&input)).expect("tool-parser parses");
        assert_eq!(calls.len(), expected, "{name}: tool-parser");
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(format!("{name}/tool-calling"), |b| b.iter(|| ours.parse(black_box(&input))));
        group.bench_function(format!("{name}/tool-parser"), |b| {
            b.iter(|| futures::executor::block_on(theirs.parse_complete(black_box(&input))))
        });
    }
    group.finish();
}

/// Hostile inputs of about `size` bytes, with the format they target (`None`: `auto`).
fn hostile(size: usize) -> Vec<(&'static str, Option<TextFormat>, String)> {
    let fill = |piece: &str| piece.repeat(size / piece.len() + 1);
    vec![
        ("unclosed_tool_call", Some(TextFormat::Hermes), fill("<tool_call>{\"name\": \"x\", ")),
        ("open_braces", Some(TextFormat::Hermes), format!("<tool_call>{}", fill("{\"a\":"))),
        ("brackets", Some(TextFormat::Pythonic), fill("[")),
        ("call_list_heads", Some(TextFormat::Pythonic), fill("[f(x=[")),
        ("angle_brackets", Some(TextFormat::Qwen3CoderXml), fill("<")),
        ("partial_tokens", Some(TextFormat::KimiK2), fill("<|tool_call")),
        (
            "unclosed_invokes",
            Some(TextFormat::MinimaxM2),
            format!("<minimax:tool_call>{}", fill("<invoke name=\"a\"><parameter name=\"k\">")),
        ),
        (
            "many_closed_calls",
            Some(TextFormat::DeepSeekV31),
            format!(
                "<｜tool▁calls▁begin｜>{}",
                fill("<｜tool▁call▁begin｜>a<｜tool▁sep｜>{}<｜tool▁call▁end｜>")
            ),
        ),
        (
            "unclosed_calls",
            Some(TextFormat::DeepSeekV31),
            format!("<｜tool▁calls▁begin｜>{}", fill("<｜tool▁call▁begin｜>a<｜tool▁sep｜>{")),
        ),
        ("auto_blank_after_tag", None, format!("<tool_call>{}", " ".repeat(size))),
        ("auto_open_think", None, format!("<think>{}", fill("<tool_call>"))),
    ]
}

fn parse_with(format: Option<TextFormat>, input: &str) -> usize {
    match format {
        Some(format) => TextFormatProtocol::new(format).parse(input).requests.len(),
        None => AutoProtocol::new().parse(input).requests.len(),
    }
}

/// The streaming parser fed `input` in `chunk`-byte pieces (moved to char boundaries).
fn stream_with(format: Option<TextFormat>, input: &str, chunk: usize) -> usize {
    let mut parser: Box<dyn IncrementalParser> = match format {
        Some(format) => Box::new(TextFormatProtocol::new(format).stream_parser()),
        None => Box::new(AutoProtocol::new().stream_parser()),
    };
    let mut events = Vec::new();
    let mut rest = input;
    let mut count = 0;
    while !rest.is_empty() {
        let mut cut = chunk.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at(cut);
        parser.push_text(piece, &mut events);
        count += events.len();
        events.clear();
        rest = tail;
    }
    parser.finish(&mut events);
    count + events.len()
}

fn adversarial(c: &mut Criterion) {
    let mut group = c.benchmark_group("textfmt/adversarial");
    group.sample_size(10);
    for (label, size) in [("64KiB", 64 << 10), ("1MiB", 1 << 20)] {
        for (name, format, input) in hostile(size) {
            group.throughput(Throughput::Bytes(input.len() as u64));
            group.bench_function(format!("{name}/{label}"), |b| {
                b.iter(|| parse_with(format, black_box(&input)))
            });
            group.bench_function(format!("{name}/{label}/stream16"), |b| {
                b.iter(|| stream_with(format, black_box(&input), 16))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, side_by_side, adversarial);
criterion_main!(benches);
