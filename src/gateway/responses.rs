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
//!
//! The request, the response object and the events are the provider codec's types
//! ([`crate::providers::openai_responses`]): what the gateway writes is what the crate's
//! own Responses client reads.

use std::borrow::Cow;

use axum::response::Response;
use serde::Serialize;
use serde_json::{Map, Value};

use super::chat::{read_request, tool_choice, typed_choice};
use super::reply::{Call, Finish, Piece};
use super::request::{Function, TurnRequest, result_message};
use super::upstream::{End, Item};
use super::{Front, GatewayError, Reply, now_seconds, openai_error, sse};
use crate::model::{ContentBlock, Message, Role, ToolCall, ToolChoice};
use crate::providers::openai_chat::{FunctionName, FunctionType, ToolChoiceParam};
use crate::providers::openai_responses::{
    CompletedEvent, DeltaEvent, ErrorEvent, Event, EventKind, IncompleteDetails, Input, InputItem,
    InputTokensDetails, ItemEvent, MessagePart, OutputItem, OutputTokensDetails, Part, ResponseBody,
    ResponsesRequest, ResponsesTool, Status, SummaryPart, Usage,
};
use crate::providers::to_value;

/// Why a request that relies on the API's stored state is refused.
const STATELESS: &str = "the gateway keeps no state between requests: send the whole conversation as `input`";

/// A client's request as the gateway hands it on, and what every response to it
/// repeats of it (`tools`, `tool_choice`, `parallel_tool_calls`, sampling), as a
/// response's fields. The request's other fields ([`ResponsesRequest::extra`]) have no
/// Chat Completions equivalent and are dropped.
fn into_turn(request: ResponsesRequest<'_>) -> Result<(TurnRequest, ResponseBody<'static>), GatewayError> {
    if request.previous_response_id.as_deref().is_some_and(|id| !id.is_empty()) {
        let message = format!("`previous_response_id` is not supported: {STATELESS}");
        return Err(GatewayError::bad(message, "previous_response_id".to_string()));
    }
    if request.conversation.as_ref().is_some_and(|c| !c.is_null()) {
        let message = format!("`conversation` is not supported: {STATELESS}");
        return Err(GatewayError::bad(message, "conversation".to_string()));
    }
    let mut messages = Vec::new();
    if let Some(instructions) = request.instructions.filter(|i| !i.is_empty()) {
        messages.push(Message::system(instructions.into_owned()));
    }
    match request.input {
        None => {}
        Some(Input::Text(text)) => messages.push(Message::user(text.into_owned())),
        Some(Input::Items(items)) => {
            for (i, item) in items.into_iter().enumerate() {
                read_item(item, i, &mut messages)?;
            }
        }
    }
    let tools: Vec<ResponsesTool<'static>> = match request.tools.tools {
        None => Vec::new(),
        Some(tools) => serde_path_to_error::deserialize(tools.into_owned()).map_err(|error| {
            let path = error.path().to_string();
            let param = if path == "." { "tools".to_string() } else { format!("tools{path}") };
            GatewayError::bad(format!("the body is not a valid request: {}", error.inner()), param)
        })?,
    };
    let mut functions = Vec::with_capacity(tools.len());
    let mut repeated = Vec::with_capacity(tools.len());
    for (i, tool) in tools.into_iter().enumerate() {
        if tool.kind != "function" {
            let message = format!(
                "`{}` is one of OpenAI's hosted tools: the gateway offers only function tools",
                tool.kind
            );
            return Err(GatewayError::bad(message, format!("tools[{i}]")));
        }
        let function = Function {
            name: tool.name.unwrap_or_default().into_owned(),
            description: tool.description.unwrap_or_default().into_owned(),
            parameters: tool.parameters.unwrap_or(Value::Null),
        };
        repeated.push(ResponsesTool {
            kind: Cow::Borrowed("function"),
            name: Some(Cow::Owned(function.name.clone())),
            description: (!function.description.is_empty()).then(|| Cow::Owned(function.description.clone())),
            parameters: Some(function.parameters.clone()),
            strict: tool.strict,
        });
        functions.push(function);
    }
    let (tool_choice, repeated_choice) = match request.tools.tool_choice {
        None => (ToolChoice::Auto, ToolChoiceParam::Mode(Cow::Borrowed("auto"))),
        Some(ToolChoiceParam::Mode(mode)) => {
            (tool_choice(&mode)?, ToolChoiceParam::Mode(Cow::Owned(mode.into_owned())))
        }
        Some(ToolChoiceParam::Function { function, .. }) if !function.name.is_empty() => {
            let name = function.name.into_owned();
            let named = FunctionName { name: Cow::Owned(name.clone()) };
            (
                ToolChoice::Tool(name),
                ToolChoiceParam::Function { kind: FunctionType::Function, function: named },
            )
        }
        Some(ToolChoiceParam::Function { .. }) => return Err(typed_choice("function")),
        Some(ToolChoiceParam::Typed { kind }) => return Err(typed_choice(&kind)),
    };
    let user = request.user.map(Cow::into_owned);
    let mut options = Map::new();
    if let Some(max_tokens) = request.max_output_tokens {
        options.insert("max_tokens".into(), Value::from(max_tokens));
    }
    if let Some(temperature) = request.temperature {
        options.insert("temperature".into(), Value::from(temperature));
    }
    if let Some(top_p) = request.top_p {
        options.insert("top_p".into(), Value::from(top_p));
    }
    if let Some(user) = &user {
        options.insert("user".into(), Value::String(user.clone()));
    }
    let repeats = ResponseBody {
        parallel_tool_calls: Some(request.tools.parallel_tool_calls.unwrap_or(true)),
        tool_choice: Some(repeated_choice),
        tools: Cow::Owned(repeated),
        temperature: request.temperature,
        top_p: request.top_p,
        max_output_tokens: request.max_output_tokens,
        user: user.map(Cow::Owned),
        ..ResponseBody::default()
    };
    let turn = TurnRequest {
        model: request.model.into_owned(),
        messages,
        functions,
        tool_choice,
        parallel_tool_calls: request.tools.parallel_tool_calls,
        stream: request.stream.unwrap_or(false),
        options,
    };
    Ok((turn, repeats))
}

/// Adds `item`, the `index`th of `input`, to the conversation, once it has what its kind
/// needs: a call joins the assistant message before it (that of the calls before it, or
/// the assistant's text), so that a turn's calls are one message.
fn read_item(item: InputItem<'_>, index: usize, out: &mut Vec<Message>) -> Result<(), GatewayError> {
    let param = |field: &str| format!("input[{index}].{field}");
    match item.kind.as_deref().unwrap_or("message") {
        "message" => {
            let role =
                item.role.ok_or_else(|| GatewayError::bad("a message has no `role`", param("role")))?;
            let content = item
                .content
                .ok_or_else(|| GatewayError::bad("a message has no `content`", param("content")))?;
            let text = content.text().into_owned();
            out.push(match role.as_ref() {
                "user" => Message::user(text),
                "assistant" => Message::assistant(text),
                "system" | "developer" => Message::system(text),
                other => {
                    let message = format!("`{other}` is not a role (user, assistant, system or developer)");
                    return Err(GatewayError::bad(message, param("role")));
                }
            });
        }
        "function_call" => {
            let call_id = item.call_id.ok_or_else(|| {
                GatewayError::bad("a `function_call` item has no `call_id`", param("call_id"))
            })?;
            let name = item
                .name
                .ok_or_else(|| GatewayError::bad("a `function_call` item has no `name`", param("name")))?;
            let arguments = item.arguments.unwrap_or_default();
            let call = ToolCall::new(call_id.into_owned(), name.into_owned(), arguments.into_owned());
            let call = ContentBlock::ToolCall(call);
            match out.last_mut() {
                Some(last) if last.role == Role::Assistant => last.content.push(call),
                _ => out.push(Message::with_content(Role::Assistant, vec![call])),
            }
        }
        "function_call_output" => {
            let call_id = item.call_id.ok_or_else(|| {
                GatewayError::bad("a `function_call_output` item has no `call_id`", param("call_id"))
            })?;
            let text = item.output.map(|o| o.text().into_owned()).unwrap_or_default();
            out.push(result_message(call_id.into_owned(), text, false));
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

impl Front for Frames {
    fn read(body: &[u8]) -> Result<(TurnRequest, Self), GatewayError> {
        let (turn, repeats) =
            into_turn(read_request::<ResponsesRequest<'static>, FunctionName<'static>>(body)?)?;
        let frames = Frames::new(turn.model.clone(), repeats);
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
    /// What every response object of the reply repeats: its id, creation time and model,
    /// and the request's fields.
    head: ResponseBody<'static>,
    /// The next event's `sequence_number`.
    sequence: u64,
    /// Whether `response.created` was sent.
    began: bool,
    /// The output items done so far, as the final response lists them.
    output: Vec<OutputItem>,
    open: Option<OpenItem>,
}

/// A count or an index as the wire's integer.
fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Appends the event `kind`, the `sequence`th of the stream, with its payload `data`.
fn event(kind: EventKind, sequence: u64, data: impl Serialize, out: &mut String) {
    let name = to_value(&kind);
    out.push_str(&sse(name.as_str(), &Event { kind, sequence_number: sequence, data }));
}

impl Frames {
    /// The writer of a reply to a request for `model`, with a new `resp_…` id; `repeats`
    /// holds the request's fields every response repeats.
    fn new(model: String, repeats: ResponseBody<'static>) -> Self {
        let head = ResponseBody {
            id: Cow::Owned(format!("resp_{}", uuid::Uuid::new_v4().simple())),
            object: Cow::Borrowed("response"),
            created_at: now_seconds(),
            model: Cow::Owned(model),
            ..repeats
        };
        Frames { head, sequence: 0, began: false, output: Vec::new(), open: None }
    }

    /// The next event's `sequence_number`.
    fn next(&mut self) -> u64 {
        let sequence = self.sequence;
        self.sequence += 1;
        sequence
    }

    /// The `response` object: `status`, its `output`, and for a finished one how it
    /// ended (usage, and why it is incomplete).
    fn response(&self, status: Status, output: Vec<OutputItem>, end: Option<&End>) -> ResponseBody<'_> {
        let head = &self.head;
        let reason = end.and_then(|end| incomplete_reason(end.finish));
        ResponseBody {
            id: Cow::Borrowed(&head.id),
            object: Cow::Borrowed(&head.object),
            created_at: head.created_at,
            status: Some(status),
            error: None,
            incomplete_details: reason.map(|reason| IncompleteDetails { reason: Some(reason.to_string()) }),
            model: Cow::Borrowed(&head.model),
            output: Some(output),
            usage: end.map(|end| usage(end.usage.as_ref())),
            parallel_tool_calls: head.parallel_tool_calls,
            tool_choice: head.tool_choice.clone(),
            tools: Cow::Borrowed(&head.tools),
            temperature: head.temperature,
            top_p: head.top_p,
            max_output_tokens: head.max_output_tokens,
            user: head.user.as_deref().map(Cow::Borrowed),
        }
    }

    /// The `response` body of a whole reply: its reasoning, its text, then its calls.
    fn body(&self, reply: Reply, end: &End) -> Value {
        let status = status(end.finish);
        let mut output = Vec::with_capacity(reply.calls.len() + 2);
        if !reply.reasoning.is_empty() {
            output.push(reasoning_item(item_id("rs"), Some(reply.reasoning)));
        }
        if !reply.text.is_empty() {
            output.push(message_item(item_id("msg"), Some(reply.text), item_status(status)));
        }
        output.extend(reply.calls.iter().map(|call| call_item(call, &call.arguments, Status::Completed)));
        to_value(&self.response(status, output, Some(end)))
    }

    /// The events for `item`, and whether they end the stream.
    fn frame(&mut self, item: Item) -> (String, bool) {
        let mut out = String::new();
        if !self.began {
            self.began = true;
            for kind in [EventKind::Created, EventKind::InProgress] {
                let sequence = self.next();
                let response = self.response(Status::InProgress, Vec::new(), None);
                event(kind, sequence, CompletedEvent { response }, &mut out);
            }
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
                self.close(Status::Completed, &mut out);
                self.call(&call, &mut out);
                false
            }
            Item::End(end) => {
                let status = status(end.finish);
                self.close(item_status(status), &mut out);
                let sequence = self.next();
                let response = self.response(status, self.output.clone(), Some(&end));
                let kind =
                    if status == Status::Completed { EventKind::Completed } else { EventKind::Incomplete };
                event(kind, sequence, CompletedEvent { response }, &mut out);
                true
            }
            Item::Failed(error) => {
                let param = match &error {
                    GatewayError::BadRequest { param, .. } => param.as_deref(),
                    _ => None,
                };
                let data = ErrorEvent {
                    code: Cow::Borrowed(error.kind()),
                    message: Cow::Owned(error.to_string()),
                    param: param.map(Cow::Borrowed),
                };
                let sequence = self.next();
                event(EventKind::Error, sequence, data, &mut out);
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
            self.close(Status::Completed, out);
            self.start(kind, out);
        }
        let sequence = self.next();
        let Some(open) = self.open.as_mut() else { return };
        open.text.push_str(text);
        let delta = DeltaEvent {
            item_id: Some(Cow::Borrowed(&open.id)),
            output_index: Some(int(open.index)),
            delta: Some(Cow::Borrowed(text)),
            ..DeltaEvent::default()
        };
        match kind {
            Open::Message => {
                let delta = DeltaEvent { content_index: Some(0), logprobs: Some(Vec::new()), ..delta };
                event(EventKind::TextDelta, sequence, delta, out);
            }
            Open::Reasoning => {
                let delta = DeltaEvent { summary_index: Some(0), ..delta };
                event(EventKind::ReasoningDelta, sequence, delta, out);
            }
        }
    }

    /// The payload of an event of the part of the item `id` at `index`: a message's
    /// (`content_index`) or a reasoning item's (`summary_index`).
    fn part_event<'a>(kind: Open, id: &'a str, index: usize) -> DeltaEvent<'a> {
        let part = Some(0);
        DeltaEvent {
            item_id: Some(Cow::Borrowed(id)),
            output_index: Some(int(index)),
            content_index: if kind == Open::Message { part } else { None },
            summary_index: if kind == Open::Reasoning { part } else { None },
            ..DeltaEvent::default()
        }
    }

    /// Opens an item of `kind`: its `output_item.added`, and its (empty) part.
    fn start(&mut self, kind: Open, out: &mut String) {
        let index = self.output.len();
        let (id, item, part_kind, part) = match kind {
            Open::Message => {
                let id = item_id("msg");
                let item = message_item(id.clone(), None, Status::InProgress);
                (id, item, EventKind::ContentPartAdded, Part::Message(MessagePart::output_text("")))
            }
            Open::Reasoning => {
                let id = item_id("rs");
                let item = reasoning_item(id.clone(), None);
                (id, item, EventKind::SummaryPartAdded, Part::Summary(SummaryPart::summary_text("")))
            }
        };
        let added = ItemEvent { output_index: Some(int(index)), item: Some(item) };
        event(EventKind::ItemAdded, self.next(), added, out);
        let data = DeltaEvent { part: Some(part), ..Frames::part_event(kind, &id, index) };
        event(part_kind, self.next(), data, out);
        self.open = Some(OpenItem { kind, id, index, text: String::new() });
    }

    /// Closes the open item, if any: its text's and part's `done` events, then
    /// `output_item.done` (a message item with `status`).
    fn close(&mut self, status: Status, out: &mut String) {
        let Some(OpenItem { kind, id, index, text }) = self.open.take() else { return };
        let done = DeltaEvent { text: Some(Cow::Borrowed(&text)), ..Frames::part_event(kind, &id, index) };
        let (item, done, done_kind, part, part_kind) = match kind {
            Open::Message => (
                message_item(id.clone(), Some(text.clone()), status),
                DeltaEvent { logprobs: Some(Vec::new()), ..done },
                EventKind::TextDone,
                Part::Message(MessagePart::output_text(text.as_str())),
                EventKind::ContentPartDone,
            ),
            Open::Reasoning => (
                reasoning_item(id.clone(), Some(text.clone())),
                done,
                EventKind::ReasoningDone,
                Part::Summary(SummaryPart::summary_text(text.as_str())),
                EventKind::SummaryPartDone,
            ),
        };
        event(done_kind, self.next(), done, out);
        let data = DeltaEvent { part: Some(part), ..Frames::part_event(kind, &id, index) };
        event(part_kind, self.next(), data, out);
        let data = ItemEvent { output_index: Some(int(index)), item: Some(item.clone()) };
        event(EventKind::ItemDone, self.next(), data, out);
        self.output.push(item);
    }

    /// A call's item, whole: added, its arguments in one delta, done.
    fn call(&mut self, call: &Call, out: &mut String) {
        let index = self.output.len();
        let id = function_call_id(&call.id);
        let added =
            ItemEvent { output_index: Some(int(index)), item: Some(call_item(call, "", Status::InProgress)) };
        event(EventKind::ItemAdded, self.next(), added, out);
        let arguments = DeltaEvent {
            item_id: Some(Cow::Borrowed(&id)),
            output_index: Some(int(index)),
            ..DeltaEvent::default()
        };
        let delta = DeltaEvent { delta: Some(Cow::Borrowed(&call.arguments)), ..arguments };
        event(EventKind::ArgumentsDelta, self.next(), delta, out);
        let done = DeltaEvent {
            item_id: Some(Cow::Borrowed(&id)),
            output_index: Some(int(index)),
            name: Some(Cow::Borrowed(&call.name)),
            arguments: Some(Cow::Borrowed(&call.arguments)),
            ..DeltaEvent::default()
        };
        event(EventKind::ArgumentsDone, self.next(), done, out);
        let item = call_item(call, &call.arguments, Status::Completed);
        let data = ItemEvent { output_index: Some(int(index)), item: Some(item.clone()) };
        event(EventKind::ItemDone, self.next(), data, out);
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
fn message_item(id: String, text: Option<String>, status: Status) -> OutputItem {
    OutputItem::Message {
        id: Some(id),
        status: Some(status),
        role: Some("assistant"),
        content: Some(text.map(MessagePart::output_text).into_iter().collect()),
    }
}

/// A `reasoning` output item, with its text as one summary part (none when `text` is
/// `None`).
fn reasoning_item(id: String, text: Option<String>) -> OutputItem {
    OutputItem::Reasoning {
        id: Some(id),
        summary: text.map(SummaryPart::summary_text).into_iter().collect(),
        encrypted_content: None,
        extra: Map::new(),
    }
}

/// A `function_call` output item of `call`, with `arguments`.
fn call_item(call: &Call, arguments: &str, status: Status) -> OutputItem {
    OutputItem::FunctionCall {
        id: Some(function_call_id(&call.id)),
        call_id: Some(call.id.clone()),
        name: Some(call.name.clone()),
        arguments: Some(arguments.to_string()),
        status: Some(status),
    }
}

/// The response's `status` for how the reply ended.
fn status(finish: Finish) -> Status {
    if incomplete_reason(finish).is_some() { Status::Incomplete } else { Status::Completed }
}

/// The `status` of the items of a response with `status`.
fn item_status(status: Status) -> Status {
    if status == Status::Completed { Status::Completed } else { Status::Incomplete }
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
fn usage(upstream: Option<&Value>) -> Usage {
    let count = |path: &[&str]| {
        upstream
            .and_then(|u| path.iter().try_fold(u, |value, key| value.get(key)))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let input = count(&["prompt_tokens"]);
    let output = count(&["completion_tokens"]);
    Usage {
        input_tokens: input,
        input_tokens_details: InputTokensDetails {
            cached_tokens: count(&["prompt_tokens_details", "cached_tokens"]),
            cache_write_tokens: 0,
        },
        output_tokens: output,
        output_tokens_details: OutputTokensDetails {
            reasoning_tokens: count(&["completion_tokens_details", "reasoning_tokens"]),
        },
        total_tokens: upstream
            .and_then(|u| u.get("total_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(input + output),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ContentPart;
    use crate::model::{AssistantTurn, FinishReason, Role, ToolResultBlock, TurnDelta};
    use crate::providers::testing::decode;
    use crate::providers::{Provider, WireFormat};

    /// A request read: the turn, and what its responses repeat.
    fn read(body: Value) -> Result<(TurnRequest, ResponseBody<'static>), GatewayError> {
        read_request::<ResponsesRequest<'static>, FunctionName<'static>>(body.to_string().as_bytes())
            .and_then(into_turn)
    }

    /// A request read, what its responses repeat as JSON.
    fn turn(body: Value) -> Result<(TurnRequest, Value), GatewayError> {
        read(body).map(|(turn, repeats)| (turn, to_value(&repeats)))
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
        assert_eq!(serde_json::to_value(error.openai()).unwrap()["error"]["type"], "invalid_request_error");

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
        // Tool fields are read flattened; a malformed one is still named.
        let error = turn(json!({"input": "x", "tool_choice": 5})).unwrap_err();
        assert_eq!(bad_param(&error), Some("tool_choice"));
        let error = turn(json!({"input": "x", "parallel_tool_calls": "yes"})).unwrap_err();
        assert_eq!(bad_param(&error), Some("parallel_tool_calls"));
        assert_eq!(read(json!({"input": [1]})).unwrap_err().status(), 400);
        let broken = read_request::<ResponsesRequest<'static>, FunctionName<'static>>(b"{\"input\": ");
        assert_eq!(broken.unwrap_err().status(), 400);
    }

    fn echo() -> ResponseBody<'static> {
        let (_, repeats) = read(json!({"input": "x", "tools": [weather_tool()]})).expect("a valid request");
        repeats
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

    /// The id in a reasoning signature (a JSON object).
    fn signature_id(signature: &str) -> String {
        let kept: Value = serde_json::from_str(signature).expect("a JSON signature");
        kept["id"].as_str().expect("an id").to_string()
    }

    /// What the gateway writes, the crate's own Responses reader reads back: the two
    /// sides are one set of types.
    #[test]
    fn a_written_response_reads_back_as_the_same_turn() {
        let mut reply = Reply::default();
        for piece in [
            Piece::Reasoning("Think.".into()),
            Piece::Text("Let me check.".into()),
            Piece::Call(call(0, "call_abc", "get_weather", r#"{"city":"Paris"}"#)),
            Piece::Call(call(1, "call_def", "get_time", "{}")),
        ] {
            reply.add(piece);
        }
        let frames = Frames::new("gpt-x".into(), echo());
        let body = frames.body(reply, &End { finish: Finish::ToolCalls, usage: None });
        let turn = Provider::OpenAiResponses.parse_response(&body).expect("a response");
        let reasoning = turn.reasoning().next().expect("the reasoning");
        assert_eq!(reasoning.text, "Think.");
        let signature = reasoning.signature.as_deref().expect("the reasoning item is kept");
        assert_eq!(Value::String(signature_id(signature)), body["output"][0]["id"]);
        assert_eq!(turn.text(), "Let me check.");
        let calls: Vec<(&str, &str, &str, Option<&str>)> = turn
            .tool_calls()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str(), c.signature.as_deref()))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_abc", "get_weather", r#"{"city":"Paris"}"#, Some("fc_abc")),
                ("call_def", "get_time", "{}", Some("fc_def"))
            ]
        );
        assert_eq!(turn.finish_reason, Some(FinishReason::ToolCalls));

        let text_only = Reply { text: "Once upon".into(), ..Reply::default() };
        let body = frames.body(text_only, &End { finish: Finish::Length, usage: None });
        let turn = Provider::OpenAiResponses.parse_response(&body).expect("a response");
        assert_eq!(turn.content, AssistantTurn::new().with_text("Once upon").content);
        assert_eq!(turn.finish_reason, Some(FinishReason::Length));
    }

    /// The events the gateway writes, the crate's own Responses decoder reads as the
    /// deltas they were made of.
    #[test]
    fn a_written_stream_decodes_as_the_same_deltas() {
        let mut frames = Frames::new("gpt-x".into(), echo());
        let mut text = String::new();
        for item in [
            Item::Ready { diagnostic: None },
            Item::Piece(Piece::Reasoning("Hm, ".into())),
            Item::Piece(Piece::Reasoning("two tools.".into())),
            Item::Piece(Piece::Text("Let me ".into())),
            Item::Piece(Piece::Text("check.".into())),
            Item::Piece(Piece::Call(call(0, "call_abc", "get_weather", r#"{"city":"Paris"}"#))),
            Item::Piece(Piece::Call(call(1, "call_def", "get_time", "{}"))),
            Item::End(End { finish: Finish::ToolCalls, usage: Some(json!({"prompt_tokens": 9})) }),
        ] {
            text.push_str(&frames.frame(item).0);
        }
        let (mut deltas, error) = decode(Provider::OpenAiResponses, &text);
        assert_eq!(error, None);
        let signature = match deltas.get(2) {
            Some(TurnDelta::ReasoningSignature(signature)) => signature_id(signature),
            other => panic!("not the reasoning's signature: {other:?}"),
        };
        assert!(signature.starts_with("rs_"), "{signature}");
        deltas.remove(2);
        assert_eq!(
            deltas,
            [
                TurnDelta::Reasoning("Hm, ".into()),
                TurnDelta::Reasoning("two tools.".into()),
                TurnDelta::Text("Let me ".into()),
                TurnDelta::Text("check.".into()),
                TurnDelta::ToolCallStart { index: 0, id: "call_abc".into(), name: "get_weather".into() },
                TurnDelta::ToolCallSignature { index: 0, signature: "fc_abc".into() },
                TurnDelta::ToolCallArguments { index: 0, fragment: r#"{"city":"Paris"}"#.into() },
                TurnDelta::ToolCallEnd { index: 0 },
                TurnDelta::ToolCallStart { index: 1, id: "call_def".into(), name: "get_time".into() },
                TurnDelta::ToolCallSignature { index: 1, signature: "fc_def".into() },
                TurnDelta::ToolCallArguments { index: 1, fragment: "{}".into() },
                TurnDelta::ToolCallEnd { index: 1 },
                TurnDelta::Finish(FinishReason::ToolCalls),
            ]
        );

        // Cut off: incomplete; broken off: the error.
        let mut frames = Frames::new("gpt-x".into(), echo());
        let mut text = frames.frame(Item::Piece(Piece::Text("Once".into()))).0;
        text.push_str(&frames.frame(Item::End(End { finish: Finish::Length, usage: None })).0);
        let (deltas, error) = decode(Provider::OpenAiResponses, &text);
        assert_eq!(
            (deltas, error),
            (vec![TurnDelta::Text("Once".into()), TurnDelta::Finish(FinishReason::Length)], None)
        );
        let mut frames = Frames::new("gpt-x".into(), echo());
        let text = frames.frame(Item::Failed(GatewayError::Stream { reason: "cut".into() })).0;
        let (_, error) = decode(Provider::OpenAiResponses, &text);
        let message = match error {
            Some(crate::providers::WireError::Provider { message, .. }) => message,
            other => panic!("not the error: {other:?}"),
        };
        assert_eq!(message, "the upstream's reply broke off: cut");
    }

    /// The request's fields the gateway does not read are kept by the type, then dropped
    /// (they have no Chat Completions equivalent); an item's too.
    #[test]
    fn a_client_request_keeps_the_fields_the_gateway_does_not_read() {
        let body = json!({"model": "gpt-x", "store": true, "metadata": {"k": "v"}, "truncation": "auto",
            "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "high"},
            "text": {"format": {"type": "text"}}, "background": false,
            "input": [{"type": "message", "id": "msg_1", "status": "completed", "role": "user", "content": "Hi"},
                      {"type": "reasoning", "id": "rs_1", "summary": "not read", "encrypted_content": 5}]});
        let request: ResponsesRequest<'static> = serde_json::from_value(body).expect("a valid request");
        let mut kept: Vec<&str> = request.extra.keys().map(String::as_str).collect();
        kept.sort_unstable();
        assert_eq!(kept, ["background", "include", "metadata", "reasoning", "store", "text", "truncation"]);
        let Some(Input::Items(items)) = &request.input else { panic!("not items: {:?}", request.input) };
        let item_fields: Vec<Vec<&str>> =
            items.iter().map(|item| item.extra.keys().map(String::as_str).collect()).collect();
        assert_eq!(item_fields, [vec!["id", "status"], vec!["id", "summary", "encrypted_content"]]);
        let (turn, _) = into_turn(request).expect("a valid request");
        assert!(turn.options.is_empty(), "{:?}", turn.options);
        assert_eq!(turn.messages.len(), 1);
        assert_eq!(turn.messages[0].text(), "Hi");
    }
}
