//! What a crawl leaves behind besides screenshots and the database: a video of the session
//! ([`video`]), the app's network traffic ([`pcap`], through PCAPdroid), a static security
//! analysis ([`mobsf`]) and activity coverage against what the APK declares ([`activities`]).
//!
//! Every integration is optional and follows one lifecycle, [`Integration`], driven by the
//! crawl:
//!
//! 1. [`Integration::check`] before the crawl: `Err(Unavailable)` means the crawl warns and goes
//!    on without it (a tool missing, a server unreachable).
//! 2. [`Integration::start`] when the crawl starts.
//! 3. [`Integration::tick`] between steps: cheap; reports failures as they happen.
//!    [`Integration::observed`] with every observation (activity coverage).
//! 4. [`Integration::finish`] when the crawl ends: files pulled into the session folder.
//!
//! Nothing here panics or aborts a crawl: every failure, at any stage, comes back as a
//! [`Note`] of kind `warning` (something did not work, the crawl goes on) or an `artifact` note
//! whose `data.error` says what went wrong with a file (see `docs/integrations.md` for every
//! `data` shape). Notes come without `run_id` and `step`: the driver stamps them.

pub mod activities;
pub mod mobsf;
pub mod pcap;
pub mod video;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::adb::{AdbClient, AdbError, ServerConfig};
use crate::events::{Note, NoteKind, Observation};

/// An integration cannot be used for this crawl: the crawl warns and goes on without it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{integration} unavailable: {reason}")]
pub struct Unavailable {
    /// The integration's name: `video`, `pcap`, `mobsf`, `activities`.
    pub integration: &'static str,
    pub reason: String,
}

/// What can go wrong inside an integration (reported in notes, never returned to the crawl).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Adb(#[from] AdbError),
    #[error("`{command}` failed: {detail}")]
    Command { command: String, detail: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The lifecycle every integration follows (see the module documentation). `device` is the
/// crawl's device; an integration that needs long-running device commands opens its own
/// connections to the same server.
pub trait Integration: Send {
    /// `video`, `pcap`, `mobsf` or `activities`: the `data.artifact` of its notes.
    fn name(&self) -> &'static str;
    /// Pre-crawl validation.
    fn check(&mut self, device: &AdbClient) -> Result<(), Unavailable>;
    /// The crawl starts.
    fn start(&mut self, device: &AdbClient, session: &SessionDir) -> Vec<Note>;
    /// Between steps.
    fn tick(&mut self, _device: &AdbClient) -> Vec<Note> {
        Vec::new()
    }
    /// The crawl observed the device (every observation, in order).
    fn observed(&mut self, _observation: &Observation) {}
    /// The crawl ended (by its limits, the user, or an error): files into the session folder.
    fn finish(&mut self, device: &AdbClient, session: &SessionDir) -> Vec<Note>;
}

/// A crawl's session folder (`output_data/{device}_{package}_{DDMM_HHMM}/`) and the
/// integrations' folders in it. Paths in notes are relative to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionDir {
    root: PathBuf,
}

impl SessionDir {
    pub fn new(root: impl Into<PathBuf>) -> SessionDir {
        SessionDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `video/`, `traffic_captures/`, `extracted_apk/` or `mobsf_scan_results/`, created.
    pub fn folder(&self, name: &str) -> Result<PathBuf, Error> {
        let dir = self.root.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(dir)
    }

    /// `path` relative to the session folder (as notes carry it), or as it is when outside.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// Writes a file into one of the folders; its path.
    fn write(&self, folder: &str, name: &str, data: &[u8]) -> Result<PathBuf, Error> {
        let path = self.folder(folder)?.join(name);
        std::fs::write(&path, data).map_err(|e| Error::io(&path, e))?;
        Ok(path)
    }
}

/// A note of kind `artifact`: `data` is `{"artifact": NAME, ...fields}`.
pub fn artifact_note(name: &str, message: String, fields: Value) -> Note {
    let mut data = json!({ "artifact": name });
    if let (Some(data), Value::Object(fields)) = (data.as_object_mut(), fields) {
        data.extend(fields);
    }
    Note::now(NoteKind::Artifact, message).with_data(Some(data))
}

/// Whether `note` is an [`artifact_note`] saying its integration failed (its `data` holds an
/// `error`).
pub fn artifact_failed(note: &Note) -> bool {
    note.kind == NoteKind::Artifact
        && note
            .data
            .as_ref()
            .is_some_and(|data| data.get("error").is_some())
}

/// A note of kind `warning` from an integration: `data` is `{"integration": NAME, "error": ...}`.
pub fn warning_note(name: &str, error: &str) -> Note {
    Note::now(NoteKind::Warning, format!("{name}: {error}"))
        .with_data(Some(json!({ "integration": name, "error": error })))
}

/// A note of kind `warning` saying an integration is unavailable for this crawl.
pub fn unavailable_note(unavailable: &Unavailable) -> Note {
    warning_note(unavailable.integration, &unavailable.reason)
}

/// Runs a device command and insists on exit status 0, its first line of output as the
/// failure's detail. `shown` is the command as errors may name it (without secrets).
fn run(device: &AdbClient, command: &str, shown: &str) -> Result<String, Error> {
    let output = device.shell(command)?;
    let stdout = output.stdout_text();
    if output.succeeded() {
        return Ok(stdout);
    }
    let stderr = output.stderr_text();
    let detail = stderr
        .lines()
        .chain(stdout.lines())
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output")
        .trim()
        .to_string();
    Err(Error::Command {
        command: shown.to_string(),
        detail: match output.exit_code {
            Some(code) => format!("exit {code}: {detail}"),
            None => detail,
        },
    })
}

/// A second connection to the crawl's device whose reads may wait `timeout` (a command that
/// runs for minutes, such as screenrecord), never starting a server.
fn long_connection(device: &AdbClient, timeout: std::time::Duration) -> Result<AdbClient, Error> {
    let config = ServerConfig {
        timeout,
        start_server: false,
        ..device.server().config().clone()
    };
    Ok(AdbClient::connect(config, Some(device.serial()))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_note_with_an_error_says_its_integration_failed() {
        let failed = artifact_note("mobsf", "no scan".into(), json!({"error": "HTTP 500"}));
        let done = artifact_note("mobsf", "scanned".into(), json!({"files": ["r.json"]}));
        assert!(artifact_failed(&failed));
        assert!(!artifact_failed(&done));
        assert!(!artifact_failed(&warning_note("mobsf", "down")));
    }
}
