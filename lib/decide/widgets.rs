//! What the deciders need to know about elements: which can be acted on, how to name them, how
//! to recognise the same widget across visits.
//!
//! These mirror `droid::ui`'s rules for the fields an observation carries, so a decider works on
//! any observation, including ones from other producers that leave `signature` or refs empty.

use crate::events::{ActionType, BoundingBox, Observation};
use crate::ui::{self, Bounds, UiElement};

/// Labels of actions a careful tester leaves for last (they end the session or destroy data).
const RISKY_WORDS: [&str; 14] = [
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

/// Labels of buttons that skip content, close it or go back up (the toolbar's back arrow): tried
/// after everything else but risky ones, so a new screen is explored before it is left.
const DISMISS: [&str; 9] = [
    "skip",
    "not now",
    "later",
    "cancel",
    "close",
    "no thanks",
    "dismiss",
    "maybe later",
    "navigate up",
];

/// Labels of a form's submit button: tried after the form's other widgets (which often lead to
/// screens the submit would leave behind, such as "Forgot password?").
const SUBMIT: [&str; 22] = [
    "sign in",
    "log in",
    "login",
    "submit",
    "continue",
    "next",
    "pay",
    "place order",
    "buy",
    "checkout",
    "proceed",
    "send",
    "save",
    "done",
    "confirm",
    "ok",
    "search",
    "apply",
    "get started",
    "sign up",
    "register",
    "create",
];

/// What kind of action a widget offers, in the order ties are broken (first first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rank {
    /// A scrollable container's own scroll (or a pager's swipe): rows, pages and often screens
    /// not seen yet, in one step.
    ListScroll,
    /// A widget with words (or an editable field).
    Text,
    /// A form's submit button.
    SubmitButton,
    /// A widget without words (an icon).
    Anonymous,
    /// A switch, check box or radio button: it changes a setting in place, rarely the screen.
    Toggle,
    /// Scrolling a screen that shows a list without a scrollable container.
    ScreenScroll,
    /// "Cancel", "Skip", "Navigate up": leaves the screen before it is explored.
    Dismissive,
    /// A radio button already checked: choosing it again changes nothing.
    Chosen,
    /// "Log out", "Delete": ends the session or destroys data; tried last on its screen.
    Risky,
}

impl Rank {
    /// How likely an action of this rank is to show a screen not seen yet, relative to a widget
    /// with words: what the heuristic weighs against the steps needed to reach the action.
    pub fn promise(self) -> f64 {
        match self {
            Rank::ListScroll | Rank::Text => 1.0,
            Rank::SubmitButton => 0.9,
            Rank::Anonymous => 0.7,
            Rank::Toggle => 0.4,
            Rank::ScreenScroll => 0.35,
            Rank::Risky => 0.25,
            Rank::Dismissive | Rank::Chosen => 0.15,
        }
    }
}

/// The rank of an actionable element on a screen (`has_form`: the screen has editable fields,
/// which makes submit-like labels a form's submit).
pub fn rank(elements: &[UiElement], element: &UiElement, has_form: bool) -> Rank {
    let label = label_in(elements, element);
    if element.editable {
        Rank::Text
    } else if is_risky(element, label) {
        Rank::Risky
    } else if label.eq_ignore_ascii_case("back")
        || DISMISS.iter().any(|p| starts_with_phrase(label, p))
    {
        Rank::Dismissive
    } else if matches!(
        primary_action(element),
        ActionType::ScrollDown | ActionType::SwipeLeft
    ) {
        Rank::ListScroll
    } else if is_radio(element) && element.checked {
        Rank::Chosen
    } else if is_radio(element) && !has_form {
        // Outside a form, radio buttons are a single-choice list (a theme, a sort order, a
        // note to open): picking one is what the list is for, and usually closes or leaves it.
        Rank::Text
    } else if is_toggle(elements, element) {
        Rank::Toggle
    } else if label.is_empty() {
        Rank::Anonymous
    } else if has_form && is_submit(label) {
        Rank::SubmitButton
    } else {
        Rank::Text
    }
}

/// A radio button itself (not a row holding one: a preference row is a toggle).
fn is_radio(element: &UiElement) -> bool {
    element.checkable && element.class_name.ends_with("RadioButton")
}

/// What a widget looks like, apart from its words: its class and its descendants' classes, in
/// order (a settings row with a label and a value, one with a label and a colour swatch).
pub fn shape(elements: &[UiElement], element: &UiElement) -> String {
    std::iter::once(element)
        .chain(descendants(elements, element))
        .map(|e| e.class_name.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A switch, check box or radio button, or a row holding one (a settings preference): it
/// changes a setting in place.
fn is_toggle(elements: &[UiElement], element: &UiElement) -> bool {
    element.checkable || descendants(elements, element).any(|e| e.checkable)
}

/// The elements under `element` (they follow it in document order, deeper than it).
fn descendants<'a>(
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

/// A label that submits a form ("Sign in", "Continue to payment"), matched by whole words so
/// "Notebook" is not "ok".
pub fn is_submit(label: &str) -> bool {
    let words = words_of(label);
    SUBMIT
        .iter()
        .any(|phrase| words.contains(&format!(" {phrase} ")))
}

/// The label's lower-case words, space-separated, with a space at each end.
fn words_of(label: &str) -> String {
    let words: Vec<String> = label
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    format!(" {} ", words.join(" "))
}

fn starts_with_phrase(label: &str, phrase: &str) -> bool {
    words_of(label).starts_with(&format!(" {phrase} "))
}

/// An element worth acting on: [`ui::is_actionable`] and with an area on screen.
pub fn is_actionable(element: &UiElement) -> bool {
    ui::is_actionable(element) && element.bounds.area() > 0
}

/// The actionable elements an explorer tries, without wrappers: a row whose only words are
/// those of an actionable element inside it (a preference row around its check box) is the
/// same control as that element.
pub fn controls(elements: &[UiElement]) -> impl Iterator<Item = &UiElement> {
    elements
        .iter()
        .filter(|e| is_actionable(e) && !is_wrapper(elements, e))
}

fn is_wrapper(elements: &[UiElement], element: &UiElement) -> bool {
    if element.editable || !label(element).is_empty() {
        return false;
    }
    let words = label_in(elements, element);
    !words.is_empty()
        && descendants(elements, element).any(|inner| is_actionable(inner) && label(inner) == words)
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
    descendants(elements, element)
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
    RISKY_WORDS.iter().any(|risky| words.contains(risky))
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
    } else if is_pager(element) {
        ActionType::SwipeLeft
    } else {
        ActionType::ScrollDown
    }
}

/// A container that scrolls sideways: a view pager (also when obfuscated, by its package) or
/// a horizontal scroll view.
fn is_pager(element: &UiElement) -> bool {
    let class = element.class_name.to_ascii_lowercase();
    class.contains("viewpager") || class.contains("horizontalscrollview")
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

/// How a decision names an action on an element: its type, the element's short class and its
/// label (`click Button "Login"`), or without a label `click ImageButton`.
pub fn describe(elements: &[UiElement], element: &UiElement, kind: ActionType) -> String {
    let name = label_in(elements, element);
    let class = element.class_name.rsplit('.').next().unwrap_or("");
    if name.is_empty() {
        format!("{kind} {class}")
    } else {
        format!("{kind} {class} \"{name}\"")
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
    fn radio_buttons_outside_a_form_are_choices_and_a_checked_one_comes_last() {
        let radio = |text: &str, checked: bool| UiElement {
            class_name: "android.widget.RadioButton".into(),
            checkable: true,
            checked,
            ..element(text, "")
        };
        let mut check_box = radio("Wrap lines", false);
        check_box.class_name = "android.widget.CheckBox".into();
        let list = [radio("Light", false), radio("Dark", true), check_box];
        assert_eq!(rank(&list, &list[0], false), Rank::Text);
        assert_eq!(rank(&list, &list[1], false), Rank::Chosen);
        assert_eq!(rank(&list, &list[2], false), Rank::Toggle);
        // In a form (a new note's title and its type), a radio button sets an option.
        assert_eq!(rank(&list, &list[0], true), Rank::Toggle);
        assert_eq!(rank(&list, &list[1], true), Rank::Chosen);
        assert!(Rank::Chosen.promise() < Rank::Risky.promise());
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
