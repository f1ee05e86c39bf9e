//! Reading a model's answer: find the JSON (bare, fenced or wrapped in prose), validate it
//! (1–12 actions, required fields, known action types, numeric boxes), map boxes from image
//! pixels to device pixels and snap them to the element under them.

use serde_json::{Map, Value};

use super::prompt::Scale;
use super::widgets::{bounding_box, element_by_ref, is_actionable};
use crate::events::{Action, ActionType, BoundingBox, Observation};
use crate::ui::{Bounds, UiElement};

/// Most actions one decision may carry.
pub const MAX_ACTIONS: usize = 12;

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
}

/// Finds the answer's JSON: the whole text, a fenced block, or the first balanced object or
/// array in prose.
pub fn extract_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        if value.is_object() || value.is_array() {
            return Some(value);
        }
    }
    for block in trimmed.split("```").skip(1).step_by(2) {
        // Drop a language tag (```json) on the fence's line.
        let body = match block.split_once('\n') {
            Some((tag, rest)) if !tag.trim_start().starts_with(['{', '[']) => rest,
            _ => block,
        };
        if let Ok(value) = serde_json::from_str::<Value>(body.trim()) {
            return Some(value);
        }
    }
    let bytes = trimmed.as_bytes();
    for (start, &b) in bytes.iter().enumerate() {
        if b == b'{' || b == b'[' {
            if let Some(end) = balanced_end(&bytes[start..]) {
                if let Ok(value) = serde_json::from_str::<Value>(&trimmed[start..start + end]) {
                    return Some(value);
                }
            }
        }
    }
    None
}

/// Length of the balanced `{...}` / `[...]` at the start of `bytes`, strings respected.
fn balanced_end(bytes: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Validates an answer against the observation it was asked about.
pub fn parse(
    text: &str,
    observation: &Observation,
    scale: Scale,
) -> Result<Parsed, InvalidResponse> {
    let value = extract_json(text).ok_or(InvalidResponse::NoJson)?;
    let (items, object) = match value {
        Value::Array(items) => (items, Map::new()),
        Value::Object(mut object) => match object.remove("actions") {
            Some(Value::Array(items)) => (items, object),
            Some(_) => return Err(InvalidResponse::NoActions),
            // A lone action object.
            None if object.contains_key("action") => (vec![Value::Object(object)], Map::new()),
            None => return Err(InvalidResponse::NoActions),
        },
        _ => return Err(InvalidResponse::NoJson),
    };
    if items.is_empty() {
        return Err(InvalidResponse::Empty);
    }
    let mut warnings = Vec::new();
    let mut actions = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match action(item, observation, scale) {
            Ok(action) => actions.push(action),
            Err(reason) => warnings.push(format!("action {}: {reason}", index + 1)),
        }
    }
    if actions.is_empty() {
        return Err(InvalidResponse::NoneUsable(warnings));
    }
    if actions.len() > MAX_ACTIONS {
        warnings.push(format!(
            "{} actions given, kept the first {MAX_ACTIONS}",
            actions.len()
        ));
        actions.truncate(MAX_ACTIONS);
    }
    let flag = |name: &str| object.get(name).and_then(Value::as_bool).unwrap_or(false);
    Ok(Parsed {
        actions,
        signup_completed: flag("signup_completed"),
        done: flag("done"),
        warnings,
    })
}

/// One validated action, or why it was dropped.
fn action(item: &Value, observation: &Observation, scale: Scale) -> Result<Action, String> {
    let object = item.as_object().ok_or("not an object")?;
    let name = object
        .get("action")
        .and_then(Value::as_str)
        .ok_or("no \"action\"")?;
    let kind = ActionType::parse(name.trim()).ok_or_else(|| format!("unknown action {name:?}"))?;
    let text_field = |field: &str| {
        object
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.is_empty())
    };
    let mut action = Action::new(kind);
    action.action_desc = text_field("action_desc");
    action.reasoning = text_field("reasoning");
    action.input_text = text_field("input_text");
    let reference = match object.get("ref") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|r| u32::try_from(r).ok())
                .ok_or("\"ref\" is not a whole number")?,
        ),
    };
    let model_box = match object.get("target_bounding_box") {
        None | Some(Value::Null) => None,
        Some(value) => Some(device_box(value, scale)?),
    };
    let snapped = match (reference, model_box) {
        (Some(r), _) => {
            let element = element_by_ref(observation, r).ok_or(format!("no element [ref={r}]"))?;
            Some(element)
        }
        (None, Some(b)) => snap(&b, observation),
        (None, None) => None,
    };
    action.target_bounding_box = snapped.map(|e| bounding_box(e.bounds)).or(model_box);
    action.ref_id = snapped.and_then(|e| e.ref_id).or(reference);
    if let Some(point) = object.get("point").and_then(Value::as_array) {
        action.point = point_of(point, scale);
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
    Ok(action)
}

fn point_of(values: &[Value], scale: Scale) -> Option<[i64; 2]> {
    let [x, y] = values else { return None };
    Some([
        (x.as_f64()? * scale.x).round() as i64,
        (y.as_f64()? * scale.y).round() as i64,
    ])
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

/// The element a box means: the actionable element overlapping it most (intersection over
/// union at least 0.3), else the smallest actionable element under its centre.
pub fn snap<'a>(target: &BoundingBox, observation: &'a Observation) -> Option<&'a UiElement> {
    let clamp = |v: i64| i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX });
    let target = Bounds {
        x1: clamp(target.top_left[0]),
        y1: clamp(target.top_left[1]),
        x2: clamp(target.bottom_right[0]),
        y2: clamp(target.bottom_right[1]),
    };
    let candidates = || observation.elements.iter().filter(|e| is_actionable(e));
    let best = candidates()
        .map(|e| (iou(&e.bounds, &target), e))
        .filter(|(score, _)| *score >= 0.3)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, element)) = best {
        return Some(element);
    }
    let (cx, cy) = target.center();
    candidates()
        .filter(|e| e.bounds.contains(cx, cy))
        .min_by_key(|e| e.bounds.area())
}

fn iou(a: &Bounds, b: &Bounds) -> f64 {
    let inter = Bounds {
        x1: a.x1.max(b.x1),
        y1: a.y1.max(b.y1),
        x2: a.x2.min(b.x2),
        y2: a.y2.min(b.y2),
    }
    .area();
    let union = a.area() + b.area() - inter;
    if union <= 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn boxes_scale_back_and_snap_to_elements() {
        let text = r#"{"actions":[{"action":"click","action_desc":"login","reasoning":"r",
            "target_bounding_box":{"top_left":[25,110],"bottom_right":[500,160]}}]}"#;
        let scale = Scale { x: 2.0, y: 2.0 };
        let parsed = parse(text, &observation(), scale).unwrap();
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
        let parsed = parse(text, &observation(), Scale::IDENTITY).unwrap();
        assert_eq!(parsed.actions.len(), 2);
        // The placeholder stays: droid-act types the password.
        assert_eq!(
            parsed.actions[0].input_text.as_deref(),
            Some("{{test_password}}")
        );
        assert_eq!(parsed.warnings.len(), 2);
        assert!(parsed.warnings[0].contains("unknown action \"fly\""));
    }

    #[test]
    fn invalid_answers() {
        let obs = observation();
        let parse = |text| parse(text, &obs, Scale::IDENTITY);
        assert_eq!(parse("hello"), Err(InvalidResponse::NoJson));
        assert_eq!(parse(r#"{"actions":[]}"#), Err(InvalidResponse::Empty));
        assert_eq!(parse(r#"{"plan":"x"}"#), Err(InvalidResponse::NoActions));
        let boxes = r#"{"actions":[{"action":"click","target_bounding_box":{"top_left":["a",1],"bottom_right":[2,2]}}]}"#;
        assert!(matches!(parse(boxes), Err(InvalidResponse::NoneUsable(_))));
        let many: Vec<String> = (0..14)
            .map(|_| r#"{"action":"back"}"#.to_string())
            .collect();
        let parsed = parse(&format!("[{}]", many.join(","))).unwrap();
        assert_eq!(parsed.actions.len(), MAX_ACTIONS);
    }
}
