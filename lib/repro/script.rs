//! What a replay takes again: the actions a run carried out, read from its events.
//!
//! Each successful `result` of the run is one step, with the `decision` action it executed, the
//! screen it was taken on (the action's `screen`, else the key of the step's `observation`),
//! the element it resolved to (found in that observation by the result's `target_signature`)
//! and the point the device was touched. A decision's `relaunch` is a step of its own. Crash
//! and ANR notes are kept with the steps they list (`repro_steps`), so one failure's steps can
//! be taken alone.
//!
//! The same reader takes a whole run (`droid-record export RUN`, or the run in crawler.db), a
//! crash's steps, and the events file a minimisation exports: they are all events of a run.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::events::{Action, ActionResult, ActionType, Decision, Event, NoteKind, Observation};
use crate::screen::ScreenKey;
use crate::ui::UiElement;

/// A crash or an ANR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    Crash,
    Anr,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Crash => "crash",
            FailureKind::Anr => "anr",
        }
    }

    pub fn parse(name: &str) -> Option<FailureKind> {
        match name {
            "crash" => Some(FailureKind::Crash),
            "anr" => Some(FailureKind::Anr),
            _ => None,
        }
    }
}

/// What a replay watches for: one bug, by its kind and signature.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FailureId {
    pub kind: FailureKind,
    pub signature: String,
}

/// A crash or an ANR recorded in the run.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedFailure {
    pub id: FailureId,
    /// The note's step.
    pub step: Option<u64>,
    /// `IllegalStateException: cache directory is locked`, `ANR: Input dispatching timed out`.
    pub title: String,
    /// The exception class (crashes).
    pub exception: Option<String>,
    /// The steps since the app's last launch (`repro_steps`' step numbers, in order).
    pub repro_steps: Vec<u64>,
}

/// Whether a step acts on the app or restarts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    Act,
    /// Force-stop and launch the app (a decision's `relaunch`).
    Relaunch,
}

/// One action as the run carried it out.
#[derive(Debug, Clone)]
pub struct Step {
    /// The run's step and the action's place in its decision.
    pub step: u64,
    pub index: u32,
    pub kind: StepKind,
    /// The action as decided.
    pub action: Action,
    /// The screen it was taken on: the one observed for a decision's first action, else the
    /// one the decider meant it for (the action's `screen`; the observed one when it names
    /// none).
    pub screen: Option<ScreenKey>,
    /// The screen was observed right before the action (a decision's first action): a replay
    /// following the recording checks it.
    pub observed: bool,
    /// The element it resolved to, as the observation showed it (when the action was taken on
    /// the observed screen and resolved to an element).
    pub element: Option<UiElement>,
    /// The widget signature of what it acted on.
    pub signature: Option<String>,
    /// Where the device was touched.
    pub point: Option<(i32, i32)>,
    /// For people: `click Button "Settings"`.
    pub description: String,
    /// What was recorded: the step's observation, its decision, the action's result.
    pub observation: Option<Arc<Observation>>,
    pub decision: Arc<Decision>,
    pub result: ActionResult,
}

impl Step {
    /// The element's text to type (`input`), as decided (the test password as its
    /// placeholder).
    pub fn text(&self) -> Option<&str> {
        self.action.input_text.as_deref()
    }

    /// Whether the action needs something on the screen to act on.
    pub fn has_target(&self) -> bool {
        matches!(
            self.action.action,
            ActionType::Click | ActionType::Input | ActionType::LongPress | ActionType::Tap
        )
    }
}

/// A run's steps and its crashes and ANRs.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// The run the events came from.
    pub run_id: Option<String>,
    /// The app (`run_started`'s package, else the first observation's).
    pub package: Option<String>,
    pub steps: Vec<Step>,
    pub failures: Vec<RecordedFailure>,
}

/// Why events are no script.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    #[error("no crash or ANR with signature {0} in the run")]
    NoSuchFailure(String),
}

impl Script {
    /// The steps and failures of a run's events, in order. Events of other types and results
    /// that failed are left out (a failed action was not carried out).
    pub fn from_events(events: impl IntoIterator<Item = Event>) -> Script {
        let mut script = Script::default();
        let mut observations: HashMap<u64, Arc<Observation>> = HashMap::new();
        let mut decisions: HashMap<u64, Arc<Decision>> = HashMap::new();
        for event in events {
            match event {
                Event::RunStarted(started) => {
                    script.run_id.get_or_insert(started.run_id);
                    if started.package.is_some() {
                        script.package = started.package;
                    }
                }
                Event::Observation(observation) => {
                    if script.package.is_none() {
                        script.package.clone_from(&observation.package);
                    }
                    script.run_id = script.run_id.take().or(observation.run_id.clone());
                    let step = observation.step.unwrap_or(0);
                    observations.insert(step, Arc::new(*observation));
                }
                Event::Decision(decision) => {
                    let step = decision.step.unwrap_or(0);
                    decisions.insert(step, Arc::new(decision));
                }
                Event::Result(result) if result.success => {
                    let step = result.step.unwrap_or(0);
                    let Some(decision) = decisions.get(&step) else {
                        continue;
                    };
                    let observation = observations.get(&step).cloned();
                    if let Some(step) = Step::of(decision, observation, result) {
                        script.steps.push(step);
                    }
                }
                Event::Note(note) => {
                    let Some(kind) = FailureKind::parse(note.kind.as_str()) else {
                        continue;
                    };
                    if !matches!(note.kind, NoteKind::Crash | NoteKind::Anr) {
                        continue;
                    }
                    let data = note.data.unwrap_or_default();
                    let text = |field: &str| data[field].as_str().unwrap_or_default().to_string();
                    let signature = text("signature");
                    if signature.is_empty() {
                        continue;
                    }
                    let repro_steps = data["repro_steps"]
                        .as_array()
                        .map(|steps| steps.iter().filter_map(|s| s["step"].as_u64()).collect())
                        .unwrap_or_default();
                    let exception = Some(text("exception")).filter(|e| !e.is_empty());
                    script.failures.push(RecordedFailure {
                        id: FailureId { kind, signature },
                        step: note.step,
                        title: note.message.unwrap_or_default(),
                        exception,
                        repro_steps,
                    });
                }
                _ => {}
            }
        }
        script
    }

    /// The distinct failures of the run, each with the occurrence reached in the fewest steps
    /// (the first of those), in the order they were first met.
    pub fn distinct_failures(&self) -> Vec<&RecordedFailure> {
        let mut best: Vec<&RecordedFailure> = Vec::new();
        for failure in &self.failures {
            match best.iter_mut().find(|f| f.id == failure.id) {
                Some(kept) if failure.repro_steps.len() < kept.repro_steps.len() => *kept = failure,
                Some(_) => {}
                None => best.push(failure),
            }
        }
        best
    }

    /// The failure of this signature (its occurrence reached in the fewest steps).
    pub fn failure(&self, signature: &str) -> Result<&RecordedFailure, ScriptError> {
        self.distinct_failures()
            .into_iter()
            .find(|f| f.id.signature == signature)
            .ok_or_else(|| ScriptError::NoSuchFailure(signature.to_string()))
    }

    /// The steps that led to `failure`: every action carried out since the app's last launch
    /// (the steps its `repro_steps` list), as indices into [`Script::steps`].
    pub fn steps_to(&self, failure: &RecordedFailure) -> Vec<usize> {
        let listed: BTreeSet<u64> = failure.repro_steps.iter().copied().collect();
        self.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind == StepKind::Act && listed.contains(&s.step))
            .map(|(i, _)| i)
            .collect()
    }

    /// Every step, in order.
    pub fn all(&self) -> Vec<usize> {
        (0..self.steps.len()).collect()
    }

    /// The recorded events of the steps `picks` (indices into [`Script::steps`], in order):
    /// each step's observation once, its decision with the picked actions only, and their
    /// results, renumbered within the decision. What `droid-crawl replay --events` takes.
    pub fn events_of(&self, picks: &[usize]) -> Vec<Event> {
        let mut events = Vec::new();
        let mut i = 0;
        while i < picks.len() {
            let first = &self.steps[picks[i]];
            let mut group = vec![first];
            while let Some(next) = picks.get(i + group.len()).map(|&p| &self.steps[p]) {
                match next.step == first.step && Arc::ptr_eq(&next.decision, &first.decision) {
                    true => group.push(next),
                    false => break,
                }
            }
            i += group.len();
            if let Some(observation) = &first.observation {
                let mut observation = (**observation).clone();
                // The dump and the tree are for people and models; the elements hold what a
                // replay needs.
                observation.xml = None;
                observation.tree = None;
                events.push(Event::Observation(Box::new(observation)));
            }
            let actions: Vec<Action> = group
                .iter()
                .filter(|s| s.kind == StepKind::Act)
                .map(|s| s.action.clone())
                .collect();
            let relaunch = group
                .iter()
                .any(|s| s.kind == StepKind::Relaunch)
                .then(|| first.decision.relaunch.clone().unwrap_or_default());
            let decision = Decision {
                actions,
                relaunch,
                ai: None,
                ..(*first.decision).clone()
            };
            let count = decision.actions.len();
            events.push(Event::Decision(decision));
            let mut acted = 0;
            for step in &group {
                let index = match step.kind {
                    StepKind::Act => {
                        acted += 1;
                        acted - 1
                    }
                    StepKind::Relaunch => count,
                };
                events.push(Event::Result(ActionResult {
                    index: index as u32,
                    ..step.result.clone()
                }));
            }
        }
        events
    }
}

impl Step {
    /// The step a successful result records, with its decision action and the observation
    /// decided on; `None` for a result that matches no action.
    fn of(
        decision: &Arc<Decision>,
        observation: Option<Arc<Observation>>,
        result: ActionResult,
    ) -> Option<Step> {
        let index = result.index as usize;
        let (kind, action) = match decision.actions.get(index) {
            Some(action) => (StepKind::Act, action.clone()),
            None if result.action_type == ActionType::Relaunch => {
                (StepKind::Relaunch, Action::new(ActionType::Relaunch))
            }
            None => return None,
        };
        let observed = observation.as_deref().map(observed_key);
        let screen = action
            .screen
            .clone()
            .map(ScreenKey::from_stored)
            .or_else(|| observed.clone());
        let on_observed = observed.is_some() && screen == observed;
        let element = observation
            .as_deref()
            .filter(|_| on_observed)
            .and_then(|o| acted_on(o, &action, &result))
            .cloned();
        let signature = result
            .target_signature
            .clone()
            .or_else(|| action.widget.clone())
            .or_else(|| element.as_ref().map(|e| e.signature.clone()))
            .filter(|s| !s.is_empty());
        let point = result
            .tap_point
            .and_then(|[x, y]| Some((i32::try_from(x).ok()?, i32::try_from(y).ok()?)));
        let description = match kind {
            StepKind::Relaunch => {
                format!("relaunch {}", result.target.as_deref().unwrap_or("the app"))
            }
            StepKind::Act => action
                .action_desc
                .clone()
                .unwrap_or_else(|| match &result.target {
                    Some(target) => format!("{} {target}", action.action),
                    None => action.action.to_string(),
                }),
        };
        Some(Step {
            step: result.step.unwrap_or(0),
            index: result.index,
            kind,
            observed: index == 0 && on_observed,
            action,
            screen,
            element,
            signature,
            point,
            description,
            observation,
            decision: Arc::clone(decision),
            result,
        })
    }
}

/// The screen key an observation carries (droid-hash's), else the one computed from it.
pub fn observed_key(observation: &Observation) -> ScreenKey {
    observation
        .hash
        .as_ref()
        .and_then(|h| h.screen_key.clone())
        .map(ScreenKey::from_stored)
        .unwrap_or_else(|| ScreenKey::of(observation))
}

/// The element an action resolved to in the observation it was decided on: by the result's
/// signature, else the action's ref, else the smallest element under the touched point.
fn acted_on<'o>(
    observation: &'o Observation,
    action: &Action,
    result: &ActionResult,
) -> Option<&'o UiElement> {
    let elements = &observation.elements;
    if let Some(signature) = result.target_signature.as_deref().filter(|s| !s.is_empty()) {
        let found = match result.tap_point {
            // Two widgets may share a signature (a list's rows): the one touched.
            Some([x, y]) => elements
                .iter()
                .find(|e| e.signature == signature && e.bounds.contains(x as i32, y as i32)),
            None => None,
        };
        if let Some(found) = found.or_else(|| elements.iter().find(|e| e.signature == signature)) {
            return Some(found);
        }
    }
    if let Some(reference) = action.ref_id {
        if let Some(found) = crate::screen::element_by_ref(observation, reference) {
            return Some(found);
        }
    }
    None
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
