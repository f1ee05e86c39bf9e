//! The integrations a crawl carries (`droid::integrations`): the declared activities, which
//! every crawl reads, and the ones asked for (video, traffic capture, MobSF). They are checked
//! before the first step (one that cannot work is a warning and is left out), started, shown
//! every observation, ticked between steps and finished before `run_ended`, MobSF's analysis
//! on a thread of its own beside the others. Their notes join the run like the driver's own.

use super::{Level, Run};
use crate::adb::AdbClient;
use crate::events::{Event, Note, NoteKind, Observation};
use crate::integrations::activities::Activities;
use crate::integrations::{unavailable_note, Integration, SessionDir, Unavailable};

/// How many unvisited activities an observation offers the decider as goals.
pub const GOALS: usize = 20;

pub(super) struct Attached<'d> {
    device: &'d AdbClient,
    session: SessionDir,
    activities: Option<Activities>,
    others: Vec<Box<dyn Integration>>,
}

impl<'d> Attached<'d> {
    /// Checks every integration; those that cannot work are warned about and left out.
    pub(super) fn check(
        run: &mut Run,
        device: &'d AdbClient,
        session: SessionDir,
        package: &str,
        asked: Vec<Box<dyn Integration>>,
        unavailable: &[Unavailable],
    ) -> Attached<'d> {
        for missing in unavailable {
            warn_unavailable(run, missing);
        }
        let mut activities = Some(Activities::new(package));
        if let Some(Err(missing)) = activities.as_mut().map(|a| a.check(device)) {
            warn_unavailable(run, &missing);
            activities = None;
        }
        let mut others = Vec::new();
        for mut integration in asked {
            match integration.check(device) {
                Ok(()) => others.push(integration),
                Err(missing) => warn_unavailable(run, &missing),
            }
        }
        Attached {
            device,
            session,
            activities,
            others,
        }
    }

    /// Starts them: the activities first (MobSF analyses the APK they pull).
    pub(super) fn start(&mut self, run: &mut Run) {
        let (device, session) = (self.device, &self.session);
        if let Some(activities) = &mut self.activities {
            emit(run, activities.start(device, session));
        }
        for integration in &mut self.others {
            run.say(Level::Info, &format!("{}: starting", integration.name()));
            emit(run, integration.start(device, session));
        }
    }

    /// Shows them an observation, and puts the declared activities not visited yet on it: the
    /// decider's goals.
    pub(super) fn observed(&mut self, observation: &mut Observation) {
        if let Some(activities) = &mut self.activities {
            activities.observed(observation);
            observation.unvisited_activities =
                activities.unvisited().into_iter().take(GOALS).collect();
        }
        for integration in &mut self.others {
            integration.observed(observation);
        }
    }

    /// Between steps: what went wrong meanwhile (a recording that failed, PCAPdroid gone).
    pub(super) fn tick(&mut self, run: &mut Run) {
        for integration in &mut self.others {
            let notes = integration.tick(self.device);
            emit(run, notes);
        }
    }

    /// Stops and collects them; MobSF's analysis runs beside the others' finishing.
    pub(super) fn finish(mut self, run: &mut Run) {
        let (device, session) = (self.device, &self.session);
        let (mut slow, quick): (Vec<_>, Vec<_>) = std::mem::take(&mut self.others)
            .into_iter()
            .partition(|i| i.name() == crate::integrations::mobsf::NAME);
        for integration in &slow {
            run.say(
                Level::Info,
                &format!("{}: analysing the APK", integration.name()),
            );
        }
        std::thread::scope(|scope| {
            let analyses: Vec<_> = slow
                .iter_mut()
                .map(|integration| scope.spawn(move || integration.finish(device, session)))
                .collect();
            for mut integration in quick {
                let notes = integration.finish(device, session);
                emit(run, notes);
            }
            if let Some(activities) = &mut self.activities {
                emit(run, activities.finish(device, session));
            }
            for analysis in analyses {
                match analysis.join() {
                    Ok(notes) => emit(run, notes),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        });
    }
}

fn warn_unavailable(run: &mut Run, missing: &Unavailable) {
    emit(run, vec![unavailable_note(missing)]);
}

/// An integration's notes, stamped with the run and step, into the run; warnings are said.
fn emit(run: &mut Run, notes: Vec<Note>) {
    for note in notes {
        if note.kind == NoteKind::Warning {
            run.say(Level::Warn, note.message.as_deref().unwrap_or_default());
        }
        run.emit(Event::Note(Note {
            run_id: Some(run.run_id.clone()),
            step: (run.step > 0).then_some(run.step),
            ..note
        }));
    }
}

/// Why a past run could not be analysed at all.
#[derive(Debug, thiserror::Error)]
pub enum PastRunError {
    #[error("crawler.db")]
    Store(#[from] crate::store::Error),
    #[error("run {0} has no session folder")]
    NoSession(String),
    #[error("MobSF at {url}")]
    Mobsf {
        url: String,
        #[source]
        source: crate::integrations::mobsf::MobsfError,
    },
}

/// A past run's session folder and app: whether its APK is already saved (no device needed).
pub fn past_run_apk(
    db: &std::path::Path,
    run: &str,
) -> Result<(SessionDir, String, bool), PastRunError> {
    let store = crate::store::Store::open_existing(db)?;
    let row = store.run_row(run)?;
    let session = row
        .session_path
        .filter(|p| !p.is_empty() && std::path::Path::new(p).is_dir())
        .ok_or_else(|| PastRunError::NoSession(row.run_id.clone()))?;
    let session = SessionDir::new(session);
    let saved = session
        .root()
        .join(crate::integrations::activities::FOLDER)
        .join(format!("{}.apk", row.app_package))
        .is_file();
    Ok((session, row.app_package, saved))
}

/// `droid-crawl mobsf --run ID`: the MobSF analysis of a past run's APK (the one its crawl
/// saved, else pulled from `device`), its notes recorded into that run (crawler.db and the
/// session's events.jsonl) and returned.
pub fn analyse_past_run(
    db: &std::path::Path,
    run: &str,
    config: crate::integrations::mobsf::MobsfConfig,
    device: Option<&AdbClient>,
) -> Result<Vec<Note>, PastRunError> {
    use std::io::Write as _;
    let (session, package, _) = past_run_apk(db, run)?;
    let url = config.url.clone();
    let mobsf = crate::integrations::mobsf::Mobsf::new(config);
    mobsf
        .check()
        .map_err(|source| PastRunError::Mobsf { url, source })?;
    let store = crate::store::Store::open_existing(db)?;
    let run_id = store.run_row(run)?.run_id;
    let notes: Vec<Note> =
        crate::integrations::mobsf::scan_session(&mobsf, &session, &package, device)
            .into_iter()
            .map(|note| Note {
                run_id: Some(run_id.clone()),
                ..note
            })
            .collect();
    let mut ingest = store.ingest();
    for note in &notes {
        ingest.push_event(Event::Note(note.clone()))?;
    }
    ingest.finish()?;
    let events = session.root().join("events.jsonl");
    if let Ok(mut file) = std::fs::OpenOptions::new().append(true).open(&events) {
        for note in &notes {
            let _ = writeln!(file, "{}", Event::Note(note.clone()).to_line());
        }
    }
    Ok(notes)
}
