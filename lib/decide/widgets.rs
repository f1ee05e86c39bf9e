//! What the deciders need to know about elements: which can be acted on, how to name them, how
//! to recognise the same widget across visits.
//!
//! These mirror `droid::ui`'s rules for the fields an observation carries, so a decider works on
//! any observation, including ones from other producers that leave `signature` or refs empty.

use crate::events::{ActionType, BoundingBox, Observation};
use crate::ui::{self, Bounds, UiElement};

/// Labels of actions a careful tester leaves for last (they end the session or destroy data).
const RISKY: [&str; 14] = [
    "log out",
    "logout",
    "sign out",
    "signout",
    "delete",
    "remove",
    "uninstall",
    "reset",
    "erase",
    "wipe",
    "clear data",
    "clear all",
    "deactivate",
    "close account",
];

/// An element worth acting on: [`ui::is_actionable`] and with an area on screen.
pub fn is_actionable(element: &UiElement) -> bool {
    ui::is_actionable(element) && element.bounds.area() > 0
}

/// The element's own words: text, else content description, else hint.
pub fn label(element: &UiElement) -> &str {
    [&element.text, &element.content_desc, &element.hint]
        .into_iter()
        .map(|s| s.trim())
        .find(|s| !s.is_empty())
        .unwrap_or("")
}

/// The element's own words, else those of its first labelled descendant (a list row whose text
/// sits in a child `TextView`).
pub fn label_in<'a>(elements: &'a [UiElement], element: &'a UiElement) -> &'a str {
    let own = label(element);
    if !own.is_empty() {
        return own;
    }
    // Descendants follow their ancestor in document order, deeper than it.
    let Some(at) = elements
        .iter()
        .position(|e| e.element_id == element.element_id)
    else {
        return own;
    };
    elements[at + 1..]
        .iter()
        .take_while(|e| e.depth > element.depth)
        .map(label)
        .find(|l| !l.is_empty())
        .unwrap_or(own)
}

/// The widget signature the capture computed, or one from class, id, description and (for
/// non-editable widgets) text when the producer left it empty.
pub fn signature(element: &UiElement) -> String {
    if !element.signature.is_empty() {
        return element.signature.clone();
    }
    let text = if element.editable { "" } else { &element.text };
    format!(
        "{}|{}|{}|{}",
        element.class_name, element.resource_id, element.content_desc, text
    )
}

/// A label or id that promises to end the session or destroy data (`label` is the element's
/// [`label_in`]).
pub fn is_risky(element: &UiElement, label: &str) -> bool {
    let words = format!(
        "{} {} {} {}",
        element.text, element.content_desc, element.resource_id, label
    )
    .to_lowercase()
    .replace(['_', '-'], " ");
    RISKY.iter().any(|risky| words.contains(risky))
}

/// Rows of one kind (three or more actionable elements sharing class and id) and no scrollable
/// container: a list the screen itself may scroll, showing rows further down.
pub fn is_unmarked_list(elements: &[UiElement]) -> bool {
    if elements.iter().any(|e| e.scrollable) {
        return false;
    }
    let mut kinds: std::collections::HashMap<(&str, &str), usize> = Default::default();
    elements
        .iter()
        .filter(|e| is_actionable(e) && !e.editable)
        .any(|e| {
            let count = kinds
                .entry((e.class_name.as_str(), e.resource_id.as_str()))
                .or_default();
            *count += 1;
            *count >= 3
        })
}

/// The main action for an element.
pub fn primary_action(element: &UiElement) -> ActionType {
    if element.editable {
        ActionType::Input
    } else if element.clickable || element.checkable {
        ActionType::Click
    } else if element.long_clickable {
        ActionType::LongPress
    } else {
        ActionType::ScrollDown
    }
}

/// The element a `[ref=N]` names: by `ref` when the observation has refs, else by `element_id`.
pub fn element_by_ref(observation: &Observation, reference: u32) -> Option<&UiElement> {
    let elements = &observation.elements;
    if elements.iter().any(|e| e.ref_id.is_some()) {
        ui::element_by_ref(elements, reference)
    } else {
        elements.iter().find(|e| e.element_id == reference)
    }
}

/// The reference a prompt shows for an element (see [`element_by_ref`]).
pub fn reference(observation: &Observation, element: &UiElement) -> u32 {
    if observation.elements.iter().any(|e| e.ref_id.is_some()) {
        element.ref_id.unwrap_or(element.element_id)
    } else {
        element.element_id
    }
}

pub fn bounding_box(bounds: Bounds) -> BoundingBox {
    BoundingBox {
        top_left: [i64::from(bounds.x1), i64::from(bounds.y1)],
        bottom_right: [i64::from(bounds.x2), i64::from(bounds.y2)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn element(text: &str, resource_id: &str) -> UiElement {
        UiElement {
            text: text.into(),
            resource_id: resource_id.into(),
            class_name: "android.widget.Button".into(),
            clickable: true,
            enabled: true,
            bounds: Bounds::from([0, 0, 10, 10]),
            ..UiElement::default()
        }
    }

    #[test]
    fn risky_labels_and_ids() {
        assert!(is_risky(&element("Log out", ""), ""));
        assert!(is_risky(&element("", "com.app:id/sign_out"), ""));
        assert!(is_risky(&element("", "com.app:id/row"), "Delete note"));
        assert!(!is_risky(
            &element("Settings", "com.app:id/settings"),
            "Settings"
        ));
    }

    #[test]
    fn three_rows_of_one_kind_without_a_scrollable_container_are_a_list() {
        let rows: Vec<UiElement> = (0..3).map(|_| element("Row", "com.app:id/row")).collect();
        assert!(is_unmarked_list(&rows));
        assert!(!is_unmarked_list(&rows[..2]));
        let mut scrollable = rows.clone();
        scrollable[0].scrollable = true;
        assert!(!is_unmarked_list(&scrollable));
    }

    #[test]
    fn signature_falls_back_and_ignores_typed_text() {
        let mut field = element("typed", "com.app:id/email");
        field.editable = true;
        assert_eq!(
            signature(&field),
            "android.widget.Button|com.app:id/email||"
        );
        field.signature = "given".into();
        assert_eq!(signature(&field), "given");
    }
}
