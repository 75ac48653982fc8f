//! Fuzz target: results written by every protocol, then read back as the model would
//! echo them.
//!
//! Input layout: the first byte picks the protocol, its value modulo the number of slots:
//! 8 for VCP under the option bits as `vcp_parse` reads them, then one per open-model
//! format in `TextFormat::ALL` order, then `auto` after it has read a call in VCP and
//! after a call in each format (as the format's writer writes it), then the four native
//! wire formats OpenAI Chat, OpenAI Responses, Anthropic, Gemini; the second byte's bits say which results are errors; the rest,
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

/// The call `auto` reads in VCP; in each format, the call its writer writes.
const VCP_CALL: &str = "<<<[TOOL_REQUEST]>>>\ntool_name:「始」calc_add「末」\n<<<[END_TOOL_REQUEST]>>>";

/// A call of `calc_add` in `format`, as its writer writes it.
fn write_call(format: TextFormat) -> String {
    let args = serde_json::json!({"a": 1});
    let Some(args) = args.as_object() else { return String::new() };
    TextFormatProtocol::new(format).write_call("calc_add", args).unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    // Slots: 8 VCP option sets, the formats, `auto` after VCP and after each format, the
    // four native wire formats.
    let formats = TextFormat::ALL.len();
    let slots = 8 + formats + 1 + formats + 4;
    let pick = usize::from(data.first().copied().unwrap_or(0)) % slots;
    let (first_format, first_auto, first_native) = (8, 8 + formats, 8 + 2 * formats + 1);
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
        _ if pick < first_format => {
            let protocol = VcpProtocol::new(common::options(pick as u8));
            let results = results(&texts, &ids);
            let messages = protocol.result_messages(&results, &TurnState::default());
            let echoed = echo(&messages);
            for marker in ["<<<[TOOL_RESULT]>>>", "<<<[END_TOOL_RESULT]>>>", "「末ESCAPE」"] {
                assert_eq!(echoed.matches(marker).count(), results.len(), "{marker} count; echo: {echoed:?}");
            }
            no_request(&protocol, &echoed);
        }
        _ if pick < first_auto => {
            let Some(&format) = TextFormat::ALL.get(pick - first_format) else { return };
            let protocol = TextFormatProtocol::new(format);
            let echoed = echo(&protocol.result_messages(&results(&texts, &ids), &TurnState::default()));
            no_request(&protocol, &echoed);
            no_request(&AutoProtocol::new(), &echoed);
        }
        _ if pick < first_native => {
            let auto = AutoProtocol::new();
            let call = match (pick - first_auto).checked_sub(1) {
                None => VCP_CALL.to_string(),
                Some(i) => TextFormat::ALL.get(i).map(|f| write_call(*f)).unwrap_or_default(),
            };
            let parsed = auto.parse(&call);
            let Some(request) = parsed.requests.first() else {
                panic!("auto read no call in {call:?}");
            };
            let id = vec![request.request_id.clone()];
            let echoed = echo(&auto.result_messages(&results(&texts[..1], &id), &parsed.state));
            no_request(&auto, &echoed);
        }
        _ => {
            let (protocol, wire): (&dyn ToolCallingProtocol, &dyn WireFormat) = match pick - first_native {
                0 => (&NativeProtocol::openai_chat(), &Provider::OpenAiChat),
                1 => (&NativeProtocol::openai_responses(), &Provider::OpenAiResponses),
                2 => (&NativeProtocol::anthropic(), &Provider::Anthropic),
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
