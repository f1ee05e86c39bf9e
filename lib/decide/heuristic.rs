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
//! with the goal's untried click (see [`Walk`]). When nothing untried is known: back, then
//! relaunch. The same seed and the same observations give the same decisions.

use std::collections::{BTreeSet, HashMap, HashSet};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::graph::{
    action_key, ActionKey, Graph, Place, Plan, ScreenId, Step, BACK, SCROLL, UNSEEN_PRODUCTIVITY,
};
use super::response::MAX_ACTIONS;
use super::widgets::{
    bounding_box, controls, describe, is_actionable, is_submit, label_in, primary_action, rank,
    shape, signature, Rank,
};
use super::Credentials;
use crate::events::{Action, ActionType, Decision, Observation};
use crate::ui::UiElement;

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
    /// The last actions walk on along a known path, past screens not observed (see
    /// [`Heuristic::learn_walk`]).
    pub walk: Option<Walk>,
}

/// The decision field holding a choice's [`Walk`].
pub const WALK_FIELD: &str = "walk";

impl Choice {
    /// The decision for this choice (run, step, time and decider left to the caller): its walk
    /// goes in the field [`WALK_FIELD`], which a replay from crawler.db learns from, and its
    /// relaunch in the decision's `relaunch`, which droid-act carries out.
    pub fn to_decision(&self) -> Decision {
        let mut decision = Decision::new(self.actions.clone());
        if let Some(walk) = &self.walk {
            let walk = serde_json::to_value(walk).expect("a walk is plain data");
            decision.extra.insert(WALK_FIELD.into(), walk);
        }
        decision.relaunch = self.relaunch.clone();
        decision
    }
}

/// Moves along a known path taken blind in the same decision as its first move, and the
/// goal's untried action at its end: their actions are the decision's last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Walk {
    /// Learned moves (taps on where their widgets were seen, backs), in order.
    pub moves: Vec<ActionKey>,
    /// The untried action taken on the path's goal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then: Option<ActionKey>,
}

impl Walk {
    /// The decision's actions it accounts for.
    pub fn actions(&self) -> usize {
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
    /// The last action taken, on which screen: its edge is learned from the next observation.
    pending: Option<(ScreenId, ActionKey)>,
    /// The moves a walk took blind before the pending action, each with the screen it was
    /// expected on (see [`Heuristic::learn_walk`]); and whether the pending action is the goal's
    /// untried one.
    walked: Vec<(ScreenId, ActionKey)>,
    walked_to_untried: bool,
    current: Option<ScreenId>,
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
            pending: None,
            walked: Vec::new(),
            walked_to_untried: false,
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
        }
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

    /// Takes in an observation: identifies its screen, notes the text its fields show and
    /// learns the edge of the last action. A known screen whose field shows text of the app's
    /// own new to it (an empty note where a written one was seen, the same save dialog for
    /// another file) is in a state not explored yet: the action that showed it counts as one
    /// that showed a new screen, and the form's submits are worth trying again.
    pub fn observe(&mut self, observation: &Observation) -> ScreenId {
        let screen = self.graph.observe(observation);
        let form = Form::of(&observation.elements);
        self.renewed = self.note_prefills(screen, &form);
        let renewed = !self.renewed.is_empty();
        let walked = std::mem::take(&mut self.walked);
        if let Some((from, key)) = self.pending.take() {
            // Back on a screen the walk passed: the move from there went nowhere (a link dead
            // in this state of the app), and the actions after it were not taken where meant.
            match walked.into_iter().find(|(at, _)| *at == screen) {
                Some((at, stalled)) => {
                    self.graph.record_edge(at, &stalled, screen, renewed);
                    if self.walked_to_untried {
                        self.graph.mark_untried(from, &key);
                    }
                }
                None => {
                    self.graph.record_edge(from, &key, screen, renewed);
                    // Until then, the form stays worth coming back to, a bounded number of
                    // times (see [`MAX_RETRIES`]).
                    if self.owes_as_found(from, &key) {
                        self.retry(from, key);
                    }
                }
            }
        }
        if renewed {
            self.retry_submits(screen, form.submits());
        }
        if std::mem::take(&mut self.relaunching) || self.graph.launch().is_none() {
            self.graph.set_launch(screen);
        }
        self.current = Some(screen);
        screen
    }

    /// Learns that the app was relaunched (by this heuristic or anyone): the next observation
    /// shows the launch screen, and no action's edge leads there.
    pub fn learn_relaunch(&mut self) {
        self.relaunching = true;
        self.graph.app_restarted();
        self.pending = None;
    }

    /// Learns that an action (chosen by anyone: this heuristic, a model, an external program)
    /// was executed on the current screen.
    pub fn learn_action(&mut self, observation: &Observation, action: &Action) {
        let Some(screen) = self.current else { return };
        let whole_screen = action.ref_id.is_none() && action.target_bounding_box.is_none();
        let key = match action.action {
            ActionType::Back => BACK.to_string(),
            ActionType::ScrollDown if whole_screen => SCROLL.to_string(),
            kind => match target_element(observation, action) {
                Some(element) => action_key(kind, &signature(element)),
                None => return,
            },
        };
        self.graph.mark_tried(screen, &key);
        self.pending = Some((screen, key));
    }

    /// Learns an executed input as if this heuristic had filled the field (a one-shot decider
    /// replaying its run from crawler.db): the text counts as typed and the fill is counted.
    pub fn learn_fill(&mut self, observation: &Observation, action: &Action) {
        let (Some(screen), Some(text)) = (self.current, action.input_text.as_ref()) else {
            return;
        };
        let Some(element) = target_element(observation, action) else {
            return;
        };
        self.typed.insert(text.clone());
        let key = action_key(ActionType::Input, &signature(element));
        *self.fills.entry((screen, key)).or_default() += 1;
    }

    /// Learns a walk taken after the pending action (this heuristic's, or one replayed from a
    /// recorded decision): the screens it passed are taken to be those the graph knows, so the
    /// next observation is the outcome of its last action on the screen it expected there, unless
    /// it shows one of the screens passed, where the move taken then must have stalled.
    pub fn learn_walk(&mut self, walk: &Walk) {
        let Some((mut at, mut key)) = self.pending.take() else {
            return;
        };
        let mut walked = Vec::new();
        for next in walk.moves.iter().chain(&walk.then) {
            let Some(to) = self.graph.follow(at, &key) else {
                return;
            };
            walked.push((at, key));
            (at, key) = (to, next.clone());
        }
        self.walked = walked;
        self.walked_to_untried = walk.then.is_some();
        self.graph.mark_tried(at, &key);
        self.current = Some(at);
        self.pending = Some((at, key));
    }

    /// Observes and decides.
    pub fn decide(&mut self, observation: &Observation) -> Choice {
        self.observe(observation);
        self.next(observation)
    }

    /// Decides for an observation already taken in with [`Heuristic::observe`].
    pub fn next(&mut self, observation: &Observation) -> Choice {
        let screen = match self.current {
            Some(screen) => screen,
            None => self.observe(observation),
        };
        let choice = self.choose(observation, screen);
        let walked = choice.walk.as_ref().map_or(0, Walk::actions);
        for action in &choice.actions[..choice.actions.len() - walked] {
            self.learn_action(observation, action);
        }
        if let Some(walk) = &choice.walk {
            self.learn_walk(walk);
        }
        if choice.relaunch.is_some() {
            self.learn_relaunch();
        }
        choice
    }

    fn choose(&mut self, observation: &Observation, screen: ScreenId) -> Choice {
        let foreign = match (&self.package, &observation.package) {
            (Some(app), Some(shown)) => shown != app && !self.allowed_packages.contains(shown),
            _ => false,
        };
        if foreign {
            self.graph.mark_outside(screen);
            self.foreign_steps += 1;
            return if self.foreign_steps > BACKS_BEFORE_RELAUNCH {
                self.foreign_steps = 0;
                self.relaunch("still outside the app after going back")
            } else {
                back(format!(
                    "{} is outside the app under test",
                    observation.package.as_deref().unwrap_or("this package")
                ))
            };
        }
        self.foreign_steps = 0;
        if self.package.is_some() && observation.package != self.package {
            self.graph.mark_guest(screen);
        }
        let local = self.untried_here(observation, screen);
        let here = local.as_ref().map(|local| self.value_here(screen, local));
        let shown_untried = self.shown_untried(observation, screen);
        let plan = self
            .graph
            .plan(screen, self.package.is_some(), &shown_untried);
        if let Some(plan) = plan.filter(|plan| here.is_none_or(|here| plan.value > here)) {
            match plan.first.clone() {
                Step::Relaunch => {
                    return self.relaunch("the launch screen leads to untried actions")
                }
                Step::Action(key) => {
                    if let Some(mut actions) = self.replay(observation, &key) {
                        let walk = match self.graph.is_learned(screen, &key) {
                            true => self.walk(&plan, MAX_ACTIONS.saturating_sub(actions.len())),
                            false => None,
                        };
                        let walk = walk.map(|(walk, taken)| {
                            actions.extend(taken);
                            walk
                        });
                        return Choice {
                            actions,
                            relaunch: None,
                            note: None,
                            walk,
                        };
                    }
                }
            }
        }
        if let Some(local) = local {
            for key in local.fills {
                *self.fills.entry((screen, key)).or_default() += 1;
            }
            self.retry_submits(screen, local.resubmit);
            match local.option {
                Some(OptionTry::Filled(key)) => self.options_filled.insert((screen, key)),
                Some(OptionTry::AsFound(key)) => self.as_found.insert((screen, key)),
                None => false,
            };
            return Choice {
                actions: local.actions,
                relaunch: None,
                note: None,
                walk: None,
            };
        }
        if !self.graph.is_tried(screen, BACK) {
            return back("every action here is explored and no known path leads further".into());
        }
        self.graph.revive_dead();
        self.relaunch("nothing left to explore from here")
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
    fn note_prefills(&mut self, screen: ScreenId, form: &Form) -> HashSet<u32> {
        form.fields()
            .filter(|field| self.shows_new_prefill(screen, field))
            .map(|field| field.element_id)
            .collect()
    }

    /// Whether a field shows text of the app's own that it did not show before on this screen.
    fn shows_new_prefill(&mut self, screen: ScreenId, field: &UiElement) -> bool {
        let text = field.text.trim();
        if text.is_empty() || self.shows_typed_text(field) {
            return false;
        }
        let key = action_key(ActionType::Input, &signature(field));
        let shown = self.prefills.entry((screen, key)).or_default();
        let new = !shown.is_empty() && !shown.contains(text);
        shown.insert(text.to_string());
        new
    }

    fn relaunch(&self, why: &str) -> Choice {
        let package = self.package.clone().unwrap_or_default();
        let mut home = Action::new(ActionType::Home);
        home.action_desc = Some(format!("relaunch {package}"));
        home.reasoning = Some(why.to_string());
        Choice {
            actions: vec![home],
            relaunch: Some(package),
            note: Some(format!("relaunch: {why}")),
            walk: None,
        }
    }

    /// The actions shown untried on this screen, which no goal elsewhere is judged by. Taken
    /// after [`Heuristic::untried_here`], which marks tried the fields it will not fill: a
    /// field left empty here must not stop a form elsewhere from being a goal.
    fn shown_untried(&self, observation: &Observation, screen: ScreenId) -> BTreeSet<ActionKey> {
        controls(&observation.elements)
            .map(|e| action_key(primary_action(e), &signature(e)))
            .filter(|key| !self.graph.is_tried(screen, key))
            .collect()
    }

    /// The best untried actions on this screen. Empty editable fields are filled first (again
    /// on a later visit that finds them empty while the form's controls, its submit button or
    /// toggles, are untried, up to [`MAX_FILLS`] times), in one batch with the next widget when
    /// that is a form control: typing into a search bar may itself lead elsewhere, and another
    /// click would land on the wrong screen.
    fn untried_here(&mut self, observation: &Observation, screen: ScreenId) -> Option<Local> {
        let elements = &observation.elements;
        let form = Form::of(elements);
        let actionable = &form.actionable;
        let has_form = form.first_field.is_some();
        let renewed = self.renewed.clone();
        // An option owed a try as found and already chosen on this form does nothing when
        // clicked: it waits for the form as found.
        let waits = |e: &UiElement, key: &str| e.checked && self.owes_as_found(screen, key);
        let widgets: Vec<&UiElement> = actionable
            .iter()
            .filter(|e| !e.editable)
            .filter(|e| {
                let key = action_key(primary_action(e), &signature(e));
                !self.graph.is_tried(screen, &key) && !waits(e, &key)
            })
            .copied()
            .collect();
        let untried_control = widgets.iter().any(|e| form.is_control(e));
        let (fields, refills) = self.fields_to_fill(screen, actionable, untried_control, &renewed);
        if let Some(option) = self.option_as_found(screen, &form, &fields, &renewed) {
            let kind = primary_action(option);
            let why = "tried on the form filled, now on the form as found";
            return Some(Local {
                actions: vec![act_on(elements, option, kind, why)],
                promise: Rank::Toggle.promise(),
                fills: Vec::new(),
                resubmit: Vec::new(),
                renewed: false,
                option: Some(OptionTry::AsFound(action_key(kind, &signature(option)))),
            });
        }
        let candidates = match fields.is_empty() || !untried_control {
            true => widgets,
            false => widgets.into_iter().filter(|e| form.is_control(e)).collect(),
        };
        let next = self.best(screen, elements, candidates, has_form);
        // A list's hidden rows come before leaving the screen (a dismissive or risky widget).
        let scroll = self.graph.offers(screen, SCROLL) && !self.graph.is_tried(screen, SCROLL);
        let scroll_promise = self.graph.promise(screen, SCROLL, Rank::ScreenScroll);
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
            Some((widget, _)) if actions.is_empty() || form.is_control(widget) => {
                let why = "untried on this screen";
                actions.push(act_on(elements, widget, primary_action(widget), why));
                // A changed option makes the form's submit worth trying again.
                if widget.checkable && form.is_control(widget) {
                    resubmit = form.submits();
                    if !fields.is_empty() {
                        let key = action_key(primary_action(widget), &signature(widget));
                        option = Some(OptionTry::Filled(key));
                    }
                }
            }
            _ => {}
        }
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
    fn option_as_found<'a>(
        &self,
        screen: ScreenId,
        form: &Form<'a>,
        fields: &Fields,
        renewed: &HashSet<u32>,
    ) -> Option<&'a UiElement> {
        let filled_before = |(field, key): &(&UiElement, ActionKey)| {
            !renewed.contains(&field.element_id)
                && self
                    .fills
                    .get(&(screen, key.clone()))
                    .is_some_and(|&n| n > 0)
        };
        if fields.is_empty() || !fields.iter().all(filled_before) {
            return None;
        }
        form.actionable.iter().copied().find(|e| {
            let key = action_key(primary_action(e), &signature(e));
            e.checkable && !e.checked && form.is_control(e) && self.owes_as_found(screen, &key)
        })
    }

    /// Whether the form option `key` was clicked on the form filled and not yet as found.
    fn owes_as_found(&self, screen: ScreenId, key: &str) -> bool {
        let option = (screen, key.to_string());
        self.options_filled.contains(&option) && !self.as_found.contains(&option)
    }

    /// The editable fields to fill now, and those to fill again only when nothing else on the
    /// screen is untried: filled here before, showing text this heuristic did not type, fewer
    /// than [`MAX_FILLS`] times.
    fn fields_to_fill<'a>(
        &mut self,
        screen: ScreenId,
        actionable: &[&'a UiElement],
        untried_control: bool,
        renewed: &HashSet<u32>,
    ) -> (Fields<'a>, Fields<'a>) {
        let (mut fields, mut refills) = (Vec::new(), Vec::new());
        for &field in actionable.iter().filter(|e| e.editable) {
            let key = action_key(ActionType::Input, &signature(field));
            let fills = self.fills.get(&(screen, key.clone())).copied().unwrap_or(0);
            let typed = self.shows_typed_text(field);
            // Filling again on a later visit only helps a form with controls left to try, or
            // a field showing text new to this screen (the screen is in another state).
            let again = untried_control || renewed.contains(&field.element_id);
            let worth = fills == 0 || (fills < MAX_FILLS && again);
            let room = fields.len() + 1 < MAX_ACTIONS;
            if !typed && worth && room {
                fields.push((field, key));
                continue;
            }
            if !typed && fills < MAX_FILLS && refills.len() < MAX_ACTIONS {
                refills.push((field, key.clone()));
            }
            self.graph.mark_tried(screen, &key);
        }
        (fields, refills)
    }

    /// The widget to try next and its promise: the most promising (see [`Graph::promise`]; risky
    /// ones promise least but for dismissive ones and a checked radio button), ties broken by
    /// rank, then by fewer widgets alike that did nothing here, then by the seeded generator.
    fn best<'a>(
        &mut self,
        screen: ScreenId,
        elements: &[UiElement],
        widgets: Vec<&'a UiElement>,
        has_form: bool,
    ) -> Option<(&'a UiElement, f64)> {
        let scored: Vec<(&UiElement, f64, Rank)> = widgets
            .into_iter()
            .map(|e| {
                let rank = rank(elements, e, has_form);
                let key = action_key(primary_action(e), &signature(e));
                (e, self.graph.promise(screen, &key, rank), rank)
            })
            .collect();
        let order = |a: &(&UiElement, f64, Rank), b: &(&UiElement, f64, Rank)| {
            b.1.total_cmp(&a.1).then(a.2.cmp(&b.2))
        };
        let best = *scored.iter().min_by(|a, b| order(a, b))?;
        let tied = scored.iter().filter(|s| order(s, &best).is_eq());
        // Among equals, a widget unlike two or more that did nothing here goes first: colour
        // rows that did nothing say the next will not either, not what the theme row does.
        let dead = self.dead_by_shape(screen, elements);
        let dead_alike = |e: &UiElement| dead.get(&shape(elements, e)).map_or(1, |&n| n.max(1));
        let fewest = tied.clone().map(|s| dead_alike(s.0)).min()?;
        let mut tied: Vec<(&UiElement, f64)> = tied
            .filter(|s| dead_alike(s.0) == fewest)
            .map(|&(e, promise, _)| (e, promise))
            .collect();
        tied.shuffle(&mut self.rng);
        tied.first().copied()
    }

    /// How many widgets here of each [`shape`] were tried and led nowhere.
    fn dead_by_shape(&self, screen: ScreenId, elements: &[UiElement]) -> HashMap<String, usize> {
        let mut dead = HashMap::new();
        for element in controls(elements) {
            let key = action_key(primary_action(element), &signature(element));
            if self.graph.led_nowhere(screen, &key) {
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
    fn replay(&mut self, observation: &Observation, key: &str) -> Option<Vec<Action>> {
        let why = "on the way to a screen with untried actions";
        if key == SCROLL {
            return Some(vec![scroll_down(why)]);
        }
        if key == BACK {
            return Some(back(why.into()).actions);
        }
        let elements = &observation.elements;
        let element = elements
            .iter()
            .filter(|e| is_actionable(e))
            .find(|e| action_key(primary_action(e), &signature(e)) == key)?;
        let kind = primary_action(element);
        let mut actions = Vec::new();
        if kind != ActionType::Input && is_submit(label_in(elements, element)) {
            let empty: Vec<&UiElement> = elements
                .iter()
                .filter(|e| e.editable && is_actionable(e) && !self.shows_typed_text(e))
                .filter(|e| e.element_id < element.element_id)
                .collect();
            actions = empty.into_iter().map(|field| self.fill(field)).collect();
        }
        let mut action = act_on(elements, element, kind, why);
        if kind == ActionType::Input {
            action.input_text = Some(self.text_for(element));
        }
        actions.push(action);
        Some(actions)
    }

    /// The plan's moves after its first, taken blind as taps where their widgets were seen and
    /// backs, and the goal's most promising untried click when the walk reaches it: one
    /// decision instead of one per move. It stops before a move that is not a learned click or
    /// back (typing, a swipe, a back whose outcome is a guess), keeps to `room` actions, and
    /// takes nothing on a goal with a form (its fields come first, as on any screen).
    fn walk(&mut self, plan: &Plan, room: usize) -> Option<(Walk, Vec<Action>)> {
        let why = "on a known path to a screen with untried actions";
        let mut walk = Walk {
            moves: Vec::new(),
            then: None,
        };
        let mut actions = Vec::new();
        for (at, key) in &plan.then {
            // A form's submit needs its fields filled, from an observation of them.
            let form = self
                .graph
                .offers_any(*at, &action_key(ActionType::Input, ""));
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
        let goal = self.first_click(plan.goal);
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

    /// What would be tried first on arriving at `screen` when it is a click: its most promising
    /// untried action (ties broken by rank, then by the seeded generator) on a screen without
    /// fields.
    fn first_click(&mut self, screen: ScreenId) -> Option<ActionKey> {
        let untried = self.graph.untried(screen);
        let input = action_key(ActionType::Input, "");
        if self.graph.offers_any(screen, &input) {
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
        key.starts_with(&action_key(ActionType::Click, ""))
            .then(|| key.to_string())
    }

    /// A move taken without observing its screen: back, or a tap where the widget was seen.
    fn blind(&self, screen: ScreenId, key: &str, why: &str) -> Option<Action> {
        if key == BACK {
            return Some(back(why.into()).actions.remove(0));
        }
        if !key.starts_with(&action_key(ActionType::Click, "")) {
            return None;
        }
        let Place { bounds, label } = self.graph.place(screen, key)?;
        let (x, y) = bounds.center();
        let mut action = Action::new(ActionType::Tap);
        action.action_desc = Some(format!("tap \"{label}\""));
        action.reasoning = Some(why.to_string());
        action.point = Some([i64::from(x), i64::from(y)]);
        Some(action)
    }

    fn fill(&mut self, element: &UiElement) -> Action {
        let mut action = act_on(&[], element, ActionType::Input, "fill the field");
        let text = self.text_for(element);
        self.typed.insert(text.clone());
        action.input_text = Some(text);
        action
    }

    /// Test credentials for e-mail, user name and password fields, plausible text otherwise.
    fn text_for(&self, element: &UiElement) -> String {
        // The id's entry name only: the package part ("simplemobiletools") is no hint.
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

/// A screen's actionable widgets, one per action key, and its form: its fields, and the
/// controls after the first one (a submit button, an option).
struct Form<'a> {
    elements: &'a [UiElement],
    actionable: Vec<&'a UiElement>,
    /// A form's controls follow its first field; a toolbar above an editor is not one (and
    /// typing may rearrange it).
    first_field: Option<u32>,
}

impl<'a> Form<'a> {
    fn of(elements: &'a [UiElement]) -> Form<'a> {
        let mut seen = HashSet::new();
        let actionable: Vec<&UiElement> = controls(elements)
            .filter(|e| seen.insert(action_key(primary_action(e), &signature(e))))
            .collect();
        let first_field = actionable.iter().find(|e| e.editable).map(|e| e.element_id);
        Form {
            elements,
            actionable,
            first_field,
        }
    }

    fn fields(&self) -> impl Iterator<Item = &'a UiElement> + '_ {
        self.actionable.iter().copied().filter(|e| e.editable)
    }

    fn is_control(&self, element: &UiElement) -> bool {
        self.first_field
            .is_some_and(|field| element.element_id > field)
            && (element.checkable || is_submit(label_in(self.elements, element)))
    }

    fn submits(&self) -> Vec<ActionKey> {
        self.actionable
            .iter()
            .filter(|e| !e.checkable && self.is_control(e))
            .map(|e| action_key(primary_action(e), &signature(e)))
            .collect()
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
    Choice {
        actions: vec![action],
        relaunch: None,
        note: None,
        walk: None,
    }
}

/// An action on an element, carrying its `ref` and bounding box.
pub fn act_on(elements: &[UiElement], element: &UiElement, kind: ActionType, why: &str) -> Action {
    let mut action = Action::new(kind);
    action.action_desc = Some(describe(elements, element, kind));
    action.reasoning = Some(why.to_string());
    action.target_bounding_box = Some(bounding_box(element.bounds));
    action.ref_id = element.ref_id;
    action
}

/// The element an action targets: by `ref`, else the smallest actionable element under the
/// box's centre.
fn target_element<'a>(observation: &'a Observation, action: &Action) -> Option<&'a UiElement> {
    if let Some(reference) = action.ref_id {
        return super::widgets::element_by_ref(observation, reference);
    }
    super::response::snap(action.target_bounding_box.as_ref()?, observation)
}
