//! The end of a block: its fields become a request (with an id, problems for the model,
//! and the `fire_and_forget` flag of `archery`), or a diagnostic for an empty or example
//! block; text skipped between fields is reported.

use std::borrow::Cow;
use std::collections::HashMap;

use super::fields::{Field, ValueKind, normalize};
use super::markers::Marker;
use super::scanner::Sink;
use super::view::{FieldView, RequestView};
use super::visible::VisibleText;
use super::{VcpLimits, VcpTemplates};
use crate::Span;
use crate::language::fill;
use crate::protocol::Diagnostic;
use crate::protocol::DiagnosticKind;
use crate::protocol::ids::IdAssigner;
use crate::request::RequestIdSource;

pub(super) fn diag<'i>(
    src: &VisibleText<'_>,
    sink: &mut impl Sink<'i>,
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

pub(super) fn stray<'i>(src: &VisibleText<'_>, sink: &mut impl Sink<'i>, from: usize, to: usize) {
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

/// Key → position in the argument list of its latest occurrence, for the rare block
/// with many keys: the usual few are found by a scan of the list itself. Keeps a block
/// of many repeated keys linear.
struct Latest<'k> {
    many: Option<HashMap<&'k str, usize>>,
}

impl<'k> Latest<'k> {
    /// Up to this many arguments, a repeated key is found by scanning them.
    const FEW: usize = 16;

    /// The position of the latest argument keyed `key` among `args`, and records that
    /// `key` is now at `position` (the next push).
    fn replace(
        &mut self,
        args: &[FieldView<'_>],
        key: &'k str,
        keys: impl Fn(usize) -> &'k str,
    ) -> Option<usize> {
        let position = args.len();
        if self.many.is_none() {
            if position < Self::FEW {
                return args.iter().rposition(|arg| arg.key == key);
            }
            // Past the few: every key so far, the later of two equal keys winning.
            self.many = Some((0..position).map(|i| (keys(i), i)).collect());
        }
        self.many.as_mut().and_then(|many| many.insert(key, position))
    }
}

/// The limits a block is finished under, and what its reading already dropped.
pub(super) struct BlockLimits {
    pub(super) limits: VcpLimits,
    /// Fields read past [`VcpLimits::max_fields`] and not kept.
    pub(super) dropped_fields: usize,
}

/// How many repeated keys of one block get a diagnostic each; the rest get one
/// diagnostic together, so that a block repeating a key a million times does not make a
/// million diagnostics.
const REPEATS_REPORTED: usize = 16;

/// Turns a block's fields into a request (or into a diagnostic, for empty and example
/// blocks). A key written twice keeps its last value, at the place of its last
/// occurrence; resolving that takes one pass over the fields.
#[allow(clippy::too_many_arguments)]
pub(super) fn finish_block<'i>(
    ids: &mut IdAssigner,
    templates: &VcpTemplates,
    limits: &BlockLimits,
    src: &VisibleText<'_>,
    sink: &mut impl Sink<'i>,
    start: Marker,
    end: usize,
    fields: &mut Vec<Field>,
) {
    let text = src.text();
    let input = sink.input();
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
    let max_value = limits.limits.max_value_bytes;
    let too_long = |field: &Field| field.value.1.saturating_sub(field.value.0) > max_value;
    // A value past the length limit is emptied (an empty piece where it began).
    let value_of = |field: &Field| {
        let end = if too_long(field) { field.value.0 } else { field.value.1 };
        normalize(src.piece(input, field.value.0, end), field.kind, src.cr_free())
    };
    // One pass: the arguments in order, diagnostics for unclosed values and repeated
    // keys, and where the tool name (and a non-empty request id, and `archery`) were
    // written last. A repeated key marks its earlier argument replaced; those are
    // removed at the end.
    let mut tool_name: Option<usize> = None;
    let mut request_id: Option<(usize, Cow<'i, str>)> = None;
    let mut archery: Option<usize> = None;
    // Every field but the tool name, as a rule.
    let mut args: Vec<FieldView<'i>> = Vec::with_capacity(fields.len().saturating_sub(1));
    // The field each argument came from (kept only once there are many arguments).
    let mut arg_fields: Vec<usize> = Vec::new();
    let mut latest = Latest { many: None };
    // Arguments a later one with the same key replaces (made at the first repeat).
    let mut replaced: Vec<bool> = Vec::new();
    let mut repeats = 0usize;
    let mut problems = Vec::new();
    if limits.dropped_fields > 0 {
        let limit = limits.limits.max_fields.to_string();
        problems.push(fill(&templates.too_many_fields, &[("limit", &limit)]));
        diag(
            src,
            sink,
            DiagnosticKind::LimitExceeded,
            format!(
                "request block has more than {limit} fields (the limit): the last {} were dropped",
                limits.dropped_fields
            ),
            start.start,
            end,
        );
    }
    for (index, field) in fields.iter().enumerate() {
        let key = text.get(field.key.0..field.key.1).unwrap_or("");
        if too_long(field) {
            let (bytes, limit) =
                (field.value.1.saturating_sub(field.value.0).to_string(), max_value.to_string());
            problems
                .push(fill(&templates.value_too_long, &[("key", key), ("bytes", &bytes), ("limit", &limit)]));
            diag(
                src,
                sink,
                DiagnosticKind::LimitExceeded,
                format!("value of `{key}` is {bytes} bytes, more than the limit of {limit}: it is left out"),
                field.start,
                field.end,
            );
        }
        if !field.closed {
            let closer = if field.kind == ValueKind::Escaped { "「末ESCAPE」" } else { "「末」" };
            problems.push(fill(&templates.unclosed_value, &[("key", key), ("closer", closer)]));
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
            tool_name.replace(index).is_some()
        } else if key.eq_ignore_ascii_case("request_id") {
            // An empty id counts as absent: it neither sets nor erases one.
            let id = value_of(field);
            !id.is_empty() && request_id.replace((index, id)).is_some()
        } else {
            if key == "archery" {
                archery = Some(index);
            }
            if args.len() + 1 >= Latest::FEW || !arg_fields.is_empty() {
                if arg_fields.is_empty() {
                    // Which field each argument so far came from: the arguments are the
                    // fields that are neither the tool name nor the request id.
                    arg_fields.extend(fields.iter().enumerate().take(index).filter_map(|(i, f)| {
                        let k = text.get(f.key.0..f.key.1).unwrap_or("");
                        (!(k.eq_ignore_ascii_case("tool_name") || k.eq_ignore_ascii_case("request_id")))
                            .then_some(i)
                    }));
                }
                arg_fields.push(index);
            }
            let key_of = |position: usize| {
                let field = arg_fields.get(position).and_then(|&i| fields.get(i));
                field.and_then(|f| text.get(f.key.0..f.key.1)).unwrap_or("")
            };
            let earlier = latest.replace(&args, key, key_of);
            args.push(FieldView {
                key: src.piece(input, field.key.0, field.key.1),
                value: value_of(field),
                span: Span::new(src.original_start(field.start), src.original_end(field.end)),
            });
            if let Some(earlier) = earlier {
                if replaced.is_empty() {
                    replaced.resize(fields.len(), false);
                }
                if let Some(flag) = replaced.get_mut(earlier) {
                    *flag = true;
                }
            }
            earlier.is_some()
        };
        if duplicate {
            repeats += 1;
            if repeats <= REPEATS_REPORTED {
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
    }
    if !replaced.is_empty() {
        let mut position = 0;
        args.retain(|_| {
            position += 1;
            !replaced.get(position - 1).copied().unwrap_or(false)
        });
    }
    if repeats > REPEATS_REPORTED {
        diag(
            src,
            sink,
            DiagnosticKind::DuplicateKey,
            format!(
                "{} more repeated keys in this block are not reported one by one; the last value of each is used",
                repeats - REPEATS_REPORTED
            ),
            start.start,
            end,
        );
    }
    // `archery: true` or `no_reply` asks not to be waited for (the last `archery` wins).
    let fire_and_forget = archery.and_then(|i| fields.get(i)).is_some_and(|field| {
        let value = value_of(field);
        let value = value.trim();
        value.eq_ignore_ascii_case("true") || value.eq_ignore_ascii_case("no_reply")
    });
    let tool_name = tool_name.and_then(|i| fields.get(i)).map(value_of).unwrap_or_default();
    fields.clear();
    if tool_name.is_empty() {
        problems.insert(0, templates.missing_tool_name.clone());
        diag(
            src,
            sink,
            DiagnosticKind::MissingToolName,
            "request block has no tool_name".to_string(),
            start.start,
            start.end,
        );
    }
    let assigned = ids.next_id(request_id.is_none());
    let (request_id, id_source) = match (request_id, assigned) {
        (Some((_, id)), _) => (id, RequestIdSource::Model),
        (None, id) => (Cow::Owned(id.unwrap_or_default()), RequestIdSource::Assigned),
    };
    sink.request(RequestView {
        request_id,
        id_source,
        tool_name,
        args,
        span,
        complete: problems.is_empty(),
        problems,
        fire_and_forget,
    });
}
