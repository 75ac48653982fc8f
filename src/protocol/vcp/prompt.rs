//! The definitions prompt: how VCP tells a model which tools exist.

use serde_json::Value;

use super::format::{neutralize_markers, write_block, write_field};
use crate::tools::MethodDefinition;
use crate::tools::ParameterInfo;
use crate::tools::ToolDefinition;

pub use crate::Language;

/// Everything VCP writes for the model to read: the words of the definitions prompt,
/// and the notes that tell the model why a request of its was not run (a damaged block,
/// a tool name that matches nothing). Replace any of them to change what the model
/// reads; the block syntax itself is fixed by the protocol.
///
/// The notes are templates with blanks in braces; each field says which blanks it may
/// use. Names in `{suggestions}` and `{available}` come quoted in backticks and joined
/// with [`list_separator`](Self::list_separator) and [`list_or`](Self::list_or).
///
/// ```
/// use tool_calling::protocol::vcp::{Language, VcpProtocol, VcpTemplates};
/// let mut templates = VcpTemplates::for_language(Language::Zh);
/// templates.preamble = "你可以调用以下工具。".to_string();
/// let vcp = VcpProtocol::default().with_templates(templates);
/// assert_eq!(vcp.templates().required, "必填");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VcpTemplates {
    /// Teaches the request syntax; placed before the tools.
    pub preamble: String,
    /// Introduces each tool: `{heading}{tool name} ({tool id})`.
    pub tool_heading: String,
    /// Placed between tools.
    pub tool_separator: String,
    /// Introduces each method's example request.
    pub example_label: String,
    /// Marks required parameters.
    pub required: String,
    /// Marks optional parameters.
    pub optional: String,
    /// Introduces a parameter's default.
    pub default: String,
    /// Introduces a parameter's allowed values.
    pub one_of: String,

    /// A value that was never closed, so its request is not run. Blanks: `{key}`, and
    /// `{closer}`, the marker that would have closed it.
    pub unclosed_value: String,
    /// A block with no `tool_name`, so it is not run.
    pub missing_tool_name: String,
    /// A block with more fields than [`VcpLimits::max_fields`](super::VcpLimits::max_fields).
    /// Blank: `{limit}`.
    pub too_many_fields: String,
    /// A value longer than [`VcpLimits::max_value_bytes`](super::VcpLimits::max_value_bytes).
    /// Blanks: `{key}`, `{bytes}`, `{limit}`.
    pub value_too_long: String,
    /// Routing: a blank `tool_name`.
    pub route_no_tool_name: String,
    /// Routing: `tool_name` matches nothing. Blank: `{name}`.
    pub route_no_match: String,
    /// Routing: follows `route_no_match` when nothing registered is close.
    pub route_no_similar: String,
    /// Routing: the closest names. Blank: `{suggestions}`.
    pub route_did_you_mean: String,
    /// Routing: a tool has no method by the `command` given. Blanks: `{tool}`,
    /// `{command}`, and `{position}` (empty, or `route_batch_position` in a batch).
    pub route_no_such_command: String,
    /// Routing: which batch key named the command. Blank: `{key}` (`command2`, …).
    pub route_batch_position: String,
    /// Routing: lists a tool's methods. Blanks: `{tool}`, `{available}` (every name,
    /// joined with `list_separator` only).
    pub route_tool_methods: String,
    /// Routing: a tool the model may call none of. Blank: `{tool}`.
    pub route_no_callable: String,
    /// Routing: a tool with several methods and no `command`. Blanks: `{tool}`,
    /// `{available}`.
    pub route_name_a_command: String,
    /// Joins the sentences of one routing note.
    pub sentence_separator: String,
    /// Between the names of a list but the last two.
    pub list_separator: String,
    /// Between the last two names of a list.
    pub list_or: String,
}

const EN_PREAMBLE: &str = "\
You can call tools. To call one, write a request block in your reply exactly like this:

<<<[TOOL_REQUEST]>>>
tool_name:「始」tool id「末」,
command:「始」method「末」,
parameter:「始」value「末」
<<<[END_TOOL_REQUEST]>>>

Rules:
- Every field is key:「始」value「末」; separate fields with commas. A value may span several lines.
- If a value contains 「末」 or a request marker, write it as key:「始ESCAPE」value「末ESCAPE」.
- One reply may hold several request blocks; give each a request_id:「始」…「末」 to tell them apart.
- Results come back in <<<[TOOL_RESULT]>>> blocks. Wait for them; never invent a result.

The tools you can call:";

const ZH_PREAMBLE: &str = "\
你可以调用工具。调用时，请在回复中严格按以下格式写出请求块：

<<<[TOOL_REQUEST]>>>
tool_name:「始」工具 ID「末」,
command:「始」方法名「末」,
参数名:「始」参数值「末」
<<<[END_TOOL_REQUEST]>>>

规则：
- 每个字段写作 key:「始」值「末」，字段之间用逗号分隔；值可以跨多行。
- 如果值中含有「末」或请求标记，请写作 key:「始ESCAPE」值「末ESCAPE」。
- 一次回复可以包含多个请求块；可用 request_id:「始」…「末」区分它们。
- 结果会以 <<<[TOOL_RESULT]>>> 块返回。请等待结果，切勿自行编造。

可调用的工具：";

impl Default for VcpTemplates {
    fn default() -> Self {
        Self::for_language(Language::En)
    }
}

impl VcpTemplates {
    /// The built-in English templates, made once and shared by every protocol and
    /// parser that uses them.
    pub(crate) fn english() -> &'static std::sync::Arc<VcpTemplates> {
        static ENGLISH: std::sync::LazyLock<std::sync::Arc<VcpTemplates>> =
            std::sync::LazyLock::new(|| std::sync::Arc::new(VcpTemplates::for_language(Language::En)));
        &ENGLISH
    }

    /// `names` quoted and joined as alternatives (`a`, `b` or `c`).
    pub(crate) fn list(&self, names: &[String]) -> String {
        crate::language::quoted_list(names, &self.list_separator, &self.list_or)
    }

    /// `names` quoted and joined as an inventory (`a`, `b`, `c`).
    pub(crate) fn list_all(&self, names: &[String]) -> String {
        crate::language::quoted_list(names, &self.list_separator, &self.list_separator)
    }

    /// The built-in templates of `language`.
    pub fn for_language(language: Language) -> Self {
        let words = |s: &str| s.to_string();
        match language {
            Language::En => VcpTemplates {
                preamble: words(EN_PREAMBLE),
                tool_heading: words("Tool: "),
                tool_separator: words("---"),
                example_label: words("Example:"),
                required: words("required"),
                optional: words("optional"),
                default: words("default: "),
                one_of: words("one of: "),
                unclosed_value: words("the value of `{key}` is not closed: end it with {closer}"),
                missing_tool_name: words("the request has no tool_name: add tool_name:「始」…「末」"),
                too_many_fields: words(
                    "the request has more than {limit} fields: split it into smaller requests",
                ),
                value_too_long: words(
                    "the value of `{key}` is {bytes} bytes, more than the limit of {limit}",
                ),
                route_no_tool_name: words(
                    "The request has no tool_name: add a `tool_name` field naming the tool to call, \
                     exactly as it is listed.",
                ),
                route_no_match: words("No tool method matches `{name}`."),
                route_no_similar: words(
                    "No registered tool has a similar name: use a tool name exactly as it is listed.",
                ),
                route_did_you_mean: words("Did you mean {suggestions}?"),
                route_no_such_command: words("Tool `{tool}` has no method `{command}`{position}."),
                route_batch_position: words(" (in `{key}`)"),
                route_tool_methods: words("Tool `{tool}` has: {available}."),
                route_no_callable: words("Tool `{tool}` has no methods a model may call."),
                route_name_a_command: words(
                    "Tool `{tool}` has several methods: add a `command` field naming one of {available}.",
                ),
                sentence_separator: words(" "),
                list_separator: words(", "),
                list_or: words(" or "),
            },
            Language::Zh => VcpTemplates {
                preamble: words(ZH_PREAMBLE),
                tool_heading: words("工具："),
                tool_separator: words("---"),
                example_label: words("示例："),
                required: words("必填"),
                optional: words("可选"),
                default: words("默认："),
                one_of: words("可选值："),
                unclosed_value: words("`{key}` 的值没有闭合：请用 {closer} 结束它"),
                missing_tool_name: words("请求没有 tool_name：请加上 tool_name:「始」…「末」"),
                too_many_fields: words("请求的字段超过 {limit} 个：请拆成几个较小的请求"),
                value_too_long: words("`{key}` 的值有 {bytes} 字节，超过了 {limit} 字节的上限"),
                route_no_tool_name: words(
                    "请求没有 tool_name：请加上 `tool_name` 字段，写出要调用的工具，与列表中完全一致。",
                ),
                route_no_match: words("没有与 `{name}` 匹配的工具方法。"),
                route_no_similar: words("也没有名称相近的已注册工具：请使用与列表中完全一致的工具名。"),
                route_did_you_mean: words("你是想调用 {suggestions} 吗？"),
                route_no_such_command: words("工具 `{tool}` 没有方法 `{command}`{position}。"),
                route_batch_position: words("（见 `{key}`）"),
                route_tool_methods: words("工具 `{tool}` 的方法有：{available}。"),
                route_no_callable: words("工具 `{tool}` 没有模型可以调用的方法。"),
                route_name_a_command: words(
                    "工具 `{tool}` 有多个方法：请加上 `command` 字段，写出其中之一：{available}。",
                ),
                sentence_separator: words(""),
                list_separator: words("、"),
                list_or: words(" 或 "),
            },
        }
    }
}

/// A JSON value as VCP text: strings bare, everything else as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `(type, required, default: x, one of: a, b) description`
fn describe(param: &ParameterInfo<'_>, t: &VcpTemplates) -> String {
    let mut head =
        vec![param.type_name(), if param.required { t.required.clone() } else { t.optional.clone() }];
    if let Some(default) = param.default() {
        // As JSON, so that `" "` or `""` stay visible.
        head.push(format!("{}{}", t.default, default));
    }
    for (keyword, label) in [
        ("minimum", "minimum"),
        ("maximum", "maximum"),
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("minItems", "min items"),
        ("maxItems", "max items"),
        ("pattern", "pattern"),
    ] {
        if let Some(value) = param.schema.get(keyword) {
            head.push(format!("{label}: {}", plain(value)));
        }
    }
    if let Some(values) = param.allowed_values() {
        head.push(format!("{}{}", t.one_of, values.iter().map(plain).collect::<Vec<_>>().join(", ")));
    }
    let mut text = format!("({})", head.join(", "));
    if let Some(description) = param.description().filter(|d| !d.is_empty()) {
        text.push(' ');
        text.push_str(description);
    }
    text
}

/// A sample value for a parameter with no example: its default, first allowed value,
/// first schema example, or a value of its type: a number at its minimum (else 1), a
/// string named after the parameter (`city` for `city`: a placeholder such as `text`
/// is what a small model copies into its own call).
fn sample(param: &ParameterInfo<'_>) -> String {
    if let Some(v) = param.default() {
        return plain(v);
    }
    if let Some(v) = param.allowed_values().and_then(|v| v.first()) {
        return plain(v);
    }
    if let Some(v) = param.schema.get("examples").and_then(Value::as_array).and_then(|v| v.first()) {
        return plain(v);
    }
    match param.schema.get("type").and_then(Value::as_str) {
        Some("integer" | "number") => param.schema.get("minimum").map_or_else(|| "1".to_string(), plain),
        Some("boolean") => "true".to_string(),
        Some("array") => "[]".to_string(),
        Some("object") => "{}".to_string(),
        _ => param.name.to_string(),
    }
}

/// One example request: the method's first declared example, else its required
/// parameters with sample values.
fn example(tool_id: &str, method: &MethodDefinition) -> Option<String> {
    // A method named `""` is the tool itself: its requests name no command.
    let command = super::routing::command_of(&method.name, &method.protocol_config);
    let mut args: Vec<(String, String)> =
        if command.is_empty() { Vec::new() } else { vec![("command".to_string(), command.to_string())] };
    match method.examples.first().and_then(|e| e.input.as_object()) {
        Some(input) => args.extend(input.iter().map(|(k, v)| (k.clone(), plain(v)))),
        None => args.extend(
            method.parameter_list().iter().filter(|p| p.required).map(|p| (p.name.to_string(), sample(p))),
        ),
    }
    write_block(tool_id, args.iter().map(|(k, v)| (k.as_str(), v.as_str()))).ok()
}

pub(crate) fn generate(tools: &[ToolDefinition], t: &VcpTemplates) -> String {
    let tools: Vec<&ToolDefinition> = tools.iter().filter(|tool| !tool.methods.is_empty()).collect();
    if tools.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(1024);
    out.push_str(&t.preamble);
    out.push_str("\n\n");
    for (i, tool) in tools.iter().enumerate() {
        if i > 0 {
            out.push_str(&t.tool_separator);
            out.push_str("\n\n");
        }
        out.push_str(&format!("{}{} ({})", t.tool_heading, tool.tool_name, tool.tool_id));
        if !tool.description.is_empty() {
            out.push_str(" — ");
            out.push_str(&neutralize_markers(&tool.description));
        }
        out.push_str("\n\n");
        for method in &tool.methods {
            let params = method.parameter_list();
            out.push_str("<<<[TOOL_DEFINITION]>>>\n");
            write_field(&mut out, "tool_name", &neutralize_markers(&tool.tool_id), false);
            let command = super::routing::command_of(&method.name, &method.protocol_config);
            if !command.is_empty() {
                write_field(&mut out, "command", &neutralize_markers(command), false);
            }
            write_field(&mut out, "description", &neutralize_markers(&method.description), params.is_empty());
            for (j, param) in params.iter().enumerate() {
                let text = describe(param, t);
                write_field(&mut out, param.name, &neutralize_markers(&text), j + 1 == params.len());
            }
            out.push_str("<<<[END_TOOL_DEFINITION]>>>\n");
            if let Some(example) = example(&tool.tool_id, method) {
                out.push_str(&t.example_label);
                out.push('\n');
                out.push_str(&example);
                out.push('\n');
            }
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}
