//! The installed apps' APKs: where the package manager keeps them (`pm path`) and what they
//! hold, so `adb pull` of a path `pm path` printed gives a real APK whose binary
//! `AndroidManifest.xml` declares the app's activities (see [`crate::apk`]).

use std::collections::BTreeMap;

use base64::Engine;
use sha2::{Digest, Sha256};

use super::component::full_class;
use super::model::AppModel;
use super::pcapdroid::{self, PCAPDROID_PACKAGE};
use crate::apk::{self, Manifest};

/// The Android 11+ install directory of a package: `/data/app/~~HASH==/PKG-HASH==`.
pub fn apk_dir(package: &str) -> String {
    let digest = Sha256::digest(package.as_bytes());
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    format!(
        "/data/app/~~{}==/{package}-{}==",
        b64(&digest[..16]),
        b64(&digest[16..32])
    )
}

/// The APK files of a package as `pm path` lists them: `base.apk`, then the model's splits.
pub fn apk_paths(model: &AppModel, package: &str) -> Vec<String> {
    let dir = apk_dir(package);
    let mut paths = vec![format!("{dir}/base.apk")];
    if package == model.package() {
        paths.extend(
            model
                .apk()
                .splits
                .iter()
                .map(|split| format!("{dir}/split_{split}.apk")),
        );
    }
    paths
}

/// Every APK file of the apps the model installs (`installed` minus the phone's own), keyed by
/// path: each declares the activities of the model's screens of its package, the model's app
/// also its `apk.extra_activities`, with the start screen's activity as the launcher.
pub fn apk_files(
    model: &AppModel,
    installed: &[String],
    is_system: impl Fn(&str) -> bool,
) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for package in installed.iter().filter(|p| !is_system(p)) {
        let mut activities: Vec<String> = Vec::new();
        let mut add = |activity: String| {
            if !activities.contains(&activity) {
                activities.push(activity);
            }
        };
        for screen in model.screens().iter().filter(|s| s.package == *package) {
            add(full_class(package, &screen.activity));
        }
        if package == model.package() {
            for extra in &model.apk().extra_activities {
                add(apk::qualify(package, extra));
            }
        }
        if package == PCAPDROID_PACKAGE {
            for activity in pcapdroid::ACTIVITIES {
                add(full_class(package, activity));
            }
        }
        let start = model.screen(model.start());
        let launcher = if package == model.package() && start.package == *package {
            full_class(package, &start.activity)
        } else {
            activities.first().cloned().unwrap_or_default()
        };
        let manifest = Manifest {
            package: package.clone(),
            version_name: Some(if package == model.package() {
                model.version_name().to_string()
            } else {
                "1.0".to_string()
            }),
            split: None,
            launchers: activities
                .iter()
                .filter(|a| **a == launcher)
                .cloned()
                .collect(),
            activities,
            aliases: Vec::new(),
        };
        let mut paths = apk_paths(model, package).into_iter();
        if let Some(base) = paths.next() {
            files.insert(base, apk::build(&manifest));
        }
        for (path, split) in paths.zip(&model.apk().splits) {
            let split_manifest = Manifest {
                split: Some(split.clone()),
                activities: Vec::new(),
                launchers: Vec::new(),
                ..manifest.clone()
            };
            files.insert(path, apk::build(&split_manifest));
        }
    }
    files
}
