//! droid-mcp on stdio, spoken to one JSON-RPC line at a time: the integration tests check the
//! protocol's edges with it, the bench times tools through it (no client library in between).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

/// Bounds a wait for an answer, so that a server that never answers fails instead of hanging
/// (not a measure of speed).
pub const ANSWER_WAIT: Duration = Duration::from_secs(120);

/// A droid-mcp process on stdio, killed when dropped.
pub struct McpStdio {
    child: Child,
    input: ChildStdin,
    lines: mpsc::Receiver<String>,
    id: u64,
}

impl McpStdio {
    /// Starts `command` (droid-mcp with its flags) with piped stdin and stdout.
    pub fn spawn(mut command: Command) -> McpStdio {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("droid-mcp starts");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in output.lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        McpStdio {
            child,
            input,
            lines,
            id: 0,
        }
    }

    /// Writes one line.
    pub fn send(&mut self, line: &str) {
        writeln!(self.input, "{line}").expect("writing to droid-mcp");
        self.input.flush().expect("flushing");
    }

    /// The next message from the server, as JSON (every line it writes must be one).
    pub fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(ANSWER_WAIT)
            .expect("droid-mcp answers");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?} on stdout"))
    }

    /// Sends a request and returns the answer to it (the whole message).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&request.to_string());
        loop {
            let message = self.next();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The `initialize` handshake at `version`, then `notifications/initialized`: the result.
    pub fn initialize(&mut self, version: &str) -> Value {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "droid-tests", "version": "0"}}),
        );
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        answer["result"].clone()
    }

    /// A tool's structured answer; it must not be an error of any kind.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &answer["result"];
        assert!(
            answer.get("error").is_none() && result["isError"] != true,
            "{tool}: {answer}"
        );
        result["structuredContent"].clone()
    }
}

impl Drop for McpStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
