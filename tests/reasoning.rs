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
use tool_calling::protocol::{StreamCollector, StreamEvent, StreamParser, ToolCallingProtocol};

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
                .write_call(name, &args)
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

/// The protocol `id` (`vcp`, a format id or `auto`) with reasoning hidden (`skip`) or
/// read as text, and the reply starting inside reasoning or not.
fn protocol_with(id: &str, skip: bool, starts: bool) -> Box<dyn tool_calling::protocol::ToolCallingProtocol> {
    use tool_calling::protocol::RequestIdStyle::Sequential;
    use tool_calling::protocol::textfmt::TextFormatOptions;
    use tool_calling::protocol::vcp::VcpOptions;
    let options =
        TextFormatOptions::default().skip_reasoning(skip).starts_in_reasoning(starts).request_ids(Sequential);
    let vcp = VcpOptions::default().keep_reasoning(!skip).starts_in_reasoning(starts).request_ids(Sequential);
    match id {
        "vcp" => Box::new(VcpProtocol::new(vcp)),
        "auto" => Box::new(AutoProtocol::new().with_options(options).with_vcp(VcpProtocol::new(vcp))),
        format => {
            Box::new(TextFormatProtocol::new(TextFormat::from_id(format).unwrap()).with_options(options))
        }
    }
}

/// `text` read one-shot and streamed in chunks of several sizes with `protocol`: every
/// read gives the same outcome, which is returned.
fn read_alike(
    protocol: &dyn tool_calling::protocol::ToolCallingProtocol,
    text: &str,
    context: &str,
) -> ParseOutcome {
    let whole = protocol.parse_turn(&tool_calling::model::AssistantTurn::from_text(text));
    for size in [1, 2, 3, 7, 64] {
        let mut parser = protocol.stream_parser();
        let read = stream(parser.as_mut(), text, size);
        assert_eq!(read.outcome, whole, "{context}: streamed in chunks of {size}");
    }
    whole
}

fn names(outcome: &ParseOutcome) -> Vec<&str> {
    outcome.requests.iter().filter(|r| r.complete).map(|r| r.tool_name.as_str()).collect()
}

/// The formats that write reasoning with markup of their own: its opening and closing
/// markup, and a draft of a call inside it (in the format's syntax, where its structure
/// lets a call stand inside reasoning at all).
fn own_reasoning() -> Vec<(&'static str, &'static str, &'static str, String)> {
    vec![
        ("seed_oss", "<seed:think>", "</seed:think>", call("seed_oss", "draft")),
        ("minimax_m3", "<mm:think>", "</mm:think>", call("minimax_m3", "draft")),
        ("cohere", "<|START_THINKING|>", "<|END_THINKING|>", call("cohere", "draft")),
        ("kimi_k3", "<|open|>think<|sep|>", "<|close|>think<|sep|>", call("kimi_k3", "draft")),
        // A frame's reasoning ends where a new frame or message begins: a draft inside
        // it is a payload without its frame.
        (
            "inkling",
            "<|message_model|><|content_thinking|>",
            "<|end_message|>",
            "<|content_invoke_tool_json|>{\"name\": \"draft\", \"args\": {}}".to_string(),
        ),
        ("harmony", "<|channel|>analysis<|message|>", "<|end|>", "to=functions.draft {}".to_string()),
        // A call block ends Gemma 4's thought channel: a plan is all it can hold.
        ("gemma4", "<|channel>", "<channel|>", "call:draft{}".to_string()),
    ]
}

/// Every format's own reasoning follows the options: hidden (a call in it never read)
/// with `skip_reasoning`, read as text without it, never closed it hides the rest with a
/// diagnostic, and it ends the reasoning a reply starts in; one-shot and streamed alike,
/// through the format and through `auto`.
#[test]
fn each_formats_own_reasoning_follows_the_options() {
    for (id, open, close, draft) in own_reasoning() {
        let real = call(id, "real");
        let reply = format!("Before. {open}Maybe {draft} here.{close}After. {real}");
        for protocol in [id, "auto"] {
            let context = format!("{id} through {protocol}: {reply:?}");
            let hidden = read_alike(protocol_with(protocol, true, false).as_ref(), &reply, &context);
            assert_eq!(names(&hidden), ["real"], "{context}: {hidden:#?}");
            assert!(!hidden.normal_text.contains("Maybe"), "{context}: {:?}", hidden.normal_text);
            assert!(
                hidden.normal_text.contains("Before.") && hidden.normal_text.contains("After."),
                "{context}"
            );
            assert!(unclosed(&hidden).is_empty(), "{context}");

            let shown = read_alike(protocol_with(protocol, false, false).as_ref(), &reply, &context);
            assert!(shown.normal_text.contains("Maybe"), "{context}: reasoning read as text: {shown:#?}");
            if !matches!(id, "harmony" | "gemma4") {
                assert_eq!(names(&shown), ["draft", "real"], "{context}: the draft is read as a call");
            }

            // (Without a new frame or message after it: that would end a frame.)
            let cut = format!("Before. {open}Maybe {draft} here. And more.");
            let unclosed_read = read_alike(protocol_with(protocol, true, false).as_ref(), &cut, &context);
            assert!(names(&unclosed_read).is_empty(), "{context}: {unclosed_read:#?}");
            assert!(!unclosed_read.normal_text.contains("Maybe"), "{context}");
            assert_eq!(unclosed(&unclosed_read).len(), 1, "{context}: {unclosed_read:#?}");

            // The reply starts inside reasoning the prompt opened: the format's closing
            // markup ends it. (A draft in another syntax where the format's own would
            // end that reasoning by its structure: see the next test.)
            let draft = if matches!(id, "kimi_k3" | "inkling" | "harmony" | "gemma4") {
                call("hermes", "draft")
            } else {
                draft.clone()
            };
            let started = format!("Maybe {draft} here.{close}After. {real}");
            let read = read_alike(protocol_with(protocol, true, true).as_ref(), &started, &context);
            assert_eq!(names(&read), ["real"], "{context}: {read:#?}");
            assert!(!read.normal_text.contains("Maybe") && read.normal_text.contains("After."), "{context}");
        }
    }
}

/// The option "the reply starts inside reasoning", on every text protocol: the text up
/// to the first closing tag is hidden (a call drafted there never runs), a reply that
/// opens reasoning of its own did not start in it, and a reply with no tag at all is
/// reasoning never closed; one-shot and streamed alike.
#[test]
fn every_protocol_reads_a_reply_that_starts_in_reasoning() {
    for id in all_protocols() {
        let syntax = if id == "auto" { "hermes" } else { id };
        let real = call(syntax, "real");
        // A draft in the protocol's own syntax, but where that syntax ends reasoning by
        // its structure (a Kimi K3 channel marker shows the prompt opened `response`; an
        // Inkling frame or a harmony message begins anew): then another syntax.
        let draft = match syntax {
            "kimi_k3" | "inkling" | "harmony" | "gemma4" => call("hermes", "draft"),
            other => call(other, "draft"),
        };
        let starts = protocol_with(id, true, true);
        let context = |what: &str| format!("{id}, {what}");

        // (The call right after the reasoning: some formats read a bare call only at the
        // start of the reply, which hidden text does not count in.)
        let reply = format!("Planning: {draft} maybe.</think>{real}");
        let read = read_alike(starts.as_ref(), &reply, &context("closed"));
        assert_eq!(names(&read), ["real"], "{}: {read:#?}", context("closed"));
        assert!(!read.normal_text.contains("Planning"), "{}", context("closed"));
        assert!(unclosed(&read).is_empty(), "{}", context("closed"));

        let own = format!("<think>{draft}</think>{real}");
        let read = read_alike(starts.as_ref(), &own, &context("own reasoning"));
        assert_eq!(names(&read), ["real"], "{}: {read:#?}", context("own reasoning"));
        let own = "Hello.<think>x</think> Bye.";
        let read = read_alike(starts.as_ref(), own, &context("own reasoning"));
        assert_eq!(read.normal_text, "Hello. Bye.", "{}", context("own reasoning"));

        let never = format!("Planning: {draft} and more.");
        let read = read_alike(starts.as_ref(), &never, &context("never closed"));
        assert!(read.requests.is_empty(), "{}: {read:#?}", context("never closed"));
        assert_eq!(read.normal_text, "", "{}", context("never closed"));
        assert_eq!(unclosed(&read), [Span::new(0, 0)], "{}", context("never closed"));

        // Without the option (or with reasoning read as text) the same replies read as
        // before.
        let plain = real.clone();
        let plain = read_alike(protocol_with(id, true, false).as_ref(), &plain, &context("option off"));
        assert!(names(&plain).contains(&"real"), "{}: {plain:#?}", context("option off"));
        let text = read_alike(protocol_with(id, false, true).as_ref(), &reply, &context("reasoning as text"));
        assert!(text.normal_text.contains("Planning"), "{}: {text:#?}", context("reasoning as text"));
    }
}

/// Where a format's structure ends reasoning (Kimi K3's other channel markers, a new
/// Inkling frame, a new harmony message, a Gemma 4 call block), a reply that the option says starts in
/// reasoning is read from there: K3's markers show the prompt opened `response` (the
/// text before them is the answer), a new frame or message ends the reasoning (the text
/// before it stays hidden).
#[test]
fn a_formats_structure_decides_where_the_reasoning_a_reply_starts_in_ends() {
    for (id, before_visible) in [("kimi_k3", true), ("inkling", false), ("harmony", false), ("gemma4", false)]
    {
        let real = call(id, "real");
        let reply = format!("Planning: something.{real}");
        for protocol in [id, "auto"] {
            let context = format!("{id} through {protocol}");
            let read = read_alike(protocol_with(protocol, true, true).as_ref(), &reply, &context);
            assert_eq!(names(&read), ["real"], "{context}: {read:#?}");
            assert_eq!(read.normal_text.contains("Planning"), before_visible, "{context}: {read:#?}");
            assert!(unclosed(&read).is_empty(), "{context}");
        }
    }
}

/// A long reply that never says where the reasoning the prompt opened ends is held back
/// whole while it streams: reading it stays linear (a push does not rescan what came
/// before), and all of it is hidden in the end.
#[test]
fn a_reply_held_back_in_reasoning_streams_in_linear_time() {
    let reply = "thinking <b>about</b> it, < and > and [x] { \"k\": 1 }\n".repeat(6_000);
    for id in ["vcp", "hermes", "kimi_k3", "harmony", "auto"] {
        let protocol = protocol_with(id, true, true);
        let started = std::time::Instant::now();
        let mut parser = protocol.stream_parser();
        let read = stream(parser.as_mut(), &reply, 5);
        assert!(read.outcome.requests.is_empty() && read.normal_text.is_empty(), "{id}");
        assert_eq!(unclosed(&read.outcome), [Span::new(0, 0)], "{id}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{id}: {:?}", started.elapsed());
    }
}
