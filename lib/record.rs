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
use std::collections::VecDeque;
use std::io::{self, BufRead, Read, Write};
use std::rc::Rc;
use std::sync::mpsc::{self, Receiver, Sender};

use crate::events::{EventReader, EventWriter, Line, RawLine, ReadError};
use crate::store::{self, IngestStats, Store};

/// Most complete steps one transaction holds when input is waiting (fewer when their events
/// pass 16 MiB).
pub const GROUP_STEPS: usize = 1024;

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

/// Most lines read ahead of the one being recorded.
const AHEAD_LINES: usize = 64;
/// Most bytes of lines read ahead of the one being recorded.
const AHEAD_BYTES: usize = 8 * 1024 * 1024;

/// Records `input` into `store` and passes each line on to `output`.
///
/// Lines are read on this thread and decoded on a second one, so decoding the next lines
/// overlaps writing this one (decoding was a fifth of an ingest's time).
pub fn run(
    cfg: &Config,
    store: &Store,
    input: impl BufRead,
    output: impl Write,
    on_bad_line: impl FnMut(&ReadError),
) -> Result<Outcome, Error> {
    let (to_decoder, raw_lines) = mpsc::channel();
    let (decoded, from_decoder) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(move || decode(raw_lines, decoded));
        let lines = Lines::new(input, to_decoder, from_decoder);
        record(cfg, store, lines, output, on_bad_line)
    })
}

fn record(
    cfg: &Config,
    store: &Store,
    mut lines: Lines<impl BufRead>,
    output: impl Write,
    mut on_bad_line: impl FnMut(&ReadError),
) -> Result<Outcome, Error> {
    let mut ingest = store.ingest().group_commit(GROUP_STEPS);
    let mut writer = Some(EventWriter::new(output));
    let mut outcome = Outcome::default();
    while let Some(item) = lines.next() {
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
        if !lines.ready() {
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

/// The decoder thread: decodes lines in the order they come.
fn decode(raw_lines: Receiver<RawLine>, decoded: Sender<Option<Result<Line, ReadError>>>) {
    for raw in raw_lines {
        if decoded.send(raw.decode()).is_err() {
            return;
        }
    }
}

/// The input's lines in order, decoded by the decoder thread. Only lines the input already
/// holds are read ahead: a read that may block is made only when nothing is in flight, so a
/// live stream is recorded (and committed) line by line as before.
struct Lines<R> {
    reader: EventReader<Watched<R>>,
    waiting: Rc<Cell<bool>>,
    to_decoder: Sender<RawLine>,
    from_decoder: Receiver<Option<Result<Line, ReadError>>>,
    /// Sizes of the lines sent to the decoder and not taken back yet, oldest first.
    in_flight: VecDeque<usize>,
    in_flight_bytes: usize,
    ended: bool,
    /// A read error met while reading ahead, reported after the lines before it.
    failed: Option<io::Error>,
}

impl<R: BufRead> Lines<R> {
    fn new(
        input: R,
        to_decoder: Sender<RawLine>,
        from_decoder: Receiver<Option<Result<Line, ReadError>>>,
    ) -> Self {
        let waiting = Rc::new(Cell::new(false));
        let input = Watched {
            inner: input,
            available: 0,
            waiting: Rc::clone(&waiting),
        };
        Lines {
            reader: EventReader::new(input),
            waiting,
            to_decoder,
            from_decoder,
            in_flight: VecDeque::new(),
            in_flight_bytes: 0,
            ended: false,
            failed: None,
        }
    }

    /// The next line, as [`EventReader`] would give it.
    fn next(&mut self) -> Option<Result<Line, ReadError>> {
        loop {
            self.read_ahead();
            let Some(size) = self.in_flight.pop_front() else {
                return self.failed.take().map(|e| Err(ReadError::Io(e)));
            };
            self.in_flight_bytes -= size;
            // Only a panic closes the decoder's channel early; the scope re-raises it.
            if let Some(item) = self.from_decoder.recv().ok()? {
                return Some(item);
            }
        }
    }

    /// Whether the next line can be had without waiting for input.
    fn ready(&self) -> bool {
        !self.in_flight.is_empty() || self.waiting.get()
    }

    /// Sends lines to the decoder: one whatever it costs when none is in flight, more while
    /// the input holds them and the bounds allow.
    fn read_ahead(&mut self) {
        while !self.ended && self.failed.is_none() {
            let more = self.in_flight.is_empty()
                || (self.waiting.get()
                    && self.in_flight.len() < AHEAD_LINES
                    && self.in_flight_bytes < AHEAD_BYTES);
            if !more {
                return;
            }
            match self.reader.next_raw() {
                None => self.ended = true,
                Some(Err(e)) => self.failed = Some(e),
                Some(Ok(raw)) => {
                    let size = raw.size();
                    if self.to_decoder.send(raw).is_err() {
                        self.ended = true;
                        return;
                    }
                    self.in_flight.push_back(size);
                    self.in_flight_bytes += size;
                }
            }
        }
    }
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
        on_bad_line: impl FnMut(&ReadError),
    ) -> Result<Outcome, Error> {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        run(&Config::default(), &store, input, output, on_bad_line)
    }

    fn record(input: impl BufRead, output: impl Write) -> Outcome {
        try_record(input, output, |_| {}).unwrap()
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
        let result = try_record(FailsAfter(input.as_bytes()), &mut out, |_| {});
        assert!(matches!(result, Err(Error::Read(_))), "{result:?}");
        assert_eq!(String::from_utf8(out).unwrap(), input);
    }

    #[test]
    fn bad_and_blank_lines_in_a_backlog_keep_their_numbers_and_order() {
        let mut input = steps(3);
        input.insert_str(0, "\nnot json\n");
        let mut bad = Vec::new();
        let mut out = Vec::new();
        let outcome = try_record(input.as_bytes(), &mut out, |e| bad.push(e.to_string())).unwrap();
        assert_eq!(bad.len(), 1);
        assert!(bad[0].starts_with("line 2:"), "{bad:?}");
        assert_eq!(outcome.ingest.recorded, 9);
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
        assert_eq!(outcome.ingest.recorded, 12);
    }
}
