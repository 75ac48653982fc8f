//! Google Gemini (`POST /v1beta/models/{model}:generateContent`, and
//! `:streamGenerateContent?alt=sse` for streaming).

use serde_json::{Map, Value, json};

use super::NativeOptions;
use super::calls::{NativeStreamParser, parse_calls};
use super::names::{NameRule, resolve_wire_name, wire_name};
use super::openai::description_of;
use crate::model::{AssistantTurn, ContentBlock, Message, Role, ToolResultBlock};
use crate::protocol::{IncrementalParser, ParseOutcome, ToolCallingProtocol, ToolDeclarations};
use crate::tools::ToolCatalog;
use crate::{Invocation, ParsedToolRequest, ToolDefinition, ToolError, ToolExecutionResult};

/// Gemini function calling (protocol id `gemini`).
///
/// Tools go out as `tools: [{"functionDeclarations": [...]}]` with their schemas rewritten
/// into Gemini's subset ([`schema::gemini`](super::schema::gemini)); calls come back as
/// `functionCall` parts (arguments as an object; an `id` when the API gives one, else one
/// is assigned); reasoning as `thought` parts; the turn's thought signatures are kept on
/// their parts and sent back unchanged. All the results of a turn go back in one user
/// turn of `functionResponse` parts (`{"output": …}`, or `{"error": …}` on failures),
/// with the call's `id` when the call had one.
///
/// The wire format is [`Provider::Gemini`](crate::providers::Provider::Gemini).
///
/// ```
/// use tool_calling::protocol::native::Gemini;
/// use tool_calling::{MethodDefinition, ToolCallingProtocol, ToolDefinition};
/// let tools = [ToolDefinition::new("files", "Files").with_method(MethodDefinition::new("list", "List."))];
/// let declarations = Gemini::default().tool_declarations(&tools);
/// let tools = declarations.as_native().unwrap();
/// assert_eq!(tools[0]["functionDeclarations"][0]["name"], "files_list");
/// assert!(tools[0]["functionDeclarations"][0].get("parameters").is_none(), "no parameters: none declared");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Gemini {
    options: NativeOptions,
}

impl Gemini {
    /// A protocol with `options`.
    pub fn new(options: NativeOptions) -> Self {
        Gemini { options }
    }
}

impl ToolCallingProtocol for Gemini {
    fn id(&self) -> &str {
        "gemini"
    }

    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        let declarations: Vec<Value> = tools
            .iter()
            .flat_map(|tool| {
                tool.methods.iter().map(move |method| {
                    let mut declaration = Map::new();
                    declaration.insert(
                        "name".into(),
                        json!(wire_name(&method.full_name(&tool.tool_id), NameRule::Gemini)),
                    );
                    declaration.insert("description".into(), json!(description_of(tool, method)));
                    let has_parameters = method
                        .parameters
                        .get("properties")
                        .and_then(Value::as_object)
                        .is_some_and(|p| !p.is_empty());
                    // Gemini refuses an empty object schema: a method without parameters
                    // declares none.
                    if has_parameters {
                        declaration.insert("parameters".into(), super::schema::gemini(&method.parameters));
                    }
                    Value::Object(declaration)
                })
            })
            .collect();
        if declarations.is_empty() {
            return ToolDeclarations::Native(json!([]));
        }
        ToolDeclarations::Native(json!([{"functionDeclarations": declarations}]))
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
        let method = resolve_wire_name(&request.tool_name, catalog, NameRule::Gemini)
            .unwrap_or_else(|| request.tool_name.clone());
        vec![Ok(Invocation::new(method, request.args.clone()))]
    }

    /// One user turn of `functionResponse` parts, one per call.
    fn result_messages(&self, results: &[ToolExecutionResult]) -> Vec<Message> {
        if results.is_empty() {
            return Vec::new();
        }
        let blocks =
            results.iter().map(|r| ContentBlock::ToolResult(ToolResultBlock::from_result(r))).collect();
        vec![Message::with_content(Role::Tool, blocks).with_tool_results(results.iter().cloned())]
    }
}
