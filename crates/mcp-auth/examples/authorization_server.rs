//! Runs the built-in authorization server on a loopback port, with one user
//! and one public client, for manual trials and the conformance suite.
//!
//! ```text
//! cargo run -p mcp-auth --example authorization_server -- [PORT] [--auto-approve]
//! ```
//!
//! User `alice` / password `wonderland`; client `conformance-client`
//! (public) and `conformance-confidential` (secret `conformance-secret`),
//! both with redirect URI `http://127.0.0.1:3000/callback`.
//! `--auto-approve` turns on the test-only automatic approval as `alice`,
//! and lifts the rate limits (a conformance suite drives every scenario
//! from one address).

use std::net::SocketAddr;

use mcp_auth::server::{
    AuthServerConfig, AuthorizationServer, ClientConfig, RateLimits, TokenEndpointAuthMethod,
    UserAccount,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let port: u16 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(8090);
    let auto = args.iter().any(|a| a == "--auto-approve");
    let issuer = format!("http://127.0.0.1:{port}");
    let redirect = vec!["http://127.0.0.1:3000/callback".to_owned()];
    let mut builder = AuthServerConfig::builder(&issuer)
        .resource(format!("{issuer}/mcp"))
        .scopes_supported(["mcp"])
        .user(UserAccount::with_password("alice", "wonderland")?)
        .client(ClientConfig::public("conformance-client", redirect.clone()))
        .client(ClientConfig::confidential(
            "conformance-confidential",
            "conformance-secret",
            TokenEndpointAuthMethod::ClientSecretBasic,
            redirect,
        ));
    if auto {
        builder = builder
            .auto_approve_as_user_for_testing("alice")
            .rate_limits(RateLimits::none());
    }
    let server = AuthorizationServer::new(builder.build()?)?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("authorization server at {issuer}");
    // The client's address, for the rate limits.
    let app = server
        .router()
        .into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app).await?;
    Ok(())
}
