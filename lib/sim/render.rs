//! Deterministic screenshots rendered from a hierarchy: every node a filled box with a border,
//! its colour derived from the node's own attributes, its text drawn with an 8x8 bitmap font.
//!
//! The same hierarchy always renders the same pixels (no clock, no randomness), and screens that
//! differ in their widgets differ in large coloured areas, so a perceptual hash tells them apart
//! as it would on a device.

use image::RgbaImage;
use sha2::{Digest, Sha256};

use super::model::Node;

type Colour = [u8; 4];

const BLACK: Colour = [0, 0, 0, 255];
const WHITE: Colour = [255, 255, 255, 255];

/// Renders window roots onto a background derived from `package`.
pub fn render(roots: &[Node], (width, height): (u32, u32), package: &str) -> RgbaImage {
    let mut canvas = solid(width, height, background(package));
    draw(&mut canvas, roots);
    canvas
}

/// A frame of one colour. Built from a repeated slice rather than `RgbaImage::from_pixel`, whose
/// per-pixel loop is instantiated in this crate and crawls in unoptimised test builds.
fn solid(width: u32, height: u32, colour: Colour) -> RgbaImage {
    let pixels = colour.repeat(width as usize * height as usize);
    RgbaImage::from_raw(width, height, pixels).unwrap_or_else(|| RgbaImage::new(width, height))
}

/// Draws window roots over what the canvas already shows (a dialog over an app).
pub fn draw(canvas: &mut RgbaImage, roots: &[Node]) {
    for root in roots {
        draw_node(canvas, root);
    }
}

/// An all-black frame: what `screencap` returns for a `FLAG_SECURE` window.
pub fn black(width: u32, height: u32) -> RgbaImage {
    solid(width, height, BLACK)
}

/// Darkens the whole frame, as the scrim behind a system dialog does.
pub fn dim(canvas: &mut RgbaImage) {
    let buffer: &mut [u8] = canvas;
    for pixel in buffer.chunks_exact_mut(4) {
        pixel[0] /= 3;
        pixel[1] /= 3;
        pixel[2] /= 3;
    }
}

/// Encodes as PNG the way `screencap -p` does (RGBA, 8 bits); deterministic bytes.
pub fn png(image: &RgbaImage) -> Vec<u8> {
    let mut out = Vec::new();
    let encoder = image::codecs::png::PngEncoder::new(&mut out);
    // Writing into a Vec cannot fail for a well-formed RgbaImage.
    if image::ImageEncoder::write_image(
        encoder,
        image.as_raw(),
        image.width(),
        image.height(),
        image::ExtendedColorType::Rgba8,
    )
    .is_err()
    {
        out.clear();
    }
    out
}

fn digest(parts: &[&str]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize().into()
}

/// A light app background, one per package.
fn background(package: &str) -> Colour {
    let d = digest(&["background", package]);
    [200 + d[0] % 56, 200 + d[1] % 56, 200 + d[2] % 56, 255]
}

/// A node's fill: a full-range colour from every attribute that makes it look different.
fn fill(node: &Node) -> Colour {
    let d = digest(&[
        node.attr("class"),
        node.attr("resource-id"),
        node.attr("text"),
        node.attr("content-desc"),
        node.attr("checked"),
        node.attr("selected"),
        node.attr("enabled"),
        node.attr("focused"),
    ]);
    [d[0], d[1], d[2], 255]
}

fn luminance(c: Colour) -> u32 {
    (299 * u32::from(c[0]) + 587 * u32::from(c[1]) + 114 * u32::from(c[2])) / 1000
}

fn draw_node(canvas: &mut RgbaImage, node: &Node) {
    let colour = fill(node);
    let b = node.bounds;
    fill_rect(canvas, b.x1, b.y1, b.x2, b.y2, colour);
    let border = if luminance(colour) > 128 {
        BLACK
    } else {
        WHITE
    };
    let edge = 2;
    fill_rect(canvas, b.x1, b.y1, b.x2, b.y1 + edge, border);
    fill_rect(canvas, b.x1, b.y2 - edge, b.x2, b.y2, border);
    fill_rect(canvas, b.x1, b.y1, b.x1 + edge, b.y2, border);
    fill_rect(canvas, b.x2 - edge, b.y1, b.x2, b.y2, border);
    let label = match node.attr("text") {
        "" => node.attr("content-desc"),
        text => text,
    };
    if !label.is_empty() {
        draw_text(canvas, node, label, border);
    }
    for child in &node.children {
        draw_node(canvas, child);
    }
}

/// Fills `[x1,x2) x [y1,y2)` clipped to the canvas, a row at a time.
fn fill_rect(canvas: &mut RgbaImage, x1: i32, y1: i32, x2: i32, y2: i32, colour: Colour) {
    let (width, height) = (canvas.width() as i32, canvas.height() as i32);
    let (x1, x2) = (x1.clamp(0, width), x2.clamp(0, width));
    let (y1, y2) = (y1.clamp(0, height), y2.clamp(0, height));
    if x1 >= x2 || y1 >= y2 {
        return;
    }
    let stride = width as usize * 4;
    let span = (x2 - x1) as usize * 4;
    let buffer: &mut [u8] = canvas;
    // Glyph dots are tiny and many: writing their pixels beats building a row for each.
    if span <= 64 {
        for y in y1..y2 {
            let start = y as usize * stride + x1 as usize * 4;
            for pixel in buffer[start..start + span].chunks_exact_mut(4) {
                pixel.copy_from_slice(&colour);
            }
        }
        return;
    }
    let row: Vec<u8> = colour.repeat((x2 - x1) as usize);
    for y in y1..y2 {
        let start = y as usize * stride + x1 as usize * 4;
        buffer[start..start + span].copy_from_slice(&row);
    }
}

/// Draws `text` left-aligned and vertically centred in the node, scaled to fit, clipped to it.
fn draw_text(canvas: &mut RgbaImage, node: &Node, text: &str, colour: Colour) {
    let b = node.bounds;
    let chars: Vec<char> = text.chars().filter(|c| !c.is_control()).collect();
    if chars.is_empty() || b.width() < 12 || b.height() < 10 {
        return;
    }
    let by_height = (b.height() * 6 / 10) / 8;
    let by_width = (b.width() - 16) / (8 * chars.len() as i32);
    let scale = by_height.min(by_width.max(2)).clamp(1, 8);
    let top = b.y1 + (b.height() - 8 * scale) / 2;
    let mut x = b.x1 + 8;
    for c in chars {
        if x + 8 * scale > b.x2 {
            break;
        }
        let glyph = glyph(c);
        for (row, bits) in glyph.iter().enumerate() {
            for col in 0..8 {
                if bits & (1 << col) != 0 {
                    let px = x + col * scale;
                    let py = top + row as i32 * scale;
                    fill_rect(canvas, px, py, px + scale, py + scale, colour);
                }
            }
        }
        x += 8 * scale;
    }
}

/// The 8x8 bitmap of a character; characters the font lacks draw as a filled box.
fn glyph(c: char) -> [u8; 8] {
    use font8x8::UnicodeFonts;
    font8x8::BASIC_FONTS
        .get(c)
        .or_else(|| font8x8::LATIN_FONTS.get(c))
        .or_else(|| font8x8::GREEK_FONTS.get(c))
        .or_else(|| font8x8::BOX_FONTS.get(c))
        .unwrap_or([0x00, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x00])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::model::parse_hierarchy;

    fn screen(text: &str) -> Vec<Node> {
        parse_hierarchy(&format!(
            r#"<hierarchy rotation="0"><node class="android.widget.FrameLayout" bounds="[0,0][200,300]"><node class="android.widget.Button" text="{text}" bounds="[10,10][190,60]"/></node></hierarchy>"#
        ))
        .unwrap()
    }

    #[test]
    fn same_hierarchy_renders_same_bytes() {
        let a = png(&render(&screen("OK"), (200, 300), "p"));
        let b = png(&render(&screen("OK"), (200, 300), "p"));
        assert_eq!(a, b);
        assert_eq!(&a[..8], b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn different_text_renders_differently() {
        let a = render(&screen("OK"), (200, 300), "p");
        let b = render(&screen("Cancel"), (200, 300), "p");
        assert_ne!(a, b);
    }

    #[test]
    fn boxes_outside_the_canvas_are_clipped() {
        let roots = parse_hierarchy(
            r#"<hierarchy><node class="X" text="far" bounds="[-50,-50][5000,9000]"/></hierarchy>"#,
        )
        .unwrap();
        let image = render(&roots, (100, 100), "p");
        assert_eq!(image.dimensions(), (100, 100));
    }

    #[test]
    fn black_is_black() {
        assert!(black(4, 4).pixels().all(|p| p.0 == BLACK));
    }
}
