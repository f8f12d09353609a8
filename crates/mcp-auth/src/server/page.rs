//! The HTML pages the authorization server sends a person: their
//! headers, and the page of an error that cannot go back to the client.

use axum::response::{Html, IntoResponse, Response};
use http::header::CACHE_CONTROL;
use http::{HeaderValue, StatusCode};

use super::util;

/// A page explaining an error that cannot be sent to the client.
pub(super) fn error_page(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Authorization error</title></head>\
         <body><h1>Authorization error</h1><p>{}</p></body></html>",
        util::html_escape(message)
    );
    page_response(status, body)
}

/// A page of the authorization server, sent with headers that keep it
/// out of caches, frames and referrers.
pub(super) fn page_response(status: StatusCode, body: String) -> Response {
    let mut resp = (status, Html(body)).into_response();
    let h = resp.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
        ),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    resp
}
