//! The resources: each table's schema at `sqlite:///{table}`, each row at
//! `sqlite:///{table}/{key}`, and keeping the list in step with the
//! tables after a write.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_schema::{ErrorObject, Resource, ResourceContents};
use mcp_server::{Completer, Context, HandlerError, ResourceDef, Server, TemplateDef};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::Database;
use super::schema::{self, RowKey};

/// The characters RFC 3986 leaves unreserved stay; every other is encoded.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

const JSON: &str = "application/json";

/// The URI of `table`'s schema.
pub fn table_uri(table: &str) -> String {
    format!("sqlite:///{}", utf8_percent_encode(table, COMPONENT))
}

/// The URI of one row of `table`, `key` as [`RowKey::uri_key`] writes it.
pub fn row_uri(table: &str, key: &str) -> String {
    format!(
        "{}/{}",
        table_uri(table),
        utf8_percent_encode(key, COMPONENT)
    )
}

fn not_found(ctx: &Context, uri: &str, why: String) -> HandlerError {
    HandlerError::Protocol(
        ErrorObject::new(ctx.revision().resource_not_found_code(), why)
            .with_data(serde_json::json!({ "uri": uri })),
    )
}

/// The schema resource of `table`, read afresh on each read.
pub fn table_schema(database: &Arc<Database>, table: &str) -> ResourceDef {
    let uri = table_uri(table);
    let mut resource = Resource::new(uri.clone(), table.to_owned());
    resource.title = Some(format!("Table {table}"));
    resource.description = Some(format!(
        "The schema of table {table}: columns, types, primary key, foreign keys, indexes"
    ));
    resource.mime_type = Some(JSON.into());
    let database = Arc::clone(database);
    let table = table.to_owned();
    ResourceDef::dynamic(resource, move |ctx| {
        let database = Arc::clone(&database);
        let table = table.clone();
        let uri = uri.clone();
        async move {
            let Some(described) = database.describe(&table).await? else {
                return Err(not_found(
                    &ctx,
                    &uri,
                    format!("no table named {table:?} any more"),
                ));
            };
            let text = serde_json::to_string_pretty(&described).map_err(HandlerError::failed)?;
            Ok(vec![ResourceContents::text(uri, Some(JSON.into()), text)])
        }
    })
}

/// The template of the rows, `sqlite:///{table}/{key}`, completing
/// `table`.
pub fn row_template(database: &Arc<Database>) -> TemplateDef {
    let reader = Arc::clone(database);
    let completing = Arc::clone(database);
    let complete_table: Completer = Arc::new(move |typed: &str, _: &BTreeMap<String, String>| {
        let typed = typed.to_lowercase();
        completing
            .table_names()
            .into_iter()
            .filter(|name| name.to_lowercase().starts_with(&typed))
            .collect()
    });
    TemplateDef::new(
        "sqlite:///{table}/{key}",
        "Row",
        move |uri, vars: BTreeMap<String, String>, ctx| {
            let database = Arc::clone(&reader);
            async move {
                let table = vars.get("table").cloned().unwrap_or_default();
                let key = vars.get("key").cloned().unwrap_or_default();
                let found = database
                    .reader
                    .run(move |session| read_row(session, &table, &key))
                    .await?;
                match found {
                    Ok(row) => Ok(vec![ResourceContents::text(uri, Some(JSON.into()), row)]),
                    Err(RowError::NotFound(why)) => Err(not_found(&ctx, &uri, why)),
                    Err(RowError::Failed(why)) => Err(HandlerError::failed(why)),
                }
            }
        },
    )
    .unwrap_or_else(|e| panic!("the row template is valid RFC 6570: {e}"))
    .description(
        "One row as a JSON object. {key} is the primary key's value; the rowid for a table \
         without a primary key; a JSON array of the key's values for a composite key.",
    )
    .mime_type(JSON)
    .complete("table", complete_table)
}

enum RowError {
    NotFound(String),
    Failed(String),
}

fn read_row(session: &super::engine::Session, table: &str, key: &str) -> Result<String, RowError> {
    let described = schema::describe(session, table)
        .map_err(|e| RowError::Failed(session.explain(e)))?
        .ok_or_else(|| RowError::NotFound(format!("no table named {table:?}")))?;
    let row_key = RowKey::of(&described).ok_or_else(|| {
        RowError::NotFound(format!("the rows of {table:?} have no key to name them by"))
    })?;
    let values = row_key.parse_uri_key(key).map_err(RowError::NotFound)?;
    let row = schema::read_row(session, &described, &row_key, &values)
        .map_err(RowError::Failed)?
        .ok_or_else(|| RowError::NotFound(format!("no row of {table:?} has the key {key}")))?;
    serde_json::to_string_pretty(&row).map_err(|e| RowError::Failed(e.to_string()))
}

/// Brings the list of schema resources in step with the tables (after a
/// statement that may have created or dropped one); clients are told when
/// the list changes.
pub async fn refresh(database: &Arc<Database>, server: &Server) {
    let Ok(Ok(names)) = database.reader.run(schema::table_names).await else {
        return;
    };
    let before = database.table_names();
    if before == names {
        return;
    }
    for gone in before.iter().filter(|name| !names.contains(name)) {
        server.remove_resource(&table_uri(gone));
    }
    for added in names.iter().filter(|name| !before.contains(name)) {
        server.add_resource(table_schema(database, added));
    }
    database.set_table_names(names);
}
