//! The hybrid decider's switch: the heuristic decides until the exploration plateaus (no new
//! state told apart for [`HybridConfig::plateau_steps`] steps, or the heuristic has explored
//! everything it found), then the model decides until a new state is found or
//! [`HybridConfig::model_calls`] calls pass without one; then the heuristic again. Quiet steps
//! call a model asked before only while its steps have found new states at least as often as
//! the heuristic's (Laplace's rule over each side's steps): a model that finds less waits until
//! the heuristic's own rate has fallen to its, and one that finds twice as much is asked after
//! fewer quiet steps. The model is called for at most [`HybridConfig::model_share`] percent of
//! the run's steps, and a turn starts only when that share holds all its calls. Steps walked to
//! states a call named (`visit`, see [`super::response::visits`]) are the model's part but no
//! calls: the part goes on until they are walked, whatever they find.

use super::provider::ProviderConfig;

/// Steps without a new state before the model is asked (`plateau_steps`).
pub const PLATEAU_STEPS: u32 = 6;

/// The most of a run's steps, in percent, the model is called for (`model_share`).
pub const MODEL_SHARE: u32 = 20;

/// Model calls without a new state before the heuristic decides again (`plateau_model_calls`).
pub const MODEL_CALLS: u32 = 4;

/// The hybrid decider: its model and when it is asked.
#[derive(Debug, Clone)]
pub struct HybridConfig {
    pub provider: ProviderConfig,
    /// K: steps without a new state that make a plateau.
    pub plateau_steps: u32,
    /// L: model calls without a new state before the heuristic takes over again.
    pub model_calls: u32,
    /// The most of the run's steps, in percent, the model is called for.
    pub model_share: u32,
}

/// Who decides the next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Heuristic,
    Model,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Heuristic => "heuristic",
            Phase::Model => "model",
        }
    }
}

/// The switch's memory.
#[derive(Debug, Clone)]
pub struct Plateau {
    plateau_steps: u32,
    model_calls: u32,
    model_share: u32,
    phase: Phase,
    /// States told apart at the last step.
    states: usize,
    /// Steps the heuristic decided since the last new state.
    quiet: u32,
    /// Model calls in this model phase.
    calls: u32,
    /// The model was given its calls on this plateau and found nothing: the heuristic's "nothing
    /// left" no longer calls it (a new state does, or another K quiet steps).
    gave_up: bool,
    /// Steps each side decided so far, and those that found a new state (the model's steps
    /// include those walked to a screen it named).
    heuristic_steps: u32,
    heuristic_found: u32,
    model_steps: u32,
    model_found: u32,
    /// Steps the model was asked to decide (its calls): what its share bounds.
    model_asked: u32,
    /// New states found on walks to what the model named, in this model phase.
    walked_found: u32,
}

/// How often steps found a new state, by Laplace's rule: (found + 1) / (steps + 2).
fn rate(found: u32, steps: u32) -> f64 {
    f64::from(found + 1) / f64::from(steps + 2)
}

/// A change of who decides, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Switch {
    pub to: Phase,
    pub why: String,
}

impl Plateau {
    pub fn new(config: &HybridConfig) -> Plateau {
        Plateau {
            plateau_steps: config.plateau_steps.max(1),
            model_calls: config.model_calls.max(1),
            model_share: config.model_share.clamp(1, 100),
            phase: Phase::Heuristic,
            states: 0,
            quiet: 0,
            calls: 0,
            gave_up: false,
            heuristic_steps: 0,
            heuristic_found: 0,
            model_steps: 0,
            model_found: 0,
            model_asked: 0,
            walked_found: 0,
        }
    }

    /// Whether the model is worth a turn: its share has room for the turn's calls, and it was
    /// not asked yet or its steps found new states at least as often as the heuristic's
    /// (Laplace's rule over each side's steps).
    fn model_pays(&self) -> bool {
        if !self.room_for_turn() {
            return false;
        }
        self.model_steps == 0
            || rate(self.model_found, self.model_steps)
                >= rate(self.heuristic_found, self.heuristic_steps)
    }

    /// Whether the model was asked fewer than its share of the steps so far.
    fn within_share(&self) -> bool {
        let steps = self.heuristic_steps + self.model_steps;
        100 * u64::from(self.model_asked) < u64::from(self.model_share) * u64::from(steps.max(1))
    }

    /// Whether the model's share holds a whole turn ([`HybridConfig::model_calls`] calls) on
    /// top of the steps so far: a turn cut short by the share after one call has walked a step
    /// towards a screen the heuristic then walks away from.
    fn room_for_turn(&self) -> bool {
        let steps = u64::from(self.heuristic_steps + self.model_steps + self.model_calls);
        100 * u64::from(self.model_asked + self.model_calls) <= u64::from(self.model_share) * steps
    }

    /// Quiet steps that make a plateau: fewer once the model's steps found new states at least
    /// twice as often as the heuristic's.
    fn quiet_limit(&self) -> u32 {
        let proven = self.model_found > 0
            && rate(self.model_found, self.model_steps)
                >= 2.0 * rate(self.heuristic_found, self.heuristic_steps);
        match proven {
            true => (self.plateau_steps / 4).max(2),
            false => self.plateau_steps,
        }
    }

    /// Takes in a step about to be decided: the states the exploration tells apart now,
    /// whether the heuristic has nothing left to try, and whether a model's phase step is
    /// walked to a screen the model named (`guided`: the heuristic decides it, the model is not
    /// called). Who decides it, and the switch, if this step changes who.
    pub fn step(
        &mut self,
        states: usize,
        nothing_left: bool,
        guided: bool,
    ) -> (Phase, Option<Switch>) {
        let new = states > self.states;
        self.states = self.states.max(states);
        if new {
            self.gave_up = false;
        }
        // The step before this one, decided by the phase it was in, found `new` or not.
        match self.phase {
            Phase::Heuristic => {
                self.heuristic_steps += 1;
                self.heuristic_found += u32::from(new);
            }
            Phase::Model => {
                self.model_steps += 1;
                self.model_found += u32::from(new);
            }
        }
        let switch = match self.phase {
            Phase::Heuristic => {
                self.quiet = if new { 0 } else { self.quiet + 1 };
                let why = match (
                    self.quiet >= self.quiet_limit() && self.model_pays(),
                    nothing_left && !self.gave_up,
                ) {
                    (true, _) => Some(format!("no new state for {} steps", self.quiet)),
                    (false, true) if self.within_share() => {
                        Some("the heuristic has nothing left to try".to_string())
                    }
                    // Its share spent, the model is not asked: the exploration may end.
                    (false, true) => {
                        self.gave_up = true;
                        None
                    }
                    (false, false) => None,
                };
                why.map(|why| {
                    self.calls = 0;
                    self.walked_found = 0;
                    Switch {
                        to: Phase::Model,
                        why: format!("{why}: the model decides"),
                    }
                })
            }
            // The walk to what the model named goes on, whatever it finds on the way.
            Phase::Model if guided => {
                self.walked_found += u32::from(new);
                None
            }
            Phase::Model if new => Some(Switch {
                to: Phase::Heuristic,
                why: "the model found a new state: the heuristic decides".to_string(),
            }),
            Phase::Model if self.calls >= self.model_calls => {
                self.gave_up = true;
                let why = match self.walked_found {
                    0 => format!("{} model calls found no new state", self.calls),
                    found => format!(
                        "the model's visits found {found} new state{}, its {} calls no more",
                        if found == 1 { "" } else { "s" },
                        self.calls
                    ),
                };
                Some(Switch {
                    to: Phase::Heuristic,
                    why: format!("{why}: the heuristic decides"),
                })
            }
            Phase::Model if !self.within_share() => Some(Switch {
                to: Phase::Heuristic,
                why: "the model decided its share of the steps: the heuristic decides".to_string(),
            }),
            Phase::Model => None,
        };
        if let Some(switch) = &switch {
            self.phase = switch.to;
            self.quiet = 0;
        }
        if self.phase == Phase::Model && !guided {
            self.calls += 1;
            self.model_asked += 1;
        }
        (self.phase, switch)
    }

    /// Whether the model had its calls since the last new state and found nothing (the
    /// exploration may end when the heuristic has nothing left either).
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plateau(k: u32, l: u32) -> Plateau {
        shared(k, l, 100)
    }

    fn shared(k: u32, l: u32, share: u32) -> Plateau {
        Plateau::new(&HybridConfig {
            provider: ProviderConfig::new(super::super::provider::ProviderKind::OpenAi),
            plateau_steps: k,
            model_calls: l,
            model_share: share,
        })
    }

    #[test]
    fn the_model_decides_at_most_its_share_of_the_steps() {
        // A model that finds a new state every other call, a heuristic that finds none: the
        // model would decide half the steps, its share holds it to a fifth.
        let mut p = shared(2, 4, 20);
        let (mut states, mut model_steps) = (1, 0);
        for step in 1..=200u32 {
            let (phase, _) = p.step(states, false, false);
            if phase == Phase::Model {
                model_steps += 1;
                states += usize::from(model_steps % 2 == 0);
            }
            assert!(
                100 * model_steps <= 20 * step + 100,
                "{model_steps} of {step}"
            );
        }
        assert!(model_steps >= 30, "{model_steps}");
        // Its share spent, "nothing left" does not call it: the exploration may end.
        let mut p = shared(50, 4, 20);
        assert_eq!(p.step(1, true, false).0, Phase::Model);
        let (phase, switch) = p.step(1, true, false);
        assert_eq!(phase, Phase::Heuristic);
        assert!(switch.unwrap().why.contains("its share of the steps"));
        assert_eq!(p.step(1, true, false), (Phase::Heuristic, None));
        assert!(p.gave_up());
    }

    #[test]
    fn a_turn_starts_only_when_the_share_holds_all_its_calls() {
        // A share of a fifth and turns of four calls: the first plateau (two quiet steps) comes
        // before the share holds four calls: the model waits until its four calls and the
        // sixteen steps before them make twenty.
        let mut p = shared(2, 4, 20);
        let first = (1..=40u32).find(|_| p.step(1, false, false).0 == Phase::Model);
        assert_eq!(first, Some(16));
        // Its four calls find nothing, yet every one of them is made: no turn is cut short.
        for _ in 0..3 {
            assert_eq!(p.step(1, false, false).0, Phase::Model);
        }
        let (phase, switch) = p.step(1, false, false);
        assert_eq!(phase, Phase::Heuristic);
        assert!(switch
            .unwrap()
            .why
            .starts_with("4 model calls found no new state"));
    }

    #[test]
    fn a_model_finding_twice_as_much_as_the_heuristic_is_asked_sooner() {
        let mut p = plateau(8, 2);
        // The heuristic finds two states in ten steps; a plateau of eight steps.
        for states in [1, 1, 2, 2, 2, 2, 2, 2, 2, 2] {
            assert_eq!(p.step(states, false, false).0, Phase::Heuristic);
        }
        assert_eq!(p.step(2, false, false).0, Phase::Model);
        // The model finds a state at its first call: two quiet steps make the next plateau.
        assert_eq!(p.step(3, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(3, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(3, false, false).0, Phase::Model);
    }

    #[test]
    fn the_model_decides_on_a_plateau_until_a_new_state_or_its_calls_run_out() {
        let mut p = plateau(3, 2);
        // New states: the heuristic decides.
        for states in 1..=4 {
            assert_eq!(p.step(states, false, false), (Phase::Heuristic, None));
        }
        assert_eq!(p.step(4, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(4, false, false).0, Phase::Heuristic);
        let (phase, switch) = p.step(4, false, false);
        assert_eq!(phase, Phase::Model);
        assert!(switch.unwrap().why.starts_with("no new state for 3 steps"));
        // A new state: back to the heuristic at once.
        let (phase, switch) = p.step(5, false, false);
        assert_eq!(
            (phase, switch.unwrap().to),
            (Phase::Heuristic, Phase::Heuristic)
        );
        // Another plateau; the model's two calls find nothing.
        for _ in 0..2 {
            assert_eq!(p.step(5, false, false).0, Phase::Heuristic);
        }
        assert_eq!(p.step(5, false, false).0, Phase::Model);
        assert_eq!(p.step(5, false, false), (Phase::Model, None));
        let (phase, switch) = p.step(5, false, false);
        assert_eq!(phase, Phase::Heuristic);
        assert!(switch
            .unwrap()
            .why
            .starts_with("2 model calls found no new state"));
        assert!(p.gave_up());
    }

    #[test]
    fn a_model_finding_less_than_the_heuristic_waits_until_the_heuristic_finds_as_little() {
        let mut p = plateau(2, 2);
        // Six steps of the heuristic's, a new state each; then two quiet ones: a model not
        // asked yet gets its turn.
        for states in 1..=6 {
            assert_eq!(p.step(states, false, false).0, Phase::Heuristic);
        }
        assert_eq!(p.step(6, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(6, false, false).0, Phase::Model);
        // Its two calls find nothing: 1 in 4 by Laplace's rule, the heuristic 7 in 10.
        assert_eq!(p.step(6, false, false).0, Phase::Model);
        assert_eq!(p.step(6, false, false).0, Phase::Heuristic);
        // Quiet steps no longer call it until the heuristic's own steps find as little.
        let waited = (1..100)
            .find(|_| p.step(6, false, false).0 == Phase::Model)
            .unwrap();
        assert!(waited > 10, "{waited}");
        // Its next call finds a state: it is asked again after K quiet steps.
        assert_eq!(p.step(7, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(7, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(7, false, false).0, Phase::Model);
    }

    #[test]
    fn nothing_left_calls_the_model_once_per_discovery() {
        let mut p = plateau(10, 1);
        assert_eq!(p.step(1, false, false).0, Phase::Heuristic);
        let (phase, switch) = p.step(1, true, false);
        assert_eq!(phase, Phase::Model);
        assert!(switch.unwrap().why.contains("nothing left"));
        assert_eq!(p.step(1, true, false).0, Phase::Heuristic);
        // Given up: the heuristic's "nothing left" no longer calls the model.
        assert_eq!(p.step(1, true, false), (Phase::Heuristic, None));
        assert!(p.gave_up());
        // A new state does.
        assert_eq!(p.step(2, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(2, true, false).0, Phase::Model);
    }

    #[test]
    fn steps_walked_to_a_screen_the_model_named_are_no_calls() {
        let mut p = plateau(2, 2);
        assert_eq!(p.step(1, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(1, false, false).0, Phase::Heuristic);
        // The model's call names screens; the walk there takes three steps, none a call, and
        // goes on past a new state.
        assert_eq!(p.step(1, false, false).0, Phase::Model);
        for _ in 0..3 {
            assert_eq!(p.step(1, false, true), (Phase::Model, None));
        }
        assert_eq!(p.step(2, false, true), (Phase::Model, None));
        let (phase, switch) = p.step(3, false, false);
        assert_eq!(phase, Phase::Heuristic);
        assert!(switch.unwrap().why.contains("found a new state"));
        // Quiet again: the model's next turn.
        assert_eq!(p.step(3, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(3, false, false).0, Phase::Model);
        for _ in 0..3 {
            assert_eq!(p.step(3, false, true), (Phase::Model, None));
        }
        // Arrived without a new state: its second call, then its turn is over.
        assert_eq!(p.step(1, false, false), (Phase::Model, None));
        let (phase, switch) = p.step(1, false, false);
        assert_eq!(phase, Phase::Heuristic);
        assert!(switch.unwrap().why.contains("2 model calls"));
    }

    #[test]
    fn a_turn_whose_visits_found_states_does_not_end_as_finding_none() {
        let mut p = plateau(1, 2);
        assert_eq!(p.step(1, false, false).0, Phase::Heuristic);
        assert_eq!(p.step(1, false, false).0, Phase::Model);
        // The walk finds a state midway, then arrives; the model's second call finds nothing.
        assert_eq!(p.step(1, false, true), (Phase::Model, None));
        assert_eq!(p.step(2, false, true), (Phase::Model, None));
        assert_eq!(p.step(2, false, true), (Phase::Model, None));
        assert_eq!(p.step(2, false, false), (Phase::Model, None));
        let (phase, switch) = p.step(2, false, false);
        assert_eq!(phase, Phase::Heuristic);
        assert_eq!(
            switch.unwrap().why,
            "the model's visits found 1 new state, its 2 calls no more: the heuristic decides"
        );
        // The next turn (once the heuristic finds as little as the model) counts anew.
        let quiet = (0..10).take_while(|_| p.step(2, false, false).0 == Phase::Heuristic);
        assert!(quiet.count() < 10);
        assert_eq!(p.step(2, false, false), (Phase::Model, None));
        let (_, switch) = p.step(2, false, false);
        assert!(switch
            .unwrap()
            .why
            .starts_with("2 model calls found no new state"));
    }

    #[test]
    fn the_share_bounds_the_calls_not_the_steps_walked() {
        let mut p = shared(1, 4, 20);
        // Twenty of the heuristic's steps; then a turn whose first call names a screen walked
        // to in ten steps: the share (a fifth of the steps) counts the one call.
        for states in 1..=20 {
            p.step(states, false, false);
        }
        assert_eq!(p.step(20, false, false).0, Phase::Model);
        for _ in 0..10 {
            assert_eq!(p.step(20, false, true).0, Phase::Model);
        }
        assert!(p.within_share());
        assert_eq!(p.step(20, false, false), (Phase::Model, None));
    }
}
