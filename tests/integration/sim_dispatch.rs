//! How the simulated device dispatches a touch to the view that handles it, and which recorded
//! transition answers: the rule of docs/app-model.md ("Touches"), on small models built the way
//! real screens are (cards holding buttons, list rows with labels and overlaid icons).

use droid::sim::model::AppModel;
use droid::sim::world::{World, WorldOptions};
use serde_json::{json, Value};

const PACKAGE: &str = "com.example.dispatch";

/// A world on screen `home` of a model with these home elements and transitions from home; every
/// destination named is a bare screen.
fn world(elements: Value, transitions: Value) -> World {
    let mut screens = vec![json!({"id": "home", "elements": elements})];
    for t in transitions.as_array().unwrap() {
        let to = t["to"].as_str().unwrap();
        if screens.iter().all(|s| s["id"] != to) {
            screens.push(json!({"id": to, "elements": []}));
        }
    }
    let transitions: Vec<Value> = transitions
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t["from"] = json!("home");
            t
        })
        .collect();
    let model = json!({
        "package": PACKAGE, "screen_size": [1080, 1920], "start": "home",
        "screens": screens, "transitions": transitions,
    });
    let model = AppModel::parse(&model.to_string(), "dispatch-test", None).unwrap();
    let mut world = World::new(model, WorldOptions::default());
    world.launch(PACKAGE).unwrap();
    world
}

fn screen(world: &World) -> String {
    world.foreground().screen
}

/// Taps `(x, y)` on a fresh copy of the world's start and says where the device ends up.
fn tap(elements: &Value, transitions: &Value, (x, y): (i32, i32)) -> String {
    let mut w = world(elements.clone(), transitions.clone());
    w.tap(x, y);
    screen(&w)
}

#[test]
fn a_container_transition_listed_first_no_longer_shadows_a_button() {
    let elements = json!([
        {"class": "android.widget.LinearLayout", "resource_id": "com.example.dispatch:id/card",
         "bounds": [0, 200, 1080, 800], "children": [
            {"class": "android.widget.TextView", "text": "Headphones", "bounds": [40, 220, 1040, 300]},
            {"class": "android.widget.Button", "text": "Buy", "clickable": true,
             "bounds": [40, 600, 500, 760]}]}
    ]);
    let transitions = json!([
        {"action": "click", "target": {"resource_id": "com.example.dispatch:id/card"}, "to": "card"},
        {"action": "click", "target": {"text": "Buy"}, "to": "cart"}
    ]);
    assert_eq!(tap(&elements, &transitions, (270, 680)), "cart");
    assert_eq!(
        tap(&elements, &transitions, (800, 500)),
        "card",
        "where nothing inside takes the touch, the container's transition still answers"
    );
}

#[test]
fn a_label_inside_a_clickable_row_fires_the_rows_transition() {
    let elements = json!([
        {"class": "android.widget.LinearLayout", "resource_id": "com.example.dispatch:id/row",
         "clickable": true, "bounds": [0, 300, 1080, 460], "children": [
            {"class": "android.widget.TextView", "text": "Milk", "bounds": [40, 310, 600, 380]},
            {"class": "android.widget.TextView", "text": "2 litres", "bounds": [40, 380, 600, 450]}]}
    ]);
    // A transition recorded on the other label comes first in the model.
    let transitions = json!([
        {"action": "click", "target": {"text": "2 litres"}, "to": "quantity"},
        {"action": "click", "target": {"resource_id": "com.example.dispatch:id/row"}, "to": "item"}
    ]);
    assert_eq!(tap(&elements, &transitions, (320, 345)), "item");
    assert_eq!(
        tap(&elements, &transitions, (320, 415)),
        "quantity",
        "the label under the finger comes first"
    );
    let only_the_row = json!([transitions[1]]);
    assert_eq!(tap(&elements, &only_the_row, (320, 415)), "item");
    let only_a_label = json!([transitions[0]]);
    assert_eq!(
        tap(&elements, &only_a_label, (900, 345)),
        "quantity",
        "the row's click listener covers its labels"
    );
}

#[test]
fn two_transitions_on_the_same_node_pick_the_more_specific_target() {
    let elements = json!([
        {"class": "android.widget.Button", "text": "Next", "clickable": true,
         "resource_id": "com.example.dispatch:id/next", "bounds": [40, 1600, 1040, 1760]}
    ]);
    let transitions = json!([
        {"action": "click", "target": {"text": "Next"}, "to": "loose"},
        {"action": "click", "target": {"text": "Next", "resource_id": "com.example.dispatch:id/next"},
         "to": "specific"},
        {"action": "click", "target": {"class": "android.widget.Button",
                                       "resource_id": "com.example.dispatch:id/next"}, "to": "later"}
    ]);
    assert_eq!(tap(&elements, &transitions, (540, 1680)), "specific");
    let tie = json!([transitions[1], transitions[2]]);
    assert_eq!(
        tap(&elements, &tie, (540, 1680)),
        "specific",
        "equally specific: model order"
    );
}

/// A list row as to-do apps build it: a clickable row holding its content (a label and a
/// clickable expand button), with a passive delete icon drawn over the button's area.
fn row_with_overlaid_icon() -> Value {
    json!([
        {"class": "android.widget.RelativeLayout", "clickable": true, "bounds": [0, 500, 1080, 700],
         "children": [
            {"class": "android.widget.RelativeLayout", "resource_id": "com.example.dispatch:id/content",
             "bounds": [0, 500, 1080, 700], "children": [
                {"class": "android.widget.TextView", "text": "Buy milk", "bounds": [40, 500, 900, 700]},
                {"class": "android.widget.ImageView", "content_desc": "Expand", "clickable": true,
                 "bounds": [900, 500, 1080, 700]}]},
            {"class": "android.widget.ImageView", "resource_id": "com.example.dispatch:id/delete",
             "bounds": [940, 560, 1040, 640]}]}
    ])
}

#[test]
fn a_passive_icon_laid_over_a_clickable_button_does_not_steal_its_touch() {
    let transitions = json!([
        {"action": "click", "target": {"text": "Buy milk"}, "to": "edit"},
        {"action": "click", "target": {"content_desc": "Expand"}, "to": "expanded"}
    ]);
    let elements = row_with_overlaid_icon();
    assert_eq!(tap(&elements, &transitions, (990, 600)), "expanded");
    assert_eq!(tap(&elements, &transitions, (400, 600)), "edit");
}

#[test]
fn a_disabled_button_takes_the_touch_and_does_nothing() {
    let elements = json!([
        {"class": "android.widget.FrameLayout", "clickable": true, "resource_id": "com.example.dispatch:id/card",
         "bounds": [0, 200, 1080, 800], "children": [
            {"class": "android.widget.Button", "text": "Pay", "clickable": true, "enabled": false,
             "bounds": [40, 600, 500, 760]}]}
    ]);
    let transitions = json!([
        {"action": "click", "target": {"resource_id": "com.example.dispatch:id/card"}, "to": "card"},
        {"action": "click", "target": {"text": "Pay"}, "to": "paid"}
    ]);
    assert_eq!(tap(&elements, &transitions, (270, 680)), "home");
    assert_eq!(tap(&elements, &transitions, (800, 300)), "card");
}

#[test]
fn a_long_press_on_a_view_without_long_click_is_a_click_on_release() {
    let mut elements = row_with_overlaid_icon();
    elements[0]["long_clickable"] = json!(true);
    let transitions = json!([
        {"action": "click", "target": {"content_desc": "Expand"}, "to": "expanded"},
        {"action": "click", "target": {"text": "Buy milk"}, "to": "edit"},
        {"action": "long_click", "target": {"text": "Buy milk"}, "to": "selected"}
    ]);
    let mut w = world(elements.clone(), transitions.clone());
    w.long_press(990, 600);
    assert_eq!(screen(&w), "expanded", "the button is not long-clickable");
    let mut w = world(elements.clone(), transitions.clone());
    w.long_press(400, 600);
    assert_eq!(screen(&w), "selected");
    let no_long_click = json!([transitions[0], transitions[1]]);
    let mut w = world(elements, no_long_click);
    w.long_press(400, 600);
    assert_eq!(
        screen(&w),
        "home",
        "a long-clickable row keeps its long press to itself"
    );
}

#[test]
fn typing_fires_the_fields_transition_before_its_containers() {
    let elements = json!([
        {"class": "android.widget.LinearLayout", "resource_id": "com.example.dispatch:id/form",
         "bounds": [0, 200, 1080, 800], "children": [
            {"class": "android.widget.EditText", "resource_id": "com.example.dispatch:id/query",
             "bounds": [40, 220, 1040, 340]}]}
    ]);
    let transitions = json!([
        {"action": "input", "target": {"resource_id": "com.example.dispatch:id/form"}, "to": "form"},
        {"action": "input", "target": {"resource_id": "com.example.dispatch:id/query"}, "to": "results"}
    ]);
    let mut w = world(elements, transitions);
    w.tap(540, 280);
    w.input_text("shoes").unwrap();
    assert_eq!(screen(&w), "results");
}

#[test]
fn a_tapped_field_takes_the_focus_even_when_a_click_transition_answers() {
    let elements = json!([
        {"class": "android.widget.EditText", "resource_id": "com.example.dispatch:id/add",
         "text": "Add", "bounds": [40, 220, 1040, 340]}
    ]);
    // Recorded explorations log the tap that focused a field as a click that stayed.
    let transitions = json!([
        {"action": "click", "target": {"resource_id": "com.example.dispatch:id/add"}, "to": "home"},
        {"action": "input", "target": {"resource_id": "com.example.dispatch:id/add"}, "to": "added"}
    ]);
    let mut w = world(elements, transitions);
    w.tap(540, 280);
    w.input_text("milk").unwrap();
    assert_eq!(screen(&w), "added");
}

#[test]
fn a_swipe_goes_to_the_list_under_the_finger_before_its_parents() {
    let elements = json!([
        {"class": "androidx.viewpager.widget.ViewPager", "resource_id": "com.example.dispatch:id/pager",
         "scrollable": true, "bounds": [0, 200, 1080, 1800], "children": [
            {"class": "androidx.recyclerview.widget.RecyclerView",
             "resource_id": "com.example.dispatch:id/list", "scrollable": true,
             "bounds": [0, 200, 1080, 1800], "children": [
                {"class": "android.widget.TextView", "text": "Row", "clickable": true,
                 "bounds": [0, 200, 1080, 400]}]}]}
    ]);
    let transitions = json!([
        {"action": "scroll_down", "target": {"resource_id": "com.example.dispatch:id/pager"}, "to": "pager"},
        {"action": "scroll_down", "target": {"resource_id": "com.example.dispatch:id/list"}, "to": "more"}
    ]);
    let mut w = world(elements, transitions);
    w.swipe(540, 1500, 540, 300, 300);
    assert_eq!(screen(&w), "more");
}
