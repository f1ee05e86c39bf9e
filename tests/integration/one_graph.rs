//! One model of a screen, one graph: droid-crawl deciding through a one-shot `droid-decide --db`
//! per step (a stage that resumes the recorded run from crawler.db each time) decides as it does
//! with its long-running in-process stage, and crawler.db holds the screens the decider's graph
//! holds.

use std::collections::BTreeSet;
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
            // A clean environment: nothing of the developer's shell reaches the stage.
            let decide = bin_path("droid-decide");
            let db = config.db.display().to_string();
            config.stages.decide = Some(format!(
                "sh -c 'while IFS= read -r line; do printf \"%s\\n\" \"$line\" | env -i {} \
                 --db {db} --package {package} --decider heuristic || exit 1; done'",
                decide.display()
            ));
            config.stages.timeout = std::time::Duration::from_secs(60);
        }
        let mut events = Events::default();
        let summary = crawl::crawl(config, device, &mut events).unwrap();
        assert!(summary.ended_well(), "{app}: {summary:?}");
        events.0
    })
}

fn explore_twice(app: &str) {
    let live_dir = tempfile::tempdir().unwrap();
    let live = crawl(app, false, live_dir.path());
    let live_db = live_dir.path().join("crawler.db");
    let graph = graph_of(&live_db, &live);
    assert_eq!(
        stored_screens(&live_db),
        graph,
        "{app}: crawler.db holds the screens the decider's graph holds"
    );

    let one_shot_dir = tempfile::tempdir().unwrap();
    let one_shot = crawl(app, true, one_shot_dir.path());
    let (live, one_shot) = (decisions(&live), decisions(&one_shot));
    assert_eq!(live.len(), one_shot.len(), "{app}");
    for (a, b) in live.iter().zip(&one_shot) {
        assert_eq!(
            (&a.actions, &a.relaunch),
            (&b.actions, &b.relaunch),
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
}

#[test]
fn a_one_shot_droid_decide_per_step_decides_as_a_long_running_stage_on_every_app() {
    for app in app_models() {
        explore_twice(&app);
    }
}
