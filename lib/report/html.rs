//! One self-contained HTML file that opens offline: no script, no external resource. Crashes
//! first (trace, repro steps, the screenshot at the crash), then the statistics, the discovery
//! plot and the screen graph as inline SVG (each screen a link to its card), the screens with
//! their thumbnails, and every step with the decider's reasoning and the screens before and
//! after. Screenshots are inlined once each, as `data:` PNGs in CSS classes the page reuses.

use std::collections::HashMap;
use std::fmt::Write;

use base64::Engine;

use super::data::{show, CrashGroup, Group, Minimised, Report, Statistic};
use super::graph::Layout;
use super::junit::escape;
use super::thumbnail;
use crate::terminal::clean;

/// Thumbnail size of a screen, in pixels (the box; the aspect ratio is kept).
const THUMB: (u32, u32) = (180, 400);
/// The screenshot at a crash.
const CRASH_SHOT: (u32, u32) = (360, 800);

const STYLE: &str = r#"
body{font-family:system-ui,"DejaVu Sans","Noto Sans",sans-serif;margin:0;color:#1d2433;background:#f6f7fb}
header{background:#1d2433;color:#fff;padding:18px 28px}
header h1{margin:0 0 6px;font-size:22px}
header .meta{color:#c9d1e3;font-size:14px}
main{padding:12px 28px 40px;max-width:1400px}
h2{margin:28px 0 10px;font-size:19px;border-bottom:2px solid #d8deea;padding-bottom:4px}
.badge{display:inline-block;border-radius:10px;padding:2px 10px;font-size:13px;font-weight:600;margin-left:8px}
.ok{background:#d7f2df;color:#17672f}.bad{background:#fbd9d9;color:#8b1020}.warn{background:#fdecc8;color:#7a4b00}
.cards{display:flex;flex-wrap:wrap;gap:12px}
.card{background:#fff;border:1px solid #d8deea;border-radius:8px;padding:10px 12px}
.figure{font-size:26px;font-weight:700}.label{font-size:12px;color:#5b6478}
table{border-collapse:collapse;background:#fff}
td,th{border:1px solid #d8deea;padding:4px 8px;font-size:13px;text-align:left;vertical-align:top}
th{background:#eef1f7}
.stats{display:flex;flex-wrap:wrap;gap:16px}
.crash{background:#fff;border-left:5px solid #b00020;border-radius:6px;padding:10px 14px;margin:10px 0}
.crash.anr{border-left-color:#d97b00}
.crash h3{margin:0 0 6px;font-size:16px}
.crash .body{display:flex;gap:16px;align-items:flex-start}
pre{background:#0f1420;color:#e1e6f0;padding:10px;border-radius:6px;overflow:auto;font-size:12px;max-height:360px;margin:6px 0}
.shot{display:inline-block;background-size:contain;background-repeat:no-repeat;background-position:center;background-color:#e9ecf3;border:1px solid #c9d1e3;border-radius:4px}
.thumb{width:90px;height:200px}.small{width:45px;height:100px}
.none{display:inline-flex;align-items:center;justify-content:center;font-size:11px;color:#5b6478}
.screens{display:flex;flex-wrap:wrap;gap:10px}
.screen{background:#fff;border:1px solid #d8deea;border-radius:8px;padding:8px;width:150px;font-size:12px}
.screen:target{outline:3px solid #2f6fde}
.screen .name{font-weight:600;word-break:break-all}
.steps td.reason{max-width:520px}
.fail{color:#8b1020;font-weight:600}
svg text{font-family:system-ui,"DejaVu Sans",sans-serif}
svg a:hover rect{fill:#d6e4fb}
"#;

pub fn render(report: &Report) -> String {
    let mut page = Page::default();
    page.images(report);
    let run = &report.run;
    let (badge, class) = status_badge(report);
    let _ = write!(
        page.body,
        "<header><h1>droid report: {} <span class=\"badge {class}\" id=\"status\">{}</span></h1>\
         <div class=\"meta\">run <b id=\"run-id\">{}</b> &middot; device {} &middot; {} to {} &middot; decider {}</div></header><main>",
        escape(&clean(&run.app_package)),
        escape(&badge),
        escape(&run.run_id),
        escape(&clean(&run.device_line())),
        escape(&run.start_time),
        escape(run.end_time.as_deref().unwrap_or("(not ended)")),
        escape(run.decider.as_deref().unwrap_or("-")),
    );
    page.headline(report);
    page.crashes(report);
    page.problems(report);
    page.stats(report);
    page.discovery(report);
    page.graph(report);
    page.screens(report);
    page.steps(report);
    page.files(report);
    page.body.push_str("</main>");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>droid report {}</title><style>{STYLE}{}</style></head><body>{}</body></html>\n",
        escape(&run.run_id),
        page.css,
        page.body
    )
}

fn status_badge(report: &Report) -> (String, &'static str) {
    let run = &report.run;
    let text = match &run.reason {
        Some(reason) => format!("{} ({reason})", run.state),
        None => run.state.clone(),
    };
    let class = if report.failed() {
        "bad"
    } else if run.status == "RUNNING" {
        "warn"
    } else {
        "ok"
    };
    (text, class)
}

#[derive(Default)]
struct Page {
    body: String,
    css: String,
    /// Screens whose thumbnail is inlined.
    shots: std::collections::HashSet<i64>,
}

impl Page {
    /// One CSS class per screen with a readable screenshot: `.s{id}`.
    fn images(&mut self, report: &Report) {
        let b64 = base64::engine::general_purpose::STANDARD;
        let pngs = thumbnail::parallel(&report.screens, |screen| {
            screen
                .screenshot
                .as_deref()
                .and_then(|p| thumbnail::png(p, THUMB.0, THUMB.1))
        });
        for (screen, png) in report.screens.iter().zip(pngs) {
            let Some(png) = png else {
                continue;
            };
            let _ = write!(
                self.css,
                ".s{}{{background-image:url(data:image/png;base64,{})}}",
                screen.id,
                b64.encode(png)
            );
            self.shots.insert(screen.id);
        }
    }

    /// A screen's thumbnail (`thumb` or `small`), or a grey box saying there is none.
    fn shot(&self, screen: Option<i64>, size: &str) -> String {
        match screen {
            Some(id) if self.shots.contains(&id) => {
                format!("<span class=\"shot {size} s{id}\" title=\"screen #{id}\"></span>")
            }
            Some(id) => format!("<span class=\"shot {size} none\">#{id}</span>"),
            None => format!("<span class=\"shot {size} none\">-</span>"),
        }
    }

    fn headline(&mut self, report: &Report) {
        let s = |statistic: Statistic| show(report.stat(statistic));
        let cards = [
            ("steps", s(Statistic::TotalSteps), "steps"),
            (
                "screens",
                s(Statistic::UniqueScreensVisited),
                "unique screens",
            ),
            (
                "coverage",
                format!("{:.0} %", report.coverage.action_coverage_percent),
                "widget actions tried",
            ),
            (
                "crashes",
                report.occurrences("crash").to_string(),
                "crashes",
            ),
            ("anrs", report.occurrences("anr").to_string(), "ANRs"),
            ("ai-calls", s(Statistic::TotalAiCalls), "model calls"),
            (
                "duration",
                super::text::duration(report.run.duration_seconds),
                "duration",
            ),
        ];
        self.body
            .push_str("<div class=\"cards\" style=\"margin-top:16px\">");
        for (id, figure, label) in cards {
            let _ = write!(
                self.body,
                "<div class=\"card\"><div class=\"figure\" id=\"figure-{id}\">{}</div><div class=\"label\">{label}</div></div>",
                escape(&figure)
            );
        }
        self.body.push_str("</div>");
    }

    fn crashes(&mut self, report: &Report) {
        let _ = write!(
            self.body,
            "<h2 id=\"crashes\">Crashes and ANRs ({} distinct, {} in all)</h2>",
            report.crashes.len(),
            report.occurrences("crash") + report.occurrences("anr")
        );
        if report.crashes.is_empty() {
            self.body.push_str("<p>None.</p>");
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        for (i, group) in report.crashes.iter().enumerate() {
            let _ = write!(
                self.body,
                "<div class=\"crash {}\" id=\"crash-{i}\"><h3>{} <span class=\"badge bad\">{}x</span></h3>",
                group.kind,
                escape(&clean(&group.title())),
                group.occurrences.len()
            );
            let _ = write!(
                self.body,
                "<div class=\"label\">{} &middot; signature <code>{}</code> &middot; steps {}</div><div class=\"body\"><div>",
                if group.kind == "anr" { "ANR" } else { "crash" },
                escape(&group.signature),
                escape(&occurrence_steps(group))
            );
            if let Some(minimised) = &group.minimised {
                self.minimal_steps(minimised);
            }
            if let Some(first) = group.occurrences.first() {
                if !first.repro_steps.is_empty() {
                    // With a minimal path, the whole one is folded away.
                    let folded = group.minimised.is_some();
                    if folded {
                        let _ = write!(
                            self.body,
                            "<details><summary>All {} steps since the app's launch</summary>",
                            first.repro_steps.len()
                        );
                    } else {
                        self.body
                            .push_str("<b>Steps to reproduce</b> (from the app's launch)");
                    }
                    self.steps_list(&first.repro_steps);
                    if folded {
                        self.body.push_str("</details>");
                    }
                }
            }
            let _ = write!(
                self.body,
                "<pre>{}</pre></div>",
                escape(&clean(&group.trace))
            );
            let shot = group
                .occurrences
                .iter()
                .find_map(|o| o.screenshot.as_deref())
                .and_then(|p| thumbnail::load_sharp(p, CRASH_SHOT.0, CRASH_SHOT.1));
            if let Some(image) = shot {
                let mut png = Vec::new();
                let (w, h) = (image.width(), image.height());
                if image::DynamicImage::ImageRgb8(image)
                    .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
                    .is_ok()
                {
                    let _ = write!(
                        self.body,
                        "<figure style=\"margin:0\"><img alt=\"screen at the crash\" width=\"{}\" height=\"{}\" src=\"data:image/png;base64,{}\"><figcaption class=\"label\">the screen at the crash</figcaption></figure>",
                        w / 2,
                        h / 2,
                        b64.encode(png)
                    );
                }
            }
            self.body.push_str("</div></div>");
        }
    }

    fn problems(&mut self, report: &Report) {
        if report.problems.is_empty() {
            return;
        }
        self.body.push_str(
            "<h2>Problems</h2><table><tr><th>step</th><th>kind</th><th>message</th></tr>",
        );
        for p in &report.problems {
            let _ = write!(
                self.body,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                p.step.map_or("-".into(), |s| s.to_string()),
                escape(&p.kind),
                escape(&clean(&p.message))
            );
        }
        self.body.push_str("</table>");
    }

    fn stats(&mut self, report: &Report) {
        self.body
            .push_str("<h2 id=\"statistics\">Statistics</h2><div class=\"stats\">");
        for group in Group::ALL {
            let _ = write!(
                self.body,
                "<table><tr><th colspan=\"2\">{}</th></tr>",
                group.title()
            );
            for statistic in group.statistics() {
                let _ = write!(
                    self.body,
                    "<tr><td>{statistic}</td><td id=\"stat-{statistic}\">{}</td></tr>",
                    escape(&clean(&show(report.stat(statistic))))
                );
            }
            self.body.push_str("</table>");
        }
        self.body.push_str("</div>");
    }

    fn discovery(&mut self, report: &Report) {
        self.body
            .push_str("<h2 id=\"discovery\">Unique screens against steps</h2>");
        self.body
            .push_str(&discovery_svg(&report.coverage.discovery));
    }

    fn graph(&mut self, report: &Report) {
        let _ = write!(
            self.body,
            "<h2 id=\"graph\">Screen graph ({} screens, {} transitions)</h2>",
            report.screens.len(),
            report.transitions.len()
        );
        self.body.push_str(&graph_svg(report));
    }

    fn screens(&mut self, report: &Report) {
        self.body
            .push_str("<h2 id=\"screens\">Screens</h2><div class=\"screens\">");
        for screen in &report.screens {
            let _ = write!(
                self.body,
                "<div class=\"screen\" id=\"screen-{}\">{}<div class=\"name\">{}</div><div>{} visit{}, first at step {}</div><div>{} of {} widget actions tried{}</div><div class=\"label\">{}</div></div>",
                screen.id,
                self.shot(Some(screen.id), "thumb"),
                escape(&clean(&screen.name)),
                screen.visits,
                if screen.visits == 1 { "" } else { "s" },
                screen.first_step,
                screen.widget_actions_tried,
                screen.widget_actions,
                match screen.states {
                    n if n > 1 => format!(" in {n} states"),
                    _ => String::new(),
                },
                escape(&clean(screen.activity.as_deref().unwrap_or(&screen.key)))
            );
        }
        self.body.push_str("</div>");
    }

    fn steps(&mut self, report: &Report) {
        let _ = write!(
            self.body,
            "<h2 id=\"steps\">Steps ({})</h2><table class=\"steps\"><tr><th>step</th><th>before</th><th>actions and reasoning</th><th>after</th></tr>",
            report.steps.len()
        );
        for step in &report.steps {
            let mut actions = String::new();
            for a in &step.actions {
                let _ = write!(
                    actions,
                    "<div><b>{}</b> {}{}{}</div>",
                    escape(&a.action_type),
                    escape(&clean(a.description.as_deref().unwrap_or(""))),
                    a.input_text
                        .as_deref()
                        .map(|t| format!(" &laquo;{}&raquo;", escape(&clean(t))))
                        .unwrap_or_default(),
                    match (&a.success, &a.error) {
                        (true, _) => String::new(),
                        (false, Some(e)) =>
                            format!(" <span class=\"fail\">failed: {}</span>", escape(&clean(e))),
                        (false, None) => " <span class=\"fail\">failed</span>".into(),
                    }
                );
                if let Some(reason) = a.reasoning.as_deref().filter(|r| !r.is_empty()) {
                    let _ = write!(
                        actions,
                        "<div class=\"label\">{}</div>",
                        escape(&clean(reason))
                    );
                }
            }
            if step.actions.is_empty() {
                actions.push_str("<span class=\"label\">no action recorded</span>");
            }
            let _ = write!(
                self.body,
                "<tr id=\"step-{}\"><td>{}</td><td><a href=\"#screen-{}\">{}</a></td><td class=\"reason\">{actions}</td><td>{}</td></tr>",
                step.step,
                step.step,
                step.screen_id,
                self.shot(Some(step.screen_id), "small"),
                match step.next_screen_id {
                    Some(id) => format!("<a href=\"#screen-{id}\">{}</a>", self.shot(Some(id), "small")),
                    None => self.shot(None, "small"),
                }
            );
        }
        self.body.push_str("</table>");
    }

    /// A crash's minimal path: its verdict, its steps, its exports.
    fn minimal_steps(&mut self, minimised: &Minimised) {
        let m = &minimised.data;
        let class = match m.verdict.as_str() {
            "reproduced" => "ok",
            "flaky" | "unverified" => "warn",
            _ => "bad",
        };
        let verdict = match (m.verdict.as_str(), m.minimal) {
            ("reproduced", true) => "minimal".to_string(),
            (verdict, _) => verdict.replace('_', " "),
        };
        let _ = write!(
            self.body,
            "<div class=\"minimal\"><b>Minimal steps</b><span class=\"badge {class}\">{}</span> \
             <span class=\"label\">{}</span>",
            escape(&verdict),
            escape(&minimised.summary())
        );
        self.steps_list(&m.minimal_steps);
        if !minimised.files.is_empty() {
            self.body.push_str("<div class=\"label\">Exported: ");
            let links: Vec<String> = minimised
                .files
                .iter()
                .map(|(what, path)| {
                    let name = match what.as_str() {
                        "maestro" => "Maestro flow",
                        "shell" => "adb shell script",
                        "events" => "events for droid-crawl replay",
                        other => other,
                    };
                    // The file itself, so the report stays one offline file wherever it goes.
                    let file = path.file_name().unwrap_or_default().to_string_lossy();
                    let link = match std::fs::read(path) {
                        Ok(bytes) => format!(
                            "<a download=\"{}\" href=\"data:text/plain;base64,{}\">{name}</a>",
                            escape(&clean(&file)),
                            base64::engine::general_purpose::STANDARD.encode(bytes)
                        ),
                        Err(_) => name.to_string(),
                    };
                    format!(
                        "{link} <code>{}</code>",
                        escape(&clean(&path.display().to_string()))
                    )
                })
                .collect();
            self.body.push_str(&links.join(" &middot; "));
            self.body.push_str("</div>");
        }
        self.body.push_str("</div>");
    }

    fn steps_list(&mut self, steps: &[crate::crash::ReproStep]) {
        self.body.push_str("<ol>");
        for step in steps {
            let _ = write!(
                self.body,
                "<li>{} <span class=\"label\">step {}</span></li>",
                escape(&clean(&step.action)),
                step.step
            );
        }
        self.body.push_str("</ol>");
    }

    fn files(&mut self, report: &Report) {
        let a = &report.artifacts;
        self.body.push_str("<h2>Files</h2><table>");
        let mut row = |name: &str, path: Option<&std::path::PathBuf>| {
            if let Some(path) = path {
                let _ = write!(
                    self.body,
                    "<tr><td>{name}</td><td><code>{}</code></td></tr>",
                    escape(&clean(&path.display().to_string()))
                );
            }
        };
        row("database", Some(&a.database));
        row("session", a.session_dir.as_ref());
        row("screenshots", a.screenshots_dir.as_ref());
        row("events", a.events.as_ref());
        row("log", a.log.as_ref());
        for (name, paths) in a.integration_files() {
            for path in paths {
                row(name, Some(path));
            }
        }
        self.body.push_str("</table>");
    }
}

fn occurrence_steps(group: &CrashGroup) -> String {
    let steps: Vec<String> = group
        .occurrences
        .iter()
        .filter_map(|o| o.step.map(|s| s.to_string()))
        .collect();
    if steps.is_empty() {
        "-".into()
    } else {
        steps.join(", ")
    }
}

/// Unique screens against steps, as a line plot.
fn discovery_svg(points: &[[i64; 2]]) -> String {
    let (w, h, left, bottom) = (720.0, 260.0, 48.0, 30.0);
    let max_x = points.last().map_or(1, |p| p[0]).max(1) as f64;
    let max_y = points.iter().map(|p| p[1]).max().unwrap_or(1).max(1) as f64;
    let x = |v: f64| left + v / max_x * (w - left - 12.0);
    let y = |v: f64| h - bottom - v / max_y * (h - bottom - 12.0);
    let mut svg = format!(
        "<svg id=\"discovery-plot\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\"><rect width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>"
    );
    let _ = write!(
        svg,
        "<line x1=\"{left}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#5b6478\"/><line x1=\"{left}\" y1=\"12\" x2=\"{left}\" y2=\"{0}\" stroke=\"#5b6478\"/>",
        h - bottom,
        w - 12.0
    );
    let _ = write!(
        svg,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"11\">step</text><text x=\"6\" y=\"20\" font-size=\"11\">screens</text>",
        left - 4.0, y(max_y) + 4.0, max_y, w - 12.0, h - bottom + 14.0, max_x, left, h - 6.0
    );
    // One point per pixel column is enough for the eye.
    let stride = (points.len() / 700).max(1);
    let path: Vec<String> = points
        .iter()
        .enumerate()
        .filter(|(i, _)| i % stride == 0 || *i + 1 == points.len())
        .map(|(_, p)| format!("{:.1},{:.1}", x(p[0] as f64), y(p[1] as f64)))
        .collect();
    let _ = write!(
        svg,
        "<polyline fill=\"none\" stroke=\"#2f6fde\" stroke-width=\"2\" points=\"{}\"/></svg>",
        path.join(" ")
    );
    svg
}

/// The screen graph: boxes linking to each screen's card, arrows for transitions.
fn graph_svg(report: &Report) -> String {
    let layout = Layout::of(report);
    let (bw, bh, gx, gy, pad) = (150.0, 44.0, 70.0, 18.0, 16.0);
    let w = pad * 2.0 + layout.cols as f64 * (bw + gx) - gx;
    let h = pad * 2.0 + layout.rows as f64 * (bh + gy) - gy;
    let pos = |id: i64| {
        layout.get(id).map(|p| {
            (
                pad + p.col as f64 * (bw + gx),
                pad + p.row as f64 * (bh + gy),
            )
        })
    };
    let mut svg = format!(
        "<svg id=\"screen-graph\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" role=\"img\">\
         <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#7d879c\"/></marker></defs>"
    );
    for t in &report.transitions {
        let (Some(a), Some(b)) = (pos(t.from), pos(t.to)) else {
            continue;
        };
        if t.from == t.to {
            continue;
        }
        let (x1, y1, x2, y2) = if b.0 > a.0 {
            (a.0 + bw, a.1 + bh / 2.0, b.0, b.1 + bh / 2.0)
        } else if b.0 < a.0 {
            (a.0, a.1 + bh / 2.0, b.0 + bw, b.1 + bh / 2.0)
        } else if b.1 > a.1 {
            (a.0 + bw * 0.8, a.1 + bh, b.0 + bw * 0.8, b.1)
        } else {
            (a.0 + bw * 0.2, a.1, b.0 + bw * 0.2, b.1 + bh)
        };
        let bend = if b.0 <= a.0 { 30.0 } else { 0.0 };
        let _ = write!(
            svg,
            "<path class=\"edge\" data-from=\"{}\" data-to=\"{}\" d=\"M{x1:.1},{y1:.1} C{:.1},{:.1} {:.1},{:.1} {x2:.1},{y2:.1}\" fill=\"none\" stroke=\"#9aa3b5\" stroke-width=\"{:.1}\" marker-end=\"url(#arrow)\"><title>{} x{}</title></path>",
            t.from,
            t.to,
            (x1 + x2) / 2.0,
            y1 - bend,
            (x1 + x2) / 2.0,
            y2 - bend,
            1.0 + (t.count as f64).ln().max(0.0),
            escape(&t.action_type),
            t.count
        );
    }
    let crashed: HashMap<i64, usize> = crash_screens(report);
    for screen in &report.screens {
        let Some((x, y)) = pos(screen.id) else {
            continue;
        };
        let stroke = if crashed.contains_key(&screen.id) {
            "#b00020"
        } else {
            "#7d879c"
        };
        let label: String = clean(&screen.name).chars().take(24).collect();
        let _ = write!(
            svg,
            "<a href=\"#screen-{id}\"><g class=\"node\" id=\"node-{id}\"><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bw}\" height=\"{bh}\" rx=\"8\" fill=\"#eef3fb\" stroke=\"{stroke}\" stroke-width=\"1.5\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#5b6478\" text-anchor=\"middle\">{} visit{}</text><title>{}</title></g></a>",
            x + bw / 2.0,
            y + 18.0,
            escape(&label),
            x + bw / 2.0,
            y + 34.0,
            screen.visits,
            if screen.visits == 1 { "" } else { "s" },
            escape(&clean(screen.activity.as_deref().unwrap_or(&screen.key))),
            id = screen.id,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// Screens on which a crash or an ANR happened, with how many.
pub fn crash_screens(report: &Report) -> HashMap<i64, usize> {
    let mut out = HashMap::new();
    for group in &report.crashes {
        for o in &group.occurrences {
            if let Some(step) = o
                .step
                .and_then(|n| report.steps.iter().find(|s| s.step == n))
            {
                *out.entry(step.screen_id).or_insert(0) += 1;
            }
        }
    }
    out
}
