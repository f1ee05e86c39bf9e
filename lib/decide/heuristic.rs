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
//! When nothing untried is known: back, then relaunch with every route revived; when such
//! relaunches keep finding nothing, the exploration is complete ([`Heuristic::explored`]). The
//! same seed and the same observations give the same decisions.
//!
//! Deciding is split in two: [`Heuristic::choose`] picks the actions and changes nothing but the
//! tie-break generator; [`Heuristic::learn_choice`] takes in what was chosen. A decision made by
//! anyone else (a model, an external program) is taken in by [`Heuristic::learn_decision`]. A
//! stage resuming a recorded run runs exactly these, in the order the run went.

use std::collections::{BTreeSet, HashMap, HashSet};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::graph::{Graph, Place, Plan, ScreenId, Step, UNSEEN_PRODUCTIVITY};
use super::Credentials;
use crate::events::{Action, ActionType, Decision};
use crate::screen::{
    action_on, bounding_box, controls, is_submit, shape, target_of, ActionKey, Rank, Screen,
    Widget, BACK, SCROLL,
};
use crate::ui::{is_actionable, UiElement};

/// Consecutive decisions outside the app before a relaunch instead of another back.
const BACKS_BEFORE_RELAUNCH: u32 = 1;

/// Times a field is filled on one screen (forms are emptied when left and entered again).
const MAX_FILLS: u32 = 3;

/// Times an action is made worth trying again on one screen: a form's submit after a change to
/// the form, an option owed a try on the form as found (which a click on the form filled, or
/// a walk's blind tap, uses up: once spent, the as-found try is no longer sought).
const MAX_RETRIES: u32 = 3;

/// The promise of typing again into fields filled before when nothing else on their screen is
/// untried (an editor or a search box whose screen merged with one that held other text): less
/// than any untried widget's.
const REFILL_PROMISE: f64 = 0.1;

/// Consecutive steps that discover nothing (see [`Heuristic::note_idle`]) after which coming
/// back to a screen seen in them counts as going round a cycle.
pub const CYCLE_STEPS: usize = 6;

/// Rounds with every route revived that may discover nothing before the exploration is
/// complete (see [`Heuristic::explored`]): a walk along a revived route that went astray may
/// go elsewhere the next time, since the routes given up on differ from round to round.
const ROUNDS_WITHOUT_DISCOVERY: u32 = 2;

/// The shortest start of a typed text taken for that text cut short (see
/// [`Heuristic::shows_typed_text`]).
const MIN_CUT_TEXT: usize = 3;

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
}

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

/// Moves along a known path taken blind in the same decision as its first move, and the
/// goal's untried action at its end: their actions are the decision's last.
#[derive(Debug, Clone, PartialEq)]
struct Walk {
    /// Learned moves (taps on where their widgets were seen, backs), in order.
    moves: Vec<ActionKey>,
    /// The untried action taken on the path's goal.
    then: Option<ActionKey>,
}

impl Walk {
    /// The decision's actions it accounts for.
    fn actions(&self) -> usize {
        self.moves.len() + usize::from(self.then.is_some())
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
    taken: Vec<(usize, ScreenId, ActionKey)>,
    /// The last of them is a walk goal's untried action.
    walked_to_untried: bool,
    /// The first of them taken blind, along a walk (`usize::MAX` when none was).
    blind_from: usize,
    /// Walk goals' untried actions whose walk came back to a screen it passed (see
    /// [`Heuristic::observe`]).
    stalled_goals: HashSet<(ScreenId, ActionKey)>,
    /// The steps since the last one that discovered something (see
    /// [`Heuristic::note_idle`]): each observed screen, with the learned moves decided on it.
    idle: Vec<(ScreenId, Vec<(ScreenId, ActionKey)>)>,
    current: Option<ScreenId>,
    /// Consecutive observations of another app.
    foreign_steps: u32,
    /// Times each field was filled, per screen.
    fills: HashMap<(ScreenId, ActionKey), u32>,
    /// Times each action was made worth trying again, per screen: a form's submit after a
    /// change to the form, an option owed a try on the form as found.
    retries: HashMap<(ScreenId, ActionKey), u32>,
    /// Every text typed so far, to recognise fields that are already filled.
    typed: HashSet<String>,
    /// Form options clicked on the form filled, and those clicked since on the form as found
    /// (see [`Heuristic::option_as_found`]), per screen.
    options_filled: HashSet<(ScreenId, ActionKey)>,
    as_found: HashSet<(ScreenId, ActionKey)>,
    /// Texts each field showed that were not typed here (the app's own: a file name, an item's
    /// name in an edit dialog), per screen.
    prefills: HashMap<(ScreenId, ActionKey), HashSet<String>>,
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
}

/// Editable fields with their action keys.
type Fields<'a> = Vec<(&'a UiElement, ActionKey)>;

/// The best untried actions on the current screen.
struct Local {
    actions: Vec<Action>,
    /// See [`Graph::promise`].
    promise: f64,
    /// The fields those actions fill.
    fills: Vec<ActionKey>,
    /// The form's submit buttons, to try again: those actions change one of its options.
    resubmit: Vec<ActionKey>,
    /// A field among those filled shows text of the app's own new to this screen: the screen
    /// is in a state not explored yet (see [`Heuristic::untried_here`]).
    renewed: bool,
    /// The form option these actions click, on the form filled or as found.
    option: Option<OptionTry>,
}

/// How a form option is clicked (see [`Heuristic::option_as_found`]).
#[derive(Debug, Clone, PartialEq)]
enum OptionTry {
    Filled(ActionKey),
    AsFound(ActionKey),
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
        }
    }

    /// Whether the exploration is complete: nothing untried was left, the app was relaunched
    /// with every route revived, and that happened `ROUNDS_WITHOUT_DISCOVERY` (2) times more
    /// with nothing discovered since the first (walks along revived routes that go astray again
    /// find nothing). Choosing on would go round the same moves; droid-crawl ends the run.
    pub fn explored(&self) -> bool {
        self.revived > ROUNDS_WITHOUT_DISCOVERY
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
    pub fn observe(&mut self, shown: &Screen) -> ScreenId {
        let screen = self.graph.observe(shown);
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
            self.graph.record_edge(from, &key, screen, renewed);

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
        if discovered {
            self.revived = 0;
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
        screen: ScreenId,
        taken: &[(usize, ScreenId, ActionKey)],
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

    /// Learns a text typed into a field of the current screen: it counts as typed, and the
    /// fill is counted.
    fn learn_fill(&mut self, shown: &Screen, action: &Action) {
        let (Some(screen), Some(text)) = (self.current, action.input_text.as_ref()) else {
            return;
        };
        let Some(element) = target_of(shown.observation(), action) else {
            return;
        };
        self.typed.insert(text.clone());
        *self
            .fills
            .entry((screen, ActionKey::of(element)))
            .or_default() += 1;
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

    /// Learns a walk taken after the pending action: the screens it passed are taken to be
    /// those the graph knows, so the next observation is the outcome of its last action on the
    /// screen it expected there, unless it shows one of the screens passed, where the move taken
    /// then must have stalled.
    fn learn_walk(&mut self, walk: &Walk, first: usize) {
        let Some((_, mut at, mut key)) = self.taken.last().cloned() else {
            return;
        };
        for (index, next) in (first..).zip(walk.moves.iter().chain(&walk.then)) {
            let Some(to) = self.graph.follow(at, &key) else {
                // Off the known path: no outcome to learn.
                self.taken.clear();
                return;
            };
            (at, key) = (to, next.clone());
            self.taken.push((index, at, key.clone()));
        }
        self.walked_to_untried = walk.then.is_some();
        self.graph.mark_tried(at, &key);
        self.current = Some(at);
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
        let Some(screen) = self.current else {
            return back("nothing observed yet".into());
        };
        if self.left_by_back {
            return self.relaunch("back left the app");
        }
        if self.is_foreign(shown) {
            return if self.foreign_steps > BACKS_BEFORE_RELAUNCH {
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
        if let Some(plan) = plan.filter(|plan| here.is_none_or(|here| plan.value > here)) {
            match plan.first.clone() {
                Step::Relaunch => {
                    return self.relaunch("the launch screen leads to untried actions")
                }
                Step::Action(key) => {
                    if let Some(mut actions) = self.replay(shown, &key) {
                        let walk = match self.graph.is_learned(screen, &key) {
                            true => {
                                let room = Decision::MAX_ACTIONS.saturating_sub(actions.len());
                                self.walk(&plan, room)
                            }
                            false => None,
                        };
                        let walk = walk.map(|(walk, taken)| {
                            actions.extend(taken);
                            walk
                        });
                        let mut choice = Choice::new(actions);
                        choice.commits.walk = walk;
                        return choice;
                    }
                }
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
            return back("every action here is explored and no known path leads further".into());
        }
        let mut choice = match self.revived >= ROUNDS_WITHOUT_DISCOVERY {
            true => self.relaunch("everything the exploration found is explored"),
            false => self.relaunch("nothing left to explore from here"),
        };
        choice.commits.revive = true;
        choice
    }

    /// Whether to press back on the launch screen now: once, when its own actions are all
    /// tried and a relaunch can bring the app back (`own_tried`), or when nothing else is worth
    /// more (`best`). What an app does there (an exit dialog, a crash on leaving, the screen it
    /// leaves to) is something a tester tries once the first screen is known, before going
    /// deeper; otherwise it is worth a dismissive widget's promise, halved since coming back
    /// takes a relaunch.
    fn back_on_first_screen(&self, screen: ScreenId, own_tried: bool, best: f64) -> bool {
        let value = self.graph.value_here(screen, Rank::Dismissive.promise()) / 2.0;
        self.graph.launch() == Some(screen)
            && !self.graph.is_tried(screen, &BACK)
            && (own_tried || best < value)
    }

    /// What the best untried actions here are worth. A screen in a state not explored yet
    /// (a field shows new text of the app's own: an empty note where a written one was seen,
    /// the same widgets) is judged as an unseen screen is, not by what its other states showed.
    fn value_here(&self, screen: ScreenId, local: &Local) -> f64 {
        let value = self.graph.value_here(screen, local.promise);
        match local.renewed {
            true => value.max(local.promise * UNSEEN_PRODUCTIVITY),
            false => value,
        }
    }

    /// Makes a form's submit buttons worth trying again.
    fn retry_submits(&mut self, screen: ScreenId, keys: Vec<ActionKey>) {
        for key in keys {
            self.retry(screen, key);
        }
    }

    /// Makes an action worth trying again, up to [`MAX_RETRIES`] times.
    fn retry(&mut self, screen: ScreenId, key: ActionKey) {
        let times = self.retries.entry((screen, key.clone())).or_default();
        if *times < MAX_RETRIES {
            *times += 1;
            self.graph.mark_untried(screen, &key);
        }
    }

    /// Notes the text of the app's own each field shows, and returns the fields showing text
    /// they did not show before on this screen.
    fn note_prefills(&mut self, screen: ScreenId, shown: &Screen) -> HashSet<u32> {
        shown
            .fields()
            .filter(|field| self.shows_new_prefill(screen, field))
            .map(|field| field.element.element_id)
            .collect()
    }

    /// Whether a field shows text of the app's own that it did not show before on this screen.
    fn shows_new_prefill(&mut self, screen: ScreenId, field: &Widget) -> bool {
        let text = field.element.text.trim();
        if text.is_empty() || self.shows_typed_text(field.element) {
            return false;
        }
        let shown = self
            .prefills
            .entry((screen, field.key.clone()))
            .or_default();
        let new = !shown.is_empty() && !shown.contains(text);
        shown.insert(text.to_string());
        new
    }

    fn relaunch(&self, why: &str) -> Choice {
        let package = self.package.clone().unwrap_or_default();
        let mut choice = Choice::new(vec![super::relaunch_action(&package, why)]);
        choice.relaunch = Some(package);
        choice.note = Some(format!("relaunch: {why}"));
        choice
    }

    /// The actions shown untried on this screen, which no goal elsewhere is judged by (fields
    /// this screen will not fill were marked tried when it was observed: a field left empty
    /// here must not stop a form elsewhere from being a goal).
    fn shown_untried(&self, shown: &Screen, screen: ScreenId) -> BTreeSet<ActionKey> {
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
    fn untried_widgets<'w, 'o>(
        &self,
        shown: &'w Screen<'o>,
        screen: ScreenId,
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
    fn untried_here(&mut self, shown: &Screen, screen: ScreenId) -> Option<Local> {
        let elements = shown.elements();
        let widgets = self.untried_widgets(shown, screen);
        let untried_control = widgets.iter().any(|w| w.control);
        let (fields, refills, _) = self.fields_to_fill(screen, shown, untried_control);
        if let Some(option) = self.option_as_found(screen, shown, &fields) {
            let why = "tried on the form filled, now on the form as found";
            return Some(Local {
                actions: vec![action_on(
                    elements,
                    option.element,
                    option.key.kind.clone(),
                    why,
                )],
                promise: Rank::Toggle.promise(),
                fills: Vec::new(),
                resubmit: Vec::new(),
                renewed: false,
                option: Some(OptionTry::AsFound(option.key.clone())),
            });
        }
        let candidates = match fields.is_empty() || !untried_control {
            true => widgets,
            false => widgets.into_iter().filter(|w| w.control).collect(),
        };
        let next = self.best(screen, elements, candidates);
        // A list's hidden rows come before leaving the screen (a dismissive or risky widget).
        let scroll = self.graph.offers(screen, &SCROLL) && !self.graph.is_tried(screen, &SCROLL);
        let scroll_promise = self.graph.promise(screen, &SCROLL, Rank::ScreenScroll);
        if fields.is_empty() && scroll && next.is_none_or(|(_, p)| p < scroll_promise) {
            return Some(Local {
                actions: vec![scroll_down("rows further down this list")],
                promise: scroll_promise,
                fills: Vec::new(),
                resubmit: Vec::new(),
                renewed: false,
                option: None,
            });
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

    /// On a form filled before and found empty again, an option (a check box, an unchecked
    /// radio button) tried so far only with the form filled, to click once before filling:
    /// what an option does can depend on what the form holds (a checklist needs no title).
    /// Until then the option counts as untried, so the form is worth coming back to.
    fn option_as_found<'s, 'o>(
        &self,
        screen: ScreenId,
        shown: &'s Screen<'o>,
        fields: &Fields,
    ) -> Option<&'s Widget<'o>> {
        let filled_before = |(field, key): &(&UiElement, ActionKey)| {
            !self.renewed.contains(&field.element_id)
                && self
                    .fills
                    .get(&(screen, key.clone()))
                    .is_some_and(|&n| n > 0)
        };
        if fields.is_empty() || !fields.iter().all(filled_before) {
            return None;
        }
        shown.widgets().iter().find(|w| {
            w.element.checkable
                && !w.element.checked
                && w.control
                && self.owes_as_found(screen, &w.key)
        })
    }

    /// Whether the form option `key` was clicked on the form filled and not yet as found.
    fn owes_as_found(&self, screen: ScreenId, key: &ActionKey) -> bool {
        let option = (screen, key.clone());
        self.options_filled.contains(&option) && !self.as_found.contains(&option)
    }

    /// The editable fields to fill now, those to fill again only when nothing else on the
    /// screen is untried (filled here before, showing text this heuristic did not type, fewer
    /// than [`MAX_FILLS`] times), and those this visit passes over (to be marked tried).
    fn fields_to_fill<'o>(
        &self,
        screen: ScreenId,
        shown: &Screen<'o>,
        untried_control: bool,
    ) -> (Fields<'o>, Fields<'o>, Vec<ActionKey>) {
        let (mut fields, mut refills, mut passed) = (Vec::new(), Vec::new(), Vec::new());
        for field in shown.fields() {
            let key = field.key.clone();
            let fills = self.fills.get(&(screen, key.clone())).copied().unwrap_or(0);
            let typed = self.shows_typed_text(field.element);
            // Filling again on a later visit only helps a form with controls left to try, or
            // a field showing text new to this screen (the screen is in another state).
            let again = untried_control || self.renewed.contains(&field.element.element_id);
            let worth = fills == 0 || (fills < MAX_FILLS && again);
            let room = fields.len() + 1 < Decision::MAX_ACTIONS;
            if !typed && worth && room {
                fields.push((field.element, key));
                continue;
            }
            if !typed && fills < MAX_FILLS && refills.len() < Decision::MAX_ACTIONS {
                refills.push((field.element, key.clone()));
            }
            passed.push(key);
        }
        (fields, refills, passed)
    }

    /// The widget to try next and its promise: the most promising (see [`Graph::promise`]; risky
    /// ones promise least but for dismissive ones and a checked radio button), ties broken by
    /// rank, then by fewer widgets alike that did nothing here, then by the seeded generator.
    fn best<'w, 'o>(
        &mut self,
        screen: ScreenId,
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
    fn dead_by_shape(&self, screen: ScreenId, elements: &[UiElement]) -> HashMap<String, usize> {
        let mut dead = HashMap::new();
        for element in controls(elements) {
            if self.graph.led_nowhere(screen, &ActionKey::of(element)) {
                *dead.entry(shape(elements, element)).or_default() += 1;
            }
        }
        dead
    }

    /// The field already shows what this heuristic typed (or password dots): it needs no filling.
    /// The start of a typed text counts: a length limit, or a screen that changed with the first
    /// word (notes' editor), cuts it short.
    fn shows_typed_text(&self, field: &UiElement) -> bool {
        let text = field.text.trim();
        let dots = !text.is_empty() && text.chars().all(|c| matches!(c, '•' | '*' | '●'));
        let cut = |typed: &String| text.chars().count() >= MIN_CUT_TEXT && typed.starts_with(text);
        dots || self
            .typed
            .iter()
            .any(|typed| text.contains(typed.as_str()) || cut(typed))
    }

    /// The action behind `key` on the current observation, to walk a known path; a form's
    /// submit goes with fills of the form's empty fields, as when it was first tried.
    fn replay(&self, shown: &Screen, key: &ActionKey) -> Option<Vec<Action>> {
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
        let submits = (widget.control && !element.checkable) || is_submit(widget.label);
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
    fn walk(&mut self, plan: &Plan, room: usize) -> Option<(Walk, Vec<Action>)> {
        let why = "on a known path to a screen with untried actions";
        let mut walk = Walk {
            moves: Vec::new(),
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
                    walk.moves.push(key.clone());
                }
                _ => return (!actions.is_empty()).then_some((walk, actions)),
            }
        }
        let goal = self.first_blind(plan.goal);
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

    /// What would be tried first on arriving at `screen` when it is a click or a gesture on a
    /// container: its most promising untried action (ties broken by rank, then by the seeded
    /// generator), but for a form's control and on a screen with a field still to fill (its
    /// fields come first, as on any screen).
    fn first_blind(&mut self, screen: ScreenId) -> Option<ActionKey> {
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
    fn blind(&self, screen: ScreenId, key: &ActionKey, why: &str) -> Option<Action> {
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

    fn fill(&self, element: &UiElement) -> Action {
        let mut action = action_on(&[], element, ActionType::Input, "fill the field");
        action.input_text = Some(self.text_for(element));
        action
    }

    /// Test credentials for e-mail, user name and password fields, plausible text otherwise.
    fn text_for(&self, element: &UiElement) -> String {
        // The id's entry name only: the package part (`com.example.mail:id/...`) is no hint.
        let id = element.resource_id.rsplit('/').next().unwrap_or_default();
        let words = format!(
            "{id} {} {} {}",
            element.hint, element.content_desc, element.text
        )
        .to_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| words.contains(n));
        let creds = &self.credentials;
        let pick = |given: &Option<String>, fallback: &str| {
            given.clone().unwrap_or_else(|| fallback.to_string())
        };
        if has(&["cvc", "cvv", "security code"]) {
            "123".into()
        } else if element.password || has(&["password", "passwd", "pwd", "pin"]) {
            pick(&creds.password, "Droid-Test-1234")
        } else if has(&["mail"]) {
            pick(&creds.email, "droid.tester@example.com")
        } else if has(&["user", "login", "account"]) {
            pick(&creds.username, "droidtester")
        } else if has(&["card"]) && !has(&["name", "holder"]) {
            "4111111111111111".into()
        } else if has(&["mm/yy", "expir", "exp_", "expiry"]) {
            "12/30".into()
        } else if has(&["phone", "tel", "mobile"]) {
            "5551234567".into()
        } else if has(&["url", "website", "link"]) {
            "https://example.com".into()
        } else if has(&[
            "zip", "postal", "code", "age", "amount", "number", "qty", "quantity",
        ]) {
            "42".into()
        } else if has(&["search", "find", "query"]) {
            "test".into()
        } else if has(&["name"]) {
            "Alex Tester".into()
        } else {
            "Hello from droid".into()
        }
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
