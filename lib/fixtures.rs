//! Where the shared real-world samples are: the uiautomator dumps, device outputs, provider
//! bodies and real apps' models that the tests, the benchmarks and the fuzzer read as they are.
//!
//! They live beside the checkout (`../shared/fixtures`), not in it: research data that is not
//! ours to publish. One setting says where: `DROID_FIXTURES`, default `../shared/fixtures` next
//! to the package. Without them, what needs them is skipped with one line on stderr naming what
//! was skipped and why, so a clone that stands alone still builds, tests and runs its demo;
//! `DROID_REQUIRE_FIXTURES=1` (set by CI) turns that skip into a failure.

use std::io::Write;
use std::path::PathBuf;

/// The environment variable naming the fixtures folder.
pub const ENV: &str = "DROID_FIXTURES";

/// The environment variable that makes missing fixtures a failure instead of a skip.
pub const REQUIRE_ENV: &str = "DROID_REQUIRE_FIXTURES";

/// The folder the fixtures are looked for in: `$DROID_FIXTURES`, else `../shared/fixtures`
/// beside the package.
pub fn location() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"),
    }
}

/// The fixtures folder when it is there. When it is not, `what` (a test's or a section's name)
/// is skipped: one line on stderr says so and why, written past the test harness's capture so
/// that `cargo test` shows it. Under `DROID_REQUIRE_FIXTURES=1` a missing folder panics instead.
pub fn available(what: &str) -> Option<PathBuf> {
    let dir = location();
    if dir.join("README.md").is_file() {
        return Some(dir);
    }
    let why = format!(
        "the shared fixtures are not at {} (set {ENV} to their folder)",
        dir.display()
    );
    if std::env::var(REQUIRE_ENV).as_deref() == Ok("1") {
        panic!("{REQUIRE_ENV}=1 but {why}");
    }
    // `eprintln!` would be captured with a passing test's output and never shown.
    let _ = writeln!(std::io::stderr(), "skipped {what}: {why}");
    None
}

/// The name of the running test (the harness names each test's thread after it), for
/// [`available`]'s line.
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string()
}

/// The fixtures folder, or a skip of the calling test (`return` from it) with one line saying
/// why. `fixtures_or_skip!(value)` returns `value` instead, for a test that returns a `Result`.
#[macro_export]
macro_rules! fixtures_or_skip {
    () => {
        match $crate::fixtures::available(&$crate::fixtures::current_test()) {
            Some(dir) => dir,
            None => return,
        }
    };
    ($skipped:expr) => {
        match $crate::fixtures::available(&$crate::fixtures::current_test()) {
            Some(dir) => dir,
            None => return $skipped,
        }
    };
}
