//! The JSON report: the whole [`Report`] as one object, for programs.
//!
//! `run` (id, status, state, device, app, times), `run_stats` (every `run_stats` field under the
//! reference's name, in its order), `screens`, `transitions`, `steps` (each with its actions and
//! the decider's reasoning), `crashes` (grouped by signature: kind, exception, message, frames,
//! trace, and every occurrence with its step, screenshot and repro steps), `coverage`,
//! `problems` and `artifacts` (paths). `docs/report.md` lists every field.

use std::io::Write;

use super::{Error, Report};

/// Version of the JSON report's layout, written as `report_version`.
pub const REPORT_VERSION: u32 = 1;

/// Writes `report` as pretty-printed JSON and a newline.
pub fn write(report: &Report, out: &mut dyn Write) -> Result<(), Error> {
    let mut value = serde_json::to_value(report).map_err(|e| Error::Write(e.into()))?;
    if let Some(object) = value.as_object_mut() {
        let mut ordered = serde_json::Map::new();
        ordered.insert("report_version".into(), REPORT_VERSION.into());
        ordered.extend(std::mem::take(object));
        *object = ordered;
    }
    serde_json::to_writer_pretty(&mut *out, &value).map_err(|e| Error::Write(e.into()))?;
    out.write_all(b"\n").map_err(Error::Write)
}
