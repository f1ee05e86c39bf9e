//! Screenshots made small for reports. A screenshot that is missing or not a readable image is
//! left out of the report (its place says so), never an error: a run's files may be gone.

use std::path::Path;

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use image::{DynamicImage, RgbImage};

/// The screenshot at `path` scaled to fit `max_width` x `max_height` (never enlarged), as RGB,
/// each pixel the average of those it covers: fast, and good enough at thumbnail size.
pub fn load(path: &Path, max_width: u32, max_height: u32) -> Option<RgbImage> {
    scaled(path, max_width, max_height, FilterType::Box)
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

/// Resampling for larger pictures (the screenshot at a crash): a triangle filter keeps text
/// legible.
pub fn load_sharp(path: &Path, max_width: u32, max_height: u32) -> Option<RgbImage> {
    scaled(path, max_width, max_height, FilterType::Bilinear)
}

/// The screenshot at `path`, as RGB, scaled by `filter` to fit (aspect kept, never enlarged).
fn scaled(path: &Path, max_width: u32, max_height: u32, filter: FilterType) -> Option<RgbImage> {
    let image = image::open(path).ok()?.into_rgb8();
    let (w, h) = image.dimensions();
    let scale = (f64::from(max_width) / f64::from(w))
        .min(f64::from(max_height) / f64::from(h))
        .min(1.0);
    let (nw, nh) = (
        ((f64::from(w) * scale).round() as u32).max(1),
        ((f64::from(h) * scale).round() as u32).max(1),
    );
    if (nw, nh) == (w, h) {
        return Some(image);
    }
    let source = ImageRef::new(w, h, image.as_raw(), PixelType::U8x3).ok()?;
    let mut target = Image::new(nw, nh, PixelType::U8x3);
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(filter));
    Resizer::new().resize(&source, &mut target, &options).ok()?;
    RgbImage::from_raw(nw, nh, target.into_vec())
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
