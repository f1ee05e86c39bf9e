//! droid-report against a real crawl of builtin:shop (one run, built once for every test), read
//! by the real tools people use: pdftotext for the PDF, headless Chromium for the HTML, an XML
//! parser for JUnit. Tests that need pdftotext or Chromium skip without them, and fail instead
//! when `DROID_REQUIRE_ADB=1` (set by `.ci/run`, which installs them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use droid::crash::{parse_anrs, parse_crashes};
use droid::events::{Event, Note, RunEnded};
use droid::report::data::{show, Statistic};
use droid::report::{self, Format, Report};
use droid::store::Store;
use serde_json::Value;

use crate::common::{droid, fixtures};
use crate::crawled::{crawl_in_process, CrawledRun};

/// Steps of the shared crawl: enough for the heuristic to reach the crash and the ANR.
const STEPS: u64 = 60;

struct Shared {
    run: CrawledRun,
    /// Every format, rendered once by the binary.
    files: BTreeMap<&'static str, PathBuf>,
    _dir: tempfile::TempDir,
}

/// The crawl of builtin:shop (the app stops responding on its About screen) and its reports.
fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let run = crawl_in_process(dir.path(), "builtin:shop", STEPS, Some("about"));
        let mut files = BTreeMap::new();
        for format in Format::ALL {
            let path = dir.path().join(format!("report.{}", format.extension()));
            let out = report_cmd(&run.db)
                .args([&run.run_id, "--format", format.name(), "-o"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}: {}", format.name(), stderr(&out));
            files.insert(format.name(), path);
        }
        Shared {
            run,
            files,
            _dir: dir,
        }
    })
}

fn report_cmd(db: &Path) -> Command {
    let mut cmd = droid("droid-report");
    cmd.arg("--db").arg(db);
    cmd
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn read(format: &str) -> String {
    std::fs::read_to_string(&shared().files[format]).unwrap()
}

fn json() -> Value {
    serde_json::from_str(&read("json")).unwrap()
}

/// A tool CI installs: its path, or `None` (the test skips) when it is missing and
/// `DROID_REQUIRE_ADB` is not `1`.
fn tool(names: &[&str]) -> Option<PathBuf> {
    let found = names.iter().find_map(|name| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
    });
    if found.is_none() {
        if std::env::var("DROID_REQUIRE_ADB").as_deref() == Ok("1") {
            panic!("DROID_REQUIRE_ADB=1 but none of {names:?} is on PATH");
        }
        eprintln!("skipped: none of {names:?} is on PATH");
    }
    found
}

#[test]
fn the_crawl_found_the_crash_and_the_anr_and_json_groups_them() {
    let json = json();
    let crashes = json["crashes"].as_array().unwrap();
    let crash = crashes
        .iter()
        .find(|c| c["kind"] == "crash")
        .expect("the shop's Clear cache crash was reached");
    assert_eq!(crash["exception"], "java.lang.IllegalStateException");
    assert_eq!(crash["message"], "cache directory is locked");
    assert!(crash["trace"]
        .as_str()
        .unwrap()
        .contains("FATAL EXCEPTION: main"));
    assert_eq!(crash["signature"].as_str().unwrap().len(), 16);
    let first = &crash["occurrences"][0];
    let repro = first["repro_steps"].as_array().unwrap();
    assert!(!repro.is_empty(), "steps from the launch to the crash");
    let last = repro.last().unwrap()["action"].as_str().unwrap();
    // The row holding the "Clear cache" label was tapped.
    assert!(
        last.to_lowercase()
            .replace('_', " ")
            .contains("clear cache"),
        "{repro:?}"
    );
    let shot = first["screenshot"]
        .as_str()
        .expect("the screenshot at the crash");
    assert!(Path::new(shot).is_file());
    assert!(
        crashes.iter().any(|c| c["kind"] == "anr"),
        "the About screen's ANR"
    );
    // Every occurrence of one signature is in one group.
    let signatures: Vec<&str> = crashes
        .iter()
        .map(|c| c["signature"].as_str().unwrap())
        .collect();
    let mut unique = signatures.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), signatures.len());
    assert_eq!(
        json["run_stats"]["app_crash_count"].as_u64().unwrap() as usize,
        crashes
            .iter()
            .filter(|c| c["kind"] == "crash")
            .map(|c| c["occurrences"].as_array().unwrap().len())
            .sum::<usize>()
    );
}

#[test]
fn json_carries_every_run_stats_field_by_the_references_name() {
    let json = json();
    let stats = json["run_stats"].as_object().unwrap();
    for statistic in Statistic::ALL {
        assert!(stats.contains_key(statistic.name()), "{statistic}");
    }
    assert_eq!(stats.len(), Statistic::ALL.len(), "only statistics");
    assert_eq!(stats["total_steps"], STEPS);
    assert_eq!(stats["app_package"], "com.example.shop");
    assert_eq!(stats["device_id"], "emulator-5554");
    assert!(stats["actions_by_type"]["click"].as_u64().unwrap() > 0);
    assert!(stats["unique_screens_visited"].as_u64().unwrap() >= 10);
    assert_eq!(
        stats["unique_screens_visited"].as_u64().unwrap() as usize,
        json["screens"].as_array().unwrap().len()
    );
    assert_eq!(json["steps"].as_array().unwrap().len() as u64, STEPS);
    assert_eq!(json["run"]["status"], "COMPLETED");
    assert!(json["artifacts"]["session_dir"].is_string());
    assert!(json["coverage"]["discovery"].as_array().unwrap().len() as u64 == STEPS);
}

#[test]
fn text_fits_in_80_columns_and_names_the_crash() {
    let text = read("text");
    // Paths are whole so that they can be copied; everything else fits.
    let (body, files) = text.split_once("\nFiles\n").unwrap();
    for line in body.lines() {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
    for line in files.lines() {
        let path = line.split_whitespace().nth(1).unwrap();
        assert!(Path::new(path).exists(), "{line:?}");
    }
    assert!(text.contains("Crashes: 1 distinct"), "{text}");
    assert!(text.contains("java.lang.IllegalStateException: cache directory is locked"));
    assert!(text.contains(&shared().run.run_id));
}

#[test]
fn dot_is_a_graph_of_every_screen() {
    let dot = read("dot");
    let json = json();
    assert!(dot.starts_with("digraph droid {"));
    for screen in json["screens"].as_array().unwrap() {
        assert!(dot.contains(&format!("  s{} [label=", screen["id"])));
    }
    assert!(
        dot.contains("shape=octagon"),
        "crashes hang off their screen"
    );
}

#[test]
fn junit_has_the_schema_required_elements() {
    let xml = read("junit");
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    assert_eq!(suite.tag_name().name(), "testsuite");
    for attr in [
        "name",
        "tests",
        "failures",
        "errors",
        "time",
        "timestamp",
        "hostname",
        "id",
        "package",
    ] {
        assert!(suite.attribute(attr).is_some(), "testsuite@{attr}");
    }
    let children: Vec<&str> = suite
        .children()
        .filter(|n| n.is_element())
        .map(|n| n.tag_name().name())
        .collect();
    assert_eq!(children.first(), Some(&"properties"));
    assert_eq!(
        &children[children.len() - 2..],
        ["system-out", "system-err"]
    );
    let cases: Vec<_> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let groups = json()["crashes"].as_array().unwrap().len();
    assert_eq!(
        cases.len(),
        groups + 1,
        "the run, and one per distinct crash or ANR"
    );
    assert_eq!(
        suite.attribute("tests"),
        Some(cases.len().to_string().as_str())
    );
    for case in &cases {
        for attr in ["name", "classname", "time"] {
            assert!(case.attribute(attr).is_some(), "testcase@{attr}");
        }
    }
    let failures: Vec<_> = cases
        .iter()
        .filter_map(|c| c.children().find(|n| n.has_tag_name("failure")))
        .collect();
    assert_eq!(failures.len(), groups, "the run itself did not fail");
    for failure in &failures {
        assert!(failure.attribute("type").is_some() && failure.attribute("message").is_some());
    }
    assert!(failures.iter().any(|f| f
        .text()
        .unwrap_or_default()
        .contains("FATAL EXCEPTION: main")));
    assert_eq!(
        suite.attribute("failures"),
        Some(failures.len().to_string().as_str())
    );
}

/// `pdftotext -layout` of the PDF: every statistic the JSON has is on the PDF's line for it.
#[test]
fn the_pdf_is_valid_and_its_figures_are_the_jsons() {
    let Some(pdftotext) = tool(&["pdftotext"]) else {
        return;
    };
    let pdf = std::fs::read(&shared().files["pdf"]).unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
    let out = Command::new(pdftotext)
        .args(["-layout", "-enc", "UTF-8"])
        .arg(&shared().files["pdf"])
        .arg("-")
        .output()
        .unwrap();
    assert!(out.status.success(), "pdftotext: {}", stderr(&out));
    assert!(out.stderr.is_empty(), "pdftotext warns: {}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let json = json();
    // The statistics tables, in the JSON's order: each label's line after the previous one.
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut at = lines
        .iter()
        .position(|l| *l == "Statistics")
        .expect("a Statistics section");
    let mut checked = 0;
    for statistic in Statistic::ALL {
        let name = statistic.name();
        let value = &json["run_stats"][name];
        let expected: Vec<(String, String)> = match value {
            Value::Object(map) if !map.is_empty() => {
                map.iter().map(|(k, v)| (k.clone(), show(v))).collect()
            }
            v => vec![(name.to_string(), show(v))],
        };
        for (label, shown) in expected {
            let found = lines[at..]
                .iter()
                .position(|l| l.split_whitespace().next() == Some(label.as_str()))
                .unwrap_or_else(|| panic!("no line for {label} after line {at}"));
            at += found;
            let rest = lines[at]
                .split_whitespace()
                .skip(1)
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(rest, shown, "{label}: PDF line {:?}", lines[at]);
            at += 1;
            checked += 1;
        }
    }
    assert!(checked > 70, "{checked}");
    assert!(text.contains("java.lang.IllegalStateException: cache directory is locked"));
    assert!(text.contains("FATAL EXCEPTION: main"));
    assert!(text.contains("Screen graph"));
}

/// Resource references (`src=`, `href=`, `url(`) that leave the file.
fn external_references(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for marker in ["src=\"", "href=\"", "url("] {
        for (at, _) in html.match_indices(marker) {
            let rest = &html[at + marker.len()..];
            let target: String = rest.chars().take_while(|c| !"\")".contains(*c)).collect();
            if !(target.starts_with('#') || target.starts_with("data:")) {
                found.push(target);
            }
        }
    }
    found
}

#[test]
fn the_html_is_offline_and_chromium_renders_its_figures_and_graph() {
    let html = read("html");
    assert_eq!(external_references(&html), Vec::<String>::new());
    assert!(
        html.contains("data:image/png;base64,"),
        "screenshots inline"
    );
    let crashes = html.find("id=\"crashes\"").unwrap();
    assert!(
        crashes < html.find("id=\"statistics\"").unwrap(),
        "crashes first"
    );
    let Some(chromium) = tool(&["chromium", "chromium-headless-shell", "chromium-browser"]) else {
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", shared().files["html"].display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium: {}", stderr(&out));
    let dom = String::from_utf8_lossy(&out.stdout);
    // The serialised DOM is HTML, not XML: it is read by its markers.
    let json = json();
    let figure = |id: &str| -> String {
        let marker = format!("id=\"figure-{id}\">");
        let at = dom
            .find(&marker)
            .unwrap_or_else(|| panic!("no figure {id}"))
            + marker.len();
        dom[at..].split('<').next().unwrap().to_string()
    };
    assert_eq!(figure("steps"), show(&json["run_stats"]["total_steps"]));
    assert_eq!(
        figure("screens"),
        show(&json["run_stats"]["unique_screens_visited"])
    );
    assert_eq!(figure("crashes"), "1");
    assert!(dom.contains("<svg id=\"screen-graph\""));
    let screens = json["screens"].as_array().unwrap();
    for screen in screens {
        assert!(
            dom.contains(&format!(
                "<a href=\"#screen-{}\"><g class=\"node\"",
                screen["id"]
            )),
            "graph node of screen {}",
            screen["id"]
        );
    }
    assert_eq!(
        dom.matches("class=\"edge\"").count(),
        json["transitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["from"] != t["to"])
            .count()
    );
}

#[test]
fn fail_on_exits_1_when_the_run_has_what_it_names() {
    let run = &shared().run;
    let status = |what: &[&str]| {
        let mut cmd = report_cmd(&run.db);
        cmd.args([run.run_id.as_str(), "--format", "junit", "-o"])
            .arg(shared()._dir.path().join("fail-on.xml"));
        for w in what {
            cmd.args(["--fail-on", w]);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), stderr(&out))
    };
    let (code, err) = status(&["crash"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("1 crash (1 distinct) (--fail-on)"), "{err}");
    assert_eq!(status(&["anr"]).0, Some(1));
    assert_eq!(status(&["error"]).0, Some(0), "the run ended COMPLETED");
    assert_eq!(status(&[]).0, Some(0));
    let out = report_cmd(&run.db)
        .args(["--fail-on", "nothing"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The shared run's events up to `steps`, under another run id, ending as `ended` says (or
/// not at all), with `extra` notes.
fn variant(db: &Path, run_id: &str, steps: u64, ended: Option<(&str, &str)>, extra: Vec<Note>) {
    let shared = shared();
    let source = Store::open(&shared.run.db).unwrap();
    let mut exported = Vec::new();
    source.export(&shared.run.run_id, &mut exported).unwrap();
    let store = Store::open(db).unwrap();
    let mut ingest = store.ingest();
    for line in String::from_utf8(exported).unwrap().lines() {
        let line = line.replace(&shared.run.run_id, run_id);
        let Some(event) = Event::from_line(&line).unwrap() else {
            continue;
        };
        if matches!(event, Event::RunEnded(_)) || event.step().is_some_and(|s| s > steps) {
            continue;
        }
        ingest.push_event(event).unwrap();
    }
    for mut note in extra {
        note.run_id = Some(run_id.into());
        ingest.push_event(Event::Note(note)).unwrap();
    }
    if let Some((status, reason)) = ended {
        ingest
            .push_event(Event::RunEnded(RunEnded {
                run_id: run_id.into(),
                ts: Some(droid::events::now_ts()),
                status: status.into(),
                reason: Some(reason.into()),
                ..RunEnded::default()
            }))
            .unwrap();
    }
    ingest.finish().unwrap();
}

fn note(step: u64, kind: &str, message: &str, data: Value) -> Note {
    Note {
        step: Some(step),
        ts: Some(droid::events::now_ts()),
        kind: kind.into(),
        message: Some(message.into()),
        data: Some(data),
        ..Note::default()
    }
}

#[test]
fn running_paused_stopped_and_errored_runs_report_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crawler.db");
    variant(&db, "running", 12, None, vec![]);
    variant(
        &db,
        "paused",
        15,
        None,
        vec![note(
            15,
            "state",
            "RUNNING -> PAUSED_MANUAL",
            serde_json::json!({"state": "PAUSED_MANUAL", "previous": "RUNNING"}),
        )],
    );
    variant(
        &db,
        "stopped",
        20,
        Some(("INTERRUPTED", "stopped by the user")),
        vec![],
    );
    variant(
        &db,
        "errored",
        25,
        Some(("ERROR", "device_lost")),
        vec![note(
            25,
            "error",
            "device emulator-5554 disconnected",
            Value::Null,
        )],
    );
    let store = Store::open(&db).unwrap();
    // What a crawl leaves in its session folder, for a run still going.
    let written =
        report::write_files(&store, "running", dir.path(), &[Format::Html, Format::Json]).unwrap();
    assert_eq!(
        written,
        [
            dir.path().join("report.html"),
            dir.path().join("report.json")
        ]
    );
    let fonts = report::pdf::Fonts::system().ok();
    for (run, state, steps) in [
        ("running", "RUNNING", 12),
        ("paused", "PAUSED_MANUAL", 15),
        ("stopped", "INTERRUPTED", 20),
        ("errored", "ERROR", 25),
    ] {
        let report = Report::load(&store, run).unwrap();
        assert_eq!(report.run.state, state, "{run}");
        assert_eq!(report.steps.len(), steps, "{run}");
        assert_eq!(
            report.stat(Statistic::TotalSteps),
            steps,
            "{run}: run_stats counted afresh"
        );
        for format in Format::ALL {
            if format == Format::Pdf && fonts.is_none() {
                continue;
            }
            let mut out = Vec::new();
            report::render(&report, format, &mut out).unwrap();
            assert!(!out.is_empty(), "{run} {}", format.name());
        }
        let junit = report::junit::render(&report);
        let run_failed = junit.contains(
            "<failure message=\"device_lost; device emulator-5554 disconnected\" type=\"ERROR\">",
        );
        assert_eq!(run_failed, run == "errored", "{run}");
    }
    let out = report_cmd(&db)
        .args(["errored", "--fail-on", "error"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("an error: device_lost"),
        "{}",
        stderr(&out)
    );
    // `latest` is the newest run.
    let out = report_cmd(&db).args(["--format", "json"]).output().unwrap();
    let latest: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(latest["run"]["run_id"], "errored");
}

/// The crash and ANR blocks of real devices (the logcat fixtures) as notes: one bug seen on two
/// Android versions is one group of two.
#[test]
fn real_crash_and_anr_texts_group_by_signature() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crawler.db");
    let logcat = fixtures().join("device/logcat");
    let mut notes = Vec::new();
    let mut blocks = 0;
    for entry in std::fs::read_dir(&logcat).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for crash in parse_crashes(&text) {
            blocks += 1;
            notes.push(note(
                3,
                "crash",
                &crash.exception,
                serde_json::to_value(&crash).unwrap(),
            ));
        }
        for anr in parse_anrs(&text) {
            notes.push(note(
                4,
                "anr",
                &anr.reason,
                serde_json::to_value(&anr).unwrap(),
            ));
        }
    }
    assert_eq!(blocks, 5);
    variant(&db, "fixtures", 5, Some(("COMPLETED", "max_steps")), notes);
    let store = Store::open(&db).unwrap();
    let report = Report::load(&store, "fixtures").unwrap();
    let mut counts: Vec<(String, usize)> = report
        .crashes
        .iter()
        .map(|g| (g.title(), g.occurrences.len()))
        .collect();
    counts.sort();
    assert_eq!(
        counts,
        [
            ("ANR in co.touchlab.droidcon.anon: Input dispatching timed out".into(), 1),
            ("ANR in com.zxs.app: Input dispatching timed out".into(), 1),
            ("java.lang.IndexOutOfBoundsException: Index: 0, Size: 0".into(), 2),
            ("java.lang.NullPointerException".into(), 1),
            (
                "java.lang.NullPointerException: Attempt to invoke virtual method 'com.ichi2.libanki.Note com.ichi2.libanki.Card.note()' on a null object reference".into(),
                2
            ),
        ]
    );
    assert_eq!(report.stat(Statistic::AppCrashCount), 5);
    let junit = report::junit::render(&report);
    assert_eq!(junit.matches("<testcase ").count(), 6);
    assert!(junit.contains("com.ichi2.anki.multimediacard.fields.AudioField.getFormattedValue"));
    // Rebuilding the projection recreates the crashes from the notes.
    let before = Report::load(&store, "fixtures").unwrap().crashes.len();
    store.rebuild().unwrap();
    assert_eq!(
        Report::load(&store, "fixtures").unwrap().crashes.len(),
        before
    );
}

/// `DROID_REPORT_SAMPLES=DIR` copies the shared crawl's reports to DIR (`scripts/report-samples.sh`
/// makes the pictures in docs/ from them); without it, only checks that every format was written.
#[test]
fn sample_reports() {
    let files = &shared().files;
    assert_eq!(files.len(), Format::ALL.len());
    let Some(dir) = std::env::var_os("DROID_REPORT_SAMPLES") else {
        return;
    };
    std::fs::create_dir_all(&dir).unwrap();
    for path in files.values() {
        std::fs::copy(path, Path::new(&dir).join(path.file_name().unwrap())).unwrap();
    }
}

/// Text from apps in any script reaches the PDF with fonts embedded that draw it, and reads back.
#[test]
fn the_pdf_draws_chinese_korean_hindi_and_emoji() {
    let (Some(pdftotext), Some(pdffonts)) = (tool(&["pdftotext"]), tool(&["pdffonts"])) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crawler.db");
    let words = ["购物车已清空", "장바구니가 비었습니다", "नमस्ते", "🛒😀"];
    let anr = droid::crash::AnrData {
        package: "com.example.shop".into(),
        reason: words.join(" "),
        trace: words.join("\n"),
        signature: "0123456789abcdef".into(),
        ..droid::crash::AnrData::default()
    };
    variant(
        &db,
        "scripts",
        3,
        Some(("COMPLETED", "max_steps")),
        vec![note(2, "anr", "ANR", serde_json::to_value(anr).unwrap())],
    );
    let pdf = dir.path().join("scripts.pdf");
    let out = report_cmd(&db)
        .args(["scripts", "--format", "pdf", "-o"])
        .arg(&pdf)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = Command::new(pdftotext).arg(&pdf).arg("-").output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    for word in words {
        assert!(
            text.contains(word),
            "{word} is not in the PDF text:\n{text}"
        );
    }
    let fonts = Command::new(pdffonts).arg(&pdf).output().unwrap();
    let fonts = String::from_utf8(fonts.stdout).unwrap();
    let rows: Vec<&str> = fonts.lines().skip(2).collect();
    assert!(
        rows.len() >= 4,
        "text, CJK, Devanagari and emoji faces:\n{fonts}"
    );
    for row in rows {
        let columns: Vec<&str> = row.split_whitespace().collect();
        // name type encoding emb sub uni object ID
        assert_eq!(columns[columns.len() - 5], "yes", "embedded: {row}");
    }
}

#[test]
fn help_has_examples_and_a_missing_database_or_run_is_a_clear_error() {
    let out = droid("droid-report").arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("Examples:") && help.contains("--fail-on"),
        "{help}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = report_cmd(&dir.path().join("none.db")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("droid-report: error: no database at "),
        "{}",
        stderr(&out)
    );
    let out = report_cmd(&shared().run.db)
        .arg("no-such-run")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no run \"no-such-run\""),
        "{}",
        stderr(&out)
    );
    let empty = dir.path().join("empty.db");
    Store::open(&empty).unwrap();
    let out = report_cmd(&empty).output().unwrap();
    assert!(
        stderr(&out).contains("the database has no run yet"),
        "{}",
        stderr(&out)
    );
}

/// The screens held in more than one state that droid-report's JSON and text reports count for
/// a run, checked against the states the run's decisions named; returns those screens' keys.
fn states_reported_as_named(db: &Path, run_id: &str) -> BTreeMap<String, u64> {
    let store = Store::open(db).unwrap();
    let mut exported = Vec::new();
    store.export(run_id, &mut exported).unwrap();
    // Per screen (the observation's key), the states the decisions on it named.
    let mut named: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut screen = String::new();
    for line in String::from_utf8(exported).unwrap().lines() {
        match Event::from_line(line).unwrap() {
            Some(Event::Observation(o)) => {
                screen = droid::screen::Screen::of(&o).key().as_str().to_string();
            }
            Some(Event::Decision(d)) => {
                if let Some(state) = d.state {
                    named.entry(screen.clone()).or_default().insert(state.key);
                }
            }
            _ => {}
        }
    }
    let report = |format: &str| {
        let out = report_cmd(db)
            .args([run_id, "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    let states: BTreeMap<String, u64> = json["screens"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["states"].as_u64().unwrap() > 1)
        .map(|s| {
            (
                s["key"].as_str().unwrap().to_string(),
                s["states"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: BTreeMap<String, u64> = named
        .iter()
        .filter(|(_, states)| states.len() > 1)
        .map(|(key, states)| (key.clone(), states.len() as u64))
        .collect();
    assert_eq!(states, expected);
    let coverage = &json["coverage"];
    assert_eq!(coverage["screens_with_states"], states.len());
    assert_eq!(coverage["states_told_apart"], states.values().sum::<u64>());
    let text = report("text");
    assert_eq!(text.contains("\nStates "), !states.is_empty(), "{text}");
    states
}

#[test]
fn screens_held_in_states_are_counted_as_the_decisions_name_them() {
    let shared = shared();
    states_reported_as_named(&shared.run.db, &shared.run.run_id);
    // A notes app's new-note dialog is told apart by what its form holds within 100 steps.
    let Some(fixtures) = droid::fixtures::available("the notes app model") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let app = fixtures.join("apps/notes/model.json").display().to_string();
    let run = crawl_in_process(dir.path(), &app, 100, None);
    let states = states_reported_as_named(&run.db, &run.run_id);
    assert!(!states.is_empty());
}
