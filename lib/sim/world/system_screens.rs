//! The phone's own screens over the apps: the launcher, recents and the ANR dialog, and taps on
//! them.

use super::{Front, World};
use crate::sim::model::{Node, Screen};
use crate::sim::system;
impl World {
    /// Fault `anr-on:SCREEN`: when that screen is shown, the app stops responding (an ANR dialog
    /// "X isn't responding" with Close app / Wait is shown over it, as on a real device).
    pub fn set_anr_screen(&mut self, screen: Option<String>) {
        self.anr_screen = screen;
        self.anr_showing =
            self.front == Front::App && self.anr_screen_is(&self.foreground().screen);
        self.shown();
    }

    pub(super) fn launcher_screen(&self) -> Screen {
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

    pub(super) fn launcher_hit(&self, x: i32, y: i32) -> Option<String> {
        let screen = self.launcher_screen();
        let apps = self.launchable();
        let icons = &screen.roots[0].children[0].children;
        icons
            .iter()
            .position(|icon| icon.bounds.contains(x, y))
            .and_then(|i| apps.get(i).cloned())
    }

    /// Recents: one card per task, most recent first.
    pub(super) fn recents_screen(&self) -> Screen {
        let labels: Vec<String> = self
            .tasks
            .iter()
            .rev()
            .map(|t| self.label_of(&t.package))
            .collect();
        system::recents(&labels, self.screen_size())
    }

    pub(super) fn recents_tap(&mut self, x: i32, y: i32) {
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
    pub(super) fn anr_dialog(&self) -> Node {
        let package = self
            .tasks
            .last()
            .map(|t| t.package.clone())
            .unwrap_or_default();
        system::anr_dialog(&self.label_of(&package), self.screen_size())
    }

    pub(super) fn anr_tap(&mut self, x: i32, y: i32) {
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

    pub(super) fn anr_screen_is(&self, screen: &str) -> bool {
        self.anr_screen.as_deref() == Some(screen)
    }
}
