//! The streaming VCP parser (`VcpProtocol::stream_parser`) against its contract:
//!
//! - **Equivalence**: for every input, every chunking and every option combination, the
//!   events collected by `StreamCollector::into_outcome` equal the one-shot `parse`
//!   (requests with spans, problems and `complete`; diagnostics with messages and spans).
//! - **Prose**: the concatenated `Text` events do not depend on the chunking; each one's
//!   span slices the input to its text; their spans ascend, never overlap, and never touch
//!   a request's span.
//! - **Order**: events come in input order; each `RequestStarted { offset }` is followed by
//!   its block's fields and then exactly one `RequestCompleted` or `BlockDiscarded`, whose
//!   span starts at `offset`.
//! - **Memory**: `buffered_len()` stays bounded by the largest block, not by the reply.
//! - **Early events**: after every push of a char-by-char stream, the consumer has seen
//!   exactly what a fresh parser reports for everything pushed so far given in one piece:
//!   prose, block starts, fields, requests and diagnostics come with the push that
//!   decides them. The one exception, diagnostics about skipped text inside a block, come
//!   with the next closer at the latest.
//!
//! Checked over every corpus case (`tests/corpus/vcp/`, `tests/corpus/vcp-extra/`) and over
//! generated replies, with fixed and arbitrary chunkings.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::sample::Index;
use tool_calling::Span;
use tool_calling::protocol::DiagnosticKind;
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::RequestIdStyle;
use tool_calling::protocol::vcp::VcpOptions;
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::protocol::{StreamCollector, StreamEvent, StreamParser};

#[path = "../benches/support/inputs.rs"]
mod inputs;

#[path = "../benches/support/hostile.rs"]
mod hostile;

const START: &str = "<<<[TOOL_REQUEST]>>>";
const END: &str = "<<<[END_TOOL_REQUEST]>>>";

/// Options from three bits (1 `fuzzy_markers`, 2 `skip_fenced`, 4 `keep_reasoning`), with
/// sequential ids so that outcomes compare.
fn options(bits: u8) -> VcpOptions {
    VcpOptions::default()
        .fuzzy_markers(bits & 1 != 0)
        .skip_fenced(bits & 2 != 0)
        .keep_reasoning(bits & 4 != 0)
        .request_ids(RequestIdStyle::Sequential)
}

fn protocol(bits: u8) -> VcpProtocol {
    VcpProtocol::new(options(bits))
}

// ---------------------------------------------------------------------------------------
// Chunkings

/// The char boundary at or before `at` (clamped to the text).
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Pieces of `size` bytes (`size` ≥ 1), each cut moved back to a char boundary, every
/// piece at least one char (as `tester parse --stream-chunk N` cuts).
fn fixed_chunks(text: &str, size: usize) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut rest = text;
    while let Some(first) = rest.chars().next() {
        let cut = floor_boundary(rest, size).max(first.len_utf8());
        let (chunk, tail) = rest.split_at(cut);
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

/// One char per piece.
fn char_chunks(text: &str) -> Vec<&str> {
    text.char_indices().map(|(i, c)| &text[i..i + c.len_utf8()]).collect()
}

/// Cut at `cuts` (any order, any values), each moved back to a char boundary. Repeated
/// cuts give empty pieces, which a consumer may push too.
fn cut_chunks<'a>(text: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| floor_boundary(text, c)).collect();
    cuts.sort_unstable();
    let mut chunks = Vec::new();
    let mut from = 0;
    for cut in cuts {
        chunks.push(&text[from..cut]);
        from = cut;
    }
    chunks.push(&text[from..]);
    chunks
}

/// The fixed chunkings every input is checked with: one piece, one byte (rounded up to a
/// char), one char, 7 bytes.
fn fixed_chunkings(text: &str) -> Vec<(&'static str, Vec<&str>)> {
    vec![
        ("whole", vec![text]),
        ("1 byte", fixed_chunks(text, 1)),
        ("chars", char_chunks(text)),
        ("7 bytes", fixed_chunks(text, 7)),
    ]
}

// ---------------------------------------------------------------------------------------
// Running and checking

/// What one streamed run produced.
struct Run {
    events: Vec<StreamEvent>,
    /// For each event, the index of the push that produced it (`chunks.len()` for finish).
    pushed_by: Vec<usize>,
    max_buffered: usize,
}

fn stream<'a>(protocol: &VcpProtocol, chunks: impl IntoIterator<Item = &'a str>) -> Run {
    match stream_bounded(protocol, chunks, usize::MAX) {
        Ok(run) => run,
        Err(message) => unreachable!("{message}"),
    }
}

/// [`stream`], failing as soon as `buffered_len()` exceeds `bound` after a push.
fn stream_bounded<'a>(
    protocol: &VcpProtocol,
    chunks: impl IntoIterator<Item = &'a str>,
    bound: usize,
) -> Result<Run, String> {
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    let mut pushed_by = Vec::new();
    let mut max_buffered = 0;
    let mut n = 0;
    let mut offset = 0;
    for chunk in chunks {
        parser.push_text(chunk, &mut events);
        offset += chunk.len();
        pushed_by.resize(events.len(), n);
        max_buffered = max_buffered.max(parser.buffered_len());
        if max_buffered > bound {
            return Err(format!("{max_buffered} bytes buffered after {offset} bytes pushed"));
        }
        n += 1;
    }
    parser.finish(&mut events);
    pushed_by.resize(events.len(), n);
    // Spent: nothing more comes out.
    let mut more = Vec::new();
    parser.push_text("<<<[TOOL_REQUEST]>>>tool_name:「始」late「末」", &mut more);
    parser.finish(&mut more);
    assert!(more.is_empty(), "a finished parser reported {more:?}");
    Ok(Run { events, pushed_by, max_buffered })
}

fn collect(events: &[StreamEvent]) -> (ParseOutcome, String) {
    let mut collector = StreamCollector::new();
    collector.extend(events.iter().cloned());
    let prose = collector.normal_text().to_string();
    (collector.into_outcome(), prose)
}

/// The order and prose invariants of one event sequence for `text`.
fn check_events(text: &str, events: &[StreamEvent]) -> Result<(), String> {
    let in_bounds =
        |span: Span| span.start <= span.end && span.end <= text.len() && span.slice(text).is_some();
    // Everything reported so far lies before `cursor`.
    let mut cursor = 0;
    let mut open: Option<usize> = None;
    let mut texts: Vec<Span> = Vec::new();
    let mut blocks: Vec<Span> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let at = || format!("event #{i} {event:?}");
        match event {
            StreamEvent::Text { text: prose, span } => {
                if span.slice(text) != Some(prose.as_str()) {
                    return Err(format!("{}: span slices to {:?}", at(), span.slice(text)));
                }
                if span.start < cursor {
                    return Err(format!("{}: starts before {cursor}, which is already reported", at()));
                }
                cursor = span.end;
                texts.push(*span);
            }
            StreamEvent::RequestStarted { offset } => {
                if let Some(previous) = open {
                    return Err(format!("{}: the block started at {previous} is still open", at()));
                }
                if *offset < cursor || !text.get(*offset..).is_some_and(|rest| rest.starts_with("<<")) {
                    return Err(format!("{}: not a marker at or after {cursor}", at()));
                }
                open = Some(*offset);
                cursor = *offset;
            }
            StreamEvent::FieldCompleted { span, .. } => {
                if open.is_none() || !in_bounds(*span) || span.start < cursor {
                    return Err(format!("{}: outside an open block, or before {cursor}", at()));
                }
                cursor = span.end;
            }
            StreamEvent::RequestCompleted(request) => {
                let span = request.span;
                if open.take() != Some(span.start) || !in_bounds(span) || span.end < cursor {
                    return Err(format!(
                        "{}: does not close the open block ({open:?}, cursor {cursor})",
                        at()
                    ));
                }
                cursor = span.end;
                blocks.push(span);
            }
            StreamEvent::BlockDiscarded { span } => {
                if open.take().is_none_or(|offset| offset != span.start)
                    || !in_bounds(*span)
                    || span.end < cursor
                {
                    return Err(format!("{}: does not close the open block (cursor {cursor})", at()));
                }
                cursor = span.end;
            }
            StreamEvent::Diagnostic(diagnostic) => {
                if !in_bounds(diagnostic.span) {
                    return Err(format!("{}: span out of bounds or off char boundaries", at()));
                }
            }
            other => return Err(format!("event #{i}: unknown event {other:?}")),
        }
    }
    if let Some(offset) = open {
        return Err(format!("the block started at {offset} never ended"));
    }
    for prose in &texts {
        if let Some(block) = blocks.iter().find(|b| prose.start < b.end && b.start < prose.end) {
            return Err(format!("prose {prose:?} overlaps request {block:?}"));
        }
    }
    Ok(())
}

/// Streams `text` in `chunks` under option bits `bits` and checks the whole contract
/// against the one-shot parse and the single-chunk prose.
fn check(text: &str, bits: u8, chunks: &[&str]) -> Result<(), String> {
    assert_eq!(chunks.concat(), text, "the chunks must make up the text");
    let protocol = protocol(bits);
    let expected = protocol.parse(text);
    let context = || format!("options {:?}\ninput: {text:?}\nchunks: {chunks:?}", options(bits));

    // The event invariants and the outcome of one run; its prose.
    let checked = |label: &str, run: Run| -> Result<String, String> {
        check_events(text, &run.events).map_err(|e| format!("{label}: {e}\n{}", context()))?;
        let (outcome, prose) = collect(&run.events);
        if outcome != expected {
            return Err(format!(
                "{label}: outcome differs from parse\n{}\nparse:  {expected:#?}\nstream: {outcome:#?}",
                context()
            ));
        }
        Ok(prose)
    };
    let whole_prose = checked("single chunk", stream(&protocol, [text]))?;
    let prose = checked("chunked", stream(&protocol, chunks.iter().copied()))?;
    if prose != whole_prose {
        return Err(format!(
            "prose differs\n{}\nsingle chunk: {whole_prose:?}\nchunked: {prose:?}",
            context()
        ));
    }
    Ok(())
}

fn assert_ok(result: Result<(), String>) {
    if let Err(message) = result {
        panic!("{message}");
    }
}

fn prose_of(bits: u8, chunks: &[&str]) -> String {
    collect(&stream(&protocol(bits), chunks.iter().copied()).events).1
}

// ---------------------------------------------------------------------------------------
// Corpus

/// Every corpus case: (name, reply, option bits from its flags).
fn corpus() -> Vec<(String, String, u8)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut cases = Vec::new();
    for dir in ["vcp", "vcp-extra"] {
        let mut txts: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        txts.sort();
        for txt in txts {
            let case: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(txt.with_extension("json")).unwrap()).unwrap();
            let mut bits = 0;
            for flag in case["flags"].as_array().into_iter().flatten() {
                bits |= match flag.as_str() {
                    Some("--fuzzy") => 1,
                    Some("--skip-fenced") => 2,
                    Some("--keep-think") => 4,
                    other => panic!("{}: unknown flag {other:?}", txt.display()),
                };
            }
            let name = format!("{dir}/{}", txt.file_stem().unwrap().to_string_lossy());
            cases.push((name, std::fs::read_to_string(&txt).unwrap(), bits));
        }
    }
    assert!(cases.len() >= 100, "only {} corpus cases", cases.len());
    cases
}

fn corpus_cached() -> &'static [(String, String, u8)] {
    static CORPUS: std::sync::OnceLock<Vec<(String, String, u8)>> = std::sync::OnceLock::new();
    CORPUS.get_or_init(corpus)
}

/// Every corpus case, all 8 option combinations, the fixed chunkings.
#[test]
fn corpus_fixed_chunkings_all_options() {
    let mut failures = Vec::new();
    for (name, text, _) in corpus_cached() {
        for bits in 0..8 {
            for (label, chunks) in fixed_chunkings(text) {
                if let Err(e) = check(text, bits, &chunks) {
                    failures.push(format!("{name} ({label}): {e}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Corpus cases cut at arbitrary points, under every option combination.
    #[test]
    fn corpus_arbitrary_cuts(case in any::<Index>(), bits in 0u8..8, cuts in prop::collection::vec(any::<Index>(), 0..24)) {
        let corpus = corpus_cached();
        let (name, text, _) = &corpus[case.index(corpus.len())];
        let cuts: Vec<usize> = cuts.iter().map(|c| c.index(text.len() + 1)).collect();
        let chunks = cut_chunks(text, &cuts);
        check(text, bits, &chunks).map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
    }

    /// Corpus cases in chunks of one arbitrary size, under every option combination.
    #[test]
    fn corpus_arbitrary_chunk_size(case in any::<Index>(), bits in 0u8..8, size in 1usize..48) {
        let corpus = corpus_cached();
        let (name, text, _) = &corpus[case.index(corpus.len())];
        check(text, bits, &fixed_chunks(text, size)).map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
    }
}

// ---------------------------------------------------------------------------------------
// Generated replies

/// A well-formed (or nearly) request block: fields with plain, escaped, fuzzy and
/// documentation values, optional END marker.
fn block() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "tool_name",
        "TOOL_NAME",
        "request_id",
        "command",
        "path",
        "参数",
        "IMAGE-SIZE",
        "a",
        "b",
        "",
    ]);
    let open_close = prop::sample::select(vec![
        ("「始」", "「末」"),
        ("「始ESCAPE」", "「末ESCAPE」"),
        ("{始escape}", "{末Escape」"),
        ("{始}", "{末}"),
        ("「始}", "{末」"),
        ("「始exp」", "「末exp」"),
        ("「始」", ""),
    ]);
    let value = prop::sample::select(vec![
        "calc_add",
        "src/tools",
        "  spaced  ",
        "两行\r\n文本",
        "multi\nline\nvalue",
        "has <<<[TOOL_REQUEST]>>> inside",
        "has <<<[END_TOOL_REQUEST]>>> inside",
        "<<<[TOOL_REQUEST_ESCAPE]>>>",
        "a < b",
        "<think>reason</think>",
        "```\ncode\n```",
        "",
    ]);
    let sep = prop::sample::select(vec![":", "：", " :", ":\n"]);
    let field =
        (key, sep, open_close, value, prop::sample::select(vec![",\n", "\n", ",", " // note\n", "\r\n"]))
            .prop_map(|(k, s, (o, c), v, after)| format!("{k}{s}{o}{v}{c}{after}"));
    let start = prop::sample::select(vec![START, START, "<<[tool_request]>>", "<<<<[Tool_Request]>>>>"]);
    let end = prop::sample::select(vec![END, END, "", "<<[end_tool_request]>>>>", "<<<[END_TOOL_REQUEST]>>"]);
    (start, prop::collection::vec(field, 0..5), end)
        .prop_map(|(start, fields, end)| format!("{start}\n{}{end}", fields.concat()))
}

/// Reply-shaped text: prose (ASCII, CJK, CRLF), markers whole and partial, fuzzy variants,
/// value brackets in every form, reasoning tags whole, partial and unclosed, fences, and
/// whole blocks, in any order.
fn reply() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        // prose
        "Let me check. ",
        "你好，世界。",
        "✓ é ",
        "\n",
        "\r\n",
        "\r",
        " ",
        "\t",
        "\u{3000}",
        "a < b and c > d",
        "x",
        // markers, whole and partial
        START,
        END,
        "`<<<[TOOL_REQUEST]>>>`",
        "<<<[TOOL_RE",
        "<<<[END_TOOL_",
        "<<",
        "<<<",
        "<<<[",
        "]>>>",
        ">>",
        "<<[tool_request]>>>>",
        "<<<<[END_TOOL_REQUEST]>>>>",
        "<<<<<[TOOL_REQUEST]>>>",
        "<<<[TOOL_REQUEST_EXP]>>>",
        "<<<[TOOL_REQUEST_ESCAPE]>>>",
        // fields and value brackets
        "tool_name",
        "tool_name:「始」calc_add「末」",
        "request_id:「始」r1「末」,",
        "key",
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
        "「",
        "」",
        "始",
        "末",
        "「末",
        "「始ESC",
        // reasoning
        "<think>",
        "</think>",
        "<thi",
        "</thi",
        "<think",
        "<think/>",
        "<Thinking mode=\"x\">",
        "</THINKING>",
        "< / think >",
        "<thinker>",
        // fences
        "```",
        "```rust\n",
        "\n```\n",
        "````",
        "`",
    ]);
    let piece = prop_oneof![
        12 => pieces.prop_map(str::to_string),
        3 => block(),
        1 => "[a-z<>\\[\\]「」{}始末`:,\r\n _]{0,6}",
        1 => any::<String>().prop_map(|s| s.chars().take(6).collect()),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

/// A chunking for a text not yet known: fixed size or cut points.
#[derive(Debug, Clone)]
enum Chunking {
    Size(usize),
    Cuts(Vec<Index>),
}

fn chunking() -> impl Strategy<Value = Chunking> {
    prop_oneof![
        (1usize..24).prop_map(Chunking::Size),
        prop::collection::vec(any::<Index>(), 0..32).prop_map(Chunking::Cuts),
    ]
}

fn apply<'a>(text: &'a str, chunking: &Chunking) -> Vec<&'a str> {
    match chunking {
        Chunking::Size(size) => fixed_chunks(text, *size),
        Chunking::Cuts(cuts) => {
            let cuts: Vec<usize> = cuts.iter().map(|c| c.index(text.len() + 1)).collect();
            cut_chunks(text, &cuts)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Generated replies: an arbitrary chunking, under all 8 option combinations.
    #[test]
    fn generated_arbitrary_chunking_all_options(text in reply(), chunking in chunking()) {
        let chunks = apply(&text, &chunking);
        for bits in 0..8 {
            check(&text, bits, &chunks).map_err(TestCaseError::fail)?;
        }
    }

    /// Generated replies: 1 byte, char by char, 7 bytes, under one option combination.
    #[test]
    fn generated_fixed_chunkings(text in reply(), bits in 0u8..8) {
        for (label, chunks) in fixed_chunkings(&text) {
            check(&text, bits, &chunks).map_err(|e| TestCaseError::fail(format!("{label}: {e}")))?;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Deterministic cases

/// A marker cut at every byte position is held back: no prose ever holds a prefix of a
/// marker that turns out to be one, whatever the options, and the prose is the same.
#[test]
fn marker_split_at_every_byte_is_held_back() {
    let block = format!("{START}\ntool_name:「始」clock「末」\n{END}");
    let text = format!("Intro 你好 {block} outro");
    let start = text.find(START).unwrap();
    let end = start + block.len();
    for bits in 0..8 {
        let want_prose = prose_of(bits, &[&text]);
        assert_eq!(want_prose, "Intro 你好  outro", "bits {bits}");
        // Every cut inside the START marker and inside the END marker, and a three-way
        // cut through both.
        let end_marker = end - END.len();
        let cuts: Vec<Vec<usize>> = (start..=start + START.len())
            .chain(end_marker..=end)
            .map(|c| vec![c])
            .chain((0..START.len()).map(|i| vec![start + i, end_marker + i % END.len()]))
            .collect();
        for cuts in cuts {
            let chunks = cut_chunks(&text, &cuts);
            assert_ok(check(&text, bits, &chunks));
            let run = stream(&protocol(bits), chunks.iter().copied());
            for event in &run.events {
                if let StreamEvent::Text { text: prose, span } = event {
                    assert!(
                        span.end <= start || span.start >= end,
                        "bits {bits}, cuts {cuts:?}: prose {prose:?} at {span:?} reaches into the block {start}..{end}"
                    );
                    assert!(!prose.contains('<'), "bits {bits}, cuts {cuts:?}: {prose:?}");
                }
            }
            let completed =
                run.events.iter().filter(|e| matches!(e, StreamEvent::RequestCompleted(_))).count();
            assert_eq!(completed, 1, "bits {bits}, cuts {cuts:?}: {:?}", run.events);
        }
    }
}

/// The same for fuzzy markers (which may grow extra `>`) and every 1-byte chunking.
#[test]
fn fuzzy_marker_split_at_every_byte_is_held_back() {
    let text = "Hi <<[tool_request]>>>>\ntool_name:{始}clock{末}\n<<<<[End_Tool_Request]>>>> bye";
    let start = text.find("<<[").unwrap();
    let end = text.find(" bye").unwrap();
    for bits in [1u8, 3, 5, 7] {
        for cut in 0..=text.len() {
            let chunks = cut_chunks(text, &[cut]);
            assert_ok(check(text, bits, &chunks));
        }
        let run = stream(&protocol(bits), fixed_chunks(text, 1));
        let requests: Vec<_> = run
            .events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::RequestCompleted(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(requests.len(), 1, "bits {bits}: {:?}", run.events);
        assert_eq!(requests[0].tool_name, "clock");
        assert_eq!(requests[0].span.start, start);
        assert!(requests[0].span.end <= end + 1, "{:?}", requests[0].span);
        for event in &run.events {
            if let StreamEvent::Text { text: prose, .. } = event {
                assert!(!prose.contains("<<"), "bits {bits}: {prose:?}");
            }
        }
    }
}

/// A marker prefix that does not become a marker is prose after all, at every cut.
#[test]
fn undecided_prefix_that_is_no_marker_becomes_prose() {
    let text = "See <<<[TOOL_RE and <<<[END_TOOL_REQUEST]>>> and <thin and <<[tool_req]>> end <<<[TOOL_";
    for bits in 0..8 {
        let want = prose_of(bits, &[text]);
        assert_eq!(want, text, "bits {bits}: nothing here is a block or reasoning");
        for cut in 0..=text.len() {
            assert_ok(check(text, bits, &cut_chunks(text, &[cut])));
        }
    }
}

/// An unclosed `<think>` hides everything after it, requests included, for every chunking.
#[test]
fn unclosed_think_hides_the_rest() {
    let text =
        format!("Visible 前言 <think>secret plan\n{START}\ntool_name:「始」rm「末」\n{END}\nmore secret");
    let think = text.find("<think>").unwrap();
    for (label, chunks) in fixed_chunkings(&text) {
        assert_ok(check(&text, 0, &chunks));
        let run = stream(&protocol(0), chunks.iter().copied());
        let (outcome, prose) = collect(&run.events);
        assert_eq!(prose, "Visible 前言 ", "{label}");
        assert!(outcome.requests.is_empty(), "{label}: {:?}", outcome.requests);
        assert!(!run.events.iter().any(|e| matches!(e, StreamEvent::RequestStarted { .. })), "{label}");
        let unclosed: Vec<_> =
            outcome.diagnostics.iter().filter(|d| d.kind == DiagnosticKind::UnclosedReasoning).collect();
        assert_eq!(unclosed.len(), 1, "{label}: {:?}", outcome.diagnostics);
        assert_eq!(unclosed[0].span.start, think, "{label}");
        for event in &run.events {
            if let StreamEvent::Text { text: prose, .. } = event {
                assert!(!prose.contains("secret") && !prose.contains('<'), "{label}: {prose:?}");
            }
        }
    }
    // With reasoning kept, the same text is prose and a request.
    for (label, chunks) in fixed_chunkings(&text) {
        assert_ok(check(&text, 4, &chunks));
        let (outcome, prose) = collect(&stream(&protocol(4), chunks.iter().copied()).events);
        assert_eq!(outcome.requests.len(), 1, "{label}");
        assert!(prose.starts_with("Visible 前言 <think>secret plan\n") && prose.ends_with("\nmore secret"));
    }
}

/// Closed reasoning is cut out of the prose; the prose around it keeps its spans.
#[test]
fn closed_think_is_cut_out_of_prose() {
    let text = "A<think>hidden 「末」 <<<[TOOL_REQUEST]>>></think>B<think/>C</think>D";
    for (label, chunks) in fixed_chunkings(text) {
        assert_ok(check(text, 0, &chunks));
        let run = stream(&protocol(0), chunks.iter().copied());
        let pieces: Vec<(String, Span)> = run
            .events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Text { text, span } => Some((text.clone(), *span)),
                _ => None,
            })
            .collect();
        let prose: String = pieces.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(prose, "ABCD", "{label}");
        // No piece spans hidden text.
        for (piece, span) in &pieces {
            assert_eq!(span.len(), piece.len(), "{label}: {piece:?} at {span:?}");
        }
    }
}

#[test]
fn prose_around_blocks_and_discarded_blocks() {
    let text = format!(
        "Before.\n{START}\ntool_name:「始」a「末」\n{END}\nBetween.\n{START}\n  \n{END}\nExample: {START}tool_name:「始exp」x「末exp」{END}\nAfter."
    );
    for bits in 0..8 {
        for (label, chunks) in fixed_chunkings(&text) {
            assert_ok(check(&text, bits, &chunks));
            let run = stream(&protocol(bits), chunks.iter().copied());
            let started =
                run.events.iter().filter(|e| matches!(e, StreamEvent::RequestStarted { .. })).count();
            let completed =
                run.events.iter().filter(|e| matches!(e, StreamEvent::RequestCompleted(_))).count();
            let discarded =
                run.events.iter().filter(|e| matches!(e, StreamEvent::BlockDiscarded { .. })).count();
            assert_eq!((started, completed, discarded), (3, 1, 2), "bits {bits}, {label}: {:?}", run.events);
            let prose = collect(&run.events).1;
            assert!(prose.starts_with("Before.\n") && prose.ends_with("\nAfter."), "{prose:?}");
            assert!(!prose.contains("tool_name"), "{prose:?}");
        }
    }
}

/// Events come out as soon as the text decides them: prose without anything that could
/// start a marker or tag at once, a block's start with its START marker, a request with
/// its END marker, each field with its closer, all before `finish`.
#[test]
fn events_are_reported_early() {
    let protocol = protocol(0);
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();

    parser.push_text("Hello, world. ", &mut events);
    assert!(
        matches!(events.as_slice(), [StreamEvent::Text { text, span }] if text == "Hello, world. " && *span == Span::new(0, 14)),
        "{events:?}"
    );
    events.clear();

    parser.push_text("<<<[TOOL_REQUEST]", &mut events);
    assert!(events.is_empty(), "a marker prefix decides nothing: {events:?}");
    parser.push_text(">>>\ntool_name:「始」clock「末」", &mut events);
    assert!(matches!(events.first(), Some(StreamEvent::RequestStarted { offset: 14 })), "{events:?}");
    assert!(
        events.iter().any(
            |e| matches!(e, StreamEvent::FieldCompleted { key, value, closed: true, .. } if key == "tool_name" && value == "clock")
        ),
        "a closed field is reported with its closer: {events:?}"
    );
    events.clear();

    parser.push_text(",\nzone:「始」UTC「末」\n<<<[END_TOOL_REQUEST]>>>", &mut events);
    let request = events.iter().find_map(|e| match e {
        StreamEvent::RequestCompleted(r) => Some(r),
        _ => None,
    });
    let request = request.unwrap_or_else(|| panic!("the END marker completes the request: {events:?}"));
    assert_eq!(
        (request.tool_name.as_str(), request.arg_str("zone"), request.complete),
        ("clock", Some("UTC"), true)
    );
    assert_eq!(request.span.start, 14);
    events.clear();

    parser.push_text(" Bye.", &mut events);
    let prose: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(prose, " Bye.", "{events:?}");
    events.clear();
    parser.finish(&mut events);
    assert!(events.is_empty(), "nothing left for finish: {events:?}");
}

/// With 1-byte chunks, each request is completed by the push that ends its END marker
/// (exact markers), and the prose before a block is out before the block starts.
#[test]
fn requests_complete_with_their_end_marker() {
    let text = inputs::requests_only(4096);
    let chunks = fixed_chunks(&text, 1);
    let run = stream(&protocol(0), chunks.iter().copied());
    let mut ends: Vec<usize> = text.match_indices(END).map(|(i, _)| i + END.len()).collect();
    ends.reverse();
    // Byte offsets where each chunk ends.
    let mut chunk_end = Vec::new();
    let mut at = 0;
    for chunk in &chunks {
        at += chunk.len();
        chunk_end.push(at);
    }
    let mut seen = 0;
    for (event, &push) in run.events.iter().zip(&run.pushed_by) {
        if let StreamEvent::RequestCompleted(request) = event {
            let end = ends.pop().expect("no more END markers");
            assert_eq!(request.span.end, end);
            assert!(push < chunks.len(), "request {} reported only at finish", request.request_id);
            assert_eq!(chunk_end[push], end, "request {} reported late", request.request_id);
            seen += 1;
        }
    }
    assert_eq!(seen, inputs::count_blocks(&text));
    assert!(ends.is_empty());
}

/// About `size` bytes of prose paragraphs (with `a < b` comparisons, inline code, fences),
/// short closed reasoning, and ~200–400-byte request blocks, mixed.
fn mixed_reply(size: usize) -> String {
    let prose = inputs::prose_with_requests(64 * 1024);
    let paragraphs: Vec<&str> = prose.split("\n\n").filter(|p| !p.contains("<<<[")).collect();
    let mut rng = inputs::Rng::new(0x57AE_A111);
    let mut out = String::with_capacity(size + 4096);
    while out.len() < size {
        match rng.below(8) {
            0..=3 => {
                out.push_str(paragraphs[rng.below(paragraphs.len())]);
                out.push_str("\n\n");
            }
            4 => out.push_str("<think>Check the path first, then call the tool.</think>\n"),
            _ => inputs::request_block(&mut rng, &mut out),
        }
    }
    out
}

/// Memory: streaming 1 MiB of mixed prose and requests holds at most twice the largest
/// block plus 16 KiB, in 1-byte and 64-byte chunks; and the outcome still equals parse.
#[test]
fn buffered_len_is_bounded_by_the_largest_block() {
    let text = mixed_reply(1 << 20);
    for bits in [0u8, 7] {
        let protocol = protocol(bits);
        let expected = protocol.parse(&text);
        assert!(expected.requests.len() > 500, "{}", expected.requests.len());
        let largest = expected.requests.iter().map(|r| r.span.len()).max().unwrap();
        let bound = 2 * largest + 16 * 1024;
        for size in [1, 64] {
            let run = stream_bounded(&protocol, fixed_chunks(&text, size), bound).unwrap_or_else(|e| {
                panic!("bits {bits}, {size}-byte chunks: {e}; bound {bound} (largest block {largest})")
            });
            assert_eq!(collect(&run.events).0, expected, "bits {bits}, {size}-byte chunks");
            println!(
                "bits {bits}, {size}-byte chunks: peak buffered_len {} (bound {bound})",
                run.max_buffered
            );
        }
    }
}

/// Memory inside one long block and one long prose stretch without any `<`: prose is
/// let go as it streams, a block is held only while open.
#[test]
fn buffered_len_after_long_prose_and_after_a_long_block() {
    let protocol = protocol(0);
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    let line = "All prose here, nothing to hold back. 中文也一样。\n";
    for i in 0..20_000 {
        parser.push_text(line, &mut events);
        let held = parser.buffered_len();
        assert!(
            held <= 16 * 1024,
            "prose without markers: {held} bytes held after {} bytes",
            (i + 1) * line.len()
        );
    }
    parser.push_text(START, &mut events);
    parser.push_text("\ntool_name:「始」write「末」,\ncontent:「始」", &mut events);
    for _ in 0..2_000 {
        parser.push_text(line, &mut events);
    }
    parser.push_text("「末」\n", &mut events);
    parser.push_text(END, &mut events);
    parser.push_text(" ok", &mut events);
    assert!(
        parser.buffered_len() <= 16 * 1024,
        "after the block ended, {} bytes are still held",
        parser.buffered_len()
    );
    parser.finish(&mut events);
    let (outcome, prose) = collect(&events);
    assert_eq!(outcome.requests.len(), 1);
    assert_eq!(outcome.requests[0].arg_str("content").map(str::len), Some(2_000 * line.len() - 1));
    assert!(prose.ends_with(" ok") && prose.len() == 20_000 * line.len() + 3);
}

// ---------------------------------------------------------------------------------------
// Timeliness

/// Prose so far and the other events, in order: what a consumer has seen. Diagnostics
/// about skipped text inside a block are left out: the field head after the skipped
/// text decides them, but inside a block the parser reads only when a closer or marker
/// arrives (reading every head as it completes would cost a run per field), so they
/// come with the next closer or marker. `stray_text_is_reported_by_the_next_closer`
/// checks that bound.
fn seen(events: &[StreamEvent]) -> (String, Vec<StreamEvent>) {
    let mut prose = String::new();
    let mut others = Vec::new();
    for event in events {
        match event {
            StreamEvent::Text { text, .. } => prose.push_str(text),
            StreamEvent::Diagnostic(d) if d.kind == DiagnosticKind::StrayText => {}
            other => others.push(other.clone()),
        }
    }
    (prose, others)
}

/// After every push of a char-by-char stream, the consumer has seen exactly what a fresh
/// parser given everything pushed so far, in one piece, reports: no event waits for a
/// later chunk than the one that decides it (the parser keeps back only text that
/// cannot decide anything yet).
fn check_timely(text: &str, bits: u8) -> Result<(), String> {
    let protocol = protocol(bits);
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    let mut pushed = 0;
    for chunk in char_chunks(text) {
        parser.push_text(chunk, &mut events);
        pushed += chunk.len();
        let mut oracle = protocol.stream_parser();
        let mut expected = Vec::new();
        oracle.push_text(&text[..pushed], &mut expected);
        if seen(&events) != seen(&expected) {
            return Err(format!(
                "options {:?}, after {pushed} bytes ({:?}):\nstreamed: {:?}\none piece: {:?}",
                options(bits),
                &text[floor_boundary(text, pushed.saturating_sub(40))..pushed],
                seen(&events),
                seen(&expected)
            ));
        }
    }
    Ok(())
}

/// The benchmark's shapes: request blocks back to back, and prose mixed with blocks and
/// reasoning.
#[test]
fn events_are_not_late_on_generated_replies() {
    let requests = inputs::requests_only(3000);
    let mixed = mixed_reply(3000);
    for text in [&requests, &mixed] {
        for bits in 0..8 {
            assert_ok(check_timely(text, bits));
        }
    }
}

/// Every corpus case under all 8 option combinations.
#[test]
fn events_are_not_late_on_the_corpus() {
    let mut failures = Vec::new();
    for (name, text, _) in corpus_cached() {
        for bits in 0..8 {
            if let Err(e) = check_timely(text, bits) {
                failures.push(format!("{name}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Generated replies under every option combination, char by char.
    #[test]
    fn generated_replies_are_not_late(text in reply(), bits in 0u8..8) {
        if let Err(e) = check_timely(&text, bits) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// A diagnostic about skipped text between fields comes with the closer of the field
/// after it, at the latest.
#[test]
fn stray_text_is_reported_by_the_next_closer() {
    let text = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」T「末」,\n// a comment\nzone:「始」UTC「末」\n<<<[END_TOOL_REQUEST]>>>";
    let closer_end = text.rfind("「末」").unwrap() + "「末」".len();
    for bits in 0..8 {
        let mut parser = protocol(bits).stream_parser();
        let mut events = Vec::new();
        let mut pushed = 0;
        let mut stray_at = None;
        for chunk in char_chunks(text) {
            parser.push_text(chunk, &mut events);
            pushed += chunk.len();
            if stray_at.is_none()
                && events
                    .iter()
                    .any(|e| matches!(e, StreamEvent::Diagnostic(d) if d.kind == DiagnosticKind::StrayText))
            {
                stray_at = Some(pushed);
            }
        }
        let stray_at =
            stray_at.unwrap_or_else(|| panic!("bits {bits}: no stray-text diagnostic before finish"));
        assert!(
            stray_at <= closer_end,
            "bits {bits}: reported after {stray_at} bytes, the closer ends at {closer_end}"
        );
    }
}

/// Cases the timeliness proptest found: a fuzzy END whose `>` run is ended by hidden
/// reasoning (the break decides it), and a field head cut by a run (`数` begins with
/// the lead byte of `末`) whose retry must not wait past the closer.
#[test]
fn events_are_not_late_in_found_cases() {
    assert_ok(check_timely("<<<[TOOL_REQUEST]>>>\n<<<[END_TOOL_REQUEST]>>><think/>", 1));
    assert_ok(check_timely("<<<[TOOL_REQUEST]>>>\n参数:{始}{末},\n<<<[END_TOOL_REQUEST]>>>", 5));
    assert_ok(check_timely("<<<[TOOL_REQUEST]>>>\n参数:「始」值「末」\n<<<[END_TOOL_REQUEST]>>>", 0));
}

/// The hostile families of the `vcp_adversarial` bench, at 16 KiB: streamed in 1-, 7-
/// and 64-byte chunks, each gives what `parse` gives, and the borrowed view agrees.
#[test]
fn hostile_families_stream_like_parse() {
    for family in hostile::families() {
        let protocol = VcpProtocol::new(family.options.request_ids(RequestIdStyle::Sequential));
        let text = (family.make)(16 * 1024);
        let expected = protocol.parse(&text);
        let view = protocol.parse_view(&text).into_owned();
        assert_eq!(
            (view.requests, view.diagnostics),
            (expected.requests.clone(), expected.diagnostics.clone()),
            "{}",
            family.name
        );
        for size in [1, 7, 64] {
            let run = stream_bounded(&protocol, fixed_chunks(&text, size), usize::MAX)
                .unwrap_or_else(|e| panic!("{}, {size}-byte chunks: {e}", family.name));
            assert_eq!(collect(&run.events).0, expected, "{}, {size}-byte chunks", family.name);
        }
    }
}

#[test]
fn the_notes_to_the_model_follow_the_protocols_language_when_streamed_too() {
    let protocol = VcpProtocol::default().with_language(tool_calling::Language::Zh);
    let text = "<<<[TOOL_REQUEST]>>>\na:「始」1「末」\n<<<[END_TOOL_REQUEST]>>>\n\
                <<<[TOOL_REQUEST]>>>\ntool_name:「始」calc「末」,\nb:「始ESCAPE」open";
    let one_shot = protocol.parse(text);
    let problems: Vec<&Vec<String>> = one_shot.requests.iter().map(|r| &r.problems).collect();
    assert_eq!(
        problems,
        [
            &vec!["请求没有 tool_name：请加上 tool_name:「始」…「末」".to_string()],
            &vec!["`b` 的值没有闭合：请用 「末ESCAPE」 结束它".to_string()],
        ]
    );
    let mut parser = protocol.stream_parser();
    let mut events = Vec::new();
    for piece in text.split_inclusive('\n') {
        parser.push_text(piece, &mut events);
    }
    parser.finish(&mut events);
    let streamed: Vec<Vec<String>> = events
        .into_iter()
        .filter_map(|e| match e {
            StreamEvent::RequestCompleted(r) => Some(r.problems),
            _ => None,
        })
        .collect();
    assert_eq!(streamed.iter().collect::<Vec<_>>(), problems);
}
