//! How a crawl shows itself: every event as a JSON line on stdout (for pipes and programs),
//! messages for people on stderr, and on a terminal a progress bar. Text from apps and models is
//! cleaned before stderr shows it (see [`super::say`]).
#![allow(dead_code)] // Only droid-crawl watches a crawl.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::{atomic::AtomicBool, Arc};
use std::time::Duration;

use droid::crawl::{control, Level, Listener, Minimising, Progress};
use droid::events::Event;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Console<O: Write> {
    out: O,
    out_closed: bool,
    /// The least level shown.
    level: Level,
    bar: Option<ProgressBar>,
}

impl<O: Write> Console<O> {
    /// `verbose` and `quiet` count `-v` and `-q`.
    pub fn new(out: O, verbose: u8, quiet: u8) -> Console<O> {
        let level = match (verbose, quiet) {
            (0, 0) => Level::Info,
            (_, 0) => Level::Debug,
            (_, 1) => Level::Warn,
            _ => Level::Error,
        };
        let bar = (std::io::stderr().is_terminal() && quiet == 0).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} step {pos}/{len} {wide_msg} {elapsed}")
            {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Console {
            out,
            out_closed: false,
            level,
            bar,
        }
    }

    /// The progress bar goes away (before the summary is printed).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// A subcommand watched like a crawl (events on stdout, messages on stderr, Ctrl-C stops),
/// ending with its one-line summary on stderr; exit 1 unless it went as it should.
pub fn watched(
    verbose: u8,
    quiet: u8,
    work: impl FnOnce(Arc<AtomicBool>, &mut dyn Listener) -> anyhow::Result<(String, bool)>,
) -> anyhow::Result<ExitCode> {
    let stop = control::stop_on_signals()?;
    let mut console = Console::new(std::io::stdout().lock(), verbose, quiet);
    let (summary, well) = work(stop, &mut console)?;
    console.finish();
    super::say("droid-crawl", &summary);
    Ok(match well {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    })
}

impl<O: Write> Listener for Console<O> {
    fn event(&mut self, event: &Event) {
        if self.out_closed {
            return;
        }
        // Nobody reads stdout any more (`droid-crawl | head`): the crawl goes on.
        if writeln!(self.out, "{}", event.to_line())
            .and_then(|()| self.out.flush())
            .is_err()
        {
            self.out_closed = true;
        }
    }

    fn say(&mut self, level: Level, message: &str) {
        if level < self.level {
            return;
        }
        match &self.bar {
            Some(bar) => bar.suspend(|| super::say("droid-crawl", message)),
            None => super::say("droid-crawl", message),
        }
    }

    fn progress(&mut self, progress: &Progress) {
        let Some(bar) = &self.bar else { return };
        bar.set_length(progress.max_steps);
        bar.set_position(progress.step);
        bar.set_message(format!(
            "{} screens, {} crashes, {}{}",
            progress.unique_screens,
            progress.crashes,
            progress.model_part(),
            if progress.paused { " (paused)" } else { "" }
        ));
    }

    fn minimising(&mut self, minimising: &Minimising) {
        let Some(bar) = &self.bar else { return };
        bar.set_length(0);
        bar.set_position(0);
        bar.set_message(format!(
            "{} {} of {}: {} steps → {}, {} replays",
            minimising.phase,
            minimising.failure,
            minimising.failures,
            minimising.steps_before,
            minimising.steps_now,
            minimising.replays
        ));
    }
}
