//! What droid-mcp's tools do, without the protocol: a device chosen for the session, its screen
//! observed and acted on through the stages' own code ([`Explorer`]: the capture droid-capture
//! makes, hashed as droid-hash hashes it; actions as droid-act executes them), the screens seen
//! counted by droid's screen identity (the screen key crawler.db and the reports know), crawls
//! run in the background ([`super::crawls`]), and
//! reports read through [`crate::report`].
//!
//! Every method blocks (device round trips, SQLite): the protocol side calls them off its
//! event loop. One device operation runs at a time (the session is behind a mutex).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::crawls::{CrawlInput, CrawlStatus, Crawls};
use super::Error;
use crate::act;
use crate::adb::{AdbServer, DeviceState};
use crate::capture::DeviceOptions;
use crate::device::{AdbDevice, Device, DeviceConfig};
use crate::events::{Action, ActionResult, ActionType, Decision, DeviceInfo, Observation};
use crate::explore::Explorer;
use crate::report::{self, Report};
use crate::screen::ScreenKey;
use crate::store::Store;

/// What droid-mcp serves.
#[derive(Debug, Clone)]
pub struct Config {
    /// The ADB server, and the device chosen at the start (`None`: the only one attached).
    pub device: DeviceConfig,
    /// crawler.db: crawls record into it, reports read from it.
    pub db: PathBuf,
    /// Where crawls make their session folders.
    pub out: PathBuf,
    /// Where `observe` saves its dumps and screenshots.
    pub captures: PathBuf,
    /// How actions are executed (the test password typed for `{{test_password}}` among it).
    pub act: act::Config,
    /// The decider a crawl uses unless it names another, with its keys and settings.
    pub decider: crate::decide::cli::DeciderArgs,
}

/// One device attached to the ADB server.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DeviceEntry {
    pub serial: String,
    /// `device` when ready; `unauthorized`, `offline`, or what adb says.
    pub state: String,
    pub model: Option<String>,
    pub android_version: Option<String>,
    pub sdk: Option<u32>,
    /// Width and height in pixels.
    pub screen_size: Option<[u32; 2]>,
    /// The device this session acts on.
    pub chosen: bool,
    /// Why the device could not be described.
    pub error: Option<String>,
}

/// The devices attached, and the one chosen.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Devices {
    pub devices: Vec<DeviceEntry>,
    /// The serial of the device this session acts on, once one is chosen or used.
    pub chosen: Option<String>,
}

/// How the screenshot sent with an observation maps to the device's pixels.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ImageInfo {
    pub width: u32,
    pub height: u32,
    /// Device pixels per image pixel, across and down: multiply an image point by these to tap
    /// it (`act` with `x`, `y`).
    pub scale_x: f64,
    pub scale_y: f64,
}

/// The current screen as droid-capture sees it, with its identity.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Observed {
    pub serial: String,
    pub package: Option<String>,
    pub activity: Option<String>,
    /// The screen's identity (droid's one rule, as crawler.db and the reports know it).
    pub screen_key: String,
    /// Whether this session had seen this screen before this observation.
    pub seen_before: bool,
    /// Times this session has seen it, this observation included.
    pub visits: u32,
    /// Distinct screens this session has seen.
    pub screens_seen: usize,
    /// The pruned hierarchy, one element a line; `[ref=N]` names an element for `act`.
    pub tree: String,
    pub screen_size: Option<[u32; 2]>,
    /// A secure window (FLAG_SECURE: the screenshot is black).
    pub secure: bool,
    /// Only a progress indicator on screen: wait.
    pub loading: bool,
    /// The saved screenshot and hierarchy dump.
    pub screenshot_path: Option<String>,
    pub xml_path: Option<String>,
    /// The screenshot sent as image content, when there is one.
    pub image: Option<ImageInfo>,
}

/// An observation, with the screenshot to send as image content (PNG bytes).
pub struct Snapshot {
    pub observed: Observed,
    pub png: Option<Vec<u8>>,
}

/// What `act` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActKind {
    /// Tap `ref` (an element of the last observation) or the point `x`, `y`.
    Tap,
    /// Long-press `ref` or the point `x`, `y`.
    LongPress,
    /// Type `text`: into `ref` (tapped first, emptied when it holds text), else into the
    /// focused field.
    Type,
    /// Swipe from `x`, `y` to `to_x`, `to_y` in `duration_ms` (default 300).
    Swipe,
    /// Scroll `direction` inside `ref` (a scrolling container) or the screen.
    Scroll,
    /// Press `key`: back, home, enter, app_switch, KEYCODE_*, or a key code number.
    Key,
    /// Launch `package`.
    Launch,
    /// Force-stop `package`.
    Stop,
    /// Wait `duration_ms` (default 1000).
    Wait,
}

/// Which way `scroll` moves the content (`down` shows what is below) or the finger (`left`,
/// `right`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScrollDirection {
    Up,
    Down,
    Left,
    Right,
}

/// One action on the device.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ActInput {
    pub action: ActKind,
    /// An element of the last observation's tree (`[ref=N]`).
    #[serde(rename = "ref")]
    pub ref_id: Option<u32>,
    /// A point in device pixels.
    pub x: Option<i32>,
    pub y: Option<i32>,
    /// Where a swipe ends.
    pub to_x: Option<i32>,
    pub to_y: Option<i32>,
    /// The text `type` enters, exactly as given (never run by any shell). `{{test_password}}`
    /// types the test password set on the server.
    pub text: Option<String>,
    pub direction: Option<ScrollDirection>,
    /// The key `key` presses.
    pub key: Option<String>,
    /// The app `launch` and `stop` act on.
    pub package: Option<String>,
    /// How long `swipe` or `wait` takes, in milliseconds.
    pub duration_ms: Option<u64>,
}

/// What an action did, and the screen after it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Acted {
    /// The action's `result`, as droid-act writes it (typed text is never echoed).
    pub result: ActionResult,
    /// The screen after the action.
    pub screen_key: String,
    /// The screen before it, when this session had observed one.
    pub previous_key: Option<String>,
    /// The screen key changed.
    pub changed: bool,
    /// Whether this session had seen the new screen before.
    pub seen_before: bool,
    pub package: Option<String>,
    pub activity: Option<String>,
}

/// What `report` shows of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportView {
    /// The text summary droid-crawl prints at its end; `data` holds `run_stats`.
    #[default]
    Summary,
    /// The whole JSON report (droid-report --format json) in `data`.
    Json,
    /// The crashes and ANRs, grouped by signature, with traces and the steps to reproduce.
    Crashes,
    /// The screen graph: screens and transitions in `data`, Graphviz DOT in `text`.
    Graph,
}

/// Which run and what of it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ReportInput {
    /// A run id, or `latest` (the default).
    pub run: Option<String>,
    #[serde(default)]
    pub view: ReportView,
}

/// A report of a run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ReportOutput {
    pub run_id: String,
    pub view: ReportView,
    /// The summary text, or the graph as DOT.
    pub text: Option<String>,
    pub data: Option<serde_json::Value>,
}

/// The device a session acts on, and what it is.
struct Chosen {
    device: AdbDevice,
    config: DeviceConfig,
    info: DeviceInfo,
}

/// The last screen observed: where refs point and what an action starts from.
struct Last {
    observation: Observation,
    key: ScreenKey,
}

/// What one session knows: its device, the screens it has seen (by key, with their visits), the
/// last screen.
#[derive(Default)]
struct Session {
    chosen: Option<Chosen>,
    seen: HashMap<ScreenKey, u32>,
    last: Option<Last>,
    observations: u64,
}

/// droid's device and crawls, as the tools use them.
pub struct Workbench {
    config: Config,
    session: Mutex<Session>,
    crawls: Crawls,
}

impl Workbench {
    pub fn new(config: Config) -> Workbench {
        Workbench {
            config,
            session: Mutex::new(Session::default()),
            crawls: Crawls::default(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    fn session(&self) -> MutexGuard<'_, Session> {
        // A panic while holding it left nothing half-done worth refusing for.
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The devices the ADB server knows, each described (model, Android version, size).
    pub fn devices(&self) -> Result<Devices, Error> {
        let server = AdbServer::new(self.config.device.server.clone());
        let entries = server.devices().map_err(Error::Adb)?;
        let chosen = self.session().chosen.as_ref().map(|c| c.info_serial());
        let devices = entries
            .into_iter()
            .map(|entry| {
                let ready = entry.state == DeviceState::Device;
                let described = ready.then(|| {
                    AdbDevice::connect(self.device_config(&entry.serial))
                        .and_then(|device| device.info())
                });
                let (info, error) = match described {
                    Some(Ok(info)) => (Some(info), None),
                    Some(Err(error)) => (None, Some(crate::filter::Chain(&error).to_string())),
                    None => (None, None),
                };
                let info = info.unwrap_or_default();
                DeviceEntry {
                    chosen: chosen.as_deref() == Some(entry.serial.as_str()),
                    state: state_name(&entry.state),
                    model: info.model.or(entry.model),
                    android_version: info.android_version,
                    sdk: info.sdk,
                    screen_size: info.screen_size,
                    serial: entry.serial,
                    error,
                }
            })
            .collect();
        Ok(Devices { devices, chosen })
    }

    /// Chooses the device the session acts on (the screens seen start anew).
    pub fn choose(&self, serial: &str) -> Result<Devices, Error> {
        let chosen = Chosen::connect(self.device_config(serial))?;
        {
            let mut session = self.session();
            *session = Session {
                chosen: Some(chosen),
                ..Session::default()
            };
        }
        self.devices()
    }

    fn device_config(&self, serial: &str) -> DeviceConfig {
        DeviceConfig {
            serial: Some(serial.to_string()),
            ..self.config.device.clone()
        }
    }

    /// Captures the current screen (the capture droid-capture makes, hashed as droid-hash
    /// does) and counts it among the session's screens.
    pub fn observe(&self) -> Result<Snapshot, Error> {
        let mut session = self.session();
        let observed = self.observe_in(&mut session)?;
        let last = session
            .last
            .as_ref()
            .expect("observe_in sets the last screen");
        // The screenshot as the vision deciders send it (at most 1280 px a side).
        let (png, image) = match crate::decide::prompt::screenshot(&last.observation) {
            Ok((image, scale)) => {
                let size = image::load_from_memory(&image.png)
                    .map(|i| (i.width(), i.height()))
                    .unwrap_or_default();
                let info = ImageInfo {
                    width: size.0,
                    height: size.1,
                    scale_x: scale.x,
                    scale_y: scale.y,
                };
                (Some(image.png), Some(info))
            }
            Err(_) => (None, None),
        };
        Ok(Snapshot {
            observed: Observed { image, ..observed },
            png,
        })
    }

    fn observe_in(&self, session: &mut Session) -> Result<Observed, Error> {
        session.observations += 1;
        let step = session.observations;
        let chosen = self.chosen(session)?;
        let (observation, model) = self
            .explorer(chosen)
            .observe(step)
            .map_err(Error::Capture)?;
        let serial = chosen.device.serial().to_string();
        let key = model.key().clone();
        let visits = session.seen.entry(key.clone()).or_insert(0);
        *visits += 1;
        let visits = *visits;
        let observed = Observed {
            serial,
            package: observation.package.clone(),
            activity: observation.activity.clone(),
            screen_key: key.as_str().to_string(),
            seen_before: visits > 1,
            visits,
            screens_seen: session.seen.len(),
            tree: observation.tree.clone().unwrap_or_default(),
            screen_size: observation.screen_size,
            secure: observation.flags.secure,
            loading: observation.flags.loading,
            screenshot_path: observation.screenshot_path.clone(),
            xml_path: observation.xml_path.clone(),
            image: None,
        };
        session.last = Some(Last { observation, key });
        Ok(observed)
    }

    /// The chosen device as the stages see it: captures saved under `captures`, actions
    /// executed by the server's act settings.
    fn explorer<'c>(&self, chosen: &'c Chosen) -> Explorer<'c> {
        let capture = DeviceOptions {
            out_dir: self.config.captures.clone(),
            screenshot: true,
            concurrent: true,
            run_id: None,
            step: None,
            step_names: false,
        };
        Explorer::with_info(
            &chosen.device,
            chosen.info.clone(),
            capture,
            self.config.act.clone(),
        )
    }

    /// The chosen device, connected now when none was chosen: the configured one, else the
    /// only one attached.
    fn chosen<'s>(&self, session: &'s mut Session) -> Result<&'s Chosen, Error> {
        if session.chosen.is_none() {
            session.chosen = Some(Chosen::connect(self.config.device.clone())?);
        }
        Ok(session.chosen.as_ref().expect("connected just above"))
    }

    /// Performs one action as droid-act does (refs resolve through the last observation), then
    /// observes the screen it led to.
    pub fn act(&self, input: &ActInput) -> Result<Acted, Error> {
        let planned = plan(input)?;
        let mut session = self.session();
        let serial = self.chosen(&mut session)?.device.serial().to_string();
        if let Some(run) = self.crawls.driving(&serial) {
            return Err(Error::Busy { serial, run });
        }
        let chosen = session.chosen.as_ref().expect("chosen above");
        let result = match &planned {
            Planned::Decision(action) => {
                let last = session.last.as_ref();
                if action.ref_id.is_some() && last.is_none() {
                    return Err(Error::Input(
                        "`ref` names an element of the last observation: observe first".into(),
                    ));
                }
                let explorer = self.explorer(chosen);
                let mut decision = Decision::new(vec![(**action).clone()]);
                decision.decider = Some("droid-mcp".into());
                let observation = last.map(|l| &l.observation);
                explorer
                    .act_on(&decision, observation)
                    .into_iter()
                    .next()
                    .ok_or_else(|| Error::Input("the action gave no result".into()))?
            }
            Planned::Verb(verb) => act::run_verb(&self.config.act, &chosen.device, verb)
                .map_err(|e| Error::Action(crate::filter::Chain(&e).to_string()))?,
        };
        let previous_key = session
            .last
            .as_ref()
            .map(|last| last.key.as_str().to_string());
        let observed = self.observe_in(&mut session)?;
        Ok(Acted {
            changed: previous_key.as_deref() != Some(observed.screen_key.as_str()),
            previous_key,
            result,
            screen_key: observed.screen_key,
            seen_before: observed.seen_before,
            package: observed.package,
            activity: observed.activity,
        })
    }

    /// Starts a crawl of `input.package` on the chosen device, in the background.
    pub fn crawl(&self, input: &CrawlInput) -> Result<CrawlStatus, Error> {
        let device = {
            let mut session = self.session();
            self.chosen(&mut session)?.config.clone()
        };
        self.crawls.start(&self.config, device, input)
    }

    /// The crawls of this server (`run`: one of them), newest first.
    pub fn crawl_status(&self, run: Option<&str>) -> Result<Vec<CrawlStatus>, Error> {
        self.crawls.status(run)
    }

    /// Asks a crawl of this server to pause, resume or stop.
    pub fn control(
        &self,
        run: Option<&str>,
        command: crate::crawl::Command,
    ) -> Result<CrawlStatus, Error> {
        self.crawls.control(run, command)
    }

    /// A run's report from crawler.db.
    pub fn report(&self, input: &ReportInput) -> Result<ReportOutput, Error> {
        let report = self.load_report(input.run.as_deref().unwrap_or("latest"))?;
        let (text, data) = match input.view {
            ReportView::Summary => (
                Some(report::text::render(&report)),
                Some(serde_json::Value::Object(report.run_stats.clone())),
            ),
            ReportView::Json => (None, Some(to_value(&report)?)),
            ReportView::Crashes => (None, Some(to_value(&report.crashes)?)),
            ReportView::Graph => (
                Some(report::dot::render(&report)),
                Some(serde_json::json!({
                    "screens": to_value(&report.screens)?,
                    "transitions": to_value(&report.transitions)?,
                })),
            ),
        };
        Ok(ReportOutput {
            run_id: report.run.run_id.clone(),
            view: input.view,
            text,
            data,
        })
    }

    fn load_report(&self, run: &str) -> Result<Report, Error> {
        let store = self.store()?;
        Report::load(&store, run).map_err(Error::Report)
    }

    fn store(&self) -> Result<Store, Error> {
        Store::open_existing(&self.config.db).map_err(|e| Error::Report(report::Error::Store(e)))
    }

    /// The runs in crawler.db, newest first (none when there is no database yet).
    pub fn runs(&self) -> Result<Vec<crate::store::RunSummary>, Error> {
        if !self.config.db.is_file() {
            return Ok(Vec::new());
        }
        self.store()?
            .runs()
            .map_err(|e| Error::Report(report::Error::Store(e)))
    }

    /// A run's report in `format` (text formats only), for a resource.
    pub fn render(&self, run: &str, format: report::Format) -> Result<String, Error> {
        let report = self.load_report(run)?;
        let mut bytes = Vec::new();
        report::render(&report, format, &mut bytes).map_err(Error::Report)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

impl Chosen {
    fn connect(config: DeviceConfig) -> Result<Chosen, Error> {
        let device = AdbDevice::connect(config.clone()).map_err(Error::Device)?;
        let info = device.info().map_err(Error::Device)?;
        // The serial found (the only device attached, when none was named).
        let config = DeviceConfig {
            serial: Some(device.serial().to_string()),
            ..config
        };
        Ok(Chosen {
            device,
            config,
            info,
        })
    }

    fn info_serial(&self) -> String {
        self.device.serial().to_string()
    }
}

fn state_name(state: &DeviceState) -> String {
    match state {
        DeviceState::Device => "device".into(),
        DeviceState::Unauthorized => "unauthorized".into(),
        DeviceState::Offline => "offline".into(),
        DeviceState::Other(other) => other.clone(),
    }
}

fn to_value<T: Serialize>(value: &T) -> Result<serde_json::Value, Error> {
    serde_json::to_value(value).map_err(|e| Error::Report(report::Error::Write(e.into())))
}

/// An action as droid-act runs it: one action of a decision (refs, targets on the last
/// observation), or one of droid-act's verbs.
#[derive(Debug, Clone, PartialEq)]
enum Planned {
    Decision(Box<Action>),
    Verb(act::Verb),
}

/// Checks what `act` was given and says which of droid-act's ways runs it.
fn plan(input: &ActInput) -> Result<Planned, Error> {
    let missing = |what: &str| Error::Input(format!("{} needs {what}", name(input.action)));
    let point = match (input.x, input.y) {
        (Some(x), Some(y)) => Some((x, y)),
        (None, None) => None,
        _ => return Err(Error::Input("give both `x` and `y`".into())),
    };
    let on = |kind: ActionType| {
        let mut action = Action::new(kind);
        action.ref_id = input.ref_id;
        action
    };
    Ok(match input.action {
        ActKind::Tap => match (input.ref_id, point) {
            (Some(_), _) => Planned::Decision(Box::new(on(ActionType::Click))),
            (None, Some((x, y))) => {
                let mut action = Action::new(ActionType::Tap);
                action.point = Some([i64::from(x), i64::from(y)]);
                Planned::Decision(Box::new(action))
            }
            (None, None) => return Err(missing("`ref` or `x` and `y`")),
        },
        ActKind::LongPress => match (input.ref_id, point) {
            (Some(_), _) => Planned::Decision(Box::new(on(ActionType::LongPress))),
            (None, Some((x, y))) => Planned::Verb(act::Verb::LongPress(x, y)),
            (None, None) => return Err(missing("`ref` or `x` and `y`")),
        },
        ActKind::Type => {
            let text = input.text.clone().ok_or_else(|| missing("`text`"))?;
            match input.ref_id {
                Some(_) => {
                    let mut action = on(ActionType::Input);
                    action.input_text = Some(text);
                    Planned::Decision(Box::new(action))
                }
                None => Planned::Verb(act::Verb::Text(text)),
            }
        }
        ActKind::Swipe => {
            let (from, to) = match (point, input.to_x, input.to_y) {
                (Some(from), Some(x), Some(y)) => (from, (x, y)),
                _ => return Err(missing("`x`, `y`, `to_x` and `to_y`")),
            };
            let ms = input.duration_ms.unwrap_or(300);
            let ms = u32::try_from(ms).map_err(|_| Error::Input(format!("{ms} ms is too long")))?;
            Planned::Verb(act::Verb::Swipe(from, to, ms))
        }
        ActKind::Scroll => {
            let kind = match input.direction.ok_or_else(|| missing("`direction`"))? {
                ScrollDirection::Up => ActionType::ScrollUp,
                ScrollDirection::Down => ActionType::ScrollDown,
                ScrollDirection::Left => ActionType::SwipeLeft,
                ScrollDirection::Right => ActionType::SwipeRight,
            };
            Planned::Decision(Box::new(on(kind)))
        }
        ActKind::Key => {
            let key = input.key.clone().ok_or_else(|| missing("`key`"))?;
            Planned::Verb(act::Verb::Key(key.trim().to_ascii_lowercase()))
        }
        ActKind::Launch => Planned::Verb(act::Verb::Launch(
            input.package.clone().ok_or_else(|| missing("`package`"))?,
        )),
        ActKind::Stop => Planned::Verb(act::Verb::Stop(
            input.package.clone().ok_or_else(|| missing("`package`"))?,
        )),
        ActKind::Wait => {
            let mut action = Action::new(ActionType::Wait);
            action.duration_ms = Some(input.duration_ms.unwrap_or(1000));
            Planned::Decision(Box::new(action))
        }
    })
}

fn name(kind: ActKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(action: ActKind) -> ActInput {
        ActInput {
            action,
            ref_id: None,
            x: None,
            y: None,
            to_x: None,
            to_y: None,
            text: None,
            direction: None,
            key: None,
            package: None,
            duration_ms: None,
        }
    }

    #[test]
    fn the_workbench_is_shared_by_the_protocols_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Workbench>();
    }

    #[test]
    fn taps_go_by_ref_or_by_point() {
        let by_ref = ActInput {
            ref_id: Some(3),
            ..input(ActKind::Tap)
        };
        let Planned::Decision(action) = plan(&by_ref).unwrap() else {
            panic!("a ref is a decision's action");
        };
        assert_eq!((action.action, action.ref_id), (ActionType::Click, Some(3)));
        let by_point = ActInput {
            x: Some(10),
            y: Some(20),
            ..input(ActKind::Tap)
        };
        let Planned::Decision(action) = plan(&by_point).unwrap() else {
            panic!("a point is a decision's tap");
        };
        assert_eq!(
            (action.action, action.point),
            (ActionType::Tap, Some([10, 20]))
        );
        let half = ActInput {
            x: Some(10),
            ..input(ActKind::Tap)
        };
        assert!(plan(&half).unwrap_err().to_string().contains("both"));
        assert!(plan(&input(ActKind::Tap)).is_err());
    }

    #[test]
    fn typing_goes_through_droid_act_with_the_text_as_given() {
        let text = "$(reboot); `id` 'x' \"y\"";
        let into_field = ActInput {
            ref_id: Some(2),
            text: Some(text.into()),
            ..input(ActKind::Type)
        };
        let Planned::Decision(action) = plan(&into_field).unwrap() else {
            panic!("typing into a ref is an input action");
        };
        assert_eq!(action.action, ActionType::Input);
        assert_eq!(action.input_text.as_deref(), Some(text));
        let focused = ActInput {
            text: Some(text.into()),
            ..input(ActKind::Type)
        };
        assert_eq!(
            plan(&focused).unwrap(),
            Planned::Verb(act::Verb::Text(text.into()))
        );
        let error = plan(&input(ActKind::Type)).unwrap_err().to_string();
        assert!(error.contains("type needs `text`"), "{error}");
    }

    #[test]
    fn keys_apps_gestures_and_waits() {
        let key = ActInput {
            key: Some(" Back ".into()),
            ..input(ActKind::Key)
        };
        assert_eq!(
            plan(&key).unwrap(),
            Planned::Verb(act::Verb::Key("back".into()))
        );
        let stop = ActInput {
            package: Some("com.example".into()),
            ..input(ActKind::Stop)
        };
        assert_eq!(
            plan(&stop).unwrap(),
            Planned::Verb(act::Verb::Stop("com.example".into()))
        );
        let swipe = ActInput {
            x: Some(1),
            y: Some(2),
            to_x: Some(3),
            to_y: Some(4),
            ..input(ActKind::Swipe)
        };
        assert_eq!(
            plan(&swipe).unwrap(),
            Planned::Verb(act::Verb::Swipe((1, 2), (3, 4), 300))
        );
        let scroll = ActInput {
            direction: Some(ScrollDirection::Left),
            ..input(ActKind::Scroll)
        };
        let Planned::Decision(action) = plan(&scroll).unwrap() else {
            panic!("a scroll is a decision's gesture");
        };
        assert_eq!(action.action, ActionType::SwipeLeft);
        let Planned::Decision(wait) = plan(&input(ActKind::Wait)).unwrap() else {
            panic!("a wait is a decision's wait");
        };
        assert_eq!(wait.duration_ms, Some(1000));
        assert!(plan(&input(ActKind::Launch)).is_err());
    }
}
