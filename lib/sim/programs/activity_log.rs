//! The activity manager's log: what a command's effects write to the system buffer (processes
//! started and gone, activities started, an app that stopped responding).

use super::logcat::Buffer;
use super::procfs::{package_uid, short_uid};
use super::{guard, Phone, SYSTEM_SERVER};
use crate::sim::component::{full_class, short_component};
use crate::sim::system::{self, LAUNCHER_PACKAGE};
use crate::sim::world::{Foreground, TaskSummary};

/// What the activity manager's log is written from: the state before and after a command.
#[derive(Debug)]
pub(super) struct Moment {
    foreground: Foreground,
    pids: Vec<(String, u32)>,
    tasks: Vec<TaskSummary>,
    anr: bool,
}

impl Phone {
    pub(super) fn moment(&self) -> Moment {
        let pids = self.app_pids();
        let world = self.world();
        Moment {
            foreground: world.foreground(),
            pids,
            tasks: world.tasks(),
            anr: world.anr_showing(),
        }
    }

    /// Notes the state before the first command, which the log starts from.
    pub(super) fn mark_moment(&self) {
        let mut last = guard(&self.logged_moment);
        if last.is_none() {
            *last = Some(self.moment());
        }
    }

    /// Writes what the activity manager logs about what changed since it last wrote: processes
    /// started and gone, activities started, and an app that stopped responding. Against the
    /// state last logged, not the one before this command, so commands that overlap (a streaming
    /// `logcat` while an app starts) log each change once.
    pub(super) fn log_changes(&self) {
        let mut last = guard(&self.logged_moment);
        let after = self.moment();
        if let Some(before) = last.as_ref() {
            self.log_between(before, &after);
        }
        *last = Some(after);
    }

    fn log_between(&self, before: &Moment, after: &Moment) {
        let mut logs = guard(&self.logs);
        self.copy_crashes(&mut logs);
        let front = &after.foreground;
        if after.anr && !before.anr {
            let pid = after
                .pids
                .iter()
                .find(|(p, _)| *p == front.package)
                .map_or(0, |(_, pid)| *pid);
            let component = short_component(&front.package, &front.activity);
            for line in system::anr_block(&front.package, &component, pid) {
                logs.log(Buffer::System, SYSTEM_SERVER, 'E', "ActivityManager", &line);
            }
        }
        let started = front.package != before.foreground.package
            || front.activity != before.foreground.activity;
        let front_task = after.tasks.last();
        let before_len = front_task
            .and_then(|t| before.tasks.iter().find(|b| b.package == t.package))
            .map(|t| t.activities.len());
        let pushed = match (front_task, before_len) {
            (Some(task), Some(len)) => task.activities.len() > len,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let launching = guard(&self.launching).take();
        let component = short_component(&front.package, &front.activity);
        let logged_start =
            started && (pushed || launching.is_some()) && front.package != LAUNCHER_PACKAGE;
        if logged_start {
            let (fields, uid) = launching
                .unwrap_or_else(|| (String::new(), package_uid(&before.foreground.package)));
            let space = if fields.is_empty() { "" } else { " " };
            logs.log(
                Buffer::System,
                SYSTEM_SERVER,
                'I',
                "ActivityTaskManager",
                &format!("START u0 {{{fields}{space}cmp={component}}} from uid {uid}"),
            );
        }
        for (package, pid) in &after.pids {
            if !before
                .pids
                .iter()
                .any(|(p, old)| p == package && old == pid)
            {
                logs.log(
                    Buffer::System,
                    SYSTEM_SERVER,
                    'I',
                    "ActivityManager",
                    &format!(
                        "Start proc {pid}:{package}/{} for pre-top-activity {{{}}}",
                        short_uid(package_uid(package)),
                        short_component(package, &full_class(package, &front.activity))
                    ),
                );
            }
        }
        for (package, pid) in &before.pids {
            if !after.pids.iter().any(|(p, _)| p == package) {
                logs.log(
                    Buffer::System,
                    SYSTEM_SERVER,
                    'I',
                    "ActivityManager",
                    &format!("Process {package} (pid {pid}) has died: fg  TOP"),
                );
            }
        }
        if logged_start {
            logs.log(
                Buffer::System,
                SYSTEM_SERVER,
                'I',
                "ActivityTaskManager",
                &format!("Displayed {component}: +312ms"),
            );
        }
        drop(logs);
        self.logged.notify_all();
    }
}
