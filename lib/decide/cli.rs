//! The decider flags droid-decide and droid-crawl share: who decides, the model and its
//! endpoint and key, the prompt, the test credentials, the limits of a model call.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::hybrid::HybridConfig;
use super::prompt::PromptSettings;
use super::provider::{ProviderConfig, ProviderKind};
use super::{Config, Credentials, Decider, Error};
use crate::config::Settings;

/// Where keys and endpoints come from, for `--help`.
pub const ENVIRONMENT: &str = "
Keys and endpoints (flag > user_config.db key > environment > default):
  gemini      --api-key, gemini_api_key, GEMINI_API_KEY (required)
              --base-url [default: https://generativelanguage.googleapis.com/v1beta]
  openrouter  --api-key, openrouter_api_key, OPENROUTER_API_KEY (required)
              --base-url [default: https://openrouter.ai/api/v1]
  ollama      --base-url, ollama_base_url, OLLAMA_BASE_URL [default: http://localhost:11434]
              --api-key, ollama_api_key, OLLAMA_API_KEY (a proxy in front of Ollama)
  openai      --base-url, openai_base_url, OPENAI_BASE_URL [default: https://api.openai.com/v1]
              (vLLM, LM Studio, llama.cpp, Groq: their /v1 URL)
              --api-key, openai_api_key, OPENAI_API_KEY
  Test credentials: --test-email, --test-username, --test-password, or test_email, ...
  in user_config.db, or TEST_EMAIL, TEST_USERNAME, TEST_PASSWORD (DROID_TEST_* also read).
  Store a key encrypted: droid-crawl config secret gemini_api_key
Settings (flag > user_config.db key > environment > default):
  --decider decider DROID_DECIDER, --hybrid-provider hybrid_provider DROID_HYBRID_PROVIDER,
  --plateau-steps plateau_steps DROID_PLATEAU_STEPS, --plateau-model-calls
  plateau_model_calls DROID_PLATEAU_MODEL_CALLS, --model-share model_share DROID_MODEL_SHARE,
  --model model DROID_MODEL, --system-prompt system_prompt
  DROID_SYSTEM_PROMPT, --allow-package allowed_packages (A,B) DROID_ALLOWED_PACKAGES;
  droid-crawl also --max-steps max_steps DROID_MAX_STEPS, --max-duration max_duration
  DROID_MAX_DURATION. Store one: droid-crawl config set max_steps 50";

/// Who decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DeciderArg {
    Heuristic,
    Random,
    Dfs,
    /// The heuristic, and the model (--hybrid-provider) where the exploration plateaus; the
    /// model may name states seen before to visit, which the heuristic walks to.
    Hybrid,
    Gemini,
    Openrouter,
    Ollama,
    Openai,
}

/// The deciders that are providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderArg {
    Gemini,
    Openrouter,
    Ollama,
    Openai,
}

impl From<ProviderArg> for ProviderKind {
    fn from(provider: ProviderArg) -> ProviderKind {
        match provider {
            ProviderArg::Gemini => ProviderKind::Gemini,
            ProviderArg::Openrouter => ProviderKind::OpenRouter,
            ProviderArg::Ollama => ProviderKind::Ollama,
            ProviderArg::Openai => ProviderKind::OpenAi,
        }
    }
}

impl DeciderArg {
    /// The provider a model decider asks.
    pub fn provider(self) -> Option<ProviderArg> {
        match self {
            DeciderArg::Gemini => Some(ProviderArg::Gemini),
            DeciderArg::Openrouter => Some(ProviderArg::Openrouter),
            DeciderArg::Ollama => Some(ProviderArg::Ollama),
            DeciderArg::Openai => Some(ProviderArg::Openai),
            DeciderArg::Heuristic | DeciderArg::Random | DeciderArg::Dfs | DeciderArg::Hybrid => {
                None
            }
        }
    }
}

/// What to do when the model is never reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Unreachable {
    /// Stop: a crawl that never asks its model would mislead.
    Stop,
    /// Let the heuristic decide every step.
    Fallback,
}

/// The decider flags; flatten into a binary's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct DeciderArgs {
    /// Who decides [default: `config set decider`, DROID_DECIDER, heuristic]
    #[arg(long, value_enum)]
    pub decider: Option<DeciderArg>,
    /// The provider the hybrid decider asks where the exploration plateaus [default: `config
    /// set hybrid_provider`, DROID_HYBRID_PROVIDER, gemini]
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub hybrid_provider: Option<ProviderArg>,
    /// Hybrid: steps without a new screen state before the model decides (K; a model whose
    /// steps found new states less often than the heuristic's waits longer) [default:
    /// `config set plateau_steps`, DROID_PLATEAU_STEPS, 6]
    #[arg(long, value_name = "K")]
    pub plateau_steps: Option<u32>,
    /// Hybrid: model calls without a new screen state before the heuristic decides again (L)
    /// [default: `config set plateau_model_calls`, DROID_PLATEAU_MODEL_CALLS, 4]
    #[arg(long, value_name = "L")]
    pub plateau_model_calls: Option<u32>,
    /// Hybrid: the most of the run's steps, in percent, the model is called for (steps walked
    /// to screens it named are not calls); once they are spent the heuristic decides until the
    /// steps catch up [default: `config set model_share`, DROID_MODEL_SHARE, 20]
    #[arg(long, value_name = "PERCENT")]
    pub model_share: Option<u32>,
    /// Model name (provider deciders) [default: `config set model`, DROID_MODEL, the
    /// provider's default]
    #[arg(long, global = true)]
    pub model: Option<String>,
    /// Provider endpoint (proxies, self-hosted servers, tests).
    #[arg(long, global = true)]
    pub base_url: Option<String>,
    /// API key; prefer the provider's environment variable (a flag shows in `ps`).
    #[arg(long, global = true, hide_env_values = true)]
    pub api_key: Option<String>,
    /// Replace the default system prompt with this file's text [default: `config set
    /// system_prompt`, DROID_SYSTEM_PROMPT]
    #[arg(long)]
    pub system_prompt: Option<PathBuf>,
    /// Send the pruned UI tree with refs instead of the screenshot.
    #[arg(long)]
    pub text_only: bool,
    /// A goal for the model (task mode): it says when the task is done.
    #[arg(long)]
    pub task: Option<String>,
    /// Seed of the heuristic's tie-breaks, of random and of dfs's order of widgets.
    #[arg(long, default_value_t = 0, env = "DROID_SEED")]
    pub seed: u64,
    /// Another package the exploration may enter (repeatable) [default: `config set
    /// allowed_packages A,B`, DROID_ALLOWED_PACKAGES]
    #[arg(long = "allow-package")]
    pub allow_packages: Vec<String>,
    /// user_config.db [default: $XDG_CONFIG_HOME/droid/user_config.db, when it exists]
    #[arg(long, global = true, env = "DROID_USER_CONFIG")]
    pub config_db: Option<PathBuf>,
    /// Test e-mail for sign-in forms [else test_email, DROID_TEST_EMAIL].
    #[arg(long)]
    pub test_email: Option<String>,
    /// Test user name for sign-in forms [else test_username, DROID_TEST_USERNAME].
    #[arg(long)]
    pub test_username: Option<String>,
    /// Test password for sign-in forms; never in a decision or sent to a model [else
    /// test_password, DROID_TEST_PASSWORD].
    #[arg(long)]
    pub test_password: Option<String>,
    /// Seconds before one model request times out.
    #[arg(long, global = true, default_value_t = 60.0)]
    pub timeout: f64,
    /// First retry delay in milliseconds (doubled per retry unless the server says otherwise).
    #[arg(long, global = true, default_value_t = 1000)]
    pub retry_base_ms: u64,
    /// Longest retry sleep in milliseconds; a server asking for a longer wait is not retried.
    #[arg(long, global = true, default_value_t = 60_000)]
    pub retry_max_ms: u64,
    /// When the model is never reached (no HTTP answer at all: a server that is down, a
    /// mistyped --base-url): stop, or let the heuristic decide every step.
    #[arg(long, value_enum, default_value = "stop")]
    pub on_unreachable: Unreachable,
    /// Stop asking the model once its calls cost this much (tokens at the model's price per
    /// million: the built-in table, or `config set price.MODEL IN,OUT`); the run spends at most
    /// this plus one call.
    #[arg(long, value_name = "AMOUNT", help_heading = "Model budget")]
    pub max_cost: Option<f64>,
    /// Stop asking the model after this many calls.
    #[arg(long, value_name = "N", help_heading = "Model budget")]
    pub max_model_calls: Option<u64>,
    /// Once the budget is spent: `model`, the heuristic decides the rest of the run; `run`,
    /// the run ends.
    #[arg(
        long,
        value_enum,
        default_value = "model",
        help_heading = "Model budget"
    )]
    pub on_budget: super::cost::OnBudget,
}

impl DeciderArgs {
    /// Who decides: `--decider`, else the `decider` setting.
    pub fn decider_arg(&self, settings: &mut Settings) -> Result<DeciderArg, Error> {
        if let Some(decider) = self.decider {
            return Ok(decider);
        }
        let name = settings
            .plain("decider", None)?
            .unwrap_or_else(|| "heuristic".into());
        <DeciderArg as clap::ValueEnum>::from_str(&name, true).map_err(|_| {
            Error::Flag(format!(
                "decider {name:?} (from user_config.db or DROID_DECIDER) is none of heuristic, \
                 random, dfs, hybrid, gemini, openrouter, ollama, openai"
            ))
        })
    }

    /// The settings of user_config.db these flags read.
    pub fn settings(&self) -> Result<Settings, Error> {
        Ok(Settings::for_binary(self.config_db.as_deref())?)
    }

    /// A provider with these flags' model, endpoint, key and limits.
    pub fn provider(
        &self,
        kind: ProviderKind,
        settings: &mut Settings,
    ) -> Result<ProviderConfig, Error> {
        let model = settings.plain("model", self.model.as_deref())?;
        let config = ProviderConfig::resolve(
            kind,
            model.as_deref(),
            self.base_url.as_deref(),
            self.api_key.as_deref(),
            settings,
        )?;
        let timeout = Duration::try_from_secs_f64(self.timeout)
            .map_err(|_| Error::Flag(format!("--timeout {} is not a duration", self.timeout)))?;
        Ok(config.with_limits(
            timeout,
            Duration::from_millis(self.retry_base_ms),
            Duration::from_millis(self.retry_max_ms),
        ))
    }

    /// The hybrid decider these flags and the settings describe.
    pub fn hybrid(&self, settings: &mut Settings) -> Result<HybridConfig, Error> {
        let flag = self.hybrid_provider.map(|p| {
            <ProviderArg as clap::ValueEnum>::to_possible_value(&p)
                .map(|v| v.get_name().to_string())
                .unwrap_or_default()
        });
        let name = settings
            .plain("hybrid_provider", flag.as_deref())?
            .unwrap_or_default();
        let provider = <ProviderArg as clap::ValueEnum>::from_str(&name, true).map_err(|_| {
            Error::Flag(format!(
                "hybrid_provider {name:?} is none of gemini, openrouter, ollama, openai"
            ))
        })?;
        let count = |settings: &mut Settings, key: &str, flag: Option<u32>| {
            let flag = flag.map(|n| n.to_string());
            let value = settings.plain(key, flag.as_deref())?.unwrap_or_default();
            match value.trim().parse::<u32>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(Error::Flag(format!(
                    "{key} {value:?} is not a whole number above 0"
                ))),
            }
        };
        Ok(HybridConfig {
            provider: self.provider(provider.into(), settings)?,
            plateau_steps: count(settings, "plateau_steps", self.plateau_steps)?,
            model_calls: count(settings, "plateau_model_calls", self.plateau_model_calls)?,
            model_share: match count(settings, "model_share", self.model_share)? {
                share @ 1..=100 => share,
                share => {
                    return Err(Error::Flag(format!(
                        "model_share {share} is not a percentage from 1 to 100"
                    )))
                }
            },
        })
    }

    /// The decide stage these flags describe, for the app `package` (when known), resuming
    /// `history`.
    pub fn config(
        &self,
        package: Option<String>,
        history: Vec<crate::events::Event>,
    ) -> Result<Config, Error> {
        let mut settings = self.settings()?;
        let chosen = self.decider_arg(&mut settings)?;
        let decider = match chosen.provider() {
            Some(provider) => Decider::Model(self.provider(provider.into(), &mut settings)?),
            None if chosen == DeciderArg::Hybrid => Decider::Hybrid(self.hybrid(&mut settings)?),
            None if chosen == DeciderArg::Random => Decider::Random,
            None if chosen == DeciderArg::Dfs => Decider::Dfs,
            None => Decider::Heuristic,
        };
        let price = match decider.provider() {
            Some(provider) => super::cost::Price::of(&provider.model, &mut settings)?,
            None => None,
        };
        if let Some(max) = self.max_cost.filter(|max| max.is_nan() || *max < 0.0) {
            return Err(Error::Flag(format!("--max-cost {max} is not an amount")));
        }
        let flag = self.system_prompt.as_ref().map(|p| p.display().to_string());
        let system_prompt = match settings.plain("system_prompt", flag.as_deref())? {
            Some(path) => Some(super::read_system_prompt(Path::new(&path))?),
            None => None,
        };
        let allowed_packages = match self.allow_packages.is_empty() {
            false => self.allow_packages.clone(),
            true => settings
                .plain("allowed_packages", None)?
                .map(|list| {
                    list.split(',')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
        };
        Ok(Config {
            decider,
            seed: self.seed,
            prompt: PromptSettings {
                system_prompt,
                text_only: self.text_only,
                package,
                allowed_packages,
                credentials: Credentials::resolve(
                    self.test_email.as_deref(),
                    self.test_username.as_deref(),
                    self.test_password.as_deref(),
                    &mut settings,
                )?,
                task: self.task.clone(),
            },
            history,
            fall_back_when_unreachable: self.on_unreachable == Unreachable::Fallback,
            budget: super::cost::Budget {
                max_cost: self.max_cost,
                max_calls: self.max_model_calls,
                on_spent: self.on_budget,
            },
            price,
        })
    }
}
