//! `droid-crawl replay` and `droid-crawl minimise`: their flags, and what they do with them.

use std::io::BufReader;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::minimise::{read_events, run_events, MinimiseConfig};
use super::replay::{Mode, Purpose, ReplayConfig, Replayed};
use super::script::Script;
use crate::config::Settings;
use crate::crash::MinimisedData;
use crate::crawl::cli::{DeviceSetupError, MinimiseArgs, SimArgs};
use crate::crawl::control::Controls;
use crate::crawl::Listener;
use crate::device::cli::DeviceArgs;
use crate::device::AdbDevice;
use crate::sim::SimHandle;
use crate::store::Store;

/// `droid-crawl replay --help`'s examples.
pub const REPLAY_EXAMPLES: &str = "Examples:
  droid-crawl replay --run latest                       (the whole run, each screen checked)
  droid-crawl replay --run RUN --crash SIGNATURE        (the steps to one crash, from a fresh launch)
  droid-crawl replay --run RUN --crash SIGNATURE --clear-data
  droid-crawl replay --events SESSION/repro/crash-SIG.events.jsonl --crash SIG --sim builtin:shop
  droid-record export RUN | droid-crawl replay --events -
Exit status: 0 when the replay followed its recording (to its end, or to the crash --crash
names), 1 when it diverged or did not reproduce the crash (the divergence note says at which step,
the screen expected and the one seen), 2 on a usage error. See docs/repro.md.";

/// `droid-crawl minimise --help`'s examples.
pub const MINIMISE_EXAMPLES: &str = "Examples:
  droid-crawl minimise --run latest                     (every crash and ANR of the newest run)
  droid-crawl minimise --run RUN --crash SIGNATURE --minimise-budget 90s
  droid-crawl minimise --run RUN --sim builtin:shop --verify 5
Each result is a `minimised` note in the run (droid-report shows it) and three files in its
session folder's repro/: a Maestro flow, an adb shell script, the events `replay --events` takes.
Exit status: 0 when every failure was minimised (whatever the verdicts), 1 when the device failed
a replay (that failure is recorded as it stood, `halted: device`, and the rest are left), 2 on an
error before anything was recorded. See docs/repro.md.";

/// Where replays run and what they read: the device (or `--sim`), crawler.db, the test
/// password.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayOn {
    /// crawler.db: the runs replayed come from it, the replays are recorded into it.
    #[arg(long, default_value = "crawler.db", env = "DROID_DB")]
    pub db: PathBuf,
    /// Where session folders are made (a replay's own; a run's exports when it has none).
    #[arg(long, default_value = "output_data", env = "DROID_OUT")]
    pub out: PathBuf,
    /// Typed where a step typed the test password's placeholder [default: `config secret
    /// test_password`, TEST_PASSWORD]
    #[arg(long, value_name = "PASSWORD")]
    pub test_password: Option<String>,
    /// user_config.db [default: $XDG_CONFIG_HOME/droid/user_config.db]
    #[arg(long, env = "DROID_USER_CONFIG")]
    pub config_db: Option<PathBuf>,
    #[command(flatten)]
    pub sim: SimArgs,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// `droid-crawl replay`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReplayCommand {
    /// The run to replay, from --db (its id, or `latest`).
    #[arg(long, required_unless_present = "events", conflicts_with = "events")]
    pub run: Option<String>,
    /// Replay these events instead (`-` for stdin): `droid-record export RUN`, or a minimal
    /// path's `repro/*.events.jsonl`.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Only the steps to the crash or ANR of this signature (since the app's last launch); the
    /// replay stops when it comes.
    #[arg(long, value_name = "SIGNATURE")]
    pub crash: Option<String>,
    /// Clear the app's data (`pm clear`) before launching it, not only force-stop it.
    #[arg(long)]
    pub clear_data: bool,
    /// Take no screenshots (faster; the replay's report has no pictures).
    #[arg(long)]
    pub no_screenshots: bool,
    #[command(flatten)]
    pub on: ReplayOn,
}

/// `droid-crawl minimise`.
#[derive(Debug, Clone, clap::Args)]
pub struct MinimiseCommand {
    /// The run whose crashes and ANRs are minimised, from --db (its id, or `latest`).
    #[arg(long)]
    pub run: String,
    /// Only the crash or ANR of this signature.
    #[arg(long, value_name = "SIGNATURE")]
    pub crash: Option<String>,
    #[command(flatten)]
    pub minimising: MinimiseArgs,
    #[command(flatten)]
    pub on: ReplayOn,
}

/// Why a replay or a minimisation could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    #[error("crawler.db")]
    Store(#[from] crate::store::Error),
    #[error("reading {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", .path.display())]
    Events {
        path: PathBuf,
        #[source]
        source: crate::events::ReadError,
    },
    #[error(transparent)]
    Script(#[from] super::script::ScriptError),
    #[error(
        "the events name no app: give --sim MODEL, or events with a run_started or observations"
    )]
    NoApp,
    #[error("setting up the device")]
    Setup(#[from] DeviceSetupError),
    #[error("connecting to the device")]
    Device(#[from] crate::device::DeviceError),
    #[error(transparent)]
    Settings(#[from] crate::config::Error),
    #[error(transparent)]
    Replay(#[from] super::replay::ReplayError),
    #[error(transparent)]
    Minimise(#[from] super::minimise::MinimiseError),
}

impl ReplayOn {
    /// The device (a simulator `--sim` starts, kept in the returned handle) and the app.
    fn connect(
        &self,
        package: Option<&str>,
    ) -> Result<(Option<SimHandle>, String, AdbDevice), CliError> {
        let (sim, package, config) = self.sim.device(package, &self.device)?;
        let package = package.ok_or(CliError::NoApp)?;
        Ok((sim, package, AdbDevice::connect(config)?))
    }

    /// droid-act's settings, with the test password.
    fn act(&self) -> Result<crate::act::Config, CliError> {
        let mut settings = Settings::for_binary(self.config_db.as_deref())?;
        Ok(crate::act::Config {
            test_password: settings.secret("test_password", self.test_password.as_deref())?,
            pause: std::time::Duration::ZERO,
            ..crate::act::Config::default()
        })
    }
}

/// The run `run` names (`latest`: the newest).
fn resolve_run(store: &Store, run: &str) -> Result<String, CliError> {
    match run {
        "latest" => Ok(store
            .latest_run()?
            .ok_or_else(|| crate::store::Error::NoRun("latest".into()))?),
        run => Ok(store.run_row(run)?.run_id),
    }
}

impl ReplayCommand {
    /// [`ReplayCommand::run`], summed up for a person: one line, and whether the replay
    /// followed its recording (reproduced what `--crash` names).
    pub fn watch(
        &self,
        stop: Arc<AtomicBool>,
        listener: &mut dyn Listener,
    ) -> Result<(String, bool), CliError> {
        let replayed = self.run(stop, listener)?;
        Ok((replayed.summary(), replayed.followed()))
    }

    /// Replays what the flags name; the replay's run is recorded into --db and its events
    /// handed to `listener`.
    pub fn run(
        &self,
        stop: Arc<AtomicBool>,
        listener: &mut dyn Listener,
    ) -> Result<Replayed, CliError> {
        let script = match (&self.run, &self.events) {
            (_, Some(path)) => {
                let events = match path.to_str() {
                    Some("-") => read_events(std::io::stdin().lock()),
                    _ => {
                        let file = std::fs::File::open(path).map_err(|source| CliError::Read {
                            path: path.clone(),
                            source,
                        })?;
                        read_events(BufReader::new(file))
                    }
                }
                .map_err(|source| CliError::Events {
                    path: path.clone(),
                    source,
                })?;
                Script::from_events(events)
            }
            (Some(run), None) => {
                let store = Store::open_existing(&self.on.db)?;
                let run = resolve_run(&store, run)?;
                Script::from_events(run_events(&store, &run).map_err(|e| match e {
                    super::minimise::MinimiseError::Store(e) => CliError::Store(e),
                    other => CliError::Minimise(other),
                })?)
            }
            (None, None) => Script::default(),
        };
        let (picks, expect) = match &self.crash {
            Some(signature) => {
                let failure = script.failure(signature)?;
                (script.steps_to(failure), Some(failure.id.clone()))
            }
            None => (script.all(), None),
        };
        let (_sim, package, device) = self.on.connect(script.package.as_deref())?;
        let session_dir = crate::session::new_session_dir(
            &self.on.out,
            crate::device::Device::serial(&device),
            &package,
        );
        let config = ReplayConfig {
            package,
            clear_data: self.clear_data,
            mode: Mode::Follow,
            expect,
            screenshots: !self.no_screenshots,
            act: self.on.act()?,
            db: self.on.db.clone(),
            session_dir,
            replay_of: script.run_id.clone(),
            purpose: Purpose::Replay,
            controls: Some(Controls::new(stop)),
        };
        Ok(super::replay::replay(
            &device, &script, &picks, &config, listener,
        )?)
    }
}

impl MinimiseCommand {
    /// [`MinimiseCommand::run`], summed up for a person.
    pub fn watch(
        &self,
        stop: Arc<AtomicBool>,
        listener: &mut dyn Listener,
    ) -> Result<(String, bool), CliError> {
        let done = self.run(stop, listener)?;
        let reproduced = done.iter().filter(|d| d.verdict == "reproduced").count();
        let device_failed = done.iter().any(|d| d.error.is_some());
        Ok((
            format!(
                "{} crashes and ANRs minimised, {reproduced} reproduced by every verifying \
                 replay{}; `droid-report {}` shows them",
                done.len(),
                match device_failed {
                    true => ", then the device failed",
                    false => "",
                },
                self.run
            ),
            !device_failed,
        ))
    }

    /// Minimises the run's failures on the device the flags name; each result is written into
    /// the run (and handed to `listener` as its note).
    pub fn run(
        &self,
        stop: Arc<AtomicBool>,
        listener: &mut dyn Listener,
    ) -> Result<Vec<MinimisedData>, CliError> {
        let store = Store::open_existing(&self.on.db)?;
        let run = resolve_run(&store, &self.run)?;
        let package = store.run_row(&run)?.app_package;
        drop(store);
        let (_sim, _, device) = self.on.connect(Some(&package))?;
        let config = MinimiseConfig {
            db: self.on.db.clone(),
            out_dir: self.on.out.clone(),
            act: self.on.act()?,
            only: self.crash.clone(),
            controls: Some(Controls::new(stop)),
            ..self.minimising.options().config()
        };
        Ok(super::minimise::minimise_run(
            &device, &run, &config, listener,
        )?)
    }
}
