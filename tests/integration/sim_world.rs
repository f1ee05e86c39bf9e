//! The simulated device's world: app models (the real notes app and the bundled ones), the
//! behaviour of screens, back stack, typing, crashes, other apps, secure screens, keys, ANR, the
//! truth log, and rendering.

use std::collections::BTreeMap;

use droid::sim::model::{Action, AppModel, Destination, ModelError, Node, Target};
use droid::sim::render;
use droid::sim::truth::TruthLog;
use droid::sim::world::{InputError, LaunchError, World, WorldOptions};
use serde_json::Value;
use sha2::Digest;

use crate::common::fixtures;

const TINY: &str = "com.example.tiny";

fn notes_spec() -> String {
    fixtures()
        .join("apps/notes/model.json")
        .to_string_lossy()
        .into_owned()
}

fn world(spec: &str) -> World {
    World::new(AppModel::load(spec).unwrap(), WorldOptions::default())
}

fn tiny() -> World {
    let mut world = world("builtin:tiny");
    world.launch(TINY).unwrap();
    world
}

fn screen(world: &World) -> String {
    world.foreground().screen
}

/// The centre of the first node of the current model screen that `target` matches.
fn centre_of(world: &World, target: &Target) -> (i32, i32) {
    let model = world.model();
    let index = model.screen_index(&world.foreground().screen).unwrap();
    let node = model
        .screen(index)
        .nodes()
        .into_iter()
        .find(|n| target.matches(n))
        .unwrap();
    node.bounds.center()
}

/// Where a crawler taps for `target`: the centre of the nearest clickable node at or above the
/// first node it matches (crawlers tap clickable elements, not the labels inside them).
fn clickable_centre_of(world: &World, target: &Target) -> (i32, i32) {
    fn walk<'a>(node: &'a Node, parent: Option<usize>, out: &mut Vec<(&'a Node, Option<usize>)>) {
        let me = out.len();
        out.push((node, parent));
        for child in &node.children {
            walk(child, Some(me), out);
        }
    }
    let model = world.model();
    let screen = model.screen(model.screen_index(&world.foreground().screen).unwrap());
    let mut flat = Vec::new();
    for root in &screen.roots {
        walk(root, None, &mut flat);
    }
    let mut at = flat.iter().position(|(n, _)| target.matches(n)).unwrap();
    while !flat[at].0.flag("clickable") {
        match flat[at].1 {
            Some(parent) => at = parent,
            None => break,
        }
    }
    flat[at].0.bounds.center()
}

/// Where the walker touches a transition's target.
#[derive(Clone, Copy)]
enum Aim {
    /// The centre of the recorded target itself.
    Target,
    /// The centre of its nearest clickable ancestor, as a crawler would tap.
    Clickable,
}

fn tap_text(world: &mut World, text: &str) {
    let target = Target {
        text: Some(text.to_string()),
        ..Target::default()
    };
    let (x, y) = centre_of(world, &target);
    world.tap(x, y);
}

fn tap_id(world: &mut World, id: &str) {
    let target = Target {
        resource_id: Some(format!("{TINY}:id/{id}")),
        ..Target::default()
    };
    let (x, y) = centre_of(world, &target);
    world.tap(x, y);
}

/// Attribute values of every node with this resource id in the current dump.
fn dumped(world: &World, resource_id: &str, attr: &str) -> Vec<String> {
    let xml = world.hierarchy_xml();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    doc.descendants()
        .filter(|n| n.attribute("resource-id") == Some(resource_id))
        .map(|n| n.attribute(attr).unwrap_or("").to_string())
        .collect()
}

/// Text that satisfies a `requires` pattern, from a few plausible inputs.
fn satisfying(regex: &regex::Regex) -> &'static str {
    [
        "user@example.com",
        "Secret123!",
        "4111111111111111",
        "Jane Doe",
        "1234",
    ]
    .into_iter()
    .find(|sample| regex.is_match(sample))
    .unwrap()
}

/// Puts the world on each transition's source screen, performs the transition's action on its
/// target (typing what `requires` asks for first) and checks where the device ends up.
/// Returns the transitions that did not go where they say.
fn walk_every_transition(spec: &str, aim: Aim) -> Vec<String> {
    let model = AppModel::load(spec).unwrap();
    let mut failures = Vec::new();
    for (i, t) in model.transitions().iter().enumerate() {
        let mut w = World::new(model.clone(), WorldOptions::default());
        let from = &model.screen(t.from).id;
        w.open_screen(from).unwrap();
        for (field, regex) in &t.requires {
            let target = Target {
                resource_id: Some(field.clone()),
                ..Target::default()
            };
            let (x, y) = centre_of(&w, &target);
            w.tap(x, y);
            w.input_text(satisfying(regex)).unwrap();
        }
        let point = t.target.as_ref().map(|target| match (aim, t.action) {
            (Aim::Clickable, Action::Click) => clickable_centre_of(&w, target),
            _ => centre_of(&w, target),
        });
        match (t.action, point) {
            (Action::Click, Some((x, y))) => w.tap(x, y),
            (Action::LongClick, Some((x, y))) => w.long_press(x, y),
            (Action::Input, Some((x, y))) => {
                w.tap(x, y);
                w.input_text("hello").unwrap();
            }
            (Action::Back, _) => w.key("KEYCODE_BACK").unwrap(),
            (gesture, point) => {
                let (w_px, h_px) = w.screen_size();
                let (x, y) = point.unwrap_or((w_px as i32 / 2, h_px as i32 / 2));
                let (dx, dy) = match gesture {
                    Action::ScrollDown => (0, -400),
                    Action::ScrollUp => (0, 400),
                    Action::SwipeLeft => (-400, 0),
                    _ => (400, 0),
                };
                w.swipe(x, y, x + dx, y + dy, 300);
            }
        }
        let now = w.foreground();
        let arrived = match &t.to {
            Destination::Screen(to) => now.screen == model.screen(*to).id,
            Destination::Crash(_) => {
                now.screen == "@launcher" && w.crash_log().contains("FATAL EXCEPTION")
            }
            Destination::External(package) => now.package == *package,
        };
        if !arrived {
            failures.push(format!(
                "transition {i} {from} {:?} -> {:?} ended on {}",
                t.action, t.to, now.screen
            ));
        }
    }
    failures
}

#[test]
fn the_real_notes_app_loads_and_every_recorded_transition_walks() {
    droid::fixtures_or_skip!();
    let model = AppModel::load(&notes_spec()).unwrap();
    assert_eq!(model.package(), "com.simplemobiletools.notes.pro");
    assert_eq!(model.screens().len(), 51);
    assert_eq!(model.transitions().len(), 67);
    let failures = walk_every_transition(&notes_spec(), Aim::Target);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn tapping_the_clickable_element_around_a_target_fires_it_too() {
    droid::fixtures_or_skip!();
    for spec in [
        notes_spec(),
        "builtin:shop".into(),
        "builtin:settings".into(),
        "builtin:tiny".into(),
    ] {
        let failures = walk_every_transition(&spec, Aim::Clickable);
        assert!(failures.is_empty(), "{spec}: {failures:#?}");
    }
}

#[test]
fn bundled_apps_load_and_every_transition_walks() {
    for name in ["tiny", "shop", "settings"] {
        let spec = format!("builtin:{name}");
        let failures = walk_every_transition(&spec, Aim::Target);
        assert!(failures.is_empty(), "{name}: {failures:#?}");
        // The files under apps/ are the built-ins.
        let file = crate::common::root().join(format!("apps/{name}/model.json"));
        let from_file = AppModel::load(&file.to_string_lossy()).unwrap();
        assert_eq!(
            from_file.describe(),
            AppModel::load(&spec).unwrap().describe()
        );
    }
    assert!((18..=24).contains(&AppModel::load("builtin:shop").unwrap().screens().len()));
    assert!((38..=45).contains(&AppModel::load("builtin:settings").unwrap().screens().len()));
}

#[test]
fn describe_lists_the_screens_reachable_from_start() {
    droid::fixtures_or_skip!();
    let model = AppModel::load(&notes_spec()).unwrap();
    let text = model.describe();
    assert!(text.contains("51 screens"), "{text}");
    let reachable = model.reachable();
    assert_eq!(reachable[0], model.start());
    assert!(text.contains(&format!(
        "reachable from the start screen ({})",
        reachable.len()
    )));
    // s003 is only ever a source in the recorded data: nothing leads to it.
    let s003 = model.screen_index("s003").unwrap();
    assert!(!reachable.contains(&s003));
    assert!(text.contains("not reachable: ") && text.contains("s003"));
}

#[test]
fn validation_errors_name_the_screen_or_transition_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    let write = |body: &str| {
        let path = dir.path().join("model.json");
        std::fs::write(&path, body).unwrap();
        AppModel::load(&path.to_string_lossy()).unwrap_err()
    };
    let screen = r#"{"id": "home", "elements": [{"class": "android.widget.Button", "text": "Go", "bounds": [0, 0, 100, 100], "clickable": true}]}"#;
    let model = |screens: &str, transitions: &str| {
        format!(
            r#"{{"package": "p.q", "screen_size": [100, 200], "start": "home", "screens": [{screens}], "transitions": [{transitions}]}}"#
        )
    };
    let cases = [
        (
            model(
                screen,
                r#"{"from": "home", "action": "click", "target": {"text": "Go"}, "to": "nowhere"}"#,
            ),
            "transition 0 (from \"home\"): \"to\" names no screen: \"nowhere\"",
        ),
        (
            model(
                screen,
                r#"{"from": "home", "action": "fly", "target": {"text": "Go"}, "to": "home"}"#,
            ),
            "unknown action \"fly\"",
        ),
        (
            model(
                screen,
                r#"{"from": "home", "action": "click", "target": {"text": "Stop"}, "to": "home"}"#,
            ),
            "matches no element of the screen",
        ),
        (
            model(
                screen,
                r#"{"from": "home", "action": "click", "target": {"text": "Go"}, "to": "home", "requires": {"p.q:id/email": "("}}"#,
            ),
            "requires field \"p.q:id/email\", not on the screen",
        ),
        (
            model(r#"{"id": "home"}"#, ""),
            "screen \"home\": has neither \"hierarchy\" nor \"elements\"",
        ),
        (
            model(r#"{"id": "home", "hierarchy": "missing.xml"}"#, ""),
            "screen \"home\": cannot read",
        ),
        (
            model(&format!("{screen}, {screen}"), ""),
            "screen \"home\": defined twice",
        ),
        (
            model(screen, "").replace("\"start\": \"home\"", "\"start\": \"away\""),
            "start screen \"away\" is not defined",
        ),
        ("{\"package\": ".to_string(), "not a valid app model"),
    ];
    for (body, expected) in cases {
        let err = write(&body).to_string();
        assert!(err.contains(expected), "{err:?} lacks {expected:?}");
    }
    assert!(matches!(
        AppModel::load("builtin:nope"),
        Err(ModelError::UnknownBuiltin { .. })
    ));
}

#[test]
fn the_launcher_is_in_front_until_an_app_launches() {
    let mut w = world("builtin:tiny");
    assert_eq!(screen(&w), "@launcher");
    assert_eq!(w.foreground().package, "com.android.launcher3");
    assert!(w.hierarchy_xml().contains("text=\"Tiny\""));
    assert_eq!(
        w.launch("com.nope"),
        Err(LaunchError::UnknownPackage("com.nope".into()))
    );
    // Tapping the app's icon launches it.
    let xml = w.hierarchy_xml();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let icon = doc
        .descendants()
        .find(|n| n.attribute("text") == Some("Tiny"))
        .unwrap();
    let bounds: Vec<i32> = icon
        .attribute("bounds")
        .unwrap()
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    w.tap((bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2);
    assert_eq!(screen(&w), "home");
    assert_eq!(w.foreground().activity, "com.example.tiny.MainActivity");
}

#[test]
fn back_stack_home_resume_and_leaving_from_the_start_screen() {
    let mut w = tiny();
    tap_id(&mut w, "sign_in");
    assert_eq!(screen(&w), "login");
    w.key("KEYCODE_HOME").unwrap();
    assert_eq!(screen(&w), "@launcher");
    w.launch(TINY).unwrap();
    assert_eq!(screen(&w), "login", "a running task resumes where it was");
    w.key("BACK").unwrap();
    assert_eq!(screen(&w), "home");
    w.key("4").unwrap();
    assert_eq!(screen(&w), "@launcher", "back on the start screen leaves");
    w.launch(TINY).unwrap();
    assert_eq!(screen(&w), "home");
    // A touch that matches nothing changes nothing.
    w.tap(5, 1270);
    assert_eq!(screen(&w), "home");
}

#[test]
fn required_fields_gate_a_transition_and_typed_text_shows_in_the_dump() {
    let mut w = tiny();
    tap_id(&mut w, "sign_in");
    tap_text(&mut w, "Submit");
    assert_eq!(screen(&w), "login", "no email typed yet");
    tap_id(&mut w, "email");
    w.input_text("bob").unwrap();
    tap_text(&mut w, "Submit");
    assert_eq!(screen(&w), "login", "bob is not an email address");
    tap_id(&mut w, "email");
    w.input_text("@x.org").unwrap();
    assert_eq!(
        dumped(&w, "com.example.tiny:id/email", "text"),
        ["bob@x.org"]
    );
    assert_eq!(dumped(&w, "com.example.tiny:id/email", "focused"), ["true"]);
    tap_id(&mut w, "password");
    w.input_text("pa%sss").unwrap();
    assert_eq!(
        dumped(&w, "com.example.tiny:id/password", "text"),
        ["•••••"],
        "password fields show bullets; %s is a space"
    );
    w.key("KEYCODE_DEL").unwrap();
    w.key("KEYCODE_X").unwrap();
    assert_eq!(
        dumped(&w, "com.example.tiny:id/password", "text"),
        ["•••••"]
    );
    tap_text(&mut w, "Submit");
    assert_eq!(screen(&w), "account");
    // A back transition from account goes home, not back to login.
    w.key("KEYCODE_BACK").unwrap();
    assert_eq!(screen(&w), "home");
}

#[test]
fn only_what_a_device_can_type_reaches_a_field() {
    let mut w = tiny();
    tap_id(&mut w, "sign_in");
    tap_id(&mut w, "email");
    assert!(matches!(
        w.input_text("héllo"),
        Err(InputError::Untypable(_))
    ));
    assert_eq!(dumped(&w, "com.example.tiny:id/email", "text"), ["Email"]);
    assert_eq!(w.ime_text("héllo"), Err(InputError::ImeNotActive));

    let model = AppModel::load("builtin:tiny").unwrap();
    let options = WorldOptions {
        ime_adbkeyboard: true,
        ..WorldOptions::default()
    };
    let mut w = World::new(model, options);
    w.launch(TINY).unwrap();
    tap_id(&mut w, "sign_in");
    tap_id(&mut w, "email");
    let adb_ime = "com.android.adbkeyboard/.AdbIME";
    assert!(w.ime_list().iter().any(|ime| ime == adb_ime));
    assert!(!w.ime_set(adb_ime), "must be enabled first");
    assert_eq!(w.ime_text("é"), Err(InputError::ImeNotActive));
    assert!(w.ime_enable(adb_ime) && w.ime_set(adb_ime));
    assert_eq!(w.ime_current(), adb_ime);
    w.ime_text("héllo ✓").unwrap();
    assert_eq!(dumped(&w, "com.example.tiny:id/email", "text"), ["héllo ✓"]);
    assert!(w
        .installed_packages()
        .iter()
        .any(|p| p == "com.android.adbkeyboard"));
}

#[test]
fn an_input_transition_fires_and_carries_the_text_along() {
    let mut w = tiny();
    tap_id(&mut w, "search");
    tap_id(&mut w, "query");
    w.input_text("red").unwrap();
    assert_eq!(screen(&w), "results");
    w.key("KEYCODE_SPACE").unwrap();
    w.input_text("shoes").unwrap();
    assert_eq!(
        dumped(&w, "com.example.tiny:id/query", "text"),
        ["red shoes"]
    );
}

#[test]
fn a_crash_kills_the_app_and_fills_the_crash_buffer() {
    let mut w = tiny();
    assert_eq!(w.crash_log(), "");
    let pid = w.pid(TINY).unwrap();
    tap_text(&mut w, "Crash");
    assert_eq!(screen(&w), "@launcher");
    assert_eq!(w.pid(TINY), None);
    let log = w.crash_log();
    assert!(log.starts_with("--------- beginning of crash\n"), "{log}");
    for expected in [
        "E AndroidRuntime: FATAL EXCEPTION: main".to_string(),
        format!("E AndroidRuntime: Process: {TINY}, PID: {pid}"),
        "E AndroidRuntime: java.lang.IllegalStateException: boom".to_string(),
        "E AndroidRuntime: \tat com.example.tiny.MainActivity.onClick".to_string(),
    ] {
        assert!(log.contains(&expected), "{log} lacks {expected}");
    }
    w.clear_crash_log();
    assert_eq!(w.crash_log(), "");
    // The next launch starts afresh, in a new process.
    w.launch(TINY).unwrap();
    assert_eq!(screen(&w), "home");
    assert_ne!(w.pid(TINY), Some(pid));
}

fn tap_text_after_launch(w: &mut World, text: &str) {
    w.launch(TINY).unwrap();
    tap_text(w, text);
}

#[test]
fn an_external_link_brings_another_app_to_the_front() {
    let mut w = tiny();
    tap_text(&mut w, "Website");
    let front = w.foreground();
    assert_eq!(front.package, "com.android.chrome");
    assert_eq!(front.screen, "@external:com.android.chrome");
    assert!(w.hierarchy_xml().contains("package=\"com.android.chrome\""));
    // The browser runs in its own task: launching the app shows the app again...
    w.launch(TINY).unwrap();
    assert_eq!(screen(&w), "home");
    w.launch("com.android.chrome").unwrap();
    assert_eq!(screen(&w), "@external:com.android.chrome");
    // ...and finishing the browser returns to the app that opened it.
    w.key("KEYCODE_BACK").unwrap();
    assert_eq!(screen(&w), "home");
    w.key("KEYCODE_BACK").unwrap();
    assert_eq!(screen(&w), "@launcher");
    tap_text_after_launch(&mut w, "Website");
    w.force_stop("com.android.chrome");
    assert_eq!(screen(&w), "@launcher", "the browser's task was in front");
    w.launch(TINY).unwrap();
    assert_eq!(screen(&w), "home");
}

#[test]
fn a_secure_screen_screenshots_black_but_still_dumps() {
    let mut w = tiny();
    let home = w.screenshot();
    assert!(home.pixels().any(|p| p.0 != [0, 0, 0, 255]));
    tap_id(&mut w, "pay");
    assert!(w.is_secure());
    let shot = w.screenshot();
    assert_eq!(shot.dimensions(), (720, 1280));
    assert!(shot.pixels().all(|p| p.0 == [0, 0, 0, 255]));
    assert!(w.hierarchy_xml().contains("Pay now"));
}

#[test]
fn scrolling_replaces_the_screen_and_long_press_has_its_own_transitions() {
    let mut w = tiny();
    tap_text(&mut w, "Open list");
    w.swipe(360, 1000, 360, 400, 300);
    assert_eq!(screen(&w), "list_more");
    w.swipe(360, 400, 360, 1000, 300);
    assert_eq!(screen(&w), "list");
    w.swipe(360, 1000, 360, 400, 300);
    w.key("KEYCODE_BACK").unwrap();
    assert_eq!(
        screen(&w),
        "home",
        "a scroll does not add to the back stack"
    );
    tap_id(&mut w, "greeting");
    assert_eq!(screen(&w), "home", "a plain tap is not a long press");
    let target = Target {
        resource_id: Some(format!("{TINY}:id/greeting")),
        ..Target::default()
    };
    let (x, y) = centre_of(&w, &target);
    w.swipe(x, y, x + 3, y, 800);
    assert_eq!(screen(&w), "menu");
}

#[test]
fn keys_home_app_switch_and_unknown_names() {
    let mut w = tiny();
    tap_id(&mut w, "sign_in");
    assert_eq!(
        w.key("KEYCODE_NOPE"),
        Err(InputError::UnknownKey("KEYCODE_NOPE".into()))
    );
    w.key("KEYCODE_APP_SWITCH").unwrap();
    assert_eq!(screen(&w), "@recents");
    assert!(w.hierarchy_xml().contains("content-desc=\"Tiny\""));
    w.key("187").unwrap();
    assert_eq!(screen(&w), "login");
    w.key("3").unwrap();
    assert_eq!(screen(&w), "@launcher");
    w.key("KEYCODE_APP_SWITCH").unwrap();
    // The card of the task brings it back.
    let xml = w.hierarchy_xml();
    assert!(xml.contains("Clear all"));
    let (width, height) = w.screen_size();
    w.tap(width as i32 / 2, height as i32 / 10 + 5);
    assert_eq!(screen(&w), "login");
}

#[test]
fn start_activity_reaches_a_screen_by_its_activity() {
    let mut w = world("builtin:tiny");
    w.start_activity("com.example.tiny/.LoginActivity").unwrap();
    assert_eq!(screen(&w), "login");
    w.key("BACK").unwrap();
    assert_eq!(screen(&w), "@launcher");
    w.start_activity("com.example.tiny/com.example.tiny.MainActivity")
        .unwrap();
    assert_eq!(screen(&w), "home");
    assert!(matches!(
        w.start_activity("com.example.tiny/.Nope"),
        Err(LaunchError::NoSuchActivity(_))
    ));
    assert!(matches!(
        w.start_activity("com.nope/.Main"),
        Err(LaunchError::UnknownPackage(_))
    ));
    assert_eq!(w.version_name(TINY).as_deref(), Some("1.0"));
    assert_eq!(w.version_name("com.nope"), None);
}

#[test]
fn anr_on_a_screen_shows_the_system_dialog_until_closed() {
    let mut w = tiny();
    w.set_anr_screen(Some("login".into()));
    tap_id(&mut w, "sign_in");
    assert!(w.anr_showing());
    let xml = w.hierarchy_xml();
    assert!(xml.contains("text=\"Tiny isn't responding\""), "{xml}");
    assert!(!xml.contains("Submit"), "only the dialog window is dumped");
    w.key("KEYCODE_BACK").unwrap();
    assert!(w.anr_showing(), "the dialog cannot be cancelled");
    let find = |w: &World, text: &str| {
        let xml = w.hierarchy_xml();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let node = doc
            .descendants()
            .find(|n| n.attribute("text") == Some(text))
            .unwrap();
        let b: Vec<i32> = node
            .attribute("bounds")
            .unwrap()
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)
    };
    let (x, y) = find(&w, "Wait");
    w.tap(x, y);
    assert!(!w.anr_showing());
    assert_eq!(screen(&w), "login");
    w.key("BACK").unwrap();
    tap_id(&mut w, "sign_in");
    assert!(w.anr_showing(), "it comes back with the screen");
    let (x, y) = find(&w, "Close app");
    w.tap(x, y);
    assert_eq!(screen(&w), "@launcher");
    assert_eq!(w.pid(TINY), None);
}

#[test]
fn the_truth_log_records_screens_and_inputs_as_received() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truth.jsonl");
    let options = WorldOptions {
        truth: Some(TruthLog::create(&path).unwrap()),
        ..WorldOptions::default()
    };
    let mut w = World::new(AppModel::load("builtin:tiny").unwrap(), options);
    w.launch(TINY).unwrap();
    tap_id(&mut w, "sign_in");
    tap_id(&mut w, "email");
    w.input_text("a%sb").unwrap();
    w.key("KEYCODE_BACK").unwrap();
    w.tap(1, 1279);
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let brief: Vec<String> = lines
        .iter()
        .map(|l| {
            assert!(l["ts"].is_string());
            match (l.get("screen"), l.get("input")) {
                (Some(s), _) => format!("screen {} {}", s.as_str().unwrap(), l["package"]),
                (_, Some(i)) => format!("{} {}", i.as_str().unwrap(), {
                    let mut rest: BTreeMap<&str, &Value> = BTreeMap::new();
                    for (k, v) in l.as_object().unwrap() {
                        if k != "ts" && k != "input" {
                            rest.insert(k, v);
                        }
                    }
                    serde_json::to_string(&rest).unwrap()
                }),
                _ => panic!("{l}"),
            }
        })
        .collect();
    let (login_x, login_y) = {
        let w2 = tiny();
        centre_of(
            &w2,
            &Target {
                resource_id: Some(format!("{TINY}:id/sign_in")),
                ..Target::default()
            },
        )
    };
    assert_eq!(
        brief,
        [
            "screen @launcher \"com.android.launcher3\"".to_string(),
            format!("launch {{\"package\":\"{TINY}\"}}"),
            format!("screen home \"{TINY}\""),
            format!("tap {{\"x\":{login_x},\"y\":{login_y}}}"),
            format!("screen login \"{TINY}\""),
            brief[5].clone(),
            "text {\"text\":\"a%sb\"}".to_string(),
            "key {\"key\":\"KEYCODE_BACK\"}".to_string(),
            format!("screen home \"{TINY}\""),
            "tap {\"x\":1,\"y\":1279}".to_string(),
        ]
    );
    assert!(brief[5].starts_with("tap "));
}

#[test]
fn the_dump_of_a_recorded_screen_keeps_its_attributes() {
    droid::fixtures_or_skip!();
    let mut w = world(&notes_spec());
    w.open_screen("s001").unwrap();
    let xml = w.hierarchy_xml();
    assert!(xml.starts_with(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node index=\"0\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\""
    ));
    let original = std::fs::read_to_string(fixtures().join("apps/notes/screens/s001.xml")).unwrap();
    let count = |xml: &str| {
        roxmltree::Document::parse(xml)
            .unwrap()
            .descendants()
            .filter(|n| n.has_tag_name("node"))
            .count()
    };
    assert_eq!(count(&xml), count(&original));
    assert_eq!(w.screen_size(), (1080, 2280));
    assert_eq!(
        w.foreground().activity,
        "com.simplemobiletools.notes.pro.activities.MainActivity"
    );
}

/// Perceptual hashes (`droid::hash::phash_image`, what droid-hash uses) and digests of the raw
/// pixels of every screen of the bundled and fixture apps, by app. Secure screens are black and
/// left out.
fn screen_hashes() -> Vec<(String, String, u64, Vec<u8>)> {
    let mut out = Vec::new();
    for spec in [
        notes_spec(),
        "builtin:shop".into(),
        "builtin:settings".into(),
        "builtin:tiny".into(),
    ] {
        let model = AppModel::load(&spec).unwrap();
        let mut w = World::new(model.clone(), WorldOptions::default());
        for s in model.screens().iter().filter(|s| !s.secure) {
            w.open_screen(&s.id).unwrap();
            let shot = w.screenshot();
            let pixels = sha2::Sha256::digest(shot.as_raw()).to_vec();
            let hash = droid::hash::phash_image(&image::DynamicImage::ImageRgba8(shot));
            out.push((model.package().to_string(), s.id.clone(), hash, pixels));
        }
    }
    out
}

#[test]
fn identical_screens_render_identical_bytes() {
    let mut w = tiny();
    let first = render::png(&w.screenshot());
    tap_id(&mut w, "sign_in");
    assert_ne!(render::png(&w.screenshot()), first);
    w.key("BACK").unwrap();
    assert_eq!(render::png(&w.screenshot()), first);
    assert_eq!(&first[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn distinct_screens_differ_in_perceptual_hash() {
    droid::fixtures_or_skip!();
    let shots = screen_hashes();
    let (mut pairs, mut far, mut same_app_pairs, mut same_app_far) = (0, 0, 0, 0);
    for (i, a) in shots.iter().enumerate() {
        for b in &shots[i + 1..] {
            if a.3 == b.3 {
                continue; // the model recorded the same picture twice: not distinct
            }
            let distance = droid::hash::hamming(a.2, b.2);
            pairs += 1;
            far += usize::from(distance > 5);
            if a.0 == b.0 {
                same_app_pairs += 1;
                same_app_far += usize::from(distance > 5);
            }
        }
    }
    let share = far as f64 / pairs as f64;
    let same_app_share = same_app_far as f64 / same_app_pairs as f64;
    eprintln!(
        "perceptual hash: {far}/{pairs} pairs of distinct screens differ by > 5 bits ({:.1}%); within one app {same_app_far}/{same_app_pairs} ({:.1}%)",
        share * 100.0,
        same_app_share * 100.0
    );
    assert!(share >= 0.95, "{share}");
    assert!(same_app_share >= 0.95, "{same_app_share}");
}

#[test]
fn switches_toggle_up_arrows_go_back_and_cycles_do_not_grow_the_stack() {
    let shop = "com.example.shop";
    let mut w = world("builtin:shop");
    w.open_screen("home").unwrap();
    let tap_target = |w: &mut World, target: Target| {
        let (x, y) = centre_of(w, &target);
        w.tap(x, y);
    };
    let by_id = |id: &str| Target {
        resource_id: Some(format!("{shop}:id/{id}")),
        ..Target::default()
    };
    tap_target(&mut w, by_id("nav_settings"));
    assert_eq!(screen(&w), "settings");
    let dark = format!("{shop}:id/dark_theme");
    assert_eq!(dumped(&w, &dark, "checked"), ["false"]);
    let before = render::png(&w.screenshot());
    tap_target(&mut w, by_id("dark_theme"));
    assert_eq!(dumped(&w, &dark, "checked"), ["true"]);
    assert_ne!(render::png(&w.screenshot()), before);
    assert_eq!(screen(&w), "settings");

    tap_target(&mut w, by_id("about"));
    assert_eq!(screen(&w), "about");
    tap_target(
        &mut w,
        Target {
            content_desc: Some("Navigate up".into()),
            ..Target::default()
        },
    );
    assert_eq!(screen(&w), "settings");
    assert_eq!(
        dumped(&w, &dark, "checked"),
        ["true"],
        "a screen keeps its state while on the stack"
    );

    // home -> settings -> home returns to the first home: one back leaves the app.
    tap_target(&mut w, by_id("nav_home"));
    assert_eq!(screen(&w), "home");
    w.key("KEYCODE_BACK").unwrap();
    assert_eq!(screen(&w), "@launcher");
}
