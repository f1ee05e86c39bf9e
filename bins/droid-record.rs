//! droid-record: record the event stream in crawler.db and pass it on.

mod common;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use droid::config;
use droid::store::{RunSummary, Store};

#[derive(Parser)]
#[command(
    name = "droid-record",
    version,
    about = "Record the event stream in crawler.db (and pass every line on)",
    long_about = "Reads events on stdin, appends each to its run's event log in crawler.db, projects \
it into the tables (runs, screens, step_logs, transitions, run_stats, ai_interactions, and the \
screen graph) one transaction per step, and writes the line unchanged to stdout. Feeding the same \
events twice changes nothing. A bad line is reported with its number, skipped, and makes the exit \
status 1; --strict stops at it instead.",
    after_help = "Examples:
  droid-capture | droid-hash | droid-decide | droid-act | droid-record --db crawler.db
  droid-record runs
  droid-record export run-20260101T120000-abc123 > run.jsonl
  droid-record --db copy.db < run.jsonl
  droid-record rebuild && droid-record cleanup --idle 3600
  droid-record config set gemini_api_key --secret   (reads the value from stdin)"
)]
struct Args {
    /// The database (created when recording; the subcommands need an existing one).
    #[arg(long, env = "DROID_DB", default_value = "crawler.db", global = true)]
    db: PathBuf,
    /// Stop at the first bad line.
    #[arg(long)]
    strict: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// List runs: id, package, device, status, steps, screens, start, end.
    Runs {
        /// One JSON object per run instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a run's events as JSON lines, ready to be fed again or replayed.
    Export {
        #[arg(value_parser = droid::events::parse_run_id)]
        run: String,
    },
    /// Delete a run, everything recorded about it, and the files droid wrote for it: its session
    /// folder when it carries droid's .droid-session marker for this run, and the captures its
    /// observations name when droid-capture wrote them. Anything else is left in place, named on
    /// stderr, and the exit status is 1.
    Delete {
        #[arg(value_parser = droid::events::parse_run_id)]
        run: String,
    },
    /// Drop the projected tables and re-project every run from the event log.
    Rebuild,
    /// End stale runs as ERROR: still RUNNING, no live writer process on this host, and nothing
    /// recorded for --idle seconds (a hand-made pipe has no process alive between two steps).
    Cleanup {
        /// Seconds without a recorded event before a run with no live writer is stale.
        #[arg(long, default_value_t = 600, value_name = "SECS")]
        idle: u64,
    },
    /// Settings and secrets in user_config.db.
    Config {
        /// user_config.db [default: $XDG_CONFIG_HOME/droid/user_config.db]
        #[arg(long, env = "DROID_USER_CONFIG")]
        config_db: Option<PathBuf>,
        #[command(subcommand)]
        action: config::ConfigCommand,
    },
}

fn main() -> ExitCode {
    common::finish("droid-record", run(Args::parse()))
}

fn run(args: Args) -> Result<ExitCode> {
    if let Some(Command::Config { config_db, action }) = args.command {
        return common::configure("droid-record", config_db, action);
    }
    // Recording creates the database; every subcommand needs one that exists.
    let store = match args.command {
        None => Store::open(&args.db),
        Some(_) => Store::open_existing(&args.db),
    }?;
    let mut out = io::stdout().lock();
    match args.command {
        None => {
            drop(out);
            let mut stage = droid::record::Stage::new(&store);
            let code = common::filter("droid-record", &mut stage, args.strict)?;
            if let Some(note) = stage.stats().after_end_note() {
                common::say("droid-record", &note);
            }
            return Ok(code);
        }
        Some(Command::Runs { json: false }) => {
            write!(out, "{}", RunSummary::table(&store.runs()?))?
        }
        Some(Command::Runs { json: true }) => {
            for run in store.runs()? {
                writeln!(out, "{}", serde_json::to_string(&run)?)?;
            }
        }
        Some(Command::Export { run }) => {
            store.export(&run, &mut out)?;
        }
        Some(Command::Delete { run }) => {
            let removed = store.delete_run(&run)?;
            for message in removed.messages(&run) {
                common::say("droid-record", &message);
            }
            if !removed.refused.is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
        Some(Command::Rebuild) => {
            let events = store.rebuild()?;
            common::say("droid-record", &format!("re-projected {events} events"));
        }
        Some(Command::Cleanup { idle }) => {
            for run in store.cleanup(std::time::Duration::from_secs(idle))? {
                writeln!(out, "{run}")?;
            }
        }
        Some(Command::Config { .. }) => unreachable!("handled above"),
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Args::command().debug_assert();
    }
}
