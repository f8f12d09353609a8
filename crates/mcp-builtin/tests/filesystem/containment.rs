//! Containment: each escape the server blocks has a test named for it.

use super::*;

#[tokio::test]
async fn cve_2025_53110_sibling_directory_with_a_shared_prefix() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        let sibling = f.base.join("data2/secret.txt");
        let message = refused(
            &client,
            "read_text_file",
            json!({"path": sibling}),
            "outside-secret",
        )
        .await;
        assert!(
            message.contains("outside the allowed directories"),
            "{message}"
        );
        refused(
            &client,
            "list_directory",
            json!({"path": f.base.join("data2")}),
            "secret.txt",
        )
        .await;
    }
}

#[tokio::test]
async fn cve_2025_53109_symlink_pointing_outside() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        refused(
            &client,
            "read_text_file",
            json!({"path": "link_out"}),
            "outside-secret",
        )
        .await;
        refused(
            &client,
            "read_text_file",
            json!({"path": f.data.join("dir_out/file.txt")}),
            "OUTSIDE-CONTENT",
        )
        .await;
        refused(
            &client,
            "list_directory",
            json!({"path": "dir_out"}),
            "file.txt",
        )
        .await;
        let error = client
            .read_resource(&format!("file://{}", f.data.join("link_out").display()))
            .await
            .expect_err("a link pointing out is not a resource");
        assert_eq!(error.rpc().unwrap().code, era.resource_not_found_code());
        // A link that stays inside is followed.
        let inside = call(&client, "read_text_file", json!({"path": "link_in"})).await;
        assert_eq!(text(&inside), "hello\nworld\n");
    }
}

#[tokio::test]
async fn a_symlink_swapped_after_the_check_is_not_followed() {
    let f = fixture();
    let client = connect(&f, ProtocolVersion::V2026_07_28).await;
    let path = f.data.join("swap/file.txt");
    let first = call(&client, "read_text_file", json!({"path": path})).await;
    assert_eq!(text(&first), "inside");

    // The directory becomes a link to the outside between two reads.
    let swap = f.data.join("swap");
    let parked = f.data.join("swap.parked");
    std::fs::rename(&swap, &parked).unwrap();
    std::os::unix::fs::symlink(f.base.join("outside"), &swap).unwrap();
    refused(
        &client,
        "read_text_file",
        json!({"path": path}),
        "OUTSIDE-CONTENT",
    )
    .await;

    // And it flips back and forth while reads go on: every read gives the
    // inside content or a refusal, never the outside content.
    std::fs::remove_file(&swap).unwrap();
    std::fs::rename(&parked, &swap).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let (swap, parked, outside, stop) = (
            swap.clone(),
            parked.clone(),
            f.base.join("outside"),
            Arc::clone(&stop),
        );
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::rename(&swap, &parked).unwrap();
                std::os::unix::fs::symlink(&outside, &swap).unwrap();
                std::fs::remove_file(&swap).unwrap();
                std::fs::rename(&parked, &swap).unwrap();
            }
        })
    };
    let mut inside_reads = 0;
    for _ in 0..200 {
        let result = call(&client, "read_text_file", json!({"path": path})).await;
        let body = text(&result);
        assert!(
            !body.contains("OUTSIDE-CONTENT"),
            "read the outside through a swapped link: {body}"
        );
        if !result.is_error() {
            assert_eq!(body, "inside");
            inside_reads += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flipper.join().unwrap();
    let last = call(&client, "read_text_file", json!({"path": path})).await;
    assert_eq!(text(&last), "inside", "after {inside_reads} inside reads");
}

#[tokio::test]
async fn dot_dot_cannot_escape() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        for path in [
            "../data2/secret.txt".to_owned(),
            "notes/../../data2/secret.txt".to_owned(),
            format!("{}/../data2/secret.txt", f.data.display()),
            "..".to_owned(),
        ] {
            refused(
                &client,
                "read_text_file",
                json!({"path": path}),
                "outside-secret",
            )
            .await;
        }
        refused(&client, "list_directory", json!({"path": ".."}), "data2").await;
        refused(
            &client,
            "search_files",
            json!({"path": "..", "pattern": "**"}),
            "secret",
        )
        .await;
    }
}

#[tokio::test]
async fn absolute_path_outside_is_refused() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        refused(
            &client,
            "read_text_file",
            json!({"path": "/etc/passwd"}),
            "root:",
        )
        .await;
        refused(
            &client,
            "get_file_info",
            json!({"path": f.base.join("outside/file.txt")}),
            "size",
        )
        .await;
        let error = client
            .read_resource("file:///etc/passwd")
            .await
            .expect_err("outside is not a resource");
        assert_eq!(error.rpc().unwrap().code, era.resource_not_found_code());
    }
}

#[tokio::test]
async fn secret_files_are_refused_by_default() {
    let f = fixture();
    for era in ERAS {
        let client = connect(&f, era).await;
        for path in [".env", "keys/id_rsa", ".ssh/config", "innocent.txt"] {
            let message = refused(&client, "read_text_file", json!({"path": path}), "SECRET").await;
            assert!(message.contains("deny-list"), "{message}");
        }
        refused(&client, "list_directory", json!({"path": ".ssh"}), "config").await;
        let searched = call(
            &client,
            "search_content",
            json!({"path": ".", "pattern": "SECRET|PRIVATE|Host"}),
        )
        .await;
        assert_eq!(text(&searched), "No matches found");
        let error = client
            .read_resource(&format!("file://{}/.env", f.data.display()))
            .await
            .expect_err("a secret is not a resource");
        assert_eq!(error.rpc().unwrap().code, era.resource_not_found_code());
        let listed = client.list_all_resources().await.unwrap();
        assert!(
            listed.iter().all(|r| !r.uri.ends_with(".env")),
            "{listed:?}"
        );
    }
    // The operator can allow them, or deny more.
    let (client, _) = connect_with(
        Config::new([&f.data]).allow_secrets(true),
        ProtocolVersion::V2026_07_28,
    )
    .await;
    let env = call(&client, "read_text_file", json!({"path": ".env"})).await;
    assert_eq!(text(&env), "SECRET=inside-env");
    let (client, _) = connect_with(
        Config::new([&f.data]).deny("*.md"),
        ProtocolVersion::V2025_11_25,
    )
    .await;
    refused(
        &client,
        "read_text_file",
        json!({"path": "notes/a.md"}),
        "TODO",
    )
    .await;
}
