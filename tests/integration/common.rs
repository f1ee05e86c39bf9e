//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared real-world samples every test reads as they are (see [`droid::fixtures`]). A
/// test that reads them starts with `droid::fixtures_or_skip!()`, which skips it when they are
/// not there.
pub fn fixtures() -> PathBuf {
    droid::fixtures::location()
}

/// Path of one of this package's binaries (built by `cargo test` beside the test binary).
pub fn bin_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir");
    dir.join(name)
}

/// A command for one of our binaries with a clean environment: nothing from the developer's shell
/// (`DROID_*`, `ANDROID_*`, `NO_COLOR`, `RUST_LOG`, API keys) changes a test's result.
pub fn droid(name: &str) -> Command {
    let mut cmd = Command::new(bin_path(name));
    for (key, _) in std::env::vars() {
        let scrubbed = key.starts_with("DROID_")
            || key.starts_with("ANDROID_")
            || key.starts_with("ADB_")
            || key.ends_with("_API_KEY")
            || key.ends_with("_URL")
            || key == "NO_COLOR"
            || key == "RUST_LOG"
            || key.starts_with("TEST_");
        if scrubbed {
            cmd.env_remove(key);
        }
    }
    // The user's own user_config.db must not leak in: point the default place at nothing.
    cmd.env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("droid-tests-no-user-config"),
    );
    cmd
}

/// Runs `cmd` with `input` on its stdin and collects what it wrote.
pub fn feed(cmd: &mut Command, input: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning a droid binary");
    let mut stdin = child.stdin.take().expect("piped stdin");
    // A stage may exit before reading everything (a usage error); that is for the test to judge.
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    child
        .wait_with_output()
        .expect("waiting for a droid binary")
}

/// Whether a tool the test needs is on `PATH`. Without it the test prints a skip notice and
/// passes, except under `DROID_REQUIRE_ADB=1` (set by `.ci/run`, which installs every tool):
/// then it fails, naming the Debian package that brings the tool.
pub fn require_tool(tool: &str, package: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .output()
        .map(|_| true)
        .unwrap_or(false);
    if found {
        return true;
    }
    if std::env::var("DROID_REQUIRE_ADB").as_deref() == Ok("1") {
        panic!("DROID_REQUIRE_ADB=1 but `{tool}` is not on PATH: apt-get install {package}");
    }
    eprintln!("skipped: `{tool}` is not on PATH (apt-get install {package})");
    false
}

/// A copy of a bundled app model (`apps/NAME/model.json`) with top-level fields added or
/// replaced, written into `dir`; its path, for `SimConfig::new`.
pub fn model_with(dir: &std::path::Path, name: &str, fields: serde_json::Value) -> String {
    let text = std::fs::read_to_string(root().join("apps").join(name).join("model.json"))
        .expect("bundled model");
    let mut model: serde_json::Value = serde_json::from_str(&text).expect("model JSON");
    for (key, value) in fields.as_object().expect("fields are an object") {
        model[key] = value.clone();
    }
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, model.to_string()).expect("writing the model");
    path.to_string_lossy().into_owned()
}
