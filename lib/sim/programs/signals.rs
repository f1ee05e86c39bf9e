//! `pidof`, `kill`, `pkill`: signals to the simulated programs and app processes.

use super::{guard, Phone, Signal};
use crate::sim::shell::Output;

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

    pub(super) fn kill(&self, args: &[String]) -> Output {
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

    pub(super) fn pkill(&self, args: &[String]) -> Output {
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

#[cfg(test)]
mod tests {
    use super::*;

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
