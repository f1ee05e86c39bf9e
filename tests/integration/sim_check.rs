//! `droid-sim --check MODEL`: walking every reachable screen as a tester would, on a bundled app,
//! a recorded one, and a model built to fail in each way the report names.

use serde::Deserialize;
use serde_json::json;

use crate::common::{droid, fixtures};

/// The JSON report, decoded strictly so that a field added or renamed is noticed here.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    app: String,
    package: String,
    screens_total: usize,
    reachable: usize,
    ceiling: usize,
    app_reachable: usize,
    app_ceiling: usize,
    screens: Vec<ScreenCheck>,
    failed_transitions: Vec<Failure>,
    inferred_moves: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScreenCheck {
    screen: String,
    package: String,
    reached: bool,
    path: Vec<Step>,
    reason: Option<Failure>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    transition: usize,
    from: String,
    action: String,
    target: Option<serde_json::Value>,
    to: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Failure {
    transition: Option<usize>,
    from: Option<String>,
    action: Option<String>,
    target: Option<serde_json::Value>,
    to: Option<String>,
    kind: String,
    detail: String,
    shown: Option<String>,
    matches: usize,
    point: Option<[i32; 2]>,
    handled_by: Option<String>,
    answered_by: Option<usize>,
}

fn check_json(app: &str) -> Report {
    let output = droid("droid-sim")
        .args(["--check", app, "--json"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn check_walks_every_screen_of_a_bundled_app() {
    let report = check_json("builtin:tiny");
    assert_eq!(report.app, "builtin:tiny");
    assert_eq!(report.package, "com.example.tiny");
    assert_eq!((report.reachable, report.ceiling), (9, 9));
    assert_eq!((report.app_reachable, report.app_ceiling), (9, 9));
    assert_eq!(report.screens_total, 9);
    assert!(report.failed_transitions.is_empty());
    assert_eq!(
        report.inferred_moves, 1,
        "typing into the results' search field"
    );
    assert_eq!(report.screens[0].screen, "home");
    assert!(
        report.screens[0].path.is_empty(),
        "the start screen needs no step"
    );
    for screen in &report.screens {
        assert!(screen.reached && screen.reason.is_none(), "{screen:?}");
        assert_eq!(screen.package, "com.example.tiny");
        let last = screen.path.last().map_or("home", |s| s.to.as_str());
        assert_eq!(last, screen.screen, "a path ends on its screen");
        for pair in screen.path.windows(2) {
            assert_eq!(pair[0].to, pair[1].from, "{:?}", screen.path);
        }
        if let Some(first) = screen.path.first() {
            assert_eq!(first.from, "home");
            assert!(!first.action.is_empty());
            assert!(first.target.is_some() || first.action != "click");
        }
    }
    let results = report
        .screens
        .iter()
        .find(|s| s.screen == "results")
        .unwrap();
    assert_eq!(results.path.len(), 2, "{:?}", results.path);
    assert_eq!(results.path[1].action, "input");
    assert!(results.path.iter().all(|s| s.transition < 100));
}

#[test]
fn check_finds_the_ceiling_of_a_recorded_app_and_prints_a_table() {
    droid::fixtures_or_skip!();
    let model = fixtures().join("apps/acrylic/model.json");
    let model = model.to_string_lossy();
    let report = check_json(&model);
    assert_eq!((report.reachable, report.ceiling), (14, 14));
    assert_eq!((report.app_reachable, report.app_ceiling), (10, 10));
    let others: Vec<&str> = report
        .screens
        .iter()
        .filter(|s| s.package != report.package)
        .map(|s| s.package.as_str())
        .collect();
    assert!(others.contains(&"com.android.documentsui"), "{others:?}");
    let output = droid("droid-sim")
        .args(["--check", &model])
        .output()
        .unwrap();
    assert!(output.status.success());
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.starts_with("anupam.acrylic ("), "{table}");
    assert!(table.contains("14 reachable from the start screen, 14 shown by the device"));
    assert!(table.contains("of the app's own package: 10 reachable, 10 shown"));
    assert_eq!(table.lines().filter(|l| l.contains("  yes  ")).count(), 14);
    assert!(
        output.stderr.is_empty(),
        "people's lines only when something is wrong"
    );
}

#[test]
fn every_screen_of_a_recorded_list_app_is_within_a_testers_reach() {
    droid::fixtures_or_skip!();
    // Rows with icons laid over their buttons, fields focused by a recorded tap, toolbars inside
    // the bounds of the list that scrolls under them: each cost screens before touches were
    // dispatched as Android does.
    let model = fixtures().join("apps/onelist/model.json");
    let report = check_json(&model.to_string_lossy());
    assert_eq!((report.app_reachable, report.app_ceiling), (53, 53));
    assert_eq!(report.ceiling, report.reachable);
}

#[test]
fn check_says_why_a_screen_was_not_shown_and_goes_around_what_fails() {
    let dir = tempfile::tempdir().unwrap();
    let model = json!({
        "package": "com.example.gaps", "screen_size": [1080, 1920], "start": "home",
        "screens": [
            {"id": "home", "elements": [
                {"class": "android.widget.Button", "text": "Pay", "clickable": true, "enabled": false,
                 "bounds": [0, 100, 500, 200]},
                {"class": "android.widget.Button", "text": "Redeem", "clickable": true,
                 "bounds": [0, 300, 500, 400]},
                {"class": "android.widget.Button", "text": "Long way", "clickable": true,
                 "bounds": [0, 500, 500, 600]},
                {"class": "android.widget.EditText", "resource_id": "com.example.gaps:id/code",
                 "bounds": [0, 700, 1000, 800]}]},
            {"id": "paid", "elements": []},
            {"id": "redeemed", "elements": []},
            {"id": "step", "elements": [
                {"class": "android.widget.Button", "text": "Next", "clickable": true,
                 "bounds": [0, 100, 500, 200]}]}
        ],
        "transitions": [
            {"from": "home", "action": "click", "target": {"text": "Pay"}, "to": "paid"},
            {"from": "home", "action": "click", "target": {"text": "Redeem"}, "to": "redeemed",
             "requires": {"com.example.gaps:id/code": "#[0-9a-f]{6}"}},
            {"from": "home", "action": "click", "target": {"text": "Long way"}, "to": "step"},
            {"from": "step", "action": "click", "target": {"text": "Next"}, "to": "paid"}
        ]
    });
    let path = dir.path().join("model.json");
    std::fs::write(&path, model.to_string()).unwrap();
    let report = check_json(&path.to_string_lossy());
    assert_eq!((report.reachable, report.ceiling), (4, 3));
    let by_id = |id: &str| report.screens.iter().find(|s| s.screen == id).unwrap();
    let paid = by_id("paid");
    assert!(paid.reached, "around the disabled button: {paid:?}");
    let via: Vec<usize> = paid.path.iter().map(|s| s.transition).collect();
    assert_eq!(via, [2, 3]);
    let redeemed = by_id("redeemed");
    assert!(!redeemed.reached);
    let reason = redeemed.reason.as_ref().unwrap();
    assert_eq!(reason.kind, "needs_text");
    assert_eq!(reason.transition, Some(1));
    assert!(reason.detail.contains("#[0-9a-f]{6}"), "{}", reason.detail);
    let disabled = &report.failed_transitions[0];
    assert_eq!(disabled.transition, Some(0));
    assert_eq!(disabled.kind, "did_not_fire");
    assert_eq!(disabled.shown.as_deref(), Some("home"));
    assert_eq!(disabled.matches, 1);
    assert_eq!(disabled.point, Some([250, 150]));
    assert_eq!(
        disabled.handled_by.as_deref(),
        Some(r#"Button "Pay" (disabled)"#)
    );
    assert_eq!(disabled.answered_by, None);
    assert_eq!(
        (disabled.from.as_deref(), disabled.to.as_deref()),
        (Some("home"), Some("paid"))
    );
    assert_eq!(disabled.action.as_deref(), Some("click"));
    assert!(disabled.target.is_some());
    assert_eq!(report.failed_transitions.len(), 2);
}

#[test]
fn check_takes_a_model_and_json_only_with_it() {
    let usage = droid("droid-sim").args(["--json"]).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let both = droid("droid-sim")
        .args(["--check", "builtin:tiny", "--app", "builtin:tiny"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
    let missing = droid("droid-sim")
        .args(["--check", "/nonexistent/model.json"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.starts_with("droid-sim: error: cannot check /nonexistent/model.json"),
        "{stderr}"
    );
    assert!(missing.stdout.is_empty());
}
