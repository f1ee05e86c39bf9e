//! One integration test binary; a module per stage (ripgrep's layout).

mod common;
mod events;
mod record;
