//! The example scenario files are the serialized presets; `UPDATE_GOLDEN=1` rewrites them.

mod common;
use common::repo_root;

use planner_core::resolve::presets::article_mesh_scenario;

#[test]
fn article_mesh_example_matches_the_preset() {
    let path = repo_root().join("examples/article-70b-mesh.json");
    let want = serde_json::to_string_pretty(&article_mesh_scenario()).unwrap() + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let got = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_GOLDEN=1 to create it)",
            path.display()
        )
    });
    assert_eq!(
        got,
        want,
        "{} drifted from article_mesh_scenario(); rerun with UPDATE_GOLDEN=1",
        path.display()
    );
}
