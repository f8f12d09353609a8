//! The authorization server's endpoints as a client reaches them: the
//! authorize query and login form, the token form, the registration JSON,
//! the metadata and keys, with any method, content type, body and
//! credentials. Rate limits are off, so every input reaches the parsers.
//! No input may make the server fail inside (500) or panic.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use axum::body::Body;
use http::{Request, StatusCode};
use libfuzzer_sys::fuzz_target;
use mcp_auth::server::{ClientConfig, RateLimits, UserAccount};
use mcp_auth::{AuthServerConfig, AuthorizationServer};
use tower::ServiceExt as _;

const ISSUER: &str = "http://127.0.0.1:8080";
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/authorize"),
    ("POST", "/authorize"),
    ("POST", "/token"),
    ("POST", "/register"),
    ("GET", "/.well-known/oauth-authorization-server"),
    ("GET", "/jwks"),
    ("PUT", "/token"),
];
const CONTENT_TYPES: &[&str] = &[
    "application/x-www-form-urlencoded",
    "application/json",
    "text/plain",
    "application/x-www-form-urlencoded; charset=utf-8",
];

#[derive(Arbitrary, Debug)]
struct Input {
    route: u8,
    query: String,
    content_type: Option<u8>,
    authorization: Option<String>,
    body: Vec<u8>,
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

fn router() -> &'static axum::Router {
    static ROUTER: OnceLock<axum::Router> = OnceLock::new();
    ROUTER.get_or_init(|| {
        // A cheap hash (8 KiB, one pass), so a login costs microseconds.
        let phc = "$argon2id$v=19$m=8,t=1,p=1$c2l4dGVlbiBieXRlIHNhbA$7hWuhVrb0kbjHMzt6tMQqGmm6iYP+wOpBbdk7n8fDjM";
        let config = AuthServerConfig::builder(ISSUER)
            .user(UserAccount::with_password_hash("alice", phc).expect("a PHC string"))
            .client(ClientConfig::public(
                "app",
                vec!["http://127.0.0.1:9/callback".to_owned()],
            ))
            .rate_limits(RateLimits::none())
            .build()
            .expect("config");
        let server = AuthorizationServer::new(config).expect("server");
        runtime().block_on(async { server.router() })
    })
}

fuzz_target!(|input: Input| {
    let (method, path) = ROUTES[usize::from(input.route) % ROUTES.len()];
    let uri = if input.query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", input.query)
    };
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(kind) = input.content_type {
        request = request.header(
            "content-type",
            CONTENT_TYPES[usize::from(kind) % CONTENT_TYPES.len()],
        );
    }
    if let Some(authorization) = &input.authorization {
        request = request.header("authorization", authorization.as_str());
    }
    // Targets and headers a client cannot send are refused before the server.
    let Ok(request) = request.body(Body::from(input.body)) else {
        return;
    };
    let response = runtime()
        .block_on(router().clone().oneshot(request))
        .expect("the router answers");
    assert_ne!(
        response.status(),
        StatusCode::INTERNAL_SERVER_ERROR,
        "{method} {path}: 500"
    );
});
