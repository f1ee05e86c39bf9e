//! Fonts for the PDF: a fallback chain of TrueType/OpenType files found on the system, embedded
//! in the PDF. Each character is drawn with the first font of the chain that has it, so Latin,
//! Chinese, Korean, Devanagari and emoji on one line each get a font that can draw them.
//!
//! The chain, each taking the first file found: a sans-serif text face (DejaVu Sans, Noto Sans,
//! Liberation Sans, FreeSans), Devanagari (Noto Sans Devanagari, Lohit Devanagari), CJK (Droid
//! Sans Fallback, Noto Sans CJK, WenQuanYi, Nanum Gothic), symbols and emoji (Symbola, Noto
//! Emoji), and a monospace face for traces (DejaVu Sans Mono, Liberation Mono). Files listed
//! in `DROID_REPORT_FONTS` (separated by `:`) come first. On Debian and Ubuntu:
//! `apt-get install fonts-dejavu-core fonts-droid-fallback fonts-lohit-deva fonts-symbola`.
//! Colour emoji fonts (bitmap glyphs) cannot be drawn in a PDF and are not used.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use printpdf::ParsedFont;

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
        "NanumGothic.ttf",
    ],
    &["Symbola_hint.ttf", "Symbola.ttf", "NotoEmoji-Regular.ttf"],
];

/// Which face a piece of text starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Regular,
    Bold,
    Mono,
}

/// A font file, parsed on first use.
pub struct Face {
    pub path: PathBuf,
    parsed: OnceCell<Option<ParsedFont>>,
}

impl Face {
    fn new(path: PathBuf) -> Face {
        Face {
            path,
            parsed: OnceCell::new(),
        }
    }

    /// The parsed font; `None` when the file cannot be read or parsed.
    pub fn parsed(&self) -> Option<&ParsedFont> {
        self.parsed
            .get_or_init(|| {
                let bytes = std::fs::read(&self.path).ok()?;
                ParsedFont::from_bytes(&bytes, 0, &mut Vec::new())
            })
            .as_ref()
    }

    fn has(&self, c: char) -> bool {
        self.parsed()
            .is_some_and(|f| f.codepoint_to_glyph.contains_key(&(c as u32)))
    }

    /// Advance of `c` in em.
    pub fn advance(&self, c: char) -> f32 {
        let Some(font) = self.parsed() else {
            return 0.5;
        };
        let width = font
            .codepoint_to_glyph
            .get(&(c as u32))
            .and_then(|gid| font.glyph_widths.get(gid))
            .copied()
            .unwrap_or(font.units_per_em / 2);
        f32::from(width) / f32::from(font.units_per_em.max(1))
    }
}

/// The fonts of a PDF: the regular, bold and mono faces, then the fallbacks.
pub struct Fonts {
    /// Index 0 regular, 1 bold, 2 mono (each may repeat another's file), then fallbacks.
    pub faces: Vec<Face>,
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
    /// (the style's face, drawing a missing-glyph box, when none does).
    pub fn runs(&self, text: &str, style: Style) -> Vec<(usize, String)> {
        let first = match style {
            Style::Regular => 0,
            Style::Bold => 1,
            Style::Mono => 2,
        };
        let mut runs: Vec<(usize, String)> = Vec::new();
        for c in text.chars() {
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

    /// Width of `text` at `size` points.
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
