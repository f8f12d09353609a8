//! OAuth 2.1 authorization for MCP over HTTP, as the specification
//! describes it: a resource-server layer that protects an MCP endpoint, a
//! small built-in authorization server, and the client side of the flow.
//! stdio servers take their credentials from the environment instead.
//!
//! On the client side ([`client`]), a request the HTTP transport sends
//! meets, in order: `grants`, which adds the credentials it carries (the
//! access token, refreshed when about to expire, with a `dpop` proof for a
//! bound token); on a 401 or a 403 `insufficient_scope`, `challenges`,
//! which answers the refusal (`challenge` parses its `WWW-Authenticate`)
//! with the tokens kept in `store`, a refresh, or a new `flow`; `flow`
//! runs `discovery` (protected resource metadata, then authorization
//! server metadata), `registration` (pre-registered, client ID metadata
//! document, or dynamic) and the grant in `grants` (authorization code
//! with `pkce`, a `user_agent` visiting the authorization URL; client
//! credentials, JWT bearer, identity assertion); `store` keeps the
//! registration and the tokens for the next run. `answer` reads the JSON
//! a POST brings back, for `registration` and the identity provider's
//! exchange in `grants`.
//!
//! On the authorization server's side ([`server`]), a request meets, in
//! order: `limits` (per client address, and per user name on failed
//! logins); then its route: the metadata and the JWK Set of `keys`,
//! answered in `server/mod.rs`; `register` (dynamic registration);
//! `authorize`, which resolves the client (from `store`, or a client ID
//! metadata document fetched by `cimd`), shows the login and consent
//! `page`, checks the `password` and redirects back with a code; `token`,
//! which authenticates the client (`client_auth`; for `private_key_jwt`,
//! against the client's JWK Set, registered or fetched by `cimd`), redeems
//! the code or rotates the refresh token in `store`, and signs the access
//! token with `keys`. `config` holds the settings, `sweep` drops expired
//! state every minute, and `util` holds small helpers.
//!
//! On the resource server's side ([`resource`]), a request to the MCP
//! endpoint meets, in order: `layer` ([`BearerAuthLayer`]), which reads
//! the bearer token; the [`TokenValidator`] its `config` names, `jwt`
//! (against the authorization server's JWKS) or `introspection` (RFC
//! 7662, cached); `principal`, who the token speaks for, whose scopes
//! `layer` checks before handing it to the endpoint with the request. A
//! refusal's challenge sends the client to the protected resource
//! metadata, which `metadata` serves. `common` holds what all three sides
//! share: the clock, random tokens, SHA-256 digests, HTTP Basic
//! credentials and the JWK coordinates of a P-256 key.

#![warn(missing_docs)]

pub mod client;
mod common;
pub mod resource;
pub mod server;

pub use resource::{BearerAuthLayer, Principal, ResourceServerConfig, TokenValidator};
pub use server::{AuthServerConfig, AuthServerError, AuthorizationServer};
