//! The decide stage: one `decision` per `observation`, every other line passed through unchanged.
//!
//! Deciders: [`heuristic`] (coverage-guided, the default), two baselines, [`random`] (a seeded
//! Monkey-like one) and [`dfs`] (DroidBot-style depth-first), and LLM providers behind [`provider::ModelAdapter`] (Gemini, OpenRouter, Ollama,
//! OpenAI-compatible servers), prompted by [`prompt`] and read back by [`response`]. The
//! heuristic's graph is kept for the heuristic and the model deciders: it learns from each
//! observation, from every decision, and from the `result` lines that pass through (when a
//! long-running decide sits in a loop), and it decides when a model fails or answers nonsense.

pub mod cli;
pub mod cost;
pub mod dfs;
pub mod from_store;
pub mod graph;
pub mod heuristic;
pub mod hybrid;
pub mod prompt;
pub mod provider;
pub mod random;
pub mod response;

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::config::{self, Settings};
use crate::events::{
    Action, ActionResult, ActionType, AiMeta, Decision, Event, Line, Note, NoteKind, Observation,
};
use crate::filter::Output;
use crate::screen::Screen;
pub use crate::secret::TEST_PASSWORD_PLACEHOLDER;
use cost::{Budget, OnBudget, Price, Spent};
use dfs::DfsDecider;
use graph::ScreenIndex;
use heuristic::Heuristic;
use hybrid::{HybridConfig, Phase, Plateau};
pub use prompt::ON_SCREEN_NOW;
use prompt::{Context, PastStep, PromptSettings};
use provider::{ModelAdapter, ProviderConfig, ProviderError};
use random::RandomDecider;
use response::Visit;

/// Test credentials for sign-in and sign-up forms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Credentials {
    pub email: Option<String>,
    pub username: Option<String>,
    /// Only whether one is set matters here: decisions type [`TEST_PASSWORD_PLACEHOLDER`] and
    /// droid-act puts the password in, so it never lands in an event or reaches a model.
    pub password: Option<String>,
}

impl Credentials {
    /// The test credentials, each resolved flag > user_config.db > environment
    /// (`test_email`, `test_username`, `test_password`).
    pub fn resolve(
        email: Option<&str>,
        username: Option<&str>,
        password: Option<&str>,
        settings: &mut Settings,
    ) -> Result<Credentials, config::Error> {
        Ok(Credentials {
            email: settings.plain("test_email", email)?,
            username: settings.plain("test_username", username)?,
            password: settings
                .secret("test_password", password)?
                .map(|password| password.expose().to_string()),
        })
    }
}

/// Which decider picks the actions.
#[derive(Debug, Clone)]
pub enum Decider {
    Heuristic,
    Random,
    Dfs,
    Model(ProviderConfig),
    /// The heuristic, and a model where the exploration plateaus (see [`hybrid`]).
    Hybrid(HybridConfig),
}

impl Decider {
    /// The name written into `decision.decider`.
    pub fn name(&self) -> &'static str {
        match self {
            Decider::Heuristic => "heuristic",
            Decider::Random => "random",
            Decider::Dfs => "dfs",
            Decider::Model(config) => config.kind.as_str(),
            Decider::Hybrid(_) => "hybrid",
        }
    }

    /// The model it asks, if any.
    pub fn provider(&self) -> Option<&ProviderConfig> {
        match self {
            Decider::Model(provider) => Some(provider),
            Decider::Hybrid(hybrid) => Some(&hybrid.provider),
            Decider::Heuristic | Decider::Random | Decider::Dfs => None,
        }
    }
}

/// What the stage does.
#[derive(Debug, Clone)]
pub struct Config {
    pub decider: Decider,
    /// Seeds the heuristic's tie-breaks, the random decider and the depth-first one's order.
    pub seed: u64,
    /// Prompt settings; `package`, `allowed_packages` and `credentials` serve the heuristic too.
    pub prompt: PromptSettings,
    /// Events of the run so far (from [`from_store::history`]), learned before the first line.
    pub history: Vec<Event>,
    /// Let the heuristic decide when the model was never reached (a server that is down, a
    /// mistyped `--base-url`), instead of stopping the stage.
    pub fall_back_when_unreachable: bool,
    /// What the model calls may spend (see [`cost`]).
    pub budget: Budget,
    /// The model's price per million tokens, when it has one (see [`Price::of`]).
    pub price: Option<Price>,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The model cannot be used at all (a rejected key, a missing model): the stage stops.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The server refused the same way on consecutive steps: asking again will not help.
    #[error("the same refusal {steps} steps in a row: the stage stops")]
    Repeated {
        steps: u32,
        #[source]
        source: ProviderError,
    },
    /// The model did not answer once (no HTTP answer at all): a crawl that never asks its model
    /// would mislead.
    #[error(
        "the model was never reached (is the server up, is --base-url right? \
         --on-unreachable fallback lets the heuristic decide instead)"
    )]
    Unreachable(#[source] ProviderError),
    #[error("user_config.db")]
    Settings(#[from] config::Error),
    #[error("{0}")]
    Flag(String),
    #[error("reading --system-prompt {}", path.display())]
    SystemPromptUnreadable {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("--system-prompt {} is empty: the model would get no instructions", .0.display())]
    SystemPromptEmpty(PathBuf),
}

/// Consecutive steps a model call may be refused the same way (the same 4xx answer: a request
/// shape the server rejects, too many images, a model it lacks) before the stage stops: each
/// such step is decided by the heuristic, and a crawl that silently never reaches its model
/// would mislead.
pub const REFUSALS_BEFORE_STOP: u32 = 3;

/// Lists a provider's models (`droid-decide models --provider P`).
pub fn list_models(config: ProviderConfig) -> Result<Vec<provider::ModelInfo>, ProviderError> {
    provider::connect(config)?.list_models()
}

/// A `--system-prompt` file's text, sent as it is; an empty one would send the model no
/// instructions at all.
pub fn read_system_prompt(path: &Path) -> Result<String, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::SystemPromptUnreadable {
        path: path.to_path_buf(),
        source,
    })?;
    match text.trim().is_empty() {
        true => Err(Error::SystemPromptEmpty(path.to_path_buf())),
        false => Ok(text),
    }
}

/// What `droid-decide models` says on stderr when it leaves models out: without `all`, the
/// models of unknown capability (vLLM's list says nothing of images, and an empty list would
/// look like none).
pub fn hidden_models_note(models: &[provider::ModelInfo], all: bool) -> Option<String> {
    let unknown = models.iter().filter(|m| m.vision.is_none()).count();
    (!all && unknown > 0)
        .then(|| format!("{unknown} more model(s) of unknown capability: --all lists them"))
}

/// The lines `droid-decide models` prints: vision-capable model names, or with `all` every
/// model with its capability (`vision`, `text`, `unknown`) after a tab.
pub fn model_list_lines(models: &[provider::ModelInfo], all: bool) -> Vec<String> {
    models
        .iter()
        .filter(|m| all || m.vision == Some(true))
        .map(|m| match all {
            false => m.name.clone(),
            true => {
                let label = m
                    .vision
                    .map_or("unknown", |v| if v { "vision" } else { "text" });
                format!("{}\t{label}", m.name)
            }
        })
        .collect()
}

impl crate::filter::Filter for Stage {
    type Error = Error;

    /// Passes the line on; decides on an observation (notes, then the decision, written after
    /// it; model failures told to people as they happen); learns from any other event. A stop
    /// writes its note of kind `error`, then ends the stage.
    fn line(&mut self, line: Line, out: &mut Output<'_>) -> Result<(), Error> {
        out.pass(&line);
        let (events, stop) = match &line.event {
            Some(Event::Observation(observation)) => match self.decide(observation) {
                Ok(events) => (events, None),
                Err(Stop { events, error }) => (events, Some(error)),
            },
            Some(event) => {
                self.learn(event);
                (Vec::new(), None)
            }
            None => (Vec::new(), None),
        };
        for event in &events {
            if let Event::Note(note) = event {
                let told = matches!(note.kind, NoteKind::Warning | NoteKind::InvalidResponse);
                if let Some(message) = note.message.as_ref().filter(|_| told) {
                    out.tell(message);
                }
            }
            out.event(event);
        }
        stop.map_or(Ok(()), Err)
    }
}

/// A decide stage that could not start (no key, an unusable one): it passes every line through,
/// writes the `note` of kind `error` saying why after the first (or at the end of an empty
/// input), and fails the run (exit 1), so a pipe still carries the stream and says what went
/// wrong.
pub struct Unstarted {
    error: Error,
    run_id: Option<String>,
    noted: bool,
}

impl Unstarted {
    pub fn new(error: Error) -> Unstarted {
        Unstarted {
            error,
            run_id: None,
            noted: false,
        }
    }

    fn note(&mut self, out: &mut Output<'_>, observation: Option<&Observation>) {
        if std::mem::replace(&mut self.noted, true) {
            return;
        }
        let note = Note {
            run_id: observation
                .and_then(|o| o.run_id.clone())
                .or_else(|| self.run_id.clone()),
            step: observation.and_then(|o| o.step),
            ..Note::now(
                NoteKind::Error,
                crate::filter::Chain(&self.error).to_string(),
            )
        };
        out.event(&Event::Note(note));
    }
}

impl crate::filter::Filter for Unstarted {
    type Error = std::convert::Infallible;

    fn line(&mut self, line: Line, out: &mut Output<'_>) -> Result<(), Self::Error> {
        out.pass(&line);
        match &line.event {
            Some(Event::RunStarted(started)) => self.run_id = Some(started.run_id.clone()),
            Some(Event::Observation(observation)) => self.note(out, Some(observation)),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Output<'_>) -> Result<(), Self::Error> {
        self.note(out, None);
        out.problem(&crate::filter::Chain(&self.error));
        Ok(())
    }
}

/// The stage stops: the error, and the events written before it (a `note` of kind `error`
/// with the failed call's `ai` metadata).
#[derive(Debug)]
pub struct Stop {
    pub events: Vec<Event>,
    pub error: Error,
}

/// Model calls refused the same way on consecutive steps (see [`REFUSALS_BEFORE_STOP`]).
#[derive(Debug, Default)]
struct Refusals {
    last: Option<String>,
    steps: u32,
}

impl Refusals {
    /// Takes in a failed call's metadata; returns how many steps in a row ended in this refusal
    /// (0 when it is not one: a timeout, a 5xx, a 429).
    fn count(&mut self, ai: &AiMeta) -> u32 {
        let status = ai.attempts.last().and_then(|attempt| attempt.http_status);
        let refusal = status.is_some_and(|s| (400..500).contains(&s) && !matches!(s, 408 | 429));
        match ai.error.as_ref().filter(|_| refusal) {
            Some(error) if self.last.as_ref() == Some(error) => self.steps += 1,
            Some(error) => {
                self.last = Some(error.clone());
                self.steps = 1;
            }
            None => *self = Refusals::default(),
        }
        self.steps
    }
}

/// The decide stage as values: an observation in, the events it writes out (notes and one
/// decision); every other event passing by is learned from. A stage resuming a recorded run
/// ([`Config::history`]) takes the run's events in through the same code, so it decides as a
/// stage that saw the run live would.
pub struct Stage {
    name: &'static str,
    heuristic: Heuristic,
    /// The baseline deciding instead of the heuristic (`random`, `dfs`).
    baseline: Option<Baseline>,
    model: Option<Box<dyn ModelAdapter>>,
    settings: PromptSettings,
    run_id: Option<String>,
    journal: Vec<PastStep>,
    stuck_reason: Option<String>,
    /// The previous answer was invalid: ask for one action.
    single_action: bool,
    /// The last decision written and the observation it was for (results refer to them).
    last: Option<(Decision, Observation)>,
    refusals: Refusals,
    /// The recorded run's last observation, which no decision followed: taken in before the
    /// next observation unless that is the same step (the observation given again).
    undecided: Option<Observation>,
    /// The model answered at least once (any HTTP answer), in this run.
    reached: bool,
    fall_back_when_unreachable: bool,
    /// The hybrid decider's switch between the heuristic and the model.
    plateau: Option<Plateau>,
    /// Why the model is asked no more in this run (its budget spent, the hybrid's model
    /// failing for good).
    model_off: Option<String>,
    budget: Budget,
    price: Option<Price>,
    spent: Spent,
    /// The budget is spent and the run is to end (`--on-budget run`): why.
    budget_stop: Option<String>,
    /// Written as `decider` on the decisions the model made.
    model_name: &'static str,
}

/// Backs a decider presses in another app (the app under test left for a browser, say) before it
/// relaunches the app instead: one, since an app that opened another is one back away.
pub(crate) const BACKS_OUTSIDE_THE_APP: u32 = 1;

/// States (and untried elements per state) a hybrid's model is told of.
const UNTRIED_LINES: usize = 8;

/// Who decided a step: the name written into a decision made by the heuristic, on its own or
/// when a model failed.
const HEURISTIC: &str = "heuristic";

impl Stage {
    pub fn new(mut config: Config) -> Result<Stage, Error> {
        let mut credentials = config.prompt.credentials.clone();
        if credentials.password.is_some() {
            credentials.password = Some(TEST_PASSWORD_PLACEHOLDER.to_string());
        }
        let mut heuristic = Heuristic::new(config.seed, credentials);
        heuristic.set_package(
            config.prompt.package.clone(),
            config.prompt.allowed_packages.clone(),
        );
        let name = config.decider.name();
        let history = std::mem::take(&mut config.history);
        let (baseline, model) = match &config.decider {
            Decider::Heuristic => (None, None),
            Decider::Random => (
                Some(Baseline::Random(Box::new(RandomDecider::new(config.seed)))),
                None,
            ),
            Decider::Dfs => (
                Some(Baseline::Dfs(Box::new(DfsDecider::new(config.seed)))),
                None,
            ),
            Decider::Model(provider) => (None, Some(provider::connect(provider.clone())?)),
            Decider::Hybrid(hybrid) => (None, Some(provider::connect(hybrid.provider.clone())?)),
        };
        let plateau = match &config.decider {
            Decider::Hybrid(hybrid) => Some(Plateau::new(hybrid)),
            _ => None,
        };
        let mut stage = Stage {
            name,
            heuristic,
            baseline,
            model,
            settings: config.prompt,
            run_id: None,
            journal: Vec::new(),
            stuck_reason: None,
            single_action: false,
            last: None,
            refusals: Refusals::default(),
            undecided: None,
            reached: false,
            fall_back_when_unreachable: config.fall_back_when_unreachable,
            plateau,
            model_off: None,
            budget: config.budget,
            price: config.price,
            spent: Spent::default(),
            budget_stop: None,
            model_name: config
                .decider
                .provider()
                .map_or(name, |provider| provider.kind.as_str()),
        };
        stage.set_package();
        stage.resume(&history);
        Ok(stage)
    }

    /// The heuristic behind the stage (its graph is the run's screen graph).
    pub fn heuristic(&self) -> &Heuristic {
        &self.heuristic
    }

    /// Whether the heuristic decides this stage and has explored everything it found (see
    /// [`Heuristic::explored`]): a driver may end the run.
    pub fn explored(&self) -> bool {
        let model_done = match (&self.model, &self.plateau) {
            (None, _) => true,
            (Some(_), _) if self.model_off.is_some() => true,
            (Some(_), Some(plateau)) => plateau.gave_up(),
            (Some(_), None) => false,
        };
        self.baseline.is_none() && model_done && self.heuristic.explored()
    }

    /// Whether the model decides this step (the hybrid's switch moved on by it, its note
    /// written when it changes who decides).
    fn model_decides(&mut self, observation: &Observation, events: &mut Vec<Event>) -> bool {
        self.check_budget(observation, events);
        if self.model.is_none() || self.model_off.is_some() {
            return false;
        }
        let tally = self.heuristic.graph().tally();
        let nothing_left = self.heuristic.explored() || self.heuristic.began_pass();
        let guided = self.heuristic.walks_to_goal();
        let Some(plateau) = self.plateau.as_mut() else {
            return true;
        };
        let (phase, switch) = plateau.step(tally.states, nothing_left, guided);
        if let Some(switch) = switch {
            let data = json!({"decides": phase.as_str(), "states": tally.states});
            events.push(self.note(observation, NoteKind::Switch, Some(switch.why), Some(data)));
        }
        // Screens the model named are walked to in its part only (which lasts until they
        // are): none is left for the heuristic's.
        if phase == Phase::Heuristic {
            self.heuristic.clear_goals();
        }
        phase == Phase::Model && !guided
    }

    /// What the run's model calls spent so far.
    pub fn spent(&self) -> &Spent {
        &self.spent
    }

    /// Why the run is to end: its budget spent, with `--on-budget run`.
    pub fn budget_stop(&self) -> Option<&str> {
        self.budget_stop.as_deref()
    }

    /// Takes in one model call (its cost into `meta`), then stops the model part, or the run,
    /// when the budget is spent.
    fn charge(&mut self, meta: &mut AiMeta, observation: &Observation, events: &mut Vec<Event>) {
        meta.cost = self.spent.add(self.price, meta.tokens_in, meta.tokens_out);
        self.check_budget(observation, events);
    }

    /// Once the budget is spent: the model is asked no more (the heuristic goes on), and with
    /// `--on-budget run` the run is to end; a note says which.
    fn check_budget(&mut self, observation: &Observation, events: &mut Vec<Event>) {
        if self.model.is_none() || self.model_off.is_some() {
            return;
        }
        let Some(why) = self.budget.spent(&self.spent) else {
            return;
        };
        let message = match self.budget.on_spent {
            OnBudget::Model => {
                format!(
                    "{why}: the model is asked no more, the heuristic decides the rest of the run"
                )
            }
            OnBudget::Run => {
                self.budget_stop = Some(why.clone());
                format!("{why}: the run ends")
            }
        };
        let data = json!({"budget": self.budget.on_spent == OnBudget::Run, "calls": self.spent.calls,
                          "cost": self.spent.cost});
        events.push(self.note(observation, NoteKind::Warning, Some(message), Some(data)));
        self.model_off = Some(why);
    }

    /// What the model is told of the states holding actions not tried (the hybrid's model: the
    /// heuristic's knowledge), a line per state, the nearest by known moves first, at most
    /// [`UNTRIED_LINES`].
    fn untried_lines(&self) -> Vec<(ScreenIndex, String)> {
        if self.plateau.is_none() {
            return Vec::new();
        }
        let graph = self.heuristic.graph();
        let mut states = graph.untried_states();
        // The nearest first: those a model would reach soonest (and the list's room is theirs).
        if let Some(here) = self.heuristic.current() {
            let moves = graph.moves_from(here);
            states.sort_by_key(|(screen, _)| {
                moves.get(*screen).copied().flatten().unwrap_or(u32::MAX)
            });
        }
        states
            .into_iter()
            .take(UNTRIED_LINES)
            .filter_map(|(screen, places)| {
                let key = graph.key(screen)?;
                let activity = key.as_str().split('|').next().unwrap_or_default();
                let activity = activity.rsplit('.').next().unwrap_or(activity);
                let labels: Vec<&str> = places
                    .iter()
                    .filter(|p| !p.label.is_empty())
                    .take(UNTRIED_LINES)
                    .map(|p| p.label.as_str())
                    .collect();
                let on_screen = self.heuristic.current() == Some(screen);
                Some((screen, prompt::untried_line(activity, on_screen, &labels)))
            })
            .collect()
    }

    /// The screens a model's visits name among the lines it was told (numbered from 1), set
    /// as the heuristic's goals, in order; what each goal is, for a note.
    fn set_goals(&mut self, visits: &[Visit], untried: &[(ScreenIndex, String)]) -> Vec<String> {
        let named: Vec<(ScreenIndex, Option<String>, String)> = visits
            .iter()
            .filter_map(|visit| {
                let index = usize::try_from(visit.screen).ok()?.checked_sub(1)?;
                let (screen, line) = untried.get(index)?;
                let what = match &visit.element {
                    Some(element) => format!("\"{element}\" on {line}"),
                    None => line.clone(),
                };
                Some((*screen, visit.element.clone(), what))
            })
            .collect();
        let goals = named.iter().map(|(_, _, what)| what.clone()).collect();
        self.heuristic.set_goals(
            named
                .into_iter()
                .map(|(screen, element, _)| (screen, element)),
        );
        goals
    }

    /// Takes in a recorded run as the stage took it in live: each observation as it came, each
    /// decision as it was made (the heuristic's own choices chosen again, which learns what
    /// choosing committed it to; anyone else's learned as they were), and every other event
    /// as it passed.
    fn resume(&mut self, history: &[Event]) {
        let mut observed: Option<&Observation> = None;
        let mut invalid_answer = false;
        // The step's decision was the heuristic's, taking the crawl off a screen a model kept
        // it on: the stage was not asked to decide it (nor the driver's own decisions).
        let mut escaped = false;
        for event in history {
            match event {
                Event::Observation(observation) => {
                    // An observation nobody decided on (the stage stopped there) was taken in.
                    if let Some(earlier) = observed.replace(observation) {
                        self.take_in(&Screen::of(earlier));
                    }
                    invalid_answer = false;
                    escaped = false;
                }
                Event::Note(note) if note.kind == NoteKind::InvalidResponse => {
                    invalid_answer = true;
                }
                Event::Note(note)
                    if note
                        .data
                        .as_ref()
                        .is_some_and(|d| d.get("escape").is_some()) =>
                {
                    escaped = true;
                    self.learn(event);
                }
                Event::Decision(decision) => {
                    if let Some(observation) = observed.take() {
                        let shown = Screen::of(observation);
                        let driver = decision.decider.as_deref() == Some(crate::crawl::DRIVER);
                        self.redo(&shown, decision, invalid_answer, !escaped && !driver);
                    }
                }
                other => self.learn(other),
            }
        }
        self.undecided = observed.cloned();
    }

    /// Takes in a decision someone else made on the screen `shown` (a driver's recovery), as a
    /// stage resuming the run would.
    pub fn learn_decided(&mut self, shown: &Screen, decision: &Decision) {
        self.redo(shown, decision, false, false);
    }

    /// Takes in a recorded decision on the screen `shown` (see [`Stage::resume`]); `asked`: the
    /// stage decided it, so its budget and the hybrid's switch moved on as they did then.
    fn redo(&mut self, shown: &Screen, recorded: &Decision, invalid_answer: bool, asked: bool) {
        let observation = shown.observation();
        self.take_in(shown);
        if asked && self.baseline.is_none() {
            // Its notes were written when the step was decided.
            self.model_decides(observation, &mut Vec::new());
        }
        let by = recorded.decider.as_deref();
        // A model's answer naming a screen to go to was walked to by the heuristic, starting
        // with this step.
        let answer = recorded.ai.as_ref().and_then(|ai| ai.response.as_deref());
        let visits = answer.map(response::visits).unwrap_or_default();
        if asked && !visits.is_empty() {
            let untried = self.untried_lines();
            self.set_goals(&visits, &untried);
        }
        match self.baseline.as_mut() {
            // Only the generator moves on.
            Some(Baseline::Random(random)) if by == Some(self.name) => {
                drop(random.decide(observation))
            }
            Some(Baseline::Random(_)) => {}
            // Whoever decided, the actions were taken there.
            Some(Baseline::Dfs(dfs)) => dfs.learn(shown, recorded),
            None if by == Some(HEURISTIC) => {
                let choice = self.heuristic.choose(shown);
                let same =
                    choice.actions == recorded.actions && choice.relaunch == recorded.relaunch;
                match same {
                    true => self.heuristic.learn_choice(shown, &choice),
                    false => self.heuristic.learn_decision(shown, recorded),
                }
            }
            None => self.heuristic.learn_decision(shown, recorded),
        }
        if let Some(ai) = &recorded.ai {
            self.spent.add(self.price, ai.tokens_in, ai.tokens_out);
            self.settle_model(ai, invalid_answer);
        }
        self.stuck_reason = None;
        self.last = Some((recorded.clone(), observation.clone()));
    }

    /// What a model call tells the stage about the next: an answer that could not be used asks
    /// for one action next time, a used one ends that; refusals in a row are counted.
    fn settle_model(&mut self, ai: &AiMeta, invalid_answer: bool) {
        self.reached |= answered(ai);
        match (invalid_answer, &ai.error) {
            (true, _) => self.single_action = true,
            (false, None) => self.single_action = false,
            (false, Some(_)) => {}
        }
        if ai.error.is_some() && !invalid_answer {
            self.refusals.count(ai);
        } else {
            self.refusals = Refusals::default();
        }
    }

    /// The app under test, when neither `--package` nor an earlier line named it: the run's
    /// package, else the first observed screen's (so a pipe without `run_started` still knows
    /// which app to stay in once another comes to the front).
    fn adopt_package(&mut self, package: Option<&str>) {
        if self.settings.package.is_none() && package.is_some() {
            self.settings.package = package.map(str::to_string);
            self.set_package();
        }
    }

    /// Tells the deciders the app under test and the packages they may enter.
    fn set_package(&mut self) {
        let (package, allowed) = (&self.settings.package, &self.settings.allowed_packages);
        self.heuristic.set_package(package.clone(), allowed.clone());
        if let Some(Baseline::Dfs(dfs)) = self.baseline.as_mut() {
            dfs.set_package(package.clone(), allowed.clone());
        }
    }

    /// Learns from a passing line: the run's package, stuck notes, executed actions.
    pub fn learn(&mut self, event: &Event) {
        match event {
            Event::RunStarted(started) => {
                self.run_id = Some(started.run_id.clone());
                self.adopt_package(started.package.as_deref());
            }
            Event::Note(note) if note.kind == NoteKind::Stuck => {
                self.stuck_reason = Some(note.message.clone().unwrap_or_else(|| "stuck".into()));
            }
            Event::Result(result) => self.learn_result(result),
            _ => {}
        }
    }

    fn learn_result(&mut self, result: &ActionResult) {
        let Some((decision, _)) = &self.last else {
            return;
        };
        let index = usize::try_from(result.index).unwrap_or(usize::MAX);
        if !result.success && result.step == decision.step {
            self.heuristic.learn_failure(index);
        }
        let Some(action) = decision.actions.get(index) else {
            return;
        };
        let what = action
            .action_desc
            .clone()
            .unwrap_or_else(|| result.action_type.to_string());
        let outcome = match (result.success, result.navigated_away) {
            (true, true) => "done, the screen changed".to_string(),
            (true, false) => "done".to_string(),
            (false, _) => format!(
                "failed: {}",
                result.error_message.as_deref().unwrap_or("unknown error")
            ),
        };
        self.journal.push(PastStep {
            step: result.step.or(decision.step),
            action: what,
            outcome,
        });
        let excess = self
            .journal
            .len()
            .saturating_sub(crate::store::JOURNAL_STEPS);
        self.journal.drain(..excess);
    }

    /// Takes in a screen before deciding on it: the run's package, a stuck flag, and the
    /// screen for the heuristic.
    fn take_in(&mut self, shown: &Screen) {
        let observation = shown.observation();
        self.adopt_package(observation.package.as_deref());
        if let Some(reason) = stuck_in(observation) {
            self.stuck_reason = Some(reason);
        }
        match self.baseline.as_mut() {
            None => drop(self.heuristic.observe(shown)),
            Some(Baseline::Dfs(dfs)) => dfs.observe(shown),
            Some(Baseline::Random(_)) => {}
        }
    }

    /// Decides on an observation (its screen analysed here; see [`Stage::decide_screen`]).
    pub fn decide(&mut self, observation: &Observation) -> Result<Vec<Event>, Stop> {
        self.decide_screen(&Screen::of(observation))
    }

    /// Decides on the screen an observation shows: the events to write after the observation
    /// (notes, then the decision), or the stop the stage comes to.
    pub fn decide_screen(&mut self, shown: &Screen) -> Result<Vec<Event>, Stop> {
        self.decide_as(shown, false)
    }

    /// The heuristic's decision on the screen, whoever decides this stage: a driver taking the
    /// crawl off a screen a model keeps it on. The events to write after the observation.
    pub fn decide_by_heuristic(&mut self, shown: &Screen) -> Vec<Event> {
        match self.decide_as(shown, true) {
            Ok(events) => events,
            Err(Stop { events, .. }) => events,
        }
    }

    /// [`Stage::decide_screen`], by the heuristic whoever decides the stage when `heuristic`.
    fn decide_as(&mut self, shown: &Screen, heuristic: bool) -> Result<Vec<Event>, Stop> {
        let observation = shown.observation();
        let mut events = Vec::new();
        if let Some(undecided) = self.undecided.take() {
            let again = undecided.step.is_some() && undecided.step == observation.step;
            if !again {
                self.take_in(&Screen::of(&undecided));
            }
        }
        self.take_in(shown);
        let baseline = match self.baseline.as_mut() {
            Some(Baseline::Random(random)) => Some(Decision::new(vec![random.decide(observation)])),
            Some(Baseline::Dfs(dfs)) => {
                let decision = dfs.choose(shown);
                dfs.learn(shown, &decision);
                Some(decision)
            }
            None => None,
        };
        let decision = match baseline {
            Some(decision) => {
                let mut decision = self.stamped(observation, decision);
                decision.decider = Some(self.name.to_string());
                if let Some(package) = decision.relaunch.clone() {
                    let why = decision.actions[0].reasoning.clone();
                    let message = why.map(|why| format!("relaunch: {why}"));
                    let data = Some(json!({ "package": package }));
                    events.push(self.note(observation, NoteKind::Relaunch, message, data));
                }
                Ok(decision)
            }
            None if !heuristic && self.model_decides(observation, &mut events) => {
                self.ask_model(shown, &mut events)
            }
            None => Ok(self.heuristic_decision(shown, &mut events)),
        };
        let decision = match decision {
            Ok(decision) => decision,
            Err(error) => return Err(Stop { events, error }),
        };
        let mut decision = decision;
        decision.explored = self.explored();
        decision.state = self.heuristic.screen_state().map(Box::new);
        self.stuck_reason = None;
        events.push(Event::Decision(decision.clone()));
        self.last = Some((decision, observation.clone()));
        Ok(events)
    }

    fn heuristic_decision(&mut self, shown: &Screen, events: &mut Vec<Event>) -> Decision {
        let observation = shown.observation();
        let choice = self.heuristic.choose(shown);
        self.heuristic.learn_choice(shown, &choice);
        let mut decision = self.stamped(observation, choice.to_decision());
        decision.decider = Some(HEURISTIC.to_string());
        if let Some(package) = choice.relaunch {
            events.push(self.note(
                observation,
                NoteKind::Relaunch,
                choice.note,
                Some(json!({"package": package})),
            ));
        } else if let Some(message) = choice.note {
            events.push(self.note(observation, NoteKind::State, Some(message), None));
        }
        decision
    }

    fn ask_model(&mut self, shown: &Screen, events: &mut Vec<Event>) -> Result<Decision, Error> {
        let observation = shown.observation();
        let untried = self.untried_lines();
        let lines: Vec<String> = untried.iter().map(|(_, line)| line.clone()).collect();
        let context = Context {
            journal: &self.journal,
            stuck_reason: self.stuck_reason.as_deref(),
            single_action: self.single_action,
            untried: &lines,
        };
        let built = prompt::build(observation, &context, &self.settings);
        if let Some(reason) = &built.fallback {
            events.push(self.note(
                observation,
                NoteKind::Warning,
                Some(format!(
                    "no screenshot for vision mode ({reason}); sent the UI tree"
                )),
                None,
            ));
        }
        let Some(model) = self.model.as_mut() else {
            return Ok(self.heuristic_decision(shown, events));
        };
        let reply = model.generate(&built.prompt);
        let mut meta = reply.meta;
        let generation = match reply.result {
            Ok(generation) => generation,
            Err(error) => {
                meta.error = Some(error.to_string());
                self.charge(&mut meta, observation, events);
                self.reached |= answered(&meta);
                let refused = self.refusals.count(&meta);
                let unreachable = !self.reached && !self.fall_back_when_unreachable;
                let stop = match error.is_fatal() {
                    true => Some(Error::Provider(error.clone())),
                    false if unreachable => Some(Error::Unreachable(error.clone())),
                    false => (refused >= REFUSALS_BEFORE_STOP).then(|| Error::Repeated {
                        steps: refused,
                        source: error.clone(),
                    }),
                };
                if let (Some(stop), Some(_)) = (&stop, &self.plateau) {
                    // The hybrid goes on with the heuristic alone.
                    let why = crate::filter::Chain(stop).to_string();
                    let message = format!(
                        "{why}; the model is asked no more: the heuristic decides the rest of \
                         the run"
                    );
                    self.model_off = Some(why);
                    events.push(self.note(observation, NoteKind::Warning, Some(message), None));
                    return Ok(self.fallback(shown, meta, events));
                }
                if let Some(stop) = stop {
                    let data = json!({ "ai": meta });
                    events.push(self.note(
                        observation,
                        NoteKind::Error,
                        Some(stop.to_string()),
                        Some(data),
                    ));
                    return Err(stop);
                }
                let message = format!("{error}; the heuristic decided this step");
                events.push(self.note(observation, NoteKind::Warning, Some(message), None));
                return Ok(self.fallback(shown, meta, events));
            }
        };
        self.refusals = Refusals::default();
        self.reached = true;
        meta.model = Some(generation.model.clone());
        meta.tokens_in = generation.tokens_in;
        meta.tokens_out = generation.tokens_out;
        self.charge(&mut meta, observation, events);
        meta.response = Some(generation.text.clone());
        let visits = response::visits(&generation.text);
        let goals = self.set_goals(&visits, &untried);
        if !goals.is_empty() {
            // The heuristic walks to the screens the model named, starting now.
            self.single_action = false;
            let message = format!(
                "the model names what to try on screens listed: the heuristic walks there ({})",
                goals.join("; ")
            );
            let data = json!({"visits": visits.iter().map(|v| json!({"screen": v.screen,
                "element": v.element})).collect::<Vec<_>>()});
            events.push(self.note(observation, NoteKind::State, Some(message), Some(data)));
            let mut decision = self.heuristic_decision(shown, events);
            decision.ai = Some(meta);
            return Ok(decision);
        }
        let most = match self.single_action {
            true => 1,
            false => Decision::MAX_ACTIONS,
        };
        let parsed = match visits.is_empty() {
            true => response::parse(&generation.text, observation, built.scale, most),
            false => Err(response::InvalidResponse::UnlistedVisit(
                visits.iter().map(|v| v.screen).collect(),
            )),
        };
        match parsed {
            Ok(parsed) => {
                self.single_action = false;
                if !parsed.warnings.is_empty() {
                    let message = format!("answer adjusted: {}", parsed.warnings.join("; "));
                    events.push(self.note(observation, NoteKind::Warning, Some(message), None));
                }
                let mut decision = self.stamped(observation, Decision::new(parsed.actions));
                decision.signup_completed = parsed.signup_completed;
                decision.done = parsed.done;
                decision.ai = Some(meta);
                decision.decider = Some(self.model_name.to_string());
                self.heuristic.learn_decision(shown, &decision);
                Ok(decision)
            }
            Err(invalid) => {
                self.single_action = true;
                meta.error = Some(invalid.to_string());
                events.push(self.note(
                    observation,
                    NoteKind::InvalidResponse,
                    Some(format!("{invalid}; the heuristic decided this step")),
                    Some(json!({"response": generation.text})),
                ));
                Ok(self.fallback(shown, meta, events))
            }
        }
    }

    /// The heuristic's decision, carrying the failed model call's metadata.
    fn fallback(&mut self, shown: &Screen, meta: AiMeta, events: &mut Vec<Event>) -> Decision {
        let mut decision = self.heuristic_decision(shown, events);
        decision.ai = Some(meta);
        decision
    }

    /// `decision` for `observation`: its run, its step and the time now.
    fn stamped(&self, observation: &Observation, decision: Decision) -> Decision {
        let run_id = observation.run_id.clone().or_else(|| self.run_id.clone());
        decision.at(run_id, observation.step)
    }

    fn note(
        &self,
        observation: &Observation,
        kind: NoteKind,
        message: Option<String>,
        data: Option<Value>,
    ) -> Event {
        Event::Note(Note {
            run_id: observation.run_id.clone().or_else(|| self.run_id.clone()),
            step: observation.step,
            message,
            data,
            ..Note::now(kind, "")
        })
    }
}

/// The action of a decision that relaunches `package` (the decision's `relaunch` names it;
/// droid-act goes home, then starts the app).
fn relaunch_action(package: &str, why: &str) -> Action {
    let mut home = Action::new(ActionType::Home);
    home.action_desc = Some(format!("relaunch {package}"));
    home.reasoning = Some(why.to_string());
    home
}

/// A baseline deciding instead of the heuristic.
enum Baseline {
    Random(Box<RandomDecider>),
    Dfs(Box<DfsDecider>),
}

/// Whether a model call got any HTTP answer (the server is there, whatever it said).
fn answered(ai: &AiMeta) -> bool {
    ai.error.is_none() || ai.attempts.iter().any(|a| a.http_status.is_some())
}

/// The stuck flag a driver put on the observation (`is_stuck`, `stuck_reason`).
fn stuck_in(observation: &Observation) -> Option<String> {
    observation.is_stuck.then(|| {
        observation
            .stuck_reason
            .clone()
            .unwrap_or_else(|| "stuck".into())
    })
}

#[cfg(test)]
mod tests {
    use super::provider::{ModelInfo, ProviderKind};
    use super::*;

    #[test]
    fn model_lists_show_vision_models_unless_all_are_asked_for() {
        let model = |name: &str, vision| ModelInfo {
            provider: ProviderKind::Ollama,
            name: name.into(),
            vision,
        };
        let models = [
            model("llava", Some(true)),
            model("llama3", Some(false)),
            model("mystery", None),
        ];
        assert_eq!(model_list_lines(&models, false), ["llava"]);
        assert_eq!(
            model_list_lines(&models, true),
            ["llava\tvision", "llama3\ttext", "mystery\tunknown"]
        );
    }
}
