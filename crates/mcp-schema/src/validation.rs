//! Validation of wire messages against the official JSON Schema of each
//! revision (feature `validation`). Meant for tests: other crates check what
//! they put on the wire.
//!
//! ```no_run
//! use mcp_schema::{ProtocolVersion, validation::SchemaValidator};
//!
//! let v = SchemaValidator::for_revision(ProtocolVersion::V2025_06_18);
//! let msg = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
//! v.validate_message(&msg).unwrap();
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::{Validator, ValidatorMap};
use serde_json::Value;

use crate::ProtocolVersion;

/// Validates JSON against one revision's `schema.json`.
pub struct SchemaValidator {
    version: ProtocolVersion,
    /// `$defs` (2025-11-25 onwards) or `definitions` (before).
    defs_key: &'static str,
    /// The schema document.
    schema: Value,
    /// Every compiled subschema, by pointer (`#/$defs/Tool`).
    map: ValidatorMap,
    /// Request method -> definition name (`tools/call` -> `CallToolRequest`).
    requests: HashMap<String, String>,
    /// Notification method -> definition name.
    notifications: HashMap<String, String>,
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaValidator")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl SchemaValidator {
    /// Loads `spec_dir/REV/schema.json` for `version`.
    pub fn load(spec_dir: &Path, version: ProtocolVersion) -> Result<SchemaValidator, String> {
        let path = spec_dir.join(version.as_str()).join("schema.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let schema: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        Self::from_schema(schema, version).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Builds a validator from an already parsed schema document.
    pub fn from_schema(schema: Value, version: ProtocolVersion) -> Result<SchemaValidator, String> {
        let defs_key = if schema.get("$defs").is_some() {
            "$defs"
        } else if schema.get("definitions").is_some() {
            "definitions"
        } else {
            return Err("the schema has neither $defs nor definitions".to_owned());
        };
        let map = jsonschema::options()
            .should_validate_formats(true)
            .build_map(&schema)
            .map_err(|e| format!("the schema does not compile: {e}"))?;
        let mut requests = HashMap::new();
        let mut notifications = HashMap::new();
        if let Some(defs) = schema.get(defs_key).and_then(Value::as_object) {
            for (name, def) in defs {
                let Some(method) = def
                    .pointer("/properties/method/const")
                    .and_then(Value::as_str)
                else {
                    continue;
                };
                if name.starts_with("Client") || name.starts_with("Server") {
                    continue;
                }
                if name.ends_with("Request") {
                    requests.insert(method.to_owned(), name.clone());
                } else if name.ends_with("Notification") {
                    notifications.insert(method.to_owned(), name.clone());
                }
            }
        }
        Ok(SchemaValidator {
            version,
            defs_key,
            schema,
            map,
            requests,
            notifications,
        })
    }

    /// The validator of `version`, from the spec folder found by
    /// [`default_spec_dir`], loaded once per process. Panics with a clear
    /// message when the folder cannot be found.
    pub fn for_revision(version: ProtocolVersion) -> Arc<SchemaValidator> {
        Self::try_for_revision(version).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`SchemaValidator::for_revision`], but returns the error.
    pub fn try_for_revision(version: ProtocolVersion) -> Result<Arc<SchemaValidator>, String> {
        type Cache = Mutex<HashMap<ProtocolVersion, Arc<SchemaValidator>>>;
        static CACHE: OnceLock<Cache> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(v) = cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&version)
        {
            return Ok(v.clone());
        }
        let dir = default_spec_dir().ok_or_else(|| {
            "cannot find the MCP spec folder (shared/spec with REV/schema.json): set \
             MCP_SPEC_DIR or put the repository beside a `shared` folder"
                .to_owned()
        })?;
        let loaded = Arc::new(Self::load(&dir, version)?);
        let mut guard = cache.lock().unwrap_or_else(|e| e.into_inner());
        Ok(guard.entry(version).or_insert(loaded).clone())
    }

    /// The revision this validator checks.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// The schema document.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether the schema defines a type named `name`.
    pub fn has_def(&self, name: &str) -> bool {
        self.schema
            .get(self.defs_key)
            .and_then(|d| d.get(name))
            .is_some()
    }

    /// The name of the definition of request `method` (`tools/call` ->
    /// `CallToolRequest`), if this revision has one.
    pub fn request_def(&self, method: &str) -> Option<&str> {
        self.requests.get(method).map(String::as_str)
    }

    /// The name of the definition of notification `method`, if this revision has one.
    pub fn notification_def(&self, method: &str) -> Option<&str> {
        self.notifications.get(method).map(String::as_str)
    }

    /// Validates `instance` against the definition `name` (e.g. `Tool`).
    pub fn validate_def(&self, name: &str, instance: &Value) -> Result<(), String> {
        let validator = self.def(name)?;
        check(validator, instance).map_err(|e| format!("{} {name}: {e}", self.version))
    }

    /// Validates one JSON-RPC message (or, where the revision allows it, a
    /// batch): the envelope against `JSONRPCMessage`, and requests and
    /// notifications of MCP methods against their own definition. A method
    /// MCP defines, but not in this revision, is an error; other methods
    /// (and those of the modern tasks extension) are only checked as
    /// envelopes.
    pub fn validate_message(&self, message: &Value) -> Result<(), String> {
        self.validate_def("JSONRPCMessage", message)?;
        match message {
            Value::Array(items) => items.iter().try_for_each(|m| self.validate_method(m)),
            single => self.validate_method(single),
        }
    }

    /// Validates a response to a request `method`: the envelope, and the
    /// `result` against the method's result type (`CallToolResult` for
    /// `tools/call`; the plain `Result` for methods without one; an
    /// `InputRequiredResult` when `resultType` says so; a `CreateTaskResult`
    /// for a 2025-11-25 task-augmented request). Results of the modern tasks
    /// extension (its methods, and `resultType: "task"`) are checked against
    /// the core `Result` only, which is all the core schema knows of them.
    /// Error responses are checked as envelopes.
    pub fn validate_response(&self, method: &str, message: &Value) -> Result<(), String> {
        self.validate_def("JSONRPCMessage", message)?;
        let Some(result) = message.get("result") else {
            return Ok(());
        };
        let extension = self.version.has_tasks_extension()
            && (crate::methods::TASKS_EXTENSION.contains(&method)
                || result.get("resultType").and_then(Value::as_str) == Some("task"));
        if extension {
            return self
                .validate_def("Result", result)
                .map_err(|e| format!("result of {method}: {e}"));
        }
        let request = self.request_def(method).ok_or_else(|| {
            format!(
                "{}: {method:?} is not a request of this revision",
                self.version
            )
        })?;
        let result_type = result.get("resultType").and_then(Value::as_str);
        let name = if result_type == Some("input_required") && self.has_def("InputRequiredResult") {
            "InputRequiredResult".to_owned()
        } else if result.get("task").is_some() && self.has_def("CreateTaskResult") {
            "CreateTaskResult".to_owned()
        } else {
            let candidate = format!("{}Result", request.trim_end_matches("Request"));
            if self.has_def(&candidate) {
                candidate
            } else {
                "Result".to_owned()
            }
        };
        self.validate_def(&name, result)
            .map_err(|e| format!("result of {method}: {e}"))
    }

    fn validate_method(&self, message: &Value) -> Result<(), String> {
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return Ok(());
        };
        let is_request = message.get("id").is_some();
        let (def, known) = if is_request {
            (self.request_def(method), crate::methods::ALL_REQUESTS)
        } else {
            (
                self.notification_def(method),
                crate::methods::ALL_NOTIFICATIONS,
            )
        };
        match def {
            Some(def) => self.validate_def(def, message),
            None if self.version.has_tasks_extension()
                && crate::methods::TASKS_EXTENSION.contains(&method) =>
            {
                Ok(())
            }
            None if known.contains(&method) => Err(format!(
                "{}: {method:?} is not a {} of this revision",
                self.version,
                if is_request {
                    "request"
                } else {
                    "notification"
                }
            )),
            None => Ok(()),
        }
    }

    fn def(&self, name: &str) -> Result<&Validator, String> {
        let pointer = format!("#/{}/{name}", self.defs_key);
        self.map
            .get(&pointer)
            .ok_or_else(|| format!("{}: the schema defines no {name}", self.version))
    }
}

fn check(validator: &Validator, instance: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| {
            let path = e.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            format!("at {path}: {e}")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Where the spec folder (`REV/schema.json` for every revision) is: the
/// `MCP_SPEC_DIR` environment variable, else a `shared/spec` folder beside
/// an ancestor of this crate's source or of the current directory.
pub fn default_spec_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MCP_SPEC_DIR") {
        return Some(PathBuf::from(dir));
    }
    let starts = [
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
        std::env::current_dir().ok(),
    ];
    starts.into_iter().flatten().find_map(|start| {
        start.ancestors().find_map(|dir| {
            let spec = dir.join("shared").join("spec");
            spec.join("2026-07-28")
                .join("schema.json")
                .is_file()
                .then_some(spec)
        })
    })
}
