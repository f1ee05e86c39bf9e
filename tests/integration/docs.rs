//! Figures the docs copy from bench.json are generated, not kept by hand.

use crate::coverage_tables;

/// docs/decide.md's coverage tables, and the 3 × tables in BENCH.md's coverage section, are
/// what bench.json's coverage sections render to; `make docs` (`DROID_WRITE_DOCS=1`) writes
/// them after `make coverage` or `make bench`.
#[test]
fn coverage_tables_are_bench_json_s() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let figures: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(root.join("bench.json")).unwrap())
            .expect("bench.json is a JSON object");
    let three_times = figures
        .get("coverage")
        .and_then(serde_json::Value::as_object)
        .expect("bench.json has a coverage section");
    in_step(
        &root.join("docs/decide.md"),
        coverage_tables::marked,
        &coverage_tables::for_docs(&figures),
    );
    in_step(
        &root.join("BENCH.md"),
        coverage_tables::bench_md_tables,
        &coverage_tables::render(three_times),
    );
}

/// Checks that the part of the document at `path` that `place` finds is `generated`, or with
/// `DROID_WRITE_DOCS` set writes it there.
fn in_step(
    path: &std::path::Path,
    place: fn(&str) -> Option<std::ops::Range<usize>>,
    generated: &str,
) {
    let mut document = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    let range =
        place(&document).unwrap_or_else(|| panic!("{name} has no place for the coverage tables"));
    if std::env::var_os("DROID_WRITE_DOCS").is_some() {
        document.replace_range(range, generated);
        std::fs::write(path, document).unwrap();
    } else {
        assert!(
            document[range] == *generated,
            "{name}'s coverage tables differ from bench.json's: run `make docs`"
        );
    }
}

#[test]
fn the_markers_bound_what_is_replaced() {
    let document = format!(
        "before\n{}\nold\n{}\nafter\n",
        coverage_tables::BEGIN,
        coverage_tables::END
    );
    let new = format!("{}\nnew\n{}", coverage_tables::BEGIN, coverage_tables::END);
    let mut replaced = document.clone();
    replaced.replace_range(coverage_tables::marked(&document).unwrap(), &new);
    assert_eq!(replaced, format!("before\n{new}\nafter\n"));
    let range = coverage_tables::marked(&replaced).unwrap();
    assert_eq!(&replaced[range], new);
    assert_eq!(coverage_tables::marked("no markers"), None);
}

#[test]
fn benchs_tables_lie_between_the_heading_and_what_apps_ask() {
    let document = "## decide\n\nx\n\n## coverage\n\nBudget\n| t |\n\nWhat each app asks: y\n";
    let range = coverage_tables::bench_md_tables(document).unwrap();
    assert_eq!(&document[range], "Budget\n| t |\n");
    assert_eq!(
        coverage_tables::bench_md_tables("## coverage\n\nno paragraph"),
        None
    );
}
