//! OpenAI Responses (`POST /v1/responses`).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::calls::{NativeStreamParser, parse_calls};
use super::names::{NameRule, resolve_wire_name, wire_name};
use super::openai::{description_of, provider_error, result_text};
use super::{
    NativeOptions, SseEvent, StreamDecoder, WireError, WireFormat, arguments_text, event_json, schema, str_of,
};
use crate::model::{
    AssistantTurn, ContentBlock, FinishReason, Message, ModelRequest, Reasoning, RequestNote, Role, Thinking,
    ToolCall, ToolChoice, ToolResultBlock, TurnDelta,
};
use crate::protocol::{IncrementalParser, ParseOutcome, ToolCallingProtocol, ToolDeclarations};
use crate::tools::ToolCatalog;
use crate::{Invocation, ParsedToolRequest, ToolDefinition, ToolError, ToolExecutionResult};

/// OpenAI Responses tool calling (protocol id `openai_responses`).
///
/// Tools go out flat (`{"type": "function", "name", "parameters", "strict"}`); calls come
/// back as `function_call` output items (matched by `call_id`); each result goes back as
/// a `function_call_output` input item.
///
/// Requests are stateless (`store: false`): the next request carries the turn back as
/// input items, reasoning included (`include: ["reasoning.encrypted_content"]`), as the
/// API requires for calls made after reasoning. A reasoning item's id and encrypted
/// content are kept as its [`Reasoning::signature`] (a small JSON object), a call's item
/// id (`fc_…`) as its [`ToolCall::signature`].
///
/// ```
/// use serde_json::json;
/// use tool_calling::ToolCallingProtocol;
/// use tool_calling::protocol::native::{OpenAiResponses, WireFormat};
/// let responses = OpenAiResponses::default();
/// let body = json!({"status": "completed", "output": [
///     {"type": "function_call", "id": "fc_1", "call_id": "call_1",
///      "name": "calc_add", "arguments": "{\"a\": 2}"}
/// ]});
/// let turn = responses.parse_response(&body).unwrap();
/// assert_eq!(turn.tool_calls().next().unwrap().signature.as_deref(), Some("fc_1"));
/// let parsed = responses.parse_turn(&turn);
/// assert_eq!(parsed.requests[0].request_id, "call_1");
/// assert_eq!(parsed.requests[0].args["a"], 2);
/// ```
#[derive(Debug, Clone, Default)]
pub struct OpenAiResponses {
    options: NativeOptions,
}

impl OpenAiResponses {
    /// A protocol with `options`.
    pub fn new(options: NativeOptions) -> Self {
        OpenAiResponses { options }
    }
}

/// The opaque data kept for a reasoning item: its id and encrypted content.
fn reasoning_signature(item: &Value) -> Option<String> {
    let id = item.get("id").and_then(Value::as_str);
    let encrypted = item.get("encrypted_content").and_then(Value::as_str);
    (id.is_some() || encrypted.is_some())
        .then(|| json!({"id": id, "encrypted_content": encrypted}).to_string())
}

/// The summary text of a reasoning item, its parts joined by blank lines.
fn summary_text(item: &Value) -> String {
    item.get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|part| str_of(part, "text"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": wire_name(name, NameRule::Strict)}),
        #[allow(unreachable_patterns)]
        _ => json!("auto"),
    }
}

/// The finish reason a response's status means.
fn status_reason(response: &Value, has_calls: bool) -> Option<FinishReason> {
    match str_of(response, "status") {
        "completed" if has_calls => Some(FinishReason::ToolCalls),
        "completed" => Some(FinishReason::Stop),
        "incomplete" => match response.get("incomplete_details").map(|d| str_of(d, "reason")) {
            Some("content_filter") => Some(FinishReason::ContentFilter),
            _ => Some(FinishReason::Length),
        },
        "failed" => Some(FinishReason::Error),
        "cancelled" => Some(FinishReason::Cancelled),
        _ => None,
    }
}

impl ToolCallingProtocol for OpenAiResponses {
    fn id(&self) -> &str {
        "openai_responses"
    }

    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        let functions: Vec<Value> = tools
            .iter()
            .flat_map(|tool| {
                tool.methods.iter().map(move |method| {
                    let parameters = if self.options.strict {
                        schema::openai_strict(&method.parameters)
                    } else {
                        method.parameters.clone()
                    };
                    json!({
                        "type": "function",
                        "name": wire_name(&method.full_name(&tool.tool_id), NameRule::Strict),
                        "description": description_of(tool, method),
                        "parameters": parameters,
                        "strict": self.options.strict,
                    })
                })
            })
            .collect();
        ToolDeclarations::Native(Value::Array(functions))
    }

    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
        parse_calls(turn, &self.options)
    }

    fn incremental_parser(&self) -> Option<Box<dyn IncrementalParser>> {
        Some(Box::new(NativeStreamParser::with_options(self.options)))
    }

    fn resolve(
        &self,
        request: &ParsedToolRequest,
        catalog: &ToolCatalog,
    ) -> Vec<Result<Invocation, ToolError>> {
        let method = resolve_wire_name(&request.tool_name, catalog, NameRule::Strict)
            .unwrap_or_else(|| request.tool_name.clone());
        vec![Ok(Invocation::new(method, request.args.clone()))]
    }

    /// One message per result (each a `function_call_output` item on the wire).
    fn result_messages(&self, results: &[ToolExecutionResult]) -> Vec<Message> {
        results
            .iter()
            .map(|result| {
                Message::with_content(
                    Role::Tool,
                    vec![ContentBlock::ToolResult(ToolResultBlock::from_result(result))],
                )
                .with_tool_result(result.clone())
            })
            .collect()
    }
}

impl WireFormat for OpenAiResponses {
    fn request_body(&self, request: &ModelRequest, model: &str, stream: bool) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(model));
        body.insert("input".into(), self.wire_messages(&request.messages_with_prompt()));
        body.insert("store".into(), json!(false));
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        if let Some(tools) = request.tools.as_ref().filter(|t| t.as_array().is_some_and(|a| !a.is_empty())) {
            body.insert("tools".into(), tools.clone());
            body.insert("tool_choice".into(), tool_choice(&request.tool_choice));
            if let Some(parallel) = request.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), json!(parallel));
            }
        }
        let options = &request.options;
        if let Some(max) = options.max_tokens {
            body.insert("max_output_tokens".into(), json!(max));
        }
        if let Some(temperature) = options.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        match options.thinking {
            Some(Thinking::Effort(effort)) => {
                body.insert("reasoning".into(), json!({"effort": effort.as_str(), "summary": "auto"}));
            }
            Some(_) => {
                body.insert("reasoning".into(), json!({"summary": "auto"}));
            }
            None => {}
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    fn adjust(&self, request: &mut ModelRequest, notes: &mut Vec<RequestNote>) {
        super::openai::adjust_openai(request, notes);
    }

    fn parse_response(&self, body: &Value) -> Result<AssistantTurn, WireError> {
        if let Some(error) = body.get("error").filter(|e| !e.is_null()) {
            return Err(provider_error(error));
        }
        let output = body
            .get("output")
            .and_then(Value::as_array)
            .ok_or_else(|| WireError::Shape { what: "response body", reason: "no `output` array".into() })?;
        let mut turn = AssistantTurn::new();
        for item in output {
            match str_of(item, "type") {
                "reasoning" => {
                    turn.content.push(ContentBlock::Reasoning(Reasoning::new(
                        summary_text(item),
                        reasoning_signature(item),
                    )));
                }
                "message" => {
                    for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                        match str_of(part, "type") {
                            "output_text" => turn.push_text(str_of(part, "text")),
                            "refusal" => turn.push_text(str_of(part, "refusal")),
                            _ => {}
                        }
                    }
                }
                "function_call" => {
                    let mut call = ToolCall::new(
                        str_of(item, "call_id"),
                        str_of(item, "name"),
                        arguments_text(item.get("arguments")),
                    );
                    call.signature = item.get("id").and_then(Value::as_str).map(str::to_string);
                    turn.content.push(ContentBlock::ToolCall(call));
                }
                _ => {}
            }
        }
        let has_calls = turn.tool_calls().next().is_some();
        turn.finish_reason = status_reason(body, has_calls);
        Ok(turn)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(EventDecoder::default())
    }

    fn wire_messages(&self, messages: &[Message]) -> Value {
        let mut items = Vec::with_capacity(messages.len());
        for message in messages {
            match message.role {
                Role::System => items.push(json!({"role": "system", "content": message.text()})),
                Role::User => items.push(json!({"role": "user", "content": message.text()})),
                Role::Assistant => {
                    for block in &message.content {
                        match block {
                            ContentBlock::Reasoning(reasoning) => {
                                let kept: Value = reasoning
                                    .signature
                                    .as_deref()
                                    .and_then(|s| serde_json::from_str(s).ok())
                                    .unwrap_or(Value::Null);
                                let mut item = Map::new();
                                item.insert("type".into(), json!("reasoning"));
                                if let Some(id) = kept.get("id").filter(|v| !v.is_null()) {
                                    item.insert("id".into(), id.clone());
                                }
                                let summary: Vec<Value> = if reasoning.text.is_empty() {
                                    Vec::new()
                                } else {
                                    vec![json!({"type": "summary_text", "text": reasoning.text})]
                                };
                                item.insert("summary".into(), Value::Array(summary));
                                if let Some(encrypted) =
                                    kept.get("encrypted_content").filter(|v| !v.is_null())
                                {
                                    item.insert("encrypted_content".into(), encrypted.clone());
                                }
                                items.push(Value::Object(item));
                            }
                            ContentBlock::Text { text } => items.push(json!({
                                "type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": text}]
                            })),
                            ContentBlock::ToolCall(call) => {
                                let mut item = Map::new();
                                item.insert("type".into(), json!("function_call"));
                                if let Some(id) = &call.signature {
                                    item.insert("id".into(), json!(id));
                                }
                                item.insert("call_id".into(), json!(call.id));
                                item.insert("name".into(), json!(call.name));
                                item.insert("arguments".into(), json!(call.arguments));
                                items.push(Value::Object(item));
                            }
                            ContentBlock::ToolResult(_) => {}
                        }
                    }
                }
                Role::Tool => {
                    let mut any_result = false;
                    for block in &message.content {
                        if let ContentBlock::ToolResult(result) = block {
                            any_result = true;
                            items.push(json!({"type": "function_call_output", "call_id": result.call_id,
                                              "output": result_text(result)}));
                        }
                    }
                    if !any_result {
                        items.push(json!({"role": "user", "content": message.text()}));
                    }
                }
            }
        }
        Value::Array(items)
    }
}

/// Decodes Responses stream events (`response.*`).
#[derive(Debug, Default)]
struct EventDecoder {
    /// Call item id → (our call number, whether argument deltas came).
    calls: HashMap<String, (usize, bool)>,
    /// Call numbers by output index, for events that name only the index.
    by_index: HashMap<i64, String>,
    /// Summary parts of the reasoning item being written.
    summary_parts: usize,
    has_calls: bool,
    done: bool,
}

impl EventDecoder {
    fn item_id(&self, data: &Value) -> Option<String> {
        data.get("item_id").and_then(Value::as_str).map(str::to_string).or_else(|| {
            data.get("output_index").and_then(Value::as_i64).and_then(|i| self.by_index.get(&i).cloned())
        })
    }
}

impl StreamDecoder for EventDecoder {
    fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        if self.done {
            return Ok(());
        }
        let data = event_json(event)?;
        let kind = event.event.as_deref().unwrap_or_else(|| str_of(&data, "type"));
        match kind {
            "response.output_item.added" => {
                let item = data.get("item").unwrap_or(&Value::Null);
                match str_of(item, "type") {
                    "function_call" => {
                        let id = str_of(item, "id").to_string();
                        let number = self.calls.len();
                        self.calls.insert(id.clone(), (number, false));
                        if let Some(index) = data.get("output_index").and_then(Value::as_i64) {
                            self.by_index.insert(index, id.clone());
                        }
                        self.has_calls = true;
                        deltas.push(TurnDelta::ToolCallStart {
                            index: number,
                            id: str_of(item, "call_id").to_string(),
                            name: str_of(item, "name").to_string(),
                        });
                        deltas.push(TurnDelta::ToolCallSignature { index: number, signature: id });
                    }
                    "reasoning" => self.summary_parts = 0,
                    _ => {}
                }
            }
            "response.reasoning_summary_part.added" => {
                if self.summary_parts > 0 {
                    deltas.push(TurnDelta::Reasoning("\n\n".into()));
                }
                self.summary_parts += 1;
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let text = str_of(&data, "delta");
                if !text.is_empty() {
                    deltas.push(TurnDelta::Reasoning(text.to_string()));
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let text = str_of(&data, "delta");
                if !text.is_empty() {
                    deltas.push(TurnDelta::Text(text.to_string()));
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(id) = self.item_id(&data)
                    && let Some((number, seen)) = self.calls.get_mut(&id)
                {
                    *seen = true;
                    deltas.push(TurnDelta::ToolCallArguments {
                        index: *number,
                        fragment: str_of(&data, "delta").to_string(),
                    });
                }
            }
            "response.output_item.done" => {
                let item = data.get("item").unwrap_or(&Value::Null);
                match str_of(item, "type") {
                    "function_call" => {
                        if let Some(&(number, seen)) = self.calls.get(str_of(item, "id")) {
                            if !seen {
                                // No argument deltas: the whole arguments are here.
                                let arguments = arguments_text(item.get("arguments"));
                                deltas.push(TurnDelta::ToolCallArguments {
                                    index: number,
                                    fragment: arguments,
                                });
                            }
                            deltas.push(TurnDelta::ToolCallEnd { index: number });
                        }
                    }
                    "reasoning" => {
                        if let Some(signature) = reasoning_signature(item) {
                            deltas.push(TurnDelta::ReasoningSignature(signature));
                        }
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = data.get("response").unwrap_or(&Value::Null);
                if let Some(reason) = status_reason(response, self.has_calls) {
                    deltas.push(TurnDelta::Finish(reason));
                }
                self.done = true;
            }
            "response.failed" => {
                self.done = true;
                let response = data.get("response").unwrap_or(&Value::Null);
                let error = response.get("error").filter(|e| !e.is_null()).unwrap_or(response);
                return Err(provider_error(error));
            }
            "error" => {
                self.done = true;
                return Err(provider_error(data.get("error").unwrap_or(&data)));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, deltas: &mut Vec<TurnDelta>) {
        // Calls the stream never finished stay open in the turn; the parser reports
        // them at its own end.
        let _ = deltas;
        self.done = true;
    }
}
