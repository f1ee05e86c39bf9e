//! Framing on the server socket, as AOSP `adb_io.cpp` does it: a request is 4 hex digits of
//! length and the payload, read whole within a deadline however slowly it drips; answers are
//! `OKAY` or `FAIL` + a length-prefixed reason.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::IDLE_TIMEOUT;

pub(super) fn okay(stream: &mut &TcpStream) -> io::Result<()> {
    stream.write_all(b"OKAY")
}

pub(super) fn okay_payload(stream: &mut &TcpStream, payload: &str) -> io::Result<()> {
    let mut out = Vec::with_capacity(8 + payload.len());
    out.extend_from_slice(b"OKAY");
    out.extend_from_slice(format!("{:04x}", payload.len().min(0xffff)).as_bytes());
    out.extend_from_slice(&payload.as_bytes()[..payload.len().min(0xffff)]);
    stream.write_all(&out)
}

pub(super) fn fail(stream: &mut impl Write, reason: &str) -> io::Result<()> {
    let reason = &reason.as_bytes()[..reason.len().min(0xffff)];
    let mut out = Vec::with_capacity(8 + reason.len());
    out.extend_from_slice(b"FAIL");
    out.extend_from_slice(format!("{:04x}", reason.len()).as_bytes());
    out.extend_from_slice(reason);
    stream.write_all(&out)
}

/// Reads one length-prefixed request. `Ok(None)` at a clean end of stream. Once its first byte
/// is in, the rest must follow within `deadline`: every later read waits only for what is left
/// of it.
pub(super) fn read_request(
    stream: &mut &TcpStream,
    deadline: Duration,
) -> io::Result<Option<Result<String, String>>> {
    let mut length = [0u8; 4];
    if stream.read(&mut length[..1])? == 0 {
        return Ok(None);
    }
    let mut dripping = Dripping {
        stream,
        until: Instant::now() + deadline,
        deadline,
    };
    let mut got = 1;
    while got < 4 {
        match dripping.read(&mut length[got..]) {
            Ok(0) => return Ok(Some(Err("truncated request length".into()))),
            Ok(n) => got += n,
            Err(err) => return dripping.late(err),
        }
    }
    let Some(len) = std::str::from_utf8(&length)
        .ok()
        .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|hex| usize::from_str_radix(hex, 16).ok())
    else {
        return Ok(Some(Err(format!(
            "bad request length {:?}: expected 4 hex digits",
            String::from_utf8_lossy(&length)
        ))));
    };
    if len == 0 {
        return Ok(Some(Err("empty request".into())));
    }
    let mut payload = vec![0u8; len];
    if let Err(err) = dripping.read_exact(&mut payload) {
        return match err.kind() {
            io::ErrorKind::UnexpectedEof => Ok(Some(Err(format!(
                "truncated request: {len} bytes announced"
            )))),
            _ => dripping.late(err),
        };
    }
    let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
    Ok(Some(
        String::from_utf8(payload).map_err(|_| "request is not UTF-8".to_string()),
    ))
}

/// A stream whose reads all end by one instant.
pub(super) struct Dripping<'a> {
    stream: &'a TcpStream,
    until: Instant,
    deadline: Duration,
}

impl Dripping<'_> {
    /// A read that timed out at the deadline is the client's fault: `FAIL` it.
    fn late(&self, err: io::Error) -> io::Result<Option<Result<String, String>>> {
        let timed_out = matches!(
            err.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        );
        if timed_out && Instant::now() >= self.until {
            return Ok(Some(Err(format!(
                "request not complete within {} ms",
                self.deadline.as_millis()
            ))));
        }
        Err(err)
    }
}

impl Read for Dripping<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left.min(IDLE_TIMEOUT)))?;
        let mut stream = self.stream;
        stream.read(buf)
    }
}
