//! Tasks and back stacks: launching, starting activities, back, home, the destinations of
//! transitions, crashes and process deaths.

use super::{Crash, Entry, Front, LaunchError, Stack, Task, View, World};
use crate::sim::component::full_class;
use crate::sim::model::{Action, AppModel, Destination};
use crate::sim::system::{fatal_exception_lines, LAUNCHER_PACKAGE};
/// The package whose activity shows `view`.
fn view_package(model: &AppModel, view: &View) -> String {
    match view {
        View::Model(index) => model.screen(*index).package.clone(),
        View::External(package) => package.clone(),
    }
}

impl World {
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
        let activity = full_class(package, class);
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

    pub(super) fn launch_package(&mut self, package: &str) -> Result<(), LaunchError> {
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
    pub(super) fn bring_task_to_front(&mut self, package: &str) -> bool {
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

    pub(super) fn start_task(&mut self, package: &str, view: View) {
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
    pub(super) fn open_external(&mut self, package: &str) {
        if !self.bring_task_to_front(package) {
            let view = self.view_of_package(package);
            self.start_task(package, view);
        }
        if let Some(task) = self.tasks.last_mut() {
            task.opened_from_app = true;
        }
    }

    pub(super) fn start_process(&mut self, package: &str) {
        if !self.pids.contains_key(package) {
            self.pids.insert(package.to_string(), self.next_pid);
            self.next_pid += 1;
        }
    }

    /// The screen a package opens on when the model has no transition choosing one.
    pub(super) fn view_of_package(&self, package: &str) -> View {
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

    pub(super) fn go_home(&mut self) {
        self.anr_showing = false;
        self.front = Front::Launcher;
        self.shown();
    }

    pub(super) fn front_after_leaving_recents(&self) -> Front {
        if self.tasks.is_empty() {
            Front::Launcher
        } else {
            Front::App
        }
    }

    pub(super) fn back(&mut self) {
        match self.front {
            Front::Launcher => {}
            Front::Recents => {
                self.front = self.front_after_leaving_recents();
                self.shown();
            }
            // The ANR dialog cannot be cancelled: only its buttons (or HOME) dismiss it.
            Front::App if self.anr_showing => {}
            Front::App => {
                let back_transition = self.top_screen_index().and_then(|from| {
                    let to = self.first_untargeted(from, Action::Back)?;
                    (!self.back_returns_beneath(from, &to)).then_some(to)
                });
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

    /// Whether a recorded back from `from` to `to` returns to the screen beneath instead (see
    /// [`AppModel::back_returns_beneath`]).
    fn back_returns_beneath(&self, from: usize, to: &Destination) -> bool {
        match (to, self.beneath()) {
            (Destination::Screen(to), Some(beneath)) => {
                self.model.back_returns_beneath(from, *to, beneath)
            }
            _ => false,
        }
    }

    /// Pops the top entry; an emptied task is finished, and the app that opened it (else the
    /// launcher) comes to the front.
    pub(super) fn pop(&mut self) {
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
    pub(super) fn navigate(&mut self, view: View, push: Stack) {
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
    pub(super) fn fire(
        &mut self,
        to: &Destination,
        push: Stack,
        carried: Option<(String, String)>,
    ) {
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
    pub(super) fn carry_field(&mut self, resource_id: &str, text: String) {
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

    /// Fault `crash-every:N`: crash transitions fire on their 1st, (N+1)th, ... attempt.
    pub fn set_crash_every(&mut self, every: Option<u32>) {
        self.crash_every = every;
    }

    pub(super) fn crash(&mut self, exception: &str) {
        if let Some(every) = self.crash_every {
            self.crash_attempts += 1;
            if !(self.crash_attempts - 1).is_multiple_of(every) {
                return;
            }
        }
        let package = self.model.package().to_string();
        let pid = self.pid(&package).unwrap_or(self.next_pid);
        let activity = self
            .top_screen_index()
            .map(|i| self.model.screen(i).activity.clone())
            .unwrap_or_else(|| format!("{package}.MainActivity"));
        self.crash_count += 1;
        self.crashes.push(Crash {
            seq: self.crash_count,
            time: chrono::Utc::now(),
            lines: fatal_exception_lines(&package, pid, &activity, exception),
            package: package.clone(),
            pid,
        });
        self.kill(&package);
    }

    /// Ends the package's process: its task goes, and its activities on other tasks.
    pub(super) fn kill(&mut self, package: &str) {
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
}
