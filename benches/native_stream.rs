//! Reading provider streams: server-sent events → turn deltas → the turn.
//!
//! Each input is a streamed turn in one provider's shape, generated here after the wire
//! fixtures in `tests/fixtures/native/`: text in token-sized deltas, then tool calls whose
//! arguments arrive in token-sized fragments (one event per fragment, as the providers
//! send them). Four providers: OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages and Gemini (its arguments streamed as Vertex AI `partialArgs`, CRLF line
//! endings as Gemini sends them).
//!
//! `native_stream/<provider>`: inputs of about 256 KiB, 1 MiB and 4 MiB show that the
//! cost is linear in the bytes received. Each iteration pushes the bytes to a
//! `ResponseStream` in 4 KiB chunks (about what a socket read gives), finishes it, and
//! accumulates the turn; the turn is checked once, before timing.
//!
//! The JSON floor, side by side: on the same 1 MiB stream, the fastest of alternating
//! runs of
//! - `ignored`: each event's `data:` payload (split out before timing) parsed by
//!   `serde_json` as `serde::de::IgnoredAny`: JSON syntax and nothing else, the floor;
//! - `value`: the same payloads parsed as `serde_json::Value` (a reference: what decoding
//!   into an untyped tree costs);
//! - `decoder`: the bytes pushed to a `ResponseStream` in 4 KiB chunks, the deltas of
//!   each push looked at and cleared, then `finish`;
//! - `turn`: the same, the deltas accumulated into the turn (what the groups above time).
//!
//! Printed as MiB/s of SSE bytes and the decoder's share of the floor, e.g.
//! `native_stream/openai: ignored 900 MiB/s, value 300 MiB/s, decoder 450 MiB/s (50% of
//! ignored), turn 400 MiB/s (44%) (fastest of 25 alternating runs)`.
//!
//! `cargo bench -p tool-calling-benches --bench native_stream` (about a minute);
//! `-- --test` runs each once, as a smoke test.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use serde::de::IgnoredAny;
use tool_calling::model::{AssistantTurn, TurnAccumulator, TurnDelta};
use tool_calling::providers::{Provider, ResponseStream, WireFormat};

#[path = "support/inputs.rs"]
mod inputs;

const TOKEN: &str = "lorem ";

/// Generates a stream of about the given size; returns it and its number of calls.
type Generator = fn(usize) -> (String, usize);

/// An OpenAI Chat Completions stream of about `size` bytes: text, then calls.
fn openai(size: usize) -> (String, usize) {
    let mut out = String::new();
    for _ in 0..64 {
        out.push_str(&inputs::openai_chunk(&format!("{{\"content\":\"{TOKEN}\"}}")));
    }
    let calls = inputs::openai_calls(&mut out, size, 40, TOKEN);
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

/// An OpenAI Responses stream of about `size` bytes: events named both by their
/// `event:` line and their payload's `type`, numbered by `sequence_number`, each call
/// an output item whose arguments arrive as `response.function_call_arguments.delta`
/// events, closed by its `.done` events carrying the whole arguments; the
/// `response.completed` event carries the whole output again, as OpenAI sends it.
fn responses(size: usize) -> (String, usize) {
    const RESPONSE: &str = "\"id\":\"resp_07d4e2b9a1c6f35801695f2a3c7e9481909d2f6b8c1a4e7d53\",\"object\":\"response\",\
        \"created_at\":1767225660,\"background\":false,\"error\":null,\"incomplete_details\":null,\"instructions\":null,\
        \"max_output_tokens\":null,\"max_tool_calls\":null,\"model\":\"gpt-5-mini-2025-08-07\",\"parallel_tool_calls\":true,\
        \"previous_response_id\":null,\"reasoning\":{\"effort\":\"medium\",\"summary\":\"auto\"},\"service_tier\":\"auto\",\
        \"store\":false,\"temperature\":1,\"text\":{\"format\":{\"type\":\"text\"},\"verbosity\":\"medium\"},\"tool_choice\":\"auto\",\
        \"tools\":[{\"type\":\"function\",\"description\":\"Search the web.\",\"name\":\"search\",\"parameters\":{\"type\":\"object\",\
        \"properties\":{\"q\":{\"type\":\"string\"}},\"required\":[\"q\"],\"additionalProperties\":false},\"strict\":true}],\
        \"top_logprobs\":0,\"top_p\":1,\"truncation\":\"disabled\",\"user\":null,\"metadata\":{}";
    const MSG: &str = "msg_07d4e2b9a1c6f35801695f2a3f62d08190b8c4a1e5f7d2966a";
    let mut out = String::new();
    let mut sequence = 0;
    let mut event = |out: &mut String, kind: &str, body: String| {
        out.push_str(&format!(
            "event: response.{kind}\ndata: {{\"type\":\"response.{kind}\",\"sequence_number\":{sequence},{body}}}\n\n"
        ));
        sequence += 1;
    };
    for kind in ["created", "in_progress"] {
        event(
            &mut out,
            kind,
            format!("\"response\":{{{RESPONSE},\"status\":\"in_progress\",\"output\":[],\"usage\":null}}"),
        );
    }
    event(
        &mut out,
        "output_item.added",
        format!(
            "\"output_index\":0,\"item\":{{\"id\":\"{MSG}\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}"
        ),
    );
    let part = |text: &str| {
        format!("{{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"{text}\"}}")
    };
    event(
        &mut out,
        "content_part.added",
        format!("\"item_id\":\"{MSG}\",\"output_index\":0,\"content_index\":0,\"part\":{}", part("")),
    );
    for _ in 0..64 {
        event(
            &mut out,
            "output_text.delta",
            format!(
                "\"item_id\":\"{MSG}\",\"output_index\":0,\"content_index\":0,\"delta\":\"{TOKEN}\",\"logprobs\":[],\"obfuscation\":\"Ya2\""
            ),
        );
    }
    let text = TOKEN.repeat(64);
    event(
        &mut out,
        "output_text.done",
        format!(
            "\"item_id\":\"{MSG}\",\"output_index\":0,\"content_index\":0,\"text\":\"{text}\",\"logprobs\":[]"
        ),
    );
    event(
        &mut out,
        "content_part.done",
        format!("\"item_id\":\"{MSG}\",\"output_index\":0,\"content_index\":0,\"part\":{}", part(&text)),
    );
    let message = format!(
        "{{\"id\":\"{MSG}\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{}],\"role\":\"assistant\"}}",
        part(&text)
    );
    event(&mut out, "output_item.done", format!("\"output_index\":0,\"item\":{message}"));
    let arguments = format!("{{\\\"q\\\": \\\"{}\\\"}}", TOKEN.repeat(40));
    let mut output = vec![message];
    while out.len() < size {
        let index = output.len();
        let id = format!("fc_07d4e2b9a1c6f35801695f2a40a7e48190c3d9f1b6a2e{index:06}");
        let item = |status: &str, arguments: &str| {
            format!(
                "{{\"id\":\"{id}\",\"type\":\"function_call\",\"status\":\"{status}\",\"arguments\":\"{arguments}\",\
                 \"call_id\":\"call_Wx4hT9bN2qLm7RcV5p{index:06}\",\"name\":\"search\"}}"
            )
        };
        event(
            &mut out,
            "output_item.added",
            format!("\"output_index\":{index},\"item\":{}", item("in_progress", "")),
        );
        let fragments = std::iter::once("{\\\"q\\\": \\\"")
            .chain(std::iter::repeat_n(TOKEN, 40))
            .chain(std::iter::once("\\\"}"));
        for fragment in fragments {
            event(
                &mut out,
                "function_call_arguments.delta",
                format!(
                    "\"item_id\":\"{id}\",\"output_index\":{index},\"delta\":\"{fragment}\",\"obfuscation\":\"Bh2\""
                ),
            );
        }
        event(
            &mut out,
            "function_call_arguments.done",
            format!("\"item_id\":\"{id}\",\"output_index\":{index},\"arguments\":\"{arguments}\""),
        );
        let done = item("completed", &arguments);
        event(&mut out, "output_item.done", format!("\"output_index\":{index},\"item\":{done}"));
        output.push(done);
    }
    let calls = output.len() - 1;
    event(
        &mut out,
        "completed",
        format!(
            "\"response\":{{{RESPONSE},\"status\":\"completed\",\"output\":[{}],\"usage\":{{\"input_tokens\":81,\
             \"input_tokens_details\":{{\"cached_tokens\":0}},\"output_tokens\":2000,\"output_tokens_details\":\
             {{\"reasoning_tokens\":0}},\"total_tokens\":2081}}}}",
            output.join(",")
        ),
    );
    (out, calls)
}

/// A Gemini stream of about `size` bytes, as Vertex AI sends it with
/// `streamFunctionCallArguments` (CRLF line endings): text parts, then each call as
/// `functionCall {name, willContinue}`, one `partialArgs` string piece per event, and an
/// empty `functionCall {}` closing it; the last one carries `finishReason` and the usage.
fn gemini(size: usize) -> (String, usize) {
    const TAIL: &str = "\"modelVersion\": \"gemini-3.1-pro-preview\",\"createTime\": \"2026-01-01T00:02:00.654321Z\",\
        \"responseId\": \"Qc3vN8rT2kLw5Zp9HdB4aYe\"}\r\n\r\n";
    let chunk = |parts: &str, finish: &str, usage: &str| {
        format!(
            "data: {{\"candidates\": [{{\"content\": {{\"role\": \"model\",\"parts\": [{parts}]}}{finish}}}],\
             \"usageMetadata\": {{{usage}}},{TAIL}"
        )
    };
    const ON_DEMAND: &str = "\"trafficType\": \"ON_DEMAND\"";
    let mut out = String::new();
    for _ in 0..64 {
        out.push_str(&chunk(&format!("{{\"text\": \"{TOKEN}\"}}"), "", ON_DEMAND));
    }
    let mut calls = 0;
    while out.len() < size {
        out.push_str(&chunk(
            "{\"functionCall\": {\"name\": \"search\",\"willContinue\": true}}",
            "",
            ON_DEMAND,
        ));
        for _ in 0..40 {
            out.push_str(&chunk(
                &format!(
                    "{{\"functionCall\": {{\"partialArgs\": [{{\"jsonPath\": \"$.q\",\"stringValue\": \"{TOKEN}\",\
                     \"willContinue\": true}}],\"willContinue\": true}}}}"
                ),
                "",
                ON_DEMAND,
            ));
        }
        out.push_str(&chunk(
            "{\"functionCall\": {\"partialArgs\": [{\"jsonPath\": \"$.q\",\"stringValue\": \"\"}],\"willContinue\": true}}",
            "",
            ON_DEMAND,
        ));
        calls += 1;
        if out.len() < size {
            out.push_str(&chunk("{\"functionCall\": {}}", "", ON_DEMAND));
        }
    }
    out.push_str(&chunk(
        "{\"functionCall\": {}}",
        ",\"finishReason\": \"STOP\"",
        "\"promptTokenCount\": 41,\"candidatesTokenCount\": 2000,\"totalTokenCount\": 2041,\
         \"trafficType\": \"ON_DEMAND\",\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 41}],\
         \"candidatesTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 2000}]",
    ));
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

/// Reads `bytes` in 4 KiB chunks; the deltas of each push are looked at and cleared.
fn decode(format: &dyn WireFormat, bytes: &[u8], deltas: &mut Vec<TurnDelta>) {
    let mut stream = ResponseStream::new(format);
    for chunk in bytes.chunks(4096) {
        stream.push(chunk, deltas).expect("the generated stream is well formed");
        deltas.iter().for_each(|delta| {
            black_box(delta);
        });
        deltas.clear();
    }
    stream.finish(deltas).expect("the generated stream ends after its last event");
    deltas.iter().for_each(|delta| {
        black_box(delta);
    });
    deltas.clear();
}

/// The `data:` payloads of `sse` (each event here has one `data` line), `[DONE]` left
/// out: the JSON documents the decoder parses.
fn payloads(sse: &str) -> Vec<&str> {
    sse.lines().filter_map(|line| line.strip_prefix("data: ")).filter(|data| *data != "[DONE]").collect()
}

/// The JSON floor and the decoder on the same stream, side by side: alternating runs,
/// the fastest of each, as MiB/s of SSE bytes.
fn side_by_side(name: &str, format: &dyn WireFormat, sse: &str, rounds: usize) {
    let payloads = payloads(sse);
    let mut deltas = Vec::new();
    let mut fastest = [Duration::MAX; 4];
    let mut time = |slot: usize, run: &mut dyn FnMut()| {
        let start = Instant::now();
        run();
        fastest[slot] = fastest[slot].min(start.elapsed());
    };
    for _ in 0..rounds {
        time(0, &mut || {
            for payload in black_box(&payloads) {
                black_box(serde_json::from_str::<IgnoredAny>(payload).expect("JSON"));
            }
        });
        time(1, &mut || {
            for payload in black_box(&payloads) {
                black_box(serde_json::from_str::<serde_json::Value>(payload).expect("JSON"));
            }
        });
        time(2, &mut || decode(format, black_box(sse.as_bytes()), &mut deltas));
        time(3, &mut || {
            black_box(read(format, black_box(sse.as_bytes())));
        });
    }
    let mib_s = |d: Duration| sse.len() as f64 / (1 << 20) as f64 / d.as_secs_f64();
    let [ignored, value, decoder, turn] = fastest.map(mib_s);
    println!(
        "{name}: {:.2} MiB, {} events: ignored {ignored:.0} MiB/s, value {value:.0} MiB/s, \
         decoder {decoder:.0} MiB/s ({:.0}% of ignored, {:.0}% of value), turn {turn:.0} MiB/s ({:.0}% of ignored) \
         (fastest of {rounds} alternating runs)",
        sse.len() as f64 / (1 << 20) as f64,
        payloads.len(),
        100.0 * decoder / ignored,
        100.0 * decoder / value,
        100.0 * turn / ignored,
    );
}

fn bench(c: &mut Criterion) {
    let providers: [(&str, &dyn WireFormat, Generator); 4] = [
        ("openai", &Provider::OpenAiChat, openai),
        ("responses", &Provider::OpenAiResponses, responses),
        ("anthropic", &Provider::Anthropic, anthropic),
        ("gemini", &Provider::Gemini, gemini),
    ];
    // `-- --test`: each run once.
    let rounds = if std::env::args().any(|arg| arg == "--test") { 1 } else { 25 };
    for (name, format, generate) in providers {
        let group_name = format!("native_stream/{name}");
        let mut group = c.benchmark_group(&group_name);
        group.sample_size(20);
        group.sampling_mode(SamplingMode::Flat);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(2));
        for (label, size) in [("256KiB", 256 << 10), ("1MiB", 1 << 20), ("4MiB", 4 << 20)] {
            let (input, calls) = generate(size);
            let turn = read(format, input.as_bytes());
            assert_eq!(turn.tool_calls().count(), calls, "{name} {label}");
            assert!(
                turn.tool_calls().all(|call| call.arguments_json().is_ok() && !call.incomplete),
                "{name} {label}"
            );
            assert!(turn.text().starts_with(TOKEN), "{name} {label}");
            if size == 1 << 20 {
                side_by_side(&group_name, format, &input, rounds);
            }
            group.throughput(Throughput::Bytes(input.len() as u64));
            group.bench_function(label, |b| b.iter(|| read(format, black_box(input.as_bytes()))));
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
