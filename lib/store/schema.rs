//! The crawler.db schema as ordered migrations.
//!
//! Migration 1 is the reference crawler's schema exactly (`../shared/reference/product-spec.md`:
//! `runs`, `screens`, `step_logs`, `transitions`, `run_stats`, `ai_interactions` and their
//! indexes). Migration 2 adds the event log and what droid needs to know about runs and screens.
//! Migration 3 adds the reference graph service's tables (`../shared/reference/graph-projection.md`),
//! keyed by deterministic ids. Migration 4 indexes event times per run, so `run_stats`' duration
//! does not read every event's JSON to reach its `ts`. Migration 5 adds `crashes`, the crash and
//! ANR notes the reports group by signature. Migration 6 counts the decisions the heuristic made
//! because a model failed. Migration 7 tells replays from crawls (`runs.kind`, the run a replay
//! replays and why) and keeps the minimisations of crashes and ANRs. Migration 8 keeps what each model call
//! cost and the run's total. Migration 9 keeps the states of a screen the decider's graph told apart
//! (`screen_states`) and the state each step was taken in. A database is never downgraded: one with a newer version than
//! [`LATEST`] is refused.

/// Migrations in order; migration `i` brings the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    SEED_SCHEMA,
    EVENT_LOG,
    GRAPH,
    EVENT_TIMES,
    CRASHES,
    FALLBACKS,
    REPLAYS,
    MODEL_COST,
    STATES,
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

const SEED_SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    device_id TEXT NOT NULL,
    app_package TEXT NOT NULL,
    start_activity TEXT,
    start_time TEXT NOT NULL,
    end_time TEXT,
    status TEXT NOT NULL,
    ai_provider TEXT,
    ai_model TEXT,
    total_steps INTEGER DEFAULT 0,
    unique_screens INTEGER DEFAULT 0,
    session_path TEXT
);
CREATE TABLE IF NOT EXISTS screens (
    id INTEGER PRIMARY KEY,
    composite_hash TEXT UNIQUE NOT NULL,
    visual_hash TEXT NOT NULL,
    screenshot_path TEXT,
    activity_name TEXT,
    first_seen_run_id INTEGER NOT NULL,
    first_seen_step INTEGER NOT NULL,
    FOREIGN KEY (first_seen_run_id) REFERENCES runs(id)
);
CREATE TABLE IF NOT EXISTS step_logs (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL,
    step_number INTEGER NOT NULL,
    timestamp TEXT NOT NULL,
    from_screen_id INTEGER,
    to_screen_id INTEGER,
    action_type TEXT NOT NULL,
    action_description TEXT,
    target_bbox_json TEXT,
    input_text TEXT,
    execution_success BOOLEAN NOT NULL,
    error_message TEXT,
    action_duration_ms REAL,
    ai_response_time_ms REAL,
    ai_reasoning TEXT,
    was_retried BOOLEAN DEFAULT 0,
    retry_count INTEGER DEFAULT 0,
    recovery_time_ms REAL,
    current_phase TEXT DEFAULT 'capture',
    FOREIGN KEY (run_id) REFERENCES runs(id),
    FOREIGN KEY (from_screen_id) REFERENCES screens(id),
    FOREIGN KEY (to_screen_id) REFERENCES screens(id)
);
CREATE TABLE IF NOT EXISTS transitions (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL,
    from_screen_id INTEGER NOT NULL,
    to_screen_id INTEGER NOT NULL,
    action_type TEXT NOT NULL,
    count INTEGER DEFAULT 1,
    FOREIGN KEY (run_id) REFERENCES runs(id),
    FOREIGN KEY (from_screen_id) REFERENCES screens(id),
    FOREIGN KEY (to_screen_id) REFERENCES screens(id),
    UNIQUE(run_id, from_screen_id, to_screen_id, action_type)
);
CREATE TABLE IF NOT EXISTS run_stats (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL UNIQUE,
    total_steps INTEGER DEFAULT 0,
    successful_steps INTEGER DEFAULT 0,
    failed_steps INTEGER DEFAULT 0,
    crawl_duration_seconds REAL,
    avg_step_duration_ms REAL,
    unique_screens_visited INTEGER DEFAULT 0,
    total_screen_visits INTEGER DEFAULT 0,
    deepest_navigation_depth INTEGER DEFAULT 0,
    most_visited_screen_id INTEGER,
    most_visited_screen_count INTEGER DEFAULT 0,
    unique_activities_visited INTEGER DEFAULT 0,
    actions_by_type_json TEXT,
    successful_actions_by_type_json TEXT,
    failed_actions_by_type_json TEXT,
    avg_action_duration_ms REAL,
    min_action_duration_ms REAL,
    max_action_duration_ms REAL,
    total_ai_calls INTEGER DEFAULT 0,
    avg_ai_response_time_ms REAL,
    min_ai_response_time_ms REAL,
    max_ai_response_time_ms REAL,
    ai_timeout_count INTEGER DEFAULT 0,
    ai_error_count INTEGER DEFAULT 0,
    ai_retry_count INTEGER DEFAULT 0,
    invalid_response_count INTEGER DEFAULT 0,
    total_ai_tokens_used INTEGER,
    multi_action_batch_count INTEGER DEFAULT 0,
    single_action_count INTEGER DEFAULT 0,
    total_batch_actions INTEGER DEFAULT 0,
    avg_batch_size REAL,
    max_batch_size INTEGER DEFAULT 0,
    stuck_detection_count INTEGER DEFAULT 0,
    stuck_recovery_success INTEGER DEFAULT 0,
    app_crash_count INTEGER DEFAULT 0,
    app_relaunch_count INTEGER DEFAULT 0,
    context_recovery_count INTEGER DEFAULT 0,
    invalid_bbox_count INTEGER DEFAULT 0,
    uiautomator_crash_count INTEGER DEFAULT 0,
    uiautomator_recovery_count INTEGER DEFAULT 0,
    avg_recovery_time_ms REAL,
    device_model TEXT,
    android_version TEXT,
    screen_width INTEGER,
    screen_height INTEGER,
    app_version TEXT,
    pcap_file_size_bytes INTEGER,
    pcap_packet_count INTEGER,
    mobsf_security_score REAL,
    mobsf_high_issues INTEGER DEFAULT 0,
    mobsf_medium_issues INTEGER DEFAULT 0,
    mobsf_low_issues INTEGER DEFAULT 0,
    video_file_size_bytes INTEGER,
    video_duration_seconds REAL,
    transition_count INTEGER DEFAULT 0,
    unique_transitions INTEGER DEFAULT 0,
    FOREIGN KEY (run_id) REFERENCES runs(id),
    FOREIGN KEY (most_visited_screen_id) REFERENCES screens(id)
);
CREATE TABLE IF NOT EXISTS ai_interactions (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL,
    step_number INTEGER NOT NULL,
    timestamp TEXT NOT NULL,
    request_json TEXT,
    screenshot_path TEXT,
    response_raw TEXT,
    response_parsed_json TEXT,
    tokens_input INTEGER,
    tokens_output INTEGER,
    latency_ms REAL,
    success BOOLEAN NOT NULL DEFAULT 0,
    error_message TEXT,
    retry_count INTEGER DEFAULT 0,
    FOREIGN KEY (run_id) REFERENCES runs(id)
);
CREATE INDEX IF NOT EXISTS idx_step_logs_run ON step_logs(run_id, step_number);
CREATE INDEX IF NOT EXISTS idx_screens_hash ON screens(composite_hash);
CREATE INDEX IF NOT EXISTS idx_transitions_run ON transitions(run_id);
CREATE INDEX IF NOT EXISTS idx_run_stats_run ON run_stats(run_id);
CREATE INDEX IF NOT EXISTS idx_ai_interactions_run ON ai_interactions(run_id, step_number);
"#;

const EVENT_LOG: &str = r#"
ALTER TABLE runs ADD COLUMN run_key TEXT;
CREATE UNIQUE INDEX idx_runs_key ON runs(run_key);
CREATE INDEX idx_runs_open ON runs(status, device_id, app_package);
ALTER TABLE screens ADD COLUMN package TEXT;
ALTER TABLE screens ADD COLUMN layout_hash TEXT;
ALTER TABLE screens ADD COLUMN seen_count INTEGER DEFAULT 0;
ALTER TABLE screens ADD COLUMN latest_seen_run_id INTEGER REFERENCES runs(id);
CREATE INDEX idx_screens_activity ON screens(package, activity_name);
CREATE TABLE run_events (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    event_key TEXT NOT NULL,
    step INTEGER,
    json TEXT NOT NULL,
    ts TEXT,
    UNIQUE(run_id, seq),
    UNIQUE(run_id, event_key)
);
CREATE INDEX idx_run_events_type ON run_events(run_id, type, seq);
CREATE TABLE run_writers (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"#;

const GRAPH: &str = r#"
CREATE TABLE actions (
    action_id TEXT PRIMARY KEY,
    screen_id INTEGER NOT NULL REFERENCES screens(id),
    verb TEXT NOT NULL,
    target_key TEXT NOT NULL,
    origin TEXT,
    tap_x INTEGER,
    tap_y INTEGER,
    selector_snapshot TEXT,
    input_payload TEXT,
    params TEXT,
    created_at TEXT,
    UNIQUE(screen_id, verb, target_key)
);
CREATE TABLE edges (
    edge_id TEXT PRIMARY KEY,
    from_screen_id INTEGER NOT NULL REFERENCES screens(id),
    action_id TEXT NOT NULL REFERENCES actions(action_id),
    to_screen_id INTEGER NOT NULL REFERENCES screens(id),
    evidence_counter INTEGER DEFAULT 1,
    last_evidence_run_id INTEGER REFERENCES runs(id),
    created_at TEXT,
    updated_at TEXT,
    UNIQUE(from_screen_id, action_id, to_screen_id)
);
CREATE INDEX idx_edges_from ON edges(from_screen_id);
CREATE TABLE graph_persistence_outcomes (
    outcome_id TEXT PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    step_ordinal INTEGER NOT NULL,
    screen_id INTEGER REFERENCES screens(id),
    action_id TEXT,
    to_screen_id INTEGER REFERENCES screens(id),
    upsert_kind TEXT NOT NULL,
    source_run_seq INTEGER NOT NULL,
    created_at TEXT,
    UNIQUE(run_id, step_ordinal)
);
CREATE TABLE action_execution_coverage (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    action_id TEXT NOT NULL REFERENCES actions(action_id),
    attempted_count INTEGER DEFAULT 0,
    succeeded_count INTEGER DEFAULT 0,
    failed_count INTEGER DEFAULT 0,
    updated_at TEXT,
    PRIMARY KEY (run_id, action_id)
);
"#;

// `ts` is stored after the (often large) JSON: without this index, MIN/MAX(ts) of a run walks
// the overflow pages of all its events.
const EVENT_TIMES: &str = r#"
CREATE INDEX idx_run_events_ts ON run_events(run_id, ts);
"#;

// One row per `note` of kind `crash` or `anr`: what the reports group by signature.
const CRASHES: &str = r#"
CREATE TABLE crashes (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER,
    ts TEXT,
    kind TEXT NOT NULL,
    package TEXT,
    process TEXT,
    pid INTEGER,
    exception TEXT,
    message TEXT,
    signature TEXT NOT NULL,
    signature_frames_json TEXT,
    trace TEXT,
    repro_steps_json TEXT,
    screenshot_path TEXT,
    recovered BOOLEAN NOT NULL DEFAULT 0,
    source_run_seq INTEGER NOT NULL,
    UNIQUE(run_id, source_run_seq)
);
CREATE INDEX idx_crashes_run ON crashes(run_id, kind, signature);
"#;

// Decisions the heuristic made because the model failed (a crawl that never reached its model
// must not look like one that did).
const FALLBACKS: &str = r#"
ALTER TABLE run_stats ADD COLUMN heuristic_fallback_count INTEGER DEFAULT 0;
"#;

// Replays are runs too: what kind of run, the run a replay replays and why (`replay` asked for,
// `minimise` a test of a minimisation, `verify` one of its verifying replays); and one row per
// `minimised` note.
const REPLAYS: &str = r#"
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'crawl';
ALTER TABLE runs ADD COLUMN replay_of TEXT;
ALTER TABLE runs ADD COLUMN replay_purpose TEXT;
CREATE INDEX idx_runs_replay_of ON runs(replay_of);
CREATE TABLE minimisations (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ts TEXT,
    kind TEXT NOT NULL,
    signature TEXT NOT NULL,
    steps_before INTEGER NOT NULL,
    steps INTEGER NOT NULL,
    one_minimal BOOLEAN NOT NULL DEFAULT 0,
    minimal BOOLEAN NOT NULL DEFAULT 0,
    halted TEXT,
    replays INTEGER NOT NULL DEFAULT 0,
    seconds REAL,
    verify_replays INTEGER NOT NULL DEFAULT 0,
    reproduced INTEGER NOT NULL DEFAULT 0,
    verdict TEXT NOT NULL,
    data_json TEXT NOT NULL,
    source_run_seq INTEGER NOT NULL,
    UNIQUE(run_id, source_run_seq)
);
CREATE INDEX idx_minimisations_run ON minimisations(run_id, kind, signature);
"#;

/// Tables derived from `run_events`; `rebuild` empties them (children first) and re-projects.
pub(crate) const PROJECTION_TABLES: &[&str] = &[
    "minimisations",
    "crashes",
    "action_execution_coverage",
    "edges",
    "graph_persistence_outcomes",
    "actions",
    "run_stats",
    "ai_interactions",
    "transitions",
    "step_logs",
    "screen_states",
    "screens",
];

// What each model call cost (its tokens at the model's price) and the run's total.
const MODEL_COST: &str = r#"
ALTER TABLE ai_interactions ADD COLUMN cost REAL;
ALTER TABLE run_stats ADD COLUMN total_ai_cost REAL;
"#;

// The states of a screen the decider's graph told apart by what actions did there, and the
// state each step's action was taken in.
const STATES: &str = r#"
CREATE TABLE screen_states (
    id INTEGER PRIMARY KEY,
    screen_id INTEGER NOT NULL,
    state_key TEXT NOT NULL,
    shows_json TEXT NOT NULL,
    first_seen_run_id INTEGER NOT NULL,
    first_seen_step INTEGER NOT NULL,
    seen_count INTEGER NOT NULL DEFAULT 1,
    FOREIGN KEY (screen_id) REFERENCES screens(id),
    FOREIGN KEY (first_seen_run_id) REFERENCES runs(id),
    UNIQUE(screen_id, state_key)
);
ALTER TABLE step_logs ADD COLUMN state_id INTEGER REFERENCES screen_states(id);
"#;
