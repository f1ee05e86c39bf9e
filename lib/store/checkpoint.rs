//! Checkpoints on a second thread while an ingest writes.
//!
//! Under synchronous=NORMAL a checkpoint is where the WAL and then the database file are
//! synced. Run by the writer (SQLite's automatic checkpoint), the writer sits idle through both
//! syncs: a third of the store bench's time went there. Here a PASSIVE checkpoint on a second
//! connection copies and syncs the frames committed so far while the writer goes on.
//!
//! A WAL only starts again from its beginning when all of it has been copied at the moment a
//! write begins, and frames committed during the second thread's checkpoint are still to copy.
//! So when that checkpoint is over, the writer copies this short tail itself: the WAL then
//! restarts instead of growing for as long as the writer never pauses (a longer WAL is also a
//! slower file to delete at close).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags};

use super::{Context, Result, Store};

/// The second thread and when to wake it. Dropping it waits for a checkpoint in progress and
/// hands checkpoints back to SQLite's automatic ones.
pub(crate) struct Checkpointer<'s> {
    store: &'s Store,
    wake: Option<SyncSender<()>>,
    /// Checkpoints the second thread has finished.
    finished: Arc<AtomicU64>,
    /// Times it was woken.
    woken: u64,
    /// The writer is to copy what was committed during the second thread's last checkpoint.
    tail_due: bool,
    worker: Option<JoinHandle<()>>,
    /// Bytes of events committed since the WAL was last copied in full.
    since_copied: u64,
    /// Bytes of events between checkpoints.
    every: u64,
}

impl<'s> Checkpointer<'s> {
    /// Opens the second connection and turns the writer's automatic checkpoints off; the
    /// WAL is checkpointed after about `every` bytes of events.
    pub(crate) fn start(store: &'s Store, every: u64) -> Result<Self> {
        let conn = Connection::open_with_flags(
            store.path(),
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| super::Error::Open {
            path: store.path().to_path_buf(),
            source,
        })?;
        let (wake, woken) = mpsc::sync_channel(1);
        let finished = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&finished);
        let worker = std::thread::Builder::new()
            .name("droid-checkpoint".into())
            .spawn(move || checkpoint_when_woken(&conn, &woken, &counter))
            .map_err(super::Error::Thread)?;
        store.set_auto_checkpoint(false)?;
        Ok(Checkpointer {
            store,
            wake: Some(wake),
            finished,
            woken: 0,
            tail_due: false,
            worker: Some(worker),
            since_copied: 0,
            every,
        })
    }

    /// The second thread is alive (it only stops early by panicking).
    fn alive(&self) -> bool {
        self.worker.as_ref().is_some_and(|w| !w.is_finished())
    }

    /// The second thread is checkpointing.
    fn running(&self) -> bool {
        self.finished.load(Ordering::Acquire) < self.woken && self.alive()
    }

    /// Called after each commit with the bytes of events it wrote.
    pub(crate) fn committed(&mut self, bytes: u64) -> Result<()> {
        self.since_copied += bytes;
        if self.running() {
            return Ok(());
        }
        if std::mem::take(&mut self.tail_due) {
            self.checkpoint_here()?;
        }
        if self.since_copied < self.every {
            return Ok(());
        }
        let alive = self.alive();
        match &self.wake {
            // Not running, so the thread has taken every earlier wake: this one never blocks.
            Some(wake) if alive && wake.send(()).is_ok() => {
                self.woken += 1;
                self.tail_due = true;
            }
            // Without the second thread the writer checkpoints from here on.
            _ => {
                self.wake = None;
                self.checkpoint_here()?;
            }
        }
        Ok(())
    }

    /// A PASSIVE checkpoint on the writer's connection.
    fn checkpoint_here(&mut self) -> Result<()> {
        self.since_copied = 0;
        self.store
            .connection()
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .ctx("checkpointing")
    }
}

impl Drop for Checkpointer<'_> {
    fn drop(&mut self) {
        // The thread ends when its channel closes, after a checkpoint in progress.
        self.wake = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
        // Failing leaves checkpoints to the close; nothing is lost.
        let _ = self.store.set_auto_checkpoint(true);
    }
}

/// The second thread: a PASSIVE checkpoint each time it is woken, until the writer is done.
fn checkpoint_when_woken(conn: &Connection, woken: &Receiver<()>, finished: &AtomicU64) {
    for () in woken {
        // PASSIVE never waits for the writer. Should it fail (another process checkpointing
        // at the same moment), the writer's own checkpoint that follows copies the frames.
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        finished.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn auto_checkpoint(store: &Store) -> i64 {
        store
            .connection()
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .unwrap()
    }

    /// Waits until the second thread has finished `n` checkpoints.
    fn wait_for(finished: &AtomicU64, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while finished.load(Ordering::Acquire) < n {
            assert!(Instant::now() < deadline, "checkpoint {n} never finished");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_writer_that_never_pauses_still_gets_its_wal_restarted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("crawler.db")).unwrap();
        store
            .connection()
            .execute_batch("CREATE TABLE blobs (data BLOB NOT NULL)")
            .unwrap();
        let default_pages = auto_checkpoint(&store);
        let blob = vec![7u8; 64 * 1024];
        let insert = |conn: &Connection| {
            conn.execute("INSERT INTO blobs (data) VALUES (?1)", [&blob])
                .ctx("inserting")
        };
        let wal_size = || {
            std::fs::metadata(dir.path().join("crawler.db-wal"))
                .unwrap()
                .len()
        };
        let mut checkpointer = Checkpointer::start(&store, 4 * blob.len() as u64).unwrap();
        assert_eq!(
            auto_checkpoint(&store),
            0,
            "the writer no longer checkpoints"
        );
        let finished = Arc::clone(&checkpointer.finished);
        let mut commits = 0;
        let mut sizes = Vec::new();
        for cycle in 1..=8 {
            while !checkpointer.running() {
                store.write(insert).unwrap();
                commits += 1;
                checkpointer.committed(blob.len() as u64).unwrap();
            }
            // A transaction begun before the second thread's checkpoint ends and committed
            // after it: frames that checkpoint could not copy, as when the writer never pauses.
            store
                .write(|conn| {
                    wait_for(&finished, cycle);
                    insert(conn)
                })
                .unwrap();
            commits += 1;
            checkpointer.committed(blob.len() as u64).unwrap();
            sizes.push(wal_size());
        }
        // The WAL file keeps the size of its longest stretch between restarts: restarted every
        // cycle it stays as it was after the first; never restarted it grows every cycle.
        assert!(
            sizes[7] < 2 * sizes[0],
            "WAL sizes after each cycle: {sizes:?}"
        );
        drop(checkpointer);
        assert_eq!(auto_checkpoint(&store), default_pages);
        let (rows, ok): (u64, String) = store
            .connection()
            .query_row(
                "SELECT (SELECT COUNT(*) FROM blobs), (SELECT * FROM pragma_integrity_check)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((rows, ok.as_str()), (commits, "ok"));
    }
}
