//! droid-capture: one observation of the screen, as an event line on stdout.

mod common;

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use droid::capture::{observe_device, observe_files, DeviceOptions, OfflineOptions};
use droid::device::cli::DeviceArgs;
use droid::device::{AdbDevice, Device, ScreenshotMode};
use droid::events::{Event, EventWriter};

/// Print one `observation` event: hierarchy elements with signatures, the pruned text tree with
/// [ref=N] markers, screen size and flags.
#[derive(Parser, Debug)]
#[command(
    name = "droid-capture",
    version,
    long_about = "Print one `observation` event (one JSON line on stdout): the hierarchy's \
elements with signatures, the pruned text tree with [ref=N] markers, screen size and flags \
(secure, loading), foreground package and activity, device info and timings. From a device \
(the default): the hierarchy dump and the screenshot are taken at the same time and saved under \
--out. From saved files (--from-xml), which is how you debug later stages on fixtures. Hashes are \
added by droid-hash.",
    after_help = "Examples:
  droid-capture
  droid-capture --device emulator-5554 --out shots/ --count 5 --interval 1000
  droid-capture --no-screenshot | jq -r .tree
  droid-capture --from-xml window_dump.xml
  droid-capture --from-xml dump.xml --screenshot shot.png --activity .MainActivity | droid-hash
  droid-capture --from-xml dump.xml | jq -r .tree"
)]
struct Args {
    #[command(flatten)]
    device: DeviceArgs,
    /// Folder for the dump and screenshot of a device capture [default: droid-captures in the
    /// system temporary folder].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Capture the hierarchy only (faster; no secure flag).
    #[arg(long)]
    no_screenshot: bool,
    /// Take raw screenshots and encode the PNG on this machine instead of on the device.
    #[arg(long)]
    raw_screenshot: bool,
    /// Number of observations to capture from the device.
    #[arg(long, default_value_t = 1, value_name = "N")]
    count: u64,
    /// Milliseconds between two captures of --count.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    interval: u64,
    /// A saved `uiautomator dump` file to build the observation from, without a device.
    #[arg(long, value_name = "DUMP.xml", conflicts_with_all = ["count", "out", "no_screenshot"])]
    from_xml: Option<PathBuf>,
    /// A PNG screenshot of the same screen (sets screen size and the secure flag).
    #[arg(long, value_name = "SHOT.png", requires = "from_xml")]
    screenshot: Option<PathBuf>,
    /// Foreground package [default: the package of the dump's largest window].
    #[arg(long, value_name = "P", requires = "from_xml")]
    package: Option<String>,
    /// Foreground activity, e.g. com.example/.MainActivity.
    #[arg(long, value_name = "A", requires = "from_xml")]
    activity: Option<String>,
    /// Run id to stamp on the event.
    #[arg(long, value_name = "ID", value_parser = droid::events::parse_run_id)]
    run: Option<String>,
    /// Step number to stamp on the event.
    #[arg(long, value_name = "N")]
    step: Option<u64>,
}

fn main() -> ExitCode {
    common::finish(
        "droid-capture",
        run(Args::parse()).map(|()| ExitCode::SUCCESS),
    )
}

fn run(args: Args) -> anyhow::Result<()> {
    let mut writer = EventWriter::new(io::stdout().lock());
    let mut emit = |observation| {
        writer
            .write(&Event::Observation(Box::new(observation)))
            .context("writing the observation")
    };
    if let Some(xml_path) = args.from_xml {
        let opts = OfflineOptions {
            xml_path,
            screenshot: args.screenshot,
            package: args.package,
            activity: args.activity,
            run_id: args.run,
            step: args.step,
        };
        return emit(observe_files(&opts)?);
    }
    let mode = if args.raw_screenshot {
        ScreenshotMode::Raw
    } else {
        ScreenshotMode::Png
    };
    let config = args.device.to_config(mode, |key| std::env::var(key).ok())?;
    let device = AdbDevice::connect(config).context("connecting to the device")?;
    let info = device.info().context("reading the device's description")?;
    let mut opts = DeviceOptions {
        out_dir: args
            .out
            .unwrap_or_else(|| std::env::temp_dir().join("droid-captures")),
        screenshot: !args.no_screenshot,
        concurrent: true,
        run_id: args.run,
        step: args.step,
        step_names: false,
    };
    for index in 0..args.count {
        if index > 0 {
            std::thread::sleep(Duration::from_millis(args.interval));
            opts.step = opts.step.map(|step| step + 1);
        }
        emit(observe_device(&device, &info, &opts)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        super::Args::command().debug_assert();
    }
}
