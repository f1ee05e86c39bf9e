//! A DroidBot-style depth-first baseline: on each screen, an action it has not taken there yet
//! (the screen's widgets in an order the seed shuffles once per screen), else back; a relaunch
//! when the device is still outside the app after a back, or when a back left the screen as it
//! was. It keeps no graph and never walks to a screen elsewhere: what is left behind a screen
//! it backed out of stays unexplored, as in DroidBot's depth-first policy. As DroidBot does,
//! after [`MAX_RESTARTS`] relaunches that found no new screen it takes a random action of an
//! exhausted screen instead of backing out of it, until a new screen shows.

use std::collections::{HashMap, HashSet};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::events::{Action, ActionType, Decision, Observation};
use crate::screen::{action_on, ActionKey, Screen, ScreenKey, BACK, SCROLL};

/// What the depth-first decider types into a field.
const TEXT: &str = "hello";

/// Relaunches without a new screen after which an exhausted screen gets a random action rather
/// than a back (DroidBot's `MAX_NUM_RESTARTS`): otherwise an app whose launch screen is
/// exhausted is left and relaunched for the rest of the budget.
pub const MAX_RESTARTS: u32 = 5;

pub struct DfsDecider {
    rng: ChaCha8Rng,
    package: Option<String>,
    allowed_packages: Vec<String>,
    /// Each screen's actions in the order they are tried (shuffled by the seed when the screen
    /// is first seen; back is not among them).
    order: HashMap<ScreenKey, Vec<ActionKey>>,
    /// The actions taken on each screen.
    tried: HashMap<ScreenKey, HashSet<ActionKey>>,
    /// The screen observed last, and whether the decision on it was a back.
    last: Option<(ScreenKey, bool)>,
    /// The current observation: its screen, why the app is relaunched (outside the app after
    /// a back, or a back that changed nothing), and the random action drawn for it when every
    /// action there is tried and relaunches stopped finding anything.
    current: Option<(ScreenKey, Option<String>, Option<ActionKey>)>,
    foreign_steps: u32,
    /// Relaunches since a screen was last seen for the first time.
    fruitless_relaunches: u32,
}

impl DfsDecider {
    pub fn new(seed: u64) -> DfsDecider {
        DfsDecider {
            rng: ChaCha8Rng::seed_from_u64(seed),
            package: None,
            allowed_packages: Vec::new(),
            order: HashMap::new(),
            tried: HashMap::new(),
            last: None,
            current: None,
            foreign_steps: 0,
            fruitless_relaunches: 0,
        }
    }

    /// The app under test (relaunched when the device leaves it) and the other packages the
    /// exploration may enter.
    pub fn set_package(&mut self, package: Option<String>, allowed: Vec<String>) {
        self.package = package;
        self.allowed_packages = allowed;
    }

    fn is_foreign(&self, observation: &Observation) -> bool {
        match (&self.package, &observation.package) {
            (Some(app), Some(package)) => {
                package != app && !self.allowed_packages.contains(package)
            }
            _ => false,
        }
    }

    /// Takes in an observation: a screen seen for the first time gets its order of actions,
    /// and whether the app must be relaunched is settled.
    pub fn observe(&mut self, shown: &Screen) {
        let observation = shown.observation();
        let key = shown.key().clone();
        if !self.order.contains_key(&key) {
            self.fruitless_relaunches = 0;
            let mut actions: Vec<ActionKey> =
                shown.widgets().iter().map(|w| w.key.clone()).collect();
            if shown.offers_screen_scroll() {
                actions.push(SCROLL.clone());
            }
            actions.shuffle(&mut self.rng);
            self.order.insert(key.clone(), actions);
        }
        let relaunch = match self.is_foreign(observation) {
            true => {
                self.foreign_steps += 1;
                (self.foreign_steps > super::BACKS_OUTSIDE_THE_APP)
                    .then(|| "still outside the app after going back".to_string())
            }
            false => {
                self.foreign_steps = 0;
                let unmoved = matches!(&self.last, Some((last, true)) if *last == key);
                unmoved.then(|| "back left the screen as it was".to_string())
            }
        };
        let exhausted = self.untried(&key).is_none();
        let random = (exhausted && self.fruitless_relaunches >= MAX_RESTARTS)
            .then(|| {
                let mut actions = self.order.get(&key).cloned().unwrap_or_default();
                actions.push(BACK.clone());
                actions.choose(&mut self.rng).cloned()
            })
            .flatten();
        self.current = Some((key, relaunch, random));
    }

    /// The first action of the screen's order not taken there yet.
    fn untried(&self, key: &ScreenKey) -> Option<&ActionKey> {
        let tried = self.tried.get(key);
        self.order.get(key).and_then(|order| {
            order
                .iter()
                .find(|action| tried.is_none_or(|tried| !tried.contains(*action)))
        })
    }

    /// The decision for the observation taken in last: a relaunch, its first untried action,
    /// else back (or the random action drawn for it, see [`MAX_RESTARTS`]). Changes nothing
    /// (see [`DfsDecider::learn`]).
    pub fn choose(&self, shown: &Screen) -> Decision {
        let observation = shown.observation();
        let Some((key, relaunch, random)) = &self.current else {
            return Decision::new(vec![back("nothing observed yet")]);
        };
        if let Some(why) = relaunch {
            let package = self.package.clone().unwrap_or_default();
            let mut decision = Decision::new(vec![super::relaunch_action(&package, why)]);
            decision.relaunch = Some(package);
            return decision;
        }
        if self.is_foreign(observation) {
            return Decision::new(vec![back("outside the app under test")]);
        }
        let action = match (self.untried(key), random) {
            (Some(untried), _) => act(shown, untried, "untried on this screen"),
            (None, Some(random)) => act(
                shown,
                random,
                "every action here is tried and relaunching finds nothing new: a random one",
            ),
            (None, None) => None,
        };
        Decision::new(vec![
            action.unwrap_or_else(|| back("every action here is tried"))
        ])
    }

    /// Takes in the decision made on the observation taken in last (by this decider or anyone
    /// else): its actions count as taken there.
    pub fn learn(&mut self, shown: &Screen, decision: &Decision) {
        let Some((key, _, _)) = self.current.take() else {
            return;
        };
        let tried = self.tried.entry(key.clone()).or_default();
        for action in &decision.actions {
            if let Some(action_key) = shown.key_of(action) {
                tried.insert(action_key);
            }
        }
        if decision.relaunch.is_some() {
            self.foreign_steps = 0;
            self.fruitless_relaunches += 1;
        }
        let backed = decision.relaunch.is_none()
            && decision
                .actions
                .last()
                .is_some_and(|a| a.action == ActionType::Back);
        self.last = Some((key, backed));
    }

    /// Observes, chooses and takes the choice in.
    pub fn decide(&mut self, shown: &Screen) -> Decision {
        self.observe(shown);
        let decision = self.choose(shown);
        self.learn(shown, &decision);
        decision
    }
}

/// The action `key` names on this screen.
fn act(shown: &Screen, key: &ActionKey, why: &str) -> Option<Action> {
    if *key == SCROLL {
        let mut action = Action::new(ActionType::ScrollDown);
        action.action_desc = Some("scroll the screen down".into());
        action.reasoning = Some(why.into());
        return Some(action);
    }
    if *key == BACK {
        return Some(back(why));
    }
    let widget = shown.widget(key)?;
    let mut action = action_on(shown.elements(), widget.element, key.kind.clone(), why);
    if key.kind == ActionType::Input {
        action.input_text = Some(TEXT.into());
    }
    Some(action)
}

fn back(why: &str) -> Action {
    let mut action = Action::new(ActionType::Back);
    action.action_desc = Some("press back".into());
    action.reasoning = Some(why.into());
    action
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::{Bounds, UiElement};

    fn button(id: u32, text: &str, y: i32) -> UiElement {
        UiElement {
            element_id: id,
            class_name: "android.widget.Button".into(),
            text: text.into(),
            clickable: true,
            enabled: true,
            bounds: Bounds::from([0, y, 100, y + 50]),
            ..UiElement::default()
        }
    }

    fn screen(package: &str, labels: &[&str]) -> Observation {
        let mut observation = Observation {
            package: Some(package.into()),
            activity: Some(format!("{package}.Main")),
            ..Observation::default()
        };
        observation.elements = labels
            .iter()
            .enumerate()
            .map(|(i, label)| button(i as u32, label, 100 * i as i32))
            .collect();
        observation
    }

    fn labels(decisions: &[Decision]) -> Vec<String> {
        decisions
            .iter()
            .map(|d| d.actions[0].action_desc.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn every_widget_once_then_back_then_a_relaunch_when_back_changes_nothing() {
        let mut dfs = DfsDecider::new(1);
        dfs.set_package(Some("app".into()), Vec::new());
        let home = screen("app", &["One", "Two", "Three"]);
        let mut decisions = Vec::new();
        while decisions.len() < 10 {
            let decision = dfs.decide(&Screen::of(&home));
            let backed = decision.actions[0].action == ActionType::Back;
            decisions.push(decision);
            if backed {
                break;
            }
        }
        let (last, tried) = decisions.split_last().unwrap();
        assert_eq!(last.actions[0].action, ActionType::Back);
        let clicked: Vec<String> = labels(tried)
            .into_iter()
            .filter(|label| label.starts_with("click"))
            .collect();
        let unique: HashSet<&String> = clicked.iter().collect();
        assert_eq!((clicked.len(), unique.len()), (3, 3), "{clicked:?}");
        assert_eq!(
            dfs.decide(&Screen::of(&home)).relaunch.as_deref(),
            Some("app")
        );
    }

    #[test]
    fn after_relaunches_that_find_nothing_an_exhausted_screen_gets_random_actions() {
        let mut dfs = DfsDecider::new(2);
        dfs.set_package(Some("app".into()), Vec::new());
        let home = screen("app", &["One", "Two"]);
        let mut relaunches = 0;
        let mut after = Vec::new();
        for _ in 0..40 {
            let decision = dfs.decide(&Screen::of(&home));
            match (decision.relaunch.is_some(), relaunches >= MAX_RESTARTS) {
                (true, _) => relaunches += 1,
                (false, true) => after.push(decision),
                (false, false) => {}
            }
        }
        // Back on the exhausted home screen changes nothing: relaunch after relaunch, then
        // random actions of the screen (its buttons and back), never only backs.
        assert!(relaunches >= MAX_RESTARTS, "{relaunches}");
        let clicks = labels(&after)
            .into_iter()
            .filter(|label| label.starts_with("click"))
            .count();
        assert!(clicks > 0 && !after.is_empty(), "{:?}", labels(&after));
        // A new screen ends the random mode: its own actions come first.
        let other = screen("app", &["Three"]);
        assert_eq!(
            labels(&[dfs.decide(&Screen::of(&other))]),
            [String::from("click Button \"Three\"")]
        );
    }

    #[test]
    fn outside_the_app_a_back_then_a_relaunch() {
        let mut dfs = DfsDecider::new(0);
        dfs.set_package(Some("app".into()), Vec::new());
        let browser = screen("browser", &["Url"]);
        assert_eq!(
            dfs.decide(&Screen::of(&browser)).actions[0].action,
            ActionType::Back
        );
        assert_eq!(
            dfs.decide(&Screen::of(&browser)).relaunch.as_deref(),
            Some("app")
        );
        dfs.set_package(Some("app".into()), vec!["browser".into()]);
        assert_eq!(
            dfs.decide(&Screen::of(&browser)).actions[0].action,
            ActionType::Click
        );
    }

    #[test]
    fn the_seed_orders_the_widgets_and_the_same_seed_repeats_itself() {
        let home = screen("app", &["A", "B", "C", "D", "E", "F"]);
        let run = |seed| {
            let mut dfs = DfsDecider::new(seed);
            dfs.set_package(Some("app".into()), Vec::new());
            labels(
                &(0..6)
                    .map(|_| dfs.decide(&Screen::of(&home)))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
