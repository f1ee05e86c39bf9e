//! A stand-in model for tests and `make coverage`: an OpenAI-compatible server on 127.0.0.1
//! (`POST /v1/chat/completions`) that answers each decision from what droid sent it, the
//! elements' `[ref=N]` in the prompt, with a policy chosen per test:
//!
//! - [`Policy::Random`]: a seeded choice among the screen's refs and back;
//! - [`Policy::FirstUntried`]: the first ref of the screen it has not answered on that screen
//!   before (a screen being the prompt's element list), back once every ref was answered;
//! - [`Policy::Back`]: back, always (a model that keeps a crawl where it is);
//! - [`Policy::First`]: the screen's first ref, always (a model that takes two screens in turn
//!   where each one's first element opens the other);
//! - [`Policy::Visit`]: a visit of the N-th screen the prompt lists, always;
//! - [`Policy::Oracle`]: reads the app model and the simulator's truth log (the screen the device
//!   shows, the screens it has shown) and answers the move that starts the shortest path of
//!   recorded moves towards the nearest screen not shown yet, back when none is left.
//!
//! Every answer carries `usage` (`prompt_tokens`, `completion_tokens`) as a real server's does,
//! counted as one token per four bytes of text (and 85 per image, OpenAI's low-detail price), so
//! cost accounting runs on it as on a provider. It is never a decider users can select.
#![allow(dead_code)]

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use droid::decide::provider::{ProviderConfig, ProviderKind};
use droid::sim::model::AppModel;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

/// The model name the stand-in answers as.
pub const MODEL: &str = "stand-in";

/// How the stand-in picks its answer.
pub enum Policy {
    Random(u64),
    FirstUntried,
    Back,
    First,
    Oracle {
        app: String,
        truth: PathBuf,
    },
    /// A visit of the prompt's listed screen N and its first element, always (whether or not
    /// the prompt lists that many).
    Visit(u64),
}

/// A running stand-in (it serves until the test process ends).
pub struct StandIn {
    base: String,
    calls: Arc<AtomicUsize>,
    tokens: Arc<Mutex<(u64, u64)>>,
}

/// One element of the prompt: its ref and its line.
struct Element {
    reference: u64,
    line: String,
}

/// What a policy answers: actions, as droid's response schema has them.
type Answer = Vec<Value>;

struct Answerer {
    policy: Policy,
    rng: ChaCha8Rng,
    /// (screen, ref) answered before ([`Policy::FirstUntried`]).
    tried: HashSet<(String, u64)>,
    model: Option<AppModel>,
}

impl StandIn {
    /// Starts a stand-in on 127.0.0.1 answering with `policy`.
    pub fn start(policy: Policy) -> StandIn {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let calls = Arc::new(AtomicUsize::new(0));
        let tokens = Arc::new(Mutex::new((0, 0)));
        let seed = match &policy {
            Policy::Random(seed) => *seed,
            _ => 0,
        };
        let model = match &policy {
            Policy::Oracle { app, .. } => Some(AppModel::load(app).unwrap()),
            _ => None,
        };
        let mut answerer = Answerer {
            policy,
            rng: ChaCha8Rng::seed_from_u64(seed),
            tried: HashSet::new(),
            model,
        };
        let (count, spent) = (Arc::clone(&calls), Arc::clone(&tokens));
        thread::spawn(move || {
            for mut request in server.incoming_requests() {
                let mut text = String::new();
                let _ = request.as_reader().read_to_string(&mut text);
                let (status, body) = match request.url() {
                    "/v1/chat/completions" => {
                        count.fetch_add(1, Ordering::SeqCst);
                        let asked: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                        let body = answerer.reply(&asked);
                        let mut spent = spent.lock().unwrap();
                        spent.0 += body["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
                        spent.1 += body["usage"]["completion_tokens"].as_u64().unwrap_or(0);
                        (200, body)
                    }
                    "/v1/models" => (200, json!({"object": "list", "data": [{"id": MODEL}]})),
                    _ => (404, json!({"error": "not found"})),
                };
                let response = tiny_http::Response::from_string(body.to_string())
                    .with_status_code(status)
                    .with_header(
                        tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap(),
                    );
                let _ = request.respond(response);
            }
        });
        StandIn {
            base: format!("http://127.0.0.1:{port}/v1"),
            calls,
            tokens,
        }
    }

    /// Its `/v1` URL (droid's `--base-url`).
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Decisions it was asked for.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The tokens it reported in all: (prompt, completion).
    pub fn tokens(&self) -> (u64, u64) {
        *self.tokens.lock().unwrap()
    }

    /// An OpenAI-compatible provider asking this stand-in, without retries' delays.
    pub fn provider(&self) -> ProviderConfig {
        let mut provider = ProviderConfig::new(ProviderKind::OpenAi);
        provider.model = MODEL.to_string();
        provider.base_url = Some(self.base.clone());
        provider.retry.base_delay = std::time::Duration::ZERO;
        provider
    }
}

/// Tokens as a real tokenizer counts English and JSON, about four bytes each.
fn tokens_of(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

impl Answerer {
    /// The chat-completions body answering `asked`.
    fn reply(&mut self, asked: &Value) -> Value {
        let mut prompt_tokens = 0;
        let mut user = String::new();
        for message in asked["messages"].as_array().into_iter().flatten() {
            match &message["content"] {
                Value::String(text) => {
                    prompt_tokens += tokens_of(text);
                    if message["role"] == "user" {
                        user.push_str(text);
                    }
                }
                Value::Array(parts) => {
                    for part in parts {
                        match part["text"].as_str() {
                            Some(text) => {
                                prompt_tokens += tokens_of(text);
                                if message["role"] == "user" {
                                    user.push_str(text);
                                }
                            }
                            None => prompt_tokens += 85,
                        }
                    }
                }
                _ => {}
            }
        }
        let actions = self.answer(&user);
        let content = json!({ "actions": actions }).to_string();
        json!({
            "id": "chatcmpl-stand-in",
            "object": "chat.completion",
            "model": asked["model"].as_str().unwrap_or(MODEL),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": tokens_of(&content),
                "total_tokens": prompt_tokens + tokens_of(&content),
            },
        })
    }

    fn answer(&mut self, user: &str) -> Answer {
        let elements = elements(user);
        let screen: String = elements.iter().map(|e| e.line.as_str()).collect();
        match &self.policy {
            Policy::Back => back("the stand-in always goes back"),
            Policy::First => match elements.first() {
                Some(element) => on(element, "the first element, always"),
                None => back("no element"),
            },
            Policy::Random(_) => {
                let pick = self.rng.gen_range(0..=elements.len());
                match elements.get(pick) {
                    Some(element) => on(element, "a random element"),
                    None => back("a random back"),
                }
            }
            Policy::FirstUntried => {
                let untried = elements
                    .iter()
                    .find(|e| !self.tried.contains(&(screen.clone(), e.reference)));
                match untried {
                    Some(element) => {
                        self.tried.insert((screen.clone(), element.reference));
                        on(element, "the first element not tried here")
                    }
                    None => back("every element here was tried"),
                }
            }
            Policy::Visit(number) => {
                let element = listed(user)
                    .into_iter()
                    .find(|(listed, _, _)| listed == number)
                    .and_then(|(_, _, labels)| labels.into_iter().next());
                vec![
                    json!({"action": "visit", "screen": number, "element": element,
                    "action_desc": format!("visit screen {number}"),
                    "reasoning": "the stand-in always visits this screen"}),
                ]
            }
            Policy::Oracle { truth, .. } => {
                let model = self.model.as_ref().expect("loaded with the policy");
                oracle(model, truth, user).unwrap_or_else(|| back("nothing unseen is reachable"))
            }
        }
    }
}

/// The prompt's elements: each line carrying a `[ref=N]`.
fn elements(user: &str) -> Vec<Element> {
    user.lines()
        .filter_map(|line| {
            let start = line.find("[ref=")? + "[ref=".len();
            let end = start + line[start..].find(']')?;
            let reference = line[start..end].parse().ok()?;
            Some(Element {
                reference,
                line: line.to_string(),
            })
        })
        .collect()
}

fn back(why: &str) -> Answer {
    vec![json!({"action": "back", "action_desc": "press back", "reasoning": why})]
}

/// Typing into a field, clicking anything else.
fn on(element: &Element, why: &str) -> Answer {
    let action = match element.line.contains("TextInput") || element.line.contains(" editable") {
        true => json!({"action": "input", "ref": element.reference, "input_text": "droid",
                       "action_desc": format!("type into ref {}", element.reference),
                       "reasoning": why}),
        false => json!({"action": "click", "ref": element.reference,
                        "action_desc": format!("tap ref {}", element.reference),
                        "reasoning": why}),
    };
    vec![action]
}

/// The oracle's move: the first recorded move of a shortest path from the screen shown now to
/// the nearest screen of the app not shown yet, as actions on the elements its target and the
/// fields it requires name (boxes in device pixels). Back goes where the simulator takes it:
/// to the screen beneath (the truth log's `beneath`) unless the screen has a back of its own.
/// When that screen is more than one move away and the prompt lists screens with untried
/// elements whose recorded taps (on screens shown, of the lines' activities) show screens not
/// shown yet, it answers a `visit` of each (that screen's first) instead: droid walks there
/// itself; and so it does when no recorded move leads from here to a screen not shown yet, and
/// when the nearest is one tap from here and the prompt's line of this screen (marked on screen
/// now) leads the visits of several.
fn oracle(model: &AppModel, truth: &std::path::Path, user: &str) -> Option<Answer> {
    use droid::sim::model::{Action, Destination};
    let lines: Vec<Value> = crate::explore::truth_lines(truth)
        .filter(|v| v["screen"].is_string())
        .collect();
    let now = model.screen_index(lines.last()?["screen"].as_str()?)?;
    let beneath = lines.last()?["beneath"]
        .as_str()
        .and_then(|id| model.screen_index(id));
    let seen: BTreeSet<usize> = lines
        .iter()
        .filter_map(|v| model.screen_index(v["screen"].as_str()?))
        .collect();
    // The moves from a screen of the path: recorded ones whose target is found on it, and back
    // where it is known to lead (from the screen shown now; further on, back returns along the
    // path unless the screen has a back of its own).
    let moves = |at: usize| -> Vec<(usize, Answer)> {
        let mut moves = Vec::new();
        let mut back_recorded = false;
        for transition in model.transitions().iter().filter(|t| t.from == at) {
            let Destination::Screen(mut to) = transition.to else {
                continue;
            };
            if transition.action == Action::Back {
                if back_recorded {
                    continue;
                }
                back_recorded = true;
                // Further along the path, a back that returns beneath returns to the screen
                // before on it.
                match (at == now, beneath) {
                    (true, Some(under)) if model.back_returns_beneath(at, to, under) => to = under,
                    (false, _) if model.opens(to, at) => continue,
                    _ => {}
                }
            }
            if let Some(answer) = move_of(model, at, transition) {
                moves.push((to, answer));
            }
        }
        if let (false, true, Some(under)) = (back_recorded, at == now, beneath) {
            moves.push((under, back("the nearest screen not seen yet")));
        }
        moves
    };
    // Breadth first.
    let mut first: Vec<Option<Answer>> = vec![None; model.screens().len()];
    let mut visited = vec![false; model.screens().len()];
    visited[now] = true;
    let mut queue = VecDeque::from([now]);
    let unseen = |to: usize| !seen.contains(&to) && model.screen(to).package == model.package();
    while let Some(at) = queue.pop_front() {
        for (to, answer) in moves(at) {
            if visited[to] {
                continue;
            }
            visited[to] = true;
            if at == now && unseen(to) {
                // One call naming several screens, this one's tap first, finds them all.
                let visits = visits(model, (now, to), now, &seen, user, &unseen);
                let several = visits.len() > 1 && visits[0].0 == to;
                return Some(match several {
                    true => visits.into_iter().map(|(_, visit)| visit).collect(),
                    false => answer,
                });
            }
            let start = match at == now {
                true => Some(answer),
                false => first[at].clone(),
            };
            if unseen(to) {
                let visits = visits(model, (at, to), now, &seen, user, &unseen);
                return match visits.is_empty() {
                    true => start,
                    false => Some(visits.into_iter().map(|(_, visit)| visit).collect()),
                };
            }
            first[to] = start;
            queue.push_back(to);
        }
    }
    // No recorded move leads on from here: a screen listed may.
    let visits = visits(model, (usize::MAX, usize::MAX), now, &seen, user, &unseen);
    (!visits.is_empty()).then(|| visits.into_iter().map(|(_, visit)| visit).collect())
}

/// The states the prompt lists (`- [screen=N] Activity: "label", ...`): each one's number,
/// activity (with its on-screen mark) and labels, read back from their quotes.
fn listed(user: &str) -> Vec<(u64, &str, Vec<String>)> {
    user.lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("- [screen=")?;
            let (number, rest) = rest.split_once("] ")?;
            let (activity, elements) = rest.split_once(": ")?;
            let labels = serde_json::from_str(&format!("[{elements}]")).ok()?;
            Some((number.parse().ok()?, activity, labels))
        })
        .collect()
}

/// Whether a text shown is a label the prompt lists: the prompt quotes an app's text with
/// `ui::tree::quote` (whitespace folded, a long one cut and ended with `…`).
fn is_label(shown: &str, listed: &str) -> bool {
    serde_json::from_str::<String>(&droid::ui::tree::quote(shown)).is_ok_and(|s| s == listed)
}

/// Most visits in one answer.
const MOST_VISITS: usize = 8;

/// Visits of screens the prompt lists (`- [screen=N] Activity: "label", ...`), each naming an
/// element of a recorded tap, needing no typed text, from a shown screen of the line's activity
/// to a screen `unseen` holds, each such screen once: the one `nearest` (a tap from a screen to
/// the nearest unseen one) opens first. Each visit with the screen it opens.
fn visits(
    model: &AppModel,
    nearest: (usize, usize),
    now: usize,
    seen: &BTreeSet<usize>,
    user: &str,
    unseen: &impl Fn(usize) -> bool,
) -> Vec<(usize, Value)> {
    use droid::sim::model::{Action, Destination};
    let listed = listed(user);
    // The shown screen each line is, when one is sure: the one on screen now for the line
    // marked so, else the only one of the line's activity showing every label it lists.
    let texts = |screen: usize| -> HashSet<&str> {
        model
            .screen(screen)
            .nodes()
            .into_iter()
            .flat_map(|n| ["text", "content-desc"].map(|a| n.attr(a).trim()))
            .collect()
    };
    let shows: std::collections::HashMap<u64, usize> = listed
        .iter()
        .filter_map(|(number, activity, elements)| {
            if activity.ends_with(droid::decide::ON_SCREEN_NOW) {
                return Some((*number, now));
            }
            let showing: Vec<usize> = seen
                .iter()
                .copied()
                .filter(|&at| model.screen(at).activity.rsplit('.').next() == Some(*activity))
                .filter(|&at| {
                    let texts = texts(at);
                    elements
                        .iter()
                        .all(|l| texts.iter().any(|shown| is_label(shown, l)))
                })
                .collect();
            match showing[..] {
                [only] => Some((*number, only)),
                _ => None,
            }
        })
        .collect();
    // Taps from shown screens to unseen ones, the nearest first.
    let mut taps: Vec<(usize, usize, &droid::sim::model::Transition)> = Vec::new();
    for transition in model.transitions() {
        let Destination::Screen(to) = transition.to else {
            continue;
        };
        let tap = transition.action == Action::Click && transition.requires.is_empty();
        if tap && seen.contains(&transition.from) && unseen(to) {
            taps.push((transition.from, to, transition));
        }
    }
    taps.sort_by_key(|(from, to, _)| (*from, *to) != nearest);
    let mut answer = Vec::new();
    let mut targets = HashSet::new();
    for (from, to, transition) in taps {
        if answer.len() == MOST_VISITS || targets.contains(&to) {
            continue;
        }
        let screen = model.screen(from);
        let nodes = screen.nodes();
        let Some(node) = nodes
            .iter()
            .find(|n| transition.target.as_ref().is_some_and(|m| m.matches(n)))
        else {
            continue;
        };
        // The labels droid may give the element: its own text or description, its children's.
        let labels: Vec<&str> = node
            .walk()
            .into_iter()
            .flat_map(|n| ["text", "content-desc"].map(|a| n.attr(a).trim()))
            .filter(|text| !text.is_empty())
            .collect();
        let line = listed
            .iter()
            .filter(|(number, _, _)| shows.get(number) == Some(&from))
            .find_map(|(number, _, elements)| {
                let label = elements
                    .iter()
                    .find(|l| labels.iter().any(|shown| is_label(shown, l)))?;
                Some((*number, label.as_str()))
            });
        if let Some((number, label)) = line {
            targets.insert(to);
            answer.push((
                to,
                json!({"action": "visit", "screen": number, "element": label,
                "action_desc": format!("visit screen {number}"),
                "reasoning": "a screen listed leads to one not seen yet"}),
            ));
        }
    }
    answer
}

/// Texts the oracle types into a field a move requires, the first matching the move's pattern.
const TEXTS: &[&str] = &[
    "droid@example.com",
    "droid",
    "Droid-1234",
    "12345678",
    "1234",
    "5551234567",
    "https://example.com",
];

/// The actions making a recorded move, when its target and the fields it requires are found on
/// the screen: text matching each required field's pattern typed first.
fn move_of(
    model: &AppModel,
    at: usize,
    transition: &droid::sim::model::Transition,
) -> Option<Answer> {
    use droid::sim::model::Action;
    let why = "the nearest screen not seen yet";
    let nodes = model.screen(at).nodes();
    let boxed =
        |b: droid::ui::Bounds| json!({"top_left": [b.x1, b.y1], "bottom_right": [b.x2, b.y2]});
    let mut actions = Vec::new();
    for (field, pattern) in &transition.requires {
        let node = nodes.iter().find(|n| n.attr("resource-id") == field)?;
        let text = TEXTS.iter().find(|t| pattern.is_match(t))?;
        actions.push(
            json!({"action": "input", "input_text": text, "reasoning": why,
            "action_desc": format!("type into {field}"),
            "target_bounding_box": boxed(node.bounds)}),
        );
    }
    let bounds = match &transition.target {
        Some(target) => Some(nodes.iter().find(|node| target.matches(node))?.bounds),
        None => None,
    };
    let named = |action: &str| {
        let mut answer = json!({"action": action, "reasoning": why,
            "action_desc": format!("{action} towards a new screen")});
        if let Some(b) = bounds {
            answer["target_bounding_box"] = boxed(b);
        }
        answer
    };
    let last = match transition.action {
        Action::Back => back(why).remove(0),
        Action::Click => named("click"),
        Action::LongClick => named("long_press"),
        Action::Input => {
            let mut answer = named("input");
            answer["input_text"] = json!("droid");
            answer
        }
        Action::ScrollUp => named("scroll_up"),
        Action::ScrollDown => named("scroll_down"),
        Action::SwipeLeft => named("swipe_left"),
        Action::SwipeRight => named("swipe_right"),
    };
    actions.push(last);
    Some(actions)
}
