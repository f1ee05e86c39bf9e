//! One integration test binary; a module per stage (ripgrep's layout).

mod common;
mod events;
mod sim_adb;
mod sim_protocol;
mod sim_world;
