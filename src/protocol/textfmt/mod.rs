//! The text formats open-weight models write their tool calls in, as protocols of the
//! same trait as VCP.
//!
//! A model served without a native tool API (vLLM, llama.cpp, Ollama raw completions,
//! local runtimes) writes its calls as text, in its family's format. Each format here
//! reads a reply into requests and its normal text (one-shot, or while it streams in),
//! writes the tool-definition prompt the way its family's chat template renders tools,
//! and writes results the way the template renders tool output, so the engine runs full
//! rounds with it.
//!
//! | id | models | a call looks like |
//! | --- | --- | --- |
//! | `hermes` | Hermes 2 Pro, Qwen 2.5, Qwen 3 | `<tool_call>{"name": …, "arguments": {…}}</tool_call>` |
//! | `qwen3_coder_xml` | Qwen3-Coder, Qwen 3.5, MiMo, Step-3.5, Nemotron 3 | `<tool_call><function=NAME><parameter=K>V</parameter></function></tool_call>` |
//! | `mistral` | Mistral, Mixtral, Mistral Small, Devstral | `[TOOL_CALLS][{"name": …, "arguments": {…}}]`, `[TOOL_CALLS]NAME[ARGS]{…}` |
//! | `llama3_json` | Llama 3.1, 3.2, 3.3 (Llama 4 JSON) | `<\|python_tag\|>{"name": …, "parameters": {…}}` |
//! | `pythonic` | Llama 3.2 (1B, 3B), Llama 4 | `[get_weather(city="Paris")]` |
//! | `deepseek_v3` | DeepSeek V3, R1 | `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` + a fenced JSON block |
//! | `deepseek_v31` | DeepSeek V3.1, V3.2-Exp | `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>` |
//! | `kimi_k2` | Kimi K2 | `<\|tool_call_begin\|>functions.NAME:0<\|tool_call_argument_begin\|>{…}<\|tool_call_end\|>` |
//! | `glm45` | GLM-4.5, GLM-4.6 | `<tool_call>NAME\n<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>` |
//! | `glm47` | GLM-4.7, GLM-5 | as `glm45`, no line breaks needed |
//! | `minimax_m2` | MiniMax-M2 | `<minimax:tool_call><invoke name="NAME"><parameter name="K">V</parameter></invoke>…` |
//! | `cohere` | Command R7B, Command A | `<\|START_ACTION\|>[{"tool_name": …, "parameters": {…}}]<\|END_ACTION\|>` |
//! | `deepseek_v32` | DeepSeek V3.2 | `<｜DSML｜function_calls><｜DSML｜invoke name="NAME"><｜DSML｜parameter name="K" string="true">V</｜DSML｜parameter>…` |
//! | `step3` | StepFun Step-3 | `<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="NAME">…` |
//! | `kimi_k3` | Kimi K3 | `<\|open\|>call tool="NAME"<\|sep\|><\|open\|>argument key="K" type="string"<\|sep\|>V<\|close\|>argument<\|sep\|>…` |
//! | `harmony` | gpt-oss | `<\|channel\|>commentary to=functions.NAME <\|constrain\|>json<\|message\|>{…}<\|call\|>` |
//! | `seed_oss` | Seed-OSS | `<seed:tool_call><function=NAME><parameter=K>V</parameter></function></seed:tool_call>` |
//! | `granite` | Granite 3.0, 3.1 | `<\|tool_call\|>[{"name": …, "arguments": {…}}]` |
//! | `xlam` | xLAM 2 | `[{"name": …, "arguments": {…}}]` (bare, fenced, or after a marker) |
//! | `phi4_mini` | Phi-4-mini | `functools[{"name": …, "arguments": {…}}]` |
//! | `hunyuan` | Hunyuan A13B | `<tool_calls>[{"name": …, "arguments": {…}}]</tool_calls>` |
//! | `internlm` | InternLM 2, 2.5, Intern-S1 | `<\|action_start\|><\|plugin\|>{"name": …, "parameters": {…}}<\|action_end\|>` |
//! | `function_gemma` | FunctionGemma | `<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>` |
//! | `gemma4` | Gemma 4 | `<\|tool_call>call:NAME{k:<\|"\|>v<\|"\|>}<tool_call\|>` |
//! | `jamba` | Jamba 1.5–1.7 | as `hunyuan` |
//! | `olmo3` | OLMo 3 | `<function_calls>get_weather(city="Paris")</function_calls>` |
//! | `longcat` | LongCat-Flash | `<longcat_tool_call>{"name": …, "arguments": {…}}</longcat_tool_call>` |
//! | `ernie45` | ERNIE 4.5 | as `hermes` |
//! | `gigachat3` | GigaChat 3, 3.1 | `<\|function_call\|>{"name": …, "arguments": {…}}` |
//! | `minimax_m1` | MiniMax-M1 | `<tool_calls>\n{"name": …, "arguments": {…}}\n</tool_calls>` |
//! | `inkling` | Inkling | `<\|message_model\|>NAME<\|content_invoke_tool_json\|>{"name": …, "args": {…}}<\|end_message\|>` |
//! | `sarashina` | Sarashina | `<\|tool_calls\|>[{'name': …, 'arguments': {…}}]` |
//! | `deepseek_v4` | DeepSeek V4 | as `deepseek_v32`, in a `<｜DSML｜tool_calls>` block |
//! | `hunyuan_v3` | Hunyuan 3 (Hy3) | `<tool_calls><tool_call>NAME<tool_sep><arg_key>K</arg_key><arg_value>V</arg_value></tool_call></tool_calls>` |
//! | `lfm2` | LFM2, LFM2.5 | `<\|tool_call_start\|>[get_weather(city="Paris")]<\|tool_call_end\|>` |
//! | `minimax_m3` | MiniMax-M3 | `]<]minimax[>[<tool_call>]<]minimax[>[<invoke name="NAME">]<]minimax[>[<K>V]<]minimax[>[</K>…` |
//! | `apertus` | Apertus | `<\|tools_prefix\|>[{"NAME": {…}}]<\|tools_suffix\|>` |
//! | `minicpm5` | MiniCPM 4, 5 | `<function name="NAME"><param name="K">V</param></function>` |
//! | `poolside_v1` | poolside Laguna | as `glm45` |
//! | `gigachat35` | GigaChat 3.5 | as `deepseek_v4`, with `｜GCML｜` tokens |
//! | `deepseek_v41` | DeepSeek V4.1 | as `deepseek_v4`, tags spaced: `<｜DSML｜ calls>` |
//!
//! Each format's rules (markers, arguments, normal text, the choices where the serving
//! engines disagree) are on its module and, with the table of what decides each format for
//! [`AutoProtocol`], in the [formats chapter](crate::guide::formats).
//!
//! A format is one file of `formats/`, named by its id, holding its `FORMAT` (`format.rs`):
//! its markers for [`AutoProtocol`], the markup [`neutralize_tokens`] makes plain, its
//! reasoning markup, how its calls are found and read (the reading machine of
//! `driver.rs` runs them), and what writes its tool prompt, its results, a call and its
//! grammar. `registry.rs` lists the formats, one line each, and makes
//! [`TextFormat`] from that list; `auto`'s markers, the tokens [`neutralize_tokens`] covers
//! and [`TEXT_PROTOCOL_IDS`](crate::protocol::TEXT_PROTOCOL_IDS) follow from it. What several
//! formats share is in `readers/`; no format file imports another. The [formats chapter](crate::guide::formats) says
//! what adding a format takes.
//!
//! What every format does alike:
//! - Calls come out in order, each with its name, its arguments (a JSON object) and its
//!   bytes in the reply. A call whose markup opens and never closes, or whose JSON cannot
//!   be read, is an *incomplete* request with a problem that says why: reported, never
//!   run. Other calls of the same reply still count.
//! - Normal text is everything that is not call markup or reasoning, in order.
//!   Reasoning is hidden by the rule every text protocol shares
//!   ([`reasoning`](crate::protocol::reasoning): `<think>`/`<thinking>` in any case,
//!   nested, an unclosed tag hiding the rest): it is not normal text, a call drafted
//!   inside it is not a call, and a call that reasoning interrupts is incomplete (turn
//!   this off with [`TextFormatOptions::skip_reasoning`]).
//! - Arguments written as text (`qwen3_coder_xml`, `glm45`, `glm47`, `minimax_m2`, `step3`,
//!   `seed_oss`, `hunyuan_v3`, `poolside_v1`, DSML values without `string="true"`, …) are
//!   read without a schema as described in [`ToolRequest::text_args`]: JSON text
//!   becomes that value, `True`/`False`/`None` become `true`/`false`/`null`, anything else
//!   stays a string (MiniMax: only `null` is not a string). When the engine resolves the
//!   request, the tool's schema types them instead (a `string` parameter keeps `"3"`).
//! - Streaming gives the same requests, normal text and diagnostics as the one-shot parse
//!   for every chunking; each call is reported as soon as its closing token arrives, and
//!   special tokens split across chunks are held back, never leaked as text.
//!
//! [`AutoProtocol`] recognises which text protocol a reply uses (VCP or one of these),
//! and [`TextFormat::for_model`] maps a model name to its format.
//!
//! ```
//! use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
//!
//! let hermes = TextFormatProtocol::new(TextFormat::Hermes);
//! let reply = "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
//! let parsed = hermes.parse(reply);
//! assert_eq!(parsed.normal_text, "Let me check.\n");
//! assert_eq!(parsed.requests[0].tool_name, "get_weather");
//! assert_eq!(parsed.requests[0].args["city"], "Paris");
//! assert!(parsed.requests[0].complete);
//! ```

mod auto;
mod driver;
mod escape;
mod format;
mod formats;
mod grammar;
#[cfg(test)]
mod layout;
mod prompt;
mod readers;
mod registry;
#[cfg(test)]
pub(crate) mod test_support;

use std::ops::Range;

use serde_json::Value;

pub use auto::{AutoProtocol, Detected};
pub use escape::neutralize_tokens;

use super::events::sort_diagnostics;
use super::ids::IdAssigner;
use super::reasoning::holds_think_tag;
use super::{
    Diagnostic, DiagnosticKind, EventSink, ParseOutcome, RequestIdStyle, StreamEvent, StreamParser,
    ToolCallingProtocol, ToolDeclarations, TurnState,
};
use super::{floor_prefix, reply_too_long};
use crate::model::{AssistantTurn, Message, TurnDelta};
use crate::protocol::{FallbackProtocol, ModelProfiles};
use crate::request::{Invocation, RequestIdSource};
use crate::tools::ToolCatalog;
use crate::tools::ToolDefinition;
use crate::{Span, ToolError, ToolExecutionResult, ToolRequest};
use driver::{RawCall, Reader, RegionEnd, Sink};
pub(crate) use registry::IDS;
pub use registry::TextFormat;

impl TextFormat {
    /// The format with protocol id `id`.
    ///
    /// ```
    /// use tool_calling::protocol::textfmt::TextFormat;
    /// assert_eq!(TextFormat::from_id("kimi_k2"), Some(TextFormat::KimiK2));
    /// assert_eq!(TextFormat::from_id("vcp"), None);
    /// ```
    pub fn from_id(id: &str) -> Option<TextFormat> {
        TextFormat::ALL.into_iter().find(|f| f.id() == id)
    }

    /// The format a model family writes, from the model's name: the fallback protocol
    /// the built-in model table gives it ([`ModelProfiles::builtin`], which lists the
    /// families; case and separators do not matter), when that is a format rather than
    /// VCP. The table is the one the HTTP clients and [`ModelProfiles::lookup`] read;
    /// with profiles of your own (a config file, [`ModelProfiles::with_config_file`]),
    /// ask them instead: `TextFormat::from_fallback(profiles.lookup(model).fallback)`.
    ///
    /// ```
    /// use tool_calling::protocol::textfmt::TextFormat;
    /// assert_eq!(TextFormat::for_model("Qwen/Qwen2.5-7B-Instruct"), Some(TextFormat::Hermes));
    /// assert_eq!(TextFormat::for_model("Qwen3-Coder-30B-A3B"), Some(TextFormat::Qwen3CoderXml));
    /// assert_eq!(TextFormat::for_model("Qwen3.5-35B-A3B"), Some(TextFormat::Qwen3CoderXml));
    /// assert_eq!(TextFormat::for_model("meta-llama/Llama-3.1-8B-Instruct"), Some(TextFormat::Llama3Json));
    /// assert_eq!(TextFormat::for_model("Llama-4-Scout-17B"), Some(TextFormat::Pythonic));
    /// assert_eq!(TextFormat::for_model("deepseek-ai/DeepSeek-V3.1"), Some(TextFormat::DeepSeekV31));
    /// assert_eq!(TextFormat::for_model("ministral-8b"), Some(TextFormat::Mistral));
    /// assert_eq!(TextFormat::for_model("gpt-4o"), None);
    /// ```
    pub fn for_model(model: &str) -> Option<TextFormat> {
        TextFormat::from_fallback(ModelProfiles::builtin().lookup(model).fallback)
    }

    /// The format a [`FallbackProtocol`] names (`None` for VCP).
    ///
    /// ```
    /// use tool_calling::protocol::FallbackProtocol;
    /// use tool_calling::protocol::textfmt::TextFormat;
    /// assert_eq!(TextFormat::from_fallback(FallbackProtocol::from(TextFormat::KimiK2)), Some(TextFormat::KimiK2));
    /// assert_eq!(TextFormat::from_fallback(FallbackProtocol::VCP), None);
    /// ```
    pub fn from_fallback(fallback: FallbackProtocol) -> Option<TextFormat> {
        TextFormat::from_id(fallback.id())
    }
}

impl From<TextFormat> for FallbackProtocol {
    /// The fallback protocol of `format` (every format's id is one of
    /// [`TEXT_PROTOCOL_IDS`](crate::protocol::TEXT_PROTOCOL_IDS), which a test checks).
    fn from(format: TextFormat) -> Self {
        FallbackProtocol::from_id(format.id()).unwrap_or_default()
    }
}

display_by_name!(TextFormat, id);

/// Options of the text-format protocols.
///
/// ```
/// use tool_calling::protocol::textfmt::{TextFormat, TextFormatOptions, TextFormatProtocol};
/// let reply = r#"<THINK><tool_call>{"name": "clock", "arguments": {}}</tool_call></THINK>"#;
/// let hermes = TextFormatProtocol::new(TextFormat::Hermes);
/// assert!(hermes.parse(reply).requests.is_empty(), "a call drafted while reasoning is not a call");
/// assert_eq!(hermes.parse(reply).normal_text, "", "reasoning is not normal text");
/// let eager = hermes.with_options(TextFormatOptions::default().skip_reasoning(false));
/// assert_eq!(eager.parse(reply).requests.len(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TextFormatOptions {
    /// How requests are named (no format but Kimi's writes call ids).
    pub request_ids: RequestIdStyle,
    /// Hide reasoning by the rule every text protocol shares
    /// ([`reasoning`](crate::protocol::reasoning)): no call is read in it and it is not
    /// normal text (default on). Off, reasoning is read like any other text.
    pub skip_reasoning: bool,
    /// The reply starts inside reasoning: the prompt opened it (a chat template that
    /// ends in `<think>`, Kimi K3's thinking mode), so the reply's text is reasoning up
    /// to its first closing reasoning tag (`</think>`, or the format's own). The first
    /// reasoning markup decides: a closing tag says the reply began in reasoning (what
    /// stands before it is hidden); an opening tag, or markup that only an answer
    /// writes (Kimi K3's other channel markers), says it did not (what stands before
    /// it is read). Until one comes nothing is decided (a stream holds the text back);
    /// a reply that ends before any is reasoning never closed: all of it is hidden,
    /// with an [`UnclosedReasoning`](crate::protocol::DiagnosticKind::UnclosedReasoning)
    /// diagnostic. Default off; it only matters while reasoning is hidden
    /// ([`skip_reasoning`](Self::skip_reasoning)). The model table sets it for the
    /// families whose templates open reasoning
    /// ([`ModelCapabilities::starts_in_reasoning`](crate::protocol::ModelCapabilities::starts_in_reasoning)).
    ///
    /// ```
    /// use tool_calling::protocol::textfmt::{TextFormat, TextFormatOptions, TextFormatProtocol};
    /// let reply = "Maybe <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>?</think>Done.";
    /// let options = TextFormatOptions::default().starts_in_reasoning(true);
    /// let parsed = TextFormatProtocol::new(TextFormat::Hermes).with_options(options).parse(reply);
    /// assert_eq!(parsed.normal_text, "Done.");
    /// assert!(parsed.requests.is_empty(), "the call was drafted in reasoning");
    /// // A reply that opens reasoning of its own did not begin in it.
    /// let own = TextFormatProtocol::new(TextFormat::Hermes).with_options(options).parse("<think>x</think>Hi.");
    /// assert_eq!(own.normal_text, "Hi.");
    /// ```
    pub starts_in_reasoning: bool,
    /// Bytes of a reply that are read, 64 MiB by default (cut at a character boundary,
    /// with a [`LimitExceeded`](crate::protocol::DiagnosticKind::LimitExceeded) diagnostic). It
    /// also bounds what the streaming parser holds back.
    pub max_reply_bytes: usize,
}

impl Default for TextFormatOptions {
    fn default() -> Self {
        TextFormatOptions {
            request_ids: RequestIdStyle::default(),
            skip_reasoning: true,
            starts_in_reasoning: false,
            max_reply_bytes: 64 << 20,
        }
    }
}

impl TextFormatOptions {
    setters! {
        /// Sets [`request_ids`](Self::request_ids).
        pub fn request_ids(style: RequestIdStyle) { self.request_ids = style }

        /// Sets [`skip_reasoning`](Self::skip_reasoning).
        pub fn skip_reasoning(on: bool) { self.skip_reasoning = on }

        /// Sets [`starts_in_reasoning`](Self::starts_in_reasoning).
        pub fn starts_in_reasoning(on: bool) { self.starts_in_reasoning = on }

        /// Sets [`max_reply_bytes`](Self::max_reply_bytes).
        ///
        /// ```
        /// use tool_calling::protocol::textfmt::{TextFormat, TextFormatOptions, TextFormatProtocol};
        /// let reply = r#"<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>"#;
        /// let options = TextFormatOptions::default().max_reply_bytes(reply.len() / 2);
        /// let parsed = TextFormatProtocol::new(TextFormat::Hermes).with_options(options).parse(reply);
        /// assert_eq!(parsed.requests.len(), 1);
        /// assert!(parsed.diagnostics.iter().any(|d| d.kind.as_str() == "limit_exceeded"));
        /// ```
        pub fn max_reply_bytes(bytes: usize) { self.max_reply_bytes = bytes }
    }
}

/// One of the [`TextFormat`]s as a [`ToolCallingProtocol`].
///
/// ```
/// use tool_calling::protocol::ToolCallingProtocol;
/// use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
///
/// let glm = TextFormatProtocol::new(TextFormat::Glm47);
/// assert_eq!(glm.id(), "glm47");
/// let parsed = glm.parse("<tool_call>add<arg_key>a</arg_key><arg_value>2</arg_value></tool_call>");
/// assert_eq!(parsed.requests[0].args["a"], 2);
/// assert_eq!(parsed.requests[0].text_args["a"], "2");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TextFormatProtocol {
    format: TextFormat,
    options: TextFormatOptions,
}

impl TextFormatProtocol {
    /// The protocol of `format`, with default options.
    pub fn new(format: TextFormat) -> Self {
        TextFormatProtocol { format, options: TextFormatOptions::default() }
    }

    /// With `options`.
    #[must_use]
    pub fn with_options(mut self, options: TextFormatOptions) -> Self {
        self.options = options;
        self
    }

    /// The format.
    pub fn format(&self) -> TextFormat {
        self.format
    }

    /// Reads a whole reply: the requests, what was noticed (damaged or unclosed calls)
    /// and the normal text (everything that is not call markup).
    ///
    /// ```
    /// use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
    /// let reply = r#"Two calls.<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b""#;
    /// let parsed = TextFormatProtocol::new(TextFormat::Hermes).parse(reply);
    /// assert_eq!(parsed.normal_text, "Two calls.");
    /// assert!(parsed.requests[0].complete);
    /// assert!(!parsed.requests[1].complete, "the second call was never closed");
    /// assert!(!parsed.diagnostics.is_empty());
    /// ```
    pub fn parse(&self, text: &str) -> ParseOutcome {
        let mut sink = Collect::new(self.options.request_ids);
        let max = self.options.max_reply_bytes;
        let read = floor_prefix(text, max);
        if read.len() < text.len() {
            sink.reply.diagnostics.push(reply_too_long(read.len(), text.len(), max));
        }
        let mut reader = Reader::new(self.format.format(), &self.options);
        reader.run(self.format.format().reading, read, 0, 0, true, &mut sink);
        sink.finish()
    }

    /// A parser for a reply that streams in.
    pub fn stream_parser(&self) -> TextFormatStreamParser {
        TextFormatStreamParser::new(self.format, self.options)
    }
}

impl ToolCallingProtocol for TextFormatProtocol {
    fn id(&self) -> &str {
        self.format.id()
    }

    /// A call of `name` with `args`, written the way the format's grammar admits it
    /// (the markup its prompt teaches; JSON as `serde_json` writes it, with `<` in
    /// strings written `\u003c`). `None` when an argument holds text the format cannot
    /// carry: Qwen3-Coder's and GLM's text values have no escape, so a value holding
    /// their closing tags (`</parameter>`, `</arg_value>`, `</tool_call>`, …) cannot be
    /// written; nor, while reasoning is hidden
    /// ([`skip_reasoning`](TextFormatOptions::skip_reasoning)), can a text value holding
    /// a `<think>` or `</think>` tag, or the format's own reasoning markup, which the
    /// reader cuts out wherever it stands.
    ///
    /// ```
    /// use tool_calling::protocol::ToolCallingProtocol;
    /// use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
    /// let hermes = TextFormatProtocol::new(TextFormat::Hermes);
    /// let args = serde_json::json!({"city": "Paris"});
    /// let text = hermes.write_call("get_weather", args.as_object().unwrap()).unwrap();
    /// assert_eq!(text, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>");
    /// assert_eq!(hermes.parse(&text).requests[0].args["city"], "Paris");
    /// ```
    fn write_call(&self, name: &str, args: &serde_json::Map<String, Value>) -> Option<String> {
        let text = self.format.format().writing.write_call(name, args)?;
        // Reasoning markup in a call's text (a value's, or a key MiniMax-M3 writes as an
        // element) would be cut out by the reader while reasoning is hidden.
        let own = self.format.format().reasoning;
        let reasoning = self.options.skip_reasoning
            && (holds_think_tag(&text)
                || own.is_some_and(|m| m.hidden_tokens().any(|tag| text.contains(tag))));
        (!reasoning).then_some(text)
    }

    fn tool_declarations(&self, tools: &[ToolDefinition]) -> ToolDeclarations {
        if tools.iter().all(|t| t.methods.is_empty()) {
            return ToolDeclarations::Prompt(String::new());
        }
        ToolDeclarations::Prompt(self.format.format().writing.prompt(tools))
    }

    fn parse_turn(&self, turn: &AssistantTurn) -> ParseOutcome {
        self.parse(&turn.text())
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + '_> {
        Box::new(TextFormatProtocol::stream_parser(self))
    }

    /// The format's call markup as its prompt teaches it, written as
    /// [`write_call`](TextFormatProtocol::write_call) writes a call.
    fn grammar(
        &self,
        tools: &[ToolDefinition],
        constraint: &crate::grammar::Constraint,
    ) -> Result<crate::grammar::Grammar, crate::grammar::GrammarError> {
        grammar::grammar(self.format, &self.options, tools, constraint)
    }

    /// The call the request names, its text arguments typed by the method's schema.
    fn resolve(
        &self,
        request: &ToolRequest,
        _turn: &TurnState,
        catalog: &ToolCatalog,
    ) -> Vec<Result<Invocation, ToolError>> {
        vec![Ok(typed_invocation(request, catalog))]
    }

    fn result_messages(&self, results: &[ToolExecutionResult], _turn: &TurnState) -> Vec<Message> {
        prompt::result_messages(self.format, results)
    }
}

/// The call `request` names, its text arguments typed by the method's schema.
pub(crate) fn typed_invocation(request: &ToolRequest, catalog: &ToolCatalog) -> Invocation {
    let mut invocation = Invocation::exact(request);
    if request.text_args.is_empty() {
        return invocation;
    }
    let Some((_, method)) = catalog.method(&request.tool_name) else { return invocation };
    let Some(properties) = method.parameters.get("properties").and_then(Value::as_object) else {
        return invocation;
    };
    for (key, text) in &request.text_args {
        let typed = properties
            .get(key)
            .and_then(|schema| readers::values::by_schema(text, schema, &method.parameters));
        if let Some(typed) = typed {
            invocation.args.insert(key.clone(), typed);
        }
    }
    invocation
}

/// A request from a call read in the region at `base`.
fn to_request(
    call: RawCall,
    base: usize,
    end: RegionEnd,
    ids: &mut IdAssigner,
    diagnostics: &mut Vec<Diagnostic>,
) -> ToolRequest {
    let span = Span::new(base + call.span.start, base + call.span.end);
    let (id, source) = match call.id {
        Some(id) if !id.is_empty() => (id, RequestIdSource::Model),
        _ => (String::new(), RequestIdSource::Assigned),
    };
    let mut request = ToolRequest::new(id, call.name).with_id_source(source);
    ids.assign(&mut request);
    request.args = call.args;
    request.text_args = call.text_args;
    request.span = span;
    let unclosed = match end {
        RegionEnd::Closed => None,
        RegionEnd::ReplyEnded => Some("the reply ended before this call was closed"),
        RegionEnd::ReasoningBegan => {
            Some("reasoning began before this call was closed (calls belong outside reasoning)")
        }
    };
    if let Some(problem) = unclosed {
        diagnostics.push(Diagnostic::new(DiagnosticKind::MissingEndMarker, problem, span));
        request = request.with_problem(problem);
    }
    for problem in call.problems {
        diagnostics.push(Diagnostic::new(DiagnosticKind::InvalidPayload, problem.clone(), span));
        request = request.with_problem(problem);
    }
    if request.tool_name.is_empty() && request.complete {
        let problem = "the call names no function: name the function to call";
        diagnostics.push(Diagnostic::new(DiagnosticKind::MissingToolName, problem, span));
        request = request.with_problem(problem);
    }
    request
}

/// The one-shot sink: requests, diagnostics and normal text.
struct Collect {
    ids: IdAssigner,
    reply: ParseOutcome,
}

impl Collect {
    fn new(style: RequestIdStyle) -> Self {
        Collect { ids: IdAssigner::new(style), reply: ParseOutcome::default() }
    }

    fn finish(mut self) -> ParseOutcome {
        sort_diagnostics(&mut self.reply.diagnostics);
        self.reply
    }
}

impl Sink for Collect {
    fn prose(&mut self, text: &str, _range: Range<usize>) {
        self.reply.normal_text.push_str(text);
    }

    fn region_started(&mut self, _at: usize) {}

    fn diagnostic(&mut self, diagnostic: Diagnostic) {
        self.reply.diagnostics.push(diagnostic);
    }

    fn region(&mut self, text: &str, range: Range<usize>, calls: &mut Vec<RawCall>, end: RegionEnd) {
        if calls.is_empty() {
            self.reply.normal_text.push_str(text);
            return;
        }
        for call in calls.drain(..) {
            let request = to_request(call, range.start, end, &mut self.ids, &mut self.reply.diagnostics);
            self.reply.requests.push(request);
        }
    }
}

/// Reads a reply in a [`TextFormat`] as it streams in: normal text as soon as it is
/// known not to be markup, each request when its closing token arrives.
///
/// ```
/// use tool_calling::protocol::textfmt::{TextFormat, TextFormatProtocol};
/// use tool_calling::protocol::{StreamParser, StreamEvent};
///
/// let mut parser = TextFormatProtocol::new(TextFormat::KimiK2).stream_parser();
/// let mut events = Vec::new();
/// for chunk in ["Checking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0",
///               "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>", "<|tool_calls_section_end|>"] {
///     parser.push_text(chunk, &mut events);
/// }
/// parser.finish(&mut events);
/// let request = events.iter().find_map(|e| match e {
///     StreamEvent::RequestCompleted(r) => Some(r),
///     _ => None,
/// });
/// assert_eq!(request.unwrap().request_id, "functions.get_weather:0");
/// ```
#[derive(Debug)]
pub struct TextFormatStreamParser {
    format: TextFormat,
    reader: Reader,
    /// Text not yet decided (and what is kept before it until the next compaction).
    buffer: String,
    /// Offset of `buffer[0]` in the reply.
    base: usize,
    /// Where the undecided text begins in `buffer`.
    pos: usize,
    ids: IdAssigner,
    finished: bool,
    /// [`TextFormatOptions::max_reply_bytes`].
    max_reply_bytes: usize,
    /// Bytes pushed past the limit; `Some` once it is reached.
    unread: Option<usize>,
    /// The byte all of the format's markup begins with, when it has one
    /// ([`Reading::markup_lead`]): a push without it (nor `<` while reasoning is hidden)
    /// after decided prose is prose.
    lead: Option<u8>,
    /// The byte every end of a call region begins with, when the format has one
    /// ([`Reading::region_end_lead`]): inside a region, a push without it (nor `<`) is
    /// kept in the buffer without running the reader.
    region_end: Option<u8>,
    /// Whether reasoning is hidden (its tags begin with `<`).
    hide_reasoning: bool,
}

impl TextFormatStreamParser {
    fn new(format: TextFormat, options: TextFormatOptions) -> Self {
        TextFormatStreamParser {
            lead: format.format().reading.markup_lead(),
            region_end: format.format().reading.region_end_lead(),
            hide_reasoning: options.skip_reasoning,
            format,
            reader: Reader::new(format.format(), &options),
            buffer: String::new(),
            base: 0,
            pos: 0,
            ids: IdAssigner::new(options.request_ids),
            finished: false,
            max_reply_bytes: options.max_reply_bytes,
            unread: None,
        }
    }

    /// The format read.
    pub fn format(&self) -> TextFormat {
        self.format
    }

    /// Bytes held back, undecided.
    pub fn buffered_len(&self) -> usize {
        self.buffer.len() - self.pos
    }

    /// Whether `text`, pushed now, is prose as it stands: the format promises where its
    /// markup begins, `text` holds no such byte (nor `<`, while reasoning is hidden),
    /// and everything before it is decided prose. The common push of a model writing
    /// prose, read without the searches.
    #[inline]
    fn reads_as_prose(&self, text: &str) -> bool {
        let Some(lead) = self.lead else { return false };
        self.buffer.is_empty() && self.free_of(lead, text.as_bytes()) && self.reader.reads_as_prose(self.base)
    }

    /// Whether `text`, pushed now, falls inside a call region and cannot end it (see
    /// [`Reading::region_end_lead`]).
    #[inline]
    fn waits_in_region(&self, text: &str) -> bool {
        let Some(lead) = self.region_end else { return false };
        self.free_of(lead, text.as_bytes()) && self.reader.waits_in_region(self.base + self.buffer.len())
    }

    /// Whether `bytes` holds neither `lead` nor, while reasoning is hidden, `<`.
    #[inline]
    fn free_of(&self, lead: u8, bytes: &[u8]) -> bool {
        if self.hide_reasoning && lead != b'<' {
            memchr::memchr2(lead, b'<', bytes).is_none()
        } else {
            memchr::memchr(lead, bytes).is_none()
        }
    }

    fn run(&mut self, at_end: bool, events: &mut dyn EventSink) {
        let mut sink = Events { events, ids: &mut self.ids };
        self.pos = self.reader.run(
            self.format.format().reading,
            &self.buffer,
            self.base,
            self.pos,
            at_end,
            &mut sink,
        );
        // Drop decided text once it is most of the buffer: amortised linear.
        if self.pos > 0 && self.pos >= self.buffer.len() / 2 {
            self.buffer.drain(..self.pos);
            self.base += self.pos;
            self.reader.shift(self.pos);
            self.pos = 0;
        }
    }
}

impl StreamParser for TextFormatStreamParser {
    fn push(&mut self, delta: &TurnDelta, events: &mut dyn EventSink) {
        if let TurnDelta::Text(text) = delta {
            self.push_text(text, events);
        }
    }

    fn push_text(&mut self, text: &str, events: &mut dyn EventSink) {
        if self.finished || text.is_empty() {
            return;
        }
        // Past the reply limit nothing more is read: cut where the one-shot parse cuts.
        let room = self.max_reply_bytes.saturating_sub(self.base + self.buffer.len());
        let read = if self.unread.is_some() { "" } else { floor_prefix(text, room) };
        if read.len() < text.len() {
            *self.unread.get_or_insert(0) += text.len() - read.len();
        }
        if read.is_empty() {
            return;
        }
        if self.reads_as_prose(read) {
            let start = self.base;
            self.base += read.len();
            self.reader.pass_prose(read, self.base);
            events.text(read, Span::new(start, self.base));
            return;
        }
        let waits = self.waits_in_region(read);
        self.buffer.push_str(read);
        if waits {
            // Inside a call region, text that cannot end it decides nothing: it is read
            // with the push that can.
            self.reader.pass_visible(self.base + self.buffer.len());
            return;
        }
        self.run(false, events);
    }

    fn finish(&mut self, events: &mut dyn EventSink) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.run(true, events);
        if let Some(unread) = self.unread {
            let read = self.base + self.buffer.len();
            events.event(StreamEvent::Diagnostic(reply_too_long(read, read + unread, self.max_reply_bytes)));
        }
        self.buffer = String::new();
    }
}

/// The streaming sink: events.
struct Events<'a> {
    events: &'a mut dyn EventSink,
    ids: &'a mut IdAssigner,
}

impl Sink for Events<'_> {
    fn prose(&mut self, text: &str, range: Range<usize>) {
        self.events.text(text, Span::new(range.start, range.end));
    }

    fn region_started(&mut self, at: usize) {
        self.events.event(StreamEvent::RequestStarted { offset: at });
    }

    fn diagnostic(&mut self, diagnostic: Diagnostic) {
        self.events.event(StreamEvent::Diagnostic(diagnostic));
    }

    fn region(&mut self, text: &str, range: Range<usize>, calls: &mut Vec<RawCall>, end: RegionEnd) {
        let span = Span::new(range.start, range.end);
        if calls.is_empty() {
            self.events.event(StreamEvent::BlockDiscarded { span });
            self.events.text(text, span);
            return;
        }
        for (i, call) in calls.drain(..).enumerate() {
            if i > 0 {
                self.events.event(StreamEvent::RequestStarted { offset: range.start + call.span.start });
            }
            let mut diagnostics = Vec::new();
            let request = to_request(call, range.start, end, self.ids, &mut diagnostics);
            diagnostics.into_iter().for_each(|d| self.events.event(StreamEvent::Diagnostic(d)));
            self.events.event(StreamEvent::RequestCompleted(request));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TEXT_PROTOCOL_IDS;

    #[test]
    fn the_model_layer_knows_every_format_by_its_id() {
        let ids: Vec<&str> = std::iter::once("vcp").chain(TextFormat::ALL.map(TextFormat::id)).collect();
        assert_eq!(ids, TEXT_PROTOCOL_IDS, "model::TEXT_PROTOCOL_IDS lists vcp and every format, in order");
        for format in TextFormat::ALL {
            assert_eq!(TextFormat::from_fallback(FallbackProtocol::from(format)), Some(format));
        }
    }

    #[test]
    fn every_reasoning_token_begins_with_lt_and_is_neutralized() {
        // The streaming fast paths read text without `<` as holding no reasoning markup,
        // and tool output must not open or close a model's reasoning.
        for format in TextFormat::ALL {
            let Some(markup) = format.format().reasoning else { continue };
            assert!(markup.tokens().is_some(), "{format}");
            for token in markup.all() {
                assert!(token.starts_with('<'), "{format}: {token:?}");
                assert_ne!(neutralize_tokens(token), token, "{format}: {token:?} in tool output");
            }
        }
    }

    #[test]
    fn the_format_of_a_model_is_the_fallback_of_its_profile() {
        let profiles = ModelProfiles::builtin();
        for pattern in ModelProfiles::builtin_patterns() {
            let model = pattern.replace('*', "");
            let fallback = profiles.lookup(&model).fallback;
            assert_eq!(
                TextFormat::for_model(&model).map_or("vcp", TextFormat::id),
                fallback.id(),
                "{pattern}"
            );
        }
        // Where the two tables once disagreed.
        assert_eq!(TextFormat::for_model("qwen3.5-27b"), Some(TextFormat::Qwen3CoderXml));
        assert_eq!(profiles.lookup("qwen3.5-27b").fallback.id(), "qwen3_coder_xml");
        assert_eq!(TextFormat::for_model("ministral-8b-instruct"), Some(TextFormat::Mistral));
        assert_eq!(profiles.lookup("ministral-8b-instruct").fallback.id(), "mistral");
    }
}
