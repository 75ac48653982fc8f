//! Results with parts: text, JSON and images; VCP renders the text
//! and says what binary parts it leaves out.

use std::sync::Arc;

use serde_json::json;
use tool_calling::exec::{ExecutionContext, Executor, ResolvedRequest};
use tool_calling::protocol::ToolCallingProtocol;
use tool_calling::protocol::TurnState;
use tool_calling::protocol::vcp::VcpProtocol;
use tool_calling::tools::MethodDefinition;
use tool_calling::tools::ToolRegistry;
use tool_calling::tools::{BoxFuture, MethodSpec, ToolOutput, ToolSpec};
use tool_calling::{ContentPart, ToolRequest};

#[tokio::test]
async fn parts_are_kept_and_rendered_for_text_protocols() {
    let registry = ToolRegistry::new();
    registry
        .register(ToolSpec::stateless("chart", "Chart").with_method(MethodSpec::new(
            MethodDefinition::new("draw", "draw a chart"),
            |_, _| {
                Box::pin(async {
                    Ok(ToolOutput::Parts(vec![
                        ContentPart::text("Sales rose 12%."),
                        ContentPart::json(json!({"q1": 100, "q2": 112})),
                        ContentPart::image("image/png", "iVBORw0KGgoAAAANSUhEUg=="),
                    ]))
                }) as BoxFuture<'static, _>
            },
        )))
        .unwrap();
    let executor = Executor::new(Arc::new(registry));
    let result = executor
        .execute(
            vec![ResolvedRequest::exact(&ToolRequest::new("r1", "chart_draw"))],
            &ExecutionContext::default(),
        )
        .await
        .remove(0);
    assert_eq!(result.parts.len(), 3);
    assert_eq!(
        result.result,
        "Sales rose 12%.\n{\"q1\":100,\"q2\":112}\n[image/png image of about 16 bytes attached; \
         this protocol carries text only, so it is not shown]"
    );
    let text = VcpProtocol::default().result_messages(std::slice::from_ref(&result), &TurnState::default())
        [0]
    .text()
    .into_owned();
    assert!(text.contains("Sales rose 12%."));
    assert!(text.contains("[image/png image of about 16 bytes attached"));
    // Parts survive serialisation for hosts that store results.
    let back: tool_calling::ToolExecutionResult =
        serde_json::from_str(&serde_json::to_string(&result).unwrap()).unwrap();
    assert_eq!(back, result);
}
