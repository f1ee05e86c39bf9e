//! Controlling a running crawl from outside it: `droid-crawl pause|resume|stop` from another
//! terminal writes a command into the run's session folder, where the crawl reads it before
//! each step (and while paused); a signal (SIGINT, SIGTERM) sets the stop flag the binary hands
//! in.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The file in a session folder a command is written to.
pub const CONTROL_FILE: &str = "control";

/// What another process asks a crawl to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Pause,
    Resume,
    Stop,
}

impl Command {
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Pause => "pause",
            Command::Resume => "resume",
            Command::Stop => "stop",
        }
    }

    pub fn parse(text: &str) -> Option<Command> {
        match text.trim() {
            "pause" => Some(Command::Pause),
            "resume" => Some(Command::Resume),
            "stop" => Some(Command::Stop),
            _ => None,
        }
    }
}

/// Asks the crawl whose session folder is `session_dir` to do `command` (written to a
/// temporary file first, then renamed, so the crawl never reads half a command).
pub fn send(session_dir: &Path, command: Command) -> std::io::Result<()> {
    let path = session_dir.join(CONTROL_FILE);
    let partial = session_dir.join(format!(".{CONTROL_FILE}.{}", std::process::id()));
    std::fs::write(&partial, command.as_str())?;
    std::fs::rename(&partial, path)
}

/// A stop flag the first SIGINT or SIGTERM sets (the crawl then ends gracefully, its summary
/// and reports written); a second one ends the process at once (exit 130).
pub fn stop_on_signals() -> std::io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// Why a command could not reach a crawl.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    #[error("no such crawl running in {}", .0.display())]
    NoRun(PathBuf),
    #[error("telling run {run}")]
    Send {
        run: String,
        #[source]
        source: std::io::Error,
    },
}

/// Asks `run` of the crawler.db at `db` (else its newest run still running) to do `command`;
/// the run asked.
pub fn ask(db: &Path, run: Option<&str>, command: Command) -> Result<String, AskError> {
    let store = crate::store::Store::open_existing(db)?;
    let Some((run, dir)) = store.controlled_run(run)? else {
        return Err(AskError::NoRun(db.to_path_buf()));
    };
    send(&dir, command).map_err(|source| AskError::Send {
        run: run.clone(),
        source,
    })?;
    Ok(run)
}

/// What a crawl reads between steps: the control file of its session folder and the stop flag.
#[derive(Debug, Clone)]
pub struct Controls {
    file: Option<PathBuf>,
    stop: Arc<AtomicBool>,
}

impl Controls {
    /// Controls with a stop flag set from outside (a signal handler); no control file until
    /// the session folder exists.
    pub fn new(stop: Arc<AtomicBool>) -> Controls {
        Controls { file: None, stop }
    }

    pub(crate) fn watch(&mut self, session_dir: &Path) {
        self.file = Some(session_dir.join(CONTROL_FILE));
    }

    /// Whether the stop flag is set.
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The command written since the last look, taken (the file is removed); the stop flag
    /// reads as `Stop`.
    pub fn take(&self) -> Option<Command> {
        if self.stop_requested() {
            return Some(Command::Stop);
        }
        let file = self.file.as_ref()?;
        let text = std::fs::read_to_string(file).ok()?;
        let _ = std::fs::remove_file(file);
        Command::parse(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_sent_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let mut controls = Controls::new(Arc::clone(&stop));
        assert_eq!(controls.take(), None);
        controls.watch(dir.path());
        send(dir.path(), Command::Pause).unwrap();
        assert_eq!(controls.take(), Some(Command::Pause));
        assert_eq!(controls.take(), None);
        std::fs::write(dir.path().join(CONTROL_FILE), "dance").unwrap();
        assert_eq!(controls.take(), None, "an unknown word is dropped");
        stop.store(true, Ordering::SeqCst);
        assert_eq!(controls.take(), Some(Command::Stop));
    }
}
