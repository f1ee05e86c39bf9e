//! droid-sim: a simulated Android device behind a real ADB server socket.
//!
//! The device state lives in [`world`] (launcher, the model's app, back stack, typed text, crash
//! buffer), driven by an app model from [`model`] whose transitions answer touches as
//! [`dispatch`] resolves them (and [`infer`] where the recording has no move), rendered by
//! [`render`] and recorded by [`truth`]; [`system`] draws the device's own screens (launcher,
//! recents, ANR dialog), [`keys`] knows the key codes and [`component`] the names of
//! activities. The device side is served by [`server`] (the ADB server protocol: host, shell and
//! sync services), which runs command lines through [`shell`] and the device programs in
//! [`programs`] (one module per program or family), with [`fault`] injection. [`packages`]
//! (installed APKs), [`pcapdroid`] (the capture app the phone hosts) and [`video`]
//! (screenrecord's MP4) make the files the crawl integrations pull. [`check`] walks a model
//! through that socket as a tester would (`droid-sim --check`).

pub mod check;
pub mod component;
pub mod dispatch;
pub mod fault;
pub mod infer;
pub mod keys;
pub mod model;
pub mod packages;
pub mod pcapdroid;
pub mod programs;
pub mod render;
pub mod server;
pub mod shell;
pub mod system;
pub mod truth;
pub mod video;
pub mod world;

pub use server::{Sim, SimConfig, SimError, SimHandle};
