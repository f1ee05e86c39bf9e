//! The device's programs: what `uiautomator`, `screencap`, `input`, `am`, `pm`, `settings`,
//! `logcat`, ... print and do on the simulated phone, one module per program or family. Output
//! shapes follow the real samples in `../shared/fixtures/device/`; the behaviour itself lives in
//! the [`World`], never here. Every program answers by its name and by its path
//! (`/system/bin/screencap`), as on a device.

mod activity_log;
mod am;
mod capture;
mod cmd;
pub mod dumpsys;
mod getprop;
mod ime;
mod input;
pub mod logcat;
mod monkey;
mod pm;
pub mod procfs;
mod run_as;
mod screencap;
mod screenrecord;
pub mod settings;
mod signals;
pub mod toybox;
mod uiautomator;
mod wm;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use self::logcat::LogBuffers;
use self::procfs::ProcFs;
use self::settings::Settings;
use crate::sim::fault::{Faults, Latency};
use crate::sim::packages;
use crate::sim::pcapdroid;
use crate::sim::shell::{FsHandle, Output, Programs, Session};
use crate::sim::world::World;

/// The programs the shell finds on its `PATH` (all in `/system/bin`).
const PROGRAMS: &[&str] = &[
    "am",
    "cat",
    "cmd",
    "content",
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
    "mv",
    "pgrep",
    "pidof",
    "pkill",
    "pm",
    "ps",
    "reboot",
    "rm",
    "run-as",
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

/// system_server, which writes the activity manager's log lines.
const SYSTEM_SERVER_PID: u32 = 560;
/// system_server as the writer of a log line (its main thread, the system uid).
const SYSTEM_SERVER: logcat::Writer = logcat::Writer {
    pid: SYSTEM_SERVER_PID,
    tid: SYSTEM_SERVER_PID,
    uid: 1000,
};

/// A signal a long-running program (screenrecord, logcat) can receive from `kill`/`pkill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    /// SIGINT / SIGTERM / SIGHUP: finish cleanly.
    Stop,
    /// SIGKILL: die at once, leaving whatever was written.
    Kill,
}

/// Where a signal (its number) to a program waits until the program looks.
type SignalSlot = Arc<(Mutex<Option<u8>>, Condvar)>;

/// SIGHUP: what a program gets when its terminal (here, the server) goes away.
const SIGHUP: u8 = 1;

/// A program the shell started that is still running, as the process table shows it.
#[derive(Debug)]
struct Process {
    pid: u32,
    /// The command line, program first.
    argv: Vec<String>,
    signal: SignalSlot,
}

/// A long-running program's entry in the process table, removed when dropped (the program
/// ended).
struct Running<'a> {
    phone: &'a Phone,
    pid: u32,
    signal: SignalSlot,
}

impl Running<'_> {
    /// Waits up to `timeout` for a signal; the signal received, if any.
    fn wait_signal(&self, timeout: Duration) -> Option<u8> {
        let (slot, wake) = &*self.signal;
        let held = guard(slot);
        let (held, _) = wake
            .wait_timeout_while(held, timeout, |s| s.is_none())
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *held
    }

    /// The signal received so far, if any.
    fn signal(&self) -> Option<u8> {
        *guard(&self.signal.0)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        guard(&self.phone.processes).retain(|p| p.pid != self.pid);
    }
}

/// The simulated phone as the shell sees it: the world plus storage, faults, latency and the
/// few long-running programs.
#[derive(Debug)]
pub struct Phone {
    world: Mutex<World>,
    pub fs: FsHandle,
    pub faults: Faults,
    latency: Latency,
    serial: String,
    processes: Mutex<Vec<Process>>,
    next_pid: AtomicU32,
    capture: Mutex<Option<pcapdroid::Capture>>,
    /// The package installer's sessions (`pm install-create`).
    sessions: Mutex<pm::Sessions>,
    settings: Mutex<Settings>,
    logs: Mutex<LogBuffers>,
    /// Notified whenever lines were logged (a streaming `logcat` waits on it).
    logged: Condvar,
    /// The state the activity manager's log last accounted for (see [`Phone::log_changes`]).
    logged_moment: Mutex<Option<activity_log::Moment>>,
    screen_on: AtomicBool,
    booted: Instant,
    /// The intent (its fields before `cmp=`) and caller uid of a launch a command is making,
    /// for the activity log.
    launching: Mutex<Option<(String, u32)>>,
    /// When each of the last [`BUSY_KEPT`] commands ran, latency included.
    busy: Mutex<std::collections::VecDeque<(Instant, Instant)>>,
}

/// How long the phone had been up when the simulator started.
const BOOTED_BEFORE: Duration = Duration::from_secs(600);

/// How many command periods a device keeps for [`Phone::busy_periods`].
pub const BUSY_KEPT: usize = 65_536;

fn guard<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Phone {
    pub fn new(world: World, faults: Faults, latency: Latency, serial: String) -> Phone {
        let mut world = world;
        world.set_anr_screen(faults.anr_screen());
        world.set_crash_every(faults.crash_every());
        let mut storage = super::shell::FileSystem::default();
        let apks = packages::apk_files(world.model(), &world.installed_packages(), |p| {
            world.is_system_package(p)
        });
        for (path, apk) in apks {
            storage.install(&path, &apk);
        }
        Phone {
            world: Mutex::new(world),
            fs: Mutex::new(storage),
            faults,
            latency,
            serial,
            processes: Mutex::new(Vec::new()),
            next_pid: AtomicU32::new(9000),
            capture: Mutex::new(None),
            sessions: Mutex::new(pm::Sessions::default()),
            settings: Mutex::new(Settings::default()),
            // The phone booted a while before the simulator took its first command.
            logs: Mutex::new(LogBuffers::new(
                chrono::Utc::now() - chrono::Duration::from_std(BOOTED_BEFORE).unwrap_or_default(),
            )),
            logged: Condvar::new(),
            logged_moment: Mutex::new(None),
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

    /// The console's `geo fix`: the location the device reports.
    pub fn geo_fix(&self, longitude: f64, latitude: f64) {
        self.world().geo_fix(longitude, latitude);
    }

    /// The console's `rotate`.
    pub fn rotate(&self) {
        self.world().rotate();
    }

    /// Ends every long-running program (the server is shutting down).
    pub fn interrupt_all(&self) {
        for process in guard(&self.processes).iter() {
            let (slot, wake) = &*process.signal;
            *guard(slot) = Some(SIGHUP);
            wake.notify_all();
        }
    }

    fn dispatch(&self, argv: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
        let args = &argv[1..];
        let Some(name) = program_name(&argv[0]) else {
            return Output::error(
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
            "mv" => toybox::mv(args, fs),
            "ls" => toybox::ls(args, fs, &self.kernel(&self.process_table())),
            "mkdir" => toybox::mkdir(args, fs),
            "touch" => toybox::touch(args, fs),
            "sleep" => toybox::sleep(args),
            "grep" => toybox::grep(args, session, fs),
            "cut" => toybox::cut(args, session, fs),
            "which" => toybox::which(args, &|name| PROGRAMS.contains(&name)),
            "ifconfig" => toybox::ifconfig(args, self.wifi_on()),
            "ip" => toybox::ip(args, self.wifi_on()),
            "ps" => Output::ok(procfs::ps(
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
            "pm" => self.pm(args, session, fs),
            "logcat" => self.logcat(args, session),
            "screenrecord" => self.screenrecord(args, session, fs),
            "ime" => self.ime(args),
            "settings" => self.settings(args),
            "svc" => self.svc(args),
            "cmd" => self.cmd(args, session, fs),
            "content" => self.content(args),
            "pidof" => self.pidof(args),
            "kill" => self.kill(args),
            "pkill" => self.pkill(args),
            "pgrep" => self.pgrep(args),
            "run-as" => self.run_as(args),
            "reboot" => Output::error("reboot: rebooting is not simulated\n", 1),
            other => Output::error(
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
        let extra: Vec<(u32, Vec<String>)> = guard(&self.processes)
            .iter()
            .map(|p| (p.pid, p.argv.clone()))
            .collect();
        procfs::table(&self.app_pids(), &extra)
    }

    /// Puts a program that runs until it ends or is signalled into the process table.
    fn start_process(&self, argv: &[String]) -> Running<'_> {
        let signal: SignalSlot = Arc::new((Mutex::new(None), Condvar::new()));
        let pid = self.next_pid.fetch_add(1, Ordering::SeqCst);
        guard(&self.processes).push(Process {
            pid,
            argv: argv.to_vec(),
            signal: Arc::clone(&signal),
        });
        Running {
            phone: self,
            pid,
            signal,
        }
    }

    fn kernel<'a>(&self, table: &'a [procfs::Process]) -> ProcFs<'a> {
        // The phone booted a while before the simulator took its first command.
        ProcFs {
            table,
            uptime: self.booted.elapsed() + BOOTED_BEFORE,
        }
    }
}

impl Programs for Phone {
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
        self.mark_moment();
        let output = self.dispatch(argv, session, fs);
        self.log_changes();
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
