//! The device facade: what droid asks of a phone, behind one trait, so other backends (Appium,
//! saved fixtures) can follow. [`AdbDevice`] implements it over [`crate::adb`].

pub mod cli;
pub mod parse;
pub mod text;

use std::time::Duration;

use crate::adb::{AdbClient, AdbError, ServerConfig, ShellOutput};
use crate::events::DeviceInfo;
use crate::ui::Bounds;

pub use parse::{AppVersion, Foreground};

/// Everything a device operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    #[error(transparent)]
    Adb(#[from] AdbError),
    #[error("`{command}` failed (exit {exit}): {detail}")]
    Command {
        command: String,
        exit: i32,
        detail: String,
    },
    #[error(
        "uiautomator found no window to dump (null root node); the screen may be off or locked"
    )]
    NullRoot,
    #[error("hierarchy dump failed after {attempts} attempts: {detail}")]
    Dump { attempts: u32, detail: String },
    #[error("cannot read {what}: {detail}")]
    Parse { what: String, detail: String },
    #[error("screenshot: {0}")]
    Screenshot(String),
    #[error("cannot type this text: {0}")]
    UnsupportedText(String),
    #[error("`{0}` is not a valid {1}")]
    InvalidArgument(String, &'static str),
    /// A touch that would land outside the screen, where the device ignores it silently.
    #[error("point ({x}, {y}) is outside the {width}x{height} screen")]
    OffScreen {
        x: i32,
        y: i32,
        width: u32,
        height: u32,
    },
    #[error("cannot launch {package}: {detail}")]
    Launch { package: String, detail: String },
}

/// How screenshots are taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ScreenshotMode {
    /// `screencap -p`: the device encodes PNG (self-describing, slower on the device).
    #[default]
    Png,
    /// Raw `screencap` pixels, encoded to PNG on the host (less device CPU, more bytes).
    Raw,
}

/// A direction for scrolls and swipes, named for what the content does for scrolls
/// (`Down` shows what is below: the finger moves up) and for the finger for swipes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    ScrollUp,
    ScrollDown,
    SwipeLeft,
    SwipeRight,
}

/// What droid asks of a device. Implementations must allow calls from two threads at once
/// (hierarchy and screenshot are captured concurrently).
pub trait Device: Sync {
    fn serial(&self) -> &str;
    /// Model, Android version, SDK and screen size.
    fn info(&self) -> Result<DeviceInfo, DeviceError>;
    /// Width and height in pixels, honouring a `wm size` override.
    fn screen_size(&self) -> Result<(u32, u32), DeviceError>;
    fn foreground(&self) -> Result<Foreground, DeviceError>;
    fn launch(&self, package: &str) -> Result<(), DeviceError>;
    fn force_stop(&self, package: &str) -> Result<(), DeviceError>;
    /// The uiautomator XML of the current window.
    fn dump_hierarchy(&self) -> Result<String, DeviceError>;
    /// A PNG of the screen.
    fn screenshot(&self) -> Result<Vec<u8>, DeviceError>;
    fn tap(&self, x: i32, y: i32) -> Result<(), DeviceError>;
    fn long_press(&self, x: i32, y: i32, ms: u32) -> Result<(), DeviceError>;
    fn swipe(&self, from: (i32, i32), to: (i32, i32), ms: u32) -> Result<(), DeviceError>;
    /// A scroll or swipe gesture inside `area` (the whole screen when `None`).
    fn scroll(&self, direction: Direction, area: Option<Bounds>) -> Result<(), DeviceError>;
    /// A key by name: `back`, `home`, `enter`, `KEYCODE_TAB`, or a key code number.
    fn key(&self, name: &str) -> Result<(), DeviceError>;
    /// Types text into the focused field, exactly; see [`text`] for how.
    fn input_text(&self, text: &str) -> Result<(), DeviceError>;
    /// Empties the focused field of a text `chars` long wherever the tap left the cursor:
    /// `chars` deletes before it, then `chars` after it (a multi-line field's end key would
    /// stop at the end of a line).
    fn clear_field(&self, chars: usize) -> Result<(), DeviceError> {
        for key in clearing_keys(chars) {
            self.key(key)?;
        }
        Ok(())
    }
    fn pull(&self, path: &str) -> Result<Vec<u8>, DeviceError>;
    /// The crash log buffer (`logcat -b crash`), cleared after reading when `clear`.
    fn crash_log(&self, clear: bool) -> Result<String, DeviceError>;
    /// The main and system log buffers (where ActivityManager reports ANRs), cleared after
    /// reading when `clear`.
    fn system_log(&self, _clear: bool) -> Result<String, DeviceError> {
        Ok(String::new())
    }
    fn app_version(&self, package: &str) -> Result<Option<AppVersion>, DeviceError>;
}

/// How an [`AdbDevice`] behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceConfig {
    pub server: ServerConfig,
    /// The device; `None` picks the only one attached.
    pub serial: Option<String>,
    pub screenshot: ScreenshotMode,
    /// Attempts at a hierarchy dump when uiautomator cannot get an idle state.
    pub dump_attempts: u32,
    /// Where uiautomator writes the dump on the device.
    pub dump_path: String,
}

impl DeviceConfig {
    /// The device `serial` behind an ADB server already listening on 127.0.0.1:`port`, such as
    /// droid-sim, which droid must never try to start.
    pub fn loopback(port: u16, serial: &str) -> DeviceConfig {
        DeviceConfig {
            server: ServerConfig {
                host: "127.0.0.1".into(),
                port,
                start_server: false,
                ..ServerConfig::default()
            },
            serial: Some(serial.to_string()),
            ..DeviceConfig::default()
        }
    }
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            server: ServerConfig::default(),
            serial: None,
            screenshot: ScreenshotMode::Png,
            dump_attempts: 3,
            dump_path: "/data/local/tmp/droid_dump.xml".into(),
        }
    }
}

/// A device reached through the ADB server.
#[derive(Debug)]
pub struct AdbDevice {
    client: AdbClient,
    config: DeviceConfig,
}

/// Swipe duration for scrolls: long enough not to fling.
const SCROLL_MS: u32 = 400;
const IDLE_ERROR: &str = "could not get idle state";
const NULL_ROOT: &str = "null root node";

impl AdbDevice {
    pub fn connect(config: DeviceConfig) -> Result<AdbDevice, DeviceError> {
        let client = AdbClient::connect(config.server.clone(), config.serial.as_deref())?;
        Ok(AdbDevice { client, config })
    }

    pub fn client(&self) -> &AdbClient {
        &self.client
    }

    /// Runs a command and insists on exit status 0.
    fn run(&self, command: &str) -> Result<ShellOutput, DeviceError> {
        succeeded(command, self.client.shell(command)?)
    }

    /// [`AdbDevice::run`] for a command that only reads: run again when the device went away
    /// during it and came back (see [`crate::adb::ServerConfig::wait_for_device`]).
    fn read(&self, command: &str) -> Result<ShellOutput, DeviceError> {
        succeeded(command, self.client.shell_reading(command)?)
    }

    fn getprop(&self, key: &str) -> Result<String, DeviceError> {
        Ok(self
            .read(&format!("getprop {key}"))?
            .stdout_text()
            .trim()
            .to_string())
    }

    fn dump_once(&self) -> Result<Result<String, String>, DeviceError> {
        let path = text::shell_quote(&self.config.dump_path);
        let output = self
            .client
            // Removing the old file first means a dump that fails without saying so cannot
            // hand back the previous screen.
            .shell_reading(&format!(
                "rm -f {path}; uiautomator dump {path} && cat {path}"
            ))?;
        let stdout = output.stdout_text();
        let all = format!("{stdout}\n{}", output.stderr_text());
        if all.contains(NULL_ROOT) {
            return Err(DeviceError::NullRoot);
        }
        if all.contains(IDLE_ERROR) || !output.succeeded() {
            return Ok(Err(first_line(&output)));
        }
        // uiautomator's own "dumped to" line comes before the file's content.
        match stdout.find("<?xml").or_else(|| stdout.find("<hierarchy")) {
            Some(start) => Ok(Ok(stdout[start..].to_string())),
            None => Ok(Err(format!(
                "no XML in the output: {}",
                first_line(&output)
            ))),
        }
    }

    /// Whether the ADB Keyboard is enabled and is the current input method.
    fn adb_keyboard_active(&self) -> Result<bool, DeviceError> {
        let enabled = self.run("ime list -s")?.stdout_text();
        if !parse::adb_keyboard_enabled(&enabled) {
            return Ok(false);
        }
        let current = self
            .run("settings get secure default_input_method")?
            .stdout_text();
        Ok(current.trim() == parse::ADB_KEYBOARD_IME)
    }
}

/// `output` when its exit status is 0, else the command's failure with the device's reason.
fn succeeded(command: &str, output: ShellOutput) -> Result<ShellOutput, DeviceError> {
    if output.succeeded() {
        Ok(output)
    } else {
        Err(DeviceError::Command {
            command: command.to_string(),
            exit: output.exit_code.map_or(-1, i32::from),
            detail: first_line(&output),
        })
    }
}

fn first_line(output: &ShellOutput) -> String {
    let stderr = output.stderr_text();
    let text = if stderr.trim().is_empty() {
        output.stdout_text()
    } else {
        stderr
    };
    telling_line(&text)
}

/// The first non-empty line of a command's output; when it only announces what follows
/// (`Exception occurred while executing 'keyevent':`), with the next line, which says why.
fn telling_line(text: &str) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(first) = lines.next() else {
        return "no output".to_string();
    };
    match lines.next() {
        Some(reason) if first.ends_with(':') => format!("{first} {reason}"),
        _ => first.to_string(),
    }
}

/// Typed text may be a password: a failed typing command is reported without its argument.
fn redact_text(err: DeviceError) -> DeviceError {
    match err {
        DeviceError::Command { command, exit, .. } => DeviceError::Command {
            command: command
                .split_once(' ')
                .map_or(command.clone(), |(program, _)| {
                    format!("{program} <text withheld>")
                }),
            exit,
            detail: "typing failed".into(),
        },
        other => other,
    }
}

/// Package names: letters, digits, `_` and dots (checked before they reach a shell).
fn check_package(package: &str) -> Result<(), DeviceError> {
    let valid = !package.is_empty()
        && package
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if valid {
        Ok(())
    } else {
        Err(DeviceError::InvalidArgument(
            package.to_string(),
            "package name",
        ))
    }
}

/// The keys that empty a field of `chars` characters around the cursor: `KEYCODE_DEL`
/// (backspace) and `KEYCODE_FORWARD_DEL`, as numbers, `chars` of each.
fn clearing_keys(chars: usize) -> impl Iterator<Item = &'static str> {
    std::iter::repeat_n("67", chars).chain(std::iter::repeat_n("112", chars))
}

/// Key events sent in one `input keyevent` command when emptying a field: one device round
/// trip per batch, short enough for any shell's command line.
const KEYS_PER_COMMAND: usize = 128;

/// The `input keyevent` commands that empty the focused field of a text `chars` long (see
/// [`Device::clear_field`]).
pub fn clearing_commands(chars: usize) -> Vec<String> {
    let keys: Vec<&str> = clearing_keys(chars).collect();
    keys.chunks(KEYS_PER_COMMAND)
        .map(|batch| format!("input keyevent {}", batch.join(" ")))
        .collect()
}

/// `back` → `KEYCODE_BACK`, `KEYCODE_TAB` stays, `66` stays; anything else is refused.
pub fn key_code(name: &str) -> Result<String, DeviceError> {
    let name = name.trim();
    let invalid = || DeviceError::InvalidArgument(name.to_string(), "key name");
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(invalid());
    }
    let upper = name.to_ascii_uppercase();
    if upper.chars().all(|c| c.is_ascii_digit()) {
        return Ok(upper);
    }
    match upper.strip_prefix("KEYCODE_") {
        Some("") => Err(invalid()),
        Some(_) => Ok(upper),
        None => Ok(format!("KEYCODE_{upper}")),
    }
}

/// Start and end of the finger for a gesture inside `area`.
pub fn gesture_points(direction: Direction, area: Bounds) -> ((i32, i32), (i32, i32)) {
    let (cx, cy) = area.center();
    let at = |from: i32, len: i32, percent: i32| from + len * percent / 100;
    let (w, h) = (area.width(), area.height());
    match direction {
        Direction::ScrollDown => ((cx, at(area.y1, h, 75)), (cx, at(area.y1, h, 25))),
        Direction::ScrollUp => ((cx, at(area.y1, h, 25)), (cx, at(area.y1, h, 75))),
        Direction::SwipeLeft => ((at(area.x1, w, 80), cy), (at(area.x1, w, 20), cy)),
        Direction::SwipeRight => ((at(area.x1, w, 20), cy), (at(area.x1, w, 80), cy)),
    }
}

impl Device for AdbDevice {
    fn serial(&self) -> &str {
        self.client.serial()
    }

    fn info(&self) -> Result<DeviceInfo, DeviceError> {
        let (w, h) = self.screen_size()?;
        let sdk = self.getprop("ro.build.version.sdk")?;
        Ok(DeviceInfo {
            serial: Some(self.serial().to_string()),
            model: Some(self.getprop("ro.product.model")?).filter(|m| !m.is_empty()),
            android_version: Some(self.getprop("ro.build.version.release")?)
                .filter(|v| !v.is_empty()),
            sdk: sdk.parse().ok(),
            screen_size: Some([w, h]),
        })
    }

    fn screen_size(&self) -> Result<(u32, u32), DeviceError> {
        let output = self.read("wm size")?.stdout_text();
        parse::screen_size_from_wm(&output).ok_or_else(|| DeviceError::Parse {
            what: "wm size".into(),
            detail: output.trim().to_string(),
        })
    }

    fn foreground(&self) -> Result<Foreground, DeviceError> {
        for command in [
            "dumpsys window displays",
            "dumpsys window windows",
            "dumpsys activity activities",
        ] {
            let output = self.client.shell_reading(command)?;
            if let Some(found) = parse::foreground_from_dumpsys(&output.stdout_text()) {
                return Ok(found);
            }
        }
        Err(DeviceError::Parse {
            what: "foreground app".into(),
            detail: "no focused or resumed activity in dumpsys window/activity".into(),
        })
    }

    fn launch(&self, package: &str) -> Result<(), DeviceError> {
        check_package(package)?;
        let output = self.client.shell(&format!(
            "monkey -p {package} -c android.intent.category.LAUNCHER 1"
        ))?;
        let all = format!("{}{}", output.stdout_text(), output.stderr_text());
        if output.succeeded() && !all.contains("monkey aborted") && !all.contains("Error") {
            Ok(())
        } else {
            Err(DeviceError::Launch {
                package: package.to_string(),
                detail: first_line(&output),
            })
        }
    }

    fn force_stop(&self, package: &str) -> Result<(), DeviceError> {
        check_package(package)?;
        self.run(&format!("am force-stop {package}")).map(drop)
    }

    fn dump_hierarchy(&self) -> Result<String, DeviceError> {
        let attempts = self.config.dump_attempts.max(1);
        let mut last = String::new();
        for attempt in 1..=attempts {
            match self.dump_once()? {
                Ok(xml) => return Ok(xml),
                Err(detail) => last = detail,
            }
            if attempt < attempts {
                // uiautomator waits up to 10 s for idle itself; a short pause lets animations end.
                std::thread::sleep(Duration::from_millis(200 * u64::from(attempt)));
            }
        }
        Err(DeviceError::Dump {
            attempts,
            detail: last,
        })
    }

    fn screenshot(&self) -> Result<Vec<u8>, DeviceError> {
        match self.config.screenshot {
            ScreenshotMode::Png => {
                let png = self.client.exec_reading("screencap -p")?;
                if png.starts_with(b"\x89PNG\r\n\x1a\n") {
                    Ok(png)
                } else {
                    Err(DeviceError::Screenshot(format!(
                        "screencap -p returned {} bytes that are not a PNG",
                        png.len()
                    )))
                }
            }
            ScreenshotMode::Raw => raw_to_png(&self.client.exec_reading("screencap")?),
        }
    }

    fn tap(&self, x: i32, y: i32) -> Result<(), DeviceError> {
        self.run(&format!("input tap {x} {y}")).map(drop)
    }

    fn long_press(&self, x: i32, y: i32, ms: u32) -> Result<(), DeviceError> {
        // A swipe that does not move is a long press on every Android version.
        self.run(&format!("input swipe {x} {y} {x} {y} {ms}"))
            .map(drop)
    }

    fn swipe(&self, from: (i32, i32), to: (i32, i32), ms: u32) -> Result<(), DeviceError> {
        self.run(&format!(
            "input swipe {} {} {} {} {ms}",
            from.0, from.1, to.0, to.1
        ))
        .map(drop)
    }

    fn scroll(&self, direction: Direction, area: Option<Bounds>) -> Result<(), DeviceError> {
        let area = match area {
            Some(area) => area,
            None => {
                let (w, h) = self.screen_size()?;
                Bounds::from([0, 0, w as i32, h as i32])
            }
        };
        let (from, to) = gesture_points(direction, area);
        self.swipe(from, to, SCROLL_MS)
    }

    fn key(&self, name: &str) -> Result<(), DeviceError> {
        self.run(&format!("input keyevent {}", key_code(name)?))
            .map(drop)
    }

    fn clear_field(&self, chars: usize) -> Result<(), DeviceError> {
        for command in clearing_commands(chars) {
            self.run(&command)?;
        }
        Ok(())
    }

    fn input_text(&self, text: &str) -> Result<(), DeviceError> {
        if text::is_plain_ascii(text) {
            let commands = text::ascii_commands(text)
                .map_err(|e| DeviceError::UnsupportedText(e.to_string()))?;
            for command in commands {
                self.run(&command).map_err(redact_text)?;
            }
            return Ok(());
        }
        if text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            return Err(DeviceError::UnsupportedText(
                "control characters cannot be typed".into(),
            ));
        }
        if !self.adb_keyboard_active()? {
            return Err(DeviceError::UnsupportedText(format!(
                "non-ASCII text needs the ADB Keyboard IME ({}) installed and selected; \
                 `input text` would garble it",
                parse::ADB_KEYBOARD_IME
            )));
        }
        self.run(&text::ime_broadcast_command(text))
            .map(drop)
            .map_err(redact_text)
    }

    fn pull(&self, path: &str) -> Result<Vec<u8>, DeviceError> {
        Ok(self.client.pull(path)?)
    }

    fn crash_log(&self, clear: bool) -> Result<String, DeviceError> {
        let log = self.run("logcat -b crash -d")?.stdout_text();
        if clear {
            self.run("logcat -b crash -c")?;
        }
        Ok(log)
    }

    fn system_log(&self, clear: bool) -> Result<String, DeviceError> {
        let log = self.run("logcat -b main,system -d")?.stdout_text();
        if clear {
            self.run("logcat -b main,system -c")?;
        }
        Ok(log)
    }

    fn app_version(&self, package: &str) -> Result<Option<AppVersion>, DeviceError> {
        check_package(package)?;
        let output = self.run(&format!("dumpsys package {package}"))?;
        Ok(parse::app_version_from_dumpsys(&output.stdout_text()))
    }
}

/// Raw `screencap` output (u32 width, height, format, [colour space], pixels) as a PNG.
pub fn raw_to_png(raw: &[u8]) -> Result<Vec<u8>, DeviceError> {
    let bad = |detail: String| DeviceError::Screenshot(detail);
    let word = |i: usize| -> Option<u32> {
        raw.get(i * 4..i * 4 + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(width), Some(height), Some(format)) = (word(0), word(1), word(2)) else {
        return Err(bad(format!(
            "raw screencap of {} bytes has no header",
            raw.len()
        )));
    };
    let bytes_per_pixel = match format {
        1 | 2 | 5 => 4,
        3 => 3,
        4 => 2,
        other => return Err(bad(format!("unsupported raw pixel format {other}"))),
    };
    let pixels_len = (width as usize)
        .checked_mul(height as usize)
        .and_then(|n| n.checked_mul(bytes_per_pixel))
        .ok_or_else(|| bad("absurd raw screen size".into()))?;
    // The header is 16 bytes since Android 8 (colour space added), 12 before.
    let header = match raw.len().checked_sub(pixels_len) {
        Some(16) => 16,
        Some(12) => 12,
        _ => {
            return Err(bad(format!(
                "raw screencap is {} bytes, expected {pixels_len} pixels bytes plus a header",
                raw.len()
            )))
        }
    };
    let pixels = &raw[header..];
    let mut rgba = Vec::with_capacity(width as usize * height as usize * 4);
    match format {
        1 | 2 => {
            for p in pixels.chunks_exact(4) {
                rgba.extend_from_slice(&[p[0], p[1], p[2], 255]);
            }
        }
        5 => {
            for p in pixels.chunks_exact(4) {
                rgba.extend_from_slice(&[p[2], p[1], p[0], 255]);
            }
        }
        3 => {
            for p in pixels.chunks_exact(3) {
                rgba.extend_from_slice(&[p[0], p[1], p[2], 255]);
            }
        }
        _ => {
            for p in pixels.chunks_exact(2) {
                let v = u16::from_le_bytes([p[0], p[1]]);
                let r = ((v >> 11) & 0x1f) as u8;
                let g = ((v >> 5) & 0x3f) as u8;
                let b = (v & 0x1f) as u8;
                rgba.extend_from_slice(&[r << 3 | r >> 2, g << 2 | g >> 4, b << 3 | b >> 2, 255]);
            }
        }
    }
    let image = image::RgbaImage::from_raw(width, height, rgba)
        .ok_or_else(|| bad("raw pixels do not fill the image".into()))?;
    let mut png = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| bad(format!("encoding PNG: {e}")))?;
    Ok(png)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announced_exception_is_shown_with_its_reason() {
        crate::fixtures_or_skip!();
        let am = std::fs::read_to_string(
            crate::fixtures::location()
                .join("device/cmd/am_start_bad_component_exception_android12plus_excerpt.txt"),
        )
        .unwrap();
        assert_eq!(
            telling_line(&am),
            "Exception occurred while executing 'start': java.lang.IllegalArgumentException: \
             Bad component name: com.android.server.telecom/"
        );
        assert_eq!(
            telling_line("Error: no such key\nmore"),
            "Error: no such key"
        );
        assert_eq!(telling_line(" \n"), "no output");
    }

    #[test]
    fn key_names() {
        assert_eq!(key_code("back").unwrap(), "KEYCODE_BACK");
        assert_eq!(key_code("KEYCODE_TAB").unwrap(), "KEYCODE_TAB");
        assert_eq!(key_code("66").unwrap(), "66");
        assert_eq!(key_code("app_switch").unwrap(), "KEYCODE_APP_SWITCH");
        for bad in ["", "back; reboot", "a b", "$(id)", "KEYCODE_"] {
            assert!(key_code(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn package_names_are_checked() {
        assert!(check_package("com.example.app_2").is_ok());
        for bad in ["", "com.x;reboot", "a b", "$(id)"] {
            assert!(check_package(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn gestures_stay_inside_the_area() {
        let area = Bounds::from([100, 200, 500, 1000]);
        for direction in [
            Direction::ScrollUp,
            Direction::ScrollDown,
            Direction::SwipeLeft,
            Direction::SwipeRight,
        ] {
            let (from, to) = gesture_points(direction, area);
            assert!(area.contains(from.0, from.1) && area.contains(to.0, to.1));
        }
        let (from, to) = gesture_points(Direction::ScrollDown, area);
        assert!(from.1 > to.1, "scrolling down moves the finger up");
        let (from, to) = gesture_points(Direction::SwipeLeft, area);
        assert!(from.0 > to.0);
    }

    #[test]
    fn raw_screencap_formats_convert() {
        let mut raw = Vec::new();
        for v in [2u32, 1, 4, 1] {
            raw.extend_from_slice(&v.to_le_bytes());
        }
        // Two RGB_565 pixels: pure red, pure blue.
        raw.extend_from_slice(&0xf800u16.to_le_bytes());
        raw.extend_from_slice(&0x001fu16.to_le_bytes());
        let png = raw_to_png(&raw).unwrap();
        let image = image::load_from_memory(&png).unwrap().to_rgba8();
        assert_eq!(image.get_pixel(0, 0).0, [255, 0, 0, 255]);
        assert_eq!(image.get_pixel(1, 0).0, [0, 0, 255, 255]);
        // BGRA with the old 12-byte header.
        let mut raw = Vec::new();
        for v in [1u32, 1, 5] {
            raw.extend_from_slice(&v.to_le_bytes());
        }
        raw.extend_from_slice(&[10, 20, 30, 255]);
        let image = image::load_from_memory(&raw_to_png(&raw).unwrap())
            .unwrap()
            .to_rgba8();
        assert_eq!(image.get_pixel(0, 0).0, [30, 20, 10, 255]);
        assert!(raw_to_png(&raw[..10]).is_err());
        assert!(raw_to_png(&[0; 16]).is_err());
    }
}
