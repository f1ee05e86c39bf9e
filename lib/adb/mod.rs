//! A client for the ADB server protocol (the socket `adb` itself talks to, default
//! `localhost:5037`), spoken directly: no `adb` subprocess on the hot path.
//!
//! Every request opens its own TCP connection, as the real client does, and every read and write
//! on it is bounded by the configured timeout, so a hung device or server yields
//! [`AdbError::Timeout`] instead of a hang. The request forms are the ones `adb` 1.0.41 sends
//! (`host:tport:serial:S`, `host-serial:S:features`, `shell,v2,raw:CMD`, `exec:CMD`, `sync:`);
//! see `docs/device.md`.

mod shell;
mod sync;
mod wire;

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use shell::ShellOutput;
pub use sync::FileStat;
use wire::Conn;

/// The server port when neither a flag nor the environment names one.
pub const DEFAULT_PORT: u16 = 5037;
/// The server host when neither a flag nor `ADB_SERVER_SOCKET` names one.
pub const DEFAULT_HOST: &str = "localhost";
/// How long one request may take end to end unless configured otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a device that went away is waited for unless configured otherwise.
pub const DEFAULT_WAIT_FOR_DEVICE: Duration = Duration::from_secs(30);
/// Between two looks at the device list while waiting for a device.
const DEVICE_POLL: Duration = Duration::from_millis(100);

/// Everything that can go wrong talking to the ADB server or a device behind it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdbError {
    #[error("ADB server not reachable at {addr}")]
    ServerUnreachable {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`adb start-server` failed ({detail}); start the server by hand or check --adb-port")]
    StartServer { detail: String },
    #[error("{what} timed out after {}s", .after.as_secs_f64())]
    Timeout { what: String, after: Duration },
    /// `server` says which server answered, so a wrong port shows.
    #[error("no device attached to {server}")]
    NoDevice { server: String },
    #[error("several devices attached ({}); choose one with --device or ANDROID_SERIAL", .serials.join(", "))]
    SeveralDevices { serials: Vec<String> },
    #[error("device {serial} not found")]
    DeviceNotFound { serial: String },
    #[error("device {serial} is unauthorized: accept the USB debugging prompt on the device")]
    Unauthorized { serial: String },
    #[error("device {serial} is offline")]
    Offline { serial: String },
    #[error("device {serial} is in state `{state}`, not `device`")]
    NotReady { serial: String, state: String },
    #[error("device {serial} vanished during `{what}`")]
    DeviceVanished { serial: String, what: String },
    /// The device went away and was not back in time (see [`ServerConfig::wait_for_device`]).
    #[error("device {serial} did not come back within {}s", .waited.as_secs_f64())]
    DeviceGone {
        serial: String,
        waited: Duration,
        #[source]
        last: Box<AdbError>,
    },
    #[error("ADB server refused `{request}`: {message}")]
    Refused { request: String, message: String },
    #[error("ADB protocol error during `{what}`: {detail}")]
    Protocol { what: String, detail: String },
    #[error("I/O error during `{what}`")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Sync { path: String, message: String },
}

/// Where the ADB server is and how to talk to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub host: String,
    pub port: u16,
    /// Bound on every request (connect, each read, each write, and the whole exchange).
    pub timeout: Duration,
    /// Run `adb start-server` once when nothing listens on a local server address.
    pub start_server: bool,
    /// How long a device that went away (not found, offline, its connection dropped before the
    /// command started) is waited for before a command fails, as `adb wait-for-device` waits.
    /// Zero fails at once.
    pub wait_for_device: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            host: DEFAULT_HOST.to_string(),
            port: DEFAULT_PORT,
            timeout: DEFAULT_TIMEOUT,
            start_server: true,
            wait_for_device: DEFAULT_WAIT_FOR_DEVICE,
        }
    }
}

impl ServerConfig {
    /// The server address by adb's own rules: explicit host/port win, then
    /// `ADB_SERVER_SOCKET=tcp:HOST:PORT`, then `ANDROID_ADB_SERVER_PORT`, then `localhost:5037`.
    /// `env` looks a variable up (pass `|k| std::env::var(k).ok()` in binaries).
    pub fn resolve(
        host: Option<&str>,
        port: Option<u16>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ServerConfig, AdbError> {
        let mut config = ServerConfig::default();
        if let Some(socket) = env("ADB_SERVER_SOCKET").filter(|s| !s.is_empty()) {
            let (h, p) = parse_server_socket(&socket)?;
            config.host = h;
            config.port = p;
        } else if let Some(p) = env("ANDROID_ADB_SERVER_PORT").filter(|s| !s.is_empty()) {
            config.port = p.trim().parse().map_err(|_| AdbError::Protocol {
                what: "ANDROID_ADB_SERVER_PORT".into(),
                detail: format!("`{p}` is not a port number"),
            })?;
        }
        if let Some(h) = host {
            config.host = h.to_string();
        }
        if let Some(p) = port {
            config.port = p;
        }
        Ok(config)
    }

    fn addr_text(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    fn is_local(&self) -> bool {
        matches!(self.host.as_str(), "localhost" | "127.0.0.1" | "::1")
    }
}

/// `tcp:HOST:PORT` or `tcp:PORT` (adb's socket spec); other schemes are not supported here.
fn parse_server_socket(spec: &str) -> Result<(String, u16), AdbError> {
    let bad = || AdbError::Protocol {
        what: "ADB_SERVER_SOCKET".into(),
        detail: format!("`{spec}` is not tcp:HOST:PORT"),
    };
    let rest = spec.strip_prefix("tcp:").ok_or_else(bad)?;
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host.to_string(), port),
        None => (DEFAULT_HOST.to_string(), rest),
    };
    let port = port.parse().map_err(|_| bad())?;
    Ok((host, port))
}

/// Connection state of a device as `adb devices` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceState {
    Device,
    Unauthorized,
    Offline,
    /// Any other state (`recovery`, `sideload`, `no permissions (...)`, ...), verbatim.
    Other(String),
}

impl DeviceState {
    fn parse(text: &str) -> DeviceState {
        match text {
            "device" => DeviceState::Device,
            "unauthorized" => DeviceState::Unauthorized,
            "offline" => DeviceState::Offline,
            other => DeviceState::Other(other.to_string()),
        }
    }
}

/// One line of `host:devices-l`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceEntry {
    pub serial: String,
    pub state: DeviceState,
    pub product: Option<String>,
    pub model: Option<String>,
    pub device: Option<String>,
    pub transport_id: Option<u64>,
}

/// Parses `host:devices-l` output (also the `adb devices -l` text, header included).
pub fn parse_devices_long(text: &str) -> Vec<DeviceEntry> {
    text.lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with("List of devices"))
        .filter_map(parse_device_line)
        .collect()
}

fn parse_device_line(line: &str) -> Option<DeviceEntry> {
    let (serial, rest) = match line.split_once('\t') {
        Some(split) => split,
        None => line.split_once(' ')?,
    };
    let rest = rest.trim_start();
    // The state is one word except "no permissions (...)", which runs up to the first key:value.
    let key_at = rest
        .split(' ')
        .position(|word| {
            ["usb:", "product:", "model:", "device:", "transport_id:"]
                .iter()
                .any(|key| word.starts_with(key))
        })
        .unwrap_or(usize::MAX);
    let words: Vec<&str> = rest.split(' ').filter(|w| !w.is_empty()).collect();
    let state_words = if rest.starts_with("no permissions") {
        words
            .iter()
            .take(key_at.min(words.len()))
            .copied()
            .collect()
    } else {
        words.iter().take(1).copied().collect::<Vec<_>>()
    };
    let state = state_words.join(" ");
    let mut entry = DeviceEntry {
        serial: serial.trim().to_string(),
        state: DeviceState::parse(&state),
        product: None,
        model: None,
        device: None,
        transport_id: None,
    };
    for word in words.iter().skip(state_words.len()) {
        match word.split_once(':') {
            Some(("product", v)) => entry.product = Some(v.to_string()),
            Some(("model", v)) => entry.model = Some(v.to_string()),
            Some(("device", v)) => entry.device = Some(v.to_string()),
            Some(("transport_id", v)) => entry.transport_id = v.parse().ok(),
            _ => {}
        }
    }
    Some(entry)
}

/// The ADB server: host queries and connections switched to one device.
#[derive(Debug)]
pub struct AdbServer {
    config: ServerConfig,
    tried_start: AtomicBool,
    /// This client started the server (`adb start-server`): nothing listened on its port.
    started: AtomicBool,
}

impl AdbServer {
    pub fn new(config: ServerConfig) -> AdbServer {
        AdbServer {
            config,
            tried_start: AtomicBool::new(false),
            started: AtomicBool::new(false),
        }
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Opens a connection to the server, starting a local server once if nothing listens.
    fn connect(&self, what: &str) -> Result<Conn, AdbError> {
        match self.connect_once(what) {
            Err(AdbError::ServerUnreachable { addr, source })
                if source.kind() == std::io::ErrorKind::ConnectionRefused
                    && self.config.start_server
                    && self.config.is_local()
                    && !self.tried_start.swap(true, Ordering::SeqCst) =>
            {
                self.start_server()
                    .map_err(|detail| AdbError::StartServer { detail })?;
                self.started.store(true, Ordering::SeqCst);
                self.connect_once(what).map_err(|e| match e {
                    AdbError::ServerUnreachable { source, .. } => {
                        AdbError::ServerUnreachable { addr, source }
                    }
                    other => other,
                })
            }
            other => other,
        }
    }

    fn connect_once(&self, what: &str) -> Result<Conn, AdbError> {
        let addr_text = self.config.addr_text();
        let unreachable = |source| AdbError::ServerUnreachable {
            addr: addr_text.clone(),
            source,
        };
        let addrs: Vec<SocketAddr> = (self.config.host.as_str(), self.config.port)
            .to_socket_addrs()
            .map_err(unreachable)?
            .collect();
        let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.config.timeout) {
                Ok(stream) => return Conn::new(stream, what, self.config.timeout),
                Err(e) => last = e,
            }
        }
        Err(unreachable(last))
    }

    fn start_server(&self) -> Result<(), String> {
        let output = Command::new("adb")
            .args(["-P", &self.config.port.to_string(), "start-server"])
            .output()
            .map_err(|e| format!("cannot run adb: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
        }
    }

    /// Which server this is, for people: its address, and whether droid just started it (then
    /// nothing listened on the port, so the port may be the wrong one).
    pub fn describe(&self) -> String {
        let addr = self.config.addr_text();
        if self.started.load(Ordering::SeqCst) {
            format!(
                "the ADB server droid just started at {addr} (nothing listened there: if your \
                 devices are on another server, --adb-port or ANDROID_ADB_SERVER_PORT is wrong)"
            )
        } else {
            format!(
                "the ADB server at {addr} (if your devices are on another server, check \
                 --adb-port or ANDROID_ADB_SERVER_PORT)"
            )
        }
    }

    /// A one-shot host query: request, OKAY, one length-prefixed answer.
    pub fn query(&self, request: &str) -> Result<String, AdbError> {
        let mut conn = self.connect(request)?;
        conn.send_request(request)?;
        let answer = conn.read_string()?;
        Ok(String::from_utf8_lossy(&answer).into_owned())
    }

    /// `host:version`: the server's protocol version (41 for adb 1.0.41).
    pub fn version(&self) -> Result<u32, AdbError> {
        let text = self.query("host:version")?;
        u32::from_str_radix(text.trim(), 16).map_err(|_| AdbError::Protocol {
            what: "host:version".into(),
            detail: format!("cannot parse version `{text}`"),
        })
    }

    /// `host:devices-l`: every device the server knows, with its state.
    pub fn devices(&self) -> Result<Vec<DeviceEntry>, AdbError> {
        Ok(parse_devices_long(&self.query("host:devices-l")?))
    }

    /// `host-serial:S:features`: the device's feature list.
    pub fn features(&self, serial: &str) -> Result<Vec<String>, AdbError> {
        let text = self.query(&format!("host-serial:{serial}:features"))?;
        Ok(text
            .split(',')
            .map(|f| f.trim().to_string())
            .filter(|f| !f.is_empty())
            .collect())
    }

    /// Chooses the device: the given serial (checked to be ready), else the only one attached.
    pub fn select(&self, serial: Option<&str>) -> Result<String, AdbError> {
        let devices = self.devices()?;
        let entry = match serial {
            Some(serial) => devices
                .into_iter()
                .find(|d| d.serial == serial)
                .ok_or_else(|| AdbError::DeviceNotFound {
                    serial: serial.to_string(),
                })?,
            None => {
                let mut devices = devices;
                match devices.len() {
                    0 => {
                        return Err(AdbError::NoDevice {
                            server: self.describe(),
                        })
                    }
                    1 => devices.remove(0),
                    _ => {
                        return Err(AdbError::SeveralDevices {
                            serials: devices.into_iter().map(|d| d.serial).collect(),
                        })
                    }
                }
            }
        };
        let serial = entry.serial;
        match entry.state {
            DeviceState::Device => Ok(serial),
            DeviceState::Unauthorized => Err(AdbError::Unauthorized { serial }),
            DeviceState::Offline => Err(AdbError::Offline { serial }),
            DeviceState::Other(state) => Err(AdbError::NotReady { serial, state }),
        }
    }

    /// Whether `serial` is listed in state `device` right now.
    fn is_ready(&self, serial: &str) -> bool {
        self.devices().is_ok_and(|devices| {
            devices
                .iter()
                .any(|d| d.serial == serial && d.state == DeviceState::Device)
        })
    }

    /// Waits until `serial` is listed in state `device`, looking every [`DEVICE_POLL`], at most
    /// until `until`; whether it is back.
    fn await_device(&self, serial: &str, until: Instant) -> bool {
        loop {
            if self.is_ready(serial) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            std::thread::sleep(DEVICE_POLL.min(left));
        }
    }

    /// Runs `attempt` and, while it fails because the device is away, waits for the device (at
    /// most [`ServerConfig::wait_for_device`] in all) and tries again. Only for attempts that
    /// fail before anything reached the device, so a retry never runs a command twice.
    fn with_device<T>(
        &self,
        serial: &str,
        mut attempt: impl FnMut() -> Result<T, AdbError>,
    ) -> Result<T, AdbError> {
        let wait = self.config.wait_for_device;
        let until = Instant::now() + wait;
        loop {
            match attempt() {
                Err(err) if is_away(&err) && !wait.is_zero() => {
                    if !self.await_device(serial, until) {
                        return Err(AdbError::DeviceGone {
                            serial: serial.to_string(),
                            waited: wait,
                            last: Box::new(err),
                        });
                    }
                }
                other => return other,
            }
        }
    }

    /// A connection switched to `serial` with `host:tport:serial:S`, ready for a device service.
    fn transport(&self, serial: &str, what: &str) -> Result<Conn, AdbError> {
        let mut conn = self.connect(what)?;
        conn.send_request(&format!("host:tport:serial:{serial}"))
            .map_err(|e| device_error(e, serial))?;
        let mut transport_id = [0u8; 8];
        conn.read_exact_or(&mut transport_id, serial)?;
        Ok(conn)
    }
}

/// Errors that mean the device is not there right now, rather than that it refused.
fn is_away(err: &AdbError) -> bool {
    matches!(
        err,
        AdbError::DeviceNotFound { .. }
            | AdbError::Offline { .. }
            | AdbError::DeviceVanished { .. }
    )
}

/// Refusals and closes on a device connection, as the typed errors they mean.
fn device_error(err: AdbError, serial: &str) -> AdbError {
    match err {
        AdbError::Refused { message, .. } if message.contains("not found") => {
            AdbError::DeviceNotFound {
                serial: serial.to_string(),
            }
        }
        AdbError::Refused { message, .. } if message.contains("unauthorized") => {
            AdbError::Unauthorized {
                serial: serial.to_string(),
            }
        }
        AdbError::Refused { message, .. } if message.contains("offline") => AdbError::Offline {
            serial: serial.to_string(),
        },
        // The server dropped the connection while switching to the device or opening the
        // service: the device went away (a pulled cable looks exactly like this).
        AdbError::Protocol { what, detail } if detail.starts_with("connection closed") => {
            AdbError::DeviceVanished {
                serial: serial.to_string(),
                what,
            }
        }
        other => other,
    }
}

/// One device behind the server. Cheap to share between threads: each call opens its own
/// connection, so a hierarchy dump and a screenshot can run at the same time.
#[derive(Debug)]
pub struct AdbClient {
    server: AdbServer,
    serial: String,
    features: OnceLock<Vec<String>>,
}

impl AdbClient {
    /// Connects to the server and selects the device (`serial`, else the only one attached). A
    /// named device that is away is waited for ([`ServerConfig::wait_for_device`]).
    pub fn connect(config: ServerConfig, serial: Option<&str>) -> Result<AdbClient, AdbError> {
        let server = AdbServer::new(config);
        let serial = match serial {
            Some(named) => server.with_device(named, || server.select(Some(named)))?,
            None => server.select(None)?,
        };
        Ok(AdbClient {
            server,
            serial,
            features: OnceLock::new(),
        })
    }

    pub fn serial(&self) -> &str {
        &self.serial
    }

    pub fn server(&self) -> &AdbServer {
        &self.server
    }

    /// The device's features, asked once and remembered.
    pub fn features(&self) -> Result<&[String], AdbError> {
        if let Some(features) = self.features.get() {
            return Ok(features);
        }
        let features = self.server.features(&self.serial)?;
        Ok(self.features.get_or_init(|| features))
    }

    fn has_shell_v2(&self) -> Result<bool, AdbError> {
        Ok(self.features()?.iter().any(|f| f == "shell_v2"))
    }

    /// Opens a device service (`shell,v2,raw:...`, `exec:...`, `sync:`) on a fresh connection.
    /// A device that is away until the service is accepted (nothing has run yet) is waited for.
    fn open(&self, service: &str) -> Result<Conn, AdbError> {
        self.server.with_device(&self.serial, || {
            let mut conn = self.server.transport(&self.serial, service)?;
            conn.send_request(service)
                .map_err(|e| device_error(e, &self.serial))?;
            Ok(conn)
        })
    }

    /// Runs `command` in the device shell: stdout, stderr and exit status with shell v2, or the
    /// merged output and no status through legacy `shell:` when the device lacks `shell_v2`.
    pub fn shell(&self, command: &str) -> Result<ShellOutput, AdbError> {
        self.shell_with_stdin(command, &[])
    }

    /// Like [`AdbClient::shell`], feeding `stdin` to the command and then closing its stdin.
    pub fn shell_with_stdin(&self, command: &str, stdin: &[u8]) -> Result<ShellOutput, AdbError> {
        if self.has_shell_v2()? {
            let conn = self.open(&format!("shell,v2,raw:{command}"))?;
            shell::run_v2(conn, stdin, &self.serial)
        } else {
            let mut conn = self.open(&format!("shell:{command}"))?;
            if !stdin.is_empty() {
                conn.write_all_or(stdin, &self.serial)?;
            }
            conn.shutdown_write();
            let stdout = conn.read_to_end_or(&self.serial)?;
            Ok(ShellOutput {
                stdout,
                stderr: Vec::new(),
                exit_code: None,
            })
        }
    }

    /// [`AdbClient::shell`] for a command that only reads (a dump, `dumpsys`, `getprop`): when
    /// the device goes away while it runs, it is waited for and the command runs again.
    pub fn shell_reading(&self, command: &str) -> Result<ShellOutput, AdbError> {
        self.server
            .with_device(&self.serial, || self.shell(command))
    }

    /// [`AdbClient::exec`] for a command that only reads (`screencap`), run again after the
    /// device came back like [`AdbClient::shell_reading`].
    pub fn exec_reading(&self, command: &str) -> Result<Vec<u8>, AdbError> {
        self.server.with_device(&self.serial, || {
            let bytes = self.exec(command)?;
            // `exec:` has no exit packet: a device that vanished mid-command looks like a short
            // output. The device list tells them apart.
            match self.server.is_ready(&self.serial) {
                true => Ok(bytes),
                false => Err(AdbError::DeviceVanished {
                    serial: self.serial.clone(),
                    what: format!("exec:{command}"),
                }),
            }
        })
    }

    /// `exec:CMD`: raw bytes of the command's stdout, unmangled (no PTY), no exit status.
    pub fn exec(&self, command: &str) -> Result<Vec<u8>, AdbError> {
        let mut conn = self.open(&format!("exec:{command}"))?;
        conn.read_to_end_or(&self.serial)
    }

    /// Sync `STAT` of a remote path; `None` when it does not exist.
    pub fn stat(&self, path: &str) -> Result<Option<FileStat>, AdbError> {
        let mut session = sync::Session::open(self.open("sync:")?, &self.serial);
        let stat = session.stat(path)?;
        session.quit();
        Ok(stat)
    }

    /// Sync `RECV`: the whole content of a remote file.
    pub fn pull(&self, path: &str) -> Result<Vec<u8>, AdbError> {
        let mut session = sync::Session::open(self.open("sync:")?, &self.serial);
        let mut data = Vec::new();
        session.recv(path, &mut data)?;
        session.quit();
        Ok(data)
    }

    /// Sync `SEND`: writes `data` to a remote file with the given permission bits.
    pub fn push(&self, data: &[u8], path: &str, mode: u32) -> Result<(), AdbError> {
        let mut session = sync::Session::open(self.open("sync:")?, &self.serial);
        session.send(data, path, mode)?;
        session.quit();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn server_address_follows_adb_precedence() {
        let none = ServerConfig::resolve(None, None, env_of(&[])).unwrap();
        assert_eq!((none.host.as_str(), none.port), ("localhost", 5037));
        let port =
            ServerConfig::resolve(None, None, env_of(&[("ANDROID_ADB_SERVER_PORT", "6000")]))
                .unwrap();
        assert_eq!(port.port, 6000);
        let socket = ServerConfig::resolve(
            None,
            None,
            env_of(&[
                ("ADB_SERVER_SOCKET", "tcp:10.0.0.2:7000"),
                ("ANDROID_ADB_SERVER_PORT", "6000"),
            ]),
        )
        .unwrap();
        assert_eq!((socket.host.as_str(), socket.port), ("10.0.0.2", 7000));
        let flags = ServerConfig::resolve(
            Some("127.0.0.1"),
            Some(9000),
            env_of(&[("ADB_SERVER_SOCKET", "tcp:10.0.0.2:7000")]),
        )
        .unwrap();
        assert_eq!((flags.host.as_str(), flags.port), ("127.0.0.1", 9000));
        assert!(
            ServerConfig::resolve(None, None, env_of(&[("ADB_SERVER_SOCKET", "unix:/x")])).is_err()
        );
        assert!(
            ServerConfig::resolve(None, None, env_of(&[("ANDROID_ADB_SERVER_PORT", "x")])).is_err()
        );
    }

    #[test]
    fn parses_real_devices_l_samples() {
        crate::fixtures_or_skip!();
        let dir = format!("{}/device/cmd/", crate::fixtures::location().display());
        let huawei = std::fs::read_to_string(format!("{dir}adb_devices_l_huawei_usb.txt")).unwrap();
        let devices = parse_devices_long(&huawei);
        assert_eq!(devices.len(), 1);
        assert_eq!(devices[0].serial, "UYT5T18414003349");
        assert_eq!(devices[0].state, DeviceState::Device);
        assert_eq!(devices[0].model.as_deref(), Some("ALP_AL00"));
        assert_eq!(devices[0].transport_id, Some(23));
        let xiaomi =
            std::fs::read_to_string(format!("{dir}adb_devices_l_xiaomi_line.txt")).unwrap();
        let devices = parse_devices_long(&xiaomi);
        assert_eq!(devices[0].serial, "n311r05e");
        assert_eq!(devices[0].device.as_deref(), Some("alioth"));
    }

    #[test]
    fn parses_every_state_including_multi_word_ones() {
        let text = "emulator-5554\tunauthorized\nabc offline transport_id:3\n\
                    xyz  no permissions (missing udev rules); see [http://x] usb:1-1 transport_id:4\n\
                    r1 recovery\n";
        let devices = parse_devices_long(text);
        assert_eq!(devices[0].state, DeviceState::Unauthorized);
        assert_eq!(devices[1].state, DeviceState::Offline);
        assert_eq!(devices[1].transport_id, Some(3));
        assert!(
            matches!(&devices[2].state, DeviceState::Other(s) if s.starts_with("no permissions (missing"))
        );
        assert_eq!(devices[2].transport_id, Some(4));
        assert_eq!(devices[3].state, DeviceState::Other("recovery".into()));
    }
}
