//! Errors as people read them: every cause of a failure is printed once, in one line
//! (`droid-x: error: what: why: deeper why`), whatever the failure.

use std::io::Write;
use std::net::TcpListener;

use crate::common::{droid, feed};

/// The causes of the error line on stderr, outermost first.
fn causes(bin: &str, stderr: &str) -> Vec<String> {
    let prefix = format!("{bin}: ");
    let line = stderr
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("{bin} said nothing: {stderr:?}"));
    let line = line[prefix.len()..]
        .strip_prefix("error: ")
        .unwrap_or(&line[prefix.len()..]);
    line.split(": ").map(str::to_string).collect()
}

/// No cause, nor anything the failure names (a path, a field), is said twice.
fn said_once(bin: &str, stderr: &str, names: &[&str]) {
    let causes = causes(bin, stderr);
    for (i, cause) in causes.iter().enumerate() {
        for later in &causes[i + 1..] {
            assert!(
                !later.contains(cause.as_str()),
                "{bin} repeats {cause:?}: {stderr}"
            );
        }
    }
    for name in names {
        assert_eq!(
            stderr.matches(name).count(),
            1,
            "{bin} names {name} once: {stderr}"
        );
    }
}

#[test]
fn a_database_in_a_missing_folder() {
    let out = droid("droid-record")
        .args(["--db", "/nonexistent-droid-folder/x.db", "runs"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    said_once("droid-record", &stderr, &["/nonexistent-droid-folder/x.db"]);
}

#[test]
fn a_missing_prompt_file() {
    let out = feed(
        droid("droid-decide").args(["--system-prompt", "/nonexistent-droid-prompt.txt"]),
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    said_once(
        "droid-decide",
        &stderr,
        &["/nonexistent-droid-prompt.txt", "No such file or directory"],
    );
}

#[test]
fn a_line_missing_a_field() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let out = feed(
        droid("droid-record").args(["--db", &db.display().to_string()]),
        "{\"type\":\"decision\",\"v\":1}\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    said_once(
        "droid-record",
        &stderr,
        &["missing field `actions`", "line 1"],
    );
}

#[test]
fn a_dead_device_socket() {
    // An ADB server that accepts and hangs up at once.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            drop(stream);
        }
    });
    for (bin, args) in [("droid-capture", vec![]), ("droid-act", vec!["back"])] {
        let out = droid(bin)
            .args(["--adb-port", &port.to_string(), "--wait-for-device", "0"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bin}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        said_once(bin, &stderr, &[]);
    }
}

#[test]
fn a_model_that_is_not_there() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.json");
    std::fs::File::create(&model)
        .unwrap()
        .write_all(b"{ not json")
        .unwrap();
    let path = model.display().to_string();
    for app in [path.as_str(), "/nonexistent-droid-model.json"] {
        let out = droid("droid-sim")
            .args(["--app", app, "--describe"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        said_once("droid-sim", &String::from_utf8_lossy(&out.stderr), &[app]);
    }
}

#[test]
fn a_model_share_that_is_no_percentage() {
    // A whole number out of range is the setting's error (exit 1); words are the flag
    // parser's (exit 2). Each names what was wrong.
    for (share, code, says) in [
        ("0", 1, "model_share \"0\" is not a whole number above 0"),
        (
            "101",
            1,
            "model_share 101 is not a percentage from 1 to 100",
        ),
        ("half", 2, "--model-share"),
    ] {
        let output = crate::common::droid("droid-decide")
            .args(["--decider", "hybrid", "--hybrid-provider", "openai"])
            .args([
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model-share",
                share,
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(code), "{share}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{stderr}");
    }
}
