//! The VCP parser's limits (`VcpLimits`): at each limit nothing changes; one past it,
//! the parse is cut as documented, with a `limit_exceeded` diagnostic, the request it
//! touches is incomplete (so it never runs), and the streaming parser, whatever the
//! chunking, gives exactly what the one-shot parser gives.

use tool_calling::protocol::DiagnosticKind;
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::RequestIdStyle;
use tool_calling::protocol::vcp::{VcpLimits, VcpOptions, VcpProtocol, ViewEvent};
use tool_calling::protocol::{StreamCollector, StreamParser};

#[path = "support/chunks.rs"]
mod chunks;
use chunks::char_chunks;

const START: &str = "<<<[TOOL_REQUEST]>>>";
const END: &str = "<<<[END_TOOL_REQUEST]>>>";

fn protocol(limits: VcpLimits) -> VcpProtocol {
    VcpProtocol::new(VcpOptions::default().request_ids(RequestIdStyle::Sequential).limits(limits))
}

fn block(tool: &str, args: &[(&str, &str)]) -> String {
    let mut text = format!("{START}\ntool_name:「始」{tool}「末」");
    for (key, value) in args {
        text.push_str(&format!(",\n{key}:「始」{value}「末」"));
    }
    text.push_str(&format!("\n{END}\n"));
    text
}

fn limit_diagnostics(outcome: &ParseOutcome) -> usize {
    outcome.diagnostics.iter().filter(|d| d.kind == DiagnosticKind::LimitExceeded).count()
}

/// The one-shot parse, after checking that the pull parser and the streaming parser (in
/// 1-, 3-, 7- and 64-byte chunks, cut at character boundaries) agree with it.
fn parse_everywhere(protocol: &VcpProtocol, text: &str) -> ParseOutcome {
    let outcome = protocol.parse(text);
    let pulled = protocol.view_events(text).filter(|e| matches!(e, ViewEvent::Request(_))).count();
    assert_eq!(pulled, outcome.requests.len(), "view_events on {text:?}");
    for size in [1, 3, 7, 64] {
        let mut parser = protocol.stream_parser();
        let mut collector = StreamCollector::new();
        for chunk in char_chunks(text, size) {
            let mut events = Vec::new();
            parser.push_text(chunk, &mut events);
            collector.extend(events);
        }
        let mut events = Vec::new();
        parser.finish(&mut events);
        collector.extend(events);
        assert_eq!(collector.into_outcome(), outcome, "{size}-byte chunks of {text:?}");
    }
    outcome
}

#[test]
fn the_defaults_are_documented_and_none_lifts_them() {
    let limits = VcpLimits::default();
    assert_eq!(
        (limits.max_reply_bytes, limits.max_requests, limits.max_fields, limits.max_value_bytes),
        (64 << 20, 10_000, 1_000, 8 << 20)
    );
    assert_eq!(VcpOptions::default().limits, limits);
    let none = VcpLimits::none();
    assert_eq!(
        (none.max_reply_bytes, none.max_requests, none.max_fields),
        (usize::MAX, usize::MAX, usize::MAX)
    );
}

#[test]
fn requests_at_the_limit_and_one_past_it() {
    let reply: String = (0..4).map(|i| block(&format!("t{i}"), &[("a", "1")])).collect();
    let at = parse_everywhere(&protocol(VcpLimits::default().max_requests(4)), &reply);
    assert_eq!((at.requests.len(), limit_diagnostics(&at)), (4, 0));

    let past = parse_everywhere(&protocol(VcpLimits::default().max_requests(3)), &reply);
    assert_eq!(past.requests.len(), 3);
    assert!(past.requests.iter().all(|r| r.complete));
    assert_eq!(limit_diagnostics(&past), 1);
    let diagnostic = past.diagnostics.iter().find(|d| d.kind == DiagnosticKind::LimitExceeded).unwrap();
    // It points at the fourth block's START marker.
    let fourth = reply.match_indices(START).nth(3).unwrap().0;
    assert_eq!(diagnostic.span.start, fourth);
    assert!(diagnostic.message.contains("more than 3 requests"), "{}", diagnostic.message);

    // No request at all, and the stream reports the unread blocks as text.
    let none = protocol(VcpLimits::default().max_requests(0));
    assert!(parse_everywhere(&none, &reply).requests.is_empty());
    let mut parser = none.stream_parser();
    let mut collector = StreamCollector::new();
    let mut events = Vec::new();
    parser.push_text(&reply, &mut events);
    parser.finish(&mut events);
    collector.extend(events);
    assert_eq!(collector.normal_text(), reply);
}

#[test]
fn fields_at_the_limit_and_one_past_it() {
    // tool_name and three arguments: four fields.
    let reply = block("t", &[("a", "1"), ("b", "2"), ("c", "3")]);
    let at = parse_everywhere(&protocol(VcpLimits::default().max_fields(4)), &reply);
    assert!(at.requests[0].complete && at.requests[0].args.len() == 3);
    assert_eq!(limit_diagnostics(&at), 0);

    let past = parse_everywhere(&protocol(VcpLimits::default().max_fields(3)), &reply);
    let request = &past.requests[0];
    assert!(!request.complete, "a request cut by a limit must not run");
    assert_eq!(request.args.keys().collect::<Vec<_>>(), ["a", "b"], "the last field is dropped");
    assert_eq!(request.problems, ["the request has more than 3 fields: split it into smaller requests"]);
    assert_eq!(limit_diagnostics(&past), 1);

    // A block of 100,000 fields keeps 1,000 (the default), so memory stays bounded.
    let many: Vec<(String, String)> = (0..100_000).map(|i| (format!("k{i}"), "v".to_string())).collect();
    let pairs: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let huge = protocol(VcpLimits::default()).parse(&block("t", &pairs));
    assert_eq!(huge.requests[0].args.len(), 999);
    assert!(!huge.requests[0].complete);
}

#[test]
fn value_length_at_the_limit_and_one_past_it() {
    let value = "x".repeat(100);
    let reply = block("t", &[("a", &value), ("b", "short")]);
    let at = parse_everywhere(&protocol(VcpLimits::default().max_value_bytes(100)), &reply);
    assert!(at.requests[0].complete);
    assert_eq!(at.requests[0].args["a"], value.as_str());

    let past = parse_everywhere(&protocol(VcpLimits::default().max_value_bytes(99)), &reply);
    let request = &past.requests[0];
    assert!(!request.complete);
    assert_eq!(request.args["a"], "", "the long value is left out");
    assert_eq!(request.args["b"], "short");
    assert_eq!(request.problems, ["the value of `a` is 100 bytes, more than the limit of 99"]);
    assert_eq!(limit_diagnostics(&past), 1);

    // The streamed field event carries the emptied value too.
    let mut parser = protocol(VcpLimits::default().max_value_bytes(99)).stream_parser();
    let mut events = Vec::new();
    parser.push_text(&reply, &mut events);
    parser.finish(&mut events);
    let fields: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            tool_calling::protocol::StreamEvent::FieldCompleted { key, value, .. } => {
                Some((key.clone(), value.clone()))
            }
            _ => None,
        })
        .collect();
    assert!(fields.contains(&("a".to_string(), String::new())), "{fields:?}");
}

#[test]
fn reply_bytes_at_the_limit_and_one_past_it() {
    let reply = format!("{}{}", block("one", &[]), block("two", &[("a", "値")]));
    let at = parse_everywhere(&protocol(VcpLimits::default().max_reply_bytes(reply.len())), &reply);
    assert_eq!((at.requests.len(), limit_diagnostics(&at)), (2, 0));

    let past = parse_everywhere(&protocol(VcpLimits::default().max_reply_bytes(reply.len() - 1)), &reply);
    assert_eq!(limit_diagnostics(&past), 1);
    let diagnostic = past.diagnostics.iter().find(|d| d.kind == DiagnosticKind::LimitExceeded).unwrap();
    assert_eq!((diagnostic.span.start, diagnostic.span.end), (reply.len() - 1, reply.len()));
    // The second block lost its END marker's last byte: it is read as unterminated.
    assert_eq!(past.requests.len(), 2);

    // Every cut, including inside the multi-byte `値`, reads the same prefix one-shot and
    // streamed, and never more than the limit.
    for max in 0..reply.len() {
        let outcome = parse_everywhere(&protocol(VcpLimits::default().max_reply_bytes(max)), &reply);
        assert_eq!(limit_diagnostics(&outcome), 1, "limit {max}");
        assert!(outcome.requests.iter().all(|r| r.span.end <= max), "limit {max}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Random replies under random small limits: the streaming parser equals the
    /// one-shot parser, and no result ever exceeds a limit.
    #[test]
    fn limits_hold_streamed_and_one_shot(
        blocks in proptest::collection::vec((0usize..6, 0usize..40), 0..6),
        max_requests in 0usize..6,
        max_fields in 0usize..6,
        max_value in 0usize..30,
        max_reply in 0usize..600,
    ) {
        let mut reply = String::from("Hello.\n");
        for (i, &(fields, len)) in blocks.iter().enumerate() {
            let values: Vec<(String, String)> =
                (0..fields).map(|f| (format!("k{f}"), "é".repeat(len / 2 + f))).collect();
            let pairs: Vec<(&str, &str)> = values.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            reply.push_str(&block(&format!("t{i}"), &pairs));
        }
        let limits = VcpLimits::default()
            .max_requests(max_requests)
            .max_fields(max_fields)
            .max_value_bytes(max_value)
            .max_reply_bytes(max_reply);
        let outcome = parse_everywhere(&protocol(limits), &reply);
        proptest::prop_assert!(outcome.requests.len() <= max_requests);
        for request in &outcome.requests {
            proptest::prop_assert!(request.args.len() < max_fields.max(1));
            proptest::prop_assert!(request.span.end <= max_reply);
            for value in request.args.values() {
                proptest::prop_assert!(value.as_str().is_some_and(|v| v.len() <= max_value));
            }
        }
    }
}
