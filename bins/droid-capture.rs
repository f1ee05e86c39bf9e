//! droid-capture: one observation of the screen, as an event line on stdout.

use std::io::{self, ErrorKind};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use droid::capture::{observe_files, OfflineOptions};
use droid::events::{Event, EventWriter};

/// Print one `observation` event: hierarchy elements with signatures, the pruned text tree with
/// [ref=N] markers, screen size and flags.
#[derive(Parser, Debug)]
#[command(
    name = "droid-capture",
    version,
    long_about = "Print one `observation` event (one JSON line on stdout): the hierarchy's \
elements with signatures, the pruned text tree with [ref=N] markers, screen size and flags \
(secure, loading). This version builds it from saved files (--from-xml), which is how you debug \
later stages on fixtures; hashes are added by droid-hash.",
    after_help = "Examples:
  droid-capture --from-xml window_dump.xml
  droid-capture --from-xml dump.xml --screenshot shot.png --activity .MainActivity | droid-hash
  droid-capture --from-xml dump.xml | jq -r .tree"
)]
struct Args {
    /// A saved `uiautomator dump` file to build the observation from.
    #[arg(long, value_name = "DUMP.xml")]
    from_xml: PathBuf,
    /// A PNG screenshot of the same screen (sets screen size and the secure flag).
    #[arg(long, value_name = "SHOT.png")]
    screenshot: Option<PathBuf>,
    /// Foreground package [default: the package of the dump's largest window].
    #[arg(long, value_name = "P")]
    package: Option<String>,
    /// Foreground activity, e.g. com.example/.MainActivity.
    #[arg(long, value_name = "A")]
    activity: Option<String>,
    /// Run id to stamp on the event.
    #[arg(long, value_name = "ID")]
    run: Option<String>,
    /// Step number to stamp on the event.
    #[arg(long, value_name = "N")]
    step: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let opts = OfflineOptions {
        xml_path: args.from_xml,
        screenshot: args.screenshot,
        package: args.package,
        activity: args.activity,
        run_id: args.run,
        step: args.step,
    };
    match capture(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("droid-capture: error: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn capture(opts: &OfflineOptions) -> anyhow::Result<()> {
    let observation = observe_files(opts)?;
    let mut writer = EventWriter::new(io::stdout().lock());
    writer
        .write(&Event::Observation(Box::new(observation)))
        .context("writing the observation")
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.downcast_ref::<io::Error>()
        .is_some_and(|e| e.kind() == ErrorKind::BrokenPipe)
}
