//! An observation built from saved files (`droid-capture --from-xml`), without a device.

use std::path::{Path, PathBuf};
use std::time::Instant;

use image::DynamicImage;
use serde_json::Value;

use super::{flags, main_package, screen_size, CaptureError};
use crate::events::{now_ts, Extra, Observation};
use crate::ui::{parse, prune};

/// What to build the observation from.
#[derive(Debug, Clone, Default)]
pub struct OfflineOptions {
    /// A `uiautomator dump` file.
    pub xml_path: PathBuf,
    /// A PNG screenshot of the same screen.
    pub screenshot: Option<PathBuf>,
    /// Defaults to the package of the dump's largest window.
    pub package: Option<String>,
    pub activity: Option<String>,
    pub run_id: Option<String>,
    pub step: Option<u64>,
}

/// Reads the dump (and screenshot) and builds the observation: elements with signatures, the
/// pruned tree with refs, screen size, flags, and absolute paths so later stages find the files
/// from any directory. Hashes are left to droid-hash.
pub fn observe_files(opts: &OfflineOptions) -> Result<Observation, CaptureError> {
    let started = Instant::now();
    let xml = std::fs::read_to_string(&opts.xml_path).map_err(|error| CaptureError::Read {
        path: opts.xml_path.clone(),
        error,
    })?;
    let mut elements = parse(&xml).map_err(|error| CaptureError::Hierarchy {
        path: opts.xml_path.clone(),
        error,
    })?;
    let tree = prune(&mut elements);
    let parsed = started.elapsed();
    let screenshot = opts.screenshot.as_deref().map(load_png).transpose()?;
    let mut timings = Extra::new();
    timings.insert("parse".into(), millis(parsed));
    timings.insert("total".into(), millis(started.elapsed()));
    Ok(Observation {
        run_id: opts.run_id.clone(),
        step: opts.step,
        ts: Some(now_ts()),
        screen_size: screen_size(&elements, screenshot.as_ref()),
        package: opts.package.clone().or_else(|| main_package(&elements)),
        activity: opts.activity.clone(),
        xml_path: Some(absolute(&opts.xml_path)),
        screenshot_path: opts.screenshot.as_deref().map(absolute),
        flags: flags(&elements, screenshot.as_ref()),
        tree: Some(tree),
        elements,
        timings,
        ..Observation::default()
    })
}

fn load_png(path: &Path) -> Result<DynamicImage, CaptureError> {
    let bytes = std::fs::read(path).map_err(|error| CaptureError::Read {
        path: path.to_path_buf(),
        error,
    })?;
    image::load_from_memory_with_format(&bytes, image::ImageFormat::Png).map_err(|error| {
        CaptureError::Screenshot {
            path: path.to_path_buf(),
            error,
        }
    })
}

fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Milliseconds with microsecond precision, as `timings` carries them.
pub(super) fn millis(duration: std::time::Duration) -> Value {
    Value::from((duration.as_secs_f64() * 1e6).round() / 1e3)
}
