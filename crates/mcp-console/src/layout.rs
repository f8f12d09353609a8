//! The frame of every page: the head with the embedded assets, the
//! navigation, and the body that sends the CSRF token with every htmx
//! request and listens to the console's event stream.

use maud::{DOCTYPE, Markup, html};

use crate::auth::Session;

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
                            @for (path, name) in VIEWS {
                                li {
                                    @if path == current {
                                        a href=(path) aria-current="page" { (name) }
                                    } @else {
                                        a href=(path) { (name) }
                                    }
                                }
                            }
                        }
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

/// The sign-in page; `wrong` when a token was refused.
pub(crate) fn sign_in(wrong: bool) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Sign in"))
            body {
                main id="main" class="narrow" {
                    h1 { "Sign in to mcp host" }
                    p { "Paste the admin token: " code { "mcp host" } " printed it when it started "
                        "(or it is " code { "[admin] token" } " or " code { "MCP_ADMIN_TOKEN" } ")." }
                    @if wrong {
                        p.error role="alert" { "That is not the admin token." }
                    }
                    form method="post" action="/console/login" {
                        label for="token" { "Admin token" }
                        input id="token" name="token" type="password" autocomplete="off" required autofocus;
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
