//! The simulated phone: launcher, the model's app, external apps, back stack, typed text, crash
//! buffer, IME state.

use thiserror::Error;

use super::model::AppModel;
use super::render;
use super::truth::TruthLog;

/// How the world is set up.
#[derive(Debug, Default)]
pub struct WorldOptions {
    /// Install and allow enabling the ADB Keyboard IME (`com.android.adbkeyboard/.AdbIME`).
    pub ime_adbkeyboard: bool,
    pub truth: Option<TruthLog>,
    pub serial: String,
}

/// What is in front.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreground {
    pub package: String,
    pub activity: String,
    pub screen: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LaunchError {
    #[error("unknown package {0}")]
    UnknownPackage(String),
    #[error("no such activity {0}")]
    NoSuchActivity(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InputError {
    /// `input keyevent` with a name the device does not know.
    #[error("unknown keycode {0}")]
    UnknownKey(String),
    /// `input text` with characters a real device cannot type through `input`.
    #[error("cannot type {0:?} with input text")]
    Untypable(String),
    /// ADB Keyboard text while that IME is not installed and active.
    #[error("the ADB Keyboard IME is not active")]
    ImeNotActive,
}

/// The simulated phone. Shared by the server as `Arc<Mutex<World>>`.
#[derive(Debug)]
pub struct World {
    model: AppModel,
    options: WorldOptions,
}

impl World {
    pub fn new(model: AppModel, options: WorldOptions) -> World {
        World { model, options }
    }

    pub fn screen_size(&self) -> (u32, u32) {
        (1080, 2400)
    }

    pub fn foreground(&self) -> Foreground {
        Foreground {
            package: self.model.package().to_string(),
            activity: String::new(),
            screen: String::new(),
        }
    }

    /// The current screen as `uiautomator dump` writes it (typed text shown in fields).
    pub fn hierarchy_xml(&self) -> String {
        String::new()
    }

    /// Rendered screenshot of the current hierarchy; all black on a secure screen.
    pub fn screenshot(&self) -> image::RgbaImage {
        let (w, h) = self.screen_size();
        render::blank(w, h)
    }

    pub fn tap(&mut self, _x: i32, _y: i32) {}

    pub fn long_press(&mut self, _x: i32, _y: i32) {}

    /// A swipe; a long press when both points are about the same and the duration is long.
    pub fn swipe(&mut self, _x1: i32, _y1: i32, _x2: i32, _y2: i32, _duration_ms: u64) {}

    /// `input text` after the device shell has unquoted it.
    pub fn input_text(&mut self, _text: &str) -> Result<(), InputError> {
        Ok(())
    }

    /// Text through the ADB Keyboard IME (any Unicode).
    pub fn ime_text(&mut self, _text: &str) -> Result<(), InputError> {
        if self.options.ime_adbkeyboard {
            Ok(())
        } else {
            Err(InputError::ImeNotActive)
        }
    }

    /// `input keyevent` by name or number.
    pub fn key(&mut self, key: &str) -> Result<(), InputError> {
        Err(InputError::UnknownKey(key.to_string()))
    }

    /// monkey / am start: bring the package's start screen to the front.
    pub fn launch(&mut self, package: &str) -> Result<(), LaunchError> {
        Err(LaunchError::UnknownPackage(package.to_string()))
    }

    pub fn start_activity(&mut self, component: &str) -> Result<(), LaunchError> {
        Err(LaunchError::NoSuchActivity(component.to_string()))
    }

    pub fn force_stop(&mut self, _package: &str) {}

    pub fn installed_packages(&self) -> Vec<String> {
        vec![self.model.package().to_string()]
    }

    pub fn version_name(&self, _package: &str) -> Option<String> {
        None
    }

    /// The crash buffer as `logcat -b crash -d` prints it.
    pub fn crash_log(&self) -> String {
        String::new()
    }

    pub fn clear_crash_log(&mut self) {}

    pub fn ime_list(&self) -> Vec<String> {
        Vec::new()
    }

    pub fn ime_enable(&mut self, _id: &str) -> bool {
        false
    }

    pub fn ime_set(&mut self, _id: &str) -> bool {
        false
    }

    /// Fault `anr-on:SCREEN`.
    pub fn set_anr_screen(&mut self, _screen: Option<String>) {}
}
