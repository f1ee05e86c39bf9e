//! One integration test binary; a module per stage (ripgrep's layout).

mod capture;
mod common;
mod events;
mod hash;
mod sim_adb;
mod sim_protocol;
mod sim_world;
mod ui;
