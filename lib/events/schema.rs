//! The JSON Schema of the event lines, generated from the types (`make schema` writes it to
//! `docs/events.schema.json`).

use serde_json::{Map, Value};

use super::{
    ActionResult, Decision, Note, Observation, RunEnded, RunStarted, EVENT_TYPES, WIRE_VERSION,
};

/// The JSON Schema of every line type, generated from the event types (`docs/events.schema.json`).
pub fn json_schema() -> Value {
    let mut variants = Vec::new();
    let mut definitions = Map::new();
    for kind in EVENT_TYPES {
        let schema = match kind {
            "run_started" => schemars::schema_for!(RunStarted),
            "run_ended" => schemars::schema_for!(RunEnded),
            "observation" => schemars::schema_for!(Observation),
            "decision" => schemars::schema_for!(Decision),
            "result" => schemars::schema_for!(ActionResult),
            _ => schemars::schema_for!(Note),
        };
        let mut schema = schema.to_value();
        if let Some(object) = schema.as_object_mut() {
            object.remove("$schema");
            if let Some(Value::Object(defs)) = object.remove("$defs") {
                definitions.extend(defs);
            }
            let properties = object
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(properties) = properties.as_object_mut() {
                properties.insert("type".into(), serde_json::json!({ "const": kind }));
                properties.insert("v".into(), serde_json::json!({ "const": WIRE_VERSION }));
            }
            let required = object
                .entry("required")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Some(required) = required.as_array_mut() {
                required.insert(0, Value::from("v"));
                required.insert(0, Value::from("type"));
            }
        }
        variants.push(schema);
    }
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "droid event line",
        "description": "One line of droid's event stream (wire version 1). Generated from lib/events.rs; do not edit by hand.",
        "oneOf": variants,
        "$defs": definitions,
    })
}
