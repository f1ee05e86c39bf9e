//! droid-decide: one decision per observation, from the heuristic, random, or an LLM.

mod common;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use droid::config::Settings;
use droid::decide::prompt::PromptSettings;
use droid::decide::provider::{ProviderConfig, ProviderKind};
use droid::decide::{self, Config, Credentials, Decider};

/// Where keys and endpoints come from, shared by the main help and `models --help`.
macro_rules! ENVIRONMENT {
    () => {
        "
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
  Store a key encrypted: droid-record config set gemini_api_key --secret"
    };
}

#[derive(Parser)]
#[command(
    name = "droid-decide",
    version,
    args_override_self = true,
    about = "Decide the next actions for each observation"
)]
#[command(
    long_about = "Reads events on stdin, writes them through unchanged, and after each \
observation writes one decision (1 to 12 actions). The heuristic (default) explores by coverage \
and needs no key; random is a seeded Monkey-like baseline; the providers ask an LLM and fall back \
to the heuristic when the model fails. Keys, endpoints and test credentials resolve as flag > \
user_config.db (droid-record config) > environment. Decisions carry the password as \
{{test_password}}; droid-act types the real one."
)]
#[command(after_help = concat!(
    "Examples:
  droid-capture | droid-hash | droid-decide | droid-act
  droid-decide --decider gemini --model gemini-2.5-flash < observations.jsonl
  droid-decide --decider ollama --model qwen2.5vl --text-only
  droid-decide --decider openai --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-VL-7B
  droid-decide --decider gemini --system-prompt my-prompt.txt --allow-package com.android.chrome
  droid-decide models --provider openrouter
  droid-decide --db crawler.db --run RUN < observation.jsonl   (one step of a shell loop)
",
    ENVIRONMENT!()
))]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Who decides.
    #[arg(long, value_enum, default_value = "heuristic", env = "DROID_DECIDER")]
    decider: DeciderArg,
    /// Model name (provider deciders); each provider has a default.
    #[arg(long, global = true, env = "DROID_MODEL")]
    model: Option<String>,
    /// Provider endpoint (proxies, self-hosted servers, tests).
    #[arg(long, global = true)]
    base_url: Option<String>,
    /// API key; prefer the provider's environment variable (a flag shows in `ps`).
    #[arg(long, global = true, hide_env_values = true)]
    api_key: Option<String>,
    /// Replace the default system prompt with this file's text.
    #[arg(long)]
    system_prompt: Option<PathBuf>,
    /// Send the pruned UI tree with refs instead of the screenshot.
    #[arg(long)]
    text_only: bool,
    /// Seed of the heuristic's tie-breaks and of random.
    #[arg(long, default_value_t = 0, env = "DROID_SEED")]
    seed: u64,
    /// The app under test [default: the run_started event's package, else the first observed
    /// screen's].
    #[arg(long, env = "DROID_PACKAGE")]
    package: Option<String>,
    /// Another package the exploration may enter (repeatable).
    #[arg(long = "allow-package")]
    allow_packages: Vec<String>,
    /// user_config.db [default: $XDG_CONFIG_HOME/droid/user_config.db, when it exists]
    #[arg(long, global = true, env = "DROID_USER_CONFIG")]
    config_db: Option<PathBuf>,
    /// Test e-mail for sign-in forms [else test_email, DROID_TEST_EMAIL].
    #[arg(long)]
    test_email: Option<String>,
    /// Test user name for sign-in forms [else test_username, DROID_TEST_USERNAME].
    #[arg(long)]
    test_username: Option<String>,
    /// Test password for sign-in forms; never in a decision or sent to a model [else
    /// test_password, DROID_TEST_PASSWORD].
    #[arg(long)]
    test_password: Option<String>,
    /// crawler.db whose recorded run the heuristic learns from before deciding (one-shot use).
    #[arg(long, requires = "run")]
    db: Option<PathBuf>,
    /// The run to learn from in --db.
    #[arg(long, requires = "db", value_parser = droid::events::parse_run_id)]
    run: Option<String>,
    /// Seconds before one model request times out.
    #[arg(long, global = true, default_value_t = 60.0)]
    timeout: f64,
    /// First retry delay in milliseconds (doubled per retry unless the server says otherwise).
    #[arg(long, global = true, default_value_t = 1000)]
    retry_base_ms: u64,
    /// Longest retry sleep in milliseconds; a server asking for a longer wait is not retried.
    #[arg(long, global = true, default_value_t = 60_000)]
    retry_max_ms: u64,
    /// When the model is never reached (no HTTP answer at all: a server that is down, a
    /// mistyped --base-url): stop the stage, or let the heuristic decide every step.
    #[arg(long, value_enum, default_value = "stop")]
    on_unreachable: Unreachable,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Unreachable {
    Stop,
    Fallback,
}

#[derive(Subcommand)]
enum Command {
    /// List the provider's models usable in vision mode.
    #[command(after_help = concat!(
        "Examples:
  droid-decide models --provider gemini                  (key from GEMINI_API_KEY)
  droid-decide models --provider ollama --base-url http://gpu-box:11434
  droid-decide models --provider openai --base-url http://localhost:1234/v1 --all
  (--all adds text-only models, marked \"text\", and unknown ones, marked \"unknown\")
",
        ENVIRONMENT!()
    ))]
    Models {
        /// The provider to ask; its key and endpoint resolve as for `--decider`.
        #[arg(long, value_enum)]
        provider: ProviderArg,
        /// Also list text-only models and models of unknown capability.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum DeciderArg {
    Heuristic,
    Random,
    Gemini,
    Openrouter,
    Ollama,
    Openai,
}

impl DeciderArg {
    /// The provider a model decider asks.
    fn provider(self) -> Option<ProviderArg> {
        match self {
            DeciderArg::Gemini => Some(ProviderArg::Gemini),
            DeciderArg::Openrouter => Some(ProviderArg::Openrouter),
            DeciderArg::Ollama => Some(ProviderArg::Ollama),
            DeciderArg::Openai => Some(ProviderArg::Openai),
            DeciderArg::Heuristic | DeciderArg::Random => None,
        }
    }
}

/// The deciders that are providers: what `models --provider` takes.
#[derive(Clone, Copy, ValueEnum)]
enum ProviderArg {
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

/// A provider with the command line's settings.
fn provider_config(
    args: &Args,
    kind: ProviderKind,
    settings: &mut Settings,
) -> anyhow::Result<ProviderConfig> {
    let config = ProviderConfig::resolve(
        kind,
        args.model.as_deref(),
        args.base_url.as_deref(),
        args.api_key.as_deref(),
        settings,
    )?;
    Ok(config.with_limits(
        Duration::try_from_secs_f64(args.timeout).context("--timeout")?,
        Duration::from_millis(args.retry_base_ms),
        Duration::from_millis(args.retry_max_ms),
    ))
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut settings = Settings::for_binary(args.config_db.as_deref()).context("user_config.db")?;
    if let Some(Command::Models { provider, all }) = args.command {
        let config = provider_config(&args, provider.into(), &mut settings)?;
        let models = decide::list_models(config)?;
        let mut out = io::stdout().lock();
        // A reader that stops early (`| head`) is a normal end: common::finish says so.
        for line in decide::model_list_lines(&models, all) {
            writeln!(out, "{line}").context("writing the model list")?;
        }
        if let Some(note) = decide::hidden_models_note(&models, all) {
            eprintln!("droid-decide: {note}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let decider = match args.decider.provider() {
        Some(provider) => Decider::Model(provider_config(&args, provider.into(), &mut settings)?),
        None if matches!(args.decider, DeciderArg::Random) => Decider::Random,
        None => Decider::Heuristic,
    };
    let system_prompt = match &args.system_prompt {
        Some(path) => Some(decide::read_system_prompt(path)?),
        None => None,
    };
    let history = match (&args.db, &args.run) {
        (Some(db), Some(run)) => decide::from_store::history(db, run)?,
        _ => Vec::new(),
    };
    let config = Config {
        fall_back_when_unreachable: args.on_unreachable == Unreachable::Fallback,
        history,
        decider,
        seed: args.seed,
        prompt: PromptSettings {
            system_prompt,
            text_only: args.text_only,
            package: args.package,
            allowed_packages: args.allow_packages,
            credentials: Credentials::resolve(
                args.test_email.as_deref(),
                args.test_username.as_deref(),
                args.test_password.as_deref(),
                &mut settings,
            )?,
        },
    };
    match decide::Stage::new(config) {
        Ok(mut stage) => common::filter("droid-decide", &mut stage, false),
        // The model cannot be used at all: the stream still passes, with a note saying why.
        Err(error @ decide::Error::Provider(_)) => {
            common::filter("droid-decide", &mut decide::Unstarted::new(error), false)
        }
        Err(error) => Err(error.into()),
    }
}

fn main() -> ExitCode {
    common::finish("droid-decide", run(Args::parse()))
}
