//! The files droid writes for a run, and the markers that let it delete them again.
//!
//! `droid-record delete RUN` removes files, and the paths it would remove come from events,
//! which anyone can write. So droid deletes only what it can tell it wrote itself:
//!
//! - a **session folder** (`run_started`'s `session_dir`) only when it holds a [`SESSION_MARKER`]
//!   file naming that run, written by [`create_session_dir`] when droid creates the folder; a
//!   folder the user or an event named otherwise is left in place;
//! - a **capture file** (an observation's `screenshot_path` or `xml_path`) only when its folder
//!   holds a [`CAPTURE_MARKER`], written by droid-capture in every folder it saves captures to,
//!   and its name is one droid-capture gives (`SERIAL_YYYYMMDD_HHMMSS_mmm_N[_sSTEP].png|xml`).
//!   So a hand-made run's screenshots go with it, and a dump passed to `--from-xml` never does.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Written into a session folder when droid creates it: `{"droid_session":1,"run_id":"..."}`.
pub const SESSION_MARKER: &str = ".droid-session";

/// Written into a folder droid-capture saves dumps and screenshots to: `{"droid_captures":1}`.
pub const CAPTURE_MARKER: &str = ".droid-captures";

#[derive(Serialize, Deserialize)]
struct SessionMarker {
    droid_session: u32,
    run_id: String,
}

/// Creates a run's session folder (and its parents) and marks it as the run's, so that
/// `droid-record delete` may remove it later. An existing folder is marked only when empty:
/// droid never claims files it did not write.
pub fn create_session_dir(dir: &Path, run_id: &str) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    if std::fs::read_dir(dir)?.next().is_some() && !owns_session_dir(dir, run_id) {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not empty", dir.display()),
        ));
    }
    let marker = SessionMarker {
        droid_session: 1,
        run_id: run_id.to_string(),
    };
    let json = serde_json::to_string(&marker).map_err(io::Error::other)?;
    std::fs::write(dir.join(SESSION_MARKER), json + "\n")
}

/// Whether `dir` is a real folder (not a symlink) holding a session marker that names `run_id`.
pub fn owns_session_dir(dir: &Path, run_id: &str) -> bool {
    let is_folder = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
    let marker = dir.join(SESSION_MARKER);
    let is_file = std::fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file());
    is_folder
        && is_file
        && std::fs::read_to_string(&marker)
            .ok()
            .and_then(|text| serde_json::from_str::<SessionMarker>(&text).ok())
            .is_some_and(|m| m.droid_session == 1 && m.run_id == run_id)
}

/// Marks a folder droid-capture saves to (once; an existing marker is kept).
pub fn mark_capture_dir(dir: &Path) -> io::Result<()> {
    let marker = dir.join(CAPTURE_MARKER);
    if marker.exists() {
        return Ok(());
    }
    std::fs::write(marker, "{\"droid_captures\":1}\n")
}

/// Whether `path` is a file droid-capture wrote: a regular file named as droid-capture names
/// its files, in a folder carrying the capture marker.
pub fn is_capture_file(path: &Path) -> bool {
    let named_so = path
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(is_capture_file_name);
    let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file());
    let marked = path
        .parent()
        .map(|dir| dir.join(CAPTURE_MARKER))
        .is_some_and(|marker| std::fs::symlink_metadata(marker).is_ok_and(|m| m.is_file()));
    named_so && regular && marked
}

/// `SERIAL_YYYYMMDD_HHMMSS_mmm_N[_sSTEP].png|xml`, SERIAL made of ASCII letters, digits, `-`
/// and `_` (see `capture::device`).
fn is_capture_file_name(name: &str) -> bool {
    let Some(stem) = name
        .strip_suffix(".png")
        .or_else(|| name.strip_suffix(".xml"))
    else {
        return false;
    };
    let mut parts: Vec<&str> = stem.rsplit('_').collect();
    parts.reverse();
    if parts.last().is_some_and(|p| is_step(p)) {
        parts.pop();
    }
    let digits = |s: &str, n: Option<usize>| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && n.is_none_or(|n| s.len() == n)
    };
    let n = parts.len();
    n >= 5
        && digits(parts[n - 1], None)
        && digits(parts[n - 2], Some(3))
        && digits(parts[n - 3], Some(6))
        && digits(parts[n - 4], Some(8))
        && parts[..n - 4].iter().any(|p| !p.is_empty())
        && parts[..n - 4]
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

fn is_step(part: &str) -> bool {
    part.strip_prefix('s')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// What [`remove_run_files`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// The session folder removed.
    pub session: Option<PathBuf>,
    /// Capture files removed (outside the session folder).
    pub captures: Vec<PathBuf>,
    /// Paths left in place, each with the reason.
    pub refused: Vec<(PathBuf, String)>,
}

impl Removed {
    /// What was deleted with run `run`, for people: `deleted RUN, its session folder DIR and N
    /// capture files`, then a line per path left in place and why.
    pub fn messages(&self, run: &str) -> Vec<String> {
        let mut done = format!("deleted {run}");
        if let Some(dir) = &self.session {
            done += &format!(", its session folder {}", dir.display());
        }
        if !self.captures.is_empty() {
            done += &format!(" and {} capture files", self.captures.len());
        }
        let refused = self
            .refused
            .iter()
            .map(|(path, reason)| format!("left {} in place: {reason}", path.display()));
        std::iter::once(done).chain(refused).collect()
    }
}

/// Removes the files of a deleted run that droid wrote: its session folder when marked for
/// this run, and the capture files its observations name. Anything else named is left in place
/// and reported. Files already gone are not an error.
pub fn remove_run_files(
    run_id: &str,
    session: Option<&Path>,
    captures: &[PathBuf],
) -> io::Result<Removed> {
    let mut removed = Removed::default();
    if let Some(dir) = session {
        if owns_session_dir(dir, run_id) {
            std::fs::remove_dir_all(dir)?;
            removed.session = Some(dir.to_path_buf());
        } else if std::fs::symlink_metadata(dir).is_ok() {
            let reason = format!(
                "not a session folder droid created for {run_id} (no {SESSION_MARKER} naming it)"
            );
            removed.refused.push((dir.to_path_buf(), reason));
        }
    }
    for path in captures {
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        if is_capture_file(path) {
            std::fs::remove_file(path)?;
            removed.captures.push(path.clone());
        } else {
            let reason = format!(
                "not a file droid-capture wrote (no {CAPTURE_MARKER} beside it or another name)"
            );
            removed.refused.push((path.clone(), reason));
        }
    }
    Ok(removed)
}

/// `OUT/{device}_{package}_{DDMM_HHMM}` (a `_2`, `_3`... when that folder exists), with the
/// device's serial made a safe file name (`192.168.1.5:5555` becomes `192.168.1.5_5555`).
pub fn new_session_dir(out: &Path, serial: &str, package: &str) -> PathBuf {
    let safe = |text: &str| -> String {
        text.chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    true => c,
                    false => '_',
                },
            )
            .collect()
    };
    let stamp = chrono::Local::now().format("%d%m_%H%M");
    let base = format!("{}_{}_{stamp}", safe(serial), safe(package));
    let mut dir = out.join(&base);
    let mut n = 2;
    while dir.exists() {
        dir = out.join(format!("{base}_{n}"));
        n += 1;
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_names_are_droid_captures_own() {
        for good in [
            "emulator-5554_20261122_001502_123_0.png",
            "192_168_1_5_5555_20261122_001502_123_17_s007.xml",
        ] {
            assert!(is_capture_file_name(good), "{good}");
        }
        for bad in [
            "dump.xml",
            "passwd",
            "x_20261122_001502_123_0.txt",
            "_20261122_001502_123_0.png",
            "a_2026112_001502_123_0.png",
            "a.b_20261122_001502_123_0.png",
        ] {
            assert!(!is_capture_file_name(bad), "{bad}");
        }
    }

    #[test]
    fn only_marked_folders_and_marked_captures_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let session = root.path().join("out/emulator_pkg_0101_1000");
        create_session_dir(&session, "mine").unwrap();
        std::fs::create_dir(session.join("screenshots")).unwrap();
        assert!(owns_session_dir(&session, "mine"));
        assert!(!owns_session_dir(&session, "other"));
        let victim = root.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("keep.txt"), "precious").unwrap();
        assert!(
            create_session_dir(&victim, "mine").is_err(),
            "a full folder is not claimed"
        );

        let shots = root.path().join("shots");
        std::fs::create_dir(&shots).unwrap();
        mark_capture_dir(&shots).unwrap();
        let shot = shots.join("emulator-5554_20261122_001502_123_0.png");
        std::fs::write(&shot, "png").unwrap();
        let fixture = shots.join("window_dump.xml");
        std::fs::write(&fixture, "<hierarchy/>").unwrap();
        let stray = victim.join("emulator-5554_20261122_001502_123_1.png");
        std::fs::write(&stray, "png").unwrap();

        let removed = remove_run_files("other", Some(&session), &[]).unwrap();
        assert!(session.exists() && removed.refused.len() == 1);
        let captures = [shot.clone(), fixture.clone(), stray.clone()];
        let removed = remove_run_files("mine", Some(&victim), &captures).unwrap();
        assert!(victim.join("keep.txt").exists() && fixture.exists() && stray.exists());
        assert!(!shot.exists());
        assert_eq!(removed.captures, [shot]);
        assert_eq!(removed.refused.len(), 3, "{removed:?}");
        let removed = remove_run_files("mine", Some(&session), &[]).unwrap();
        assert_eq!(removed.session.as_deref(), Some(session.as_path()));
        assert!(!session.exists());
    }
}
