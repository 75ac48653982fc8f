//! Parser behaviour beyond the corpus: byte offsets, diagnostics, ids, and invariants
//! over generated VCP-shaped input.

use proptest::prelude::*;
use tool_calling::RequestIdSource;
use tool_calling::protocol::DiagnosticKind;
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::vcp::{RequestIdStyle, VcpOptions, VcpProtocol};

fn parse(text: &str) -> ParseOutcome {
    VcpProtocol::new(VcpOptions::default().request_ids(RequestIdStyle::Sequential)).parse(text)
}

fn kinds(outcome: &ParseOutcome) -> Vec<DiagnosticKind> {
    outcome.diagnostics.iter().map(|d| d.kind).collect()
}

#[test]
fn spans_are_offsets_into_the_input_even_after_reasoning_is_cut() {
    let block = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」T「末」\n<<<[END_TOOL_REQUEST]>>>";
    let text = format!("<think>a 「末」 b</think>Intro ✓ {block} outro");
    let outcome = parse(&text);
    let request = &outcome.requests[0];
    assert_eq!(request.raw_block(&text), Some(block));
    assert_eq!(request.span.start, text.find("<<<[TOOL").unwrap());
}

#[test]
fn block_span_ends_before_the_next_start_when_end_is_forgotten() {
    let first = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」A「末」\n\n";
    let text = format!("{first}<<<[TOOL_REQUEST]>>>\ntool_name:「始」B「末」");
    let outcome = parse(&text);
    assert_eq!(outcome.requests[0].raw_block(&text), Some(first));
    assert_eq!(outcome.requests[1].span.end, text.len());
    assert_eq!(kinds(&outcome), vec![DiagnosticKind::MissingEndMarker, DiagnosticKind::MissingEndMarker]);
}

#[test]
fn diagnostics_say_what_and_where() {
    let text = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」T「末」, // a note\na:「始」1「末」,\na:「始」2「末」,\nb:「始」open";
    let outcome = parse(text);
    let stray = outcome.diagnostics.iter().find(|d| d.kind == DiagnosticKind::StrayText).unwrap();
    assert_eq!(stray.span.slice(text), Some("// a note"));
    assert!(stray.message.contains("// a note"), "{}", stray.message);
    let dup = outcome.diagnostics.iter().find(|d| d.kind == DiagnosticKind::DuplicateKey).unwrap();
    assert_eq!(dup.span.slice(text), Some("a:「始」2「末」"));
    assert!(dup.message.contains("`a`"));
    let unclosed = outcome.diagnostics.iter().find(|d| d.kind == DiagnosticKind::UnclosedValue).unwrap();
    assert_eq!(unclosed.span.slice(text), Some("b:「始」open"));
    let request = &outcome.requests[0];
    assert!(!request.complete);
    assert_eq!(request.problems, vec!["the value of `b` is not closed: end it with 「末」".to_string()]);
    assert!(outcome.diagnostics.windows(2).all(|w| w[0].span.start <= w[1].span.start));
}

#[test]
fn empty_example_and_fenced_blocks_are_reported_not_returned() {
    let empty = parse("<<<[TOOL_REQUEST]>>>\n  \n<<<[END_TOOL_REQUEST]>>>");
    assert!(empty.requests.is_empty());
    assert_eq!(kinds(&empty), vec![DiagnosticKind::EmptyBlock]);

    let example = parse("<<<[TOOL_REQUEST]>>>tool_name:「始exp」X「末exp」<<<[END_TOOL_REQUEST]>>>");
    assert!(example.requests.is_empty());
    assert_eq!(kinds(&example), vec![DiagnosticKind::ExampleBlock]);

    let fenced_text = "```\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」X「末」\n<<<[END_TOOL_REQUEST]>>>\n```";
    let fenced = VcpProtocol::new(VcpOptions::default().skip_fenced(true)).parse(fenced_text);
    assert!(fenced.requests.is_empty());
    assert_eq!(kinds(&fenced), vec![DiagnosticKind::FencedMarker]);
    assert_eq!(fenced.diagnostics[0].span.slice(fenced_text), Some("<<<[TOOL_REQUEST]>>>"));

    let unclosed = parse("ok <think>maybe <<<[TOOL_REQUEST]>>>tool_name:「始」X「末」");
    assert!(unclosed.requests.is_empty());
    assert_eq!(kinds(&unclosed), vec![DiagnosticKind::UnclosedReasoning]);
    assert_eq!(unclosed.diagnostics[0].span.start, 3);
}

#[test]
fn missing_tool_name_is_incomplete_and_first_among_problems() {
    let outcome = parse("<<<[TOOL_REQUEST]>>>\ncommand:「始」c「末」\n<<<[END_TOOL_REQUEST]>>>");
    let request = &outcome.requests[0];
    assert_eq!(request.tool_name, "");
    assert!(!request.complete);
    assert!(request.problems[0].contains("tool_name"));
    assert!(kinds(&outcome).contains(&DiagnosticKind::MissingToolName));
}

#[test]
fn ids_model_sequential_and_random() {
    let text = "<<<[TOOL_REQUEST]>>>tool_name:「始」A「末」<<<[END_TOOL_REQUEST]>>>\
                <<<[TOOL_REQUEST]>>>request_id:「始」mine「末」tool_name:「始」B「末」<<<[END_TOOL_REQUEST]>>>\
                <<<[TOOL_REQUEST]>>>tool_name:「始」C「末」<<<[END_TOOL_REQUEST]>>>";
    let seq = parse(text);
    let ids: Vec<_> = seq.requests.iter().map(|r| (r.request_id.as_str(), r.id_source)).collect();
    assert_eq!(
        ids,
        vec![
            ("req_1", RequestIdSource::Assigned),
            ("mine", RequestIdSource::Model),
            ("req_3", RequestIdSource::Assigned)
        ]
    );
    let a = VcpProtocol::default().parse(text);
    let b = VcpProtocol::default().parse(text);
    assert_ne!(a.requests[0].request_id, b.requests[0].request_id, "random ids differ between parses");
    assert_ne!(a.requests[0].request_id, a.requests[2].request_id);
    assert!(a.requests[0].request_id.starts_with("call_"));
}

#[test]
fn protocol_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<VcpProtocol>();
    assert_send_sync::<std::sync::Arc<dyn ToolCallingProtocol>>();
    let vcp: std::sync::Arc<dyn ToolCallingProtocol> = std::sync::Arc::new(VcpProtocol::default());
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let vcp = vcp.clone();
            std::thread::spawn(move || {
                let text = format!("<<<[TOOL_REQUEST]>>>tool_name:「始」t{i}「末」<<<[END_TOOL_REQUEST]>>>");
                vcp.parse_turn(&tool_calling::model::AssistantTurn::from_text(text.as_str())).requests[0]
                    .tool_name
                    .clone()
            })
        })
        .collect();
    let names: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(names, ["t0", "t1", "t2", "t3"]);
}

/// VCP-shaped text: markers, value markers, tags, fences and noise in any order.
fn vcp_soup() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "<<<[TOOL_REQUEST]>>>",
        "<<<[END_TOOL_REQUEST]>>>",
        "<<[tool_request]>>",
        "<<<<[END_TOOL_REQUEST]>>>>",
        "tool_name",
        "request_id",
        "TOOL_NAME",
        "key",
        "参数",
        ":",
        "：",
        ",",
        "「始」",
        "「末」",
        "{始}",
        "{末}",
        "「始ESCAPE」",
        "「末ESCAPE」",
        "{始escape}",
        "「始exp」",
        "「末exp」",
        "<think>",
        "</think>",
        "<think/>",
        "<thinking a=1>",
        "```",
        "```rust",
        "\n",
        "\r\n",
        " ",
        "\t",
        "`",
        "<",
        ">",
        "[",
        "]",
        "末",
        "始",
        "x",
        "\u{3000}",
        "é",
    ]);
    prop::collection::vec(prop_oneof![4 => pieces.prop_map(str::to_string), 1 => any::<String>()], 0..60)
        .prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The fuzz target's invariants, on every option combination.
    #[test]
    fn invariants_hold(text in vcp_soup(), fuzzy in any::<bool>(), fenced in any::<bool>(), keep in any::<bool>()) {
        let options = VcpOptions::default()
            .fuzzy_markers(fuzzy)
            .skip_fenced(fenced)
            .keep_reasoning(keep)
            .request_ids(RequestIdStyle::Sequential);
        let outcome = VcpProtocol::new(options).parse(&text);
        let mut last_end = 0;
        for r in &outcome.requests {
            prop_assert!(r.span.start >= last_end && r.span.start <= r.span.end && r.span.end <= text.len());
            prop_assert!(text.is_char_boundary(r.span.start) && text.is_char_boundary(r.span.end));
            prop_assert_eq!(r.complete, r.problems.is_empty());
            prop_assert!(!r.complete || !r.tool_name.is_empty());
            last_end = r.span.end;
        }
        for d in &outcome.diagnostics {
            prop_assert!(d.span.start <= d.span.end && d.span.end <= text.len(), "{:?}", d);
            prop_assert!(text.is_char_boundary(d.span.start) && text.is_char_boundary(d.span.end));
        }
        prop_assert!(outcome.diagnostics.windows(2).all(|w| w[0].span.start <= w[1].span.start));
        prop_assert_eq!(&outcome, &VcpProtocol::new(options).parse(&text));
    }
}

#[test]
fn hidden_spans_mark_what_the_parser_does_not_read() {
    use tool_calling::protocol::vcp::HiddenKind;
    let block = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」T「末」\n<<<[END_TOOL_REQUEST]>>>";
    let text = format!("<think>plan 「末」</think>Intro\n```\n{block}\n```\n{block}\n<thinking>cut off");
    let spans = |options: VcpOptions| -> Vec<(&str, HiddenKind)> {
        VcpProtocol::new(options)
            .hidden_spans(&text)
            .into_iter()
            .map(|(span, kind)| (span.slice(&text).unwrap(), kind))
            .collect()
    };
    let fenced = format!("```\n{block}\n```");
    assert_eq!(
        spans(VcpOptions::default().skip_fenced(true)),
        vec![
            ("<think>plan 「末」</think>", HiddenKind::Reasoning),
            (fenced.as_str(), HiddenKind::Fenced),
            ("<thinking>cut off", HiddenKind::Reasoning),
        ],
        "an unclosed reasoning block hides the rest of the reply"
    );
    assert_eq!(
        spans(VcpOptions::default()).iter().map(|s| s.1).collect::<Vec<_>>(),
        [HiddenKind::Reasoning, HiddenKind::Reasoning],
        "fences are read unless skip_fenced"
    );
    assert_eq!(spans(VcpOptions::default().keep_reasoning(true)), vec![]);
    // What is hidden is what the parser skips: only the bare block and the fenced one
    // (without skip_fenced) are requests.
    assert_eq!(parse(&text).requests.len(), 2);
    assert_eq!(VcpProtocol::default().hidden_spans("plain"), vec![]);
}

/// A key left without a value is reported as such, after `:` or the full-width `：`;
/// other stray text is reported as text that is not a field.
#[test]
fn stray_text_says_whether_it_is_a_key_without_a_value() {
    let messages = |text: &str| -> Vec<String> {
        parse(text)
            .diagnostics
            .into_iter()
            .filter(|d| d.kind == DiagnosticKind::StrayText)
            .map(|d| d.message)
            .collect()
    };
    for separator in [":", "："] {
        let text = format!(
            "<<<[TOOL_REQUEST]>>>\ntool_name:「始」t「末」,\nmode{separator}\n<<<[END_TOOL_REQUEST]>>>"
        );
        let found = messages(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with(&format!("skipped `mode{separator}`: a key with no value")),
            "{found:?}"
        );
    }
    let found =
        messages("<<<[TOOL_REQUEST]>>>\ntool_name:「始」t「末」,\n// a comment\n<<<[END_TOOL_REQUEST]>>>");
    assert_eq!(found, ["skipped text between fields that is not a field: `// a comment`"]);
}
