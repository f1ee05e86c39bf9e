//! Queries the rest of the toolkit asks of crawler.db.

use std::collections::{HashMap, HashSet, VecDeque};

use rusqlite::{params, OptionalExtension, Row};
use serde::Serialize;

use super::projection::screen_row;
use super::{Context, Result, Store};
use crate::events::Observation;

/// How many steps the exploration journal holds (the reference crawler's prompt context).
pub const JOURNAL_STEPS: usize = 15;

/// One executed action, as the exploration journal shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JournalEntry {
    pub step_number: i64,
    pub timestamp: String,
    pub from_screen_id: Option<i64>,
    pub to_screen_id: Option<i64>,
    pub action_type: String,
    pub action_description: Option<String>,
    pub target_bbox_json: Option<String>,
    pub input_text: Option<String>,
    pub execution_success: bool,
    pub error_message: Option<String>,
    pub action_duration_ms: Option<f64>,
    pub ai_response_time_ms: Option<f64>,
    pub ai_reasoning: Option<String>,
}

/// How often a run saw a screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScreenVisits {
    pub screen_id: i64,
    pub activity: Option<String>,
    pub visits: i64,
}

/// An action a screen offers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionRow {
    pub action_id: String,
    pub screen_id: i64,
    pub verb: String,
    /// The widget signature (empty for screen-wide actions such as `back`).
    pub target_key: String,
    pub origin: Option<String>,
    pub tap_x: Option<i64>,
    pub tap_y: Option<i64>,
    pub selector_snapshot: Option<String>,
}

/// One hop of a known path: take `action_id` on `from` to reach `to`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathHop {
    pub from_screen_id: i64,
    pub action: ActionRow,
    pub to_screen_id: i64,
}

/// A line of `droid-record runs`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    pub package: String,
    pub device: String,
    pub status: String,
    pub steps: i64,
    pub screens: i64,
    pub start: String,
    pub end: Option<String>,
}

const ACTION_COLUMNS: &str =
    "a.action_id, a.screen_id, a.verb, a.target_key, a.origin, a.tap_x, a.tap_y, a.selector_snapshot";

fn action_row(row: &Row<'_>, offset: usize) -> rusqlite::Result<ActionRow> {
    Ok(ActionRow {
        action_id: row.get(offset)?,
        screen_id: row.get(offset + 1)?,
        verb: row.get(offset + 2)?,
        target_key: row.get(offset + 3)?,
        origin: row.get(offset + 4)?,
        tap_x: row.get(offset + 5)?,
        tap_y: row.get(offset + 6)?,
        selector_snapshot: row.get(offset + 7)?,
    })
}

impl Store {
    /// Every run, oldest first.
    /// The run a control command is for: `run` when given, else the newest run still
    /// RUNNING; with its session folder. `None` when there is no such run or it has no folder.
    pub fn controlled_run(
        &self,
        run: Option<&str>,
    ) -> Result<Option<(String, std::path::PathBuf)>> {
        let row: Option<(String, Option<String>)> = match run {
            Some(run) => self
                .conn
                .query_row(
                    "SELECT run_key, session_path FROM runs WHERE run_key = ?1",
                    [run],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional(),
            None => self
                .conn
                .query_row(
                    "SELECT run_key, session_path FROM runs WHERE status = 'RUNNING'
                     ORDER BY id DESC LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional(),
        }
        .ctx("finding the run")?;
        Ok(row.and_then(|(run, dir)| dir.map(|dir| (run, dir.into()))))
    }

    pub fn runs(&self) -> Result<Vec<RunSummary>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT run_key, app_package, device_id, status, total_steps, unique_screens,
                 start_time, end_time FROM runs ORDER BY id",
            )
            .ctx("listing runs")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunSummary {
                    run_id: r.get(0)?,
                    package: r.get(1)?,
                    device: r.get(2)?,
                    status: r.get(3)?,
                    steps: r.get::<_, Option<i64>>(4)?.unwrap_or(0),
                    screens: r.get::<_, Option<i64>>(5)?.unwrap_or(0),
                    start: r.get(6)?,
                    end: r.get(7)?,
                })
            })
            .ctx("listing runs")?;
        rows.collect::<rusqlite::Result<_>>().ctx("listing runs")
    }

    /// The exploration journal: the run's last `limit` executed actions (the reference crawler's query,
    /// newest steps first), returned oldest first.
    pub fn journal(&self, run: &str, limit: usize) -> Result<Vec<JournalEntry>> {
        let run_id = self.run_row_id(run)?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT step_number, timestamp, from_screen_id, to_screen_id, action_type,
                 action_description, target_bbox_json, input_text, execution_success,
                 error_message, action_duration_ms, ai_response_time_ms, ai_reasoning
                 FROM step_logs WHERE run_id = ?1 ORDER BY step_number DESC, id DESC LIMIT ?2",
            )
            .ctx("reading the journal")?;
        let rows = stmt
            .query_map(
                params![run_id, i64::try_from(limit).unwrap_or(i64::MAX)],
                |r| {
                    Ok(JournalEntry {
                        step_number: r.get(0)?,
                        timestamp: r.get(1)?,
                        from_screen_id: r.get(2)?,
                        to_screen_id: r.get(3)?,
                        action_type: r.get(4)?,
                        action_description: r.get(5)?,
                        target_bbox_json: r.get(6)?,
                        input_text: r.get(7)?,
                        execution_success: r.get(8)?,
                        error_message: r.get(9)?,
                        action_duration_ms: r.get(10)?,
                        ai_response_time_ms: r.get(11)?,
                        ai_reasoning: r.get(12)?,
                    })
                },
            )
            .ctx("reading the journal")?;
        let mut entries: Vec<JournalEntry> = rows
            .collect::<rusqlite::Result<_>>()
            .ctx("reading the journal")?;
        entries.reverse();
        Ok(entries)
    }

    /// How often the run saw each screen, most visited first.
    pub fn visit_counts(&self, run: &str) -> Result<Vec<ScreenVisits>> {
        let run_id = self.run_row_id(run)?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT o.screen_id, s.activity_name, COUNT(*) c
                 FROM graph_persistence_outcomes o JOIN screens s ON s.id = o.screen_id
                 WHERE o.run_id = ?1 GROUP BY o.screen_id ORDER BY c DESC, o.screen_id",
            )
            .ctx("counting visits")?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok(ScreenVisits {
                    screen_id: r.get(0)?,
                    activity: r.get(1)?,
                    visits: r.get(2)?,
                })
            })
            .ctx("counting visits")?;
        rows.collect::<rusqlite::Result<_>>().ctx("counting visits")
    }

    /// Actions of a screen never attempted (in `run` when given, else in any run), in a stable
    /// order: widget actions by target, then screen-wide ones.
    pub fn unexplored_actions(&self, screen_id: i64, run: Option<&str>) -> Result<Vec<ActionRow>> {
        let run_id = run.map(|r| self.run_row_id(r)).transpose()?;
        let sql = format!(
            "SELECT {ACTION_COLUMNS} FROM actions a WHERE a.screen_id = ?1 AND NOT EXISTS (
               SELECT 1 FROM action_execution_coverage c WHERE c.action_id = a.action_id
               AND c.attempted_count > 0 AND (?2 IS NULL OR c.run_id = ?2))
             ORDER BY a.target_key = '', a.target_key, a.verb"
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .ctx("finding unexplored actions")?;
        let rows = stmt
            .query_map(params![screen_id, run_id], |r| action_row(r, 0))
            .ctx("finding unexplored actions")?;
        rows.collect::<rusqlite::Result<_>>()
            .ctx("finding unexplored actions")
    }

    /// The shortest known path between two screens (breadth-first over edges; among equally
    /// short paths, the one with the best-evidenced first hops). `Some(vec![])` when `from` is
    /// `to`, `None` when no known path exists.
    pub fn shortest_path(&self, from: i64, to: i64) -> Result<Option<Vec<PathHop>>> {
        if from == to {
            return Ok(Some(Vec::new()));
        }
        let sql = format!(
            "SELECT e.from_screen_id, e.to_screen_id, {ACTION_COLUMNS} FROM edges e
             JOIN actions a ON a.action_id = e.action_id
             ORDER BY e.from_screen_id, e.evidence_counter DESC, e.edge_id"
        );
        let mut stmt = self.conn.prepare(&sql).ctx("reading edges")?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, action_row(r, 2)?))
            })
            .ctx("reading edges")?;
        let mut out: HashMap<i64, Vec<(i64, ActionRow)>> = HashMap::new();
        for row in rows {
            let (a, b, action) = row.ctx("reading edges")?;
            out.entry(a).or_default().push((b, action));
        }
        let mut came_from: HashMap<i64, (i64, ActionRow)> = HashMap::new();
        let mut seen = HashSet::from([from]);
        let mut queue = VecDeque::from([from]);
        while let Some(screen) = queue.pop_front() {
            for (next, action) in out.get(&screen).into_iter().flatten() {
                if !seen.insert(*next) {
                    continue;
                }
                came_from.insert(*next, (screen, action.clone()));
                if *next == to {
                    let mut hops = Vec::new();
                    let mut at = to;
                    while let Some((prev, action)) = came_from.remove(&at) {
                        hops.push(PathHop {
                            from_screen_id: prev,
                            action,
                            to_screen_id: at,
                        });
                        at = prev;
                    }
                    hops.reverse();
                    return Ok(Some(hops));
                }
                queue.push_back(*next);
            }
        }
        Ok(None)
    }

    /// The known screen an observation shows (see [`crate::screen::ScreenKey`]), without
    /// recording anything.
    pub fn screen_for_observation(&self, observation: &Observation) -> Result<Option<i64>> {
        screen_row(
            &self.conn,
            crate::screen::ScreenKey::of(observation).as_str(),
        )
    }

    /// The actions a screen offers, in the order of [`Store::unexplored_actions`].
    pub fn screen_actions(&self, screen_id: i64) -> Result<Vec<ActionRow>> {
        let sql = format!(
            "SELECT {ACTION_COLUMNS} FROM actions a WHERE a.screen_id = ?1
             ORDER BY a.target_key = '', a.target_key, a.verb"
        );
        let mut stmt = self.conn.prepare_cached(&sql).ctx("reading actions")?;
        let rows = stmt
            .query_map([screen_id], |r| action_row(r, 0))
            .ctx("reading actions")?;
        rows.collect::<rusqlite::Result<_>>().ctx("reading actions")
    }

    /// The screen a run saw at a step.
    pub fn screen_at_step(&self, run: &str, step: u64) -> Result<Option<i64>> {
        let run_id = self.run_row_id(run)?;
        self.conn
            .query_row(
                "SELECT screen_id FROM graph_persistence_outcomes
                 WHERE run_id = ?1 AND step_ordinal = ?2",
                params![run_id, step as i64],
                |r| r.get(0),
            )
            .optional()
            .ctx("finding a step's screen")
    }
}

impl RunSummary {
    /// The runs as an aligned text table for people.
    /// Cells longer than [`MAX_CELL_CHARS`] are clipped with `…` (the full values are in
    /// `runs --json`), so no value can make the table unreadable or its padding overflow.
    pub fn table(runs: &[RunSummary]) -> String {
        let header = [
            "RUN", "PACKAGE", "DEVICE", "STATUS", "STEPS", "SCREENS", "START", "END",
        ];
        let rows: Vec<[String; 8]> = runs
            .iter()
            .map(|r| {
                [
                    &r.run_id,
                    &r.package,
                    &r.device,
                    &r.status,
                    &r.steps.to_string(),
                    &r.screens.to_string(),
                    &r.start,
                    r.end.as_deref().unwrap_or("-"),
                ]
                .map(clip)
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let header = header.map(str::to_string);
        for row in std::iter::once(&header).chain(&rows) {
            let cells: Vec<String> = row
                .iter()
                .zip(widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}

/// Widest cell of the runs table, in characters.
pub const MAX_CELL_CHARS: usize = 64;

/// A cell as shown: control characters (which a terminal would obey) as `?`, clipped to
/// [`MAX_CELL_CHARS`] with `…`.
fn clip(cell: &str) -> String {
    let long = cell.chars().nth(MAX_CELL_CHARS).is_some();
    let kept = if long {
        MAX_CELL_CHARS - 1
    } else {
        MAX_CELL_CHARS
    };
    let mut shown: String = cell
        .chars()
        .take(kept)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if long {
        shown.push('…');
    }
    shown
}
