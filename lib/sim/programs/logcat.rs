//! The log buffers and `logcat`: what the system logged (process starts and deaths, activity
//! starts), the apps' crashes, printed as Android 13's logcat prints them: its buffers, filters
//! (`TAG:PRIORITY`, `-s`, `-e`, `--pid`, `--uid`), tails (`-t`/`-T` N or TIME), `-m`, the
//! print formats with their modifiers (`-v threadtime,year`, `epoch`, `usec`, `uid`, ...), and,
//! without `-d`, streaming what is logged next until the client goes away (AOSP
//! `logcat/logcat.cpp` and `liblog/logprint.cpp`).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Datelike, NaiveDateTime, TimeZone, Utc};

use super::procfs::package_uid;
use super::signals::effect;
use super::{guard, Phone};
use crate::sim::shell::{Output, Session};

/// At most this many entries are kept per buffer (a ring, as logd keeps one).
const CAPACITY: usize = 5000;

/// How often a streaming logcat looks for a hangup or a signal between log lines.
const STREAM_POLL: Duration = Duration::from_millis(100);

/// The start of `logcat --help`.
const USAGE: &str = "\n  Usage: logcat [OPTION]... [FILTERSPEC]...\n\n  General options:\n\n  -b BUFFER, --buffer=BUFFER\n      Request alternate ring buffer(s). Options are:\n          main system radio events crash default all\n  -c, --clear\n      Clear (flush) the entire log and exit.\n  -d            Dump the log and then exit (don't block).\n  --pid=PID     Only print logs from the given pid.\n\n  Formatting:\n\n  -v, --format=FORMAT         Sets log print format. See FORMAT below.\n  -D, --dividers              Print dividers between each log buffer.\n\n  Filtering:\n\n  -s                   Set default filter to silent (like filterspec '*:S').\n  -e, --regex=EXPR     Only print lines matching ECMAScript regex.\n  -m, --max-count=N    Exit after printing <count> lines.\n  -t N                 Print most recent <count> lines (implies -d).\n  -T N                 Print most recent <count> lines (does not imply -d).\n  -t TIME              Print lines since specified time (implies -d).\n  -T TIME              Print lines since specified time (not imply -d).\n                       Time format is 'MM-DD hh:mm:ss.mmm...',\n                       'YYYY-MM-DD hh:mm:ss.mmm...', or 'sssss.mmm...'.\n  --uid=UIDS\n      Only display log messages from UIDs in the comma-separated list UIDS.\n";

/// A log buffer (`-b`), in log id order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Buffer {
    Main,
    Radio,
    Events,
    System,
    Crash,
}

impl Buffer {
    fn name(self) -> &'static str {
        match self {
            Buffer::Main => "main",
            Buffer::Radio => "radio",
            Buffer::Events => "events",
            Buffer::System => "system",
            Buffer::Crash => "crash",
        }
    }
}

/// Who wrote a line: its process, thread and user id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writer {
    pub pid: u32,
    pub tid: u32,
    pub uid: u32,
}

/// One log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Counts up across all buffers, so a streaming reader knows what is new.
    pub seq: u64,
    /// The device clock (UTC, the simulated phone's time zone).
    pub time: DateTime<Utc>,
    pub writer: Writer,
    /// `V`, `D`, `I`, `W`, `E`, `F`.
    pub priority: char,
    pub tag: String,
    pub message: String,
    pub buffer: Buffer,
}

/// logd's buffers.
#[derive(Debug)]
pub struct LogBuffers {
    entries: Vec<Entry>,
    next_seq: u64,
    /// When the device booted, for `-v monotonic`.
    booted: DateTime<Utc>,
    /// The last of the world's crashes copied into the crash buffer.
    pub crashes_copied: u64,
}

impl LogBuffers {
    pub fn new(booted: DateTime<Utc>) -> LogBuffers {
        LogBuffers {
            entries: Vec::new(),
            next_seq: 1,
            booted,
            crashes_copied: 0,
        }
    }

    /// Appends a line stamped now.
    pub fn log(
        &mut self,
        buffer: Buffer,
        writer: Writer,
        priority: char,
        tag: &str,
        message: &str,
    ) {
        self.log_at(Utc::now(), buffer, writer, priority, tag, message);
    }

    /// Appends a line stamped `time`.
    pub fn log_at(
        &mut self,
        time: DateTime<Utc>,
        buffer: Buffer,
        writer: Writer,
        priority: char,
        tag: &str,
        message: &str,
    ) {
        self.entries.push(Entry {
            seq: self.next_seq,
            time,
            writer,
            priority,
            tag: tag.to_string(),
            message: message.to_string(),
            buffer,
        });
        self.next_seq += 1;
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

    /// Every entry, oldest first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The `seq` of the last entry (0 when nothing was ever logged).
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }
}

/// A print format: one verb and its adverbs (`logprint.cpp`'s `AndroidLogFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Format {
    verb: Verb,
    color: bool,
    usec: bool,
    nsec: bool,
    printable: bool,
    year: bool,
    zone: bool,
    epoch: bool,
    monotonic: bool,
    uid: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Brief,
    Process,
    Tag,
    Thread,
    Raw,
    Time,
    ThreadTime,
    Long,
}

impl Format {
    fn new() -> Format {
        Format {
            verb: Verb::ThreadTime,
            color: false,
            usec: false,
            nsec: false,
            printable: false,
            year: false,
            zone: false,
            epoch: false,
            monotonic: false,
            uid: false,
        }
    }

    /// Applies one word of `-v`: `Ok(true)` when it names a verb, `Ok(false)` for an adverb,
    /// `Err` for a word logcat does not know.
    fn apply(&mut self, word: &str) -> Result<bool, ()> {
        let verb = match word {
            "brief" => Verb::Brief,
            "process" => Verb::Process,
            "tag" => Verb::Tag,
            "thread" => Verb::Thread,
            "raw" => Verb::Raw,
            "time" => Verb::Time,
            "threadtime" => Verb::ThreadTime,
            "long" => Verb::Long,
            adverb => {
                match adverb {
                    "color" | "colour" => self.color = true,
                    "usec" => self.usec = true,
                    "nsec" => self.nsec = true,
                    "printable" => self.printable = true,
                    "year" => self.year = true,
                    "zone" => self.zone = !self.zone,
                    "epoch" => self.epoch = true,
                    "monotonic" => self.monotonic = true,
                    "uid" => self.uid = true,
                    // Event descriptions: the simulated device logs no binary events.
                    "descriptive" => {}
                    // A time zone name selects that zone (the device's clock is UTC) and, as
                    // logcat does, toggles the zone suffix.
                    "UTC" | "GMT" | "Etc/UTC" | "Universal" => self.zone = !self.zone,
                    _ => return Err(()),
                }
                return Ok(false);
            }
        };
        self.verb = verb;
        Ok(true)
    }

    /// The time column: `MM-DD hh:mm:ss.mmm` (with the year, or seconds since the epoch or
    /// since boot), then the zone.
    fn time(&self, entry: &Entry, booted: DateTime<Utc>) -> String {
        let (seconds, nanos) = if self.monotonic {
            let since = (entry.time - booted).to_std().unwrap_or_default();
            (since.as_secs() as i64, since.subsec_nanos())
        } else {
            (entry.time.timestamp(), entry.time.timestamp_subsec_nanos())
        };
        let mut text = if self.monotonic {
            format!("{seconds:6}")
        } else if self.epoch {
            format!("{seconds:19}")
        } else if self.year {
            entry.time.format("%Y-%m-%d %H:%M:%S").to_string()
        } else {
            entry.time.format("%m-%d %H:%M:%S").to_string()
        };
        if self.nsec {
            let _ = write!(text, ".{nanos:09}");
        } else if self.usec {
            let _ = write!(text, ".{:06}", nanos / 1000);
        } else {
            let _ = write!(text, ".{:03}", nanos / 1_000_000);
        }
        if self.zone && !(self.epoch || self.monotonic) {
            text.push_str(" +0000");
        }
        text
    }

    /// One entry as logcat prints it: each line of the message with the verb's prefix.
    fn line(&self, entry: &Entry, booted: DateTime<Utc>) -> String {
        let Writer { pid, tid, uid } = entry.writer;
        let (priority, tag) = (entry.priority, entry.tag.as_str());
        let time = self.time(entry, booted);
        let user = if !self.uid {
            String::new()
        } else {
            // Names of at most five letters, else the number.
            match uid {
                0 => " root:".to_string(),
                2000 => "shell:".to_string(),
                uid => format!("{uid:5}:"),
            }
        };
        let color = |text: String| {
            if !self.color {
                return text;
            }
            let code = match priority {
                'D' => 34,
                'I' => 32,
                'W' => 33,
                'E' | 'F' => 31,
                _ => 39,
            };
            format!("\x1b[{code}m{text}")
        };
        let reset = if self.color { "\x1b[0m" } else { "" };
        let (prefix, suffix) = match self.verb {
            Verb::Tag => (format!("{priority}/{tag:<8}: "), "\n".to_string()),
            Verb::Process => (
                format!("{priority}({user}{pid:5}) "),
                format!("  ({tag})\n"),
            ),
            Verb::Thread => (format!("{priority}({user}{pid:5}:{tid:5}) "), "\n".into()),
            Verb::Raw => (String::new(), "\n".into()),
            Verb::Time => (
                format!("{time} {priority}/{tag:<8}({user}{pid:5}): "),
                "\n".into(),
            ),
            Verb::ThreadTime => (
                format!(
                    "{time} {}{pid:5} {tid:5} {priority} {tag:<8}: ",
                    user.replacen(':', " ", 1)
                ),
                "\n".into(),
            ),
            Verb::Long => (
                format!("[ {time} {user}{pid:5}:{tid:5} {priority}/{tag:<8} ]\n"),
                "\n\n".into(),
            ),
            Verb::Brief => (format!("{priority}/{tag:<8}({user}{pid:5}): "), "\n".into()),
        };
        let message = if self.printable {
            printable(&entry.message)
        } else {
            entry.message.clone()
        };
        if self.verb == Verb::Long {
            return format!("{}{message}{reset}{suffix}", color(prefix));
        }
        let mut out = String::new();
        let message = message.strip_suffix('\n').unwrap_or(&message);
        for line in message.split('\n') {
            let _ = write!(out, "{}{line}{reset}{suffix}", color(prefix.clone()));
        }
        out
    }
}

/// `-v printable`: control characters and backslashes escaped, tabs kept.
fn printable(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for c in message.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push('\t'),
            '\x07'..='\x0d' => {
                out.push('\\');
                out.push(b"abtnvfr"[c as usize - 7] as char);
            }
            c if (c as u32) < 0x20 || c == '\x7f' => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Priorities by liblog's numbers (`ANDROID_LOG_VERBOSE` = 2 ... `SILENT` = 8); 1 is "the
/// default" of a rule written without one.
fn priority_rank(priority: char) -> u8 {
    match priority {
        'V' => 2,
        'D' => 3,
        'I' => 4,
        'W' => 5,
        'E' => 6,
        'F' => 7,
        _ => 8,
    }
}

/// A filter rule's priority character (`filterCharToPri`), `None` when it is not one.
fn rule_rank(c: char) -> Option<u8> {
    match c.to_ascii_lowercase() {
        d @ '0'..='9' => {
            let n = d as u8 - b'0';
            match n {
                0 => None,
                n if n >= 8 => Some(2),
                n => Some(n),
            }
        }
        'v' => Some(2),
        'd' => Some(3),
        'i' => Some(4),
        'w' => Some(5),
        'e' => Some(6),
        'f' => Some(7),
        's' => Some(8),
        '*' => Some(1),
        _ => None,
    }
}

/// What `-t`/`-T` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    All,
    Lines(usize),
    Since(DateTime<Utc>),
}

/// How `logcat` was asked to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub buffers: Vec<Buffer>,
    pub clear: bool,
    /// `-d` or `-t`: print what is there and exit.
    dump: bool,
    format: Format,
    dividers: bool,
    /// The priority for tags no rule names.
    global: u8,
    /// `(tag, priority)` rules, the last one for a tag wins.
    rules: Vec<(String, u8)>,
    tail: Tail,
    max: Option<usize>,
    regex: Option<regex::Regex>,
    pid: Option<u32>,
    uids: BTreeSet<u32>,
    /// What logcat warns about on stderr before it prints.
    warnings: String,
    /// `--help`, `-h`.
    help: bool,
}

/// Parses logcat's arguments; `Err` is the message logcat prints before exiting 1.
pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let fail = |message: String| format!("logcat: {message}\n");
    let mut options = Options {
        buffers: Vec::new(),
        clear: false,
        dump: false,
        format: Format::new(),
        dividers: false,
        global: 2,
        rules: Vec::new(),
        tail: Tail::All,
        max: None,
        regex: None,
        pid: None,
        uids: BTreeSet::new(),
        warnings: String::new(),
        help: false,
    };
    let mut specs: Vec<&str> = Vec::new();
    let mut silent = false;
    let mut got_t = false;
    let delimiters: &[char] = &[',', ':', ';', ' ', '\t', '\n', '\r', '\x0c'];
    let words = |text: &str| -> Vec<String> {
        text.split(delimiters)
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut iter = args.iter().map(String::as_str);
    let mut only_specs = false;
    while let Some(arg) = iter.next() {
        if only_specs || !arg.starts_with('-') || arg == "-" {
            specs.push(arg);
            continue;
        }
        if arg == "--" {
            only_specs = true;
            continue;
        }
        // `--name=value`, `--name value`, `-xVALUE`, `-x VALUE`, and flags grouped as `-dv`.
        let (option, mut inline): (String, Option<String>) = match arg.strip_prefix("--") {
            Some(long) => match long.split_once('=') {
                Some((name, value)) => (name.to_string(), Some(value.to_string())),
                None => (long.to_string(), None),
            },
            None => (
                arg[1..2].to_string(),
                arg.get(2..).filter(|r| !r.is_empty()).map(str::to_string),
            ),
        };
        let long = arg.starts_with("--");
        let name = match (long, option.as_str()) {
            (true, "buffer") => "b",
            (true, "clear") => "c",
            (true, "dividers") => "D",
            (true, "format") => "v",
            (true, "grep" | "regex") => "e",
            (true, "head" | "max-count") => "m",
            (true, "tail") => "t",
            (true, "help") => "h",
            (true, "pid") => "pid",
            (true, "uid") => "uid",
            (true, "print" | "wrap" | "debug") => "ignored",
            (
                true,
                "binary" | "buffer-size" | "file" | "id" | "last" | "prune" | "proto"
                | "rotate-count" | "rotate-kbytes" | "statistics",
            ) => "unsimulated",
            (true, _) => return Err(fail(format!("Unknown option '{arg}'."))),
            (false, short) => match short {
                "c" | "d" | "D" | "h" | "s" | "b" | "v" | "t" | "T" | "m" | "e" => {
                    // Grouped flags: `-dc` is `-d -c`.
                    let takes_value = matches!(short, "b" | "v" | "t" | "T" | "m" | "e");
                    if !takes_value {
                        if let Some(rest) = inline.take() {
                            for flag in rest.chars() {
                                match flag {
                                    'c' => options.clear = true,
                                    'd' => options.dump = true,
                                    'D' => options.dividers = true,
                                    's' => silent = true,
                                    other => {
                                        return Err(fail(format!("Unknown option '-{other}'.")))
                                    }
                                }
                            }
                        }
                    }
                    short
                }
                "L" | "g" | "G" | "p" | "P" | "S" | "f" | "r" | "n" | "B" | "Q" => "unsimulated",
                _ => return Err(fail(format!("Unknown option '{arg}'."))),
            },
        };
        let needs_value = matches!(name, "b" | "v" | "t" | "T" | "m" | "e" | "pid" | "uid");
        let value = if needs_value {
            match inline.take().or_else(|| iter.next().map(str::to_string)) {
                Some(value) => value,
                None => return Err(fail(format!("Option '{arg}' needs an argument."))),
            }
        } else {
            String::new()
        };
        match name {
            "c" => options.clear = true,
            "d" => options.dump = true,
            "D" => options.dividers = true,
            "s" => silent = true,
            "h" => options.help = true,
            "ignored" => {}
            "unsimulated" => return Err(fail(format!("{arg} is not simulated."))),
            "b" => {
                for word in words(&value) {
                    options.buffers.extend(
                        buffers_named(&word)
                            .ok_or_else(|| fail(format!("Unknown -b buffer '{word}'.")))?,
                    );
                }
            }
            "v" => {
                for word in words(&value) {
                    options
                        .format
                        .apply(&word)
                        .map_err(|()| fail(format!("Invalid -v '{word}'.")))?;
                }
            }
            "t" | "T" => {
                if name == "t" {
                    got_t = true;
                    options.dump = true;
                }
                options.tail =
                    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                        match value.parse::<usize>() {
                            Ok(lines) if lines >= 1 => Tail::Lines(lines),
                            _ => {
                                let _ = writeln!(
                                    options.warnings,
                                    "WARNING: -{name} {value} invalid, setting to 1"
                                );
                                Tail::Lines(1)
                            }
                        }
                    } else {
                        Tail::Since(parse_time(&value).ok_or_else(|| {
                            fail(format!("-{name} '{value}' not in time format."))
                        })?)
                    };
            }
            "m" => match value.parse::<usize>() {
                Ok(max) if max >= 1 => options.max = Some(max),
                _ => {
                    return Err(fail(format!(
                        "-m '{value}' isn't an integer greater than zero."
                    )))
                }
            },
            "e" => {
                options.regex = Some(regex::Regex::new(&value).map_err(|err| {
                    fail(format!("Invalid -e regular expression '{value}': {err}"))
                })?)
            }
            "pid" => match value.parse::<u32>() {
                Ok(pid) if pid >= 1 && options.pid.is_none() => options.pid = Some(pid),
                Ok(_) if options.pid.is_some() => {
                    return Err(fail("Only one --pid argument can be provided.".into()))
                }
                _ => return Err(fail(format!("pid '{value}' out of range."))),
            },
            "uid" => {
                for word in words(&value) {
                    options.uids.insert(
                        word.parse()
                            .map_err(|_| fail(format!("Unable to parse UID '{word}'")))?,
                    );
                }
            }
            _ => {}
        }
    }
    if options.max.is_some() && got_t {
        return Err(fail("Cannot use -m (--max-count) and -t together.".into()));
    }
    // getopt reads every option before the filter specs, so `-s` comes first.
    if silent {
        options.global = 8;
    }
    for spec in specs {
        for rule in spec.split([' ', '\t', ',']).filter(|r| !r.is_empty()) {
            options
                .add_rule(rule)
                .ok_or_else(|| fail(format!("Invalid filter expression '{spec}'.")))?;
        }
    }
    if options.buffers.is_empty() {
        options.buffers = vec![Buffer::Main, Buffer::System, Buffer::Crash];
    }
    options.buffers.sort();
    options.buffers.dedup();
    Ok(options)
}

/// `-T`/`-t` TIME: `MM-DD hh:mm:ss.mmm` (this year), `YYYY-MM-DD hh:mm:ss.mmm` or
/// `SSSSS.mmm`, on the device clock (UTC).
fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    if let Some((seconds, fraction)) = text.split_once('.') {
        if let (Ok(seconds), true) = (
            seconds.parse::<i64>(),
            fraction.bytes().all(|b| b.is_ascii_digit()),
        ) {
            let nanos = fraction_nanos(fraction);
            return Utc.timestamp_opt(seconds, nanos).single();
        }
    }
    let with_year = if text.len() > 5 && text.as_bytes().get(4) == Some(&b'-') {
        text.to_string()
    } else {
        format!("{}-{text}", Utc::now().year())
    };
    let (whole, fraction) = with_year.split_once('.')?;
    let naive = NaiveDateTime::parse_from_str(whole, "%Y-%m-%d %H:%M:%S").ok()?;
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let time = Utc.from_utc_datetime(&naive);
    Some(time + chrono::Duration::nanoseconds(i64::from(fraction_nanos(fraction))))
}

/// `.mmm...` digits as nanoseconds.
fn fraction_nanos(digits: &str) -> u32 {
    let mut nanos = 0u32;
    let mut scale = 100_000_000u32;
    for digit in digits.bytes().take(9) {
        nanos += u32::from(digit - b'0') * scale;
        scale /= 10;
    }
    nanos
}

fn buffers_named(name: &str) -> Option<Vec<Buffer>> {
    Some(match name {
        "main" => vec![Buffer::Main],
        "system" => vec![Buffer::System],
        "crash" => vec![Buffer::Crash],
        "events" => vec![Buffer::Events],
        "radio" => vec![Buffer::Radio],
        "default" => vec![Buffer::Main, Buffer::System, Buffer::Crash],
        "all" => vec![
            Buffer::Main,
            Buffer::Radio,
            Buffer::Events,
            Buffer::System,
            Buffer::Crash,
        ],
        _ => return None,
    })
}

impl Options {
    /// One `TAG[:PRIORITY]` rule (`android_log_addFilterRule`); `None` when it is invalid.
    fn add_rule(&mut self, rule: &str) -> Option<()> {
        let (tag, priority) = match rule.split_once(':') {
            Some((tag, priority)) => (tag, rule_rank(priority.chars().next()?)?),
            None => (rule, 1),
        };
        if tag.is_empty() {
            return None;
        }
        if tag == "*" {
            self.global = if priority == 1 { 3 } else { priority };
        } else {
            self.rules
                .push((tag.to_string(), if priority == 1 { 2 } else { priority }));
        }
        Some(())
    }

    /// What logd hands over: the selected buffers, pid and uids.
    fn selected(&self, entry: &Entry) -> bool {
        self.buffers.contains(&entry.buffer)
            && self.pid.is_none_or(|pid| pid == entry.writer.pid)
            && (self.uids.is_empty() || self.uids.contains(&entry.writer.uid))
    }

    /// What logcat itself prints of it: the tag's priority rule and the regex.
    fn printed(&self, entry: &Entry) -> bool {
        let minimum = self
            .rules
            .iter()
            .rev()
            .find(|(tag, _)| *tag == entry.tag)
            .map_or(self.global, |(_, p)| *p);
        priority_rank(entry.priority) >= minimum
            && self
                .regex
                .as_ref()
                .is_none_or(|re| re.is_match(&entry.message))
    }

    /// What is printed before streaming (or all of it with `-d`): the tail logd hands over.
    fn initial<'e>(&self, entries: &'e [Entry]) -> Vec<&'e Entry> {
        let mut selected: Vec<&Entry> = entries.iter().filter(|e| self.selected(e)).collect();
        match self.tail {
            Tail::All => {}
            Tail::Lines(lines) => {
                selected.drain(..selected.len().saturating_sub(lines));
            }
            Tail::Since(time) => selected.retain(|e| e.time >= time),
        }
        selected
    }
}

/// Prints entries as one logcat run does, across the calls of a stream: the `---------
/// beginning of BUFFER` line the first time a buffer prints (`switch to` with `-D`), and the
/// count for `-m`.
pub struct Printer<'o> {
    options: &'o Options,
    booted: DateTime<Utc>,
    started: BTreeSet<Buffer>,
    last: Option<Buffer>,
    printed: usize,
}

impl<'o> Printer<'o> {
    pub fn new(options: &'o Options, booted: DateTime<Utc>) -> Printer<'o> {
        Printer {
            options,
            booted,
            started: BTreeSet::new(),
            last: None,
            printed: 0,
        }
    }

    /// True once `-m` lines were printed.
    pub fn done(&self) -> bool {
        self.options.max.is_some_and(|max| self.printed >= max)
    }

    pub fn print<'e>(&mut self, entries: impl IntoIterator<Item = &'e Entry>) -> String {
        let mut out = String::new();
        for entry in entries {
            if self.done() {
                break;
            }
            if !self.options.printed(entry) {
                continue;
            }
            self.printed += 1;
            if self.last != Some(entry.buffer) {
                let started = self.started.contains(&entry.buffer);
                if !started || self.options.dividers {
                    let word = if started { "switch to" } else { "beginning of" };
                    let _ = writeln!(out, "--------- {word} {}", entry.buffer.name());
                }
                self.started.insert(entry.buffer);
                self.last = Some(entry.buffer);
            }
            out.push_str(&self.options.format.line(entry, self.booted));
        }
        out
    }
}

impl Phone {
    /// Copies the world's new crashes into the crash buffer, as `AndroidRuntime` logs them.
    pub(super) fn copy_crashes(&self, logs: &mut LogBuffers) {
        for crash in self.world().crashes_since(logs.crashes_copied) {
            let writer = Writer {
                pid: crash.pid,
                tid: crash.pid,
                uid: package_uid(&crash.package),
            };
            for line in &crash.lines {
                logs.log_at(
                    crash.time,
                    Buffer::Crash,
                    writer,
                    'E',
                    "AndroidRuntime",
                    line,
                );
            }
            logs.crashes_copied = crash.seq;
        }
    }

    /// `logcat`: the device's log through logcat's filters and formats. With `-d` (or `-t`)
    /// it prints what is there; otherwise it keeps printing what is logged next, until the
    /// client goes away, Ctrl-C on a terminal, a signal (`pkill logcat`) or `-m` lines.
    pub(super) fn logcat(&self, args: &[String], session: &mut dyn Session) -> Output {
        let options = match parse_args(args) {
            Ok(options) => options,
            Err(message) => return Output::error(message, 1),
        };
        let warnings = options.warnings.clone().into_bytes();
        if options.help {
            return Output::ok(USAGE);
        }
        if options.clear {
            guard(&self.logs).clear(&options.buffers);
            if options.buffers.contains(&Buffer::Crash) {
                self.world().clear_crash_log();
            }
            return Output::default();
        }
        let (booted, mut seen, initial) = {
            let mut logs = guard(&self.logs);
            self.copy_crashes(&mut logs);
            let initial: Vec<Entry> = options
                .initial(logs.entries())
                .into_iter()
                .cloned()
                .collect();
            (logs.booted, logs.last_seq(), initial)
        };
        let mut printer = Printer::new(&options, booted);
        let text = printer.print(&initial);
        if options.dump || printer.done() {
            return Output {
                stdout: text.into_bytes(),
                stderr: warnings,
                status: 0,
            };
        }
        let mut argv = vec!["logcat".to_string()];
        argv.extend(args.iter().cloned());
        let process = self.start_process(&argv);
        // Where the output goes while the client has not gone: the client at once, or (in a
        // pipe or a file) handed back when logcat ends.
        let mut kept = Vec::new();
        let mut emit = |session: &mut dyn Session, text: String| -> bool {
            if text.is_empty() {
                return true;
            }
            match session.write_live(text.as_bytes()) {
                Some(alive) => alive,
                None => {
                    kept.extend_from_slice(text.as_bytes());
                    true
                }
            }
        };
        let mut open = emit(session, text);
        let mut signalled = None;
        while open && !printer.done() {
            let fresh: Vec<Entry> = {
                let logs = guard(&self.logs);
                let logs = if logs.last_seq() == seen {
                    let (logs, _) = self
                        .logged
                        .wait_timeout(logs, STREAM_POLL)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    logs
                } else {
                    logs
                };
                let fresh = logs
                    .entries()
                    .iter()
                    .filter(|e| e.seq > seen && options.selected(e))
                    .cloned()
                    .collect();
                seen = logs.last_seq();
                fresh
            };
            open = emit(session, printer.print(&fresh));
            // logcat catches no signal: one that ends a program ends it, as 128 + N.
            signalled = process.signal().filter(|n| effect(*n).is_some());
            if signalled.is_some() || session.interrupted() {
                break;
            }
        }
        drop(process);
        Output {
            stdout: kept,
            stderr: warnings,
            status: signalled.map_or(0, |n| 128 + i32::from(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    const AM: Writer = Writer {
        pid: 560,
        tid: 560,
        uid: 1000,
    };

    fn at(text: &str) -> DateTime<Utc> {
        Utc.from_utc_datetime(&NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").unwrap())
    }

    fn sample() -> (LogBuffers, DateTime<Utc>) {
        let booted = at("2024-03-05 06:07:00.000");
        let mut buffers = LogBuffers::new(booted);
        buffers.log_at(
            at("2024-03-05 06:07:08.009"),
            Buffer::System,
            AM,
            'I',
            "ActivityManager",
            "Start proc 4321:com.a/u0a150",
        );
        let app = Writer {
            pid: 4321,
            tid: 4321,
            uid: 10150,
        };
        buffers.log_at(
            at("2024-03-05 06:07:09.123456789"),
            Buffer::Main,
            app,
            'D',
            "Shop",
            "debug line",
        );
        buffers.log_at(
            at("2024-03-05 06:07:10.5"),
            Buffer::Crash,
            app,
            'E',
            "AndroidRuntime",
            "FATAL EXCEPTION: main",
        );
        (buffers, booted)
    }

    fn render(line: &str) -> String {
        let (buffers, booted) = sample();
        let options = parse_args(&args(line)).unwrap();
        Printer::new(&options, booted).print(options.initial(buffers.entries()))
    }

    #[test]
    fn filters_pick_by_tag_priority_buffer_and_pid() {
        let all = render("-d");
        assert!(all.starts_with("--------- beginning of system\n"));
        assert_eq!(all.lines().filter(|l| !l.starts_with("---")).count(), 3);
        let errors = render("-d *:E");
        assert!(errors.contains("FATAL EXCEPTION") && !errors.contains("Start proc"));
        let tagged = render("-d -s ActivityManager");
        assert!(tagged.contains("Start proc") && !tagged.contains("debug line"));
        let crash = render("-b crash -d");
        assert!(crash.starts_with("--------- beginning of crash\n") && !crash.contains("Start"));
        let pid = render("-d --pid=560");
        assert!(pid.contains("Start proc") && !pid.contains("FATAL"));
        let grep = render("-d -e ^Start");
        assert_eq!(grep.lines().filter(|l| !l.starts_with("---")).count(), 1);
        assert_eq!(
            render("-d -t 1").lines().count(),
            2,
            "the last line and its buffer"
        );
        let (buffers, booted) = sample();
        for since in ["2024-03-05 06:07:09.200", "1709618829.2"] {
            let options = parse_args(&["-d".into(), "-T".into(), since.into()]).unwrap();
            let text = Printer::new(&options, booted).print(options.initial(buffers.entries()));
            assert_eq!(text.lines().count(), 2, "{since}: {text}");
        }
        assert_eq!(
            parse_time("03-05 06:07:09.2").map(|t| t.year()),
            Some(Utc::now().year()),
            "MM-DD is this year"
        );
        let uid = render("-d --uid=1000");
        assert!(uid.contains("Start proc") && !uid.contains("debug"));
        assert_eq!(render("-d -m 1").lines().count(), 2);
    }

    #[test]
    fn formats_follow_logprint() {
        let line = |format: &str| {
            render(&format!("-d -s ActivityManager -v {format}"))
                .lines()
                .nth(1)
                .unwrap()
                .to_string()
        };
        assert_eq!(
            line("threadtime"),
            "03-05 06:07:08.009   560   560 I ActivityManager: Start proc 4321:com.a/u0a150"
        );
        assert_eq!(
            line("threadtime,year"),
            "2024-03-05 06:07:08.009   560   560 I ActivityManager: Start proc 4321:com.a/u0a150"
        );
        assert_eq!(
            line("time"),
            "03-05 06:07:08.009 I/ActivityManager(  560): Start proc 4321:com.a/u0a150"
        );
        assert_eq!(
            line("brief"),
            "I/ActivityManager(  560): Start proc 4321:com.a/u0a150"
        );
        assert_eq!(
            line("epoch"),
            "         1709618828.009   560   560 I ActivityManager: Start proc 4321:com.a/u0a150"
        );
        assert_eq!(
            line("monotonic"),
            "     8.009   560   560 I ActivityManager: Start proc 4321:com.a/u0a150"
        );
        assert_eq!(
            line("time,usec,zone"),
            "03-05 06:07:08.009000 +0000 I/ActivityManager(  560): Start proc 4321:com.a/u0a150"
        );
        assert_eq!(
            line("uid"),
            "03-05 06:07:08.009  1000   560   560 I ActivityManager: Start proc 4321:com.a/u0a150"
        );
        assert_eq!(
            line("brief,uid"),
            "I/ActivityManager( 1000:  560): Start proc 4321:com.a/u0a150"
        );
        assert_eq!(
            line("tag"),
            "I/ActivityManager: Start proc 4321:com.a/u0a150"
        );
        assert_eq!(line("raw"), "Start proc 4321:com.a/u0a150");
        assert_eq!(
            line("process"),
            "I(  560) Start proc 4321:com.a/u0a150  (ActivityManager)"
        );
        assert_eq!(
            line("thread"),
            "I(  560:  560) Start proc 4321:com.a/u0a150"
        );
        // Several -v flags combine, as do words separated by commas.
        assert_eq!(line("year -v brief"), line("brief"));
        let nsec = render("-d -s Shop -v time,nsec");
        assert!(
            nsec.contains("06:07:09.123456789 D/Shop    ( 4321): debug line"),
            "{nsec}"
        );
        let long = render("-d -s ActivityManager -v long");
        assert!(long.contains("[ 03-05 06:07:08.009   560:  560 I/ActivityManager ]\nStart proc"));
        assert_eq!(printable("a\\b\tc\u{1}"), "a\\\\b\tc\\x01");
    }

    #[test]
    fn bad_arguments_are_refused_as_logcat_refuses_them() {
        let error = |line: &str| parse_args(&args(line)).unwrap_err();
        assert_eq!(error("-d -x"), "logcat: Unknown option '-x'.\n");
        assert_eq!(
            error("-b nowhere"),
            "logcat: Unknown -b buffer 'nowhere'.\n"
        );
        assert_eq!(error("-v fancy"), "logcat: Invalid -v 'fancy'.\n");
        assert_eq!(error("-T soon"), "logcat: -T 'soon' not in time format.\n");
        assert_eq!(
            error("-t 3 -m 2"),
            "logcat: Cannot use -m (--max-count) and -t together.\n"
        );
        assert_eq!(error("-v"), "logcat: Option '-v' needs an argument.\n");
        assert!(parse_args(&args("-T 0"))
            .unwrap()
            .warnings
            .contains("setting to 1"));
        assert!(
            !parse_args(&args("-T 1")).unwrap().dump,
            "-T keeps streaming"
        );
        assert!(parse_args(&args("-t 1")).unwrap().dump, "-t implies -d");
        assert!(parse_args(&args("-dc")).unwrap().clear);
    }
}
