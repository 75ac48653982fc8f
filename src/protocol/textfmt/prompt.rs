//! What each format writes: the tool-definition prompt, in the shape its family's chat
//! template renders tools, and results, in the shape it renders tool output.

use serde_json::{Value, json};

use super::TextFormat;
use super::escape::neutralize_tokens;
use crate::ToolExecutionResult;
use crate::model::{Message, Role};
use crate::tools::ToolDefinition;

/// Every method of `tools` as an OpenAI-style function object.
pub(super) fn functions(tools: &[ToolDefinition]) -> Vec<Value> {
    tools
        .iter()
        .flat_map(|tool| {
            tool.methods.iter().map(move |method| {
                json!({"type": "function", "function": {
                    "name": method.full_name(&tool.tool_id),
                    "description": method.description,
                    "parameters": method.parameters,
                }})
            })
        })
        .collect()
}

/// Every method of `tools`: full name, description, parameter schema.
pub(super) fn methods(tools: &[ToolDefinition]) -> Vec<(String, &str, &Value)> {
    tools
        .iter()
        .flat_map(|tool| {
            tool.methods
                .iter()
                .map(move |m| (m.full_name(&tool.tool_id), m.description.as_str(), &m.parameters))
        })
        .collect()
}

/// The bare function objects (`{"name", "description", "parameters"}`).
pub(super) fn bare_functions(tools: &[ToolDefinition]) -> Vec<Value> {
    methods(tools)
        .into_iter()
        .map(|(name, description, parameters)| json!({"name": name, "description": description, "parameters": parameters}))
        .collect()
}

fn str_at<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn lines(values: &[Value]) -> String {
    values.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

/// The tool-definition prompt of `format` for `tools`.
pub(crate) fn prompt(format: TextFormat, tools: &[ToolDefinition]) -> String {
    match format {
        TextFormat::Hermes => format!(
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
             You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{}\n</tools>\n\n\
             For each function call, return a json object with function name and arguments within \
             <tool_call></tool_call> XML tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>",
            lines(&functions(tools))
        ),
        TextFormat::Qwen3CoderXml => {
            let mut out = String::from("# Tools\n\nYou have access to the following functions:\n\n<tools>");
            for (name, description, parameters) in methods(tools) {
                out.push_str(&format!(
                    "\n<function>\n<name>{name}</name>\n<description>{description}</description>\n<parameters>"
                ));
                let required: Vec<&str> = parameters
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if let Some(properties) = parameters.get("properties").and_then(Value::as_object) {
                    for (name, schema) in properties {
                        let kind = match schema.get("type") {
                            Some(Value::String(t)) => t.clone(),
                            Some(other) => other.to_string(),
                            None => "any".to_string(),
                        };
                        out.push_str(&format!(
                            "\n<parameter>\n<name>{name}</name>\n<type>{kind}</type>\n<description>{}</description>{}\n</parameter>",
                            str_at(schema, "description"),
                            if required.contains(&name.as_str()) { "\n<required>true</required>" } else { "" }
                        ));
                    }
                }
                out.push_str("\n</parameters>\n</function>");
            }
            out.push_str(
                "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n\
                 <tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n\
                 <parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n\
                 </parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n\
                 - Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n\
                 - Required parameters MUST be specified\n\
                 - You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n\
                 - If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n\
                 </IMPORTANT>",
            );
            out
        }
        TextFormat::Mistral => format!(
            "[AVAILABLE_TOOLS]{}[/AVAILABLE_TOOLS]\n\nTo call tools, write [TOOL_CALLS] followed by a JSON array of \
             {{\"name\": …, \"arguments\": {{…}}}} objects.",
            Value::Array(functions(tools))
        ),
        TextFormat::Llama3Json => format!(
            "Given the following functions, please respond with a JSON for a function call with its proper \
             arguments that best answers the given prompt.\n\n\
             Respond in the format {{\"name\": function name, \"parameters\": dictionary of argument name and its value}}. \
             Do not use variables.\n\n{}",
            functions(tools)
                .iter()
                .map(|f| serde_json::to_string_pretty(f).unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n\n")
        ),
        TextFormat::Pythonic => format!(
            "You are an expert in composing functions. You are given a question and a set of possible functions.\n\
             Based on the question, you will need to make one or more function/tool calls to achieve the purpose.\n\
             If none of the functions can be used, point it out.\n\n\
             If you decide to invoke any of the function(s), you MUST put it in the format of \
             [func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]\n\
             You SHOULD NOT include any other text in the response if you call a function.\n\n\
             Here is a list of functions in JSON format that you can invoke.\n{}",
            serde_json::to_string_pretty(&Value::Array(bare_functions(tools))).unwrap_or_default()
        ),
        TextFormat::DeepSeekV3 => {
            let mut out =
                String::from("## Tools\n\n### Function\n\nYou have the following functions available:\n");
            for (name, description, parameters) in methods(tools) {
                out.push_str(&format!("\n- `{name}`: {description}\n```json\n{parameters}\n```\n"));
            }
            out.push_str(
                "\nTo call functions, write:\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>FUNCTION_NAME\n\
                 ```json\n{ARGUMENTS}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            );
            out
        }
        TextFormat::DeepSeekV31 => {
            let mut out = String::from("## Tools\nYou have access to the following tools:\n");
            for (name, description, parameters) in methods(tools) {
                out.push_str(&format!(
                    "\n### {name}\nDescription: {description}\n\nParameters: {parameters}\n"
                ));
            }
            out.push_str(
                "\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n\
                 <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments<｜tool▁call▁end｜>\
                 {{additional_tool_calls}}<｜tool▁calls▁end｜>\n\n\
                 Where:\n- `tool_call_name` must be an exact match to one of the available tools\n\
                 - `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n\
                 - For multiple tool calls, chain them directly without separators or spaces",
            );
            out
        }
        TextFormat::KimiK2 => format!(
            "# Tools\n\n{}\n\nTo call tools, write <|tool_calls_section_begin|>, then for each call \
             <|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>{{JSON arguments}}<|tool_call_end|> \
             (INDEX counts the calls of the reply from 0), then <|tool_calls_section_end|>.",
            Value::Array(functions(tools))
        ),
        TextFormat::Glm45 | TextFormat::Glm47 => format!(
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
             You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{}\n</tools>\n\n\
             For each function call, output the function name and arguments within the following XML format:\n\
             <tool_call>{{function-name}}\n<arg_key>{{arg-key-1}}</arg_key>\n<arg_value>{{arg-value-1}}</arg_value>\n\
             <arg_key>{{arg-key-2}}</arg_key>\n<arg_value>{{arg-value-2}}</arg_value>\n...\n</tool_call>",
            lines(&functions(tools))
        ),
        TextFormat::Cohere => super::cohere::prompt(tools),
        TextFormat::DeepSeekV32 => super::deepseek_v32::prompt(tools),
        TextFormat::Step3 => super::step3::prompt(tools),
        TextFormat::KimiK3 => super::kimi_k3::prompt(tools),
        TextFormat::Harmony => super::harmony::prompt(tools),
        TextFormat::SeedOss => super::seed_oss::prompt(tools),
        TextFormat::Granite => super::granite::prompt(tools),
        TextFormat::Xlam => super::xlam::prompt(tools),
        TextFormat::Phi4Mini => super::phi4_mini::prompt(tools),
        TextFormat::Hunyuan => super::hunyuan::prompt(tools),
        TextFormat::Internlm => super::internlm::prompt(tools),
        TextFormat::FunctionGemma => super::function_gemma::prompt(tools),
        TextFormat::Gemma4 => super::gemma4::prompt(tools),
        TextFormat::Jamba => super::jamba::prompt(tools),
        TextFormat::Olmo3 => super::olmo3::prompt(tools),
        TextFormat::Longcat => super::longcat::prompt(tools),
        TextFormat::Ernie45 => super::ernie45::prompt(tools),
        TextFormat::Gigachat3 => super::gigachat3::prompt(tools),
        TextFormat::MinimaxM1 => super::minimax_m1::prompt(tools),
        TextFormat::Inkling => super::inkling::prompt(tools),
        TextFormat::Sarashina => super::sarashina::prompt(tools),
        TextFormat::DeepSeekV4 => super::deepseek_v4::prompt(tools),
        TextFormat::HunyuanV3 => super::hunyuan_v3::prompt(tools),
        TextFormat::Lfm2 => super::lfm2::prompt(tools),
        TextFormat::MinimaxM3 => super::minimax_m3::prompt(tools),
        TextFormat::Apertus => super::apertus::prompt(tools),
        TextFormat::Minicpm5 => super::minicpm5::prompt(tools),
        TextFormat::PoolsideV1 => super::poolside_v1::prompt(tools),
        TextFormat::Gigachat35 => super::gigachat35::prompt(tools),
        TextFormat::DeepSeekV41 => super::deepseek_v41::prompt(tools),
        TextFormat::MinimaxM2 => format!(
            "# Tools\nYou may call one or more tools to assist with the user query.\n\
             Here are the tools available in JSONSchema format:\n\n<tools>\n{}\n</tools>\n\n\
             When making tool calls, use XML format to invoke tools and pass parameters:\n\n\
             <minimax:tool_call>\n<invoke name=\"tool-name-1\">\n<parameter name=\"param-key-1\">param-value-1</parameter>\n\
             <parameter name=\"param-key-2\">param-value-2</parameter>\n...\n</invoke>\n</minimax:tool_call>",
            bare_functions(tools).iter().map(|f| format!("<tool>{f}</tool>")).collect::<Vec<_>>().join("\n")
        ),
    }
}

/// A result's text as the model reads it: the output, or the error prefixed, with any
/// markup in it neutralised.
pub(super) fn content(result: &ToolExecutionResult) -> String {
    let text = neutralize_tokens(&result.result);
    if result.is_success() { text.into_owned() } else { format!("Error: {text}") }
}

/// Each result's [`content`] between `open` and `close`, one result a line.
pub(super) fn wrapped(results: &[ToolExecutionResult], open: &str, close: &str) -> String {
    results.iter().map(|r| format!("{open}{}{close}", content(r))).collect::<Vec<_>>().join("\n")
}

/// Each result as a JSON object, one a line: `"name"`, then its [`content`] under `ok`
/// (or `error` when it failed).
pub(super) fn named_results(results: &[ToolExecutionResult], ok: &str, error: &str) -> String {
    results
        .iter()
        .map(|r| {
            let mut object = serde_json::Map::new();
            object.insert("name".into(), Value::String(neutralize_tokens(&r.tool_name).into_owned()));
            let key = if r.is_success() { ok } else { error };
            object.insert(key.into(), Value::String(content(r)));
            Value::Object(object).to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` with every line that would read as a Kimi K2 result header (`## Return of …`)
/// made plain, its first `#` written as `&#35;`: a result cannot start another one.
fn kimi_headers(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| {
            let indent = line.len() - line.trim_start().len();
            let rest = line.get(indent..).unwrap_or_default();
            let header = rest.get(..12).is_some_and(|head| head.eq_ignore_ascii_case("## return of"));
            match (header, line.get(..indent)) {
                (true, Some(indent)) => format!("{indent}&#35;{}", rest.get(1..).unwrap_or_default()),
                _ => line.to_string(),
            }
        })
        .collect()
}

/// The messages that carry `results` back in `format`'s shape: one tool message whose
/// text wraps each result as the family's template renders tool output.
pub(crate) fn result_messages(format: TextFormat, results: &[ToolExecutionResult]) -> Vec<Message> {
    if results.is_empty() {
        return Vec::new();
    }
    let each = |wrap: &dyn Fn(&ToolExecutionResult) -> String, separator: &str| {
        results.iter().map(wrap).collect::<Vec<_>>().join(separator)
    };
    let text = match format {
        TextFormat::Hermes | TextFormat::Qwen3CoderXml => {
            each(&|r| format!("<tool_response>\n{}\n</tool_response>", content(r)), "\n")
        }
        TextFormat::Glm45 | TextFormat::Glm47 => {
            format!(
                "<|observation|>\n{}",
                each(&|r| format!("<tool_response>\n{}\n</tool_response>", content(r)), "\n")
            )
        }
        TextFormat::Mistral => each(
            &|r| {
                format!(
                    "[TOOL_RESULTS]{}[/TOOL_RESULTS]",
                    json!({"name": neutralize_tokens(&r.tool_name), "content": content(r)})
                )
            },
            "",
        ),
        TextFormat::Llama3Json | TextFormat::Pythonic => each(
            &|r| {
                let (name, text) = (neutralize_tokens(&r.tool_name), neutralize_tokens(&r.result));
                if r.is_success() {
                    json!({"name": name, "output": text}).to_string()
                } else {
                    json!({"name": name, "error": text}).to_string()
                }
            },
            "\n",
        ),
        TextFormat::DeepSeekV3 | TextFormat::DeepSeekV31 => format!(
            "<｜tool▁outputs▁begin｜>{}<｜tool▁outputs▁end｜>",
            each(&|r| format!("<｜tool▁output▁begin｜>{}<｜tool▁output▁end｜>", content(r)), "")
        ),
        TextFormat::KimiK2 => each(
            &|r| format!("## Return of {}\n{}", neutralize_tokens(&r.request_id), kimi_headers(&content(r))),
            "\n\n",
        ),
        TextFormat::MinimaxM2 => each(&|r| format!("<response>{}</response>", content(r)), "\n"),
        TextFormat::Cohere => super::cohere::results(results),
        TextFormat::DeepSeekV32 => super::deepseek_v32::results(results),
        TextFormat::Step3 => super::step3::results(results),
        TextFormat::KimiK3 => super::kimi_k3::results(results),
        TextFormat::Harmony => super::harmony::results(results),
        TextFormat::SeedOss => super::seed_oss::results(results),
        TextFormat::Granite => super::granite::results(results),
        TextFormat::Xlam => super::xlam::results(results),
        TextFormat::Phi4Mini => super::phi4_mini::results(results),
        TextFormat::Hunyuan => super::hunyuan::results(results),
        TextFormat::Internlm => super::internlm::results(results),
        TextFormat::FunctionGemma => super::function_gemma::results(results),
        TextFormat::Gemma4 => super::gemma4::results(results),
        TextFormat::Jamba => super::jamba::results(results),
        TextFormat::Olmo3 => super::olmo3::results(results),
        TextFormat::Longcat => super::longcat::results(results),
        TextFormat::Ernie45 => super::ernie45::results(results),
        TextFormat::Gigachat3 => super::gigachat3::results(results),
        TextFormat::MinimaxM1 => super::minimax_m1::results(results),
        TextFormat::Inkling => super::inkling::results(results),
        TextFormat::Sarashina => super::sarashina::results(results),
        TextFormat::DeepSeekV4 => super::deepseek_v4::results(results),
        TextFormat::HunyuanV3 => super::hunyuan_v3::results(results),
        TextFormat::Lfm2 => super::lfm2::results(results),
        TextFormat::MinimaxM3 => super::minimax_m3::results(results),
        TextFormat::Apertus => super::apertus::results(results),
        TextFormat::Minicpm5 => super::minicpm5::results(results),
        TextFormat::PoolsideV1 => super::poolside_v1::results(results),
        TextFormat::Gigachat35 => super::gigachat35::results(results),
        TextFormat::DeepSeekV41 => super::deepseek_v41::results(results),
    };
    vec![Message::new(Role::Tool, text).with_tool_results(results.iter().cloned())]
}
