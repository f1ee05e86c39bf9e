//! The settings provider (`settings get|put|delete|list`) and the `svc` switches that write it:
//! three namespaces starting from an emulator's defaults, kept for the life of the device.

use std::collections::BTreeMap;

use super::{guard, Phone};
use crate::sim::shell::Output;

/// Namespaces `settings` knows.
const NAMESPACES: &[&str] = &["system", "secure", "global"];

/// Values a freshly booted API 33 emulator reports (AOSP SettingsProvider defaults).
const DEFAULTS: &[(&str, &str, &str)] = &[
    ("system", "accelerometer_rotation", "0"),
    ("system", "font_scale", "1.0"),
    ("system", "haptic_feedback_enabled", "1"),
    ("system", "screen_brightness", "102"),
    ("system", "screen_brightness_mode", "0"),
    ("system", "screen_off_timeout", "60000"),
    ("system", "sound_effects_enabled", "1"),
    ("system", "user_rotation", "0"),
    ("secure", "accessibility_enabled", "0"),
    ("secure", "location_mode", "3"),
    ("secure", "show_ime_with_hard_keyboard", "1"),
    ("global", "adb_enabled", "1"),
    ("global", "airplane_mode_on", "0"),
    ("global", "animator_duration_scale", "1.0"),
    ("global", "auto_time", "1"),
    ("global", "bluetooth_on", "0"),
    ("global", "boot_count", "1"),
    ("global", "data_roaming", "0"),
    ("global", "development_settings_enabled", "1"),
    ("global", "device_provisioned", "1"),
    ("global", "mobile_data", "1"),
    ("global", "stay_on_while_plugged_in", "0"),
    ("global", "transition_animation_scale", "1.0"),
    ("global", "wifi_on", "1"),
    ("global", "window_animation_scale", "1.0"),
];

const USAGE: &str = "usage:  settings [--user <USER_ID> | current] get namespace key
        settings [--user <USER_ID> | current] put namespace key value
        settings [--user <USER_ID> | current] delete namespace key
        settings [--user <USER_ID> | current] list namespace

'namespace' is one of {system, secure, global}, case-insensitive
If '--user <USER_ID> | current' is not given, the operations are performed on the system user.
";

/// What `settings` asked of the store, after its arguments were checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    Get(&'a str, &'a str),
    Put(&'a str, &'a str, &'a str),
    Delete(&'a str, &'a str),
    List(&'a str),
}

/// Parses `settings` arguments; `Err` is the usage text (exit 255 on a device).
pub fn parse(args: &[String]) -> Result<Request<'_>, &'static str> {
    let mut words: Vec<&str> = args.iter().map(String::as_str).collect();
    if words.first() == Some(&"--user") {
        if words.len() < 2 {
            return Err(USAGE);
        }
        words.drain(..2);
    }
    let namespace = |name: &str| {
        NAMESPACES
            .iter()
            .find(|n| n.eq_ignore_ascii_case(name))
            .copied()
    };
    match words.as_slice() {
        ["get", ns, key] => namespace(ns).map(|ns| Request::Get(ns, key)),
        ["put", ns, key, value, ..] => namespace(ns).map(|ns| Request::Put(ns, key, value)),
        ["delete", ns, key] => namespace(ns).map(|ns| Request::Delete(ns, key)),
        ["list", ns] => namespace(ns).map(Request::List),
        _ => None,
    }
    .ok_or(USAGE)
}

/// The stored settings.
#[derive(Debug, Clone)]
pub struct Settings {
    values: BTreeMap<(String, String), String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            values: DEFAULTS
                .iter()
                .map(|(ns, key, value)| ((ns.to_string(), key.to_string()), value.to_string()))
                .collect(),
        }
    }
}

impl Settings {
    pub fn get(&self, namespace: &str, key: &str) -> Option<&str> {
        self.values
            .get(&(namespace.to_string(), key.to_string()))
            .map(String::as_str)
    }

    pub fn put(&mut self, namespace: &str, key: &str, value: &str) {
        self.values
            .insert((namespace.to_string(), key.to_string()), value.to_string());
    }

    /// True when something was deleted.
    pub fn delete(&mut self, namespace: &str, key: &str) -> bool {
        self.values
            .remove(&(namespace.to_string(), key.to_string()))
            .is_some()
    }

    /// `key=value` lines of one namespace, sorted by key.
    pub fn list(&self, namespace: &str) -> String {
        self.values
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|((_, key), value)| format!("{key}={value}\n"))
            .collect()
    }

    /// A boolean setting stored as `0`/`1`.
    pub fn flag(&self, namespace: &str, key: &str) -> bool {
        self.get(namespace, key).is_some_and(|v| v != "0")
    }
}

/// `svc wifi|data enable|disable` and `svc power stayon`: the setting each one flips, or the
/// usage text.
pub fn svc(args: &[String]) -> Result<(&'static str, &'static str, String), String> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let switch = |value: &str| match value {
        "enable" => Some("1".to_string()),
        "disable" => Some("0".to_string()),
        _ => None,
    };
    let found = match words.as_slice() {
        ["wifi", value] => switch(value).map(|v| ("global", "wifi_on", v)),
        ["data", value] => switch(value).map(|v| ("global", "mobile_data", v)),
        ["power", "stayon", value] => match *value {
            "true" => Some("7"),
            "false" => Some("0"),
            "usb" => Some("2"),
            "ac" => Some("1"),
            "wireless" => Some("4"),
            _ => None,
        }
        .map(|v| ("global", "stay_on_while_plugged_in", v.to_string())),
        _ => None,
    };
    found.ok_or_else(|| {
        "Available commands:\n    help     Show information about the subcommands\n    power    Control the power manager\n    data     Control mobile data connectivity\n    wifi     Control the Wi-Fi manager\n".to_string()
    })
}

impl Phone {
    pub(super) fn settings(&self, args: &[String]) -> Output {
        let request = match parse(args) {
            Ok(request) => request,
            Err(usage) => return Output::error(usage, 255),
        };
        // The input method settings are the world's IME state.
        match request {
            Request::Get("secure", "default_input_method") => {
                return Output::ok(format!("{}\n", self.world().ime_current()));
            }
            Request::Get("secure", "enabled_input_methods") => {
                return Output::ok(format!("{}\n", self.world().ime_enabled().join(":")));
            }
            Request::Put("secure", "default_input_method", id) => {
                self.world().ime_set(id);
                return Output::default();
            }
            _ => {}
        }
        let mut store = guard(&self.settings);
        match request {
            Request::Get(namespace, key) => {
                Output::ok(format!("{}\n", store.get(namespace, key).unwrap_or("null")))
            }
            Request::Put(namespace, key, value) => {
                store.put(namespace, key, value);
                Output::default()
            }
            Request::Delete(namespace, key) => {
                let rows = usize::from(store.delete(namespace, key));
                Output::ok(format!("Deleted {rows} rows\n"))
            }
            Request::List(namespace) => Output::ok(store.list(namespace)),
        }
    }

    pub(super) fn svc(&self, args: &[String]) -> Output {
        match svc(args) {
            Ok((namespace, key, value)) => {
                guard(&self.settings).put(namespace, key, &value);
                Output::default()
            }
            Err(usage) => Output::error(usage, 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split(' ').map(String::from).collect()
    }

    #[test]
    fn requests_parse_with_or_without_a_user() {
        let get = args("get system screen_brightness");
        assert_eq!(parse(&get), Ok(Request::Get("system", "screen_brightness")));
        let put = args("--user 0 put GLOBAL airplane_mode_on 1");
        assert_eq!(
            parse(&put),
            Ok(Request::Put("global", "airplane_mode_on", "1"))
        );
        assert!(parse(&args("get nowhere x")).is_err());
        assert!(parse(&args("get system")).is_err());
    }

    #[test]
    fn values_start_from_the_defaults_and_keep_what_is_put() {
        let mut settings = Settings::default();
        assert_eq!(settings.get("system", "screen_brightness"), Some("102"));
        settings.put("system", "screen_brightness", "128");
        assert_eq!(settings.get("system", "screen_brightness"), Some("128"));
        assert!(settings.delete("system", "screen_brightness"));
        assert_eq!(settings.get("system", "screen_brightness"), None);
        assert!(settings.list("global").contains("wifi_on=1\n"));
    }

    #[test]
    fn svc_flips_its_setting() {
        assert_eq!(
            svc(&args("wifi disable")),
            Ok(("global", "wifi_on", "0".to_string()))
        );
        assert!(svc(&args("wifi maybe")).is_err());
    }
}
