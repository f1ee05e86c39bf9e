//! The page layout under the PDF report: A4 pages written top to bottom with a cursor, text
//! shaped by the report's fonts and wrapped to a width, rules, boxes, lines, pictures and tables,
//! and the finished document with each font embedded as the subset of glyphs drawn.

use std::collections::BTreeSet;

use printpdf::{
    Codepoint, Color, FontId, Line, LinePoint, Op, PaintMode, ParsedFont, PdfDocument, PdfFont,
    PdfFontHandle, PdfPage, PdfSaveOptions, Point, Polygon, PolygonRing, Pt, RawImage,
    RawImageData, RawImageFormat, Rect, Rgb, TextItem, WindingOrder, XObjectTransform,
};

use super::fonts::{Fonts, Style};
use crate::report::Error;
use crate::terminal::clean;

/// A4 portrait, in points; a landscape page swaps them.
pub(super) const PAGE_W: f32 = 595.28;
pub(super) const PAGE_H: f32 = 841.89;
pub(super) const MARGIN: f32 = 40.0;
pub(super) const CONTENT_W: f32 = PAGE_W - 2.0 * MARGIN;

/// An RGB colour, each channel from 0 to 1, and the report's palette.
pub(super) type Rgb3 = (f32, f32, f32);
pub(super) const INK: Rgb3 = (0.11, 0.14, 0.2);
pub(super) const GREY: Rgb3 = (0.36, 0.39, 0.47);
pub(super) const RULE: Rgb3 = (0.85, 0.87, 0.92);
pub(super) const BLUE: Rgb3 = (0.18, 0.44, 0.87);
pub(super) const RED: Rgb3 = (0.69, 0.0, 0.13);
pub(super) const BOX: Rgb3 = (0.93, 0.95, 0.98);

fn rgb((r, g, b): Rgb3) -> Color {
    Color::Rgb(Rgb {
        r,
        g,
        b,
        icc_profile: None,
    })
}

/// A point of a page `page_h` high, from its top-left corner.
fn point(page_h: f32, x: f32, y_top: f32) -> Point {
    Point {
        x: Pt(x),
        y: Pt(page_h - y_top),
    }
}

/// Straight segments through `points` (page coordinates from the top).
fn path(page_h: f32, points: &[(f32, f32)]) -> Vec<LinePoint> {
    points
        .iter()
        .map(|&(x, y)| LinePoint {
            p: point(page_h, x, y),
            bezier: false,
        })
        .collect()
}

/// Pages being written, top to bottom, with a cursor `y` measured from the page's top.
pub(super) struct Doc<'f> {
    fonts: &'f Fonts,
    pdf: PdfDocument,
    /// Glyph ids drawn with each face: what its embedded subset keeps.
    used: Vec<BTreeSet<u16>>,
    /// Each page's operations, width and height.
    pages: Vec<(Vec<Op>, f32, f32)>,
    ops: Vec<Op>,
    pub(super) y: f32,
    /// The current page's size.
    pub(super) w: f32,
    pub(super) h: f32,
}

/// The PDF font resource of a face.
fn font_id(face: usize) -> FontId {
    FontId(format!("droid-face-{face}"))
}

impl<'f> Doc<'f> {
    pub(super) fn new(fonts: &'f Fonts, title: &str) -> Doc<'f> {
        Doc {
            fonts,
            pdf: PdfDocument::new(title),
            used: vec![BTreeSet::new(); fonts.faces.len()],
            pages: Vec::new(),
            ops: Vec::new(),
            y: MARGIN,
            w: PAGE_W,
            h: PAGE_H,
        }
    }

    pub(super) fn new_page(&mut self) {
        self.next_page(PAGE_W, PAGE_H);
    }

    /// Ends this page; the next is `w` x `h` points.
    pub(super) fn next_page(&mut self, w: f32, h: f32) {
        let ops = std::mem::take(&mut self.ops);
        self.pages.push((ops, self.w, self.h));
        self.y = MARGIN;
        (self.w, self.h) = (w, h);
    }

    /// Starts a new page unless `height` more fits on this one.
    pub(super) fn need(&mut self, height: f32) {
        if self.y + height > self.h - MARGIN && self.y > MARGIN {
            self.new_page();
        }
    }

    /// One line of text with its top at `y_top`.
    pub(super) fn text(
        &mut self,
        x: f32,
        y_top: f32,
        size: f32,
        style: Style,
        color: Rgb3,
        text: &str,
    ) {
        let text = clean(text).replace('\n', " ");
        if text.is_empty() {
            return;
        }
        let runs = self.fonts.shape(&text, style);
        self.ops.push(Op::SaveGraphicsState);
        self.ops.push(Op::SetFillColor { col: rgb(color) });
        self.ops.push(Op::StartTextSection);
        self.ops.push(Op::SetTextCursor {
            pos: point(self.h, x, y_top + size * 0.8),
        });
        for run in runs {
            self.used[run.face].extend(run.glyphs.iter().map(|g| g.gid));
            self.ops.push(Op::SetFont {
                font: PdfFontHandle::External(font_id(run.face)),
                size: Pt(size),
            });
            let glyphs = run
                .glyphs
                .into_iter()
                .map(|g| Codepoint {
                    gid: g.gid,
                    offset: g.adjust,
                    cid: Some(g.text),
                })
                .collect();
            self.ops.push(Op::ShowText {
                items: vec![TextItem::GlyphIds(glyphs)],
            });
        }
        self.ops.push(Op::EndTextSection);
        self.ops.push(Op::RestoreGraphicsState);
    }

    /// `text` wrapped to `width` (long words cut), one line per entry.
    pub(super) fn wrap(&self, text: &str, width: f32, size: f32, style: Style) -> Vec<String> {
        let mut lines = Vec::new();
        for paragraph in clean(text).split('\n') {
            let mut line = String::new();
            for word in paragraph.split(' ') {
                let candidate = if line.is_empty() {
                    word.to_string()
                } else {
                    format!("{line} {word}")
                };
                if self.fonts.width(&candidate, style, size) <= width {
                    line = candidate;
                    continue;
                }
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                let mut rest = word.to_string();
                while self.fonts.width(&rest, style, size) > width && rest.chars().count() > 1 {
                    let mut cut = rest.chars().count() - 1;
                    while cut > 1 {
                        let head: String = rest.chars().take(cut).collect();
                        if self.fonts.width(&head, style, size) <= width {
                            break;
                        }
                        cut = cut * 4 / 5;
                    }
                    lines.push(rest.chars().take(cut).collect());
                    rest = rest.chars().skip(cut).collect();
                }
                line = rest;
            }
            lines.push(line);
        }
        lines
    }

    /// A wrapped paragraph at the cursor, moving it down.
    pub(super) fn paragraph(
        &mut self,
        x: f32,
        width: f32,
        size: f32,
        style: Style,
        color: Rgb3,
        text: &str,
    ) {
        for line in self.wrap(text, width, size, style) {
            self.need(size * 1.3);
            let y = self.y;
            self.text(x, y, size, style, color, &line);
            self.y += size * 1.3;
        }
    }

    /// A remark in grey across the page.
    pub(super) fn note(&mut self, text: &str) {
        self.paragraph(MARGIN, CONTENT_W, 9.5, Style::Regular, GREY, text);
    }

    pub(super) fn heading(&mut self, text: &str) {
        self.need(60.0);
        self.y += 10.0;
        let y = self.y;
        self.text(MARGIN, y, 15.0, Style::Bold, INK, text);
        self.y += 19.0;
        self.rule();
        self.y += 6.0;
    }

    fn rule(&mut self) {
        let y = self.y;
        self.stroke(&[(MARGIN, y), (self.w - MARGIN, y)], RULE, 0.8);
    }

    pub(super) fn rect(
        &mut self,
        x: f32,
        y_top: f32,
        w: f32,
        h: f32,
        fill: Option<Rgb3>,
        stroke: Option<Rgb3>,
    ) {
        let mode = match (fill, stroke) {
            (Some(_), Some(_)) => PaintMode::FillStroke,
            (Some(_), None) => PaintMode::Fill,
            _ => PaintMode::Stroke,
        };
        self.ops.push(Op::SaveGraphicsState);
        if let Some(fill) = fill {
            self.ops.push(Op::SetFillColor { col: rgb(fill) });
        }
        if let Some(stroke) = stroke {
            self.ops.push(Op::SetOutlineColor { col: rgb(stroke) });
            self.ops.push(Op::SetOutlineThickness { pt: Pt(0.8) });
        }
        self.ops.push(Op::DrawRectangle {
            rectangle: Rect {
                x: Pt(x),
                y: Pt(self.h - y_top - h),
                width: Pt(w),
                height: Pt(h),
                mode: Some(mode),
                winding_order: Some(WindingOrder::NonZero),
            },
        });
        self.ops.push(Op::RestoreGraphicsState);
    }

    pub(super) fn stroke(&mut self, points: &[(f32, f32)], color: Rgb3, width: f32) {
        self.ops.push(Op::SaveGraphicsState);
        self.ops.push(Op::SetOutlineColor { col: rgb(color) });
        self.ops.push(Op::SetOutlineThickness { pt: Pt(width) });
        self.ops.push(Op::DrawLine {
            line: Line {
                points: path(self.h, points),
                is_closed: false,
            },
        });
        self.ops.push(Op::RestoreGraphicsState);
    }

    pub(super) fn fill_polygon(&mut self, points: &[(f32, f32)], color: Rgb3) {
        self.ops.push(Op::SaveGraphicsState);
        self.ops.push(Op::SetFillColor { col: rgb(color) });
        self.ops.push(Op::DrawPolygon {
            polygon: Polygon {
                rings: vec![PolygonRing {
                    points: path(self.h, points),
                }],
                mode: PaintMode::Fill,
                winding_order: WindingOrder::NonZero,
            },
        });
        self.ops.push(Op::RestoreGraphicsState);
    }

    /// An RGB picture in the box `w` x `h` at (`x`, `y_top`).
    pub(super) fn image(&mut self, image: image::RgbImage, x: f32, y_top: f32, w: f32, h: f32) {
        let (pw, ph) = (image.width() as f32, image.height() as f32);
        let raw = RawImage {
            width: image.width() as usize,
            height: image.height() as usize,
            data_format: RawImageFormat::RGB8,
            pixels: RawImageData::U8(image.into_raw()),
            tag: Vec::new(),
        };
        let id = self.pdf.add_image(&raw);
        self.ops.push(Op::UseXobject {
            id,
            transform: XObjectTransform {
                translate_x: Some(Pt(x)),
                translate_y: Some(Pt(self.h - y_top - h)),
                scale_x: Some(w / pw),
                scale_y: Some(h / ph),
                dpi: Some(72.0),
                ..XObjectTransform::default()
            },
        });
    }

    pub(super) fn finish(mut self) -> Result<Vec<u8>, Error> {
        self.new_page();
        let mut pages = std::mem::take(&mut self.pages);
        let count = pages.len();
        for (i, (ops, w, h)) in pages.iter_mut().enumerate() {
            let footer = format!("page {} of {count}", i + 1);
            (self.w, self.h) = (*w, *h);
            self.text(
                *w - MARGIN - 60.0,
                *h - 28.0,
                8.0,
                Style::Regular,
                GREY,
                &footer,
            );
            ops.append(&mut self.ops);
        }
        // Each face used is embedded as a subset of the glyphs drawn, renumbered.
        for (face, used) in self.used.iter().enumerate() {
            if used.is_empty() {
                continue;
            }
            let Some(loaded) = self.fonts.faces[face].loaded() else {
                continue;
            };
            let glyphs: Vec<u16> = used.iter().copied().collect();
            let remapper = subsetter::GlyphRemapper::new_from_glyphs_sorted(&glyphs);
            let bytes = subsetter::subset(&loaded.bytes, 0, &remapper).map_err(|e| {
                Error::Pdf(format!(
                    "subsetting {}: {e}",
                    self.fonts.faces[face].path.display()
                ))
            })?;
            let parsed = ParsedFont::from_bytes(&bytes, 0, &mut Vec::new()).ok_or_else(|| {
                Error::Pdf(format!(
                    "reading the subset of {}",
                    self.fonts.faces[face].path.display()
                ))
            })?;
            self.pdf
                .resources
                .fonts
                .map
                .insert(font_id(face), PdfFont::new(parsed));
            renumber(&mut pages, &font_id(face), &remapper);
        }
        let pages: Vec<PdfPage> = pages
            .into_iter()
            .map(|(ops, w, h)| PdfPage::new(Pt(w).into(), Pt(h).into(), ops))
            .collect();
        let mut warnings = Vec::new();
        let bytes = self
            .pdf
            .with_pages(pages)
            .save(&PdfSaveOptions::default(), &mut warnings);
        if bytes.is_empty() {
            return Err(Error::Pdf(format!("{warnings:?}")));
        }
        Ok(bytes)
    }
}

/// Glyph ids drawn with `font` renumbered as its subset numbers them.
fn renumber(pages: &mut [(Vec<Op>, f32, f32)], font: &FontId, remapper: &subsetter::GlyphRemapper) {
    for (ops, _, _) in pages {
        let mut current = false;
        for op in ops.iter_mut() {
            match op {
                Op::SetFont {
                    font: PdfFontHandle::External(id),
                    ..
                } => current = id == font,
                Op::ShowText { items } if current => {
                    for item in items {
                        if let TextItem::GlyphIds(glyphs) = item {
                            for glyph in glyphs {
                                glyph.gid = remapper.get(glyph.gid).unwrap_or(0);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// Two columns of label/value pairs.
pub(super) fn pairs(doc: &mut Doc, rows: &[(&str, String)]) {
    for (label, value) in rows {
        let lines = doc.wrap(value, CONTENT_W - 130.0, 9.5, Style::Regular);
        doc.need(lines.len() as f32 * 13.0);
        let y = doc.y;
        doc.text(MARGIN, y, 9.5, Style::Bold, GREY, label);
        for line in lines {
            let y = doc.y;
            doc.text(MARGIN + 130.0, y, 9.5, Style::Regular, INK, &line);
            doc.y += 13.0;
        }
    }
}

/// A table: header row, then rows; column x offsets from the left margin.
pub(super) fn table(doc: &mut Doc, columns: &[(&str, f32)], rows: &[Vec<String>]) {
    let row_h = 13.0;
    let header = |doc: &mut Doc| {
        let y = doc.y;
        doc.rect(MARGIN, y - 2.0, CONTENT_W, row_h, Some(BOX), None);
        for (name, x) in columns {
            doc.text(MARGIN + x + 3.0, y, 8.5, Style::Bold, INK, name);
        }
        doc.y += row_h;
    };
    doc.need(row_h * 3.0);
    header(doc);
    for row in rows {
        if doc.y + row_h > doc.h - MARGIN {
            doc.new_page();
            header(doc);
        }
        let y = doc.y;
        for (cell, (_, x)) in row.iter().zip(columns) {
            doc.text(MARGIN + x + 3.0, y, 8.5, Style::Regular, INK, cell);
        }
        doc.y += row_h;
        let y = doc.y - 2.0;
        doc.stroke(&[(MARGIN, y), (MARGIN + CONTENT_W, y)], RULE, 0.4);
    }
    doc.y += 6.0;
}
