//! One model of a screen, one graph: a decide stage resuming a recorded run decides as the
//! long-running stage did, and crawler.db holds the screens the decider's graph holds.

use std::collections::BTreeSet;
use std::path::Path;

use droid::decide::{from_store, Decider};
use droid::events::{Decision, Event};
use droid::store::Store;

use crate::common::{droid, feed};
use crate::explore::{app_models, model_facts, stage_for, with_sim};

const RUN: &str = "r1";

/// Records a step's events.
fn record(store: &Store, events: impl IntoIterator<Item = Event>) {
    let mut ingest = store.ingest();
    for event in events {
        ingest.push_event(event).unwrap();
    }
    ingest.finish().unwrap();
}

fn decision_of(events: &[Event]) -> Decision {
    events
        .iter()
        .find_map(|event| match event {
            Event::Decision(decision) => Some(decision.clone()),
            _ => None,
        })
        .expect("a decision")
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

/// The same app explored twice for 2 × (reachable screens) steps: with one long-running decide
/// stage, and with a fresh stage per step resuming the run from crawler.db.
fn explore_twice(app: &str, one_shot_binary: bool) {
    let (_, reachable, _) = model_facts(app);
    let steps = 2 * reachable.len() as u64;
    let dir = tempfile::tempdir().unwrap();

    let live_db = dir.path().join("live.db");
    let live_store = Store::open(&live_db).unwrap();
    let mut stage = stage_for(app, Decider::Heuristic, 0, Vec::new());
    let (live, graph) = with_sim(app, |explorer, _| {
        let decisions: Vec<Decision> = (1..=steps)
            .map(|step| {
                let taken = explorer.step(step, &mut stage).unwrap();
                record(&live_store, taken.events());
                decision_of(&taken.decided)
            })
            .collect();
        let graph = stage.heuristic().graph();
        let keys: BTreeSet<String> = (0..graph.screen_count())
            .filter_map(|id| graph.key(id).map(|key| key.as_str().to_string()))
            .collect();
        (decisions, keys)
    });
    assert_eq!(
        stored_screens(&live_db),
        graph,
        "{app}: crawler.db holds the screens the decider's graph holds"
    );

    let db = dir.path().join("one-shot.db");
    let store = Store::open(&db).unwrap();
    let one_shot: Vec<Decision> = with_sim(app, |explorer, _| {
        (1..=steps)
            .map(|step| {
                let observation = explorer.observe(step).unwrap();
                let decided = match one_shot_binary {
                    true => decide_binary(app, &db, &observation),
                    false => {
                        let history = from_store::history(&db, RUN).unwrap();
                        let mut stage = stage_for(app, Decider::Heuristic, 0, history);
                        stage.decide(&observation).unwrap()
                    }
                };
                let decision = decision_of(&decided);
                let results = explorer.act(&decision, &observation);
                // As a pipe records it: the observation, what was decided, the results.
                let observed = Event::Observation(Box::new(observation));
                let results = results.into_iter().map(Event::Result);
                record(
                    &store,
                    std::iter::once(observed).chain(decided).chain(results),
                );
                decision
            })
            .collect()
    });
    assert_eq!(live.len(), one_shot.len());
    for (step, (a, b)) in live.iter().zip(&one_shot).enumerate() {
        assert_eq!(
            (&a.actions, &a.relaunch),
            (&b.actions, &b.relaunch),
            "{app}: step {} decided otherwise by a one-shot stage",
            step + 1
        );
    }
    assert_eq!(stored_screens(&db), graph, "{app}: the same screens");
}

/// `droid-decide --db DB --run r1` on one observation: the events it writes after it.
fn decide_binary(app: &str, db: &Path, observation: &droid::events::Observation) -> Vec<Event> {
    let (package, _, allowed) = model_facts(app);
    let mut cmd = droid("droid-decide");
    cmd.args(["--db", &db.display().to_string(), "--run", RUN]);
    cmd.args(["--package", &package]);
    for other in allowed {
        cmd.args(["--allow-package", &other]);
    }
    let line = Event::Observation(Box::new(observation.clone())).to_line();
    let output = feed(&mut cmd, &format!("{line}\n"));
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|line| Event::from_line(line).unwrap())
        .collect()
}

#[test]
fn a_one_shot_stage_per_step_decides_as_a_long_running_one_on_every_app() {
    for app in app_models() {
        explore_twice(&app, false);
    }
}

#[test]
fn the_droid_decide_binary_resumes_a_recorded_run_as_it_was_decided() {
    explore_twice("builtin:tiny", true);
}
