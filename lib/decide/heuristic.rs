//! The default decider: coverage-guided exploration over the in-memory [`Graph`].
//!
//! On each observation: untried actions on this screen first (empty editable fields filled first,
//! with test credentials where the field asks for an e-mail, user name or password, batched with
//! the form's submit button; then text-bearing widgets, then anonymous ones, risky ones such as
//! "log out" or "delete" last); when the screen
//! is exhausted, the first step of the shortest known path to the nearest screen with untried
//! actions; else back; else relaunch. The same seed and the same observations give the same
//! decisions.

use std::collections::{HashMap, HashSet};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::graph::{action_key, ActionKey, Graph, ScreenId, BACK, SCROLL};
use super::widgets::{bounding_box, is_actionable, is_risky, label_in, primary_action, signature};
use super::Credentials;
use crate::events::{Action, ActionType, Observation};
use crate::ui::UiElement;

/// Consecutive decisions outside the app before a relaunch instead of another back.
const BACKS_BEFORE_RELAUNCH: u32 = 1;

/// Times a field is filled on one screen (forms are emptied when left and entered again).
const MAX_FILLS: u32 = 3;

/// Labels of buttons that skip content, close it or go back up (the toolbar's back arrow): tried
/// after everything else but risky ones, so a new screen is explored before it is left.
const DISMISS: [&str; 9] = [
    "skip",
    "not now",
    "later",
    "cancel",
    "close",
    "no thanks",
    "dismiss",
    "maybe later",
    "navigate up",
];

/// Labels of a form's submit button: tried after the form's other widgets (which often lead to
/// screens the submit would leave behind, such as "Forgot password?").
const SUBMIT: [&str; 22] = [
    "sign in",
    "log in",
    "login",
    "submit",
    "continue",
    "next",
    "pay",
    "place order",
    "buy",
    "checkout",
    "proceed",
    "send",
    "save",
    "done",
    "confirm",
    "ok",
    "search",
    "apply",
    "get started",
    "sign up",
    "register",
    "create",
];

/// The rank of dismissive widgets ("Cancel", "Navigate up"); risky ones rank after them.
const DISMISSIVE: u8 = 5;

/// What the heuristic chose for one observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub actions: Vec<Action>,
    /// `Some(package)` when the app should be relaunched (the decision's actions then only go
    /// home).
    pub relaunch: Option<String>,
    /// Why, for a note (`relaunch`, leaving a foreign app, ...).
    pub note: Option<String>,
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
    current: Option<ScreenId>,
    foreign_steps: u32,
    /// Times each field was filled, per screen.
    fills: HashMap<(ScreenId, ActionKey), u32>,
    /// Every text typed so far, to recognise fields that are already filled.
    typed: HashSet<String>,
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
            current: None,
            foreign_steps: 0,
            fills: HashMap::new(),
            typed: HashSet::new(),
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

    /// Takes in an observation: identifies its screen and learns the edge of the last action.
    pub fn observe(&mut self, observation: &Observation) -> ScreenId {
        let screen = self.graph.observe(observation);
        if let Some((from, key)) = self.pending.take() {
            self.graph.record_edge(from, &key, screen);
        }
        self.current = Some(screen);
        screen
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
        for action in &choice.actions {
            self.learn_action(observation, action);
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
        if let Some(actions) = self.untried_here(observation, screen) {
            return Choice {
                actions,
                relaunch: None,
                note: None,
            };
        }
        if let Some((key, _)) = self.graph.path_to_unexplored(screen) {
            if let Some(action) = self.replay(observation, &key) {
                return Choice {
                    actions: vec![action],
                    relaunch: None,
                    note: None,
                };
            }
        }
        if !self.graph.is_tried(screen, BACK) {
            return back("every action here is explored and no known path leads further".into());
        }
        self.relaunch("nothing left to explore from here")
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
        }
    }

    /// Untried actions on this screen. Empty editable fields are filled first (again on a later
    /// visit that finds them empty while the form's submit is untried, up to [`MAX_FILLS`] times),
    /// in one batch with the next widget to try when that is the form's submit (see
    /// [`Heuristic::best`]).
    fn untried_here(&mut self, observation: &Observation, screen: ScreenId) -> Option<Vec<Action>> {
        let mut seen = HashSet::new();
        let actionable: Vec<&UiElement> = observation
            .elements
            .iter()
            .filter(|e| is_actionable(e))
            .filter(|e| seen.insert(action_key(primary_action(e), &signature(e))))
            .collect();
        let has_form = actionable.iter().any(|e| e.editable);
        let submit = |e: &UiElement| {
            let text = label_in(&observation.elements, e).to_lowercase();
            !e.editable && SUBMIT.iter().any(|word| text.contains(word))
        };
        let untried_submit = actionable.iter().any(|e| {
            submit(e)
                && !self
                    .graph
                    .is_tried(screen, &action_key(primary_action(e), &signature(e)))
        });
        let mut fields = Vec::new();
        for field in actionable.iter().filter(|e| e.editable) {
            let key = action_key(ActionType::Input, &signature(field));
            let fills = self.fills.get(&(screen, key.clone())).copied().unwrap_or(0);
            // Filling again on a later visit only helps a form that still has a submit to try.
            let worth = fills == 0 || (fills < MAX_FILLS && untried_submit);
            if self.shows_typed_text(field) || !worth {
                self.graph.mark_tried(screen, &key);
            } else if fields.len() + 1 < super::response::MAX_ACTIONS {
                self.fills.insert((screen, key), fills + 1);
                fields.push(*field);
            }
        }
        let widgets: Vec<&UiElement> = actionable
            .iter()
            .filter(|e| !e.editable)
            .filter(|e| {
                !self
                    .graph
                    .is_tried(screen, &action_key(primary_action(e), &signature(e)))
            })
            .copied()
            .collect();
        // Fields being filled go with the form's submit when it is untried: the form's other
        // widgets ("Forgot password?") are tried on a later visit.
        let submits: Vec<&UiElement> = widgets.iter().filter(|e| submit(e)).copied().collect();
        let next = if !fields.is_empty() && !submits.is_empty() {
            self.best(&observation.elements, submits, has_form)
        } else {
            self.best(&observation.elements, widgets, has_form)
        };
        // A list's hidden rows come before leaving the screen (a dismissive or risky widget).
        let scroll = self.graph.offers(screen, SCROLL) && !self.graph.is_tried(screen, SCROLL);
        if fields.is_empty() && scroll && !next.is_some_and(|(_, rank)| rank < DISMISSIVE) {
            return Some(vec![scroll_down("rows further down this list")]);
        }
        let next = next.map(|(widget, _)| widget);
        let mut actions: Vec<Action> = fields.iter().map(|field| self.fill(field)).collect();
        // A fill is batched with the form's submit only: typing into a search bar may itself
        // lead elsewhere, and the click would land on the wrong screen.
        match next {
            Some(widget) if actions.is_empty() || submit(widget) => {
                let why = "untried on this screen";
                let action = act_on(&observation.elements, widget, primary_action(widget), why);
                actions.push(action);
            }
            _ => {}
        }
        (!actions.is_empty()).then_some(actions)
    }

    /// The widget to try next: text-bearing ones, then a form's submit button, anonymous ones,
    /// dismissive ones ("Skip", "Cancel"), risky ones; ties broken by the seeded generator.
    fn best<'a>(
        &mut self,
        elements: &[UiElement],
        widgets: Vec<&'a UiElement>,
        has_form: bool,
    ) -> Option<(&'a UiElement, u8)> {
        let rank = |e: &UiElement| {
            let label = label_in(elements, e);
            let risky = is_risky(e, label);
            let text = label.to_lowercase();
            let submit = (has_form && SUBMIT.iter().any(|word| text.contains(word))).then_some(());
            let dismissive = text == "back" || DISMISS.iter().any(|word| text.starts_with(word));
            // Switches, check boxes and radio buttons change a setting in place; they rarely
            // lead to another screen.
            let toggle = e.checkable;
            // A list's own scroll shows rows (and often a screen) not seen yet: one step, first.
            let scroll = primary_action(e) == ActionType::ScrollDown;
            match (risky, dismissive, toggle, submit, label.is_empty()) {
                (true, _, _, _, _) => DISMISSIVE + 1,
                (false, true, _, _, _) => DISMISSIVE,
                _ if scroll => 0,
                (false, false, true, _, _) => 4,
                (false, false, false, _, true) => 3,
                (false, false, false, Some(_), false) => 2,
                (false, false, false, None, false) => 1,
            }
        };
        let best = widgets.iter().map(|e| rank(e)).min()?;
        let mut tied: Vec<&UiElement> = widgets.into_iter().filter(|e| rank(e) == best).collect();
        tied.shuffle(&mut self.rng);
        tied.first().map(|e| (*e, best))
    }

    /// The field already shows what this heuristic typed (or password dots): it needs no filling.
    fn shows_typed_text(&self, field: &UiElement) -> bool {
        let text = field.text.trim();
        let dots = !text.is_empty() && text.chars().all(|c| matches!(c, '•' | '*' | '●'));
        dots || self.typed.iter().any(|typed| text.contains(typed.as_str()))
    }

    /// The action behind `key` on the current observation, to walk a known path.
    fn replay(&self, observation: &Observation, key: &str) -> Option<Action> {
        if key == SCROLL {
            return Some(scroll_down("on the way to a screen with untried actions"));
        }
        if key == BACK {
            return Some(
                back("on the way to a screen with untried actions".into())
                    .actions
                    .remove(0),
            );
        }
        let element = observation
            .elements
            .iter()
            .filter(|e| is_actionable(e))
            .find(|e| action_key(primary_action(e), &signature(e)) == key)?;
        let kind = primary_action(element);
        let mut action = act_on(
            &observation.elements,
            element,
            kind,
            "on the way to a screen with untried actions",
        );
        if kind == ActionType::Input {
            action.input_text = Some(self.text_for(element));
        }
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
        let words = format!(
            "{} {} {} {}",
            element.resource_id, element.hint, element.content_desc, element.text
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
    Choice {
        actions: vec![action],
        relaunch: None,
        note: None,
    }
}

/// An action on an element, carrying its `ref` and bounding box.
pub fn act_on(elements: &[UiElement], element: &UiElement, kind: ActionType, why: &str) -> Action {
    let mut action = Action::new(kind);
    let name = label_in(elements, element);
    let class = element.class_name.rsplit('.').next().unwrap_or("");
    action.action_desc = Some(if name.is_empty() {
        format!("{kind} {class}")
    } else {
        format!("{kind} {class} \"{name}\"")
    });
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
