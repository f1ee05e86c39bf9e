//! droid-crawl end to end, against droid-sim (in-process with `--sim`, or a simulator process
//! when the test needs to kill things): exploring, crashes, ANRs, other apps, secure screens,
//! faults, control from another process, signals, and a stage replaced by a program.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::droid;

/// A crawl's folder: crawler.db and the session folders under `out`.
struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        Place {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("crawler.db")
    }

    fn crawl(&self, args: &[&str]) -> Command {
        let mut cmd = droid("droid-crawl");
        cmd.args(["--db", &self.db().display().to_string()])
            .args(["--out", &self.dir.path().join("out").display().to_string()])
            .args(["--pause-ms", "0", "--report", "none"])
            .args(args);
        cmd
    }

    /// A crawl of `sim` with `args`, run to its end.
    fn run(&self, sim: &str, args: &[&str]) -> Output {
        self.crawl(&["--sim", sim]).args(args).output().unwrap()
    }

    /// A crawl of `sim` for at most `max_steps` that must end cleanly, with the simulator's truth
    /// log: its events, its stderr, and the reachable model screens the device never showed.
    fn explore(&self, sim: &str, max_steps: &str) -> (Vec<Value>, String, Vec<String>) {
        let truth = self.dir.path().join("truth.jsonl");
        let truth_arg = truth.display().to_string();
        let output = self.run(
            sim,
            &["--max-steps", max_steps, "--sim-truth-log", &truth_arg],
        );
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        let (_, reachable, _) = crate::explore::model_facts(sim);
        let missed = reachable.difference(&shown(&truth)).cloned().collect();
        (events(&output), stderr, missed)
    }

    fn sql(&self, query: &str) -> Vec<Vec<Value>> {
        let conn = rusqlite::Connection::open(self.db()).unwrap();
        let mut stmt = conn.prepare(query).unwrap();
        let columns = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..columns)
                    .map(|i| {
                        Ok(match r.get::<_, rusqlite::types::Value>(i)? {
                            rusqlite::types::Value::Integer(n) => Value::from(n),
                            rusqlite::types::Value::Real(f) => Value::from(f),
                            rusqlite::types::Value::Text(t) => Value::from(t),
                            _ => Value::Null,
                        })
                    })
                    .collect()
            })
            .unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    }
}

/// The events a crawl wrote on stdout.
fn events(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn notes<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "note" && e["kind"] == kind)
        .collect()
}

fn ended(events: &[Value]) -> &Value {
    events
        .iter()
        .rfind(|e| e["type"] == "run_ended")
        .expect("a run_ended")
}

/// The model screens a truth log says the device showed.
fn shown(truth: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(truth)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["screen"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_shop_is_explored_whole_its_crash_recorded_and_the_browser_left() {
    let place = Place::new();
    let (events, stderr, missed) = place.explore("builtin:shop", "92");
    assert_eq!(ended(&events)["status"], "COMPLETED");
    assert_eq!(ended(&events)["reason"], "max_steps");
    // Every screen of the model (the app's 23, and the browser and launcher it passes).
    assert!(missed.is_empty(), "missed {missed:?}");

    // The crash: its trace, the steps to reproduce it, the screenshot, and a relaunch.
    let crash = notes(&events, "crash")[0];
    let data = &crash["data"];
    assert!(data["stack_trace"]
        .as_str()
        .unwrap()
        .contains("FATAL EXCEPTION"));
    assert_eq!(data["exception"], "java.lang.IllegalStateException");
    assert!(!data["repro_steps"].as_array().unwrap().is_empty());
    assert!(Path::new(data["screenshot_path"].as_str().unwrap()).is_file());
    assert_eq!(data["signature"].as_str().unwrap().len(), 16);
    let relaunched = events.iter().any(|e| {
        e["type"] == "decision" && e["decider"] == "droid-crawl" && e["relaunch"].is_string()
    });
    assert!(relaunched, "a relaunch after the crash");
    // The external link: another app in front, then back in the app.
    let losses = notes(&events, "context_loss");
    assert!(losses
        .iter()
        .any(|n| n["data"]["package"] == "com.android.chrome"));
    assert!(losses.iter().any(|n| n["data"]["recovered"] == true));
    // Each loss counts once however many steps it lasted.
    let began = losses
        .iter()
        .filter(|n| n["data"]["detected_at"].is_null())
        .count();
    let back = losses
        .iter()
        .filter(|n| n["data"]["recovered"] == true)
        .count();
    let flat = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("context lost {began} (recovered {back})")),
        "{stderr}"
    );
    // What stdout carried is what crawler.db and the session folder hold.
    let run = ended(&events)["run_id"].as_str().unwrap();
    let stats =
        place.sql("SELECT app_crash_count, unique_screens_visited, total_steps FROM run_stats");
    assert_eq!(stats[0][0], 1);
    assert_eq!(stats[0][2], 92);
    // A stuck screen is one detection note, and one more when the crawl gets away from it.
    let stuck = notes(&events, "stuck");
    let recovered = stuck
        .iter()
        .filter(|n| n["data"]["recovered"] == true)
        .count();
    let counted = place.sql("SELECT stuck_detection_count, stuck_recovery_success FROM run_stats");
    let detected = stuck
        .iter()
        .filter(|n| n["data"]["detected_at"].is_null())
        .count();
    assert_eq!(counted[0][0], detected as i64);
    assert_eq!(counted[0][1], recovered as i64);
    let session = PathBuf::from(ended(&events)["session_dir"].as_str().unwrap());
    let logged = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    assert_eq!(logged.lines().count(), events.len());
    assert!(session.join("logs/crawler.log").is_file());
    assert!(session.join("screenshots/step_001.png").is_file());
    assert!(
        stderr.contains(run) && stderr.contains("Crashes: 1 distinct"),
        "{stderr}"
    );
}

#[test]
fn a_crawl_ends_once_everything_it_found_is_explored() {
    let place = Place::new();
    let (events, _, missed) = place.explore("builtin:tiny", "200");
    let end = ended(&events);
    assert_eq!(
        (end["status"].as_str(), end["reason"].as_str()),
        (Some("COMPLETED"), Some("explored")),
        "{end}"
    );
    let steps = end["steps"].as_u64().unwrap();
    assert!(steps < 200, "{steps} steps");
    // Every screen was shown before it ended.
    assert!(missed.is_empty(), "missed {missed:?}");
    // The last decision found every action of every state tried, and relaunched with every
    // route open again; the end says how much that was.
    let reasons: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "decision")
        .filter_map(|e| e["actions"][0]["reasoning"].as_str())
        .collect();
    let last = reasons.last().copied().unwrap_or_default();
    assert!(
        last.starts_with("everything the exploration found is explored: "),
        "{reasons:?}"
    );
    let state = notes(&events, "state");
    assert!(
        state.iter().any(|n| n["message"].as_str().is_some_and(|m| m
            .contains("everything the exploration found is explored: every action of its ")
            && m.contains(" states tried ("))),
        "{state:?}"
    );
}

/// A file manager in two states its screens do not show: a settings check box shows hidden
/// files, and only the file list reached by back from the settings page in that state leads to
/// the hidden folder. The main screen and the settings page look the same in both states, so an
/// action tried in one counts as tried in the other.
fn hidden_state_model() -> Value {
    const PACKAGE: &str = "com.example.hidden";
    let main_screen = |id: &str| {
        json!({"id": id, "activity": format!("{PACKAGE}.MainActivity"), "elements": [
            {"class": "android.widget.TextView", "text": "Documents", "clickable": true,
             "resource_id": format!("{PACKAGE}:id/item_name"), "bounds": [0, 300, 1080, 420]},
            {"class": "android.widget.ImageButton", "content_desc": "Settings", "clickable": true,
             "bounds": [960, 60, 1080, 180]}
        ]})
    };
    let settings = |id: &str, checked: bool| {
        json!({"id": id, "activity": format!("{PACKAGE}.SettingsActivity"), "elements": [
            {"class": "android.widget.CheckBox", "text": "Show hidden files", "checkable": true,
             "checked": checked, "clickable": true,
             "resource_id": format!("{PACKAGE}:id/show_hidden"), "bounds": [0, 300, 1080, 420]}
        ]})
    };
    let folder = |id: &str, rows: &[&str]| {
        let rows: Vec<Value> = (0..)
            .zip(rows)
            .map(|(i, row)| {
                json!({"class": "android.widget.TextView", "text": row,
                       "bounds": [0, 300 + 120 * i, 1080, 420 + 120 * i]})
            })
            .collect();
        json!({"id": id, "activity": format!("{PACKAGE}.FolderActivity"), "elements": rows})
    };
    let click = |from: &str, target: Value, to: &str| json!({"from": from, "action": "click", "target": target, "to": to});
    let back = |from: &str, to: &str| json!({"from": from, "action": "back", "to": to});
    let documents = json!({"text": "Documents"});
    let gear = json!({"content_desc": "Settings"});
    let check_box = json!({"text": "Show hidden files"});
    json!({
        "package": PACKAGE, "screen_size": [1080, 1920], "start": "main",
        "screens": [
            main_screen("main"),
            main_screen("main_hidden"),
            settings("settings", false),
            settings("settings_hidden", true),
            folder("documents", &["report.txt"]),
            folder("documents_hidden", &["report.txt", ".secret", "notes.txt"])
        ],
        "transitions": [
            click("main", documents.clone(), "documents"),
            click("main", gear.clone(), "settings"),
            back("documents", "main"),
            click("settings", check_box.clone(), "settings_hidden"),
            click("settings_hidden", check_box, "settings"),
            back("settings", "main"),
            back("settings_hidden", "main_hidden"),
            click("main_hidden", documents, "documents_hidden"),
            click("main_hidden", gear, "settings_hidden"),
            back("documents_hidden", "main_hidden"),
            back("main", "@external:com.android.launcher3"),
            back("main_hidden", "@external:com.android.launcher3")
        ]
    })
}

/// What a pass over everything found leaves out, a state of the app its screens do not show
/// (a setting changed elsewhere), another pass finds: it changes the app's toggles first and
/// tries every other action once more in that state, and the crawl ends `explored` only after a
/// pass that found nothing new.
#[test]
fn a_pass_that_found_something_is_followed_by_another_until_one_finds_nothing() {
    let place = Place::new();
    let model = place.dir.path().join("hidden.json");
    std::fs::write(&model, hidden_state_model().to_string()).unwrap();
    let model = model.display().to_string();
    let mut found_by_a_later_pass = 0;
    for seed in ["0", "1", "2", "3"] {
        let truth = place.dir.path().join(format!("truth-{seed}.jsonl"));
        let output = place.run(
            &model,
            &[
                "--max-steps",
                "200",
                "--seed",
                seed,
                "--sim-truth-log",
                &truth.display().to_string(),
            ],
        );
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        let events = events(&output);
        let end = ended(&events);
        assert_eq!(end["reason"], "explored", "seed {seed}: {end}");
        // Every screen of the app was shown, the hidden folder too.
        let (_, reachable, _) = crate::explore::model_facts(&model);
        let missed: Vec<String> = reachable.difference(&shown(&truth)).cloned().collect();
        assert!(missed.is_empty(), "seed {seed} missed {missed:?}");
        // Each pass that found something, or left something out of reach, began another from
        // the launch screen; the last found nothing, and the end says how many there were.
        let begins = |e: &&Value| {
            e["type"] == "decision"
                && e["actions"][0]["reasoning"]
                    .as_str()
                    .is_some_and(|r| r.contains(droid::decide::heuristic::NEW_PASS))
        };
        let passes: Vec<&Value> = events.iter().filter(begins).collect();
        assert!(!passes.is_empty(), "seed {seed}: no second pass");
        for (pass, decision) in (2..).zip(&passes) {
            let reason = decision["actions"][0]["reasoning"].as_str().unwrap();
            assert!(
                reason.contains(&format!(": pass {pass} changes")),
                "{reason}"
            );
            assert!(decision["relaunch"].is_string(), "{decision}");
        }
        let state = notes(&events, "state");
        let last_of = format!("the last of {} passes", passes.len() + 1);
        assert!(
            state
                .iter()
                .any(|n| n["message"].as_str().is_some_and(|m| m.contains(&last_of))),
            "seed {seed}: {state:?}"
        );
        // Which pass showed the hidden folder: the second begins at the launch that follows
        // the first pass's relaunches.
        let first_pass_end = events.iter().position(|e| begins(&e)).unwrap();
        let launches_before = events[..=first_pass_end]
            .iter()
            .filter(|e| e["type"] == "decision" && e["relaunch"].is_string())
            .count();
        let truth_lines: Vec<Value> = crate::explore::truth_lines(&truth).collect();
        let second_pass_at = truth_lines
            .iter()
            .enumerate()
            .filter(|(_, v)| v["input"] == "launch")
            .nth(launches_before)
            .map(|(at, _)| at)
            .unwrap();
        let hidden_at = truth_lines
            .iter()
            .position(|v| v["screen"] == "documents_hidden")
            .unwrap();
        if hidden_at > second_pass_at {
            found_by_a_later_pass += 1;
        }
    }
    // The model is built so that a first pass misses the hidden folder on some seed.
    assert!(
        found_by_a_later_pass > 0,
        "every seed found it in its first pass"
    );
}

/// Back that leaves the app (back on its first screen) shows the launcher, where no back brings
/// the app again: the next step relaunches it, and the trip costs one step.
#[test]
fn back_that_leaves_the_app_is_followed_by_a_relaunch_at_once() {
    let place = Place::new();
    let (events, _, _) = place.explore("builtin:tiny", "200");
    let package = events
        .iter()
        .find_map(|e| (e["type"] == "run_started").then(|| e["package"].clone()))
        .expect("run_started");
    let mut in_app = false;
    let mut left_by_back = false;
    let mut trips = 0;
    for event in &events {
        match event["type"].as_str() {
            Some("observation") => {
                let ours = event["package"] == package;
                if !ours && in_app && left_by_back {
                    trips += 1;
                }
                in_app = ours;
            }
            Some("decision") if !in_app && left_by_back => {
                assert!(event["relaunch"].is_string(), "{event}");
                left_by_back = false;
            }
            Some("result") if in_app => {
                left_by_back = event["success"] == true && event["action_type"] == "back";
            }
            _ => {}
        }
    }
    assert!(trips > 0, "back never left the app");
    let relaunches = notes(&events, "relaunch");
    assert!(
        relaunches
            .iter()
            .any(|n| n["message"].as_str().unwrap().ends_with(": back left it")),
        "{relaunches:?}"
    );
}

/// An app behind Android's runtime permission dialog: Import asks for storage (allowed: the
/// files; denied: the inbox says so), Scan asks for the camera in a dialog whose taps do nothing.
fn permission_model() -> Value {
    const PACKAGE: &str = "com.example.inbox";
    const CONTROLLER: &str = "com.android.permissioncontroller";
    let button = |text: &str, top: i32| {
        json!({"class": "android.widget.Button", "text": text, "clickable": true,
               "bounds": [0, top, 1080, top + 120]})
    };
    let main = |id: &str, note: &str| {
        let mut elements = vec![button("Import", 300), button("Scan", 420)];
        if !note.is_empty() {
            elements.push(json!({"class": "android.widget.TextView", "text": note,
                                 "bounds": [0, 1700, 1080, 1800]}));
        }
        json!({"id": id, "activity": format!("{PACKAGE}.MainActivity"), "elements": elements})
    };
    let dialog = |id: &str, message: &str, buttons: &[(&str, &str)]| {
        let mut elements = vec![json!({"class": "android.widget.TextView", "text": message,
            "resource_id": format!("{CONTROLLER}:id/permission_message"),
            "bounds": [60, 700, 1020, 820]})];
        for (i, (name, text)) in (0..).zip(buttons) {
            elements.push(json!({"class": "android.widget.Button", "text": text,
                "clickable": true, "resource_id": format!("{CONTROLLER}:id/{name}"),
                "bounds": [60, 860 + 130 * i, 1020, 980 + 130 * i]}));
        }
        json!({"id": id, "package": CONTROLLER,
               "activity": format!("{CONTROLLER}.permission.ui.GrantPermissionsActivity"),
               "elements": elements})
    };
    let click = |from: &str, text: &str, to: &str| json!({"from": from, "action": "click", "target": {"text": text}, "to": to});
    let back = |from: &str, to: &str| json!({"from": from, "action": "back", "to": to});
    json!({
        "package": PACKAGE, "screen_size": [1080, 1920], "start": "main",
        "screens": [
            main("main", ""),
            main("denied", "Storage permission denied"),
            dialog("ask_storage", "Allow Inbox to access photos and media on your device?",
                   &[("permission_allow_button", "Allow"), ("permission_deny_button", "Deny")]),
            dialog("ask_camera", "Allow Inbox to take pictures and record video?",
                   &[("permission_allow_foreground_only_button", "While using the app"),
                     ("permission_deny_and_dont_ask_again_button", "Don't allow")]),
            {"id": "files", "activity": format!("{PACKAGE}.FilesActivity"), "elements": [
                {"class": "android.widget.TextView", "text": "photo.jpg", "bounds": [0, 300, 1080, 420]}
            ]}
        ],
        "transitions": [
            click("main", "Import", "ask_storage"),
            click("denied", "Import", "ask_storage"),
            click("main", "Scan", "ask_camera"),
            click("denied", "Scan", "ask_camera"),
            click("ask_storage", "Allow", "files"),
            click("ask_storage", "Deny", "denied"),
            back("ask_storage", "main"),
            back("ask_camera", "main"),
            back("files", "main"),
            back("main", "@external:com.android.launcher3"),
            back("denied", "@external:com.android.launcher3")
        ]
    })
}

/// The system's permission dialog is answered as `--permissions` says (allow by default), once
/// per request: a request still shown after its answer is another app in front.
#[test]
fn the_permission_dialog_is_answered_as_asked_and_once() {
    let place = Place::new();
    let model = place.dir.path().join("inbox.json");
    std::fs::write(&model, permission_model().to_string()).unwrap();
    let model = model.display().to_string();
    for (answer, reached, never) in [
        ("grant", Some("files"), vec!["denied"]),
        ("deny", Some("denied"), vec!["files"]),
        ("leave", None, vec!["files", "denied"]),
    ] {
        let truth = place.dir.path().join(format!("truth-{answer}.jsonl"));
        let output = place.run(
            &model,
            &[
                "--max-steps",
                "30",
                "--permissions",
                answer,
                "--sim-truth-log",
                &truth.display().to_string(),
            ],
        );
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{answer}: {stderr}");
        let shown = shown(&truth);
        assert!(
            shown.contains("ask_storage") && shown.contains("ask_camera"),
            "{shown:?}"
        );
        if let Some(reached) = reached {
            assert!(shown.contains(reached), "{answer}: {shown:?}");
        }
        for screen in never {
            assert!(!shown.contains(screen), "{answer}: {shown:?}");
        }
        // The driver's answers: one tap per request in a row, each saying what was asked.
        let events = events(&output);
        let mut last_answered: Option<String> = None;
        let mut answers = 0;
        for event in &events {
            match event["type"].as_str() {
                Some("observation") if event["package"] == "com.example.inbox" => {
                    last_answered = None;
                }
                Some("decision") if event["decider"] == "droid-crawl" => {
                    let action = &event["actions"][0];
                    let why = action["reasoning"].as_str().unwrap_or_default();
                    if !why.starts_with("the system asks for a permission") {
                        continue;
                    }
                    answers += 1;
                    assert_ne!(answer, "leave", "{event}");
                    let word = if answer == "deny" {
                        "denied"
                    } else {
                        "granted"
                    };
                    assert!(why.ends_with(word), "{why}");
                    assert!(why.contains("Allow Inbox to"), "{why}");
                    assert_ne!(last_answered.as_deref(), Some(why), "answered twice: {why}");
                    last_answered = Some(why.to_string());
                }
                _ => {}
            }
        }
        assert_eq!(
            answers > 0,
            answer != "leave",
            "{answer}: {answers} answers"
        );
        // The camera's dialog, whose answer does nothing, is left as another app in front.
        let lost = notes(&events, "context_loss");
        assert!(
            lost.iter()
                .any(|n| n["data"]["package"] == "com.android.permissioncontroller"),
            "{answer}: {lost:?}"
        );
    }
}

#[test]
fn a_secure_screen_stops_a_crawl_that_needs_screenshots_with_a_clear_error() {
    let place = Place::new();
    let output = place.run(
        "builtin:shop",
        &["--max-steps", "69", "--on-secure", "stop"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let events = events(&output);
    let end = ended(&events);
    assert_eq!(end["status"], "ERROR");
    assert!(end["reason"].as_str().unwrap().contains("secure"), "{end}");
    assert!(stderr.contains("FLAG_SECURE"), "{stderr}");
    assert!(
        stderr.contains("Steps"),
        "the summary is still written: {stderr}"
    );
    let status = place.sql("SELECT status FROM runs");
    assert_eq!(status[0][0], "ERROR");
}

#[test]
fn an_anr_is_noted_with_its_trace_and_waited_for() {
    let place = Place::new();
    let output = place.run(
        "builtin:tiny",
        &["--max-steps", "12", "--sim-fault", "anr-on:search"],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let events = events(&output);
    let anr = notes(&events, "anr");
    assert!(!anr.is_empty(), "no anr note");
    // The trace is the activity manager's block from the system log, as on a device.
    let trace = anr[0]["data"]["trace"].as_str().unwrap();
    assert!(trace.contains("ANR in com.example.tiny ("), "{trace}");
    assert!(anr[0]["data"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("Input dispatching timed out"));
    let waited = events.iter().any(|e| {
        e["type"] == "decision"
            && e["decider"] == "droid-crawl"
            && e["actions"][0]["widget"].is_string()
    });
    assert!(waited, "the dialog's button was pressed");
}

#[test]
fn faults_of_the_device_end_in_a_defined_way() {
    // uiautomator failing a fifth of the time: retried, noted, the crawl goes on.
    let place = Place::new();
    let output = place.run(
        "builtin:tiny",
        &["--max-steps", "15", "--sim-fault", "dump-error:0.2"],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let events = events(&output);
    assert_eq!(ended(&events)["reason"], "max_steps");
    assert_eq!(ended(&events)["steps"], 15);

    // A device that goes away for good: ERROR, with what happened.
    let place = Place::new();
    let output = place.run(
        "builtin:tiny",
        &[
            "--max-steps",
            "15",
            "--sim-fault",
            "disconnect-after:40:3600",
            "--wait-for-device",
            "1",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let gone = self::events(&output);
    assert_eq!(ended(&gone)["status"], "ERROR");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("did not come back"), "{stderr}");

    // A device that blinks comes back within the wait: the crawl goes on.
    let place = Place::new();
    let output = place.run(
        "builtin:tiny",
        &[
            "--max-steps",
            "10",
            "--sim-fault",
            "disconnect-after:40:1",
            "--wait-for-device",
            "10",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(ended(&self::events(&output))["steps"], 10);
}

/// A droid-crawl started in the background on the tiny app, slowed down (realistic latency)
/// so another process has time to act on it; its stdout read line by line.
struct Background {
    child: Child,
    lines: std::sync::mpsc::Receiver<Value>,
}

impl Background {
    fn start(place: &Place, steps: &str) -> Background {
        let mut child = place
            .crawl(&["--sim", "builtin:tiny", "--max-steps", steps])
            .args(["--sim-latency", "realistic"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str(&line) {
                    let _ = sender.send(value);
                }
            }
        });
        Background { child, lines }
    }

    /// Waits for an event that satisfies `wanted`.
    fn wait_for(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(event) = self.lines.recv_timeout(Duration::from_millis(200)) {
                if wanted(&event) {
                    return event;
                }
            }
        }
        panic!("no {what} within 60 s");
    }
}

fn is_step(n: u64) -> impl Fn(&Value) -> bool {
    move |e: &Value| e["type"] == "observation" && e["step"] == n
}

#[test]
fn pause_resume_and_stop_from_another_process() {
    let place = Place::new();
    let mut crawl = Background::start(&place, "200");
    crawl.wait_for("step 2", is_step(2));
    let db = place.db().display().to_string();
    let control = |what: &str| {
        let out = droid("droid-crawl")
            .args([what, "--db", &db])
            .output()
            .unwrap();
        assert!(out.status.success(), "{what}: {out:?}");
    };
    control("pause");
    crawl.wait_for("the pause", |e| {
        e["kind"] == "state" && e["data"]["state"] == "PAUSED_MANUAL"
    });
    control("resume");
    crawl.wait_for("the resume", |e| {
        e["kind"] == "state" && e["data"]["state"] == "RUNNING"
    });
    control("stop");
    let end = crawl.wait_for("the end", |e| e["type"] == "run_ended");
    assert_eq!(
        (end["status"].as_str(), end["reason"].as_str()),
        (Some("INTERRUPTED"), Some("stopped"))
    );
    assert_eq!(crawl.child.wait().unwrap().code(), Some(0));
}

#[test]
fn sigint_ends_gracefully_and_sigkill_leaves_an_error_run_the_next_crawl_closes() {
    let place = Place::new();
    let crawl = Background::start(&place, "200");
    crawl.wait_for("step 2", is_step(2));
    let pid = crawl.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let end = crawl.wait_for("the end", |e| e["type"] == "run_ended");
    assert_eq!(end["status"], "INTERRUPTED");
    let output = crawl.child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Steps"),
        "the summary"
    );

    let mut killed = Background::start(&place, "200");
    let started = killed.wait_for("run_started", |e| e["type"] == "run_started");
    killed.wait_for("step 2", is_step(2));
    let pid = killed.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap()
        .success());
    let _ = killed.child.wait();
    let run = started["run_id"].as_str().unwrap();
    let integrity = place.sql("PRAGMA integrity_check");
    assert_eq!(integrity[0][0], "ok");
    let status = place.sql(&format!("SELECT status FROM runs WHERE run_key = '{run}'"));
    assert_eq!(status[0][0], "RUNNING");
    // The next crawl finds the dead one's run and ends it.
    let output = place.run("builtin:tiny", &["--max-steps", "1"]);
    assert!(output.status.success(), "{output:?}");
    let status = place.sql(&format!("SELECT status FROM runs WHERE run_key = '{run}'"));
    assert_eq!(status[0][0], "ERROR");
}

#[test]
fn a_program_can_decide_and_one_that_dies_is_a_clear_error() {
    let place = Place::new();
    let script = place.dir.path().join("agent.py");
    std::fs::write(
        &script,
        r#"import json, sys
for line in sys.stdin:
    event = json.loads(line)
    if event.get("type") != "observation":
        continue
    clickable = [e for e in event["elements"] if e.get("clickable")]
    if clickable:
        action = {"action": "click", "ref": clickable[0].get("ref", clickable[0]["element_id"])}
    else:
        action = {"action": "back"}
    action["action_desc"] = "first clickable"
    print(json.dumps({"type": "decision", "v": 1, "decider": "agent.py", "actions": [action]}), flush=True)
"#,
    )
    .unwrap();
    let command = format!("python3 {}", script.display());
    let output = place.run(
        "builtin:tiny",
        &["--max-steps", "5", "--decide-cmd", &command],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let events = events(&output);
    let decisions: Vec<&Value> = events.iter().filter(|e| e["type"] == "decision").collect();
    assert!(decisions.iter().any(|d| d["decider"] == "agent.py"));
    assert_eq!(ended(&events)["steps"], 5);

    let output = place.run(
        "builtin:tiny",
        &[
            "--max-steps",
            "5",
            "--decide-cmd",
            "python3 -c 'import sys; sys.exit(3)'",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("exited before answering"), "{stderr}");
    assert_eq!(ended(&self::events(&output))["status"], "ERROR");
}

#[test]
fn text_from_the_app_reaches_a_piped_stderr_without_control_characters() {
    let place = Place::new();
    // An app whose crash says something a terminal would obey: clear the screen, retitle the
    // window, ring, and reverse the text after it.
    let model = place.dir.path().join("model.json");
    let hostile =
        "java.lang.IllegalStateException: \u{1b}[2J\u{1b}]0;owned\u{7}wipe \u{202e}txt.exe";
    std::fs::write(
        &model,
        serde_json::json!({
            "package": "com.example.hostile",
            "screen_size": [720, 1280],
            "start": "home",
            "screens": [{"id": "home", "activity": "com.example.hostile.MainActivity",
                "elements": [{"class": "android.widget.Button", "text": "Go",
                    "bounds": [40, 200, 680, 320], "clickable": true}]}],
            "transitions": [{"from": "home", "action": "click", "target": {"text": "Go"},
                "to": "@crash", "crash": hostile}]
        })
        .to_string(),
    )
    .unwrap();
    let output = place.run(&model.display().to_string(), &["--max-steps", "3"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Said, but cleaned: a log file or a CI page is read in a terminal too.
    assert!(stderr.contains("wipe txt.exe"), "{stderr}");
    assert!(
        !stderr.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "{stderr:?}"
    );
}

#[test]
fn settings_resolve_flag_then_user_config_then_environment() {
    let place = Place::new();
    let config_db = place.dir.path().join("user_config.db");
    let config_arg = config_db.display().to_string();
    for (key, value) in [("max_steps", "3"), ("decider", "random")] {
        let set = droid("droid-crawl")
            .args(["config", "--config-db", &config_arg, "set", key, value])
            .output()
            .unwrap();
        assert!(set.status.success(), "{set:?}");
    }
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let output = place
            .crawl(&["--sim", "builtin:tiny", "--config-db", &config_arg])
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let events = events(&output);
        let started = events[0].clone();
        (started["decider"].clone(), ended(&events)["steps"].clone())
    };
    // user_config.db beats the environment; a flag beats both.
    let env = [("DROID_MAX_STEPS", "5"), ("DROID_DECIDER", "heuristic")];
    assert_eq!(run(&[], &env), (json!("random"), json!(3)));
    assert_eq!(
        run(&["--max-steps", "2", "--decider", "heuristic"], &env),
        (json!("heuristic"), json!(2))
    );
    // The environment beats the default.
    let bare = Place::new();
    let output = bare
        .crawl(&["--sim", "builtin:tiny"])
        .env("DROID_MAX_STEPS", "4")
        .output()
        .unwrap();
    assert_eq!(ended(&events(&output))["steps"], 4);
    // A setting that is not a number is a clear error.
    let bad = droid("droid-crawl")
        .args([
            "config",
            "--config-db",
            &config_arg,
            "set",
            "max_steps",
            "many",
        ])
        .output()
        .unwrap();
    assert!(bad.status.success());
    let output = place
        .crawl(&["--sim", "builtin:tiny", "--config-db", &config_arg])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("max_steps") && stderr.contains("many"),
        "{stderr}"
    );
}
