//! `input`: taps, swipes, text and keys into the world, with the real usage text and errors.

use std::sync::atomic::Ordering;

use super::Phone;
use crate::sim::shell::Output;
use crate::sim::world::InputError;

const KEY_POWER: &str = "26";

const KEY_SLEEP: &str = "223";

const KEY_WAKEUP: &str = "224";

/// The `input` usage text of Android 11+ (`input_usage_android11plus.txt`).
const INPUT_USAGE: &str = "Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]

The sources are:
      dpad
      keyboard
      mouse
      touchpad
      gamepad
      touchnavigation
      joystick
      touchscreen
      stylus
      trackball

-d: specify the display ID.
      (Default: -1 for key event, 0 for motion event if not specified.)
The commands and default sources are:
      text <string> (Default: touchscreen)
      keyevent [--longpress] <key code number or name> ... (Default: keyboard)
      tap <x> <y> (Default: touchscreen)
      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      press (Default: trackball)
      roll <dx> <dy> (Default: trackball)
      motionevent <DOWN|UP|MOVE> <x> <y> (Default: touchscreen)
";

const INPUT_SOURCES: &[&str] = &[
    "dpad",
    "keyboard",
    "mouse",
    "touchpad",
    "gamepad",
    "touchnavigation",
    "joystick",
    "touchscreen",
    "stylus",
    "trackball",
];

fn number_error(values: &[&str]) -> Output {
    let bad = values
        .iter()
        .find(|v| v.parse::<f32>().is_err())
        .unwrap_or(&"");
    Output::error(
        format!("Exception occurred while executing 'input':\njava.lang.NumberFormatException: For input string: \"{bad}\"\n"),
        255,
    )
}

/// What `input` prints when the framework throws: the BasicShellCommandHandler shape.
fn input_exception(command: &str, err: &InputError) -> Output {
    let exception = match err {
        InputError::UnknownKey(key) => {
            format!("java.lang.IllegalArgumentException: Unknown keycode: {key}")
        }
        InputError::Untypable(_) => {
            "java.lang.NullPointerException: Attempt to get length of null array".to_string()
        }
        other => format!("java.lang.IllegalStateException: {other}"),
    };
    Output::error(
        format!("Exception occurred while executing '{command}':\n{exception}\n"),
        255,
    )
}

impl Phone {
    pub(super) fn input(&self, args: &[String]) -> Output {
        let usage = || Output::error(INPUT_USAGE, 1);
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        if args.first().is_some_and(|a| INPUT_SOURCES.contains(a)) {
            args.remove(0);
        }
        if args.first() == Some(&"-d") {
            if args.len() < 2 {
                return usage();
            }
            args.drain(..2);
        }
        let Some((command, rest)) = args.split_first() else {
            return usage();
        };
        let numbers = |values: &[&str]| -> Option<Vec<i32>> {
            values
                .iter()
                .map(|v| v.parse::<f32>().ok().map(|f| f as i32))
                .collect()
        };
        // With the display off no window takes touches or text: they are dropped.
        let screen_on = self.screen_on.load(Ordering::SeqCst);
        match (*command, rest) {
            ("tap" | "swipe" | "draganddrop" | "text", _) if !screen_on => Output::default(),
            ("tap", [x, y]) => match numbers(&[x, y]) {
                Some(p) => {
                    self.world().tap(p[0], p[1]);
                    Output::default()
                }
                None => number_error(rest),
            },
            ("swipe" | "draganddrop", [x1, y1, x2, y2, duration @ ..]) if duration.len() <= 1 => {
                let Some(p) = numbers(&[x1, y1, x2, y2]) else {
                    return number_error(rest);
                };
                let default = if *command == "swipe" { 300 } else { 2000 };
                let ms = match duration.first() {
                    Some(ms) => match ms.parse::<u64>() {
                        Ok(ms) => ms,
                        Err(_) => return number_error(duration),
                    },
                    None => default,
                };
                self.world().swipe(p[0], p[1], p[2], p[3], ms);
                Output::default()
            }
            ("text", [typed]) => match self.world().input_text(typed) {
                Ok(()) => Output::default(),
                Err(err) => input_exception("text", &err),
            },
            ("keyevent", keys) if !keys.is_empty() => {
                let keys: Vec<&str> = keys
                    .iter()
                    .copied()
                    .filter(|k| *k != "--longpress" && *k != "--doubletap")
                    .collect();
                let mut world = self.world();
                for key in keys {
                    let code = crate::sim::keys::keycode(key).map(|c| c.to_string());
                    let power = matches!(code.as_deref(), Some(KEY_POWER | KEY_SLEEP | KEY_WAKEUP));
                    if !power && !self.screen_on.load(Ordering::SeqCst) {
                        continue;
                    }
                    if let Err(err) = world.key(key) {
                        return input_exception("keyevent", &err);
                    }
                    match code.as_deref() {
                        Some(KEY_POWER) => {
                            self.screen_on.fetch_xor(true, Ordering::SeqCst);
                        }
                        Some(KEY_SLEEP) => self.screen_on.store(false, Ordering::SeqCst),
                        Some(KEY_WAKEUP) => self.screen_on.store(true, Ordering::SeqCst),
                        _ => {}
                    }
                }
                Output::default()
            }
            ("press", []) => match self.world().key("KEYCODE_DPAD_CENTER") {
                Ok(()) => Output::default(),
                Err(err) => input_exception("press", &err),
            },
            _ => usage(),
        }
    }
}
