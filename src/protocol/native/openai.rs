//! OpenAI Chat Completions (`POST /v1/chat/completions`), and every server that speaks
//! it: vLLM, llama.cpp's server, Ollama, DeepSeek, Groq, ….

use serde_json::{Map, Value, json};

use super::calls::{NativeStreamParser, parse_calls};
use super::names::{NameRule, resolve_wire_name, wire_name};
use super::{NativeOptions, schema};
use crate::model::{AssistantTurn, ContentBlock, Message, Role, ToolResultBlock};
use crate::protocol::{IncrementalParser, ParseOutcome, ToolCallingProtocol, ToolDeclarations};
use crate::tools::ToolCatalog;
use crate::{Invocation, ParsedToolRequest, ToolDefinition, ToolError, ToolExecutionResult};

/// OpenAI Chat Completions tool calling (protocol id `openai`).
///
/// Tools go out as `tools: [{"type": "function", "function": {…}}]`; calls come back in
/// `choices[0].message.tool_calls` (arguments as a JSON string), reasoning in
/// `reasoning_content` (DeepSeek and other compatible servers); each result goes back as
/// a `role: tool` message with its `tool_call_id`.
///
/// ```
/// use tool_calling::protocol::native::OpenAiChat;
/// use tool_calling::{MethodDefinition, ToolCallingProtocol, ToolDefinition};
///
/// let tools = [ToolDefinition::new("calc", "Calculator").with_method(MethodDefinition::new("add", "Add."))];
/// let declarations = OpenAiChat::default().tool_declarations(&tools);
/// let tools = declarations.as_native().unwrap();
/// assert_eq!(tools[0]["type"], "function");
/// assert_eq!(tools[0]["function"]["name"], "calc_add");
/// ```
#[derive(Debug, Clone, Default)]
pub struct OpenAiChat {
    options: NativeOptions,
}

impl OpenAiChat {
    /// A protocol with `options`.
    pub fn new(options: NativeOptions) -> Self {
        OpenAiChat { options }
    }

    /// The options.
    pub fn options(&self) -> &NativeOptions {
        &self.options
    }
}

/// The `description` a function gets: the method's, else its tool's.
pub(crate) fn description_of(tool: &ToolDefinition, method: &crate::MethodDefinition) -> String {
    if method.description.is_empty() { tool.description.clone() } else { method.description.clone() }
}

impl ToolCallingProtocol for OpenAiChat {
    fn id(&self) -> &str {
        "openai"
    }

    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        let functions: Vec<Value> = tools
            .iter()
            .flat_map(|tool| {
                tool.methods.iter().map(move |method| {
                    let full = method.full_name(&tool.tool_id);
                    let mut function = Map::new();
                    function.insert("name".into(), json!(wire_name(&full, NameRule::Strict)));
                    function.insert("description".into(), json!(description_of(tool, method)));
                    if self.options.strict {
                        function.insert("parameters".into(), schema::openai_strict(&method.parameters));
                        function.insert("strict".into(), json!(true));
                    } else {
                        function.insert("parameters".into(), method.parameters.clone());
                    }
                    json!({"type": "function", "function": function})
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

    /// One `tool` message per result, each with one result block for its call.
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
