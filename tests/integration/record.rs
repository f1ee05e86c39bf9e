//! droid-record against real SQLite files, fed through real pipes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Output, Stdio};

use droid::events::{
    Action, ActionResult, ActionType, AiMeta, BoundingBox, Decision, Event, Note, Observation,
    Origin, RunEnded, RunStarted, ScreenHash,
};
use droid::store::Store;
use droid::ui::{Bounds, UiElement};
use rusqlite::types::Value as Sql;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::{droid, fixtures};

/// A crawl of the real Simple Notes app model (`fixtures/apps/notes`): each step observes the
/// current screen (its real uiautomator dump, parsed and pruned by `droid::ui`; a perceptual
/// hash that jitters by a bit or two between visits, as real screenshots do), decides one
/// action along a recorded transition, and reports its result. Screens without a way on go back.
struct NotesCrawl {
    screens: BTreeMap<String, (String, String)>,
    dumps: BTreeMap<String, Vec<UiElement>>,
    transitions: Vec<Value>,
    start: String,
}

impl NotesCrawl {
    fn load() -> NotesCrawl {
        let text = std::fs::read_to_string(fixtures().join("apps/notes/model.json")).unwrap();
        let model: Value = serde_json::from_str(&text).unwrap();
        let package = model["package"].as_str().unwrap().to_string();
        let dumps = model["screens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let path = fixtures()
                    .join("apps/notes")
                    .join(s["hierarchy"].as_str().unwrap());
                let mut elements =
                    droid::ui::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
                droid::ui::prune(&mut elements);
                (s["id"].as_str().unwrap().to_string(), elements)
            })
            .collect();
        let screens = model["screens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let id = s["id"].as_str().unwrap().to_string();
                let pkg = s["package"].as_str().unwrap_or(&package).to_string();
                let activity = s["activity"].as_str().unwrap_or_default().to_string();
                (id, (pkg, activity))
            })
            .collect();
        NotesCrawl {
            screens,
            dumps,
            transitions: model["transitions"].as_array().unwrap().clone(),
            start: model["start"].as_str().unwrap().to_string(),
        }
    }

    fn element(id: u32, target: &Value) -> UiElement {
        let b: Vec<i32> = target["bounds"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_i64().unwrap_or(0) as i32).collect())
            .unwrap_or_else(|| vec![0, 0, 100, 100]);
        let bounds = Bounds::from([b[0], b[1], b[2], b[3]]);
        let field = |k: &str| target[k].as_str().unwrap_or_default().to_string();
        let class = field("class");
        let editable = class.ends_with("EditText");
        let (cx, cy) = bounds.center();
        UiElement {
            element_id: id,
            bounds,
            text: field("text"),
            content_desc: field("content_desc"),
            class_name: class.clone(),
            resource_id: field("resource_id"),
            clickable: true,
            editable,
            enabled: true,
            visible: true,
            xpath: format!("/hierarchy/node[{id}]"),
            center_x: cx,
            center_y: cy,
            signature: format!(
                "{class}|{}|{}|{}",
                field("resource_id"),
                field("content_desc"),
                if editable {
                    String::new()
                } else {
                    field("text")
                }
            ),
            ref_id: Some(id + 1),
            ..UiElement::default()
        }
    }

    fn phash(screen: &str, visit: usize) -> String {
        let digest = Sha256::digest(screen.as_bytes());
        let base = u64::from_be_bytes(digest[..8].try_into().unwrap());
        let jitter = [0u64, 1, 1 << 9, (1 << 3) | (1 << 40)][visit % 4];
        format!("{:016x}", base ^ jitter)
    }

    /// The events of `steps` steps, as lines; `run` stamps every event with a run id.
    fn lines(&self, run: Option<&str>, steps: u64) -> Vec<String> {
        let mut out = Vec::new();
        let mut emit = |e: Event| out.push(e.to_line());
        if let Some(run) = run {
            emit(Event::RunStarted(RunStarted {
                run_id: run.into(),
                ts: Some("2026-01-01T10:00:00.000Z".into()),
                device: Some("emulator-5554".into()),
                package: Some("com.simplemobiletools.notes.pro".into()),
                decider: Some("gemini".into()),
                model: Some("gemini-2.5-flash".into()),
                ..RunStarted::default()
            }));
        }
        let mut stack = vec![self.start.clone()];
        let mut visits: BTreeMap<String, usize> = BTreeMap::new();
        for step in 1..=steps {
            let ts = |part: u64| {
                let secs = step * 4 + part;
                Some(format!(
                    "2026-01-01T10:{:02}:{:02}.000Z",
                    secs / 60 % 60,
                    secs % 60
                ))
            };
            let screen = stack.last().unwrap().clone();
            let (package, activity) = self.screens[&screen].clone();
            let visit = visits.entry(screen.clone()).or_default();
            let outgoing: Vec<&Value> = self
                .transitions
                .iter()
                .filter(|t| t["from"] == screen.as_str() && t["target"].is_object())
                .collect();
            let elements = self.dumps[&screen].clone();
            // The element each transition's target names in the dump (built from the target when
            // the dump has no such node).
            let targets: Vec<UiElement> = outgoing
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let wanted = Self::element(i as u32, &t["target"]);
                    elements
                        .iter()
                        .find(|e| {
                            e.bounds == wanted.bounds
                                && (wanted.resource_id.is_empty()
                                    || e.resource_id == wanted.resource_id)
                        })
                        .cloned()
                        .unwrap_or(wanted)
                })
                .collect();
            let phash = Self::phash(&screen, *visit);
            emit(Event::Observation(Box::new(Observation {
                run_id: run.map(str::to_string),
                step: run.map(|_| step),
                ts: ts(0),
                device: Some("emulator-5554".into()),
                screen_size: Some([1080, 2400]),
                package: Some(package),
                activity: Some(activity.clone()),
                screenshot_path: Some(format!("screenshots/step_{step:03}.png")),
                elements: elements.clone(),
                hash: Some(ScreenHash {
                    phash: Some(phash.clone()),
                    screen_key: Some(format!("{activity}|{phash}")),
                    ..ScreenHash::default()
                }),
                ..Observation::default()
            })));
            let choice = outgoing.get((step as usize + *visit) % outgoing.len().max(1));
            *visit += 1;
            let mut actions = Vec::new();
            let mut chosen = Vec::new();
            match choice {
                Some(t) => {
                    let index = outgoing.iter().position(|o| std::ptr::eq(*o, *t)).unwrap();
                    let element = targets[index].clone();
                    let verb = if t["action"] == "input" {
                        ActionType::Input
                    } else {
                        ActionType::Click
                    };
                    let mut action = Action::new(verb.clone());
                    action.action_desc = Some(format!("{verb} {}", element.resource_id));
                    action.reasoning = Some(format!("explore {}", t["to"]));
                    action.ref_id = element.ref_id;
                    action.target_bounding_box = Some(BoundingBox {
                        top_left: [element.bounds.x1.into(), element.bounds.y1.into()],
                        bottom_right: [element.bounds.x2.into(), element.bounds.y2.into()],
                    });
                    if verb == ActionType::Input {
                        action.input_text = Some("hello".into());
                    }
                    actions.push(action);
                    chosen.push(Some(element));
                    stack.push(t["to"].as_str().unwrap().to_string());
                    if stack.last().is_some_and(|s| !self.screens.contains_key(s)) {
                        stack.pop();
                    }
                }
                None => {
                    actions.push(Action::new(ActionType::Back));
                    chosen.push(None);
                    if stack.len() > 1 {
                        stack.pop();
                    }
                }
            }
            emit(Event::Decision(Decision {
                run_id: run.map(str::to_string),
                step: run.map(|_| step),
                ts: ts(1),
                decider: Some("gemini".into()),
                ai: Some(AiMeta {
                    provider: "gemini".into(),
                    model: Some("gemini-2.5-flash".into()),
                    latency_ms: 800 + step * 7,
                    tokens_in: Some(1200),
                    tokens_out: Some(90),
                    retries: u32::from(step % 10 == 0),
                    request: Some(
                        serde_json::json!({"image": format!("screenshots/step_{step:03}.png")}),
                    ),
                    response: Some("{\"actions\":[...]}".into()),
                    ..AiMeta::default()
                }),
                ..Decision::new(actions.clone())
            }));
            for (index, (action, element)) in actions.iter().zip(&chosen).enumerate() {
                emit(Event::Result(ActionResult {
                    run_id: run.map(str::to_string),
                    step: run.map(|_| step),
                    ts: ts(2),
                    index: index as u32,
                    action_type: action.action.as_str().into(),
                    target: element.as_ref().map(|e| e.resource_id.clone()),
                    target_signature: element.as_ref().map(|e| e.signature.clone()),
                    success: true,
                    duration_ms: 120 + step,
                    tap_point: element
                        .as_ref()
                        .map(|e| [e.center_x.into(), e.center_y.into()]),
                    origin: element.as_ref().map(|_| Origin::Xml),
                    ..ActionResult::default()
                }));
            }
            if step % 17 == 0 {
                emit(Event::Note(Note {
                    run_id: run.map(str::to_string),
                    step: run.map(|_| step),
                    ts: ts(3),
                    kind: "stuck".into(),
                    message: Some("same screen three times".into()),
                    data: Some(serde_json::json!({"recovered": true, "recovery_ms": 900})),
                    ..Note::default()
                }));
            }
        }
        if let Some(run) = run {
            emit(Event::RunEnded(RunEnded {
                run_id: run.into(),
                ts: Some("2026-01-01T11:00:00.000Z".into()),
                status: "COMPLETED".into(),
                steps: Some(steps),
                ..RunEnded::default()
            }));
        }
        out
    }
}

fn feed(db: &Path, lines: &[String], extra: &[&str]) -> Output {
    let mut child = droid("droid-record")
        .arg("--db")
        .arg(db)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = lines.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    // `--strict` stops reading early, so the rest of the input may meet a closed pipe.
    let _ = writer.join().unwrap();
    out
}

fn record(db: &Path, args: &[&str]) -> Output {
    droid("droid-record")
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

fn stdout_lines(out: &Output) -> Vec<String> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every row of every table but the bookkeeping ones (writer pids, migration times).
fn snapshot(db: &Path) -> BTreeMap<String, Vec<Vec<Sql>>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    tables.retain(|t| t != "run_writers" && t != "schema_version");
    tables
        .into_iter()
        .map(|table| {
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {table} ORDER BY 1"))
                .unwrap();
            let columns = stmt.column_count();
            let rows = stmt
                .query_map([], |r| (0..columns).map(|i| r.get::<_, Sql>(i)).collect())
                .unwrap()
                .collect::<Result<Vec<Vec<Sql>>, _>>()
                .unwrap();
            (table, rows)
        })
        .collect()
}

fn count(db: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

#[test]
fn feeding_an_export_twice_changes_nothing_and_rebuild_reproduces_it() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let lines = NotesCrawl::load().lines(Some("notes-1"), 60);
    let first = dir.path().join("first.db");
    let out = feed(&first, &lines, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout_lines(&out),
        lines,
        "every line passes through unchanged"
    );

    let export = record(&first, &["export", "notes-1"]);
    assert!(export.status.success());
    let exported = stdout_lines(&export);
    assert_eq!(exported, lines, "the export is the stream as recorded");

    let fresh = dir.path().join("fresh.db");
    assert!(feed(&fresh, &exported, &[]).status.success());
    let once = snapshot(&fresh);
    assert!(feed(&fresh, &exported, &[]).status.success());
    assert_eq!(snapshot(&fresh), once, "a second feed changes nothing");
    assert_eq!(
        snapshot(&first),
        once,
        "an export lands exactly as the original"
    );
    let rebuild = record(&fresh, &["rebuild"]);
    assert!(
        rebuild.status.success(),
        "{}",
        String::from_utf8_lossy(&rebuild.stderr)
    );
    assert_eq!(snapshot(&fresh), once, "rebuild reproduces every table");

    // The projection is not empty: screens were deduplicated, steps linked, the graph built.
    let screens = count(&fresh, "SELECT COUNT(*) FROM screens");
    let visits = count(&fresh, "SELECT COUNT(*) FROM graph_persistence_outcomes");
    assert_eq!(visits, 60);
    assert!(screens > 1 && screens < 60, "{screens} screens");
    assert_eq!(
        count(&fresh, "SELECT COUNT(*) FROM step_logs"),
        lines
            .iter()
            .filter(|l| l.contains("\"type\":\"result\""))
            .count() as i64
    );
    assert_eq!(
        count(
            &fresh,
            "SELECT COUNT(*) FROM step_logs WHERE to_screen_id IS NULL"
        ),
        1
    );
    assert!(
        count(
            &fresh,
            "SELECT COUNT(*) FROM edges WHERE evidence_counter > 1"
        ) > 0
    );
    assert_eq!(count(&fresh, "SELECT COUNT(*) FROM ai_interactions"), 60);
    assert_eq!(
        count(&fresh, "SELECT stuck_detection_count FROM run_stats"),
        3
    );
    assert_eq!(
        count(&fresh, "SELECT unique_screens_visited FROM run_stats"),
        count(&fresh, "SELECT unique_screens FROM runs")
    );
}

#[test]
fn a_bad_line_is_named_skipped_and_the_rest_recorded() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let mut lines = NotesCrawl::load().lines(Some("bad-1"), 8);
    let good = lines.clone();
    lines.insert(4, "this is not json".into());
    lines.insert(9, r#"{"type":"result","v":1,"run_id":"bad-1","step":3,"index":"zero","action_type":"click","success":true}"#.into());
    let db = dir.path().join("c.db");
    let out = feed(&db, &lines, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 5: not valid JSON"), "{stderr}");
    assert!(stderr.contains("line 10: result: invalid type"), "{stderr}");
    assert_eq!(stdout_lines(&out), good);
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM run_events"),
        good.len() as i64
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM graph_persistence_outcomes"),
        8
    );

    let strict_db = dir.path().join("strict.db");
    let out = feed(&strict_db, &lines, &["--strict"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 5: not valid JSON"));
    assert_eq!(stdout_lines(&out), good[..4].to_vec());
    assert_eq!(count(&strict_db, "SELECT COUNT(*) FROM run_events"), 4);
}

#[test]
fn kill_9_mid_ingest_leaves_whole_steps_and_cleanup_marks_the_run_error() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let lines = NotesCrawl::load().lines(Some("killed"), 400);
    let mut child = droid("droid-record")
        .arg("--db")
        .arg(&db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // Feed all but the tail of the stream, cutting inside a step: the observation and
    // decision of the next step are written, its result is not. The pipe stays open.
    let cut = lines
        .iter()
        .rposition(|l| l.contains("\"type\":\"decision\"") && l.contains("\"step\":300,"))
        .unwrap();
    let head = lines[..=cut].join("\n") + "\n";
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let feeder = std::thread::spawn(move || {
        // A write error means the child died early; the reads below report that.
        let _ = stdin
            .write_all(head.as_bytes())
            .and_then(|()| stdin.flush());
        // Hold the pipe open until the kill, so the child is mid-stream when it dies.
        let _ = done_rx.recv();
        drop(stdin);
    });
    // Wait until the writer has passed the decision on: it has read everything before it.
    let mut passed = String::new();
    let mut seen = 0;
    while seen <= cut {
        passed.clear();
        assert!(
            stdout.read_line(&mut passed).unwrap() > 0,
            "droid-record ended early"
        );
        seen += 1;
    }
    let pid = child.id();
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    child.wait().unwrap();
    done_tx.send(()).unwrap();
    feeder.join().unwrap();
    let mut rest = String::new();
    let _ = stdout.read_to_string(&mut rest);

    let conn = rusqlite::Connection::open(&db).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let steps: i64 = conn
        .query_row("SELECT COUNT(*) FROM graph_persistence_outcomes", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(steps, 299, "every step before the cut, none of the cut one");
    let half_steps: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM (SELECT step, SUM(type = 'observation') o, SUM(type = 'decision') d,
               SUM(type = 'result') r FROM run_events WHERE step IS NOT NULL GROUP BY step)
             WHERE o <> 1 OR d <> 1 OR r < 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(half_steps, 0);
    let logged: i64 = conn
        .query_row(
            "SELECT COUNT(DISTINCT step_number) FROM step_logs",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(logged, 299);
    drop(conn);

    let runs = record(&db, &["runs", "--json"]);
    assert!(String::from_utf8_lossy(&runs.stdout).contains("\"status\":\"RUNNING\""));
    // The writer is gone, but the run was recorded moments ago: not stale yet.
    assert!(stdout_lines(&record(&db, &["cleanup"])).is_empty());
    let cleanup = record(&db, &["cleanup", "--idle", "0"]);
    assert!(
        cleanup.status.success(),
        "{}",
        String::from_utf8_lossy(&cleanup.stderr)
    );
    assert_eq!(stdout_lines(&cleanup), vec!["killed".to_string()]);
    let store = Store::open(&db).unwrap();
    let run = &store.runs().unwrap()[0];
    assert_eq!(run.status, "ERROR");
    assert!(run.end.is_some(), "the cleanup time is the run's end");
    assert_eq!(run.steps, 299);
    // A second cleanup finds nothing to do.
    assert!(stdout_lines(&record(&db, &["cleanup", "--idle", "0"])).is_empty());
}

#[test]
fn events_without_a_run_open_one_and_later_ones_join_it() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let crawl = NotesCrawl::load();
    let lines = crawl.lines(None, 6);
    let (head, tail) = lines.split_at(lines.len() / 2);
    let out = feed(&db, head, &[]);
    assert!(out.status.success());
    let passed = stdout_lines(&out);
    let announced: Value = serde_json::from_str(&passed[0]).unwrap();
    assert_eq!(announced["type"], "run_started");
    let first: Value = serde_json::from_str(&head[0]).unwrap();
    assert_eq!(announced["package"], first["package"]);
    assert_eq!(&passed[1..], head);
    let run = announced["run_id"].as_str().unwrap().to_string();

    let out = feed(&db, tail, &[]);
    assert!(out.status.success());
    assert_eq!(
        stdout_lines(&out),
        tail,
        "the open run is joined, nothing announced"
    );
    let store = Store::open(&db).unwrap();
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].run_id, run);
    assert_eq!(runs[0].steps, 6);
    // The export carries the run id and steps droid-record assigned.
    let export = stdout_lines(&record(&db, &["export", &run]));
    assert!(export
        .iter()
        .all(|l| l.contains(&format!("\"run_id\":\"{run}\""))));
    assert!(export[1].contains("\"step\":1"));
}

#[test]
fn runs_lists_and_delete_removes_the_run_and_its_session_folder() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let session = dir.path().join("output_data/emulator-5554_notes_0101_1000");
    droid::session::create_session_dir(&session, "drop").unwrap();
    std::fs::create_dir_all(session.join("screenshots")).unwrap();
    let crawl = NotesCrawl::load();
    let mut first = crawl.lines(Some("keep"), 5);
    let mut second = crawl.lines(Some("drop"), 7);
    let mut started: Value = serde_json::from_str(&second[0]).unwrap();
    started["session_dir"] = Value::from(session.to_str().unwrap());
    second[0] = started.to_string();
    first.append(&mut second);
    assert!(feed(&db, &first, &[]).status.success());

    let table = String::from_utf8(record(&db, &["runs"]).stdout).unwrap();
    assert!(table.starts_with("RUN"), "{table}");
    assert!(table.contains("drop") && table.contains("COMPLETED"));
    let keep_before = count(&db, "SELECT COUNT(*) FROM step_logs WHERE run_id = 1");

    let out = record(&db, &["delete", "drop"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!session.exists());
    let runs: Vec<Value> = stdout_lines(&record(&db, &["runs", "--json"]))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["run_id"], "keep");
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM run_events WHERE run_id = 2"),
        0
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM step_logs WHERE run_id = 2"),
        0
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM step_logs WHERE run_id = 1"),
        keep_before
    );
    assert_eq!(record(&db, &["delete", "drop"]).status.code(), Some(1));
}

#[test]
fn delete_removes_only_what_droid_wrote_for_the_run() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    // A run whose run_started names a folder droid never created: the folder stays.
    let victim = dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("thesis.txt"), "years of work").unwrap();
    let mut lines = NotesCrawl::load().lines(Some("hostile"), 2);
    let mut started: Value = serde_json::from_str(&lines[0]).unwrap();
    started["session_dir"] = Value::from(victim.to_str().unwrap());
    lines[0] = started.to_string();
    // A session folder droid made, but for another run.
    let foreign = dir.path().join("foreign");
    droid::session::create_session_dir(&foreign, "someone-else").unwrap();
    let mut other = NotesCrawl::load().lines(Some("borrower"), 2);
    let mut started: Value = serde_json::from_str(&other[0]).unwrap();
    started["session_dir"] = Value::from(foreign.to_str().unwrap());
    other[0] = started.to_string();
    lines.append(&mut other);
    assert!(feed(&db, &lines, &[]).status.success());

    for (run, kept) in [("hostile", &victim), ("borrower", &foreign)] {
        let out = record(&db, &["delete", run]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("left {} in place", kept.display()))
                && stderr.contains(".droid-session"),
            "{stderr}"
        );
        assert!(kept.exists());
    }
    assert!(victim.join("thesis.txt").exists());
    assert!(count(&db, "SELECT COUNT(*) FROM runs") == 0);

    // Run ids that could name a path are refused on the command line and in events.
    for bad in ["../../etc", "a/b", ""] {
        let out = record(&db, &["delete", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("run_id"));
    }
    let line = r#"{"type":"run_started","v":1,"run_id":"../../etc","session_dir":"/"}"#;
    let out = feed(&db, &[line.to_string()], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
    assert_eq!(count(&db, "SELECT COUNT(*) FROM runs"), 0);
}

#[test]
fn deleting_a_hand_made_run_removes_the_captures_droid_wrote_and_nothing_else() {
    droid::fixtures_or_skip!();
    let sim = crate::device::SimProc::notes(&[]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let shots = dir.path().join("shots");
    let captured = droid("droid-capture")
        .args(sim.flags())
        .arg("--out")
        .arg(&shots)
        .output()
        .unwrap();
    assert!(
        captured.status.success(),
        "{}",
        String::from_utf8_lossy(&captured.stderr)
    );
    // Beside it, an offline observation of a fixture dump: the fixture is not droid's to delete.
    let fixture = fixtures().join("uidump/22_login_form_password.xml");
    let offline = droid("droid-capture")
        .args(["--from-xml", fixture.to_str().unwrap()])
        .output()
        .unwrap();
    let mut lines = stdout_lines(&captured);
    let mut offline_line: Value = serde_json::from_slice(&offline.stdout).unwrap();
    let device: Value = serde_json::from_str(&lines[0]).unwrap();
    offline_line["device"] = device["device"].clone();
    offline_line["package"] = device["package"].clone();
    lines.push(offline_line.to_string());
    let out = feed(&db, &lines, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = serde_json::from_str(&stdout_lines(&out)[0]).unwrap();
    let run = run["run_id"].as_str().unwrap();
    let files: Vec<_> = ["screenshot_path", "xml_path"]
        .iter()
        .map(|field| std::path::PathBuf::from(device[field].as_str().unwrap()))
        .collect();
    assert!(files.iter().all(|f| f.exists()));

    let out = record(&db, &["delete", run]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("and 2 capture files"), "{stderr}");
    assert!(files.iter().all(|f| !f.exists()), "{stderr}");
    assert!(fixture.exists());
    assert!(
        stderr.contains(&format!("left {} in place", fixture.display())),
        "{stderr}"
    );
}

#[test]
fn queries_journal_visits_unexplored_and_paths() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let lines = NotesCrawl::load().lines(Some("q"), 40);
    assert!(feed(&db, &lines, &[]).status.success());
    let store = Store::open(&db).unwrap();

    let journal = store.journal("q", droid::store::JOURNAL_STEPS).unwrap();
    assert_eq!(journal.len(), 15);
    assert_eq!(journal.last().unwrap().step_number, 40);
    assert!(journal
        .windows(2)
        .all(|w| w[0].step_number <= w[1].step_number));
    assert!(journal[0].ai_reasoning.is_some() || journal[0].action_type == "back");

    let visits = store.visit_counts("q").unwrap();
    assert_eq!(visits.iter().map(|v| v.visits).sum::<i64>(), 40);
    assert!(visits.windows(2).all(|w| w[0].visits >= w[1].visits));

    // The screen of step 1, as a new observation of it would find it: another rendering (its
    // perceptual hash) is the same screen, other widgets are not.
    let first: Value = serde_json::from_str(&lines[1]).unwrap();
    let mut again: Observation = serde_json::from_value(first.clone()).unwrap();
    again.hash.as_mut().unwrap().phash = Some("0123456789abcdef".into());
    let home = store.screen_at_step("q", 1).unwrap().unwrap();
    assert_eq!(store.screen_for_observation(&again).unwrap(), Some(home));
    let button = again.elements.iter_mut().find(|e| e.clickable).unwrap();
    button.signature = "a widget never seen".into();
    assert_eq!(store.screen_for_observation(&again).unwrap(), None);

    // Every action offered is explored or not, never both; back is offered everywhere.
    let offered = store.screen_actions(home).unwrap();
    let unexplored = store.unexplored_actions(home, Some("q")).unwrap();
    assert!(offered.iter().any(|a| a.verb == "back"));
    assert!(
        unexplored.len() < offered.len(),
        "step 1's action was explored"
    );
    assert!(unexplored.iter().all(|a| offered.contains(a)));

    // A path to the screen of step 5 exists, and each hop follows a recorded edge.
    let target = store.screen_at_step("q", 5).unwrap().unwrap();
    let path = store.shortest_path(home, target).unwrap().unwrap();
    assert!(!path.is_empty() && path.len() <= 4);
    assert_eq!(path[0].from_screen_id, home);
    assert_eq!(path.last().unwrap().to_screen_id, target);
    assert!(path
        .windows(2)
        .all(|w| w[0].to_screen_id == w[1].from_screen_id));
    assert_eq!(store.shortest_path(home, home).unwrap(), Some(vec![]));
    assert_eq!(store.shortest_path(home, 9_999).unwrap(), None);
}

#[test]
fn a_stored_secret_is_nowhere_in_clear_in_user_config_db() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cfg/user_config.db");
    let secret = "sk-proj-CANARY-7f3a9c2e1d";
    let config_cmd = |args: &[&str]| {
        let mut cmd = droid("droid-record");
        cmd.arg("config").arg("--config-db").arg(&config).args(args);
        cmd
    };
    let mut set = config_cmd(&["set", "OPENAI_API_KEY", "--secret"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(set.stdin.take().unwrap(), "{secret}").unwrap();
    assert!(set.wait().unwrap().success());
    assert!(config_cmd(&["set", "max_steps", "40", "--type", "int"])
        .status()
        .unwrap()
        .success());

    let shown = config_cmd(&["get", "openai_api_key"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&shown.stdout).trim(), "<redacted>");
    let listed = config_cmd(&["list"]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("openai_api_key\tsecret") && listed.contains("max_steps\tint\t40"));
    assert!(!listed.contains(secret));
    let revealed = config_cmd(&["get", "openai_api_key", "--reveal"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&revealed.stdout).trim(), secret);

    let mut scanned = 0;
    for entry in std::fs::read_dir(config.parent().unwrap()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        scanned += 1;
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the secret is in clear in the database files"
        );
        assert!(!bytes.windows(12).any(|w| w == b"CANARY-7f3a9"));
    }
    assert!(scanned >= 1);
}

#[test]
fn the_runs_table_clips_long_cells_instead_of_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let long = "p".repeat(70_000);
    let line = serde_json::json!({"type": "run_started", "v": 1, "run_id": "long",
        "package": long, "device": format!("\u{1b}[31m{long}")});
    assert!(feed(&db, &[line.to_string()], &[]).status.success());
    let out = record(&db, &["runs"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = table.lines().nth(1).unwrap();
    assert!(row.starts_with("long") && row.contains('…'), "{row}");
    assert!(row.chars().count() < 300, "{row}");
    assert!(
        !row.contains('\u{1b}'),
        "control characters never reach the terminal"
    );
    let json = record(&db, &["runs", "--json"]);
    assert!(
        String::from_utf8_lossy(&json.stdout).contains(&long),
        "--json keeps values whole"
    );
}

#[test]
fn subcommands_on_a_missing_database_say_so_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("typo.db");
    for args in [
        vec!["runs"],
        vec!["runs", "--json"],
        vec!["export", "r"],
        vec!["rebuild"],
        vec!["delete", "r"],
        vec!["cleanup"],
    ] {
        let out = record(&db, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("no database there"), "{stderr}");
        assert!(out.stdout.is_empty());
        assert!(!db.exists(), "{args:?} created {}", db.display());
    }
}

#[test]
fn config_set_with_nothing_on_stdin_refuses_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("user_config.db");
    for extra in [vec![], vec!["--secret"]] {
        let out = droid("droid-record")
            .args([
                "config",
                "--config-db",
                config.to_str().unwrap(),
                "set",
                "gemini_api_key",
            ])
            .args(&extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("no value on standard input"), "{stderr}");
    }
    let get = droid("droid-record")
        .args([
            "config",
            "--config-db",
            config.to_str().unwrap(),
            "get",
            "gemini_api_key",
        ])
        .output()
        .unwrap();
    assert_eq!(get.status.code(), Some(1), "nothing was stored");
}

#[test]
fn cleanup_spares_a_hand_made_pipe_between_steps_and_a_late_step_keeps_the_end() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let mut lines = NotesCrawl::load().lines(Some("by-hand"), 4);
    lines.retain(|l| !l.contains("\"run_ended\""));
    // Steps 1 and 2, each through its own droid-record as a shell loop does: between them no
    // writer is alive.
    let step_of = |line: &String| {
        serde_json::from_str::<Value>(line).unwrap()["step"]
            .as_u64()
            .unwrap_or(0)
    };
    let first: Vec<String> = lines.iter().filter(|l| step_of(l) <= 1).cloned().collect();
    assert!(feed(&db, &first, &[]).status.success());
    assert!(
        stdout_lines(&record(&db, &["cleanup"])).is_empty(),
        "a run recorded moments ago is not stale, writer or not"
    );
    assert_eq!(
        Store::open(&db).unwrap().runs().unwrap()[0].status,
        "RUNNING"
    );

    // Once it is stale, cleanup ends it; a step arriving later is recorded, the run stays ended.
    assert_eq!(
        stdout_lines(&record(&db, &["cleanup", "--idle", "0"])),
        ["by-hand"]
    );
    let ended = Store::open(&db).unwrap().runs().unwrap()[0].clone();
    let second: Vec<String> = lines.iter().filter(|l| step_of(l) == 2).cloned().collect();
    let out = feed(&db, &second, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("recorded for runs that had already ended"),
        "{stderr}"
    );
    let after = Store::open(&db).unwrap().runs().unwrap()[0].clone();
    assert_eq!((after.status.as_str(), &after.end), ("ERROR", &ended.end));
    assert_eq!(after.steps, 2, "the late step is kept");
    // Feeding the same step again adds nothing and warns of nothing.
    let again = feed(&db, &second, &[]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("already ended"));
}
