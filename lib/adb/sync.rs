//! The sync protocol (`sync:`): 4-byte ids with little-endian u32 arguments for `STAT`, `RECV`,
//! `SEND`, `DATA`, `DONE`, `OKAY`, `FAIL` and `QUIT`.

use super::wire::Conn;
use super::AdbError;

/// Largest `DATA` chunk either side may send.
const SYNC_DATA_MAX: usize = 64 * 1024;
/// Longest remote path the protocol accepts.
const MAX_PATH: usize = 1024;

/// A remote file's `lstat` as sync `STAT` (v1) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub mode: u32,
    pub size: u32,
    pub mtime: u32,
}

impl FileStat {
    pub fn is_dir(&self) -> bool {
        self.mode & 0o170000 == 0o040000
    }
}

pub(super) struct Session<'a> {
    conn: Conn,
    serial: &'a str,
}

impl<'a> Session<'a> {
    pub(super) fn open(conn: Conn, serial: &'a str) -> Session<'a> {
        Session { conn, serial }
    }

    fn request(&mut self, id: &[u8; 4], path: &str) -> Result<(), AdbError> {
        if path.len() > MAX_PATH {
            return Err(AdbError::Sync {
                path: path.to_string(),
                message: format!("path longer than {MAX_PATH} bytes"),
            });
        }
        let mut message = Vec::with_capacity(8 + path.len());
        message.extend_from_slice(id);
        message.extend_from_slice(&(path.len() as u32).to_le_bytes());
        message.extend_from_slice(path.as_bytes());
        self.conn.write_all_or(&message, self.serial)
    }

    /// An id and a u32.
    fn read_header(&mut self) -> Result<([u8; 4], u32), AdbError> {
        let mut header = [0u8; 8];
        self.conn.read_exact_or(&mut header, self.serial)?;
        let id = [header[0], header[1], header[2], header[3]];
        let value = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        Ok((id, value))
    }

    fn read_fail(&mut self, path: &str, len: u32) -> Result<AdbError, AdbError> {
        let mut message = vec![0u8; (len as usize).min(SYNC_DATA_MAX)];
        self.conn.read_exact_or(&mut message, self.serial)?;
        Ok(AdbError::Sync {
            path: path.to_string(),
            message: String::from_utf8_lossy(&message).into_owned(),
        })
    }

    fn unexpected(&self, path: &str, id: [u8; 4]) -> AdbError {
        AdbError::Protocol {
            what: format!("sync {path}"),
            detail: format!("unexpected id {:?}", String::from_utf8_lossy(&id)),
        }
    }

    pub(super) fn stat(&mut self, path: &str) -> Result<Option<FileStat>, AdbError> {
        self.request(b"STAT", path)?;
        let (id, mode) = self.read_header()?;
        if &id != b"STAT" {
            return Err(self.unexpected(path, id));
        }
        let mut rest = [0u8; 8];
        self.conn.read_exact_or(&mut rest, self.serial)?;
        let size = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let mtime = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        // adbd lstats into a zeroed struct: all zero means "does not exist".
        if mode == 0 && size == 0 && mtime == 0 {
            return Ok(None);
        }
        Ok(Some(FileStat { mode, size, mtime }))
    }

    pub(super) fn recv(&mut self, path: &str, out: &mut Vec<u8>) -> Result<(), AdbError> {
        self.request(b"RECV", path)?;
        loop {
            let (id, len) = self.read_header()?;
            match &id {
                b"DATA" => {
                    if len as usize > SYNC_DATA_MAX {
                        return Err(AdbError::Protocol {
                            what: format!("sync {path}"),
                            detail: format!("DATA chunk of {len} bytes"),
                        });
                    }
                    let start = out.len();
                    out.resize(start + len as usize, 0);
                    self.conn.read_exact_or(&mut out[start..], self.serial)?;
                }
                b"DONE" => return Ok(()),
                b"FAIL" => return Err(self.read_fail(path, len)?),
                _ => return Err(self.unexpected(path, id)),
            }
        }
    }

    pub(super) fn send(&mut self, data: &[u8], path: &str, mode: u32) -> Result<(), AdbError> {
        self.request(b"SEND", &format!("{path},{mode}"))?;
        let mut message = Vec::with_capacity(data.len() + 16);
        for chunk in data.chunks(SYNC_DATA_MAX) {
            message.extend_from_slice(b"DATA");
            message.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
            message.extend_from_slice(chunk);
        }
        let mtime = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as u32)
            .unwrap_or(0);
        message.extend_from_slice(b"DONE");
        message.extend_from_slice(&mtime.to_le_bytes());
        self.conn.write_all_or(&message, self.serial)?;
        let (id, len) = self.read_header()?;
        match &id {
            b"OKAY" => Ok(()),
            b"FAIL" => Err(self.read_fail(path, len)?),
            _ => Err(self.unexpected(path, id)),
        }
    }

    /// Ends the session politely; the answer (a close) does not matter.
    pub(super) fn quit(mut self) {
        let _ = self.request(b"QUIT", "");
    }
}
