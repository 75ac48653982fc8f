//! Fuzz target: the VCP parser on arbitrary text, under every option combination.
//!
//! Input layout: the first byte's low four bits pick the options (bit 0 `fuzzy_markers`,
//! bit 1 `skip_fenced`, bit 2 `keep_reasoning`, bit 3 small limits); the rest is cut to its longest valid
//! UTF-8 prefix and parsed. Besides "never panics", the target checks the invariants the
//! public types promise (see `Span`, `ToolRequest`, `ParseOutcome`) and panics when
//! one is violated, which is how libFuzzer reports a failure.
//!
//! Run from the repository root:
//! `cd fuzz && cargo +nightly fuzz run vcp_parse corpus/vcp_parse seeds/vcp_parse -- -dict=vcp_parse.dict`

#![no_main]

mod common;

use std::borrow::Cow;

use libfuzzer_sys::fuzz_target;
use tool_calling::Span;
use tool_calling::protocol::Diagnostic;
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::vcp::{VcpOptions, VcpProtocol, ViewEvent};

fuzz_target!(|data: &[u8]| {
    let (flags, rest) = match data.split_first() {
        Some((&flags, rest)) => (flags, rest),
        None => (0, &[][..]),
    };
    let text = common::utf8_prefix(rest);

    let options = common::options(flags);
    let protocol = VcpProtocol::new(options);

    let outcome = protocol.parse(text);
    check_invariants(text, &outcome, &options);

    check_view(text, &protocol, &options);

    // Deterministic with sequential ids: a second parse gives exactly the same outcome.
    let again = protocol.parse(text);
    assert!(
        outcome == again,
        "parse is not deterministic with RequestIdStyle::Sequential ({options:?})\n\
         input: {text:?}\nfirst:  {outcome:#?}\nsecond: {again:#?}"
    );
});

/// The borrowed view: every borrowed piece is a slice of the input inside its field's
/// span (or the request's block), and each field's span starts with its key.
fn check_view(text: &str, protocol: &VcpProtocol, options: &VcpOptions) {
    let inside = |piece: &str, span: Span| {
        let (start, end) = (text.as_ptr() as usize + span.start, text.as_ptr() as usize + span.end);
        let at = piece.as_ptr() as usize;
        at >= start && at + piece.len() <= end
    };
    let view = protocol.parse_view(text);
    // The pull parser finds the same requests, and the same diagnostics once sorted.
    let mut pulled_requests = Vec::new();
    let mut pulled_diagnostics = Vec::new();
    for event in protocol.view_events(text) {
        match event {
            ViewEvent::Request(request) => pulled_requests.push(request),
            ViewEvent::Diagnostic(diagnostic) => pulled_diagnostics.push(diagnostic),
            _ => unreachable!("a new kind of view event"),
        }
    }
    let in_order = |diagnostics: &[Diagnostic]| {
        let mut keyed: Vec<_> = diagnostics
            .iter()
            .map(|d| (d.span.start, d.span.end, d.kind.as_str(), d.message.clone()))
            .collect();
        keyed.sort();
        keyed
    };
    assert!(
        pulled_requests == view.requests && in_order(&pulled_diagnostics) == in_order(&view.diagnostics),
        "view_events differs from parse_view ({options:?})\ninput: {text:?}"
    );
    for request in &view.requests {
        if let Cow::Borrowed(name) = &request.tool_name {
            assert!(inside(name, request.span), "tool name outside its block ({options:?})\ninput: {text:?}");
        }
        for field in &request.args {
            check_span(text, field.span, "field", options);
            assert!(
                request.span.start <= field.span.start && field.span.end <= request.span.end,
                "field {:?} outside its block ({options:?})\ninput: {text:?}",
                field.key
            );
            if let Cow::Borrowed(key) = &field.key {
                assert!(
                    inside(key, field.span) && field.span.slice(text).is_some_and(|f| f.starts_with(key))
                );
            }
            if let Cow::Borrowed(value) = &field.value {
                assert!(inside(value, field.span), "value outside its field ({options:?})\ninput: {text:?}");
            }
        }
    }
}

fn check_span(text: &str, span: Span, what: &str, options: &VcpOptions) {
    assert!(
        span.start <= span.end && span.end <= text.len(),
        "{what}: span {span:?} out of bounds (input length {}, {options:?})\ninput: {text:?}",
        text.len()
    );
    assert!(
        text.is_char_boundary(span.start) && text.is_char_boundary(span.end),
        "{what}: span {span:?} not on char boundaries ({options:?})\ninput: {text:?}"
    );
}

fn check_invariants(text: &str, outcome: &ParseOutcome, options: &VcpOptions) {
    let mut previous_end: Option<usize> = None;
    for (i, request) in outcome.requests.iter().enumerate() {
        let what = format!("request #{i} ({:?})", request.tool_name);
        check_span(text, request.span, &what, options);

        // A request's block holds at least its START marker.
        assert!(
            !request.span.is_empty(),
            "{what}: empty span {:?} ({options:?})\ninput: {text:?}",
            request.span
        );

        // Requests come in order of appearance and never share bytes.
        if let Some(end) = previous_end {
            assert!(
                end <= request.span.start,
                "{what}: span {:?} overlaps or precedes the previous request (which ends at {end}) \
                 ({options:?})\ninput: {text:?}\noutcome: {outcome:#?}",
                request.span
            );
        }
        previous_end = Some(request.span.end);

        if request.complete {
            assert!(
                !request.tool_name.is_empty(),
                "{what}: complete but tool_name is empty ({options:?})\ninput: {text:?}\n{request:#?}"
            );
            assert!(
                request.problems.is_empty(),
                "{what}: complete but has problems ({options:?})\ninput: {text:?}\n{request:#?}"
            );
        } else {
            assert!(
                !request.problems.is_empty(),
                "{what}: incomplete but no problems given ({options:?})\ninput: {text:?}\n{request:#?}"
            );
        }

        // An empty `request_id` counts as absent, so the library assigns one.
        assert!(
            !request.request_id.is_empty(),
            "{what}: empty request_id ({options:?})\ninput: {text:?}\n{request:#?}"
        );
    }

    let mut previous_start = 0;
    for (i, diagnostic) in outcome.diagnostics.iter().enumerate() {
        let what = format!("diagnostic #{i} ({})", diagnostic.kind);
        check_span(text, diagnostic.span, &what, options);
        assert!(
            previous_start <= diagnostic.span.start,
            "{what}: diagnostics not sorted by span.start ({} after {previous_start}) \
             ({options:?})\ninput: {text:?}\ndiagnostics: {:#?}",
            diagnostic.span.start,
            outcome.diagnostics
        );
        previous_start = diagnostic.span.start;
    }
}
