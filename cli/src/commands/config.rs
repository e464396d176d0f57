//! `--config FILE` (issue 21, docs/configuration.md): one TOML file for what `serve`, `run` and
//! `chat` need beyond a few flags: the models (`[[model]]`, `default_model`), and serve's
//! `[serve]`, `[limits]` and `[timeouts]`. Read with serde (`deny_unknown_fields` everywhere);
//! flags override the file; secrets only by the name of an environment variable.
//!
//! Every problem is one English sentence naming the file, the line and the key
//! ([`ConfigError`]), and the command exits 2.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::ValueEnum;
use serde::Deserialize;
use toml::Spanned;

/// Which provider family a model is reached through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ProviderKind {
    /// Any server speaking the OpenAI chat-completions API.
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

/// A config file, read and checked.
#[derive(Debug)]
pub(crate) struct Config {
    /// The file, as given.
    pub(crate) path: PathBuf,
    /// The models, in the file's order.
    pub(crate) models: Vec<ModelEntry>,
    /// The model sessions get when they ask for none (default: the first).
    pub(crate) default_model: Option<String>,
    pub(crate) serve: ServeSection,
    pub(crate) limits: LimitsSection,
    pub(crate) timeouts: TimeoutsSection,
    /// `[tenant_defaults]`: every tenant's settings unless its own table says otherwise.
    pub(crate) tenant_defaults: TenantSection,
    /// `[tenants.NAME]`.
    pub(crate) tenants: std::collections::BTreeMap<String, TenantSection>,
    /// `[jwt]`: how `hookline serve` checks JWT bearer tokens.
    pub(crate) jwt: Option<JwtSection>,
}

/// `[jwt]` (issue 48, docs/configuration.md).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JwtSection {
    /// A JWKS file (relative to the config file).
    jwks_file: Option<PathBuf>,
    /// A JWKS URL.
    jwks_url: Option<String>,
    issuer: String,
    audience: String,
    /// The one algorithm tokens are signed with (`RS256`, `ES256`, `EdDSA`, ...).
    algorithm: hookline_server::JwtAlgorithm,
    /// The claim holding the tenant (default `tenant`).
    tenant_claim: Option<String>,
    /// The claim holding the role (default `role`).
    role_claim: Option<String>,
    /// The least seconds between two fetches of the JWKS (default 10).
    refetch_floor_secs: Option<u64>,
}

impl JwtSection {
    /// The server's settings, or why there are none: exactly one of `jwks_file`, `jwks_url`.
    pub(crate) fn settings(&self) -> Result<hookline_server::JwtSettings, String> {
        let jwks = match (&self.jwks_file, &self.jwks_url) {
            (Some(file), None) => hookline_server::JwksSource::File(file.clone()),
            (None, Some(url)) => hookline_server::JwksSource::Url(url.clone()),
            _ => return Err("[jwt] needs exactly one of jwks_file and jwks_url".into()),
        };
        Ok(hookline_server::JwtSettings {
            jwks,
            issuer: self.issuer.clone(),
            audience: self.audience.clone(),
            algorithm: self.algorithm,
            tenant_claim: self.tenant_claim.clone().unwrap_or_else(|| "tenant".into()),
            role_claim: self.role_claim.clone().unwrap_or_else(|| "role".into()),
            refetch_floor: self
                .refetch_floor_secs
                .map_or(hookline_server::REFETCH_FLOOR, Duration::from_secs),
        })
    }
}

/// `[tenant_defaults]` and `[tenants.NAME]` (issue 48, docs/configuration.md): what a tenant
/// may do beyond its roles.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TenantSection {
    /// Who answers the tenant's approvals: `operator` (default) or `owner-or-operator`.
    pub(crate) approvals: Option<hookline_server::ApprovalAnswerers>,
    /// Turns started per second (a token bucket).
    pub(crate) turns_per_second: Option<std::num::NonZeroU32>,
    /// Turns that may start at once before the rate applies (default: the rate).
    pub(crate) turn_burst: Option<std::num::NonZeroU32>,
    /// Sessions open on one node at once.
    pub(crate) max_sessions: Option<usize>,
    /// Turns running on one node at once.
    pub(crate) max_running_turns: Option<usize>,
    /// The cap on a request body, in bytes.
    pub(crate) body_limit: Option<usize>,
}

impl TenantSection {
    /// These settings over `base`'s.
    fn over(&self, base: &hookline_server::TenantPolicy) -> hookline_server::TenantPolicy {
        let own = hookline_server::TenantLimits {
            turns_per_second: self.turns_per_second,
            turn_burst: self.turn_burst,
            max_sessions: self.max_sessions,
            max_running_turns: self.max_running_turns,
            body_limit: self.body_limit,
        };
        hookline_server::TenantPolicy {
            approvals: self.approvals.unwrap_or(base.approvals),
            limits: own.or(&base.limits),
        }
    }
}

impl Config {
    /// Every tenant's settings, as the server takes them.
    pub(crate) fn tenants(&self) -> hookline_server::Tenants {
        let default = self
            .tenant_defaults
            .over(&hookline_server::TenantPolicy::default());
        let named = self
            .tenants
            .iter()
            .map(|(name, section)| (name.clone(), section.over(&default)))
            .collect();
        hookline_server::Tenants { default, named }
    }
}

/// The file's shape.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Shape {
    #[serde(default)]
    default_model: Option<Spanned<String>>,
    #[serde(default, rename = "model")]
    models: Vec<ModelEntry>,
    #[serde(default)]
    serve: ServeSection,
    #[serde(default)]
    limits: LimitsSection,
    #[serde(default)]
    timeouts: TimeoutsSection,
    #[serde(default)]
    tenant_defaults: TenantSection,
    #[serde(default)]
    tenants: std::collections::BTreeMap<String, TenantSection>,
    #[serde(default)]
    jwt: Option<JwtSection>,
    /// Refused with its own sentence rather than as an unknown key: MCP is not in this build
    /// (SPEC X), and a user who configured servers must learn that, not a typo.
    #[serde(default)]
    mcp: Option<Spanned<toml::Value>>,
}

/// One `[[model]]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModelEntry {
    /// What a session asks for (`"model"` at open, `/model`).
    pub(crate) name: String,
    /// `openai` or `anthropic`.
    pub(crate) provider: ProviderKind,
    /// The API's base URL.
    pub(crate) base_url: String,
    /// The model name the provider is sent.
    pub(crate) model: String,
    /// The environment variable holding the key (none: no key is sent).
    #[serde(default)]
    api_key_env: Option<Spanned<String>>,
    /// The most tokens one answer may have.
    #[serde(default)]
    pub(crate) max_tokens: Option<u32>,
    /// Seconds the server may take to start answering (default 60).
    #[serde(default)]
    pub(crate) timeout_secs: Option<u64>,
    /// Whether answers are streamed (default true).
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    /// Whether the model takes images (default false).
    #[serde(default)]
    pub(crate) images: Option<bool>,
}

impl ModelEntry {
    /// The key's variable, if any.
    pub(crate) fn api_key_env(&self) -> Option<&str> {
        self.api_key_env.as_ref().map(|v| v.get_ref().as_str())
    }
}

/// `[serve]`: what serve's flags of the same names set.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServeSection {
    pub(crate) listen: Option<SocketAddr>,
    /// A directory or a `postgres://` URL.
    pub(crate) store: Option<String>,
    pub(crate) plugins: Option<PathBuf>,
    pub(crate) workspace_root: Option<PathBuf>,
    pub(crate) token_file: Option<PathBuf>,
    pub(crate) arbiters: Option<usize>,
}

/// `[limits]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsSection {
    pub(crate) max_sessions: Option<usize>,
    pub(crate) body_limit: Option<usize>,
    pub(crate) idempotency_keys: Option<u64>,
}

/// `[timeouts]`, in milliseconds.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TimeoutsSection {
    pub(crate) approval_ms: Option<u64>,
    pub(crate) drain_budget_ms: Option<u64>,
    pub(crate) request_ms: Option<u64>,
    pub(crate) idempotency_ttl_ms: Option<u64>,
}

/// Why a config file cannot be used: one sentence naming the file (and, when it is about a
/// key, the line and the key).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ConfigError(pub(crate) String);

impl Config {
    /// Reads and checks `path`; `env` answers whether a variable is set (the process
    /// environment, in the commands).
    pub(crate) fn load(path: &Path, env: &dyn Fn(&str) -> bool) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError(format!(
                "The config file {} cannot be read: {}.",
                path.display(),
                e.kind().to_string().to_lowercase()
            ))
        })?;
        Self::parse(path, &text, env)
    }

    /// Checks `text`, the contents of `path`.
    pub(crate) fn parse(
        path: &Path,
        text: &str,
        env: &dyn Fn(&str) -> bool,
    ) -> Result<Self, ConfigError> {
        let at = |span: std::ops::Range<usize>, key: &str, what: &str| {
            ConfigError(format!(
                "The config file {}, line {}, key {key}: {what}.",
                path.display(),
                line_of(text, span.start)
            ))
        };
        let shape: Shape = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let message = e.message().trim().trim_end_matches('.');
            let key = key_of(text, span.start, message);
            at(span, &key, message)
        })?;
        if let Some(mcp) = &shape.mcp {
            return Err(at(
                mcp.span(),
                "mcp",
                "MCP servers are not supported in this build (SPEC X); remove the [[mcp]] tables",
            ));
        }
        for (i, model) in shape.models.iter().enumerate() {
            if shape.models[..i].iter().any(|m| m.name == model.name) {
                return Err(ConfigError(format!(
                    "The config file {}, key model.name: the model name {:?} is given twice.",
                    path.display(),
                    model.name
                )));
            }
            if let Some(var) = &model.api_key_env {
                if !env(var.get_ref()) {
                    return Err(at(
                        var.span(),
                        "model.api_key_env",
                        &format!(
                            "the environment variable {} (the API key of model {:?}) is not set",
                            var.get_ref(),
                            model.name
                        ),
                    ));
                }
            }
        }
        if let Some(default) = &shape.default_model {
            if !shape.models.iter().any(|m| &m.name == default.get_ref()) {
                return Err(at(
                    default.span(),
                    "default_model",
                    &format!(
                        "{:?} is not the name of a [[model]] in the file",
                        default.get_ref()
                    ),
                ));
            }
        }
        let base = path.parent().unwrap_or(Path::new(""));
        let mut serve = shape.serve;
        for dir in [
            &mut serve.plugins,
            &mut serve.workspace_root,
            &mut serve.token_file,
        ]
        .into_iter()
        .flatten()
        {
            // Relative paths are the file's, not the current directory's.
            *dir = base.join(&*dir);
        }
        if let Some(store) = &mut serve.store {
            let lower = store.to_ascii_lowercase();
            if !lower.starts_with("postgres://") && !lower.starts_with("postgresql://") {
                *store = base.join(&*store).display().to_string();
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            models: shape.models,
            default_model: shape.default_model.map(Spanned::into_inner),
            serve,
            limits: shape.limits,
            timeouts: shape.timeouts,
            tenant_defaults: shape.tenant_defaults,
            tenants: shape.tenants,
            jwt: shape.jwt.map(|mut jwt| {
                jwt.jwks_file = jwt.jwks_file.map(|file| base.join(file));
                jwt
            }),
        })
    }
}

/// The 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The dotted key an error at `offset` is about: the field a serde message names (`unknown
/// field`, `missing field`), else the key on the error's line, under the table it sits in.
fn key_of(text: &str, offset: usize, message: &str) -> String {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let line = text[line_start..line_end].trim();
    let named = message
        .split_once('`')
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .filter(|_| message.starts_with("unknown field") || message.starts_with("missing field"));
    let on_line = line
        .split_once('=')
        .map(|(key, _)| key.trim().trim_matches('"').to_owned())
        .filter(|key| !key.is_empty() && !line.starts_with('['));
    // The table the line is in (or heads).
    let table = text[..line_end]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_owned());
    let key = named.or(on_line).unwrap_or_else(|| "(the file)".into());
    match table {
        Some(table) if !key.starts_with('(') => format!("{table}.{key}"),
        _ => key,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("/etc/hl/hookline.toml"), text, &|var| {
            var == "SET_KEY"
        })
    }

    #[test]
    fn mcp_servers_are_refused_as_not_in_this_build() {
        let error = parse("[[mcp]]\nname = \"files\"\ncommand = \"npx\"\n").unwrap_err();
        assert_eq!(
            error.0,
            "The config file /etc/hl/hookline.toml, line 1, key mcp: MCP servers are not \
             supported in this build (SPEC X); remove the [[mcp]] tables."
        );
    }

    const GOOD: &str = r#"default_model = "claude"

[[model]]
name = "gpt"
provider = "openai"
base_url = "http://127.0.0.1:8000/v1"
model = "gpt-4.1-mini"
api_key_env = "SET_KEY"

[[model]]
name = "claude"
provider = "anthropic"
base_url = "http://127.0.0.1:8001"
model = "claude-sonnet-4-5"
max_tokens = 2048

[serve]
listen = "127.0.0.1:9000"
workspace_root = "spaces"

[limits]
max_sessions = 50

[timeouts]
approval_ms = 1000
"#;

    #[test]
    fn a_good_file_is_read_and_relative_paths_are_the_files() {
        let config = parse(GOOD).unwrap();
        assert_eq!(config.models.len(), 2);
        assert_eq!(config.models[0].api_key_env(), Some("SET_KEY"));
        assert_eq!(config.models[1].provider, ProviderKind::Anthropic);
        assert_eq!(config.default_model.as_deref(), Some("claude"));
        assert_eq!(
            config.serve.workspace_root,
            Some(PathBuf::from("/etc/hl/spaces"))
        );
        assert_eq!(config.limits.max_sessions, Some(50));
        assert_eq!(config.timeouts.approval_ms, Some(1000));
    }

    #[test]
    fn each_problem_is_one_sentence_naming_the_file_the_line_and_the_key() {
        let unknown = GOOD.replace("max_sessions = 50", "max_sesions = 50");
        assert_eq!(
            parse(&unknown).unwrap_err().0,
            "The config file /etc/hl/hookline.toml, line 22, key limits.max_sesions: unknown field `max_sesions`, expected one of `max_sessions`, `body_limit`, `idempotency_keys`."
        );
        let no_provider = GOOD.replace("provider = \"anthropic\"\n", "");
        let error = parse(&no_provider).unwrap_err().0;
        assert!(
            error.starts_with("The config file /etc/hl/hookline.toml, line 1")
                && error.contains("key model.provider: missing field `provider`"),
            "{error}"
        );
        let unset = GOOD.replace("SET_KEY", "UNSET_KEY");
        assert_eq!(
            parse(&unset).unwrap_err().0,
            "The config file /etc/hl/hookline.toml, line 8, key model.api_key_env: the environment variable UNSET_KEY (the API key of model \"gpt\") is not set."
        );
        let bad_type = GOOD.replace("approval_ms = 1000", "approval_ms = \"soon\"");
        let error = parse(&bad_type).unwrap_err().0;
        assert!(
            error.starts_with(
                "The config file /etc/hl/hookline.toml, line 25, key timeouts.approval_ms: invalid type"
            ),
            "{error}"
        );
        let bad_default = GOOD.replace("default_model = \"claude\"", "default_model = \"llama\"");
        assert_eq!(
            parse(&bad_default).unwrap_err().0,
            "The config file /etc/hl/hookline.toml, line 1, key default_model: \"llama\" is not the name of a [[model]] in the file."
        );
        let missing = Config::load(Path::new("/nonexistent/hookline.toml"), &|_| true)
            .unwrap_err()
            .0;
        assert_eq!(
            missing,
            "The config file /nonexistent/hookline.toml cannot be read: entity not found."
        );
    }
}
