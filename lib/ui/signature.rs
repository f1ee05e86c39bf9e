//! Widget signatures and the actions a widget offers.
//!
//! A signature names "the same widget" across visits to a screen, so coverage can count actions
//! per widget rather than per pixel position. The rule (DroidBot's view signature, widened to the
//! subtree):
//!
//! ```text
//! signature = first 16 hex digits of sha256(
//!     class_name ␟ resource_id ␟ content_desc ␟ (text, unless the widget is editable)
//!     ␞ signature of child 1 ␞ signature of child 2 ...)
//! ```
//!
//! Bounds, focus, selection, checked state and typed text are left out: they change while the
//! widget stays the same. A list's signature changes with the items it shows, on purpose: a
//! different list content is a different widget to explore.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{UiElement, MAX_DEPTH};

/// Between a widget's own fields.
const FIELD: u8 = 0x1f;
/// Before each child signature.
const CHILD: u8 = 0x1e;

/// The signature of the element at position `id` (its `element_id` after [`super::parse`]),
/// computed from its subtree (16 lowercase hex digits); empty when there is no such element.
pub fn signature(elements: &[UiElement], id: u32) -> String {
    subtree_signature(elements, id as usize, 0)
}

/// Children come after their parent (document order): looking only there keeps elements from
/// the wire with a parent cycle from recursing forever, and the depth bound keeps the stack safe.
fn subtree_signature(elements: &[UiElement], at: usize, depth: usize) -> String {
    let Some(element) = elements.get(at) else {
        return String::new();
    };
    let children: Vec<String> = if depth < MAX_DEPTH {
        elements
            .iter()
            .enumerate()
            .skip(at + 1)
            .filter(|(_, child)| child.parent == Some(element.element_id))
            .map(|(child_at, _)| subtree_signature(elements, child_at, depth + 1))
            .collect()
    } else {
        Vec::new()
    };
    combine(element, children.iter().map(String::as_str))
}

/// Fills `signature` on every element in one pass. Relies on document order (children after
/// their parent), which [`super::parse`] produces.
pub(crate) fn sign_all(elements: &mut [UiElement]) {
    let mut child_signatures: Vec<Vec<String>> = vec![Vec::new(); elements.len()];
    for id in (0..elements.len()).rev() {
        // Collected last child first, since we walk backwards.
        let children = std::mem::take(&mut child_signatures[id]);
        let own = combine(&elements[id], children.iter().rev().map(String::as_str));
        if let Some(parent) = elements[id].parent {
            if let Some(siblings) = child_signatures.get_mut(parent as usize) {
                siblings.push(own.clone());
            }
        }
        elements[id].signature = own;
    }
}

fn combine<'a>(element: &UiElement, children: impl Iterator<Item = &'a str>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(element.class_name.as_bytes());
    hasher.update([FIELD]);
    hasher.update(element.resource_id.as_bytes());
    hasher.update([FIELD]);
    hasher.update(element.content_desc.as_bytes());
    hasher.update([FIELD]);
    if !element.editable {
        hasher.update(element.text.as_bytes());
    }
    for child in children {
        hasher.update([CHILD]);
        hasher.update(child.as_bytes());
    }
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    format!("{:016x}", u64::from_be_bytes(first))
}

/// What can be done to a widget (DroidBot's possible events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PossibleAction {
    Touch,
    LongTouch,
    SetText,
    Scroll,
}

impl PossibleAction {
    pub fn as_str(self) -> &'static str {
        match self {
            PossibleAction::Touch => "touch",
            PossibleAction::LongTouch => "long_touch",
            PossibleAction::SetText => "set_text",
            PossibleAction::Scroll => "scroll",
        }
    }
}

/// The actions an enabled widget offers, in a fixed order: touch (clickable or checkable), long
/// touch, set text (editable), scroll. A disabled widget offers none.
pub fn possible_actions(e: &UiElement) -> Vec<PossibleAction> {
    if !e.enabled {
        return Vec::new();
    }
    let offered = [
        (e.clickable || e.checkable, PossibleAction::Touch),
        (e.long_clickable, PossibleAction::LongTouch),
        (e.editable, PossibleAction::SetText),
        (e.scrollable, PossibleAction::Scroll),
    ];
    offered
        .into_iter()
        .filter_map(|(offers, action)| offers.then_some(action))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::parse;

    const DUMP: &str = r#"<hierarchy><node class="L" bounds="[0,0][9,9]"><node class="android.widget.EditText" text="typed" resource-id="p:id/e" clickable="true" enabled="true" bounds="[0,0][9,9]"/><node class="T" text="Title" bounds="[0,0][9,9]"/></node></hierarchy>"#;

    #[test]
    fn one_pass_matches_the_recursive_definition() {
        let elements = parse(DUMP).unwrap();
        for e in &elements {
            assert_eq!(e.signature, signature(&elements, e.element_id));
        }
        assert_eq!(signature(&elements, 99), "");
        let mut looped = elements.clone();
        looped[0].parent = Some(0);
        assert_eq!(signature(&looped, 0), elements[0].signature);
    }

    #[test]
    fn typed_text_and_position_do_not_change_it_but_labels_do() {
        let base = parse(DUMP).unwrap();
        let typed = parse(&DUMP.replace("typed", "other words")).unwrap();
        let moved = parse(&DUMP.replace("[0,0][9,9]", "[5,5][50,50]")).unwrap();
        let relabelled = parse(&DUMP.replace("Title", "Another")).unwrap();
        assert_eq!(base[0].signature, typed[0].signature);
        assert_eq!(base[0].signature, moved[0].signature);
        assert_ne!(base[0].signature, relabelled[0].signature);
        assert_eq!(base[1].signature, relabelled[1].signature);
    }

    #[test]
    fn actions_follow_the_flags() {
        let elements = parse(DUMP).unwrap();
        assert_eq!(
            possible_actions(&elements[1]),
            [PossibleAction::Touch, PossibleAction::SetText]
        );
        assert!(possible_actions(&elements[2]).is_empty());
        let disabled = UiElement {
            clickable: true,
            ..UiElement::default()
        };
        assert!(possible_actions(&disabled).is_empty());
    }
}
