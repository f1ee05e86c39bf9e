//! droid-crawl: explore an app on a device (or a simulated one) until a limit, and leave the
//! run, its report and its crashes behind.

mod common;

use std::io;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use droid::crawl::cli::{CrawlArgs, CrawlCommand};
use droid::crawl::{self, control};
use droid::decide::cli::{DeciderArgs, ENVIRONMENT};
use droid::device::{cli::DeviceArgs, AdbDevice};

const EXAMPLES: &str = "Examples:
  droid-crawl --sim builtin:shop                        (a simulated device, no phone needed)
  droid-crawl --package com.example.app --max-steps 50
  droid-crawl -p com.example.app --decider dfs --seed 2      (depth-first baseline)
  droid-crawl -p com.example.app --decider gemini --model gemini-2.5-flash
  droid-crawl -p com.example.app --decider ollama --task \"add a note titled Milk\"
  droid-crawl -p com.example.app --decider hybrid --hybrid-provider openai --max-cost 0.50
                                                        (the heuristic; the model where it stalls)
  droid-crawl -p com.example.app --decider hybrid --plateau-steps 12 --plateau-model-calls 3
  droid-crawl -p com.example.app --decider gemini --max-model-calls 40 --on-budget run
  droid-crawl config set price.gpt-4o-mini 0.15,0.60    (a model's price per million tokens)
  droid-crawl -p com.example.app --decide-cmd \"python3 my_agent.py\"
  droid-crawl -p com.example.app --permissions deny      (how the app copes without them)
  droid-crawl -p com.example.app --video --pcap --mobsf http://localhost:8000
  droid-crawl mobsf --run RUN                           (MobSF for a past run's APK)
  droid-crawl replay --run RUN --crash SIGNATURE        (a crash's steps again, from a fresh launch)
  droid-crawl replay --events repro/crash-SIG.events.jsonl --sim builtin:shop
  droid-crawl minimise --run RUN --minimise-budget 90s  (a past run's crashes and ANRs)
  droid-crawl --sim builtin:shop --no-minimise          (crashes as found, no replays)
  droid-crawl pause; droid-crawl resume; droid-crawl stop --run RUN   (from another terminal)
  droid-crawl config secret gemini_api_key < key.txt
Exit status: 0 when the crawl ended by its limits, its task or the user; 1 when it ended with
ERROR or could not start; 2 for a usage error. Ctrl-C stops gracefully (the summary and reports
are written); a second Ctrl-C stops at once.
";

#[derive(Parser)]
#[command(
    name = "droid-crawl",
    version,
    about = "Explore an app on its own and record what it finds",
    long_about = "Explores an Android app: captures the screen, decides what to try (the \
heuristic, the random or dfs baselines, or an LLM), acts, recognises screens, answers the \
system's permission dialogs (--permissions), survives crashes, ANRs, other apps and \
a device that goes away, and records every step in crawler.db and a session folder \
(OUT/DEVICE_PACKAGE_DDMM_HHMM: screenshots, events.jsonl, logs/crawler.log, report.pdf, \
report.html). It ends at --max-steps, at --max-duration, or once the heuristic has explored \
everything it found and a last pass over it (toggles changed, every action tried again) found \
nothing new. Then each distinct crash and ANR is minimised: its steps since launch are \
replayed in shorter subsequences from a fresh launch (delta debugging) until no step can go, the \
result is verified by --verify more replays and exported (SESSION/repro/: a Maestro flow, a \
shell script of adb commands, the events `replay` takes). Every event goes to stdout as a JSON \
line; people's messages and the summary to stderr.",
    after_help = format!("{EXAMPLES}{ENVIRONMENT}"),
    args_conflicts_with_subcommands = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<CrawlCommand>,
    #[command(flatten)]
    crawl: CrawlArgs,
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    decider: DeciderArgs,
    /// More messages (-v); fewer (-q: warnings only, -qq: errors only).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    quiet: u8,
}

fn main() -> ExitCode {
    common::finish("droid-crawl", run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (verbose, quiet) = (args.verbose, args.quiet);
    let command = match args.command {
        Some(CrawlCommand::Pause(target)) => (control::Command::Pause, target),
        Some(CrawlCommand::Resume(target)) => (control::Command::Resume, target),
        Some(CrawlCommand::Stop(target)) => (control::Command::Stop, target),
        Some(CrawlCommand::Mobsf(mobsf)) => {
            return common::console::watched(verbose, quiet, |_, console| Ok(mobsf.watch(console)?))
        }
        Some(CrawlCommand::Replay(replay)) => {
            return common::console::watched(verbose, quiet, |stop, console| {
                Ok(replay.watch(stop, console)?)
            })
        }
        Some(CrawlCommand::Minimise(minimise)) => {
            return common::console::watched(verbose, quiet, |stop, console| {
                Ok(minimise.watch(stop, console)?)
            })
        }
        Some(CrawlCommand::Config { config_db, command }) => {
            return common::configure("droid-crawl", config_db, command)
        }
        None => return crawl(args),
    };
    let (command, target) = command;
    let run = control::ask(&target.db, target.run.as_deref(), command)?;
    common::say(
        "droid-crawl",
        &format!("asked run {run} to {}", command.as_str()),
    );
    Ok(ExitCode::SUCCESS)
}

fn crawl(
    Args {
        crawl: args,
        device,
        decider,
        verbose,
        quiet,
        ..
    }: Args,
) -> anyhow::Result<ExitCode> {
    let stop = control::stop_on_signals()?;
    // The simulator, when there is one, serves until the crawl ends.
    let (_sim, package, device) = args.device(&device)?;
    let device = AdbDevice::connect(device).context("connecting to the device")?;
    let decide = decider.config(Some(package.clone()), Vec::new())?;
    let mut settings = decider.settings()?;
    let act = droid::act::Config {
        test_password: settings.secret("test_password", decider.test_password.as_deref())?,
        ..droid::act::Config::default()
    };
    let mut config = args.config(package, decide, act, stop, &mut settings)?;
    args.add_integrations(&mut config, &mut settings)?;
    let mut console = common::console::Console::new(io::stdout().lock(), verbose, quiet);
    let minimise = args.minimise();
    let summary = crawl::crawl_and_minimise(config, minimise.as_ref(), &device, &mut console)?;
    console.finish();
    let text = droid::report::text_summary(&args.db, &summary.run_id)
        .unwrap_or_else(|error| format!("(no summary: {error})\n"));
    // The summary ends with the session folder and the reports.
    eprint!("{}", droid::terminal::clean(&text));
    Ok(match summary.ended_well() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    })
}
