//! Roles: what kind of action a widget offers and how promising it is, from how Android apps
//! are built (classes, flags, the words on buttons), never from a particular app.

use crate::events::ActionType;
use crate::ui::{is_actionable, UiElement};

use super::element::{descendants, label_in};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    /// An item of a list that shows no view taking touches (see
    /// [`super::passive_items`]): often handled in code, often not at all.
    Item,
    /// A switch, check box or radio button: it changes a setting in place, rarely the screen.
    Toggle,
    /// A scrollable container's other gestures than its main one (scrolling back up, swiping
    /// a row or a page sideways): a list's rows may be swiped away or open an editor, a pager
    /// turns the other way.
    Gesture,
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
            Rank::Item => 0.5,
            Rank::Toggle => 0.4,
            Rank::Gesture => 0.2,
            Rank::ScreenScroll => 0.35,
            Rank::Risky => 0.25,
            Rank::Dismissive | Rank::Chosen => 0.15,
        }
    }
}

/// The rank of an actionable element on a screen (`has_form`: the screen has editable fields,
/// which makes submit-like labels a form's submit; `after_field`: the element comes after the
/// form's first field, where its buttons are the form's submits, see [`is_form_button`]).
pub fn rank(
    elements: &[UiElement],
    element: &UiElement,
    has_form: bool,
    after_field: bool,
) -> Rank {
    let label = label_in(elements, element);
    if element.editable {
        Rank::Text
    } else if is_risky(element, label) {
        Rank::Risky
    } else if is_dismissive(label) {
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
    } else if has_form
        && (is_submit(label) || (after_field && is_form_button(elements, element, label)))
    {
        Rank::SubmitButton
    } else {
        Rank::Text
    }
}

/// A radio button itself (not a row holding one: a preference row is a toggle).
pub fn is_radio(element: &UiElement) -> bool {
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

/// A button of a button bar (it shares its parent with another button, as a dialog's buttons
/// do), with words that neither dismiss nor destroy (`label` is its [`label_in`]): after a
/// form's first field, the form's submit, whatever it says ("Generate", "Reuse characters").
/// A button is any view class named so but a check box's kin.
pub fn is_form_button(elements: &[UiElement], element: &UiElement, label: &str) -> bool {
    let is_button = |e: &UiElement| e.class_name.ends_with("Button") && !e.checkable;
    let in_bar = element.parent.is_some_and(|parent| {
        elements.iter().any(|other| {
            other.parent == Some(parent)
                && other.element_id != element.element_id
                && is_button(other)
                && is_actionable(other)
        })
    });
    is_button(element)
        && in_bar
        && !label.is_empty()
        && !is_dismissive(label)
        && !is_risky(element, label)
}

fn is_dismissive(label: &str) -> bool {
    label.eq_ignore_ascii_case("back") || DISMISS.iter().any(|p| starts_with_phrase(label, p))
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

/// Every gesture a scrollable container takes, its main one ([`primary_action`]) first: a
/// list scrolls both ways and its rows may be swiped sideways (to delete, to edit), a pager
/// turns both ways and may hold a list. Nothing for other elements.
pub fn gestures(element: &UiElement) -> Vec<ActionType> {
    if !element.scrollable || element.editable || element.clickable || element.checkable {
        return Vec::new();
    }
    let main = primary_action(element);
    let mut all = vec![main.clone()];
    all.extend(
        ActionType::GESTURES
            .into_iter()
            .filter(|kind| *kind != main),
    );
    all
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
