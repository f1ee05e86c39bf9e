//! What is installed: packages, their labels and versions, input methods, and the crash
//! buffer.

use std::collections::BTreeSet;

use super::{
    Crash, InstallError, World, ADB_KEYBOARD_IME, ADB_KEYBOARD_PACKAGE, LATIN_IME, SYSTEM_PACKAGES,
};
use crate::sim::model::Destination;
use crate::sim::system::{package_label, threadtime_lines, LAUNCHER_PACKAGE};
impl World {
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
        packages.extend(self.options.hosted.iter().cloned());
        packages.extend(self.added.keys().cloned());
        packages.into_iter().collect()
    }

    /// `adb install` / `pm install`: a package the model does not fix joins the installed
    /// ones (it shows a generic screen when launched); `replace` (`-r`) lets it update one
    /// installed that way.
    pub fn install(
        &mut self,
        package: &str,
        version_name: Option<String>,
        replace: bool,
    ) -> Result<(), InstallError> {
        let added = self.added.contains_key(package);
        if self.installed(package) && !added {
            return Err(InstallError::Fixed(package.to_string()));
        }
        if added && !replace {
            return Err(InstallError::Exists(package.to_string()));
        }
        if added {
            self.kill(package);
        }
        self.added.insert(package.to_string(), version_name);
        self.shown();
        Ok(())
    }

    /// `pm uninstall`: true when the package was installed by `install` (and is now gone).
    pub fn uninstall(&mut self, package: &str) -> bool {
        if self.added.remove(package).is_none() {
            return false;
        }
        self.kill(package);
        self.tasks.retain(|t| t.package != package);
        self.shown();
        true
    }

    /// Whether `install` put the package on the device.
    pub fn is_added(&self, package: &str) -> bool {
        self.added.contains_key(package)
    }

    pub fn version_name(&self, package: &str) -> Option<String> {
        if let Some(version) = self.added.get(package) {
            Some(version.clone().unwrap_or_else(|| "null".to_string()))
        } else if package == self.model.package() {
            Some(self.model.version_name().to_string())
        } else if self.installed(package) {
            Some("13".to_string())
        } else {
            None
        }
    }

    /// The crash buffer as `logcat -b crash -d` prints it (FATAL EXCEPTION blocks).
    pub fn crash_log(&self) -> String {
        if self.crashes.is_empty() {
            return String::new();
        }
        let mut out = String::from("--------- beginning of crash\n");
        for crash in &self.crashes {
            out.push_str(&threadtime_lines(
                &crash.time,
                crash.pid,
                'E',
                "AndroidRuntime",
                &crash.lines,
            ));
        }
        out
    }

    /// The crashes after the one numbered `seq`, oldest first.
    pub fn crashes_since(&self, seq: u64) -> Vec<Crash> {
        self.crashes
            .iter()
            .filter(|crash| crash.seq > seq)
            .cloned()
            .collect()
    }

    pub fn clear_crash_log(&mut self) {
        self.crashes.clear();
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

    /// True when the package is one the device ships with (not the model's app, nor the ADB
    /// Keyboard).
    pub fn is_system_package(&self, package: &str) -> bool {
        SYSTEM_PACKAGES.iter().any(|(p, _)| *p == package)
    }

    pub(super) fn installed(&self, package: &str) -> bool {
        self.installed_packages().iter().any(|p| p == package)
    }

    pub(super) fn adb_keyboard_installed(&self) -> bool {
        self.options.ime_adbkeyboard || self.model.ime_adbkeyboard()
    }

    pub(super) fn label_of(&self, package: &str) -> String {
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
    /// The launcher activity of each app with a launcher icon, `(package, activity class)`: the
    /// model's start screen for its app, the first screen of another package (or its generic
    /// screen), as the package manager resolves MAIN / LAUNCHER.
    pub fn launcher_activities(&self) -> Vec<(String, String)> {
        self.launchable()
            .into_iter()
            .map(|package| {
                let activity = if package == self.model.package() {
                    self.model.screen(self.model.start()).activity.clone()
                } else {
                    self.screen_for(&self.view_of_package(&package)).activity
                };
                (package, activity)
            })
            .collect()
    }

    pub(super) fn launchable(&self) -> Vec<String> {
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
                )
                // Kept off the simulated launcher so its pages stay the app's own.
                && !self.options.hosted.contains(p)
        }));
        apps
    }
}
