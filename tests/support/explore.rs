//! The heuristic (or random) exploring an app model against droid-sim, measured by the
//! simulator's truth log: shared by the coverage test (tests/integration) and `make bench`'s
//! coverage section, so the figures in docs/decide.md come from the loop the test runs.

use droid::decide::heuristic::Heuristic;
use droid::decide::random::RandomDecider;
use droid::decide::Credentials;
use droid::events::Observation;
use serde_json::Value;

/// Screens of the model reached within `steps_per_screen × reachable` steps of capture → hash →
/// decide → act against the simulator (the heuristic with `seed`, else random), measured with its
/// truth log: `(reached, reachable)`.
pub fn explore(app: &str, random: bool, seed: u64, steps_per_screen: u64) -> (usize, usize) {
    use droid::capture::device::{observe_device, DeviceOptions};
    use droid::device::{AdbDevice, Device, DeviceConfig};
    use droid::sim::model::AppModel;
    use droid::sim::{Sim, SimConfig};
    use std::collections::BTreeSet;

    let model = AppModel::load(app).unwrap();
    let package = model.package().to_string();
    let reachable: BTreeSet<String> = model
        .reachable()
        .into_iter()
        .map(|i| model.screen(i).id.clone())
        .collect();
    let allowed = other_packages(&model);
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.jsonl");
    let sim = Sim::start(SimConfig {
        truth_log: Some(truth.clone()),
        ..SimConfig::new(app)
    })
    .unwrap();
    let device = AdbDevice::connect(DeviceConfig::loopback(sim.port(), sim.serial())).unwrap();
    device.launch(&package).unwrap();
    let info = device.info().unwrap();
    let act = no_waits();
    let mut heuristic = Heuristic::new(seed, Credentials::default());
    heuristic.set_package(Some(package.clone()), allowed);
    let mut monkey = RandomDecider::new(1);
    for step in 0..steps_per_screen * reachable.len() as u64 {
        let observation = observe_device(
            &device,
            &info,
            &DeviceOptions {
                out_dir: dir.path().join("shots"),
                screenshot: true,
                concurrent: true,
                run_id: Some("r1".into()),
                step: Some(step),
            },
        )
        .unwrap();
        let observation = hashed(observation);
        // A relaunch is droid-act's to carry out, as in a pipeline of the binaries.
        let decision = match random {
            true => droid::events::Decision::new(vec![monkey.decide(&observation)]),
            false => heuristic.decide(&observation).to_decision(),
        };
        let decision = droid::events::Decision {
            run_id: Some("r1".into()),
            step: Some(step),
            ..decision
        };
        droid::act::execute_decision(&act, &device, &decision, Some(&observation));
    }
    let reached: BTreeSet<String> = std::fs::read_to_string(&truth)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["screen"].as_str().map(str::to_string))
        .filter(|s| reachable.contains(s))
        .collect();
    (reached.len(), reachable.len())
}

/// Packages of the model's screens other than the app's (a launcher page, a browser): part of
/// the app's journey, not places to back out of.
pub fn other_packages(model: &droid::sim::model::AppModel) -> Vec<String> {
    model
        .screens()
        .iter()
        .map(|s| s.package.clone())
        .filter(|p| p != model.package())
        .collect()
}

/// droid-act without its pauses: the simulator needs no time to settle.
pub fn no_waits() -> droid::act::Config {
    droid::act::Config {
        pause: std::time::Duration::ZERO,
        settle: std::time::Duration::ZERO,
        long_press_ms: 600,
        default_wait: std::time::Duration::ZERO,
        test_password: None,
    }
}

/// The observation as droid-hash enriches it (perceptual, layout and structure hashes).
pub fn hashed(observation: Observation) -> Observation {
    let line = droid::events::Event::Observation(Box::new(observation)).to_line();
    let mut output = Vec::new();
    let mut report = |_: &str| {};
    droid::hash::run(
        droid::hash::Config {
            report: &mut report,
        },
        format!("{line}\n").as_bytes(),
        &mut output,
    )
    .unwrap();
    match droid::events::Event::from_line(String::from_utf8(output).unwrap().trim()) {
        Ok(Some(droid::events::Event::Observation(observation))) => *observation,
        other => panic!("not an observation: {other:?}"),
    }
}
