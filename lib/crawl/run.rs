//! What a crawl in progress keeps about its run: where its events go (crawler.db, events.jsonl,
//! crawler.log, the listener) and what was counted for the progress bar.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use super::recorder::Recorder;
use super::{Level, Listener, Progress, State};
use crate::events::{now_ts, Event, Note, NoteKind, Observation};
use crate::screen::{ScreenKey, ScreenModel};
use crate::store;

/// What a crawl in progress keeps about its run: where events go and what was counted.
pub(crate) struct Run<'l> {
    pub(super) recorder: Recorder,
    log: Option<std::fs::File>,
    events_file: Option<std::fs::File>,
    listener: &'l mut dyn Listener,
    pub(crate) run_id: String,
    pub(super) state: State,
    pub(super) started: Instant,
    pub(crate) step: u64,
    pub(super) screens: std::collections::HashSet<ScreenKey>,
    pub(super) crashes: u64,
    pub(super) model_calls: u64,
    pub(super) model_cost: f64,
    max_steps: u64,
}

impl<'l> Run<'l> {
    /// A run recorded into `db`, with its crawler.log and events.jsonl in `session_dir`.
    pub(crate) fn new(
        db: &Path,
        session_dir: &Path,
        listener: &'l mut dyn Listener,
        run_id: &str,
        max_steps: u64,
    ) -> Run<'l> {
        Run {
            recorder: Recorder::start(db),
            log: std::fs::File::create(session_dir.join("logs").join("crawler.log")).ok(),
            events_file: std::fs::File::create(session_dir.join("events.jsonl")).ok(),
            listener,
            run_id: run_id.to_string(),
            state: State::Uninitialized,
            started: Instant::now(),
            step: 0,
            screens: std::collections::HashSet::new(),
            crashes: 0,
            model_calls: 0,
            model_cost: 0.0,
            max_steps,
        }
    }
}

impl Run<'_> {
    /// Records an event, writes it to events.jsonl and hands it to the listener.
    pub(crate) fn emit(&mut self, event: Event) {
        self.tell(&event);
        self.recorder.record(event);
    }

    /// [`Run::emit`] for an observation, handing its screen model to the recorder with it.
    pub(crate) fn emit_observed(&mut self, observation: Observation, model: Arc<ScreenModel>) {
        let event = Event::Observation(Box::new(observation));
        self.tell(&event);
        let Event::Observation(observation) = event else {
            unreachable!("built as an observation just above")
        };
        self.recorder.record_observed(*observation, model);
    }

    /// events.jsonl, crawler.log and the listener.
    fn tell(&mut self, event: &Event) {
        if let Some(file) = &mut self.events_file {
            let _ = writeln!(file, "{}", event.to_line());
        }
        self.log_line(Level::Debug, &describe_event(event));
        self.listener.event(event);
    }

    /// A note of this run at its current step.
    pub(crate) fn note(&mut self, kind: NoteKind, message: &str, data: Option<Value>) {
        let step = (self.step > 0).then_some(self.step);
        let note = Note::at(&self.run_id, step, kind, message).with_data(data);
        self.emit(Event::Note(note));
    }

    pub(crate) fn say(&mut self, level: Level, message: &str) {
        self.log_line(level, message);
        self.listener.say(level, message);
    }

    fn log_line(&mut self, level: Level, message: &str) {
        if let Some(log) = &mut self.log {
            let _ = writeln!(log, "{} {level:?} {message}", now_ts());
        }
    }

    pub(super) fn set_state(&mut self, state: State, why: Option<&str>) {
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
    pub(super) fn failed(&mut self, error: &(dyn std::error::Error + 'static)) -> String {
        let reason = crate::filter::Chain(error).to_string();
        self.note(NoteKind::Error, &reason, None);
        self.say(Level::Error, &reason);
        self.set_state(State::Error, Some(&reason));
        reason
    }

    pub(super) fn progress(&mut self) {
        let progress = Progress {
            step: self.step,
            max_steps: self.max_steps,
            unique_screens: self.screens.len(),
            crashes: self.crashes,
            elapsed: self.started.elapsed(),
            model_calls: self.model_calls,
            model_cost: self.model_cost,
            paused: self.state == State::PausedManual,
        };
        self.listener.progress(&progress);
    }

    /// Who watches the run.
    pub(crate) fn listener(&mut self) -> &mut dyn Listener {
        self.listener
    }

    /// The steps so far are committed, without waiting.
    pub(crate) fn commit(&mut self) {
        self.recorder.commit();
    }

    /// Everything is recorded: the recorder's thread finishes.
    pub(crate) fn finish(&mut self) -> Result<store::IngestStats, store::Error> {
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
