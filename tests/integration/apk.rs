//! Binary AndroidManifest.xml against the reference reading, Debian's `aapt dump xmltree`: on a
//! real APK Debian ships (`android-framework-res`), and on the APKs droid builds for the
//! simulator.

use std::path::Path;
use std::process::Command;

use droid::apk::axml::{self, Element, Value, ANDROID_NS};
use droid::apk::{self, Manifest};

use crate::common::require_tool;

/// The platform's own resources APK, from Debian's `android-framework-res`.
const FRAMEWORK_RES: &str = "/usr/share/android-framework-res/framework-res.apk";

/// One element as aapt prints it: depth, name, source line, and its string attributes.
#[derive(Debug, PartialEq, Eq)]
pub struct Line {
    pub depth: usize,
    pub name: String,
    pub line: u32,
    pub strings: Vec<(String, String)>,
}

/// `aapt dump xmltree APK AndroidManifest.xml`, element by element.
pub fn aapt_elements(apk: &Path) -> Option<Vec<Line>> {
    if !require_tool("aapt", "aapt") {
        return None;
    }
    let out = Command::new("aapt")
        .args(["dump", "xmltree"])
        .arg(apk)
        .arg(apk::MANIFEST_ENTRY)
        .output()
        .expect("running aapt");
    assert!(
        out.status.success(),
        "aapt: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("aapt prints UTF-8");
    let mut elements: Vec<Line> = Vec::new();
    let mut base = None;
    let attribute =
        regex::Regex::new(r#"^A: ([^=(]+)(?:\(0x[0-9a-f]+\))?="(.*)" \(Raw: "#).unwrap();
    let element = regex::Regex::new(r"^E: (\S+) \(line=(\d+)\)$").unwrap();
    for raw in text.lines() {
        let indent = raw.len() - raw.trim_start().len();
        let line = raw.trim_start();
        if let Some(e) = element.captures(line) {
            let base = *base.get_or_insert(indent);
            elements.push(Line {
                depth: (indent - base) / 2,
                name: e[1].to_string(),
                line: e[2].parse().unwrap(),
                strings: Vec::new(),
            });
        } else if let Some(a) = attribute.captures(line) {
            let last = elements
                .last_mut()
                .expect("an attribute follows its element");
            last.strings.push((a[1].to_string(), a[2].to_string()));
        }
    }
    Some(elements)
}

/// The same listing from droid's reader.
fn droid_elements(root: &Element) -> Vec<Line> {
    let describe = |depth: usize, e: &Element| Line {
        depth,
        name: e.name.clone(),
        line: e.line,
        strings: e
            .attributes
            .iter()
            .filter_map(|a| {
                let value = a.value.as_str()?;
                let prefix = match a.namespace.as_deref() {
                    Some(ANDROID_NS) => "android:",
                    _ => "",
                };
                Some((format!("{prefix}{}", a.name), value.to_string()))
            })
            .collect(),
    };
    let mut out = vec![describe(0, root)];
    out.extend(root.descendants().into_iter().map(|(d, e)| describe(d, e)));
    out
}

fn manifest_bytes(apk: &Path) -> Vec<u8> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(apk).unwrap()).unwrap();
    let mut entry = archive.by_name(apk::MANIFEST_ENTRY).unwrap();
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
    data
}

#[test]
fn framework_res_reads_as_aapt_reads_it() {
    let apk = Path::new(FRAMEWORK_RES);
    if !apk.exists() {
        assert!(
            std::env::var("DROID_REQUIRE_ADB").as_deref() != Ok("1"),
            "DROID_REQUIRE_ADB=1 but {FRAMEWORK_RES} is missing: apt-get install android-framework-res"
        );
        eprintln!("skipped: {FRAMEWORK_RES} missing (apt-get install android-framework-res)");
        return;
    }
    let Some(reference) = aapt_elements(apk) else {
        return;
    };
    let root = axml::parse(&manifest_bytes(apk)).expect("framework-res manifest parses");
    let ours = droid_elements(&root);
    assert_eq!(ours.len(), reference.len(), "element count");
    for (mine, theirs) in ours.iter().zip(&reference) {
        assert_eq!(mine, theirs);
    }
    // The declared activities are the `activity` elements aapt lists, qualified.
    let manifest = apk::read_manifest(std::fs::File::open(apk).unwrap()).unwrap();
    assert_eq!(manifest.package, "android");
    let declared: Vec<&str> = reference
        .iter()
        .filter(|l| l.name == "activity")
        .filter_map(|l| l.strings.iter().find(|(n, _)| n == "android:name"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert!(
        declared.len() > 10,
        "framework-res declares many activities"
    );
    assert_eq!(manifest.activities, declared);
    assert!(manifest
        .aliases
        .iter()
        .all(|(_, target)| !target.is_empty()));
}

#[test]
fn aapt_reads_the_apks_droid_builds() {
    let manifest = Manifest {
        package: "com.example.shop".into(),
        version_name: Some("1.0".into()),
        split: None,
        activities: vec![
            "com.example.shop.MainActivity".into(),
            "com.example.shop.ui.CartActivity".into(),
        ],
        aliases: vec![(
            "com.example.shop.Home".into(),
            "com.example.shop.MainActivity".into(),
        )],
        launchers: vec!["com.example.shop.MainActivity".into()],
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("base.apk");
    std::fs::write(&path, apk::build(&manifest)).unwrap();
    let Some(reference) = aapt_elements(&path) else {
        return;
    };
    let root = axml::parse(&manifest_bytes(&path)).unwrap();
    assert_eq!(droid_elements(&root), reference);
    let names: Vec<&str> = reference
        .iter()
        .filter(|l| l.name == "activity")
        .flat_map(|l| &l.strings)
        .filter(|(n, _)| n == "android:name")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(names, manifest.activities);
    assert!(reference.iter().any(|l| l.name == "category"
        && l.strings.contains(&(
            "android:name".into(),
            "android.intent.category.LAUNCHER".into()
        ))));
    let read = apk::read_manifest(std::fs::File::open(&path).unwrap()).unwrap();
    assert_eq!(read, manifest);
    assert!(matches!(
        root.attribute(Some(ANDROID_NS), "versionCode", Some(0x0101_021b)),
        Some(Value::Int(1))
    ));
}
