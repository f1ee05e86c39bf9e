//! The toybox programs of the device shell, on the in-memory files (and the `/proc` and `/sys`
//! files the kernel shows): `echo`, `cat`, `ls`, `rm`, `mkdir`, `touch`, `sleep`, `grep`, `cut`,
//! `which`, and the network view of `ifconfig` and `ip addr`.

use std::time::Duration;

use super::procfs::ProcFs;
use crate::sim::shell::{lock, FsError, FsHandle, Output, Session};

pub fn echo(args: &[String]) -> Output {
    let (newline, words) = match args.first().map(String::as_str) {
        Some("-n") => (false, &args[1..]),
        _ => (true, args),
    };
    let mut out = words.join(" ");
    if newline {
        out.push('\n');
    }
    Output::ok(out)
}

pub fn cat(args: &[String], session: &mut dyn Session, fs: &FsHandle, kernel: &ProcFs) -> Output {
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
        let read = match kernel.read(&crate::sim::shell::FileSystem::normalize(file)) {
            Some(read) => read,
            None => lock(fs).read(file).map(<[u8]>::to_vec),
        };
        match read {
            Ok(bytes) => out.stdout.extend(bytes),
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

pub fn rm(args: &[String], fs: &FsHandle) -> Output {
    let (flags, paths) = flags_and_paths(args);
    let force = flags.contains('f');
    let recursive = flags.contains('r') || flags.contains('R');
    let mut out = Output::default();
    if paths.is_empty() && !force {
        return Output::error("rm: Needs 1 argument (see \"rm --help\")\n", 1);
    }
    for path in paths {
        match lock(fs).remove(path, recursive) {
            Ok(()) => {}
            Err(FsError::NotFound) if force => {}
            Err(err) => {
                out.stderr
                    .extend(format!("rm: {path}: {err}\n").into_bytes());
                out.status = 1;
            }
        }
    }
    out
}

/// `mv SOURCE DEST`: a file moves (into DEST when it is a directory).
pub fn mv(args: &[String], fs: &FsHandle) -> Output {
    let (_, paths) = flags_and_paths(args);
    let [source, dest] = paths[..] else {
        return Output::error("mv: Needs 2 arguments (see \"mv --help\")\n", 1);
    };
    let mut storage = lock(fs);
    let target = match storage.stat(dest) {
        Some(stat) if stat.is_dir => {
            let name = source.rsplit('/').next().unwrap_or(source);
            format!("{}/{name}", dest.trim_end_matches('/'))
        }
        _ => dest.to_string(),
    };
    let moved = storage
        .read(source)
        .map(<[u8]>::to_vec)
        .and_then(|data| storage.write(&target, &data, false))
        .and_then(|()| storage.remove(source, false));
    match moved {
        Ok(()) => Output::default(),
        Err(err) => Output::error(format!("mv: {source}: {err}\n"), 1),
    }
}

pub fn ls(args: &[String], fs: &FsHandle, kernel: &ProcFs) -> Output {
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
        if let Some(names) = kernel.list(&crate::sim::shell::FileSystem::normalize(&path)) {
            match names {
                Ok(names) => out
                    .stdout
                    .extend(names.iter().flat_map(|n| format!("{n}\n").into_bytes())),
                Err(err) => {
                    out.stderr
                        .extend(format!("ls: {path}: {err}\n").into_bytes());
                    out.status = 1;
                }
            }
            continue;
        }
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

pub fn mkdir(args: &[String], fs: &FsHandle) -> Output {
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

pub fn touch(args: &[String], fs: &FsHandle) -> Output {
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

pub fn sleep(args: &[String]) -> Output {
    match args
        .first()
        .and_then(|a| a.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
    {
        Some(secs) => {
            std::thread::sleep(Duration::from_secs_f64(secs.min(3600.0)));
            Output::default()
        }
        None => Output::error("sleep: Needs 1 argument (see \"sleep --help\")\n", 1),
    }
}

/// `grep [-iEFvcqwo] PATTERN [FILE...]`: basic regular expressions unless `-E` or `-F`.
pub fn grep(args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
    let mut flags = String::new();
    let mut rest = Vec::new();
    let mut patterns = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-e" => patterns.extend(iter.next().cloned()),
            "--" => rest.extend(iter.by_ref().cloned()),
            flag if flag.starts_with('-') && flag.len() > 1 => flags.push_str(&flag[1..]),
            _ => rest.push(arg.clone()),
        }
    }
    if patterns.is_empty() {
        if rest.is_empty() {
            return Output::error("grep: no pattern (see \"grep --help\")\n", 2);
        }
        patterns.push(rest.remove(0));
    }
    let translated: Vec<String> = patterns
        .iter()
        .map(|p| {
            if flags.contains('F') {
                regex::escape(p)
            } else if flags.contains('E') {
                p.clone()
            } else {
                basic_to_extended(p)
            }
        })
        .map(|p| {
            if flags.contains('w') {
                format!(r"\b(?:{p})\b")
            } else {
                p
            }
        })
        .collect();
    let pattern = format!(
        "{}(?:{})",
        if flags.contains('i') { "(?i)" } else { "" },
        translated.join("|")
    );
    let Ok(re) = regex::Regex::new(&pattern) else {
        return Output::error(format!("grep: bad regex '{}'\n", patterns.join("|")), 2);
    };
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut out = Output::default();
    if rest.is_empty() {
        inputs.push((String::new(), session.stdin()));
    }
    for file in &rest {
        match lock(fs).read(file) {
            Ok(bytes) => inputs.push((file.clone(), bytes.to_vec())),
            Err(err) => {
                out.stderr
                    .extend(format!("grep: {file}: {err}\n").into_bytes());
                out.status = 2;
            }
        }
    }
    let invert = flags.contains('v');
    let named = rest.len() > 1;
    let mut matched = 0;
    for (name, bytes) in inputs {
        let content = String::from_utf8_lossy(&bytes);
        let mut count = 0;
        for line in content.lines() {
            if re.is_match(line) == invert {
                continue;
            }
            count += 1;
            if flags.contains('c') || flags.contains('q') {
                continue;
            }
            let prefix = if named {
                format!("{name}:")
            } else {
                String::new()
            };
            if flags.contains('o') {
                for found in re.find_iter(line) {
                    out.stdout
                        .extend(format!("{prefix}{}\n", found.as_str()).into_bytes());
                }
            } else {
                out.stdout.extend(format!("{prefix}{line}\n").into_bytes());
            }
        }
        if flags.contains('c') && !flags.contains('q') {
            let prefix = if named {
                format!("{name}:")
            } else {
                String::new()
            };
            out.stdout.extend(format!("{prefix}{count}\n").into_bytes());
        }
        matched += count;
    }
    if out.status == 0 {
        out.status = if matched > 0 { 0 } else { 1 };
    }
    out
}

/// A basic regular expression (`\(`, `\|`, `\+`... special; `(`, `|`, `+` literal) in the
/// regex crate's syntax.
fn basic_to_extended(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(special @ ('(' | ')' | '|' | '+' | '?' | '{' | '}')) => out.push(special),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '|' | '+' | '?' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            other => out.push(other),
        }
    }
    out
}

/// `cut -d DELIM -f LIST` or `cut -c LIST` on stdin or files.
pub fn cut(args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
    let mut delimiter = '\t';
    let mut fields = None;
    let mut chars = None;
    let mut files = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (flag, inline) = if arg.starts_with('-') && arg.len() > 2 {
            (&arg[..2], Some(arg[2..].to_string()))
        } else {
            (arg.as_str(), None)
        };
        let mut value = || inline.clone().or_else(|| iter.next().cloned());
        match flag {
            "-d" => delimiter = value().and_then(|d| d.chars().next()).unwrap_or('\t'),
            "-f" => fields = value(),
            "-c" => chars = value(),
            _ => files.push(arg.clone()),
        }
    }
    let Some((list, by_char)) = fields.map(|f| (f, false)).or(chars.map(|c| (c, true))) else {
        return Output::error("cut: Needs -fcb (see \"cut --help\")\n", 1);
    };
    let Some(ranges) = parse_ranges(&list) else {
        return Output::error(format!("cut: bad list '{list}'\n"), 1);
    };
    let input = if files.is_empty() {
        session.stdin()
    } else {
        let mut all = Vec::new();
        for file in &files {
            match lock(fs).read(file) {
                Ok(bytes) => all.extend_from_slice(bytes),
                Err(err) => return Output::error(format!("cut: {file}: {err}\n"), 1),
            }
        }
        all
    };
    let wanted = |n: usize| ranges.iter().any(|(a, b)| n >= *a && n <= *b);
    let mut out = String::new();
    for line in String::from_utf8_lossy(&input).lines() {
        if by_char {
            out.extend(
                line.chars()
                    .enumerate()
                    .filter(|(i, _)| wanted(i + 1))
                    .map(|(_, c)| c),
            );
        } else if !line.contains(delimiter) {
            out.push_str(line);
        } else {
            let picked: Vec<&str> = line
                .split(delimiter)
                .enumerate()
                .filter(|(i, _)| wanted(i + 1))
                .map(|(_, f)| f)
                .collect();
            out.push_str(&picked.join(&delimiter.to_string()));
        }
        out.push('\n');
    }
    Output::ok(out)
}

/// `1,3`, `2-4`, `3-`: 1-based inclusive ranges.
fn parse_ranges(list: &str) -> Option<Vec<(usize, usize)>> {
    list.split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => {
                let a = if a.is_empty() { 1 } else { a.parse().ok()? };
                let b = if b.is_empty() {
                    usize::MAX
                } else {
                    b.parse().ok()?
                };
                Some((a, b))
            }
            None => part.parse().ok().map(|n| (n, n)),
        })
        .collect()
}

/// The directory every program of the simulated shell lives in.
pub const BIN: &str = "/system/bin";

/// `which NAME...`: the path of each known program; status 1 when one is missing.
pub fn which(args: &[String], known: &dyn Fn(&str) -> bool) -> Output {
    let mut out = Output::default();
    for name in args.iter().filter(|a| !a.starts_with('-')) {
        let base = name.rsplit('/').next().unwrap_or(name);
        if known(base) {
            out.stdout.extend(format!("{BIN}/{base}\n").into_bytes());
        } else {
            out.status = 1;
        }
    }
    out
}

/// The Wi-Fi interface of the emulator: its address while Wi-Fi is on.
const WLAN_MAC: &str = "02:15:b2:00:00:00";
const WLAN_ADDRESS: &str = "10.0.2.16";

/// toybox `ifconfig [IFACE]`: `lo` and `wlan0` (down, without an address, while Wi-Fi is off).
pub fn ifconfig(args: &[String], wifi_on: bool) -> Output {
    let lo = "lo        Link encap:Local Loopback  \n          inet addr:127.0.0.1  Mask:255.0.0.0 \n          inet6 addr: ::1/128 Scope: Host\n          UP LOOPBACK RUNNING  MTU:65536  Metric:1\n          RX packets:0 errors:0 dropped:0 overruns:0 frame:0 \n          TX packets:0 errors:0 dropped:0 overruns:0 carrier:0 \n          collisions:0 txqueuelen:1000 \n          RX bytes:0 TX bytes:0 \n\n".to_string();
    let wlan = if wifi_on {
        format!("wlan0     Link encap:Ethernet  HWaddr {WLAN_MAC}  Driver mac80211_hwsim\n          inet addr:{WLAN_ADDRESS}  Bcast:10.0.2.255  Mask:255.255.255.0 \n          inet6 addr: fe80::15:b2ff:fe00:0/64 Scope: Link\n          UP BROADCAST RUNNING MULTICAST  MTU:1500  Metric:1\n          RX packets:1024 errors:0 dropped:0 overruns:0 frame:0 \n          TX packets:512 errors:0 dropped:0 overruns:0 carrier:0 \n          collisions:0 txqueuelen:1000 \n          RX bytes:524288 TX bytes:65536 \n\n")
    } else {
        format!("wlan0     Link encap:Ethernet  HWaddr {WLAN_MAC}  Driver mac80211_hwsim\n          BROADCAST MULTICAST  MTU:1500  Metric:1\n          RX packets:0 errors:0 dropped:0 overruns:0 frame:0 \n          TX packets:0 errors:0 dropped:0 overruns:0 carrier:0 \n          collisions:0 txqueuelen:1000 \n          RX bytes:0 TX bytes:0 \n\n")
    };
    match args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
    {
        None => Output::ok(if wifi_on { format!("{lo}{wlan}") } else { lo }),
        Some("lo") => Output::ok(lo),
        Some("wlan0") => Output::ok(wlan),
        Some(other) => Output::error(format!("ifconfig: {other}: No such device\n"), 1),
    }
}

/// `ip addr [show] [dev IFACE]` (also `ip a`, `ip address`).
pub fn ip(args: &[String], wifi_on: bool) -> Output {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let (object, rest) = match words.split_first() {
        Some((object, rest)) => (*object, rest),
        None => return Output::error("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\n", 255),
    };
    if !matches!(object, "a" | "addr" | "address") {
        return Output::error(
            format!("Object \"{object}\" is unknown, try \"ip help\".\n"),
            255,
        );
    }
    let rest: Vec<&str> = rest
        .iter()
        .copied()
        .filter(|w| !matches!(*w, "show" | "list" | "dev"))
        .collect();
    let lo = "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n    inet 127.0.0.1/8 scope host lo\n       valid_lft forever preferred_lft forever\n    inet6 ::1/128 scope host \n       valid_lft forever preferred_lft forever\n".to_string();
    let wlan = if wifi_on {
        format!("18: wlan0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP group default qlen 1000\n    link/ether {WLAN_MAC} brd ff:ff:ff:ff:ff:ff\n    inet {WLAN_ADDRESS}/24 brd 10.0.2.255 scope global wlan0\n       valid_lft forever preferred_lft forever\n    inet6 fe80::15:b2ff:fe00:0/64 scope link \n       valid_lft forever preferred_lft forever\n")
    } else {
        format!("18: wlan0: <BROADCAST,MULTICAST> mtu 1500 qdisc mq state DOWN group default qlen 1000\n    link/ether {WLAN_MAC} brd ff:ff:ff:ff:ff:ff\n")
    };
    match rest.first().copied() {
        None => Output::ok(format!("{lo}{wlan}")),
        Some("lo") => Output::ok(lo),
        Some("wlan0") => Output::ok(wlan),
        Some(other) => Output::error(format!("Device \"{other}\" does not exist.\n"), 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// stdin is fixed bytes.
    struct Fed(Vec<u8>);
    impl Session for Fed {
        fn stdin(&mut self) -> Vec<u8> {
            std::mem::take(&mut self.0)
        }
        fn hung_up(&mut self) -> bool {
            false
        }
    }

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    fn stdout(output: &Output) -> String {
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    #[test]
    fn grep_matches_basic_and_extended_patterns() {
        let fs = FsHandle::default();
        let input = b"ACTIVITY a/.B 1 pid=3\nTASK x\nactivity lower\n".to_vec();
        let out = grep(&args("ACTIVITY"), &mut Fed(input.clone()), &fs);
        assert_eq!(stdout(&out), "ACTIVITY a/.B 1 pid=3\n");
        let out = grep(&args("-i -c activity"), &mut Fed(input.clone()), &fs);
        assert_eq!(stdout(&out), "2\n");
        let out = grep(&args("-E TASK|lower"), &mut Fed(input.clone()), &fs);
        assert_eq!(stdout(&out).lines().count(), 2);
        let out = grep(&args("TASK|lower"), &mut Fed(input.clone()), &fs);
        assert_eq!(out.status, 1, "| is literal in a basic expression");
        let out = grep(&args("-v -F ."), &mut Fed(input), &fs);
        assert_eq!(stdout(&out), "TASK x\nactivity lower\n");
    }

    #[test]
    fn cut_picks_fields_and_characters() {
        let fs = FsHandle::default();
        let fields: Vec<String> = ["-d", " ", "-f", "3"].map(String::from).to_vec();
        let out = cut(&fields, &mut Fed(b"Physical density: 420\n".to_vec()), &fs);
        assert_eq!(stdout(&out), "420\n");
        let out = cut(&args("-c 1-3"), &mut Fed(b"abcdef\n".to_vec()), &fs);
        assert_eq!(stdout(&out), "abc\n");
    }

    #[test]
    fn network_follows_wifi() {
        assert!(stdout(&ifconfig(&args("wlan0"), true)).contains("inet addr:10.0.2.16"));
        assert!(!stdout(&ifconfig(&args("wlan0"), false)).contains("inet addr"));
        assert!(stdout(&ip(&args("addr show dev wlan0"), true)).contains("inet 10.0.2.16/24"));
        assert_eq!(ifconfig(&args("eth0"), true).status, 1);
    }

    #[test]
    fn which_answers_with_the_bin_path() {
        let out = which(&args("screencap nope"), &|name| name == "screencap");
        assert_eq!(
            (stdout(&out).as_str(), out.status),
            ("/system/bin/screencap\n", 1)
        );
    }
}
