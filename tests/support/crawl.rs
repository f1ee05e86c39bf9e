//! A crawl of an app model, driven in-process, recorded into a real crawler.db with a session
//! folder: the run the report tests render. It stands in for `droid-crawl` until that exists
//! (then [`crawl_in_process`] becomes one call of the binary): droid-sim started in-process,
//! capture → hash → decide (the heuristic) → act each step, every event ingested with
//! `Store::ingest`, and what a driver adds: when the app vanishes, the device's crash buffer read
//! into `crash` notes (with the repro steps since the last launch and the screenshot of the step)
//! and a relaunch; when the system's "isn't responding" dialog shows, an `anr` note and "Wait".
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use droid::crash::{anr_signature, AnrData, ReproStep};
use droid::decide::heuristic::Heuristic;
use droid::decide::Credentials;
use droid::device::{AdbDevice, Device, DeviceConfig};
use droid::events::{now_ts, Event, Limits, Note, Observation, RunEnded, RunStarted};
use droid::sim::fault::Fault;
use droid::sim::model::AppModel;
use droid::sim::{Sim, SimConfig};
use droid::store::Store;

use super::explore::{model_facts, quick_act};
use droid::screen::{Screen, ScreenKey};

/// A recorded run.
pub struct CrawledRun {
    pub db: PathBuf,
    pub run_id: String,
    pub session_dir: PathBuf,
    pub package: String,
}

/// The system ANR dialog's buttons (AOSP's `aerr_*` ids).
const ANR_WAIT: &str = "android:id/aerr_wait";

/// Crawls `app` (`builtin:shop`, a model file) for `steps` steps into `dir/crawler.db` and a
/// session folder under `dir/output_data/`. `anr_on` names a screen of the model on which the
/// app stops responding (droid-sim's `anr-on` fault). The run ends COMPLETED (`max_steps`).
pub fn crawl_in_process(dir: &Path, app: &str, steps: u64, anr_on: Option<&str>) -> CrawledRun {
    let model = AppModel::load(app).expect("app model");
    let package = model.package().to_string();
    let sim = Sim::start(SimConfig {
        faults: anr_on.map(|s| Fault::AnrOn(s.into())).into_iter().collect(),
        ..SimConfig::new(app)
    })
    .expect("droid-sim starts");
    let device = AdbDevice::connect(DeviceConfig::loopback(sim.port(), sim.serial())).unwrap();
    let run_id = format!("run-{}-shop", chrono::Utc::now().format("%Y%m%dT%H%M%S%3f"));
    let session_dir = dir.join("output_data").join(format!(
        "{}_{package}_{}",
        sim.serial(),
        chrono::Local::now().format("%d%m_%H%M")
    ));
    let shots = session_dir.join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let db = dir.join("crawler.db");
    let store = Store::open(&db).unwrap();
    let mut ingest = store.ingest();
    let mut record = |event: Event| {
        ingest.push_event(event).expect("ingest");
    };

    device.crash_log(true).unwrap();
    device.launch(&package).unwrap();
    let info = device.info().unwrap();
    let version = device.app_version(&package).ok().flatten();
    record(Event::RunStarted(RunStarted {
        run_id: run_id.clone(),
        ts: Some(now_ts()),
        device: Some(sim.serial().to_string()),
        device_info: Some(info.clone()),
        package: Some(package.clone()),
        app_version: version.and_then(|v| v.name),
        limits: Some(Limits {
            max_steps: Some(steps),
            max_duration_secs: Some(600),
        }),
        decider: Some("heuristic".into()),
        session_dir: Some(session_dir.display().to_string()),
        ..RunStarted::default()
    }));
    let act = quick_act();
    let (_, _, allowed) = model_facts(app);
    let mut heuristic = Heuristic::new(7, Credentials::default());
    heuristic.set_package(Some(package.clone()), allowed);
    // The actions since the app was last launched: a crash's steps to reproduce.
    let mut since_launch: Vec<ReproStep> = Vec::new();
    for step in 1..=steps {
        let observation = droid::capture::device::observe_device(
            &device,
            &info,
            &droid::capture::device::DeviceOptions {
                out_dir: shots.clone(),
                screenshot: true,
                concurrent: true,
                run_id: Some(run_id.clone()),
                step: Some(step),
                step_names: false,
            },
        )
        .expect("capture");
        let mut observation = observation;
        droid::hash::enrich(&mut observation);
        let screen = ScreenKey::of(&observation).as_str().to_string();
        record(Event::Observation(Box::new(observation.clone())));

        if let Some(wait) = observation
            .elements
            .iter()
            .find(|e| e.resource_id == ANR_WAIT)
        {
            record(anr_note(
                &run_id,
                step,
                &package,
                &observation,
                &since_launch,
            ));
            let tap = droid::events::Action {
                point: Some([wait.center_x.into(), wait.center_y.into()]),
                reasoning: Some("the app stopped responding: wait for it".into()),
                ..droid::events::Action::new(droid::events::ActionType::Tap)
            };
            let decision = droid::events::Decision {
                run_id: Some(run_id.clone()),
                step: Some(step),
                ts: Some(now_ts()),
                decider: Some("driver".into()),
                ..droid::events::Decision::new(vec![tap])
            };
            record(Event::Decision(decision.clone()));
            for result in droid::act::execute_decision(&act, &device, &decision, Some(&observation))
            {
                record(Event::Result(result));
            }
            continue;
        }

        let choice = heuristic.decide(&Screen::of(&observation));
        let decision = droid::events::Decision {
            run_id: Some(run_id.clone()),
            step: Some(step),
            ts: Some(now_ts()),
            decider: Some("heuristic".into()),
            ..choice.to_decision()
        };
        record(Event::Decision(decision.clone()));
        let results = droid::act::execute_decision(&act, &device, &decision, Some(&observation));
        for result in &results {
            since_launch.push(ReproStep {
                step,
                action: format!(
                    "{} {}",
                    result.action_type,
                    result.target.clone().unwrap_or_default()
                )
                .trim()
                .to_string(),
                screen: screen.clone(),
            });
        }
        for result in results {
            record(Event::Result(result));
        }
        if decision.relaunch.is_some() {
            since_launch.clear();
        }
        let foreground = device.foreground().map(|f| f.package).unwrap_or_default();
        if foreground == package {
            continue;
        }
        // The app vanished: a crash when the crash buffer says so.
        let crashes = droid::crash::parse_crashes(&device.crash_log(true).unwrap());
        if crashes.is_empty() {
            continue;
        }
        for mut crash in crashes.into_iter().filter(|c| c.package == package) {
            crash.repro_steps = since_launch.clone();
            crash.screenshot_path = observation.screenshot_path.clone();
            crash.recovered = true;
            let message = format!("{}: {}", crash.exception, crash.exception_message);
            record(Event::Note(Note {
                run_id: Some(run_id.clone()),
                step: Some(step),
                ts: Some(now_ts()),
                kind: "crash".into(),
                message: Some(message),
                data: Some(serde_json::to_value(&crash).unwrap()),
                ..Note::default()
            }));
        }
        device.launch(&package).unwrap();
        since_launch.clear();
        record(Event::Note(Note {
            run_id: Some(run_id.clone()),
            step: Some(step),
            ts: Some(now_ts()),
            kind: "relaunch".into(),
            message: Some(format!("relaunched {package} after a crash")),
            data: Some(serde_json::json!({"recovered": true})),
            ..Note::default()
        }));
    }
    record(Event::RunEnded(RunEnded {
        run_id: run_id.clone(),
        ts: Some(now_ts()),
        status: "COMPLETED".into(),
        reason: Some("max_steps".into()),
        steps: Some(steps),
        session_dir: Some(session_dir.display().to_string()),
        ..RunEnded::default()
    }));
    ingest.finish().expect("ingest finishes");
    CrawledRun {
        db,
        run_id,
        session_dir,
        package,
    }
}

/// An `anr` note for the dialog in `observation`: what the device showed is all a dialog
/// tells (the title names the app), so it is the trace.
fn anr_note(
    run_id: &str,
    step: u64,
    package: &str,
    observation: &Observation,
    since_launch: &[ReproStep],
) -> Event {
    let texts: Vec<&str> = observation
        .elements
        .iter()
        .map(|e| e.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    let reason = texts
        .first()
        .copied()
        .unwrap_or("not responding")
        .to_string();
    let anr = AnrData {
        package: package.to_string(),
        signature: anr_signature(package, "", &reason),
        trace: texts.join("\n"),
        reason: reason.clone(),
        repro_steps: since_launch.to_vec(),
        screenshot_path: observation.screenshot_path.clone(),
        recovered: true,
    };
    Event::Note(Note {
        run_id: Some(run_id.to_string()),
        step: Some(step),
        ts: Some(now_ts()),
        kind: "anr".into(),
        message: Some(format!("ANR: {reason}")),
        data: Some(serde_json::to_value(anr).unwrap()),
        ..Note::default()
    })
}
