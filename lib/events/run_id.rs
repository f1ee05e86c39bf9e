//! Run ids: how one is made, and the check every run id entering droid (an event, a command
//! line) passes, so that it can name a file or a folder.

/// Longest run id accepted.
pub const MAX_RUN_ID_CHARS: usize = 128;

/// Why a run id is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunIdError {
    #[error("empty run_id")]
    Empty,
    #[error("run_id longer than {MAX_RUN_ID_CHARS} characters")]
    TooLong,
    #[error("run_id {0:?} has a character other than ASCII letters, digits, '-', '_', '.', ':'")]
    Character(String),
    #[error("run_id {0:?} starts with '.' or holds \"..\"")]
    Dots(String),
}

/// Checks a run id wherever one enters (events, command lines): 1 to [`MAX_RUN_ID_CHARS`]
/// ASCII letters, digits, `-`, `_`, `.`, `:`, not starting with `.` and without `..`, so it can
/// name a file or folder without ever reaching outside it.
pub fn check_run_id(run: &str) -> Result<(), RunIdError> {
    let shown = || run.chars().take(40).collect::<String>();
    if run.is_empty() {
        return Err(RunIdError::Empty);
    }
    if run.len() > MAX_RUN_ID_CHARS {
        return Err(RunIdError::TooLong);
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':');
    if !run.chars().all(allowed) {
        return Err(RunIdError::Character(shown()));
    }
    if run.starts_with('.') || run.contains("..") {
        return Err(RunIdError::Dots(shown()));
    }
    Ok(())
}

/// A new run id, `run-20261125T181502-3fa9c1`: sortable by time, unique enough for one machine.
pub fn new_run_id() -> String {
    format!(
        "run-{}-{:06x}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S"),
        rand::random::<u32>() & 0xff_ffff
    )
}

/// [`check_run_id`] as a command-line value parser: the run id, or why it is refused.
pub fn parse_run_id(run: &str) -> Result<String, RunIdError> {
    check_run_id(run).map(|()| run.to_string())
}
