//! PCAPdroid, when the app model installs it: the capture its `CaptureCtrl` activity starts and
//! stops, and the pcap file it leaves in `Download/PCAPdroid/` (LINKTYPE_RAW, as PCAPdroid's
//! VPN mode writes), holding DNS traffic of the filtered app: one query and its answer per
//! second of capture, for a host named after the app.

use std::time::Instant;

/// PCAPdroid's package and its control activity.
pub const PCAPDROID_PACKAGE: &str = "com.emanuelef.remote_capture";
pub const PCAPDROID_CONTROL: &str = "com.emanuelef.remote_capture/.activities.CaptureCtrl";
/// The activities its manifest declares.
pub const ACTIVITIES: [&str; 2] = [".activities.MainActivity", ".activities.CaptureCtrl"];

/// Where PCAPdroid writes captures (`pcap_name` is a file name inside it).
pub const DIR: &str = "/sdcard/Download/PCAPdroid";
const LINKTYPE_RAW: u32 = 101;
/// 2026-01-01: a fixed start, so captures are reproducible.
const EPOCH: u32 = 1_767_225_600;

/// A running capture.
#[derive(Debug)]
pub struct Capture {
    /// The process of PCAPdroid's capture service (`pidof`, `kill`).
    pub pid: u32,
    pub started: Instant,
    pub path: String,
    pub app: String,
}

impl Capture {
    /// The file a capture leaves when stopped now.
    pub fn file(&self) -> Vec<u8> {
        let seconds = self.started.elapsed().as_secs().clamp(1, 600) as u32;
        capture(&self.app, seconds)
    }

    /// The file a capture leaves when its process dies now: the packets written so far, the
    /// last record cut short (its buffered tail never reached the file).
    pub fn file_when_killed(&self) -> Vec<u8> {
        let mut file = self.file();
        let last_record = 16 + dns_packet_len(&self.app, true);
        if file.len() > 24 + last_record {
            file.truncate(file.len() - last_record / 2);
        }
        file
    }
}

pub fn header() -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&0i32.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
    out
}

fn host(app: &str) -> String {
    let reversed: Vec<&str> = app.split('.').rev().collect();
    format!("api.{}", reversed.join("."))
}

fn dns_packet_len(app: &str, answer: bool) -> usize {
    20 + 8 + dns(&host(app), 0, answer).len()
}

/// One DNS query and answer per second of capture, for a host named after the app.
pub fn capture(app: &str, seconds: u32) -> Vec<u8> {
    let host = host(app);
    let mut out = header();
    for second in 0..seconds {
        let id = (second & 0xffff) as u16;
        let query = dns(&host, id, false);
        let answer = dns(&host, id, true);
        let port = 40000 + (second % 20000) as u16;
        record(
            &mut out,
            EPOCH + second,
            0,
            &ipv4_udp([10, 215, 173, 1], [10, 215, 173, 2], port, 53, &query),
        );
        record(
            &mut out,
            EPOCH + second,
            20_000,
            &ipv4_udp([10, 215, 173, 2], [10, 215, 173, 1], 53, port, &answer),
        );
    }
    out
}

fn record(out: &mut Vec<u8>, secs: u32, micros: u32, packet: &[u8]) {
    let len = packet.len() as u32;
    for value in [secs, micros, len, len] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(packet);
}

fn dns(host: &str, id: u16, answer: bool) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&(if answer { 0x8180u16 } else { 0x0100 }).to_be_bytes());
    for count in [1u16, u16::from(answer), 0, 0] {
        out.extend_from_slice(&count.to_be_bytes());
    }
    for label in host.split('.').filter(|l| !l.is_empty()) {
        let label = &label.as_bytes()[..label.len().min(63)];
        out.push(label.len() as u8);
        out.extend_from_slice(label);
    }
    out.push(0);
    out.extend_from_slice(&[0, 1, 0, 1]);
    if answer {
        out.extend_from_slice(&[
            0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 93, 184, 215, 14,
        ]);
    }
    out
}

fn ipv4_udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    ip.extend_from_slice(&sport.to_be_bytes());
    ip.extend_from_slice(&dport.to_be_bytes());
    ip.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 0]); // UDP checksum 0: "not computed", valid for IPv4
    ip.extend_from_slice(payload);
    ip
}

pub fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|pair| u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcap_packets_carry_valid_ipv4_checksums() {
        let file = capture("com.example.shop", 2);
        assert_eq!(&file[..4], &0xa1b2_c3d4u32.to_le_bytes());
        let mut offset = 24;
        let mut packets = 0;
        while offset < file.len() {
            let len =
                u32::from_le_bytes(file[offset + 8..offset + 12].try_into().unwrap()) as usize;
            let packet = &file[offset + 16..offset + 16 + len];
            assert_eq!(checksum(&packet[..20]), 0, "header sums to 0xffff");
            assert_eq!(usize::from(u16::from_be_bytes([packet[2], packet[3]])), len);
            offset += 16 + len;
            packets += 1;
        }
        assert_eq!(packets, 4);
        assert!(String::from_utf8_lossy(&file).contains("shop"));
    }

    #[test]
    fn a_killed_capture_cuts_its_last_record_short() {
        let capture = Capture {
            pid: 1,
            started: Instant::now(),
            path: String::new(),
            app: "com.example.shop".into(),
        };
        let whole = capture.file();
        let killed = capture.file_when_killed();
        assert!(killed.len() < whole.len() && killed.len() > whole.len() - 16 - 100);
        assert_eq!(killed[..], whole[..killed.len()]);
    }
}
