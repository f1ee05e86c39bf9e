//! `pm`: package paths, listings, features and `pm clear`.

use super::procfs::package_uid;
use super::Phone;
use crate::sim::packages::{self, apk_dir};
use crate::sim::shell::Output;

/// The features `pm list features` reports for the simulated phone.
const FEATURES: &[&str] = &[
    "reqGlEsVersion=0x30000",
    "android.hardware.audio.output",
    "android.hardware.bluetooth",
    "android.hardware.camera",
    "android.hardware.camera.any",
    "android.hardware.faketouch",
    "android.hardware.location",
    "android.hardware.location.gps",
    "android.hardware.microphone",
    "android.hardware.ram.normal",
    "android.hardware.screen.landscape",
    "android.hardware.screen.portrait",
    "android.hardware.sensor.accelerometer",
    "android.hardware.telephony",
    "android.hardware.touchscreen",
    "android.hardware.touchscreen.multitouch",
    "android.hardware.touchscreen.multitouch.distinct",
    "android.hardware.wifi",
    "android.software.app_widgets",
    "android.software.home_screen",
    "android.software.input_methods",
    "android.software.webview",
];

impl Phone {
    pub(super) fn pm(&self, args: &[String]) -> Output {
        let installed = self.world().installed_packages();
        let known = |package: &String| installed.contains(package);
        match args.first().map(String::as_str) {
            Some("path") => match args.get(1) {
                Some(package) if known(package) => Output::ok(
                    packages::apk_paths(self.world().model(), package)
                        .iter()
                        .map(|path| format!("package:{path}\n"))
                        .collect::<String>(),
                ),
                _ => Output::status(1),
            },
            Some("list") => match args.get(1).map(String::as_str) {
                Some("packages") => self.pm_list_packages(&args[2..], &installed),
                Some("features") => Output::ok(
                    FEATURES
                        .iter()
                        .map(|f| format!("feature:{f}\n"))
                        .collect::<String>(),
                ),
                _ => Output::error("Error: unknown list type\n", 255),
            },
            Some("clear") => match args.iter().skip(1).find(|a| !a.starts_with('-')) {
                // The app's process dies and its state with it (the simulator keeps no other
                // app data).
                Some(package) if known(package) => {
                    self.force_stop(package);
                    Output::ok("Success\n")
                }
                _ => Output::error("Failed\n", 255),
            },
            Some("install" | "install-create") => Output::error(
                "Failure [INSTALL_FAILED_INTERNAL_ERROR: installing APKs is not simulated]\n",
                1,
            ),
            Some("uninstall") => Output::ok(
                "Failure [DELETE_FAILED_INTERNAL_ERROR: the app model fixes the installed packages]\n",
            ),
            _ => Output::error(
                "Package manager (package) commands:\n  path PACKAGE\n  list packages [-f] [-d] [-e] [-s] [-3] [-i] [-l] [-u] [-U] [--show-versioncode] [--user USER_ID] [FILTER]\n  list features\n  clear PACKAGE\n",
                255,
            ),
        }
    }

    /// `pm list packages [-f] [-d] [-e] [-s] [-3] [-i] [-u] [-U] [--show-versioncode] [FILTER]`.
    fn pm_list_packages(&self, args: &[String], installed: &[String]) -> Output {
        let mut flags = String::new();
        let mut filter = None;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--user" => {
                    iter.next();
                }
                "--show-versioncode" => flags.push('V'),
                "-a" | "--apex-only" | "--uid" => {}
                flag if flag.starts_with("--") => {
                    return Output::error(format!("Error: Unknown option: {flag}\n"), 255)
                }
                flag if flag.starts_with('-') => {
                    if let Some(bad) = flag[1..].chars().find(|c| !"fdes3ilUu".contains(*c)) {
                        return Output::error(format!("Error: Unknown option: -{bad}\n"), 255);
                    }
                    flags.push_str(&flag[1..]);
                }
                plain => filter = Some(plain.to_string()),
            }
        }
        let world = self.world();
        let mut out = String::new();
        for package in installed {
            let system = world.is_system_package(package);
            // Every simulated package is enabled.
            let wanted = !(flags.contains('d')
                || flags.contains('s') && !system
                || flags.contains('3') && system
                || filter
                    .as_ref()
                    .is_some_and(|f| !package.contains(f.as_str())));
            if !wanted {
                continue;
            }
            out.push_str("package:");
            if flags.contains('f') {
                out.push_str(&format!("{}/base.apk=", apk_dir(package)));
            }
            out.push_str(package);
            if flags.contains('V') {
                out.push_str(" versionCode:1");
            }
            if flags.contains('i') {
                out.push_str("  installer=null");
            }
            if flags.contains('U') {
                out.push_str(&format!(" uid:{}", package_uid(package)));
            }
            out.push('\n');
        }
        Output::ok(out)
    }
}
