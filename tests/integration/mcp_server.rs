//! droid-mcp against a client nobody here wrote: the official MCP Python SDK (`mcp`, pinned in
//! tests/python/requirements.txt) runs `tests/python/mcp_client.py` against droid-mcp and
//! droid-sim, over stdio and over Streamable HTTP, and checks the simulator's truth log. Without
//! the SDK these tests print a skip notice and pass, except under `DROID_REQUIRE_ADB=1`.
//!
//! The protocol's edges are checked from Rust, on the wire: garbage on stdin gets a protocol
//! error and the next request its answer; a bind beyond loopback needs the flag and a token; a
//! request without the token gets 401.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::common::{bin_path, droid, root};
use crate::mcp_stdio::{McpStdio, ANSWER_WAIT};
use crate::sim_adb::SimProcess;
use crate::sim_clients::client_installed;

const APP: &str = "builtin:shop";
/// The test password droid-mcp is given; it must reach the device and no answer.
const SECRET: &str = "hunter2-mcp-secret";
const TOKEN: &str = "a-bearer-token-0123456789";

/// A process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// droid-mcp's flags for a simulator, with everything it writes in `dir`.
fn server_args(sim: &SimProcess, dir: &Path) -> Vec<String> {
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    vec![
        "--adb-port".into(),
        sim.port.to_string(),
        "--device".into(),
        sim.serial.clone(),
        "--db".into(),
        path("crawler.db"),
        "--out".into(),
        path("output_data"),
        "--captures".into(),
        path("captures"),
        "--config-db".into(),
        path("user_config.db"),
        "--test-password".into(),
        SECRET.into(),
        "--pause-ms".into(),
        "0".into(),
    ]
}

/// Runs tests/python/mcp_client.py with `args`: its JSON outcome.
fn python_session(args: &[String]) -> Value {
    let output = Command::new("python3")
        .arg(root().join("tests/python/mcp_client.py"))
        .args(args)
        .env("MCP_TEST_SECRET", SECRET)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("python3 runs the MCP client");
    assert!(output.status.success(), "the MCP client failed (above)");
    serde_json::from_slice(&output.stdout).expect("the client prints JSON")
}

/// What the session showed, for people (`cargo test mcp_server -- --nocapture`).
fn tell(transport: &str, outcome: &Value) {
    let facts = &outcome["facts"];
    eprintln!("{transport}: {facts:#}");
    for call in outcome["transcript"].as_array().into_iter().flatten() {
        eprintln!(
            "  {} {} -> {}{}",
            call["tool"].as_str().unwrap_or_default(),
            call["arguments"],
            match call["is_error"].as_bool() {
                Some(true) => format!("tool error: {}", call["error"].as_str().unwrap_or("")),
                _ => format!("{}", call["content"]),
            },
            call["summary"]
                .as_str()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        );
    }
}

/// What every session must have shown.
fn check_session(outcome: &Value, truth: &Path) {
    let facts = &outcome["facts"];
    assert_eq!(facts["protocol_version"], "2026-07-28", "{facts}");
    assert_eq!(facts["legacy_protocol_version"], "2025-11-25", "{facts}");
    assert_eq!(facts["tap"]["before"], "@launcher", "{facts}");
    assert_eq!(facts["tap"]["after"], "welcome", "{facts}");
    assert_eq!(facts["crawl"]["status"], "COMPLETED", "{facts}");
    assert_eq!(facts["controlled"]["reason"], "stopped", "{facts}");
    assert_eq!(facts["back_seen_before"], true, "{facts}");
    let truth = std::fs::read_to_string(truth).expect("truth log");
    assert!(
        truth.contains(SECRET),
        "the test password reached the device"
    );
    assert!(
        !outcome.to_string().contains(SECRET),
        "the test password is in the transcript"
    );
}

#[test]
fn python_sdk_session_over_stdio() {
    if !client_installed("mcp") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (sim, truth) = SimProcess::with_truth_log(APP, dir.path());
    let mut args = vec![
        "stdio".to_string(),
        truth.to_string_lossy().into_owned(),
        "--".into(),
        bin_path("droid-mcp").to_string_lossy().into_owned(),
    ];
    args.extend(server_args(&sim, dir.path()));
    let outcome = python_session(&args);
    tell("stdio", &outcome);
    check_session(&outcome, &truth);
}

/// droid-mcp serving HTTP on a port of its own: the child and its URL (from its stderr line).
fn serve_http(extra: &[String], token: Option<&str>) -> (Killed, String) {
    let mut command = droid("droid-mcp");
    command.args(["--http", "127.0.0.1:0"]).args(extra);
    if let Some(token) = token {
        command.env("DROID_MCP_TOKEN", token);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("droid-mcp starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("droid-mcp's first line");
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    if let Some(token) = token {
        assert!(!line.contains(token), "the token is printed: {line}");
        assert!(line.contains("bearer token required"), "{line}");
    }
    // The rest of its messages, for people.
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            eprintln!("{line}");
        }
    });
    (Killed(child), url)
}

#[test]
fn python_sdk_session_over_streamable_http() {
    if !client_installed("mcp") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (sim, truth) = SimProcess::with_truth_log(APP, dir.path());
    let (_server, url) = serve_http(&server_args(&sim, dir.path()), Some(TOKEN));
    let args = [
        "http".to_string(),
        truth.to_string_lossy().into_owned(),
        url,
        TOKEN.to_string(),
    ];
    let outcome = python_session(&args);
    tell("streamable HTTP", &outcome);
    check_session(&outcome, &truth);
}

#[test]
fn garbage_on_stdin_gets_a_protocol_error_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut command = droid("droid-mcp");
    command.arg("--db").arg(dir.path().join("crawler.db"));
    let mut server = McpStdio::spawn(command);
    let initialized = server.initialize("2025-11-25");
    assert_eq!(
        initialized["protocolVersion"], "2025-11-25",
        "{initialized}"
    );
    assert_eq!(initialized["serverInfo"]["name"], "droid-mcp");

    // JSON of the wrong shape: an Invalid Request error.
    server.send(r#"{"jsonrpc":"2.0","id":2,"method":42}"#);
    let invalid = server.next();
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    // Not JSON at all: dropped, as every official SDK drops it (an answer could start an
    // error storm with a peer that echoes); an unknown method: Method not found.
    server.send("this is not JSON {{{");
    server.send("\u{1b}[31m\0\u{7f}");
    server.send(r#"{"jsonrpc":"2.0","id":3,"method":"no/such/method"}"#);
    let unknown = server.next();
    assert_eq!(unknown["id"], 3, "{unknown}");
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    // Still serving: the tools, and a tool that does not exist.
    server.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#);
    let listed = server.next();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("name"))
        .collect();
    for tool in [
        "devices",
        "observe",
        "act",
        "crawl",
        "crawl_status",
        "crawl_control",
        "report",
    ] {
        assert!(names.contains(&tool), "{tool} not in {names:?}");
    }
    for tool in listed["result"]["tools"].as_array().expect("tools") {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    server.send(
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fly","arguments":{}}}"#,
    );
    let no_tool = server.next();
    assert_eq!(no_tool["id"], 5, "{no_tool}");
    assert!(
        no_tool.get("error").is_some() || no_tool["result"]["isError"] == true,
        "{no_tool}"
    );
    // Arguments of the wrong shape, and a tool that fails (no device here): answered too.
    server.send(
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"act","arguments":{"action":"fly"}}}"#,
    );
    let bad_arguments = server.next();
    assert_eq!(bad_arguments["id"], 6, "{bad_arguments}");
    server.send(
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"report","arguments":{"run":"latest"}}}"#,
    );
    let failed = server.next();
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    server.send(r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#);
    assert_eq!(server.next()["id"], 8);
}

#[test]
fn a_bind_beyond_loopback_needs_the_flag_and_a_token() {
    let refused = droid("droid-mcp")
        .args(["--http", "0.0.0.0:0"])
        .output()
        .expect("droid-mcp runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not a loopback address"), "{stderr}");

    let refused = droid("droid-mcp")
        .args(["--http", "0.0.0.0:0", "--allow-remote"])
        .output()
        .expect("droid-mcp runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("needs a bearer token"), "{stderr}");

    let short = droid("droid-mcp")
        .args(["--http", "0.0.0.0:0", "--allow-remote"])
        .env("DROID_MCP_TOKEN", "short")
        .output()
        .expect("droid-mcp runs");
    let stderr = String::from_utf8_lossy(&short.stderr);
    assert_eq!(short.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("shorter than 16"), "{stderr}");

    let usage = droid("droid-mcp")
        .arg("--allow-remote")
        .output()
        .expect("droid-mcp runs");
    assert_eq!(
        usage.status.code(),
        Some(2),
        "--allow-remote without --http"
    );
}

/// One HTTP/1.1 request to `url`'s server: the status and the body.
fn http(
    url: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("host:port");
    let mut stream = std::net::TcpStream::connect(authority).expect("connecting");
    stream
        .set_read_timeout(Some(ANSWER_WAIT))
        .expect("read timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("sending");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("reading");
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"));
    (status, answer)
}

#[test]
fn http_requests_without_the_token_get_401_and_garbage_a_protocol_error() {
    let (_server, url) = serve_http(&[], Some(TOKEN));
    let json_type = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "droid-tests", "version": "0"}}})
    .to_string();
    let bearer = format!("Bearer {TOKEN}");
    let wrong = format!("Bearer {TOKEN}x");
    for auth in [None, Some(wrong.as_str()), Some("Basic x"), Some(TOKEN)] {
        let mut headers = json_type.to_vec();
        if let Some(auth) = auth {
            headers.push(("Authorization", auth));
        }
        let (status, answer) = http(&url, "POST", "/mcp", &headers, &initialize);
        assert_eq!(status, 401, "{auth:?}: {answer}");
        assert!(
            answer.contains("WWW-Authenticate: Bearer")
                || answer.contains("www-authenticate: Bearer"),
            "{answer}"
        );
    }
    let mut headers = json_type.to_vec();
    headers.push(("Authorization", bearer.as_str()));
    let (status, answer) = http(&url, "POST", "/elsewhere", &headers, &initialize);
    assert_eq!(status, 404, "{answer}");
    let (status, answer) = http(&url, "POST", "/mcp", &headers, "not JSON {{{");
    assert!((400..500).contains(&status), "garbage: {answer}");
    let (status, answer) = http(
        &url,
        "POST",
        "/mcp",
        &headers,
        r#"{"jsonrpc":"2.0","id":2,"method":42}"#,
    );
    assert!((400..500).contains(&status), "the wrong shape: {answer}");
    // Still serving.
    let (status, answer) = http(&url, "POST", "/mcp", &headers, &initialize);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"serverInfo\""), "{answer}");
    assert!(!answer.contains(TOKEN), "the token is echoed");
}
