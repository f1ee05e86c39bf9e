//! The memory of a one-shot `droid-decide --db crawler.db --run RUN`: the run's recorded events
//! (crawler.db's `run_events`, the stream `droid-record` wrote), which a decide stage takes in
//! through the code a long-running stage ran on them (see [`super::Stage`]), so a shell loop that
//! starts one decide per step decides as a long-running one.
//!
//! The events are read rather than the projected tables because what the heuristic learned
//! besides the graph (fills, retries, form options, its tie-break generator) is no table's:
//! taking the same events in again gives exactly the state a long-running stage had.

use std::path::{Path, PathBuf};

use crate::events::{Event, EventReader, ReadError};
use crate::store::{self, Store};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{path}")]
    Store {
        path: PathBuf,
        #[source]
        source: store::Error,
    },
    #[error("{path}: run {run}'s recorded events")]
    Event {
        path: PathBuf,
        run: String,
        #[source]
        source: ReadError,
    },
}

/// The run the first event of `input` (event lines) that names one belongs to: what a one-shot
/// `droid-decide --db` without `--run` resumes.
pub fn run_named(input: &[u8]) -> Option<String> {
    EventReader::new(input)
        .filter_map(Result::ok)
        .find_map(|line| line.event?.run_id().map(str::to_string))
}

/// The events recorded for `run` in the crawler.db at `path`, in order; none when the run is not
/// recorded yet (the first step of a loop).
pub fn history(path: &Path, run: &str) -> Result<Vec<Event>, Error> {
    let store_err = |source| Error::Store {
        path: path.to_path_buf(),
        source,
    };
    let store = Store::open(path).map_err(store_err)?;
    let mut lines = Vec::new();
    match store.export(run, &mut lines) {
        Ok(_) => {}
        Err(store::Error::NoRun(_)) => return Ok(Vec::new()),
        Err(source) => return Err(store_err(source)),
    }
    let mut events = Vec::new();
    for line in EventReader::new(lines.as_slice()) {
        let line = line.map_err(|source| Error::Event {
            path: path.to_path_buf(),
            run: run.to_string(),
            source,
        })?;
        events.extend(line.event);
    }
    Ok(events)
}
