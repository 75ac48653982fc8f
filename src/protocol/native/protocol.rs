//! The one native tool-calling protocol, and the few things that differ per provider:
//! the protocol id, the name rule, the shape of a declaration and how results are grouped
//! into messages.

use serde_json::{Map, Value, json};

use super::calls::{NativeStreamParser, parse_calls};
use super::names::{resolve_wire_name, wire_name};
use super::provider::Provider;
use super::{NativeOptions, schema};
use crate::model::{AssistantTurn, ContentBlock, Message, Role, ToolResultBlock};
use crate::protocol::{ParseOutcome, StreamParser, ToolCallingProtocol, ToolDeclarations, TurnState};
use crate::tools::MethodDefinition;
use crate::tools::ToolCatalog;
use crate::tools::ToolDefinition;
use crate::{Invocation, ToolError, ToolExecutionResult, ToolRequest};

/// Native tool calling: the JSON tool APIs of OpenAI (Chat Completions and Responses),
/// Anthropic and Gemini, as one protocol of the same trait as VCP.
///
/// Tools go out as the provider's `tools` value, requests are read from the tool calls
/// of an [`AssistantTurn`] (which a provider's wire format,
/// `tool_calling::providers::Provider`, reads from a response body or stream), and one
/// result per call goes back, matched by id. What differs per provider:
///
/// | constructor | id | a declaration | results |
/// |---|---|---|---|
/// | [`openai_chat`](Self::openai_chat) | `openai` | `{"type": "function", "function": {name, description, parameters[, strict]}}` | one `tool` message per call |
/// | [`openai_responses`](Self::openai_responses) | `openai_responses` | `{"type": "function", name, description, parameters, strict}` | one `function_call_output` per call |
/// | [`anthropic`](Self::anthropic) | `anthropic` | `{name, description, input_schema}` | one message of `tool_result` blocks |
/// | [`gemini`](Self::gemini) | `gemini` | `[{"functionDeclarations": [{name, description[, parameters]}]}]`, the schema in Gemini's subset | one message of `functionResponse` parts |
///
/// Names are written for the provider ([`wire_name`]: `calc.add` becomes `calc_add`,
/// except that Gemini keeps dots) and read back against the catalog
/// ([`resolve_wire_name`]). OpenAI Chat Completions also serves every server that speaks
/// it: vLLM, llama.cpp's server, Ollama, DeepSeek, Groq, ….
///
/// ```
/// use tool_calling::protocol::ToolCallingProtocol;
/// use tool_calling::model::{AssistantTurn, ToolCall};
/// use tool_calling::protocol::native::NativeProtocol;
/// use tool_calling::ToolExecutionResult;
/// use tool_calling::tools::MethodDefinition;
/// use tool_calling::tools::ToolDefinition;
///
/// let tools = [ToolDefinition::new("calc", "Calculator").with_method(MethodDefinition::new("add", "Add."))];
/// let openai = NativeProtocol::openai_chat();
/// let declared = openai.tool_declarations(&tools);
/// assert_eq!(declared.as_native().unwrap()[0]["function"]["name"], "calc_add");
///
/// let anthropic = NativeProtocol::anthropic();
/// let turn = AssistantTurn::new().with_tool_call(ToolCall::new("toolu_1", "calc_add", r#"{"a": 2, "b": 40}"#));
/// let parsed = anthropic.parse_turn(&turn);
/// assert_eq!(parsed.requests[0].request_id, "toolu_1");
/// assert_eq!(parsed.requests[0].args["b"], 40);
/// let results = [ToolExecutionResult::success("toolu_1", "calc_add", "42")];
/// assert_eq!(anthropic.result_messages(&results, &parsed.state).len(), 1, "one message for all results");
/// assert_eq!(openai.result_messages(&results, &parsed.state).len(), 1, "one message per result");
/// ```
#[derive(Debug, Clone)]
pub struct NativeProtocol {
    api: Provider,
    options: NativeOptions,
}

impl NativeProtocol {
    /// The native protocol of `provider`, with default options (what
    /// [`Provider::protocol`] returns).
    pub(crate) fn of(provider: Provider) -> Self {
        NativeProtocol { api: provider, options: NativeOptions::default() }
    }

    /// OpenAI Chat Completions (`POST /v1/chat/completions`), protocol id `openai`.
    pub fn openai_chat() -> Self {
        Self::of(Provider::OpenAiChat)
    }

    /// The OpenAI Responses API (`POST /v1/responses`), protocol id `openai_responses`.
    pub fn openai_responses() -> Self {
        Self::of(Provider::OpenAiResponses)
    }

    /// Anthropic Messages (`POST /v1/messages`), protocol id `anthropic`. Reasoning comes
    /// back as `thinking` blocks with a signature, which go back unchanged on the next
    /// request.
    pub fn anthropic() -> Self {
        Self::of(Provider::Anthropic)
    }

    /// Gemini (`models/{model}:generateContent`), protocol id `gemini`. Gemini may send
    /// a call without an id: one is assigned ([`NativeOptions::request_ids`]).
    pub fn gemini() -> Self {
        Self::of(Provider::Gemini)
    }

    /// The protocol for a built-in id (`openai`, `openai_responses`, `anthropic`,
    /// `gemini`), or `None`.
    ///
    /// ```
    /// use tool_calling::protocol::ToolCallingProtocol;
    /// use tool_calling::protocol::native::NativeProtocol;
    /// assert_eq!(NativeProtocol::from_id("gemini").unwrap().id(), "gemini");
    /// assert!(NativeProtocol::from_id("vcp").is_none());
    /// ```
    pub fn from_id(id: &str) -> Option<Self> {
        Provider::from_protocol_id(id).map(Self::of)
    }

    /// The ids of the native protocols, in the order the registry lists them.
    pub(crate) fn ids() -> [&'static str; 4] {
        Provider::ALL.map(Provider::protocol_id)
    }

    /// The protocol with `options`.
    ///
    /// ```
    /// use tool_calling::protocol::ToolCallingProtocol;
    /// use tool_calling::model::{AssistantTurn, ToolCall};
    /// use tool_calling::protocol::RequestIdStyle;
    /// use tool_calling::protocol::native::{NativeOptions, NativeProtocol};
    /// let options = NativeOptions::default().request_ids(RequestIdStyle::Sequential);
    /// let gemini = NativeProtocol::gemini().with_options(options);
    /// let turn = AssistantTurn::new().with_tool_call(ToolCall::new("", "calc_add", r#"{"a": 2}"#));
    /// assert_eq!(gemini.parse_turn(&turn).requests[0].request_id, "req_1", "the call had no id");
    /// ```
    #[must_use]
    pub fn with_options(mut self, options: NativeOptions) -> Self {
        self.options = options;
        self
    }

    /// The options.
    pub fn options(&self) -> &NativeOptions {
        &self.options
    }

    /// One declaration in the provider's shape.
    fn declaration(&self, tool: &ToolDefinition, method: &MethodDefinition) -> Value {
        let name = json!(wire_name(&method.full_name(&tool.tool_id), self.api.name_rule()));
        let description =
            json!(if method.description.is_empty() { &tool.description } else { &method.description });
        let strict = self.options.strict;
        let parameters =
            || if strict { schema::openai_strict(&method.parameters) } else { method.parameters.clone() };
        match self.api {
            Provider::OpenAiChat => {
                let mut function = Map::new();
                function.insert("name".into(), name);
                function.insert("description".into(), description);
                function.insert("parameters".into(), parameters());
                if strict {
                    function.insert("strict".into(), json!(true));
                }
                json!({"type": "function", "function": function})
            }
            Provider::OpenAiResponses => json!({
                "type": "function",
                "name": name,
                "description": description,
                "parameters": parameters(),
                "strict": strict,
            }),
            Provider::Anthropic => {
                json!({"name": name, "description": description, "input_schema": method.parameters})
            }
            Provider::Gemini => {
                let mut declaration = Map::new();
                declaration.insert("name".into(), name);
                declaration.insert("description".into(), description);
                // Gemini refuses an object schema without properties: a method without
                // parameters declares none.
                let has_parameters = method
                    .parameters
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|p| !p.is_empty());
                if has_parameters {
                    declaration.insert("parameters".into(), schema::gemini(&method.parameters));
                }
                Value::Object(declaration)
            }
        }
    }
}

impl ToolCallingProtocol for NativeProtocol {
    fn id(&self) -> &str {
        self.api.protocol_id()
    }

    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        let declared: Vec<Value> = tools
            .iter()
            .flat_map(|tool| tool.methods.iter().map(move |method| self.declaration(tool, method)))
            .collect();
        if self.api == Provider::Gemini && !declared.is_empty() {
            return ToolDeclarations::Native(json!([{"functionDeclarations": declared}]));
        }
        ToolDeclarations::Native(Value::Array(declared))
    }

    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
        parse_calls(turn, &self.options)
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + '_> {
        Box::new(NativeStreamParser::with_options(self.options))
    }

    fn resolve(
        &self,
        request: &ToolRequest,
        _turn: &TurnState,
        catalog: &ToolCatalog,
    ) -> Vec<Result<Invocation, ToolError>> {
        let method = resolve_wire_name(&request.tool_name, catalog, self.api.name_rule())
            .unwrap_or_else(|| request.tool_name.clone());
        vec![Ok(Invocation::new(method, request.args.clone()))]
    }

    /// OpenAI (both APIs): one message per result. Anthropic and Gemini: one message
    /// holding a result block per call, in call order.
    fn result_messages(&self, results: &[ToolExecutionResult], _turn: &TurnState) -> Vec<Message> {
        let block =
            |result: &ToolExecutionResult| ContentBlock::ToolResult(ToolResultBlock::from_result(result));
        match self.api {
            Provider::OpenAiChat | Provider::OpenAiResponses => results
                .iter()
                .map(|result| {
                    Message::with_content(Role::Tool, vec![block(result)]).with_tool_results([result.clone()])
                })
                .collect(),
            Provider::Anthropic | Provider::Gemini if results.is_empty() => Vec::new(),
            Provider::Anthropic | Provider::Gemini => vec![
                Message::with_content(Role::Tool, results.iter().map(block).collect())
                    .with_tool_results(results.iter().cloned()),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolDefinition> {
        let params = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]});
        vec![
            ToolDefinition::new("calc", "Calculator")
                .with_description("Calculator")
                .with_method(MethodDefinition::new("add", "").with_parameters(params))
                .with_method(MethodDefinition::new("pi", "The number pi.")),
        ]
    }

    #[test]
    fn each_api_declares_in_its_own_shape() {
        let declared =
            |p: NativeProtocol| p.tool_declarations(&tools()).as_native().cloned().unwrap_or_default();
        let openai = declared(NativeProtocol::openai_chat());
        assert_eq!(openai[0]["function"]["name"], "calc_add");
        assert_eq!(
            openai[0]["function"]["description"], "Calculator",
            "a method without a description has its tool's"
        );
        assert!(openai[0]["function"].get("strict").is_none());
        let strict =
            declared(NativeProtocol::openai_chat().with_options(NativeOptions::default().strict(true)));
        assert_eq!(strict[0]["function"]["strict"], true);
        assert_eq!(strict[0]["function"]["parameters"]["additionalProperties"], false);
        let responses = declared(NativeProtocol::openai_responses());
        assert_eq!(
            (responses[1]["name"].as_str(), responses[1]["strict"].as_bool()),
            (Some("calc_pi"), Some(false))
        );
        let anthropic = declared(NativeProtocol::anthropic());
        assert_eq!(anthropic[0]["input_schema"]["required"][0], "a");
        let gemini = declared(NativeProtocol::gemini());
        let functions = &gemini[0]["functionDeclarations"];
        assert_eq!(functions[0]["name"], "calc_add");
        let dotted =
            [ToolDefinition::new("files.v2", "Files").with_method(MethodDefinition::new("read", "Read."))];
        let name = |p: NativeProtocol| p.tool_declarations(&dotted).as_native().cloned().unwrap_or_default();
        assert_eq!(
            name(NativeProtocol::gemini())[0]["functionDeclarations"][0]["name"],
            "files.v2_read",
            "Gemini keeps dots"
        );
        let strict =
            name(NativeProtocol::anthropic())[0]["name"].as_str().map(str::to_owned).unwrap_or_default();
        assert!(strict.starts_with("files_v2_read_"), "{strict}");
        assert!(functions[1].get("parameters").is_none(), "no parameters, none declared");
        assert_eq!(NativeProtocol::gemini().tool_declarations(&[]).as_native(), Some(&json!([])));
    }

    #[test]
    fn results_are_grouped_per_api() {
        let results = [
            ToolExecutionResult::success("a", "calc.add", "1"),
            ToolExecutionResult::success("b", "calc.pi", "3"),
        ];
        let count = |p: NativeProtocol| p.result_messages(&results, &TurnState::default()).len();
        assert_eq!(count(NativeProtocol::openai_chat()), 2);
        assert_eq!(count(NativeProtocol::openai_responses()), 2);
        assert_eq!(count(NativeProtocol::anthropic()), 1);
        assert_eq!(count(NativeProtocol::gemini()), 1);
        assert!(NativeProtocol::anthropic().result_messages(&[], &TurnState::default()).is_empty());
    }

    #[test]
    fn a_name_no_tool_has_is_kept_for_the_executor_to_refuse() {
        let request = ToolRequest::new("r", "calc_add").with_arg("a", 1);
        let resolved =
            NativeProtocol::openai_chat().resolve(&request, &TurnState::default(), &ToolCatalog::new());
        assert!(
            matches!(resolved.as_slice(), [Ok(call)] if call.method == "calc_add" && call.args["a"] == 1)
        );
        for id in ["openai", "openai_responses", "anthropic", "gemini"] {
            assert_eq!(NativeProtocol::from_id(id).map(|p| p.id().to_owned()).as_deref(), Some(id));
        }
    }
}
