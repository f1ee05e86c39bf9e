//! droid-capture's device form against droid-sim.

use std::path::Path;

use serde_json::Value;

use super::common::{droid, fixtures};
use super::device::{SimProc, NOTES_MAIN, NOTES_PACKAGE};

fn capture(sim: &SimProc, extra: &[&str]) -> Vec<Value> {
    let out = droid("droid-capture")
        .args(sim.flags())
        .arg("--out")
        .arg(sim.dir.path().join("shots"))
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_capture_of_the_notes_app_is_its_start_screen() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    let observations = capture(&sim, &["--run", "run-7"]);
    assert_eq!(observations.len(), 1);
    let o = &observations[0];
    assert_eq!(o["type"], "observation");
    assert_eq!(o["v"], 1);
    assert_eq!(o["run_id"], "run-7");
    assert_eq!(o["device"], sim.serial.as_str());
    assert_eq!(o["package"], NOTES_PACKAGE);
    assert_eq!(o["activity"], NOTES_MAIN);
    assert_eq!(o["screen_size"], serde_json::json!([1080, 2280]));
    assert_eq!(
        o["device_info"]["screen_size"],
        serde_json::json!([1080, 2280])
    );
    assert_eq!(o["flags"]["secure"], false);

    // The elements are exactly those of the start screen's recorded hierarchy.
    let expected = droid::ui::parse(
        &std::fs::read_to_string(fixtures().join("apps/notes/screens/s001.xml")).unwrap(),
    )
    .unwrap();
    let elements = o["elements"].as_array().unwrap();
    assert_eq!(elements.len(), expected.len());
    for (got, want) in elements.iter().zip(&expected) {
        assert_eq!(got["bounds"], serde_json::to_value(want.bounds).unwrap());
        assert_eq!(got["text"], want.text.as_str());
        assert_eq!(got["resource_id"], want.resource_id.as_str());
    }
    assert!(o["tree"].as_str().unwrap().contains("[ref=1]"));

    // The files are saved and readable; timings name every part.
    let xml = std::fs::read_to_string(o["xml_path"].as_str().unwrap()).unwrap();
    assert_eq!(droid::ui::parse(&xml).unwrap(), expected);
    let shot = o["screenshot_path"].as_str().unwrap();
    assert!(Path::new(shot).starts_with(sim.dir.path().join("shots")));
    let image = image::open(shot).unwrap();
    assert_eq!((image.width(), image.height()), (1080, 2280));
    for part in ["dump", "screenshot", "foreground", "parse", "total"] {
        assert!(
            o["timings"][part].is_number(),
            "timings.{part}: {}",
            o["timings"]
        );
    }
}

#[test]
fn count_interval_and_no_screenshot() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    let observations = capture(
        &sim,
        &[
            "--count",
            "3",
            "--interval",
            "10",
            "--step",
            "4",
            "--no-screenshot",
        ],
    );
    assert_eq!(observations.len(), 3);
    let steps: Vec<u64> = observations
        .iter()
        .map(|o| o["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [4, 5, 6]);
    assert!(observations
        .iter()
        .all(|o| o.get("screenshot_path").is_none()));
    assert!(observations
        .iter()
        .all(|o| o["timings"].get("screenshot").is_none()));
    let paths: std::collections::HashSet<&str> = observations
        .iter()
        .map(|o| o["xml_path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 3, "each capture keeps its own dump file");
}

#[test]
fn an_unreachable_server_is_a_clear_error_and_exit_one() {
    // Loopback but not localhost/127.0.0.1: droid does not try to start an adb server there.
    let out = droid("droid-capture")
        .args(["--adb-host", "127.0.0.2", "--adb-port", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("droid-capture: error: connecting to the device: ADB server not reachable at 127.0.0.2:1"),
        "{stderr}"
    );
}

#[test]
fn a_device_that_blinks_is_waited_for_and_every_capture_succeeds() {
    droid::fixtures_or_skip!();
    // Every 5 device commands the device vanishes for 0.3 s; one capture needs about seven.
    let sim = SimProc::notes(&["--fault", "disconnect-after:5:0.3"]);
    let observations = capture(&sim, &["--count", "4"]);
    assert_eq!(observations.len(), 4);
    assert!(observations.iter().all(|o| o["package"] == NOTES_PACKAGE));
}

#[test]
fn a_device_that_stays_away_fails_after_the_wait_with_a_clear_error() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&["--fault", "disconnect-after:3:60"]);
    let out = droid("droid-capture")
        .args(sim.flags())
        .args(["--wait-for-device", "0.5", "--count", "3", "--out"])
        .arg(sim.dir.path().join("shots"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "device {} did not come back within 0.5s",
            sim.serial
        )),
        "{stderr}"
    );
}
