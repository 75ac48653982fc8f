//! Stream parsers write to an `EventSink`: a sink that borrows the prose
//! (`EventSink::text`) hears exactly what a `Vec<StreamEvent>` gets, in every chunking,
//! for every text protocol and the paths a push of prose can take (prose read at once,
//! text held back, reasoning, call regions, calls of another protocol for `auto`).

use tool_calling::Span;
use tool_calling::model::AssistantTurn;
use tool_calling::protocol::textfmt::{AutoProtocol, TextFormat, TextFormatOptions, TextFormatProtocol};
use tool_calling::protocol::vcp::{VcpOptions, VcpProtocol};
use tool_calling::protocol::{
    EventSink, RequestIdStyle, StreamCollector, StreamEvent, StreamParser, ToolCallingProtocol,
};

#[path = "support/chunks.rs"]
mod chunks;
use chunks::char_chunks;

/// Keeps every event, prose as it was lent.
#[derive(Default)]
struct Lending {
    events: Vec<StreamEvent>,
}

impl EventSink for Lending {
    fn event(&mut self, event: StreamEvent) {
        assert!(!matches!(event, StreamEvent::Text { .. }), "prose comes through text()");
        self.events.push(event);
    }

    fn text(&mut self, text: &str, span: Span) {
        assert_eq!(span.end - span.start, text.len(), "a piece of prose and its span agree");
        self.events.push(StreamEvent::Text { text: text.to_string(), span });
    }
}

const VCP_REPLIES: &[&str] = &[
    "Plain prose, with no markup at all, written a few bytes at a time.",
    "Let me check.\n<<<[TOOL_REQUEST]>>>\ntool_name:「始」clock「末」\n<<<[END_TOOL_REQUEST]>>>\nDone, <b>bold</b> < 3.",
    "<think>first I think</think>Then I speak: a < b, and `<<<[TOOL_REQUEST]>>>` is an example.",
    "Before <thinking>hidden <not a tag> text</thinking> after, then <<<[TOOL_REQUEST]>>>\ntool_name:「始」a「末」\ncity:「始」Paris「末」\n<<<[END_TOOL_REQUEST]>>> and the end.",
    "Cut off: <<<[TOOL_REQUEST]>>>\ntool_name:「始」a「末」\nkey:「始」never closed",
];

const HERMES_REPLIES: &[&str] = &[
    "Plain prose, with no markup at all, written a few bytes at a time.",
    "I will call it.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"note\": \"a < b }\"}}\n</tool_call>\nAnd then <b>some</b> prose.",
    "<think>plan the call</think><tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}</tool_call>",
    "<tool_call>not json at all</tool_call> then prose <tool_call>{\"name\": \"cut\", \"arguments\": {\"x\": \"never",
    "Prose <tool_call>{\"name\": \"t\", <think>reasoning inside</think>\"arguments\": {}}</tool_call> after.",
];

/// The events of `text` streamed to `sink` in chunks of `size`.
fn stream(parser: &mut dyn StreamParser, text: &str, size: usize, sink: &mut dyn EventSink) {
    for chunk in char_chunks(text, size) {
        parser.push_text(chunk, sink);
    }
    parser.finish(sink);
}

fn check(name: &str, protocol: &dyn ToolCallingProtocol, text: &str) {
    let one_shot = protocol.parse_turn(&AssistantTurn::from_text(text));
    for size in 1..=9 {
        let mut owned = Vec::new();
        stream(&mut *protocol.stream_parser(), text, size, &mut owned);
        let mut lending = Lending::default();
        stream(&mut *protocol.stream_parser(), text, size, &mut lending);
        assert_eq!(lending.events, owned, "{name}: {text:?} in chunks of {size}");
        // A collector used as the sink (it borrows the prose) gives the one-shot reply.
        let mut collector = StreamCollector::new();
        stream(&mut *protocol.stream_parser(), text, size, &mut collector);
        assert!(collector.into_outcome() == one_shot, "{name}: {text:?} in chunks of {size}");
    }
}

#[test]
fn a_lending_sink_hears_what_a_vector_gets_from_every_text_protocol() {
    let style = RequestIdStyle::Sequential;
    let vcp = VcpProtocol::new(VcpOptions::default().request_ids(style));
    let options = TextFormatOptions::default().request_ids(style);
    let hermes = TextFormatProtocol::new(TextFormat::Hermes).with_options(options);
    let auto = AutoProtocol::new().with_vcp(vcp.clone()).with_options(options);
    for text in VCP_REPLIES {
        check("vcp", &vcp, text);
        check("auto", &auto, text);
    }
    for text in HERMES_REPLIES {
        check("hermes", &hermes, text);
        check("auto", &auto, text);
    }
}

#[test]
fn prose_after_decided_prose_is_reported_at_once() {
    let style = RequestIdStyle::Sequential;
    let protocols: [(&str, Box<dyn ToolCallingProtocol>); 3] = [
        ("vcp", Box::new(VcpProtocol::new(VcpOptions::default().request_ids(style)))),
        ("hermes", Box::new(TextFormatProtocol::new(TextFormat::Hermes))),
        ("auto", Box::new(AutoProtocol::new())),
    ];
    for (name, protocol) in protocols {
        let mut parser = protocol.stream_parser();
        let mut events = Lending::default();
        parser.push_text("Hello there. ", &mut events);
        events.events.clear();
        // No byte that could begin markup: the push's prose comes with it, whole, with
        // its offsets in the reply.
        parser.push_text("abcd", &mut events);
        assert_eq!(
            events.events,
            vec![StreamEvent::Text { text: "abcd".into(), span: Span::new(13, 17) }],
            "{name}"
        );
    }
}
