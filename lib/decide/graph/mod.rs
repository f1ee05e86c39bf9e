//! The exploration graph a decider keeps in memory: screens (by [`ScreenKey`], the one identity
//! rule droid has, each key split into the states what actions did told apart, see
//! [`refine`]), the actions each offers (by [`ActionKey`]), which were tried, and the edges
//! learned from what followed an action.

mod promise;
mod refine;
mod route;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use crate::screen::{ActionKey, Details, Rank, Screen, ScreenKey, SCROLL};
use crate::ui::Bounds;

pub use promise::{Kind, UNSEEN_PRODUCTIVITY};
use promise::{KindRecord, SiblingEvidence};
pub use route::{Move, Plan, MOVE_COST};

/// The promise, in a pass after the first, of an action that changes the app's state (see
/// [`Graph::retry_changes`]): a text-bearing widget's, so the pass weighs screens as the first did.
pub const AGAIN_CHANGES: f64 = 1.0;

/// Index of a screen in the graph.
pub type ScreenIndex = usize;

#[derive(Debug, Clone)]
struct Node {
    key: ScreenKey,
    /// The activity it was shown in, when the device said.
    activity: Option<String>,
    /// What the state showed when it was told apart from the key's others (its first visit's
    /// for a key not split): its values of the key's slots say which state an observation is.
    details: Rc<Details>,
    /// What the screen showed when each action's first outcome was seen: where a later outcome
    /// that differs looks for why (see [`refine`]).
    witnessed: BTreeMap<ActionKey, Rc<Details>>,
    /// Merged into another state of its key (see [`refine`]): no actions, no edges, no goal.
    merged: bool,
    /// Every action seen on this screen, with its rank.
    actions: BTreeMap<ActionKey, Rank>,
    /// Where each action's widget was last seen, to walk a known path without observing.
    places: BTreeMap<ActionKey, Place>,
    /// The [`Kind`] of each action whose promise is learned from actions alike.
    kinds: BTreeMap<ActionKey, Kind>,
    /// The form's controls (its submits and options, see [`crate::screen::Widget::control`]).
    controls: BTreeSet<ActionKey>,
    tried: BTreeSet<ActionKey>,
    /// The tried actions in the order they were first tried (since the pass began, see
    /// [`Graph::retry_changes`]).
    tried_order: Vec<ActionKey>,
    /// Actions a new pass opened again, with their promise in it (see
    /// [`Graph::retry_changes`]).
    again: BTreeMap<ActionKey, f64>,
    /// The toggles and options a new pass opened first (see [`Graph::retry_changes`]).
    changes: BTreeSet<ActionKey>,
    /// The actions not tried: `actions` but `tried`, kept so that a search over many explored
    /// screens does not look through each one's actions.
    untried: BTreeMap<ActionKey, Rank>,
    /// Learned edges: action → target screen → times seen.
    edges: BTreeMap<ActionKey, BTreeMap<ScreenIndex, u32>>,
    visits: u32,
    /// A screen of another app: never a goal of exploration.
    outside: bool,
    /// A screen of another app the exploration may enter (a share sheet, a file picker): passed
    /// through, explored only when the app itself offers less.
    guest: bool,
    /// The screen this one was first reached from: where an untried back is expected to lead.
    parent: Option<ScreenIndex>,
    /// The signatures of the elements shown selected on its latest visit (a tab, a mode).
    selected: BTreeSet<String>,
    /// Actions on widgets that were the selected ones on the screen this one was first reached
    /// from and are not selected here: the selection moved to what was tapped (a tab, a camera
    /// mode), and tapping the one selected before goes back (see [`promise::RETURNS`]).
    returns: BTreeSet<ActionKey>,
    /// Actions tried here whose outcome was seen, and how many of those showed a new screen.
    outcomes: u32,
    discoveries: u32,
    /// Tried actions whose latest outcome left the screen as it was: no route until the app
    /// restarts (one that led away before may be dead in this state of the app: a settings page
    /// after a toggle, a note list after a delete).
    stalled: BTreeSet<ActionKey>,
    /// Stalled actions a restart made routes again, until they lead away; one that stalls
    /// once more is dead: the app's first state does not bring it back either.
    revived: BTreeSet<ActionKey>,
    /// No routes until nothing else is left (see [`Graph::revive_dead`]).
    dead: BTreeSet<ActionKey>,
}

impl Node {
    fn new(key: ScreenKey, details: Rc<Details>) -> Node {
        Node {
            key,
            activity: None,
            details,
            witnessed: BTreeMap::new(),
            merged: false,
            actions: BTreeMap::new(),
            places: BTreeMap::new(),
            kinds: BTreeMap::new(),
            controls: BTreeSet::new(),
            tried: BTreeSet::new(),
            tried_order: Vec::new(),
            again: BTreeMap::new(),
            changes: BTreeSet::new(),
            untried: BTreeMap::new(),
            edges: BTreeMap::new(),
            visits: 0,
            outside: false,
            guest: false,
            parent: None,
            selected: BTreeSet::new(),
            returns: BTreeSet::new(),
            outcomes: 0,
            discoveries: 0,
            stalled: BTreeSet::new(),
            revived: BTreeSet::new(),
            dead: BTreeSet::new(),
        }
    }

    /// An action seen on this screen (its first rank stays).
    fn add_action(&mut self, key: &ActionKey, rank: Rank) {
        if !self.actions.contains_key(key) {
            self.actions.insert(key.clone(), rank);
            if !self.tried.contains(key) {
                self.untried.insert(key.clone(), rank);
            }
        }
    }

    /// One of the app's own states, not merged into another.
    fn own(&self) -> bool {
        !self.outside && !self.guest && !self.merged
    }

    /// A tried action opened again by a new pass, with its promise in it.
    fn reopen(&mut self, key: &ActionKey, promise: f64) {
        if let Some(&rank) = self.actions.get(key) {
            self.tried.remove(key);
            self.untried.insert(key.clone(), rank);
            self.again.insert(key.clone(), promise);
        }
    }

    fn set_tried(&mut self, key: &ActionKey) {
        // An action tried again (a form's submit retried, an option owed a try as found) takes
        // its latest place in the order: each is opened once by the next pass.
        if self.tried.insert(key.clone()) {
            self.tried_order.retain(|tried| tried != key);
            self.tried_order.push(key.clone());
        }
        self.again.remove(key);
        self.untried.remove(key);
    }

    /// How likely an untried action here is to show a new screen, from what the tried ones
    /// showed (Laplace's rule: a half for a screen with no outcome yet).
    fn productivity(&self) -> f64 {
        f64::from(self.discoveries + 1) / f64::from(self.outcomes + 2)
    }
}

/// What the graph knows of the app and what is left (see [`Graph::tally`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub states: usize,
    pub actions: usize,
    pub states_left: usize,
    pub actions_left: usize,
    /// Of `actions_left`, those a pass after the first opened again (see
    /// [`Graph::retry_changes`]): tried once already.
    pub again_left: usize,
}

impl Tally {
    /// Actions left that no pass has tried yet.
    pub fn never_tried(&self) -> usize {
        self.actions_left - self.again_left
    }
}

/// The fewest characters a label, or a model's copy of one, has to have to be found inside
/// the other (see [`Graph::untried_labelled`]): "A" is in too many words.
pub const NEAR_LABEL: usize = 3;

/// Where a widget was last seen on its screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub bounds: Bounds,
    /// Its label on its screen.
    pub label: String,
}

/// Screens, actions and edges of one exploration.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    screens: Vec<Node>,
    /// Each key's states.
    by_key: HashMap<ScreenKey, refine::States>,
    /// The screen observed last and what it showed, and the one before it: where the outcome
    /// being recorded was taken from (see [`Graph::record_edge`]).
    shown: Option<(ScreenIndex, Rc<Details>)>,
    before: Option<(ScreenIndex, Rc<Details>)>,
    /// The screen the app shows when (re)launched.
    launch: Option<ScreenIndex>,
    /// The screen the last outcome showed and the one a move other than back left for it:
    /// where back from it returns (see [`Graph::plan`]). Moves that leave the screen where it
    /// is, or show it in another state of its key, keep it.
    reached_by: Option<(ScreenIndex, ScreenIndex)>,
    /// Screens of another activity than the screen they were opened from, by whether their
    /// back was seen showing that screen again (it finished the activity) or another one (the
    /// app's own back): see [`Graph::back_returns`].
    back_finishes: HashMap<ScreenIndex, bool>,
    /// Per widget's action key, where it led away.
    led_away_on: HashMap<ActionKey, LedAway>,
    /// [`Graph::siblings`] answers, until one of the pair gains an action.
    sibling_cache: RefCell<HashMap<(ScreenIndex, ScreenIndex), bool>>,
    /// What actions of each [`Kind`] showed, over every screen.
    by_kind: HashMap<Kind, KindRecord>,
    /// What each widget's action did, over every screen it was tried on.
    by_widget: HashMap<ActionKey, KindRecord>,
}

/// Where one widget led away, and what that says on each screen.
#[derive(Debug, Clone, Default)]
struct LedAway {
    /// The screens it was tried on where it showed another screen, and that one.
    moves: Vec<(ScreenIndex, ScreenIndex)>,
    /// Per screen, what the moves on its siblings showed so far (brought up to date as moves
    /// are added: a tab bar's moves grow with the screens), until a known screen gains an
    /// action.
    evidence: RefCell<HashMap<ScreenIndex, SiblingEvidence>>,
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    pub fn screen_count(&self) -> usize {
        self.screens.len()
    }

    /// The screen an observation shows, added when new (the state of its key the observation
    /// is in, see [`refine`]); its actions are merged in and its visit counted.
    pub fn observe(&mut self, shown: &Screen) -> ScreenIndex {
        let details = Rc::new(shown.details());
        let id = self.state_of(shown.key(), &details, None);
        self.before = self.shown.replace((id, details));
        let screen = &mut self.screens[id];
        screen.visits += 1;
        if screen.activity.is_none() {
            screen.activity = shown.observation().activity.clone();
        }
        screen.selected = shown
            .elements()
            .iter()
            .filter(|e| e.selected)
            .map(crate::screen::signature)
            .collect();
        let known = screen.actions.len();
        for widget in shown.widgets() {
            screen.add_action(&widget.key, widget.rank);
            let place = Place {
                bounds: widget.element.bounds,
                label: widget.label.to_string(),
            };
            screen.places.insert(widget.key.clone(), place);
            if widget.control {
                screen.controls.insert(widget.key.clone());
            }
            if let Some(kind) = Kind::of(id, shown, widget) {
                screen.kinds.insert(widget.key.clone(), kind);
            }
        }
        if shown.offers_screen_scroll() {
            screen.add_action(&SCROLL, Rank::ScreenScroll);
        }
        if screen.actions.len() != known {
            self.sibling_cache
                .get_mut()
                .retain(|&(a, b), _| a != id && b != id);
            // A new screen is in no evidence yet (its moves come after it is observed).
            if known > 0 {
                for led_away in self.led_away_on.values_mut() {
                    led_away.evidence.get_mut().clear();
                }
            }
        }
        id
    }

    /// How much of the app the graph knows and how much of it is left: its states (screens
    /// of the app, another app's excluded) and their actions, and of those the states with
    /// actions not tried and those actions.
    pub fn tally(&self) -> Tally {
        let own = self.screens.iter().filter(|s| !s.outside && !s.merged);
        let mut tally = Tally::default();
        for screen in own {
            tally.states += 1;
            tally.actions += screen.actions.len();
            if !screen.untried.is_empty() {
                tally.states_left += 1;
                tally.actions_left += screen.untried.len();
                tally.again_left += screen
                    .untried
                    .keys()
                    .filter(|key| screen.again.contains_key(*key))
                    .count();
            }
        }
        tally
    }

    /// The app's own states holding actions not tried, each with where its untried actions'
    /// widgets were last seen (read-only: what a model is told of what is left).
    pub fn untried_states(&self) -> Vec<(ScreenIndex, Vec<&Place>)> {
        self.screens
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.outside && !s.untried.is_empty())
            .map(|(index, s)| {
                let places = s.untried.keys().filter_map(|k| s.places.get(k)).collect();
                (index, places)
            })
            .collect()
    }

    /// The untried action on `screen` whose widget was last seen labelled `label` (as a model
    /// copies it: case and spacing aside, a cut label's `…` too, else the only label holding it
    /// or held by it, of [`NEAR_LABEL`] characters or more): its click when that is untried.
    pub fn untried_labelled(&self, screen: ScreenIndex, label: &str) -> Option<ActionKey> {
        let node = self.screens.get(screen)?;
        let plain = |text: &str| {
            text.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        };
        // A prompt cuts a long label (see `ui::tree::quote`): its copy is the label's start.
        let wanted = plain(label.trim_end_matches('…'));
        if wanted.is_empty() {
            return None;
        }
        let labelled: Vec<(&ActionKey, String)> = node
            .untried
            .keys()
            .filter_map(|key| Some((key, plain(&node.places.get(key)?.label))))
            .filter(|(_, label)| !label.is_empty())
            .collect();
        let exact: Vec<&ActionKey> = labelled
            .iter()
            .filter(|(_, label)| *label == wanted)
            .map(|(key, _)| *key)
            .collect();
        let near: Vec<(&ActionKey, &String)> = labelled
            .iter()
            .filter(|(_, label)| {
                let long = |text: &str| text.chars().count() >= NEAR_LABEL;
                (long(&wanted) && label.contains(&wanted))
                    || (long(label) && wanted.contains(label.as_str()))
            })
            .map(|(key, label)| (*key, label))
            .collect();
        let one_label = near.windows(2).all(|pair| pair[0].1 == pair[1].1);
        let found = match (exact.is_empty(), one_label) {
            (false, _) => exact,
            (true, true) => near.into_iter().map(|(key, _)| key).collect(),
            (true, false) => Vec::new(),
        };
        found.into_iter().min_by_key(|key| !key.is_click()).cloned()
    }

    /// The identity of a screen of the graph (the key all its states share).
    pub fn key(&self, screen: ScreenIndex) -> Option<&ScreenKey> {
        self.screens.get(screen).map(|s| &s.key)
    }

    /// The first state of the graph with this identity.
    pub fn find(&self, key: &ScreenKey) -> Option<ScreenIndex> {
        self.by_key.get(key).and_then(refine::States::first)
    }

    /// The screen the app shows when launched: the goal of [`Move::Relaunch`].
    pub fn set_launch(&mut self, screen: ScreenIndex) {
        if screen < self.screens.len() {
            self.launch = Some(screen);
        }
    }

    /// The app was restarted: its state is fresh, so actions that stalled may lead away again
    /// (but for dead ones, see [`Node::revived`]).
    pub fn app_restarted(&mut self) {
        self.reached_by = None;
        for screen in &mut self.screens {
            let stalled = std::mem::take(&mut screen.stalled);
            screen.revived.extend(stalled);
        }
    }

    /// Gives dead routes (see [`Node::revived`]) another chance, for when nothing else is
    /// left: a screen merged with another state of itself may have killed a route that leads
    /// on from the first.
    pub fn revive_dead(&mut self) {
        for screen in &mut self.screens {
            screen.dead.clear();
            screen.revived.clear();
        }
    }

    /// Begins another pass over what was found: what an action shows may depend on a state of
    /// the app its screen does not show (a setting changed elsewhere, an option chosen in a
    /// dialog), so a pass that found something may have left states where tried actions lead
    /// on. The pass first changes the app's state: this opens the toggles and checked options
    /// (by their rank) of the app's own states again, each promising [`AGAIN_CHANGES`]; once
    /// they are tried, [`Graph::retry_rest`] opens the rest, to be tried in the state they
    /// left. Learned edges stay: they are the map the pass walks by. Returns how many actions
    /// it opened.
    pub fn retry_changes(&mut self) -> usize {
        let mut opened = 0;
        for screen in self.screens.iter_mut().filter(|s| s.own()) {
            let changes: Vec<ActionKey> = screen
                .tried
                .iter()
                .filter(|key| matches!(screen.actions.get(*key), Some(Rank::Toggle | Rank::Chosen)))
                .cloned()
                .collect();
            for key in changes {
                screen.reopen(&key, AGAIN_CHANGES);
                screen.changes.insert(key);
                opened += 1;
            }
        }
        opened
    }

    /// Whether a pass is changing the app's state: [`Graph::retry_changes`] opened toggles and
    /// options, and [`Graph::retry_rest`] has not opened the rest yet.
    pub fn changing(&self) -> bool {
        self.screens
            .iter()
            .any(|s| s.own() && !s.changes.is_empty())
    }

    /// The actions [`Graph::retry_changes`] opened that are not tried yet.
    pub fn changes_left(&self) -> usize {
        self.screens
            .iter()
            .filter(|s| s.own())
            .map(|s| {
                s.changes
                    .iter()
                    .filter(|k| s.untried.contains_key(*k))
                    .count()
            })
            .sum()
    }

    /// Opens every other action of the app's own states again, back too, once a pass changed
    /// the app's state (see [`Graph::retry_changes`]): each promises half of
    /// [`AGAIN_CHANGES`] down to a quarter, in the reverse of the order its screen's last pass
    /// tried them, so what was tried before a change (a list opened before a setting showed its
    /// hidden rows) is tried after it. Returns how many actions it opened.
    pub fn retry_rest(&mut self) -> usize {
        let mut opened = 0;
        for screen in self.screens.iter_mut().filter(|s| s.own()) {
            let changes = std::mem::take(&mut screen.changes);
            let order = std::mem::take(&mut screen.tried_order);
            let rest: Vec<ActionKey> = order
                .into_iter()
                .filter(|key| {
                    !changes.contains(key)
                        && screen.tried.contains(key)
                        && screen.actions.contains_key(key)
                })
                .collect();
            let last = rest.len().saturating_sub(1).max(1) as f64;
            for (position, key) in rest.iter().enumerate() {
                let promise = AGAIN_CHANGES * (0.25 + 0.25 * position as f64 / last);
                screen.reopen(key, promise);
                opened += 1;
            }
            // Back, which is no action of the screen's own, is tried again when nothing else
            // here is left (on the launch screen too: the relaunch after a trip out starts the
            // app afresh, in the order this pass tries things).
            screen.tried.retain(|key| changes.contains(key));
            screen.tried_order = changes.into_iter().collect();
        }
        opened
    }

    /// Makes a learned move no route (see [`Node::dead`]) until nothing else is left: it
    /// belongs to a cycle the exploration went round without finding anything.
    pub fn distrust(&mut self, screen: ScreenIndex, key: &ActionKey) {
        if let Some(screen) = self.screens.get_mut(screen) {
            screen.dead.insert(key.clone());
        }
    }

    pub fn launch(&self) -> Option<ScreenIndex> {
        self.launch
    }

    /// Whether the screen belongs to another app the exploration may enter.
    pub fn is_guest(&self, screen: ScreenIndex) -> bool {
        self.screens.get(screen).is_some_and(|s| s.guest)
    }

    /// Marks a screen as belonging to another app the exploration may enter.
    pub fn mark_guest(&mut self, screen: ScreenIndex) {
        if let Some(screen) = self.screens.get_mut(screen) {
            screen.guest = true;
        }
    }

    /// Marks a screen as belonging to another app, so paths never aim at it.
    pub fn mark_outside(&mut self, screen: ScreenIndex) {
        if let Some(screen) = self.screens.get_mut(screen) {
            screen.outside = true;
        }
    }

    pub fn mark_tried(&mut self, screen: ScreenIndex, key: &ActionKey) {
        if let Some(screen) = self.screens.get_mut(screen) {
            screen.set_tried(key);
        }
    }

    /// Makes a tried action worth trying again (the screen's state changed).
    pub fn mark_untried(&mut self, screen: ScreenIndex, key: &ActionKey) {
        if let Some(screen) = self.screens.get_mut(screen) {
            screen.tried.remove(key);
            if let Some(&rank) = screen.actions.get(key) {
                screen.untried.insert(key.clone(), rank);
            }
        }
    }

    pub fn is_tried(&self, screen: ScreenIndex, key: &ActionKey) -> bool {
        self.screens
            .get(screen)
            .is_some_and(|s| s.tried.contains(key))
    }

    /// Records that `key` on `from` led to `to` (just observed; `renewed` when it shows a known
    /// screen in a state not explored yet). The first outcome of an action counts towards the
    /// screen's productivity, as a discovery when `to` is another screen seen for the first
    /// time or renewed, but for typing that showed the screen in another state (see
    /// [`Graph::is_state_of`]); the latest one says whether it stalled (see
    /// [`Node::stalled`]); a screen seen for the first time remembers where it was reached
    /// from.
    pub fn record_edge(
        &mut self,
        from: ScreenIndex,
        key: &ActionKey,
        to: ScreenIndex,
        renewed: bool,
    ) -> ScreenIndex {
        let (from, to) = self.refine(from, key, to);
        self.note_opener(from, key, to);
        let Some(first_seen) = self.screens.get(to).map(|s| s.visits == 1) else {
            return to;
        };
        let witnessed = self
            .before
            .as_ref()
            .filter(|(at, _)| *at == from)
            .map(|(_, details)| details.clone());
        let first_outcome = self
            .screens
            .get(from)
            .is_some_and(|s| !s.edges.contains_key(key));
        // Typing that shows the screen in another state says how its field behaves, not what
        // the screen's widgets may show.
        let typed_state =
            first_outcome && key.is_input() && to != from && self.is_state_of(to, from);
        let Some(screen) = self.screens.get_mut(from) else {
            return to;
        };
        screen.set_tried(key);
        if let Some(details) = witnessed {
            screen.witnessed.entry(key.clone()).or_insert(details);
        }
        let targets = screen.edges.entry(key.clone()).or_default();
        if targets.is_empty() {
            if !typed_state {
                screen.outcomes += 1;
                screen.discoveries += u32::from((first_seen || renewed) && to != from);
            }
            if let Some(kind) = screen.kinds.get(key).cloned() {
                let led_on = to != from && (!kind.is_choice() || first_seen);
                self.by_kind.entry(kind).or_default().note(led_on);
            }
            if key.widget.is_some() {
                self.by_widget
                    .entry(key.clone())
                    .or_default()
                    .note(to != from);
                if to != from {
                    self.led_away_on
                        .entry(key.clone())
                        .or_default()
                        .moves
                        .push((from, to));
                }
            }
        }
        *targets.entry(to).or_default() += 1;
        if to == from {
            screen.stalled.insert(key.clone());
            if screen.revived.contains(key) {
                screen.dead.insert(key.clone());
            }
        } else {
            screen.stalled.remove(key);
            screen.revived.remove(key);
        }
        if first_seen && to != from {
            self.note_returns(from, to);
            if Some(to) != self.launch {
                self.screens[to].parent.get_or_insert(from);
            }
        }
        match first_outcome {
            true => self.merge_alike(from, key, to),
            false => to,
        }
    }

    /// Whether `key` is a control of the form on `screen` (a submit, an option): it needs the
    /// form's fields filled.
    pub fn is_control(&self, screen: ScreenIndex, key: &ActionKey) -> bool {
        self.screens
            .get(screen)
            .is_some_and(|s| s.controls.contains(key))
    }

    /// Whether the screen offers a field to type into.
    pub fn offers_field(&self, screen: ScreenIndex) -> bool {
        self.screens
            .get(screen)
            .is_some_and(|s| s.actions.keys().any(ActionKey::is_input))
    }

    /// Whether the screen offers `key` (seen on it at least once).
    pub fn offers(&self, screen: ScreenIndex, key: &ActionKey) -> bool {
        self.screens
            .get(screen)
            .is_some_and(|s| s.actions.contains_key(key))
    }

    /// Times the screen was seen.
    pub fn visits(&self, screen: ScreenIndex) -> u32 {
        self.screens.get(screen).map_or(0, |s| s.visits)
    }

    /// Where a learned move (see [`Graph::plan`]) leads: the screen `key` on `at` led to most
    /// often, when that did not stall.
    pub fn follow(&self, at: ScreenIndex, key: &ActionKey) -> Option<ScreenIndex> {
        self.screens.get(at)?;
        self.moves(at).find(|(k, _)| *k == key).map(|(_, to)| to)
    }

    /// Whether `key` was tried on `at` and its outcome seen, and it is no move from there: it
    /// left the screen as it was.
    pub fn led_nowhere(&self, at: ScreenIndex, key: &ActionKey) -> bool {
        self.is_learned(at, key) && self.follow(at, key).is_none()
    }

    /// Whether `key` on `at` is a move learned from an outcome (not an untried back expected to
    /// lead to the screen's parent).
    pub fn is_learned(&self, at: ScreenIndex, key: &ActionKey) -> bool {
        self.screens
            .get(at)
            .is_some_and(|s| s.edges.contains_key(key))
    }

    /// Where the widget behind `key` was last seen on `screen`.
    pub fn place(&self, screen: ScreenIndex, key: &ActionKey) -> Option<&Place> {
        self.screens.get(screen)?.places.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::promise::{GUEST, RETURNS, SIBLING_ONCE, SIBLING_TRIED, SIBLING_VARIES};
    use super::route::LOCAL_COST;
    use super::*;
    use crate::events::{ActionType, Observation, ScreenHash};
    use crate::screen::BACK;
    use crate::ui::{Bounds, UiElement};

    pub fn screen(activity: &str, phash: &str, buttons: &[&str]) -> Observation {
        Observation {
            activity: Some(activity.into()),
            hash: Some(ScreenHash {
                phash: Some(phash.into()),
                ..ScreenHash::default()
            }),
            elements: buttons
                .iter()
                .enumerate()
                .map(|(i, text)| UiElement {
                    element_id: i as u32,
                    text: text.to_string(),
                    class_name: "android.widget.Button".into(),
                    resource_id: format!("id/{text}"),
                    clickable: true,
                    enabled: true,
                    bounds: Bounds::from([0, i as i32 * 100, 100, i as i32 * 100 + 90]),
                    ..UiElement::default()
                })
                .collect(),
            ..Observation::default()
        }
    }

    #[test]
    fn screens_are_the_same_activity_with_the_same_widgets() {
        let mut graph = Graph::new();
        let a = graph.observe(&Screen::of(&screen(
            "Main",
            "ffff000000000000",
            &["A", "B"],
        )));
        let again = graph.observe(&Screen::of(&screen(
            "Main",
            "0000ffffffff0000",
            &["B", "A"],
        )));
        let close_but_other =
            graph.observe(&Screen::of(&screen("Main", "ffff000000000001", &["C"])));
        let other = graph.observe(&Screen::of(&screen(
            "Other",
            "ffff000000000000",
            &["A", "B"],
        )));
        assert_eq!(a, again);
        assert_ne!(a, close_but_other);
        assert_ne!(a, other);
        assert_eq!(graph.visits(a), 2);
        // Without actionable widgets (a secure screen, a splash), the layout decides.
        let blank = graph.observe(&Screen::of(&screen("Splash", "ffff000000000000", &[])));
        let blank_again = graph.observe(&Screen::of(&screen("Splash", "ffff00000000001f", &[])));
        assert_eq!(blank, blank_again);
    }

    fn none() -> BTreeSet<ActionKey> {
        BTreeSet::new()
    }

    #[test]
    fn moves_from_a_state_count_learned_moves_backs_and_a_relaunch() {
        let mut graph = Graph::new();
        let home = graph.observe(&Screen::of(&screen("Home", "0", &["Open", "Menu"])));
        graph.set_launch(home);
        let list = graph.observe(&Screen::of(&screen("List", "0", &["Item"])));
        graph.record_edge(home, &click("Open"), list, false);
        let item = graph.observe(&Screen::of(&screen("Item", "0", &["Edit"])));
        graph.record_edge(list, &click("Item"), item, false);
        let apart = graph.observe(&Screen::of(&screen("Apart", "0", &["Nothing"])));
        let moves = graph.moves_from(home);
        assert_eq!(
            (moves[home], moves[list], moves[item], moves[apart]),
            (Some(0), Some(1), Some(2), None)
        );
        // From the item: back to the list it was reached from, a relaunch to home.
        let moves = graph.moves_from(item);
        assert_eq!(
            (moves[item], moves[list], moves[home]),
            (Some(0), Some(1), Some(1))
        );
    }

    #[test]
    fn an_untried_widget_is_found_by_its_label_as_a_model_copies_it() {
        let mut graph = Graph::new();
        let main = graph.observe(&Screen::of(&screen(
            "Main",
            "0",
            &["Settings", "About  this app", "Sort by", "Sort order"],
        )));
        let found = |graph: &Graph, label: &str| graph.untried_labelled(main, label);
        assert_eq!(found(&graph, "Settings"), Some(click("Settings")));
        assert_eq!(found(&graph, "  settings "), Some(click("Settings")));
        assert_eq!(
            found(&graph, "about this APP"),
            Some(click("About  this app"))
        );
        // Held by one label only, or holding it.
        assert_eq!(found(&graph, "About"), Some(click("About  this app")));
        assert_eq!(found(&graph, "Open Settings"), Some(click("Settings")));
        assert_eq!(found(&graph, "About th…"), Some(click("About  this app")));
        // Held by two labels, none, too short to tell, or nothing asked: no widget.
        assert_eq!(found(&graph, "Sort"), None);
        assert_eq!(found(&graph, "ab"), None);
        assert_eq!(found(&graph, "Help"), None);
        assert_eq!(found(&graph, " "), None);
        // Tried, it is no longer found.
        graph.mark_tried(main, &click("Settings"));
        assert_eq!(found(&graph, "Settings"), None);
    }

    fn click(label: &str) -> ActionKey {
        ActionKey::on(
            ActionType::Click,
            format!("android.widget.Button|id/{label}||{label}"),
        )
    }

    /// A page of `activity` with buttons and, under them, a scrollable list of `rows`.
    fn page_with_list(activity: &str, buttons: &[&str], rows: &[&str]) -> Observation {
        let mut page = screen(activity, "0", buttons);
        let list = page.elements.len() as u32;
        page.elements.push(UiElement {
            element_id: list,
            class_name: "android.widget.ListView".into(),
            resource_id: "id/list".into(),
            // As the capture signs it: the rows are part of the list.
            signature: format!("android.widget.ListView|id/list||[{}]", rows.join(",")),
            scrollable: true,
            enabled: true,
            bounds: Bounds::from([0, 1000, 1080, 2000]),
            ..UiElement::default()
        });
        for (i, row) in rows.iter().enumerate() {
            page.elements.push(UiElement {
                element_id: list + 1 + i as u32,
                parent: Some(list),
                depth: 1,
                text: row.to_string(),
                class_name: "android.widget.TextView".into(),
                resource_id: "id/row".into(),
                clickable: true,
                enabled: true,
                bounds: Bounds::from([0, 1000 + i as i32 * 100, 1080, 1090 + i as i32 * 100]),
                ..UiElement::default()
            });
        }
        page
    }

    /// The click on the element of `observation` showing `text`.
    fn click_on(observation: &Observation, text: &str) -> ActionKey {
        let element = observation
            .elements
            .iter()
            .find(|e| e.text == text)
            .unwrap();
        ActionKey::on(ActionType::Click, crate::screen::signature(element))
    }

    /// The key of `kind` on the first element of `observation` of class `class`.
    fn key_on(observation: &Observation, class: &str, kind: ActionType) -> ActionKey {
        let element = observation
            .elements
            .iter()
            .find(|e| e.class_name == class)
            .unwrap();
        ActionKey::on(kind, crate::screen::signature(element))
    }

    #[test]
    fn what_a_list_did_on_one_page_it_promises_on_the_next() {
        let mut graph = Graph::new();
        let first = page_with_list("Main", &["Menu"], &["a", "b", "c"]);
        let next = page_with_list("Main", &["Menu"], &["d", "e", "f"]);
        let (one, two) = (
            graph.observe(&Screen::of(&first)),
            graph.observe(&Screen::of(&next)),
        );
        let swipe = |o: &Observation| key_on(o, "android.widget.ListView", ActionType::SwipeLeft);
        let promise = |graph: &Graph, on, key: &ActionKey| graph.promise(on, key, Rank::Gesture);
        assert_eq!(promise(&graph, two, &swipe(&next)), Rank::Gesture.promise());
        // Swiping the list did nothing on the first page: on the next, its rows being others,
        // it promises half, then a third.
        graph.record_edge(one, &swipe(&first), one, false);
        assert_eq!(
            promise(&graph, two, &swipe(&next)),
            Rank::Gesture.promise() / 2.0
        );
        let third = page_with_list("Main", &["Menu"], &["g", "h", "i"]);
        let three = graph.observe(&Screen::of(&third));
        graph.record_edge(two, &swipe(&next), two, false);
        assert_eq!(
            promise(&graph, three, &swipe(&third)),
            Rank::Gesture.promise() / 3.0
        );
        // In another activity, the same class of list is another list.
        let other = page_with_list("Other", &["Menu"], &["x", "y", "z"]);
        let elsewhere = graph.observe(&Screen::of(&other));
        assert_eq!(
            promise(&graph, elsewhere, &swipe(&other)),
            Rank::Gesture.promise()
        );
    }

    #[test]
    fn rows_of_a_list_that_did_nothing_make_the_others_promise_less() {
        let mut graph = Graph::new();
        let results = page_with_list("Main", &["Menu"], &["header", "a", "b", "c", "d"]);
        let page = graph.observe(&Screen::of(&results));
        let row = |label: &str| click_on(&results, label);
        assert_eq!(graph.promise(page, &row("d"), Rank::Text), 1.0);
        graph.record_edge(page, &row("a"), page, false);
        graph.record_edge(page, &row("b"), page, false);
        assert_eq!(graph.promise(page, &row("d"), Rank::Text), 1.0 / 3.0);
        // One that led away says the list's rows do something after all.
        let detail = graph.observe(&Screen::of(&screen("Detail", "0", &["Buy"])));
        graph.record_edge(page, &row("c"), detail, false);
        assert_eq!(graph.promise(page, &row("d"), Rank::Text), 2.0 / 4.0);
        // The list's first item (a header, the folder shown) is judged apart, both ways.
        assert_eq!(graph.promise(page, &row("header"), Rank::Text), 1.0);
        graph.record_edge(page, &row("header"), page, false);
        assert_eq!(graph.promise(page, &row("d"), Rank::Text), 2.0 / 4.0);
        // The menu is no row of the list.
        assert_eq!(graph.promise(page, &click("Menu"), Rank::Text), 1.0);
    }

    /// A date format dialog: a radio group of five choices "a" to "e", each with its own id,
    /// and "OK".
    fn radio_dialog() -> Observation {
        let mut dialog = screen("Main", "0", &["OK"]);
        dialog.elements.push(UiElement {
            element_id: 1,
            class_name: "android.widget.RadioGroup".into(),
            resource_id: "id/formats".into(),
            enabled: true,
            bounds: Bounds::from([0, 200, 1080, 800]),
            ..UiElement::default()
        });
        for (i, format) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            dialog.elements.push(UiElement {
                element_id: 2 + i as u32,
                parent: Some(1),
                depth: 1,
                text: format.to_string(),
                class_name: "android.widget.RadioButton".into(),
                resource_id: format!("id/format_{format}"),
                clickable: true,
                checkable: true,
                enabled: true,
                bounds: Bounds::from([0, 200 + i as i32 * 100, 1080, 290 + i as i32 * 100]),
                ..UiElement::default()
            });
        }
        dialog
    }

    #[test]
    fn choices_of_one_group_that_did_nothing_make_the_others_promise_less() {
        let dialog = radio_dialog();
        let mut graph = Graph::new();
        let at = graph.observe(&Screen::of(&dialog));
        let choice = |label: &str| click_on(&dialog, label);
        assert_eq!(graph.promise(at, &choice("e"), Rank::Text), 1.0);
        // Two choices that left the dialog as it was: the others of the group promise a third.
        graph.record_edge(at, &choice("a"), at, false);
        graph.record_edge(at, &choice("b"), at, false);
        assert_eq!(graph.promise(at, &choice("e"), Rank::Text), 1.0 / 3.0);
        // The dialog's button is no choice of the group.
        assert_eq!(graph.promise(at, &click("OK"), Rank::Text), 1.0);
    }

    #[test]
    fn choices_that_showed_a_known_screen_make_the_others_promise_less() {
        // The dialog closes on a choice, showing the settings page it was opened from (seen
        // before) or, the first time, a page not seen yet.
        let dialog = radio_dialog();
        let choice = |label: &str| click_on(&dialog, label);
        let after_one_choice = |to_known: bool| {
            let mut graph = Graph::new();
            let page = screen("Settings", "0", &["Format"]);
            let settings = graph.observe(&Screen::of(&page));
            let at = graph.observe(&Screen::of(&dialog));
            graph.record_edge(settings, &click("Format"), at, false);
            let shown = match to_known {
                true => graph.observe(&Screen::of(&page)),
                false => graph.observe(&Screen::of(&screen("Preview", "0", &["Done"]))),
            };
            graph.record_edge(at, &choice("a"), shown, false);
            graph.promise(at, &choice("e"), Rank::Text)
        };
        assert_eq!(after_one_choice(true), 0.5);
        assert_eq!(after_one_choice(false), 1.0);
    }

    /// A page of `activity` with buttons "A" and "B" and a label showing `label` (no action: the
    /// key is the same whatever it shows).
    fn labelled(label: &str) -> Observation {
        let mut page = screen("Page", "0", &["A", "B"]);
        page.elements.push(UiElement {
            element_id: 2,
            text: label.into(),
            class_name: "android.widget.TextView".into(),
            resource_id: "id/status".into(),
            enabled: true,
            bounds: Bounds::from([0, 300, 1080, 400]),
            ..UiElement::default()
        });
        page
    }

    #[test]
    fn a_key_splits_when_one_action_has_two_outcomes_and_merges_back() {
        let mut graph = Graph::new();
        let (one, two, three) = (labelled("one"), labelled("two"), labelled("three"));
        let (x, y) = (screen("X", "0", &["X"]), screen("Y", "0", &["Y"]));
        let page = graph.observe(&Screen::of(&one));
        let to_x = graph.observe(&Screen::of(&x));
        assert_eq!(graph.record_edge(page, &click("A"), to_x, false), to_x);
        let again = graph.observe(&Screen::of(&one));
        assert_eq!(again, page);
        let went = graph.observe(&Screen::of(&screen("Z", "0", &["Z"])));
        graph.record_edge(page, &click("B"), went, false);
        // The label shows "two": the same key, the same state so far; a decision names no
        // state of a key held as one.
        assert_eq!(graph.observe(&Screen::of(&two)), page);
        assert_eq!(graph.tally().states, 3);
        assert_eq!(graph.screen_state(page), None);
        // "A" shows Y this time: what the label showed tells the two visits apart, and the
        // outcome belongs to the state the label says "two" in, with its own untried "B".
        let to_y = graph.observe(&Screen::of(&y));
        assert_eq!(graph.record_edge(page, &click("A"), to_y, false), to_y);
        assert_eq!(graph.refined_states(), 1);
        let split = graph.observe(&Screen::of(&two));
        assert_ne!(split, page);
        assert_eq!(graph.key(split), graph.key(page));
        assert_eq!(graph.follow(split, &click("A")), Some(to_y));
        assert_eq!(graph.follow(page, &click("A")), Some(to_x));
        assert!(graph.is_tried(page, &click("B")));
        assert!(!graph.is_tried(split, &click("B")));
        // Each state is named by what tells it apart, as decisions and crawler.db name it.
        let (first, second) = (graph.screen_state(page), graph.screen_state(split));
        let (first, second) = (first.unwrap(), second.unwrap());
        let slot = "android.widget.TextView|id/status#1".to_string();
        assert_eq!(
            first.shows,
            BTreeMap::from([(slot.clone(), Some("one".into()))])
        );
        assert_eq!(second.shows, BTreeMap::from([(slot, Some("two".into()))]));
        assert_ne!(first.key, second.key);
        assert_eq!((first.states, second.states), (2, 2));
        assert_eq!(graph.observe(&Screen::of(&one)), page);
        let left = graph.tally();
        assert_eq!(left.states, 5);
        assert!(left.actions_left >= 1, "{left:?}");
        // A third label is a third state, until "A" shows there what it showed where the label
        // said "one": the two behave alike, and are one state again.
        let third = graph.observe(&Screen::of(&three));
        assert!(third != page && third != split);
        assert!(!graph.is_tried(third, &click("B")));
        let to_x = graph.observe(&Screen::of(&x));
        graph.record_edge(third, &click("A"), to_x, false);
        assert_eq!(graph.observe(&Screen::of(&three)), page);
        assert_eq!(graph.tally().states, 5);
        assert_eq!(graph.refined_states(), 1);
    }

    #[test]
    fn a_key_is_not_split_by_outcomes_its_details_do_not_explain() {
        let mut graph = Graph::new();
        let one = labelled("one");
        let page = graph.observe(&Screen::of(&one));
        let x = graph.observe(&Screen::of(&screen("X", "0", &["X"])));
        graph.record_edge(page, &click("A"), x, false);
        graph.observe(&Screen::of(&one));
        let y = graph.observe(&Screen::of(&screen("Y", "0", &["Y"])));
        graph.record_edge(page, &click("A"), y, false);
        assert_eq!(graph.refined_states(), 0);
        assert_eq!(graph.observe(&Screen::of(&one)), page);
        // Nor past the most states a key is split into.
        let mut graph = Graph::new();
        let mut states = BTreeSet::new();
        for n in 0..2 * refine::MAX_STATES {
            let shown = labelled(&n.to_string());
            let at = graph.observe(&Screen::of(&shown));
            states.insert(at);
            let to = graph.observe(&Screen::of(&screen(&format!("T{n}"), "0", &["T"])));
            graph.record_edge(at, &click("A"), to, false);
        }
        assert_eq!(graph.refined_states(), refine::MAX_STATES - 1);
        assert!(states.len() < refine::MAX_STATES, "{states:?}");
        let past = graph.observe(&Screen::of(&labelled("past the most")));
        assert_eq!(Some(past), graph.find(graph.key(past).unwrap()));
    }

    #[test]
    fn a_key_whose_states_merge_back_makes_no_more_than_the_most() {
        // A label that shows something new on every visit (a counter, a log that grows): each
        // value is a state, "A" shows there what it showed on the first one, and the state is
        // merged back, its "B" untried until then.
        let mut graph = Graph::new();
        let page = graph.observe(&Screen::of(&labelled("0")));
        let z = graph.observe(&Screen::of(&screen("Z", "0", &["Z"])));
        graph.record_edge(page, &click("B"), z, false);
        graph.observe(&Screen::of(&labelled("0")));
        let x = graph.observe(&Screen::of(&screen("X", "0", &["X"])));
        graph.record_edge(page, &click("A"), x, false);
        graph.observe(&Screen::of(&labelled("1")));
        let y = graph.observe(&Screen::of(&screen("Y", "0", &["Y"])));
        graph.record_edge(page, &click("A"), y, false);
        assert_eq!(graph.refined_states(), 1);
        let mut fresh = 0;
        for n in 2..2 * refine::MAX_MADE {
            let at = graph.observe(&Screen::of(&labelled(&n.to_string())));
            fresh += usize::from(!graph.is_tried(at, &click("B")));
            let x = graph.observe(&Screen::of(&screen("X", "0", &["X"])));
            graph.record_edge(at, &click("A"), x, false);
        }
        assert!(fresh < refine::MAX_MADE, "{fresh} states with B untried");
        let past = graph.observe(&Screen::of(&labelled("past the most")));
        assert!(graph.is_tried(past, &click("B")));
    }

    #[test]
    fn the_tally_counts_states_and_actions_left_until_each_is_tried() {
        let mut graph = Graph::new();
        let list = graph.observe(&Screen::of(&screen("List", "0", &["Open", "Sort"])));
        let detail = graph.observe(&Screen::of(&screen("Detail", "0", &["Buy"])));
        let all = graph.tally();
        assert_eq!((all.states, all.states_left), (2, 2));
        assert_eq!(all.actions, all.actions_left);
        assert!(all.actions >= 3, "{all:?}");
        // Every action of the list tried: one state left, with the detail's actions.
        let actions: Vec<ActionKey> = graph.screens[list].untried.keys().cloned().collect();
        for key in &actions {
            graph.record_edge(list, key, detail, false);
        }
        let left = graph.tally();
        assert_eq!((left.states, left.states_left), (2, 1));
        assert_eq!(left.actions_left, graph.screens[detail].untried.len());
        for key in graph.screens[detail].untried.clone().into_keys() {
            graph.mark_tried(detail, &key);
        }
        assert_eq!(graph.tally().actions_left, 0);
        assert_eq!(graph.tally().actions, all.actions);
    }

    #[test]
    fn another_pass_opens_toggles_first_then_the_rest_in_reverse_order() {
        let mut graph = Graph::new();
        let mut settings = screen("Settings", "0", &["Help", "About"]);
        settings.elements.push(UiElement {
            element_id: 2,
            text: "Show hidden files".into(),
            class_name: "android.widget.CheckBox".into(),
            resource_id: "id/hidden".into(),
            clickable: true,
            checkable: true,
            enabled: true,
            bounds: Bounds::from([0, 300, 100, 390]),
            ..UiElement::default()
        });
        let page = graph.observe(&Screen::of(&settings));
        let toggle = graph.screens[page]
            .actions
            .iter()
            .find(|(_, rank)| **rank == Rank::Toggle)
            .map(|(key, _)| key.clone())
            .expect("the check box is a toggle");
        let others: Vec<ActionKey> = graph.screens[page]
            .actions
            .keys()
            .filter(|key| **key != toggle)
            .cloned()
            .collect();
        assert!(others.len() >= 2, "{others:?}");
        // The first pass tries the others in their order, the toggle last, then back.
        for key in &others {
            graph.mark_tried(page, key);
        }
        graph.mark_tried(page, &toggle);
        graph.mark_tried(page, &BACK);
        assert_eq!(graph.tally().actions_left, 0);
        // The new pass opens the toggle alone, promising most; it counts as tried once.
        assert_eq!(graph.retry_changes(), 1);
        assert_eq!(graph.changes_left(), 1);
        let left = graph.tally();
        assert_eq!((left.actions_left, left.never_tried()), (1, 0));
        assert_eq!(graph.promise(page, &toggle, Rank::Toggle), AGAIN_CHANGES);
        assert!(graph.is_tried(page, &BACK));
        graph.mark_tried(page, &toggle);
        assert_eq!(graph.changes_left(), 0);
        // Then the rest, back too, each promising less the earlier the last pass tried it.
        assert_eq!(graph.retry_rest(), others.len());
        assert!(graph.is_tried(page, &toggle));
        assert!(!graph.is_tried(page, &BACK));
        let promises: Vec<f64> = others
            .iter()
            .map(|key| graph.promise(page, key, Rank::Text))
            .collect();
        assert!(promises.windows(2).all(|w| w[0] < w[1]), "{promises:?}");
        assert_eq!(promises.last(), Some(&(AGAIN_CHANGES / 2.0)));
        assert_eq!(promises.first(), Some(&(AGAIN_CHANGES / 4.0)));
        // Once tried again, an action promises by its looks.
        graph.mark_tried(page, &others[0]);
        graph.mark_untried(page, &others[0]);
        assert_eq!(
            graph.promise(page, &others[0], Rank::Text),
            Rank::Text.promise()
        );
    }

    #[test]
    fn an_action_tried_twice_is_opened_once_by_the_next_pass_at_its_latest_place() {
        let mut graph = Graph::new();
        let page = graph.observe(&Screen::of(&screen(
            "Form",
            "0",
            &["Save", "Help", "About"],
        )));
        let keys: Vec<ActionKey> = graph.screens[page].actions.keys().cloned().collect();
        assert_eq!(keys.len(), 3, "{keys:?}");
        // The first is tried, made worth trying again (a retried submit), and tried last.
        for key in &keys {
            graph.mark_tried(page, key);
        }
        graph.mark_untried(page, &keys[0]);
        graph.mark_tried(page, &keys[0]);
        graph.mark_tried(page, &BACK);
        assert_eq!(graph.retry_changes(), 0);
        assert_eq!(graph.retry_rest(), keys.len());
        // Tried last, it promises most of the three.
        let promise = |key: &ActionKey| graph.promise(page, key, Rank::Text);
        assert_eq!(promise(&keys[0]), AGAIN_CHANGES / 2.0);
        assert_eq!(promise(&keys[1]), AGAIN_CHANGES / 4.0);
    }

    #[test]
    fn a_widget_that_did_nothing_on_one_screen_promises_less_on_another() {
        let mut graph = Graph::new();
        let list = graph.observe(&Screen::of(&screen("List", "0", &["Tip", "Open"])));
        let other = graph.observe(&Screen::of(&screen("Other", "0", &["Tip", "Close"])));
        graph.record_edge(list, &click("Tip"), list, false);
        assert_eq!(graph.promise(other, &click("Tip"), Rank::Text), 0.5);
        assert_eq!(graph.promise(other, &click("Close"), Rank::Text), 1.0);
    }

    #[test]
    fn a_path_walked_blind_costs_one_decision_however_long() {
        // Home → Menu → Settings by learned clicks; Home's parent Start by an untried back.
        let mut graph = Graph::new();
        let start = graph.observe(&Screen::of(&screen("Start", "0", &["Go", "Extra"])));
        let home = graph.observe(&Screen::of(&screen("Home", "0", &["Menu"])));
        graph.record_edge(start, &click("Go"), home, false);
        let menu = graph.observe(&Screen::of(&screen("Menu", "0", &["Settings"])));
        graph.record_edge(home, &click("Menu"), menu, false);
        let settings = graph.observe(&Screen::of(&screen("Settings", "0", &["Alpha", "Beta"])));
        graph.record_edge(menu, &click("Settings"), settings, false);
        graph.record_edge(settings, &click("Alpha"), home, false);
        graph.observe(&Screen::of(&screen("Home", "0", &["Menu"])));
        // Start's untried button is two moves away, but the back there is untried: a decision
        // for the back, another for the button. Settings' is three moves away, all walked in
        // the decision taken now: it is the better goal.
        let plan = graph.plan(home, false, &BTreeSet::new()).unwrap();
        assert_eq!(plan.goal, settings);
        assert_eq!(plan.then, [(menu, click("Settings"))]);
        // Half a decision per move beyond the decisions: three moves and one decision cost
        // 2.5, against 1.5 for an action on the screen observed.
        let productivity = graph.screens[settings].productivity();
        assert_eq!(plan.value, productivity * LOCAL_COST / 2.5);
        assert!(graph.walkable(home, &click("Menu")));
        assert!(!graph.walkable(home, &BACK));
        // A container's scroll or swipe is walked blind as a click is, where it was seen.
        let page = page_with_list("List", &[], &["Row one", "Row two"]);
        let list = graph.observe(&Screen::of(&page));
        let scroll = key_on(&page, "android.widget.ListView", ActionType::ScrollDown);
        assert!(!graph.walkable(list, &scroll), "not learned yet");
        graph.record_edge(list, &scroll, settings, false);
        assert!(graph.walkable(list, &scroll));
    }

    #[test]
    fn back_on_the_launch_screen_is_no_route() {
        // Home was once shown on top of Extra, and back there showed Extra; Extra's button is
        // untried. Once Home is the launch screen (a task's root after a relaunch), back there
        // leaves the app: no walk goes through it.
        let mut graph = Graph::new();
        let extra = graph.observe(&Screen::of(&screen("Extra", "0", &["Open", "Button"])));
        let home = graph.observe(&Screen::of(&screen("Home", "0", &["Go"])));
        graph.record_edge(extra, &click("Open"), home, false);
        graph.record_edge(home, &BACK, extra, false);
        graph.observe(&Screen::of(&screen("Home", "0", &["Go"])));
        assert_eq!(graph.follow(home, &BACK), Some(extra));
        let plan = graph.plan(home, false, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Action(BACK.clone()), extra));
        graph.set_launch(home);
        assert_eq!(graph.follow(home, &BACK), None);
        assert_eq!(graph.plan(home, false, &none()), None);
    }

    #[test]
    fn back_returns_to_the_screen_it_was_opened_from() {
        // One dialog opened over Home and over List: back from it showed each once (Home, the
        // first found, is its most seen target). List's "Open" is untried.
        let mut graph = Graph::new();
        let (home_shown, list_shown) = (
            screen("Home", "0", &["Sort"]),
            screen("List", "0", &["Sort", "Open"]),
        );
        let dialog_shown = screen("Dialog", "0", &["OK"]);
        let open = |graph: &mut Graph, from: ScreenIndex, shown: &Observation| {
            let dialog = graph.observe(&Screen::of(&dialog_shown));
            graph.record_edge(from, &click("Sort"), dialog, false);
            let back = graph.observe(&Screen::of(shown));
            graph.record_edge(dialog, &BACK, back, false);
            dialog
        };
        let home = graph.observe(&Screen::of(&home_shown));
        graph.set_launch(home);
        let dialog = open(&mut graph, home, &home_shown);
        let list = graph.observe(&Screen::of(&list_shown));
        open(&mut graph, list, &list_shown);
        assert_eq!(graph.follow(dialog, &BACK), Some(home));
        // Opened from List, back leads there, and on to its untried "Open".
        graph.observe(&Screen::of(&dialog_shown));
        graph.record_edge(list, &click("Sort"), dialog, false);
        let plan = graph.plan(dialog, false, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Action(BACK.clone()), list));
        // Opened from Home, back leads to Home, whose only move opens the dialog again.
        graph.observe(&Screen::of(&home_shown));
        graph.record_edge(dialog, &BACK, home, false);
        graph.observe(&Screen::of(&dialog_shown));
        graph.record_edge(home, &click("Sort"), dialog, false);
        assert_eq!(graph.plan(dialog, false, &none()), None);
    }

    /// Observes `shown` as the outcome of `key` on `from`.
    fn step(
        graph: &mut Graph,
        from: ScreenIndex,
        key: &ActionKey,
        shown: &Observation,
    ) -> ScreenIndex {
        let to = graph.observe(&Screen::of(shown));
        graph.record_edge(from, key, to, false)
    }

    #[test]
    fn back_from_another_activity_shows_the_screen_that_started_it() {
        // A camera's photo and video modes are one activity; its settings another, opened
        // from either mode. Opened from Video, back showed Video.
        let mut graph = Graph::new();
        let photo_shown = screen("Main", "0", &["Settings", "Video", "Shutter"]);
        let video_shown = screen("Main", "0", &["Settings", "Photo", "Record"]);
        let settings_shown = screen("Settings", "0", &["Sound"]);
        let photo = graph.observe(&Screen::of(&photo_shown));
        let video = step(&mut graph, photo, &click("Video"), &video_shown);
        step(&mut graph, video, &click("Record"), &video_shown);
        let settings = step(&mut graph, video, &click("Settings"), &settings_shown);
        step(&mut graph, settings, &BACK, &video_shown);
        step(&mut graph, video, &click("Photo"), &photo_shown);
        // Opened from Photo, and a toggle tried there: back shows Photo, whose Shutter is
        // untried, in one move.
        step(&mut graph, photo, &click("Settings"), &settings_shown);
        step(&mut graph, settings, &click("Sound"), &settings_shown);
        let plan = graph.plan(settings, false, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Action(BACK.clone()), photo));
        assert_eq!(plan.then, Vec::new());
        // Once back was seen showing another screen than its opener (the app's own back),
        // what it showed is what it does: the walk goes through Video.
        step(&mut graph, settings, &BACK, &video_shown);
        step(&mut graph, video, &click("Photo"), &photo_shown);
        step(&mut graph, photo, &click("Settings"), &settings_shown);
        let plan = graph.plan(settings, false, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Action(BACK.clone()), photo));
        assert_eq!(plan.then, vec![(video, click("Photo"))]);
    }

    #[test]
    fn back_on_a_dialog_over_an_activity_shows_that_activity() {
        // Home starts an activity that opens with a dialog over its page: back dismisses the
        // dialog and shows the page, not Home, wherever the dialog was opened from.
        let mut graph = Graph::new();
        let home_shown = screen("Home", "0", &["Start", "More"]);
        let page_shown = screen("Page", "0", &["Choose", "Share"]);
        let dialog_shown = screen("Page", "0", &["Cancel", "Generate"]);
        let page = graph.observe(&Screen::of(&page_shown));
        let dialog = step(&mut graph, page, &click("Choose"), &dialog_shown);
        step(&mut graph, dialog, &BACK, &page_shown);
        let home = graph.observe(&Screen::of(&home_shown));
        graph.set_launch(home);
        step(&mut graph, home, &click("Start"), &dialog_shown);
        let plan = graph.plan(dialog, false, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Action(BACK.clone()), page));
    }

    #[test]
    fn a_back_never_pressed_is_a_goal_once_nothing_else_is_left_there() {
        // Home opens List, List opens a dialog; back was pressed on the dialog only.
        let mut graph = Graph::new();
        let home_shown = screen("Home", "0", &["List"]);
        let list_shown = screen("List", "0", &["Sort", "Share"]);
        let dialog_shown = screen("Dialog", "0", &["OK"]);
        let home = graph.observe(&Screen::of(&home_shown));
        graph.set_launch(home);
        let list = step(&mut graph, home, &click("List"), &list_shown);
        let dialog = step(&mut graph, list, &click("Sort"), &dialog_shown);
        step(&mut graph, dialog, &click("OK"), &list_shown);
        step(&mut graph, list, &click("Sort"), &dialog_shown);
        step(&mut graph, dialog, &BACK, &list_shown);
        let dialog = step(&mut graph, list, &click("Sort"), &dialog_shown);
        // List's "Share" is untried: it is the goal, not List's back.
        assert!(graph.untried_back(list).is_some());
        let share = graph.plan(dialog, true, &none()).unwrap();
        assert_eq!(share.goal, list);
        // Shared, List has nothing left but its back: still a goal, worth a dismissive
        // widget's promise.
        step(&mut graph, list, &click("Share"), &list_shown);
        let dialog = step(&mut graph, list, &click("Sort"), &dialog_shown);
        let plan = graph.plan(dialog, true, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Action(BACK.clone()), list));
        assert!(plan.value < share.value);
        // Back on the launch screen leaves the app: it is no goal.
        step(&mut graph, list, &BACK, &home_shown);
        assert_eq!(graph.untried_back(home), None);
        assert_eq!(graph.plan(home, true, &none()), None);
    }

    #[test]
    fn a_distrusted_move_is_no_route_until_nothing_else_is_left() {
        let mut graph = Graph::new();
        let home = graph.observe(&Screen::of(&screen("Home", "0", &["Menu"])));
        let menu = graph.observe(&Screen::of(&screen("Menu", "0", &["A", "B"])));
        graph.record_edge(home, &click("Menu"), menu, false);
        graph.record_edge(menu, &click("A"), menu, false);
        graph.observe(&Screen::of(&screen("Home", "0", &["Menu"])));
        assert_eq!(graph.plan(home, false, &none()).map(|p| p.goal), Some(menu));
        graph.distrust(home, &click("Menu"));
        assert_eq!(graph.plan(home, false, &none()), None);
        graph.app_restarted();
        assert_eq!(graph.plan(home, false, &none()), None);
        graph.revive_dead();
        assert_eq!(graph.plan(home, false, &none()).map(|p| p.goal), Some(menu));
    }

    #[test]
    fn plan_walks_learned_edges_and_expected_backs_to_untried_actions() {
        let mut graph = Graph::new();
        let home = graph.observe(&Screen::of(&screen("Home", "0", &["Go", "Other"])));
        graph.set_launch(home);
        let middle = graph.observe(&Screen::of(&screen("Middle", "0", &["Next"])));
        graph.record_edge(home, &click("Go"), middle, false);
        let far = graph.observe(&Screen::of(&screen("Far", "0", &["X", "Y"])));
        graph.record_edge(middle, &click("Next"), far, false);
        graph.observe(&Screen::of(&screen("Far", "0", &["X", "Y"])));
        graph.record_edge(far, &click("X"), far, false);
        // Far's own Y is the caller's business; Home's "Other" is two expected backs away.
        let plan = graph.plan(far, false, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Action(BACK.clone()), home));
        assert!((plan.value - graph.value_here(home, 1.0) / 3.0).abs() < 1e-9);
        // A relaunch reaches the launch screen in one step.
        let plan = graph.plan(far, true, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Relaunch, home));
        // Once tried, back is what it was seen to do: here, nothing.
        graph.record_edge(far, &BACK, far, false);
        assert_eq!(graph.plan(far, false, &none()), None);
        graph.mark_tried(home, &click("Other"));
        // Middle's back, never pressed, is the last goal; once pressed, there is none.
        let plan = graph.plan(far, true, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Relaunch, middle));
        graph.mark_tried(middle, &BACK);
        assert_eq!(graph.plan(far, true, &none()), None);
    }

    #[test]
    fn a_widget_untried_here_is_no_goal_elsewhere() {
        let mut graph = Graph::new();
        let home = graph.observe(&Screen::of(&screen("Home", "0", &["Search", "Go", "More"])));
        graph.set_launch(home);
        let page = graph.observe(&Screen::of(&screen("Page", "0", &["Search", "X"])));
        graph.record_edge(home, &click("Go"), page, false);
        graph.observe(&Screen::of(&screen("Page", "0", &["Search", "X"])));
        graph.record_edge(page, &click("X"), page, false);
        let search_here = BTreeSet::from([click("Search")]);
        let nothing = none();
        let goal = |graph: &Graph, skip| graph.plan(page, false, skip).map(|plan| plan.goal);
        // Home's "More" is a goal either way.
        assert_eq!(goal(&graph, &search_here), Some(home));
        // Once it is tried, Home's search is two steps away (back, then it) and Page's is
        // right here: no goal.
        graph.mark_tried(home, &click("More"));
        assert_eq!(goal(&graph, &nothing), Some(home));
        assert_eq!(goal(&graph, &search_here), None);
    }

    #[test]
    fn plan_lists_the_moves_after_its_first_with_where_each_is_taken() {
        let mut graph = Graph::new();
        let home = graph.observe(&Screen::of(&screen("Home", "0", &["Menu"])));
        graph.set_launch(home);
        let menu = graph.observe(&Screen::of(&screen("Menu", "0", &["Settings"])));
        graph.record_edge(home, &click("Menu"), menu, false);
        let settings = graph.observe(&Screen::of(&screen("Settings", "0", &["A", "B"])));
        graph.record_edge(menu, &click("Settings"), settings, false);
        graph.record_edge(settings, &click("A"), home, false);
        graph.observe(&Screen::of(&screen("Home", "0", &["Menu"])));
        let plan = graph.plan(home, false, &none()).unwrap();
        assert_eq!(
            (plan.first, plan.goal),
            (Move::Action(click("Menu")), settings)
        );
        assert_eq!(plan.then, [(menu, click("Settings"))]);
        assert_eq!(graph.follow(home, &click("Menu")), Some(menu));
        assert!(graph.is_learned(menu, &click("Settings")));
        // Where each widget was last seen, to tap it without observing its screen.
        let place = graph.place(settings, &click("B")).unwrap();
        assert_eq!(
            (place.bounds, place.label.as_str()),
            (Bounds::from([0, 100, 100, 190]), "B")
        );
        // An untried back is expected to lead to the parent, but is no learned move.
        assert_eq!(graph.follow(settings, &BACK), Some(menu));
        assert!(!graph.is_learned(settings, &BACK));
        // A relaunch starts the path at the launch screen.
        let elsewhere = graph.observe(&Screen::of(&screen("Elsewhere", "0", &["Z"])));
        graph.mark_tried(elsewhere, &click("Z"));
        let plan = graph.plan(elsewhere, true, &none()).unwrap();
        assert_eq!((plan.first, plan.goal), (Move::Relaunch, settings));
        assert_eq!(
            plan.then,
            [(home, click("Menu")), (menu, click("Settings"))]
        );
    }

    #[test]
    fn a_route_that_stalled_is_no_move_until_the_app_restarts_unless_it_stalls_again() {
        let mut graph = Graph::new();
        let page = graph.observe(&Screen::of(&screen("Page", "0", &["Open", "Toggle"])));
        graph.set_launch(page);
        let dialog = graph.observe(&Screen::of(&screen("Dialog", "0", &["A", "B"])));
        graph.record_edge(page, &click("Open"), dialog, false);
        graph.mark_tried(page, &click("Toggle"));
        graph.observe(&Screen::of(&screen("Page", "0", &["Open", "Toggle"])));
        graph.record_edge(dialog, &BACK, page, false);
        let to_dialog = Some((Move::Action(click("Open")), dialog));
        let route = |graph: &Graph| {
            graph
                .plan(page, false, &none())
                .map(|plan| (plan.first, plan.goal))
        };
        assert_eq!(route(&graph), to_dialog);
        // In another state of the app (a toggle flipped), Open does nothing, twice: no route
        // now, and not a move to the page itself either.
        for _ in 0..2 {
            graph.observe(&Screen::of(&screen("Page", "0", &["Open", "Toggle"])));
            graph.record_edge(page, &click("Open"), page, false);
        }
        assert_eq!(route(&graph), None);
        // A restart brings the app's first state back, and the dialog with it, though Open
        // stalled more often than it led there.
        graph.app_restarted();
        assert_eq!(route(&graph), to_dialog);
        // Open leads there again: a later stall is again undone by a restart.
        graph.record_edge(page, &click("Open"), dialog, false);
        graph.record_edge(page, &click("Open"), page, false);
        graph.app_restarted();
        assert_eq!(route(&graph), to_dialog);
        // Stalling once more right after the restart, it is dead: restarts do not bring it back.
        graph.record_edge(page, &click("Open"), page, false);
        graph.app_restarted();
        assert_eq!(route(&graph), None);
        // Until nothing else is left.
        graph.revive_dead();
        assert_eq!(route(&graph), to_dialog);
    }

    #[test]
    fn a_widget_that_led_away_from_a_sibling_screen_promises_little() {
        let mut graph = Graph::new();
        let tabs = ["Home", "Cart", "Settings"];
        let home = graph.observe(&Screen::of(&screen(
            "Main",
            "0",
            &[&tabs[..], &["Shoes"]].concat(),
        )));
        let cart = graph.observe(&Screen::of(&screen(
            "Main",
            "0",
            &[&tabs[..], &["Checkout"]].concat(),
        )));
        graph.record_edge(home, &click("Cart"), cart, false);
        assert_eq!(
            graph.promise(cart, &click("Shoes"), Rank::Text),
            Rank::Text.promise()
        );
        assert_eq!(
            graph.promise(cart, &click("Cart"), Rank::Text),
            Rank::Text.promise() * SIBLING_TRIED
        );
        // Two dialogs sharing "OK" and "Cancel" are not siblings: an "OK" leads somewhere new
        // in each.
        let rename = graph.observe(&Screen::of(&screen("Dialog", "0", &["OK", "Cancel"])));
        let lock = graph.observe(&Screen::of(&screen(
            "Dialog",
            "0",
            &["OK", "Cancel", "Help"],
        )));
        graph.record_edge(rename, &click("OK"), home, false);
        assert_eq!(
            graph.promise(lock, &click("OK"), Rank::Text),
            Rank::Text.promise()
        );
    }

    #[test]
    fn a_switch_that_showed_its_screen_in_another_state_promises_in_full_on_a_sibling() {
        // A camera: the front camera has no flash; the video page is a sibling of the photo
        // page, not a state of it.
        let photo = ["Toggle", "Flash", "Shutter", "Settings", "Video"];
        let video = ["Toggle", "Flash", "Shutter", "Settings", "Photo", "Record"];
        let front = ["Toggle", "Shutter", "Settings", "Video"];
        let mut graph = Graph::new();
        let back_photo = graph.observe(&Screen::of(&screen("Camera", "0", &photo)));
        let front_photo = graph.observe(&Screen::of(&screen("Camera", "0", &front)));
        let back_video = graph.observe(&Screen::of(&screen("Camera", "0", &video)));
        graph.record_edge(back_photo, &click("Toggle"), front_photo, false);
        // On the video page the switch shows the video page in another state, not the photo
        // page's: it promises in full.
        assert_eq!(
            graph.promise(back_video, &click("Toggle"), Rank::Text),
            Rank::Text.promise()
        );
        // On the state it showed, it leads back.
        assert_eq!(
            graph.promise(front_photo, &click("Toggle"), Rank::Text),
            Rank::Text.promise() * SIBLING_TRIED
        );
        // A tab selects itself on the page it opens: another page, the same from every tab.
        let mut tabs = Graph::new();
        let mut selected = screen("Camera", "0", &front);
        selected.elements[0].selected = true;
        let back_photo = tabs.observe(&Screen::of(&screen("Camera", "0", &photo)));
        let front_photo = tabs.observe(&Screen::of(&selected));
        let back_video = tabs.observe(&Screen::of(&screen("Camera", "0", &video)));
        tabs.record_edge(back_photo, &click("Toggle"), front_photo, false);
        assert_eq!(
            tabs.promise(back_video, &click("Toggle"), Rank::Text),
            Rank::Text.promise() * SIBLING_TRIED
        );
    }

    #[test]
    fn the_tab_selected_before_a_tap_promises_little_on_the_screen_it_opened() {
        // A mode switcher: the selected mode takes no taps, the other does.
        let modes = |selected: &str| {
            let mut page = screen("Camera", "0", &["Photo", "Video", "Shutter", "Settings"]);
            for element in &mut page.elements {
                if element.text == selected {
                    element.selected = true;
                    element.clickable = false;
                }
            }
            page
        };
        let mut graph = Graph::new();
        let photo = graph.observe(&Screen::of(&modes("Photo")));
        let video = graph.observe(&Screen::of(&modes("Video")));
        assert_ne!(photo, video);
        graph.record_edge(photo, &click("Video"), video, false);
        // Tapping the mode selected before goes back; the rest promise what they look.
        assert_eq!(
            graph.promise(video, &click("Photo"), Rank::Text),
            Rank::Text.promise() * RETURNS
        );
        assert_eq!(
            graph.promise(video, &click("Shutter"), Rank::Text),
            Rank::Text.promise()
        );
        // The selection went away without moving (a scrolling title's): no way back either.
        let mut other = Graph::new();
        let mut titled = screen("Camera", "0", &["Open", "Photo"]);
        titled.elements[1].selected = true;
        let titled = other.observe(&Screen::of(&titled));
        let untitled = other.observe(&Screen::of(&screen("Camera", "0", &["Next", "Photo"])));
        other.record_edge(titled, &click("Open"), untitled, false);
        assert_eq!(
            other.promise(untitled, &click("Photo"), Rank::Text),
            Rank::Text.promise()
        );
        // Nothing was selected on the screen before: no widget is a way back.
        let mut other = Graph::new();
        let plain = other.observe(&Screen::of(&screen("Camera", "0", &["Open"])));
        let video = other.observe(&Screen::of(&modes("Video")));
        other.record_edge(plain, &click("Open"), video, false);
        assert_eq!(
            other.promise(video, &click("Photo"), Rank::Text),
            Rank::Text.promise()
        );
    }

    #[test]
    fn a_toolbar_menu_that_led_elsewhere_once_still_promises_something() {
        let mut graph = Graph::new();
        let toolbar = ["Search", "Open", "More"];
        let page = |graph: &mut Graph, own: &str| {
            graph.observe(&Screen::of(&screen(
                "Main",
                "0",
                &[&toolbar[..], &[own]].concat(),
            )))
        };
        let (text, checklist, drawing, list) = (
            page(&mut graph, "Body"),
            page(&mut graph, "Items"),
            page(&mut graph, "Canvas"),
            page(&mut graph, "Rows"),
        );
        let text_menu = graph.observe(&Screen::of(&screen("Main", "0", &["Rename", "Print"])));
        graph.record_edge(text, &click("More"), text_menu, false);
        let more = |graph: &Graph, on| graph.promise(on, &click("More"), Rank::Text);
        assert_eq!(more(&graph, checklist), Rank::Text.promise() * SIBLING_ONCE);
        // The same menu from two pages: the next page's is the same menu too.
        graph.record_edge(drawing, &click("More"), text_menu, false);
        assert_eq!(more(&graph, list), Rank::Text.promise() * SIBLING_TRIED);
        // Another menu from another page: it depends on the page.
        let checklist_menu =
            graph.observe(&Screen::of(&screen("Main", "0", &["Sort", "Remove done"])));
        graph.record_edge(checklist, &click("More"), checklist_menu, false);
        assert_eq!(more(&graph, list), Rank::Text.promise() * SIBLING_VARIES);
    }

    #[test]
    fn sibling_evidence_follows_a_screen_that_gains_an_action() {
        // Two rows of a list, then three: the home screen gains a whole-screen scroll, which
        // makes it share three actions with the page, a sibling from then on.
        let mut graph = Graph::new();
        let home = graph.observe(&Screen::of(&screen(
            "Main",
            "0",
            &["T1", "T2", "Row", "Row"],
        )));
        let page = graph.observe(&Screen::of(&screen(
            "Main",
            "0",
            &["T1", "T2", "Item", "Item", "Item"],
        )));
        let elsewhere = graph.observe(&Screen::of(&screen("Other", "0", &["Z"])));
        graph.record_edge(home, &click("T1"), elsewhere, false);
        assert!(graph.offers(page, &SCROLL) && !graph.offers(home, &SCROLL));
        assert_eq!(graph.promise(page, &click("T1"), Rank::Text), 1.0);
        graph.observe(&Screen::of(&screen(
            "Main",
            "0",
            &["T1", "T2", "Row", "Row", "Row"],
        )));
        assert!(graph.offers(home, &SCROLL));
        assert_eq!(
            graph.promise(page, &click("T1"), Rank::Text),
            Rank::Text.promise() * SIBLING_ONCE
        );
    }

    #[test]
    fn a_guest_screen_promises_less_but_for_its_form() {
        let mut graph = Graph::new();
        let picker = graph.observe(&Screen::of(&screen("Picker", "0", &["Show roots", "SAVE"])));
        graph.mark_guest(picker);
        let name = ActionKey::on(ActionType::Input, "android.widget.EditText|id/name||");
        assert_eq!(
            graph.promise(picker, &click("Show roots"), Rank::Text),
            Rank::Text.promise() * GUEST
        );
        assert_eq!(
            graph.promise(picker, &click("SAVE"), Rank::SubmitButton),
            Rank::SubmitButton.promise()
        );
        assert_eq!(
            graph.promise(picker, &name, Rank::Text),
            Rank::Text.promise()
        );
    }

    #[test]
    fn a_submit_that_led_away_from_a_sibling_form_still_promises_in_full() {
        // One layout for two dialogs (rename a note, create one): "OK" does what each asks.
        let mut graph = Graph::new();
        let form = ["Title", "Cancel", "OK"];
        let rename = graph.observe(&Screen::of(&screen("Main", "0", &form)));
        let create = graph.observe(&Screen::of(&screen(
            "Main",
            "0",
            &[&form[..], &["Checklist"]].concat(),
        )));
        let renamed = graph.observe(&Screen::of(&screen("Main", "0", &["Note"])));
        graph.record_edge(rename, &click("OK"), renamed, false);
        assert_eq!(
            graph.promise(create, &click("OK"), Rank::SubmitButton),
            Rank::SubmitButton.promise()
        );
        assert_eq!(
            graph.promise(create, &click("Cancel"), Rank::Text),
            Rank::Text.promise()
        );
    }

    #[test]
    fn typing_that_shows_the_screen_in_another_state_is_no_outcome() {
        // A screen of buttons and one text field, and the key of typing into the field.
        let with_field = |activity: &str, buttons: &[&str]| {
            let mut observation = screen(activity, "0", buttons);
            observation.elements.push(UiElement {
                element_id: buttons.len() as u32,
                class_name: "android.widget.EditText".into(),
                resource_id: "id/text".into(),
                editable: true,
                ..observation.elements[0].clone()
            });
            let field = observation.elements.last().unwrap();
            let key = ActionKey::on(ActionType::Input, crate::screen::signature(field));
            (observation, key)
        };
        let mut graph = Graph::new();
        let toolbar = ["Search", "New", "Open", "Menu"];
        let (empty, typing) = with_field("Editor", &toolbar);
        let editor = graph.observe(&Screen::of(&empty));
        assert!(graph.offers(editor, &typing));
        let typed = graph.observe(&Screen::of(
            &with_field("Editor", &[&toolbar[..], &["Undo"]].concat()).0,
        ));
        graph.record_edge(editor, &typing, typed, false);
        assert_eq!(graph.value_here(editor, 1.0), UNSEEN_PRODUCTIVITY);
        // Typing into a search bar that shows results under the same toolbar is a discovery
        // as any other: the rows are more than another state's extra widgets.
        let bar = ["Back", "Clear", "Menu", "Voice"];
        let (search, typing) = with_field("Search", &bar);
        let search = graph.observe(&Screen::of(&search));
        let rows = [&bar[..], &["One", "Two", "Three", "Four"]].concat();
        let results = graph.observe(&Screen::of(&with_field("Search", &rows).0));
        graph.record_edge(search, &typing, results, false);
        assert!(graph.value_here(search, 1.0) > UNSEEN_PRODUCTIVITY);
    }

    #[test]
    fn productivity_falls_as_tried_actions_show_nothing_new() {
        let mut graph = Graph::new();
        let list = graph.observe(&Screen::of(&screen("List", "0", &["A", "B", "C"])));
        let fresh = graph.value_here(list, 1.0);
        assert_eq!(fresh, UNSEEN_PRODUCTIVITY);
        graph.observe(&Screen::of(&screen("List", "0", &["A", "B", "C"])));
        graph.record_edge(list, &click("A"), list, false);
        let after_nothing = graph.value_here(list, 1.0);
        let detail = graph.observe(&Screen::of(&screen("Detail", "0", &["D"])));
        graph.record_edge(list, &click("B"), detail, false);
        assert!(after_nothing < fresh);
        assert!(graph.value_here(list, 1.0) > after_nothing);
    }

    #[test]
    fn a_known_screen_shown_in_a_new_state_is_a_discovery() {
        // A dialog whose "OK" showed the home screen again, in a state not explored yet or not.
        let after_ok = |renewed: bool| {
            let mut graph = Graph::new();
            let home = graph.observe(&Screen::of(&screen("Main", "0", &["New", "Menu"])));
            let dialog = graph.observe(&Screen::of(&screen("Dialog", "0", &["OK", "Cancel"])));
            graph.observe(&Screen::of(&screen("Main", "0", &["New", "Menu"])));
            graph.record_edge(dialog, &click("OK"), home, renewed);
            (graph, dialog)
        };
        let (graph, dialog) = after_ok(false);
        assert_eq!(graph.value_here(dialog, 1.0), 1.0 / 3.0);
        // The home screen in a state not explored yet (its field holds an empty note where a
        // written one was seen) counts as a new screen.
        let (mut graph, dialog) = after_ok(true);
        assert_eq!(graph.value_here(dialog, 1.0), 2.0 / 3.0);
        // Staying put is no discovery, renewed or not.
        graph.record_edge(dialog, &click("Cancel"), dialog, true);
        assert_eq!(graph.value_here(dialog, 1.0), 2.0 / 4.0);
    }
}
