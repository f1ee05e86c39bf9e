//! The device's storage: a small in-memory filesystem, writable under `/data/local/tmp` and
//! `/sdcard` (with its `/storage/emulated/0` aliases), bounded in size.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use thiserror::Error;

/// A shared filesystem: commands run concurrently on many connections.
pub type FsHandle = std::sync::Mutex<FileSystem>;

/// Locks the filesystem, surviving a panicked holder (the data stays consistent per call).
pub fn lock(fs: &FsHandle) -> std::sync::MutexGuard<'_, FileSystem> {
    fs.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Why a file operation failed; the message is the errno text toybox prints.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FsError {
    #[error("No such file or directory")]
    NotFound,
    #[error("Is a directory")]
    IsDirectory,
    #[error("Not a directory")]
    NotDirectory,
    #[error("Read-only file system")]
    ReadOnly,
    #[error("Permission denied")]
    PermissionDenied,
    #[error("Directory not empty")]
    NotEmpty,
    #[error("No space left on device")]
    NoSpace,
    #[error("File exists")]
    Exists,
}

/// What `stat` tells about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub is_dir: bool,
    pub size: u64,
    pub mtime: u32,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub stat: Stat,
}

/// The simulated storage: writable under `/data/local/tmp` and `/sdcard`, bounded in size.
#[derive(Debug, Clone)]
pub struct FileSystem {
    files: BTreeMap<String, (Vec<u8>, u32)>,
    dirs: BTreeSet<String>,
    used: usize,
    capacity: usize,
    /// When the device "booted": the time directories report.
    booted: u32,
}

const WRITABLE_ROOTS: &[&str] = &["/data/local/tmp", "/sdcard"];
const SDCARD_ALIASES: &[&str] = &[
    "/storage/emulated/0",
    "/storage/self/primary",
    "/mnt/sdcard",
    "/mnt/user/0/primary",
];
const INITIAL_DIRS: &[&str] = &[
    "/",
    "/data",
    "/data/local",
    "/data/local/tmp",
    "/dev",
    "/sdcard",
    "/sdcard/DCIM",
    "/sdcard/Download",
    "/sdcard/Movies",
    "/sdcard/Pictures",
    "/storage",
    "/storage/emulated",
    "/system",
];

impl Default for FileSystem {
    fn default() -> Self {
        FileSystem::with_capacity(256 * 1024 * 1024)
    }
}

fn now_secs() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
}

impl FileSystem {
    /// An empty device storage holding at most `capacity` bytes of file data.
    pub fn with_capacity(capacity: usize) -> FileSystem {
        FileSystem {
            files: BTreeMap::new(),
            dirs: INITIAL_DIRS.iter().map(|d| d.to_string()).collect(),
            used: 0,
            capacity,
            booted: now_secs(),
        }
    }

    /// The absolute, alias-free form of a path (the shell's working directory is `/`).
    pub fn normalize(path: &str) -> String {
        let mut parts: Vec<&str> = Vec::new();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                other => parts.push(other),
            }
        }
        let joined = format!("/{}", parts.join("/"));
        for alias in SDCARD_ALIASES {
            if joined == *alias {
                return "/sdcard".to_string();
            }
            if let Some(rest) = joined.strip_prefix(alias).filter(|r| r.starts_with('/')) {
                return format!("/sdcard{rest}");
            }
        }
        joined
    }

    fn parent(path: &str) -> &str {
        match path.rfind('/') {
            Some(0) | None => "/",
            Some(index) => &path[..index],
        }
    }

    fn writable_area(path: &str) -> bool {
        WRITABLE_ROOTS.iter().any(|root| {
            path.strip_prefix(root)
                .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    pub fn stat(&self, path: &str) -> Option<Stat> {
        let path = Self::normalize(path);
        if self.dirs.contains(&path) {
            return Some(Stat {
                is_dir: true,
                size: 4096,
                mtime: self.booted,
            });
        }
        self.files.get(&path).map(|(data, mtime)| Stat {
            is_dir: false,
            size: data.len() as u64,
            mtime: *mtime,
        })
    }

    pub fn read(&self, path: &str) -> Result<&[u8], FsError> {
        let path = Self::normalize(path);
        if path == "/dev/null" {
            return Ok(&[]);
        }
        if self.dirs.contains(&path) {
            return Err(FsError::IsDirectory);
        }
        self.files
            .get(&path)
            .map(|(data, _)| data.as_slice())
            .ok_or(FsError::NotFound)
    }

    /// Whether `write(path)` would be allowed (the parent exists, the area is writable).
    pub fn check_writable(&self, path: &str) -> Result<(), FsError> {
        let path = Self::normalize(path);
        if path == "/dev/null" {
            return Ok(());
        }
        if self.dirs.contains(&path) {
            return Err(FsError::IsDirectory);
        }
        if !Self::writable_area(&path) {
            return Err(if path.starts_with("/data") {
                FsError::PermissionDenied
            } else {
                FsError::ReadOnly
            });
        }
        let parent = Self::parent(&path);
        if self.files.contains_key(parent) {
            return Err(FsError::NotDirectory);
        }
        if !self.dirs.contains(parent) {
            return Err(FsError::NotFound);
        }
        Ok(())
    }

    /// Puts a file of the system image in place (an installed APK): read-only to the shell,
    /// its folders created, counted against the storage like any file.
    pub fn install(&mut self, path: &str, data: &[u8]) {
        let path = Self::normalize(path);
        let mut dir = Self::parent(&path).to_string();
        while self.dirs.insert(dir.clone()) && dir != "/" {
            dir = Self::parent(&dir).to_string();
        }
        self.used += data.len();
        self.files.insert(path, (data.to_vec(), self.booted));
    }

    /// Writes (or appends to) a file.
    pub fn write(&mut self, path: &str, data: &[u8], append: bool) -> Result<(), FsError> {
        self.check_writable(path)?;
        let path = Self::normalize(path);
        if path == "/dev/null" {
            return Ok(());
        }
        let old_len = self.files.get(&path).map_or(0, |(old, _)| old.len());
        let new_len = if append {
            old_len + data.len()
        } else {
            data.len()
        };
        let used = self.used - old_len + new_len;
        if used > self.capacity {
            return Err(FsError::NoSpace);
        }
        self.used = used;
        let entry = self.files.entry(path).or_default();
        if !append {
            entry.0.clear();
        }
        entry.0.extend_from_slice(data);
        entry.1 = now_secs();
        Ok(())
    }

    /// `mkdir [-p]`.
    pub fn mkdir(&mut self, path: &str, parents: bool) -> Result<(), FsError> {
        let path = Self::normalize(path);
        if self.dirs.contains(&path) {
            return if parents {
                Ok(())
            } else {
                Err(FsError::Exists)
            };
        }
        if parents && !self.dirs.contains(Self::parent(&path)) {
            self.mkdir(Self::parent(&path), true)?;
        }
        self.check_writable(&path)?;
        self.dirs.insert(path);
        Ok(())
    }

    /// `rm [-r] [-f]` of one path.
    pub fn remove(&mut self, path: &str, recursive: bool) -> Result<(), FsError> {
        let path = Self::normalize(path);
        if self.dirs.contains(&path) {
            if !recursive {
                return Err(FsError::IsDirectory);
            }
            if !Self::writable_area(&path) {
                return Err(FsError::PermissionDenied);
            }
            let prefix = format!("{path}/");
            let doomed: Vec<String> = self
                .files
                .keys()
                .filter(|name| name.starts_with(&prefix))
                .cloned()
                .collect();
            for name in doomed {
                if let Some((data, _)) = self.files.remove(&name) {
                    self.used -= data.len();
                }
            }
            self.dirs
                .retain(|dir| dir != &path && !dir.starts_with(&prefix));
            return Ok(());
        }
        if !self.files.contains_key(&path) {
            return Err(FsError::NotFound);
        }
        if !Self::writable_area(&path) {
            return Err(FsError::PermissionDenied);
        }
        if let Some((data, _)) = self.files.remove(&path) {
            self.used -= data.len();
        }
        Ok(())
    }

    /// The entries of a directory, sorted by name; a file lists as itself.
    pub fn list(&self, path: &str) -> Result<Vec<Entry>, FsError> {
        let path = Self::normalize(path);
        if let Some((data, mtime)) = self.files.get(&path) {
            return Ok(vec![Entry {
                name: path.clone(),
                stat: Stat {
                    is_dir: false,
                    size: data.len() as u64,
                    mtime: *mtime,
                },
            }]);
        }
        if !self.dirs.contains(&path) {
            return Err(FsError::NotFound);
        }
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        let direct = |name: &String| {
            name.strip_prefix(&prefix)
                .filter(|rest| !rest.is_empty() && !rest.contains('/'))
                .map(str::to_string)
        };
        let mut entries: Vec<Entry> = self
            .dirs
            .iter()
            .filter_map(|dir| {
                direct(dir).map(|name| Entry {
                    name,
                    stat: Stat {
                        is_dir: true,
                        size: 4096,
                        mtime: self.booted,
                    },
                })
            })
            .chain(self.files.iter().filter_map(|(file, (data, mtime))| {
                direct(file).map(|name| Entry {
                    name,
                    stat: Stat {
                        is_dir: false,
                        size: data.len() as u64,
                        mtime: *mtime,
                    },
                })
            }))
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filesystem_bounds_and_listing() {
        let mut fs = FileSystem::with_capacity(10);
        fs.write("/data/local/tmp/a", b"12345", false).unwrap();
        assert_eq!(
            fs.write("/data/local/tmp/b", b"123456", false),
            Err(FsError::NoSpace)
        );
        fs.write("/data/local/tmp/a", b"1234567890", false).unwrap();
        fs.mkdir("/sdcard/x/y", true).unwrap();
        let names: Vec<String> = fs
            .list("/sdcard")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(names.contains(&"x".to_string()) && names.contains(&"Download".to_string()));
        assert_eq!(fs.remove("/sdcard/x", false), Err(FsError::IsDirectory));
        fs.remove("/sdcard/x", true).unwrap();
        assert_eq!(fs.stat("/sdcard/x/y"), None);
        assert_eq!(fs.remove("/system", true), Err(FsError::PermissionDenied));
        assert_eq!(fs.read("/nope"), Err(FsError::NotFound));
        assert_eq!(
            FileSystem::normalize("/storage/emulated/0/../0/a//b"),
            "/sdcard/a/b"
        );
    }
}
