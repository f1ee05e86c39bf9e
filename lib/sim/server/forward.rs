//! Port forwarding, as the ADB server does it (`adb forward`): `forward:[norebind:]LOCAL;REMOTE`
//! listens on the host's `LOCAL` and, for each connection, opens `REMOTE` on the device;
//! `list-forward`, `killforward:LOCAL` and `killforward-all` manage the listeners. No program on
//! the simulated phone listens on a socket, so the device refuses every connection a forward
//! carries: the server accepts it and closes it at once, as a real server does when adbd cannot
//! connect to a device socket nobody listens on.

use std::io::{self, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::wire::{fail, okay};

/// Listeners open at once (a real server has no such bound; a hostile client should not make
/// this one spawn threads without end).
const FORWARDS_MAX: usize = 64;

/// One `adb forward` listener.
struct Forward {
    /// `tcp:PORT`, the port resolved when `tcp:0` was asked.
    local: String,
    remote: String,
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Forward {
    fn close(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The server's forward listeners.
#[derive(Default)]
pub(super) struct Forwards {
    list: Mutex<Vec<Forward>>,
}

/// Why a forward was not installed, in the server's words.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    Bad(String),
    CannotBind(String),
    CannotRebind,
    NotFound(String),
}

impl Refusal {
    fn message(&self) -> String {
        match self {
            Refusal::Bad(reason) => reason.clone(),
            Refusal::CannotBind(reason) => format!("cannot bind listener: {reason}"),
            Refusal::CannotRebind => "cannot rebind existing socket".to_string(),
            Refusal::NotFound(local) => format!("listener '{local}' not found"),
        }
    }
}

impl Forwards {
    fn list(&self) -> MutexGuard<'_, Vec<Forward>> {
        self.list.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `list-forward`: `SERIAL LOCAL REMOTE` per listener.
    pub(super) fn listing(&self, serial: &str) -> String {
        self.list()
            .iter()
            .map(|f| format!("{serial} {} {}\n", f.local, f.remote))
            .collect()
    }

    /// Installs `LOCAL;REMOTE`: the resolved TCP port when `tcp:0` was asked.
    fn install(&self, spec: &str, no_rebind: bool) -> Result<Option<u16>, Refusal> {
        let pieces: Vec<&str> = spec.split(';').collect();
        let (local, remote) = match pieces.as_slice() {
            [local, remote]
                if !local.is_empty() && !remote.is_empty() && !remote.starts_with('*') =>
            {
                (*local, *remote)
            }
            _ => return Err(Refusal::Bad(format!("bad forward: {spec}"))),
        };
        let mut list = self.list();
        if let Some(existing) = list.iter_mut().find(|f| f.local == local) {
            if no_rebind {
                return Err(Refusal::CannotRebind);
            }
            existing.remote = remote.to_string();
            return Ok(None);
        }
        let port = match local.strip_prefix("tcp:").map(str::parse::<u16>) {
            Some(Ok(port)) => port,
            Some(Err(_)) => {
                return Err(Refusal::CannotBind(format!(
                    "invalid port '{}'",
                    &local[4..]
                )))
            }
            None if [
                "localabstract:",
                "localreserved:",
                "localfilesystem:",
                "local:",
            ]
            .iter()
            .any(|kind| local.starts_with(kind)) =>
            {
                return Err(Refusal::CannotBind(
                    "local (unix domain) sockets are not simulated".to_string(),
                ))
            }
            None => {
                return Err(Refusal::CannotBind(format!(
                    "unknown socket specification '{local}'"
                )))
            }
        };
        if list.len() >= FORWARDS_MAX {
            return Err(Refusal::CannotBind("Too many open files".to_string()));
        }
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|err| Refusal::CannotBind(strerror(&err)))?;
        let bound = listener
            .local_addr()
            .map_err(|err| Refusal::CannotBind(strerror(&err)))?
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(format!("droid-sim-forward-{bound}"))
            .spawn(move || refuse_connections(&listener, &flag))
            .map_err(|err| Refusal::CannotBind(strerror(&err)))?;
        list.push(Forward {
            local: format!("tcp:{bound}"),
            remote: remote.to_string(),
            port: bound,
            stop,
            thread: Some(thread),
        });
        Ok((port == 0).then_some(bound))
    }

    fn remove(&self, local: &str) -> Result<(), Refusal> {
        let mut list = self.list();
        let Some(at) = list.iter().position(|f| f.local == local) else {
            return Err(Refusal::NotFound(local.to_string()));
        };
        let forward = list.remove(at);
        drop(list);
        forward.close();
        Ok(())
    }

    /// Closes every listener (`killforward-all`, the server stopping).
    pub(super) fn remove_all(&self) {
        let all: Vec<Forward> = self.list().drain(..).collect();
        for forward in all {
            forward.close();
        }
    }

    /// Answers `forward:...`, `killforward:LOCAL` or `killforward-all` (the device already
    /// selected): `OKAY` twice ("1st OKAY is connect, 2nd OKAY is status"), with the resolved
    /// port after `tcp:0`; or `FAIL` and the reason.
    pub(super) fn answer(&self, stream: &mut &TcpStream, command: &str) -> io::Result<()> {
        let result = if command == "killforward-all" {
            self.remove_all();
            Ok(None)
        } else if let Some(local) = command.strip_prefix("killforward:") {
            if local.is_empty() || local.contains(';') {
                Err(Refusal::Bad(format!("bad killforward: {local}")))
            } else {
                self.remove(local).map(|()| None)
            }
        } else if let Some(spec) = command.strip_prefix("forward:") {
            match spec.strip_prefix("norebind:") {
                Some(spec) => self.install(spec, true),
                None => self.install(spec, false),
            }
        } else {
            Err(Refusal::Bad(format!("bad forward: {command}")))
        };
        match result {
            Ok(port) => {
                okay(stream)?;
                okay(stream)?;
                if let Some(port) = port {
                    let port = port.to_string();
                    stream.write_all(format!("{:04x}{port}", port.len()).as_bytes())?;
                }
                Ok(())
            }
            Err(refusal) => fail(stream, &refusal.message()),
        }
    }
}

/// Whether a host command is one of the forward services.
pub(super) fn is_forward(command: &str) -> bool {
    command == "killforward-all"
        || command.starts_with("forward:")
        || command.starts_with("killforward:")
}

/// The accept loop of one listener: every connection is closed at once, the device having
/// refused to open its end.
fn refuse_connections(listener: &TcpListener, stop: &AtomicBool) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        match stream {
            Ok(stream) => {
                let _ = stream.shutdown(Shutdown::Both);
            }
            // Out of descriptors and the like: give the system a moment instead of spinning.
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

/// The C library's words for a socket error (what `network_loopback_server` reports).
fn strerror(err: &io::Error) -> String {
    match err.kind() {
        io::ErrorKind::AddrInUse => "Address already in use".to_string(),
        io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
        io::ErrorKind::AddrNotAvailable => "Cannot assign requested address".to_string(),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_install_list_rebind_and_go() {
        let forwards = Forwards::default();
        let port = forwards.install("tcp:0;tcp:8080", false).unwrap().unwrap();
        assert_ne!(port, 0);
        assert_eq!(
            forwards.listing("emulator-5554"),
            format!("emulator-5554 tcp:{port} tcp:8080\n")
        );
        // The device refuses: the connection is accepted, then closed.
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(io::Read::read(&mut client, &mut buf).unwrap_or(0), 0);
        let local = format!("tcp:{port}");
        assert_eq!(
            forwards.install(&format!("{local};tcp:9"), true),
            Err(Refusal::CannotRebind)
        );
        assert_eq!(forwards.install(&format!("{local};tcp:9"), false), Ok(None));
        assert!(forwards.listing("s").contains("tcp:9"));
        assert_eq!(
            forwards.install("tcp:1", false),
            Err(Refusal::Bad("bad forward: tcp:1".into()))
        );
        assert!(matches!(
            forwards.install("localabstract:x;tcp:1", false),
            Err(Refusal::CannotBind(_))
        ));
        forwards.remove(&local).unwrap();
        assert_eq!(
            forwards.remove(&local),
            Err(Refusal::NotFound(local.clone()))
        );
        assert_eq!(forwards.listing("s"), "");
        // The port is free again.
        TcpListener::bind(("127.0.0.1", port)).unwrap();
    }
}
