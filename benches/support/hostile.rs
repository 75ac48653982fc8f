//! Replies a hostile (or broken) model could write to make a VCP parser slow: each
//! family repeats one shape to about `size` bytes. Shared by the `adversarial` bench
//! group and the tests that parse them.

#![allow(dead_code)]

use tool_calling::protocol::vcp::{VcpLimits, VcpOptions};

const START: &str = "<<<[TOOL_REQUEST]>>>";
const END: &str = "<<<[END_TOOL_REQUEST]>>>";

/// `piece` repeated until the text reaches `size` bytes (after `head`, before `tail`).
fn repeat(head: &str, piece: &str, tail: &str, size: usize) -> String {
    let mut out = String::with_capacity(size + head.len() + tail.len() + piece.len());
    out.push_str(head);
    while out.len() + piece.len() <= size {
        out.push_str(piece);
    }
    out.push_str(tail);
    out
}

/// One family: its name, the parser options it needs, and its text at `size` bytes.
pub struct Family {
    pub name: &'static str,
    pub options: VcpOptions,
    pub make: fn(usize) -> String,
}

/// The parser with no limits: these families measure the parser's own cost, so nothing
/// may be cut short by a limit.
fn plain() -> VcpOptions {
    VcpOptions::default().limits(VcpLimits::none())
}

/// Every family.
pub fn families() -> Vec<Family> {
    let family = |name, options, make| Family { name, options, make };
    vec![
        family("complete_blocks", plain(), |n| {
            repeat("", &format!("{START}\ntool_name:「始」t「末」,\na:「始」1「末」\n{END}\n"), "", n)
        }),
        family("duplicate_keys", plain(), |n| {
            // One block: 4,096 keys, each written again and again.
            let mut out = format!("{START}\ntool_name:「始」t「末」");
            let mut i = 0usize;
            while out.len() < n {
                out.push_str(&format!(",\nk{}:「始」v{i}「末」", i % 4096));
                i += 1;
            }
            out.push_str(&format!("\n{END}"));
            out
        }),
        family("distinct_keys", plain(), |n| {
            let mut out = format!("{START}\ntool_name:「始」t「末」");
            let mut i = 0usize;
            while out.len() < n {
                out.push_str(&format!(",\nk{i}:「始」v「末」"));
                i += 1;
            }
            out.push_str(&format!("\n{END}"));
            out
        }),
        family("unclosed_starts", plain(), |n| repeat("", &format!("{START}\n"), "", n)),
        family("unclosed_starts_fuzzy", plain().fuzzy_markers(true), |n| {
            repeat("", "<<[TOOL_REQUEST]>\n", "", n)
        }),
        family("unclosed_values", plain(), |n| repeat("", &format!("{START}\nk:「始」value\n"), "", n)),
        family("one_unclosed_value", plain(), |n| {
            repeat(&format!("{START}\ntool_name:「始」t「末」,\nk:「始」"), "末 「末 末」x 」 ", "", n)
        }),
        family("unclosed_escaped_values", plain(), |n| {
            repeat("", &format!("{START}\nk:「始ESCAPE」v {END} 「末」 "), "", n)
        }),
        family("escaped_value_heads", plain(), |n| {
            repeat(&format!("{START}\n"), "k:「始ESCAPE」「始ESCAPE」v「末」,\n", "", n)
        }),
        family("unclosed_reasoning", plain(), |n| repeat("", "<think>", "", n)),
        family("unclosed_reasoning_blocks", plain(), |n| {
            repeat("", &format!("<think>{START}\nk:「始」v「末」\n"), "", n)
        }),
        family("reasoning_pairs", plain(), |n| repeat("", "<think>x</think>", "", n)),
        family("reasoning_in_values", plain(), |n| {
            repeat(&format!("{START}\nk:「始」"), "a<think>b</think>", "「末」", n)
        }),
        family("fence_lines", plain().skip_fenced(true), |n| {
            repeat("", &format!("```\n{START}\n```\n"), "", n)
        }),
        family("open_fence", plain().skip_fenced(true), |n| {
            repeat("```rust\n", &format!("{START}\nk:「始」v「末」\n"), "", n)
        }),
        family("lt_runs_fuzzy", plain().fuzzy_markers(true), |n| repeat("", "<", "", n)),
        family("lt_runs_marker_fuzzy", plain().fuzzy_markers(true), |n| {
            repeat("", &format!("{}[TOOL_REQUEST", "<".repeat(200)), "", n)
        }),
        family("gt_runs_fuzzy", plain().fuzzy_markers(true), |n| {
            repeat(&format!("{START}\nk:「始」v「末」\n<<[END_TOOL_REQUEST]"), ">", "", n)
        }),
        family("huge_key", plain(), |n| repeat(&format!("{START}\n"), "k", ":「始」v「末」", n)),
        family("bare_separators", plain(), |n| repeat(&format!("{START}\n"), "k: ", "", n)),
        family("bare_openers", plain(), |n| repeat(&format!("{START}\n"), "「始」", "", n)),
        family("crlf_values", plain(), |n| repeat(&format!("{START}\nk:「始」"), "a\r\n", "「末」", n)),
    ]
}
