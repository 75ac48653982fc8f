//! The open-model text formats: this crate's parsers side by side with the `tool-parser`
//! crate (the SGLang gateway's parsers) on the same replies, every format alone, and the
//! formats on hostile inputs, to show the cost stays linear.
//!
//! Inputs (generated in `support/inputs.rs`, the same bytes every run):
//! - `prose`: 1 MiB of prose (mixed English and Chinese, with `<b>` tags and backticks)
//!   holding three Hermes calls;
//! - `dense`: 1 MiB made only of Hermes calls
//!   (`<tool_call>\n{"name": "directory_tree", "arguments": {…}}\n</tool_call>\n`).
//!
//! Both libraries return the calls and the normal text. `tool-parser`'s parser is async;
//! it is driven by `futures::executor::block_on`, which adds no measurable cost to a
//! future that never waits. Beside them, `scan_floor`: `memchr::memmem` finding every
//! `<tool_call>` and `</tool_call>` and doing nothing else, which no parser can beat.
//! Criterion measures one after the other while a shared machine's speed drifts, so the
//! bench also prints the ratios measured side by side (the fastest of 15 alternating
//! runs of each), e.g. `textfmt/hermes/dense (…): scan floor … MB/s, tool-calling … MB/s
//! (…% of the floor), tool-parser … MB/s; tool-calling / tool-parser = …`.
//!
//! The `peers` group does the same for every format `tool-parser` also reads (18 of
//! them), on 256 KiB of prose with three calls and on a reply made only of calls, each
//! call written by the format's own writer (`TextFormatProtocol::write_call`) with
//! arguments of several kinds; where `tool-parser` takes one list per reply (Mistral,
//! Llama 3, pythonic, Sarashina, Kimi K3) the dense reply is one list. It prints the
//! ratio measured side by side, or says so when `tool-parser` reads fewer of the calls
//! (it reads some formats only at the start of a reply), rather than comparing unequal
//! work. The `formats` group times every format alone on the same two shapes.
//!
//! The `adversarial` group parses inputs built to defeat a naive parser (unclosed tags
//! repeated, deep bracket nesting, long runs of `[` or `<`, many calls in one section,
//! whitespace that keeps `auto` undecided), one-shot and streamed in 16-byte chunks, at
//! 64 KiB and 1 MiB. Linear cost shows as the same throughput at both sizes.
//!
//! `cargo bench -p tool-calling-benches --bench textfmt`; `-- --test` runs each once;
//! `-- textfmt/hermes` runs the side-by-side group alone.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tool_calling::protocol::textfmt::{AutoProtocol, TextFormat, TextFormatProtocol};
use tool_calling::protocol::{StreamParser, ToolCallingProtocol};
use tool_parser::parsers::{QwenXmlParser, SarashinaParser};
use tool_parser::{
    CohereParser, DeepSeek31Parser, DeepSeekDsmlParser, DeepSeekParser, Gemma4Parser, Glm4MoeParser,
    InklingParser, KimiK2Parser, KimiK3Parser, LlamaParser, MinimaxM2Parser, MinimaxM3Parser, MistralParser,
    PythonicParser, QwenParser, Step3Parser, ToolParser,
};

#[path = "../tests/support/chunks.rs"]
mod chunks;
#[path = "support/floor.rs"]
mod floor;

use chunks::char_chunks;
#[path = "support/inputs.rs"]
mod inputs;

use floor::{ScanFloor, alternating};

fn side_by_side(c: &mut Criterion) {
    let ours = TextFormatProtocol::new(TextFormat::Hermes);
    let theirs = QwenParser::new();
    let floor = ScanFloor::new("<tool_call>", "</tool_call>");
    let mut group = c.benchmark_group("textfmt/hermes");
    for (name, input) in
        [("prose", inputs::hermes_prose_with_calls(1 << 20)), ("dense", inputs::hermes_calls_only(1 << 20))]
    {
        let expected = input.matches("<tool_call>").count();
        let parsed = ours.parse(&input);
        assert_eq!(parsed.requests.iter().filter(|r| r.complete).count(), expected, "{name}");
        let (_, calls) =
            futures::executor::block_on(theirs.parse_complete(&input)).expect("tool-parser parses");
        assert_eq!(calls.len(), expected, "{name}: tool-parser");
        assert_eq!(floor.scan(&input), 2 * expected, "{name}: the scan floor");
        // The ratios that matter, measured side by side.
        let speeds = alternating(
            input.len(),
            &[&|| floor.scan(&input), &|| ours.parse(&input).requests.len(), &|| {
                futures::executor::block_on(theirs.parse_complete(&input)).map_or(0, |(_, c)| c.len())
            }],
        );
        println!(
            "textfmt/hermes/{name} ({} bytes, {expected} calls): scan floor {:.0} MB/s, tool-calling {:.0} MB/s \
             ({:.1}% of the floor), tool-parser {:.1} MB/s; tool-calling / tool-parser = {:.1} \
             (fastest of 15 alternating runs)",
            input.len(),
            speeds[0],
            speeds[1],
            100.0 * speeds[1] / speeds[0],
            speeds[2],
            speeds[1] / speeds[2],
        );
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(format!("{name}/scan_floor"), |b| b.iter(|| floor.scan(black_box(&input))));
        group.bench_function(format!("{name}/tool-calling"), |b| b.iter(|| ours.parse(black_box(&input))));
        group.bench_function(format!("{name}/tool-parser"), |b| {
            b.iter(|| futures::executor::block_on(theirs.parse_complete(black_box(&input))))
        });
    }
    group.finish();
}

/// Every format `tool-parser` also reads, with its parser for it.
fn peers() -> Vec<(TextFormat, Box<dyn ToolParser>)> {
    vec![
        (TextFormat::Hermes, Box::new(QwenParser::new())),
        (TextFormat::Qwen3CoderXml, Box::new(QwenXmlParser::new())),
        (TextFormat::Mistral, Box::new(MistralParser::new())),
        (TextFormat::Llama3Json, Box::new(LlamaParser::new())),
        (TextFormat::Pythonic, Box::new(PythonicParser::new())),
        (TextFormat::DeepSeekV3, Box::new(DeepSeekParser::new())),
        (TextFormat::DeepSeekV31, Box::new(DeepSeek31Parser::new())),
        (TextFormat::DeepSeekV32, Box::new(DeepSeekDsmlParser::v32())),
        (TextFormat::DeepSeekV4, Box::new(DeepSeekDsmlParser::v4())),
        (TextFormat::DeepSeekV41, Box::new(DeepSeekDsmlParser::v41())),
        (TextFormat::KimiK2, Box::new(KimiK2Parser::new())),
        (TextFormat::KimiK3, Box::new(KimiK3Parser::new())),
        (TextFormat::Glm45, Box::new(Glm4MoeParser::glm45())),
        (TextFormat::Glm47, Box::new(Glm4MoeParser::glm47())),
        (TextFormat::MinimaxM2, Box::new(MinimaxM2Parser::new())),
        (TextFormat::MinimaxM3, Box::new(MinimaxM3Parser::new())),
        (TextFormat::Cohere, Box::new(CohereParser::new())),
        (TextFormat::Step3, Box::new(Step3Parser::new())),
        (TextFormat::Gemma4, Box::new(Gemma4Parser::new())),
        (TextFormat::Inkling, Box::new(InklingParser::new())),
        (TextFormat::Sarashina, Box::new(SarashinaParser::new())),
    ]
}

/// Call number `i` in `format`, as its writer writes it: a name and arguments of several
/// kinds (a path, a number, a flag, a nested object with a list, non-ASCII text).
fn write_call(format: TextFormat, i: usize) -> String {
    let args = serde_json::json!({
        "path": format!("src/tools/{i}"),
        "depth": 3,
        "recursive": false,
        "options": {"filters": ["*.rs", "*.toml"], "follow": true},
        "note": "目录结构 ünïcødé",
    });
    let args = args.as_object().expect("an object");
    let call =
        TextFormatProtocol::new(format).write_call("directory_tree", args).expect("the writer writes it");
    // `tool-parser` reads Mistral's array only after `[TOOL_CALLS] ` with its blank; this
    // crate reads both.
    match format {
        TextFormat::Mistral => call.replacen("[TOOL_CALLS][", "[TOOL_CALLS] [", 1),
        _ => call,
    }
}

/// `n` calls in one block of `format`, for the formats whose reader (here or in
/// `tool-parser`) takes one list per reply: the calls `write_call` writes, unwrapped and
/// joined as the format joins them. `None` for the other formats.
fn one_block(format: TextFormat, n: usize) -> Option<String> {
    let (open, close, join) = match format {
        TextFormat::Mistral => ("[TOOL_CALLS] [", "]", ", "),
        TextFormat::Llama3Json => ("<|python_tag|>", "", "; "),
        TextFormat::Pythonic => ("[", "]", ", "),
        TextFormat::Sarashina => ("<|tool_calls|>[", "]", ", "),
        TextFormat::KimiK3 => ("<|open|>tools<|sep|>", "<|close|>tools<|sep|>", ""),
        _ => return None,
    };
    let calls: Option<Vec<String>> = (0..n)
        .map(|i| {
            let call = write_call(format, i);
            call.strip_prefix(open).and_then(|c| c.strip_suffix(close)).map(str::to_string)
        })
        .collect();
    Some(format!("{open}{}{close}", calls?.join(join)))
}

/// Every format `tool-parser` also reads, on prose with three calls and on a reply made
/// only of calls (written by each format's own writer), side by side with it. Sarashina
/// and Gemma 4 read only a reply that starts with their calls in `tool-parser`, so their
/// prose input is skipped when `tool-parser` finds fewer calls than there are: the line
/// says so rather than comparing unequal work.
fn peers_side_by_side(c: &mut Criterion) {
    let mut group = c.benchmark_group("textfmt/peers");
    group.sample_size(10);
    const SIZE: usize = 256 << 10;
    for (format, theirs) in peers() {
        let ours = TextFormatProtocol::new(format);
        let call = |i: usize| write_call(format, i);
        let (mut dense, mut dense_calls) = inputs::calls_with(SIZE, &call);
        // Where `tool-parser` reads one list per reply, the dense reply is one list.
        if let Some(block) = one_block(format, dense_calls) {
            dense = block;
        }
        if one_block(format, 1).is_some() {
            dense_calls = TextFormatProtocol::new(format).parse(&dense).requests.len();
        }
        for (name, input, expected) in
            [("prose", inputs::prose_with(SIZE, &call), 3), ("dense", dense, dense_calls)]
        {
            let parsed = ours.parse(&input);
            assert_eq!(parsed.requests.iter().filter(|r| r.complete).count(), expected, "{format}/{name}");
            let found =
                futures::executor::block_on(theirs.parse_complete(&input)).map_or(0, |(_, c)| c.len());
            if found != expected {
                println!(
                    "textfmt/peers/{format}/{name}: tool-parser reads {found} of the {expected} calls; not compared"
                );
                continue;
            }
            let speeds = alternating(
                input.len(),
                &[&|| ours.parse(&input).requests.len(), &|| {
                    futures::executor::block_on(theirs.parse_complete(&input)).map_or(0, |(_, c)| c.len())
                }],
            );
            println!(
                "textfmt/peers/{format}/{name} ({} bytes, {expected} calls): tool-calling {:.0} MB/s, \
                 tool-parser {:.1} MB/s; tool-calling / tool-parser = {:.1} (fastest of 15 alternating runs)",
                input.len(),
                speeds[0],
                speeds[1],
                speeds[0] / speeds[1],
            );
            group.throughput(Throughput::Bytes(input.len() as u64));
            group.bench_function(format!("{format}/{name}/tool-calling"), |b| {
                b.iter(|| ours.parse(black_box(&input)))
            });
            group.bench_function(format!("{format}/{name}/tool-parser"), |b| {
                b.iter(|| futures::executor::block_on(theirs.parse_complete(black_box(&input))))
            });
        }
    }
    group.finish();
}

/// Every format on prose with three calls and on a reply made only of calls, one-shot
/// (the formats `tool-parser` does not read have no peer to stand beside).
fn every_format(c: &mut Criterion) {
    let mut group = c.benchmark_group("textfmt/formats");
    group.sample_size(10);
    const SIZE: usize = 256 << 10;
    for format in TextFormat::ALL {
        let ours = TextFormatProtocol::new(format);
        let call = |i: usize| write_call(format, i);
        let (dense, _) = inputs::calls_with(SIZE, &call);
        for (name, input) in [("prose", inputs::prose_with(SIZE, &call)), ("dense", dense)] {
            group.throughput(Throughput::Bytes(input.len() as u64));
            group.bench_function(format!("{format}/{name}"), |b| b.iter(|| ours.parse(black_box(&input))));
        }
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
    let mut parser: Box<dyn StreamParser> = match format {
        Some(format) => Box::new(TextFormatProtocol::new(format).stream_parser()),
        None => Box::new(AutoProtocol::new().stream_parser()),
    };
    let mut events = Vec::new();
    let mut count = 0;
    for piece in char_chunks(input, chunk) {
        parser.push_text(piece, &mut events);
        count += events.len();
        events.clear();
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

criterion_group!(benches, side_by_side, peers_side_by_side, every_format, adversarial);
criterion_main!(benches);
