//! Reading a model's answer: find the JSON value that is the decision (bare, fenced or among
//! other JSON in prose), validate it (1–12 actions, or the one asked for; required fields, a
//! missing `action_desc` filled in; known action types; numeric boxes on the screen), map boxes
//! from image pixels to device pixels and snap them to the element under them.

use serde_json::{Map, Value};

use super::prompt::Scale;
use crate::events::{Action, ActionType, BoundingBox, Decision, Observation};
use crate::screen::{bounding_box, describe_action, element_by_ref, signature, snap};

/// A usable answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub actions: Vec<Action>,
    pub signup_completed: bool,
    pub done: bool,
    /// Actions dropped or trimmed, for a warning note.
    pub warnings: Vec<String>,
}

/// Why an answer cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidResponse {
    #[error("no JSON object in the answer")]
    NoJson,
    #[error("the answer has no \"actions\" list")]
    NoActions,
    #[error("the answer's \"actions\" list is empty")]
    Empty,
    #[error("no usable action: {}", .0.join("; "))]
    NoneUsable(Vec<String>),
    #[error("the answer visits screen {} the prompt did not list", .0.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))]
    UnlistedVisit(Vec<u32>),
}

/// Most bytes the search for JSON in one answer examines, over all the places it starts from:
/// prose full of brackets that never close (each start is then scanned to the end) gives up
/// instead of taking quadratic time.
const SCAN_BUDGET: usize = 1 << 24;

/// Deepest nesting a JSON value in an answer may have: serde_json's own limit. Deeper brackets
/// are no decision, and the JSON5 parser (which recurses, and backtracks) is never given them.
const MAX_NESTING: usize = 128;

/// Every JSON value in an answer, nested ones included: the whole answer (also when it is a
/// JSON string holding the answer), else every balanced `{...}` or `[...]` in prose or fenced
/// blocks (with or without a language tag), braces inside JSON strings respected; values
/// nested in them count too (`{"answer": {"actions": [...]}}`).
fn json_values(text: &str) -> Vec<Value> {
    let trimmed = text.trim();
    let values = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::String(inner)) => return json_values(&inner),
        Ok(value) => vec![value],
        Err(_) => balanced_values(trimmed),
    };
    let mut found = Vec::new();
    for value in values {
        nested(value, &mut found);
    }
    found
}

/// The values that may be a decision, likeliest first: an object with an `actions` list, then
/// a lone action or a list of actions, then an object whose `actions` is no list, in the order
/// they appear within each kind. JSON that is no decision at all (`[1]` in "Button [1]") is
/// left out.
fn ranked(mut values: Vec<Value>) -> Vec<Value> {
    values.retain(|value| rank(value) > 0);
    values.sort_by_key(|value| std::cmp::Reverse(rank(value)));
    values
}

/// How much a value looks like a decision: 3 an object with an `actions` list, 2 a lone action
/// or a list holding one, 1 an object with a non-list `actions`, 0 anything else.
fn rank(value: &Value) -> u8 {
    let is_action = |item: &Value| item.get("action").is_some();
    match value {
        Value::Object(object) => match object.get("actions") {
            Some(Value::Array(_)) => 3,
            Some(_) => 1,
            None if is_action(value) => 2,
            None => 0,
        },
        Value::Array(items) if items.iter().any(is_action) => 2,
        _ => 0,
    }
}

/// `value` and every object or array inside it, outer ones first.
fn nested(value: Value, into: &mut Vec<Value>) {
    let inner: Vec<Value> = match &value {
        Value::Object(object) => object
            .values()
            .filter(|v| is_container(v))
            .cloned()
            .collect(),
        Value::Array(items) => items.iter().filter(|v| is_container(v)).cloned().collect(),
        _ => Vec::new(),
    };
    into.push(value);
    for value in inner {
        nested(value, into);
    }
}

fn is_container(value: &Value) -> bool {
    value.is_object() || value.is_array()
}

/// Every balanced `{...}` or `[...]` in `text` that is JSON, outermost ones, in order.
fn balanced_values(text: &str) -> Vec<Value> {
    let bytes = text.as_bytes();
    let mut budget = SCAN_BUDGET;
    let mut values = Vec::new();
    let mut start = 0;
    while start < bytes.len() && budget > 0 {
        if matches!(bytes[start], b'{' | b'[') {
            if let Some(end) = balanced_end(&bytes[start..], &mut budget).map(|n| start + n) {
                // Both ends are ASCII brackets, so char boundaries.
                if let Some(value) = lenient_json(&text[start..end]) {
                    values.push(value);
                    start = end;
                    continue;
                }
            }
        }
        start += 1;
    }
    values
}

/// JSON, or the JSON a model wrote carelessly: trailing commas, comments, single quotes,
/// unquoted keys (JSON5, which small local models often write).
fn lenient_json(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| json5::from_str(text).ok())
}

/// Length of the balanced `{...}` / `[...]` at the start of `bytes`, strings respected (in
/// double quotes, or single quotes as JSON5 has them: outside a string no JSON holds one);
/// `None` when it does not close, closes with the wrong bracket, holds a line break inside a
/// string (no JSON string does: a quote or an apostrophe of the prose's started it), nests
/// deeper than [`MAX_NESTING`], or the budget runs out.
fn balanced_end(bytes: &[u8], budget: &mut usize) -> Option<usize> {
    let mut open = Vec::new();
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        *budget = budget.checked_sub(1)?;
        if let Some(closing) = quote {
            match (escaped, b) {
                (_, b'\n') => return None,
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b) if b == closing => quote = None,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' | b'\'' => quote = Some(b),
            b'{' | b'[' if open.len() >= MAX_NESTING => return None,
            b'{' => open.push(b'}'),
            b'[' => open.push(b']'),
            b'}' | b']' => {
                if open.pop() != Some(b) {
                    return None;
                }
                if open.is_empty() {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Validates an answer against the observation it was asked about: the first of its JSON
/// values ([`json_values`], in the order of [`ranked`]) that gives a usable decision, else why
/// the likeliest one does not. Of the usable actions the first `most` are kept (1 when the
/// request asked for one action, [`Decision::MAX_ACTIONS`] otherwise), the others listed in the warnings.
pub fn parse(
    text: &str,
    observation: &Observation,
    scale: Scale,
    most: usize,
) -> Result<Parsed, InvalidResponse> {
    let values = json_values(text);
    if values.is_empty() {
        return Err(InvalidResponse::NoJson);
    }
    let mut first_error = None;
    for value in ranked(values) {
        match decision(value, observation, scale, most) {
            Ok(parsed) => return Ok(parsed),
            Err(invalid) => {
                first_error.get_or_insert(invalid);
            }
        }
    }
    Err(first_error.unwrap_or(InvalidResponse::NoActions))
}

/// A model's answer naming a state the exploration knows (a line of the prompt's list of
/// screens with actions not tried), to be walked to by the exploration itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visit {
    /// The line's number, as the prompt gave it.
    pub screen: u32,
    /// The label of the element to try there, as the line shows it.
    pub element: Option<String>,
}

/// The answer's visits, when its decision (the likeliest of its JSON values, in the order of
/// [`ranked`]) begins with them: `{"action": "visit", "screen": 2, "element": "Settings"}`,
/// alone or first in `actions`; the visits up to its first other action, in order. A screen's
/// number is read as a `ref` is (`2`, `"2"`, `"[screen=2]"`); a visit without one ends them.
pub fn visits(text: &str) -> Vec<Visit> {
    let Some(value) = ranked(json_values(text)).into_iter().next() else {
        return Vec::new();
    };
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut object) => match object.remove("actions") {
            Some(Value::Array(items)) => items,
            Some(_) => return Vec::new(),
            None => vec![Value::Object(object)],
        },
        _ => return Vec::new(),
    };
    items.iter().map_while(visit).collect()
}

/// One action as a visit.
fn visit(item: &Value) -> Option<Visit> {
    let object = item.as_object()?;
    let name = object.get("action").and_then(Value::as_str)?;
    if !name.trim().eq_ignore_ascii_case(super::prompt::VISIT) {
        return None;
    }
    let screen = numbered(object.get("screen")?, "screen=")?;
    let element = object
        .get("element")
        .and_then(Value::as_str)
        .map(|label| label.trim().trim_matches('"').to_string())
        .filter(|label| !label.is_empty());
    Some(Visit { screen, element })
}

/// One candidate value as a decision.
fn decision(
    value: Value,
    observation: &Observation,
    scale: Scale,
    most: usize,
) -> Result<Parsed, InvalidResponse> {
    let (items, object) = match value {
        Value::Array(items) => (items, Map::new()),
        Value::Object(mut object) => match object.remove("actions") {
            Some(Value::Array(items)) => (items, object),
            Some(_) => return Err(InvalidResponse::NoActions),
            // A lone action object.
            None => (vec![Value::Object(object)], Map::new()),
        },
        _ => return Err(InvalidResponse::NoActions),
    };
    if items.is_empty() {
        return Err(InvalidResponse::Empty);
    }
    let mut warnings = Vec::new();
    let mut actions = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let mut notes = Vec::new();
        let checked = action(item, observation, scale, &mut notes);
        let number = index + 1;
        warnings.extend(notes.iter().map(|note| format!("action {number}: {note}")));
        match checked {
            Ok(action) => actions.push(action),
            Err(reason) => warnings.push(format!("action {number} dropped: {reason}")),
        }
    }
    if actions.is_empty() {
        return Err(InvalidResponse::NoneUsable(warnings));
    }
    let most = most.clamp(1, Decision::MAX_ACTIONS);
    if actions.len() > most {
        let given = actions.len();
        warnings.push(match most {
            1 => format!("{given} usable actions where one was asked for, kept the first"),
            _ => format!("{given} usable actions, kept the first {most}"),
        });
        actions.truncate(most);
    }
    let flag = |name: &str| object.get(name).and_then(Value::as_bool).unwrap_or(false);
    Ok(Parsed {
        actions,
        signup_completed: flag("signup_completed"),
        done: flag("done"),
        warnings,
    })
}

/// One validated action, or why it was dropped; what was changed to make it usable goes to
/// `notes`.
fn action(
    item: &Value,
    observation: &Observation,
    scale: Scale,
    notes: &mut Vec<String>,
) -> Result<Action, String> {
    let object = item.as_object().ok_or("not an object")?;
    let name = object
        .get("action")
        .and_then(Value::as_str)
        .ok_or("no \"action\"")?;
    let kind = action_type(name).ok_or_else(|| format!("unknown action {name:?}"))?;
    // Words of a field: a non-blank string; anything else counts as missing.
    let words = |field: &str| {
        object
            .get(field)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
    };
    let mut action = Action::new(kind.clone());
    action.action_desc = words("action_desc");
    action.reasoning = words("reasoning");
    // Typed as given (spaces too); a number (a PIN, an amount) is typed as written.
    action.input_text = match object.get("input_text") {
        Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
        Some(Value::Number(number)) => Some(number.to_string()),
        _ => None,
    };
    let reference = match object.get("ref") {
        None | Some(Value::Null) => None,
        Some(value) => Some(ref_number(value).ok_or("\"ref\" is not a whole number")?),
    };
    let model_box = match object.get("target_bounding_box") {
        None | Some(Value::Null) => None,
        Some(value) => Some(device_box(value, scale)?),
    };
    let screen = screen_of(observation);
    // A ref wins over the box, so only a box that is used must lie on the screen.
    let model_box = match (reference, model_box, screen) {
        (None, Some(target), Some(screen)) => Some(on_screen(target, screen, notes)?),
        (_, target, _) => target,
    };
    let snapped = match (reference, model_box) {
        (Some(r), _) => {
            let element = element_by_ref(observation, r).ok_or(format!("no element [ref={r}]"))?;
            Some(element)
        }
        (None, Some(b)) => snap(&observation.elements, &b),
        (None, None) => None,
    };
    action.target_bounding_box = snapped.map(|e| bounding_box(e.bounds)).or(model_box);
    action.ref_id = snapped.and_then(|e| e.ref_id).or(reference);
    action.widget = snapped.map(signature);
    if let Some(point) = object.get("point").and_then(Value::as_array) {
        action.point = point_of(point, scale);
    }
    if let (Some([x, y]), Some([width, height])) = (action.point, screen) {
        if !(0..width).contains(&x) || !(0..height).contains(&y) {
            return Err(format!(
                "point [{x}, {y}] is off the {width}x{height} screen"
            ));
        }
    }
    let needs_target = matches!(
        kind,
        ActionType::Click | ActionType::LongPress | ActionType::Input
    );
    if needs_target && action.target_bounding_box.is_none() {
        return Err(format!("{kind} without a target box or ref"));
    }
    if kind == ActionType::Tap && action.target_bounding_box.is_none() && action.point.is_none() {
        return Err("tap without a point or box".into());
    }
    if kind == ActionType::Input && action.input_text.is_none() {
        return Err("input without input_text".into());
    }
    if action.action_desc.is_none() {
        let filled = match snapped {
            Some(element) => describe_action(&observation.elements, element, &kind),
            None => describe_where(&action),
        };
        notes.push(format!("no action_desc, filled in as {filled:?}"));
        action.action_desc = Some(filled);
    }
    if action.reasoning.is_none() {
        notes.push("no reasoning".into());
    }
    Ok(action)
}

/// An action not on an element, described by where it acts: `tap [x1,y1][x2,y2]`, `tap (x, y)`,
/// or its type alone (`back`).
/// An action type as a model may spell it: any case, words apart or hyphenated ("Click",
/// "long press", "scroll-down").
fn action_type(name: &str) -> Option<ActionType> {
    let wire: String = name
        .trim()
        .chars()
        .map(|c| match c {
            ' ' | '-' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    Some(ActionType::parse(&wire)).filter(ActionType::is_decidable)
}

/// A `ref` as a number, or as models copy it from the tree: `"5"`, `"[ref=5]"`, `"ref=5"`.
fn ref_number(value: &Value) -> Option<u32> {
    numbered(value, "ref=")
}

/// A number a prompt tags with `[<tag>N]`, as a number or as models copy it: `"5"`,
/// `"[<tag>5]"`, `"<tag>5"`.
fn numbered(value: &Value, tag: &str) -> Option<u32> {
    match value {
        Value::Number(number) => number.as_u64().and_then(|r| u32::try_from(r).ok()),
        Value::String(text) => {
            let text = text.trim().trim_start_matches('[').trim_end_matches(']');
            let digits = text.strip_prefix(tag).unwrap_or(text).trim();
            digits.parse().ok()
        }
        _ => None,
    }
}

fn describe_where(action: &Action) -> String {
    let kind = &action.action;
    match (action.target_bounding_box, action.point) {
        (Some(target), _) => format!("{kind} {}", shown(&target)),
        (None, Some([x, y])) => format!("{kind} ({x}, {y})"),
        (None, None) => kind.to_string(),
    }
}

fn point_of(values: &[Value], scale: Scale) -> Option<[i64; 2]> {
    let [x, y] = values else { return None };
    Some([
        (x.as_f64()? * scale.x).round() as i64,
        (y.as_f64()? * scale.y).round() as i64,
    ])
}

/// The observation's screen size in device pixels, when it is known.
fn screen_of(observation: &Observation) -> Option<[i64; 2]> {
    match observation.screen_size {
        Some([width, height]) if width > 0 && height > 0 => {
            Some([i64::from(width), i64::from(height)])
        }
        _ => None,
    }
}

/// A box (device pixels) on a `width` x `height` screen: as it is when it lies within the
/// screen, clamped to the screen (with a note) when it reaches past an edge, an error when no
/// pixel of it is on the screen (all of it left of x 0, above y 0, or at or past x `width` or y
/// `height`).
fn on_screen(
    target: BoundingBox,
    [width, height]: [i64; 2],
    notes: &mut Vec<String>,
) -> Result<BoundingBox, String> {
    let ([x1, y1], [x2, y2]) = (target.top_left, target.bottom_right);
    let screen = format!("the {width}x{height} screen");
    if x2 < 0 || y2 < 0 || x1 >= width || y1 >= height {
        return Err(format!(
            "target_bounding_box {} is off {screen}",
            shown(&target)
        ));
    }
    let clamped = BoundingBox {
        top_left: [x1.max(0), y1.max(0)],
        bottom_right: [x2.min(width), y2.min(height)],
    };
    if clamped != target {
        notes.push(format!(
            "target_bounding_box {} reaches past {screen}, clamped to {}",
            shown(&target),
            shown(&clamped)
        ));
    }
    Ok(clamped)
}

/// A box as uiautomator writes bounds: `[x1,y1][x2,y2]`.
fn shown(target: &BoundingBox) -> String {
    let ([x1, y1], [x2, y2]) = (target.top_left, target.bottom_right);
    format!("[{x1},{y1}][{x2},{y2}]")
}

/// A model's box in device pixels; corners must be pairs of numbers.
fn device_box(value: &Value, scale: Scale) -> Result<BoundingBox, String> {
    let corner = |name: &str| {
        value
            .get(name)
            .and_then(Value::as_array)
            .and_then(|pair| point_of(pair, scale))
            .ok_or(format!("target_bounding_box.{name} is not [x, y] numbers"))
    };
    let (a, b) = (corner("top_left")?, corner("bottom_right")?);
    Ok(BoundingBox {
        top_left: [a[0].min(b[0]), a[1].min(b[1])],
        bottom_right: [a[0].max(b[0]), a[1].max(b[1])],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::{Bounds, UiElement};
    use serde_json::json;

    /// The answer's JSON value most likely to be the decision.
    fn extract_json(text: &str) -> Option<Value> {
        ranked(json_values(text)).into_iter().next()
    }

    #[test]
    fn brackets_nested_past_any_json_are_not_handed_to_the_json5_parser() {
        // Found by `make fuzz` (seed 2): 1,000 nested objects in prose took 1.4 s, each start
        // parsed again by the recursive JSON5 parser; deeper could exhaust its stack.
        for levels in [1_000, 20_000] {
            let deep = format!(
                "Here: {}{{\"action\":\"back\"}}{} done",
                "{\"error\": ".repeat(levels),
                "}".repeat(levels)
            );
            let (sent, received) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = sent.send(json_values(&deep).len());
            });
            let found = received
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("a deep answer is read in linear time, not quadratic");
            // The innermost values still count, until the scan budget gives up on the rest.
            assert!(levels > 1_000 || found >= 1, "{levels}: {found}");
        }
        let fine = format!(
            "x {}1{}",
            "[".repeat(MAX_NESTING - 1),
            "]".repeat(MAX_NESTING - 1)
        );
        assert!(!json_values(&fine).is_empty());
    }

    #[test]
    fn visits_name_listed_screens_and_their_elements() {
        let visit = |screen, element: Option<&str>| Visit {
            screen,
            element: element.map(str::to_string),
        };
        let bare = r#"{"action": "visit", "screen": 2, "element": "Settings", "reasoning": "r"}"#;
        assert_eq!(visits(bare), vec![visit(2, Some("Settings"))]);
        let listed = r#"Going there. {"actions": [{"action": "Visit", "screen": "[screen=3]",
            "element": "\"About\""}, {"action": "visit", "screen": "1", "element": " "},
            {"action": "back"}, {"action": "visit", "screen": 4}]}"#;
        assert_eq!(
            visits(listed),
            vec![visit(3, Some("About")), visit(1, None)]
        );
        // Not first, no number, another action: no visit.
        for answer in [
            r#"{"actions": [{"action": "back"}, {"action": "visit", "screen": 1}]}"#,
            r#"{"action": "visit", "screen": "the settings"}"#,
            r#"{"action": "visit"}"#,
            r#"{"action": "click", "ref": 3}"#,
            "no JSON at all",
        ] {
            assert_eq!(visits(answer), vec![], "{answer}");
        }
    }

    fn observation() -> Observation {
        let button = |id: u32, text: &str, bounds: [i32; 4]| UiElement {
            element_id: id,
            text: text.into(),
            class_name: "android.widget.Button".into(),
            clickable: true,
            enabled: true,
            bounds: Bounds::from(bounds),
            ref_id: Some(id + 10),
            ..UiElement::default()
        };
        Observation {
            elements: vec![
                button(0, "Login", [40, 200, 1040, 320]),
                button(1, "Help", [40, 400, 1040, 520]),
            ],
            ..Observation::default()
        }
    }

    /// [`observation`] on a 1080x2400 screen.
    fn phone() -> Observation {
        Observation {
            screen_size: Some([1080, 2400]),
            ..observation()
        }
    }

    #[test]
    fn json_is_found_bare_fenced_and_in_prose() {
        let bare = r#"{"actions":[]}"#;
        let fenced = "Sure!\n```json\n{\"actions\": [1]}\n```\nDone.";
        let prose = "I will tap login: {\"actions\": [{\"action\": \"back\", \"reasoning\": \"a } in text\"}]} hope that helps";
        assert!(extract_json(bare).is_some());
        assert_eq!(extract_json(fenced).unwrap()["actions"][0], 1);
        assert_eq!(extract_json(prose).unwrap()["actions"][0]["action"], "back");
        assert_eq!(extract_json("no json here {oops"), None);
    }

    #[test]
    fn action_names_and_refs_as_models_spell_them() {
        assert_eq!(action_type("Click"), Some(ActionType::Click));
        assert_eq!(action_type(" long press "), Some(ActionType::LongPress));
        assert_eq!(action_type("Scroll-Down"), Some(ActionType::ScrollDown));
        assert_eq!(action_type("clicking"), None);
        for (value, expected) in [
            (json!(5), Some(5)),
            (json!("5"), Some(5)),
            (json!("[ref=5]"), Some(5)),
            (json!(" ref=12 "), Some(12)),
            (json!("5th"), None),
            (json!(-1), None),
            (json!(2.5), None),
        ] {
            assert_eq!(ref_number(&value), expected, "{value}");
        }
    }

    #[test]
    fn json_written_carelessly_is_read_as_json5() {
        let answers = [
            // A trailing comma, as small local models often leave.
            "```json\n{\"actions\": [{\"action\": \"back\",},],}\n```",
            // A comment, single quotes and unquoted keys.
            "Here: {actions: [{action: 'back', // the only way out\n reasoning: 'stuck'}]}",
            // Brackets inside single-quoted strings, after prose braces with an apostrophe.
            "Option {it's} loses. {'actions': [{'action': 'back', 'reasoning': 'a } and a ]'}]}",
        ];
        for answer in answers {
            let value = extract_json(answer).unwrap_or_else(|| panic!("{answer}"));
            assert_eq!(value["actions"][0]["action"], "back", "{answer}");
        }
        let value = extract_json(answers[2]).unwrap();
        assert_eq!(value["actions"][0]["reasoning"], "a } and a ]");
        // Prose in braces is still no JSON.
        assert_eq!(extract_json("Option {a} or {b, c} then [ref=5]"), None);
    }

    #[test]
    fn the_decision_is_found_among_other_json_in_prose() {
        let actions = r#"{"actions":[{"action":"back","action_desc":"b","reasoning":"r"}]}"#;
        let cases = [
            format!("I will tap Button [1] then {actions}"),
            format!("Option {{a}} is worse; my answer: {actions}"),
            format!("The list [\"Login\", \"Help\"] has two buttons. {actions}"),
            format!("Say \"{{\" then {{\"note\": \"a }} and a {{\"}} and {actions}"),
            format!("```\n{{\"screen\": \"login\"}}\n```\nthen\n```json\n{actions}\n```"),
            format!("```JSON\n[1, 2]\n```\n```\n{actions}\n```"),
            format!("```{actions}```"),
            format!("{{\"answer\": {actions}}}"),
            serde_json::to_string(&actions).unwrap(),
        ];
        for text in &cases {
            let value = extract_json(text).unwrap_or_else(|| panic!("nothing in {text}"));
            assert_eq!(value["actions"][0]["action"], "back", "{text}");
            let parsed = parse(text, &observation(), Scale::IDENTITY, Decision::MAX_ACTIONS);
            assert_eq!(parsed.map(|p| p.actions.len()), Ok(1), "{text}");
        }
    }

    #[test]
    fn a_decision_that_does_not_validate_gives_way_to_one_that_does() {
        let text = r#"For example {"actions":[{"action":"fly"}]}, but really {"actions":[{"action":"back"}]}"#;
        let parsed = parse(text, &observation(), Scale::IDENTITY, Decision::MAX_ACTIONS).unwrap();
        assert_eq!(parsed.actions[0].action, ActionType::Back);
        // When none validates, the likeliest decision's reason is given.
        let text = r#"Button [1] and {"actions":[{"action":"fly"}]}"#;
        let parsed = parse(text, &observation(), Scale::IDENTITY, Decision::MAX_ACTIONS);
        assert!(
            matches!(parsed, Err(InvalidResponse::NoneUsable(_))),
            "{parsed:?}"
        );
        // JSON that is no decision at all: no actions list.
        let text = "I would tap [1] or {\"x\": 2}";
        let parsed = parse(text, &observation(), Scale::IDENTITY, Decision::MAX_ACTIONS);
        assert_eq!(parsed, Err(InvalidResponse::NoActions));
    }

    #[test]
    fn pathological_prose_is_scanned_in_bounded_time() {
        let text = format!("{}{}", "[\"".repeat(200_000), r#"{"actions":[]}"#);
        // Whatever is found, the scan ends (the budget stops it).
        let _ = extract_json(&text);
        // Brackets that never close cost a scan to the end each, within the budget here.
        let text = format!(
            "{} {}",
            "[ ".repeat(1_000),
            r#"{"actions":[{"action":"back"}]}"#
        );
        assert!(extract_json(&text).is_some());
    }

    #[test]
    fn boxes_scale_back_and_snap_to_elements() {
        let text = r#"{"actions":[{"action":"click","action_desc":"login","reasoning":"r",
            "target_bounding_box":{"top_left":[25,110],"bottom_right":[500,160]}}]}"#;
        let scale = Scale { x: 2.0, y: 2.0 };
        let parsed = parse(text, &observation(), scale, Decision::MAX_ACTIONS).unwrap();
        let action = &parsed.actions[0];
        assert_eq!(action.ref_id, Some(10));
        assert_eq!(
            action.target_bounding_box,
            Some(BoundingBox {
                top_left: [40, 200],
                bottom_right: [1040, 320]
            })
        );
    }

    #[test]
    fn unknown_and_incomplete_actions_are_dropped_with_warnings() {
        let text = r#"[{"action":"fly"},{"action":"click"},{"action":"input","ref":11,"input_text":"{{test_password}}"},{"action":"back"}]"#;
        let parsed = parse(text, &observation(), Scale::IDENTITY, Decision::MAX_ACTIONS).unwrap();
        assert_eq!(parsed.actions.len(), 2);
        // The placeholder stays: droid-act types the password.
        assert_eq!(
            parsed.actions[0].input_text.as_deref(),
            Some("{{test_password}}")
        );
        let dropped: Vec<_> = parsed
            .warnings
            .iter()
            .filter(|w| w.contains("dropped"))
            .collect();
        assert_eq!(dropped.len(), 2);
        assert!(dropped[0].contains("unknown action \"fly\""));
    }

    #[test]
    fn boxes_and_points_off_the_screen_are_dropped_and_boxes_past_an_edge_clamped() {
        let obs = phone();
        let text = r#"[
            {"action":"click","target_bounding_box":{"top_left":[1200,100],"bottom_right":[1300,200]}},
            {"action":"tap","target_bounding_box":{"top_left":[900,2300],"bottom_right":[1200,2500]}},
            {"action":"tap","point":[-5,10]},
            {"action":"click","ref":11,"target_bounding_box":{"top_left":[-90,-90],"bottom_right":[-10,-10]}},
            {"action":"tap","target_bounding_box":{"top_left":[0,2400],"bottom_right":[50,2450]}},
            {"action":"tap","point":[1079,2399]}
        ]"#;
        let parsed = parse(text, &obs, Scale::IDENTITY, Decision::MAX_ACTIONS).unwrap();
        let kept: Vec<_> = parsed.actions.iter().map(|a| a.action.clone()).collect();
        assert_eq!(kept, [ActionType::Tap, ActionType::Click, ActionType::Tap]);
        assert_eq!(
            parsed.actions[0].target_bounding_box,
            Some(BoundingBox {
                top_left: [900, 2300],
                bottom_right: [1080, 2400]
            })
        );
        // The ref wins: its element's box, the model's off-screen box ignored.
        assert_eq!(parsed.actions[1].ref_id, Some(11));
        let judged: Vec<_> = parsed
            .warnings
            .iter()
            .filter(|w| w.contains("screen"))
            .collect();
        assert_eq!(
            judged,
            [
                "action 1 dropped: target_bounding_box [1200,100][1300,200] is off the \
                 1080x2400 screen",
                "action 2: target_bounding_box [900,2300][1200,2500] reaches past the 1080x2400 \
                 screen, clamped to [900,2300][1080,2400]",
                "action 3 dropped: point [-5, 10] is off the 1080x2400 screen",
                "action 5 dropped: target_bounding_box [0,2400][50,2450] is off the 1080x2400 \
                 screen",
            ]
        );
        // Boxes in screenshot pixels are judged once mapped to the device's.
        let text = r#"{"action":"tap","target_bounding_box":{"top_left":[545,10],"bottom_right":[600,60]}}"#;
        let half = Scale { x: 2.0, y: 2.0 };
        assert!(matches!(
            parse(text, &obs, half, Decision::MAX_ACTIONS),
            Err(InvalidResponse::NoneUsable(_))
        ));
        // An unknown screen size judges nothing.
        assert!(parse(text, &observation(), half, Decision::MAX_ACTIONS).is_ok());
    }

    #[test]
    fn a_missing_description_is_filled_in_and_a_missing_reasoning_noted() {
        let obs = phone();
        let text = r#"[
            {"action":"click","ref":11},
            {"action":"back","action_desc":"  ","reasoning":5},
            {"action":"tap","point":[540,1200],"action_desc":7,"reasoning":"r"},
            {"action":"tap","target_bounding_box":{"top_left":[0,2000],"bottom_right":[100,2100]},"reasoning":"r"},
            {"action":"input","ref":10,"input_text":1234,"action_desc":"type the PIN","reasoning":"r"},
            {"action_desc":"tap Help","ref":11,"reasoning":"r"}
        ]"#;
        let parsed = parse(text, &obs, Scale::IDENTITY, Decision::MAX_ACTIONS).unwrap();
        let described: Vec<_> = parsed
            .actions
            .iter()
            .map(|a| a.action_desc.as_deref().unwrap())
            .collect();
        assert_eq!(
            described,
            [
                "click Button \"Help\"",
                "back",
                "tap (540, 1200)",
                "tap [0,2000][100,2100]",
                "type the PIN"
            ]
        );
        assert_eq!(parsed.actions[0].reasoning, None);
        assert_eq!(parsed.actions[4].input_text.as_deref(), Some("1234"));
        assert_eq!(
            parsed.warnings,
            [
                "action 1: no action_desc, filled in as \"click Button \\\"Help\\\"\"",
                "action 1: no reasoning",
                "action 2: no action_desc, filled in as \"back\"",
                "action 2: no reasoning",
                "action 3: no action_desc, filled in as \"tap (540, 1200)\"",
                "action 4: no action_desc, filled in as \"tap [0,2000][100,2100]\"",
                "action 6 dropped: no \"action\"",
            ]
        );
    }

    #[test]
    fn one_action_asked_for_keeps_the_first_usable_one() {
        let text = r#"[{"action":"fly"},{"action":"back"},{"action":"home"}]"#;
        let parsed = parse(text, &observation(), Scale::IDENTITY, 1).unwrap();
        assert_eq!(parsed.actions.len(), 1);
        assert_eq!(parsed.actions[0].action, ActionType::Back);
        assert_eq!(
            parsed.warnings.last().unwrap(),
            "2 usable actions where one was asked for, kept the first"
        );
    }

    #[test]
    fn invalid_answers() {
        let obs = observation();
        let parse = |text| parse(text, &obs, Scale::IDENTITY, Decision::MAX_ACTIONS);
        assert_eq!(parse("hello"), Err(InvalidResponse::NoJson));
        assert_eq!(parse(r#"{"actions":[]}"#), Err(InvalidResponse::Empty));
        assert_eq!(parse(r#"{"plan":"x"}"#), Err(InvalidResponse::NoActions));
        let boxes = r#"{"actions":[{"action":"click","target_bounding_box":{"top_left":["a",1],"bottom_right":[2,2]}}]}"#;
        assert!(matches!(parse(boxes), Err(InvalidResponse::NoneUsable(_))));
        let many: Vec<String> = (0..14)
            .map(|_| r#"{"action":"back"}"#.to_string())
            .collect();
        let parsed = parse(&format!("[{}]", many.join(","))).unwrap();
        assert_eq!(parsed.actions.len(), Decision::MAX_ACTIONS);
        assert_eq!(
            parsed.warnings.last().unwrap(),
            "14 usable actions, kept the first 12"
        );
    }
}
