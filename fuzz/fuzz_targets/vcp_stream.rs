//! Fuzz target: the streaming VCP parser against the one-shot parser, for arbitrary text
//! cut into arbitrary chunks, under every option combination.
//!
//! Input layout: the first byte's low three bits pick the options (bit 0 `fuzzy_markers`,
//! bit 1 `skip_fenced`, bit 2 `keep_reasoning`), its high five bits give K (0–31; an odd
//! K also turns on small parser limits, see `common::options`); the
//! next K bytes are the chunking seed; the rest is cut to its longest valid UTF-8 prefix
//! and is the text. The text is pushed in chunks whose sizes are the seed bytes in turn
//! (cycling; a 0 pushes an empty chunk), each cut moved back to a char boundary but every
//! non-empty chunk at least one char; K = 0 pushes the text as one chunk.
//!
//! Checks, besides "never panics":
//! - the collected outcome (`StreamCollector::into_outcome`) equals `VcpProtocol::parse`,
//!   for the chunked run and the single-chunk run;
//! - the prose (concatenated `Text` events) equals the single-chunk prose;
//! - events are in input order: each `Text` span slices the input to its text, spans
//!   never go back, each `RequestStarted { offset }` is followed by its fields and exactly
//!   one `RequestCompleted` or `BlockDiscarded` whose span starts at `offset`, and no prose
//!   overlaps a request's span;
//! - a finished parser reports nothing more.
//!
//! Run from the repository root:
//! `cd fuzz && cargo +nightly fuzz run vcp_stream corpus/vcp_stream seeds/vcp_stream -- -dict=vcp_stream.dict`

#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use tool_calling::Span;
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::protocol::{StreamCollector, StreamEvent, StreamParser};

fuzz_target!(|data: &[u8]| {
    let (head, rest) = match data.split_first() {
        Some((&head, rest)) => (head, rest),
        None => (0, &[][..]),
    };
    let k = usize::from(head >> 3).min(rest.len());
    let (seed, rest) = rest.split_at(k);
    let text = common::utf8_prefix(rest);

    let options = common::options(head);
    let protocol = VcpProtocol::new(options);
    let expected = protocol.parse(text);

    let chunks = chunks(text, seed);
    let whole = run(&protocol, &[text]);
    let chunked = run(&protocol, &chunks);
    let context = format!("{options:?}\ninput: {text:?}\nchunks: {chunks:?}");

    check_events(text, &whole, &format!("single chunk, {context}"));
    check_events(text, &chunked, &context);
    let (whole_outcome, whole_prose) = collect(&whole);
    let (outcome, prose) = collect(&chunked);
    assert!(
        whole_outcome == expected,
        "single chunk: outcome differs from parse; {context}\nparse:  {expected:#?}\nstream: {whole_outcome:#?}"
    );
    assert!(
        outcome == expected,
        "outcome differs from parse; {context}\nparse:  {expected:#?}\nstream: {outcome:#?}"
    );
    assert!(
        prose == whole_prose,
        "prose differs; {context}\nsingle chunk: {whole_prose:?}\nchunked: {prose:?}"
    );
});

/// The char boundary at or before `at` (clamped to the text).
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// `text` cut into chunks of the sizes in `seed`, in turn (see the module docs).
fn chunks<'a>(text: &'a str, seed: &[u8]) -> Vec<&'a str> {
    if seed.is_empty() {
        return vec![text];
    }
    let all_zero = seed.iter().all(|&b| b == 0);
    let mut chunks = Vec::new();
    let mut rest = text;
    for &size in seed.iter().cycle() {
        let Some(first) = rest.chars().next() else { break };
        let size = if all_zero { 1 } else { usize::from(size) };
        let cut = if size == 0 { 0 } else { floor_boundary(rest, size).max(first.len_utf8()) };
        let (chunk, tail) = rest.split_at(cut);
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

/// All events of pushing `chunks` and finishing.
fn run(protocol: &VcpProtocol, chunks: &[&str]) -> Vec<StreamEvent> {
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    for chunk in chunks {
        parser.push_text(chunk, &mut events);
    }
    parser.finish(&mut events);
    let mut more = Vec::new();
    parser.push_text("<<<[TOOL_REQUEST]>>>tool_name:「始」late「末」", &mut more);
    parser.finish(&mut more);
    assert!(more.is_empty(), "a finished parser reported {more:?}");
    events
}

fn collect(events: &[StreamEvent]) -> (ParseOutcome, String) {
    let mut collector = StreamCollector::new();
    collector.extend(events.iter().cloned());
    let prose = collector.normal_text().to_string();
    (collector.into_outcome(), prose)
}

fn in_bounds(text: &str, span: Span) -> bool {
    span.start <= span.end && span.slice(text).is_some()
}

/// Order and prose invariants; panics with `context` on a violation.
fn check_events(text: &str, events: &[StreamEvent], context: &str) {
    // Everything reported so far lies before `cursor`.
    let mut cursor = 0;
    let mut open: Option<usize> = None;
    let mut prose_spans: Vec<Span> = Vec::new();
    let mut request_spans: Vec<Span> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let fail = |why: &str| -> ! {
            panic!(
                "event #{i} {event:?}: {why} (cursor {cursor}, open {open:?}); {context}\nevents: {events:#?}"
            )
        };
        match event {
            StreamEvent::Text { text: prose, span } => {
                if span.slice(text) != Some(prose.as_str()) {
                    fail("the span does not slice the input to the text");
                }
                if span.start < cursor {
                    fail("prose before what was already reported");
                }
                cursor = span.end;
                prose_spans.push(*span);
            }
            StreamEvent::RequestStarted { offset } => {
                if open.is_some() {
                    fail("a block started while another is open");
                }
                if *offset < cursor || !text.get(*offset..).is_some_and(|rest| rest.starts_with("<<")) {
                    fail("no marker at the offset, or before what was already reported");
                }
                open = Some(*offset);
                cursor = *offset;
            }
            StreamEvent::FieldCompleted { span, .. } => {
                if open.is_none() || !in_bounds(text, *span) || span.start < cursor {
                    fail("a field outside an open block, or out of order");
                }
                cursor = span.end;
            }
            StreamEvent::RequestCompleted(request) => {
                let span = request.span;
                if open != Some(span.start) || !in_bounds(text, span) || span.end < cursor {
                    fail("a request that does not close the open block");
                }
                open = None;
                cursor = span.end;
                request_spans.push(span);
            }
            StreamEvent::BlockDiscarded { span } => {
                if open.is_none_or(|offset| offset != span.start)
                    || !in_bounds(text, *span)
                    || span.end < cursor
                {
                    fail("a discarded block that does not close the open block");
                }
                open = None;
                cursor = span.end;
            }
            StreamEvent::Diagnostic(diagnostic) => {
                if !in_bounds(text, diagnostic.span) {
                    fail("a diagnostic span out of bounds or off char boundaries");
                }
            }
            _ => fail("an unknown event"),
        }
    }
    assert!(open.is_none(), "the block started at {open:?} never ended; {context}\nevents: {events:#?}");
    for prose in &prose_spans {
        if let Some(request) = request_spans.iter().find(|r| prose.start < r.end && r.start < prose.end) {
            panic!("prose {prose:?} overlaps request {request:?}; {context}\nevents: {events:#?}");
        }
    }
}
