//! The PDF report (printpdf): a title block; the device and the app; statistics tables
//! (progress, discovery, actions by type with successes and failures, model performance,
//! batching, recovery, and the rest of `run_stats`); crashes and ANRs with their traces, the
//! steps that led there and the screenshot at the crash; the unique screens against steps; the
//! screen graph drawn as a picture; a page of screen thumbnails with visit counts. A4 pages,
//! fonts from the system embedded (see [`fonts`]), so text from any app draws.

pub mod fonts;
mod layout;

use serde_json::Value;

pub use fonts::{Fonts, Style};

use super::data::{show, CrashGroup, Group, Report, Statistic};
use super::graph::Layout;
use super::{thumbnail, Error};
use layout::{
    pairs, table, Doc, BLUE, BOX, CONTENT_W, GREY, INK, MARGIN, PAGE_H, PAGE_W, RED, RULE,
};

/// Most trace lines shown per crash.
const TRACE_LINES: usize = 60;
/// Thumbnails on the screens page: 6 columns of 4 rows.
const THUMB_COLS: usize = 6;
const THUMB_ROWS: usize = 4;

/// The report as PDF bytes.
pub fn render(report: &Report, fonts: &Fonts) -> Result<Vec<u8>, Error> {
    let mut doc = Doc::new(fonts, &format!("droid report {}", report.run.run_id));
    title(&mut doc, report);
    device_and_app(&mut doc, report);
    headline(&mut doc, report);
    actions_table(&mut doc, report);
    statistics(&mut doc, report);
    crashes(&mut doc, report);
    discovery_plot(&mut doc, report);
    graph_picture(&mut doc, report);
    thumbnails(&mut doc, report);
    doc.finish()
}

fn title(doc: &mut Doc, report: &Report) {
    let run = &report.run;
    doc.rect(0.0, 0.0, PAGE_W, 110.0, Some(INK), None);
    doc.text(
        MARGIN,
        26.0,
        11.0,
        Style::Regular,
        (0.79, 0.82, 0.89),
        "droid crawl report",
    );
    doc.text(
        MARGIN,
        44.0,
        22.0,
        Style::Bold,
        (1.0, 1.0, 1.0),
        &run.app_package,
    );
    let status = match &run.reason {
        Some(reason) => format!("{} ({reason})", run.state),
        None => run.state.clone(),
    };
    let color = if report.failed() {
        (1.0, 0.6, 0.6)
    } else if run.status == "RUNNING" {
        (1.0, 0.85, 0.5)
    } else {
        (0.6, 0.9, 0.7)
    };
    doc.text(MARGIN, 76.0, 11.0, Style::Bold, color, &status);
    doc.text(
        MARGIN,
        92.0,
        9.0,
        Style::Regular,
        (0.79, 0.82, 0.89),
        &format!("run {}", run.run_id),
    );
    doc.y = 126.0;
}

fn device_and_app(doc: &mut Doc, report: &Report) {
    let run = &report.run;
    let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    doc.heading("Device and app");
    let limits = match (run.max_steps, run.max_duration_secs) {
        (Some(s), Some(d)) => format!("{s} steps, {d} s"),
        (Some(s), None) => format!("{s} steps"),
        (None, Some(d)) => format!("{d} s"),
        (None, None) => "-".into(),
    };
    pairs(
        doc,
        &[
            ("Device", run.device_id.clone()),
            ("Model", or_dash(&run.device_model)),
            ("Android", or_dash(&run.android_version)),
            ("Screen", or_dash(&run.screen_resolution)),
            ("App", run.app_package.clone()),
            ("Version", or_dash(&run.app_version)),
            ("Start activity", or_dash(&run.start_activity)),
            (
                "Decider",
                match &run.model {
                    Some(m) => format!("{} ({m})", or_dash(&run.decider)),
                    None => or_dash(&run.decider),
                },
            ),
            ("Limits", limits),
            ("Started", run.start_time.clone()),
            (
                "Ended",
                run.end_time.clone().unwrap_or_else(|| "(not ended)".into()),
            ),
            ("Duration", super::text::duration(run.duration_seconds)),
        ],
    );
}

fn headline(doc: &mut Doc, report: &Report) {
    let s = |statistic: Statistic| show(report.stat(statistic));
    let cards = [
        (s(Statistic::TotalSteps), "steps"),
        (s(Statistic::UniqueScreensVisited), "unique screens"),
        (
            format!("{:.0} %", report.coverage.action_coverage_percent),
            "widget actions tried",
        ),
        (report.occurrences("crash").to_string(), "crashes"),
        (report.occurrences("anr").to_string(), "ANRs"),
        (s(Statistic::TotalAiCalls), "model calls"),
    ];
    doc.need(70.0);
    doc.y += 12.0;
    let w = (CONTENT_W - 5.0 * 8.0) / 6.0;
    for (i, (figure, label)) in cards.iter().enumerate() {
        let x = MARGIN + i as f32 * (w + 8.0);
        let y = doc.y;
        doc.rect(x, y, w, 48.0, Some(BOX), Some(RULE));
        doc.text(x + 8.0, y + 8.0, 17.0, Style::Bold, INK, figure);
        doc.text(x + 8.0, y + 32.0, 7.5, Style::Regular, GREY, label);
    }
    doc.y += 58.0;
}

fn actions_table(doc: &mut Doc, report: &Report) {
    doc.heading("Actions by type");
    let count = |statistic: Statistic, kind: &str| {
        report
            .stat(statistic)
            .get(kind)
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let rows: Vec<Vec<String>> = report
        .stat(Statistic::ActionsByType)
        .as_object()
        .map(|all| {
            all.iter()
                .map(|(kind, total)| {
                    vec![
                        kind.clone(),
                        show(total),
                        count(Statistic::SuccessfulActionsByType, kind).to_string(),
                        count(Statistic::FailedActionsByType, kind).to_string(),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    if rows.is_empty() {
        doc.note("No action was executed.");
        return;
    }
    table(
        doc,
        &[
            ("action", 0.0),
            ("total", 160.0),
            ("succeeded", 240.0),
            ("failed", 330.0),
        ],
        &rows,
    );
}

fn statistics(doc: &mut Doc, report: &Report) {
    doc.heading("Statistics");
    for group in Group::ALL {
        let mut rows = Vec::new();
        for statistic in group.statistics() {
            let name = statistic.name();
            match report.stat(statistic) {
                Value::Object(map) if !map.is_empty() => {
                    rows.push(vec![name.to_string(), String::new()]);
                    for (key, value) in map {
                        rows.push(vec![format!("    {key}"), show(value)]);
                    }
                }
                value => rows.push(vec![name.to_string(), show(value)]),
            }
        }
        doc.need(40.0);
        let y = doc.y + 4.0;
        doc.text(MARGIN, y, 10.5, Style::Bold, BLUE, group.title());
        doc.y += 20.0;
        table(doc, &[("statistic", 0.0), ("value", 250.0)], &rows);
    }
}

fn crashes(doc: &mut Doc, report: &Report) {
    doc.new_page();
    doc.heading(&format!(
        "Crashes and ANRs: {} distinct, {} in all",
        report.crashes.len(),
        report.occurrences("crash") + report.occurrences("anr")
    ));
    if report.crashes.is_empty() {
        doc.note("The app neither crashed nor stopped responding.");
    }
    for group in &report.crashes {
        crash(doc, report, group);
    }
}

fn crash(doc: &mut Doc, report: &Report, group: &CrashGroup) {
    doc.need(120.0);
    let top = doc.y;
    let shot_w = 130.0;
    let text_w = CONTENT_W - shot_w - 14.0;
    let color = if group.kind == "anr" {
        (0.85, 0.48, 0.0)
    } else {
        RED
    };
    doc.paragraph(MARGIN, text_w, 11.0, Style::Bold, color, &group.title());
    let steps: Vec<String> = group
        .occurrences
        .iter()
        .filter_map(|o| o.step.map(|s| s.to_string()))
        .collect();
    let recovered = group.occurrences.iter().filter(|o| o.recovered).count();
    doc.paragraph(
        MARGIN,
        text_w,
        8.5,
        Style::Regular,
        GREY,
        &format!(
            "{} {} x{}, signature {}, at step {}; recovered {} of {}",
            if group.kind == "anr" { "ANR" } else { "crash" },
            group.package.as_deref().unwrap_or(""),
            group.occurrences.len(),
            group.signature,
            if steps.is_empty() {
                "-".into()
            } else {
                steps.join(", ")
            },
            recovered,
            group.occurrences.len()
        ),
    );
    if let Some(first) = group.occurrences.first() {
        if !first.repro_steps.is_empty() {
            doc.y += 3.0;
            doc.paragraph(
                MARGIN,
                text_w,
                9.0,
                Style::Bold,
                INK,
                "Steps that led there",
            );
            for (i, step) in first.repro_steps.iter().enumerate() {
                doc.paragraph(
                    MARGIN + 8.0,
                    text_w - 8.0,
                    8.5,
                    Style::Regular,
                    INK,
                    &format!("{}. {} (step {})", i + 1, step.action, step.step),
                );
            }
        }
    }
    let shot = group
        .occurrences
        .iter()
        .find_map(|o| o.screenshot.as_deref())
        .and_then(|p| thumbnail::load_sharp(p, 390, 870));
    if let Some(image) = shot {
        let h = shot_w * image.height() as f32 / image.width().max(1) as f32;
        let h = h.min(doc.h - MARGIN - top);
        doc.image(image, PAGE_W - MARGIN - shot_w, top, shot_w, h);
        doc.text(
            PAGE_W - MARGIN - shot_w,
            top + h + 2.0,
            7.0,
            Style::Regular,
            GREY,
            "the screen at the crash",
        );
        doc.y = doc.y.max(top + 20.0);
    }
    doc.y += 4.0;
    let lines: Vec<&str> = group.trace.lines().collect();
    for line in lines.iter().take(TRACE_LINES) {
        for part in doc.wrap(line, text_w, 6.5, Style::Mono) {
            doc.need(8.0);
            let y = doc.y;
            doc.text(MARGIN, y, 6.5, Style::Mono, INK, &part);
            doc.y += 8.0;
        }
    }
    if lines.len() > TRACE_LINES {
        doc.paragraph(
            MARGIN,
            text_w,
            7.0,
            Style::Regular,
            GREY,
            &format!(
                "... {} more lines (see the HTML or JSON report)",
                lines.len() - TRACE_LINES
            ),
        );
    }
    let _ = report;
    doc.y += 12.0;
}

fn discovery_plot(doc: &mut Doc, report: &Report) {
    doc.heading("Unique screens against steps");
    let points = &report.coverage.discovery;
    let (h, left, bottom) = (200.0, 36.0, 18.0);
    doc.need(h + 10.0);
    let top = doc.y;
    let (x0, y0) = (MARGIN + left, top + h - bottom);
    let (w, plot_h) = (CONTENT_W - left - 10.0, h - bottom - 10.0);
    let max_x = points.last().map_or(1, |p| p[0]).max(1) as f32;
    let max_y = points.iter().map(|p| p[1]).max().unwrap_or(1).max(1) as f32;
    doc.stroke(&[(x0, top + 6.0), (x0, y0), (x0 + w, y0)], GREY, 0.8);
    for i in 0..=4 {
        let v = (max_y * i as f32 / 4.0).round();
        let y = y0 - v / max_y * plot_h;
        doc.stroke(&[(x0, y), (x0 + w, y)], RULE, 0.4);
        doc.text(
            MARGIN,
            y - 4.0,
            7.5,
            Style::Regular,
            GREY,
            &format!("{v:.0}"),
        );
        let s = (max_x * i as f32 / 4.0).round();
        let x = x0 + s / max_x * w;
        doc.text(
            x - 6.0,
            y0 + 4.0,
            7.5,
            Style::Regular,
            GREY,
            &format!("{s:.0}"),
        );
    }
    let stride = (points.len() / 500).max(1);
    let line: Vec<(f32, f32)> = points
        .iter()
        .enumerate()
        .filter(|(i, _)| i % stride == 0 || *i + 1 == points.len())
        .map(|(_, p)| {
            (
                x0 + p[0] as f32 / max_x * w,
                y0 - p[1] as f32 / max_y * plot_h,
            )
        })
        .collect();
    if line.len() > 1 {
        doc.stroke(&line, BLUE, 1.5);
    }
    doc.y = top + h + 6.0;
    doc.paragraph(
        MARGIN,
        CONTENT_W,
        8.0,
        Style::Regular,
        GREY,
        &format!(
            "{} unique screens in {} steps (x: step, y: unique screens seen so far)",
            report.screens.len(),
            report.steps.len()
        ),
    );
}

fn graph_picture(doc: &mut Doc, report: &Report) {
    // Landscape: the graph grows along the distance from the first screen.
    doc.next_page(PAGE_H, PAGE_W);
    doc.heading(&format!(
        "Screen graph: {} screens, {} transitions",
        report.screens.len(),
        report.transitions.len()
    ));
    let layout = Layout::of(report);
    if layout.placed.is_empty() {
        doc.note("No screen was recorded.");
        return;
    }
    let (bw, bh, gx, gy) = (110.0f32, 30.0f32, 40.0f32, 12.0f32);
    let natural_w = layout.cols as f32 * (bw + gx) - gx;
    let natural_h = layout.rows as f32 * (bh + gy) - gy;
    let room_h = doc.h - MARGIN - doc.y - 10.0;
    let room_w = doc.w - 2.0 * MARGIN;
    let scale = (room_w / natural_w).min(room_h / natural_h).min(1.4);
    let top = doc.y;
    let pos = |id: i64| {
        layout.get(id).map(|p| {
            (
                MARGIN + p.col as f32 * (bw + gx) * scale,
                top + p.row as f32 * (bh + gy) * scale,
            )
        })
    };
    let (w, h) = (bw * scale, bh * scale);
    for t in &report.transitions {
        let (Some(a), Some(b)) = (pos(t.from), pos(t.to)) else {
            continue;
        };
        if t.from == t.to {
            continue;
        }
        let (from, to) = if b.0 > a.0 {
            ((a.0 + w, a.1 + h / 2.0), (b.0, b.1 + h / 2.0))
        } else if b.0 < a.0 {
            ((a.0, a.1 + h / 2.0), (b.0 + w, b.1 + h / 2.0))
        } else if b.1 > a.1 {
            ((a.0 + w * 0.8, a.1 + h), (b.0 + w * 0.8, b.1))
        } else {
            ((a.0 + w * 0.2, a.1), (b.0 + w * 0.2, b.1 + h))
        };
        doc.stroke(
            &[from, to],
            (0.6, 0.64, 0.71),
            0.5 + (t.count as f32).ln().max(0.0) * 0.3,
        );
        arrow_head(doc, from, to, 4.0 * scale.max(0.5));
    }
    let crashed = super::html::crash_screens(report);
    let size = (8.0 * scale).clamp(3.5, 10.0);
    for screen in &report.screens {
        let Some((x, y)) = pos(screen.id) else {
            continue;
        };
        let stroke = if crashed.contains_key(&screen.id) {
            RED
        } else {
            GREY
        };
        doc.rect(x, y, w, h, Some(BOX), Some(stroke));
        let name: String = screen.name.chars().take(22).collect();
        doc.text(x + 3.0, y + h * 0.12, size, Style::Regular, INK, &name);
        doc.text(
            x + 3.0,
            y + h * 0.55,
            size * 0.85,
            Style::Regular,
            GREY,
            &format!("{} visits", screen.visits),
        );
    }
    doc.y = top + natural_h * scale + 10.0;
}

fn arrow_head(doc: &mut Doc, from: (f32, f32), to: (f32, f32), size: f32) {
    let (dx, dy) = (to.0 - from.0, to.1 - from.1);
    let len = (dx * dx + dy * dy).sqrt().max(0.001);
    let (ux, uy) = (dx / len, dy / len);
    let back = (to.0 - ux * size, to.1 - uy * size);
    let (px, py) = (-uy * size * 0.5, ux * size * 0.5);
    doc.fill_polygon(
        &[to, (back.0 + px, back.1 + py), (back.0 - px, back.1 - py)],
        (0.49, 0.53, 0.61),
    );
}

fn thumbnails(doc: &mut Doc, report: &Report) {
    doc.new_page();
    let per_page = THUMB_COLS * THUMB_ROWS;
    let mut screens: Vec<&super::data::ReportedScreen> = report.screens.iter().collect();
    screens.sort_by(|a, b| b.visits.cmp(&a.visits).then(a.id.cmp(&b.id)));
    let shown = screens.len().min(per_page);
    doc.heading(&format!(
        "Screens: {} of {}, most visited first",
        shown,
        report.screens.len()
    ));
    let cell_w = CONTENT_W / THUMB_COLS as f32;
    let cell_h = (doc.h - MARGIN - doc.y) / THUMB_ROWS as f32;
    let (img_w, img_h) = (cell_w - 14.0, cell_h - 30.0);
    let top = doc.y;
    let images = thumbnail::parallel(&screens[..shown], |s| {
        s.screenshot
            .as_deref()
            .and_then(|p| thumbnail::load(p, 180, 400))
    });
    for (i, (screen, image)) in screens[..shown].iter().zip(images).enumerate() {
        let x = MARGIN + (i % THUMB_COLS) as f32 * cell_w;
        let y = top + (i / THUMB_COLS) as f32 * cell_h;
        match image {
            Some(image) => {
                let ratio = image.width() as f32 / image.height().max(1) as f32;
                let (w, h) = if img_w / img_h > ratio {
                    (img_h * ratio, img_h)
                } else {
                    (img_w, img_w / ratio)
                };
                doc.rect(x - 0.5, y - 0.5, w + 1.0, h + 1.0, None, Some(RULE));
                doc.image(image, x, y, w, h);
            }
            None => {
                doc.rect(x, y, img_w, img_h, Some(BOX), Some(RULE));
                doc.text(x + 4.0, y + 4.0, 7.0, Style::Regular, GREY, "no screenshot");
            }
        }
        let name: String = screen.name.chars().take(24).collect();
        doc.text(x, y + img_h + 4.0, 7.0, Style::Bold, INK, &name);
        doc.text(
            x,
            y + img_h + 13.0,
            7.0,
            Style::Regular,
            GREY,
            &format!("{} visits", screen.visits),
        );
    }
    doc.y = top + THUMB_ROWS as f32 * cell_h;
}
