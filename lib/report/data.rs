//! The report of one run: everything every format renders, read once from crawler.db.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::crash::{MinimisedData, ReproStep};
pub use crate::store::statistic::{Group, Statistic};
use crate::store::{CrashRow, JournalEntry, NoteRow, RunRow, Store};

use super::Error;

/// The run, as its header shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub run_id: String,
    /// `RUNNING`, `COMPLETED`, `ERROR` or `INTERRUPTED` (the run's row).
    pub status: String,
    /// The crawl state last announced (`note` of kind `state`, `data.state`), such as
    /// `PAUSED_MANUAL`, when the run has not ended; else the status.
    pub state: String,
    pub reason: Option<String>,
    pub device_id: String,
    pub device_model: Option<String>,
    pub android_version: Option<String>,
    pub screen_resolution: Option<String>,
    pub app_package: String,
    pub app_version: Option<String>,
    pub start_activity: Option<String>,
    pub decider: Option<String>,
    pub model: Option<String>,
    pub start_time: String,
    pub end_time: Option<String>,
    pub duration_seconds: f64,
    pub max_steps: Option<u64>,
    pub max_duration_secs: Option<u64>,
    /// `crawl` or `replay`.
    pub kind: String,
    /// A replay's: the run it replays, and why (`replay`, `minimise`, `verify`).
    pub replay_of: Option<String>,
    pub replay_purpose: Option<String>,
}

impl RunInfo {
    /// `emulator-5554, Pixel 7, Android 14, 1080x2400`: what is known of the device.
    pub fn device_line(&self) -> String {
        [
            Some(self.device_id.clone()),
            self.device_model.clone(),
            self.android_version
                .as_ref()
                .map(|v| format!("Android {v}")),
            self.screen_resolution.clone(),
        ]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// A screen the run saw.
#[derive(Debug, Clone, Serialize)]
pub struct ReportedScreen {
    pub id: i64,
    /// For people: the activity's short name and the screen id (`SettingsActivity #7`).
    pub name: String,
    pub activity: Option<String>,
    pub package: Option<String>,
    pub key: String,
    /// The first screenshot of the screen, when the file is there.
    pub screenshot: Option<PathBuf>,
    pub visits: i64,
    pub first_step: i64,
    pub widget_actions: i64,
    pub widget_actions_tried: i64,
    /// The states of the screen the run's steps were taken in, as the exploration graph told
    /// them apart by what actions did there; 0 when it held the screen as one state.
    pub states: i64,
}

/// A transition of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Transition {
    pub from: i64,
    pub to: i64,
    pub action_type: String,
    pub count: i64,
}

/// One executed action of a step.
#[derive(Debug, Clone, Serialize)]
pub struct StepAction {
    pub action_type: String,
    pub description: Option<String>,
    pub input_text: Option<String>,
    pub success: bool,
    pub error: Option<String>,
    pub duration_ms: Option<f64>,
    pub ai_latency_ms: Option<f64>,
    pub reasoning: Option<String>,
}

/// One step: the screen it saw, what was done, where it led.
#[derive(Debug, Clone, Serialize)]
pub struct ReportedStep {
    pub step: i64,
    pub ts: Option<String>,
    pub screen_id: i64,
    /// The screen of the next step.
    pub next_screen_id: Option<i64>,
    pub screenshot: Option<PathBuf>,
    pub actions: Vec<StepAction>,
}

/// One occurrence of a crash or an ANR.
#[derive(Debug, Clone, Serialize)]
pub struct Occurrence {
    pub step: Option<i64>,
    pub ts: Option<String>,
    pub pid: Option<i64>,
    pub recovered: bool,
    pub screenshot: Option<PathBuf>,
    pub repro_steps: Vec<ReproStep>,
}

/// Crashes (or ANRs) of one signature: one bug.
#[derive(Debug, Clone, Serialize)]
pub struct CrashGroup {
    /// `crash` or `anr`.
    pub kind: String,
    pub signature: String,
    /// Exception class (crashes).
    pub exception: Option<String>,
    /// The exception's message, or the ANR's reason, of the first occurrence.
    pub message: String,
    pub package: Option<String>,
    pub process: Option<String>,
    pub signature_frames: Vec<String>,
    /// The first occurrence's stack trace or ANR block, as logcat printed it.
    pub trace: String,
    pub occurrences: Vec<Occurrence>,
    /// Its steps cut down by replays, when the run's failures were minimised.
    pub minimised: Option<Minimised>,
}

/// A crash's or an ANR's steps cut down by replays from a fresh launch (`droid::repro`): the
/// `minimised` note's data, and its exported files found on disk.
#[derive(Debug, Clone, Serialize)]
pub struct Minimised {
    #[serde(flatten)]
    pub data: MinimisedData,
    /// The exported files that exist, by what they are (`maestro`, `shell`, `events`).
    pub files: BTreeMap<String, PathBuf>,
}

impl Minimised {
    /// `10 steps (from 20), 1-minimal; reproduced 3 of 3 (reproduced); 89 replays, 9.2 s`.
    pub fn summary(&self) -> String {
        let m = &self.data;
        format!(
            "{} steps (from {}), {}; {}; {} replays, {:.1} s",
            m.minimal_steps.len(),
            m.steps_before,
            m.shape(),
            m.verdict_text(),
            m.replays,
            m.seconds
        )
    }
}

impl CrashGroup {
    /// `IllegalStateException: boom`, or `ANR: Input dispatching timed out`.
    pub fn title(&self) -> String {
        match (&self.exception, self.kind.as_str()) {
            (_, "anr") => format!("ANR in {}: {}", self.package.as_deref().unwrap_or("?"), {
                let short = self.message.split(" (").next().unwrap_or_default();
                if short.is_empty() {
                    "not responding"
                } else {
                    short
                }
            }),
            (Some(exception), _) if !self.message.is_empty() => {
                format!("{exception}: {}", self.message)
            }
            (Some(exception), _) => exception.clone(),
            (None, _) => self.message.clone(),
        }
    }
}

/// A note worth a reader's attention: a stage stopping, a warning, being stuck.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub step: Option<i64>,
    pub kind: String,
    pub message: String,
}

/// Coverage of what the run saw.
#[derive(Debug, Clone, Serialize)]
pub struct Coverage {
    pub unique_screens: usize,
    pub unique_activities: usize,
    /// Widget actions offered by the screens the run saw, and of those attempted.
    pub widget_actions: i64,
    pub widget_actions_tried: i64,
    /// `widget_actions_tried / widget_actions`, in percent.
    pub action_coverage_percent: f64,
    pub screens_with_unexplored_elements: usize,
    /// Screens the exploration graph held in more than one state, and those states.
    pub screens_with_states: usize,
    pub states_told_apart: i64,
    /// `[step, unique screens seen up to it]`, one point per step.
    pub discovery: Vec<[i64; 2]>,
}

/// Where the run's files are.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Artifacts {
    pub database: PathBuf,
    pub session_dir: Option<PathBuf>,
    pub screenshots_dir: Option<PathBuf>,
    pub events: Option<PathBuf>,
    pub log: Option<PathBuf>,
    /// The integrations' files (`artifact` notes' `files`, relative to the session folder),
    /// those that exist.
    pub video: Vec<PathBuf>,
    pub pcap: Vec<PathBuf>,
    pub mobsf: Vec<PathBuf>,
    pub apk: Vec<PathBuf>,
    /// Report files a crawl wrote (`run_ended.reports`).
    pub reports: Vec<PathBuf>,
}

impl Artifacts {
    /// The integrations' files by name, as reports list them.
    pub fn integration_files(&self) -> [(&'static str, &[PathBuf]); 4] {
        [
            ("video", &self.video),
            ("pcap", &self.pcap),
            ("mobsf", &self.mobsf),
            ("apk", &self.apk),
        ]
    }
}

/// Everything known about one run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub run: RunInfo,
    /// Every `run_stats` field under the reference's name.
    pub run_stats: Map<String, Value>,
    pub screens: Vec<ReportedScreen>,
    pub transitions: Vec<Transition>,
    pub steps: Vec<ReportedStep>,
    pub crashes: Vec<CrashGroup>,
    pub coverage: Coverage,
    pub problems: Vec<Problem>,
    pub artifacts: Artifacts,
}

impl Report {
    /// Reads the report of `run` (`latest` for the newest run).
    pub fn load(store: &Store, run: &str) -> Result<Report, Error> {
        let run = match run {
            "latest" => store.latest_run()?.ok_or(Error::NoRuns)?,
            other => other.to_string(),
        };
        let row = store.run_row(&run)?;
        let stored = store.run_stats_row(&run)?;
        let notes = store.run_notes(&run)?;
        let base = Bases::new(store.path(), row.session_path.as_deref());

        let screens: Vec<ReportedScreen> = store
            .run_screens(&run)?
            .into_iter()
            .map(|s| ReportedScreen {
                name: screen_name(s.activity.as_deref(), s.screen_id),
                id: s.screen_id,
                activity: s.activity,
                package: s.package,
                key: s.composite_hash,
                screenshot: base.resolve(s.screenshot_path.as_deref()),
                visits: s.visits,
                first_step: s.first_step,
                widget_actions: s.widget_actions,
                widget_actions_tried: s.widget_actions_tried,
                states: s.states,
            })
            .collect();
        let transitions: Vec<Transition> = store
            .run_transitions(&run)?
            .into_iter()
            .map(|t| Transition {
                from: t.from_screen_id,
                to: t.to_screen_id,
                action_type: t.action_type,
                count: t.count,
            })
            .collect();
        let steps = steps(store, &run, &base)?;
        let mut crashes = group_crashes(store.run_crashes(&run)?, &base);
        for minimised in store.run_minimisations(&run)? {
            let group = crashes
                .iter_mut()
                .find(|g| g.kind == minimised.kind && g.signature == minimised.signature);
            if let Some(group) = group {
                let files = minimised
                    .exports
                    .iter()
                    .filter_map(|(what, path)| Some((what.clone(), base.resolve(Some(path))?)))
                    .collect();
                group.minimised = Some(Minimised {
                    data: minimised,
                    files,
                });
            }
        }
        let coverage = coverage(&screens, &steps);
        let info = run_info(&row, &stored, &notes);
        let run_stats = run_stats(stored, &info, &screens, &transitions, &notes, &coverage);
        let problems = notes
            .iter()
            .filter(|n| matches!(n.kind.as_str(), "error" | "warning" | "stuck"))
            .map(|n| Problem {
                step: n.step,
                kind: n.kind.clone(),
                message: n.message.clone().unwrap_or_default(),
            })
            .collect();
        let artifacts = artifacts(store.path(), &row, &notes, &base);
        Ok(Report {
            run: info,
            run_stats,
            screens,
            transitions,
            steps,
            crashes,
            coverage,
            problems,
            artifacts,
        })
    }

    /// A statistic's value (null when the run has none).
    pub fn stat(&self, statistic: Statistic) -> &Value {
        self.run_stats.get(statistic.name()).unwrap_or(&Value::Null)
    }

    /// Groups of `kind` (`crash` or `anr`).
    pub fn groups(&self, kind: &str) -> impl Iterator<Item = &CrashGroup> {
        let kind = kind.to_string();
        self.crashes.iter().filter(move |g| g.kind == kind)
    }

    /// Occurrences of `kind` in all groups.
    pub fn occurrences(&self, kind: &str) -> usize {
        self.groups(kind).map(|g| g.occurrences.len()).sum()
    }

    /// The run failed: it ended with ERROR, or a stage stopped on an error.
    pub fn failed(&self) -> bool {
        self.run.status == "ERROR" || self.problems.iter().any(|p| p.kind == "error")
    }

    /// Why the run failed, for people.
    pub fn failure(&self) -> Option<String> {
        if !self.failed() {
            return None;
        }
        let errors: Vec<&str> = self
            .problems
            .iter()
            .filter(|p| p.kind == "error")
            .map(|p| p.message.as_str())
            .collect();
        Some(match (&self.run.reason, errors.is_empty()) {
            (Some(reason), true) => reason.clone(),
            (Some(reason), false) => format!("{reason}; {}", errors.join("; ")),
            (None, false) => errors.join("; "),
            (None, true) => format!("run ended with status {}", self.run.status),
        })
    }

    /// The screen with this id.
    pub fn screen(&self, id: i64) -> Option<&ReportedScreen> {
        self.screens.iter().find(|s| s.id == id)
    }
}

/// `SettingsActivity #7`.
fn screen_name(activity: Option<&str>, id: i64) -> String {
    let short = activity
        .and_then(|a| a.rsplit('.').next())
        .filter(|a| !a.is_empty())
        .unwrap_or("screen");
    format!("{short} #{id}")
}

/// Where relative paths in the events may be relative to.
struct Bases {
    dirs: Vec<PathBuf>,
}

impl Bases {
    fn new(db: &Path, session: Option<&str>) -> Bases {
        let mut dirs = vec![PathBuf::new()];
        if let Some(session) = session.filter(|s| !s.is_empty()) {
            dirs.push(PathBuf::from(session));
        }
        if let Some(parent) = db.parent() {
            dirs.push(parent.to_path_buf());
        }
        Bases { dirs }
    }

    /// The file a recorded path names, when it exists.
    fn resolve(&self, path: Option<&str>) -> Option<PathBuf> {
        let path = Path::new(path.filter(|p| !p.is_empty())?);
        if path.is_absolute() {
            return path.is_file().then(|| path.to_path_buf());
        }
        self.dirs
            .iter()
            .map(|dir| dir.join(path))
            .find(|candidate| candidate.is_file())
    }
}

fn str_at<'v>(value: &'v Option<Value>, path: &[&str]) -> Option<&'v str> {
    let mut at = value.as_ref()?;
    for key in path {
        at = at.get(key)?;
    }
    at.as_str()
}

fn run_info(row: &RunRow, stats: &Map<String, Value>, notes: &[NoteRow]) -> RunInfo {
    let value = |statistic: Statistic| stats.get(statistic.name());
    let text = |statistic: Statistic| value(statistic).and_then(Value::as_str).map(str::to_string);
    let state = notes
        .iter()
        .rev()
        .filter(|n| n.kind == "state")
        .find_map(|n| {
            let data = n.data.as_ref()?;
            data.get("state")
                .or_else(|| data.get("to"))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let state = match (row.status.as_str(), state) {
        ("RUNNING", Some(state)) => state,
        (status, _) => status.to_string(),
    };
    let resolution = match (
        value(Statistic::ScreenWidth).and_then(Value::as_i64),
        value(Statistic::ScreenHeight).and_then(Value::as_i64),
    ) {
        (Some(w), Some(h)) => Some(format!("{w}x{h}")),
        _ => None,
    };
    let limits = row.started.as_ref().and_then(|s| s.get("limits"));
    let limit = |name: &str| limits.and_then(|l| l.get(name)).and_then(Value::as_u64);
    RunInfo {
        run_id: row.run_id.clone(),
        status: row.status.clone(),
        state,
        reason: str_at(&row.ended, &["reason"]).map(str::to_string),
        device_id: row.device_id.clone(),
        device_model: text(Statistic::DeviceModel),
        android_version: text(Statistic::AndroidVersion),
        screen_resolution: resolution,
        app_package: row.app_package.clone(),
        app_version: text(Statistic::AppVersion),
        start_activity: row.start_activity.clone(),
        decider: row.ai_provider.clone(),
        model: row.ai_model.clone(),
        start_time: row.start_time.clone(),
        end_time: row.end_time.clone(),
        duration_seconds: value(Statistic::CrawlDurationSeconds)
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
        max_steps: limit("max_steps"),
        max_duration_secs: limit("max_duration_secs"),
        kind: row.kind.clone(),
        replay_of: row.replay_of.clone(),
        replay_purpose: row.replay_purpose.clone(),
    }
}

fn steps(store: &Store, run: &str, base: &Bases) -> Result<Vec<ReportedStep>, Error> {
    let observed = store.run_steps(run)?;
    let mut actions: BTreeMap<i64, Vec<StepAction>> = BTreeMap::new();
    for entry in store.run_actions(run)? {
        let JournalEntry {
            step_number,
            action_type,
            action_description,
            input_text,
            execution_success,
            error_message,
            action_duration_ms,
            ai_response_time_ms,
            ai_reasoning,
            ..
        } = entry;
        actions.entry(step_number).or_default().push(StepAction {
            action_type,
            description: action_description,
            input_text,
            success: execution_success,
            error: error_message,
            duration_ms: action_duration_ms,
            ai_latency_ms: ai_response_time_ms,
            reasoning: ai_reasoning,
        });
    }
    let next: Vec<Option<i64>> = observed
        .iter()
        .skip(1)
        .map(|s| Some(s.screen_id))
        .chain(std::iter::once(None))
        .collect();
    Ok(observed
        .into_iter()
        .zip(next)
        .map(|(s, next_screen_id)| ReportedStep {
            actions: actions.remove(&s.step).unwrap_or_default(),
            step: s.step,
            ts: s.ts,
            screen_id: s.screen_id,
            next_screen_id,
            screenshot: base.resolve(s.screenshot_path.as_deref()),
        })
        .collect())
}

fn group_crashes(rows: Vec<CrashRow>, base: &Bases) -> Vec<CrashGroup> {
    let mut groups: Vec<CrashGroup> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    for row in rows {
        let occurrence = Occurrence {
            step: row.step,
            ts: row.ts.clone(),
            pid: row.pid,
            recovered: row.recovered,
            screenshot: base.resolve(row.screenshot_path.as_deref()),
            repro_steps: row.repro_steps.clone(),
        };
        let key = (row.kind.clone(), row.signature.clone());
        match index.get(&key) {
            Some(&at) => groups[at].occurrences.push(occurrence),
            None => {
                index.insert(key, groups.len());
                groups.push(CrashGroup {
                    kind: row.kind,
                    signature: row.signature,
                    exception: row.exception.filter(|e| !e.is_empty()),
                    message: row.message.unwrap_or_default(),
                    package: row.package.filter(|p| !p.is_empty()),
                    process: row.process,
                    signature_frames: row.signature_frames,
                    trace: row.trace.unwrap_or_default(),
                    occurrences: vec![occurrence],
                    minimised: None,
                });
            }
        }
    }
    // Crashes before ANRs; within a kind, the bug seen most often first.
    groups.sort_by(|a, b| {
        (a.kind != "crash")
            .cmp(&(b.kind != "crash"))
            .then(b.occurrences.len().cmp(&a.occurrences.len()))
    });
    groups
}

fn coverage(screens: &[ReportedScreen], steps: &[ReportedStep]) -> Coverage {
    let widget_actions: i64 = screens.iter().map(|s| s.widget_actions).sum();
    let tried: i64 = screens.iter().map(|s| s.widget_actions_tried).sum();
    let mut seen = HashSet::new();
    let discovery = steps
        .iter()
        .map(|s| {
            seen.insert(s.screen_id);
            [s.step, seen.len() as i64]
        })
        .collect();
    Coverage {
        unique_screens: screens.len(),
        unique_activities: screens
            .iter()
            .filter_map(|s| s.activity.as_deref())
            .collect::<HashSet<_>>()
            .len(),
        widget_actions,
        widget_actions_tried: tried,
        action_coverage_percent: match widget_actions {
            0 => 0.0,
            n => tried as f64 * 100.0 / n as f64,
        },
        screens_with_unexplored_elements: screens
            .iter()
            .filter(|s| s.widget_actions_tried < s.widget_actions)
            .count(),
        screens_with_states: screens.iter().filter(|s| s.states > 1).count(),
        states_told_apart: screens
            .iter()
            .filter(|s| s.states > 1)
            .map(|s| s.states)
            .sum(),
        discovery,
    }
}

/// The stored `run_stats` row under the reference's names, with the statistics it has no
/// column for computed from the run.
fn run_stats(
    stored: Map<String, Value>,
    run: &RunInfo,
    screens: &[ReportedScreen],
    transitions: &[Transition],
    notes: &[NoteRow],
    coverage: &Coverage,
) -> Map<String, Value> {
    let mut columns: Map<String, Value> = stored
        .into_iter()
        .map(|(name, value)| match name.strip_suffix("_json") {
            Some(base) => {
                let object = value
                    .as_str()
                    .and_then(|t| serde_json::from_str(t).ok())
                    .unwrap_or_else(|| Value::Object(Map::new()));
                (base.to_string(), object)
            }
            None => (name, value),
        })
        .collect();
    let get_f64 = |columns: &Map<String, Value>, statistic: Statistic| {
        columns
            .get(statistic.name())
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    };
    let minutes = get_f64(&columns, Statistic::CrawlDurationSeconds) / 60.0;
    let screens_per_minute = match minutes > 0.0 {
        true => Value::from(screens.len() as f64 / minutes),
        false => Value::Null,
    };
    let (ok, failed) = (
        get_f64(&columns, Statistic::SuccessfulSteps),
        get_f64(&columns, Statistic::FailedSteps),
    );
    let batch_success_rate = match ok + failed > 0.0 {
        true => Value::from(ok * 100.0 / (ok + failed)),
        false => Value::Null,
    };
    let pairs: HashSet<(i64, i64)> = transitions.iter().map(|t| (t.from, t.to)).collect();
    let per_screen = |statistic: Statistic| match (columns.get(statistic.name()), screens.len()) {
        (Some(value), n) if n > 0 && value.is_number() => {
            Value::from(value.as_f64().unwrap_or(0.0) / n as f64)
        }
        _ => Value::Null,
    };
    let cost_per_screen = per_screen(Statistic::TotalAiCost);
    let calls_per_screen = per_screen(Statistic::TotalAiCalls);
    let computed: [(Statistic, Value); 12] = [
        (Statistic::AiCostPerNewScreen, cost_per_screen),
        (Statistic::AiCallsPerNewScreen, calls_per_screen),
        (Statistic::ScreensPerMinute, screens_per_minute),
        (Statistic::BatchSuccessRate, batch_success_rate),
        (
            Statistic::ContextLossCount,
            Value::from(
                notes
                    .iter()
                    .filter(|n| n.kind == "context_loss")
                    .filter(|n| n.data.as_ref().is_none_or(|d| d["detected_at"].is_null()))
                    .count(),
            ),
        ),
        (Statistic::DeviceId, Value::from(run.device_id.clone())),
        (
            Statistic::ScreenResolution,
            run.screen_resolution
                .clone()
                .map_or(Value::Null, Value::from),
        ),
        (Statistic::AppPackage, Value::from(run.app_package.clone())),
        (
            Statistic::SessionStartTime,
            Value::from(run.start_time.clone()),
        ),
        (
            Statistic::SessionEndTime,
            run.end_time.clone().map_or(Value::Null, Value::from),
        ),
        (
            Statistic::ScreensWithUnexploredElements,
            Value::from(coverage.screens_with_unexplored_elements),
        ),
        (Statistic::NavigationGraphEdges, Value::from(pairs.len())),
    ];
    for (statistic, value) in computed {
        columns.insert(statistic.name().to_string(), value);
    }
    // The table's order; the row's id columns are not statistics.
    Statistic::ALL
        .iter()
        .map(|s| {
            (
                s.name().to_string(),
                columns.remove(s.name()).unwrap_or(Value::Null),
            )
        })
        .collect()
}

fn artifacts(db: &Path, row: &RunRow, notes: &[NoteRow], base: &Bases) -> Artifacts {
    let session = row
        .session_path
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_dir());
    let inside = |rel: &str| session.as_ref().map(|s| s.join(rel)).filter(|p| p.exists());
    // The last note of the integration that names files.
    let artifact = |kind: &str| -> Vec<PathBuf> {
        let files = notes
            .iter()
            .rev()
            .filter(|n| n.kind == "artifact")
            .filter_map(|n| n.data.as_ref())
            .filter(|d| d.get("artifact").and_then(Value::as_str) == Some(kind))
            .filter_map(|d| d.get("files").and_then(Value::as_array))
            .find(|files| !files.is_empty());
        files
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|file| match &session {
                Some(session) if Path::new(file).is_relative() => {
                    Some(session.join(file)).filter(|p| p.is_file())
                }
                _ => base.resolve(Some(file)),
            })
            .collect()
    };
    let reports = row
        .ended
        .as_ref()
        .and_then(|e| e.get("reports"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    Artifacts {
        database: db.to_path_buf(),
        screenshots_dir: inside("screenshots"),
        events: inside("events.jsonl"),
        log: inside("logs/crawler.log"),
        session_dir: session.clone(),
        video: artifact("video"),
        pcap: artifact("pcap"),
        mobsf: artifact("mobsf"),
        apk: artifact("activities"),
        reports,
    }
}

/// A statistic for people: integers as they are, other numbers with up to two decimals, or six
/// below 0.01 (a model call's cost) (trailing zeros dropped), objects as `key N, key N`, null
/// as `-`.
pub fn show(value: &Value) -> String {
    match value {
        Value::Null => "-".to_string(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => {
            let n = n.as_f64().unwrap_or(0.0);
            let decimals = match n != 0.0 && n.abs() < 0.01 {
                true => 6,
                false => 2,
            };
            let text = format!("{n:.decimals$}");
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Object(map) if map.is_empty() => "-".to_string(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k} {}", show(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_read_naturally() {
        assert_eq!(show(&Value::from(3)), "3");
        assert_eq!(show(&Value::from(2.5)), "2.5");
        assert_eq!(show(&Value::from(1.0 / 3.0)), "0.33");
        assert_eq!(show(&Value::from(4.0)), "4");
        // A model call's cost keeps its digits.
        assert_eq!(show(&Value::from(7.35e-6)), "0.000007");
        assert_eq!(show(&Value::from(0.004_25)), "0.00425");
        assert_eq!(show(&Value::Null), "-");
        assert_eq!(
            show(&serde_json::json!({"click": 2, "back": 1})),
            "click 2, back 1"
        );
    }
}
