//! droid-report: a run's report as text, JSON, PDF, HTML, JUnit XML or Graphviz DOT.

mod common;

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use droid::report::{self, FailOn, Format, Report};
use droid::store::Store;

#[derive(Parser)]
#[command(
    name = "droid-report",
    version,
    about = "Report one run of crawler.db: text, JSON, PDF, HTML, JUnit XML or Graphviz DOT",
    long_about = "Reads one run from crawler.db (and the screenshots its events name) and writes its \
report: `text` (the console summary, 80 columns), `json` (every run_stats field under the reference's \
name, screens, transitions, steps with the decider's reasoning, crashes grouped by signature with \
traces and repro steps, coverage, file paths), `pdf`, `html` (one self-contained file that opens \
offline), `junit` (one test case for the run and one per distinct crash or ANR) or `dot` (the screen \
graph). Works for running, paused, stopped and errored runs. With --fail-on, the exit status is 1 \
when the run has what it names (after the report is written); see docs/report.md.",
    after_help = "Examples:
  droid-report                                    (text summary of the newest run)
  droid-report latest --format html -o report.html
  droid-report run-20260101T120000-abc123 --format pdf -o report.pdf
  droid-report --format json | jq .run_stats.unique_screens_visited
  droid-report --format junit -o junit.xml --fail-on crash --fail-on error   (for CI)
  droid-report --format dot | dot -Tsvg > graph.svg

Exit status: 0 report written; 1 an error, or --fail-on found what it names; 2 usage."
)]
struct Args {
    /// The run: its id, or `latest` for the newest.
    #[arg(default_value = "latest")]
    run: String,
    /// The database.
    #[arg(long, env = "DROID_DB", default_value = "crawler.db")]
    db: PathBuf,
    /// text, json, pdf, html, junit or dot.
    #[arg(long, short, default_value = "text", value_parser = format)]
    format: Format,
    /// Write the report to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Exit 1 when the run has a crash, an ANR, or an error (ended with ERROR, or a stage
    /// stopped); may be given more than once.
    #[arg(long, value_name = "crash|anr|error", value_parser = fail_on)]
    fail_on: Vec<FailOn>,
}

fn format(name: &str) -> Result<Format, String> {
    Format::parse(name).ok_or_else(|| "one of text, json, pdf, html, junit, dot".into())
}

fn fail_on(name: &str) -> Result<FailOn, String> {
    FailOn::parse(name).ok_or_else(|| "one of crash, anr, error".into())
}

fn main() -> ExitCode {
    common::finish("droid-report", run(Args::parse()))
}

fn run(args: Args) -> Result<ExitCode> {
    if !args.db.is_file() {
        anyhow::bail!("no database at {}", args.db.display());
    }
    let store = Store::open(&args.db).with_context(|| format!("opening {}", args.db.display()))?;
    let report =
        Report::load(&store, &args.run).with_context(|| format!("reading run {:?}", args.run))?;
    let binary = matches!(args.format, Format::Pdf);
    match &args.output {
        Some(path) => {
            let mut file = io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))?,
            );
            report::render(&report, args.format, &mut file)
                .with_context(|| format!("writing {}", path.display()))?;
            common::say("droid-report", &format!("wrote {}", path.display()));
        }
        None if binary && io::stdout().is_terminal() => {
            anyhow::bail!("a PDF is not for a terminal: use -o FILE or a redirection");
        }
        None => {
            let mut out = io::stdout().lock();
            report::render(&report, args.format, &mut out).context("writing the report")?;
            out.flush().context("writing the report")?;
        }
    }
    let found: Vec<String> = args
        .fail_on
        .iter()
        .filter_map(|f| f.found(&report))
        .collect();
    if found.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let run = &report.run.run_id;
    common::say(
        "droid-report",
        &format!("run {run} has {} (--fail-on)", found.join(", ")),
    );
    Ok(ExitCode::from(1))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Args::command().debug_assert();
    }
}
