//! One integration test binary; a module per stage (ripgrep's layout).

mod capture;
mod common;
mod decide_heuristic;
mod decide_providers;
mod events;
mod hash;
mod ui;
