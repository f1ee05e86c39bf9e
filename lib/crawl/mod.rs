//! droid-crawl's driver: explores an app on a device until a limit, survives what apps and
//! devices do, and leaves a run a person can read and a CI job can act on.
//!
//! A crawl is a state machine (`UNINITIALIZED → INITIALIZING → RUNNING ⇄ PAUSED_MANUAL →
//! STOPPING → STOPPED`, and `ERROR`), each change a `note` of kind `state`. Each step captures
//! the screen, hashes it, decides and acts through the stages' value-level APIs (or a co-process
//! standing in for a stage), and records the step in crawler.db on a thread of its own, so the
//! device's time is the step's time. Between the decider and the device stand the policies:
//!
//! - **crash**: the app is gone and the crash buffer holds its FATAL EXCEPTION: a `crash` note
//!   with the whole trace, the actions since the last launch (the steps to reproduce) and the
//!   screenshot where it happened, then a relaunch;
//! - **ANR**: the system's "isn't responding" dialog, or an ANR block in the system log: an
//!   `anr` note with the trace, then "Wait" (after two on the same screen, "Close app");
//! - **permission dialog**: the system asks for a runtime permission for the app: the dialog's
//!   allow (`--permissions deny`: deny; `leave`: another app in front), once per request;
//! - **context loss**: another app in front (neither the app nor an allowed package): back,
//!   and after three in a row a relaunch;
//! - **stuck**: the same screen more than twice in a row with actions that did not navigate:
//!   `is_stuck` and a reason on the observation for the decider, a `stuck` note;
//! - **secure screen**: a black screenshot (FLAG_SECURE): a decider that reads screenshots
//!   cannot go on, so the crawl stops with ERROR; one that reads the hierarchy (the heuristic,
//!   random, a model with `--text-only`) goes on, with a `warning` note;
//! - **device gone**: the device layer waits for it to come back; then the crawl ends with
//!   ERROR; a decider that stops (a model that cannot be used) ends it with ERROR too.
//!
//! Recoveries are decisions of the driver (`decider: "droid-crawl"`), recorded like any other
//! and learned by the decider like any decision not its own.

mod attached;
pub mod cli;
pub mod control;
pub mod coprocess;
pub(crate) mod policy;
mod recorder;
mod recovery;
pub(crate) mod run;
mod step;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::act;
use crate::capture::device::DeviceOptions;
use crate::decide;
use crate::device::{AdbDevice, Device, DeviceError};
use crate::events::{now_ts, Event, Limits, NoteKind, RunEnded, RunStarted};
use crate::explore::Explorer;
use crate::integrations::{Integration, SessionDir, Unavailable};
use crate::report;
use crate::store::{self, Store};
use attached::Attached;
pub use attached::{analyse_past_run, past_run_apk, PastRunError, GOALS};
pub use control::{Command, Controls};
use coprocess::{Coprocess, CoprocessError};
pub use policy::Permissions;
use policy::{AnrDialog, ContextLoss, PermissionDialog, Stuck};
use run::Run;
use step::Driver;

/// Who decides a recovery: written as `decider` on the driver's own decisions.
pub const DRIVER: &str = "droid-crawl";

/// The states of a crawl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Uninitialized,
    Initializing,
    Running,
    PausedManual,
    Stopping,
    Stopped,
    Error,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Uninitialized => "UNINITIALIZED",
            State::Initializing => "INITIALIZING",
            State::Running => "RUNNING",
            State::PausedManual => "PAUSED_MANUAL",
            State::Stopping => "STOPPING",
            State::Stopped => "STOPPED",
            State::Error => "ERROR",
        }
    }
}

/// Programs standing in for stages (`--capture-cmd`, `--decide-cmd`, `--act-cmd`).
#[derive(Debug, Clone, Default)]
pub struct Stages {
    pub capture: Option<String>,
    pub decide: Option<String>,
    pub act: Option<String>,
    /// How long a co-process may take for one step.
    pub timeout: Duration,
}

/// What a crawl does.
pub struct Config {
    /// The app under test.
    pub package: String,
    /// Other packages the exploration may enter (a browser for a login, say).
    pub allowed_packages: Vec<String>,
    pub max_steps: u64,
    pub max_duration: Duration,
    /// Where session folders are made (`output_data`).
    pub out_dir: PathBuf,
    pub db: PathBuf,
    /// The decide stage (its prompt's package and allowed packages are set from above).
    pub decide: decide::Config,
    pub act: act::Config,
    pub stages: Stages,
    /// Reports written into the session folder at the end.
    pub reports: Vec<report::Format>,
    pub controls: Controls,
    /// Stop with ERROR on a secure screen (a black screenshot), rather than decide from the
    /// hierarchy alone.
    pub stop_on_secure: bool,
    /// What the system's runtime permission dialog for the app is answered with.
    pub permissions: Permissions,
    /// Integrations asked for (video, traffic capture, MobSF); the declared activities are
    /// read in every crawl.
    pub integrations: Vec<Box<dyn Integration>>,
    /// Integrations asked for that cannot be set up (a key missing): warnings at the start.
    pub unavailable: Vec<Unavailable>,
}

/// Whether a decider needs screenshots (a model in vision mode): the default of
/// [`Config::stop_on_secure`].
pub fn needs_screenshots(decide: &decide::Config) -> bool {
    decide.decider.provider().is_some() && !decide.prompt.text_only
}

/// Why a crawl could not run at all (no run was started).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CrawlError {
    #[error("the crawl cannot start: {}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error("cannot open crawler.db")]
    Store(#[source] store::Error),
    #[error("cannot create the session folder {}", .path.display())]
    Session {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the device")]
    Device(#[source] DeviceError),
    #[error("the decider")]
    Decide(#[source] decide::Error),
    #[error("a stage command")]
    Coprocess(#[source] CoprocessError),
}

/// How loud people's messages are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

/// Where a crawl in progress is, for a progress bar.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub step: u64,
    pub max_steps: u64,
    pub unique_screens: usize,
    pub crashes: u64,
    pub elapsed: Duration,
    pub model_calls: u64,
    /// What the model calls cost (see [`crate::decide::cost`]).
    pub model_cost: f64,
    pub paused: bool,
}

impl Progress {
    /// The model part for people: calls, and when they cost anything, the cost and the cost
    /// per new screen.
    pub fn model_part(&self) -> String {
        let calls = format!("{} model calls", self.model_calls);
        if self.model_cost <= 0.0 {
            return calls;
        }
        let cost = crate::decide::cost::format_cost;
        let per_screen = self.model_cost / self.unique_screens.max(1) as f64;
        format!(
            "{calls}, cost {} ({} per new screen)",
            cost(self.model_cost),
            cost(per_screen)
        )
    }
}

/// Where the minimisation of a run's failures is (see [`crate::repro`]), for a progress bar.
#[derive(Debug, Clone, Default)]
pub struct Minimising {
    /// The failure being minimised (from 1) of how many.
    pub failure: usize,
    pub failures: usize,
    pub title: String,
    /// Its steps since launch, and the fewest a replay reproduced it with so far.
    pub steps_before: usize,
    pub steps_now: usize,
    /// Replays spent on it.
    pub replays: u32,
    /// `minimising` or `verifying`.
    pub phase: &'static str,
}

/// Who watches a crawl: every event of the run as it is recorded, messages for people, and
/// progress.
pub trait Listener {
    fn event(&mut self, event: &Event);
    fn say(&mut self, level: Level, message: &str);
    fn progress(&mut self, _progress: &Progress) {}
    fn minimising(&mut self, _minimising: &Minimising) {}
}

/// How a crawl ended.
#[derive(Debug, Clone)]
pub struct Summary {
    pub run_id: String,
    pub session_dir: PathBuf,
    /// `COMPLETED`, `INTERRUPTED` or `ERROR`.
    pub status: String,
    /// `max_steps`, `max_duration`, `stopped`, `task_done`, `explored`, or what went wrong.
    pub reason: String,
    pub steps: u64,
    pub reports: Vec<PathBuf>,
}

impl Summary {
    /// Whether the crawl ended by its limits or by the user (exit 0).
    pub fn ended_well(&self) -> bool {
        self.status != "ERROR"
    }
}

/// Checks what must hold before a crawl (the device answers, the app is installed, the decider
/// can be used) and returns what blocks it and what deserves a warning.
pub fn validate(config: &Config, device: &dyn Device) -> (Vec<String>, Vec<String>) {
    let mut blocking = Vec::new();
    let mut warnings = Vec::new();
    match device.app_version(&config.package) {
        Ok(Some(_)) => {}
        Ok(None) => blocking.push(format!(
            "{} is not installed on {}",
            config.package,
            device.serial()
        )),
        Err(error) => blocking.push(format!(
            "cannot ask {} about {}: {}",
            device.serial(),
            config.package,
            crate::filter::Chain(&error)
        )),
    }
    if config.max_steps == 0 {
        blocking.push("--max-steps must be at least 1".into());
    }
    if config.stages.decide.is_none() && config.decide.prompt.task.is_some() {
        if let decide::Decider::Heuristic | decide::Decider::Random | decide::Decider::Dfs =
            config.decide.decider
        {
            warnings.push(format!(
                "the {} decider does not read --task: the crawl ends by its limits",
                config.decide.decider.name()
            ));
        }
    }
    (blocking, warnings)
}

/// Runs a crawl to its end. Errors here mean no run was started; a run that started always
/// ends with `run_ended` and a summary, whatever happened.
pub fn crawl(
    config: Config,
    device: &AdbDevice,
    listener: &mut dyn Listener,
) -> Result<Summary, CrawlError> {
    crawl_and_minimise(config, None, device, listener)
}

/// [`crawl`], then, when it ended `COMPLETED` and `minimise` is given, each distinct crash
/// and ANR it found minimised on the same device ([`crate::repro::minimise`]) before the
/// reports are written. A minimisation that fails is a message; the crawl's end stands.
pub fn crawl_and_minimise(
    mut config: Config,
    minimise: Option<&crate::repro::MinimiseOptions>,
    device: &AdbDevice,
    listener: &mut dyn Listener,
) -> Result<Summary, CrawlError> {
    let client = device.client();
    let adb = device;
    let device: &dyn Device = device;
    let (blocking, warnings) = validate(&config, device);
    if !blocking.is_empty() {
        return Err(CrawlError::Invalid(blocking));
    }
    config.decide.prompt.package = Some(config.package.clone());
    config.decide.prompt.allowed_packages = config.allowed_packages.clone();
    let decider_name = config.decide.decider.name().to_string();
    let model = config.decide.decider.provider().map(|p| p.model.clone());
    let stage = match &config.stages.decide {
        Some(_) => None,
        None => {
            let decide_config = decide::Config {
                history: Vec::new(),
                ..config.decide.clone()
            };
            Some(decide::Stage::new(decide_config).map_err(CrawlError::Decide)?)
        }
    };
    let spawn = |command: &Option<String>| {
        command
            .as_deref()
            .map(|c| Coprocess::spawn(c, config.stages.timeout))
            .transpose()
            .map_err(CrawlError::Coprocess)
    };
    let capture_cmd = spawn(&config.stages.capture)?;
    let decide_cmd = spawn(&config.stages.decide)?;
    let act_cmd = spawn(&config.stages.act)?;

    // Runs a dead crawl left RUNNING end with ERROR before this one starts.
    let store = Store::open(&config.db).map_err(CrawlError::Store)?;
    for ended in store.cleanup_dead_drivers().map_err(CrawlError::Store)? {
        listener.say(
            Level::Warn,
            &format!("run {ended} was left running by a crawl that is gone: marked ERROR"),
        );
    }
    drop(store);

    let info = device.info().map_err(CrawlError::Device)?;
    let run_id = crate::events::new_run_id();
    let session_dir =
        crate::session::new_session_dir(&config.out_dir, device.serial(), &config.package);
    crate::session::create_session_dir(&session_dir, &run_id).map_err(|source| {
        CrawlError::Session {
            path: session_dir.clone(),
            source,
        }
    })?;
    for folder in ["screenshots", "logs"] {
        let path = session_dir.join(folder);
        std::fs::create_dir_all(&path).map_err(|source| CrawlError::Session { path, source })?;
    }
    config.controls.watch(&session_dir);
    let explorer = Explorer::new(
        device,
        DeviceOptions {
            out_dir: session_dir.join("screenshots"),
            screenshot: true,
            concurrent: true,
            run_id: Some(run_id.clone()),
            step: None,
            step_names: true,
        },
        config.act.clone(),
    )
    .map_err(CrawlError::Device)?;

    let mut run = Run::new(
        &config.db,
        &session_dir,
        listener,
        &run_id,
        config.max_steps,
    );
    let version = device.app_version(&config.package).ok().flatten();
    run.emit(Event::RunStarted(RunStarted {
        run_id: run_id.clone(),
        ts: Some(now_ts()),
        device: Some(device.serial().to_string()),
        device_info: Some(info),
        package: Some(config.package.clone()),
        app_version: version.and_then(|v| v.name),
        limits: Some(Limits {
            max_steps: Some(config.max_steps),
            max_duration_secs: Some(config.max_duration.as_secs()),
        }),
        decider: Some(decider_name.clone()),
        model,
        session_dir: Some(session_dir.display().to_string()),
        extra: driver_fields(),
    }));
    for warning in warnings {
        run.note(NoteKind::Warning, &warning, None);
    }
    let mut attached = Attached::check(
        &mut run,
        client,
        SessionDir::new(&session_dir),
        &config.package,
        std::mem::take(&mut config.integrations),
        &config.unavailable,
    );
    // Before the app is launched: the recording shows the launch, the capture its first
    // connections.
    attached.start(&mut run);
    let mut driver = Driver {
        attached: Some(attached),
        config: &config,
        device,
        explorer,
        stage,
        capture_cmd,
        decide_cmd,
        act_cmd,
        stuck: Stuck::default(),
        context: ContextLoss::default(),
        anr: AnrDialog::default(),
        permission: PermissionDialog::default(),
        since_launch: Vec::new(),
        last_screenshot: None,
        capture_failures: 0,
        model_stuck: policy::ModelStuck::default(),
    };
    run.set_state(State::Initializing, None);
    let (status, reason) = match driver.start() {
        Err(error) => ("ERROR", run.failed(&error)),
        Ok(()) => {
            run.set_state(State::Running, None);
            driver.run(&mut run)
        }
    };
    let reports: Vec<PathBuf> = config
        .reports
        .iter()
        .map(|format| session_dir.join(format!("report.{}", format.extension())))
        .collect();
    let final_state = match status {
        "ERROR" => State::Error,
        _ => State::Stopped,
    };
    if let Some(attached) = driver.attached.take() {
        attached.finish(&mut run);
    }
    if run.state != final_state {
        run.set_state(final_state, Some(&reason));
    }
    run.emit(Event::RunEnded(RunEnded {
        run_id: run_id.clone(),
        ts: Some(now_ts()),
        status: status.to_string(),
        reason: Some(reason.clone()),
        steps: Some(run.step),
        session_dir: Some(session_dir.display().to_string()),
        reports: reports.iter().map(|p| p.display().to_string()).collect(),
        extra: Default::default(),
    }));
    let steps = run.step;
    if let Err(error) = run.finish() {
        let message = format!("recording the run: {}", crate::filter::Chain(&error));
        run.say(Level::Error, &message);
    }
    drop(driver);
    if let (Some(options), "COMPLETED") = (minimise, status) {
        let minimise = crate::repro::MinimiseConfig {
            db: config.db.clone(),
            out_dir: config.out_dir.clone(),
            act: config.act.clone(),
            controls: Some(config.controls.clone()),
            only: None,
            ..options.config()
        };
        if let Err(error) = crate::repro::minimise_run(adb, &run_id, &minimise, run.listener()) {
            let message = format!("minimising: {}", crate::filter::Chain(&error));
            run.say(Level::Error, &message);
        }
    }
    let reports = match write_reports(&config, &run_id, &session_dir) {
        Ok(written) => written,
        Err(error) => {
            run.say(
                Level::Error,
                &format!("writing the reports: {}", crate::filter::Chain(&error)),
            );
            Vec::new()
        }
    };
    Ok(Summary {
        run_id,
        session_dir,
        status: status.to_string(),
        reason,
        steps,
        reports,
    })
}

fn write_reports(
    config: &Config,
    run_id: &str,
    session_dir: &Path,
) -> Result<Vec<PathBuf>, report::Error> {
    if config.reports.is_empty() {
        return Ok(Vec::new());
    }
    let store = Store::open(&config.db).map_err(report::Error::from)?;
    report::write_files(&store, run_id, session_dir, &config.reports)
}

/// `run_started`'s `driver`: which process drives the run, so a later crawl can tell a run
/// whose driver died from a live one.
pub(crate) fn driver_fields() -> crate::events::Extra {
    let mut extra = crate::events::Extra::new();
    extra.insert(
        "driver".into(),
        json!({"name": DRIVER, "pid": std::process::id(), "host": crate::store::host_name()}),
    );
    extra
}
