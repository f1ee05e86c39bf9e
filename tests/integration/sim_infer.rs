//! Moves inferred from the same view on the other screens of an activity: taken when the
//! recording agrees, marked in the truth log, off with `--recorded-only`, never walked by
//! `--check`. Each test writes a small model of its own and drives `droid-sim` over its socket.

use std::path::{Path, PathBuf};

use droid::device::{AdbDevice, Device, DeviceConfig};
use droid::sim::{Sim, SimConfig};
use serde_json::{json, Value};

use crate::common::droid;
use crate::sim_adb::SimProcess;

const PACKAGE: &str = "com.example.states";

fn button(id: &str, bounds: [i32; 4]) -> Value {
    json!({"class": "android.widget.Button", "resource_id": format!("{PACKAGE}:id/{id}"),
           "clickable": true, "bounds": bounds})
}

fn field(id: &str, bounds: [i32; 4]) -> Value {
    json!({"class": "android.widget.EditText", "resource_id": format!("{PACKAGE}:id/{id}"),
           "bounds": bounds})
}

fn id(name: &str) -> Value {
    json!({"resource_id": format!("{PACKAGE}:id/{name}")})
}

/// One activity in several states: `empty`, then `filled` once the search field has text. The
/// recording tapped Settings, Sort and Send from `empty` only; Sort was also tapped on `sorted`
/// (the same activity), where it led elsewhere; `filled` shows Help twice; `other` is another
/// activity with the same Settings button.
fn states_model() -> Value {
    let views = |extra: Vec<Value>| {
        let mut views = vec![
            button("settings", [0, 0, 500, 100]),
            field("search", [0, 100, 1000, 200]),
            json!({"class": "android.widget.ImageButton", "content_desc": "Sort", "clickable": true,
                   "bounds": [500, 0, 1000, 100]}),
            field("email", [0, 300, 1000, 400]),
            button("send", [0, 400, 500, 500]),
            json!({"class": "android.widget.ListView", "resource_id": format!("{PACKAGE}:id/list"),
                   "scrollable": true, "bounds": [0, 600, 1000, 1600]}),
        ];
        views.extend(extra);
        views
    };
    let help = |top: i32| {
        json!({"class": "android.widget.Button", "text": "Help", "clickable": true,
               "bounds": [0, top, 500, top + 100]})
    };
    let main = format!("{PACKAGE}.MainActivity");
    json!({
        "package": PACKAGE, "screen_size": [1080, 1920], "start": "empty",
        "screens": [
            {"id": "empty", "activity": main, "elements": views(vec![help(1700)])},
            {"id": "filled", "activity": main, "elements": views(vec![help(1700), help(1800)])},
            {"id": "sorted", "activity": main, "elements": views(vec![])},
            {"id": "settings", "activity": format!("{PACKAGE}.SettingsActivity"),
             "elements": [button("other", [0, 0, 500, 100])]},
            {"id": "other", "activity": format!("{PACKAGE}.OtherActivity"),
             "elements": [button("settings", [0, 0, 500, 100])]},
            {"id": "by_name", "activity": main, "elements": []},
            {"id": "by_date", "activity": main, "elements": []},
            {"id": "sent", "activity": main, "elements": []},
            {"id": "more", "activity": main, "elements": []},
            {"id": "help", "activity": main, "elements": []}
        ],
        "transitions": [
            {"from": "empty", "action": "input", "target": id("search"), "to": "filled"},
            {"from": "empty", "action": "click", "target": id("settings"), "to": "settings"},
            {"from": "empty", "action": "click", "target": {"content_desc": "Sort"}, "to": "by_name"},
            {"from": "sorted", "action": "click", "target": {"content_desc": "Sort"}, "to": "by_date"},
            {"from": "empty", "action": "click", "target": id("send"), "to": "sent",
             "requires": {format!("{PACKAGE}:id/email"): ".+@.+"}},
            {"from": "empty", "action": "scroll_down", "target": id("list"), "to": "more"},
            {"from": "empty", "action": "click", "target": {"text": "Help"}, "to": "help"},
            {"from": "settings", "action": "click", "target": id("other"), "to": "other"},
            {"from": "empty", "action": "long_click", "target": {"content_desc": "Sort"}, "to": "sorted"}
        ]
    })
}

fn write_model(dir: &Path, model: &Value) -> String {
    let path = dir.join("model.json");
    std::fs::write(&path, model.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

/// A simulator in this process (as droid-crawl's `--sim` starts one), its device over TCP and
/// its truth log.
struct Phone {
    _sim: droid::sim::SimHandle,
    device: AdbDevice,
    truth: PathBuf,
    _dir: tempfile::TempDir,
}

impl Phone {
    fn start(model: &Value, recorded_only: bool) -> Phone {
        let dir = tempfile::tempdir().unwrap();
        let truth = dir.path().join("truth.jsonl");
        let sim = Sim::start(SimConfig {
            truth_log: Some(truth.clone()),
            recorded_only,
            ..SimConfig::new(write_model(dir.path(), model))
        })
        .unwrap();
        let device = AdbDevice::connect(DeviceConfig::loopback(sim.port(), sim.serial())).unwrap();
        device.launch(PACKAGE).unwrap();
        Phone {
            _sim: sim,
            device,
            truth,
            _dir: dir,
        }
    }

    /// Types into the search field: `empty` becomes `filled` by the recorded input move.
    fn fill_search(&self) {
        self.device.tap(500, 150).unwrap();
        self.device.input_text("milk").unwrap();
        assert_eq!(self.screen(), "filled");
    }

    fn screen_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.truth)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|l| l.get("screen").is_some())
            .collect()
    }

    fn last_screen_line(&self) -> Value {
        self.screen_lines().pop().unwrap()
    }

    fn screen(&self) -> String {
        self.last_screen_line()["screen"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

#[test]
fn sim_infers_a_views_move_from_another_state_of_its_activity_and_marks_it() {
    let phone = Phone::start(&states_model(), false);
    phone.fill_search();
    let recorded = phone.last_screen_line();
    assert!(recorded.get("inferred").is_none(), "{recorded}");
    phone.device.tap(250, 50).unwrap(); // Settings: recorded on `empty` only
    let line = phone.last_screen_line();
    assert_eq!(line["screen"], "settings", "{line}");
    assert_eq!(line["inferred"], true);
    assert_eq!(line["borrowed_from"], "empty");
    assert_eq!(line["transition"], 1);
    phone.device.tap(250, 50).unwrap(); // the recorded move of the next screen
    let line = phone.last_screen_line();
    assert_eq!(line["screen"], "other");
    assert!(line.get("inferred").is_none(), "{line}");

    // Back to `filled`: a scroll on the list borrows `empty`'s recorded scroll.
    phone.device.key("back").unwrap();
    phone.device.key("back").unwrap();
    assert_eq!(phone.screen(), "filled");
    phone.device.swipe((500, 1400), (500, 800), 300).unwrap();
    let line = phone.last_screen_line();
    assert_eq!(
        (&line["screen"], &line["inferred"]),
        (&json!("more"), &json!(true))
    );
    assert_eq!(line["transition"], 5);
}

#[test]
fn sim_a_borrowed_move_needs_its_required_text_on_the_current_screen() {
    let phone = Phone::start(&states_model(), false);
    phone.fill_search();
    phone.device.tap(250, 450).unwrap(); // Send, with the email field empty here
    assert_eq!(phone.screen(), "filled");
    phone.device.tap(500, 350).unwrap();
    phone.device.input_text("jane@example.com").unwrap();
    assert_eq!(phone.screen(), "filled", "typing the email moves nowhere");
    phone.device.tap(250, 450).unwrap();
    let line = phone.last_screen_line();
    assert_eq!(
        (&line["screen"], &line["transition"]),
        (&json!("sent"), &json!(4))
    );
}

#[test]
fn sim_disagreeing_moves_a_view_named_twice_or_another_activity_infer_nothing() {
    let phone = Phone::start(&states_model(), false);
    phone.fill_search();
    let before = phone.screen_lines().len();
    // Sort: `empty` says by_name, `sorted` says by_date.
    phone.device.tap(750, 50).unwrap();
    // Help: named twice on `filled`.
    phone.device.tap(250, 1750).unwrap();
    assert_eq!(phone.screen_lines().len(), before, "nothing moved");
    assert_eq!(phone.screen(), "filled");
    // A long press on Sort is recorded once, on `empty`: that one is taken.
    phone.device.long_press(750, 50, 600).unwrap();
    assert_eq!(phone.screen(), "sorted");
    assert_eq!(phone.last_screen_line()["inferred"], true);

    // `other` is another activity: its Settings button borrows nothing from `empty`.
    phone.device.tap(250, 50).unwrap(); // sorted → settings (inferred)
    phone.device.tap(250, 50).unwrap(); // settings → other (recorded)
    assert_eq!(phone.screen(), "other");
    let before = phone.screen_lines().len();
    phone.device.tap(250, 50).unwrap();
    assert_eq!(phone.screen_lines().len(), before);
}

#[test]
fn sim_recorded_only_turns_inference_off() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), &states_model());
    let truth = dir.path().join("truth.jsonl");
    let truth_arg = truth.to_string_lossy().into_owned();
    for (flags, expected) in [(vec![], "settings"), (vec!["--recorded-only"], "filled")] {
        let mut args = vec!["--app", &model, "--truth-log", &truth_arg];
        args.extend(flags);
        let sim = SimProcess::start(&args);
        let device = AdbDevice::connect(DeviceConfig::loopback(sim.port, &sim.serial)).unwrap();
        device.launch(PACKAGE).unwrap();
        device.tap(500, 150).unwrap();
        device.input_text("milk").unwrap();
        device.tap(250, 50).unwrap();
        let text = std::fs::read_to_string(&truth).unwrap();
        let last: Value = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .rfind(|l| l.get("screen").is_some())
            .unwrap();
        assert_eq!(last["screen"], expected, "{args:?}");
    }
}

/// A button covered by another one that takes its taps: the recorded tap on the covered button
/// cannot fire, but the covering button's recorded move on `alt` (the same activity) leads to
/// the same screen.
fn covered_model() -> Value {
    let main = format!("{PACKAGE}.MainActivity");
    json!({
        "package": PACKAGE, "screen_size": [1080, 1920], "start": "home",
        "screens": [
            {"id": "home", "activity": main, "elements": [
                button("covered", [0, 0, 500, 500]), button("cover", [0, 0, 500, 500]),
                button("detour", [0, 600, 500, 700])]},
            {"id": "alt", "activity": main, "elements": [button("cover", [0, 0, 500, 500])]},
            {"id": "dest", "activity": format!("{PACKAGE}.DestActivity"), "elements": []}
        ],
        "transitions": [
            {"from": "home", "action": "click", "target": id("covered"), "to": "dest"},
            {"from": "home", "action": "click", "target": id("detour"), "to": "alt"},
            {"from": "alt", "action": "click", "target": id("cover"), "to": "dest"}
        ]
    })
}

#[test]
fn sim_check_walks_recorded_moves_only_and_counts_the_inferred_ones() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), &covered_model());

    let phone = Phone::start(&covered_model(), false);
    phone.device.tap(250, 250).unwrap();
    assert_eq!(phone.screen(), "dest", "the device infers the cover's move");

    let output = droid("droid-sim")
        .args(["--check", &model, "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["ceiling"], 3);
    assert_eq!(report["inferred_moves"], 1);
    let failed = &report["failed_transitions"][0];
    assert_eq!(
        (&failed["transition"], &failed["kind"]),
        (&json!(0), &json!("did_not_fire")),
        "the tester's tap on the covered button is not rescued: {report}"
    );
    let dest = report["screens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["screen"] == "dest")
        .unwrap();
    let path: Vec<&Value> = dest["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["transition"])
        .collect();
    assert_eq!(path, [&json!(1), &json!(2)], "around it, by recorded moves");

    let describe = droid("droid-sim")
        .args(["--app", &model, "--describe"])
        .output()
        .unwrap();
    let text = String::from_utf8(describe.stdout).unwrap();
    assert!(
        text.ends_with("moves inference adds (screen, action, view): 1\n"),
        "{text}"
    );
}

/// A sort dialog the recording opened over two lists of one activity, `first` and `second`,
/// and closed by back once, over `first`; `third` has the same Sort button, never tapped there.
/// `first` leaves by a recorded back to `gone`, a screen that does not open it.
fn dialog_model() -> Value {
    let main = format!("{PACKAGE}.MainActivity");
    let sort = || {
        json!({"class": "android.widget.ImageButton", "content_desc": "Sort", "clickable": true,
               "bounds": [500, 0, 1000, 100]})
    };
    let list = |next: &str| json!([sort(), button(next, [0, 200, 500, 300])]);
    json!({
        "package": PACKAGE, "screen_size": [1080, 1920], "start": "first",
        "screens": [
            {"id": "first", "activity": main, "elements": list("to_second")},
            {"id": "second", "activity": main, "elements": list("to_third")},
            {"id": "third", "activity": main, "elements": list("nothing")},
            {"id": "sort", "activity": main, "elements": [button("by_name", [0, 800, 1000, 900])]},
            {"id": "gone", "activity": main, "elements": []}
        ],
        "transitions": [
            {"from": "first", "action": "click", "target": {"content_desc": "Sort"}, "to": "sort"},
            {"from": "second", "action": "click", "target": {"content_desc": "Sort"}, "to": "sort"},
            {"from": "sort", "action": "back", "to": "first"},
            {"from": "first", "action": "click", "target": id("to_second"), "to": "second"},
            {"from": "second", "action": "click", "target": id("to_third"), "to": "third"},
            {"from": "second", "action": "back", "to": "gone"}
        ]
    })
}

#[test]
fn sim_back_from_a_screen_opened_over_another_returns_to_that_one() {
    let phone = Phone::start(&dialog_model(), false);
    phone.device.tap(250, 250).unwrap();
    assert_eq!(phone.screen(), "second");
    // Opened by a recorded move over `second`: back returns there, not to where the recording
    // went back to.
    phone.device.tap(750, 50).unwrap();
    let line = phone.last_screen_line();
    assert_eq!(
        (&line["screen"], &line["beneath"]),
        (&json!("sort"), &json!("second"))
    );
    phone.device.key("back").unwrap();
    let line = phone.last_screen_line();
    assert_eq!(
        (&line["screen"], &line["beneath"]),
        (&json!("second"), &json!("first"))
    );
    // Opened by an inferred move over `third`: the same.
    phone.device.tap(250, 250).unwrap();
    phone.device.tap(750, 50).unwrap();
    let line = phone.last_screen_line();
    assert_eq!(
        (&line["screen"], &line["inferred"]),
        (&json!("sort"), &json!(true))
    );
    phone.device.key("back").unwrap();
    assert_eq!(phone.screen(), "third");
    // A recorded back to a screen that does not open this one is the app's own: followed.
    phone.device.key("back").unwrap();
    assert_eq!(phone.screen(), "second");
    phone.device.key("back").unwrap();
    assert_eq!(phone.screen(), "gone");
    // Over `first`, as recorded.
    let phone = Phone::start(&dialog_model(), false);
    phone.device.tap(750, 50).unwrap();
    phone.device.key("back").unwrap();
    let line = phone.last_screen_line();
    assert_eq!(line["screen"], "first");
    assert!(
        line.get("beneath").is_none(),
        "nothing beneath the start: {line}"
    );
}

/// A settings page whose box, ticked, shows the page's other state (a push on the simulator's
/// stack); back from that state was recorded to the list's state the setting changes.
fn setting_model() -> Value {
    let main = format!("{PACKAGE}.MainActivity");
    let settings = format!("{PACKAGE}.SettingsActivity");
    json!({
        "package": PACKAGE, "screen_size": [1080, 1920], "start": "list",
        "screens": [
            {"id": "list", "activity": main, "elements": [button("gear", [0, 0, 500, 100])]},
            {"id": "list_hidden", "activity": main, "elements": [button("gear", [0, 0, 500, 100])]},
            {"id": "settings", "activity": settings, "elements": [button("tick", [0, 200, 500, 300])]},
            {"id": "settings_on", "activity": settings, "elements": [button("tick", [0, 200, 500, 300])]}
        ],
        "transitions": [
            {"from": "list", "action": "click", "target": id("gear"), "to": "settings"},
            {"from": "list_hidden", "action": "click", "target": id("gear"), "to": "settings_on"},
            {"from": "settings", "action": "click", "target": id("tick"), "to": "settings_on"},
            {"from": "settings_on", "action": "back", "to": "list_hidden"}
        ]
    })
}

#[test]
fn sim_back_from_a_state_the_stack_kept_apart_follows_the_recording() {
    let phone = Phone::start(&setting_model(), false);
    phone.device.tap(250, 50).unwrap();
    phone.device.tap(250, 250).unwrap();
    let line = phone.last_screen_line();
    assert_eq!(
        (&line["screen"], &line["beneath"]),
        (&json!("settings_on"), &json!("settings"))
    );
    // Beneath is the page's other state, not the list: the recorded back stands.
    phone.device.key("back").unwrap();
    assert_eq!(phone.screen(), "list_hidden");
}
