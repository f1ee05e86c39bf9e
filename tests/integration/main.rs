//! One integration test binary; a module per stage (ripgrep's layout).

mod common;
mod decide_providers;
mod events;
