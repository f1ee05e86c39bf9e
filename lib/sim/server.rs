//! The ADB server protocol, server side, on 127.0.0.1 (see `../shared/notes/adb-protocol.md`).
//!
//! A client sends a 4-hex-digit length and a request; the server answers `OKAY` or `FAIL` + a
//! length-prefixed reason. One-shot host queries (`host:version`, `host:devices-l`, features) are
//! answered and the socket closed, because the real client waits for EOF. A transport request
//! (`host:tport:serial:S`, `host:transport:S`, ...) switches the socket to the device, whose
//! services are `shell,v2,...:CMD` (shell protocol v2 packets with the exit status),
//! legacy `shell:CMD`, `exec:CMD` and `sync:` (file transfer).
//!
//! Every connection has its own thread, up to [`MAX_CONNECTIONS`]; every read is bounded in time
//! and size, and bad input gets `FAIL` with a reason and a closed socket. A request must arrive
//! whole within [`REQUEST_DEADLINE`] of its first byte, however slowly it drips; and when every
//! slot is taken, the connection that has waited longest for its request is closed to make room,
//! so clients that dawdle can never lock out one that asks at once (a real `adb devices`).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use thiserror::Error;

use super::commands::Device;
use super::fault::{Admission, Fault, Faults, Latency};
use super::model::{AppModel, ModelError};
use super::shell::{self, lock, FsError, Sink};
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
/// Largest sync path (adbd's own limit).
const SYNC_PATH_MAX: u32 = 1024;
/// Largest sync `DATA` chunk (`SYNC_DATA_MAX`).
const SYNC_DATA_MAX: u32 = 64 * 1024;
/// Largest shell-protocol packet or pushed file accepted from a client.
const PACKET_MAX: u32 = 1024 * 1024;
const PUSH_MAX: usize = 64 * 1024 * 1024;
const STDIN_MAX: usize = 16 * 1024 * 1024;
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
    /// Fire recorded transitions only, no moves inferred from the same view on the activity's
    /// other screens (`droid-sim --recorded-only`; see [`super::infer`]).
    pub recorded_only: bool,
    /// Connections served at once ([`MAX_CONNECTIONS`]).
    pub max_connections: usize,
    /// Time for a request to arrive whole once it began ([`REQUEST_DEADLINE`]).
    pub request_deadline: Duration,
}

impl SimConfig {
    /// A device serving `app` as `emulator-5554` on a free port, no faults, no latency, firing
    /// recorded transitions only, as the ceiling (`droid-sim --check`) that in-process
    /// measurements compare with does; `recorded_only: false` adds the inferred moves the
    /// `droid-sim` binary makes by default.
    pub fn new(app: impl Into<String>) -> SimConfig {
        SimConfig {
            app: app.into(),
            serial: "emulator-5554".to_string(),
            port: 0,
            latency: Latency::None,
            faults: Vec::new(),
            truth_log: None,
            ime_adbkeyboard: false,
            recorded_only: true,
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
}

/// The simulator entry point.
pub struct Sim;

impl Sim {
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
        let world = World::new(
            model,
            WorldOptions {
                ime_adbkeyboard: config.ime_adbkeyboard,
                truth,
                serial: config.serial.clone(),
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
            device: Device::new(world, faults, config.latency, config.serial.clone()),
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
        });
        let accept_shared = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("droid-sim-accept".into())
            .spawn(move || accept_loop(&listener, &accept_shared))
            .map_err(bind_error)?;
        Ok(SimHandle {
            shared,
            accept: Some(accept),
        })
    }
}

/// A running simulator; dropping it stops the server and closes every connection.
pub struct SimHandle {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
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

    /// The package of the app model it serves.
    pub fn package(&self) -> &str {
        &self.shared.package
    }

    /// When the device was busy running commands (see [`Device::busy_periods`]): what a
    /// client's own overhead is measured against.
    pub fn busy_periods(&self) -> Vec<(std::time::Instant, std::time::Instant)> {
        self.shared.device.busy_periods()
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
        if let Some(accept) = self.accept.take() {
            // The accept thread only ends by itself; a panic there has nothing to hand back.
            let _ = accept.join();
        }
    }
}

struct Shared {
    device: Device,
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
        self.device.interrupt_all();
        self.drop_connections();
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
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
                serve(&conn_shared, &stream, id);
                conn_shared.connections().remove(&id);
                linger(&stream);
            });
        if spawned.is_err() {
            shared.connections().remove(&id);
        }
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

fn okay(stream: &mut &TcpStream) -> io::Result<()> {
    stream.write_all(b"OKAY")
}

fn okay_payload(stream: &mut &TcpStream, payload: &str) -> io::Result<()> {
    let mut out = Vec::with_capacity(8 + payload.len());
    out.extend_from_slice(b"OKAY");
    out.extend_from_slice(format!("{:04x}", payload.len().min(0xffff)).as_bytes());
    out.extend_from_slice(&payload.as_bytes()[..payload.len().min(0xffff)]);
    stream.write_all(&out)
}

fn fail(stream: &mut impl Write, reason: &str) -> io::Result<()> {
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
fn read_request(
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
struct Dripping<'a> {
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

/// What a host request is about.
enum Scope<'a> {
    /// `host:` (any single device, or the switched transport).
    Any,
    /// `host-serial:S:`, `host-transport-id:N:`.
    Device(&'a str),
    TransportId(&'a str),
}

fn split_host(request: &str) -> Option<(Scope<'_>, &str)> {
    if let Some(rest) = request.strip_prefix("host:") {
        return Some((Scope::Any, rest));
    }
    for prefix in ["host-usb:", "host-local:"] {
        if let Some(rest) = request.strip_prefix(prefix) {
            return Some((Scope::Any, rest));
        }
    }
    if let Some(rest) = request.strip_prefix("host-transport-id:") {
        let (id, command) = rest.split_once(':')?;
        return Some((Scope::TransportId(id), command));
    }
    let rest = request.strip_prefix("host-serial:")?;
    // Serials can contain ':' (`192.168.1.5:5555`); the command never does.
    let (serial, command) = rest.rsplit_once(':')?;
    Some((Scope::Device(serial), command))
}

/// What to do with the socket after an answer.
enum Next {
    Close,
    /// The socket now talks to the device.
    Switched,
    /// `host:kill`.
    Kill,
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

fn devices_listing(shared: &Shared, long: bool) -> String {
    if shared.device.faults.offline() {
        return String::new();
    }
    if long {
        format!(
            "{:<22} device product:sim_x86_64 model:droid_sim device:sim transport_id:{TRANSPORT_ID}\n",
            shared.serial
        )
    } else {
        format!("{}\tdevice\n", shared.serial)
    }
}

/// Checks that a scope names our device (and that it is attached right now).
fn select(shared: &Shared, scope: &Scope<'_>) -> Result<(), String> {
    match scope {
        Scope::Device(serial) if *serial != shared.serial => {
            return Err(format!("device '{serial}' not found"))
        }
        Scope::TransportId(id) if id.parse::<u64>().ok() != Some(TRANSPORT_ID) => {
            return Err(format!("no device with transport id '{id}'"))
        }
        _ => {}
    }
    if shared.device.faults.offline() {
        return Err(match scope {
            Scope::Any => "no devices/emulators found".to_string(),
            _ => format!("device '{}' not found", shared.serial),
        });
    }
    Ok(())
}

fn host(
    shared: &Shared,
    stream: &mut &TcpStream,
    scope: Scope<'_>,
    command: &str,
    switched: bool,
) -> io::Result<Next> {
    let answer = |stream: &mut &TcpStream, result: Result<String, String>| {
        match result {
            Ok(payload) => okay_payload(stream, &payload),
            Err(reason) => fail(stream, &reason),
        }
        .map(|()| Next::Close)
    };
    match command {
        "version" => answer(stream, Ok(format!("{SERVER_VERSION:04x}"))),
        "kill" => okay(stream).map(|()| Next::Kill),
        "devices" => answer(stream, Ok(devices_listing(shared, false))),
        "devices-l" => answer(stream, Ok(devices_listing(shared, true))),
        "host-features" => answer(stream, Ok(FEATURES.to_string())),
        "features" => answer(
            stream,
            select(shared, &scope).map(|()| FEATURES.to_string()),
        ),
        "get-state" => answer(
            stream,
            select(shared, &scope).map(|()| "device".to_string()),
        ),
        "get-serialno" => answer(
            stream,
            select(shared, &scope).map(|()| shared.serial.clone()),
        ),
        "get-devpath" => answer(
            stream,
            select(shared, &scope).map(|()| "unknown".to_string()),
        ),
        wait if wait.starts_with("wait-for-") => {
            okay(stream)?;
            let deadline = Instant::now() + IDLE_TIMEOUT;
            while shared.device.faults.offline() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            match select(shared, &scope) {
                Ok(()) => okay(stream),
                Err(reason) => fail(stream, &reason),
            }
            .map(|()| Next::Close)
        }
        _ if switched => {
            fail(stream, &format!("unknown host service {command:?}")).map(|()| Next::Close)
        }
        transport => {
            let (target, with_id) = if let Some(target) = transport.strip_prefix("tport:") {
                (target, true)
            } else if let Some(target) = transport.strip_prefix("transport") {
                (target, false)
            } else {
                return fail(stream, &format!("unknown host service {command:?}"))
                    .map(|()| Next::Close);
            };
            let selected = match target {
                "-any" | "any" | "-local" | "local" | "-usb" | "usb" => Scope::Any,
                _ => match target
                    .strip_prefix("serial:")
                    .or_else(|| target.strip_prefix(':'))
                {
                    Some(serial) => Scope::Device(serial),
                    None => match target.strip_prefix("-id:") {
                        Some(id) => Scope::TransportId(id),
                        None => {
                            return fail(stream, &format!("unknown host service {command:?}"))
                                .map(|()| Next::Close)
                        }
                    },
                },
            };
            if let Err(reason) = select(shared, &selected) {
                return fail(stream, &reason).map(|()| Next::Close);
            }
            okay(stream)?;
            if with_id {
                stream.write_all(&TRANSPORT_ID.to_le_bytes())?;
            }
            Ok(Next::Switched)
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
        return fail(stream, &format!("unknown service {name:?}"));
    };
    if shared.device.faults.offline() {
        return fail(stream, &format!("device '{}' not found", shared.serial));
    }
    if shared.device.faults.admit() == Admission::Disconnect {
        shared.drop_connections();
        return Ok(());
    }
    let slow = shared.device.faults.slow();
    if !slow.is_zero() {
        std::thread::sleep(slow);
    }
    match service {
        Service::Shell { v2, pty, command } => {
            okay(stream)?;
            let mut input = ClientInput::new(stream, v2, &shared.client_bytes);
            let mut v2_sink = V2Sink { stream };
            let mut raw_sink = RawSink { stream };
            let sink: &mut dyn Sink = if v2 { &mut v2_sink } else { &mut raw_sink };
            let status = if pty && command.trim().is_empty() {
                interactive(shared, &mut input, &mut PtySink { inner: sink })
            } else if pty {
                run_shell(shared, command, &mut input, &mut PtySink { inner: sink }).status
            } else if command.trim().is_empty() {
                // `echo CMDS | adb shell`: the shell reads its script from stdin.
                let script =
                    String::from_utf8_lossy(&shell::Session::stdin(&mut input)).into_owned();
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
        Service::Exec(command) => {
            okay(stream)?;
            let mut input = ClientInput::new(stream, false, &shared.client_bytes);
            run_shell(shared, command, &mut input, &mut RawSink { stream });
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

fn run_shell(
    shared: &Shared,
    command: &str,
    session: &mut dyn shell::Session,
    sink: &mut dyn Sink,
) -> shell::Finish {
    match shell::parse(command) {
        Ok(script) => shell::execute(&script, &shared.device, &shared.device.fs, session, sink),
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
const PROMPT: &[u8] = b"sim:/ $ ";
/// Longest line an interactive shell keeps.
const LINE_MAX: usize = 64 * 1024;
/// An interactive shell waits this long for a keystroke.
const INTERACTIVE_TIMEOUT: Duration = Duration::from_secs(3600);

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
                        let mut no_stdin = ClientInput::new(input.stream, false, input.held.pool);
                        no_stdin.taken = true;
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
struct ClientInput<'a> {
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
}

impl<'a> ClientInput<'a> {
    fn new(stream: &'a TcpStream, v2: bool, pool: &'a AtomicUsize) -> Self {
        ClientInput {
            stream,
            held: Held::new(pool),
            v2,
            pending: Vec::new(),
            data: Vec::new(),
            closed: false,
            gone: false,
            taken: false,
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
}

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const ENOENT: u32 = 2;

fn mode_of(stat: &shell::Stat) -> u32 {
    if stat.is_dir {
        S_IFDIR | 0o771
    } else {
        S_IFREG | 0o660
    }
}

fn sync_fail(stream: &mut &TcpStream, message: &str) -> io::Result<()> {
    let mut out = b"FAIL".to_vec();
    out.extend_from_slice(&(message.len() as u32).to_le_bytes());
    out.extend_from_slice(message.as_bytes());
    stream.write_all(&out)
}

/// The stat_v2 fields (after id and error) of a path.
fn stat_v2_fields(stat: Option<&shell::Stat>) -> Vec<u8> {
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
fn sync(shared: &Shared, stream: &mut &TcpStream) -> io::Result<()> {
    let fs = &shared.device.fs;
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
fn receive_push(
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

    #[test]
    fn host_prefixes_split_serials_with_colons() {
        let (scope, command) = split_host("host-serial:192.168.1.5:5555:features").unwrap();
        assert!(matches!(scope, Scope::Device("192.168.1.5:5555")));
        assert_eq!(command, "features");
        let (scope, command) = split_host("host:tport:serial:emulator-5554").unwrap();
        assert!(matches!(scope, Scope::Any));
        assert_eq!(command, "tport:serial:emulator-5554");
        assert!(matches!(
            split_host("host-transport-id:1:features"),
            Some((Scope::TransportId("1"), "features"))
        ));
        assert!(split_host("shell:ls").is_none());
    }
}
