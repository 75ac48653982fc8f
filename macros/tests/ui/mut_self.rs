use tool_calling_macros::tool;

#[derive(Default)]
struct Counter {
    hits: u64,
}

#[tool(id = "counter", register = false)]
impl Counter {
    /// Count a hit.
    #[tool_method]
    fn hit(&mut self) -> u64 {
        self.hits += 1;
        self.hits
    }
}

fn main() {}
