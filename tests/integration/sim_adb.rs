//! The real `adb` client (1.0.41) against the `droid-sim` binary.
//!
//! Without `adb` on the machine these tests print a skip notice and pass, except when
//! `DROID_REQUIRE_ADB=1` (set by `.ci/run`): then a missing `adb` fails them.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use crate::common::{droid, fixtures};

/// `adb` when it is installed; `None` (after a notice) when these tests may skip.
pub fn adb_binary() -> Option<&'static str> {
    let found = Command::new("adb")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some("adb");
    }
    // The one environment variable these tests honour: CI demands that they run.
    if std::env::var("DROID_REQUIRE_ADB").as_deref() == Ok("1") {
        panic!("DROID_REQUIRE_ADB=1 but no `adb` binary is on PATH");
    }
    eprintln!("skipping: no `adb` binary on PATH (install the `adb` package to run this test)");
    None
}

/// A `droid-sim` process, killed on drop (the Python clients' tests use it too).
pub(crate) struct SimProcess {
    child: Child,
    pub(crate) port: u16,
    pub(crate) serial: String,
    /// The home of the simulator and of the clients run beside it (the console's token).
    pub(crate) home: tempfile::TempDir,
}

impl SimProcess {
    pub(crate) fn start(args: &[&str]) -> SimProcess {
        // The console's auth token goes to this home, which adb reads too.
        let home = tempfile::tempdir().expect("temp home");
        let mut child = droid("droid-sim")
            .args(args)
            .env("HOME", home.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("droid-sim starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("ready line");
        let ready: serde_json::Value = serde_json::from_str(&line).expect("ready line is JSON");
        assert_eq!(ready["type"], "sim_ready", "{line}");
        SimProcess {
            child,
            port: u16::try_from(ready["port"].as_u64().expect("port")).expect("port fits"),
            serial: ready["serial"].as_str().expect("serial").to_string(),
            home,
        }
    }

    /// A simulator of `app` writing its truth log into `dir`, and the log's path.
    pub(crate) fn with_truth_log(app: &str, dir: &Path) -> (SimProcess, std::path::PathBuf) {
        let truth = dir.join("truth.jsonl");
        let sim = SimProcess::start(&["--app", app, "--truth-log", &truth.to_string_lossy()]);
        (sim, truth)
    }

    /// Waits for the simulator to end by itself.
    pub(crate) fn wait(&mut self) -> std::process::ExitStatus {
        self.child.wait().expect("droid-sim ends")
    }

    /// `adb -P PORT -s SERIAL ARGS...` with a clean environment, its own HOME, no stdin.
    pub(crate) fn adb(&self, adb: &str, args: &[&str]) -> Output {
        self.adb_with_stdin(adb, args, b"")
    }

    /// The `adb -P PORT -s SERIAL ARGS...` command, clean environment and own HOME, for a
    /// test that runs it in the background (`adb logcat` streams until stopped).
    pub(crate) fn adb_command(&self, adb: &str, args: &[&str]) -> Command {
        let mut command = Command::new(adb);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .args(["-P", &self.port.to_string(), "-s", &self.serial])
            .args(args);
        command
    }

    fn adb_with_stdin(&self, adb: &str, args: &[&str], input: &[u8]) -> Output {
        let mut child = self
            .adb_command(adb, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("adb runs");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input).expect("write stdin");
        drop(stdin);
        child.wait_with_output().expect("adb ends")
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn adb_devices_l_lists_the_simulator() {
    let Some(adb) = adb_binary() else { return };
    let sim = SimProcess::start(&["--app", "builtin:tiny", "--serial", "emulator-5580"]);
    let out = sim.adb(adb, &["devices", "-l"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.starts_with("List of devices attached\n"), "{text}");
    assert!(
        text.contains("emulator-5580          device product:sim_x86_64 model:droid_sim device:sim transport_id:1\n"),
        "{text}"
    );
}

#[test]
fn adb_shell_getprop_exit_codes_and_unknown_commands() {
    let Some(adb) = adb_binary() else { return };
    let sim = SimProcess::start(&["--app", "builtin:tiny"]);
    let sdk = sim.adb(adb, &["shell", "getprop", "ro.build.version.sdk"]);
    assert!(sdk.status.success());
    assert_eq!(stdout(&sdk), "33\n");
    let exit = sim.adb(adb, &["shell", "exit", "3"]);
    assert_eq!(exit.status.code(), Some(3));
    let unknown = sim.adb(adb, &["shell", "frobnicate"]);
    assert_eq!(unknown.status.code(), Some(127));
    assert_eq!(
        String::from_utf8_lossy(&unknown.stderr),
        "/system/bin/sh: frobnicate: inaccessible or not found\n"
    );
    let wrong = Command::new(adb)
        .env_clear()
        .env("HOME", sim.home.path())
        .args(["-P", &sim.port.to_string(), "-s", "nope", "shell", "true"])
        .output()
        .expect("adb runs");
    assert_eq!(wrong.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("device 'nope' not found"));
}

#[test]
fn adb_dump_then_exec_out_cat_and_pull() {
    let Some(adb) = adb_binary() else { return };
    let sim = SimProcess::start(&["--app", "builtin:tiny"]);
    let launch = sim.adb(
        adb,
        &[
            "shell",
            "monkey",
            "-p",
            "com.example.tiny",
            "-c",
            "android.intent.category.LAUNCHER",
            "1",
        ],
    );
    assert!(launch.status.success());
    let dump = sim.adb(
        adb,
        &["shell", "uiautomator", "dump", "/data/local/tmp/ui.xml"],
    );
    assert_eq!(
        stdout(&dump),
        "UI hierchary dumped to: /data/local/tmp/ui.xml\n"
    );
    let cat = sim.adb(adb, &["exec-out", "cat", "/data/local/tmp/ui.xml"]);
    assert!(cat.status.success());
    let xml = stdout(&cat);
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    assert!(doc
        .descendants()
        .any(|n| n.attribute("text") == Some("Hello from Tiny")));
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("ui.xml");
    let pull = sim.adb(
        adb,
        &["pull", "/data/local/tmp/ui.xml", local.to_str().unwrap()],
    );
    assert!(
        pull.status.success(),
        "{}",
        String::from_utf8_lossy(&pull.stderr)
    );
    assert!(stdout(&pull).contains("1 file pulled"));
    assert_eq!(std::fs::read_to_string(&local).unwrap(), xml);
    let missing = sim.adb(adb, &["pull", "/sdcard/none.xml", local.to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn adb_exec_out_screencap_is_a_png_of_the_model_size() {
    let Some(adb) = adb_binary() else { return };
    let sim = SimProcess::start(&["--app", "builtin:tiny"]);
    let shot = sim.adb(adb, &["exec-out", "screencap", "-p"]);
    assert!(shot.status.success());
    assert_eq!(&shot.stdout[..8], b"\x89PNG\r\n\x1a\n");
    let image = image::load_from_memory(&shot.stdout).expect("decodable PNG");
    assert_eq!((image.width(), image.height()), (720, 1280));
}

#[test]
fn adb_push_stdin_and_kill_server() {
    let Some(adb) = adb_binary() else { return };
    let mut sim = SimProcess::start(&["--app", "builtin:tiny"]);
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("data.txt");
    std::fs::write(&local, "pushed through sync\n").unwrap();
    let push = sim.adb(
        adb,
        &["push", local.to_str().unwrap(), "/sdcard/Download/data.txt"],
    );
    assert!(
        push.status.success(),
        "{}",
        String::from_utf8_lossy(&push.stderr)
    );
    let cat = sim.adb(adb, &["shell", "cat", "/sdcard/Download/data.txt"]);
    assert_eq!(stdout(&cat), "pushed through sync\n");
    let piped = sim.adb_with_stdin(
        adb,
        &["shell", "cat", ">", "/sdcard/in.txt"],
        b"typed on stdin",
    );
    assert!(piped.status.success());
    let back = sim.adb(adb, &["exec-out", "cat", "/sdcard/in.txt"]);
    assert_eq!(stdout(&back), "typed on stdin");
    let kill = sim.adb(adb, &["kill-server"]);
    assert!(kill.status.success());
    let status = sim.child.wait().expect("droid-sim exits");
    assert!(status.success(), "host:kill ends droid-sim with 0");
}

#[test]
fn adb_taps_walk_the_recorded_transitions_of_the_notes_app() {
    droid::fixtures_or_skip!();
    let Some(adb) = adb_binary() else { return };
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.jsonl");
    let model = fixtures().join("apps/notes/model.json");
    let sim = SimProcess::start(&[
        "--app",
        model.to_str().unwrap(),
        "--truth-log",
        truth.to_str().unwrap(),
    ]);
    let package = "com.simplemobiletools.notes.pro";
    let launch = sim.adb(
        adb,
        &[
            "shell",
            "monkey",
            "-p",
            package,
            "-c",
            "android.intent.category.LAUNCHER",
            "1",
        ],
    );
    assert!(launch.status.success());
    // The centres of the recorded targets: More options, Delete note, Delete.
    for (x, y) in [(1024, 259), (799, 1447), (929, 1244)] {
        let tap = sim.adb(
            adb,
            &["shell", "input", "tap", &x.to_string(), &y.to_string()],
        );
        assert!(
            tap.status.success(),
            "{}",
            String::from_utf8_lossy(&tap.stderr)
        );
    }
    let focus = stdout(&sim.adb(adb, &["shell", "dumpsys", "window", "displays"]));
    assert!(focus.contains("mCurrentFocus=Window{"), "{focus}");
    assert!(focus.contains(package), "{focus}");
    let screens: Vec<String> = std::fs::read_to_string(&truth)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            value["screen"].as_str().map(String::from)
        })
        .collect();
    assert!(
        screens.ends_with(&["s001", "s008", "s009", "s010"].map(String::from)),
        "{screens:?}"
    );
}

#[test]
fn adb_sees_the_faults_as_a_device_would_show_them() {
    let Some(adb) = adb_binary() else { return };
    let sim = SimProcess::start(&[
        "--app",
        "builtin:tiny",
        "--fault",
        "disconnect-after:1:60",
        "--fault",
        "dump-error:1",
    ]);
    let dump = sim.adb(adb, &["shell", "uiautomator", "dump"]);
    assert!(
        dump.status.success(),
        "the real command exits 0 on this error"
    );
    assert_eq!(
        String::from_utf8_lossy(&dump.stderr),
        "ERROR: could not get idle state.\n"
    );
    let dropped = sim.adb(adb, &["shell", "echo", "two"]);
    assert_eq!(dropped.status.code(), Some(1));
    let gone = sim.adb(adb, &["shell", "echo", "three"]);
    assert_eq!(gone.status.code(), Some(1));
    let not_found = format!("device '{}' not found", sim.serial);
    assert!(String::from_utf8_lossy(&gone.stderr).contains(&not_found));
    assert_eq!(
        stdout(&sim.adb(adb, &["devices"])),
        "List of devices attached\n\n"
    );
}

#[test]
fn describe_reports_the_fixture_notes_app() {
    droid::fixtures_or_skip!();
    let model = fixtures().join("apps/notes/model.json");
    let out = droid("droid-sim")
        .args(["--app", model.to_str().unwrap(), "--describe"])
        .output()
        .expect("droid-sim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = stdout(&out);
    assert!(text.contains("51 screens"), "{text}");
    assert!(text.contains("reachable from the start screen"), "{text}");
}

#[test]
fn usage_and_model_errors_exit_2_and_1() {
    let bad_fault = droid("droid-sim")
        .args(["--app", "builtin:tiny", "--fault", "dump-error:7"])
        .output()
        .unwrap();
    assert_eq!(bad_fault.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_fault.stderr).contains("RATE"));
    let missing = Path::new("/nonexistent/model.json");
    let bad_model = droid("droid-sim")
        .args(["--app", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(bad_model.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad_model.stderr);
    assert!(stderr.starts_with("droid-sim: error: "), "{stderr}");
    assert!(bad_model.stdout.is_empty(), "no ready line");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    // Its own home: the console's token goes there.
    let home = tempfile::tempdir().unwrap();
    let busy = droid("droid-sim")
        .args(["--app", "builtin:tiny", "--port", &port])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(busy.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&busy.stderr)
        .contains(&format!("cannot listen on 127.0.0.1:{port}")));
    let help = droid("droid-sim").arg("--help").output().unwrap();
    let help = stdout(&help);
    for fault in [
        "disconnect-after:N",
        "dump-error:RATE",
        "slow:MS",
        "anr-on:SCREEN",
    ] {
        assert!(help.contains(fault), "--help documents {fault}");
    }
}
