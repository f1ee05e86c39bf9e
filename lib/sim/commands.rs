//! The device's programs: what `uiautomator`, `screencap`, `input`, `dumpsys`, `am`, `pm`, ... print
//! and do on the simulated phone. Output shapes follow the real samples in
//! `../shared/fixtures/device/`; the behaviour itself lives in [`World`], never here.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine;
use sha2::{Digest, Sha256};

use super::fault::{Faults, Latency};
use super::render;
use super::shell::{lock, FsHandle, Output, Programs, Session};
use super::world::{InputError, LaunchError, World};

/// Android 13 (API 33), as the samples in the fixtures.
const SDK: &str = "33";
const DENSITY: u32 = 420;
const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";
const PCAPDROID_CONTROL: &str = "com.emanuelef.remote_capture/.activities.CaptureCtrl";
const PCAPDROID_DIR: &str = "/sdcard/Download/PCAPdroid";
/// `screenrecord --time-limit` default and maximum on classic builds.
const SCREENRECORD_MAX_SECS: u64 = 180;
/// How often screenrecord samples the screen, and checks whether its client is still there.
const FRAME_INTERVAL: Duration = Duration::from_secs(1);
const HANGUP_POLL: Duration = Duration::from_millis(200);
/// The `input` usage text of Android 11+ (`input_usage_android11plus.txt`).
const INPUT_USAGE: &str = "Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]

The sources are:
      dpad
      keyboard
      mouse
      touchpad
      gamepad
      touchnavigation
      joystick
      touchscreen
      stylus
      trackball

-d: specify the display ID.
      (Default: -1 for key event, 0 for motion event if not specified.)
The commands and default sources are:
      text <string> (Default: touchscreen)
      keyevent [--longpress] <key code number or name> ... (Default: keyboard)
      tap <x> <y> (Default: touchscreen)
      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      press (Default: trackball)
      roll <dx> <dy> (Default: trackball)
      motionevent <DOWN|UP|MOVE> <x> <y> (Default: touchscreen)
";
const INPUT_SOURCES: &[&str] = &[
    "dpad",
    "keyboard",
    "mouse",
    "touchpad",
    "gamepad",
    "touchnavigation",
    "joystick",
    "touchscreen",
    "stylus",
    "trackball",
];

/// A signal a background-ish program (screenrecord) can receive from `kill`/`pkill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    /// SIGINT / SIGTERM / SIGHUP: finish cleanly.
    Stop,
    /// SIGKILL: die at once, leaving whatever was written.
    Kill,
}

#[derive(Debug)]
struct Process {
    pid: u32,
    name: &'static str,
    signal: Arc<(Mutex<Option<Signal>>, Condvar)>,
}

/// A running PCAPdroid capture.
#[derive(Debug)]
struct Capture {
    started: Instant,
    path: String,
    app: String,
}

/// The simulated phone as the shell sees it: the world plus storage, faults, latency and the
/// few long-running programs.
#[derive(Debug)]
pub struct Device {
    world: Mutex<World>,
    pub fs: FsHandle,
    pub faults: Faults,
    latency: Latency,
    serial: String,
    processes: Mutex<Vec<Process>>,
    next_pid: AtomicU32,
    capture: Mutex<Option<Capture>>,
}

fn guard<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn text(out: impl Into<String>) -> Output {
    Output::ok(out.into().into_bytes())
}

fn error(message: impl Into<String>, status: i32) -> Output {
    Output::error(message.into().into_bytes(), status)
}

/// Seven hex digits from a name: the identity hashes dumpsys prints (`Window{1651cd4 ...}`).
fn short_hash(name: &str) -> String {
    let digest = Sha256::digest(name.as_bytes());
    format!(
        "{:07x}",
        u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) >> 4
    )
}

/// `pkg/.Cls` when the class is in the package, as ActivityRecord prints it.
fn short_component(package: &str, activity: &str) -> String {
    let class = activity
        .strip_prefix(package)
        .filter(|rest| rest.starts_with('.'));
    match class {
        Some(rest) => format!("{package}/{rest}"),
        None if activity.starts_with('.') => format!("{package}/{activity}"),
        None => format!("{package}/{activity}"),
    }
}

fn full_class(package: &str, activity: &str) -> String {
    match activity.strip_prefix('.') {
        Some(rest) => format!("{package}.{rest}"),
        None => activity.to_string(),
    }
}

impl Device {
    pub fn new(world: World, faults: Faults, latency: Latency, serial: String) -> Device {
        let mut world = world;
        world.set_anr_screen(faults.anr_screen());
        Device {
            world: Mutex::new(world),
            fs: FsHandle::default(),
            faults,
            latency,
            serial,
            processes: Mutex::new(Vec::new()),
            next_pid: AtomicU32::new(9000),
            capture: Mutex::new(None),
        }
    }

    fn world(&self) -> MutexGuard<'_, World> {
        guard(&self.world)
    }

    pub fn screen_size(&self) -> (u32, u32) {
        self.world().screen_size()
    }

    /// Ends every long-running program (the server is shutting down).
    pub fn interrupt_all(&self) {
        for process in guard(&self.processes).iter() {
            let (slot, wake) = &*process.signal;
            *guard(slot) = Some(Signal::Stop);
            wake.notify_all();
        }
    }

    fn dispatch(&self, argv: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
        let args = &argv[1..];
        match argv[0].as_str() {
            "echo" => echo(args),
            "true" => Output::status(0),
            "false" => Output::status(1),
            "cat" => cat(args, session, fs),
            "rm" => rm(args, fs),
            "ls" => ls(args, fs),
            "mkdir" => mkdir(args, fs),
            "touch" => touch(args, fs),
            "sleep" => sleep(args),
            "getprop" => self.getprop(args),
            "wm" => self.wm(args),
            "dumpsys" => self.dumpsys(args),
            "uiautomator" => self.uiautomator(args, fs),
            "screencap" => self.screencap(args, fs),
            "input" => self.input(args),
            "monkey" => self.monkey(args),
            "am" => self.am(args, fs),
            "pm" => self.pm(args),
            "logcat" => self.logcat(args),
            "screenrecord" => self.screenrecord(args, session, fs),
            "ime" => self.ime(args),
            "settings" => self.settings(args),
            "pidof" => self.pidof(args),
            "kill" => self.kill(args),
            "pkill" => self.pkill(args),
            name => error(
                format!("/system/bin/sh: {name}: inaccessible or not found\n"),
                127,
            ),
        }
    }

    fn props(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("ro.build.version.sdk", SDK.to_string()),
            ("ro.build.version.release", "13".to_string()),
            ("ro.build.version.codename", "REL".to_string()),
            ("ro.build.type", "userdebug".to_string()),
            ("ro.build.id", "TQ3A.230805.001".to_string()),
            (
                "ro.build.fingerprint",
                "droid/sim_x86_64/sim:13/TQ3A.230805.001/1:userdebug/test-keys".to_string(),
            ),
            ("ro.product.brand", "droid".to_string()),
            ("ro.product.manufacturer", "droid".to_string()),
            ("ro.product.model", "droid_sim".to_string()),
            ("ro.product.name", "sim_x86_64".to_string()),
            ("ro.product.device", "sim".to_string()),
            ("ro.product.cpu.abi", "x86_64".to_string()),
            ("ro.serialno", self.serial.clone()),
            ("ro.kernel.qemu", "1".to_string()),
            ("ro.sf.lcd_density", DENSITY.to_string()),
            ("sys.boot_completed", "1".to_string()),
            ("persist.sys.locale", "en-US".to_string()),
        ])
    }

    fn getprop(&self, args: &[String]) -> Output {
        let props = self.props();
        match args.first() {
            Some(key) => text(format!(
                "{}\n",
                props.get(key.as_str()).map_or("", String::as_str)
            )),
            None => text(
                props
                    .iter()
                    .map(|(key, value)| format!("[{key}]: [{value}]\n"))
                    .collect::<String>(),
            ),
        }
    }

    fn wm(&self, args: &[String]) -> Output {
        let (width, height) = self.screen_size();
        match args.first().map(String::as_str) {
            Some("size") if args.len() == 1 => text(format!("Physical size: {width}x{height}\n")),
            Some("density") if args.len() == 1 => text(format!("Physical density: {DENSITY}\n")),
            Some("size" | "density") => {
                error("Error: changing the display is not simulated\n", 255)
            }
            _ => error("Error: unknown command\n", 255),
        }
    }

    fn focus_lines(&self) -> (String, String) {
        let world = self.world();
        let front = world.foreground();
        let component = short_component(&front.package, &front.activity);
        let record = format!(
            "ActivityRecord{{{} u0 {component} t{}}}",
            short_hash(&component),
            task_id(&front.package)
        );
        let window = if world.anr_showing() {
            format!("Application Not Responding: {}", front.package)
        } else {
            format!(
                "{}/{}",
                front.package,
                full_class(&front.package, &front.activity)
            )
        };
        let window = format!("Window{{{} u0 {window}}}", short_hash(&window));
        (window, record)
    }

    fn dumpsys(&self, args: &[String]) -> Output {
        let (width, height) = self.screen_size();
        let (window, record) = self.focus_lines();
        let display = format!(
            "  Display: mDisplayId=0 rootTasks=4\n    init={width}x{height} {DENSITY}dpi cur={width}x{height} app={width}x{} rng={width}x{width}-{height}x{height}\n    deferred=false mLayoutNeeded=false mTouchExcludeRegion=SkRegion((0,0,{width},{height}))\n\n",
            height.saturating_sub(126)
        );
        let displays = format!(
            "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n{display}  mCurrentFocus={window}\n  mFocusedApp={record}\n\n  displayId=0\n"
        );
        let windows = format!(
            "WINDOW MANAGER WINDOWS (dumpsys window windows)\n  Window #0 Window{{{} u0 NavigationBar0}}:\n    mDisplayId=0 rootTaskId=1 mSession=Session{{5fcd691 2420:u0a10086}}\n    mOwnerUid=10086 showForAllUsers=true package=com.android.systemui appop=NONE\n  Window #1 Window{{{} u0 StatusBar}}:\n    mDisplayId=0 rootTaskId=1 mSession=Session{{5fcd691 2420:u0a10086}}\n    mOwnerUid=10086 showForAllUsers=true package=com.android.systemui appop=NONE\n  Window #2 {window}:\n    mDisplayId=0 rootTaskId=12 mSession=Session{{8d1c2a0 4242:u0a10123}}\n    mOwnerUid=10123 showForAllUsers=false appop=NONE\n    mViewVisibility=0x0 mHaveFrame=true mObscured=false\n\n  mTopFocusedDisplayId=0\n  mSystemBooted=true mDisplayEnabled=true\n",
            short_hash("NavigationBar0"),
            short_hash("StatusBar")
        );
        match args.first().map(String::as_str) {
            Some("window") => match args.get(1).map(String::as_str) {
                Some("displays") => text(displays),
                Some("windows") => text(windows),
                None => text(format!("{windows}\n{displays}")),
                Some(_) => text(displays),
            },
            Some("activity") => match args.get(1).map(String::as_str) {
                Some("activities" | "a") | None => {
                    let front = self.world().foreground();
                    let task = task_id(&front.package);
                    text(format!(
                        "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\nDisplay #0 (activities from top to bottom):\n  * Task{{{} #{task} type=standard A=10123:{pkg} U=0 visible=true visibleRequested=true mode=fullscreen translucent=false sz=1}}\n    * Hist  #0: {record}\n      packageName={pkg} processName={pkg}\n\n  Resumed activities in task display areas (from top to bottom):\n    Resumed: {record}\n\n  ResumedActivity: {record}\n\nActivityTaskSupervisor state:\n{display}  mCurrentFocus={window}\n  mFocusedApp={record}\n",
                        short_hash(&front.package),
                        pkg = front.package
                    ))
                }
                Some(other) => text(format!(
                    "Unknown command: {other}\nBad activity command, or no activities match: {other}\nUse -h for help.\n"
                )),
            },
            Some("package") => match args.get(1) {
                Some(package) => self.dumpsys_package(package),
                None => text("Packages:\n"),
            },
            Some(service) => error(format!("Can't find service: {service}\n"), 0),
            None => text(format!("{windows}\n{displays}")),
        }
    }

    fn dumpsys_package(&self, package: &str) -> Output {
        let Some(version) = self.world().version_name(package) else {
            return text("");
        };
        let path = apk_dir(package);
        text(format!(
            "Packages:\n  Package [{package}] ({}):\n    userId=10123\n    pkg=Package{{{} {package}}}\n    codePath={path}\n    resourcePath={path}\n    versionCode=1 minSdk=24 targetSdk={SDK}\n    versionName={version}\n    splits=[base]\n    apkSigningVersion=3\n    dataDir=/data/user/0/{package}\n    timeStamp=2026-01-01 00:00:00\n    lastUpdateTime=2026-01-01 00:00:00\n",
            short_hash(package),
            short_hash(&path)
        ))
    }

    fn uiautomator(&self, args: &[String], fs: &FsHandle) -> Output {
        if args.first().map(String::as_str) != Some("dump") {
            return error(
                "Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\nruntest: executes UI automation tests\n\ndump: creates an XML dump of current UI hierarchy\n\nevents: prints out accessibility events until terminated\n",
                0,
            );
        }
        let path = args[1..]
            .iter()
            .rfind(|arg| !arg.starts_with('-'))
            .cloned()
            .unwrap_or_else(|| "/sdcard/window_dump.xml".to_string());
        if self.faults.dump_fails() {
            return error("ERROR: could not get idle state.\n", 0);
        }
        let xml = self.world().hierarchy_xml();
        let done = format!("UI hierchary dumped to: {path}\n");
        if path == "/dev/tty" || path == "/dev/stdout" {
            return text(format!("{xml}{done}"));
        }
        match lock(fs).write(&path, xml.as_bytes(), false) {
            Ok(()) => text(done),
            Err(err) => error(
                format!("java.io.FileNotFoundException: {path}: open failed: {err}\n"),
                1,
            ),
        }
    }

    fn screencap(&self, args: &[String], fs: &FsHandle) -> Output {
        let mut png = false;
        let mut file = None;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "-p" => png = true,
                "-d" => {
                    iter.next();
                }
                "-h" => {
                    return error(
                        "usage: screencap [-hp] [-d display-id] [FILENAME]\n   -h: this message\n   -p: save the file as a png.\n   -d: specify the display ID to capture (default: 0)\nIf FILENAME ends with .png it will be saved as a png.\nIf FILENAME is not given, the results will be printed to stdout.\n",
                        0,
                    )
                }
                other => file = Some(other.to_string()),
            }
        }
        if file.as_deref().is_some_and(|f| f.ends_with(".png")) {
            png = true;
        }
        let image = self.world().screenshot();
        let bytes = if png {
            render::png(&image)
        } else {
            raw_screencap(&image)
        };
        match file {
            None => Output::ok(bytes),
            Some(path) => match lock(fs).write(&path, &bytes, false) {
                Ok(()) => Output::default(),
                Err(err) => error(format!("Error opening file: {path} ({err})\n"), 1),
            },
        }
    }

    fn input(&self, args: &[String]) -> Output {
        let usage = || error(INPUT_USAGE, 1);
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        if args.first().is_some_and(|a| INPUT_SOURCES.contains(a)) {
            args.remove(0);
        }
        if args.first() == Some(&"-d") {
            if args.len() < 2 {
                return usage();
            }
            args.drain(..2);
        }
        let Some((command, rest)) = args.split_first() else {
            return usage();
        };
        let numbers = |values: &[&str]| -> Option<Vec<i32>> {
            values
                .iter()
                .map(|v| v.parse::<f32>().ok().map(|f| f as i32))
                .collect()
        };
        match (*command, rest) {
            ("tap", [x, y]) => match numbers(&[x, y]) {
                Some(p) => {
                    self.world().tap(p[0], p[1]);
                    Output::default()
                }
                None => number_error(rest),
            },
            ("swipe" | "draganddrop", [x1, y1, x2, y2, duration @ ..]) if duration.len() <= 1 => {
                let Some(p) = numbers(&[x1, y1, x2, y2]) else {
                    return number_error(rest);
                };
                let default = if *command == "swipe" { 300 } else { 2000 };
                let ms = match duration.first() {
                    Some(ms) => match ms.parse::<u64>() {
                        Ok(ms) => ms,
                        Err(_) => return number_error(duration),
                    },
                    None => default,
                };
                self.world().swipe(p[0], p[1], p[2], p[3], ms);
                Output::default()
            }
            ("text", [typed]) => match self.world().input_text(typed) {
                Ok(()) => Output::default(),
                Err(err) => input_exception("text", &err),
            },
            ("keyevent", keys) if !keys.is_empty() => {
                let keys: Vec<&str> = keys
                    .iter()
                    .copied()
                    .filter(|k| *k != "--longpress" && *k != "--doubletap")
                    .collect();
                let mut world = self.world();
                for key in keys {
                    if let Err(err) = world.key(key) {
                        return input_exception("keyevent", &err);
                    }
                }
                Output::default()
            }
            ("press", []) => match self.world().key("KEYCODE_DPAD_CENTER") {
                Ok(()) => Output::default(),
                Err(err) => input_exception("press", &err),
            },
            _ => usage(),
        }
    }

    fn monkey(&self, args: &[String]) -> Output {
        let package = args
            .iter()
            .position(|a| a == "-p")
            .and_then(|i| args.get(i + 1));
        let Some(package) = package else {
            return error("** Error: you must specify a package with -p\n", 1);
        };
        match self.world().launch(package) {
            Ok(()) => text(
                "Events injected: 1\n## Network stats: elapsed time=4ms (0ms mobile, 0ms wifi, 4ms not connected)\n",
            ),
            Err(_) => Output {
                stdout: b"** No activities found to run, monkey aborted.\n".to_vec(),
                stderr: Vec::new(),
                status: 252,
            },
        }
    }

    fn am(&self, args: &[String], fs: &FsHandle) -> Output {
        match args.first().map(String::as_str) {
            Some("start" | "start-activity") => self.am_start(&args[1..], fs),
            Some("force-stop" | "kill") => match args.get(1) {
                Some(package) => {
                    self.world().force_stop(package);
                    Output::default()
                }
                None => error("Error: no package specified\n", 255),
            },
            Some("broadcast") => self.am_broadcast(&args[1..]),
            Some(other) => error(
                format!("Unknown command: {other}\n"),
                255,
            ),
            None => error("Activity manager (activity) commands:\n  help\n  start [options] INTENT\n  force-stop PACKAGE\n  broadcast [options] INTENT\n", 0),
        }
    }

    fn am_start(&self, args: &[String], fs: &FsHandle) -> Output {
        let intent = match Intent::parse(args) {
            Ok(intent) => intent,
            Err(message) => return error(message, 255),
        };
        let Some(component) = intent.component.clone() else {
            return error(
                format!(
                    "Starting: {}\nError: Activity not started, unable to resolve {}\n",
                    intent.describe(),
                    intent.describe()
                ),
                1,
            );
        };
        let Some((package, class)) = component
            .split_once('/')
            .filter(|(p, c)| !p.is_empty() && !c.is_empty())
        else {
            return error(
                format!("Exception occurred while executing 'start':\njava.lang.IllegalArgumentException: Bad component name: {component}\n\tat android.content.Intent.parseCommandArgs(Intent.java:8828)\n\tat com.android.server.am.ActivityManagerShellCommand.makeIntent(ActivityManagerShellCommand.java:398)\n"),
                255,
            );
        };
        let starting = format!("Starting: {}\n", intent.describe());
        if component == PCAPDROID_CONTROL {
            return match self.pcapdroid(&intent.extras, fs) {
                Ok(()) => text(starting),
                Err(message) => Output {
                    stdout: starting.into_bytes(),
                    stderr: message.into_bytes(),
                    status: 0,
                },
            };
        }
        if intent.stop_first {
            self.world().force_stop(package);
        }
        let result = self.world().start_activity(&component);
        match result {
            Ok(()) => {
                let mut out = starting;
                if intent.wait {
                    out.push_str(&format!(
                        "Status: ok\nLaunchState: COLD\nActivity: {}\nTotalTime: 250\nWaitTime: 262\nComplete\n",
                        short_component(package, &full_class(package, class))
                    ));
                }
                text(out)
            }
            Err(LaunchError::UnknownPackage(_) | LaunchError::NoSuchActivity(_)) | Err(_) => {
                Output {
                    stdout: starting.into_bytes(),
                    stderr: format!(
                        "Error type 3\nError: Activity class {{{package}/{}}} does not exist.\n",
                        full_class(package, class)
                    )
                    .into_bytes(),
                    status: 1,
                }
            }
        }
    }

    fn am_broadcast(&self, args: &[String]) -> Output {
        let intent = match Intent::parse(args) {
            Ok(intent) => intent,
            Err(message) => return error(message, 255),
        };
        let message = intent.extras.get("msg").cloned();
        let typed = match (intent.action.as_deref(), message) {
            (Some("ADB_INPUT_TEXT"), Some(msg)) => Some(msg),
            (Some("ADB_INPUT_B64"), Some(msg)) => base64::engine::general_purpose::STANDARD
                .decode(msg.as_bytes())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok()),
            _ => None,
        };
        if let Some(typed) = typed {
            // Without the ADB Keyboard active nobody receives the broadcast: it completes anyway.
            let mut world = self.world();
            if world.ime_current() == ADB_KEYBOARD_IME {
                let _ = world.ime_text(&typed);
            }
        }
        text(format!(
            "Broadcasting: {}\nBroadcast completed: result=0\n",
            intent.describe_broadcast()
        ))
    }

    /// The PCAPdroid `CaptureCtrl` activity: `-e action start|stop|get_status`, pcap_file mode.
    fn pcapdroid(&self, extras: &BTreeMap<String, String>, fs: &FsHandle) -> Result<(), String> {
        match extras.get("action").map(String::as_str) {
            Some("start") => {
                let name = extras
                    .get("pcap_name")
                    .cloned()
                    .unwrap_or_else(|| "PCAPdroid.pcap".to_string());
                if name.contains('/') {
                    return Err(format!("PCAPdroid: invalid pcap_name {name}\n"));
                }
                let path = format!("{PCAPDROID_DIR}/{name}");
                let mut storage = lock(fs);
                storage
                    .mkdir(PCAPDROID_DIR, true)
                    .map_err(|e| e.to_string())?;
                storage
                    .write(&path, &pcap::header(), false)
                    .map_err(|e| e.to_string())?;
                let app = extras
                    .get("app_filter")
                    .cloned()
                    .unwrap_or_else(|| self.world().foreground().package);
                *guard(&self.capture) = Some(Capture {
                    started: Instant::now(),
                    path,
                    app,
                });
                Ok(())
            }
            Some("stop") => {
                if let Some(capture) = guard(&self.capture).take() {
                    let seconds = capture.started.elapsed().as_secs().clamp(1, 600) as u32;
                    let file = pcap::capture(&capture.app, seconds);
                    lock(fs)
                        .write(&capture.path, &file, false)
                        .map_err(|e| e.to_string())?;
                }
                Ok(())
            }
            Some("get_status") => Ok(()),
            _ => Err("PCAPdroid: missing or unknown action\n".to_string()),
        }
    }

    fn pm(&self, args: &[String]) -> Output {
        let installed = self.world().installed_packages();
        match args.first().map(String::as_str) {
            Some("path") => match args.get(1) {
                Some(package) if installed.contains(package) => {
                    text(format!("package:{}/base.apk\n", apk_dir(package)))
                }
                _ => Output::status(1),
            },
            Some("list") if args.get(1).map(String::as_str) == Some("packages") => {
                let filter = args[2..].iter().find(|a| !a.starts_with('-'));
                text(
                    installed
                        .iter()
                        .filter(|p| filter.is_none_or(|f| p.contains(f.as_str())))
                        .map(|p| format!("package:{p}\n"))
                        .collect::<String>(),
                )
            }
            _ => error(
                "Package manager (package) commands:\n  path PACKAGE\n  list packages [FILTER]\n",
                255,
            ),
        }
    }

    fn logcat(&self, args: &[String]) -> Output {
        let mut buffers = Vec::new();
        let mut clear = false;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "-b" => buffers.extend(iter.next().cloned()),
                "-c" => clear = true,
                _ => {}
            }
        }
        let crash = buffers.iter().any(|b| b == "crash" || b == "all");
        if clear {
            if crash || buffers.is_empty() {
                self.world().clear_crash_log();
            }
            return Output::default();
        }
        if crash {
            text(self.world().crash_log())
        } else {
            Output::default()
        }
    }

    /// Records until the time limit, SIGINT/SIGTERM (`pkill -INT screenrecord`), or SIGHUP (the
    /// client went away): all finish the file; SIGKILL leaves it unfinished.
    fn screenrecord(&self, args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
        let mut limit = SCREENRECORD_MAX_SECS;
        let mut file = None;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--time-limit" => {
                    let value = iter.next().and_then(|v| v.parse::<u64>().ok());
                    match value {
                        Some(secs) if (1..=SCREENRECORD_MAX_SECS).contains(&secs) => limit = secs,
                        _ => {
                            return error(
                                format!("Time limit must be between 1 and {SCREENRECORD_MAX_SECS} seconds\n"),
                                2,
                            )
                        }
                    }
                }
                "--size" | "--bit-rate" | "--display-id" | "--output-format" => {
                    iter.next();
                }
                "--verbose" | "--bugreport" => {}
                "--help" => return error("Usage: screenrecord [options] <filename>\n\nAndroid screenrecord v1.2.  Records the device's display to a .mp4 file.\n", 0),
                other if other.starts_with("--") => {
                    return error(format!("Unknown option '{other}'\n"), 2)
                }
                other => file = Some(other.to_string()),
            }
        }
        let Some(path) = file else {
            return error("Must specify output file (see --help).\n", 2);
        };
        if let Err(err) = lock(fs).check_writable(&path) {
            return error(format!("Unable to open '{path}': {err}\n"), 1);
        }
        let signal = Arc::new((Mutex::new(None), Condvar::new()));
        let pid = self.next_pid.fetch_add(1, Ordering::SeqCst);
        guard(&self.processes).push(Process {
            pid,
            name: "screenrecord",
            signal: Arc::clone(&signal),
        });
        let deadline = Instant::now() + Duration::from_secs(limit);
        let mut frames: Vec<Vec<u8>> = Vec::new();
        let mut last_frame = Vec::new();
        let mut next_frame = Instant::now();
        let ended = loop {
            let now = Instant::now();
            if now >= next_frame {
                let frame = render::png(&self.world().screenshot());
                if frame != last_frame {
                    frames.push(frame.clone());
                    last_frame = frame;
                }
                next_frame = now + FRAME_INTERVAL;
            }
            if now >= deadline || session.hung_up() {
                break Signal::Stop;
            }
            let (slot, wake) = &*signal;
            let wait = (deadline - now).min(HANGUP_POLL);
            let held = guard(slot);
            let (held, _) = wake
                .wait_timeout_while(held, wait, |s| s.is_none())
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(received) = *held {
                break received;
            }
        };
        guard(&self.processes).retain(|p| p.pid != pid);
        let video = mp4::file(&frames, ended == Signal::Stop);
        match lock(fs).write(&path, &video, false) {
            Ok(()) => Output::default(),
            Err(err) => error(format!("Unable to write '{path}': {err}\n"), 1),
        }
    }

    fn ime(&self, args: &[String]) -> Output {
        let mut world = self.world();
        match args.first().map(String::as_str) {
            Some("list") => {
                let all = args.iter().any(|a| a == "-a");
                let ids = if all { world.ime_list() } else { world.ime_enabled() };
                if args.iter().any(|a| a == "-s") {
                    text(ids.iter().map(|id| format!("{id}\n")).collect::<String>())
                } else {
                    text(
                        ids.iter()
                            .map(|id| {
                                let (package, service) = id.split_once('/').unwrap_or((id, ""));
                                format!("{id}:\n  mId={id} mSettingsActivity=null\n  Service:\n    ServiceInfo:\n      name={} packageName={package}\n", full_class(package, service))
                            })
                            .collect::<String>(),
                    )
                }
            }
            Some("enable") => match args.get(1) {
                Some(id) if world.ime_enable(id) => text(format!("Input method {id}: now enabled for user #0\n")),
                Some(id) => error(format!("Unknown input method {id} cannot be enabled for user #0\n"), 255),
                None => error("Error: no input method id given\n", 255),
            },
            Some("set") => match args.get(1) {
                Some(id) if world.ime_set(id) => text(format!("Input method {id} selected for user #0\n")),
                Some(id) => error(format!("Unknown input method {id} cannot be selected for user #0\n"), 255),
                None => error("Error: no input method id given\n", 255),
            },
            _ => error("ime <command>:\n  list [-a] [-s]\n  enable [--user <USER_ID>] <ID>\n  set [--user <USER_ID>] <ID>\n", 255),
        }
    }

    fn settings(&self, args: &[String]) -> Output {
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        match words.as_slice() {
            ["get", "secure", "default_input_method"] => {
                text(format!("{}\n", self.world().ime_current()))
            }
            ["get", _, _] => text("null\n"),
            _ => error(
                "usage:  settings [--user <USER_ID> | current] get namespace key\n",
                255,
            ),
        }
    }

    fn pids_of(&self, name: &str) -> Vec<u32> {
        let mut pids: Vec<u32> = guard(&self.processes)
            .iter()
            .filter(|p| p.name == name)
            .map(|p| p.pid)
            .collect();
        pids.extend(self.world().pid(name));
        pids
    }

    fn pidof(&self, args: &[String]) -> Output {
        let pids: Vec<String> = args
            .iter()
            .flat_map(|name| self.pids_of(name))
            .map(|pid| pid.to_string())
            .collect();
        if pids.is_empty() {
            Output::status(1)
        } else {
            text(format!("{}\n", pids.join(" ")))
        }
    }

    fn signal(&self, pid: u32, signal: Signal) -> bool {
        let processes = guard(&self.processes);
        let Some(process) = processes.iter().find(|p| p.pid == pid) else {
            return false;
        };
        let (slot, wake) = &*process.signal;
        *guard(slot) = Some(signal);
        wake.notify_all();
        true
    }

    /// Delivers a signal to a simulated program or, any signal being fatal to it, an app process.
    fn deliver(&self, pid: u32, signal: Signal) -> bool {
        if self.signal(pid, signal) {
            return true;
        }
        let mut world = self.world();
        let app = world
            .installed_packages()
            .into_iter()
            .find(|package| world.pid(package) == Some(pid));
        match app {
            Some(package) => {
                world.force_stop(&package);
                true
            }
            None => false,
        }
    }

    fn kill(&self, args: &[String]) -> Output {
        let (signal, targets) = split_signal(args);
        let mut out = Output::default();
        for target in targets {
            let delivered = target
                .parse::<u32>()
                .is_ok_and(|pid| self.deliver(pid, signal));
            if !delivered {
                out.stderr
                    .extend(format!("kill: {target}: No such process\n").into_bytes());
                out.status = 1;
            }
        }
        out
    }

    fn pkill(&self, args: &[String]) -> Output {
        let (signal, names) = split_signal(args);
        let mut found = false;
        for name in names {
            for pid in self.pids_of(name) {
                found |= self.deliver(pid, signal);
            }
        }
        Output::status(if found { 0 } else { 1 })
    }
}

impl Programs for Device {
    fn run(&self, argv: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
        if argv.is_empty() {
            return Output::default();
        }
        let delay = self.latency.delay(argv);
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        self.dispatch(argv, session, fs)
    }
}

fn task_id(package: &str) -> u32 {
    12 + u32::from(Sha256::digest(package.as_bytes())[0] % 64)
}

/// The Android 11+ install directory of a package: `/data/app/~~HASH==/PKG-HASH==`.
fn apk_dir(package: &str) -> String {
    let digest = Sha256::digest(package.as_bytes());
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    format!(
        "/data/app/~~{}==/{package}-{}==",
        b64(&digest[..16]),
        b64(&digest[16..32])
    )
}

/// Raw `screencap`: width, height, format (1 = RGBA_8888), colour space (1 = sRGB), pixels.
fn raw_screencap(image: &image::RgbaImage) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + image.as_raw().len());
    for value in [image.width(), image.height(), 1, 1] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(image.as_raw());
    out
}

fn number_error(values: &[&str]) -> Output {
    let bad = values
        .iter()
        .find(|v| v.parse::<f32>().is_err())
        .unwrap_or(&"");
    error(
        format!("Exception occurred while executing 'input':\njava.lang.NumberFormatException: For input string: \"{bad}\"\n"),
        255,
    )
}

/// What `input` prints when the framework throws: the BasicShellCommandHandler shape.
fn input_exception(command: &str, err: &InputError) -> Output {
    let exception = match err {
        InputError::UnknownKey(key) => {
            format!("java.lang.IllegalArgumentException: Unknown keycode: {key}")
        }
        InputError::Untypable(_) => {
            "java.lang.NullPointerException: Attempt to get length of null array".to_string()
        }
        other => format!("java.lang.IllegalStateException: {other}"),
    };
    error(
        format!("Exception occurred while executing '{command}':\n{exception}\n"),
        255,
    )
}

fn split_signal(args: &[String]) -> (Signal, Vec<&str>) {
    let mut signal = Signal::Stop;
    let mut rest = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let name = match arg.as_str() {
            "-s" => iter.next().map(String::as_str).unwrap_or(""),
            flag if flag.starts_with('-') => &flag[1..],
            plain => {
                rest.push(plain);
                continue;
            }
        };
        if matches!(name, "9" | "KILL" | "SIGKILL") {
            signal = Signal::Kill;
        }
    }
    (signal, rest)
}

/// The parts of an `am` intent the simulator uses.
#[derive(Debug, Default)]
struct Intent {
    action: Option<String>,
    categories: Vec<String>,
    component: Option<String>,
    extras: BTreeMap<String, String>,
    wait: bool,
    stop_first: bool,
}

impl Intent {
    fn parse(args: &[String]) -> Result<Intent, String> {
        let mut intent = Intent::default();
        let mut iter = args.iter();
        let missing = |flag: &str| format!("Error: Argument expected after \"{flag}\"\n");
        while let Some(arg) = iter.next() {
            let mut value = || iter.next().cloned().ok_or_else(|| missing(arg));
            match arg.as_str() {
                "-n" => intent.component = Some(value()?),
                "-a" => intent.action = Some(value()?),
                "-c" => intent.categories.push(value()?),
                "-e" | "--es" | "--ez" | "--ei" | "--el" | "--ef" | "--eu" => {
                    let key = value()?;
                    let found = value()?;
                    intent.extras.insert(key, found);
                }
                "-W" => intent.wait = true,
                "-S" => intent.stop_first = true,
                "-f" | "--user" | "-d" | "-t" | "-p" => {
                    value()?;
                }
                _ => {}
            }
        }
        Ok(intent)
    }

    fn fields(&self) -> String {
        let mut parts = Vec::new();
        if let Some(action) = &self.action {
            parts.push(format!("act={action}"));
        }
        if !self.categories.is_empty() {
            parts.push(format!("cat=[{}]", self.categories.join(",")));
        }
        if let Some(component) = &self.component {
            parts.push(format!("cmp={component}"));
        }
        parts.join(" ")
    }

    fn describe(&self) -> String {
        let extras = if self.extras.is_empty() {
            ""
        } else {
            " (has extras)"
        };
        format!("Intent {{ {}{extras} }}", self.fields())
    }

    fn describe_broadcast(&self) -> String {
        let extras = if self.extras.is_empty() {
            ""
        } else {
            " (has extras)"
        };
        format!("Intent {{ {} flg=0x400000{extras} }}", self.fields())
    }
}

/// A valid pcap file (LINKTYPE_RAW, as PCAPdroid writes) of the app's DNS traffic.
mod pcap {
    const LINKTYPE_RAW: u32 = 101;

    pub fn header() -> Vec<u8> {
        let mut out = Vec::with_capacity(24);
        out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&4u16.to_le_bytes());
        out.extend_from_slice(&0i32.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&65535u32.to_le_bytes());
        out.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        out
    }

    /// One DNS query and answer per second of capture, for a host named after the app.
    pub fn capture(app: &str, seconds: u32) -> Vec<u8> {
        let host: Vec<&str> = app.split('.').rev().collect();
        let host = format!("api.{}", host.join("."));
        let start = 1_767_225_600u32; // 2026-01-01, fixed so captures are reproducible
        let mut out = header();
        for second in 0..seconds {
            let id = (second & 0xffff) as u16;
            let query = dns(&host, id, false);
            let answer = dns(&host, id, true);
            let port = 40000 + (second % 20000) as u16;
            record(
                &mut out,
                start + second,
                0,
                &ipv4_udp([10, 215, 173, 1], [10, 215, 173, 2], port, 53, &query),
            );
            record(
                &mut out,
                start + second,
                20_000,
                &ipv4_udp([10, 215, 173, 2], [10, 215, 173, 1], 53, port, &answer),
            );
        }
        out
    }

    fn record(out: &mut Vec<u8>, secs: u32, micros: u32, packet: &[u8]) {
        let len = packet.len() as u32;
        for value in [secs, micros, len, len] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        out.extend_from_slice(packet);
    }

    fn dns(host: &str, id: u16, answer: bool) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&(if answer { 0x8180u16 } else { 0x0100 }).to_be_bytes());
        for count in [1u16, u16::from(answer), 0, 0] {
            out.extend_from_slice(&count.to_be_bytes());
        }
        for label in host.split('.').filter(|l| !l.is_empty()) {
            let label = &label.as_bytes()[..label.len().min(63)];
            out.push(label.len() as u8);
            out.extend_from_slice(label);
        }
        out.push(0);
        out.extend_from_slice(&[0, 1, 0, 1]);
        if answer {
            out.extend_from_slice(&[
                0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 93, 184, 215, 14,
            ]);
        }
        out
    }

    fn ipv4_udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let total = (20 + 8 + payload.len()) as u16;
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let sum = checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        ip.extend_from_slice(&sport.to_be_bytes());
        ip.extend_from_slice(&dport.to_be_bytes());
        ip.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
        ip.extend_from_slice(&[0, 0]); // UDP checksum 0: "not computed", valid for IPv4
        ip.extend_from_slice(payload);
        ip
    }

    pub fn checksum(bytes: &[u8]) -> u16 {
        let mut sum: u32 = bytes
            .chunks(2)
            .map(|pair| u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }
}

/// An MP4-shaped container of the recorded frames: `ftyp`, `mdat` (the distinct frames as PNG),
/// and `moov` only when the recording ended cleanly (SIGINT or time limit), as a real
/// screenrecord killed with SIGKILL leaves a file without its `moov` atom.
mod mp4 {
    fn boxed(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + body.len());
        out.extend_from_slice(&((8 + body.len()) as u32).to_be_bytes());
        out.extend_from_slice(kind);
        out.extend_from_slice(body);
        out
    }

    pub fn file(frames: &[Vec<u8>], finished: bool) -> Vec<u8> {
        let mut out = boxed(b"ftyp", b"isom\0\0\x02\0isomiso2mp41");
        out.extend(boxed(b"mdat", &frames.concat()));
        if finished {
            let mut mvhd = vec![0u8; 100];
            mvhd[12..16].copy_from_slice(&1000u32.to_be_bytes()); // timescale
            mvhd[16..20].copy_from_slice(&(frames.len() as u32 * 1000).to_be_bytes());
            out.extend(boxed(b"moov", &boxed(b"mvhd", &mvhd)));
        }
        out
    }
}

fn echo(args: &[String]) -> Output {
    let (newline, words) = match args.first().map(String::as_str) {
        Some("-n") => (false, &args[1..]),
        _ => (true, args),
    };
    let mut out = words.join(" ");
    if newline {
        out.push('\n');
    }
    text(out)
}

fn cat(args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
    let files: Vec<&String> = args
        .iter()
        .filter(|a| !a.starts_with('-') || *a == "-")
        .collect();
    if files.is_empty() {
        return Output::ok(session.stdin());
    }
    let mut out = Output::default();
    for file in files {
        if file == "-" {
            out.stdout.extend(session.stdin());
            continue;
        }
        match lock(fs).read(file) {
            Ok(bytes) => out.stdout.extend_from_slice(bytes),
            Err(err) => {
                out.stderr
                    .extend(format!("cat: {file}: {err}\n").into_bytes());
                out.status = 1;
            }
        }
    }
    out
}

fn flags_and_paths(args: &[String]) -> (String, Vec<&String>) {
    let flags = args
        .iter()
        .filter(|a| a.starts_with('-') && a.len() > 1)
        .flat_map(|a| a[1..].chars())
        .collect();
    let paths = args
        .iter()
        .filter(|a| !a.starts_with('-') || a.len() == 1)
        .collect();
    (flags, paths)
}

fn rm(args: &[String], fs: &FsHandle) -> Output {
    let (flags, paths) = flags_and_paths(args);
    let force = flags.contains('f');
    let recursive = flags.contains('r') || flags.contains('R');
    let mut out = Output::default();
    if paths.is_empty() && !force {
        return error("rm: Needs 1 argument (see \"rm --help\")\n", 1);
    }
    for path in paths {
        match lock(fs).remove(path, recursive) {
            Ok(()) => {}
            Err(super::shell::FsError::NotFound) if force => {}
            Err(err) => {
                out.stderr
                    .extend(format!("rm: {path}: {err}\n").into_bytes());
                out.status = 1;
            }
        }
    }
    out
}

fn ls(args: &[String], fs: &FsHandle) -> Output {
    let (flags, paths) = flags_and_paths(args);
    let long = flags.contains('l');
    let paths = if paths.is_empty() {
        vec!["/".to_string()]
    } else {
        paths.into_iter().cloned().collect()
    };
    let mut out = Output::default();
    let fs = lock(fs);
    for path in paths {
        match fs.list(&path) {
            Ok(entries) => {
                for entry in entries {
                    let line = if long {
                        let kind = if entry.stat.is_dir {
                            "drwxrwx--x"
                        } else {
                            "-rw-rw----"
                        };
                        let when = chrono::DateTime::from_timestamp(i64::from(entry.stat.mtime), 0)
                            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                            .unwrap_or_default();
                        format!(
                            "{kind} 1 shell shell {} {when} {}\n",
                            entry.stat.size, entry.name
                        )
                    } else {
                        format!("{}\n", entry.name)
                    };
                    out.stdout.extend(line.into_bytes());
                }
            }
            Err(err) => {
                out.stderr
                    .extend(format!("ls: {path}: {err}\n").into_bytes());
                out.status = 1;
            }
        }
    }
    out
}

fn mkdir(args: &[String], fs: &FsHandle) -> Output {
    let (flags, paths) = flags_and_paths(args);
    let mut out = Output::default();
    for path in paths {
        if let Err(err) = lock(fs).mkdir(path, flags.contains('p')) {
            out.stderr
                .extend(format!("mkdir: '{path}': {err}\n").into_bytes());
            out.status = 1;
        }
    }
    out
}

fn touch(args: &[String], fs: &FsHandle) -> Output {
    let mut out = Output::default();
    for path in args.iter().filter(|a| !a.starts_with('-')) {
        let mut storage = lock(fs);
        if storage.stat(path).is_some() {
            continue;
        }
        if let Err(err) = storage.write(path, &[], false) {
            out.stderr
                .extend(format!("touch: '{path}': {err}\n").into_bytes());
            out.status = 1;
        }
    }
    out
}

fn sleep(args: &[String]) -> Output {
    match args
        .first()
        .and_then(|a| a.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
    {
        Some(secs) => {
            std::thread::sleep(Duration::from_secs_f64(secs.min(3600.0)));
            Output::default()
        }
        None => error("sleep: Needs 1 argument (see \"sleep --help\")\n", 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcap_packets_carry_valid_ipv4_checksums() {
        let file = pcap::capture("com.example.shop", 2);
        assert_eq!(&file[..4], &0xa1b2_c3d4u32.to_le_bytes());
        let mut offset = 24;
        let mut packets = 0;
        while offset < file.len() {
            let len =
                u32::from_le_bytes(file[offset + 8..offset + 12].try_into().unwrap()) as usize;
            let packet = &file[offset + 16..offset + 16 + len];
            assert_eq!(pcap::checksum(&packet[..20]), 0, "header sums to 0xffff");
            assert_eq!(usize::from(u16::from_be_bytes([packet[2], packet[3]])), len);
            offset += 16 + len;
            packets += 1;
        }
        assert_eq!(packets, 4);
        assert!(String::from_utf8_lossy(&file).contains("shop"));
    }

    #[test]
    fn components_print_like_activity_records() {
        assert_eq!(short_component("com.a", "com.a.Main"), "com.a/.Main");
        assert_eq!(short_component("com.a", ".Main"), "com.a/.Main");
        assert_eq!(short_component("com.a", "org.b.Main"), "com.a/org.b.Main");
        assert_eq!(full_class("com.a", ".Main"), "com.a.Main");
        assert_eq!(short_hash("x").len(), 7);
    }

    #[test]
    fn intents_parse_extras_and_describe_themselves() {
        let args: Vec<String> = "-n com.a/.Main -a android.intent.action.MAIN -c android.intent.category.LAUNCHER -e action start --ez flag true -W"
            .split(' ')
            .map(String::from)
            .collect();
        let intent = Intent::parse(&args).unwrap();
        assert_eq!(
            intent.extras.get("action").map(String::as_str),
            Some("start")
        );
        assert!(intent.wait);
        assert_eq!(
            intent.describe(),
            "Intent { act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] cmp=com.a/.Main (has extras) }"
        );
        assert!(Intent::parse(&["-n".to_string()]).is_err());
    }

    #[test]
    fn signals_parse_like_kill() {
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(split_signal(&args("-2 123")), (Signal::Stop, vec!["123"]));
        assert_eq!(
            split_signal(&args("-INT screenrecord")),
            (Signal::Stop, vec!["screenrecord"])
        );
        assert_eq!(
            split_signal(&args("-9 1 2")),
            (Signal::Kill, vec!["1", "2"])
        );
        assert_eq!(split_signal(&args("-s KILL 7")), (Signal::Kill, vec!["7"]));
    }
}
