//! The sync service (`sync:`): STAT, STA2, LST2, LIST, LIS2, RECV, SEND and QUIT on the
//! device's files.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::AtomicUsize;

use super::{Held, Shared};
use crate::sim::shell::{self, lock, FsError};

/// Largest sync path (adbd's own limit).
pub(super) const SYNC_PATH_MAX: u32 = 1024;

/// Largest sync `DATA` chunk (`SYNC_DATA_MAX`).
pub(super) const SYNC_DATA_MAX: u32 = 64 * 1024;

pub(super) const PUSH_MAX: usize = 64 * 1024 * 1024;

pub(super) const S_IFDIR: u32 = 0o040000;

pub(super) const S_IFREG: u32 = 0o100000;

pub(super) const ENOENT: u32 = 2;

pub(super) fn mode_of(stat: &shell::Stat) -> u32 {
    if stat.is_dir {
        S_IFDIR | 0o771
    } else {
        S_IFREG | 0o660
    }
}

pub(super) fn sync_fail(stream: &mut &TcpStream, message: &str) -> io::Result<()> {
    let mut out = b"FAIL".to_vec();
    out.extend_from_slice(&(message.len() as u32).to_le_bytes());
    out.extend_from_slice(message.as_bytes());
    stream.write_all(&out)
}

/// The stat_v2 fields (after id and error) of a path.
pub(super) fn stat_v2_fields(stat: Option<&shell::Stat>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    let (mode, size, mtime) = stat.map_or((0, 0, 0), |s| (mode_of(s), s.size, s.mtime));
    out.extend_from_slice(&0u64.to_le_bytes()); // dev
    out.extend_from_slice(&0u64.to_le_bytes()); // ino
    out.extend_from_slice(&mode.to_le_bytes());
    out.extend_from_slice(&u32::from(stat.is_some()).to_le_bytes()); // nlink
    out.extend_from_slice(&2000u32.to_le_bytes()); // uid shell
    out.extend_from_slice(&2000u32.to_le_bytes()); // gid shell
    out.extend_from_slice(&size.to_le_bytes());
    for _ in 0..3 {
        out.extend_from_slice(&i64::from(mtime).to_le_bytes());
    }
    out
}

/// The file-transfer sub-protocol, until `QUIT` or the client goes away.
pub(super) fn sync(shared: &Shared, stream: &mut &TcpStream) -> io::Result<()> {
    let fs = &shared.phone.fs;
    loop {
        let mut header = [0u8; 8];
        match stream.read_exact(&mut header) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(err) => return Err(err),
        }
        let id: [u8; 4] = [header[0], header[1], header[2], header[3]];
        let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if &id == b"QUIT" {
            return Ok(());
        }
        let known = matches!(
            &id,
            b"STAT" | b"STA2" | b"LST2" | b"LIST" | b"LIS2" | b"RECV" | b"SEND"
        );
        if !known {
            return sync_fail(
                stream,
                &format!("unknown sync request {:?}", String::from_utf8_lossy(&id)),
            );
        }
        if len > SYNC_PATH_MAX {
            return sync_fail(stream, "path too long");
        }
        let mut path = vec![0u8; len as usize];
        stream.read_exact(&mut path)?;
        let Ok(path) = String::from_utf8(path) else {
            return sync_fail(stream, "path is not UTF-8");
        };
        match &id {
            b"STAT" => {
                let stat = lock(fs).stat(&path);
                let mut out = b"STAT".to_vec();
                let (mode, size, mtime) =
                    stat.map_or((0, 0, 0), |s| (mode_of(&s), s.size as u32, s.mtime));
                for value in [mode, size, mtime] {
                    out.extend_from_slice(&value.to_le_bytes());
                }
                stream.write_all(&out)?;
            }
            b"STA2" | b"LST2" => {
                let stat = lock(fs).stat(&path);
                let mut out = id.to_vec();
                let error = if stat.is_some() { 0 } else { ENOENT };
                out.extend_from_slice(&error.to_le_bytes());
                out.extend(stat_v2_fields(stat.as_ref()));
                stream.write_all(&out)?;
            }
            b"LIST" | b"LIS2" => {
                let entries = lock(fs).list(&path).unwrap_or_default();
                let v2 = &id == b"LIS2";
                let mut out = Vec::new();
                for entry in &entries {
                    if v2 {
                        out.extend_from_slice(b"DNT2");
                        out.extend_from_slice(&0u32.to_le_bytes());
                        out.extend(stat_v2_fields(Some(&entry.stat)));
                    } else {
                        out.extend_from_slice(b"DENT");
                        let stat = &entry.stat;
                        for value in [mode_of(stat), stat.size as u32, stat.mtime] {
                            out.extend_from_slice(&value.to_le_bytes());
                        }
                    }
                    out.extend_from_slice(&(entry.name.len() as u32).to_le_bytes());
                    out.extend_from_slice(entry.name.as_bytes());
                }
                out.extend_from_slice(b"DONE");
                out.extend(std::iter::repeat_n(0u8, if v2 { 72 } else { 16 }));
                stream.write_all(&out)?;
            }
            b"RECV" => {
                let data = lock(fs).read(&path).map(<[u8]>::to_vec);
                match data {
                    Ok(data) => {
                        for chunk in data.chunks(SYNC_DATA_MAX as usize) {
                            let mut out = b"DATA".to_vec();
                            out.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
                            out.extend_from_slice(chunk);
                            stream.write_all(&out)?;
                        }
                        let mut done = b"DONE".to_vec();
                        done.extend_from_slice(&0u32.to_le_bytes());
                        stream.write_all(&done)?;
                    }
                    Err(err) => return sync_fail(stream, &format!("open failed: {err}")),
                }
            }
            _ => {
                if !receive_push(fs, stream, &path, &shared.client_bytes)? {
                    return Ok(());
                }
            }
        }
    }
}

/// `SEND "path,mode"`: `DATA` chunks then `DONE` + mtime. False when the session must end.
pub(super) fn receive_push(
    fs: &shell::FsHandle,
    stream: &mut &TcpStream,
    spec: &str,
    pool: &AtomicUsize,
) -> io::Result<bool> {
    let path = spec.rsplit_once(',').map_or(spec, |(path, _mode)| path);
    let mut data = Vec::new();
    let mut held = Held::new(pool);
    loop {
        let mut header = [0u8; 8];
        stream.read_exact(&mut header)?;
        let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        match &header[..4] {
            b"DATA" => {
                if len > SYNC_DATA_MAX {
                    sync_fail(stream, "data chunk too large")?;
                    return Ok(false);
                }
                if data.len() + len as usize > PUSH_MAX || !held.grow(len as usize) {
                    sync_fail(
                        stream,
                        &format!(
                            "file too large for the simulator: {FsError}",
                            FsError = FsError::NoSpace
                        ),
                    )?;
                    return Ok(false);
                }
                let start = data.len();
                data.resize(start + len as usize, 0);
                stream.read_exact(&mut data[start..])?;
            }
            b"DONE" => break,
            _ => {
                sync_fail(stream, "expected DATA or DONE")?;
                return Ok(false);
            }
        }
    }
    let written = {
        let mut storage = lock(fs);
        let normalized = shell::FileSystem::normalize(path);
        let parent = normalized
            .rsplit_once('/')
            .map_or("/", |(p, _)| if p.is_empty() { "/" } else { p })
            .to_string();
        storage
            .mkdir(&parent, true)
            .and_then(|()| storage.write(&normalized, &data, false))
    };
    match written {
        Ok(()) => {
            let mut out = b"OKAY".to_vec();
            out.extend_from_slice(&0u32.to_le_bytes());
            stream.write_all(&out)?;
            Ok(true)
        }
        Err(err) => {
            sync_fail(stream, &format!("couldn't create file: {err}"))?;
            Ok(false)
        }
    }
}
