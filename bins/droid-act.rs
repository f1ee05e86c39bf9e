//! droid-act: executes decisions on the device (filter), or one verb given on the command line.

mod common;

use std::io::{self, ErrorKind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use droid::act::{self, Verb};
use droid::config::Settings;
use droid::device::cli::DeviceArgs;
use droid::device::{AdbDevice, Device, ScreenshotMode};
use droid::events::{Event, EventWriter};

#[derive(Parser)]
#[command(
    name = "droid-act",
    version,
    about = "Execute decisions on an Android device, or one action given as a verb",
    long_about = "Without a verb, reads the event stream on stdin, passes every line through, and \
                  after each `decision` writes one `result` per action it executed on the device. \
                  Targets resolve through the observation that preceded the decision. With a verb, \
                  performs that one action and prints its `result`. An `input` action taps its \
                  field, deletes the text the field holds (not its hint), then types, so the \
                  field holds exactly `input_text`; the `text` verb adds to what the focused field \
                  holds. An input whose text holds {{test_password}} types the test password \
                  there, resolved as --test-password > test_password in user_config.db > \
                  TEST_PASSWORD (or DROID_TEST_PASSWORD).",
    after_help = "Examples:\n  \
        droid-capture | droid-decide | droid-act\n  \
        droid-act tap 540 1200\n  \
        droid-act swipe 540 1800 540 600 300\n  \
        droid-act text \"hello world\"\n  \
        droid-act --device emulator-5554 key enter\n  \
        droid-act launch com.example.app\n  \
        droid-act stop com.example.app"
)]
struct Args {
    #[command(flatten)]
    device: DeviceArgs,
    /// Milliseconds to pause between two actions of a batch
    #[arg(long, default_value_t = 500, value_name = "MS")]
    pause_ms: u64,
    /// user_config.db [default: $XDG_CONFIG_HOME/droid/user_config.db, when it exists]
    #[arg(long, env = "DROID_USER_CONFIG")]
    config_db: Option<PathBuf>,
    /// The password typed for {{test_password}} (a flag shows in `ps`: prefer user_config.db)
    #[arg(long)]
    test_password: Option<String>,
    #[command(subcommand)]
    verb: Option<VerbArgs>,
}

#[derive(Subcommand)]
enum VerbArgs {
    /// Tap a point
    Tap { x: i32, y: i32 },
    /// Long-press a point
    LongPress { x: i32, y: i32 },
    /// Swipe from one point to another in MS milliseconds (default 300)
    Swipe {
        x1: i32,
        y1: i32,
        x2: i32,
        y2: i32,
        #[arg(default_value_t = 300)]
        ms: u32,
    },
    /// Type text into the focused field (non-ASCII needs the ADB Keyboard IME)
    Text { text: String },
    /// Press a key: back, home, enter, KEYCODE_TAB, or a key code number
    Key { name: String },
    /// Press back
    Back,
    /// Press home
    Home,
    /// Launch an app by package name
    Launch { package: String },
    /// Force-stop an app by package name
    Stop { package: String },
}

impl From<VerbArgs> for Verb {
    fn from(verb: VerbArgs) -> Verb {
        match verb {
            VerbArgs::Tap { x, y } => Verb::Tap(x, y),
            VerbArgs::LongPress { x, y } => Verb::LongPress(x, y),
            VerbArgs::Swipe { x1, y1, x2, y2, ms } => Verb::Swipe((x1, y1), (x2, y2), ms),
            VerbArgs::Text { text } => Verb::Text(text),
            VerbArgs::Key { name } => Verb::Key(name),
            VerbArgs::Back => Verb::Back,
            VerbArgs::Home => Verb::Home,
            VerbArgs::Launch { package } => Verb::Launch(package),
            VerbArgs::Stop { package } => Verb::Stop(package),
        }
    }
}

fn main() -> ExitCode {
    common::finish("droid-act", run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut settings = Settings::for_binary(args.config_db.as_deref()).context("user_config.db")?;
    let config = act::Config {
        pause: Duration::from_millis(args.pause_ms),
        test_password: settings.secret("test_password", args.test_password.as_deref())?,
        ..act::Config::default()
    };
    let device_config = args
        .device
        .to_config(ScreenshotMode::Png, |key| std::env::var(key).ok())?;
    let stdout = io::stdout().lock();
    if let Some(verb) = args.verb {
        let device = AdbDevice::connect(device_config).context("connecting to the device")?;
        let result = act::run_verb(&config, &device, &verb.into())?;
        return match EventWriter::new(stdout).write(&Event::Result(result)) {
            Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(e.into()),
            _ => Ok(ExitCode::SUCCESS),
        };
    }
    let open = || AdbDevice::connect(device_config.clone()).map(|d| Box::new(d) as Box<dyn Device>);
    common::filter("droid-act", &mut act::Stage::new(config, open), false)
}
