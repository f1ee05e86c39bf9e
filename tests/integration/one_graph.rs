//! One model of a screen, one graph: droid-crawl deciding through a one-shot `droid-decide --db`
//! per step (a stage that resumes the recorded run from crawler.db each time) decides as it does
//! with its long-running in-process stage, and crawler.db holds the screens the decider's graph
//! holds, and the states of a screen it told apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use droid::crawl;
use droid::decide::{from_store, Config, Decider, Stage};
use droid::events::{Decision, Event};

use crate::common::bin_path;
use crate::explore::{app_models, crawl_config, model_facts, with_sim};

/// Collects a crawl's events.
#[derive(Default)]
struct Events(Vec<Event>);

impl crawl::Listener for Events {
    fn event(&mut self, event: &Event) {
        self.0.push(event.clone());
    }

    fn say(&mut self, _level: crawl::Level, _message: &str) {}
}

fn decisions(events: &[Event]) -> Vec<&Decision> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Decision(decision) => Some(decision),
            _ => None,
        })
        .collect()
}

/// The run's screens in crawler.db, by key.
fn stored_screens(db: &Path) -> BTreeSet<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT DISTINCT s.composite_hash FROM graph_persistence_outcomes o
             JOIN screens s ON s.id = o.screen_id",
        )
        .unwrap();
    let keys = stmt.query_map([], |r| r.get(0)).unwrap();
    keys.collect::<Result<_, _>>().unwrap()
}

/// The states crawler.db holds (their keys and what tells them apart), and the state of each
/// step's screen its actions were taken in.
type StoredStates = (BTreeSet<(String, String)>, BTreeMap<u64, String>);

fn stored_states(db: &Path) -> StoredStates {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT state_key, shows_json FROM screen_states")
        .unwrap();
    let states = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    let states = states.collect::<Result<_, _>>().unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT l.step_number, s.state_key FROM step_logs l
             JOIN screen_states s ON s.id = l.state_id",
        )
        .unwrap();
    let steps = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))
        .unwrap();
    (states, steps.collect::<Result<_, _>>().unwrap())
}

/// The states the decisions name, as crawler.db should hold them.
fn named_states(decisions: &[&Decision]) -> StoredStates {
    let named = decisions
        .iter()
        .filter_map(|d| Some((d.step?, d.state.as_ref()?)));
    let states = named
        .clone()
        .map(|(_, state)| {
            let shows = serde_json::to_string(&state.shows).unwrap();
            (state.key.clone(), shows)
        })
        .collect();
    (
        states,
        named
            .map(|(step, state)| (step, state.key.clone()))
            .collect(),
    )
}

/// The screen graph of a heuristic stage that took the recorded run in.
fn graph_of(db: &Path, events: &[Event]) -> BTreeSet<String> {
    let run = events.iter().find_map(|e| e.run_id()).unwrap().to_string();
    let stage = Stage::new(Config {
        decider: Decider::Heuristic,
        seed: 0,
        prompt: Default::default(),
        history: from_store::history(db, &run).unwrap(),
        fall_back_when_unreachable: false,
        budget: Default::default(),
        price: None,
    })
    .unwrap();
    let graph = stage.heuristic().graph();
    (0..graph.screen_count())
        .filter_map(|id| graph.key(id).map(|key| key.as_str().to_string()))
        .collect()
}

/// droid-crawl on `app` for 2 × (reachable screens) steps with the heuristic, in process or
/// through `decide_cmd`: its events and its crawler.db.
fn crawl(app: &str, one_shot: bool, dir: &Path) -> Vec<Event> {
    let (package, reachable, _) = model_facts(app);
    let steps = 2 * reachable.len() as u64;
    with_sim(app, |device, _, _| {
        let mut config = crawl_config(&package, Decider::Heuristic, 0, steps, dir);
        if one_shot {
            decide_one_shot(
                &mut config,
                &format!("--package {package} --decider heuristic"),
            );
        }
        let mut events = Events::default();
        let summary = crawl::crawl(config, device, &mut events).unwrap();
        assert!(summary.ended_well(), "{app}: {summary:?}");
        events.0
    })
}

/// Explores `app` with a long-running stage and with a one-shot one; returns how many of the
/// decisions named a state of a screen told apart.
/// Has the crawl decide each step by a droid-decide started for it with `args`, resuming the
/// run from the crawl's crawler.db, in a clean environment: nothing of the developer's shell
/// reaches the stage.
pub(crate) fn decide_one_shot(config: &mut crawl::Config, args: &str) {
    let decide = bin_path("droid-decide");
    let db = config.db.display().to_string();
    config.stages.decide = Some(format!(
        "sh -c 'while IFS= read -r line; do printf \"%s\\n\" \"$line\" | env -i {} \
         --db {db} {args} || exit 1; done'",
        decide.display()
    ));
    config.stages.timeout = std::time::Duration::from_secs(60);
}

fn explore_twice(app: &str) -> usize {
    let live_dir = tempfile::tempdir().unwrap();
    let live = crawl(app, false, live_dir.path());
    let live_db = live_dir.path().join("crawler.db");
    let graph = graph_of(&live_db, &live);
    assert_eq!(
        stored_screens(&live_db),
        graph,
        "{app}: crawler.db holds the screens the decider's graph holds"
    );
    let named = named_states(&decisions(&live));
    assert_eq!(
        stored_states(&live_db),
        named,
        "{app}: crawler.db holds the states the decisions name, each step in its state"
    );

    let one_shot_dir = tempfile::tempdir().unwrap();
    let one_shot = crawl(app, true, one_shot_dir.path());
    let (live, one_shot) = (decisions(&live), decisions(&one_shot));
    assert_eq!(live.len(), one_shot.len(), "{app}");
    for (a, b) in live.iter().zip(&one_shot) {
        assert_eq!(
            (&a.actions, &a.relaunch, &a.state),
            (&b.actions, &b.relaunch, &b.state),
            "{app}: step {:?} decided otherwise by a one-shot stage",
            a.step
        );
    }
    let one_shot_db = one_shot_dir.path().join("crawler.db");
    assert_eq!(
        stored_screens(&one_shot_db),
        graph,
        "{app}: the same screens"
    );
    assert_eq!(stored_states(&one_shot_db), named, "{app}: the same states");
    named.1.len()
}

#[test]
fn a_one_shot_droid_decide_per_step_decides_as_a_long_running_stage_on_every_app() {
    let apps = app_models();
    let named: Vec<(String, usize)> = apps
        .iter()
        .map(|app| (app.clone(), explore_twice(app)))
        .collect();
    // With the fixture apps there, some screen is told apart into states within the runs, so
    // the states' projection is put to the test.
    if droid::fixtures::available("apps").is_some() {
        assert!(named.iter().any(|(_, n)| *n > 0), "{named:?}");
    }
}
