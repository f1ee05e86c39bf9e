//! What the reports read of one run: its row and its two bounding events, `run_stats`, the
//! screens it saw, its transitions, steps, notes and crashes. Plain rows; `droid::report` turns
//! them into a report.

use rusqlite::types::Value as Sql;
use rusqlite::{params, OptionalExtension, Row};
use serde_json::{Map, Value};

use super::{stats, Context, Result, Store};

/// The `runs` row of a run and its `run_started` and `run_ended` events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunRow {
    pub run_id: String,
    pub device_id: String,
    pub app_package: String,
    pub start_activity: Option<String>,
    pub start_time: String,
    pub end_time: Option<String>,
    pub status: String,
    pub ai_provider: Option<String>,
    pub ai_model: Option<String>,
    pub session_path: Option<String>,
    /// `crawl` or `replay`.
    pub kind: String,
    /// A replay's: the run it replays, and why (`replay`, `minimise`, `verify`).
    pub replay_of: Option<String>,
    pub replay_purpose: Option<String>,
    pub started: Option<Value>,
    pub ended: Option<Value>,
}

/// A screen the run saw.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreenRow {
    pub screen_id: i64,
    pub composite_hash: String,
    pub activity: Option<String>,
    pub package: Option<String>,
    pub screenshot_path: Option<String>,
    /// Steps of the run on this screen.
    pub visits: i64,
    /// The run's first step on it.
    pub first_step: i64,
    /// Widget actions the screen offers (`back` and other screen-wide actions left out).
    pub widget_actions: i64,
    /// Of those, attempted in this run.
    pub widget_actions_tried: i64,
    /// The screen's states the run's steps were taken in, as the decider's graph told them
    /// apart (`screen_states`); 0 when it held the screen as one state.
    pub states: i64,
}

/// A transition of the run: `count` times `action_type` on `from` led to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionRow {
    pub from_screen_id: i64,
    pub to_screen_id: i64,
    pub action_type: String,
    pub count: i64,
}

/// One observed step: its screen and screenshot.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    pub step: i64,
    pub ts: Option<String>,
    pub screen_id: i64,
    pub screenshot_path: Option<String>,
}

/// A `note` of the run other than a crash or an ANR.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteRow {
    pub step: Option<i64>,
    pub ts: Option<String>,
    pub kind: String,
    pub message: Option<String>,
    pub data: Option<Value>,
}

/// A `crashes` row.
#[derive(Debug, Clone, PartialEq)]
pub struct CrashRow {
    pub step: Option<i64>,
    pub ts: Option<String>,
    /// `crash` or `anr`.
    pub kind: String,
    pub package: Option<String>,
    pub process: Option<String>,
    pub pid: Option<i64>,
    pub exception: Option<String>,
    /// The exception's message, or the ANR's reason.
    pub message: Option<String>,
    pub signature: String,
    pub signature_frames: Vec<String>,
    pub trace: Option<String>,
    pub repro_steps: Vec<crate::crash::ReproStep>,
    pub screenshot_path: Option<String>,
    pub recovered: bool,
}

fn sql_to_json(value: Sql) -> Value {
    match value {
        Sql::Null => Value::Null,
        Sql::Integer(i) => Value::from(i),
        Sql::Real(f) => Value::from(f),
        Sql::Text(t) => Value::from(t),
        Sql::Blob(b) => Value::from(b.len()),
    }
}

fn json_column(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Value>> {
    let text: Option<String> = row.get(index)?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

impl Store {
    /// The run's row and its first `run_started` and last `run_ended` events.
    pub fn run_row(&self, run: &str) -> Result<RunRow> {
        let run_id = self.run_row_id(run)?;
        let mut row = self
            .conn
            .query_row(
                "SELECT run_key, device_id, app_package, start_activity, start_time, end_time,
                 status, ai_provider, ai_model, session_path, kind, replay_of, replay_purpose
                 FROM runs WHERE id = ?1",
                [run_id],
                |r| {
                    Ok(RunRow {
                        run_id: r.get(0)?,
                        device_id: r.get(1)?,
                        app_package: r.get(2)?,
                        start_activity: r.get(3)?,
                        start_time: r.get(4)?,
                        end_time: r.get(5)?,
                        status: r.get(6)?,
                        ai_provider: r.get(7)?,
                        ai_model: r.get(8)?,
                        session_path: r.get(9)?,
                        kind: r.get(10)?,
                        replay_of: r.get(11)?,
                        replay_purpose: r.get(12)?,
                        started: None,
                        ended: None,
                    })
                },
            )
            .ctx("reading a run")?;
        let event = |kind: &str, order: &str| -> Result<Option<Value>> {
            self.conn
                .query_row(
                    &format!(
                        "SELECT json FROM run_events WHERE run_id = ?1 AND type = ?2
                         ORDER BY seq {order} LIMIT 1"
                    ),
                    params![run_id, kind],
                    |r| json_column(r, 0),
                )
                .optional()
                .map(Option::flatten)
                .ctx("reading a run's events")
        };
        row.started = event("run_started", "ASC")?;
        row.ended = event("run_ended", "DESC")?;
        Ok(row)
    }

    /// The run's `run_stats` row, column by column (`id` and `run_id` left out). A run still
    /// RUNNING is counted afresh, in a transaction that is rolled back: its row is only
    /// refreshed when an ingest ends.
    pub fn run_stats_row(&self, run: &str) -> Result<Map<String, Value>> {
        let run_id = self.run_row_id(run)?;
        let status: String = self
            .conn
            .query_row("SELECT status FROM runs WHERE id = ?1", [run_id], |r| {
                r.get(0)
            })
            .ctx("reading a run")?;
        let read = || -> Result<Map<String, Value>> {
            let mut stmt = self
                .conn
                .prepare("SELECT * FROM run_stats WHERE run_id = ?1")
                .ctx("reading run_stats")?;
            let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
            let row = stmt
                .query_row([run_id], |r| {
                    (0..names.len())
                        .map(|i| r.get::<_, Sql>(i))
                        .collect::<rusqlite::Result<Vec<Sql>>>()
                })
                .optional()
                .ctx("reading run_stats")?;
            Ok(names
                .into_iter()
                .zip(row.unwrap_or_default().into_iter().map(sql_to_json))
                .filter(|(name, _)| name != "id" && name != "run_id")
                .collect())
        };
        let stored = read()?;
        if status != "RUNNING" && !stored.is_empty() {
            return Ok(stored);
        }
        super::with_lock_retry(|| self.conn.execute_batch("BEGIN IMMEDIATE"))
            .ctx("starting a transaction")?;
        let fresh = stats::refresh(&self.conn, run_id, None).and_then(|()| read());
        let _ = self.conn.execute_batch("ROLLBACK");
        fresh
    }

    /// The screens the run saw, in the order it first saw them.
    pub fn run_screens(&self, run: &str) -> Result<Vec<ScreenRow>> {
        let run_id = self.run_row_id(run)?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT s.id, s.composite_hash, s.activity_name, s.package, s.screenshot_path,
                   v.visits, v.first_step,
                   (SELECT COUNT(*) FROM actions a WHERE a.screen_id = s.id AND a.target_key <> ''),
                   (SELECT COUNT(*) FROM actions a JOIN action_execution_coverage c
                      ON c.action_id = a.action_id AND c.run_id = ?1
                    WHERE a.screen_id = s.id AND a.target_key <> '' AND c.attempted_count > 0),
                   (SELECT COUNT(DISTINCT l.state_id) FROM step_logs l
                    WHERE l.run_id = ?1 AND l.from_screen_id = s.id)
                 FROM (SELECT screen_id, COUNT(*) visits, MIN(step_ordinal) first_step
                       FROM graph_persistence_outcomes WHERE run_id = ?1 GROUP BY screen_id) v
                 JOIN screens s ON s.id = v.screen_id
                 ORDER BY v.first_step, s.id",
            )
            .ctx("reading screens")?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(ScreenRow {
                    screen_id: r.get(0)?,
                    composite_hash: r.get(1)?,
                    activity: r.get(2)?,
                    package: r.get(3)?,
                    screenshot_path: r.get(4)?,
                    visits: r.get(5)?,
                    first_step: r.get(6)?,
                    widget_actions: r.get(7)?,
                    widget_actions_tried: r.get(8)?,
                    states: r.get(9)?,
                })
            })
            .ctx("reading screens")?;
        rows.collect::<rusqlite::Result<_>>().ctx("reading screens")
    }

    /// The run's transitions, most taken first.
    pub fn run_transitions(&self, run: &str) -> Result<Vec<TransitionRow>> {
        let run_id = self.run_row_id(run)?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT from_screen_id, to_screen_id, action_type, count FROM transitions
                 WHERE run_id = ?1 ORDER BY count DESC, id",
            )
            .ctx("reading transitions")?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(TransitionRow {
                    from_screen_id: r.get(0)?,
                    to_screen_id: r.get(1)?,
                    action_type: r.get(2)?,
                    count: r.get(3)?,
                })
            })
            .ctx("reading transitions")?;
        rows.collect::<rusqlite::Result<_>>()
            .ctx("reading transitions")
    }

    /// The run's observed steps in order, with the screenshot each observation names.
    pub fn run_steps(&self, run: &str) -> Result<Vec<StepRow>> {
        let run_id = self.run_row_id(run)?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT o.step_ordinal, e.ts, o.screen_id, json_extract(e.json, '$.screenshot_path')
                 FROM graph_persistence_outcomes o
                 LEFT JOIN run_events e ON e.run_id = o.run_id AND e.seq = o.source_run_seq
                 WHERE o.run_id = ?1 ORDER BY o.step_ordinal",
            )
            .ctx("reading steps")?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(StepRow {
                    step: r.get(0)?,
                    ts: r.get(1)?,
                    screen_id: r.get(2)?,
                    screenshot_path: r.get(3)?,
                })
            })
            .ctx("reading steps")?;
        rows.collect::<rusqlite::Result<_>>().ctx("reading steps")
    }

    /// Every `step_logs` row of the run, in step order.
    pub fn run_actions(&self, run: &str) -> Result<Vec<super::JournalEntry>> {
        self.journal(run, usize::MAX)
    }

    /// The run's notes in order, crashes and ANRs left out (see [`Store::run_crashes`]).
    pub fn run_notes(&self, run: &str) -> Result<Vec<NoteRow>> {
        let run_id = self.run_row_id(run)?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT step, ts, json_extract(json, '$.kind'), json_extract(json, '$.message'),
                   json_extract(json, '$.data')
                 FROM run_events WHERE run_id = ?1 AND type = 'note'
                   AND COALESCE(json_extract(json, '$.kind'), '') NOT IN ('crash', 'anr')
                 ORDER BY seq",
            )
            .ctx("reading notes")?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(NoteRow {
                    step: r.get(0)?,
                    ts: r.get(1)?,
                    kind: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                    message: r.get(3)?,
                    data: json_column(r, 4)?,
                })
            })
            .ctx("reading notes")?;
        rows.collect::<rusqlite::Result<_>>().ctx("reading notes")
    }

    /// The minimisations of the run's crashes and ANRs (`minimised` notes), the newest of each
    /// signature, in the order they were recorded.
    pub fn run_minimisations(&self, run: &str) -> Result<Vec<crate::crash::MinimisedData>> {
        let run_id = self.run_row_id(run)?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT data_json FROM minimisations m WHERE run_id = ?1 AND source_run_seq =
                   (SELECT MAX(source_run_seq) FROM minimisations
                    WHERE run_id = m.run_id AND kind = m.kind AND signature = m.signature)
                 ORDER BY source_run_seq",
            )
            .ctx("reading minimisations")?;
        let rows = stmt
            .query_map([run_id], |r| r.get::<_, String>(0))
            .ctx("reading minimisations")?;
        let mut found = Vec::new();
        for json in rows {
            let json = json.ctx("reading minimisations")?;
            found.extend(serde_json::from_str(&json).ok());
        }
        Ok(found)
    }

    /// The run's crashes and ANRs, in the order they were recorded.
    pub fn run_crashes(&self, run: &str) -> Result<Vec<CrashRow>> {
        let run_id = self.run_row_id(run)?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT step, ts, kind, package, process, pid, exception, message, signature,
                   signature_frames_json, trace, repro_steps_json, screenshot_path, recovered
                 FROM crashes WHERE run_id = ?1 ORDER BY source_run_seq",
            )
            .ctx("reading crashes")?;
        let rows = stmt
            .query_map([run_id], |r| {
                let frames = json_column(r, 9)?
                    .and_then(|v| serde_json::from_value(v).ok())
                    .unwrap_or_default();
                let steps = json_column(r, 11)?
                    .and_then(|v| serde_json::from_value(v).ok())
                    .unwrap_or_default();
                Ok(CrashRow {
                    step: r.get(0)?,
                    ts: r.get(1)?,
                    kind: r.get(2)?,
                    package: r.get(3)?,
                    process: r.get(4)?,
                    pid: r.get(5)?,
                    exception: r.get(6)?,
                    message: r.get(7)?,
                    signature: r.get(8)?,
                    signature_frames: frames,
                    trace: r.get(10)?,
                    repro_steps: steps,
                    screenshot_path: r.get(12)?,
                    recovered: r.get(13)?,
                })
            })
            .ctx("reading crashes")?;
        rows.collect::<rusqlite::Result<_>>().ctx("reading crashes")
    }
}
