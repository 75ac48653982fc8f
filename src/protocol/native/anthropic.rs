//! Anthropic Messages (`POST /v1/messages`).

use serde_json::{Value, json};

use super::NativeOptions;
use super::calls::{NativeStreamParser, parse_calls};
use super::names::{NameRule, resolve_wire_name, wire_name};
use super::openai::description_of;
use crate::model::{AssistantTurn, ContentBlock, Message, Role, ToolResultBlock};
use crate::protocol::{IncrementalParser, ParseOutcome, ToolCallingProtocol, ToolDeclarations};
use crate::tools::ToolCatalog;
use crate::{Invocation, ParsedToolRequest, ToolDefinition, ToolError, ToolExecutionResult};

/// Anthropic Messages tool calling (protocol id `anthropic`).
///
/// Tools go out as `{"name", "description", "input_schema"}`; calls come back as
/// `tool_use` content blocks (arguments as an object), reasoning as `thinking` blocks with
/// a `signature` (or `redacted_thinking` with opaque `data`), which are sent back
/// unchanged on the next request; all the results of a turn go back in one user message
/// of `tool_result` blocks, `is_error` set on failures.
///
/// The wire format is [`Provider::Anthropic`](crate::providers::Provider::Anthropic).
///
/// ```
/// use tool_calling::ToolCallingProtocol;
/// use tool_calling::model::{AssistantTurn, Message, ToolCall};
/// use tool_calling::protocol::native::Anthropic;
/// use tool_calling::ToolExecutionResult;
/// let anthropic = Anthropic::default();
/// let turn = AssistantTurn::new()
///     .with_text("Adding.")
///     .with_tool_call(ToolCall::new("toolu_1", "calc_add", r#"{"a": 2, "b": 40}"#));
/// let parsed = anthropic.parse_turn(&turn);
/// assert_eq!(parsed.requests[0].request_id, "toolu_1");
/// assert_eq!(parsed.requests[0].args["b"], 40);
/// let results = [ToolExecutionResult::success("toolu_1", "calc_add", "42")];
/// let messages: Vec<Message> = anthropic.result_messages(&results);
/// assert_eq!(messages.len(), 1, "all the results of a turn go back in one message");
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
