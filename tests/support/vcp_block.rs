//! Writing VCP request blocks in tests.

/// A VCP request block with `fields`, in order.
pub fn block(fields: &[(&str, &str)]) -> String {
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k}:「始」{v}「末」")).collect();
    format!("<<<[TOOL_REQUEST]>>>\n{}\n<<<[END_TOOL_REQUEST]>>>\n", body.join(",\n"))
}
