//! Who asks: the OAuth principal the HTTP endpoint authenticated, or
//! `anonymous`, and the name the client gave itself.

use mcp_core::RequestContext;

/// The caller a request is decided for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
}

impl Caller {
    /// The caller of the request `ctx` belongs to.
    pub fn of(ctx: &RequestContext) -> Caller {
        let client_name = ctx.negotiated.client_info.as_ref().map(|i| i.name.clone());
        match mcp_auth::Principal::of(ctx) {
            Some(principal) => Caller {
                subject: principal.subject.clone(),
                client_id: principal.client_id.clone(),
                scopes: principal.scopes.clone(),
                client_name,
                view: None,
            },
            None => Caller {
                client_name,
                ..Caller::default()
            },
        }
    }

    /// The caller of `ctx`, come through `view`.
    pub fn through(ctx: &RequestContext, view: Option<&str>) -> Caller {
        Caller {
            view: view.map(str::to_owned),
            ..Caller::of(ctx)
        }
    }

    /// The name rules match with `caller`: the subject, or `anonymous`.
    pub fn name(&self) -> &str {
        self.subject.as_deref().unwrap_or("anonymous")
    }
}
