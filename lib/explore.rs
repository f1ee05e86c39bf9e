//! The device side of an exploration step, in process: a capture hashed into an observation with
//! its screen model, and a decision's actions executed, on the stages' value-level APIs (no event
//! lines in between). The loop around it is droid-crawl's ([`crate::crawl`]).

use crate::act;
use crate::capture::device::{capture_device, DeviceCaptureError, DeviceOptions};
use crate::device::{Device, DeviceError};
use crate::events::{ActionResult, Decision, DeviceInfo, Observation};
use crate::screen::ScreenModel;

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
        Ok(Explorer::with_info(device, device.info()?, capture, act))
    }

    /// [`Explorer::new`] with what the device is already known (asked once by the caller).
    pub fn with_info(
        device: &'d dyn Device,
        info: DeviceInfo,
        capture: DeviceOptions,
        act: act::Config,
    ) -> Explorer<'d> {
        Explorer {
            info,
            device,
            capture,
            act,
        }
    }

    pub fn device(&self) -> &'d dyn Device {
        self.device
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Captures the screen as step `step` and hashes it (see [`crate::hash::enrich`]; what
    /// cannot be hashed is left out, as droid-hash leaves it): the observation, and the screen
    /// model its key came from.
    pub fn observe(&self, step: u64) -> Result<(Observation, ScreenModel), ExploreError> {
        let options = DeviceOptions {
            step: Some(step),
            ..self.capture.clone()
        };
        let captured = capture_device(self.device, &self.info, &options)
            .map_err(|source| ExploreError::Capture { step, source })?;
        let mut observation = captured.observation;
        let hashed = crate::hash::enrich_from(
            &mut observation,
            Some(&captured.xml),
            captured.screenshot.as_ref(),
        );
        Ok((observation, hashed.model))
    }

    /// Executes a decision on the screen it was made for.
    pub fn act(&self, decision: &Decision, observation: &Observation) -> Vec<ActionResult> {
        self.act_on(decision, Some(observation))
    }

    /// [`Explorer::act`] where no screen may have been observed yet (targets by point only).
    pub fn act_on(
        &self,
        decision: &Decision,
        observation: Option<&Observation>,
    ) -> Vec<ActionResult> {
        act::execute_decision(&self.act, self.device, decision, observation)
    }
}
