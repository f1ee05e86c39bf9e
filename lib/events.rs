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

use std::io::{self, BufRead, Write};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ui::UiElement;

/// The wire version written on every line as `"v"`.
pub const WIRE_VERSION: u64 = 1;

/// Longest line a reader accepts (an observation with its raw XML can be large, but not this).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

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

/// Defines a word of the wire vocabulary: an enum of the known values, each with its wire name,
/// and `Other` for any other string, which passes through untouched (a newer producer's word is
/// not an error). Serialised as the plain string.
macro_rules! wire_words {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $wire:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A value this version does not know, kept as it came.
            Other(String),
        }

        impl $name {
            /// Every known value, in the order they are defined.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// The wire name.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $wire,)+
                    $name::Other(other) => other,
                }
            }

            /// The value of a wire name; `Other` for names this version does not know.
            pub fn parse(name: &str) -> $name {
                match name {
                    $($wire => $name::$variant,)+
                    other => $name::Other(other.to_string()),
                }
            }

            /// Whether this is a value this version knows.
            pub fn is_known(&self) -> bool {
                !matches!(self, $name::Other(_))
            }
        }

        impl Default for $name {
            /// The empty word: no value given.
            fn default() -> $name {
                $name::Other(String::new())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(name: &str) -> $name {
                $name::parse(name)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
                Ok($name::parse(&name))
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let known: Vec<&str> = vec![$($wire),+];
                schemars::json_schema!({
                    "type": "string",
                    "description": format!(
                        "One of {}; other values pass through as they are.",
                        known.join(", ")
                    ),
                    "examples": known,
                })
            }
        }
    };
}

wire_words! {
    /// What an action does.
    ActionType {
        Click = "click",
        Input = "input",
        LongPress = "long_press",
        ScrollUp = "scroll_up",
        ScrollDown = "scroll_down",
        SwipeLeft = "swipe_left",
        SwipeRight = "swipe_right",
        Back = "back",
        Wait = "wait",
        Home = "home",
        Recents = "recents",
        Tap = "tap",
        /// Force-stop the app and start it again (a decision's `relaunch`, as droid-act reports it).
        Relaunch = "relaunch",
    }
}

wire_words! {
    /// Why an action failed (a result's `error_kind`).
    ErrorKind {
        /// The target was unusable (a box off the screen, an unknown ref); the batch went on.
        InvalidBbox = "invalid_bbox",
        /// The action itself was unusable (an unknown type, a wait too long, no package to relaunch).
        InvalidAction = "invalid_action",
        /// An earlier action of the batch failed.
        Skipped = "skipped",
        /// The device failed or went away.
        Device = "device",
        /// Text the device cannot type (non-ASCII without the ADB Keyboard).
        UnsupportedText = "unsupported_text",
    }
}

wire_words! {
    /// What a note is about.
    NoteKind {
        /// A change of the driver's state.
        State = "state",
        /// The same screen again and again.
        Stuck = "stuck",
        /// The app crashed (the stack trace in `data`).
        Crash = "crash",
        /// The app stopped responding.
        Anr = "anr",
        /// The device showed another app.
        ContextLoss = "context_loss",
        /// The app was restarted.
        Relaunch = "relaunch",
        /// Files the run left behind and what they measure (video, pcap, MobSF report, the
        /// APK's declared activities): `data.artifact` names the integration, see
        /// docs/integrations.md.
        Artifact = "artifact",
        Warning = "warning",
        /// A model's answer could not be used.
        InvalidResponse = "invalid_response",
        /// A stage stopped.
        Error = "error",
        /// uiautomator failed to dump the hierarchy.
        UiautomatorCrash = "uiautomator_crash",
    }
}

impl ActionType {
    /// The wire names of the actions a decision may hold.
    pub fn decidable_names() -> Vec<&'static str> {
        ActionType::KNOWN
            .iter()
            .filter(|a| a.is_decidable())
            .map(ActionType::as_str)
            .collect()
    }

    /// The actions a decision may hold (a `relaunch` is a decision's field, not one of its
    /// actions).
    pub fn is_decidable(&self) -> bool {
        self.is_known() && *self != ActionType::Relaunch
    }

    /// Scrolls and swipes: what a scrollable container takes.
    pub const GESTURES: [ActionType; 4] = [
        ActionType::ScrollDown,
        ActionType::ScrollUp,
        ActionType::SwipeLeft,
        ActionType::SwipeRight,
    ];

    pub fn is_gesture(&self) -> bool {
        ActionType::GESTURES.contains(self)
    }
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai: Option<AiMeta>,
    /// After the actions, restart this package (force-stop, then launch): the heuristic's way
    /// back to the app's first state. Empty: the package of the observation decided on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relaunch: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
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
            ai: None,
            relaunch: None,
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

    /// The event as a JSON object with `type` and `v` first.
    pub fn to_value(&self) -> Value {
        let body = match self {
            Event::RunStarted(e) => serde_json::to_value(e),
            Event::RunEnded(e) => serde_json::to_value(e),
            Event::Observation(e) => serde_json::to_value(e),
            Event::Decision(e) => serde_json::to_value(e),
            Event::Result(e) => serde_json::to_value(e),
            Event::Note(e) => serde_json::to_value(e),
        };
        // Our types serialise to objects with string keys; failure would be a bug in this file.
        let body = body.expect("event types serialise to JSON");
        let mut object = Map::new();
        object.insert("type".into(), Value::from(self.type_name()));
        object.insert("v".into(), Value::from(WIRE_VERSION));
        if let Value::Object(fields) = body {
            for (key, value) in fields {
                if key != "type" && key != "v" {
                    object.insert(key, value);
                }
            }
        }
        Value::Object(object)
    }

    /// The event as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        self.to_value().to_string()
    }

    /// Decodes one line. `Ok(None)` for a well-formed line of a type this version does not know.
    pub fn from_line(line: &str) -> Result<Option<Event>, LineError> {
        // Fast path: a valid line of a known type decodes straight into its struct, without an
        // intermediate `Value` tree. Anything else (bad JSON, a bad envelope, wrong fields)
        // takes the `Value` path below, which alone decides what is an error and how it reads.
        if let Some(event) = Event::decode_direct(line) {
            return Ok(Some(event));
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| LineError::Json(e.to_string()))?;
        Event::from_value(value)
    }

    /// Decodes a line of a known type with `"v": 1` directly; `None` when the line is anything
    /// else or does not decode.
    ///
    /// The type is guessed from the line's start (`{"type":"…"`, as [`Event::to_line`] writes
    /// it) or else read with a small envelope; either way the body decodes with `type` and `v`
    /// in its `extra`, and they are checked there: a duplicate key (last one wins, as in the
    /// `Value` path) cannot make a guess wrong.
    fn decode_direct(line: &str) -> Option<Event> {
        // Only objects: a JSON array would fill the envelope's fields by position.
        if !line.trim_start().starts_with('{') {
            return None;
        }
        let guessed = line
            .strip_prefix("{\"type\":\"")
            .and_then(|rest| rest.split_once('"'))
            .map(|(kind, _)| kind)
            .filter(|kind| !kind.contains('\\'));
        let kind = match guessed {
            Some(kind) => kind,
            None => serde_json::from_str::<Envelope>(line).ok()?.kind?,
        };
        Some(match kind {
            "run_started" => {
                Event::RunStarted(body_of(line, kind, |e: &mut RunStarted| &mut e.extra)?)
            }
            "run_ended" => Event::RunEnded(body_of(line, kind, |e: &mut RunEnded| &mut e.extra)?),
            "observation" => {
                Event::Observation(Box::new(body_of(line, kind, |e: &mut Observation| {
                    &mut e.extra
                })?))
            }
            "decision" => Event::Decision(body_of(line, kind, |e: &mut Decision| &mut e.extra)?),
            "result" => Event::Result(body_of(line, kind, |e: &mut ActionResult| &mut e.extra)?),
            "note" => Event::Note(body_of(line, kind, |e: &mut Note| &mut e.extra)?),
            _ => return None,
        })
    }

    /// Decodes a parsed line; `Ok(None)` for an unknown type.
    pub fn from_value(value: Value) -> Result<Option<Event>, LineError> {
        let Value::Object(mut object) = value else {
            return Err(LineError::NotAnObject);
        };
        // `shift_remove` keeps the order of the remaining (unknown) fields, as written back.
        let kind = match object.shift_remove("type") {
            Some(Value::String(kind)) => kind,
            Some(_) => return Err(LineError::TypeNotString),
            None => return Err(LineError::MissingType),
        };
        match object.shift_remove("v") {
            Some(Value::Number(n)) if n.as_u64() == Some(WIRE_VERSION) => {}
            Some(other) => return Err(LineError::Version(other.to_string())),
            None => return Err(LineError::MissingVersion),
        }
        let body = Value::Object(object);
        let event = match kind.as_str() {
            "run_started" => Event::RunStarted(decode(&kind, body)?),
            "run_ended" => Event::RunEnded(decode(&kind, body)?),
            "observation" => Event::Observation(Box::new(decode(&kind, body)?)),
            "decision" => Event::Decision(decode(&kind, body)?),
            "result" => Event::Result(decode(&kind, body)?),
            "note" => Event::Note(decode(&kind, body)?),
            _ => return Ok(None),
        };
        Ok(Some(event))
    }

    /// The event, when the values serde cannot judge are valid: run ids (see
    /// [`check_run_id`]), a `run_ended` status (one of [`RUN_END_STATUSES`]) and a decision of
    /// 1 to [`Decision::MAX_ACTIONS`] actions. Stages check what they read ([`EventReader`]);
    /// what a store recorded before is read back as it is.
    pub fn checked(self) -> Result<Event, LineError> {
        let invalid = |reason: String| LineError::Fields {
            kind: self.type_name().to_string(),
            reason,
        };
        if let Some(run) = self.run_id() {
            check_run_id(run).map_err(|e| invalid(e.to_string()))?;
        }
        if let Event::RunEnded(ended) = &self {
            if !RUN_END_STATUSES.contains(&ended.status.as_str()) {
                return Err(invalid(format!(
                    "status {:?} is not one of {}",
                    ended.status,
                    RUN_END_STATUSES.join(", ")
                )));
            }
        }
        if let Event::Decision(decision) = &self {
            let count = decision.actions.len();
            if !(1..=Decision::MAX_ACTIONS).contains(&count) {
                return Err(LineError::Fields {
                    kind: "decision".into(),
                    reason: format!(
                        "{count} actions (a decision holds 1 to {})",
                        Decision::MAX_ACTIONS
                    ),
                });
            }
        }
        Ok(self)
    }
}

/// How a run may end: the `status` of `run_ended`, the only values it accepts.
pub const RUN_END_STATUSES: [&str; 3] = ["COMPLETED", "ERROR", "INTERRUPTED"];

/// Longest run id accepted.
pub const MAX_RUN_ID_CHARS: usize = 128;

/// Why a run id is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunIdError {
    #[error("empty run_id")]
    Empty,
    #[error("run_id longer than {MAX_RUN_ID_CHARS} characters")]
    TooLong,
    #[error("run_id {0:?} has a character other than ASCII letters, digits, '-', '_', '.', ':'")]
    Character(String),
    #[error("run_id {0:?} starts with '.' or holds \"..\"")]
    Dots(String),
}

/// Checks a run id wherever one enters (events, command lines): 1 to [`MAX_RUN_ID_CHARS`]
/// ASCII letters, digits, `-`, `_`, `.`, `:`, not starting with `.` and without `..`, so it can
/// name a file or folder without ever reaching outside it.
pub fn check_run_id(run: &str) -> Result<(), RunIdError> {
    let shown = || run.chars().take(40).collect::<String>();
    if run.is_empty() {
        return Err(RunIdError::Empty);
    }
    if run.len() > MAX_RUN_ID_CHARS {
        return Err(RunIdError::TooLong);
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':');
    if !run.chars().all(allowed) {
        return Err(RunIdError::Character(shown()));
    }
    if run.starts_with('.') || run.contains("..") {
        return Err(RunIdError::Dots(shown()));
    }
    Ok(())
}

/// A new run id, `run-20261125T181502-3fa9c1`: sortable by time, unique enough for one machine.
pub fn new_run_id() -> String {
    format!(
        "run-{}-{:06x}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S"),
        rand::random::<u32>() & 0xff_ffff
    )
}

/// [`check_run_id`] as a command-line value parser: the run id, or why it is refused.
pub fn parse_run_id(run: &str) -> Result<String, RunIdError> {
    check_run_id(run).map(|()| run.to_string())
}

/// A line's `type`, read without building the rest (other fields are skipped).
#[derive(Deserialize)]
struct Envelope<'a> {
    /// Borrowed: a type name with escapes in it fails here and takes the `Value` path.
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a str>,
}

/// A known type's fields straight from its line; `type` and `v` land in `extra`, must say
/// `kind` and [`WIRE_VERSION`], and are taken out again (`shift_remove` keeps the order of the
/// fields that remain).
fn body_of<T: DeserializeOwned>(
    line: &str,
    kind: &str,
    extra: impl FnOnce(&mut T) -> &mut Extra,
) -> Option<T> {
    let mut body: T = serde_json::from_str(line).ok()?;
    let extra = extra(&mut body);
    let Some(Value::String(said)) = extra.shift_remove("type") else {
        return None;
    };
    let Some(Value::Number(version)) = extra.shift_remove("v") else {
        return None;
    };
    (said == kind && version.as_u64() == Some(WIRE_VERSION)).then_some(body)
}

fn decode<T: DeserializeOwned>(kind: &str, body: Value) -> Result<T, LineError> {
    serde_json::from_value(body).map_err(|e| LineError::Fields {
        kind: kind.to_string(),
        reason: e.to_string(),
    })
}

/// Why one line is not a valid event.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("not a JSON object")]
    NotAnObject,
    #[error("no \"type\" field")]
    MissingType,
    #[error("\"type\" is not a string")]
    TypeNotString,
    #[error("no \"v\" field (expected \"v\": {WIRE_VERSION})")]
    MissingVersion,
    #[error("unsupported version \"v\": {0} (this droid speaks {WIRE_VERSION})")]
    Version(String),
    #[error("{kind}: {reason}")]
    Fields { kind: String, reason: String },
    #[error("line longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("not UTF-8")]
    NotUtf8,
}

/// Reading the stream failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// One line is bad; the reader can go on with the next.
    #[error("line {line}: {reason}")]
    Line { line: u64, reason: LineError },
    /// The input itself failed; nothing more can be read.
    #[error("reading input")]
    Io(#[from] io::Error),
}

/// One line of the stream, decoded.
#[derive(Debug, Clone)]
pub struct Line {
    /// 1-based line number in the input.
    pub number: u64,
    /// The line as it arrived, without its newline.
    pub raw: String,
    /// The decoded event; `None` for a type this version does not know.
    pub event: Option<Event>,
}

/// Reads event lines one at a time, bounded in length, never panicking.
///
/// Blank lines are skipped. A bad line yields [`ReadError::Line`] with its number, and reading
/// goes on with the next line.
pub struct EventReader<R> {
    input: R,
    line: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> EventReader<R> {
    pub fn new(input: R) -> Self {
        EventReader {
            input,
            line: 0,
            buf: Vec::new(),
        }
    }

    /// Reads one raw line into `buf`; `Ok(false)` at end of input. Over-long lines are consumed
    /// to their end and reported, without keeping more than the limit in memory.
    fn read_raw(&mut self) -> Result<Option<Result<(), LineError>>, io::Error> {
        self.buf.clear();
        let mut too_long = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if self.buf.is_empty() && !too_long {
                    return Ok(None);
                }
                break;
            }
            let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
                Some(end) => (&available[..end], true),
                None => (available, false),
            };
            if !too_long && self.buf.len() + chunk.len() <= MAX_LINE_BYTES {
                self.buf.extend_from_slice(chunk);
            } else {
                too_long = true;
                self.buf.clear();
            }
            let consumed = chunk.len() + usize::from(done);
            self.input.consume(consumed);
            if done {
                break;
            }
        }
        self.line += 1;
        if too_long {
            return Ok(Some(Err(LineError::TooLong)));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(Ok(())))
    }
}

impl<R: BufRead> EventReader<R> {
    /// Reads the next line without decoding it (blank lines included), so the caller can
    /// decode it elsewhere with [`RawLine::decode`]; `None` at end of input.
    pub fn next_raw(&mut self) -> Option<io::Result<RawLine>> {
        let outcome = match self.read_raw() {
            Ok(None) => return None,
            Ok(Some(outcome)) => outcome,
            Err(e) => return Some(Err(e)),
        };
        // A copy of exactly the line's size; `buf` keeps its capacity for the next line.
        let bytes = outcome.map(|()| self.buf.clone());
        Some(Ok(RawLine {
            number: self.line,
            bytes,
        }))
    }
}

/// One line as read, not decoded yet.
#[derive(Debug)]
pub struct RawLine {
    number: u64,
    bytes: Result<Vec<u8>, LineError>,
}

impl RawLine {
    /// A line read elsewhere (without its newline), numbered `number`; over
    /// [`MAX_LINE_BYTES`] it is a bad line.
    pub fn new(number: u64, bytes: Vec<u8>) -> RawLine {
        let bytes = match bytes.len() > MAX_LINE_BYTES {
            true => Err(LineError::TooLong),
            false => Ok(bytes),
        };
        RawLine { number, bytes }
    }

    /// How many bytes of the line are held (none for a line already known to be bad).
    pub fn size(&self) -> usize {
        self.bytes.as_ref().map_or(0, Vec::len)
    }

    /// Decodes the line; `None` for a blank line, which is skipped.
    pub fn decode(self) -> Option<Result<Line, ReadError>> {
        let number = self.number;
        let bad = |reason| {
            Some(Err(ReadError::Line {
                line: number,
                reason,
            }))
        };
        let bytes = match self.bytes {
            Ok(bytes) => bytes,
            Err(reason) => return bad(reason),
        };
        let Ok(raw) = String::from_utf8(bytes) else {
            return bad(LineError::NotUtf8);
        };
        if raw.trim().is_empty() {
            return None;
        }
        match Event::from_line(&raw).and_then(|event| event.map(Event::checked).transpose()) {
            Ok(event) => Some(Ok(Line { number, raw, event })),
            Err(reason) => bad(reason),
        }
    }
}

impl<R: BufRead> Iterator for EventReader<R> {
    type Item = Result<Line, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let raw = match self.next_raw()? {
                Ok(raw) => raw,
                Err(e) => return Some(Err(ReadError::Io(e))),
            };
            if let Some(item) = raw.decode() {
                return Some(item);
            }
        }
    }
}

/// Writes event lines, flushing after each so a co-process stage never waits on a buffer.
pub struct EventWriter<W> {
    output: W,
}

impl<W: Write> EventWriter<W> {
    pub fn new(output: W) -> Self {
        EventWriter { output }
    }

    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        self.write_raw(&event.to_line())
    }

    /// Writes a line exactly as given (pass-through), adding the newline.
    pub fn write_raw(&mut self, line: &str) -> io::Result<()> {
        self.output.write_all(line.as_bytes())?;
        self.output.write_all(b"\n")?;
        self.output.flush()
    }

    /// Writes any JSON value as one line (standalone outputs such as `{"phash": ...}`).
    pub fn write_value(&mut self, value: &Value) -> io::Result<()> {
        self.write_raw(&value.to_string())
    }

    pub fn into_inner(self) -> W {
        self.output
    }
}

/// The JSON Schema of every line type, generated from the types above (`docs/events.schema.json`).
pub fn json_schema() -> Value {
    let mut variants = Vec::new();
    let mut definitions = Map::new();
    for kind in EVENT_TYPES {
        let schema = match kind {
            "run_started" => schemars::schema_for!(RunStarted),
            "run_ended" => schemars::schema_for!(RunEnded),
            "observation" => schemars::schema_for!(Observation),
            "decision" => schemars::schema_for!(Decision),
            "result" => schemars::schema_for!(ActionResult),
            _ => schemars::schema_for!(Note),
        };
        let mut schema = schema.to_value();
        if let Some(object) = schema.as_object_mut() {
            object.remove("$schema");
            if let Some(Value::Object(defs)) = object.remove("$defs") {
                definitions.extend(defs);
            }
            let properties = object
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(properties) = properties.as_object_mut() {
                properties.insert("type".into(), serde_json::json!({ "const": kind }));
                properties.insert("v".into(), serde_json::json!({ "const": WIRE_VERSION }));
            }
            let required = object
                .entry("required")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Some(required) = required.as_array_mut() {
                required.insert(0, Value::from("v"));
                required.insert(0, Value::from("type"));
            }
        }
        variants.push(schema);
    }
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "droid event line",
        "description": "One line of droid's event stream (wire version 1). Generated from lib/events.rs; do not edit by hand.",
        "oneOf": variants,
        "$defs": definitions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one line of `input` as a stage reads it.
    fn read_one(input: &str) -> Result<Line, String> {
        read_all(input).remove(0)
    }

    fn read_all(input: &str) -> Vec<Result<Line, String>> {
        EventReader::new(input.as_bytes())
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
    }

    #[test]
    fn run_ids_that_could_name_a_path_are_refused_in_every_event() {
        for bad in [
            "",
            "../../etc",
            "a/b",
            "a\\b",
            ".hidden",
            "x..y",
            "a b",
            "é",
        ] {
            assert!(check_run_id(bad).is_err(), "{bad:?}");
            for kind in ["run_started", "observation", "decision", "note"] {
                let line = serde_json::json!({"type": kind, "v": 1, "run_id": bad, "kind": "k",
                    "actions": []});
                // Both decoding paths: the direct one and the Value one (a reordered line).
                let reordered = format!(
                    r#"{{"v":1,"run_id":{},"type":"{kind}","kind":"k","actions":[]}}"#,
                    serde_json::to_string(bad).unwrap()
                );
                for line in [line.to_string(), reordered] {
                    let err = read_one(&line).unwrap_err();
                    assert!(err.contains("run_id"), "{line}: {err}");
                }
            }
        }
        assert!(check_run_id(&"r".repeat(MAX_RUN_ID_CHARS + 1)).is_err());
        for good in ["r", "run-20260101T120000-abc123", "emulator-5554_x.y:1"] {
            assert_eq!(check_run_id(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn run_ended_takes_only_the_documented_statuses() {
        for status in RUN_END_STATUSES {
            let line = format!(r#"{{"type":"run_ended","v":1,"run_id":"r","status":"{status}"}}"#);
            assert!(read_one(&line).is_ok(), "{line}");
        }
        for status in ["", "DONE", "completed", "RUNNING"] {
            let line = format!(r#"{{"type":"run_ended","v":1,"run_id":"r","status":"{status}"}}"#);
            let err = read_one(&line).unwrap_err();
            assert!(
                err.contains("is not one of COMPLETED, ERROR, INTERRUPTED"),
                "{err}"
            );
        }
        let empty_run = r#"{"type":"run_ended","v":1,"run_id":"","status":"ERROR"}"#;
        assert!(read_one(empty_run).unwrap_err().contains("empty run_id"));
    }

    #[test]
    fn round_trips_every_type_with_type_and_version_first() {
        let note = Event::Note(Note {
            run_id: Some("r1".into()),
            kind: "warning".into(),
            message: Some("hi".into()),
            ..Note::default()
        });
        let line = note.to_line();
        assert!(line.starts_with(r#"{"type":"note","v":1,"#), "{line}");
        assert_eq!(Event::from_line(&line).unwrap(), Some(note));
    }

    #[test]
    fn keeps_unknown_fields_of_known_types() {
        let line = r#"{"type":"note","v":1,"kind":"x","custom":{"a":[1,2]}}"#;
        let event = Event::from_line(line).unwrap().unwrap();
        assert_eq!(event.to_line(), line);
    }

    #[test]
    fn unknown_fields_keep_their_order() {
        let line = r#"{"type":"result","v":1,"z":1,"index":0,"action_type":"click","b":[2],"success":true,"a":{"c":3}}"#;
        let event = Event::from_line(line).unwrap().unwrap();
        let Event::Result(result) = &event else {
            panic!("{event:?}")
        };
        let keys: Vec<&str> = result.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, ["z", "b", "a"]);
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(Event::from_value(value).unwrap().unwrap(), event);
    }

    #[test]
    fn the_direct_decode_agrees_with_the_value_path() {
        let observation = Event::Observation(Box::new(Observation {
            run_id: Some("r".into()),
            step: Some(3),
            activity: Some("A".into()),
            elements: vec![UiElement {
                text: "Log \"in\" ✓".into(),
                ref_id: Some(2),
                ..UiElement::default()
            }],
            timings: [("dump".to_string(), Value::from(12.5))]
                .into_iter()
                .collect(),
            ..Observation::default()
        }));
        let mut line = observation.to_line();
        line.insert_str(line.len() - 1, r#","custom":{"k":[1,-2,3.5,null]}"#);
        let direct = Event::decode_direct(&line).unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(Some(direct), Event::from_value(value).unwrap());
        // Whatever the direct decode does not take goes the `Value` way, errors included.
        assert_eq!(Event::decode_direct(r#"["note",1]"#), None);
        assert_eq!(
            Event::from_line(r#"["note",1]"#),
            Err(LineError::NotAnObject)
        );
        assert_eq!(Event::decode_direct(r#"{"type":"mine","v":1}"#), None);
        let twice = r#"{"type":"note","v":1,"kind":"k","type":"mine"}"#;
        assert_eq!(Event::from_line(twice), Ok(None), "the last \"type\" wins");
        assert_eq!(
            Event::from_line(r#"{"type":"not\u0065","v":1,"kind":"k"}"#)
                .unwrap()
                .map(|e| e.type_name()),
            Some("note")
        );
        assert_eq!(
            Event::from_line(r#"{"type":"note","v":1.0,"kind":"k"}"#),
            Err(LineError::Version("1.0".into()))
        );
    }

    #[test]
    fn unknown_types_pass_as_raw_lines() {
        let input = "{\"type\":\"mine\",\"v\":1,  \"x\":1}\n";
        let lines = read_all(input);
        let line = lines[0].as_ref().unwrap();
        assert!(line.event.is_none());
        assert_eq!(line.raw, "{\"type\":\"mine\",\"v\":1,  \"x\":1}");
    }

    #[test]
    fn bad_lines_name_their_number_and_reading_goes_on() {
        let input = "{\"type\":\"note\",\"v\":1,\"kind\":\"a\"}\nnot json\n\n{\"type\":\"decision\",\"v\":1}\n{\"type\":\"note\",\"kind\":\"b\"}\n{\"type\":\"note\",\"v\":2,\"kind\":\"b\"}\n[1]\n{\"type\":\"note\",\"v\":1,\"kind\":\"c\"}";
        let lines = read_all(input);
        assert_eq!(lines.len(), 7);
        assert!(lines[0].is_ok());
        assert!(lines[1]
            .as_ref()
            .unwrap_err()
            .starts_with("line 2: not valid JSON"));
        let missing = lines[2].as_ref().unwrap_err();
        assert!(
            missing.starts_with("line 4: decision: missing field `actions`"),
            "{missing}"
        );
        assert!(lines[3].as_ref().unwrap_err().contains("line 5: no \"v\""));
        assert!(lines[4]
            .as_ref()
            .unwrap_err()
            .contains("line 6: unsupported version"));
        assert!(lines[5]
            .as_ref()
            .unwrap_err()
            .contains("line 7: not a JSON object"));
        assert_eq!(lines[6].as_ref().unwrap().number, 8);
    }

    #[test]
    fn a_decision_holds_one_to_twelve_actions() {
        let click = r#"{"action":"click","ref":1}"#;
        let decision = |n: usize| {
            let actions = vec![click; n].join(",");
            format!(r#"{{"type":"decision","v":1,"actions":[{actions}]}}"#)
        };
        for n in [1, Decision::MAX_ACTIONS] {
            assert!(read_all(&decision(n))[0].is_ok(), "{n}");
        }
        for n in [0, Decision::MAX_ACTIONS + 1, 1000] {
            let read = read_all(&format!("{}\n", decision(n)));
            let err = read[0].as_ref().unwrap_err();
            assert_eq!(
                err,
                &format!("line 1: decision: {n} actions (a decision holds 1 to 12)")
            );
        }
    }

    #[test]
    fn unknown_words_pass_through_untouched() {
        let line = r#"{"type":"result","v":1,"index":0,"action_type":"pinch","success":false,"duration_ms":0,"error_kind":"thermal","navigated_away":false}"#;
        let event = Event::from_line(line).unwrap().unwrap();
        let Event::Result(result) = &event else {
            panic!("{event:?}")
        };
        assert_eq!(result.action_type, ActionType::Other("pinch".into()));
        assert_eq!(result.error_kind, Some(ErrorKind::Other("thermal".into())));
        assert_eq!(event.to_line(), line);
        let note = r#"{"type":"note","v":1,"kind":"battery_low"}"#;
        assert_eq!(Event::from_line(note).unwrap().unwrap().to_line(), note);
        assert_eq!(NoteKind::parse("crash"), NoteKind::Crash);
    }

    #[test]
    fn wrong_field_types_are_errors_not_drops() {
        let input =
            r#"{"type":"result","v":1,"index":"zero","action_type":"click","success":true}"#;
        let err = read_all(input)[0].as_ref().unwrap_err().clone();
        assert!(err.starts_with("line 1: result: invalid type"), "{err}");
    }

    #[test]
    fn invalid_utf8_and_crlf() {
        let mut input = b"\xff\xfe\n".to_vec();
        input.extend_from_slice(b"{\"type\":\"note\",\"v\":1,\"kind\":\"a\"}\r\n");
        let lines: Vec<_> = EventReader::new(&input[..]).collect();
        assert!(lines[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("not UTF-8"));
        assert!(lines[1].as_ref().unwrap().event.is_some());
    }

    #[test]
    fn action_names_round_trip() {
        for action in ActionType::KNOWN {
            assert_eq!(&ActionType::parse(action.as_str()), action);
            let json = serde_json::to_value(action).unwrap();
            assert_eq!(json, Value::from(action.as_str()));
        }
        let fly = ActionType::parse("fly");
        assert_eq!(fly, ActionType::Other("fly".into()));
        assert_eq!(serde_json::to_value(&fly).unwrap(), Value::from("fly"));
        assert!(!fly.is_known() && !ActionType::Relaunch.is_decidable());
        assert!(!ActionType::decidable_names().contains(&"relaunch"));
    }

    #[test]
    fn writer_flushes_each_line() {
        let mut writer = EventWriter::new(Vec::new());
        writer.write_raw("{}").unwrap();
        writer
            .write(&Event::Note(Note {
                kind: "k".into(),
                ..Note::default()
            }))
            .unwrap();
        let out = String::from_utf8(writer.into_inner()).unwrap();
        assert_eq!(out, "{}\n{\"type\":\"note\",\"v\":1,\"kind\":\"k\"}\n");
    }
}
