//! The definitions prompt: how VCP tells a model which tools exist.

use serde_json::Value;

use super::format::{format_request, neutralize_markers, write_field};
use crate::{MethodDefinition, ParameterInfo, ToolDefinition};

/// The language of a built-in template set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Language {
    /// English (the default).
    #[default]
    En,
    /// Chinese.
    Zh,
}

/// The words of the definitions prompt. Replace any of them to change what the model
/// reads; the block syntax itself is fixed by the protocol.
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
/// first schema example, or a word for its type.
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
        _ => "text".to_string(),
    }
}

/// One example request: the method's first declared example, else its required
/// parameters with sample values.
fn example(tool_id: &str, method: &MethodDefinition) -> Option<String> {
    let mut args: Vec<(String, String)> = vec![(
        "command".to_string(),
        super::routing::command_of(&method.name, &method.protocol_config).to_string(),
    )];
    match method.examples.first().and_then(|e| e.input.as_object()) {
        Some(input) => args.extend(input.iter().map(|(k, v)| (k.clone(), plain(v)))),
        None => args.extend(
            method.parameter_list().iter().filter(|p| p.required).map(|p| (p.name.to_string(), sample(p))),
        ),
    }
    format_request(tool_id, args.iter().map(|(k, v)| (k.as_str(), v.as_str()))).ok()
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
            write_field(
                &mut out,
                "command",
                &neutralize_markers(super::routing::command_of(&method.name, &method.protocol_config)),
                false,
            );
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
