//! The history: the calls made through the console, newest first, each
//! with its request and its answer as they went over the wire, the
//! progress notifications it got, when it was made and how long it took,
//! and what the policy decided; searched by words, and run again.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use http::StatusCode;
use maud::{Markup, html};
use serde::Deserialize;

use crate::Console;
use crate::auth::Session;
use crate::layout::{json_block, page};

/// What the history is searched for.
#[derive(Deserialize, Default)]
pub(crate) struct Search {
    #[serde(default)]
    q: String,
}

/// `GET /console/history`.
pub(crate) async fn view(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Query(search): Query<Search>,
) -> Markup {
    let body = html! {
        form.filters role="search" action="/console/history" {
            label for="history-q" { "Search the history" }
            input id="history-q" name="q" type="search" value=(search.q);
            button type="submit" { "Search" }
        }
        div id="calls" {}
        (list(&console, &session, &search.q))
    };
    page("History", "/console/history", &session, body)
}

fn list(console: &Console, session: &Session, query: &str) -> Markup {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let calls: Vec<_> = (console.inner.calls.kept(session).into_iter())
        .filter(|(_, call)| {
            let text = format!("{} {}", call.what, call.params).to_lowercase();
            words.iter().all(|w| text.contains(w))
        })
        .collect();
    html! {
        @if calls.is_empty() {
            p data-history="empty" { "No call made through the console matches." }
        }
        @for (id, call) in &calls {
            article.call data-history=(id) {
                h2 { (call.what) }
                p { small { "Made " (call.at.elapsed().map(|d| d.as_secs()).unwrap_or_default()) " s ago." } }
                details { summary { "Request" } (json_block(&serde_json::json!({"method": call.method, "params": call.params}))) }
                (crate::calls::notifications(call))
                (crate::calls::status(*id, call))
                button hx-post="/console/history/again" hx-target="#calls" hx-swap="afterbegin"
                    hx-vals=(serde_json::json!({ "id": id }).to_string()) { "Run again" }
            }
        }
    }
}

/// The run-again form.
#[derive(Deserialize)]
pub(crate) struct Again {
    id: u64,
}

/// `POST /console/history/again`: call `id` made once more, as it was.
pub(crate) async fn again(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Form(again): Form<Again>,
) -> Response {
    let Some(call) = console.inner.calls.get(again.id, &session) else {
        return (StatusCode::NOT_FOUND, "that call is no longer kept").into_response();
    };
    console
        .start(
            &session,
            call.method,
            call.what.clone(),
            call.params.clone(),
        )
        .await
}
