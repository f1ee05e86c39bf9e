//! The crawl loop: one step after another until a limit, a stop, the end of the exploration or
//! an error. A step captures the screen (its screen model computed once, by the hash stage),
//! flags it when the exploration is stuck on it, lets a recovery policy answer it (crash, ANR,
//! another app in front: see [`super::recovery`]) or else the decider, acts, and tells the
//! decider what happened. droid-crawl, `make coverage` and every exploring test run this loop.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::coprocess::{Coprocess, CoprocessError};
use super::policy::{self, AnrDialog, ContextLoss, Escape, ModelStuck, PermissionDialog, Stuck};
use super::run::Run;
use super::{Command, Config, State};
use crate::crash::ReproStep;
use crate::decide::{self, Stop};
use crate::device::{Device, DeviceError};
use crate::events::{ActionResult, ActionType, Decision, Event, Note, NoteKind, Observation};
use crate::explore::{ExploreError, Explorer};
use crate::screen::{Screen, ScreenModel};

use super::attached::Attached;

/// Captures in a row that may fail (uiautomator's idle-state and null-root errors) before the
/// crawl ends with ERROR.
const CAPTURE_FAILURES: u32 = 3;

/// The driver's memory across steps.
pub(super) struct Driver<'c, 'd> {
    pub(super) config: &'c Config,
    pub(super) device: &'d dyn Device,
    pub(super) attached: Option<Attached<'d>>,
    pub(super) explorer: Explorer<'d>,
    pub(super) stage: Option<decide::Stage>,
    pub(super) capture_cmd: Option<Coprocess>,
    pub(super) decide_cmd: Option<Coprocess>,
    pub(super) act_cmd: Option<Coprocess>,
    pub(super) stuck: Stuck,
    pub(super) context: ContextLoss,
    pub(super) anr: AnrDialog,
    pub(super) permission: PermissionDialog,
    /// The actions since the app was last launched: a crash's steps to reproduce.
    pub(super) since_launch: Vec<ReproStep>,
    /// The screenshot of the last step: where a crash found at the next happened.
    pub(super) last_screenshot: Option<String>,
    pub(super) capture_failures: u32,
    /// A model repeating itself: when to take the crawl off the screens it keeps it on.
    pub(super) model_stuck: ModelStuck,
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
pub(super) enum StepError {
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
    pub(super) fn start(&mut self) -> Result<(), StepError> {
        let package = &self.config.package;
        let device = self.device;
        device.crash_log(true).map_err(StepError::Device)?;
        let _ = device.system_log(true);
        device.force_stop(package).map_err(StepError::Device)?;
        device.launch(package).map_err(StepError::Device)?;
        Ok(())
    }

    /// Steps until a limit, a stop or an error: the status and reason of `run_ended`.
    pub(super) fn run(&mut self, run: &mut Run) -> (&'static str, String) {
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
                    let heuristic = self.stage.as_ref().map(|s| s.heuristic());
                    let why = match heuristic.map(|h| (h.graph(), h.graph().tally(), h.passes())) {
                        Some((graph, tally, passes)) => format!(
                            "everything the exploration found is explored: every action of \
                             its {} states tried ({} actions), the last of {passes} passes \
                             over them finding nothing new{}",
                            tally.states,
                            tally.actions,
                            match graph.refined_states() {
                                0 => String::new(),
                                n => format!(
                                    "; {n} of the states are states of a screen told apart by \
                                     what actions did there"
                                ),
                            }
                        ),
                        None => "everything the exploration found is explored".to_string(),
                    };
                    run.set_state(State::Stopping, Some(&why));
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
        if let Some(why) = self.stage.as_ref().and_then(|s| s.budget_stop()) {
            let why = format!("the model budget is spent: {why}");
            run.set_state(State::Stopping, Some(&why));
            return Some(("COMPLETED", "budget".into()));
        }
        None
    }

    /// One step, and whether the run goes on.
    fn step(&mut self, run: &mut Run) -> Result<StepEnd, StepError> {
        let step = run.step;
        let (mut observation, model) = self.observe(run, step)?;
        self.capture_failures = 0;
        if let Some(attached) = &mut self.attached {
            attached.observed(&mut observation);
        }
        if observation.flags.secure && self.config.stop_on_secure {
            run.emit_observed(observation, Arc::new(model));
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
        let key = model.key().clone();
        let found = run.screens.insert(key.clone());
        let stuck = self.stuck.observe(&key, step);
        if stuck.is_none() {
            if let Some(escaped) = self.stuck.take_recovery() {
                run.note(
                    NoteKind::Stuck,
                    "the exploration left the screen it was stuck on",
                    Some(json!({"recovered": true, "detected_at": escaped})),
                );
            }
        }
        let detected = stuck.as_ref().is_some_and(|stuck| stuck.detected);
        if let Some(stuck) = stuck {
            observation.is_stuck = true;
            observation.stuck_reason = Some(stuck.reason);
        }
        let model = Arc::new(model);
        run.emit_observed(observation.clone(), Arc::clone(&model));
        if detected {
            let reason = observation.stuck_reason.clone().unwrap_or_default();
            run.note(
                NoteKind::Stuck,
                &reason,
                Some(json!({"screen": key.as_str()})),
            );
        }
        let shown = Screen::with_model(&observation, &model);

        let decision = match self.recovery(run, &shown)? {
            Some(decision) => {
                if let Some(stage) = &mut self.stage {
                    stage.learn_decided(&shown, &decision);
                }
                run.emit(Event::Decision(decision.clone()));
                decision
            }
            None => {
                let escape = self.model_stuck.observe(observation.is_stuck, found);
                let decided = match escape {
                    Some(escape) => self.escape(run, &shown, escape),
                    None => self.decide(run, &shown)?,
                };
                match decided {
                    Some(decision) => decision,
                    None => return Ok(StepEnd::Next),
                }
            }
        };
        if let Some(ai) = &decision.ai {
            run.model_calls += 1;
            run.model_cost += ai.cost.unwrap_or(0.0);
        }
        let by_model = decision.ai.as_ref().is_some_and(|ai| ai.error.is_none());
        let answer = by_model.then(|| {
            let actions = decision.actions.iter();
            actions.map(|action| shown.key_of(action)).collect()
        });
        self.model_stuck.decided(&key, answer);
        let results = self.act(&decision, &observation)?;
        let navigated = results.iter().any(|r| r.navigated_away);
        self.stuck.acted(navigated);
        if observation.package.as_deref() == Some(self.config.package.as_str()) {
            let last = results.iter().rfind(|r| r.success);
            self.context
                .acted_in_app(last.is_some_and(|r| r.action_type == ActionType::Back));
        }
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
        Ok(match (decision.done, decision.explored) {
            (true, _) => StepEnd::TaskDone,
            (false, true) => StepEnd::Explored,
            (false, false) => StepEnd::Next,
        })
    }

    /// The screen now, from the device or the capture co-process, hashed, with its screen
    /// model.
    fn observe(&mut self, run: &Run, step: u64) -> Result<(Observation, ScreenModel), StepError> {
        let Some(capture) = &mut self.capture_cmd else {
            return Ok(self.explorer.observe(step)?);
        };
        let ask = Event::Note(Note {
            message: None,
            ..Note::at(&run.run_id, Some(step), NoteKind::parse("capture"), "")
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
        let model = crate::hash::enrich(&mut observation).model;
        Ok((observation, model))
    }

    /// Takes the crawl off the screens a model keeps it on (see [`policy::MODEL_STUCK_STEPS`]):
    /// a step of the heuristic's (when the decider runs in this process), else a relaunch; each
    /// with its note, a follow-up of the stuck detection when the crawl is stuck on one screen.
    fn escape(&mut self, run: &mut Run, shown: &Screen, escape: Escape) -> Option<Decision> {
        let observation = shown.observation();
        let detected_at = self.stuck.since();
        let package = self.config.package.clone();
        match (escape, &mut self.stage) {
            (Escape::Heuristic, Some(stage)) => {
                run.note(
                    NoteKind::Stuck,
                    &format!(
                        "the model gave {} answers again since the crawl last found a \
                         screen: the heuristic decides one step",
                        policy::MODEL_STUCK_STEPS
                    ),
                    Some(json!({"detected_at": detected_at, "escape": "heuristic"})),
                );
                let events = stage.decide_by_heuristic(shown);
                self.emit_decided(run, observation, events)
            }
            _ => {
                run.note(
                    NoteKind::Relaunch,
                    &format!("relaunch {package}: the model kept the crawl where it was"),
                    Some(json!({"package": package, "detected_at": detected_at,
                                "escape": "relaunch"})),
                );
                let decision = self.relaunch_decision(run, observation, "stuck under the model");
                if let Some(stage) = &mut self.stage {
                    stage.learn_decided(shown, &decision);
                }
                run.emit(Event::Decision(decision.clone()));
                Some(decision)
            }
        }
    }

    /// What the decider (or its co-process) decides; the notes it writes go into the run.
    fn decide(&mut self, run: &mut Run, shown: &Screen) -> Result<Option<Decision>, StepError> {
        let observation = shown.observation();
        let events = match (&mut self.decide_cmd, &mut self.stage) {
            (Some(command), _) => {
                // A program that reads crawler.db (a one-shot `droid-decide --db`) must find
                // every earlier step there.
                run.recorder.sync();
                let input = Event::Observation(Box::new(observation.clone()));
                command.exchange(&[input], "decision", |e| matches!(e, Event::Decision(_)))?
            }
            (None, Some(stage)) => match stage.decide_screen(shown) {
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
        Ok(self.emit_decided(run, observation, events))
    }

    /// Writes a decider's events into the run (its warnings told to people): the decision
    /// among them.
    fn emit_decided(
        &mut self,
        run: &mut Run,
        observation: &Observation,
        events: Vec<Event>,
    ) -> Option<Decision> {
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
                        run.say(
                            super::Level::Warn,
                            note.message.as_deref().unwrap_or_default(),
                        );
                    }
                    run.emit(Event::Note(note));
                }
                other => run.emit(other),
            }
        }
        decision
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
}
