//! droid-sim: a simulated Android device behind a real ADB server socket.
//!
//! The device state lives in [`world`] (launcher, the model's app, back stack, typed text, crash
//! buffer), driven by an app model from [`model`], rendered by [`render`] and recorded by
//! [`truth`].

pub mod model;
pub mod render;
pub mod truth;
pub mod world;
