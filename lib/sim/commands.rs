//! The device's programs: what `uiautomator`, `screencap`, `input`, `am`, `pm`, `settings`,
//! `logcat`, ... print and do on the simulated phone. Output shapes follow the real samples in
//! `../shared/fixtures/device/`; the behaviour itself lives in [`World`], never here. Every
//! program answers by its name and by its path (`/system/bin/screencap`), as on a device.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine;

use super::dumpsys::{self, full_class, short_component, PackageFacts, DENSITY, SDK};
use super::fault::{Faults, Latency};
use super::logcat::{self, Buffer, LogBuffers};
use super::packages::{self, apk_dir, PCAPDROID_CONTROL, PCAPDROID_PACKAGE};
use super::pcapdroid;
use super::procfs::{self, package_uid, ProcFs};
use super::render;
use super::settings::{self, Request, Settings};
use super::shell::{lock, FsHandle, Output, Programs, Session, SHELL_PID};
use super::system::{self, LAUNCHER_PACKAGE};
use super::toybox;
use super::video;
use super::world::{Foreground, InputError, LaunchError, TaskSummary, World};

/// The programs the shell finds on its `PATH` (all in `/system/bin`).
const PROGRAMS: &[&str] = &[
    "am",
    "cat",
    "cut",
    "dumpsys",
    "echo",
    "false",
    "getprop",
    "grep",
    "ifconfig",
    "ime",
    "input",
    "ip",
    "kill",
    "logcat",
    "ls",
    "mkdir",
    "monkey",
    "pidof",
    "pkill",
    "pm",
    "ps",
    "reboot",
    "rm",
    "screencap",
    "screenrecord",
    "settings",
    "sleep",
    "svc",
    "touch",
    "true",
    "uiautomator",
    "which",
    "wm",
];
/// Broadcasts only the system may send: `am broadcast` from the shell is refused.
const PROTECTED_BROADCASTS: &[&str] = &[
    "android.intent.action.AIRPLANE_MODE",
    "android.intent.action.BATTERY_CHANGED",
    "android.intent.action.BOOT_COMPLETED",
    "android.intent.action.SCREEN_OFF",
    "android.intent.action.SCREEN_ON",
];
const KEY_POWER: &str = "26";
const KEY_SLEEP: &str = "223";
const KEY_WAKEUP: &str = "224";
/// system_server, which writes the activity manager's log lines.
const SYSTEM_SERVER_PID: u32 = 560;
/// The features `pm list features` reports for the simulated phone.
const FEATURES: &[&str] = &[
    "reqGlEsVersion=0x30000",
    "android.hardware.audio.output",
    "android.hardware.bluetooth",
    "android.hardware.camera",
    "android.hardware.camera.any",
    "android.hardware.faketouch",
    "android.hardware.location",
    "android.hardware.location.gps",
    "android.hardware.microphone",
    "android.hardware.ram.normal",
    "android.hardware.screen.landscape",
    "android.hardware.screen.portrait",
    "android.hardware.sensor.accelerometer",
    "android.hardware.telephony",
    "android.hardware.touchscreen",
    "android.hardware.touchscreen.multitouch",
    "android.hardware.touchscreen.multitouch.distinct",
    "android.hardware.wifi",
    "android.software.app_widgets",
    "android.software.home_screen",
    "android.software.input_methods",
    "android.software.webview",
];
const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";
const BROWSER_PACKAGE: &str = "com.android.chrome";
/// `screenrecord --time-limit` default and maximum on classic builds.
const SCREENRECORD_MAX_SECS: u64 = 180;
/// `screenrecord --bit-rate` default (v1.2's help: 20 Mbps).
const SCREENRECORD_BIT_RATE: u32 = 20_000_000;
/// How often screenrecord looks for a changed screen, and whether its client is still there.
const FRAME_POLL: Duration = Duration::from_millis(100);
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
    capture: Mutex<Option<pcapdroid::Capture>>,
    settings: Mutex<Settings>,
    logs: Mutex<LogBuffers>,
    screen_on: AtomicBool,
    booted: Instant,
    /// The intent (its fields before `cmp=`) and caller uid of a launch a command is making,
    /// for the activity log.
    launching: Mutex<Option<(String, u32)>>,
    /// When each of the last [`BUSY_KEPT`] commands ran, latency included.
    busy: Mutex<std::collections::VecDeque<(Instant, Instant)>>,
}

/// How many command periods a device keeps for [`Device::busy_periods`].
pub const BUSY_KEPT: usize = 65_536;

/// What the activity manager's log is written from: the state before and after a command.
struct Moment {
    foreground: Foreground,
    pids: Vec<(String, u32)>,
    tasks: Vec<TaskSummary>,
    anr: bool,
}

fn guard<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(super) fn text(out: impl Into<String>) -> Output {
    Output::ok(out.into().into_bytes())
}

pub(super) fn error(message: impl Into<String>, status: i32) -> Output {
    Output::error(message.into().into_bytes(), status)
}

impl Device {
    pub fn new(world: World, faults: Faults, latency: Latency, serial: String) -> Device {
        let mut world = world;
        world.set_anr_screen(faults.anr_screen());
        let mut storage = super::shell::FileSystem::default();
        let apks = packages::apk_files(world.model(), &world.installed_packages(), |p| {
            world.is_system_package(p)
        });
        for (path, apk) in apks {
            storage.install(&path, &apk);
        }
        Device {
            world: Mutex::new(world),
            fs: Mutex::new(storage),
            faults,
            latency,
            serial,
            processes: Mutex::new(Vec::new()),
            next_pid: AtomicU32::new(9000),
            capture: Mutex::new(None),
            settings: Mutex::new(Settings::default()),
            logs: Mutex::new(LogBuffers::default()),
            screen_on: AtomicBool::new(true),
            booted: Instant::now(),
            launching: Mutex::new(None),
            busy: Mutex::new(std::collections::VecDeque::new()),
        }
    }

    /// When the device was busy: the start and end of each of its last [`BUSY_KEPT`] commands
    /// (their latency included), oldest first. Commands of several connections may overlap.
    pub fn busy_periods(&self) -> Vec<(Instant, Instant)> {
        guard(&self.busy).iter().copied().collect()
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
        let Some(name) = program_name(&argv[0]) else {
            return error(
                format!("/system/bin/sh: {}: inaccessible or not found\n", argv[0]),
                127,
            );
        };
        match name {
            "echo" => toybox::echo(args),
            "true" => Output::status(0),
            "false" => Output::status(1),
            "cat" => toybox::cat(args, session, fs, &self.kernel(&self.process_table())),
            "rm" => toybox::rm(args, fs),
            "ls" => toybox::ls(args, fs, &self.kernel(&self.process_table())),
            "mkdir" => toybox::mkdir(args, fs),
            "touch" => toybox::touch(args, fs),
            "sleep" => toybox::sleep(args),
            "grep" => toybox::grep(args, session, fs),
            "cut" => toybox::cut(args, session, fs),
            "which" => toybox::which(args, &|name| PROGRAMS.contains(&name)),
            "ifconfig" => toybox::ifconfig(args, self.wifi_on()),
            "ip" => toybox::ip(args, self.wifi_on()),
            "ps" => text(procfs::ps(
                args,
                &self.process_table(),
                self.next_pid.fetch_add(1, Ordering::SeqCst),
            )),
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
            "svc" => self.svc(args),
            "pidof" => self.pidof(args),
            "kill" => self.kill(args),
            "pkill" => self.pkill(args),
            "reboot" => error("reboot: rebooting is not simulated\n", 1),
            other => error(
                format!("/system/bin/sh: {other}: inaccessible or not found\n"),
                127,
            ),
        }
    }

    fn wifi_on(&self) -> bool {
        guard(&self.settings).flag("global", "wifi_on")
    }

    /// `(package, pid)` of every running app process.
    fn app_pids(&self) -> Vec<(String, u32)> {
        let world = self.world();
        world
            .installed_packages()
            .into_iter()
            .filter_map(|package| world.pid(&package).map(|pid| (package, pid)))
            .collect()
    }

    fn process_table(&self) -> Vec<procfs::Process> {
        let extra: Vec<(u32, &str)> = guard(&self.processes)
            .iter()
            .map(|p| (p.pid, p.name))
            .collect();
        procfs::table(&self.app_pids(), &extra)
    }

    fn kernel<'a>(&self, table: &'a [procfs::Process]) -> ProcFs<'a> {
        // The phone booted a while before the simulator took its first command.
        ProcFs {
            table,
            uptime: self.booted.elapsed() + Duration::from_secs(600),
        }
    }

    fn moment(&self) -> Moment {
        let pids = self.app_pids();
        let world = self.world();
        Moment {
            foreground: world.foreground(),
            pids,
            tasks: world.tasks(),
            anr: world.anr_showing(),
        }
    }

    /// Writes what the activity manager logs about a command's effects: processes started and
    /// gone, activities started, and an app that stopped responding.
    fn log_changes(&self, before: &Moment, after: &Moment) {
        let mut logs = guard(&self.logs);
        let front = &after.foreground;
        if after.anr && !before.anr {
            let pid = after
                .pids
                .iter()
                .find(|(p, _)| *p == front.package)
                .map_or(0, |(_, pid)| *pid);
            let component = short_component(&front.package, &front.activity);
            for line in system::anr_block(&front.package, &component, pid) {
                logs.log(
                    Buffer::System,
                    SYSTEM_SERVER_PID,
                    'E',
                    "ActivityManager",
                    &line,
                );
            }
        }
        let started = front.package != before.foreground.package
            || front.activity != before.foreground.activity;
        let front_task = after.tasks.last();
        let before_len = front_task
            .and_then(|t| before.tasks.iter().find(|b| b.package == t.package))
            .map(|t| t.activities.len());
        let pushed = match (front_task, before_len) {
            (Some(task), Some(len)) => task.activities.len() > len,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let launching = guard(&self.launching).take();
        let component = short_component(&front.package, &front.activity);
        let logged_start =
            started && (pushed || launching.is_some()) && front.package != LAUNCHER_PACKAGE;
        if logged_start {
            let (fields, uid) = launching
                .unwrap_or_else(|| (String::new(), package_uid(&before.foreground.package)));
            let space = if fields.is_empty() { "" } else { " " };
            logs.log(
                Buffer::System,
                SYSTEM_SERVER_PID,
                'I',
                "ActivityTaskManager",
                &format!("START u0 {{{fields}{space}cmp={component}}} from uid {uid}"),
            );
        }
        for (package, pid) in &after.pids {
            if !before
                .pids
                .iter()
                .any(|(p, old)| p == package && old == pid)
            {
                logs.log(
                    Buffer::System,
                    SYSTEM_SERVER_PID,
                    'I',
                    "ActivityManager",
                    &format!(
                        "Start proc {pid}:{package}/u0a{} for pre-top-activity {{{}}}",
                        package_uid(package) - 10000,
                        short_component(package, &full_class(package, &front.activity))
                    ),
                );
            }
        }
        for (package, pid) in &before.pids {
            if !after.pids.iter().any(|(p, _)| p == package) {
                logs.log(
                    Buffer::System,
                    SYSTEM_SERVER_PID,
                    'I',
                    "ActivityManager",
                    &format!("Process {package} (pid {pid}) has died: fg  TOP"),
                );
            }
        }
        if logged_start {
            logs.log(
                Buffer::System,
                SYSTEM_SERVER_PID,
                'I',
                "ActivityTaskManager",
                &format!("Displayed {component}: +312ms"),
            );
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
            ("ro.product.cpu.abilist", "x86_64,arm64-v8a".to_string()),
            ("ro.build.version.security_patch", "2023-08-05".to_string()),
            ("ro.build.characteristics", "emulator".to_string()),
            ("ro.hardware", "ranchu".to_string()),
            ("ro.boot.serialno", self.serial.clone()),
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

    fn snapshot(&self) -> dumpsys::Snapshot {
        let pids = self.app_pids();
        let world = self.world();
        // The dump is the world's own serialisation: it parses; an empty view dump otherwise.
        let roots = crate::sim::model::parse_hierarchy(&world.hierarchy_xml()).unwrap_or_default();
        dumpsys::Snapshot {
            foreground: world.foreground(),
            anr: world.anr_showing(),
            tasks: world.tasks(),
            pids,
            size: world.screen_size(),
            screen_on: self.screen_on.load(Ordering::SeqCst),
            roots,
        }
    }

    fn dumpsys(&self, args: &[String]) -> Output {
        if args.first().map(String::as_str) == Some("package") {
            return match args.get(1) {
                Some(package) => self.dumpsys_package(package),
                None => text("Packages:\n"),
            };
        }
        match dumpsys::dumpsys(args, &self.snapshot()) {
            Ok(out) => text(out),
            // dumpsys reports a missing service on stderr and still exits 0.
            Err(message) => error(message, 0),
        }
    }

    fn dumpsys_package(&self, package: &str) -> Output {
        let world = self.world();
        let Some(version) = world.version_name(package) else {
            return text("");
        };
        let apk_dir = apk_dir(package);
        text(dumpsys::package(&PackageFacts {
            package,
            version_name: &version,
            apk_dir: &apk_dir,
            system: world.is_system_package(package),
        }))
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
        let image = if self.screen_on.load(Ordering::SeqCst) {
            self.world().screenshot()
        } else {
            let (width, height) = self.screen_size();
            render::black(width, height)
        };
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
        // With the display off no window takes touches or text: they are dropped.
        let screen_on = self.screen_on.load(Ordering::SeqCst);
        match (*command, rest) {
            ("tap" | "swipe" | "draganddrop" | "text", _) if !screen_on => Output::default(),
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
                    let code = super::keys::keycode(key).map(|c| c.to_string());
                    let power = matches!(code.as_deref(), Some(KEY_POWER | KEY_SLEEP | KEY_WAKEUP));
                    if !power && !self.screen_on.load(Ordering::SeqCst) {
                        continue;
                    }
                    if let Err(err) = world.key(key) {
                        return input_exception("keyevent", &err);
                    }
                    match code.as_deref() {
                        Some(KEY_POWER) => {
                            self.screen_on.fetch_xor(true, Ordering::SeqCst);
                        }
                        Some(KEY_SLEEP) => self.screen_on.store(false, Ordering::SeqCst),
                        Some(KEY_WAKEUP) => self.screen_on.store(true, Ordering::SeqCst),
                        _ => {}
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
        *guard(&self.launching) = Some((
            "act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] flg=0x10200000"
                .to_string(),
            2000,
        ));
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
                    self.force_stop(package);
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
            return self.am_start_implicit(&intent);
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
        let pcapdroid_installed = self.world().model().pcapdroid().is_some();
        if component == PCAPDROID_CONTROL && pcapdroid_installed {
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
            self.force_stop(package);
        }
        *guard(&self.launching) = Some((intent.launch_fields(), 2000));
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

    /// An intent without a component: a web link opens the browser, HOME the launcher;
    /// nothing else on the device resolves one.
    fn am_start_implicit(&self, intent: &Intent) -> Output {
        let starting = format!("Starting: {}\n", intent.describe());
        let web = intent
            .data
            .as_deref()
            .is_some_and(|d| d.starts_with("http://") || d.starts_with("https://"));
        let target = match intent.action.as_deref() {
            Some("android.intent.action.VIEW") if web => Some(BROWSER_PACKAGE),
            Some("android.intent.action.MAIN")
                if intent
                    .categories
                    .iter()
                    .any(|c| c == "android.intent.category.HOME") =>
            {
                Some(LAUNCHER_PACKAGE)
            }
            _ => None,
        };
        let launched = target.filter(|package| {
            *guard(&self.launching) = Some((intent.launch_fields(), 2000));
            self.world().launch(package).is_ok()
        });
        match launched {
            Some(_) => text(starting),
            None => error(
                format!(
                    "{starting}Error: Activity not started, unable to resolve {}\n",
                    intent.describe()
                ),
                1,
            ),
        }
    }

    /// `am force-stop`: the process dies, as the activity manager logs it.
    fn force_stop(&self, package: &str) {
        if package == PCAPDROID_PACKAGE {
            let _ = self.end_capture(true);
        }
        if self.world().pid(package).is_some() {
            guard(&self.logs).log(
                Buffer::System,
                SYSTEM_SERVER_PID,
                'I',
                "ActivityManager",
                &format!(
                    "Force stopping {package} appid={} user=0: from pid {}",
                    package_uid(package),
                    SHELL_PID + 1
                ),
            );
        }
        self.world().force_stop(package);
    }

    fn am_broadcast(&self, args: &[String]) -> Output {
        let intent = match Intent::parse(args) {
            Ok(intent) => intent,
            Err(message) => return error(message, 255),
        };
        let broadcasting = format!("Broadcasting: {}\n", intent.describe_broadcast());
        if let Some(action) = intent
            .action
            .as_deref()
            .filter(|a| PROTECTED_BROADCASTS.contains(a))
        {
            let pid = self.next_pid.fetch_add(1, Ordering::SeqCst);
            return Output {
                stdout: broadcasting.into_bytes(),
                stderr: format!("Exception occurred while executing 'broadcast':\njava.lang.SecurityException: Permission Denial: not allowed to send broadcast {action} from pid={pid}, uid=2000\n\tat com.android.server.am.ActivityManagerService.broadcastIntentLocked(ActivityManagerService.java:13787)\n\tat com.android.server.am.ActivityManagerService.broadcastIntentWithFeature(ActivityManagerService.java:14518)\n").into_bytes(),
                status: 255,
            };
        }
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
        text(format!("{broadcasting}Broadcast completed: result=0\n"))
    }

    /// The PCAPdroid `CaptureCtrl` activity: `-e action start|stop|get_status`, pcap_file mode.
    /// A request without the API key the model sets waits for a consent nobody gives.
    fn pcapdroid(&self, extras: &BTreeMap<String, String>, fs: &FsHandle) -> Result<(), String> {
        let key = self
            .world()
            .model()
            .pcapdroid()
            .and_then(|p| p.api_key.clone());
        if key.is_some() && extras.get("api_key") != key.as_ref() {
            return Ok(());
        }
        match extras.get("action").map(String::as_str) {
            Some("start") => {
                let name = extras
                    .get("pcap_name")
                    .cloned()
                    .unwrap_or_else(|| "PCAPdroid.pcap".to_string());
                if name.contains('/') {
                    return Err(format!("PCAPdroid: invalid pcap_name {name}\n"));
                }
                let path = format!("{}/{name}", pcapdroid::DIR);
                // A start while capturing ends the running capture first.
                self.end_capture(false).map_err(|e| format!("{e}\n"))?;
                let mut storage = lock(fs);
                storage
                    .mkdir(pcapdroid::DIR, true)
                    .map_err(|e| e.to_string())?;
                storage
                    .write(&path, &pcapdroid::header(), false)
                    .map_err(|e| e.to_string())?;
                drop(storage);
                let app = extras
                    .get("app_filter")
                    .cloned()
                    .unwrap_or_else(|| self.world().foreground().package);
                let pid = self.next_pid.fetch_add(1, Ordering::SeqCst);
                guard(&self.processes).push(Process {
                    pid,
                    name: PCAPDROID_PACKAGE,
                    signal: Arc::new((Mutex::new(None), Condvar::new())),
                });
                *guard(&self.capture) = Some(pcapdroid::Capture {
                    pid,
                    started: Instant::now(),
                    path,
                    app,
                });
                Ok(())
            }
            Some("stop") => self.end_capture(false).map_err(|e| format!("{e}\n")),
            Some("get_status") => Ok(()),
            _ => Err("PCAPdroid: missing or unknown action\n".to_string()),
        }
    }

    /// Ends the running capture, if any: stopped, its file complete; or its process killed,
    /// the file as far as it got.
    fn end_capture(&self, killed: bool) -> Result<(), super::shell::FsError> {
        let Some(capture) = guard(&self.capture).take() else {
            return Ok(());
        };
        guard(&self.processes).retain(|p| p.pid != capture.pid);
        let file = if killed {
            capture.file_when_killed()
        } else {
            capture.file()
        };
        lock(&self.fs).write(&capture.path, &file, false)
    }

    fn pm(&self, args: &[String]) -> Output {
        let installed = self.world().installed_packages();
        let known = |package: &String| installed.contains(package);
        match args.first().map(String::as_str) {
            Some("path") => match args.get(1) {
                Some(package) if known(package) => text(
                    packages::apk_paths(self.world().model(), package)
                        .iter()
                        .map(|path| format!("package:{path}\n"))
                        .collect::<String>(),
                ),
                _ => Output::status(1),
            },
            Some("list") => match args.get(1).map(String::as_str) {
                Some("packages") => self.pm_list_packages(&args[2..], &installed),
                Some("features") => text(
                    FEATURES
                        .iter()
                        .map(|f| format!("feature:{f}\n"))
                        .collect::<String>(),
                ),
                _ => error("Error: unknown list type\n", 255),
            },
            Some("clear") => match args.iter().skip(1).find(|a| !a.starts_with('-')) {
                // The app's process dies and its state with it (the simulator keeps no other
                // app data).
                Some(package) if known(package) => {
                    self.force_stop(package);
                    text("Success\n")
                }
                _ => error("Failed\n", 255),
            },
            Some("install" | "install-create") => error(
                "Failure [INSTALL_FAILED_INTERNAL_ERROR: installing APKs is not simulated]\n",
                1,
            ),
            Some("uninstall") => text(
                "Failure [DELETE_FAILED_INTERNAL_ERROR: the app model fixes the installed packages]\n",
            ),
            _ => error(
                "Package manager (package) commands:\n  path PACKAGE\n  list packages [-f] [-d] [-e] [-s] [-3] [-i] [-l] [-u] [-U] [--show-versioncode] [--user USER_ID] [FILTER]\n  list features\n  clear PACKAGE\n",
                255,
            ),
        }
    }

    /// `pm list packages [-f] [-d] [-e] [-s] [-3] [-i] [-u] [-U] [--show-versioncode] [FILTER]`.
    fn pm_list_packages(&self, args: &[String], installed: &[String]) -> Output {
        let mut flags = String::new();
        let mut filter = None;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--user" => {
                    iter.next();
                }
                "--show-versioncode" => flags.push('V'),
                "-a" | "--apex-only" | "--uid" => {}
                flag if flag.starts_with("--") => {
                    return error(format!("Error: Unknown option: {flag}\n"), 255)
                }
                flag if flag.starts_with('-') => {
                    if let Some(bad) = flag[1..].chars().find(|c| !"fdes3ilUu".contains(*c)) {
                        return error(format!("Error: Unknown option: -{bad}\n"), 255);
                    }
                    flags.push_str(&flag[1..]);
                }
                plain => filter = Some(plain.to_string()),
            }
        }
        let world = self.world();
        let mut out = String::new();
        for package in installed {
            let system = world.is_system_package(package);
            // Every simulated package is enabled.
            let wanted = !(flags.contains('d')
                || flags.contains('s') && !system
                || flags.contains('3') && system
                || filter
                    .as_ref()
                    .is_some_and(|f| !package.contains(f.as_str())));
            if !wanted {
                continue;
            }
            out.push_str("package:");
            if flags.contains('f') {
                out.push_str(&format!("{}/base.apk=", apk_dir(package)));
            }
            out.push_str(package);
            if flags.contains('V') {
                out.push_str(" versionCode:1");
            }
            if flags.contains('i') {
                out.push_str("  installer=null");
            }
            if flags.contains('U') {
                out.push_str(&format!(" uid:{}", package_uid(package)));
            }
            out.push('\n');
        }
        text(out)
    }

    /// `logcat`: the system log this device wrote and the world's crash buffer, through
    /// logcat's filters. Without `-d` a device keeps streaming; the simulator prints what is
    /// there and ends.
    fn logcat(&self, args: &[String]) -> Output {
        let options = match logcat::parse_args(args) {
            Ok(options) => options,
            Err(message) => return error(message, 1),
        };
        if options.clear {
            guard(&self.logs).clear(&options.buffers);
            if options.buffers.contains(&Buffer::Crash) {
                self.world().clear_crash_log();
            }
            return Output::default();
        }
        let mut entries = guard(&self.logs).entries().to_vec();
        entries.extend(logcat::parse_threadtime(
            &self.world().crash_log(),
            Buffer::Crash,
        ));
        entries.sort_by(|a, b| a.stamp.cmp(&b.stamp));
        text(options.render(&entries))
    }

    /// Records until the time limit, SIGINT/SIGTERM (`pkill -INT screenrecord`), or SIGHUP (the
    /// client went away): all finish the file; SIGKILL leaves it unfinished. A frame is encoded
    /// whenever the screen changes (see [`video`]).
    fn screenrecord(&self, args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
        let mut limit = SCREENRECORD_MAX_SECS;
        let mut size = self.screen_size();
        let mut bit_rate = SCREENRECORD_BIT_RATE;
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
                "--size" => match iter.next().and_then(|v| video::parse_size(v)) {
                    Some(wanted) => size = wanted,
                    None => return error("Invalid size specified\n", 2),
                },
                "--bit-rate" => match iter.next().and_then(|v| video::parse_bit_rate(v)) {
                    Some(rate) => bit_rate = rate,
                    None => return error("Invalid bit rate specified\n", 2),
                },
                "--display-id" | "--output-format" => {
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
        let started = Instant::now();
        let deadline = started + Duration::from_secs(limit);
        let mut recording = video::Recording::new(size, bit_rate);
        let mut shown: Option<(bool, String)> = None;
        let ended = loop {
            let now = Instant::now();
            // The screen as the display shows it: what the app draws, or black while it is off.
            let screen_on = self.screen_on.load(Ordering::SeqCst);
            let current = (screen_on, self.world().hierarchy_xml());
            if shown.as_ref() != Some(&current) {
                let image = if screen_on {
                    self.world().screenshot()
                } else {
                    let (width, height) = self.screen_size();
                    render::black(width, height)
                };
                recording.frame(&image, now - started);
                shown = Some(current);
            }
            if now >= deadline || session.hung_up() {
                break Signal::Stop;
            }
            let (slot, wake) = &*signal;
            let wait = (deadline - now).min(FRAME_POLL);
            let held = guard(slot);
            let (held, _) = wake
                .wait_timeout_while(held, wait, |s| s.is_none())
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(received) = *held {
                break received;
            }
        };
        let length = started.elapsed().min(Duration::from_secs(limit));
        let encoder_error = recording.error.clone();
        let written = recording
            .finish(length, ended == Signal::Stop)
            .and_then(|video| {
                lock(fs)
                    .write(&path, &video, false)
                    .map_err(|e| e.to_string())
            });
        // The process is gone only once its file is complete, as `pidof` shows on a device.
        guard(&self.processes).retain(|p| p.pid != pid);
        match (written, encoder_error) {
            (Err(err), _) => error(format!("Unable to write '{path}': {err}\n"), 1),
            (Ok(()), Some(err)) => error(format!("Encoder failed: {err}\n"), 1),
            (Ok(()), None) => Output::default(),
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
        let request = match settings::parse(args) {
            Ok(request) => request,
            Err(usage) => return error(usage, 255),
        };
        // The input method settings are the world's IME state.
        match request {
            Request::Get("secure", "default_input_method") => {
                return text(format!("{}\n", self.world().ime_current()));
            }
            Request::Get("secure", "enabled_input_methods") => {
                return text(format!("{}\n", self.world().ime_enabled().join(":")));
            }
            Request::Put("secure", "default_input_method", id) => {
                self.world().ime_set(id);
                return Output::default();
            }
            _ => {}
        }
        let mut store = guard(&self.settings);
        match request {
            Request::Get(namespace, key) => {
                text(format!("{}\n", store.get(namespace, key).unwrap_or("null")))
            }
            Request::Put(namespace, key, value) => {
                store.put(namespace, key, value);
                Output::default()
            }
            Request::Delete(namespace, key) => {
                let rows = usize::from(store.delete(namespace, key));
                text(format!("Deleted {rows} rows\n"))
            }
            Request::List(namespace) => text(store.list(namespace)),
        }
    }

    fn svc(&self, args: &[String]) -> Output {
        match settings::svc(args) {
            Ok((namespace, key, value)) => {
                guard(&self.settings).put(namespace, key, &value);
                Output::default()
            }
            Err(usage) => error(usage, 1),
        }
    }

    fn pids_of(&self, name: &str) -> Vec<u32> {
        self.process_table()
            .iter()
            .filter(|p| p.name == name)
            .map(|p| p.pid)
            .collect()
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
        if guard(&self.capture).as_ref().is_some_and(|c| c.pid == pid) {
            let _ = self.end_capture(true);
            return true;
        }
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
        // Latency goes by the program, however its path was written.
        let mut named = argv.to_vec();
        if let Some(name) = program_name(&argv[0]) {
            named[0] = name.to_string();
        }
        let started = Instant::now();
        let delay = self.latency.delay(&named);
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let before = self.moment();
        let output = self.dispatch(argv, session, fs);
        self.log_changes(&before, &self.moment());
        let mut busy = guard(&self.busy);
        if busy.len() == BUSY_KEPT {
            busy.pop_front();
        }
        busy.push_back((started, Instant::now()));
        output
    }
}

/// The program a command names: a bare name, or a path into `/system/bin` of a program there.
fn program_name(command: &str) -> Option<&str> {
    match command.rsplit_once('/') {
        None => Some(command),
        Some((dir, name)) => {
            let dir = super::shell::FileSystem::normalize(dir);
            (dir == toybox::BIN && PROGRAMS.contains(&name)).then_some(name)
        }
    }
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

/// `Uri.toSafeString()`: a web address keeps its scheme and host only.
fn safe_uri(uri: &str) -> String {
    match uri.split_once("://") {
        Some((scheme, rest)) if scheme == "http" || scheme == "https" => {
            let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
            format!("{scheme}://{host}/...")
        }
        _ => uri.to_string(),
    }
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
    data: Option<String>,
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
                "-d" => intent.data = Some(value()?),
                "-f" | "--user" | "-t" | "-p" => {
                    value()?;
                }
                _ => {}
            }
        }
        Ok(intent)
    }

    /// `act=`, `cat=[...]` and `dat=` as `Intent.toShortString` writes them, then `tail`.
    fn parts(&self, tail: Option<String>) -> String {
        let mut parts = Vec::new();
        if let Some(action) = &self.action {
            parts.push(format!("act={action}"));
        }
        if !self.categories.is_empty() {
            parts.push(format!("cat=[{}]", self.categories.join(",")));
        }
        if let Some(data) = &self.data {
            parts.push(format!("dat={}", safe_uri(data)));
        }
        parts.extend(tail);
        parts.join(" ")
    }

    fn fields(&self) -> String {
        self.parts(self.component.as_ref().map(|c| format!("cmp={c}")))
    }

    /// The fields the activity manager logs for a launch, up to the component it resolved.
    fn launch_fields(&self) -> String {
        self.parts(Some("flg=0x10000000".to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;

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
