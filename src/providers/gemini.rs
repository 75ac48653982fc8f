//! Google Gemini (`POST /v1beta/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse` for streaming).
//!
//! The request, the response and the stream's chunks (each a response holding the next
//! parts) are typed below, as the API reference describes them, reduced to the fields
//! this crate writes or reads. A part's thought signature is kept on the block the part
//! becomes and sent back on the same part.

use std::borrow::Cow;
use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    SseEvent, StreamDecoder, WireError, arguments_object, body_value, declared_tools, lenient, missing,
    parse_body, parse_event, system_text, to_value,
};
use crate::ContentPart;
use crate::model::{
    AssistantTurn, ContentBlock, Effort, FinishReason, Message, ModelRequest, Reasoning, Role, Thinking,
    ToolCall, ToolChoice, ToolResultBlock, TurnDelta, blocks_into_deltas,
};
use crate::protocol::native::{NameRule, wire_name};

// ---------------------------------------------------------------------------------------
// The request

/// A request body (its `None` fields are left out: [`body_value`]).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerateContentRequest<'a> {
    contents: Vec<Content<'a>>,
    system_instruction: Option<SystemInstruction>,
    /// The protocol's declarations, as they are.
    tools: Option<&'a Value>,
    tool_config: Option<ToolConfig<'a>>,
    generation_config: Option<GenerationConfig>,
}

#[derive(Debug, Serialize)]
struct SystemInstruction {
    parts: [TextPart; 1],
}

#[derive(Debug, Serialize)]
struct TextPart {
    text: String,
}

/// A turn of the conversation: `user` or `model`.
#[derive(Debug, Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: Vec<PartParam<'a>>,
}

/// A part: its data (text, a function call, a function response), and whether it is a
/// thought, with its signature.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct PartParam<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCallParam<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_response: Option<FunctionResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct FunctionCallParam<'a> {
    /// The call's id, when the API gave it one.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    /// The arguments, an object.
    args: Value,
}

#[derive(Debug, Serialize)]
struct FunctionResponse<'a> {
    /// The call's id, when the call had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    response: FunctionResult,
}

/// `{"output": …}`, or `{"error": …}` for a failure.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum FunctionResult {
    Output(Value),
    Error(Value),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    function_calling_config: FunctionCallingConfig<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCallingConfig<'a> {
    mode: FunctionCallingMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_function_names: Option<[Cow<'a, str>; 1]>,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum FunctionCallingMode {
    Auto,
    None,
    Any,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
}

/// A budget (Gemini 2.5) or a level (Gemini 3); whether the thoughts are returned.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    include_thoughts: Option<bool>,
}

// ---------------------------------------------------------------------------------------
// The response, and the stream's chunks

/// A response body, or one chunk of a stream.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct GenerateContentResponse<'a> {
    /// An error instead of a response.
    #[serde(deserialize_with = "lenient::non_null")]
    error: Option<ApiError>,
    #[serde(borrow, deserialize_with = "lenient::list")]
    candidates: Vec<Candidate<'a>>,
    /// Why the prompt was blocked, when it was (then there is no candidate).
    #[serde(deserialize_with = "lenient::seen")]
    prompt_feedback: bool,
}

/// `{"code", "message", "status"}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ApiError {
    #[serde(deserialize_with = "lenient::int")]
    code: Option<i64>,
    #[serde(deserialize_with = "lenient::string")]
    message: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    status: Option<String>,
}

impl ApiError {
    fn into_error(self) -> WireError {
        let kind = self.status.or_else(|| self.code.map(|code| code.to_string()));
        WireError::Provider { kind, message: self.message.unwrap_or_default() }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow, deserialize_with = "lenient::object")]
    content: CandidateContent<'a>,
    #[serde(deserialize_with = "lenient::tag")]
    finish_reason: Option<GeminiFinishReason>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CandidateContent<'a> {
    #[serde(borrow, deserialize_with = "lenient::list")]
    parts: Vec<Part<'a>>,
}

/// A part of the response: text (a thought, when `thought` is set) or a function call,
/// with the thought signature the API attached to it.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Part<'a> {
    #[serde(borrow, deserialize_with = "lenient::text")]
    text: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient::flag")]
    thought: bool,
    #[serde(borrow, deserialize_with = "lenient::text")]
    thought_signature: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::present")]
    function_call: Option<FunctionCallPart<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct FunctionCallPart<'a> {
    #[serde(borrow, deserialize_with = "lenient::text")]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text")]
    name: Option<Cow<'a, str>>,
    /// The arguments, an object (anything else is kept as its JSON text, and refused
    /// when the call is read).
    #[serde(deserialize_with = "lenient::json")]
    args: Option<Value>,
    /// Vertex AI's streamed arguments (`streamFunctionCallArguments`): pieces of the
    /// arguments, each a value at a JSON path.
    #[serde(borrow, deserialize_with = "lenient::list")]
    partial_args: Vec<PartialArg<'a>>,
    /// More of this call follows in a later part (Vertex AI's streamed arguments).
    #[serde(deserialize_with = "lenient::flag")]
    will_continue: bool,
}

/// A piece of a call's arguments (Vertex AI `PartialArg`): one value at `jsonPath`. A
/// string with `willContinue` goes on in the next piece for the same path.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PartialArg<'a> {
    #[serde(borrow, deserialize_with = "lenient::text")]
    json_path: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient::text")]
    string_value: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient::json")]
    number_value: Option<Value>,
    #[serde(deserialize_with = "lenient::json")]
    bool_value: Option<Value>,
    /// `nullValue` is there (its value is the enum `NULL_VALUE`).
    #[serde(deserialize_with = "lenient::seen")]
    null_value: bool,
    #[serde(deserialize_with = "lenient::flag")]
    will_continue: bool,
}

/// `finishReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum GeminiFinishReason {
    Stop,
    MaxTokens,
    Safety,
    Recitation,
    Blocklist,
    ProhibitedContent,
    Spii,
    ImageSafety,
    Language,
    MalformedFunctionCall,
    UnexpectedToolCall,
    TooManyToolCalls,
    /// The API's own `OTHER`.
    #[serde(rename = "OTHER")]
    OtherReason,
    /// A reason this version does not know.
    #[serde(other)]
    Unknown,
}

impl GeminiFinishReason {
    /// The finish reason (`STOP` with calls is a tool-calls finish: Gemini has no
    /// reason of its own for it).
    fn reason(self, has_calls: bool) -> Option<FinishReason> {
        match self {
            GeminiFinishReason::Stop if has_calls => Some(FinishReason::ToolCalls),
            GeminiFinishReason::Stop => Some(FinishReason::Stop),
            GeminiFinishReason::MaxTokens => Some(FinishReason::Length),
            GeminiFinishReason::Safety
            | GeminiFinishReason::Recitation
            | GeminiFinishReason::Blocklist
            | GeminiFinishReason::ProhibitedContent
            | GeminiFinishReason::Spii
            | GeminiFinishReason::ImageSafety
            | GeminiFinishReason::Language => Some(FinishReason::ContentFilter),
            GeminiFinishReason::MalformedFunctionCall
            | GeminiFinishReason::UnexpectedToolCall
            | GeminiFinishReason::TooManyToolCalls
            | GeminiFinishReason::OtherReason => Some(FinishReason::Error),
            GeminiFinishReason::Unknown => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// The codec

fn tool_config(choice: &ToolChoice) -> ToolConfig<'_> {
    let (mode, allowed) = match choice {
        ToolChoice::Auto => (FunctionCallingMode::Auto, None),
        ToolChoice::None => (FunctionCallingMode::None, None),
        ToolChoice::Required => (FunctionCallingMode::Any, None),
        ToolChoice::Tool(name) => (FunctionCallingMode::Any, Some([wire_name(name, NameRule::Gemini)])),
        #[allow(unreachable_patterns)]
        _ => (FunctionCallingMode::Auto, None),
    };
    ToolConfig { function_calling_config: FunctionCallingConfig { mode, allowed_function_names: allowed } }
}

/// A part's content read into `turn`. Text parts with `thought: true` are reasoning.
fn read_part(part: Part<'_>, turn: &mut AssistantTurn) {
    let signature = part.thought_signature.map(Cow::into_owned);
    if let Some(call) = part.function_call {
        let arguments = call.args.map_or_else(String::new, |args| args.to_string());
        let mut tool_call =
            ToolCall::new(call.id.unwrap_or_default(), call.name.unwrap_or_default(), arguments);
        tool_call.signature = signature;
        turn.content.push(ContentBlock::ToolCall(tool_call));
        return;
    }
    let Some(text) = part.text else { return };
    if part.thought {
        turn.content.push(ContentBlock::Reasoning(Reasoning::new(text, signature)));
    } else {
        turn.push_text(&text);
        if let Some(signature) = signature {
            // A signature on a text part: kept as an empty reasoning block after it.
            turn.content.push(ContentBlock::Reasoning(Reasoning::new("", Some(signature))));
        }
    }
}

/// The `response` of a `functionResponse`: the output (JSON when the tool gave JSON) or
/// the error.
fn response_of(block: &ToolResultBlock) -> FunctionResult {
    let value = match block.content.as_slice() {
        [ContentPart::Json { value }] => value.clone(),
        parts => Value::String(parts.iter().map(ContentPart::render_text).collect::<Vec<_>>().join("\n")),
    };
    if block.is_error { FunctionResult::Error(value) } else { FunctionResult::Output(value) }
}

pub(crate) fn request_body(request: &ModelRequest) -> Value {
    let tools = declared_tools(request);
    let options = &request.options;
    let thinking_config = options.thinking.map(|thinking| match thinking {
        Thinking::Off => ThinkingConfig { thinking_budget: Some(0), ..ThinkingConfig::default() },
        Thinking::On => ThinkingConfig { include_thoughts: Some(true), ..ThinkingConfig::default() },
        Thinking::Budget(budget) => ThinkingConfig {
            thinking_budget: Some(budget),
            include_thoughts: Some(true),
            ..ThinkingConfig::default()
        },
        Thinking::Effort(effort) => ThinkingConfig {
            thinking_level: Some(match effort {
                Effort::Minimal | Effort::Low => "low",
                Effort::Medium | Effort::High => "high",
            }),
            include_thoughts: Some(true),
            ..ThinkingConfig::default()
        },
    });
    let generation_config =
        (options.max_tokens.is_some() || options.temperature.is_some() || thinking_config.is_some())
            .then_some(GenerationConfig {
                max_output_tokens: options.max_tokens,
                temperature: options.temperature,
                thinking_config,
            });
    let body = GenerateContentRequest {
        contents: contents(&request.messages),
        system_instruction: system_text(request).map(|text| SystemInstruction { parts: [TextPart { text }] }),
        tools,
        tool_config: tools.map(|_| tool_config(&request.tool_choice)),
        generation_config,
    };
    body_value(&body)
}

pub(crate) fn parse_response(body: &Value) -> Result<AssistantTurn, WireError> {
    let response: GenerateContentResponse<'_> = parse_body(body)?;
    if let Some(error) = response.error {
        return Err(error.into_error());
    }
    let mut turn = AssistantTurn::new();
    let Some(candidate) = response.candidates.into_iter().next() else {
        // No candidate: the prompt was blocked, or the body is not a response.
        if response.prompt_feedback {
            turn.finish_reason = Some(FinishReason::ContentFilter);
            return Ok(turn);
        }
        return Err(missing("`candidates[0]`"));
    };
    for part in candidate.content.parts {
        read_part(part, &mut turn);
    }
    let has_calls = turn.tool_calls().next().is_some();
    turn.finish_reason = candidate.finish_reason.and_then(|reason| reason.reason(has_calls));
    Ok(turn)
}

pub(crate) fn wire_messages(messages: &[Message]) -> Value {
    to_value(&contents(messages))
}

/// The contents of the request.
fn contents(messages: &[Message]) -> Vec<Content<'_>> {
    // Calls that came with an id get it back on their responses.
    let with_ids: HashSet<&str> = messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .map(|c| c.id.as_str())
        .filter(|id| !id.is_empty())
        .collect();
    let text = |text| PartParam { text: Some(text), ..PartParam::default() };
    let mut contents = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, parts) = match message.role {
            Role::System => continue,
            Role::User => ("user", vec![text(message.text())]),
            Role::Assistant => ("model", model_parts(message)),
            Role::Tool => {
                let responses: Vec<PartParam<'_>> = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::ToolResult(result) => Some(PartParam {
                            function_response: Some(FunctionResponse {
                                id: with_ids
                                    .contains(result.call_id.as_str())
                                    .then_some(result.call_id.as_str()),
                                name: &result.name,
                                response: response_of(result),
                            }),
                            ..PartParam::default()
                        }),
                        _ => None,
                    })
                    .collect();
                if responses.is_empty() { ("user", vec![text(message.text())]) } else { ("user", responses) }
            }
        };
        if !parts.is_empty() {
            contents.push(Content { role, parts });
        }
    }
    contents
}

/// A model turn's parts as Gemini takes them back: thought parts and signatures unchanged.
fn model_parts(message: &Message) -> Vec<PartParam<'_>> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => {
                Some(PartParam { text: Some(Cow::Borrowed(text)), ..PartParam::default() })
            }
            ContentBlock::Reasoning(r) if r.text.is_empty() => {
                r.signature.as_deref().map(|signature| PartParam {
                    text: Some(Cow::Borrowed("")),
                    thought_signature: Some(signature),
                    ..PartParam::default()
                })
            }
            ContentBlock::Reasoning(r) => Some(PartParam {
                text: Some(Cow::Borrowed(&r.text)),
                thought: Some(true),
                thought_signature: r.signature.as_deref(),
                ..PartParam::default()
            }),
            ContentBlock::ToolCall(call) => Some(PartParam {
                function_call: Some(FunctionCallParam {
                    id: (!call.id.is_empty()).then_some(call.id.as_str()),
                    name: &call.name,
                    args: arguments_object(call),
                }),
                thought_signature: call.signature.as_deref(),
                ..PartParam::default()
            }),
            ContentBlock::ToolResult(_) => None,
        })
        .collect()
}

/// Decodes `streamGenerateContent?alt=sse` chunks: each a response holding the next
/// parts. A call arrives whole in one part, so it starts and ends at once; or, with
/// Vertex AI's streamed arguments, it starts with a part that has its name and
/// `willContinue`, goes on in parts of `partialArgs` and ends with the first part whose
/// `willContinue` is not set: its arguments are assembled from the pieces and given at
/// its end.
#[derive(Debug, Default)]
pub(crate) struct ChunkDecoder {
    calls: usize,
    /// The last finish reason seen waits for the end (a chunk may still follow).
    finish: Option<GeminiFinishReason>,
    /// The call whose arguments are streaming in.
    open: Option<StreamedCall>,
}

impl ChunkDecoder {
    /// One part of a chunk.
    fn part(&mut self, mut part: Part<'_>, deltas: &mut Vec<TurnDelta>) {
        if let Some(call) = part.function_call.take() {
            let signature = part.thought_signature.take().map(Cow::into_owned);
            // A part without a name goes on with the call streaming in.
            if call.name.is_none()
                && let Some(open) = self.open.as_mut()
            {
                open.signature(signature, deltas);
                if open.push(call)
                    && let Some(open) = self.open.take()
                {
                    open.end(deltas);
                }
                return;
            }
            // Another call begins: one still streaming in never got its end.
            self.cut_open(deltas);
            if call.will_continue || !call.partial_args.is_empty() {
                let index = self.calls;
                self.calls += 1;
                deltas.push(TurnDelta::ToolCallStart {
                    index,
                    id: call.id.as_deref().unwrap_or_default().to_owned(),
                    name: call.name.as_deref().unwrap_or_default().to_owned(),
                });
                let mut open = StreamedCall::new(index, call.args.as_ref());
                open.signature(signature, deltas);
                if open.push(call) {
                    open.end(deltas);
                } else {
                    self.open = Some(open);
                }
                return;
            }
            part.function_call = Some(call);
            part.thought_signature = signature.map(Cow::Owned);
        } else if !part.thought && part.thought_signature.is_none() {
            // Plain text (most parts): as `read_part` reads it, without a turn.
            if let Some(text) = part.text.filter(|text| !text.is_empty()) {
                deltas.push(TurnDelta::Text(text.into_owned()));
            }
            return;
        }
        let mut turn = AssistantTurn::new();
        read_part(part, &mut turn);
        self.calls += blocks_into_deltas(turn.content, self.calls, deltas);
    }

    /// Ends the call still streaming in as incomplete.
    fn cut_open(&mut self, deltas: &mut Vec<TurnDelta>) {
        if let Some(mut open) = self.open.take() {
            open.broken = true;
            open.end(deltas);
        }
    }
}

impl StreamDecoder for ChunkDecoder {
    fn event(&mut self, event: &SseEvent, deltas: &mut Vec<TurnDelta>) -> Result<(), WireError> {
        let chunk: GenerateContentResponse<'_> = parse_event(event)?;
        if let Some(error) = chunk.error {
            return Err(error.into_error());
        }
        let Some(candidate) = chunk.candidates.into_iter().next() else {
            return Ok(());
        };
        for part in candidate.content.parts {
            self.part(part, deltas);
        }
        if let Some(reason) = candidate.finish_reason {
            self.finish = Some(reason);
        }
        Ok(())
    }

    fn finish(&mut self, deltas: &mut Vec<TurnDelta>) {
        if let Some(reason) = self.finish.take().and_then(|r| r.reason(self.calls > 0)) {
            deltas.push(TurnDelta::Finish(reason));
        }
        // A call still streaming in is left open: the stream marks it cut off.
    }
}

/// How many steps a `jsonPath` may have: deeper arguments are refused (and could not be
/// read back as JSON anyway).
const MAX_PATH_STEPS: usize = 128;

/// A call whose arguments stream in as `partialArgs` pieces.
#[derive(Debug)]
struct StreamedCall {
    index: usize,
    /// The arguments so far, an object.
    args: Value,
    /// The paths whose string goes on in a later piece.
    open_strings: HashSet<String>,
    /// The string the last piece left open: its path, its steps, and the text of the
    /// pieces that went on with it since, not yet appended to its slot in `args`. The
    /// pieces of one string (one per token) are taken here without reading the path
    /// again; the text is appended before anything else reads or changes `args`.
    pending: Option<(String, Vec<Step>, String)>,
    /// A piece could not be placed (or the call was cut off): the call is incomplete.
    broken: bool,
}

impl StreamedCall {
    /// A call starting from `args` (an object; none is `{}`).
    fn new(index: usize, args: Option<&Value>) -> StreamedCall {
        let (args, broken) = match args {
            None | Some(Value::Null) => (Value::Object(serde_json::Map::new()), false),
            Some(Value::Object(args)) => (Value::Object(args.clone()), false),
            Some(_) => (Value::Object(serde_json::Map::new()), true),
        };
        StreamedCall { index, args, open_strings: HashSet::new(), pending: None, broken }
    }

    fn signature(&self, signature: Option<String>, deltas: &mut Vec<TurnDelta>) {
        if let Some(signature) = signature {
            deltas.push(TurnDelta::ToolCallSignature { index: self.index, signature });
        }
    }

    /// Places the part's pieces; whether the call ends with this part.
    fn push(&mut self, call: FunctionCallPart<'_>) -> bool {
        if call.args.is_some() {
            self.flush();
        }
        if call.name.is_none()
            && let Some(Value::Object(args)) = call.args
            && let Value::Object(so_far) = &mut self.args
        {
            so_far.extend(args);
        }
        for piece in call.partial_args {
            if !self.place(piece) {
                self.broken = true;
            }
        }
        !call.will_continue
    }

    /// Places one piece; `false` when it cannot be placed.
    fn place(&mut self, piece: PartialArg<'_>) -> bool {
        // The string left open goes on.
        if let Some((open, _, text)) = &mut self.pending
            && let (Some(path), Some(more)) = (piece.json_path.as_deref(), piece.string_value.as_deref())
            && path == open.as_str()
        {
            text.push_str(more);
            if !piece.will_continue {
                self.open_strings.remove(path);
                self.flush();
            }
            return true;
        }
        self.flush();
        let Some(path) = piece.json_path else { return false };
        let Some(steps) = json_path(&path) else { return false };
        let continues = self.open_strings.remove(path.as_ref());
        let (value, is_string) = if let Some(text) = piece.string_value {
            (Value::String(text.into_owned()), true)
        } else if let Some(number) = piece.number_value.filter(Value::is_number) {
            (number, false)
        } else if let Some(flag) = piece.bool_value.filter(Value::is_boolean) {
            (flag, false)
        } else if piece.null_value {
            (Value::Null, false)
        } else {
            return false;
        };
        let open = is_string && piece.will_continue;
        if open {
            self.open_strings.insert(path.clone().into_owned());
        }
        let Some(slot) = slot_at(&mut self.args, &steps) else { return false };
        match (slot, value) {
            (Value::String(so_far), Value::String(more)) if continues => so_far.push_str(&more),
            (slot, value) => *slot = value,
        }
        if open {
            self.pending = Some((path.into_owned(), steps, String::new()));
        }
        true
    }

    /// Appends the text of the string left open to its slot.
    fn flush(&mut self) {
        if let Some((_, steps, text)) = self.pending.take()
            && !text.is_empty()
            && let Some(Value::String(so_far)) = slot_at(&mut self.args, &steps)
        {
            so_far.push_str(&text);
        }
    }

    /// The call's arguments, then its end (incomplete if it is broken).
    fn end(mut self, deltas: &mut Vec<TurnDelta>) {
        self.flush();
        let index = self.index;
        deltas.push(TurnDelta::ToolCallArguments { index, fragment: self.args.to_string() });
        if self.broken {
            deltas.push(TurnDelta::ToolCallIncomplete { index });
        }
        deltas.push(TurnDelta::ToolCallEnd { index });
    }
}

/// A step of a JSON path: a member name or an array index.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The steps of a JSON path below the root (`$.a.b`, `$.list[0]`, `$['a b']`); `None`
/// when it is not one, or has no step, or more than [`MAX_PATH_STEPS`].
fn json_path(path: &str) -> Option<Vec<Step>> {
    let mut chars = path.strip_prefix('$')?.chars().peekable();
    let mut steps = Vec::new();
    while let Some(c) = chars.next() {
        let step = match c {
            '.' => {
                let mut key = String::new();
                while let Some(&c) = chars.peek() {
                    if c == '.' || c == '[' {
                        break;
                    }
                    key.push(c);
                    chars.next();
                }
                if key.is_empty() {
                    return None;
                }
                Step::Key(key)
            }
            '[' => {
                let step = match chars.next()? {
                    quote @ ('\'' | '"') => {
                        let mut key = String::new();
                        loop {
                            match chars.next()? {
                                '\\' => key.push(chars.next()?),
                                c if c == quote => break,
                                c => key.push(c),
                            }
                        }
                        Step::Key(key)
                    }
                    digit @ '0'..='9' => {
                        let mut number = String::from(digit);
                        while let Some(&c) = chars.peek() {
                            if !c.is_ascii_digit() {
                                break;
                            }
                            number.push(c);
                            chars.next();
                        }
                        Step::Index(number.parse().ok()?)
                    }
                    _ => return None,
                };
                if chars.next()? != ']' {
                    return None;
                }
                step
            }
            _ => return None,
        };
        steps.push(step);
        if steps.len() > MAX_PATH_STEPS {
            return None;
        }
    }
    (!steps.is_empty()).then_some(steps)
}

/// The value at `steps` below `root`, made on the way (objects for names, arrays for
/// indexes, each index at most one past the end); `None` when a step goes through a
/// value of another kind, or past the end of an array.
fn slot_at<'v>(root: &'v mut Value, steps: &[Step]) -> Option<&'v mut Value> {
    let mut slot = root;
    for step in steps {
        slot = match step {
            Step::Key(key) => {
                if slot.is_null() {
                    *slot = Value::Object(serde_json::Map::new());
                }
                let Value::Object(members) = slot else { return None };
                members.entry(key.clone()).or_insert(Value::Null)
            }
            Step::Index(index) => {
                if slot.is_null() {
                    *slot = Value::Array(Vec::new());
                }
                let Value::Array(items) = slot else { return None };
                if *index == items.len() {
                    items.push(Value::Null);
                }
                items.get_mut(*index)?
            }
        };
    }
    Some(slot)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::providers::testing::{decode, events};
    use crate::providers::{Provider, WireFormat};

    #[test]
    fn parts_signatures_and_calls_without_ids() {
        let body = json!({"candidates": [{"finishReason": "STOP", "content": {"role": "model", "parts": [
            {"text": "think", "thought": true, "thoughtSignature": "s1"},
            {"text": "Hi", "thoughtSignature": "s2"},
            {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "s3"},
            {"functionCall": {"id": "c2", "name": "g"}},
            {"functionCall": {"name": "h", "args": null}},
            {"thoughtSignature": "alone"},
            "not a part",
        ]}}]});
        let turn = Provider::Gemini.parse_response(&body).unwrap();
        assert_eq!(
            turn.content,
            [
                ContentBlock::Reasoning(Reasoning::new("think", Some("s1".into()))),
                ContentBlock::text("Hi"),
                ContentBlock::Reasoning(Reasoning::new("", Some("s2".into()))),
                ContentBlock::ToolCall(ToolCall::new("", "f", r#"{"a":1}"#).with_signature("s3")),
                ContentBlock::ToolCall(ToolCall::new("c2", "g", "")),
                ContentBlock::ToolCall(ToolCall::new("", "h", "null")),
            ]
        );
        assert_eq!(turn.finish_reason, Some(FinishReason::ToolCalls), "STOP with calls");
        // The parts go back as they came, ids only where the call had one.
        let contents = Provider::Gemini.wire_messages(&[Message::from_turn(turn)]);
        assert_eq!(
            contents[0]["parts"],
            json!([
                {"text": "think", "thought": true, "thoughtSignature": "s1"},
                {"text": "Hi"},
                {"text": "", "thoughtSignature": "s2"},
                {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "s3"},
                {"functionCall": {"id": "c2", "name": "g", "args": {}}},
                {"functionCall": {"name": "h", "args": {}}},
            ])
        );
    }

    #[test]
    fn blocked_prompts_errors_and_other_bodies() {
        let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}});
        assert_eq!(
            Provider::Gemini.parse_response(&blocked).unwrap().finish_reason,
            Some(FinishReason::ContentFilter)
        );
        let error = json!({"error": {"code": 503, "message": "Unavailable"}});
        assert_eq!(
            Provider::Gemini.parse_response(&error),
            Err(WireError::Provider { kind: Some("503".into()), message: "Unavailable".into() })
        );
        let other =
            json!({"candidates": [{"finishReason": "SOMETHING_NEW", "content": {"parts": [{"text": "x"}]}}]});
        assert_eq!(Provider::Gemini.parse_response(&other).unwrap().finish_reason, None);
        let other = json!({"candidates": [{"finishReason": "OTHER"}]});
        assert_eq!(Provider::Gemini.parse_response(&other).unwrap().finish_reason, Some(FinishReason::Error));
    }

    #[test]
    fn a_stream_finishes_at_its_end() {
        let sse = events(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]}}]}"#,
            r#"{"usageMetadata":{"totalTokenCount":3}}"#,
        ]);
        let (deltas, error) = decode(Provider::Gemini, &sse);
        assert_eq!(error, None);
        assert_eq!(
            deltas,
            [
                TurnDelta::Text("a".into()),
                TurnDelta::ToolCallStart { index: 0, id: String::new(), name: "f".into() },
                TurnDelta::ToolCallArguments { index: 0, fragment: "{}".into() },
                TurnDelta::ToolCallEnd { index: 0 },
                TurnDelta::Finish(FinishReason::ToolCalls),
            ]
        );
        let (_, error) =
            decode(Provider::Gemini, &events(&[r#"{"error":{"status":"INTERNAL","message":"m"}}"#]));
        assert_eq!(error, Some(WireError::Provider { kind: Some("INTERNAL".into()), message: "m".into() }));
    }

    /// The calls a stream gives: name, arguments, whether incomplete.
    fn streamed_calls(payloads: &[&str]) -> Vec<(String, String, bool)> {
        // Each payload on one line: one `data:` line each.
        let lines: Vec<String> = payloads.iter().map(|p| p.replace('\n', " ")).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (deltas, error) = decode(Provider::Gemini, &events(&lines));
        assert_eq!(error, None);
        let mut turn = crate::model::TurnAccumulator::new();
        deltas.iter().for_each(|d| turn.push(d));
        turn.finish().tool_calls().map(|c| (c.name.clone(), c.arguments.clone(), c.incomplete)).collect()
    }

    #[test]
    fn json_paths() {
        let key = |k: &str| Step::Key(k.into());
        assert_eq!(json_path("$.a"), Some(vec![key("a")]));
        assert_eq!(
            json_path("$.a.b[0][12]"),
            Some(vec![key("a"), key("b"), Step::Index(0), Step::Index(12)])
        );
        assert_eq!(json_path(r#"$['a b']["c.d"]['e\'f']"#), Some(vec![key("a b"), key("c.d"), key("e'f")]));
        for bad in [
            "",
            "$",
            "a",
            "$a",
            "$.",
            "$..a",
            "$[",
            "$[x]",
            "$[1",
            "$['a",
            "$[-1]",
            "$['a'x",
            "$.a[99999999999999999999999]",
        ] {
            assert_eq!(json_path(bad), None, "{bad}");
        }
        let deep = format!("${}", ".a".repeat(MAX_PATH_STEPS));
        assert_eq!(json_path(&deep).map(|s| s.len()), Some(MAX_PATH_STEPS));
        assert_eq!(json_path(&format!("{deep}.a")), None);
    }

    #[test]
    fn streamed_arguments_are_assembled_at_the_calls_end() {
        let calls = streamed_calls(&[
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}"#,
            // Two strings streaming in at once, interleaved; a list; a string replaced.
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[
                {"jsonPath":"$.a","stringValue":"x","willContinue":true},
                {"jsonPath":"$.b.c","stringValue":"1","willContinue":true},
                {"jsonPath":"$.a","stringValue":"y","willContinue":true},
                {"jsonPath":"$.b.c","stringValue":"2"},
                {"jsonPath":"$.l[0]","boolValue":true},
                {"jsonPath":"$.l[1]","nullValue":"NULL_VALUE"},
                {"jsonPath":"$.l[1]","numberValue":-1.5},
                {"jsonPath":"$.s","stringValue":"old"},
                {"jsonPath":"$.s","stringValue":"new"}
            ],"willContinue":true}}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"between"}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[
                {"jsonPath":"$.a","stringValue":"z"}]}}]}}]}"#,
        ]);
        assert_eq!(
            calls,
            [("f".into(), r#"{"a":"xyz","b":{"c":"12"},"l":[true,-1.5],"s":"new"}"#.into(), false)]
        );
    }

    #[test]
    fn pieces_that_cannot_be_placed_make_the_call_incomplete() {
        let start =
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}"#;
        let end = r#"{"candidates":[{"content":{"parts":[{"functionCall":{}}]}}]}"#;
        for piece in [
            r#"{"jsonPath":"$.l[1]","numberValue":1}"#,
            r#"{"jsonPath":"$","numberValue":1}"#,
            r#"{"jsonPath":"city","stringValue":"x"}"#,
            r#"{"stringValue":"x"}"#,
            r#"{"jsonPath":"$.a"}"#,
            r#"{"jsonPath":"$.a","numberValue":"1"}"#,
            r#"{"jsonPath":"$.a","boolValue":1}"#,
        ] {
            let middle = format!(
                r#"{{"candidates":[{{"content":{{"parts":[{{"functionCall":{{"partialArgs":[{piece}],"willContinue":true}}}}]}}}}]}}"#
            );
            let calls = streamed_calls(&[start, &middle, end]);
            assert_eq!(calls.len(), 1, "{piece}");
            assert!(calls.iter().all(|(name, _, incomplete)| name == "f" && *incomplete), "{piece}");
        }
        // A path through a value of another kind.
        let through = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"partialArgs":[
            {"jsonPath":"$.a","numberValue":1},{"jsonPath":"$.a.b","numberValue":2}],"willContinue":true}}]}}]}"#;
        assert_eq!(streamed_calls(&[start, through, end]), [("f".into(), r#"{"a":1}"#.into(), true)]);
        // Another call begins before the first ended: the first is cut off.
        let next = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"g","args":{"x":1}}}]}}]}"#;
        assert_eq!(
            streamed_calls(&[start, next]),
            [("f".into(), "{}".into(), true), ("g".into(), r#"{"x":1}"#.into(), false)]
        );
        // Arguments that are not an object to start from.
        let odd = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":[1],"willContinue":true}}]}}]}"#;
        assert_eq!(streamed_calls(&[odd, end]), [("f".into(), "{}".into(), true)]);
        // A whole call, and one whose only part has pieces and ends at once.
        let once = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"h","args":{"a":1},
            "partialArgs":[{"jsonPath":"$.b","numberValue":2}]}}]}}]}"#;
        assert_eq!(streamed_calls(&[once]), [("h".into(), r#"{"a":1,"b":2}"#.into(), false)]);
    }

    #[test]
    fn request_bodies() {
        let mut request = ModelRequest::new(vec![Message::user("hi")]);
        request.tool_prompt = Some("Tools.".into());
        request.tools = Some(json!([{"functionDeclarations": [{"name": "files.read"}]}]));
        request.tool_choice = ToolChoice::Tool("files.read".into());
        request.options = crate::model::RequestOptions::default().thinking(Thinking::Effort(Effort::Low));
        assert_eq!(
            Provider::Gemini.request_body(&request, "gemini", true),
            json!({
                "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                "systemInstruction": {"parts": [{"text": "Tools."}]},
                "tools": [{"functionDeclarations": [{"name": "files.read"}]}],
                "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["files.read"]}},
                "generationConfig": {"thinkingConfig": {"thinkingLevel": "low", "includeThoughts": true}},
            })
        );
        request.options = crate::model::RequestOptions::default().thinking(Thinking::Off);
        let body = Provider::Gemini.request_body(&request, "gemini", false);
        assert_eq!(body["generationConfig"], json!({"thinkingConfig": {"thinkingBudget": 0}}));
        let plain =
            Provider::Gemini.request_body(&ModelRequest::new(vec![Message::user("hi")]), "gemini", false);
        assert_eq!(plain, json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}));
    }
}
