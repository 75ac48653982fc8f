//! Anthropic Messages (`POST /v1/messages`).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::calls::{NativeStreamParser, parse_calls};
use super::names::{NameRule, resolve_wire_name, wire_name};
use super::openai::description_of;
use super::{NativeOptions, SseEvent, StreamDecoder, WireError, WireFormat, event_json, str_of};
use crate::model::{
    AssistantTurn, ContentBlock, FinishReason, Message, ModelRequest, Reasoning, RequestNote, Role, Thinking,
    ToolCall, ToolChoice, ToolResultBlock, TurnDelta,
};
use crate::protocol::{IncrementalParser, ParseOutcome, ToolCallingProtocol, ToolDeclarations};
use crate::tools::ToolCatalog;
use crate::{ContentPart, Invocation, ParsedToolRequest, ToolDefinition, ToolError, ToolExecutionResult};

/// The `max_tokens` a request carries when it says none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Anthropic Messages tool calling (protocol id `anthropic`).
///
/// Tools go out as `{"name", "description", "input_schema"}`; calls come back as
/// `tool_use` content blocks (arguments as an object), reasoning as `thinking` blocks with
/// a `signature` (or `redacted_thinking` with opaque `data`), which are sent back
/// unchanged on the next request; all the results of a turn go back in one user message
/// of `tool_result` blocks, `is_error` set on failures.
///
/// ```
/// use serde_json::json;
/// use tool_calling::ToolCallingProtocol;
/// use tool_calling::model::FinishReason;
/// use tool_calling::protocol::native::{Anthropic, WireFormat};
/// let anthropic = Anthropic::default();
/// let body = json!({"type": "message", "role": "assistant", "stop_reason": "tool_use", "content": [
///     {"type": "text", "text": "Adding."},
///     {"type": "tool_use", "id": "toolu_1", "name": "calc_add", "input": {"a": 2, "b": 40}}
/// ]});
/// let turn = anthropic.parse_response(&body).unwrap();
/// assert_eq!(turn.finish_reason, Some(FinishReason::ToolCalls));
/// let parsed = anthropic.parse_turn(&turn);
/// assert_eq!(parsed.requests[0].request_id, "toolu_1");
/// assert_eq!(parsed.requests[0].args["b"], 40);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Anthropic {
    options: NativeOptions,
}

impl Anthropic {
    /// A protocol with `options`.
    pub fn new(options: NativeOptions) -> Self {
        Anthropic { options }
    }
}

fn stop_reason(reason: &str) -> Option<FinishReason> {
    match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => Some(FinishReason::Stop),
        "max_tokens" | "model_context_window_exceeded" => Some(FinishReason::Length),
        "tool_use" => Some(FinishReason::ToolCalls),
        "refusal" => Some(FinishReason::ContentFilter),
        _ => None,
    }
}

/// The smallest thinking budget Anthropic accepts.
const MIN_THINKING_BUDGET: u32 = 1_024;
/// The budget sent for thinking "on" without an amount.
const DEFAULT_THINKING_BUDGET: u32 = 2_048;

/// The `budget_tokens` a thinking option stands for (`None`: no thinking block).
fn thinking_budget(thinking: Option<Thinking>) -> Option<u32> {
    match thinking? {
        Thinking::Off => None,
        Thinking::On => Some(DEFAULT_THINKING_BUDGET),
        Thinking::Budget(budget) => Some(budget),
        Thinking::Effort(effort) => Some(effort.budget()),
    }
}

fn tool_choice(choice: &ToolChoice, parallel: Option<bool>) -> Value {
    let mut value = match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => return json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": wire_name(name, NameRule::Strict)}),
        #[allow(unreachable_patterns)]
        _ => json!({"type": "auto"}),
    };
    if parallel == Some(false)
        && let Value::Object(map) = &mut value
    {
        map.insert("disable_parallel_tool_use".into(), json!(true));
    }
    value
}

/// An error body or event (`{"type": "error", "error": {"type", "message"}}`).
fn error_of(value: &Value) -> WireError {
    let error = value.get("error").unwrap_or(value);
    WireError::Provider {
        kind: error.get("type").and_then(Value::as_str).map(str::to_string),
        message: str_of(error, "message").to_string(),
    }
}

/// A result's content as `tool_result` content blocks: text, JSON as text, images.
fn result_content(block: &ToolResultBlock) -> Value {
    let parts: Vec<Value> = block
        .content
        .iter()
        .map(|part| match part {
            ContentPart::Image { mime_type, data_base64 } => json!({
                "type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data_base64}
            }),
            other => json!({"type": "text", "text": other.render_text()}),
        })
        .collect();
    Value::Array(parts)
}

/// A call's arguments as the object `tool_use.input` must be (`{}` for arguments that are
/// not an object: such a call was answered with an error and never ran).
fn input_of(call: &ToolCall) -> Value {
    match call.arguments_json() {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => json!({}),
    }
}

impl ToolCallingProtocol for Anthropic {
    fn id(&self) -> &str {
        "anthropic"
    }

    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        let declared: Vec<Value> = tools
            .iter()
            .flat_map(|tool| {
                tool.methods.iter().map(move |method| {
                    json!({
                        "name": wire_name(&method.full_name(&tool.tool_id), NameRule::Strict),
                        "description": description_of(tool, method),
                        "input_schema": method.parameters,
                    })
                })
            })
            .collect();
        ToolDeclarations::Native(Value::Array(declared))
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

    /// One message holding a result block per call, in call order.
    fn result_messages(&self, results: &[ToolExecutionResult]) -> Vec<Message> {
        if results.is_empty() {
            return Vec::new();
        }
        let blocks =
            results.iter().map(|r| ContentBlock::ToolResult(ToolResultBlock::from_result(r))).collect();
        vec![Message::with_content(Role::Tool, blocks).with_tool_results(results.iter().cloned())]
    }
}

impl WireFormat for Anthropic {
    fn request_body(&self, request: &ModelRequest, model: &str, stream: bool) -> Value {
        let mut system: Vec<String> = Vec::new();
        if let Some(prompt) = request.tool_prompt.as_deref().filter(|p| !p.is_empty()) {
            system.push(prompt.to_string());
        }
        system.extend(
            request.messages.iter().filter(|m| m.role == Role::System).map(|m| m.text().into_owned()),
        );
        let mut body = Map::new();
        body.insert("model".into(), json!(model));
        body.insert("max_tokens".into(), json!(request.options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)));
        if let Some(temperature) = request.options.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        if let Some(budget) = thinking_budget(request.options.thinking) {
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        if !system.is_empty() {
            body.insert("system".into(), json!(system.join("\n\n")));
        }
        body.insert("messages".into(), self.wire_messages(&request.messages));
        if let Some(tools) = request.tools.as_ref().filter(|t| t.as_array().is_some_and(|a| !a.is_empty())) {
            body.insert("tools".into(), tools.clone());
            body.insert("tool_choice".into(), tool_choice(&request.tool_choice, request.parallel_tool_calls));
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    /// Anthropic's rules with thinking: a budget of at least 1,024 tokens, below
    /// `max_tokens`; no temperature (it must stay 1); tool choice `auto` or `none` only.
    fn adjust(&self, request: &mut ModelRequest, notes: &mut Vec<RequestNote>) {
        let Some(budget) = thinking_budget(request.options.thinking) else { return };
        if let Some(Thinking::Budget(asked)) = request.options.thinking
            && asked < MIN_THINKING_BUDGET
        {
            notes.push(RequestNote::new(
                "thinking",
                format!("a budget of {asked} is below Anthropic's minimum: {MIN_THINKING_BUDGET} sent"),
            ));
            request.options.thinking = Some(Thinking::Budget(MIN_THINKING_BUDGET));
        }
        let budget = budget.max(MIN_THINKING_BUDGET);
        let max_tokens = request.options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        if max_tokens <= budget {
            let raised = budget + DEFAULT_MAX_TOKENS;
            notes.push(RequestNote::new(
                "max_tokens",
                format!("{max_tokens} leaves no room after a thinking budget of {budget}: {raised} sent"),
            ));
            request.options.max_tokens = Some(raised);
        }
        if request.options.temperature.take().is_some() {
            notes.push(RequestNote::new(
                "temperature",
                "Anthropic needs temperature 1 with thinking: not sent",
            ));
        }
        if matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool(_)) {
            notes.push(RequestNote::new(
                "tool_choice",
                "Anthropic allows only `auto` or `none` with thinking: `auto` sent",
            ));
            request.tool_choice = ToolChoice::Auto;
        }
    }

    fn parse_response(&self, body: &Value) -> Result<AssistantTurn, WireError> {
        if str_of(body, "type") == "error" {
            return Err(error_of(body));
        }
        let content = body
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| WireError::Shape { what: "response body", reason: "no `content` array".into() })?;
        let mut turn = AssistantTurn::new();
        for block in content {
            match str_of(block, "type") {
                "text" => turn.push_text(str_of(block, "text")),
                "thinking" => {
                    let signature = block.get("signature").and_then(Value::as_str).map(str::to_string);
                    turn.content
                        .push(ContentBlock::Reasoning(Reasoning::new(str_of(block, "thinking"), signature)));
                }
                "redacted_thinking" => {
                    turn.content.push(ContentBlock::Reasoning(Reasoning::redacted(str_of(block, "data"))));
                }
                "tool_use" => {
                    let input = block.get("input").map_or_else(String::new, Value::to_string);
                    let input = match block.get("input") {
                        // A string is taken as the JSON text it should have been.
                        Some(Value::String(text)) => text.clone(),
                        _ => input,
                    };
                    turn.content.push(ContentBlock::ToolCall(ToolCall::new(
                        str_of(block, "id"),
                        str_of(block, "name"),
                        input,
                    )));
                }
                _ => {}
            }
        }
        turn.finish_reason = stop_reason(str_of(body, "stop_reason"));
        Ok(turn)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(EventDecoder::default())
    }

    fn wire_messages(&self, messages: &[Message]) -> Value {
        // Messages alternate user / assistant: consecutive ones of one side are merged.
        let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
        for message in messages {
            let (role, mut blocks) = match message.role {
                Role::System => continue,
                Role::User => ("user", vec![json!({"type": "text", "text": message.text()})]),
                Role::Assistant => ("assistant", assistant_blocks(message)),
                Role::Tool => {
                    let results: Vec<Value> = message
                        .content
                        .iter()
                        .filter_map(|block| match block {
                            ContentBlock::ToolResult(result) => Some(json!({
                                "type": "tool_result", "tool_use_id": result.call_id,
                                "content": result_content(result), "is_error": result.is_error
                            })),
                            _ => None,
                        })
                        .collect();
                    if results.is_empty() {
                        ("user", vec![json!({"type": "text", "text": message.text()})])
                    } else {
                        ("user", results)
                    }
                }
            };
            blocks.retain(|b| !(str_of(b, "type") == "text" && str_of(b, "text").is_empty()));
            if blocks.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some((last, existing)) if *last == role => existing.append(&mut blocks),
                _ => out.push((role, blocks)),
            }
        }
        Value::Array(
            out.into_iter()
                .map(|(role, mut content)| {
                    // Results come first in a user message.
                    content.sort_by_key(|b| str_of(b, "type") != "tool_result");
                    json!({"role": role, "content": content})
                })
                .collect(),
        )
    }
}

/// An assistant message's blocks as Anthropic takes them back: reasoning unchanged.
fn assistant_blocks(message: &Message) -> Vec<Value> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentBlock::Reasoning(r) if r.redacted => {
                Some(json!({"type": "redacted_thinking", "data": r.signature.clone().unwrap_or_default()}))
            }
            ContentBlock::Reasoning(r) => Some(json!({
                "type": "thinking", "thinking": r.text, "signature": r.signature.clone().unwrap_or_default()
            })),
            ContentBlock::ToolCall(call) => {
                Some(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input_of(call)}))
            }
            ContentBlock::ToolResult(_) => None,
        })
        .collect()
}

/// Decodes Messages stream events.
#[derive(Debug, Default)]
struct EventDecoder {
    /// Content block index → our call number, for the tool_use blocks still open.
    calls: HashMap<i64, usize>,
    /// Calls started so far.
    started: usize,
    done: bool,
}

impl StreamDecoder for EventDecoder {
    fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        if self.done {
            return Ok(());
        }
        let data = event_json(event)?;
        let kind = event.event.as_deref().unwrap_or_else(|| str_of(&data, "type"));
        let index = data.get("index").and_then(Value::as_i64).unwrap_or(-1);
        match kind {
            "content_block_start" => {
                let block = data.get("content_block").unwrap_or(&Value::Null);
                match str_of(block, "type") {
                    "tool_use" => {
                        let number = self.started;
                        self.started += 1;
                        // A second start at an open index ends the call there first.
                        if let Some(previous) = self.calls.insert(index, number) {
                            deltas.push(TurnDelta::ToolCallEnd { index: previous });
                        }
                        deltas.push(TurnDelta::ToolCallStart {
                            index: number,
                            id: str_of(block, "id").to_string(),
                            name: str_of(block, "name").to_string(),
                        });
                        // The start carries `input: {}`; a proxy that sends the whole
                        // input here sends no deltas.
                        if let Some(input) =
                            block.get("input").filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        {
                            deltas.push(TurnDelta::ToolCallArguments {
                                index: number,
                                fragment: input.to_string(),
                            });
                        }
                    }
                    "redacted_thinking" => {
                        deltas.push(TurnDelta::ReasoningBlock(Reasoning::redacted(str_of(block, "data"))));
                    }
                    "text" => {
                        let text = str_of(block, "text");
                        if !text.is_empty() {
                            deltas.push(TurnDelta::Text(text.to_string()));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                match str_of(delta, "type") {
                    "text_delta" => deltas.push(TurnDelta::Text(str_of(delta, "text").to_string())),
                    "thinking_delta" => {
                        deltas.push(TurnDelta::Reasoning(str_of(delta, "thinking").to_string()))
                    }
                    "signature_delta" => {
                        deltas.push(TurnDelta::ReasoningSignature(str_of(delta, "signature").to_string()));
                    }
                    "input_json_delta" => {
                        if let Some(&number) = self.calls.get(&index) {
                            let fragment = str_of(delta, "partial_json");
                            if !fragment.is_empty() {
                                deltas.push(TurnDelta::ToolCallArguments {
                                    index: number,
                                    fragment: fragment.to_string(),
                                });
                            }
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                // Removed: the call takes nothing more, and a repeated stop ends nothing.
                if let Some(number) = self.calls.remove(&index) {
                    deltas.push(TurnDelta::ToolCallEnd { index: number });
                }
            }
            "message_delta" => {
                let reason = data.get("delta").map(|d| str_of(d, "stop_reason")).unwrap_or_default();
                if let Some(reason) = stop_reason(reason) {
                    deltas.push(TurnDelta::Finish(reason));
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                self.done = true;
                return Err(error_of(&data));
            }
            // `message_start`, `ping`, and event types added later.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _deltas: &mut Vec<TurnDelta>) {
        self.done = true;
    }
}
