//! Reading provider streams: server-sent events → turn deltas → the turn.
//!
//! Each input is a streamed turn in one provider's shape, generated here: text in
//! token-sized deltas, then tool calls whose arguments arrive in token-sized fragments
//! (one event per fragment, as the providers send them). Inputs of about 256 KiB, 1 MiB
//! and 4 MiB show that the cost is linear in the bytes received. Each iteration pushes
//! the bytes to a `ResponseStream` in 4 KiB chunks (about what a socket read gives),
//! finishes it, and accumulates the turn; the turn is checked once, before timing.
//!
//! `cargo bench -p tool-calling-benches --bench native_stream`; `-- --test` runs each once, as a smoke test.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tool_calling::model::{AssistantTurn, TurnAccumulator};
use tool_calling::providers::{Provider, ResponseStream, WireFormat};

const TOKEN: &str = "lorem ";

/// Generates a stream of about the given size; returns it and its number of calls.
type Generator = fn(usize) -> (String, usize);

/// An OpenAI Chat Completions stream of about `size` bytes.
fn openai(size: usize) -> (String, usize) {
    let chunk = |delta: &str| {
        format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\
             \"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
        )
    };
    let mut out = String::new();
    for _ in 0..64 {
        out.push_str(&chunk(&format!("{{\"content\":\"{TOKEN}\"}}")));
    }
    let mut calls = 0;
    while out.len() < size {
        out.push_str(&chunk(&format!(
            "{{\"tool_calls\":[{{\"index\":{calls},\"id\":\"call_{calls}\",\"type\":\"function\",\
             \"function\":{{\"name\":\"search\",\"arguments\":\"\"}}}}]}}"
        )));
        out.push_str(&chunk(&format!(
            "{{\"tool_calls\":[{{\"index\":{calls},\"function\":{{\"arguments\":\"{{\\\"q\\\": \\\"\"}}}}]}}"
        )));
        for _ in 0..40 {
            out.push_str(&chunk(&format!(
                "{{\"tool_calls\":[{{\"index\":{calls},\"function\":{{\"arguments\":\"{TOKEN}\"}}}}]}}"
            )));
        }
        out.push_str(&chunk(&format!(
            "{{\"tool_calls\":[{{\"index\":{calls},\"function\":{{\"arguments\":\"\\\"}}\"}}}}]}}"
        )));
        calls += 1;
    }
    out.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
    (out, calls)
}

/// An Anthropic Messages stream of about `size` bytes.
fn anthropic(size: usize) -> (String, usize) {
    let event = |kind: &str, data: String| format!("event: {kind}\ndata: {data}\n\n");
    let mut out = event(
        "message_start",
        "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}".into(),
    );
    out.push_str(&event(
        "content_block_start",
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"
            .into(),
    ));
    for _ in 0..64 {
        out.push_str(&event(
            "content_block_delta",
            format!("{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{TOKEN}\"}}}}"),
        ));
    }
    out.push_str(&event("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}".into()));
    let mut calls = 0;
    while out.len() < size {
        let block = calls + 1;
        out.push_str(&event(
            "content_block_start",
            format!("{{\"type\":\"content_block_start\",\"index\":{block},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_{calls}\",\"name\":\"search\",\"input\":{{}}}}}}"),
        ));
        let delta = |json: &str| {
            format!(
                "{{\"type\":\"content_block_delta\",\"index\":{block},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{json}\"}}}}"
            )
        };
        out.push_str(&event("content_block_delta", delta("{\\\"q\\\": \\\"")));
        for _ in 0..40 {
            out.push_str(&event("content_block_delta", delta(TOKEN)));
        }
        out.push_str(&event("content_block_delta", delta("\\\"}")));
        out.push_str(&event(
            "content_block_stop",
            format!("{{\"type\":\"content_block_stop\",\"index\":{block}}}"),
        ));
        calls += 1;
    }
    out.push_str(&event("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":100}}".into()));
    out.push_str(&event("message_stop", "{\"type\":\"message_stop\"}".into()));
    (out, calls)
}

/// Reads `bytes` in 4 KiB chunks and accumulates the turn.
fn read(format: &dyn WireFormat, bytes: &[u8]) -> AssistantTurn {
    let mut stream = ResponseStream::new(format);
    let mut deltas = Vec::new();
    let mut turn = TurnAccumulator::new();
    for chunk in bytes.chunks(4096) {
        stream.push(chunk, &mut deltas).expect("the generated stream is well formed");
        deltas.drain(..).for_each(|delta| turn.push(&delta));
    }
    stream.finish(&mut deltas).expect("the generated stream ends after its last event");
    deltas.drain(..).for_each(|delta| turn.push(&delta));
    turn.finish()
}

fn bench(c: &mut Criterion) {
    let providers: [(&str, &dyn WireFormat, Generator); 2] =
        [("openai", &Provider::OpenAiChat, openai), ("anthropic", &Provider::Anthropic, anthropic)];
    for (name, format, generate) in providers {
        let mut group = c.benchmark_group(format!("native_stream/{name}"));
        for (label, size) in [("256KiB", 256 << 10), ("1MiB", 1 << 20), ("4MiB", 4 << 20)] {
            let (input, calls) = generate(size);
            let turn = read(format, input.as_bytes());
            assert_eq!(turn.tool_calls().count(), calls, "{name} {label}");
            assert!(
                turn.tool_calls().all(|call| call.arguments_json().is_ok() && !call.incomplete),
                "{name} {label}"
            );
            group.throughput(Throughput::Bytes(input.len() as u64));
            group.bench_function(label, |b| b.iter(|| read(format, black_box(input.as_bytes()))));
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
