//! States of one screen key told apart by what actions did.
//!
//! A [`ScreenKey`] (activity and actionable widgets) holds every state of a screen alike: a
//! settings page with a box ticked or not, a form with text typed, a sort dialog with another
//! option checked, a list scrolled. Telling them all apart up front would make every clock tick
//! and every typed letter a screen; telling none apart makes an action tried in one state count
//! as tried in all. So a key is one state until an action taken from it shows an outcome other
//! than its first (another screen, or the same screen where it led on before): the slots whose
//! [`Details`] differ between the visit that saw the first outcome and this one then tell the
//! key's states apart, each with its own untried actions (the split). A split that did not
//! matter is undone: a state whose first outcome of a splitting action is the one another state
//! of the key showed behaves as that state, and is merged into it. A key holds at most
//! [`MAX_STATES`] at once and makes at most [`MAX_MADE`], merged ones included; observations
//! past that are its first state.
//!
//! APE (Gu et al., ICSE 2019, "Practical GUI testing of Android apps via model abstraction and
//! refinement") refines a GUI model the same way: coarse first, finer where an action's outcomes
//! disagree.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::{Graph, Node, ScreenIndex};
use crate::events::ScreenState;
use crate::screen::{ActionKey, Details, ScreenKey};

/// The most states one key is split into: a list of many pages, a field that shows a clock,
/// stay bounded.
pub const MAX_STATES: usize = 8;

/// The most states one key makes over a run, merged ones included: a screen whose text changes
/// on every visit (a counter, a clock, a log that grows) would otherwise be a new state each
/// time, its actions untried, merged back after one try, and the run would go round it until
/// its budget ends.
pub const MAX_MADE: usize = 2 * MAX_STATES;

/// The states of one key.
#[derive(Debug, Clone, Default)]
pub(super) struct States {
    /// The slots whose values tell the key's states apart (none: one state).
    slots: BTreeSet<String>,
    /// The states by their values of `slots`; merged ones point at the state they joined.
    by_values: BTreeMap<Vec<Option<String>>, ScreenIndex>,
    /// The actions whose differing outcomes split the key.
    witnesses: BTreeSet<ActionKey>,
    /// The states made for the key, merged ones included (see [`MAX_MADE`]).
    made: usize,
}

impl States {
    /// The key's first state (the one a key not split is).
    pub(super) fn first(&self) -> Option<ScreenIndex> {
        self.by_values.values().min().copied()
    }

    fn values(&self, details: &Details) -> Vec<Option<String>> {
        self.slots
            .iter()
            .map(|slot| details.get(slot).map(str::to_string))
            .collect()
    }

    /// The distinct states (merged ones are not).
    fn count(&self) -> usize {
        self.by_values.values().collect::<BTreeSet<_>>().len()
    }

    /// Whether the key was split.
    pub(super) fn is_split(&self) -> bool {
        !self.slots.is_empty()
    }
}

impl Graph {
    /// The state of `key` that an observation showing `details` is in: added when new (with
    /// the actions of `like`, else of the key's first state, all untried) but past
    /// [`MAX_STATES`] or [`MAX_MADE`], when it is the key's first state.
    pub(super) fn state_of(
        &mut self,
        key: &ScreenKey,
        details: &Rc<Details>,
        like: Option<ScreenIndex>,
    ) -> ScreenIndex {
        let states = self.by_key.entry(key.clone()).or_default();
        let values = states.values(details);
        if let Some(&id) = states.by_values.get(&values) {
            return id;
        }
        let first = states.first();
        let full = states.count() >= MAX_STATES || states.made >= MAX_MADE;
        if let Some(first) = first.filter(|_| full) {
            return first;
        }
        states.made += 1;
        let id = self.screens.len();
        let mut node = Node::new(key.clone(), details.clone());
        if let Some(like) = like.or(first).and_then(|like| self.screens.get(like)) {
            for (action, &rank) in &like.actions {
                node.add_action(action, rank);
            }
            node.places = like.places.clone();
            node.kinds = like.kinds.clone();
            node.controls = like.controls.clone();
            node.parent = like.parent;
            node.activity = like.activity.clone();
        }
        self.screens.push(node);
        if let Some(states) = self.by_key.get_mut(key) {
            states.by_values.insert(values, id);
        }
        id
    }

    /// Splits `from`'s key when `key`'s outcome `to`, taken from the screen observed before
    /// the one observed now, differs from its outcomes so far there and what the two visits
    /// showed tells why (see the module documentation). Returns where the outcome is recorded
    /// (the state the visit was in) and the state the observation now is in.
    pub(super) fn refine(
        &mut self,
        from: ScreenIndex,
        key: &ActionKey,
        to: ScreenIndex,
    ) -> (ScreenIndex, ScreenIndex) {
        let Some((at, before)) = self.before.clone() else {
            return (from, to);
        };
        let Some(node) = self.screens.get(from).filter(|_| at == from) else {
            return (from, to);
        };
        let differs = node
            .edges
            .get(key)
            .is_some_and(|targets| !targets.contains_key(&to));
        let Some(witnessed) = node.witnessed.get(key).filter(|_| differs).cloned() else {
            return (from, to);
        };
        let coarse = node.key.clone();
        let Some(states) = self.by_key.get_mut(&coarse) else {
            return (from, to);
        };
        if states.count() >= MAX_STATES {
            return (from, to);
        }
        let slots: Vec<String> = witnessed
            .differing(&before)
            .filter(|slot| !states.slots.contains(*slot))
            .cloned()
            .collect();
        if slots.is_empty() {
            return (from, to);
        }
        states.slots.extend(slots);
        states.witnesses.insert(key.clone());
        // What `from` learned, it learned in the state that saw the action's first outcome.
        self.screens[from].details = witnessed;
        let members: BTreeSet<ScreenIndex> = states.by_values.values().copied().collect();
        let by_values = members
            .into_iter()
            .map(|id| (states.values(&self.screens[id].details), id))
            .collect();
        states.by_values = by_values;
        let state = self.state_of(&coarse, &before, Some(from));
        self.move_visit(from, state);
        self.before = Some((state, before));
        let now = match self.shown.clone() {
            Some((shown, details)) if shown == to && self.screens[to].key == coarse => {
                let now = self.state_of(&coarse, &details, Some(from));
                self.move_visit(to, now);
                self.shown = Some((now, details));
                now
            }
            _ => to,
        };
        (state, now)
    }

    /// A visit counted on `from` was one of `to`, another state of its key.
    fn move_visit(&mut self, from: ScreenIndex, to: ScreenIndex) {
        if from != to {
            self.screens[from].visits = self.screens[from].visits.saturating_sub(1);
            self.screens[to].visits += 1;
        }
    }

    /// After the first outcome of an action that split `from`'s key, seen on `from`: when
    /// another state of the key showed the same outcome for it, the two behave alike and
    /// `from` is merged into it. Returns the state the observation now is in.
    pub(super) fn merge_alike(
        &mut self,
        from: ScreenIndex,
        key: &ActionKey,
        to: ScreenIndex,
    ) -> ScreenIndex {
        let coarse = self.screens[from].key.clone();
        let Some(states) = self
            .by_key
            .get(&coarse)
            .filter(|s| s.witnesses.contains(key))
        else {
            return to;
        };
        let same_outcome = |other: ScreenIndex, node: &Node| {
            node.edges.get(key).is_some_and(|targets| {
                targets.contains_key(&to) || (to == from && targets.contains_key(&other))
            })
        };
        let alike = states
            .by_values
            .values()
            .copied()
            .filter(|&other| other != from)
            .find(|&other| same_outcome(other, &self.screens[other]));
        match alike {
            Some(into) => {
                self.merge(from, into);
                if to == from {
                    into
                } else {
                    to
                }
            }
            None => to,
        }
    }

    /// Merges state `gone` into `into` (of the same key): its actions, what was tried and
    /// learned there, and every edge and reference to it.
    fn merge(&mut self, gone: ScreenIndex, into: ScreenIndex) {
        let shell = Node::new(self.screens[gone].key.clone(), Rc::default());
        let mut old = std::mem::replace(&mut self.screens[gone], shell);
        self.screens[gone].merged = true;
        let remap = |id: ScreenIndex| if id == gone { into } else { id };
        let target = &mut self.screens[into];
        for (action, &rank) in &old.actions {
            target.add_action(action, rank);
        }
        for action in &old.tried {
            target.set_tried(action);
        }
        for (action, targets) in std::mem::take(&mut old.edges) {
            let merged = target.edges.entry(action).or_default();
            for (to, n) in targets {
                *merged.entry(remap(to)).or_default() += n;
            }
        }
        for (action, place) in old.places {
            target.places.entry(action).or_insert(place);
        }
        for (action, kind) in old.kinds {
            target.kinds.entry(action).or_insert(kind);
        }
        for (action, details) in old.witnessed {
            target.witnessed.entry(action).or_insert(details);
        }
        target.controls.extend(old.controls);
        target.stalled.extend(old.stalled);
        target.revived.extend(old.revived);
        target.dead.extend(old.dead);
        target.visits += old.visits;
        target.outcomes += old.outcomes;
        target.discoveries += old.discoveries;
        for (id, node) in self.screens.iter_mut().enumerate() {
            for targets in node.edges.values_mut() {
                if let Some(n) = targets.remove(&gone) {
                    *targets.entry(into).or_default() += n;
                }
            }
            node.parent = node.parent.map(remap).filter(|&parent| parent != id);
        }
        self.launch = self.launch.map(remap);
        for led_away in self.led_away_on.values_mut() {
            for (from, to) in &mut led_away.moves {
                *from = remap(*from);
                *to = remap(*to);
            }
            led_away.evidence.get_mut().clear();
        }
        self.sibling_cache.get_mut().clear();
        if let Some(states) = self.by_key.get_mut(&old.key) {
            for id in states.by_values.values_mut() {
                *id = remap(*id);
            }
        }
        for (id, _) in self.shown.iter_mut().chain(self.before.iter_mut()) {
            *id = remap(*id);
        }
    }

    /// The state `screen` is, as a decision names it: `None` while its key is one state.
    pub fn screen_state(&self, screen: ScreenIndex) -> Option<ScreenState> {
        let node = self.screens.get(screen)?;
        let states = self.by_key.get(&node.key).filter(|s| s.is_split())?;
        let shows: BTreeMap<String, Option<String>> = states
            .slots
            .iter()
            .map(|slot| (slot.clone(), node.details.describe(slot)))
            .collect();
        // Raw values: two states may describe alike (a text and a description); a slot with no
        // element is told from one showing nothing.
        let parts: Vec<&str> = states
            .slots
            .iter()
            .flat_map(|slot| [slot.as_str(), node.details.get(slot).unwrap_or("\u{0}")])
            .collect();
        let key = crate::hash::digest16(&parts);
        Some(ScreenState {
            key,
            states: states.count(),
            shows,
        })
    }

    /// How many states the graph tells apart beyond its keys: states of split keys but for
    /// each key's first.
    pub fn refined_states(&self) -> usize {
        self.by_key
            .values()
            .filter(|s| s.is_split())
            .map(|s| s.count() - 1)
            .sum()
    }
}
