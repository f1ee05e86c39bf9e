//! The wire format's documentation stays true to the code.

use crate::common::root;

/// `docs/events.schema.json` is generated from the types; regenerate with `make schema`.
#[test]
fn schema_is_current() {
    let generated = serde_json::to_string_pretty(&droid::events::json_schema()).unwrap() + "\n";
    let path = root().join("docs/events.schema.json");
    if std::env::var_os("DROID_WRITE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/events.schema.json is stale: run `make schema` and commit it"
    );
}

/// Every event type named in the schema is documented in docs/events.md.
#[test]
fn events_md_documents_every_type() {
    let doc = std::fs::read_to_string(root().join("docs/events.md")).unwrap();
    for kind in droid::events::EVENT_TYPES {
        assert!(
            doc.contains(&format!("## `{kind}`")),
            "docs/events.md lacks a section for {kind}"
        );
    }
}
