//! Ground truth: one JSON line per screen shown and per input event received.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

/// Writes ground-truth JSON lines (`{"ts":..,"screen":..,"package":..}` per screen shown, and one
/// per input event). Thread-safe, flushes per line.
#[derive(Debug)]
pub struct TruthLog {
    file: Mutex<File>,
}

impl TruthLog {
    pub fn create(path: &Path) -> io::Result<TruthLog> {
        Ok(TruthLog {
            file: Mutex::new(File::create(path)?),
        })
    }

    /// Appends one JSON object as a line.
    pub fn write(&self, line: &serde_json::Value) -> io::Result<()> {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        writeln!(file, "{line}")?;
        file.flush()
    }
}
