//! Minimising a run's crashes and ANRs: each distinct failure (one per signature, the
//! occurrence reached in the fewest steps) has its steps since launch cut down by ddmin
//! ([`super::ddmin`]), each test a replay from a fresh launch ([`super::replay`], probing:
//! a step whose target is not on the screen makes the test unresolved). The result is then
//! replayed N more times (`verify`): reproduced k of N is the verdict (`reproduced` when k = N,
//! `flaky` when 0 < k < N, `not_reproduced` when k = 0). The result, its figures and its
//! exports (a Maestro flow, a shell script, the events a replay takes; [`super::export`]) are
//! written into the run as a `minimised` note, in crawler.db and the session's events.jsonl.
//!
//! The budget (`--minimise-budget`: replays, or seconds) is shared by the failures in turn;
//! verification replays are not counted in it. Stopping (a signal, `droid-crawl stop`) ends the
//! current test; what was found so far is written, unverified, and the failures not reached
//! are left.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde_json::json;

use super::ddmin::{ddmin, Halt, Trial};
use super::export::{self, Target};
use super::replay::{self, Mode, Purpose, ReplayConfig, Replayed};
use super::script::{FailureKind, RecordedFailure, Script, StepKind};
use crate::act;
use crate::crash::{MinimisedData, ReproStep};
use crate::crawl::control::Controls;
use crate::crawl::{Level, Listener, Minimising};
use crate::device::AdbDevice;
use crate::events::{Event, EventReader, Note, NoteKind};
use crate::store::Store;

pub use crate::crash::{DEVICE_HALT, MINIMISED_NOTE};
/// Where a run's minimal paths are exported, in its session folder.
pub const EXPORT_FOLDER: &str = "repro";
/// Where the replays of a run's minimisation keep their session folders.
pub const REPLAY_FOLDER: &str = "replays";

/// How much minimising may cost: replays, or time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Replays(u32),
    Time(Duration),
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::Replays(200)
    }
}

impl FromStr for Budget {
    type Err = String;

    /// `150` (replays), `90s`, `5m`.
    fn from_str(text: &str) -> Result<Budget, String> {
        let text = text.trim();
        let bad = || format!("{text:?} is neither replays (150) nor a time (90s, 5m)");
        let number = |digits: &str| digits.parse::<u64>().ok().filter(|n| *n > 0);
        if let Some(seconds) = text.strip_suffix('s').and_then(number) {
            return Ok(Budget::Time(Duration::from_secs(seconds)));
        }
        if let Some(minutes) = text.strip_suffix('m').and_then(number) {
            return Ok(Budget::Time(Duration::from_secs(minutes * 60)));
        }
        number(text)
            .and_then(|n| u32::try_from(n).ok())
            .map(Budget::Replays)
            .ok_or_else(bad)
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Budget::Replays(n) => write!(f, "{n} replays"),
            Budget::Time(d) => write!(f, "{} s", d.as_secs()),
        }
    }
}

/// What a minimisation does.
#[derive(Debug, Clone)]
pub struct MinimiseConfig {
    pub db: PathBuf,
    /// Where replays and exports go when the run has no session folder.
    pub out_dir: PathBuf,
    pub budget: Budget,
    /// Replays that verify each result.
    pub verify: u32,
    pub clear_data: bool,
    pub act: act::Config,
    /// Only the failure of this signature.
    pub only: Option<String>,
    pub controls: Option<Controls>,
}

/// What the command line says about minimising; [`MinimiseOptions::config`] fills in the rest
/// with defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinimiseOptions {
    pub budget: Budget,
    pub verify: u32,
    pub clear_data: bool,
}

impl Default for MinimiseOptions {
    fn default() -> MinimiseOptions {
        MinimiseOptions {
            budget: Budget::default(),
            verify: 3,
            clear_data: false,
        }
    }
}

impl MinimiseOptions {
    pub fn config(&self) -> MinimiseConfig {
        MinimiseConfig {
            db: PathBuf::from("crawler.db"),
            out_dir: PathBuf::from("output_data"),
            budget: self.budget,
            verify: self.verify,
            clear_data: self.clear_data,
            act: act::Config::default(),
            only: None,
            controls: None,
        }
    }
}

/// Why a run could not be minimised.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MinimiseError {
    #[error("crawler.db")]
    Store(#[from] crate::store::Error),
    #[error("reading run {run}'s events")]
    Events {
        run: String,
        #[source]
        source: std::io::Error,
    },
    #[error("run {run} has no crash or ANR with signature {signature}")]
    NoSuchFailure { run: String, signature: String },
    #[error("replaying")]
    Replay(#[from] replay::ReplayError),
    #[error("the device: {0}")]
    Device(String),
    #[error("writing {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The budget left, across the failures of a run.
struct Spending {
    budget: Budget,
    started: Instant,
    replays: u32,
}

impl Spending {
    fn spend(&mut self) -> Result<(), Halt> {
        let spent = match self.budget {
            Budget::Replays(n) => self.replays >= n,
            Budget::Time(limit) => self.started.elapsed() >= limit,
        };
        match spent {
            true => Err(Halt::Budget),
            false => {
                self.replays += 1;
                Ok(())
            }
        }
    }
}

/// The events of `run` in crawler.db, read back.
pub fn run_events(store: &Store, run: &str) -> Result<Vec<Event>, MinimiseError> {
    let mut bytes = Vec::new();
    store.export(run, &mut bytes)?;
    let mut events = Vec::new();
    // What crawler.db holds was read once already: a line it cannot give back is skipped.
    for line in EventReader::new(std::io::Cursor::new(bytes)).flatten() {
        events.extend(line.event);
    }
    Ok(events)
}

/// Reads events from a file (or stdin for `-`): what `droid-crawl replay --events` takes. Bad
/// lines are errors naming their number.
pub fn read_events(input: impl BufRead) -> Result<Vec<Event>, crate::events::ReadError> {
    let mut events = Vec::new();
    for line in EventReader::new(input) {
        events.extend(line?.event);
    }
    Ok(events)
}

/// Minimises the crashes and ANRs of `run` on `device` (see the module's documentation), and
/// returns what each came to.
pub fn minimise_run(
    device: &AdbDevice,
    run: &str,
    config: &MinimiseConfig,
    listener: &mut dyn Listener,
) -> Result<Vec<MinimisedData>, MinimiseError> {
    let store = Store::open_existing(&config.db)?;
    let row = store.run_row(run)?;
    let script = Script::from_events(run_events(&store, &row.run_id)?);
    drop(store);
    let session = row
        .session_path
        .as_deref()
        .map(PathBuf::from)
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| config.out_dir.join(&row.run_id));
    let failures: Vec<&RecordedFailure> = script
        .distinct_failures()
        .into_iter()
        .filter(|f| config.only.as_ref().is_none_or(|s| *s == f.id.signature))
        .collect();
    if let (Some(signature), true) = (&config.only, failures.is_empty()) {
        return Err(MinimiseError::NoSuchFailure {
            run: row.run_id.clone(),
            signature: signature.clone(),
        });
    }
    let mut minimiser = Minimiser {
        device,
        script: &script,
        config,
        package: row.app_package.clone(),
        run_id: row.run_id.clone(),
        session,
        spending: Spending {
            budget: config.budget,
            started: Instant::now(),
            replays: 0,
        },
        stopped: false,
    };
    let mut done = Vec::new();
    for (at, failure) in failures.iter().enumerate() {
        if minimiser.stopped {
            break;
        }
        let progress = Minimising {
            failure: at + 1,
            failures: failures.len(),
            title: failure.title.clone(),
            steps_before: script.steps_to(failure).len(),
            steps_now: script.steps_to(failure).len(),
            replays: 0,
            phase: "minimising",
        };
        listener.minimising(&progress);
        let minimised = minimiser.minimise(failure, progress, listener)?;
        minimiser.record(&minimised, listener)?;
        let device_failed = minimised.error.is_some();
        done.push(minimised);
        if device_failed {
            // The device that failed one replay is not trusted with the next failure's.
            let left = failures.len() - done.len();
            if left > 0 {
                listener.say(
                    Level::Warn,
                    &format!("the device failed: {left} more failures not minimised"),
                );
            }
            break;
        }
    }
    Ok(done)
}

struct Minimiser<'m> {
    device: &'m AdbDevice,
    script: &'m Script,
    config: &'m MinimiseConfig,
    package: String,
    run_id: String,
    session: PathBuf,
    spending: Spending,
    /// The user asked to stop.
    stopped: bool,
}

impl Minimiser<'_> {
    /// One failure: reproduced, minimised, verified, exported.
    fn minimise(
        &mut self,
        failure: &RecordedFailure,
        mut progress: Minimising,
        listener: &mut dyn Listener,
    ) -> Result<MinimisedData, MinimiseError> {
        let started = Instant::now();
        let replays_before = self.spending.replays;
        let whole = self.script.steps_to(failure);
        listener.say(
            Level::Info,
            &format!(
                "minimising {} {} ({}): {} steps since launch",
                failure.id.kind,
                failure.id.signature,
                one_line(&failure.title),
                whole.len()
            ),
        );
        // The recorded path first: it must reproduce for anything shorter to be tried (a flaky
        // failure gets `verify` tries).
        let mut start = None;
        let mut halted = None;
        // The device's error when a replay met one: minimising stops there, and the failure is
        // recorded as it stood.
        let mut failed = None;
        let mut attempts = 0;
        for _ in 0..self.config.verify.max(1) {
            attempts += 1;
            match self.trial(failure, &whole, Purpose::Minimise, listener) {
                Ok(Trial::Fails { taken }) => {
                    start = Some(taken.iter().map(|&at| whole[at]).collect::<Vec<_>>());
                    break;
                }
                Ok(_) => {}
                Err(Err(error)) => {
                    attempts -= 1;
                    failed = Some(device_failure(error)?);
                    break;
                }
                Err(Ok(halt)) => {
                    attempts -= 1;
                    halted = Some(halt);
                    break;
                }
            }
        }
        let never = start.is_none() && halted.is_none() && failed.is_none();
        let (steps, one_minimal) = match start {
            None => (whole.clone(), false),
            Some(start) => {
                let mut error = None;
                let found = {
                    let mut test = |candidate: &[usize]| {
                        let outcome = self.trial(failure, candidate, Purpose::Minimise, listener);
                        progress.replays = self.spending.replays - replays_before;
                        listener.minimising(&progress);
                        match outcome {
                            Ok(trial) => {
                                if let Trial::Fails { taken } = &trial {
                                    progress.steps_now = progress.steps_now.min(taken.len());
                                }
                                Ok(trial)
                            }
                            Err(Ok(halt)) => Err(halt),
                            Err(Err(e)) => {
                                error = Some(e);
                                Err(Halt::Interrupted)
                            }
                        }
                    };
                    ddmin(start, &mut test)
                };
                match error {
                    Some(error) => failed = Some(device_failure(error)?),
                    None => halted = halted.or(found.halted),
                }
                (found.items, found.one_minimal)
            }
        };
        let replays = self.spending.replays - replays_before;
        let seconds = started.elapsed().as_secs_f64();
        // Verification: of the result, or of the recorded path when the budget allowed no
        // minimising; none when the user stopped, and none more when the recorded path never
        // reproduced (its tries are the verdict).
        let mut verify_runs = Vec::new();
        let mut reproduced = 0;
        let mut verified_by = None;
        let verify = match (self.stopped || failed.is_some(), never) {
            (true, _) | (_, true) => 0,
            (false, false) => self.config.verify,
        };
        progress.phase = "verifying";
        progress.steps_now = steps.len();
        for _ in 0..verify {
            listener.minimising(&progress);
            let replayed = match self.replay(failure, &steps, Purpose::Verify, true, listener) {
                Ok(replayed) => replayed,
                Err(error) => {
                    failed = Some(device_failure(error)?);
                    break;
                }
            };
            if replayed.status == "INTERRUPTED" {
                self.stopped = true;
                halted = Some(Halt::Interrupted);
                break;
            }
            verify_runs.push(replayed.run_id.clone());
            if replayed.reproduced.is_some() {
                reproduced += 1;
                verified_by.get_or_insert(replayed.run_id.clone());
            }
        }
        let verify_replays = match never {
            true => attempts,
            false => verify_runs.len() as u32,
        };
        let verdict = match (verify_replays, reproduced) {
            (0, _) => "unverified",
            (n, k) if k == n => "reproduced",
            (_, 0) => "not_reproduced",
            _ => "flaky",
        };
        let exports = self.export(
            failure,
            &steps,
            verified_by.as_deref(),
            verdict,
            reproduced,
            verify_replays,
        )?;
        let minimal_steps = steps
            .iter()
            .map(|&i| {
                let step = &self.script.steps[i];
                ReproStep {
                    step: step.step,
                    action: step.description.clone(),
                    screen: step
                        .screen
                        .as_ref()
                        .map(|k| k.as_str().to_string())
                        .unwrap_or_default(),
                }
            })
            .collect();
        let data = MinimisedData {
            kind: failure.id.kind.as_str().into(),
            signature: failure.id.signature.clone(),
            title: failure.title.clone(),
            steps_before: whole.len(),
            minimal_steps,
            one_minimal,
            minimal: one_minimal && verdict == "reproduced",
            halted: match &failed {
                Some(_) => Some(DEVICE_HALT.to_string()),
                None => halted.map(|h| h.as_str().to_string()),
            },
            error: failed,
            replays,
            seconds: (seconds * 100.0).round() / 100.0,
            verify_replays,
            reproduced,
            verdict: verdict.into(),
            verify_runs,
            exports,
        };
        listener.say(Level::Info, &describe(&data));
        Ok(data)
    }

    /// One test: the steps `picks` replayed, probing. `Err(Ok(halt))` when no more replay may
    /// be made, `Err(Err(_))` when the device failed.
    fn trial(
        &mut self,
        failure: &RecordedFailure,
        picks: &[usize],
        purpose: Purpose,
        listener: &mut dyn Listener,
    ) -> Result<Trial, Result<Halt, MinimiseError>> {
        if self.stopped || self.stop_requested() {
            self.stopped = true;
            return Err(Ok(Halt::Interrupted));
        }
        self.spending.spend().map_err(Ok)?;
        let replayed = self
            .replay(failure, picks, purpose, false, listener)
            .map_err(Err)?;
        if replayed.status == "INTERRUPTED" {
            self.stopped = true;
            return Err(Ok(Halt::Interrupted));
        }
        listener.say(
            Level::Debug,
            &format!(
                "replay {} of {} steps: {}",
                replayed.run_id,
                picks.len(),
                replayed.reason
            ),
        );
        Ok(match (replayed.reproduced, &replayed.divergence) {
            (Some(_), _) => Trial::Fails {
                taken: replayed.taken.clone(),
            },
            (None, Some(_)) => Trial::Unresolved,
            (None, None) => Trial::Passes,
        })
    }

    fn stop_requested(&self) -> bool {
        self.config
            .controls
            .as_ref()
            .is_some_and(Controls::stop_requested)
    }

    /// A replay of `picks` watching for `failure`; a device that failed is an error.
    fn replay(
        &mut self,
        failure: &RecordedFailure,
        picks: &[usize],
        purpose: Purpose,
        screenshots: bool,
        listener: &mut dyn Listener,
    ) -> Result<Replayed, MinimiseError> {
        let config = ReplayConfig {
            package: self.package.clone(),
            clear_data: self.config.clear_data,
            mode: Mode::Probe,
            expect: Some(failure.id.clone()),
            screenshots,
            act: self.config.act.clone(),
            db: self.config.db.clone(),
            session_dir: next_folder(&self.session.join(REPLAY_FOLDER), purpose.as_str()),
            replay_of: Some(self.run_id.clone()),
            purpose,
            controls: self.config.controls.clone(),
        };
        let mut quiet = Quiet { outer: listener };
        let replayed = replay::replay(self.device, self.script, picks, &config, &mut quiet)?;
        if replayed.status == "ERROR" {
            return Err(MinimiseError::Device(replayed.reason));
        }
        Ok(replayed)
    }

    /// The exports of the result: from the first verifying replay that reproduced the failure
    /// (its screens and points are those of the path as it is now), else from the recorded
    /// steps. Paths relative to the session folder.
    fn export(
        &self,
        failure: &RecordedFailure,
        steps: &[usize],
        verified_by: Option<&str>,
        verdict: &str,
        reproduced: u32,
        verify_replays: u32,
    ) -> Result<std::collections::BTreeMap<String, String>, MinimiseError> {
        let (source, picks, from) = match verified_by {
            Some(run) => {
                let store = Store::open_existing(&self.config.db)?;
                let script = Script::from_events(run_events(&store, run)?);
                let picks = script.all();
                (script, picks, format!("verifying replay {run}"))
            }
            None => (
                self.script.clone(),
                steps.to_vec(),
                format!("run {}", self.run_id),
            ),
        };
        let evidence = match failure.id.kind {
            FailureKind::Crash => failure
                .exception
                .clone()
                .unwrap_or_else(|| failure.title.clone()),
            FailureKind::Anr => format!("ANR in {}", self.package),
        };
        let provenance = format!(
            "droid: {} steps (of {} since launch) to this {} of run {}; reproduced {reproduced} of \
             {verify_replays} replays ({verdict}); steps as taken by the {from}",
            picks.iter().filter(|&&p| source.steps[p].kind == StepKind::Act).count(),
            self.script.steps_to(failure).len(),
            failure.id.kind,
            self.run_id,
        );
        let target = Target {
            package: &self.package,
            kind: failure.id.kind,
            title: &failure.title,
            evidence,
            signature: &failure.id.signature,
            provenance,
            clear_data: self.config.clear_data,
        };
        let folder = self.session.join(EXPORT_FOLDER);
        std::fs::create_dir_all(&folder).map_err(|source| MinimiseError::Write {
            path: folder.clone(),
            source,
        })?;
        let stem = format!("{}-{}", failure.id.kind, failure.id.signature);
        let mut events = String::new();
        let header = Event::RunStarted(crate::events::RunStarted {
            run_id: source.run_id.clone().unwrap_or_else(|| self.run_id.clone()),
            package: Some(self.package.clone()),
            ..Default::default()
        });
        events.push_str(&header.to_line());
        events.push('\n');
        for event in source.events_of(&picks) {
            events.push_str(&event.to_line());
            events.push('\n');
        }
        let note = Note::now(
            match failure.id.kind {
                FailureKind::Crash => NoteKind::Crash,
                FailureKind::Anr => NoteKind::Anr,
            },
            failure.title.clone(),
        )
        .with_data(Some(json!({
            "signature": failure.id.signature,
            "exception": failure.exception,
            "repro_steps": picks.iter().map(|&p| {
                let s = &source.steps[p];
                json!({"step": s.step, "action": s.description})
            }).collect::<Vec<_>>(),
        })));
        events.push_str(
            &Event::Note(Note {
                run_id: source.run_id.clone(),
                ..note
            })
            .to_line(),
        );
        events.push('\n');
        let files = [
            (
                "maestro",
                format!("{stem}.yaml"),
                export::maestro(&source, &picks, &target),
            ),
            (
                "shell",
                format!("{stem}.sh"),
                export::shell(&source, &picks, &target),
            ),
            ("events", format!("{stem}.events.jsonl"), events),
        ];
        let mut written = std::collections::BTreeMap::new();
        for (what, name, text) in files {
            let path = folder.join(&name);
            std::fs::write(&path, text).map_err(|source| MinimiseError::Write {
                path: path.clone(),
                source,
            })?;
            if what == "shell" {
                make_executable(&path);
            }
            written.insert(what.to_string(), format!("{EXPORT_FOLDER}/{name}"));
        }
        Ok(written)
    }

    /// The `minimised` note into the run: crawler.db, the session's events.jsonl, the listener.
    fn record(
        &self,
        data: &MinimisedData,
        listener: &mut dyn Listener,
    ) -> Result<(), MinimiseError> {
        let note = Note::at(
            &self.run_id,
            None,
            NoteKind::parse(MINIMISED_NOTE),
            describe(data),
        )
        .with_data(serde_json::to_value(data).ok());
        let event = Event::Note(note);
        let store = Store::open(&self.config.db)?;
        let mut ingest = store.ingest();
        ingest.push_event(event.clone())?;
        ingest.finish()?;
        let log = self.session.join("events.jsonl");
        if let Ok(mut file) = std::fs::OpenOptions::new().append(true).open(&log) {
            use std::io::Write as _;
            let _ = writeln!(file, "{}", event.to_line());
        }
        listener.event(&event);
        Ok(())
    }
}

/// The device's error, when `error` is one a replay meets from the device (the failure is then
/// recorded as it stood, [`DEVICE_HALT`]); any other error is handed back.
fn device_failure(error: MinimiseError) -> Result<String, MinimiseError> {
    match error {
        MinimiseError::Device(reason) => Ok(one_line(&reason)),
        MinimiseError::Replay(replay::ReplayError::Device(error)) => {
            Ok(one_line(&crate::filter::Chain(&error).to_string()))
        }
        other => Err(other),
    }
}

/// `crash 4bc8fbd427e0f550: 20 steps → 6, 1-minimal, 31 replays in 1.2 s; reproduced 3 of 3`.
pub fn describe(data: &MinimisedData) -> String {
    format!(
        "{} {}: {} steps → {}, {}, {} replays in {:.1} s; {}",
        data.kind,
        data.signature,
        data.steps_before,
        data.minimal_steps.len(),
        data.shape(),
        data.replays,
        data.seconds,
        data.verdict_text()
    )
}

/// A listener for replays made while minimising: their events stay in crawler.db, their
/// messages go on as debug lines.
struct Quiet<'l> {
    outer: &'l mut dyn Listener,
}

impl Listener for Quiet<'_> {
    fn event(&mut self, _event: &Event) {}

    fn say(&mut self, level: Level, message: &str) {
        self.outer.say(level.min(Level::Debug), message);
    }
}

/// The first `NNNN-purpose` folder under `parent` that does not exist yet.
fn next_folder(parent: &Path, purpose: &str) -> PathBuf {
    let mut n = std::fs::read_dir(parent).map(|d| d.count()).unwrap_or(0) + 1;
    loop {
        let path = parent.join(format!("{n:04}-{purpose}"));
        if !path.exists() {
            return path;
        }
        n += 1;
    }
}

fn make_executable(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755));
    }
}

fn one_line(text: &str) -> String {
    crate::terminal::clean(text.lines().next().unwrap_or_default())
}
