use tool_calling_macros::tool;

#[derive(Default)]
struct Calc;

#[tool(id = "calc", regster = false)]
impl Calc {
    /// Add two numbers.
    #[tool_method(param(a, descripton = "first addend"), param(c, minimum = 0))]
    fn add(&self, a: f64, b: f64) -> f64 {
        a + b
    }

    /// Subtract.
    #[tool_method(hidden)]
    fn sub(&self, a: f64, b: f64) -> f64 {
        a - b
    }
}

fn main() {}
