//! Route planning: the cheapest known way from the current screen to the most valuable untried
//! action elsewhere (learned edges walked blind, an expected back, a relaunch to the launch screen).

use std::collections::{BTreeSet, BinaryHeap};

use super::{Graph, Node, ScreenIndex};
use crate::screen::{ActionKey, Rank, ScreenKey, BACK};

/// The first move of a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Move {
    Action(ActionKey),
    /// Force-stop and start the app: leads to the screen it launches on.
    Relaunch,
}

/// Where to explore next, away from the current screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub first: Move,
    pub goal: ScreenIndex,
    /// The [`Graph::promise`] of the goal's best untried action (but for those shown untried
    /// where the plan starts) times the goal's productivity, divided by the steps to reach and
    /// take it: comparable with [`Graph::value_here`].
    pub value: f64,
    /// The path's moves after the first, each with the screen it is taken on.
    pub then: Vec<(ScreenIndex, ActionKey)>,
}

/// What a move costs beyond the decisions it needs (see [`Graph::plan`]): a move taken blind
/// may go astray (a link dead in this state of the app), and each takes time.
pub const MOVE_COST: f64 = 0.5;

/// What trying an action on the screen observed costs: one decision, one move.
pub(super) const LOCAL_COST: f64 = 1.0 + MOVE_COST;

/// How far a path goes, in what taking it takes: the decisions (observations) it needs and
/// its moves, and whether the screen it reaches is observed (a decision starts there) or
/// reached blind along a walk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Reach {
    decisions: u32,
    moves: u32,
    observed: bool,
}

impl Reach {
    /// The screen observed now.
    const START: Reach = Reach {
        decisions: 1,
        moves: 0,
        observed: true,
    };

    /// The launch screen after a relaunch: the relaunch is a decision of its own.
    const RELAUNCHED: Reach = Reach {
        decisions: 2,
        moves: 1,
        observed: true,
    };

    fn cost(self) -> f64 {
        f64::from(self.decisions) + MOVE_COST * f64::from(self.moves)
    }

    /// One more move in the same decision, blind.
    fn then_act(self) -> Reach {
        Reach {
            moves: self.moves + 1,
            observed: false,
            ..self
        }
    }

    /// One more move taken on the screen observed: the walk goes on past it when it is
    /// `learned`, else the next screen is observed in a decision of its own.
    fn then_act_observed(self, learned: bool) -> Reach {
        Reach {
            decisions: self.decisions + u32::from(!learned),
            moves: self.moves + 1,
            observed: !learned,
        }
    }

    /// The walk stops here: a decision starts on this screen, observed.
    fn then_observe(self) -> Reach {
        match self.observed {
            true => self,
            false => Reach {
                decisions: self.decisions + 1,
                observed: true,
                ..self
            },
        }
    }
}

/// A screen waiting in [`Graph::plan`]'s queue, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Queued(f64, ScreenIndex);

impl Eq for Queued {}

impl Ord for Queued {
    fn cmp(&self, other: &Queued) -> std::cmp::Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Queued) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Graph {
    /// The most valuable screen to explore next other than `from`, and the first move of the
    /// cheapest known path there. Paths follow learned edges (each action's most seen target;
    /// a back's, the screen a move other than back reached its screen from on this path, or
    /// for `from` on its last outcome, when back led there before),
    /// an untried back to the screen a screen was first reached from, and, when `relaunch` is
    /// allowed, a relaunch to the launch screen. A path costs what taking it takes (see
    /// [`Reach`]): the decisions it needs, since learned clicks and backs are walked blind in
    /// one decision (each observation is a step), and [`MOVE_COST`] per move (each move taken
    /// blind may go astray, and takes time).
    ///
    /// A goal is judged by its best untried action not in `shown_untried`: a widget shown
    /// untried on this screen too (a toolbar's search) is left for this screen, and the goal
    /// judged by its other untried actions. A state of the app's own (not the launch screen,
    /// where back leaves the app) with nothing else untried and whose back was never pressed is
    /// a goal for that back, with a dismissive widget's promise: back is expected to show the
    /// screen beneath, but may not (a dialog that shows its page scrolled, an activity that
    /// finishes to another state of the screen beneath than the one it was opened from).
    pub fn plan(
        &self,
        from: ScreenIndex,
        relaunch: bool,
        shown_untried: &BTreeSet<ActionKey>,
    ) -> Option<Plan> {
        self.plan_among(from, relaunch, shown_untried, None)
    }

    /// The cheapest path from `from` to a state of `goal`'s key with an untried action (or
    /// back never pressed), as [`Graph::plan`] finds paths: where a model asked the exploration
    /// to go. None when no known route reaches one.
    pub fn plan_to(&self, from: ScreenIndex, goal: &ScreenKey, relaunch: bool) -> Option<Plan> {
        self.plan_among(from, relaunch, &BTreeSet::new(), Some(goal))
    }

    /// [`Graph::plan`], its goals the states of the key `only` when given.
    fn plan_among(
        &self,
        from: ScreenIndex,
        relaunch: bool,
        shown_untried: &BTreeSet<ActionKey>,
        only: Option<&ScreenKey>,
    ) -> Option<Plan> {
        let count = self.screens.len();
        let mut first: Vec<Option<Move>> = vec![None; count];
        // The move each screen was reached by, from the screen before it on its path.
        let mut came: Vec<Option<(ScreenIndex, &ActionKey)>> = vec![None; count];
        let mut reach: Vec<Option<Reach>> = vec![None; count];
        let mut done = vec![false; count];
        *reach.get_mut(from)? = Some(Reach::START);
        let mut queue = BinaryHeap::from([Queued(Reach::START.cost(), from)]);
        let mut best: Option<Plan> = None;
        let came_from = self
            .reached_by
            .filter(|(to, _)| *to == from)
            .map(|(_, from)| from);
        while let Some(Queued(_, at)) = queue.pop() {
            if std::mem::replace(&mut done[at], true) {
                continue;
            }
            let Some(here) = reach[at] else { continue };
            // Promise and productivity are at most 1, and costs only grow: no screen further
            // can beat the best found.
            let bound = |reach: Reach| LOCAL_COST / reach.then_act().cost();
            if best.as_ref().is_some_and(|b| bound(here) <= b.value) {
                break;
            }
            let screen = &self.screens[at];
            if at != from && !screen.outside && only.is_none_or(|key| *key == screen.key) {
                if let Some((key, promise)) = self
                    .best_untried(at, shown_untried)
                    .or_else(|| self.untried_back(at))
                {
                    let act = match here.observed || self.blind_goal(at, &key) {
                        true => here.then_act(),
                        false => here.then_observe().then_act(),
                    };
                    let value = promise * screen.productivity() * LOCAL_COST / act.cost();
                    let better = best.as_ref().is_none_or(|b| value > b.value);
                    if let (true, Some(step)) = (better, &first[at]) {
                        best = Some(Plan {
                            first: step.clone(),
                            goal: at,
                            value,
                            then: Vec::new(),
                        });
                    }
                }
            }
            // Back returns to the screen a move other than back left for this one, when it
            // led there before (a dialog or a menu opened over several screens is one screen
            // whose back has as many outcomes), or when that move started another activity
            // whose back was seen finishing it (a settings page opened from several screens).
            let back_to = match at == from {
                true => came_from,
                false => came[at].filter(|(_, key)| **key != BACK).map(|(at, _)| at),
            };
            for (key, to, learned) in self.moves_learned(at) {
                let to = match back_to {
                    Some(before) if *key == BACK && self.back_returns(at, before) => before,
                    _ => to,
                };
                let walkable = learned && Self::walkable_on(screen, key);
                let next = match (at == from, here.observed, walkable) {
                    // The first move is taken on the screen observed; the walk goes on past it
                    // only when it is learned.
                    (true, _, _) | (_, true, _) => here.then_act_observed(learned),
                    (false, false, true) => here.then_act(),
                    (false, false, false) => here.then_observe().then_act_observed(learned),
                };
                if !done[to] && reach[to].is_none_or(|known| next.cost() < known.cost()) {
                    reach[to] = Some(next);
                    first[to] = first[at]
                        .clone()
                        .or_else(|| Some(Move::Action(key.clone())));
                    came[to] = Some((at, key));
                    queue.push(Queued(next.cost(), to));
                }
            }
            if at == from && relaunch {
                if let Some(launch) = self.launch.filter(|&l| l != from && reach[l].is_none()) {
                    let next = Reach::RELAUNCHED;
                    reach[launch] = Some(next);
                    first[launch] = Some(Move::Relaunch);
                    queue.push(Queued(next.cost(), launch));
                }
            }
        }
        let mut plan = best?;
        let mut at = plan.goal;
        while let Some((before, key)) = came[at] {
            plan.then.push((before, key.clone()));
            at = before;
        }
        plan.then.reverse();
        if matches!(plan.first, Move::Action(_)) {
            plan.then.remove(0);
        }
        Some(plan)
    }

    /// The fewest known moves from `from` to each state (learned moves, an untried back to
    /// where a state was first reached from, a relaunch to the launch screen): None where no
    /// known route leads.
    pub fn moves_from(&self, from: ScreenIndex) -> Vec<Option<u32>> {
        let mut moves = vec![None; self.screens.len()];
        let Some(start) = moves.get_mut(from) else {
            return moves;
        };
        *start = Some(0);
        let mut queue = std::collections::VecDeque::from([from]);
        if let Some(launch) = self.launch.filter(|&l| l != from) {
            moves[launch] = Some(1);
            queue.push_back(launch);
        }
        while let Some(at) = queue.pop_front() {
            let next = moves[at].map_or(0, |m| m + 1);
            for (_, to, _) in self.moves_learned(at) {
                if moves[to].is_none() {
                    moves[to] = Some(next);
                    queue.push_back(to);
                }
            }
        }
        moves
    }

    /// Back on `at`, with its promise (a dismissive widget's), when `at` is a state of the
    /// app's own, other than the launch screen (where back leaves the app), whose back was
    /// never pressed: a goal of [`Graph::plan`], and worth as much on the screen observed.
    pub fn untried_back(&self, at: ScreenIndex) -> Option<(ActionKey, f64)> {
        let screen = self.screens.get(at)?;
        let untried = self.launch != Some(at) && screen.own() && !screen.tried.contains(&BACK);
        untried.then(|| (BACK.clone(), Rank::Dismissive.promise()))
    }

    /// Whether back on `at`, reached from `opener` by a move other than back, shows `opener`
    /// again: it did before, or `at` shows another activity than `opener` and back on it,
    /// whenever it was opened from another activity, showed its opener again. (Back on a
    /// dialog over an activity's first screen shows that screen, not the one that started
    /// the activity.)
    fn back_returns(&self, at: ScreenIndex, opener: ScreenIndex) -> bool {
        self.led_to(at, &BACK, opener)
            || (self.opened_activity(at, opener) && self.back_finishes.get(&at) == Some(&true))
    }

    /// Learns from the outcome `to` of `key` on `from` what [`Graph::back_returns`] asks: the
    /// screen `to` was reached from (kept by a move that leaves the screen as it is or shows
    /// another state of its key), and whether back on another activity's screen showed the
    /// screen that opened it.
    pub(super) fn note_opener(&mut self, from: ScreenIndex, key: &ActionKey, to: ScreenIndex) {
        let opener = self
            .reached_by
            .filter(|(at, _)| *at == from)
            .map(|(_, opener)| opener);
        if let Some(opener) =
            opener.filter(|&opener| *key == BACK && self.opened_activity(from, opener))
        {
            let finishes = self.back_finishes.entry(from).or_insert(true);
            *finishes &= opener == to;
        }
        self.reached_by = match (*key == BACK, self.key(to) == self.key(from)) {
            (_, true) => opener.map(|opener| (to, opener)),
            (false, false) => Some((to, from)),
            (true, false) => None,
        };
    }

    /// Whether `at` shows another activity than `opener` (both known).
    fn opened_activity(&self, at: ScreenIndex, opener: ScreenIndex) -> bool {
        let activity = |screen: ScreenIndex| self.screens[screen].activity.as_deref();
        activity(at).is_some_and(|at| activity(opener).is_some_and(|opener| at != opener))
    }

    /// Whether `key` on `at` led to `to` at least once.
    fn led_to(&self, at: ScreenIndex, key: &ActionKey, to: ScreenIndex) -> bool {
        self.screens[at]
            .edges
            .get(key)
            .is_some_and(|targets| targets.contains_key(&to))
    }

    /// Whether a move learned on `screen` can be taken blind along a walk: a click, scroll or
    /// swipe where its widget was seen, or a back, but for a form's control (its fields need
    /// filling from an observation). [`Graph::plan`] asks it of the moves it knows are learned.
    pub(super) fn walkable_on(screen: &Node, key: &ActionKey) -> bool {
        let placed = (key.is_click() || key.is_gesture()) && screen.places.contains_key(key);
        (*key == BACK || placed) && !screen.controls.contains(key)
    }

    /// [`Graph::walkable_on`] for `key` on `at`, whether learned there or not.
    #[cfg(test)]
    pub(super) fn walkable(&self, at: ScreenIndex, key: &ActionKey) -> bool {
        self.is_learned(at, key)
            && self
                .screens
                .get(at)
                .is_some_and(|s| Self::walkable_on(s, key))
    }

    /// Whether `key`, the best untried action of `goal`, can end a walk blind (see
    /// [`crate::decide::heuristic`]'s walks): a click, scroll or swipe, not a form's control, on
    /// a screen with no field left to fill.
    pub(crate) fn blind_goal(&self, goal: ScreenIndex, key: &ActionKey) -> bool {
        (key.is_click() || key.is_gesture())
            && !self.is_control(goal, key)
            && !self.untried(goal).iter().any(|(k, _, _)| k.is_input())
    }

    /// The known moves from a screen: each tried action that did not stall (see
    /// [`Node::stalled`]) to the other screen it led to most often, and an untried back to the
    /// screen this one was first reached from.
    pub(super) fn moves(
        &self,
        at: ScreenIndex,
    ) -> impl Iterator<Item = (&ActionKey, ScreenIndex)> + '_ {
        self.moves_learned(at).map(|(key, to, _)| (key, to))
    }

    /// [`Graph::moves`], each with whether it is learned (not the untried back).
    ///
    /// Back on the launch screen is no move: right after a relaunch that screen is its task's
    /// root, and back there leaves the app, whatever it showed when the screen was reached on
    /// top of another.
    pub(super) fn moves_learned(
        &self,
        at: ScreenIndex,
    ) -> impl Iterator<Item = (&ActionKey, ScreenIndex, bool)> + '_ {
        let screen = &self.screens[at];
        let root = self.launch == Some(at);
        let learned = screen
            .edges
            .iter()
            .filter(move |(key, _)| !(root && **key == BACK))
            .filter(|(key, _)| !screen.stalled.contains(*key) && !screen.dead.contains(*key))
            .filter_map(move |(key, targets)| {
                let most_seen = targets
                    .iter()
                    .filter(|(&id, _)| id != at)
                    .max_by_key(|(id, n)| (**n, std::cmp::Reverse(**id)))?;
                Some((key, *most_seen.0, true))
            });
        let back = screen
            .parent
            .filter(|_| !root && !screen.edges.contains_key(&BACK))
            .map(|parent| (&BACK, parent, false));
        learned.chain(back)
    }
}
