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
    // API 33 replaces an installed package by default (`-r` is ignored); `-R` refuses.
    assert!(sim.adb(adb, &["install", &file]).status.success());
    assert!(sim.adb(adb, &["install", "-r", &file]).status.success());
    let again = sim.adb(adb, &["install", "-R", &file]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("INSTALL_FAILED_ALREADY_EXISTS"));

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
    // A plain screen of the APK's main activity.
    let front = text(&sim.adb(adb, &["shell", "dumpsys", "window", "displays"]));
    assert!(
        front.contains(&format!("u0 {EXTRA}/{EXTRA}.Main}}")),
        "{front}"
    );
    let resolved = text(&sim.adb(
        adb,
        &[
            "shell",
            "cmd",
            "package",
            "resolve-activity",
            "--brief",
            EXTRA,
        ],
    ));
    assert!(
        resolved.ends_with(&format!("{EXTRA}/.Main\n")),
        "{resolved}"
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
    assert!(text(&fixed).contains(
        "INSTALL_FAILED_UPDATE_INCOMPATIBLE: Existing package com.example.tiny signatures do not match newer version; ignoring!"
    ));
    // The phone's own apps stay; an unknown package is not there to remove.
    let system = sim.adb(adb, &["uninstall", "com.android.settings"]);
    assert_eq!(
        (text(&system).as_str(), system.status.code()),
        ("Failure [DELETE_FAILED_INTERNAL_ERROR]\n", Some(1))
    );
    let unknown = sim.adb(adb, &["shell", "pm", "uninstall", "com.example.absent"]);
    assert_eq!(
        (text(&unknown).as_str(), unknown.status.code()),
        ("Failure [not installed for 0]\n", Some(1))
    );
}

#[test]
fn sim_uninstalling_the_models_app_removes_it_and_its_apk_brings_it_back() {
    let Some(adb) = adb_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (sim, truth) = SimProcess::with_truth_log("builtin:tiny", dir.path());
    let tiny = "com.example.tiny";
    let launch = |sim: &SimProcess| {
        sim.adb(
            adb,
            &[
                "shell",
                "monkey",
                "-p",
                tiny,
                "-c",
                "android.intent.category.LAUNCHER",
                "1",
            ],
        )
    };
    assert!(launch(&sim).status.success());
    // The APK the phone has for it, to put it back later.
    let path = text(&sim.adb(adb, &["shell", "pm", "path", tiny]));
    let path = path
        .lines()
        .next()
        .unwrap()
        .strip_prefix("package:")
        .unwrap()
        .to_string();
    let apk = dir.path().join("tiny.apk");
    assert!(sim
        .adb(adb, &["pull", &path, &apk.to_string_lossy()])
        .status
        .success());

    let removed = sim.adb(adb, &["uninstall", tiny]);
    assert_eq!(text(&removed), "Success\n");
    let last_screen = || {
        std::fs::read_to_string(&truth)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|l| l["screen"].as_str().map(str::to_string))
            .next_back()
    };
    assert_eq!(
        last_screen().as_deref(),
        Some("@launcher"),
        "the app is gone from the screen"
    );
    assert!(!text(&sim.adb(adb, &["shell", "pm", "list", "packages"])).contains(tiny));
    assert!(!text(&sim.adb(adb, &["shell", "uiautomator", "dump", "/dev/tty"])).contains("Tiny"));
    assert_eq!(
        launch(&sim).status.code(),
        Some(252),
        "monkey finds nothing to run"
    );
    assert_eq!(
        sim.adb(adb, &["shell", "pm", "path", tiny]).status.code(),
        Some(1)
    );

    // Installed again (through an install session, as `adb install-multiple` makes one), the
    // model's screens come back.
    let installed = sim.adb(adb, &["install-multiple", &apk.to_string_lossy()]);
    assert!(installed.status.success(), "{}", text(&installed));
    assert!(launch(&sim).status.success());
    assert_eq!(last_screen().as_deref(), Some("home"));
}

#[test]
fn sim_install_sessions_take_apks_from_device_files_and_end_when_committed() {
    let Some(adb) = adb_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sim = SimProcess::start(&["--app", "builtin:tiny"]);
    let file = dir.path().join("extra.apk");
    std::fs::write(&file, apk()).unwrap();
    assert!(sim
        .adb(
            adb,
            &["push", &file.to_string_lossy(), "/data/local/tmp/extra.apk"]
        )
        .status
        .success());
    let shell = |command: &str| text(&sim.adb(adb, &["shell", command]));
    let created = shell("pm install-create");
    let id = created
        .strip_prefix("Success: created install session [")
        .and_then(|rest| rest.strip_suffix("]\n"))
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    let size = apk().len();
    assert_eq!(
        shell(&format!(
            "pm install-write {id} base /data/local/tmp/extra.apk"
        )),
        format!("Success: streamed {size} bytes\n")
    );
    assert_eq!(shell(&format!("pm install-commit {id}")), "Success\n");
    assert!(shell("pm list packages -3").contains(EXTRA));
    assert!(shell(&format!("pm install-commit {id}")).contains(&format!(
        "SecurityException: Caller has no access to session {id}"
    )));
    let abandoned = shell("pm install-create -S 10");
    let other = abandoned
        .trim_end()
        .rsplit('[')
        .next()
        .unwrap()
        .trim_end_matches(']');
    assert_eq!(shell(&format!("pm install-abandon {other}")), "Success\n");
}
