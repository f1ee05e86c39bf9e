//! `pm` (and `cmd package`): package paths, listings, features, `pm clear`, installs (streamed,
//! from a file, or through an install session) and uninstalls, as API 33's
//! `PackageManagerShellCommand` answers them.

use std::collections::BTreeMap;

use super::procfs::package_uid;
use super::{guard, Phone};
use crate::sim::packages::{self, apk_dir};
use crate::sim::shell::{lock, FsHandle, Output, Session};

/// The largest APK `pm install` takes (as large as a push).
const APK_MAX: usize = 64 * 1024 * 1024;
/// The largest total an install session holds.
const SESSION_MAX: usize = 128 * 1024 * 1024;
/// Install sessions open at once.
const SESSIONS_MAX: usize = 16;
/// The first install session id the device hands out.
const FIRST_SESSION: u32 = 1_330_126_419;

/// An install session (`pm install-create`): the APKs written into it so far.
#[derive(Debug, Default)]
pub struct InstallSession {
    replace: bool,
    apks: BTreeMap<String, Vec<u8>>,
}

/// The package installer's open sessions.
#[derive(Debug)]
pub struct Sessions {
    next: u32,
    open: BTreeMap<u32, InstallSession>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            next: FIRST_SESSION,
            open: BTreeMap::new(),
        }
    }
}

/// What the flags of `install` and `install-create` say.
#[derive(Debug)]
struct InstallFlags {
    replace: bool,
    size: Option<usize>,
    file: Option<String>,
}

/// `-r` is the default on API 33 (ignored), `-R` refuses to replace; options with a value
/// take it; the first word that is not an option is the APK.
fn install_flags(args: &[String]) -> Result<InstallFlags, String> {
    let mut flags = InstallFlags {
        replace: true,
        size: None,
        file: None,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-R" => flags.replace = false,
            "-S" => match iter.next().and_then(|v| v.parse::<usize>().ok()) {
                Some(bytes) => flags.size = Some(bytes),
                None => return Err("Error: -S requires a size\n".to_string()),
            },
            "-i"
            | "--user"
            | "--install-reason"
            | "-p"
            | "--pkg"
            | "--abi"
            | "--originating-uri"
            | "--referrer"
            | "--install-location"
            | "--force-uuid"
            | "--apex"
            | "--restrict-permissions" => {
                iter.next();
            }
            flag if flag.starts_with('-') && flag.len() > 1 => {}
            path => {
                flags.file = Some(path.to_string());
                break;
            }
        }
    }
    Ok(flags)
}

/// The exception `cmd` prints when a command names a session the caller does not own.
fn no_session(command: &str, id: &str) -> Output {
    Output::error(
        format!(
            "Exception occurred while executing '{command}':\njava.lang.SecurityException: Caller has no access to session {id}\n"
        ),
        255,
    )
}

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
            Some("install-create") => self.install_create(&args[1..]),
            Some("install-write") => self.install_write(&args[1..], session, fs),
            Some("install-commit") => self.install_commit(&args[1..], fs),
            Some("install-abandon") => match args.get(1) {
                Some(id) => match id.parse::<u32>().ok().and_then(|id| guard(&self.sessions).open.remove(&id)) {
                    Some(_) => Output::ok("Success\n"),
                    None => no_session("install-abandon", id),
                },
                None => Output::error("Error: no session id specified\n", 1),
            },
            Some("uninstall") => self.pm_uninstall(&args[1..], fs),
            _ => Output::error(
                "Package manager (package) commands:\n  path PACKAGE\n  list packages [-f] [-d] [-e] [-s] [-3] [-i] [-l] [-u] [-U] [--show-versioncode] [--user USER_ID] [FILTER]\n  list features\n  clear PACKAGE\n",
                255,
            ),
        }
    }

    /// `pm install [-R] [-t] [-d] [-g] [-S SIZE] [FILE]` (`adb install` streams the APK as
    /// `cmd package install -S SIZE`): the APK's manifest names the package, which is installed
    /// beside the model's apps with the APK where `pm path` says.
    fn pm_install(&self, args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
        let flags = match install_flags(args) {
            Ok(flags) => flags,
            Err(message) => return Output::error(message, 1),
        };
        let apk = match (flags.size, &flags.file) {
            (Some(bytes), _) if bytes > APK_MAX => {
                return Output::error("Failure [INSTALL_FAILED_INSUFFICIENT_STORAGE]\n", 1)
            }
            (Some(bytes), None) => session.stdin_up_to(bytes),
            (_, Some(path)) if path != "-" => match lock(fs).read(path) {
                Ok(data) => data.to_vec(),
                Err(err) => {
                    return Output::error(format!("Error: Can't open file: {path}: {err}\n"), 1)
                }
            },
            (Some(bytes), Some(_)) => session.stdin_up_to(bytes),
            (None, _) => {
                return Output::error(
                    "Error: must either specify a package size or an APK file\n",
                    1,
                )
            }
        };
        let mut apks = BTreeMap::new();
        apks.insert("base.apk".to_string(), apk);
        self.commit_apks(&apks, flags.replace, fs)
    }

    /// Installs the base APK and the splits of one package: `Success`, or the `Failure [...]`
    /// line and exit 1.
    fn commit_apks(
        &self,
        apks: &BTreeMap<String, Vec<u8>>,
        replace: bool,
        fs: &FsHandle,
    ) -> Output {
        let failure = |reason: String| Output::error(format!("Failure [{reason}]\n"), 1);
        let mut base = None;
        let mut splits = Vec::new();
        for apk in apks.values() {
            match crate::apk::read_manifest(std::io::Cursor::new(apk)) {
                Ok(manifest) if manifest.split.is_none() => base = Some((manifest, apk)),
                Ok(manifest) => splits.push((manifest, apk)),
                Err(err) => {
                    return failure(format!(
                        "INSTALL_PARSE_FAILED_NOT_APK: Failed to parse base.apk: {err}"
                    ))
                }
            }
        }
        let Some((manifest, base_apk)) = base else {
            return match splits.is_empty() {
                true => failure("INSTALL_FAILED_INVALID_APK: No packages staged".into()),
                false => {
                    failure("INSTALL_FAILED_INVALID_APK: Missing existing base package".into())
                }
            };
        };
        if let Some((split, _)) = splits.iter().find(|(s, _)| s.package != manifest.package) {
            return failure(format!(
                "INSTALL_FAILED_INVALID_APK: Split {} package {} inconsistent with {}",
                split.split.clone().unwrap_or_default(),
                split.package,
                manifest.package
            ));
        }
        if let Err(err) = self.world().install(&manifest, replace) {
            return failure(err.to_string());
        }
        let dir = apk_dir(&manifest.package);
        let mut storage = lock(fs);
        let _ = storage.remove(&dir, true);
        storage.install(&format!("{dir}/base.apk"), base_apk);
        for (split, apk) in &splits {
            let name = split.split.clone().unwrap_or_default();
            storage.install(&format!("{dir}/split_{name}.apk"), apk);
        }
        Output::ok("Success\n")
    }

    /// `pm install-create [-R] [-S TOTAL] ...`: a new session for `install-write`.
    fn install_create(&self, args: &[String]) -> Output {
        let flags = match install_flags(args) {
            Ok(flags) => flags,
            Err(message) => return Output::error(message, 1),
        };
        let mut sessions = guard(&self.sessions);
        if sessions.open.len() >= SESSIONS_MAX {
            return Output::error(
                "Exception occurred while executing 'install-create':\njava.lang.IllegalStateException: Too many active sessions for UID 2000\n",
                255,
            );
        }
        let id = sessions.next;
        sessions.next += 1;
        sessions.open.insert(
            id,
            InstallSession {
                replace: flags.replace,
                apks: BTreeMap::new(),
            },
        );
        Output::ok(format!("Success: created install session [{id}]\n"))
    }

    /// `pm install-write [-S BYTES] SESSION NAME [PATH | -]`: an APK into the session, from a
    /// device file or streamed on stdin.
    fn install_write(&self, args: &[String], session: &mut dyn Session, fs: &FsHandle) -> Output {
        let mut size = None;
        let mut words = Vec::new();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "-S" => match iter.next().and_then(|v| v.parse::<usize>().ok()) {
                    Some(bytes) => size = Some(bytes),
                    None => return Output::error("Error: -S requires a size\n", 1),
                },
                flag if flag.starts_with('-') && flag != "-" => {
                    return Output::error(
                        format!("Exception occurred while executing 'install-write':\njava.lang.IllegalArgumentException: Unknown option: {flag}\n"),
                        255,
                    )
                }
                word => words.push(word.to_string()),
            }
        }
        let (Some(id), Some(name)) = (words.first(), words.get(1)) else {
            return Output::error("Error: must specify a session id and a split name\n", 1);
        };
        let Some(id_number) = id
            .parse::<u32>()
            .ok()
            .filter(|n| guard(&self.sessions).open.contains_key(n))
        else {
            return no_session("install-write", id);
        };
        let apk = match words.get(2).map(String::as_str) {
            Some(path) if path != "-" => match lock(fs).read(path) {
                Ok(data) => data.to_vec(),
                Err(err) => {
                    return Output::error(format!("Error: Can't open file: {path}: {err}\n"), 1)
                }
            },
            _ => match size {
                Some(bytes) if bytes > APK_MAX => {
                    return Output::error("Error: failed to write; No space left on device\n", 1)
                }
                Some(bytes) if bytes > 0 => session.stdin_up_to(bytes),
                _ => return Output::error("Error: must specify a APK size\n", 1),
            },
        };
        let mut sessions = guard(&self.sessions);
        let Some(open) = sessions.open.get_mut(&id_number) else {
            return no_session("install-write", id);
        };
        let total: usize = open.apks.values().map(Vec::len).sum::<usize>() + apk.len();
        if total > SESSION_MAX {
            return Output::error("Error: failed to write; No space left on device\n", 1);
        }
        let streamed = apk.len();
        open.apks.insert(name.clone(), apk);
        Output::ok(format!("Success: streamed {streamed} bytes\n"))
    }

    /// `pm install-commit SESSION`: installs what the session holds and closes it.
    fn install_commit(&self, args: &[String], fs: &FsHandle) -> Output {
        let Some(id) = args.first() else {
            return Output::error("Error: no session id specified\n", 1);
        };
        let open = id
            .parse::<u32>()
            .ok()
            .and_then(|n| guard(&self.sessions).open.remove(&n));
        match open {
            Some(open) => self.commit_apks(&open.apks, open.replace, fs),
            None => no_session("install-commit", id),
        }
    }

    /// `pm uninstall [-k] [--user N] [--versionCode N] PACKAGE`: the package leaves the
    /// device (`Success`); the phone's own packages and unknown ones answer `Failure [...]`.
    fn pm_uninstall(&self, args: &[String], fs: &FsHandle) -> Output {
        let mut package = None;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--user" | "--versionCode" => {
                    iter.next();
                }
                flag if flag.starts_with('-') => {}
                name => package = Some(name.to_string()),
            }
        }
        let Some(package) = package else {
            return Output::error("Error: package name not specified\n", 1);
        };
        let removed = self.world().uninstall(&package);
        match removed {
            Ok(()) => {
                let _ = lock(fs).remove(&apk_dir(&package), true);
                Output::ok("Success\n")
            }
            Err(err) => Output {
                stdout: format!("Failure [{err}]\n").into_bytes(),
                status: 1,
                ..Output::default()
            },
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
