//! REST tools: a library catalogue's HTTP API, described in a TOML file, called by a
//! model through VCP.
//!
//! ```text
//! cargo run --features rest --example rest_tools
//! ```
//!
//! The tools come from `examples/data/rest_tools.toml` (base URL, paths, where each
//! argument goes, a bearer token read from `LIBRARY_TOKEN`). The example starts a small
//! catalogue server of its own on 127.0.0.1 and points the tools at it, then runs one
//! reply through the engine: a search, a book by id, and a reservation of a book that does
//! not exist, whose HTTP 404 goes back to the model as an error result.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_calling::prelude::*;
use tool_calling::tools::rest::RestTools;

#[path = "support/http_server.rs"]
mod http_server;
#[path = "support/logging.rs"]
mod logging;

use http_server::{Request, Response};

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/rest_tools.toml");
const DEMO_TOKEN: &str = "demo-token";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    logging::init();
    if std::env::var_os("LIBRARY_TOKEN").is_none() {
        println!("LIBRARY_TOKEN is not set: using a demo token for the local server.\n");
        // SAFETY: no other thread exists yet (the runtime starts below).
        unsafe { std::env::set_var("LIBRARY_TOKEN", DEMO_TOKEN) };
    }
    tokio::runtime::Runtime::new()?.block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let base_url = start_catalogue().await?;

    // 1. The tools, from configuration.
    let mut config = RestTools::from_file(CONFIG)?;
    for tool in &mut config.tools {
        tool.base_url = base_url.clone();
    }
    let registry = ToolRegistry::new();
    for spec in config.tool_specs()? {
        registry.register(spec)?;
    }
    let engine = Engine::new(Arc::new(registry));

    // 2. What the model is told about them (the first method, abridged).
    let prompt = engine.declarations(&ExecutionContext::default())?;
    let prompt = prompt.as_prompt().unwrap_or_default();
    let first = prompt.find("<<<[TOOL_DEFINITION]>>>").unwrap_or(0);
    let end = prompt.find("<<<[END_TOOL_DEFINITION]>>>").map_or(prompt.len(), |i| i + 27);
    println!("== The prompt, first method ==\n{}\n", prompt.get(first..end).unwrap_or(""));

    // 3. A reply that calls them.
    let reply = "Let me look that up.
<<<[TOOL_REQUEST]>>>
tool_name:「始」library「末」,
command:「始」search「末」,
q:「始」rust「末」
<<<[END_TOOL_REQUEST]>>>
<<<[TOOL_REQUEST]>>>
tool_name:「始」library_book「末」,
id:「始」2「末」
<<<[END_TOOL_REQUEST]>>>
<<<[TOOL_REQUEST]>>>
tool_name:「始」library_reserve「末」,
id:「始」99「末」,
reader:「始」Ana「末」
<<<[END_TOOL_REQUEST]>>>";
    println!("== The reply ==\n{reply}\n");

    // 4. Run it: each call is an HTTP request to the catalogue.
    let cycle = engine.run_turn(reply, &ExecutionContext::default()).await?;
    println!("== Results ==");
    for result in &cycle.execution_results {
        let kind = result.error_kind.map(|k| format!(" ({k})")).unwrap_or_default();
        println!("{} {:?}{kind}: {}", result.tool_name, result.status, result.result);
    }
    println!("\n== Fed back to the model ==\n{}", cycle.result_text());
    Ok(())
}

/// The catalogue: three books, reservations for the ones that exist, a bearer token.
async fn start_catalogue() -> std::io::Result<String> {
    let address = http_server::spawn(|request: Request| async move { catalogue(&request) }).await?;
    Ok(format!("http://{address}/api"))
}

const BOOKS: [(u64, &str, &str); 3] = [
    (1, "The Rust Programming Language", "Klabnik, Nichols"),
    (2, "Rust for Rustaceans", "Gjengset"),
    (3, "Parsing Techniques", "Grune, Jacobs"),
];

fn book_json(id: u64, title: &str, author: &str) -> Value {
    json!({ "id": id, "title": title, "author": author })
}

/// The catalogue's routes: `GET /api/books?q=&limit=`, `GET /api/books/{id}`,
/// `POST /api/books/{id}/reservations`.
fn catalogue(request: &Request) -> Response {
    let segments = request.segments();
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    match (request.method.as_str(), segments.as_slice()) {
        ("GET", ["api", "books"]) => search(request),
        ("GET", ["api", "books", id]) => with_id(id, book),
        ("POST", ["api", "books", id, "reservations"]) => with_id(id, |id| reserve(request, id)),
        _ => Response::text(404, "no such route"),
    }
}

fn with_id(id: &str, answer: impl FnOnce(u64) -> Response) -> Response {
    match id.parse() {
        Ok(id) => answer(id),
        Err(_) => Response::text(400, format!("not a book id: {id}")),
    }
}

fn search(request: &Request) -> Response {
    let words = request.query("q").map(str::to_lowercase).unwrap_or_default();
    let limit = request.query("limit").and_then(|l| l.parse().ok()).unwrap_or(5);
    let found: Vec<Value> = BOOKS
        .iter()
        .filter(|(_, title, _)| title.to_lowercase().contains(&words))
        .take(limit)
        .map(|(id, title, author)| book_json(*id, title, author))
        .collect();
    Response::json(200, &json!({ "books": found }))
}

fn book(id: u64) -> Response {
    match BOOKS.iter().find(|(i, _, _)| *i == id) {
        Some((id, title, author)) => Response::json(200, &book_json(*id, title, author)),
        None => Response::text(404, format!("no book {id}")),
    }
}

fn reserve(request: &Request, id: u64) -> Response {
    let token = std::env::var("LIBRARY_TOKEN").unwrap_or_default();
    if request.header("authorization") != Some(&format!("Bearer {token}")) {
        return Response::text(401, "a library card (bearer token) is needed");
    }
    match BOOKS.iter().find(|(i, _, _)| *i == id) {
        Some((_, title, _)) => {
            let body = request.json().unwrap_or_default();
            let reader = body.get("reader").and_then(Value::as_str).unwrap_or("someone");
            Response::text(201, format!("reserved {title:?} for {reader}"))
        }
        None => Response::text(404, format!("no book {id}")),
    }
}
