//! The current screen's own untried actions and which to try first: their promise, ties broken
//! by rank, by fewer widgets alike that did nothing here, then by the seeded generator.

use std::collections::{BTreeSet, HashMap};

use rand::seq::SliceRandom;

use super::forms::OptionTry;
use super::{scroll_down, Heuristic};
use crate::decide::graph::ScreenIndex;
use crate::events::Action;
use crate::screen::{action_on, controls, shape, ActionKey, Rank, Screen, Widget, SCROLL};
use crate::ui::UiElement;

/// The promise of typing again into fields filled before when nothing else on their screen is
/// untried (an editor or a search box whose screen merged with one that held other text): less
/// than any untried widget's.
pub(super) const REFILL_PROMISE: f64 = 0.1;

/// The least promise of an untried widget that goes before filling a field with no control of
/// its own (see [`Heuristic::untried_here`]): a widget with words, a list's scroll.
pub(super) const LONE_FIELD_WAITS_FOR: f64 = 1.0;

/// A field at least 1/n of the screen's height tall is an editor (see [`is_editor`]).
pub(super) const EDITOR_SHARE: i64 = 3;

/// The best untried actions on the current screen.
pub(super) struct Local {
    pub(super) actions: Vec<Action>,
    /// See [`Graph::promise`].
    pub(super) promise: f64,
    /// The fields those actions fill.
    pub(super) fills: Vec<ActionKey>,
    /// The form's submit buttons, to try again: those actions change one of its options.
    pub(super) resubmit: Vec<ActionKey>,
    /// A field among those filled shows text of the app's own new to this screen: the screen
    /// is in a state not explored yet (see [`Heuristic::untried_here`]).
    pub(super) renewed: bool,
    /// The form option these actions click, on the form filled or as found.
    pub(super) option: Option<OptionTry>,
}

impl Local {
    /// One action, filling nothing.
    fn single(action: Action, promise: f64, option: Option<OptionTry>) -> Local {
        Local {
            actions: vec![action],
            promise,
            fills: Vec::new(),
            resubmit: Vec::new(),
            renewed: false,
            option,
        }
    }
}

impl Heuristic {
    /// The actions shown untried on this screen, which no goal elsewhere is judged by (fields
    /// this screen will not fill were marked tried when it was observed: a field left empty
    /// here must not stop a form elsewhere from being a goal).
    pub(super) fn shown_untried(&self, shown: &Screen, screen: ScreenIndex) -> BTreeSet<ActionKey> {
        shown
            .widgets()
            .iter()
            .map(|w| w.key.clone())
            .filter(|key| !self.graph.is_tried(screen, key))
            .collect()
    }

    /// The widgets but fields not tried on this screen, but for an option owed a try as
    /// found and already chosen on this form: it does nothing when clicked, and waits for the
    /// form as found.
    pub(super) fn untried_widgets<'w, 'o>(
        &self,
        shown: &'w Screen<'o>,
        screen: ScreenIndex,
    ) -> Vec<&'w Widget<'o>> {
        shown
            .widgets()
            .iter()
            .filter(|w| {
                let waits = w.element.checked && self.owes_as_found(screen, &w.key);
                !w.is_field() && !self.graph.is_tried(screen, &w.key) && !waits
            })
            .collect()
    }

    /// The best untried actions on this screen. Empty editable fields are filled first (again
    /// on a later visit that finds them empty while the form's controls, its submit button or
    /// toggles, are untried, up to [`MAX_FILLS`] times), in one batch with the next widget when
    /// that is a form control: typing into a search bar may itself lead elsewhere, and another
    /// click would land on the wrong screen.
    pub(super) fn untried_here(&mut self, shown: &Screen, screen: ScreenIndex) -> Option<Local> {
        let elements = shown.elements();
        let widgets = self.untried_widgets(shown, screen);
        let untried_control = widgets.iter().any(|w| w.control);
        let (fields, refills, _) = self.fields_to_fill(screen, shown, untried_control);
        if let Some(option) = self.option_as_found(screen, shown, &fields) {
            // The option waits while a widget of the form's that is no control (a date, a
            // reminder) promises more: it needs the form as found, which a later visit brings.
            let owed = self.graph.promise(screen, &option.key, option.rank);
            let others = widgets
                .iter()
                .filter(|w| !w.control && w.key != option.key)
                .copied()
                .collect();
            if let Some((widget, promise)) = self
                .best(screen, elements, others)
                .filter(|(_, promise)| *promise > owed)
            {
                let action = action_on(
                    elements,
                    widget.element,
                    widget.key.kind.clone(),
                    "untried on this screen",
                );
                return Some(Local::single(action, promise, None));
            }
            let why = "tried on the form filled, now on the form as found";
            let action = action_on(elements, option.element, option.key.kind.clone(), why);
            let option = Some(OptionTry::AsFound(option.key.clone()));
            return Some(Local::single(action, Rank::Toggle.promise(), option));
        }
        let candidates = match fields.is_empty() || !untried_control {
            true => widgets,
            false => widgets.into_iter().filter(|w| w.control).collect(),
        };
        let next = self.best(screen, elements, candidates);
        // A field with no control of its own to submit it (a search bar, an "add" box) waits
        // for the screen's widgets with words: typing shows the screen in another state, and
        // what they do in the state as found is what a user meets first. An editor (a note, a
        // message: typing is what the screen is for) is filled first.
        let lone_field = !fields.is_empty()
            && !untried_control
            && !fields.iter().any(|(field, _)| is_editor(shown, field));
        if lone_field {
            if let Some((widget, promise)) = next.filter(|(_, p)| *p >= LONE_FIELD_WAITS_FOR) {
                let why = "untried on this screen, before typing changes it";
                let action = action_on(elements, widget.element, widget.key.kind.clone(), why);
                return Some(Local::single(action, promise, None));
            }
        }
        // A list's hidden rows come before leaving the screen (a dismissive or risky widget).
        let scroll = self.graph.offers(screen, &SCROLL) && !self.graph.is_tried(screen, &SCROLL);
        let scroll_promise = self.graph.promise(screen, &SCROLL, Rank::ScreenScroll);
        if fields.is_empty() && scroll && next.is_none_or(|(_, p)| p < scroll_promise) {
            let action = scroll_down("rows further down this list");
            return Some(Local::single(action, scroll_promise, None));
        }
        if fields.is_empty() && next.is_none() && !refills.is_empty() {
            return Some(Local {
                actions: refills.iter().map(|(field, _)| self.fill(field)).collect(),
                promise: REFILL_PROMISE,
                fills: refills.into_iter().map(|(_, key)| key).collect(),
                resubmit: Vec::new(),
                renewed: false,
                option: None,
            });
        }
        let promise = match fields.is_empty() {
            true => next.map(|(_, promise)| promise)?,
            false => Rank::Text.promise(),
        };
        let mut actions: Vec<Action> = fields.iter().map(|(field, _)| self.fill(field)).collect();
        let mut resubmit = Vec::new();
        let mut option = None;
        match next {
            Some((widget, _)) if actions.is_empty() || widget.control => {
                let why = "untried on this screen";
                actions.push(action_on(
                    elements,
                    widget.element,
                    widget.key.kind.clone(),
                    why,
                ));
                // A changed option makes the form's submit worth trying again.
                if widget.element.checkable && widget.control {
                    resubmit = shown.submits();
                    if !fields.is_empty() {
                        option = Some(OptionTry::Filled(widget.key.clone()));
                    }
                }
            }
            _ => {}
        }
        let renewed = &self.renewed;
        Some(Local {
            actions,
            promise,
            renewed: fields.iter().any(|(f, _)| renewed.contains(&f.element_id)),
            fills: fields.into_iter().map(|(_, key)| key).collect(),
            resubmit,
            option,
        })
    }

    /// The widget to try next and its promise: the most promising (see [`Graph::promise`]; risky
    /// ones promise least but for dismissive ones and a checked radio button), ties broken by
    /// rank, then by fewer widgets alike that did nothing here, then by the seeded generator.
    pub(super) fn best<'w, 'o>(
        &mut self,
        screen: ScreenIndex,
        elements: &[UiElement],
        widgets: Vec<&'w Widget<'o>>,
    ) -> Option<(&'w Widget<'o>, f64)> {
        let scored: Vec<(&Widget, f64)> = widgets
            .into_iter()
            .map(|w| (w, self.graph.promise(screen, &w.key, w.rank)))
            .collect();
        let order = |a: &(&Widget, f64), b: &(&Widget, f64)| {
            b.1.total_cmp(&a.1).then(a.0.rank.cmp(&b.0.rank))
        };
        let best = *scored.iter().min_by(|a, b| order(a, b))?;
        let tied = scored.iter().filter(|s| order(s, &best).is_eq());
        // Among equals, a widget unlike two or more that did nothing here goes first: colour
        // rows that did nothing say the next will not either, not what the theme row does.
        let dead = self.dead_by_shape(screen, elements);
        let dead_alike = |w: &Widget| {
            dead.get(&shape(elements, w.element))
                .map_or(1, |&n| n.max(1))
        };
        let fewest = tied.clone().map(|s| dead_alike(s.0)).min()?;
        let mut tied: Vec<(&Widget, f64)> = tied
            .filter(|s| dead_alike(s.0) == fewest)
            .copied()
            .collect();
        tied.shuffle(&mut self.rng);
        tied.first().copied()
    }

    /// How many widgets here of each [`shape`] were tried and led nowhere.
    pub(super) fn dead_by_shape(
        &self,
        screen: ScreenIndex,
        elements: &[UiElement],
    ) -> HashMap<String, usize> {
        let mut dead = HashMap::new();
        for element in controls(elements) {
            if self.graph.led_nowhere(screen, &ActionKey::of(element)) {
                *dead.entry(shape(elements, element)).or_default() += 1;
            }
        }
        dead
    }
}

/// Whether a field is an editor, the screen's content itself (a note's text, a message): at
/// least 1/[`EDITOR_SHARE`] of the screen's height tall. Unknown size: no editor.
fn is_editor(shown: &Screen, field: &UiElement) -> bool {
    let observation = shown.observation();
    let size = observation
        .screen_size
        .or_else(|| crate::capture::screen_size(&observation.elements, None));
    size.is_some_and(|[_, height]| {
        height > 0 && i64::from(field.bounds.height()) * EDITOR_SHARE >= i64::from(height)
    })
}
