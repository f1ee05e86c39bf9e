//! crawler.db: the run's event log and its SQLite projection (runs, screens, steps, the graph).
//!
//! The event stream is the source of truth. [`Store::ingest`] appends events to `run_events`
//! and projects them, one transaction per step, so a killed writer leaves only whole steps.
//! Everything but `runs` and `run_events` can be dropped and rebuilt from the log
//! ([`Store::rebuild`]). Feeding the same events twice changes nothing: every event has a
//! natural key in its run (`obs:12`, `res:12:0`, ...) and a known key is skipped.
//! `docs/storage.md` documents the tables and the rules.

mod checkpoint;
mod held;
mod ingest;
mod projection;
mod query;
mod report;
mod schema;
pub mod statistic;
mod stats;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OptionalExtension};
use sha2::{Digest, Sha256};

pub use ingest::{Ingest, IngestStats, Pushed};
pub use query::{ActionRow, JournalEntry, PathHop, RunSummary, ScreenVisits, JOURNAL_STEPS};
pub use report::{CrashRow, NoteRow, RunRow, ScreenRow, StepRow, TransitionRow};
pub use schema::LATEST as SCHEMA_VERSION;

/// How long one statement waits for a lock before SQLite reports busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The page size of a new crawler.db; an existing file keeps its own. An observation's JSON is
/// several KiB: 16 KiB pages (SQLite's default is 4 KiB) store and log it in fewer pages and
/// WAL frames, which made the store bench's ingest about 15 % faster.
const NEW_PAGE_SIZE: i64 = 16 * 1024;
/// WAL bytes between SQLite's automatic checkpoints, which an ingest replaces by its own (see
/// [`INGEST_CHECKPOINT_BYTES`]); SQLite's default is 4 MiB. Under
/// synchronous=NORMAL the only syncs are at checkpoints. 128 MiB looked faster while only the
/// writing was timed, but the close then checkpoints all of it: ingest plus close took 2.2 s
/// against 1.8 s at 32 MiB in the store bench.
const CHECKPOINT_BYTES: i64 = 32 * 1024 * 1024;
/// Bytes of events between the checkpoints an ingest runs on a second thread (see
/// `checkpoint.rs`). Each leaves the writer less to copy itself and the close less to finish:
/// alternated in the store bench, 8 MiB gave a median of 20 725 events/s over five runs
/// against 20 009 at 32 MiB.
const INGEST_CHECKPOINT_BYTES: u64 = 8 * 1024 * 1024;
/// Attempts at taking the write lock (each after the busy timeout) before giving up.
const LOCK_ATTEMPTS: u32 = 6;

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{}: its folder does not exist", .0.display())]
    NoFolder(PathBuf),
    #[error("opening {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{path} has schema version {found}; this droid knows up to {supported}")]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("{context}")]
    Sql {
        context: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "{}: no database there (droid-record creates one when it records events; check --db or \
         DROID_DB)",
        .0.display()
    )]
    NoDatabase(PathBuf),
    #[error("no run {0:?} in the database")]
    NoRun(String),
    #[error("run {run}: stored event {seq} is not a valid event: {reason}")]
    StoredEvent {
        run: String,
        seq: i64,
        reason: String,
    },
    #[error("removing the run's files ({path})")]
    SessionDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing")]
    Write(#[source] std::io::Error),
    #[error("starting the checkpoint thread")]
    Thread(#[source] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds a context to SQLite errors.
pub(crate) trait Context<T> {
    fn ctx(self, context: &'static str) -> Result<T>;
}

impl<T> Context<T> for rusqlite::Result<T> {
    fn ctx(self, context: &'static str) -> Result<T> {
        self.map_err(|source| Error::Sql { context, source })
    }
}

/// An open crawler.db.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) a crawler.db: WAL, busy timeout, foreign keys on, schema
    /// migrated to the latest version.
    pub fn open(path: &Path) -> Result<Store> {
        let open_err = |source| Error::Open {
            path: path.to_path_buf(),
            source,
        };
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
        if folder.is_some_and(|folder| !folder.is_dir()) {
            return Err(Error::NoFolder(path.to_path_buf()));
        }
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // Only takes effect on a file not written yet, so before anything else. Switching a
        // new file to WAL needs it to itself: when the stages of a pipe open it at the same
        // moment, SQLite answers busy at once (no busy handler for a deadlock it foresees), so
        // that is retried.
        with_lock_retry(|| {
            conn.execute_batch(&format!("PRAGMA page_size={NEW_PAGE_SIZE}"))?;
            // journal_mode answers with a row, so it is read rather than executed.
            conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        })
        .map_err(open_err)?;
        // A 16 MiB page cache (default 2 MiB) keeps a group of steps and the hot index pages
        // in memory instead of spilling and re-reading them. Statement journals in memory:
        // on disk (/var/tmp) they were 27 MB written per 10 000 steps ingested.
        conn.execute_batch(
            "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-16384;
             PRAGMA temp_store=MEMORY;",
        )
        .map_err(open_err)?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.set_auto_checkpoint(true)?;
        store.migrate()?;
        Ok(store)
    }

    /// Opens a crawler.db that must already exist: for reading and maintaining, where creating an
    /// empty database would only hide a wrong path.
    pub fn open_existing(path: &Path) -> Result<Store> {
        if !path.is_file() {
            return Err(Error::NoDatabase(path.to_path_buf()));
        }
        Store::open(path)
    }

    /// Turns SQLite's automatic checkpoint (every [`CHECKPOINT_BYTES`] of WAL) on or off.
    fn set_auto_checkpoint(&self, on: bool) -> Result<()> {
        let pages = if on {
            let page_size: i64 = self
                .conn
                .query_row("PRAGMA page_size", [], |r| r.get(0))
                .ctx("reading the page size")?;
            CHECKPOINT_BYTES / page_size.max(512)
        } else {
            0
        };
        self.conn
            .execute_batch(&format!("PRAGMA wal_autocheckpoint={pages}"))
            .ctx("setting the automatic checkpoint")
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for read-only queries this module does not offer (reports).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64> {
        self.conn
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                [],
                |r| r.get(0),
            )
            .ctx("reading the schema version")
    }

    /// Brings the schema to the latest version. The version check and the migrations share one
    /// write transaction: the stages of a pipe open a new database at the same moment, and only
    /// one of them may apply a migration.
    fn migrate(&self) -> Result<()> {
        self.write(|conn| {
            conn.execute_batch(
                "CREATE TABLE IF NOT EXISTS schema_version (
                    version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
            )
            .ctx("creating schema_version")?;
            let found = self.schema_version()?;
            if found > schema::LATEST {
                return Err(Error::TooNew {
                    path: self.path.clone(),
                    found,
                    supported: schema::LATEST,
                });
            }
            for (index, sql) in schema::MIGRATIONS.iter().enumerate().skip(found as usize) {
                conn.execute_batch(sql).ctx("applying a migration")?;
                conn.execute(
                    "INSERT INTO schema_version (version, applied_at) VALUES (?1, ?2)",
                    rusqlite::params![index as i64 + 1, crate::events::now_ts()],
                )
                .ctx("recording a migration")?;
            }
            Ok(())
        })
    }

    /// Runs `work` in one write transaction. Taking the write lock is retried with backoff when
    /// another writer holds it; any error rolls the whole transaction back.
    pub(crate) fn write<T>(&self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        with_lock_retry(|| self.conn.execute_batch("BEGIN IMMEDIATE"))
            .ctx("starting a transaction")?;
        match work(&self.conn) {
            Ok(value) => match with_lock_retry(|| self.conn.execute_batch("COMMIT")) {
                Ok(()) => Ok(value),
                Err(source) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    Err(Error::Sql {
                        context: "committing",
                        source,
                    })
                }
            },
            Err(err) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(err)
            }
        }
    }

    /// The row id of a run, by its event run id.
    pub fn run_row_id(&self, run: &str) -> Result<i64> {
        self.conn
            .query_row("SELECT id FROM runs WHERE run_key = ?1", [run], |r| {
                r.get(0)
            })
            .optional()
            .ctx("looking up a run")?
            .ok_or_else(|| Error::NoRun(run.to_string()))
    }

    /// The newest run (by start), for `latest`: a crawl, or a replay asked for, never one of
    /// a minimisation's replays.
    pub fn latest_run(&self) -> Result<Option<String>> {
        self.conn
            .query_row(
                "SELECT run_key FROM runs WHERE COALESCE(replay_purpose, 'replay') = 'replay'
                 ORDER BY start_time DESC, id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .ctx("looking up the latest run")
    }

    /// Writes the run's events, in order, one JSON line each: ready to be fed again.
    pub fn export(&self, run: &str, out: &mut dyn std::io::Write) -> Result<u64> {
        let run_id = self.run_row_id(run)?;
        let mut stmt = self
            .conn
            .prepare("SELECT json FROM run_events WHERE run_id = ?1 ORDER BY seq")
            .ctx("reading events")?;
        let mut rows = stmt.query([run_id]).ctx("reading events")?;
        let mut count = 0;
        while let Some(row) = rows.next().ctx("reading events")? {
            let json: String = row.get(0).ctx("reading events")?;
            writeln!(out, "{json}").map_err(Error::Write)?;
            count += 1;
        }
        out.flush().map_err(Error::Write)?;
        Ok(count)
    }

    /// Deletes a run, its events and everything projected from them, and the files droid wrote
    /// for it: its session folder (named by `run_started`) and the capture files its
    /// observations name, each only when droid can tell it wrote it (see [`crate::session`]).
    /// Screens and the graph are shared between runs, so the projection is rebuilt from the
    /// remaining events. Returns what was removed and what was left in place.
    pub fn delete_run(&self, run: &str) -> Result<crate::session::Removed> {
        let run_id = self.run_row_id(run)?;
        let session: Option<String> = self
            .conn
            .query_row(
                "SELECT session_path FROM runs WHERE id = ?1",
                [run_id],
                |r| r.get(0),
            )
            .ctx("reading the session folder")?;
        let captures = self.capture_paths(run_id)?;
        self.write(|conn| {
            clear_projection(conn)?;
            conn.execute("DELETE FROM runs WHERE id = ?1", [run_id])
                .ctx("deleting the run")?;
            projection::replay_all(conn)
        })?;
        let session = session.filter(|s| !s.is_empty()).map(PathBuf::from);
        crate::session::remove_run_files(run, session.as_deref(), &captures).map_err(|source| {
            Error::SessionDir {
                path: session.unwrap_or_default(),
                source,
            }
        })
    }

    /// The dumps and screenshots a run's observations name, each once.
    fn capture_paths(&self, run_id: i64) -> Result<Vec<PathBuf>> {
        let mut stmt = self
            .conn
            .prepare("SELECT json FROM run_events WHERE run_id = ?1 AND type = 'observation'")
            .ctx("reading the run's observations")?;
        let rows = stmt
            .query_map([run_id], |r| r.get::<_, String>(0))
            .ctx("reading the run's observations")?;
        let mut paths = Vec::new();
        for json in rows {
            let json = json.ctx("reading the run's observations")?;
            let value: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
            for field in ["screenshot_path", "xml_path"] {
                if let Some(path) = value.get(field).and_then(|p| p.as_str()) {
                    let path = PathBuf::from(path);
                    if !paths.contains(&path) {
                        paths.push(path);
                    }
                }
            }
        }
        Ok(paths)
    }

    /// Drops every projected table and re-projects all runs from `run_events`, in the order the
    /// events were first recorded, in one transaction.
    pub fn rebuild(&self) -> Result<u64> {
        self.write(|conn| {
            clear_projection(conn)?;
            projection::replay_all(conn)
        })
    }
}

/// Empties the projection and resets the projected columns of `runs`.
fn clear_projection(conn: &Connection) -> Result<()> {
    for table in schema::PROJECTION_TABLES {
        conn.execute(&format!("DELETE FROM {table}"), [])
            .ctx("clearing the projection")?;
    }
    conn.execute(
        "UPDATE runs SET status = 'RUNNING', end_time = NULL, total_steps = 0, unique_screens = 0",
        [],
    )
    .ctx("resetting runs")?;
    Ok(())
}

fn with_lock_retry(mut attempt: impl FnMut() -> rusqlite::Result<()>) -> rusqlite::Result<()> {
    let mut backoff = Duration::from_millis(20);
    let mut tries = 1;
    loop {
        match attempt() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                    && tries < LOCK_ATTEMPTS =>
            {
                std::thread::sleep(backoff);
                backoff *= 2;
                tries += 1;
            }
            other => return other,
        }
    }
}

/// A deterministic id: the first 32 hex digits of sha256 over the parts of a natural key.
pub(crate) fn stable_id(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0x1f]);
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = hasher.finalize();
    let mut id = String::with_capacity(32);
    for byte in &digest[..16] {
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    id
}

/// The host name, for telling whose process a writer pid is.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_ids_depend_on_every_part_and_its_boundaries() {
        let id = stable_id(&["a", "bc"]);
        assert_eq!(id.len(), 32);
        assert_eq!(id, stable_id(&["a", "bc"]));
        assert_ne!(id, stable_id(&["ab", "c"]));
    }

    #[test]
    fn stages_opening_a_new_database_at_once_migrate_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crawler.db");
        let opened: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..6).map(|_| scope.spawn(|| Store::open(&path))).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for store in opened {
            assert_eq!(store.unwrap().schema_version().unwrap(), SCHEMA_VERSION);
        }
        let store = Store::open(&path).unwrap();
        let migrations: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(migrations, SCHEMA_VERSION);
    }

    #[test]
    fn opens_with_wal_foreign_keys_and_latest_schema() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        let mode: String = store
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let fk: i64 = store
            .conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        drop(store);
        // Reopening applies nothing twice.
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        let rows: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, SCHEMA_VERSION);
    }

    #[test]
    fn a_new_file_gets_large_pages_and_any_file_a_32_mib_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let pragma = |store: &Store, name: &str| -> i64 {
            store
                .conn
                .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                .unwrap()
        };
        let store = Store::open(&dir.path().join("new.db")).unwrap();
        assert_eq!(pragma(&store, "page_size"), NEW_PAGE_SIZE);
        assert_eq!(pragma(&store, "wal_autocheckpoint"), 2048);
        assert_eq!(pragma(&store, "temp_store"), 2, "temporary files in memory");

        let old = dir.path().join("old.db");
        Connection::open(&old)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        let store = Store::open(&old).unwrap();
        assert_eq!(pragma(&store, "page_size"), 4096);
        assert_eq!(pragma(&store, "wal_autocheckpoint"), 8192);
    }

    #[test]
    fn refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let store = Store::open(&path).unwrap();
        store
            .conn
            .execute("INSERT INTO schema_version VALUES (99, 'x')", [])
            .unwrap();
        drop(store);
        assert!(matches!(
            Store::open(&path),
            Err(Error::TooNew { found: 99, .. })
        ));
    }
}
