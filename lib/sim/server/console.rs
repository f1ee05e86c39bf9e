//! The emulator console: a device whose serial is `emulator-N` has a console on TCP port N, as
//! the Android emulator does, where `adb emu CMD` (and telnet) send text commands. It asks for
//! the token in `~/.emulator_console_auth_token` (created with a random token when missing; an
//! empty file means no authentication), then answers `auth`, `help`, `avd name`, `geo fix`,
//! `rotate`, `kill`, `quit` and `exit`, each answer ending in `OK` or `KO: reason` with CRLF.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;

use super::Shared;

/// The auth token file the emulator and `adb emu` share, in the user's home.
pub const TOKEN_FILE: &str = ".emulator_console_auth_token";
/// The AVD name `avd name` reports (the device's model).
const AVD_NAME: &str = "droid_sim";
/// A console line longer than this is not a command.
const LINE_MAX: u64 = 4096;
/// Silence that ends a console connection.
const IDLE: Duration = Duration::from_secs(300);

/// The console port a serial names: `emulator-N` → N.
pub fn port_of(serial: &str) -> Option<u16> {
    serial.strip_prefix("emulator-")?.parse().ok()
}

/// The token `auth` must give, from `home`'s token file; `None` when the file is empty (no
/// authentication). A missing file is created with a new token, as the emulator does.
pub fn token(home: &Path) -> io::Result<Option<String>> {
    let path = home.join(TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim().to_string()).filter(|t| !t.is_empty())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            let token: String = rand::thread_rng()
                .sample_iter(&rand::distributions::Alphanumeric)
                .take(16)
                .map(char::from)
                .collect();
            std::fs::write(&path, &token)?;
            Ok(Some(token))
        }
        Err(err) => Err(err),
    }
}

/// Serves the console until the simulator stops.
pub fn serve(listener: TcpListener, shared: Arc<Shared>, token: Option<String>, home: PathBuf) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let shared = Arc::clone(&shared);
        let token = token.clone();
        let home = home.clone();
        let _ = std::thread::Builder::new()
            .name("droid-sim-console".into())
            .spawn(move || {
                let _ = session(&stream, &shared, token.as_deref(), &home);
            });
    }
}

/// One console connection: the banner, then a command per line.
fn session(
    stream: &TcpStream,
    shared: &Shared,
    token: Option<&str>,
    home: &Path,
) -> io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    let mut out = stream;
    let mut authenticated = token.is_none();
    if authenticated {
        write!(
            out,
            "Android Console: type 'help' for a list of commands\r\nOK\r\n"
        )?;
    } else {
        write!(
            out,
            "Android Console: Authentication required\r\nAndroid Console: type 'auth <auth_token>' to authenticate\r\nAndroid Console: you can find your <auth_token> in \r\n'{}'\r\nOK\r\n",
            home.join(TOKEN_FILE).display()
        )?;
    }
    let mut reader = BufReader::new(io::Read::take(stream, LINE_MAX));
    loop {
        let mut line = String::new();
        reader.get_mut().set_limit(LINE_MAX);
        if reader.read_line(&mut line)? == 0 || shared.stopping.load(Ordering::SeqCst) {
            return Ok(());
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&command, args)) = words.split_first() else {
            continue;
        };
        let answer = match (command, authenticated) {
            ("quit" | "exit", _) => return Ok(()),
            ("help" | "h" | "?", _) => help(authenticated),
            ("auth", _) => match (args, token) {
                ([given], Some(expected)) if *given == expected => {
                    authenticated = true;
                    "Android Console: type 'help' for a list of commands\r\nOK\r\n".to_string()
                }
                ([_], _) => format!(
                    "KO: authentication token does not match {}\r\n",
                    home.join(TOKEN_FILE).display()
                ),
                _ => "KO: missing authentication token\r\n".to_string(),
            },
            (_, false) => "KO: unknown command, try 'help'\r\n".to_string(),
            ("avd", true) => match args {
                ["name"] => format!("{AVD_NAME}\r\nOK\r\n"),
                _ => "KO: bad sub-command, try 'help avd'\r\n".to_string(),
            },
            ("geo", true) => geo(shared, args),
            ("rotate", true) => {
                shared.phone.rotate();
                "OK\r\n".to_string()
            }
            ("kill", true) => {
                write!(out, "OK: killing emulator, bye bye\r\n")?;
                out.flush()?;
                shared.stop();
                return Ok(());
            }
            _ => "KO: unknown command, try 'help'\r\n".to_string(),
        };
        out.write_all(answer.as_bytes())?;
    }
}

fn help(authenticated: bool) -> String {
    let commands: &[(&str, &str)] = if authenticated {
        &[
            ("help|h|?", "print a list of commands"),
            ("avd", "control virtual device execution"),
            ("geo", "Geo-location commands"),
            ("rotate", "rotate the screen clockwise by 90 degrees"),
            ("kill", "kill the emulator instance"),
            ("quit|exit", "quit control session"),
        ]
    } else {
        &[
            ("help|h|?", "print a list of commands"),
            ("auth", "user authentication for the emulator console"),
            ("quit|exit", "quit control session"),
        ]
    };
    let mut out = String::from("Android console commands:\r\n\r\n");
    for (name, what) in commands {
        out.push_str(&format!("    {name:<16} {what}\r\n"));
    }
    out.push_str("\r\ntry 'help <command>' for command-specific help\r\nOK\r\n");
    out
}

/// `geo fix LONGITUDE LATITUDE [ALTITUDE [SATELLITES [VELOCITY]]]`.
fn geo(shared: &Shared, args: &[&str]) -> String {
    let ["fix", numbers @ ..] = args else {
        return "KO: bad sub-command, try 'help geo'\r\n".to_string();
    };
    if !(2..=5).contains(&numbers.len()) {
        return "KO: invalid arguments, try 'help geo fix'\r\n".to_string();
    }
    let parsed: Option<Vec<f64>> = numbers.iter().map(|n| n.parse().ok()).collect();
    match parsed.as_deref() {
        Some([longitude, latitude, ..])
            if (-180.0..=180.0).contains(longitude) && (-90.0..=90.0).contains(latitude) =>
        {
            shared.phone.geo_fix(*longitude, *latitude);
            "OK\r\n".to_string()
        }
        Some(_) => "KO: invalid longitude or latitude\r\n".to_string(),
        None => format!("KO: argument '{}' is not a number\r\n", numbers.join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_name_their_console_port_and_tokens_come_from_home() {
        assert_eq!(port_of("emulator-5556"), Some(5556));
        assert_eq!(port_of("R58M123"), None);
        assert_eq!(port_of("emulator-x"), None);
        let home = tempfile::tempdir().unwrap();
        let made = token(home.path()).unwrap().unwrap();
        assert_eq!(made.len(), 16);
        assert_eq!(token(home.path()).unwrap(), Some(made), "kept");
        std::fs::write(home.path().join(TOKEN_FILE), "\n").unwrap();
        assert_eq!(token(home.path()).unwrap(), None, "empty: no auth");
        assert!(help(false).contains("auth") && !help(false).contains("geo"));
    }
}
