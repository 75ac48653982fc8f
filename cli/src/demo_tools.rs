//! The tester's demo tools, defined with the `#[tool]` attribute exactly as a user of the
//! library would: adding the attribute is all it takes for the tools to be discovered
//! (link-time registration), no list to maintain.
//!
//! The one copy of them: the library's examples and tests include this file by its path
//! (`#[path = "../cli/src/demo_tools.rs"]`); the library itself ships no tools.

use std::sync::atomic::{AtomicUsize, Ordering};

use tool_calling::tool;

/// Counts calls of `calc.secret_internal`, which no model may reach.
pub static SECRET_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Arithmetic on two numbers.
#[derive(Default)]
pub struct Calc;

/// Arithmetic on two numbers.
#[tool(id = "calc", name = "Calculator", category = "math", tags("math", "demo"), version = "1.0")]
impl Calc {
    /// Add two numbers and return their sum.
    #[tool_method(param(a, description = "the first addend"), param(b, description = "the second addend"))]
    fn add(&self, a: f64, b: f64) -> f64 {
        a + b
    }

    /// Divide a by b.
    #[tool_method(
        param(a, description = "the dividend"),
        param(b, description = "the divisor; must not be zero"),
        example(input = r#"{"a": 6, "b": 3}"#, output = "2", description = "six divided by three")
    )]
    fn divide(&self, a: f64, b: f64) -> Result<f64, String> {
        if b == 0.0 { Err("division by zero".to_string()) } else { Ok(a / b) }
    }

    /// Internal bookkeeping: exists on the type, never offered to or callable by a model.
    #[tool_method(internal)]
    fn secret_internal(&self) -> String {
        SECRET_CALLS.fetch_add(1, Ordering::SeqCst);
        "secret".to_string()
    }
}

/// Text utilities.
#[derive(Default)]
pub struct Text;

/// Text utilities.
#[tool(id = "text", name = "Text", category = "text", tags("demo"), version = "1.0")]
impl Text {
    /// Return the message unchanged.
    #[tool_method(param(message, description = "the text to echo"))]
    fn echo(&self, message: String) -> String {
        message
    }

    /// Repeat a message several times.
    #[tool_method(
        param(message, description = "the text to repeat"),
        param(times, minimum = 1, maximum = 10, description = "how many copies, 1 to 10"),
        param(sep, default = " ", description = "what goes between copies")
    )]
    fn repeat(&self, message: String, times: u32, sep: Option<String>) -> String {
        let sep = sep.unwrap_or_else(|| " ".to_string());
        vec![message; times as usize].join(&sep)
    }

    /// Sleep for a number of milliseconds (asynchronously), then say so.
    #[tool_method(param(ms, description = "milliseconds to sleep"))]
    async fn sleep(&self, ms: u64) -> String {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        format!("slept {ms} ms")
    }

    /// Label a river with an ink colour (under VCP both names are control keys, not arguments).
    #[tool_method(param(ink, description = "the ink colour"), param(river, description = "the river's name"))]
    fn label(&self, ink: String, river: String) -> String {
        format!("{river} in {ink}")
    }
}
