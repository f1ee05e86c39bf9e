//! The console summary: readable in 80 columns, text from the app sanitised.

use std::fmt::Write;

use super::data::{show, Report, Statistic};
use crate::terminal::clean;

/// Widest line.
pub const WIDTH: usize = 80;
/// Width of the label column.
const LABEL: usize = 12;

/// The summary of `report`.
pub fn render(report: &Report) -> String {
    let mut out = Summary::default();
    let run = &report.run;
    out.line(&format!("droid report: {}", run.run_id));
    out.line(&"=".repeat(WIDTH));
    let status = match (&run.reason, run.state == run.status) {
        (Some(reason), true) => format!("{} ({reason})", run.status),
        (Some(reason), false) => format!("{} ({}; {reason})", run.state, run.status),
        (None, true) => run.status.clone(),
        (None, false) => format!("{} ({})", run.state, run.status),
    };
    out.field("Status", &status);
    let mut app = run.app_package.clone();
    if let Some(version) = &run.app_version {
        app.push_str(&format!(" {version}"));
    }
    if let Some(start) = &run.start_activity {
        app.push_str(&format!(" (start: {start})"));
    }
    out.field("App", &app);
    out.field("Device", &run.device_line());
    let decider = match (&run.decider, &run.model) {
        (Some(d), Some(m)) => format!("{d} ({m})"),
        (Some(d), None) => d.clone(),
        (None, _) => "-".into(),
    };
    out.field("Decider", &decider);
    if let Some(of) = &run.replay_of {
        let purpose = run.replay_purpose.as_deref().unwrap_or("replay");
        out.field("Replay", &format!("of run {of} ({purpose})"));
    }
    out.field(
        "Time",
        &format!(
            "{} to {}, {}",
            run.start_time,
            run.end_time.as_deref().unwrap_or("(not ended)"),
            duration(run.duration_seconds)
        ),
    );
    out.blank();

    let s = |statistic: Statistic| show(report.stat(statistic));
    out.field(
        "Steps",
        &format!(
            "{} ({} ok, {} failed), {} ms per step",
            s(Statistic::TotalSteps),
            s(Statistic::SuccessfulSteps),
            s(Statistic::FailedSteps),
            s(Statistic::AvgStepDurationMs)
        ),
    );
    out.field(
        "Screens",
        &format!(
            "{} unique in {} visits, {} per minute, {} deep, {} activities",
            s(Statistic::UniqueScreensVisited),
            s(Statistic::TotalScreenVisits),
            s(Statistic::ScreensPerMinute),
            s(Statistic::DeepestNavigationDepth),
            s(Statistic::UniqueActivitiesVisited)
        ),
    );
    let c = &report.coverage;
    if c.screens_with_states > 0 {
        out.field(
            "States",
            &format!(
                "{} {} held in {} states, told apart by what actions did there",
                c.screens_with_states,
                if c.screens_with_states == 1 {
                    "screen"
                } else {
                    "screens"
                },
                c.states_told_apart
            ),
        );
    }
    out.field(
        "Coverage",
        &format!(
            "{} of {} widget actions tried ({:.0} %), {} screens with untried actions, {} transitions ({} distinct)",
            c.widget_actions_tried,
            c.widget_actions,
            c.action_coverage_percent,
            c.screens_with_unexplored_elements,
            s(Statistic::TransitionCount),
            s(Statistic::UniqueTransitions)
        ),
    );
    let mut actions = s(Statistic::ActionsByType);
    if report
        .stat(Statistic::FailedActionsByType)
        .as_object()
        .is_some_and(|m| !m.is_empty())
    {
        actions.push_str(&format!("; failed: {}", s(Statistic::FailedActionsByType)));
    }
    out.field("Actions", &actions);
    let calls = report.stat(Statistic::TotalAiCalls).as_i64().unwrap_or(0);
    let model = match calls {
        0 => "no model calls".to_string(),
        n => format!(
            "{n} calls, {} ms average ({} to {}), {} errors, {} timeouts, {} retries, {} tokens, \
             cost {} ({} per new screen)",
            s(Statistic::AvgAiResponseTimeMs),
            s(Statistic::MinAiResponseTimeMs),
            s(Statistic::MaxAiResponseTimeMs),
            s(Statistic::AiErrorCount),
            s(Statistic::AiTimeoutCount),
            s(Statistic::AiRetryCount),
            s(Statistic::TotalAiTokensUsed),
            s(Statistic::TotalAiCost),
            s(Statistic::AiCostPerNewScreen)
        ),
    };
    out.field("Model", &model);
    out.field(
        "Recovery",
        &format!(
            "crashes {}, relaunches {}, stuck {} (escaped {}), context lost {} (recovered {})",
            s(Statistic::AppCrashCount),
            s(Statistic::AppRelaunchCount),
            s(Statistic::StuckDetectionCount),
            s(Statistic::StuckRecoverySuccess),
            s(Statistic::ContextLossCount),
            s(Statistic::ContextRecoveryCount)
        ),
    );
    out.blank();

    for (kind, title) in [("crash", "Crashes"), ("anr", "ANRs")] {
        let groups: Vec<_> = report.groups(kind).collect();
        if groups.is_empty() {
            out.line(&format!("{title}: none"));
            continue;
        }
        out.line(&format!(
            "{title}: {} distinct, {} in all",
            groups.len(),
            report.occurrences(kind)
        ));
        for group in groups {
            let steps: Vec<String> = group
                .occurrences
                .iter()
                .filter_map(|o| o.step.map(|s| s.to_string()))
                .collect();
            out.wrapped(
                &format!("  {}x ", group.occurrences.len()),
                &clean(&group.title()),
            );
            out.wrapped(
                "       ",
                &format!(
                    "signature {}, at step {}",
                    group.signature,
                    if steps.is_empty() {
                        "-".into()
                    } else {
                        steps.join(", ")
                    }
                ),
            );
            for frame in &group.signature_frames {
                out.wrapped("       at ", &clean(frame));
            }
            if let Some(minimised) = &group.minimised {
                out.wrapped("       minimal path: ", &minimised.summary());
                for (i, step) in minimised.data.minimal_steps.iter().enumerate() {
                    out.wrapped(
                        &format!("       {:>3}. ", i + 1),
                        &format!("{} (step {})", clean(&step.action), step.step),
                    );
                }
                for (what, path) in &minimised.files {
                    out.line(&format!("       {what:<8} {}", path.display()));
                }
            }
        }
    }
    if !report.problems.is_empty() {
        out.blank();
        out.line("Problems");
        for p in report.problems.iter().take(20) {
            let step = p.step.map_or("-".into(), |s| s.to_string());
            out.wrapped(
                &format!("  step {step:<5} {:<8} ", p.kind),
                &clean(&p.message),
            );
        }
        if report.problems.len() > 20 {
            out.line(&format!("  ... {} more", report.problems.len() - 20));
        }
    }
    out.blank();
    out.line("Files");
    let a = &report.artifacts;
    let files = [
        ("database", Some(&a.database)),
        ("session", a.session_dir.as_ref()),
        ("screenshots", a.screenshots_dir.as_ref()),
        ("events", a.events.as_ref()),
        ("log", a.log.as_ref()),
    ];
    for (name, path) in files {
        if let Some(path) = path {
            out.path(name, path);
        }
    }
    for (name, paths) in a.integration_files() {
        for path in paths {
            out.path(name, path);
        }
    }
    for path in &a.reports {
        out.path("report", path);
    }
    out.text
}

/// `1 h 02 min`, `3 min 05 s`, `12.3 s`.
pub fn duration(seconds: f64) -> String {
    let whole = seconds.max(0.0).round() as u64;
    match whole {
        0..=59 => format!("{seconds:.1} s"),
        60..=3599 => format!("{} min {:02} s", whole / 60, whole % 60),
        _ => format!("{} h {:02} min", whole / 3600, whole % 3600 / 60),
    }
}

#[derive(Default)]
struct Summary {
    text: String,
}

impl Summary {
    fn line(&mut self, line: &str) {
        self.wrapped("", line);
    }

    fn blank(&mut self) {
        self.text.push('\n');
    }

    fn field(&mut self, label: &str, value: &str) {
        self.wrapped(&format!("{label:<LABEL$}"), &clean(value));
    }

    /// A file on one line however long, so that it can be copied whole.
    fn path(&mut self, name: &str, path: &std::path::Path) {
        let _ = writeln!(
            self.text,
            "  {name:<12}{}",
            clean(&path.display().to_string())
        );
    }

    /// `first` then `text` wrapped at word boundaries to [`WIDTH`], continuation lines indented
    /// as far as `first` is long.
    fn wrapped(&mut self, first: &str, text: &str) {
        let indent = first.chars().count();
        let room = WIDTH.saturating_sub(indent).max(20);
        let mut lines: Vec<String> = Vec::new();
        for paragraph in text.split('\n') {
            let mut current = String::new();
            for word in paragraph.split(' ') {
                let mut word = word.to_string();
                // A word longer than the room (a path, a class name) is cut.
                while word.chars().count() > room {
                    if !current.is_empty() {
                        lines.push(std::mem::take(&mut current));
                    }
                    let head: String = word.chars().take(room).collect();
                    word = word.chars().skip(room).collect();
                    lines.push(head);
                }
                let len = current.chars().count();
                if len > 0 && len + 1 + word.chars().count() > room {
                    lines.push(std::mem::take(&mut current));
                }
                if !current.is_empty() {
                    current.push(' ');
                }
                current.push_str(&word);
            }
            lines.push(current);
        }
        for (i, line) in lines.iter().enumerate() {
            let lead = if i == 0 {
                first.to_string()
            } else {
                " ".repeat(indent)
            };
            let _ = writeln!(self.text, "{}", format!("{lead}{line}").trim_end());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_and_lines_fit_in_80_columns() {
        let mut out = Summary::default();
        out.field("Files", &"x".repeat(200));
        out.wrapped("  2x ", &"word ".repeat(60));
        for line in out.text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line:?}");
        }
        assert_eq!(out.text.lines().count(), 3 + 4);
    }

    #[test]
    fn paths_are_never_cut() {
        let mut out = Summary::default();
        let long = format!("/tmp/{}/report.pdf", "session".repeat(20));
        out.path("report", std::path::Path::new(&long));
        assert_eq!(out.text, format!("  report      {long}\n"));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(185.0), "3 min 05 s");
        assert_eq!(duration(3720.0), "1 h 02 min");
    }
}
