use super::*;

fn vars() -> Variables {
    Variables::from_map(BTreeMap::from([
        ("GITHUB_TOKEN".to_owned(), "ghp_x".to_owned()),
        ("PORT".to_owned(), "9000".to_owned()),
    ]))
    .home("/home/ann")
    .workspace("/work/proj")
}

fn read(text: &str) -> HostConfig {
    parse(text, Path::new("/etc/mcp/test.json"), &vars()).expect("parses")
}

#[test]
fn claude_desktop_mcp_servers() {
    let config = read(
        r#"{
          "mcpServers": {
            "filesystem": {
              "command": "npx",
              "args": ["-y", "@modelcontextprotocol/server-filesystem", "${userHome}/Desktop"],
              "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "DEBUG": 1},
              "autoApprove": ["read_file"]
            },
            "remote": {"url": "http://127.0.0.1:${PORT}/mcp", "headers": {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:9001/sse"},
            "socket": {"url": "ws://127.0.0.1:9002/ws"},
            "Weird Name!": {"command": "x", "namespace": "", "timeout": 2.5, "disabled": true, "era": "legacy"}
          }
        }"#,
    );
    assert!(config.problems.is_empty(), "{:?}", config.problems);
    let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["filesystem", "remote", "legacy", "socket", "Weird Name!"]
    );
    let fs = &config.servers[0];
    assert_eq!(fs.namespace, "filesystem");
    assert_eq!(
        fs.transport,
        TransportSpec::Stdio(StdioCommand {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-filesystem".into(),
                "/home/ann/Desktop".into()
            ],
            env: BTreeMap::from([
                ("DEBUG".into(), "1".into()),
                ("GITHUB_TOKEN".into(), "ghp_x".into())
            ]),
            cwd: None,
        })
    );
    assert_eq!(fs.hints.len(), 1);
    assert!(fs.hints[0].contains("read_file") && fs.hints[0].contains("not granted"));
    assert_eq!(
        config.servers[1].transport,
        TransportSpec::Http {
            url: "http://127.0.0.1:9000/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer ghp_x".into())]),
            kind: HttpKind::Auto,
        }
    );
    assert!(matches!(
        &config.servers[2].transport,
        TransportSpec::Http {
            kind: HttpKind::Sse,
            ..
        }
    ));
    assert!(matches!(
        &config.servers[3].transport,
        TransportSpec::WebSocket { .. }
    ));
    let weird = &config.servers[4];
    assert_eq!(weird.namespace, "");
    assert!(weird.disabled);
    assert_eq!(weird.timeout, Some(Duration::from_millis(2500)));
    assert_eq!(weird.era, "legacy");
    assert_eq!(fs.era, "auto");
    assert_eq!(config.enabled().count(), 4);
}

#[test]
fn every_streamable_type_spelling() {
    for spelling in [
        "http",
        "streamable-http",
        "streamableHttp",
        "streamable_http",
    ] {
        let config = read(&format!(
            r#"{{"mcpServers": {{"a": {{"type": "{spelling}", "url": "https://example.com/mcp"}}}}}}"#
        ));
        assert!(
            matches!(
                &config.servers[0].transport,
                TransportSpec::Http {
                    kind: HttpKind::StreamableHttp,
                    ..
                }
            ),
            "{spelling}"
        );
    }
}

#[test]
fn vscode_servers_and_inputs() {
    let text = r#"{
      // VS Code writes comments
      "inputs": [{"type": "promptString", "id": "key", "description": "API key", "password": true}],
      "servers": {
        "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "cwd": "sub"},
        "api": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": "${input:key}"}},
      },
    }"#;
    let config = read(text);
    assert_eq!(config.servers.len(), 1, "{config:?}");
    let TransportSpec::Stdio(StdioCommand { cwd, .. }) = &config.servers[0].transport else {
        panic!("stdio")
    };
    assert_eq!(cwd.as_deref(), Some(Path::new("/etc/mcp/sub")));
    let problem = &config.problems[0];
    assert_eq!(problem.server, "api");
    assert!(
        problem.message.contains("headers.X-Key") && problem.message.contains("no terminal"),
        "{problem}"
    );

    // Nested under "mcp" in settings.json, with someone to answer.
    struct Typed;
    impl InputProvider for Typed {
        fn ask(&self, input: &InputSpec) -> Result<String, String> {
            assert!(input.password);
            Ok("s3cret".into())
        }
    }
    let nested = format!(r#"{{"editor.fontSize": 12, "mcp": {text}}}"#);
    let config = parse(
        &nested,
        Path::new("settings.json"),
        &vars().inputs(std::sync::Arc::new(Typed)),
    )
    .unwrap();
    assert!(config.problems.is_empty(), "{:?}", config.problems);
    let TransportSpec::Http { headers, .. } = &config.servers[1].transport else {
        panic!("http")
    };
    assert_eq!(headers["X-Key"], "s3cret");
}

#[test]
fn zed_context_servers_both_forms() {
    let config = read(
        r#"{
          "theme": "One Dark",
          "context_servers": {
            "old": {"command": {"path": "/usr/bin/srv", "args": ["--x"], "env": {"A": "1"}}, "settings": {}},
            "new": {"source": "custom", "command": "srv2", "args": [], "env": null},
            "ext": {"source": "extension", "settings": {"k": 1}},
          }
        }"#,
    );
    assert_eq!(config.servers.len(), 2);
    assert_eq!(
        config.servers[0].transport,
        TransportSpec::Stdio(StdioCommand {
            command: "/usr/bin/srv".into(),
            args: vec!["--x".into()],
            env: BTreeMap::from([("A".into(), "1".into())]),
            cwd: None
        })
    );
    assert_eq!(config.problems.len(), 1);
    assert!(config.problems[0].message.contains("Zed extension"));
}

#[test]
fn env_file_is_read_and_env_overrides_it() {
    let dir = std::env::temp_dir().join(format!("mcp-host-envfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(".env"),
        "# comment\nA=from-file\nB=\"quoted value\"\n",
    )
    .unwrap();
    let path = dir.join("mcp.json");
    let text =
        r#"{"servers": {"s": {"command": "c", "envFile": ".env", "env": {"A": "from-env"}}}}"#;
    let config = parse(text, &path, &vars()).unwrap();
    let TransportSpec::Stdio(StdioCommand { env, .. }) = &config.servers[0].transport else {
        panic!()
    };
    assert_eq!(env["A"], "from-env");
    assert_eq!(env["B"], "quoted value");
    let missing = r#"{"servers": {"s": {"command": "c", "envFile": "nope.env"}}}"#;
    let config = parse(missing, &path, &vars()).unwrap();
    assert!(
        config.problems[0].message.contains("nope.env"),
        "{:?}",
        config.problems
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_unset_variable_leaves_out_only_that_server() {
    let config = read(
        r#"{"mcpServers": {
            "ok": {"command": "a"},
            "bad": {"command": "b", "env": {"TOKEN": "${NOT_SET_ANYWHERE}"}},
            "off": {"command": "${ALSO_NOT_SET}", "disabled": true}
        }}"#,
    );
    let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["ok", "off"],
        "a disabled entry's variables stop nothing"
    );
    assert_eq!(config.problems.len(), 1);
    let problem = config.problems[0].to_string();
    assert!(
        problem.contains("\"bad\"")
            && problem.contains("NOT_SET_ANYWHERE")
            && problem.contains("env.TOKEN"),
        "{problem}"
    );
}

#[test]
fn bad_entries_say_what_is_wrong() {
    let cases = [
        (r#"{"x": 1}"#, "not an object"),
        (r#"{"args": []}"#, "neither \"command\" nor \"url\""),
        (
            r#"{"type": "carrier-pigeon", "url": "http://a"}"#,
            "unknown \"type\"",
        ),
        (r#"{"type": "sse"}"#, "needs \"url\""),
        (r#"{"url": "ftp://a"}"#, "http(s)://"),
        (
            r#"{"command": "a", "args": "not-a-list"}"#,
            "array of strings",
        ),
        (r#"{"command": "a", "timeout": -1}"#, "timeout"),
        (r#"{"command": "a", "namespace": 7}"#, "namespace"),
        (r#"{"command": ""}"#, "empty"),
        (r#"{"command": "a", "era": "2020-01-01"}"#, "unknown era"),
    ];
    for (entry, want) in cases {
        let text = format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#);
        let text = if entry.starts_with(r#"{"x""#) {
            r#"{"mcpServers": {"s": 1}}"#.to_owned()
        } else {
            text
        };
        let config = read(&text);
        assert!(config.servers.is_empty(), "{entry}");
        assert!(
            config.problems[0].message.contains(want),
            "{entry}: {}",
            config.problems[0].message
        );
    }
}

#[test]
fn files_that_cannot_be_used_are_errors() {
    let e = parse("{not json", Path::new("a.json"), &vars()).unwrap_err();
    assert!(matches!(e, ConfigError::Syntax { .. }), "{e}");
    assert!(e.to_string().contains("a.json"));
    let e = parse(r#"{"something": {}}"#, Path::new("b.json"), &vars()).unwrap_err();
    assert!(e.to_string().contains("mcpServers"), "{e}");
    let e = HostConfig::load(&[PathBuf::from("/nonexistent/mcp.json")], &vars()).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/mcp.json"), "{e}");
}

#[test]
fn later_files_override_earlier_entries_of_the_same_name() {
    let mut config = read(r#"{"mcpServers": {"a": {"command": "one"}, "b": {"command": "b"}}}"#);
    config.merge(read(
        r#"{"servers": {"a": {"command": "two"}, "c": {"command": "${UNSET_C}"}}}"#,
    ));
    config.merge(read(r#"{"mcpServers": {"b": {"command": "${UNSET_B}"}}}"#));
    let commands: Vec<_> = config
        .servers
        .iter()
        .map(|s| match &s.transport {
            TransportSpec::Stdio(stdio) => (s.name.as_str(), stdio.command.as_str()),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(commands, [("a", "two")]);
    let problems: Vec<_> = config.problems.iter().map(|p| p.server.as_str()).collect();
    assert_eq!(problems, ["c", "b"]);
}

#[test]
fn a_missing_file_tells_its_path_and_cause_once() {
    let e = HostConfig::load(&[PathBuf::from("/nonexistent/mcp.json")], &vars()).unwrap_err();
    // The whole chain, as `{:#}` shows it.
    let mut told = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        told.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    assert!(
        told.starts_with("cannot read /nonexistent/mcp.json: No such file"),
        "{told}"
    );
    assert_eq!(told.matches("No such file").count(), 1, "{told}");
}

#[test]
fn unknown_keys_are_warned_with_the_key_meant() {
    let config = read(
        r#"{"mcpServers": {
            "a": {"command": "x", "envs": {"A": "1"}, "frobnicate": true},
            "b": {"comand": "x"},
            "c": {"type": "http", "ulr": "http://127.0.0.1:1/mcp"},
            "d": {"cmd": "x"}
        }}"#,
    );
    let a = &config.servers[0];
    assert_eq!(
        a.hints,
        [
            "unknown key \"envs\" is ignored; did you mean \"env\"?",
            "unknown key \"frobnicate\" is ignored"
        ]
    );
    let problems: Vec<_> = config.problems.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        problems,
        [
            "the entry has neither \"command\" nor \"url\" (did you mean \"command\" for \"comand\"?)",
            "a \"http\" entry needs \"url\" (did you mean \"url\" for \"ulr\"?)",
            "the entry has neither \"command\" nor \"url\" (unknown keys: \"cmd\")",
        ]
    );
}

#[test]
fn keys_of_other_hosts_are_not_warned_about() {
    let config = read(
        r#"{
          "inputs": [],
          "servers": {
            "vscode": {"type": "stdio", "command": "x", "args": [], "env": {}, "envFile": null,
                       "cwd": ".", "dev": {"watch": "src/**"}, "gallery": true, "version": "1.0.0"},
            "claude": {"command": "x", "disabled": false, "autoApprove": [], "alwaysAllow": [],
                       "timeout": 60, "transport": "stdio"},
            "remote": {"url": "http://127.0.0.1:1/mcp", "headers": {}, "namespace": "r", "era": "auto"},
            "zed": {"source": "custom", "command": "x", "settings": {}}
          }
        }"#,
    );
    assert!(config.problems.is_empty(), "{:?}", config.problems);
    for server in &config.servers {
        let unknown: Vec<_> = server
            .hints
            .iter()
            .filter(|h| h.contains("unknown key"))
            .collect();
        assert!(unknown.is_empty(), "{}: {unknown:?}", server.name);
    }
    assert_eq!(config.servers.len(), 4);
}

#[test]
fn a_stdio_transport_is_written_as_its_entry_was() {
    let server = ServerConfig::stdio("s", "srv", vec!["--x".into()]);
    assert_eq!(
        serde_json::to_value(&server.transport).unwrap(),
        serde_json::json!({
            "type": "stdio",
            "command": "srv",
            "args": ["--x"],
            "env": {},
            "cwd": null
        })
    );
}
