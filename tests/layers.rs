//! The crate's top-level modules form layers: data flows one way through them, and no
//! module reaches back into one that reaches it. This test reads the `crate::` paths of
//! every file under `src/` (outside its unit tests) and fails on a circle between two or
//! more top-level modules, naming the lines that close it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which top-level module names which others, with a line that does so for each pair.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The items `lib.rs` re-exports at the root (`crate::ToolRequest`), by the module
/// they come from.
fn root_items(lib: &str) -> BTreeMap<String, String> {
    let mut items = BTreeMap::new();
    for line in lib.lines().map(str::trim).filter(|l| l.starts_with("pub use ")) {
        let path = line.trim_start_matches("pub use ").trim_end_matches(';');
        let Some((module, rest)) = path.split_once("::") else { continue };
        let names = rest.trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            items.insert(name.to_string(), module.to_string());
        }
    }
    items
}

/// The first segments of the `crate::` paths in `text`, `crate::{a, b::c}` groups
/// included: `a` and `b`.
fn crate_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let body = group.split('}').next().unwrap_or_default();
            for item in body.split(',') {
                let head: String =
                    item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !head.is_empty() {
                    found.push(head);
                }
            }
        } else {
            let head: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !head.is_empty() {
                found.push(head);
            }
        }
        rest = after;
    }
    found
}

/// The graph of `files` (path relative to `src/`, text), for the top-level `modules`.
fn graph(files: &[(String, String)], modules: &BTreeSet<String>, roots: &BTreeMap<String, String>) -> Graph {
    let mut graph = Graph::new();
    for (path, text) in files {
        let own = path.split('/').next().unwrap_or_default().trim_end_matches(".rs").to_string();
        if !modules.contains(&own) {
            continue;
        }
        // A file's unit tests may reach anywhere: only what the library compiles counts.
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for head in crate_paths(line) {
                let target = roots.get(&head).cloned().unwrap_or(head);
                if target != own && modules.contains(&target) {
                    graph
                        .entry(own.clone())
                        .or_default()
                        .entry(target)
                        .or_insert_with(|| format!("src/{path}:{}", number + 1));
                }
            }
        }
    }
    graph
}

/// A circle of `graph`, as the modules in order with the line behind each step, or
/// `None`.
fn circle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut circle = path[start..].to_vec();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(modules) = visit(node, graph, &mut Vec::new(), &mut done) {
            let steps = modules
                .windows(2)
                .map(|pair| format!("{} -> {} ({})", pair[0], pair[1], graph[&pair[0]][&pair[1]]))
                .collect();
            return Some(steps);
        }
    }
    None
}

#[test]
fn no_module_circle_in_src() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    source_files(&src, &mut paths);
    let files: Vec<(String, String)> = paths
        .iter()
        .map(|path| {
            let relative = path.strip_prefix(&src).unwrap_or(path).to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (relative, text)
        })
        .collect();
    let modules: BTreeSet<String> = files
        .iter()
        .map(|(path, _)| path.split('/').next().unwrap_or_default().trim_end_matches(".rs").to_string())
        .filter(|module| module != "lib")
        .collect();
    let lib =
        files.iter().find(|(path, _)| path == "lib.rs").map(|(_, text)| text.as_str()).unwrap_or_default();
    let graph = graph(&files, &modules, &root_items(lib));
    assert!(
        graph.get("engine").is_some_and(|to| to.contains_key("protocol") && to.contains_key("exec")),
        "the graph was read: {graph:?}"
    );
    if let Some(steps) = circle(&graph) {
        panic!("a circle between top-level modules:\n{}", steps.join("\n"));
    }
}

#[test]
fn the_check_sees_a_circle() {
    let files = [
        ("tools/registry.rs".to_string(), "use crate::config::ToolCallConfig;".to_string()),
        ("config.rs".to_string(), "use crate::{ToolRequest, tools::full_name};".to_string()),
        ("request.rs".to_string(), "pub(crate) fn f() -> crate::Span { todo!() }".to_string()),
        ("span.rs".to_string(), "#[cfg(test)]\nmod tests {\n    use crate::tools::X;\n}".to_string()),
    ];
    let modules: BTreeSet<String> =
        ["tools", "config", "request", "span"].iter().map(|s| s.to_string()).collect();
    let roots = root_items("pub use request::{Args, ToolRequest};\npub use span::Span;");
    let graph = graph(&files, &modules, &roots);
    assert_eq!(
        graph["config"].keys().collect::<Vec<_>>(),
        ["request", "tools"],
        "a root item is its module's"
    );
    assert!(!graph.contains_key("span"), "unit tests do not count");
    let steps = circle(&graph).expect("tools -> config -> tools");
    assert!(steps.iter().any(|s| s.starts_with("config -> tools (src/config.rs:1)")), "{steps:?}");
    let mut acyclic = graph.clone();
    acyclic.remove("tools");
    assert_eq!(circle(&acyclic), None);
}
