//! The OpenAI Responses front: `POST /v1/responses`.
//!
//! The request is read into the same [`TurnRequest`] the Chat Completions front makes:
//! `instructions` becomes the system message, `input` the conversation (`function_call`
//! items the assistant's calls, `function_call_output` items tool messages),
//! `max_output_tokens` `max_tokens`; `temperature`, `top_p` and `user` pass. The reply
//! comes back as a `response` of `reasoning`, `message` and `function_call` output items,
//! or as the Responses stream of named events. The API's server-side state
//! (`previous_response_id`, `conversation`, `item_reference` items) and its hosted tools
//! (`web_search`, `file_search`, …) are refused: the gateway keeps nothing and offers only
//! function tools. Fields with no Chat Completions equivalent (`text`, `reasoning`,
//! `store`, `metadata`, `include`, `truncation`, …) are dropped.

use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::chat::tool_choice;
use super::reply::{Call, Finish, Piece};
use super::request::{Function, TurnRequest};
use super::upstream::{End, Item};
use super::{Front, GatewayError, Reply, json_body, now_seconds, openai_error, sse};
use crate::ContentPart;
use crate::model::{ContentBlock, Message, Role, ToolCall, ToolChoice, ToolResultBlock};
use crate::providers::openai_chat::ChatText;

/// A Responses request, as far as the gateway reads it; other fields have no Chat
/// Completions equivalent and are dropped.
#[derive(Debug, Deserialize)]
struct ResponsesRequest {
    #[serde(default)]
    model: String,
    #[serde(default)]
    instructions: Option<String>,
    /// A string (one user message) or a list of items, read one by one by
    /// [`InputItem`] so that an error names the item.
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    tools: Option<Vec<ResponsesTool>>,
    #[serde(default)]
    tool_choice: Option<ResponsesToolChoice>,
    #[serde(default)]
    parallel_tool_calls: Option<bool>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    max_output_tokens: Option<u64>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    top_p: Option<f64>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    previous_response_id: Option<String>,
    #[serde(default)]
    conversation: Option<Value>,
}

/// An item of `input`: a message (`type` `message`, or none), a `function_call`, a
/// `function_call_output`, or another kind (`reasoning` is dropped, the rest refused).
/// The fields of every kind are read, each kind checks those it needs.
#[derive(Debug, Deserialize)]
struct InputItem {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<ChatText<'static>>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    output: Option<ChatText<'static>>,
}

/// A tool of `tools`: a function (flat: `name`, `description`, `parameters`, `strict`),
/// or one of OpenAI's hosted tools, which the gateway cannot offer.
#[derive(Debug, Deserialize)]
struct ResponsesTool {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    strict: Option<bool>,
}

/// `tool_choice`: `auto`, `none`, `required`, or `{"type": "function", "name"}`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ResponsesToolChoice {
    Mode(String),
    Typed {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        name: Option<String>,
    },
}

impl ResponsesToolChoice {
    /// The choice, and how a response repeats it.
    fn read(self) -> Result<(ToolChoice, Value), GatewayError> {
        match self {
            ResponsesToolChoice::Mode(mode) => Ok((tool_choice(&mode)?, Value::String(mode))),
            ResponsesToolChoice::Typed { kind, name } if kind == "function" => match name {
                Some(name) if !name.is_empty() => {
                    let echo = json!({"type": "function", "name": name});
                    Ok((ToolChoice::Tool(name), echo))
                }
                _ => {
                    Err(GatewayError::bad("a `function` choice names no function", "tool_choice".to_string()))
                }
            },
            ResponsesToolChoice::Typed { kind, .. } => {
                let message = format!(
                    "`{kind}` is not a tool choice the gateway offers (auto, none, required, or a named function)"
                );
                Err(GatewayError::bad(message, "tool_choice".to_string()))
            }
        }
    }
}

/// Why a request that relies on the API's stored state is refused.
const STATELESS: &str = "the gateway keeps no state between requests: send the whole conversation as `input`";

impl ResponsesRequest {
    /// The front-neutral request, and the request's fields a response repeats
    /// (`tools`, `tool_choice`, `parallel_tool_calls`, sampling).
    fn into_turn(self) -> Result<(TurnRequest, Map<String, Value>), GatewayError> {
        if self.previous_response_id.as_deref().is_some_and(|id| !id.is_empty()) {
            let message = format!("`previous_response_id` is not supported: {STATELESS}");
            return Err(GatewayError::bad(message, "previous_response_id".to_string()));
        }
        if self.conversation.as_ref().is_some_and(|c| !c.is_null()) {
            let message = format!("`conversation` is not supported: {STATELESS}");
            return Err(GatewayError::bad(message, "conversation".to_string()));
        }
        let mut messages = Vec::new();
        if let Some(instructions) = self.instructions.filter(|i| !i.is_empty()) {
            messages.push(Message::system(instructions));
        }
        match self.input {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => messages.push(Message::user(text)),
            Some(Value::Array(items)) => {
                for (i, item) in items.into_iter().enumerate() {
                    let item: InputItem = serde_path_to_error::deserialize(item).map_err(|error| {
                        let message = format!("the input item is not valid: {}", error.inner());
                        let path = error.path().to_string();
                        let param =
                            if path == "." { format!("input[{i}]") } else { format!("input[{i}].{path}") };
                        GatewayError::bad(message, param)
                    })?;
                    item.read(i, &mut messages)?;
                }
            }
            Some(_) => {
                let message = "`input` is neither a string nor a list of items";
                return Err(GatewayError::bad(message, "input".to_string()));
            }
        }
        let mut functions = Vec::new();
        let mut tools = Vec::new();
        for (i, tool) in self.tools.unwrap_or_default().into_iter().enumerate() {
            if tool.kind != "function" {
                let message = format!(
                    "`{}` is one of OpenAI's hosted tools: the gateway offers only function tools",
                    tool.kind
                );
                return Err(GatewayError::bad(message, format!("tools[{i}]")));
            }
            let function = Function {
                name: tool.name.unwrap_or_default(),
                description: tool.description.unwrap_or_default(),
                parameters: tool.parameters.unwrap_or(Value::Null),
            };
            tools.push(json!({
                "type": "function", "name": function.name,
                "description": (!function.description.is_empty()).then_some(&function.description),
                "parameters": function.parameters, "strict": tool.strict,
            }));
            functions.push(function);
        }
        let (tool_choice, tool_choice_echo) = match self.tool_choice {
            Some(choice) => choice.read()?,
            None => (ToolChoice::Auto, json!("auto")),
        };
        let mut options = Map::new();
        if let Some(max_tokens) = self.max_output_tokens {
            options.insert("max_tokens".into(), json!(max_tokens));
        }
        if let Some(temperature) = self.temperature {
            options.insert("temperature".into(), json!(temperature));
        }
        if let Some(top_p) = self.top_p {
            options.insert("top_p".into(), json!(top_p));
        }
        if let Some(user) = &self.user {
            options.insert("user".into(), Value::String(user.clone()));
        }
        let mut echo = Map::new();
        echo.insert("parallel_tool_calls".into(), json!(self.parallel_tool_calls.unwrap_or(true)));
        echo.insert("tool_choice".into(), tool_choice_echo);
        echo.insert("tools".into(), Value::Array(tools));
        echo.insert("temperature".into(), json!(self.temperature));
        echo.insert("top_p".into(), json!(self.top_p));
        echo.insert("max_output_tokens".into(), json!(self.max_output_tokens));
        echo.insert("user".into(), json!(self.user));
        let turn = TurnRequest {
            model: self.model,
            messages,
            functions,
            tool_choice,
            parallel_tool_calls: self.parallel_tool_calls,
            stream: self.stream.unwrap_or(false),
            options,
        };
        Ok((turn, echo))
    }
}

impl InputItem {
    /// Adds the item, the `index`th of `input`, to the conversation: a call joins the
    /// assistant message before it (that of the calls before it, or the assistant's
    /// text), so that a turn's calls are one message.
    fn read(self, index: usize, out: &mut Vec<Message>) -> Result<(), GatewayError> {
        let param = |field: &str| format!("input[{index}].{field}");
        match self.kind.as_deref().unwrap_or("message") {
            "message" => {
                let role =
                    self.role.ok_or_else(|| GatewayError::bad("a message has no `role`", param("role")))?;
                let content = self
                    .content
                    .ok_or_else(|| GatewayError::bad("a message has no `content`", param("content")))?;
                let text = content.text();
                out.push(match role.as_str() {
                    "user" => Message::user(text),
                    "assistant" => Message::assistant(text),
                    "system" | "developer" => Message::system(text),
                    other => {
                        let message =
                            format!("`{other}` is not a role (user, assistant, system or developer)");
                        return Err(GatewayError::bad(message, param("role")));
                    }
                });
            }
            "function_call" => {
                let call_id = self.call_id.ok_or_else(|| {
                    GatewayError::bad("a `function_call` item has no `call_id`", param("call_id"))
                })?;
                let name = self.name.ok_or_else(|| {
                    GatewayError::bad("a `function_call` item has no `name`", param("name"))
                })?;
                let call =
                    ContentBlock::ToolCall(ToolCall::new(call_id, name, self.arguments.unwrap_or_default()));
                match out.last_mut() {
                    Some(last) if last.role == Role::Assistant => last.content.push(call),
                    _ => out.push(Message::with_content(Role::Assistant, vec![call])),
                }
            }
            "function_call_output" => {
                let call_id = self.call_id.ok_or_else(|| {
                    GatewayError::bad("a `function_call_output` item has no `call_id`", param("call_id"))
                })?;
                let text = self.output.map(|o| o.text().into_owned()).unwrap_or_default();
                out.push(Message::with_content(
                    Role::Tool,
                    vec![ContentBlock::ToolResult(ToolResultBlock {
                        call_id,
                        name: String::new(),
                        content: vec![ContentPart::text(text)],
                        is_error: false,
                    })],
                ));
            }
            // The model's reasoning of an earlier turn: not sent upstream.
            "reasoning" => {}
            "item_reference" => {
                let message = format!("`item_reference` items are not supported: {STATELESS}");
                return Err(GatewayError::bad(message, format!("input[{index}]")));
            }
            other => {
                let message = format!(
                    "`{other}` items are not carried by the gateway \
                     (it takes messages, `function_call` and `function_call_output` items)"
                );
                return Err(GatewayError::bad(message, param("type")));
            }
        }
        Ok(())
    }
}

impl Front for Frames {
    fn read(body: &[u8]) -> Result<(TurnRequest, Self), GatewayError> {
        let (turn, echo) = json_body::<ResponsesRequest>(body)?.into_turn()?;
        let frames = Frames::new(turn.model.clone(), echo);
        Ok((turn, frames))
    }

    fn error(error: &GatewayError) -> Response {
        openai_error(error)
    }

    fn frame(&mut self, item: Item) -> (String, bool) {
        Frames::frame(self, item)
    }

    fn body(&self, reply: Reply, end: &End) -> Value {
        Frames::body(self, reply, end)
    }
}

/// The kind of an output item left open in a stream (a `function_call` item opens and
/// closes with its call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Message,
    Reasoning,
}

/// The output item open in a stream.
#[derive(Debug)]
struct OpenItem {
    kind: Open,
    id: String,
    /// Its `output_index`.
    index: usize,
    /// Its text so far.
    text: String,
}

/// Writes Responses events and bodies for one reply.
pub(crate) struct Frames {
    id: String,
    created_at: u64,
    model: String,
    /// The request's fields every response object repeats.
    echo: Map<String, Value>,
    /// The next event's `sequence_number`.
    sequence: u64,
    /// Whether `response.created` was sent.
    began: bool,
    /// The output items done so far, as the final response lists them.
    output: Vec<Value>,
    open: Option<OpenItem>,
}

impl Frames {
    /// The writer of a reply to a request for `model`, with a new `resp_…` id.
    fn new(model: String, echo: Map<String, Value>) -> Self {
        Frames {
            id: format!("resp_{}", uuid::Uuid::new_v4().simple()),
            created_at: now_seconds(),
            model,
            echo,
            sequence: 0,
            began: false,
            output: Vec::new(),
            open: None,
        }
    }

    /// The `response` object: `status`, its `output`, and for a finished one how it
    /// ended (usage, and why it is incomplete).
    fn response(&self, status: &str, output: Vec<Value>, end: Option<&End>) -> Value {
        let incomplete =
            end.and_then(|end| incomplete_reason(end.finish)).map(|reason| json!({"reason": reason}));
        let mut response = json!({
            "id": self.id, "object": "response", "created_at": self.created_at, "status": status,
            "error": null, "incomplete_details": incomplete, "model": self.model, "output": output,
            "usage": end.map(|end| usage(end.usage.as_ref())),
        });
        if let Some(fields) = response.as_object_mut() {
            fields.extend(self.echo.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        response
    }

    /// The `response` body of a whole reply: its reasoning, its text, then its calls.
    fn body(&self, reply: Reply, end: &End) -> Value {
        let status = status(end.finish);
        let mut output = Vec::with_capacity(reply.calls.len() + 2);
        if !reply.reasoning.is_empty() {
            output.push(reasoning_item(&item_id("rs"), Some(&reply.reasoning)));
        }
        if !reply.text.is_empty() {
            let item_status = if status == "completed" { "completed" } else { "incomplete" };
            output.push(message_item(&item_id("msg"), Some(&reply.text), item_status));
        }
        output.extend(reply.calls.iter().map(|call| call_item(call, &call.arguments, "completed")));
        self.response(status, output, Some(end))
    }

    /// Appends the event `name` (its data with `type` and `sequence_number`) to `out`.
    fn event(&mut self, name: &str, mut data: Value, out: &mut String) {
        if let Some(fields) = data.as_object_mut() {
            fields.insert("type".into(), Value::String(name.to_string()));
            fields.insert("sequence_number".into(), json!(self.sequence));
        }
        self.sequence += 1;
        out.push_str(&sse(Some(name), &data));
    }

    /// The events for `item`, and whether they end the stream.
    fn frame(&mut self, item: Item) -> (String, bool) {
        let mut out = String::new();
        if !self.began {
            self.began = true;
            let response = self.response("in_progress", Vec::new(), None);
            self.event("response.created", json!({"response": response}), &mut out);
            let response = self.response("in_progress", Vec::new(), None);
            self.event("response.in_progress", json!({"response": response}), &mut out);
        }
        let last = match item {
            Item::Piece(Piece::Text(text)) => {
                self.text(Open::Message, &text, &mut out);
                false
            }
            Item::Piece(Piece::Reasoning(text)) => {
                self.text(Open::Reasoning, &text, &mut out);
                false
            }
            Item::Piece(Piece::Call(call)) => {
                self.close("completed", &mut out);
                self.call(&call, &mut out);
                false
            }
            Item::End(end) => {
                let status = status(end.finish);
                self.close(if status == "completed" { "completed" } else { "incomplete" }, &mut out);
                let output = self.output.clone();
                let response = self.response(status, output, Some(&end));
                let name = if status == "completed" { "response.completed" } else { "response.incomplete" };
                self.event(name, json!({"response": response}), &mut out);
                true
            }
            Item::Failed(error) => {
                let param = match &error {
                    GatewayError::BadRequest { param, .. } => param.clone(),
                    _ => None,
                };
                let data = json!({"code": error.kind(), "message": error.to_string(), "param": param});
                self.event("error", data, &mut out);
                true
            }
            Item::Ready { .. } => false,
        };
        (out, last)
    }

    /// Adds text to the open item of `kind`, opening it first (and closing the item
    /// open before, of the other kind).
    fn text(&mut self, kind: Open, text: &str, out: &mut String) {
        if text.is_empty() {
            return;
        }
        if self.open.as_ref().is_none_or(|open| open.kind != kind) {
            self.close("completed", out);
            self.start(kind, out);
        }
        let Some((id, index)) = self.open.as_mut().map(|open| {
            open.text.push_str(text);
            (open.id.clone(), open.index)
        }) else {
            return;
        };
        match kind {
            Open::Message => {
                let data = json!({
                    "item_id": id, "output_index": index, "content_index": 0, "delta": text, "logprobs": [],
                });
                self.event("response.output_text.delta", data, out);
            }
            Open::Reasoning => {
                let data = json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": text});
                self.event("response.reasoning_summary_text.delta", data, out);
            }
        }
    }

    /// Opens an item of `kind`: its `output_item.added`, and its (empty) part.
    fn start(&mut self, kind: Open, out: &mut String) {
        let index = self.output.len();
        let (id, item) = match kind {
            Open::Message => {
                let id = item_id("msg");
                let item = message_item(&id, None, "in_progress");
                (id, item)
            }
            Open::Reasoning => {
                let id = item_id("rs");
                let item = reasoning_item(&id, None);
                (id, item)
            }
        };
        self.event("response.output_item.added", json!({"output_index": index, "item": item}), out);
        match kind {
            Open::Message => {
                let data = json!({
                    "item_id": id, "output_index": index, "content_index": 0, "part": output_text(""),
                });
                self.event("response.content_part.added", data, out);
            }
            Open::Reasoning => {
                let data = json!({
                    "item_id": id, "output_index": index, "summary_index": 0, "part": summary_text(""),
                });
                self.event("response.reasoning_summary_part.added", data, out);
            }
        }
        self.open = Some(OpenItem { kind, id, index, text: String::new() });
    }

    /// Closes the open item, if any: its text's and part's `done` events, then
    /// `output_item.done` (a message item with `status`).
    fn close(&mut self, status: &str, out: &mut String) {
        let Some(OpenItem { kind, id, index, text }) = self.open.take() else { return };
        let item = match kind {
            Open::Message => {
                let data = json!({
                    "item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": [],
                });
                self.event("response.output_text.done", data, out);
                let data = json!({
                    "item_id": id, "output_index": index, "content_index": 0, "part": output_text(&text),
                });
                self.event("response.content_part.done", data, out);
                message_item(&id, Some(&text), status)
            }
            Open::Reasoning => {
                let data = json!({"item_id": id, "output_index": index, "summary_index": 0, "text": text});
                self.event("response.reasoning_summary_text.done", data, out);
                let data = json!({
                    "item_id": id, "output_index": index, "summary_index": 0, "part": summary_text(&text),
                });
                self.event("response.reasoning_summary_part.done", data, out);
                reasoning_item(&id, Some(&text))
            }
        };
        self.event("response.output_item.done", json!({"output_index": index, "item": item}), out);
        self.output.push(item);
    }

    /// A call's item, whole: added, its arguments in one delta, done.
    fn call(&mut self, call: &Call, out: &mut String) {
        let index = self.output.len();
        let id = function_call_id(&call.id);
        let added = call_item(call, "", "in_progress");
        self.event("response.output_item.added", json!({"output_index": index, "item": added}), out);
        let data = json!({"item_id": id, "output_index": index, "delta": call.arguments});
        self.event("response.function_call_arguments.delta", data, out);
        let data =
            json!({"item_id": id, "output_index": index, "name": call.name, "arguments": call.arguments});
        self.event("response.function_call_arguments.done", data, out);
        let item = call_item(call, &call.arguments, "completed");
        self.event("response.output_item.done", json!({"output_index": index, "item": item}), out);
        self.output.push(item);
    }
}

/// A new output item id: `prefix_…`.
fn item_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// The id of a call's `function_call` item: `fc_…` (`call_x` gives `fc_x`).
fn function_call_id(call_id: &str) -> String {
    format!("fc_{}", call_id.strip_prefix("call_").unwrap_or(call_id))
}

/// A `message` output item, with its text as one `output_text` part (no part when
/// `text` is `None`).
fn message_item(id: &str, text: Option<&str>, status: &str) -> Value {
    let content: Vec<Value> = text.map(output_text).into_iter().collect();
    json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
}

/// An `output_text` part.
fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// A `reasoning` output item, with its text as one summary part (none when `text` is
/// `None`).
fn reasoning_item(id: &str, text: Option<&str>) -> Value {
    let summary: Vec<Value> = text.map(summary_text).into_iter().collect();
    json!({"type": "reasoning", "id": id, "summary": summary})
}

/// A `summary_text` part.
fn summary_text(text: &str) -> Value {
    json!({"type": "summary_text", "text": text})
}

/// A `function_call` output item of `call`, with `arguments`.
fn call_item(call: &Call, arguments: &str, status: &str) -> Value {
    json!({
        "type": "function_call", "id": function_call_id(&call.id), "call_id": call.id,
        "name": call.name, "arguments": arguments, "status": status,
    })
}

/// The response's `status` for how the reply ended.
fn status(finish: Finish) -> &'static str {
    if incomplete_reason(finish).is_some() { "incomplete" } else { "completed" }
}

/// Why a reply that ended with `finish` is incomplete, if it is.
fn incomplete_reason(finish: Finish) -> Option<&'static str> {
    match finish {
        Finish::Length => Some("max_output_tokens"),
        Finish::ContentFilter => Some("content_filter"),
        Finish::Stop | Finish::ToolCalls => None,
    }
}

/// The Responses `usage` of the upstream's Chat Completions usage (zeros for none).
fn usage(upstream: Option<&Value>) -> Value {
    let count = |path: &[&str]| {
        upstream
            .and_then(|u| path.iter().try_fold(u, |value, key| value.get(key)))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let input = count(&["prompt_tokens"]);
    let output = count(&["completion_tokens"]);
    let total =
        upstream.and_then(|u| u.get("total_tokens")).and_then(Value::as_u64).unwrap_or(input + output);
    json!({
        "input_tokens": input,
        "input_tokens_details": {
            "cached_tokens": count(&["prompt_tokens_details", "cached_tokens"]),
            "cache_write_tokens": 0,
        },
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": count(&["completion_tokens_details", "reasoning_tokens"])},
        "total_tokens": total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(body: Value) -> Result<(TurnRequest, Map<String, Value>), GatewayError> {
        json_body::<ResponsesRequest>(body.to_string().as_bytes()).and_then(ResponsesRequest::into_turn)
    }

    fn weather_tool() -> Value {
        json!({"type": "function", "name": "get_weather", "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true})
    }

    fn bad_param(error: &GatewayError) -> Option<&str> {
        match error {
            GatewayError::BadRequest { param, .. } => param.as_deref(),
            _ => None,
        }
    }

    fn result_of(message: &Message) -> &ToolResultBlock {
        match message.content.as_slice() {
            [ContentBlock::ToolResult(result)] => result,
            other => panic!("not one tool result: {other:?}"),
        }
    }

    fn call(index: usize, id: &str, name: &str, arguments: &str) -> Call {
        Call { index, id: id.into(), name: name.into(), arguments: arguments.into() }
    }

    #[test]
    fn a_string_input_is_one_user_message() {
        let body = json!({"model": "gpt-x", "input": "Hello?", "max_output_tokens": 64, "temperature": 0.2,
            "top_p": 0.8, "user": "u-1", "store": false, "metadata": {"k": "v"}, "text": {"format": {"type": "text"}},
            "reasoning": {"effort": "low"}, "include": ["reasoning.encrypted_content"], "truncation": "auto",
            "stream": true});
        let (turn, echo) = turn(body).expect("a valid request");
        assert_eq!(turn.model, "gpt-x");
        assert!(turn.stream);
        assert_eq!(turn.messages.len(), 1);
        assert_eq!(turn.messages[0].role, Role::User);
        assert_eq!(turn.messages[0].text(), "Hello?");
        assert!(turn.functions.is_empty());
        assert_eq!(turn.tool_choice, ToolChoice::Auto);
        let expected = json!({"max_tokens": 64, "temperature": 0.2, "top_p": 0.8, "user": "u-1"});
        assert_eq!(Value::Object(turn.options), expected, "the Responses-only fields are dropped");
        assert_eq!(echo["tool_choice"], "auto");
        assert_eq!(echo["parallel_tool_calls"], true);
        assert_eq!(echo["max_output_tokens"], 64);
        assert_eq!(echo["tools"], json!([]));
    }

    #[test]
    fn items_become_a_conversation_with_calls_and_results() {
        let body = json!({
            "model": "gpt-x", "instructions": "Be brief.", "tools": [weather_tool(),
                {"type": "function", "name": "get_time", "parameters": {"type": "object"}}],
            "parallel_tool_calls": false,
            "input": [
                {"role": "developer", "content": "Use tools."},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather "},
                    {"type": "input_image", "image_url": "data:"}, {"type": "input_text", "text": "and time?"}]},
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Two tools."}]},
                {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                    "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
                {"type": "function_call", "id": "fc_a", "call_id": "call_a", "name": "get_weather",
                    "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
                {"type": "function_call", "call_id": "call_b", "name": "get_time", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_a", "output": "18 °C"},
                {"type": "function_call_output", "call_id": "call_b",
                    "output": [{"type": "input_text", "text": "10:00"}, {"type": "input_text", "text": " CET"}]},
                {"role": "user", "content": "Thanks."},
            ],
        });
        let (turn, echo) = turn(body).expect("a valid request");
        let roles: Vec<Role> = turn.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::System, Role::User, Role::Assistant, Role::Tool, Role::Tool, Role::User]
        );
        assert_eq!(turn.messages[0].text(), "Be brief.");
        assert_eq!(turn.messages[1].text(), "Use tools.");
        assert_eq!(turn.messages[2].text(), "Weather and time?");
        let assistant = &turn.messages[3];
        assert_eq!(assistant.text(), "Checking.", "the reasoning item is dropped");
        let calls: Vec<(&str, &str, &str)> =
            assistant.tool_calls().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(calls, [("call_a", "get_weather", r#"{"city":"Paris"}"#), ("call_b", "get_time", "{}")]);
        let first = result_of(&turn.messages[4]);
        assert_eq!((first.call_id.as_str(), first.name.as_str(), first.is_error), ("call_a", "", false));
        assert_eq!(first.content, vec![ContentPart::text("18 °C")]);
        let second = result_of(&turn.messages[5]);
        assert_eq!(second.call_id, "call_b");
        assert_eq!(second.content, vec![ContentPart::text("10:00 CET")]);
        assert_eq!(turn.messages[6].text(), "Thanks.");
        let names: Vec<&str> = turn.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["get_weather", "get_time"]);
        assert_eq!(turn.functions[0].description, "The weather in a city.");
        assert_eq!(turn.functions[0].parameters["properties"]["city"]["type"], "string");
        assert_eq!(turn.functions[1].description, "");
        assert_eq!(turn.parallel_tool_calls, Some(false));
        assert_eq!(echo["parallel_tool_calls"], false);
        assert_eq!(echo["tools"][0]["name"], "get_weather");
        assert_eq!(echo["tools"][0]["strict"], true);
        assert_eq!(echo["tools"][1]["description"], Value::Null);

        // The conversation reads into the protocol's text for the upstream.
        let protocol = crate::protocol::vcp::VcpProtocol::default();
        let offer = turn.offer().expect("an offer");
        let sent = turn.text_conversation(&protocol, &offer, None).expect("a conversation");
        assert_eq!(sent[3].role, Role::Assistant);
        assert!(sent[3].text().starts_with("Checking.\n"), "{}", sent[3].text());
        assert!(sent[3].text().contains("Paris"), "{}", sent[3].text());
        assert!(sent.iter().any(|m| m.text().contains("10:00 CET")));
    }

    #[test]
    fn calls_without_text_open_an_assistant_message() {
        let body = json!({"input": [
            {"role": "user", "content": "Go."},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "function_call", "call_id": "c2", "name": "f"},
        ]});
        let (turn, _) = turn(body).expect("a valid request");
        let roles: Vec<Role> = turn.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::Assistant]);
        assert_eq!(turn.messages[1].text(), "");
        assert_eq!(turn.messages[1].tool_calls().count(), 1);
        let last: Vec<&str> = turn.messages[3].tool_calls().map(|c| c.id.as_str()).collect();
        assert_eq!(last, ["c2"], "a call after a result starts a new assistant message");
    }

    #[test]
    fn tool_choice_forms() {
        let choice = |choice: Value| {
            turn(json!({"input": "x", "tools": [weather_tool()], "tool_choice": choice}))
                .map(|(t, echo)| (t.tool_choice, echo["tool_choice"].clone()))
        };
        assert_eq!(choice(json!("auto")), Ok((ToolChoice::Auto, json!("auto"))));
        assert_eq!(choice(json!("none")), Ok((ToolChoice::None, json!("none"))));
        assert_eq!(choice(json!("required")), Ok((ToolChoice::Required, json!("required"))));
        assert_eq!(
            choice(json!({"type": "function", "name": "get_weather"})),
            Ok((ToolChoice::Tool("get_weather".into()), json!({"type": "function", "name": "get_weather"})))
        );
        let nameless = choice(json!({"type": "function"})).unwrap_err();
        assert_eq!(bad_param(&nameless), Some("tool_choice"), "{nameless}");
        let hosted = choice(json!({"type": "web_search_preview"})).unwrap_err();
        assert!(hosted.to_string().contains("`web_search_preview`"), "{hosted}");
        let unknown = choice(json!("sometimes")).unwrap_err();
        assert!(unknown.to_string().contains("`sometimes`"), "{unknown}");
    }

    #[test]
    fn state_hosted_tools_and_bad_items_are_refused() {
        let error = turn(json!({"input": "x", "previous_response_id": "resp_1"})).unwrap_err();
        assert_eq!(error.status(), 400);
        assert_eq!(bad_param(&error), Some("previous_response_id"));
        assert!(error.to_string().contains("keeps no state"), "{error}");
        assert!(error.to_string().contains("`input`"), "{error}");
        assert_eq!(error.openai()["type"], "invalid_request_error");

        let error = turn(json!({"input": "x", "conversation": "conv_1"})).unwrap_err();
        assert_eq!(bad_param(&error), Some("conversation"));

        let error =
            turn(json!({"input": "x", "tools": [weather_tool(), {"type": "web_search"}]})).unwrap_err();
        assert_eq!(bad_param(&error), Some("tools[1]"));
        assert!(error.to_string().contains("only function tools"), "{error}");
        let error = turn(json!({"input": "x", "tools": [{"type": "file_search", "vector_store_ids": []}]}));
        assert_eq!(bad_param(&error.unwrap_err()), Some("tools[0]"));

        let error = turn(json!({"input": [{"type": "item_reference", "id": "msg_1"}]})).unwrap_err();
        assert_eq!(bad_param(&error), Some("input[0]"));
        assert!(error.to_string().contains("keeps no state"), "{error}");
        let error = turn(json!({"input": [{"role": "user", "content": "a"}, {"type": "web_search_call"}]}));
        assert_eq!(bad_param(&error.unwrap_err()), Some("input[1].type"));
        let error = turn(json!({"input": [{"role": "tool", "content": "a"}]})).unwrap_err();
        assert_eq!(bad_param(&error), Some("input[0].role"));
        let error = turn(json!({"input": [{"type": "function_call", "name": "f"}]})).unwrap_err();
        assert_eq!(bad_param(&error), Some("input[0].call_id"));
        let error = turn(json!({"input": [{"role": "user", "content": 7}]})).unwrap_err();
        assert_eq!(bad_param(&error), Some("input[0].content"));
        let error = turn(json!({"input": 3})).unwrap_err();
        assert_eq!(bad_param(&error), Some("input"));
        assert_eq!(json_body::<ResponsesRequest>(b"{\"input\": ").unwrap_err().status(), 400);
    }

    fn echo() -> Map<String, Value> {
        let (_, echo) = turn(json!({"input": "x", "tools": [weather_tool()]})).expect("a valid request");
        echo
    }

    #[test]
    fn a_whole_reply_is_a_response() {
        let mut reply = Reply::default();
        for piece in [
            Piece::Reasoning("Think".into()),
            Piece::Text("Let me ".into()),
            Piece::Reasoning("ing.".into()),
            Piece::Text("check.".into()),
            Piece::Call(call(0, "call_abc", "get_weather", r#"{"city":"Paris"}"#)),
            Piece::Call(call(1, "call_def", "get_time", "{}")),
        ] {
            reply.add(piece);
        }
        let frames = Frames::new("gpt-x".into(), echo());
        let usage = json!({"prompt_tokens": 120, "completion_tokens": 33, "total_tokens": 153,
            "prompt_tokens_details": {"cached_tokens": 100}});
        let body = frames.body(reply, &End { finish: Finish::ToolCalls, usage: Some(usage) });
        let id = body["id"].as_str().expect("an id");
        assert!(id.starts_with("resp_") && id.len() == 37, "{id}");
        assert_eq!(body["object"], "response");
        assert_eq!(body["status"], "completed");
        assert_eq!(body["incomplete_details"], Value::Null);
        assert_eq!(body["model"], "gpt-x");
        assert!(body["created_at"].as_u64().is_some_and(|t| t > 1_600_000_000));
        assert_eq!(body["parallel_tool_calls"], true);
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(body["tools"][0]["name"], "get_weather");
        let output = body["output"].as_array().expect("output");
        assert_eq!(output.len(), 4);
        assert!(output[0]["id"].as_str().is_some_and(|id| id.starts_with("rs_")));
        assert_eq!(output[0]["summary"], json!([{"type": "summary_text", "text": "Thinking."}]));
        assert!(output[1]["id"].as_str().is_some_and(|id| id.starts_with("msg_")));
        let message = json!({"type": "message", "id": output[1]["id"], "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me check.", "annotations": [], "logprobs": []}]});
        assert_eq!(output[1], message);
        let weather = json!({"type": "function_call", "id": "fc_abc", "call_id": "call_abc", "name": "get_weather",
            "arguments": r#"{"city":"Paris"}"#, "status": "completed"});
        assert_eq!(output[2], weather);
        assert_eq!(
            (output[3]["call_id"].as_str(), output[3]["name"].as_str()),
            (Some("call_def"), Some("get_time"))
        );
        assert_eq!(output[3]["arguments"], "{}");
        let usage = json!({"input_tokens": 120, "input_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 0},
            "output_tokens": 33, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 153});
        assert_eq!(body["usage"], usage);
    }

    #[test]
    fn a_reply_cut_off_is_incomplete() {
        let mut reply = Reply::default();
        reply.add(Piece::Text("Once upon".into()));
        let frames = Frames::new("gpt-x".into(), echo());
        let body = frames.body(reply, &End { finish: Finish::Length, usage: None });
        assert_eq!(body["status"], "incomplete");
        assert_eq!(body["incomplete_details"], json!({"reason": "max_output_tokens"}));
        assert_eq!(body["output"].as_array().map(Vec::len), Some(1));
        assert_eq!(body["output"][0]["status"], "incomplete");
        assert_eq!(body["output"][0]["content"][0]["text"], "Once upon");
        assert_eq!(body["usage"]["input_tokens"], 0);
        assert_eq!(body["usage"]["total_tokens"], 0);
    }

    /// The events of a stream: each one's name and data.
    fn parse_events(text: &str) -> Vec<(String, Value)> {
        text.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|event| {
                let (name, data) = event.split_once('\n').expect("two lines");
                let name = name.strip_prefix("event: ").expect("a name");
                let data = data.strip_prefix("data: ").expect("data");
                (name.to_string(), serde_json::from_str(data).expect("JSON data"))
            })
            .collect()
    }

    #[test]
    fn a_stream_of_text_then_two_calls() {
        let mut frames = Frames::new("gpt-x".into(), echo());
        let mut text = String::new();
        let items = vec![
            Item::Ready { diagnostic: None },
            Item::Piece(Piece::Text("Let me ".into())),
            Item::Piece(Piece::Text("check.".into())),
            Item::Piece(Piece::Call(call(0, "call_abc", "get_weather", r#"{"city":"Paris"}"#))),
            Item::Piece(Piece::Call(call(1, "call_def", "get_time", "{}"))),
            Item::End(End {
                finish: Finish::ToolCalls,
                usage: Some(json!({"prompt_tokens": 9, "completion_tokens": 4})),
            }),
        ];
        let count = items.len();
        for (i, item) in items.into_iter().enumerate() {
            let (out, last) = frames.frame(item);
            assert_eq!(last, i + 1 == count, "only the end ends the stream");
            text.push_str(&out);
        }
        let events = parse_events(&text);
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        for (i, (name, data)) in events.iter().enumerate() {
            assert_eq!(data["type"], name.as_str());
            assert_eq!(data["sequence_number"], i, "{name}");
        }
        let created = &events[0].1["response"];
        assert_eq!(created["status"], "in_progress");
        assert_eq!(created["output"], json!([]));
        assert_eq!(created["usage"], Value::Null);
        let response_id = created["id"].clone();
        assert!(response_id.as_str().is_some_and(|id| id.starts_with("resp_")));
        assert_eq!(events[1].1["response"]["id"], response_id);

        let indices: Vec<Option<u64>> = events.iter().map(|(_, d)| d["output_index"].as_u64()).collect();
        let expected = [None, None, Some(0), Some(0), Some(0), Some(0), Some(0), Some(0), Some(0)]
            .into_iter()
            .chain([Some(1); 4])
            .chain([Some(2); 4])
            .chain([None]);
        assert_eq!(indices, expected.collect::<Vec<_>>());

        let message = &events[2].1["item"];
        let message_id = message["id"].clone();
        assert!(message_id.as_str().is_some_and(|id| id.starts_with("msg_")));
        assert_eq!(
            (message["status"].as_str(), message["content"].clone()),
            (Some("in_progress"), json!([]))
        );
        assert_eq!(events[3].1["item_id"], message_id);
        assert_eq!(events[3].1["part"]["text"], "");
        let deltas: Vec<&str> = events[4..6].iter().filter_map(|(_, d)| d["delta"].as_str()).collect();
        assert_eq!(deltas, ["Let me ", "check."]);
        assert_eq!(events[4].1["content_index"], 0);
        assert_eq!(events[6].1["text"], "Let me check.");
        assert_eq!(events[7].1["part"]["text"], "Let me check.");
        let message_done = &events[8].1["item"];
        assert_eq!(message_done["status"], "completed");
        assert_eq!(message_done["content"][0]["text"], "Let me check.");

        let added = &events[9].1["item"];
        assert_eq!(added["type"], "function_call");
        assert_eq!((added["id"].as_str(), added["call_id"].as_str()), (Some("fc_abc"), Some("call_abc")));
        assert_eq!((added["arguments"].as_str(), added["status"].as_str()), (Some(""), Some("in_progress")));
        assert_eq!(events[10].1["item_id"], "fc_abc");
        assert_eq!(events[10].1["delta"], r#"{"city":"Paris"}"#);
        assert_eq!(events[11].1["arguments"], r#"{"city":"Paris"}"#);
        assert_eq!(events[11].1["name"], "get_weather");
        assert_eq!(events[12].1["item"]["arguments"], r#"{"city":"Paris"}"#);
        assert_eq!(events[12].1["item"]["status"], "completed");
        assert_eq!(events[16].1["item"]["name"], "get_time");
        assert_eq!(events[16].1["item"]["id"], "fc_def");

        let completed = &events[17].1["response"];
        assert_eq!(completed["id"], response_id);
        assert_eq!(completed["status"], "completed");
        let output = completed["output"].as_array().expect("output");
        let ids: Vec<&Value> = output.iter().map(|item| &item["id"]).collect();
        assert_eq!(ids, [&message_id, &json!("fc_abc"), &json!("fc_def")], "the streamed items, in order");
        assert_eq!(output[0], *message_done);
        assert_eq!(completed["usage"]["input_tokens"], 9);
        assert_eq!(completed["usage"]["output_tokens"], 4);
        assert_eq!(completed["usage"]["total_tokens"], 13);
    }

    #[test]
    fn a_stream_of_reasoning_cut_off_then_failed() {
        let mut frames = Frames::new("gpt-x".into(), echo());
        let mut text = String::new();
        for item in [
            Item::Piece(Piece::Reasoning("Hm.".into())),
            Item::Piece(Piece::Text("Once".into())),
            Item::End(End { finish: Finish::Length, usage: None }),
        ] {
            text.push_str(&frames.frame(item).0);
        }
        let events = parse_events(&text);
        let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.reasoning_summary_part.added",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.done",
                "response.reasoning_summary_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.incomplete",
            ]
        );
        assert_eq!(events[2].1["item"]["type"], "reasoning");
        assert_eq!(events[4].1["summary_index"], 0);
        assert_eq!(events[7].1["item"]["summary"][0]["text"], "Hm.");
        assert_eq!(events[8].1["output_index"], 1);
        assert_eq!(events[13].1["item"]["status"], "incomplete");
        let response = &events[14].1["response"];
        assert_eq!(response["status"], "incomplete");
        assert_eq!(response["incomplete_details"]["reason"], "max_output_tokens");
        assert_eq!(response["output"].as_array().map(Vec::len), Some(2));

        let mut frames = Frames::new("gpt-x".into(), echo());
        let (_, last) = frames.frame(Item::Piece(Piece::Text("Hi".into())));
        assert!(!last);
        let (out, last) = frames.frame(Item::Failed(GatewayError::Stream { reason: "cut".into() }));
        assert!(last);
        let failed = parse_events(&out);
        assert_eq!(failed.len(), 1, "the error is the last event");
        let (name, data) = &failed[0];
        assert_eq!(name, "error");
        assert_eq!(data["type"], "error");
        assert_eq!(data["code"], "upstream_stream_error");
        assert_eq!(data["message"], "the upstream's reply broke off: cut");
        assert_eq!(data["param"], Value::Null);
        assert_eq!(data["sequence_number"], 5);
    }
}
