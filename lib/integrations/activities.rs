//! Activity coverage: the activities the app's APK declares (its binary `AndroidManifest.xml`,
//! pulled from the device with `pm path` and a sync pull), against the activities the crawl
//! showed. The declared list reaches `run_stats.unique_activities_visited` (distinct declared
//! activities visited) and [`Activities::unvisited`] is what a decider can aim for.
//!
//! Split APKs (`pm path` lists `base.apk` and `split_*.apk`): activities live in the base, which
//! is the one pulled and read; the splits are named in the note.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::json;

use super::{artifact_note, chain, run, warning_note, Error, Integration, SessionDir, Unavailable};
use crate::adb::AdbClient;
use crate::apk::{self, Manifest};
use crate::device::text::shell_quote;
use crate::events::{Note, Observation};

/// The integration's name, the `data.artifact` of its notes.
pub const NAME: &str = "activities";
/// Where pulled APKs go in the session folder.
pub const FOLDER: &str = "extracted_apk";

/// What `pm path` said of a package and where its base APK now is on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PulledApk {
    /// `extracted_apk/{package}.apk` in the session folder.
    pub path: PathBuf,
    /// The base APK's path on the device.
    pub device_path: String,
    /// The split APKs' paths on the device (not pulled).
    pub splits: Vec<String>,
}

/// The base APK and the splits among `pm path`'s `package:PATH` lines: the base is
/// `base.apk` when there is one (installed apps), else the only path (system apps).
pub fn apk_paths(pm_path: &str) -> Option<(String, Vec<String>)> {
    let paths: Vec<String> = pm_path
        .lines()
        .filter_map(|l| l.trim().strip_prefix("package:"))
        .map(str::to_string)
        .collect();
    let base = paths
        .iter()
        .position(|p| p.ends_with("/base.apk"))
        .or((!paths.is_empty()).then_some(0))?;
    let mut splits = paths;
    let base = splits.remove(base);
    Some((base, splits))
}

fn pm_path(device: &AdbClient, package: &str) -> Result<(String, Vec<String>), Error> {
    let command = format!("pm path {}", shell_quote(package));
    let out = run(device, &command, &command)?;
    apk_paths(&out).ok_or(Error::Command {
        command,
        detail: "no package: line".into(),
    })
}

/// Pulls the package's base APK into `extracted_apk/{package}.apk`.
pub fn pull_apk(
    device: &AdbClient,
    package: &str,
    session: &SessionDir,
) -> Result<PulledApk, Error> {
    let (base, splits) = pm_path(device, package)?;
    let data = device.pull(&base)?;
    let path = session.write(FOLDER, &format!("{package}.apk"), &data)?;
    Ok(PulledApk {
        path,
        device_path: base,
        splits,
    })
}

/// The declared activities the crawl has not shown, in manifest order.
pub fn unvisited<'a>(
    declared: &[String],
    visited: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let visited: BTreeSet<&str> = visited.into_iter().collect();
    declared
        .iter()
        .filter(|a| !visited.contains(a.as_str()))
        .cloned()
        .collect()
}

/// The activities integration: the declared list at start, coverage at the end.
#[derive(Debug, Clone)]
pub struct Activities {
    package: String,
    manifest: Option<Manifest>,
    visited: BTreeSet<String>,
}

impl Activities {
    pub fn new(package: impl Into<String>) -> Activities {
        Activities {
            package: package.into(),
            manifest: None,
            visited: BTreeSet::new(),
        }
    }

    /// The declared activities, fully qualified (empty until started or when the APK could not
    /// be read).
    pub fn declared(&self) -> &[String] {
        self.manifest.as_ref().map_or(&[], |m| &m.activities)
    }

    /// The crawl showed `activity` (fully qualified, as observations carry it).
    pub fn observe(&mut self, activity: &str) {
        if !activity.is_empty() {
            self.visited.insert(activity.to_string());
        }
    }

    /// The declared activities not shown yet: goals for a decider.
    pub fn unvisited(&self) -> Vec<String> {
        unvisited(self.declared(), self.visited.iter().map(String::as_str))
    }

    fn read(&mut self, device: &AdbClient, session: &SessionDir) -> Result<Note, Error> {
        let pulled = pull_apk(device, &self.package, session)?;
        let file = std::fs::File::open(&pulled.path).map_err(|e| Error::io(&pulled.path, e))?;
        let apk = session.relative(&pulled.path);
        let manifest = match apk::read_manifest(file) {
            Ok(manifest) => manifest,
            Err(err) => {
                return Ok(artifact_note(
                    NAME,
                    format!("{apk}: cannot read the declared activities"),
                    json!({"files": [apk], "error": chain(&err)}),
                ))
            }
        };
        let split_names: Vec<&str> = pulled
            .splits
            .iter()
            .map(|p| p.rsplit('/').next().unwrap_or(p))
            .collect();
        let mut message = format!("{} declares {} activities", apk, manifest.activities.len());
        if !split_names.is_empty() {
            message.push_str(&format!(
                " (split APKs {}: the base is read)",
                split_names.join(", ")
            ));
        }
        let note = artifact_note(
            NAME,
            message,
            json!({
                "files": [apk],
                "package": manifest.package,
                "split_apks": split_names,
                "declared": manifest.activities,
                "declared_count": manifest.activities.len(),
            }),
        );
        self.manifest = Some(manifest);
        Ok(note)
    }
}

impl Integration for Activities {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&mut self, device: &AdbClient) -> Result<(), Unavailable> {
        pm_path(device, &self.package)
            .map(drop)
            .map_err(|err| Unavailable {
                integration: NAME,
                reason: format!("cannot find the APK of {}: {}", self.package, chain(&err)),
            })
    }

    fn start(&mut self, device: &AdbClient, session: &SessionDir) -> Vec<Note> {
        match self.read(device, session) {
            Ok(note) => vec![note],
            Err(err) => vec![warning_note(
                NAME,
                &format!("cannot pull the APK of {}: {}", self.package, chain(&err)),
            )],
        }
    }

    fn observed(&mut self, observation: &Observation) {
        if let Some(activity) = &observation.activity {
            self.observe(activity);
        }
    }

    fn finish(&mut self, _device: &AdbClient, _session: &SessionDir) -> Vec<Note> {
        let Some(manifest) = &self.manifest else {
            return Vec::new();
        };
        let visited: Vec<&String> = manifest
            .activities
            .iter()
            .filter(|a| self.visited.contains(*a))
            .collect();
        let unvisited = self.unvisited();
        vec![artifact_note(
            NAME,
            format!(
                "{} of {} declared activities visited",
                visited.len(),
                manifest.activities.len()
            ),
            json!({
                "package": manifest.package,
                "declared": manifest.activities,
                "declared_count": manifest.activities.len(),
                "visited": visited,
                "unvisited": unvisited,
            }),
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_apk_is_told_from_splits() {
        let split = "package:/data/app/~~kk==/com.viewer-PW==/base.apk\npackage:/data/app/~~kk==/com.viewer-PW==/split_config.arm64_v8a.apk\n";
        let (base, splits) = apk_paths(split).unwrap();
        assert!(base.ends_with("/base.apk"));
        assert_eq!(splits.len(), 1);
        let system = "package:/system/priv-app/TeleService/TeleService.apk\n";
        assert_eq!(
            apk_paths(system).unwrap(),
            (
                "/system/priv-app/TeleService/TeleService.apk".into(),
                vec![]
            )
        );
        assert_eq!(apk_paths(""), None);
    }

    #[test]
    fn unvisited_keeps_manifest_order() {
        let declared = vec!["a.Main".to_string(), "a.Cart".into(), "a.Pay".into()];
        assert_eq!(
            unvisited(&declared, ["a.Cart", "b.Other"]),
            vec!["a.Main", "a.Pay"]
        );
    }
}
