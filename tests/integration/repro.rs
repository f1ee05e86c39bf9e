//! Crashes a developer can act on: droid-crawl's minimisation of a crawl's crashes (replays from
//! a fresh launch, delta debugging, verification), its exports (the shell script run with the
//! real `adb` against a fresh `droid-sim`, the Maestro flow read by a YAML parser, the events
//! replayed by `droid-crawl replay`), a flaky crash told from a reproducible one, a device lost
//! while minimising, and a replay that diverges saying where.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::common::{droid, model_with, root};
use crate::sim_adb::{adb_binary, SimProcess};

/// A crawl's folder: crawler.db and the session folders under `out`.
struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        Place {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn db(&self) -> String {
        self.path().join("crawler.db").display().to_string()
    }

    fn out(&self) -> String {
        self.path().join("out").display().to_string()
    }

    /// `droid-crawl ARGS` on this place's crawler.db and output folder.
    fn droid_crawl(&self, args: &[&str]) -> Output {
        droid("droid-crawl")
            .args(args)
            .args(["--db", &self.db(), "--out", &self.out()])
            .output()
            .unwrap()
    }

    /// A crawl of `sim` that must end cleanly (minimising its crashes unless `args` say not).
    fn crawl(&self, sim: &str, args: &[&str]) -> Output {
        let mut all = vec!["--sim", sim, "--pause-ms", "0", "--report", "none"];
        all.extend_from_slice(args);
        let output = self.droid_crawl(&all);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        output
    }

    /// `droid-report RUN --format json`.
    fn report(&self, run: &str) -> Value {
        serde_json::from_str(&self.report_as(run, "json")).expect("the report is JSON")
    }

    /// `droid-report RUN --format FORMAT`, which must succeed: its stdout.
    fn report_as(&self, run: &str, format: &str) -> String {
        let output = droid("droid-report")
            .args(["--db", &self.db(), run, "--format", format])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn events(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("stdout is JSON lines"))
        .collect()
}

fn run_id(events: &[Value]) -> String {
    events[0]["run_id"]
        .as_str()
        .expect("run_started first")
        .into()
}

fn notes<'e>(events: &'e [Value], kind: &str) -> Vec<&'e Value> {
    events
        .iter()
        .filter(|e| e["type"] == "note" && e["kind"] == kind)
        .collect()
}

/// The one minimised crash of the run: its report entry and its minimisation.
fn minimised_crash(report: &Value) -> (&Value, &Value) {
    let crashes = report["crashes"].as_array().expect("crashes");
    assert_eq!(crashes.len(), 1, "{crashes:#?}");
    let crash = &crashes[0];
    (crash, &crash["minimised"])
}

fn actions(minimised: &Value) -> Vec<String> {
    minimised["minimal_steps"]
        .as_array()
        .expect("minimal steps")
        .iter()
        .map(|s| s["action"].as_str().unwrap().to_string())
        .collect()
}

fn export(minimised: &Value, what: &str) -> PathBuf {
    let path = PathBuf::from(minimised["files"][what].as_str().expect(what));
    assert!(path.is_file(), "{}", path.display());
    path
}

/// A copy of the tiny app whose transitions `change` rewrites.
fn tiny_with(dir: &Path, name: &str, change: impl FnOnce(&mut Vec<Value>)) -> String {
    let text = std::fs::read_to_string(root().join("apps/tiny/model.json")).unwrap();
    let model: Value = serde_json::from_str(&text).unwrap();
    let mut transitions = model["transitions"].as_array().unwrap().clone();
    change(&mut transitions);
    let sub = dir.join(name);
    std::fs::create_dir_all(&sub).unwrap();
    model_with(&sub, "tiny", json!({ "transitions": transitions }))
}

/// The commands and parameters of Maestro's command reference that an export may use.
const MAESTRO_COMMANDS: &[(&str, &[&str])] = &[
    ("launchApp", &["appId", "clearState", "stopApp"]),
    ("tapOn", &["id", "text", "point"]),
    ("longPressOn", &["id", "text", "point"]),
    ("eraseText", &[]),
    ("inputText", &[]),
    ("back", &[]),
    ("pressKey", &[]),
    ("scroll", &[]),
    ("swipe", &["start", "end", "direction", "duration"]),
    ("waitForAnimationToEnd", &["timeout"]),
];

/// The flow's commands, read with a YAML parser and checked against Maestro's documented ones:
/// their names, in order.
fn maestro_commands(path: &Path, package: &str) -> Vec<String> {
    use yaml_rust2::{Yaml, YamlLoader};
    let text = std::fs::read_to_string(path).unwrap();
    let docs = YamlLoader::load_from_str(&text).expect("the flow is YAML");
    assert_eq!(docs.len(), 2, "a config document, then the commands");
    assert_eq!(docs[0]["appId"].as_str(), Some(package));
    let commands = docs[1].as_vec().expect("a list of commands");
    let mut names = Vec::new();
    for command in commands {
        let (name, params) = match command {
            Yaml::String(name) => (name.clone(), None),
            Yaml::Hash(map) => {
                assert_eq!(map.len(), 1, "{command:?}");
                let (name, params) = map.iter().next().unwrap();
                (
                    name.as_str().expect("a command name").to_string(),
                    Some(params),
                )
            }
            other => panic!("not a command: {other:?}"),
        };
        let (_, allowed) = MAESTRO_COMMANDS
            .iter()
            .find(|(known, _)| *known == name)
            .unwrap_or_else(|| panic!("{name} is not a documented Maestro command"));
        if let Some(Yaml::Hash(params)) = params {
            for key in params.keys() {
                let key = key.as_str().expect("parameter names are strings");
                assert!(allowed.contains(&key), "{name} has no parameter {key}");
            }
        }
        names.push(name);
    }
    assert_eq!(names.first().map(String::as_str), Some("launchApp"));
    names
}

/// The shop's crash (the one `make demo` finds) cut down, verified, and exported: the shell
/// script, run with the real `adb` against a fresh simulator, crashes the app (its last step
/// left out, it does not); the Maestro flow parses; the events replay to the crash.
#[test]
fn the_shop_crash_is_minimised_and_its_adb_script_crashes_a_fresh_simulator() {
    let place = Place::new();
    let output = place.crawl("builtin:shop", &["--max-steps", "69"]);
    let run = run_id(&events(&output));
    let report = place.report(&run);
    let (crash, minimised) = minimised_crash(&report);
    assert_eq!(crash["exception"], "java.lang.IllegalStateException");
    assert_eq!(minimised["verdict"], "reproduced", "{minimised:#}");
    assert_eq!(minimised["reproduced"], 3);
    assert_eq!(minimised["verify_replays"], 3);
    assert_eq!(minimised["one_minimal"], true);
    assert_eq!(minimised["minimal"], true);
    let steps = actions(minimised);
    let before = minimised["steps_before"].as_u64().unwrap() as usize;
    assert!(steps.len() < before, "{} of {before}", steps.len());
    assert!(steps.last().unwrap().contains("Clear cache"), "{steps:?}");
    assert!(minimised["replays"].as_u64().unwrap() > 0);
    // Every replay is a run of kind `replay`, linked to the crawl.
    for verifying in minimised["verify_runs"].as_array().unwrap() {
        let replay = place.report(verifying.as_str().unwrap());
        assert_eq!(replay["run"]["kind"], "replay");
        assert_eq!(replay["run"]["replay_of"], run.as_str());
        assert_eq!(replay["run"]["replay_purpose"], "verify");
    }

    // The Maestro flow: documented commands only, one per step (a tap, a tap and its typing, a
    // back), after the launch.
    let names = maestro_commands(&export(minimised, "maestro"), "com.example.shop");
    let per_step = names[1..].iter().filter(|n| *n != "inputText").count();
    assert_eq!(per_step, steps.len(), "{names:?}");
    assert!(names.iter().any(|n| n == "tapOn"), "{names:?}");

    // The events replay to the crash on a fresh simulator.
    let events_file = export(minimised, "events").display().to_string();
    let signature = crash["signature"].as_str().unwrap();
    let replayed = place.droid_crawl(&[
        "replay",
        "--events",
        &events_file,
        "--crash",
        signature,
        "--sim",
        "builtin:shop",
    ]);
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    assert!(stderr(&replayed).contains("reproduced after step"));

    // The shell script with the real adb client.
    let Some(adb) = adb_binary() else { return };
    let script = std::fs::read_to_string(export(minimised, "shell")).unwrap();
    let sim = SimProcess::start(&["--app", "builtin:shop"]);
    let home = tempfile::tempdir().unwrap();
    let run_script = |text: &str| {
        let path = home.path().join("repro.sh");
        std::fs::write(&path, text).unwrap();
        Command::new("sh")
            .arg(&path)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("ADB", adb)
            .env("ANDROID_ADB_SERVER_PORT", sim.port.to_string())
            .env("ANDROID_SERIAL", &sim.serial)
            .env("STEP_DELAY", "0")
            .output()
            .unwrap()
    };
    let crash_log = || {
        let out = Command::new(adb)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .args(["-P", &sim.port.to_string(), "-s", &sim.serial])
            .args(["logcat", "-b", "crash", "-d"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // Without its last step the path does not crash the app.
    let last = script.rfind("# step ").unwrap();
    let end = script[last..].find("sleep").map(|i| last + i).unwrap();
    let shortened = format!("{}{}", &script[..last], &script[end..]);
    let short = run_script(&shortened);
    assert_eq!(short.status.code(), Some(1), "{}", stderr(&short));
    assert!(!crash_log().contains("IllegalStateException"));
    let ran = run_script(&script);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let log = crash_log();
    assert!(log.contains("FATAL EXCEPTION"), "{log}");
    assert!(
        log.contains("java.lang.IllegalStateException: cache directory is locked"),
        "{log}"
    );
}

/// A crash that comes only once an email was typed keeps the typing, and only it: the
/// password typed with it goes, and the exports type the email.
#[test]
fn a_crash_that_needs_typed_text_keeps_the_typing() {
    let place = Place::new();
    let model = tiny_with(place.path(), "typed", |transitions| {
        transitions.retain(|t| t["to"] != "@crash");
        let submit = transitions
            .iter_mut()
            .find(|t| t["from"] == "login" && t["target"]["text"] == "Submit")
            .unwrap();
        submit["to"] = json!("@crash");
        submit["crash"] = json!("java.lang.NumberFormatException: For input string: \"@\"");
    });
    let output = place.crawl(&model, &["--max-steps", "30"]);
    let run = run_id(&events(&output));
    let report = place.report(&run);
    let (crash, minimised) = minimised_crash(&report);
    assert_eq!(crash["exception"], "java.lang.NumberFormatException");
    assert_eq!(minimised["verdict"], "reproduced", "{minimised:#}");
    assert_eq!(minimised["one_minimal"], true);
    let steps = actions(minimised);
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert!(steps[0].contains("Sign in"), "{steps:?}");
    assert!(
        steps[1].starts_with("input") && steps[1].contains("Email"),
        "{steps:?}"
    );
    assert!(steps[2].contains("Submit"), "{steps:?}");
    let shell = std::fs::read_to_string(export(minimised, "shell")).unwrap();
    let typed: Vec<&str> = shell.lines().filter(|l| l.contains("input text")).collect();
    assert_eq!(typed.len(), 1, "{shell}");
    assert!(typed[0].contains('@'), "{shell}");
    let names = maestro_commands(&export(minimised, "maestro"), "com.example.tiny");
    assert_eq!(names.iter().filter(|n| *n == "inputText").count(), 1);
}

/// A crash that fires on every second attempt is reported flaky, not minimal.
#[test]
fn a_crash_on_every_second_attempt_is_reported_flaky() {
    let place = Place::new();
    let output = place.crawl(
        "builtin:tiny",
        &["--max-steps", "20", "--sim-fault", "crash-every:2"],
    );
    let run = run_id(&events(&output));
    let report = place.report(&run);
    let (_, minimised) = minimised_crash(&report);
    assert_eq!(minimised["verdict"], "flaky", "{minimised:#}");
    assert_eq!(minimised["minimal"], false);
    let k = minimised["reproduced"].as_u64().unwrap();
    assert!(0 < k && k < 3, "{minimised:#}");
    let text = place.report_as(&run, "text");
    assert!(text.contains("(flaky)"), "{text}");
    // The same crawl without the fault is reproduced every time.
    let steady = Place::new();
    let output = steady.crawl("builtin:tiny", &["--max-steps", "20"]);
    let report = steady.report(&run_id(&events(&output)));
    assert_eq!(minimised_crash(&report).1["verdict"], "reproduced");
}

/// A device that goes away while a crash is minimised: the crash is recorded as it stood,
/// unverified, with `halted: device` and the device's error, the report says so, and
/// `droid-crawl minimise` exits 1.
#[test]
fn a_device_lost_while_minimising_is_recorded_with_its_error() {
    let place = Place::new();
    let output = place.crawl("builtin:tiny", &["--max-steps", "20", "--no-minimise"]);
    let run = run_id(&events(&output));
    // The simulator drops every socket after 60 commands and stays away 30 s; droid waits
    // half a second for it.
    let output = place.droid_crawl(&[
        "minimise",
        "--run",
        &run,
        "--sim",
        "builtin:tiny",
        "--sim-fault",
        "disconnect-after:60:30",
        "--wait-for-device",
        "0.5",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("then the device failed"),
        "{}",
        stderr(&output)
    );
    let report = place.report(&run);
    let (_, minimised) = minimised_crash(&report);
    assert_eq!(minimised["halted"], "device", "{minimised:#}");
    assert_eq!(minimised["verdict"], "unverified", "{minimised:#}");
    assert_eq!(minimised["minimal"], false);
    let error = minimised["error"].as_str().expect("the device's error");
    assert!(error.contains("did not come back"), "{error}");
    let text = place.report_as(&run, "text");
    assert!(text.contains("stopped (device: "), "{text}");
}

/// A replay of a run on a new version of the app (where "Open list" opens the search) diverges
/// at the first step taken after that click, naming the screen expected and the one seen; on
/// the same version it follows the recording to its end.
#[test]
fn a_replay_that_diverges_says_where() {
    let place = Place::new();
    let output = place.crawl("builtin:tiny", &["--max-steps", "25", "--no-minimise"]);
    let crawl = events(&output);
    let run = run_id(&crawl);
    let clicked = crawl
        .iter()
        .find(|e| {
            e["type"] == "decision"
                && e["actions"][0]["action_desc"]
                    .as_str()
                    .is_some_and(|d| d.contains("Open list"))
        })
        .and_then(|e| e["step"].as_u64())
        .expect("the crawl opened the list");

    let same = place.droid_crawl(&["replay", "--run", &run, "--sim", "builtin:tiny"]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert!(notes(&events(&same), "divergence").is_empty());

    let changed = tiny_with(place.path(), "v2", |transitions| {
        let open = transitions
            .iter_mut()
            .find(|t| t["target"]["text"] == "Open list")
            .unwrap();
        open["to"] = json!("search");
    });
    let replayed = place.droid_crawl(&["replay", "--run", &run, "--sim", &changed]);
    assert_eq!(replayed.status.code(), Some(1), "{}", stderr(&replayed));
    let replay = events(&replayed);
    let divergence = notes(&replay, "divergence");
    assert_eq!(divergence.len(), 1, "{divergence:#?}");
    let data = &divergence[0]["data"];
    let at = data["recorded_step"].as_u64().unwrap();
    assert!(
        at > clicked,
        "diverged at {at}, the list was opened at {clicked}"
    );
    // What was expected is what the crawl saw before that step; the replay saw another screen.
    let recorded = crawl
        .iter()
        .find(|e| e["type"] == "observation" && e["step"] == at)
        .unwrap();
    assert_eq!(data["expected"], recorded["hash"]["screen_key"]);
    assert_ne!(data["seen"], data["expected"]);
    assert_eq!(data["kind"], "screen");
    let message = stderr(&replayed);
    assert!(
        message.contains(&format!("diverged at step {}", data["step"])),
        "{message}"
    );
    assert!(
        message.contains(&format!("recorded step {at}")),
        "{message}"
    );
    // The replay is a run of its own, linked to the crawl.
    let report = place.report(&run_id(&replay));
    assert_eq!(report["run"]["kind"], "replay");
    assert_eq!(report["run"]["replay_of"], run.as_str());
}
