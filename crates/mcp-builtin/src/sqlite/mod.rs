//! The SQLite server: one database file, its schema as resources, its rows
//! as a resource template, and tools to list, describe, query and explain;
//! with [`Config::write`], tools that change it too.
//!
//! Reading is enforced by SQLite, not by looking at the SQL text: the
//! reading connection is opened read-only with `PRAGMA query_only = ON`,
//! an authorizer refuses ATTACH, DETACH, pragmas that write, transaction
//! control and `load_extension` on every connection, `query` runs only
//! statements SQLite reports read-only, and each call compiles exactly one
//! statement. Parameters are always bound, never pasted into SQL; table
//! and column names given to the row tools are checked against the schema
//! and quoted. Every statement runs within a time budget.
//!
//! Resources:
//! - `sqlite:///{table}`: one per table, its columns, types, primary key,
//!   foreign keys and indexes (`application/json`);
//! - `sqlite:///{table}/{key}` (template): one row as a JSON object. The
//!   key is the primary key's value; for a table without a declared primary
//!   key, the rowid; for a composite key (`WITHOUT ROWID` or not), a JSON
//!   array of the key's values in key order, e.g. `sqlite:///grades/[7,"math"]`
//!   (percent-encoded in the URI). The `table` variable completes.
//!
//! Values are JSON: integers, reals, text and `null` as themselves, a BLOB
//! as `{"$base64": "..."}` (the same object binds a BLOB parameter).
//!
//! ```no_run
//! let config = mcp_builtin::sqlite::Config::new("shop.db").write(true);
//! let server = mcp_builtin::sqlite::server(config)?;
//! # let _ = server;
//! # Ok::<(), mcp_builtin::sqlite::Error>(())
//! ```

mod engine;
mod resources;
mod schema;
mod statements;
mod tools;
mod values;
mod worker;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcp_server::{HandlerError, Server};

use engine::{Role, Session};
use mcp_core::sync::RwLockExt as _;
use worker::Worker;

/// How the SQLite server is set up: the database file, whether it may be
/// changed, and its limits.
#[derive(Debug, Clone)]
pub struct Config {
    path: PathBuf,
    write: bool,
    default_rows: usize,
    max_rows: usize,
    max_result_bytes: usize,
    time_budget: Duration,
}

impl Config {
    /// Serves the database at `path`, read-only, with the default limits:
    /// 1000 rows a query unless the caller asks for up to 10 000, about
    /// 8 MiB of values a result, 10 seconds a statement.
    pub fn new(path: impl Into<PathBuf>) -> Config {
        Config {
            path: path.into(),
            write: false,
            default_rows: 1000,
            max_rows: 10_000,
            max_result_bytes: 8 << 20,
            time_budget: Duration::from_secs(10),
        }
    }

    /// Offers the writing tools (`execute`, `insert_row`, `update_row`,
    /// `delete_row`) and creates the file if missing; their changes honour
    /// the foreign keys the schema declares. Without it they are not
    /// listed, and the file must exist.
    pub fn write(mut self, write: bool) -> Config {
        self.write = write;
        self
    }

    /// How many rows a query returns when the caller does not say.
    pub fn default_rows(mut self, rows: usize) -> Config {
        self.default_rows = rows.max(1);
        self
    }

    /// The most rows a caller may ask of a query.
    pub fn max_rows(mut self, rows: usize) -> Config {
        self.max_rows = rows.max(1);
        self
    }

    /// About how many bytes of values one result may hold.
    pub fn max_result_bytes(mut self, bytes: usize) -> Config {
        self.max_result_bytes = bytes.max(1);
        self
    }

    /// How long one statement may run before it is stopped.
    pub fn time_budget(mut self, budget: Duration) -> Config {
        self.time_budget = budget;
        self
    }
}

/// Why the SQLite server could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database file could not be opened.
    #[error("cannot open the SQLite database {path}{hint}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// A hint about the mode (the file must exist without `--write`).
        hint: &'static str,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// The file is not a database SQLite can read.
    #[error("cannot read the schema of {path}: {source}")]
    Schema {
        /// The file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// A thread for a connection could not be started.
    #[error("cannot start a database thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// What the tools and resources share: the connections, the limits, and
/// the table names as last read (for completion and the resource list).
pub(crate) struct Database {
    reader: Worker,
    writer: Option<Worker>,
    config: Config,
    tables: RwLock<Vec<String>>,
}

impl Database {
    fn table_names(&self) -> Vec<String> {
        self.tables.read_locked().clone()
    }

    fn set_table_names(&self, names: Vec<String>) {
        *self.tables.write_locked() = names;
    }

    /// Table or view `name`, described on the reader's connection, or
    /// `None` if there is none.
    async fn describe(&self, name: &str) -> Result<Option<schema::TableSchema>, HandlerError> {
        let name = name.to_owned();
        self.reader
            .run(move |session| schema::describe(session, &name).map_err(|e| session.explain(e)))
            .await?
            .map_err(HandlerError::failed)
    }
}

/// Builds the SQLite server for `config`: opens the connections (and the
/// file, created only with [`Config::write`]) and reads the schema.
pub fn server(config: Config) -> Result<Server, Error> {
    let open = |role| {
        Session::open(&config.path, role, config.time_budget).map_err(|source| Error::Open {
            path: config.path.clone(),
            hint: if config.write {
                ""
            } else {
                " (read-only: the file must exist; --write creates it)"
            },
            source,
        })
    };
    // The writer first: it creates the file the reader then opens.
    let writer = if config.write {
        Some(open(Role::Writer)?)
    } else {
        None
    };
    let reader = open(Role::Reader)?;
    let tables = schema::table_names(&reader).map_err(|source| Error::Schema {
        path: config.path.clone(),
        source,
    })?;
    let writer = writer
        .map(|session| Worker::spawn("sqlite-writer", session))
        .transpose()?;
    let database = Arc::new(Database {
        reader: Worker::spawn("sqlite-reader", reader)?,
        writer,
        config,
        tables: RwLock::new(tables.clone()),
    });
    let mut builder = Server::builder("mcp-sqlite", env!("CARGO_PKG_VERSION")).instructions(
        if database.writer.is_some() {
            "One SQLite database. Read with `list_tables`, `describe_table`, `query` (one \
             read-only statement, parameters bound from `params`) and `explain`; change it with \
             `execute`, `insert_row`, `update_row` and `delete_row`. Each table's schema is the \
             resource sqlite:///{table}; a row is sqlite:///{table}/{key}."
        } else {
            "One SQLite database, read-only. Read with `list_tables`, `describe_table`, `query` \
             (one read-only statement, parameters bound from `params`) and `explain`. Each \
             table's schema is the resource sqlite:///{table}; a row is sqlite:///{table}/{key}."
        },
    );
    for tool in tools::reading(&database) {
        builder = builder.tool(tool);
    }
    if database.writer.is_some() {
        for tool in tools::writing(&database) {
            builder = builder.tool(tool);
        }
    }
    for table in &tables {
        builder = builder.resource(resources::table_schema(&database, table));
    }
    Ok(builder.template(resources::row_template(&database)).build())
}
