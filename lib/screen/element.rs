//! Facts about one element of a screen: its words, how to name it, which element a decision's
//! `ref` or box means, and the widget signature when a producer left it out.

use crate::events::{Action, ActionType, BoundingBox, Observation};
use crate::ui::{self, is_actionable, Bounds, UiElement};

/// Least overlap (intersection over union) at which a box means an element.
const SNAP_OVERLAP: f64 = 0.3;

/// The elements under `element` (they follow it in document order, deeper than it).
pub fn descendants<'a>(
    elements: &'a [UiElement],
    element: &'a UiElement,
) -> impl Iterator<Item = &'a UiElement> {
    let at = elements
        .iter()
        .position(|e| e.element_id == element.element_id)
        .map_or(elements.len(), |at| at + 1);
    elements[at..]
        .iter()
        .take_while(move |e| e.depth > element.depth)
}

/// The actionable elements an explorer tries, without wrappers: a row whose only words are
/// those of an actionable element inside it (a preference row around its check box) is the
/// same control as that element. A scrollable container is never a wrapper: scrolling it is
/// its own action, which no row inside offers.
pub fn controls(elements: &[UiElement]) -> impl Iterator<Item = &UiElement> {
    elements
        .iter()
        .filter(|e| is_actionable(e) && !is_wrapper(elements, e))
}

/// Items of a list drawn without any view that takes touches (a custom adapter, a touch
/// listener, a tab strip of labels): leaves with words, on screen and enabled, that take no
/// touch themselves and lie in no view that does but a scrolling one, with a sibling of the same
/// class and resource id. A tester taps them as they tap any list's items; an app that handles
/// touches in code leaves no trace of it in the dump.
pub fn passive_items(elements: &[UiElement]) -> impl Iterator<Item = &UiElement> {
    let takes_touch = |e: &UiElement| e.clickable || e.long_clickable || e.checkable || e.editable;
    let mut inside_touchable: Vec<(u32, bool)> = Vec::new();
    let mut items = Vec::new();
    for (at, element) in elements.iter().enumerate() {
        while inside_touchable
            .last()
            .is_some_and(|&(depth, _)| depth >= element.depth)
        {
            inside_touchable.pop();
        }
        let inside = inside_touchable.last().is_some_and(|&(_, inside)| inside);
        inside_touchable.push((element.depth, inside || takes_touch(element)));
        let leaf = elements
            .get(at + 1)
            .is_none_or(|next| next.depth <= element.depth);
        let passive = !inside && !takes_touch(element) && !element.scrollable;
        let shown = element.enabled && element.visible && element.bounds.area() > 0;
        if leaf && passive && shown && !ui::label(element).is_empty() {
            items.push(at);
        }
    }
    let alike = |a: &UiElement, b: &UiElement| {
        a.element_id != b.element_id
            && a.parent == b.parent
            && a.class_name == b.class_name
            && a.resource_id == b.resource_id
    };
    let candidates: Vec<&UiElement> = items.iter().map(|&at| &elements[at]).collect();
    items
        .into_iter()
        .map(move |at| &elements[at])
        .filter(move |e| e.parent.is_some() && candidates.iter().any(|o| alike(e, o)))
}

/// The element that holds `element` (a radio group of its choices, a list of its rows).
pub fn parent_of<'a>(elements: &'a [UiElement], element: &UiElement) -> Option<&'a UiElement> {
    let parent = element.parent?;
    elements.iter().find(|e| e.element_id == parent)
}

/// The list an element is an item of: its parent, when a sibling has the same class and
/// resource id (rows of one adapter, tabs of one strip).
pub fn list_of<'a>(elements: &'a [UiElement], element: &UiElement) -> Option<&'a UiElement> {
    let parent = element.parent?;
    let alike = elements.iter().any(|other| {
        other.parent == Some(parent)
            && other.element_id != element.element_id
            && other.class_name == element.class_name
            && other.resource_id == element.resource_id
    });
    alike.then(|| parent_of(elements, element)).flatten()
}

fn is_wrapper(elements: &[UiElement], element: &UiElement) -> bool {
    if element.editable || element.scrollable || !ui::label(element).is_empty() {
        return false;
    }
    let words = label_in(elements, element);
    !words.is_empty()
        && descendants(elements, element)
            .any(|inner| is_actionable(inner) && ui::label(inner) == words)
}

/// The element's [`ui::label`], else that of its first labelled descendant (a list row whose
/// text sits in a child `TextView`). Never a password field's text.
pub fn label_in<'a>(elements: &'a [UiElement], element: &'a UiElement) -> &'a str {
    ui::label(labelled_by(elements, element))
}

/// The element whose [`ui::label`] is `element`'s [`label_in`] its screen: itself, else its first
/// labelled descendant, else itself.
pub fn labelled_by<'a>(elements: &'a [UiElement], element: &'a UiElement) -> &'a UiElement {
    if !ui::label(element).is_empty() {
        return element;
    }
    descendants(elements, element)
        .find(|e| !ui::label(e).is_empty())
        .unwrap_or(element)
}

/// How people read an element: its short class and its label (`Button "Login"`), else its
/// resource id's name (`ImageButton #menu`), else the class alone; a password field says so
/// (`EditText "Password" (password)`) and never shows its text.
pub fn describe(elements: &[UiElement], element: &UiElement) -> String {
    let class = element
        .class_name
        .rsplit('.')
        .next()
        .unwrap_or(&element.class_name);
    let label = label_in(elements, element);
    let id = element
        .resource_id
        .rsplit_once(":id/")
        .map_or(element.resource_id.as_str(), |(_, name)| name);
    let named = match (label.is_empty(), id.is_empty()) {
        (false, _) => format!("{class} \"{label}\""),
        (true, false) => format!("{class} #{id}"),
        (true, true) => class.to_string(),
    };
    match element.password {
        true => format!("{named} (password)"),
        false => named,
    }
}

/// How a decision names an action on an element: `click Button "Login"`.
pub fn describe_action(elements: &[UiElement], element: &UiElement, kind: &ActionType) -> String {
    format!("{kind} {}", describe(elements, element))
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

/// An action on an element, carrying its `ref`, bounding box and signature: what a decider
/// writes to act on a widget it saw. A click on an element that takes no touches (a list's item
/// drawn as a plain label) is a tap at its centre: a box would snap to an actionable element
/// nearby, and Android hands the touch to whatever under that point handles it.
pub fn action_on(
    elements: &[UiElement],
    element: &UiElement,
    kind: ActionType,
    why: &str,
) -> Action {
    let mut action = Action::new(kind);
    action.action_desc = Some(describe_action(elements, element, &action.action));
    action.reasoning = Some(why.to_string());
    action.widget = Some(signature(element));
    if action.action == ActionType::Click && !crate::ui::is_actionable(element) {
        let (x, y) = element.bounds.center();
        action.action = ActionType::Tap;
        action.point = Some([i64::from(x), i64::from(y)]);
        return action;
    }
    action.target_bounding_box = Some(bounding_box(element.bounds));
    action.ref_id = element.ref_id;
    action
}

/// Whether the observation's elements carry `[ref=N]`s (the pruned tree gave them out).
fn has_refs(observation: &Observation) -> bool {
    observation.elements.iter().any(|e| e.ref_id.is_some())
}

/// The element a reference names: by `ref` when the observation has refs, else by
/// `element_id` (what a prompt shows for an observation without a pruned tree, see
/// [`reference`]).
pub fn element_by_ref(observation: &Observation, reference: u32) -> Option<&UiElement> {
    let elements = &observation.elements;
    match has_refs(observation) {
        true => elements.iter().find(|e| e.ref_id == Some(reference)),
        false => elements.iter().find(|e| e.element_id == reference),
    }
}

/// The reference a prompt shows for an element (see [`element_by_ref`]).
pub fn reference(observation: &Observation, element: &UiElement) -> u32 {
    match has_refs(observation) {
        true => element.ref_id.unwrap_or(element.element_id),
        false => element.element_id,
    }
}

/// The element a box means: the actionable element it overlaps best (intersection over union
/// at least 0.3), else the smallest actionable element under its centre.
pub fn snap<'a>(elements: &'a [UiElement], target: &BoundingBox) -> Option<&'a UiElement> {
    let target = bounds_of(target);
    let candidates = || elements.iter().filter(|e| is_actionable(e));
    let best = candidates()
        .map(|e| (overlap(&e.bounds, &target), e))
        .filter(|(score, _)| *score >= SNAP_OVERLAP)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, element)) = best {
        return Some(element);
    }
    let (cx, cy) = target.center();
    candidates()
        .filter(|e| e.bounds.contains(cx, cy))
        .min_by_key(|e| e.bounds.area())
}

/// The element an action targets: its `ref` (see [`element_by_ref`]), else what its box
/// snaps to.
pub fn target_of<'a>(observation: &'a Observation, action: &Action) -> Option<&'a UiElement> {
    match action.ref_id {
        Some(reference) => element_by_ref(observation, reference),
        None => snap(&observation.elements, action.target_bounding_box.as_ref()?),
    }
}

/// A box in device pixels as bounds (coordinates beyond `i32` clamped).
pub fn bounds_of(target: &BoundingBox) -> Bounds {
    let clamp = |v: i64| i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX });
    Bounds {
        x1: clamp(target.top_left[0]),
        y1: clamp(target.top_left[1]),
        x2: clamp(target.bottom_right[0]),
        y2: clamp(target.bottom_right[1]),
    }
}

/// Bounds as a decision's box.
pub fn bounding_box(bounds: Bounds) -> BoundingBox {
    BoundingBox {
        top_left: [i64::from(bounds.x1), i64::from(bounds.y1)],
        bottom_right: [i64::from(bounds.x2), i64::from(bounds.y2)],
    }
}

/// Intersection over union.
fn overlap(a: &Bounds, b: &Bounds) -> f64 {
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
