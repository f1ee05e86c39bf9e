//! Fonts for the PDF: a fallback chain of TrueType/OpenType files found on the system, embedded
//! in the PDF. Each character is drawn with the first font of the chain that has it, so Latin,
//! Chinese, Korean, Devanagari and emoji on one line each get a font that can draw them.
//!
//! The chain, each taking the first file found: a sans-serif text face (DejaVu Sans, Noto Sans,
//! Liberation Sans, FreeSans), Devanagari (Noto Sans Devanagari, Lohit Devanagari), Chinese and
//! Japanese (Droid Sans Fallback, Noto Sans CJK, WenQuanYi), Korean (Nanum Gothic, Noto Sans
//! CJK, Un Dotum), symbols and emoji (Symbola, Noto Emoji), and a monospace face for traces
//! (DejaVu Sans Mono, Liberation Mono). Files listed in `DROID_REPORT_FONTS` (separated by `:`)
//! come first. On Debian and Ubuntu: `apt-get install fonts-dejavu-core fonts-droid-fallback
//! fonts-nanum fonts-lohit-deva fonts-symbola`.
//! Colour emoji fonts (bitmap glyphs) cannot be drawn in a PDF and are not used.
//!
//! Text is shaped with rustybuzz (HarfBuzz's algorithm), so Devanagari conjuncts and vowel signs,
//! and any font's ligatures and kerning, come out as the script needs; each glyph keeps the text it
//! stands for, so text extraction gives the original characters.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rustybuzz::ttf_parser;

use crate::report::Error;

/// Directories searched for font files, recursively.
const FONT_DIRS: &[&str] = &["/usr/share/fonts", "/usr/local/share/fonts"];

/// The fallback chain by role: file names in order of preference.
const TEXT: &[&str] = &[
    "DejaVuSans.ttf",
    "NotoSans-Regular.ttf",
    "LiberationSans-Regular.ttf",
    "FreeSans.ttf",
];
const BOLD: &[&str] = &[
    "DejaVuSans-Bold.ttf",
    "NotoSans-Bold.ttf",
    "LiberationSans-Bold.ttf",
    "FreeSansBold.ttf",
];
const MONO: &[&str] = &[
    "DejaVuSansMono.ttf",
    "LiberationMono-Regular.ttf",
    "NotoSansMono-Regular.ttf",
    "FreeMono.ttf",
];
const FALLBACKS: &[&[&str]] = &[
    &["NotoSansDevanagari-Regular.ttf", "Lohit-Devanagari.ttf"],
    &[
        "DroidSansFallbackFull.ttf",
        "DroidSansFallback.ttf",
        "NotoSansCJK-Regular.ttc",
        "wqy-microhei.ttc",
    ],
    // Korean: Droid Sans Fallback has almost no Hangul syllables.
    &["NanumGothic.ttf", "NotoSansCJK-Regular.ttc", "UnDotum.ttf"],
    &["Symbola_hint.ttf", "Symbola.ttf", "NotoEmoji-Regular.ttf"],
];

/// Which face a piece of text starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Regular,
    Bold,
    Mono,
}

/// What a font file holds that layout needs.
pub struct Loaded {
    pub bytes: Vec<u8>,
    pub units_per_em: u16,
    /// Unicode code point to glyph id, from every Unicode subtable of `cmap`.
    cmap: HashMap<u32, u16>,
    /// Advance width of each glyph id, in font units.
    advances: Vec<u16>,
}

/// A font file, read on first use.
pub struct Face {
    pub path: PathBuf,
    loaded: OnceCell<Option<Loaded>>,
}

/// One glyph to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Glyph {
    pub gid: u16,
    /// The text the glyph stands for (empty for the second and later glyphs of a cluster).
    pub text: String,
    /// The adjustment after the glyph, in thousandths of an em (a PDF `TJ` number), that puts
    /// the next glyph where the shaper placed it.
    pub adjust: f32,
}

/// Glyphs of one face.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub face: usize,
    pub glyphs: Vec<Glyph>,
}

impl Face {
    fn new(path: PathBuf) -> Face {
        Face {
            path,
            loaded: OnceCell::new(),
        }
    }

    /// The font's data; `None` when the file cannot be read or parsed.
    pub fn loaded(&self) -> Option<&Loaded> {
        self.loaded
            .get_or_init(|| {
                let bytes = std::fs::read(&self.path).ok()?;
                let face = ttf_parser::Face::parse(&bytes, 0).ok()?;
                let mut cmap = HashMap::new();
                for subtable in face.tables().cmap?.subtables {
                    if !subtable.is_unicode() {
                        continue;
                    }
                    subtable.codepoints(|cp| {
                        if let Some(gid) = subtable.glyph_index(cp) {
                            cmap.entry(cp).or_insert(gid.0);
                        }
                    });
                }
                let advances = (0..face.number_of_glyphs())
                    .map(|g| face.glyph_hor_advance(ttf_parser::GlyphId(g)).unwrap_or(0))
                    .collect();
                let units_per_em = face.units_per_em();
                Some(Loaded {
                    bytes,
                    units_per_em,
                    cmap,
                    advances,
                })
            })
            .as_ref()
    }

    fn has(&self, c: char) -> bool {
        self.loaded()
            .is_some_and(|f| f.cmap.contains_key(&(c as u32)))
    }

    /// Advance of `c` in em, unshaped (for measuring).
    pub fn advance(&self, c: char) -> f32 {
        let Some(font) = self.loaded() else {
            return 0.5;
        };
        let width = font
            .cmap
            .get(&(c as u32))
            .and_then(|&gid| font.advances.get(usize::from(gid)))
            .copied()
            .unwrap_or(font.units_per_em / 2);
        f32::from(width) / f32::from(font.units_per_em.max(1))
    }

    /// `text` shaped with this face.
    fn shape(&self, text: &str) -> Vec<Glyph> {
        let Some(font) = self.loaded() else {
            return Vec::new();
        };
        let Some(face) = rustybuzz::Face::from_slice(&font.bytes, 0) else {
            return Vec::new();
        };
        let mut buffer = rustybuzz::UnicodeBuffer::new();
        buffer.push_str(text);
        buffer.guess_segment_properties();
        let shaped = rustybuzz::shape(&face, &[], buffer);
        let infos = shaped.glyph_infos();
        let positions = shaped.glyph_positions();
        let upem = f32::from(font.units_per_em.max(1));
        let advance =
            |gid: u16| i32::from(font.advances.get(usize::from(gid)).copied().unwrap_or(0));
        // (glyph, advance, offset, text) per glyph. The shaper reads one cmap subtable; where it
        // found no glyph for a lone character, the others may have one (Droid Sans Fallback
        // keeps Hangul in a subtable of its own).
        let mut placed: Vec<(u16, i32, i32, &str)> = Vec::with_capacity(infos.len());
        for (i, (info, p)) in infos.iter().zip(positions).enumerate() {
            let cluster = info.cluster as usize;
            let first = i == 0 || infos[i - 1].cluster != info.cluster;
            let end = infos[i + 1..]
                .iter()
                .map(|n| n.cluster as usize)
                .find(|&c| c > cluster)
                .unwrap_or(text.len());
            let cluster_text = text.get(cluster..end).unwrap_or_default();
            let mut chars = cluster_text.chars();
            let lone = match (chars.next(), chars.next()) {
                (Some(c), None) => Some(c),
                _ => None,
            };
            let own = lone.and_then(|c| font.cmap.get(&(c as u32)).copied());
            placed.push(match (info.glyph_id, own) {
                (0, Some(gid)) => (gid, advance(gid), 0, cluster_text),
                (gid, _) => (
                    gid as u16,
                    p.x_advance,
                    p.x_offset,
                    if first { cluster_text } else { "" },
                ),
            });
        }
        // Where each glyph goes, and where the pen ends.
        let mut pen = 0i32;
        let mut at = Vec::with_capacity(placed.len() + 1);
        for &(_, x_advance, x_offset, _) in &placed {
            at.push(pen + x_offset);
            pen += x_advance;
        }
        at.push(pen);
        let glyphs = placed
            .iter()
            .enumerate()
            .map(|(i, &(gid, _, _, text))| Glyph {
                gid,
                text: text.to_string(),
                adjust: (at[i] + advance(gid) - at[i + 1]) as f32 * 1000.0 / upem,
            })
            .collect();
        glyphs
    }
}

/// The fonts of a PDF: the regular, bold and mono faces, then the fallbacks.
pub struct Fonts {
    /// Index 0 regular, 1 bold, 2 mono (each may repeat another's file), then fallbacks.
    pub faces: Vec<Face>,
}

/// Characters that belong with the one before them whatever the font: joiners, variation
/// selectors and combining marks (a Devanagari vowel sign is shaped with its consonant).
fn joins(c: char) -> bool {
    matches!(c,
        '\u{200c}'..='\u{200d}'
        | '\u{fe00}'..='\u{fe0f}'
        | '\u{0300}'..='\u{036f}'
        | '\u{0900}'..='\u{0903}'
        | '\u{093a}'..='\u{094f}'
        | '\u{0951}'..='\u{0957}'
        | '\u{0962}'..='\u{0963}'
        | '\u{1f3fb}'..='\u{1f3ff}')
}

impl Fonts {
    /// The chain from `DROID_REPORT_FONTS` and the system's font directories.
    pub fn system() -> Result<Fonts, Error> {
        let extra: Vec<PathBuf> = std::env::var_os("DROID_REPORT_FONTS")
            .map(|v| std::env::split_paths(&v).collect())
            .unwrap_or_default();
        let mut dirs: Vec<PathBuf> = FONT_DIRS.iter().map(PathBuf::from).collect();
        if let Some(home) = std::env::var_os("HOME") {
            dirs.push(Path::new(&home).join(".local/share/fonts"));
            dirs.push(Path::new(&home).join(".fonts"));
        }
        Fonts::find(&extra, &dirs)
    }

    /// The chain from `extra` files (first) and font files under `dirs`.
    pub fn find(extra: &[PathBuf], dirs: &[PathBuf]) -> Result<Fonts, Error> {
        let mut by_name: HashMap<String, PathBuf> = HashMap::new();
        for dir in dirs {
            collect(dir, &mut by_name, 0);
        }
        let pick = |names: &[&str]| names.iter().find_map(|n| by_name.get(*n).cloned());
        let extra_faces: Vec<PathBuf> = extra.iter().filter(|p| p.is_file()).cloned().collect();
        let regular = extra_faces
            .first()
            .cloned()
            .or_else(|| pick(TEXT))
            .ok_or_else(|| {
                Error::Font(format!(
                    "none of {} under {} (install fonts-dejavu-core, or name font files in DROID_REPORT_FONTS)",
                    TEXT.join(", "),
                    FONT_DIRS.join(", ")
                ))
            })?;
        let bold = pick(BOLD).unwrap_or_else(|| regular.clone());
        let mono = pick(MONO).unwrap_or_else(|| regular.clone());
        let mut paths = vec![regular, bold, mono];
        paths.extend(extra_faces.into_iter().skip(1));
        paths.extend(FALLBACKS.iter().filter_map(|names| pick(names)));
        Ok(Fonts {
            faces: paths.into_iter().map(Face::new).collect(),
        })
    }

    /// `text` cut into runs, each with the index of the face that draws it: the style's face
    /// when it has the character, else the regular face, else the first fallback that has it
    /// (the style's face, drawing a missing-glyph box, when none does). Joiners and marks stay
    /// with the character before them.
    pub fn runs(&self, text: &str, style: Style) -> Vec<(usize, String)> {
        let first = match style {
            Style::Regular => 0,
            Style::Bold => 1,
            Style::Mono => 2,
        };
        let mut runs: Vec<(usize, String)> = Vec::new();
        for c in text.chars() {
            if let (true, Some((_, run))) = (joins(c), runs.last_mut()) {
                run.push(c);
                continue;
            }
            let face = if c == ' ' || self.faces[first].has(c) {
                first
            } else {
                std::iter::once(0)
                    .chain(3..self.faces.len())
                    .find(|&i| self.faces[i].has(c))
                    .unwrap_or(first)
            };
            match runs.last_mut() {
                Some((f, run)) if *f == face => run.push(c),
                _ => runs.push((face, c.to_string())),
            }
        }
        runs
    }

    /// `text` as shaped glyph runs.
    pub fn shape(&self, text: &str, style: Style) -> Vec<Run> {
        self.runs(text, style)
            .into_iter()
            .map(|(face, run)| Run {
                face,
                glyphs: self.faces[face].shape(&run),
            })
            .collect()
    }

    /// Width of `text` at `size` points (unshaped: close enough to lay out lines).
    pub fn width(&self, text: &str, style: Style, size: f32) -> f32 {
        self.runs(text, style)
            .iter()
            .map(|(face, run)| {
                run.chars()
                    .map(|c| self.faces[*face].advance(c))
                    .sum::<f32>()
            })
            .sum::<f32>()
            * size
    }
}

fn collect(dir: &Path, found: &mut HashMap<String, PathBuf>, depth: u32) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() && depth < 6 {
            collect(&path, found, depth + 1);
        } else if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            found.entry(name.to_string()).or_insert(path);
        }
    }
}
