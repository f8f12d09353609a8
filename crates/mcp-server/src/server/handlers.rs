//! The requests the server answers: dispatch by method, lists with
//! cursors, tool calls, resource reads, prompts and completion.

use super::*;

impl Server {
    pub(super) async fn dispatch(
        self,
        request: IncomingRequest,
        ctx: RequestContext,
    ) -> HandlerResult {
        // The engine has read `_meta` into the context: the typed params
        // are read past it.
        let past_meta = request.params_past_meta();
        let params = past_meta.as_deref();
        let revision = ctx.revision;
        match request.method.as_str() {
            methods::TOOLS_LIST => {
                let (mut tools, next) =
                    self.list("tools", params, |c| &c.tools, |t| t.tool.clone())?;
                if !revision.has_structured_output() {
                    tools.iter_mut().for_each(|t| t.output_schema = None);
                }
                if !revision.has_core_tasks() {
                    tools.iter_mut().for_each(|t| t.execution = None);
                }
                let mut result = ListToolsResult::new(tools);
                result.next_cursor = next;
                (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
                to_result(&result)
            }
            // Each call's params read in a statement of its own: a
            // temporary of the call's statement would be held across the
            // await, in every request's future.
            methods::TOOLS_CALL => {
                let params = call_params(params)?;
                self.call_tool(params, ctx).await
            }
            methods::RESOURCES_LIST => {
                let (resources, next) = self.list(
                    "resources",
                    params,
                    |c| &c.resources,
                    |r| r.resource.clone(),
                )?;
                let mut result = ListResourcesResult {
                    resources,
                    next_cursor: next,
                    ..Default::default()
                };
                (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
                to_result(&result)
            }
            methods::RESOURCES_TEMPLATES_LIST => {
                let (resource_templates, next) = self.list(
                    "templates",
                    params,
                    |c| &c.templates,
                    |t| t.template.clone(),
                )?;
                let mut result = ListResourceTemplatesResult {
                    resource_templates,
                    next_cursor: next,
                    ..Default::default()
                };
                (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
                to_result(&result)
            }
            methods::RESOURCES_READ => {
                let params = jsonrpc::from_params_text(params)?;
                self.read_resource(params, ctx).await
            }
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                let uri = jsonrpc::from_params_text::<ResourceRequestParams>(params)?.uri;
                let subscribe = request.method == methods::RESOURCES_SUBSCRIBE;
                if ResourceSubscriptions::change(ctx.peer.extensions(), uri, subscribe) {
                    self.subscriptions_changed();
                }
                to_result(&serde_json::json!({}))
            }
            methods::PROMPTS_LIST => {
                let (prompts, next) =
                    self.list("prompts", params, |c| &c.prompts, |p| p.prompt.clone())?;
                let mut result = ListPromptsResult {
                    prompts,
                    next_cursor: next,
                    ..Default::default()
                };
                (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
                to_result(&result)
            }
            methods::PROMPTS_GET => {
                let params = jsonrpc::from_params_text(params)?;
                self.get_prompt(params, ctx).await
            }
            methods::COMPLETION_COMPLETE => self.complete(jsonrpc::from_params_text(params)?),
            methods::LOGGING_SET_LEVEL => {
                let level = jsonrpc::from_params_text::<SetLevelRequestParams>(params)?.level;
                SessionLogLevel::choose(ctx.peer.extensions(), level);
                to_result(&serde_json::json!({}))
            }
            // Boxed: a long-lived stream, and the largest future here.
            methods::SUBSCRIPTIONS_LISTEN => {
                let params = jsonrpc::from_params_text(params)?;
                Box::pin(self.listen(params, ctx)).await
            }
            methods::TASKS_GET
            | methods::TASKS_RESULT
            | methods::TASKS_LIST
            | methods::TASKS_CANCEL
            | methods::TASKS_UPDATE => self.task_request(&request.method, params, ctx).await,
            other => Err(ErrorObject::method_not_found(other)),
        }
    }

    /// One page of a catalog list: the page is picked under the read lock,
    /// and only its items are described.
    pub(super) fn list<D, T>(
        &self,
        kind: &str,
        params: Option<&str>,
        items: impl Fn(&Definitions) -> &Vec<Arc<D>>,
        describe: impl Fn(&D) -> T,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let cursor = jsonrpc::from_params_text::<PaginatedRequestParams>(params)?.cursor;
        let (chunk, next) = {
            let catalog = self.read_catalog();
            let signer = &self.signer();
            page(
                signer,
                kind,
                catalog.generation,
                items(&catalog),
                cursor.as_deref(),
                self.inner.page_size,
            )?
        };
        Ok((chunk.iter().map(|item| describe(item)).collect(), next))
    }

    pub(super) fn cache_hints(
        &self,
        revision: ProtocolVersion,
    ) -> (Option<u64>, Option<CacheScope>) {
        if revision.is_legacy() {
            (None, None)
        } else {
            (
                Some(self.inner.cache_ttl.as_millis() as u64),
                Some(CacheScope::Private),
            )
        }
    }

    pub(super) fn context(
        &self,
        ctx: RequestContext,
        purpose: Purpose<'_>,
        state: Option<&str>,
        responses: Option<mcp_schema::InputResponses>,
    ) -> Result<Context, ErrorObject> {
        let round = if ctx.revision.uses_input_required() {
            InputRound::open(&self.signer(), purpose, state, responses)?
        } else {
            InputRound::default()
        };
        Ok(self.handler_context(ctx, round))
    }

    /// Turns a handler's outcome into the response: the result, an
    /// `input_required` result, or an error.
    pub(super) fn finish<T: Serialize>(
        &self,
        outcome: Result<T, HandlerError>,
        round: &InputRound,
        purpose: Purpose<'_>,
        on_failure: impl FnOnce(String) -> HandlerResult,
    ) -> HandlerResult {
        match outcome {
            Ok(value) => to_result(&value),
            Err(HandlerError::InputRequired) if round.has_questions() => {
                let (requests, state) = round.close(&self.signer(), purpose, self.inner.state_ttl);
                to_result(&InputRequiredResult::new(requests, Some(state)))
            }
            Err(HandlerError::InputRequired) => Err(ErrorObject::internal(
                "handler asked for input without a question",
            )),
            Err(HandlerError::ContinueAsTask) => Err(ErrorObject::internal(
                "only a deferred-task tool can continue as a task",
            )),
            Err(HandlerError::Protocol(e)) => Err(e),
            Err(HandlerError::Failed(message)) => on_failure(message),
        }
    }

    pub(super) async fn call_tool(
        &self,
        mut params: CallParams<'_>,
        ctx: RequestContext,
    ) -> HandlerResult {
        let revision = ctx.revision;
        let tool = self.read_catalog().tool(&params.name).cloned();
        let Some(tool) = tool else {
            return Err(ErrorObject::invalid_params(format!(
                "unknown tool: {}",
                params.name
            )));
        };
        let mode = call_mode(&tool, params.task.as_ref(), &ctx)?;
        let args = match tool.check_arguments(params.arguments.take().unwrap_or_default()) {
            Ok(args) => args,
            // From 2025-11-25 on, the model sees bad arguments as a tool
            // error it can correct; before, they are a protocol error.
            Err(message) if revision >= ProtocolVersion::V2025_11_25 => {
                return to_result(&CallToolResult::error(message));
            }
            Err(message) => return Err(ErrorObject::invalid_params(message)),
        };
        // A deferred task starts as an ordinary request (2026-07-28 only:
        // in 2025-11-25 the client asked for a task and gets one at once).
        let deferred = match mode {
            CallMode::Task(ttl) if tool.deferred_task && !revision.has_core_tasks() => Some(ttl),
            CallMode::Task(ttl) => return self.start_task(tool, args, &params, ttl, ctx),
            CallMode::Direct => None,
        };
        let purpose = Purpose {
            method: methods::TOOLS_CALL,
            name: &params.name,
        };
        let mut ctx = self.context(
            ctx,
            purpose,
            params.request_state.as_deref(),
            params.input_responses,
        )?;
        // What a deferred task needs once the handler has the context.
        let task = deferred.map(|ttl| (ttl, args.clone(), ctx.request.clone()));
        if deferred.is_some() {
            ctx = ctx.with_task_deferred();
        }
        let round = ctx.shared_round();
        let outcome = (tool.handler)(args, ctx).await;
        if let (Err(HandlerError::ContinueAsTask), Some((ttl, args, request))) = (&outcome, task) {
            let (_, state, responses) = round.suspend();
            let round = InputRound::resume(responses, state);
            return self.launch_task(tool, args, ttl, request, round);
        }
        let outcome = outcome.map(|mut result| {
            if !revision.has_structured_output() {
                result.structured_content = None;
            }
            compat::downgrade_all(&mut result.content, revision);
            result
        });
        self.finish(outcome, &round, purpose, |message| {
            to_result(&CallToolResult::error(message))
        })
    }

    pub(super) async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        ctx: RequestContext,
    ) -> HandlerResult {
        let revision = ctx.revision;
        let uri = params.uri;
        let found = {
            let catalog = self.read_catalog();
            match catalog.resources.iter().find(|r| r.resource.uri == uri) {
                Some(r) => Some((Arc::clone(&r.read), BTreeMap::new())),
                None => catalog
                    .templates
                    .iter()
                    .find_map(|t| t.matches(&uri).map(|vars| (Arc::clone(&t.read), vars))),
            }
        };
        let Some((read, vars)) = found else {
            return Err(ErrorObject::new(
                revision.resource_not_found_code(),
                format!("Resource not found: {uri}"),
            )
            .with_data(serde_json::json!({ "uri": uri })));
        };
        let purpose = Purpose {
            method: methods::RESOURCES_READ,
            name: &uri,
        };
        let ctx = self.context(
            ctx,
            purpose,
            params.request_state.as_deref(),
            params.input_responses,
        )?;
        let round = ctx.shared_round();
        let outcome = read(uri.clone(), vars, ctx).await.map(|contents| {
            let mut result = ReadResourceResult::new(contents);
            (result.ttl_ms, result.cache_scope) = self.cache_hints(revision);
            result
        });
        self.finish(outcome, &round, purpose, |message| {
            Err(ErrorObject::internal(message))
        })
    }

    pub(super) async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        ctx: RequestContext,
    ) -> HandlerResult {
        let prompt = self
            .read_catalog()
            .prompts
            .iter()
            .find(|p| p.prompt.name == params.name)
            .cloned();
        let Some(prompt) = prompt else {
            return Err(ErrorObject::invalid_params(format!(
                "unknown prompt: {}",
                params.name
            )));
        };
        let args: BTreeMap<String, String> =
            params.arguments.unwrap_or_default().into_iter().collect();
        prompt.check_arguments(&args).map_err(|e| match e {
            HandlerError::Protocol(e) => e,
            other => ErrorObject::invalid_params(other),
        })?;
        let purpose = Purpose {
            method: methods::PROMPTS_GET,
            name: &params.name,
        };
        let ctx = self.context(
            ctx,
            purpose,
            params.request_state.as_deref(),
            params.input_responses,
        )?;
        let revision = ctx.revision();
        let round = ctx.shared_round();
        let outcome = (prompt.handler)(args, ctx).await.map(|mut result| {
            for message in &mut result.messages {
                let content = std::mem::replace(&mut message.content, ContentBlock::text(""));
                message.content = compat::downgrade(content, revision);
            }
            result
        });
        self.finish(outcome, &round, purpose, |message| {
            Err(ErrorObject::internal(message))
        })
    }

    pub(super) fn complete(&self, params: CompleteRequestParams) -> HandlerResult {
        let context = params.context.and_then(|c| c.arguments).unwrap_or_default();
        let catalog = self.read_catalog();
        let completer = match &params.reference {
            CompletionReference::Prompt(p) => {
                let prompt = catalog
                    .prompts
                    .iter()
                    .find(|d| d.prompt.name == p.name)
                    .ok_or_else(|| {
                        ErrorObject::invalid_params(format!("unknown prompt: {}", p.name))
                    })?;
                prompt.completers.get(&params.argument.name).cloned()
            }
            CompletionReference::ResourceTemplate(r) => {
                let template = catalog
                    .templates
                    .iter()
                    .find(|t| t.template.uri_template == r.uri)
                    .ok_or_else(|| {
                        ErrorObject::invalid_params(format!("unknown resource template: {}", r.uri))
                    })?;
                template.completers.get(&params.argument.name).cloned()
            }
        };
        drop(catalog);
        let values = completer
            .map(|c| c(&params.argument.value, &context))
            .unwrap_or_default();
        to_result(&CompleteResult::from_values(values))
    }
}
