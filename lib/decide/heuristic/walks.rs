//! Walks: a known path's moves taken in one decision (taps where their widgets were seen,
//! scrolls of the containers where they were seen, backs), and the goal's untried action at its end.

use rand::seq::SliceRandom;

use super::{back, scroll_down, Heuristic};
use crate::decide::graph::{Place, Plan, ScreenIndex};
use crate::events::{Action, ActionType};
use crate::screen::{action_on, bounding_box, is_submit, ActionKey, Rank, Screen, BACK, SCROLL};
use crate::ui::{is_actionable, UiElement};

/// Moves along a known path taken blind in the same decision as its first move, and the
/// goal's untried action at its end: their actions are the decision's last.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Walk {
    /// Learned moves (taps on where their widgets were seen, backs), in order, each with the
    /// screen the path takes it on.
    moves: Vec<(ScreenIndex, ActionKey)>,
    /// The path's goal, and the untried action taken there.
    goal: ScreenIndex,
    then: Option<ActionKey>,
}

impl Walk {
    /// The decision's actions it accounts for.
    pub(super) fn actions(&self) -> usize {
        self.moves.len() + usize::from(self.then.is_some())
    }

    /// The untried action the walk takes at its goal.
    pub(super) fn tries(&self) -> Option<&ActionKey> {
        self.then.as_ref()
    }
}

impl Heuristic {
    /// Learns a walk taken after the pending action: the screens it passed are taken to be
    /// those its path planned, so the next observation is the outcome of its last action on the
    /// screen it expected there, unless it shows one of the screens passed, where the move taken
    /// then must have stalled.
    pub(super) fn learn_walk(&mut self, walk: &Walk, first: usize) {
        if self.taken.is_empty() {
            return;
        }
        let then = walk.then.iter().map(|key| (walk.goal, key.clone()));
        for (index, (at, key)) in (first..).zip(walk.moves.iter().cloned().chain(then)) {
            self.taken.push((index, at, key));
        }
        let Some((_, at, key)) = self.taken.last().cloned() else {
            return;
        };
        self.walked_to_untried = walk.then.is_some();
        self.graph.mark_tried(at, &key);
        self.current = Some(at);
    }

    /// The action behind `key` on the current observation, to walk a known path; a form's
    /// submit goes with fills of the form's empty fields, as when it was first tried.
    pub(super) fn replay(&self, shown: &Screen, key: &ActionKey) -> Option<Vec<Action>> {
        let why = "on the way to a screen with untried actions";
        if *key == SCROLL {
            return Some(vec![scroll_down(why)]);
        }
        if *key == BACK {
            return Some(back(why.into()).actions);
        }
        let elements = shown.elements();
        let widget = shown.widget(key)?;
        let element = widget.element;
        let kind = key.kind.clone();
        let mut actions = Vec::new();
        // A form's option first clicked on the form filled goes with the fills again: its
        // outcome was learned from the form filled (a type of note chosen after its title).
        let filled_option = self
            .current
            .is_some_and(|screen| self.options_filled.contains(&(screen, key.clone())));
        let submits =
            (widget.control && !element.checkable) || is_submit(widget.label) || filled_option;
        if kind != ActionType::Input && submits {
            let empty: Vec<&UiElement> = elements
                .iter()
                .filter(|e| e.editable && is_actionable(e) && !self.shows_typed_text(e))
                .filter(|e| e.element_id < element.element_id)
                .collect();
            actions = empty.into_iter().map(|field| self.fill(field)).collect();
        }
        let mut action = action_on(elements, element, kind.clone(), why);
        if kind == ActionType::Input {
            action.input_text = Some(self.text_for(element));
        }
        actions.push(action);
        Some(actions)
    }

    /// The plan's moves after its first, taken blind as taps where their widgets were seen,
    /// scrolls and swipes of the containers where they were seen, and backs, and the goal's most
    /// promising untried click or gesture when the walk reaches it: one decision instead of one
    /// per move. It stops before a move that is not learned (typing, a back whose outcome is a
    /// guess) or is a form's control (its fields need filling, from an observation of them),
    /// keeps to `room` actions, and takes nothing on a goal with a field to fill (see
    /// [`Heuristic::first_blind`]).
    pub(super) fn walk(&mut self, plan: &Plan, room: usize) -> Option<(Walk, Vec<Action>)> {
        let why = "on a known path to a screen with untried actions";
        let mut walk = Walk {
            moves: Vec::new(),
            goal: plan.goal,
            then: None,
        };
        let mut actions = Vec::new();
        for (at, key) in &plan.then {
            // A form's submit needs its fields filled, from an observation of them.
            let form = self.graph.is_control(*at, key);
            let blind =
                (self.graph.is_learned(*at, key) && !form).then(|| self.blind(*at, key, why));
            match blind.flatten() {
                Some(action) if actions.len() < room => {
                    actions.push(action);
                    walk.moves.push((*at, key.clone()));
                }
                _ => return (!actions.is_empty()).then_some((walk, actions)),
            }
        }
        let goal = self
            .named_blind(plan.goal)
            .or_else(|| self.first_blind(plan.goal));
        if let Some(action) = goal
            .as_ref()
            .filter(|_| actions.len() < room)
            .and_then(|key| self.blind(plan.goal, key, "untried on this screen"))
        {
            actions.push(action);
            walk.then = goal;
        }
        (!actions.is_empty()).then_some((walk, actions))
    }

    /// The widget a model's goal names, when `screen` is a state of a goal's key and the
    /// widget is taken blind there (see [`Graph::blind_goal`]).
    fn named_blind(&self, screen: ScreenIndex) -> Option<ActionKey> {
        let key = self.graph.key(screen);
        let goal = self
            .goals
            .iter()
            .find(|g| self.graph.key(g.screen) == key)?;
        let label = goal.element.as_deref()?;
        self.graph
            .untried_labelled(screen, label)
            .filter(|key| self.graph.blind_goal(screen, key))
    }

    /// What would be tried first on arriving at `screen` when it is a click or a gesture on a
    /// container: its most promising untried action (ties broken by rank, then by the seeded
    /// generator), but for a form's control and on a screen with a field still to fill (its
    /// fields come first, as on any screen).
    pub(super) fn first_blind(&mut self, screen: ScreenIndex) -> Option<ActionKey> {
        let untried = self.graph.untried(screen);
        if untried.iter().any(|(key, _, _)| key.is_input()) {
            return None;
        }
        let order = |a: &(ActionKey, f64, Rank), b: &(ActionKey, f64, Rank)| {
            b.1.total_cmp(&a.1).then(a.2.cmp(&b.2))
        };
        let best = untried.iter().min_by(|a, b| order(a, b))?;
        let mut tied: Vec<&ActionKey> = untried
            .iter()
            .filter(|u| order(u, best).is_eq())
            .map(|(key, _, _)| key)
            .collect();
        tied.shuffle(&mut self.rng);
        let key = tied.first()?;
        let blind = key.is_click() || key.is_gesture();
        (blind && !self.graph.is_control(screen, key)).then(|| (*key).clone())
    }

    /// A move taken without observing its screen: back, a tap where the widget was seen, or a
    /// scroll or swipe of the container where it was seen. It names the screen it is meant for
    /// and the widget it acts on.
    pub(super) fn blind(&self, screen: ScreenIndex, key: &ActionKey, why: &str) -> Option<Action> {
        let mut action = if *key == BACK {
            back(why.into()).actions.remove(0)
        } else if key.is_click() || key.is_gesture() {
            let Place { bounds, label } = self.graph.place(screen, key)?;
            // A tap at the widget's centre; a scroll or swipe on the container's box.
            let mut action = match key.is_click() {
                true => {
                    let (x, y) = bounds.center();
                    let mut tap = Action::new(ActionType::Tap);
                    tap.point = Some([i64::from(x), i64::from(y)]);
                    tap
                }
                false => {
                    let mut gesture = Action::new(key.kind.clone());
                    gesture.target_bounding_box = Some(bounding_box(*bounds));
                    gesture
                }
            };
            action.action_desc = Some(format!("{} \"{label}\"", action.action));
            action.reasoning = Some(why.to_string());
            action.widget = key.widget.clone();
            action
        } else {
            return None;
        };
        action.screen = self.graph.key(screen).map(|k| k.as_str().to_string());
        Some(action)
    }
}
