//! JUnit XML for CI: one test suite for the run, one test case for the run itself (failing when
//! the run ended with ERROR or a stage stopped on an error) and one per distinct crash or ANR
//! (failing, with the trace, the repro steps and every occurrence as the failure text). Written
//! to the JUnit schema CI servers read (the Ant/Windy Road `JUnit.xsd`): `testsuites` holds one
//! `testsuite` (name, tests, failures, errors, skipped, time, timestamp, hostname, id, package),
//! which holds `properties`, the `testcase`s (name, classname, time) with their `failure`
//! (message, type), `system-out` and `system-err`.

use std::fmt::Write;

use super::data::CrashGroup;
use super::Report;
use crate::terminal::clean;

/// Text for an XML attribute or element, escaped; characters XML 1.0 forbids are dropped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// The failure text of a crash group: the trace, then where and how to get there.
fn failure_text(group: &CrashGroup) -> String {
    let mut text = clean(&group.trace);
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    let _ = writeln!(
        text,
        "signature {} ({} occurrence{})",
        group.signature,
        group.occurrences.len(),
        if group.occurrences.len() == 1 {
            ""
        } else {
            "s"
        }
    );
    for occurrence in &group.occurrences {
        let step = occurrence.step.map_or("-".into(), |s| s.to_string());
        let _ = writeln!(
            text,
            "- step {step}{}{}",
            occurrence
                .ts
                .as_deref()
                .map(|t| format!(" at {t}"))
                .unwrap_or_default(),
            if occurrence.recovered {
                ", recovered"
            } else {
                ""
            }
        );
    }
    if let Some(minimised) = &group.minimised {
        let _ = writeln!(text, "minimal steps: {}", minimised.summary());
        numbered(&mut text, &minimised.data.minimal_steps);
        for (what, path) in &minimised.files {
            let _ = writeln!(text, "{what}: {}", path.display());
        }
    }
    if let Some(first) = group.occurrences.first() {
        if !first.repro_steps.is_empty() {
            text.push_str("steps to reproduce (from the app's launch):\n");
            numbered(&mut text, &first.repro_steps);
        }
        if let Some(shot) = &first.screenshot {
            let _ = writeln!(text, "screenshot: {}", shot.display());
        }
    }
    text
}

pub fn render(report: &Report) -> String {
    let run = &report.run;
    let suite = format!("droid.{}", run.app_package);
    let failures = report.crashes.len() + usize::from(report.failed());
    let tests = report.crashes.len() + 1;
    let time = format!("{:.3}", run.duration_seconds);
    let hostname = crate::store::host_name();
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"droid\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{time}\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" package=\"{}\" id=\"0\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"{time}\" timestamp=\"{}\" hostname=\"{}\">",
        escape(&suite),
        escape(&run.app_package),
        escape(timestamp(&run.start_time)),
        escape(&hostname)
    );
    out.push_str("    <properties>\n");
    let properties = [
        ("run_id", Some(run.run_id.clone())),
        ("status", Some(run.status.clone())),
        ("state", Some(run.state.clone())),
        ("device", Some(run.device_id.clone())),
        ("app_version", run.app_version.clone()),
        ("decider", run.decider.clone()),
        ("model", run.model.clone()),
        ("steps", Some(report.steps.len().to_string())),
        ("unique_screens", Some(report.screens.len().to_string())),
    ];
    for (name, value) in properties {
        if let Some(value) = value {
            let _ = writeln!(
                out,
                "      <property name=\"{name}\" value=\"{}\"/>",
                escape(&value)
            );
        }
    }
    out.push_str("    </properties>\n");
    let _ = write!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{time}\"",
        escape(&suite),
        escape(&format!("run {}", run.run_id))
    );
    match report.failure() {
        Some(why) => {
            let _ = writeln!(
                out,
                ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                escape(&clean(&why)),
                escape(&run.status),
                escape(&clean(&why))
            );
        }
        None => out.push_str("/>\n"),
    }
    for group in &report.crashes {
        let first_step = group.occurrences.iter().find_map(|o| o.step);
        let _ = writeln!(
            out,
            "    <testcase classname=\"{}.{}\" name=\"{}\" time=\"0\">",
            escape(&suite),
            group.kind,
            escape(&clean(&format!("{} [{}]", group.title(), group.signature)))
        );
        let _ = writeln!(
            out,
            "      <failure message=\"{}\" type=\"{}\">{}</failure>",
            escape(&clean(&format!(
                "{} x{} (first at step {})",
                group.title(),
                group.occurrences.len(),
                first_step.map_or("-".into(), |s| s.to_string())
            ))),
            escape(group.exception.as_deref().unwrap_or("ANR")),
            escape(&failure_text(group))
        );
        out.push_str("    </testcase>\n");
    }
    let _ = writeln!(
        out,
        "    <system-out>{}</system-out>",
        escape(&super::text::render(report))
    );
    out.push_str("    <system-err/>\n  </testsuite>\n</testsuites>\n");
    out
}

/// The schema's `timestamp`: ISO 8601 without a zone (`2026-01-01T12:00:00`).
fn timestamp(ts: &str) -> &str {
    let cut = ts.find(['.', 'Z', '+']).unwrap_or(ts.len());
    &ts[..cut]
}

/// `1. action (step N)` lines.
fn numbered(text: &mut String, steps: &[crate::crash::ReproStep]) {
    for (i, step) in steps.iter().enumerate() {
        let _ = writeln!(
            text,
            "{}. {} (step {})",
            i + 1,
            clean(&step.action),
            step.step
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_what_xml_forbids() {
        assert_eq!(escape("a<b>&\"c'\u{1}\n"), "a&lt;b&gt;&amp;&quot;c&apos;\n");
        assert_eq!(timestamp("2026-01-01T12:00:00.123Z"), "2026-01-01T12:00:00");
    }
}
