//! droid-record's stage: record every event in crawler.db, then pass the line on unchanged.
//!
//! A bad line (not JSON, or a known type with wrong fields) is reported with its number through
//! `on_bad_line` and is neither recorded nor passed on; the rest of the stream is recorded and
//! the caller exits 1 at the end. With `strict`, the first bad line ends the stage (what was
//! read before it is committed). When stdout closes, recording goes on to the end of input:
//! `droid-record | head` still records the whole run.
//!
//! Each step is committed before the stage waits for more input. When input is already waiting
//! (feeding an export, catching up on a backlog), up to [`GROUP_STEPS`] complete steps share a
//! transaction; a step is never split, so a killed writer still leaves only whole steps.

use std::cell::Cell;
use std::io::{self, BufRead, Read, Write};
use std::rc::Rc;

use crate::events::{EventReader, EventWriter, ReadError};
use crate::store::{self, IngestStats, Store};

/// Most complete steps one transaction holds when input is waiting.
pub const GROUP_STEPS: usize = 256;

/// How to record.
#[derive(Debug, Clone, Copy, Default)]
pub struct Config {
    /// Stop at the first bad line instead of going on.
    pub strict: bool,
}

/// What a recording did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    pub ingest: IngestStats,
    /// Lines that were not valid events.
    pub bad_lines: u64,
    /// `strict` stopped the stage at a bad line.
    pub stopped: bool,
}

/// Why recording failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Store(#[from] store::Error),
    #[error("reading input: {0}")]
    Read(#[source] io::Error),
    #[error("writing output: {0}")]
    Write(#[source] io::Error),
}

/// Records `input` into `store` and passes each line on to `output`.
pub fn run(
    cfg: &Config,
    store: &Store,
    input: impl BufRead,
    output: impl Write,
    mut on_bad_line: impl FnMut(&ReadError),
) -> Result<Outcome, Error> {
    let mut ingest = store.ingest().group_commit(GROUP_STEPS);
    let mut writer = Some(EventWriter::new(output));
    let mut outcome = Outcome::default();
    let waiting = Rc::new(Cell::new(false));
    let input = Watched {
        inner: input,
        available: 0,
        waiting: Rc::clone(&waiting),
    };
    for item in EventReader::new(input) {
        let mut line = match item {
            Ok(line) => line,
            Err(ReadError::Io(e)) => return Err(Error::Read(e)),
            Err(bad) => {
                on_bad_line(&bad);
                outcome.bad_lines += 1;
                if cfg.strict {
                    outcome.stopped = true;
                    break;
                }
                continue;
            }
        };
        let pushed = ingest.push(&mut line)?;
        if !waiting.get() {
            // The next read may block: what is complete is written before we wait.
            ingest.commit()?;
        }
        let lines = pushed.announce.iter().chain(std::iter::once(&line.raw));
        for text in lines {
            let Some(out) = writer.as_mut() else { break };
            match out.write_raw(text) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => writer = None,
                Err(e) => return Err(Error::Write(e)),
            }
        }
    }
    outcome.ingest = ingest.finish()?;
    Ok(outcome)
}

/// A reader that knows whether bytes are buffered beyond the line just consumed.
struct Watched<R> {
    inner: R,
    available: usize,
    waiting: Rc<Cell<bool>>,
}

impl<R: BufRead> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.available = 0;
        self.waiting.set(false);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Watched<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let buf = self.inner.fill_buf()?;
        self.available = buf.len();
        Ok(buf)
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount);
        self.available = self.available.saturating_sub(amount);
        self.waiting.set(self.available > 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Action, ActionResult, ActionType, Decision, Event, Observation};

    fn steps(n: u64) -> String {
        let mut out = String::new();
        for step in 1..=n {
            let events = [
                Event::Observation(Box::new(Observation {
                    run_id: Some("r".into()),
                    step: Some(step),
                    ..Observation::default()
                })),
                Event::Decision(Decision {
                    run_id: Some("r".into()),
                    step: Some(step),
                    ts: None,
                    decider: None,
                    actions: vec![Action::new(ActionType::Back)],
                    signup_completed: false,
                    done: false,
                    ai: None,
                    extra: Default::default(),
                }),
                Event::Result(ActionResult {
                    run_id: Some("r".into()),
                    step: Some(step),
                    action_type: "back".into(),
                    success: true,
                    ..ActionResult::default()
                }),
            ];
            for event in events {
                out.push_str(&event.to_line());
                out.push('\n');
            }
        }
        out
    }

    /// Hands out one line per read, like a live pipe.
    struct Trickle<'a> {
        rest: &'a [u8],
        line_end: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.fill_buf()?.read(buf)?;
            self.consume(n);
            Ok(n)
        }
    }

    impl BufRead for Trickle<'_> {
        fn fill_buf(&mut self) -> io::Result<&[u8]> {
            if self.line_end == 0 {
                self.line_end = self
                    .rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(self.rest.len(), |i| i + 1);
            }
            Ok(&self.rest[..self.line_end])
        }

        fn consume(&mut self, amount: usize) {
            self.rest = &self.rest[amount..];
            self.line_end -= amount;
        }
    }

    fn record(input: impl BufRead, output: impl Write) -> Outcome {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        run(&Config::default(), &store, input, output, |_| {}).unwrap()
    }

    #[test]
    fn a_live_stream_commits_every_step_before_waiting() {
        let input = steps(3);
        let outcome = record(
            Trickle {
                rest: input.as_bytes(),
                line_end: 0,
            },
            io::sink(),
        );
        assert_eq!(outcome.ingest.recorded, 9);
        assert_eq!(outcome.ingest.commits, 3);
    }

    #[test]
    fn a_backlog_shares_transactions_without_splitting_steps() {
        let input = steps(300);
        let outcome = record(input.as_bytes(), io::sink());
        assert_eq!(outcome.ingest.recorded, 900);
        assert!(outcome.ingest.commits < 10, "{:?}", outcome.ingest);
    }

    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_stdout_does_not_stop_recording() {
        let input = steps(4);
        let outcome = record(input.as_bytes(), ClosedPipe);
        assert_eq!(outcome.ingest.recorded, 12);
    }
}
