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
    let write = std::env::var_os("DROID_WRITE_DOCS").is_some();

    let generated = coverage_tables::for_docs(&figures);
    let path = root.join("docs/decide.md");
    let document = std::fs::read_to_string(&path).unwrap();
    let current = coverage_tables::current_in(&document)
        .expect("docs/decide.md has the coverage tables' markers");
    if write {
        let written = coverage_tables::replace_in(&document, &generated).unwrap();
        std::fs::write(&path, written).unwrap();
    } else {
        assert!(
            current == generated,
            "docs/decide.md's coverage tables differ from bench.json's: run `make docs`"
        );
    }

    let generated = coverage_tables::render(three_times);
    let path = root.join("BENCH.md");
    let mut document = std::fs::read_to_string(&path).unwrap();
    let tables = coverage_tables::bench_md_tables(&document)
        .expect("BENCH.md has a coverage section with the bench's tables");
    if write {
        document.replace_range(tables, &generated);
        std::fs::write(&path, document).unwrap();
    } else {
        assert!(
            document[tables] == generated,
            "BENCH.md's coverage tables differ from bench.json's: run `make docs`"
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
    let replaced = coverage_tables::replace_in(&document, &new).unwrap();
    assert_eq!(replaced, format!("before\n{new}\nafter\n"));
    assert_eq!(coverage_tables::current_in(&replaced), Some(new.as_str()));
    assert_eq!(coverage_tables::replace_in("no markers", &new), None);
}
