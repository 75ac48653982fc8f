//! The end of a block: its fields become a request (with an id, problems for the model,
//! and the `fire_and_forget` flag of `archery`), or a diagnostic for an empty or example
//! block; text skipped between fields is reported.

use super::fields::{Field, ValueKind};
use super::markers::Marker;
use super::scanner::Sink;
use super::visible::VisibleText;
use crate::protocol::ids::IdAssigner;
use crate::request::{Args, RequestIdSource};
use crate::{Diagnostic, DiagnosticKind, ParsedToolRequest, Span};

pub(super) fn diag(
    src: &VisibleText<'_>,
    sink: &mut impl Sink,
    kind: DiagnosticKind,
    message: String,
    start: usize,
    end: usize,
) {
    let from = src.original_start(start);
    sink.diagnostic(Diagnostic::new(kind, message, Span::new(from, src.original_end(end).max(from))));
}

fn preview(text: &str) -> String {
    const MAX: usize = 40;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or(text)),
        None => text.to_string(),
    }
}

pub(super) fn stray(src: &VisibleText<'_>, sink: &mut impl Sink, from: usize, to: usize) {
    let skipped = src.text().get(from..to).unwrap_or("");
    let trimmed = skipped.trim_end();
    if trimmed.is_empty() {
        return;
    }
    let end = from + trimmed.len();
    let message = if trimmed.ends_with(':') || trimmed.ends_with('：') {
        format!("skipped `{}`: a key with no value (a value opens with 「始」)", preview(trimmed))
    } else {
        format!("skipped text between fields that is not a field: `{}`", preview(trimmed))
    };
    diag(src, sink, DiagnosticKind::StrayText, message, from, end);
}

/// Turns a block's fields into a request (or into a diagnostic, for empty and example
/// blocks).
pub(super) fn finish_block(
    ids: &mut IdAssigner,
    src: &VisibleText<'_>,
    sink: &mut impl Sink,
    start: Marker,
    end: usize,
    fields: &mut Vec<Field>,
) {
    let text = src.text();
    let span = Span::new(src.original_start(start.start), src.original_end(end));
    if fields.is_empty() {
        diag(
            src,
            sink,
            DiagnosticKind::EmptyBlock,
            "request block holds no field, so it is not a request".to_string(),
            start.start,
            end,
        );
        sink.discarded(span);
        return;
    }
    if fields.iter().any(|f| f.kind == ValueKind::Doc) {
        diag(
            src,
            sink,
            DiagnosticKind::ExampleBlock,
            "request block holds a documentation value (「始exp」): it is an example, not a request"
                .to_string(),
            start.start,
            end,
        );
        fields.clear();
        sink.discarded(span);
        return;
    }
    let mut tool_name: Option<String> = None;
    // `archery: true` or `no_reply` asks not to be waited for (the last `archery` wins).
    let mut fire_and_forget = false;
    let mut request_id: Option<String> = None;
    let mut args = Args::with_capacity(fields.len());
    let mut problems = Vec::new();
    for field in fields.drain(..) {
        let key = text.get(field.key.0..field.key.1).unwrap_or("");
        if !field.closed {
            let closer = if field.kind == ValueKind::Escaped { "「末ESCAPE」" } else { "「末」" };
            problems.push(format!("the value of `{key}` is not closed: end it with {closer}"));
            diag(
                src,
                sink,
                DiagnosticKind::UnclosedValue,
                format!("value of `{key}` is not closed with {closer}"),
                field.start,
                field.end,
            );
        }
        let duplicate = if key.eq_ignore_ascii_case("tool_name") {
            tool_name.replace(field.value).is_some()
        } else if key.eq_ignore_ascii_case("request_id") {
            // An empty id counts as absent: it neither sets nor erases one.
            !field.value.is_empty() && request_id.replace(field.value).is_some()
        } else {
            if key == "archery" {
                let v = field.value.trim();
                fire_and_forget = v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("no_reply");
            }
            // The last occurrence wins, at its own position: move it to the end.
            let (index, old) = args.insert_full(key.to_string(), serde_json::Value::String(field.value));
            if old.is_some() {
                args.move_index(index, args.len() - 1);
            }
            old.is_some()
        };
        if duplicate {
            diag(
                src,
                sink,
                DiagnosticKind::DuplicateKey,
                format!("key `{key}` appears more than once; the last value is used"),
                field.start,
                field.end,
            );
        }
    }
    let tool_name = tool_name.unwrap_or_default();
    if tool_name.is_empty() {
        problems.insert(0, "the request has no tool_name: add tool_name:「始」…「末」".to_string());
        diag(
            src,
            sink,
            DiagnosticKind::MissingToolName,
            "request block has no tool_name".to_string(),
            start.start,
            start.end,
        );
    }
    let (request_id, id_source) = match request_id {
        Some(id) => (id, RequestIdSource::Model),
        None => (String::new(), RequestIdSource::Assigned),
    };
    let mut request = ParsedToolRequest {
        request_id,
        id_source,
        tool_name,
        args,
        span,
        complete: problems.is_empty(),
        problems,
        fire_and_forget,
        text_args: indexmap::IndexMap::new(),
    };
    ids.assign(&mut request);
    sink.request(request);
}

/// The diagnostic for reasoning that is never closed (the opening tag at `start..end`).
pub(crate) fn unclosed_reasoning(start: usize, end: usize) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::UnclosedReasoning,
        "reasoning block is never closed: everything after it is hidden",
        Span::new(start, end),
    )
}
