//! What every droid binary's `main` shares: how a run ends.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use droid::config::{self, ConfigCommand, UserConfig};
use droid::filter::{self, Filter};
use droid::terminal::clean;

pub mod console;

// glibc's allocator spent about a quarter of droid-record's ingest in malloc and free (events are
// decoded on one thread and dropped on another); mimalloc is built for that pattern. It is the
// binaries' choice: a program linking the library keeps its own allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Turns a binary's outcome into its exit status: errors are printed once as
/// `BIN: error: ...` with their context chain and exit 1; a reader that stopped listening
/// (`droid-x | head`) is a normal end, exit 0.
pub fn finish(bin: &str, outcome: anyhow::Result<ExitCode>) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            say(bin, &format!("error: {err:#}"));
            ExitCode::from(1)
        }
    }
}

/// A message for people on stderr as `BIN: message`. Messages quote apps, models and devices
/// (an exception's text, a model's answer, a package name), so their control characters are
/// dropped whatever stderr is: a log file or a CI page is read in a terminal too.
pub fn say(bin: &str, message: &str) {
    eprintln!("{bin}: {}", clean(message));
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

#[allow(dead_code)] // droid-capture and droid-sim filter nothing.
/// Runs a filter stage from stdin to stdout, people's messages on stderr as `BIN: line N: ...`
/// when they happen; exit 1 when a line was bad or had a problem.
pub fn filter<F: Filter>(bin: &str, stage: &mut F, strict: bool) -> anyhow::Result<ExitCode> {
    filter_from(bin, stage, strict, io::BufReader::new(io::stdin().lock()))
}

/// [`filter`] over `input` instead of stdin.
pub fn filter_from<F: Filter>(
    bin: &str,
    stage: &mut F,
    strict: bool,
    input: impl io::BufRead,
) -> anyhow::Result<ExitCode> {
    let outcome = filter::run(stage, input, io::stdout().lock(), strict, &mut |message| {
        say(bin, message)
    })?;
    Ok(match outcome.failed() {
        true => ExitCode::from(1),
        false => ExitCode::SUCCESS,
    })
}

#[allow(dead_code)] // Only droid-crawl and droid-record have a `config` subcommand.
/// `BIN config ...` on user_config.db (`config_db`, else the default place): its lines on
/// stdout; a key that is not set is said on stderr, exit 1.
pub fn configure(
    bin: &str,
    config_db: Option<PathBuf>,
    command: ConfigCommand,
) -> anyhow::Result<ExitCode> {
    let path = config_db.unwrap_or_else(config::default_path_from_env);
    let output = command.run(&mut UserConfig::open(&path)?, io::stdin().lock())?;
    let mut out = io::stdout().lock();
    for line in &output.lines {
        writeln!(out, "{line}")?;
    }
    Ok(match output.missing {
        Some(missing) => {
            say(bin, &missing);
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    })
}
