//! The handshake: settling the protocol era with a server (the 2026-07-28
//! `server/discover`, the legacy `initialize`, or both raced when the
//! server is slow to answer) and what it learns of the server.

use std::time::Duration;

use mcp_core::{ClientIdentity, Peer, RequestError, RequestOptions};
use mcp_schema::{
    DiscoverResult, Implementation, InitializeRequestParams, InitializeResult, ProtocolVersion,
    ServerCapabilities, methods,
};
use serde_json::{Map, Value, json};

use crate::error::ClientError;

/// What the handshake learned about the server.
#[derive(Debug, Clone)]
pub(crate) struct ServerSide {
    pub(crate) revision: ProtocolVersion,
    pub(crate) info: Option<Implementation>,
    pub(crate) capabilities: ServerCapabilities,
    pub(crate) instructions: Option<String>,
}

/// The per-request `_meta` of the modern era.
pub(crate) fn modern_meta(identity: &ClientIdentity) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(
        mcp_schema::META_PROTOCOL_VERSION.to_owned(),
        Value::from(ProtocolVersion::LATEST.as_str()),
    );
    meta.insert(
        mcp_schema::META_CLIENT_INFO.to_owned(),
        serde_json::to_value(&identity.info).unwrap_or_default(),
    );
    meta.insert(
        mcp_schema::META_CLIENT_CAPABILITIES.to_owned(),
        serde_json::to_value(&identity.capabilities).unwrap_or_default(),
    );
    meta
}

/// Whether an error is the modern era's "unsupported protocol version"
/// listing our revision among the supported ones (a server may refuse a
/// first request that way; the same request again is then welcome).
fn retry_with_latest(error: &ClientError) -> bool {
    error.rpc().is_some_and(|e| {
        e.code == mcp_schema::error_codes::UNSUPPORTED_PROTOCOL_VERSION
            && e.data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|s| s.iter().any(|v| v == ProtocolVersion::LATEST.as_str()))
    })
}

/// Settles the era of a server that may speak either. `server/discover`
/// goes first; an error in answer falls back to `initialize`. With no
/// answer within `patience`, `initialize` is sent too, and the answers
/// decide: an accepted `initialize` makes the session legacy (the server
/// now holds one); a successful probe makes it modern unless `initialize`
/// is accepted within another `patience`. So a server that is slow to
/// start is reached in its own era, and a legacy server that ignores
/// unknown requests is reached too.
pub(crate) async fn probe(
    peer: &Peer,
    identity: &ClientIdentity,
    meta: &Map<String, Value>,
    patience: Duration,
) -> Result<ServerSide, ClientError> {
    let discovered = discover(peer, meta);
    tokio::pin!(discovered);
    let early = tokio::select! {
        answer = &mut discovered => Some(answer),
        _ = tokio::time::sleep(patience) => None,
    };
    match early {
        Some(Ok(found)) => return Ok(found),
        Some(Err(ClientError::Request(RequestError::ConnectionClosed))) => {
            return Err(ClientError::Request(RequestError::ConnectionClosed));
        }
        Some(Err(e)) => {
            tracing::debug!("server/discover failed ({e}); falling back to initialize");
            return initialize(peer, identity, ProtocolVersion::LATEST_LEGACY).await;
        }
        None => {
            tracing::debug!("server/discover unanswered after {patience:?}; sending initialize too")
        }
    }
    let initialized = initialize(peer, identity, ProtocolVersion::LATEST_LEGACY);
    tokio::pin!(initialized);
    tokio::select! {
        answer = &mut initialized => match answer {
            Ok(legacy) => Ok(legacy),
            Err(refused) => discovered.await.map_err(|e| both_failed(&e, &refused)),
        },
        answer = &mut discovered => match answer {
            Ok(modern) => match tokio::time::timeout(patience, initialized).await {
                Ok(Ok(legacy)) => Ok(legacy),
                _ => Ok(modern),
            },
            Err(e) => initialized.await.map_err(|refused| both_failed(&e, &refused)),
        },
    }
}

/// The error of a server that answered neither handshake.
fn both_failed(probe: &ClientError, initialize: &ClientError) -> ClientError {
    match (probe, initialize) {
        (ClientError::Request(RequestError::ConnectionClosed), _)
        | (_, ClientError::Request(RequestError::ConnectionClosed)) => {
            ClientError::Request(RequestError::ConnectionClosed)
        }
        _ => ClientError::Handshake(format!(
            "server/discover failed ({probe}) and so did initialize ({initialize})"
        )),
    }
}

pub(crate) async fn discover(
    peer: &Peer,
    meta: &Map<String, Value>,
) -> Result<ServerSide, ClientError> {
    let params = json!({ "_meta": meta });
    let options = RequestOptions::new();
    let first = peer
        .request(methods::SERVER_DISCOVER, &params, options.clone())
        .await
        .map_err(ClientError::from);
    let result: DiscoverResult = match first {
        Err(e) if retry_with_latest(&e) => {
            peer.request(methods::SERVER_DISCOVER, &params, options)
                .await?
        }
        other => other?,
    };
    let latest = ProtocolVersion::LATEST.as_str();
    if !result.supported_versions.iter().any(|v| v == latest) {
        return Err(ClientError::Handshake(format!(
            "the server supports {:?}, not {latest}",
            result.supported_versions
        )));
    }
    let info = result
        .meta
        .as_ref()
        .and_then(|m| m.get(mcp_schema::META_SERVER_INFO))
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    Ok(ServerSide {
        revision: ProtocolVersion::LATEST,
        info,
        capabilities: result.capabilities,
        instructions: result.instructions,
    })
}

pub(crate) async fn initialize(
    peer: &Peer,
    identity: &ClientIdentity,
    version: ProtocolVersion,
) -> Result<ServerSide, ClientError> {
    let params = InitializeRequestParams::new(
        version.as_str(),
        identity.capabilities.clone(),
        identity.info.clone(),
    );
    let result: InitializeResult = peer
        .request(methods::INITIALIZE, &params, RequestOptions::new())
        .await?;
    let revision = result
        .protocol_version
        .parse::<ProtocolVersion>()
        .ok()
        .filter(|v| v.is_legacy())
        .ok_or_else(|| {
            ClientError::Handshake(format!(
                "the server chose protocol version {:?}, which this client does not speak",
                result.protocol_version
            ))
        })?;
    Ok(ServerSide {
        revision,
        info: Some(result.server_info),
        capabilities: result.capabilities,
        instructions: result.instructions,
    })
}
