//! droid-crawl's own flags (the device's and the decider's are `DeviceArgs` and
//! `DeciderArgs`), and the simulated device `--sim` starts in-process.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::{Config, Controls, Permissions, Stages};
use crate::config::{self, ConfigCommand, Settings};
use crate::device::cli::DeviceArgs;
use crate::device::{DeviceConfig, ScreenshotMode};
use crate::integrations::mobsf::{MobsfConfig, MobsfIntegration};
use crate::integrations::pcap::{Pcap, PcapConfig};
use crate::integrations::video::{Video, VideoConfig};
use crate::integrations::Unavailable;
use crate::report::Format;
use crate::sim::fault::{Fault, Latency};
use crate::sim::{Sim, SimConfig, SimHandle};

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
    #[command(flatten)]
    pub sim: SimArgs,
    /// Steps before the crawl ends [default: `config set max_steps`, DROID_MAX_STEPS, 15]
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
    /// Seconds before the crawl ends [default: `config set max_duration`,
    /// DROID_MAX_DURATION, 600]
    #[arg(long, value_name = "SECS")]
    pub max_duration: Option<u64>,
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
    /// How to answer the system's runtime permission dialog for the app: allow it, deny it, or
    /// leave it as another app in front (back, then a relaunch).
    #[arg(long, value_enum, default_value_t = Permissions::Grant)]
    pub permissions: Permissions,
    /// Record the screen into the session's video/ (the device's screenrecord, in segments).
    #[arg(long, help_heading = "Integrations")]
    pub video: bool,
    /// Seconds per video segment (screenrecord stops by itself at 180).
    #[arg(
        long,
        default_value_t = 180,
        value_name = "SECS",
        value_parser = clap::value_parser!(u32).range(1..=180),
        help_heading = "Integrations"
    )]
    pub video_segment: u32,
    /// Capture the app's traffic with PCAPdroid (installed on the device) into the session's
    /// traffic_captures/.
    #[arg(long, help_heading = "Integrations")]
    pub pcap: bool,
    /// PCAPdroid's control API key, so that it needs no consent on the device [default:
    /// `config secret pcapdroid_api_key`, PCAPDROID_API_KEY]
    #[arg(long, value_name = "KEY", help_heading = "Integrations")]
    pub pcapdroid_api_key: Option<String>,
    /// Analyse the APK with MobSF after the crawl, into mobsf_scan_results/ [URL default:
    /// `config set mobsf_url`, MOBSF_URL, http://localhost:8000]
    #[arg(long, num_args = 0..=1, value_name = "URL", help_heading = "Integrations")]
    pub mobsf: Option<Option<String>>,
    /// MobSF's API key [default: `config secret mobsf_api_key`, MOBSF_API_KEY]
    #[arg(long, value_name = "KEY", help_heading = "Integrations")]
    pub mobsf_api_key: Option<String>,
    /// After the crawl, leave its crashes and ANRs as found: no minimising replays.
    #[arg(long, help_heading = "Crashes")]
    pub no_minimise: bool,
    #[command(flatten, next_help_heading = "Crashes")]
    pub minimising: MinimiseArgs,
}

/// A simulated device started in-process (`--sim`) instead of a device attached.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SimArgs {
    /// Use a simulated device serving this app model (`builtin:shop`, a MODEL.json),
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
    /// With --sim: fire the model's recorded moves only, none inferred from the same view on
    /// the activity's other screens (see `droid-sim --help`).
    #[arg(long, requires = "sim")]
    pub sim_recorded_only: bool,
}

impl SimArgs {
    /// The in-process simulator `--sim` asks for.
    pub fn sim_config(&self) -> Option<SimConfig> {
        let model = self.sim.clone()?;
        Some(SimConfig {
            faults: self.sim_fault.clone(),
            latency: self.sim_latency,
            truth_log: self.sim_truth_log.clone(),
            recorded_only: self.sim_recorded_only,
            ..SimConfig::new(model)
        })
    }

    /// The app and the device: the simulator `--sim` starts in-process (returned, to keep it
    /// serving) and its app unless `package` names another, else the device `device`'s flags
    /// name (the environment's ADB settings filling in) and `package`.
    pub fn device(
        &self,
        package: Option<&str>,
        device: &DeviceArgs,
    ) -> Result<(Option<SimHandle>, Option<String>, DeviceConfig), DeviceSetupError> {
        let sim = self.sim_config().map(Sim::start).transpose()?;
        let (package, config) = match &sim {
            Some(sim) => {
                let package = package.unwrap_or(sim.package()).to_string();
                let mut config = DeviceConfig::loopback(sim.port(), sim.serial());
                device.apply_waits(&mut config.server);
                (Some(package), config)
            }
            None => {
                let env = |key: &str| std::env::var(key).ok();
                let config = device.to_config(ScreenshotMode::Png, env)?;
                (package.map(str::to_string), config)
            }
        };
        Ok((sim, package, config))
    }
}

/// What minimising a crawl's failures may cost and how (flattened into droid-crawl's flags and
/// `droid-crawl minimise`'s).
#[derive(Debug, Clone, clap::Args)]
pub struct MinimiseArgs {
    /// What minimising may spend, shared by the failures: replays (`200`) or time (`90s`,
    /// `5m`). Verifying replays are not counted.
    #[arg(long, default_value = "200", value_name = "REPLAYS|TIME")]
    pub minimise_budget: crate::repro::Budget,
    /// Replays from a fresh launch that verify each minimal path (reproduced k of N).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub verify: u32,
    /// Clear the app's data (`pm clear`) before each replay, not only force-stop it.
    #[arg(long)]
    pub clear_data: bool,
}

impl MinimiseArgs {
    pub fn options(&self) -> crate::repro::MinimiseOptions {
        crate::repro::MinimiseOptions {
            budget: self.minimise_budget,
            verify: self.verify,
            clear_data: self.clear_data,
        }
    }
}

/// What a crawl does on a secure screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnSecure {
    Stop,
    Continue,
}

/// The MobSF server at `url` (else `mobsf_url`'s setting) with its key (`key_flag`, else
/// `mobsf_api_key`'s); `Err` inside when there is no key.
pub fn mobsf_config(
    url: Option<&str>,
    key_flag: Option<&str>,
    settings: &mut Settings,
) -> Result<Result<MobsfConfig, Unavailable>, config::Error> {
    let url = match url {
        Some(url) => url.to_string(),
        None => settings
            .plain("mobsf_url", None)?
            .unwrap_or_else(|| "http://localhost:8000".into()),
    };
    Ok(match settings.secret("mobsf_api_key", key_flag)? {
        Some(key) => Ok(MobsfConfig::new(url, key)),
        None => Err(Unavailable {
            integration: crate::integrations::mobsf::NAME,
            reason: "no API key (--mobsf-api-key, `droid-crawl config secret mobsf_api_key`, \
                     or MOBSF_API_KEY)"
                .into(),
        }),
    })
}

/// droid-crawl's subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CrawlCommand {
    /// Pause a running crawl after its current step.
    Pause(Target),
    /// Resume a paused crawl.
    Resume(Target),
    /// Stop a running crawl gracefully (its summary and reports are written).
    Stop(Target),
    /// Analyse a past run's APK with MobSF; the figures join that run (then `droid-report`).
    Mobsf(MobsfArgs),
    /// Replay a recorded run, or one crash's steps, from a fresh launch; say where it diverged.
    #[command(after_help = crate::repro::cli::REPLAY_EXAMPLES)]
    Replay(crate::repro::cli::ReplayCommand),
    /// Minimise a past run's crashes and ANRs (replays from a fresh launch), verify and export.
    #[command(after_help = crate::repro::cli::MINIMISE_EXAMPLES)]
    Minimise(crate::repro::cli::MinimiseCommand),
    /// Settings and secrets in user_config.db (provider, model, keys, test credentials, limits).
    Config {
        /// user_config.db [default: $XDG_CONFIG_HOME/droid/user_config.db]
        #[arg(long, env = "DROID_USER_CONFIG")]
        config_db: Option<PathBuf>,
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

/// `droid-crawl pause|resume|stop`'s run.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// The run [default: the newest run still running].
    #[arg(long)]
    pub run: Option<String>,
    /// crawler.db
    #[arg(long, default_value = "crawler.db", env = "DROID_DB")]
    pub db: PathBuf,
}

/// `droid-crawl mobsf`: a past run's APK analysed by MobSF.
#[derive(Debug, Clone, clap::Args)]
pub struct MobsfArgs {
    /// The run whose APK is analysed (the one its crawl saved in extracted_apk/, else pulled
    /// from the device).
    #[arg(long)]
    pub run: String,
    /// crawler.db
    #[arg(long, default_value = "crawler.db", env = "DROID_DB")]
    pub db: PathBuf,
    /// The MobSF server [default: `config set mobsf_url`, MOBSF_URL, http://localhost:8000]
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// MobSF's API key [default: `config secret mobsf_api_key`, MOBSF_API_KEY]
    #[arg(long, value_name = "KEY")]
    pub mobsf_api_key: Option<String>,
    /// user_config.db [default: $XDG_CONFIG_HOME/droid/user_config.db]
    #[arg(long, env = "DROID_USER_CONFIG")]
    pub config_db: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// Why a past run's APK could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyseError {
    #[error(transparent)]
    Config(#[from] config::Error),
    #[error("MobSF: {}", .0.reason)]
    Unavailable(Unavailable),
    #[error(transparent)]
    PastRun(#[from] super::PastRunError),
    #[error(transparent)]
    Adb(#[from] crate::adb::AdbError),
    #[error("connecting to the device for the APK")]
    Device(#[from] crate::device::DeviceError),
}

impl MobsfArgs {
    /// [`MobsfArgs::analyse`] for a person watching: each note to `listener` (and said), then
    /// a summary and whether every artifact came out.
    pub fn watch(
        &self,
        listener: &mut dyn super::Listener,
    ) -> Result<(String, bool), AnalyseError> {
        let notes = self.analyse()?;
        let failed = notes.iter().any(crate::integrations::artifact_failed);
        for note in notes {
            listener.say(
                super::Level::Info,
                note.message.as_deref().unwrap_or_default(),
            );
            listener.event(&crate::events::Event::Note(note));
        }
        let run = &self.run;
        Ok((
            format!("recorded into run {run}; `droid-report {run}` shows it"),
            !failed,
        ))
    }

    /// Analyses the run's APK (the one its crawl saved, else pulled from the device these
    /// flags name) with the MobSF server and key these flags and the settings give: the notes
    /// recorded into the run.
    pub fn analyse(&self) -> Result<Vec<crate::events::Note>, AnalyseError> {
        let mut settings = Settings::for_binary(self.config_db.as_deref())?;
        let url = self.url.as_deref();
        let config = mobsf_config(url, self.mobsf_api_key.as_deref(), &mut settings)?
            .map_err(AnalyseError::Unavailable)?;
        let (_, _, saved) = super::past_run_apk(&self.db, &self.run)?;
        let device = match saved {
            true => None,
            false => {
                let env = |key: &str| std::env::var(key).ok();
                let config = self.device.to_config(ScreenshotMode::Png, env)?;
                Some(crate::device::AdbDevice::connect(config)?)
            }
        };
        let client = device.as_ref().map(crate::device::AdbDevice::client);
        Ok(super::analyse_past_run(
            &self.db, &self.run, config, client,
        )?)
    }
}

/// Why the device to crawl could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DeviceSetupError {
    #[error("starting the simulated device")]
    Sim(#[from] crate::sim::SimError),
    #[error(transparent)]
    Adb(#[from] crate::adb::AdbError),
    #[error("--package or --sim is needed")]
    NoApp,
}

/// A limit from its flag, else its setting (a whole number).
fn limit(settings: &mut Settings, key: &str, flag: Option<u64>) -> Result<u64, config::Error> {
    let flag = flag.map(|n| n.to_string());
    let value = settings.plain(key, flag.as_deref())?.unwrap_or_default();
    value.trim().parse().map_err(|_| config::Error::BadValue {
        key: key.to_string(),
        value,
        kind: config::ValueType::Int,
    })
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
    /// The app and the device to crawl: the simulator `--sim` starts in-process (returned, to
    /// keep it serving) and its app unless `--package` names another, else the device
    /// `device`'s flags name (the environment's ADB settings filling in).
    pub fn device(
        &self,
        device: &DeviceArgs,
    ) -> Result<(Option<SimHandle>, String, DeviceConfig), DeviceSetupError> {
        match self.sim.device(self.package.as_deref(), device)? {
            (sim, Some(package), config) => Ok((sim, package, config)),
            (_, None, _) => Err(DeviceSetupError::NoApp),
        }
    }

    /// Minimising after the crawl, unless `--no-minimise`.
    pub fn minimise(&self) -> Option<crate::repro::MinimiseOptions> {
        (!self.no_minimise).then(|| self.minimising.options())
    }

    /// The integrations these flags ask for onto `config`, and those that cannot be set up
    /// (a key missing) as its warnings.
    pub fn add_integrations(
        &self,
        config: &mut Config,
        settings: &mut Settings,
    ) -> Result<(), config::Error> {
        let package = config.package.clone();
        if self.video {
            config.integrations.push(Box::new(Video::new(VideoConfig {
                segment_secs: self.video_segment,
                ..VideoConfig::default()
            })));
        }
        if self.pcap {
            let key = settings.secret("pcapdroid_api_key", self.pcapdroid_api_key.as_deref())?;
            config
                .integrations
                .push(Box::new(Pcap::new(PcapConfig::new(&package, key))));
        }
        if let Some(url) = &self.mobsf {
            match mobsf_config(url.as_deref(), self.mobsf_api_key.as_deref(), settings)? {
                Ok(mobsf) => config
                    .integrations
                    .push(Box::new(MobsfIntegration::new(mobsf, package))),
                Err(missing) => config.unavailable.push(missing),
            }
        }
        Ok(())
    }

    /// The crawl these flags describe for `package`, deciding with `decide`, stopped when
    /// `stop` is set (a signal).
    pub fn config(
        &self,
        package: String,
        decide: crate::decide::Config,
        act: crate::act::Config,
        stop: Arc<AtomicBool>,
        settings: &mut Settings,
    ) -> Result<Config, config::Error> {
        let max_steps = limit(settings, "max_steps", self.max_steps)?;
        let max_duration = limit(settings, "max_duration", self.max_duration)?;
        Ok(Config {
            integrations: Vec::new(),
            unavailable: Vec::new(),
            package,
            allowed_packages: decide.prompt.allowed_packages.clone(),
            max_steps,
            max_duration: Duration::from_secs(max_duration),
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
            permissions: self.permissions,
            stop_on_secure: match self.on_secure {
                Some(on_secure) => on_secure == OnSecure::Stop,
                None => super::needs_screenshots(&decide),
            },
            decide,
        })
    }
}
