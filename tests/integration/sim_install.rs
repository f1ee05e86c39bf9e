//! `adb install` of a real APK (built here with droid's APK writer, read back by aapt): the
//! package joins the device's, launches, has its APK where `pm path` says, and uninstalls;
//! what a device refuses is refused.

use std::process::Command;

use droid::apk::{build, Manifest};
use serde_json::Value;

use crate::sim_adb::{adb_binary, SimProcess};

const EXTRA: &str = "com.example.extra";

fn apk() -> Vec<u8> {
    build(&Manifest {
        package: EXTRA.to_string(),
        version_name: Some("2.5".to_string()),
        activities: vec![format!("{EXTRA}.Main")],
        launchers: vec![format!("{EXTRA}.Main")],
        ..Manifest::default()
    })
}

fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn sim_adb_install_puts_a_real_apk_on_the_device_and_uninstall_takes_it_off() {
    let Some(adb) = adb_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (sim, truth) = SimProcess::with_truth_log("builtin:tiny", dir.path());
    let file = dir.path().join("extra.apk");
    std::fs::write(&file, apk()).unwrap();
    let file = file.to_string_lossy().into_owned();

    let installed = sim.adb(adb, &["install", &file]);
    assert!(installed.status.success(), "{}", text(&installed));
    assert!(text(&installed).contains("Success"));
    let again = sim.adb(adb, &["install", &file]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("INSTALL_FAILED_ALREADY_EXISTS"));
    assert!(sim.adb(adb, &["install", "-r", &file]).status.success());

    let packages = text(&sim.adb(adb, &["shell", "pm", "list", "packages", "-3"]));
    assert!(
        packages.contains(&format!("package:{EXTRA}\n")),
        "{packages}"
    );
    let version = text(&sim.adb(adb, &["shell", "dumpsys", "package", EXTRA]));
    assert!(version.contains("versionName=2.5"), "{version}");

    // The APK pm path names is the one installed, as aapt reads it.
    let path = text(&sim.adb(adb, &["shell", "pm", "path", EXTRA]));
    let path = path.trim().strip_prefix("package:").unwrap().to_string();
    let pulled = dir.path().join("pulled.apk");
    assert!(sim
        .adb(adb, &["pull", &path, &pulled.to_string_lossy()])
        .status
        .success());
    assert_eq!(std::fs::read(&pulled).unwrap(), apk());
    if crate::common::require_tool("aapt", "aapt") {
        let badging = Command::new("aapt")
            .args(["dump", "badging"])
            .arg(&pulled)
            .output()
            .unwrap();
        let badging = String::from_utf8_lossy(&badging.stdout);
        assert!(
            badging.contains(&format!("package: name='{EXTRA}'")),
            "{badging}"
        );
    }

    // It launches like any app, on a generic screen of its own.
    let launched = sim.adb(
        adb,
        &[
            "shell",
            "monkey",
            "-p",
            EXTRA,
            "-c",
            "android.intent.category.LAUNCHER",
            "1",
        ],
    );
    assert!(launched.status.success(), "{}", text(&launched));
    let screens: Vec<String> = std::fs::read_to_string(&truth)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|l| l["screen"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        screens.last().map(String::as_str),
        Some("@external:com.example.extra")
    );

    let removed = sim.adb(adb, &["uninstall", EXTRA]);
    assert!(text(&removed).contains("Success"), "{}", text(&removed));
    let packages = text(&sim.adb(adb, &["shell", "pm", "list", "packages"]));
    assert!(!packages.contains(EXTRA));
    assert!(!sim
        .adb(adb, &["shell", "pm", "path", EXTRA])
        .status
        .success());
}

#[test]
fn sim_adb_install_refuses_what_is_not_an_apk_and_the_models_own_package() {
    let Some(adb) = adb_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sim = SimProcess::start(&["--app", "builtin:tiny"]);
    let junk = dir.path().join("junk.apk");
    std::fs::write(&junk, b"not a zip at all").unwrap();
    let refused = sim.adb(adb, &["install", &junk.to_string_lossy()]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused).contains("INSTALL_PARSE_FAILED_NOT_APK"),
        "{}",
        text(&refused)
    );
    let own = dir.path().join("tiny.apk");
    std::fs::write(
        &own,
        build(&Manifest {
            package: "com.example.tiny".to_string(),
            ..Manifest::default()
        }),
    )
    .unwrap();
    let fixed = sim.adb(adb, &["install", "-r", &own.to_string_lossy()]);
    assert_eq!(fixed.status.code(), Some(1));
    assert!(text(&fixed).contains("INSTALL_FAILED_UPDATE_INCOMPATIBLE"));
}
