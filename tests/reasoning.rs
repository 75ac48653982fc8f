//! One reasoning rule for every text protocol: the same replies through VCP, each
//! open-model format and `auto`, one-shot and streamed in chunks of several sizes. Each
//! protocol hides exactly what `protocol::reasoning` says (its normal text is the reply
//! with that cut out), reports reasoning never closed, and never returns a call drafted
//! inside reasoning, whatever its syntax.

use tool_calling::Span;
use tool_calling::protocol::DiagnosticKind;
use tool_calling::protocol::ParseOutcome;
use tool_calling::protocol::reasoning;
use tool_calling::protocol::textfmt::{AutoProtocol, TextFormat, TextFormatProtocol};
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::protocol::{StreamCollector, StreamEvent, StreamParser};

#[path = "support/chunks.rs"]
mod chunks;
use chunks::char_chunks;

/// A call of `name` in the syntax of `protocol` (`vcp` or a format id).
fn call(protocol: &str, name: &str) -> String {
    match protocol {
        "vcp" => format!("<<<[TOOL_REQUEST]>>>\ntool_name:「始」{name}「末」\n<<<[END_TOOL_REQUEST]>>>"),
        "hermes" => format!(r#"<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>"#),
        "qwen3_coder_xml" => format!("<tool_call>\n<function={name}>\n</function>\n</tool_call>"),
        "mistral" => format!(r#"[TOOL_CALLS][{{"name": "{name}", "arguments": {{}}}}]"#),
        "llama3_json" => format!(r#"<|python_tag|>{{"name": "{name}", "parameters": {{}}}}"#),
        "pythonic" => format!("[{name}(path=\"x\")]"),
        "deepseek_v3" => format!(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{{}}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        "deepseek_v31" => format!(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{{}}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        "kimi_k2" => format!(
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>{{}}<|tool_call_end|><|tool_calls_section_end|>"
        ),
        "glm45" => format!("<tool_call>{name}\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"),
        "glm47" => format!("<tool_call>{name}<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>"),
        "minimax_m2" => format!(
            "<minimax:tool_call><invoke name=\"{name}\"><parameter name=\"a\">1</parameter></invoke></minimax:tool_call>"
        ),
        other => {
            let format = TextFormat::from_id(other).unwrap_or_else(|| panic!("no syntax for {other}"));
            let args = serde_json::Map::new();
            TextFormatProtocol::new(format)
                .format_call(name, &args)
                .unwrap_or_else(|| panic!("{other} writes a call of {name}"))
        }
    }
}

fn protocol_ids() -> Vec<&'static str> {
    std::iter::once("vcp").chain(TextFormat::ALL.map(TextFormat::id)).collect()
}

/// A draft in every syntax, as a model might consider calls while reasoning.
fn drafts() -> String {
    protocol_ids().iter().map(|id| format!("Maybe {}?\n", call(id, "draft"))).collect()
}

/// The replies: reasoning, with drafts in every syntax inside, in each form of tag.
fn replies() -> Vec<(&'static str, String)> {
    let d = drafts();
    vec![
        ("plain", format!("Before. <think>{d}</think> After.")),
        ("upper case", format!("Before. <THINK>{d}</THINK> After.")),
        ("mixed case and attributes", format!("Before. <Thinking mode=\"deep\">{d}</tHiNk> After.")),
        ("spaces in the tags", format!("Before. < think >{d}< / thinking > After.")),
        ("nested", format!("Before. <think>a <thinking>{d}</think> still {d}</thinking> After.")),
        ("two blocks", format!("<think>{d}</think>Between.<thinking>{d}</thinking>")),
        ("unpaired closing tag", "Before.</think> After. <think/>Done.".to_string()),
        ("self-closing", "A<think/>B<thinking />C".to_string()),
        ("unclosed", format!("Before. <think>{d}")),
        ("unclosed nested", format!("Before. <think>a<think>{d}</think>{d}")),
        ("not a tag", "Before. <thinker> and <think_x> are prose. After.".to_string()),
    ]
}

/// What a run of one protocol gave: requests, diagnostics and normal text.
struct Read {
    outcome: ParseOutcome,
    normal_text: String,
    started: usize,
}

fn collect(events: Vec<StreamEvent>) -> Read {
    let started = events.iter().filter(|e| matches!(e, StreamEvent::RequestStarted { .. })).count();
    let mut collector = StreamCollector::new();
    collector.extend(events);
    let normal_text = collector.normal_text().to_string();
    Read { outcome: collector.into_outcome(), normal_text, started }
}

fn stream(parser: &mut dyn StreamParser, text: &str, size: usize) -> Read {
    let mut events = Vec::new();
    for chunk in char_chunks(text, size) {
        parser.push_text(chunk, &mut events);
    }
    parser.finish(&mut events);
    collect(events)
}

/// Every way to read `text` with the protocol `id` (`vcp`, a format id or `auto`):
/// one-shot, and streamed in chunks of several sizes.
fn reads(id: &str, text: &str) -> Vec<(String, Read)> {
    let mut reads = Vec::new();
    let parser = || -> Box<dyn StreamParser> {
        match id {
            "vcp" => Box::new(VcpProtocol::default().stream_parser()),
            "auto" => Box::new(AutoProtocol::new().stream_parser()),
            format => Box::new(TextFormatProtocol::new(TextFormat::from_id(format).unwrap()).stream_parser()),
        }
    };
    let outcome = match id {
        "vcp" => VcpProtocol::default().parse(text),
        "auto" => AutoProtocol::new().parse(text),
        format => TextFormatProtocol::new(TextFormat::from_id(format).unwrap()).parse(text),
    };
    let normal_text = outcome.normal_text.clone();
    reads.push(("one-shot".to_string(), Read { outcome, normal_text, started: 0 }));
    for size in [1, 2, 3, 5, 8, 13, 64] {
        reads.push((format!("chunks of {size}"), stream(parser().as_mut(), text, size)));
    }
    reads
}

fn all_protocols() -> Vec<&'static str> {
    protocol_ids().into_iter().chain(["auto"]).collect()
}

fn unclosed(outcome: &ParseOutcome) -> Vec<Span> {
    outcome
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::UnclosedReasoning)
        .map(|d| d.span)
        .collect()
}

#[test]
fn every_protocol_hides_the_same_text() {
    for (name, reply) in replies() {
        let visible = reasoning::cut(&reply);
        let hidden = reasoning::hidden_spans(&reply);
        assert!(!visible.contains("draft"), "{name}: the rule hides every draft");
        let outermost_open = match name {
            "unclosed" | "unclosed nested" => {
                let at = reply.find("<think>").unwrap();
                Some(Span::new(at, at + "<think>".len()))
            }
            _ => None,
        };
        for id in all_protocols() {
            for (how, read) in reads(id, &reply) {
                let context = format!("{name}, {id}, {how}");
                assert_eq!(
                    read.normal_text, visible,
                    "{context}: normal text is the reply without reasoning"
                );
                assert!(read.outcome.requests.is_empty(), "{context}: {:?}", read.outcome.requests);
                assert_eq!(read.started, 0, "{context}: no call even began");
                assert_eq!(unclosed(&read.outcome), Vec::from_iter(outermost_open), "{context}");
            }
        }
        // VCP reports the spans it hides: they are the rule's.
        let vcp: Vec<Span> =
            VcpProtocol::default().hidden_spans(&reply).into_iter().map(|(span, _)| span).collect();
        assert_eq!(vcp, hidden, "{name}");
    }
}

/// A real call after the reasoning runs; the drafts inside it never do.
#[test]
fn only_the_call_after_reasoning_is_a_call() {
    let d = drafts();
    for id in protocol_ids() {
        let real = call(id, "real");
        let replies = [
            format!("<think>{d}</think>\n{real}"),
            format!("<THINKING>{d}</THINKING>\n{real}"),
            format!("<think>a<think>{d}</think>{d}</think>\n{real}"),
            format!("</think><think/>{real}"),
        ];
        for reply in &replies {
            for protocol in [id, "auto"] {
                for (how, read) in reads(protocol, reply) {
                    let context = format!("{id} through {protocol}, {how}: {reply:?}");
                    let names: Vec<&str> =
                        read.outcome.requests.iter().map(|r| r.tool_name.as_str()).collect();
                    assert_eq!(names, ["real"], "{context}");
                    assert!(read.outcome.requests[0].complete, "{context}");
                    assert!(!read.normal_text.contains("draft"), "{context}");
                }
            }
        }
        // Reasoning never closed before the call: the call is hidden with the rest.
        let reply = format!("<think>{d}\n{real}");
        for protocol in [id, "auto"] {
            for (how, read) in reads(protocol, &reply) {
                assert!(read.outcome.requests.is_empty(), "{id} through {protocol}, {how}");
                assert_eq!(unclosed(&read.outcome).len(), 1, "{id} through {protocol}, {how}");
            }
        }
    }
}

/// Reasoning that begins inside a call ends it: the call is reported incomplete (never
/// run), and what follows the reasoning is read again from prose.
#[test]
fn reasoning_inside_a_call_ends_it() {
    // (VCP reads a break inside a value as nothing, between a key and its value as white
    // space: its own grammar, in docs/vcp.md.)
    let mut interrupted = Vec::new();
    for id in TextFormat::ALL.map(TextFormat::id) {
        let real = call(id, "real");
        // Cut the call in the middle and put reasoning there.
        let mut half = real.len() / 2;
        while !real.is_char_boundary(half) {
            half += 1;
        }
        let reply = format!("{}<think>{}</think>", &real[..half], &real[half..]);
        for protocol in [id, "auto"] {
            for (how, read) in reads(protocol, &reply) {
                let context = format!("{id} through {protocol}, {how}: {reply:?}");
                for request in &read.outcome.requests {
                    assert!(!request.complete, "{context}: {request:?}");
                    assert!(
                        request
                            .problems
                            .iter()
                            .any(|p| p.starts_with("reasoning began before this call was closed")),
                        "{context}: {:?}",
                        request.problems
                    );
                }
                assert!(!read.normal_text.contains("</think>"), "{context}");
                if !read.outcome.requests.is_empty() && !interrupted.contains(&id) {
                    interrupted.push(id);
                }
            }
        }
    }
    // Every format reports the interrupted call (incomplete), none drops it silently.
    assert_eq!(interrupted, TextFormat::ALL.map(TextFormat::id));
}
