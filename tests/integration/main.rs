//! One integration test binary; a module per stage (ripgrep's layout).

mod adb;
mod common;
mod events;
