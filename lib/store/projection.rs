//! The projection: stored events → runs, screens, steps, the graph and run_stats.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Connection, OptionalExtension};

use super::held::{Held, OutcomeRow, StepRow};
use super::stats::{self, Tally};
use super::{stable_id, Context, Error, Result};
use crate::events::{
    ActionResult, ActionType, AiMeta, Decision, Event, Note, NoteKind, Observation, ScreenState,
};
use crate::screen::{self, ActionKey, Screen, ScreenModel};

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
            projector.apply(conn, *run_id, run, &event, None, *seq)?;
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

/// The row of a screen with this key, when there is one.
pub(crate) fn screen_row(conn: &Connection, key: &str) -> Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM screens WHERE composite_hash = ?1")
        .and_then(|mut stmt| stmt.query_row([key], |r| r.get(0)).optional())
        .ctx("finding a screen")
}

/// An action a step took with a key in the graph: the screen it was meant for (see
/// [`screen::outcome`]) and its row in `actions`.
#[derive(Clone)]
struct Taken {
    screen: (i64, String),
    action_id: String,
}

/// The step of a run being projected.
#[derive(Clone)]
struct StepState {
    step: u64,
    screen_id: i64,
    screen_key: String,
    screenshot: Option<String>,
    decision: Option<Decision>,
    /// The `screen_states` row of the state the decision was made in.
    state_id: Option<i64>,
    /// The step's last successful action: (action id, verb).
    last_action: Option<(String, String)>,
    /// The step's actions with a key in the graph that were taken, in order.
    taken: Vec<Taken>,
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
    /// Screen rows by key, as looked up or inserted.
    screens: HashMap<String, i64>,
    /// Fingerprints of (screen, actionable elements) already registered: re-inserting them
    /// would change nothing.
    registered: HashSet<u64>,
    runs: HashMap<i64, RunProjection>,
    /// Step and outcome rows not written yet; [`Projector::flush`] writes them.
    held: Held,
}

impl Projector {
    /// Projects one event of run `run` (row `run_id`); an observation's screen `model`, when
    /// its producer handed it on, saves analysing the screen again.
    pub fn apply(
        &mut self,
        conn: &Connection,
        run_id: i64,
        run: &str,
        event: &Event,
        model: Option<&ScreenModel>,
        seq: i64,
    ) -> Result<()> {
        match event {
            Event::RunStarted(e) => {
                // A replay says so (`kind`, and `replay.of` / `replay.purpose`); any other run
                // is a crawl.
                let text = |value: Option<&serde_json::Value>| {
                    value.and_then(|v| v.as_str()).map(str::to_string)
                };
                let kind = text(e.extra.get("kind")).unwrap_or_else(|| "crawl".into());
                let replay = e.extra.get("replay");
                conn.execute(
                    "UPDATE runs SET device_id = COALESCE(?2, device_id),
                     app_package = COALESCE(?3, app_package), start_time = COALESCE(?4, start_time),
                     ai_provider = COALESCE(?5, ai_provider), ai_model = COALESCE(?6, ai_model),
                     session_path = COALESCE(?7, session_path), kind = ?8, replay_of = ?9,
                     replay_purpose = ?10 WHERE id = ?1",
                    params![
                        run_id,
                        e.device,
                        e.package,
                        e.ts,
                        e.decider,
                        e.model,
                        e.session_dir,
                        kind,
                        text(replay.and_then(|r| r.get("of"))),
                        text(replay.and_then(|r| r.get("purpose")))
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
            Event::Observation(o) => self.observe(conn, run_id, run, o, model, seq)?,
            Event::Decision(d) => {
                self.run(conn, run_id)?.tally.decision(d);
                self.decide(conn, run_id, d)?;
            }
            Event::Result(r) => {
                self.run(conn, run_id)?.tally.result(r);
                self.act(conn, run_id, r)?;
            }
            Event::Note(note) if note.kind == NoteKind::Error => {
                self.stopped(conn, run_id, note)?
            }
            Event::Note(note) if matches!(note.kind, NoteKind::Crash | NoteKind::Anr) => {
                record_crash(conn, run_id, note, seq)?
            }
            Event::Note(note) if note.kind.as_str() == crate::crash::MINIMISED_NOTE => {
                record_minimisation(conn, run_id, note, seq)?
            }
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
        model: Option<&ScreenModel>,
        seq: i64,
    ) -> Result<()> {
        let step = o.step.unwrap_or(0);
        let ts = o.ts.clone().unwrap_or_default();
        // Load what earlier commits projected before this observation adds to it.
        self.run(conn, run_id)?;
        let shown = match model {
            Some(model) => Screen::with_model(o, model),
            None => Screen::of(o),
        };
        // Computed by the one rule (or handed on by whoever computed it for this observation),
        // never read from the line: a producer's own `hash.screen_key` is not the decider's.
        let screen_key = shown.key().as_str().to_string();
        let known = match self.screens.get(&screen_key) {
            Some(&id) => Some(id),
            None => screen_row(conn, &screen_key)?,
        };
        let (screen_id, kind) = match known {
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
                let hash = o.hash.clone().unwrap_or_default();
                conn.prepare_cached(
                    "INSERT INTO screens (composite_hash, visual_hash, screenshot_path,
                     activity_name, first_seen_run_id, first_seen_step, package, layout_hash,
                     seen_count, latest_seen_run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?5)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        screen_key,
                        hash.phash.unwrap_or_default(),
                        o.screenshot_path,
                        o.activity.clone().unwrap_or_default(),
                        run_id,
                        step as i64,
                        o.package.clone().unwrap_or_default(),
                        hash.layout_hash
                    ])
                })
                .ctx("inserting a screen")?;
                (conn.last_insert_rowid(), "discovered")
            }
        };
        self.screens.insert(screen_key.clone(), screen_id);
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
            register_actions(conn, screen_id, &screen_key, &shown, &ts)?;
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
                    &screen_key,
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
            screen_key,
            screenshot: o.screenshot_path.clone(),
            decision: None,
            state_id: None,
            last_action: None,
            taken: Vec::new(),
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
                if let Some(shown) = &d.state {
                    current.state_id = Some(record_state(conn, run_id, current, shown)?);
                }
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
        let from_screen = current.as_ref().map(|c| c.screen_id);
        let current_state = current.as_ref().and_then(|c| c.state_id);
        let resolved = match current.as_ref() {
            Some(current) => Some(resolve(&mut self.screens, conn, current, planned, r)?),
            None => None,
        };
        // An action meant for a screen crawler.db does not know has no row in `actions`; its
        // step row is still written.
        let meant = resolved.as_ref().and_then(|r| r.meant.clone());
        if let (Some(current), Some(resolved), Some((screen_id, screen_key))) =
            (current, resolved, meant)
        {
            let Resolved {
                verb, target_key, ..
            } = &resolved;
            let action_id = stable_id(&[&screen_key, verb, target_key]);
            conn.prepare_cached(
                "INSERT OR IGNORE INTO actions (action_id, screen_id, verb, target_key, origin,
                 tap_x, tap_y, input_payload, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    action_id,
                    screen_id,
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
                current.took(resolved, r);
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
            action_type: r.action_type.to_string(),
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
            state_id: current_state,
        });
        Ok(())
    }
}

/// The `screen_states` row of the state of the step's screen a decision names (inserted the first
/// time the state is named, counted each time after).
fn record_state(
    conn: &Connection,
    run_id: i64,
    step: &StepState,
    shown: &ScreenState,
) -> Result<i64> {
    let shows = serde_json::to_string(&shown.shows).unwrap_or_default();
    conn.prepare_cached(
        "INSERT INTO screen_states (screen_id, state_key, shows_json, first_seen_run_id,
         first_seen_step, seen_count) VALUES (?1, ?2, ?3, ?4, ?5, 1)
         ON CONFLICT(screen_id, state_key) DO UPDATE SET seen_count = seen_count + 1
         RETURNING id",
    )
    .and_then(|mut s| {
        s.query_row(
            params![step.screen_id, shown.key, shows, run_id, step.step as i64],
            |r| r.get(0),
        )
    })
    .ctx("recording a screen's state")
}

/// Where an executed action belongs: its key as the decider's graph has it, its row's verb and
/// target (without a key, a raw tap's point), and the screen it was meant for (the one observed,
/// or one a walk expected).
struct Resolved {
    key: Option<ActionKey>,
    verb: String,
    target_key: String,
    meant: Option<(i64, String)>,
}

fn resolve(
    screens: &mut HashMap<String, i64>,
    conn: &Connection,
    current: &StepState,
    planned: Option<&crate::events::Action>,
    r: &ActionResult,
) -> Result<Resolved> {
    let key = match planned {
        Some(action) => ActionKey::of_action(action, || r.target_signature.clone()),
        None => r
            .target_signature
            .clone()
            .map(|signature| ActionKey::on(r.action_type.clone(), signature)),
    };
    let (verb, target_key) = match (&key, r.tap_point) {
        (Some(key), _) => (
            key.kind.as_str().to_string(),
            key.widget.clone().unwrap_or_default(),
        ),
        (None, Some([x, y])) => (r.action_type.to_string(), format!("point:{x},{y}")),
        (None, None) => (r.action_type.to_string(), String::new()),
    };
    let meant = match planned.and_then(|a| a.screen.clone()) {
        Some(meant) => {
            let id = match screens.get(&meant) {
                Some(&id) => Some(id),
                None => screen_row(conn, &meant)?,
            };
            id.map(|id| (id, meant))
        }
        None => Some((current.screen_id, current.screen_key.clone())),
    };
    Ok(Resolved {
        key,
        verb,
        target_key,
        meant,
    })
}

impl StepState {
    /// The step took an action successfully.
    fn took(&mut self, resolved: Resolved, r: &ActionResult) {
        let Some((screen_id, screen_key)) = resolved.meant else {
            return;
        };
        let action_id = stable_id(&[&screen_key, &resolved.verb, &resolved.target_key]);
        self.last_action = Some((action_id.clone(), resolved.verb));
        match resolved.key {
            Some(_) => self.taken.push(Taken {
                screen: (screen_id, screen_key),
                action_id,
            }),
            // After a restart, the next screen is no action's outcome.
            None if r.action_type == ActionType::Relaunch => self.taken.clear(),
            None => {}
        }
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
    screen_key: &str,
    shown: &Screen,
    ts: &str,
) -> Result<()> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO actions (action_id, screen_id, verb, target_key, origin, tap_x,
             tap_y, selector_snapshot, params, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )
        .ctx("registering actions")?;
    for (key, _) in shown.actions() {
        let verb = key.kind.as_str();
        let target_key = key.widget.as_deref().unwrap_or_default();
        let element = shown.widget(&key).map(|w| w.element);
        let params_json = element.map(|e| {
            serde_json::json!({
                "bounds": e.bounds,
                "ref": e.ref_id,
                "resource_id": e.resource_id,
            })
            .to_string()
        });
        stmt.execute(params![
            stable_id(&[screen_key, verb, target_key]),
            screen_id,
            verb,
            target_key,
            element.map(|_| "xml"),
            element.map(|e| e.center_x),
            element.map(|e| e.center_y),
            element.map(|e| e.xpath.as_str()),
            params_json,
            ts
        ])
        .ctx("registering actions")?;
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
    let Some((_, verb)) = &previous.last_action else {
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
    let reached = (to, to_composite.to_string());
    let Some((edge, _)) = screen::outcome(&previous.taken, |t| &t.screen, &reached) else {
        return Ok(());
    };
    let ((from, from_composite), action_id) = (&edge.screen, &edge.action_id);
    conn.prepare_cached(
        "INSERT INTO edges (edge_id, from_screen_id, action_id, to_screen_id, evidence_counter,
         last_evidence_run_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?6)
         ON CONFLICT(edge_id) DO UPDATE SET evidence_counter = evidence_counter + 1,
         last_evidence_run_id = excluded.last_evidence_run_id, updated_at = excluded.updated_at",
    )
    .and_then(|mut s| {
        s.execute(params![
            stable_id(&[from_composite, action_id, to_composite]),
            from,
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
         latency_ms, success, error_message, retry_count, cost)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
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
            ai.retries,
            ai.cost
        ])
    })
    .ctx("recording an AI interaction")?;
    Ok(())
}

/// One `minimisations` row for a note of kind `minimised` (its `data` kept whole).
fn record_minimisation(conn: &Connection, run_id: i64, note: &Note, seq: i64) -> Result<()> {
    let data = note.data.clone().unwrap_or_default();
    let m: crate::crash::MinimisedData = serde_json::from_value(data.clone()).unwrap_or_default();
    conn.prepare_cached(
        "INSERT OR IGNORE INTO minimisations (run_id, ts, kind, signature, steps_before, steps,
         one_minimal, minimal, halted, replays, seconds, verify_replays, reproduced, verdict,
         data_json, source_run_seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )
    .and_then(|mut s| {
        s.execute(params![
            run_id,
            note.ts,
            m.kind,
            m.signature,
            m.steps_before as i64,
            m.minimal_steps.len() as i64,
            m.one_minimal,
            m.minimal,
            m.halted,
            m.replays,
            m.seconds,
            m.verify_replays,
            m.reproduced,
            m.verdict,
            data.to_string(),
            seq
        ])
    })
    .ctx("recording a minimisation")?;
    Ok(())
}

/// One `crashes` row for a note of kind `crash` or `anr` (payloads in `droid::crash`). A note
/// without a signature gets one from what it carries, so every row can be grouped.
fn record_crash(conn: &Connection, run_id: i64, note: &Note, seq: i64) -> Result<()> {
    use crate::crash::{anr_signature, crash_signature, AnrData, CrashData, ReproStep};
    let data = note.data.clone().unwrap_or_default();
    let message = note.message.clone().unwrap_or_default();
    struct Row {
        package: String,
        process: Option<String>,
        pid: Option<u32>,
        exception: Option<String>,
        message: String,
        signature: String,
        frames: Option<Vec<String>>,
        trace: String,
        steps: Vec<ReproStep>,
        screenshot: Option<String>,
        recovered: bool,
    }
    let row = if note.kind == "crash" {
        let c: CrashData = serde_json::from_value(data).unwrap_or_default();
        let data_has_exception = !c.exception.is_empty();
        let exception = match c.exception.is_empty() {
            true => message
                .split(':')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string(),
            false => c.exception,
        };
        let signature = match c.signature.is_empty() {
            true => crash_signature(&exception, &c.signature_frames),
            false => c.signature,
        };
        // A note without a parsed exception has only its message to tell.
        let message = match data_has_exception {
            true => c.exception_message,
            false => message,
        };
        Row {
            package: c.package,
            process: Some(c.process).filter(|p| !p.is_empty()),
            pid: c.pid,
            exception: Some(exception),
            message,
            signature,
            frames: Some(c.signature_frames),
            trace: c.stack_trace,
            steps: c.repro_steps,
            screenshot: c.screenshot_path,
            recovered: c.recovered,
        }
    } else {
        let a: AnrData = serde_json::from_value(data).unwrap_or_default();
        let reason = match a.reason.is_empty() {
            true => message,
            false => a.reason,
        };
        let signature = match a.signature.is_empty() {
            true => anr_signature(&a.package, "", &reason),
            false => a.signature,
        };
        Row {
            package: a.package,
            process: None,
            pid: None,
            exception: None,
            message: reason,
            signature,
            frames: None,
            trace: a.trace,
            steps: a.repro_steps,
            screenshot: a.screenshot_path,
            recovered: a.recovered,
        }
    };
    conn.prepare_cached(
        "INSERT OR IGNORE INTO crashes (run_id, step, ts, kind, package, process, pid, exception,
         message, signature, signature_frames_json, trace, repro_steps_json, screenshot_path,
         recovered, source_run_seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )
    .and_then(|mut s| {
        s.execute(params![
            run_id,
            note.step.map(|s| s as i64),
            note.ts,
            note.kind.as_str(),
            row.package,
            row.process,
            row.pid,
            row.exception,
            row.message,
            row.signature,
            row.frames.map(|f| serde_json::Value::from(f).to_string()),
            row.trace,
            serde_json::to_string(&row.steps).ok(),
            row.screenshot,
            row.recovered,
            seq
        ])
    })
    .ctx("recording a crash")?;
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
                Ok(StepState {
                    step: r.get::<_, i64>(0)?.max(0) as u64,
                    screen_id: r.get(1)?,
                    screen_key: r.get(2)?,
                    screenshot: r.get(3)?,
                    decision: None,
                    state_id: None,
                    last_action: None,
                    taken: Vec::new(),
                })
            },
        )
        .optional()
        .ctx("loading a run's projection")?;
    let current = match current {
        Some(current) => Some(resume_step(conn, run_id, current)?),
        None => None,
    };
    Ok(RunProjection {
        current,
        steps,
        screens,
        // Counts only what is projected from here on: short of the log, `run_stats` reads it.
        tally: Tally::default(),
    })
}

/// A step projected earlier, with the decision and results it recorded taken in again (without
/// writing anything), so its outcome can be linked when the next observation comes.
fn resume_step(conn: &Connection, run_id: i64, mut current: StepState) -> Result<StepState> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT json FROM run_events WHERE run_id = ?1 AND step = ?2
             AND type IN ('decision', 'result') ORDER BY seq",
        )
        .ctx("loading a step")?;
    let lines: Vec<String> = stmt
        .query_map(params![run_id, current.step as i64], |r| r.get(0))
        .ctx("loading a step")?
        .collect::<rusqlite::Result<_>>()
        .ctx("loading a step")?;
    let mut screens = HashMap::new();
    for line in lines {
        match Event::from_line(&line) {
            Ok(Some(Event::Decision(decision))) => {
                if let Some(shown) = &decision.state {
                    current.state_id = conn
                        .query_row(
                            "SELECT id FROM screen_states WHERE screen_id = ?1 AND state_key = ?2",
                            params![current.screen_id, shown.key],
                            |r| r.get(0),
                        )
                        .optional()
                        .ctx("loading a step's state")?;
                }
                current.decision = Some(decision);
            }
            Ok(Some(Event::Result(result))) if result.success => {
                let decision = current.decision.clone();
                let planned = decision
                    .as_ref()
                    .and_then(|d| d.actions.get(result.index as usize));
                let resolved = resolve(&mut screens, conn, &current, planned, &result)?;
                current.took(resolved, &result);
            }
            _ => {}
        }
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::ScreenHash;
    use crate::store::Store;

    /// An observation of `activity` showing one button labelled after `variant`.
    fn observation(step: u64, activity: &str, variant: u64) -> Event {
        Event::Observation(Box::new(Observation {
            run_id: Some("r".into()),
            step: Some(step),
            package: Some("p".into()),
            activity: Some(activity.into()),
            hash: Some(ScreenHash {
                phash: Some(format!("{:016x}", variant ^ step)),
                ..ScreenHash::default()
            }),
            elements: vec![crate::ui::UiElement {
                text: format!("{variant:x}"),
                class_name: "android.widget.Button".into(),
                clickable: true,
                enabled: true,
                bounds: crate::ui::Bounds::from([0, 0, 100, 100]),
                ..crate::ui::UiElement::default()
            }],
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
    fn screens_are_the_screen_models_identity() {
        // Step 2 renders differently (another perceptual hash) but shows the same widgets.
        let ids = screens_of(vec![
            observation(1, "A", 7),
            observation(2, "A", 7),
            observation(3, "A", 8),
            observation(4, "B", 7),
        ]);
        assert_eq!(
            ids[0], ids[1],
            "the same activity and widgets: the same screen"
        );
        assert_ne!(ids[0], ids[2], "other widgets: another screen");
        assert_ne!(ids[0], ids[3], "another activity: another screen");
        assert!(ids.iter().all(Option::is_some));
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
            // Every third step, the heuristic decided because the model failed.
            let fallback = step % 3 == 0;
            events.push(Event::Decision(Decision {
                run_id: Some("r".into()),
                step: Some(step),
                decider: Some(if fallback { "heuristic" } else { "gemini" }.into()),
                ai: fallback.then(|| AiMeta {
                    provider: "gemini".into(),
                    error: Some("timed out".into()),
                    ..AiMeta::default()
                }),
                // One screen is held in two states, taken in turns.
                state: (step % 4 == 2).then(|| Box::new(state_named(&format!("{}", step % 8)))),
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

    /// A state of two its screen is held in, told apart by what one label shows.
    fn state_named(shows: &str) -> ScreenState {
        ScreenState {
            key: format!("{shows:0>16}"),
            states: 2,
            shows: [("android.widget.TextView|#1".to_string(), Some(shows.into()))].into(),
        }
    }

    #[test]
    fn a_decisions_state_is_a_row_of_its_screen_and_its_steps_point_at_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        feed(&store, batches(1..=11));
        // Steps 2, 6 and 10 were on one screen, in states "2", "6" and "2".
        let states = table(
            &store,
            "SELECT s.state_key, s.shows_json, s.first_seen_step, s.seen_count, COUNT(l.id)
             FROM screen_states s LEFT JOIN step_logs l ON l.state_id = s.id
             GROUP BY s.id ORDER BY s.id",
        );
        use rusqlite::types::Value::{Integer, Text};
        let row = |key: &str, shows: &str, first: i64, seen: i64, steps: i64| {
            vec![
                Text(format!("{key:0>16}")),
                Text(format!("{{\"android.widget.TextView|#1\":\"{shows}\"}}")),
                Integer(first),
                Integer(seen),
                Integer(steps),
            ]
        };
        // Each of the two actions of a step points at its state.
        assert_eq!(states, vec![row("2", "2", 2, 2, 4), row("6", "6", 6, 1, 2)]);
        let same_screen = table(
            &store,
            "SELECT COUNT(DISTINCT screen_id) FROM screen_states",
        );
        assert_eq!(same_screen, vec![vec![Integer(1)]]);
        let run = store.latest_run().unwrap().unwrap();
        let screens = store.run_screens(&run).unwrap();
        let held: Vec<i64> = screens.iter().map(|s| s.states).collect();
        assert_eq!(held.iter().filter(|&&n| n == 2).count(), 1, "{held:?}");
        assert!(held.iter().all(|&n| n == 0 || n == 2), "{held:?}");
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
            "SELECT * FROM screen_states ORDER BY id",
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
                 avg_batch_size, max_batch_size, invalid_bbox_count, heuristic_fallback_count
                 FROM run_stats",
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
            Integer(3),
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
}
