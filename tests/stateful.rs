//! Stateful tools: one instance per conversation, made lazily, reused within
//! the conversation, isolated from others, dropped when the conversation ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use tool_calling::exec::{ExecutionContext, Executor, ResolvedRequest};
use tool_calling::tools::ToolProvider;
use tool_calling::tools::ToolRegistry;
use tool_calling::{ToolRequest, tool};

static CREATED: AtomicUsize = AtomicUsize::new(0);

/// A tally that lives as long as its conversation.
struct Tally {
    count: AtomicU32,
}

impl Tally {
    fn new() -> Self {
        CREATED.fetch_add(1, Ordering::SeqCst);
        Tally { count: AtomicU32::new(0) }
    }
}

/// Counts calls per conversation.
#[tool(id = "tally", factory = "Tally::new", stateful, register = false)]
impl Tally {
    /// Add one and return the new count.
    #[tool_method]
    fn bump(&self) -> u32 {
        self.count.fetch_add(1, Ordering::SeqCst) + 1
    }
}

async fn bump(executor: &Executor, conversation: &str) -> String {
    let ctx = ExecutionContext::default().with_conversation(conversation);
    executor
        .execute(vec![ResolvedRequest::exact(&ToolRequest::new("r", "tally_bump"))], &ctx)
        .await
        .remove(0)
        .result
}

#[tokio::test]
async fn one_instance_per_conversation() {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Tally::tool_spec()).unwrap();
    let executor = Executor::new(registry.clone());
    assert_eq!(CREATED.load(Ordering::SeqCst), 0, "instances are made lazily");
    assert_eq!(bump(&executor, "a").await, "1");
    assert_eq!(bump(&executor, "a").await, "2");
    assert_eq!(bump(&executor, "b").await, "1", "conversations are isolated");
    assert_eq!(bump(&executor, "a").await, "3");
    assert_eq!(CREATED.load(Ordering::SeqCst), 2);
    let tool = registry.tool("tally").unwrap();
    assert_eq!(tool.live_conversations(), 2);
    assert_eq!(registry.end_conversation("a"), 1);
    assert_eq!(tool.live_conversations(), 1);
    assert_eq!(bump(&executor, "a").await, "1", "a new conversation starts afresh");
    assert_eq!(CREATED.load(Ordering::SeqCst), 3);
}
