//! The driver's recoveries: its own decisions where a policy answers a screen instead of the
//! decider (see [`super::policy`] for what counts as each case). A crash is recorded with its
//! trace and steps to reproduce, then the app relaunched; an ANR dialog is answered; the
//! system's permission dialog is answered as `--permissions` says; another app in front is left
//! with back, then a relaunch. Recoveries are decisions of the driver
//! (`decider: "droid-crawl"`), recorded like any other and learned by the decider like any
//! decision not its own.

use serde_json::json;

use super::policy;
use super::run::Run;
use super::step::{Driver, StepError};
use super::{Level, DRIVER};
use crate::events::{Action, ActionType, Decision, Event, Note, NoteKind, Observation};
use crate::screen::Screen;

impl Driver<'_, '_> {
    /// The driver's own decision for this screen, when a policy has one: a crash or context
    /// loss to recover from, an ANR dialog to answer. Crash and ANR notes are written here.
    pub(super) fn recovery(
        &mut self,
        run: &mut Run,
        shown: &Screen,
    ) -> Result<Option<Decision>, StepError> {
        let observation = shown.observation();
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
            self.permission.back_in_app();
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
                // The crash happened at the step before the one that found it.
                let step = observation
                    .step
                    .map(|s| s.saturating_sub(1))
                    .filter(|&s| s > 0);
                let note = Note::at(&run.run_id, step, NoteKind::Crash, message)
                    .with_data(serde_json::to_value(&crash).ok());
                run.emit(Event::Note(note));
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
        if let Some((button, request)) =
            self.permission.button(observation, self.config.permissions)
        {
            let why = format!(
                "the system asks for a permission ({request}): {}",
                self.config.permissions.done()
            );
            let action =
                crate::screen::action_on(&observation.elements, button, ActionType::Click, &why);
            return Ok(Some(self.driver_decision(
                run,
                observation,
                vec![action],
                None,
            )));
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
        if self.context.left_by_back() {
            run.note(
                NoteKind::Relaunch,
                &format!("relaunch {}: back left it", self.config.package),
                Some(json!({"package": self.config.package})),
            );
            return Ok(Some(self.relaunch_decision(
                run,
                observation,
                "back left the app: no back brings it again",
            )));
        }
        if times >= policy::CONTEXT_LOSS_BACKS {
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

    pub(super) fn relaunch_decision(
        &mut self,
        run: &Run,
        observation: &Observation,
        why: &str,
    ) -> Decision {
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
            decider: Some(DRIVER.into()),
            relaunch,
            ..Decision::new(actions)
        }
        .at(Some(run.run_id.clone()), observation.step)
    }
}
