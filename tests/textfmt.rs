//! The open-model text formats against the corpus in `tests/corpus/textfmt/` (a sample
//! written from each format's rules, and cases per format: one call, several, text
//! around, unicode, nested arguments, malformed, unclosed): one-shot, streamed in chunks
//! of every size, and through `auto`.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::Value;
use tool_calling::protocol::textfmt::{
    AutoProtocol, Detected, TextFormat, TextFormatOptions, TextFormatProtocol,
};
use tool_calling::protocol::{ParseOutcome, RequestIdStyle, StreamCollector, StreamEvent, StreamParser};

#[path = "support/chunks.rs"]
mod chunks;
use chunks::char_chunks;

struct Case {
    format: TextFormat,
    name: String,
    text: String,
    expected: Value,
    /// The reply starts inside reasoning the prompt opened (`"starts_in_reasoning":
    /// true` in the case's JSON).
    starts_in_reasoning: bool,
}

fn corpus() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/textfmt");
    let mut cases = Vec::new();
    // `TEXTFMT_CASES=hermes,mistral` reads those formats' cases only (while working on one).
    let only = std::env::var("TEXTFMT_CASES").ok();
    let wanted =
        |format: TextFormat| only.as_deref().is_none_or(|o| o.split(',').any(|id| id == format.id()));
    for format in TextFormat::ALL.into_iter().filter(|f| wanted(*f)) {
        let dir = root.join(format.id());
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no cases for {format}");
        for txt in files {
            let expected: Value =
                serde_json::from_str(&std::fs::read_to_string(txt.with_extension("json")).unwrap()).unwrap();
            cases.push(Case {
                format,
                name: txt.file_stem().unwrap().to_string_lossy().into_owned(),
                text: std::fs::read_to_string(&txt).unwrap(),
                starts_in_reasoning: expected.get("starts_in_reasoning") == Some(&Value::Bool(true)),
                expected,
            });
        }
    }
    cases
}

/// The options a case is read with.
fn options(case: &Case) -> TextFormatOptions {
    TextFormatOptions::default()
        .request_ids(RequestIdStyle::Sequential)
        .starts_in_reasoning(case.starts_in_reasoning)
}

fn protocol(case: &Case) -> TextFormatProtocol {
    TextFormatProtocol::new(case.format).with_options(options(case))
}

fn protocol_of(format: TextFormat) -> TextFormatProtocol {
    TextFormatProtocol::new(format)
        .with_options(TextFormatOptions::default().request_ids(RequestIdStyle::Sequential))
}

/// The complete requests as `{"name", "arguments"}`, in order.
fn complete_calls(reply: &ParseOutcome) -> Vec<Value> {
    reply
        .requests
        .iter()
        .filter(|r| r.complete)
        .map(|r| serde_json::json!({"name": r.tool_name, "arguments": r.args}))
        .collect()
}

fn check(case: &Case, reply: &ParseOutcome, how: &str) {
    let context = format!("{}/{} ({how})", case.format, case.name);
    let expected: Vec<Value> = case.expected["calls"].as_array().unwrap().clone();
    assert_eq!(complete_calls(reply), expected, "{context}: {reply:#?}");
    if let Some(normal) = case.expected.get("normal_text") {
        assert_eq!(reply.normal_text, normal.as_str().unwrap(), "{context}: normal text");
    }
    if let Some(incomplete) = case.expected.get("incomplete") {
        let found = reply.requests.iter().filter(|r| !r.complete).count();
        assert_eq!(found as u64, incomplete.as_u64().unwrap(), "{context}: incomplete requests: {reply:#?}");
        for request in reply.requests.iter().filter(|r| !r.complete) {
            assert!(!request.problems.is_empty(), "{context}: an incomplete request says why");
        }
    }
    for request in &reply.requests {
        assert!(request.span.slice(&case.text).is_some(), "{context}: span {:?} in bounds", request.span);
    }
}

/// The reply streamed in chunks of `size` bytes (cuts moved back to char boundaries).
fn streamed(parser: &mut dyn StreamParser, text: &str, size: usize) -> ParseOutcome {
    let mut events = Vec::new();
    for chunk in char_chunks(text, size) {
        parser.push_text(chunk, &mut events);
    }
    parser.finish(&mut events);
    collect(events)
}

fn collect(events: Vec<StreamEvent>) -> ParseOutcome {
    let mut collector = StreamCollector::new();
    collector.extend(events);
    collector.into_outcome()
}

#[test]
fn every_case_one_shot() {
    for case in &corpus() {
        check(case, &protocol(case).parse(&case.text), "one-shot");
    }
}

#[test]
fn every_case_streamed_in_chunks_of_every_size() {
    for case in &corpus() {
        let one_shot = protocol(case).parse(&case.text);
        for size in [1, 2, 3, 5, 8, 13, 64, case.text.len().max(1)] {
            let reply = streamed(&mut protocol(case).stream_parser(), &case.text, size);
            assert_eq!(reply, one_shot, "{}/{} in chunks of {size}", case.format, case.name);
        }
    }
}

/// Formats that write the same markup (`auto` detects the first one, or the one its
/// tools were offered in).
const SHARED_MARKUP: &[&[TextFormat]] = &[
    &[TextFormat::Hermes, TextFormat::Ernie45],
    &[TextFormat::Hunyuan, TextFormat::Jamba],
    &[TextFormat::Mistral, TextFormat::Xlam],
    &[TextFormat::Granite, TextFormat::Xlam],
    // The two GLM layouts are told apart by the line break after the name; a GLM-4.7
    // reply in the 4.5 layout reads the same either way.
    &[TextFormat::Glm45, TextFormat::Glm47, TextFormat::PoolsideV1],
];

fn shares_markup(a: TextFormat, b: TextFormat) -> bool {
    a == b || SHARED_MARKUP.iter().any(|group| group.contains(&a) && group.contains(&b))
}

/// Cases `auto` reads differently from the format, and why.
const AUTO_DIFFERS: &[(&str, &str)] = &[
    (
        "hunyuan/object_not_array",
        "a JSON object after `<tool_calls>` is MiniMax-M1's markup, which `auto` reads as a call; \
         Hunyuan A13B writes an array there and reads an object as a damaged call",
    ),
    (
        "hunyuan/text_before_two_calls",
        "Hunyuan A13B's `助手：` (\"Assistant:\") prefix at the start of a reply is framing only \
         to `hunyuan`; `auto` cannot take those words for markup in every reply",
    ),
];

#[test]
fn auto_detects_each_format_and_reads_the_same_calls() {
    for case in &corpus() {
        if AUTO_DIFFERS.iter().any(|(name, _)| *name == format!("{}/{}", case.format, case.name)) {
            continue;
        }
        // Offered the tools in the case's format, as the model table does for its model.
        let auto =
            AutoProtocol::new().with_options(options(case)).with_prompt_format(Detected::Format(case.format));
        let expected = case.expected["calls"].as_array().unwrap();
        let reply = auto.parse(&case.text);
        let detected = reply.state.dialect;
        if expected.is_empty() && case.expected.get("incomplete").is_none_or(|n| n == 0) {
            // Prose in this format (it may hold another format's markup, which `auto`
            // reads as that format's): nothing `auto` would run.
            assert!(reply.requests.iter().all(|r| !r.complete), "{}/{}: {reply:#?}", case.format, case.name);
            continue;
        }
        // Without a format of its own, `auto` finds the format or one sharing its markup.
        match AutoProtocol::detect(&case.text) {
            Some(Detected::Format(found)) => {
                assert!(shares_markup(found, case.format), "{}/{}: detected {found}", case.format, case.name)
            }
            other => panic!("{}/{}: detected {other:?}", case.format, case.name),
        }
        match detected {
            Some(Detected::Format(found)) if shares_markup(found, case.format) => {}
            other => panic!("{}/{}: read as {other:?}", case.format, case.name),
        }
        check(case, &reply, "auto");
        for size in [1, 7] {
            let streamed = streamed(&mut auto.stream_parser(), &case.text, size);
            assert_eq!(streamed, reply, "{}/{} auto in chunks of {size}", case.format, case.name);
        }
    }
}

#[test]
fn auto_reads_vcp_too() {
    let reply = "Listing.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」fs「末」,\npath:「始」src「末」\n<<<[END_TOOL_REQUEST]>>>";
    let parsed = AutoProtocol::new().parse(reply);
    assert_eq!(parsed.state.dialect, Some(Detected::Vcp));
    assert_eq!(parsed.requests[0].tool_name, "fs");
    assert_eq!(parsed.requests[0].args["path"], "src");
    assert_eq!(parsed.requests[0].span.slice(reply).unwrap().len(), reply.len() - "Listing.\n".len());
    assert_eq!(parsed.normal_text, "Listing.\n");
}

#[test]
fn special_tokens_split_across_chunks_are_held_back() {
    let text = "Hi <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|> bye";
    for size in 1..12 {
        let mut parser = protocol_of(TextFormat::KimiK2).stream_parser();
        let mut events = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let cut = size.min(rest.len());
            let (chunk, tail) = rest.split_at(cut);
            parser.push_text(chunk, &mut events);
            rest = tail;
        }
        parser.finish(&mut events);
        for event in &events {
            if let StreamEvent::Text { text, .. } = event {
                assert!(
                    !text.contains('<') && !text.contains('|'),
                    "a token leaked as text: {text:?} (chunks of {size})"
                );
            }
        }
    }
}

#[test]
fn each_call_is_reported_when_its_closing_token_arrives() {
    let first = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>a<｜tool▁sep｜>{}<｜tool▁call▁end｜>";
    let mut parser = protocol_of(TextFormat::DeepSeekV31).stream_parser();
    let mut events = Vec::new();
    parser.push_text(first, &mut events);
    let completed = |events: &[StreamEvent]| {
        events.iter().filter(|e| matches!(e, StreamEvent::RequestCompleted(_))).count()
    };
    assert_eq!(completed(&events), 1, "the first call is out before the section ends");
    parser.push_text("<｜tool▁call▁begin｜>b<｜tool▁sep｜>{\"x\": 1", &mut events);
    assert_eq!(completed(&events), 1);
    parser.push_text("}<｜tool▁call▁end｜>", &mut events);
    assert_eq!(completed(&events), 2);
}

#[test]
fn model_names_map_to_formats() {
    for (model, format) in [
        ("Qwen/Qwen3-8B", TextFormat::Hermes),
        ("NousResearch/Hermes-2-Pro-Llama-3-8B", TextFormat::Hermes),
        ("Qwen/Qwen3-Coder-480B-A35B-Instruct", TextFormat::Qwen3CoderXml),
        ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", TextFormat::Mistral),
        ("meta-llama/Llama-3.2-3B-Instruct", TextFormat::Pythonic),
        ("meta-llama/Llama-3.3-70B-Instruct", TextFormat::Llama3Json),
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", TextFormat::Pythonic),
        ("deepseek-ai/DeepSeek-R1-0528", TextFormat::DeepSeekV3),
        ("deepseek-ai/DeepSeek-V3.1-Terminus", TextFormat::DeepSeekV31),
        ("moonshotai/Kimi-K2-Instruct", TextFormat::KimiK2),
        ("zai-org/GLM-4.5-Air", TextFormat::Glm45),
        ("zai-org/GLM-4.7", TextFormat::Glm47),
        ("MiniMaxAI/MiniMax-M2", TextFormat::MinimaxM2),
        ("Qwen/Qwen3.5-397B-A17B", TextFormat::Qwen3CoderXml),
        ("mistralai/Ministral-8B-Instruct-2410", TextFormat::Mistral),
        ("unsloth/Devstral-Small-2505-GGUF", TextFormat::Mistral),
        ("moonshotai/Kimi_K2_Instruct", TextFormat::KimiK2),
        ("openai/gpt-oss-120b", TextFormat::Harmony),
        ("XiaomiMiMo/MiMo-V2-Flash", TextFormat::Qwen3CoderXml),
        ("stepfun-ai/Step-3.5-Flash", TextFormat::Qwen3CoderXml),
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B", TextFormat::Qwen3CoderXml),
        ("internlm/Intern-S1", TextFormat::Internlm),
        ("gpt-oss:20b", TextFormat::Harmony),
        ("deepseek-ai/DeepSeek-V3.2", TextFormat::DeepSeekV32),
        ("deepseek-ai/DeepSeek-V3.2-Exp", TextFormat::DeepSeekV31),
        ("CohereLabs/c4ai-command-r7b-12-2024", TextFormat::Cohere),
        ("CohereLabs/command-a-03-2025", TextFormat::Cohere),
        ("stepfun-ai/step3", TextFormat::Step3),
        ("moonshotai/Kimi-K3", TextFormat::KimiK3),
        ("ByteDance-Seed/Seed-OSS-36B-Instruct", TextFormat::SeedOss),
        ("ibm-granite/granite-3.1-8b-instruct", TextFormat::Granite),
        ("Salesforce/Llama-xLAM-2-8b-fc-r", TextFormat::Xlam),
        ("microsoft/Phi-4-mini-instruct", TextFormat::Phi4Mini),
        ("tencent/Hunyuan-A13B-Instruct", TextFormat::Hunyuan),
        ("internlm/internlm2_5-7b-chat", TextFormat::Internlm),
        ("google/functiongemma-270m-it", TextFormat::FunctionGemma),
        ("google/gemma-4-31b-it", TextFormat::Gemma4),
        ("ai21labs/AI21-Jamba-Mini-1.7", TextFormat::Jamba),
        ("allenai/Olmo-3-7B-Instruct", TextFormat::Olmo3),
        ("meituan-longcat/LongCat-Flash-Chat", TextFormat::Longcat),
        ("baidu/ERNIE-4.5-21B-A3B-Thinking", TextFormat::Ernie45),
        ("ai-sage/GigaChat3-10B-A1.8B", TextFormat::Gigachat3),
        ("MiniMaxAI/MiniMax-M1-80k", TextFormat::MinimaxM1),
        ("sbintuitions/sarashina2.2-3b-instruct-v0.1", TextFormat::Sarashina),
        ("MiniMaxAI/MiniMax-M3", TextFormat::MinimaxM3),
        ("deepseek-ai/DeepSeek-V4-Flash", TextFormat::DeepSeekV4),
        ("tencent/Hy3-preview", TextFormat::HunyuanV3),
        ("LiquidAI/LFM2.5-1.2B-Instruct", TextFormat::Lfm2),
        ("swiss-ai/Apertus-8B-Instruct-2509", TextFormat::Apertus),
        ("ai-sage/GigaChat3.5-432B-A28B", TextFormat::Gigachat35),
        ("poolside/Laguna-XS.2", TextFormat::PoolsideV1),
        ("openbmb/MiniCPM4.1-8B", TextFormat::Minicpm5),
    ] {
        assert_eq!(TextFormat::for_model(model), Some(format), "{model}");
    }
    for format in TextFormat::ALL {
        assert_eq!(TextFormat::from_id(format.id()), Some(format));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any case, with any prose around it, in any chunking: the streamed reply equals
    /// the one-shot one.
    #[test]
    fn chunking_never_changes_the_reply(
        case in 0usize..1000,
        before in "[ a-z<>\\[\\]{}|\n]{0,12}",
        after in "[ a-z<>\\[\\]{}|\n]{0,12}",
        sizes in proptest::collection::vec(1usize..9, 1..6),
    ) {
        let cases = corpus();
        let case = &cases[case % cases.len()];
        let text = format!("{before}{}{after}", case.text);
        let one_shot = protocol(case).parse(&text);
        let mut parser = protocol(case).stream_parser();
        let mut events = Vec::new();
        let mut rest = text.as_str();
        let mut i = 0;
        while !rest.is_empty() {
            let mut cut = sizes[i % sizes.len()].min(rest.len());
            while !rest.is_char_boundary(cut) { cut += 1; }
            let (chunk, tail) = rest.split_at(cut);
            parser.push_text(chunk, &mut events);
            rest = tail;
            i += 1;
        }
        parser.finish(&mut events);
        prop_assert_eq!(collect(events), one_shot);
    }

    /// Reasoning tags of every form dropped anywhere into any case (inside calls too),
    /// in any chunking: the streamed reply equals the one-shot one, for the format and
    /// for `auto`, and no call starts inside hidden text.
    #[test]
    fn reasoning_anywhere_streams_as_it_parses(
        case in 0usize..1000,
        tags in proptest::collection::vec((0usize..10_000, 0usize..REASONING_TAGS.len()), 0..4),
        size in 1usize..12,
    ) {
        let cases = corpus();
        let case = &cases[case % cases.len()];
        let mut text = case.text.clone();
        for (at, tag) in tags {
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) { at += 1; }
            text.insert_str(at, REASONING_TAGS[tag]);
        }
        let one_shot = protocol(case).parse(&text);
        prop_assert_eq!(streamed(&mut protocol(case).stream_parser(), &text, size), one_shot.clone());
        // `hidden_spans` knows the tags alone: where the reply also holds its format's
        // own reasoning markup (Seed-OSS's `</seed:think>` closes a `<think>` by depth),
        // the format's reading is the one to trust, and the next property covers it.
        let own_markup = FORMAT_TAGS.iter().any(|tag| text.contains(tag));
        let hidden = if own_markup { Vec::new() } else { tool_calling::protocol::reasoning::hidden_spans(&text) };
        for request in &one_shot.requests {
            prop_assert!(hidden.iter().all(|h| request.span.end <= h.start || request.span.start >= h.end));
        }
        let auto = AutoProtocol::new()
            .with_options(TextFormatOptions::default().request_ids(RequestIdStyle::Sequential));
        let whole = auto.parse(&text);
        prop_assert_eq!(streamed(&mut auto.stream_parser(), &text, size), whole);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Reasoning markup of every form (the tags, every format's own, near misses)
    /// dropped anywhere into any case, read with the reply starting inside reasoning or
    /// not, in any chunking: the streamed reply equals the one-shot one, for the
    /// format and for `auto`.
    #[test]
    fn format_reasoning_and_its_start_stream_as_they_parse(
        case in 0usize..1000,
        tags in proptest::collection::vec((0usize..10_000, 0usize..REASONING_TAGS.len() + FORMAT_TAGS.len()), 0..4),
        size in 1usize..12,
        starts in any::<bool>(),
    ) {
        let cases = corpus();
        let case = &cases[case % cases.len()];
        let mut text = case.text.clone();
        for (at, tag) in tags {
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) { at += 1; }
            let tag = REASONING_TAGS.get(tag).or_else(|| FORMAT_TAGS.get(tag - REASONING_TAGS.len())).unwrap();
            text.insert_str(at, tag);
        }
        let options = options(case).starts_in_reasoning(starts);
        let format = TextFormatProtocol::new(case.format).with_options(options);
        let one_shot = format.parse(&text);
        prop_assert_eq!(streamed(&mut format.stream_parser(), &text, size), one_shot);
        let auto = AutoProtocol::new().with_options(options);
        let whole = auto.parse(&text);
        prop_assert_eq!(streamed(&mut auto.stream_parser(), &text, size), whole);
    }
}

/// The formats' own reasoning markup (and parts of it) for the property tests.
const FORMAT_TAGS: [&str; 14] = [
    "<|channel>",
    "<channel|>",
    "<seed:think>",
    "</seed:think>",
    "</mm:think>",
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|content_thinking|>",
    "<|end_message|>",
    "<|channel|>analysis<|message|>",
    "<|end|>",
    "<|open|>think<|sep|>",
    "<|close|>think<|sep|>",
    "<|close|>",
];

/// Reasoning tags (and near misses) for the property tests.
const REASONING_TAGS: [&str; 10] = [
    "<think>",
    "</think>",
    "<THINKING mode=\"x\">",
    "</Thinking>",
    "<think/>",
    "< / think >",
    "<thinker>",
    "<think",
    "plan 「末」 <tool_call>",
    "</think><think>",
];

/// `max_reply_bytes` for every format: at the reply's length nothing changes; below it the
/// reply is cut at a character boundary with a `limit_exceeded` diagnostic, nothing past
/// the limit is read, and streamed in chunks it gives exactly the one-shot parse.
#[test]
fn reply_length_limit_at_the_limit_and_past_it() {
    for case in &corpus() {
        let limited = |max: usize| {
            TextFormatProtocol::new(case.format).with_options(options(case).max_reply_bytes(max))
        };
        let limit_diagnostics = |reply: &ParseOutcome| {
            reply
                .diagnostics
                .iter()
                .filter(|d| d.kind == tool_calling::protocol::DiagnosticKind::LimitExceeded)
                .count()
        };
        let len = case.text.len();
        let at = limited(len).parse(&case.text);
        assert_eq!(at, protocol(case).parse(&case.text), "{}/{} at the limit", case.format, case.name);
        assert_eq!(limit_diagnostics(&at), 0);
        // Cuts spread over the reply (every one for short replies).
        let step = (len / 40).max(1);
        for max in (0..len).step_by(step) {
            let one_shot = limited(max).parse(&case.text);
            assert_eq!(limit_diagnostics(&one_shot), 1, "{}/{} limit {max}", case.format, case.name);
            assert!(
                one_shot.requests.iter().all(|r| r.span.end <= max),
                "{}/{} limit {max}",
                case.format,
                case.name
            );
            for size in [1, 7, 64] {
                let reply = streamed(&mut limited(max).stream_parser(), &case.text, size);
                assert_eq!(reply, one_shot, "{}/{} limit {max}, chunks of {size}", case.format, case.name);
            }
        }
    }
    assert_eq!(TextFormatOptions::default().max_reply_bytes, 64 << 20);
}
