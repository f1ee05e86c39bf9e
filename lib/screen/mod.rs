//! The screen model: what droid knows about one observed screen, computed once per observation
//! and asked by every stage that needs it (the deciders, droid-act, the store, the reports).
//!
//! - **Identity** ([`ScreenKey`]): one rule, in one function. Two observations show the same
//!   screen when they show the same activity and the same actionable widgets (by signature, see
//!   [`crate::ui::signature`]: class, resource id, description and, but for fields, text, over
//!   the widget's subtree; typed text, position, focus and checked state left out). A screen
//!   without actionable widgets (a canvas, a splash, a loading page) is told apart by its
//!   layout: every element's class, id, words and, outside scrolling containers, bounds. The
//!   rule was chosen by measuring candidates against the simulator's ground truth over every
//!   app model (`docs/screen.md`, `make coverage`).
//! - **Widgets** ([`Widget`]): the actionable elements an explorer tries (wrappers folded into
//!   the control they wrap), one per action, with the action they offer under one typed key
//!   ([`ActionKey`]), their role ([`Rank`]) and their label (never a password field's text).
//! - **Targets**: which element a decision's `ref` or box means ([`target_of`]): one rule for
//!   the deciders and droid-act alike.

mod element;
mod role;

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::events::{Action, ActionType, Observation};
use crate::ui::UiElement;

pub use element::{
    action_on, bounding_box, bounds_of, controls, descendants, describe, describe_action,
    element_by_ref, label_in, labelled_by, list_of, parent_of, passive_items, reference, signature,
    snap, target_of,
};
pub use role::{
    gestures, is_form_button, is_radio, is_risky, is_submit, is_unmarked_list, primary_action,
    rank, shape, Rank,
};

/// How far (in pixels) a control may reach up into its form's first field's row and still be
/// below it: rows of a dialog or a form touch, an app bar's actions sit beside the field.
const FORM_ROW_SLACK: i32 = 8;

/// Which screen an observation shows (see the module documentation): the activity (else the
/// package), a bar, and a digest of the actionable widgets (`w:`) or, without any, of the layout
/// (`l:`). The same string in the decider's graph, crawler.db's `screens.composite_hash` and
/// the reports.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ScreenKey(String);

impl ScreenKey {
    /// The key of the screen an observation shows.
    pub fn of(observation: &Observation) -> ScreenKey {
        Screen::of(observation).key
    }

    /// A key as stored (no check: a stored key is whatever droid wrote).
    pub fn from_stored(key: impl Into<String>) -> ScreenKey {
        ScreenKey(key.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_parts(observation: &Observation, widgets: &[Widget]) -> ScreenKey {
        let activity = observation
            .activity
            .as_deref()
            .or(observation.package.as_deref())
            .unwrap_or_default();
        let mut hasher = Sha256::new();
        let kind = match widgets.is_empty() {
            false => {
                let mut keys: Vec<String> = widgets.iter().map(|w| w.key.to_string()).collect();
                keys.sort_unstable();
                for key in keys {
                    hasher.update(key.as_bytes());
                    hasher.update([0]);
                }
                // A dialog's title says what it asks: one layout (a field and "OK", a list of
                // choices) serves several questions.
                for title in observation.elements.iter().filter(|e| is_dialog_title(e)) {
                    hasher.update([1]);
                    hasher.update(title.text.as_bytes());
                }
                "w"
            }
            true => {
                hash_layout(&observation.elements, &mut hasher);
                "l"
            }
        };
        let digest = hasher.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        ScreenKey(format!(
            "{activity}|{kind}:{:016x}",
            u64::from_be_bytes(first)
        ))
    }
}

impl fmt::Display for ScreenKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The title of an alert dialog (the framework's and AppCompat's `alertTitle`).
fn is_dialog_title(element: &UiElement) -> bool {
    element.resource_id.rsplit('/').next() == Some("alertTitle") && !element.text.is_empty()
}

/// Every element's depth, class, id, words (but typed text) and, outside scrolling
/// containers, bounds: what a screen without actionable widgets is recognised by.
fn hash_layout(elements: &[UiElement], hasher: &mut Sha256) {
    let mut scrolling: Vec<(u32, bool)> = Vec::new();
    for element in elements {
        while scrolling
            .last()
            .is_some_and(|&(depth, _)| depth >= element.depth)
        {
            scrolling.pop();
        }
        let inside = scrolling.last().is_some_and(|&(_, inside)| inside);
        let text = if element.editable { "" } else { &element.text };
        for part in [
            &element.class_name,
            &element.resource_id,
            text,
            &element.content_desc,
        ] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        hasher.update(element.depth.to_le_bytes());
        if !inside {
            for side in <[i32; 4]>::from(element.bounds) {
                hasher.update(side.to_le_bytes());
            }
        }
        scrolling.push((element.depth, inside || element.scrollable));
    }
}

/// What a screen's elements show that its [`ScreenKey`] leaves out: each element's text
/// (typed text too), description and checked state, by its slot (class, resource id and its
/// place among the elements alike). Two visits of one key differ here when a field holds
/// other text, a box is ticked, a list is scrolled or a dialog says something else; the
/// exploration graph tells such states apart when what an action did shows they are (see
/// [`crate::decide::graph`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details(BTreeMap<String, String>);

impl Details {
    pub fn of(elements: &[UiElement]) -> Details {
        let mut alike: HashMap<(&str, &str), u32> = HashMap::new();
        let shown = elements.iter().map(|e| {
            let place = alike
                .entry((e.class_name.as_str(), e.resource_id.as_str()))
                .or_default();
            *place += 1;
            let slot = format!("{}|{}#{place}", e.class_name, e.resource_id);
            let checked = if e.checked { "\u{1f}checked" } else { "" };
            let value = format!("{}\u{1f}{}{checked}", e.text, e.content_desc);
            (slot, value)
        });
        Details(shown.collect())
    }

    /// What the slot shows (`None`: no element there).
    pub fn get(&self, slot: &str) -> Option<&str> {
        self.0.get(slot).map(String::as_str)
    }

    /// What the slot shows, for a person: the element's text, else its description, and
    /// `[checked]` when it is (`None`: no element there).
    pub fn describe(&self, slot: &str) -> Option<String> {
        let mut parts = self.get(slot)?.split('\u{1f}');
        let (text, desc) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let words = if text.is_empty() { desc } else { text };
        Some(match parts.next() {
            Some(_) if words.is_empty() => "[checked]".to_string(),
            Some(_) => format!("{words} [checked]"),
            None => words.to_string(),
        })
    }

    /// The slots that show something else in `other` (or are only in one of the two).
    pub fn differing<'a>(&'a self, other: &'a Details) -> impl Iterator<Item = &'a String> {
        let mine = self
            .0
            .iter()
            .filter(|(slot, value)| other.0.get(*slot) != Some(value));
        let theirs = other.0.keys().filter(|slot| !self.0.contains_key(*slot));
        mine.map(|(slot, _)| slot).chain(theirs)
    }
}

/// An action on a screen: what it does and, for an action on a widget, the widget's signature.
/// Back and scrolling the whole screen have no widget. Ordered as their text (see `Display`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionKey {
    pub kind: ActionType,
    pub widget: Option<String>,
}

/// The system back, offered on every screen.
pub static BACK: ActionKey = ActionKey {
    kind: ActionType::Back,
    widget: None,
};

/// Scrolling the whole screen down, offered on lists without a scrollable container.
pub static SCROLL: ActionKey = ActionKey {
    kind: ActionType::ScrollDown,
    widget: None,
};

impl Ord for ActionKey {
    fn cmp(&self, other: &ActionKey) -> std::cmp::Ordering {
        // No action name is another's prefix, and `:` sorts before every character of a name:
        // comparing the parts orders keys as their text does.
        (self.kind.as_str(), &self.widget).cmp(&(other.kind.as_str(), &other.widget))
    }
}

impl PartialOrd for ActionKey {
    fn partial_cmp(&self, other: &ActionKey) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl ActionKey {
    /// The system back, offered on every screen.
    pub fn back() -> ActionKey {
        BACK.clone()
    }

    /// Scrolling the whole screen down (see [`SCROLL`]).
    pub fn scroll() -> ActionKey {
        SCROLL.clone()
    }

    /// `kind` on the widget with `signature`.
    pub fn on(kind: ActionType, signature: impl Into<String>) -> ActionKey {
        ActionKey {
            kind,
            widget: Some(signature.into()),
        }
    }

    /// The key of an element's main action.
    pub fn of(element: &UiElement) -> ActionKey {
        ActionKey::on(primary_action(element), signature(element))
    }

    /// Whether it types into a field.
    pub fn is_input(&self) -> bool {
        self.kind == ActionType::Input && self.widget.is_some()
    }

    /// Whether it clicks a widget.
    pub fn is_click(&self) -> bool {
        self.kind == ActionType::Click && self.widget.is_some()
    }

    /// Whether it scrolls or swipes a container (not the whole screen).
    pub fn is_gesture(&self) -> bool {
        self.widget.is_some() && self.kind.is_gesture()
    }
}

impl fmt::Display for ActionKey {
    /// `back`, `scroll_down`, `click:<signature>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.widget {
            Some(widget) => write!(f, "{}:{widget}", self.kind),
            None => f.write_str(self.kind.as_str()),
        }
    }
}

/// An actionable widget of a screen.
#[derive(Debug, Clone)]
pub struct Widget<'o> {
    pub element: &'o UiElement,
    pub key: ActionKey,
    pub rank: Rank,
    /// Its [`label_in`] its screen.
    pub label: &'o str,
    /// A form's control: after the form's first field, a check box, radio button or submit
    /// button (a toolbar above an editor is not one).
    pub control: bool,
}

impl Widget<'_> {
    pub fn is_field(&self) -> bool {
        self.element.editable
    }
}

/// What [`Screen::of`] finds on one observation, owned: the key and the widgets by their
/// elements' places. Computed once per observation (by the hash stage) and handed, beside the
/// observation, to whoever needs the screen next: stuck detection, the decide stage and the
/// store build their [`Screen`] from it ([`Screen::with_model`]) instead of analysing the
/// elements again. Only valid for the observation it was made from.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreenModel {
    key: ScreenKey,
    widgets: Vec<WidgetModel>,
    unmarked_list: bool,
}

/// A [`Widget`] by its elements' places in the observation's element list.
#[derive(Debug, Clone, PartialEq)]
struct WidgetModel {
    element: usize,
    labelled_by: usize,
    key: ActionKey,
    rank: Rank,
    control: bool,
}

impl ScreenModel {
    /// The model of the screen an observation shows.
    pub fn of(observation: &Observation) -> ScreenModel {
        Screen::of(observation).model()
    }

    pub fn key(&self) -> &ScreenKey {
        &self.key
    }
}

/// A list's row (see [`list_of`]) whose main action is a long press: by the dump it takes no
/// taps, but an adapter that opens its rows from a touch listener leaves no trace of the tap in
/// the dump (as for [`passive_items`]), and a tester taps a row before long-pressing it. (A
/// scrolling list that takes long presses is a list, not a row.)
fn only_long_pressed_row(elements: &[UiElement], widget: &Widget) -> bool {
    widget.key.kind == ActionType::LongPress
        && !widget.element.scrollable
        && list_of(elements, widget.element).is_some()
}

/// One observed screen (see the module documentation).
#[derive(Debug, Clone)]
pub struct Screen<'o> {
    observation: &'o Observation,
    key: ScreenKey,
    widgets: Vec<Widget<'o>>,
    /// The screen shows rows of one kind without a scrollable container.
    unmarked_list: bool,
}

impl<'o> Screen<'o> {
    pub fn of(observation: &'o Observation) -> Screen<'o> {
        let elements = &observation.elements[..];
        let mut seen = std::collections::HashSet::new();
        let actionable: Vec<&UiElement> = controls(elements)
            .filter(|e| seen.insert(ActionKey::of(e)))
            .collect();
        let first_field = actionable.iter().find(|e| e.editable).copied();
        let has_form = first_field.is_some();
        let widgets: Vec<Widget> = actionable
            .into_iter()
            .map(|element| {
                let label = label_in(elements, element);
                // A form's controls follow its first field and sit below it: a button in the
                // field's own row (an app bar's actions beside its search field, a field's
                // clear button) is no part of what the field fills in.
                let after_field = first_field.is_some_and(|field| {
                    element.element_id > field.element_id
                        && element.bounds.y1 >= field.bounds.y2 - FORM_ROW_SLACK
                });
                let control = after_field
                    && (element.checkable
                        || is_submit(label)
                        || is_form_button(elements, element, label));
                Widget {
                    element,
                    key: ActionKey::of(element),
                    rank: rank(elements, element, has_form, after_field),
                    label,
                    control,
                }
            })
            .collect();
        let key = ScreenKey::from_parts(observation, &widgets);
        // What else a tester tries, which does not make the screen another one: a scrollable
        // container's other gestures, a tap on a list's row that the dump says only takes long
        // presses, and the items of a list that shows no view taking touches.
        let mut widgets = widgets;
        let others: Vec<Widget> = widgets
            .iter()
            .flat_map(|w| {
                gestures(w.element)
                    .into_iter()
                    .skip(1)
                    .map(move |kind| Widget {
                        key: ActionKey::on(kind, w.key.widget.clone().unwrap_or_default()),
                        rank: Rank::Gesture,
                        control: false,
                        ..w.clone()
                    })
            })
            .chain(
                widgets
                    .iter()
                    .filter(|w| only_long_pressed_row(elements, w))
                    .map(|w| Widget {
                        key: ActionKey::on(
                            ActionType::Click,
                            w.key.widget.clone().unwrap_or_default(),
                        ),
                        rank: Rank::Item,
                        control: false,
                        ..w.clone()
                    }),
            )
            .chain(passive_items(elements).map(|element| Widget {
                element,
                key: ActionKey::on(ActionType::Click, signature(element)),
                rank: Rank::Item,
                label: label_in(elements, element),
                control: false,
            }))
            .collect();
        widgets.extend(others);
        Screen {
            observation,
            key,
            widgets,
            unmarked_list: is_unmarked_list(elements),
        }
    }

    /// The screen `model` describes, on the observation it was made from: no analysis, only
    /// the elements looked up (see [`ScreenModel`]). A model that does not fit the observation
    /// (a place past its elements) is analysed again rather than trusted.
    pub fn with_model(observation: &'o Observation, model: &ScreenModel) -> Screen<'o> {
        let elements = &observation.elements;
        let widgets: Option<Vec<Widget<'o>>> = model
            .widgets
            .iter()
            .map(|w| {
                let element = elements.get(w.element)?;
                Some(Widget {
                    element,
                    key: w.key.clone(),
                    rank: w.rank,
                    label: crate::ui::label(elements.get(w.labelled_by)?),
                    control: w.control,
                })
            })
            .collect();
        match widgets {
            Some(widgets) => Screen {
                observation,
                key: model.key.clone(),
                widgets,
                unmarked_list: model.unmarked_list,
            },
            None => Screen::of(observation),
        }
    }

    /// This screen's model, to hand on with its observation.
    pub fn model(&self) -> ScreenModel {
        let elements = &self.observation.elements;
        let place = |element: &UiElement| {
            elements
                .iter()
                .position(|e| std::ptr::eq(e, element))
                .unwrap_or(usize::MAX)
        };
        ScreenModel {
            key: self.key.clone(),
            widgets: self
                .widgets
                .iter()
                .map(|w| WidgetModel {
                    element: place(w.element),
                    labelled_by: place(labelled_by(elements, w.element)),
                    key: w.key.clone(),
                    rank: w.rank,
                    control: w.control,
                })
                .collect(),
            unmarked_list: self.unmarked_list,
        }
    }

    pub fn key(&self) -> &ScreenKey {
        &self.key
    }

    /// What its elements show beyond its key (see [`Details`]).
    pub fn details(&self) -> Details {
        Details::of(&self.observation.elements)
    }

    pub fn observation(&self) -> &'o Observation {
        self.observation
    }

    pub fn elements(&self) -> &'o [UiElement] {
        &self.observation.elements
    }

    /// The widgets, one per action key: the actionable elements' main actions in document
    /// order (what identifies the screen), then a scrollable container's other gestures and the
    /// items of a list that shows no view taking touches (see [`passive_items`]).
    pub fn widgets(&self) -> &[Widget<'o>] {
        &self.widgets
    }

    /// The widget offering `key`.
    pub fn widget(&self, key: &ActionKey) -> Option<&Widget<'o>> {
        self.widgets.iter().find(|w| &w.key == key)
    }

    /// The editable fields.
    pub fn fields(&self) -> impl Iterator<Item = &Widget<'o>> {
        self.widgets.iter().filter(|w| w.is_field())
    }

    /// The screen has editable fields.
    pub fn has_form(&self) -> bool {
        self.widgets.iter().any(Widget::is_field)
    }

    /// The form's submit buttons (its controls that are not options).
    pub fn submits(&self) -> Vec<ActionKey> {
        self.widgets
            .iter()
            .filter(|w| w.control && !w.element.checkable)
            .map(|w| w.key.clone())
            .collect()
    }

    /// Whether scrolling the whole screen may show more (rows of one kind and no scrollable
    /// container).
    pub fn offers_screen_scroll(&self) -> bool {
        self.unmarked_list
    }

    /// Every action the screen offers, with its role: its widgets' actions, a whole-screen
    /// scroll where [`Screen::offers_screen_scroll`], and back.
    pub fn actions(&self) -> Vec<(ActionKey, Rank)> {
        let mut actions: Vec<(ActionKey, Rank)> = self
            .widgets
            .iter()
            .map(|w| (w.key.clone(), w.rank))
            .collect();
        if self.unmarked_list {
            actions.push((ActionKey::scroll(), Rank::ScreenScroll));
        }
        actions.push((ActionKey::back(), Rank::Dismissive));
        actions
    }

    /// The key of what `action` does on this screen: back, a whole-screen scroll, or its type
    /// on the widget it names (a tap on a widget clicks it) or targets (`None` when it targets
    /// nothing here).
    pub fn key_of(&self, action: &Action) -> Option<ActionKey> {
        ActionKey::of_action(action, || {
            target_of(self.observation, action).map(signature)
        })
    }
}

impl ActionKey {
    /// The key of what a decision's action does: back, a whole-screen scroll, or its type on
    /// the widget it names or, failing that, on the widget `resolve` finds for it (the element
    /// its ref or box means, or the one droid-act acted on). A tap on a widget clicks it.
    pub fn of_action(
        action: &Action,
        resolve: impl FnOnce() -> Option<String>,
    ) -> Option<ActionKey> {
        let whole_screen = action.ref_id.is_none() && action.target_bounding_box.is_none();
        let kind = match &action.action {
            ActionType::Back => return Some(ActionKey::back()),
            ActionType::Tap if action.widget.is_some() => ActionType::Click,
            ActionType::ScrollDown if whole_screen && action.widget.is_none() => {
                return Some(ActionKey::scroll())
            }
            kind => kind.clone(),
        };
        let widget = action.widget.clone().or_else(resolve)?;
        Some(ActionKey::on(kind, widget))
    }
}

/// Which action of a step a screen reached after it is the outcome of, given the actions taken
/// in order and the screen each was meant for (`screen_of`; a decider walking a known path
/// meant later moves for screens it did not observe). The last action taken on each screen
/// passed counts: when the screen reached is the one passed just before the last action's
/// screen, the last action led back there (a dialog's button closes the dialog); when it is one
/// passed earlier, the move taken there went nowhere (a link dead in this state of the app) and
/// its outcome is that screen again; otherwise the outcome is the last action's. Returns the
/// action and whether it went nowhere. One rule for the decider's graph and the store's.
pub fn outcome<'t, T, S: PartialEq>(
    taken: &'t [T],
    screen_of: impl Fn(&T) -> &S,
    reached: &S,
) -> Option<(&'t T, bool)> {
    let mut lasts: Vec<&T> = Vec::new();
    for step in taken {
        match lasts.last_mut() {
            Some(last) if screen_of(last) == screen_of(step) => *last = step,
            _ => lasts.push(step),
        }
    }
    let (last, passed) = lasts.split_last()?;
    let earlier = passed.split_last().map_or(&[][..], |(_, earlier)| earlier);
    match earlier.iter().find(|step| screen_of(step) == reached) {
        Some(step) => Some((step, true)),
        None => Some((last, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::{parse, prune};

    fn observation(activity: &str, xml: &str) -> Observation {
        let mut elements = parse(xml).unwrap();
        prune(&mut elements);
        Observation {
            activity: Some(activity.into()),
            elements,
            ..Observation::default()
        }
    }

    const FORM: &str = r#"<hierarchy><node class="android.widget.FrameLayout" bounds="[0,0][1080,2400]"><node class="android.widget.EditText" resource-id="app:id/email" text="typed@example.com" clickable="true" focusable="true" enabled="true" bounds="[0,100][1080,200]"/><node class="android.widget.EditText" resource-id="app:id/password" password="true" text="secret" clickable="true" enabled="true" bounds="[0,200][1080,300]"/><node class="android.widget.CheckBox" text="Remember me" checkable="true" clickable="true" enabled="true" bounds="[0,300][1080,400]"/><node class="android.widget.Button" text="Sign in" clickable="true" enabled="true" bounds="[0,400][1080,500]"/><node class="android.widget.TextView" text="12:03" bounds="[0,500][1080,600]"/></node></hierarchy>"#;

    #[test]
    fn details_are_what_the_key_leaves_out_slot_by_slot() {
        let details = |xml: &str| Details::of(&observation("A", xml).elements);
        let base = details(FORM);
        let differing =
            |xml: String| -> Vec<String> { base.differing(&details(&xml)).cloned().collect() };
        assert!(differing(FORM.to_string()).is_empty());
        assert_eq!(
            differing(FORM.replace("typed@example.com", "")),
            ["android.widget.EditText|app:id/email#1"]
        );
        assert_eq!(
            differing(FORM.replace("checkable=\"true\"", "checkable=\"true\" checked=\"true\"")),
            ["android.widget.CheckBox|#1"]
        );
        assert_eq!(
            differing(FORM.replace("12:03", "12:04")),
            ["android.widget.TextView|#1"]
        );
        // A slot only one of the two shows differs too.
        let shorter = FORM.replace(
            r#"<node class="android.widget.TextView" text="12:03" bounds="[0,500][1080,600]"/>"#,
            "",
        );
        assert_eq!(differing(shorter), ["android.widget.TextView|#1"]);
        assert_eq!(base.get("android.widget.Button|#1"), Some("Sign in\u{1f}"));
        // For a person: the words, and whether the element is checked.
        assert_eq!(
            base.describe("android.widget.Button|#1").as_deref(),
            Some("Sign in")
        );
        let ticked =
            details(&FORM.replace("checkable=\"true\"", "checkable=\"true\" checked=\"true\""));
        let check_box = ticked.describe("android.widget.CheckBox|#1").unwrap();
        assert!(check_box.ends_with("[checked]"), "{check_box}");
        assert_eq!(base.describe("android.widget.Switch|#9"), None);
    }

    #[test]
    fn typed_text_checked_state_and_passive_text_keep_the_screen() {
        let base = ScreenKey::of(&observation("A", FORM));
        for same in [
            FORM.replace("typed@example.com", ""),
            FORM.replace("checkable=\"true\"", "checkable=\"true\" checked=\"true\""),
            FORM.replace("12:03", "12:04"),
        ] {
            assert_eq!(ScreenKey::of(&observation("A", &same)), base, "{same}");
        }
        for other in [
            FORM.replace("Sign in", "Sign up"),
            FORM.replace("app:id/email", "app:id/name"),
        ] {
            assert_ne!(ScreenKey::of(&observation("A", &other)), base, "{other}");
        }
        assert_ne!(ScreenKey::of(&observation("B", FORM)), base);
        assert!(base.as_str().starts_with("A|w:"), "{base}");
    }

    #[test]
    fn a_screen_from_its_model_is_the_screen_analysed_again() {
        let o = list_screen(&["Tuto", "Todo"]);
        let analysed = Screen::of(&o);
        let model = analysed.model();
        let handed = Screen::with_model(&o, &model);
        assert_eq!(handed.key(), analysed.key());
        let parts = |screen: &Screen| -> Vec<(u32, String, Rank, String, bool)> {
            screen
                .widgets()
                .iter()
                .map(|w| {
                    let key = w.key.to_string();
                    (
                        w.element.element_id,
                        key,
                        w.rank,
                        w.label.to_string(),
                        w.control,
                    )
                })
                .collect()
        };
        assert_eq!(parts(&handed), parts(&analysed));
        assert!(!parts(&handed).is_empty());
        assert_eq!(handed.actions(), analysed.actions());
        // A model made for another observation with fewer elements is not trusted.
        let other = observation("A", FORM);
        assert!(o.elements.len() > other.elements.len());
        assert_eq!(
            Screen::with_model(&other, &model).key(),
            Screen::of(&other).key()
        );
    }

    #[test]
    fn buttons_beside_a_field_are_no_controls_of_its_form_and_buttons_below_it_are() {
        // An app bar: a search field and two action buttons in one row; a list below; a bar of
        // buttons under a form's field lower down.
        let xml = r#"<hierarchy><node class="android.widget.FrameLayout" enabled="true" bounds="[0,0][1080,2400]"><node class="android.widget.LinearLayout" resource-id="app:id/toolbar" enabled="true" bounds="[0,80][1080,230]"><node class="android.widget.EditText" resource-id="app:id/search" text="" clickable="true" enabled="true" bounds="[0,80][700,230]"/><node class="android.widget.LinearLayout" enabled="true" bounds="[700,80][1080,230]"><node class="android.widget.Button" text="Sort by" clickable="true" enabled="true" bounds="[700,80][890,230]"/><node class="android.widget.Button" text="Settings" clickable="true" enabled="true" bounds="[890,80][1080,230]"/></node></node><node class="android.widget.EditText" resource-id="app:id/name" clickable="true" enabled="true" bounds="[0,1000][1080,1150]"/><node class="android.widget.LinearLayout" enabled="true" bounds="[0,1150][1080,1300]"><node class="android.widget.Button" text="Cancel" clickable="true" enabled="true" bounds="[0,1150][540,1300]"/><node class="android.widget.Button" text="Rename" clickable="true" enabled="true" bounds="[540,1150][1080,1300]"/></node></node></hierarchy>"#;
        let o = observation("A", xml);
        let screen = Screen::of(&o);
        let controls: Vec<&str> = screen
            .widgets()
            .iter()
            .filter(|w| w.control)
            .map(|w| w.label)
            .collect();
        assert_eq!(controls, ["Rename"]);
        let rank = |label: &str| {
            screen
                .widgets()
                .iter()
                .find(|w| w.label == label)
                .unwrap()
                .rank
        };
        assert_eq!(rank("Sort by"), Rank::Text);
        assert_eq!(rank("Rename"), Rank::SubmitButton);
    }

    #[test]
    fn a_dialog_is_told_apart_by_its_title() {
        let dialog = |title: &str, typed: &str| {
            format!(
                r#"<hierarchy><node class="android.widget.FrameLayout" bounds="[0,0][1080,2400]"><node class="android.widget.TextView" resource-id="android:id/alertTitle" text="{title}" bounds="[0,100][1080,200]"/><node class="android.widget.EditText" text="{typed}" clickable="true" enabled="true" bounds="[0,200][1080,300]"/><node class="android.widget.Button" resource-id="android:id/button1" text="OK" clickable="true" enabled="true" bounds="[0,300][1080,400]"/></node></hierarchy>"#
            )
        };
        let key =
            |title: &str, typed: &str| ScreenKey::of(&observation("A", &dialog(title, typed)));
        let words = key("Number of words", "");
        assert_eq!(words, key("Number of words", "3"));
        assert_ne!(words, key("Choose characters", ""));
        // AppCompat's dialog title, in the app's own package, is one too.
        let appcompat =
            dialog("Choose characters", "").replace("android:id/alertTitle", "app:id/alertTitle");
        assert_eq!(
            ScreenKey::of(&observation("A", &appcompat)),
            key("Choose characters", "")
        );
        // Any other label stays out of the key.
        let other =
            dialog("Choose characters", "").replace("android:id/alertTitle", "app:id/subtitle");
        let plain =
            dialog("Number of words", "").replace("android:id/alertTitle", "app:id/subtitle");
        assert_eq!(
            ScreenKey::of(&observation("A", &other)),
            ScreenKey::of(&observation("A", &plain))
        );
    }

    #[test]
    fn a_screen_without_actionable_widgets_is_told_apart_by_its_layout() {
        let canvas = |text: &str| {
            format!(
                r#"<hierarchy><node class="android.view.View" text="{text}" bounds="[0,0][1080,2400]"/></hierarchy>"#
            )
        };
        let a = ScreenKey::of(&observation("A", &canvas("Loading")));
        assert!(a.as_str().starts_with("A|l:"), "{a}");
        assert_eq!(a, ScreenKey::of(&observation("A", &canvas("Loading"))));
        assert_ne!(a, ScreenKey::of(&observation("A", &canvas("Done"))));
    }

    #[test]
    fn widgets_carry_keys_roles_and_labels_but_never_a_password() {
        let o = observation("A", FORM);
        let screen = Screen::of(&o);
        let labels: Vec<&str> = screen.widgets().iter().map(|w| w.label).collect();
        assert_eq!(labels, ["typed@example.com", "", "Remember me", "Sign in"]);
        let ranks: Vec<Rank> = screen.widgets().iter().map(|w| w.rank).collect();
        assert_eq!(
            ranks,
            [Rank::Text, Rank::Text, Rank::Toggle, Rank::SubmitButton]
        );
        assert_eq!(screen.submits(), [screen.widgets()[3].key.clone()]);
        assert_eq!(screen.fields().count(), 2);
        let password = screen.widgets()[1].element;
        assert_eq!(
            describe(screen.elements(), password),
            "EditText #password (password)"
        );
        assert!(screen.widgets()[0].key.is_input());
        assert_eq!(
            screen.actions().last().map(|(key, _)| key.to_string()),
            Some("back".into())
        );
    }

    /// A list of three rows whose labels are those of the rows themselves, in a scrollable
    /// container, and a strip of labels that take no touch (`strip`) above it.
    fn list_screen(strip: &[&str]) -> Observation {
        let labels: String = strip
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let x = i * 200;
                format!(
                    r#"<node class="android.widget.TextView" resource-id="app:id/tab" text="{label}" enabled="true" bounds="[{x},0][{},100]"/>"#,
                    x + 190
                )
            })
            .collect();
        let rows: String = ["One", "Two", "Three"]
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let y = 200 + i * 200;
                format!(
                    r#"<node class="android.widget.TextView" resource-id="app:id/row" text="{label}" clickable="true" enabled="true" bounds="[0,{y}][1080,{}]"/>"#,
                    y + 190
                )
            })
            .collect();
        observation(
            "A",
            &format!(
                r#"<hierarchy><node class="android.widget.FrameLayout" enabled="true" bounds="[0,0][1080,2400]"><node class="androidx.recyclerview.widget.RecyclerView" resource-id="app:id/tabs" enabled="true" bounds="[0,0][1080,100]">{labels}</node><node class="android.widget.ListView" resource-id="app:id/list" scrollable="true" enabled="true" bounds="[0,200][1080,2400]">{rows}</node></node></hierarchy>"#
            ),
        )
    }

    #[test]
    fn a_row_the_dump_says_only_takes_long_presses_is_tapped_too() {
        let row = |y: u32, name: &str| {
            format!(
                r#"<node class="android.view.ViewGroup" resource-id="app:id/call" long-clickable="true" enabled="true" bounds="[0,{y}][1080,{}]"><node class="android.widget.TextView" resource-id="app:id/name" text="{name}" enabled="true" bounds="[100,{y}][900,{}]"/></node>"#,
                y + 150,
                y + 150
            )
        };
        let lone = r#"<node class="android.widget.TextView" resource-id="app:id/title" text="Song" long-clickable="true" enabled="true" bounds="[0,1800][1080,1900]"/>"#;
        let o = observation(
            "A",
            &format!(
                r#"<hierarchy><node class="android.widget.FrameLayout" enabled="true" bounds="[0,0][1080,2400]"><node class="android.widget.LinearLayout" resource-id="app:id/calls" enabled="true" bounds="[0,200][1080,600]">{}{}</node>{lone}</node></hierarchy>"#,
                row(200, "Alice"),
                row(400, "Bob")
            ),
        );
        let screen = Screen::of(&o);
        let kinds = |label: &str| -> Vec<(ActionType, Rank)> {
            screen
                .widgets()
                .iter()
                .filter(|w| w.label == label)
                .map(|w| (w.key.kind.clone(), w.rank))
                .collect()
        };
        // Each row: its long press, and a tap promising as a list's item does.
        for name in ["Alice", "Bob"] {
            let row = kinds(name);
            assert!(
                row.contains(&(ActionType::LongPress, Rank::Text)),
                "{row:?}"
            );
            assert!(row.contains(&(ActionType::Click, Rank::Item)), "{row:?}");
        }
        // A long-pressed view that is no list's row (a title that copies itself) is not tapped.
        assert_eq!(kinds("Song"), [(ActionType::LongPress, Rank::Text)]);
    }

    #[test]
    fn a_scrollable_list_is_no_wrapper_of_its_first_row_and_takes_every_gesture() {
        let o = list_screen(&[]);
        let screen = Screen::of(&o);
        let on_list: Vec<(ActionType, Rank)> = screen
            .widgets()
            .iter()
            .filter(|w| w.element.class_name.ends_with("ListView"))
            .map(|w| (w.key.kind.clone(), w.rank))
            .collect();
        assert_eq!(
            on_list,
            [
                (ActionType::ScrollDown, Rank::ListScroll),
                (ActionType::ScrollUp, Rank::Gesture),
                (ActionType::SwipeLeft, Rank::Gesture),
                (ActionType::SwipeRight, Rank::Gesture),
            ]
        );
        // The other gestures are actions the screen offers, not what identifies it.
        let actions: Vec<ActionKey> = screen.actions().into_iter().map(|(k, _)| k).collect();
        assert!(actions.iter().any(|k| k.kind == ActionType::SwipeRight));
        let mut without = o.clone();
        without.elements.retain(|e| !e.scrollable);
        assert_ne!(Screen::of(&without).key(), screen.key());
    }

    #[test]
    fn labels_of_a_strip_that_takes_no_touch_are_items_to_tap() {
        let o = list_screen(&["Tuto", "Todo"]);
        let screen = Screen::of(&o);
        let items: Vec<(&str, ActionType, Rank)> = screen
            .widgets()
            .iter()
            .filter(|w| w.rank == Rank::Item)
            .map(|w| (w.label, w.key.kind.clone(), w.rank))
            .collect();
        assert_eq!(
            items,
            [
                ("Tuto", ActionType::Click, Rank::Item),
                ("Todo", ActionType::Click, Rank::Item)
            ]
        );
        // They do not make the screen another one: a strip's labels change with the app's data.
        assert_eq!(screen.key(), Screen::of(&list_screen(&["Other"])).key());
        // A lone label is no list's item, and a label inside a row that takes touches belongs
        // to the row.
        assert!(Screen::of(&list_screen(&["Only"]))
            .widgets()
            .iter()
            .all(|w| w.rank != Rank::Item));
    }

    #[test]
    fn a_button_of_a_bar_after_a_field_submits_the_form_whatever_it_says() {
        let dialog = r#"<hierarchy><node class="android.widget.FrameLayout" enabled="true" bounds="[0,0][1080,2400]"><node class="android.widget.EditText" resource-id="app:id/count" clickable="true" enabled="true" bounds="[0,100][1080,200]"/><node class="android.widget.LinearLayout" enabled="true" bounds="[0,300][1080,400]"><node class="android.widget.Button" text="Cancel" clickable="true" enabled="true" bounds="[0,300][500,400]"/><node class="android.widget.Button" text="Generate" clickable="true" enabled="true" bounds="[500,300][1080,400]"/></node><node class="android.widget.Button" text="Help" clickable="true" enabled="true" bounds="[0,500][1080,600]"/></node></hierarchy>"#;
        let o = observation("A", dialog);
        let screen = Screen::of(&o);
        let roles: Vec<(&str, Rank, bool)> = screen
            .widgets()
            .iter()
            .filter(|w| !w.is_field())
            .map(|w| (w.label, w.rank, w.control))
            .collect();
        assert_eq!(
            roles,
            [
                ("Cancel", Rank::Dismissive, false),
                ("Generate", Rank::SubmitButton, true),
                ("Help", Rank::Text, false),
            ]
        );
        assert_eq!(screen.submits(), [screen.widgets()[2].key.clone()]);
    }

    #[test]
    fn the_outcome_is_the_last_action_unless_a_screen_passed_earlier_is_reached_again() {
        let click = |w: &str| ActionKey::on(ActionType::Click, w);
        let taken = [
            ("home", click("a")),
            ("home", click("b")),
            ("menu", click("c")),
            ("page", click("d")),
        ];
        fn of<'a>(
            taken: &[(&'a str, ActionKey)],
            reached: &'a str,
        ) -> Option<(&'a str, ActionKey, bool)> {
            outcome(taken, |t| &t.0, &reached).map(|(t, stalled)| (t.0, t.1.clone(), stalled))
        }
        assert_eq!(of(&taken, "far"), Some(("page", click("d"), false)));
        // Back on the menu, the screen just before the page: the page's button led back there.
        assert_eq!(of(&taken, "menu"), Some(("page", click("d"), false)));
        // Back home, further back: the move taken there went nowhere.
        assert_eq!(of(&taken, "home"), Some(("home", click("b"), true)));
        assert_eq!(of(&taken[..3], "home"), Some(("menu", click("c"), false)));
        assert_eq!(of(&taken[..2], "home"), Some(("home", click("b"), false)));
        assert_eq!(of(&[], "home"), None);
    }

    #[test]
    fn refs_and_boxes_name_one_element_for_every_stage() {
        let o = observation("A", FORM);
        let button = o.elements.iter().find(|e| e.text == "Sign in").unwrap();
        let shown = reference(&o, button);
        assert_eq!(element_by_ref(&o, shown), Some(button));
        // A box a little off the button still means it; a box's centre on nothing means nothing.
        let nudged = crate::events::BoundingBox {
            top_left: [10, 410],
            bottom_right: [1070, 520],
        };
        assert_eq!(snap(&o.elements, &nudged), Some(button));
        let nowhere = crate::events::BoundingBox {
            top_left: [0, 2000],
            bottom_right: [100, 2100],
        };
        assert_eq!(snap(&o.elements, &nowhere), None);
        // Without refs (another producer's observation), references are element ids.
        let mut bare = o.clone();
        bare.elements.iter_mut().for_each(|e| e.ref_id = None);
        let button = bare.elements.iter().find(|e| e.text == "Sign in").unwrap();
        assert_eq!(reference(&bare, button), button.element_id);
        assert_eq!(element_by_ref(&bare, button.element_id), Some(button));
    }
}
