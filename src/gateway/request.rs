//! One request as every front hands it over, and the text conversation the upstream is
//! sent for it: the tools as the protocol's prompt, earlier calls as the protocol's call
//! text, their results as the protocol's result text.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::GatewayError;
use crate::model::{AssistantTurn, ContentBlock, Message, Role, ToolChoice, ToolResultBlock};
use crate::protocol::ToolCallingProtocol;
use crate::tools::{ArgumentValidator, MethodDefinition, ToolCatalog, ToolDefinition};
use crate::{ContentPart, ErrorKind, ToolExecutionResult};

/// A function the client offers (OpenAI's `tools[].function`, Anthropic's `tools[]`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Function {
    pub name: String,
    pub description: String,
    /// The parameters' JSON Schema.
    pub parameters: Value,
}

/// A request, front-neutral: what each front reads its wire shape into.
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnRequest {
    pub model: String,
    /// The conversation: assistant messages hold their calls as
    /// [`ContentBlock::ToolCall`]s, results are [`Role::Tool`] messages of
    /// [`ContentBlock::ToolResult`]s (one per result).
    pub messages: Vec<Message>,
    pub functions: Vec<Function>,
    pub tool_choice: ToolChoice,
    pub parallel_tool_calls: Option<bool>,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// Chat Completions fields that go upstream as they are (sampling, `max_tokens`,
    /// `stop`, `user`, …).
    pub options: Map<String, Value>,
}

/// The tools offered in one request: their definitions (each function a tool that is
/// one method, so its full name is its own), the catalog requests resolve against, and
/// which names a call may use.
#[derive(Debug)]
pub(crate) struct Offer {
    pub definitions: Vec<ToolDefinition>,
    pub catalog: ToolCatalog,
    /// Names a returned call may have (all offered, or the one a named choice picks).
    pub callable: HashSet<String>,
    /// Whether the reply must hold a call (`required`, or a named function).
    pub required: bool,
    /// Each offered function's arguments validator (none for a schema that does not
    /// compile: its calls are handed on as coerced).
    pub validators: HashMap<String, ArgumentValidator>,
}

/// A result the client sends for the call `call_id`, as [`TurnRequest::messages`] holds
/// it: a [`Role::Tool`] message of one result block (the name is the call's, found by
/// its id when the conversation is written).
pub(crate) fn result_message(call_id: String, text: String, is_error: bool) -> Message {
    let block =
        ToolResultBlock { call_id, name: String::new(), content: vec![ContentPart::text(text)], is_error };
    Message::with_content(Role::Tool, vec![ContentBlock::ToolResult(block)])
}

impl TurnRequest {
    /// Checks the tools and the choice, and makes what the protocol offers.
    pub(crate) fn offer(&self) -> Result<Offer, GatewayError> {
        let mut seen = HashSet::new();
        for (i, function) in self.functions.iter().enumerate() {
            if function.name.trim().is_empty() {
                return Err(GatewayError::bad("a tool has no name", format!("tools[{i}]")));
            }
            if !seen.insert(function.name.as_str()) {
                let message = format!("the tool `{}` is declared twice", function.name);
                return Err(GatewayError::bad(message, format!("tools[{i}]")));
            }
        }
        let offered: Vec<&Function> = match &self.tool_choice {
            ToolChoice::None => Vec::new(),
            ToolChoice::Tool(name) => {
                let chosen: Vec<&Function> = self.functions.iter().filter(|f| &f.name == name).collect();
                if chosen.is_empty() {
                    let message = format!("`tool_choice` names `{name}`, which is not among the tools");
                    return Err(GatewayError::bad(message, "tool_choice".to_string()));
                }
                chosen
            }
            _ => self.functions.iter().collect(),
        };
        let required =
            matches!(self.tool_choice, ToolChoice::Required | ToolChoice::Tool(_)) && !offered.is_empty();
        let definitions: Vec<ToolDefinition> = offered
            .iter()
            .map(|f| {
                ToolDefinition::new(&f.name, &f.name).with_method(
                    MethodDefinition::new("", &f.description).with_parameters(object_schema(&f.parameters)),
                )
            })
            .collect();
        let catalog = ToolCatalog::from_definitions(&definitions);
        let callable = offered.iter().map(|f| f.name.clone()).collect();
        let mut validators = HashMap::new();
        for definition in &definitions {
            for method in &definition.methods {
                match ArgumentValidator::new(&method.parameters) {
                    Ok(validator) => {
                        validators.insert(method.full_name(&definition.tool_id), validator);
                    }
                    Err(error) => {
                        tracing::warn!(tool = %definition.tool_id, %error, "a tool schema that does not compile: its calls are not validated");
                    }
                }
            }
        }
        Ok(Offer { definitions, catalog, callable, required, validators })
    }

    /// The messages sent upstream: the tool prompt joined to the system prompt, the
    /// conversation with calls and results as the protocol's text, and `reminder` (after
    /// a reply that should have called a tool) as a last user message after that reply.
    pub(crate) fn text_conversation(
        &self,
        protocol: &dyn ToolCallingProtocol,
        offer: &Offer,
        retry: Option<(&str, &str)>,
    ) -> Result<Vec<Message>, GatewayError> {
        let mut out = Vec::with_capacity(self.messages.len() + 2);
        let prompt = tool_prompt(protocol, offer, &self.tool_choice);
        let mut history = History::default();
        for (i, message) in self.messages.iter().enumerate() {
            match message.role {
                Role::Tool => {
                    history.take_results(i, message)?;
                    continue;
                }
                Role::Assistant => {
                    history.flush(protocol, &mut out);
                    out.push(history.assistant(protocol, i, message)?);
                }
                _ => {
                    history.flush(protocol, &mut out);
                    out.push(Message::with_content(message.role, text_only(message)));
                }
            }
        }
        history.flush(protocol, &mut out);
        if let Some(prompt) = prompt {
            match out.first_mut() {
                Some(first) if first.role == Role::System => {
                    let system = format!("{}\n\n{prompt}", first.text());
                    *first = Message::system(system);
                }
                _ => out.insert(0, Message::system(prompt)),
            }
        }
        if let Some((reply, reminder)) = retry {
            out.push(Message::assistant(reply));
            out.push(Message::user(reminder));
        }
        Ok(out)
    }
}

/// A parameter schema as the prompt writers read it: an object schema (a client may
/// leave `parameters` out for a function without any).
fn object_schema(parameters: &Value) -> Value {
    match parameters {
        Value::Object(map) if !map.is_empty() => parameters.clone(),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    }
}

/// The protocol's prompt for the offered tools, with what the tool choice asks for.
fn tool_prompt(protocol: &dyn ToolCallingProtocol, offer: &Offer, choice: &ToolChoice) -> Option<String> {
    if offer.definitions.is_empty() {
        return None;
    }
    let prompt = protocol.tool_declarations(&offer.definitions).as_prompt()?.to_string();
    if prompt.is_empty() {
        return None;
    }
    Some(match choice {
        ToolChoice::Required => format!("{prompt}\n\nAnswer this turn with at least one tool call."),
        ToolChoice::Tool(name) => format!("{prompt}\n\nAnswer this turn with a call to `{name}`."),
        _ => prompt,
    })
}

/// The text and images of a message, without its other blocks.
fn text_only(message: &Message) -> Vec<ContentBlock> {
    message.content.iter().filter(|block| matches!(block, ContentBlock::Text { .. })).cloned().collect()
}

/// The calls of the last assistant message, waiting for their results.
#[derive(Debug, Default)]
struct History {
    /// Each call: its id, its name, and its result once a tool message gave it.
    calls: Vec<(String, String, Option<ToolExecutionResult>)>,
    /// The requests the protocol read back from the call text, in order.
    requests: Vec<crate::ToolRequest>,
    state: crate::protocol::TurnState,
    ids: HashMap<String, usize>,
}

impl History {
    /// The assistant message as text: its text, then each call in the protocol's form.
    fn assistant(
        &mut self,
        protocol: &dyn ToolCallingProtocol,
        index: usize,
        message: &Message,
    ) -> Result<Message, GatewayError> {
        let mut text = message.text().into_owned();
        for (j, call) in message.tool_calls().enumerate() {
            let param = || format!("messages[{index}].tool_calls[{j}]");
            let args = match call.arguments_json() {
                Ok(Value::Object(args)) => args,
                _ if call.arguments.trim().is_empty() => Map::new(),
                _ => return Err(GatewayError::bad("the call's arguments are not a JSON object", param())),
            };
            let written = protocol.write_call(&call.name, &args).ok_or_else(|| {
                let message = format!(
                    "the call of `{}` cannot be written in the protocol `{}`",
                    call.name,
                    protocol.id()
                );
                GatewayError::bad(message, param())
            })?;
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&written);
            self.ids.insert(call.id.clone(), self.calls.len());
            self.calls.push((call.id.clone(), call.name.clone(), None));
        }
        if !self.calls.is_empty() {
            let outcome = protocol.parse_turn(&AssistantTurn::from_text(text.as_str()));
            self.requests = outcome.requests;
            self.state = outcome.state;
        }
        Ok(Message::assistant(text))
    }

    /// The results a tool message carries, matched to the calls by id.
    fn take_results(&mut self, index: usize, message: &Message) -> Result<(), GatewayError> {
        for block in &message.content {
            let ContentBlock::ToolResult(result) = block else { continue };
            let call = self.ids.get(&result.call_id).and_then(|&at| self.calls.get_mut(at));
            let Some((id, name, slot)) = call else {
                let message = format!("no earlier assistant call has the id `{}`", result.call_id);
                return Err(GatewayError::bad(message, format!("messages[{index}].tool_call_id")));
            };
            let text =
                result.content.iter().map(crate::ContentPart::render_text).collect::<Vec<_>>().join("\n");
            *slot = Some(if result.is_error {
                ToolExecutionResult::error(id.clone(), name.clone(), ErrorKind::Execution, text)
            } else {
                ToolExecutionResult::success(id.clone(), name.clone(), text)
            });
        }
        Ok(())
    }

    /// The results of the last assistant message's calls, in the protocol's text, one per
    /// call in call order (a call the client sent no result for gets an error saying so).
    fn flush(&mut self, protocol: &dyn ToolCallingProtocol, out: &mut Vec<Message>) {
        if self.calls.is_empty() {
            return;
        }
        let results: Vec<ToolExecutionResult> = self
            .calls
            .drain(..)
            .enumerate()
            .map(|(k, (id, name, result))| {
                // The protocol writes results for the requests it read: their ids.
                let request_id = self.requests.get(k).map_or(id, |r| r.request_id.clone());
                let mut result = result.unwrap_or_else(|| {
                    ToolExecutionResult::error(
                        "",
                        "",
                        ErrorKind::Execution,
                        "no result was given for this call",
                    )
                });
                result.request_id = request_id;
                result.tool_name = name;
                result
            })
            .collect();
        out.extend(protocol.result_messages(&results, &self.state).into_iter().map(|m| {
            // Results go upstream as text: a user turn on a plain chat API.
            Message::with_content(m.role, text_only(&m))
        }));
        self.requests.clear();
        self.ids.clear();
        self.state = Default::default();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ContentPart;
    use crate::model::{ToolCall, ToolResultBlock};
    use crate::protocol::vcp::VcpProtocol;

    fn weather() -> Function {
        Function {
            name: "get_weather".into(),
            description: "The weather in a city.".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        }
    }

    #[test]
    fn a_two_round_conversation_becomes_protocol_text() {
        let request = TurnRequest {
            messages: vec![
                Message::system("Be brief."),
                Message::user("Weather in Paris?"),
                Message::assistant("Checking.").with_block(ContentBlock::ToolCall(ToolCall::new(
                    "call_1",
                    "get_weather",
                    r#"{"city": "Paris"}"#,
                ))),
                Message::with_content(
                    Role::Tool,
                    vec![ContentBlock::ToolResult(ToolResultBlock {
                        call_id: "call_1".into(),
                        name: "get_weather".into(),
                        content: vec![ContentPart::text("18 °C, sunny")],
                        is_error: false,
                    })],
                ),
            ],
            functions: vec![weather()],
            ..TurnRequest::default()
        };
        let vcp = VcpProtocol::default();
        let offer = request.offer().unwrap();
        let messages = request.text_conversation(&vcp, &offer, None).unwrap();
        let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::Tool]);
        assert!(messages[0].text().starts_with("Be brief.\n\n"));
        assert!(messages[0].text().contains("get_weather"), "the tool prompt is in the system message");
        let call = vcp.parse(&messages[2].text());
        assert_eq!(call.requests[0].tool_name, "get_weather");
        assert_eq!(call.requests[0].arg_str("city"), Some("Paris"));
        assert!(messages[3].text().contains("18 °C, sunny"));
        assert!(messages[3].tool_calls().next().is_none());
    }

    #[test]
    fn bad_tools_and_histories_are_named() {
        let twice = TurnRequest { functions: vec![weather(), weather()], ..TurnRequest::default() };
        assert!(
            matches!(twice.offer(), Err(GatewayError::BadRequest { param: Some(p), .. }) if p == "tools[1]")
        );
        let unknown = TurnRequest {
            functions: vec![weather()],
            tool_choice: ToolChoice::Tool("nope".into()),
            ..TurnRequest::default()
        };
        assert!(unknown.offer().is_err());
        let orphan = TurnRequest {
            messages: vec![Message::with_content(
                Role::Tool,
                vec![ContentBlock::ToolResult(ToolResultBlock {
                    call_id: "x".into(),
                    name: String::new(),
                    content: vec![],
                    is_error: false,
                })],
            )],
            ..TurnRequest::default()
        };
        let offer = orphan.offer().unwrap();
        let error = orphan.text_conversation(&VcpProtocol::default(), &offer, None).unwrap_err();
        assert!(error.to_string().contains("`x`"), "{error}");
    }

    #[test]
    fn a_named_choice_offers_that_tool_and_says_so() {
        let other = Function { name: "get_time".into(), description: String::new(), parameters: Value::Null };
        let request = TurnRequest {
            messages: vec![Message::user("hi")],
            functions: vec![weather(), other],
            tool_choice: ToolChoice::Tool("get_time".into()),
            ..TurnRequest::default()
        };
        let offer = request.offer().unwrap();
        assert!(offer.required);
        assert_eq!(offer.callable, HashSet::from(["get_time".to_string()]));
        let messages =
            request.text_conversation(&VcpProtocol::default(), &offer, Some(("Hello.", "Call it."))).unwrap();
        assert!(messages[0].text().contains("Answer this turn with a call to `get_time`."));
        assert!(!messages[0].text().contains("get_weather"));
        assert_eq!(messages.last().unwrap().text(), "Call it.");
        let none = TurnRequest {
            functions: vec![weather()],
            tool_choice: ToolChoice::None,
            ..TurnRequest::default()
        };
        let offer = none.offer().unwrap();
        assert!(offer.callable.is_empty() && !offer.required);
        assert_eq!(none.text_conversation(&VcpProtocol::default(), &offer, None).unwrap().len(), 0);
    }
}
