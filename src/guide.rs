//! The guide: how to use the crate, a chapter a job. Each chapter is a page of the
//! repository's `docs/` folder, rendered here; its Rust examples run as doctests (with
//! every feature on: `cargo test --all-features --doc`).
//!
//! | chapter | what it covers |
//! | --- | --- |
//! | [`parsing`](crate::guide::parsing) | reading a reply, one-shot and streamed; the tool prompt and the results message |
//! | [`vcp`](crate::guide::vcp) | the VCP dialect: its syntax, tolerance rules, options and diagnostics |
//! | [`tools`](crate::guide::tools) | tools in Rust with `#[tool]`, REST tools from configuration, MCP tools |
//! | [`engine`](crate::guide::engine) | the executor's checks and the conversation loop with a model |
//! | [`native`](crate::guide::native) | OpenAI's, Anthropic's and Gemini's tool APIs, the HTTP clients, model options |
//! | [`formats`](crate::guide::formats) | the 41 text formats of open-weight models, and `auto` |
//! | [`reasoning`](crate::guide::reasoning) | reasoning in a reply: one rule for every text protocol |
//! | [`grammar`](crate::guide::grammar) | grammars for constrained decoding, and a real model measured with them |
//! | [`gateway`](crate::guide::gateway) | the OpenAI- and Anthropic-compatible gateway in front of any model |
//! | [`protocols`](crate::guide::protocols) | writing a protocol of your own |
//! | [`cli`](crate::guide::cli) | the `tool-calling` program: tester, scripts and browser page |
//! | [`limits`](crate::guide::limits) | what the crate bounds, and what it trusts |
//! | [`speed`](crate::guide::speed) | benchmarks, against the floor and the peers |
//! | [`fuzzing`](crate::guide::fuzzing) | the fuzz targets and what they check |
//! | [`architecture`](crate::guide::architecture) | the layers, the folders and the rules between them |
//! | [`migrating`](crate::guide::migrating) | from the pre-release API |
//!
//! # Which example do I run?
//!
//! The repository's `examples/` folder, each run with `cargo run --example NAME` (and
//! the features it names):
//!
//! | I want to… | run |
//! | --- | --- |
//! | see a real reply go through the whole cycle (tools, prompt, parse, run, results) | `quickstart` |
//! | send tools and results through my own HTTP client (OpenAI, Anthropic, Gemini) | `own_client` |
//! | run an agent against a model (any OpenAI-compatible endpoint, or a recorded one) | `agent` (feature `http`) |
//! | write my own protocol | `custom_protocol` |
//! | constrain a served model to valid calls (vLLM, SGLang, llama.cpp) | `grammar` |
//! | run a small model on this machine, calling tools through a grammar | `local_model` (feature `http`) |
//! | call an HTTP API as tools, from a config file | `rest_tools` (feature `rest`) |
//! | call an MCP server's tools, and serve mine over MCP | `mcp_client` (feature `mcp`) |
//! | give tool calling to a model whose server has none | `gateway` (feature `gateway`) |
//!
//! - `quickstart` runs `examples/data/reply.txt` through two tools of its own, step by step:
//!   prompt, reply, requests, hidden reasoning, diagnostics, results, the text fed back.
//! - `agent` streams a conversation through `HttpChatModel` and the engine with the demo
//!   tools (`cli/src/demo_tools.rs`), printing each tool as it starts and finishes,
//!   while the reply is still arriving. The protocol follows the model: its native `tools`
//!   API when the built-in table of model families says it has one, else a text protocol
//!   (`--text` forces VCP, for servers that ignore `tools`). Without `OPENAI_MODEL` it says
//!   so and talks to a local server that replays one recorded conversation
//!   (`examples/support/recorded_server.rs`): not a model, but the same client, stream
//!   decoding and engine.
//! - `custom_protocol` writes a Hermes-style `<tool_call>{…}</tool_call>` protocol from
//!   scratch against `ToolCallingProtocol` (id, prompt, parsing, results) and runs it
//!   through the same engine: a damaged reply answered call by call, then a conversation.
//! - The tester is not an example but a program of its own, `tool-calling` (the package
//!   `tool-calling-cli` in `cli/`; `cargo install --path cli` installs it): the command-line
//!   and browser tester over the demo tools.

#[doc = include_str!("../docs/parsing.md")]
pub mod parsing {}

#[doc = include_str!("../docs/vcp.md")]
pub mod vcp {}

#[doc = include_str!("../docs/tools.md")]
pub mod tools {}

#[doc = include_str!("../docs/engine.md")]
pub mod engine {}

#[doc = include_str!("../docs/native.md")]
pub mod native {}

#[doc = include_str!("../docs/formats.md")]
pub mod formats {}

#[doc = include_str!("../docs/reasoning.md")]
pub mod reasoning {}

#[doc = include_str!("../docs/grammar.md")]
pub mod grammar {}

#[doc = include_str!("../docs/gateway.md")]
pub mod gateway {}

#[doc = include_str!("../docs/protocols.md")]
pub mod protocols {}

#[doc = include_str!("../docs/cli.md")]
pub mod cli {}

#[doc = include_str!("../docs/limits.md")]
pub mod limits {}

#[doc = include_str!("../docs/speed.md")]
pub mod speed {}

#[doc = include_str!("../docs/fuzzing.md")]
pub mod fuzzing {}

#[doc = include_str!("../docs/architecture.md")]
pub mod architecture {}

#[doc = include_str!("../docs/migrating.md")]
pub mod migrating {}
