//! Prompts: templates with named string arguments, each argument optionally
//! completable.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use mcp_core::BoxFuture;
use mcp_schema::{GetPromptResult, Prompt, PromptArgument};

use crate::completion::Completer;
use crate::context::{Context, HandlerError};

/// A prompt's arguments, by name.
pub type PromptArguments = BTreeMap<String, String>;

type PromptFn = dyn Fn(PromptArguments, Context) -> BoxFuture<'static, Result<GetPromptResult, HandlerError>>
    + Send
    + Sync;

/// A prompt: its description for `prompts/list`, its handler and the
/// completers of its arguments.
#[derive(Clone)]
pub struct PromptDef {
    pub(crate) prompt: Prompt,
    pub(crate) handler: Arc<PromptFn>,
    pub(crate) completers: HashMap<String, Completer>,
}

impl std::fmt::Debug for PromptDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptDef")
            .field("prompt", &self.prompt)
            .finish()
    }
}

impl PromptDef {
    /// A prompt rendered by `handler`.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        F: Fn(PromptArguments, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, HandlerError>> + Send + 'static,
    {
        let mut prompt = Prompt::new(name);
        prompt.description = Some(description.into());
        PromptDef {
            prompt,
            handler: Arc::new(move |args, ctx| Box::pin(handler(args, ctx))),
            completers: HashMap::new(),
        }
    }

    /// Declares an argument.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        let mut argument = PromptArgument::new(name, required);
        argument.description = Some(description.into());
        self.prompt
            .arguments
            .get_or_insert_with(Vec::new)
            .push(argument);
        self
    }

    /// Sets a human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.prompt.title = Some(title.into());
        self
    }

    /// Sets the metadata listed with the prompt (`_meta`).
    pub fn meta(mut self, meta: mcp_schema::Meta) -> Self {
        self.prompt.meta = Some(meta);
        self
    }

    /// Offers completions for argument `name`.
    pub fn complete(mut self, name: impl Into<String>, completer: Completer) -> Self {
        self.completers.insert(name.into(), completer);
        self
    }

    /// The prompt as listed.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    /// -32602 naming the first required argument that is missing.
    pub(crate) fn check_arguments(&self, args: &PromptArguments) -> Result<(), HandlerError> {
        for argument in self.prompt.arguments.iter().flatten() {
            if argument.required == Some(true) && !args.contains_key(&argument.name) {
                return Err(HandlerError::invalid_params(format!(
                    "prompt {} needs argument {:?}",
                    self.prompt.name, argument.name
                )));
            }
        }
        Ok(())
    }
}
