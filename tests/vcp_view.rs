//! The borrowed parse (`VcpProtocol::parse_view`): what it borrows, what it must copy,
//! and last-wins keys in one pass.

use std::borrow::Cow;

use tool_calling::RequestIdSource;
use tool_calling::protocol::DiagnosticKind;
use tool_calling::protocol::vcp::{FieldView, RequestView, VcpOptions, VcpProtocol};

#[path = "../benches/support/inputs.rs"]
mod inputs;

const START: &str = "<<<[TOOL_REQUEST]>>>";
const END: &str = "<<<[END_TOOL_REQUEST]>>>";

/// Whether `text` is a slice of `input` (not a copy).
fn points_into(text: &str, input: &str) -> bool {
    let (from, to) = (input.as_ptr() as usize, input.as_ptr() as usize + input.len());
    let at = text.as_ptr() as usize;
    at >= from && at + text.len() <= to
}

#[allow(clippy::ptr_arg)] // the point is to look at the Cow
fn borrowed<'a>(cow: &Cow<'a, str>, input: &'a str) -> bool {
    matches!(cow, Cow::Borrowed(text) if points_into(text, input))
}

#[test]
fn generated_replies_are_read_without_copying_any_text() {
    for text in [inputs::requests_only(256 * 1024), inputs::prose_with_requests(256 * 1024)] {
        let view = VcpProtocol::default().parse_view(&text);
        assert_eq!(view.requests.len(), inputs::count_blocks(&text));
        for request in &view.requests {
            assert!(borrowed(&request.tool_name, &text), "{:?}", request.tool_name);
            assert!(request.args.len() >= 4);
            for FieldView { key, value, span, .. } in &request.args {
                assert!(borrowed(key, &text) && borrowed(value, &text), "{key}: {value}");
                let field = span.slice(&text).unwrap();
                assert!(field.starts_with(key.as_ref()) && field.ends_with("「末」"), "{field}");
                assert!(field.contains(value.as_ref()));
            }
        }
    }
}

#[test]
fn values_are_copied_only_where_the_parser_changes_them() {
    let text = format!(
        "<think>plan</think>{START}\ntool_name:「始」 t 「末」,\ncrlf:「始」a\r\nb「末」,\n\
         esc:「始ESCAPE」x <<<[END_TOOL_REQUEST_ESCAPE]>>> y「末ESCAPE」,\nplain_esc:「始ESCAPE」z「末ESCAPE」,\n\
         cut:「始」be<think>hidden</think>fore「末」,\nrequest_id:「始」r-1「末」\n{END}"
    );
    let view = VcpProtocol::default().parse_view(&text);
    let request: &RequestView<'_> = &view.requests[0];
    assert_eq!(request.tool_name, "t");
    assert!(borrowed(&request.tool_name, &text), "trimmed in place");
    assert_eq!((request.request_id.as_ref(), request.id_source), ("r-1", RequestIdSource::Model));
    assert!(borrowed(&request.request_id, &text));
    let value = |key: &str| request.args.iter().find(|f| f.key == key).unwrap().value.clone();
    assert_eq!(value("crlf"), "a\nb");
    assert!(matches!(value("crlf"), Cow::Owned(_)), "CRLF folded");
    assert_eq!(value("esc"), format!("x {END} y"));
    assert!(matches!(value("esc"), Cow::Owned(_)), "escaped marker restored");
    assert!(borrowed(&value("plain_esc"), &text), "an escaped value with nothing to restore");
    assert_eq!(value("cut"), "before");
    assert!(matches!(value("cut"), Cow::Owned(_)), "reasoning cut out of the value");
    assert_eq!(request.arg("crlf"), Some("a\nb"));
}

#[test]
fn assigned_ids_are_owned_and_numbered_by_position() {
    let block = |extra: &str| format!("{START}\ntool_name:「始」t「末」{extra}\n{END}");
    let text = [block(""), block(",\nrequest_id:「始」mine「末」"), block("")].concat();
    let protocol = VcpProtocol::new(
        VcpOptions::default().request_ids(tool_calling::protocol::RequestIdStyle::Sequential),
    );
    let ids: Vec<String> =
        protocol.parse_view(&text).requests.iter().map(|r| r.request_id.to_string()).collect();
    assert_eq!(ids, ["req_1", "mine", "req_3"]);
    let random = VcpProtocol::default().parse_view(&text);
    let (first, third) = (&random.requests[0].request_id, &random.requests[2].request_id);
    assert!(first.starts_with("call_") && first.ends_with("_1") && third.ends_with("_3"), "{first} {third}");
    assert_eq!(first.strip_suffix("_1"), third.strip_suffix("_3"), "one random draw per parse");
}

/// A block writing 100 keys three times: each keeps its last value at the place of its
/// last occurrence, repeats are reported (the first 16 one by one), and the owned parse
/// agrees.
#[test]
fn repeated_keys_keep_the_last_value_at_its_place() {
    let mut text = format!("{START}\ntool_name:「始」t「末」");
    for round in 0..3 {
        for key in 0..100 {
            // Round 2 writes the keys in reverse, so the last occurrences are reversed.
            let key = if round == 2 { 99 - key } else { key };
            text.push_str(&format!(",\nk{key}:「始」{round}-{key}「末」"));
        }
    }
    text.push_str(&format!("\n{END}"));
    let view = VcpProtocol::default().parse_view(&text);
    let request = &view.requests[0];
    let keys: Vec<&str> = request.args.iter().map(|f| f.key.as_ref()).collect();
    let expected: Vec<String> = (0..100).rev().map(|k| format!("k{k}")).collect();
    assert_eq!(keys, expected);
    assert!(request.args.iter().all(|f| f.value.starts_with("2-")));
    // 200 repeats: the first 16 one by one, the other 184 in one diagnostic over the block.
    let repeats: Vec<_> =
        view.diagnostics.iter().filter(|d| d.kind == DiagnosticKind::DuplicateKey).collect();
    assert_eq!(repeats.len(), 17);
    let summary = repeats.iter().find(|d| d.span == request.span).expect("one diagnostic for the rest");
    assert!(summary.message.starts_with("184 more repeated keys"), "{}", summary.message);
    assert_eq!(repeats.iter().filter(|d| d.message.starts_with("key `k")).count(), 16);
    let owned = VcpProtocol::default().parse(&text);
    let owned_keys: Vec<&String> = owned.requests[0].args.keys().collect();
    assert_eq!(owned_keys, expected.iter().collect::<Vec<_>>());
}

/// The special keys keep their rules under repetition: the last `tool_name` wins, an
/// empty `request_id` neither sets nor erases one, the last `archery` decides.
#[test]
fn special_keys_repeated() {
    let text = format!(
        "{START}\ntool_name:「始」a「末」,\nTOOL_NAME:「始」b「末」,\nrequest_id:「始」x「末」,\nrequest_id:「始」「末」,\n\
         archery:「始」true「末」,\narchery:「始」false「末」,\nk:「始」1「末」\n{END}"
    );
    let view = VcpProtocol::default().parse_view(&text);
    let request = &view.requests[0];
    assert_eq!((request.tool_name.as_ref(), request.request_id.as_ref()), ("b", "x"));
    assert!(!request.fire_and_forget);
    assert_eq!(request.args.iter().map(|f| f.key.as_ref()).collect::<Vec<_>>(), ["archery", "k"]);
    assert_eq!(request.arg("archery"), Some("false"));
    let repeats = view.diagnostics.iter().filter(|d| d.kind == DiagnosticKind::DuplicateKey).count();
    assert_eq!(repeats, 2, "tool_name and archery; the empty id is not a repeat");
}

/// `archery` decides fire-and-forget wherever it stands among the fields, and only it.
#[test]
fn archery_anywhere_in_the_block() {
    for fields in
        ["archery:「始」true「末」,\nk:「始」1「末」", "k:「始」true「末」,\narchery:「始」no_reply「末」"]
    {
        let text = format!("{START}\ntool_name:「始」t「末」,\n{fields}\n{END}");
        assert!(VcpProtocol::default().parse_view(&text).requests[0].fire_and_forget, "{fields}");
    }
    let text = format!("{START}\ntool_name:「始」t「末」,\nk:「始」true「末」\n{END}");
    assert!(!VcpProtocol::default().parse_view(&text).requests[0].fire_and_forget, "a `true` elsewhere");
}

/// Exactly 16 repeats are all reported one by one, with no summary; the 17th brings one.
#[test]
fn sixteen_repeats_are_reported_one_by_one() {
    for (repeats, expected) in [(16, 16), (17, 17)] {
        let mut text = format!("{START}\ntool_name:「始」t「末」,\nk:「始」0「末」");
        for i in 1..=repeats {
            text.push_str(&format!(",\nk:「始」{i}「末」"));
        }
        text.push_str(&format!("\n{END}"));
        let view = VcpProtocol::default().parse_view(&text);
        let found: Vec<_> =
            view.diagnostics.iter().filter(|d| d.kind == DiagnosticKind::DuplicateKey).collect();
        assert_eq!(found.len(), expected, "{repeats} repeats");
        let summaries = found.iter().filter(|d| d.message.contains("more repeated keys")).count();
        assert_eq!(summaries, usize::from(repeats > 16), "{repeats} repeats");
        assert_eq!(view.requests[0].arg("k"), Some(repeats.to_string().as_str()));
    }
}

/// Found by the `vcp_parse` fuzz target: a value left open right before hidden reasoning
/// (`<think/>`, then the next request) is empty, and its borrowed slice must lie inside
/// its field's span, not after the hidden text.
#[test]
fn an_empty_value_cut_at_hidden_text_is_borrowed_inside_its_field() {
    let text =
        "<<<[TOOL_REQUEST]>>>\r\ntoo>>>\r\nl4\r\n「末ESCAPE」,\r\nnote:「始」<think/><<<[TOOL_REQUEST]>>>";
    let view = VcpProtocol::default().parse_view(text);
    let mut checked = 0;
    for request in &view.requests {
        for field in &request.args {
            let (start, end) =
                (text.as_ptr() as usize + field.span.start, text.as_ptr() as usize + field.span.end);
            let at = field.value.as_ptr() as usize;
            assert!(
                at >= start && at + field.value.len() <= end,
                "{:?} ({:?}) lies outside its field {:?}",
                field.value,
                field.key,
                field.span
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "{view:#?}");
}

proptest::proptest! {
    /// Last-wins on any sequence of keys, on either side of the 16 arguments past which
    /// repeats are found through a map: the arguments equal a naive model's (move each
    /// repeated key to its latest place), in the view, the pull parser and the owned parse.
    #[test]
    fn last_wins_matches_a_naive_model(keys in proptest::collection::vec(0usize..30, 0..70)) {
        let name = |k: usize| match k {
            0 => "tool_name".to_string(),
            1 => "REQUEST_ID".to_string(),
            k => format!("k{}", k % 24),
        };
        let mut text = format!("{START}\n");
        let mut model: Vec<(String, String)> = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            let (key, value) = (name(k), format!("v{i}"));
            text.push_str(&format!("{key}:「始」{value}「末」,\n"));
            if k > 1 {
                model.retain(|(existing, _)| *existing != key);
                model.push((key, value));
            }
        }
        text.push_str(END);
        let protocol = VcpProtocol::new(VcpOptions::default().request_ids(tool_calling::protocol::RequestIdStyle::Sequential));
        let view = protocol.parse_view(&text);
        if keys.is_empty() {
            proptest::prop_assert!(view.requests.is_empty());
            return Ok(());
        }
        let got: Vec<(String, String)> =
            view.requests[0].args.iter().map(|f| (f.key.to_string(), f.value.to_string())).collect();
        proptest::prop_assert_eq!(&got, &model);
        let pulled: Vec<_> = protocol.view_events(&text).collect();
        let pulled_requests: Vec<&RequestView<'_>> = pulled
            .iter()
            .filter_map(|e| match e {
                tool_calling::protocol::vcp::ViewEvent::Request(r) => Some(r),
                _ => None,
            })
            .collect();
        proptest::prop_assert_eq!(pulled_requests, view.requests.iter().collect::<Vec<_>>());
        let owned = protocol.parse(&text);
        let owned_args: Vec<(String, String)> = owned.requests[0]
            .args
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        proptest::prop_assert_eq!(owned_args, model);
    }
}
