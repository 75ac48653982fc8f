//! Deterministic VCP inputs for benchmarks (and, if wanted, for tests).
//!
//! Nothing is read from disk: every input is generated from a fixed seed with a tiny
//! PRNG, so the same call always yields the same text on every machine. Use it from a
//! bench or an integration test with
//!
//! ```ignore
//! #[path = "../benches/support/inputs.rs"] // from tests/; "support/inputs.rs" from benches/
//! mod inputs;
//! ```
//!
//! Two shapes of VCP reply:
//! - [`prose_with_requests`]: multi-paragraph markdown-ish English prose (headings, lists,
//!   inline code, fenced code, `a < b` comparisons) with exactly [`PROSE_REQUESTS`] request
//!   blocks spread through it, none inside a fence;
//! - [`requests_only`]: request blocks back to back, 4–5 fields each with one multi-line
//!   value.
//!
//! Every generated block is complete and well formed (`tool_name` first, every value
//! closed, END marker present), and the prose never contains marker text, value
//! brackets or reasoning tags, so a correct parser finds exactly the blocks generated.
//!
//! The same two shapes in the Hermes format (`<tool_call>` JSON `</tool_call>`), for the
//! open-model formats: [`hermes_prose_with_calls`] and [`hermes_calls_only`].
//!
//! `cargo run -p tool-calling-benches --bin bench_inputs -- DIR` writes them to files, for
//! tools that read a file (`tester bench`).
//!
//! For the provider-stream benches: OpenAI Chat Completions chunks ([`openai_chunk`],
//! [`openai_end`]) and a stream of calls ([`openai_calls`]).

#![allow(dead_code)]

/// The START marker.
pub const START: &str = "<<<[TOOL_REQUEST]>>>";
/// The END marker.
pub const END: &str = "<<<[END_TOOL_REQUEST]>>>";
/// How many request blocks [`prose_with_requests`] puts in its text.
pub const PROSE_REQUESTS: usize = 3;

/// SplitMix64: tiny, fast, and good enough to vary words.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// `true` with probability `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// A random element of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const NOUNS: &[&str] = &[
    "file",
    "directory",
    "request",
    "parser",
    "model",
    "reply",
    "tool",
    "server",
    "client",
    "buffer",
    "token",
    "session",
    "answer",
    "result",
    "user",
    "value",
    "marker",
    "field",
    "error",
    "function",
    "module",
    "test",
    "budget",
    "cache",
    "queue",
    "thread",
    "record",
    "document",
    "section",
    "summary",
    "question",
    "option",
    "path",
    "index",
    "limit",
    "note",
];
const VERBS: &[&str] = &[
    "reads", "writes", "returns", "checks", "parses", "lists", "sends", "keeps", "drops", "opens", "closes",
    "updates", "finds", "loads", "stores", "counts", "splits", "joins", "follows", "explains", "needs",
    "handles", "ignores", "reports",
];
const ADJECTIVES: &[&str] = &[
    "small", "large", "new", "old", "empty", "full", "quick", "careful", "simple", "long", "short", "broken",
    "complete", "partial", "local", "remote", "first", "last", "next", "previous", "safe", "strict",
    "tolerant", "plain",
];
const ADVERBS: &[&str] = &[
    "quickly",
    "carefully",
    "usually",
    "then",
    "again",
    "always",
    "rarely",
    "often",
    "already",
    "still",
    "only",
    "also",
];
const CONNECTORS: &[&str] =
    &["and", "but", "so", "because", "while", "although", "when", "before", "after", "unless"];
const OPENERS: &[&str] = &[
    "First,",
    "Then",
    "After that,",
    "In short,",
    "Note that",
    "Of course,",
    "However,",
    "For example,",
    "Still,",
    "Finally,",
    "Meanwhile,",
    "As a result,",
];
const CODE_WORDS: &[&str] = &[
    "`Vec<u8>`",
    "`parse()`",
    "`max_len`",
    "`src/lib.rs`",
    "`--verbose`",
    "`Option<T>`",
    "`README.md`",
    "`cargo test`",
    "`i < n`",
    "`HashMap<K, V>`",
];
const COMPARISONS: &[&str] = &[
    "if a < b the loop stops",
    "as long as x < y holds",
    "whenever 3 < n",
    "so that len < cap",
    "where 0 <= i < n",
    "since cost(n) < 2 * cost(n / 2)",
    "unless a < b < c",
    "(the usual <= check)",
];
const HEADINGS: &[&str] = &[
    "Overview",
    "What happened",
    "Next steps",
    "Details",
    "Summary",
    "Plan",
    "Notes",
    "Findings",
    "Open questions",
    "Results",
];

fn word(rng: &mut Rng) -> &'static str {
    match rng.below(10) {
        0..=3 => rng.pick(NOUNS),
        4..=6 => rng.pick(VERBS),
        7..=8 => rng.pick(ADJECTIVES),
        _ => rng.pick(ADVERBS),
    }
}

fn capitalized(s: &str, out: &mut String) {
    let mut chars = s.chars();
    if let Some(first) = chars.next() {
        out.extend(first.to_uppercase());
        out.push_str(chars.as_str());
    }
}

/// One sentence, ending with punctuation and a space.
fn sentence(rng: &mut Rng, out: &mut String) {
    if rng.one_in(4) {
        out.push_str(rng.pick(OPENERS));
        out.push_str(" the ");
    } else {
        capitalized("the", out);
        out.push(' ');
    }
    out.push_str(rng.pick(ADJECTIVES));
    out.push(' ');
    out.push_str(rng.pick(NOUNS));
    out.push(' ');
    out.push_str(rng.pick(VERBS));
    for i in 0..rng.range(4, 14) {
        out.push(' ');
        match rng.below(40) {
            0 => out.push_str(rng.pick(CODE_WORDS)),
            1 => out.push_str(rng.pick(COMPARISONS)),
            2 => {
                out.push_str(rng.pick(CONNECTORS));
            }
            3 if i > 1 => {
                out.push_str(word(rng));
                out.push(',');
            }
            4 => {
                out.push('"');
                out.push_str(word(rng));
                out.push('"');
            }
            5 => {
                out.push('(');
                out.push_str(word(rng));
                out.push(' ');
                out.push_str(word(rng));
                out.push(')');
            }
            6 => out.push_str(&rng.range(2, 4096).to_string()),
            7 => out.push('—'),
            _ => out.push_str(word(rng)),
        }
    }
    out.push_str(match rng.below(12) {
        0 => "? ",
        1 => "! ",
        2 => "… ",
        3 => ": ",
        _ => ". ",
    });
}

/// A paragraph, heading, list or fenced code block, ending with a blank line.
fn paragraph(rng: &mut Rng, out: &mut String) {
    match rng.below(20) {
        0 | 1 => {
            out.push_str(if rng.one_in(3) { "# " } else { "## " });
            out.push_str(rng.pick(HEADINGS));
            out.push_str("\n\n");
        }
        2 | 3 => {
            let numbered = rng.one_in(2);
            for i in 1..=rng.range(2, 6) {
                if numbered {
                    out.push_str(&format!("{i}. "));
                } else {
                    out.push_str("- ");
                }
                sentence(rng, out);
                out.pop();
                out.push('\n');
            }
            out.push('\n');
        }
        4 => {
            // A closed fence (exercises fence detection under `skip_fenced`).
            out.push_str(rng.pick(&["```rust\n", "```\n", "```json\n", "````text\n"]));
            let closer = if out.ends_with("````text\n") { "````\n\n" } else { "```\n\n" };
            for _ in 0..rng.range(2, 8) {
                out.push_str(rng.pick(&[
                    "let total = items.iter().map(|x| x.len()).sum::<usize>();\n",
                    "if a < b { return Err(\"too small\".into()); }\n",
                    "{\"path\": \"src/tools\", \"recursive\": false}\n",
                    "for (i, line) in text.lines().enumerate() {\n",
                    "}\n",
                    "    println!(\"{i}: {line}\");\n",
                    "// TODO: handle the empty case\n",
                ]));
            }
            out.push_str(closer);
        }
        5 => {
            out.push_str("> ");
            sentence(rng, out);
            out.pop();
            out.push_str("\n\n");
        }
        _ => {
            for _ in 0..rng.range(2, 7) {
                sentence(rng, out);
            }
            out.pop();
            out.push_str("\n\n");
        }
    }
}

const TOOLS: &[(&str, &[&str])] = &[
    ("directory-tree", &["path", "recursive", "max_depth", "pattern"]),
    ("FileOperator", &["command", "filePath", "encoding", "overwrite"]),
    ("web_search", &["query", "count", "language", "safe_search"]),
    ("notes_append", &["title", "tags", "priority", "due"]),
    ("SciCalculator", &["expression", "precision", "mode", "units"]),
];
const MULTILINE_KEYS: &[&str] = &["content", "text", "body", "script"];

/// One complete request block: `tool_name`, 3–4 short fields, one multi-line value.
pub fn request_block(rng: &mut Rng, out: &mut String) {
    let (tool, keys) = TOOLS[rng.below(TOOLS.len())];
    let short_fields = rng.range(3, 4);
    let multiline_at = rng.below(short_fields + 1);
    out.push_str(START);
    out.push('\n');
    out.push_str("tool_name:「始」");
    out.push_str(tool);
    out.push_str("「末」");
    let mut short = 0;
    for i in 0..=short_fields {
        out.push_str(",\n");
        if i == multiline_at {
            out.push_str(rng.pick(MULTILINE_KEYS));
            out.push_str(":「始」");
            for line in 0..rng.range(2, 6) {
                if line > 0 {
                    out.push('\n');
                }
                let mut text = String::new();
                sentence(rng, &mut text);
                out.push_str(text.trim_end());
            }
            out.push_str("「末」");
        } else {
            out.push_str(keys[short]);
            short += 1;
            out.push_str(":「始」");
            match rng.below(4) {
                0 => out.push_str(&rng.range(0, 100_000).to_string()),
                1 => out.push_str(rng.pick(&["true", "false", "no_reply"])),
                2 => {
                    out.push_str("src/");
                    out.push_str(rng.pick(NOUNS));
                    out.push('/');
                    out.push_str(rng.pick(NOUNS));
                    out.push_str(".rs");
                }
                _ => {
                    out.push_str(rng.pick(ADJECTIVES));
                    out.push(' ');
                    out.push_str(rng.pick(NOUNS));
                }
            }
            out.push_str("「末」");
        }
    }
    out.push('\n');
    out.push_str(END);
    out.push('\n');
}

/// About `size` bytes (never more, unless `size` is smaller than the three blocks and a
/// few paragraphs) of prose with exactly [`PROSE_REQUESTS`] request blocks, placed near
/// 1/4, 1/2 and 3/4 of the text, each between paragraphs.
pub fn prose_with_requests(size: usize) -> String {
    let mut rng = Rng::new(0x5EED_F00D_0001);
    let mut out = String::with_capacity(size + 4096);
    let mut paragraph_buf = String::new();
    let mut inserted = 0;
    loop {
        if inserted < PROSE_REQUESTS && out.len() >= (inserted + 1) * size / (PROSE_REQUESTS + 1) {
            request_block(&mut rng, &mut out);
            out.push('\n');
            inserted += 1;
            continue;
        }
        paragraph_buf.clear();
        paragraph(&mut rng, &mut paragraph_buf);
        if inserted == PROSE_REQUESTS && out.len() + paragraph_buf.len() > size {
            break;
        }
        out.push_str(&paragraph_buf);
    }
    out
}

/// Request blocks back to back, as many as fit in `size` bytes (at least one).
pub fn requests_only(size: usize) -> String {
    let mut rng = Rng::new(0xB10C_5EED);
    let mut out = String::with_capacity(size + 4096);
    let mut block = String::new();
    loop {
        block.clear();
        request_block(&mut rng, &mut block);
        if !out.is_empty() && out.len() + block.len() > size {
            break;
        }
        out.push_str(&block);
    }
    out
}

/// How many START markers `text` holds (the number of blocks a generator wrote).
pub fn count_blocks(text: &str) -> usize {
    text.matches(START).count()
}

/// The prose paragraph of the Hermes inputs: English and Chinese, an HTML tag, backticks.
const HERMES_PARAGRAPH: &str = "The quick brown fox jumps over the lazy dog. 我们先看看目录结构，然后再决定下一步。 Some more <b>html</b> and `code` here.\n";

/// Hermes call number `i`: `<tool_call>`, a JSON object with a name and three arguments,
/// `</tool_call>`, each on its own line.
pub fn hermes_call(i: usize) -> String {
    format!(
        "<tool_call>\n{{\"name\": \"directory_tree\", \"arguments\": {{\"command\": \"listFiles\", \"path\": \"src/tools/{i}\", \"recursive\": false}}}}\n</tool_call>\n"
    )
}

/// At least `size` bytes of prose (the paragraph above, repeated) with three Hermes
/// calls: after the first third, after the second, and at the end.
pub fn hermes_prose_with_calls(size: usize) -> String {
    let mut prose = String::new();
    while prose.len() < size {
        prose.push_str(HERMES_PARAGRAPH);
    }
    let chars: Vec<char> = prose.chars().collect();
    let third = chars.len() / 3;
    let part = |a: usize, b: usize| chars[a..b].iter().collect::<String>();
    format!(
        "{}{}{}{}{}{}",
        part(0, third),
        hermes_call(1),
        part(third, 2 * third),
        hermes_call(2),
        part(2 * third, chars.len()),
        hermes_call(3)
    )
}

/// Hermes calls back to back, until the text holds at least `size` bytes.
pub fn hermes_calls_only(size: usize) -> String {
    let mut dense = String::new();
    let mut i = 0;
    while dense.len() < size {
        dense.push_str(&hermes_call(i));
        i += 1;
    }
    dense
}

/// At least `size` bytes of prose (the Hermes paragraph, repeated) with three calls
/// written by `call` (given 1, 2, 3): after the first third, after the second, and at
/// the end.
pub fn prose_with(size: usize, call: &dyn Fn(usize) -> String) -> String {
    let mut prose = String::new();
    while prose.len() < size {
        prose.push_str(HERMES_PARAGRAPH);
    }
    let chars: Vec<char> = prose.chars().collect();
    let third = chars.len() / 3;
    let part = |a: usize, b: usize| chars[a..b].iter().collect::<String>();
    format!(
        "{}{}\n{}{}\n{}{}",
        part(0, third),
        call(1),
        part(third, 2 * third),
        call(2),
        part(2 * third, chars.len()),
        call(3)
    )
}

/// Calls written by `call` (given 0, 1, …) back to back, one per line, until the text
/// holds at least `size` bytes; and how many.
pub fn calls_with(size: usize, call: &dyn Fn(usize) -> String) -> (String, usize) {
    let mut dense = String::new();
    let mut i = 0;
    while dense.len() < size {
        dense.push_str(&call(i));
        dense.push('\n');
        i += 1;
    }
    (dense, i)
}

/// One OpenAI Chat Completions stream chunk (`data:` line and blank line) carrying
/// `delta` (a JSON object).
pub fn openai_chunk(delta: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\
         \"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
    )
}

/// The last chunks of an OpenAI Chat Completions stream: the finish `reason`, then
/// `[DONE]`.
pub fn openai_end(reason: &str) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\
         \"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{reason}\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

/// OpenAI Chat Completions chunks of calls appended to `out` until it holds about `size`
/// bytes, then the end (finish reason `tool_calls`); returns how many calls. Each call
/// (`search`, ids `call_0`, `call_1`, …) starts with a chunk of its id and name, then its
/// arguments `{"q": "…"}` arrive one piece per chunk: the opening, `fragments` times
/// `token` (JSON string content, no escapes needed), the closing.
pub fn openai_calls(out: &mut String, size: usize, fragments: usize, token: &str) -> usize {
    let mut calls = 0;
    while out.len() < size {
        out.push_str(&openai_chunk(&format!(
            "{{\"tool_calls\":[{{\"index\":{calls},\"id\":\"call_{calls}\",\"type\":\"function\",\
             \"function\":{{\"name\":\"search\",\"arguments\":\"\"}}}}]}}"
        )));
        out.push_str(&openai_chunk(&format!(
            "{{\"tool_calls\":[{{\"index\":{calls},\"function\":{{\"arguments\":\"{{\\\"q\\\": \\\"\"}}}}]}}"
        )));
        for _ in 0..fragments {
            out.push_str(&openai_chunk(&format!(
                "{{\"tool_calls\":[{{\"index\":{calls},\"function\":{{\"arguments\":\"{token}\"}}}}]}}"
            )));
        }
        out.push_str(&openai_chunk(&format!(
            "{{\"tool_calls\":[{{\"index\":{calls},\"function\":{{\"arguments\":\"\\\"}}\"}}}}]}}"
        )));
        calls += 1;
    }
    out.push_str(&openai_end("tool_calls"));
    calls
}

/// `text` in pieces of `size` bytes as a stream delivers it, each cut moved back to a
/// char boundary, every piece at least one char (so a piece may be longer than `size`
/// only when one char is).
pub fn char_pieces(text: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::with_capacity(text.len() / size.max(1) + 1);
    let mut rest = text;
    while let Some(first) = rest.chars().next() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut.max(first.len_utf8()));
        pieces.push(piece);
        rest = tail;
    }
    pieces
}
