//! The shell service: `shell,v2,...:CMD` (shell protocol v2 packets with the exit status),
//! legacy `shell:CMD` and `exec:CMD` (raw bytes), and the interactive PTY shell; the client's
//! stdin packets as the running command's session.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use super::{Held, Shared};
use crate::sim::shell::{self, Sink};

/// Largest shell-protocol packet or pushed file accepted from a client.
pub(super) const PACKET_MAX: u32 = 1024 * 1024;

pub(super) const STDIN_MAX: usize = 16 * 1024 * 1024;

/// `shell[,v2][,pty|raw]:COMMAND` after its `OKAY`: the command (or the script on stdin, or an
/// interactive shell), its output as v2 packets or raw bytes, and with v2 the exit packet.
pub(super) fn serve(
    shared: &Shared,
    stream: &mut &TcpStream,
    v2: bool,
    pty: bool,
    command: &str,
) -> io::Result<()> {
    let mut input = ClientInput::new(stream, v2, &shared.client_bytes);
    input.pty = pty;
    let mut v2_sink = V2Sink { stream };
    let mut raw_sink = RawSink { stream };
    let sink: &mut dyn Sink = if v2 { &mut v2_sink } else { &mut raw_sink };
    let status = if pty && command.trim().is_empty() {
        interactive(shared, &mut input, &mut PtySink { inner: sink })
    } else if pty {
        run_shell(shared, command, &mut input, &mut PtySink { inner: sink }).status
    } else if command.trim().is_empty() {
        // `echo CMDS | adb shell`: the shell reads its script from stdin.
        let script = String::from_utf8_lossy(&shell::Session::stdin(&mut input)).into_owned();
        run_shell(shared, &script, &mut input, sink).status
    } else {
        run_shell(shared, command, &mut input, sink).status
    };
    if v2 {
        let mut exit = vec![3u8];
        exit.extend_from_slice(&1u32.to_le_bytes());
        exit.push(status);
        stream.write_all(&exit)?;
    }
    Ok(())
}

/// `exec:COMMAND` after its `OKAY`: raw bytes, no status.
pub(super) fn exec(shared: &Shared, stream: &mut &TcpStream, command: &str) {
    let mut input = ClientInput::new(stream, false, &shared.client_bytes);
    run_shell(shared, command, &mut input, &mut RawSink { stream });
}

fn run_shell(
    shared: &Shared,
    command: &str,
    session: &mut dyn shell::Session,
    sink: &mut dyn Sink,
) -> shell::Finish {
    match shell::parse(command) {
        Ok(script) => shell::execute(&script, &shared.phone, &shared.phone.fs, session, sink),
        Err(err) => {
            sink.write(true, format!("/system/bin/sh: {err}\n").as_bytes());
            shell::Finish {
                status: 1,
                exited: false,
            }
        }
    }
}

/// The prompt of the simulated device's interactive shell (`device:cwd $ `).
pub(super) const PROMPT: &[u8] = b"sim:/ $ ";

/// Longest line an interactive shell keeps.
pub(super) const LINE_MAX: usize = 64 * 1024;

/// An interactive shell waits this long for a keystroke.
pub(super) const INTERACTIVE_TIMEOUT: Duration = Duration::from_secs(3600);

/// `adb shell` without a command on a terminal: a PTY shell that echoes, edits a line (backspace,
/// Ctrl-C), runs it on Enter, and ends on `exit`, Ctrl-D on an empty line, or end of input.
fn interactive(shared: &Shared, input: &mut ClientInput<'_>, out: &mut dyn Sink) -> u8 {
    let _ = input.stream.set_read_timeout(Some(INTERACTIVE_TIMEOUT));
    let mut status = 0;
    let mut line: Vec<u8> = Vec::new();
    if !out.write(false, PROMPT) {
        return status;
    }
    while let Some(chunk) = input.next_chunk() {
        for byte in chunk {
            let echoed = match byte {
                b'\r' | b'\n' => {
                    out.write(false, b"\n");
                    let text = String::from_utf8_lossy(&std::mem::take(&mut line)).into_owned();
                    if !text.trim().is_empty() {
                        // Commands run from a terminal get no stdin of their own here.
                        let mut no_stdin =
                            ClientInput::new(input.stream, input.v2, input.held.pool);
                        no_stdin.taken = true;
                        no_stdin.pty = true;
                        let finish = run_shell(shared, &text, &mut no_stdin, out);
                        status = finish.status;
                        if finish.exited {
                            return status;
                        }
                    }
                    out.write(false, PROMPT)
                }
                0x7f | 0x08 => {
                    // Remove one character, continuation bytes included.
                    while let Some(removed) = line.pop() {
                        if removed & 0xc0 != 0x80 {
                            break;
                        }
                    }
                    out.write(false, b"\x08 \x08")
                }
                0x03 => {
                    line.clear();
                    out.write(false, b"^C\n") && out.write(false, PROMPT)
                }
                0x04 if line.is_empty() => return status,
                byte if line.len() < LINE_MAX && (byte >= 0x20 || byte == b'\t') => {
                    line.push(byte);
                    out.write(false, &[byte])
                }
                _ => true,
            };
            if !echoed {
                return status;
            }
        }
    }
    status
}

/// What a PTY does to output: one stream, `\n` becomes `\r\n`.
struct PtySink<'a> {
    inner: &'a mut dyn Sink,
}

impl Sink for PtySink<'_> {
    fn write(&mut self, _stderr: bool, bytes: &[u8]) -> bool {
        let mut converted = Vec::with_capacity(bytes.len() + bytes.len() / 16);
        for &byte in bytes {
            if byte == b'\n' {
                converted.push(b'\r');
            }
            converted.push(byte);
        }
        self.inner.write(false, &converted)
    }
}

/// Shell protocol v2 output: packets of id 1 (stdout) and 2 (stderr).
struct V2Sink<'a> {
    stream: &'a TcpStream,
}

impl Sink for V2Sink<'_> {
    fn write(&mut self, stderr: bool, bytes: &[u8]) -> bool {
        let id = if stderr { 2u8 } else { 1 };
        bytes.chunks(64 * 1024).all(|chunk| {
            let mut packet = Vec::with_capacity(5 + chunk.len());
            packet.push(id);
            packet.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
            packet.extend_from_slice(chunk);
            let mut stream = self.stream;
            stream.write_all(&packet).is_ok()
        })
    }
}

/// Legacy shell and `exec:`: both streams as raw bytes on the socket.
struct RawSink<'a> {
    stream: &'a TcpStream,
}

impl Sink for RawSink<'_> {
    fn write(&mut self, _stderr: bool, bytes: &[u8]) -> bool {
        let mut stream = self.stream;
        stream.write_all(bytes).is_ok()
    }
}

/// The client side of a running command: its stdin, and whether it is still connected.
///
/// In shell protocol v2, stdin is id 0 packets until close-stdin (id 4); window-size packets are
/// ignored. Raw services (`exec:`, legacy `shell:`) take the bytes until the client half-closes.
/// Bytes are read only when a command asks for stdin or polls for a hangup, never more than
/// [`STDIN_MAX`], and a packet above [`PACKET_MAX`] ends stdin.
pub(super) struct ClientInput<'a> {
    stream: &'a TcpStream,
    held: Held<'a>,
    v2: bool,
    /// Received, not yet parsed (a partial packet).
    pending: Vec<u8>,
    data: Vec<u8>,
    /// No more stdin will come: close-stdin, end of stream, an oversized packet or the limit.
    closed: bool,
    /// The client closed its end, or the socket failed.
    gone: bool,
    taken: bool,
    /// A terminal: Ctrl-C from the client interrupts the running command.
    pty: bool,
}

impl<'a> ClientInput<'a> {
    pub(super) fn new(stream: &'a TcpStream, v2: bool, pool: &'a AtomicUsize) -> Self {
        ClientInput {
            stream,
            held: Held::new(pool),
            v2,
            pending: Vec::new(),
            data: Vec::new(),
            closed: false,
            gone: false,
            taken: false,
            pty: false,
        }
    }

    /// One read; false when nothing came (time-out, would block, end of stream).
    fn receive(&mut self) -> bool {
        let mut buf = [0u8; 16 * 1024];
        let mut stream = self.stream;
        match stream.read(&mut buf) {
            Ok(0) => {
                self.gone = true;
                self.closed = true;
                false
            }
            Ok(n) => {
                // After stdin ended, further bytes are read (to notice the hangup) and dropped.
                if !self.closed {
                    if self.held.grow(n) {
                        self.pending.extend_from_slice(&buf[..n]);
                        self.parse();
                    } else {
                        self.closed = true;
                    }
                }
                true
            }
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                false
            }
            Err(_) => {
                self.gone = true;
                self.closed = true;
                false
            }
        }
    }

    /// The next input as it arrives (interactive shells); `None` at the end of input.
    fn next_chunk(&mut self) -> Option<Vec<u8>> {
        loop {
            if !self.data.is_empty() {
                return Some(std::mem::take(&mut self.data));
            }
            if self.closed || !self.receive() {
                return None;
            }
        }
    }

    fn parse(&mut self) {
        if !self.v2 {
            self.data.append(&mut self.pending);
        }
        while self.v2 && self.pending.len() >= 5 {
            let header = &self.pending[..5];
            let len = u32::from_le_bytes([header[1], header[2], header[3], header[4]]);
            if len > PACKET_MAX {
                self.closed = true;
                break;
            }
            let end = 5 + len as usize;
            if self.pending.len() < end {
                break;
            }
            match self.pending[0] {
                0 => self.data.extend_from_slice(&self.pending[5..end]),
                4 => self.closed = true,
                // Window size changes and anything else do not concern a non-interactive shell.
                _ => {}
            }
            self.pending.drain(..end);
            if self.closed {
                break;
            }
        }
        if self.data.len() > STDIN_MAX {
            self.data.truncate(STDIN_MAX);
            self.closed = true;
        }
        if self.closed {
            self.pending = Vec::new();
        }
    }
}

impl shell::Session for ClientInput<'_> {
    fn stdin(&mut self) -> Vec<u8> {
        if self.taken {
            return Vec::new();
        }
        self.taken = true;
        // A client silent for IDLE_TIMEOUT ends stdin.
        while !self.closed && self.receive() {}
        std::mem::take(&mut self.data)
    }

    fn stdin_up_to(&mut self, limit: usize) -> Vec<u8> {
        if self.taken {
            return Vec::new();
        }
        self.taken = true;
        while self.data.len() < limit && !self.closed && self.receive() {}
        let mut data = std::mem::take(&mut self.data);
        data.truncate(limit);
        data
    }

    fn hung_up(&mut self) -> bool {
        if self.gone {
            return true;
        }
        if self.stream.set_nonblocking(true).is_err() {
            return false;
        }
        // Bounded, so a client streaming data cannot keep the command here.
        for _ in 0..64 {
            if !self.receive() {
                break;
            }
        }
        let _ = self.stream.set_nonblocking(false);
        self.gone
    }

    fn interrupted(&mut self) -> bool {
        if shell::Session::hung_up(self) {
            return true;
        }
        // Ctrl-C on a terminal: the line discipline drops the pending input and signals.
        let typed = self.pty && self.data.contains(&0x03);
        if typed {
            self.data.clear();
        }
        typed
    }
}
