//! Capturing an observation: the hierarchy, the pruned tree, the screenshot, the flags.
//!
//! [`offline`] builds one from saved files; the device capture reuses [`flags`] and
//! [`screen_size`] so both forms agree on what they report.

pub mod device;
pub mod offline;

pub use device::{capture_device, observe_device, Captured, DeviceCaptureError, DeviceOptions};
pub use offline::{observe_files, OfflineOptions};

use std::path::PathBuf;

use image::{DynamicImage, GenericImageView};

use crate::events::ObservationFlags;
use crate::ui::{is_actionable, ParseError, UiElement};

/// Why an observation could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    #[error("reading {path}")]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{path}")]
    Hierarchy {
        path: PathBuf,
        #[source]
        error: ParseError,
    },
    #[error("{path}: not a readable PNG")]
    Screenshot {
        path: PathBuf,
        #[source]
        error: image::ImageError,
    },
}

/// Largest difference per colour channel still counted as "one colour" (dithering, a faint
/// gradient on a blank frame).
const UNIFORM_TOLERANCE: u8 = 4;

/// The flags of an observation:
/// - `secure`: there is a screenshot and it is a single colour (black for FLAG_SECURE windows,
///   which the device blanks in screenshots, or a blank frame);
/// - `loading`: a progress indicator is on screen and nothing on screen can be acted on, so the
///   only thing to do is wait (captions such as "Processing" are allowed).
pub fn flags(elements: &[UiElement], screenshot: Option<&DynamicImage>) -> ObservationFlags {
    let on_screen = || elements.iter().filter(|e| e.visible && e.bounds.area() > 0);
    let progress = on_screen().any(is_progress_indicator);
    let actionable = on_screen().any(is_actionable);
    ObservationFlags {
        secure: screenshot.is_some_and(is_uniform),
        loading: progress && !actionable,
        ..ObservationFlags::default()
    }
}

fn is_progress_indicator(e: &UiElement) -> bool {
    let simple = e.class_name.rsplit(['.', '$']).next().unwrap_or_default();
    simple.ends_with("ProgressBar") || simple.ends_with("ProgressIndicator")
}

/// Whether every pixel has the same colour, within [`UNIFORM_TOLERANCE`].
pub fn is_uniform(image: &DynamicImage) -> bool {
    // Screenshots are 8-bit RGB or RGBA: compared in place, stopping at the first pixel that
    // differs (at once on an ordinary screen). Other layouts are converted first.
    let converted;
    let (bytes, channels) = match image {
        DynamicImage::ImageRgb8(rgb) => (rgb.as_raw().as_slice(), 3),
        DynamicImage::ImageRgba8(rgba) => (rgba.as_raw().as_slice(), 4),
        other => {
            converted = other.to_rgb8();
            (converted.as_raw().as_slice(), 3)
        }
    };
    let mut pixels = bytes.chunks_exact(channels);
    let Some(first) = pixels.next() else {
        return true;
    };
    pixels.all(|p| {
        p[..3]
            .iter()
            .zip(&first[..3])
            .all(|(&a, &b)| a.abs_diff(b) <= UNIFORM_TOLERANCE)
    })
}

/// Screen size in pixels: the screenshot's size when there is one, else the extent of the window
/// roots when one of them starts at the origin (a popup window alone does not tell the screen
/// size, so that gives `None`).
pub fn screen_size(elements: &[UiElement], screenshot: Option<&DynamicImage>) -> Option<[u32; 2]> {
    if let Some(image) = screenshot {
        let (width, height) = image.dimensions();
        return Some([width, height]);
    }
    let roots: Vec<&UiElement> = elements.iter().filter(|e| e.parent.is_none()).collect();
    if !roots.iter().any(|r| r.bounds.x1 == 0 && r.bounds.y1 == 0) {
        return None;
    }
    let width = roots.iter().map(|r| r.bounds.x2).max()?;
    let height = roots.iter().map(|r| r.bounds.y2).max()?;
    Some([u32::try_from(width).ok()?, u32::try_from(height).ok()?])
}

/// The package a dump shows: that of its largest window (a multi-window dump lists the status
/// and navigation bars too).
pub fn main_package(elements: &[UiElement]) -> Option<String> {
    elements
        .iter()
        .filter(|e| e.parent.is_none() && !e.package.is_empty())
        .max_by_key(|e| e.bounds.area())
        .map(|e| e.package.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::parse;
    use image::{Rgb, RgbImage};

    fn dump(body: &str) -> Vec<UiElement> {
        parse(&format!("<hierarchy>{body}</hierarchy>")).unwrap()
    }

    #[test]
    fn uniform_screenshots_are_secure() {
        let black = DynamicImage::ImageRgb8(RgbImage::new(20, 30));
        let mut drawn = RgbImage::new(20, 30);
        drawn.put_pixel(3, 3, Rgb([200, 10, 10]));
        let drawn = DynamicImage::ImageRgb8(drawn);
        assert!(flags(&[], Some(&black)).secure);
        assert!(!flags(&[], Some(&drawn)).secure);
        assert!(!flags(&[], None).secure);
        assert_eq!(screen_size(&[], Some(&black)), Some([20, 30]));
        // RGBA (what PNG screenshots decode to) and other layouts alike; alpha is not colour.
        let mut rgba = image::RgbaImage::from_pixel(20, 30, image::Rgba([0, 0, 0, 255]));
        assert!(is_uniform(&DynamicImage::ImageRgba8(rgba.clone())));
        rgba.put_pixel(19, 29, image::Rgba([0, 0, 0, 0]));
        assert!(is_uniform(&DynamicImage::ImageRgba8(rgba.clone())));
        rgba.put_pixel(19, 29, image::Rgba([9, 0, 0, 255]));
        assert!(!is_uniform(&DynamicImage::ImageRgba8(rgba)));
        let luma = DynamicImage::ImageLuma8(image::GrayImage::from_pixel(4, 4, image::Luma([7])));
        assert!(is_uniform(&luma));
        assert!(is_uniform(&DynamicImage::ImageRgb8(RgbImage::new(0, 0))));
    }

    #[test]
    fn loading_means_a_spinner_and_nothing_to_do() {
        let spinner = r#"<node class="android.widget.ProgressBar" enabled="true" bounds="[0,0][10,10]"/><node class="android.widget.TextView" text="Processing" enabled="true" bounds="[0,10][10,20]"/>"#;
        let button = r#"<node class="android.widget.Button" text="Cancel" clickable="true" enabled="true" bounds="[0,20][10,30]"/>"#;
        assert!(flags(&dump(spinner), None).loading);
        assert!(!flags(&dump(&format!("{spinner}{button}")), None).loading);
        assert!(!flags(&dump(button), None).loading);
    }

    #[test]
    fn size_and_package_from_the_windows() {
        let windows = r#"<node package="com.android.systemui" bounds="[0,2196][1080,2340]"/><node package="app" bounds="[0,0][1080,2340]"/>"#;
        let elements = dump(windows);
        assert_eq!(screen_size(&elements, None), Some([1080, 2340]));
        assert_eq!(main_package(&elements).as_deref(), Some("app"));
        let popup = dump(r#"<node package="app" bounds="[180,484][539,795]"/>"#);
        assert_eq!(screen_size(&popup, None), None);
    }
}
