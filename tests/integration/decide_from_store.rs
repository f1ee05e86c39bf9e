//! A one-shot droid-decide per step learns the exploration so far from crawler.db: the loop
//! `capture | hash | decide --db --run | act | record --db` run step by step against droid-sim.

use std::path::Path;

use serde_json::Value;

use super::common::{droid, feed};
use super::device::{SimProc, NOTES_PACKAGE};

const RUN: &str = "loop-run";

/// Runs one binary of the loop on `input` and returns its stdout.
fn stage(name: &str, args: &[String], input: &str) -> String {
    let out = feed(droid(name).args(args), input);
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// The observation of one step: capture | hash.
fn observe(sim: &SimProc, step: u32) -> String {
    let mut capture = sim.flags();
    capture.extend(strings(&[
        "--run",
        RUN,
        "--step",
        &step.to_string(),
        "--out",
    ]));
    capture.push(sim.dir.path().display().to_string());
    let captured = stage("droid-capture", &capture, "");
    stage("droid-hash", &[], &captured)
}

/// decide (learning from `db` when given) on an observation; returns the output and the
/// decision's actions.
fn decide(observation: &str, db: Option<&Path>) -> (String, Value) {
    let mut args = strings(&["--package", NOTES_PACKAGE]);
    if let Some(db) = db {
        args.extend(strings(&["--db", &db.display().to_string(), "--run", RUN]));
    }
    let out = stage("droid-decide", &args, observation);
    let decision = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "decision")
        .expect("a decision");
    (out, decision["actions"].clone())
}

/// One whole step: observe | decide --db --run | act | record --db. Returns the actions decided.
fn step(sim: &SimProc, db: &Path, number: u32) -> Value {
    let observation = observe(sim, number);
    let (decided, actions) = decide(&observation, Some(db));
    let mut act = sim.flags();
    act.extend(strings(&["--pause-ms", "0"]));
    let acted = stage("droid-act", &act, &decided);
    stage(
        "droid-record",
        &strings(&["--db", &db.display().to_string()]),
        &acted,
    );
    actions
}

/// What an action targets, for comparing decisions across processes.
fn targets(actions: &Value) -> Vec<(String, String)> {
    actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["action"].as_str().unwrap_or_default().to_string(),
                a["target_bounding_box"].to_string(),
            )
        })
        .collect()
}

#[test]
fn a_one_shot_decide_learns_the_tried_actions_from_crawler_db() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crawler.db");
    let first = step(&sim, &db, 1);
    // Come back to the start screen, so step 2 decides on the screen step 1 acted on.
    if sim.screens().last().map(String::as_str) != Some("s001") {
        let mut back = sim.flags();
        back.push("back".into());
        stage("droid-act", &back, "");
    }
    assert_eq!(sim.screens().last().map(String::as_str), Some("s001"));
    let observation = observe(&sim, 2);
    // Without the database a fresh decide repeats step 1's choice; with it, it moves on.
    let (_, forgetful) = decide(&observation, None);
    assert_eq!(targets(&forgetful), targets(&first));
    let (_, informed) = decide(&observation, Some(&db));
    assert!(
        targets(&informed)
            .iter()
            .all(|target| !targets(&first).contains(target)),
        "step 1 tried {first}, step 2 chose {informed}"
    );
    // And the second step goes through the whole loop too.
    let second = step(&sim, &db, 2);
    assert_eq!(targets(&second), targets(&informed));
}
