//! What an untried action promises: its rank's promise scaled by what the graph learned (its
//! screen's productivity, what widgets of its kind and its sibling screens' widgets did).

use std::collections::BTreeSet;

use super::{Graph, LedAway, ScreenIndex};
use crate::events::ActionType;
use crate::screen::{is_radio, list_of, parent_of, shape, ActionKey, Rank, Screen, Widget};

/// What an action is, for actions that behave alike: a gesture on a scrollable container, by
/// the activity, the element's class and resource id and whether it is the container's main
/// gesture, across screens (a container's signature holds the words of every row, so it
/// changes from screen to screen; the kind does not, and what the same list's gestures did on
/// one screen says what they will do on the next: a pager that does not turn, a list that does
/// not swipe); a tap on an item of a list (a row, a tab, a word of a list of results), by its
/// list's class and resource id, its shape (see [`shape`]) and whether it is the list's first
/// item (see [`Item`]), on its screen (the rows of one list behave alike, rows that only tick
/// themselves done; another page's rows of the same class may not); a radio button outside a
/// form, by its group (its parent) on its screen, whatever its own id (the choices of a sort
/// order or a date format do alike: change the setting, and often nothing else; see
/// `Kind::is_choice`). Toggles are left out: what they change is a state of the screen,
/// not another one; so are widgets that are not items of a list (a menu's rows are, a
/// toolbar's buttons are not).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind {
    activity: String,
    rank: Rank,
    class: String,
    resource_id: String,
    list: Option<Item>,
    /// The choices of a radio group.
    choice: bool,
}

/// What places an item in its list, for its [`Kind`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Item {
    /// Its screen, for a list without a resource id (known on its screen only).
    screen: Option<ScreenIndex>,
    list_class: String,
    list_id: String,
    /// See [`shape`].
    shape: String,
    /// The list's first item: often unlike the rest (a header, the folder shown, an "add" or
    /// "all" row), so what it does says little of the other rows, and theirs little of it.
    first: bool,
}

impl Kind {
    pub(super) fn of(screen: ScreenIndex, shown: &Screen, widget: &Widget) -> Option<Kind> {
        let (elements, element) = (shown.elements(), widget.element);
        let radio = widget.rank == Rank::Text && is_radio(element);
        let list = match widget.rank {
            Rank::ListScroll | Rank::Gesture => None,
            // The choices of one group (a sort order, a date format), whatever their ids.
            Rank::Text if radio => {
                let group = parent_of(elements, element);
                Some(Item {
                    screen: Some(screen),
                    list_class: group.map(|g| g.class_name.clone()).unwrap_or_default(),
                    list_id: group.map(|g| g.resource_id.clone()).unwrap_or_default(),
                    shape: shape(elements, element),
                    first: false,
                })
            }
            Rank::Item | Rank::Text | Rank::Anonymous => {
                let list = list_of(elements, element)?;
                // A list known by its resource id is the same list on every page of the
                // activity; one without is only known on its screen.
                Some(Item {
                    screen: list.resource_id.is_empty().then_some(screen),
                    list_class: list.class_name.clone(),
                    list_id: list.resource_id.clone(),
                    shape: shape(elements, element),
                    first: !elements
                        .iter()
                        .any(|e| e.parent == element.parent && e.element_id < element.element_id),
                })
            }
            _ => return None,
        };
        let observation = shown.observation();
        Some(Kind {
            activity: observation
                .activity
                .clone()
                .or_else(|| observation.package.clone())
                .unwrap_or_default(),
            rank: widget.rank,
            class: element.class_name.clone(),
            resource_id: match radio {
                true => String::new(),
                false => element.resource_id.clone(),
            },
            list,
            choice: radio,
        })
    }

    /// Whether actions of this kind are a radio group's choices: such a try leads on when it
    /// shows a state first seen, not whenever it leads away (see [`KindRecord`]). A choice that
    /// closes its dialog leads away to the screen the dialog was opened on, and the next choice
    /// shows that same screen again (a compression quality, a theme); choices that each show a
    /// new state (a sort dialog whose order shows in it) keep their promise.
    pub(super) fn is_choice(&self) -> bool {
        self.choice
    }
}

/// First outcomes of actions of one [`Kind`] (or of one widget across screens): how many, and
/// how many led on: away from their screen (a radio group's choices: to a state first seen,
/// see [`Kind::is_choice`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct KindRecord {
    pub(super) tried: u32,
    pub(super) led_on: u32,
}

impl KindRecord {
    /// Counts one more first outcome.
    pub(super) fn note(&mut self, led_on: bool) {
        self.tried += 1;
        self.led_on += u32::from(led_on);
    }

    /// How much of its rank's promise an action of this kind keeps, by Laplace's rule over
    /// those tried ((led on + 1) / (tried + 1)): all of it before any try or while every try
    /// led on, half after one try that left its screen as it was, a quarter after three (words
    /// of a list of results that only select themselves).
    fn scale(self) -> f64 {
        f64::from(self.led_on + 1) / f64::from(self.tried + 1)
    }
}

/// The productivity of a screen with no outcome yet: [`Node::productivity`] before any try.
pub const UNSEEN_PRODUCTIVITY: f64 = 0.5;

/// What a widget did on a screen's siblings, from the first `seen` of its moves.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SiblingEvidence {
    seen: usize,
    moves: usize,
    target: Option<ScreenIndex>,
    /// Targets differ.
    varies: bool,
    /// A target is the screen itself or one of its siblings.
    among_siblings: bool,
    /// A target is the screen itself.
    led_here: bool,
    /// A move showed another page rather than its screen in another state (see
    /// [`Graph::changed_state`]).
    another_page: bool,
}

/// An untried widget that led away from a sibling screen (one sharing most of its actions: a
/// tab bar, a toolbar, an overflow menu) usually leads where it led from the sibling: its promise
/// is scaled by how sure that is. Sure when it led to this screen or one of its siblings (a tab
/// bar) or to one screen from two siblings or more. (One that did nothing on a sibling may just
/// have been disabled there.) A switch is not: one that only ever showed its sibling in another
/// state shows this screen in another state too (see [`Graph::sibling_scale`]).
pub(super) const SIBLING_TRIED: f64 = 0.125;

/// What an action on a widget selected on the screen before promises: tapping the tab or mode
/// the selection moved away from shows the screen it moved from (see [`Graph::note_returns`]).
pub(super) const RETURNS: f64 = SIBLING_TRIED;

/// Widgets a screen may gain when typed into and still be the same screen in another state
/// (see [`Graph::is_state_of`]).
pub(super) const STATE_EXTRA: usize = 2;

/// Led elsewhere from one sibling only: an overflow menu often lists other items on another
/// page of the same activity (notes' checklist menu against its text note menu).
pub(super) const SIBLING_ONCE: f64 = 0.35;

/// Led to different screens from different siblings: it depends on the page it is on.
pub(super) const SIBLING_VARIES: f64 = 0.5;

/// How much less a guest screen's untried actions are worth than the app's own, but for its
/// form (see [`Graph::guest_scale`]).
pub(super) const GUEST: f64 = 0.3;

/// Actions two sibling screens share at least.
pub(super) const SIBLING_SHARED: usize = 3;

impl Graph {
    /// How likely trying `key` (ranked `rank` by its looks) on `screen` is to show a new screen,
    /// before the screen's productivity: the rank's promise, scaled down when the key led away
    /// from a sibling screen (see [`SIBLING_TRIED`]) and on a guest screen. A form's submit is
    /// not judged by its siblings: one dialog layout serves several forms (rename a note, create
    /// one), and its "OK" does what the form asks. In a pass after the first, an action opened
    /// again promises what [`Graph::retry_changes`] gave it.
    pub fn promise(&self, screen: ScreenIndex, key: &ActionKey, rank: Rank) -> f64 {
        let node = self.screens.get(screen);
        // A pass after the first weighs what it opened again by what it is for, not by looks.
        if let Some(&again) = node.and_then(|s| s.again.get(key)) {
            return again;
        }
        let sibling = match rank {
            Rank::SubmitButton => 1.0,
            _ if node.is_some_and(|s| s.returns.contains(key)) => RETURNS,
            _ => self.sibling_scale(screen, key),
        };
        // What actions of its kind did, looked up once for both uses.
        let kind = node
            .and_then(|s| s.kinds.get(key))
            .and_then(|kind| self.by_kind.get(kind));
        self.learned_promise(screen, key, rank, kind)
            * sibling
            * self.guest_scale(screen, key, rank)
            * self.kind_scale(key, kind)
    }

    /// The rank's promise, or for an action of a [`Kind`] tried before, the share of those
    /// tries that led on when that is more: a gesture promises little by its looks, but a
    /// list whose rows swipe open an editor shows it will on its next page too.
    pub(super) fn learned_promise(
        &self,
        screen: ScreenIndex,
        key: &ActionKey,
        rank: Rank,
        kind: Option<&KindRecord>,
    ) -> f64 {
        let record = kind.filter(|record| record.tried > 0);
        let looks = match rank == Rank::Gesture && self.main_gesture_stalled(screen, key) {
            true => Rank::Item.promise(),
            false => rank.promise(),
        };
        match record {
            Some(record) => looks.max(f64::from(record.led_on) / f64::from(record.tried)),
            None => looks,
        }
    }

    /// Whether the main gesture (its scroll or its swipe) of the container `key` is another
    /// gesture of never left `screen`: a list too short to scroll may still swipe its rows, a
    /// pager on its first page turns the other way.
    pub(super) fn main_gesture_stalled(&self, screen: ScreenIndex, key: &ActionKey) -> bool {
        let (Some(node), Some(widget)) = (self.screens.get(screen), key.widget.as_ref()) else {
            return false;
        };
        [ActionType::ScrollDown, ActionType::SwipeLeft]
            .into_iter()
            .filter(|kind| *kind != key.kind)
            .map(|kind| ActionKey::on(kind, widget.clone()))
            .any(|main| {
                node.edges
                    .get(&main)
                    .is_some_and(|targets| targets.keys().all(|to| *to == screen))
            })
    }

    /// What actions of the same [`Kind`] did, here and on other screens (1 for an action of no
    /// kind), and what the same widget did on other screens (a row that only ticks itself done
    /// does so on every page that shows it).
    pub(super) fn kind_scale(&self, key: &ActionKey, kind: Option<&KindRecord>) -> f64 {
        let kind = kind.map_or(1.0, |record| record.scale());
        let widget = self.by_widget.get(key).map_or(1.0, |record| record.scale());
        kind.min(widget)
    }

    /// A guest screen's own widgets lead around the other app; its form (a save dialog's file
    /// name and button) is what the app asked for, and its submit hands control back.
    pub(super) fn guest_scale(&self, screen: ScreenIndex, key: &ActionKey, rank: Rank) -> f64 {
        let guest = self.screens.get(screen).is_some_and(|s| s.guest);
        let form = || rank == Rank::SubmitButton || key.is_input();
        match guest && !form() {
            true => GUEST,
            false => 1.0,
        }
    }

    pub(super) fn sibling_scale(&self, screen: ScreenIndex, key: &ActionKey) -> f64 {
        let Some(LedAway { moves, evidence }) = self.led_away_on.get(key) else {
            return 1.0;
        };
        let mut by_screen = evidence.borrow_mut();
        let evidence = by_screen.entry(screen).or_default();
        for &(other, to) in &moves[evidence.seen..] {
            if other == screen || !self.siblings(screen, other) {
                continue;
            }
            evidence.moves += 1;
            evidence.varies |= evidence.target.is_some_and(|target| target != to);
            evidence.target.get_or_insert(to);
            evidence.among_siblings |= to == screen || self.siblings(screen, to);
            evidence.led_here |= to == screen;
            evidence.another_page |= !self.changed_state(other, to, key);
        }
        evidence.seen = moves.len();
        match *evidence {
            SiblingEvidence { moves: 0, .. } => 1.0,
            // A switch (front or back camera, grid or list) shows its screen in another state:
            // on this screen, a state of this one, not the sibling's. (A choice of a list or a
            // group, or a toggle, sets what it sets whatever the state.)
            SiblingEvidence {
                another_page: false,
                led_here: false,
                ..
            } if self.is_switch(screen, key) => 1.0,
            SiblingEvidence {
                among_siblings: true,
                ..
            } => SIBLING_TRIED,
            SiblingEvidence { moves: 1, .. } => SIBLING_ONCE,
            SiblingEvidence { varies: false, .. } => SIBLING_TRIED,
            _ => SIBLING_VARIES,
        }
    }

    /// Whether `key` on `screen` is a widget on its own: no item of a list or a group (see
    /// [`Kind`]), no toggle.
    fn is_switch(&self, screen: ScreenIndex, key: &ActionKey) -> bool {
        self.screens.get(screen).is_some_and(|node| {
            !node.kinds.contains_key(key)
                && node
                    .actions
                    .get(key)
                    .is_some_and(|rank| !matches!(rank, Rank::Toggle | Rank::Chosen))
        })
    }

    /// Whether `key` tapped on `from` showed `from` in another state rather than another page:
    /// the same actions, give or take [`STATE_EXTRA`], and the tapped widget not shown selected
    /// (a tab selects itself on the page it opens).
    fn changed_state(&self, from: ScreenIndex, to: ScreenIndex, key: &ActionKey) -> bool {
        let selected = key.widget.as_ref().is_some_and(|w| {
            self.screens
                .get(to)
                .is_some_and(|screen| screen.selected.contains(w))
        });
        !selected && (self.is_state_of(to, from) || self.is_state_of(from, to))
    }

    /// Remembers, on `to` just reached from `from` for the first time, the actions on widgets
    /// that `from` showed selected and `to` shows not selected, when `to` shows selected
    /// something `from` did not: the selection moved to what was tapped (a tab, a camera's
    /// mode), and the one selected before leads back. (A selection that only went away, a
    /// scrolling title's, says nothing of where its widget leads.)
    pub(super) fn note_returns(&mut self, from: ScreenIndex, to: ScreenIndex) {
        let Some(before) = self.screens.get(from).map(|s| s.selected.clone()) else {
            return;
        };
        let Some(node) = self.screens.get_mut(to) else {
            return;
        };
        if node.selected.is_subset(&before) {
            return;
        }
        let returns: BTreeSet<ActionKey> = node
            .actions
            .keys()
            .filter(|key| {
                key.is_click()
                    && key
                        .widget
                        .as_ref()
                        .is_some_and(|w| before.contains(w) && !node.selected.contains(w))
            })
            .cloned()
            .collect();
        node.returns = returns;
    }

    /// `state` is `screen` in another state: every action of `screen` and at most
    /// [`STATE_EXTRA`] more (notes' editor once text is typed: the same toolbar, an undo
    /// button more).
    pub(super) fn is_state_of(&self, state: ScreenIndex, screen: ScreenIndex) -> bool {
        let (Some(state), Some(screen)) = (self.screens.get(state), self.screens.get(screen))
        else {
            return false;
        };
        state.actions.len() <= screen.actions.len() + STATE_EXTRA
            && screen
                .actions
                .keys()
                .all(|key| state.actions.contains_key(key))
    }

    /// Two screens sharing at least half of the smaller one's actions, and at least
    /// [`SIBLING_SHARED`] (two dialogs share just "OK" and "Cancel").
    pub(super) fn siblings(&self, a: ScreenIndex, b: ScreenIndex) -> bool {
        let pair = (a.min(b), a.max(b));
        if let Some(&known) = self.sibling_cache.borrow().get(&pair) {
            return known;
        }
        let answer = self.share_most_actions(a, b);
        self.sibling_cache.borrow_mut().insert(pair, answer);
        answer
    }

    pub(super) fn share_most_actions(&self, a: ScreenIndex, b: ScreenIndex) -> bool {
        let (Some(a), Some(b)) = (self.screens.get(a), self.screens.get(b)) else {
            return false;
        };
        let (small, large) = match a.actions.len() <= b.actions.len() {
            true => (&a.actions, &b.actions),
            false => (&b.actions, &a.actions),
        };
        let shared = small.keys().filter(|k| large.contains_key(*k)).count();
        shared >= SIBLING_SHARED && 2 * shared >= small.len()
    }

    /// The best untried action on a screen and its promise (ties broken by rank), but for
    /// those in `skip`.
    pub(super) fn best_untried(
        &self,
        id: ScreenIndex,
        skip: &BTreeSet<ActionKey>,
    ) -> Option<(ActionKey, f64)> {
        let screen = self.screens.get(id)?;
        let mut best: Option<(&ActionKey, f64, Rank)> = None;
        for (key, &rank) in &screen.untried {
            if skip.contains(key) {
                continue;
            }
            let promise = self.promise(id, key, rank);
            // The first of equals stays.
            let better = best.is_none_or(|(_, best_promise, best_rank)| {
                promise > best_promise || (promise == best_promise && rank < best_rank)
            });
            if better {
                best = Some((key, promise, rank));
            }
        }
        best.map(|(key, promise, _)| (key.clone(), promise))
    }

    /// The untried actions on a screen, with their [`Graph::promise`] and rank.
    pub fn untried(&self, id: ScreenIndex) -> Vec<(ActionKey, f64, Rank)> {
        let Some(screen) = self.screens.get(id) else {
            return Vec::new();
        };
        screen
            .untried
            .iter()
            .map(|(key, &rank)| (key.clone(), self.promise(id, key, rank), rank))
            .collect()
    }

    /// What trying an action with `promise` on `screen` is worth, with no steps to reach it.
    pub fn value_here(&self, screen: ScreenIndex, promise: f64) -> f64 {
        self.screens
            .get(screen)
            .map_or(0.0, |s| promise * s.productivity())
    }
}
