//! The simulated phone: a launcher, the model's app, other apps, a back stack per task, text
//! typed into fields, the crash log buffer, IME state and the ANR fault.
//!
//! Everything the device shows is derived from this state on demand: [`World::hierarchy_xml`]
//! serialises the current screen with its live field values, [`World::screenshot`] renders the
//! same nodes, so the dump and the picture always agree.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use thiserror::Error;

use super::dispatch::{self, Touch};
use super::infer::{self, Inferred};
use super::keys::{keycode, typed_char, KEY_APP_SWITCH, KEY_BACK, KEY_DEL, KEY_HOME};
use super::model::{write_hierarchy, Action, AppModel, Destination, Node, Screen};
use super::packages::PCAPDROID_PACKAGE;
use super::render;
use super::system::{
    self, external_screen, fatal_exception_block, package_label, LAUNCHER_PACKAGE,
};
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
/// Moves shorter than this are taps, as the platform's touch slop.
const TOUCH_SLOP: i32 = 24;
/// Presses at least this long are long presses (ViewConfiguration's default timeout).
const LONG_PRESS_MS: u64 = 500;
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

/// Which touch gesture a swipe was.
enum Gesture {
    Tap,
    LongPress,
    Move(Action),
}

/// The simulated phone. Shared by the server as `Arc<Mutex<World>>`.
#[derive(Debug)]
pub struct World {
    model: AppModel,
    options: WorldOptions,
    /// Least recent first; the last one is in front when `front` is `App`.
    tasks: Vec<Task>,
    front: Front,
    crash_blocks: Vec<String>,
    pids: BTreeMap<String, u32>,
    next_pid: u32,
    anr_screen: Option<String>,
    anr_showing: bool,
    imes_enabled: BTreeSet<String>,
    ime_current: String,
    /// What the truth log last recorded as shown, to log each change once.
    last_shown: Option<(String, String, bool)>,
    /// The transition an inferred move borrowed, for the truth line of the screen it shows.
    borrowed: Option<usize>,
}

impl World {
    pub fn new(model: AppModel, options: WorldOptions) -> World {
        let mut world = World {
            model,
            options,
            tasks: Vec::new(),
            front: Front::Launcher,
            crash_blocks: Vec::new(),
            pids: BTreeMap::new(),
            next_pid: FIRST_PID,
            anr_screen: None,
            anr_showing: false,
            imes_enabled: BTreeSet::from([LATIN_IME.to_string()]),
            ime_current: LATIN_IME.to_string(),
            last_shown: None,
            borrowed: None,
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

    /// True when the package is one the device ships with (not the model's app, nor the ADB
    /// Keyboard).
    pub fn is_system_package(&self, package: &str) -> bool {
        SYSTEM_PACKAGES.iter().any(|(p, _)| *p == package)
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

    pub fn tap(&mut self, x: i32, y: i32) {
        self.log_input("tap", vec![("x", x.into()), ("y", y.into())]);
        self.touch(x, y, Action::Click);
    }

    pub fn long_press(&mut self, x: i32, y: i32) {
        self.log_input("long_press", vec![("x", x.into()), ("y", y.into())]);
        self.touch(x, y, Action::LongClick);
    }

    /// A swipe; a tap or long press when both points are about the same (by the duration),
    /// else a scroll or horizontal swipe by its main direction. `scroll_down` means the finger
    /// moves up (the content further down comes into view).
    pub fn swipe(&mut self, x1: i32, y1: i32, x2: i32, y2: i32, duration_ms: u64) {
        self.log_input(
            "swipe",
            vec![
                ("x1", x1.into()),
                ("y1", y1.into()),
                ("x2", x2.into()),
                ("y2", y2.into()),
                ("duration_ms", duration_ms.into()),
            ],
        );
        match classify_swipe(x1, y1, x2, y2, duration_ms) {
            Gesture::Tap => self.touch(x1, y1, Action::Click),
            Gesture::LongPress => self.touch(x1, y1, Action::LongClick),
            Gesture::Move(action) => self.gesture(x1, y1, action),
        }
    }

    /// `input text` after the device shell has unquoted it: only what a real device can type
    /// (ASCII printable; `%s` means space) reaches the focused field. Anything else makes the
    /// whole command fail, typing nothing, as the real one does.
    pub fn input_text(&mut self, text: &str) -> Result<(), InputError> {
        self.log_input("text", vec![("text", text.into())]);
        let text = text.replace("%s", " ");
        if !text.chars().all(|c| c == ' ' || c.is_ascii_graphic()) {
            return Err(InputError::Untypable(text));
        }
        self.type_text(&text);
        Ok(())
    }

    /// Text through the ADB Keyboard IME (any Unicode); error when that IME is not installed
    /// and selected.
    pub fn ime_text(&mut self, text: &str) -> Result<(), InputError> {
        self.log_input("ime_text", vec![("text", text.into())]);
        if !self.adb_keyboard_installed() || self.ime_current != ADB_KEYBOARD_IME {
            return Err(InputError::ImeNotActive);
        }
        self.type_text(text);
        Ok(())
    }

    /// `KEYCODE_BACK`, `BACK`, `4`, `KEYCODE_HOME`, `3`, `KEYCODE_APP_SWITCH`, `187`,
    /// `KEYCODE_SPACE`, `KEYCODE_DEL`, `KEYCODE_ENTER`, letters and digits...; unknown names are
    /// an error, as the real `input` reports one.
    pub fn key(&mut self, key: &str) -> Result<(), InputError> {
        self.log_input("key", vec![("key", key.into())]);
        let code = keycode(key).ok_or_else(|| InputError::UnknownKey(key.to_string()))?;
        match code {
            KEY_HOME => self.go_home(),
            KEY_BACK => self.back(),
            KEY_APP_SWITCH => {
                self.anr_showing = false;
                self.front = if self.front == Front::Recents {
                    self.front_after_leaving_recents()
                } else {
                    Front::Recents
                };
                self.shown();
            }
            KEY_DEL => self.delete_char(),
            _ => {
                if let Some(c) = typed_char(code) {
                    self.type_text(&c.to_string());
                }
            }
        }
        Ok(())
    }

    /// monkey / am start: bring the package's task to the front, or start it at its start
    /// screen when it is not running.
    pub fn launch(&mut self, package: &str) -> Result<(), LaunchError> {
        self.log_input("launch", vec![("package", package.into())]);
        self.launch_package(package)
    }

    /// `am start -n PKG/CLS` (`CLS` may start with `.`): the start screen's activity launches
    /// the app; another activity of the model is started on top of the app's task.
    pub fn start_activity(&mut self, component: &str) -> Result<(), LaunchError> {
        self.log_input("start_activity", vec![("component", component.into())]);
        let (package, class) = component
            .split_once('/')
            .ok_or_else(|| LaunchError::NoSuchActivity(component.to_string()))?;
        let activity = match class.strip_prefix('.') {
            Some(short) => format!("{package}.{short}"),
            None => class.to_string(),
        };
        if !self.installed(package) {
            return Err(LaunchError::UnknownPackage(package.to_string()));
        }
        let start = self.model.screen(self.model.start());
        if start.package == package && start.activity == activity {
            return self.launch_package(package);
        }
        if let Some(index) = self
            .model
            .screens()
            .iter()
            .position(|s| s.package == package && s.activity == activity)
        {
            if !self.bring_task_to_front(package) {
                self.start_task(package, View::Model(index));
            } else {
                self.navigate(View::Model(index), Stack::Push);
            }
            self.shown();
            return Ok(());
        }
        let generic = self.screen_for(&View::External(package.to_string()));
        if generic.activity == activity {
            return self.launch_package(package);
        }
        Err(LaunchError::NoSuchActivity(component.to_string()))
    }

    /// Starts the screen's app afresh with that screen alone on its back stack: a device
    /// prepared mid-app, for screens no path from the start screen reaches.
    pub fn open_screen(&mut self, id: &str) -> Result<(), LaunchError> {
        let index = self
            .model
            .screen_index(id)
            .ok_or_else(|| LaunchError::UnknownScreen(id.to_string()))?;
        let package = self.model.screen(index).package.clone();
        self.tasks.retain(|t| t.package != package);
        self.start_task(&package, View::Model(index));
        self.shown();
        Ok(())
    }

    /// `am force-stop`: the package's process dies and its activities with it.
    pub fn force_stop(&mut self, package: &str) {
        self.log_input("force_stop", vec![("package", package.into())]);
        self.kill(package);
        self.shown();
    }

    pub fn installed_packages(&self) -> Vec<String> {
        let mut packages: BTreeSet<String> = SYSTEM_PACKAGES
            .iter()
            .map(|(package, _)| package.to_string())
            .collect();
        packages.insert(self.model.package().to_string());
        packages.extend(self.model.screens().iter().map(|s| s.package.clone()));
        packages.extend(self.model.transitions().iter().filter_map(|t| match &t.to {
            Destination::External(package) => Some(package.clone()),
            _ => None,
        }));
        if self.adb_keyboard_installed() {
            packages.insert(ADB_KEYBOARD_PACKAGE.to_string());
        }
        if self.model.pcapdroid().is_some() {
            packages.insert(PCAPDROID_PACKAGE.to_string());
        }
        packages.into_iter().collect()
    }

    pub fn version_name(&self, package: &str) -> Option<String> {
        if package == self.model.package() {
            Some(self.model.version_name().to_string())
        } else if self.installed(package) {
            Some("13".to_string())
        } else {
            None
        }
    }

    /// The crash buffer as `logcat -b crash -d` prints it (FATAL EXCEPTION blocks).
    pub fn crash_log(&self) -> String {
        if self.crash_blocks.is_empty() {
            return String::new();
        }
        let mut out = String::from("--------- beginning of crash\n");
        for block in &self.crash_blocks {
            out.push_str(block);
        }
        out
    }

    pub fn clear_crash_log(&mut self) {
        self.crash_blocks.clear();
    }

    /// Installed input methods, as `ime list -a -s` prints their ids.
    pub fn ime_list(&self) -> Vec<String> {
        let mut imes = vec![LATIN_IME.to_string()];
        if self.adb_keyboard_installed() {
            imes.push(ADB_KEYBOARD_IME.to_string());
        }
        imes
    }

    /// Enabled input methods, as `ime list -s` prints them.
    pub fn ime_enabled(&self) -> Vec<String> {
        self.imes_enabled.iter().cloned().collect()
    }

    /// The selected input method.
    pub fn ime_current(&self) -> &str {
        &self.ime_current
    }

    /// `ime enable ID`: false when no such IME is installed.
    pub fn ime_enable(&mut self, id: &str) -> bool {
        if !self.ime_list().iter().any(|ime| ime == id) {
            return false;
        }
        self.imes_enabled.insert(id.to_string());
        true
    }

    /// `ime set ID`: false unless the IME is installed and enabled.
    pub fn ime_set(&mut self, id: &str) -> bool {
        if !self.imes_enabled.contains(id) || !self.ime_list().iter().any(|ime| ime == id) {
            return false;
        }
        self.ime_current = id.to_string();
        true
    }

    /// Fault `anr-on:SCREEN`: when that screen is shown, the app stops responding (an ANR dialog
    /// "X isn't responding" with Close app / Wait is shown over it, as on a real device).
    pub fn set_anr_screen(&mut self, screen: Option<String>) {
        self.anr_screen = screen;
        self.anr_showing =
            self.front == Front::App && self.anr_screen_is(&self.foreground().screen);
        self.shown();
    }

    // ---- navigation ----

    fn launch_package(&mut self, package: &str) -> Result<(), LaunchError> {
        if !self.installed(package) {
            return Err(LaunchError::UnknownPackage(package.to_string()));
        }
        if package == LAUNCHER_PACKAGE {
            self.go_home();
            return Ok(());
        }
        if !self.bring_task_to_front(package) {
            let view = if package == self.model.package() {
                View::Model(self.model.start())
            } else {
                self.view_of_package(package)
            };
            self.start_task(package, view);
        }
        self.shown();
        Ok(())
    }

    /// Moves the package's task to the front; false when it has none.
    fn bring_task_to_front(&mut self, package: &str) -> bool {
        match self.tasks.iter().position(|t| t.package == package) {
            Some(index) => {
                let task = self.tasks.remove(index);
                self.tasks.push(task);
                self.front = Front::App;
                true
            }
            None => false,
        }
    }

    fn start_task(&mut self, package: &str, view: View) {
        self.start_process(package);
        self.tasks.push(Task {
            package: package.to_string(),
            stack: vec![Entry::new(view)],
            opened_from_app: false,
        });
        self.front = Front::App;
    }

    /// `@external:PKG`: the other app comes up in its own task (as a browser opened by a link
    /// does), so relaunching the model's app shows the app again, and finishing the other app
    /// returns to it.
    fn open_external(&mut self, package: &str) {
        if !self.bring_task_to_front(package) {
            let view = self.view_of_package(package);
            self.start_task(package, view);
        }
        if let Some(task) = self.tasks.last_mut() {
            task.opened_from_app = true;
        }
    }

    fn start_process(&mut self, package: &str) {
        if !self.pids.contains_key(package) {
            self.pids.insert(package.to_string(), self.next_pid);
            self.next_pid += 1;
        }
    }

    /// The screen a package opens on when the model has no transition choosing one.
    fn view_of_package(&self, package: &str) -> View {
        match self
            .model
            .screens()
            .iter()
            .position(|s| s.package == package)
        {
            Some(index) => View::Model(index),
            None => View::External(package.to_string()),
        }
    }

    fn go_home(&mut self) {
        self.anr_showing = false;
        self.front = Front::Launcher;
        self.shown();
    }

    fn front_after_leaving_recents(&self) -> Front {
        if self.tasks.is_empty() {
            Front::Launcher
        } else {
            Front::App
        }
    }

    fn back(&mut self) {
        match self.front {
            Front::Launcher => {}
            Front::Recents => {
                self.front = self.front_after_leaving_recents();
                self.shown();
            }
            // The ANR dialog cannot be cancelled: only its buttons (or HOME) dismiss it.
            Front::App if self.anr_showing => {}
            Front::App => {
                let back_transition = self
                    .top_screen_index()
                    .and_then(|from| self.first_untargeted(from, Action::Back));
                match back_transition {
                    Some(to) => self.fire(&to, Stack::AfterBack, None),
                    None => {
                        self.pop();
                        self.shown();
                    }
                }
            }
        }
    }

    /// Pops the top entry; an emptied task is finished and the launcher comes to the front.
    /// Pops the top entry; an emptied task is finished, and the app that opened it (else the
    /// launcher) comes to the front.
    fn pop(&mut self) {
        let Some(task) = self.tasks.last_mut() else {
            return;
        };
        task.stack.pop();
        if task.stack.is_empty() {
            let opened_from_app = task.opened_from_app;
            self.tasks.pop();
            self.front = if opened_from_app && !self.tasks.is_empty() {
                Front::App
            } else {
                Front::Launcher
            };
        }
    }

    /// Shows `view` in the front task: a screen already on the stack is returned to (the
    /// entries above it finish), otherwise it is pushed (or replaces the top, for gestures).
    fn navigate(&mut self, view: View, push: Stack) {
        if push == Stack::AfterBack {
            let tasks = self.tasks.len();
            self.pop();
            if self.tasks.len() < tasks {
                // Back finished the task; a back transition to another screen restarts it there.
                let package = view_package(&self.model, &view);
                self.start_task(&package, view);
                return;
            }
        }
        let Some(task) = self.tasks.last_mut() else {
            return;
        };
        if let Some(at) = task.stack.iter().rposition(|e| e.view == view) {
            task.stack.truncate(at + 1);
            return;
        }
        if push == Stack::Replace {
            task.stack.pop();
        }
        task.stack.push(Entry::new(view));
    }

    /// Carries out a transition's destination.
    fn fire(&mut self, to: &Destination, push: Stack, carried: Option<(String, String)>) {
        match to {
            Destination::Screen(index) => {
                self.navigate(View::Model(*index), push);
                if let Some((resource_id, text)) = carried {
                    self.carry_field(&resource_id, text);
                }
            }
            Destination::External(package) => self.open_external(package),
            Destination::Crash(exception) => self.crash(exception),
        }
        self.shown();
    }

    /// After an `input` transition the new screen's field with the same id holds the text.
    fn carry_field(&mut self, resource_id: &str, text: String) {
        let Some(View::Model(index)) = self.top_entry().map(|e| e.view.clone()) else {
            return;
        };
        let position = self
            .model
            .screen(index)
            .nodes()
            .iter()
            .position(|n| n.attr("resource-id") == resource_id && n.is_editable());
        if let (Some(position), Some(entry)) = (position, self.top_entry_mut()) {
            entry.typed.insert(position, text);
            entry.focus = Some(position);
        }
    }

    fn crash(&mut self, exception: &str) {
        let package = self.model.package().to_string();
        let pid = self.pid(&package).unwrap_or(self.next_pid);
        let activity = self
            .top_screen_index()
            .map(|i| self.model.screen(i).activity.clone())
            .unwrap_or_else(|| format!("{package}.MainActivity"));
        self.crash_blocks
            .push(fatal_exception_block(&package, pid, &activity, exception));
        self.kill(&package);
    }

    /// Ends the package's process: its task goes, and its activities on other tasks.
    fn kill(&mut self, package: &str) {
        self.pids.remove(package);
        let front_package = self.tasks.last().map(|t| t.package.clone());
        for task in &mut self.tasks {
            if let Some(at) = task
                .stack
                .iter()
                .position(|e| view_package(&self.model, &e.view) == package)
            {
                task.stack.truncate(at);
            }
        }
        self.tasks
            .retain(|t| t.package != package && !t.stack.is_empty());
        if self.tasks.last().map(|t| t.package.clone()) != front_package
            || self.front == Front::App && self.tasks.is_empty()
        {
            self.front = Front::Launcher;
        }
        if self.front == Front::Launcher {
            self.anr_showing = false;
        }
    }

    // ---- touch ----

    fn touch(&mut self, x: i32, y: i32, action: Action) {
        let (width, height) = self.screen_size();
        if x < 0 || y < 0 || x >= width as i32 || y >= height as i32 {
            return; // off the display: no window receives it
        }
        match self.front {
            Front::Launcher => {
                if action == Action::Click {
                    if let Some(package) = self.launcher_hit(x, y) {
                        // Every icon is an installed package.
                        let _ = self.launch_package(&package);
                    }
                }
            }
            Front::Recents => {
                if action == Action::Click {
                    self.recents_tap(x, y);
                }
            }
            Front::App if self.anr_showing => {
                if action == Action::Click {
                    self.anr_tap(x, y);
                }
            }
            Front::App => self.app_touch(x, y, action),
        }
    }

    fn app_touch(&mut self, x: i32, y: i32, action: Action) {
        let roots = self.live_roots();
        let touch = Touch::at(&roots, x, y);
        let live: Vec<&Node> = roots.iter().flat_map(Node::walk).collect();
        let Some(from) = self.top_screen_index() else {
            // An external app's generic screen: its only button goes back.
            if action == Action::Click && touch.handler.is_some() {
                self.back();
            }
            return;
        };
        let handler = touch.handler.filter(|_| touch.handler_enabled);
        if let Some(field) = handler.filter(|&h| action == Action::Click && live[h].is_editable()) {
            // A tapped field takes the focus before any click listener runs.
            if let Some(entry) = self.top_entry_mut() {
                entry.focus = Some(field);
            }
        }
        if let Some(to) = self.pick(from, action, &touch.for_press()) {
            self.fire(&to, Stack::Push, None);
            return;
        }
        let Some(handler) = handler else {
            return;
        };
        if let Some(inferred) = self.infer(from, action, handler) {
            self.fire_inferred(inferred, Stack::Push, None);
            return;
        }
        match action {
            // No long click happens on a view that is not long-clickable, so releasing the
            // finger performs its click (View.onTouchEvent).
            Action::LongClick if !live[handler].flag("long-clickable") => {
                self.app_touch(x, y, Action::Click)
            }
            Action::Click => self.default_click(&touch, &live),
            _ => {}
        }
    }

    /// A tap no transition answers, besides focusing a field: a checkable widget toggles, an up
    /// arrow goes back.
    fn default_click(&mut self, touch: &Touch, live: &[&Node]) {
        let own = touch.own();
        if touch.handler.is_some_and(|h| live[h].is_editable()) {
            // Focused already.
        } else if let Some(&toggle) = own.iter().find(|&&i| live[i].flag("checkable")) {
            let was = live[toggle].flag("checked");
            if let Some(entry) = self.top_entry_mut() {
                entry.checked.insert(toggle, !was);
            }
        } else if own
            .iter()
            .any(|&i| live[i].attr("content-desc") == "Navigate up")
        {
            // An up arrow with no transition of its own behaves as back.
            self.back();
        }
    }

    fn gesture(&mut self, x: i32, y: i32, action: Action) {
        if self.front != Front::App || self.anr_showing {
            return;
        }
        let Some(from) = self.top_screen_index() else {
            return;
        };
        let touch = Touch::at(&self.live_roots(), x, y);
        let targeted = self.pick(from, action, &touch.for_gesture());
        let fired = targeted.or_else(|| self.first_untargeted(from, action));
        if let Some(to) = fired {
            self.fire(&to, Stack::Replace, None);
            return;
        }
        let handler = touch.handler.filter(|_| touch.handler_enabled);
        if let Some(inferred) = handler.and_then(|h| self.infer(from, action, h)) {
            self.fire_inferred(inferred, Stack::Replace, None);
        }
    }

    /// The move the recording of the same view on the activity's other screens makes, unless the
    /// device fires recorded transitions only.
    fn infer(&self, from: usize, action: Action, view: usize) -> Option<Inferred> {
        if self.options.recorded_only {
            return None;
        }
        infer::infer(&self.model, from, action, view, |t| {
            self.requirements_hold(from, &t.requires)
        })
    }

    /// Carries out an inferred move; the truth line of what it shows names the transition
    /// borrowed.
    fn fire_inferred(
        &mut self,
        inferred: Inferred,
        push: Stack,
        carried: Option<(String, String)>,
    ) {
        self.borrowed = Some(inferred.transition);
        self.fire(&inferred.to, push, carried);
    }

    /// The destination of the transition from `from` for `action` that the `ranked` nodes
    /// choose (see [`dispatch::choose`]), among those whose `requires` hold.
    fn pick(&self, from: usize, action: Action, ranked: &[usize]) -> Option<Destination> {
        let nodes = self.model.screen(from).nodes();
        let transitions = self.model.transitions();
        dispatch::choose(transitions, from, action, &nodes, ranked, |t| {
            self.requirements_hold(from, &t.requires)
        })
        .map(|index| transitions[index].to.clone())
    }

    fn first_untargeted(&self, from: usize, action: Action) -> Option<Destination> {
        self.model
            .transitions()
            .iter()
            .filter(|t| t.from == from && t.action == action && t.target.is_none())
            .find(|t| self.requirements_hold(from, &t.requires))
            .map(|t| t.to.clone())
    }

    fn requirements_hold(&self, screen: usize, requires: &[(String, regex::Regex)]) -> bool {
        let nodes = self.model.screen(screen).nodes();
        requires.iter().all(|(field, regex)| {
            nodes
                .iter()
                .position(|n| n.attr("resource-id") == field)
                .is_some_and(|i| regex.is_match(&self.field_text(i)))
        })
    }

    // ---- typing ----

    /// The field's current content in the top entry: what was typed, else empty (the text a
    /// dump recorded in an untouched field is taken as its placeholder).
    fn field_text(&self, index: usize) -> String {
        self.top_entry()
            .and_then(|e| e.typed.get(&index).cloned())
            .unwrap_or_default()
    }

    /// The focused field of the top entry: the one tapped last, else the one the dump marks
    /// focused.
    fn focused_field(&self) -> Option<usize> {
        if self.front != Front::App || self.anr_showing {
            return None;
        }
        let entry = self.top_entry()?;
        if entry.focus.is_some() {
            return entry.focus;
        }
        let screen = self.screen_for(&entry.view);
        screen
            .nodes()
            .iter()
            .position(|n| n.is_editable() && n.flag("focused"))
    }

    fn type_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let Some(field) = self.focused_field() else {
            return;
        };
        let content = self.field_text(field) + text;
        if let Some(entry) = self.top_entry_mut() {
            entry.typed.insert(field, content.clone());
            entry.focus = Some(field);
        }
        let Some(from) = self.top_screen_index() else {
            return;
        };
        let screen = self.model.screen(from);
        let resource_id = screen.nodes()[field].attr("resource-id").to_string();
        let ranked = dispatch::for_field(&screen.roots, field);
        if let Some(to) = self.pick(from, Action::Input, &ranked) {
            self.fire(&to, Stack::Push, Some((resource_id, content)));
        } else if let Some(inferred) = self.infer(from, Action::Input, field) {
            self.fire_inferred(inferred, Stack::Push, Some((resource_id, content)));
        }
    }

    fn delete_char(&mut self) {
        let Some(field) = self.focused_field() else {
            return;
        };
        let mut content = self.field_text(field);
        content.pop();
        if let Some(entry) = self.top_entry_mut() {
            entry.typed.insert(field, content);
        }
    }

    // ---- what is shown ----

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
            View::External(package) => external_screen(package, self.screen_size()),
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

    fn installed(&self, package: &str) -> bool {
        self.installed_packages().iter().any(|p| p == package)
    }

    fn adb_keyboard_installed(&self) -> bool {
        self.options.ime_adbkeyboard || self.model.ime_adbkeyboard()
    }

    fn label_of(&self, package: &str) -> String {
        if package == self.model.package() {
            return self.model.label().to_string();
        }
        SYSTEM_PACKAGES
            .iter()
            .find(|(p, _)| *p == package)
            .map(|(_, label)| label.to_string())
            .unwrap_or_else(|| package_label(package))
    }

    /// Apps with a launcher icon: the model's first, then the others, sorted.
    fn launchable(&self) -> Vec<String> {
        let mut apps = vec![self.model.package().to_string()];
        apps.extend(self.installed_packages().into_iter().filter(|p| {
            p != self.model.package()
                && !matches!(
                    p.as_str(),
                    "android"
                        | LAUNCHER_PACKAGE
                        | "com.android.systemui"
                        | "com.android.inputmethod.latin"
                        | ADB_KEYBOARD_PACKAGE
                        // Kept off the simulated launcher so its pages stay the app's own.
                        | PCAPDROID_PACKAGE
                )
        }));
        apps
    }

    fn launcher_screen(&self) -> Screen {
        let apps: Vec<(String, String)> = self
            .launchable()
            .into_iter()
            .map(|package| {
                let label = self.label_of(&package);
                (package, label)
            })
            .collect();
        system::launcher(&apps, self.screen_size())
    }

    fn launcher_hit(&self, x: i32, y: i32) -> Option<String> {
        let screen = self.launcher_screen();
        let apps = self.launchable();
        let icons = &screen.roots[0].children[0].children;
        icons
            .iter()
            .position(|icon| icon.bounds.contains(x, y))
            .and_then(|i| apps.get(i).cloned())
    }

    /// Recents: one card per task, most recent first.
    fn recents_screen(&self) -> Screen {
        let labels: Vec<String> = self
            .tasks
            .iter()
            .rev()
            .map(|t| self.label_of(&t.package))
            .collect();
        system::recents(&labels, self.screen_size())
    }

    fn recents_tap(&mut self, x: i32, y: i32) {
        let screen = self.recents_screen();
        let cards = &screen.roots[0].children[0].children;
        let Some(hit) = cards.iter().position(|c| c.bounds.contains(x, y)) else {
            return;
        };
        if hit < self.tasks.len() {
            let index = self.tasks.len() - 1 - hit;
            let task = self.tasks.remove(index);
            self.tasks.push(task);
            self.front = Front::App;
        } else if !self.tasks.is_empty() {
            self.tasks.clear();
            self.pids.clear();
            self.front = Front::Launcher;
        }
        self.shown();
    }

    /// The system's "X isn't responding" dialog over the front task.
    fn anr_dialog(&self) -> Node {
        let package = self
            .tasks
            .last()
            .map(|t| t.package.clone())
            .unwrap_or_default();
        system::anr_dialog(&self.label_of(&package), self.screen_size())
    }

    fn anr_tap(&mut self, x: i32, y: i32) {
        let dialog = self.anr_dialog();
        let Some(button) = dialog.children.iter().find(|b| b.bounds.contains(x, y)) else {
            return;
        };
        match button.attr("resource-id") {
            "android:id/aerr_close" => {
                if let Some(package) = self.tasks.last().map(|t| t.package.clone()) {
                    self.kill(&package);
                }
                self.front = Front::Launcher;
                self.anr_showing = false;
            }
            "android:id/aerr_wait" => self.anr_showing = false,
            _ => return,
        }
        self.shown();
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

    fn anr_screen_is(&self, screen: &str) -> bool {
        self.anr_screen.as_deref() == Some(screen)
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

/// The package whose activity shows `view`.
fn view_package(model: &AppModel, view: &View) -> String {
    match view {
        View::Model(index) => model.screen(*index).package.clone(),
        View::External(package) => package.clone(),
    }
}

fn classify_swipe(x1: i32, y1: i32, x2: i32, y2: i32, duration_ms: u64) -> Gesture {
    let (dx, dy) = (x2 - x1, y2 - y1);
    if dx.abs() < TOUCH_SLOP && dy.abs() < TOUCH_SLOP {
        return if duration_ms >= LONG_PRESS_MS {
            Gesture::LongPress
        } else {
            Gesture::Tap
        };
    }
    Gesture::Move(if dy.abs() >= dx.abs() {
        if dy < 0 {
            Action::ScrollDown
        } else {
            Action::ScrollUp
        }
    } else if dx < 0 {
        Action::SwipeLeft
    } else {
        Action::SwipeRight
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swipes_classify_by_distance_duration_and_direction() {
        assert!(matches!(classify_swipe(0, 0, 5, 5, 100), Gesture::Tap));
        assert!(matches!(
            classify_swipe(0, 0, 5, 5, 800),
            Gesture::LongPress
        ));
        assert!(matches!(
            classify_swipe(500, 1500, 500, 500, 300),
            Gesture::Move(Action::ScrollDown)
        ));
        assert!(matches!(
            classify_swipe(500, 500, 500, 1500, 300),
            Gesture::Move(Action::ScrollUp)
        ));
        assert!(matches!(
            classify_swipe(900, 500, 100, 520, 300),
            Gesture::Move(Action::SwipeLeft)
        ));
    }
}
