//! The conversation history: pushing, indices, every query (including empty histories
//! and out-of-range requests), counts per role, and serde round trips.

use std::collections::BTreeMap;

use serde_json::json;
use tool_calling::model::{ContentBlock, Conversation, Message, Role, ToolCall, UnknownRole};
use tool_calling::{ErrorKind, ToolExecutionResult, ToolRequest};

fn contents<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<String> {
    messages.into_iter().map(|m| m.text().into_owned()).collect()
}

fn indices<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<usize> {
    messages.into_iter().map(|m| m.index).collect()
}

/// system, user, assistant (2 calls), tool (2 results), assistant, user, assistant (1 call),
/// tool (1 failed result), assistant.
fn multi_round() -> Conversation {
    let mut chat = Conversation::with_id("conv-1");
    chat.push(Message::system("sys"));
    chat.push(Message::user("u1"));
    chat.push(Message::assistant("a1").with_tool_requests([
        ToolRequest::new("call_1", "calc_add").with_arg("a", 1).with_arg("b", 2),
        ToolRequest::new("call_2", "weather").with_arg("city", "Oslo"),
    ]));
    chat.push(Message::tool("t1").with_tool_results([
        ToolExecutionResult::success("call_1", "calc_add", "3").with_duration_ms(4),
        ToolExecutionResult::success("call_2", "weather", "rain"),
    ]));
    chat.push(Message::assistant("a2"));
    chat.push(Message::user("u2"));
    chat.push(Message::assistant("a3").with_tool_requests([ToolRequest::new("call_3", "search")]));
    chat.push(Message::tool("t2").with_tool_results([ToolExecutionResult::error(
        "call_3",
        "search",
        ErrorKind::Timeout,
        "timed out",
    )]));
    chat.push(Message::assistant("a4"));
    chat
}

#[test]
fn conversation_is_send_sync_clone_default() {
    fn assert_traits<T: Send + Sync + Clone + Default + std::fmt::Debug>() {}
    assert_traits::<Conversation>();
    fn assert_msg<T: Send + Sync + Clone + std::fmt::Debug>() {}
    assert_msg::<Message>();
    assert_msg::<Role>();
}

#[test]
fn empty_conversation_answers_every_query() {
    let chat = Conversation::new();
    assert!(chat.is_empty());
    assert_eq!(chat.len(), 0);
    assert_eq!(chat.id(), None);
    assert!(chat.messages().is_empty());
    assert!(chat.get(0).is_none());
    assert!(chat.last().is_none());
    assert!(chat.last_of(Role::User).is_none());
    assert_eq!(chat.by_role(Role::User).count(), 0);
    assert!(chat.range(0..10).is_empty());
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = chat.range(5..2);
    assert!(backwards.is_empty());
    assert!(chat.recent(0).is_empty());
    assert!(chat.recent(3).is_empty());
    assert!(chat.recent_of(Role::Assistant, 3).is_empty());
    assert_eq!(chat.role_range(Role::User, 0..3).count(), 0);
    assert_eq!(chat.count_of(Role::Tool), 0);
    assert!(chat.count_by_role().is_empty());
    assert_eq!(chat.tool_requests().count(), 0);
    assert_eq!(chat.tool_results().count(), 0);
    assert_eq!(chat, Conversation::default());
}

#[test]
fn push_assigns_consecutive_indices_and_overwrites_stale_ones() {
    let mut chat = Conversation::with_id("c");
    assert_eq!(chat.id(), Some("c"));

    let mut stale = Message::user("hello");
    stale.index = 42;
    assert_eq!(chat.push(Message::system("s")), 0);
    assert_eq!(chat.push(stale), 1);
    assert_eq!(chat.push(Message::assistant("hi")), 2);
    assert_eq!(indices(chat.messages()), vec![0, 1, 2]);
    assert_eq!(chat.get(1).map(|m| m.index), Some(1));
    assert_eq!(chat.len(), 3);
    assert!(!chat.is_empty());

    let added = chat.push_all([Message::user("u"), Message::assistant("a")]);
    assert_eq!(added, 3..5);
    assert_eq!(chat.push_all(Vec::new()), 5..5);
    assert_eq!(indices(&chat), vec![0, 1, 2, 3, 4]);
    assert_eq!(contents(chat.iter()), vec!["s", "hello", "hi", "u", "a"]);

    chat.extend([Message::tool("t")]);
    assert_eq!(chat.last().map(|m| (m.index, m.role)), Some((5, Role::Tool)));

    let collected: Conversation = [Message::user("x"), Message::user("y")].into_iter().collect();
    assert_eq!(indices(&collected), vec![0, 1]);
    assert_eq!(collected.id(), None);
}

#[test]
fn message_constructors_and_builders() {
    let m = Message::new(Role::User, "hi");
    assert_eq!(m.role, Role::User);
    assert_eq!(m.text(), "hi");
    assert_eq!(m.content, [ContentBlock::text("hi")]);
    assert!(Message::user("").content.is_empty(), "no empty text block");
    assert!(m.tool_requests.is_empty());
    assert!(m.tool_results.is_empty());
    assert_eq!(m.index, 0);
    assert!(!m.has_tool_requests());

    assert_eq!(Message::system("x").role, Role::System);
    assert_eq!(Message::user("x").role, Role::User);
    assert_eq!(Message::assistant("x").role, Role::Assistant);
    assert_eq!(Message::tool("x").role, Role::Tool);

    let a = Message::assistant("calling")
        .with_tool_requests([ToolRequest::new("c1", "t1")])
        .with_tool_requests([ToolRequest::new("c2", "t2")]);
    assert!(a.has_tool_requests());
    let ids: Vec<&str> = a.tool_requests.iter().map(|c| c.request_id.as_str()).collect();
    assert_eq!(ids, vec!["c1", "c2"]);

    let t = Message::tool("done")
        .with_tool_results([ToolExecutionResult::success("c1", "t1", "1")])
        .with_tool_results([ToolExecutionResult::success("c2", "t2", "2")]);
    let results: Vec<&str> = t.tool_results.iter().map(|r| r.result.as_str()).collect();
    assert_eq!(results, vec!["1", "2"]);
}

#[test]
fn role_names_parse_and_display() {
    for role in Role::ALL {
        assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        assert_eq!(role.to_string(), role.as_str());
        assert_eq!(serde_json::to_value(role).ok(), Some(json!(role.as_str())));
    }
    assert_eq!(" TOOL ".parse::<Role>(), Ok(Role::Tool));
    assert_eq!("bot".parse::<Role>(), Err(UnknownRole("bot".to_owned())));
    assert!(UnknownRole("bot".to_owned()).to_string().contains("unknown message role `bot`"));
    assert!(Role::System < Role::User && Role::User < Role::Assistant);
    assert!(Role::Assistant < Role::Tool);
}

#[test]
fn by_role_and_last_of() {
    let chat = multi_round();
    assert_eq!(contents(chat.by_role(Role::Assistant)), vec!["a1", "a2", "a3", "a4"]);
    assert_eq!(indices(chat.by_role(Role::Assistant)), vec![2, 4, 6, 8]);
    assert_eq!(contents(chat.by_role(Role::User)), vec!["u1", "u2"]);
    assert_eq!(contents(chat.by_role(Role::Tool).rev()), vec!["t2", "t1"]);
    assert_eq!(contents(chat.by_role(Role::System)), vec!["sys"]);

    assert_eq!(chat.last().map(|m| m.text().into_owned()), Some("a4".to_string()));
    assert_eq!(chat.last_of(Role::User).map(|m| m.index), Some(5));
    assert_eq!(chat.last_of(Role::Tool).map(|m| m.text().into_owned()), Some("t2".to_string()));
    assert_eq!(chat.last_of(Role::System).map(|m| m.index), Some(0));

    let only_users: Conversation = [Message::user("x")].into_iter().collect();
    assert!(only_users.last_of(Role::Assistant).is_none());
    assert_eq!(only_users.by_role(Role::Tool).count(), 0);
}

#[test]
fn range_is_clamped() {
    let chat = multi_round();
    assert_eq!(contents(chat.range(1..4)), vec!["u1", "a1", "t1"]);
    assert_eq!(indices(chat.range(1..4)), vec![1, 2, 3]);
    assert!(contents(chat.range(0..0)).is_empty());
    assert_eq!(contents(chat.range(7..100)), vec!["t2", "a4"]);
    assert_eq!(chat.range(0..usize::MAX).len(), 9);
    assert!(chat.range(9..12).is_empty());
    assert!(chat.range(50..60).is_empty());
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = chat.range(6..2);
    assert!(backwards.is_empty());
    assert!(chat.range(usize::MAX..usize::MAX).is_empty());
}

#[test]
fn recent_and_recent_of() {
    let chat = multi_round();
    assert_eq!(contents(chat.recent(3)), vec!["a3", "t2", "a4"]);
    assert_eq!(indices(chat.recent(3)), vec![6, 7, 8]);
    assert!(chat.recent(0).is_empty());
    assert_eq!(chat.recent(9).len(), 9);
    assert_eq!(chat.recent(100).len(), 9);
    assert_eq!(chat.recent(usize::MAX).first().map(|m| m.index), Some(0));

    assert_eq!(contents(chat.recent_of(Role::Assistant, 2)), vec!["a3", "a4"]);
    assert_eq!(indices(chat.recent_of(Role::Assistant, 2)), vec![6, 8]);
    assert_eq!(contents(chat.recent_of(Role::User, 10)), vec!["u1", "u2"]);
    assert_eq!(contents(chat.recent_of(Role::Tool, 1)), vec!["t2"]);
    assert!(chat.recent_of(Role::Tool, 0).is_empty());
}

#[test]
fn role_range_counts_within_the_role() {
    let chat = multi_round();
    assert_eq!(contents(chat.role_range(Role::Assistant, 1..3)), vec!["a2", "a3"]);
    assert_eq!(indices(chat.role_range(Role::Assistant, 1..3)), vec![4, 6]);
    assert_eq!(contents(chat.role_range(Role::Assistant, 2..99)), vec!["a3", "a4"]);
    assert_eq!(contents(chat.role_range(Role::User, 0..1)), vec!["u1"]);
    assert_eq!(chat.role_range(Role::User, 5..9).count(), 0);
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = chat.role_range(Role::Assistant, 3..1).count();
    assert_eq!(backwards, 0);
}

#[test]
fn counts_per_role() {
    let chat = multi_round();
    let expected: BTreeMap<Role, usize> =
        [(Role::System, 1), (Role::User, 2), (Role::Assistant, 4), (Role::Tool, 2)].into_iter().collect();
    assert_eq!(chat.count_by_role(), expected);
    assert_eq!(chat.count_of(Role::Assistant), 4);
    assert_eq!(chat.count_of(Role::Tool), 2);

    let mut partial = Conversation::new();
    partial.push(Message::user("a"));
    partial.push(Message::user("b"));
    let only_user: BTreeMap<Role, usize> = [(Role::User, 2)].into_iter().collect();
    assert_eq!(partial.count_by_role(), only_user);
    assert_eq!(partial.count_of(Role::System), 0);
}

#[test]
fn multi_round_tool_calls_and_results() {
    let chat = multi_round();

    let calls: Vec<(&str, &str)> =
        chat.tool_requests().map(|c| (c.request_id.as_str(), c.tool_name.as_str())).collect();
    assert_eq!(calls, vec![("call_1", "calc_add"), ("call_2", "weather"), ("call_3", "search")]);
    let results: Vec<(&str, &str, Option<ErrorKind>)> =
        chat.tool_results().map(|r| (r.request_id.as_str(), r.result.as_str(), r.error_kind)).collect();
    assert_eq!(
        results,
        vec![
            ("call_1", "3", None),
            ("call_2", "rain", None),
            ("call_3", "timed out", Some(ErrorKind::Timeout)),
        ]
    );

    // The newest assistant message that asked for tools, and the tool message after it.
    let asking = chat.by_role(Role::Assistant).rev().find(|m| m.has_tool_requests());
    assert_eq!(asking.map(|m| m.index), Some(6));
    let answer = asking.and_then(|m| chat.get(m.index + 1));
    assert_eq!(answer.map(|m| m.role), Some(Role::Tool));
    assert_eq!(answer.and_then(|m| m.tool_results.first()).map(|r| r.is_success()), Some(false));

    // The first round, by index range.
    let round_one = chat.range(1..5);
    assert_eq!(
        round_one.iter().map(|m| m.role).collect::<Vec<_>>(),
        vec![Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(
        round_one.get(1).and_then(|m| m.tool_requests.first()).and_then(|c| c.args.get("b")),
        Some(&json!(2))
    );
    assert_eq!(round_one.get(2).and_then(|m| m.tool_results.first()).map(|r| r.duration_ms), Some(4));

    // Messages since the last user message.
    let since_user = chat.last_of(Role::User).map(|m| chat.range(m.index..chat.len())).unwrap_or_default();
    assert_eq!(contents(since_user), vec!["u2", "a3", "t2", "a4"]);
}

#[test]
fn serde_round_trip() {
    let chat = multi_round();
    let text = serde_json::to_string(&chat).unwrap();
    let back: Conversation = serde_json::from_str(&text).unwrap();
    assert_eq!(back, chat);
    assert_eq!(back.id(), Some("conv-1"));
    assert_eq!(back.count_by_role(), chat.count_by_role());

    let value = serde_json::to_value(&chat).unwrap();
    assert_eq!(value["id"], json!("conv-1"));
    assert_eq!(
        value["messages"][0],
        json!({"role": "system", "content": [{"type": "text", "text": "sys"}], "index": 0})
    );
    assert_eq!(value["messages"][2]["tool_requests"][0]["request_id"], json!("call_1"));
    assert_eq!(value["messages"][2]["tool_requests"][0]["args"], json!({"a": 1, "b": 2}));
    assert_eq!(value["messages"][3]["tool_results"][1]["result"], json!("rain"));
    assert_eq!(value["messages"][7]["tool_results"][0]["error_kind"], json!("timeout"));
    assert!(value["messages"][4].get("tool_requests").is_none());
    assert!(value["messages"][4].get("tool_results").is_none());

    let anonymous = serde_json::to_value(Conversation::new()).unwrap();
    assert_eq!(anonymous, json!({"messages": []}));
}

#[test]
fn deserialising_renumbers_and_fills_defaults() {
    let stored = json!({
        "messages": [
            {"role": "user", "content": "hi", "index": 7},
            {"role": "assistant", "content": "hello"}
        ]
    });
    let chat: Conversation = serde_json::from_value(stored).unwrap();
    assert_eq!(chat.id(), None);
    assert_eq!(indices(&chat), vec![0, 1]);
    assert_eq!(contents(&chat), vec!["hi", "hello"]);
    assert!(chat.get(1).is_some_and(|m| m.tool_requests.is_empty() && m.tool_results.is_empty()));

    let blocks: Conversation = serde_json::from_value(json!({
        "messages": [{"role": "assistant", "content": [
            {"type": "text", "text": "adding"},
            {"type": "tool_call", "id": "c1", "name": "calc_add", "arguments": "{}"}
        ]}]
    }))
    .unwrap();
    assert_eq!(blocks.messages()[0].text(), "adding");
    assert_eq!(
        blocks.messages()[0].tool_calls().collect::<Vec<_>>(),
        [&ToolCall::new("c1", "calc_add", "{}")]
    );

    let empty: Conversation = serde_json::from_str("{}").unwrap();
    assert!(empty.is_empty());

    assert!(
        serde_json::from_value::<Conversation>(json!({
            "messages": [{"role": "robot", "content": "x"}]
        }))
        .is_err()
    );
}
