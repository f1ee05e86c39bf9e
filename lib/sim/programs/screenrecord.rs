//! `screenrecord`: a playable MP4 of what the display shows (see [`crate::sim::video`]).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::signals::effect;
use super::{Phone, Signal};
use crate::sim::render;
use crate::sim::shell::{lock, FsHandle, Output, Session};
use crate::sim::video;

/// `screenrecord --time-limit` default and maximum on classic builds.
const SCREENRECORD_MAX_SECS: u64 = 180;

/// `screenrecord --bit-rate` default (v1.2's help: 20 Mbps).
const SCREENRECORD_BIT_RATE: u32 = 20_000_000;

/// How often screenrecord looks for a changed screen, and whether its client is still there.
const FRAME_POLL: Duration = Duration::from_millis(100);

impl Phone {
    /// Records until the time limit, SIGINT/SIGTERM (`pkill -INT screenrecord`), or SIGHUP (the
    /// client went away): all finish the file; SIGKILL leaves it unfinished. A frame is encoded
    /// whenever the screen changes (see [`video`]).
    pub(super) fn screenrecord(
        &self,
        args: &[String],
        session: &mut dyn Session,
        fs: &FsHandle,
    ) -> Output {
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
                            return Output::error(
                                format!("Time limit must be between 1 and {SCREENRECORD_MAX_SECS} seconds\n"),
                                2,
                            )
                        }
                    }
                }
                "--size" => match iter.next().and_then(|v| video::parse_size(v)) {
                    Some(wanted) => size = wanted,
                    None => return Output::error("Invalid size specified\n", 2),
                },
                "--bit-rate" => match iter.next().and_then(|v| video::parse_bit_rate(v)) {
                    Some(rate) => bit_rate = rate,
                    None => return Output::error("Invalid bit rate specified\n", 2),
                },
                "--display-id" | "--output-format" => {
                    iter.next();
                }
                "--verbose" | "--bugreport" => {}
                "--help" => return Output::error("Usage: screenrecord [options] <filename>\n\nAndroid screenrecord v1.2.  Records the device's display to a .mp4 file.\n", 0),
                other if other.starts_with("--") => {
                    return Output::error(format!("Unknown option '{other}'\n"), 2)
                }
                other => file = Some(other.to_string()),
            }
        }
        let Some(path) = file else {
            return Output::error("Must specify output file (see --help).\n", 2);
        };
        if let Err(err) = lock(fs).check_writable(&path) {
            return Output::error(format!("Unable to open '{path}': {err}\n"), 1);
        }
        let mut argv = vec!["screenrecord".to_string()];
        argv.extend(args.iter().cloned());
        let process = self.start_process(&argv);
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
            if now >= deadline || session.interrupted() {
                break None;
            }
            if let Some(received) = process.wait_signal((deadline - now).min(FRAME_POLL)) {
                break Some(received);
            }
        };
        let length = started.elapsed().min(Duration::from_secs(limit));
        let encoder_error = recording.error.clone();
        let written = recording
            .finish(length, ended.and_then(effect) != Some(Signal::Kill))
            .and_then(|video| {
                lock(fs)
                    .write(&path, &video, false)
                    .map_err(|e| e.to_string())
            });
        // The process is gone only once its file is complete, as `pidof` shows on a device.
        drop(process);
        // A signal it does not catch (SIGKILL, ...) ends it as the shell reports: 128 + N.
        if let Some(number) = ended.filter(|n| effect(*n) == Some(Signal::Kill)) {
            return Output::status(128 + i32::from(number));
        }
        match (written, encoder_error) {
            (Err(err), _) => Output::error(format!("Unable to write '{path}': {err}\n"), 1),
            (Ok(()), Some(err)) => Output::error(format!("Encoder failed: {err}\n"), 1),
            (Ok(()), None) => Output::default(),
        }
    }
}
