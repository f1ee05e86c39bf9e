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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags};

use super::{Context, Result, Store};

/// The second thread and when to wake it. Dropping it waits for a checkpoint in progress and
/// hands checkpoints back to SQLite's automatic ones.
pub(crate) struct Checkpointer<'s> {
    store: &'s Store,
    /// `None` once dropping: closing the channel ends the thread.
    wake: Option<SyncSender<()>>,
    /// Set by the writer when it wakes the second thread, cleared by that thread when its
    /// checkpoint is done.
    busy: Arc<AtomicBool>,
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
        let busy = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&busy);
        let worker = std::thread::Builder::new()
            .name("droid-checkpoint".into())
            .spawn(move || checkpoint_when_woken(&conn, &woken, &flag))
            .map_err(super::Error::Thread)?;
        store.set_auto_checkpoint(false)?;
        Ok(Checkpointer {
            store,
            wake: Some(wake),
            busy,
            tail_due: false,
            worker: Some(worker),
            since_copied: 0,
            every,
        })
    }

    /// Called after each commit with the bytes of events it wrote.
    pub(crate) fn committed(&mut self, bytes: u64) -> Result<()> {
        self.since_copied += bytes;
        if self.busy.load(Ordering::Acquire) {
            return Ok(());
        }
        if std::mem::take(&mut self.tail_due) {
            self.checkpoint_here()?;
        }
        if self.since_copied < self.every {
            return Ok(());
        }
        // Not busy, so the thread has taken every earlier wake: this send never blocks. It
        // fails only if the thread is gone; the writer then checkpoints itself.
        self.busy.store(true, Ordering::Release);
        match self.wake.as_ref().map(|wake| wake.send(())) {
            Some(Ok(())) => self.tail_due = true,
            _ => {
                self.busy.store(false, Ordering::Release);
                self.checkpoint_here()?;
            }
        }
        Ok(())
    }

    /// A PASSIVE checkpoint on the writer's connection.
    fn checkpoint_here(&mut self) -> Result<()> {
        self.since_copied = 0;
        passive_checkpoint(self.store.connection()).ctx("checkpointing")
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
fn checkpoint_when_woken(conn: &Connection, woken: &Receiver<()>, busy: &AtomicBool) {
    for () in woken {
        // PASSIVE never waits for the writer. Should it fail (another process checkpointing
        // at the same moment), the writer's own checkpoint that follows copies the frames.
        let _ = passive_checkpoint(conn);
        busy.store(false, Ordering::Release);
    }
}

/// Copies what it can of the WAL into the database without waiting for readers or the writer.
fn passive_checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    // The pragma answers with a row, so it is read rather than executed.
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
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

    /// Waits until the second thread's checkpoint is done.
    fn wait_while(busy: &AtomicBool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while busy.load(Ordering::Acquire) {
            assert!(Instant::now() < deadline, "the checkpoint never finished");
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
        let busy = Arc::clone(&checkpointer.busy);
        let mut commits = 0;
        let mut sizes = Vec::new();
        for _ in 0..8 {
            while !busy.load(Ordering::Acquire) {
                store.write(insert).unwrap();
                commits += 1;
                checkpointer.committed(blob.len() as u64).unwrap();
            }
            // A transaction begun before the second thread's checkpoint ends and committed
            // after it: frames that checkpoint could not copy, as when the writer never pauses.
            store
                .write(|conn| {
                    wait_while(&busy);
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
