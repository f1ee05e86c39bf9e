//! The act stage: executes `decision` events on a device and writes one `result` per action.
//!
//! Targets resolve through the observation that preceded the decision in the stream, by the
//! screen model's rules ([`crate::screen`]): a `ref` names one of its elements; a bounding box
//! snaps to the actionable element it overlaps best, else the smallest one under its centre
//! (origin `xml`), else the raw centre is tapped (origin `llm`). An invalid
//! target (box outside the screen, inverted, missing where one is needed, unknown ref) fails that
//! action with `invalid_bbox` and the batch goes on; any other failure aborts the batch and the
//! remaining actions get `skipped` results. See `docs/act.md`.

use std::time::{Duration, Instant};

use crate::device::{Device, DeviceError, Direction};
use crate::events::{
    now_ts, Action, ActionResult, ActionType, Decision, ErrorKind, Event, Line, Observation,
    Origin, MAX_WAIT_MS,
};
use crate::filter::{Filter, Output};
use crate::screen::{describe, element_by_ref, snap};
use crate::secret::{Secret, TEST_PASSWORD_PLACEHOLDER};
use crate::ui::{Bounds, UiElement};

/// How actions are executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Pause between two actions of a batch.
    pub pause: Duration,
    /// Pause between tapping a field and typing into it through the ADB Keyboard IME (text
    /// `input text` cannot type).
    pub settle: Duration,
    pub long_press_ms: u32,
    /// `wait` without a duration.
    pub default_wait: Duration,
    /// Typed where an input's text holds [`TEST_PASSWORD_PLACEHOLDER`] (decisions never carry
    /// the password itself).
    pub test_password: Option<Secret>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            pause: Duration::from_millis(500),
            settle: Duration::from_millis(300),
            long_press_ms: 1000,
            default_wait: Duration::from_secs(1),
            test_password: None,
        }
    }
}

/// Why one action failed.
struct Failure {
    kind: ErrorKind,
    message: String,
    /// The rest of the batch still runs.
    continue_batch: bool,
}

impl Failure {
    fn invalid(message: impl Into<String>) -> Failure {
        Failure {
            kind: ErrorKind::InvalidBbox,
            message: message.into(),
            continue_batch: true,
        }
    }
}

impl From<DeviceError> for Failure {
    fn from(err: DeviceError) -> Failure {
        let kind = match err {
            DeviceError::UnsupportedText(_) => ErrorKind::UnsupportedText,
            _ => ErrorKind::Device,
        };
        Failure {
            kind,
            message: err.to_string(),
            continue_batch: false,
        }
    }
}

/// Where an action lands.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub point: (i32, i32),
    pub origin: Origin,
    pub element: Option<UiElement>,
    /// The element as people read it (see [`describe`]).
    pub description: Option<String>,
    /// The area a gesture runs in (scrolls and swipes).
    pub area: Option<Bounds>,
}

/// The act stage: passes every line through, executes decisions, writes their results. The
/// device is opened by `open` at the first decision (so a stream without decisions needs no
/// device), and again at the next decision when opening failed; a decision that finds no
/// device gets failed results, and the failure is reported at once.
pub struct Stage<O> {
    config: Config,
    open: O,
    device: Option<Box<dyn Device>>,
    last_observation: Option<Observation>,
}

impl<O: FnMut() -> Result<Box<dyn Device>, DeviceError>> Stage<O> {
    pub fn new(config: Config, open: O) -> Stage<O> {
        Stage {
            config,
            open,
            device: None,
            last_observation: None,
        }
    }
}

impl<O: FnMut() -> Result<Box<dyn Device>, DeviceError>> Filter for Stage<O> {
    type Error = std::convert::Infallible;

    fn line(&mut self, line: Line, out: &mut Output<'_>) -> Result<(), Self::Error> {
        out.pass(&line);
        match line.event {
            Some(Event::Observation(observation)) => self.last_observation = Some(*observation),
            Some(Event::Decision(decision)) => {
                if self.device.is_none() {
                    match (self.open)() {
                        Ok(opened) => self.device = Some(opened),
                        Err(err) => out.problem(&format_args!("the device: {err}")),
                    }
                }
                let results = match &self.device {
                    Some(device) => execute_decision(
                        &self.config,
                        &**device,
                        &decision,
                        self.last_observation.as_ref(),
                    ),
                    None => unreachable_device(&decision),
                };
                for result in results {
                    out.event(&Event::Result(result));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Runs a decision's actions in order and returns one result per action.
pub fn execute_decision(
    config: &Config,
    device: &dyn Device,
    decision: &Decision,
    observation: Option<&Observation>,
) -> Vec<ActionResult> {
    let screen = screen_of(device, observation);
    let mut activity = match observation.and_then(|o| o.activity.clone()) {
        Some(activity) => Some(activity),
        None => device.foreground().ok().map(|f| f.activity),
    };
    let mut results = Vec::new();
    let mut aborted = false;
    for (index, action) in decision.actions.iter().enumerate() {
        let mut result = result_for(decision, index, action.action.clone());
        if aborted {
            results.push(skipped(result));
            continue;
        }
        if index > 0 {
            std::thread::sleep(config.pause);
        }
        let started = Instant::now();
        let target = resolve(action, observation, screen);
        if let Ok(Some(target)) = &target {
            describe_target(&mut result, target);
        }
        let done = target.and_then(|target| perform(config, device, action, target.as_ref()));
        result.duration_ms = started.elapsed().as_millis() as u64;
        aborted = !settle(device, &mut result, &mut activity, done);
        results.push(result);
    }
    if let Some(package) = &decision.relaunch {
        let mut result = result_for(decision, decision.actions.len(), ActionType::Relaunch);
        results.push(match aborted {
            true => skipped(result),
            false => {
                relaunch(device, &mut result, &mut activity, package, observation);
                result
            }
        });
    }
    results
}

/// The result of a decision's action at `index`, not run yet.
fn result_for(decision: &Decision, index: usize, action_type: ActionType) -> ActionResult {
    ActionResult {
        run_id: decision.run_id.clone(),
        step: decision.step,
        ts: Some(now_ts()),
        index: index as u32,
        action_type,
        ..ActionResult::default()
    }
}

fn skipped(mut result: ActionResult) -> ActionResult {
    result.error_kind = Some(ErrorKind::Skipped);
    result.error_message = Some("an earlier action of the batch failed".into());
    result
}

/// Completes a result with what was `done` and, after a success, the foreground app. Returns
/// whether the batch goes on.
fn settle(
    device: &dyn Device,
    result: &mut ActionResult,
    activity: &mut Option<String>,
    done: Result<(), Failure>,
) -> bool {
    match done {
        Ok(()) => {
            result.success = true;
            if let Ok(now) = device.foreground() {
                result.navigated_away = activity.as_deref() != Some(now.activity.as_str());
                *activity = Some(now.activity.clone());
                result.package_after = Some(now.package);
                result.activity_after = Some(now.activity);
            }
            true
        }
        Err(failure) => {
            result.error_kind = Some(failure.kind);
            result.error_message = Some(failure.message);
            failure.continue_batch
        }
    }
}

/// Restarts the app a decision names in `relaunch` (empty: the package of the observation it
/// was decided on): force-stop, so the app starts from its first state, then launch.
fn relaunch(
    device: &dyn Device,
    result: &mut ActionResult,
    activity: &mut Option<String>,
    named: &str,
    observation: Option<&Observation>,
) {
    let started = Instant::now();
    let package = Some(named)
        .filter(|p| !p.is_empty())
        .or_else(|| observation.and_then(|o| o.package.as_deref()));
    let done = match package {
        Some(package) => {
            result.target = Some(package.to_string());
            device
                .force_stop(package)
                .and_then(|()| device.launch(package))
                .map_err(Failure::from)
        }
        None => Err(Failure {
            kind: ErrorKind::InvalidAction,
            message: "relaunch names no package and the observation shows none".into(),
            continue_batch: false,
        }),
    };
    result.duration_ms = started.elapsed().as_millis() as u64;
    settle(device, result, activity, done);
}

/// Results for a decision when no device could be opened: every action failed.
fn unreachable_device(decision: &Decision) -> Vec<ActionResult> {
    decision
        .actions
        .iter()
        .enumerate()
        .map(|(index, action)| ActionResult {
            run_id: decision.run_id.clone(),
            step: decision.step,
            ts: Some(now_ts()),
            index: index as u32,
            action_type: action.action.clone(),
            error_kind: Some(match index {
                0 => ErrorKind::Device,
                _ => ErrorKind::Skipped,
            }),
            error_message: Some("no device".into()),
            ..ActionResult::default()
        })
        .collect()
}

fn screen_of(device: &dyn Device, observation: Option<&Observation>) -> Option<(u32, u32)> {
    observation
        .and_then(|o| o.screen_size)
        .map(|[w, h]| (w, h))
        .or_else(|| device.screen_size().ok())
}

/// For people, and never a password field's text.
fn describe_target(result: &mut ActionResult, target: &Target) {
    let (x, y) = target.point;
    result.tap_point = Some([i64::from(x), i64::from(y)]);
    result.origin = Some(target.origin);
    result.target = Some(match &target.description {
        Some(description) => description.clone(),
        None => format!("({x}, {y})"),
    });
    result.target_signature = target
        .element
        .as_ref()
        .map(|e| e.signature.clone())
        .filter(|s| !s.is_empty());
}

/// Where an action lands; `Ok(None)` for actions without a target (back, wait, ...).
fn resolve(
    action: &Action,
    observation: Option<&Observation>,
    screen: Option<(u32, u32)>,
) -> Result<Option<Target>, Failure> {
    let elements = observation.map_or(&[][..], |o| &o.elements[..]);
    match action.action {
        ActionType::Click | ActionType::Input | ActionType::LongPress => {
            if let Some(element) = by_ref(action, observation)? {
                return Ok(Some(element_target(elements, element)));
            }
            let bounds = checked_box(action, screen)?
                .ok_or_else(|| Failure::invalid("no target_bounding_box or ref"))?;
            let (x, y) = bounds.center();
            let snapped = action
                .target_bounding_box
                .as_ref()
                .and_then(|target| snap(elements, target));
            Ok(Some(match snapped {
                Some(element) => element_target(elements, element),
                None => Target {
                    point: (x, y),
                    origin: Origin::Llm,
                    element: None,
                    description: None,
                    area: None,
                },
            }))
        }
        ActionType::ScrollUp
        | ActionType::ScrollDown
        | ActionType::SwipeLeft
        | ActionType::SwipeRight => {
            let area = match by_ref(action, observation)? {
                Some(element) => Some((element.bounds, Origin::Xml)),
                None => checked_box(action, screen)?.map(|bounds| {
                    let (x, y) = bounds.center();
                    let container = elements
                        .iter()
                        .filter(|e| e.scrollable && e.bounds.contains(x, y))
                        .min_by_key(|e| e.bounds.area());
                    match container {
                        Some(container) => (container.bounds, Origin::Xml),
                        None => (bounds, Origin::Llm),
                    }
                }),
            };
            Ok(area.map(|(area, origin)| Target {
                point: area.center(),
                origin,
                element: None,
                description: None,
                area: Some(area),
            }))
        }
        ActionType::Tap => {
            let (w, h) = screen.ok_or_else(|| Failure::invalid("screen size unknown"))?;
            let point = match (action.point, action.grid) {
                (Some([x, y]), _) => (x, y),
                (None, Some(grid)) => {
                    if grid.rows == 0
                        || grid.cols == 0
                        || grid.row >= grid.rows
                        || grid.col >= grid.cols
                    {
                        return Err(Failure::invalid(format!(
                            "grid cell ({}, {}) outside a {}x{} grid",
                            grid.row, grid.col, grid.rows, grid.cols
                        )));
                    }
                    let cell_w = i64::from(w) / i64::from(grid.cols);
                    let cell_h = i64::from(h) / i64::from(grid.rows);
                    (
                        cell_w * i64::from(grid.col) + cell_w / 2,
                        cell_h * i64::from(grid.row) + cell_h / 2,
                    )
                }
                (None, None) => return Err(Failure::invalid("tap needs a point or a grid cell")),
            };
            if point.0 < 0 || point.1 < 0 || point.0 >= i64::from(w) || point.1 >= i64::from(h) {
                return Err(Failure::invalid(format!(
                    "point ({}, {}) outside the {w}x{h} screen",
                    point.0, point.1
                )));
            }
            Ok(Some(Target {
                point: (point.0 as i32, point.1 as i32),
                origin: Origin::Llm,
                element: None,
                description: None,
                area: None,
            }))
        }
        ActionType::Wait => match action.duration_ms {
            Some(ms) if ms > MAX_WAIT_MS => Err(Failure {
                kind: ErrorKind::InvalidAction,
                message: format!("wait of {ms} ms is longer than the {MAX_WAIT_MS} ms allowed"),
                continue_batch: false,
            }),
            _ => Ok(None),
        },
        ActionType::Back | ActionType::Home | ActionType::Recents => Ok(None),
        ActionType::Relaunch | ActionType::Other(_) => Err(not_decidable(action)),
    }
}

fn element_target(elements: &[UiElement], element: &UiElement) -> Target {
    Target {
        point: element.bounds.center(),
        origin: Origin::Xml,
        element: Some(element.clone()),
        description: Some(describe(elements, element)),
        area: None,
    }
}

fn by_ref<'a>(
    action: &Action,
    observation: Option<&'a Observation>,
) -> Result<Option<&'a UiElement>, Failure> {
    let Some(wanted) = action.ref_id else {
        return Ok(None);
    };
    observation
        .and_then(|observation| element_by_ref(observation, wanted))
        .map(Some)
        .ok_or_else(|| Failure::invalid(format!("ref {wanted} is not in the observation")))
}

/// The bounding box, checked against the screen; `Ok(None)` when there is none.
fn checked_box(action: &Action, screen: Option<(u32, u32)>) -> Result<Option<Bounds>, Failure> {
    let Some(bbox) = action.target_bounding_box else {
        return Ok(None);
    };
    let [x1, y1] = bbox.top_left;
    let [x2, y2] = bbox.bottom_right;
    if x1 >= x2 || y1 >= y2 {
        return Err(Failure::invalid(format!(
            "bounding box [{x1},{y1}]-[{x2},{y2}] is empty or inverted"
        )));
    }
    let (w, h) = screen.map_or((i64::MAX, i64::MAX), |(w, h)| (i64::from(w), i64::from(h)));
    if x1 < 0 || y1 < 0 || x2 > w || y2 > h {
        return Err(Failure::invalid(format!(
            "bounding box [{x1},{y1}]-[{x2},{y2}] is outside the {w}x{h} screen"
        )));
    }
    let fits = |v: i64| i32::try_from(v).map_err(|_| Failure::invalid("coordinate out of range"));
    Ok(Some(Bounds::from([
        fits(x1)?,
        fits(y1)?,
        fits(x2)?,
        fits(y2)?,
    ])))
}

fn perform(
    config: &Config,
    device: &dyn Device,
    action: &Action,
    target: Option<&Target>,
) -> Result<(), Failure> {
    let point = || {
        target
            .map(|t| t.point)
            .ok_or_else(|| Failure::invalid("no target"))
    };
    match action.action {
        ActionType::Click | ActionType::Tap => {
            let (x, y) = point()?;
            device.tap(x, y)?;
        }
        ActionType::LongPress => {
            let (x, y) = point()?;
            device.long_press(x, y, config.long_press_ms)?;
        }
        ActionType::Input => {
            let text = action.input_text.as_deref().ok_or_else(|| Failure {
                kind: ErrorKind::InvalidAction,
                message: "input without input_text".into(),
                continue_batch: false,
            })?;
            let text = with_password(text, config.test_password.as_ref())?;
            let (x, y) = point()?;
            device.tap(x, y)?;
            // Input sets what the field holds, as a user retyping it would: else a replayed
            // step would add to what it typed before.
            let held = target
                .and_then(|t| t.element.as_ref())
                .map_or(0, held_text_len);
            if held > 0 {
                device.clear_field(held)?;
            }
            // `input text` sends key events, which Android queues behind the tap until the app
            // has handled it: they reach the field the tap focused. The ADB Keyboard's
            // broadcast (non-ASCII text) is not queued so: the IME is given time to bind to
            // the field.
            if !crate::device::text::is_plain_ascii(text.expose()) {
                std::thread::sleep(config.settle);
            }
            device.input_text(text.expose())?;
        }
        ActionType::ScrollUp
        | ActionType::ScrollDown
        | ActionType::SwipeLeft
        | ActionType::SwipeRight => {
            let direction = match action.action {
                ActionType::ScrollUp => Direction::ScrollUp,
                ActionType::ScrollDown => Direction::ScrollDown,
                ActionType::SwipeLeft => Direction::SwipeLeft,
                _ => Direction::SwipeRight,
            };
            device.scroll(direction, target.and_then(|t| t.area))?;
        }
        ActionType::Back => device.key("back")?,
        ActionType::Home => device.key("home")?,
        ActionType::Recents => device.key("app_switch")?,
        ActionType::Wait => {
            let wait = action
                .duration_ms
                .map_or(config.default_wait, Duration::from_millis);
            std::thread::sleep(wait);
        }
        ActionType::Relaunch | ActionType::Other(_) => return Err(not_decidable(action)),
    }
    Ok(())
}

/// The characters an `input` on `field` deletes before typing: the text it holds (typed
/// before, or filled in by the app); none when it is not a text field or shows only its hint.
pub fn held_text_len(field: &UiElement) -> usize {
    if field.editable && field.text != field.hint {
        field.text.chars().count()
    } else {
        0
    }
}

/// An action type a decision may not hold: unknown to this droid, or `relaunch` (a decision's
/// field, not an action).
fn not_decidable(action: &Action) -> Failure {
    Failure {
        kind: ErrorKind::InvalidAction,
        message: format!(
            "\"{}\" is not an action (one of {})",
            action.action,
            ActionType::decidable_names().join(", ")
        ),
        continue_batch: true,
    }
}

/// The text to type, with the test password in place of its placeholder (wrapped as a secret
/// because it may now hold the password).
fn with_password(text: &str, password: Option<&Secret>) -> Result<Secret, Failure> {
    if !text.contains(TEST_PASSWORD_PLACEHOLDER) {
        return Ok(Secret::new(text));
    }
    let password = password.ok_or_else(|| Failure {
        kind: ErrorKind::InvalidAction,
        message: format!(
            "input types {TEST_PASSWORD_PLACEHOLDER} but no test password is set \
             (--test-password, test_password in user_config.db, TEST_PASSWORD)"
        ),
        continue_batch: false,
    })?;
    Ok(Secret::new(
        text.replace(TEST_PASSWORD_PLACEHOLDER, password.expose()),
    ))
}

/// A standalone verb (`droid-act tap 540 1200`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verb {
    Tap(i32, i32),
    LongPress(i32, i32),
    Swipe((i32, i32), (i32, i32), u32),
    Text(String),
    Key(String),
    Back,
    Home,
    Launch(String),
    /// Force-stop an app.
    Stop(String),
}

/// Runs one verb and describes it as a `result` (text typed is never echoed).
pub fn run_verb(
    config: &Config,
    device: &dyn Device,
    verb: &Verb,
) -> Result<ActionResult, DeviceError> {
    let started = Instant::now();
    let touched: &[(i32, i32)] = match verb {
        Verb::Tap(x, y) | Verb::LongPress(x, y) => &[(*x, *y)],
        Verb::Swipe(from, to, _) => &[*from, *to],
        _ => &[],
    };
    if !touched.is_empty() {
        // Android drops a touch outside the display without a word; say so instead.
        if let Ok((width, height)) = device.screen_size() {
            let outside = touched.iter().find(|(x, y)| {
                *x < 0
                    || *y < 0
                    || i64::from(*x) >= i64::from(width)
                    || i64::from(*y) >= i64::from(height)
            });
            if let Some(&(x, y)) = outside {
                return Err(DeviceError::OffScreen {
                    x,
                    y,
                    width,
                    height,
                });
            }
        }
    }
    let before = device.foreground().ok();
    let (action_type, target, point) = match verb {
        Verb::Tap(x, y) => {
            device.tap(*x, *y)?;
            ("tap", format!("({x}, {y})"), Some((*x, *y)))
        }
        Verb::LongPress(x, y) => {
            device.long_press(*x, *y, config.long_press_ms)?;
            ("long_press", format!("({x}, {y})"), Some((*x, *y)))
        }
        Verb::Swipe(from, to, ms) => {
            device.swipe(*from, *to, *ms)?;
            ("swipe", format!("{from:?} -> {to:?}"), Some(*from))
        }
        Verb::Text(text) => {
            device.input_text(text)?;
            (
                "input",
                format!("{} characters", text.chars().count()),
                None,
            )
        }
        Verb::Key(name) => {
            device.key(name)?;
            ("key", name.clone(), None)
        }
        Verb::Back => {
            device.key("back")?;
            ("back", "KEYCODE_BACK".into(), None)
        }
        Verb::Home => {
            device.key("home")?;
            ("home", "KEYCODE_HOME".into(), None)
        }
        Verb::Launch(package) => {
            device.launch(package)?;
            ("launch", package.clone(), None)
        }
        Verb::Stop(package) => {
            device.force_stop(package)?;
            ("stop", package.clone(), None)
        }
    };
    let foreground = device.foreground().ok();
    // As in a batch: the foreground activity differs from the one before the verb.
    let navigated_away = match (&before, &foreground) {
        (Some(before), Some(after)) => before.activity != after.activity,
        _ => false,
    };
    Ok(ActionResult {
        ts: Some(now_ts()),
        action_type: action_type.into(),
        target: Some(target),
        success: true,
        navigated_away,
        duration_ms: started.elapsed().as_millis() as u64,
        tap_point: point.map(|(x, y)| [i64::from(x), i64::from(y)]),
        package_after: foreground.as_ref().map(|f| f.package.clone()),
        activity_after: foreground.map(|f| f.activity),
        ..ActionResult::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{BoundingBox, GridCell};

    fn element(id: u32, bounds: [i32; 4], clickable: bool) -> UiElement {
        UiElement {
            element_id: id,
            bounds: Bounds::from(bounds),
            clickable,
            enabled: true,
            class_name: "android.widget.Button".into(),
            text: format!("e{id}"),
            ..UiElement::default()
        }
    }

    fn observation(elements: Vec<UiElement>) -> Observation {
        Observation {
            screen_size: Some([1080, 2400]),
            elements,
            ..Observation::default()
        }
    }

    fn click_box(x1: i64, y1: i64, x2: i64, y2: i64) -> Action {
        Action {
            target_bounding_box: Some(BoundingBox {
                top_left: [x1, y1],
                bottom_right: [x2, y2],
            }),
            ..Action::new(ActionType::Click)
        }
    }

    fn resolved(action: &Action, obs: &Observation) -> Result<Option<Target>, String> {
        resolve(action, Some(obs), Some((1080, 2400))).map_err(|f| f.kind.to_string())
    }

    #[test]
    fn centre_snaps_to_the_smallest_enabled_actionable_element() {
        let mut disabled = element(3, [400, 400, 600, 600], true);
        disabled.enabled = false;
        let obs = observation(vec![
            element(0, [0, 0, 1080, 2400], true),
            element(1, [100, 100, 900, 900], true),
            element(2, [300, 300, 700, 700], false),
            disabled,
        ]);
        let target = resolved(&click_box(450, 450, 550, 550), &obs)
            .unwrap()
            .unwrap();
        assert_eq!(target.origin, Origin::Xml);
        assert_eq!(target.element.unwrap().element_id, 1);
        assert_eq!(target.point, (500, 500));
    }

    #[test]
    fn no_element_under_the_centre_taps_the_raw_centre() {
        let obs = observation(vec![element(0, [0, 0, 100, 100], true)]);
        let target = resolved(&click_box(500, 500, 700, 900), &obs)
            .unwrap()
            .unwrap();
        assert_eq!(target.origin, Origin::Llm);
        assert_eq!(target.point, (600, 700));
        assert!(target.element.is_none());
    }

    #[test]
    fn invalid_boxes_are_invalid_bbox() {
        let obs = observation(vec![]);
        for action in [
            click_box(500, 500, 400, 600),
            click_box(0, 0, 2000, 100),
            click_box(-5, 0, 100, 100),
            click_box(10, 10, 10, 20),
            Action::new(ActionType::Click),
            Action {
                ref_id: Some(9),
                ..Action::new(ActionType::Click)
            },
        ] {
            assert_eq!(
                resolved(&action, &obs).unwrap_err(),
                "invalid_bbox",
                "{action:?}"
            );
        }
    }

    #[test]
    fn refs_resolve_through_the_observation() {
        let mut field = element(4, [0, 1000, 1080, 1100], true);
        field.ref_id = Some(7);
        let obs = observation(vec![element(0, [0, 0, 10, 10], true), field]);
        let action = Action {
            ref_id: Some(7),
            ..click_box(0, 0, 10, 10)
        };
        let target = resolved(&action, &obs).unwrap().unwrap();
        assert_eq!(target.element.unwrap().element_id, 4);
        assert_eq!(target.point, (540, 1050));
    }

    #[test]
    fn grid_cells_and_points() {
        let obs = observation(vec![]);
        let tap = Action {
            grid: Some(GridCell {
                rows: 4,
                cols: 2,
                row: 3,
                col: 1,
            }),
            ..Action::new(ActionType::Tap)
        };
        assert_eq!(resolved(&tap, &obs).unwrap().unwrap().point, (810, 2100));
        let outside = Action {
            point: Some([1080, 5]),
            ..Action::new(ActionType::Tap)
        };
        assert_eq!(resolved(&outside, &obs).unwrap_err(), "invalid_bbox");
        let bad_cell = Action {
            grid: Some(GridCell {
                rows: 2,
                cols: 2,
                row: 2,
                col: 0,
            }),
            ..Action::new(ActionType::Tap)
        };
        assert_eq!(resolved(&bad_cell, &obs).unwrap_err(), "invalid_bbox");
    }

    #[test]
    fn scrolls_use_the_scrollable_container_under_the_box() {
        let mut list = element(1, [0, 300, 1080, 2000], false);
        list.scrollable = true;
        let obs = observation(vec![list]);
        let action = Action {
            action: ActionType::ScrollDown,
            ..click_box(100, 500, 200, 600)
        };
        let target = resolved(&action, &obs).unwrap().unwrap();
        assert_eq!(target.area, Some(Bounds::from([0, 300, 1080, 2000])));
        let whole = Action::new(ActionType::ScrollDown);
        assert_eq!(resolved(&whole, &obs).unwrap(), None);
    }

    #[test]
    fn password_fields_are_described_without_their_text() {
        let mut field = element(1, [0, 0, 10, 10], true);
        field.class_name = "android.widget.EditText".into();
        field.text = "hunter2".into();
        field.password = true;
        field.resource_id = "app:id/pin".into();
        assert_eq!(describe(&[], &field), "EditText #pin (password)");
        field.password = false;
        assert_eq!(describe(&[], &field), "EditText \"hunter2\"");
    }

    /// A device that records what it is asked and fails on request.
    struct Recorder {
        calls: std::sync::Mutex<Vec<String>>,
        fail_on: &'static str,
        activities: std::sync::Mutex<Vec<&'static str>>,
    }

    impl Recorder {
        fn new(fail_on: &'static str, activities: Vec<&'static str>) -> Recorder {
            Recorder {
                calls: Default::default(),
                fail_on,
                activities: std::sync::Mutex::new(activities),
            }
        }

        fn call(&self, call: String) -> Result<(), DeviceError> {
            let fails = !self.fail_on.is_empty() && call.starts_with(self.fail_on);
            self.calls.lock().unwrap().push(call.clone());
            if fails {
                return Err(DeviceError::Screenshot(format!("{call} failed")));
            }
            Ok(())
        }
    }

    impl Device for Recorder {
        fn serial(&self) -> &str {
            "fake"
        }
        fn info(&self) -> Result<crate::events::DeviceInfo, DeviceError> {
            Ok(Default::default())
        }
        fn screen_size(&self) -> Result<(u32, u32), DeviceError> {
            Ok((1080, 2400))
        }
        fn foreground(&self) -> Result<crate::device::Foreground, DeviceError> {
            let mut activities = self.activities.lock().unwrap();
            let activity = if activities.len() > 1 {
                activities.remove(0)
            } else {
                activities[0]
            };
            Ok(crate::device::Foreground {
                package: "p".into(),
                activity: activity.into(),
            })
        }
        fn launch(&self, package: &str) -> Result<(), DeviceError> {
            self.call(format!("launch {package}"))
        }
        fn force_stop(&self, package: &str) -> Result<(), DeviceError> {
            self.call(format!("stop {package}"))
        }
        fn dump_hierarchy(&self) -> Result<String, DeviceError> {
            Ok(String::new())
        }
        fn screenshot(&self) -> Result<Vec<u8>, DeviceError> {
            Ok(Vec::new())
        }
        fn tap(&self, x: i32, y: i32) -> Result<(), DeviceError> {
            self.call(format!("tap {x} {y}"))
        }
        fn long_press(&self, x: i32, y: i32, ms: u32) -> Result<(), DeviceError> {
            self.call(format!("long {x} {y} {ms}"))
        }
        fn swipe(&self, from: (i32, i32), to: (i32, i32), ms: u32) -> Result<(), DeviceError> {
            self.call(format!("swipe {from:?} {to:?} {ms}"))
        }
        fn scroll(&self, direction: Direction, area: Option<Bounds>) -> Result<(), DeviceError> {
            self.call(format!("scroll {direction:?} {area:?}"))
        }
        fn key(&self, name: &str) -> Result<(), DeviceError> {
            self.call(format!("key {name}"))
        }
        fn input_text(&self, text: &str) -> Result<(), DeviceError> {
            self.call(format!("text {text}"))
        }
        fn pull(&self, _: &str) -> Result<Vec<u8>, DeviceError> {
            Ok(Vec::new())
        }
        fn crash_log(&self, _: bool) -> Result<String, DeviceError> {
            Ok(String::new())
        }
        fn app_version(&self, _: &str) -> Result<Option<crate::device::AppVersion>, DeviceError> {
            Ok(None)
        }
    }

    fn quick() -> Config {
        Config {
            pause: Duration::ZERO,
            settle: Duration::ZERO,
            ..Config::default()
        }
    }

    fn decision(actions: Vec<Action>) -> Decision {
        Decision {
            run_id: Some("r".into()),
            step: Some(3),
            ..Decision::new(actions)
        }
    }

    fn kinds(results: &[ActionResult]) -> Vec<Option<&str>> {
        results
            .iter()
            .map(|r| r.error_kind.as_ref().map(ErrorKind::as_str))
            .collect()
    }

    #[test]
    fn invalid_bbox_continues_and_device_failure_skips_the_rest() {
        let device = Recorder::new("key", vec!["A"]);
        let obs = observation(vec![element(1, [0, 0, 1080, 200], true)]);
        let actions = vec![
            click_box(900, 900, 100, 100),
            click_box(10, 10, 20, 20),
            Action::new(ActionType::Back),
            Action::new(ActionType::Home),
        ];
        let results = execute_decision(&quick(), &device, &decision(actions), Some(&obs));
        assert_eq!(
            kinds(&results),
            [Some("invalid_bbox"), None, Some("device"), Some("skipped")]
        );
        assert_eq!(*device.calls.lock().unwrap(), ["tap 540 100", "key back"]);
        assert!(results
            .iter()
            .all(|r| r.step == Some(3) && r.run_id.as_deref() == Some("r")));
        assert_eq!(results[1].origin, Some(Origin::Xml));
        assert_eq!(results[1].target.as_deref(), Some("Button \"e1\""));
    }

    #[test]
    fn a_wait_beyond_the_bound_is_an_invalid_action_not_a_stall() {
        let (sent, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let device = Recorder::new("", vec!["A"]);
            let wait = |ms| Action {
                duration_ms: Some(ms),
                ..Action::new(ActionType::Wait)
            };
            let actions = vec![
                wait(86_400_000),
                wait(u64::MAX),
                Action::new(ActionType::Back),
            ];
            let results = execute_decision(&quick(), &device, &decision(actions), None);
            let _ = sent.send((results, device.calls.lock().unwrap().clone()));
        });
        let (results, calls) = received
            .recv_timeout(Duration::from_secs(30))
            .expect("a day-long wait must fail at once, not stall the stage");
        assert_eq!(
            kinds(&results),
            [Some("invalid_action"), Some("skipped"), Some("skipped")]
        );
        let message = results[0].error_message.as_deref().unwrap_or_default();
        assert!(
            message.contains("86400000 ms") && message.contains("60000"),
            "{message}"
        );
        assert!(calls.is_empty(), "{calls:?}");
        let fine = Action {
            duration_ms: Some(MAX_WAIT_MS),
            ..Action::new(ActionType::Wait)
        };
        assert!(matches!(resolve(&fine, None, None), Ok(None)));
    }

    #[test]
    fn navigated_away_compares_with_the_activity_before_each_action() {
        let device = Recorder::new("", vec!["B", "B"]);
        let obs = Observation {
            activity: Some("A".into()),
            ..observation(vec![])
        };
        let actions = vec![Action::new(ActionType::Back), Action::new(ActionType::Back)];
        let results = execute_decision(&quick(), &device, &decision(actions), Some(&obs));
        assert!(results[0].navigated_away);
        assert!(!results[1].navigated_away);
        assert_eq!(results[0].activity_after.as_deref(), Some("B"));
    }

    #[test]
    fn input_taps_then_types_and_never_reports_the_text() {
        let device = Recorder::new("", vec!["A"]);
        let mut field = element(1, [0, 0, 1080, 200], true);
        field.password = true;
        field.class_name = "android.widget.EditText".into();
        let obs = observation(vec![field]);
        let action = Action {
            action: ActionType::Input,
            input_text: Some("s3cret pass".into()),
            ..click_box(0, 0, 1080, 200)
        };
        let results = execute_decision(&quick(), &device, &decision(vec![action]), Some(&obs));
        assert_eq!(
            *device.calls.lock().unwrap(),
            ["tap 540 100", "text s3cret pass"]
        );
        let line = Event::Result(results[0].clone()).to_line();
        assert!(!line.contains("s3cret"), "{line}");
        assert!(line.contains("EditText (password)"));
    }

    #[test]
    fn input_empties_a_field_that_holds_text_and_leaves_hints_alone() {
        let typed = |text: &str, hint: &str| {
            let device = Recorder::new("", vec!["A"]);
            let mut field = element(1, [0, 0, 1080, 200], true);
            field.editable = true;
            field.text = text.into();
            field.hint = hint.into();
            let action = Action {
                action: ActionType::Input,
                input_text: Some("new".into()),
                ..click_box(0, 0, 1080, 200)
            };
            let obs = observation(vec![field]);
            execute_decision(&quick(), &device, &decision(vec![action]), Some(&obs));
            device.calls.into_inner().unwrap()
        };
        assert_eq!(
            typed("añ", ""),
            [
                "tap 540 100",
                "key 67",
                "key 67",
                "key 112",
                "key 112",
                "text new"
            ]
        );
        assert_eq!(typed("Search", "Search"), ["tap 540 100", "text new"]);
        assert_eq!(typed("", "Search"), ["tap 540 100", "text new"]);
    }

    #[test]
    fn the_password_placeholder_is_typed_as_the_password_or_fails_without_one() {
        let field = element(1, [0, 0, 1080, 200], true);
        let obs = observation(vec![field]);
        let action = Action {
            action: ActionType::Input,
            input_text: Some("{{test_password}}".into()),
            ..click_box(0, 0, 1080, 200)
        };
        let device = Recorder::new("", vec!["A"]);
        let config = Config {
            test_password: Some(Secret::new("pw-9")),
            ..quick()
        };
        let batch = decision(vec![action.clone()]);
        let results = execute_decision(&config, &device, &batch, Some(&obs));
        assert!(results[0].success);
        assert_eq!(*device.calls.lock().unwrap(), ["tap 540 100", "text pw-9"]);

        let device = Recorder::new("", vec!["A"]);
        let results = execute_decision(&quick(), &device, &batch, Some(&obs));
        assert_eq!(kinds(&results), [Some("invalid_action")]);
        assert!(device.calls.lock().unwrap().is_empty(), "nothing typed");
    }

    #[test]
    fn a_relaunch_restarts_the_named_app_or_the_one_decided_on_after_the_actions() {
        let device = Recorder::new("", vec!["Launcher", "Main"]);
        let obs = Observation {
            package: Some("shown.app".into()),
            activity: Some("Settings".into()),
            ..observation(vec![])
        };
        let relaunch = |package: &str| Decision {
            relaunch: Some(package.into()),
            ..decision(vec![Action::new(ActionType::Home)])
        };
        let results = execute_decision(&quick(), &device, &relaunch("named.app"), Some(&obs));
        assert_eq!(
            *device.calls.lock().unwrap(),
            ["key home", "stop named.app", "launch named.app"]
        );
        assert_eq!(results.len(), 2);
        assert_eq!(
            (results[1].index, results[1].action_type.as_str()),
            (1, "relaunch")
        );
        assert!(results[1].success);
        assert_eq!(results[1].target.as_deref(), Some("named.app"));
        assert_eq!(results[1].activity_after.as_deref(), Some("Main"));
        assert!(results[1].navigated_away);

        let device = Recorder::new("", vec!["Main"]);
        execute_decision(&quick(), &device, &relaunch(""), Some(&obs));
        assert_eq!(
            *device.calls.lock().unwrap(),
            ["key home", "stop shown.app", "launch shown.app"]
        );
        let device = Recorder::new("", vec!["Main"]);
        let results = execute_decision(&quick(), &device, &relaunch(""), None);
        assert_eq!(kinds(&results), [None, Some("invalid_action")]);
        assert_eq!(*device.calls.lock().unwrap(), ["key home"]);
    }

    #[test]
    fn a_relaunch_after_a_failed_batch_is_skipped_and_a_failed_one_reported() {
        let relaunch = Decision {
            relaunch: Some("p".into()),
            ..decision(vec![Action::new(ActionType::Home)])
        };
        let device = Recorder::new("key", vec!["A"]);
        let results = execute_decision(&quick(), &device, &relaunch, None);
        assert_eq!(kinds(&results), [Some("device"), Some("skipped")]);
        assert_eq!(*device.calls.lock().unwrap(), ["key home"]);

        let device = Recorder::new("launch", vec!["A"]);
        let results = execute_decision(&quick(), &device, &relaunch, None);
        assert_eq!(kinds(&results), [None, Some("device")]);
        assert!(results[1]
            .error_message
            .as_deref()
            .unwrap()
            .contains("launch p"));
    }

    #[test]
    fn the_filter_passes_lines_through_and_reports_bad_ones() {
        let obs = Event::Observation(Box::new(observation(vec![]))).to_line();
        let dec = Event::Decision(decision(vec![Action::new(ActionType::Back)])).to_line();
        let input = format!("{obs}\nnot json\n{{\"type\":\"custom\",\"v\":1}}\n{dec}\n");
        let mut out = Vec::new();
        let mut said = Vec::new();
        let mut stage = Stage::new(quick(), || {
            Ok(Box::new(Recorder::new("", vec!["A"])) as Box<dyn Device>)
        });
        let outcome = crate::filter::run(&mut stage, input.as_bytes(), &mut out, false, &mut |m| {
            said.push(m.to_string())
        })
        .unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], obs);
        assert_eq!(lines[1], "{\"type\":\"custom\",\"v\":1}");
        assert_eq!(lines[2], dec);
        assert!(lines[3].starts_with("{\"type\":\"result\""), "{}", lines[3]);
        assert_eq!(outcome.bad_lines, 1);
        assert_eq!(
            said,
            ["line 2: not valid JSON: expected ident at line 1 column 2"]
        );
    }

    #[test]
    fn no_decision_means_no_device_is_opened() {
        let mut out = Vec::new();
        let mut stage = Stage::new(quick(), || Err(DeviceError::NullRoot));
        let input = "{\"type\":\"note\",\"v\":1,\"kind\":\"x\"}\n";
        let outcome =
            crate::filter::run(&mut stage, input.as_bytes(), &mut out, false, &mut |_| {}).unwrap();
        assert!(!outcome.failed());
        assert_eq!(out, b"{\"type\":\"note\",\"v\":1,\"kind\":\"x\"}\n");
    }
}
