//! The device facade against droid-sim behind a real socket: the notes app model, faults, IME.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use droid::adb::{AdbError, ServerConfig};
use droid::device::{AdbDevice, Device, DeviceConfig, DeviceError};

use super::common::{droid, fixtures};

/// A droid-sim process serving a model; killed when dropped.
pub struct SimProc {
    child: Child,
    pub port: u16,
    pub serial: String,
    pub truth_log: PathBuf,
    pub dir: tempfile::TempDir,
}

impl SimProc {
    /// Starts `droid-sim --app MODEL --port 0 --truth-log FILE EXTRA...` and waits for its
    /// ready line. Its home is the temp dir, so the emulator console's token file goes there.
    pub fn start(model: &Path, extra: &[&str]) -> SimProc {
        let dir = tempfile::tempdir().unwrap();
        let truth_log = dir.path().join("truth.jsonl");
        let mut child = droid("droid-sim")
            .env("HOME", dir.path())
            .arg("--app")
            .arg(model)
            .args(["--port", "0", "--truth-log"])
            .arg(&truth_log)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("droid-sim runs");
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        let ready: serde_json::Value = serde_json::from_str(&ready)
            .unwrap_or_else(|e| panic!("droid-sim ready line {ready:?}: {e}"));
        assert_eq!(ready["type"], "sim_ready");
        SimProc {
            child,
            port: ready["port"].as_u64().unwrap() as u16,
            serial: ready["serial"].as_str().unwrap().to_string(),
            truth_log,
            dir,
        }
    }

    /// The notes app model with the app launched (the simulator starts on the launcher).
    pub fn notes(extra: &[&str]) -> SimProc {
        let sim = SimProc::start(&notes_model(), extra);
        sim.device().launch(NOTES_PACKAGE).unwrap();
        sim
    }

    pub fn device_config(&self) -> DeviceConfig {
        let mut config = DeviceConfig::loopback(self.port, &self.serial);
        config.server.timeout = Duration::from_secs(10);
        config
    }

    pub fn device(&self) -> AdbDevice {
        AdbDevice::connect(self.device_config()).unwrap()
    }

    /// `--adb-port P --device S` for our binaries.
    pub fn flags(&self) -> Vec<String> {
        vec![
            "--adb-port".into(),
            self.port.to_string(),
            "--device".into(),
            self.serial.clone(),
        ]
    }

    fn truth(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.truth_log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// The screens the simulator showed, in order.
    pub fn screens(&self) -> Vec<String> {
        self.truth()
            .iter()
            .filter_map(|entry| entry["screen"].as_str().map(str::to_string))
            .collect()
    }

    /// The inputs the simulated device received, in order.
    pub fn inputs(&self) -> Vec<serde_json::Value> {
        self.truth()
            .into_iter()
            .filter(|entry| entry.get("input").is_some())
            .collect()
    }

    /// What the inputs typed: `input text` arguments exactly as the device received them (with
    /// its one rewrite, `%s` to a space), space/enter/tab key events, IME text.
    pub fn typed(&self) -> String {
        let mut typed = String::new();
        for input in self.inputs() {
            match (input["input"].as_str(), input["key"].as_str()) {
                (Some("text"), _) => {
                    typed.push_str(&input["text"].as_str().unwrap().replace("%s", " "))
                }
                (Some("ime_text"), _) => typed.push_str(input["text"].as_str().unwrap()),
                (Some("key"), Some("KEYCODE_SPACE")) => typed.push(' '),
                (Some("key"), Some("KEYCODE_ENTER")) => typed.push('\n'),
                (Some("key"), Some("KEYCODE_TAB")) => typed.push('\t'),
                _ => {}
            }
        }
        typed
    }
}

impl Drop for SimProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn notes_model() -> PathBuf {
    fixtures().join("apps/notes/model.json")
}

pub const NOTES_PACKAGE: &str = "com.simplemobiletools.notes.pro";
pub const NOTES_MAIN: &str = "com.simplemobiletools.notes.pro.activities.MainActivity";
/// The note body on the start screen (s001): focused, editable.
pub const NOTE_BODY: [i32; 4] = [0, 435, 1080, 2148];

/// The text of the editable element with exactly these bounds in a fresh dump (its container
/// has the same bounds).
pub fn text_at(device: &dyn Device, bounds: [i32; 4]) -> String {
    let xml = device.dump_hierarchy().unwrap();
    let elements = droid::ui::parse(&xml).unwrap();
    elements
        .iter()
        .find(|e| e.editable && <[i32; 4]>::from(e.bounds) == bounds)
        .map(|e| e.text.clone())
        .unwrap_or_else(|| panic!("no element at {bounds:?}"))
}

#[test]
fn facade_reads_the_simulated_notes_app() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    let device = sim.device();
    assert_eq!(device.serial(), sim.serial);
    assert_eq!(device.screen_size().unwrap(), (1080, 2280));
    let foreground = device.foreground().unwrap();
    assert_eq!(foreground.package, NOTES_PACKAGE);
    assert_eq!(foreground.activity, NOTES_MAIN);
    let xml = device.dump_hierarchy().unwrap();
    let expected = std::fs::read_to_string(fixtures().join("apps/notes/screens/s001.xml")).unwrap();
    assert_eq!(
        droid::ui::parse(&xml).unwrap(),
        droid::ui::parse(&expected).unwrap()
    );
    let png = device.screenshot().unwrap();
    assert!(image::load_from_memory(&png).is_ok());
    let info = device.info().unwrap();
    assert_eq!(info.screen_size, Some([1080, 2280]));
    assert!(info.sdk.is_some());
}

#[test]
fn raw_screenshots_convert_to_the_same_picture() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    let png = sim.device().screenshot().unwrap();
    let raw = AdbDevice::connect(DeviceConfig {
        screenshot: droid::device::ScreenshotMode::Raw,
        ..sim.device_config()
    })
    .unwrap()
    .screenshot()
    .unwrap();
    let png = image::load_from_memory(&png).unwrap().to_rgb8();
    let raw = image::load_from_memory(&raw).unwrap().to_rgb8();
    assert_eq!(png.dimensions(), raw.dimensions());
    assert!(png == raw, "raw and PNG screenshots differ");
}

#[test]
fn typed_text_appears_exactly_in_the_next_dump() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    let device = sim.device();
    let (x, y) = droid::ui::Bounds::from(NOTE_BODY).center();
    device.tap(x, y).unwrap();
    device.input_text("Buy milk  and eggs").unwrap();
    assert_eq!(text_at(&device, NOTE_BODY), "Buy milk  and eggs");
}

#[test]
fn non_ascii_text_without_the_ime_fails_clearly_and_types_nothing() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    let device = sim.device();
    let before = text_at(&device, NOTE_BODY);
    let err = device.input_text("你好 👋").unwrap_err();
    assert!(matches!(err, DeviceError::UnsupportedText(_)), "{err:?}");
    assert!(err.to_string().contains("ADB Keyboard"), "{err}");
    assert_eq!(text_at(&device, NOTE_BODY), before);
}

#[test]
fn non_ascii_text_goes_through_the_adb_keyboard_ime_once_selected() {
    droid::fixtures_or_skip!();
    const IME: &str = "com.android.adbkeyboard/.AdbIME";
    let sim = SimProc::notes(&["--ime", "adbkeyboard"]);
    let device = sim.device();
    let (x, y) = droid::ui::Bounds::from(NOTE_BODY).center();
    device.tap(x, y).unwrap();
    // Installed but not selected: refused, nothing typed.
    let err = device.input_text("你好").unwrap_err();
    assert!(matches!(err, DeviceError::UnsupportedText(_)), "{err:?}");
    for command in [format!("ime enable {IME}"), format!("ime set {IME}")] {
        assert!(device.client().shell(&command).unwrap().succeeded());
    }
    device.input_text("你好 👋 café").unwrap();
    assert_eq!(text_at(&device, NOTE_BODY), "你好 👋 café");
    assert_eq!(sim.typed(), "你好 👋 café");
}

#[test]
fn dump_errors_are_retried() {
    droid::fixtures_or_skip!();
    // Half the dumps fail with "could not get idle state" (from a fixed seed, so runs repeat).
    let sim = SimProc::notes(&["--fault", "dump-error:0.5"]);
    let device = AdbDevice::connect(DeviceConfig {
        dump_attempts: 8,
        ..sim.device_config()
    })
    .unwrap();
    for _ in 0..5 {
        let xml = device.dump_hierarchy().unwrap();
        assert!(droid::ui::parse(&xml).is_ok());
    }
    let once = AdbDevice::connect(DeviceConfig {
        dump_attempts: 1,
        ..sim.device_config()
    })
    .unwrap();
    let failures = (0..20).filter(|_| once.dump_hierarchy().is_err()).count();
    assert!(failures > 0, "without retries some dumps fail");
}

#[test]
fn a_disconnecting_device_gives_a_clear_error_not_a_hang() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&["--fault", "disconnect-after:3"]);
    let device = AdbDevice::connect(DeviceConfig {
        server: ServerConfig {
            timeout: Duration::from_secs(3),
            // Not waiting for the device to come back shows each failure as it is.
            wait_for_device: Duration::ZERO,
            ..sim.device_config().server
        },
        ..sim.device_config()
    })
    .unwrap();
    let mut last = None;
    for _ in 0..10 {
        match device.dump_hierarchy() {
            Ok(_) => continue,
            Err(err) => {
                last = Some(err);
                break;
            }
        }
    }
    let err = last.expect("the simulated device disconnects");
    assert!(
        matches!(err, DeviceError::Adb(AdbError::DeviceVanished { .. })),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains(&format!("device {} vanished", sim.serial)),
        "{err}"
    );
    // While it is gone, the next command says so instead of hanging.
    let err = device.dump_hierarchy().unwrap_err();
    assert!(
        matches!(err, DeviceError::Adb(AdbError::DeviceNotFound { .. })),
        "{err:?}"
    );
}
