//! Deterministic screenshots rendered from a hierarchy.

use image::RgbaImage;

/// Renders a blank screen of the given size.
pub fn blank(width: u32, height: u32) -> RgbaImage {
    RgbaImage::from_pixel(width, height, image::Rgba([0, 0, 0, 255]))
}
