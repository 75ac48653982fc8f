use tool_calling_macros::tool_fn;

/// The time.
#[tool_fn(id = "clock", stateful)]
fn now() -> String {
    "12:00".to_string()
}

fn main() {}
