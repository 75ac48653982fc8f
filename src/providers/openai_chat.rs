//! OpenAI Chat Completions (`POST /v1/chat/completions`), and every server that speaks
//! it: vLLM, llama.cpp's server, Ollama, DeepSeek, Groq, ….

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::{SseEvent, StreamDecoder, WireError, arguments_text, event_json, str_of};
use crate::ContentPart;
use crate::model::{
    AssistantTurn, ContentBlock, Effort, FinishReason, Message, ModelRequest, RequestNote, Role, Thinking,
    ToolCall, ToolChoice, ToolResultBlock, TurnDelta,
};
use crate::protocol::native::{NameRule, wire_name};

/// Reasoning as compatible servers send it: `reasoning_content` (DeepSeek, most), or
/// `reasoning` (recent vLLM).
fn reasoning_of(message: &Value) -> &str {
    let content = str_of(message, "reasoning_content");
    if content.is_empty() { str_of(message, "reasoning") } else { content }
}

/// The OpenAI `finish_reason` as a [`FinishReason`].
fn finish_reason(reason: &str) -> Option<FinishReason> {
    match reason {
        "stop" => Some(FinishReason::Stop),
        "length" => Some(FinishReason::Length),
        "tool_calls" | "function_call" => Some(FinishReason::ToolCalls),
        "content_filter" => Some(FinishReason::ContentFilter),
        _ => None,
    }
}

/// The text a result carries on a text-only channel.
pub(crate) fn result_text(block: &ToolResultBlock) -> String {
    block.content.iter().map(ContentPart::render_text).collect::<Vec<_>>().join("\n")
}

/// The `tool_choice` value.
fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => {
            json!({"type": "function", "function": {"name": wire_name(name, NameRule::Strict)}})
        }
        // A future choice this version does not know: let the model decide.
        #[allow(unreachable_patterns)]
        _ => json!("auto"),
    }
}

pub(crate) fn request_body(request: &ModelRequest, model: &str, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), wire_messages(&request.messages_with_prompt()));
    if let Some(tools) = request.tools.as_ref().filter(|t| t.as_array().is_some_and(|a| !a.is_empty())) {
        body.insert("tools".into(), tools.clone());
        body.insert("tool_choice".into(), tool_choice(&request.tool_choice));
        if let Some(parallel) = request.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    }
    let options = &request.options;
    if let Some(max) = options.max_tokens {
        // Reasoning models take only `max_completion_tokens`; other servers `max_tokens`.
        let key = if options.thinking.is_some() { "max_completion_tokens" } else { "max_tokens" };
        body.insert(key.into(), json!(max));
    }
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(Thinking::Effort(effort)) = options.thinking {
        body.insert("reasoning_effort".into(), json!(effort.as_str()));
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

pub(crate) fn parse_response(body: &Value) -> Result<AssistantTurn, WireError> {
    if let Some(error) = body.get("error") {
        return Err(provider_error(error));
    }
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first())
        .ok_or_else(|| WireError::Shape { what: "response body", reason: "no `choices[0]`".into() })?;
    let message = choice.get("message").ok_or_else(|| WireError::Shape {
        what: "response body",
        reason: "no `choices[0].message`".into(),
    })?;
    let mut turn = AssistantTurn::new();
    let reasoning = reasoning_of(message);
    if !reasoning.is_empty() {
        turn = turn.with_reasoning(reasoning, None);
    }
    let content = str_of(message, "content");
    if !content.is_empty() {
        turn = turn.with_text(content);
    }
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let function = call.get("function").unwrap_or(&Value::Null);
        turn = turn.with_tool_call(ToolCall::new(
            str_of(call, "id"),
            str_of(function, "name"),
            arguments_text(function.get("arguments")),
        ));
    }
    turn.finish_reason = finish_reason(str_of(choice, "finish_reason"));
    Ok(turn)
}

pub(crate) fn wire_messages(messages: &[Message]) -> Value {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message.role {
            Role::System => out.push(json!({"role": "system", "content": message.text()})),
            Role::User => out.push(json!({"role": "user", "content": message.text()})),
            Role::Assistant => {
                let calls: Vec<Value> = message
                    .tool_calls()
                    .map(|call| {
                        json!({"id": call.id, "type": "function",
                               "function": {"name": call.name, "arguments": call.arguments}})
                    })
                    .collect();
                let text = message.text();
                let mut wire = Map::new();
                wire.insert("role".into(), json!("assistant"));
                wire.insert("content".into(), if text.is_empty() { Value::Null } else { json!(text) });
                // Only servers that sent reasoning get it back (DeepSeek's thinking
                // mode requires it with tool calls; OpenAI itself sends none).
                let reasoning: String = message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Reasoning(r) if !r.redacted => Some(r.text.as_str()),
                        _ => None,
                    })
                    .collect();
                if !reasoning.is_empty() {
                    wire.insert("reasoning_content".into(), json!(reasoning));
                }
                if !calls.is_empty() {
                    wire.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(wire));
            }
            Role::Tool => {
                let mut any_result = false;
                for block in &message.content {
                    if let ContentBlock::ToolResult(result) = block {
                        any_result = true;
                        out.push(json!({"role": "tool", "tool_call_id": result.call_id,
                                        "content": result_text(result)}));
                    }
                }
                // Results written as text (a text protocol over this API) go as a
                // user message: a `tool` message needs a call id.
                if !any_result {
                    out.push(json!({"role": "user", "content": message.text()}));
                }
            }
        }
    }
    Value::Array(out)
}

/// An error object (`{"message", "type", "code"}`) as a [`WireError`].
pub(crate) fn provider_error(error: &Value) -> WireError {
    let message = match error {
        Value::String(text) => text.clone(),
        other => {
            other.get("message").and_then(Value::as_str).map_or_else(|| other.to_string(), str::to_string)
        }
    };
    let kind = ["type", "code", "status"].iter().find_map(|k| {
        error
            .get(k)
            .and_then(|v| v.as_str().map(str::to_string).or_else(|| v.as_i64().map(|n| n.to_string())))
    });
    WireError::Provider { kind, message }
}

/// Decodes `chat.completion.chunk` events.
///
/// Calls arrive as `delta.tool_calls[]` fragments keyed by `index`: the id and name come
/// with the first fragment, the arguments in pieces (or a whole call in one fragment).
/// Calls stream one after another, so a call is complete when a fragment of another
/// call arrives, or the choice finishes.
#[derive(Debug, Default)]
pub(crate) struct ChunkDecoder {
    /// Provider call index → our call number (numbers count up as calls start).
    calls: HashMap<i64, usize>,
    /// The call being written (our number).
    open: Option<usize>,
    done: bool,
}

impl ChunkDecoder {
    fn close_open(&mut self, deltas: &mut Vec<TurnDelta>) {
        if let Some(index) = self.open.take() {
            deltas.push(TurnDelta::ToolCallEnd { index });
        }
    }

    fn number_of(&mut self, provider_index: i64) -> (usize, bool) {
        let next = self.calls.len();
        let number = *self.calls.entry(provider_index).or_insert(next);
        (number, number == next)
    }
}

impl StreamDecoder for ChunkDecoder {
    fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        if self.done {
            return Ok(());
        }
        if event.data.trim() == "[DONE]" {
            self.finish(deltas);
            return Ok(());
        }
        let chunk = event_json(event)?;
        if let Some(error) = chunk.get("error") {
            return Err(provider_error(error));
        }
        // The usage chunk has empty `choices`; only the first choice is read.
        let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else {
            return Ok(());
        };
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        let reasoning = reasoning_of(delta);
        if !reasoning.is_empty() {
            deltas.push(TurnDelta::Reasoning(reasoning.to_string()));
        }
        let content = str_of(delta, "content");
        if !content.is_empty() {
            deltas.push(TurnDelta::Text(content.to_string()));
        }
        for (position, fragment) in
            delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            // Some servers leave `index` out: the fragment's place in the array then.
            let provider_index = fragment.get("index").and_then(Value::as_i64).unwrap_or(position as i64);
            let (number, new) = self.number_of(provider_index);
            if self.open != Some(number) {
                self.close_open(deltas);
                self.open = Some(number);
            }
            let function = fragment.get("function").unwrap_or(&Value::Null);
            if new {
                deltas.push(TurnDelta::ToolCallStart {
                    index: number,
                    id: str_of(fragment, "id").to_string(),
                    name: str_of(function, "name").to_string(),
                });
            } else if !str_of(function, "name").is_empty() || !str_of(fragment, "id").is_empty() {
                // A server that sends the name or id again (or late): keep the first.
                deltas.push(TurnDelta::ToolCallStart {
                    index: number,
                    id: str_of(fragment, "id").to_string(),
                    name: str_of(function, "name").to_string(),
                });
            }
            let arguments = arguments_text(function.get("arguments"));
            if !arguments.is_empty() {
                deltas.push(TurnDelta::ToolCallArguments { index: number, fragment: arguments });
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.close_open(deltas);
            if let Some(reason) = finish_reason(reason) {
                deltas.push(TurnDelta::Finish(reason));
            }
        }
        Ok(())
    }

    fn finish(&mut self, deltas: &mut Vec<TurnDelta>) {
        if !self.done {
            self.done = true;
            self.close_open(deltas);
        }
    }
}

/// OpenAI's rules for reasoning models: no temperature; reasoning cannot be turned off
/// (the least effort is sent).
pub(crate) fn adjust(request: &mut ModelRequest, notes: &mut Vec<RequestNote>) {
    let options = &mut request.options;
    if options.thinking == Some(Thinking::Off) {
        notes.push(RequestNote::new(
            "thinking",
            "OpenAI reasoning models cannot stop reasoning: `minimal` effort sent",
        ));
        options.thinking = Some(Thinking::Effort(Effort::Minimal));
    }
    if options.thinking.is_some() && options.temperature.take().is_some() {
        notes.push(RequestNote::new("temperature", "OpenAI reasoning models take no temperature: not sent"));
    }
}
