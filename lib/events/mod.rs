//! The event stream: droid's wire format.
//!
//! One JSON object per line, UTF-8, with `"type"` and `"v": 1` on every line. Stages read lines
//! with [`EventReader`], act on the types they consume and pass every other line through
//! untouched (byte for byte, in order) with [`EventWriter::write_raw`]. The full reference, with
//! every field and a worked example, is `docs/events.md`; `docs/events.schema.json` is generated
//! from these types by [`json_schema`].
//!
//! Every payload struct keeps fields it does not know in `extra`, so a stage that rewrites an
//! event (droid-hash enriching an observation, say) does not lose what an upstream stage added.

mod codec;
mod run_id;
mod schema;
mod words;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ui::UiElement;

pub use codec::{EventReader, EventWriter, Line, LineError, RawLine, ReadError, MAX_LINE_BYTES};
pub use run_id::{check_run_id, new_run_id, parse_run_id, RunIdError, MAX_RUN_ID_CHARS};
pub use schema::json_schema;
pub use words::{ActionType, ErrorKind, NoteKind};

/// The wire version written on every line as `"v"`.
pub const WIRE_VERSION: u64 = 1;

/// Extra fields a producer added that this version does not know; kept and written back.
pub type Extra = Map<String, Value>;

/// Current time as the stream writes it: RFC 3339, UTC, milliseconds.
pub fn now_ts() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Limits a run was started with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_secs: Option<u64>,
}

/// What is known about the device a run talks to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub android_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk: Option<u32>,
    /// Width and height in pixels, after any `wm size` override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen_size: Option<[u32; 2]>,
}

/// `run_started`: the first line of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunStarted {
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// Device serial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_info: Option<DeviceInfo>,
    /// Package under test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// `heuristic`, `random`, `gemini`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Session folder of the run (screenshots, logs, artifacts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_dir: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `run_ended`: the last line of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunEnded {
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// One of [`RUN_END_STATUSES`]: `COMPLETED`, `ERROR` or `INTERRUPTED`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_dir: Option<String>,
    /// Paths of the report files written for the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reports: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Flags a capture sets on what it saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ObservationFlags {
    /// The screenshot is black or a single colour (FLAG_SECURE, or a blank frame).
    #[serde(default)]
    pub secure: bool,
    /// The only content on screen is progress indicators.
    #[serde(default)]
    pub loading: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Screen identity keys, added by droid-hash.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScreenHash {
    /// sha256 of the normalised hierarchy, 64 hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_hash: Option<String>,
    /// 64-bit perceptual hash of the screenshot, 16 hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phash: Option<String>,
    /// The screen's identity (`activity|w:…` or `activity|l:…`), as the deciders and
    /// crawler.db know it (see `crate::screen::ScreenKey`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen_key: Option<String>,
    /// sha256 of the structure only (classes, ids, nesting), 64 hex digits: a second key that
    /// ignores all text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structure_hash: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `observation`: one snapshot of the device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Observation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Step number within the run; absent when the capturer does not know it (droid-record then
    /// assigns the next one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// Device serial; absent for observations built from saved files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_info: Option<DeviceInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen_size: Option<[u32; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<String>,
    /// The raw hierarchy dump, when carried inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xml: Option<String>,
    /// Where the raw hierarchy dump was saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xml_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_path: Option<String>,
    #[serde(default)]
    pub elements: Vec<UiElement>,
    /// The pruned text tree with `[ref=N]` markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    #[serde(default)]
    pub flags: ObservationFlags,
    /// Milliseconds spent per part of the capture (`dump`, `screenshot`, `foreground`, `total`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub timings: Extra,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<ScreenHash>,
    /// The app's declared activities a crawl has not shown yet (at most 20, in manifest
    /// order): goals a decider may steer towards.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unvisited_activities: Vec<String>,
    /// Set by droid-crawl when the exploration is stuck on this screen (the same screen more
    /// than twice in a row with actions that did not navigate): the decider is told so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_stuck: bool,
    /// Why droid-crawl says the exploration is stuck (with `is_stuck`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_reason: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A rectangle in device pixels, as LLMs are asked to give it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BoundingBox {
    pub top_left: [i64; 2],
    pub bottom_right: [i64; 2],
}

/// A cell of a grid laid over the screen (the vision fallback when no element fits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GridCell {
    pub rows: u32,
    pub cols: u32,
    /// Zero-based row of the cell.
    pub row: u32,
    /// Zero-based column of the cell.
    pub col: u32,
}

/// Longest `wait` an action may ask for: a minute. A model asking for longer (a day, u64::MAX)
/// would stall the pipeline; such an action fails as `invalid_action`.
pub const MAX_WAIT_MS: u64 = 60_000;

/// One action of a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Action {
    pub action: ActionType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_desc: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_bounding_box: Option<BoundingBox>,
    /// Text to type (`input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// A `[ref=N]` of the observation's tree; wins over the bounding box.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub ref_id: Option<u32>,
    /// Raw coordinates for `tap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<[i64; 2]>,
    /// Grid cell for `tap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<GridCell>,
    /// Milliseconds for `wait`, at most [`MAX_WAIT_MS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The signature of the widget the action is meant for, when the decider knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widget: Option<String>,
    /// The screen (its key) the action is meant to be taken on, when it is not the one
    /// observed: a decider walking a known path takes several moves without observing the
    /// screens between.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Action {
    /// An action of the given type with nothing else set.
    pub fn new(action: ActionType) -> Action {
        Action {
            action,
            action_desc: None,
            target_bounding_box: None,
            input_text: None,
            reasoning: None,
            ref_id: None,
            point: None,
            grid: None,
            duration_ms: None,
            widget: None,
            screen: None,
            extra: Extra::new(),
        }
    }
}

/// One request to a model, as kept for `ai_interactions`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AiAttempt {
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long the stage waited after this attempt before the next (backoff or the server's
    /// rate-limit hint); absent on the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// The endpoint asked when the request was not the model call itself: `/api/show`, Ollama's
    /// vision check before the first image. Absent for the model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// What the model behind a decision cost and answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AiMeta {
    pub provider: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Total wall time over all attempts.
    #[serde(default)]
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<u64>,
    /// What the call cost: its tokens at the model's price per million (see `--max-cost`);
    /// absent when the model has no price or the provider reported no tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    #[serde(default)]
    pub retries: u32,
    /// The error of the last attempt when the decision came from a fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<AiAttempt>,
    /// The request body with the image replaced by the screenshot path; never a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
    /// The model's raw text answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `decision`: what to do next, one to twelve actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// `heuristic`, `random`, `gemini`, ... or the name of an external program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decider: Option<String>,
    pub actions: Vec<Action>,
    #[serde(default)]
    pub signup_completed: bool,
    /// Task mode: the model says the task is done.
    #[serde(default)]
    pub done: bool,
    /// The heuristic has explored everything it found once this decision is taken: no state
    /// it tells apart has an action no pass tried, and the last pass over them found nothing
    /// new. A driver ends the run `explored` after acting on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explored: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai: Option<AiMeta>,
    /// After the actions, restart this package (force-stop, then launch): the heuristic's way
    /// back to the app's first state. Empty: the package of the observation decided on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relaunch: Option<String>,
    /// The state of its screen the decision was made in, when the decider's graph holds the
    /// screen in more than one state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Box<ScreenState>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A state of a screen, as the exploration graph tells the states of one screen key apart by
/// what actions did there (docs/screen.md, "States of one key").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ScreenState {
    /// The state's identity among its screen's states: a digest of `shows`.
    pub key: String,
    /// How many states the graph holds the screen in.
    pub states: usize,
    /// What tells the state apart: per slot (an element's class, resource id and place among the
    /// elements alike), what the element there shows (its text, else its description, and
    /// `[checked]`); null where the state has no element in that slot.
    pub shows: std::collections::BTreeMap<String, Option<String>>,
}

impl Decision {
    /// The decision as made now for `step` of run `run_id`.
    pub fn at(self, run_id: Option<String>, step: Option<u64>) -> Decision {
        Decision {
            run_id,
            step,
            ts: Some(now_ts()),
            ..self
        }
    }
    /// Most actions one decision holds.
    pub const MAX_ACTIONS: usize = 12;

    /// Whether the heuristic made this decision because the model failed (see `ai`).
    pub fn is_fallback(&self) -> bool {
        self.decider.as_deref() == Some("heuristic") && self.ai.is_some()
    }

    /// A decision to take `actions`, with nothing else set.
    pub fn new(actions: Vec<Action>) -> Decision {
        Decision {
            run_id: None,
            step: None,
            ts: None,
            decider: None,
            actions,
            signup_completed: false,
            done: false,
            explored: false,
            ai: None,
            relaunch: None,
            state: None,
            extra: Extra::new(),
        }
    }
}

/// Where the executed tap point came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Snapped to an element of the hierarchy.
    Xml,
    /// The model's raw coordinates.
    Llm,
    /// Chosen by the heuristic decider from the hierarchy.
    Heuristic,
    /// Replayed from a recorded run.
    Replay,
}

/// `result`: the outcome of one executed action.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ActionResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// Position of the action in its decision's batch, from 0.
    pub index: u32,
    pub action_type: ActionType,
    /// What was acted on, for people (`Button "Login"`, `(540, 1200)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Widget signature of the element acted on, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_signature: Option<String>,
    pub success: bool,
    #[serde(default)]
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The foreground activity changed.
    #[serde(default)]
    pub navigated_away: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap_point: Option<[i64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity_after: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `note`: anything else worth recording, by `kind`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    pub kind: NoteKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Kind-specific payload (a stack trace, an artifact path, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Note {
    /// A note written now, of no run or step yet (whoever records it stamps them).
    pub fn now(kind: NoteKind, message: impl Into<String>) -> Note {
        Note {
            ts: Some(now_ts()),
            kind,
            message: Some(message.into()),
            ..Note::default()
        }
    }

    /// A note of run `run_id` at `step` (`None` before the first step), written now.
    pub fn at(run_id: &str, step: Option<u64>, kind: NoteKind, message: impl Into<String>) -> Note {
        Note {
            run_id: Some(run_id.to_string()),
            step,
            ..Note::now(kind, message)
        }
    }

    /// The note with `data` as its kind-specific payload.
    pub fn with_data(self, data: Option<Value>) -> Note {
        Note { data, ..self }
    }
}

/// A known event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    RunStarted(RunStarted),
    RunEnded(RunEnded),
    Observation(Box<Observation>),
    Decision(Decision),
    Result(ActionResult),
    Note(Note),
}

/// The `"type"` names of the known events.
pub const EVENT_TYPES: [&str; 6] = [
    "run_started",
    "run_ended",
    "observation",
    "decision",
    "result",
    "note",
];

impl Event {
    /// The `"type"` of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::RunStarted(_) => "run_started",
            Event::RunEnded(_) => "run_ended",
            Event::Observation(_) => "observation",
            Event::Decision(_) => "decision",
            Event::Result(_) => "result",
            Event::Note(_) => "note",
        }
    }

    /// The run this event belongs to, when it says.
    pub fn run_id(&self) -> Option<&str> {
        match self {
            Event::RunStarted(e) => Some(&e.run_id),
            Event::RunEnded(e) => Some(&e.run_id),
            Event::Observation(e) => e.run_id.as_deref(),
            Event::Decision(e) => e.run_id.as_deref(),
            Event::Result(e) => e.run_id.as_deref(),
            Event::Note(e) => e.run_id.as_deref(),
        }
    }

    /// The step this event belongs to, when it says.
    pub fn step(&self) -> Option<u64> {
        match self {
            Event::RunStarted(_) | Event::RunEnded(_) => None,
            Event::Observation(e) => e.step,
            Event::Decision(e) => e.step,
            Event::Result(e) => e.step,
            Event::Note(e) => e.step,
        }
    }
}

/// How a run may end: the `status` of `run_ended`, the only values it accepts.
pub const RUN_END_STATUSES: [&str; 3] = ["COMPLETED", "ERROR", "INTERRUPTED"];
