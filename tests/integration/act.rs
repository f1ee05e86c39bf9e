//! droid-act against droid-sim: verbs, decisions through the filter, hostile text.

use std::process::Output;

use serde_json::{json, Value};

use super::common::{droid, feed};
use super::device::{text_at, SimProc, NOTES_PACKAGE, NOTE_BODY};

fn run_act(sim: &SimProc, args: &[&str], stdin: &str) -> Output {
    feed(
        droid("droid-act")
            .args(sim.flags())
            .args(["--pause-ms", "0"])
            .args(args),
        stdin,
    )
}

/// One observation of the simulator, through droid-capture.
fn observation_line(sim: &SimProc) -> String {
    let out = droid("droid-capture")
        .args(sim.flags())
        .arg("--out")
        .arg(sim.dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn decision_line(actions: Value) -> String {
    json!({"type": "decision", "v": 1, "run_id": "r1", "step": 1, "actions": actions}).to_string()
}

fn bbox(b: [i64; 4]) -> Value {
    json!({"top_left": [b[0], b[1]], "bottom_right": [b[2], b[3]]})
}

fn results(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "result")
        .collect()
}

#[test]
fn a_tap_on_a_recorded_target_reaches_the_recorded_screen() {
    droid::fixtures_or_skip!();
    // model.json: s001 --click "Create a new note" [837,193,969,325]--> s002
    let sim = SimProc::notes(&[]);
    let out = run_act(&sim, &["tap", "903", "259"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["success"], true);
    assert_eq!(sim.screens().last().map(String::as_str), Some("s002"));
}

#[test]
fn decisions_resolve_through_the_preceding_observation() {
    droid::fixtures_or_skip!();
    // s001 --click "More options" [969,193,1080,325]--> s008; the box is loose around it and
    // its centre snaps to the ImageView.
    let sim = SimProc::notes(&[]);
    let observation = observation_line(&sim);
    let decision = decision_line(json!([
        {"action": "click", "target_bounding_box": bbox([5000, 0, 5100, 10])},
        {"action": "click", "target_bounding_box": bbox([980, 200, 1070, 320])},
    ]));
    let out = run_act(&sim, &[], &format!("{observation}\n{decision}\n"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], observation,
        "the observation passes through unchanged"
    );
    assert_eq!(lines[1], decision);
    let results = results(&out.stdout);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["error_kind"], "invalid_bbox");
    assert_eq!(results[1]["success"], true);
    assert_eq!(results[1]["origin"], "xml");
    assert_eq!(results[1]["step"], 1);
    assert_eq!(results[1]["run_id"], "r1");
    assert_eq!(sim.screens().last().map(String::as_str), Some("s008"));
}

/// Types `text` into the note body through an `input` decision resolved against a fresh
/// observation; the action's result.
fn type_into_note_body(sim: &SimProc, text: &str) -> Value {
    let observation = observation_line(sim);
    let b = NOTE_BODY.map(i64::from);
    let decision = decision_line(json!([
        {"action": "input", "target_bounding_box": bbox(b), "input_text": text},
    ]));
    let out = run_act(sim, &[], &format!("{observation}\n{decision}\n"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = results(&out.stdout).remove(0);
    assert_eq!(result["success"], true, "{result}");
    result
}

/// Types `text` into the note body and checks the next dump.
fn assert_typed_exactly(text: &str) {
    // Recorded moves only: typing into the body would otherwise move, as the recording of the
    // same field on another screen of the activity does.
    let sim = SimProc::notes(&["--recorded-only"]);
    let result = type_into_note_body(&sim, text);
    let quoted = serde_json::to_string(text).unwrap();
    assert!(
        !result.to_string().contains(&quoted),
        "typed text must not be echoed in results: {result}"
    );
    // The device received exactly the text (truth log) and shows exactly it (next dump).
    assert_eq!(sim.typed(), text, "{:?}", sim.inputs());
    assert_eq!(text_at(&sim.device(), NOTE_BODY), text);
    // Nothing ran but the tap and the typing: no launch, force-stop or other input, and the
    // device still shows the start screen.
    let kinds: Vec<String> = sim
        .inputs()
        .iter()
        .map(|i| i["input"].as_str().unwrap().to_string())
        .collect();
    assert!(
        kinds[..2] == ["launch", "tap"] && kinds[2..].iter().all(|k| k == "text" || k == "key"),
        "{kinds:?}"
    );
    assert_eq!(sim.screens(), ["@launcher", "s001"]);
}

#[test]
fn input_replaces_what_the_field_holds() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&["--recorded-only"]);
    // Each observation shows what the field holds now.
    for text in ["first draft", "final", "final"] {
        type_into_note_body(&sim, text);
        let shown = text_at(&sim.device(), NOTE_BODY);
        assert_eq!(shown, text, "{:?}", sim.inputs());
    }
}

macro_rules! hostile_text {
    ($($name:ident: $text:expr,)*) => {
        $(
            #[test]
            fn $name() {
                droid::fixtures_or_skip!();
                assert_typed_exactly($text);
            }
        )*
    };
}

hostile_text! {
    hostile_double_quotes: "say \"hi\" now",
    hostile_single_quotes: "it's 'quoted'",
    hostile_semicolon: "a; reboot; b",
    hostile_and_and: "true && am force-stop com.simplemobiletools.notes.pro",
    hostile_pipe: "cat | sh",
    hostile_command_substitution: "$(id) ${HOME} $PATH",
    hostile_backticks: "`id` and `reboot`",
    hostile_backslash: r"C:\new\table \\ end\",
    hostile_angle_brackets: "<b>x</b> > /sdcard/out < /etc/hosts",
    hostile_percent_s: "100%sure %s%%s %",
    hostile_space_runs: "  two  three   four    ",
}

/// The filter contract without a device: nothing opens one until a decision arrives. The
/// server address is loopback but not `localhost`/`127.0.0.1`, so no adb server is started.
fn act_without_device(stdin: &str) -> Output {
    feed(
        droid("droid-act").args(["--adb-host", "127.0.0.2", "--adb-port", "1"]),
        stdin,
    )
}

#[test]
fn empty_input_exits_zero_and_bad_lines_exit_one_after_the_rest() {
    let out = act_without_device("");
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let note = r#"{"type":"note","v":1,"kind":"x"}"#;
    let out = act_without_device(&format!("{note}\nnot json\n{note}\n"));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{note}\n{note}\n")
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("droid-act: line 2: not valid JSON"),
        "{stderr}"
    );
}

#[test]
fn an_unreachable_device_fails_the_decision_and_exits_one() {
    let decision = decision_line(json!([{"action": "back"}, {"action": "home"}]));
    let out = act_without_device(&format!("{decision}\n"));
    assert_eq!(out.status.code(), Some(1));
    let results = results(&out.stdout);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["error_kind"], "device");
    assert_eq!(results[1]["error_kind"], "skipped");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("not reachable at 127.0.0.2:1"), "{stderr}");
}

#[test]
fn help_is_a_contract_and_usage_errors_exit_two() {
    let out = droid("droid-act").arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for word in [
        "tap",
        "long-press",
        "swipe",
        "text",
        "key",
        "back",
        "home",
        "launch",
        "Examples:",
        "--device",
        "--adb-port",
        "--adb-host",
    ] {
        assert!(help.contains(word), "{word} missing from --help");
    }
    let out = droid("droid-act").args(["tap", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn verbs_drive_the_device() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    for verb in [
        &["home"][..],
        &["launch", "com.simplemobiletools.notes.pro"],
        &["key", "back"],
    ] {
        let out = run_act(&sim, verb, "");
        assert!(
            out.status.success(),
            "{verb:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["success"], true);
    }
    // launch (by the helper), home, launch again, back on the start screen leaves the app.
    assert_eq!(
        sim.screens(),
        ["@launcher", "s001", "@launcher", "s001", "@launcher"]
    );
    let out = run_act(&sim, &["launch", "com.example.missing"], "");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("cannot launch com.example.missing"),
        "{stderr}"
    );
    let out = run_act(&sim, &["key", "back; reboot"], "");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn verbs_say_why_the_device_refused_and_refuse_touches_off_the_screen() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    let out = run_act(&sim, &["key", "nosuchkey"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Exception occurred while executing 'keyevent': ")
            && stderr.contains("Unknown keycode: KEYCODE_NOSUCHKEY"),
        "{stderr}"
    );
    let before = sim.screens();
    for verb in [
        &["tap", "--", "5", "-5"][..],
        &["tap", "1080", "10"],
        &["long-press", "10", "99999"],
        &["swipe", "--", "10", "10", "-1", "10"],
    ] {
        let out = run_act(&sim, verb, "");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{verb:?}: {stderr}");
        assert!(stderr.contains("outside the 1080x2280 screen"), "{stderr}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(sim.screens(), before, "nothing was touched");
}

#[test]
fn a_launch_from_the_launcher_navigated_away_and_a_tap_on_nothing_did_not() {
    droid::fixtures_or_skip!();
    let sim = SimProc::notes(&[]);
    assert!(run_act(&sim, &["home"], "").status.success());
    let launch = run_act(&sim, &["launch", NOTES_PACKAGE], "");
    let result: Value = serde_json::from_slice(&launch.stdout).unwrap();
    assert_eq!(result["navigated_away"], true, "{result}");
    // A tap on the empty middle of the start screen changes nothing.
    let tap = run_act(&sim, &["tap", "540", "1500"], "");
    let result: Value = serde_json::from_slice(&tap.stdout).unwrap();
    assert_eq!(result["navigated_away"], false, "{result}");
}

#[test]
fn a_relaunch_decided_by_droid_decide_restarts_the_app_through_droid_act() {
    droid::fixtures_or_skip!();
    // Into the new-note dialog, then out to the launcher: the heuristic backs out once, then
    // relaunches, and the app starts again from its first screen, not from the dialog.
    let sim = SimProc::notes(&[]);
    for verb in [&["tap", "903", "259"][..], &["home"]] {
        assert!(run_act(&sim, verb, "").status.success());
    }
    assert_eq!(sim.screens().last().map(String::as_str), Some("@launcher"));
    let launcher = observation_line(&sim);
    let decided = feed(
        droid("droid-decide").args(["--package", NOTES_PACKAGE]),
        &format!("{launcher}\n{launcher}\n"),
    );
    assert!(decided.status.success());
    let decided = String::from_utf8(decided.stdout).unwrap();
    let decisions: Vec<Value> = decided
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "decision")
        .collect();
    assert_eq!(decisions[0]["actions"][0]["action"], "back");
    assert_eq!(decisions[1]["relaunch"], NOTES_PACKAGE, "{decided}");
    let out = run_act(&sim, &[], &decided);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let relaunched = results(&out.stdout).pop().unwrap();
    assert_eq!(relaunched["action_type"], "relaunch");
    assert_eq!(relaunched["success"], true);
    assert_eq!(relaunched["package_after"], NOTES_PACKAGE);
    assert_eq!(sim.screens().last().map(String::as_str), Some("s001"));
}

#[test]
fn the_password_placeholder_is_typed_as_the_configured_password_and_never_echoed() {
    droid::fixtures_or_skip!();
    const STORED: &str = "Stored-pw-4417";
    const FLAGGED: &str = "Flagged-pw-2291";
    let config_dir = tempfile::tempdir().unwrap();
    let config_db = config_dir.path().join("user_config.db");
    super::decide_providers::store_secret(&config_db, "test_password", STORED);
    let type_placeholder = |extra: &[&str]| {
        let sim = SimProc::notes(&[]);
        let observation = observation_line(&sim);
        let decision = decision_line(json!([{"action": "input",
            "target_bounding_box": bbox(NOTE_BODY.map(i64::from)),
            "input_text": "{{test_password}}"}]));
        let mut args = vec!["--config-db", config_db.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = run_act(&sim, &args, &format!("{observation}\n{decision}\n"));
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        for password in [STORED, FLAGGED] {
            assert!(!stdout.contains(password) && !stderr.contains(password));
        }
        assert_eq!(results(&out.stdout)[0]["success"], true, "{stdout}{stderr}");
        sim.typed()
    };
    // The device got the real password: from user_config.db, or the flag over it.
    assert_eq!(type_placeholder(&[]), STORED);
    assert_eq!(type_placeholder(&["--test-password", FLAGGED]), FLAGGED);

    // With no password configured nothing is typed and the action fails plainly.
    let sim = SimProc::notes(&[]);
    let observation = observation_line(&sim);
    let decision = decision_line(json!([{"action": "input",
        "target_bounding_box": bbox(NOTE_BODY.map(i64::from)),
        "input_text": "{{test_password}}"}]));
    let out = run_act(&sim, &[], &format!("{observation}\n{decision}\n"));
    assert_eq!(results(&out.stdout)[0]["error_kind"], "invalid_action");
    assert_eq!(sim.typed(), "");
}
