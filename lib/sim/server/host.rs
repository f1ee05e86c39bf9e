//! Host services: version, devices, features, state, wait-for, transport selection and kill.

use std::io::{self, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::forward::is_forward;
use super::wire::{fail, okay, okay_payload};
use super::{Shared, FEATURES, IDLE_TIMEOUT, SERVER_VERSION, TRANSPORT_ID};

/// What a host request is about.
pub(super) enum Scope<'a> {
    /// `host:` (any single device, or the switched transport).
    Any,
    /// `host-serial:S:`, `host-transport-id:N:`.
    Device(&'a str),
    TransportId(&'a str),
}

pub(super) fn split_host(request: &str) -> Option<(Scope<'_>, &str)> {
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
    // Serials can contain ':' (`192.168.1.5:5555`), and so can commands (`forward:tcp:1;tcp:2`):
    // the serial ends at the first ':' after which a host command begins.
    let split = rest
        .match_indices(':')
        .map(|(at, _)| at)
        .find(|&at| is_host_command(&rest[at + 1..]))
        .or_else(|| rest.rfind(':'))?;
    Some((Scope::Device(&rest[..split]), &rest[split + 1..]))
}

/// Whether `text` starts with a host command that may follow `host-serial:SERIAL:`.
fn is_host_command(text: &str) -> bool {
    const WHOLE: &[&str] = &[
        "features",
        "get-state",
        "get-serialno",
        "get-devpath",
        "list-forward",
        "killforward-all",
    ];
    const PREFIXES: &[&str] = &["forward:", "killforward:", "wait-for-"];
    WHOLE.contains(&text) || PREFIXES.iter().any(|p| text.starts_with(p))
}

/// What to do with the socket after an answer.
pub(super) enum Next {
    Close,
    /// The socket now talks to the device.
    Switched,
    /// `host:kill`.
    Kill,
}

pub(super) fn devices_listing(shared: &Shared, long: bool) -> String {
    if shared.phone.faults.offline() {
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
pub(super) fn select(shared: &Shared, scope: &Scope<'_>) -> Result<(), String> {
    match scope {
        Scope::Device(serial) if *serial != shared.serial => {
            return Err(format!("device '{serial}' not found"))
        }
        Scope::TransportId(id) if id.parse::<u64>().ok() != Some(TRANSPORT_ID) => {
            return Err(format!("no device with transport id '{id}'"))
        }
        _ => {}
    }
    if shared.phone.faults.offline() {
        return Err(match scope {
            Scope::Any => "no devices/emulators found".to_string(),
            _ => format!("device '{}' not found", shared.serial),
        });
    }
    Ok(())
}

pub(super) fn host(
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
        // The server's listeners, whatever device the prefix names.
        "list-forward" => answer(stream, Ok(shared.forwards.listing(&shared.serial))),
        forward if is_forward(forward) => {
            if forward != "killforward-all" {
                if let Err(reason) = select(shared, &scope) {
                    return fail(stream, &reason).map(|()| Next::Close);
                }
            }
            shared
                .forwards
                .answer(stream, forward)
                .map(|()| Next::Close)
        }
        wait if wait.starts_with("wait-for-") => {
            okay(stream)?;
            let deadline = Instant::now() + IDLE_TIMEOUT;
            while shared.phone.faults.offline() && Instant::now() < deadline {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(matches!(
            split_host("host-serial:emulator-5554:forward:tcp:1;tcp:2"),
            Some((Scope::Device("emulator-5554"), "forward:tcp:1;tcp:2"))
        ));
        assert!(matches!(
            split_host("host-serial:10.0.0.2:5555:killforward:tcp:1"),
            Some((Scope::Device("10.0.0.2:5555"), "killforward:tcp:1"))
        ));
    }
}
