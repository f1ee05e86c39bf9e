//! Crawls started by droid-mcp: droid-crawl's own loop ([`crate::crawl::crawl_and_minimise`])
//! on a thread of its own, watched through its [`Listener`] and controlled through its own
//! channel (the control file `droid-crawl pause|resume` writes, the stop flag a signal sets).
//!
//! In-process rather than a droid-crawl child: the listener hands over the crawl's state, step,
//! screens and crashes as they change (a child would have to be parsed back from its event
//! lines), nothing can write to the stdout that carries the protocol, and the crawl's flags are
//! droid-crawl's own ([`CrawlArgs`], [`DeciderArgs`]), parsed the same way.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::Duration;

use clap::Parser;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Config, Error};
use crate::crawl::cli::CrawlArgs;
use crate::crawl::{self, control, Level, Listener, Progress};
use crate::decide::cli::{DeciderArg, DeciderArgs};
use crate::device::{AdbDevice, DeviceConfig};
use crate::events::{Event, NoteKind};

/// Messages of a crawl kept for its status.
const KEPT_MESSAGES: usize = 20;
/// How long a crawl may take to start (the device checked, the run opened) before `crawl`
/// answers that it is still starting.
const START_WAIT: Duration = Duration::from_secs(60);

/// A crawl to start.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct CrawlInput {
    /// The app under test (installed on the chosen device).
    pub package: String,
    /// Steps before the crawl ends [default: the server's setting, else 15].
    pub max_steps: Option<u64>,
    /// Seconds before the crawl ends [default: the server's setting, else 600].
    pub max_duration_secs: Option<u64>,
    /// heuristic, random, dfs, gemini, openrouter, ollama or openai [default: the server's
    /// --decider, else the heuristic]. A model's key comes from the server's settings.
    pub decider: Option<String>,
    /// The model of an LLM decider.
    pub model: Option<String>,
    /// A goal for an LLM decider (task mode).
    pub task: Option<String>,
    /// An LLM decider reads the text tree only, no screenshot.
    #[serde(default)]
    pub text_only: bool,
    /// Other packages the crawl may enter (a browser for a login).
    #[serde(default)]
    pub allow_packages: Vec<String>,
    /// After the crawl, minimise its crashes and ANRs by replays (as droid-crawl does by
    /// default); off unless asked.
    #[serde(default)]
    pub minimise: bool,
}

/// Where a crawl is.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct CrawlStatus {
    pub run_id: String,
    pub package: String,
    pub serial: String,
    /// UNINITIALIZED, INITIALIZING, RUNNING, PAUSED_MANUAL, STOPPING, STOPPED or ERROR.
    pub state: String,
    pub step: u64,
    pub max_steps: u64,
    /// Distinct screens seen.
    pub screens: usize,
    pub crashes: u64,
    pub elapsed_secs: f64,
    /// The crawl has ended (its reports are written).
    pub ended: bool,
    /// How it ended: COMPLETED, INTERRUPTED or ERROR.
    pub status: Option<String>,
    /// Why: max_steps, max_duration, stopped, explored, task_done, or what went wrong.
    pub reason: Option<String>,
    pub session_dir: Option<String>,
    pub reports: Vec<String>,
    /// Its latest messages, oldest first.
    pub messages: Vec<String>,
}

/// One crawl of this server.
struct Handle {
    status: Arc<Mutex<CrawlStatus>>,
    stop: Arc<AtomicBool>,
}

impl Handle {
    fn status(&self) -> MutexGuard<'_, CrawlStatus> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The crawls of this server, oldest first.
#[derive(Default)]
pub struct Crawls {
    handles: Mutex<Vec<Handle>>,
}

/// droid-crawl's own flags, parsed as the binary parses them: its defaults are the crawl's.
#[derive(Parser)]
#[command(no_binary_name = true)]
struct Flags {
    #[command(flatten)]
    crawl: CrawlArgs,
}

impl Crawls {
    fn handles(&self) -> MutexGuard<'_, Vec<Handle>> {
        self.handles.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a crawl on `device` and waits until its run is open: its first status.
    pub fn start(
        &self,
        config: &Config,
        device: DeviceConfig,
        input: &CrawlInput,
    ) -> Result<CrawlStatus, Error> {
        let serial = device.serial.clone().unwrap_or_default();
        let package = input.package.trim().to_string();
        if package.is_empty() {
            return Err(Error::Input("crawl needs `package`".into()));
        }
        let mut argv = vec![
            "--package".to_string(),
            package.clone(),
            "--db".into(),
            config.db.display().to_string(),
            "--out".into(),
            config.out.display().to_string(),
        ];
        if let Some(steps) = input.max_steps {
            argv.extend(["--max-steps".into(), steps.to_string()]);
        }
        if let Some(secs) = input.max_duration_secs {
            argv.extend(["--max-duration".into(), secs.to_string()]);
        }
        if !input.minimise {
            argv.push("--no-minimise".into());
        }
        let flags = Flags::try_parse_from(&argv).map_err(|e| Error::Input(e.to_string()))?;
        let decider = decider_args(&config.decider, input)?;
        let decide = decider
            .config(Some(package.clone()), Vec::new())
            .map_err(Error::Decide)?;
        let mut settings = decider.settings().map_err(Error::Decide)?;
        let stop = Arc::new(AtomicBool::new(false));
        let crawl_config = flags
            .crawl
            .config(
                package.clone(),
                decide,
                config.act.clone(),
                Arc::clone(&stop),
                &mut settings,
            )
            .map_err(|e| Error::Decide(e.into()))?;
        let minimise = flags.crawl.minimise();
        let status = Arc::new(Mutex::new(CrawlStatus {
            package,
            serial: serial.clone(),
            state: crawl::State::Uninitialized.as_str().into(),
            max_steps: crawl_config.max_steps,
            ..CrawlStatus::default()
        }));
        // Listed before it starts, so that no other crawl or action takes the device meanwhile.
        {
            let mut handles = self.handles();
            if let Some(run) = driving(&handles, &serial) {
                return Err(Error::Busy { serial, run });
            }
            handles.push(Handle {
                status: Arc::clone(&status),
                stop,
            });
        }
        let (started, opened) = mpsc::channel();
        let mut watcher = Watcher {
            status: Arc::clone(&status),
            started: Some(started),
        };
        let spawned = std::thread::Builder::new()
            .name("droid-mcp crawl".into())
            .spawn(move || {
                let outcome = AdbDevice::connect(device)
                    .map_err(|e| crate::filter::Chain(&e).to_string())
                    .and_then(|device| {
                        crawl::crawl_and_minimise(
                            crawl_config,
                            minimise.as_ref(),
                            &device,
                            &mut watcher,
                        )
                        .map_err(|e| crate::filter::Chain(&e).to_string())
                    });
                watcher.ended(outcome);
            });
        if let Err(error) = spawned {
            let mut failed = lock(&status);
            failed.ended = true;
            failed.reason = Some(error.to_string());
            return Err(Error::Thread(error));
        }
        match opened.recv_timeout(START_WAIT) {
            Ok(Ok(())) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(Err(why)) => return Err(Error::CrawlStart(why)),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::CrawlStart(
                    "the crawl ended before it started".into(),
                ))
            }
        }
        let first = lock(&status).clone();
        Ok(first)
    }

    /// The run of a crawl of this server still driving `serial` (not paused, not ended).
    pub fn driving(&self, serial: &str) -> Option<String> {
        driving(&self.handles(), serial)
    }

    /// Every crawl's status, newest first, or the one of `run`.
    pub fn status(&self, run: Option<&str>) -> Result<Vec<CrawlStatus>, Error> {
        let handles = self.handles();
        let all = handles.iter().rev().map(|h| h.status().clone());
        match run {
            None => Ok(all.collect()),
            Some(run) => {
                let found: Vec<CrawlStatus> = all.filter(|s| s.run_id == run).collect();
                match found.is_empty() {
                    true => Err(Error::NoCrawl(run.to_string())),
                    false => Ok(found),
                }
            }
        }
    }

    /// Asks `run` (else the newest crawl not ended) to pause, resume or stop: through the
    /// crawl's control file, as `droid-crawl pause|resume` asks; stop through its stop flag,
    /// as a signal does.
    pub fn control(
        &self,
        run: Option<&str>,
        command: control::Command,
    ) -> Result<CrawlStatus, Error> {
        let handles = self.handles();
        let handle = handles
            .iter()
            .rev()
            .find(|h| {
                let status = h.status();
                match run {
                    Some(run) => status.run_id == run,
                    None => !status.ended,
                }
            })
            .ok_or_else(|| Error::NoCrawl(run.unwrap_or("running").to_string()))?;
        let status = handle.status().clone();
        if status.ended {
            return Err(Error::Ended(status.run_id));
        }
        match (command, &status.session_dir) {
            (control::Command::Stop, _) => handle.stop.store(true, Ordering::SeqCst),
            (command, Some(dir)) => control::send(std::path::Path::new(dir), command)
                .map_err(|e| Error::Control(status.run_id.clone(), e))?,
            (_, None) => return Err(Error::NoCrawl(status.run_id)),
        }
        Ok(status)
    }
}

/// The run of a crawl among `handles` still driving `serial` (`(starting)` before its run is
/// open).
fn driving(handles: &[Handle], serial: &str) -> Option<String> {
    handles.iter().find_map(|handle| {
        let status = handle.status();
        let driving = !status.ended
            && status.serial == serial
            && status.state != crawl::State::PausedManual.as_str();
        let run = match status.run_id.as_str() {
            "" => "(starting)".to_string(),
            run => run.to_string(),
        };
        driving.then_some(run)
    })
}

fn lock(status: &Mutex<CrawlStatus>) -> MutexGuard<'_, CrawlStatus> {
    status.lock().unwrap_or_else(|p| p.into_inner())
}

/// The server's decider flags with what `input` names instead.
fn decider_args(base: &DeciderArgs, input: &CrawlInput) -> Result<DeciderArgs, Error> {
    let mut args = base.clone();
    if let Some(name) = &input.decider {
        let decider =
            <DeciderArg as clap::ValueEnum>::from_str(name.trim(), true).map_err(|_| {
                Error::Input(format!(
                    "decider {name:?} is none of heuristic, random, dfs, gemini, openrouter, \
                 ollama, openai"
                ))
            })?;
        args.decider = Some(decider);
    }
    if let Some(model) = &input.model {
        args.model = Some(model.clone());
    }
    if let Some(task) = &input.task {
        args.task = Some(task.clone());
    }
    args.text_only |= input.text_only;
    if !input.allow_packages.is_empty() {
        args.allow_packages = input.allow_packages.clone();
    }
    Ok(args)
}

/// Watches a crawl for its status.
struct Watcher {
    status: Arc<Mutex<CrawlStatus>>,
    /// Told once the run is open (or could not be).
    started: Option<mpsc::Sender<Result<(), String>>>,
}

impl Watcher {
    fn ended(&mut self, outcome: Result<crawl::Summary, String>) {
        let mut status = lock(&self.status);
        status.ended = true;
        match outcome {
            Ok(summary) => {
                status.status = Some(summary.status);
                status.reason = Some(summary.reason);
                status.step = summary.steps;
                status.reports = summary
                    .reports
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
            }
            Err(why) => {
                status.state = crawl::State::Error.as_str().into();
                status.status = Some("ERROR".into());
                status.reason = Some(why.clone());
                if let Some(started) = self.started.take() {
                    let _ = started.send(Err(why));
                }
            }
        }
    }
}

impl Listener for Watcher {
    fn event(&mut self, event: &Event) {
        let mut status = lock(&self.status);
        match event {
            Event::RunStarted(started) => {
                status.run_id = started.run_id.clone();
                status.session_dir = started.session_dir.clone();
                drop(status);
                if let Some(started) = self.started.take() {
                    let _ = started.send(Ok(()));
                }
            }
            Event::Note(note) if note.kind == NoteKind::State => {
                let state = note.data.as_ref().and_then(|d| d["state"].as_str());
                if let Some(state) = state {
                    status.state = state.to_string();
                }
            }
            Event::RunEnded(ended) => {
                status.status = Some(ended.status.clone());
                status.reason = ended.reason.clone();
            }
            _ => {}
        }
    }

    fn say(&mut self, level: Level, message: &str) {
        if level < Level::Info {
            return;
        }
        let mut status = lock(&self.status);
        let mut kept: VecDeque<String> = std::mem::take(&mut status.messages).into();
        if kept.len() == KEPT_MESSAGES {
            kept.pop_front();
        }
        kept.push_back(crate::terminal::clean(message));
        status.messages = kept.into();
    }

    fn progress(&mut self, progress: &Progress) {
        let mut status = lock(&self.status);
        status.step = progress.step;
        status.max_steps = progress.max_steps;
        status.screens = progress.unique_screens;
        status.crashes = progress.crashes;
        status.elapsed_secs = progress.elapsed.as_secs_f64();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> DeciderArgs {
        #[derive(Parser)]
        #[command(no_binary_name = true)]
        struct Only {
            #[command(flatten)]
            decider: DeciderArgs,
        }
        Only::parse_from(["--decider", "random", "--seed", "3"]).decider
    }

    #[test]
    fn a_crawl_names_its_decider_else_takes_the_servers() {
        let kept = decider_args(&base(), &CrawlInput::default()).unwrap();
        assert_eq!((kept.decider, kept.seed), (Some(DeciderArg::Random), 3));
        let input = CrawlInput {
            decider: Some(" DFS ".into()),
            model: Some("m".into()),
            text_only: true,
            ..CrawlInput::default()
        };
        let named = decider_args(&base(), &input).unwrap();
        assert_eq!(named.decider, Some(DeciderArg::Dfs));
        assert_eq!(named.model.as_deref(), Some("m"));
        assert!(named.text_only);
        let input = CrawlInput {
            decider: Some("oracle".into()),
            ..CrawlInput::default()
        };
        let error = decider_args(&base(), &input).unwrap_err().to_string();
        assert!(error.contains("\"oracle\" is none of"), "{error}");
    }

    #[test]
    fn the_crawl_flags_are_droid_crawls() {
        let flags = Flags::try_parse_from(["--package", "p", "--no-minimise"]).unwrap();
        assert_eq!(flags.crawl.package.as_deref(), Some("p"));
        assert!(flags.crawl.minimise().is_none());
        assert_eq!(flags.crawl.pause_ms, 500);
    }
}
