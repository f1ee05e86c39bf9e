//! droid-decide: one decision per observation, from the heuristic, a baseline (random, dfs), or
//! an LLM.

mod common;

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use droid::decide::cli::{DeciderArgs, ProviderArg, ENVIRONMENT};
use droid::decide::{self, from_store};

const EXAMPLES: &str = "Examples:
  droid-capture | droid-hash | droid-decide | droid-act
  droid-decide --decider dfs --seed 3 < observations.jsonl   (depth-first baseline)
  droid-decide --decider gemini --model gemini-2.5-flash < observations.jsonl
  droid-decide --decider hybrid --hybrid-provider ollama --model gemma3 --text-only
  droid-decide --decider gemini --max-cost 0.20 < observations.jsonl   (then the heuristic)
  droid-decide --decider ollama --model qwen2.5vl --text-only
  droid-decide --decider openai --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-VL-7B
  droid-decide --decider gemini --system-prompt my-prompt.txt --allow-package com.android.chrome
  droid-decide models --provider openrouter
  droid-decide --db crawler.db --run RUN < observation.jsonl   (one step of a shell loop)
  droid-crawl -p PKG --decide-cmd \"sh each-step.sh\"   (each-step.sh holds the loop below)
    while IFS= read -r l; do printf '%s\\n' \"$l\" | droid-decide --db crawler.db; done
    (one decide per step, resuming from crawler.db the run each observation names)
";

const MODELS_EXAMPLES: &str = "Examples:
  droid-decide models --provider gemini                  (key from GEMINI_API_KEY)
  droid-decide models --provider ollama --base-url http://gpu-box:11434
  droid-decide models --provider openai --base-url http://localhost:1234/v1 --all
  (--all adds text-only models, marked \"text\", and unknown ones, marked \"unknown\")
";

#[derive(Parser)]
#[command(
    name = "droid-decide",
    version,
    args_override_self = true,
    about = "Decide the next actions for each observation",
    long_about = "Reads events on stdin, writes them through unchanged, and after each \
observation writes one decision (1 to 12 actions). The heuristic (default) explores by coverage \
and needs no key; random is a seeded Monkey-like baseline and dfs a DroidBot-style depth-first \
one (an untried widget on this screen, else back; a relaunch when outside the app or stuck); the providers ask an LLM and fall back \
to the heuristic when a call fails (the decision then says decider: heuristic). A model never \
reached stops the stage unless --on-unreachable fallback. Keys, endpoints and test credentials \
resolve as flag > user_config.db (droid-crawl config) > environment. Decisions carry the password \
as {{test_password}}; droid-act types the real one.",
    after_help = format!("{EXAMPLES}{ENVIRONMENT}")
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    decider: DeciderArgs,
    /// The app under test [default: the run_started event's package, else the first observed
    /// screen's].
    #[arg(long, env = "DROID_PACKAGE")]
    package: Option<String>,
    /// crawler.db whose recorded run the stage resumes before deciding (one-shot use).
    #[arg(long)]
    db: Option<PathBuf>,
    /// The run to resume in --db [default: the run the first input line names].
    #[arg(long, requires = "db", value_parser = droid::events::parse_run_id)]
    run: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// List the provider's models usable in vision mode.
    #[command(after_help = format!("{MODELS_EXAMPLES}{ENVIRONMENT}"))]
    Models {
        /// The provider to ask; its key and endpoint resolve as for `--decider`.
        #[arg(long, value_enum)]
        provider: ProviderArg,
        /// Also list text-only models and models of unknown capability.
        #[arg(long)]
        all: bool,
    },
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Command::Models { provider, all }) = args.command {
        let mut settings = args.decider.settings()?;
        let config = args.decider.provider(provider.into(), &mut settings)?;
        let models = decide::list_models(config)?;
        let mut out = io::stdout().lock();
        // A reader that stops early (`| head`) is a normal end: common::finish says so.
        for line in decide::model_list_lines(&models, all) {
            writeln!(out, "{line}").context("writing the model list")?;
        }
        if let Some(note) = decide::hidden_models_note(&models, all) {
            common::say("droid-decide", &note);
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Without --run, the run is the one the input names: read it first (one-shot use, a line
    // or two).
    let mut input = Vec::new();
    if args.db.is_some() && args.run.is_none() {
        io::stdin()
            .lock()
            .read_to_end(&mut input)
            .context("reading stdin")?;
    }
    let run = args.run.clone().or_else(|| from_store::run_named(&input));
    let history = match (&args.db, &run) {
        (Some(db), Some(run)) => from_store::history(db, run)?,
        _ => Vec::new(),
    };
    let config = args.decider.config(args.package, history)?;
    let read_input = args.db.is_some() && args.run.is_none();
    let filter = |stage: &mut dyn FnMut(&mut dyn io::BufRead) -> anyhow::Result<ExitCode>| {
        match read_input {
            true => stage(&mut io::Cursor::new(&input)),
            false => stage(&mut io::BufReader::new(io::stdin().lock())),
        }
    };
    match decide::Stage::new(config) {
        Ok(mut stage) => {
            filter(&mut |input| common::filter_from("droid-decide", &mut stage, false, input))
        }
        // The model cannot be used at all: the stream still passes, with a note saying why.
        Err(error @ decide::Error::Provider(_)) => {
            let mut unstarted = decide::Unstarted::new(error);
            filter(&mut |input| common::filter_from("droid-decide", &mut unstarted, false, input))
        }
        Err(error) => Err(error.into()),
    }
}

fn main() -> ExitCode {
    common::finish("droid-decide", run(Args::parse()))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        super::Args::command().debug_assert();
    }
}
