//! droid-crawl's own flags (the device's and the decider's are `DeviceArgs` and
//! `DeciderArgs`), and the simulated device `--sim` starts in-process.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::{Config, Controls, Stages};
use crate::report::Format;
use crate::sim::fault::{Fault, Latency};
use crate::sim::SimConfig;

/// The crawl's limits, files and stage commands; flatten into a binary's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct CrawlArgs {
    /// The app under test (not needed with --sim: the model names it).
    #[arg(
        long,
        short = 'p',
        env = "DROID_PACKAGE",
        required_unless_present = "sim"
    )]
    pub package: Option<String>,
    /// Crawl a simulated device serving this app model (`builtin:shop`, a MODEL.json),
    /// started in-process: no phone needed.
    #[arg(long, value_name = "MODEL")]
    pub sim: Option<String>,
    /// With --sim: a fault to inject (repeatable; see `droid-sim --help`).
    #[arg(long, value_name = "SPEC", requires = "sim")]
    pub sim_fault: Vec<Fault>,
    /// With --sim: `none`, or `realistic` for a real device's delays.
    #[arg(long, value_name = "MODEL", requires = "sim", default_value = "none")]
    pub sim_latency: Latency,
    /// With --sim: write the simulator's ground truth (screens shown, input received) here.
    #[arg(long, value_name = "FILE", requires = "sim")]
    pub sim_truth_log: Option<PathBuf>,
    /// Steps before the crawl ends.
    #[arg(long, default_value_t = 15, env = "DROID_MAX_STEPS")]
    pub max_steps: u64,
    /// Seconds before the crawl ends.
    #[arg(
        long,
        default_value_t = 600,
        env = "DROID_MAX_DURATION",
        value_name = "SECS"
    )]
    pub max_duration: u64,
    /// Where session folders are made.
    #[arg(long, default_value = "output_data", env = "DROID_OUT")]
    pub out: PathBuf,
    /// crawler.db
    #[arg(long, default_value = "crawler.db", env = "DROID_DB")]
    pub db: PathBuf,
    /// A program to capture instead of droid's own (speaks the event protocol).
    #[arg(long, value_name = "CMD")]
    pub capture_cmd: Option<String>,
    /// A program to decide instead of droid's own deciders.
    #[arg(long, value_name = "CMD")]
    pub decide_cmd: Option<String>,
    /// A program to act instead of droid's own.
    #[arg(long, value_name = "CMD")]
    pub act_cmd: Option<String>,
    /// Seconds a stage command may take for one step.
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    pub stage_timeout: f64,
    /// Reports written into the session folder at the end (comma-separated; `none` for none).
    #[arg(long, value_delimiter = ',', default_value = "pdf,html", value_parser = report_format)]
    pub report: Vec<Option<Format>>,
    /// Milliseconds between two actions of a batch.
    #[arg(long, default_value_t = 500)]
    pub pause_ms: u64,
    /// On a secure screen (FLAG_SECURE, a black screenshot): stop with ERROR, or go on
    /// deciding from the hierarchy [default: stop when the decider reads screenshots, a model
    /// in vision mode; go on otherwise].
    #[arg(long, value_enum)]
    pub on_secure: Option<OnSecure>,
}

/// What a crawl does on a secure screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnSecure {
    Stop,
    Continue,
}

fn report_format(name: &str) -> Result<Option<Format>, String> {
    match name {
        "none" => Ok(None),
        name => Format::parse(name)
            .map(Some)
            .ok_or_else(|| format!("{name:?} is none of text, json, pdf, html, junit, dot, none")),
    }
}

impl CrawlArgs {
    /// The in-process simulator `--sim` asks for.
    pub fn sim_config(&self) -> Option<SimConfig> {
        let model = self.sim.clone()?;
        Some(SimConfig {
            faults: self.sim_fault.clone(),
            latency: self.sim_latency,
            truth_log: self.sim_truth_log.clone(),
            ..SimConfig::new(model)
        })
    }

    /// The crawl these flags describe for `package`, deciding with `decide`, stopped when
    /// `stop` is set (a signal).
    pub fn config(
        &self,
        package: String,
        decide: crate::decide::Config,
        act: crate::act::Config,
        stop: Arc<AtomicBool>,
    ) -> Config {
        Config {
            package,
            allowed_packages: decide.prompt.allowed_packages.clone(),
            max_steps: self.max_steps,
            max_duration: Duration::from_secs(self.max_duration),
            out_dir: self.out.clone(),
            db: self.db.clone(),
            act: crate::act::Config {
                pause: Duration::from_millis(self.pause_ms),
                ..act
            },
            stages: Stages {
                capture: self.capture_cmd.clone(),
                decide: self.decide_cmd.clone(),
                act: self.act_cmd.clone(),
                timeout: Duration::try_from_secs_f64(self.stage_timeout)
                    .unwrap_or(Duration::from_secs(120)),
            },
            reports: self.report.iter().flatten().copied().collect(),
            controls: Controls::new(stop),
            stop_on_secure: match self.on_secure {
                Some(on_secure) => on_secure == OnSecure::Stop,
                None => super::needs_screenshots(&decide),
            },
            decide,
        }
    }
}
