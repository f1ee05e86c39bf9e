//! The simulated phone: a launcher, the model's app, other apps, a back stack per task, text
//! typed into fields, the crash log buffer, IME state and the ANR fault.
//!
//! Split by what each part does: [`touch`] (taps and gestures), [`typing`] (text and keys),
//! [`navigation`] (tasks and back stacks), [`apps`] (installed packages and input methods) and
//! [`system_screens`] (launcher, recents, ANR dialog).
//!
//! Everything the device shows is derived from this state on demand: [`World::hierarchy_xml`]
//! serialises the current screen with its live field values, [`World::screenshot`] renders the
//! same nodes, so the dump and the picture always agree.

mod apps;
mod navigation;
mod system_screens;
mod touch;
mod typing;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use thiserror::Error;

use super::model::{write_hierarchy, AppModel, Node, Screen};
use super::render;
use super::system::{external_screen, LAUNCHER_PACKAGE};
use super::truth::TruthLog;

/// The stock keyboard, always installed and selected at boot.
pub const LATIN_IME: &str = "com.android.inputmethod.latin/.LatinIME";
/// The ADB Keyboard (`am broadcast -a ADB_INPUT_TEXT`), installed on request.
pub const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";
const ADB_KEYBOARD_PACKAGE: &str = "com.android.adbkeyboard";
/// Packages every simulated device has besides the model's.
const SYSTEM_PACKAGES: &[(&str, &str)] = &[
    ("android", "Android System"),
    (LAUNCHER_PACKAGE, "Quickstep"),
    ("com.android.settings", "Settings"),
    ("com.android.systemui", "System UI"),
    ("com.android.chrome", "Chrome"),
    ("com.android.inputmethod.latin", "Android Keyboard (AOSP)"),
];
/// PIDs handed to app processes start here and grow, as on a freshly booted device.
const FIRST_PID: u32 = 4321;

/// How the world is set up.
#[derive(Debug, Default)]
pub struct WorldOptions {
    /// Install the ADB Keyboard IME (`com.android.adbkeyboard/.AdbIME`); it still has to be
    /// enabled and selected with `ime enable` / `ime set`, as on a real device.
    pub ime_adbkeyboard: bool,
    pub truth: Option<TruthLog>,
    pub serial: String,
    /// Apps the phone hosts beside the model's, without screens or a launcher icon (a service
    /// the device's programs drive, as PCAPdroid's capture).
    pub hosted: Vec<String>,
    /// Fire recorded transitions only: no move inferred from the same view on the other screens
    /// of an activity (see [`infer`]).
    pub recorded_only: bool,
}

/// A running task as `dumpsys activity` lists it: the package it was started for and the
/// activities on its back stack, bottom first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSummary {
    pub package: String,
    /// `(package, fully qualified activity class)` per back stack entry.
    pub activities: Vec<(String, String)>,
}

/// What is in front.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreground {
    pub package: String,
    pub activity: String,
    /// The model's screen id, or `@launcher`, `@recents`, `@external:PKG`.
    pub screen: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LaunchError {
    #[error("unknown package {0}")]
    UnknownPackage(String),
    #[error("no such activity {0}")]
    NoSuchActivity(String),
    #[error("the model has no screen {0:?}")]
    UnknownScreen(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InputError {
    /// `input keyevent` with a name the device does not know.
    #[error("Unknown keycode: {0}")]
    UnknownKey(String),
    /// `input text` with characters the key character map cannot produce: the real `input`
    /// command dies with this exception and types nothing.
    #[error(
        "Exception occurred while executing 'text':\njava.lang.NullPointerException: Attempt to get length of null array"
    )]
    Untypable(String),
    /// ADB Keyboard text while that IME is not installed and selected.
    #[error("the ADB Keyboard IME is not the current input method")]
    ImeNotActive,
}

/// Why `pm install` refused a package.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InstallError {
    /// A package the model or the phone installed: the APK is not signed with its key.
    #[error(
        "INSTALL_FAILED_UPDATE_INCOMPATIBLE: Existing package {0} signatures do not match newer version; ignoring!"
    )]
    Fixed(String),
    #[error(
        "INSTALL_FAILED_ALREADY_EXISTS: Attempt to re-install {0} without first uninstalling."
    )]
    Exists(String),
}

/// Why `pm uninstall` refused a package.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum UninstallError {
    #[error("not installed for 0")]
    NotInstalled(String),
    /// A package of the system image.
    #[error("DELETE_FAILED_INTERNAL_ERROR")]
    System(String),
}

/// An app's uncaught exception, as `AndroidRuntime` logged it into the crash buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crash {
    /// 1 for the device's first crash, then counting up (clearing the buffer keeps counting).
    pub seq: u64,
    pub time: chrono::DateTime<chrono::Utc>,
    pub package: String,
    pub pid: u32,
    /// The FATAL EXCEPTION block, one log line each.
    pub lines: Vec<String>,
}

/// What an entry of a back stack shows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum View {
    Model(usize),
    /// A package the model has no screen for: a generic screen of that app.
    External(String),
}

/// One activity instance on a back stack, with its live widget state.
#[derive(Debug, Clone)]
struct Entry {
    view: View,
    /// Node index (document order) → text typed into that field.
    typed: BTreeMap<usize, String>,
    /// Node index → checked state after taps on checkable widgets.
    checked: BTreeMap<usize, bool>,
    focus: Option<usize>,
}

impl Entry {
    fn new(view: View) -> Entry {
        Entry {
            view,
            typed: BTreeMap::new(),
            checked: BTreeMap::new(),
            focus: None,
        }
    }
}

/// A task: a back stack started from one package's launcher entry.
#[derive(Debug, Clone)]
struct Task {
    package: String,
    stack: Vec<Entry>,
    /// Started by another app (a link to a browser): finishing it returns to that app.
    opened_from_app: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Front {
    Launcher,
    Recents,
    /// The most recent task (the last of `tasks`).
    App,
}

/// The simulated phone. Shared by the server as `Arc<Mutex<World>>`.
#[derive(Debug)]
pub struct World {
    model: AppModel,
    options: WorldOptions,
    /// Least recent first; the last one is in front when `front` is `App`.
    tasks: Vec<Task>,
    front: Front,
    /// The crash buffer: every uncaught exception since the last clear.
    crashes: Vec<Crash>,
    /// How many crashes ever happened (the `seq` of the last one).
    crash_count: u64,
    pids: BTreeMap<String, u32>,
    next_pid: u32,
    anr_screen: Option<String>,
    anr_showing: bool,
    /// `crash-every:N`: N, and the crash transitions attempted so far.
    crash_every: Option<u32>,
    crash_attempts: u32,
    imes_enabled: BTreeSet<String>,
    ime_current: String,
    /// What the truth log last recorded as shown, to log each change once.
    last_shown: Option<(String, String, bool)>,
    /// The transition an inferred move borrowed, for the truth line of the screen it shows.
    borrowed: Option<usize>,
    /// The last location fix (longitude, latitude).
    location: Option<(f64, f64)>,
    /// Packages `install` put on the device, with what their APK declares.
    added: BTreeMap<String, Added>,
    /// The model's packages the user uninstalled (gone until an APK of theirs is installed).
    removed: BTreeSet<String>,
}

/// What an installed APK declares, as the package manager keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    pub version_name: Option<String>,
    /// Every activity, fully qualified.
    pub activities: Vec<String>,
    /// The MAIN / LAUNCHER activity (or alias) the launcher starts, if any.
    pub launcher: Option<String>,
}

impl World {
    pub fn new(model: AppModel, options: WorldOptions) -> World {
        let mut world = World {
            model,
            options,
            tasks: Vec::new(),
            front: Front::Launcher,
            crashes: Vec::new(),
            crash_count: 0,
            pids: BTreeMap::new(),
            next_pid: FIRST_PID,
            anr_screen: None,
            anr_showing: false,
            crash_every: None,
            crash_attempts: 0,
            imes_enabled: BTreeSet::from([LATIN_IME.to_string()]),
            ime_current: LATIN_IME.to_string(),
            last_shown: None,
            borrowed: None,
            location: None,
            added: BTreeMap::new(),
            removed: BTreeSet::new(),
        };
        world.shown();
        world
    }

    pub fn model(&self) -> &AppModel {
        &self.model
    }

    pub fn serial(&self) -> &str {
        &self.options.serial
    }

    pub fn screen_size(&self) -> (u32, u32) {
        self.model.screen_size()
    }

    pub fn foreground(&self) -> Foreground {
        let screen = self.visible_screen();
        Foreground {
            package: screen.package,
            activity: screen.activity,
            screen: screen.id,
        }
    }

    /// The app tasks, least recent first (the last one is in front when an app is).
    pub fn tasks(&self) -> Vec<TaskSummary> {
        self.tasks
            .iter()
            .map(|task| TaskSummary {
                package: task.package.clone(),
                activities: task
                    .stack
                    .iter()
                    .map(|entry| match &entry.view {
                        // Names only: no need to copy a model screen's nodes.
                        View::Model(index) => {
                            let screen = self.model.screen(*index);
                            (screen.package.clone(), screen.activity.clone())
                        }
                        View::External(_) => {
                            let screen = self.screen_for(&entry.view);
                            (screen.package, screen.activity)
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    /// A location fix from the emulator console (`geo fix`): the truth log records it.
    pub fn geo_fix(&mut self, longitude: f64, latitude: f64) {
        self.log_input(
            "geo_fix",
            vec![
                ("longitude", longitude.into()),
                ("latitude", latitude.into()),
            ],
        );
        self.location = Some((longitude, latitude));
    }

    /// The last location fix, `(longitude, latitude)`.
    pub fn location(&self) -> Option<(f64, f64)> {
        self.location
    }

    /// The console's `rotate` turns the device; every simulated app is portrait-only, so the
    /// display keeps its orientation. The truth log records the turn.
    pub fn rotate(&mut self) {
        self.log_input("rotate", Vec::new());
    }

    /// True while the ANR dialog covers the app.
    pub fn anr_showing(&self) -> bool {
        self.anr_showing
    }

    /// True when the current screen is `FLAG_SECURE` (screenshots are black).
    pub fn is_secure(&self) -> bool {
        self.front == Front::App && self.visible_screen().secure
    }

    /// The PID of a running app process.
    pub fn pid(&self, package: &str) -> Option<u32> {
        self.pids.get(package).copied()
    }

    /// The current screen as `uiautomator dump` writes it (typed text shown in fields). Only the
    /// active window is dumped, as the real command does: the ANR dialog alone while it shows.
    pub fn hierarchy_xml(&self) -> String {
        let roots = if self.anr_showing {
            vec![self.anr_dialog()]
        } else {
            self.live_roots()
        };
        write_hierarchy(&roots)
    }

    /// Rendered screenshot of the current hierarchy; all black on a secure screen.
    pub fn screenshot(&self) -> image::RgbaImage {
        let (width, height) = self.screen_size();
        if self.is_secure() {
            return render::black(width, height);
        }
        let screen = self.visible_screen();
        let mut image = render::render(&self.live_roots(), (width, height), &screen.package);
        if self.anr_showing {
            render::dim(&mut image);
            render::draw(&mut image, &[self.anr_dialog()]);
        }
        image
    }

    fn top_entry(&self) -> Option<&Entry> {
        self.tasks.last().and_then(|t| t.stack.last())
    }

    fn top_entry_mut(&mut self) -> Option<&mut Entry> {
        self.tasks.last_mut().and_then(|t| t.stack.last_mut())
    }

    /// The model screen in front, if a model screen is in front.
    fn top_screen_index(&self) -> Option<usize> {
        if self.front != Front::App {
            return None;
        }
        match self.top_entry()?.view {
            View::Model(index) => Some(index),
            View::External(_) => None,
        }
    }

    /// The model screen beneath the app's screen in front, on its task's back stack: where back
    /// returns unless the screen has a back of its own.
    fn beneath(&self) -> Option<usize> {
        if self.front != Front::App {
            return None;
        }
        let stack = &self.tasks.last()?.stack;
        match stack.len().checked_sub(2).map(|below| &stack[below].view)? {
            View::Model(index) => Some(*index),
            View::External(_) => None,
        }
    }

    fn visible_screen(&self) -> Screen {
        match self.front {
            Front::Launcher => self.launcher_screen(),
            Front::Recents => self.recents_screen(),
            Front::App => match self.top_entry() {
                Some(entry) => self.screen_for(&entry.view),
                None => self.launcher_screen(),
            },
        }
    }

    fn screen_for(&self, view: &View) -> Screen {
        match view {
            View::Model(index) => self.model.screen(*index).clone(),
            View::External(package) => {
                let mut screen = external_screen(package, self.screen_size());
                // An installed APK's plain screen is its main activity.
                if let Some(activity) = self
                    .added
                    .get(package)
                    .and_then(|a| a.launcher.clone().or_else(|| a.activities.first().cloned()))
                {
                    screen.activity = activity;
                }
                screen
            }
        }
    }

    /// The visible screen's nodes with the live state applied: typed text, focus, checks.
    fn live_roots(&self) -> Vec<Node> {
        let mut roots = self.visible_screen().roots;
        if self.front != Front::App {
            return roots;
        }
        let Some(entry) = self.top_entry() else {
            return roots;
        };
        let focus = self.focused_field();
        let mut index = 0;
        for root in &mut roots {
            apply_state(root, entry, focus, &mut index);
        }
        roots
    }

    /// Called after every change: raises the ANR dialog when its screen comes up and writes the
    /// truth line when what is shown changed.
    fn shown(&mut self) {
        let borrowed = self.borrowed.take();
        let foreground = self.foreground();
        let entered = !self
            .last_shown
            .as_ref()
            .is_some_and(|(screen, package, _)| {
                *screen == foreground.screen && *package == foreground.package
            });
        if self.front == Front::App
            && self.anr_screen.as_deref() == Some(foreground.screen.as_str())
            && entered
        {
            self.anr_showing = true;
        }
        if !self.anr_screen_is(&foreground.screen) && entered {
            self.anr_showing = false;
        }
        let now = (foreground.screen, foreground.package, self.anr_showing);
        if self.last_shown.as_ref() == Some(&now) {
            return;
        }
        if let Some(truth) = &self.options.truth {
            let mut fields = vec![
                ("screen", Value::from(now.0.as_str())),
                ("package", Value::from(now.1.as_str())),
            ];
            if now.2 {
                fields.push(("dialog", Value::from("anr")));
            }
            if let Some(beneath) = self.beneath() {
                let id = self.model.screen(beneath).id.as_str();
                fields.push(("beneath", Value::from(id)));
            }
            if let Some(index) = borrowed {
                let from = self.model.transitions()[index].from;
                fields.push(("inferred", Value::from(true)));
                fields.push((
                    "borrowed_from",
                    Value::from(self.model.screen(from).id.as_str()),
                ));
                fields.push(("transition", Value::from(index)));
            }
            // The truth log is a side channel: a full disk must not stop the device.
            let _ = truth.record(fields);
        }
        self.last_shown = Some(now);
    }

    fn log_input(&self, kind: &str, mut fields: Vec<(&str, Value)>) {
        if let Some(truth) = &self.options.truth {
            fields.insert(0, ("input", Value::from(kind)));
            // A side channel, as above.
            let _ = truth.record(fields);
        }
    }
}

/// How a destination screen joins the back stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stack {
    Push,
    Replace,
    AfterBack,
}

fn apply_state(node: &mut Node, entry: &Entry, focus: Option<usize>, index: &mut usize) {
    let me = *index;
    *index += 1;
    if let Some(text) = entry.typed.get(&me).filter(|t| !t.is_empty()) {
        let shown = if node.flag("password") {
            "•".repeat(text.chars().count())
        } else {
            text.clone()
        };
        node.set_attr("text", shown);
    }
    if let Some(checked) = entry.checked.get(&me) {
        node.set_attr("checked", checked.to_string());
    }
    if focus.is_some() && node.is_editable() {
        node.set_attr("focused", (focus == Some(me)).to_string());
    }
    for child in &mut node.children {
        apply_state(child, entry, focus, index);
    }
}
