//! A decider exploring an app model against droid-sim through droid-crawl's own loop
//! ([`droid::crawl::crawl`], in process), measured by the simulator's truth log: shared by the
//! tests and `make bench`/`make coverage`, so the figures in the docs are the product's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use droid::crawl;
use droid::decide::prompt::PromptSettings;
use droid::decide::{Config, Decider};
use droid::device::{AdbDevice, DeviceConfig};
use droid::events::{ActionType, Event, NoteKind, Observation};
use droid::sim::model::AppModel;
use droid::sim::{Sim, SimConfig};
use serde_json::Value;

/// Screens of the model reached within `steps_per_screen × reachable` steps, measured with the
/// simulator's truth log: `(reached, reachable)`.
#[allow(dead_code)]
pub fn explore(app: &str, decider: Decider, seed: u64, steps_per_screen: u64) -> (usize, usize) {
    let (_, reachable, _) = model_facts(app);
    let run = run_app(
        app,
        decider,
        seed,
        steps_per_screen * reachable.len() as u64,
    );
    (run.reached.len(), run.reachable.len())
}

/// Every app model droid is measured on: the bundled ones and, when the shared fixtures are
/// there (see [`droid::fixtures`]), every real app among them.
#[allow(dead_code)]
pub fn app_models() -> Vec<String> {
    let mut apps: Vec<String> = ["builtin:shop", "builtin:settings", "builtin:tiny"]
        .map(String::from)
        .to_vec();
    let what = format!(
        "the real apps' models in {}",
        droid::fixtures::current_test()
    );
    if let Some(fixtures) = droid::fixtures::available(&what) {
        let mut real: Vec<String> = std::fs::read_dir(fixtures.join("apps"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path().join("model.json"))
            .filter(|model| model.is_file())
            .map(|model| model.display().to_string())
            .collect();
        real.sort();
        apps.extend(real);
    }
    apps
}

/// What one exploration of an app model saw.
#[allow(dead_code)]
pub struct Run {
    /// Model screens the device showed that are reachable from the start.
    pub reached: BTreeSet<String>,
    pub reachable: BTreeSet<String>,
    /// The reachable screens of the app's own package (not a browser or a file picker it
    /// opens): what `droid-sim --check` counts in its `app_reachable` column.
    pub own: BTreeSet<String>,
    /// The step after which the device had shown each screen first (0: at launch), from the
    /// truth log: screens a walk passed between two captures count too.
    pub first_shown: BTreeMap<String, u64>,
    /// Every step: its observation and the model screen the device showed when it was captured.
    pub observed: Vec<(Observation, String)>,
    /// Every event of the run, in stream order.
    pub events: Vec<Event>,
    /// Why the crawl ended (`run_ended`'s reason: `max_steps`, `explored`, ...).
    pub ended: String,
    /// Every model screen the device showed (the truth log's screens).
    pub shown: BTreeSet<String>,
    /// Moves the simulator inferred (a view treated alike across its states), from the truth
    /// log.
    pub inferred: usize,
}

#[allow(dead_code)]
impl Run {
    /// The screens of the app's own package it reached.
    pub fn own_reached(&self) -> BTreeSet<&String> {
        self.own
            .iter()
            .filter(|s| self.reached.contains(*s))
            .collect()
    }

    /// The times the explorer went to the launcher: a back decided on one of the app's screens
    /// that showed the launcher (a crash that shows it is not the explorer's trip).
    pub fn launcher_trips(&self) -> usize {
        let backs: BTreeSet<u64> = self
            .events
            .iter()
            .filter_map(|event| match event {
                Event::Decision(decision)
                    if decision
                        .actions
                        .iter()
                        .any(|a| a.action == ActionType::Back) =>
                {
                    decision.step
                }
                _ => None,
            })
            .collect();
        // A crash is noted at the step whose action crashed the app (a walk's tap after its back).
        let crashed: BTreeSet<u64> = self
            .events
            .iter()
            .filter_map(|event| match event {
                Event::Note(note) if note.kind == NoteKind::Crash => note.step,
                _ => None,
            })
            .collect();
        let on_launcher =
            |o: &Observation| o.package.as_deref() == Some(droid::sim::system::LAUNCHER_PACKAGE);
        // The decision of step n is made on the n-th observation; the next one shows its outcome.
        (1..)
            .zip(self.observed.windows(2))
            .filter(|(step, pair)| {
                backs.contains(step)
                    && !crashed.contains(step)
                    && !on_launcher(&pair[0].0)
                    && on_launcher(&pair[1].0)
            })
            .count()
    }

    /// Steps after which the device showed the model screen it showed when the step was decided
    /// (a tap the recording has no move for in that state, a walk that came back where it
    /// began), and the steps with a next observation to tell.
    pub fn still_steps(&self) -> (usize, usize) {
        let still = self
            .observed
            .windows(2)
            .filter(|pair| pair[0].1 == pair[1].1)
            .count();
        (still, self.observed.len().saturating_sub(1))
    }

    /// The most consecutive steps that each repeated an earlier step of the same pass (the
    /// same model screen shown, the same actions decided on it) while the device showed nothing
    /// new: how long the explorer went round moves it had made before. A pass over what was
    /// found (see `droid::decide::heuristic`) tries every action once more on purpose.
    pub fn longest_repeat(&self) -> usize {
        let passes: BTreeSet<u64> = self
            .events
            .iter()
            .filter_map(|event| match event {
                Event::Decision(decision) => decision
                    .actions
                    .first()
                    .and_then(|a| a.reasoning.as_deref())
                    .filter(|r| r.contains(droid::decide::heuristic::NEW_PASS))
                    .and(decision.step),
                _ => None,
            })
            .collect();
        let discovering: BTreeSet<u64> = self.first_shown.values().copied().collect();
        let decided: BTreeMap<u64, String> = self
            .events
            .iter()
            .filter_map(|event| match event {
                Event::Decision(decision) => {
                    let actions: Vec<String> = decision
                        .actions
                        .iter()
                        .map(|a| {
                            format!(
                                "{} {:?} {:?} {:?}",
                                a.action, a.target_bounding_box, a.point, a.input_text
                            )
                        })
                        .collect();
                    let moves = format!("{} {:?}", actions.join("; "), decision.relaunch);
                    decision.step.map(|step| (step, moves))
                }
                _ => None,
            })
            .collect();
        let mut seen = BTreeSet::new();
        let (mut current, mut longest) = (0, 0);
        for (step, (_, screen)) in (1..).zip(&self.observed) {
            if passes.contains(&step) {
                seen.clear();
            }
            let moves = decided.get(&step).cloned().unwrap_or_default();
            let repeated = !seen.insert((screen.clone(), moves));
            current = match repeated && !discovering.contains(&step) {
                true => current + 1,
                false => 0,
            };
            longest = longest.max(current);
        }
        longest
    }

    /// The first step after which the device had shown `goal` screens of `among`, if it did.
    pub fn steps_to(&self, among: &BTreeSet<String>, goal: usize) -> Option<u64> {
        let mut steps: Vec<u64> = among
            .iter()
            .filter_map(|s| self.first_shown.get(s).copied())
            .collect();
        steps.sort_unstable();
        match goal {
            0 => Some(0),
            goal => steps.get(goal - 1).copied(),
        }
    }
}

/// The reachable screens of an app model's own package.
pub fn own_screens(app: &str) -> BTreeSet<String> {
    let model = AppModel::load(app).unwrap();
    model
        .reachable()
        .into_iter()
        .map(|i| model.screen(i))
        .filter(|s| s.package == model.package())
        .map(|s| s.id.clone())
        .collect()
}

/// The app model's package, the screens reachable from its start, and the packages of its
/// other screens (a launcher page, a browser: part of the app's journey, not places to back
/// out of).
pub fn model_facts(app: &str) -> (String, BTreeSet<String>, Vec<String>) {
    let model = AppModel::load(app).unwrap();
    let package = model.package().to_string();
    let reachable = model
        .reachable()
        .into_iter()
        .map(|i| model.screen(i).id.clone())
        .collect();
    let allowed = model
        .screens()
        .iter()
        .map(|s| s.package.clone())
        .filter(|p| *p != package)
        .collect();
    (package, reachable, allowed)
}

/// An act configuration without pauses (the simulator needs none).
pub fn quick_act() -> droid::act::Config {
    droid::act::Config {
        pause: std::time::Duration::ZERO,
        settle: std::time::Duration::ZERO,
        long_press_ms: 600,
        default_wait: std::time::Duration::ZERO,
        test_password: None,
    }
}

/// The crawl droid-crawl runs for `droid-crawl --package P --decider D --seed S --max-steps N
/// --pause-ms 0 --report none`, recording into `dir`.
pub fn crawl_config(
    package: &str,
    decider: Decider,
    seed: u64,
    steps: u64,
    dir: &Path,
) -> crawl::Config {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    crawl::Config {
        package: package.to_string(),
        allowed_packages: Vec::new(),
        max_steps: steps,
        max_duration: std::time::Duration::from_secs(3600),
        out_dir: dir.join("output_data"),
        db: dir.join("crawler.db"),
        decide: Config {
            decider,
            seed,
            prompt: PromptSettings::default(),
            history: Vec::new(),
            fall_back_when_unreachable: false,
            budget: Default::default(),
            price: None,
        },
        act: quick_act(),
        stages: crawl::Stages::default(),
        reports: Vec::new(),
        controls: crawl::Controls::new(stop),
        stop_on_secure: false,
        permissions: droid::crawl::Permissions::Grant,
        integrations: Vec::new(),
        unavailable: Vec::new(),
    }
}

/// What a crawl showed, step by step, read from the simulator's truth log as the crawl's events
/// pass.
struct Watcher<'t> {
    truth: &'t Path,
    read: usize,
    last_step: u64,
    first_shown: BTreeMap<String, u64>,
    observed: Vec<(Observation, String)>,
    events: Vec<Event>,
}

impl Watcher<'_> {
    /// Notes the screens shown since the last look as shown after step `step`.
    fn look(&mut self, step: u64) {
        self.read = note_shown(self.truth, self.read, step, &mut self.first_shown);
    }
}

impl crawl::Listener for Watcher<'_> {
    fn event(&mut self, event: &Event) {
        if let Event::Observation(observation) = event {
            let step = observation.step.unwrap_or(0);
            self.look(step.saturating_sub(1));
            self.last_step = step;
            self.observed.push((
                (**observation).clone(),
                shown(self.truth).unwrap_or_default(),
            ));
        }
        self.events.push(event.clone());
    }

    fn say(&mut self, _level: crawl::Level, _message: &str) {}
}

/// Explores an app model with droid-crawl's loop ([`crawl::crawl`], in process, as
/// `droid-crawl` runs it) on a fresh simulator for `steps` steps, or until the exploration says
/// it is complete.
pub fn run_app(app: &str, decider: Decider, seed: u64, steps: u64) -> Run {
    run_app_with(app, decider, seed, steps, |_, _| {})
}

/// [`run_app`], the crawl's configuration changed by `adjust` first (given the simulator's truth
/// log too, for a stand-in model that reads it).
pub fn run_app_with(
    app: &str,
    decider: Decider,
    seed: u64,
    steps: u64,
    adjust: impl FnOnce(&mut crawl::Config, &Path),
) -> Run {
    let (package, reachable, _) = model_facts(app);
    let own = own_screens(app);
    with_sim(app, |device, truth, dir| {
        let mut config = crawl_config(&package, decider, seed, steps, dir);
        adjust(&mut config, truth);
        let mut watcher = Watcher {
            truth,
            read: 0,
            last_step: 0,
            first_shown: BTreeMap::new(),
            observed: Vec::new(),
            events: Vec::new(),
        };
        let summary = crawl::crawl(config, device, &mut watcher).expect("the crawl starts");
        assert!(summary.ended_well(), "{app}: {summary:?}");
        let last = watcher.last_step;
        watcher.look(last);
        Run {
            reached: reached(truth, &reachable),
            reachable: reachable.clone(),
            own: own.clone(),
            first_shown: watcher.first_shown,
            observed: watcher.observed,
            events: watcher.events,
            ended: summary.reason,
            shown: truth_lines(truth)
                .filter_map(|v| v["screen"].as_str().map(str::to_string))
                .collect(),
            inferred: truth_lines(truth)
                .filter(|v| v["inferred"] == Value::Bool(true))
                .count(),
        }
    })
}

/// Runs `f` with a device on a fresh simulator serving `app`, the path of the simulator's truth
/// log, and a folder for the crawl's files.
pub fn with_sim<T>(app: &str, f: impl FnOnce(&AdbDevice, &Path, &Path) -> T) -> T {
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.jsonl");
    let sim = Sim::start(SimConfig {
        truth_log: Some(truth.clone()),
        ..SimConfig::new(app)
    })
    .unwrap();
    let device = AdbDevice::connect(DeviceConfig::loopback(sim.port(), sim.serial())).unwrap();
    let out = f(&device, &truth, dir.path());
    // A developer reading a run input by input (the `misses` benchmark).
    if let Some(copy) = std::env::var_os("KEEP_TRUTH") {
        let _ = std::fs::copy(&truth, copy);
    }
    out
}

/// Notes the step at which each screen in the truth log's lines after the first `read` was
/// first shown; returns how many lines were read in all.
fn note_shown(truth: &Path, read: usize, step: u64, first: &mut BTreeMap<String, u64>) -> usize {
    let text = std::fs::read_to_string(truth).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for line in &lines[read.min(lines.len())..] {
        if let Some(screen) = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| v["screen"].as_str().map(str::to_string))
        {
            first.entry(screen).or_insert(step);
        }
    }
    lines.len()
}

/// The truth log's lines.
pub fn truth_lines(truth: &Path) -> impl Iterator<Item = Value> {
    std::fs::read_to_string(truth)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect::<Vec<_>>()
        .into_iter()
}

/// The model screen the device shows now: the truth log's last screen line.
pub fn shown(truth: &Path) -> Option<String> {
    std::fs::read_to_string(truth)
        .unwrap()
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["screen"].as_str().map(str::to_string))
}

/// The reachable model screens the truth log shows were reached.
pub fn reached(truth: &Path, reachable: &BTreeSet<String>) -> BTreeSet<String> {
    std::fs::read_to_string(truth)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["screen"].as_str().map(str::to_string))
        .filter(|s| reachable.contains(s))
        .collect()
}
