//! droid-crawl: explore an app on a device (or a simulated one) until a limit, and leave the
//! run, its report and its crashes behind.

mod common;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use droid::config::ConfigCommand;
use droid::crawl::{self, cli::CrawlArgs, control};
use droid::decide::cli::{DeciderArgs, ENVIRONMENT};
use droid::device::{cli::DeviceArgs, AdbDevice, DeviceConfig, ScreenshotMode};
use droid::sim::Sim;
use droid::store::Store;

const EXAMPLES: &str = "Examples:
  droid-crawl --sim builtin:shop                        (a simulated device, no phone needed)
  droid-crawl --package com.example.app --max-steps 50
  droid-crawl -p com.example.app --decider dfs --seed 2      (depth-first baseline)
  droid-crawl -p com.example.app --decider gemini --model gemini-2.5-flash
  droid-crawl -p com.example.app --decider ollama --task \"add a note titled Milk\"
  droid-crawl -p com.example.app --decide-cmd \"python3 my_agent.py\"
  droid-crawl -p com.example.app --video --pcap --mobsf http://localhost:8000
  droid-crawl mobsf --run RUN                           (MobSF for a past run's APK)
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
heuristic, the random or dfs baselines, or an LLM), acts, recognises screens, survives crashes, ANRs, other apps and \
a device that goes away, and records every step in crawler.db and a session folder \
(OUT/DEVICE_PACKAGE_DDMM_HHMM: screenshots, events.jsonl, logs/crawler.log, report.pdf, \
report.html). Every event goes to stdout as a JSON line; people's messages and the summary to \
stderr.",
    after_help = format!("{EXAMPLES}{ENVIRONMENT}"),
    args_conflicts_with_subcommands = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
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

#[derive(Subcommand)]
enum Command {
    /// Pause a running crawl after its current step.
    Pause(Target),
    /// Resume a paused crawl.
    Resume(Target),
    /// Stop a running crawl gracefully (its summary and reports are written).
    Stop(Target),
    /// Analyse a past run's APK with MobSF; the figures join that run (then `droid-report`).
    Mobsf(MobsfArgs),
    /// Settings and secrets in user_config.db (provider, model, keys, test credentials, limits).
    Config {
        /// user_config.db [default: $XDG_CONFIG_HOME/droid/user_config.db]
        #[arg(long, env = "DROID_USER_CONFIG")]
        config_db: Option<PathBuf>,
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

#[derive(clap::Args)]
struct Target {
    /// The run [default: the newest run still running].
    #[arg(long)]
    run: Option<String>,
    /// crawler.db
    #[arg(long, default_value = "crawler.db", env = "DROID_DB")]
    db: PathBuf,
}

#[derive(clap::Args)]
struct MobsfArgs {
    /// The run whose APK is analysed (the one its crawl saved in extracted_apk/, else pulled
    /// from the device).
    #[arg(long)]
    run: String,
    /// crawler.db
    #[arg(long, default_value = "crawler.db", env = "DROID_DB")]
    db: PathBuf,
    /// The MobSF server [default: `config set mobsf_url`, MOBSF_URL, http://localhost:8000]
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// MobSF's API key [default: `config secret mobsf_api_key`, MOBSF_API_KEY]
    #[arg(long, value_name = "KEY")]
    mobsf_api_key: Option<String>,
    /// user_config.db [default: $XDG_CONFIG_HOME/droid/user_config.db]
    #[arg(long, env = "DROID_USER_CONFIG")]
    config_db: Option<PathBuf>,
    #[command(flatten)]
    device: DeviceArgs,
}

fn main() -> ExitCode {
    common::finish("droid-crawl", run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let command = match args.command {
        Some(Command::Pause(target)) => (control::Command::Pause, target),
        Some(Command::Resume(target)) => (control::Command::Resume, target),
        Some(Command::Stop(target)) => (control::Command::Stop, target),
        Some(Command::Mobsf(mobsf)) => return analyse(mobsf),
        Some(Command::Config { config_db, command }) => {
            return common::configure("droid-crawl", config_db, command)
        }
        None => {
            return crawl(
                args.crawl,
                args.device,
                args.decider,
                args.verbose,
                args.quiet,
            )
        }
    };
    let (command, target) = command;
    let store = Store::open_existing(&target.db)?;
    let Some((run, dir)) = store.controlled_run(target.run.as_deref())? else {
        bail!("no such crawl running in {}", target.db.display());
    };
    control::send(&dir, command).with_context(|| format!("telling run {run}"))?;
    eprintln!("droid-crawl: asked run {run} to {}", command.as_str());
    Ok(ExitCode::SUCCESS)
}

/// `droid-crawl mobsf --run ID`.
fn analyse(args: MobsfArgs) -> anyhow::Result<ExitCode> {
    let mut settings = droid::config::Settings::for_binary(args.config_db.as_deref())?;
    let config = match crawl::cli::mobsf_config(
        args.url.as_deref(),
        args.mobsf_api_key.as_deref(),
        &mut settings,
    )? {
        Ok(config) => config,
        Err(missing) => bail!("MobSF: {}", missing.reason),
    };
    let (_, _, saved) = crawl::past_run_apk(&args.db, &args.run)?;
    let device = match saved {
        true => None,
        false => {
            let env = |key: &str| std::env::var(key).ok();
            let config = args.device.to_config(ScreenshotMode::Png, env)?;
            Some(AdbDevice::connect(config).context("connecting to the device for the APK")?)
        }
    };
    let notes = crawl::analyse_past_run(
        &args.db,
        &args.run,
        config,
        device.as_ref().map(AdbDevice::client),
    )?;
    let mut failed = false;
    let mut stdout = io::stdout().lock();
    for note in notes {
        writeln!(
            stdout,
            "{}",
            droid::events::Event::Note(note.clone()).to_line()
        )?;
        failed |= droid::integrations::artifact_failed(&note);
        let message = note.message.unwrap_or_default();
        common::say("droid-crawl", &message);
    }
    eprintln!(
        "droid-crawl: recorded into run {}; `droid-report --run {}` shows it",
        args.run, args.run
    );
    Ok(match failed {
        true => ExitCode::from(1),
        false => ExitCode::SUCCESS,
    })
}

fn crawl(
    args: CrawlArgs,
    device: DeviceArgs,
    decider: DeciderArgs,
    verbose: u8,
    quiet: u8,
) -> anyhow::Result<ExitCode> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // The second signal ends the process at once; the first asks the crawl to stop.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let sim = args.sim_config().map(Sim::start).transpose()?;
    let (package, device) = match (&sim, &args.package) {
        (Some(sim), package) => {
            let package = package.clone().unwrap_or_else(|| sim.package().into());
            let mut config = DeviceConfig::loopback(sim.port(), sim.serial());
            device.apply_waits(&mut config.server);
            (package, config)
        }
        (None, Some(package)) => {
            let env = |key: &str| std::env::var(key).ok();
            (package.clone(), device.to_config(ScreenshotMode::Png, env)?)
        }
        (None, None) => bail!("--package or --sim is needed"),
    };
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
    let summary = crawl::crawl(config, &device, &mut console)?;
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
