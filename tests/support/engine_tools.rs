//! Tools shared by the engine tests (`engine.rs`, `logging.rs`):
//! registered by hand (`register = false`), so each test builds its own registry.

use std::time::Duration;

use tool_calling::tool;

#[derive(Default)]
pub struct Calc;

/// Arithmetic.
#[tool(id = "calc", register = false)]
impl Calc {
    /// Add two numbers.
    #[tool_method]
    fn add(&self, a: f64, b: f64) -> f64 {
        a + b
    }
}

#[derive(Default)]
pub struct Text;

/// Text utilities.
#[tool(id = "text", register = false)]
impl Text {
    /// Repeat a message.
    #[tool_method(param(times, minimum = 1, maximum = 10))]
    async fn repeat(&self, message: String, times: u32) -> String {
        vec![message; times as usize].join(" ")
    }

    /// Wait, but never longer than 100 ms.
    #[tool_method(timeout_ms = 100)]
    async fn hurry(&self, ms: u64) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("hurried {ms} ms")
    }

    /// Wait a while.
    #[tool_method]
    async fn wait(&self, ms: u64) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("waited {ms} ms")
    }
}
