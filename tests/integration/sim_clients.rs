//! The two most used pure-Python ADB clients, `adbutils` and `pure-python-adb` (`ppadb`), against
//! the `droid-sim` binary: every public device method of each that a device can answer without
//! an on-device agent or a real APK, compared with what the app model and the truth log say.
//!
//! One Python process per client (`tests/python/bridge.py`) runs the calls this test sends it
//! and answers each as JSON; every mismatch is collected, so one run names all of them. The
//! compatibility table in `docs/sim.md` must list every public method of each client, and every
//! method it says works must have been called here.
//!
//! The clients come from `tests/python/requirements.txt` (`.ci/run` installs them). Without them
//! these tests print a skip notice and pass, except when `DROID_REQUIRE_ADB=1`: then they fail.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use droid::sim::model::{Action, AppModel, Destination};
use serde_json::{json, Value};

use crate::common::root;
use crate::sim_adb::SimProcess;

const APP: &str = "builtin:shop";
const LAUNCHER: &str = "com.android.launcher3";
const BROWSER: &str = "com.android.chrome";

/// True when `python3` can import `module`; `false` (after a notice) when the test may skip.
pub(crate) fn client_installed(module: &str) -> bool {
    let found = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return true;
    }
    if std::env::var("DROID_REQUIRE_ADB").as_deref() == Ok("1") {
        panic!(
            "DROID_REQUIRE_ADB=1 but python3 cannot import {module}: pip install -r tests/python/requirements.txt"
        );
    }
    eprintln!(
        "skipping: python3 cannot import {module} (pip install -r tests/python/requirements.txt)"
    );
    false
}

/// A `droid-sim` process with a truth log in a temp dir.
struct Sim {
    process: SimProcess,
    dir: tempfile::TempDir,
}

impl Sim {
    fn start() -> Sim {
        let dir = tempfile::tempdir().expect("temp dir");
        let truth = dir.path().join("truth.jsonl");
        let truth = truth.to_str().expect("utf-8 temp path");
        let process = SimProcess::start(&["--app", APP, "--truth-log", truth]);
        Sim { process, dir }
    }

    fn truth(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("truth.jsonl"))
            .expect("truth log")
            .lines()
            .map(|line| serde_json::from_str(line).expect("truth line is JSON"))
            .collect()
    }
}

/// What a client method raised.
#[derive(Debug)]
struct Raised {
    kind: String,
    message: String,
}

/// One client in one Python process, against one simulator, collecting mismatches.
struct Run {
    name: &'static str,
    sim: Sim,
    python: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    model: AppModel,
    problems: Vec<String>,
    called: BTreeSet<String>,
}

impl Run {
    fn start(name: &'static str, module: &str) -> Option<Run> {
        if !client_installed(module) {
            return None;
        }
        let sim = Sim::start();
        let mut python = Command::new("python3")
            .arg(root().join("tests/python/bridge.py"))
            .args([name, &sim.process.port.to_string(), &sim.process.serial])
            .env_remove("ANDROID_SERIAL")
            .env_remove("ANDROID_ADB_SERVER_PORT")
            .env_remove("ADB_SERVER_SOCKET")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the bridge");
        let input = python.stdin.take().expect("stdin");
        let output = BufReader::new(python.stdout.take().expect("stdout"));
        Some(Run {
            name,
            sim,
            python,
            input,
            output,
            model: AppModel::load(APP).expect("model loads"),
            problems: Vec::new(),
            called: BTreeSet::new(),
        })
    }

    fn request(&mut self, request: Value) -> Result<Value, Raised> {
        writeln!(self.input, "{request}").expect("bridge reads");
        self.input.flush().expect("bridge reads");
        let mut line = String::new();
        self.output.read_line(&mut line).expect("bridge answers");
        let answer: Value = serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("bridge answer {line:?} is not JSON: {err}"));
        match answer.get("error") {
            Some(error) => Err(Raised {
                kind: error["type"].as_str().unwrap_or_default().to_string(),
                message: error["message"].as_str().unwrap_or_default().to_string(),
            }),
            None => Ok(answer["ok"].clone()),
        }
    }

    /// Calls a method (a dotted path: `sync.stat`); records it as exercised.
    fn call(&mut self, method: &str, args: Value) -> Result<Value, Raised> {
        self.called
            .insert(method.split('.').next().unwrap_or(method).to_string());
        self.request(json!({"call": method, "args": args}))
    }

    fn call_kw(&mut self, method: &str, kwargs: Value) -> Result<Value, Raised> {
        self.called.insert(method.to_string());
        self.request(json!({"call": method, "args": [], "kwargs": kwargs}))
    }

    fn get(&mut self, attribute: &str) -> Result<Value, Raised> {
        self.called
            .insert(attribute.split('.').next().unwrap_or(attribute).to_string());
        self.request(json!({"get": attribute}))
    }

    fn set(&mut self, attribute: &str, value: Value) -> Result<Value, Raised> {
        self.called.insert(attribute.to_string());
        self.request(json!({"set": attribute, "value": value}))
    }

    /// The method's answer; a raised error is recorded as a problem (and gives `null`).
    fn value(&mut self, method: &str, args: Value) -> Value {
        match self.call(method, args.clone()) {
            Ok(value) => value,
            Err(raised) => {
                self.problems.push(format!(
                    "{method}({args}) raised {}: {}",
                    raised.kind, raised.message
                ));
                Value::Null
            }
        }
    }

    /// A shell command's output through the client itself.
    fn shell(&mut self, command: &str) -> String {
        self.value("shell", json!([command]))
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn check(&mut self, what: &str, ok: bool, detail: impl std::fmt::Display) {
        if !ok {
            self.problems.push(format!("{what}: {detail}"));
        }
    }

    fn check_eq(&mut self, what: &str, got: &Value, want: &Value) {
        self.check(what, got == want, format!("got {got}, want {want}"));
    }

    /// The method must fail (it is documented as not simulated).
    fn check_raises(&mut self, method: &str, args: Value) {
        if let Ok(value) = self.call(method, args) {
            self.problems.push(format!(
                "{method} is documented as not working, yet answered {value}"
            ));
        }
    }

    /// (screen, package) of the last screen the truth log recorded.
    fn shown(&self) -> (String, String) {
        self.sim
            .truth()
            .iter()
            .rev()
            .find(|line| line.get("screen").is_some())
            .map(|line| {
                (
                    line["screen"].as_str().unwrap_or_default().to_string(),
                    line["package"].as_str().unwrap_or_default().to_string(),
                )
            })
            .unwrap_or_default()
    }

    /// The input events the truth log recorded, in order.
    fn inputs(&self) -> Vec<Value> {
        self.sim
            .truth()
            .into_iter()
            .filter(|line| line.get("input").is_some())
            .collect()
    }

    fn last_input(&self) -> Value {
        self.inputs().pop().unwrap_or(Value::Null)
    }

    /// The activity the model says is in front now (`pkg.Cls`), from the truth log's screen.
    fn model_activity(&self) -> Option<String> {
        let (screen, _) = self.shown();
        self.model
            .screens()
            .iter()
            .find(|s| s.id == screen)
            .map(|s| s.activity.clone())
    }

    fn start_activity(&self) -> String {
        self.model.screen(self.model.start()).activity.clone()
    }

    fn pidof(&mut self, package: &str) -> Option<u64> {
        self.shell(&format!("pidof {package}")).trim().parse().ok()
    }

    /// Fails the test with every problem, and checks the docs table against what was called.
    /// The model's package and screen size, and the device serial.
    fn facts(&self) -> (String, (u32, u32), String) {
        let package = self.model.package().to_string();
        (
            package,
            self.model.screen_size(),
            self.sim.process.serial.clone(),
        )
    }

    fn finish(mut self) {
        let methods = public_methods(&mut self);
        let table = compatibility_table(self.name);
        if table.is_empty() {
            self.problems.push(format!(
                "docs/sim.md has no table under \"### {} \"",
                self.name
            ));
        }
        for method in &methods {
            if !table.contains_key(method) {
                self.problems
                    .push(format!("docs/sim.md has no row for {}.{method}", self.name));
            }
        }
        for (method, status) in &table {
            if status.starts_with("works") && !self.called.contains(method) {
                self.problems.push(format!(
                    "docs/sim.md says {}.{method} works, but this test never calls it",
                    self.name
                ));
            }
            if !methods.contains(method) {
                self.problems.push(format!(
                    "docs/sim.md lists {}.{method}, which the client does not have",
                    self.name
                ));
            }
        }
        drop(self.input);
        let _ = self.python.wait();
        assert!(
            self.problems.is_empty(),
            "{} against droid-sim, {} problem(s):\n  {}",
            self.name,
            self.problems.len(),
            self.problems.join("\n  ")
        );
    }
}

/// `method -> status` from the client's compatibility table in docs/sim.md.
fn compatibility_table(client: &str) -> BTreeMap<String, String> {
    let docs = std::fs::read_to_string(root().join("docs/sim.md")).expect("docs/sim.md");
    let heading = format!("### {client} ");
    let mut rows = BTreeMap::new();
    let mut inside = false;
    for line in docs.lines() {
        if line.starts_with('#') {
            inside = line.starts_with(&heading);
            continue;
        }
        let Some(row) = line.strip_prefix("| `").filter(|_| inside) else {
            continue;
        };
        let columns: Vec<&str> = row.split(" | ").collect();
        let status = columns.get(1).unwrap_or(&"").trim().to_string();
        // Every `name` or `name()` of the first column.
        for cell in columns[0].split('`').step_by(2) {
            let name: String = cell
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                rows.insert(name, status.clone());
            }
        }
    }
    rows
}

/// A tap point and the model screen it leads to.
type Tap = ((i32, i32), String);

/// Taps from the start screen to the nearest screen with a text field: the tap points with the
/// screen each one leads to, and that screen's first field's centre.
fn path_to_a_field(model: &AppModel) -> (Vec<Tap>, (i32, i32)) {
    let mut queue = std::collections::VecDeque::from([(model.start(), Vec::new())]);
    let mut seen = BTreeSet::from([model.start()]);
    while let Some((index, path)) = queue.pop_front() {
        let screen = model.screen(index);
        if let Some(field) = screen.nodes().into_iter().find(|n| n.is_editable()) {
            return (path, field.bounds.center());
        }
        for transition in model.transitions() {
            let (Destination::Screen(to), Some(target)) = (&transition.to, &transition.target)
            else {
                continue;
            };
            if transition.from != index
                || transition.action != Action::Click
                || !transition.requires.is_empty()
                || !seen.insert(*to)
            {
                continue;
            }
            if let Some(node) = screen.nodes().into_iter().find(|n| target.matches(n)) {
                let mut next = path.clone();
                next.push((node.bounds.center(), model.screen(*to).id.clone()));
                queue.push_back((*to, next));
            }
        }
    }
    panic!("{APP} has no text field reachable by taps");
}

/// `.Cls` → `pkg.Cls`, as dumpsys abbreviates classes inside their package.
fn full_class(package: &str, class: &str) -> String {
    match class.strip_prefix('.') {
        Some(rest) => format!("{package}.{rest}"),
        None => class.to_string(),
    }
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn temp_file(run: &Run, name: &str) -> PathBuf {
    run.sim.dir.path().join(name)
}

/// The package of the APK [`extra_apk`] writes.
const EXTRA: &str = "com.example.extra";

/// A real APK (droid's APK writer) of a package the model does not have, in the run's dir.
fn extra_apk(run: &Run) -> PathBuf {
    let path = temp_file(run, "extra.apk");
    let apk = droid::apk::build(&droid::apk::Manifest {
        package: EXTRA.to_string(),
        version_name: Some("3.1".to_string()),
        activities: vec![format!("{EXTRA}.Main")],
        launchers: vec![format!("{EXTRA}.Main")],
        ..droid::apk::Manifest::default()
    });
    std::fs::write(&path, apk).expect("write the APK");
    path
}

/// Waits (at most 30 s, a bound against a hang) until the file holds `needle`.
fn wait_for_text(path: &std::path::Path, needle: &str) -> bool {
    for _ in 0..600 {
        if std::fs::read_to_string(path).is_ok_and(|text| text.contains(needle)) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

/// A TCP port free on this machine right now, for a forward's local end.
fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn public_methods(run: &mut Run) -> Vec<String> {
    let methods = run.request(json!({"methods": true})).expect("methods");
    methods
        .as_array()
        .expect("a list")
        .iter()
        .map(|m| text(m).to_string())
        .collect()
}

#[test]
fn adbutils_answers_as_on_a_device() {
    let Some(mut run) = Run::start("adbutils", "adbutils") else {
        return;
    };
    let (package, (width, height), serial) = run.facts();

    // Identity and the host services.
    let got = run.get("serial").unwrap_or(Value::Null);
    run.check_eq("serial", &got, &json!(serial));
    let got = run.value("get_state", json!([]));
    run.check_eq("get_state()", &got, &json!("device"));
    let got = run.value("get_serialno", json!([]));
    run.check_eq("get_serialno()", &got, &json!(serial));
    let got = run.value("get_devpath", json!([]));
    run.check("get_devpath()", got.is_string(), &got);
    let got = run.value("get_features", json!([]));
    run.check("get_features()", text(&got).contains("shell_v2"), &got);
    let got = run.get("info").unwrap_or(Value::Null);
    run.check_eq("info", &got["state"], &json!("device"));
    for (key, want) in [
        ("name", "sim_x86_64"),
        ("model", "droid_sim"),
        ("device", "sim"),
    ] {
        let got = run.get(&format!("prop.{key}")).unwrap_or(Value::Null);
        run.check_eq(&format!("prop.{key}"), &got, &json!(want));
    }
    let got = run.value("getprop", json!(["ro.build.version.sdk"]));
    run.check_eq("getprop(ro.build.version.sdk)", &got, &json!("33"));
    let got = run.value("adb_output", json!(["shell", "getprop", "ro.serialno"]));
    run.check_eq(
        "adb_output(shell getprop)",
        &json!(text(&got).trim()),
        &json!(serial),
    );

    // The shell, in every form the client offers.
    let got = run.value("shell", json!([["echo", "a b", "&"]]));
    run.check_eq("shell([echo, 'a b', '&'])", &got, &json!("a b &"));
    let got = run.call_kw("shell", json!({"cmdargs": "echo hi", "encoding": null}));
    run.check_eq(
        "shell(encoding=None)",
        &got.unwrap_or(Value::Null)["head"],
        &json!("68690a"),
    );
    let got = run.call_kw("shell", json!({"cmdargs": "echo hi", "stream": true}));
    run.check("shell(stream=True)", got.is_ok(), format!("{got:?}"));
    let got = run.call_kw("shell2", json!({"cmdargs": "echo out; exit 3", "v2": true}));
    let got = got.unwrap_or(Value::Null);
    run.check_eq("shell2(v2) returncode", &got["returncode"], &json!(3));
    run.check_eq("shell2(v2) stdout", &got["stdout"], &json!("out\n"));
    let got = run.value("shell2", json!(["echo out; false"]));
    run.check_eq("shell2(v1) returncode", &got["returncode"], &json!(1));
    let got = run.call("open_shell", json!(["echo x"]));
    run.check("open_shell()", got.is_ok(), format!("{got:?}"));
    let got = run.call("open_transport", json!([]));
    run.check("open_transport()", got.is_ok(), format!("{got:?}"));

    // The display: size, rotation, power.
    let got = run.value("window_size", json!([]));
    run.check_eq("window_size()", &got, &json!([width, height]));
    let got = run.call_kw("window_size", json!({"landscape": true}));
    run.check_eq(
        "window_size(landscape=True)",
        &got.unwrap_or(Value::Null),
        &json!([height, width]),
    );
    let got = run.value("rotation", json!([]));
    run.check_eq("rotation()", &got, &json!(0));
    let got = run.value("is_screen_on", json!([]));
    run.check_eq("is_screen_on()", &got, &json!(true));
    run.value("switch_screen", json!([false]));
    let got = run.value("is_screen_on", json!([]));
    run.check_eq(
        "is_screen_on() after switch_screen(False)",
        &got,
        &json!(false),
    );
    run.value("switch_screen", json!([true]));
    let got = run.value("is_screen_on", json!([]));
    run.check_eq(
        "is_screen_on() after switch_screen(True)",
        &got,
        &json!(true),
    );
    let got = run.value("screenshot", json!([]));
    run.check_eq(
        "screenshot()",
        &got,
        &json!({"image": ["RGB", width, height]}),
    );
    let got = run.value("screenshot", json!([0]));
    run.check_eq(
        "screenshot(display_id=0)",
        &got,
        &json!({"image": ["RGB", width, height]}),
    );
    run.check_raises("framebuffer", json!([]));

    // Apps: the launcher first, then the model's app.
    let got = run.value("app_current", json!([]));
    run.check_eq("app_current() at boot", &got["package"], &json!(LAUNCHER));
    run.value("app_start", json!([package]));
    let shown = run.shown();
    run.check_eq(
        "truth after app_start",
        &json!(shown.0),
        &json!(run.model.screen(run.model.start()).id),
    );
    let got = run.value("app_current", json!([]));
    let pid = run.pidof(&package);
    run.check_eq("app_current().package", &got["package"], &json!(package));
    let activity = full_class(&package, text(&got["activity"]));
    let start_activity = run.start_activity();
    run.check_eq(
        "app_current().activity",
        &json!(activity),
        &json!(start_activity),
    );
    run.check(
        "app_current().pid",
        pid.is_some() && got["pid"].as_u64() == pid,
        format!("{} vs pidof {pid:?}", got["pid"]),
    );

    // Taps to a text field; typed text reaches it and the truth log.
    let (path, field) = path_to_a_field(&run.model);
    for ((x, y), screen) in path {
        run.value("click", json!([x, y]));
        let shown = run.shown();
        run.check_eq(
            &format!("truth after click({x}, {y})"),
            &json!(shown.0),
            &json!(screen),
        );
        run.check_eq("truth input after click", &run.last_input(), &{
            let mut want = run.last_input();
            want["input"] = json!("tap");
            want["x"] = json!(x);
            want["y"] = json!(y);
            want
        });
        let got = run.value("app_current", json!([]));
        let activity = full_class(&package, text(&got["activity"]));
        let model_activity = run.model_activity();
        run.check_eq(
            "app_current() after click",
            &json!(activity),
            &json!(model_activity),
        );
    }
    run.call_kw(
        "click",
        json!({"x": field.0, "y": field.1, "display_id": 0}),
    )
    .unwrap_or_default();
    run.check_eq(
        "click(display_id=0)",
        &run.last_input()["input"],
        &json!("tap"),
    );
    let typed = "droid@example.com";
    run.value("send_keys", json!([typed]));
    run.check_eq(
        "truth after send_keys",
        &run.last_input()["text"],
        &json!(typed),
    );
    let xml = run.value("dump_hierarchy", json!([]));
    run.check(
        "dump_hierarchy() shows the typed text",
        text(&xml).starts_with("<?xml") && text(&xml).contains(&format!("text=\"{typed}\"")),
        text(&xml).chars().take(200).collect::<String>(),
    );

    // Keys and gestures, as the truth log received them.
    run.value("keyevent", json!(["KEYCODE_DEL"]));
    run.check_eq(
        "keyevent()",
        &run.last_input()["key"],
        &json!("KEYCODE_DEL"),
    );
    for (method, key) in [
        ("volume_up", "VOLUME_UP"),
        ("volume_down", "VOLUME_DOWN"),
        ("volume_mute", "VOLUME_MUTE"),
    ] {
        run.value(method, json!([]));
        run.check_eq(
            &format!("{method}()"),
            &run.last_input()["key"],
            &json!(key),
        );
    }
    run.value("swipe", json!([500, 1800, 500, 600, 0.2]));
    let want = json!({"x1": 500, "y1": 1800, "x2": 500, "y2": 600, "duration_ms": 200});
    let got = run.last_input();
    run.check(
        "swipe()",
        ["x1", "y1", "x2", "y2", "duration_ms"]
            .iter()
            .all(|k| got[k] == want[k]),
        &got,
    );
    run.value("drag", json!([100, 1000, 900, 1000, 0.5]));
    let got = run.last_input();
    run.check(
        "drag()",
        got["x1"] == json!(100) && got["duration_ms"] == json!(500),
        &got,
    );

    // Settings the client reads and writes.
    let got = run.get("brightness_value").unwrap_or(Value::Null);
    run.check(
        "brightness_value",
        got.as_u64().is_some_and(|v| v <= 255),
        &got,
    );
    run.set("brightness_value", json!(128)).unwrap_or_default();
    let got = run.get("brightness_value").unwrap_or(Value::Null);
    run.check_eq("brightness_value after set", &got, &json!(128));
    let got = run.get("brightness_mode").unwrap_or(Value::Null);
    run.check_eq("brightness_mode", &got, &json!(0));
    run.set("brightness_mode", json!(1)).unwrap_or_default();
    let got = run.shell("settings get system screen_brightness_mode");
    run.check_eq("brightness_mode after set", &json!(got), &json!("1"));
    run.value("switch_airplane", json!([true]));
    let got = run.shell("settings get global airplane_mode_on");
    run.check_eq("switch_airplane(True)", &json!(got), &json!("1"));
    run.value("switch_airplane", json!([false]));
    let got = run.shell("settings get global airplane_mode_on");
    run.check_eq("switch_airplane(False)", &json!(got), &json!("0"));
    let got = run.value("wlan_ip", json!([]));
    run.check(
        "wlan_ip()",
        text(&got).parse::<std::net::Ipv4Addr>().is_ok(),
        &got,
    );
    run.value("switch_wifi", json!([false]));
    let got = run.call("wlan_ip", json!([]));
    run.check(
        "wlan_ip() with wifi off raises",
        got.is_err(),
        format!("{got:?}"),
    );
    run.value("switch_wifi", json!([true]));
    let got = run.shell("settings get global wifi_on");
    run.check_eq("switch_wifi(True)", &json!(got), &json!("1"));
    let got = run.value("battery", json!([]));
    run.check(
        "battery()",
        got["level"].as_u64().is_some_and(|l| l <= 100) && got["ac_powered"].is_boolean(),
        &got,
    );

    // Packages.
    let got = run.value("list_packages", json!([]));
    let listed: Vec<String> = got
        .as_array()
        .map(|a| a.iter().map(|p| text(p).to_string()).collect())
        .unwrap_or_default();
    let mut wanted = vec![package.clone(), LAUNCHER.to_string()];
    wanted.extend(run.model.transitions().iter().filter_map(|t| match &t.to {
        Destination::External(p) => Some(p.clone()),
        _ => None,
    }));
    for want in &wanted {
        run.check(
            "list_packages()",
            listed.contains(want),
            format!("{want} missing from {listed:?}"),
        );
    }
    let got = run.value("list_packages", json!([["-3"]]));
    run.check_eq("list_packages(['-3'])", &got, &json!([package]));
    let got = run.value("list_packages", json!([["-s"]]));
    let system = got.as_array().cloned().unwrap_or_default();
    run.check(
        "list_packages(['-s'])",
        system.contains(&json!("android")) && !system.contains(&json!(package)),
        &got,
    );
    let got = run.value("app_info", json!([package]));
    run.check_eq(
        "app_info().version_name",
        &got["version_name"],
        &json!(run.model.version_name()),
    );
    run.check(
        "app_info().path",
        text(&got["path"]).ends_with("/base.apk"),
        &got["path"],
    );
    run.check(
        "app_info().first_install_time",
        got["first_install_time"].is_string(),
        &got,
    );
    let got = run.value("package_info", json!([package]));
    run.check_eq("package_info()", &got["package_name"], &json!(package));
    let got = run.value("app_info", json!(["com.example.absent"]));
    run.check_eq("app_info(absent)", &got, &Value::Null);
    // A real APK in and out, both ways the client installs; the phone's own apps stay.
    let apk = extra_apk(&run);
    run.call_kw(
        "install",
        json!({"path_or_url": apk.to_str(), "nolaunch": true, "silent": true}),
    )
    .unwrap_or_else(|raised| {
        run.problems.push(format!("install() raised {raised:?}"));
        Value::Null
    });
    let listed = run.shell("pm list packages -3");
    run.check("install()", listed.contains(EXTRA), &listed);
    let got = run.value("uninstall", json!([EXTRA]));
    run.check_eq("uninstall()", &got, &json!("Success"));
    let listed = run.shell("pm list packages");
    run.check("uninstall() removes it", !listed.contains(EXTRA), &listed);
    run.value(
        "sync.push",
        json!([apk.to_str(), "/data/local/tmp/extra.apk"]),
    );
    run.call_kw(
        "install_remote",
        json!({"remote_path": "/data/local/tmp/extra.apk", "clean": true}),
    )
    .unwrap_or_else(|raised| {
        run.problems
            .push(format!("install_remote() raised {raised:?}"));
        Value::Null
    });
    let version = run.shell(&format!("dumpsys package {EXTRA}"));
    run.check(
        "install_remote()",
        version.contains("versionName=3.1"),
        &version,
    );
    let got = run.value("sync.exists", json!(["/data/local/tmp/extra.apk"]));
    run.check_eq("install_remote(clean=True)", &got, &json!(false));
    run.check_raises("install_remote", json!(["/data/local/tmp/absent.apk"]));
    let got = run.value("uninstall", json!(["com.android.settings"]));
    run.check_eq(
        "uninstall(system app)",
        &got,
        &json!("Failure [DELETE_FAILED_INTERNAL_ERROR]"),
    );

    // Browser, stop, clear.
    run.value("open_browser", json!(["example.com"]));
    let got = run.value("app_current", json!([]));
    run.check_eq(
        "app_current() after open_browser",
        &got["package"],
        &json!(BROWSER),
    );
    run.check_eq(
        "truth after open_browser",
        &json!(run.shown().1),
        &json!(BROWSER),
    );
    run.value("app_stop", json!([BROWSER]));
    run.value("app_start", json!([package]));
    run.value("app_stop", json!([package]));
    run.check_eq(
        "truth after app_stop",
        &json!(run.shown().1),
        &json!(LAUNCHER),
    );
    let pid = run.pidof(&package);
    run.check(
        "no process after app_stop",
        pid.is_none(),
        format!("{pid:?}"),
    );
    run.value("app_start", json!([package, start_activity]));
    let got = run.value("app_current", json!([]));
    run.check_eq(
        "app_start(pkg, activity)",
        &json!(full_class(&package, text(&got["activity"]))),
        &json!(start_activity),
    );
    run.value("app_clear", json!([package]));
    run.check_eq(
        "truth after app_clear",
        &json!(run.shown().1),
        &json!(LAUNCHER),
    );

    // Files.
    let local = temp_file(&run, "pushed.txt");
    std::fs::write(&local, "pushed\n").expect("write");
    run.value("push", json!([local.to_str(), "/sdcard/pushed.txt"]));
    run.value(
        "sync.push",
        json!([local.to_str(), "/data/local/tmp/p.txt"]),
    );
    let got = run.value("sync.read_text", json!(["/data/local/tmp/p.txt"]));
    run.check_eq("sync.read_text()", &got, &json!("pushed\n"));
    let got = run.value("sync.stat", json!(["/sdcard/pushed.txt"]));
    run.check_eq("sync.stat().size", &got["size"], &json!(7));
    let pulled = temp_file(&run, "pulled.txt");
    run.value("sync.pull", json!(["/sdcard/pushed.txt", pulled.to_str()]));
    run.check(
        "sync.pull()",
        std::fs::read_to_string(&pulled).ok().as_deref() == Some("pushed\n"),
        pulled.display(),
    );
    run.value("remove", json!(["/sdcard/pushed.txt"]));
    let got = run.value("sync.exists", json!(["/sdcard/pushed.txt"]));
    run.check_eq("remove()", &got, &json!(false));
    run.value(
        "shell",
        json!(["mkdir -p /sdcard/tree/sub && touch /sdcard/tree/sub/f"]),
    );
    run.value("rmtree", json!(["/sdcard/tree"]));
    let got = run.value("sync.exists", json!(["/sdcard/tree"]));
    run.check_eq("rmtree()", &got, &json!(false));

    // The log streams into the client's file, filtered by the client: what was there, then
    // what is logged next. The client's thread looks at its stop flag after each line, so the
    // test asks it to stop, then logs a line (a force-stop) and waits for the thread to end.
    let log = temp_file(&run, "logcat.txt");
    run.value("app_start", json!([package]));
    run.call_kw(
        "logcat",
        json!({"file": log.to_str(), "re_filter": package.as_str()}),
    )
    .unwrap_or_default();
    let copied = wait_for_text(&log, "Displayed");
    run.check("logcat() copies what was logged", copied, log.display());
    let stopped = run.request(json!({"stop": true}));
    run.check("logcat() stop", stopped.is_ok(), format!("{stopped:?}"));
    run.value("app_stop", json!([package]));
    let settled = run.request(json!({"settle": true}));
    run.check("logcat() ends", settled.is_ok(), format!("{settled:?}"));
    let lines = std::fs::read_to_string(&log).unwrap_or_default();
    run.check(
        "logcat(re_filter=package)",
        lines.contains("START u0")
            && lines.contains("Force stopping")
            && lines.lines().all(|l| l.contains(&package)),
        &lines,
    );
    // After `logcat --clear`, only what is logged next.
    run.call_kw("logcat", json!({"file": log.to_str(), "clear": true}))
        .unwrap_or_default();
    run.value("app_start", json!([package]));
    let copied = wait_for_text(&log, "Displayed");
    run.check("logcat(clear=True) copies", copied, log.display());
    let stopped = run.request(json!({"stop": true}));
    run.check(
        "logcat(clear=True) stop",
        stopped.is_ok(),
        format!("{stopped:?}"),
    );
    run.value("app_stop", json!([package]));
    let settled = run.request(json!({"settle": true}));
    run.check(
        "logcat(clear=True) ends",
        settled.is_ok(),
        format!("{settled:?}"),
    );
    let lines = std::fs::read_to_string(&log).unwrap_or_default();
    run.check(
        "logcat(clear=True)",
        lines.matches("START u0").count() == 1 && lines.matches("Force stopping").count() == 1,
        &lines,
    );

    // Screen recording needs a background job in a pushed script: not simulated.
    let got = run.value("is_recording", json!([]));
    run.check_eq("is_recording()", &got, &json!(false));

    // Forwards: listed as the server lists them; nothing on the phone listens behind them.
    let port = run.value("forward_port", json!([7912]));
    let local = format!("tcp:{port}");
    let other = format!("tcp:{}", free_port());
    run.value("forward", json!([other, "localabstract:devicekit"]));
    let got = run.value("forward_list", json!([]));
    run.check_eq(
        "forward_list()",
        &got,
        &json!([
            {"serial": serial, "local": local, "remote": "tcp:7912"},
            {"serial": serial, "local": other, "remote": "localabstract:devicekit"}
        ]),
    );
    let again = run.value("forward_port", json!([7912]));
    run.check_eq("forward_port() again", &again, &port);
    run.value("forward_remove", json!([local]));
    run.check_raises("forward_remove", json!([local]));
    run.value("forward_remove_all", json!([]));
    let got = run.value("forward_list", json!([]));
    run.check_eq("forward_remove_all()", &got, &json!([]));

    // Documented as not simulated: they fail rather than pretend.
    for (method, args) in [
        ("reverse", json!(["tcp:7912", "tcp:7912"])),
        ("reverse_list", json!([])),
        ("reverse_remove", json!(["tcp:7912"])),
        ("reverse_remove_all", json!([])),
        ("create_connection", json!(["tcp", 7912])),
        ("root", json!([])),
        ("tcpip", json!([5555])),
    ] {
        run.check_raises(method, args);
    }
    run.finish();
}

#[test]
fn ppadb_answers_as_on_a_device() {
    let Some(mut run) = Run::start("ppadb", "ppadb") else {
        return;
    };
    let (package, (width, height), serial) = run.facts();

    let got = run.value("get_serial_no", json!([]));
    run.check_eq("get_serial_no()", &got, &json!(serial));
    let got = run.value("get_state", json!([]));
    run.check_eq("get_state()", &got, &json!("device"));
    let got = run.value("get_device_path", json!([]));
    run.check("get_device_path()", got.is_string(), &got);
    let got = run.value("get_properties", json!([]));
    run.check_eq(
        "get_properties()[ro.serialno]",
        &got["ro.serialno"],
        &json!(serial),
    );
    let got = run.value("wait_boot_complete", json!([5, 0]));
    run.check_eq("wait_boot_complete()", &got, &json!(true));
    let got = run.value("wm_size", json!([]));
    run.check_eq("wm_size()", &got, &json!([width, height]));
    let got = run.value("wm_density", json!([]));
    run.check_eq("wm_density()", &got, &json!(2));
    let got = run.value("screencap", json!([]));
    run.check_eq("screencap()", &got["image"], &json!(["PNG", width, height]));
    let got = run.value("shell", json!(["echo hi"]));
    run.check_eq("shell()", &got, &json!("hi\n"));
    let got = run.value("list_features", json!([]));
    run.check(
        "list_features()",
        got["android.hardware.touchscreen"] == json!(true),
        &got,
    );
    let got = run.value("get_battery_level", json!([]));
    run.check(
        "get_battery_level()",
        got.as_u64().is_some_and(|l| l <= 100),
        &got,
    );

    // Packages.
    let got = run.value("list_packages", json!([]));
    run.check(
        "list_packages()",
        got.as_array().is_some_and(|a| a.contains(&json!(package))),
        &got,
    );
    let got = run.value("is_installed", json!([package]));
    run.check_eq("is_installed(app)", &got, &json!(true));
    let got = run.value("is_installed", json!(["com.example.absent"]));
    run.check_eq("is_installed(absent)", &got, &json!(false));
    let got = run.value("get_package_version_name", json!([package]));
    run.check_eq(
        "get_package_version_name()",
        &got,
        &json!(run.model.version_name()),
    );
    let uid = run.value("get_uid", json!([package]));
    let dumped = run.shell(&format!("dumpsys package {package}"));
    run.check(
        "get_uid()",
        dumped.contains(&format!("userId={}", text(&uid))) && !text(&uid).is_empty(),
        &uid,
    );
    // A real APK in and out; the phone's own apps stay.
    let apk = extra_apk(&run);
    let got = run.value("install", json!([apk.to_str()]));
    run.check_eq("install()", &got, &json!(true));
    let got = run.value("is_installed", json!([EXTRA]));
    run.check_eq("is_installed(installed APK)", &got, &json!(true));
    let got = run.value("uninstall", json!([EXTRA]));
    run.check_eq("uninstall()", &got, &json!(true));
    let got = run.value("is_installed", json!([EXTRA]));
    run.check_eq("is_installed(uninstalled)", &got, &json!(false));
    let got = run.value("uninstall", json!(["com.android.settings"]));
    run.check_eq("uninstall(system app)", &got, &json!(false));

    // Forwards: listed as the server lists them; nothing on the phone listens behind them.
    let local = format!("tcp:{}", free_port());
    run.value("forward", json!([local, "tcp:7912"]));
    let got = run.value("list_forward", json!([]));
    run.check_eq("list_forward()", &got, &json!({local.clone(): "tcp:7912"}));
    run.value("killforward", json!([local]));
    let got = run.value("list_forward", json!([]));
    run.check_eq("killforward()", &got, &json!({}));
    run.value("forward", json!([local, "localabstract:devicekit"]));
    run.value("killforward_all", json!([]));
    let got = run.value("list_forward", json!([]));
    run.check_eq("killforward_all()", &got, &json!({}));

    // The top activity: the launcher at boot, then the app over it.
    let got = run.value("get_top_activity", json!([]));
    run.check_eq(
        "get_top_activity() at boot",
        &got["package"],
        &json!(LAUNCHER),
    );
    run.value(
        "shell",
        json!([format!(
            "monkey -p {package} -c android.intent.category.LAUNCHER 1"
        )]),
    );
    let pid = run.pidof(&package);
    let got = run.value("get_top_activities", json!([]));
    let top = got
        .as_array()
        .and_then(|a| a.last())
        .cloned()
        .unwrap_or_default();
    run.check_eq(
        "get_top_activities()[-1].package",
        &top["package"],
        &json!(package),
    );
    let start_activity = run.start_activity();
    run.check_eq(
        "get_top_activities()[-1].activity",
        &json!(full_class(&package, text(&top["activity"]))),
        &json!(start_activity),
    );
    run.check(
        "get_top_activities()[-1].pid",
        pid.is_some() && top["pid"].as_u64() == pid,
        &top,
    );
    // As on a real Android 8+ device, the first ACTIVITY line is the home task's.
    let got = run.value("get_top_activity", json!([]));
    run.check_eq(
        "get_top_activity() with the app in front",
        &got["package"],
        &json!(LAUNCHER),
    );
    let got = run.value("get_pid", json!([package]));
    run.check_eq("get_pid()", &got, &json!(pid.map(|p| p.to_string())));

    // Processes and CPU.
    let pid = pid.unwrap_or_default();
    let got = run.value("get_meminfo", json!([package]));
    run.check(
        "get_meminfo()",
        got["pss"].as_u64().is_some_and(|p| p > 0),
        &got,
    );
    let got = run.value("get_tids", json!([pid]));
    run.check(
        "get_tids()",
        got.as_array()
            .is_some_and(|t| t.contains(&json!(pid.to_string()))),
        &got,
    );
    let got = run.value("get_pid_cpu", json!([pid]));
    run.check(
        "get_pid_cpu()",
        package.ends_with(text(&got["name"]).trim_matches(['(', ')'])) && got["utime"].is_u64(),
        &got,
    );
    let got = run.value("get_all_thread_cpu", json!([pid]));
    run.check(
        "get_all_thread_cpu()",
        got.get(pid.to_string()).is_some(),
        &got,
    );
    let got = run.value("cpu_count", json!([]));
    run.check("cpu_count()", got.as_u64().is_some_and(|n| n >= 1), &got);
    let got = run.value("cpu_times", json!([]));
    run.check(
        "cpu_times()",
        got["idle"].as_u64().is_some_and(|n| n > 0),
        &got,
    );
    let got = run.value("get_total_cpu", json!([]));
    run.check("get_total_cpu()", got["user"].is_u64(), &got);
    let got = run.value("cpu_percent", json!([0.2]));
    run.check(
        "cpu_percent()",
        got.as_f64().is_some_and(|p| (0.0..=100.0).contains(&p)),
        &got,
    );

    // Input, as the truth log received it.
    let (path, _) = path_to_a_field(&run.model);
    if let Some(((x, y), screen)) = path.first().cloned() {
        run.value("input_tap", json!([x, y]));
        run.check_eq(
            "truth after input_tap",
            &json!(run.shown().0),
            &json!(screen),
        );
    }
    run.value("input_swipe", json!([500, 1800, 500, 600, 300]));
    let got = run.last_input();
    run.check(
        "input_swipe()",
        got["input"] == json!("swipe") && got["duration_ms"] == json!(300),
        &got,
    );
    run.value("input_text", json!(["hello"]));
    run.check_eq("input_text()", &run.last_input()["text"], &json!("hello"));
    run.value("input_keyevent", json!(["KEYCODE_BACK", true]));
    run.check_eq(
        "input_keyevent(longpress)",
        &run.last_input()["key"],
        &json!("KEYCODE_BACK"),
    );
    run.value("input_keyevent", json!([4]));
    run.check_eq("input_keyevent()", &run.last_input()["key"], &json!("4"));
    run.value("input_press", json!([]));
    run.check_eq(
        "input_press()",
        &run.last_input()["key"],
        &json!("KEYCODE_DPAD_CENTER"),
    );
    let got = run.value("clear", json!([package]));
    run.check_eq("clear()", &got, &json!(true));
    let pid = run.pidof(&package);
    run.check(
        "no process after clear()",
        pid.is_none(),
        format!("{pid:?}"),
    );

    // Files.
    let local = temp_file(&run, "pushed.txt");
    std::fs::write(&local, "pushed\n").expect("write");
    run.value("push", json!([local.to_str(), "/sdcard/pushed.txt"]));
    let pulled = temp_file(&run, "pulled.txt");
    run.value("pull", json!(["/sdcard/pushed.txt", pulled.to_str()]));
    run.check(
        "pull()",
        std::fs::read_to_string(&pulled).ok().as_deref() == Some("pushed\n"),
        pulled.display(),
    );

    // Battery history is not simulated: no sections, rather than invented ones.
    let got = run.value("get_batterystats", json!([]));
    run.check_eq("get_batterystats()", &got, &json!({}));

    // Documented as not working, each for its reason.
    for (method, args) in [
        ("reverse", json!(["tcp:7912", "tcp:7912"])),
        ("list_reverses", json!([])),
        ("root", json!([])),
        ("framebuffer", json!([])),
        ("logcat", json!([])),
        ("input_roll", json!([1, 1])),
        ("get_traffic", json!([package])),
    ] {
        run.check_raises(method, args);
    }
    run.finish();
}

/// What the clients read, straight from the device shell (no Python needed): the same facts the
/// tests above check through the clients.
#[test]
fn the_shell_answers_what_the_clients_read() {
    use crate::sim_protocol::shell;
    let sim = droid::sim::Sim::start(droid::sim::SimConfig::new(APP)).expect("simulator starts");
    let model = AppModel::load(APP).expect("model loads");
    let package = model.package();
    let (width, height) = model.screen_size();
    let out = |command: &str| String::from_utf8_lossy(&shell(&sim, command).stdout).into_owned();

    let png = shell(&sim, "/system/bin/screencap -p");
    assert_eq!(png.status, Some(0), "{}", png.stderr);
    assert!(png.stdout.starts_with(b"\x89PNG"));
    assert_eq!(shell(&sim, "/system/bin/nothere").status, Some(127));
    assert_eq!(
        out("/system/bin/which screencap"),
        "/system/bin/screencap\n"
    );

    let display = out("dumpsys display");
    assert!(
        display.contains("orientation=0, ")
            && display.contains(&format!("deviceWidth={width}, deviceHeight={height}")),
        "{display}"
    );

    out(&format!(
        "monkey -p {package} -c android.intent.category.LAUNCHER 1"
    ));
    let pid = out(&format!("pidof {package}"));
    let top = out("dumpsys activity top");
    let last = top
        .lines()
        .rfind(|l| l.trim_start().starts_with("ACTIVITY "))
        .expect("an ACTIVITY line");
    let start = model.screen(model.start()).activity.clone();
    let short = start
        .strip_prefix(package)
        .map(|c| format!("{package}/{c}"))
        .unwrap_or(start);
    assert!(last.contains(&format!("ACTIVITY {short} ")), "{top}");
    assert!(last.ends_with(&format!(" pid={}", pid.trim())), "{top}");

    assert!(out("dumpsys power").contains("mHoldingDisplaySuspendBlocker=true"));
    out("input keyevent SLEEP");
    assert!(out("dumpsys power").contains("mHoldingDisplaySuspendBlocker=false"));
    out("input keyevent KEYCODE_WAKEUP");
    assert!(out("dumpsys power").contains("mHoldingDisplaySuspendBlocker=true"));

    out("settings put system screen_brightness 128");
    assert_eq!(out("settings get system screen_brightness"), "128\n");
    assert_eq!(out("settings get global no_such_key"), "null\n");
    assert_eq!(out("pm list packages -3"), format!("package:{package}\n"));

    let log = out("logcat -d -s ActivityManager");
    assert!(
        log.contains(&format!("Start proc {}:{package}/", pid.trim())),
        "{log}"
    );
    assert!(!log.contains("ActivityTaskManager"), "{log}");
    assert_eq!(
        out("logcat -d -v brief -s ActivityManager *:S")
            .lines()
            .count(),
        log.lines().count()
    );
}
