//! Google Gemini (`POST /v1beta/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse` for streaming).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::{SseEvent, StreamDecoder, WireError, event_json, str_of};
use crate::ContentPart;
use crate::model::{
    AssistantTurn, ContentBlock, Effort, FinishReason, Message, ModelRequest, Reasoning, Role, Thinking,
    ToolCall, ToolChoice, ToolResultBlock, TurnDelta,
};
use crate::protocol::native::{NameRule, wire_name};

fn finish_reason(reason: &str, has_calls: bool) -> Option<FinishReason> {
    match reason {
        "STOP" if has_calls => Some(FinishReason::ToolCalls),
        "STOP" => Some(FinishReason::Stop),
        "MAX_TOKENS" => Some(FinishReason::Length),
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY"
        | "LANGUAGE" => Some(FinishReason::ContentFilter),
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS" | "OTHER" => {
            Some(FinishReason::Error)
        }
        _ => None,
    }
}

fn tool_config(choice: &ToolChoice) -> Value {
    let config = match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => {
            json!({"mode": "ANY", "allowedFunctionNames": [wire_name(name, NameRule::Gemini)]})
        }
        #[allow(unreachable_patterns)]
        _ => json!({"mode": "AUTO"}),
    };
    json!({"functionCallingConfig": config})
}

/// A provider error body (`{"error": {"code", "message", "status"}}`).
fn error_of(error: &Value) -> WireError {
    let kind = error
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| error.get("code").and_then(Value::as_i64).map(|c| c.to_string()));
    WireError::Provider { kind, message: str_of(error, "message").to_string() }
}

/// A part's content read into `turn`, or as deltas for a call (`call`: the next call
/// number). Text parts with `thought: true` are reasoning.
fn read_part(part: &Value, turn: &mut AssistantTurn) {
    let signature = part.get("thoughtSignature").and_then(Value::as_str).map(str::to_string);
    if let Some(call) = part.get("functionCall") {
        let arguments = call.get("args").map_or_else(String::new, Value::to_string);
        let mut tool_call = ToolCall::new(str_of(call, "id"), str_of(call, "name"), arguments);
        tool_call.signature = signature;
        turn.content.push(ContentBlock::ToolCall(tool_call));
        return;
    }
    let Some(text) = part.get("text").and_then(Value::as_str) else { return };
    if part.get("thought").and_then(Value::as_bool) == Some(true) {
        turn.content.push(ContentBlock::Reasoning(Reasoning::new(text, signature)));
    } else {
        turn.push_text(text);
        if let Some(signature) = signature {
            // A signature on a text part: kept as an empty reasoning block after it.
            turn.content.push(ContentBlock::Reasoning(Reasoning::new("", Some(signature))));
        }
    }
}

/// The `response` object of a `functionResponse`: the output (JSON when the tool gave
/// JSON) or the error.
fn response_of(block: &ToolResultBlock) -> Value {
    let value = match block.content.as_slice() {
        [ContentPart::Json { value }] => value.clone(),
        parts => json!(parts.iter().map(ContentPart::render_text).collect::<Vec<_>>().join("\n")),
    };
    if block.is_error { json!({"error": value}) } else { json!({"output": value}) }
}

pub(crate) fn request_body(request: &ModelRequest) -> Value {
    let mut system: Vec<String> = Vec::new();
    if let Some(prompt) = request.tool_prompt.as_deref().filter(|p| !p.is_empty()) {
        system.push(prompt.to_string());
    }
    system.extend(request.messages.iter().filter(|m| m.role == Role::System).map(|m| m.text().into_owned()));
    let mut body = Map::new();
    body.insert("contents".into(), wire_messages(&request.messages));
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": [{"text": system.join("\n\n")}]}));
    }
    if let Some(tools) = request.tools.as_ref().filter(|t| t.as_array().is_some_and(|a| !a.is_empty())) {
        body.insert("tools".into(), tools.clone());
        body.insert("toolConfig".into(), tool_config(&request.tool_choice));
    }
    let options = &request.options;
    let mut generation = Map::new();
    if let Some(max) = options.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(temperature) = options.temperature {
        generation.insert("temperature".into(), json!(temperature));
    }
    let thinking = match options.thinking {
        None => None,
        Some(Thinking::Off) => Some(json!({"thinkingBudget": 0})),
        Some(Thinking::On) => Some(json!({"includeThoughts": true})),
        Some(Thinking::Budget(budget)) => Some(json!({"thinkingBudget": budget, "includeThoughts": true})),
        Some(Thinking::Effort(effort)) => {
            let level = match effort {
                Effort::Minimal | Effort::Low => "low",
                Effort::Medium | Effort::High => "high",
            };
            Some(json!({"thinkingLevel": level, "includeThoughts": true}))
        }
    };
    if let Some(thinking) = thinking {
        generation.insert("thinkingConfig".into(), thinking);
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

pub(crate) fn parse_response(body: &Value) -> Result<AssistantTurn, WireError> {
    if let Some(error) = body.get("error") {
        return Err(error_of(error));
    }
    let mut turn = AssistantTurn::new();
    let Some(candidate) = body.get("candidates").and_then(Value::as_array).and_then(|c| c.first()) else {
        // No candidate: the prompt was blocked, or the body is not a response.
        if body.get("promptFeedback").is_some() {
            turn.finish_reason = Some(FinishReason::ContentFilter);
            return Ok(turn);
        }
        return Err(WireError::Shape { what: "response body", reason: "no `candidates[0]`".into() });
    };
    let parts = candidate.get("content").and_then(|c| c.get("parts")).and_then(Value::as_array);
    for part in parts.into_iter().flatten() {
        read_part(part, &mut turn);
    }
    let has_calls = turn.tool_calls().next().is_some();
    turn.finish_reason = finish_reason(str_of(candidate, "finishReason"), has_calls);
    Ok(turn)
}

pub(crate) fn wire_messages(messages: &[Message]) -> Value {
    // Calls that came with an id get it back on their responses.
    let with_ids: HashSet<&str> = messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .map(|c| c.id.as_str())
        .filter(|id| !id.is_empty())
        .collect();
    let mut contents = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, parts): (&str, Vec<Value>) = match message.role {
            Role::System => continue,
            Role::User => ("user", vec![json!({"text": message.text()})]),
            Role::Assistant => ("model", model_parts(message)),
            Role::Tool => {
                let responses: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::ToolResult(result) => {
                            let mut response = Map::new();
                            if with_ids.contains(result.call_id.as_str()) {
                                response.insert("id".into(), json!(result.call_id));
                            }
                            response.insert("name".into(), json!(result.name));
                            response.insert("response".into(), response_of(result));
                            Some(json!({"functionResponse": response}))
                        }
                        _ => None,
                    })
                    .collect();
                if responses.is_empty() {
                    ("user", vec![json!({"text": message.text()})])
                } else {
                    ("user", responses)
                }
            }
        };
        if !parts.is_empty() {
            contents.push(json!({"role": role, "parts": parts}));
        }
    }
    Value::Array(contents)
}

/// A model turn's parts as Gemini takes them back: thought parts and signatures unchanged.
fn model_parts(message: &Message) -> Vec<Value> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(json!({"text": text})),
            ContentBlock::Reasoning(r) if r.text.is_empty() => {
                r.signature.as_ref().map(|s| json!({"text": "", "thoughtSignature": s}))
            }
            ContentBlock::Reasoning(r) => {
                let mut part = Map::new();
                part.insert("text".into(), json!(r.text));
                part.insert("thought".into(), json!(true));
                if let Some(signature) = &r.signature {
                    part.insert("thoughtSignature".into(), json!(signature));
                }
                Some(Value::Object(part))
            }
            ContentBlock::ToolCall(call) => {
                let mut function_call = Map::new();
                if !call.id.is_empty() {
                    function_call.insert("id".into(), json!(call.id));
                }
                function_call.insert("name".into(), json!(call.name));
                function_call.insert(
                    "args".into(),
                    match call.arguments_json() {
                        Ok(Value::Object(args)) => Value::Object(args),
                        _ => json!({}),
                    },
                );
                let mut part = Map::new();
                part.insert("functionCall".into(), Value::Object(function_call));
                if let Some(signature) = &call.signature {
                    part.insert("thoughtSignature".into(), json!(signature));
                }
                Some(Value::Object(part))
            }
            ContentBlock::ToolResult(_) => None,
        })
        .collect()
}

/// Decodes `streamGenerateContent?alt=sse` chunks: each a response holding the next
/// parts. A call arrives whole in one part, so it starts and ends at once.
#[derive(Debug, Default)]
pub(crate) struct ChunkDecoder {
    calls: usize,
    /// A finish reason seen before the last call arrived waits for the end.
    finish: Option<String>,
}

impl StreamDecoder for ChunkDecoder {
    fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        let chunk = event_json(event)?;
        if let Some(error) = chunk.get("error") {
            return Err(error_of(error));
        }
        let Some(candidate) = chunk.get("candidates").and_then(Value::as_array).and_then(|c| c.first())
        else {
            return Ok(());
        };
        let parts = candidate.get("content").and_then(|c| c.get("parts")).and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            let mut turn = AssistantTurn::new();
            read_part(part, &mut turn);
            for block in turn.content {
                match block {
                    ContentBlock::Text { text } => deltas.push(TurnDelta::Text(text)),
                    // A signature on a text part stands apart from any reasoning.
                    ContentBlock::Reasoning(reasoning) if reasoning.text.is_empty() => {
                        deltas.push(TurnDelta::ReasoningBlock(reasoning));
                    }
                    ContentBlock::Reasoning(reasoning) => {
                        deltas.push(TurnDelta::Reasoning(reasoning.text));
                        if let Some(signature) = reasoning.signature {
                            deltas.push(TurnDelta::ReasoningSignature(signature));
                        }
                    }
                    ContentBlock::ToolCall(call) => {
                        let index = self.calls;
                        self.calls += 1;
                        deltas.push(TurnDelta::ToolCallStart { index, id: call.id, name: call.name });
                        if let Some(signature) = call.signature {
                            deltas.push(TurnDelta::ToolCallSignature { index, signature });
                        }
                        deltas.push(TurnDelta::ToolCallArguments { index, fragment: call.arguments });
                        deltas.push(TurnDelta::ToolCallEnd { index });
                    }
                    ContentBlock::ToolResult(_) => {}
                }
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(reason.to_string());
        }
        Ok(())
    }

    fn finish(&mut self, deltas: &mut Vec<TurnDelta>) {
        if let Some(reason) = self.finish.take().and_then(|r| finish_reason(&r, self.calls > 0)) {
            deltas.push(TurnDelta::Finish(reason));
        }
    }
}
