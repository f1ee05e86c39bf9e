//! The stage contract: every filter stage behaves the same way on the stream (vector's
//! component compliance harness is the model). Lines it does not consume pass through byte for
//! byte and in order; a bad line is named by number on stderr and the stage exits 1 after
//! processing the rest; empty input exits 0; a closed stdout is a normal end; stderr carries no
//! ANSI escapes when it is not a terminal.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use crate::common::{droid, feed};

/// Lines no stage consumes: an unknown type (odd spacing kept), a note, a run_ended.
const PASS_THROUGH: &str = concat!(
    "{\"type\":\"x_custom\",\"v\":1,  \"payload\":{\"b\":2,\"a\":1}}\n",
    "{\"type\":\"note\",\"v\":1,\"kind\":\"warning\",\"message\":\"caf\u{e9} \u{1f600}\"}\n",
    "{\"type\":\"run_ended\",\"v\":1,\"run_id\":\"r1\",\"status\":\"COMPLETED\"}\n",
);

/// Each filter stage with the arguments it needs to run without a device.
fn stages(dir: &std::path::Path) -> Vec<(&'static str, Vec<String>)> {
    let db = dir.join("contract.db").display().to_string();
    vec![
        ("droid-hash", vec![]),
        // No observation in these streams: the heuristic decides nothing.
        ("droid-decide", vec![]),
        // No decision in these streams, so droid-act never needs a device.
        ("droid-act", vec![]),
        ("droid-record", vec!["--db".into(), db]),
    ]
}

fn run(bin: &str, args: &[String], input: &str) -> (i32, String, String) {
    let out = feed(droid(bin).args(args), input);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn unconsumed_lines_pass_through_unchanged_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    for (bin, args) in stages(dir.path()) {
        let (code, stdout, stderr) = run(bin, &args, PASS_THROUGH);
        assert_eq!(code, 0, "{bin}: {stderr}");
        // droid-record may announce a run it opened; every input line must still be there, in order.
        let out_lines: Vec<&str> = stdout.lines().collect();
        let mut position = 0;
        for line in PASS_THROUGH.lines() {
            let found = out_lines[position..].iter().position(|l| *l == line);
            let found = found.unwrap_or_else(|| panic!("{bin} lost or changed {line}:\n{stdout}"));
            position += found + 1;
        }
    }
}

#[test]
fn bad_lines_are_named_and_the_rest_is_processed() {
    let dir = tempfile::tempdir().unwrap();
    let input = format!(
        "{PASS_THROUGH}this is not json\n{{\"type\":\"note\",\"v\":1,\"kind\":\"after\"}}\n"
    );
    for (bin, args) in stages(dir.path()) {
        let (code, stdout, stderr) = run(bin, &args, &input);
        assert_eq!(code, 1, "{bin} must exit 1 after a bad line: {stderr}");
        assert!(
            stderr.contains("line 4"),
            "{bin} must name line 4: {stderr}"
        );
        assert!(
            stdout.contains("\"kind\":\"after\""),
            "{bin} stopped at the bad line"
        );
        assert!(!stderr.contains("panicked"), "{bin} panicked: {stderr}");
    }
}

#[test]
fn a_decision_of_no_action_or_too_many_is_a_bad_line_never_carried_out() {
    let dir = tempfile::tempdir().unwrap();
    let click = r#"{"action":"click","point":[1,1]}"#;
    let decision = |n: usize| {
        let actions = vec![click; n].join(",");
        format!("{{\"type\":\"decision\",\"v\":1,\"run_id\":\"r1\",\"actions\":[{actions}]}}\n")
    };
    for n in [0, 13, 1000] {
        let input = format!("{}{PASS_THROUGH}", decision(n));
        for (bin, args) in stages(dir.path()) {
            let (code, stdout, stderr) = run(bin, &args, &input);
            assert_eq!(code, 1, "{bin}, {n} actions: {stderr}");
            assert!(
                stderr.contains(&format!("line 1: decision: {n} actions")),
                "{bin}: {stderr}"
            );
            // Skipped: neither passed on, executed (no result, no device asked) nor recorded.
            assert!(!stdout.contains("\"decision\""), "{bin}: {stdout}");
            assert!(!stdout.contains("\"result\""), "{bin}: {stdout}");
        }
    }
}

#[test]
fn empty_input_is_a_clean_exit() {
    let dir = tempfile::tempdir().unwrap();
    for (bin, args) in stages(dir.path()) {
        let (code, stdout, stderr) = run(bin, &args, "");
        assert_eq!(code, 0, "{bin}: {stderr}");
        assert!(stdout.is_empty(), "{bin} wrote on empty input: {stdout}");
    }
}

#[test]
fn closed_stdout_is_a_normal_end() {
    let dir = tempfile::tempdir().unwrap();
    let many: String = PASS_THROUGH.repeat(20_000);
    for (bin, args) in stages(dir.path()) {
        let mut child = droid(bin)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one line, then close our end of the pipe while the stage is still writing.
        let mut stdout = child.stdout.take().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = many.clone();
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let mut first = [0u8; 16];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{bin}: {stderr}");
        assert!(!stderr.contains("panicked"), "{bin}: {stderr}");
    }
}

#[test]
fn piped_stderr_has_no_ansi_escapes() {
    let dir = tempfile::tempdir().unwrap();
    for (bin, args) in stages(dir.path()) {
        let (_, _, stderr) = run(bin, &args, "garbage\n");
        assert!(!stderr.is_empty(), "{bin} said nothing about a bad line");
        assert!(
            !stderr.contains('\u{1b}'),
            "{bin} coloured a pipe: {stderr:?}"
        );
    }
}

#[test]
fn help_has_examples() {
    for (bin, _) in stages(std::path::Path::new(".")) {
        let out = Command::new(crate::common::bin_path(bin))
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{bin} --help");
        assert!(
            help.to_lowercase().contains("example"),
            "{bin} --help has no examples:\n{help}"
        );
    }
}
