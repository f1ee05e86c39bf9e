//! A Monkey-like baseline: a random actionable element or gesture, from a seeded generator.

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::events::{Action, ActionType, Observation};
use crate::screen::{action_on, primary_action};
use crate::ui::is_actionable;

const WORDS: [&str; 6] = [
    "hello",
    "test",
    "42",
    "droid@example.com",
    "a b c",
    "Zürich",
];

pub struct RandomDecider {
    rng: ChaCha8Rng,
}

impl RandomDecider {
    pub fn new(seed: u64) -> RandomDecider {
        RandomDecider {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// One random action: 75% an actionable element (its main action, random text for fields),
    /// 10% a scroll, 5% a swipe, 10% back; back when nothing is actionable.
    pub fn decide(&mut self, observation: &Observation) -> Action {
        let elements: Vec<_> = observation
            .elements
            .iter()
            .filter(|e| is_actionable(e))
            .collect();
        let roll = self.rng.gen_range(0..100);
        let gesture = |kind: ActionType| {
            let mut action = Action::new(kind.clone());
            action.action_desc = Some(kind.to_string());
            action.reasoning = Some("random".into());
            action
        };
        match roll {
            0..=74 if !elements.is_empty() => {
                let element = elements[self.rng.gen_range(0..elements.len())];
                let kind = primary_action(element);
                let mut action = action_on(&observation.elements, element, kind.clone(), "random");
                if kind == ActionType::Input {
                    action.input_text = Some(WORDS[self.rng.gen_range(0..WORDS.len())].into());
                }
                action
            }
            75..=79 => gesture(ActionType::ScrollDown),
            80..=84 => gesture(ActionType::ScrollUp),
            85..=87 => gesture(ActionType::SwipeLeft),
            88..=89 => gesture(ActionType::SwipeRight),
            _ => gesture(ActionType::Back),
        }
    }
}
