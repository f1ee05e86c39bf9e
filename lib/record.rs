//! droid-record's stage: record every event in crawler.db, then pass the line on unchanged.
//!
//! A bad line (not JSON, or a known type with wrong fields) is reported with its number and is
//! neither recorded nor passed on; the rest of the stream is recorded and the binary exits 1 at
//! the end (with `--strict`, the first bad line ends the stage; what was read before it is
//! committed). When stdout closes, recording goes on to the end of input: `droid-record | head`
//! still records the whole run.
//!
//! Each step is committed before the stage waits for more input. When input is already waiting
//! (feeding an export, catching up on a backlog), up to [`GROUP_STEPS`] complete steps share a
//! transaction; a step is never split, so a killed writer still leaves only whole steps.

use crate::events::Line;
use crate::filter::{Filter, Output};
use crate::store::{self, Ingest, IngestStats, Store};

/// Most complete steps one transaction holds when input is waiting (fewer when their events
/// pass 16 MiB).
pub const GROUP_STEPS: usize = 1024;

/// The record stage over one store.
pub struct Stage<'s> {
    ingest: Option<Ingest<'s>>,
    stats: IngestStats,
}

impl<'s> Stage<'s> {
    pub fn new(store: &'s Store) -> Stage<'s> {
        Stage {
            ingest: Some(store.ingest().group_commit(GROUP_STEPS)),
            stats: IngestStats::default(),
        }
    }

    /// What was recorded (complete once the loop finished).
    pub fn stats(&self) -> IngestStats {
        self.stats
    }

    fn ingest(&mut self) -> &mut Ingest<'s> {
        self.ingest
            .as_mut()
            .expect("an ingest until the stage finishes")
    }
}

impl Filter for Stage<'_> {
    type Error = store::Error;

    /// Records the line (its run announced first when droid-record opened one for it), then
    /// passes it on.
    fn line(&mut self, mut line: Line, out: &mut Output<'_>) -> Result<(), store::Error> {
        let pushed = self.ingest().push(&mut line)?;
        if let Some(announce) = &pushed.announce {
            out.raw(announce);
        }
        out.pass(&line);
        Ok(())
    }

    /// The next read may block: what is complete is written before we wait.
    fn idle(&mut self, _: &mut Output<'_>) -> Result<(), store::Error> {
        self.ingest().commit()
    }

    fn finish(&mut self, _: &mut Output<'_>) -> Result<(), store::Error> {
        if let Some(ingest) = self.ingest.take() {
            self.stats = ingest.finish()?;
        }
        Ok(())
    }

    fn works_without_output(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Action, ActionResult, ActionType, Decision, Event, Observation};
    use crate::filter;
    use std::io::{self, BufRead, Read, Write};

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
                    ..Decision::new(vec![Action::new(ActionType::Back)])
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

    /// `Read` for a test reader whose logic is in its `BufRead`.
    fn read_buffered(reader: &mut impl BufRead, buf: &mut [u8]) -> io::Result<usize> {
        let n = reader.fill_buf()?.read(buf)?;
        reader.consume(n);
        Ok(n)
    }

    /// Hands out one line per read, like a live pipe.
    struct Trickle<'a> {
        rest: &'a [u8],
        line_end: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            read_buffered(self, buf)
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

    fn try_record(
        input: impl BufRead,
        output: impl Write,
        say: &mut dyn FnMut(&str),
    ) -> Result<(IngestStats, filter::Outcome), filter::FilterError<store::Error>> {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        let mut stage = Stage::new(&store);
        let outcome = filter::run(&mut stage, input, output, false, say)?;
        Ok((stage.stats(), outcome))
    }

    fn record(input: impl BufRead, output: impl Write) -> IngestStats {
        try_record(input, output, &mut |_| {}).unwrap().0
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
        assert_eq!(outcome.recorded, 9);
        assert_eq!(outcome.commits, 3);
    }

    #[test]
    fn a_backlog_shares_transactions_without_splitting_steps() {
        let input = steps(300);
        let outcome = record(input.as_bytes(), io::sink());
        assert_eq!(outcome.recorded, 900);
        assert!(outcome.commits < 10, "{outcome:?}");
    }

    /// All of `lines`, then a failing read.
    struct FailsAfter<'a>(&'a [u8]);

    impl Read for FailsAfter<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            read_buffered(self, buf)
        }
    }

    impl BufRead for FailsAfter<'_> {
        fn fill_buf(&mut self) -> io::Result<&[u8]> {
            if self.0.is_empty() {
                return Err(io::Error::other("gone"));
            }
            Ok(self.0)
        }

        fn consume(&mut self, amount: usize) {
            self.0 = &self.0[amount..];
        }
    }

    #[test]
    fn a_read_error_comes_after_the_lines_read_before_it() {
        let input = steps(3);
        let mut out = Vec::new();
        let result = try_record(FailsAfter(input.as_bytes()), &mut out, &mut |_| {});
        assert!(
            matches!(result, Err(filter::FilterError::Read(_))),
            "{result:?}"
        );
        assert_eq!(String::from_utf8(out).unwrap(), input);
    }

    #[test]
    fn bad_and_blank_lines_in_a_backlog_keep_their_numbers_and_order() {
        let mut input = steps(3);
        input.insert_str(0, "\nnot json\n");
        let mut bad = Vec::new();
        let mut out = Vec::new();
        let (stats, outcome) =
            try_record(input.as_bytes(), &mut out, &mut |e| bad.push(e.to_string())).unwrap();
        assert_eq!((bad.len(), outcome.bad_lines), (1, 1));
        assert!(bad[0].starts_with("line 2:"), "{bad:?}");
        assert_eq!(stats.recorded, 9);
        assert_eq!(String::from_utf8(out).unwrap(), steps(3));
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
        assert_eq!(outcome.recorded, 12);
    }
}
