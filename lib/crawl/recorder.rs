//! Records a crawl's events into crawler.db on a thread of its own: one transaction per step,
//! off the step's critical path.

use std::path::Path;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::events::{Event, Observation};
use crate::screen::ScreenModel;
use crate::store::{self, Store};

/// What the recording thread is asked to do.
enum Record {
    Event(Box<Event>),
    /// An observation with the screen model the crawl computed for it.
    Observed(Box<Observation>, Arc<ScreenModel>),
    /// A step ended: what is complete is committed; the sender, when there is one, is told
    /// once it is.
    Commit(Option<Sender<()>>),
}

pub(super) struct Recorder {
    sender: Option<Sender<Record>>,
    thread: Option<JoinHandle<Result<store::IngestStats, store::Error>>>,
}

impl Recorder {
    pub(super) fn start(db: &Path) -> Recorder {
        let (sender, records) = mpsc::channel::<Record>();
        let db = db.to_path_buf();
        let thread = std::thread::spawn(move || {
            let store = Store::open(&db)?;
            let mut ingest = store.ingest();
            for record in records {
                match record {
                    Record::Event(event) => drop(ingest.push_event(*event)?),
                    Record::Observed(observation, model) => {
                        drop(ingest.push_observed(*observation, model)?)
                    }
                    Record::Commit(done) => {
                        ingest.commit()?;
                        if let Some(done) = done {
                            let _ = done.send(());
                        }
                    }
                }
            }
            ingest.finish()
        });
        Recorder {
            sender: Some(sender),
            thread: Some(thread),
        }
    }

    fn send(&self, record: Record) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(record);
        }
    }

    pub(super) fn record(&mut self, event: Event) {
        self.send(Record::Event(Box::new(event)));
    }

    pub(super) fn record_observed(&mut self, observation: Observation, model: Arc<ScreenModel>) {
        self.send(Record::Observed(Box::new(observation), model));
    }

    /// The steps so far are committed, without waiting.
    pub(super) fn commit(&mut self) {
        self.send(Record::Commit(None));
    }

    /// The steps so far are committed before this returns: for a stage program that reads
    /// crawler.db (a one-shot `droid-decide --db`), which must see every earlier step.
    pub(super) fn sync(&mut self) {
        let (done, committed) = mpsc::channel();
        self.send(Record::Commit(Some(done)));
        // A recorder that failed has nothing more to commit: its error comes at the end.
        let _ = committed.recv();
    }

    pub(super) fn finish(&mut self) -> Result<store::IngestStats, store::Error> {
        drop(self.sender.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Ok(store::IngestStats::default()),
        }
    }
}
