//! The default decider: coverage-guided exploration over the in-memory [`Graph`].
//!
//! On each observation it weighs the best untried action on this screen against the most valuable
//! untried action elsewhere, reached by the shortest known path (learned edges, an untried back to
//! where a screen was first reached from, a relaunch to the launch screen). An action's value is
//! its rank's promise (text-bearing widgets, fields and the options of a radio list first, then a
//! form's submit, anonymous ones, toggles, dismissive ones and checked radio buttons, risky ones
//! such as "log out" or "delete" last) times its screen's productivity (how many of the screen's
//! tried actions showed a new screen, or a known one in a state not explored yet), divided by the
//! steps it takes. So a new screen is explored first, and a screen whose actions keep showing
//! nothing new is left for more promising ones and finished later. Empty editable fields are filled
//! first, with test credentials where the field asks for an e-mail, user name or password, batched
//! with the form's submit button or toggles, typed into again at once when they show text new to
//! their screen (judged as on an unseen screen), and as a last resort when nothing else on their
//! screen is untried and they show other text. A path's learned moves are walked in one decision,
//! with the goal's untried click or gesture (see [`Walk`]). Back on the launch screen is tried
//! once, when its own actions are all tried or nothing else is worth more; back that leaves the
//! app is followed by a relaunch.
//! A state with nothing else untried is worth its back, never pressed there, as a dismissive
//! widget is: back may show another state of the screen beneath than the one expected.
//! When nothing untried is within reach: back, then relaunch with every route revived. Once no
//! state the graph tells apart has an untried action, a pass over what was found is done: if it
//! found something, another pass begins from a relaunch, changing the app's toggles and options
//! first and then trying every other action once more (what it found may be a state of the app
//! in which tried actions lead on, see [`Graph::retry_changes`]); once a whole pass finds nothing
//! new, the exploration is complete ([`Heuristic::explored`]). The same seed and the same
//! observations give the same decisions.
//!
//! Deciding is split in two: [`Heuristic::choose`] picks the actions and changes nothing but the
//! tie-break generator; [`Heuristic::learn_choice`] takes in what was chosen. A decision made by
//! anyone else (a model, an external program) is taken in by [`Heuristic::learn_decision`]. A
//! stage resuming a recorded run runs exactly these, in the order the run went.

use std::collections::{HashMap, HashSet, VecDeque};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

mod forms;
mod here;
mod walks;

use forms::OptionTry;
use here::Local;
use walks::Walk;

use super::graph::{Graph, Move, Plan, ScreenIndex, UNSEEN_PRODUCTIVITY};
use super::Credentials;
use crate::events::{Action, ActionType, Decision};
use crate::screen::{ActionKey, Rank, Screen, BACK};

/// Consecutive steps that discover nothing (see [`Heuristic::note_idle`]) after which coming
/// back to a screen seen in them counts as going round a cycle.
pub const CYCLE_STEPS: usize = 6;

/// What the reasoning of a relaunch that begins another pass says it does, after "pass N".
pub const NEW_PASS: &str =
    "changes the app's toggles and options, then tries every other action once more";

/// What the heuristic chose for one observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub actions: Vec<Action>,
    /// `Some(package)` when the app should be relaunched (the decision's actions then only go
    /// home).
    pub relaunch: Option<String>,
    /// Why, for a note (`relaunch`, leaving a foreign app, ...).
    pub note: Option<String>,
    /// What taking this choice commits the heuristic to (see [`Heuristic::learn_choice`]).
    commits: Commits,
}

/// What a choice commits the heuristic to, beyond its actions.
#[derive(Debug, Clone, Default, PartialEq)]
struct Commits {
    /// The last actions walk on along a known path, past screens not observed.
    walk: Option<Walk>,
    /// The fields these actions fill on the screen decided on.
    fills: Vec<ActionKey>,
    /// The form's submit buttons, to try again: these actions change one of its options.
    resubmit: Vec<ActionKey>,
    /// The form option these actions click, on the form filled or as found.
    option: Option<OptionTry>,
    /// Nothing was left: dead routes get another chance after the relaunch.
    revive: bool,
    /// Nothing was left and the pass over what was found found something: another pass
    /// begins (see [`Graph::retry_changes`]).
    retry: bool,
    /// The pass's toggles and options left are out of reach: the rest of its actions are
    /// opened (see [`Graph::retry_rest`]).
    rest: bool,
    /// The goals a model named (see [`Heuristic::set_goals`]) this choice is done with, first
    /// to last: tried, or out of reach.
    goals_done: usize,
    /// The choice is a step on the way to the goal after those.
    towards_goal: bool,
}

/// A state a model asked the exploration to go to (`visit`), and the widget to try there.
#[derive(Debug, Clone, PartialEq)]
struct Goal {
    screen: ScreenIndex,
    /// The label of the untried widget to try there.
    element: Option<String>,
    /// Choices made on the way so far.
    steps: u32,
}

/// Choices on the way to a model's goal before it is given up: a route known to the graph is
/// walked in a few decisions, learned moves several to one.
pub const GOAL_STEPS: u32 = 6;

impl Choice {
    fn new(actions: Vec<Action>) -> Choice {
        Choice {
            actions,
            relaunch: None,
            note: None,
            commits: Commits::default(),
        }
    }

    /// The decision for this choice (run, step, time and decider left to the caller): its
    /// relaunch goes in the decision's `relaunch`, which droid-act carries out.
    pub fn to_decision(&self) -> Decision {
        let mut decision = Decision::new(self.actions.clone());
        decision.relaunch = self.relaunch.clone();
        decision
    }
}

/// The heuristic's state across a run.
pub struct Heuristic {
    graph: Graph,
    rng: ChaCha8Rng,
    credentials: Credentials,
    package: Option<String>,
    allowed_packages: Vec<String>,
    /// The actions of the last decision, by position, each with the screen it was meant for
    /// (a walk's moves are meant for the screens it expects to pass, see
    /// [`Heuristic::learn_walk`]): the next observation is the outcome of one of them (see
    /// [`crate::screen::outcome`]).
    taken: Vec<(usize, ScreenIndex, ActionKey)>,
    /// The last of them is a walk goal's untried action.
    walked_to_untried: bool,
    /// The first of them taken blind, along a walk (`usize::MAX` when none was).
    blind_from: usize,
    /// Walk goals' untried actions whose walk came back to a screen it passed (see
    /// [`Heuristic::observe`]).
    stalled_goals: HashSet<(ScreenIndex, ActionKey)>,
    /// The steps since the last one that discovered something (see
    /// [`Heuristic::note_idle`]): each observed screen, with the learned moves decided on it.
    idle: Vec<(ScreenIndex, Vec<(ScreenIndex, ActionKey)>)>,
    current: Option<ScreenIndex>,
    /// Consecutive observations of another app.
    foreign_steps: u32,
    /// Times each field was filled, per screen.
    fills: HashMap<(ScreenIndex, ActionKey), u32>,
    /// Times each action was made worth trying again, per screen: a form's submit after a
    /// change to the form, an option owed a try on the form as found.
    retries: HashMap<(ScreenIndex, ActionKey), u32>,
    /// Every text typed so far, to recognise fields that are already filled.
    typed: HashSet<String>,
    /// Form options clicked on the form filled, and those clicked since on the form as found
    /// (see [`Heuristic::option_as_found`]), per screen.
    options_filled: HashSet<(ScreenIndex, ActionKey)>,
    as_found: HashSet<(ScreenIndex, ActionKey)>,
    /// Texts each field showed that were not typed here (the app's own: a file name, an item's
    /// name in an edit dialog), per screen.
    prefills: HashMap<(ScreenIndex, ActionKey), HashSet<String>>,
    /// The fields of the current observation showing such text new to their screen, by
    /// element id: the screen is in a state not explored yet (see [`Heuristic::observe`]).
    renewed: HashSet<u32>,
    /// A relaunch was decided: the next observation is the launch screen.
    relaunching: bool,
    /// The last observation is another app's screen, shown by back on the app's own.
    left_by_back: bool,
    /// Choices that found nothing untried anywhere and relaunched with every route revived,
    /// since the last discovery (see [`Heuristic::explored`]).
    revived: u32,
    /// Passes over every action of what was found: the first, and one more each time a pass
    /// that found something left nothing untried (see [`Graph::retry_changes`]).
    passes: u32,
    /// The current pass discovered something (see [`Heuristic::observe`]).
    found_in_pass: bool,
    /// The last choice began a pass: the one before left nothing untried.
    began_pass: bool,
    /// Where a model asked the exploration to go, in order.
    goals: VecDeque<Goal>,
}

impl Heuristic {
    pub fn new(seed: u64, credentials: Credentials) -> Heuristic {
        Heuristic {
            graph: Graph::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            credentials,
            package: None,
            allowed_packages: Vec::new(),
            taken: Vec::new(),
            walked_to_untried: false,
            blind_from: usize::MAX,
            stalled_goals: HashSet::new(),
            idle: Vec::new(),
            current: None,
            foreign_steps: 0,
            fills: HashMap::new(),
            typed: HashSet::new(),
            prefills: HashMap::new(),
            renewed: HashSet::new(),
            options_filled: HashSet::new(),
            as_found: HashSet::new(),
            retries: HashMap::new(),
            relaunching: false,
            left_by_back: false,
            revived: 0,
            passes: 1,
            found_in_pass: false,
            began_pass: false,
            goals: VecDeque::new(),
        }
    }

    /// Takes the exploration to states a model named, one after the other: for each, the next
    /// choices walk the graph's cheapest known route to a state of its key and try the widget
    /// labelled as named there, unless it is out of reach, the widget is not untried there, or
    /// [`GOAL_STEPS`] choices do not get there.
    pub fn set_goals(&mut self, goals: impl IntoIterator<Item = (ScreenIndex, Option<String>)>) {
        self.goals = goals
            .into_iter()
            .map(|(screen, element)| Goal {
                screen,
                element,
                steps: 0,
            })
            .collect();
    }

    /// Drops the goals a model named.
    pub fn clear_goals(&mut self) {
        self.goals.clear();
    }

    /// The state of the screen observed last.
    pub fn current(&self) -> Option<ScreenIndex> {
        self.current
    }

    /// Whether a goal a model named is being walked to.
    pub fn walks_to_goal(&self) -> bool {
        !self.goals.is_empty()
    }

    /// Whether the exploration is complete: no state of the app it tells apart has an action
    /// not tried, nothing was left to reach, a relaunch with every route revived found nothing
    /// new, and the last pass over every action found nothing new either. A pass that found
    /// something is followed by another (the app's toggles and options changed, then every
    /// other action tried once more, see [`Graph::retry_changes`]), since what it found may be
    /// a state of the app in which tried actions lead on. A state left with untried actions
    /// that no known route reaches keeps the exploration going (relaunching, reviving routes,
    /// passes) until a limit ends the run: "explored" is never said of an app with something
    /// known and not tried, nor before the outcome of the last action taken is seen (a walk
    /// that ends on the last untried action may show something new).
    pub fn explored(&self) -> bool {
        self.revived > 0
            && !self.found_in_pass
            && self.taken.is_empty()
            && self.graph.tally().never_tried() == 0
    }

    /// Whether the last choice ended a pass over every action of what was found and began
    /// another: the heuristic had nothing left to try (a hybrid's cue to ask its model).
    pub fn began_pass(&self) -> bool {
        self.began_pass
    }

    /// Passes over every action of what was found so far (1 until the first one ends).
    pub fn passes(&self) -> u32 {
        self.passes
    }

    /// The app under test (back out of, and relaunch, when the device leaves it) and the other
    /// packages the exploration may enter.
    pub fn set_package(&mut self, package: Option<String>, allowed: Vec<String>) {
        self.package = package;
        self.allowed_packages = allowed;
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The state of its screen the last observation showed, when the graph holds that screen
    /// in more than one state (see [`Graph::screen_state`]).
    pub fn screen_state(&self) -> Option<crate::events::ScreenState> {
        self.current
            .and_then(|screen| self.graph.screen_state(screen))
    }

    /// Whether the screen is another app's (allowed or not).
    fn is_other_app(&self, shown: &Screen) -> bool {
        matches!(
            (&self.package, &shown.observation().package),
            (Some(app), Some(package)) if package != app
        )
    }

    /// Whether the screen shows an app the exploration should not be in.
    fn is_foreign(&self, shown: &Screen) -> bool {
        self.is_other_app(shown)
            && shown
                .observation()
                .package
                .as_ref()
                .is_some_and(|package| !self.allowed_packages.contains(package))
    }

    /// Takes in an observation: identifies its screen, notes the text its fields show and
    /// learns the edge of the last action. A known screen whose field shows text of the app's
    /// own new to it (an empty note where a written one was seen, the same save dialog for
    /// another file) is in a state not explored yet: the action that showed it counts as one
    /// that showed a new screen, and the form's submits are worth trying again. A screen of
    /// another app is marked so no path aims at it; fields this screen will not fill are marked
    /// tried, so a field left empty here does not make a goal of it elsewhere.
    pub fn observe(&mut self, shown: &Screen) -> ScreenIndex {
        let mut screen = self.graph.observe(shown);
        self.renewed = self.note_prefills(screen, shown);
        let renewed = !self.renewed.is_empty();
        let taken = std::mem::take(&mut self.taken);
        let mut discovered = renewed || self.graph.visits(screen) == 1;
        let mut outcome = crate::screen::outcome(&taken, |t| &t.1, &screen);
        // A walk to an untried action that comes back to a screen it passed, a second time:
        // that is what the action does (a submenu's item closing the menu it opened from),
        // not a move that went nowhere.
        if let (Some((_, true)), Some(goal)) = (&outcome, taken.last()) {
            let again = !self.stalled_goals.insert((goal.1, goal.2.clone()));
            if again && self.walked_to_untried {
                outcome = Some((goal, false));
            }
        }
        self.left_by_back = false;
        if let Some(((index, from, key), stalled)) = outcome {
            let (from, key) = (*from, key.clone());
            self.left_by_back =
                key == BACK && self.is_other_app(shown) && !self.graph.is_guest(from);
            // What an action does, seen after it was taken where it was observed, is something
            // found; an outcome of a blind move may be the walk's going astray.
            discovered |= *index < self.blind_from && !self.graph.is_learned(from, &key);
            screen = self.graph.record_edge(from, &key, screen, renewed);
            // The outcome may have told the screen's key apart into states: this one is new.
            discovered |= self.graph.visits(screen) == 1;

            match stalled {
                // Back on a screen the walk passed: the move from there went nowhere (a link
                // dead in this state of the app), and the actions after it were not taken where
                // meant.
                true => {
                    if let Some((_, at, last)) = taken.last().filter(|_| self.walked_to_untried) {
                        self.graph.mark_untried(*at, last);
                    }
                }
                // Until then, the form stays worth coming back to, a bounded number of times
                // (see [`MAX_RETRIES`]).
                false => {
                    if self.owes_as_found(from, &key) {
                        self.retry(from, key);
                    }
                }
            }
        }
        if renewed {
            self.retry_submits(screen, shown.submits());
        }
        self.note_idle(screen, &taken, discovered);
        // A new pass changed the app's state: the rest of its actions are tried in that state.
        if self.graph.changing() && self.graph.changes_left() == 0 {
            self.graph.retry_rest();
        }
        if discovered {
            self.revived = 0;
            self.found_in_pass = true;
        }
        if std::mem::take(&mut self.relaunching) || self.graph.launch().is_none() {
            self.graph.set_launch(screen);
        }
        self.current = Some(screen);
        if self.is_foreign(shown) {
            self.graph.mark_outside(screen);
            self.foreign_steps += 1;
            return screen;
        }
        self.foreign_steps = 0;
        // Back from the app's own screen left it (its first screen's back, a task that began
        // in another app): the other app is no part of the exploration, allowed or not.
        if self.left_by_back {
            self.graph.mark_outside(screen);
            return screen;
        }
        if self.package.is_some() && shown.observation().package != self.package {
            self.graph.mark_guest(screen);
        }
        let untried_control = self
            .untried_widgets(shown, screen)
            .iter()
            .any(|w| w.control);
        let (_, _, passed) = self.fields_to_fill(screen, shown, untried_control);
        for key in passed {
            self.graph.mark_tried(screen, &key);
        }
        screen
    }

    /// Keeps the steps since the last one that discovered something (a screen seen for the
    /// first time, a known one in a state not explored yet, or what an action taken on an
    /// observed screen does). When more than [`CYCLE_STEPS`] such steps come back to a screen
    /// seen in them, the exploration is going round a cycle: walks that do not go where the
    /// graph says (a form submitted empty, a route dead in this state of the app) bring it
    /// back to where it was, and every round spends an untried action blind. The learned moves
    /// taken since that screen was last seen stop being routes, as dead ones do, until nothing
    /// else is left (see [`Graph::revive_dead`]).
    fn note_idle(
        &mut self,
        screen: ScreenIndex,
        taken: &[(usize, ScreenIndex, ActionKey)],
        discovered: bool,
    ) {
        if let Some((_, moves)) = self.idle.last_mut() {
            moves.extend(
                taken
                    .iter()
                    .filter(|(_, at, key)| self.graph.is_learned(*at, key))
                    .map(|(_, at, key)| (*at, key.clone())),
            );
        }
        if discovered {
            self.idle.clear();
        }
        let again = self.idle.iter().rposition(|(seen, _)| *seen == screen);
        if let Some(since) = again.filter(|_| self.idle.len() >= CYCLE_STEPS) {
            for (_, moves) in self.idle.drain(since..) {
                for (at, key) in moves {
                    self.graph.distrust(at, &key);
                }
            }
            self.idle.clear();
        }
        self.idle.push((screen, Vec::new()));
    }

    /// Learns that the app was relaunched (by this heuristic or anyone): the next observation
    /// shows the launch screen, and no action's edge leads there.
    pub fn learn_relaunch(&mut self) {
        self.relaunching = true;
        self.foreign_steps = 0;
        self.graph.app_restarted();
        self.taken.clear();
    }

    /// Learns that the action at `index` of the last decision failed: it was not taken.
    pub fn learn_failure(&mut self, index: usize) {
        self.taken.retain(|&(at, _, _)| at != index);
    }

    /// Learns that the action at `index` of a decision (chosen by anyone: this heuristic, a
    /// model, an external program) was taken on the current screen.
    fn learn_action(&mut self, shown: &Screen, index: usize, action: &Action) {
        let Some(screen) = self.current else { return };
        let Some(key) = shown.key_of(action) else {
            return;
        };
        self.graph.mark_tried(screen, &key);
        self.taken.push((index, screen, key));
    }

    /// Takes in a decision made by anyone else (a model, an external program) on the current
    /// screen: its inputs count as fills, its actions as tried, its relaunch as a restart.
    pub fn learn_decision(&mut self, shown: &Screen, decision: &Decision) {
        self.walked_to_untried = false;
        self.blind_from = usize::MAX;
        for (index, action) in decision.actions.iter().enumerate() {
            if action.action == ActionType::Input {
                self.learn_fill(shown, action);
            }
            self.learn_action(shown, index, action);
        }
        if decision.relaunch.is_some() {
            self.learn_relaunch();
        }
    }

    /// Takes in this heuristic's own choice for the current screen (see [`Heuristic::choose`]):
    /// the texts it types, the fills, retries and form options it commits to, its actions and
    /// walk, and its relaunch.
    pub fn learn_choice(&mut self, shown: &Screen, choice: &Choice) {
        let Some(screen) = self.current else { return };
        let commits = &choice.commits;
        for text in choice.actions.iter().filter_map(|a| a.input_text.as_ref()) {
            self.typed.insert(text.clone());
        }
        for key in &commits.fills {
            *self.fills.entry((screen, key.clone())).or_default() += 1;
        }
        self.retry_submits(screen, commits.resubmit.clone());
        match &commits.option {
            Some(OptionTry::Filled(key)) => self.options_filled.insert((screen, key.clone())),
            Some(OptionTry::AsFound(key)) => self.as_found.insert((screen, key.clone())),
            None => false,
        };
        if commits.revive {
            self.graph.revive_dead();
            self.revived += 1;
        }
        self.began_pass = commits.retry;
        if commits.retry {
            if self.graph.retry_changes() == 0 {
                self.graph.retry_rest();
            }
            self.passes += 1;
            self.found_in_pass = false;
            self.revived = 0;
        }
        if commits.rest {
            self.graph.retry_rest();
        }
        self.goals.drain(..commits.goals_done.min(self.goals.len()));
        if let Some(goal) = self.goals.front_mut().filter(|_| commits.towards_goal) {
            goal.steps += 1;
            if goal.steps >= GOAL_STEPS {
                self.goals.pop_front();
            }
        }
        let walked = commits.walk.as_ref().map_or(0, Walk::actions);
        let first_walked = choice.actions.len() - walked;
        self.walked_to_untried = false;
        self.blind_from = match commits.walk {
            Some(_) => first_walked,
            None => usize::MAX,
        };
        for (index, action) in choice.actions[..first_walked].iter().enumerate() {
            self.learn_action(shown, index, action);
        }
        if let Some(walk) = &commits.walk {
            self.learn_walk(walk, first_walked);
        }
        if choice.relaunch.is_some() {
            self.learn_relaunch();
        }
    }

    /// Observes, chooses and takes the choice in.
    pub fn decide(&mut self, shown: &Screen) -> Choice {
        self.observe(shown);
        let choice = self.choose(shown);
        self.learn_choice(shown, &choice);
        choice
    }

    /// Chooses for a screen taken in with [`Heuristic::observe`]. Changes nothing but the
    /// tie-break generator: what the choice commits to is learned by
    /// [`Heuristic::learn_choice`].
    pub fn choose(&mut self, shown: &Screen) -> Choice {
        let mut done = 0;
        let mut dropped = Vec::new();
        for goal in self.goals.clone() {
            match self.towards_goal(shown, &goal) {
                None => break,
                Some(Ok(mut choice)) => {
                    choice.commits.goals_done += done;
                    return choice;
                }
                Some(Err(why)) => {
                    done += 1;
                    dropped.push(why);
                }
            }
        }
        let mut choice = self.explore(shown);
        choice.commits.goals_done = done;
        if !dropped.is_empty() {
            let why = dropped.join("; ");
            choice.note = Some(
                choice
                    .note
                    .map_or(why.clone(), |note| format!("{why}; {note}")),
            );
        }
        choice
    }

    /// The choice on the way to a goal a model named (see [`Heuristic::set_goals`]): the
    /// first moves of the cheapest known route to it, and its widget tried once there. None
    /// where the app is left; the reason the goal is dropped when no route reaches it or its
    /// widget is not untried there.
    fn towards_goal(&mut self, shown: &Screen, goal: &Goal) -> Option<Result<Choice, String>> {
        let screen = self.current?;
        if self.left_by_back || self.is_foreign(shown) {
            return None;
        }
        let key = self.graph.key(goal.screen)?.clone();
        let named = goal
            .element
            .as_deref()
            .unwrap_or("its most promising action");
        if self.graph.key(screen) == Some(&key) {
            let untried = goal
                .element
                .as_deref()
                .and_then(|label| self.graph.untried_labelled(screen, label));
            let Some(actions) = untried.and_then(|key| self.replay(shown, &key)) else {
                return Some(Err(format!(
                    "the model's goal is reached, but \"{named}\" is not untried there"
                )));
            };
            let mut choice = Choice::new(actions);
            if let Some(last) = choice.actions.last_mut() {
                last.reasoning = Some(format!("the model's goal: \"{named}\""));
            }
            choice.commits.goals_done = 1;
            return Some(Ok(choice));
        }
        let Some(plan) = self.graph.plan_to(screen, &key, self.package.is_some()) else {
            return Some(Err(format!(
                "no known route reaches the model's goal (\"{named}\")"
            )));
        };
        let Some(mut choice) = self.follow(shown, screen, &plan) else {
            return Some(Err(format!(
                "the way to the model's goal (\"{named}\") is not on this screen"
            )));
        };
        if let Some(first) = choice.actions.first_mut() {
            first.reasoning = Some(format!("on the way to the model's goal (\"{named}\")"));
        }
        match choice
            .commits
            .walk
            .as_ref()
            .is_some_and(|walk| walk.tries().is_some())
        {
            true => choice.commits.goals_done = 1,
            false => choice.commits.towards_goal = true,
        }
        Some(Ok(choice))
    }

    /// The exploration's own choice on the screen shown (see [`Heuristic::choose`]).
    fn explore(&mut self, shown: &Screen) -> Choice {
        let Some(screen) = self.current else {
            return back("nothing observed yet".into());
        };
        if self.left_by_back {
            return self.relaunch("back left the app");
        }
        if self.is_foreign(shown) {
            return if self.foreign_steps > super::BACKS_OUTSIDE_THE_APP {
                self.relaunch("still outside the app after going back")
            } else {
                back(format!(
                    "{} is outside the app under test",
                    shown
                        .observation()
                        .package
                        .as_deref()
                        .unwrap_or("this package")
                ))
            };
        }
        let local = self.untried_here(shown, screen);
        let here = local.as_ref().map(|local| self.value_here(screen, local));
        let shown_untried = self.shown_untried(shown, screen);
        let plan = self
            .graph
            .plan(screen, self.package.is_some(), &shown_untried);
        let best = here.into_iter().chain(plan.as_ref().map(|p| p.value));
        let own_tried = here.is_none() && self.package.is_some();
        if self.back_on_first_screen(screen, own_tried, best.fold(0.0, f64::max)) {
            return back("what the app does on back from its first screen".into());
        }
        // With nothing else here, a back never pressed is worth what it is worth elsewhere (a
        // goal of the plan): a dismissive widget's promise.
        let back_here = self
            .graph
            .untried_back(screen)
            .filter(|_| here.is_none())
            .map(|(_, promise)| self.graph.value_here(screen, promise));
        let here = here.or(back_here);
        if let Some(plan) = plan.filter(|plan| here.is_none_or(|here| plan.value > here)) {
            if let Some(choice) = self.follow(shown, screen, &plan) {
                return choice;
            }
        }
        if let Some(local) = local {
            let mut choice = Choice::new(local.actions);
            choice.commits.fills = local.fills;
            choice.commits.resubmit = local.resubmit;
            choice.commits.option = local.option;
            return choice;
        }
        if !self.graph.is_tried(screen, &BACK) {
            return back(
                "back was never pressed here, and nothing untried here or on a known path is \
                 worth more"
                    .into(),
            );
        }
        if self.graph.changing() {
            let mut choice = self.relaunch(
                "the toggles and options left are out of reach: the pass tries the rest of \
                 what was found",
            );
            choice.commits.rest = true;
            return choice;
        }
        let tally = self.graph.tally();
        // Nothing left the pass can reach but actions an earlier pass tried: the pass is done,
        // and so it is when what is left stayed out of reach after a relaunch with every route
        // revived (another pass may bring the app to the state that shows it).
        let done = match tally.never_tried() {
            0 if self.found_in_pass => Some(format!(
                "every action of the {} states found is tried ({} actions) and pass {} found \
                 something new",
                tally.states, tally.actions, self.passes
            )),
            0 => None,
            left if self.revived > 0 => Some(format!(
                "{left} actions not tried on {} states no known route reaches, even with every \
                 route revived",
                tally.states_left
            )),
            _ => None,
        };
        if let Some(done) = done {
            let mut choice = self.relaunch(&format!("{done}: pass {} {NEW_PASS}", self.passes + 1));
            choice.commits.revive = true;
            choice.commits.retry = true;
            return choice;
        }
        let mut choice = match tally.never_tried() {
            0 => self.relaunch(&format!(
                "everything the exploration found is explored: {} states, {} actions",
                tally.states, tally.actions
            )),
            left => self.relaunch(&format!(
                "nothing left to explore from here; {left} actions not tried on {} states no \
                 known route reaches",
                tally.states_left
            )),
        };
        choice.commits.revive = true;
        choice
    }

    /// The plan's first move on the screen shown, and the walk after it when that move is
    /// learned: none when the move's widget is not on the screen.
    fn follow(&mut self, shown: &Screen, screen: ScreenIndex, plan: &Plan) -> Option<Choice> {
        let key = match plan.first.clone() {
            Move::Relaunch => {
                return Some(self.relaunch("the launch screen leads to what is left untried"))
            }
            Move::Action(key) => key,
        };
        let mut actions = self.replay(shown, &key)?;
        let walk = match self.graph.is_learned(screen, &key) {
            true => {
                let room = Decision::MAX_ACTIONS.saturating_sub(actions.len());
                self.walk(plan, room)
            }
            false => None,
        };
        let walk = walk.map(|(walk, taken)| {
            actions.extend(taken);
            walk
        });
        let mut choice = Choice::new(actions);
        choice.commits.walk = walk;
        Some(choice)
    }

    /// Whether to press back on the launch screen now: once, when its own actions are all
    /// tried and a relaunch can bring the app back (`own_tried`), or when nothing else is worth
    /// more (`best`). What an app does there (an exit dialog, a crash on leaving, the screen it
    /// leaves to) is something a tester tries once the first screen is known, before going
    /// deeper; otherwise it is worth a dismissive widget's promise, halved since coming back
    /// takes a relaunch.
    fn back_on_first_screen(&self, screen: ScreenIndex, own_tried: bool, best: f64) -> bool {
        let value = self.graph.value_here(screen, Rank::Dismissive.promise()) / 2.0;
        self.graph.launch() == Some(screen)
            && !self.graph.is_tried(screen, &BACK)
            && (own_tried || best < value)
    }

    /// What the best untried actions here are worth. A screen in a state not explored yet
    /// (a field shows new text of the app's own: an empty note where a written one was seen,
    /// the same widgets) is judged as an unseen screen is, not by what its other states showed.
    fn value_here(&self, screen: ScreenIndex, local: &Local) -> f64 {
        let value = self.graph.value_here(screen, local.promise);
        match local.renewed {
            true => value.max(local.promise * UNSEEN_PRODUCTIVITY),
            false => value,
        }
    }

    fn relaunch(&self, why: &str) -> Choice {
        let package = self.package.clone().unwrap_or_default();
        let mut choice = Choice::new(vec![super::relaunch_action(&package, why)]);
        choice.relaunch = Some(package);
        choice.note = Some(format!("relaunch: {why}"));
        choice
    }
}

fn scroll_down(why: &str) -> Action {
    let mut action = Action::new(ActionType::ScrollDown);
    action.action_desc = Some("scroll the screen down".into());
    action.reasoning = Some(why.to_string());
    action
}

fn back(why: String) -> Choice {
    let mut action = Action::new(ActionType::Back);
    action.action_desc = Some("press back".into());
    action.reasoning = Some(why);
    Choice::new(vec![action])
}
