//! A server's `elicitation/create`: to the client whose call caused it,
//! where that client declared elicitation; else to a person at the host
//! (see [`crate::elicit`]), where one can be asked; else refused. A form
//! asking for a secret is refused either way at the host.

use mcp_schema::{ElicitRequestParams, ElicitResult, ErrorObject, methods};

use super::Upstream;
use super::callers::{Whose, several};
use crate::elicit::{check_answer, secret_fields};
use crate::sampler::{Answered, REFUSED};

impl Upstream {
    /// Answers the server's `elicitation/create`.
    pub(crate) async fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorObject> {
        let method = methods::ELICITATION_CREATE;
        let url_mode = matches!(params, ElicitRequestParams::Url(_));
        let declares = |n: &mcp_core::Negotiated| {
            n.client_capabilities
                .elicitation
                .as_ref()
                .is_some_and(|e| !url_mode || e.url.is_some())
        };
        let whose = self.whose();
        let why = match &whose {
            Whose::One(_, _, negotiated) if declares(negotiated) => {
                return self.ask_caller(method, &params, declares).await;
            }
            Whose::One(..) => {
                "elicitation at the host: the calling client declared none".to_owned()
            }
            Whose::Nobody => "elicitation at the host: no client has a call in flight".to_owned(),
            Whose::Several(n) => format!("elicitation at the host: {}", several(*n)),
        };
        let elicitors = &self.options.elicitors;
        let Some(person) = elicitors.reachable() else {
            return self.ask_caller(method, &params, declares).await;
        };
        let started = std::time::Instant::now();
        let mut answered = Answered::default();
        let answer = async {
            if let ElicitRequestParams::Form(form) = &params {
                let secrets = secret_fields(&form.requested_schema);
                if !secrets.is_empty() {
                    answered.flags = Some("secret-field");
                    return Err(ErrorObject::new(
                        REFUSED,
                        format!(
                            "server {:?} asks for a secret ({}) in a form; the host does not \
                             collect passwords, tokens or keys that way",
                            self.config.name,
                            secrets.join(", ")
                        ),
                    ));
                }
            }
            let asked =
                tokio::time::timeout(elicitors.timeout, person.elicit(&self.config.name, &params));
            let result = match asked.await {
                Ok(Ok(result)) => result,
                Ok(Err(why)) => {
                    answered.answer = Some("unreachable");
                    return Err(ErrorObject::new(
                        REFUSED,
                        format!("the person could not be asked: {why}"),
                    ));
                }
                Err(_) => {
                    answered.answer = Some("timeout");
                    return Err(ErrorObject::new(
                        REFUSED,
                        format!("no answer from the person within {:?}", elicitors.timeout),
                    ));
                }
            };
            answered.answer = Some(match result.action {
                mcp_schema::ElicitAction::Accept => "accepted",
                mcp_schema::ElicitAction::Decline => "declined",
                mcp_schema::ElicitAction::Cancel => "cancelled",
            });
            if let ElicitRequestParams::Form(form) = &params {
                check_answer(&form.requested_schema, &result).map_err(|why| {
                    ErrorObject::invalid_params(format!("the answer does not fit the form: {why}"))
                })?;
            }
            Ok(result)
        }
        .await;
        answered.by = Some(person.name().to_owned());
        if answered.flags.is_some() {
            tracing::warn!(server = %self.config.name, "a form asked for a secret; refused");
        }
        self.audit_asked(method, started, &whose, &answer, Some((&answered, &why)));
        answer
    }
}
