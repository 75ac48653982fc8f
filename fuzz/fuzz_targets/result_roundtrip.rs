//! Fuzz target: results written by every protocol, then read back as the model would
//! echo them.
//!
//! Input layout: the first byte picks the protocol (its value modulo 35: 0–7 VCP under
//! the option bits as `vcp_parse` reads them, 8–18 the open-model formats in
//! `TextFormat::ALL` order, 19–30 `auto` after it has read a call in VCP (19) or in each
//! format (20–30), 31–34 the native wire formats OpenAI Chat, OpenAI Responses,
//! Anthropic, Gemini); the second byte's bits say which results are errors; the rest,
//! cut to its longest valid UTF-8 prefix and split at U+001F into at most eight parts,
//! is the results' text (untrusted tool output and error messages).
//!
//! Checks, besides "never panics":
//! - text protocols: the echo of the result messages, alone, after prose and twice,
//!   parses to no request at all;
//! - VCP: one `<<<[TOOL_RESULT]>>>`, `<<<[END_TOOL_RESULT]>>>` and `「末ESCAPE」` per
//!   result, so no result closes its block early;
//! - native formats: the wire messages survive serialisation, have the same shape as for
//!   harmless results, and carry each text whole.
//!
//! Run from the repository root:
//! `cd fuzz && cargo +nightly fuzz run result_roundtrip corpus/result_roundtrip seeds/result_roundtrip -- -dict=result_roundtrip.dict`

#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_calling::model::{AssistantTurn, Message};
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::TurnState;
use tool_calling::protocol::native::NativeProtocol;
use tool_calling::protocol::textfmt::{AutoProtocol, TextFormat, TextFormatProtocol};
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::providers::{Provider, WireFormat};
use tool_calling::{ErrorKind, ToolExecutionResult};

/// A call `auto` reads, in VCP and then in each format of `TextFormat::ALL`, in order.
const CALLS: [&str; 12] = [
    "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」\n<<<[END_TOOL_REQUEST]>>>",
    "<tool_call>{\"name\": \"calc_add\", \"arguments\": {}}</tool_call>",
    "<tool_call>\n<function=calc_add>\n</function>\n</tool_call>",
    "[TOOL_CALLS] [{\"name\": \"calc_add\", \"arguments\": {}}]",
    "<|python_tag|>{\"name\": \"calc_add\", \"parameters\": {}}",
    "[calc_add(a=1)]",
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>calc_add\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>calc_add<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.calc_add:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
    "<tool_call>calc_add\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
    "<tool_call>calc_add<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
    "<minimax:tool_call>\n<invoke name=\"calc_add\">\n</invoke>\n</minimax:tool_call>",
];

fuzz_target!(|data: &[u8]| {
    let pick = data.first().copied().unwrap_or(0) % 35;
    let errors = data.get(1).copied().unwrap_or(0);
    let text = common::utf8_prefix(data.get(2..).unwrap_or_default());
    let texts: Vec<&str> = text.split('\u{1f}').take(8).collect();
    let results = |texts: &[&str], ids: &[String]| -> Vec<ToolExecutionResult> {
        texts
            .iter()
            .zip(ids)
            .enumerate()
            .map(|(i, (text, id))| {
                if errors >> i & 1 == 1 {
                    ToolExecutionResult::error(id, "calc_add", ErrorKind::Execution, *text)
                } else {
                    ToolExecutionResult::success(id, "calc_add", *text)
                }
            })
            .collect()
    };
    let ids: Vec<String> = (0..texts.len()).map(|i| format!("call_{i}")).collect();

    match pick {
        0..=7 => {
            let protocol = VcpProtocol::new(common::options(pick));
            let results = results(&texts, &ids);
            let messages = protocol.result_messages(&results, &TurnState::default());
            let echoed = echo(&messages);
            for marker in ["<<<[TOOL_RESULT]>>>", "<<<[END_TOOL_RESULT]>>>", "「末ESCAPE」"] {
                assert_eq!(echoed.matches(marker).count(), results.len(), "{marker} count; echo: {echoed:?}");
            }
            no_request(&protocol, &echoed);
        }
        8..=18 => {
            let Some(&format) = TextFormat::ALL.get(usize::from(pick - 8)) else { return };
            let protocol = TextFormatProtocol::new(format);
            let echoed = echo(&protocol.result_messages(&results(&texts, &ids), &TurnState::default()));
            no_request(&protocol, &echoed);
            no_request(&AutoProtocol::new(), &echoed);
        }
        19..=30 => {
            let auto = AutoProtocol::new();
            let Some(call) = CALLS.get(usize::from(pick - 19)) else { return };
            let parsed = auto.parse(call);
            let Some(request) = parsed.requests.first() else {
                panic!("auto read no call in {call:?}");
            };
            let id = vec![request.request_id.clone()];
            let echoed = echo(&auto.result_messages(&results(&texts[..1], &id), &parsed.state));
            no_request(&auto, &echoed);
        }
        _ => {
            let (protocol, wire): (&dyn ToolCallingProtocol, &dyn WireFormat) = match pick {
                31 => (&NativeProtocol::openai_chat(), &Provider::OpenAiChat),
                32 => (&NativeProtocol::openai_responses(), &Provider::OpenAiResponses),
                33 => (&NativeProtocol::anthropic(), &Provider::Anthropic),
                _ => (&NativeProtocol::gemini(), &Provider::Gemini),
            };
            let harmless: Vec<&str> = texts.iter().map(|_| "fine").collect();
            let on_wire =
                wire.wire_messages(&protocol.result_messages(&results(&texts, &ids), &TurnState::default()));
            let expected = wire
                .wire_messages(&protocol.result_messages(&results(&harmless, &ids), &TurnState::default()));
            let bytes = serde_json::to_string(&on_wire).unwrap_or_default();
            let read: Value = match serde_json::from_str(&bytes) {
                Ok(read) => read,
                Err(e) => panic!("the wire messages do not read back ({e}): {bytes}"),
            };
            assert!(read == on_wire, "the wire messages changed through their bytes: {bytes}");
            assert!(shape(&read) == shape(&expected), "a result changed the messages' shape: {bytes}");
            for text in &texts {
                assert!(holds(&read, text), "{text:?} is not on the wire whole: {bytes}");
            }
        }
    }
});

/// What a model echoing the results would write.
fn echo(messages: &[Message]) -> String {
    messages.iter().map(|m| m.text().into_owned()).collect::<Vec<_>>().join("\n")
}

/// Panics when `protocol` reads a request in `echoed`, alone, after prose, or twice.
fn no_request(protocol: &dyn ToolCallingProtocol, echoed: &str) {
    for text in
        [echoed.to_string(), format!("The tool said:\n{echoed}\nDone."), format!("{echoed}\n{echoed}")]
    {
        let parsed = protocol.parse_turn(&AssistantTurn::from_text(text.as_str()));
        assert!(
            parsed.requests.is_empty(),
            "{}: the echo of results was read as requests {:#?}\necho: {text:?}",
            protocol.id(),
            parsed.requests
        );
    }
}

/// `value` with every string emptied.
fn shape(value: &Value) -> Value {
    match value {
        Value::String(_) => Value::String(String::new()),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        other => other.clone(),
    }
}

/// Whether some string in `value` contains `text`.
fn holds(value: &Value, text: &str) -> bool {
    match value {
        Value::String(s) => s.contains(text),
        Value::Array(items) => items.iter().any(|v| holds(v, text)),
        Value::Object(map) => map.values().any(|v| holds(v, text)),
        _ => false,
    }
}
