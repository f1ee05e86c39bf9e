//! Shell protocol v2: packets of 1-byte id + little-endian u32 length + payload, carrying
//! stdin (0), stdout (1), stderr (2), the exit status (3) and close-stdin (4).

use super::wire::Conn;
use super::AdbError;

const ID_STDIN: u8 = 0;
const ID_STDOUT: u8 = 1;
const ID_STDERR: u8 = 2;
const ID_EXIT: u8 = 3;
const ID_CLOSE_STDIN: u8 = 4;
/// Largest stdin packet we send (adbd's own buffer size).
const MAX_STDIN_PACKET: usize = 32 * 1024;
/// Largest packet we accept, so a corrupt length cannot make us allocate gigabytes.
const MAX_PACKET: usize = 16 * 1024 * 1024;

/// What a shell command printed, and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The command's exit status; `None` through legacy `shell:`, which has none.
    pub exit_code: Option<u8>,
}

impl ShellOutput {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// Exit status 0, or unknown (legacy shell).
    pub fn succeeded(&self) -> bool {
        self.exit_code.unwrap_or(0) == 0
    }
}

fn packet(id: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(id);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Sends stdin then close-stdin, and collects packets until the exit packet and the close.
pub(super) fn run_v2(mut conn: Conn, stdin: &[u8], serial: &str) -> Result<ShellOutput, AdbError> {
    let mut outgoing = Vec::new();
    for chunk in stdin.chunks(MAX_STDIN_PACKET) {
        outgoing.extend(packet(ID_STDIN, chunk));
    }
    outgoing.extend(packet(ID_CLOSE_STDIN, &[]));
    conn.write_all_or(&outgoing, serial)?;

    let mut output = ShellOutput::default();
    loop {
        let mut header = [0u8; 5];
        match conn.read_exact_or_eof(&mut header) {
            Ok(true) => {}
            Ok(false) if output.exit_code.is_some() => return Ok(output),
            // A close before the exit packet: the device (or its adbd) went away.
            Ok(false) | Err(AdbError::Protocol { .. }) => return Err(conn.vanished(serial)),
            Err(e) => return Err(e),
        }
        let len = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if len > MAX_PACKET {
            return Err(AdbError::Protocol {
                what: "shell v2".into(),
                detail: format!("packet of {len} bytes"),
            });
        }
        let mut payload = vec![0u8; len];
        conn.read_exact_or(&mut payload, serial)?;
        match header[0] {
            ID_STDOUT => output.stdout.extend_from_slice(&payload),
            ID_STDERR => output.stderr.extend_from_slice(&payload),
            ID_EXIT => {
                output.exit_code = Some(payload.first().copied().unwrap_or(255));
                // adbd closes right after the exit packet; do not wait for the close.
                return Ok(output);
            }
            // Window-size and unknown packets carry nothing we use.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_id_le_length_payload() {
        assert_eq!(packet(ID_STDOUT, b"33\n"), b"\x01\x03\x00\x00\x0033\n");
        assert_eq!(packet(ID_CLOSE_STDIN, b""), b"\x04\x00\x00\x00\x00");
        assert_eq!(packet(ID_EXIT, &[0]), b"\x03\x01\x00\x00\x00\x00");
    }
}
