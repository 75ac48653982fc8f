//! Formatting a request and parsing it back gives the same fields, for every
//! value outside the dialect's stated exceptions.

use proptest::prelude::*;
use tool_calling::protocol::vcp::{FormatError, VcpOptions, VcpProtocol};

/// Values: arbitrary text, biased towards the characters that matter to VCP.
fn value() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "「始」",
        "「末」",
        "{末}",
        "{始}",
        "「末exp」",
        "「始exp」",
        "<<<[TOOL_REQUEST]>>>",
        "<<<[END_TOOL_REQUEST]>>>",
        "<<[tool_request]>>",
        "`",
        "```\n",
        ":",
        "：",
        ",",
        "\n",
        " ",
        "末",
        "始",
        "ESCAPE",
        "「",
        "」",
        "{",
        "}",
        "<",
        ">",
        "\\",
        "a",
        "参数",
        "\u{3000}",
        "\u{feff}",
    ]);
    prop::collection::vec(prop_oneof![pieces.prop_map(str::to_string), any::<String>()], 0..8)
        .prop_map(|parts| parts.concat())
}

/// Keys: non-empty runs of key characters without `<`.
fn key() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_.\\-参数>\\[\\]]{1,12}".prop_filter("reserved", |k| {
        !k.eq_ignore_ascii_case("tool_name") && !k.eq_ignore_ascii_case("request_id")
    })
}

/// The spec's exceptions: surrounding white space, `\r`, escape forms.
fn in_scope(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    v.trim() == v
        && !v.contains('\r')
        && !lower.contains("始escape")
        && !lower.contains("末escape")
        && !v.contains("<<<[TOOL_REQUEST_ESCAPE]>>>")
        && !v.contains("<<<[END_TOOL_REQUEST_ESCAPE]>>>")
}

fn check(options: VcpOptions, tool: &str, args: &[(String, String)]) -> Result<(), TestCaseError> {
    let vcp = VcpProtocol::new(options);
    let block = match vcp.write_block(tool, args.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        Ok(block) => block,
        Err(FormatError::DuplicateKey { .. }) => return Ok(()),
        Err(e) => return Err(TestCaseError::fail(format!("refused: {e}"))),
    };
    let outcome = vcp.parse(&block);
    prop_assert_eq!(outcome.requests.len(), 1, "{}", block);
    let request = &outcome.requests[0];
    prop_assert_eq!(&request.tool_name, tool);
    let got: Vec<(String, String)> =
        request.args.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect();
    prop_assert_eq!(&got, &args.to_vec(), "{}", block);
    prop_assert!(request.complete);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trip_keeping_reasoning(
        tool in value().prop_filter("in scope, non-empty", |v| !v.is_empty() && in_scope(v)),
        args in prop::collection::vec((key(), value().prop_filter("in scope", |v| in_scope(v))), 0..5),
        fuzzy in any::<bool>(),
        fenced in any::<bool>(),
    ) {
        check(VcpOptions::default().keep_reasoning(true).fuzzy_markers(fuzzy).skip_fenced(fenced), &tool, &args)?;
    }

    /// With default options reasoning tags are cut out wherever they stand, so values
    /// that hold one are outside the round trip; everything else still holds.
    #[test]
    fn round_trip_default_options(
        tool in "[a-z_\\-]{1,10}",
        args in prop::collection::vec((key(), value().prop_filter("in scope, no tag", |v| {
            in_scope(v) && !v.to_ascii_lowercase().contains("think")
        })), 0..5),
    ) {
        check(VcpOptions::default(), &tool, &args)?;
    }

    #[test]
    fn escaped_closers_are_refused(prefix in ".{0,8}", closer in "[「{]末[eE][sS][cC][aA][pP][eE][」}]") {
        let value = format!("{prefix}{closer}");
        let refused = matches!(
            VcpProtocol::default().write_block("t", [("v", value.as_str())]),
            Err(FormatError::EscapedCloserInValue { .. })
        );
        prop_assert!(refused);
    }
}
