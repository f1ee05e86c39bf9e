//! The projection: events → run_events + tables, one transaction per step.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension};

use super::checkpoint::Checkpointer;
use super::held::{Held, OutcomeRow, StepRow};
use super::stats::{self, Tally};
use super::{host_name, stable_id, Context, Error, Result, Store, INGEST_CHECKPOINT_BYTES};
use crate::events::{
    ActionResult, AiMeta, Decision, Event, Line, Note, Observation, RunEnded, RunStarted,
};
use crate::hash::hamming;
use crate::ui::{possible_actions, PossibleAction};

/// Largest perceptual distance at which two captures of one activity are the same screen.
pub(crate) const SAME_SCREEN_DISTANCE: u32 = 5;

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
    writer_recorded: bool,
    touched: bool,
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

    /// Runs left RUNNING by a writer process that is gone become ERROR: a `run_ended` event
    /// (status `ERROR`, the cleanup time as its `ts`) is appended to their log and projected.
    /// Runs whose writer is on another host are left alone. Returns the runs ended.
    pub fn cleanup(&self) -> Result<Vec<String>> {
        let candidates: Vec<(String, Option<i64>, Option<String>)> = {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT r.run_key, w.pid, w.host FROM runs r
                     LEFT JOIN run_writers w ON w.run_id = r.id
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
        for (run, pid, host) in candidates {
            let reason = match (pid, host) {
                (Some(pid), Some(host)) if host == here => {
                    if writer_alive(pid) {
                        continue;
                    }
                    format!("cleanup: writer process {pid} on {host} is gone")
                }
                (Some(_), Some(_)) => continue,
                _ => "cleanup: no writer process recorded".to_string(),
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
            Some(event) => self.push_parsed(event, Some(&line.raw)),
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
                    });
                }
                Ok(Pushed::default())
            }
        }
    }

    /// Takes one event built in code.
    pub fn push_event(&mut self, event: Event) -> Result<Pushed> {
        self.push_parsed(event, None)
    }

    fn push_parsed(&mut self, mut event: Event, raw: Option<&str>) -> Result<Pushed> {
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
        let run = format!(
            "run-{}-{:06x}",
            chrono::Utc::now().format("%Y%m%dT%H%M%S"),
            rand::random::<u32>() & 0xff_ffff
        );
        let started = Event::RunStarted(RunStarted {
            run_id: run.clone(),
            ts: Some(crate::events::now_ts()),
            device: Some(target.0.clone()).filter(|d| !d.is_empty()),
            package: Some(target.1.clone()).filter(|p| !p.is_empty()),
            ..RunStarted::default()
        });
        let line = started.to_line();
        self.push_parsed(started, None)?;
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
            let (mut recorded, mut recorded_bytes) = (0, 0);
            let mut ended = Vec::new();
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
                        if matches!(parsed, Event::RunEnded(_)) {
                            ended.push(run_id);
                        }
                        projector.apply(conn, run_id, run, parsed, seq)?;
                    }
                }
                if new_in_step > 0 && !log.writer_recorded {
                    conn.execute(
                        "INSERT INTO run_writers (run_id, pid, host, updated_at)
                         VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT(run_id) DO UPDATE SET pid = excluded.pid,
                         host = excluded.host, updated_at = excluded.updated_at",
                        params![
                            run_id,
                            std::process::id(),
                            host_name(),
                            crate::events::now_ts()
                        ],
                    )
                    .ctx("recording the writer")?;
                    log.writer_recorded = true;
                }
                log.touched |= new_in_step > 0;
                recorded += new_in_step;
            }
            projector.flush(conn)?;
            for run_id in ended {
                projector.refresh_stats(conn, run_id)?;
            }
            Ok((recorded, recorded_bytes))
        });
        match outcome {
            Ok((recorded, recorded_bytes)) => {
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
    let known: Option<(i64, i64, Option<i64>)> = conn
        .query_row(
            "SELECT r.id, COALESCE(MAX(e.seq), 0), MAX(e.step) FROM runs r
             LEFT JOIN run_events e ON e.run_id = r.id WHERE r.run_key = ?1 GROUP BY r.id",
            [run],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .ctx("loading a run")?;
    Ok(match known {
        Some((row_id, max_seq, last_step)) => RunLog {
            row_id: Some(row_id),
            next_seq: max_seq + 1,
            last_step: last_step.map(|s| s.max(0) as u64),
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

/// Replays every stored event into an empty projection, in the order they were recorded, then
/// refreshes every run's stats. Returns the number of events replayed.
pub(crate) fn replay_all(conn: &Connection) -> Result<u64> {
    let events: Vec<(i64, String, i64, String)> = {
        let mut stmt = conn
            .prepare(
                "SELECT e.run_id, r.run_key, e.seq, e.json FROM run_events e
                 JOIN runs r ON r.id = e.run_id ORDER BY e.id",
            )
            .ctx("reading run_events")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .ctx("reading run_events")?;
        rows.collect::<rusqlite::Result<_>>()
            .ctx("reading run_events")?
    };
    let mut projector = Projector::default();
    for (run_id, run, seq, json) in &events {
        let event = Event::from_line(json).map_err(|e| Error::StoredEvent {
            run: run.clone(),
            seq: *seq,
            reason: e.to_string(),
        })?;
        if let Some(event) = event {
            projector.apply(conn, *run_id, run, &event, *seq)?;
        }
    }
    projector.flush(conn)?;
    let runs: Vec<i64> = {
        let mut stmt = conn
            .prepare("SELECT id FROM runs ORDER BY id")
            .ctx("listing runs")?;
        let rows = stmt.query_map([], |r| r.get(0)).ctx("listing runs")?;
        rows.collect::<rusqlite::Result<_>>().ctx("listing runs")?
    };
    for run_id in runs {
        projector.refresh_stats(conn, run_id)?;
    }
    Ok(events.len() as u64)
}

/// How one observation is identified as a screen.
pub(crate) struct ScreenIdentity {
    pub package: String,
    pub activity: String,
    pub phash: Option<u64>,
    pub composite: String,
    pub visual: String,
    pub layout: Option<String>,
}

impl ScreenIdentity {
    /// The seed rule's inputs: activity and perceptual hash; without a perceptual hash, the
    /// layout hash, and without that, the widget signatures on screen.
    pub fn of(o: &Observation) -> ScreenIdentity {
        let hash = o.hash.clone().unwrap_or_default();
        let activity = o.activity.clone().unwrap_or_default();
        let phash = hash
            .phash
            .as_deref()
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        let visual = phash.map(|p| format!("{p:016x}")).unwrap_or_default();
        let composite = match (&hash.screen_key, phash, &hash.layout_hash) {
            (Some(key), Some(_), _) => key.clone(),
            (_, Some(_), _) => format!("{activity}|{visual}"),
            (_, None, Some(layout)) => format!("{activity}|layout:{layout}"),
            (_, None, None) => {
                let signatures: Vec<&str> =
                    o.elements.iter().map(|e| e.signature.as_str()).collect();
                format!("{activity}|elements:{}", stable_id(&signatures))
            }
        };
        ScreenIdentity {
            package: o.package.clone().unwrap_or_default(),
            activity,
            phash,
            composite,
            visual,
            layout: hash.layout_hash,
        }
    }

    /// The known screen this identity matches: the nearest perceptual hash within
    /// [`SAME_SCREEN_DISTANCE`] among screens of the same package and activity (first seen wins
    /// a tie), else the same composite key.
    pub fn find(&self, conn: &Connection, candidates: &[(i64, u64)]) -> Result<Option<i64>> {
        if let Some(phash) = self.phash {
            let nearest = candidates
                .iter()
                .map(|&(id, other)| (hamming(phash, other), id))
                .filter(|&(distance, _)| distance <= SAME_SCREEN_DISTANCE)
                .min();
            if let Some((_, id)) = nearest {
                return Ok(Some(id));
            }
        }
        conn.prepare_cached("SELECT id FROM screens WHERE composite_hash = ?1")
            .and_then(|mut stmt| stmt.query_row([&self.composite], |r| r.get(0)).optional())
            .ctx("finding a screen")
    }

    /// Perceptual hashes of the known screens of this package and activity.
    pub fn candidates(&self, conn: &Connection) -> Result<Vec<(i64, u64)>> {
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, visual_hash FROM screens WHERE package = ?1 AND activity_name = ?2",
            )
            .ctx("loading screens")?;
        let rows = stmt
            .query_map(params![self.package, self.activity], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .ctx("loading screens")?;
        let mut out = Vec::new();
        for row in rows {
            let (id, visual) = row.ctx("loading screens")?;
            if let Ok(phash) = u64::from_str_radix(&visual, 16) {
                out.push((id, phash));
            }
        }
        Ok(out)
    }
}

/// The step of a run being projected.
#[derive(Clone)]
struct StepState {
    step: u64,
    screen_id: i64,
    composite: String,
    screenshot: Option<String>,
    decision: Option<Decision>,
    /// The last successful action of the step: (action id, verb).
    last_action: Option<(String, String)>,
}

#[derive(Default)]
struct RunProjection {
    current: Option<StepState>,
    steps: i64,
    screens: HashSet<i64>,
    /// The decisions and results this projector projected, for `run_stats`.
    tally: Tally,
}

/// Projects events into the tables; caches what it looked up.
#[derive(Default)]
pub(crate) struct Projector {
    screens: HashMap<(String, String), Vec<(i64, u64)>>,
    composites: HashMap<i64, String>,
    /// Fingerprints of (screen, actionable elements) already registered: re-inserting them
    /// would change nothing.
    registered: HashSet<u64>,
    runs: HashMap<i64, RunProjection>,
    /// Step and outcome rows not written yet; [`Projector::flush`] writes them.
    held: Held,
}

impl Projector {
    pub fn apply(
        &mut self,
        conn: &Connection,
        run_id: i64,
        run: &str,
        event: &Event,
        seq: i64,
    ) -> Result<()> {
        match event {
            Event::RunStarted(e) => {
                conn.execute(
                    "UPDATE runs SET device_id = COALESCE(?2, device_id),
                     app_package = COALESCE(?3, app_package), start_time = COALESCE(?4, start_time),
                     ai_provider = COALESCE(?5, ai_provider), ai_model = COALESCE(?6, ai_model),
                     session_path = COALESCE(?7, session_path) WHERE id = ?1",
                    params![
                        run_id,
                        e.device,
                        e.package,
                        e.ts,
                        e.decider,
                        e.model,
                        e.session_dir
                    ],
                )
                .ctx("projecting run_started")?;
            }
            Event::RunEnded(e) => {
                conn.execute(
                    "UPDATE runs SET status = ?2, end_time = COALESCE(?3, end_time),
                     session_path = COALESCE(?4, session_path) WHERE id = ?1",
                    params![run_id, e.status, e.ts, e.session_dir],
                )
                .ctx("projecting run_ended")?;
            }
            Event::Observation(o) => self.observe(conn, run_id, run, o, seq)?,
            Event::Decision(d) => {
                self.run(conn, run_id)?.tally.decision(d);
                self.decide(conn, run_id, d)?;
            }
            Event::Result(r) => {
                self.run(conn, run_id)?.tally.result(r);
                self.act(conn, run_id, r)?;
            }
            Event::Note(note) if note.kind == "error" => self.stopped(conn, run_id, note)?,
            Event::Note(_) => {}
        }
        Ok(())
    }

    /// Writes the rows held back: before the transaction commits and before anything reads
    /// `step_logs` or `graph_persistence_outcomes`.
    pub fn flush(&mut self, conn: &Connection) -> Result<()> {
        self.held.flush(conn)
    }

    /// Writes the rows held back and refreshes the run's `run_stats`.
    pub fn refresh_stats(&mut self, conn: &Connection, run_id: i64) -> Result<()> {
        self.flush(conn)?;
        let tally = self.runs.get(&run_id).map(|run| &run.tally);
        stats::refresh(conn, run_id, tally)
    }

    fn run(&mut self, conn: &Connection, run_id: i64) -> Result<&mut RunProjection> {
        run_projection(&mut self.runs, conn, run_id)
    }

    fn observe(
        &mut self,
        conn: &Connection,
        run_id: i64,
        run: &str,
        o: &Observation,
        seq: i64,
    ) -> Result<()> {
        let step = o.step.unwrap_or(0);
        let ts = o.ts.clone().unwrap_or_default();
        // Load what earlier commits projected before this observation adds to it.
        self.run(conn, run_id)?;
        let identity = ScreenIdentity::of(o);
        let cache_key = (identity.package.clone(), identity.activity.clone());
        if !self.screens.contains_key(&cache_key) {
            let loaded = identity.candidates(conn)?;
            self.screens.insert(cache_key.clone(), loaded);
        }
        let candidates = &self.screens[&cache_key];
        let (screen_id, kind) = match identity.find(conn, candidates)? {
            Some(id) => {
                conn.prepare_cached(
                    "UPDATE screens SET seen_count = seen_count + 1, latest_seen_run_id = ?2
                     WHERE id = ?1",
                )
                .and_then(|mut s| s.execute(params![id, run_id]))
                .ctx("updating a screen")?;
                (id, "mapped")
            }
            None => {
                conn.prepare_cached(
                    "INSERT INTO screens (composite_hash, visual_hash, screenshot_path,
                     activity_name, first_seen_run_id, first_seen_step, package, layout_hash,
                     seen_count, latest_seen_run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?5)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        identity.composite,
                        identity.visual,
                        o.screenshot_path,
                        identity.activity,
                        run_id,
                        step as i64,
                        identity.package,
                        identity.layout
                    ])
                })
                .ctx("inserting a screen")?;
                let id = conn.last_insert_rowid();
                if let (Some(phash), Some(list)) =
                    (identity.phash, self.screens.get_mut(&cache_key))
                {
                    list.push((id, phash));
                }
                (id, "discovered")
            }
        };
        let composite = match self.composites.get(&screen_id) {
            Some(composite) => composite.clone(),
            None => {
                let composite: String = conn
                    .prepare_cached("SELECT composite_hash FROM screens WHERE id = ?1")
                    .and_then(|mut s| s.query_row([screen_id], |r| r.get(0)))
                    .ctx("reading a screen")?;
                self.composites.insert(screen_id, composite.clone());
                composite
            }
        };
        self.held.outcome(OutcomeRow {
            outcome_id: stable_id(&[run, &step.to_string(), kind]),
            run_id,
            step: step as i64,
            screen_id,
            action_id: None,
            to_screen: None,
            kind,
            seq,
            ts: ts.clone(),
        });
        if self.registered.insert(actions_fingerprint(screen_id, o)) {
            register_actions(conn, screen_id, &composite, o, &ts)?;
        }

        let state = self.run(conn, run_id)?;
        if let Some(previous) = state.current.take() {
            if previous.step != step {
                link(
                    conn,
                    &mut self.held,
                    run_id,
                    &previous,
                    screen_id,
                    &composite,
                    &ts,
                )?;
            }
        }
        let state = self.run(conn, run_id)?;
        state.steps += 1;
        state.screens.insert(screen_id);
        let (steps, screens) = (state.steps, state.screens.len() as i64);
        state.current = Some(StepState {
            step,
            screen_id,
            composite,
            screenshot: o.screenshot_path.clone(),
            decision: None,
            last_action: None,
        });
        conn.prepare_cached(
            "UPDATE runs SET total_steps = ?2, unique_screens = ?3,
             start_activity = COALESCE(start_activity, ?4) WHERE id = ?1",
        )
        .and_then(|mut s| s.execute(params![run_id, steps, screens, o.activity]))
        .ctx("updating the run")?;
        Ok(())
    }

    fn decide(&mut self, conn: &Connection, run_id: i64, d: &Decision) -> Result<()> {
        let state = self.run(conn, run_id)?;
        let screenshot = match state.current.as_mut() {
            Some(current) if d.step.is_none_or(|s| s == current.step) => {
                current.decision = Some(d.clone());
                current.screenshot.clone()
            }
            _ => None,
        };
        let Some(ai) = &d.ai else {
            return Ok(());
        };
        let parsed = serde_json::to_string(&d.actions).ok();
        let step = d.step.unwrap_or(0);
        record_ai(conn, run_id, step, d.ts.as_deref(), ai, screenshot, parsed)
    }

    /// A stage that stopped on a model failure (droid-decide's note of kind `error`) leaves its
    /// last call in `data.ai`: it is an AI interaction too, a failed one.
    fn stopped(&mut self, conn: &Connection, run_id: i64, note: &Note) -> Result<()> {
        let Some(ai) = note
            .data
            .as_ref()
            .and_then(|data| data.get("ai"))
            .and_then(|ai| serde_json::from_value::<AiMeta>(ai.clone()).ok())
        else {
            return Ok(());
        };
        let screenshot = self
            .run(conn, run_id)?
            .current
            .as_ref()
            .filter(|current| note.step.is_none_or(|s| s == current.step))
            .and_then(|current| current.screenshot.clone());
        let step = note.step.unwrap_or(0);
        record_ai(
            conn,
            run_id,
            step,
            note.ts.as_deref(),
            &ai,
            screenshot,
            None,
        )
    }

    fn act(&mut self, conn: &Connection, run_id: i64, r: &ActionResult) -> Result<()> {
        // Not `self.run`: the step's state and the held rows are borrowed together.
        let state = run_projection(&mut self.runs, conn, run_id)?;
        let current = match state.current.as_mut() {
            Some(current) if r.step.is_none_or(|s| s == current.step) => Some(current),
            _ => None,
        };
        let decision = current.as_ref().and_then(|c| c.decision.clone());
        let planned = decision
            .as_ref()
            .and_then(|d| d.actions.get(r.index as usize));
        let ai = decision.as_ref().and_then(|d| d.ai.as_ref());
        let ts =
            r.ts.clone()
                .or_else(|| decision.as_ref().and_then(|d| d.ts.clone()))
                .unwrap_or_default();
        let verb = r.action_type.as_str();
        let target_key = match (&r.target_signature, r.tap_point) {
            (Some(signature), _) => signature.clone(),
            (None, Some([x, y])) if verb != "back" => format!("point:{x},{y}"),
            _ => String::new(),
        };
        let from_screen = current.as_ref().map(|c| c.screen_id);
        if let Some(current) = current {
            let action_id = stable_id(&[&current.composite, verb, &target_key]);
            conn.prepare_cached(
                "INSERT OR IGNORE INTO actions (action_id, screen_id, verb, target_key, origin,
                 tap_x, tap_y, input_payload, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    action_id,
                    current.screen_id,
                    verb,
                    target_key,
                    r.origin.map(|o| format!("{o:?}").to_lowercase()),
                    r.tap_point.map(|p| p[0]),
                    r.tap_point.map(|p| p[1]),
                    planned.and_then(|a| a.input_text.as_ref()).map(|t| serde_json::Value::from(t.as_str()).to_string()),
                    ts
                ])
            })
            .ctx("recording an executed action")?;
            conn.prepare_cached(
                "INSERT INTO action_execution_coverage (run_id, action_id, attempted_count,
                 succeeded_count, failed_count, updated_at) VALUES (?1, ?2, 1, ?3, ?4, ?5)
                 ON CONFLICT(run_id, action_id) DO UPDATE SET
                 attempted_count = attempted_count + 1,
                 succeeded_count = succeeded_count + excluded.succeeded_count,
                 failed_count = failed_count + excluded.failed_count,
                 updated_at = excluded.updated_at",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run_id,
                    action_id,
                    i64::from(r.success),
                    i64::from(!r.success),
                    ts
                ])
            })
            .ctx("counting coverage")?;
            if r.success {
                self.held
                    .set_action(conn, run_id, current.step as i64, &action_id)?;
                current.last_action = Some((action_id, verb.to_string()));
            }
        }
        let bbox = planned
            .and_then(|a| a.target_bounding_box.as_ref())
            .and_then(|b| serde_json::to_string(b).ok());
        self.held.step(StepRow {
            run_id,
            step: r.step.unwrap_or(0) as i64,
            ts,
            from_screen,
            to_screen: None,
            action_type: verb.to_string(),
            description: planned
                .and_then(|a| a.action_desc.clone())
                .or_else(|| r.target.clone()),
            bbox,
            input_text: planned.and_then(|a| a.input_text.clone()),
            success: r.success,
            error: r.error_message.clone(),
            duration_ms: r.duration_ms as f64,
            ai_latency_ms: ai.map(|a| a.latency_ms as f64),
            reasoning: planned.and_then(|a| a.reasoning.clone()),
            was_retried: ai.is_some_and(|a| a.retries > 0),
            retry_count: ai.map_or(0, |a| a.retries),
        });
        Ok(())
    }
}

/// What [`register_actions`] reads of an observation, hashed.
fn actions_fingerprint(screen_id: i64, o: &Observation) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    screen_id.hash(&mut hasher);
    for e in &o.elements {
        (&e.signature, &e.xpath, e.enabled, e.clickable, e.checkable).hash(&mut hasher);
        (
            e.long_clickable,
            e.editable,
            e.scrollable,
            e.center_x,
            e.center_y,
        )
            .hash(&mut hasher);
        (e.bounds, e.ref_id, &e.resource_id).hash(&mut hasher);
    }
    hasher.finish()
}

/// Actions a screen offers, from its actionable elements, plus `back`.
fn register_actions(
    conn: &Connection,
    screen_id: i64,
    composite: &str,
    o: &Observation,
    ts: &str,
) -> Result<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO actions (action_id, screen_id, verb, target_key, origin, tap_x,
             tap_y, selector_snapshot, params, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )
        .ctx("registering actions")?;
    stmt.execute(params![
        stable_id(&[composite, "back", ""]),
        screen_id,
        "back",
        "",
        Option::<String>::None,
        Option::<i64>::None,
        Option::<i64>::None,
        Option::<String>::None,
        Option::<String>::None,
        ts
    ])
    .ctx("registering actions")?;
    for element in &o.elements {
        let target_key = if element.signature.is_empty() {
            &element.xpath
        } else {
            &element.signature
        };
        if target_key.is_empty() {
            continue;
        }
        let verbs: Vec<&str> = possible_actions(element)
            .into_iter()
            .flat_map(|action| match action {
                PossibleAction::Touch => &["click"][..],
                PossibleAction::LongTouch => &["long_press"][..],
                PossibleAction::SetText => &["input"][..],
                PossibleAction::Scroll => &["scroll_down", "scroll_up"][..],
            })
            .copied()
            .collect();
        if verbs.is_empty() {
            continue;
        }
        let params_json = serde_json::json!({
            "bounds": element.bounds,
            "ref": element.ref_id,
            "resource_id": element.resource_id,
        })
        .to_string();
        for verb in verbs {
            stmt.execute(params![
                stable_id(&[composite, verb, target_key]),
                screen_id,
                verb,
                target_key,
                "xml",
                element.center_x,
                element.center_y,
                element.xpath,
                params_json,
                ts
            ])
            .ctx("registering actions")?;
        }
    }
    Ok(())
}

/// The previous step led to `to`: its rows get their destination, and the transition and the
/// edge of its last successful action are counted.
fn link(
    conn: &Connection,
    held: &mut Held,
    run_id: i64,
    previous: &StepState,
    to: i64,
    to_composite: &str,
    ts: &str,
) -> Result<()> {
    let step = previous.step as i64;
    held.link_steps(conn, run_id, step, to)?;
    let Some((action_id, verb)) = &previous.last_action else {
        return Ok(());
    };
    held.link_outcome(conn, run_id, step, to)?;
    conn.prepare_cached(
        "INSERT INTO transitions (run_id, from_screen_id, to_screen_id, action_type, count)
         VALUES (?1, ?2, ?3, ?4, 1)
         ON CONFLICT(run_id, from_screen_id, to_screen_id, action_type)
         DO UPDATE SET count = count + 1",
    )
    .and_then(|mut s| s.execute(params![run_id, previous.screen_id, to, verb]))
    .ctx("counting a transition")?;
    conn.prepare_cached(
        "INSERT INTO edges (edge_id, from_screen_id, action_id, to_screen_id, evidence_counter,
         last_evidence_run_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?6)
         ON CONFLICT(edge_id) DO UPDATE SET evidence_counter = evidence_counter + 1,
         last_evidence_run_id = excluded.last_evidence_run_id, updated_at = excluded.updated_at",
    )
    .and_then(|mut s| {
        s.execute(params![
            stable_id(&[&previous.composite, action_id, to_composite]),
            previous.screen_id,
            action_id,
            to,
            run_id,
            ts
        ])
    })
    .ctx("counting an edge")?;
    Ok(())
}

/// One `ai_interactions` row: a model call behind a decision (`parsed`: its actions) or the
/// failed call a stage stopped on.
fn record_ai(
    conn: &Connection,
    run_id: i64,
    step: u64,
    ts: Option<&str>,
    ai: &AiMeta,
    screenshot: Option<String>,
    parsed: Option<String>,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO ai_interactions (run_id, step_number, timestamp, request_json,
         screenshot_path, response_raw, response_parsed_json, tokens_input, tokens_output,
         latency_ms, success, error_message, retry_count)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )
    .and_then(|mut s| {
        s.execute(params![
            run_id,
            step as i64,
            ts.unwrap_or_default(),
            ai.request.as_ref().map(|r| r.to_string()),
            screenshot,
            ai.response,
            parsed,
            ai.tokens_in.map(|t| t as i64),
            ai.tokens_out.map(|t| t as i64),
            ai.latency_ms as f64,
            ai.error.is_none(),
            ai.error,
            ai.retries
        ])
    })
    .ctx("recording an AI interaction")?;
    Ok(())
}

/// The projection state of a run, loaded on first use.
fn run_projection<'r>(
    runs: &'r mut HashMap<i64, RunProjection>,
    conn: &Connection,
    run_id: i64,
) -> Result<&'r mut RunProjection> {
    Ok(match runs.entry(run_id) {
        std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
        std::collections::hash_map::Entry::Vacant(entry) => {
            entry.insert(load_run_projection(conn, run_id)?)
        }
    })
}

/// Picks up a run projected earlier (another process, or an earlier ingest).
fn load_run_projection(conn: &Connection, run_id: i64) -> Result<RunProjection> {
    let (steps, distinct): (i64, String) = conn
        .query_row(
            "SELECT COUNT(*), COALESCE(GROUP_CONCAT(DISTINCT screen_id), '')
             FROM graph_persistence_outcomes WHERE run_id = ?1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ctx("loading a run's projection")?;
    let screens = distinct.split(',').filter_map(|s| s.parse().ok()).collect();
    let current = conn
        .query_row(
            "SELECT o.step_ordinal, o.screen_id, s.composite_hash, s.screenshot_path, o.action_id,
             a.verb FROM graph_persistence_outcomes o JOIN screens s ON s.id = o.screen_id
             LEFT JOIN actions a ON a.action_id = o.action_id
             WHERE o.run_id = ?1 ORDER BY o.step_ordinal DESC LIMIT 1",
            [run_id],
            |r| {
                let action: Option<String> = r.get(4)?;
                let verb: Option<String> = r.get(5)?;
                Ok(StepState {
                    step: r.get::<_, i64>(0)?.max(0) as u64,
                    screen_id: r.get(1)?,
                    composite: r.get(2)?,
                    screenshot: r.get(3)?,
                    decision: None,
                    last_action: action.zip(verb),
                })
            },
        )
        .optional()
        .ctx("loading a run's projection")?;
    Ok(RunProjection {
        current,
        steps,
        screens,
        // Counts only what is projected from here on: short of the log, `run_stats` reads it.
        tally: Tally::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::ScreenHash;

    fn observation(step: u64, activity: &str, phash: u64) -> Event {
        Event::Observation(Box::new(Observation {
            run_id: Some("r".into()),
            step: Some(step),
            package: Some("p".into()),
            activity: Some(activity.into()),
            hash: Some(ScreenHash {
                phash: Some(format!("{phash:016x}")),
                ..ScreenHash::default()
            }),
            ..Observation::default()
        }))
    }

    fn screens_of(events: Vec<Event>) -> Vec<Option<i64>> {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        let mut ingest = store.ingest();
        let steps: Vec<u64> = events.iter().filter_map(Event::step).collect();
        for event in events {
            ingest.push_event(event).unwrap();
        }
        ingest.finish().unwrap();
        steps
            .into_iter()
            .map(|step| store.screen_at_step("r", step).unwrap())
            .collect()
    }

    #[test]
    fn same_activity_within_five_bits_is_the_same_screen() {
        let base = 0x0f0f_0f0f_0f0f_0f0f_u64;
        let ids = screens_of(vec![
            observation(1, "A", base),
            observation(2, "A", base ^ 0b1_1111),
            observation(3, "A", base ^ 0b11_1111),
            observation(4, "B", base),
        ]);
        assert_eq!(ids[0], ids[1], "distance 5: same screen");
        assert_ne!(ids[0], ids[2], "distance 6: a new screen");
        assert_ne!(ids[0], ids[3], "another activity: a new screen");
        assert!(ids.iter().all(Option::is_some));
    }

    #[test]
    fn the_nearest_known_screen_wins() {
        let base = 0xffff_0000_ffff_0000_u64;
        let ids = screens_of(vec![
            observation(1, "A", base),
            observation(2, "A", base ^ 0b11_1111_0000_0000),
            observation(3, "A", base ^ 0b11_1111_0000_0001),
        ]);
        assert_ne!(ids[0], ids[1]);
        assert_eq!(
            ids[2], ids[1],
            "one bit from the second, seven from the first"
        );
    }

    /// A run over four screens whose decisions have 0 to 3 actions; every second action fails
    /// with an invalid bounding box.
    fn batches(steps: std::ops::RangeInclusive<u64>) -> Vec<Event> {
        let mut events = Vec::new();
        for step in steps {
            let phash = [0, 0xffff, 0xffff_0000, 0xffff_0000_0000][(step % 4) as usize];
            events.push(observation(step, "A", phash));
            let n = (step % 4) as u32;
            let actions = (0..n)
                .map(|_| crate::events::Action::new(crate::events::ActionType::Click))
                .collect();
            events.push(Event::Decision(Decision {
                run_id: Some("r".into()),
                step: Some(step),
                ..Decision::new(actions)
            }));
            for index in 0..n {
                events.push(Event::Result(ActionResult {
                    run_id: Some("r".into()),
                    step: Some(step),
                    index,
                    action_type: "click".into(),
                    target_signature: Some(format!("w{index}")),
                    success: index % 2 == 0,
                    error_kind: (index % 2 == 1).then(|| "invalid_bbox".into()),
                    ..ActionResult::default()
                }));
            }
        }
        events
    }

    fn table(store: &Store, sql: &str) -> Vec<Vec<rusqlite::types::Value>> {
        let mut stmt = store.conn.prepare(sql).unwrap();
        let columns = stmt.column_count();
        stmt.query_map([], |r| (0..columns).map(|i| r.get(i)).collect())
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    fn projected(store: &Store) -> Vec<Vec<Vec<rusqlite::types::Value>>> {
        [
            "SELECT * FROM step_logs ORDER BY id",
            "SELECT * FROM graph_persistence_outcomes ORDER BY run_id, step_ordinal",
            "SELECT * FROM transitions ORDER BY id",
            "SELECT * FROM edges ORDER BY edge_id",
            "SELECT * FROM run_stats",
        ]
        .into_iter()
        .map(|sql| table(store, sql))
        .collect()
    }

    /// Feeds events in one ingest, complete steps grouped as droid-record groups a backlog.
    fn feed(store: &Store, events: Vec<Event>) {
        let mut ingest = store.ingest().group_commit(256);
        for event in events {
            ingest.push_event(event).unwrap();
        }
        ingest.finish().unwrap();
    }

    #[test]
    fn held_rows_come_out_as_if_written_at_once() {
        let dir = tempfile::tempdir().unwrap();
        // A live pipe: every step committed on its own, so each step's rows are written before
        // the next observation links them.
        let live = Store::open(&dir.path().join("live.db")).unwrap();
        let mut ingest = live.ingest();
        for event in batches(1..=11) {
            ingest.push_event(event).unwrap();
            ingest.commit().unwrap();
        }
        assert!(ingest.stats().commits >= 11);
        ingest.finish().unwrap();
        // A backlog: steps share transactions, rows are linked while held.
        let backlog = Store::open(&dir.path().join("backlog.db")).unwrap();
        feed(&backlog, batches(1..=11));

        let tables = projected(&live);
        assert_eq!(projected(&backlog), tables);
        live.rebuild().unwrap();
        assert_eq!(projected(&live), tables);
        let unlinked = table(
            &live,
            "SELECT DISTINCT step_number FROM step_logs WHERE to_screen_id IS NULL",
        );
        assert_eq!(unlinked, vec![vec![rusqlite::types::Value::Integer(11)]]);
        let led_on = table(
            &live,
            "SELECT COUNT(*) FROM graph_persistence_outcomes WHERE action_id IS NOT NULL
             AND to_screen_id IS NOT NULL",
        );
        // Steps with a successful action (1 to 3 actions), but the last.
        assert_eq!(led_on, vec![vec![rusqlite::types::Value::Integer(8)]]);
    }

    #[test]
    fn run_stats_from_the_tally_are_those_read_from_the_events() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        feed(&store, batches(1..=9));
        let stats = |store: &Store| {
            table(
                store,
                "SELECT multi_action_batch_count, single_action_count, total_batch_actions,
                 avg_batch_size, max_batch_size, invalid_bbox_count FROM run_stats",
            )
        };
        use rusqlite::types::Value::{Integer, Real};
        // Batches of 1, 2, 3, 0, 1, 2, 3, 0, 1; one invalid bbox in each batch of 2 or 3.
        let expected = vec![vec![
            Integer(4),
            Integer(3),
            Integer(10),
            Real(13.0 / 9.0),
            Integer(3),
            Integer(4),
        ]];
        assert_eq!(stats(&store), expected);
        let row = table(&store, "SELECT * FROM run_stats");
        let run_id = store.run_row_id("r").unwrap();
        store
            .write(|conn| stats::refresh(conn, run_id, None))
            .unwrap();
        assert_eq!(table(&store, "SELECT * FROM run_stats"), row);

        // A second ingest continues the run: its tally is short of the log, so the events are
        // read; the result is what a rebuild gives.
        feed(&store, batches(10..=11));
        let continued = table(&store, "SELECT * FROM run_stats");
        assert_eq!(stats(&store)[0][0], Integer(6));
        store.rebuild().unwrap();
        assert_eq!(table(&store, "SELECT * FROM run_stats"), continued);
    }

    #[test]
    fn event_keys_name_the_step_and_index() {
        let result = Event::Result(ActionResult {
            step: Some(4),
            index: 2,
            ..ActionResult::default()
        });
        assert_eq!(event_key(&result, ""), "res:4:2");
        assert_eq!(event_key(&observation(7, "A", 0), ""), "obs:7");
        let note = Event::Note(crate::events::Note {
            kind: "stuck".into(),
            ..crate::events::Note::default()
        });
        assert_ne!(event_key(&note, "a"), event_key(&note, "b"));
        assert!(event_key(&note, "a").starts_with("note:-:"));
    }
}
