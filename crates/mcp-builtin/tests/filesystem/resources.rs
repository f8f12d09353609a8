//! Files and directories as resources, change notifications, client roots
//! and Streamable HTTP.

use super::*;

#[tokio::test]
async fn files_and_directories_are_resources() {
    let f = fixture();
    for era in ERAS {
        let (client, _) = connect_with(
            Config::new([&f.data]).limits(Limits {
                max_listed: 5,
                ..Limits::default()
            }),
            era,
        )
        .await;
        let listed = client.list_all_resources().await.unwrap();
        assert_eq!(listed.len(), 5, "{listed:?}");
        assert_eq!(listed[0].uri, format!("file://{}", f.data.display()));
        assert_eq!(listed[0].mime_type.as_deref(), Some("inode/directory"));

        let uri = format!("file://{}/hello.txt", f.data.display());
        let read = client.read_resource(&uri).await.unwrap();
        let ResourceContents::Text(file) = &read.contents[0] else {
            panic!("{read:?}")
        };
        assert_eq!(file.text, "hello\nworld\n");
        assert_eq!(file.mime_type.as_deref(), Some("text/plain"));

        let nested = client
            .read_resource(&format!("file://{}/src/main.rs", f.data.display()))
            .await
            .unwrap();
        assert!(
            matches!(&nested.contents[0], ResourceContents::Text(t) if t.text.starts_with("fn main"))
        );
        let dir = client
            .read_resource(&format!("file://{}/notes", f.data.display()))
            .await
            .unwrap();
        let ResourceContents::Text(listing) = &dir.contents[0] else {
            panic!()
        };
        assert_eq!(listing.mime_type.as_deref(), Some("inode/directory"));
        assert_eq!(listing.text, "[FILE] a.md\n[DIR] deep\n");
        let binary = client
            .read_resource(&format!("file://{}/big.bin", f.data.display()))
            .await
            .unwrap();
        assert!(
            matches!(&binary.contents[0], ResourceContents::Blob(b) if b.blob.starts_with("AAAA"))
        );
        let missing = client
            .read_resource(&format!("file://{}/missing.txt", f.data.display()))
            .await
            .expect_err("missing");
        assert_eq!(missing.rpc().unwrap().code, era.resource_not_found_code());

        let templates = client.list_all_resource_templates().await.unwrap();
        assert_eq!(templates[0].uri_template, "file:///{+path}");
        let typed = format!("{}/no", f.data.display())
            .trim_start_matches('/')
            .to_owned();
        let completed: CompleteResult = client
            .request(
                "completion/complete",
                &json!({
                    "ref": {"type": "ref/resource", "uri": "file:///{+path}"},
                    "argument": {"name": "path", "value": typed}
                }),
                RequestOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(completed.completion.values, [format!("{typed}tes/")]);
    }
}

#[tokio::test]
async fn watched_changes_reach_subscribers() {
    let f = fixture();
    let uri = format!("file://{}/hello.txt", f.data.display());
    for era in ERAS {
        let (client, seen) = connect_with(Config::new([&f.data]).watch(true), era).await;
        let listening = if era.is_legacy() {
            client.subscribe_resource(&uri).await.unwrap();
            None
        } else {
            let filter = mcp_schema::SubscriptionFilter {
                resources_list_changed: Some(true),
                resource_subscriptions: Some(vec![uri.clone()]),
                ..Default::default()
            };
            let client = client.clone();
            let task = tokio::spawn(async move { client.listen(filter).await });
            wait_for(&seen, "notifications/subscriptions/acknowledged", "").await;
            Some(task)
        };
        std::fs::write(f.data.join("hello.txt"), format!("changed in {era}\n")).unwrap();
        wait_for(&seen, "notifications/resources/updated", &uri).await;
        std::fs::write(f.data.join(format!("added-{era}.txt")), "new").unwrap();
        wait_for(&seen, "notifications/resources/list_changed", "").await;
        let listed = client.list_all_resources().await.unwrap();
        assert!(
            listed
                .iter()
                .any(|r| r.uri.ends_with(&format!("added-{era}.txt")))
        );
        // A secret changing tells nobody.
        assert!(
            !seen.lock().unwrap().iter().any(|(_, p)| p.contains(".env")),
            "{:?}",
            seen.lock().unwrap()
        );
        if let Some(task) = listening {
            task.abort();
        }
    }
}

#[tokio::test]
async fn a_subscription_alone_turns_watching_on_and_off() {
    let f = fixture();
    let uri = format!("file://{}/hello.txt", f.data.display());
    // No --watch: only the subscription makes changes known.
    let (client, seen) = connect_with(Config::new([&f.data]), ProtocolVersion::V2025_11_25).await;
    client.subscribe_resource(&uri).await.unwrap();
    std::fs::write(f.data.join("hello.txt"), "changed while subscribed\n").unwrap();
    wait_for(&seen, "notifications/resources/updated", &uri).await;
    client.unsubscribe_resource(&uri).await.unwrap();
    // Unsubscribed, the watcher is gone: a change is not noticed, though a
    // fresh subscription (after it) would be.
    seen.lock().unwrap().clear();
    std::fs::write(f.data.join("hello.txt"), "changed after\n").unwrap();
    client.subscribe_resource(&uri).await.unwrap();
    std::fs::write(f.data.join("hello.txt"), "changed again\n").unwrap();
    wait_for(&seen, "notifications/resources/updated", &uri).await;
}

/// Waits (up to 20 s) for a notification `method` whose params contain `needle`.
async fn wait_for(seen: &Seen, method: &str, needle: &str) {
    let found = async {
        loop {
            if seen
                .lock()
                .unwrap()
                .iter()
                .any(|(m, p)| m == method && p.contains(needle))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), found)
        .await
        .unwrap_or_else(|_| panic!("no {method} with {needle}: {:?}", seen.lock().unwrap()));
}

#[tokio::test]
async fn client_roots_narrow_the_scope_and_never_widen_it() {
    let f = fixture();
    let root = |path: &Path| Root::new(format!("file://{}", path.display()), None);
    for era in ERAS {
        // A root inside: only that part is reachable.
        let (client, _) = connect_with_roots(
            Config::new([&f.data]),
            era,
            Some(vec![root(&f.data.join("notes"))]),
        )
        .await;
        let inside = call(&client, "read_text_file", json!({"path": "notes/a.md"})).await;
        assert!(text(&inside).contains("TODO"), "{}", text(&inside));
        refused(
            &client,
            "read_text_file",
            json!({"path": "hello.txt"}),
            "world",
        )
        .await;
        let allowed = call(&client, "list_allowed_directories", json!({})).await;
        assert_eq!(
            text(&allowed),
            format!("Allowed directories:\n{}", f.data.join("notes").display())
        );
        let error = client
            .read_resource(&format!("file://{}/hello.txt", f.data.display()))
            .await
            .expect_err("outside the roots is not a resource");
        assert_eq!(error.rpc().unwrap().code, era.resource_not_found_code());

        // A root outside grants nothing, not even what it names.
        let (client, _) = connect_with_roots(
            Config::new([&f.data]),
            era,
            Some(vec![root(&f.base.join("outside"))]),
        )
        .await;
        refused(
            &client,
            "read_text_file",
            json!({"path": "hello.txt"}),
            "world",
        )
        .await;
        refused(
            &client,
            "read_text_file",
            json!({"path": f.base.join("outside/file.txt")}),
            "OUTSIDE-CONTENT",
        )
        .await;

        // A root wider than the operator's directory grants that directory only.
        let (client, _) =
            connect_with_roots(Config::new([&f.data]), era, Some(vec![root(&f.base)])).await;
        let read = call(&client, "read_text_file", json!({"path": "hello.txt"})).await;
        assert_eq!(text(&read), "hello\nworld\n");
        refused(
            &client,
            "read_text_file",
            json!({"path": f.base.join("outside/file.txt")}),
            "OUTSIDE-CONTENT",
        )
        .await;
    }
}

/// Serves the server over Streamable HTTP on a free loopback port.
async fn on_http(config: Config) -> String {
    let server = mcp_builtin::filesystem::server(config).expect("server");
    serve_http(&server).await
}

#[tokio::test]
async fn over_streamable_http_in_both_eras() {
    let f = fixture();
    let url = on_http(Config::new([&f.data])).await;
    for era in ERAS {
        let transport = mcp_http::client::connect(mcp_http::HttpClientConfig::new(url.clone()))
            .await
            .unwrap()
            .into_transport();
        let client = tokio::time::timeout(
            Duration::from_secs(10),
            Client::builder("fs-tests", "1.0.0")
                .era(EraChoice::Pinned(era))
                .connect(transport),
        )
        .await
        .expect("connect in time")
        .expect("connect");
        assert_eq!(client.revision(), era);
        let read = call(&client, "read_text_file", json!({"path": "hello.txt"})).await;
        assert_eq!(text(&read), "hello\nworld\n");
        refused(
            &client,
            "read_text_file",
            json!({"path": "../data2/secret.txt"}),
            "outside-secret",
        )
        .await;
        let resource = client
            .read_resource(&format!("file://{}/notes/a.md", f.data.display()))
            .await
            .unwrap();
        let ResourceContents::Text(markdown) = &resource.contents[0] else {
            panic!("{resource:?}")
        };
        assert_eq!(markdown.mime_type.as_deref(), Some("text/markdown"));
        assert!(markdown.text.contains("TODO"));
    }
}
