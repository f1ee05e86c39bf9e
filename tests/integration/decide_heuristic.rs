//! The heuristic and random deciders, in-process and through droid-decide.

use std::io::Write;
use std::process::Stdio;

use droid::capture::offline::{observe_files, OfflineOptions};
use droid::decide::heuristic::Heuristic;
use droid::decide::random::RandomDecider;
use droid::decide::{self, Credentials};
use droid::events::{Action, ActionType, Decision, Event, Observation, ScreenHash};
use droid::screen::{signature, ActionKey, Screen};
use droid::ui::{Bounds, UiElement};
use serde_json::Value;

use crate::common::{droid, fixtures};

/// What the heuristic decides for an observation it has already taken in.
fn next(heuristic: &mut Heuristic, observation: &Observation) -> droid::decide::heuristic::Choice {
    let shown = Screen::of(observation);
    let choice = heuristic.choose(&shown);
    heuristic.learn_choice(&shown, &choice);
    choice
}
use crate::explore::explore;

fn credentials() -> Credentials {
    Credentials {
        email: Some("qa@example.com".into()),
        username: Some("qa-user".into()),
        password: Some("S3cret!pw".into()),
    }
}

fn login_form() -> Observation {
    observe_files(&OfflineOptions {
        xml_path: fixtures().join("uidump/22_login_form_password.xml"),
        ..OfflineOptions::default()
    })
    .unwrap()
}

/// A screen of buttons with the given labels (an empty label is an anonymous icon button).
fn buttons(activity: &str, labels: &[&str]) -> Observation {
    Observation {
        package: Some("com.example".into()),
        activity: Some(activity.into()),
        hash: Some(ScreenHash {
            phash: Some("00ff00ff00ff00ff".into()),
            ..ScreenHash::default()
        }),
        elements: labels
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let top = 100 + i as i32 * 150;
                UiElement {
                    element_id: i as u32,
                    ref_id: Some(i as u32 + 1),
                    text: label.to_string(),
                    class_name: if label.is_empty() {
                        "android.widget.ImageButton".into()
                    } else {
                        "android.widget.Button".into()
                    },
                    resource_id: format!("com.example:id/b{i}"),
                    clickable: true,
                    enabled: true,
                    visible: true,
                    bounds: Bounds::from([0, top, 1080, top + 120]),
                    ..UiElement::default()
                }
            })
            .collect(),
        ..Observation::default()
    }
}

fn labels_of(observation: &Observation, actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .map(|a| match a.ref_id {
            Some(r) => observation
                .elements
                .iter()
                .find(|e| e.ref_id == Some(r))
                .map(|e| e.text.clone())
                .unwrap_or_default(),
            None => a.action.to_string(),
        })
        .collect()
}

#[test]
fn editable_fields_are_filled_first_with_test_credentials() {
    droid::fixtures_or_skip!();
    let observation = login_form();
    let mut heuristic = Heuristic::new(0, credentials());
    let choice = heuristic.decide(&Screen::of(&observation));
    let inputs: Vec<(&str, &str)> = choice
        .actions
        .iter()
        .take_while(|a| a.action == ActionType::Input)
        .map(|a| {
            assert_eq!(a.action, ActionType::Input);
            let element = droid::screen::element_by_ref(&observation, a.ref_id.unwrap()).unwrap();
            let b = element.bounds;
            let expected = droid::events::BoundingBox {
                top_left: [b.x1.into(), b.y1.into()],
                bottom_right: [b.x2.into(), b.y2.into()],
            };
            assert_eq!(a.target_bounding_box, Some(expected));
            (
                element.resource_id.as_str(),
                a.input_text.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        inputs,
        [
            ("com.safeum.android:id/et_login", "qa-user"),
            ("com.safeum.android:id/et_password", "S3cret!pw"),
        ]
    );
    // Any action after the fills is the form's submit, batched with them.
    for extra in &choice.actions[inputs.len()..] {
        assert_eq!(extra.action, ActionType::Click);
    }
    // Once the fields show what was typed, the buttons come next, not the fields again.
    let mut filled = observation.clone();
    for element in filled.elements.iter_mut().filter(|e| e.editable) {
        element.text = if element.password {
            "•••••••••".into()
        } else {
            "qa-user".into()
        };
    }
    let next = heuristic.decide(&Screen::of(&filled));
    assert_eq!(next.actions.len(), 1);
    assert_eq!(next.actions[0].action, ActionType::Click);
}

#[test]
fn text_bearing_first_anonymous_next_risky_last_then_back_then_relaunch() {
    let screen = buttons(
        "Main",
        &["Log out", "", "Settings", "Delete account", "About"],
    );
    let mut heuristic = Heuristic::new(7, Credentials::default());
    heuristic.set_package(Some("com.example".into()), Vec::new());
    let mut order = Vec::new();
    for _ in 0..7 {
        let choice = heuristic.decide(&Screen::of(&screen));
        order.extend(labels_of(&screen, &choice.actions));
        if choice.relaunch.is_some() {
            order.push("relaunch".into());
        }
    }
    let position = |label: &str| order.iter().position(|l| l == label).unwrap();
    assert!(position("Settings") < position("") && position("About") < position(""));
    assert!(position("") < position("Log out") && position("") < position("Delete account"));
    assert_eq!(&order[5..], ["back", "home", "relaunch"], "{order:?}");
}

#[test]
fn the_same_seed_gives_the_same_decisions() {
    let screen = buttons("Main", &["", "", "", "", "", ""]);
    let run = |seed: u64| {
        let mut heuristic = Heuristic::new(seed, Credentials::default());
        (0..6)
            .map(|_| heuristic.decide(&Screen::of(&screen)).actions[0].ref_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(run(3), run(3));
    assert!(
        (0..10).any(|seed| run(seed) != run(3)),
        "ties are broken by the seed"
    );
    let random = |seed: u64| {
        let mut decider = RandomDecider::new(seed);
        (0..20).map(|_| decider.decide(&screen)).collect::<Vec<_>>()
    };
    assert_eq!(random(5), random(5));
    assert_ne!(random(5), random(6));
}

/// Takes in `on`, then learns that the widget labelled `label` (or back, for "back") was
/// acted on there, as if chosen by another decider.
fn act_on_label(heuristic: &mut Heuristic, on: &Observation, label: &str) {
    let shown = Screen::of(on);
    heuristic.observe(&shown);
    let action = match label {
        "back" => Action::new(ActionType::Back),
        _ => Action {
            ref_id: on.elements.iter().find(|e| e.text == label).unwrap().ref_id,
            ..Action::new(ActionType::Click)
        },
    };
    heuristic.learn_decision(&shown, &Decision::new(vec![action]));
}

#[test]
fn a_widget_untried_here_is_tried_here_not_walked_to_on_a_richer_screen() {
    // Home: four widgets that did nothing and one that opened a detail screen, whose two
    // widgets both showed new screens. Both screens show the same untried "Search".
    let search = |mut screen: Observation| {
        let last = screen.elements.last_mut().unwrap();
        last.resource_id = "com.example:id/search".into();
        screen
    };
    let home = search(buttons(
        "Home",
        &["Open", "One", "Two", "Three", "Four", "Search"],
    ));
    let detail = search(buttons("Detail", &["First", "Second", "Search"]));
    let mut heuristic = Heuristic::new(0, Credentials::default());
    for label in ["One", "Two", "Three", "Four", "Open"] {
        act_on_label(&mut heuristic, &home, label);
    }
    for (label, page) in [("First", "FirstPage"), ("Second", "SecondPage")] {
        act_on_label(&mut heuristic, &detail, label);
        act_on_label(&mut heuristic, &buttons(page, &["More"]), "back");
    }
    act_on_label(&mut heuristic, &detail, "back");
    // The detail screen is the more productive, but its one untried widget is untried here
    // too: it is tried here, not walked to.
    heuristic.observe(&Screen::of(&home));
    assert_eq!(
        labels_of(&home, &next(&mut heuristic, &home).actions),
        ["Search"]
    );
}

#[test]
fn an_exhausted_screen_walks_the_shortest_known_path_to_untried_actions() {
    let home = buttons("Home", &["Open"]);
    let detail = buttons("Detail", &["One", "Two"]);
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut decide =
        |screen: &Observation| labels_of(screen, &heuristic.decide(&Screen::of(screen)).actions);
    assert_eq!(decide(&home), ["Open"]);
    let first = decide(&detail);
    // That button led back home, which has nothing left: the known way to Detail is taken, and
    // its other button tapped in the same decision.
    assert_eq!(decide(&home), ["Open", "tap"]);
    // It left Detail as it was. Everything known is explored: back, then relaunch.
    assert_eq!(first.len(), 1);
    assert_eq!(decide(&detail), ["back"]);
    assert_eq!(decide(&home), ["back"]);
    assert_eq!(decide(&home), ["home"]);
}

/// Where a walk taps `label` on `screen`: the centre of its button.
fn centre_of(screen: &Observation, label: &str) -> [i64; 2] {
    let button = screen.elements.iter().find(|e| e.text == label).unwrap();
    let (x, y) = button.bounds.center();
    [i64::from(x), i64::from(y)]
}

/// The points of a decision's taps.
fn taps(actions: &[Action]) -> Vec<[i64; 2]> {
    actions
        .iter()
        .filter(|a| a.action == ActionType::Tap)
        .map(|a| a.point.unwrap())
        .collect()
}

/// The other label of a pair.
fn other_of<'a>(pair: [&'a str; 2], chosen: &[String]) -> &'a str {
    match chosen == [pair[0]] {
        true => pair[1],
        false => pair[0],
    }
}

// Home → Menu → Settings (two buttons) → Done (two buttons): each untried button leads home.
fn walk_screens() -> [Observation; 4] {
    [
        buttons("Home", &["Menu"]),
        buttons("Menu", &["Settings"]),
        buttons("Settings", &["Alpha", "Beta"]),
        buttons("Done", &["Xray", "Yank"]),
    ]
}

#[test]
fn a_known_path_is_walked_in_one_decision_and_its_outcome_learned() {
    let [home, menu, settings, done] = walk_screens();
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut decide = |screen: &Observation| heuristic.decide(&Screen::of(screen));
    assert_eq!(labels_of(&home, &decide(&home).actions), ["Menu"]);
    assert_eq!(labels_of(&menu, &decide(&menu).actions), ["Settings"]);
    let first = labels_of(&settings, &decide(&settings).actions);
    let other = other_of(["Alpha", "Beta"], &first);
    // Back home: the way to Settings' other button is known, so one decision takes it: the first
    // move on the screen observed, then taps where the next widgets were seen.
    let choice = decide(&home);
    assert_eq!(labels_of(&home, &choice.actions[..1]), ["Menu"]);
    let expected = [centre_of(&menu, "Settings"), centre_of(&settings, other)];
    assert_eq!(taps(&choice.actions), expected);
    // Both taps name the screen they are meant for (not observed in this decision).
    let blind = choice.actions.iter().filter(|a| a.screen.is_some()).count();
    assert_eq!(blind, 2);
    // Its outcome is learned as the last tap's: `other` led to Done, now on the known path.
    let tried = labels_of(&done, &decide(&done).actions);
    let left = other_of(["Xray", "Yank"], &tried);
    let choice = decide(&home);
    let expected = [
        centre_of(&menu, "Settings"),
        centre_of(&settings, other),
        centre_of(&done, left),
    ];
    assert_eq!(taps(&choice.actions), expected);
}

#[test]
fn a_walk_ends_with_a_containers_untried_gesture_taken_where_it_was_seen() {
    let home = buttons("Home", &["Pages"]);
    // A pager that does not turn left, and a button home.
    let mut pages = buttons("Pages", &["Home"]);
    let pager = Bounds::from([0, 300, 1080, 1800]);
    pages.elements.push(UiElement {
        element_id: 1,
        class_name: "androidx.viewpager.widget.ViewPager".into(),
        resource_id: "com.example:id/pager".into(),
        scrollable: true,
        enabled: true,
        visible: true,
        bounds: pager,
        ..UiElement::default()
    });
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut decide = |screen: &Observation| heuristic.decide(&Screen::of(screen));
    assert_eq!(labels_of(&home, &decide(&home).actions), ["Pages"]);
    assert_eq!(decide(&pages).actions[0].action, ActionType::SwipeLeft);
    assert_eq!(labels_of(&pages, &decide(&pages).actions), ["Home"]);
    // Home is exhausted; the pager's other gestures are untried: one decision walks there and
    // swipes or scrolls the pager where it was seen.
    let choice = decide(&home);
    assert_eq!(labels_of(&home, &choice.actions[..1]), ["Pages"]);
    assert_eq!(choice.actions.len(), 2, "{:?}", choice.actions);
    let gesture = &choice.actions[1];
    assert!(
        matches!(
            gesture.action,
            ActionType::SwipeRight | ActionType::ScrollUp | ActionType::ScrollDown
        ),
        "{gesture:?}"
    );
    assert_eq!(
        gesture.target_bounding_box,
        Some(droid::screen::bounding_box(pager))
    );
    assert!(gesture.screen.is_some(), "a blind move names its screen");
}

#[test]
fn a_walk_that_shows_where_it_started_stalled_at_its_first_move() {
    let [home, menu, settings, _] = walk_screens();
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut decide = |screen: &Observation| heuristic.decide(&Screen::of(screen));
    decide(&home);
    decide(&menu);
    let first = labels_of(&settings, &decide(&settings).actions);
    let other = other_of(["Alpha", "Beta"], &first);
    let walk = [centre_of(&menu, "Settings"), centre_of(&settings, other)];
    assert_eq!(taps(&decide(&home).actions), walk);
    // Home again: Menu did nothing this time (a link dead in this state of the app), so it is
    // no route until a relaunch, and the taps after it were not taken where meant: Settings'
    // other button is still untried.
    assert_eq!(labels_of(&home, &decide(&home).actions), ["back"]);
    let relaunch = decide(&home);
    assert_eq!(relaunch.relaunch.as_deref(), Some(""));
    assert_eq!(taps(&decide(&home).actions), walk);
}

#[test]
fn a_walk_stops_before_a_form_whose_fields_need_filling() {
    let home = buttons("Home", &["Login"]);
    let login = with_field_first(buttons("Login", &["", "Sign in"]));
    let inside = buttons("Inside", &["One", "Two"]);
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut decide = |screen: &Observation| heuristic.decide(&Screen::of(screen));
    assert_eq!(labels_of(&home, &decide(&home).actions), ["Login"]);
    assert_eq!(labels_of(&login, &decide(&login).actions), ["", "Sign in"]);
    decide(&inside);
    // Back home, the way to Inside passes the form: only its first move is taken.
    let choice = decide(&home);
    assert_eq!(labels_of(&home, &choice.actions), ["Login"]);
    assert!(choice.actions.iter().all(|a| a.screen.is_none()));
}

/// The decisions `droid-decide` writes for `observations`, after learning `history`.
fn stage_decisions(history: Vec<Event>, observations: &[Observation]) -> Vec<Event> {
    let input: String = observations
        .iter()
        .map(|o| format!("{}\n", Event::Observation(Box::new(o.clone())).to_line()))
        .collect();
    let (_, output) = heuristic_stage(history, &input);
    output
        .lines()
        .filter_map(|line| Event::from_line(line).unwrap())
        .collect()
}

/// A heuristic decide stage, in process, resuming `history`, over `input`.
fn heuristic_stage(history: Vec<Event>, input: &str) -> (droid::filter::Outcome, String) {
    let config = decide::Config {
        decider: decide::Decider::Heuristic,
        seed: 0,
        prompt: decide::prompt::PromptSettings::default(),
        history,
        fall_back_when_unreachable: false,
        budget: Default::default(),
        price: None,
    };
    let mut output = Vec::new();
    let mut stage = decide::Stage::new(config).unwrap();
    let outcome = droid::filter::run(
        &mut stage,
        input.as_bytes(),
        &mut output,
        false,
        &mut |_| {},
    )
    .unwrap();
    (outcome, String::from_utf8(output).unwrap())
}

/// The decisions a long-running `droid-decide` writes for `run`, and the one a fresh process
/// given the events recorded before the run's last observation writes for that observation.
fn long_running_and_one_shot(run: &[Observation]) -> (Vec<Decision>, Decision) {
    let long_running = stage_decisions(Vec::new(), run);
    let last_observed = long_running
        .iter()
        .rposition(|e| matches!(e, Event::Observation(_)))
        .unwrap();
    let history = long_running[..last_observed].to_vec();
    let one_shot = stage_decisions(history, &run[run.len() - 1..]);
    let decisions = |events: &[Event]| -> Vec<Decision> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Decision(decision) => Some(decision.clone()),
                _ => None,
            })
            .collect()
    };
    let one_shot = decisions(&one_shot).pop().expect("a decision");
    (decisions(&long_running), one_shot)
}

#[test]
fn a_one_shot_decide_replays_a_recorded_walk_as_it_was_taken() {
    let [home, menu, settings, done] = walk_screens();
    // The stage takes the first screen's package for the app's: back on the first screen, once
    // its own actions are tried, comes before the walk (and shows the first screen again).
    let run = [
        home.clone(),
        menu,
        settings,
        home.clone(),
        home.clone(),
        done,
        home,
    ];
    let (long_running, one_shot) = long_running_and_one_shot(&run);
    assert_eq!(long_running[3].actions[0].action, ActionType::Back);
    let walked = |d: &Decision| d.actions.iter().filter(|a| a.screen.is_some()).count();
    assert!(walked(&long_running[4]) > 0, "{long_running:?}");
    // A fresh process given the run so far decides the last step as the long-running one did.
    let last = &long_running[6];
    assert_eq!(one_shot.actions, last.actions);

    assert_eq!(taps(&one_shot.actions).len(), 3);
}

/// The screen with its first element made an editable text field.
fn with_field_first(mut screen: Observation) -> Observation {
    let field = &mut screen.elements[0];
    field.class_name = "android.widget.EditText".into();
    field.editable = true;
    screen
}

/// A save dialog of the app's package: a file-name field showing `name`, then "SAVE".
fn save_dialog(name: &str) -> Observation {
    let mut dialog = with_field_first(buttons("Save", &[name, "SAVE"]));
    dialog.elements[0].resource_id = "com.simplemobiletools.notes.pro:id/title".into();
    dialog
}

#[test]
fn a_form_showing_new_text_of_its_own_is_submitted_again() {
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let first = save_dialog("Notes_2023.txt");
    let choice = heuristic.decide(&Screen::of(&first));
    assert_eq!(
        labels_of(&first, &choice.actions),
        ["Notes_2023.txt", "SAVE"]
    );
    // The package's "mobile" is no hint that the field wants a phone number.
    assert_eq!(
        choice.actions[0].input_text.as_deref(),
        Some("Hello from droid")
    );
    // SAVE did nothing: the dialog shows what was typed, and only back is left.
    let typed = save_dialog("Hello from droid");
    assert_eq!(
        labels_of(&typed, &heuristic.decide(&Screen::of(&typed)).actions),
        ["back"]
    );
    // The same dialog again for another file (another page's "Export as file"): its own new
    // text may make SAVE do something else, so it is filled and submitted again.
    let other = save_dialog("Diary.txt");
    let choice = heuristic.decide(&Screen::of(&other));
    assert_eq!(labels_of(&other, &choice.actions), ["Diary.txt", "SAVE"]);
}

/// `screen` with its first element, a field, made an editor: most of a 2400-pixel screen tall,
/// below the screen's other widgets.
fn with_editor_first(screen: Observation) -> Observation {
    let mut screen = with_field_first(screen);
    screen.screen_size = Some([1080, 2400]);
    let below = screen
        .elements
        .iter()
        .map(|e| e.bounds.y2)
        .max()
        .unwrap_or(0);
    screen.elements[0].bounds = Bounds::from([0, below + 10, 1080, 2300]);
    screen
}

/// A note editor showing `text` in its field, with an "Undo" button.
fn editor(text: &str) -> Observation {
    with_editor_first(buttons("Note", &[text, "Undo"]))
}

/// The heuristic's decision on `screen`: the labels its actions target, and the texts they type.
fn labels_and_texts(
    heuristic: &mut Heuristic,
    screen: &Observation,
) -> (Vec<String>, Vec<Option<String>>) {
    let choice = heuristic.decide(&Screen::of(screen));
    let texts = choice
        .actions
        .iter()
        .map(|a| a.input_text.clone())
        .collect();
    (labels_of(screen, &choice.actions), texts)
}

#[test]
fn a_field_showing_other_text_is_typed_into_again_when_nothing_else_is_left() {
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut decide = |screen: &Observation| labels_and_texts(&mut heuristic, screen);
    let empty = editor("Insert text here");
    assert_eq!(decide(&empty).0, ["Insert text here"]);
    let typed = editor("Hello from droid");
    assert_eq!(decide(&typed).0, ["Undo"]);
    assert_eq!(decide(&typed).0, ["back"]);
    // Back showed the same editor holding another note's text (the screens merge: same
    // widgets). Typing there may show what typing into the first did not: it comes before a
    // relaunch, and types text.
    let other = editor("2023.6.10 Sunny");
    let (labels, texts) = decide(&other);
    assert_eq!(labels, ["2023.6.10 Sunny"]);
    assert_eq!(texts, [Some("Hello from droid".to_string())]);
    // A field showing what was typed is not typed into again.
    assert_eq!(decide(&typed).0, ["home"]);
}

#[test]
fn a_field_showing_new_text_of_its_own_is_typed_into_as_on_an_unseen_screen() {
    let mut heuristic = Heuristic::new(0, Credentials::default());
    heuristic.set_package(Some("com.example".into()), Vec::new());
    let home = buttons("Main", &["Open", "Notes"]);
    let mut decide = |screen: &Observation| labels_and_texts(&mut heuristic, screen);
    decide(&home);
    // A written note: typing and back both leave it as it was.
    let field_only = |text: &str| with_editor_first(buttons("Note", &[text]));
    assert_eq!(
        decide(&field_only("2023.6.10 Sunny")).0,
        ["2023.6.10 Sunny"]
    );
    assert_eq!(decide(&field_only("Hello from droid")).0, ["back"]);
    // The same widgets show an empty note (the screens merge): a state not explored yet. Its
    // field is worth what an unseen screen's is, more than relaunching for the launch screen's
    // untried button, though this screen showed nothing new so far.
    let (labels, texts) = decide(&field_only("Insert text here"));
    assert_eq!(labels, ["Insert text here"]);
    assert_eq!(texts, [Some("Hello from droid".to_string())]);
    // Without new text, the note is left, also when it shows only the start of what was typed
    // (the screen changed with the first word, or a length limit cut the rest).
    assert_eq!(decide(&field_only("Hello")).0, ["home"]);
}

/// A new note dialog: a title field showing `title`, the note's type as two radio buttons
/// ("Checklist" checked when `checklist`) and "OK".
fn new_note_dialog(title: &str, checklist: bool) -> Observation {
    let labels = [title, "Text note", "Checklist", "OK"];
    let mut dialog = with_field_first(buttons("NewNote", &labels));
    for option in &mut dialog.elements[1..3] {
        option.class_name = "android.widget.RadioButton".into();
        option.checkable = true;
        option.checked = (option.text == "Checklist") == checklist;
    }
    dialog
}

#[test]
fn an_option_tried_on_the_form_filled_is_tried_once_on_the_form_as_found() {
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut decide = |screen: &Observation| labels_and_texts(&mut heuristic, screen);
    let empty = new_note_dialog("Label", false);
    // A note with nothing but its field: once typed into, nothing elsewhere is left untried.
    let note = with_field_first(buttons("Note", &["Insert text here"]));
    let checklist = buttons("Checklist", &["Add item"]);
    assert_eq!(decide(&empty).0, ["Label", "OK"]);
    assert_eq!(decide(&note).0, ["Insert text here"]);
    // Found empty again, the form is filled again for its untried option.
    assert_eq!(decide(&empty).0, ["Label", "Checklist"]);
    // The option changed: the form is submitted again. The option still counts as untried
    // (owed a try on the form as found), which makes the form worth coming back to.
    let filled = new_note_dialog("Hello from droid", true);
    let dialog = heuristic.observe(&Screen::of(&filled));
    let checklist_key = ActionKey::on(ActionType::Click, signature(&filled.elements[2]));
    let untried = heuristic.graph().untried(dialog);
    assert!(
        untried.iter().any(|(key, ..)| *key == checklist_key),
        "{untried:?}"
    );
    assert_eq!(
        labels_of(&filled, &next(&mut heuristic, &filled).actions),
        ["OK"]
    );
    let mut decide = |screen: &Observation| labels_and_texts(&mut heuristic, screen);
    assert_eq!(decide(&checklist).0, ["Add item"]);
    // Found empty a third time: the option is clicked once on the form as found (a checklist
    // chosen before a title may open another dialog than one chosen after it), typing nothing.
    assert_eq!(decide(&empty), (vec!["Checklist".to_string()], vec![None]));
    let (labels, _) = decide(&empty);
    assert_ne!(labels, ["Checklist"]);
}

#[test]
fn an_option_owed_a_try_as_found_waits_for_the_forms_more_promising_widgets() {
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut decide = |screen: &Observation| labels_and_texts(&mut heuristic, screen);
    // The dialog also shows a "Reminder" row, no control of the form: it needs no fill.
    let dialog = |title: &str, checklist: bool| {
        let mut dialog = new_note_dialog(title, checklist);
        let mut reminder = dialog.elements[3].clone();
        reminder.element_id = 4;
        reminder.ref_id = Some(5);
        reminder.text = "Reminder".into();
        reminder.resource_id = "com.example:id/b4".into();
        reminder.bounds = Bounds::from([0, 700, 1080, 820]);
        dialog.elements.push(reminder);
        dialog
    };
    let empty = dialog("Label", false);
    let note = with_field_first(buttons("Note", &["Insert text here"]));
    assert_eq!(decide(&empty).0, ["Label", "OK"]);
    assert_eq!(decide(&note).0, ["Insert text here"]);
    assert_eq!(decide(&empty).0, ["Label", "Checklist"]);
    assert_eq!(decide(&buttons("Checklist", &["Add item"])).0, ["Add item"]);
    // Found empty again with "Checklist" owed its try as found: the reminder row promises
    // more than an option, and is tried first, alone (the fields wait with the option).
    assert_eq!(decide(&empty), (vec!["Reminder".to_string()], vec![None]));
    assert_eq!(decide(&empty), (vec!["Checklist".to_string()], vec![None]));
}

#[test]
fn an_option_owed_a_try_as_found_is_not_clicked_on_the_form_filled_and_chosen() {
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut decide = |screen: &Observation| labels_and_texts(&mut heuristic, screen).0;
    let empty = new_note_dialog("Label", false);
    let filled = new_note_dialog("Hello from droid", true);
    assert_eq!(decide(&empty), ["Label", "OK"]);
    assert_eq!(decide(&editor("Insert text here")), ["Insert text here"]);
    assert_eq!(decide(&empty), ["Label", "Checklist"]);
    assert_eq!(decide(&filled), ["OK"]);
    assert_eq!(decide(&buttons("Checklist", &["Add item"])), ["Add item"]);
    // Back on the form as it was left (filled, the option chosen; notes' dialog after its
    // checklist). Its "OK" showed another screen than the empty form's did: the two are states
    // of the dialog told apart by what the form holds, each with its own untried actions.
    // Clicking the chosen option again changes nothing: on the filled state it is tried once
    // a pass, after the state's other actions (it was clicked until the budget ran out, once).
    // The first relaunch ("home") here ends the pass.
    let mut later: Vec<Vec<String>> = (0..10).map(|_| decide(&filled)).collect();
    if let Some(end) = later.iter().position(|l| l == &["home"]) {
        later.truncate(end);
    }
    let chosen = |labels: &Vec<String>| labels.iter().any(|l| l == "Checklist");
    assert!(later.iter().filter(|l| chosen(l)).count() <= 1, "{later:?}");
    let first_chosen = later.iter().position(chosen);
    let other_option = later
        .iter()
        .position(|l| l.iter().any(|l| l == "Text note"));
    assert!(
        first_chosen.is_none_or(|chosen| other_option.is_some_and(|other| other < chosen)),
        "{later:?}"
    );
    // The empty form still owes the option its try as found: it stays worth coming back to.
    let dialog = heuristic.observe(&Screen::of(&empty));
    let checklist = ActionKey::on(ActionType::Click, signature(&filled.elements[2]));
    let untried = heuristic.graph().untried(dialog);
    assert!(
        untried.iter().any(|(key, ..)| *key == checklist),
        "{untried:?}"
    );
}

/// Notes' main page showing a note whose text is `text`, and its "New note" button; then the
/// new note dialog: what creating a note goes through.
fn main_and_dialog(text: &str) -> (Observation, Observation) {
    let main = with_editor_first(buttons("Main", &[text, "New note"]));
    (main, new_note_dialog("Label", false))
}

/// The dialog's productivity once its "OK" showed the main page with `shown` in its field,
/// after a visit where the field showed a written note.
fn dialog_productivity_after_ok_shows(shown: &str) -> f64 {
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let (written, dialog) = main_and_dialog("2023.6.10 Sunny");
    assert_eq!(
        labels_of(&written, &heuristic.decide(&Screen::of(&written)).actions),
        ["2023.6.10 Sunny"]
    );
    let (typed, _) = main_and_dialog("Hello from droid");
    assert_eq!(
        labels_of(&typed, &heuristic.decide(&Screen::of(&typed)).actions),
        ["New note"]
    );
    let at = heuristic.observe(&Screen::of(&dialog));
    let submitted = next(&mut heuristic, &dialog).actions;
    assert_eq!(labels_of(&dialog, &submitted), ["Label", "OK"]);
    heuristic.observe(&Screen::of(&main_and_dialog(shown).0));
    heuristic.graph().value_here(at, 1.0)
}

#[test]
fn a_submit_showing_a_known_screen_in_a_new_state_counts_as_a_discovery() {
    // "OK" made a note: the main page shows it empty, the same widgets as with a written note
    // (the screens merge), in a state not explored yet. It counts for the dialog as a new
    // screen would: the dialog's untried "Checklist" stays worth coming back for. (Before,
    // seed 0 never came back to notes' dialog and missed the checklist's 7 screens.)
    assert_eq!(
        dialog_productivity_after_ok_shows("Insert text here"),
        2.0 / 3.0
    );
    // Showing what was seen (the written note) or typed is no discovery.
    assert_eq!(
        dialog_productivity_after_ok_shows("2023.6.10 Sunny"),
        1.0 / 3.0
    );
    assert_eq!(
        dialog_productivity_after_ok_shows("Hello from droid"),
        1.0 / 3.0
    );
}

#[test]
fn a_one_shot_decide_learns_the_texts_fields_showed_from_the_recorded_run() {
    let (written, dialog) = main_and_dialog("2023.6.10 Sunny");
    let (typed, _) = main_and_dialog("Hello from droid");
    let (empty, _) = main_and_dialog("Insert text here");
    let (long_running, one_shot) = long_running_and_one_shot(&[written, typed, dialog, empty]);
    // The empty note is the main page in a state not explored yet: its field is typed into.
    let last = &long_running[3];
    assert_eq!(last.actions[0].action, ActionType::Input, "{last:?}");
    // A fresh process given the run so far knows the field showed a written note before.
    assert_eq!(one_shot.actions, last.actions);
}

/// A settings page of rows, each a clickable layout holding a label and, for a row showing
/// its value, a second text, else a colour swatch.
fn settings_rows(rows: &[(&str, Option<&str>)]) -> Observation {
    let mut page = buttons("Customize", &[]);
    let element = |class: &str, text: &str, depth: u32, top: i32| UiElement {
        element_id: 0,
        text: text.into(),
        class_name: format!("android.widget.{class}"),
        depth,
        enabled: true,
        visible: true,
        bounds: Bounds::from([0, top, 1080, top + 150]),
        ..UiElement::default()
    };
    for (top, (label, value)) in (0..).map(|i| 200 + i * 200).zip(rows) {
        let mut row = element("RelativeLayout", "", 1, top);
        row.clickable = true;
        row.resource_id = format!("com.example:id/{}", label.replace(' ', "_"));
        page.elements.push(row);
        page.elements.push(element("TextView", label, 2, top));
        page.elements.push(match value {
            Some(value) => element("TextView", value, 2, top),
            None => element("ImageView", "", 2, top),
        });
    }
    for (id, element) in (0..).zip(page.elements.iter_mut()) {
        element.element_id = id;
        element.ref_id = Some(id + 1);
    }
    page
}

#[test]
fn among_equals_a_widget_unlike_two_that_did_nothing_goes_first() {
    let page = settings_rows(&[
        ("Theme", Some("Dark")),
        ("Text color", None),
        ("Background color", None),
        ("Primary color", None),
        ("App icon color", None),
    ]);
    // Whatever the seed, once two colour rows did nothing, the theme row is next.
    for seed in 0..16 {
        let mut heuristic = Heuristic::new(seed, Credentials::default());
        let mut picks = Vec::new();
        for _ in 0..3 {
            let choice = heuristic.decide(&Screen::of(&page));
            // A row's label is the text right after it.
            let label = |row: u32| page.elements[row as usize].text.clone();
            picks.extend(choice.actions.iter().filter_map(|a| a.ref_id).map(label));
        }
        assert!(
            picks.contains(&"Theme".to_string()),
            "seed {seed}: {picks:?}"
        );
    }
}

/// A dialog of radio buttons with the given labels, `checked` the one selected.
fn radios(labels: &[&str], checked: &str) -> Observation {
    let mut dialog = buttons("Theme", labels);
    for element in &mut dialog.elements {
        element.class_name = "android.widget.RadioButton".into();
        element.checkable = true;
        element.checked = element.text == checked;
    }
    dialog
}

#[test]
fn a_single_choice_list_is_picked_from_and_its_checked_option_comes_last() {
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let home = buttons("Main", &["Settings", "About"]);
    let dialog = radios(&["Auto", "Light", "Dark", "White"], "Dark");
    let mut decide =
        |screen: &Observation| labels_of(screen, &heuristic.decide(&Screen::of(screen)).actions);
    decide(&home);
    // Fresh, the list is explored before the launch screen's other button: picking an option
    // is what it is for (a toggle would promise too little to stay). Options that change
    // nothing make leaving worth more, and back is tried; the option already chosen is last.
    let mut order = Vec::new();
    for _ in 0..5 {
        order.extend(decide(&dialog));
    }
    assert!(
        ["Auto", "Light", "White"].contains(&order[0].as_str()),
        "{order:?}"
    );
    assert!(!order[..4].contains(&"Dark".to_string()), "{order:?}");
    assert_eq!(order[4], "Dark", "{order:?}");
}

/// Runs droid-decide on the given lines, returning stdout lines, stderr and the exit code.
fn stage(args: &[&str], input: &str) -> (Vec<String>, String, Option<i32>) {
    let mut child = droid("droid-decide")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect(),
        String::from_utf8(output.stderr).unwrap(),
        output.status.code(),
    )
}

fn observation_line(step: u64) -> String {
    let mut observation = login_form();
    observation.step = Some(step);
    observation.run_id = Some("r1".into());
    droid::events::Event::Observation(Box::new(observation)).to_line()
}

#[test]
fn stage_passes_lines_through_and_adds_one_decision_per_observation() {
    droid::fixtures_or_skip!();
    let custom = r#"{"type":"custom_thing","v":1,"x":[1, 2]}"#;
    let result = r#"{"type":"result","v":1,"run_id":"r1","step":1,"index":0,"action_type":"input","success":true}"#;
    let (first, second) = (observation_line(1), observation_line(2));
    let input = format!("{first}\n{custom}\nnot json\n{result}\n{second}\n");
    let (lines, stderr, code) = stage(&["--test-password", "pw-secret"], &input);
    assert_eq!(code, Some(1), "a bad line makes exit 1");
    assert!(stderr.contains("line 3: not valid JSON"), "{stderr}");
    assert!(lines[0] == first, "observations pass byte for byte");
    assert_eq!(lines[2], custom, "unknown types pass byte for byte");
    assert_eq!(lines[3], result);
    let kinds: Vec<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "observation",
            "decision",
            "custom_thing",
            "result",
            "observation",
            "decision"
        ]
    );
    let first: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(first["actions"][0]["action"], "input");
    // The password field gets the placeholder; the password itself is in no line.
    assert!(lines.iter().all(|l| !l.contains("pw-secret")), "{lines:?}");
    let typed: Vec<&str> = first["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["input_text"].as_str())
        .collect();
    assert!(typed.contains(&"{{test_password}}"), "{typed:?}");
    let second: Value = serde_json::from_str(&lines[5]).unwrap();
    assert_eq!(second["step"], 2);
    assert_eq!(second["decider"], "heuristic");

    let (lines, stderr, code) = stage(&[], "");
    assert_eq!((lines.len(), stderr.as_str(), code), (0, "", Some(0)));
}

#[test]
fn without_package_or_run_started_the_first_screens_app_is_the_one_under_test() {
    droid::fixtures_or_skip!();
    // The app's login form, then a browser it opened: the browser is left, not explored.
    let app = observation_line(1);
    let mut browser = login_form();
    browser.step = Some(2);
    browser.package = Some("com.android.chrome".into());
    let browser = droid::events::Event::Observation(Box::new(browser)).to_line();
    let decisions = |args: &[&str]| -> Vec<Value> {
        let (lines, stderr, code) = stage(args, &format!("{app}\n{browser}\n"));
        assert_eq!(code, Some(0), "{stderr}");
        lines
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["type"] == "decision")
            .collect()
    };
    let left = decisions(&[]);
    assert_eq!(left[1]["actions"][0]["action"], "back", "{}", left[1]);
    // Allowed, the browser is explored like the app.
    let allowed = decisions(&["--allow-package", "com.android.chrome"]);
    assert_eq!(
        allowed[1]["actions"][0]["action"], "input",
        "{}",
        allowed[1]
    );
}

/// The decider and actions of each decision droid-decide writes for three observations of one
/// screen, with `--decider decider --seed seed`.
fn three_decisions(decider: &str, seed: &str) -> Vec<(Value, Value)> {
    let input = format!(
        "{}\n{}\n{}\n",
        observation_line(1),
        observation_line(2),
        observation_line(3)
    );
    let (lines, _, code) = stage(&["--decider", decider, "--seed", seed], &input);
    assert_eq!(code, Some(0));
    lines
        .iter()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["type"] == "decision").then(|| (v["decider"].clone(), v["actions"].clone()))
        })
        .collect()
}

#[test]
fn random_stage_is_seeded() {
    droid::fixtures_or_skip!();
    let actions = |seed: &str| three_decisions("random", seed);
    let first = actions("11");
    assert_eq!(first.len(), 3);
    assert_eq!(first[0].0, "random");
    assert_eq!(first, actions("11"));
}

#[test]
fn dfs_stage_is_seeded_and_tries_a_widget_once() {
    droid::fixtures_or_skip!();
    let actions = |seed: &str| three_decisions("dfs", seed);
    let first = actions("11");
    assert_eq!(first.len(), 3);
    assert_eq!(first[0].0, "dfs");
    assert_eq!(first, actions("11"));
    // The same screen three times: never the same action twice.
    let descriptions: std::collections::HashSet<&Value> =
        first.iter().map(|(_, a)| &a[0]["action_desc"]).collect();
    assert_eq!(descriptions.len(), 3, "{first:?}");
}

/// The depth-first baseline against droid-sim: the same seed takes the same actions, it gets
/// past the launch screen, and a screen whose actions are all tried is backed out of.
#[test]
fn dfs_explores_a_bundled_app_and_backs_out_of_exhausted_screens() {
    let actions = |run: &crate::explore::Run| -> Vec<Vec<Action>> {
        run.events
            .iter()
            .filter_map(|e| match e {
                Event::Decision(d) => Some(d.actions.clone()),
                _ => None,
            })
            .collect()
    };
    let run = crate::explore::run_app("builtin:tiny", decide::Decider::Dfs, 0, 6 * 9);
    let again = crate::explore::run_app("builtin:tiny", decide::Decider::Dfs, 0, 6 * 9);
    assert_eq!(actions(&run), actions(&again));
    assert!(run.reached.len() >= 5, "{:?}", run.reached);
    let exhausted = actions(&run)
        .iter()
        .filter(|a| a[0].reasoning.as_deref() == Some("every action here is tried"))
        .count();
    assert!(exhausted > 0);
}

#[test]
fn stage_runs_in_process_over_a_reader_and_a_writer() {
    droid::fixtures_or_skip!();
    let input = format!("{}\n", observation_line(1));
    let (outcome, output) = heuristic_stage(Vec::new(), &input);
    assert_eq!((outcome.lines, outcome.bad_lines), (1, 0));
    assert_eq!(output.lines().count(), 2);
}

/// One short exploration per bundled app (four steps per screen it has, the command line's
/// default seed): the heuristic finds every screen, far more than random does. The sweeps over
/// every app model and many seeds are `make coverage`'s.
#[test]
fn a_short_exploration_finds_every_screen_of_each_bundled_app_and_more_than_random() {
    for name in droid::sim::model::builtin_names() {
        let app = format!("builtin:{name}");
        let (reached, reachable) = explore(&app, decide::Decider::Heuristic, 0, 4);
        let (random, _) = explore(&app, decide::Decider::Random, 0, 4);
        assert!(
            reached == reachable && reached > random,
            "{app}: heuristic {reached} of {reachable}, random {random}"
        );
    }
}

/// The label of the element an action lands on in `screen`: by its ref, else under its point.
fn landing(screen: &Observation, action: &Action) -> Option<String> {
    let element = match (action.ref_id, action.point) {
        (Some(reference), _) => screen.elements.iter().find(|e| e.ref_id == Some(reference)),
        (None, Some([x, y])) => screen
            .elements
            .iter()
            .find(|e| e.bounds.contains(x as i32, y as i32)),
        (None, None) => None,
    };
    element.map(|e| e.text.clone())
}

/// A walk that goes astray: a form's "Send" shows the page once after each launch, and
/// afterwards another screen (the app's state changed), whose "Return" leads home. Each round
/// takes two decisions (a walk stops before a form's submit): Return, then Send with a blind
/// tap on one of the page's thirty untried buttons, which lands on the other screen. Nothing
/// is found, round after round, and no move seems to go nowhere. The heuristic does not go
/// round like that for more than [`CYCLE_STEPS`](droid::decide::heuristic::CYCLE_STEPS) steps:
/// the moves of the cycle stop being routes, and it relaunches (where the page shows again)
/// instead. Without the rule it goes round for dozens of steps.
#[test]
fn going_round_a_cycle_without_finding_anything_stops_within_a_few_steps() {
    let home = with_field_first(buttons("Home", &["Name", "Send", "Help"]));
    let labels: Vec<String> = (1..=30).map(|i| format!("P{i}")).collect();
    let page = buttons(
        "Page",
        &labels.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let other = buttons("Other", &["Return"]);
    let mut heuristic = Heuristic::new(0, Credentials::default());
    heuristic.set_package(Some("com.example".into()), Vec::new());
    let mut opened = false;
    let mut shown = &home;
    // Consecutive observations that found nothing (no screen shown first, after a decision
    // that took no action for the first time on the screen it observed), when the last comes
    // back to a screen seen in them.
    let (mut idle, mut longest, mut tried) = (Vec::new(), 0, true);
    let mut done = std::collections::HashSet::new();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..90 {
        if seen.insert(shown.activity.clone()) || tried {
            idle.clear();
        }
        if idle.contains(&shown.activity) {
            longest = longest.max(idle.len());
        }
        idle.push(shown.activity.clone());
        let choice = heuristic.decide(&Screen::of(shown));
        let note = choice.note.as_deref().unwrap_or_default();
        if note.starts_with("relaunch: nothing left to explore from here")
            || note.starts_with("relaunch: everything the exploration found is explored")
        {
            // Every button was tried: what is left is the end of the exploration.
            break;
        }
        tried = choice.actions.iter().any(|a| {
            let first_try = (shown.activity.clone(), a.action_desc.clone());
            a.screen.is_none() && done.insert(first_try)
        });
        for action in &choice.actions {
            let label = landing(shown, action);
            shown = match (shown.activity.as_deref(), action.action.clone(), label) {
                (_, ActionType::Back, _) => &home,
                (Some("Home"), _, Some(send)) if send == "Send" => {
                    match std::mem::replace(&mut opened, true) {
                        false => &page,
                        true => &other,
                    }
                }
                (Some("Other"), _, Some(_)) => &home,
                _ => shown,
            };
        }
        if choice.relaunch.is_some() {
            (shown, opened) = (&home, false);
        }
    }
    // At most CYCLE_STEPS steps round the cycle, then the one that breaks out of it.
    assert!(
        (1..=droid::decide::heuristic::CYCLE_STEPS + 1).contains(&longest),
        "{longest} steps round a cycle"
    );
}

/// On every bundled and fixture app, with the budget `make coverage` gives it, the heuristic
/// never repeats earlier steps (the same screen, the same actions) for more than
/// [`CYCLE_STEPS`](droid::decide::heuristic::CYCLE_STEPS) steps in a row without the device
/// showing something new.
#[test]
fn on_every_app_the_heuristic_repeats_itself_only_a_few_steps_in_a_row() {
    for app in crate::explore::app_models() {
        let (_, reachable, _) = crate::explore::model_facts(&app);
        let steps = 3 * reachable.len() as u64;
        let run = crate::explore::run_app(&app, decide::Decider::Heuristic, 0, steps);
        let repeated = run.longest_repeat();
        assert!(
            repeated <= droid::decide::heuristic::CYCLE_STEPS,
            "{app}: {repeated} steps in a row repeated earlier ones"
        );
    }
}

/// A submenu whose items close every menu: "Effects" in the overflow menu opens a submenu, and
/// each effect applies and goes back to the page the menu was opened on. A walk to an untried
/// effect (the menu, the submenu and the effect in one decision) comes back to the page, a
/// screen it passed: the first time that may be a move that went nowhere, and the effect is
/// owed another try; the second time it is what the effect does. Without that, the walk is
/// taken again after every relaunch, for as long as the run lasts. (A new pass over what was
/// found tries each effect again, at most twice in its turn.)
#[test]
fn an_item_closing_the_menus_it_was_opened_from_is_walked_to_at_most_twice() {
    let effects = ["Blur", "Smudge", "Emboss", "Shadow"];
    let page = buttons("Page", &["More options"]);
    let menu = buttons("Menu", &["Effects"]);
    let submenu = buttons("Effects", &effects);
    let mut heuristic = Heuristic::new(0, Credentials::default());
    heuristic.set_package(Some("com.example".into()), Vec::new());
    let mut shown = &page;
    let mut taps = std::collections::HashMap::<(u32, String), usize>::new();
    let mut pass = 1;
    for _ in 0..60 {
        let choice = heuristic.decide(&Screen::of(shown));
        pass = heuristic.passes();
        for action in &choice.actions {
            let label = landing(shown, action);
            if let Some(effect) = label.clone().filter(|l| effects.contains(&l.as_str())) {
                *taps.entry((pass, effect)).or_default() += 1;
            }
            shown = match (shown.activity.as_deref(), action.action.clone(), label) {
                (Some("Page"), ActionType::Back, _) => &page,
                (Some("Menu"), ActionType::Back, _) => &page,
                (Some("Effects"), ActionType::Back, _) => &menu,
                (Some("Page"), _, Some(_)) => &menu,
                (Some("Menu"), _, Some(_)) => &submenu,
                (Some("Effects"), _, Some(_)) => &page,
                _ => shown,
            };
        }
        if choice.relaunch.is_some() {
            shown = &page;
        }
    }
    let tapped: std::collections::BTreeSet<&String> = taps.keys().map(|(_, e)| e).collect();
    assert_eq!(tapped.len(), effects.len(), "{taps:?}");
    assert!(pass > 1, "the first pass never ended");
    assert!(taps.values().all(|&n| n <= 2), "{taps:?}");
}

#[test]
fn back_on_the_first_screen_is_tried_once_and_leaving_the_app_by_it_relaunches() {
    let home = buttons("Home", &["About"]);
    let about = buttons("About", &[]);
    // The screen back leaves to: another app, one the exploration may enter.
    let launcher = Observation {
        package: Some("com.android.launcher3".into()),
        ..buttons("Launcher", &["Phone", "Camera"])
    };
    let mut heuristic = Heuristic::new(0, Credentials::default());
    heuristic.set_package(
        Some("com.example".into()),
        vec!["com.android.launcher3".into()],
    );
    let mut decide = |screen: &Observation| heuristic.decide(&Screen::of(screen));
    assert_eq!(labels_of(&home, &decide(&home).actions), ["About"]);
    assert_eq!(labels_of(&about, &decide(&about).actions), ["back"]);
    // Nothing left is worth more: what back does on the first screen (an exit dialog, a crash
    // on leaving) is tried.
    let choice = decide(&home);
    assert_eq!(labels_of(&home, &choice.actions), ["back"]);
    assert_eq!(
        choice.actions[0].reasoning.as_deref(),
        Some("what the app does on back from its first screen")
    );
    // It left the app: relaunched at once, the other app's widgets left alone.
    let left = decide(&launcher);
    assert!(left.relaunch.is_some(), "{left:?}");
    // Once tried, back on the first screen is not a move again: exhausted, it relaunches.
    let again = decide(&home);
    assert!(again.relaunch.is_some(), "{again:?}");
}

#[test]
fn back_on_the_first_screen_is_tried_once_its_own_actions_are() {
    let home = buttons("Home", &["About"]);
    let about = buttons("About", &["Credits"]);
    let credits = buttons("Credits", &["Thanks", "People"]);
    let mut heuristic = Heuristic::new(0, Credentials::default());
    heuristic.set_package(Some("com.example".into()), Vec::new());
    let mut decide = |screen: &Observation| heuristic.decide(&Screen::of(screen));
    assert_eq!(labels_of(&home, &decide(&home).actions), ["About"]);
    assert_eq!(labels_of(&about, &decide(&about).actions), ["Credits"]);
    let first = labels_of(&credits, &decide(&credits).actions);
    assert_eq!(first.len(), 1, "{first:?}");
    // Back on the first screen, with every action of its own tried: a widget two screens away
    // is still untried and worth more, but what back does here is tried first, once.
    let choice = decide(&home);
    assert_eq!(labels_of(&home, &choice.actions), ["back"], "{choice:?}");
    assert_eq!(
        choice.actions[0].reasoning.as_deref(),
        Some("what the app does on back from its first screen")
    );
    // The app showed its first screen again (an exit dialog declined): on to the untried widget.
    let next = decide(&home);
    assert_ne!(labels_of(&home, &next.actions), ["back"], "{next:?}");
}

/// A screen with a one-line field at the top (a search bar), buttons with words below it, and
/// no submit: `editor_height` makes the field that tall instead, on a 2400-pixel screen.
fn field_over_buttons(editor_height: Option<i32>) -> Observation {
    let mut screen = with_field_first(buttons("Lists", &["", "Settings", "About"]));
    screen.elements[0].resource_id = "com.example:id/add_item".into();
    if let Some(height) = editor_height {
        screen.screen_size = Some([1080, 2400]);
        screen.elements[0].bounds = Bounds::from([0, 100, 1080, 100 + height]);
        for (i, button) in screen.elements.iter_mut().enumerate().skip(1) {
            let top = 100 + height + i as i32 * 150;
            button.bounds = Bounds::from([0, top, 1080, top + 120]);
        }
    }
    screen
}

#[test]
fn a_field_without_a_submit_waits_for_the_widgets_with_words_but_an_editor_does_not() {
    let screen = field_over_buttons(None);
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let mut order = Vec::new();
    for _ in 0..3 {
        let choice = heuristic.decide(&Screen::of(&screen));
        let typed = choice.actions.iter().any(|a| a.action == ActionType::Input);
        order.push(match typed {
            true => "typed".to_string(),
            false => labels_of(&screen, &choice.actions).join(", "),
        });
    }
    order[..2].sort();
    assert_eq!(order, ["About", "Settings", "typed"]);

    // A field a third of the screen tall is the screen's content: it is filled first.
    let editor = field_over_buttons(Some(800));
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let choice = heuristic.decide(&Screen::of(&editor));
    assert_eq!(choice.actions[0].action, ActionType::Input);
}

/// A run ends `explored` only on the heuristic's own conclusion, a relaunch saying everything
/// it found is explored: not right after a walk that took the last untried action (its outcome
/// unseen, maybe a screen not seen yet), nor after a pass that found something (another pass
/// follows). aeondroid's seed 0, given 30 × its ceiling, once ended after such a walk.
#[test]
fn a_run_ends_explored_only_on_the_heuristics_own_conclusion() {
    // Without the fixtures beside the clone, `app_models` has said so and this has no app.
    let Some(app) = crate::explore::app_models()
        .into_iter()
        .find(|app| app.ends_with("/aeondroid/model.json"))
    else {
        return;
    };
    let (_, reachable, _) = crate::explore::model_facts(&app);
    let run = crate::explore::run_app(
        &app,
        decide::Decider::Heuristic,
        0,
        30 * reachable.len() as u64,
    );
    let last = run
        .events
        .iter()
        .rev()
        .find_map(|event| match event {
            droid::events::Event::Decision(decision) => Some(decision),
            _ => None,
        })
        .expect("a decision");
    let why = last.actions[0].reasoning.as_deref().unwrap_or_default();
    assert!(
        run.ended != "explored" || why.starts_with("everything the exploration found is explored"),
        "{app} ended {} after: {why}",
        run.ended
    );
}

#[test]
fn a_walk_clicks_a_forms_option_first_clicked_on_the_form_filled_with_the_fields_filled() {
    // An app whose checklist is made by titling a new note, then choosing "Checklist": a
    // checklist chosen on the untitled form opens a form that no typing completes (a recorded
    // app knows only the moves its recording made). Its checklist page holds what is left.
    let home = buttons("Home", &["New note"]);
    let empty = new_note_dialog("Label", false);
    let titled = new_note_dialog("Hello from droid", true);
    let untitled = new_note_dialog("Label", true);
    let note = with_field_first(buttons("Note", &["Insert text here"]));
    let checklist = buttons("Checklist", &["Add item", "Sort"]);
    let sort = buttons("Sort", &["By date", "By name"]);
    let screens = [&home, &empty, &titled, &untitled, &note, &checklist, &sort];
    let outcome = |at: usize, label: &str, typed: bool| match (at, label) {
        (_, "back") => 0,
        (0, "New note") => 1,
        (1, "OK") if typed => 4,
        (1, "Checklist") if typed => 2,
        (1, "Checklist") => 3,
        (2, "OK") => 5,
        (2 | 3, "Text note") => 1,
        (5, "Sort") => 6,
        (6, _) => 5,
        (at, _) => at,
    };
    let mut heuristic = Heuristic::new(0, Credentials::default());
    let (mut at, mut walked_option) = (0, 0);
    for _ in 0..60 {
        let choice = heuristic.decide(&Screen::of(screens[at]));
        if choice.relaunch.is_some() {
            at = 0;
            continue;
        }
        let typed = choice.actions.iter().any(|a| a.input_text.is_some());
        for action in &choice.actions {
            // A blind tap acts on what lies under its point on the screen shown.
            let label = match (action.action.clone(), action.point) {
                (ActionType::Back, _) => "back".to_string(),
                (_, Some([x, y])) => screens[at]
                    .elements
                    .iter()
                    .find(|e| e.bounds.contains(x as i32, y as i32))
                    .map(|e| e.text.clone())
                    .unwrap_or_default(),
                _ => labels_of(screens[at], std::slice::from_ref(action)).remove(0),
            };
            let on_the_way = action
                .reasoning
                .as_deref()
                .is_some_and(|why| why.starts_with("on the way"));
            if at == 1 && label == "Checklist" && on_the_way && action.input_text.is_none() {
                // Walked through, the option goes with the title typed, as it was first clicked.
                assert!(typed, "{:?}", choice.actions);
                walked_option += 1;
            }
            at = outcome(at, &label, typed);
        }
    }
    assert!(walked_option > 0, "no walk passed the option");
}
