//! The sentences the executor and the engine write into error results for the model.

use crate::Language;
use crate::language::{fill, quoted_list};
use crate::tools::{ArgumentError, ArgumentErrors};

/// What the executor (and the engine around it) tells the model when a call does not
/// run or fails for a reason of the executor's own: an unknown name, a switched-off
/// method, a refused policy, a time limit, a panic, bad arguments. Built in English and
/// Chinese; replace any field to change what the model reads. What a tool returns, or
/// the text of its own errors, is passed on as it is.
///
/// Each field is a template whose blanks, in braces, are listed in its documentation.
///
/// ```
/// use tool_calling::Language;
/// use tool_calling::exec::{ExecutorMessages, ExecutorOptions};
///
/// let mut options = ExecutorOptions::default();
/// options.messages = ExecutorMessages::for_language(Language::Zh);
/// options.messages.timed_out = "`{method}` needed more than {ms} ms; try a smaller input".into();
/// assert!(options.messages.switched_off.contains("{method}"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecutorMessages {
    /// A request the parser found damaged, not run. Blank: `{problems}`, what the
    /// protocol says is wrong, joined with `problem_separator`. A problem is a clause
    /// with no closing full stop, which may say how to mend its own part ("end it with
    /// 「末」"); this template ends the sentence and gives the one advice to send the
    /// request again.
    pub not_run_incomplete: String,
    /// Joins the problems of one request.
    pub problem_separator: String,
    /// The cycle was cancelled before the call began. Blank: `{method}`.
    pub cancelled_before_start: String,
    /// The cycle was cancelled while the call ran. Blank: `{method}`.
    pub cancelled_while_running: String,
    /// A request that names nothing to run.
    pub nothing_to_run: String,
    /// A method removed from the registry while the cycle ran.
    pub no_longer_registered: String,
    /// An unknown name with no registered name close to it. Blank: `{name}`.
    pub unknown_method: String,
    /// An unknown name, with the closest registered names. Blanks: `{name}`,
    /// `{suggestions}`.
    pub unknown_method_suggest: String,
    /// A method marked internal. Blank: `{method}`.
    pub not_callable: String,
    /// A method switched off for the agent. Blank: `{method}`.
    pub switched_off: String,
    /// Refused by the security policy. Blanks: `{method}`, `{reason}` (the policy's).
    pub refused_by_policy: String,
    /// The confirmation callback said no. Blank: `{method}`.
    pub not_approved: String,
    /// No Tokio runtime to run on. Blank: `{method}`.
    pub no_runtime: String,
    /// The call ran past its time limit. Blanks: `{method}`, `{ms}`.
    pub timed_out: String,
    /// The tool panicked. Blanks: `{method}`, `{message}` (the panic's).
    pub panicked: String,
    /// The tool's task was stopped from outside. Blank: `{method}`.
    pub stopped: String,
    /// The immediate result of a fire-and-forget request.
    pub started_in_background: String,
    /// A fire-and-forget request with no runtime to start it on.
    pub background_no_runtime: String,
    /// A streamed cycle that ended before the call finished.
    pub stream_ended: String,
    /// The problem of a request still open when the reading of a streamed reply was
    /// cut (a broken stream, a cancellation, the turn limit): it is not run. A clause
    /// put in `not_run_incomplete`, which gives the advice.
    pub reply_cut: String,
    /// The arguments failed validation. Blank: `{errors}`, each error below, joined
    /// with `problem_separator`.
    pub invalid_arguments: String,
    /// A required parameter was not given. Blank: `{parameter}`.
    pub missing_parameter: String,
    /// A required field inside a parameter was not given. Blanks: `{parameter}`,
    /// `{location}` (empty, or `location`), `{field}`.
    pub missing_field: String,
    /// A parameter broke a schema rule. Blanks: `{parameter}`, `{rule}` (the JSON
    /// Schema keyword), `{location}` (empty, or `location`), `{detail}` (the
    /// validator's words).
    pub invalid_parameter: String,
    /// Where inside a parameter the problem is. Blank: `{path}`.
    pub location: String,
    /// The arguments as a whole broke a schema rule. Blanks: `{rule}`, `{detail}`.
    pub invalid_whole: String,
    /// Ends a result cut at `ExecutorOptions::max_result_bytes`. Blank: `{bytes}`, how
    /// many bytes were cut.
    pub result_cut: String,
    /// Between the names of a list but the last two.
    pub list_separator: String,
    /// Between the last two names of a list.
    pub list_or: String,
}

impl Default for ExecutorMessages {
    fn default() -> Self {
        Self::for_language(Language::En)
    }
}

impl ExecutorMessages {
    /// The built-in messages of `language`.
    pub fn for_language(language: Language) -> Self {
        let words = |s: &str| s.to_string();
        match language {
            Language::Zh => ExecutorMessages {
                not_run_incomplete: words("未执行：{problems}。请修正后重新发送该请求。"),
                problem_separator: words("；"),
                cancelled_before_start: words("`{method}` 运行前本轮已被取消"),
                cancelled_while_running: words("`{method}` 完成前本轮已被取消"),
                nothing_to_run: words("该请求没有指明要运行的内容"),
                no_longer_registered: words("该方法已不再注册"),
                unknown_method: words("没有名为 `{name}` 的工具方法；请使用与列表中完全一致的工具名"),
                unknown_method_suggest: words("没有名为 `{name}` 的工具方法；你是想调用 {suggestions} 吗？"),
                not_callable: words("`{method}` 不允许由模型调用"),
                switched_off: words("`{method}` 已对当前智能体关闭；请不要再调用它"),
                refused_by_policy: words("`{method}` 被安全策略拒绝：{reason}"),
                not_approved: words("未获授权：对 `{method}` 的调用未被批准"),
                no_runtime: words("`{method}` 未执行：执行器需要 Tokio 运行时（并启用计时器）"),
                timed_out: words("`{method}` 未能在 {ms} 毫秒内完成"),
                panicked: words("`{method}` 意外失败（发生 panic：{message}）"),
                stopped: words("`{method}` 意外失败（任务被中止）"),
                started_in_background: words("已在后台启动（不需要回复）；只有失败时才会报告"),
                background_no_runtime: words("未执行：后台调用需要 Tokio 运行时"),
                stream_ended: words("未执行：流式回合在该调用完成前结束"),
                reply_cut: words("回复在此请求结束之前被截断"),
                invalid_arguments: words("参数无效：{errors}"),
                missing_parameter: words("参数 `{parameter}` 是必填的，但没有给出"),
                missing_field: words("参数 `{parameter}` 缺少必填的字段：{location}`{field}`"),
                invalid_parameter: words("参数 `{parameter}` 不符合规则 {rule}：{location}{detail}"),
                location: words("在 `{path}` 处，"),
                invalid_whole: words("参数整体不符合规则 {rule}：{detail}"),
                result_cut: words("\n[……结果过长，其余 {bytes} 字节已截去]"),
                list_separator: words("、"),
                list_or: words(" 或 "),
            },
            _ => ExecutorMessages {
                not_run_incomplete: words("Not run: {problems}. Send the request again with this fixed."),
                problem_separator: words("; "),
                cancelled_before_start: words("the cycle was cancelled before `{method}` ran"),
                cancelled_while_running: words("the cycle was cancelled before `{method}` finished"),
                nothing_to_run: words("the request names nothing to run"),
                no_longer_registered: words("the method is no longer registered"),
                unknown_method: words(
                    "no tool method is called `{name}`; use a tool name exactly as it is listed",
                ),
                unknown_method_suggest: words(
                    "no tool method is called `{name}`; did you mean {suggestions}?",
                ),
                not_callable: words("`{method}` may not be called by a model"),
                switched_off: words("`{method}` is switched off for this agent; do not call it again"),
                refused_by_policy: words("`{method}` was refused by the security policy: {reason}"),
                not_approved: words("not authorised: the call of `{method}` was not approved"),
                no_runtime: words(
                    "`{method}` was not run: the executor needs a Tokio runtime (with timers enabled)",
                ),
                timed_out: words("`{method}` did not finish within {ms} ms"),
                panicked: words("`{method}` failed unexpectedly (it panicked: {message})"),
                stopped: words("`{method}` failed unexpectedly (it was stopped)"),
                started_in_background: words(
                    "started in the background (no reply requested); only a failure will be reported",
                ),
                background_no_runtime: words("not run: fire-and-forget calls need a Tokio runtime"),
                stream_ended: words("not run: the streamed cycle ended before this call finished"),
                reply_cut: words("the reply was cut off before this request ended"),
                invalid_arguments: words("invalid arguments: {errors}"),
                missing_parameter: words("parameter `{parameter}` (required): is required but was not given"),
                missing_field: words(
                    "parameter `{parameter}` (required): {location}`{field}` is required but was not given",
                ),
                invalid_parameter: words("parameter `{parameter}` ({rule}): {location}{detail}"),
                location: words("at `{path}`: "),
                invalid_whole: words("arguments ({rule}): {detail}"),
                result_cut: words("\n[… the result was too long: {bytes} more bytes were cut]"),
                list_separator: words(", "),
                list_or: words(" or "),
            },
        }
    }

    /// A template whose one blank is `{method}` (a name the model wrote is shown
    /// [`shown`]).
    pub(crate) fn about(&self, template: &str, method: &str) -> String {
        fill(template, &[("method", &shown(method))])
    }

    /// The note for a name no method has.
    pub(crate) fn unknown(&self, name: &str, suggestions: &[String]) -> String {
        let name = shown(name);
        if suggestions.is_empty() {
            fill(&self.unknown_method, &[("name", &name)])
        } else {
            let list = quoted_list(suggestions, &self.list_separator, &self.list_or);
            fill(&self.unknown_method_suggest, &[("name", &name), ("suggestions", &list)])
        }
    }

    /// `text` cut to at most `max` bytes (at a character boundary) with the note saying
    /// how much was cut; `None` when it fits.
    pub(crate) fn cut(&self, text: &str, max: usize) -> Option<String> {
        if text.len() <= max {
            return None;
        }
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let kept = text.get(..end).unwrap_or("");
        let cut = (text.len() - end).to_string();
        Some(format!("{kept}{}", fill(&self.result_cut, &[("bytes", &cut)])))
    }

    /// The note for a request the protocol found damaged.
    pub(crate) fn incomplete(&self, problems: &[String]) -> String {
        fill(&self.not_run_incomplete, &[("problems", &problems.join(&self.problem_separator))])
    }

    /// The note for arguments that failed validation.
    pub(crate) fn arguments(&self, errors: &ArgumentErrors) -> String {
        let each: Vec<String> = errors.0.iter().map(|e| self.argument(e)).collect();
        fill(&self.invalid_arguments, &[("errors", &each.join(&self.problem_separator))])
    }

    fn argument(&self, e: &ArgumentError) -> String {
        let location =
            if e.path.is_empty() { String::new() } else { fill(&self.location, &[("path", &e.path)]) };
        match &e.missing {
            Some(field) if e.path.is_empty() && *field == e.parameter => {
                fill(&self.missing_parameter, &[("parameter", &e.parameter)])
            }
            Some(field) => fill(
                &self.missing_field,
                &[("parameter", &e.parameter), ("location", &location), ("field", field)],
            ),
            None if e.parameter.is_empty() => {
                fill(&self.invalid_whole, &[("rule", &e.rule), ("detail", &e.detail)])
            }
            None => fill(
                &self.invalid_parameter,
                &[
                    ("parameter", &e.parameter),
                    ("rule", &e.rule),
                    ("location", &location),
                    ("detail", &e.detail),
                ],
            ),
        }
    }
}

/// The longest name, in bytes, a note repeats whole.
const MAX_SHOWN_NAME: usize = 256;

/// `name` as a note repeats it: whole up to [`MAX_SHOWN_NAME`] bytes; a longer one (a
/// model can write a name of any length) as its first 64 characters, an ellipsis and
/// its length, so a note never costs what the name did.
fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() <= MAX_SHOWN_NAME {
        return std::borrow::Cow::Borrowed(name);
    }
    let head: String = name.chars().take(64).collect();
    std::borrow::Cow::Owned(format!("{head}… ({} bytes)", name.len()))
}
