use tool_calling_macros::tool;

#[derive(Default)]
struct Greeter;

#[tool(id = "greeter", register = false)]
impl Greeter {
    /// Greet someone.
    #[tool_method]
    fn greet(&self, name: &str) -> String {
        format!("Hello, {name}!")
    }

    /// Greet several people.
    #[tool_method]
    fn greet_all(&self, names: Vec<&'static str>, prefix: impl Into<String>) -> String {
        format!("{}{}", prefix.into(), names.join(", "))
    }

    /// Add a pair.
    #[tool_method]
    fn pair(&self, (a, b): (i32, i32)) -> i32 {
        a + b
    }
}

fn main() {}
