//! The task fixtures as the tasks conformance scenario drives them
//! (2026-07-28, tasks extension declared on every request).

use std::sync::Arc;

use mcp_core::{FrameKind, InboundFrame, OutboundFrame, Transport};
use serde_json::{Value, json};

struct Client {
    outbound: tokio::sync::mpsc::Sender<OutboundFrame>,
    inbound: mcp_core::Inbound,
    next_id: i64,
}

impl Client {
    fn start() -> (Client, mcp_core::RunningSession) {
        let server = super::server();
        let (server_side, client_side) = Transport::pair();
        let session = mcp_core::serve(
            server_side,
            Arc::new(server.clone()),
            server.session_config(),
        );
        let client = Client {
            outbound: client_side.outbound,
            inbound: client_side.inbound,
            next_id: 1,
        };
        (client, session)
    }

    /// A modern request declaring the tasks extension; its response.
    async fn request(&mut self, method: &str, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":
                {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
        });
        let id = self.next_id;
        self.next_id += 1;
        let text = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let frame = OutboundFrame {
            text: text.to_string(),
            related: None,
            kind: FrameKind::Request,
        };
        self.outbound.send(frame).await.unwrap();
        loop {
            let next = tokio::time::timeout(std::time::Duration::from_secs(5), self.inbound.recv());
            let Ok(Some(InboundFrame::Text(text))) = next.await else {
                panic!("no response to {method}");
            };
            let message: Value = serde_json::from_str(&text).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await;
        response["result"].clone()
    }

    async fn poll(&mut self, id: &Value, status: &str) -> Value {
        for _ in 0..500 {
            let task = self.request("tasks/get", json!({"taskId": id})).await;
            if task["result"]["status"] == status {
                return task["result"].clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("task {id} never reached {status}");
    }
}

#[tokio::test]
async fn task_fixtures() {
    let (mut client, _session) = Client::start();
    let tools = client.request("tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[0], "test_simple_text");
    assert_eq!(
        names[names.len() - 8..],
        [
            "greet",
            "slow_compute",
            "failing_job",
            "protocol_error_job",
            "confirm_delete",
            "multi_input",
            "test_tool_with_task",
            "region_query"
        ]
    );

    let greet = client.call("greet", json!({"name": "Ada"})).await;
    assert_eq!(greet["resultType"], "complete");
    assert_eq!(greet["content"][0]["text"], "Hello, Ada!");

    let quick = client
        .call("slow_compute", json!({"seconds": 0.01, "label": "sum"}))
        .await;
    assert_eq!(quick["resultType"], "task", "{quick}");
    let done = client.poll(&quick["taskId"], "completed").await;
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("sum")
    );

    let long = client
        .call("slow_compute", json!({"seconds": 60, "label": "long"}))
        .await;
    let ack = client
        .request("tasks/cancel", json!({"taskId": long["taskId"]}))
        .await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert_eq!(
        ack["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-everything",
        "{ack}"
    );
    client.poll(&long["taskId"], "cancelled").await;

    let failing = client.call("failing_job", json!({})).await;
    let done = client.poll(&failing["taskId"], "completed").await;
    assert_eq!(done["result"]["isError"], true);

    let broken = client.call("protocol_error_job", json!({})).await;
    let failed = client.poll(&broken["taskId"], "failed").await;
    assert!(failed["error"]["code"].is_i64() && failed.get("result").is_none());
}

/// A deferred task: the question is asked synchronously, the task only
/// starts once it is answered, and its result uses the answer.
#[tokio::test]
async fn input_before_task() {
    let (mut client, _session) = Client::start();
    let asked = client.call("test_tool_with_task", json!({})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(asked.get("taskId").is_none(), "{asked}");
    assert_eq!(
        asked["inputRequests"]["user_name"]["method"], "elicitation/create",
        "{asked}"
    );
    let answer = json!({"action": "accept", "content": {"name": "Alice"}});
    let params = json!({
        "name": "test_tool_with_task",
        "arguments": {},
        "inputResponses": {"user_name": answer},
        "requestState": asked["requestState"],
    });
    let created = client.request("tools/call", params.clone()).await["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none(), "{created}");
    assert!(created.get("inputRequests").is_none(), "{created}");
    let done = client.poll(&created["taskId"], "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Alice!",
        "{done}"
    );

    // A tampered state is refused before any task exists.
    let mut forged = params;
    forged["requestState"] = json!("forged");
    let refused = client.request("tools/call", forged).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}
