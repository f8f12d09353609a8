//! A server's sampling request: answered by the client whose call caused
//! it, or by the host's model, as `[sampling] mode` says for the server
//! (see [`crate::sampler`]). Where several clients have calls in flight
//! on the shared connection, the host cannot tell whose call asked: it
//! answers itself where it may, and otherwise refuses; it never asks
//! another user's client.

use mcp_schema::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ErrorObject, methods,
};

use super::Upstream;
use super::callers::{Whose, several};
use crate::sampler::{Answered, SamplingMode};

/// Whether `capabilities` take a sampling request (with tools, where it
/// has them).
pub(super) fn takes_sampling(capabilities: &ClientCapabilities, with_tools: bool) -> bool {
    capabilities
        .sampling
        .as_ref()
        .is_some_and(|sampling| !with_tools || sampling.tools.is_some())
}

impl Upstream {
    /// Who answers this server's sampling requests, where the host's
    /// model may: `None` where only clients do.
    pub(crate) fn host_sampling(&self) -> Option<SamplingMode> {
        let sampler = self.options.sampler.as_deref()?;
        let mode = sampler.mode(&self.config.name);
        mode.host_may_answer().then_some(mode)
    }

    /// Answers the server's `sampling/createMessage`.
    pub(super) async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let method = methods::SAMPLING_CREATE_MESSAGE;
        // A request with tools goes only to a client that takes them.
        let with_tools = params.tools.as_ref().is_some_and(|tools| !tools.is_empty());
        let declares =
            |n: &mcp_core::Negotiated| takes_sampling(&n.client_capabilities, with_tools);
        let Some(sampler) = self.options.sampler.as_deref() else {
            return self.ask_caller(method, &params, declares).await;
        };
        let started = std::time::Instant::now();
        let whose = self.whose();
        let why = match (sampler.mode(&self.config.name), &whose) {
            (SamplingMode::Client, _) => {
                return self.ask_caller(method, &params, declares).await;
            }
            (SamplingMode::ClientThenHost, Whose::One(_, _, negotiated))
                if declares(negotiated) =>
            {
                return self.ask_caller(method, &params, declares).await;
            }
            (SamplingMode::Host, _) => "sampling mode host".to_owned(),
            (SamplingMode::ClientThenHost, Whose::One(..)) => {
                "sampling at the host: the calling client declared no sampling (with tools, where asked)".to_owned()
            }
            (SamplingMode::ClientThenHost, Whose::Nobody) => {
                "sampling at the host: no client has a call in flight".to_owned()
            }
            (SamplingMode::ClientThenHost, Whose::Several(n)) => {
                format!("sampling at the host: {}", several(*n))
            }
        };
        let mut answered = Answered::default();
        let answer = sampler
            .answer(&self.config.name, params, &mut answered)
            .await;
        self.audit_asked(method, started, &whose, &answer, Some((&answered, &why)));
        answer
    }
}
