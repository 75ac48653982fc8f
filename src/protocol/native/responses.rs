//! OpenAI Responses (`POST /v1/responses`).

use serde_json::{Value, json};

use super::calls::{NativeStreamParser, parse_calls};
use super::names::{NameRule, resolve_wire_name, wire_name};
use super::openai::description_of;
use super::{NativeOptions, schema};
use crate::model::{AssistantTurn, ContentBlock, Message, Role, ToolResultBlock};
use crate::protocol::{IncrementalParser, ParseOutcome, ToolCallingProtocol, ToolDeclarations};
use crate::tools::ToolCatalog;
use crate::{Invocation, ParsedToolRequest, ToolDefinition, ToolError, ToolExecutionResult};

/// OpenAI Responses tool calling (protocol id `openai_responses`).
///
/// Tools go out flat (`{"type": "function", "name", "parameters", "strict"}`); calls come
/// back as `function_call` output items (matched by `call_id`); each result goes back as
/// a `function_call_output` input item.
///
/// The wire format (stateless requests that carry reasoning back) is
/// [`Provider::OpenAiResponses`](crate::providers::Provider::OpenAiResponses).
///
/// ```
/// use tool_calling::ToolCallingProtocol;
/// use tool_calling::model::{AssistantTurn, ToolCall};
/// use tool_calling::protocol::native::OpenAiResponses;
/// let responses = OpenAiResponses::default();
/// let turn = AssistantTurn::new().with_tool_call(ToolCall::new("call_1", "calc_add", "{\"a\": 2}"));
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
