//! Replaying recorded steps on a device, from a fresh launch, as a run of its own.
//!
//! The app is force-stopped (its data cleared first with `clear_data`), the crash buffer and
//! the system log emptied, and the app launched. Then for each step: the screen is captured,
//! the crash buffer read (a FATAL EXCEPTION of the app is a `crash` note) and the system's
//! "isn't responding" dialog looked for (an `anr` note); the step's target is found again in
//! the new dump (by signature, resource id, text or content description) and the action taken
//! on it. After the last step the screen is captured once more, for what the last action did.
//!
//! Two ways to follow a recording:
//!
//! - [`Mode::Follow`] (`droid-crawl replay`): before each step the screen key must be the one
//!   recorded; the first screen that is not is a *divergence* (a `divergence` note naming the
//!   step, the screen expected and the one seen) and the replay stops. A target that is not on
//!   the screen is acted on at its recorded point.
//! - [`Mode::Probe`] (minimisation): the screens may differ (steps were left out); a step whose
//!   target is not on the screen cannot be carried out, and the replay stops there (ddmin's
//!   *unresolved*).
//!
//! Every replay is a run in crawler.db: `run_started` says `kind: "replay"` and what it
//! replays (`replay.of`, `replay.purpose`, the failure it watches for), its steps are
//! observations, decisions (`decider: "replay"`) and results (`origin: "replay"`) like a
//! crawl's, and a `replay` note sums it up before `run_ended` (reason `reproduced`,
//! `not_reproduced`, `replayed` or `diverged`).

use std::path::PathBuf;

use serde_json::{json, Value};

use super::script::{FailureId, FailureKind, Script, Step, StepKind};
use crate::act;
use crate::capture::device::DeviceOptions;
use crate::crash::{CrashData, ReproStep};
use crate::crawl::control::Controls;
use crate::crawl::policy;
use crate::crawl::run::Run;
use crate::crawl::{Level, Listener};
use crate::device::{AdbDevice, Device, DeviceError};
use crate::events::{
    now_ts, Action, ActionType, BoundingBox, Decision, ErrorKind, Event, NoteKind, Observation,
    Origin, RunEnded, RunStarted,
};
use crate::explore::{ExploreError, Explorer};
use crate::screen::{ScreenKey, ScreenModel};
use crate::ui::UiElement;

/// Who decides a replay's steps: written as `decider` on its run and its decisions.
pub const REPLAYER: &str = "replay";
/// `run_started`'s `kind` for a replay.
pub const KIND: &str = "replay";
/// The note kinds a replay writes besides `crash` and `anr`.
pub const DIVERGENCE_NOTE: &str = "divergence";
pub const REPLAY_NOTE: &str = "replay";

/// Captures in a row that may fail in uiautomator before the replay ends with ERROR.
const CAPTURE_ATTEMPTS: u32 = 3;

/// How a replay follows its recording (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Follow,
    Probe,
}

/// Why a replay is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Asked for (`droid-crawl replay`).
    Replay,
    /// A test of ddmin's.
    Minimise,
    /// One of the replays that verify a minimal path.
    Verify,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Replay => "replay",
            Purpose::Minimise => "minimise",
            Purpose::Verify => "verify",
        }
    }
}

/// What a replay does.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    pub package: String,
    /// `pm clear` the app before launching it.
    pub clear_data: bool,
    pub mode: Mode,
    /// The failure to watch for: the replay stops when it comes.
    pub expect: Option<FailureId>,
    pub screenshots: bool,
    pub act: act::Config,
    pub db: PathBuf,
    /// The replay's session folder (created; it must not hold another run's files).
    pub session_dir: PathBuf,
    /// The run replayed.
    pub replay_of: Option<String>,
    pub purpose: Purpose,
    /// Stops the replay between steps when set.
    pub controls: Option<Controls>,
}

/// Where a replay left its recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DivergenceKind {
    /// The screen before the step is not the one recorded.
    Screen,
    /// The step's target is not on the screen (or acting on it failed).
    Target,
}

impl DivergenceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DivergenceKind::Screen => "screen",
            DivergenceKind::Target => "target",
        }
    }
}

/// Where and how a replay diverged.
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    /// Position of the step among those replayed, from 0.
    pub at: usize,
    /// The recorded step.
    pub recorded_step: u64,
    pub kind: DivergenceKind,
    /// The recorded screen key (for a missing target: the target).
    pub expected: String,
    /// The screen key seen.
    pub seen: String,
    /// The step, for people.
    pub action: String,
}

impl Divergence {
    /// `step 4 (recorded 17, click Button "Settings"): expected screen A, saw B`.
    pub fn describe(&self) -> String {
        let what = match self.kind {
            DivergenceKind::Screen => "expected screen",
            DivergenceKind::Target => "nothing to act on: wanted",
        };
        format!(
            "step {} (recorded step {}, {}): {what} {}, saw {}",
            self.at + 1,
            self.recorded_step,
            self.action,
            self.expected,
            self.seen
        )
    }
}

/// A crash or an ANR met during a replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Met {
    pub id: FailureId,
    pub title: String,
    /// After how many of the replay's steps.
    pub after: usize,
}

/// How a replay went.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub run_id: String,
    pub session_dir: PathBuf,
    /// `COMPLETED`, `INTERRUPTED` or `ERROR`.
    pub status: &'static str,
    /// `reproduced`, `not_reproduced`, `replayed`, `diverged`, `stopped`, or what went wrong.
    pub reason: String,
    /// Steps given, and carried out.
    pub steps: usize,
    pub acted: usize,
    /// The expected failure came after this many steps (carried out or passed over).
    pub reproduced: Option<usize>,
    /// The positions (among the steps given) of the steps carried out, in order.
    pub taken: Vec<usize>,
    /// Probing: the steps passed over for want of a target.
    pub skipped: Vec<Divergence>,
    pub met: Vec<Met>,
    pub divergence: Option<Divergence>,
}

impl Replayed {
    /// Whether the replay went as its recording did: to its end without diverging, and to the
    /// failure it watched for, when it watched for one.
    pub fn followed(&self) -> bool {
        self.status == "COMPLETED" && matches!(self.reason.as_str(), "reproduced" | "replayed")
    }

    /// One line for people: the run, how far it got, and where it diverged.
    pub fn summary(&self) -> String {
        format!("replay {}: {}", self.run_id, summary_message(self))
    }
}

/// Why a replay could not start (no run was recorded).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    #[error("cannot create the session folder {}", .path.display())]
    Session {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the device")]
    Device(#[source] DeviceError),
}

/// Why a replay stopped inside its loop.
enum Stop {
    Device(String),
    Interrupted,
}

/// Replays `picks` (indices into `script.steps`, in order) on `device`: a run recorded into
/// crawler.db, its events also handed to `listener`.
pub fn replay(
    device: &AdbDevice,
    script: &Script,
    picks: &[usize],
    config: &ReplayConfig,
    listener: &mut dyn Listener,
) -> Result<Replayed, ReplayError> {
    let dyn_device: &dyn Device = device;
    let info = dyn_device.info().map_err(ReplayError::Device)?;
    let run_id = crate::events::new_run_id();
    let session = &config.session_dir;
    crate::session::create_session_dir(session, &run_id).map_err(|source| {
        ReplayError::Session {
            path: session.clone(),
            source,
        }
    })?;
    for folder in ["screenshots", "logs"] {
        let path = session.join(folder);
        std::fs::create_dir_all(&path).map_err(|source| ReplayError::Session { path, source })?;
    }
    let explorer = Explorer::new(
        dyn_device,
        DeviceOptions {
            out_dir: session.join("screenshots"),
            screenshot: config.screenshots,
            concurrent: true,
            run_id: Some(run_id.clone()),
            step: None,
            step_names: true,
        },
        config.act.clone(),
    )
    .map_err(ReplayError::Device)?;
    let mut run = Run::new(&config.db, session, listener, &run_id, picks.len() as u64);
    run.emit(Event::RunStarted(RunStarted {
        run_id: run_id.clone(),
        ts: Some(now_ts()),
        device: Some(dyn_device.serial().to_string()),
        device_info: Some(info),
        package: Some(config.package.clone()),
        app_version: dyn_device
            .app_version(&config.package)
            .ok()
            .flatten()
            .and_then(|v| v.name),
        limits: None,
        decider: Some(REPLAYER.into()),
        model: None,
        session_dir: Some(session.display().to_string()),
        extra: started_fields(config, picks.len()),
    }));
    let mut replaying = Replaying {
        device,
        explorer,
        script,
        config,
        replayed: Replayed {
            run_id: run_id.clone(),
            session_dir: session.clone(),
            status: "COMPLETED",
            reason: String::new(),
            steps: picks.len(),
            acted: 0,
            reproduced: None,
            taken: Vec::new(),
            skipped: Vec::new(),
            met: Vec::new(),
            divergence: None,
        },
        repro: Vec::new(),
        last_screenshot: None,
        anr_shown: false,
    };
    let ended = replaying
        .fresh_launch()
        .and_then(|()| replaying.steps(&mut run, picks));
    let mut replayed = replaying.replayed;
    match ended {
        Ok(()) => {
            replayed.reason = match (&replayed.divergence, replayed.reproduced, &config.expect) {
                (_, Some(_), _) => "reproduced",
                (Some(_), None, _) => "diverged",
                (None, None, Some(_)) => "not_reproduced",
                (None, None, None) => "replayed",
            }
            .into();
        }
        Err(Stop::Interrupted) => {
            replayed.status = "INTERRUPTED";
            replayed.reason = "stopped".into();
        }
        Err(Stop::Device(reason)) => {
            run.note(NoteKind::Error, &reason, None);
            replayed.status = "ERROR";
            replayed.reason = reason;
        }
    }
    let summary = summary_data(&replayed, config);
    let message = summary_message(&replayed);
    run.say(Level::Debug, &message);
    run.note(NoteKind::parse(REPLAY_NOTE), &message, Some(summary));
    run.emit(Event::RunEnded(RunEnded {
        run_id: run_id.clone(),
        ts: Some(now_ts()),
        status: replayed.status.to_string(),
        reason: Some(replayed.reason.clone()),
        steps: Some(run.step),
        session_dir: Some(session.display().to_string()),
        reports: Vec::new(),
        extra: Default::default(),
    }));
    if let Err(error) = run.finish() {
        let message = format!(
            "recording replay {run_id}: {}",
            crate::filter::Chain(&error)
        );
        run.say(Level::Error, &message);
    }
    Ok(replayed)
}

/// `run_started`'s fields of a replay: its kind, what it replays, and its driver.
fn started_fields(config: &ReplayConfig, steps: usize) -> crate::events::Extra {
    let mut extra = crate::crawl::driver_fields();
    extra.insert("kind".into(), json!(KIND));
    let mut replay = json!({"purpose": config.purpose.as_str(), "steps": steps});
    if let Some(of) = &config.replay_of {
        replay["of"] = json!(of);
    }
    if let Some(expect) = &config.expect {
        replay["failure"] = json!({"kind": expect.kind.as_str(), "signature": expect.signature});
    }
    replay["mode"] = json!(match config.mode {
        Mode::Follow => "follow",
        Mode::Probe => "probe",
    });
    extra.insert("replay".into(), replay);
    extra
}

fn summary_data(replayed: &Replayed, config: &ReplayConfig) -> Value {
    let mut data = json!({
        "purpose": config.purpose.as_str(),
        "steps": replayed.steps,
        "acted": replayed.acted,
        "reproduced": replayed.reproduced.is_some(),
        "met": replayed.met.iter().map(|m| json!({
            "kind": m.id.kind.as_str(), "signature": m.id.signature, "title": m.title,
            "after": m.after,
        })).collect::<Vec<_>>(),
    });
    if let Some(of) = &config.replay_of {
        data["replay_of"] = json!(of);
    }
    if let Some(expect) = &config.expect {
        data["failure"] = json!({"kind": expect.kind.as_str(), "signature": expect.signature});
    }
    if let Some(after) = replayed.reproduced {
        data["reproduced_after"] = json!(after);
    }
    if let Some(divergence) = &replayed.divergence {
        data["divergence"] = divergence_data(divergence);
    }
    if !replayed.skipped.is_empty() {
        data["skipped"] = json!(replayed
            .skipped
            .iter()
            .map(|d| d.at + 1)
            .collect::<Vec<_>>());
    }
    data
}

fn divergence_data(divergence: &Divergence) -> Value {
    json!({
        "step": divergence.at + 1,
        "recorded_step": divergence.recorded_step,
        "kind": divergence.kind.as_str(),
        "expected": divergence.expected,
        "seen": divergence.seen,
        "action": divergence.action,
    })
}

fn summary_message(replayed: &Replayed) -> String {
    let done = format!("{} of {} steps replayed", replayed.acted, replayed.steps);
    match (&replayed.divergence, replayed.reproduced) {
        (_, Some(after)) => format!("{done}: reproduced after step {after}"),
        (Some(divergence), None) => format!("{done}: diverged at {}", divergence.describe()),
        (None, None) => format!("{done}: {}", replayed.reason),
    }
}

/// A replay in progress.
struct Replaying<'r, 'd> {
    device: &'d AdbDevice,
    explorer: Explorer<'d>,
    script: &'r Script,
    config: &'r ReplayConfig,
    replayed: Replayed,
    /// The steps replayed so far, as a crash's steps to reproduce.
    repro: Vec<ReproStep>,
    last_screenshot: Option<String>,
    /// The ANR dialog was on the last screen (one note per dialog).
    anr_shown: bool,
}

impl Replaying<'_, '_> {
    /// The app from its first state (its data cleared first when asked), with empty crash and
    /// system logs.
    fn fresh_launch(&mut self) -> Result<(), Stop> {
        let package = &self.config.package;
        let device: &dyn Device = self.device;
        let failed = |error: DeviceError| Stop::Device(crate::filter::Chain(&error).to_string());
        device.force_stop(package).map_err(failed)?;
        if self.config.clear_data {
            let output = self
                .device
                .client()
                .shell(&format!("pm clear {package}"))
                .map_err(|error| failed(DeviceError::from(error)))?;
            if !output.stdout_text().contains("Success") {
                let said = output.stdout_text().trim().to_string();
                return Err(Stop::Device(format!("pm clear {package}: {said}")));
            }
        }
        device.crash_log(true).map_err(failed)?;
        let _ = device.system_log(true);
        device.launch(package).map_err(failed)
    }

    /// Every step, each after a look at the screen, and a last look.
    fn steps(&mut self, run: &mut Run, picks: &[usize]) -> Result<(), Stop> {
        for (at, &pick) in picks.iter().chain([&usize::MAX]).enumerate() {
            if self
                .config
                .controls
                .as_ref()
                .is_some_and(Controls::stop_requested)
            {
                return Err(Stop::Interrupted);
            }
            run.step = at as u64 + 1;
            let (observation, model) = self.observe(run.step)?;
            let key = model.key().clone();
            run.emit_observed(observation.clone(), std::sync::Arc::new(model));
            self.look_for_failures(run, &observation, &key, at)?;
            if self.replayed.reproduced.is_some() {
                return Ok(());
            }
            let Some(step) = self.script.steps.get(pick) else {
                return Ok(());
            };
            if let Some(divergence) = self.diverged(step, &key, at) {
                self.diverge(run, divergence);
                return Ok(());
            }
            let decision = match self.decide(run, step, &observation, at) {
                Ok(decision) => decision,
                Err(divergence) => {
                    self.pass_over(run, divergence);
                    continue;
                }
            };
            run.emit(Event::Decision(decision.clone()));
            let results = self.explorer.act(&decision, &observation);
            let mut failed = None;
            for mut result in results {
                if result.origin.is_some() {
                    result.origin = Some(Origin::Replay);
                }
                if !result.success && failed.is_none() {
                    failed = Some((result.error_kind.clone(), result.error_message.clone()));
                }
                run.emit(Event::Result(result));
            }
            match failed {
                Some((Some(ErrorKind::Device), message)) => {
                    return Err(Stop::Device(message.unwrap_or_else(|| "the device".into())));
                }
                Some((_, message)) => {
                    let divergence = Divergence {
                        at,
                        recorded_step: step.step,
                        kind: DivergenceKind::Target,
                        expected: step.description.clone(),
                        seen: message.unwrap_or_else(|| "the action failed".into()),
                        action: step.description.clone(),
                    };
                    match self.config.mode {
                        Mode::Probe => {
                            self.pass_over(run, divergence);
                            continue;
                        }
                        Mode::Follow => {
                            self.diverge(run, divergence);
                            return Ok(());
                        }
                    }
                }
                None => {}
            }
            self.replayed.acted += 1;
            self.replayed.taken.push(at);
            self.repro.push(ReproStep {
                step: run.step,
                action: step.description.clone(),
                screen: key.as_str().to_string(),
            });
            self.last_screenshot = observation.screenshot_path.clone();
            run.commit();
        }
        Ok(())
    }

    /// The screen now, hashed; uiautomator's passing failures are tried again.
    fn observe(&mut self, step: u64) -> Result<(Observation, ScreenModel), Stop> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.explorer.observe(step) {
                Ok(observed) => return Ok(observed),
                Err(ExploreError::Capture { source, .. })
                    if policy::is_dump_failure(&source) && attempt < CAPTURE_ATTEMPTS => {}
                Err(error) => {
                    return Err(Stop::Device(crate::filter::Chain(&error).to_string()));
                }
            }
        }
    }

    /// Crashes in the crash buffer and the ANR dialog: noted, and the replay reproduced when
    /// one is the failure it watches for.
    fn look_for_failures(
        &mut self,
        run: &mut Run,
        observation: &Observation,
        key: &ScreenKey,
        after: usize,
    ) -> Result<(), Stop> {
        let package = self.config.package.clone();
        let device: &dyn Device = self.device;
        let log = device
            .crash_log(true)
            .map_err(|e| Stop::Device(crate::filter::Chain(&e).to_string()))?;
        let mut met = Vec::new();
        for mut crash in crate::crash::parse_crashes(&log)
            .into_iter()
            .filter(|c| c.package == package)
        {
            crash.repro_steps = self.repro.clone();
            crash.screenshot_path = self.last_screenshot.clone();
            crash.recovered = false;
            let title = crash_title(&crash);
            // The crash came with the last step's action.
            let step = (run.step > 1).then(|| run.step - 1);
            let note = crate::events::Note::at(&run.run_id, step, NoteKind::Crash, &title)
                .with_data(serde_json::to_value(&crash).ok());
            run.emit(Event::Note(note));
            met.push((FailureKind::Crash, crash.signature.clone(), title));
        }
        let dialog = policy::shows_anr_dialog(observation);
        if dialog && !self.anr_shown {
            let log = device.system_log(true).unwrap_or_default();
            let note = policy::anr_note(&package, observation, &log, &self.repro);
            let signature = note
                .data
                .as_ref()
                .and_then(|d| d["signature"].as_str())
                .unwrap_or_default()
                .to_string();
            let title = note.message.clone().unwrap_or_default();
            run.emit(Event::Note(crate::events::Note {
                run_id: Some(run.run_id.clone()),
                step: observation.step,
                ..note
            }));
            met.push((FailureKind::Anr, signature, title));
        }
        self.anr_shown = dialog;
        for (kind, signature, title) in met {
            let id = FailureId { kind, signature };
            run.say(
                Level::Debug,
                &format!("replay {}: {kind} {title} on {}", run.run_id, key.as_str()),
            );
            if self.config.expect.as_ref() == Some(&id) && self.replayed.reproduced.is_none() {
                self.replayed.reproduced = Some(after);
            }
            self.replayed.met.push(Met { id, title, after });
        }
        Ok(())
    }

    /// Follow mode: the screen before the step is not the one recorded (for the steps whose
    /// screen was observed: a walk's later moves were taken on screens nobody looked at).
    fn diverged(&self, step: &Step, seen: &ScreenKey, at: usize) -> Option<Divergence> {
        let expected = step.screen.as_ref().filter(|_| step.observed)?;
        (self.config.mode == Mode::Follow && expected != seen).then(|| Divergence {
            at,
            recorded_step: step.step,
            kind: DivergenceKind::Screen,
            expected: expected.as_str().to_string(),
            seen: seen.as_str().to_string(),
            action: step.description.clone(),
        })
    }

    /// Probing: a step with nothing to act on is passed over, and said so.
    fn pass_over(&mut self, run: &mut Run, divergence: Divergence) {
        let message = format!("passed over {}", divergence.describe());
        run.say(Level::Debug, &message);
        let mut data = divergence_data(&divergence);
        data["skipped"] = json!(true);
        run.note(NoteKind::parse(DIVERGENCE_NOTE), &message, Some(data));
        run.commit();
        self.replayed.skipped.push(divergence);
    }

    fn diverge(&mut self, run: &mut Run, divergence: Divergence) {
        let message = format!("the replay diverged at {}", divergence.describe());
        run.say(Level::Debug, &message);
        run.note(
            NoteKind::parse(DIVERGENCE_NOTE),
            &message,
            Some(divergence_data(&divergence)),
        );
        self.replayed.divergence = Some(divergence);
    }

    /// The replay's decision for `step` on the screen now: the recorded action on its target
    /// found again, or (following a recording) at its recorded point.
    fn decide(
        &self,
        run: &Run,
        step: &Step,
        observation: &Observation,
        at: usize,
    ) -> Result<Decision, Divergence> {
        let mut decision = match step.kind {
            StepKind::Relaunch => {
                let mut home = Action::new(ActionType::Home);
                home.action_desc = Some(format!("relaunch {}", self.config.package));
                Decision {
                    relaunch: Some(self.config.package.clone()),
                    ..Decision::new(vec![home])
                }
            }
            StepKind::Act => Decision::new(vec![self.action(step, observation, at)?]),
        };
        decision.decider = Some(REPLAYER.into());
        Ok(decision.at(Some(run.run_id.clone()), Some(run.step)))
    }

    /// The recorded action, aimed at what the screen shows now.
    fn action(
        &self,
        step: &Step,
        observation: &Observation,
        at: usize,
    ) -> Result<Action, Divergence> {
        let mut action = step.action.clone();
        action.ref_id = None;
        action.screen = None;
        action.action_desc = Some(step.description.clone());
        let found = locate(step, &observation.elements);
        let how = found.map(|(_, how)| how);
        match found {
            // A raw tap clicks what is under its point now, so the replay's result names the
            // element (and an export can find it by its id).
            Some((element, _)) if action.action == ActionType::Tap => {
                action.action = ActionType::Click;
                action.point = None;
                action.target_bounding_box = Some(bounding_box(element.bounds));
            }
            Some((element, _)) if step.has_target() || step.action.ref_id.is_some() => {
                action.target_bounding_box = Some(bounding_box(element.bounds));
            }
            None if step.has_target() && action.action != ActionType::Tap => {
                if self.config.mode == Mode::Probe {
                    return Err(Divergence {
                        at,
                        recorded_step: step.step,
                        kind: DivergenceKind::Target,
                        expected: target_of(step),
                        seen: ScreenKey::of(observation).as_str().to_string(),
                        action: step.description.clone(),
                    });
                }
                // Following a recording: where it was.
                let bounds = match (&step.element, step.point) {
                    (Some(element), _) => Some(element.bounds),
                    (None, Some((x, y))) => {
                        Some(crate::ui::Bounds::from([x - 1, y - 1, x + 2, y + 2]))
                    }
                    (None, None) => None,
                };
                action.target_bounding_box =
                    bounds.map(bounding_box).or(action.target_bounding_box);
            }
            _ => {}
        }
        action.reasoning = Some(match how {
            Some(how) => format!("replayed: found by {how}"),
            None if step.has_target() => "replayed: at the recorded point".into(),
            None => "replayed".into(),
        });
        Ok(action)
    }
}

fn crash_title(crash: &CrashData) -> String {
    match crash.exception_message.is_empty() {
        true => crash.exception.clone(),
        false => format!("{}: {}", crash.exception, crash.exception_message),
    }
}

fn bounding_box(bounds: crate::ui::Bounds) -> BoundingBox {
    BoundingBox {
        top_left: [i64::from(bounds.x1), i64::from(bounds.y1)],
        bottom_right: [i64::from(bounds.x2), i64::from(bounds.y2)],
    }
}

/// The step's target, for people: its resource id, text or signature.
fn target_of(step: &Step) -> String {
    if let Some(element) = &step.element {
        for field in [&element.resource_id, &element.text, &element.content_desc] {
            if !field.is_empty() {
                return field.clone();
            }
        }
    }
    step.signature
        .clone()
        .unwrap_or_else(|| step.description.clone())
}

/// The element of `elements` that is the step's target, and how it was found: for a raw tap,
/// the smallest actionable element under its point; else the same signature (the one nearest
/// the recorded point when several share it), else the only element with the recorded resource
/// id (narrowed by text when several have it), else the only one with its text, else with its
/// content description.
pub fn locate<'e>(step: &Step, elements: &'e [UiElement]) -> Option<(&'e UiElement, &'static str)> {
    let shown: Vec<&UiElement> = elements.iter().filter(|e| e.visible).collect();
    if step.action.action == ActionType::Tap && step.result.target_signature.is_none() {
        // A raw tap touched a point, whatever the decider meant: what is there now.
        let (x, y) = step.point?;
        return shown
            .iter()
            .copied()
            .filter(|e| e.bounds.contains(x, y) && (e.clickable || e.long_clickable || e.editable))
            .min_by_key(|e| e.bounds.area())
            .map(|e| (e, "point"));
    }
    if let Some(signature) = step.signature.as_deref() {
        let same: Vec<&UiElement> = shown
            .iter()
            .copied()
            .filter(|e| e.signature == signature)
            .collect();
        if let Some(found) = nearest(&same, step.point) {
            return Some((found, "signature"));
        }
    }
    let recorded = step.element.as_ref()?;
    let only = |matches: Vec<&'e UiElement>| (matches.len() == 1).then(|| matches[0]);
    if !recorded.resource_id.is_empty() {
        let with_id: Vec<&UiElement> = shown
            .iter()
            .copied()
            .filter(|e| e.resource_id == recorded.resource_id)
            .collect();
        if let Some(found) = only(with_id.clone()) {
            return Some((found, "resource id"));
        }
        let narrowed = with_id
            .into_iter()
            .filter(|e| e.text == recorded.text && e.content_desc == recorded.content_desc)
            .collect();
        if let Some(found) = only(narrowed) {
            return Some((found, "resource id and text"));
        }
    }
    if !recorded.text.is_empty() && !recorded.editable {
        let with_text = shown
            .iter()
            .copied()
            .filter(|e| e.text == recorded.text && e.class_name == recorded.class_name)
            .collect();
        if let Some(found) = only(with_text) {
            return Some((found, "text"));
        }
    }
    if !recorded.content_desc.is_empty() {
        let described = shown
            .iter()
            .copied()
            .filter(|e| e.content_desc == recorded.content_desc)
            .collect();
        if let Some(found) = only(described) {
            return Some((found, "content description"));
        }
    }
    None
}

/// Of elements sharing a signature, the one nearest `point`.
fn nearest<'e>(elements: &[&'e UiElement], point: Option<(i32, i32)>) -> Option<&'e UiElement> {
    let distance = |e: &UiElement| match point {
        Some((x, y)) => {
            let (cx, cy) = e.bounds.center();
            i64::from(cx - x).pow(2) + i64::from(cy - y).pow(2)
        }
        None => 0,
    };
    elements.iter().copied().min_by_key(|e| distance(e))
}
