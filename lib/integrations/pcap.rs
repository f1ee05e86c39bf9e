//! Traffic capture through PCAPdroid (no root: a local VPN), driven by its `CaptureCtrl` intent
//! API exactly as PCAPdroid documents it:
//!
//! ```text
//! am start -n com.emanuelef.remote_capture/.activities.CaptureCtrl -e action start \
//!     -e pcap_dump_mode pcap_file -e app_filter PKG -e pcap_name NAME [-e api_key KEY]
//! am start -n com.emanuelef.remote_capture/.activities.CaptureCtrl -e action stop [-e api_key KEY]
//! ```
//!
//! The capture lands in `/sdcard/Download/PCAPdroid/NAME`; it is pulled into
//! `traffic_captures/` and read on the host ([`read_capture`]: pcap or pcapng, any byte order)
//! for its packet count. Without an API key PCAPdroid asks the user's consent on the device for
//! every request: the crawl warns when no capture file appears. The key travels on the device's
//! command line (the only way `am start` passes it) and nowhere else: never in a note.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use pcap_parser::{PcapBlockOwned, PcapError};
use serde_json::json;

use super::{artifact_note, chain, run, warning_note, Error, Integration, SessionDir, Unavailable};
use crate::adb::AdbClient;
use crate::device::text::shell_quote;
use crate::events::Note;
use crate::secret::Secret;

/// The integration's name, the `data.artifact` of its notes.
pub const NAME: &str = "pcap";
/// Where captures go in the session folder.
pub const FOLDER: &str = "traffic_captures";
/// PCAPdroid's package and control activity.
pub const PACKAGE: &str = "com.emanuelef.remote_capture";
pub const CONTROL: &str = "com.emanuelef.remote_capture/.activities.CaptureCtrl";
/// Where PCAPdroid writes `pcap_file` captures.
pub const DEVICE_DIR: &str = "/sdcard/Download/PCAPdroid";
const POLL: Duration = Duration::from_millis(100);
/// The reader's buffer: larger than any packet record a capture holds (snaplen 64 KiB).
const READ_BUFFER: usize = 1 << 18;

/// How the capture runs.
#[derive(Debug, Clone)]
pub struct PcapConfig {
    /// The app whose traffic is captured (`app_filter`).
    pub package: String,
    /// PCAPdroid's control API key (Settings > Control permissions): requests with it need no
    /// consent on the device.
    pub api_key: Option<Secret>,
    /// The capture's file name on the device and in `traffic_captures/`.
    pub file_name: String,
    /// How long a started capture has to show its file before the crawl warns (default 3 s).
    pub start_wait: Duration,
}

impl PcapConfig {
    pub fn new(package: impl Into<String>, api_key: Option<Secret>) -> PcapConfig {
        PcapConfig {
            package: package.into(),
            api_key,
            file_name: "session_capture.pcap".to_string(),
            start_wait: Duration::from_secs(3),
        }
    }
}

/// What a capture file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureStats {
    pub packets: u64,
    /// The file ends inside a packet record (the capture was cut off).
    pub truncated: bool,
    /// pcapng rather than pcap.
    pub pcapng: bool,
}

/// Why a capture file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    #[error("empty capture file (no pcap header)")]
    Empty,
    #[error("not a pcap or pcapng file")]
    NotPcap,
    #[error("damaged after {packets} packets: {detail}")]
    Damaged { packets: u64, detail: String },
    #[error("reading the capture: {0}")]
    Read(String),
}

/// Counts the packets of a pcap or pcapng capture, streaming (a capture of any size).
pub fn read_capture(input: impl Read + Send) -> Result<CaptureStats, CaptureError> {
    let mut reader = match pcap_parser::create_reader(READ_BUFFER, input) {
        Ok(reader) => reader,
        Err(PcapError::Eof) => return Err(CaptureError::Empty),
        Err(PcapError::HeaderNotRecognized) => return Err(CaptureError::NotPcap),
        Err(PcapError::ReadError) => return Err(CaptureError::Read("I/O error".into())),
        Err(other) => return Err(CaptureError::Read(format!("{other:?}"))),
    };
    let mut stats = CaptureStats {
        packets: 0,
        truncated: false,
        pcapng: false,
    };
    let mut stalled = false;
    loop {
        match reader.next() {
            Ok((offset, block)) => {
                stalled = false;
                match block {
                    PcapBlockOwned::Legacy(_) => stats.packets += 1,
                    PcapBlockOwned::NG(block) => {
                        stats.pcapng = true;
                        stats.packets += u64::from(block.is_data_block());
                    }
                    PcapBlockOwned::LegacyHeader(_) => {}
                }
                reader.consume(offset);
            }
            Err(PcapError::Eof) => return Ok(stats),
            Err(PcapError::Incomplete(_)) | Err(PcapError::UnexpectedEof) => {
                if stalled || reader.reader_exhausted() {
                    // More is needed and nothing more comes: the last record was cut off.
                    stats.truncated = true;
                    return Ok(stats);
                }
                reader
                    .refill()
                    .map_err(|e| CaptureError::Read(format!("{e:?}")))?;
                stalled = true;
            }
            Err(other) => {
                return Err(CaptureError::Damaged {
                    packets: stats.packets,
                    detail: format!("{:?}", other.to_owned_vec()),
                })
            }
        }
    }
}

/// Reads a capture file.
pub fn read_capture_file(path: &Path) -> Result<CaptureStats, CaptureError> {
    let file = std::fs::File::open(path).map_err(|e| CaptureError::Read(e.to_string()))?;
    read_capture(std::io::BufReader::new(file))
}

/// The PCAPdroid integration.
#[derive(Debug)]
pub struct Pcap {
    config: PcapConfig,
    started: bool,
    /// PCAPdroid's capture process was seen running, and whether it was reported gone.
    seen_running: bool,
    reported_gone: bool,
}

impl Pcap {
    pub fn new(config: PcapConfig) -> Pcap {
        Pcap {
            config,
            started: false,
            seen_running: false,
            reported_gone: false,
        }
    }

    fn device_path(&self) -> String {
        format!("{DEVICE_DIR}/{}", self.config.file_name)
    }

    /// The control intent for `action` and its extras; the key, when set, is shown as
    /// `<api key>` in what errors may print.
    fn control(
        &self,
        device: &AdbClient,
        action: &str,
        extras: &[(&str, &str)],
    ) -> Result<(), Error> {
        let mut command = format!("am start -n {CONTROL} -e action {action}");
        for (key, value) in extras {
            command.push_str(&format!(" -e {key} {}", shell_quote(value)));
        }
        let mut shown = command.clone();
        if let Some(key) = &self.config.api_key {
            command.push_str(&format!(" -e api_key {}", shell_quote(key.expose())));
            shown.push_str(" -e api_key <api key>");
        }
        // A transport error may quote the request, key included: said without it.
        let out = run(device, &command, &shown).map_err(|err| match &self.config.api_key {
            Some(key) => Error::Command {
                command: shown.clone(),
                detail: chain(&err).replace(key.expose(), "<api key>"),
            },
            None => err,
        })?;
        // `am start` exits 0 even when the activity is missing on some versions.
        match out.lines().find(|l| l.starts_with("Error")) {
            Some(line) => Err(Error::Command {
                command: shown,
                detail: line.to_string(),
            }),
            None => Ok(()),
        }
    }

    fn running(device: &AdbClient) -> Result<bool, Error> {
        Ok(device.shell(&format!("pidof {PACKAGE}"))?.succeeded())
    }

    fn pull(&self, device: &AdbClient, session: &SessionDir) -> Result<Note, Error> {
        let device_path = self.device_path();
        if device.stat(&device_path)?.is_none() {
            return Ok(artifact_note(
                NAME,
                "no traffic capture: PCAPdroid wrote no file".to_string(),
                json!({"files": [], "error": format!("{device_path} does not exist on the device")}),
            ));
        }
        let data = device.pull(&device_path)?;
        let path = session.write(FOLDER, &self.config.file_name, &data)?;
        let file = session.relative(&path);
        let _ = device.shell(&format!("rm -f {}", shell_quote(&device_path)));
        let size = data.len() as u64;
        Ok(match read_capture(data.as_slice()) {
            Ok(stats) => {
                let mut fields = json!({
                    "files": [file],
                    "size_bytes": size,
                    "packet_count": stats.packets,
                    "format": if stats.pcapng { "pcapng" } else { "pcap" },
                    "truncated": stats.truncated,
                });
                if stats.truncated {
                    fields["error"] = json!("the capture ends inside a packet record (cut off)");
                }
                artifact_note(
                    NAME,
                    format!("{file}: {} packets, {size} bytes", stats.packets),
                    fields,
                )
            }
            Err(err) => artifact_note(
                NAME,
                format!("{file}: {size} bytes, unreadable"),
                json!({"files": [file], "size_bytes": size, "error": err.to_string()}),
            ),
        })
    }
}

impl Integration for Pcap {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&mut self, device: &AdbClient) -> Result<(), Unavailable> {
        let unavailable = |reason: String| Unavailable {
            integration: NAME,
            reason,
        };
        let installed = device
            .shell(&format!("pm path {PACKAGE}"))
            .map_err(|e| unavailable(chain(&e)))?;
        if !installed.succeeded() || !installed.stdout_text().contains("package:") {
            return Err(unavailable(format!(
                "PCAPdroid ({PACKAGE}) is not installed"
            )));
        }
        Ok(())
    }

    fn start(&mut self, device: &AdbClient, _session: &SessionDir) -> Vec<Note> {
        let mut notes = Vec::new();
        let device_path = self.device_path();
        // A file left by an earlier run would pass for this capture.
        let _ = device.shell(&format!("rm -f {}", shell_quote(&device_path)));
        let extras = [
            ("pcap_dump_mode", "pcap_file"),
            ("app_filter", self.config.package.as_str()),
            ("pcap_name", self.config.file_name.as_str()),
        ];
        if let Err(err) = self.control(device, "start", &extras) {
            return vec![warning_note(
                NAME,
                &format!("cannot start PCAPdroid: {}", chain(&err)),
            )];
        }
        self.started = true;
        let deadline = Instant::now() + self.config.start_wait;
        let appeared = loop {
            match device.stat(&device_path) {
                Ok(Some(_)) => break true,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
                _ => break false,
            }
        };
        if !appeared {
            let why = if self.config.api_key.is_some() {
                "PCAPdroid may have refused the API key"
            } else {
                "without an API key PCAPdroid waits for consent on the device"
            };
            notes.push(warning_note(
                NAME,
                &format!(
                    "no capture file after {:.1} s: {why}",
                    self.config.start_wait.as_secs_f64()
                ),
            ));
        }
        self.seen_running = Self::running(device).unwrap_or(false);
        notes
    }

    /// Reports, once, that PCAPdroid's capture stopped during the crawl.
    fn tick(&mut self, device: &AdbClient) -> Vec<Note> {
        if !self.started || self.reported_gone {
            return Vec::new();
        }
        match Self::running(device) {
            Ok(true) => self.seen_running = true,
            Ok(false) if self.seen_running => {
                self.reported_gone = true;
                return vec![warning_note(
                    NAME,
                    "PCAPdroid stopped capturing during the crawl; the capture so far is kept",
                )];
            }
            _ => {}
        }
        Vec::new()
    }

    fn finish(&mut self, device: &AdbClient, session: &SessionDir) -> Vec<Note> {
        if !self.started {
            return Vec::new();
        }
        self.started = false;
        let mut notes = Vec::new();
        if let Err(err) = self.control(device, "stop", &[]) {
            notes.push(warning_note(
                NAME,
                &format!("cannot stop PCAPdroid: {}", chain(&err)),
            ));
        }
        match self.pull(device, session) {
            Ok(note) => notes.push(note),
            Err(err) => notes.push(artifact_note(
                NAME,
                "cannot pull the traffic capture".to_string(),
                json!({"files": [], "error": chain(&err)}),
            )),
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_counted_and_a_cut_record_is_noticed() {
        // The simulator's PCAPdroid capture: a DNS query and its answer.
        let file = crate::sim::pcapdroid::capture("com.example.shop", 1);
        let stats = read_capture(file.as_slice()).unwrap();
        assert_eq!(
            (stats.packets, stats.truncated, stats.pcapng),
            (2, false, false)
        );
        let cut = read_capture(&file[..file.len() - 10]).unwrap();
        assert_eq!((cut.packets, cut.truncated), (1, true));
        let header_only = read_capture(&file[..24]).unwrap();
        assert_eq!(header_only.packets, 0);
    }

    #[test]
    fn what_is_not_a_capture_says_so() {
        assert_eq!(read_capture(&b""[..]), Err(CaptureError::Empty));
        assert_eq!(
            read_capture(&b"GIF89a not a capture at all, really"[..]),
            Err(CaptureError::NotPcap)
        );
    }
}
