//! `pidof`, `pgrep`, `kill`, `pkill`: finding the simulated processes and signalling them, as
//! toybox does.

use super::{guard, procfs, Phone, Signal};
use crate::sim::shell::Output;

/// The signals by number, as `kill -l` names them.
const SIGNALS: &[(u8, &str)] = &[
    (1, "HUP"),
    (2, "INT"),
    (3, "QUIT"),
    (4, "ILL"),
    (5, "TRAP"),
    (6, "ABRT"),
    (7, "BUS"),
    (8, "FPE"),
    (9, "KILL"),
    (10, "USR1"),
    (11, "SEGV"),
    (12, "USR2"),
    (13, "PIPE"),
    (14, "ALRM"),
    (15, "TERM"),
    (16, "STKFLT"),
    (17, "CHLD"),
    (18, "CONT"),
    (19, "STOP"),
    (20, "TSTP"),
    (21, "TTIN"),
    (22, "TTOU"),
    (23, "URG"),
    (24, "XCPU"),
    (25, "XFSZ"),
    (26, "VTALRM"),
    (27, "PROF"),
    (28, "WINCH"),
    (29, "IO"),
    (30, "PWR"),
    (31, "SYS"),
];

/// A signal's number from `9`, `KILL` or `SIGKILL` (any case).
fn signal_number(name: &str) -> Option<u8> {
    if let Ok(number) = name.parse::<u8>() {
        return (number <= 64).then_some(number);
    }
    let upper = name.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS
        .iter()
        .find(|(_, n)| *n == bare)
        .map(|(number, _)| *number)
}

/// What a signal does to a simulated program: `None` for the ones that do not end it (0 only
/// checks the process is there; STOP, CONT, CHLD, WINCH, URG).
pub(super) fn effect(number: u8) -> Option<Signal> {
    match number {
        0 | 17 | 18 | 19 | 20 | 21 | 22 | 23 | 28 => None,
        // What screenrecord catches to finish its file.
        1 | 2 | 15 => Some(Signal::Stop),
        _ => Some(Signal::Kill),
    }
}

/// A process's name as the kernel knows it: the program, without its directory.
fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// What `kill`/`pkill` may do to a process the shell user does not own.
enum Delivery {
    Done,
    NoSuchProcess,
    NotPermitted,
}

/// How `pgrep`/`pkill` pick processes.
#[derive(Debug, Default)]
struct Match {
    full: bool,
    exact: bool,
    invert: bool,
    newest: bool,
    oldest: bool,
    parents: Vec<u32>,
    users: Vec<u32>,
    pattern: Option<regex::Regex>,
}

impl Match {
    fn picks(&self, process: &procfs::Process) -> bool {
        let text = if self.full {
            process.argv.join(" ")
        } else {
            base_name(&process.name).to_string()
        };
        let named = self.pattern.as_ref().is_none_or(|re| match re.find(&text) {
            Some(found) => !self.exact || (found.start() == 0 && found.end() == text.len()),
            None => false,
        });
        let related = (self.parents.is_empty() || self.parents.contains(&process.ppid))
            && (self.users.is_empty() || self.users.contains(&process.uid));
        (named != self.invert) && related
    }
}

/// What a `pgrep`/`pkill` command line asked for; `Err` is the usage error.
struct Search {
    matching: Match,
    list: bool,
    count: bool,
    delimiter: String,
    signal: u8,
}

fn parse_search(program: &str, args: &[String]) -> Result<Search, String> {
    let mut search = Search {
        matching: Match::default(),
        list: false,
        count: false,
        delimiter: "\n".to_string(),
        signal: 15,
    };
    let mut pattern = None;
    let mut iter = args.iter();
    let numbers = |value: Option<&String>, flag: char| -> Result<Vec<u32>, String> {
        value
            .ok_or_else(|| format!("{program}: Missing argument to -{flag}\n"))?
            .split(',')
            .map(|n| {
                n.parse()
                    .map_err(|_| format!("{program}: bad -{flag} '{n}'\n"))
            })
            .collect()
    };
    while let Some(arg) = iter.next() {
        let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            if pattern.is_some() {
                return Err(format!("{program}: Max 1 argument > 1\n"));
            }
            pattern = Some(arg.clone());
            continue;
        };
        // `pkill -9`, `pkill -INT`: a signal, not flags.
        if program == "pkill" {
            if let Some(number) = signal_number(flags) {
                search.signal = number;
                continue;
            }
        }
        let mut chars = flags.chars();
        while let Some(flag) = chars.next() {
            let rest: String = chars.clone().collect();
            let mut value = || {
                if rest.is_empty() {
                    iter.next().cloned()
                } else {
                    Some(rest.clone())
                }
            };
            match flag {
                'f' => search.matching.full = true,
                'x' => search.matching.exact = true,
                'v' => search.matching.invert = true,
                'n' => search.matching.newest = true,
                'o' => search.matching.oldest = true,
                'l' if program == "pgrep" => search.list = true,
                'c' if program == "pgrep" => search.count = true,
                'd' if program == "pgrep" => {
                    search.delimiter =
                        value().ok_or_else(|| format!("{program}: Missing argument to -d\n"))?;
                    break;
                }
                // pkill's `-l SIGNAL` (and `-L SIGNAL` of pgrep) send that signal.
                'l' | 'L' => {
                    let name = value().unwrap_or_default();
                    search.signal = signal_number(&name)
                        .ok_or_else(|| format!("{program}: Unknown signal '{name}'\n"))?;
                    break;
                }
                'P' => {
                    search.matching.parents = numbers(value().as_ref(), 'P')?;
                    break;
                }
                'u' | 'U' => {
                    search.matching.users = numbers(value().as_ref(), flag)?;
                    break;
                }
                other => return Err(format!("{program}: Unknown option '{other}'\n")),
            }
        }
    }
    if pattern.is_none() && search.matching.parents.is_empty() && search.matching.users.is_empty() {
        return Err(format!("{program}: Need 1 argument\n"));
    }
    if let Some(pattern) = pattern {
        search.matching.pattern = Some(
            regex::Regex::new(&pattern)
                .map_err(|_| format!("{program}: bad regex '{pattern}'\n"))?,
        );
    }
    Ok(search)
}

impl Phone {
    fn pids_of(&self, name: &str) -> Vec<u32> {
        self.process_table()
            .iter()
            .filter(|p| p.name == name)
            .map(|p| p.pid)
            .collect()
    }

    pub(super) fn pidof(&self, args: &[String]) -> Output {
        let pids: Vec<String> = args
            .iter()
            .flat_map(|name| self.pids_of(name))
            .map(|pid| pid.to_string())
            .collect();
        if pids.is_empty() {
            Output::status(1)
        } else {
            Output::ok(format!("{}\n", pids.join(" ")))
        }
    }

    /// The processes a search picks, without the searching command itself (`own_pid`).
    fn search(&self, matching: &Match, own_pid: u32) -> Vec<procfs::Process> {
        let mut found: Vec<procfs::Process> = self
            .process_table()
            .into_iter()
            .filter(|p| p.pid != own_pid && matching.picks(p))
            .collect();
        // Pids grow with the start time here, as on a freshly booted device.
        if matching.newest {
            found = found.pop().into_iter().collect();
        } else if matching.oldest {
            found.truncate(1);
        }
        found
    }

    /// What `pgrep`/`pkill` ARGS asked for and the processes it picks (the command itself is a
    /// process too, with a pid of its own, which it never picks); `Err` is the usage error.
    fn searched(
        &self,
        program: &str,
        args: &[String],
    ) -> Result<(Search, Vec<procfs::Process>), Output> {
        let search = parse_search(program, args).map_err(|message| Output::error(message, 2))?;
        let own_pid = self
            .next_pid
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let found = self.search(&search.matching, own_pid);
        Ok((search, found))
    }

    /// `pgrep [-cflnovx] [-d DELIM] [-P PPID,...] [-u UID,...] PATTERN`: the matching processes'
    /// pids (`-l` with the name, or with `-f` the command line).
    pub(super) fn pgrep(&self, args: &[String]) -> Output {
        let (search, found) = match self.searched("pgrep", args) {
            Ok(searched) => searched,
            Err(usage) => return usage,
        };
        if search.count {
            return Output {
                stdout: format!("{}\n", found.len()).into_bytes(),
                status: i32::from(found.is_empty()),
                ..Output::default()
            };
        }
        let mut out = String::new();
        for process in &found {
            out.push_str(&process.pid.to_string());
            if search.list {
                out.push(' ');
                if search.matching.full {
                    out.push_str(&process.argv.join(" "));
                } else {
                    out.push_str(base_name(&process.name));
                }
            }
            out.push_str(&search.delimiter);
        }
        Output {
            stdout: out.into_bytes(),
            status: i32::from(found.is_empty()),
            ..Output::default()
        }
    }

    /// Ends a program the shell started (screenrecord, logcat, a capture) or, any ending
    /// signal being fatal to it, an app process; the system's processes are not the shell
    /// user's to signal.
    fn deliver(&self, pid: u32, number: u8) -> Delivery {
        let table = self.process_table();
        let Some(process) = table.iter().find(|p| p.pid == pid) else {
            return Delivery::NoSuchProcess;
        };
        let effect = effect(number);
        if guard(&self.capture).as_ref().is_some_and(|c| c.pid == pid) {
            if effect.is_some() {
                let _ = self.end_capture(true);
            }
            return Delivery::Done;
        }
        if let Some(program) = guard(&self.processes).iter().find(|p| p.pid == pid) {
            if effect.is_some() {
                let (slot, wake) = &*program.signal;
                *guard(slot) = Some(number);
                wake.notify_all();
            }
            return Delivery::Done;
        }
        if process.uid < super::procfs::FIRST_APP_UID {
            return Delivery::NotPermitted;
        }
        if effect.is_some() {
            self.world().force_stop(&process.name);
        }
        Delivery::Done
    }

    /// `kill [-SIGNAL | -s SIGNAL] PID...`, `kill -l`.
    pub(super) fn kill(&self, args: &[String]) -> Output {
        let mut number = 15;
        let mut targets = Vec::new();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "-l" | "-L" => {
                    let names: Vec<&str> = SIGNALS.iter().map(|(_, name)| *name).collect();
                    return Output::ok(format!("{}\n", names.join(" ")));
                }
                "-s" | "-n" => {
                    let name = iter.next().map(String::as_str).unwrap_or("");
                    match signal_number(name) {
                        Some(found) => number = found,
                        None => {
                            return Output::error(format!("kill: Unknown signal '{name}'\n"), 1)
                        }
                    }
                }
                flag if flag.starts_with('-') && targets.is_empty() && flag.len() > 1 => {
                    match signal_number(&flag[1..]) {
                        Some(found) => number = found,
                        None => {
                            return Output::error(
                                format!("kill: Unknown signal '{}'\n", &flag[1..]),
                                1,
                            )
                        }
                    }
                }
                plain => targets.push(plain),
            }
        }
        if targets.is_empty() {
            return Output::error("kill: Need 1 argument\n", 1);
        }
        let mut out = Output::default();
        for target in targets {
            let delivery = match target.parse::<u32>() {
                Ok(pid) => self.deliver(pid, number),
                Err(_) => Delivery::NoSuchProcess,
            };
            let reason = match delivery {
                Delivery::Done => continue,
                Delivery::NoSuchProcess => "No such process",
                Delivery::NotPermitted => "Operation not permitted",
            };
            out.stderr
                .extend(format!("kill: {target}: {reason}\n").into_bytes());
            out.status = 1;
        }
        out
    }

    /// `pkill [-fnovx] [-SIGNAL | -l SIGNAL] PATTERN`: signals what `pgrep` would list.
    pub(super) fn pkill(&self, args: &[String]) -> Output {
        let (search, found) = match self.searched("pkill", args) {
            Ok(searched) => searched,
            Err(usage) => return usage,
        };
        let mut signalled = false;
        for process in found {
            signalled |= matches!(self.deliver(process.pid, search.signal), Delivery::Done);
        }
        Output::status(if signalled { 0 } else { 1 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn signals_are_named_as_kill_names_them() {
        assert_eq!(signal_number("2"), Some(2));
        assert_eq!(signal_number("INT"), Some(2));
        assert_eq!(signal_number("sigkill"), Some(9));
        assert_eq!(signal_number("NOPE"), None);
        assert_eq!(effect(2), Some(Signal::Stop));
        assert_eq!(effect(9), Some(Signal::Kill));
        assert_eq!(effect(0), None);
    }

    #[test]
    fn searches_parse_like_toybox() {
        let search = parse_search("pkill", &args("-INT -f screenrecord")).unwrap();
        assert_eq!(search.signal, 2);
        assert!(search.matching.full);
        let search = parse_search("pgrep", &args("-lf /sdcard/a.mp4")).unwrap();
        assert!(search.list && search.matching.full);
        let search = parse_search("pkill", &args("-l KILL logcat")).unwrap();
        assert_eq!(search.signal, 9);
        assert!(parse_search("pgrep", &args("-f")).is_err());
        assert!(parse_search("pgrep", &args("-q x")).is_err());
        let process = procfs::Process {
            pid: 9001,
            ppid: 4242,
            uid: 2000,
            name: "screenrecord".into(),
            argv: args("screenrecord /sdcard/a.mp4"),
        };
        let picks = |line: &str| {
            parse_search("pgrep", &args(line))
                .unwrap()
                .matching
                .picks(&process)
        };
        assert!(picks("screen"));
        assert!(!picks("a.mp4"), "without -f only the name");
        assert!(picks("-f a.mp4"));
        assert!(!picks("-x screen"));
        assert!(picks("-x screenrecord"));
        assert!(picks("-v logcat"));
    }
}
