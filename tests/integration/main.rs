//! One integration test binary; a module per stage (ripgrep's layout).

mod act;
mod adb;
mod capture_device;
mod common;
mod device;
mod events;
