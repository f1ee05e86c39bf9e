//! The ADB server protocol, server side, on 127.0.0.1 (see `../shared/notes/adb-protocol.md`).
//!
//! A client sends a 4-hex-digit length and a request; the server answers `OKAY` or `FAIL` + a
//! length-prefixed reason. One-shot host queries (`host:version`, `host:devices-l`, features) are
//! answered and the socket closed, because the real client waits for EOF. A transport request
//! (`host:tport:serial:S`, `host:transport:S`, ...) switches the socket to the device, whose
//! services are `shell,v2,...:CMD` (shell protocol v2 packets with the exit status),
//! legacy `shell:CMD`, `exec:CMD` and `sync:` (file transfer).
//!
//! This module is the simulator's lifecycle (start, accept, limits, stop) and the routing of
//! requests; the parts mirror the client's `adb/{wire,shell,sync}`: [`wire`] (framing),
//! [`host`] (host services), [`shell`] (shell and exec services), [`sync`] (file transfer).
//!
//! Every connection has its own thread, up to [`MAX_CONNECTIONS`]; every read is bounded in time
//! and size, and bad input gets `FAIL` with a reason and a closed socket. A request must arrive
//! whole within [`REQUEST_DEADLINE`] of its first byte, however slowly it drips; and when every
//! slot is taken, the connection that has waited longest for its request is closed to make room,
//! so clients that dawdle can never lock out one that asks at once (a real `adb devices`).

mod console;
mod forward;
mod host;
mod shell;
mod sync;
mod wire;

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use thiserror::Error;

use self::host::{host, split_host, Next};
use self::shell::STDIN_MAX;
use self::sync::sync;
use self::wire::{fail, okay, read_request};
use super::fault::{Admission, Fault, Faults, Latency};
use super::model::{AppModel, ModelError};
use super::pcapdroid::PCAPDROID_PACKAGE;
use super::programs::Phone;
use super::truth::TruthLog;
use super::world::{World, WorldOptions};

/// `ADB_SERVER_VERSION` of adb 1.0.41.
pub const SERVER_VERSION: u32 = 41;
/// Connections served at once; more get `FAIL` at once.
pub const MAX_CONNECTIONS: usize = 128;
/// The features the simulated device advertises; they choose the dialect the client speaks.
pub const FEATURES: &str = "shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir";
/// The one transport's id (`transport_id:1` in `devices -l`, 8 bytes after `tport`).
const TRANSPORT_ID: u64 = 1;
/// How long a client may stay silent while the server waits for a request or stdin.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a request may take from its first byte to its last (the idle rule alone restarts
/// with every byte, so a request dripped a byte a second could hold a slot for hours).
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// After the answer, how long to wait for the client to close its side.
const LINGER: Duration = Duration::from_secs(2);
/// Client bytes (stdin, pushed files) held in memory by all connections together.
const CLIENT_BYTES_MAX: usize = 128 * 1024 * 1024;

/// How to start a simulated device.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// `MODEL.json` or `builtin:NAME`.
    pub app: String,
    pub serial: String,
    /// 0 picks a free port.
    pub port: u16,
    pub latency: Latency,
    pub faults: Vec<Fault>,
    pub truth_log: Option<PathBuf>,
    /// Install the ADB Keyboard IME (`--ime adbkeyboard`).
    pub ime_adbkeyboard: bool,
    /// Serve the emulator console on the port an `emulator-N` serial names, with the auth token
    /// file `.emulator_console_auth_token` in this home (the `droid-sim` binary uses `$HOME`);
    /// `None` (as `SimConfig::new` sets): no console.
    pub console_home: Option<PathBuf>,
    /// Fire recorded transitions only, no moves inferred from the same view on the activity's
    /// other screens (`droid-sim --recorded-only`; see [`super::infer`]).
    pub recorded_only: bool,
    /// Connections served at once ([`MAX_CONNECTIONS`]).
    pub max_connections: usize,
    /// Time for a request to arrive whole once it began ([`REQUEST_DEADLINE`]).
    pub request_deadline: Duration,
}

impl SimConfig {
    /// A device serving `app` as `emulator-5554` on a free port, no faults, no latency, treating
    /// a view alike across its states as the `droid-sim` binary does by default (see
    /// [`super::infer`]); `recorded_only: true` fires recorded transitions only, as the ceiling
    /// (`droid-sim --check`) walks.
    pub fn new(app: impl Into<String>) -> SimConfig {
        SimConfig {
            app: app.into(),
            serial: "emulator-5554".to_string(),
            port: 0,
            latency: Latency::None,
            faults: Vec::new(),
            truth_log: None,
            ime_adbkeyboard: false,
            recorded_only: false,
            console_home: None,
            max_connections: MAX_CONNECTIONS,
            request_deadline: REQUEST_DEADLINE,
        }
    }
}

/// Why the simulator could not start.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SimError {
    #[error("cannot load the app model")]
    Model(#[from] ModelError),
    #[error("cannot create the truth log {path}")]
    TruthLog {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot listen on 127.0.0.1:{port}")]
    Bind {
        port: u16,
        #[source]
        source: io::Error,
    },
    #[error("fault anr-on:{0}: the model has no screen {0:?}")]
    UnknownScreen(String),
    #[error("serial {0:?} must be non-empty printable ASCII without spaces")]
    BadSerial(String),
    #[error("cannot serve the emulator console on 127.0.0.1:{port} (another emulator or simulator has that serial?)")]
    ConsolePort {
        port: u16,
        #[source]
        source: io::Error,
    },
    #[error("cannot read or create the emulator console's auth token {path}")]
    ConsoleToken {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The simulator entry point.
pub struct Sim;

/// The console ports adb scans for local emulators: `emulator-5554` to `emulator-5682`.
const FIRST_CONSOLE: u16 = 5554;
const LAST_CONSOLE: u16 = 5682;

impl Sim {
    /// Starts the simulator as `serial`, or, without one and with a console home, as the first
    /// `emulator-N` whose console port is free, so several simulators never share a port.
    pub fn start_as(config: SimConfig, serial: Option<String>) -> Result<SimHandle, SimError> {
        if let Some(serial) = serial {
            return Sim::start(SimConfig { serial, ..config });
        }
        if config.console_home.is_none() {
            return Sim::start(config);
        }
        let mut last = None;
        for port in (FIRST_CONSOLE..=LAST_CONSOLE).step_by(2) {
            let attempt = SimConfig {
                serial: format!("emulator-{port}"),
                ..config.clone()
            };
            match Sim::start(attempt) {
                Err(err @ SimError::ConsolePort { .. }) => last = Some(err),
                other => return other,
            }
        }
        Err(last.unwrap_or(SimError::BadSerial(String::new())))
    }

    /// Loads the model, binds 127.0.0.1 and serves in background threads until the handle is
    /// dropped or a client sends `host:kill`.
    pub fn start(config: SimConfig) -> Result<SimHandle, SimError> {
        let serial_ok =
            !config.serial.is_empty() && config.serial.bytes().all(|b| b.is_ascii_graphic());
        if !serial_ok {
            return Err(SimError::BadSerial(config.serial));
        }
        let model = AppModel::load(&config.app)?;
        let package = model.package().to_string();
        // The console first: a serial whose port is taken is refused before anything serves.
        let console = match (&config.console_home, console::port_of(&config.serial)) {
            (Some(home), Some(port)) => {
                let listener = TcpListener::bind(("127.0.0.1", port))
                    .map_err(|source| SimError::ConsolePort { port, source })?;
                let token = console::token(home).map_err(|source| SimError::ConsoleToken {
                    path: home.join(console::TOKEN_FILE),
                    source,
                })?;
                Some((listener, port, token, home.clone()))
            }
            _ => None,
        };
        let faults = Faults::new(&config.faults);
        if let Some(screen) = faults.anr_screen() {
            if !model.screens().iter().any(|s| s.id == screen) {
                return Err(SimError::UnknownScreen(screen));
            }
        }
        let truth = match &config.truth_log {
            Some(path) => Some(TruthLog::create(path).map_err(|source| SimError::TruthLog {
                path: path.clone(),
                source,
            })?),
            None => None,
        };
        // PCAPdroid is an app the phone hosts when the model installs it.
        let hosted = model
            .pcapdroid()
            .map(|_| PCAPDROID_PACKAGE.to_string())
            .into_iter()
            .collect();
        let world = World::new(
            model,
            WorldOptions {
                ime_adbkeyboard: config.ime_adbkeyboard,
                truth,
                serial: config.serial.clone(),
                hosted,
                recorded_only: config.recorded_only,
            },
        );
        let listener =
            TcpListener::bind(("127.0.0.1", config.port)).map_err(|source| SimError::Bind {
                port: config.port,
                source,
            })?;
        let bind_error = |source| SimError::Bind {
            port: config.port,
            source,
        };
        let port = listener.local_addr().map_err(bind_error)?.port();
        let shared = Arc::new(Shared {
            phone: Phone::new(world, faults, config.latency, config.serial.clone()),
            serial: config.serial.clone(),
            package,
            port,
            stopping: AtomicBool::new(false),
            stopped: (Mutex::new(false), Condvar::new()),
            connections: Mutex::new(HashMap::new()),
            max_connections: config.max_connections.max(1),
            request_deadline: config.request_deadline,
            next_connection: AtomicU64::new(0),
            client_bytes: AtomicUsize::new(0),
            console_port: console.as_ref().map(|(_, port, _, _)| *port),
            forwards: forward::Forwards::default(),
        });
        let accept_shared = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("droid-sim-accept".into())
            .spawn(move || accept_loop(&listener, &accept_shared))
            .map_err(bind_error)?;
        let console = match console {
            Some((listener, _, token, home)) => {
                let console_shared = Arc::clone(&shared);
                let thread = std::thread::Builder::new()
                    .name("droid-sim-console".into())
                    .spawn(move || console::serve(listener, console_shared, token, home))
                    .map_err(bind_error)?;
                Some(thread)
            }
            None => None,
        };
        Ok(SimHandle {
            shared,
            accept: Some(accept),
            console,
        })
    }
}

/// A running simulator; dropping it stops the server and closes every connection.
pub struct SimHandle {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    console: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for SimHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHandle")
            .field("port", &self.shared.port)
            .field("serial", &self.shared.serial)
            .finish()
    }
}

impl SimHandle {
    pub fn port(&self) -> u16 {
        self.shared.port
    }

    pub fn serial(&self) -> &str {
        &self.shared.serial
    }

    /// The line `droid-sim` prints once it serves:
    /// `{"type":"sim_ready","port":N,"serial":"..."}`.
    pub fn ready_line(&self) -> String {
        serde_json::json!({"type": "sim_ready", "port": self.port(), "serial": self.serial()})
            .to_string()
    }

    /// The package of the app model it serves.
    pub fn package(&self) -> &str {
        &self.shared.package
    }

    /// When the device was busy running commands (see [`Phone::busy_periods`]): what a
    /// client's own overhead is measured against.
    pub fn busy_periods(&self) -> Vec<(std::time::Instant, std::time::Instant)> {
        self.shared.phone.busy_periods()
    }

    /// Blocks until a client sends `host:kill`.
    pub fn wait(&self) {
        let (flag, wake) = &self.shared.stopped;
        let mut stopped = flag.lock().unwrap_or_else(|p| p.into_inner());
        while !*stopped {
            stopped = wake.wait(stopped).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.shared.stop();
        for thread in [self.accept.take(), self.console.take()]
            .into_iter()
            .flatten()
        {
            // The accept threads only end by themselves; a panic there has nothing to hand back.
            let _ = thread.join();
        }
    }
}

struct Shared {
    phone: Phone,
    serial: String,
    package: String,
    port: u16,
    stopping: AtomicBool,
    stopped: (Mutex<bool>, Condvar),
    connections: Mutex<HashMap<u64, Connection>>,
    max_connections: usize,
    request_deadline: Duration,
    next_connection: AtomicU64,
    /// Bytes of client data held right now (see [`Held`]).
    client_bytes: AtomicUsize,
    /// The emulator console's port, when it serves one.
    console_port: Option<u16>,
    /// `adb forward` listeners.
    forwards: forward::Forwards,
}

/// An open client socket, and since when it has been waiting for a request (`None` while one is
/// being served).
struct Connection {
    stream: TcpStream,
    waiting_since: Option<Instant>,
}

/// A share of [`CLIENT_BYTES_MAX`] taken by one connection, given back on drop, so many hostile
/// clients together cannot exhaust memory either.
struct Held<'a> {
    pool: &'a AtomicUsize,
    bytes: usize,
}

impl<'a> Held<'a> {
    fn new(pool: &'a AtomicUsize) -> Self {
        Held { pool, bytes: 0 }
    }

    /// Takes `n` more bytes; false (and nothing taken) when the pool is exhausted.
    fn grow(&mut self, n: usize) -> bool {
        let before = self.pool.fetch_add(n, Ordering::SeqCst);
        if before + n > CLIENT_BYTES_MAX {
            self.pool.fetch_sub(n, Ordering::SeqCst);
            return false;
        }
        self.bytes += n;
        true
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.pool.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

impl Shared {
    fn connections(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Connection>> {
        self.connections.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops every open socket (server stop, or the `disconnect-after` fault).
    fn drop_connections(&self) {
        for connection in self.connections().values() {
            let _ = connection.stream.shutdown(Shutdown::Both);
        }
    }

    /// Notes whether connection `id` waits for a request (`true`) or is being served.
    fn set_waiting(&self, id: u64, waiting: bool) {
        if let Some(connection) = self.connections().get_mut(&id) {
            connection.waiting_since = waiting.then(Instant::now);
        }
    }

    fn stop(&self) {
        if self.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        self.phone.interrupt_all();
        self.forwards.remove_all();
        self.drop_connections();
        // Wake the accept loops so they see the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(port) = self.console_port {
            let _ = TcpStream::connect(("127.0.0.1", port));
        }
        let (flag, wake) = &self.stopped;
        *flag.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(mut stream) = stream else {
            // Out of descriptors and the like: give the system a moment instead of spinning.
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let id = shared.next_connection.fetch_add(1, Ordering::SeqCst);
        {
            let mut open = shared.connections();
            if open.len() >= shared.max_connections {
                // Make room by closing the connection that has waited longest for its request;
                // one being served keeps its slot.
                let dawdler = open
                    .iter()
                    .filter_map(|(id, c)| c.waiting_since.map(|since| (since, *id)))
                    .min();
                match dawdler.and_then(|(_, id)| open.remove(&id)) {
                    Some(evicted) => {
                        let _ = fail(&mut &evicted.stream, "server busy: request too slow");
                        let _ = evicted.stream.shutdown(Shutdown::Both);
                    }
                    None => {
                        drop(open);
                        let _ = fail(&mut stream, "too many connections");
                        continue;
                    }
                }
            }
            match stream.try_clone() {
                Ok(clone) => {
                    let connection = Connection {
                        stream: clone,
                        waiting_since: Some(Instant::now()),
                    };
                    open.insert(id, connection);
                }
                Err(_) => continue,
            }
        }
        let conn_shared = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name(format!("droid-sim-conn-{id}"))
            .spawn(move || {
                let served = Served {
                    shared: &conn_shared,
                    id,
                };
                serve(served.shared, &stream, id);
                drop(served);
                linger(&stream);
            });
        if spawned.is_err() {
            shared.connections().remove(&id);
        }
    }
}

/// A connection being served: forgotten when served, or when serving it panicked (a defect),
/// so its socket closes at once and the client gets an error, not a wait for its timeout.
struct Served<'s> {
    shared: &'s Shared,
    id: u64,
}

impl Drop for Served<'_> {
    fn drop(&mut self) {
        self.shared.connections().remove(&self.id);
    }
}

/// Half-closes and waits briefly for the client to close, so no unread client bytes turn our
/// close into a reset that could destroy the answer in flight.
fn linger(stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(LINGER));
    let mut sink = [0u8; 4096];
    let mut left = STDIN_MAX;
    let mut reader = stream;
    while left > 0 {
        match reader.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

fn serve(shared: &Shared, stream: &TcpStream, id: u64) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
    let mut stream = stream;
    let mut switched = false;
    loop {
        shared.set_waiting(id, true);
        let read = read_request(&mut stream, shared.request_deadline);
        shared.set_waiting(id, false);
        let request = match read {
            Ok(Some(Ok(request))) => request,
            Ok(Some(Err(reason))) => {
                let _ = fail(&mut stream, &reason);
                return;
            }
            Ok(None) | Err(_) => return,
        };
        let next = if let Some((scope, command)) = split_host(&request) {
            host(shared, &mut stream, scope, command, switched)
        } else if switched {
            device_service(shared, &mut stream, &request).map(|()| Next::Close)
        } else {
            fail(
                &mut stream,
                "no device selected: switch to a transport first (host:transport:SERIAL)",
            )
            .map(|()| Next::Close)
        };
        match next {
            Ok(Next::Switched) => switched = true,
            Ok(Next::Kill) => {
                let _ = stream.shutdown(Shutdown::Write);
                shared.stop();
                return;
            }
            Ok(Next::Close) | Err(_) => return,
        }
    }
}

fn device_service(shared: &Shared, stream: &mut &TcpStream, request: &str) -> io::Result<()> {
    let service = if let Some(command) = request.strip_prefix("exec:") {
        Service::Exec(command)
    } else if request == "sync:" {
        Service::Sync
    } else if let Some(rest) = request.strip_prefix("shell") {
        match rest.split_once(':') {
            Some((args, command)) if args.is_empty() || args.starts_with(',') => {
                let has = |name: &str| args.split(',').any(|arg| arg == name);
                // adbd's defaults: a PTY for an interactive shell, raw for a command.
                let pty = has("pty") || (command.trim().is_empty() && !has("raw"));
                Service::Shell {
                    v2: has("v2"),
                    pty,
                    command,
                }
            }
            _ => return fail(stream, &format!("unknown service {request:?}")),
        }
    } else {
        let name = request.split(':').next().unwrap_or(request);
        // Sockets on the device: no simulated program listens, so adbd cannot connect and the
        // server reports the stream closed.
        if matches!(
            name,
            "tcp" | "local" | "localabstract" | "localreserved" | "localfilesystem" | "jdwp"
        ) {
            return fail(stream, "closed");
        }
        return fail(stream, &format!("unknown service {name:?}"));
    };
    if shared.phone.faults.offline() {
        return fail(stream, &format!("device '{}' not found", shared.serial));
    }
    if shared.phone.faults.admit() == Admission::Disconnect {
        shared.drop_connections();
        return Ok(());
    }
    let slow = shared.phone.faults.slow();
    if !slow.is_zero() {
        std::thread::sleep(slow);
    }
    match service {
        Service::Shell { v2, pty, command } => {
            okay(stream)?;
            shell::serve(shared, stream, v2, pty, command)
        }
        Service::Exec(command) => {
            okay(stream)?;
            shell::exec(shared, stream, command);
            Ok(())
        }
        Service::Sync => {
            okay(stream)?;
            sync(shared, stream)
        }
    }
}

enum Service<'a> {
    Shell {
        v2: bool,
        pty: bool,
        command: &'a str,
    },
    Exec(&'a str),
    Sync,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_bytes_are_bounded_across_connections_and_given_back() {
        let pool = AtomicUsize::new(0);
        let mut first = Held::new(&pool);
        assert!(first.grow(CLIENT_BYTES_MAX - 10));
        let mut second = Held::new(&pool);
        assert!(!second.grow(11));
        assert!(second.grow(10));
        drop(first);
        assert_eq!(pool.load(Ordering::SeqCst), 10);
        drop(second);
        assert_eq!(pool.load(Ordering::SeqCst), 0);
    }
}
