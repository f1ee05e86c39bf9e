//! droid-sim over a real socket: the ADB server protocol byte by byte, hostile input, faults,
//! concurrency, and the device shell's behaviour as a client sees it.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use droid::sim::fault::{Fault, Latency};
use droid::sim::{Sim, SimConfig, SimError, SimHandle};

pub const SERIAL: &str = "emulator-5554";

/// A simulator serving the tiny bundled app, with extra faults.
pub fn start_with(faults: Vec<Fault>) -> SimHandle {
    let mut config = SimConfig::new("builtin:tiny");
    config.faults = faults;
    Sim::start(config).expect("simulator starts")
}

pub fn start() -> SimHandle {
    start_with(Vec::new())
}

fn connect(sim: &SimHandle) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", sim.port())).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    stream
}

fn send(stream: &mut TcpStream, request: &str) {
    let framed = format!("{:04x}{request}", request.len());
    stream.write_all(framed.as_bytes()).expect("send request");
}

fn read_exact(stream: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    stream.read_exact(&mut buf).expect("read");
    buf
}

fn read_to_end(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    // A reset after the answer counts as the end too.
    let _ = stream.read_to_end(&mut out);
    out
}

/// Reads `OKAY` or `FAIL` + reason.
fn status(stream: &mut TcpStream) -> Result<(), String> {
    let head = read_exact(stream, 4);
    match &head[..] {
        b"OKAY" => Ok(()),
        b"FAIL" => {
            let len =
                usize::from_str_radix(std::str::from_utf8(&read_exact(stream, 4)).unwrap(), 16)
                    .unwrap();
            Err(String::from_utf8(read_exact(stream, len)).unwrap())
        }
        other => panic!("not a status: {other:?}"),
    }
}

/// A one-shot host query: the payload, then the server must close.
fn query(sim: &SimHandle, request: &str) -> Result<String, String> {
    let mut stream = connect(sim);
    send(&mut stream, request);
    let result = status(&mut stream).map(|()| {
        let len = usize::from_str_radix(
            std::str::from_utf8(&read_exact(&mut stream, 4)).unwrap(),
            16,
        )
        .unwrap();
        String::from_utf8(read_exact(&mut stream, len)).unwrap()
    });
    assert!(
        read_to_end(&mut stream).is_empty(),
        "closed after {request}"
    );
    result
}

/// A socket switched to the device the way adb 1.0.41 does it.
fn transport(sim: &SimHandle) -> TcpStream {
    let mut stream = connect(sim);
    send(&mut stream, &format!("host:tport:serial:{SERIAL}"));
    status(&mut stream).expect("transport");
    assert_eq!(read_exact(&mut stream, 8), 1u64.to_le_bytes());
    stream
}

/// Shell protocol v2 result: stdout, stderr, exit status.
pub struct ShellResult {
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub status: Option<u8>,
}

fn read_packets(stream: &mut TcpStream) -> ShellResult {
    let bytes = read_to_end(stream);
    let mut result = ShellResult {
        stdout: Vec::new(),
        stderr: String::new(),
        status: None,
    };
    let mut at = 0;
    while at + 5 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        let payload = &bytes[at + 5..at + 5 + len];
        match bytes[at] {
            1 => result.stdout.extend_from_slice(payload),
            2 => result.stderr.push_str(&String::from_utf8_lossy(payload)),
            3 => result.status = Some(payload[0]),
            other => panic!("unexpected packet id {other}"),
        }
        at += 5 + len;
    }
    assert_eq!(at, bytes.len(), "whole packets only");
    result
}

/// Runs a command through `shell,v2,raw:` with stdin closed, as a crawler does.
pub fn shell(sim: &SimHandle, command: &str) -> ShellResult {
    let mut stream = transport(sim);
    send(&mut stream, &format!("shell,v2,TERM=dumb,raw:{command}"));
    status(&mut stream).expect("shell accepted");
    stream.write_all(&[4, 0, 0, 0, 0]).expect("close stdin");
    read_packets(&mut stream)
}

fn shell_ok(sim: &SimHandle, command: &str) -> String {
    let result = shell(sim, command);
    assert_eq!(result.status, Some(0), "{command}: {}", result.stderr);
    String::from_utf8(result.stdout).expect("utf-8 output")
}

/// `input tap` at the centre of the node on screen whose text or resource id is `label`, found
/// in a fresh dump (so the tests follow the model's layout instead of hard-coding it).
fn tap(sim: &SimHandle, label: &str) {
    let dump = shell_ok(sim, "uiautomator dump /dev/tty");
    let xml = dump.rsplit_once("UI hierchary dumped to:").expect("dump").0;
    let doc = roxmltree::Document::parse(xml).expect("well-formed dump");
    let node = doc
        .descendants()
        .find(|n| n.attribute("text") == Some(label) || n.attribute("resource-id") == Some(label))
        .unwrap_or_else(|| panic!("no {label:?} on screen: {xml}"));
    let numbers: Vec<i32> = node
        .attribute("bounds")
        .expect("bounds")
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .map(|part| part.parse().expect("a number"))
        .collect();
    let (x, y) = ((numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2);
    shell_ok(sim, &format!("input tap {x} {y}"));
}

const EMAIL: &str = "com.example.tiny:id/email";

fn exec(sim: &SimHandle, command: &str) -> Vec<u8> {
    let mut stream = transport(sim);
    send(&mut stream, &format!("exec:{command}"));
    status(&mut stream).expect("exec accepted");
    stream.shutdown(Shutdown::Write).expect("half-close");
    read_to_end(&mut stream)
}

#[test]
fn host_version_is_41_and_the_socket_closes() {
    let sim = start();
    let mut stream = connect(&sim);
    send(&mut stream, "host:version");
    assert_eq!(read_to_end(&mut stream), b"OKAY00040029");
}

#[test]
fn devices_and_features_answer_like_the_real_server() {
    let sim = start();
    assert_eq!(
        query(&sim, "host:devices").unwrap(),
        format!("{SERIAL}\tdevice\n")
    );
    let long = query(&sim, "host:devices-l").unwrap();
    assert!(
        long.starts_with(&format!("{SERIAL:<22} device ")) && long.ends_with(" transport_id:1\n"),
        "{long:?}"
    );
    let features = query(&sim, &format!("host-serial:{SERIAL}:features")).unwrap();
    assert!(features.split(',').any(|f| f == "shell_v2"), "{features}");
    assert_eq!(
        query(&sim, "host-serial:nope:features"),
        Err("device 'nope' not found".to_string())
    );
    assert_eq!(
        query(&sim, "host-transport-id:1:get-state").unwrap(),
        "device"
    );
    assert!(query(&sim, "host:no-such-thing").is_err());
}

#[test]
fn every_transport_form_switches_the_socket() {
    let sim = start();
    for (request, id_bytes) in [
        (format!("host:transport:{SERIAL}"), false),
        ("host:transport-any".to_string(), false),
        ("host:transport-id:1".to_string(), false),
        ("host:tport:any".to_string(), true),
        (format!("host:tport:serial:{SERIAL}"), true),
    ] {
        let mut stream = connect(&sim);
        send(&mut stream, &request);
        status(&mut stream).unwrap_or_else(|e| panic!("{request}: {e}"));
        if id_bytes {
            assert_eq!(read_exact(&mut stream, 8), 1u64.to_le_bytes(), "{request}");
        }
        send(&mut stream, "shell:echo hi");
        status(&mut stream).expect("legacy shell");
        assert_eq!(read_to_end(&mut stream), b"hi\n", "{request}");
    }
    let mut stream = connect(&sim);
    send(&mut stream, "host:transport:emulator-9999");
    assert_eq!(
        status(&mut stream),
        Err("device 'emulator-9999' not found".into())
    );
}

#[test]
fn garbage_and_bad_lengths_get_fail_and_a_closed_socket() {
    let sim = start();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"zzzzhost:version".to_vec(), "bad request length"),
        (b"0000".to_vec(), "empty request"),
        (b"00ffhost:ver".to_vec(), "truncated request"),
        (b"\x00\x01\x02\x03\x04".to_vec(), "bad request length"),
        (b"000cHOST:VERSION".to_vec(), "no device selected"),
        (b"0004\xff\xfe\xfd\xfc".to_vec(), "not UTF-8"),
    ];
    for (bytes, reason) in cases {
        let mut stream = connect(&sim);
        stream.write_all(&bytes).unwrap();
        stream.shutdown(Shutdown::Write).unwrap();
        let answer = status(&mut stream).expect_err("must fail");
        assert!(answer.contains(reason), "{bytes:?}: {answer}");
        assert!(read_to_end(&mut stream).is_empty());
    }
    // The largest length four hex digits can announce, filled with junk: a FAIL, not a crash.
    let mut stream = connect(&sim);
    let mut junk = b"ffff".to_vec();
    junk.extend(std::iter::repeat_n(b'x', 0xffff));
    stream.write_all(&junk).unwrap();
    assert!(status(&mut stream).is_err());
    // Device services need a transport, unknown ones are refused.
    let mut stream = connect(&sim);
    send(&mut stream, "shell:ls");
    assert!(status(&mut stream)
        .unwrap_err()
        .contains("no device selected"));
    let mut stream = transport(&sim);
    send(&mut stream, "framebuffer:");
    assert!(status(&mut stream).unwrap_err().contains("unknown service"));
    // And the server is still fine.
    assert_eq!(query(&sim, "host:version").unwrap(), "0029");
}

#[test]
fn shell_v2_carries_stdout_stderr_and_exit_status() {
    let sim = start();
    let result = shell(&sim, "echo out; ls /nope; exit 3");
    assert_eq!(result.stdout, b"out\n");
    assert_eq!(result.stderr, "ls: /nope: No such file or directory\n");
    assert_eq!(result.status, Some(3));
    let unknown = shell(&sim, "frobnicate --now");
    assert_eq!(unknown.status, Some(127));
    assert_eq!(
        unknown.stderr,
        "/system/bin/sh: frobnicate: inaccessible or not found\n"
    );
    let syntax = shell(&sim, "echo 'open");
    assert_eq!(syntax.status, Some(1));
    assert_eq!(syntax.stderr, "/system/bin/sh: no closing quote\n");
}

#[test]
fn shell_v2_reads_the_clients_stdin_packets() {
    let sim = start();
    let mut stream = transport(&sim);
    send(
        &mut stream,
        "shell,v2,raw:cat > /data/local/tmp/in && cat /data/local/tmp/in",
    );
    status(&mut stream).unwrap();
    let mut packets = Vec::new();
    for (id, payload) in [
        (0u8, &b"hello "[..]),
        (5, b"24x80,0x0\0"),
        (0, b"world"),
        (4, b""),
    ] {
        packets.push(id);
        packets.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        packets.extend_from_slice(payload);
    }
    // Split across writes, as packets may be.
    for piece in packets.chunks(3) {
        stream.write_all(piece).unwrap();
    }
    let result = read_packets(&mut stream);
    assert_eq!(result.stdout, b"hello world");
    assert_eq!(result.status, Some(0));
}

/// Stdin packets (id 0) with the given payloads, then close-stdin.
fn stdin_packets(pieces: &[&[u8]]) -> Vec<u8> {
    let mut packets = Vec::new();
    for piece in pieces {
        packets.push(0);
        packets.extend_from_slice(&(piece.len() as u32).to_le_bytes());
        packets.extend_from_slice(piece);
    }
    packets.extend_from_slice(&[4, 0, 0, 0, 0]);
    packets
}

#[test]
fn a_shell_without_command_reads_its_script_from_stdin() {
    let sim = start();
    let mut stream = transport(&sim);
    send(&mut stream, "shell,v2,raw:");
    status(&mut stream).unwrap();
    stream
        .write_all(&stdin_packets(&[
            b"echo one; ls /nope\n",
            b"exit 4\necho never\n",
        ]))
        .unwrap();
    let result = read_packets(&mut stream);
    assert_eq!(result.stdout, b"one\n");
    assert_eq!(result.stderr, "ls: /nope: No such file or directory\n");
    assert_eq!(result.status, Some(4));
}

#[test]
fn an_interactive_pty_shell_echoes_edits_and_exits() {
    let sim = start();
    let mut stream = transport(&sim);
    send(&mut stream, "shell,v2,TERM=xterm,pty:");
    status(&mut stream).unwrap();
    // Keystrokes as a terminal in raw mode sends them: Enter is \r, DEL erases.
    stream
        .write_all(&stdin_packets(&[
            b"echo hi\x7fo\r",
            b"ls /nope\r",
            b"\x03exit 6\r",
        ]))
        .unwrap();
    let result = read_packets(&mut stream);
    let screen = String::from_utf8(result.stdout).unwrap();
    assert_eq!(
        screen,
        "sim:/ $ echo hi\x08 \x08o\r\nho\r\nsim:/ $ ls /nope\r\nls: /nope: No such file or directory\r\nsim:/ $ ^C\r\nsim:/ $ exit 6\r\n"
    );
    assert_eq!(result.stderr, "", "a PTY has one stream");
    assert_eq!(result.status, Some(6));
}

#[test]
fn hostile_stdin_packets_are_bounded() {
    let sim = start();
    let mut stream = transport(&sim);
    send(&mut stream, "shell,v2,raw:cat");
    status(&mut stream).unwrap();
    // A packet announcing 4 GiB: the server stops reading stdin instead of allocating it.
    stream
        .write_all(&[0, 0xff, 0xff, 0xff, 0xff, b'x'])
        .unwrap();
    let result = read_packets(&mut stream);
    assert_eq!(result.stdout, b"");
    assert_eq!(result.status, Some(0));
    assert_eq!(shell_ok(&sim, "echo alive"), "alive\n");
}

#[test]
fn exec_is_raw_bytes_and_quotes_like_the_client() {
    let sim = start();
    // `adb exec-out screencap -p` sends the argument single-quoted.
    let png = exec(&sim, "screencap '-p'");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let image = image::load_from_memory(&png).expect("a decodable PNG");
    assert_eq!((image.width(), image.height()), (720, 1280));
    let raw = exec(&sim, "screencap");
    let header: Vec<u32> = raw[..16]
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(header, vec![720, 1280, 1, 1]);
    assert_eq!(raw.len(), 16 + 720 * 1280 * 4);
    assert_eq!(exec(&sim, "echo 'a  b' \"c\""), b"a  b c\n");
}

/// One sync request: id, length, path.
fn sync_request(id: &[u8; 4], path: &[u8]) -> Vec<u8> {
    let mut out = id.to_vec();
    out.extend_from_slice(&(path.len() as u32).to_le_bytes());
    out.extend_from_slice(path);
    out
}

fn sync_socket(sim: &SimHandle) -> TcpStream {
    let mut stream = transport(sim);
    send(&mut stream, "sync:");
    status(&mut stream).unwrap();
    stream
}

#[test]
fn sync_stat_recv_send_and_quit() {
    let sim = start();
    shell_ok(&sim, "echo content > /sdcard/f.txt");
    let mut stream = sync_socket(&sim);
    stream
        .write_all(&sync_request(b"STAT", b"/sdcard/f.txt"))
        .unwrap();
    let stat = read_exact(&mut stream, 16);
    assert_eq!(&stat[..4], b"STAT");
    let mode = u32::from_le_bytes(stat[4..8].try_into().unwrap());
    assert_eq!(mode & 0o170000, 0o100000, "a regular file");
    assert_eq!(u32::from_le_bytes(stat[8..12].try_into().unwrap()), 8);
    stream
        .write_all(&sync_request(b"STAT", b"/sdcard/none"))
        .unwrap();
    assert_eq!(read_exact(&mut stream, 16)[4..], [0u8; 12]);
    stream
        .write_all(&sync_request(b"STA2", b"/sdcard/none"))
        .unwrap();
    let sta2 = read_exact(&mut stream, 72);
    assert_eq!(
        u32::from_le_bytes(sta2[4..8].try_into().unwrap()),
        2,
        "ENOENT"
    );
    stream
        .write_all(&sync_request(b"RECV", b"/sdcard/f.txt"))
        .unwrap();
    let mut expected = b"DATA".to_vec();
    expected.extend_from_slice(&8u32.to_le_bytes());
    expected.extend_from_slice(b"content\n");
    expected.extend_from_slice(b"DONE\0\0\0\0");
    assert_eq!(read_exact(&mut stream, expected.len()), expected);
    // push
    stream
        .write_all(&sync_request(b"SEND", b"/data/local/tmp/new/p.bin,33188"))
        .unwrap();
    stream.write_all(&sync_request(b"DATA", b"pushed")).unwrap();
    stream.write_all(b"DONE\x01\0\0\0").unwrap();
    assert_eq!(read_exact(&mut stream, 8), b"OKAY\0\0\0\0");
    stream.write_all(&sync_request(b"QUIT", b"")).unwrap();
    assert!(read_to_end(&mut stream).is_empty());
    assert_eq!(shell_ok(&sim, "cat /data/local/tmp/new/p.bin"), "pushed");
}

#[test]
fn hostile_sync_requests_fail_cleanly() {
    let sim = start();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (sync_request(b"STAT", &vec![b'a'; 5000]), "path too long"),
        (sync_request(b"WHAT", b""), "unknown sync request"),
        (sync_request(b"RECV", b"/sdcard/none"), "No such file"),
        (
            [
                sync_request(b"SEND", b"/sdcard/x,33188"),
                b"DATA\x00\x00\x10\x00".to_vec(),
            ]
            .concat(),
            "too large",
        ),
        (
            [
                sync_request(b"SEND", b"/system/x,33188"),
                b"DONE\0\0\0\0".to_vec(),
            ]
            .concat(),
            "Read-only file system",
        ),
    ];
    for (bytes, reason) in cases {
        let mut stream = sync_socket(&sim);
        stream.write_all(&bytes).unwrap();
        let answer = read_to_end(&mut stream);
        assert_eq!(&answer[..4], b"FAIL", "{reason}");
        let message = String::from_utf8_lossy(&answer[8..]);
        assert!(message.contains(reason), "{message}");
    }
    assert_eq!(query(&sim, "host:version").unwrap(), "0029");
}

#[test]
fn concurrent_dumps_and_screenshots_all_succeed() {
    let sim = start();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..12)
            .map(|i| {
                let sim = &sim;
                scope.spawn(move || {
                    if i % 2 == 0 {
                        let path = format!("/data/local/tmp/d{i}.xml");
                        let out = shell_ok(sim, &format!("uiautomator dump {path} && cat {path}"));
                        assert!(out.starts_with(&format!("UI hierchary dumped to: {path}\n<?xml")));
                        roxmltree::Document::parse(out.split_once('\n').unwrap().1)
                            .expect("well-formed dump");
                    } else {
                        let png = exec(sim, "screencap -p");
                        assert_eq!(&png[..4], b"\x89PNG");
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("worker");
        }
    });
}

#[test]
fn a_full_server_makes_room_by_closing_the_connection_waiting_longest() {
    let mut config = SimConfig::new("builtin:tiny");
    config.max_connections = 4;
    let sim = Sim::start(config).unwrap();
    let mut idle: Vec<TcpStream> = Vec::new();
    for _ in 0..4 {
        idle.push(connect(&sim));
        // Registered in accept order: let each be the older one.
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut extra = connect(&sim);
    send(&mut extra, "host:version");
    assert_eq!(status(&mut extra), Ok(()));
    // The first silent connection gave up its slot, told why.
    assert_eq!(
        status(&mut idle[0]),
        Err("server busy: request too slow".into())
    );
    assert!(read_to_end(&mut idle[0]).is_empty());
}

#[test]
fn fault_disconnect_after_drops_sockets_and_hides_the_device() {
    let sim = start_with(vec![Fault::DisconnectAfter {
        commands: 2,
        outage: Duration::from_millis(500),
    }]);
    assert_eq!(shell_ok(&sim, "echo 1"), "1\n");
    // A socket opened before the outage is dropped with the rest.
    let mut bystander = transport(&sim);
    assert_eq!(shell_ok(&sim, "echo 2"), "2\n");
    let mut third = transport(&sim);
    send(&mut third, "shell,v2,raw:echo 3");
    assert!(
        read_to_end(&mut third).is_empty(),
        "dropped before any answer"
    );
    assert!(read_to_end(&mut bystander).is_empty());
    assert_eq!(query(&sim, "host:devices").unwrap(), "");
    let mut stream = connect(&sim);
    send(&mut stream, &format!("host:tport:serial:{SERIAL}"));
    assert_eq!(
        status(&mut stream),
        Err(format!("device '{SERIAL}' not found"))
    );
    // The device comes back after the outage.
    let deadline = Instant::now() + Duration::from_secs(20);
    while query(&sim, "host:devices").unwrap().is_empty() {
        assert!(Instant::now() < deadline, "device never came back");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(shell_ok(&sim, "echo 4"), "4\n");
}

#[test]
fn fault_dump_error_prints_the_real_idle_state_error() {
    let sim = start_with(vec![Fault::DumpError { rate: 1.0 }]);
    let result = shell(&sim, "uiautomator dump /data/local/tmp/d.xml");
    assert_eq!(result.stderr, "ERROR: could not get idle state.\n");
    assert!(result.stdout.is_empty());
    assert_eq!(
        shell(&sim, "cat /data/local/tmp/d.xml").status,
        Some(1),
        "no file written"
    );
    let clean = start_with(vec![Fault::DumpError { rate: 0.0 }]);
    assert!(shell_ok(&clean, "uiautomator dump").contains("dumped to: /sdcard/window_dump.xml"));
}

#[test]
fn fault_slow_and_realistic_latency_delay_commands() {
    let sim = start_with(vec![Fault::Slow(Duration::from_millis(300))]);
    let begun = Instant::now();
    shell_ok(&sim, "true");
    assert!(begun.elapsed() >= Duration::from_millis(300));

    let mut config = SimConfig::new("builtin:tiny");
    config.latency = Latency::Realistic;
    let sim = Sim::start(config).unwrap();
    let begun = Instant::now();
    shell_ok(&sim, "uiautomator dump");
    assert!(begun.elapsed() >= Duration::from_millis(1200));
}

#[test]
fn fault_anr_on_shows_the_not_responding_dialog() {
    let sim = start_with(vec![Fault::AnrOn("login".into())]);
    shell_ok(
        &sim,
        "monkey -p com.example.tiny -c android.intent.category.LAUNCHER 1",
    );
    assert!(!shell_ok(&sim, "uiautomator dump /dev/tty").contains("isn't responding"));
    tap(&sim, "Sign in");
    let dump = shell_ok(&sim, "uiautomator dump /dev/tty");
    assert!(dump.contains("isn't responding"), "{dump}");
    let focus = shell_ok(&sim, "dumpsys window displays");
    assert!(
        focus.contains("Application Not Responding: com.example.tiny"),
        "{focus}"
    );

    let mut config = SimConfig::new("builtin:tiny");
    config.faults = vec![Fault::AnrOn("nowhere".into())];
    assert!(matches!(
        Sim::start(config),
        Err(SimError::UnknownScreen(_))
    ));
}

#[test]
fn launch_tap_type_and_dump_walk_the_model() {
    let sim = start();
    let launcher = shell_ok(&sim, "dumpsys window displays");
    assert!(!launcher.contains("com.example.tiny/"), "{launcher}");
    let monkey = shell(
        &sim,
        "monkey -p com.example.nope -c android.intent.category.LAUNCHER 1",
    );
    assert_eq!(monkey.status, Some(252));
    shell_ok(
        &sim,
        "monkey -p com.example.tiny -c android.intent.category.LAUNCHER 1",
    );
    let focus = shell_ok(&sim, "dumpsys window displays");
    assert!(
        focus.contains("mFocusedApp=ActivityRecord{")
            && focus.contains("com.example.tiny/.MainActivity"),
        "{focus}"
    );
    // Sign in → login; type into the email field; the next dump shows the text.
    tap(&sim, "Sign in");
    tap(&sim, EMAIL);
    shell_ok(&sim, "input text 'me@example.com'");
    let dump = shell_ok(
        &sim,
        "uiautomator dump /data/local/tmp/x.xml >/dev/null && cat /data/local/tmp/x.xml",
    );
    assert!(dump.contains("text=\"me@example.com\""), "{dump}");
    shell_ok(&sim, "input keyevent KEYCODE_BACK");
    let unknown_key = shell(&sim, "input keyevent KEYCODE_NOPE");
    assert_ne!(unknown_key.status, Some(0));
    assert!(!unknown_key.stderr.is_empty());
    assert_eq!(shell(&sim, "input tap x").status, Some(1), "usage error");
}

#[test]
fn text_with_shell_syntax_reaches_the_device_as_text() {
    let sim = start();
    shell_ok(&sim, "am start -n com.example.tiny/.MainActivity");
    // Sign in, then focus the email field.
    tap(&sim, "Sign in");
    tap(&sim, EMAIL);
    // What DESIGN.md §3 prescribes: every word quoted for the device shell.
    shell_ok(
        &sim,
        "input text ';rm' && input keyevent KEYCODE_SPACE && input text '$(id)|&&'",
    );
    let dump = shell_ok(&sim, "uiautomator dump /dev/tty");
    assert!(dump.contains("text=\";rm $(id)|&amp;&amp;\""), "{dump}");
}

#[test]
fn am_pm_dumpsys_and_props_answer_in_device_shapes() {
    let sim = start();
    assert_eq!(shell_ok(&sim, "getprop ro.build.version.sdk"), "33\n");
    assert!(shell_ok(&sim, "getprop").contains("[ro.build.version.sdk]: [33]\n"));
    assert_eq!(shell_ok(&sim, "wm size"), "Physical size: 720x1280\n");
    assert!(shell_ok(&sim, "wm density").starts_with("Physical density: "));
    let path = shell_ok(&sim, "pm path com.example.tiny");
    assert!(
        path.starts_with("package:/data/app/~~") && path.ends_with("/base.apk\n"),
        "{path}"
    );
    assert_eq!(shell(&sim, "pm path com.nope").status, Some(1));
    assert!(shell_ok(&sim, "pm list packages").contains("package:com.example.tiny\n"));
    assert!(shell_ok(&sim, "dumpsys package com.example.tiny").contains("versionName=1.0"));
    let started = shell_ok(&sim, "am start -W -n com.example.tiny/.MainActivity");
    assert!(started.starts_with("Starting: Intent { cmp=com.example.tiny/.MainActivity }\n"));
    assert!(
        shell_ok(&sim, "dumpsys activity activities").contains("ResumedActivity: ActivityRecord{")
    );
    let missing = shell(&sim, "am start -n com.example.tiny/.Nope");
    assert_eq!(missing.status, Some(1));
    assert!(missing.stderr.starts_with("Error type 3\nError: Activity class {com.example.tiny/com.example.tiny.Nope} does not exist."));
    shell_ok(&sim, "am force-stop com.example.tiny");
    assert!(!shell_ok(&sim, "dumpsys window displays").contains("com.example.tiny/"));
}

#[test]
fn pidof_and_kill_reach_the_app_process() {
    let sim = start();
    assert_eq!(shell(&sim, "pidof com.example.tiny").status, Some(1));
    shell_ok(
        &sim,
        "monkey -p com.example.tiny -c android.intent.category.LAUNCHER 1",
    );
    let pid = shell_ok(&sim, "pidof com.example.tiny");
    assert!(pid.trim().parse::<u32>().is_ok(), "{pid}");
    shell_ok(&sim, &format!("kill {}", pid.trim()));
    assert!(!shell_ok(&sim, "dumpsys window displays").contains("com.example.tiny/"));
    let missing = shell(&sim, "kill 99999");
    assert_eq!(missing.status, Some(1));
    assert_eq!(missing.stderr, "kill: 99999: No such process\n");
    let init = shell(&sim, "kill 1");
    assert_eq!(init.stderr, "kill: 1: Operation not permitted\n");
}

#[test]
fn a_crash_fills_the_crash_buffer_until_cleared() {
    let sim = start();
    shell_ok(
        &sim,
        "monkey -p com.example.tiny -c android.intent.category.LAUNCHER 1",
    );
    tap(&sim, "Crash");
    let log = shell_ok(&sim, "logcat -b crash -d");
    assert!(log.contains("FATAL EXCEPTION: main"), "{log}");
    assert!(
        log.contains("java.lang.IllegalStateException: boom"),
        "{log}"
    );
    shell_ok(&sim, "logcat -b crash -c");
    assert_eq!(shell_ok(&sim, "logcat -b crash -d"), "");
}

#[test]
fn adb_keyboard_broadcasts_type_unicode_only_when_active() {
    let mut config = SimConfig::new("builtin:tiny");
    config.ime_adbkeyboard = true;
    let sim = Sim::start(config).unwrap();
    shell_ok(&sim, "am start -n com.example.tiny/.MainActivity");
    tap(&sim, "Sign in");
    tap(&sim, EMAIL);
    assert_ne!(
        shell(&sim, "input text 'héllo'").status,
        Some(0),
        "input text cannot type é"
    );
    let ime = "com.android.adbkeyboard/.AdbIME";
    assert!(shell_ok(&sim, "ime list -a -s").contains(ime));
    let sent = shell_ok(&sim, "am broadcast -a ADB_INPUT_TEXT --es msg 'ignored'");
    assert!(sent.ends_with("Broadcast completed: result=0\n"), "{sent}");
    assert!(!shell_ok(&sim, "uiautomator dump /dev/tty").contains("ignored"));
    shell_ok(&sim, &format!("ime enable {ime} && ime set {ime}"));
    // "héllo ✓" in base64.
    shell_ok(
        &sim,
        "am broadcast -a ADB_INPUT_B64 --es msg aMOpbGxvIOKckw==",
    );
    assert!(shell_ok(&sim, "uiautomator dump /dev/tty").contains("héllo ✓"));
}

#[test]
fn screenrecord_runs_until_sigint_and_leaves_a_finished_file() {
    let sim = start();
    std::thread::scope(|scope| {
        let recorder = scope.spawn(|| shell(&sim, "screenrecord --time-limit 30 /sdcard/r.mp4"));
        until_screenrecord(&sim, true);
        shell_ok(&sim, "pkill -INT screenrecord");
        assert_eq!(recorder.join().unwrap().status, Some(0));
    });
    let video = exec(&sim, "cat /sdcard/r.mp4");
    assert_eq!(&video[4..8], b"ftyp");
    assert!(video.windows(4).any(|w| w == b"moov"), "finished cleanly");
    assert_eq!(shell(&sim, "pidof screenrecord").status, Some(1));
    assert_ne!(
        shell(&sim, "screenrecord --time-limit 999 /sdcard/x.mp4").status,
        Some(0)
    );
}

#[test]
fn screenrecord_writes_a_video_ffprobe_decodes_frame_by_frame() {
    let sim = start();
    shell_ok(
        &sim,
        "monkey -p com.example.tiny -c android.intent.category.LAUNCHER 1",
    );
    std::thread::scope(|scope| {
        let recorder = scope.spawn(|| shell(&sim, "screenrecord --time-limit 2 /sdcard/v.mp4"));
        until_screenrecord(&sim, true);
        // A second screen while recording: the launcher.
        shell_ok(&sim, "input keyevent HOME");
        assert_eq!(recorder.join().unwrap().status, Some(0));
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v.mp4");
    std::fs::write(&file, exec(&sim, "cat /sdcard/v.mp4")).unwrap();
    let Some(probe) = crate::media::ffprobe(&file) else {
        return;
    };
    let probe = probe.expect("ffprobe decodes the recording");
    assert_eq!(probe.codec, "h264");
    assert_eq!((probe.width, probe.height), (720, 1280));
    assert!((probe.duration - 2.0).abs() < 0.05, "{probe:?}");
    assert_eq!(probe.frames, 2, "the app, then the launcher: {probe:?}");
    // --size scales the display into the video.
    shell_ok(
        &sim,
        "screenrecord --time-limit 1 --size 360x640 /sdcard/s.mp4",
    );
    std::fs::write(&file, exec(&sim, "cat /sdcard/s.mp4")).unwrap();
    let small = crate::media::ffprobe(&file).unwrap().unwrap();
    assert_eq!((small.width, small.height, small.frames), (360, 640, 1));
    assert_ne!(
        shell(&sim, "screenrecord --size 12 /sdcard/x.mp4").status,
        Some(0)
    );
}

/// Waits (bounded) until `pidof screenrecord` says `running`.
fn until_screenrecord(sim: &SimHandle, running: bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while (shell(sim, "pidof screenrecord").status == Some(0)) != running {
        assert!(
            Instant::now() < deadline,
            "screenrecord running={running} never came"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn screenrecord_finishes_its_file_when_the_client_hangs_up() {
    let sim = start();
    let mut stream = transport(&sim);
    send(&mut stream, "shell,v2,raw:screenrecord /sdcard/h.mp4");
    status(&mut stream).unwrap();
    stream.write_all(&[4, 0, 0, 0, 0]).unwrap();
    until_screenrecord(&sim, true);
    drop(stream);
    until_screenrecord(&sim, false);
    let video = exec(&sim, "cat /sdcard/h.mp4");
    assert!(
        video.windows(4).any(|w| w == b"moov"),
        "SIGHUP finishes the file"
    );
    // SIGKILL does not.
    std::thread::scope(|scope| {
        let recorder = scope.spawn(|| shell(&sim, "screenrecord /sdcard/k.mp4"));
        until_screenrecord(&sim, true);
        shell_ok(&sim, "pkill -9 screenrecord");
        recorder.join().unwrap();
    });
    let killed = exec(&sim, "cat /sdcard/k.mp4");
    assert_eq!(&killed[4..8], b"ftyp");
    assert!(!killed.windows(4).any(|w| w == b"moov"));
}

#[test]
fn pcapdroid_control_intent_writes_a_pcap_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = crate::common::model_with(dir.path(), "tiny", serde_json::json!({"pcapdroid": {}}));
    let sim = Sim::start(SimConfig::new(model)).unwrap();
    let control = "am start -n com.emanuelef.remote_capture/.activities.CaptureCtrl";
    let started = shell_ok(
        &sim,
        &format!("{control} -e action start -e pcap_dump_mode pcap_file -e pcap_name run.pcap -e app_filter com.example.tiny"),
    );
    assert!(started.starts_with("Starting: Intent { cmp=com.emanuelef.remote_capture/.activities.CaptureCtrl (has extras) }"));
    shell_ok(&sim, &format!("{control} -e action stop"));
    let pcap = exec(&sim, "cat /sdcard/Download/PCAPdroid/run.pcap");
    assert_eq!(&pcap[..4], &0xa1b2_c3d4u32.to_le_bytes(), "pcap magic");
    assert_eq!(
        u32::from_le_bytes(pcap[20..24].try_into().unwrap()),
        101,
        "LINKTYPE_RAW"
    );
    assert!(pcap.len() > 24 + 16, "at least one packet");
    assert!(String::from_utf8_lossy(&pcap).contains("tiny"));
}

#[test]
fn truth_log_records_screens_and_inputs_as_received() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truth.jsonl");
    let mut config = SimConfig::new("builtin:tiny");
    config.truth_log = Some(path.clone());
    let sim = Sim::start(config).unwrap();
    shell_ok(
        &sim,
        "monkey -p com.example.tiny -c android.intent.category.LAUNCHER 1",
    );
    tap(&sim, "Sign in");
    tap(&sim, EMAIL);
    shell_ok(&sim, "input tap 7 9 && input text 'a%sb'");
    drop(sim);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    let screens: Vec<&str> = lines.iter().filter_map(|l| l["screen"].as_str()).collect();
    assert!(screens.ends_with(&["home", "login"]), "{screens:?}");
    assert!(lines
        .iter()
        .any(|l| l["input"] == "tap" && l["x"] == 7 && l["y"] == 9));
    assert!(lines
        .iter()
        .any(|l| l["input"] == "text" && l["text"] == "a%sb"));
}

#[test]
fn sim_start_rejects_bad_models_and_serials() {
    assert!(matches!(
        Sim::start(SimConfig::new("builtin:nope")),
        Err(SimError::Model(_))
    ));
    let mut config = SimConfig::new("builtin:tiny");
    config.serial = "has space".into();
    assert!(matches!(Sim::start(config), Err(SimError::BadSerial(_))));
}

#[test]
fn dropping_the_handle_stops_the_server() {
    let sim = start();
    let port = sim.port();
    let mut open = transport(&sim);
    drop(sim);
    assert!(read_to_end(&mut open).is_empty());
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn slow_drip_requests_lose_their_slot_and_real_clients_still_get_in() {
    let mut config = SimConfig::new("builtin:tiny");
    config.max_connections = 4;
    config.request_deadline = Duration::from_millis(400);
    let sim = Sim::start(config).unwrap();
    let port = sim.port();
    // Twice as many dawdlers as slots: each announces a 0xfff0-byte request and drips it a byte
    // every 50 ms, for at most 3 s.
    let drippers: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_millis(50)))
                    .unwrap();
                let _ = stream.write_all(b"fff0");
                let started = Instant::now();
                let mut answer = Vec::new();
                while started.elapsed() < Duration::from_secs(3) {
                    if stream.write_all(b"x").is_err() {
                        // The server answered and closed before this write; its answer is
                        // still queued here even though the write met the reset.
                        let mut rest = Vec::new();
                        let _ = stream.read_to_end(&mut rest);
                        answer.extend_from_slice(&rest);
                        break;
                    }
                    let mut buf = [0u8; 256];
                    match stream.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => answer.extend_from_slice(&buf[..n]),
                        Err(_) => {}
                    }
                }
                (
                    started.elapsed(),
                    String::from_utf8_lossy(&answer).into_owned(),
                )
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(150));
    // Every slot is held by a dawdler now; a client that asks at once still gets its answer.
    for _ in 0..3 {
        let devices = query(&sim, "host:devices").expect("host:devices under the flood");
        assert!(devices.contains(SERIAL), "{devices}");
    }
    if let Some(adb) = crate::sim_adb::adb_binary() {
        let out = std::process::Command::new(adb)
            .args(["-P", &port.to_string(), "devices"])
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(
            listed.contains(SERIAL),
            "{listed}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for dripper in drippers {
        let (held, answer) = dripper.join().unwrap();
        assert!(
            held < Duration::from_secs(3),
            "a dawdler kept its slot: {answer}"
        );
        assert!(
            answer.contains("not complete within 400 ms") || answer.contains("server busy"),
            "{answer:?}"
        );
    }
}
