//! `droid-sim --check MODEL`: the ceiling an explorer is measured against.
//!
//! For every screen reachable in the model, a tester starts the app afresh and walks the shortest
//! model path to it, acting on each recorded target as a person following the recording would:
//! find the element the target names on the live screen, tap its centre (or long-press it, type
//! into it, swipe on it), or press back. Everything goes through the device interface (droid's
//! own ADB client against the simulator behind its socket), and the simulator's truth log says
//! which screen the device really shows after each step. A transition that does not take the
//! device where the model says is set aside and the walk is planned again around it, so a screen
//! counts as reached when some path of working transitions leads there; a screen no such path
//! reaches is reported with the failing step of its shortest path, and why.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;
use thiserror::Error;

use super::dispatch::{self, Touch};
use super::infer::added_moves;
use super::model::{
    parse_hierarchy, Action, AppModel, Destination, ModelError, Node, Target, Transition,
};
use super::server::{Sim, SimConfig, SimError};
use crate::device::{gesture_points, AdbDevice, Device, DeviceConfig, DeviceError, Direction};
use crate::ui::Bounds;

/// Text a tester types where a field must match a pattern: the first sample the pattern takes.
const SAMPLES: &[&str] = &[
    "user@example.com",
    "Secret123",
    "4111111111111111",
    "Jane Doe",
    "1234",
    "hello",
];
/// What a tester types into a field whose transition asks nothing of the text.
const ANY_TEXT: &str = "hello";
/// A press this long is a long press (the platform's timeout is 500 ms).
const LONG_PRESS_MS: u32 = 600;
/// Text from an app longer than this is cut in the table.
const SHOWN_CHARS: usize = 32;

/// Why a check could not run (a screen the device did not show is a result, not an error).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CheckError {
    #[error("cannot load the app model")]
    Model(#[from] ModelError),
    #[error("cannot start the simulator")]
    Sim(#[from] SimError),
    #[error("the simulated device failed")]
    Device(#[from] DeviceError),
    #[error("the device dumped a hierarchy that does not parse: {0}")]
    Dump(String),
    #[error("cannot read the truth log {path}")]
    Truth {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create a directory for the truth log")]
    TempDir(#[source] std::io::Error),
}

/// What `--check` found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The model as given (`builtin:tiny`, a path).
    pub app: String,
    pub package: String,
    /// Screens in the model.
    pub screens_total: usize,
    /// Screens the model's transitions reach from the start screen.
    pub reachable: usize,
    /// Of those, the screens the device showed: the ceiling.
    pub ceiling: usize,
    /// `reachable` and `ceiling` counting only screens of the app's own package (not a browser
    /// or a system picker the app opens).
    pub app_reachable: usize,
    pub app_ceiling: usize,
    /// One entry per reachable screen, in breadth-first order from the start screen.
    pub screens: Vec<ScreenCheck>,
    /// Every transition that did not do what the model says when walked, by index.
    pub failed_transitions: Vec<Failure>,
    /// The (screen, action, view) moves the device infers beyond the recorded ones (see
    /// [`super::infer`]); the walks take recorded moves only.
    pub inferred_moves: usize,
}

/// One reachable screen.
#[derive(Debug, Clone, Serialize)]
pub struct ScreenCheck {
    pub screen: String,
    /// The package the screen belongs to.
    pub package: String,
    /// Whether the device showed it at the end of a walk.
    pub reached: bool,
    /// The path walked when reached; the model's shortest path when not.
    pub path: Vec<Step>,
    /// Why it was not reached: the first failing transition of its shortest path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Failure>,
}

/// One transition of a path.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Its index in the model's `transitions`.
    pub transition: usize,
    pub from: String,
    pub action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    pub to: String,
}

/// A step that did not do what the model says.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// The transition walked; absent when the launch itself failed.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub step: Option<Step>,
    pub kind: FailureKind,
    /// One sentence for people.
    pub detail: String,
    /// The screen the device showed instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown: Option<String>,
    /// How many elements of the live screen the target matched.
    pub matches: usize,
    /// Where the finger went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub point: Option<[i32; 2]>,
    /// The view that took the touch there, by the model's dispatch rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handled_by: Option<String>,
    /// The transition that answers that touch by the model's rule, when it is another one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The target matches nothing on the screen the device shows.
    NoMatch,
    /// The target matches several elements, and acting on them did not fire the transition.
    Ambiguous,
    /// The action was carried out and the device did not show the destination.
    DidNotFire,
    /// A field must hold text of a form the tester has no sample of.
    NeedsText,
    /// A fresh launch did not show the start screen.
    Launch,
}

/// Starts a simulator for `app` (with a truth log in a temporary directory), walks it through its
/// socket with droid's ADB client, and reports.
pub fn check(app: &str) -> Result<Report, CheckError> {
    let model = AppModel::load(app)?;
    let dir = tempfile::tempdir().map_err(CheckError::TempDir)?;
    let truth = dir.path().join("truth.jsonl");
    // A tester follows the recording: a step that fires nothing must not be rescued by a move
    // the device infers (said here although it is `SimConfig::new`'s default, since the ceiling
    // depends on it).
    let sim = Sim::start(SimConfig {
        truth_log: Some(truth.clone()),
        recorded_only: true,
        ..SimConfig::new(app)
    })?;
    let device = AdbDevice::connect(DeviceConfig::loopback(sim.port(), sim.serial()))?;
    check_device(&model, app, &device, &truth)
}

/// Walks every reachable screen of `model` on `device`, whose simulator writes `truth`.
pub fn check_device(
    model: &AppModel,
    app: &str,
    device: &impl Device,
    truth: &Path,
) -> Result<Report, CheckError> {
    let mut tester = Tester {
        model,
        device,
        shown: Shown::new(truth),
    };
    let mut failed: BTreeMap<usize, Failure> = BTreeMap::new();
    let mut screens = Vec::new();
    for screen in model.reachable() {
        let mut launch_failure = None;
        let walked = loop {
            let Some(path) = shortest_path(model, screen, |i| failed.contains_key(&i)) else {
                break None;
            };
            match tester.walk(&path)? {
                None => break Some(path),
                Some(failure) => match failure.step.as_ref().map(|s| s.transition) {
                    Some(index) => {
                        failed.insert(index, failure);
                    }
                    None => {
                        launch_failure = Some(failure);
                        break None;
                    }
                },
            }
        };
        let id = model.screen(screen).id.clone();
        let package = model.screen(screen).package.clone();
        screens.push(match walked {
            Some(path) => ScreenCheck {
                screen: id,
                package,
                reached: true,
                path: path.iter().map(|&i| step(model, i)).collect(),
                reason: None,
            },
            None => {
                let path = shortest_path(model, screen, |_| false).unwrap_or_default();
                let reason =
                    launch_failure.or_else(|| path.iter().find_map(|i| failed.get(i).cloned()));
                ScreenCheck {
                    screen: id,
                    package,
                    reached: false,
                    path: path.iter().map(|&i| step(model, i)).collect(),
                    reason,
                }
            }
        });
    }
    let own: Vec<&ScreenCheck> = screens
        .iter()
        .filter(|s| s.package == model.package())
        .collect();
    Ok(Report {
        app: app.to_string(),
        package: model.package().to_string(),
        screens_total: model.screens().len(),
        reachable: screens.len(),
        ceiling: screens.iter().filter(|s| s.reached).count(),
        app_reachable: own.len(),
        app_ceiling: own.iter().filter(|s| s.reached).count(),
        screens,
        failed_transitions: failed.into_values().collect(),
        inferred_moves: added_moves(model).len(),
    })
}

/// The transitions (indexes) of a shortest path from the start screen to `to`, leaving out the
/// `excluded` ones; among paths of one length, the one that takes earlier transitions in model
/// order. `None` when no path is left.
pub fn shortest_path(
    model: &AppModel,
    to: usize,
    excluded: impl Fn(usize) -> bool,
) -> Option<Vec<usize>> {
    let mut came_by: Vec<Option<usize>> = vec![None; model.screens().len()];
    let mut seen = vec![false; model.screens().len()];
    seen[model.start()] = true;
    let mut queue = VecDeque::from([model.start()]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut path = Vec::new();
            let mut screen = to;
            while let Some(index) = came_by[screen] {
                path.push(index);
                screen = model.transitions()[index].from;
            }
            path.reverse();
            return Some(path);
        }
        for (index, t) in model.transitions().iter().enumerate() {
            if t.from != at || excluded(index) {
                continue;
            }
            if let Destination::Screen(next) = t.to {
                if !seen[next] {
                    seen[next] = true;
                    came_by[next] = Some(index);
                    queue.push_back(next);
                }
            }
        }
    }
    None
}

fn step(model: &AppModel, index: usize) -> Step {
    let t = &model.transitions()[index];
    Step {
        transition: index,
        from: model.screen(t.from).id.clone(),
        action: t.action.name(),
        target: t.target.clone(),
        to: destination_name(model, &t.to),
    }
}

fn destination_name(model: &AppModel, to: &Destination) -> String {
    match to {
        Destination::Screen(index) => model.screen(*index).id.clone(),
        Destination::Crash(_) => "@crash".to_string(),
        Destination::External(package) => format!("@external:{package}"),
    }
}

/// The first sample text `pattern` takes entirely.
pub fn sample_for(pattern: &regex::Regex) -> Option<&'static str> {
    SAMPLES.iter().copied().find(|s| pattern.is_match(s))
}

/// The live elements `target` names. When none matches exactly, a text field is looked for by
/// its other fields: its text is what someone typed, not what identifies it (as in droid's widget
/// signature).
fn named<'a>(target: &Target, live: &[&'a Node]) -> Vec<&'a Node> {
    let exact: Vec<&Node> = live.iter().copied().filter(|n| target.matches(n)).collect();
    let without_text = Target {
        text: None,
        ..target.clone()
    };
    if !exact.is_empty() || target.text.is_none() || without_text == Target::default() {
        return exact;
    }
    live.iter()
        .copied()
        .filter(|n| n.is_editable() && without_text.matches(n))
        .collect()
}

/// The screen the device shows, from the simulator's truth log.
struct Shown {
    path: PathBuf,
    offset: u64,
    screen: String,
}

impl Shown {
    fn new(path: &Path) -> Shown {
        Shown {
            path: path.to_path_buf(),
            offset: 0,
            screen: String::new(),
        }
    }

    /// Reads the lines written since the last call; returns the screen shown now.
    fn now(&mut self) -> Result<&str, CheckError> {
        let fail = |source| CheckError::Truth {
            path: self.path.clone(),
            source,
        };
        let mut file = std::fs::File::open(&self.path).map_err(fail)?;
        file.seek(SeekFrom::Start(self.offset)).map_err(fail)?;
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(fail)?;
        // Only whole lines: the device may be writing the next one.
        let complete = text.rfind('\n').map_or(0, |end| end + 1);
        for line in text[..complete].lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
            if let Some(screen) = value.get("screen").and_then(|s| s.as_str()) {
                self.screen = screen.to_string();
            }
        }
        self.offset += complete as u64;
        Ok(&self.screen)
    }
}

/// Someone following the recording on a device.
struct Tester<'a, D: Device> {
    model: &'a AppModel,
    device: &'a D,
    shown: Shown,
}

impl<D: Device> Tester<'_, D> {
    /// From a fresh launch, performs each transition of `path`; the first that fails, if any.
    fn walk(&mut self, path: &[usize]) -> Result<Option<Failure>, CheckError> {
        let package = self.model.package();
        self.device.force_stop(package)?;
        self.device.launch(package)?;
        let start = &self.model.screen(self.model.start()).id;
        let now = self.shown.now()?.to_string();
        if now != *start {
            return Ok(Some(Failure {
                step: None,
                kind: FailureKind::Launch,
                detail: format!("a fresh launch showed {now}, not the start screen {start}"),
                shown: Some(now),
                matches: 0,
                point: None,
                handled_by: None,
                answered_by: None,
            }));
        }
        for &index in path {
            if let Some(failure) = self.perform(index)? {
                return Ok(Some(failure));
            }
        }
        Ok(None)
    }

    /// Carries out one transition as a tester would; a failure when the device did not end on
    /// its destination.
    fn perform(&mut self, index: usize) -> Result<Option<Failure>, CheckError> {
        let t = &self.model.transitions()[index];
        let from = self.model.screen(t.from).id.clone();
        let to = destination_name(self.model, &t.to);
        let failure = |kind, matches, detail| failure(self.model, index, kind, matches, detail);
        if t.action == Action::Back {
            self.device.key("back")?;
            let now = self.shown.now()?.to_string();
            return Ok((now != to).then(|| Failure {
                shown: Some(now.clone()),
                ..failure(
                    FailureKind::DidNotFire,
                    0,
                    format!("back on {from}: the device showed {now} instead of {to}"),
                )
            }));
        }
        let roots = self.live_roots()?;
        let live: Vec<&Node> = roots.iter().flat_map(Node::walk).collect();
        if let Some(problem) = self.fill_required(t, &live)? {
            return Ok(Some(failure(problem.0, 0, problem.1)));
        }
        let Some(target) = &t.target else {
            // A gesture anywhere on the screen.
            let (width, height) = self.model.screen_size();
            let screen = Bounds::from([0, 0, width as i32, height as i32]);
            let point = self.act(t, screen, None)?;
            return self.arrived(index, point, 0);
        };
        let matching = named(target, &live);
        if matching.is_empty() {
            return Ok(Some(failure(
                FailureKind::NoMatch,
                0,
                format!(
                    "{} {} on {from}: the target matches nothing on the screen",
                    t.action.name(),
                    summary(target)
                ),
            )));
        }
        let text = match self.text_for(t, &matching) {
            Ok(text) => text,
            Err(detail) => {
                return Ok(Some(failure(
                    FailureKind::NeedsText,
                    matching.len(),
                    detail,
                )))
            }
        };
        // Nested views with the same bounds are one place to touch.
        let mut places: Vec<Bounds> = Vec::new();
        for node in &matching {
            if !places.contains(&node.bounds) {
                places.push(node.bounds);
            }
        }
        for (tried, bounds) in places.iter().enumerate() {
            let point = self.act(t, *bounds, text)?;
            let outcome = self.arrived(index, point, matching.len())?;
            let stayed = outcome
                .as_ref()
                .is_some_and(|f| f.shown.as_deref() == Some(&from));
            if outcome.is_none() || !stayed || tried + 1 == places.len() {
                return Ok(outcome);
            }
        }
        Ok(None)
    }

    /// The live screen's window roots, from a hierarchy dump.
    fn live_roots(&self) -> Result<Vec<Node>, CheckError> {
        let xml = self.device.dump_hierarchy()?;
        parse_hierarchy(&xml).map_err(CheckError::Dump)
    }

    /// Types what `requires` asks into each field other than the target; a reason when the
    /// tester cannot.
    fn fill_required(
        &mut self,
        t: &Transition,
        live: &[&Node],
    ) -> Result<Option<(FailureKind, String)>, CheckError> {
        for (field, pattern) in &t.requires {
            let own_field = t.action == Action::Input
                && t.target
                    .as_ref()
                    .is_some_and(|target| target.resource_id.as_deref() == Some(field.as_str()));
            if own_field {
                continue;
            }
            let Some(text) = sample_for(pattern) else {
                return Ok(Some((FailureKind::NeedsText, needs_text(field, pattern))));
            };
            let Some(node) = live.iter().find(|n| n.attr("resource-id") == field) else {
                let detail = format!("the required field {field:?} is not on the screen");
                return Ok(Some((FailureKind::NoMatch, detail)));
            };
            let (x, y) = node.bounds.center();
            self.device.tap(x, y)?;
            self.device.input_text(text)?;
        }
        Ok(None)
    }

    /// What to type for an `input` transition (nothing for other actions).
    fn text_for(&self, t: &Transition, matching: &[&Node]) -> Result<Option<&'static str>, String> {
        if t.action != Action::Input {
            return Ok(None);
        }
        let field = matching[0].attr("resource-id");
        match t.requires.iter().find(|(id, _)| id == field) {
            Some((id, pattern)) => sample_for(pattern)
                .map(Some)
                .ok_or_else(|| needs_text(id, pattern)),
            None => Ok(Some(ANY_TEXT)),
        }
    }

    /// Acts on an element with these bounds; returns where the finger went down.
    fn act(
        &self,
        t: &Transition,
        bounds: Bounds,
        text: Option<&str>,
    ) -> Result<(i32, i32), CheckError> {
        let (x, y) = bounds.center();
        let direction = match t.action {
            Action::Click => {
                self.device.tap(x, y)?;
                return Ok((x, y));
            }
            Action::LongClick => {
                self.device.long_press(x, y, LONG_PRESS_MS)?;
                return Ok((x, y));
            }
            Action::Input => {
                self.device.tap(x, y)?;
                self.device.input_text(text.unwrap_or(ANY_TEXT))?;
                return Ok((x, y));
            }
            Action::ScrollUp => Direction::ScrollUp,
            Action::ScrollDown => Direction::ScrollDown,
            Action::SwipeLeft => Direction::SwipeLeft,
            Action::SwipeRight => Direction::SwipeRight,
            Action::Back => {
                self.device.key("back")?;
                return Ok((x, y));
            }
        };
        self.device.scroll(direction, Some(bounds))?;
        Ok(gesture_points(direction, bounds).0)
    }

    /// `None` when the device shows the transition's destination; else the failure, explained by
    /// the model's dispatch rule at `point`.
    fn arrived(
        &mut self,
        index: usize,
        point: (i32, i32),
        matches: usize,
    ) -> Result<Option<Failure>, CheckError> {
        let model = self.model;
        let t = &model.transitions()[index];
        let to = destination_name(model, &t.to);
        let now = self.shown.now()?.to_string();
        if now == to {
            return Ok(None);
        }
        let (handled_by, answered_by) = explain(model, t, point);
        let from = &model.screen(t.from).id;
        let mut detail = format!(
            "{} {} on {from}: the device showed {now} instead of {to}; ",
            t.action.name(),
            t.target
                .as_ref()
                .map_or_else(|| "(anywhere)".to_string(), summary),
        );
        let _ = write!(detail, "at ({}, {}) ", point.0, point.1);
        match &handled_by {
            Some(view) => {
                let _ = write!(detail, "{view} takes the touch");
            }
            None => detail.push_str("nothing takes the touch"),
        }
        match answered_by {
            Some(other) if other != index => {
                let dest = destination_name(model, &model.transitions()[other].to);
                let _ = write!(detail, " and transition {other} (to {dest}) answers it");
            }
            Some(_) => detail.push_str(
                " and by the model's rule this transition answers it: the device's state was not \
                 the recording's (a field without focus, a requirement unmet)",
            ),
            None => {
                let _ = write!(
                    detail,
                    " and no {} transition of {from} answers it",
                    t.action.name()
                );
            }
        }
        let kind = if matches > 1 {
            let _ = write!(
                detail,
                " (the target matches {matches} elements; each place was tried)"
            );
            FailureKind::Ambiguous
        } else {
            FailureKind::DidNotFire
        };
        Ok(Some(Failure {
            shown: Some(now),
            point: Some([point.0, point.1]),
            handled_by,
            answered_by: answered_by.filter(|&other| other != index),
            ..failure(model, index, kind, matches, detail)
        }))
    }
}

/// A failure of transition `index`, without what only a performed action can tell.
fn failure(
    model: &AppModel,
    index: usize,
    kind: FailureKind,
    matches: usize,
    detail: String,
) -> Failure {
    Failure {
        step: Some(step(model, index)),
        kind,
        detail,
        shown: None,
        matches,
        point: None,
        handled_by: None,
        answered_by: None,
    }
}

/// By the model's dispatch rule on the recorded screen: the view that takes a touch at `point`
/// and the transition that answers it.
fn explain(model: &AppModel, t: &Transition, point: (i32, i32)) -> (Option<String>, Option<usize>) {
    let screen = model.screen(t.from);
    let nodes = screen.nodes();
    let touch = Touch::at(&screen.roots, point.0, point.1);
    let ranked = match t.action {
        Action::Click | Action::LongClick => touch.for_press(),
        Action::Input => touch
            .handler
            .map(|field| dispatch::for_field(&screen.roots, field))
            .unwrap_or_default(),
        _ => touch.for_gesture(),
    };
    let handled_by = touch.handler.map(|h| {
        let mut view = describe(nodes[h]);
        if !touch.handler_enabled {
            view.push_str(" (disabled)");
        }
        view
    });
    let answered = dispatch::choose(
        model.transitions(),
        t.from,
        t.action,
        &nodes,
        &ranked,
        |_| true,
    );
    (handled_by, answered)
}

fn needs_text(field: &str, pattern: &regex::Regex) -> String {
    format!(
        "{field:?} must match {:?}, and none of the tester's sample texts does",
        pattern.as_str()
    )
}

/// `ImageView "delete_icon"`: the class and the first of resource id, text, content description.
fn describe(node: &Node) -> String {
    let class = node.attr("class").rsplit('.').next().unwrap_or("");
    let id = node.attr("resource-id");
    let id = id.rsplit('/').next().unwrap_or(id);
    let name = [id, node.attr("text"), node.attr("content-desc")]
        .into_iter()
        .find(|s| !s.is_empty())
        .unwrap_or("");
    format!("{class} {}", quoted(name))
}

/// A target in a few words: resource id (short), text, content description, else class.
fn summary(target: &Target) -> String {
    let id = target
        .resource_id
        .as_deref()
        .map(|id| format!("id/{}", id.rsplit('/').next().unwrap_or(id)));
    let parts: Vec<String> = [
        id,
        target.text.as_deref().map(quoted),
        target.content_desc.as_deref().map(quoted),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        let class = target.class.as_deref().unwrap_or("element");
        return class.rsplit('.').next().unwrap_or(class).to_string();
    }
    parts.join(" ")
}

/// App text, cut short and quoted with control characters escaped (it may reach a terminal).
fn quoted(text: &str) -> String {
    let mut cut: String = text.chars().take(SHOWN_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

impl Report {
    /// The report for people: a summary line, a row per reachable screen, then the transitions
    /// that failed.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{} ({}): {} screens, {} reachable from the start screen, {} shown by the device \
             (the ceiling); of the app's own package: {} reachable, {} shown; inference adds {} \
             moves\n\n",
            self.package,
            self.app,
            self.screens_total,
            self.reachable,
            self.ceiling,
            self.app_reachable,
            self.app_ceiling,
            self.inferred_moves
        );
        let width = self
            .screens
            .iter()
            .map(|s| s.screen.chars().count())
            .max()
            .unwrap_or(0)
            .max("screen".len());
        let _ = writeln!(out, "{:width$}  shown  steps  package / why not", "screen");
        for s in &self.screens {
            let (shown, why) = match (&s.reason, s.reached) {
                (_, true) if s.package == self.package => ("yes", String::new()),
                (_, true) => ("yes", s.package.clone()),
                (Some(reason), false) => ("no", reason.detail.clone()),
                (None, false) => ("no", "no path".to_string()),
            };
            let row = format!("{:width$}  {shown:5}  {:5}  {why}", s.screen, s.path.len());
            let _ = writeln!(out, "{}", row.trim_end());
        }
        if !self.failed_transitions.is_empty() {
            let _ = writeln!(
                out,
                "\n{} transitions did not do what the model says (walks went around them):",
                self.failed_transitions.len()
            );
            for f in &self.failed_transitions {
                let index = f
                    .step
                    .as_ref()
                    .map_or(String::new(), |s| s.transition.to_string());
                let _ = writeln!(out, "  #{index}: {}", f.detail);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAIN: &str = r#"{
        "package": "p.q", "screen_size": [100, 200], "start": "a",
        "screens": [
            {"id": "a", "elements": [{"text": "Next", "clickable": true, "bounds": [0, 0, 50, 50]},
                                     {"text": "Skip", "clickable": true, "bounds": [0, 50, 50, 100]}]},
            {"id": "b", "elements": [{"text": "Next", "clickable": true, "bounds": [0, 0, 50, 50]}]},
            {"id": "c", "elements": []}
        ],
        "transitions": [
            {"from": "a", "action": "click", "target": {"text": "Next"}, "to": "b"},
            {"from": "b", "action": "click", "target": {"text": "Next"}, "to": "c"},
            {"from": "a", "action": "click", "target": {"text": "Skip"}, "to": "c"}
        ]
    }"#;

    #[test]
    fn paths_are_shortest_then_earliest_and_go_around_excluded_transitions() {
        let model = AppModel::parse(CHAIN, "m", None).unwrap();
        assert_eq!(shortest_path(&model, 0, |_| false), Some(vec![]));
        assert_eq!(shortest_path(&model, 2, |_| false), Some(vec![2]));
        assert_eq!(shortest_path(&model, 2, |i| i == 2), Some(vec![0, 1]));
        assert_eq!(shortest_path(&model, 2, |i| i != 1), None);
    }

    #[test]
    fn samples_follow_the_form_a_field_asks_for() {
        let anchored = |p: &str| regex::Regex::new(&format!("^(?:{p})$")).unwrap();
        assert_eq!(sample_for(&anchored(".+@.+")), Some("user@example.com"));
        assert_eq!(sample_for(&anchored("[0-9]{16}")), Some("4111111111111111"));
        assert_eq!(sample_for(&anchored("[0-9]{4}")), Some("1234"));
        assert_eq!(sample_for(&anchored("#[a-f0-9]{6}")), None);
    }

    #[test]
    fn a_text_fields_content_does_not_identify_it() {
        let roots = parse_hierarchy(
            r#"<hierarchy><node class="android.widget.EditText" text="hello" resource-id="q" bounds="[0,0][1,1]"/><node class="android.widget.TextView" text="hello" bounds="[0,0][1,1]"/></hierarchy>"#,
        )
        .unwrap();
        let target = Target {
            resource_id: Some("q".into()),
            text: Some("Search".into()),
            ..Target::default()
        };
        let live: Vec<&Node> = roots.iter().collect();
        assert_eq!(named(&target, &live), [&roots[0]]);
        let label = Target {
            text: Some("Search".into()),
            ..Target::default()
        };
        assert!(named(&label, &live).is_empty(), "text alone names no field");
        let typed = Target {
            text: Some("hello".into()),
            ..Target::default()
        };
        assert_eq!(named(&typed, &live).len(), 2, "exact matches first");
    }

    #[test]
    fn app_text_is_cut_and_escaped_for_people() {
        let node = &parse_hierarchy(
            r#"<hierarchy><node class="android.widget.ImageView" resource-id="p:id/delete" bounds="[0,0][1,1]"/></hierarchy>"#,
        )
        .unwrap()[0];
        assert_eq!(describe(node), r#"ImageView "delete""#);
        assert_eq!(quoted("a\u{1b}[31m"), r#""a\u{1b}[31m""#);
        assert_eq!(
            quoted(&"x".repeat(40)),
            format!("{:?}", format!("{}…", "x".repeat(32)))
        );
        let target = Target {
            class: Some("android.widget.ListView".into()),
            ..Target::default()
        };
        assert_eq!(summary(&target), "ListView");
    }
}
