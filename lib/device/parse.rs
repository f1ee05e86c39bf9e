//! Parsers for what device commands print: `dumpsys` (foreground app), `wm size`, `getprop`,
//! `dumpsys package`, `ime list -s`. Each is pure and tested on real outputs in
//! `../shared/fixtures/device/`.

/// The app and activity in front.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreground {
    pub package: String,
    /// Fully qualified activity class (`.Main` expanded to `pkg.Main`).
    pub activity: String,
}

/// `pkg/cls` as dumpsys writes it, with a short `.Cls` expanded.
fn component(text: &str) -> Option<Foreground> {
    let (package, class) = text.split_once('/')?;
    let class: String = class
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '}')
        .collect();
    let valid =
        |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || "._$".contains(c));
    if !valid(package) || !valid(&class) {
        return None;
    }
    let activity = if class.starts_with('.') {
        format!("{package}{class}")
    } else {
        class
    };
    Some(Foreground {
        package: package.to_string(),
        activity,
    })
}

/// The component inside `ActivityRecord{hash u0 pkg/cls tN}` or `Window{hash u0 pkg/cls}`.
fn record_component(line: &str, marker: &str) -> Option<Foreground> {
    let start = line.find(marker)? + marker.len();
    let inner = &line[start..];
    inner
        .split_whitespace()
        .take(4)
        .find_map(|word| word.contains('/').then(|| component(word)).flatten())
}

/// The foreground app from any of `dumpsys window displays` (API 29+), `dumpsys window windows`
/// or `dumpsys activity activities`. The focused window wins when it is an activity window;
/// a non-activity window in front (the notification shade, a dialog of the system) defers to
/// the focused app, then to the resumed activity.
pub fn foreground_from_dumpsys(text: &str) -> Option<Foreground> {
    let focus = |key: &str| {
        text.lines().rev().find_map(|line| {
            let line = line.trim_start();
            let rest = line.strip_prefix(key)?;
            record_component(rest, "Window{").or_else(|| record_component(rest, "ActivityRecord{"))
        })
    };
    focus("mCurrentFocus=")
        .or_else(|| focus("mFocusedApp="))
        .or_else(|| focus("topResumedActivity="))
        .or_else(|| focus("mResumedActivity:"))
        .or_else(|| focus("ResumedActivity:"))
        .or_else(|| focus("Resumed:"))
}

/// `wm size`: the override when there is one, else the physical size.
pub fn screen_size_from_wm(text: &str) -> Option<(u32, u32)> {
    let size = |key: &str| {
        text.lines().find_map(|line| {
            let (w, h) = line.trim().strip_prefix(key)?.trim().split_once('x')?;
            Some((w.trim().parse().ok()?, h.trim().parse().ok()?))
        })
    };
    size("Override size:").or_else(|| size("Physical size:"))
}

/// One property from a full `getprop` listing (`[key]: [value]` lines).
pub fn getprop_value(listing: &str, key: &str) -> Option<String> {
    let prefix = format!("[{key}]: [");
    listing.lines().find_map(|line| {
        let value = line.trim().strip_prefix(&prefix)?.strip_suffix(']')?;
        Some(value.to_string())
    })
}

/// `versionName=` (and `versionCode=`) from `dumpsys package PKG`.
pub fn app_version_from_dumpsys(text: &str) -> Option<AppVersion> {
    let field = |key: &str| {
        text.split_whitespace()
            .find_map(|word| word.strip_prefix(key).map(str::to_string))
    };
    let name = field("versionName=").filter(|n| n != "null");
    let code = field("versionCode=").and_then(|c| c.parse().ok());
    (name.is_some() || code.is_some()).then_some(AppVersion { name, code })
}

/// An installed app's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppVersion {
    pub name: Option<String>,
    pub code: Option<u64>,
}

/// The ADB Keyboard IME's id as `ime list -s` and `settings get secure default_input_method`
/// print it.
pub const ADB_KEYBOARD_IME: &str = "com.android.adbkeyboard/.AdbIME";

/// Whether `ime list -s` lists the ADB Keyboard among the enabled IMEs.
pub fn adb_keyboard_enabled(ime_list: &str) -> bool {
    ime_list.lines().any(|line| line.trim() == ADB_KEYBOARD_IME)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(path: &str) -> String {
        let full = format!("{}/device/{path}", crate::fixtures::location().display());
        std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
    }

    fn fg(package: &str, activity: &str) -> Option<Foreground> {
        Some(Foreground {
            package: package.into(),
            activity: activity.into(),
        })
    }

    #[test]
    fn window_displays_api29_plus_skips_the_notification_shade() {
        crate::fixtures_or_skip!();
        let text = fixture("dumpsys/window_displays_android13_mtk_from_bugreport.txt");
        assert_eq!(
            foreground_from_dumpsys(&text),
            fg("com.mediatek.camera", "com.mediatek.camera.CameraLauncher")
        );
    }

    #[test]
    fn activity_activities_android13() {
        crate::fixtures_or_skip!();
        let text = fixture("dumpsys/activity_activities_android13_mtk_tablet.txt");
        assert_eq!(
            foreground_from_dumpsys(&text),
            fg("com.mediatek.camera", "com.mediatek.camera.CameraLauncher")
        );
    }

    #[test]
    fn activity_activities_old_taskrecord() {
        crate::fixtures_or_skip!();
        let text = fixture("dumpsys/activity_activities_old_taskrecord_android5or6_xtc.txt");
        assert_eq!(
            foreground_from_dumpsys(&text),
            fg(
                "com.xtc.watch",
                "com.xtc.watch.view.home.activity.XtcHomeActivity"
            )
        );
    }

    #[test]
    fn window_windows_old_current_focus_takes_the_latest_line() {
        crate::fixtures_or_skip!();
        let text = fixture("dumpsys/window_windows_mcurrentfocus_sequence_android4x_2015.txt");
        assert_eq!(
            foreground_from_dumpsys(&text),
            fg(
                "com.lookout.enterprise",
                "com.lookout.enterprise.ui.android.activity.InviteActivationActivity"
            )
        );
    }

    #[test]
    fn window_windows_tail_prefers_the_focused_window() {
        crate::fixtures_or_skip!();
        let text = fixture("dumpsys/window_windows_tail_focus_android4x_car_1920x720.txt");
        assert_eq!(
            foreground_from_dumpsys(&text),
            fg(
                "com.incall.apps.launcher",
                "com.incall.apps.launcher.Launcher"
            )
        );
    }

    #[test]
    fn window_windows_api29_plus_has_no_focus_lines() {
        crate::fixtures_or_skip!();
        // These outputs carry no focus at all: the caller must fall back to another dumpsys.
        for path in [
            "dumpsys/window_windows_android13_mtk_from_bugreport.txt",
            "dumpsys/window_windows_vivo_android1x_utf8.txt",
            "dumpsys/window_windows_entry_android13or14_bili_excerpt.txt",
        ] {
            assert_eq!(foreground_from_dumpsys(&fixture(path)), None, "{path}");
        }
    }

    #[test]
    fn focus_null_and_garbage_give_nothing() {
        assert_eq!(foreground_from_dumpsys("  mCurrentFocus=null\n"), None);
        assert_eq!(foreground_from_dumpsys("\u{0}\u{1}garbage{{/"), None);
        assert_eq!(foreground_from_dumpsys(""), None);
    }

    #[test]
    fn wm_size_honours_the_override() {
        crate::fixtures_or_skip!();
        let text = fixture("cmd/wm_size_physical_and_override.txt");
        assert_eq!(screen_size_from_wm(&text), Some((540, 1170)));
        assert_eq!(
            screen_size_from_wm("Physical size: 1080x2400\n"),
            Some((1080, 2400))
        );
        assert_eq!(screen_size_from_wm("Physical size: axb"), None);
    }

    #[test]
    fn getprop_listing() {
        crate::fixtures_or_skip!();
        let text = fixture("cmd/getprop_android13_mtk_tablet_full.txt");
        assert_eq!(
            getprop_value(&text, "ro.build.version.sdk").as_deref(),
            Some("33")
        );
        assert!(getprop_value(&text, "ro.product.model").is_some());
        assert_eq!(getprop_value(&text, "no.such.key"), None);
    }

    #[test]
    fn package_version() {
        crate::fixtures_or_skip!();
        let text = fixture("dumpsys/package_settings_block_android13_from_bugreport.txt");
        assert_eq!(
            app_version_from_dumpsys(&text),
            Some(AppVersion {
                name: Some("13".into()),
                code: Some(33)
            })
        );
        assert_eq!(app_version_from_dumpsys("nothing here"), None);
    }

    #[test]
    fn ime_list() {
        assert!(adb_keyboard_enabled(
            "com.android.inputmethod.latin/.LatinIME\ncom.android.adbkeyboard/.AdbIME\n"
        ));
        assert!(!adb_keyboard_enabled(
            "com.android.inputmethod.latin/.LatinIME\n"
        ));
    }
}
