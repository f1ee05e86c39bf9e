//! `run_stats`: every seed field, computed from the projected tables and the run's events.

use std::collections::{HashMap, HashSet, VecDeque};

use rusqlite::types::Value as Sql;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{Map, Value};

use super::statistic::Statistic;
use super::{Context, Result};
use crate::events::{ActionResult, Decision, ErrorKind};

/// What `run_stats` counts of a run's decisions and results, kept while projecting them, so a
/// refresh need not read every decision's and result's JSON again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    decisions: i64,
    results: i64,
    /// Actions of all decisions.
    actions: i64,
    /// Decisions of one action; of more than one, and their actions.
    single: i64,
    multi: i64,
    multi_actions: i64,
    max_batch: i64,
    invalid_bbox: i64,
    /// Decisions the heuristic made because the model failed.
    fallbacks: i64,
}

impl Tally {
    pub fn decision(&mut self, d: &Decision) {
        let n = d.actions.len() as i64;
        self.decisions += 1;
        self.actions += n;
        self.single += i64::from(n == 1);
        if n > 1 {
            self.multi += 1;
            self.multi_actions += n;
        }
        self.max_batch = self.max_batch.max(n);
        self.fallbacks += i64::from(d.is_fallback());
    }

    pub fn result(&mut self, r: &ActionResult) {
        self.results += 1;
        self.invalid_bbox += i64::from(r.error_kind == Some(ErrorKind::InvalidBbox));
    }

    /// The batching, invalid-bbox and fallback fields, in the order [`counted`] gives them.
    fn fields(&self) -> [Sql; 7] {
        let average = match self.decisions {
            0 => Sql::Null,
            n => Sql::Real(self.actions as f64 / n as f64),
        };
        [
            self.multi.into(),
            self.single.into(),
            self.multi_actions.into(),
            average,
            self.max_batch.into(),
            self.invalid_bbox.into(),
            self.fallbacks.into(),
        ]
    }
}

/// Recomputes the `run_stats` row of one run (its id is the run's id, so rebuilding the
/// projection reproduces it exactly). `tally` is what the caller projected of the run; it is
/// used when it covers every decision and result in the log, else they are read again.
pub(crate) fn refresh(conn: &Connection, run_id: i64, tally: Option<&Tally>) -> Result<()> {
    let mut fields: Vec<(Statistic, Sql)> = Vec::new();

    let one = |sql: &str| -> Result<Vec<Sql>> {
        conn.query_row(sql, [run_id], |row| {
            (0..row.as_ref().column_count())
                .map(|i| row.get::<_, Sql>(i))
                .collect()
        })
        .ctx("computing run_stats")
    };

    // Progress.
    let progress = one("SELECT
           (SELECT COUNT(*) FROM graph_persistence_outcomes WHERE run_id = ?1),
           (SELECT COUNT(*) FROM (SELECT MIN(execution_success) ok FROM step_logs
              WHERE run_id = ?1 GROUP BY step_number) WHERE ok = 1),
           (SELECT COUNT(*) FROM (SELECT MIN(execution_success) ok FROM step_logs
              WHERE run_id = ?1 GROUP BY step_number) WHERE ok = 0),
           (SELECT (julianday(COALESCE(
                (SELECT MAX(ts) FROM run_events WHERE run_id = ?1 AND type = 'run_ended'
                   AND ts IS NOT NULL AND ts <> ''), MAX(ts))) - julianday(MIN(ts))) * 86400.0
              FROM run_events WHERE run_id = ?1 AND ts IS NOT NULL AND ts <> '')")?;
    let steps = as_i64(&progress[0]);
    let duration = as_f64(&progress[3]);
    fields.push((Statistic::TotalSteps, progress[0].clone()));
    fields.push((Statistic::SuccessfulSteps, progress[1].clone()));
    fields.push((Statistic::FailedSteps, progress[2].clone()));
    fields.push((Statistic::CrawlDurationSeconds, opt_f64(duration)));
    fields.push((
        Statistic::AvgStepDurationMs,
        opt_f64(
            duration
                .filter(|_| steps > 0)
                .map(|d| d * 1000.0 / steps as f64),
        ),
    ));

    // Discovery.
    let discovery = one(
        "SELECT COUNT(DISTINCT o.screen_id), COUNT(*), COUNT(DISTINCT s.activity_name)
         FROM graph_persistence_outcomes o JOIN screens s ON s.id = o.screen_id
         WHERE o.run_id = ?1",
    )?;
    fields.push((Statistic::UniqueScreensVisited, discovery[0].clone()));
    fields.push((Statistic::TotalScreenVisits, discovery[1].clone()));
    fields.push((
        Statistic::DeepestNavigationDepth,
        deepest_depth(conn, run_id)?.into(),
    ));
    let most: Option<(i64, i64)> = conn
        .query_row(
            "SELECT screen_id, COUNT(*) c FROM graph_persistence_outcomes WHERE run_id = ?1
             GROUP BY screen_id ORDER BY c DESC, screen_id LIMIT 1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .ctx("computing run_stats")?;
    fields.push((Statistic::MostVisitedScreenId, most.map(|m| m.0).into()));
    fields.push((
        Statistic::MostVisitedScreenCount,
        most.map_or(0, |m| m.1).into(),
    ));
    fields.push((
        Statistic::UniqueActivitiesVisited,
        match declared_activities(conn, run_id)? {
            Some(declared) => declared_visited(conn, run_id, &declared)?,
            None => discovery[2].clone(),
        },
    ));

    // Actions.
    let (all, ok, failed) = actions_by_type(conn, run_id)?;
    fields.push((Statistic::ActionsByType, all.into()));
    fields.push((Statistic::SuccessfulActionsByType, ok.into()));
    fields.push((Statistic::FailedActionsByType, failed.into()));
    let durations = one(
        "SELECT AVG(action_duration_ms), MIN(action_duration_ms), MAX(action_duration_ms)
         FROM step_logs WHERE run_id = ?1",
    )?;
    fields.push((Statistic::AvgActionDurationMs, durations[0].clone()));
    fields.push((Statistic::MinActionDurationMs, durations[1].clone()));
    fields.push((Statistic::MaxActionDurationMs, durations[2].clone()));

    // AI performance.
    let ai = one(
        "SELECT COUNT(*), AVG(latency_ms), MIN(latency_ms), MAX(latency_ms),
           COALESCE(SUM(error_message LIKE '%timeout%' OR error_message LIKE '%timed out%'), 0),
           COALESCE(SUM(success = 0), 0), COALESCE(SUM(retry_count), 0),
           (SELECT COUNT(*) FROM run_events WHERE run_id = ?1 AND type = 'note'
              AND json_extract(json, '$.kind') = 'invalid_response'),
           CASE WHEN COUNT(tokens_input) + COUNT(tokens_output) = 0 THEN NULL
                ELSE COALESCE(SUM(tokens_input), 0) + COALESCE(SUM(tokens_output), 0) END,
           SUM(cost)
         FROM ai_interactions WHERE run_id = ?1",
    )?;
    for (name, value) in [
        Statistic::TotalAiCalls,
        Statistic::AvgAiResponseTimeMs,
        Statistic::MinAiResponseTimeMs,
        Statistic::MaxAiResponseTimeMs,
        Statistic::AiTimeoutCount,
        Statistic::AiErrorCount,
        Statistic::AiRetryCount,
        Statistic::InvalidResponseCount,
        Statistic::TotalAiTokensUsed,
        Statistic::TotalAiCost,
    ]
    .into_iter()
    .zip(ai)
    {
        fields.push((name, value));
    }

    // Batching, and results with an invalid bounding box.
    for (name, value) in [
        Statistic::MultiActionBatchCount,
        Statistic::SingleActionCount,
        Statistic::TotalBatchActions,
        Statistic::AvgBatchSize,
        Statistic::MaxBatchSize,
        Statistic::InvalidBboxCount,
        Statistic::HeuristicFallbackCount,
    ]
    .into_iter()
    .zip(counted(conn, run_id, tally)?)
    {
        fields.push((name, value));
    }

    // Errors and recoveries, from notes (`data.recovered`, `data.recovery_ms`) and results. A
    // `stuck` note that follows up an earlier detection names it in `data.detected_at`.
    let recovery = one("SELECT
           COALESCE(SUM(k = 'stuck' AND since IS NULL), 0),
           COALESCE(SUM(k = 'stuck' AND rec = 1), 0),
           COALESCE(SUM(k = 'crash'), 0), COALESCE(SUM(k = 'relaunch'), 0),
           COALESCE(SUM(k = 'context_loss' AND rec = 1), 0),
           COALESCE(SUM(k = 'uiautomator_crash'), 0),
           COALESCE(SUM(k = 'uiautomator_crash' AND rec = 1), 0),
           AVG(ms)
         FROM (SELECT json_extract(json, '$.kind') k, json_extract(json, '$.data.recovered') rec,
                 json_extract(json, '$.data.recovery_ms') ms,
                 json_extract(json, '$.data.detected_at') since
               FROM run_events WHERE run_id = ?1 AND type = 'note')")?;
    for (name, value) in [
        Statistic::StuckDetectionCount,
        Statistic::StuckRecoverySuccess,
        Statistic::AppCrashCount,
        Statistic::AppRelaunchCount,
        Statistic::ContextRecoveryCount,
        Statistic::UiautomatorCrashCount,
        Statistic::UiautomatorRecoveryCount,
        Statistic::AvgRecoveryTimeMs,
    ]
    .into_iter()
    .zip(recovery)
    {
        fields.push((name, value));
    }

    // Device and app, from run_started or else the first observation that says.
    let first = |path: &str| -> Result<Sql> {
        // Only run_started and the first observation are read: scanning every observation's
        // JSON would cost more than the whole projection.
        conn.query_row(
            "SELECT COALESCE(
               json_extract((SELECT json FROM run_events WHERE run_id = ?1
                             AND type = 'run_started' ORDER BY seq LIMIT 1), ?2),
               json_extract((SELECT json FROM run_events WHERE run_id = ?1
                             AND type = 'observation' ORDER BY seq LIMIT 1), ?2))",
            params![run_id, path],
            |r| r.get::<_, Sql>(0),
        )
        .ctx("computing run_stats")
    };
    fields.push((Statistic::DeviceModel, first("$.device_info.model")?));
    fields.push((
        Statistic::AndroidVersion,
        first("$.device_info.android_version")?,
    ));
    let width = first("$.device_info.screen_size[0]")?;
    let height = first("$.device_info.screen_size[1]")?;
    let (width, height) = if width == Sql::Null {
        (first("$.screen_size[0]")?, first("$.screen_size[1]")?)
    } else {
        (width, height)
    };
    fields.push((Statistic::ScreenWidth, width));
    fields.push((Statistic::ScreenHeight, height));
    fields.push((Statistic::AppVersion, first("$.app_version")?));

    // Network and security artifacts: the last `artifact` note of each kind (see
    // docs/integrations.md for each `data` shape).
    let artifact = |kind: &str, field: &str| -> Result<Sql> {
        conn.query_row(
            "SELECT json_extract(json, '$.data.' || ?3) FROM run_events
             WHERE run_id = ?1 AND type = 'note' AND json_extract(json, '$.kind') = 'artifact'
             AND json_extract(json, '$.data.artifact') = ?2 ORDER BY seq DESC LIMIT 1",
            params![run_id, kind, field],
            |r| r.get::<_, Sql>(0),
        )
        .optional()
        .map(|v| v.unwrap_or(Sql::Null))
        .ctx("computing run_stats")
    };
    let zero_if_null = |v: Sql| if v == Sql::Null { Sql::Integer(0) } else { v };
    fields.push((
        Statistic::PcapFileSizeBytes,
        artifact("pcap", "size_bytes")?,
    ));
    fields.push((
        Statistic::PcapPacketCount,
        artifact("pcap", "packet_count")?,
    ));
    fields.push((
        Statistic::MobsfSecurityScore,
        artifact("mobsf", "security_score")?,
    ));
    fields.push((
        Statistic::MobsfHighIssues,
        zero_if_null(artifact("mobsf", "high_issues")?),
    ));
    fields.push((
        Statistic::MobsfMediumIssues,
        zero_if_null(artifact("mobsf", "medium_issues")?),
    ));
    fields.push((
        Statistic::MobsfLowIssues,
        zero_if_null(artifact("mobsf", "low_issues")?),
    ));
    fields.push((
        Statistic::VideoFileSizeBytes,
        artifact("video", "size_bytes")?,
    ));
    fields.push((
        Statistic::VideoDurationSeconds,
        artifact("video", "duration_seconds")?,
    ));

    // Coverage.
    let coverage =
        one("SELECT COALESCE(SUM(count), 0), COUNT(*) FROM transitions WHERE run_id = ?1")?;
    fields.push((Statistic::TransitionCount, coverage[0].clone()));
    fields.push((Statistic::UniqueTransitions, coverage[1].clone()));

    conn.execute("DELETE FROM run_stats WHERE run_id = ?1", [run_id])
        .ctx("writing run_stats")?;
    let mut columns = vec!["id".to_string(), "run_id".to_string()];
    let mut values = vec![Sql::from(run_id), Sql::from(run_id)];
    for (statistic, value) in fields {
        // Only stored statistics are computed here (see `Computed`).
        if let Some(column) = statistic.column() {
            columns.push(column);
            values.push(value);
        }
    }
    let marks = vec!["?"; columns.len()].join(", ");
    let sql = format!(
        "INSERT INTO run_stats ({}) VALUES ({marks})",
        columns.join(", ")
    );
    conn.execute(&sql, rusqlite::params_from_iter(values))
        .ctx("writing run_stats")?;
    Ok(())
}

/// The batching fields and the invalid-bbox count: from `tally` when it counted as many
/// decisions and results as the log holds (a count the type index answers without reading
/// the events), else from every decision's and result's JSON.
fn counted(conn: &Connection, run_id: i64, tally: Option<&Tally>) -> Result<[Sql; 7]> {
    if let Some(tally) = tally {
        let logged: (i64, i64) = conn
            .prepare_cached(
                "SELECT (SELECT COUNT(*) FROM run_events WHERE run_id = ?1 AND type = 'decision'),
                   (SELECT COUNT(*) FROM run_events WHERE run_id = ?1 AND type = 'result')",
            )
            .and_then(|mut s| s.query_row([run_id], |r| Ok((r.get(0)?, r.get(1)?))))
            .ctx("computing run_stats")?;
        if logged == (tally.decisions, tally.results) {
            return Ok(tally.fields());
        }
    }
    conn.query_row(
        "SELECT COALESCE(SUM(n > 1), 0), COALESCE(SUM(n = 1), 0),
           COALESCE(SUM(CASE WHEN n > 1 THEN n ELSE 0 END), 0), AVG(n), COALESCE(MAX(n), 0),
           (SELECT COUNT(*) FROM run_events WHERE run_id = ?1 AND type = 'result'
              AND json_extract(json, '$.error_kind') = 'invalid_bbox'),
           COALESCE(SUM(fallback), 0)
         FROM (SELECT json_array_length(json, '$.actions') n,
                 json_extract(json, '$.decider') = 'heuristic'
                   AND json_extract(json, '$.ai') IS NOT NULL fallback
               FROM run_events WHERE run_id = ?1 AND type = 'decision')",
        [run_id],
        |r| {
            Ok([
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ])
        },
    )
    .ctx("computing run_stats")
}

/// The activities the app's APK declares, as the last `activities` artifact note lists them
/// (a JSON array), when the run has one.
fn declared_activities(conn: &Connection, run_id: i64) -> Result<Option<String>> {
    conn.query_row(
        "SELECT json_extract(json, '$.data.declared') FROM run_events
         WHERE run_id = ?1 AND type = 'note' AND json_extract(json, '$.kind') = 'artifact'
         AND json_extract(json, '$.data.artifact') = 'activities'
         AND json_type(json, '$.data.declared') = 'array' ORDER BY seq DESC LIMIT 1",
        [run_id],
        |r| r.get::<_, Option<String>>(0),
    )
    .optional()
    .map(Option::flatten)
    .ctx("computing run_stats")
}

/// Distinct declared activities among the screens the run visited: activity coverage over what
/// the APK declares, so other apps' activities (a browser opened by a link) do not count.
fn declared_visited(conn: &Connection, run_id: i64, declared: &str) -> Result<Sql> {
    conn.query_row(
        "SELECT COUNT(DISTINCT s.activity_name)
         FROM graph_persistence_outcomes o JOIN screens s ON s.id = o.screen_id
         WHERE o.run_id = ?1 AND s.activity_name IN (SELECT value FROM json_each(?2))",
        params![run_id, declared],
        |r| r.get::<_, Sql>(0),
    )
    .ctx("computing run_stats")
}

fn as_i64(value: &Sql) -> i64 {
    match value {
        Sql::Integer(i) => *i,
        _ => 0,
    }
}

fn as_f64(value: &Sql) -> Option<f64> {
    match value {
        Sql::Real(f) => Some(*f),
        Sql::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

fn opt_f64(value: Option<f64>) -> Sql {
    value.map_or(Sql::Null, Sql::Real)
}

/// `{"click": 50, ...}` for all, successful and failed actions, keys in name order.
fn actions_by_type(conn: &Connection, run_id: i64) -> Result<(String, String, String)> {
    let mut stmt = conn
        .prepare(
            "SELECT action_type, COUNT(*), SUM(execution_success) FROM step_logs
             WHERE run_id = ?1 GROUP BY action_type ORDER BY action_type",
        )
        .ctx("computing run_stats")?;
    let rows = stmt
        .query_map([run_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .ctx("computing run_stats")?;
    let (mut all, mut ok, mut failed) = (Map::new(), Map::new(), Map::new());
    for row in rows {
        let (kind, count, succeeded) = row.ctx("computing run_stats")?;
        all.insert(kind.clone(), Value::from(count));
        if succeeded > 0 {
            ok.insert(kind.clone(), Value::from(succeeded));
        }
        if count > succeeded {
            failed.insert(kind, Value::from(count - succeeded));
        }
    }
    Ok((
        Value::Object(all).to_string(),
        Value::Object(ok).to_string(),
        Value::Object(failed).to_string(),
    ))
}

/// The largest shortest-path distance from the run's first screen over the transitions the run
/// took: how deep into the app the run got.
fn deepest_depth(conn: &Connection, run_id: i64) -> Result<i64> {
    let start: Option<i64> = conn
        .query_row(
            "SELECT screen_id FROM graph_persistence_outcomes WHERE run_id = ?1
             ORDER BY step_ordinal LIMIT 1",
            [run_id],
            |r| r.get(0),
        )
        .optional()
        .ctx("computing run_stats")?;
    let Some(start) = start else {
        return Ok(0);
    };
    let mut stmt = conn
        .prepare("SELECT from_screen_id, to_screen_id FROM transitions WHERE run_id = ?1")
        .ctx("computing run_stats")?;
    let rows = stmt
        .query_map([run_id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .ctx("computing run_stats")?;
    let mut next: HashMap<i64, Vec<i64>> = HashMap::new();
    for row in rows {
        let (from, to) = row.ctx("computing run_stats")?;
        next.entry(from).or_default().push(to);
    }
    let mut seen = HashSet::from([start]);
    let mut queue = VecDeque::from([(start, 0)]);
    let mut deepest = 0;
    while let Some((screen, depth)) = queue.pop_front() {
        deepest = deepest.max(depth);
        for &to in next.get(&screen).into_iter().flatten() {
            if seen.insert(to) {
                queue.push_back((to, depth + 1));
            }
        }
    }
    Ok(deepest)
}
