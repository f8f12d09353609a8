//! The hook stage of the request path: a call the policy and consent let
//! through is shown to the guard hooks before it is forwarded, and its
//! result after (see [`crate::hooks`]).

use mcp_core::RequestContext;
use mcp_schema::ErrorObject;
use serde_json::Value;
use serde_json::value::RawValue;

use super::target::Target;
use crate::hooks::{HookCall, is_final};
use crate::host::Host;
use crate::params::Params;
use crate::policy::{Caller, Kind};

/// Runs the before-hooks on the call `params` make of `target`, putting
/// in the arguments they rewrite; the call the after-hooks see, where
/// some hook sees it.
pub(super) async fn before(
    host: &Host,
    target: &Target,
    params: &mut Params,
    ctx: &RequestContext,
) -> Result<Option<HookCall>, ErrorObject> {
    let hooks = host.hooks();
    let mut call = HookCall::new(
        &Caller::of(ctx),
        &target.server,
        target.kind,
        &target.route.original,
    );
    if !hooks.see(&call) {
        return Ok(None);
    }
    if target.kind != Kind::Resource {
        call.arguments = match params.value("arguments") {
            Some(Value::Object(arguments)) => Some(arguments),
            _ => None,
        };
    }
    let rewritten = hooks
        .before(&mut call)
        .await
        .map_err(|refusal| refusal.to_error(&call))?;
    if rewritten && let Some(arguments) = &call.arguments {
        params.set("arguments", arguments)?;
    }
    Ok(Some(call))
}

/// Runs the after-hooks on `result`, the answer to `call`.
pub(super) async fn after(
    host: &Host,
    call: &HookCall,
    result: Box<RawValue>,
) -> Result<Box<RawValue>, ErrorObject> {
    let mut value: Value = serde_json::from_str(result.get()).map_err(ErrorObject::internal)?;
    if !is_final(&value) {
        return Ok(result);
    }
    let replaced = host
        .hooks()
        .after(call, &mut value)
        .await
        .map_err(|refusal| refusal.to_error(call))?;
    if !replaced {
        return Ok(result);
    }
    mcp_schema::jsonrpc::to_raw(&value).map_err(ErrorObject::internal)
}
