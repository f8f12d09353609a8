//! The questions of a 2026-07-28 server's `input_required` rounds that
//! the host answers itself instead of the client: sampling with its
//! model, elicitation by a person at the host, `roots/list` with the
//! roots the user gave it; and what such a server is told the client can
//! do, so that it asks them.

use mcp_schema::{ClientCapabilities, CreateMessageRequestParams, ErrorObject, methods};
use serde_json::Value;

use super::Upstream;
use super::callers::Whose;
use super::sampling::takes_sampling;
use crate::sampler::{Answered, SamplingMode};

impl Upstream {
    /// What a 2026-07-28 upstream is told the client can do: the
    /// client's own capabilities, with sampling (and its tools) added
    /// where the host's model answers for it, elicitation where a person
    /// at the host answers for it, and roots where the user gave the host
    /// some; `None` where they stay as they are.
    pub(crate) fn capabilities_with_host(
        &self,
        client: &ClientCapabilities,
    ) -> Option<ClientCapabilities> {
        // The cheap checks first: this is on the way of every request.
        let add_roots = !self.options.roots.is_empty();
        let add_sampling = self.options.sampler.is_some()
            && self.host_sampling().is_some()
            && !takes_sampling(client, true);
        let add_elicitation = client.elicitation.is_none()
            && !self.options.elicitors.people.is_empty()
            && self.options.elicitors.reachable().is_some();
        if !add_sampling && !add_elicitation && !add_roots {
            return None;
        }
        let mut with_host = client.clone();
        if add_sampling {
            with_host.sampling = Some(mcp_schema::SamplingCapability {
                tools: Some(Default::default()),
                ..with_host.sampling.unwrap_or_default()
            });
        }
        if add_elicitation {
            with_host.elicitation = Some(mcp_schema::ElicitationCapability {
                form: Some(Default::default()),
                url: Some(Default::default()),
            });
        }
        if add_roots {
            with_host.roots = Some(mcp_schema::RootsCapability {
                list_changed: Some(true),
            });
        }
        Some(with_host)
    }

    /// Whether the host answers a question of a 2026-07-28 upstream's
    /// `input_required` round (`method` with `params`) for a client with
    /// `capabilities`: sampling with its model, elicitation by a person,
    /// the roots the user gave it.
    pub(crate) fn host_answers_question(
        &self,
        capabilities: &ClientCapabilities,
        method: &str,
        params: &Value,
    ) -> bool {
        match method {
            methods::SAMPLING_CREATE_MESSAGE => self.host_answers_round(capabilities, params),
            methods::ELICITATION_CREATE => {
                capabilities.elicitation.is_none() && self.options.elicitors.reachable().is_some()
            }
            // The roots the user gave the host are every server's.
            methods::ROOTS_LIST => !self.options.roots.is_empty(),
            _ => false,
        }
    }

    /// Answers a question the host takes ([`Upstream::host_answers_question`]).
    pub(crate) async fn answer_question(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        if method == methods::ROOTS_LIST {
            let listed = mcp_schema::ListRootsResult::new(self.options.roots.get());
            return serde_json::to_value(listed).map_err(ErrorObject::internal);
        }
        if method == methods::ELICITATION_CREATE {
            let params = serde_json::from_value(params)
                .map_err(|e| ErrorObject::invalid_params(format!("elicitation/create: {e}")))?;
            let answer = self.elicit(params).await?;
            return serde_json::to_value(answer).map_err(ErrorObject::internal);
        }
        self.sample_for_round(params).await
    }

    /// Whether the host's model answers a sampling question with
    /// `params` of a 2026-07-28 upstream's `input_required` round, for a
    /// client with `capabilities`.
    pub(crate) fn host_answers_round(
        &self,
        capabilities: &ClientCapabilities,
        params: &Value,
    ) -> bool {
        let with_tools = params
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| !tools.is_empty());
        match self.host_sampling() {
            None => false,
            Some(SamplingMode::Host) => true,
            Some(_) => !takes_sampling(capabilities, with_tools),
        }
    }

    /// Answers a sampling question of a 2026-07-28 upstream's
    /// `input_required` round with the host's model; the answer as the
    /// round's response.
    async fn sample_for_round(&self, params: Value) -> Result<Value, ErrorObject> {
        let started = std::time::Instant::now();
        let params: CreateMessageRequestParams = serde_json::from_value(params)
            .map_err(|e| ErrorObject::invalid_params(format!("sampling/createMessage: {e}")))?;
        let sampler = self
            .options
            .sampler
            .as_deref()
            .ok_or_else(|| ErrorObject::internal("the host has no model"))?;
        let mut answered = Answered::default();
        let answer = sampler
            .answer(&self.config.name, params, &mut answered)
            .await;
        let why = "sampling at the host: a round of the call";
        self.audit_asked(
            methods::SAMPLING_CREATE_MESSAGE,
            started,
            &Whose::Nobody,
            &answer,
            Some((&answered, why)),
        );
        serde_json::to_value(answer?).map_err(ErrorObject::internal)
    }
}
