//! APKs: what an app declares in its binary `AndroidManifest.xml` ([`Manifest`]), read from
//! the APK's zip ([`read_manifest`]), and APKs built from a manifest ([`build`]) for the
//! simulator, which serves one per app model.
//!
//! Activity names are fully qualified the way the package manager resolves them: a name that
//! starts with `.`, or has no `.` at all, is relative to the manifest's package.

pub mod axml;

use std::io::{Read, Seek, Write};

use axml::{Attribute, Element, Value, ANDROID_NS};

/// The manifest inside every APK.
pub const MANIFEST_ENTRY: &str = "AndroidManifest.xml";
/// A manifest larger than this is not a manifest (the biggest real ones are a few hundred KiB).
const MAX_MANIFEST_BYTES: u64 = 16 * 1024 * 1024;

const ATTR_LABEL: u32 = 0x0101_0001;
const ATTR_NAME: u32 = 0x0101_0003;
const ATTR_EXPORTED: u32 = 0x0101_0010;
const ATTR_TARGET_ACTIVITY: u32 = 0x0101_0202;
const ATTR_VERSION_CODE: u32 = 0x0101_021b;
const ATTR_VERSION_NAME: u32 = 0x0101_021c;
const ATTR_MIN_SDK: u32 = 0x0101_020c;
const ATTR_TARGET_SDK: u32 = 0x0101_0270;

/// Why an APK's manifest could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApkError {
    #[error("not an APK (zip): {0}")]
    Zip(#[source] zip::result::ZipError),
    #[error("the APK has no {MANIFEST_ENTRY}")]
    NoManifest,
    #[error("{MANIFEST_ENTRY} is {0} bytes, too large to be a manifest")]
    TooLarge(u64),
    #[error("reading {MANIFEST_ENTRY}: {0}")]
    Read(#[source] std::io::Error),
    #[error("{MANIFEST_ENTRY}: {0}")]
    Axml(#[from] axml::AxmlError),
    #[error("{MANIFEST_ENTRY} has no <manifest package=...> root")]
    NoPackage,
}

/// What a manifest declares that droid uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    pub package: String,
    pub version_name: Option<String>,
    /// `Some(name)` in a split APK (`split_config.arm64_v8a.apk` says `config.arm64_v8a`).
    pub split: Option<String>,
    /// Every `<activity>` of `<application>`, fully qualified, in manifest order.
    pub activities: Vec<String>,
    /// Every `<activity-alias>`: its name and the activity it opens, both fully qualified.
    pub aliases: Vec<(String, String)>,
    /// The activities (or aliases) with a MAIN / LAUNCHER intent filter.
    pub launchers: Vec<String>,
}

/// `.Main` and `Main` in package `com.a` are `com.a.Main`; `com.b.Main` stays.
pub fn qualify(package: &str, class: &str) -> String {
    if let Some(rest) = class.strip_prefix('.') {
        format!("{package}.{rest}")
    } else if !class.contains('.') && !package.is_empty() {
        format!("{package}.{class}")
    } else {
        class.to_string()
    }
}

fn string_attr(element: &Element, name: &str, id: u32) -> Option<String> {
    element
        .attribute(Some(ANDROID_NS), name, Some(id))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn is_launcher(component: &Element) -> bool {
    component
        .children
        .iter()
        .filter(|f| f.name == "intent-filter")
        .any(|filter| {
            let has = |tag: &str, value: &str| {
                filter.children.iter().any(|c| {
                    c.name == tag && string_attr(c, "name", ATTR_NAME).as_deref() == Some(value)
                })
            };
            has("action", "android.intent.action.MAIN")
                && has("category", "android.intent.category.LAUNCHER")
        })
}

impl Manifest {
    /// What the parsed manifest declares.
    pub fn from_element(root: &Element) -> Result<Manifest, ApkError> {
        let package = root
            .attribute(None, "package", None)
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty() && root.name == "manifest")
            .ok_or(ApkError::NoPackage)?
            .to_string();
        let split = root
            .attribute(None, "split", None)
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut manifest = Manifest {
            version_name: string_attr(root, "versionName", ATTR_VERSION_NAME),
            split,
            ..Manifest::default()
        };
        for application in root.children.iter().filter(|c| c.name == "application") {
            for component in &application.children {
                let Some(name) = string_attr(component, "name", ATTR_NAME) else {
                    continue;
                };
                let name = qualify(&package, &name);
                match component.name.as_str() {
                    "activity" => manifest.activities.push(name.clone()),
                    "activity-alias" => {
                        let target = string_attr(component, "targetActivity", ATTR_TARGET_ACTIVITY)
                            .map(|t| qualify(&package, &t))
                            .unwrap_or_default();
                        manifest.aliases.push((name.clone(), target));
                    }
                    _ => continue,
                }
                if is_launcher(component) {
                    manifest.launchers.push(name);
                }
            }
        }
        manifest.package = package;
        Ok(manifest)
    }

    /// Reads a binary `AndroidManifest.xml`.
    pub fn parse(data: &[u8]) -> Result<Manifest, ApkError> {
        Manifest::from_element(&axml::parse(data)?)
    }

    /// The binary XML tree of this manifest, as aapt2 would compile a minimal one.
    pub fn to_element(&self) -> Element {
        let android = |name: &str, id: u32, value: Value| Attribute {
            namespace: Some(ANDROID_NS.to_string()),
            name: name.to_string(),
            resource_id: Some(id),
            value,
        };
        let plain = |name: &str, value: &str| Attribute {
            namespace: None,
            name: name.to_string(),
            resource_id: None,
            value: Value::String(value.to_string()),
        };
        let mut line = 1;
        let mut next_line = || {
            line += 1;
            line
        };
        let mut root = Element::new("manifest");
        root.line = next_line();
        root.attributes
            .push(android("versionCode", ATTR_VERSION_CODE, Value::Int(1)));
        if let Some(version) = &self.version_name {
            root.attributes.push(android(
                "versionName",
                ATTR_VERSION_NAME,
                Value::String(version.clone()),
            ));
        }
        root.attributes.push(plain("package", &self.package));
        if let Some(split) = &self.split {
            root.attributes.push(plain("split", split));
        }
        let mut sdk = Element::new("uses-sdk");
        sdk.line = next_line();
        sdk.attributes
            .push(android("minSdkVersion", ATTR_MIN_SDK, Value::Int(24)));
        sdk.attributes
            .push(android("targetSdkVersion", ATTR_TARGET_SDK, Value::Int(33)));
        root.children.push(sdk);
        if self.split.is_some() {
            return root;
        }
        let mut application = Element::new("application");
        application.line = next_line();
        application.attributes.push(android(
            "label",
            ATTR_LABEL,
            Value::String(self.package.clone()),
        ));
        for activity in &self.activities {
            let mut element = Element::new("activity");
            element.line = next_line();
            element
                .attributes
                .push(android("name", ATTR_NAME, Value::String(activity.clone())));
            let launcher = self.launchers.contains(activity);
            element
                .attributes
                .push(android("exported", ATTR_EXPORTED, Value::Bool(launcher)));
            if launcher {
                let mut filter = Element::new("intent-filter");
                filter.line = next_line();
                for (tag, value) in [
                    ("action", "android.intent.action.MAIN"),
                    ("category", "android.intent.category.LAUNCHER"),
                ] {
                    let mut child = Element::new(tag);
                    child.line = next_line();
                    child
                        .attributes
                        .push(android("name", ATTR_NAME, Value::String(value.into())));
                    filter.children.push(child);
                }
                element.children.push(filter);
            }
            application.children.push(element);
        }
        for (alias, target) in &self.aliases {
            let mut element = Element::new("activity-alias");
            element.line = next_line();
            element
                .attributes
                .push(android("name", ATTR_NAME, Value::String(alias.clone())));
            element.attributes.push(android(
                "targetActivity",
                ATTR_TARGET_ACTIVITY,
                Value::String(target.clone()),
            ));
            application.children.push(element);
        }
        root.children.push(application);
        root
    }
}

/// The manifest of an APK (any `Read + Seek`: a file, or bytes in a `Cursor`).
pub fn read_manifest(apk: impl Read + Seek) -> Result<Manifest, ApkError> {
    let mut archive = zip::ZipArchive::new(apk).map_err(ApkError::Zip)?;
    let entry = archive.by_name(MANIFEST_ENTRY).map_err(|e| match e {
        zip::result::ZipError::FileNotFound => ApkError::NoManifest,
        other => ApkError::Zip(other),
    })?;
    if entry.size() > MAX_MANIFEST_BYTES {
        return Err(ApkError::TooLarge(entry.size()));
    }
    let mut data = Vec::with_capacity(entry.size() as usize);
    entry
        .take(MAX_MANIFEST_BYTES)
        .read_to_end(&mut data)
        .map_err(ApkError::Read)?;
    Manifest::parse(&data)
}

/// An APK holding `manifest` as binary XML (deflated, as build tools store it). It carries no
/// code and no resources: enough for the package manager's path, `adb pull`, aapt and droid.
pub fn build(manifest: &Manifest) -> Vec<u8> {
    let zipped = || -> zip::result::ZipResult<Vec<u8>> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            // A fixed time keeps the APK's bytes (and so its MobSF hash) the same on every start.
            .last_modified_time(zip::DateTime::default());
        zip.start_file(MANIFEST_ENTRY, options)?;
        zip.write_all(&axml::write(&manifest.to_element()))?;
        Ok(zip.finish()?.into_inner())
    };
    // Writing into memory fails only on a bug; an empty APK would then show it.
    zipped().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            package: "com.example.shop".into(),
            version_name: Some("2.1".into()),
            split: None,
            activities: vec![
                "com.example.shop.MainActivity".into(),
                "com.example.shop.CartActivity".into(),
            ],
            aliases: vec![(
                "com.example.shop.Launcher".into(),
                "com.example.shop.MainActivity".into(),
            )],
            launchers: vec!["com.example.shop.MainActivity".into()],
        }
    }

    #[test]
    fn names_are_qualified_as_the_package_manager_does() {
        assert_eq!(qualify("com.a", ".Main"), "com.a.Main");
        assert_eq!(qualify("com.a", "Main"), "com.a.Main");
        assert_eq!(qualify("com.a", "com.b.Main"), "com.b.Main");
    }

    #[test]
    fn a_built_apk_declares_what_it_was_built_from() {
        let apk = build(&manifest());
        assert_eq!(
            read_manifest(std::io::Cursor::new(apk)).unwrap(),
            manifest()
        );
        let split = Manifest {
            split: Some("config.arm64_v8a".into()),
            activities: Vec::new(),
            aliases: Vec::new(),
            launchers: Vec::new(),
            ..manifest()
        };
        let back = read_manifest(std::io::Cursor::new(build(&split))).unwrap();
        assert_eq!(back.split.as_deref(), Some("config.arm64_v8a"));
        assert!(back.activities.is_empty());
    }

    #[test]
    fn what_is_not_an_apk_says_so() {
        assert!(matches!(
            read_manifest(std::io::Cursor::new(b"not a zip".to_vec())),
            Err(ApkError::Zip(_))
        ));
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        zip.start_file("classes.dex", zip::write::SimpleFileOptions::default())
            .unwrap();
        let empty = zip.finish().unwrap().into_inner();
        assert!(matches!(
            read_manifest(std::io::Cursor::new(empty)),
            Err(ApkError::NoManifest)
        ));
    }
}
