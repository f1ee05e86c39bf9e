//! Crashes a developer can act on: a recorded run (or one crash's steps) replayed on a device
//! from a fresh launch ([`replay`]), a crash's or an ANR's steps cut down to those it needs by
//! delta debugging ([`ddmin`], [`minimise`]), and the result exported as a Maestro flow, a
//! shell script of `adb shell input` commands and the events a replay takes ([`export`]).
//!
//! A replay reads what a run did from its events ([`script`]): each action carried out, the
//! screen it was taken on and the element it resolved to. Every replay is a run of its own in
//! crawler.db (`kind: "replay"`, linked to the run it replays), so the reports read it like
//! any other. See `docs/repro.md`.

pub mod cli;
pub mod ddmin;
pub mod export;
pub mod minimise;
pub mod replay;
pub mod script;

pub use minimise::{
    minimise_run, Budget, MinimiseConfig, MinimiseError, MinimiseOptions, MINIMISED_NOTE,
};
pub use replay::{replay, Divergence, Mode, Purpose, ReplayConfig, ReplayError, Replayed};
pub use script::{FailureId, FailureKind, RecordedFailure, Script, Step, StepKind};
