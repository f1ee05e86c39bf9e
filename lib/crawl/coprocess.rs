//! A stage run as another program (`droid-crawl --decide-cmd "python my_agent.py"`): a
//! co-process that speaks the event protocol on its stdin and stdout. The driver writes it the
//! lines of a step and reads lines back until the stage's own event for the step has come (an
//! observation, a decision, the results); lines before it (notes) join the stream. A co-process
//! that exits, stops answering within the timeout or writes what is not an event line is an
//! error naming it, never a hang.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::events::{Event, LineError, RawLine};

/// Why a co-process failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoprocessError {
    #[error("cannot start `{command}`")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` is an empty command")]
    Empty { command: String },
    #[error("`{command}` closed its input")]
    Closed {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` exited before answering{}", status.as_deref().map(|s| format!(" ({s})")).unwrap_or_default())]
    Exited {
        command: String,
        status: Option<String>,
    },
    #[error("`{command}` gave no {wanted} within {}s", .after.as_secs_f64())]
    Timeout {
        command: String,
        wanted: &'static str,
        after: Duration,
    },
    #[error("`{command}` wrote a line that is not an event (line {line})")]
    Garbage {
        command: String,
        line: u64,
        #[source]
        source: LineError,
    },
}

/// A running co-process stage.
pub struct Coprocess {
    command: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<(u64, Vec<u8>)>,
    timeout: Duration,
}

impl Coprocess {
    /// Starts `command` (split like a shell would split plain words and quotes, never run by a
    /// shell), its stderr going to ours.
    pub fn spawn(command: &str, timeout: Duration) -> Result<Coprocess, CoprocessError> {
        let words = shell_words(command);
        let Some((program, args)) = words.split_first() else {
            return Err(CoprocessError::Empty {
                command: command.to_string(),
            });
        };
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|source| CoprocessError::Spawn {
                command: command.to_string(),
                source,
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (sender, lines) = mpsc::channel();
        if let Some(stdout) = stdout {
            // A reader of its own, so a silent co-process is a timeout, not a hang.
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stdout);
                let mut number = 0;
                loop {
                    let mut line = Vec::new();
                    match reader.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {
                            number += 1;
                            if sender.send((number, line)).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
        Ok(Coprocess {
            command: command.to_string(),
            child,
            stdin,
            lines,
            timeout,
        })
    }

    /// Writes `input` (one event per line), then reads lines until `done` says the stage's event
    /// for the step has come; returns every event read, in order, that one last. Blank lines
    /// and events of types droid does not know are skipped.
    pub fn exchange(
        &mut self,
        input: &[Event],
        wanted: &'static str,
        mut done: impl FnMut(&Event) -> bool,
    ) -> Result<Vec<Event>, CoprocessError> {
        let closed = |source| CoprocessError::Closed {
            command: self.command.clone(),
            source,
        };
        {
            let stdin = self
                .stdin
                .as_mut()
                .ok_or_else(|| closed(std::io::ErrorKind::BrokenPipe.into()))?;
            for event in input {
                writeln!(stdin, "{}", event.to_line()).map_err(closed)?;
            }
            stdin.flush().map_err(closed)?;
        }
        let deadline = Instant::now() + self.timeout;
        let mut read = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (number, bytes) = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CoprocessError::Timeout {
                        command: self.command.clone(),
                        wanted,
                        after: self.timeout,
                    })
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok().map(|s| s.to_string());
                    return Err(CoprocessError::Exited {
                        command: self.command.clone(),
                        status,
                    });
                }
            };
            let bytes = bytes.strip_suffix(b"\n").unwrap_or(&bytes).to_vec();
            let Some(decoded) = RawLine::new(number, bytes).decode() else {
                continue;
            };
            let line = decoded.map_err(|error| CoprocessError::Garbage {
                command: self.command.clone(),
                line: number,
                source: match error {
                    crate::events::ReadError::Line { reason, .. } => reason,
                    crate::events::ReadError::Io(e) => LineError::Json(e.to_string()),
                },
            })?;
            let Some(event) = line.event else { continue };
            let finished = done(&event);
            read.push(event);
            if finished {
                return Ok(read);
            }
        }
    }
}

impl Drop for Coprocess {
    /// Closes its input (a well-behaved stage ends at end of input), then makes sure it ends.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Splits a command line into words as a shell splits plain words: whitespace separates,
/// single quotes keep everything, double quotes keep everything but `\"` and `\\`, a backslash
/// outside quotes escapes the next character. No expansion of any kind.
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(next @ ('"' | '\\')) => word.push(next),
                            Some(next) => {
                                word.push('\\');
                                word.push(next);
                            }
                            None => word.push('\\'),
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Note, NoteKind};

    #[test]
    fn commands_split_like_plain_shell_words() {
        assert_eq!(
            shell_words(r#"python3 "my agent.py" --name 'a b' x\ y "q\"t""#),
            ["python3", "my agent.py", "--name", "a b", "x y", "q\"t"]
        );
        assert!(shell_words("  ").is_empty());
    }

    fn note(kind: NoteKind) -> Event {
        Event::Note(Note {
            kind,
            ..Note::default()
        })
    }

    #[test]
    fn an_exchange_reads_until_the_stages_event() {
        // `cat` answers each line with itself: the second line is the one waited for.
        let mut cat = Coprocess::spawn("cat", Duration::from_secs(5)).unwrap();
        let input = [note(NoteKind::State), note(NoteKind::Warning)];
        let read = cat
            .exchange(
                &input,
                "warning",
                |e| matches!(e, Event::Note(n) if n.kind == NoteKind::Warning),
            )
            .unwrap();
        assert_eq!(read, input);
    }

    #[test]
    fn a_silent_dead_or_garbled_coprocess_is_an_error() {
        let wanted = |e: &Event| matches!(e, Event::Note(_));
        let mut silent = Coprocess::spawn("sleep 5", Duration::from_millis(200)).unwrap();
        let err = silent.exchange(&[], "note", wanted).unwrap_err();
        assert!(matches!(err, CoprocessError::Timeout { .. }), "{err}");
        let mut dead = Coprocess::spawn("true", Duration::from_secs(5)).unwrap();
        let err = dead.exchange(&[], "note", wanted).unwrap_err();
        assert!(
            matches!(
                err,
                CoprocessError::Exited { .. } | CoprocessError::Closed { .. }
            ),
            "{err}"
        );
        let mut garbled = Coprocess::spawn("echo not json", Duration::from_secs(5)).unwrap();
        let err = garbled.exchange(&[], "note", wanted).unwrap_err();
        assert!(
            matches!(err, CoprocessError::Garbage { line: 1, .. }),
            "{err}"
        );
        assert!(matches!(
            Coprocess::spawn("/nonexistent/stage", Duration::from_secs(1)),
            Err(CoprocessError::Spawn { .. })
        ));
    }
}
