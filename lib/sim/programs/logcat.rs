//! The log buffers and `logcat`: what the system logged (process starts and deaths, activity
//! starts) and the crash buffer the world writes, printed with logcat's buffers, filters
//! (`TAG:PRIORITY`, `-s`, `-e`, `--pid`, `-t`, `-m`) and formats (`-v threadtime|time|brief|...`).

use std::fmt::Write as _;

use super::{guard, Phone};
use crate::sim::shell::Output;

/// At most this many entries are kept per buffer (a ring, as logd keeps one).
const CAPACITY: usize = 5000;
const PRIORITIES: &str = "VDIWEFS";

/// A log buffer (`-b`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Buffer {
    Main,
    System,
    Crash,
    Events,
    Radio,
}

impl Buffer {
    fn name(self) -> &'static str {
        match self {
            Buffer::Main => "main",
            Buffer::System => "system",
            Buffer::Crash => "crash",
            Buffer::Events => "events",
            Buffer::Radio => "radio",
        }
    }
}

/// One log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `MM-DD HH:MM:SS.mmm`, the device clock (UTC).
    pub stamp: String,
    pub pid: u32,
    pub tid: u32,
    pub priority: char,
    pub tag: String,
    pub message: String,
    pub buffer: Buffer,
}

/// The main, system and events buffers (the crash buffer is the world's).
#[derive(Debug, Default)]
pub struct LogBuffers {
    entries: Vec<Entry>,
}

impl LogBuffers {
    /// Appends a line stamped now.
    pub fn log(&mut self, buffer: Buffer, pid: u32, priority: char, tag: &str, message: &str) {
        let stamp = chrono::Utc::now().format("%m-%d %H:%M:%S%.3f").to_string();
        self.entries.push(Entry {
            stamp,
            pid,
            tid: pid,
            priority,
            tag: tag.to_string(),
            message: message.to_string(),
            buffer,
        });
        let kept = self.entries.iter().filter(|e| e.buffer == buffer).count();
        if kept > CAPACITY {
            if let Some(oldest) = self.entries.iter().position(|e| e.buffer == buffer) {
                self.entries.remove(oldest);
            }
        }
    }

    pub fn clear(&mut self, buffers: &[Buffer]) {
        self.entries.retain(|e| !buffers.contains(&e.buffer));
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

/// The crash buffer as the world keeps it (threadtime lines) back into entries.
pub fn parse_threadtime(text: &str, buffer: Buffer) -> Vec<Entry> {
    text.lines()
        .filter(|line| !line.starts_with("---------"))
        .filter_map(|line| {
            let mut rest = line;
            let mut word = || {
                rest = rest.trim_start();
                let end = rest.find(char::is_whitespace)?;
                let (word, tail) = rest.split_at(end);
                rest = tail;
                Some(word)
            };
            let (date, time) = (word()?, word()?);
            let (pid, tid, priority) = (word()?.parse().ok()?, word()?.parse().ok()?, word()?);
            let (tag, message) = rest.trim_start().split_once(": ")?;
            Some(Entry {
                stamp: format!("{date} {time}"),
                pid,
                tid,
                priority: priority.chars().next()?,
                tag: tag.trim_end().to_string(),
                message: message.to_string(),
                buffer,
            })
        })
        .collect()
}

/// How `logcat` was asked to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub buffers: Vec<Buffer>,
    pub clear: bool,
    format: String,
    /// `(tag, minimum priority)`; `*` is the default.
    filters: Vec<(String, char)>,
    tail: Option<usize>,
    max: Option<usize>,
    regex: Option<regex::Regex>,
    pid: Option<u32>,
}

/// Parses logcat's arguments; `Err` is the message logcat prints before exiting 1.
pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        buffers: Vec::new(),
        clear: false,
        format: "threadtime".to_string(),
        filters: Vec::new(),
        tail: None,
        max: None,
        regex: None,
        pid: None,
    };
    let mut silent = false;
    let mut iter = args.iter().map(String::as_str);
    while let Some(arg) = iter.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
            _ => (arg, None),
        };
        let mut value = |name: &str| {
            inline
                .map(str::to_string)
                .or_else(|| iter.next().map(str::to_string))
                .ok_or_else(|| format!("logcat: option requires an argument -- '{name}'\n"))
        };
        match flag {
            "-d" | "--dump" => {}
            "-c" | "--clear" => options.clear = true,
            "-s" => silent = true,
            "-b" | "--buffer" => {
                for name in value("b")?.split(',') {
                    options.buffers.extend(buffers_named(name)?);
                }
            }
            "-v" | "--format" => {
                // Modifiers (`year`, `uid`, `color`, ...) change details the simulated buffers
                // print the same way; a format name picks the format.
                let format = value("v")?;
                if FORMATS.contains(&format.as_str()) {
                    options.format = format;
                }
            }
            "-t" | "-T" => options.tail = Some(count(&value("t")?)?),
            "-m" | "--max-count" => options.max = Some(count(&value("m")?)?),
            "-e" | "--regex" => {
                let pattern = value("e")?;
                options.regex = Some(
                    regex::Regex::new(&pattern)
                        .map_err(|err| format!("logcat: invalid regex {pattern}: {err}\n"))?,
                );
            }
            "--pid" => {
                let pid = value("pid")?;
                options.pid = Some(
                    pid.parse()
                        .map_err(|_| format!("logcat: invalid pid {pid}\n"))?,
                );
            }
            flag if flag.starts_with("-v") && flag.len() > 2 => {
                if FORMATS.contains(&&flag[2..]) {
                    options.format = flag[2..].to_string();
                }
            }
            flag if flag.starts_with("--") => {
                return Err(format!("logcat: unrecognized option '{flag}'\n"));
            }
            flag if flag.starts_with('-') => {
                return Err(format!("logcat: invalid option -- '{}'\n", &flag[1..]));
            }
            spec => {
                let (tag, priority) = spec.rsplit_once(':').unwrap_or((spec, "V"));
                let priority = priority
                    .chars()
                    .next()
                    .map(|c| c.to_ascii_uppercase())
                    .filter(|c| PRIORITIES.contains(*c) || *c == '*')
                    .ok_or_else(|| format!("logcat: Invalid filter expression '{spec}'\n"))?;
                let priority = if priority == '*' { 'V' } else { priority };
                options.filters.push((tag.to_string(), priority));
            }
        }
    }
    if silent {
        options.filters.insert(0, ("*".to_string(), 'S'));
    }
    if options.buffers.is_empty() {
        options.buffers = vec![Buffer::Main, Buffer::System, Buffer::Crash];
    }
    options.buffers.sort();
    options.buffers.dedup();
    Ok(options)
}

const FORMATS: &[&str] = &[
    "brief",
    "long",
    "process",
    "raw",
    "tag",
    "thread",
    "threadtime",
    "time",
];

fn buffers_named(name: &str) -> Result<Vec<Buffer>, String> {
    Ok(match name {
        "main" => vec![Buffer::Main],
        "system" => vec![Buffer::System],
        "crash" => vec![Buffer::Crash],
        "events" => vec![Buffer::Events],
        "radio" => vec![Buffer::Radio],
        "default" => vec![Buffer::Main, Buffer::System, Buffer::Crash],
        "all" => vec![
            Buffer::Main,
            Buffer::System,
            Buffer::Crash,
            Buffer::Events,
            Buffer::Radio,
        ],
        other => return Err(format!("logcat: unknown buffer {other}\n")),
    })
}

fn count(text: &str) -> Result<usize, String> {
    text.parse()
        .map_err(|_| format!("logcat: invalid count {text}\n"))
}

impl Options {
    fn passes(&self, entry: &Entry) -> bool {
        let level = |tag: &str| {
            self.filters
                .iter()
                .rev()
                .find(|(t, _)| t == tag)
                .map(|(_, p)| *p)
        };
        let minimum = level(&entry.tag).or_else(|| level("*")).unwrap_or('V');
        let rank = |p: char| PRIORITIES.find(p).unwrap_or(0);
        rank(entry.priority) >= rank(minimum)
            && minimum != 'S'
            && self.pid.is_none_or(|pid| pid == entry.pid)
            && self
                .regex
                .as_ref()
                .is_none_or(|re| re.is_match(&entry.message))
            && self.buffers.contains(&entry.buffer)
    }

    fn line(&self, entry: &Entry) -> String {
        let Entry {
            stamp,
            pid,
            tid,
            priority,
            tag,
            message,
            ..
        } = entry;
        match self.format.as_str() {
            "brief" => format!("{priority}/{tag:<8}({pid:>5}): {message}\n"),
            "tag" => format!("{priority}/{tag:<8}: {message}\n"),
            "process" => format!("{priority}({pid:>5}) {message}  ({tag})\n"),
            "raw" => format!("{message}\n"),
            "thread" => format!("{priority}({pid:>5}:{tid:>5}) {message}\n"),
            "time" => format!("{stamp} {priority}/{tag:<8}({pid:>5}): {message}\n"),
            "long" => format!("[ {stamp} {pid:>5}:{tid:>5} {priority}/{tag} ]\n{message}\n\n"),
            _ => format!("{stamp} {pid:>5} {tid:>5} {priority} {tag:<8}: {message}\n"),
        }
    }

    /// The selected entries (already in time order) as logcat prints them, with the
    /// `--------- beginning of BUFFER` separators.
    pub fn render(&self, entries: &[Entry]) -> String {
        let mut selected: Vec<&Entry> = entries.iter().filter(|e| self.passes(e)).collect();
        if let Some(tail) = self.tail {
            selected.drain(..selected.len().saturating_sub(tail));
        }
        if let Some(max) = self.max {
            selected.truncate(max);
        }
        let mut out = String::new();
        let mut begun: Vec<Buffer> = Vec::new();
        let mut current = None;
        for entry in selected {
            if current != Some(entry.buffer) {
                let word = if begun.contains(&entry.buffer) {
                    "switch to"
                } else {
                    "beginning of"
                };
                let _ = writeln!(out, "--------- {word} {}", entry.buffer.name());
                begun.push(entry.buffer);
                current = Some(entry.buffer);
            }
            out.push_str(&self.line(entry));
        }
        out
    }
}

impl Phone {
    /// `logcat`: the system log this device wrote and the world's crash buffer, through
    /// logcat's filters. Without `-d` a device keeps streaming; the simulator prints what is
    /// there and ends.
    pub(super) fn logcat(&self, args: &[String]) -> Output {
        let options = match parse_args(args) {
            Ok(options) => options,
            Err(message) => return Output::error(message, 1),
        };
        if options.clear {
            guard(&self.logs).clear(&options.buffers);
            if options.buffers.contains(&Buffer::Crash) {
                self.world().clear_crash_log();
            }
            return Output::default();
        }
        let mut entries = guard(&self.logs).entries().to_vec();
        entries.extend(parse_threadtime(&self.world().crash_log(), Buffer::Crash));
        entries.sort_by(|a, b| a.stamp.cmp(&b.stamp));
        Output::ok(options.render(&entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn sample() -> Vec<Entry> {
        let mut buffers = LogBuffers::default();
        buffers.log(
            Buffer::System,
            560,
            'I',
            "ActivityManager",
            "Start proc 4321:com.a/u0a150",
        );
        buffers.log(Buffer::Main, 4321, 'D', "Shop", "debug line");
        let mut entries = buffers.entries().to_vec();
        entries.extend(parse_threadtime(
            "--------- beginning of crash\n01-01 00:00:00.000  4321  4321 E AndroidRuntime: FATAL EXCEPTION: main\n",
            Buffer::Crash,
        ));
        entries
    }

    #[test]
    fn threadtime_lines_parse_back() {
        let crash = parse_threadtime(
            "01-02 03:04:05.678  4321  4322 E AndroidRuntime: \tat a.B.c(B.java:1)\n",
            Buffer::Crash,
        );
        assert_eq!(crash.len(), 1);
        assert_eq!(
            (crash[0].pid, crash[0].tid, crash[0].priority),
            (4321, 4322, 'E')
        );
        assert_eq!(crash[0].message, "\tat a.B.c(B.java:1)");
    }

    #[test]
    fn filters_pick_by_tag_priority_buffer_and_pid() {
        let entries = sample();
        let all = parse_args(&args("-d")).unwrap().render(&entries);
        assert!(all.starts_with("--------- beginning of system\n"));
        assert_eq!(all.lines().filter(|l| !l.starts_with("---")).count(), 3);
        let errors = parse_args(&args("-d *:E")).unwrap().render(&entries);
        assert!(errors.contains("FATAL EXCEPTION") && !errors.contains("Start proc"));
        let tagged = parse_args(&args("-d -s ActivityManager"))
            .unwrap()
            .render(&entries);
        assert!(tagged.contains("Start proc") && !tagged.contains("debug line"));
        let crash = parse_args(&args("-b crash -d")).unwrap().render(&entries);
        assert!(crash.starts_with("--------- beginning of crash\n") && !crash.contains("Start"));
        let pid = parse_args(&args("-d --pid=560")).unwrap().render(&entries);
        assert!(pid.contains("Start proc") && !pid.contains("FATAL"));
        let grep = parse_args(&args("-d -e ^Start")).unwrap().render(&entries);
        assert_eq!(grep.lines().filter(|l| !l.starts_with("---")).count(), 1);
    }

    #[test]
    fn formats_follow_logcat() {
        let entries = sample();
        let time = parse_args(&args("-d -v time -s ActivityManager"))
            .unwrap()
            .render(&entries);
        assert!(time
            .lines()
            .nth(1)
            .unwrap()
            .contains(" I/ActivityManager(  560): Start proc"));
        let brief = parse_args(&args("-d -v brief -s ActivityManager"))
            .unwrap()
            .render(&entries);
        assert_eq!(
            brief.lines().nth(1),
            Some("I/ActivityManager(  560): Start proc 4321:com.a/u0a150")
        );
        assert!(parse_args(&args("-d -x")).is_err());
        assert!(parse_args(&args("-b nowhere")).is_err());
    }
}
