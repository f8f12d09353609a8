//! A resource update a server writes before its answer reaches the host's
//! update hook (which, with sessions shared on Redis, stores it for every
//! instance's subscribers) before the answer reaches the client: a client
//! that has the answer can count on the update. The server is
//! `fixtures/touching_server.py`, a real child process.

#![cfg(target_os = "linux")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, EraChoice};
use mcp_host::config::{HostConfig, ServerConfig};
use mcp_host::{Host, HostOptions};
use mcp_schema::ProtocolVersion;
use serde_json::json;
use support::{gateway_client, within};

mod support;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/touching_server.py"
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_reaches_the_hook_before_the_answer_that_follows_it() {
    let server = ServerConfig::stdio("touching", "python3", vec![SCRIPT.to_owned()]);
    let host = Host::start(
        HostConfig {
            servers: vec![server],
            problems: Vec::new(),
        },
        HostOptions::default(),
    );
    let hooked = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = Arc::clone(&hooked);
    host.set_resource_update_hook(move |uri| record.lock().unwrap().push(uri.to_owned()));
    host.wait_started(Duration::from_secs(20)).await;

    let builder =
        Client::builder("updates-test", "1.0").era(EraChoice::Pinned(ProtocolVersion::V2025_11_25));
    let client = gateway_client(&host, builder).await;
    let resources = within("resources/list", client.list_resources(None))
        .await
        .unwrap();
    let exposed = resources.resources[0].uri.clone();
    for n in 1..=100 {
        within("touch", client.call_tool("touching__touch", json!({})))
            .await
            .unwrap();
        let hooked = hooked.lock().unwrap().clone();
        assert_eq!(
            hooked.len(),
            n,
            "the answer of call {n} came before its update reached the hook"
        );
        assert!(hooked.iter().all(|uri| *uri == exposed), "{hooked:?}");
    }
    within("the host to stop", host.shutdown(Duration::from_secs(10))).await;
}
