//! The OpenAPI server through `mcp-client` over a real session, in a legacy
//! revision (2025-11-25) and in 2026-07-28, against a real HTTP API on
//! 127.0.0.1: a part of Swagger Petstore 3 (axum) described by the
//! published Petstore 3 document (`fixtures/petstore3.json`). The SSRF
//! guard has a test named after each case it blocks.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use mcp_builtin::openapi::{Config, server};
use mcp_client::{Client, ClientError};
use mcp_schema::{CallToolResult, ProtocolVersion, ResourceContents, Tool};
use serde_json::{Value, json};
use support::{connect_in_process, within};

const ERAS: [ProtocolVersion; 2] = [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28];

const PETSTORE: &str = include_str!("fixtures/petstore3.json");

/// One request as the API saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    api_key: Option<String>,
}

#[derive(Default)]
struct Store {
    pets: BTreeMap<i64, Value>,
    seen: Vec<Seen>,
}

type Shared = Arc<Mutex<Store>>;

/// The test API, listening on 127.0.0.1.
struct Api {
    addr: SocketAddr,
    store: Shared,
}

impl Api {
    fn base(&self) -> String {
        format!("http://127.0.0.1:{}/api/v3", self.addr.port())
    }

    fn seen(&self) -> Vec<Seen> {
        self.store.lock().unwrap().seen.clone()
    }
}

fn pet(id: i64, name: &str, status: &str) -> Value {
    json!({"id": id, "name": name, "photoUrls": [], "status": status,
           "category": {"id": 1, "name": "Dogs"}, "tags": [{"id": 1, "name": "good"}]})
}

async fn record(State(store): State<Shared>, request: Request, next: Next) -> Response {
    let seen = {
        let headers = request.headers();
        let text = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Seen {
            method: request.method().to_string(),
            path: request.uri().path().to_owned(),
            authorization: text("authorization"),
            api_key: text("api_key"),
        }
    };
    store.lock().unwrap().seen.push(seen);
    next.run(request).await
}

async fn get_pet(State(store): State<Shared>, Path(id): Path<String>) -> Response {
    let Ok(id) = id.parse::<i64>() else {
        return (StatusCode::BAD_REQUEST, "Invalid ID supplied").into_response();
    };
    match store.lock().unwrap().pets.get(&id) {
        Some(pet) => axum::Json(pet.clone()).into_response(),
        None => (StatusCode::NOT_FOUND, "Pet not found").into_response(),
    }
}

async fn delete_pet(State(store): State<Shared>, Path(id): Path<i64>) -> Response {
    match store.lock().unwrap().pets.remove(&id) {
        Some(_) => (StatusCode::OK, "Pet deleted").into_response(),
        None => (StatusCode::BAD_REQUEST, "Invalid pet value").into_response(),
    }
}

async fn add_pet(
    State(store): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if headers.get(header::CONTENT_TYPE).map(|v| v.as_bytes()) != Some(b"application/json") {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "JSON only").into_response();
    }
    let Ok(pet) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "Invalid input").into_response();
    };
    let Some(id) = pet["id"].as_i64() else {
        return (StatusCode::UNPROCESSABLE_ENTITY, "Validation exception").into_response();
    };
    store.lock().unwrap().pets.insert(id, pet.clone());
    axum::Json(pet).into_response()
}

async fn update_pet(State(store): State<Shared>, axum::Json(pet): axum::Json<Value>) -> Response {
    let id = pet["id"].as_i64().unwrap_or_default();
    let mut store = store.lock().unwrap();
    match store.pets.get_mut(&id) {
        Some(slot) => {
            *slot = pet.clone();
            axum::Json(pet).into_response()
        }
        None => (StatusCode::NOT_FOUND, "Pet not found").into_response(),
    }
}

async fn find_by_status(
    State(store): State<Shared>,
    Query(query): Query<BTreeMap<String, String>>,
) -> axum::Json<Value> {
    let status = query.get("status").map_or("available", String::as_str);
    let pets: Vec<Value> = store
        .lock()
        .unwrap()
        .pets
        .values()
        .filter(|p| p["status"] == status)
        .cloned()
        .collect();
    axum::Json(Value::Array(pets))
}

async fn inventory(State(store): State<Shared>) -> axum::Json<Value> {
    let mut counts = BTreeMap::<String, i64>::new();
    for pet in store.lock().unwrap().pets.values() {
        *counts
            .entry(pet["status"].as_str().unwrap_or_default().to_owned())
            .or_default() += 1;
    }
    axum::Json(json!(counts))
}

/// Starts the test API with pets 1 (available), 2 (sold), 3 (available),
/// plus routes for the documents of single tests.
async fn start_api() -> Api {
    let store: Shared = Arc::default();
    {
        let mut s = store.lock().unwrap();
        s.pets.insert(1, pet(1, "Rex", "available"));
        s.pets.insert(2, pet(2, "Tom", "sold"));
        s.pets.insert(3, pet(3, "Kitty", "available"));
    }
    let api = Router::new()
        .route(
            "/openapi.json",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], PETSTORE) }),
        )
        .route("/pet", post(add_pet).put(update_pet))
        .route("/pet/findByStatus", get(find_by_status))
        .route("/pet/{petId}", get(get_pet).delete(delete_pet))
        .route("/store/inventory", get(inventory))
        .route("/moved", get(|| async { Redirect::to("/api/v3/pet/1") }))
        .route(
            "/spec",
            get(|| async { Redirect::to("/api/v3/openapi.json") }),
        )
        .route(
            "/to-metadata",
            get(|| async { Redirect::to("http://169.254.169.254/latest/meta-data/") }),
        )
        .route(
            "/to-neighbour",
            get(|| async { Redirect::to("http://127.0.0.2:9/api/v3/pet/1") }),
        )
        .route(
            "/nodes",
            post(|axum::Json(node): axum::Json<Value>| async move {
                axum::Json(json!({"received": node}))
            }),
        )
        .route(
            "/pixel.png",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "image/png")],
                    b"\x89PNG\r\n\x1a\n".to_vec(),
                )
            }),
        );
    let app = Router::new()
        .nest("/api/v3", api)
        .layer(middleware::from_fn_with_state(Arc::clone(&store), record))
        .with_state(Arc::clone(&store));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    Api { addr, store }
}

/// The Petstore document as a file config: the published document with
/// its relative server, so the base URL is given.
fn petstore(api: &Api) -> Config {
    Config::from_text(PETSTORE)
        .base_url(api.base())
        .allow_private_network(true)
}

async fn connect(config: Config, era: ProtocolVersion) -> Client {
    let server = within("the server", server(config))
        .await
        .expect("the server starts");
    connect_in_process(&server, era).await
}

/// The server over Streamable HTTP on a free loopback port, and a client.
async fn connect_over_http(config: Config, era: ProtocolVersion) -> Client {
    let server = server(config).await.expect("the server starts");
    support::connect_over_http(&server, era).await
}

async fn tools(client: &Client) -> Vec<Tool> {
    within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list")
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    within(tool, client.call_tool(tool, args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("")
}

/// The structured content of a successful call.
async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let result = call(client, tool, args.clone()).await;
    assert!(
        !result.is_error(),
        "{tool} {args} failed: {}",
        text(&result)
    );
    result
        .structured_content
        .unwrap_or_else(|| panic!("{tool} gives structured content"))
}

/// The message of a failed call.
async fn refused(client: &Client, tool: &str, args: Value) -> String {
    let result = call(client, tool, args.clone()).await;
    assert!(
        result.is_error(),
        "{tool} {args} should fail, gave {}",
        text(&result)
    );
    text(&result)
}

#[tokio::test]
async fn every_petstore_operation_is_a_tool_with_schema_title_and_honest_hints() {
    let api = start_api().await;
    for era in ERAS {
        let client = connect(petstore(&api), era).await;
        let tools = tools(&client).await;
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "addPet",
                "createUser",
                "createUsersWithListInput",
                "deleteOrder",
                "deletePet",
                "deleteUser",
                "findPetsByStatus",
                "findPetsByTags",
                "getInventory",
                "getOrderById",
                "getPetById",
                "getUserByName",
                "loginUser",
                "logoutUser",
                "placeOrder",
                "updatePet",
                "updatePetWithForm",
                "updateUser",
                "uploadFile",
            ],
            "{era}"
        );
        let get_pet = tool(&tools, "getPetById");
        assert_eq!(get_pet.title.as_deref(), Some("Find pet by ID."));
        let description = get_pet.description.as_deref().unwrap();
        assert!(
            description.contains("Returns a single pet."),
            "{description}"
        );
        assert!(description.contains("`GET /pet/{petId}`"), "{description}");
        assert_eq!(
            get_pet.input_schema["properties"]["petId"]["type"],
            "integer"
        );
        assert_eq!(get_pet.input_schema["required"], json!(["petId"]));

        // The body is `body`, its schema a reference into the tool's $defs,
        // which hold the closure (Pet, Category, Tag) and nothing else.
        let add = tool(&tools, "addPet");
        assert_eq!(
            add.input_schema["properties"]["body"]["$ref"],
            "#/$defs/Pet"
        );
        assert_eq!(add.input_schema["required"], json!(["body"]));
        let defs = add.input_schema["$defs"].as_object().expect("$defs");
        let mut def_names: Vec<&String> = defs.keys().collect();
        def_names.sort();
        assert_eq!(def_names, ["Category", "Pet", "Tag"]);
        assert_eq!(
            defs["Pet"]["properties"]["category"],
            json!({"$ref": "#/$defs/Category"})
        );
        assert_eq!(defs["Pet"]["required"], json!(["name", "photoUrls"]));

        let hints = |name: &str| {
            let h = tool(&tools, name).annotations.clone().expect("annotations");
            (
                h.read_only_hint,
                h.destructive_hint,
                h.idempotent_hint,
                h.open_world_hint,
            )
        };
        let (t, f) = (Some(true), Some(false));
        assert_eq!(hints("getPetById"), (t, f, t, t));
        assert_eq!(hints("deletePet"), (f, t, t, t));
        assert_eq!(hints("updatePet"), (f, t, t, t));
        assert_eq!(hints("addPet"), (f, None, f, t));
        for tool in &tools {
            assert_eq!(
                tool.annotations.as_ref().unwrap().open_world_hint,
                Some(true)
            );
            assert!(tool.output_schema.is_some(), "{}", tool.name);
        }
        // An octet-stream body is base64 text.
        let upload = tool(&tools, "uploadFile");
        assert_eq!(
            upload.input_schema["properties"]["body"]["contentEncoding"],
            "base64"
        );
    }
}

#[tokio::test]
async fn petstore_calls_reach_the_api_and_answer_status_and_body() {
    let api = start_api().await;
    for era in ERAS {
        let client = connect(petstore(&api), era).await;
        let added = ok(
            &client,
            "addPet",
            json!({"body": {"id": 10, "name": "doggie", "photoUrls": ["p.png"], "status": "pending"}}),
        )
        .await;
        assert_eq!(added["status"], 200);
        assert_eq!(added["contentType"], "application/json");
        assert_eq!(added["body"]["name"], "doggie");

        let found = ok(&client, "getPetById", json!({"petId": 10})).await;
        assert_eq!(found["body"]["status"], "pending", "{era}");

        let pending = ok(&client, "findPetsByStatus", json!({"status": "pending"})).await;
        assert_eq!(pending["body"].as_array().unwrap().len(), 1);
        let available = ok(&client, "findPetsByStatus", json!({"status": "available"})).await;
        assert_eq!(available["body"].as_array().unwrap().len(), 2);

        let updated = ok(
            &client,
            "updatePet",
            json!({"body": {"id": 10, "name": "doggie", "photoUrls": [], "status": "sold"}}),
        )
        .await;
        assert_eq!(updated["body"]["status"], "sold");

        let deleted = call(&client, "deletePet", json!({"petId": 10})).await;
        assert!(!deleted.is_error(), "{}", text(&deleted));
        assert_eq!(text(&deleted), "Pet deleted");

        // A status other than 2xx is a tool error with the status and body.
        let gone = refused(&client, "getPetById", json!({"petId": 10})).await;
        assert_eq!(gone, "HTTP 404 Not Found: Pet not found");
        let invalid = refused(
            &client,
            "updatePet",
            json!({"body": {"id": 77, "name": "x", "photoUrls": []}}),
        )
        .await;
        assert!(invalid.starts_with("HTTP 404"), "{invalid}");

        // Arguments are checked against the schema before any request.
        let before = api.seen().len();
        let result = within(
            "bad args",
            client.call_tool("getPetById", json!({"petId": "ten"})),
        )
        .await;
        match result {
            Ok(r) => assert!(r.is_error(), "{}", text(&r)),
            Err(ClientError::Request(_)) => {}
            Err(e) => panic!("{e}"),
        }
        let result = within(
            "extra args",
            client.call_tool("getPetById", json!({"petId": 1, "nope": 1})),
        )
        .await;
        assert!(result.map(|r| r.is_error()).unwrap_or(true));
        assert_eq!(api.seen().len(), before, "no request for bad arguments");
    }
}

#[tokio::test]
async fn the_document_is_fetched_by_url_and_its_relative_server_resolved_against_it() {
    let api = start_api().await;
    let url = format!("{}/openapi.json", api.base());
    for era in ERAS {
        let client = connect(Config::new(&url).allow_private_network(true), era).await;
        let rex = ok(&client, "getPetById", json!({"petId": 1})).await;
        assert_eq!(rex["body"]["name"], "Rex");
    }
    // Through a redirect, the server is resolved against the final URL.
    let client = connect(
        Config::new(format!("{}/spec", api.base())).allow_private_network(true),
        ProtocolVersion::V2025_11_25,
    )
    .await;
    let rex = ok(&client, "getPetById", json!({"petId": 1})).await;
    assert_eq!(rex["body"]["name"], "Rex");
    let seen = api.seen();
    assert!(seen.iter().any(|s| s.path == "/api/v3/spec"));
    assert!(seen.iter().any(|s| s.path == "/api/v3/openapi.json"));
    assert!(seen.iter().any(|s| s.path == "/api/v3/pet/1"));
}

#[tokio::test]
async fn a_file_document_needs_a_base_url_when_its_server_is_relative_or_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("petstore3.json");
    std::fs::write(&path, PETSTORE).unwrap();
    let e = server(Config::new(path.to_str().unwrap()))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("--base-url"), "{e}");
    let bare = dir.path().join("bare.yaml");
    std::fs::write(
        &bare,
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n",
    )
    .unwrap();
    let e = server(Config::new(bare.to_str().unwrap()))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("names no server"), "{e}");
    let e = server(Config::new(
        dir.path().join("missing.json").to_str().unwrap(),
    ))
    .await
    .unwrap_err();
    assert!(e.to_string().contains("missing.json"), "{e}");
    // With --base-url the file serves, as JSON or as YAML.
    let api = start_api().await;
    let yaml = dir.path().join("petstore3.yaml");
    let value: Value = serde_json::from_str(PETSTORE).unwrap();
    std::fs::write(&yaml, serde_yaml_ng::to_string(&value).unwrap()).unwrap();
    let client = connect(
        Config::new(yaml.to_str().unwrap())
            .base_url(api.base())
            .allow_private_network(true),
        ProtocolVersion::V2026_07_28,
    )
    .await;
    assert_eq!(tools(&client).await.len(), 19);
    let rex = ok(&client, "getPetById", json!({"petId": 1})).await;
    assert_eq!(rex["body"]["name"], "Rex");
    let client = connect(
        Config::new(path.to_str().unwrap())
            .base_url(api.base())
            .allow_private_network(true),
        ProtocolVersion::V2025_11_25,
    )
    .await;
    let inventory = ok(&client, "getInventory", json!({})).await;
    assert_eq!(inventory["body"], json!({"available": 2, "sold": 1}));
}

#[tokio::test]
async fn get_operations_are_api_resources_and_templates() {
    let api = start_api().await;
    for era in ERAS {
        let client = connect(petstore(&api), era).await;
        let resources = within("resources", client.list_all_resources())
            .await
            .unwrap();
        let mut uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        uris.sort();
        assert_eq!(
            uris,
            [
                "api:///pet/findByStatus",
                "api:///pet/findByTags",
                "api:///store/inventory",
                "api:///user/login",
                "api:///user/logout",
            ],
            "{era}"
        );
        let templates = within("templates", client.list_all_resource_templates())
            .await
            .unwrap();
        let mut forms: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
        forms.sort();
        assert_eq!(
            forms,
            [
                "api:///pet/{petId}",
                "api:///store/order/{orderId}",
                "api:///user/{username}"
            ]
        );
        let inventory = resources
            .iter()
            .find(|r| r.uri == "api:///store/inventory")
            .unwrap();
        assert_eq!(inventory.mime_type.as_deref(), Some("application/json"));
        assert_eq!(inventory.name, "getInventory");

        let read = within("read", client.read_resource("api:///pet/3"))
            .await
            .unwrap();
        let [ResourceContents::Text(contents)] = read.contents.as_slice() else {
            panic!("one text content: {:?}", read.contents)
        };
        assert_eq!(contents.mime_type.as_deref(), Some("application/json"));
        let kitty: Value = serde_json::from_str(&contents.text).unwrap();
        assert_eq!(kitty["name"], "Kitty");

        match within("missing", client.read_resource("api:///pet/404")).await {
            Err(ClientError::Request(mcp_core::RequestError::Rpc(e))) => {
                assert_eq!(e.code, era.resource_not_found_code(), "{era}");
            }
            other => panic!("api:///pet/404 should be not found, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn credentials_reach_the_api_and_never_the_client() {
    let api = start_api().await;
    for era in ERAS {
        let config = petstore(&api)
            .header("Authorization", "Bearer secret")
            .header("api_key", "secret-key");
        let client = connect(config, era).await;
        let tools = tools(&client).await;
        // The header the server sets is no argument any more.
        let delete = tool(&tools, "deletePet");
        assert!(delete.input_schema["properties"].get("api_key").is_none());
        let mut shown = serde_json::to_string(&tools).unwrap();
        shown += client.instructions().unwrap_or_default();
        let before = api.seen().len();
        for (name, args) in [
            ("getInventory", json!({})),
            ("deletePet", json!({"petId": 2})),
            ("deletePet", json!({"petId": 2})),
            ("getPetById", json!({"petId": 999})),
        ] {
            let result = call(&client, name, args).await;
            shown += &serde_json::to_string(&result).unwrap();
        }
        let resources = within("resources", client.list_all_resources())
            .await
            .unwrap();
        shown += &serde_json::to_string(&resources).unwrap();
        let read = within("read", client.read_resource("api:///store/inventory"))
            .await
            .unwrap();
        shown += &serde_json::to_string(&read).unwrap();
        assert!(
            !shown.contains("secret"),
            "{era}: a credential was shown: {shown}"
        );

        let seen = api.seen();
        let calls = &seen[before..];
        assert_eq!(calls.len(), 5, "{calls:?}");
        for request in calls {
            assert_eq!(
                request.authorization.as_deref(),
                Some("Bearer secret"),
                "{request:?}"
            );
            assert_eq!(
                request.api_key.as_deref(),
                Some("secret-key"),
                "{request:?}"
            );
        }
        assert!(
            calls
                .iter()
                .any(|s| s.method == "DELETE" && s.path == "/api/v3/pet/2")
        );
        api.store
            .lock()
            .unwrap()
            .pets
            .insert(2, pet(2, "Tom", "sold"));
    }
}

#[tokio::test]
async fn include_and_exclude_by_tag_and_operation() {
    let api = start_api().await;
    let names = |config: Config| async move {
        let client = connect(config, ProtocolVersion::V2026_07_28).await;
        let mut names: Vec<String> = tools(&client).await.into_iter().map(|t| t.name).collect();
        names.sort();
        names
    };
    assert_eq!(
        names(petstore(&api).include_tag("store")).await,
        ["deleteOrder", "getInventory", "getOrderById", "placeOrder"]
    );
    assert_eq!(
        names(
            petstore(&api)
                .include_tag("store")
                .exclude_op("deleteOrder")
        )
        .await,
        ["getInventory", "getOrderById", "placeOrder"]
    );
    assert_eq!(
        names(
            petstore(&api)
                .include_op("getPetById")
                .include_op("getInventory")
        )
        .await,
        ["getInventory", "getPetById"]
    );
    let all_but = names(petstore(&api).exclude_tag("user").exclude_tag("store")).await;
    assert_eq!(all_but.len(), 8);
    assert!(
        all_but
            .iter()
            .all(|n| !n.contains("User") && !n.contains("Order"))
    );
    let e = server(petstore(&api).include_op("stealPets"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("stealPets"), "{e}");
}

#[tokio::test]
async fn names_are_sanitized_and_collisions_get_suffixes() {
    let api = start_api().await;
    let long = "x".repeat(200);
    let doc = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {
        "/pet/{petId}": {
            "get": {"operationId": "get pet!", "parameters": [
                {"name": "petId", "in": "path", "required": true, "schema": {"type": "integer"}}]},
            "delete": {"parameters": [
                {"name": "petId", "in": "path", "required": true, "schema": {"type": "integer"}}]}},
        "/store/inventory": {"get": {"operationId": "get_pet"}},
        "/pet/findByStatus": {"get": {"operationId": long}}}});
    for era in ERAS {
        let client = connect(
            Config::from_text(doc.to_string())
                .base_url(api.base())
                .allow_private_network(true),
            era,
        )
        .await;
        let tools = tools(&client).await;
        let mut names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        names.sort();
        let mut expected = vec![
            "delete_pet_petId".to_owned(),
            "get_pet".to_owned(),
            "get_pet_2".to_owned(),
            "x".repeat(128),
        ];
        expected.sort();
        assert_eq!(names, expected, "{era}");
        for name in &names {
            assert!(
                (1..=128).contains(&name.len())
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)),
                "{name}"
            );
        }
        // The first in document order keeps the name; both reach their
        // own operation.
        let rex = ok(&client, "get_pet", json!({"petId": 1})).await;
        assert_eq!(rex["body"]["name"], "Rex");
        let inventory = ok(&client, "get_pet_2", json!({})).await;
        assert_eq!(inventory["body"]["available"], 2);
    }
}

#[tokio::test]
async fn a_recursive_ref_lists_as_a_cycle_in_defs_and_calls() {
    let api = start_api().await;
    let doc = json!({"openapi": "3.0.3", "info": {"title": "trees", "version": "1"},
        "paths": {"/nodes": {"post": {"operationId": "sendTree",
            "requestBody": {"required": true, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Node"}}}},
            "responses": {"200": {"description": "echo"}}}}},
        "components": {"schemas": {"Node": {"type": "object", "required": ["value"], "properties": {
            "value": {"type": "string"},
            "note": {"type": "string", "nullable": true},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}});
    for era in ERAS {
        let client = connect(
            Config::from_text(doc.to_string())
                .base_url(api.base())
                .allow_private_network(true),
            era,
        )
        .await;
        let tools = tools(&client).await;
        let send = tool(&tools, "sendTree");
        assert_eq!(
            send.input_schema["properties"]["body"]["$ref"],
            "#/$defs/Node"
        );
        let node = &send.input_schema["$defs"]["Node"];
        assert_eq!(
            node["properties"]["children"]["items"]["$ref"],
            "#/$defs/Node"
        );
        assert_eq!(
            node["properties"]["note"]["type"],
            json!(["string", "null"])
        );
        let tree = json!({"value": "root", "note": null, "children": [
            {"value": "a", "children": [{"value": "a1", "children": []}]},
            {"value": "b"}]});
        let echoed = ok(&client, "sendTree", json!({"body": tree})).await;
        assert_eq!(echoed["body"]["received"], tree, "{era}");
        // The recursive schema is enforced: a child without `value`.
        let bad = json!({"body": {"value": "root", "children": [{"children": []}]}});
        let result = within("bad tree", client.call_tool("sendTree", bad)).await;
        assert!(result.map(|r| r.is_error()).unwrap_or(true));
    }
}

#[tokio::test]
async fn a_body_over_the_cap_is_cut_and_the_result_says_how_much_was_dropped() {
    let api = start_api().await;
    {
        let mut store = api.store.lock().unwrap();
        for id in 100..160 {
            store.pets.insert(id, pet(id, "Clone", "pending"));
        }
    }
    let full = serde_json::to_vec(&Value::Array(
        api.store
            .lock()
            .unwrap()
            .pets
            .values()
            .filter(|p| p["status"] == "pending")
            .cloned()
            .collect(),
    ))
    .unwrap()
    .len();
    for era in ERAS {
        let client = connect(petstore(&api).max_response_bytes(256), era).await;
        let result = call(&client, "findPetsByStatus", json!({"status": "pending"})).await;
        assert!(!result.is_error(), "{}", text(&result));
        let structured = result.structured_content.clone().unwrap();
        assert_eq!(structured["truncated"], true);
        assert_eq!(structured["droppedBytes"], (full - 256) as u64, "{era}");
        assert_eq!(structured["body"].as_str().unwrap().len(), 256);
        let shown = text(&result);
        assert!(
            shown.contains(&format!("{} bytes dropped", full - 256)),
            "{shown}"
        );
        // Binary bodies come as image content when small enough.
        let doc =
            json!({"openapi": "3.1.0", "paths": {"/pixel.png": {"get": {"operationId": "pixel"}}}});
        let client = connect(
            Config::from_text(doc.to_string())
                .base_url(api.base())
                .allow_private_network(true),
            era,
        )
        .await;
        let result = call(&client, "pixel", json!({})).await;
        let mcp_schema::ContentBlock::Image(image) = &result.content[0] else {
            panic!("an image block: {:?}", result.content)
        };
        assert_eq!(image.mime_type, "image/png");
        assert_eq!(result.structured_content.unwrap()["size"], 8);
    }
}

#[tokio::test]
async fn the_server_serves_over_streamable_http_in_both_eras() {
    let api = start_api().await;
    for era in ERAS {
        let client = connect_over_http(petstore(&api), era).await;
        assert_eq!(tools(&client).await.len(), 19);
        let rex = ok(&client, "getPetById", json!({"petId": 1})).await;
        assert_eq!(rex["body"]["name"], "Rex", "{era}");
    }
}

/// A document with one GET operation per path given, at `base`, private
/// networks refused, connecting given up quickly.
fn guarded(base: &str, paths: &[&str]) -> Config {
    let mut ops = serde_json::Map::new();
    for (i, path) in paths.iter().enumerate() {
        ops.insert(
            (*path).to_owned(),
            json!({"get": {"operationId": format!("op{i}")}}),
        );
    }
    let doc = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": ops});
    Config::from_text(doc.to_string())
        .base_url(base)
        .connect_timeout(Duration::from_secs(2))
}

/// Calls `op0` of a guarded document and gives the refusal, asserting no
/// request reached the API.
async fn refusal(api: &Api, config: Config) -> String {
    let before = api.seen().len();
    let client = connect(config, ProtocolVersion::V2025_11_25).await;
    let message = refused(&client, "op0", json!({})).await;
    assert_eq!(api.seen().len(), before, "the API was reached: {message}");
    message
}

#[tokio::test]
async fn ssrf_refuses_127_0_0_1() {
    let api = start_api().await;
    let message = refusal(&api, guarded(&api.base(), &["/pet/1"])).await;
    assert!(
        message.contains("127.0.0.1 is a loopback address"),
        "{message}"
    );
    assert!(message.contains("--allow-private-network"), "{message}");
}

#[tokio::test]
async fn ssrf_refuses_the_metadata_address_169_254_169_254() {
    let api = start_api().await;
    let message = refusal(
        &api,
        guarded("http://169.254.169.254/latest", &["/meta-data/"]),
    )
    .await;
    assert!(
        message.contains("169.254.169.254 is a link-local"),
        "{message}"
    );
    // Also in its IPv4-mapped IPv6 spelling.
    let message = refusal(
        &api,
        guarded("http://[::ffff:169.254.169.254]/latest", &["/meta-data/"]),
    )
    .await;
    assert!(message.contains("link-local"), "{message}");
}

#[tokio::test]
async fn ssrf_refuses_ipv6_loopback_1() {
    let api = start_api().await;
    // An API on [::1] where the machine has IPv6, so a guard that let the
    // request through would reach it.
    let v6 = tokio::net::TcpListener::bind("[::1]:0").await.ok();
    let port = v6.as_ref().map_or(9, |l| l.local_addr().unwrap().port());
    if let Some(listener) = v6 {
        let app = Router::new().route("/pet/1", get(|| async { "reached" }));
        tokio::spawn(async move { axum::serve(listener, app).await });
    }
    let message = refusal(&api, guarded(&format!("http://[::1]:{port}"), &["/pet/1"])).await;
    assert!(message.contains("::1 is a loopback address"), "{message}");
    assert!(!message.contains("reached"));
}

#[tokio::test]
async fn ssrf_refuses_a_name_resolving_to_loopback_localhost() {
    let api = start_api().await;
    let base = format!("http://localhost:{}/api/v3", api.addr.port());
    let message = refusal(&api, guarded(&base, &["/pet/1"])).await;
    assert!(
        message.contains("refused to connect to localhost") && message.contains("loopback"),
        "{message}"
    );
    // The document cannot be fetched from there either.
    let e = server(Config::new(format!("{base}/openapi.json")))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("loopback"), "{e}");
}

#[tokio::test]
async fn ssrf_refuses_a_redirect_from_an_allowed_host_to_a_private_one() {
    let api = start_api().await;
    // The API's own address is allowed (as an operator allows one internal
    // API); a redirect from it to the metadata address or to a neighbour
    // on the loopback network is refused at that hop.
    let allowed = |paths: &[&str]| guarded(&api.base(), paths).allow_address(api.addr.ip());
    let client = connect(
        allowed(&["/to-metadata", "/to-neighbour", "/moved"]),
        ProtocolVersion::V2026_07_28,
    )
    .await;
    let message = refused(&client, "op0", json!({})).await;
    assert!(
        message.contains("169.254.169.254 is a link-local"),
        "{message}"
    );
    let message = refused(&client, "op1", json!({})).await;
    assert!(message.contains("127.0.0.2 is a loopback"), "{message}");
    // A redirect within the allowed API is followed.
    let moved = ok(&client, "op2", json!({})).await;
    assert_eq!(moved["body"]["name"], "Rex");
    let hops: Vec<String> = api.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(
        hops,
        [
            "/api/v3/to-metadata",
            "/api/v3/to-neighbour",
            "/api/v3/moved",
            "/api/v3/pet/1"
        ]
    );
}
