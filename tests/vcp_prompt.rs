//! The definitions prompt: snapshots in both languages, and the example
//! requests it teaches parse back into calls of the methods they show.

use serde_json::json;
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::vcp::{Language, VcpProtocol, VcpTemplates};
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::MethodExample;
use tool_calling::tools::ToolDefinition;

fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new("directory-tree", "Directory tree")
            .with_description("Browse the file system.")
            .with_method(MethodDefinition::new("listFiles", "List the files under a path.").with_parameters(
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Directory to list"},
                        "recursive": {"type": "boolean", "default": false,
                                      "description": "Recurse into sub-directories"},
                        "order": {"enum": ["name", "size"]}
                    },
                    "required": ["path"]
                }),
            )),
        ToolDefinition::new("text", "Text").with_method(
            MethodDefinition::new(
                "repeat",
                "Repeat a message; 「末」 and <<<[TOOL_REQUEST]>>> are safe here.",
            )
            .with_protocol_config("vcp", tool_calling::protocol::vcp::command_alias_config("Repeat"))
            .with_parameters(json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string"},
                    "times": {"type": "integer", "minimum": 1, "maximum": 10},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["message", "times"]
            }))
            .with_example(MethodExample::new("twice", json!({"message": "hi", "times": 2}))),
        ),
    ]
}

/// The prompt VCP offers `tools` with.
fn prompt(vcp: &VcpProtocol, tools: &[ToolDefinition]) -> String {
    vcp.tool_declarations(tools).as_prompt().unwrap_or_default().to_string()
}

#[test]
fn english_prompt() {
    insta::assert_snapshot!(prompt(&VcpProtocol::default(), &tools()));
}

#[test]
fn chinese_prompt() {
    insta::assert_snapshot!(prompt(&VcpProtocol::default().with_language(Language::Zh), &tools()));
}

#[test]
fn templates_are_replaceable() {
    let mut templates = VcpTemplates::for_language(Language::En);
    templates.preamble = "CUSTOM PREAMBLE".to_string();
    templates.required = "must".to_string();
    let prompt = prompt(&VcpProtocol::default().with_templates(templates), &tools());
    assert!(prompt.starts_with("CUSTOM PREAMBLE\n"));
    assert!(prompt.contains("path:「始」(string, must) Directory to list「末」"));
}

#[test]
fn no_tools_no_prompt() {
    assert_eq!(prompt(&VcpProtocol::default(), &[]), "");
}

#[test]
fn examples_in_the_prompt_parse_back() {
    let vcp = VcpProtocol::default();
    let prompt = prompt(&vcp, &tools());
    // Definition blocks are not requests; only the example requests (and the syntax
    // sample in the preamble) are.
    let outcome = vcp.parse(&prompt);
    let calls: Vec<(String, Option<String>)> = outcome
        .requests
        .iter()
        .map(|r| (r.tool_name.clone(), r.arg_str("command").map(str::to_string)))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("tool id".to_string(), Some("method".to_string())),
            ("directory-tree".to_string(), Some("listFiles".to_string())),
            ("text".to_string(), Some("Repeat".to_string())),
        ]
    );
    assert!(outcome.requests.iter().all(|r| r.complete));
    let repeat = &outcome.requests[2];
    assert_eq!(repeat.arg_str("message"), Some("hi"));
    assert_eq!(repeat.arg_str("times"), Some("2"));
    // The description holding markers was neutralised, not parsed.
    assert!(prompt.contains("<<<[TOOL_REQUEST_ESCAPE]>>>"));
}
