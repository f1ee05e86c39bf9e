//! The ADB client against the real `adb` server (when installed) and against scripted sockets
//! that misbehave the ways real servers and devices do.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::Duration;

use droid::adb::{AdbClient, AdbError, AdbServer, ServerConfig};

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn config(port: u16) -> ServerConfig {
    ServerConfig {
        host: "127.0.0.1".into(),
        port,
        timeout: Duration::from_secs(5),
        start_server: false,
        // A scripted server answers its script once: nothing would come back.
        wait_for_device: Duration::ZERO,
    }
}

fn adb_installed() -> bool {
    Command::new("adb").arg("version").output().is_ok()
}

/// Kills the adb server a test started, even when the test fails.
struct KillServer(u16);

impl Drop for KillServer {
    /// `adb kill-server`, bounded: adb 1.0.41's server now and then hangs in its exit after
    /// "killed by remote request", and its client waits for it forever. Then both are killed.
    fn drop(&mut self) {
        let port = self.0.to_string();
        let Ok(mut client) = Command::new("adb")
            .args(["-P", &port, "kill-server"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        else {
            return;
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if !matches!(client.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = client.kill();
        let _ = client.wait();
        // The server that would not exit: `adb -L tcp:PORT fork-server server ...`.
        let listen = format!("tcp:{port}");
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let words: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            if words.contains(&listen.as_bytes()) && words.contains(&b"fork-server".as_slice()) {
                let pid = entry.file_name().to_string_lossy().into_owned();
                if !pid.bytes().all(|b| b.is_ascii_digit()) {
                    continue;
                }
                let _ = Command::new("sh")
                    .args(["-c", &format!("kill -9 {pid}")])
                    .status();
            }
        }
    }
}

#[test]
fn real_server_started_on_demand_answers_version_and_no_devices() {
    if !adb_installed() {
        eprintln!("adb not installed: skipping the real-server test");
        return;
    }
    let port = free_port();
    let _guard = KillServer(port);
    let server = AdbServer::new(ServerConfig {
        start_server: true,
        ..config(port)
    });
    // Nothing listens yet: the client runs `adb -P PORT start-server` once and retries.
    assert_eq!(server.version().unwrap(), 41);
    assert!(server.devices().unwrap().is_empty());
    let none = server.select(None).unwrap_err();
    assert!(matches!(none, AdbError::NoDevice { .. }));
    // Nothing listened on the port: droid says it started the server and the port may be wrong.
    let told = none.to_string();
    assert!(
        told.contains(&format!("droid just started at 127.0.0.1:{port}"))
            && told.contains("--adb-port"),
        "{told}"
    );
    assert!(matches!(
        server.select(Some("emulator-5554")),
        Err(AdbError::DeviceNotFound { .. })
    ));
    let err = AdbClient::connect(config(port), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "no device attached to the ADB server at 127.0.0.1:{port}"
        )),
        "{err}"
    );
}

#[test]
fn nothing_listening_is_server_unreachable() {
    let port = free_port();
    let err = AdbServer::new(config(port)).version().unwrap_err();
    assert!(matches!(err, AdbError::ServerUnreachable { .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")));
}

/// A server that answers each connection from a script: (expected requests, reply bytes,
/// close after reply).
fn scripted_server(script: Vec<(Vec<&'static str>, Vec<u8>, bool)>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for (requests, reply, close) in script {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            for expected in requests {
                let request = read_request(&mut stream);
                assert_eq!(request, expected);
                if expected.starts_with("host:tport") {
                    stream.write_all(b"OKAY\x01\0\0\0\0\0\0\0").unwrap();
                } else if !expected.starts_with("host") {
                    stream.write_all(b"OKAY").unwrap();
                }
            }
            stream.write_all(&reply).unwrap();
            if close {
                // Close politely: FIN first, then drain what the client still sends (stdin
                // packets, QUIT), so the close never turns into a reset that loses the reply.
                let _ = stream.shutdown(std::net::Shutdown::Write);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = std::io::copy(&mut stream, &mut std::io::sink());
            } else {
                held.push(stream);
            }
        }
        // Keep the silent connections open until the test process ends.
        std::thread::sleep(Duration::from_secs(60));
        drop(held);
    });
    port
}

fn read_request(stream: &mut TcpStream) -> String {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let len = usize::from_str_radix(std::str::from_utf8(&len).unwrap(), 16).unwrap();
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).unwrap();
    String::from_utf8(body).unwrap()
}

fn query_reply(text: &str) -> Vec<u8> {
    format!("OKAY{:04x}{text}", text.len()).into_bytes()
}

fn device_and_features(features: &str) -> Vec<(Vec<&'static str>, Vec<u8>, bool)> {
    vec![
        (
            vec!["host:devices-l"],
            query_reply("emulator-5554          device product:sdk model:Pixel transport_id:1\n"),
            true,
        ),
        (
            vec!["host-serial:emulator-5554:features"],
            query_reply(features),
            true,
        ),
    ]
}

#[test]
fn shell_v2_returns_stdout_stderr_and_exit_status() {
    let mut script = device_and_features("cmd,shell_v2,stat_v2");
    let mut packets = b"\x01\x03\0\0\0out\x02\x03\0\0\0err".to_vec();
    packets.extend_from_slice(b"\x03\x01\0\0\0\x07");
    script.push((
        vec!["host:tport:serial:emulator-5554", "shell,v2,raw:false"],
        packets,
        true,
    ));
    let client = AdbClient::connect(config(scripted_server(script)), None).unwrap();
    let output = client.shell("false").unwrap();
    assert_eq!(output.stdout, b"out");
    assert_eq!(output.stderr, b"err");
    assert_eq!(output.exit_code, Some(7));
}

#[test]
fn legacy_shell_when_the_device_lacks_shell_v2() {
    let mut script = device_and_features("cmd");
    script.push((
        vec!["host:tport:serial:emulator-5554", "shell:echo hi"],
        b"hi\n".to_vec(),
        true,
    ));
    let client = AdbClient::connect(config(scripted_server(script)), None).unwrap();
    let output = client.shell("echo hi").unwrap();
    assert_eq!(output.stdout, b"hi\n");
    assert_eq!(output.exit_code, None);
}

#[test]
fn a_close_before_the_exit_packet_is_a_vanished_device() {
    let mut script = device_and_features("shell_v2");
    script.push((
        vec!["host:tport:serial:emulator-5554", "shell,v2,raw:sleep 100"],
        b"\x01\x02\0\0\0ab".to_vec(),
        true,
    ));
    let client = AdbClient::connect(config(scripted_server(script)), None).unwrap();
    let err = client.shell("sleep 100").unwrap_err();
    assert!(matches!(err, AdbError::DeviceVanished { .. }), "{err:?}");
    assert!(err.to_string().contains("emulator-5554"), "{err}");
}

#[test]
fn a_silent_device_is_a_timeout_not_a_hang() {
    let mut script = device_and_features("shell_v2");
    script.push((
        vec![
            "host:tport:serial:emulator-5554",
            "shell,v2,raw:uiautomator dump",
        ],
        Vec::new(),
        false,
    ));
    let port = scripted_server(script);
    let client = AdbClient::connect(
        ServerConfig {
            timeout: Duration::from_millis(300),
            ..config(port)
        },
        None,
    )
    .unwrap();
    let err = client.shell("uiautomator dump").unwrap_err();
    assert!(matches!(err, AdbError::Timeout { .. }), "{err:?}");
}

#[test]
fn device_states_become_typed_errors() {
    for (state, check) in [
        ("unauthorized", "unauthorized"),
        ("offline", "offline"),
        ("recovery", "recovery"),
    ] {
        let line: &'static str = Box::leak(format!("emulator-5554\t{state}\n").into_boxed_str());
        let port = scripted_server(vec![(vec!["host:devices-l"], query_reply(line), true)]);
        let err = AdbClient::connect(config(port), None).unwrap_err();
        assert!(err.to_string().contains(check), "{err}");
    }
    let port = scripted_server(vec![(
        vec!["host:devices-l"],
        query_reply("a\tdevice\nb\tdevice\n"),
        true,
    )]);
    let err = AdbClient::connect(config(port), None).unwrap_err();
    assert!(
        matches!(&err, AdbError::SeveralDevices { serials } if serials == &["a", "b"]),
        "{err:?}"
    );
}

#[test]
fn sync_pull_reads_data_chunks_and_failures() {
    // Sync needs no feature query: only the device listing comes first.
    let mut script = device_and_features("shell_v2");
    script.truncate(1);
    let mut recv = b"DATA\x05\0\0\0helloDATA\x01\0\0\0!DONE\0\0\0\0".to_vec();
    script.push((
        vec!["host:tport:serial:emulator-5554", "sync:"],
        std::mem::take(&mut recv),
        true,
    ));
    script.push((
        vec!["host:tport:serial:emulator-5554", "sync:"],
        b"FAIL\x13\0\0\0open failed: ENOENT".to_vec(),
        true,
    ));
    let client = AdbClient::connect(config(scripted_server(script)), None).unwrap();
    assert_eq!(client.pull("/sdcard/x.txt").unwrap(), b"hello!");
    let err = client.pull("/sdcard/missing").unwrap_err();
    assert!(err.to_string().contains("open failed"), "{err}");
}
