//! A path to a failure in the forms a developer's own tools run:
//!
//! - a **Maestro flow** (YAML): `appId`, then `launchApp`, `tapOn` by resource id or text
//!   (where the recorded screen has one element with it) else by point, `inputText` (after
//!   `eraseText` of what the field held, as droid-act deletes it first),
//!   `longPressOn`, `back`, `pressKey: home`, `scroll`, `swipe`, `waitForAnimationToEnd` (a tap
//!   on the system's permission dialog `optional`: a device that granted it shows none). Only
//!   commands and parameters Maestro documents (its docs' command reference,
//!   `mobile-dev-inc/maestro-docs`, `api-reference/SUMMARY.md`); `id` and `text` are regular
//!   expressions there, so the recorded values are escaped.
//! - a **POSIX shell script** of `adb shell` commands: force-stop and launch, then `input tap`,
//!   `input swipe`, `input text`, `input keyevent` at the recorded points (a tap on the system's
//!   permission dialog only while `dumpsys window` shows it in front); it exits 0 when the
//!   failure is in the device's logs afterwards. Every device command is built as droid-act
//!   builds it (text word by word, each word single-quoted for the device's shell) and the
//!   whole command is single-quoted again for the host's shell, so no recorded text is ever
//!   run as a command on either side.
//! - the **events** of the path (JSON lines), which `droid-crawl replay --events` takes.
//!
//! The test password is never written: where a step typed its placeholder, the flow types
//! `${TEST_PASSWORD}` and the script the `TEST_PASSWORD` environment variable.

use std::fmt::Write as _;

use serde_json::Value;

use super::script::{FailureKind, Script, Step, StepKind};
use crate::act::held_text_len;
use crate::device::clearing_commands;
use crate::device::text::{ascii_commands, ime_broadcast_command, is_plain_ascii, shell_quote};
use crate::device::{gesture_points, Direction};
use crate::events::ActionType;
use crate::secret::TEST_PASSWORD_PLACEHOLDER;
use crate::ui::{Bounds, UiElement};

/// How long droid's scrolls and swipes take (droid-act's own gesture).
const GESTURE_MS: u32 = 400;
/// Long presses, as droid-act makes them.
const LONG_PRESS_MS: u32 = 1000;

/// What an export is of.
#[derive(Debug, Clone)]
pub struct Target<'s> {
    pub package: &'s str,
    pub kind: FailureKind,
    /// `java.lang.IllegalStateException: cache directory is locked`, or the ANR's reason.
    pub title: &'s str,
    /// What the script looks for in the logs: the exception class, or `ANR in PACKAGE`.
    pub evidence: String,
    pub signature: &'s str,
    /// One comment line: where the path comes from and how it was verified.
    pub provenance: String,
    pub clear_data: bool,
}

/// The comment lines both exports start with: where the path comes from, and the failure.
fn header(target: &Target<'_>) -> String {
    format!(
        "# {}\n# {} {} in {}: {}\n",
        one_line(&target.provenance),
        target.kind,
        target.signature,
        target.package,
        one_line(target.title)
    )
}

/// A Maestro flow of the steps `picks` of `script`.
pub fn maestro(script: &Script, picks: &[usize], target: &Target<'_>) -> String {
    let mut out = String::new();
    out.push_str(&header(target));
    let _ = writeln!(
        out,
        "# Run: maestro test FILE (-e TEST_PASSWORD=... when a step types it)"
    );
    let _ = writeln!(out, "appId: {}", yaml_string(target.package));
    out.push_str("---\n");
    out.push_str("- launchApp:\n");
    let _ = writeln!(out, "    appId: {}", yaml_string(target.package));
    let _ = writeln!(out, "    clearState: {}", target.clear_data);
    out.push_str("    stopApp: true\n");
    for &pick in picks {
        let step = &script.steps[pick];
        let _ = writeln!(out, "# step {}: {}", step.step, one_line(&step.description));
        out.push_str(&maestro_step(step, target.package));
    }
    out
}

fn maestro_step(step: &Step, package: &str) -> String {
    let selector = || selector(step);
    match (step.kind, &step.action.action) {
        (StepKind::Relaunch, _) => format!(
            "- launchApp:\n    appId: {}\n    stopApp: true\n",
            yaml_string(package)
        ),
        // The system asks for a permission only until it is granted: a device that granted it
        // before shows no dialog, and the flow goes on without the tap.
        (_, ActionType::Click | ActionType::Tap) if on_permission_dialog(step) => {
            format!("- tapOn:\n{}    optional: true\n", selector())
        }
        (_, ActionType::Click | ActionType::Tap) => format!("- tapOn:\n{}", selector()),
        (_, ActionType::LongPress) => format!("- longPressOn:\n{}", selector()),
        (_, ActionType::Input) => {
            let text = step.text().unwrap_or_default();
            let typed = match text.contains(TEST_PASSWORD_PLACEHOLDER) {
                true => text.replace(TEST_PASSWORD_PLACEHOLDER, "${TEST_PASSWORD}"),
                false => text.to_string(),
            };
            let held = held_text(step);
            let erase: String = (0..held)
                .step_by(MAESTRO_ERASE_MAX)
                .map(|erased| format!("- eraseText: {}\n", (held - erased).min(MAESTRO_ERASE_MAX)))
                .collect();
            format!(
                "- tapOn:\n{}{erase}- inputText: {}\n",
                selector(),
                yaml_string(&typed)
            )
        }
        (_, ActionType::Back) => "- back\n".into(),
        (_, ActionType::Home) => "- pressKey: home\n".into(),
        (_, ActionType::Wait) => format!(
            "- waitForAnimationToEnd:\n    timeout: {}\n",
            step.action.duration_ms.unwrap_or(1000)
        ),
        (_, gesture) if gesture.is_gesture() => match gesture_area(step) {
            None => match gesture {
                ActionType::ScrollDown => "- scroll\n".into(),
                other => format!("- swipe:\n    direction: {}\n", direction_word(other)),
            },
            Some(area) => {
                let ((x1, y1), (x2, y2)) = gesture_points(direction(gesture), area);
                format!(
                    "- swipe:\n    start: {}\n    end: {}\n    duration: {GESTURE_MS}\n",
                    yaml_string(&format!("{x1}, {y1}")),
                    yaml_string(&format!("{x2}, {y2}"))
                )
            }
        },
        // Recents has no Maestro command; the step is named so the gap shows.
        (_, other) => format!("# ({other}: no Maestro command)\n"),
    }
}

/// Whether the step answered the system's permission dialog (the driver's tap on it).
fn on_permission_dialog(step: &Step) -> bool {
    step.observed
        && step
            .observation
            .as_deref()
            .is_some_and(crate::crawl::policy::shows_permission_dialog)
}

/// `tapOn`'s selector lines: the resource id when the recorded screen has one element with it,
/// else its text or description when unique, else the recorded point.
fn selector(step: &Step) -> String {
    let shown: Vec<&UiElement> = step
        .observation
        .as_deref()
        .map(|o| o.elements.iter().filter(|e| e.visible).collect())
        .unwrap_or_default();
    if let Some(element) = &step.element {
        let unique =
            |same: &dyn Fn(&UiElement) -> bool| shown.iter().filter(|e| same(e)).count() == 1;
        let id = &element.resource_id;
        if !id.is_empty() && unique(&|e| e.resource_id == *id) {
            return format!("    id: {}\n", yaml_string(&regex_escape(id)));
        }
        let label = match element.text.is_empty() {
            true => &element.content_desc,
            false => &element.text,
        };
        let readable = !label.is_empty() && !label.contains('\n') && !element.editable;
        if readable && unique(&|e| e.text == *label || e.content_desc == *label) {
            return format!("    text: {}\n", yaml_string(&regex_escape(label)));
        }
    }
    match point(step) {
        Some((x, y)) => format!("    point: {}\n", yaml_string(&format!("{x},{y}"))),
        None => "    point: \"50%,50%\"\n".into(),
    }
}

/// Where the step touched: the recorded point, else its element's centre.
fn point(step: &Step) -> Option<(i32, i32)> {
    step.point
        .or_else(|| step.element.as_ref().map(|e| e.bounds.center()))
        .or_else(|| step.action.point.map(|[x, y]| (x as i32, y as i32)))
}

/// The container a scroll or swipe ran in, when it was not the whole screen.
fn gesture_area(step: &Step) -> Option<Bounds> {
    if let Some(element) = &step.element {
        return Some(element.bounds);
    }
    let bbox = step.action.target_bounding_box?;
    let [x1, y1] = bbox.top_left;
    let [x2, y2] = bbox.bottom_right;
    let (x, y) = (((x1 + x2) / 2) as i32, ((y1 + y2) / 2) as i32);
    let elements = step
        .observation
        .as_deref()
        .map(|o| &o.elements[..])
        .unwrap_or(&[]);
    let container = elements
        .iter()
        .filter(|e| e.scrollable && e.bounds.contains(x, y))
        .min_by_key(|e| e.bounds.area())
        .map(|e| e.bounds);
    container.or(Some(Bounds::from([
        x1 as i32, y1 as i32, x2 as i32, y2 as i32,
    ])))
}

/// The whole screen of the step, for gestures without an area.
fn screen_area(step: &Step) -> Bounds {
    let [w, h] = step
        .observation
        .as_deref()
        .and_then(|o| o.screen_size)
        .unwrap_or([1080, 2400]);
    Bounds::from([0, 0, w as i32, h as i32])
}

fn direction(action: &ActionType) -> Direction {
    match action {
        ActionType::ScrollUp => Direction::ScrollUp,
        ActionType::SwipeLeft => Direction::SwipeLeft,
        ActionType::SwipeRight => Direction::SwipeRight,
        _ => Direction::ScrollDown,
    }
}

/// Maestro's swipe direction for droid's gesture: a scroll down (content from below) is a
/// finger moving up.
fn direction_word(action: &ActionType) -> &'static str {
    match action {
        ActionType::ScrollUp => "DOWN",
        ActionType::SwipeLeft => "LEFT",
        ActionType::SwipeRight => "RIGHT",
        _ => "UP",
    }
}

/// A POSIX shell script of `adb shell` commands that takes the steps `picks` of `script`.
pub fn shell(script: &Script, picks: &[usize], target: &Target<'_>) -> String {
    let package = shell_quote(target.package);
    let mut out = String::from("#!/bin/sh\n");
    out.push_str(&header(target));
    out.push_str(
        "# Run with the device attached: ANDROID_SERIAL=SERIAL sh FILE (ADB=/path/to/adb,\n\
         # STEP_DELAY=seconds between steps, default 1; TEST_PASSWORD=... when a step types it).\n\
         # Exit status: 0 when the failure is in the device's logs afterwards, 1 when not.\n",
    );
    out.push_str("set -eu\nADB=${ADB:-adb}\nSTEP_DELAY=${STEP_DELAY:-1}\n");
    out.push_str("device() { \"$ADB\" shell \"$1\"; }\n");
    if needs_password(script, picks) {
        out.push_str(SECRET_TYPER);
    }
    let _ = writeln!(
        out,
        "device {}",
        shell_quote(&format!("am force-stop {package}"))
    );
    if target.clear_data {
        let _ = writeln!(
            out,
            "device {} >/dev/null",
            shell_quote(&format!("pm clear {package}"))
        );
    }
    let _ = writeln!(out, "device 'logcat -b crash -c'");
    let _ = writeln!(out, "device 'logcat -b main,system -c'");
    let launch = format!("monkey -p {package} -c android.intent.category.LAUNCHER 1");
    let _ = writeln!(out, "device {} >/dev/null", shell_quote(&launch));
    for &pick in picks {
        let step = &script.steps[pick];
        let _ = writeln!(out, "sleep \"$STEP_DELAY\"");
        let _ = writeln!(out, "# step {}: {}", step.step, one_line(&step.description));
        for line in shell_step(step, &package) {
            let _ = writeln!(out, "{line}");
        }
    }
    out.push_str("sleep \"$STEP_DELAY\"\n");
    let (buffer, what) = match target.kind {
        FailureKind::Crash => ("logcat -b crash -d", target.evidence.as_str()),
        FailureKind::Anr => ("logcat -b main,system -d", target.evidence.as_str()),
    };
    let _ = writeln!(
        out,
        "if device {} | grep -F -q -e {}; then",
        shell_quote(buffer),
        shell_quote(what)
    );
    let _ = writeln!(
        out,
        "    echo {}",
        shell_quote(&format!("reproduced: {}", one_line(target.title)))
    );
    out.push_str("    exit 0\nfi\n");
    let _ = writeln!(
        out,
        "echo {} >&2",
        shell_quote(&format!(
            "not reproduced: {} is not in the logs",
            one_line(what)
        ))
    );
    out.push_str("exit 1\n");
    out
}

/// Types `$1` on the device word by word, each word single-quoted for the device's shell (for
/// the test password, which the script does not hold).
const SECRET_TYPER: &str = r#"type_secret() {
    rest=$1
    while :; do
        word=${rest%%" "*}
        if [ -n "$word" ]; then
            quoted=$(printf '%s' "$word" | sed "s/'/'\\\\''/g")
            device "input text '$quoted'"
        fi
        [ "$word" = "$rest" ] && break
        device 'input keyevent KEYCODE_SPACE'
        rest=${rest#*" "}
    done
}
"#;

fn needs_password(script: &Script, picks: &[usize]) -> bool {
    picks.iter().any(|&p| {
        script.steps[p]
            .text()
            .is_some_and(|t| t.contains(TEST_PASSWORD_PLACEHOLDER))
    })
}

/// The script's lines for one step: `device '...'` calls, every device command quoted whole.
fn shell_step(step: &Step, package: &str) -> Vec<String> {
    let device = |command: String| format!("device {}", shell_quote(&command));
    let tap = |(x, y): (i32, i32)| device(format!("input tap {x} {y}"));
    let at = point(step);
    match (step.kind, &step.action.action) {
        (StepKind::Relaunch, _) => vec![
            device(format!("am force-stop {package}")),
            device(format!(
                "monkey -p {package} -c android.intent.category.LAUNCHER 1"
            )) + " >/dev/null",
        ],
        // Only while the dialog is in front: a device that granted the permission before
        // shows none, and the tap would land on the app.
        (_, ActionType::Click | ActionType::Tap) if on_permission_dialog(step) => {
            let activity = step
                .observation
                .as_deref()
                .and_then(|o| o.activity.as_deref())
                .and_then(|a| a.rsplit(['.', '/']).next())
                .filter(|class| !class.is_empty())
                .unwrap_or("GrantPermissionsActivity");
            at.map(|point| {
                format!(
                    "if device 'dumpsys window displays' | grep -q -F -e {}; then {}; fi",
                    shell_quote(activity),
                    tap(point)
                )
            })
            .into_iter()
            .collect()
        }
        (_, ActionType::Click | ActionType::Tap) => at.map(tap).into_iter().collect(),
        (_, ActionType::LongPress) => at
            .map(|(x, y)| device(format!("input swipe {x} {y} {x} {y} {LONG_PRESS_MS}")))
            .into_iter()
            .collect(),
        (_, ActionType::Input) => {
            let mut lines: Vec<String> = at.map(tap).into_iter().collect();
            lines.extend(clearing_commands(held_text(step)).into_iter().map(device));
            lines.extend(type_lines(step.text().unwrap_or_default()));
            lines
        }
        (_, ActionType::Back) => vec![device("input keyevent KEYCODE_BACK".into())],
        (_, ActionType::Home) => vec![device("input keyevent KEYCODE_HOME".into())],
        (_, ActionType::Recents) => vec![device("input keyevent KEYCODE_APP_SWITCH".into())],
        (_, ActionType::Wait) => {
            let ms = step.action.duration_ms.unwrap_or(1000);
            vec![format!("sleep {}.{:03}", ms / 1000, ms % 1000)]
        }
        (_, gesture) if gesture.is_gesture() => {
            let area = gesture_area(step).unwrap_or_else(|| screen_area(step));
            let ((x1, y1), (x2, y2)) = gesture_points(direction(gesture), area);
            vec![device(format!(
                "input swipe {x1} {y1} {x2} {y2} {GESTURE_MS}"
            ))]
        }
        (_, other) => vec![format!(
            "# ({}: not a device command)",
            one_line(other.as_str())
        )],
    }
}

/// The most characters one Maestro `eraseText` deletes.
const MAESTRO_ERASE_MAX: usize = 100;

/// What the field held when the step typed into it, which droid-act deleted first.
fn held_text(step: &Step) -> usize {
    step.element.as_ref().map_or(0, held_text_len)
}

/// The lines that type `text`: droid-act's device commands, the test password from the
/// environment.
fn type_lines(text: &str) -> Vec<String> {
    let device = |command: String| format!("device {}", shell_quote(&command));
    let mut lines = Vec::new();
    for (i, part) in text.split(TEST_PASSWORD_PLACEHOLDER).enumerate() {
        if i > 0 {
            lines.push("type_secret \"${TEST_PASSWORD:?set TEST_PASSWORD}\"".into());
        }
        if part.is_empty() {
            continue;
        }
        match is_plain_ascii(part) {
            true => match ascii_commands(part) {
                Ok(commands) => lines.extend(commands.into_iter().map(device)),
                Err(error) => lines.push(format!("# cannot type: {error}")),
            },
            // Through the ADB Keyboard IME, as droid-act types it.
            false => lines.push(device(ime_broadcast_command(part))),
        }
    }
    lines
}

/// A YAML double-quoted scalar (JSON's string syntax, which YAML reads the same).
fn yaml_string(text: &str) -> String {
    Value::from(text).to_string()
}

/// `text` as a regular expression matching exactly it (Maestro's `id` and `text` are regular
/// expressions, Java's syntax): its metacharacters escaped, the rest left readable.
pub fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if r"\.^$|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One line for a comment: control characters and line breaks replaced.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::events::{Action, Decision, Observation};

    #[test]
    fn regular_expressions_match_the_text_itself() {
        assert_eq!(regex_escape("com.example:id/a_b"), r"com\.example:id/a_b");
        assert_eq!(regex_escape("Price ($)"), r"Price \(\$\)");
        assert_eq!(regex_escape(r"a\b|c*"), r"a\\b\|c\*");
        assert_eq!(regex_escape("Café"), "Café");
    }

    #[test]
    fn yaml_strings_quote_everything() {
        assert_eq!(yaml_string("a \"b\"\n: c"), r#""a \"b\"\n: c""#);
    }

    /// What the host's shell hands `device` for each line: the device command, unchanged.
    fn through_sh(lines: &[String]) -> Vec<String> {
        let script = format!(
            "device() {{ printf '%s\\n' \"$1\"; }}\n{}\n",
            lines.join("\n")
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("sh runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// A tap on (400, 1000) of a screen of `package` whose one button has `resource_id`.
    fn tap_on(package: &str, resource_id: &str) -> Step {
        let button = UiElement {
            resource_id: resource_id.to_string(),
            text: "Allow".into(),
            clickable: true,
            visible: true,
            bounds: Bounds::from([60, 940, 1020, 1060]),
            ..UiElement::default()
        };
        let observation = Observation {
            package: Some(package.to_string()),
            activity: Some(format!("{package}.permission.ui.GrantPermissionsActivity")),
            elements: vec![button.clone()],
            ..Observation::default()
        };
        let action = Action::new(ActionType::Click);
        let result = serde_json::from_value(serde_json::json!({
            "index": 0, "action_type": "click", "success": true
        }))
        .unwrap();
        Step {
            step: 4,
            index: 0,
            kind: StepKind::Act,
            decision: Arc::new(Decision::new(vec![action.clone()])),
            action,
            screen: None,
            observed: true,
            element: Some(button),
            signature: None,
            point: Some((540, 1000)),
            description: "click Button \"Allow\"".into(),
            observation: Some(Arc::new(observation)),
            result,
        }
    }

    #[test]
    fn a_tap_on_the_permission_dialog_is_only_taken_while_it_asks() {
        let asks = tap_on(
            "com.android.permissioncontroller",
            "com.android.permissioncontroller:id/permission_allow_button",
        );
        let flow = maestro_step(&asks, "com.example.app");
        assert!(flow.ends_with("    optional: true\n"), "{flow}");
        let lines = shell_step(&asks, "com.example.app");
        assert_eq!(
            lines,
            [
                "if device 'dumpsys window displays' | grep -q -F -e 'GrantPermissionsActivity'; \
              then device 'input tap 540 1000'; fi"
            ]
        );
        // The app's own button of that name is a tap like any other.
        let own = tap_on(
            "com.example.app",
            "com.example.app:id/permission_allow_button",
        );
        assert!(!maestro_step(&own, "com.example.app").contains("optional"));
        assert_eq!(
            shell_step(&own, "com.example.app"),
            ["device 'input tap 540 1000'"]
        );
    }

    #[test]
    fn typing_into_a_field_that_held_text_deletes_it_first_as_droid_act_did() {
        let mut step = tap_on("com.example.app", "com.example.app:id/name");
        step.action = Action {
            input_text: Some("Bo".into()),
            ..Action::new(ActionType::Input)
        };
        let field = step.element.as_mut().unwrap();
        field.editable = true;
        field.text = "Al".into();
        let flow = maestro_step(&step, "com.example.app");
        assert!(
            flow.contains("- eraseText: 2\n- inputText: \"Bo\"\n"),
            "{flow}"
        );
        assert_eq!(
            shell_step(&step, "com.example.app"),
            [
                "device 'input tap 540 1000'",
                "device 'input keyevent 67 67 112 112'",
                r#"device 'input text '\''Bo'\'''"#
            ]
        );
        // Maestro erases at most 100 characters a command.
        step.element.as_mut().unwrap().text = "x".repeat(230);
        let flow = maestro_step(&step, "com.example.app");
        assert!(
            flow.contains("- eraseText: 100\n- eraseText: 100\n- eraseText: 30\n- inputText"),
            "{flow}"
        );
        // A field showing only its hint is typed into as it is.
        let field = step.element.as_mut().unwrap();
        field.text = "Al".into();
        field.hint = "Al".into();
        assert!(!maestro_step(&step, "com.example.app").contains("eraseText"));
        assert_eq!(shell_step(&step, "com.example.app").len(), 2);
    }

    #[test]
    fn typed_text_reaches_the_device_shell_as_droid_act_types_it() {
        let hostile = "it's $(touch /tmp/x) `id` \"q\" ;|& 100%s";
        let lines = type_lines(hostile);
        assert_eq!(through_sh(&lines), ascii_commands(hostile).unwrap());
        let secret = type_lines("{{test_password}}");
        assert_eq!(
            secret,
            ["type_secret \"${TEST_PASSWORD:?set TEST_PASSWORD}\""]
        );
    }
}
