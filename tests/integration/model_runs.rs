//! Crawls a model decides, against the stand-in model (an OpenAI-compatible server on
//! 127.0.0.1, `tests/support/stand_in.rs`) and droid-sim: what the model reports reaches the
//! run, and a model that keeps the crawl on one screen, or takes two in turn, does not hold it.

use std::path::{Path, PathBuf};

use droid::decide::{Decider, ON_SCREEN_NOW};
use droid::events::{Event, NoteKind};
use serde_json::json;

use crate::explore::{run_app_with, Run};
use crate::stand_in::{Policy, StandIn};

/// A button of a small app's screen.
fn button(text: &str, top: i32) -> serde_json::Value {
    json!({"class": "android.widget.Button", "text": text, "clickable": true,
           "bounds": [40, top, 1040, top + 120]})
}

/// `model` written to `dir` as `name`.
fn written(dir: &Path, name: &str, model: &serde_json::Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, model.to_string()).unwrap();
    path
}

/// An app whose start screen keeps back to itself (back changes nothing there), with two ways
/// on: a model answering back forever stays on it.
fn trap_app(dir: &Path) -> PathBuf {
    let model = json!({
        "package": "com.example.trap",
        "screen_size": [1080, 2400],
        "start": "trap",
        "screens": [
            {"id": "trap", "activity": "com.example.trap.Main",
             "elements": [button("Next", 200), button("More", 400)]},
            {"id": "next", "activity": "com.example.trap.Next",
             "elements": [button("Deeper", 200)]},
            {"id": "more", "activity": "com.example.trap.More",
             "elements": [button("Nothing", 200)]},
            {"id": "deep", "activity": "com.example.trap.Deep",
             "elements": [button("Stay", 200)]},
        ],
        "transitions": [
            {"from": "trap", "action": "back", "to": "trap"},
            {"from": "trap", "action": "click", "target": {"text": "Next"}, "to": "next"},
            {"from": "trap", "action": "click", "target": {"text": "More"}, "to": "more"},
            {"from": "next", "action": "click", "target": {"text": "Deeper"}, "to": "deep"},
        ],
    });
    written(dir, "trap.json", &model)
}

/// `app` crawled for `steps` steps, the stand-in with `policy` deciding in text mode.
fn crawl_with_stand_in(app: &str, policy: Policy, steps: u64) -> (Run, StandIn) {
    let stand_in = StandIn::start(policy);
    let decider = Decider::Model(stand_in.provider());
    let run = run_app_with(app, decider, 0, steps, |config, _| {
        config.decide.prompt.text_only = true;
    });
    (run, stand_in)
}

#[test]
fn the_stand_in_decides_from_the_prompts_refs_and_its_tokens_reach_the_decisions() {
    let (run, stand_in) = crawl_with_stand_in("builtin:shop", Policy::FirstUntried, 30);
    let answered: Vec<_> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Decision(d) if d.decider.as_deref() == Some("openai") => d.ai.clone(),
            _ => None,
        })
        .collect();
    // Most steps: the others are the driver's (back out of the app, relaunches).
    assert!(
        answered.len() >= 15,
        "{} decisions by the model",
        answered.len()
    );
    assert_eq!(answered.len(), stand_in.calls());
    let tokens = answered.iter().fold((0, 0), |(i, o), ai| {
        (i + ai.tokens_in.unwrap(), o + ai.tokens_out.unwrap())
    });
    assert_eq!(tokens, stand_in.tokens());
    // Tapping the first element not tried on each screen gets past the start screen and the
    // onboarding to the login (whose e-mail pattern it does not type).
    assert!(run.reached.len() >= 3, "{:?}", run.reached);
}

#[test]
fn a_model_that_answers_back_forever_does_not_hold_the_crawl() {
    let dir = tempfile::tempdir().unwrap();
    let app = trap_app(dir.path());
    let app = app.display().to_string();
    let (run, stand_in) = crawl_with_stand_in(&app, Policy::Back, 30);
    assert!(stand_in.calls() > 0);
    // Off the stuck screen: the heuristic's steps reach further than back ever could.
    assert!(run.reached.len() > 1, "{:?}", run.reached);
    let notes: Vec<_> = run
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Note(note) => Some(note),
            _ => None,
        })
        .collect();
    let escapes: Vec<_> = notes
        .iter()
        .filter(|n| {
            n.kind == NoteKind::Stuck && n.data.as_ref().is_some_and(|d| d["escape"] == "heuristic")
        })
        .collect();
    assert!(!escapes.is_empty(), "no escape note");
    // Each escape follows up a detection (counted once), and the crawl left the screen after.
    assert!(escapes
        .iter()
        .all(|n| n.data.as_ref().unwrap()["detected_at"].is_u64()));
    assert!(notes
        .iter()
        .any(|n| n.kind == NoteKind::Stuck
            && n.data.as_ref().is_some_and(|d| d["recovered"] == true)));
    // The step of each escape is the heuristic's.
    for escape in &escapes {
        let decided_by = run.events.iter().find_map(|event| match event {
            Event::Decision(d) if d.step == escape.step => d.decider.clone(),
            _ => None,
        });
        assert_eq!(decided_by.as_deref(), Some("heuristic"));
    }
}

/// An app whose start screen's first button opens a screen whose first button returns: a model
/// tapping each screen's first element takes the two in turn. A third screen is one tap away.
fn cycle_app(dir: &Path) -> PathBuf {
    let model = json!({
        "package": "com.example.cycle",
        "screen_size": [1080, 2400],
        "start": "list",
        "screens": [
            {"id": "list", "activity": "com.example.cycle.Main",
             "elements": [button("Open", 200), button("Settings", 400)]},
            {"id": "item", "activity": "com.example.cycle.Item",
             "elements": [button("Close", 200)]},
            {"id": "settings", "activity": "com.example.cycle.Settings",
             "elements": [button("Nothing", 200)]},
        ],
        "transitions": [
            {"from": "list", "action": "click", "target": {"text": "Open"}, "to": "item"},
            {"from": "item", "action": "click", "target": {"text": "Close"}, "to": "list"},
            {"from": "list", "action": "click", "target": {"text": "Settings"}, "to": "settings"},
        ],
    });
    written(dir, "cycle.json", &model)
}

#[test]
fn a_model_taking_two_screens_in_turn_does_not_hold_the_crawl() {
    let dir = tempfile::tempdir().unwrap();
    let app = cycle_app(dir.path());
    let (run, stand_in) = crawl_with_stand_in(&app.display().to_string(), Policy::First, 20);
    assert!(stand_in.calls() > 0);
    assert!(run.reached.contains("settings"), "{:?}", run.reached);
    let escapes: Vec<_> = notes_of(&run, NoteKind::Stuck)
        .into_iter()
        .filter(|n| n.data.as_ref().is_some_and(|d| d["escape"] == "heuristic"))
        .collect();
    // Not stuck on one screen: the escape is a detection of its own, and its step the
    // heuristic's, which finds the third screen.
    let escape = escapes.first().expect("an escape note");
    assert!(escape.data.as_ref().unwrap()["detected_at"].is_null());
    let decided_by = run.events.iter().find_map(|event| match event {
        Event::Decision(d) if d.step == escape.step => d.decider.clone(),
        _ => None,
    });
    assert_eq!(decided_by.as_deref(), Some("heuristic"));
}

/// The hybrid decider with the stand-in (or any server) at `provider`: K and L as given.
fn hybrid(provider: droid::decide::provider::ProviderConfig, k: u32, l: u32) -> Decider {
    Decider::Hybrid(droid::decide::hybrid::HybridConfig {
        provider,
        plateau_steps: k,
        model_calls: l,
        model_share: droid::decide::hybrid::MODEL_SHARE,
    })
}

/// The notes of a run of `kind`.
fn notes_of(run: &Run, kind: NoteKind) -> Vec<&droid::events::Note> {
    run.events
        .iter()
        .filter_map(|event| match event {
            Event::Note(note) if note.kind == kind => Some(note),
            _ => None,
        })
        .collect()
}

#[test]
fn the_hybrid_asks_the_model_only_on_a_plateau_and_goes_back_to_the_heuristic() {
    let stand_in = StandIn::start(Policy::FirstUntried);
    let decider = hybrid(stand_in.provider(), 3, 2);
    let run = run_app_with("builtin:shop", decider, 0, 80, |config, _| {
        config.decide.prompt.text_only = true;
    });
    // Who decides, step by step, from the switch notes; the model's decisions only in its part.
    let mut phase = "heuristic";
    let (mut to_model, mut to_heuristic, mut by_model) = (0, 0, 0);
    for event in &run.events {
        match event {
            Event::Note(note) if note.kind == NoteKind::Switch => {
                let data = note.data.as_ref().unwrap();
                assert_ne!(data["decides"], phase, "a switch changes who decides");
                phase = if data["decides"] == "model" {
                    "model"
                } else {
                    "heuristic"
                };
                match phase {
                    "model" => to_model += 1,
                    _ => to_heuristic += 1,
                }
            }
            Event::Decision(d) if d.decider.as_deref() == Some("openai") => {
                assert_eq!(phase, "model", "step {:?} decided by the model", d.step);
                by_model += 1;
            }
            Event::Decision(d) if phase == "heuristic" => {
                assert_ne!(d.decider.as_deref(), Some("openai"));
            }
            _ => {}
        }
    }
    assert!(
        to_model >= 1 && to_heuristic >= 1,
        "{to_model} {to_heuristic}"
    );
    assert_eq!(by_model, stand_in.calls());
    // Far fewer calls than steps: the heuristic decides where it finds new states.
    assert!(
        by_model * 2 < run.observed.len(),
        "{by_model} of {}",
        run.observed.len()
    );
    // The model was told the states with untried actions when there were some.
    assert!(run.events.iter().any(|event| matches!(event,
        Event::Decision(d) if d.ai.as_ref().is_some_and(|ai| ai.request.as_ref()
            .is_some_and(|r| r.to_string().contains("Screens seen with actions not tried yet"))))));
}

#[test]
fn the_hybrids_model_decides_at_most_its_share_of_the_steps() {
    let (app, steps) = ("builtin:shop", 90);
    // The oracle stand-in finds a new state at most calls, so it is asked at every plateau.
    let decided_by_model = |share: u32| {
        let run = run_app_with(app, Decider::Heuristic, 0, steps, |config, truth| {
            let stand_in = StandIn::start(Policy::Oracle {
                app: app.to_string(),
                truth: truth.to_path_buf(),
            });
            config.decide.prompt.text_only = true;
            config.decide.decider = Decider::Hybrid(droid::decide::hybrid::HybridConfig {
                provider: stand_in.provider(),
                plateau_steps: 2,
                model_calls: 4,
                model_share: share,
            });
        });
        assert_eq!(run.observed.len() as u64, steps);
        let by_model = run
            .events
            .iter()
            .filter(|e| matches!(e, Event::Decision(d) if d.decider.as_deref() == Some("openai")))
            .count() as u64;
        // Every turn the model was given, it was asked until it found a state or its four
        // calls ran out: the share starts no turn it cannot hold.
        let cut = notes_of(&run, NoteKind::Switch).iter().any(|note| {
            note.message
                .as_deref()
                .is_some_and(|m| m.contains("its share of the steps"))
        });
        (by_model, cut)
    };
    // Unbounded, the model decides more than a twentieth of the steps here; held to a
    // twentieth, it decides no more than that, in whole turns.
    let (free, _) = decided_by_model(100);
    let (held, cut) = decided_by_model(5);
    assert!(free * 20 > steps + 20, "{free}");
    assert!(held > 0 && held * 20 <= steps + 20, "{held}");
    assert!(!cut);
}

#[test]
fn a_failing_model_in_the_hybrid_leaves_the_heuristic_deciding_with_a_note() {
    use crate::decide_providers::{reply, Server};
    // A server that answers 500 (a passing failure: each model step falls back) and one that
    // rejects the key (the model part stops for good); neither ends the run.
    for (status, expected) in [
        (500, "the heuristic decided this step"),
        (401, "the model is asked no more"),
    ] {
        let server = Server::start(move |_, _| {
            reply(status, &json!({"error": {"message": "no", "code": status}}))
        });
        let mut provider = droid::decide::provider::ProviderConfig::new(
            droid::decide::provider::ProviderKind::OpenAi,
        );
        provider.base_url = Some(server.base.clone());
        provider.retry.base_delay = std::time::Duration::ZERO;
        provider.retry.max_delay = std::time::Duration::ZERO;
        let run = run_app_with(
            "builtin:shop",
            hybrid(provider, 2, 2),
            0,
            40,
            |config, _| {
                config.decide.prompt.text_only = true;
            },
        );
        assert_eq!(run.ended, "max_steps", "{status}");
        assert!(
            !server.requests().is_empty(),
            "{status}: the model was asked"
        );
        let warnings = notes_of(&run, NoteKind::Warning);
        assert!(
            warnings
                .iter()
                .any(|n| n.message.as_deref().unwrap_or_default().contains(expected)),
            "{status}: {warnings:?}"
        );
        // Every step was decided: by the heuristic (or the driver) wherever the model failed.
        let decisions = run
            .events
            .iter()
            .filter(|e| matches!(e, Event::Decision(_)))
            .count();
        assert_eq!(decisions, run.observed.len(), "{status}");
        assert!(!run.events.iter().any(|e| matches!(e,
            Event::Decision(d) if d.decider.as_deref() == Some("openai"))));
    }
}

/// The cost droid gave the decision of one step against a server replaying `body` (a provider's
/// real answer with the decision put in), and the tokens the body reports.
fn priced_decision(decider: &str, body: Value, extra: &[&str]) -> Value {
    use crate::decide_providers::{api_base, decide_steps, of_type, read_events, reply, Server};
    let server = Server::start(move |seen, _| match seen.url.as_str() {
        "/api/show" => reply(
            200,
            &crate::decide_providers::fixture("ollama/show_response_gemma4_openapi.json"),
        ),
        _ => reply(200, &body),
    });
    let output = decide_steps(decider, &api_base(&server, decider), 1, extra);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    of_type(&events, "decision")[0]["ai"].clone()
}

use serde_json::Value;

#[test]
fn each_calls_cost_is_its_reported_tokens_at_the_models_price() {
    droid::fixtures_or_skip!();
    use crate::decide_providers::{decision_text, fixture};
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // OpenRouter's real answer from gpt-4o-mini reports its own cost: droid's table agrees.
    let mut body = fixture("openrouter/chat_response_real_gpt4o-mini_azure.json");
    body["choices"][0]["message"]["content"] = Value::from(decision_text());
    let reported = body["usage"]["cost"].as_f64().unwrap();
    let ai = priced_decision("openrouter", body, &["--model", "openai/gpt-4o-mini"]);
    assert_eq!(
        (ai["tokens_in"].as_u64(), ai["tokens_out"].as_u64()),
        (Some(9), Some(10))
    );
    assert!(close(ai["cost"].as_f64().unwrap(), reported), "{ai}");

    // Gemini's usageMetadata at gemini-2.5-flash's list price.
    let mut body = fixture("gemini/generateContent_response_image_cookbook.json");
    body["candidates"][0]["content"]["parts"][0]["text"] = Value::from(decision_text());
    let (input, output) = (
        body["usageMetadata"]["promptTokenCount"].as_f64().unwrap(),
        body["usageMetadata"]["candidatesTokenCount"]
            .as_f64()
            .unwrap(),
    );
    let ai = priced_decision("gemini", body, &["--model", "gemini-2.5-flash"]);
    let expected = (input * 0.30 + output * 2.50) / 1e6;
    assert!(close(ai["cost"].as_f64().unwrap(), expected), "{ai}");

    // A local model has no price until user_config.db gives it one.
    let mut body = fixture("ollama/chat_response_structured_schema.json");
    body["message"]["content"] = Value::from(decision_text());
    let ai = priced_decision("ollama", body.clone(), &["--model", "gemma4"]);
    assert!(ai.get("cost").is_none(), "{ai}");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("user_config.db");
    droid::config::UserConfig::open(&db)
        .unwrap()
        .set("price.gemma4", "2,8", droid::config::ValueType::String)
        .unwrap();
    let db = db.display().to_string();
    let ai = priced_decision(
        "ollama",
        body.clone(),
        &["--model", "gemma4", "--config-db", &db],
    );
    let (input, output) = (
        body["prompt_eval_count"].as_f64().unwrap(),
        body["eval_count"].as_f64().unwrap(),
    );
    assert!(
        close(
            ai["cost"].as_f64().unwrap(),
            (input * 2.0 + output * 8.0) / 1e6
        ),
        "{ai}"
    );
}

/// A stand-in's crawl of the shop with `budget`, the stand-in priced at 1 and 4 per million
/// tokens: the run, the stand-in, and the one call's cost bound (the dearest call).
fn budgeted(
    decider: impl Fn(&StandIn) -> Decider,
    budget: droid::decide::cost::Budget,
) -> (Run, StandIn) {
    let stand_in = StandIn::start(Policy::FirstUntried);
    let run = run_app_with("builtin:shop", decider(&stand_in), 0, 40, |config, _| {
        config.decide.prompt.text_only = true;
        config.decide.budget = budget;
        config.decide.price = Some(droid::decide::cost::Price {
            input: 1.0,
            output: 4.0,
        });
    });
    (run, stand_in)
}

/// The costs of the run's model calls, in order.
fn call_costs(run: &Run) -> Vec<f64> {
    run.events
        .iter()
        .filter_map(|event| match event {
            Event::Decision(d) => d.ai.as_ref().and_then(|ai| ai.cost),
            _ => None,
        })
        .collect()
}

#[test]
fn a_spent_budget_stops_the_model_and_the_heuristic_goes_on_or_the_run_ends() {
    use droid::decide::cost::{Budget, OnBudget};
    // Spent by cost: the model part stops, the heuristic decides until the steps run out.
    let max_cost = 0.004;
    let (run, stand_in) = budgeted(
        |s| Decider::Model(s.provider()),
        Budget {
            max_cost: Some(max_cost),
            max_calls: None,
            on_spent: OnBudget::Model,
        },
    );
    let costs = call_costs(&run);
    let spent: f64 = costs.iter().sum();
    assert_eq!(costs.len(), stand_in.calls());
    let dearest = costs.iter().copied().fold(0.0, f64::max);
    assert!(
        spent >= max_cost && spent <= max_cost + dearest,
        "{spent} of {max_cost}"
    );
    assert!(costs.len() < run.observed.len(), "the model stopped early");
    assert_ne!(run.ended, "budget", "the heuristic went on");
    let warning = notes_of(&run, NoteKind::Warning)
        .into_iter()
        .find(|n| {
            n.message
                .as_deref()
                .unwrap_or_default()
                .contains("--max-cost")
        })
        .expect("a note says the budget is spent");
    assert!(warning
        .message
        .as_deref()
        .unwrap()
        .contains("the heuristic decides the rest"));
    // Spent by calls, the run ends with it.
    let (run, stand_in) = budgeted(
        |s| hybrid(s.provider(), 2, 3),
        Budget {
            max_cost: None,
            max_calls: Some(3),
            on_spent: OnBudget::Run,
        },
    );
    assert_eq!(stand_in.calls(), 3);
    assert_eq!(run.ended, "budget");
    assert!(run.observed.len() < 40, "{}", run.observed.len());
}

#[test]
fn a_one_shot_hybrid_stage_per_step_asks_the_model_when_a_long_running_one_does() {
    let (app, steps) = ("builtin:shop", 60);
    let (package, _, _) = crate::explore::model_facts(app);
    let stand_in = StandIn::start(Policy::FirstUntried);
    let live = run_app_with(
        app,
        hybrid(stand_in.provider(), 3, 2),
        0,
        steps,
        |config, _| {
            config.decide.prompt.text_only = true;
        },
    );
    // The same crawl, each step decided by a droid-decide that resumes the run from crawler.db
    // (its switch between the heuristic and the model too) in a clean environment.
    let one_shot_model = StandIn::start(Policy::FirstUntried);
    let provider = one_shot_model.provider();
    let one_shot = run_app_with(app, hybrid(provider, 3, 2), 0, steps, |config, _| {
        config.decide.prompt.text_only = true;
        let args = format!(
            "--package {package} --decider hybrid --hybrid-provider openai --base-url {} \
             --model {} --text-only --plateau-steps 3 --plateau-model-calls 2",
            one_shot_model.base_url(),
            crate::stand_in::MODEL
        );
        crate::one_graph::decide_one_shot(config, &args);
    });
    let who_decided = |run: &Run| -> Vec<(Option<u64>, Option<String>)> {
        run.events
            .iter()
            .filter_map(|event| match event {
                Event::Decision(d) => Some((d.step, d.decider.clone())),
                _ => None,
            })
            .collect()
    };
    assert!(stand_in.calls() > 0);
    assert_eq!(one_shot_model.calls(), stand_in.calls());
    assert_eq!(who_decided(&one_shot), who_decided(&live));
    assert_eq!(
        notes_of(&one_shot, NoteKind::Switch).len(),
        notes_of(&live, NoteKind::Switch).len()
    );
}

/// The notes of a run naming screens a model asked to visit.
fn visit_notes(run: &Run) -> usize {
    notes_of(run, NoteKind::State)
        .into_iter()
        .filter(|note| {
            note.data
                .as_ref()
                .is_some_and(|d| d.get("visits").is_some())
        })
        .count()
}

/// Whether the heuristic, walking to a model's goal, tried the element the model named.
fn tried_a_named_element(run: &Run) -> bool {
    run.events.iter().any(|event| {
        matches!(event, Event::Decision(d) if d.actions.iter().any(|a| a.reasoning.as_deref()
            .is_some_and(|r| r.starts_with("the model's goal: \""))))
    })
}

/// A hybrid run of `app` with the oracle stand-in (K 2, L 4), each step decided by a
/// long-running stage, or by a droid-decide resuming the run from crawler.db (`one_shot`); its
/// stand-in's calls.
fn hybrid_oracle_run(app: &str, steps: u64, one_shot: bool) -> (Run, usize) {
    let (package, _, _) = crate::explore::model_facts(app);
    let mut model = None;
    let run = run_app_with(app, Decider::Heuristic, 0, steps, |config, truth| {
        let stand_in = StandIn::start(Policy::Oracle {
            app: app.to_string(),
            truth: truth.to_path_buf(),
        });
        config.decide.prompt.text_only = true;
        config.decide.decider = hybrid(stand_in.provider(), 2, 4);
        if one_shot {
            let args = format!(
                "--package {package} --decider hybrid --hybrid-provider openai --base-url {} \
                 --model {} --text-only --plateau-steps 2 --plateau-model-calls 4",
                stand_in.base_url(),
                crate::stand_in::MODEL
            );
            crate::one_graph::decide_one_shot(config, &args);
        }
        model = Some(stand_in);
    });
    (run, model.expect("started").calls())
}

#[test]
fn screens_a_model_names_are_walked_to_by_the_heuristic_in_one_call() {
    // A real app's model: a dialer whose screens several tabs and menus lead to.
    let fixtures = droid::fixtures_or_skip!();
    let app = fixtures
        .join("apps/dialer/model.json")
        .display()
        .to_string();
    let (app, steps) = (app.as_str(), 60);
    let (live, calls) = hybrid_oracle_run(app, steps, false);
    // The oracle named listed screens to try an element on: the heuristic walked there (its
    // steps with no call) and tried the element.
    assert!(visit_notes(&live) >= 1, "no visit in {steps} steps");
    let walked: Vec<&String> = live
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Decision(d) if d.decider.as_deref() == Some("heuristic") && d.ai.is_none() => {
                d.actions.iter().find_map(|a| a.reasoning.as_ref())
            }
            _ => None,
        })
        .collect();
    assert!(walked.iter().any(|r| r.starts_with("the model's goal: \"")));
    // The model is told which listed state is the one on screen (`Main (on screen now): ...`):
    // one line at most per prompt.
    let marked: Vec<usize> = live
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Decision(d) => d.ai.as_ref()?.request.as_ref(),
            _ => None,
        })
        .map(|request| {
            request
                .to_string()
                .matches(&format!("{ON_SCREEN_NOW}: "))
                .count()
        })
        .collect();
    assert!(marked.iter().all(|&lines| lines <= 1), "{marked:?}");
    assert!(marked.contains(&1), "{marked:?}");
    // Every call is a decision with `ai`, a visit's included.
    let with_ai = live
        .events
        .iter()
        .filter(|e| matches!(e, Event::Decision(d) if d.ai.is_some()))
        .count();
    assert_eq!(with_ai, calls);
    // A droid-decide per step, resuming from crawler.db, walks to the same goals.
    let (one_shot, one_shot_calls) = hybrid_oracle_run(app, steps, true);
    let decided = |run: &Run| -> Vec<(Option<u64>, Option<String>, Vec<String>)> {
        run.events
            .iter()
            .filter_map(|event| match event {
                Event::Decision(d) => Some((
                    d.step,
                    d.decider.clone(),
                    d.actions.iter().map(|a| a.action.to_string()).collect(),
                )),
                _ => None,
            })
            .collect()
    };
    assert_eq!(one_shot_calls, calls);
    assert_eq!(decided(&one_shot), decided(&live));
}

#[test]
fn a_visit_of_a_screen_not_listed_is_an_unusable_answer_and_one_listed_is_walked() {
    let run = |number: u64| {
        let stand_in = StandIn::start(Policy::Visit(number));
        let decider = hybrid(stand_in.provider(), 2, 2);
        let run = run_app_with("builtin:shop", decider, 0, 60, |config, _| {
            config.decide.prompt.text_only = true;
        });
        assert_eq!(run.observed.len(), 60, "the crawl goes on to its budget");
        (run, stand_in.calls())
    };
    // Screen 99 is never listed: the answer cannot be used, the heuristic decides that step.
    let (unlisted, calls) = run(99);
    assert!(calls > 0);
    let invalid = notes_of(&unlisted, NoteKind::InvalidResponse);
    assert_eq!(invalid.len(), calls);
    assert!(invalid.iter().all(|note| note
        .message
        .as_deref()
        .is_some_and(|m| m.starts_with("the answer visits screen 99 the prompt did not list"))));
    assert_eq!(visit_notes(&unlisted), 0);
    // Screen 1 is listed at every plateau with something untried: every call names it, and
    // the heuristic walks there and tries the element named (or drops a goal it cannot).
    let (listed, calls) = run(1);
    let visits = visit_notes(&listed);
    assert!(calls > 0 && visits > 0, "{calls} calls, {visits} visits");
    assert!(notes_of(&listed, NoteKind::InvalidResponse).len() < calls);
    assert!(tried_a_named_element(&listed));
}
