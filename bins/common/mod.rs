//! What every droid binary's `main` shares: how a run ends.

use std::io;
use std::process::ExitCode;

/// Turns a binary's outcome into its exit status: errors are printed once as
/// `BIN: error: ...` with their context chain and exit 1; a reader that stopped listening
/// (`droid-x | head`) is a normal end, exit 0.
pub fn finish(bin: &str, outcome: anyhow::Result<ExitCode>) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{bin}: error: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
