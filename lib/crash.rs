//! Crashes and ANRs: logcat's FATAL EXCEPTION and ANR blocks read into the payloads of the
//! `note` events of kind `crash` and `anr` (`docs/events.md`), and the signature that makes one
//! bug found ten times one crash group with ten occurrences.
//!
//! Logcat prints a block in several formats (threadtime `MM-DD hh:mm:ss.mmm PID TID E TAG: `,
//! brief `E/TAG( PID): `, tag `E TAG: `, Android Studio's indented continuation lines, or the bare
//! message); the parsers accept them all and keep each block as printed.

use serde::{Deserialize, Serialize};

/// Top frames of the app's own code that make a crash's signature.
pub const SIGNATURE_FRAMES: usize = 3;

/// One action on the way to a crash: what a tester replays.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReproStep {
    pub step: u64,
    /// For people: `click Button "Settings"`.
    pub action: String,
    /// The screen key the action was taken on.
    #[serde(default)]
    pub screen: String,
}

/// `data` of a `note` of kind `crash`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashData {
    #[serde(default)]
    pub package: String,
    #[serde(default)]
    pub process: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Class of the exception that was thrown last (the deepest `Caused by:`).
    #[serde(default)]
    pub exception: String,
    #[serde(default)]
    pub exception_message: String,
    /// 16 hex digits; see [`crash_signature`].
    #[serde(default)]
    pub signature: String,
    #[serde(default)]
    pub signature_frames: Vec<String>,
    /// The whole FATAL EXCEPTION block as logcat printed it.
    #[serde(default)]
    pub stack_trace: String,
    #[serde(default)]
    pub repro_steps: Vec<ReproStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_path: Option<String>,
    /// The crawl got back into the app afterwards.
    #[serde(default)]
    pub recovered: bool,
}

/// `data` of a `note` of kind `anr`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnrData {
    #[serde(default)]
    pub package: String,
    /// `Input dispatching timed out (...)`, as the system gave it.
    #[serde(default)]
    pub reason: String,
    /// The ANR block as logcat printed it.
    #[serde(default)]
    pub trace: String,
    /// 16 hex digits; see [`anr_signature`].
    #[serde(default)]
    pub signature: String,
    #[serde(default)]
    pub repro_steps: Vec<ReproStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot_path: Option<String>,
    #[serde(default)]
    pub recovered: bool,
}

/// The kind of the note that carries a [`MinimisedData`].
pub const MINIMISED_NOTE: &str = "minimised";
/// `halted` of a minimisation a replay's device error stopped.
pub const DEVICE_HALT: &str = "device";

/// `data` of a `note` of kind `minimised`: a crash's or an ANR's steps cut down to those it
/// needs by replaying shorter subsequences of them (delta debugging), and how often the result
/// reproduced it. Written into the run whose failure it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MinimisedData {
    /// `crash` or `anr`.
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub signature: String,
    /// `java.lang.IllegalStateException: cache directory is locked`, `ANR: ...`.
    #[serde(default)]
    pub title: String,
    /// The steps since the launch of the occurrence minimised.
    #[serde(default)]
    pub steps_before: usize,
    /// The steps left, as the run recorded them.
    #[serde(default)]
    pub minimal_steps: Vec<ReproStep>,
    /// Removing any one of the steps left was tried and no longer reproduced the failure.
    #[serde(default)]
    pub one_minimal: bool,
    /// 1-minimal and reproduced by every verifying replay.
    #[serde(default)]
    pub minimal: bool,
    /// Why minimising stopped early: `budget`, `interrupted`, or `device` (a replay met the
    /// device's error, [`MinimisedData::error`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<String>,
    /// The device's error that stopped minimising (`halted` is `device`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Replays spent minimising (verification not counted), and the seconds they took.
    #[serde(default)]
    pub replays: u32,
    #[serde(default)]
    pub seconds: f64,
    /// Replays of the result from a fresh launch, and how many reproduced the failure.
    #[serde(default)]
    pub verify_replays: u32,
    #[serde(default)]
    pub reproduced: u32,
    /// `reproduced` (k = N), `flaky` (0 < k < N), `not_reproduced` (k = 0), `unverified`.
    #[serde(default)]
    pub verdict: String,
    /// The verifying replays' runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify_runs: Vec<String>,
    /// The exported files (`maestro`, `shell`, `events`), relative to the run's session folder.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub exports: std::collections::BTreeMap<String, String>,
}

impl MinimisedData {
    /// What minimising came to: `1-minimal`, `stopped (budget)`, `1-minimal, stopped (device:
    /// …)` when verifying the result stopped (the device failed, the user stopped), or `as
    /// recorded, not reproduced` when the recorded steps never reproduced the failure.
    pub fn shape(&self) -> String {
        let stopped = self.halted.as_deref().map(|halt| match &self.error {
            Some(error) => format!("stopped ({halt}: {error})"),
            None => format!("stopped ({halt})"),
        });
        match (self.one_minimal, stopped) {
            (true, Some(stopped)) => format!("1-minimal, {stopped}"),
            (true, None) => "1-minimal".to_string(),
            (false, Some(stopped)) => stopped,
            (false, None) => "as recorded, not reproduced".to_string(),
        }
    }

    /// `reproduced 3 of 3 (reproduced)`, `reproduced 1 of 3 (flaky)`, or `unverified`.
    pub fn verdict_text(&self) -> String {
        match self.verdict.as_str() {
            "unverified" => "unverified".to_string(),
            verdict => format!(
                "reproduced {} of {} ({})",
                self.reproduced,
                self.verify_replays,
                verdict.replace('_', " ")
            ),
        }
    }
}

/// Removes the logcat prefix of a line (threadtime, brief, tag or Studio style), keeping what the
/// app or the system wrote. `None` when the line has no prefix.
fn strip_prefix(line: &str) -> Option<&str> {
    static PREFIX: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let prefix = PREFIX.get_or_init(|| {
        regex::Regex::new(concat!(
            r"^(?:\d\d-\d\d \d\d:\d\d:\d\d\.\d+\s+(?:\d+[-\s]+\d+(?:/\S+)?\s+)?)?",
            r"[VDIWEF][/ ][A-Za-z0-9_.$-]+(?:\(\s*\d+\))?: ?"
        ))
        .expect("valid prefix regex")
    });
    prefix.find(line).map(|m| &line[m.end()..])
}

/// The lines of one block: from the line holding `marker` until a blank line, a line of
/// another tag, or the next block. Returns each block as printed and its lines without prefix.
fn blocks<'t>(text: &'t str, marker: &str) -> Vec<(String, Vec<&'t str>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(at) = lines[i].find(marker) else {
            i += 1;
            continue;
        };
        let head = &lines[i][..at];
        let prefixed = strip_prefix(lines[i]).is_some();
        let mut raw = vec![lines[i]];
        let mut content = vec![lines[i][at..].trim_end()];
        let mut j = i + 1;
        while j < lines.len() {
            let line = lines[j];
            if line.trim().is_empty() || line.contains(marker) {
                break;
            }
            let body = match strip_prefix(line) {
                // Same tag as the first line (logcat prefixes every line of a block).
                Some(rest) if prefixed && same_tag(head, line) => rest,
                Some(_) => break,
                // Studio and bare formats continue with indented lines.
                None if !prefixed || line.starts_with(char::is_whitespace) => line,
                None => break,
            };
            raw.push(line);
            content.push(body.trim());
            j += 1;
        }
        out.push((raw.join("\n"), content));
        i = j;
    }
    out
}

/// Whether `line` carries the same logcat tag as the prefix `head` of a block's first line.
fn same_tag(head: &str, line: &str) -> bool {
    let tag = |s: &str| -> Option<String> {
        let s = s.trim_end();
        let before_colon = s.strip_suffix(':').unwrap_or(s);
        let word = before_colon.rsplit([' ', '/']).next()?;
        Some(word.split('(').next()?.to_string())
    };
    let prefix_of_line = strip_prefix(line).map(|rest| &line[..line.len() - rest.len()]);
    match (tag(head), prefix_of_line.and_then(tag)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Every FATAL EXCEPTION block in `text` (`logcat -b crash -d`, or any logcat output), in order.
/// Repro steps, screenshot and recovery are the crawler's to fill in.
pub fn parse_crashes(text: &str) -> Vec<CrashData> {
    blocks(text, "FATAL EXCEPTION")
        .into_iter()
        .map(|(raw, lines)| crash_from_lines(raw, &lines))
        .collect()
}

fn crash_from_lines(stack_trace: String, lines: &[&str]) -> CrashData {
    let mut crash = CrashData {
        stack_trace,
        ..CrashData::default()
    };
    // (exception line, its frames), the thrown one first, then each `Caused by:`.
    let mut chain: Vec<(String, Vec<String>)> = Vec::new();
    for line in lines.iter().skip(1) {
        if let Some(process) = line.strip_prefix("Process: ") {
            let (name, pid) = process.split_once(", PID: ").unwrap_or((process, ""));
            crash.process = name.trim().to_string();
            crash.pid = pid.trim().parse().ok();
        } else if let Some(frame) = line.strip_prefix("at ") {
            if let Some((_, frames)) = chain.last_mut() {
                frames.push(frame.trim().to_string());
            }
        } else if let Some(cause) = line.strip_prefix("Caused by: ") {
            chain.push((cause.to_string(), Vec::new()));
        } else if line.starts_with("...") || line.starts_with("Suppressed: ") {
            continue;
        } else if chain.is_empty() {
            chain.push((line.to_string(), Vec::new()));
        } else if let Some((head, frames)) = chain.last_mut() {
            // A message over several lines, before the frames.
            if frames.is_empty() {
                head.push('\n');
                head.push_str(line);
            }
        }
    }
    crash.package = crash
        .process
        .split(':')
        .next()
        .unwrap_or_default()
        .to_string();
    // The root cause is the bug; frames of an outer exception are where it surfaced.
    if let Some((head, frames)) = chain.last() {
        let (class, message) = head.split_once(": ").unwrap_or((head.as_str(), ""));
        crash.exception = class.trim().to_string();
        crash.exception_message = message.trim().to_string();
        let own: Vec<&String> = frames.iter().filter(|f| !is_platform_frame(f)).collect();
        let picked: Vec<&String> = if own.is_empty() {
            frames.iter().collect()
        } else {
            own
        };
        crash.signature_frames = picked.into_iter().take(SIGNATURE_FRAMES).cloned().collect();
    }
    crash.signature = crash_signature(&crash.exception, &crash.signature_frames);
    crash
}

/// Frames of the platform and the language runtimes, which every app's stack passes through.
fn is_platform_frame(frame: &str) -> bool {
    const PLATFORM: &[&str] = &[
        "android.",
        "androidx.",
        "com.android.",
        "dalvik.",
        "java.",
        "javax.",
        "jdk.",
        "kotlin.",
        "kotlinx.",
        "libcore.",
        "sun.",
        "org.apache.harmony.",
    ];
    PLATFORM.iter().any(|p| frame.starts_with(p))
}

/// A crash's signature: the first 16 hex digits of sha256 over the root exception's class and
/// the top [`SIGNATURE_FRAMES`] frames of the app's own code (all frames when none is the
/// app's). The message is left out: it often carries values (`Index: 3, Size: 2`).
pub fn crash_signature(exception: &str, frames: &[String]) -> String {
    let mut parts = vec!["crash", exception];
    parts.extend(frames.iter().map(String::as_str));
    crate::hash::digest16(&parts)
}

/// Every ANR block in `text` (`ANR in PKG (PKG/CLS)` with `PID:`, `Reason:` and the CPU load
/// lines), in order.
pub fn parse_anrs(text: &str) -> Vec<AnrData> {
    blocks(text, "ANR in ")
        .into_iter()
        .map(|(trace, lines)| {
            let first = lines[0].trim_start_matches("ANR in ").trim();
            let (package, component) = match first.split_once(" (") {
                Some((package, rest)) => (package.trim(), rest.trim_end_matches(')')),
                None => (first, ""),
            };
            let reason = lines
                .iter()
                .find_map(|l| l.strip_prefix("Reason: "))
                .unwrap_or_default()
                .to_string();
            AnrData {
                package: package.to_string(),
                signature: anr_signature(package, component, &reason),
                reason,
                trace,
                ..AnrData::default()
            }
        })
        .collect()
}

/// An ANR's signature: the first 16 hex digits of sha256 over the package, the component
/// that stopped responding, and the reason up to its first parenthesis (`Input dispatching
/// timed out`): the rest are queue lengths and times that change every time.
pub fn anr_signature(package: &str, component: &str, reason: &str) -> String {
    let kind = reason.split('(').next().unwrap_or_default().trim();
    crate::hash::digest16(&["anr", package, component, kind])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimisation_says_what_it_came_to_and_what_stopped_it() {
        let data = |one_minimal, halted: Option<&str>, error: Option<&str>| MinimisedData {
            one_minimal,
            halted: halted.map(String::from),
            error: error.map(String::from),
            ..MinimisedData::default()
        };
        assert_eq!(data(true, None, None).shape(), "1-minimal");
        assert_eq!(
            data(false, Some("budget"), None).shape(),
            "stopped (budget)"
        );
        // Verifying a 1-minimal result stopped: the user, or the device.
        assert_eq!(
            data(true, Some("interrupted"), None).shape(),
            "1-minimal, stopped (interrupted)"
        );
        assert_eq!(
            data(true, Some(DEVICE_HALT), Some("device gone")).shape(),
            "1-minimal, stopped (device: device gone)"
        );
        assert_eq!(
            data(false, Some(DEVICE_HALT), Some("device gone")).shape(),
            "stopped (device: device gone)"
        );
        assert_eq!(
            data(false, None, None).shape(),
            "as recorded, not reproduced"
        );
    }

    fn fixture(name: &str) -> String {
        let path = crate::fixtures::location().join("device/logcat").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn threadtime_and_brief_blocks_of_one_bug_share_a_signature() {
        crate::fixtures_or_skip!();
        let crashes = parse_crashes(&fixture("fatal_exception_threadtime_tag_android7.txt"));
        assert_eq!(crashes.len(), 2, "one block per Android version");
        let [new, old] = [&crashes[0], &crashes[1]];
        assert_eq!(new.process, "com.amaze.filemanager");
        assert_eq!(new.pid, Some(5932));
        assert_eq!(old.pid, Some(12478));
        assert_eq!(new.exception, "java.lang.IndexOutOfBoundsException");
        assert_eq!(new.exception_message, "Index: 0, Size: 0");
        assert_eq!(old.exception_message, "Invalid index 0, size is 0");
        assert_eq!(
            new.signature_frames[0],
            "com.amaze.filemanager.asynchronous.asynctasks.DeleteTask.onPostExecute(DeleteTask.java:175)"
        );
        assert_eq!(new.signature, old.signature);
        assert_eq!(new.signature.len(), 16);
        assert!(new
            .stack_trace
            .ends_with("ZygoteInit.main(ZygoteInit.java:776)"));
        assert_eq!(new.stack_trace.lines().count(), 15);
    }

    #[test]
    fn the_root_cause_names_the_crash() {
        crate::fixtures_or_skip!();
        let studio = parse_crashes(&fixture("fatal_exception_androidstudio_style_android9.txt"));
        assert_eq!(studio.len(), 1);
        assert_eq!(studio[0].process, "com.ichi2.anki");
        assert_eq!(studio[0].exception, "java.lang.NullPointerException");
        assert_eq!(
            studio[0].signature_frames,
            [
                "com.ichi2.anki.multimediacard.fields.AudioField.getFormattedValue(AudioField.kt:81)",
                "com.ichi2.anki.NoteEditor.onActivityResult(NoteEditor.java:1360)"
            ]
        );
        assert_eq!(studio[0].stack_trace.lines().count(), 31, "the whole file");

        let tasks = parse_crashes(&fixture(
            "fatal_exception_asynctask_message_only_android7.txt",
        ));
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[0].exception, "java.lang.NullPointerException");
        assert!(tasks[0]
            .exception_message
            .starts_with("Attempt to invoke virtual method"));
        assert_eq!(tasks[1].exception_message, "");
        assert_eq!(
            tasks[0].signature, tasks[1].signature,
            "same bug, two Androids"
        );
        assert_eq!(tasks[0].package, "com.ichi2.anki");
    }

    #[test]
    fn anrs_in_both_formats() {
        crate::fixtures_or_skip!();
        let threadtime = parse_anrs(&fixture("anr_threadtime_activitymanager_2021.txt"));
        assert_eq!(threadtime.len(), 1);
        assert_eq!(threadtime[0].package, "com.zxs.app");
        assert!(threadtime[0]
            .reason
            .starts_with("Input dispatching timed out (Waiting to send non-key event"));
        assert_eq!(threadtime[0].trace.lines().count(), 10);
        let studio = parse_anrs(&fixture("anr_androidstudio_format_2017.txt"));
        assert_eq!(studio[0].package, "co.touchlab.droidcon.anon");
        assert_eq!(studio[0].trace.lines().count(), 11);
        assert_ne!(studio[0].signature, threadtime[0].signature);
    }

    #[test]
    fn anr_signatures_ignore_queue_figures() {
        let a = anr_signature(
            "p",
            "p/.A",
            "Input dispatching timed out (Wait queue length: 58.)",
        );
        let b = anr_signature(
            "p",
            "p/.A",
            "Input dispatching timed out (Wait queue length: 12.)",
        );
        assert_eq!(a, b);
        assert_ne!(a, anr_signature("p", "p/.B", "Input dispatching timed out"));
    }

    #[test]
    fn the_simulators_crash_buffer_reads_back() {
        let block = crate::sim::system::fatal_exception_block(
            "com.example.shop",
            4242,
            "com.example.shop.SettingsActivity",
            "java.lang.IllegalStateException: cache directory is locked",
        );
        let log = format!("--------- beginning of crash\n{block}");
        let crashes = parse_crashes(&log);
        assert_eq!(crashes.len(), 1);
        assert_eq!(crashes[0].exception, "java.lang.IllegalStateException");
        assert_eq!(crashes[0].exception_message, "cache directory is locked");
        assert_eq!(crashes[0].pid, Some(4242));
        assert_eq!(
            crashes[0].signature_frames,
            ["com.example.shop.SettingsActivity.onClick(SettingsActivity.java:42)"]
        );
    }

    #[test]
    fn text_without_blocks_has_no_crash() {
        assert!(parse_crashes("").is_empty());
        assert!(parse_crashes("--------- beginning of crash\n").is_empty());
        assert!(parse_anrs("I ActivityManager: Start proc 123").is_empty());
    }
}
