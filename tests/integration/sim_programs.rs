//! The device programs and host services other ADB tools lean on (mobilecli, mobile-mcp),
//! through the real `adb` client against the `droid-sim` binary: `logcat`'s formats and its
//! stream, `pgrep`/`pkill`/`kill` on the simulated processes, a `screenrecord` stopped by
//! SIGINT, `adb forward` and `run-as`.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use crate::common::require_tool;
use crate::sim_adb::{adb_binary, SimProcess};

const TINY: &str = "com.example.tiny";

/// How long a test waits for something the simulator must do at once: a bound against a hang,
/// never a measurement.
const PATIENCE: Duration = Duration::from_secs(30);

fn text(output: &std::process::Output) -> (String, String, Option<i32>) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code(),
    )
}

fn shell(adb: &str, sim: &SimProcess, command: &str) -> (String, String, Option<i32>) {
    text(&sim.adb(adb, &["shell", command]))
}

fn launch(adb: &str, sim: &SimProcess) {
    let (_, _, status) = shell(
        adb,
        sim,
        &format!("monkey -p {TINY} -c android.intent.category.LAUNCHER 1"),
    );
    assert_eq!(status, Some(0));
}

/// A background `adb` whose output lines arrive on a channel.
struct Stream {
    child: Child,
    lines: Receiver<String>,
}

impl Stream {
    fn start(adb: &str, sim: &SimProcess, args: &[&str]) -> Stream {
        let mut child = sim
            .adb_command(adb, args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("adb runs");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Stream { child, lines }
    }

    /// Lines until one contains `needle` (that one included).
    fn until(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("no line with {needle:?} came; got {seen:#?}"));
            let found = line.contains(needle);
            seen.push(line);
            if found {
                return seen;
            }
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `pgrep ARGS` on the device finds something (`true`) or finds nothing (`false`).
fn wait_for_pgrep(adb: &str, sim: &SimProcess, args: &str, running: bool) -> String {
    for _ in 0..600 {
        let (out, _, status) = shell(adb, sim, &format!("pgrep {args}"));
        if (status == Some(0)) == running {
            return out;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "pgrep {args} never {}",
        if running { "found it" } else { "lost it" }
    );
}

#[test]
fn logcat_prints_the_formats_logcat_has_and_streams_what_is_logged_next() {
    let Some(adb) = adb_binary() else {
        return;
    };
    let sim = SimProcess::start(&["--app", "builtin:tiny"]);
    launch(adb, &sim);

    // `-v threadtime,year`, as mobilecli reads the crash buffer and the stream, with its regex.
    let year = regex::Regex::new(
        r"^(\d{4})-\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}\.\d{3}\s+(\d+)\s+\d+\s+(\w)\s+(\S+)\s*: (.*)$",
    )
    .unwrap();
    let (log, _, status) = text(&sim.adb(adb, &["logcat", "-d", "-v", "threadtime,year"]));
    assert_eq!(status, Some(0));
    let lines: Vec<&str> = log.lines().filter(|l| !l.starts_with("-----")).collect();
    assert!(lines.iter().any(|l| l.contains("START u0")), "{log}");
    for line in &lines {
        let fields = year.captures(line).unwrap_or_else(|| panic!("{line:?}"));
        assert_eq!(fields[1].parse::<i32>().unwrap(), {
            use chrono::Datelike;
            chrono::Utc::now().year()
        });
    }
    let (epoch, _, _) = text(&sim.adb(adb, &["logcat", "-d", "-v", "epoch"]));
    let epoch_line = regex::Regex::new(r"^ +\d{10}\.\d{3} +\d+ +\d+ [VDIWEF] ").unwrap();
    assert!(epoch
        .lines()
        .filter(|l| !l.starts_with("---"))
        .all(|l| epoch_line.is_match(l)));
    let (brief, _, _) = shell(adb, &sim, "logcat -d -v brief -s ActivityManager");
    assert!(
        brief
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("I/ActivityManager(  560): Start proc ")),
        "{brief}"
    );
    let (_, error, status) = shell(adb, &sim, "logcat -d -v sparkly");
    assert_eq!(
        (error.as_str(), status),
        ("logcat: Invalid -v 'sparkly'.\n", Some(1))
    );

    // `-T 1`: the last line, then what is logged next, until the client goes away.
    let stream = Stream::start(adb, &sim, &["logcat", "-v", "time", "-T", "1"]);
    let tail = stream.until("Displayed");
    assert_eq!(tail.len(), 2, "the divider and the last line: {tail:#?}");
    wait_for_pgrep(adb, &sim, "logcat", true);
    assert_eq!(
        shell(adb, &sim, &format!("am force-stop {TINY}")).2,
        Some(0)
    );
    let next = stream.until("has died");
    assert!(
        next.iter()
            .any(|l| l.contains("Force stopping com.example.tiny")),
        "{next:#?}"
    );
    drop(stream);
    wait_for_pgrep(adb, &sim, "logcat", false);

    // Signalled, a streaming logcat dies (SIGTERM: 128 + 15) and its client ends with it.
    let mut stream = Stream::start(adb, &sim, &["logcat", "-b", "system"]);
    let pid = wait_for_pgrep(adb, &sim, "-x logcat", true);
    assert_eq!(shell(adb, &sim, &format!("kill {}", pid.trim())).2, Some(0));
    let ended = stream.child.wait().expect("adb ends");
    assert_eq!(ended.code(), Some(143));
}

#[test]
fn pgrep_and_kill_find_and_signal_the_devices_processes() {
    let Some(adb) = adb_binary() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sim = SimProcess::start(&["--app", "builtin:tiny"]);
    launch(adb, &sim);

    assert_eq!(
        shell(adb, &sim, "pgrep -l system_server"),
        ("560 system_server\n".into(), String::new(), Some(0))
    );
    assert_eq!(shell(adb, &sim, "pgrep -x logd").0, "250\n");
    let (app, _, _) = shell(adb, &sim, &format!("pidof {TINY}"));
    assert_eq!(shell(adb, &sim, &format!("pgrep {TINY}")).0, app);
    assert_eq!(shell(adb, &sim, "pgrep nothing-like-this").2, Some(1));
    assert_eq!(
        shell(adb, &sim, &format!("kill -0 {}", app.trim())).2,
        Some(0),
        "signal 0 only asks"
    );
    assert_eq!(shell(adb, &sim, &format!("pidof {TINY}")).0, app);
    assert_eq!(
        shell(adb, &sim, "kill 1"),
        (
            String::new(),
            "kill: 1: Operation not permitted\n".into(),
            Some(1)
        )
    );
    assert_eq!(
        shell(adb, &sim, "kill 99999").1,
        "kill: 99999: No such process\n"
    );

    // mobilecli's way to stop a recording without a time limit: pgrep -f its file, then
    // kill -INT; screenrecord finishes the MP4 at once and its `adb shell` ends.
    let mut recording = sim
        .adb_command(adb, &["shell", "screenrecord", "/sdcard/rec-1.mp4"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("adb runs");
    let pid = wait_for_pgrep(adb, &sim, "-f /sdcard/rec-1.mp4", true);
    let (listed, _, _) = shell(adb, &sim, "pgrep -lf rec-1");
    assert_eq!(
        listed,
        format!("{} screenrecord /sdcard/rec-1.mp4\n", pid.trim())
    );
    assert_eq!(
        shell(adb, &sim, &format!("kill -INT {}", pid.trim())).2,
        Some(0)
    );
    let status = recording.wait().expect("adb ends");
    assert!(status.success(), "{status:?}");
    let video = dir.path().join("rec.mp4");
    let pulled = sim.adb(
        adb,
        &["pull", "/sdcard/rec-1.mp4", &video.to_string_lossy()],
    );
    assert!(pulled.status.success(), "{:?}", text(&pulled));
    let bytes = std::fs::read(&video).unwrap();
    assert!(
        bytes.windows(4).any(|w| w == b"moov"),
        "a finished MP4 has its moov atom"
    );
    if require_tool("ffprobe", "ffmpeg") {
        let probe = std::process::Command::new("ffprobe")
            .args([
                "-v",
                "error",
                "-show_entries",
                "stream=codec_name",
                "-of",
                "csv=p=0",
            ])
            .arg(&video)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&probe.stdout).trim(), "h264");
    }
}

#[test]
fn forwards_are_listed_and_refused_as_a_device_refuses_them_and_run_as_refuses_release_apps() {
    let Some(adb) = adb_binary() else {
        return;
    };
    let sim = SimProcess::start(&["--app", "builtin:tiny"]);
    assert_eq!(text(&sim.adb(adb, &["forward", "--list"])).0, "\n");
    let (port, _, status) = text(&sim.adb(adb, &["forward", "tcp:0", "localabstract:devicekit"]));
    assert_eq!(status, Some(0));
    let port: u16 = port.trim().parse().expect("the port the server chose");
    let (listing, _, _) = text(&sim.adb(adb, &["forward", "--list"]));
    assert_eq!(
        listing,
        format!("{} tcp:{port} localabstract:devicekit\n\n", sim.serial)
    );
    // Nothing listens on the device: the connection is accepted, then closed.
    let mut connection = TcpStream::connect(("127.0.0.1", port)).expect("the server listens");
    connection.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut byte = [0u8; 1];
    assert_eq!(connection.read(&mut byte).unwrap_or(0), 0);
    let local = format!("tcp:{port}");
    let (_, error, status) = text(&sim.adb(adb, &["forward", "--no-rebind", &local, "tcp:1"]));
    assert_eq!(status, Some(1));
    assert!(error.contains("cannot rebind existing socket"), "{error}");
    assert!(sim
        .adb(adb, &["forward", "--remove", &local])
        .status
        .success());
    let (_, error, status) = text(&sim.adb(adb, &["forward", "--remove", &local]));
    assert_eq!(status, Some(1));
    assert!(
        error.contains(&format!("listener '{local}' not found")),
        "{error}"
    );
    assert!(sim
        .adb(adb, &["forward", "tcp:0", "tcp:8080"])
        .status
        .success());
    assert!(sim.adb(adb, &["forward", "--remove-all"]).status.success());
    assert_eq!(text(&sim.adb(adb, &["forward", "--list"])).0, "\n");

    assert_eq!(
        shell(adb, &sim, &format!("run-as {TINY} true")),
        (
            String::new(),
            format!("run-as: package not debuggable: {TINY}\n"),
            Some(1)
        )
    );
    assert_eq!(
        shell(adb, &sim, "run-as com.example.absent true").1,
        "run-as: unknown package: com.example.absent\n"
    );
    // Without a command it would start a shell; with --user the uid comes first.
    assert_eq!(
        shell(adb, &sim, &format!("run-as {TINY} --user 0 id")).1,
        format!("run-as: package not debuggable: {TINY}\n")
    );
    assert_eq!(
        shell(adb, &sim, &format!("run-as {TINY}")).1,
        format!("run-as: package not debuggable: {TINY}\n")
    );
    assert_eq!(
        shell(adb, &sim, "run-as com.android.settings true").1,
        "run-as: package not an application: com.android.settings\n"
    );
    assert_eq!(
        shell(adb, &sim, "run-as").1,
        "run-as: usage: run-as <package-name> [--user <uid>] <command> [<args>]\n"
    );
}

/// A system app runs as a system uid, which the activity manager writes as a number: starting
/// Settings logs `Start proc PID:com.android.settings/1000`, and the device goes on answering.
#[test]
fn a_system_app_started_is_logged_with_its_system_uid() {
    let Some(adb) = adb_binary() else {
        return;
    };
    let sim = SimProcess::start(&["--app", "builtin:tiny"]);
    let (_, _, status) = shell(
        adb,
        &sim,
        "monkey -p com.android.settings -c android.intent.category.LAUNCHER 1",
    );
    assert_eq!(status, Some(0));
    let (log, _, status) = shell(adb, &sim, "logcat -d -s ActivityManager");
    assert_eq!(status, Some(0));
    let started = regex::Regex::new(r"Start proc \d+:com\.android\.settings/1000 ").unwrap();
    assert!(started.is_match(&log), "{log}");
    let (focus, _, _) = shell(adb, &sim, "dumpsys window windows");
    assert!(focus.contains(":1000}"), "{focus}");
}
