//! What is installed: packages, their labels and versions, input methods, and the crash
//! buffer.

use std::collections::BTreeSet;

use super::{
    Added, Crash, InstallError, UninstallError, World, ADB_KEYBOARD_IME, ADB_KEYBOARD_PACKAGE,
    LATIN_IME, SYSTEM_PACKAGES,
};
use crate::sim::model::Destination;
use crate::sim::system::{package_label, threadtime_lines, LAUNCHER_PACKAGE};
impl World {
    pub fn installed_packages(&self) -> Vec<String> {
        let mut packages: BTreeSet<String> = SYSTEM_PACKAGES
            .iter()
            .map(|(package, _)| package.to_string())
            .collect();
        packages.extend(self.model_packages());
        if self.adb_keyboard_installed() {
            packages.insert(ADB_KEYBOARD_PACKAGE.to_string());
        }
        packages.extend(self.options.hosted.iter().cloned());
        packages.retain(|p| !self.removed.contains(p));
        packages.extend(self.added.keys().cloned());
        packages.into_iter().collect()
    }

    /// `adb install` / `pm install`: the APK's package joins the installed ones, with its
    /// version and activities; launched, it shows a plain screen of its main activity, unless it
    /// is a package of the model (the user uninstalled it and installs it again), whose screens
    /// then come back. `replace` false (`-R`) refuses a package already installed. A package
    /// the model or the phone has installed cannot be replaced: its signature is not this APK's.
    pub fn install(
        &mut self,
        manifest: &crate::apk::Manifest,
        replace: bool,
    ) -> Result<(), InstallError> {
        let package = manifest.package.as_str();
        let added = self.added.contains_key(package);
        let installed = self.installed(package);
        if installed && !replace {
            return Err(InstallError::Exists(package.to_string()));
        }
        if installed && !added {
            return Err(InstallError::Fixed(package.to_string()));
        }
        if added {
            self.kill(package);
        }
        self.removed.remove(package);
        self.added.insert(
            package.to_string(),
            Added {
                version_name: manifest.version_name.clone(),
                activities: manifest.activities.clone(),
                launcher: manifest.launchers.first().cloned(),
            },
        );
        self.shown();
        Ok(())
    }

    /// `pm uninstall`: the package leaves the device: its process dies, its tasks go, the
    /// launcher forgets it. The phone's own packages refuse.
    pub fn uninstall(&mut self, package: &str) -> Result<(), UninstallError> {
        if !self.installed(package) {
            return Err(UninstallError::NotInstalled(package.to_string()));
        }
        if self.is_system_package(package) {
            return Err(UninstallError::System(package.to_string()));
        }
        self.log_input("uninstall", vec![("package", package.into())]);
        self.added.remove(package);
        if self.model_packages().contains(package)
            || self.options.hosted.iter().any(|p| p == package)
            || package == ADB_KEYBOARD_PACKAGE
        {
            self.removed.insert(package.to_string());
        }
        self.kill(package);
        self.tasks.retain(|t| t.package != package);
        if self.tasks.is_empty() && self.front == super::Front::App {
            self.front = super::Front::Launcher;
        }
        self.shown();
        Ok(())
    }

    /// Whether `install` put the package on the device.
    pub fn is_added(&self, package: &str) -> bool {
        self.added.contains_key(package)
    }

    /// What an installed APK declared, for a package `install` put there.
    pub fn added(&self, package: &str) -> Option<&Added> {
        self.added.get(package)
    }

    /// The packages the model's screens and transitions belong to.
    fn model_packages(&self) -> BTreeSet<String> {
        let mut packages = BTreeSet::from([self.model.package().to_string()]);
        packages.extend(self.model.screens().iter().map(|s| s.package.clone()));
        packages.extend(self.model.transitions().iter().filter_map(|t| match &t.to {
            Destination::External(package) => Some(package.clone()),
            _ => None,
        }));
        packages
    }

    pub fn version_name(&self, package: &str) -> Option<String> {
        if let Some(added) = self.added.get(package) {
            Some(
                added
                    .version_name
                    .clone()
                    .unwrap_or_else(|| "null".to_string()),
            )
        } else if !self.installed(package) {
            None
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
        let installed = self.installed_packages();
        let mut apps: Vec<String> = installed
            .iter()
            .filter(|p| *p == self.model.package())
            .cloned()
            .collect();
        apps.extend(installed.into_iter().filter(|p| {
            p != self.model.package()
                // An installed APK without a launcher activity has no icon.
                && self.added.get(p).is_none_or(|a| a.launcher.is_some())
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
