//! Framing on the server socket: 4-hex-digit length prefixes, `OKAY`/`FAIL` status, and a
//! deadline that bounds every read and write of one request.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use super::AdbError;

/// One connection to the server, with the request it serves (for errors) and its deadline.
#[derive(Debug)]
pub(super) struct Conn {
    stream: TcpStream,
    what: String,
    timeout: Duration,
    deadline: Instant,
}

impl Conn {
    pub(super) fn new(stream: TcpStream, what: &str, timeout: Duration) -> Result<Conn, AdbError> {
        // Small requests must not wait for Nagle; a tap is a few dozen bytes.
        let _ = stream.set_nodelay(true);
        Ok(Conn {
            stream,
            what: what.to_string(),
            timeout,
            deadline: Instant::now() + timeout,
        })
    }

    fn timeout_error(&self) -> AdbError {
        AdbError::Timeout {
            what: self.what.clone(),
            after: self.timeout,
        }
    }

    /// Time left before the deadline, or the timeout error when none is.
    fn remaining(&self) -> Result<Duration, AdbError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(self.timeout_error())
        } else {
            Ok(left)
        }
    }

    fn map_io(&self, e: io::Error) -> AdbError {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => self.timeout_error(),
            _ => AdbError::Io {
                what: self.what.clone(),
                source: e,
            },
        }
    }

    /// One bounded read; `Ok(0)` at end of stream.
    pub(super) fn read_some(&mut self, buf: &mut [u8]) -> Result<usize, AdbError> {
        loop {
            let left = self.remaining()?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| self.map_io(e))?;
            match self.stream.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.map_io(e)),
            }
        }
    }

    /// Fills `buf`; `Ok(false)` when the peer closed before the first byte, an error when it
    /// closed part way.
    pub(super) fn read_exact_or_eof(&mut self, buf: &mut [u8]) -> Result<bool, AdbError> {
        let mut filled = 0;
        while filled < buf.len() {
            let n = self.read_some(&mut buf[filled..])?;
            if n == 0 {
                if filled == 0 {
                    return Ok(false);
                }
                return Err(AdbError::Protocol {
                    what: self.what.clone(),
                    detail: format!("connection closed after {filled} of {} bytes", buf.len()),
                });
            }
            filled += n;
        }
        Ok(true)
    }

    /// Fills `buf`; a close before that means the device went away mid-command.
    pub(super) fn read_exact_or(&mut self, buf: &mut [u8], serial: &str) -> Result<(), AdbError> {
        match self.read_exact_or_eof(buf) {
            Ok(true) => Ok(()),
            Ok(false) | Err(AdbError::Protocol { .. }) => Err(self.vanished(serial)),
            Err(AdbError::Io { source, .. }) if is_reset(&source) => Err(self.vanished(serial)),
            Err(e) => Err(e),
        }
    }

    pub(super) fn vanished(&self, serial: &str) -> AdbError {
        AdbError::DeviceVanished {
            serial: serial.to_string(),
            what: self.what.clone(),
        }
    }

    /// Everything until the peer closes.
    pub(super) fn read_to_end_or(&mut self, serial: &str) -> Result<Vec<u8>, AdbError> {
        let mut out = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match self.read_some(&mut chunk) {
                Ok(0) => return Ok(out),
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(AdbError::Io { source, .. }) if is_reset(&source) => {
                    return Err(self.vanished(serial))
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub(super) fn write_all_or(&mut self, data: &[u8], serial: &str) -> Result<(), AdbError> {
        let left = self.remaining()?;
        self.stream
            .set_write_timeout(Some(left))
            .map_err(|e| self.map_io(e))?;
        self.stream.write_all(data).map_err(|e| {
            if is_reset(&e) {
                self.vanished(serial)
            } else {
                self.map_io(e)
            }
        })
    }

    pub(super) fn shutdown_write(&mut self) {
        // Only tells the peer we are done sending; an error here changes nothing for the reply.
        let _ = self.stream.shutdown(Shutdown::Write);
    }

    /// Sends a length-prefixed request and reads the `OKAY`/`FAIL` status.
    pub(super) fn send_request(&mut self, request: &str) -> Result<(), AdbError> {
        let framed = format!("{:04x}{request}", request.len());
        let left = self.remaining()?;
        self.stream
            .set_write_timeout(Some(left))
            .map_err(|e| self.map_io(e))?;
        self.stream
            .write_all(framed.as_bytes())
            .map_err(|e| self.map_io(e))?;
        self.read_status(request)
    }

    fn read_status(&mut self, request: &str) -> Result<(), AdbError> {
        let mut status = [0u8; 4];
        if !self.read_exact_or_eof(&mut status)? {
            return Err(AdbError::Protocol {
                what: request.to_string(),
                detail: "connection closed before a status".into(),
            });
        }
        match &status {
            b"OKAY" => Ok(()),
            b"FAIL" => {
                let message = self.read_string()?;
                Err(AdbError::Refused {
                    request: request.to_string(),
                    message: String::from_utf8_lossy(&message).into_owned(),
                })
            }
            other => Err(AdbError::Protocol {
                what: request.to_string(),
                detail: format!("unexpected status {:02x?}", other),
            }),
        }
    }

    /// A 4-hex-digit length and that many bytes.
    pub(super) fn read_string(&mut self) -> Result<Vec<u8>, AdbError> {
        let mut len = [0u8; 4];
        if !self.read_exact_or_eof(&mut len)? {
            return Err(AdbError::Protocol {
                what: self.what.clone(),
                detail: "connection closed before a length".into(),
            });
        }
        let len = std::str::from_utf8(&len)
            .ok()
            .and_then(|s| usize::from_str_radix(s, 16).ok())
            .ok_or_else(|| AdbError::Protocol {
                what: self.what.clone(),
                detail: format!("bad length prefix {:02x?}", len),
            })?;
        let mut body = vec![0u8; len];
        if !self.read_exact_or_eof(&mut body)? && len > 0 {
            return Err(AdbError::Protocol {
                what: self.what.clone(),
                detail: "connection closed before the payload".into(),
            });
        }
        Ok(body)
    }
}

fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
    )
}
