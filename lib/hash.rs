//! Hashes of what a screen shows: layout hash, structure hash, perceptual hash; and the
//! droid-hash filter stage that adds them to observations, with the screen key. Which screen an
//! observation shows is not decided here but by the screen model ([`crate::screen::ScreenKey`]),
//! whose key the stage writes as `hash.screen_key`.
//!
//! - **Layout hash**: sha256 over the normalised hierarchy. Every `<node>` in document order
//!   contributes its depth and its attributes sorted by name, minus the volatile ones: `focused`,
//!   `selected`, `checked` (toggling a switch does not make a new screen; otherwise every
//!   combination of check boxes would), `visible-to-user` (follows scrolling), the `text` of
//!   editable fields (what was typed), and the `bounds` of everything inside a scrollable
//!   container (the scroll offset). Whitespace and attribute order in the file do not matter, so
//!   a pretty-printed dump hashes like the raw one. The `<hierarchy rotation>` is kept.
//! - **Structure hash**: sha256 over depth, class and resource id of every node: ignores all
//!   text, so a list showing other items, or another language, has the same structure.
//! - **Perceptual hash**: dHash (image_hasher's `Gradient`), 64 bits, of the screenshot shrunk
//!   to 90×80 grey cells by area averaging. Gradients compare neighbouring cells, so a changed widget flips
//!   the bits of its cells whatever the overall brightness, where a mean hash barely moves when a
//!   few widgets change on a mostly white screen; the box pre-shrink keeps it fast (a few ms for
//!   1080×2400) and stable against single-pixel noise.
//!
//! `docs/hashing.md` has the reasoning and the measurements.

use std::path::{Path, PathBuf};

use image::{DynamicImage, GrayImage};
use image_hasher::{HashAlg, HasherConfig};
use sha2::{Digest, Sha256};

use crate::events::{Event, Line, Observation};
use crate::filter::Output;
use crate::screen::ScreenModel;
use crate::ui::{parse, ParseError};

/// The first 16 hex digits of sha256 over `parts`, each ended by 0x1f: a short id for a list of
/// texts (a crash's signature, a state of a screen).
pub fn digest16(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0x1f]);
    }
    hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Attributes that change while the screen stays the same.
const VOLATILE: [&str; 4] = ["focused", "selected", "checked", "visible-to-user"];

/// Size of the area-averaged thumbnail the perceptual hash is computed from.
const THUMB_WIDTH: u32 = 90;
const THUMB_HEIGHT: u32 = 80;

/// Why something could not be hashed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HashError {
    #[error(transparent)]
    Hierarchy(#[from] ParseError),
    #[error("not a readable PNG")]
    Image(#[source] image::ImageError),
    #[error("not a perceptual hash (16 hex digits expected): {0:?}")]
    BadPhash(String),
    #[error("reading {path}")]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

/// sha256 (64 hex digits) of the normalised hierarchy; see the module documentation.
pub fn layout_hash(xml: &str) -> Result<String, HashError> {
    let doc = parse::document(xml)?;
    let mut hasher = Sha256::new();
    let rotation = doc.root_element().attribute("rotation").unwrap_or_default();
    hasher.update(format!("rotation={rotation}\n"));
    for window in doc.root_element().children().filter(is_node) {
        hash_layout(window, 0, false, &mut hasher);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

fn hash_layout(node: roxmltree::Node, depth: u32, in_scroller: bool, hasher: &mut Sha256) {
    let editable = parse::is_text_input(node.attribute("class").unwrap_or_default());
    let mut attributes: Vec<(&str, &str)> = node
        .attributes()
        .map(|a| (a.name(), a.value()))
        .filter(|(name, _)| !VOLATILE.contains(name))
        .filter(|(name, _)| !(editable && *name == "text"))
        .filter(|(name, _)| !(in_scroller && *name == "bounds"))
        .collect();
    attributes.sort_unstable();
    hasher.update(depth.to_le_bytes());
    for (name, value) in attributes {
        // Length-prefixed, so no value can imitate a separator.
        for part in [name, value] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
    }
    hasher.update(b"\n");
    let scroller = in_scroller || node.attribute("scrollable") == Some("true");
    for child in node.children().filter(is_node) {
        hash_layout(child, depth + 1, scroller, hasher);
    }
}

/// sha256 (64 hex digits) of depth, class and resource id of every node, in document order.
pub fn structure_hash(xml: &str) -> Result<String, HashError> {
    let doc = parse::document(xml)?;
    let mut hasher = Sha256::new();
    // `<node>` ancestors (itself included) per document node, parents first, by roxmltree's node
    // ids: one lookup per node, where counting ancestors would cost the depth each time.
    let mut nodes_above: Vec<usize> = Vec::new();
    for node in doc.descendants() {
        let id = node.id().get_usize();
        let above = node
            .parent()
            .and_then(|parent| nodes_above.get(parent.id().get_usize()))
            .copied()
            .unwrap_or(0)
            + usize::from(is_node(&node));
        if nodes_above.len() <= id {
            nodes_above.resize(id + 1, 0);
        }
        nodes_above[id] = above;
        if !is_node(&node) {
            continue;
        }
        let depth = above - 1;
        for part in [
            &depth.to_string(),
            node.attribute("class").unwrap_or_default(),
            node.attribute("resource-id").unwrap_or_default(),
        ] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
    }
    Ok(format!("{:x}", hasher.finalize()))
}

fn is_node(n: &roxmltree::Node) -> bool {
    n.is_element() && n.tag_name().name() == "node"
}

/// 64-bit perceptual hash (dHash) of pixels in memory.
pub fn phash_image(image: &DynamicImage) -> u64 {
    let small = shrink_gray(image, THUMB_WIDTH, THUMB_HEIGHT);
    let hasher = HasherConfig::with_bytes_type::<[u8; 8]>()
        .hash_size(8, 8)
        .hash_alg(HashAlg::Gradient)
        .to_hasher();
    u64::from_be_bytes(hasher.hash_image(&small).into_inner())
}

/// Area-averages the image down to `width`×`height` grey cells in one pass with integer maths
/// (image's own resize filters take about 9 ms on a 1080×2400 screenshot; this about 1.5).
fn shrink_gray(image: &DynamicImage, width: u32, height: u32) -> GrayImage {
    let converted;
    let (bytes, channels) = match image {
        DynamicImage::ImageRgb8(rgb) => (rgb.as_raw().as_slice(), 3),
        DynamicImage::ImageRgba8(rgba) => (rgba.as_raw().as_slice(), 4),
        other => {
            converted = other.to_rgba8();
            (converted.as_raw().as_slice(), 4)
        }
    };
    let (w, h) = (image.width() as usize, image.height() as usize);
    let (cells_x, cells_y) = (width as usize, height as usize);
    if w == 0 || h == 0 {
        return GrayImage::new(width, height);
    }
    // Sums of each channel per cell; a cell's columns are one contiguous span of a row, which
    // keeps the inner loop tight.
    let spans: Vec<(usize, usize)> = (0..cells_x)
        .map(|c| (c * w / cells_x * channels, (c + 1) * w / cells_x * channels))
        .collect();
    let mut sums = vec![[0u64; 3]; cells_x * cells_y];
    let mut counts = vec![0u64; cells_x * cells_y];
    // Cells of a phone screenshot are ~30 rows tall; about 8 sampled rows per cell average as
    // well and cost a third.
    let row_step = (h / cells_y / 8).max(1);
    let rows = bytes.chunks_exact(w * channels).enumerate().take(h);
    for (y, row) in rows.step_by(row_step) {
        let base = (y * cells_y / h) * cells_x;
        for (cell, &(start, end)) in spans.iter().enumerate() {
            let mut rgb = [0u32; 3];
            for pixel in row[start..end].chunks_exact(channels) {
                rgb[0] += u32::from(pixel[0]);
                rgb[1] += u32::from(pixel[1]);
                rgb[2] += u32::from(pixel[2]);
            }
            let sum = &mut sums[base + cell];
            for (total, part) in sum.iter_mut().zip(rgb) {
                *total += u64::from(part);
            }
            counts[base + cell] += ((end - start) / channels) as u64;
        }
    }
    let cells = sums
        .iter()
        .zip(&counts)
        .map(|([r, g, b], &count)| {
            // ITU-R BT.601 luma in fixed point.
            ((r * 77 + g * 150 + b * 29) / (256 * count.max(1))) as u8
        })
        .collect();
    GrayImage::from_raw(width, height, cells).unwrap_or_else(|| GrayImage::new(width, height))
}

/// Decodes a PNG and hashes it.
pub fn phash_png(bytes: &[u8]) -> Result<u64, HashError> {
    let image = image::load_from_memory_with_format(bytes, image::ImageFormat::Png)
        .map_err(HashError::Image)?;
    Ok(phash_image(&image))
}

/// Number of differing bits.
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// A perceptual hash as 16 lowercase hex digits.
pub fn format_phash(hash: u64) -> String {
    format!("{hash:016x}")
}

/// Reads 16 hex digits (an optional `0x` is allowed) back into a hash.
pub fn parse_phash(text: &str) -> Result<u64, HashError> {
    let digits = text.trim();
    let digits = digits.strip_prefix("0x").unwrap_or(digits);
    if digits.len() != 16 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(HashError::BadPhash(text.to_string()));
    }
    u64::from_str_radix(digits, 16).map_err(|_| HashError::BadPhash(text.to_string()))
}

/// The droid-hash stage: adds `hash` to every observation (layout and structure hash from `xml`
/// or `xml_path`, perceptual hash from `screenshot_path`, screen key when there is a perceptual
/// hash), passes every other line through untouched and in order. What cannot be hashed is
/// told for its line (no failure: the observation goes on with the hashes that could be
/// computed).
#[derive(Debug, Default)]
pub struct Stage;

impl crate::filter::Filter for Stage {
    type Error = std::convert::Infallible;

    fn line(&mut self, line: Line, out: &mut Output<'_>) -> Result<(), Self::Error> {
        match line.event {
            Some(Event::Observation(mut observation)) => {
                for problem in enrich(&mut observation).problems {
                    out.tell(&problem);
                }
                out.event(&Event::Observation(observation));
            }
            _ => out.pass(&line),
        }
        Ok(())
    }
}

/// What [`enrich`] found: what could not be computed, and the screen model the key came from
/// (to hand on with the observation, see [`ScreenModel`]).
#[derive(Debug)]
pub struct Enriched {
    pub problems: Vec<String>,
    pub model: ScreenModel,
}

/// Adds what can be computed to `observation.hash`, the screen key among it.
pub fn enrich(observation: &mut Observation) -> Enriched {
    enrich_from(observation, None, None)
}

/// [`enrich`] from the dump and the decoded screenshot the caller already has in memory (what
/// `observation`'s `xml_path` and `screenshot_path` hold); what is `None` is read from the
/// observation's files.
pub fn enrich_from(
    observation: &mut Observation,
    dump: Option<&str>,
    screenshot: Option<&DynamicImage>,
) -> Enriched {
    let mut problems = Vec::new();
    let mut hash = observation.hash.take().unwrap_or_default();
    let xml = match (dump.or(observation.xml.as_deref()), &observation.xml_path) {
        (Some(xml), _) => Some(Ok(std::borrow::Cow::Borrowed(xml))),
        (None, Some(path)) => Some(read_text(Path::new(path)).map(std::borrow::Cow::Owned)),
        (None, None) => None,
    };
    match xml.map(|xml| xml.and_then(|xml| Ok((layout_hash(&xml)?, structure_hash(&xml)?)))) {
        Some(Ok((layout, structure))) => {
            hash.layout_hash = Some(layout);
            hash.structure_hash = Some(structure);
        }
        Some(Err(e)) => problems.push(format!("no layout hash: {e}")),
        None => problems.push("no layout hash: the observation has no xml or xml_path".into()),
    }
    if let Some(path) = &observation.screenshot_path {
        let phash = match screenshot {
            Some(image) => Ok(phash_image(image)),
            None => std::fs::read(path)
                .map_err(|error| HashError::Read {
                    path: path.into(),
                    error,
                })
                .and_then(|bytes| phash_png(&bytes)),
        };
        match phash {
            Ok(phash) => {
                hash.phash = Some(format_phash(phash));
            }
            Err(e) => problems.push(format!("no perceptual hash for {path}: {e}")),
        }
    }
    // The screen's identity, as the deciders and crawler.db know it (one rule: lib/screen).
    let model = ScreenModel::of(observation);
    hash.screen_key = Some(model.key().as_str().to_string());
    observation.hash = Some(hash);
    Enriched { problems, model }
}

fn read_text(path: &Path) -> Result<String, HashError> {
    std::fs::read_to_string(path).map_err(|error| HashError::Read {
        path: path.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    const DUMP: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node class="android.widget.FrameLayout" bounds="[0,0][100,200]" focused="false"><node class="android.widget.EditText" text="typed" bounds="[0,0][100,20]" focused="true"/><node class="android.widget.ListView" scrollable="true" bounds="[0,20][100,200]"><node class="android.widget.TextView" text="Row" bounds="[0,20][100,40]" selected="false"/></node></node></hierarchy>"#;

    #[test]
    fn layout_hash_ignores_volatile_attributes_only() {
        let base = layout_hash(DUMP).unwrap();
        assert_eq!(base.len(), 64);
        let same = [
            DUMP.replace("focused=\"true\"", "focused=\"false\""),
            DUMP.replace("typed", "something else"),
            DUMP.replace("[0,20][100,40]", "[0,-300][100,-280]"),
            DUMP.replace("selected=\"false\"", "selected=\"true\""),
            DUMP.replace("><", ">\n  <"),
        ];
        for variant in same {
            assert_eq!(layout_hash(&variant).unwrap(), base, "{variant}");
        }
        let different = [
            DUMP.replace("Row", "Other row"),
            DUMP.replace("[0,0][100,20]", "[0,0][100,30]"),
            DUMP.replace("rotation=\"0\"", "rotation=\"1\""),
        ];
        for variant in different {
            assert_ne!(layout_hash(&variant).unwrap(), base, "{variant}");
        }
    }

    #[test]
    fn structure_hash_ignores_text_not_classes() {
        let base = structure_hash(DUMP).unwrap();
        assert_eq!(structure_hash(&DUMP.replace("Row", "Zeile")).unwrap(), base);
        assert_ne!(
            structure_hash(&DUMP.replace("TextView", "Button")).unwrap(),
            base
        );
    }

    #[test]
    fn phash_round_trips_and_separates_layouts() {
        let mut a = RgbImage::from_pixel(108, 240, Rgb([255, 255, 255]));
        let mut b = a.clone();
        for y in 40..80 {
            for x in 10..98 {
                a.put_pixel(x, y, Rgb([30, 30, 200]));
                b.put_pixel(x, y + 120, Rgb([30, 30, 200]));
            }
        }
        let (a, b) = (DynamicImage::ImageRgb8(a), DynamicImage::ImageRgb8(b));
        let (ha, hb) = (phash_image(&a), phash_image(&b));
        assert_eq!(ha, phash_image(&a));
        assert!(hamming(ha, hb) > 5, "{ha:016x} {hb:016x}");
        assert_eq!(parse_phash(&format_phash(ha)).unwrap(), ha);
        assert_eq!(parse_phash("0x00000000000000ff").unwrap(), 255);
        assert!(parse_phash("abc").is_err());
        assert!(parse_phash("zzzzzzzzzzzzzzzz").is_err());
    }

    #[test]
    fn enriching_from_memory_gives_what_the_files_give() {
        let dir = tempfile::tempdir().unwrap();
        let mut image = RgbImage::from_pixel(108, 240, Rgb([250, 250, 250]));
        for y in 40..80 {
            for x in 10..98 {
                image.put_pixel(x, y, Rgb([200, 30, 30]));
            }
        }
        let image = DynamicImage::ImageRgb8(image);
        let png = dir.path().join("s.png");
        image.save(&png).unwrap();
        let xml = dir.path().join("s.xml");
        std::fs::write(&xml, DUMP).unwrap();
        let observation = Observation {
            activity: Some(".Main".into()),
            xml_path: Some(xml.display().to_string()),
            screenshot_path: Some(png.display().to_string()),
            ..Observation::default()
        };
        let (mut from_files, mut from_memory) = (observation.clone(), observation);
        assert!(enrich(&mut from_files).problems.is_empty());
        assert!(enrich_from(&mut from_memory, Some(DUMP), Some(&image))
            .problems
            .is_empty());
        assert_eq!(from_files.hash, from_memory.hash);
        assert!(from_files.hash.unwrap().phash.is_some());
    }

    #[test]
    fn png_that_is_not_a_png_is_an_error() {
        assert!(matches!(
            phash_png(b"\x89PNG\r\n\x1a\nxx"),
            Err(HashError::Image(_))
        ));
    }
}
