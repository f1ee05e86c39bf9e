//! The emulator console of `droid-sim`: an `emulator-N` serial has it on port N, the real `adb
//! emu` authenticates with the token in `$HOME/.emulator_console_auth_token` and sends
//! commands, and simulators started together take serials whose ports are free.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

use crate::common::droid;
use crate::sim_adb::{adb_binary, SimProcess};

fn console_port(sim: &SimProcess) -> u16 {
    sim.serial
        .strip_prefix("emulator-")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("an emulator serial: {}", sim.serial))
}

/// `adb -s SERIAL emu ARGS...` with the simulator's home: stdout and the exit code.
fn emu(adb: &str, sim: &SimProcess, args: &[&str]) -> (String, Option<i32>) {
    let mut all = vec!["emu"];
    all.extend(args);
    let output = sim.adb(adb, &all);
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        output.status.code(),
    )
}

fn inputs(truth: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(truth)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l.get("input").is_some())
        .collect()
}

#[test]
fn sim_console_answers_adb_emu_and_records_location_and_turns() {
    let Some(adb) = adb_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (sim, truth) = SimProcess::with_truth_log("builtin:tiny", dir.path());
    let token = sim.home.path().join(".emulator_console_auth_token");
    assert_eq!(
        std::fs::read_to_string(&token).unwrap().len(),
        16,
        "the simulator made a token, as the emulator does"
    );
    assert_eq!(
        emu(adb, &sim, &["avd", "name"]),
        ("droid_sim\r\nOK\r\n".into(), Some(0))
    );
    assert_eq!(emu(adb, &sim, &["geo", "fix", "2.35", "48.85"]).1, Some(0));
    assert_eq!(emu(adb, &sim, &["rotate"]).1, Some(0));
    let (unknown, _) = emu(adb, &sim, &["bogus"]);
    assert!(unknown.starts_with("KO: unknown command"), "{unknown:?}");
    let got: Vec<Value> = inputs(&truth)
        .into_iter()
        .filter(|i| i["input"] == "geo_fix" || i["input"] == "rotate")
        .collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        (&got[0]["longitude"], &got[0]["latitude"]),
        (&2.35.into(), &48.85.into())
    );
    assert_eq!(got[1]["input"], "rotate");

    // Without the token nothing but auth and help; a wrong token is refused.
    let stream = TcpStream::connect(("127.0.0.1", console_port(&sim))).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(&stream);
    let mut line = || {
        let mut text = String::new();
        reader.read_line(&mut text).unwrap();
        text
    };
    assert_eq!(line(), "Android Console: Authentication required\r\n");
    while line() != "OK\r\n" {}
    let mut writer = &stream;
    writer.write_all(b"geo fix 1 2\r\n").unwrap();
    assert_eq!(line(), "KO: unknown command, try 'help'\r\n");
    writer.write_all(b"auth nope\r\n").unwrap();
    assert!(line().starts_with("KO: authentication token does not match"));
    let secret = std::fs::read_to_string(&token).unwrap();
    writer
        .write_all(format!("auth {secret}\r\nkill\r\n").as_bytes())
        .unwrap();
    assert_eq!(
        line(),
        "Android Console: type 'help' for a list of commands\r\n"
    );
    assert_eq!(line(), "OK\r\n");
    assert_eq!(line(), "OK: killing emulator, bye bye\r\n");
    let mut sim = sim;
    let status = sim.wait();
    assert!(status.success(), "kill ends the simulator normally");
}

#[test]
fn sim_simulators_started_together_take_free_console_ports() {
    let first = SimProcess::start(&["--app", "builtin:tiny"]);
    let second = SimProcess::start(&["--app", "builtin:tiny"]);
    assert_ne!(first.serial, second.serial);
    for sim in [&first, &second] {
        let port = console_port(sim);
        assert!(
            (5554..=5682).contains(&port) && port.is_multiple_of(2),
            "{}",
            sim.serial
        );
        assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
    }
    // A serial whose console port is taken is refused.
    let taken = droid("droid-sim")
        .args(["--app", "builtin:tiny", "--serial", &first.serial])
        .env("HOME", first.home.path())
        .output()
        .unwrap();
    assert_eq!(taken.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&taken.stderr);
    assert!(stderr.contains("emulator console"), "{stderr}");
    assert!(taken.stdout.is_empty(), "no ready line");
}
