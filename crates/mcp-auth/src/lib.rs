//! OAuth 2.1 authorization for MCP over HTTP, as the specification
//! describes it: a resource-server layer that protects an MCP endpoint, a
//! small built-in authorization server, and the client side of the flow.
//! stdio servers take their credentials from the environment instead.

#![warn(missing_docs)]

pub mod client;
mod common;
pub mod resource;
pub mod server;

pub use resource::{BearerAuthLayer, Principal, ResourceServerConfig, TokenValidator};
pub use server::{AuthServerConfig, AuthServerError, AuthorizationServer};
