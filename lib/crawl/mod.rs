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
mod policy;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::act;
use crate::capture::device::DeviceOptions;
use crate::crash::ReproStep;
use crate::decide::{self, Stop};
use crate::device::{AdbDevice, Device, DeviceError};
use crate::events::{
    now_ts, Action, ActionResult, ActionType, Decision, Event, Limits, Note, NoteKind, Observation,
    RunEnded, RunStarted,
};
use crate::explore::{ExploreError, Explorer};
use crate::integrations::{Integration, SessionDir, Unavailable};
use crate::report;
use crate::screen::ScreenKey;
use crate::store::{self, Store};
use attached::Attached;
pub use attached::{analyse_past_run, past_run_apk, PastRunError, GOALS};
pub use control::{Command, Controls};
use coprocess::{Coprocess, CoprocessError};
use policy::{AnrDialog, ContextLoss, Stuck};

/// Who decides a recovery: written as `decider` on the driver's own decisions.
pub const DRIVER: &str = "droid-crawl";

/// Captures in a row that may fail (uiautomator's idle-state and null-root errors) before the
/// crawl ends with ERROR.
const CAPTURE_FAILURES: u32 = 3;

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
    /// Integrations asked for (video, traffic capture, MobSF); the declared activities are
    /// read in every crawl.
    pub integrations: Vec<Box<dyn Integration>>,
    /// Integrations asked for that cannot be set up (a key missing): warnings at the start.
    pub unavailable: Vec<Unavailable>,
}

/// Whether a decider needs screenshots (a model in vision mode): the default of
/// [`Config::stop_on_secure`].
pub fn needs_screenshots(decide: &decide::Config) -> bool {
    matches!(decide.decider, decide::Decider::Model(_)) && !decide.prompt.text_only
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
    pub paused: bool,
}

/// Who watches a crawl: every event of the run as it is recorded, messages for people, and
/// progress.
pub trait Listener {
    fn event(&mut self, event: &Event);
    fn say(&mut self, level: Level, message: &str);
    fn progress(&mut self, _progress: &Progress) {}
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
    mut config: Config,
    device: &AdbDevice,
    listener: &mut dyn Listener,
) -> Result<Summary, CrawlError> {
    let client = device.client();
    let device: &dyn Device = device;
    let (blocking, warnings) = validate(&config, device);
    if !blocking.is_empty() {
        return Err(CrawlError::Invalid(blocking));
    }
    config.decide.prompt.package = Some(config.package.clone());
    config.decide.prompt.allowed_packages = config.allowed_packages.clone();
    let decider_name = config.decide.decider.name().to_string();
    let model = match &config.decide.decider {
        decide::Decider::Model(provider) => Some(provider.model.clone()),
        _ => None,
    };
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
    let run_id = new_run_id();
    let session_dir = session_dir(&config.out_dir, device.serial(), &config.package);
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

    let mut run = Run {
        recorder: Recorder::start(&config.db),
        log: std::fs::File::create(session_dir.join("logs").join("crawler.log")).ok(),
        events_file: std::fs::File::create(session_dir.join("events.jsonl")).ok(),
        listener,
        run_id: run_id.clone(),
        state: State::Uninitialized,
        started: Instant::now(),
        step: 0,
        screens: std::collections::HashSet::new(),
        crashes: 0,
        model_calls: 0,
        max_steps: config.max_steps,
    };
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
        since_launch: Vec::new(),
        last_screenshot: None,
        capture_failures: 0,
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
fn driver_fields() -> crate::events::Extra {
    let mut extra = crate::events::Extra::new();
    extra.insert(
        "driver".into(),
        json!({"name": DRIVER, "pid": std::process::id(), "host": crate::store::host_name()}),
    );
    extra
}

/// `run-20261125T181502-3fa9c1`: sortable by time, unique enough for one machine.
fn new_run_id() -> String {
    format!(
        "run-{}-{:06x}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S"),
        rand::random::<u32>() & 0xff_ffff
    )
}

/// `OUT/{device}_{package}_{DDMM_HHMM}` (a `_2`, `_3`... when that folder exists), with the
/// device's serial made a safe file name (`192.168.1.5:5555` becomes `192.168.1.5_5555`).
fn session_dir(out: &Path, serial: &str, package: &str) -> PathBuf {
    let safe = |text: &str| -> String {
        text.chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    true => c,
                    false => '_',
                },
            )
            .collect()
    };
    let stamp = chrono::Local::now().format("%d%m_%H%M");
    let base = format!("{}_{}_{stamp}", safe(serial), safe(package));
    let mut dir = out.join(&base);
    let mut n = 2;
    while dir.exists() {
        dir = out.join(format!("{base}_{n}"));
        n += 1;
    }
    dir
}

/// What a crawl in progress keeps about its run: where events go and what was counted.
struct Run<'l> {
    recorder: Recorder,
    log: Option<std::fs::File>,
    events_file: Option<std::fs::File>,
    listener: &'l mut dyn Listener,
    run_id: String,
    state: State,
    started: Instant,
    step: u64,
    screens: std::collections::HashSet<ScreenKey>,
    crashes: u64,
    model_calls: u64,
    max_steps: u64,
}

impl Run<'_> {
    /// Records an event, writes it to events.jsonl and hands it to the listener.
    fn emit(&mut self, event: Event) {
        if let Some(file) = &mut self.events_file {
            let _ = writeln!(file, "{}", event.to_line());
        }
        self.log_line(Level::Debug, &describe_event(&event));
        self.listener.event(&event);
        self.recorder.record(event);
    }

    fn note(&mut self, kind: NoteKind, message: &str, data: Option<Value>) {
        let note = Note {
            run_id: Some(self.run_id.clone()),
            step: (self.step > 0).then_some(self.step),
            ts: Some(now_ts()),
            kind,
            message: Some(message.to_string()),
            data,
            ..Note::default()
        };
        self.emit(Event::Note(note));
    }

    fn say(&mut self, level: Level, message: &str) {
        self.log_line(level, message);
        self.listener.say(level, message);
    }

    fn log_line(&mut self, level: Level, message: &str) {
        if let Some(log) = &mut self.log {
            let _ = writeln!(log, "{} {level:?} {message}", now_ts());
        }
    }

    fn set_state(&mut self, state: State, why: Option<&str>) {
        let previous = self.state;
        self.state = state;
        let message = match why {
            Some(why) => format!("{} → {}: {why}", previous.as_str(), state.as_str()),
            None => format!("{} → {}", previous.as_str(), state.as_str()),
        };
        self.note(
            NoteKind::State,
            &message,
            Some(json!({"state": state.as_str(), "previous": previous.as_str()})),
        );
        self.say(Level::Info, &message);
        self.progress();
    }

    /// The run ends with ERROR: the note saying why, and the reason for `run_ended`.
    fn failed(&mut self, error: &(dyn std::error::Error + 'static)) -> String {
        let reason = crate::filter::Chain(error).to_string();
        self.note(NoteKind::Error, &reason, None);
        self.say(Level::Error, &reason);
        self.set_state(State::Error, Some(&reason));
        reason
    }

    fn progress(&mut self) {
        let progress = Progress {
            step: self.step,
            max_steps: self.max_steps,
            unique_screens: self.screens.len(),
            crashes: self.crashes,
            elapsed: self.started.elapsed(),
            model_calls: self.model_calls,
            paused: self.state == State::PausedManual,
        };
        self.listener.progress(&progress);
    }

    /// Everything is recorded: the recorder's thread finishes.
    fn finish(&mut self) -> Result<store::IngestStats, store::Error> {
        self.recorder.finish()
    }
}

/// For crawler.log: one line per event.
fn describe_event(event: &Event) -> String {
    match event {
        Event::Observation(o) => format!(
            "observation step {}: {} {}",
            o.step.unwrap_or(0),
            o.package.as_deref().unwrap_or("?"),
            o.activity.as_deref().unwrap_or("")
        ),
        Event::Decision(d) => {
            let actions: Vec<String> = d
                .actions
                .iter()
                .map(|a| {
                    a.action_desc
                        .clone()
                        .unwrap_or_else(|| a.action.to_string())
                })
                .collect();
            format!(
                "decision step {} by {}: {}",
                d.step.unwrap_or(0),
                d.decider.as_deref().unwrap_or("?"),
                actions.join(", ")
            )
        }
        Event::Result(r) => format!(
            "result step {} #{}: {} {}{}",
            r.step.unwrap_or(0),
            r.index,
            r.action_type,
            if r.success { "ok" } else { "failed" },
            r.error_message
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        ),
        Event::Note(n) => format!(
            "note {}: {}",
            n.kind,
            n.message.as_deref().unwrap_or_default()
        ),
        Event::RunStarted(r) => format!("run {} started", r.run_id),
        Event::RunEnded(r) => format!("run {} ended: {}", r.run_id, r.status),
    }
}

/// Records events into crawler.db on a thread of its own: one transaction per step, off the
/// step's critical path.
struct Recorder {
    sender: Option<Sender<Option<Event>>>,
    thread: Option<JoinHandle<Result<store::IngestStats, store::Error>>>,
}

impl Recorder {
    fn start(db: &Path) -> Recorder {
        let (sender, events) = mpsc::channel::<Option<Event>>();
        let db = db.to_path_buf();
        let thread = std::thread::spawn(move || {
            let store = Store::open(&db)?;
            let mut ingest = store.ingest();
            for event in events {
                match event {
                    Some(event) => {
                        ingest.push_event(event)?;
                    }
                    // A step ended: what is complete is committed now.
                    None => ingest.commit()?,
                }
            }
            ingest.finish()
        });
        Recorder {
            sender: Some(sender),
            thread: Some(thread),
        }
    }

    fn record(&mut self, event: Event) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(Some(event));
        }
    }

    fn commit(&mut self) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(None);
        }
    }

    fn finish(&mut self) -> Result<store::IngestStats, store::Error> {
        drop(self.sender.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Ok(store::IngestStats::default()),
        }
    }
}

/// The driver's memory across steps.
struct Driver<'c, 'd> {
    config: &'c Config,
    device: &'d dyn Device,
    attached: Option<Attached<'d>>,
    explorer: Explorer<'d>,
    stage: Option<decide::Stage>,
    capture_cmd: Option<Coprocess>,
    decide_cmd: Option<Coprocess>,
    act_cmd: Option<Coprocess>,
    stuck: Stuck,
    context: ContextLoss,
    anr: AnrDialog,
    /// The actions since the app was last launched: a crash's steps to reproduce.
    since_launch: Vec<ReproStep>,
    /// The screenshot of the last step: where a crash found at the next happened.
    last_screenshot: Option<String>,
    capture_failures: u32,
}

/// How a step left the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepEnd {
    Next,
    /// The decider said its task is done.
    TaskDone,
    /// The heuristic explored everything it found (see `Heuristic::explored`).
    Explored,
}

/// Why a step could not go on.
#[derive(Debug, thiserror::Error)]
enum StepError {
    #[error(transparent)]
    Explore(#[from] ExploreError),
    #[error(transparent)]
    Coprocess(#[from] CoprocessError),
    #[error("the decider stopped")]
    Decide(#[source] decide::Error),
    #[error("the screen is secure (a black screenshot, FLAG_SECURE): droid needs screenshots to explore")]
    Secure,
    #[error("the device")]
    Device(#[source] DeviceError),
}

impl Driver<'_, '_> {
    /// The app from its first state, and an empty crash buffer.
    fn start(&mut self) -> Result<(), StepError> {
        let package = &self.config.package;
        let device = self.device;
        device.crash_log(true).map_err(StepError::Device)?;
        let _ = device.system_log(true);
        device.force_stop(package).map_err(StepError::Device)?;
        device.launch(package).map_err(StepError::Device)?;
        Ok(())
    }

    /// Steps until a limit, a stop or an error: the status and reason of `run_ended`.
    fn run(&mut self, run: &mut Run) -> (&'static str, String) {
        loop {
            if let Some(end) = self.between_steps(run) {
                return end;
            }
            run.step += 1;
            match self.step(run) {
                Ok(StepEnd::Next) => {}
                Ok(StepEnd::TaskDone) => {
                    run.set_state(State::Stopping, Some("the task is done"));
                    return ("COMPLETED", "task_done".into());
                }
                Ok(StepEnd::Explored) => {
                    run.set_state(
                        State::Stopping,
                        Some("everything the exploration found is explored"),
                    );
                    return ("COMPLETED", "explored".into());
                }
                Err(StepError::Explore(ExploreError::Capture { source, .. }))
                    if policy::is_dump_failure(&source)
                        && self.capture_failures < CAPTURE_FAILURES =>
                {
                    self.capture_failures += 1;
                    let message = crate::filter::Chain(&source).to_string();
                    run.note(
                        NoteKind::UiautomatorCrash,
                        &message,
                        Some(json!({"attempt": self.capture_failures})),
                    );
                    run.step -= 1;
                }
                Err(error) => return ("ERROR", run.failed(&error)),
            }
            if let Some(attached) = &mut self.attached {
                attached.tick(run);
            }
            run.recorder.commit();
            run.progress();
        }
    }

    /// Control, limits: `Some` when the crawl ends here.
    fn between_steps(&mut self, run: &mut Run) -> Option<(&'static str, String)> {
        let mut paused = false;
        loop {
            match self.config.controls.take() {
                Some(Command::Stop) => {
                    run.set_state(State::Stopping, Some("stop requested"));
                    return Some(("INTERRUPTED", "stopped".into()));
                }
                Some(Command::Pause) if !paused => {
                    paused = true;
                    run.set_state(State::PausedManual, Some("pause requested"));
                }
                Some(Command::Resume) if paused => {
                    paused = false;
                    run.set_state(State::Running, Some("resume requested"));
                }
                _ => {}
            }
            if !paused {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if run.step >= self.config.max_steps {
            run.set_state(State::Stopping, Some("max steps reached"));
            return Some(("COMPLETED", "max_steps".into()));
        }
        if run.started.elapsed() >= self.config.max_duration {
            run.set_state(State::Stopping, Some("max duration reached"));
            return Some(("COMPLETED", "max_duration".into()));
        }
        None
    }

    /// One step, and whether the run goes on.
    fn step(&mut self, run: &mut Run) -> Result<StepEnd, StepError> {
        let step = run.step;
        let mut observation = self.observe(run, step)?;
        self.capture_failures = 0;
        if let Some(attached) = &mut self.attached {
            attached.observed(&mut observation);
        }
        if observation.flags.secure && self.config.stop_on_secure {
            run.emit(Event::Observation(Box::new(observation)));
            return Err(StepError::Secure);
        }
        if observation.flags.secure {
            run.note(
                NoteKind::Warning,
                "a secure screen (FLAG_SECURE: the screenshot is black); deciding from the \
                 hierarchy",
                None,
            );
        }
        // The hash stage wrote the screen's key: asked, not built again.
        let key = observation
            .hash
            .as_ref()
            .and_then(|hash| hash.screen_key.as_deref())
            .map_or_else(|| ScreenKey::of(&observation), ScreenKey::from_stored);
        run.screens.insert(key.clone());
        if let Some(stuck) = self.stuck.observe(&key, step) {
            observation
                .extra
                .insert("is_stuck".into(), Value::Bool(true));
            observation
                .extra
                .insert("stuck_reason".into(), Value::from(stuck.reason.clone()));
            if stuck.detected {
                run.emit(Event::Observation(Box::new(observation.clone())));
                run.note(
                    NoteKind::Stuck,
                    &stuck.reason,
                    Some(json!({"screen": key.as_str()})),
                );
            } else {
                run.emit(Event::Observation(Box::new(observation.clone())));
            }
        } else {
            if let Some(escaped) = self.stuck.take_recovery() {
                run.note(
                    NoteKind::Stuck,
                    "the exploration left the screen it was stuck on",
                    Some(json!({"recovered": true, "detected_at": escaped})),
                );
            }
            run.emit(Event::Observation(Box::new(observation.clone())));
        }

        let decision = match self.recovery(run, &observation)? {
            Some(decision) => {
                if let Some(stage) = &mut self.stage {
                    stage.learn_decided(&observation, &decision);
                }
                run.emit(Event::Decision(decision.clone()));
                decision
            }
            None => match self.decide(run, &observation)? {
                Some(decision) => decision,
                None => return Ok(StepEnd::Next),
            },
        };
        if decision.ai.is_some() {
            run.model_calls += 1;
        }
        let results = self.act(&decision, &observation)?;
        let navigated = results.iter().any(|r| r.navigated_away);
        self.stuck.acted(navigated);
        for result in &results {
            if let Some(stage) = &mut self.stage {
                stage.learn(&Event::Result(result.clone()));
            }
            if result.success {
                self.since_launch.push(ReproStep {
                    step,
                    action: decision
                        .actions
                        .get(result.index as usize)
                        .and_then(|a| a.action_desc.clone())
                        .unwrap_or_else(|| result.action_type.to_string()),
                    screen: key.as_str().to_string(),
                });
            }
            run.emit(Event::Result(result.clone()));
        }
        if decision.relaunch.is_some() {
            self.since_launch.clear();
        }
        self.last_screenshot = observation.screenshot_path.clone();
        let explored = self.stage.as_ref().is_some_and(decide::Stage::explored);
        Ok(match (decision.done, explored) {
            (true, _) => StepEnd::TaskDone,
            (false, true) => StepEnd::Explored,
            (false, false) => StepEnd::Next,
        })
    }

    /// The screen now, from the device or the capture co-process.
    fn observe(&mut self, run: &Run, step: u64) -> Result<Observation, StepError> {
        let Some(capture) = &mut self.capture_cmd else {
            return Ok(self.explorer.observe(step)?);
        };
        let ask = Event::Note(Note {
            run_id: Some(run.run_id.clone()),
            step: Some(step),
            ts: Some(now_ts()),
            kind: NoteKind::parse("capture"),
            ..Note::default()
        });
        let read = capture.exchange(&[ask], "observation", |e| {
            matches!(e, Event::Observation(_))
        })?;
        let mut observation = read
            .into_iter()
            .find_map(|event| match event {
                Event::Observation(o) => Some(*o),
                _ => None,
            })
            .unwrap_or_default();
        observation.run_id = Some(run.run_id.clone());
        observation.step = Some(step);
        crate::hash::enrich(&mut observation);
        Ok(observation)
    }

    /// What the decider (or its co-process) decides; the notes it writes go into the run.
    fn decide(
        &mut self,
        run: &mut Run,
        observation: &Observation,
    ) -> Result<Option<Decision>, StepError> {
        let events = match (&mut self.decide_cmd, &mut self.stage) {
            (Some(command), _) => {
                let input = Event::Observation(Box::new(observation.clone()));
                command.exchange(&[input], "decision", |e| matches!(e, Event::Decision(_)))?
            }
            (None, Some(stage)) => match stage.decide(observation) {
                Ok(events) => events,
                Err(Stop { events, error }) => {
                    for event in events {
                        run.emit(event);
                    }
                    return Err(StepError::Decide(error));
                }
            },
            (None, None) => Vec::new(),
        };
        let mut decision = None;
        for event in events {
            match event {
                Event::Decision(mut d) => {
                    d.run_id = Some(run.run_id.clone());
                    d.step = observation.step;
                    decision = Some(d.clone());
                    run.emit(Event::Decision(d));
                }
                Event::Note(note) => {
                    if matches!(note.kind, NoteKind::Warning | NoteKind::InvalidResponse) {
                        run.say(Level::Warn, note.message.as_deref().unwrap_or_default());
                    }
                    run.emit(Event::Note(note));
                }
                other => run.emit(other),
            }
        }
        Ok(decision)
    }

    /// The decision's actions, on the device or through the act co-process.
    fn act(
        &mut self,
        decision: &Decision,
        observation: &Observation,
    ) -> Result<Vec<ActionResult>, StepError> {
        let Some(command) = &mut self.act_cmd else {
            return Ok(self.explorer.act(decision, observation));
        };
        let expected = decision.actions.len() + usize::from(decision.relaunch.is_some());
        let mut seen = 0;
        let input = [
            Event::Observation(Box::new(observation.clone())),
            Event::Decision(decision.clone()),
        ];
        let read = command.exchange(&input, "results", |e| {
            seen += usize::from(matches!(e, Event::Result(_)));
            seen >= expected
        })?;
        Ok(read
            .into_iter()
            .filter_map(|event| match event {
                Event::Result(result) => Some(result),
                _ => None,
            })
            .collect())
    }

    /// The driver's own decision for this screen, when a policy has one: a crash or context
    /// loss to recover from, an ANR dialog to answer. Crash and ANR notes are written here.
    fn recovery(
        &mut self,
        run: &mut Run,
        observation: &Observation,
    ) -> Result<Option<Decision>, StepError> {
        let package = observation.package.as_deref().unwrap_or_default();
        let ours = package == self.config.package;
        let allowed = self.config.allowed_packages.iter().any(|p| p == package);
        if let Some(button) = self.anr.button(observation) {
            let trace = self.device.system_log(true).unwrap_or_default();
            let note = policy::anr_note(
                &self.config.package,
                observation,
                &trace,
                &self.since_launch,
            );
            run.emit(Event::Note(Note {
                run_id: Some(run.run_id.clone()),
                step: observation.step,
                ..note
            }));
            let action = crate::screen::action_on(
                &observation.elements,
                button,
                ActionType::Click,
                "the app is not responding",
            );
            return Ok(Some(self.driver_decision(
                run,
                observation,
                vec![action],
                None,
            )));
        }
        if ours || allowed {
            if let Some(loss) = self.context.back_in_app() {
                let detected_at = run.step.saturating_sub(u64::from(loss));
                run.note(
                    NoteKind::ContextLoss,
                    "back in the app",
                    Some(json!({"recovered": true, "steps": loss, "detected_at": detected_at})),
                );
            }
            return Ok(None);
        }
        // Another app is in front: did ours crash?
        let crashes: Vec<_> =
            crate::crash::parse_crashes(&self.device.crash_log(true).map_err(StepError::Device)?)
                .into_iter()
                .filter(|crash| crash.package == self.config.package)
                .collect();
        if !crashes.is_empty() {
            for mut crash in crashes {
                crash.repro_steps = self.since_launch.clone();
                crash.screenshot_path = self.last_screenshot.clone();
                crash.recovered = true;
                run.crashes += 1;
                let message = format!("{}: {}", crash.exception, crash.exception_message);
                run.say(Level::Warn, &format!("crash: {message}"));
                run.emit(Event::Note(Note {
                    run_id: Some(run.run_id.clone()),
                    step: observation
                        .step
                        .map(|s| s.saturating_sub(1))
                        .filter(|&s| s > 0),
                    ts: Some(now_ts()),
                    kind: NoteKind::Crash,
                    message: Some(message),
                    data: serde_json::to_value(&crash).ok(),
                    ..Note::default()
                }));
            }
            self.context.reset();
            run.note(
                NoteKind::Relaunch,
                &format!("relaunch {} after a crash", self.config.package),
                Some(json!({"package": self.config.package, "recovered": true})),
            );
            let decision = self.relaunch_decision(run, observation, "the app crashed");
            return Ok(Some(decision));
        }
        let times = self.context.lost(package);
        // The loss's later steps name the step it began at: one loss, counted once.
        let mut data = json!({"package": package, "times": times});
        if times > 1 {
            data["detected_at"] = json!(run.step.saturating_sub(u64::from(times - 1)));
        }
        run.note(
            NoteKind::ContextLoss,
            &format!("{package} is in front, not {}", self.config.package),
            Some(data),
        );
        if times >= policy::BACKS_BEFORE_RELAUNCH {
            run.note(
                NoteKind::Relaunch,
                &format!(
                    "relaunch {} after {times} steps outside it",
                    self.config.package
                ),
                Some(json!({"package": self.config.package})),
            );
            return Ok(Some(self.relaunch_decision(
                run,
                observation,
                "outside the app",
            )));
        }
        let mut back = Action::new(ActionType::Back);
        back.action_desc = Some("press back".into());
        back.reasoning = Some(format!("{package} is outside the app under test"));
        Ok(Some(self.driver_decision(
            run,
            observation,
            vec![back],
            None,
        )))
    }

    fn relaunch_decision(&mut self, run: &Run, observation: &Observation, why: &str) -> Decision {
        let mut home = Action::new(ActionType::Home);
        home.action_desc = Some(format!("relaunch {}", self.config.package));
        home.reasoning = Some(why.to_string());
        self.since_launch.clear();
        self.driver_decision(
            run,
            observation,
            vec![home],
            Some(self.config.package.clone()),
        )
    }

    fn driver_decision(
        &self,
        run: &Run,
        observation: &Observation,
        actions: Vec<Action>,
        relaunch: Option<String>,
    ) -> Decision {
        Decision {
            run_id: Some(run.run_id.clone()),
            step: observation.step,
            ts: Some(now_ts()),
            decider: Some(DRIVER.into()),
            relaunch,
            ..Decision::new(actions)
        }
    }
}
