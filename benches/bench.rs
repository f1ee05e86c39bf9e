//! `make bench`: droid's performance numbers, as medians. A plain harness: each section is a
//! function; `cargo bench --bench bench -- NAME` runs the sections whose name contains NAME.

use std::io::BufReader;
use std::time::{Duration, Instant};

use droid::events::{
    Action, ActionResult, ActionType, Decision, Event, Observation, Origin, ScreenHash,
};
use droid::record;
use droid::store::{Store, JOURNAL_STEPS};
use droid::ui::{Bounds, UiElement};

type Section = (&'static str, fn());

const SECTIONS: &[Section] = &[("store", store)];

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, section) in SECTIONS {
        if filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())) {
            println!("## {name}");
            section();
        }
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A synthetic run: `steps` steps over 300 screens of 30 activities, 12 elements each, one
/// action per step (two every tenth step).
fn synthetic_run(steps: u64) -> Vec<String> {
    let mut lines = Vec::new();
    for step in 1..=steps {
        let screen = (step * 7919) % 300;
        let activity = format!("com.example.app.Activity{}", screen % 30);
        let phash = (screen.wrapping_mul(0x9E37_79B9_7F4A_7C15)) ^ (step % 3);
        let elements: Vec<UiElement> = (0..12)
            .map(|i| {
                let bounds = Bounds::from([0, i * 100, 1080, i * 100 + 90]);
                let (cx, cy) = bounds.center();
                UiElement {
                    element_id: i as u32,
                    bounds,
                    class_name: "android.widget.Button".into(),
                    resource_id: format!("com.example.app:id/b{i}"),
                    text: format!("Item {i} of {screen}"),
                    clickable: true,
                    enabled: true,
                    visible: true,
                    center_x: cx,
                    center_y: cy,
                    xpath: format!("/hierarchy/node[{i}]"),
                    signature: format!("android.widget.Button|b{i}|Item {i} of {screen}"),
                    ref_id: Some(i as u32 + 1),
                    ..UiElement::default()
                }
            })
            .collect();
        let run = Some("bench".to_string());
        lines.push(
            Event::Observation(Box::new(Observation {
                run_id: run.clone(),
                step: Some(step),
                ts: Some(format!("2026-01-01T00:00:{:02}.000Z", step % 60)),
                package: Some("com.example.app".into()),
                activity: Some(activity.clone()),
                elements: elements.clone(),
                hash: Some(ScreenHash {
                    phash: Some(format!("{phash:016x}")),
                    screen_key: Some(format!("{activity}|{phash:016x}")),
                    ..ScreenHash::default()
                }),
                ..Observation::default()
            }))
            .to_line(),
        );
        let batch = if step % 10 == 0 { 2 } else { 1 };
        let actions: Vec<Action> = (0..batch).map(|_| Action::new(ActionType::Click)).collect();
        lines.push(
            Event::Decision(Decision {
                run_id: run.clone(),
                step: Some(step),
                ts: None,
                decider: Some("heuristic".into()),
                actions,
                signup_completed: false,
                done: false,
                ai: None,
                extra: Default::default(),
            })
            .to_line(),
        );
        for index in 0..batch {
            let target = &elements[((step + index) % 12) as usize];
            lines.push(
                Event::Result(ActionResult {
                    run_id: run.clone(),
                    step: Some(step),
                    index: index as u32,
                    action_type: "click".into(),
                    target_signature: Some(target.signature.clone()),
                    success: true,
                    duration_ms: 100,
                    tap_point: Some([target.center_x.into(), target.center_y.into()]),
                    origin: Some(Origin::Heuristic),
                    ..ActionResult::default()
                })
                .to_line(),
            );
        }
    }
    lines
}

/// Ingest rate of droid-record's stage and the exploration journal's query time.
fn store() {
    let lines = synthetic_run(10_000);
    let input = lines.join("\n") + "\n";
    let mut ingest = Vec::new();
    let mut kept = None;
    for _ in 0..3 {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("crawler.db")).expect("open store");
        let started = Instant::now();
        record::run(
            &record::Config::default(),
            &store,
            BufReader::new(input.as_bytes()),
            std::io::sink(),
            |_| {},
        )
        .expect("ingest");
        ingest.push(started.elapsed());
        kept = Some((dir, store));
    }
    let took = median(ingest);
    println!(
        "ingest, 10000-step synthetic run ({} events): median {:.2} s = {:.0} events/s (target >= 20000)",
        lines.len(),
        took.as_secs_f64(),
        lines.len() as f64 / took.as_secs_f64()
    );
    let parse: Vec<Duration> = (0..3)
        .map(|_| {
            let started = Instant::now();
            let parsed = droid::events::EventReader::new(input.as_bytes())
                .filter(Result::is_ok)
                .count();
            assert_eq!(parsed, lines.len());
            started.elapsed()
        })
        .collect();
    println!(
        "  of which decoding the stream (EventReader alone): median {:.2} s",
        median(parse).as_secs_f64()
    );
    let Some((_dir, store)) = kept else { return };
    let journal: Vec<Duration> = (0..200)
        .map(|_| {
            let started = Instant::now();
            let entries = store.journal("bench", JOURNAL_STEPS).expect("journal");
            assert_eq!(entries.len(), JOURNAL_STEPS as usize);
            started.elapsed()
        })
        .collect();
    println!(
        "exploration journal (last {JOURNAL_STEPS} steps of 10000): median {:.1} µs",
        median(journal).as_secs_f64() * 1e6
    );
}
