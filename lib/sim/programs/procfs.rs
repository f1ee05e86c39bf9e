//! The device's processes as the kernel shows them: the process table `ps` prints, and the
//! read-only files under `/proc` and `/sys/devices/system/cpu` that tools read (`/proc/stat`,
//! `/proc/PID/stat`, `/proc/PID/task`). Everything is derived on demand from the running apps
//! and the time since boot, so CPU counters only grow, as on a device.

use std::time::Duration;

use crate::sim::shell::{FsError, SHELL_PID};

/// Cores of the simulated phone.
pub const CPUS: u32 = 4;
/// Clock ticks per second (`USER_HZ`).
const HZ: u64 = 100;
/// The zygote every app process is forked from.
const ZYGOTE_PID: u32 = 350;
const ADBD_PID: u32 = 420;

/// One process of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub uid: u32,
    /// The full process name (`ps` NAME, what `pgrep` matches).
    pub name: String,
    /// The command line (`/proc/PID/cmdline`, what `pgrep -f` matches): the name alone for the
    /// system's and the apps' processes, the program and its arguments for a program the shell
    /// started.
    pub argv: Vec<String>,
}

impl Process {
    /// The `ps` USER column: `root`, `system`, `shell`, or `u0_aNN` for apps.
    pub fn user(&self) -> String {
        match self.uid {
            0 => "root".to_string(),
            1000 => "system".to_string(),
            1036 => "logd".to_string(),
            2000 => "shell".to_string(),
            uid if uid >= FIRST_APP_UID => format!("u0_a{}", uid - FIRST_APP_UID),
            uid => uid.to_string(),
        }
    }

    /// The kernel's task name: at most 15 bytes, Android keeps the end of a long package name.
    fn comm(&self) -> String {
        let name = self.name.rsplit('/').next().unwrap_or(&self.name);
        let skip = name.len().saturating_sub(15);
        name.get(skip..).unwrap_or(name).to_string()
    }

    /// Thread ids: the main thread shares the pid; apps run a few more.
    fn threads(&self) -> Vec<u32> {
        let mut tids = vec![self.pid];
        if self.uid >= FIRST_APP_UID {
            // Kept clear of the pids the device hands out, which count up from a few thousand.
            tids.extend((1..=3).map(|k| 20000 + (self.pid % 1000) * 10 + k));
        }
        tids
    }
}

/// The device's own processes, present from boot.
const SYSTEM_PROCESSES: &[(u32, u32, u32, &str)] = &[
    (1, 0, 0, "init"),
    (2, 0, 0, "[kthreadd]"),
    (250, 1, 1036, "/system/bin/logd"),
    (262, 1, 1000, "/system/bin/servicemanager"),
    (330, 1, 1000, "/system/bin/surfaceflinger"),
    (ZYGOTE_PID, 1, 0, "zygote64"),
    (ADBD_PID, 1, 2000, "/apex/com.android.adbd/bin/adbd"),
    (560, ZYGOTE_PID, 1000, "system_server"),
];

/// App processes that run from boot: the system UI, the keyboard and the launcher.
pub const RESIDENT_APPS: &[(u32, &str)] = &[
    (820, "com.android.systemui"),
    (1020, "com.android.inputmethod.latin"),
    (1480, "com.android.launcher3"),
];

/// A uid as the activity manager writes it (`UserHandle.formatUid`, user 0): `u0a86` for an
/// app's uid 10086, the number itself for a system uid (`1000`).
pub fn short_uid(uid: u32) -> String {
    match uid.checked_sub(FIRST_APP_UID) {
        Some(app_id) => format!("u0a{app_id}"),
        None => uid.to_string(),
    }
}

/// A uid as a window manager session writes it (`dumpsys window`'s `mSession=Session{… PID:UID}`):
/// `u0a10086` for an app's uid 10086, as devices print it, the number itself for a system uid.
pub fn session_uid(uid: u32) -> String {
    match uid < FIRST_APP_UID {
        true => uid.to_string(),
        false => format!("u0a{uid}"),
    }
}

/// The first uid of an application (`AID_APP`); below it, the system's own uids.
pub(super) const FIRST_APP_UID: u32 = 10_000;

/// The uid a package runs as (`userId=` in `dumpsys package`, `u0_aNN` in `ps`).
pub fn package_uid(package: &str) -> u32 {
    match package {
        "android" | "com.android.settings" => 1000,
        "com.android.launcher3" => 10081,
        "com.android.systemui" => 10086,
        "com.android.inputmethod.latin" => 10090,
        "com.android.chrome" => 10115,
        "com.android.adbkeyboard" => 10140,
        other => {
            // Installed apps get the next free app ids; stable per name.
            let sum = other.bytes().fold(0u32, |acc, b| {
                acc.wrapping_mul(31).wrapping_add(u32::from(b))
            });
            10150 + sum % 800
        }
    }
}

/// The running processes: the system's, the resident apps', the started apps' (pid from the
/// world), the shell and `extra` (programs the shell started, such as screenrecord).
pub fn table(apps: &[(String, u32)], extra: &[(u32, Vec<String>)]) -> Vec<Process> {
    let mut table: Vec<Process> = SYSTEM_PROCESSES
        .iter()
        .map(|&(pid, ppid, uid, name)| Process {
            pid,
            ppid,
            uid,
            name: name.to_string(),
            argv: vec![name.to_string()],
        })
        .collect();
    let app = |pid: u32, package: &str| Process {
        pid,
        ppid: ZYGOTE_PID,
        uid: package_uid(package),
        name: package.to_string(),
        argv: vec![package.to_string()],
    };
    table.extend(
        RESIDENT_APPS
            .iter()
            .map(|&(pid, package)| app(pid, package)),
    );
    table.extend(
        apps.iter()
            .filter(|(package, _)| !RESIDENT_APPS.iter().any(|(_, p)| p == package))
            .map(|(package, pid)| app(*pid, package)),
    );
    table.push(Process {
        pid: SHELL_PID,
        ppid: ADBD_PID,
        uid: 2000,
        name: "sh".to_string(),
        argv: vec!["/system/bin/sh".to_string()],
    });
    table.extend(extra.iter().map(|(pid, argv)| {
        Process {
            pid: *pid,
            ppid: SHELL_PID,
            uid: 2000,
            name: argv
                .first()
                .map_or("", |p| p.rsplit('/').next().unwrap_or(p))
                .to_string(),
            argv: argv.clone(),
        }
    }));
    table.sort_by_key(|p| p.pid);
    table
}

/// toybox `ps`: without `-A`/`-e` only the shell's own processes, as on Android 8+.
pub fn ps(args: &[String], table: &[Process], own_pid: u32) -> String {
    let all = args.iter().any(|a| a == "-A" || a == "-e" || a == "-Af");
    let names: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let ps_self = Process {
        pid: own_pid,
        ppid: SHELL_PID,
        uid: 2000,
        name: "ps".to_string(),
        argv: vec!["ps".to_string()],
    };
    let mut out = String::from(
        "USER            PID   PPID        VSZ    RSS WCHAN            ADDR S NAME                       \n",
    );
    for process in table.iter().chain(std::iter::once(&ps_self)) {
        let mine = process.pid == SHELL_PID || process.ppid == SHELL_PID;
        let named = names.is_empty()
            || names
                .iter()
                .any(|n| n.parse::<u32>().ok() == Some(process.pid) || **n == process.name);
        if !(all || mine) || !named {
            continue;
        }
        let (vsz, rss) = if process.uid >= FIRST_APP_UID {
            (14_386_860, 98_484 + process.pid % 1000)
        } else {
            (10_932_508, 4_096 + process.pid % 512)
        };
        let state = if process.name == "ps" { 'R' } else { 'S' };
        out.push_str(&format!(
            "{:<12} {:>6} {:>6} {:>10} {:>6} {:<16} {:>4} {state} {}\n",
            process.user(),
            process.pid,
            process.ppid,
            vsz,
            rss,
            if state == 'R' { "0" } else { "do_epoll_wait" },
            0,
            process.name
        ));
    }
    out
}

/// What `/proc` and `/sys/devices/system/cpu` show at `uptime` since boot.
pub struct ProcFs<'a> {
    pub table: &'a [Process],
    pub uptime: Duration,
}

impl ProcFs<'_> {
    fn ticks(&self) -> u64 {
        self.uptime.as_millis() as u64 * HZ / 1000
    }

    fn process(&self, pid: &str) -> Option<&Process> {
        let pid: u32 = pid.parse().ok()?;
        self.table.iter().find(|p| p.pid == pid)
    }

    /// `None` when the path is not one of these files (the caller then reads storage).
    pub fn read(&self, path: &str) -> Option<Result<Vec<u8>, FsError>> {
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let text = match parts.as_slice() {
            ["proc", "stat"] => Ok(self.stat()),
            ["proc", "uptime"] => {
                let secs = self.uptime.as_secs_f64();
                Ok(format!("{secs:.2} {:.2}\n", secs * f64::from(CPUS) * 0.9))
            }
            ["proc", pid, "stat"] => self
                .process(pid)
                .map(|p| self.task_stat(p, p.pid))
                .ok_or(FsError::NotFound),
            ["proc", pid, "cmdline"] => self
                .process(pid)
                .map(|p| p.argv.iter().map(|arg| format!("{arg}\0")).collect())
                .ok_or(FsError::NotFound),
            ["proc", pid, "task", tid, "stat"] => {
                let tid: Option<u32> = tid.parse().ok();
                self.process(pid)
                    .filter(|p| tid.is_some_and(|t| p.threads().contains(&t)))
                    .map(|p| self.task_stat(p, tid.unwrap_or(p.pid)))
                    .ok_or(FsError::NotFound)
            }
            ["proc", pid, ..] if self.process(pid).is_some() => Err(FsError::NotFound),
            ["sys", "devices", "system", "cpu", "online" | "possible" | "present"] => {
                Ok(format!("0-{}\n", CPUS - 1))
            }
            ["sys", "devices", "system", "cpu", "kernel_max"] => Ok("511\n".to_string()),
            ["sys", "devices", "system", "cpu", "offline"] => Ok("\n".to_string()),
            _ => return None,
        };
        Some(text.map(String::into_bytes))
    }

    /// Directory entries, sorted; `None` when the path is not one of these directories.
    pub fn list(&self, path: &str) -> Option<Result<Vec<String>, FsError>> {
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let names = match parts.as_slice() {
            ["proc"] => {
                let mut names: Vec<String> = self.table.iter().map(|p| p.pid.to_string()).collect();
                names.extend(["stat".to_string(), "uptime".to_string()]);
                Ok(names)
            }
            ["proc", pid] => self
                .process(pid)
                .map(|_| vec!["cmdline".into(), "stat".into(), "task".into()])
                .ok_or(FsError::NotFound),
            ["proc", pid, "task"] => self
                .process(pid)
                .map(|p| p.threads().iter().map(u32::to_string).collect())
                .ok_or(FsError::NotFound),
            ["sys", "devices", "system", "cpu"] => {
                let mut names: Vec<String> = (0..CPUS).map(|n| format!("cpu{n}")).collect();
                names.extend(
                    [
                        "cpufreq",
                        "cpuidle",
                        "hotplug",
                        "isolated",
                        "kernel_max",
                        "modalias",
                        "offline",
                        "online",
                        "possible",
                        "power",
                        "present",
                        "uevent",
                    ]
                    .map(String::from),
                );
                Ok(names)
            }
            _ => return None,
        };
        Some(names.map(|mut names| {
            names.sort();
            names
        }))
    }

    /// `/proc/stat`: the whole machine's and each core's time in ticks since boot.
    fn stat(&self) -> String {
        let per_cpu = self.ticks();
        let line = |name: &str, ticks: u64| {
            let user = ticks * 6 / 100;
            let system = ticks * 3 / 100;
            let iowait = ticks / 200;
            let irq = ticks / 500;
            let softirq = ticks / 1000;
            let idle = ticks - user - system - iowait - irq - softirq;
            format!("{name} {user} 0 {system} {idle} {iowait} {irq} {softirq} 0 0 0\n")
        };
        let mut out = line("cpu ", per_cpu * u64::from(CPUS));
        for n in 0..CPUS {
            out.push_str(&line(&format!("cpu{n}"), per_cpu));
        }
        let boot = chrono::Utc::now().timestamp() - self.uptime.as_secs() as i64;
        out.push_str(&format!(
            "intr {}\nctxt {}\nbtime {boot}\nprocesses {}\nprocs_running 1\nprocs_blocked 0\n",
            per_cpu * 40,
            per_cpu * 90,
            self.table.iter().map(|p| p.pid).max().unwrap_or(1)
        ));
        out
    }

    /// `/proc/PID/stat` (and a thread's): the fields `ps` and profilers read, times in ticks.
    fn task_stat(&self, process: &Process, tid: u32) -> String {
        let ticks = self.ticks();
        let share = if process.uid >= FIRST_APP_UID {
            40
        } else {
            400
        };
        let utime = ticks / share + u64::from(tid % 7);
        let stime = ticks / (share * 2) + u64::from(tid % 3);
        let threads = process.threads().len();
        format!(
            "{tid} ({}) S {} {} 0 0 -1 1077952832 {} 0 {} 0 {utime} {stime} 0 0 20 0 {threads} 0 {} 14386860000 24621 18446744073709551615 0 0 0 0 0 0 4612 1 1073775864 0 0 0 17 1 0 0 0 0 0\n",
            process.comm(),
            process.ppid,
            process.pid,
            ticks / 10,
            ticks / 100,
            ticks / 20,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apps() -> Vec<(String, u32)> {
        vec![("com.example.shop".to_string(), 4321)]
    }

    #[test]
    fn ps_lists_the_shell_alone_unless_asked_for_all() {
        let table = table(&apps(), &[]);
        let own = ps(&[], &table, 9000);
        assert!(
            own.lines().nth(1).is_some_and(|l| l.ends_with(" sh")),
            "{own}"
        );
        assert!(!own.contains("com.example.shop"));
        let all = ps(&["-A".to_string()], &table, 9000);
        let line = all
            .lines()
            .find(|l| l.ends_with(" com.example.shop"))
            .expect("app listed");
        assert_eq!(line.split_whitespace().nth(1), Some("4321"));
        assert!(line.starts_with("u0_a"));
    }

    #[test]
    fn proc_files_count_up_and_name_the_task() {
        let table = table(&apps(), &[]);
        let early = ProcFs {
            table: &table,
            uptime: Duration::from_secs(10),
        };
        let later = ProcFs {
            table: &table,
            uptime: Duration::from_secs(20),
        };
        let idle = |fs: &ProcFs| -> u64 {
            let stat = String::from_utf8(fs.read("/proc/stat").unwrap().unwrap()).unwrap();
            stat.lines()
                .next()
                .unwrap()
                .split_whitespace()
                .nth(4)
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(idle(&later) > idle(&early));
        let stat = String::from_utf8(early.read("/proc/4321/stat").unwrap().unwrap()).unwrap();
        let fields: Vec<&str> = stat.split_whitespace().collect();
        assert_eq!(fields[1], "(om.example.shop)");
        assert!(fields[13].parse::<u64>().is_ok());
        assert_eq!(early.read("/proc/9999/stat"), Some(Err(FsError::NotFound)));
        let tasks = early.list("/proc/4321/task").unwrap().unwrap();
        assert!(tasks.contains(&"4321".to_string()) && tasks.len() == 4);
        let cpus = early.list("/sys/devices/system/cpu").unwrap().unwrap();
        assert_eq!(
            cpus.iter()
                .filter(|n| n.starts_with("cpu") && n[3..].parse::<u32>().is_ok())
                .count(),
            4
        );
    }

    #[test]
    fn package_uids_are_stable_and_apps_are_app_ids() {
        assert_eq!(package_uid("com.android.settings"), 1000);
        assert_eq!(
            package_uid("com.example.shop"),
            package_uid("com.example.shop")
        );
        assert!(package_uid("com.example.shop") >= 10000);
    }

    #[test]
    fn uids_are_written_as_the_activity_and_window_managers_write_them() {
        assert_eq!(short_uid(package_uid("com.android.settings")), "1000");
        assert_eq!(short_uid(package_uid("com.android.systemui")), "u0a86");
        // As ../shared/fixtures/device/dumpsys/window_windows_*.txt show sessions.
        assert_eq!(session_uid(package_uid("com.android.systemui")), "u0a10086");
        assert_eq!(session_uid(package_uid("com.android.settings")), "1000");
    }
}
