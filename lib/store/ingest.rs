//! The ingest: events → run_events, buffered per run until their step is complete, then
//! appended and projected (see `projection.rs`) in one transaction.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::{params, Connection, OptionalExtension};

use super::checkpoint::Checkpointer;
use super::projection::Projector;
use super::{host_name, stable_id, Context, Error, Result, Store, INGEST_CHECKPOINT_BYTES};
use crate::events::{Event, Line, Observation, RunEnded, RunStarted};
use crate::screen::ScreenModel;

/// Counts of one ingest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IngestStats {
    /// Events appended to the log (and projected).
    pub recorded: u64,
    /// Events already in the log, skipped.
    pub duplicates: u64,
    /// Transactions committed (one per step, or per group of complete steps).
    pub commits: u64,
    /// Runs droid-record opened for events that named none.
    pub runs_opened: u64,
    /// Step events (observation, decision, result) recorded for a run that had already ended:
    /// kept in its log and projected, while the run keeps the status and end of its `run_ended`.
    pub after_end: u64,
}

impl IngestStats {
    /// For people, when step events went to runs that had already ended.
    pub fn after_end_note(&self) -> Option<String> {
        (self.after_end > 0).then(|| {
            format!(
                "{} step events were recorded for runs that had already ended (kept, the runs \
                 stay ended)",
                self.after_end
            )
        })
    }
}

/// What pushing one line produced.
#[derive(Debug, Default)]
pub struct Pushed {
    /// A `run_started` line for a run opened for this event; write it before the event.
    pub announce: Option<String>,
}

/// Most bytes of events a group of steps holds before it is written, whatever
/// [`Ingest::group_commit`] allows: real observations can be ten times the bench's.
const GROUP_BYTES: u64 = 16 * 1024 * 1024;

/// An event waiting for its step to complete.
struct Pending {
    kind: String,
    key: String,
    step: Option<u64>,
    json: String,
    ts: Option<String>,
    event: Option<Event>,
    /// An observation's screen model, when its producer handed it on (see [`ScreenModel`]).
    model: Option<Arc<ScreenModel>>,
}

/// What the ingest knows about one run of the stream.
#[derive(Default)]
struct RunLog {
    row_id: Option<i64>,
    next_seq: i64,
    last_step: Option<u64>,
    pending: Vec<Pending>,
    expected_results: Option<usize>,
    results: usize,
    touched: bool,
    /// Its `run_ended` is in the log.
    ended: bool,
}

/// Feeds events into a [`Store`]. Events are buffered per run until their step is complete
/// (its decision's last result, the next observation, `run_ended`, or [`Ingest::finish`]), then
/// written in one transaction (see [`Ingest::group_commit`]). After an error, drop the ingest:
/// buffered events are lost.
pub struct Ingest<'s> {
    store: &'s Store,
    runs: HashMap<String, RunLog>,
    open_by_target: HashMap<(String, String), String>,
    last_run: Option<String>,
    projector: Projector,
    stats: IngestStats,
    /// Complete steps not written yet, in stream order.
    ready: Vec<(String, Vec<Pending>)>,
    /// Bytes of the events in `ready`.
    ready_bytes: u64,
    /// How many complete steps may share one transaction.
    group_steps: usize,
    /// Started by the first commit.
    checkpointer: Option<Checkpointer<'s>>,
}

impl Store {
    /// Starts feeding events into this store.
    pub fn ingest(&self) -> Ingest<'_> {
        Ingest {
            store: self,
            runs: HashMap::new(),
            open_by_target: HashMap::new(),
            last_run: None,
            projector: Projector::default(),
            stats: IngestStats::default(),
            ready: Vec::new(),
            ready_bytes: 0,
            group_steps: 1,
            checkpointer: None,
        }
    }

    /// Ends stale runs as ERROR: a `run_ended` event (status `ERROR`, the cleanup time as its
    /// `ts`, the reason) is appended to their log and projected. A run is stale when it is
    /// still RUNNING, no writer process of it is alive on this host, and nothing was recorded
    /// for it for `idle` (since its writer's last commit, else its newest event or its start).
    /// A hand-made pipe has no process alive between two steps, so the idle time is what keeps
    /// it. Runs whose writer is on another host are left alone. Returns the runs ended.
    pub fn cleanup(&self, idle: std::time::Duration) -> Result<Vec<String>> {
        // (run, writer pid, writer host, when it was last recorded)
        type Candidate = (String, Option<i64>, Option<String>, Option<String>);
        let candidates: Vec<Candidate> = {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT r.run_key, w.pid, w.host, COALESCE(w.updated_at,
                       (SELECT MAX(e.ts) FROM run_events e WHERE e.run_id = r.id), r.start_time)
                     FROM runs r LEFT JOIN run_writers w ON w.run_id = r.id
                     WHERE r.status = 'RUNNING' ORDER BY r.id",
                )
                .ctx("finding running runs")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .ctx("finding running runs")?;
            rows.collect::<rusqlite::Result<_>>()
                .ctx("finding running runs")?
        };
        let here = host_name();
        let now = chrono::Utc::now();
        let mut ingest = self.ingest();
        let mut ended = Vec::new();
        for (run, pid, host, last) in candidates {
            let idle_for = last
                .as_deref()
                .and_then(|ts| chrono::DateTime::parse_from_rfc3339(ts).ok())
                .and_then(|last| (now - last.with_timezone(&chrono::Utc)).to_std().ok());
            // A run recorded less than `idle` ago (or at an unreadable time) is not stale.
            let Some(idle_for) = idle_for.filter(|d| *d >= idle) else {
                continue;
            };
            let quiet = format!("nothing recorded for {} s", idle_for.as_secs());
            let reason = match (pid, host) {
                (Some(pid), Some(host)) if host == here => {
                    if writer_alive(pid) {
                        continue;
                    }
                    format!("cleanup: writer process {pid} on {host} is gone and {quiet}")
                }
                (Some(_), Some(_)) => continue,
                _ => format!("cleanup: no writer process recorded and {quiet}"),
            };
            let event = Event::RunEnded(RunEnded {
                run_id: run.clone(),
                ts: Some(crate::events::now_ts()),
                status: "ERROR".into(),
                reason: Some(reason),
                ..RunEnded::default()
            });
            ingest.push_event(event)?;
            ended.push(run);
        }
        ingest.finish()?;
        Ok(ended)
    }

    /// Runs left RUNNING by a crawl that is gone become ERROR at once: a run whose
    /// `run_started` names a driver process on this host (`driver.pid`, `driver.host`) that no
    /// longer runs. (A hand-made pipe has no driver: its runs are [`Store::cleanup`]'s.)
    pub fn cleanup_dead_drivers(&self) -> Result<Vec<String>> {
        let drivers: Vec<(String, Option<i64>, Option<String>)> = {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT r.run_key, json_extract(e.json, '$.driver.pid'),
                       json_extract(e.json, '$.driver.host')
                     FROM runs r JOIN run_events e ON e.run_id = r.id AND e.type = 'run_started'
                     WHERE r.status = 'RUNNING' ORDER BY r.id",
                )
                .ctx("finding running runs")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .ctx("finding running runs")?;
            rows.collect::<rusqlite::Result<_>>()
                .ctx("finding running runs")?
        };
        let here = host_name();
        let mut ingest = self.ingest();
        let mut ended = Vec::new();
        for (run, pid, host) in drivers {
            let (Some(pid), Some(host)) = (pid, host) else {
                continue;
            };
            if host != here || writer_alive(pid) {
                continue;
            }
            let event = Event::RunEnded(RunEnded {
                run_id: run.clone(),
                ts: Some(crate::events::now_ts()),
                status: "ERROR".into(),
                reason: Some(format!(
                    "the crawl driving it (process {pid} on {host}) is gone"
                )),
                ..RunEnded::default()
            });
            ingest.push_event(event)?;
            ended.push(run);
        }
        ingest.finish()?;
        Ok(ended)
    }
}

fn writer_alive(pid: i64) -> bool {
    if pid == i64::from(std::process::id()) {
        return true;
    }
    let proc = std::path::Path::new("/proc");
    // Without /proc we cannot tell; a live run must never be marked ERROR by mistake.
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

impl Ingest<'_> {
    /// Lets up to `steps` complete steps share one transaction (at least 1). A step is never
    /// split; call [`Ingest::commit`] whenever the input would block, so a live stream still
    /// commits each step as it completes and only a backlog is written in groups.
    pub fn group_commit(mut self, steps: usize) -> Self {
        self.group_steps = steps.max(1);
        self
    }

    /// Counts so far.
    pub fn stats(&self) -> IngestStats {
        self.stats
    }

    /// Takes one line of the stream (its decoded event is taken out of it). Unknown types are
    /// kept in the log of the run the last event went to (and not projected).
    pub fn push(&mut self, line: &mut Line) -> Result<Pushed> {
        match line.event.take() {
            Some(event) => self.push_parsed(event, Some(&line.raw), None),
            None => {
                if let Some(run) = self.last_run.clone() {
                    let kind = serde_json::from_str::<serde_json::Value>(&line.raw)
                        .ok()
                        .and_then(|v| v.get("type")?.as_str().map(str::to_string))
                        .unwrap_or_default();
                    let log = self.run_log(&run)?;
                    log.pending.push(Pending {
                        key: format!("other:{}", stable_id(&[&line.raw])),
                        kind,
                        step: None,
                        json: line.raw.clone(),
                        ts: None,
                        event: None,
                        model: None,
                    });
                }
                Ok(Pushed::default())
            }
        }
    }

    /// Takes one event built in code.
    pub fn push_event(&mut self, event: Event) -> Result<Pushed> {
        self.push_parsed(event, None, None)
    }

    /// Takes an observation built in code with the screen model its producer computed for it,
    /// so the projection does not analyse the screen again.
    pub fn push_observed(
        &mut self,
        observation: Observation,
        model: Arc<ScreenModel>,
    ) -> Result<Pushed> {
        self.push_parsed(Event::Observation(Box::new(observation)), None, Some(model))
    }

    fn push_parsed(
        &mut self,
        mut event: Event,
        raw: Option<&str>,
        model: Option<Arc<ScreenModel>>,
    ) -> Result<Pushed> {
        let (run, announce) = self.resolve_run(&event)?;
        let log = self.run_log(&run)?;
        let mut stamped = false;
        if event.run_id().is_none() {
            set_run_id(&mut event, &run);
            stamped = true;
        }
        let step = match (&event, event.step()) {
            (Event::Observation(_), None) => Some(log.last_step.map_or(1, |s| s + 1)),
            (Event::RunStarted(_) | Event::RunEnded(_), _) | (_, Some(_)) => None,
            (_, None) => log.last_step,
        };
        if let Some(step) = step {
            set_step(&mut event, step);
            stamped = true;
        }
        let json = match raw {
            Some(raw) if !stamped => raw.to_string(),
            _ => event.to_line(),
        };
        let step = event.step();
        if matches!(event, Event::Observation(_) | Event::RunStarted(_)) {
            self.complete(&run)?;
        }
        let mut completes_step = matches!(event, Event::RunStarted(_) | Event::RunEnded(_));
        if let Event::RunStarted(e) = &event {
            let target = (
                e.device.clone().unwrap_or_default(),
                e.package.clone().unwrap_or_default(),
            );
            self.open_by_target.insert(target, run.clone());
        }
        let log = self.run_log(&run)?;
        if let (Event::Observation(_), Some(step)) = (&event, step) {
            log.last_step = Some(log.last_step.map_or(step, |s| s.max(step)));
        }
        match &event {
            Event::Decision(d) => {
                log.expected_results = Some(d.actions.len());
                log.results = 0;
                completes_step |= d.actions.is_empty();
            }
            Event::Result(_) => {
                log.results += 1;
                completes_step |= log.expected_results.is_some_and(|n| log.results >= n);
            }
            _ => {}
        }
        log.pending.push(Pending {
            kind: event.type_name().to_string(),
            key: event_key(&event, &json),
            step,
            ts: event_ts(&event).map(str::to_string),
            json,
            event: Some(event),
            model,
        });
        self.last_run = Some(run.clone());
        if completes_step {
            self.complete(&run)?;
        }
        Ok(Pushed { announce })
    }

    /// Commits everything buffered and refreshes `run_stats` of the runs that changed.
    pub fn finish(mut self) -> Result<IngestStats> {
        let mut runs: Vec<String> = self.runs.keys().cloned().collect();
        runs.sort();
        for run in &runs {
            self.complete(run)?;
        }
        self.commit()?;
        let touched: Vec<i64> = self
            .runs
            .values()
            .filter(|log| log.touched)
            .filter_map(|log| log.row_id)
            .collect();
        if !touched.is_empty() {
            let projector = &mut self.projector;
            self.store.write(|conn| {
                for run_id in touched {
                    projector.refresh_stats(conn, run_id)?;
                }
                Ok(())
            })?;
        }
        Ok(self.stats)
    }

    /// Which run an event belongs to; opens one (returning its `run_started` line) when the
    /// event names none and no open run of its device and package exists.
    fn resolve_run(&mut self, event: &Event) -> Result<(String, Option<String>)> {
        if let Some(run) = event.run_id() {
            return Ok((run.to_string(), None));
        }
        let target = match event {
            Event::Observation(o) => (
                o.device.clone().unwrap_or_default(),
                o.package.clone().unwrap_or_default(),
            ),
            _ => match &self.last_run {
                Some(run) => return Ok((run.clone(), None)),
                None => (String::new(), String::new()),
            },
        };
        if let Some(run) = self.open_by_target.get(&target) {
            return Ok((run.clone(), None));
        }
        let open: Option<String> = self
            .store
            .conn
            .query_row(
                "SELECT run_key FROM runs WHERE status = 'RUNNING' AND device_id = ?1
                 AND app_package = ?2 ORDER BY id DESC LIMIT 1",
                params![target.0, target.1],
                |r| r.get(0),
            )
            .optional()
            .ctx("finding an open run")?;
        if let Some(run) = open {
            self.open_by_target.insert(target, run.clone());
            return Ok((run, None));
        }
        let run = crate::events::new_run_id();
        let started = Event::RunStarted(RunStarted {
            run_id: run.clone(),
            ts: Some(crate::events::now_ts()),
            device: Some(target.0.clone()).filter(|d| !d.is_empty()),
            package: Some(target.1.clone()).filter(|p| !p.is_empty()),
            ..RunStarted::default()
        });
        let line = started.to_line();
        self.push_parsed(started, None, None)?;
        self.stats.runs_opened += 1;
        Ok((run, Some(line)))
    }

    fn run_log(&mut self, run: &str) -> Result<&mut RunLog> {
        if !self.runs.contains_key(run) {
            let log = load_run_log(&self.store.conn, run)?;
            self.runs.insert(run.to_string(), log);
        }
        self.runs
            .get_mut(run)
            .ok_or_else(|| Error::NoRun(run.to_string()))
    }

    /// Ends a run's current step: its buffered events are ready to be written, and are
    /// written now unless group commit allows more steps to share the transaction.
    fn complete(&mut self, run: &str) -> Result<()> {
        let Some(log) = self.runs.get_mut(run) else {
            return Ok(());
        };
        if log.pending.is_empty() {
            return Ok(());
        }
        let step = std::mem::take(&mut log.pending);
        log.expected_results = None;
        log.results = 0;
        self.ready_bytes += step
            .iter()
            .map(|event| event.json.len() as u64)
            .sum::<u64>();
        self.ready.push((run.to_string(), step));
        if self.ready.len() >= self.group_steps || self.ready_bytes >= GROUP_BYTES {
            self.commit()?;
        }
        Ok(())
    }

    /// Writes every complete step not written yet, in one transaction.
    pub fn commit(&mut self) -> Result<()> {
        if self.ready.is_empty() {
            return Ok(());
        }
        let checkpointer = match &mut self.checkpointer {
            Some(checkpointer) => checkpointer,
            none => none.insert(Checkpointer::start(self.store, INGEST_CHECKPOINT_BYTES)?),
        };
        let ready = std::mem::take(&mut self.ready);
        self.ready_bytes = 0;
        let store = self.store;
        let runs = &mut self.runs;
        let projector = &mut self.projector;
        let outcome = store.write(|conn| {
            let (mut recorded, mut recorded_bytes, mut after_end) = (0, 0, 0);
            let mut ended = Vec::new();
            let mut written_runs = Vec::new();
            for (run, events) in &ready {
                let Some(log) = runs.get_mut(run) else {
                    continue;
                };
                let run_id = match log.row_id {
                    Some(id) => id,
                    None => ensure_run(conn, run, events)?,
                };
                log.row_id = Some(run_id);
                let mut new_in_step = 0;
                for event in events {
                    let seq = log.next_seq;
                    let inserted = conn
                        .prepare_cached(
                            "INSERT OR IGNORE INTO run_events
                             (run_id, seq, type, event_key, step, json, ts)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        )
                        .and_then(|mut stmt| {
                            stmt.execute(params![
                                run_id,
                                seq,
                                event.kind,
                                event.key,
                                event.step.map(|s| s as i64),
                                event.json,
                                event.ts
                            ])
                        })
                        .ctx("appending to run_events")?;
                    if inserted == 0 {
                        continue;
                    }
                    log.next_seq += 1;
                    new_in_step += 1;
                    recorded_bytes += event.json.len() as u64;
                    if let Some(parsed) = &event.event {
                        match parsed {
                            Event::RunEnded(_) => {
                                ended.push(run_id);
                                log.ended = true;
                            }
                            Event::Observation(_) | Event::Decision(_) | Event::Result(_)
                                if log.ended =>
                            {
                                after_end += 1;
                            }
                            _ => {}
                        }
                        projector.apply(conn, run_id, run, parsed, event.model.as_deref(), seq)?;
                    }
                }
                if new_in_step > 0 && !written_runs.contains(&run_id) {
                    written_runs.push(run_id);
                }
                log.touched |= new_in_step > 0;
                recorded += new_in_step;
            }
            // Who wrote last, and when: `cleanup` tells a live run from a stale one by it.
            let now = crate::events::now_ts();
            for run_id in written_runs {
                conn.prepare_cached(
                    "INSERT INTO run_writers (run_id, pid, host, updated_at)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT(run_id) DO UPDATE SET pid = excluded.pid,
                     host = excluded.host, updated_at = excluded.updated_at",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![run_id, std::process::id(), host_name(), now])
                })
                .ctx("recording the writer")?;
            }
            projector.flush(conn)?;
            for run_id in ended {
                projector.refresh_stats(conn, run_id)?;
            }
            Ok((recorded, recorded_bytes, after_end))
        });
        match outcome {
            Ok((recorded, recorded_bytes, after_end)) => {
                self.stats.after_end += after_end;
                let total: u64 = ready.iter().map(|(_, events)| events.len() as u64).sum();
                self.stats.recorded += recorded;
                self.stats.duplicates += total - recorded;
                self.stats.commits += 1;
                checkpointer.committed(recorded_bytes)
            }
            Err(err) => {
                // What was cached may describe rows that were rolled back.
                self.runs.clear();
                self.projector = Projector::default();
                Err(err)
            }
        }
    }
}

/// What the log already holds of a run (nothing when it is new).
fn load_run_log(conn: &Connection, run: &str) -> Result<RunLog> {
    let known: Option<(i64, i64, Option<i64>, bool)> = conn
        .query_row(
            "SELECT r.id, COALESCE(MAX(e.seq), 0), MAX(e.step),
             COALESCE(MAX(e.type = 'run_ended'), 0) FROM runs r
             LEFT JOIN run_events e ON e.run_id = r.id WHERE r.run_key = ?1 GROUP BY r.id",
            [run],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .ctx("loading a run")?;
    Ok(match known {
        Some((row_id, max_seq, last_step, ended)) => RunLog {
            row_id: Some(row_id),
            next_seq: max_seq + 1,
            last_step: last_step.map(|s| s.max(0) as u64),
            ended,
            ..RunLog::default()
        },
        None => RunLog {
            next_seq: 1,
            ..RunLog::default()
        },
    })
}

fn ensure_run(conn: &Connection, run: &str, pending: &[Pending]) -> Result<i64> {
    let mut device = String::new();
    let mut package = String::new();
    let mut start = None;
    for event in pending {
        start = start.or(event.ts.clone());
        let (d, p) = match &event.event {
            Some(Event::RunStarted(e)) => (e.device.clone(), e.package.clone()),
            Some(Event::Observation(o)) => (o.device.clone(), o.package.clone()),
            _ => (None, None),
        };
        if device.is_empty() {
            device = d.unwrap_or_default();
        }
        if package.is_empty() {
            package = p.unwrap_or_default();
        }
    }
    conn.execute(
        "INSERT OR IGNORE INTO runs (run_key, device_id, app_package, start_time, status)
         VALUES (?1, ?2, ?3, ?4, 'RUNNING')",
        params![
            run,
            device,
            package,
            start.unwrap_or_else(crate::events::now_ts)
        ],
    )
    .ctx("creating the run")?;
    conn.query_row("SELECT id FROM runs WHERE run_key = ?1", [run], |r| {
        r.get(0)
    })
    .ctx("creating the run")
}

/// The event's identity within its run: a known key is a duplicate.
fn event_key(event: &Event, json: &str) -> String {
    let kind = event.type_name();
    match (event, event.step()) {
        (Event::RunStarted(_) | Event::RunEnded(_), _) => kind.to_string(),
        (Event::Observation(_), Some(step)) => format!("obs:{step}"),
        (Event::Decision(_), Some(step)) => format!("dec:{step}"),
        (Event::Result(r), Some(step)) => format!("res:{step}:{}", r.index),
        (_, Some(step)) => format!("{kind}:{step}:{}", stable_id(&[json])),
        (_, None) => format!("{kind}:-:{}", stable_id(&[json])),
    }
}

fn event_ts(event: &Event) -> Option<&str> {
    match event {
        Event::RunStarted(e) => e.ts.as_deref(),
        Event::RunEnded(e) => e.ts.as_deref(),
        Event::Observation(e) => e.ts.as_deref(),
        Event::Decision(e) => e.ts.as_deref(),
        Event::Result(e) => e.ts.as_deref(),
        Event::Note(e) => e.ts.as_deref(),
    }
}

fn set_run_id(event: &mut Event, run: &str) {
    let slot = match event {
        Event::RunStarted(_) | Event::RunEnded(_) => return,
        Event::Observation(e) => &mut e.run_id,
        Event::Decision(e) => &mut e.run_id,
        Event::Result(e) => &mut e.run_id,
        Event::Note(e) => &mut e.run_id,
    };
    *slot = Some(run.to_string());
}

fn set_step(event: &mut Event, step: u64) {
    let slot = match event {
        Event::RunStarted(_) | Event::RunEnded(_) => return,
        Event::Observation(e) => &mut e.step,
        Event::Decision(e) => &mut e.step,
        Event::Result(e) => &mut e.step,
        Event::Note(e) => &mut e.step,
    };
    *slot = Some(step);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{ActionResult, Observation};

    #[test]
    fn event_keys_name_the_step_and_index() {
        let result = Event::Result(ActionResult {
            step: Some(4),
            index: 2,
            ..ActionResult::default()
        });
        assert_eq!(event_key(&result, ""), "res:4:2");
        assert_eq!(
            event_key(
                &Event::Observation(Box::new(Observation {
                    step: Some(7),
                    ..Observation::default()
                })),
                ""
            ),
            "obs:7"
        );
        let note = Event::Note(crate::events::Note {
            kind: "stuck".into(),
            ..crate::events::Note::default()
        });
        assert_ne!(event_key(&note, "a"), event_key(&note, "b"));
        assert!(event_key(&note, "a").starts_with("note:-:"));
    }
}
