//! The screen graph in Graphviz DOT: screens as boxes (name, visits), transitions as edges
//! labelled with the action and how often it was taken, crashes and ANRs as red octagons
//! hanging off the screen they happened on. `dot -Tsvg report.dot > graph.svg` draws it.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::Report;
use crate::terminal::clean;

/// A DOT string literal.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in clean(text).chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let run = &report.run;
    let _ = writeln!(out, "digraph droid {{");
    let _ = writeln!(
        out,
        "  graph [rankdir=LR, label={}, labelloc=t, fontname=\"sans-serif\"];",
        quoted(&format!(
            "{} - run {} ({}), {} screens, {} steps",
            run.app_package,
            run.run_id,
            run.state,
            report.screens.len(),
            report.steps.len()
        ))
    );
    let _ = writeln!(
        out,
        "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", fontname=\"sans-serif\"];"
    );
    let _ = writeln!(out, "  edge [fontname=\"sans-serif\", fontsize=10];");
    for screen in &report.screens {
        let label = format!(
            "{}\n{} visit{}",
            screen.name,
            screen.visits,
            if screen.visits == 1 { "" } else { "s" }
        );
        let _ = writeln!(
            out,
            "  s{} [label={}, tooltip={}];",
            screen.id,
            quoted(&label),
            quoted(screen.activity.as_deref().unwrap_or(&screen.key))
        );
    }
    // One edge per (from, to): its actions and counts in the label.
    let mut edges: BTreeMap<(i64, i64), Vec<String>> = BTreeMap::new();
    for t in &report.transitions {
        edges
            .entry((t.from, t.to))
            .or_default()
            .push(format!("{} x{}", t.action_type, t.count));
    }
    for ((from, to), actions) in edges {
        let _ = writeln!(
            out,
            "  s{from} -> s{to} [label={}];",
            quoted(&actions.join("\n"))
        );
    }
    for (i, group) in report.crashes.iter().enumerate() {
        let _ = writeln!(
            out,
            "  c{i} [shape=octagon, fillcolor=\"#fbe3e3\", color=\"#b00020\", label={}];",
            quoted(&format!(
                "{}\n{}x, signature {}",
                group.title(),
                group.occurrences.len(),
                group.signature
            ))
        );
        let mut screens: Vec<i64> = group
            .occurrences
            .iter()
            .filter_map(|o| o.step)
            .filter_map(|step| report.steps.iter().find(|s| s.step == step))
            .map(|s| s.screen_id)
            .collect();
        screens.sort_unstable();
        screens.dedup();
        for screen in screens {
            let _ = writeln!(
                out,
                "  s{screen} -> c{i} [color=\"#b00020\", style=dashed];"
            );
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        assert_eq!(quoted("a \"b\"\\c\nd\u{1b}"), "\"a \\\"b\\\"\\\\c\\nd\"");
    }
}
