//! Every JSON-RPC method name of every revision.

/// Legacy handshake request (2024-11-05 to 2025-11-25).
pub const INITIALIZE: &str = "initialize";
/// Legacy: the client is ready, after `initialize` (2024-11-05 to 2025-11-25).
pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
/// Liveness check (2024-11-05 to 2025-11-25).
pub const PING: &str = "ping";
/// 2026-07-28: ask the server for versions, capabilities and info.
pub const SERVER_DISCOVER: &str = "server/discover";

/// List the server's tools.
pub const TOOLS_LIST: &str = "tools/list";
/// Call a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// List the server's resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// List the server's resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Read a resource.
pub const RESOURCES_READ: &str = "resources/read";
/// Subscribe to a resource's updates (2024-11-05 to 2025-11-25).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Unsubscribe from a resource's updates (2024-11-05 to 2025-11-25).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// List the server's prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// Get a prompt.
pub const PROMPTS_GET: &str = "prompts/get";
/// Argument autocompletion.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// Set the server's log level (2024-11-05 to 2025-11-25).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// Ask the client to sample an LLM.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// Ask the client to list its roots.
pub const ROOTS_LIST: &str = "roots/list";
/// Ask the client to elicit input from the user (2025-06-18 onwards).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// 2026-07-28: open a notification stream.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// 2025-11-25, and the 2026-07-28 tasks extension: get a task's state.
pub const TASKS_GET: &str = "tasks/get";
/// 2025-11-25: get a task's result payload.
pub const TASKS_RESULT: &str = "tasks/result";
/// 2025-11-25: list tasks.
pub const TASKS_LIST: &str = "tasks/list";
/// 2025-11-25, and the 2026-07-28 tasks extension: cancel a task.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// 2026-07-28 tasks extension: answer a task's input requests.
pub const TASKS_UPDATE: &str = "tasks/update";

/// Progress of a long-running request.
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// A request was cancelled.
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// A log message from the server.
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
/// The server's prompt list changed.
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// The server's resource list changed.
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// A subscribed resource changed.
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// The server's tool list changed.
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// The client's roots changed (2024-11-05 to 2025-11-25).
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// 2025-11-25: a URL-mode elicitation completed.
pub const NOTIFICATION_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// 2025-11-25: a task's status changed.
pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";
/// 2026-07-28 tasks extension: a task's state changed (on a `subscriptions/listen` stream).
pub const NOTIFICATION_TASKS: &str = "notifications/tasks";
/// 2026-07-28: a `subscriptions/listen` stream is established.
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";

/// Every request method of every revision.
pub const ALL_REQUESTS: &[&str] = &[
    INITIALIZE,
    PING,
    SERVER_DISCOVER,
    TOOLS_LIST,
    TOOLS_CALL,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
    PROMPTS_LIST,
    PROMPTS_GET,
    COMPLETION_COMPLETE,
    LOGGING_SET_LEVEL,
    SAMPLING_CREATE_MESSAGE,
    ROOTS_LIST,
    ELICITATION_CREATE,
    SUBSCRIPTIONS_LISTEN,
    TASKS_GET,
    TASKS_RESULT,
    TASKS_LIST,
    TASKS_CANCEL,
    TASKS_UPDATE,
];

/// The methods of the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`),
/// which the core schema of that revision does not define.
pub const TASKS_EXTENSION: &[&str] = &[TASKS_GET, TASKS_UPDATE, TASKS_CANCEL, NOTIFICATION_TASKS];

/// Every notification method of every revision.
pub const ALL_NOTIFICATIONS: &[&str] = &[
    NOTIFICATION_INITIALIZED,
    NOTIFICATION_PROGRESS,
    NOTIFICATION_CANCELLED,
    NOTIFICATION_MESSAGE,
    NOTIFICATION_PROMPTS_LIST_CHANGED,
    NOTIFICATION_RESOURCES_LIST_CHANGED,
    NOTIFICATION_RESOURCES_UPDATED,
    NOTIFICATION_TOOLS_LIST_CHANGED,
    NOTIFICATION_ROOTS_LIST_CHANGED,
    NOTIFICATION_ELICITATION_COMPLETE,
    NOTIFICATION_TASKS_STATUS,
    NOTIFICATION_TASKS,
    NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
];
