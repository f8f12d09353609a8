//! Who asks: the OAuth principal the HTTP endpoint authenticated, or
//! `anonymous`, and the name the client gave itself.

use mcp_core::RequestContext;

/// The caller a request is decided for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Caller {
    /// The token's subject (`sub`); `None`: anonymous.
    pub subject: Option<String>,
    /// The OAuth client the token was issued to.
    pub client_id: Option<String>,
    /// The scopes the token holds.
    pub scopes: Vec<String>,
    /// The client's own name (`clientInfo.name`): self-reported, so a
    /// hint for rules, never a security boundary.
    pub client_name: Option<String>,
    /// The view of the catalog the request came through (`[views.NAME]`);
    /// none for the whole catalog.
    pub view: Option<String>,
    /// The caller's token as validated, for rules that read its claims
    /// (`claim.NAME`); `None`: anonymous.
    pub token: Option<std::sync::Arc<mcp_auth::Principal>>,
}

impl Caller {
    /// The caller of the request `ctx` belongs to.
    pub fn of(ctx: &RequestContext) -> Caller {
        let client_name = ctx.negotiated.client_info.as_ref().map(|i| i.name.clone());
        match mcp_auth::Principal::of(ctx) {
            Some(principal) => Caller::signed_in(principal, client_name),
            None => Caller {
                client_name,
                ..Caller::default()
            },
        }
    }

    /// The caller `principal` names, through the client `client_name`.
    pub fn signed_in(
        principal: std::sync::Arc<mcp_auth::Principal>,
        client_name: Option<String>,
    ) -> Caller {
        Caller {
            subject: principal.subject.clone(),
            client_id: principal.client_id.clone(),
            scopes: principal.scopes.clone(),
            client_name,
            view: None,
            token: Some(principal),
        }
    }

    /// The caller of `ctx`, come through `view`.
    pub fn through(ctx: &RequestContext, view: Option<&str>) -> Caller {
        Caller {
            view: view.map(str::to_owned),
            ..Caller::of(ctx)
        }
    }

    /// The values of the token's claim `name` as text: a string, each
    /// string of an array, a number or a boolean written out; none where
    /// the token has no such claim.
    pub fn claim(&self, name: &str) -> Vec<String> {
        let value = self.token.as_ref().and_then(|p| p.claims.get(name));
        let text = |value: &serde_json::Value| match value {
            serde_json::Value::String(text) => Some(text.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            serde_json::Value::Bool(b) => Some(b.to_string()),
            _ => None,
        };
        match value {
            Some(serde_json::Value::Array(items)) => items.iter().filter_map(text).collect(),
            Some(value) => text(value).into_iter().collect(),
            None => Vec::new(),
        }
    }

    /// The name rules match with `caller`: the subject, or `anonymous`.
    pub fn name(&self) -> &str {
        self.subject.as_deref().unwrap_or("anonymous")
    }
}
