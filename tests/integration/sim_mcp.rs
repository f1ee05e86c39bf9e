//! mobile-mcp (the MCP server agents drive phones with) against `droid-sim --app builtin:shop`,
//! in both its engines: the default one, which runs the `mobilecli` binary the npm package
//! ships, and `MOBILEMCP_LEGACY_ROBOT=1`, which runs the `adb` client. The test speaks MCP's
//! stdio transport (one JSON-RPC message per line) and confirms each action in the simulator's
//! truth log.
//!
//! The client comes from `tests/node/package-lock.json` (`npm install --prefix tests/node
//! --no-save`, which `.ci/run` does). Without node, the package or `adb` the test prints a skip notice and
//! passes, except under `DROID_REQUIRE_ADB=1`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use base64::Engine;
use serde_json::{json, Value};

use crate::common::{require_tool, root};
use crate::sim_adb::SimProcess;

const PACKAGE: &str = "com.example.shop";

/// mobile-mcp's entry point when the npm install ran; `None` (after a notice) when the test may skip.
fn mobile_mcp() -> Option<PathBuf> {
    if !require_tool("node", "nodejs") || !require_tool("adb", "adb") {
        return None;
    }
    let entry = root().join("tests/node/node_modules/@mobilenext/mobile-mcp/lib/index.js");
    if entry.is_file() {
        return Some(entry);
    }
    let install = "npm install --prefix tests/node --no-save";
    if std::env::var("DROID_REQUIRE_ADB").as_deref() == Ok("1") {
        panic!("DROID_REQUIRE_ADB=1 but mobile-mcp is not installed: {install}");
    }
    eprintln!("skipped: mobile-mcp is not installed ({install})");
    None
}

/// A mobile-mcp server on stdio, its device the simulator.
struct Mcp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    serial: String,
    home: PathBuf,
    /// The binary whose daemon the default engine starts, to stop it at the end.
    mobilecli: Option<PathBuf>,
}

impl Mcp {
    /// `home` holds mobilecli's daemon (its socket, pid and log), one per test, and the
    /// emulator console's token the simulator wrote.
    fn start(entry: &PathBuf, sim: &SimProcess, legacy: bool, home: &Path) -> Mcp {
        let mut command = Command::new("node");
        command
            .arg(entry)
            .env("ANDROID_ADB_SERVER_PORT", sim.port.to_string())
            .env("HOME", home)
            // Nothing leaves the machine: no usage reports.
            .env("MOBILEMCP_DISABLE_TELEMETRY", "1")
            .env_remove("ANDROID_SERIAL")
            .env_remove("ANDROID_HOME")
            .env_remove("MOBILEMCP_LEGACY_ROBOT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if legacy {
            command.env("MOBILEMCP_LEGACY_ROBOT", "1");
        }
        let mut child = command.spawn().expect("node runs mobile-mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Mcp {
            child,
            stdin,
            stdout,
            next_id: 0,
            serial: sim.serial.clone(),
            home: home.to_path_buf(),
            mobilecli: entry
                .ancestors()
                .nth(3)
                .map(|modules| modules.join("mobilecli-linux-amd64/mobilecli-linux-amd64")),
        };
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "droid-tests", "version": "1"}}),
        );
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// One request and its response (notifications and other messages in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id, method)
    }

    /// Sends a request without waiting: its id, for [`Mcp::response`].
    fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The response to request `id` (messages in between are skipped: no other request may be
    /// pending).
    fn response(&mut self, id: u64, method: &str) -> Value {
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).unwrap();
            assert!(read > 0, "mobile-mcp closed its output during {method}");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// A tool call: its text (the first content's), or `Err` with it when the tool failed.
    fn call(&mut self, tool: &str, args: Value) -> Result<String, String> {
        let pending = self.send_call(tool, args);
        self.answer(pending)
    }

    /// Starts a tool call; [`Mcp::answer`] reads its result.
    fn send_call(&mut self, tool: &str, mut args: Value) -> u64 {
        args["device"] = json!(self.serial);
        self.send_request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// The result of a call [`Mcp::send_call`] started.
    fn answer(&mut self, pending: u64) -> Result<String, String> {
        let response = self.response(pending, "tools/call");
        let result = &response["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // Legacy errors come back as text that asks the agent to fix the issue.
        let failed =
            result["isError"] == true || text.ends_with("Please fix the issue and try again.");
        match (response.get("error"), failed) {
            (Some(error), _) => Err(error.to_string()),
            (None, true) => Err(text),
            (None, false) => Ok(text),
        }
    }

    fn works(&mut self, tool: &str, args: Value) -> String {
        self.call(tool, args)
            .unwrap_or_else(|err| panic!("{tool} failed: {err}"))
    }

    /// A tool's image: its MIME type and bytes.
    fn image(&mut self, tool: &str) -> (String, Vec<u8>) {
        let response = self.request(
            "tools/call",
            json!({"name": tool, "arguments": {"device": self.serial}}),
        );
        let content = response["result"]["content"].as_array().unwrap();
        let image = content
            .iter()
            .find(|c| c["type"] == "image")
            .unwrap_or_else(|| panic!("{tool} gave no image: {response}"));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(image["data"].as_str().unwrap())
            .unwrap();
        (
            image["mimeType"].as_str().unwrap_or_default().to_string(),
            bytes,
        )
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // mobilecli's device commands start a daemon that outlives them: stop this test's.
        if let Some(mobilecli) = self.mobilecli.as_ref().filter(|m| m.is_file()) {
            let _ = Command::new(mobilecli)
                .args(["daemon", "stop"])
                .env("HOME", &self.home)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// What the simulator's truth log holds: the screen shown last and the inputs received.
fn truth(path: &std::path::Path) -> (String, Vec<Value>) {
    let lines: Vec<Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let screen = lines
        .iter()
        .rev()
        .find_map(|l| l["screen"].as_str())
        .unwrap_or_default()
        .to_string();
    let inputs = lines
        .into_iter()
        .filter(|l| l.get("input").is_some())
        .collect();
    (screen, inputs)
}

/// The centre of the element mobile-mcp lists with this text: `at=X,Y size=WxH` is its top
/// left corner and size.
fn centre_of(listing: &str, text: &str) -> (i64, i64) {
    let line = listing
        .lines()
        .find(|l| l.contains(&format!("text=\"{text}\"")))
        .unwrap_or_else(|| panic!("no {text:?} in {listing}"));
    let field = |name: &str| -> (i64, i64) {
        let value = line.split(&format!(" {name}=")).nth(1).unwrap();
        let value = value.split(' ').next().unwrap();
        let (a, b) = value.split_once([',', 'x']).unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    };
    let ((x, y), (w, h)) = (field("at"), field("size"));
    (x + w / 2, y + h / 2)
}

/// Waits until `pgrep ARGS` on the device finds a process (a bound against a hang, not a
/// measurement).
fn wait_for_process(sim: &SimProcess, pattern: &str) {
    for _ in 0..600 {
        if sim
            .adb("adb", &["shell", "pgrep", pattern])
            .status
            .success()
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no {pattern} process on the device");
}

/// A real APK (droid's APK writer) of a package the model does not have.
fn extra_apk(dir: &Path) -> PathBuf {
    let apk = dir.join("extra.apk");
    std::fs::write(
        &apk,
        droid::apk::build(&droid::apk::Manifest {
            package: EXTRA.into(),
            activities: vec![format!("{EXTRA}.Main")],
            launchers: vec![format!("{EXTRA}.Main")],
            ..Default::default()
        }),
    )
    .unwrap();
    apk
}

const EXTRA: &str = "com.example.extra";

/// Every Android tool of mobile-mcp 1.0.4 but the four of its remote device cloud, in one
/// engine, each confirmed in the truth log or on the device; the tools an engine does not offer
/// (or that need mobilecli's on-device agent) must fail, not hang.
fn drive(legacy: bool) {
    let Some(entry) = mobile_mcp() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (sim, log) = SimProcess::with_truth_log("builtin:shop", dir.path());
    let mut mcp = Mcp::start(&entry, &sim, legacy, sim.home.path());
    let engine = if legacy { "legacy" } else { "mobilecli" };

    let devices = mcp.works("mobile_list_available_devices", json!({}));
    assert!(
        devices.contains(&sim.serial) && devices.contains("android"),
        "{devices}"
    );
    if legacy {
        let apps = mcp.works("mobile_list_apps", json!({}));
        assert!(apps.contains(PACKAGE), "{apps}");
    } else {
        // mobilecli lists apps through its on-device agent, a dex it runs with app_process,
        // which the simulated phone cannot run: an error, at once.
        assert!(mcp.call("mobile_list_apps", json!({})).is_err());
    }
    mcp.works("mobile_launch_app", json!({"packageName": PACKAGE}));
    assert_eq!(
        truth(&log).0,
        "welcome",
        "{engine}: the shop opens on its start screen"
    );
    let size = mcp.works("mobile_get_screen_size", json!({}));
    assert!(size.contains("1080x2400"), "{size}");
    let front = mcp.call("mobile_get_foreground_app", json!({}));
    let location = mcp.call(
        "mobile_set_location",
        json!({"latitude": 48.85, "longitude": 2.35}),
    );
    // Where mobile-mcp's legacy engine has no such tool, it says so.
    let clipboard = mcp.call("mobile_clipboard", json!({}));
    assert!(clipboard.is_err(), "{engine}: clipboard {clipboard:?}");
    if legacy {
        for refused in [&front, &location] {
            let refused = refused.as_ref().unwrap_err();
            assert!(refused.contains("legacy robot mode"), "{refused}");
        }
    } else {
        assert!(front.unwrap().contains(PACKAGE));
        // Through the emulator console (`adb emu geo fix LONGITUDE LATITUDE`).
        location.unwrap();
        let (_, inputs) = truth(&log);
        let fix = inputs.last().unwrap();
        assert_eq!(
            (&fix["input"], &fix["longitude"], &fix["latitude"]),
            (&json!("geo_fix"), &json!(2.35), &json!(48.85))
        );
    }

    // Tap what the element listing shows, where it shows it.
    let listing = mcp.works("mobile_list_elements_on_screen", json!({}));
    let (x, y) = centre_of(&listing, "Skip");
    mcp.works(
        "mobile_click_on_screen_at_coordinates",
        json!({"x": x, "y": y}),
    );
    let (screen, inputs) = truth(&log);
    let tap = inputs.last().unwrap();
    assert_eq!(
        (tap["input"].as_str(), &tap["x"], &tap["y"]),
        (Some("tap"), &json!(x), &json!(y))
    );
    assert_eq!(screen, "login", "{engine}: Skip leads to the login screen");

    mcp.works("mobile_press_button", json!({"button": "BACK"}));
    let (screen, inputs) = truth(&log);
    assert!(inputs.last().unwrap()["key"]
        .as_str()
        .unwrap()
        .contains("BACK"));
    assert_eq!(screen, "welcome");

    mcp.works("mobile_swipe_on_screen", json!({"direction": "left"}));
    let (screen, inputs) = truth(&log);
    assert_eq!(inputs.last().unwrap()["input"], "swipe");
    assert_eq!(
        screen, "onboarding_delivery",
        "{engine}: a swipe left pages on"
    );

    mcp.works(
        "mobile_long_press_on_screen_at_coordinates",
        json!({"x": 540, "y": 1200}),
    );
    assert_eq!(truth(&log).1.last().unwrap()["input"], "swipe");
    let before = truth(&log).1.len();
    mcp.works("mobile_double_tap_on_screen", json!({"x": 540, "y": 1201}));
    let (_, inputs) = truth(&log);
    let taps: Vec<&Value> = inputs[before..]
        .iter()
        .filter(|i| i["input"] == "tap" && i["y"] == 1201)
        .collect();
    assert_eq!(taps.len(), 2, "{engine}: two taps");

    mcp.works(
        "mobile_type_keys",
        json!({"text": "hello", "submit": false}),
    );
    let (_, inputs) = truth(&log);
    assert!(inputs
        .iter()
        .any(|i| i["input"] == "text" && i["text"] == "hello"));

    // mobilecli scales the capture down to a JPEG; the legacy engine passes screencap's PNG on.
    let (mime, bytes) = mcp.image("mobile_take_screenshot");
    let magic: &[u8] = match mime.as_str() {
        "image/png" => b"\x89PNG",
        "image/jpeg" => b"\xff\xd8\xff",
        other => panic!("{engine}: a screenshot as {other:?}"),
    };
    assert!(bytes.starts_with(magic), "{engine}: not a {mime}");
    if mime == "image/png" {
        let shot = image::load_from_memory(&bytes).expect("a picture");
        assert_eq!((shot.width(), shot.height()), (1080, 2400));
    }
    let saved = dir.path().join("screen.png");
    mcp.works("mobile_save_screenshot", json!({"saveTo": saved}));
    let shot = image::open(&saved).expect("a saved picture");
    assert_eq!((shot.width(), shot.height()), (1080, 2400));

    mcp.works("mobile_set_orientation", json!({"orientation": "portrait"}));
    let orientation = mcp.works("mobile_get_orientation", json!({}));
    assert!(orientation.contains("portrait"), "{orientation}");

    // Several tools in one call.
    let batch = mcp.works(
        "mobile_batch_commands",
        json!({"steps": [
            {"name": "mobile_press_button", "arguments": {"button": "HOME"}},
            {"name": "mobile_launch_app", "arguments": {"packageName": PACKAGE}},
        ]}),
    );
    assert!(
        batch.contains("Step 1 (mobile_press_button)")
            && batch.contains("Step 2 (mobile_launch_app)")
            && !batch.contains("failed"),
        "{batch}"
    );
    let (screen, inputs) = truth(&log);
    let last: Vec<&str> = inputs
        .iter()
        .rev()
        .take(2)
        .filter_map(|i| i["input"].as_str())
        .collect();
    assert!(
        last.iter()
            .any(|i| *i == "launch" || *i == "start_activity"),
        "{engine}: {last:?}"
    );
    assert!(
        !screen.starts_with('@'),
        "{engine}: back in the app: {screen}"
    );

    // A screen recording until told to stop: mobilecli finds screenrecord with pgrep -f and
    // sends it SIGINT, and the MP4 is finished.
    let video = dir.path().join("recording.mp4");
    mcp.works("mobile_start_screen_recording", json!({"output": video}));
    wait_for_process(&sim, "screenrecord");
    mcp.works("mobile_press_button", json!({"button": "BACK"}));
    let stopped = mcp.works("mobile_stop_screen_recording", json!({}));
    assert!(stopped.starts_with("Recording stopped. File:"), "{stopped}");
    let recorded = std::fs::read(&video).unwrap();
    assert_eq!(&recorded[4..8], b"ftyp");
    assert!(recorded.windows(4).any(|w| w == b"moov"), "a finished MP4");

    // A crash, listed and read back through the crash buffer (`logcat -b crash -d -v year`).
    let crashes = mcp.works("mobile_list_crashes", json!({}));
    assert!(!crashes.contains("cache directory"), "{crashes}");
    sim.adb(
        "adb",
        &[
            "shell",
            "am",
            "start",
            "-n",
            &format!("{PACKAGE}/.SettingsActivity"),
        ],
    );
    let listing = mcp.works("mobile_list_elements_on_screen", json!({}));
    let (x, y) = centre_of(&listing, "Clear cache");
    mcp.works(
        "mobile_click_on_screen_at_coordinates",
        json!({"x": x, "y": y}),
    );
    let crashes = mcp.works("mobile_list_crashes", json!({}));
    let listed: Value = serde_json::from_str(&crashes).expect("a JSON list");
    let id = listed
        .as_array()
        .and_then(|all| all.first())
        .and_then(|crash| crash["id"].as_str())
        .unwrap_or_else(|| panic!("{engine}: no crash listed: {crashes}"))
        .to_string();
    let report = mcp.works("mobile_get_crash", json!({"id": id}));
    assert!(
        report.contains("java.lang.IllegalStateException: cache directory is locked"),
        "{report}"
    );

    // The live log: the lines logged after the call starts, as the device logs them.
    if legacy {
        let refused = mcp.call("mobile_get_device_logs", json!({"limit": 3}));
        assert!(refused.unwrap_err().contains("legacy robot mode"));
    } else {
        let pending = mcp.send_call("mobile_get_device_logs", json!({"limit": 4}));
        wait_for_process(&sim, "logcat");
        // The app crashed: starting it again logs its start (3 lines).
        sim.adb(
            "adb",
            &[
                "shell",
                "monkey",
                "-p",
                PACKAGE,
                "-c",
                "android.intent.category.LAUNCHER",
                "1",
            ],
        );
        let logs = mcp.answer(pending).expect("device logs");
        let entries: Vec<Value> = logs
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect();
        assert_eq!(entries.len(), 4, "{logs}");
        assert!(
            entries.iter().any(|e| e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(&format!("Displayed {PACKAGE}/")))
                && e["tag"] == "ActivityTaskManager"),
            "{logs}"
        );
    }

    mcp.works("mobile_open_url", json!({"url": "https://example.com/"}));
    assert_eq!(truth(&log).0, "@external:com.android.chrome");

    // A real APK (droid's writer), installed through `adb install`, and removed again.
    let apk = extra_apk(dir.path());
    mcp.works("mobile_install_app", json!({"path": apk}));
    let path = sim.adb("adb", &["shell", "pm", "path", EXTRA]);
    assert!(path.status.success(), "{engine}: the APK is installed");
    mcp.works("mobile_uninstall_app", json!({"bundle_id": EXTRA}));
    let path = sim.adb("adb", &["shell", "pm", "path", EXTRA]);
    assert!(!path.status.success(), "{engine}: the APK is gone");
    // The phone's own apps cannot go, and the tool says so.
    let refused = mcp.call(
        "mobile_uninstall_app",
        json!({"bundle_id": "com.android.settings"}),
    );
    assert!(
        refused
            .unwrap_err()
            .contains("DELETE_FAILED_INTERNAL_ERROR"),
        "{engine}"
    );

    mcp.works("mobile_launch_app", json!({"packageName": PACKAGE}));
    mcp.works("mobile_terminate_app", json!({"packageName": PACKAGE}));
    let (_, inputs) = truth(&log);
    assert!(inputs
        .iter()
        .any(|i| i["input"] == "force_stop" && i["package"] == PACKAGE));

    // The user uninstalls the app under test: it leaves the phone.
    mcp.works("mobile_launch_app", json!({"packageName": PACKAGE}));
    mcp.works("mobile_uninstall_app", json!({"bundle_id": PACKAGE}));
    assert_eq!(truth(&log).0, "@launcher", "{engine}: the app is gone");
    let packages = sim.adb("adb", &["shell", "pm", "list", "packages"]);
    assert!(!String::from_utf8_lossy(&packages.stdout).contains(PACKAGE));
    assert!(mcp
        .call("mobile_launch_app", json!({"packageName": PACKAGE}))
        .is_err());
}
#[test]
fn sim_mobile_mcp_drives_the_shop_through_mobilecli() {
    drive(false);
}

#[test]
fn sim_mobile_mcp_drives_the_shop_through_adb() {
    drive(true);
}
