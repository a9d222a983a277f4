//! The checked-in JSON Schema equals the one generated from the Rust types.
//! Regenerate with `UPDATE_GOLDEN=1 cargo test -p planner-core --test report_schema`.

use std::path::PathBuf;

#[test]
fn checked_in_schema_matches_generated() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schemas/report.schema.json");
    let generated = planner_core::edges::report::report_json_schema();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &generated).expect("write schemas/report.schema.json");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "schemas/report.schema.json is stale: run UPDATE_GOLDEN=1 cargo test -p planner-core --test report_schema"
    );
}

#[test]
fn schema_names_every_section_and_requires_the_version() {
    let schema: serde_json::Value =
        serde_json::from_str(&planner_core::edges::report::report_json_schema())
            .expect("schema is JSON");
    let required = schema["required"].as_array().expect("required list");
    for field in [
        "schema_version",
        "environment",
        "collectives",
        "gemms",
        "memory_bandwidth",
        "layer_steps",
        "notes",
        "complete",
    ] {
        assert!(required.iter().any(|r| r == field), "{field} not required");
    }
}
