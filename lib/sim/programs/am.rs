//! `am`: starting activities (explicit and implicit intents), force-stops and broadcasts.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use base64::Engine;

use super::logcat::Buffer;
use super::procfs::package_uid;
use super::{guard, Phone, SYSTEM_SERVER};
use crate::sim::component::{full_class, short_component};
use crate::sim::pcapdroid::{PCAPDROID_CONTROL, PCAPDROID_PACKAGE};
use crate::sim::shell::{FsHandle, Output, SHELL_PID};
use crate::sim::system::LAUNCHER_PACKAGE;
use crate::sim::world::LaunchError;

/// Broadcasts only the system may send: `am broadcast` from the shell is refused.
const PROTECTED_BROADCASTS: &[&str] = &[
    "android.intent.action.AIRPLANE_MODE",
    "android.intent.action.BATTERY_CHANGED",
    "android.intent.action.BOOT_COMPLETED",
    "android.intent.action.SCREEN_OFF",
    "android.intent.action.SCREEN_ON",
];

const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";

const BROWSER_PACKAGE: &str = "com.android.chrome";

/// `Uri.toSafeString()`: a web address keeps its scheme and host only.
fn safe_uri(uri: &str) -> String {
    match uri.split_once("://") {
        Some((scheme, rest)) if scheme == "http" || scheme == "https" => {
            let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
            format!("{scheme}://{host}/...")
        }
        _ => uri.to_string(),
    }
}

/// The parts of an `am` intent the simulator uses.
#[derive(Debug, Default)]
struct Intent {
    action: Option<String>,
    categories: Vec<String>,
    data: Option<String>,
    component: Option<String>,
    extras: BTreeMap<String, String>,
    wait: bool,
    stop_first: bool,
}

impl Intent {
    fn parse(args: &[String]) -> Result<Intent, String> {
        let mut intent = Intent::default();
        let mut iter = args.iter();
        let missing = |flag: &str| format!("Error: Argument expected after \"{flag}\"\n");
        while let Some(arg) = iter.next() {
            let mut value = || iter.next().cloned().ok_or_else(|| missing(arg));
            match arg.as_str() {
                "-n" => intent.component = Some(value()?),
                "-a" => intent.action = Some(value()?),
                "-c" => intent.categories.push(value()?),
                "-e" | "--es" | "--ez" | "--ei" | "--el" | "--ef" | "--eu" => {
                    let key = value()?;
                    let found = value()?;
                    intent.extras.insert(key, found);
                }
                "-W" => intent.wait = true,
                "-S" => intent.stop_first = true,
                "-d" => intent.data = Some(value()?),
                "-f" | "--user" | "-t" | "-p" => {
                    value()?;
                }
                _ => {}
            }
        }
        Ok(intent)
    }

    /// `act=`, `cat=[...]` and `dat=` as `Intent.toShortString` writes them, then `tail`.
    fn parts(&self, tail: Option<String>) -> String {
        let mut parts = Vec::new();
        if let Some(action) = &self.action {
            parts.push(format!("act={action}"));
        }
        if !self.categories.is_empty() {
            parts.push(format!("cat=[{}]", self.categories.join(",")));
        }
        if let Some(data) = &self.data {
            parts.push(format!("dat={}", safe_uri(data)));
        }
        parts.extend(tail);
        parts.join(" ")
    }

    fn fields(&self) -> String {
        self.parts(self.component.as_ref().map(|c| format!("cmp={c}")))
    }

    /// The fields the activity manager logs for a launch, up to the component it resolved.
    fn launch_fields(&self) -> String {
        self.parts(Some("flg=0x10000000".to_string()))
    }

    fn describe(&self) -> String {
        let extras = if self.extras.is_empty() {
            ""
        } else {
            " (has extras)"
        };
        format!("Intent {{ {}{extras} }}", self.fields())
    }

    fn describe_broadcast(&self) -> String {
        let extras = if self.extras.is_empty() {
            ""
        } else {
            " (has extras)"
        };
        format!("Intent {{ {} flg=0x400000{extras} }}", self.fields())
    }
}

impl Phone {
    pub(super) fn am(&self, args: &[String], fs: &FsHandle) -> Output {
        match args.first().map(String::as_str) {
            Some("start" | "start-activity") => self.am_start(&args[1..], fs),
            Some("force-stop" | "kill") => match args.get(1) {
                Some(package) => {
                    self.force_stop(package);
                    Output::default()
                }
                None => Output::error("Error: no package specified\n", 255),
            },
            Some("broadcast") => self.am_broadcast(&args[1..]),
            Some(other) => Output::error(
                format!("Unknown command: {other}\n"),
                255,
            ),
            None => Output::error("Activity manager (activity) commands:\n  help\n  start [options] INTENT\n  force-stop PACKAGE\n  broadcast [options] INTENT\n", 0),
        }
    }

    fn am_start(&self, args: &[String], fs: &FsHandle) -> Output {
        let intent = match Intent::parse(args) {
            Ok(intent) => intent,
            Err(message) => return Output::error(message, 255),
        };
        let Some(component) = intent.component.clone() else {
            return self.am_start_implicit(&intent);
        };
        let Some((package, class)) = component
            .split_once('/')
            .filter(|(p, c)| !p.is_empty() && !c.is_empty())
        else {
            return Output::error(
                format!("Exception occurred while executing 'start':\njava.lang.IllegalArgumentException: Bad component name: {component}\n\tat android.content.Intent.parseCommandArgs(Intent.java:8828)\n\tat com.android.server.am.ActivityManagerShellCommand.makeIntent(ActivityManagerShellCommand.java:398)\n"),
                255,
            );
        };
        let starting = format!("Starting: {}\n", intent.describe());
        let pcapdroid_installed = self.world().model().pcapdroid().is_some();
        if component == PCAPDROID_CONTROL && pcapdroid_installed {
            return match self.pcapdroid(&intent.extras, fs) {
                Ok(()) => Output::ok(starting),
                Err(message) => Output {
                    stdout: starting.into_bytes(),
                    stderr: message.into_bytes(),
                    status: 0,
                },
            };
        }
        if intent.stop_first {
            self.force_stop(package);
        }
        *guard(&self.launching) = Some((intent.launch_fields(), 2000));
        let result = self.world().start_activity(&component);
        match result {
            Ok(()) => {
                let mut out = starting;
                if intent.wait {
                    out.push_str(&format!(
                        "Status: ok\nLaunchState: COLD\nActivity: {}\nTotalTime: 250\nWaitTime: 262\nComplete\n",
                        short_component(package, &full_class(package, class))
                    ));
                }
                Output::ok(out)
            }
            Err(LaunchError::UnknownPackage(_) | LaunchError::NoSuchActivity(_)) | Err(_) => {
                Output {
                    stdout: starting.into_bytes(),
                    stderr: format!(
                        "Error type 3\nError: Activity class {{{package}/{}}} does not exist.\n",
                        full_class(package, class)
                    )
                    .into_bytes(),
                    status: 1,
                }
            }
        }
    }

    /// An intent without a component: a web link opens the browser, HOME the launcher;
    /// nothing else on the device resolves one.
    fn am_start_implicit(&self, intent: &Intent) -> Output {
        let starting = format!("Starting: {}\n", intent.describe());
        let web = intent
            .data
            .as_deref()
            .is_some_and(|d| d.starts_with("http://") || d.starts_with("https://"));
        let target = match intent.action.as_deref() {
            Some("android.intent.action.VIEW") if web => Some(BROWSER_PACKAGE),
            Some("android.intent.action.MAIN")
                if intent
                    .categories
                    .iter()
                    .any(|c| c == "android.intent.category.HOME") =>
            {
                Some(LAUNCHER_PACKAGE)
            }
            _ => None,
        };
        let launched = target.filter(|package| {
            *guard(&self.launching) = Some((intent.launch_fields(), 2000));
            self.world().launch(package).is_ok()
        });
        match launched {
            Some(_) => Output::ok(starting),
            None => Output::error(
                format!(
                    "{starting}Error: Activity not started, unable to resolve {}\n",
                    intent.describe()
                ),
                1,
            ),
        }
    }

    /// `am force-stop`: the process dies, as the activity manager logs it.
    pub(super) fn force_stop(&self, package: &str) {
        if package == PCAPDROID_PACKAGE {
            let _ = self.end_capture(true);
        }
        if self.world().pid(package).is_some() {
            guard(&self.logs).log(
                Buffer::System,
                SYSTEM_SERVER,
                'I',
                "ActivityManager",
                &format!(
                    "Force stopping {package} appid={} user=0: from pid {}",
                    package_uid(package),
                    SHELL_PID + 1
                ),
            );
        }
        self.world().force_stop(package);
    }

    fn am_broadcast(&self, args: &[String]) -> Output {
        let intent = match Intent::parse(args) {
            Ok(intent) => intent,
            Err(message) => return Output::error(message, 255),
        };
        let broadcasting = format!("Broadcasting: {}\n", intent.describe_broadcast());
        if let Some(action) = intent
            .action
            .as_deref()
            .filter(|a| PROTECTED_BROADCASTS.contains(a))
        {
            let pid = self.next_pid.fetch_add(1, Ordering::SeqCst);
            return Output {
                stdout: broadcasting.into_bytes(),
                stderr: format!("Exception occurred while executing 'broadcast':\njava.lang.SecurityException: Permission Denial: not allowed to send broadcast {action} from pid={pid}, uid=2000\n\tat com.android.server.am.ActivityManagerService.broadcastIntentLocked(ActivityManagerService.java:13787)\n\tat com.android.server.am.ActivityManagerService.broadcastIntentWithFeature(ActivityManagerService.java:14518)\n").into_bytes(),
                status: 255,
            };
        }
        let message = intent.extras.get("msg").cloned();
        let typed = match (intent.action.as_deref(), message) {
            (Some("ADB_INPUT_TEXT"), Some(msg)) => Some(msg),
            (Some("ADB_INPUT_B64"), Some(msg)) => base64::engine::general_purpose::STANDARD
                .decode(msg.as_bytes())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok()),
            _ => None,
        };
        if let Some(typed) = typed {
            // Without the ADB Keyboard active nobody receives the broadcast: it completes anyway.
            let mut world = self.world();
            if world.ime_current() == ADB_KEYBOARD_IME {
                let _ = world.ime_text(&typed);
            }
        }
        Output::ok(format!("{broadcasting}Broadcast completed: result=0\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_parse_extras_and_describe_themselves() {
        let args: Vec<String> = "-n com.a/.Main -a android.intent.action.MAIN -c android.intent.category.LAUNCHER -e action start --ez flag true -W"
            .split(' ')
            .map(String::from)
            .collect();
        let intent = Intent::parse(&args).unwrap();
        assert_eq!(
            intent.extras.get("action").map(String::as_str),
            Some("start")
        );
        assert!(intent.wait);
        assert_eq!(
            intent.describe(),
            "Intent { act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] cmp=com.a/.Main (has extras) }"
        );
        assert!(Intent::parse(&["-n".to_string()]).is_err());
    }
}
