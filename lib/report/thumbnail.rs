//! Screenshots made small for reports. A screenshot that is missing or not a readable image is
//! left out of the report (its place says so), never an error: a run's files may be gone.

use std::path::Path;

use image::imageops::FilterType;
use image::{DynamicImage, RgbImage};

/// The screenshot at `path` scaled to fit `max_width` x `max_height` (never enlarged), as RGB.
pub fn load(path: &Path, max_width: u32, max_height: u32) -> Option<RgbImage> {
    let image = image::open(path).ok()?;
    let image = if image.width() > max_width || image.height() > max_height {
        // `thumbnail` averages pixels: fast, and good enough at this size.
        image.thumbnail(max_width, max_height)
    } else {
        image
    };
    Some(image.to_rgb8())
}

/// The same as a PNG file's bytes.
pub fn png(path: &Path, max_width: u32, max_height: u32) -> Option<Vec<u8>> {
    let image = load(path, max_width, max_height)?;
    let mut bytes = Vec::new();
    DynamicImage::ImageRgb8(image)
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .ok()?;
    Some(bytes)
}

/// Resampling for larger pictures (the screenshot at a crash).
pub fn load_sharp(path: &Path, max_width: u32, max_height: u32) -> Option<RgbImage> {
    let image = image::open(path).ok()?;
    let (w, h) = (image.width(), image.height());
    let scale = (max_width as f64 / w as f64)
        .min(max_height as f64 / h as f64)
        .min(1.0);
    let (nw, nh) = (
        ((w as f64 * scale).round() as u32).max(1),
        ((h as f64 * scale).round() as u32).max(1),
    );
    Some(image.resize_exact(nw, nh, FilterType::Triangle).to_rgb8())
}

/// `work` on every item, spread over the machine's cores (decoding a screenshot is most of a
/// report's time), results in the items' order.
pub fn parallel<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = items.len().div_ceil(threads).max(1);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(work).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}
