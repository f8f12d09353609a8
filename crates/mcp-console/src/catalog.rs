//! The catalog view: every tool, prompt and resource template with its
//! server and annotations, searched by words; a tool's page has its whole
//! definition and a form made from its input schema ("try it"), a
//! prompt's a form of its arguments, a template's a form of its
//! variables. What they run goes through [`crate::calls`].

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use http::StatusCode;
use maud::{Markup, html};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use mcp_host::ListOf;
use mcp_host::catalog::Catalog;

use crate::Console;
use crate::auth::Session;
use crate::form;
use crate::layout::{json_block, page, shortened};

/// The most rows a search shows.
const MAX_ROWS: usize = 500;

/// `?q=` of a search, `?name=` of an item.
#[derive(Deserialize, Default)]
pub(crate) struct Asked {
    #[serde(default)]
    q: String,
    #[serde(default)]
    name: String,
}

/// `GET /console/catalog`: the page.
pub(crate) async fn view(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Query(asked): Query<Asked>,
) -> Markup {
    let body = html! {
        form.search role="search" hx-get="/console/catalog/rows" hx-target="#catalog"
            hx-trigger="input changed delay:200ms from:#q, submit" {
            label for="q" { "Search the catalog" }
            input id="q" name="q" type="search" value=(asked.q) placeholder="words in names and descriptions";
        }
        div id="catalog" hx-get="/console/catalog/rows" hx-trigger="sse:catalog" hx-include="#q" {
            (rows(&console, &session, &asked.q))
        }
    };
    page("Catalog", "/console/catalog", &session, body)
}

/// `GET /console/catalog/rows?q=`: the tables alone.
pub(crate) async fn fragment(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Query(asked): Query<Asked>,
) -> Markup {
    rows(&console, &session, &asked.q)
}

/// Whether `session` sees `item` of `list`: the operator sees the whole
/// catalog; a signed-in person what the policy shows them.
fn shown_to<'a>(
    console: &'a Console,
    session: &Session,
    catalog: &'a Catalog,
) -> impl Fn(ListOf, &Map<String, Value>) -> bool + 'a {
    let gateway = &console.inner.gateway;
    let sees = session.caller().map(|caller| gateway.sees(catalog, caller));
    move |list, item| sees.as_ref().is_none_or(|sees| sees(list, item))
}

/// Whether `item` matches every word of `query` (in its name, title or
/// description).
fn matches(item: &Map<String, Value>, words: &[String]) -> bool {
    let text = ["name", "title", "description", "uriTemplate"]
        .iter()
        .filter_map(|k| item.get(*k).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    words.iter().all(|w| text.contains(w.as_str()))
}

fn text<'a>(item: &'a Map<String, Value>, key: &str) -> &'a str {
    item.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn rows(console: &Console, session: &Session, query: &str) -> Markup {
    let catalog = console.inner.host.catalog();
    let shown = shown_to(console, session, &catalog);
    let servers = console.inner.host.upstream_names();
    let server_of = |route: Option<&mcp_host::catalog::Route>| -> String {
        route
            .and_then(|r| servers.get(r.upstream).cloned().flatten())
            .unwrap_or_default()
    };
    let listings: std::collections::HashMap<String, _> = (console.inner.host.upstreams().iter())
        .map(|u| (u.name().to_owned(), u.listing()))
        .collect();
    // What the host found in a tool's definition, and whether it changed
    // since it was pinned.
    let flags_of = |route: Option<&mcp_host::catalog::Route>| -> (Vec<&'static str>, bool) {
        let Some(route) = route else {
            return (Vec::new(), false);
        };
        let server = server_of(Some(route));
        let Some(listing) = listings.get(&server) else {
            return (Vec::new(), false);
        };
        let is_it = |kind: &str, item: &str| kind == "tool" && item == route.original;
        let flags = (listing.flagged.iter())
            .filter(|f| is_it(f.kind, &f.name))
            .flat_map(|f| f.flags.iter().map(|flag| flag.as_str()))
            .collect();
        let changed = listing.changed.iter().any(|c| is_it(c.kind, &c.name));
        (flags, changed)
    };
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let tools: Vec<_> = catalog
        .tools()
        .iter()
        .filter(|t| matches(t, &words) && shown(ListOf::Tools, t))
        .collect();
    let prompts: Vec<_> = catalog
        .prompts()
        .iter()
        .filter(|p| matches(p, &words) && shown(ListOf::Prompts, p))
        .collect();
    let templates: Vec<_> = catalog
        .templates()
        .iter()
        .filter(|t| matches(t, &words) && shown(ListOf::Templates, t))
        .collect();
    let resources: Vec<_> = catalog
        .resources()
        .iter()
        .filter(|r| matches(r, &words) && shown(ListOf::Resources, r))
        .collect();
    html! {
        h2 { "Tools " small { "(" (tools.len()) ")" } }
        @if tools.len() > MAX_ROWS { p.hint { "The first " (MAX_ROWS) " are shown; search to find the others." } }
        table.catalog data-list="tools" {
            thead { tr { th scope="col" { "Tool" } th scope="col" { "Server" } th scope="col" { "Hints" } th scope="col" { "Description" } } }
            tbody {
                @for tool in tools.iter().take(MAX_ROWS) {
                    @let name = text(tool, "name");
                    tr {
                        th scope="row" { a href={"/console/tool?name=" (encode(name))} { code { (name) } } }
                        @let route = catalog.tool(name);
                        @let server = server_of(route);
                        td { a href={"/console/servers/" (encode(&server))} { (server) } }
                        td {
                            (hints(tool.get("annotations")))
                            @let (flags, changed) = flags_of(route);
                            @if changed {
                                a.badge.warn href={"/console/servers/" (encode(&server))}
                                    title="Its definition changed since it was pinned; calls wait for approval. The server's page shows what changed." { "changed" }
                            }
                            @for flag in flags { span.badge.warn title="Text aimed at the model was found in its definition" { "suspicious: " (flag) } }
                        }
                        td { (shortened(text(tool, "description"), 160)) }
                    }
                }
            }
        }
        h2 { "Prompts " small { "(" (prompts.len()) ")" } }
        ul.items data-list="prompts" {
            @for prompt in prompts.iter().take(MAX_ROWS) {
                li { a href={"/console/prompt?name=" (encode(text(prompt, "name")))} { code { (text(prompt, "name")) } }
                     " " (shortened(text(prompt, "description"), 160)) }
            }
        }
        h2 { "Resources " small { "(" (resources.len()) ")" } }
        ul.items data-list="resources" {
            @for resource in resources.iter().take(MAX_ROWS) {
                li { a href={"/console/template?name=" (encode(text(resource, "uri")))} { code { (text(resource, "uri")) } }
                     " " (shortened(text(resource, "description"), 160)) }
            }
        }
        h2 { "Resource templates " small { "(" (templates.len()) ")" } }
        ul.items data-list="templates" {
            @for template in templates.iter().take(MAX_ROWS) {
                li { a href={"/console/template?name=" (encode(text(template, "uriTemplate")))} { code { (text(template, "uriTemplate")) } }
                     " " (shortened(text(template, "description"), 160)) }
            }
        }
    }
}

/// A tool's annotations, as short badges.
fn hints(annotations: Option<&Value>) -> Markup {
    let flag = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    html! {
        @if flag("readOnlyHint") == Some(true) { span.badge { "read-only" } }
        @if flag("destructiveHint") == Some(true) { span.badge.warn { "destructive" } }
        @if flag("idempotentHint") == Some(true) { span.badge { "idempotent" } }
        @if flag("openWorldHint") == Some(true) { span.badge { "open world" } }
    }
}

/// What is percent-encoded in a query value or a URI's variable:
/// everything but RFC 3986's unreserved characters.
const RESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `name` for a query string or a URI's variable.
pub(crate) fn encode(name: &str) -> String {
    utf8_percent_encode(name, RESERVED).to_string()
}

/// `GET /console/tool?name=`: a tool's page.
pub(crate) async fn tool(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Query(asked): Query<Asked>,
) -> Response {
    let catalog = console.inner.host.catalog();
    let shown = shown_to(&console, &session, &catalog);
    let found = (catalog.tool_definition(&asked.name)).filter(|t| shown(ListOf::Tools, t));
    let Some(tool) = found else {
        return (StatusCode::NOT_FOUND, format!("no tool {:?}", asked.name)).into_response();
    };
    let schema = tool.get("inputSchema").cloned().unwrap_or(json!({}));
    let body = html! {
        p { (text(tool, "description")) }
        p { (hints(tool.get("annotations"))) }
        h2 { "Try it" }
        form.try hx-post="/console/tool/call" hx-target="#calls" hx-swap="afterbegin" {
            input type="hidden" name="tool" value=(asked.name);
            (form::fields(&schema))
            button type="submit" { "Call " code { (asked.name) } }
        }
        div id="calls" {}
        h2 { "Definition" }
        (json_block(&Value::Object(tool.clone())))
    };
    page(&asked.name, "/console/catalog", &session, body).into_response()
}

/// The value of field `key` of a posted form.
fn posted_value(posted: &[(String, String)], key: &str) -> Option<String> {
    posted
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// `POST /console/tool/call`: the tool's form, as posted.
pub(crate) async fn call_tool(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Response {
    let Some(name) = posted_value(&posted, "tool") else {
        return (StatusCode::BAD_REQUEST, "which tool?").into_response();
    };
    let catalog = console.inner.host.catalog();
    let Some(tool) = catalog.tool_definition(&name) else {
        return (StatusCode::NOT_FOUND, format!("no tool {name:?}")).into_response();
    };
    let schema = tool.get("inputSchema").cloned().unwrap_or(json!({}));
    let arguments = match form::arguments(&schema, &posted) {
        Ok(arguments) => arguments,
        Err(why) => return html! { p.error role="alert" { (why) } }.into_response(),
    };
    let params = json!({ "name": name, "arguments": arguments });
    console
        .start(&session, "tools/call", format!("tools/call {name}"), params)
        .await
}

/// `GET /console/prompt?name=`: a prompt's page.
pub(crate) async fn prompt(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Query(asked): Query<Asked>,
) -> Response {
    let catalog = console.inner.host.catalog();
    let shown = shown_to(&console, &session, &catalog);
    let Some(prompt) = catalog
        .prompts()
        .iter()
        .find(|p| text(p, "name") == asked.name && shown(ListOf::Prompts, p))
    else {
        return (StatusCode::NOT_FOUND, format!("no prompt {:?}", asked.name)).into_response();
    };
    let arguments = prompt
        .get("arguments")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let body = html! {
        p { (text(prompt, "description")) }
        form hx-post="/console/prompt/get" hx-target="#calls" hx-swap="afterbegin" {
            input type="hidden" name="prompt" value=(asked.name);
            @for argument in &arguments {
                @let name = argument.get("name").and_then(Value::as_str).unwrap_or_default();
                @let required = argument.get("required").and_then(Value::as_bool).unwrap_or(false);
                div.field {
                    label for={"p-" (name)} { code { (name) } @if required { " " abbr title="required" { "*" } } }
                    @if let Some(d) = argument.get("description").and_then(Value::as_str) { small.description { (d) } }
                    input id={"p-" (name)} name={"/" (name)} type="text" required[required];
                }
            }
            button type="submit" { "Get the prompt" }
        }
        div id="calls" {}
    };
    page(&asked.name, "/console/catalog", &session, body).into_response()
}

/// `POST /console/prompt/get`.
pub(crate) async fn get_prompt(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Response {
    let Some(name) = posted_value(&posted, "prompt") else {
        return (StatusCode::BAD_REQUEST, "which prompt?").into_response();
    };
    let arguments: Map<String, Value> = posted
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix('/')?.to_owned(), v)))
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k, Value::String(v.clone())))
        .collect();
    let params = json!({ "name": name, "arguments": arguments });
    console
        .start(
            &session,
            "prompts/get",
            format!("prompts/get {name}"),
            params,
        )
        .await
}

/// The variables of a URI template (RFC 6570 expressions, operators and
/// modifiers left out). Written here because `uri-template-ex`, which the
/// server framework matches URIs with, reads one variable per expression
/// (`{?q,page}` is one variable named `?q,page` to it).
fn variables(template: &str) -> Vec<String> {
    let mut found = Vec::new();
    for expression in template
        .split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(e, _)| e))
    {
        let names = expression.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        for name in names.split(',') {
            let name = name
                .trim_end_matches('*')
                .split(':')
                .next()
                .unwrap_or_default();
            if !name.is_empty() && !found.iter().any(|f| f == name) {
                found.push(name.to_owned());
            }
        }
    }
    found
}

/// `template` with its variables filled in from `values` (simple string
/// expansion: reserved characters are kept for `{+x}` and `{#x}`).
fn expand(template: &str, values: &Map<String, Value>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let expression = &rest[start + 1..start + end];
        let (prefix, separator, reserved) = match expression.chars().next() {
            Some('+') => ("", ",", true),
            Some('#') => ("#", ",", true),
            Some('.') => (".", ".", false),
            Some('/') => ("/", "/", false),
            Some('?') => ("?", "&", false),
            Some('&') => ("&", "&", false),
            Some(';') => (";", ";", false),
            _ => ("", ",", false),
        };
        let named = matches!(prefix, "?" | "&" | ";");
        let parts: Vec<String> = variables(&format!("{{{expression}}}"))
            .iter()
            .filter_map(|name| {
                let value = values.get(name).and_then(Value::as_str)?;
                let value = if reserved {
                    value.to_owned()
                } else {
                    encode(value)
                };
                Some(if named {
                    format!("{name}={value}")
                } else {
                    value
                })
            })
            .collect();
        if !parts.is_empty() {
            out.push_str(prefix);
            out.push_str(&parts.join(separator));
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

/// `GET /console/template?name=`: a resource template's page.
pub(crate) async fn template(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Query(asked): Query<Asked>,
) -> Response {
    let catalog = console.inner.host.catalog();
    let shown = shown_to(&console, &session, &catalog);
    // A template, or a resource read as it is (a template of no variable).
    let templates = catalog.templates();
    let resources = catalog.resources();
    let found = (templates.iter())
        .find(|t| text(t, "uriTemplate") == asked.name && shown(ListOf::Templates, t))
        .or_else(|| {
            (resources.iter()).find(|r| text(r, "uri") == asked.name && shown(ListOf::Resources, r))
        });
    let Some(template) = found else {
        return (
            StatusCode::NOT_FOUND,
            format!("no resource or resource template {:?}", asked.name),
        )
            .into_response();
    };
    let body = html! {
        p { (text(template, "description")) }
        form hx-post="/console/template/read" hx-target="#calls" hx-swap="afterbegin" {
            input type="hidden" name="template" value=(asked.name);
            @for name in variables(&asked.name) {
                div.field {
                    label for={"v-" (name)} { code { (name) } }
                    // The server's completions, offered as the person types.
                    input id={"v-" (name)} name={"/" (name)} type="text" required autocomplete="off"
                        list={"dl-" (name)}
                        hx-get="/console/template/complete" hx-trigger="input changed delay:150ms, focus"
                        hx-target={"#dl-" (name)} hx-swap="innerHTML"
                        hx-vals=(json!({ "template": asked.name, "argument": name }).to_string());
                    datalist id={"dl-" (name)} {}
                }
            }
            button type="submit" { "Read" }
        }
        div id="calls" {}
    };
    page(&asked.name, "/console/catalog", &session, body).into_response()
}

/// `GET /console/template/complete`: `template`, `argument`, and the
/// argument's field (`/NAME`, as typed so far): the server's completions,
/// as the options of the field's list. Nothing where it offers none.
pub(crate) async fn complete(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Query(asked): Query<Vec<(String, String)>>,
) -> Markup {
    let (Some(template), Some(argument)) = (
        posted_value(&asked, "template"),
        posted_value(&asked, "argument"),
    ) else {
        return html! {};
    };
    let typed = posted_value(&asked, &format!("/{argument}")).unwrap_or_default();
    let Ok(client) = console.client(&session).await else {
        return html! {};
    };
    let params = json!({
        "ref": {"type": "ref/resource", "uri": template},
        "argument": {"name": argument, "value": typed},
    });
    let answer: Result<Value, _> = client
        .request(
            "completion/complete",
            &params,
            mcp_core::RequestOptions::new(),
        )
        .await;
    let values: Vec<String> = answer
        .ok()
        .and_then(|a| a.pointer("/completion/values").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    html! { @for value in values.iter().take(100) { option value=(value) {} } }
}

/// `POST /console/template/read`.
pub(crate) async fn read_template(
    State(console): State<Console>,
    Extension(session): Extension<Session>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Response {
    let Some(template) = posted_value(&posted, "template") else {
        return (StatusCode::BAD_REQUEST, "which template?").into_response();
    };
    let values: Map<String, Value> = posted
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix('/')?.to_owned(), Value::String(v.clone()))))
        .collect();
    let uri = expand(&template, &values);
    console
        .start(
            &session,
            "resources/read",
            format!("resources/read {uri}"),
            json!({ "uri": uri }),
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_filled_in() {
        let values: Map<String, Value> =
            serde_json::from_value(json!({"id": "a b", "path": "x/y", "q": "z"})).unwrap();
        assert_eq!(variables("demo://r/{id}{?q,page}"), ["id", "q", "page"]);
        assert_eq!(expand("demo://r/{id}", &values), "demo://r/a%20b");
        assert_eq!(expand("file:///{+path}", &values), "file:///x/y");
        assert_eq!(expand("s://{id}{?q,page}", &values), "s://a%20b?q=z");
        assert_eq!(expand("s://{/path}", &values), "s:///x%2Fy");
        assert_eq!(encode("a-b.c_d~e f"), "a-b.c_d~e%20f");
    }
}
