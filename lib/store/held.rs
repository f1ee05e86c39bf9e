//! Rows whose step is still being projected, held in memory until the end of the transaction.
//!
//! A step's `step_logs` rows and its `graph_persistence_outcomes` row learn their destination
//! (and the outcome its action) only from later events. Written at once, each would be inserted
//! and then updated once or twice; an update of a table with foreign keys makes SQLite open a
//! statement journal and copy every page it touches. Held, a row is inserted once, complete,
//! when the transaction ends ([`Held::flush`]). A row flushed before its destination arrived (the
//! next observation comes in a later transaction, as on a live pipe) is updated in the database
//! as before, so every commit leaves exactly the rows it left when they were written at once.

use std::collections::HashMap;

use rusqlite::{params, Connection};

use super::{Context, Result};

/// One `step_logs` row (one executed action), without its id.
pub(crate) struct StepRow {
    pub run_id: i64,
    pub step: i64,
    pub ts: String,
    pub from_screen: Option<i64>,
    pub to_screen: Option<i64>,
    pub action_type: String,
    pub description: Option<String>,
    pub bbox: Option<String>,
    pub input_text: Option<String>,
    pub success: bool,
    pub error: Option<String>,
    pub duration_ms: f64,
    pub ai_latency_ms: Option<f64>,
    pub reasoning: Option<String>,
    pub was_retried: bool,
    pub retry_count: u32,
    /// The `screen_states` row of the state the step's decision was made in.
    pub state_id: Option<i64>,
}

/// One `graph_persistence_outcomes` row: the screen a step observed, what led on, and where.
pub(crate) struct OutcomeRow {
    pub outcome_id: String,
    pub run_id: i64,
    pub step: i64,
    pub screen_id: i64,
    pub action_id: Option<String>,
    pub to_screen: Option<i64>,
    pub kind: &'static str,
    pub seq: i64,
    pub ts: String,
}

/// Rows not written yet, in the order they were projected.
#[derive(Default)]
pub(crate) struct Held {
    steps: Vec<StepRow>,
    /// Positions in `steps` of the rows with no destination yet, by (run, step).
    unlinked: HashMap<(i64, i64), Vec<usize>>,
    outcomes: Vec<OutcomeRow>,
    /// Position in `outcomes` of the first outcome of (run, step): the one the database keeps.
    outcome_at: HashMap<(i64, i64), usize>,
}

impl Held {
    pub fn step(&mut self, row: StepRow) {
        self.unlinked
            .entry((row.run_id, row.step))
            .or_default()
            .push(self.steps.len());
        self.steps.push(row);
    }

    pub fn outcome(&mut self, row: OutcomeRow) {
        self.outcome_at
            .entry((row.run_id, row.step))
            .or_insert(self.outcomes.len());
        self.outcomes.push(row);
    }

    /// A step's rows with no destination yet (held or written) get `to`.
    pub fn link_steps(&mut self, conn: &Connection, run_id: i64, step: i64, to: i64) -> Result<()> {
        for at in self.unlinked.remove(&(run_id, step)).unwrap_or_default() {
            self.steps[at].to_screen = Some(to);
        }
        // Rows written by an earlier transaction. Looking is a read of one index entry;
        // updating would cost a statement journal even when no row matches.
        let written: bool = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM step_logs
                 WHERE run_id = ?1 AND step_number = ?2 AND to_screen_id IS NULL)",
            )
            .and_then(|mut s| s.query_row(params![run_id, step], |r| r.get(0)))
            .ctx("linking steps")?;
        if written {
            conn.prepare_cached(
                "UPDATE step_logs SET to_screen_id = ?3
                 WHERE run_id = ?1 AND step_number = ?2 AND to_screen_id IS NULL",
            )
            .and_then(|mut s| s.execute(params![run_id, step, to]))
            .ctx("linking steps")?;
        }
        Ok(())
    }

    /// The step's outcome gets the action that led on.
    pub fn set_action(
        &mut self,
        conn: &Connection,
        run_id: i64,
        step: i64,
        action_id: &str,
    ) -> Result<()> {
        match self.outcome_at.get(&(run_id, step)) {
            Some(&at) => self.outcomes[at].action_id = Some(action_id.to_string()),
            None => update_outcome(conn, SET_ACTION, run_id, step, &action_id)?,
        }
        Ok(())
    }

    /// The step's outcome gets the screen it led to.
    pub fn link_outcome(
        &mut self,
        conn: &Connection,
        run_id: i64,
        step: i64,
        to: i64,
    ) -> Result<()> {
        match self.outcome_at.get(&(run_id, step)) {
            Some(&at) => self.outcomes[at].to_screen = Some(to),
            None => update_outcome(conn, SET_DESTINATION, run_id, step, &to)?,
        }
        Ok(())
    }

    /// Writes every held row, in the order they were projected.
    pub fn flush(&mut self, conn: &Connection) -> Result<()> {
        self.unlinked.clear();
        self.outcome_at.clear();
        for o in self.outcomes.drain(..) {
            let inserted = conn
                .prepare_cached(
                    "INSERT OR IGNORE INTO graph_persistence_outcomes (outcome_id, run_id,
                     step_ordinal, screen_id, action_id, to_screen_id, upsert_kind, source_run_seq,
                     created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        o.outcome_id,
                        o.run_id,
                        o.step,
                        o.screen_id,
                        o.action_id,
                        o.to_screen,
                        o.kind,
                        o.seq,
                        o.ts
                    ])
                })
                .ctx("recording the outcome")?;
            if inserted == 0 {
                // The step already had an outcome: it gets what this one learned, as when
                // each was written at once.
                if let Some(action_id) = &o.action_id {
                    update_outcome(conn, SET_ACTION, o.run_id, o.step, action_id)?;
                }
                if let Some(to) = &o.to_screen {
                    update_outcome(conn, SET_DESTINATION, o.run_id, o.step, to)?;
                }
            }
        }
        for r in self.steps.drain(..) {
            conn.prepare_cached(
                "INSERT INTO step_logs (run_id, step_number, timestamp, from_screen_id,
                 to_screen_id, action_type, action_description, target_bbox_json, input_text,
                 execution_success, error_message, action_duration_ms, ai_response_time_ms,
                 ai_reasoning, was_retried, retry_count, state_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    r.run_id,
                    r.step,
                    r.ts,
                    r.from_screen,
                    r.to_screen,
                    r.action_type,
                    r.description,
                    r.bbox,
                    r.input_text,
                    r.success,
                    r.error,
                    r.duration_ms,
                    r.ai_latency_ms,
                    r.reasoning,
                    r.was_retried,
                    r.retry_count,
                    r.state_id
                ])
            })
            .ctx("recording a step")?;
        }
        Ok(())
    }
}

const SET_ACTION: &str = "UPDATE graph_persistence_outcomes SET action_id = ?3
     WHERE run_id = ?1 AND step_ordinal = ?2";
const SET_DESTINATION: &str = "UPDATE graph_persistence_outcomes SET to_screen_id = ?3
     WHERE run_id = ?1 AND step_ordinal = ?2";

/// Runs [`SET_ACTION`] or [`SET_DESTINATION`] on a written outcome.
fn update_outcome(
    conn: &Connection,
    sql: &str,
    run_id: i64,
    step: i64,
    value: &dyn rusqlite::ToSql,
) -> Result<()> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute(params![run_id, step, value]))
        .ctx("recording the step's outcome")?;
    Ok(())
}
