//! Fuzz target: the open-model text formats and `auto`, for arbitrary text cut into
//! arbitrary chunks.
//!
//! Input layout: the first byte picks the protocol (its value modulo one more than the
//! number of formats: the formats in `TextFormat::ALL` order, then `auto`); the second byte's low six bits give
//! K; the next K bytes are the chunk sizes (cycling; 0 counts as 1); the rest, cut to its
//! longest valid UTF-8 prefix, is the reply. K = 0 pushes the reply as one chunk.
//!
//! Checks, besides "never panics":
//! - the streamed reply (requests, diagnostics, normal text) equals the one-shot parse,
//!   chunked and in one piece;
//! - spans are in bounds, on char boundaries, and in order; an incomplete request says
//!   why; normal text never holds more bytes than the reply.
//!
//! Run from the repository root:
//! `cd fuzz && cargo +nightly fuzz run textfmt_stream corpus/textfmt_stream seeds/textfmt_stream -- -dict=textfmt_stream.dict`

#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_calling::protocol::textfmt::{AutoProtocol, TextFormat, TextFormatOptions, TextFormatProtocol};
use tool_calling::protocol::vcp::{VcpOptions, VcpProtocol};
use tool_calling::protocol::{ParseOutcome, RequestIdStyle, StreamCollector, StreamParser};

fuzz_target!(|data: &[u8]| {
    let pick = data.first().copied().unwrap_or(0) as usize % (TextFormat::ALL.len() + 1);
    let k = usize::from(data.get(1).copied().unwrap_or(0) & 0x3f);
    let rest = data.get(2..).unwrap_or_default();
    let k = k.min(rest.len());
    let (sizes, body) = rest.split_at(k);
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&body[..e.valid_up_to()]).unwrap_or_default(),
    };
    let options = TextFormatOptions::default().request_ids(RequestIdStyle::Sequential);
    let format = TextFormat::ALL.get(pick).copied();
    let one_shot = match format {
        Some(format) => TextFormatProtocol::new(format).with_options(options).parse(text),
        None => auto(options).parse(text),
    };
    let stream = |chunks: &[&str]| -> ParseOutcome {
        let mut parser: Box<dyn StreamParser> = match format {
            Some(format) => Box::new(TextFormatProtocol::new(format).with_options(options).stream_parser()),
            None => Box::new(auto(options).stream_parser()),
        };
        let mut events = Vec::new();
        for chunk in chunks {
            parser.push_text(chunk, &mut events);
        }
        parser.finish(&mut events);
        let mut collector = StreamCollector::new();
        collector.extend(events);
        collector.into_outcome()
    };
    let chunks = chunks(text, sizes);
    let context =
        format!("protocol {}\ntext: {text:?}\nchunks: {chunks:?}", format.map_or("auto", TextFormat::id));
    let whole = stream(&[text]);
    assert!(
        whole == one_shot,
        "one piece differs from one-shot; {context}\none-shot: {one_shot:#?}\nstream: {whole:#?}"
    );
    let chunked = stream(&chunks);
    assert!(
        chunked == one_shot,
        "chunked differs from one-shot; {context}\none-shot: {one_shot:#?}\nstream: {chunked:#?}"
    );

    let mut last_end = 0;
    for request in &one_shot.requests {
        let span = request.span;
        assert!(span.slice(text).is_some(), "span {span:?} out of bounds or off a char boundary; {context}");
        assert!(span.start >= last_end || span.start == span.end, "requests out of order; {context}");
        last_end = last_end.max(span.end);
        assert!(
            request.complete || !request.problems.is_empty(),
            "an incomplete request must say why; {context}"
        );
    }
    for diagnostic in &one_shot.diagnostics {
        assert!(diagnostic.span.slice(text).is_some(), "diagnostic span out of bounds; {context}");
    }
    assert!(one_shot.normal_text.len() <= text.len(), "normal text longer than the reply; {context}");
});

/// `auto`, naming requests sequentially in every protocol it reads.
fn auto(options: TextFormatOptions) -> AutoProtocol {
    let vcp = VcpProtocol::new(VcpOptions::default().request_ids(RequestIdStyle::Sequential));
    AutoProtocol::new().with_options(options).with_vcp(vcp)
}

/// `text` cut into chunks of the sizes in `seed`, in turn (moved forward to char
/// boundaries; a 0 counts as 1).
fn chunks<'a>(text: &'a str, seed: &[u8]) -> Vec<&'a str> {
    if seed.is_empty() {
        return vec![text];
    }
    let mut out = Vec::new();
    let mut rest = text;
    for &size in seed.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let mut cut = usize::from(size).max(1).min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (chunk, tail) = rest.split_at(cut);
        out.push(chunk);
        rest = tail;
    }
    out
}
