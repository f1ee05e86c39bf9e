//! The filter loop every stage runs on (droid-hash, droid-decide, droid-act, droid-record).
//!
//! It reads event lines, decoded on a second thread ahead of the line being handled (as far as
//! the input already holds them, so a live stream is handled line by line), hands each to the
//! stage, and writes what the stage says, flushing every line. One policy for all stages:
//!
//! - **A bad line** (not JSON, a known type with wrong fields, a decision of no action or more
//!   than twelve): reported at once as `line N: reason`, counted, nothing written for it; the
//!   loop goes on with the next line (or stops, when strict). The binary exits 1 at the end.
//! - **A closed output** (the reader went away: `droid-x | head`): a normal end. The stage stops,
//!   unless its work is its own ([`Filter::works_without_output`]: droid-record still records
//!   the rest of the run).
//! - **Waiting input**: before a read that may block, the stage is told ([`Filter::idle`]), so
//!   droid-record commits what is complete while a live pipe waits for the next step. What a
//!   line produced is written after that: a line passed on is already recorded.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io::{self, BufRead, Read, Write};
use std::rc::Rc;
use std::sync::mpsc::{self, Receiver, Sender};

use crate::events::{Event, EventReader, EventWriter, Line, RawLine, ReadError};

/// A stage the loop drives.
pub trait Filter {
    type Error: std::error::Error + Send + Sync + 'static;

    /// Handles one line: writes through `out` what follows from it, the line itself first when
    /// the stage passes it on ([`Output::pass`]).
    fn line(&mut self, line: Line, out: &mut Output<'_>) -> Result<(), Self::Error>;

    /// The next read may block: a chance to make what is complete durable.
    fn idle(&mut self, _out: &mut Output<'_>) -> Result<(), Self::Error> {
        Ok(())
    }

    /// The input ended (or the output closed and the stage stops).
    fn finish(&mut self, _out: &mut Output<'_>) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Whether the stage reads on to the end of its input once nobody reads its output.
    fn works_without_output(&self) -> bool {
        false
    }
}

/// How the loop ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Lines read (blank ones included).
    pub lines: u64,
    /// Lines that were not valid events.
    pub bad_lines: u64,
    /// Problems the stage reported about lines it handled (a screenshot that could not be
    /// hashed, a device that could not be reached).
    pub problems: u64,
    /// The reader of the output went away.
    pub output_closed: bool,
    /// A strict loop stopped at a bad line.
    pub stopped: bool,
}

impl Outcome {
    /// Whether something went wrong that the exit status should say (exit 1): a bad line or a
    /// problem reported.
    pub fn failed(&self) -> bool {
        self.bad_lines > 0 || self.problems > 0
    }
}

/// Why the loop could not go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError<E: std::error::Error + 'static> {
    #[error("reading input")]
    Read(#[source] io::Error),
    #[error("writing output")]
    Write(#[source] io::Error),
    #[error(transparent)]
    Stage(E),
}

/// Where a stage writes its lines and tells people about problems.
pub struct Output<'a> {
    writer: EventWriter<&'a mut dyn Write>,
    /// Lines written for the line being handled, not yet on the output.
    pending: Vec<String>,
    say: &'a mut dyn FnMut(&str),
    /// The number of the line being handled.
    line: u64,
    closed: bool,
    failed: Option<io::Error>,
    problems: u64,
}

impl<'a> Output<'a> {
    fn new(writer: &'a mut dyn Write, say: &'a mut dyn FnMut(&str)) -> Output<'a> {
        Output {
            writer: EventWriter::new(writer),
            pending: Vec::new(),
            say,
            line: 0,
            closed: false,
            failed: None,
            problems: 0,
        }
    }

    /// Passes the line being handled on, exactly as it came.
    pub fn pass(&mut self, line: &Line) {
        self.raw(&line.raw);
    }

    /// Writes a line exactly as given.
    pub fn raw(&mut self, text: &str) {
        if !self.closed {
            self.pending.push(text.to_string());
        }
    }

    /// Puts the lines written so far on the output.
    fn flush(&mut self) {
        for text in std::mem::take(&mut self.pending) {
            if self.closed || self.failed.is_some() {
                return;
            }
            match self.writer.write_raw(&text) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => self.closed = true,
                Err(e) => self.failed = Some(e),
            }
        }
    }

    /// Writes an event.
    pub fn event(&mut self, event: &Event) {
        self.raw(&event.to_line());
    }

    /// Reports a problem with the line being handled (`line N: problem`); the binary exits 1.
    pub fn problem(&mut self, problem: &dyn std::fmt::Display) {
        self.problems += 1;
        self.tell(problem);
    }

    /// Tells people something about the line being handled (`line N: message`), with no
    /// bearing on the exit status.
    pub fn tell(&mut self, message: &dyn std::fmt::Display) {
        match self.line {
            0 => (self.say)(&message.to_string()),
            line => (self.say)(&format!("line {line}: {message}")),
        }
    }

    /// Whether the reader of the output went away.
    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

/// An error with its causes, as people read it: `what: why: deeper why`. A cause whose words
/// are already said (an error that quotes its source, as some crates' errors do) is left out, so
/// each cause is printed once.
pub struct Chain<'e>(pub &'e (dyn std::error::Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(error) = cause {
            let line = error.to_string();
            if !text.contains(&line) {
                text.push_str(": ");
                text.push_str(&line);
            }
            cause = error.source();
        }
        f.write_str(&text)
    }
}

/// Most lines read ahead of the one being handled.
const AHEAD_LINES: usize = 64;
/// Most bytes of lines read ahead of the one being handled.
const AHEAD_BYTES: usize = 8 * 1024 * 1024;

/// Runs `stage` over `input`, writing to `output`; people's messages (`line N: reason`) go to
/// `say` as they happen. With `strict`, the first bad line ends the loop.
pub fn run<F: Filter>(
    stage: &mut F,
    input: impl BufRead,
    mut output: impl Write,
    strict: bool,
    say: &mut dyn FnMut(&str),
) -> Result<Outcome, FilterError<F::Error>> {
    let (to_decoder, raw_lines) = mpsc::channel();
    let (decoded, from_decoder) = mpsc::channel();
    let mut out = Output::new(&mut output, say);
    std::thread::scope(|scope| {
        scope.spawn(move || decode(raw_lines, decoded));
        let lines = Lines::new(input, to_decoder, from_decoder);
        drive(stage, lines, &mut out, strict)
    })
}

fn drive<F: Filter>(
    stage: &mut F,
    mut lines: Lines<impl BufRead>,
    out: &mut Output<'_>,
    strict: bool,
) -> Result<Outcome, FilterError<F::Error>> {
    let mut outcome = Outcome::default();
    let keep_working = stage.works_without_output();
    while let Some(item) = lines.next() {
        outcome.lines = lines.read;
        match item {
            Ok(line) => {
                out.line = line.number;
                let handled = stage.line(line, out);
                // What the stage wrote before it failed (a note saying why) still goes out.
                if let Err(e) = handled {
                    out.flush();
                    return Err(FilterError::Stage(e));
                }
            }
            Err(ReadError::Io(e)) => return Err(FilterError::Read(e)),
            Err(ReadError::Line { line, reason }) => {
                outcome.bad_lines += 1;
                out.line = line;
                out.tell(&reason);
                if strict {
                    outcome.stopped = true;
                    break;
                }
            }
        }
        out.line = 0;
        if !lines.ready() {
            stage.idle(out).map_err(FilterError::Stage)?;
        }
        out.flush();
        if let Some(e) = out.failed.take() {
            return Err(FilterError::Write(e));
        }
        if out.closed && !keep_working {
            break;
        }
    }
    stage.finish(out).map_err(FilterError::Stage)?;
    out.flush();
    if let Some(e) = out.failed.take() {
        return Err(FilterError::Write(e));
    }
    outcome.problems = out.problems;
    outcome.output_closed = out.closed;
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
/// holds are read ahead: a read that may block is made only when nothing is in flight.
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
    /// Lines taken back from the decoder so far (blank ones included).
    read: u64,
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
            read: 0,
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
            self.read += 1;
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

    #[derive(Debug, thiserror::Error)]
    enum Layered {
        #[error("cannot save {0}")]
        Outer(String, #[source] std::io::Error),
        /// Quotes its source, as some crates' errors do.
        #[error("request failed: {0}")]
        Quoting(#[source] std::io::Error),
    }

    #[test]
    fn a_chain_says_each_cause_once() {
        let io = || std::io::Error::other("disk full");
        let outer = Layered::Outer("a.db".into(), io());
        assert_eq!(Chain(&outer).to_string(), "cannot save a.db: disk full");
        let quoting = Layered::Quoting(io());
        assert_eq!(Chain(&quoting).to_string(), "request failed: disk full");
    }

    /// Passes every line on, and counts idle calls.
    #[derive(Default)]
    struct Echo {
        idle: u32,
        finished: bool,
        keep_working: bool,
    }

    impl Filter for Echo {
        type Error = std::convert::Infallible;

        fn line(&mut self, line: Line, out: &mut Output<'_>) -> Result<(), Self::Error> {
            out.pass(&line);
            if line.raw.contains("\"odd\"") {
                out.problem(&"an odd line");
            }
            Ok(())
        }

        fn idle(&mut self, _: &mut Output<'_>) -> Result<(), Self::Error> {
            self.idle += 1;
            Ok(())
        }

        fn finish(&mut self, _: &mut Output<'_>) -> Result<(), Self::Error> {
            self.finished = true;
            Ok(())
        }

        fn works_without_output(&self) -> bool {
            self.keep_working
        }
    }

    const NOTE: &str = r#"{"type":"note","v":1,"kind":"state"}"#;

    fn run_echo(stage: &mut Echo, input: &str, output: impl Write) -> (Outcome, Vec<String>) {
        let mut said = Vec::new();
        let outcome = run(stage, input.as_bytes(), output, false, &mut |m| {
            said.push(m.to_string())
        })
        .unwrap();
        (outcome, said)
    }

    #[test]
    fn bad_lines_and_problems_are_said_at_once_with_their_numbers() {
        let input = format!(
            "{NOTE}\nnot json\n\n{}\n{NOTE}\n",
            NOTE.replace("state", "odd")
        );
        let mut out = Vec::new();
        let (outcome, said) = run_echo(&mut Echo::default(), &input, &mut out);
        assert_eq!(
            said,
            [
                "line 2: not valid JSON: expected ident at line 1 column 2",
                "line 4: an odd line"
            ]
        );
        assert_eq!(
            (outcome.lines, outcome.bad_lines, outcome.problems),
            (5, 1, 1)
        );
        assert!(outcome.failed());
        let written = String::from_utf8(out).unwrap();
        assert_eq!(written.lines().count(), 3);
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
    fn a_closed_output_ends_the_loop_unless_the_stage_works_for_itself() {
        let input = format!("{NOTE}\n{NOTE}\n{NOTE}\n");
        let mut stops = Echo::default();
        let (outcome, _) = run_echo(&mut stops, &input, ClosedPipe);
        assert!(outcome.output_closed && stops.finished);
        assert_eq!(outcome.lines, 1);
        let mut works = Echo {
            keep_working: true,
            ..Echo::default()
        };
        let (outcome, _) = run_echo(&mut works, &input, ClosedPipe);
        assert_eq!(outcome.lines, 3);
    }

    #[test]
    fn a_strict_loop_stops_at_the_first_bad_line() {
        let input = format!("{NOTE}\n[1]\n{NOTE}\n");
        let mut out = Vec::new();
        let outcome = run(
            &mut Echo::default(),
            input.as_bytes(),
            &mut out,
            true,
            &mut |_| {},
        )
        .unwrap();
        assert!(outcome.stopped);
        assert_eq!(String::from_utf8(out).unwrap(), format!("{NOTE}\n"));
    }
}
