//! Fuzz target: the native protocols' stream readers (server-sent events → turn deltas)
//! for arbitrary bytes cut into arbitrary chunks.
//!
//! Input layout: the first byte's low two bits pick the provider (0 OpenAI Chat
//! Completions, 1 OpenAI Responses, 2 Anthropic, 3 Gemini), its high six bits give K
//! (0–63); the next K bytes are the chunking seed; the rest is the response body, as
//! bytes (not necessarily UTF-8). The body is pushed in chunks whose sizes are the seed
//! bytes in turn (cycling; a 0 pushes an empty chunk); K = 0 pushes it as one chunk.
//! Reading stops at the first error, as a client does.
//!
//! Checks, besides "never panics":
//! - the chunked run gives the same error (an error event, or the end inside an event)
//!   and the same accumulated turn as the one-piece run;
//! - the requests the protocol's incremental parser reports from the deltas equal the
//!   one-shot parse of the accumulated turn (for the chunked and the one-piece deltas);
//! - once the stream is finished, every call that appears has ended exactly once, and
//!   nothing of a call follows its end.
//!
//! Run from the repository root:
//! `cd fuzz && cargo +nightly fuzz run native_stream corpus/native_stream seeds/native_stream -- -dict=native_stream.dict`

#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use tool_calling::model::{AssistantTurn, TurnAccumulator, TurnDelta};
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::native::{NativeOptions, NativeProtocol};
use tool_calling::protocol::{RequestIdStyle, StreamCollector};
use tool_calling::providers::{Provider, ResponseStream, WireError, WireFormat};

fuzz_target!(|data: &[u8]| {
    let (head, rest) = match data.split_first() {
        Some((&head, rest)) => (head, rest),
        None => (0, &[][..]),
    };
    let k = usize::from(head >> 2).min(rest.len());
    let (seed, body) = rest.split_at(k);
    let options = NativeOptions::default().request_ids(RequestIdStyle::Sequential);
    let (protocol, wire): (Box<dyn ToolCallingProtocol>, Provider) = match head & 0b11 {
        0 => (Box::new(NativeProtocol::openai_chat().with_options(options)), Provider::OpenAiChat),
        1 => (Box::new(NativeProtocol::openai_responses().with_options(options)), Provider::OpenAiResponses),
        2 => (Box::new(NativeProtocol::anthropic().with_options(options)), Provider::Anthropic),
        _ => (Box::new(NativeProtocol::gemini().with_options(options)), Provider::Gemini),
    };

    let chunks = chunks(body, seed);
    let (whole_deltas, whole_error) = read(&wire, &[body]);
    let (deltas, error) = read(&wire, &chunks);
    let context = format!(
        "protocol {}\nbody: {:?}\nchunk sizes: {:?}",
        protocol.id(),
        String::from_utf8_lossy(body),
        chunks.iter().map(|c| c.len()).collect::<Vec<_>>()
    );

    assert!(error == whole_error, "errors differ; {context}\none piece: {whole_error:?}\nchunked: {error:?}");
    let whole_turn = accumulate(&whole_deltas);
    let turn = accumulate(&deltas);
    assert!(turn == whole_turn, "turns differ; {context}\none piece: {whole_turn:#?}\nchunked: {turn:#?}");

    for (name, deltas, turn) in [("one piece", &whole_deltas, &whole_turn), ("chunked", &deltas, &turn)] {
        if error.is_none() || matches!(error, Some(WireError::Truncated { .. })) {
            check_calls_closed(deltas, &format!("{name}; {context}"));
        }
        let expected = protocol.parse_turn(turn);
        let mut parser = protocol.stream_parser();
        let mut events = Vec::new();
        for delta in deltas {
            parser.push(delta, &mut events);
        }
        parser.finish(&mut events);
        let mut collector = StreamCollector::new();
        collector.extend(events);
        let outcome = collector.into_outcome();
        assert!(
            outcome.requests == expected.requests,
            "{name}: streamed requests differ from the one-shot parse; {context}\nparse: {:#?}\nstream: {:#?}",
            expected.requests,
            outcome.requests
        );
    }
});

/// `body` cut into chunks of the sizes in `seed`, in turn.
fn chunks<'a>(body: &'a [u8], seed: &[u8]) -> Vec<&'a [u8]> {
    if seed.is_empty() {
        return vec![body];
    }
    let all_zero = seed.iter().all(|&b| b == 0);
    let mut chunks = Vec::new();
    let mut rest = body;
    for &size in seed.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let size = if all_zero { 1 } else { usize::from(size).min(rest.len()) };
        let (chunk, tail) = rest.split_at(size);
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

/// The deltas of pushing `chunks` (stopping at the first error) and, without an error,
/// finishing; and the error (the stream's end inside an event, from finishing).
fn read(format: &dyn WireFormat, chunks: &[&[u8]]) -> (Vec<TurnDelta>, Option<WireError>) {
    let mut stream = ResponseStream::new(format);
    let mut deltas = Vec::new();
    for chunk in chunks {
        if let Err(error) = stream.push(chunk, &mut deltas) {
            return (deltas, Some(error));
        }
    }
    let end = stream.finish(&mut deltas);
    (deltas, end.err())
}

fn accumulate(deltas: &[TurnDelta]) -> AssistantTurn {
    let mut turn = TurnAccumulator::new();
    for delta in deltas {
        turn.push(delta);
    }
    turn.finish()
}

/// Every call that appears ends exactly once, and nothing of it follows its end.
fn check_calls_closed(deltas: &[TurnDelta], context: &str) {
    let mut ended: HashMap<usize, bool> = HashMap::new();
    for delta in deltas {
        let (index, is_end) = match delta {
            TurnDelta::ToolCallStart { index, .. }
            | TurnDelta::ToolCallArguments { index, .. }
            | TurnDelta::ToolCallSignature { index, .. }
            | TurnDelta::ToolCallIncomplete { index } => (*index, false),
            TurnDelta::ToolCallEnd { index } => (*index, true),
            _ => continue,
        };
        let was_ended = ended.insert(index, is_end);
        assert!(
            was_ended != Some(true),
            "call {index} has a delta after its end: {delta:?}; {context}\n{deltas:#?}"
        );
    }
    let open: Vec<_> = ended.iter().filter(|(_, ended)| !**ended).map(|(index, _)| *index).collect();
    assert!(open.is_empty(), "calls {open:?} never ended; {context}\n{deltas:#?}");
}
