//! VCP's calls as a grammar: request blocks exactly as [`write_call`] writes them
//! (`tool_name` and `command` first, then the method's parameters in the order of its
//! schema, one field a line), with plain values that cannot close early and the
//! escaped form for string values that hold markers.
//!
//! Two things a model may write beyond what the writer writes, and two it may not, all
//! for small models, which write VCP worse than the JSON formats they were trained on:
//! - a line break before a value's closer (`10\n「末」`: values are trimmed, so it reads
//!   as `10`): after a value a small model wants to end the line, and the closer
//!   `「末」` is a rare run of byte tokens it seldom picks, so that without the line
//!   break it goes on writing digits (measured in docs/grammar.md);
//! - no `request_id` field: the parser names each request, and a model that may write
//!   an id writes one at length.
//!
//! A parameter named like a control key (`archery`, `ink`, `river`, `vref`) never
//! reaches its method as an argument under VCP: the grammar leaves out a method that
//! requires one, and the key where it is optional.
//!
//! [`write_call`]: super::VcpProtocol::write_call

use super::VcpOptions;
use super::routing::{CONTROL_KEYS, command_of};
use crate::grammar::{
    Builder, CharSet, Constraint, Dialect, Expr, Grammar, GrammarError, Pattern, Syntax, TextForm,
    ValueStyle, Values, reasoning_heads,
};
use crate::tools::ToolDefinition;

const START: &str = "<<<[TOOL_REQUEST]>>>";
const END: &str = "<<<[END_TOOL_REQUEST]>>>";

/// Text a value may hold whatever its form: no reasoning tag (reasoning is cut out of
/// values), no `\r` (`\r\n` reads as `\n`), no white space at either end (values are
/// trimmed).
fn value_patterns(options: &VcpOptions) -> Vec<Pattern> {
    let mut patterns = vec![
        Pattern::text("\r"),
        Pattern::new().then(CharSet::unicode_space()).at_start(),
        Pattern::new().then(CharSet::unicode_space()).at_end(),
    ];
    if !options.keep_reasoning {
        patterns.extend(reasoning_heads());
    }
    patterns
}

/// A plain value: `「始」…「末」`, holding no closer and no marker.
fn plain_value(options: &VcpOptions) -> TextForm {
    let mut patterns = value_patterns(options);
    patterns.extend([Pattern::text("「末」"), Pattern::text(START), Pattern::text(END)]);
    TextForm {
        text_name: "PLAIN_TEXT",
        value_name: "PLAIN_VALUE",
        open: "「始」".into(),
        avoid: patterns,
        close: "「末」".into(),
    }
}

/// An escaped value: `「始ESCAPE」…「末ESCAPE」`, holding no escaped opener or closer in
/// any form and no escaped marker (those would be rewritten).
fn escaped_value(options: &VcpOptions) -> TextForm {
    let bracket = |open: bool| CharSet::of(if open { "「{" } else { "」}" });
    let escape_form = |word: &str| {
        Pattern::new().then(bracket(true)).then_text(word).then_any_case("escape").then(bracket(false))
    };
    let mut patterns = value_patterns(options);
    patterns.extend([
        escape_form("始"),
        escape_form("末"),
        Pattern::text("<<<[TOOL_REQUEST_ESCAPE]>>>"),
        Pattern::text("<<<[END_TOOL_REQUEST_ESCAPE]>>>"),
    ]);
    TextForm {
        text_name: "ESCAPED_TEXT",
        value_name: "ESCAPED_VALUE",
        open: "「始ESCAPE」".into(),
        avoid: patterns,
        close: "「末ESCAPE」".into(),
    }
}

pub(crate) fn grammar(
    options: &VcpOptions,
    id: &str,
    tools: &[ToolDefinition],
    constraint: &Constraint,
) -> Result<Grammar, GrammarError> {
    let (dialect, scope) = (constraint.dialect, constraint.scope);
    let unsupported = || GrammarError::Unsupported { protocol: id.to_string(), dialect, scope };
    // Fuzzy markers make too many texts markers to list; JSON dialects need JSON calls.
    if options.fuzzy_markers || matches!(dialect, Dialect::JsonSchema | Dialect::StructuralTag) {
        return Err(unsupported());
    }
    let mut b = Builder::new(constraint);
    if options.starts_in_reasoning && !options.keep_reasoning {
        b.opened_reasoning = Some("</think>");
    }
    let style = ValueStyle {
        string_escapes: "<「".into(),
        text: vec![plain_value(options), escaped_value(options)],
        open: "「始」".into(),
        close: "「末」".into(),
        slack: Some("\n".into()),
    };

    let mut calls = Vec::new();
    for tool in tools {
        for method in &tool.methods {
            let full_name = method.full_name(&tool.tool_id);
            let parameters = crate::grammar::properties(&method.parameters);
            // A parameter named like a control key never reaches the method as an
            // argument: a method that requires one cannot be called validly, and an
            // optional one is left out.
            let control = |key: &str| CONTROL_KEYS.contains(&key);
            if parameters.iter().any(|(key, _, required)| *required && control(key)) {
                continue;
            }
            let mut values = Values::new(&mut b, style.clone(), &full_name, &method.parameters);
            let mut members = Vec::new();
            for (key, schema, required) in parameters.into_iter().filter(|(key, ..)| !control(key)) {
                let value = values.text(schema)?;
                members.push((Expr::seq([Expr::lit(format!(",\n{key}:")), value]), required));
            }
            let fields = values.member_list(members, Expr::lit(""));
            // A method named `""` is the tool itself: its requests name no command.
            let head = match command_of(&method.name, &method.protocol_config) {
                "" => format!("\ntool_name:「始」{}「末」", tool.tool_id),
                command => {
                    format!("\ntool_name:「始」{}「末」,\ncommand:「始」{command}「末」", tool.tool_id)
                }
            };
            let body = Expr::seq([Expr::lit(head), fields, Expr::lit(format!("\n{END}"))]);
            calls.push(b.rule(&full_name, body));
        }
    }
    if calls.is_empty() {
        return Err(GrammarError::NoMethods);
    }
    let call = b.rule("request", Expr::alt(calls));
    // No VCP marker at all in free text: not the experimental request's, and none of
    // the result, definition or end markers a small model imitates in its answer.
    let mut avoid = vec![Pattern::text("<<<[")];
    if options.skip_fenced {
        avoid.push(Pattern::text("```"));
    }
    let syntax = Syntax { avoid, ..Syntax::new(id, START, call, !options.keep_reasoning) };
    syntax.grammar(b, constraint)
}
