//! Sampling answered at the host: a server's `sampling/createMessage`
//! answered by the host's own [`model`](crate::model) instead of, or when
//! there is none, a downstream client.
//!
//! `[sampling] mode` says who answers, per server and by default:
//! `client` (the client whose call caused the request, as before),
//! `host`, or `client-then-host` (the default where a `[model]` is
//! configured). Before the model sees a request, the host's budgets
//! apply (`max_tokens` caps a request's length, `rate` counts requests
//! per server, `tokens` the tokens they ask for), and with `approve = "ask"` a person sees the request,
//! may edit or refuse it, and then sees the reply before the server
//! gets it ([`Reviewer`]: the terminal for `mcp host`). Refusals are
//! error -1, as the specification's example has it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use governor::DefaultKeyedRateLimiter;
use mcp_core::BoxFuture;
use mcp_schema::{CreateMessageRequestParams, CreateMessageResult, ErrorObject};
use serde::{Deserialize, Serialize};

use crate::model::{Model, ModelSettings, sampling};

/// Who answers a server's sampling requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SamplingMode {
    /// The client whose call caused the request.
    #[serde(rename = "client")]
    Client,
    /// The host's model.
    #[serde(rename = "host")]
    Host,
    /// The client where it can answer, else the host's model.
    #[serde(rename = "client-then-host")]
    ClientThenHost,
}

impl SamplingMode {
    /// Whether the host's model may answer.
    pub fn host_may_answer(self) -> bool {
        self != SamplingMode::Client
    }

    /// Whether the client is asked first.
    pub fn asks_client(self) -> bool {
        self != SamplingMode::Host
    }
}

/// Whether a person approves each request the host's model answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approve {
    /// A person sees each request (and may edit or refuse it) and its
    /// reply.
    #[default]
    Ask,
    /// The model answers unattended.
    Allow,
}

/// `[sampling]` and each `[sampling.servers.NAME]`: unset keys keep the
/// default's (the server's) or the built-in value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SamplingSettings {
    /// Who answers: `client`, `host` or `client-then-host` (default:
    /// `client-then-host` with a `[model]`, else `client`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<SamplingMode>,
    /// `ask` (default) or `allow`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approve: Option<Approve>,
    /// Whether the person also sees the reply before the server gets it,
    /// with `approve = "ask"` (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review_reply: Option<bool>,
    /// The most tokens one request may ask of the host's model; a request
    /// asking more is cut to this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Requests the host's model answers for one server, `N/second`,
    /// `N/minute` or `N/hour`; more are refused until the budget refills.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// Tokens one server's requests may ask of the host's model (each
    /// spends its `maxTokens`), `N/minute`, `N/hour`; a request beyond is
    /// refused until the budget refills.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<String>,
    /// Per server, by its name in the config.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub servers: BTreeMap<String, SamplingSettings>,
}

/// A person's answer to a sampling request.
#[derive(Clone, Debug, PartialEq)]
pub enum Reviewed {
    /// Send it, as edited.
    Send(Box<CreateMessageRequestParams>),
    /// Refuse it.
    Refuse,
}

/// Shows a person what a server asks the host's model, and what it
/// answered; registered by the embedding application (the terminal of
/// `mcp host`, a console).
pub trait Reviewer: Send + Sync + 'static {
    /// Its name, for the audit.
    fn name(&self) -> &str;

    /// Whether a person can be asked this way now.
    fn reachable(&self) -> bool;

    /// Shows `request` from `server` (to be answered by `model`); the
    /// person sends it, perhaps edited, or refuses it. An error when the
    /// person could not be asked.
    fn review_request<'a>(
        &'a self,
        server: &'a str,
        model: &'a str,
        request: &'a CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<Reviewed, String>>;

    /// Shows the model's `reply` before `server` gets it; whether it may.
    fn review_reply<'a>(
        &'a self,
        server: &'a str,
        reply: &'a CreateMessageResult,
    ) -> BoxFuture<'a, Result<bool, String>>;
}

/// What the embedding application gives the host for sampling.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct SamplingOptions {
    /// The models, the default first (`[model]`, then each
    /// `[models.NAME]`).
    pub models: Vec<ModelSettings>,
    /// `[sampling]`.
    pub settings: SamplingSettings,
    /// Who shows a person the requests, in order.
    pub reviewers: Vec<Arc<dyn Reviewer>>,
    /// How long a person has to answer.
    pub timeout: Option<Duration>,
}

impl std::fmt::Debug for SamplingOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reviewers: Vec<&str> = self.reviewers.iter().map(|r| r.name()).collect();
        f.debug_struct("SamplingOptions")
            .field("models", &self.models)
            .field("settings", &self.settings)
            .field("reviewers", &reviewers)
            .finish()
    }
}

/// The rules for one server, every key settled.
#[derive(Clone, Debug)]
struct Rules {
    mode: SamplingMode,
    approve: Approve,
    review_reply: bool,
    max_tokens: Option<u64>,
    rate: Option<Budget>,
    tokens: Option<Budget>,
}

/// A budget as written, and its limiter.
type Budget = (String, Arc<DefaultKeyedRateLimiter<()>>);

/// Answers servers' sampling requests with the host's models.
pub struct Sampler {
    models: Vec<Model>,
    default: Rules,
    servers: BTreeMap<String, Rules>,
    reviewers: Vec<Arc<dyn Reviewer>>,
    timeout: Duration,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reviewers: Vec<&str> = self.reviewers.iter().map(|r| r.name()).collect();
        f.debug_struct("Sampler")
            .field("models", &self.models)
            .field("default", &self.default)
            .field("servers", &self.servers)
            .field("reviewers", &reviewers)
            .finish()
    }
}

/// How long a person has to answer where the options do not say.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The code of a refusal by a person or the host's rules.
pub const REFUSED: i64 = -1;

/// What became of a request the host answered, for the audit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answered {
    /// Who answered at the host: the model asked, or the person's way of
    /// being asked (`terminal`).
    pub by: Option<String>,
    /// How the person answered: `allowed-once`, `denied`, `accepted`,
    /// `declined`, `cancelled`, `timeout`, `unreachable`; none where
    /// nobody was asked.
    pub answer: Option<&'static str>,
    /// What the request held that the audit flags (`secret-field`).
    pub flags: Option<&'static str>,
}

impl Sampler {
    /// The sampler `options` describe; an error naming the key that does
    /// not check.
    pub fn new(options: SamplingOptions) -> Result<Sampler, String> {
        let models = options
            .models
            .into_iter()
            .map(Model::new)
            .collect::<Result<Vec<_>, _>>()?;
        let built_in = Rules {
            mode: if models.is_empty() {
                SamplingMode::Client
            } else {
                SamplingMode::ClientThenHost
            },
            approve: Approve::Ask,
            review_reply: true,
            max_tokens: None,
            rate: None,
            tokens: None,
        };
        let default = Self::rules(&options.settings, &built_in, "sampling")?;
        let mut servers = BTreeMap::new();
        for (name, settings) in &options.settings.servers {
            if !settings.servers.is_empty() {
                return Err(format!(
                    "sampling.servers.{name} cannot have servers of its own"
                ));
            }
            let rules = Self::rules(settings, &default, &format!("sampling.servers.{name}"))?;
            servers.insert(name.clone(), rules);
        }
        let sampler = Sampler {
            models,
            default,
            servers,
            reviewers: options.reviewers,
            timeout: options.timeout.unwrap_or(DEFAULT_TIMEOUT),
        };
        let needs_model = std::iter::once(&sampler.default)
            .chain(sampler.servers.values())
            .any(|rules| rules.mode.host_may_answer());
        if needs_model && sampler.models.is_empty() {
            return Err(
                "sampling.mode lets the host answer, but no [model] is configured".to_owned(),
            );
        }
        Ok(sampler)
    }

    fn rules(settings: &SamplingSettings, base: &Rules, key: &str) -> Result<Rules, String> {
        let budget = |written: &Option<String>, inherited: &Option<Budget>| match written {
            None => Ok(inherited.clone()),
            Some(rate) => {
                let (quota, _, _) = crate::limits::quota(rate).map_err(|e| format!("{key}.{e}"))?;
                Ok::<_, String>(Some((
                    rate.clone(),
                    Arc::new(DefaultKeyedRateLimiter::keyed(quota)),
                )))
            }
        };
        let rate = budget(&settings.rate, &base.rate)?;
        let tokens = budget(&settings.tokens, &base.tokens)?;
        if settings.max_tokens == Some(0) {
            return Err(format!("{key}.max_tokens must be positive"));
        }
        Ok(Rules {
            mode: settings.mode.unwrap_or(base.mode),
            approve: settings.approve.unwrap_or(base.approve),
            review_reply: settings.review_reply.unwrap_or(base.review_reply),
            max_tokens: settings.max_tokens.or(base.max_tokens),
            rate,
            tokens,
        })
    }

    fn rules_for(&self, server: &str) -> &Rules {
        self.servers.get(server).unwrap_or(&self.default)
    }

    /// Who answers `server`'s sampling requests.
    pub fn mode(&self, server: &str) -> SamplingMode {
        self.rules_for(server).mode
    }

    /// Whether the host has a model.
    pub fn has_model(&self) -> bool {
        !self.models.is_empty()
    }

    /// Answers `server`'s request with the host's model, after its budgets
    /// and, where asked for, a person; what became of it goes in
    /// `answered`.
    pub async fn answer(
        &self,
        server: &str,
        mut params: CreateMessageRequestParams,
        answered: &mut Answered,
    ) -> Result<CreateMessageResult, ErrorObject> {
        let rules = self.rules_for(server);
        if !rules.mode.host_may_answer() {
            return Err(refused(format!(
                "sampling for server {server:?} is not answered at the host ([sampling] mode = \"client\")"
            )));
        }
        if let Some((rate, limiter)) = &rules.rate
            && let Err(not_until) = limiter.check_key(&())
        {
            use governor::clock::{Clock as _, DefaultClock};
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            return Err(ErrorObject::new(
                crate::limits::LIMITED,
                format!(
                    "server {server:?} has used its sampling budget ({rate}); retry in {:.1} s",
                    wait.as_secs_f64()
                ),
            )
            .with_data(
                serde_json::json!({"rate": rate, "retryAfterSeconds": wait.as_secs_f64()}),
            ));
        }
        if let Some(cap) = rules.max_tokens {
            params.max_tokens = params.max_tokens.min(cap);
        }
        if let Some((budget, limiter)) = &rules.tokens {
            let asked = u32::try_from(params.max_tokens.max(1))
                .ok()
                .and_then(std::num::NonZeroU32::new)
                .unwrap_or(std::num::NonZeroU32::MAX);
            match limiter.check_key_n(&(), asked) {
                Ok(Ok(())) => {}
                Ok(Err(not_until)) => {
                    use governor::clock::{Clock as _, DefaultClock};
                    let wait = not_until.wait_time_from(DefaultClock::default().now());
                    return Err(ErrorObject::new(
                        crate::limits::LIMITED,
                        format!(
                            "server {server:?} has used its token budget ({budget}) for now; \
                             {} more tokens in {:.1} s",
                            params.max_tokens,
                            wait.as_secs_f64()
                        ),
                    )
                    .with_data(serde_json::json!({"tokens": budget, "retryAfterSeconds": wait.as_secs_f64()})));
                }
                Err(_) => {
                    return Err(refused(format!(
                        "server {server:?} asks for {} tokens, more than its whole budget ({budget})",
                        params.max_tokens
                    )));
                }
            }
        }
        let model = sampling::choose(&self.models, params.model_preferences.as_ref())
            .ok_or_else(|| ErrorObject::internal("the host has no [model] configured"))?;
        answered.by = Some(model.name().to_owned());
        let reviewer = match rules.approve {
            Approve::Allow => None,
            Approve::Ask => {
                let Some(reviewer) = self.reviewers.iter().find(|r| r.reachable()) else {
                    answered.answer = Some("unreachable");
                    return Err(refused(format!(
                        "server {server:?} asks the host's model, which needs a person's approval \
                         ([sampling] approve = \"ask\"), and no one can be asked here (no terminal); \
                         set approve = \"allow\" to let the model answer unattended"
                    )));
                };
                let reviewed = self
                    .person(
                        reviewer.review_request(server, model.name(), &params),
                        answered,
                    )
                    .await?;
                match reviewed {
                    Reviewed::Send(edited) => params = *edited,
                    Reviewed::Refuse => {
                        answered.answer = Some("denied");
                        return Err(refused("the user refused the sampling request"));
                    }
                }
                answered.answer = Some("allowed-once");
                Some(reviewer)
            }
        };
        let conversation = sampling::conversation(&params)?;
        let reply = model.complete(&conversation, None).await.map_err(|e| {
            ErrorObject::internal(format!("the host's model {:?}: {e}", model.name()))
        })?;
        let result = sampling::result(reply);
        if let Some(reviewer) = reviewer
            && rules.review_reply
        {
            let send = self
                .person(reviewer.review_reply(server, &result), answered)
                .await?;
            if !send {
                answered.answer = Some("denied");
                return Err(refused("the user refused to send the model's reply"));
            }
        }
        Ok(result)
    }

    /// A person's answer, in time.
    async fn person<T>(
        &self,
        asked: BoxFuture<'_, Result<T, String>>,
        answered: &mut Answered,
    ) -> Result<T, ErrorObject> {
        match tokio::time::timeout(self.timeout, asked).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(why)) => {
                answered.answer = Some("unreachable");
                Err(refused(format!("the person could not be asked: {why}")))
            }
            Err(_) => {
                answered.answer = Some("timeout");
                Err(refused(format!(
                    "no answer from the person within {:?}",
                    self.timeout
                )))
            }
        }
    }
}

fn refused(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(REFUSED, message)
}

#[cfg(test)]
mod tests;
