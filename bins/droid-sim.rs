//! droid-sim: a simulated Android device behind a real ADB server socket.

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use droid::sim::check::check;
use droid::sim::fault::{Fault, Latency};
use droid::sim::infer;
use droid::sim::model::AppModel;
use droid::sim::{Sim, SimConfig};

#[derive(Parser, Debug)]
#[command(
    name = "droid-sim",
    version,
    about = "A simulated Android device behind a real ADB server socket",
    long_about = "A simulated Android device behind a real ADB server socket.\n\n\
        Listens on 127.0.0.1 and speaks the ADB server protocol well enough that the real `adb` \
        client works against it (`adb -P PORT -s SERIAL shell ...`, `exec-out`, `pull`, `push`). \
        The device runs an app model: screens, transitions, a back stack, text fields, crashes, \
        other apps, secure screens. An action that fires no recorded transition moves as the same \
        view does on the other screens of the activity, when they all agree (the truth log marks \
        the move inferred; --recorded-only turns this off). A serial emulator-N has the emulator \
        console on port N (`adb emu geo fix ...`, token in $HOME/.emulator_console_auth_token). \
        When ready it prints one line \
        {\"type\":\"sim_ready\",\"port\":N,\"serial\":\"...\"} on stdout, then serves until killed \
        or until a client sends host:kill (`adb -P PORT kill-server`).\n\n\
        With --check MODEL it serves no one: it walks the shortest model path to every reachable \
        screen from a fresh launch, acting on each recorded target as a tester would (through its \
        own ADB client), and reports which screens the device really showed and why the others \
        were not: the ceiling an explorer is measured against.",
    after_help = "FAULTS (--fault, repeatable):\n  \
        disconnect-after:N[:SECS]  after every N device commands, drop every socket; the device is \
        gone (not listed, transport requests fail) for SECS seconds (default 2)\n  \
        dump-error:RATE            `uiautomator dump` fails with `ERROR: could not get idle state.` \
        at this rate (0..1, deterministic)\n  \
        slow:MS                    every device command takes MS milliseconds longer\n  \
        anr-on:SCREEN              when SCREEN is shown the app stops responding (ANR dialog)\n  \
        crash-every:N              a flaky crash: the model's crash transitions fire on their \
        1st, (N+1)th, (2N+1)th... attempt over the device's life; the others do nothing\n\n\
        LATENCY (--latency realistic): uiautomator dump 1.2 s, screencap -p 0.6 s, raw screencap \
        0.15 s, input 0.1 s, other commands 0.02 s.\n\n\
        EXAMPLES:\n  \
        droid-sim --app builtin:shop --port 5037\n  \
        droid-sim --app apps/shop/model.json --describe\n  \
        droid-sim --check builtin:shop\n  \
        droid-sim --check builtin:settings --json | jq .ceiling\n  \
        droid-sim --app builtin:tiny --latency realistic --fault dump-error:0.1 --truth-log truth.jsonl\n  \
        adb -P 5037 -s emulator-5554 shell uiautomator dump && adb -P 5037 exec-out cat /sdcard/window_dump.xml"
)]
struct Args {
    /// App model: a MODEL.json file, a folder holding model.json, or builtin:NAME (shop, settings,
    /// tiny).
    #[arg(long, value_name = "MODEL", required_unless_present = "check")]
    app: Option<String>,
    /// Serial the device reports (`adb devices`). An `emulator-N` serial has the emulator
    /// console on port N; without this flag the first emulator-N (5554, 5556, ...) whose port is
    /// free.
    #[arg(long)]
    serial: Option<String>,
    /// TCP port on 127.0.0.1; 0 picks a free one (printed in the ready line).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Per-command delays: none, or realistic (see below).
    #[arg(long, default_value = "none", value_parser = str::parse::<Latency>)]
    latency: Latency,
    /// A fault to inject (see FAULTS below); repeatable.
    #[arg(long = "fault", value_name = "SPEC", value_parser = str::parse::<Fault>)]
    faults: Vec<Fault>,
    /// Write one JSON line per screen shown and per input received to FILE.
    #[arg(long, value_name = "FILE")]
    truth_log: Option<PathBuf>,
    /// Install an extra input method.
    #[arg(long, value_enum)]
    ime: Option<Ime>,
    /// Fire recorded transitions only: a view whose action fires nothing here does not move as the
    /// same view does on the activity's other screens.
    #[arg(long)]
    recorded_only: bool,
    /// Print the model's screen count, the screens reachable from the start screen and how many
    /// moves inference adds, then exit.
    #[arg(long)]
    describe: bool,
    /// Walk every reachable screen of MODEL as a tester would and report which ones the device
    /// showed (a table on stdout), then exit.
    #[arg(long, value_name = "MODEL", conflicts_with_all = ["app", "describe"])]
    check: Option<String>,
    /// With --check: print the report as one JSON object instead of a table.
    #[arg(long, requires = "check")]
    json: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Ime {
    /// The ADB Keyboard (com.android.adbkeyboard/.AdbIME): any Unicode text by broadcast.
    Adbkeyboard,
}

/// Prints `text` on stdout (a reader that went away ends the run normally, see `finish`).
fn print(text: &str) -> anyhow::Result<()> {
    Ok(writeln!(std::io::stdout().lock(), "{}", text.trim_end())?)
}

fn run(args: Args) -> anyhow::Result<()> {
    if let Some(app) = &args.check {
        let report = check(app).with_context(|| format!("cannot check {app}"))?;
        return match args.json {
            true => print(&serde_json::to_string(&report)?),
            false => print(&report.table()),
        };
    }
    let app = args.app.unwrap_or_default();
    if args.describe {
        return print(&infer::describe(&AppModel::load(&app)?));
    }
    let config = SimConfig {
        port: args.port,
        latency: args.latency,
        faults: args.faults,
        truth_log: args.truth_log,
        ime_adbkeyboard: matches!(args.ime, Some(Ime::Adbkeyboard)),
        recorded_only: args.recorded_only,
        // The console's auth token lives in the user's home, as the emulator's does.
        console_home: std::env::var_os("HOME").map(PathBuf::from),
        ..SimConfig::new(app.clone())
    };
    let sim = Sim::start_as(config, args.serial)
        .with_context(|| format!("cannot start the simulator for {app}"))?;
    let mut stdout = std::io::stdout().lock();
    // A reader that went away early does not stop the device.
    let _ = writeln!(stdout, "{}", sim.ready_line()).and_then(|()| stdout.flush());
    drop(stdout);
    sim.wait();
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    common::finish("droid-sim", run(args).map(|()| ExitCode::SUCCESS))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        super::Args::command().debug_assert();
    }
}
