//! A video of the session with the device's own `screenrecord`.
//!
//! screenrecord stops by itself after at most 180 s, so the recording is a chain of segments: a
//! background thread runs one `screenrecord --time-limit N /sdcard/...mp4` after another, each
//! on its own connection, the next started as soon as the last returns. At the end of the crawl
//! every running screenrecord gets SIGINT (`pkill -INT screenrecord`, as Appium does), which
//! makes it write the MP4's `moov` atom (SIGKILL would leave an unplayable file); then each
//! segment is pulled into `video/`, removed from the device, and read on the host for its
//! duration and frame count. One segment is `video/crawl_recording.mp4`; several are
//! `crawl_recording_001.mp4`, `_002`, ... (screenrecord's segments do not share their codec
//! settings, so they are kept apart rather than joined).

use std::io::Cursor;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{
    artifact_note, chain, long_connection, run, warning_note, Integration, SessionDir, Unavailable,
};
use crate::adb::AdbClient;
use crate::events::Note;

/// The integration's name, the `data.artifact` of its notes.
pub const NAME: &str = "video";
/// Where recordings go in the session folder.
pub const FOLDER: &str = "video";
/// screenrecord's own limit per recording on classic builds (`kMaxTimeLimitSec`).
pub const MAX_SEGMENT_SECS: u32 = 180;
/// Segments that fail one after another before the recording gives up.
const MAX_FAILURES: u32 = 3;
/// How long finishing waits for the segments to end after SIGINT.
const STOP_WAIT: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(100);
/// Extra time a segment's connection waits beyond its time limit.
const SEGMENT_SLACK: Duration = Duration::from_secs(30);

/// How the video is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoConfig {
    /// Length of one segment, 1..=180 s.
    pub segment_secs: u32,
    /// `--bit-rate` (bits per second); screenrecord's default when `None`.
    pub bit_rate: Option<u32>,
    /// `--size WxH`; the display's size when `None`.
    pub size: Option<(u32, u32)>,
}

impl Default for VideoConfig {
    fn default() -> Self {
        VideoConfig {
            segment_secs: MAX_SEGMENT_SECS,
            // 4 Mbit/s keeps files predictable (about 30 MB a minute); screenrecord's own
            // default is 20 Mbit/s on recent builds.
            bit_rate: Some(4_000_000),
            size: None,
        }
    }
}

/// What an MP4 says of itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VideoStats {
    pub duration_seconds: f64,
    pub frames: u64,
    pub width: u16,
    pub height: u16,
}

/// Reads an MP4's duration and its first video track's frame count and size. A recording
/// without its `moov` atom (screenrecord killed) is an error.
pub fn read_video(data: &[u8]) -> Result<VideoStats, String> {
    let reader = mp4::Mp4Reader::read_header(Cursor::new(data), data.len() as u64)
        .map_err(|e| format!("not a finished MP4: {e}"))?;
    let track = reader
        .tracks()
        .values()
        .find(|t| matches!(t.track_type(), Ok(mp4::TrackType::Video)));
    Ok(VideoStats {
        duration_seconds: reader.duration().as_secs_f64(),
        frames: track.map_or(0, |t| u64::from(t.sample_count())),
        width: track.map_or(0, mp4::Mp4Track::width),
        height: track.map_or(0, mp4::Mp4Track::height),
    })
}

/// The screenrecord command of one segment.
fn screenrecord(config: &VideoConfig, path: &str) -> String {
    let mut command = format!("screenrecord --time-limit {}", config.segment_secs);
    if let Some(rate) = config.bit_rate {
        command.push_str(&format!(" --bit-rate {rate}"));
    }
    if let Some((w, h)) = config.size {
        command.push_str(&format!(" --size {w}x{h}"));
    }
    command.push(' ');
    command.push_str(path);
    command
}

/// One screenrecord run: its file on the device and how it ended.
#[derive(Debug, Clone)]
struct Segment {
    device_path: String,
    error: Option<String>,
}

struct Running {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Segment>>,
}

/// The video integration.
pub struct Video {
    config: VideoConfig,
    running: Option<Running>,
    /// Warnings from the recording thread, handed out by `tick` and `finish`.
    warnings: Arc<Mutex<Vec<Note>>>,
}

impl std::fmt::Debug for Video {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Video")
            .field("config", &self.config)
            .field("recording", &self.running.is_some())
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Video {
    pub fn new(config: VideoConfig) -> Video {
        Video {
            config: VideoConfig {
                segment_secs: config.segment_secs.clamp(1, MAX_SEGMENT_SECS),
                ..config
            },
            running: None,
            warnings: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn drain(&self) -> Vec<Note> {
        std::mem::take(&mut *lock(&self.warnings))
    }

    /// Pulls one segment into `video/NAME`; its note fields, or why it failed.
    fn collect(
        device: &AdbClient,
        session: &SessionDir,
        segment: &Segment,
        name: &str,
    ) -> Result<(String, u64, Result<VideoStats, String>), super::Error> {
        let data = device.pull(&segment.device_path)?;
        let path = session.write(FOLDER, name, &data)?;
        let _ = device.shell(&format!("rm -f {}", segment.device_path));
        Ok((
            session.relative(&path),
            data.len() as u64,
            read_video(&data),
        ))
    }
}

/// Runs segments until `stop`, each on its own connection (a segment's reads wait as long as
/// its time limit).
fn record(
    device: AdbClient,
    commands: impl Fn(usize) -> (String, String),
    segment_secs: u32,
    stop: Arc<AtomicBool>,
    warnings: Arc<Mutex<Vec<Note>>>,
) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut failures = 0;
    let timeout = Duration::from_secs(u64::from(segment_secs)) + SEGMENT_SLACK;
    while !stop.load(Ordering::SeqCst) {
        let (path, command) = commands(segments.len() + 1);
        let started = Instant::now();
        let outcome = long_connection(&device, timeout)
            .and_then(|connection| run(&connection, &command, &command).map(drop));
        let error = outcome.err().map(|e| chain(&e));
        if let Some(error) = &error {
            failures += 1;
            lock(&warnings).push(warning_note(
                NAME,
                &format!(
                    "screenrecord segment {} failed: {error}",
                    segments.len() + 1
                ),
            ));
        } else {
            failures = 0;
        }
        segments.push(Segment {
            device_path: path,
            error,
        });
        if failures >= MAX_FAILURES {
            lock(&warnings).push(warning_note(
                NAME,
                &format!("video recording given up after {MAX_FAILURES} failed segments"),
            ));
            break;
        }
        if failures > 0 {
            // A device that refuses at once must not be hammered.
            std::thread::sleep(Duration::from_secs(1).saturating_sub(started.elapsed()));
        }
    }
    segments
}

impl Integration for Video {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&mut self, device: &AdbClient) -> Result<(), Unavailable> {
        run(device, "which screenrecord", "which screenrecord")
            .map(drop)
            .map_err(|err| Unavailable {
                integration: NAME,
                reason: format!("the device has no screenrecord: {}", chain(&err)),
            })
    }

    fn start(&mut self, device: &AdbClient, _session: &SessionDir) -> Vec<Note> {
        if self.running.is_some() {
            return Vec::new();
        }
        let connection = match long_connection(device, device.server().config().timeout) {
            Ok(connection) => connection,
            Err(err) => {
                return vec![warning_note(
                    NAME,
                    &format!("cannot record: {}", chain(&err)),
                )]
            }
        };
        let stamp = chrono::Utc::now().format("%Y%m%d%H%M%S").to_string();
        let config = self.config.clone();
        let commands = move |n: usize| {
            let path = format!("/sdcard/droid-video-{stamp}-{n:03}.mp4");
            let command = screenrecord(&config, &path);
            (path, command)
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_stop, warnings) = (Arc::clone(&stop), Arc::clone(&self.warnings));
        let secs = self.config.segment_secs;
        let spawned = std::thread::Builder::new()
            .name("droid-video".into())
            .spawn(move || record(connection, commands, secs, thread_stop, warnings));
        match spawned {
            Ok(thread) => {
                self.running = Some(Running { stop, thread });
                Vec::new()
            }
            Err(err) => vec![warning_note(NAME, &format!("cannot record: {err}"))],
        }
    }

    fn tick(&mut self, _device: &AdbClient) -> Vec<Note> {
        self.drain()
    }

    fn finish(&mut self, device: &AdbClient, session: &SessionDir) -> Vec<Note> {
        let Some(running) = self.running.take() else {
            return self.drain();
        };
        running.stop.store(true, Ordering::SeqCst);
        // SIGINT until the recording thread is done: a segment may be starting right now.
        let deadline = Instant::now() + STOP_WAIT;
        let mut last_signal: Option<Instant> = None;
        while !running.thread.is_finished() && Instant::now() < deadline {
            if last_signal.is_none_or(|at| at.elapsed() >= Duration::from_millis(500)) {
                let _ = device.shell("pkill -INT screenrecord");
                last_signal = Some(Instant::now());
            }
            std::thread::sleep(POLL);
        }
        let mut notes = Vec::new();
        if !running.thread.is_finished() {
            notes.extend(self.drain());
            notes.push(artifact_note(
                NAME,
                "screenrecord did not stop".to_string(),
                json!({"files": [], "error": format!("screenrecord still running {} s after SIGINT", STOP_WAIT.as_secs())}),
            ));
            return notes;
        }
        let segments = running.thread.join().unwrap_or_default();
        // screenrecord finalises the file after its shell command returns: wait it out.
        let deadline = Instant::now() + Duration::from_secs(5);
        while device
            .shell("pidof screenrecord")
            .is_ok_and(|o| o.succeeded())
            && Instant::now() < deadline
        {
            std::thread::sleep(POLL);
        }
        notes.extend(self.drain());
        let single = segments.len() == 1;
        let (mut files, mut size, mut duration, mut frames, mut errors) =
            (Vec::new(), 0u64, 0.0f64, 0u64, Vec::new());
        for (i, segment) in segments.iter().enumerate() {
            let name = if single {
                "crawl_recording.mp4".to_string()
            } else {
                format!("crawl_recording_{:03}.mp4", i + 1)
            };
            match Self::collect(device, session, segment, &name) {
                Ok((file, bytes, stats)) => {
                    files.push(file.clone());
                    size += bytes;
                    match stats {
                        Ok(stats) => {
                            duration += stats.duration_seconds;
                            frames += stats.frames;
                        }
                        Err(err) => errors.push(format!("{file}: {err}")),
                    }
                }
                // A segment that never wrote a file (it failed to start) was already reported.
                Err(_) if segment.error.is_some() => {}
                Err(err) => errors.push(format!("{}: {}", segment.device_path, chain(&err))),
            }
        }
        let mut fields = json!({
            "files": files,
            "segments": segments.len(),
            "size_bytes": size,
            "duration_seconds": (duration * 1000.0).round() / 1000.0,
            "frames": frames,
        });
        if !errors.is_empty() {
            fields["error"] = json!(errors.join("; "));
        }
        if files.is_empty() {
            fields["size_bytes"] = serde_json::Value::Null;
            fields["duration_seconds"] = serde_json::Value::Null;
        }
        notes.push(artifact_note(
            NAME,
            format!(
                "{} video file(s), {size} bytes, {:.1} s",
                files.len(),
                duration
            ),
            fields,
        ));
        notes
    }
}

impl Drop for Video {
    /// A recording left running (the crawl died) is told to stop; its files stay on the device.
    fn drop(&mut self) {
        if let Some(running) = &self.running {
            running.stop.store(true, Ordering::SeqCst);
        }
    }
}

/// Reads a pulled recording file.
pub fn read_video_file(path: &Path) -> Result<VideoStats, String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    read_video(&data)
}
