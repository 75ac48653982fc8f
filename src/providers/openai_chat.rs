//! OpenAI Chat Completions (`POST /v1/chat/completions`), and every server that speaks
//! it: vLLM, llama.cpp's server, Ollama, DeepSeek, Groq, ….
//!
//! The request, the response and the `chat.completion.chunk` events are typed below, as
//! the API reference describes them, reduced to the fields this crate writes or reads.
//! What compatible servers do differently is read too: reasoning as `reasoning_content`
//! (DeepSeek, most) or `reasoning` (recent vLLM), arguments as a string or an object, a
//! call fragment without `index`, a call's id or name sent apart from its first
//! fragment, usage-only chunks with empty `choices`.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    SseEvent, StreamDecoder, WireError, body_value, declared_tools, lenient, missing, parse_body,
    parse_event, provider_error, to_value,
};
use crate::ContentPart;
use crate::model::{
    AssistantTurn, ContentBlock, Effort, FinishReason, Message, ModelRequest, RequestNote, Role, Thinking,
    ToolCall, ToolChoice, ToolResultBlock, TurnDelta,
};
use crate::protocol::native::{NameRule, wire_name};

// ---------------------------------------------------------------------------------------
// The request

/// A request body: what this crate sends a provider (its `None` fields are left out:
/// [`body_value`]), and what the gateway reads from a client (owned: a request is read
/// once).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct ChatRequest<'a> {
    #[serde(default)]
    pub(crate) model: Cow<'a, str>,
    pub(crate) messages: Vec<ChatMessage<'a>>,
    #[serde(flatten)]
    pub(crate) tools: ToolFields<'a, ChatFunctionChoice<'a>>,
    /// What reasoning models take instead of `max_tokens`. This and the next three are
    /// fields this crate sets; read, they stay among [`extra`](Self::extra).
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) max_completion_tokens: Option<u32>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u32>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<f32>,
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_effort: Option<&'static str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stream_options: Option<StreamOptions>,
    /// Every other field, as it is (sampling, `stop`, `user`, a grammar server's
    /// fields, …).
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct StreamOptions {
    /// A last chunk with the usage (and empty `choices`).
    #[serde(default)]
    pub(crate) include_usage: bool,
}

/// A message of the request, by `role`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum ChatMessage<'a> {
    System {
        content: ChatText<'a>,
    },
    /// What newer models call the system message.
    Developer {
        content: ChatText<'a>,
    },
    User {
        content: ChatText<'a>,
    },
    Assistant {
        /// `null` when the turn has no text (only calls).
        #[serde(default)]
        content: Option<ChatText<'a>>,
        /// Reasoning, for the servers that sent it (DeepSeek's thinking mode requires
        /// it back with tool calls).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<Cow<'a, str>>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: Cow<'a, str>,
        content: ChatText<'a>,
    },
}

/// A message's content: a string, or parts (of which only text is read).
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum ChatText<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ChatTextPart<'a>>),
}

/// A content part; a part that is not text has no `text`. Its `type` is written (the
/// Responses API's `output_text` and `summary_text` parts), not read: a part a client
/// sends (`text`, `input_text`, `image_url`, …) is text when it has some.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ChatTextPart<'a> {
    #[serde(rename = "type", skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<Cow<'a, str>>,
}

impl<'a> ChatTextPart<'a> {
    /// A text part of type `kind`.
    pub(crate) fn new(kind: &'static str, text: impl Into<Cow<'a, str>>) -> Self {
        ChatTextPart { kind: Some(Cow::Borrowed(kind)), text: Some(text.into()) }
    }
}

impl ChatText<'_> {
    /// The text (text parts joined).
    #[cfg_attr(not(feature = "gateway"), allow(dead_code, reason = "the gateway reads a client's messages"))]
    pub(crate) fn text(&self) -> Cow<'_, str> {
        match self {
            ChatText::Text(text) => Cow::Borrowed(text),
            ChatText::Parts(parts) => Cow::Owned(parts.iter().filter_map(|p| p.text.as_deref()).collect()),
        }
    }
}

/// A call of an assistant message.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ChatToolCall<'a> {
    pub(crate) id: Cow<'a, str>,
    #[serde(rename = "type", default)]
    kind: FunctionType,
    pub(crate) function: ChatFunction<'a>,
}

/// The one kind of tool call and tool choice: `"function"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FunctionType {
    #[default]
    Function,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ChatFunction<'a> {
    pub(crate) name: Cow<'a, str>,
    #[serde(default)]
    pub(crate) arguments: Cow<'a, str>,
}

/// A declared tool, `{"type": "function", "function": {name, description, parameters}}`:
/// how the gateway reads a client's `tools[]` and offers them to a native upstream (the
/// crate's own declarations are the native protocol's, written as they are).
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(not(feature = "gateway"), allow(dead_code, reason = "the gateway reads and offers tools"))]
pub(crate) struct ChatTool<'a> {
    #[serde(rename = "type", default)]
    pub(crate) kind: FunctionType,
    pub(crate) function: ChatToolFunction<'a>,
}

#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(not(feature = "gateway"), allow(dead_code, reason = "the gateway reads and offers tools"))]
pub(crate) struct ChatToolFunction<'a> {
    pub(crate) name: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parameters: Option<Cow<'a, Value>>,
}

/// The tool fields of both OpenAI APIs' requests: the declarations (the protocol's,
/// as they are), the tool choice and whether calls may run in parallel.
#[derive(Debug, Serialize, Deserialize)]
#[serde(bound(deserialize = "F: Deserialize<'de>"))]
pub(crate) struct ToolFields<'a, F> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Cow<'a, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<ToolChoiceParam<'a, F>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parallel_tool_calls: Option<bool>,
}

impl<F> Default for ToolFields<'_, F> {
    fn default() -> Self {
        ToolFields { tools: None, tool_choice: None, parallel_tool_calls: None }
    }
}

/// `"auto"`, `"none"`, `"required"`, or one named function (`F`: how the API names it).
/// Read from a client, a choice of another `type` (a hosted tool, `allowed_tools`, …) or
/// a `function` choice without its name is [`Typed`](Self::Typed), for the gateway to
/// refuse by name; this crate never writes one.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum ToolChoiceParam<'a, F> {
    Mode(Cow<'a, str>),
    Function {
        #[serde(rename = "type", default)]
        kind: FunctionType,
        #[serde(flatten)]
        function: F,
    },
    Typed {
        #[serde(rename = "type")]
        kind: Cow<'a, str>,
    },
}

/// `{"name": …}`: the function a tool choice names (Responses), or its `function` field
/// (Chat Completions).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FunctionName<'a> {
    pub(crate) name: Cow<'a, str>,
}

/// Chat Completions names a chosen function as `"function": {"name": …}`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ChatFunctionChoice<'a> {
    pub(crate) function: FunctionName<'a>,
}

// ---------------------------------------------------------------------------------------
// The response, and the stream's chunks

/// A response body (`chat.completion`) or a stream chunk (`chat.completion.chunk`): the
/// same envelope, `message` in the one and `delta` in the other. Read leniently from a
/// provider (a field of the wrong type is read as absent); the gateway writes it.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ChatResponse<'a> {
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<Cow<'a, str>>,
    /// `chat.completion` or `chat.completion.chunk`.
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) object: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient::int", skip_serializing_if = "Option::is_none")]
    pub(crate) created: Option<i64>,
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) model: Option<Cow<'a, str>>,
    /// An error instead of a response (a body, or a chunk in the stream).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<Value>,
    #[serde(borrow, deserialize_with = "lenient::list")]
    pub(crate) choices: Vec<ChatChoice<'a>>,
    /// Token counts: the last chunk of a stream asked for with `include_usage`, or a
    /// response body's.
    #[serde(deserialize_with = "lenient::usage", skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ChatChoice<'a> {
    #[serde(deserialize_with = "lenient::int")]
    pub(crate) index: Option<i64>,
    /// The whole message (a response body).
    #[serde(borrow, deserialize_with = "lenient::present", skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<ChatContent<'a>>,
    /// The next piece of the message (a stream chunk).
    #[serde(borrow, deserialize_with = "lenient::present", skip_serializing_if = "Option::is_none")]
    pub(crate) delta: Option<ChatContent<'a>>,
    /// `null` until the last chunk.
    #[serde(deserialize_with = "lenient::tag")]
    pub(crate) finish_reason: Option<ChatFinishReason>,
}

/// An assistant message, whole or in part. `content` is written even when `null`, as
/// the API does for a message made of calls.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ChatContent<'a> {
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<&'static str>,
    #[serde(borrow, deserialize_with = "lenient::text")]
    pub(crate) content: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::list", skip_serializing_if = "Vec::is_empty")]
    pub(crate) tool_calls: Vec<ChatCallPart<'a>>,
}

impl ChatContent<'_> {
    /// Reasoning as compatible servers send it: `reasoning_content` (DeepSeek, most), or
    /// `reasoning` (recent vLLM).
    fn reasoning(&self) -> &str {
        match self.reasoning_content.as_deref() {
            Some(content) if !content.is_empty() => content,
            _ => self.reasoning.as_deref().unwrap_or_default(),
        }
    }
}

/// A tool call, whole (a response body) or a fragment of one (a stream chunk).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ChatCallPart<'a> {
    /// The call's place among the turn's calls (fragments of one call share it).
    #[serde(deserialize_with = "lenient::int", skip_serializing_if = "Option::is_none")]
    pub(crate) index: Option<i64>,
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(rename = "type", skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<FunctionType>,
    #[serde(borrow, deserialize_with = "lenient::object")]
    pub(crate) function: ChatFunctionPart<'a>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ChatFunctionPart<'a> {
    #[serde(borrow, deserialize_with = "lenient::text", skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<Cow<'a, str>>,
    /// JSON text (a server that sends an object has it serialised).
    #[serde(borrow, deserialize_with = "lenient::arguments", skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<Cow<'a, str>>,
}

/// `finish_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ChatFinishReason {
    Stop,
    Length,
    ToolCalls,
    /// The legacy name of `tool_calls`.
    FunctionCall,
    ContentFilter,
    #[serde(other)]
    Other,
}

impl ChatFinishReason {
    fn reason(self) -> Option<FinishReason> {
        match self {
            ChatFinishReason::Stop => Some(FinishReason::Stop),
            ChatFinishReason::Length => Some(FinishReason::Length),
            ChatFinishReason::ToolCalls | ChatFinishReason::FunctionCall => Some(FinishReason::ToolCalls),
            ChatFinishReason::ContentFilter => Some(FinishReason::ContentFilter),
            ChatFinishReason::Other => None,
        }
    }
}

/// An error body, `{"error": {message, type, param, code}}`, as the gateway answers a
/// client (a provider's error is read by [`provider_error`], whatever its shape).
#[cfg(feature = "gateway")]
#[derive(Debug, Serialize)]
pub(crate) struct ChatError<'a> {
    pub(crate) error: ChatErrorObject<'a>,
}

#[cfg(feature = "gateway")]
#[derive(Debug, Serialize)]
pub(crate) struct ChatErrorObject<'a> {
    pub(crate) message: String,
    #[serde(rename = "type")]
    pub(crate) kind: &'a str,
    pub(crate) param: Option<&'a str>,
    pub(crate) code: &'a str,
}

// ---------------------------------------------------------------------------------------
// The codec

/// The text a result carries on a text-only channel.
pub(crate) fn result_text(block: &ToolResultBlock) -> String {
    block.content.iter().map(ContentPart::render_text).collect::<Vec<_>>().join("\n")
}

/// The tool fields of `request` (none without declared tools), a chosen function named
/// as `function` writes it.
pub(super) fn tool_fields<'a, F>(
    request: &'a ModelRequest,
    function: impl FnOnce(FunctionName<'a>) -> F,
) -> Option<ToolFields<'a, F>> {
    let tools = declared_tools(request)?;
    let mode = |mode: &'static str| ToolChoiceParam::Mode(Cow::Borrowed(mode));
    let tool_choice = match &request.tool_choice {
        ToolChoice::Auto => mode("auto"),
        ToolChoice::None => mode("none"),
        ToolChoice::Required => mode("required"),
        ToolChoice::Tool(name) => ToolChoiceParam::Function {
            kind: FunctionType::Function,
            function: function(FunctionName { name: wire_name(name, NameRule::Strict) }),
        },
        // A future choice this version does not know: let the model decide.
        #[allow(unreachable_patterns)]
        _ => mode("auto"),
    };
    Some(ToolFields {
        tools: Some(Cow::Borrowed(tools)),
        tool_choice: Some(tool_choice),
        parallel_tool_calls: request.parallel_tool_calls,
    })
}

pub(crate) fn request_body(request: &ModelRequest, model: &str, stream: bool) -> Value {
    let prompt = request.tool_prompt.as_deref().filter(|p| !p.is_empty()).map(Message::system);
    let messages = messages(prompt.iter().chain(&request.messages));
    let options = &request.options;
    // Reasoning models take only `max_completion_tokens`; other servers `max_tokens`.
    let (max_completion_tokens, max_tokens) =
        if options.thinking.is_some() { (options.max_tokens, None) } else { (None, options.max_tokens) };
    let body = ChatRequest {
        model: Cow::Borrowed(model),
        messages,
        tools: tool_fields(request, |function| ChatFunctionChoice { function }).unwrap_or_default(),
        max_completion_tokens,
        max_tokens,
        temperature: options.temperature,
        reasoning_effort: match options.thinking {
            Some(Thinking::Effort(effort)) => Some(effort.as_str()),
            _ => None,
        },
        stream: stream.then_some(true),
        stream_options: stream.then_some(StreamOptions { include_usage: true }),
        extra: Map::new(),
    };
    body_value(&body)
}

pub(crate) fn parse_response(body: &Value) -> Result<AssistantTurn, WireError> {
    let response: ChatResponse<'_> = parse_body(body)?;
    if let Some(error) = &response.error {
        return Err(provider_error(error));
    }
    let choice = response.choices.into_iter().next().ok_or_else(|| missing("`choices[0]`"))?;
    let message = choice.message.ok_or_else(|| missing("`choices[0].message`"))?;
    let mut turn = AssistantTurn::new();
    let reasoning = message.reasoning();
    if !reasoning.is_empty() {
        turn = turn.with_reasoning(reasoning, None);
    }
    let content = message.content.as_deref().unwrap_or_default();
    if !content.is_empty() {
        turn = turn.with_text(content);
    }
    for call in message.tool_calls {
        turn = turn.with_tool_call(ToolCall::new(
            call.id.unwrap_or_default(),
            call.function.name.unwrap_or_default(),
            call.function.arguments.unwrap_or_default(),
        ));
    }
    turn.finish_reason = choice.finish_reason.and_then(ChatFinishReason::reason);
    Ok(turn)
}

pub(crate) fn wire_messages(messages: &[Message]) -> Value {
    to_value(&self::messages(messages))
}

/// The messages of the request.
pub(crate) fn messages<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<ChatMessage<'a>> {
    let mut out = Vec::new();
    for message in messages {
        match message.role {
            Role::System => out.push(ChatMessage::System { content: ChatText::Text(message.text()) }),
            Role::User => out.push(ChatMessage::User { content: ChatText::Text(message.text()) }),
            Role::Assistant => {
                let tool_calls = message
                    .tool_calls()
                    .map(|call| ChatToolCall {
                        id: Cow::Borrowed(&call.id),
                        kind: FunctionType::Function,
                        function: ChatFunction {
                            name: Cow::Borrowed(&call.name),
                            arguments: Cow::Borrowed(&call.arguments),
                        },
                    })
                    .collect();
                let text = message.text();
                // Only servers that sent reasoning get it back (OpenAI itself sends none).
                let reasoning: String = message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Reasoning(r) if !r.redacted => Some(r.text.as_str()),
                        _ => None,
                    })
                    .collect();
                out.push(ChatMessage::Assistant {
                    content: (!text.is_empty()).then_some(ChatText::Text(text)),
                    reasoning_content: (!reasoning.is_empty()).then_some(Cow::Owned(reasoning)),
                    tool_calls,
                });
            }
            Role::Tool => {
                let before = out.len();
                out.extend(message.content.iter().filter_map(|block| match block {
                    ContentBlock::ToolResult(result) => Some(ChatMessage::Tool {
                        tool_call_id: Cow::Borrowed(&result.call_id),
                        content: ChatText::Text(Cow::Owned(result_text(result))),
                    }),
                    _ => None,
                }));
                // Results written as text (a text protocol over this API) go as a user
                // message: a `tool` message needs a call id.
                if out.len() == before {
                    out.push(ChatMessage::User { content: ChatText::Text(message.text()) });
                }
            }
        }
    }
    out
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
    /// The last provider index looked up and its number: the fragments of one call (one
    /// per token) are numbered without a look in `calls`.
    last: Option<(i64, usize)>,
    /// The call being written (our number).
    open: Option<usize>,
    done: bool,
    /// The last usage object a chunk carried.
    usage: Option<Value>,
}

impl ChunkDecoder {
    fn close_open(&mut self, deltas: &mut Vec<TurnDelta>) {
        if let Some(index) = self.open.take() {
            deltas.push(TurnDelta::ToolCallEnd { index });
        }
    }

    fn number_of(&mut self, provider_index: i64) -> (usize, bool) {
        if let Some((index, number)) = self.last
            && index == provider_index
        {
            return (number, false);
        }
        let next = self.calls.len();
        let number = *self.calls.entry(provider_index).or_insert(next);
        self.last = Some((provider_index, number));
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
        let chunk: ChatResponse<'_> = parse_event(event)?;
        if let Some(error) = &chunk.error {
            return Err(provider_error(error));
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        // The usage chunk has empty `choices`; only the first choice is read.
        let Some(choice) = chunk.choices.into_iter().next() else {
            return Ok(());
        };
        let delta = choice.delta.unwrap_or_default();
        let reasoning = delta.reasoning();
        if !reasoning.is_empty() {
            deltas.push(TurnDelta::Reasoning(reasoning.to_owned()));
        }
        if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
            deltas.push(TurnDelta::Text(content.into_owned()));
        }
        for (position, fragment) in delta.tool_calls.into_iter().enumerate() {
            // Some servers leave `index` out: the fragment's place in the array then.
            let provider_index = fragment.index.unwrap_or(position as i64);
            let (number, new) = self.number_of(provider_index);
            if self.open != Some(number) {
                self.close_open(deltas);
                self.open = Some(number);
            }
            let id = fragment.id.unwrap_or_default();
            let name = fragment.function.name.unwrap_or_default();
            // A server that sends the name or id again (or late): the accumulator keeps
            // the first.
            if new || !name.is_empty() || !id.is_empty() {
                deltas.push(TurnDelta::ToolCallStart {
                    index: number,
                    id: id.into_owned(),
                    name: name.into_owned(),
                });
            }
            if let Some(arguments) = fragment.function.arguments.filter(|a| !a.is_empty()) {
                deltas.push(TurnDelta::ToolCallArguments { index: number, fragment: arguments.into_owned() });
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.close_open(deltas);
            if let Some(reason) = reason.reason() {
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

    fn usage(&self) -> Option<&Value> {
        self.usage.as_ref()
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::providers::testing::{decode, events};
    use crate::providers::{Provider, WireFormat};

    fn start(index: usize, id: &str, name: &str) -> TurnDelta {
        TurnDelta::ToolCallStart { index, id: id.into(), name: name.into() }
    }

    fn args(index: usize, fragment: &str) -> TurnDelta {
        TurnDelta::ToolCallArguments { index, fragment: fragment.into() }
    }

    #[test]
    fn fragments_without_index_ids_sent_apart_and_usage_chunks() {
        let sse = events(&[
            // No `index`: the fragment's place; the id comes after the name.
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_1","function":{"arguments":"{\"x\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
            // A whole second call, its arguments an object.
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_2","function":{"name":"b","arguments":{"y":2}}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
            "[DONE]",
        ]);
        let (deltas, error) = decode(Provider::OpenAiChat, &sse);
        assert_eq!(error, None);
        assert_eq!(
            deltas,
            [
                start(0, "", "a"),
                start(0, "call_1", ""),
                args(0, "{\"x\":"),
                args(0, "1}"),
                TurnDelta::ToolCallEnd { index: 0 },
                start(1, "call_2", "b"),
                args(1, r#"{"y":2}"#),
                TurnDelta::ToolCallEnd { index: 1 },
                TurnDelta::Finish(FinishReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn reasoning_under_either_name_and_fields_of_another_type() {
        let sse = events(&[
            r#"{"choices":[{"delta":{"reasoning_content":"think","content":null}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"","reasoning":" more"}}]}"#,
            // Fields of an unexpected type read as absent, not as an error.
            r#"{"choices":[{"delta":{"content":[{"type":"text","text":"x"}],"tool_calls":{"0":1}}}]}"#,
            r#"{"choices":[{"delta":"nothing","finish_reason":7}]}"#,
            r#"[1, 2]"#,
            r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
        ]);
        let (deltas, error) = decode(Provider::OpenAiChat, &sse);
        assert_eq!(error, None);
        assert_eq!(
            deltas,
            [
                TurnDelta::Reasoning("think".into()),
                TurnDelta::Reasoning(" more".into()),
                TurnDelta::Text("Hi".into()),
                TurnDelta::Finish(FinishReason::Stop),
            ]
        );
    }

    #[test]
    fn an_unknown_finish_reason_ends_the_call_without_a_finish() {
        let sse = events(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"something_new"}]}"#,
        ]);
        let (deltas, _) = decode(Provider::OpenAiChat, &sse);
        assert_eq!(deltas, [start(0, "c", "f"), args(0, "{}"), TurnDelta::ToolCallEnd { index: 0 }]);
    }

    #[test]
    fn errors_in_the_stream() {
        let sse = events(&[r#"{"error":{"message":"overloaded","type":"server_error"}}"#]);
        let (_, error) = decode(Provider::OpenAiChat, &sse);
        assert_eq!(
            error,
            Some(WireError::Provider { kind: Some("server_error".into()), message: "overloaded".into() })
        );
        let (_, error) = decode(Provider::OpenAiChat, &events(&["{\"choices\": ["]));
        assert!(matches!(error, Some(WireError::NotJson { what: "stream event", .. })), "{error:?}");
        let (_, error) = decode(Provider::OpenAiChat, &events(&[r#"{"choices":[],"choices":[]}"#]));
        assert!(matches!(error, Some(WireError::Shape { what: "stream event", .. })), "{error:?}");
    }

    #[test]
    fn bodies() {
        let body = json!({"error": null, "choices": [{"finish_reason": "length", "message": {
            "reasoning": "r", "content": "text",
            "tool_calls": [{"index": 0, "id": "c1", "type": "function",
                            "function": {"name": "f", "arguments": {"a": 1}}}]}}]});
        let turn = Provider::OpenAiChat.parse_response(&body).unwrap();
        assert_eq!(turn.reasoning().next().map(|r| r.text.as_str()), Some("r"));
        assert_eq!(turn.text(), "text");
        let call = turn.tool_calls().next().unwrap();
        assert_eq!((call.id.as_str(), call.arguments.as_str()), ("c1", r#"{"a":1}"#));
        assert_eq!(turn.finish_reason, Some(FinishReason::Length));
        // A message of another type is an empty turn; no message at all is an error.
        let empty = Provider::OpenAiChat.parse_response(&json!({"choices": [{"message": null}]})).unwrap();
        assert!(empty.content.is_empty() && empty.finish_reason.is_none());
        let error = Provider::OpenAiChat.parse_response(&json!({"choices": [{}]})).unwrap_err();
        assert_eq!(error.to_string(), "unexpected response body: no `choices[0].message`");
        let error = Provider::OpenAiChat.parse_response(&json!({"error": "bad key"})).unwrap_err();
        assert_eq!(error, WireError::Provider { kind: None, message: "bad key".into() });
    }

    #[test]
    fn request_bodies() {
        let mut request = ModelRequest::new(vec![Message::user("hi")]);
        request.tool_prompt = Some("Use tools.".into());
        request.tools = Some(json!([{"type": "function", "function": {"name": "f"}}]));
        request.tool_choice = ToolChoice::Tool("files.read".into());
        request.parallel_tool_calls = Some(false);
        request.options =
            crate::model::RequestOptions::default().max_tokens(100).thinking(Thinking::Effort(Effort::High));
        let body = Provider::OpenAiChat.request_body(&request, "m", true);
        let wire_name = wire_name("files.read", NameRule::Strict);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "f"}}],
                "tool_choice": {"type": "function", "function": {"name": wire_name}},
                "parallel_tool_calls": false,
                "max_completion_tokens": 100,
                "reasoning_effort": "high",
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
        let plain =
            Provider::OpenAiChat.request_body(&ModelRequest::new(vec![Message::user("hi")]), "m", false);
        assert_eq!(plain, json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}));
    }
}
