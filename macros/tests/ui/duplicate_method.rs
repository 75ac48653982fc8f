use tool_calling_macros::tool;

#[derive(Default)]
struct Files;

#[tool(id = "files", register = false)]
impl Files {
    /// Read a file.
    #[tool_method(vcp_command = "Read")]
    fn read(&self, path: String) -> String {
        path
    }

    /// Read a file, loudly.
    #[tool_method(vcp_command = "Read")]
    fn read_loud(&self, path: String) -> String {
        path.to_uppercase()
    }
}

fn main() {}
