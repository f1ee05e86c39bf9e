//! `pm`: package paths, listings, features and `pm clear`.

use super::procfs::package_uid;
use super::Phone;
use crate::sim::packages::{self, apk_dir};
use crate::sim::shell::{lock, FsHandle, Output, Session};

/// The largest APK `pm install` takes (as large as a push).
const APK_MAX: usize = 64 * 1024 * 1024;

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
    pub(super) fn pm(&self, args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
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
            Some("install") => self.pm_install(&args[1..], session, fs),
            Some("install-create") => Output::error(
                "Failure [INSTALL_FAILED_INTERNAL_ERROR: install sessions are not simulated: use pm install]\n",
                1,
            ),
            Some("uninstall") => match args.iter().skip(1).rfind(|a| !a.starts_with('-')) {
                Some(package) if self.world().uninstall(package) => {
                    let _ = lock(fs).remove(&apk_dir(package), true);
                    Output::ok("Success\n")
                }
                _ => Output::ok(
                    "Failure [DELETE_FAILED_INTERNAL_ERROR: the app model fixes the installed packages]\n",
                ),
            },
            _ => Output::error(
                "Package manager (package) commands:\n  path PACKAGE\n  list packages [-f] [-d] [-e] [-s] [-3] [-i] [-l] [-u] [-U] [--show-versioncode] [--user USER_ID] [FILTER]\n  list features\n  clear PACKAGE\n",
                255,
            ),
        }
    }

    /// `pm install [-r] [-t] [-d] [-g] [-S SIZE] [FILE]` (`adb install` streams the APK as
    /// `cmd package install -S SIZE`): the APK's manifest names the package, which is installed
    /// beside the model's apps with the APK where `pm path` says.
    fn pm_install(&self, args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
        let failure = |reason: String| Output::error(format!("Failure [{reason}]\n"), 1);
        let mut replace = false;
        let mut size = None;
        let mut file = None;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "-r" => replace = true,
                "-S" => match iter.next().and_then(|v| v.parse::<usize>().ok()) {
                    Some(bytes) => size = Some(bytes),
                    None => return Output::error("Error: -S requires a size\n", 1),
                },
                "-i" | "--user" | "--install-reason" | "-p" | "--pkg" | "--abi"
                | "--originating-uri" | "--referrer" => {
                    iter.next();
                }
                flag if flag.starts_with('-') => {}
                path => file = Some(path.to_string()),
            }
        }
        let apk = match (size, file) {
            (Some(bytes), _) if bytes > APK_MAX => {
                return failure("INSTALL_FAILED_INSUFFICIENT_STORAGE".to_string())
            }
            (Some(bytes), _) => session.stdin_up_to(bytes),
            (None, Some(path)) => match lock(fs).read(&path) {
                Ok(data) => data.to_vec(),
                Err(err) => {
                    return Output::error(format!("Error: Can't open file: {path}: {err}\n"), 1)
                }
            },
            (None, None) => {
                return Output::error(
                    "Error: must either specify a package size or an APK file\n",
                    1,
                )
            }
        };
        let manifest = match crate::apk::read_manifest(std::io::Cursor::new(&apk)) {
            Ok(manifest) if manifest.split.is_none() => manifest,
            Ok(_) => return failure("INSTALL_FAILED_INVALID_APK: a split without its base".into()),
            Err(err) => {
                return failure(format!(
                    "INSTALL_PARSE_FAILED_NOT_APK: Failed to parse base.apk: {err}"
                ))
            }
        };
        let package = manifest.package;
        if let Err(err) = self
            .world()
            .install(&package, manifest.version_name, replace)
        {
            return failure(err.to_string());
        }
        let dir = apk_dir(&package);
        let mut storage = lock(fs);
        let _ = storage.remove(&dir, true);
        storage.install(&format!("{dir}/base.apk"), &apk);
        Output::ok("Success\n")
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
