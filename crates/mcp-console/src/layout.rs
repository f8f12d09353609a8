//! The frame of every page: the head with the embedded assets, the
//! navigation, and the body that sends the CSRF token with every htmx
//! request and listens to the console's event stream.

use maud::{DOCTYPE, Markup, html};

use crate::auth::Session;

/// The views a person signed in through the authorization server has.
const USER_VIEWS: [&str; 2] = ["/console/catalog", "/console/history"];

/// The console's views, as the navigation lists them.
const VIEWS: [(&str, &str); 6] = [
    ("/console", "Servers"),
    ("/console/catalog", "Catalog"),
    ("/console/history", "History"),
    ("/console/approvals", "Approvals"),
    ("/console/audit", "Audit"),
    ("/console/metrics", "Metrics"),
];

/// The `<head>`.
fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · mcp host" }
            link rel="stylesheet" href="/console/assets/console.css";
            script src="/console/assets/htmx.min.js" {}
            script src="/console/assets/sse.min.js" {}
        }
    }
}

/// A whole page for a signed-in person: `current` is the path of the view
/// it belongs to.
pub(crate) fn page(title: &str, current: &str, session: &Session, body: Markup) -> Markup {
    let headers = serde_json::json!({ crate::auth::CSRF_HEADER: session.csrf }).to_string();
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body hx-headers=(headers) hx-ext="sse" sse-connect="/console/events" {
                header {
                    nav aria-label="Console" {
                        span.brand { "mcp host" }
                        ul {
                            @for (path, name) in VIEWS.iter().filter(|(path, _)| session.user.is_none() || USER_VIEWS.contains(path)) {
                                li {
                                    @if *path == current {
                                        a href=(path) aria-current="page" { (name) }
                                    } @else {
                                        a href=(path) { (name) }
                                    }
                                }
                            }
                        }
                        @if let Some(name) = session.name() { span.who { "Signed in as " strong { (name) } } }
                        button.quiet hx-post="/console/logout" { "Sign out" }
                    }
                }
                main id="main" {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// The sign-in page, with `error` where signing in failed; `oauth` where
/// people may also sign in through the host's authorization server.
pub(crate) fn sign_in(error: Option<&str>, oauth: bool) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Sign in"))
            body {
                main id="main" class="narrow" {
                    h1 { "Sign in to mcp host" }
                    @if let Some(error) = error {
                        p.error role="alert" { (error) }
                    }
                    @if oauth {
                        h2 { "With your account" }
                        p { "Sign in at the host's authorization server: you then run what the policy lets you." }
                        p { a.button href="/console/login/oauth" { "Sign in with your account" } }
                        h2 { "As the operator" }
                    }
                    p { "Paste the admin token: " code { "mcp host" } " printed it when it started "
                        "(or it is " code { "[admin] token" } " or " code { "MCP_ADMIN_TOKEN" } ")." }
                    form method="post" action="/console/login" {
                        label for="token" { "Admin token" }
                        input id="token" name="token" type="password" autocomplete="off" required autofocus[!oauth];
                        button type="submit" { "Sign in" }
                    }
                }
            }
        }
    }
}

/// JSON, indented, in a `<pre>`.
pub(crate) fn json_block(value: &serde_json::Value) -> Markup {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    html! { pre.json { code { (text) } } }
}

/// Text that may be long, shortened to `max` characters with an ellipsis.
pub(crate) fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
