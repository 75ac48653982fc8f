//! Where an OpenAI-compatible server takes a grammar for constrained decoding: each
//! serving engine has its own request fields.

use serde_json::{Map, Value, json};

use crate::grammar::{Dialect, Grammar};

/// An OpenAI-compatible server that constrains decoding with a grammar sent in the
/// request, and so where [`HttpChatModel`](super::HttpChatModel) puts a
/// [`ModelRequest::grammar`](crate::model::ModelRequest::grammar) in the body.
///
/// | server | Lark / GBNF | JSON Schema | structural tag |
/// | --- | --- | --- | --- |
/// | vLLM | `structured_outputs.grammar` | `structured_outputs.json` | `structured_outputs.structural_tag` |
/// | SGLang | `ebnf` | `json_schema` | `response_format` (`type: structural_tag`) |
/// | llama.cpp server | `grammar` (GBNF only) | `json_schema` | — |
///
/// vLLM reads Lark with its `guidance` backend and GBNF with `xgrammar`; SGLang's
/// default backend (XGrammar) reads GBNF, its `llguidance` backend both.
///
/// ```
/// use tool_calling::grammar::{Dialect, Grammar, Scope};
/// use tool_calling::providers::GrammarServer;
/// let grammar = Grammar::new(Dialect::Gbnf, Scope::Call, "root ::= \"hi\"");
/// let fields = GrammarServer::LlamaCpp.request_fields(&grammar).unwrap();
/// assert_eq!(fields["grammar"], "root ::= \"hi\"");
/// let fields = GrammarServer::Vllm.request_fields(&grammar).unwrap();
/// assert_eq!(fields["structured_outputs"]["grammar"], "root ::= \"hi\"");
/// let lark = Grammar::new(Dialect::Lark, Scope::Call, "start: \"hi\"");
/// assert!(GrammarServer::LlamaCpp.request_fields(&lark).is_err(), "llama.cpp reads GBNF only");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrammarServer {
    /// vLLM's OpenAI-compatible server (0.12 and later: `structured_outputs`).
    Vllm,
    /// SGLang's OpenAI-compatible server.
    Sglang,
    /// llama.cpp's `llama-server`.
    LlamaCpp,
}

impl GrammarServer {
    /// The fields to add to a Chat Completions request body that send `grammar`, or why
    /// this server cannot take it.
    pub fn request_fields(self, grammar: &Grammar) -> Result<Map<String, Value>, String> {
        let text = grammar.text();
        let json_doc = || {
            grammar
                .to_json()
                .ok_or_else(|| format!("the {} grammar is not a JSON document", grammar.dialect()))
        };
        let value = match (self, grammar.dialect()) {
            (GrammarServer::Vllm, Dialect::Lark | Dialect::Gbnf) => {
                json!({"structured_outputs": {"grammar": text}})
            }
            (GrammarServer::Vllm, Dialect::JsonSchema) => {
                json!({"structured_outputs": {"json": json_doc()?}})
            }
            (GrammarServer::Vllm, Dialect::StructuralTag) => {
                json!({"structured_outputs": {"structural_tag": text}})
            }
            (GrammarServer::Sglang, Dialect::Lark | Dialect::Gbnf) => json!({"ebnf": text}),
            (GrammarServer::Sglang, Dialect::JsonSchema) => json!({"json_schema": text}),
            (GrammarServer::Sglang, Dialect::StructuralTag) => json!({"response_format": json_doc()?}),
            (GrammarServer::LlamaCpp, Dialect::Gbnf) => json!({"grammar": text}),
            (GrammarServer::LlamaCpp, Dialect::JsonSchema) => json!({"json_schema": json_doc()?}),
            (server, dialect) => return Err(format!("{server:?} takes no {dialect} grammar")),
        };
        match value {
            Value::Object(fields) => Ok(fields),
            _ => Err("not an object".into()),
        }
    }
}
