//! Real decoders and capture tools the media tests check files with: Debian's `ffprobe`
//! (ffmpeg) for recordings and `tcpdump` for captures.

use std::path::Path;
use std::process::Command;

use crate::common::require_tool;

/// What `ffprobe` decodes of a video: codec, size, duration, and the frames it counted by
/// decoding every one (`-count_frames`).
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub codec: String,
    pub width: u32,
    pub height: u32,
    pub duration: f64,
    pub frames: u64,
}

/// `ffprobe` of `file`; `None` when ffprobe is missing (a skip, unless CI requires it). An
/// undecodable file is a test failure with ffprobe's own words.
pub fn ffprobe(file: &Path) -> Option<Result<Probe, String>> {
    if !require_tool("ffprobe", "ffmpeg") {
        return None;
    }
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
        .args([
            "-show_entries",
            "format=duration:stream=codec_name,width,height,nb_read_frames",
        ])
        .args(["-of", "json"])
        .arg(file)
        .output()
        .expect("running ffprobe");
    if !out.status.success() {
        return Some(Err(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ffprobe JSON");
    let stream = &json["streams"][0];
    let number = |v: &serde_json::Value| v.as_str().and_then(|s| s.parse::<f64>().ok());
    Some(Ok(Probe {
        codec: stream["codec_name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        width: stream["width"].as_u64().unwrap_or(0) as u32,
        height: stream["height"].as_u64().unwrap_or(0) as u32,
        duration: number(&json["format"]["duration"]).unwrap_or(0.0),
        frames: number(&stream["nb_read_frames"]).unwrap_or(0.0) as u64,
    }))
}

/// The packets `tcpdump -r` reads from a capture file.
pub fn tcpdump_count(file: &Path) -> Option<u64> {
    if !require_tool("tcpdump", "tcpdump") {
        return None;
    }
    let out = Command::new("tcpdump")
        .args(["-n", "-r"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).lines().count() as u64)
}
