//! One integration test binary; a module per stage (ripgrep's layout).

mod capture;
mod common;
mod events;
mod hash;
mod ui;
