//! Model providers behind one [`ModelAdapter`] trait: Gemini, OpenRouter, Ollama and any
//! OpenAI-compatible server (vLLM, LM Studio, llama.cpp, Groq).
//!
//! Every adapter speaks HTTP through ureq 2 and shares one retry loop ([`http::Client`]):
//! timeouts and 5xx are retried up to twice, 429 is backed off exponentially (honouring the
//! server's hint) up to three times, an invalid key stops at once, and an error that arrives with
//! HTTP 200 is an error. Each attempt is recorded into [`AiMeta`]. The API key is kept in a
//! [`Secret`] whose `Debug` is redacted; it travels in a header only, never in a URL, and the
//! request JSON kept in `AiMeta.request` carries the screenshot's path instead of its bytes.

mod gemini;
mod http;
mod ollama;
mod openai;

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::config::{self, Settings};
use crate::events::AiMeta;

pub use http::RetryPolicy;

/// Which provider an adapter talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Gemini,
    OpenRouter,
    Ollama,
    /// Any server with `/v1/chat/completions` (vLLM, LM Studio, llama.cpp, Groq, OpenAI).
    OpenAi,
}

impl ProviderKind {
    /// The name used on the command line and in `ai.provider`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "gemini",
            ProviderKind::OpenRouter => "openrouter",
            ProviderKind::Ollama => "ollama",
            ProviderKind::OpenAi => "openai",
        }
    }

    /// The setting (user_config.db key; upper-cased, the environment variable) holding its key.
    pub fn key_setting(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "gemini_api_key",
            ProviderKind::OpenRouter => "openrouter_api_key",
            ProviderKind::Ollama => "ollama_api_key",
            ProviderKind::OpenAi => "openai_api_key",
        }
    }

    /// The setting holding a self-hosted endpoint, for the providers that have one.
    pub fn base_url_setting(self) -> Option<&'static str> {
        match self {
            ProviderKind::Ollama => Some("ollama_base_url"),
            ProviderKind::OpenAi => Some("openai_base_url"),
            ProviderKind::Gemini | ProviderKind::OpenRouter => None,
        }
    }

    /// Where the provider lives when `--base-url` is not given.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "https://generativelanguage.googleapis.com/v1beta",
            ProviderKind::OpenRouter => "https://openrouter.ai/api/v1",
            ProviderKind::Ollama => "http://localhost:11434",
            ProviderKind::OpenAi => "https://api.openai.com/v1",
        }
    }

    /// The model used when `--model` is not given.
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderKind::Gemini => "gemini-2.5-flash",
            ProviderKind::OpenRouter => "google/gemini-2.5-flash",
            ProviderKind::Ollama => "gemma3",
            ProviderKind::OpenAi => "gpt-4o-mini",
        }
    }

    /// Whether the provider refuses to work without a key.
    pub fn needs_key(self) -> bool {
        matches!(self, ProviderKind::Gemini | ProviderKind::OpenRouter)
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub use crate::secret::Secret;

/// Everything an adapter needs to start.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub model: String,
    /// Overrides [`ProviderKind::default_base_url`].
    pub base_url: Option<String>,
    pub api_key: Option<Secret>,
    /// Per-request timeout.
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl ProviderConfig {
    /// The defaults for a provider: its default model and endpoint, 60 s timeout, standard retries.
    pub fn new(kind: ProviderKind) -> ProviderConfig {
        ProviderConfig {
            kind,
            model: kind.default_model().to_string(),
            base_url: None,
            api_key: None,
            timeout: Duration::from_secs(60),
            retry: RetryPolicy::default(),
        }
    }

    /// A provider's configuration with `model`, `base_url` and `api_key` resolved flag >
    /// user_config.db > environment > default (the flags are what the command line said).
    pub fn resolve(
        kind: ProviderKind,
        model: Option<&str>,
        base_url: Option<&str>,
        api_key: Option<&str>,
        settings: &mut Settings,
    ) -> Result<ProviderConfig, config::Error> {
        let mut config = ProviderConfig::new(kind);
        if let Some(model) = model {
            config.model = model.to_string();
        }
        config.base_url = match kind.base_url_setting() {
            Some(setting) => settings.plain(setting, base_url)?,
            None => base_url.map(str::to_string),
        };
        // A key read from a file often ends in a line break; it is never part of the key.
        config.api_key = settings
            .secret(kind.key_setting(), api_key)?
            .map(|key| Secret::new(key.expose().trim()))
            .filter(|key| !key.expose().is_empty());
        Ok(config)
    }

    /// This configuration with the command line's limits: the per-request timeout, and the first
    /// and longest retry delay (the retry counts stay as they are: by default the issue's 2 for
    /// 5xx, 3 for 429).
    pub fn with_limits(
        mut self,
        timeout: Duration,
        retry_base: Duration,
        retry_max: Duration,
    ) -> ProviderConfig {
        self.timeout = timeout;
        self.retry = RetryPolicy {
            base_delay: retry_base,
            max_delay: retry_max,
            ..self.retry
        };
        self
    }

    fn base_url(&self) -> String {
        let base = self
            .base_url
            .as_deref()
            .unwrap_or(self.kind.default_base_url());
        base.trim_end_matches('/').to_string()
    }
}

/// A PNG to send with the prompt.
#[derive(Debug, Clone)]
pub struct PromptImage {
    pub png: Vec<u8>,
    /// Where the screenshot lives; written into the kept request JSON in place of the bytes.
    pub path: String,
}

/// One request to a model.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub system: String,
    pub user: String,
    pub image: Option<PromptImage>,
    /// JSON Schema of the expected answer (plain JSON Schema: no `$schema`, no `title`).
    pub schema: Value,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub text: String,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    /// The model that answered, as the server names it.
    pub model: String,
}

/// What a provider says about one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub provider: ProviderKind,
    pub name: String,
    /// `Some(true)` when the model takes images, `None` when the server does not say.
    pub vision: Option<bool>,
}

/// The outcome of [`ModelAdapter::generate`]: the answer or the error, and always the metadata
/// of every attempt.
#[derive(Debug, Clone)]
pub struct Reply {
    pub result: Result<Generation, ProviderError>,
    pub meta: AiMeta,
}

/// A model behind some provider.
pub trait ModelAdapter {
    /// Provider, model name and whether it takes images (as far as known before a call).
    fn info(&self) -> ModelInfo;

    /// Sends the prompt (and image) and returns the text answer with metadata, retrying as the
    /// failure policy says.
    fn generate(&mut self, prompt: &Prompt) -> Reply;

    /// The models the provider offers, with their vision capability.
    fn list_models(&mut self) -> Result<Vec<ModelInfo>, ProviderError>;
}

/// Starts the adapter for a configuration.
pub fn connect(config: ProviderConfig) -> Result<Box<dyn ModelAdapter>, ProviderError> {
    if config.kind.needs_key() && config.api_key.is_none() {
        return Err(ProviderError::MissingKey {
            provider: config.kind,
        });
    }
    // The HTTP client would refuse such a header with an error that quotes it.
    if let Some(key) = &config.api_key {
        if !key.expose().bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ProviderError::UnusableKey {
                provider: config.kind,
            });
        }
    }
    let client = http::Client::new(&config);
    Ok(match config.kind {
        ProviderKind::Gemini => Box::new(gemini::Gemini::new(config, client)),
        ProviderKind::Ollama => Box::new(ollama::Ollama::new(config, client)),
        ProviderKind::OpenRouter | ProviderKind::OpenAi => {
            Box::new(openai::OpenAiChat::new(config, client))
        }
    })
}

/// Why a provider call failed. Messages never contain the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    #[error(
        "{provider}: no API key: set {} (or --api-key, or store it with `droid-record config set \
         {} --secret`)",
        .provider.key_setting().to_ascii_uppercase(),
        .provider.key_setting()
    )]
    MissingKey { provider: ProviderKind },
    #[error(
        "{provider}: the API key holds spaces, control characters or non-ASCII letters, which \
         cannot go in an HTTP header; check how it was set"
    )]
    UnusableKey { provider: ProviderKind },
    #[error("{provider}: the API key was rejected (HTTP {status}): {message}")]
    InvalidKey {
        provider: ProviderKind,
        status: u16,
        message: String,
    },
    #[error("{provider}: rate limited (HTTP 429) after {attempts} attempts: {message}")]
    RateLimited {
        provider: ProviderKind,
        attempts: u32,
        message: String,
    },
    #[error("{provider}: request failed (HTTP {status}): {message}")]
    Http {
        provider: ProviderKind,
        status: u16,
        message: String,
    },
    /// Asking again will not help: no credits left (402), a model the server does not have.
    #[error("{provider}: the server refuses the request as configured (HTTP {status}): {message}")]
    Refused {
        provider: ProviderKind,
        status: u16,
        message: String,
    },
    #[error("{provider}: the server answered HTTP 200 with an error: {message}")]
    InBody {
        provider: ProviderKind,
        message: String,
    },
    #[error("{provider}: {url}: {message}")]
    Transport {
        provider: ProviderKind,
        url: String,
        message: String,
    },
    #[error("{provider}: unexpected answer: {message}")]
    Malformed {
        provider: ProviderKind,
        message: String,
    },
    #[error("{provider}: model {model} does not take images; use a vision model or --text-only")]
    NoVision {
        provider: ProviderKind,
        model: String,
    },
    /// The server cannot read images as it runs (llama.cpp's llama-server without `--mmproj`
    /// answers an image with HTTP 500): every step would be refused the same way.
    #[error(
        "{provider}: the server does not take images (HTTP {status}): {message}; serve a vision \
         model (llama-server needs its --mmproj) or use --text-only"
    )]
    ServerNoVision {
        provider: ProviderKind,
        status: u16,
        message: String,
    },
}

impl ProviderError {
    /// Errors that will not go away by asking again (a bad key, a missing model): the stage stops.
    pub fn is_fatal(&self) -> bool {
        match self {
            ProviderError::MissingKey { .. }
            | ProviderError::UnusableKey { .. }
            | ProviderError::InvalidKey { .. }
            | ProviderError::Refused { .. }
            | ProviderError::NoVision { .. }
            | ProviderError::ServerNoVision { .. } => true,
            ProviderError::Http { status, .. } => *status == 404,
            _ => false,
        }
    }
}

/// A GET or POST whose answer must be a JSON object (a model list, a model's details), with
/// its attempts recorded into `meta`.
fn fetch_object(
    client: &http::Client,
    provider: ProviderKind,
    request: &http::Request<'_>,
    meta: &mut AiMeta,
) -> Result<Value, ProviderError> {
    client.call(request, meta, |answer| {
        if answer.body.is_object() {
            http::Verdict::Done(answer.body.clone())
        } else {
            http::Verdict::Fail(ProviderError::Malformed {
                provider,
                message: http::answer_message(answer),
            })
        }
    })
}

/// `a/b` joined without doubled slashes.
fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// The text of a JSON error envelope, whatever its shape: `{"error":"..."}`,
/// `{"error":{"message":...}}`, vLLM's old `{"object":"error","message":...}`.
fn error_message(body: &Value) -> Option<String> {
    match body.get("error") {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Object(error)) => Some(
            error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| Value::Object(error.clone()).to_string()),
        ),
        _ if body.get("object").and_then(Value::as_str) == Some("error") => body
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_resolves_flags_over_the_environment_over_defaults() {
        let env = [
            ("OLLAMA_BASE_URL", "http://gpu:11434"),
            ("OLLAMA_API_KEY", "env-key"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let mut settings = Settings::new(None, env);
        let from_env =
            ProviderConfig::resolve(ProviderKind::Ollama, None, None, None, &mut settings).unwrap();
        assert_eq!(from_env.model, ProviderKind::Ollama.default_model());
        assert_eq!(from_env.base_url.as_deref(), Some("http://gpu:11434"));
        assert_eq!(from_env.api_key.unwrap().expose(), "env-key");
        let flagged = ProviderConfig::resolve(
            ProviderKind::Ollama,
            Some("llava"),
            Some("http://local:1"),
            Some("flag-key"),
            &mut settings,
        )
        .unwrap();
        assert_eq!(flagged.model, "llava");
        assert_eq!(flagged.base_url.as_deref(), Some("http://local:1"));
        assert_eq!(flagged.api_key.unwrap().expose(), "flag-key");
    }

    #[test]
    fn the_command_line_limits_set_delays_and_keep_the_retry_counts() {
        let config = ProviderConfig::new(ProviderKind::Gemini);
        assert_eq!(config.retry.server_retries, 2);
        let custom = ProviderConfig {
            retry: RetryPolicy {
                server_retries: 5,
                ..RetryPolicy::default()
            },
            ..config.clone()
        };
        let limited = custom.with_limits(Duration::ZERO, Duration::ZERO, Duration::ZERO);
        assert_eq!(limited.retry.server_retries, 5);
        let config = config.with_limits(
            Duration::from_secs(5),
            Duration::from_millis(10),
            Duration::from_millis(200),
        );
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert_eq!(config.retry.base_delay, Duration::from_millis(10));
        assert_eq!(config.retry.max_delay, Duration::from_millis(200));
        // The issue's counts: 2 more tries after a timeout or a 5xx, 3 after a 429.
        assert_eq!(config.retry.server_retries, 2);
        assert_eq!(config.retry.rate_limit_retries, 3);
    }

    #[test]
    fn secrets_never_print() {
        let secret = Secret::new("sk-live-123");
        let config = ProviderConfig {
            api_key: Some(secret.clone()),
            ..ProviderConfig::new(ProviderKind::OpenRouter)
        };
        assert!(!format!("{config:?}").contains("sk-live-123"));
        assert_eq!(secret.expose(), "sk-live-123");
    }

    #[test]
    fn error_envelopes_of_every_shape() {
        let cases = [
            (r#"{"error":"model 'x' not found"}"#, "model 'x' not found"),
            (r#"{"error":{"message":"bad","code":400}}"#, "bad"),
            (r#"{"object":"error","message":"old vllm"}"#, "old vllm"),
        ];
        for (body, expected) in cases {
            let body: Value = serde_json::from_str(body).unwrap();
            assert_eq!(error_message(&body).as_deref(), Some(expected));
        }
        assert_eq!(error_message(&serde_json::json!({"choices": []})), None);
    }

    #[test]
    fn a_base_url_and_a_path_join_with_one_slash() {
        assert_eq!(join("http://h/v1/", "/models"), "http://h/v1/models");
    }
}
