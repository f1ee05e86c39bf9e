//! An observation captured from a live device (`droid-capture` without `--from-xml`).
//!
//! The hierarchy dump, the screenshot and the foreground query each run on their own connection
//! at the same time, so a capture costs about the slowest of them, not their sum. The dump and
//! the screenshot are saved under the output folder and the observation points at them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::offline::millis;
use super::{flags, main_package};
use crate::device::{Device, DeviceError, Foreground};
use crate::events::{now_ts, DeviceInfo, Extra, Observation};
use crate::ui::{parse, prune, ParseError};

/// Why a device capture failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceCaptureError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("the device's hierarchy dump")]
    Hierarchy(#[source] ParseError),
    #[error("the device's screenshot is not a readable PNG")]
    Screenshot(#[source] image::ImageError),
    #[error("writing {path}")]
    Write {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

/// How to capture.
#[derive(Debug, Clone)]
pub struct DeviceOptions {
    /// Folder for the saved dump and screenshot (created when missing).
    pub out_dir: PathBuf,
    pub screenshot: bool,
    /// Run the dump, the screenshot and the foreground query at the same time (the default);
    /// `false` runs them one after the other (for comparison in `make bench`).
    pub concurrent: bool,
    pub run_id: Option<String>,
    pub step: Option<u64>,
    /// Name the files after the step (`step_007.png`, `step_007.xml`), as a crawl's session
    /// folder does, instead of the device, the time and a sequence number.
    pub step_names: bool,
}

/// A screenshot's PNG and its pixels.
type Shot = (Vec<u8>, Result<image::DynamicImage, image::ImageError>);

/// What the three parts of a capture returned.
struct Parts {
    xml: Result<String, DeviceError>,
    png: Option<Result<Shot, DeviceError>>,
    foreground: Result<Foreground, DeviceError>,
    dump_ms: Duration,
    screenshot_ms: Duration,
    foreground_ms: Duration,
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed())
}

fn gather(device: &dyn Device, opts: &DeviceOptions) -> Parts {
    // The screenshot is decoded in its own part: on a device the dump takes longer, so the
    // decoding is done by the time it comes.
    let screenshot = || {
        opts.screenshot.then(|| {
            let (png, took) = timed(|| device.screenshot());
            let shot = png.map(|png| {
                let image = image::load_from_memory_with_format(&png, image::ImageFormat::Png);
                (png, image)
            });
            (shot, took)
        })
    };
    let dump = || timed(|| device.dump_hierarchy());
    let foreground = || timed(|| device.foreground());
    let ((xml, dump_ms), shot, (fg, foreground_ms)) = if opts.concurrent {
        std::thread::scope(|scope| {
            let shot = scope.spawn(screenshot);
            let fg = scope.spawn(foreground);
            let dumped = dump();
            // A panicking part is a bug in this crate; re-raise it rather than hide it.
            let shot = shot.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            let fg = fg.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            (dumped, shot, fg)
        })
    } else {
        (dump(), screenshot(), foreground())
    };
    let (png, screenshot_ms) = match shot {
        Some((png, ms)) => (Some(png), ms),
        None => (None, Duration::ZERO),
    };
    Parts {
        xml,
        png,
        foreground: fg,
        dump_ms,
        screenshot_ms,
        foreground_ms,
    }
}

/// Captures one observation. `info` is the device's description (asked once per process).
pub fn observe_device(
    device: &dyn Device,
    info: &DeviceInfo,
    opts: &DeviceOptions,
) -> Result<Observation, DeviceCaptureError> {
    capture_device(device, info, opts).map(|captured| captured.observation)
}

/// An observation with what it was built from, still in memory: a caller that hashes it next
/// ([`crate::hash::enrich_from`]) neither reads the files back nor decodes the PNG again.
#[derive(Debug)]
pub struct Captured {
    pub observation: Observation,
    pub xml: String,
    pub screenshot: Option<image::DynamicImage>,
}

/// [`observe_device`], keeping the dump and the decoded screenshot.
pub fn capture_device(
    device: &dyn Device,
    info: &DeviceInfo,
    opts: &DeviceOptions,
) -> Result<Captured, DeviceCaptureError> {
    let started = Instant::now();
    let ts = now_ts();
    let parts = gather(device, opts);
    let xml = parts.xml?;
    let png = parts.png.transpose()?;
    // A foreground query that fails (an odd dumpsys) still leaves a useful observation.
    let foreground = parts.foreground.ok();

    let parse_started = Instant::now();
    let mut elements = parse(&xml).map_err(DeviceCaptureError::Hierarchy)?;
    let tree = prune(&mut elements);
    let (png, image) = match png {
        Some((png, image)) => (
            Some(png),
            Some(image.map_err(DeviceCaptureError::Screenshot)?),
        ),
        None => (None, None),
    };
    let parse_ms = parse_started.elapsed();

    std::fs::create_dir_all(&opts.out_dir)
        .and_then(|()| crate::session::mark_capture_dir(&opts.out_dir))
        .map_err(|error| DeviceCaptureError::Write {
            path: opts.out_dir.clone(),
            error,
        })?;
    let stem = match (opts.step_names, opts.step) {
        (true, Some(step)) => format!("step_{step:03}"),
        _ => file_stem(device.serial(), opts.step),
    };
    let xml_path = save(&opts.out_dir, &format!("{stem}.xml"), xml.as_bytes())?;
    let screenshot_path = png
        .as_deref()
        .map(|png| save(&opts.out_dir, &format!("{stem}.png"), png))
        .transpose()?;

    let mut timings = Extra::new();
    timings.insert("dump".into(), millis(parts.dump_ms));
    if opts.screenshot {
        timings.insert("screenshot".into(), millis(parts.screenshot_ms));
    }
    timings.insert("foreground".into(), millis(parts.foreground_ms));
    timings.insert("parse".into(), millis(parse_ms));
    timings.insert("total".into(), millis(started.elapsed()));

    let screen_size = info
        .screen_size
        .or_else(|| super::screen_size(&elements, image.as_ref()));
    let observation = Observation {
        run_id: opts.run_id.clone(),
        step: opts.step,
        ts: Some(ts),
        device: Some(device.serial().to_string()),
        device_info: Some(info.clone()),
        screen_size,
        package: foreground
            .as_ref()
            .map(|f| f.package.clone())
            .or_else(|| main_package(&elements)),
        activity: foreground.map(|f| f.activity),
        xml_path: Some(xml_path),
        screenshot_path,
        flags: flags(&elements, image.as_ref()),
        tree: Some(tree),
        elements,
        timings,
        ..Observation::default()
    };
    Ok(Captured {
        observation,
        xml,
        screenshot: image,
    })
}

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// `emulator-5554_20261122_001502_123_0` (with `_s007` for step 7): unique per capture and safe
/// as a file name for any serial (`192.168.1.5:5555` included). `droid-record delete` removes
/// files of this shape only (see `crate::session`); change both together.
fn file_stem(serial: &str, step: Option<u64>) -> String {
    let safe: String = serial
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let time = chrono::Utc::now().format("%Y%m%d_%H%M%S_%3f");
    // Two captures in the same millisecond (`--interval 0`) still get their own files.
    let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    match step {
        Some(step) => format!("{safe}_{time}_{sequence}_s{step:03}"),
        None => format!("{safe}_{time}_{sequence}"),
    }
}

fn save(dir: &Path, name: &str, bytes: &[u8]) -> Result<String, DeviceCaptureError> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|error| DeviceCaptureError::Write {
        path: path.clone(),
        error,
    })?;
    Ok(std::path::absolute(&path)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe_for_network_serials() {
        let stem = file_stem("192.168.1.5:5555", Some(7));
        assert!(stem.starts_with("192_168_1_5_5555_"), "{stem}");
        assert!(stem.ends_with("_s007"), "{stem}");
        assert!(!stem.contains(['/', ':', '.']));
        assert!(!crate::session::is_capture_file(Path::new(
            "/nonexistent/x.png"
        )));
    }
}
