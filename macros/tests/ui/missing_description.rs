use tool_calling_macros::tool;

#[derive(Default)]
struct Calc;

#[tool(id = "calc", register = false)]
impl Calc {
    #[tool_method]
    fn add(&self, a: f64, b: f64) -> f64 {
        a + b
    }
}

fn main() {}
