//! The exploration loop, in process: capture → hash → decide → act, one step at a time, on the
//! stages' value-level APIs (no event lines in between). `droid-crawl`, the tests and the
//! benchmarks explore through it.

use crate::act;
use crate::capture::device::{capture_device, DeviceCaptureError, DeviceOptions};
use crate::decide;
use crate::device::{Device, DeviceError};
use crate::events::{ActionResult, Decision, DeviceInfo, Event, Observation};

/// Why a step could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExploreError {
    #[error("capturing step {step}")]
    Capture {
        step: u64,
        #[source]
        source: DeviceCaptureError,
    },
    #[error("deciding step {step}")]
    Decide {
        step: u64,
        #[source]
        source: decide::Error,
        /// What the stage wrote before it stopped (a note of kind `error`).
        events: Vec<Event>,
    },
}

/// One step taken.
#[derive(Debug, Clone)]
pub struct Step {
    /// The screen as captured and hashed.
    pub observation: Observation,
    /// What the decide stage wrote: notes, then the decision.
    pub decided: Vec<Event>,
    /// One per executed action (and one for a relaunch).
    pub results: Vec<ActionResult>,
}

impl Step {
    /// The step's decision.
    pub fn decision(&self) -> Option<&Decision> {
        self.decided.iter().find_map(|event| match event {
            Event::Decision(decision) => Some(decision),
            _ => None,
        })
    }

    /// The step's events in stream order: the observation, what was decided, the results.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        std::iter::once(Event::Observation(Box::new(self.observation.clone())))
            .chain(self.decided.iter().cloned())
            .chain(self.results.iter().cloned().map(Event::Result))
    }
}

/// A device explored step by step.
pub struct Explorer<'d> {
    device: &'d dyn Device,
    info: DeviceInfo,
    capture: DeviceOptions,
    act: act::Config,
}

impl<'d> Explorer<'d> {
    /// Reads what the device is (its size, model, version) once.
    pub fn new(
        device: &'d dyn Device,
        capture: DeviceOptions,
        act: act::Config,
    ) -> Result<Explorer<'d>, DeviceError> {
        Ok(Explorer {
            info: device.info()?,
            device,
            capture,
            act,
        })
    }

    pub fn device(&self) -> &'d dyn Device {
        self.device
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Captures the screen as step `step` and hashes it (see [`crate::hash::enrich`]; what
    /// cannot be hashed is left out, as droid-hash leaves it).
    pub fn observe(&self, step: u64) -> Result<Observation, ExploreError> {
        let options = DeviceOptions {
            step: Some(step),
            ..self.capture.clone()
        };
        let captured = capture_device(self.device, &self.info, &options)
            .map_err(|source| ExploreError::Capture { step, source })?;
        let mut observation = captured.observation;
        crate::hash::enrich_from(
            &mut observation,
            Some(&captured.xml),
            captured.screenshot.as_ref(),
        );
        Ok(observation)
    }

    /// Executes a decision on the screen it was made for.
    pub fn act(&self, decision: &Decision, observation: &Observation) -> Vec<ActionResult> {
        act::execute_decision(&self.act, self.device, decision, Some(observation))
    }

    /// One whole step with a decide stage: observe, decide, act; the stage learns the results,
    /// as a stage in a loop does.
    pub fn step(&self, step: u64, stage: &mut decide::Stage) -> Result<Step, ExploreError> {
        let observation = self.observe(step)?;
        let decided = stage
            .decide(&observation)
            .map_err(|stop| ExploreError::Decide {
                step,
                source: stop.error,
                events: stop.events,
            })?;
        let mut taken = Step {
            observation,
            decided,
            results: Vec::new(),
        };
        if let Some(decision) = taken.decision() {
            taken.results = self.act(decision, &taken.observation);
        }
        for result in &taken.results {
            stage.learn(&Event::Result(result.clone()));
        }
        Ok(taken)
    }
}
