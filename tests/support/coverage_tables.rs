//! The coverage tables, rendered from the figures the bench's `coverage` section keeps (its
//! sections in bench.json). The bench prints them with this code, and docs/decide.md holds the
//! same text between markers, and BENCH.md the 3 × tables in its `coverage` section:
//! `docs::coverage_tables_are_bench_json_s` checks both, and `make docs` (`DROID_WRITE_DOCS=1`)
//! rewrites them from bench.json.
// The bench renders; only the test reads and writes documents.
#![allow(dead_code)]

use serde_json::{Map, Value};

/// The bench.json section of a coverage run with `per_screen` × the ceiling's screens.
pub fn section_name(per_screen: u64) -> String {
    match per_screen {
        3 => "coverage".to_string(),
        n => format!("coverage_{n}x"),
    }
}

/// The line that opens the generated text in a document.
pub const BEGIN: &str =
    "<!-- coverage tables: generated from bench.json by `make docs`, not edited by hand -->";
/// The line that closes it.
pub const END: &str = "<!-- end of the coverage tables -->";

/// One decider's figures over the apps: each app's share of the ceiling, and each app's steps
/// that left the screen as it was (none from a run of an older bench).
#[derive(Default)]
struct OverApps {
    decider: String,
    shares: Vec<(String, f64)>,
    stills: Vec<f64>,
}

/// The tables of one coverage section: per app and decider, then per decider over the apps, then
/// the ceiling as droid's screen key tells it apart.
pub fn render(section: &Map<String, Value>) -> String {
    let get = |key: &str| section.get(key).unwrap_or(&Value::Null);
    let number = |key: &str| get(key).as_f64().unwrap_or(0.0);
    // A figure a run of an older bench did not keep.
    let launcher_trips = |key: &str| get(key).as_u64().map_or("–".into(), |n| n.to_string());
    let percent = |key: &str| get(key).as_f64().map_or("–".into(), |n| format!("{n:.0}%"));
    let strings = |key: &str| -> Vec<String> {
        get(key)
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let apps = strings("apps");
    let deciders = strings("deciders");
    let seeds = number("seeds") as u64;
    let mut out = String::new();
    out += &format!(
        "Budget {} × the ceiling's screens; seeds 0-{}.\n\n",
        number("per_screen"),
        seeds.saturating_sub(1)
    );
    out += &format!(
        "| app | ceiling | budget | decider | own screens reached, seeds 0-{} | mean | % of ceiling | ended explored | explored, a ceiling screen one move away | moves inferred per run | most trips to the launcher | most steps repeated | steps that left the screen as it was | model calls per new screen |\n",
        seeds.saturating_sub(1)
    );
    out += "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    let mut shares: Vec<OverApps> = Vec::new();
    for app in &apps {
        let ceiling = number(&format!("{app}.ceiling"));
        let budget = number(&format!("{app}.budget"));
        for decider in &deciders {
            let key = |field: &str| format!("{app}.{decider}.{field}");
            let reached: Vec<String> = get(&key("reached"))
                .as_array()
                .map(|l| l.iter().map(|n| n.to_string()).collect())
                .unwrap_or_default();
            let mean = number(&key("mean"));
            let share = 100.0 * mean / ceiling.max(1.0);
            let short = get(&key("explored_one_move_short"))
                .as_array()
                .map_or(0, Vec::len);
            out += &format!(
                "| {app} | {ceiling} | {budget} | {decider} | {} | {mean:.1} | {share:.1}% | {} of {seeds} | {short} | {:.1} | {} | {} | {} | {:.1} |\n",
                reached.join(" "),
                number(&key("ended_explored")),
                number(&key("inferred_per_run")),
                launcher_trips(&key("most_launcher_trips")),
                number(&key("most_steps_repeated")),
                percent(&key("steps_still_percent")),
                number(&key("model_calls_per_new_screen")),
            );
            let still = get(&key("steps_still_percent")).as_f64();
            if !shares.iter().any(|row| &row.decider == decider) {
                shares.push(OverApps {
                    decider: decider.clone(),
                    ..OverApps::default()
                });
            }
            if let Some(row) = shares.iter_mut().find(|row| &row.decider == decider) {
                row.shares.push((app.clone(), share));
                row.stills.extend(still);
            }
        }
    }
    out +=
        "\nOver the apps, per decider: the mean share of the ceiling reached, the lowest, and the \
         mean share of steps that left the screen as it was:\n\n";
    out += "| decider | mean % of ceiling | lowest app | steps that left the screen as it was |\n\
            |---|---:|---|---:|\n";
    for OverApps {
        decider,
        shares: list,
        stills,
    } in &shares
    {
        let mean = list.iter().map(|(_, s)| s).sum::<f64>() / list.len().max(1) as f64;
        let (lowest, low) = list
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .cloned()
            .unwrap_or_default();
        let still = match stills.len() == list.len() {
            true => format!("{:.0}%", stills.iter().sum::<f64>() / stills.len() as f64),
            false => "–".to_string(),
        };
        out += &format!("| {decider} | {mean:.1}% | {lowest} ({low:.1}%) | {still} |\n");
    }
    out += "\nThe ceiling's screens as droid tells them apart: model screens whose dumps give one \
            screen key (a details page showing another product, a form with text typed, the same \
            settings page scrolled by a few pixels) are one screen to droid's screen key; each \
            decider's mean number of the ceiling's keys its seeds reached:\n\n";
    out += &format!(
        "| app | ceiling | told apart | {} |\n|---|---:|---:|{}\n",
        deciders.join(" | "),
        "---:|".repeat(deciders.len())
    );
    for app in &apps {
        let keys = number(&format!("{app}.told_apart"));
        let cells: Vec<String> = deciders
            .iter()
            .map(|d| {
                let mean = number(&format!("{app}.{d}.told_apart_mean"));
                format!("{mean:.1} ({:.0}%)", 100.0 * mean / keys.max(1.0))
            })
            .collect();
        out += &format!(
            "| {app} | {} | {keys} | {} |\n",
            number(&format!("{app}.ceiling")),
            cells.join(" | ")
        );
    }
    out
}

/// The generated text for a document: each coverage section of `figures` (bench.json), the
/// 3 × budget first, between [`BEGIN`] and [`END`].
pub fn for_docs(figures: &Map<String, Value>) -> String {
    let mut sections: Vec<(u64, &Map<String, Value>)> = figures
        .iter()
        .filter(|(name, _)| name.starts_with("coverage"))
        .filter_map(|(_, v)| v.as_object())
        .map(|s| (s.get("per_screen").and_then(Value::as_u64).unwrap_or(0), s))
        .collect();
    sections.sort_by_key(|(per_screen, _)| *per_screen);
    let mut out = format!("{BEGIN}\n");
    for (per_screen, section) in sections {
        out += &format!(
            "\n`{}` in bench.json (`PER_SCREEN={per_screen}`):\n\n",
            section_name(per_screen)
        );
        out += &render(section);
    }
    out + "\n" + END
}

/// Where `document` holds its generated text, markers included; `None` without them.
pub fn marked(document: &str) -> Option<std::ops::Range<usize>> {
    let start = document.find(BEGIN)?;
    let end = document[start..].find(END)? + start + END.len();
    Some(start..end)
}

/// Where BENCH.md's `coverage` section holds the 3 × tables (what the bench printed: from the
/// section's heading to the paragraph on what each app asks); `None` without them.
pub fn bench_md_tables(document: &str) -> Option<std::ops::Range<usize>> {
    const HEADING: &str = "\n## coverage\n\n";
    const AFTER: &str = "\nWhat each app asks";
    let start = document.find(HEADING)? + HEADING.len();
    let end = document[start..].find(AFTER)? + start;
    Some(start..end)
}
