//! Ground truth: one JSON line per screen shown and per input event received, so coverage and
//! screen identity can be measured against what the device really did.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Map, Value};

/// Writes ground-truth JSON lines (`{"ts":..,"screen":..,"package":..}` per screen shown, and one
/// per input event: `{"ts":..,"input":"tap","x":..,"y":..}`, `{"input":"text","text":"..."}` exactly
/// as received, `{"input":"key","key":"KEYCODE_BACK"}`...). Thread-safe, flushes per line.
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

    /// Appends one line: `ts` first, then `fields` in order.
    pub fn record(&self, fields: Vec<(&str, Value)>) -> io::Result<()> {
        let mut line = Map::new();
        line.insert("ts".to_string(), Value::from(crate::events::now_ts()));
        for (key, value) in fields {
            line.insert(key.to_string(), value);
        }
        let text = Value::Object(line).to_string();
        // A writer that panicked mid-line leaves nothing half-written worth protecting.
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        writeln!(file, "{text}")?;
        file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_one_flushed_json_line_per_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("truth.jsonl");
        let log = TruthLog::create(&path).unwrap();
        log.record(vec![("input", "tap".into()), ("x", 5.into())])
            .unwrap();
        log.record(vec![("screen", "home".into())]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["input"], "tap");
        assert_eq!(lines[0]["x"], 5);
        assert!(lines[0]["ts"].as_str().unwrap().ends_with('Z'));
        assert_eq!(lines[1]["screen"], "home");
    }
}
