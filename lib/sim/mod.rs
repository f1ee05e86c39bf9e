//! droid-sim: a simulated Android device behind a real ADB server socket.
//!
//! The device state lives in [`world`] (launcher, the model's app, back stack, typed text, crash
//! buffer), driven by an app model from [`model`] whose transitions answer touches as
//! [`dispatch`] resolves them, rendered by [`render`] and recorded by [`truth`]; [`system`]
//! draws the device's own screens (launcher, recents, ANR dialog) and [`keys`] knows the key
//! codes. The device side is served by [`server`] (the ADB server protocol), which runs command
//! lines through [`shell`] and the programs in [`commands`], with [`fault`] injection. The
//! programs' outputs are split by what they show: [`dumpsys`] (system services), [`logcat`]
//! (log buffers), [`procfs`] (processes, `/proc`), [`settings`] (the settings provider) and
//! [`toybox`] (files, text tools, network interfaces); [`packages`] (installed APKs),
//! [`pcapdroid`] (traffic captures) and [`video`] (screenrecord's MP4) make the files the crawl
//! integrations pull. [`check`] walks a model through that socket as a tester would
//! (`droid-sim --check`).

pub mod check;
pub mod commands;
pub mod dispatch;
pub mod dumpsys;
pub mod fault;
pub mod infer;
pub mod keys;
pub mod logcat;
pub mod model;
pub mod packages;
pub mod pcapdroid;
pub mod procfs;
pub mod render;
pub mod server;
pub mod settings;
pub mod shell;
pub mod system;
pub mod toybox;
pub mod truth;
pub mod video;
pub mod world;

pub use server::{Sim, SimConfig, SimError, SimHandle};
