//! What `screenrecord` writes: the screens it saw, encoded as H.264 (OpenH264, built from its
//! source by the `openh264` crate) in an MP4 (the `mp4` crate), as a device's MediaCodec and
//! MediaMuxer do. Like a device's recording the frame rate is variable: a frame when the screen
//! changes, shown until the next one, the last until the recording ends. An MP4 whose recording
//! ended cleanly has its `moov` atom at the end; one killed with SIGKILL has none and does not
//! play, as on a device.

use std::io::Cursor;
use std::time::Duration;

use image::RgbaImage;
use openh264::encoder::{BitRate, Encoder, EncoderConfig, FrameType, RateControlMode, UsageType};
use openh264::formats::{RgbaSliceU8, YUVBuffer};
use openh264::{OpenH264API, Timestamp};

/// The movie and track timescale: milliseconds.
const TIMESCALE: u32 = 1000;
const NAL_SPS: u8 = 7;
const NAL_PPS: u8 = 8;

/// `screenrecord --bit-rate` bounds (AOSP screenrecord.cpp: kMinBitRate, kMaxBitRate).
const MIN_BIT_RATE: u32 = 100_000;
const MAX_BIT_RATE: u32 = 200_000_000;
/// The largest side an AVC encoder takes.
const MAX_SIDE: u32 = 4096;

/// `--size WIDTHxHEIGHT`.
pub fn parse_size(text: &str) -> Option<(u32, u32)> {
    let (width, height) = text.split_once('x')?;
    let (width, height) = (width.parse().ok()?, height.parse().ok()?);
    let plausible = |side: u32| (2..=MAX_SIDE).contains(&side);
    (plausible(width) && plausible(height)).then_some((width, height))
}

/// `--bit-rate RATE`: bits per second, or megabits with an `M` (`4M` is `4000000`).
pub fn parse_bit_rate(text: &str) -> Option<u32> {
    let rate = match text.strip_suffix(['M', 'm']) {
        Some(megabits) => megabits.parse::<u32>().ok()?.checked_mul(1_000_000)?,
        None => text.parse().ok()?,
    };
    (MIN_BIT_RATE..=MAX_BIT_RATE)
        .contains(&rate)
        .then_some(rate)
}

/// One encoded frame: when it was shown, its NAL units in MP4 (length-prefixed) form.
struct Sample {
    at_ms: u64,
    data: Vec<u8>,
    sync: bool,
}

/// A recording in progress.
pub struct Recording {
    size: (u32, u32),
    bit_rate: u32,
    encoder: Option<Encoder>,
    sps: Vec<u8>,
    pps: Vec<u8>,
    samples: Vec<Sample>,
    /// Why the encoder failed, if it did (the frames before are kept).
    pub error: Option<String>,
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recording")
            .field("size", &self.size)
            .field("frames", &self.samples.len())
            .finish()
    }
}

/// The NAL units of an Annex B stream, without their start codes.
fn nal_units(stream: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= stream.len() {
        if stream[i..i + 3] == [0, 0, 1] {
            starts.push(i + 3);
            i += 3;
        } else {
            i += 1;
        }
    }
    let ends: Vec<usize> = starts
        .iter()
        .skip(1)
        .map(|&s| {
            // A 4-byte start code's leading zero belongs to it, not to the unit before.
            let end = s - 3;
            if end > 0 && stream[end - 1] == 0 {
                end - 1
            } else {
                end
            }
        })
        .chain(std::iter::once(stream.len()))
        .collect();
    starts
        .into_iter()
        .zip(ends)
        .map(move |(s, e)| &stream[s..e.max(s)])
}

impl Recording {
    /// A recording of `size` (each side rounded down to even, as 4:2:0 needs) at `bit_rate`
    /// bits per second.
    pub fn new(size: (u32, u32), bit_rate: u32) -> Recording {
        Recording {
            size: (size.0.max(2) & !1, size.1.max(2) & !1),
            bit_rate,
            encoder: None,
            sps: Vec::new(),
            pps: Vec::new(),
            samples: Vec::new(),
            error: None,
        }
    }

    pub fn frames(&self) -> usize {
        self.samples.len()
    }

    /// Encodes the screen as it looked `at` into the recording.
    pub fn frame(&mut self, screen: &RgbaImage, at: Duration) {
        if self.error.is_some() {
            return;
        }
        if let Err(err) = self.encode(screen, at) {
            self.error = Some(err);
        }
    }

    fn encode(&mut self, screen: &RgbaImage, at: Duration) -> Result<(), String> {
        let (width, height) = self.size;
        let scaled;
        let image = if screen.dimensions() == self.size {
            screen
        } else {
            scaled = image::imageops::resize(
                screen,
                width,
                height,
                image::imageops::FilterType::Triangle,
            );
            &scaled
        };
        if self.encoder.is_none() {
            // Every frame the screen showed is in the file, none dropped to hold a bit rate, so
            // the rate control is off (OpenH264 controls the rate only by dropping frames); the
            // bit rate still sizes the encoder's buffers.
            let config = EncoderConfig::new()
                .usage_type(UsageType::ScreenContentRealTime)
                .adaptive_quantization(false)
                .background_detection(false)
                .rate_control_mode(RateControlMode::Off)
                .bitrate(BitRate::from_bps(self.bit_rate))
                .skip_frames(false);
            let encoder = Encoder::with_api_config(OpenH264API::from_source(), config)
                .map_err(|e| format!("H.264 encoder: {e}"))?;
            self.encoder = Some(encoder);
        }
        let encoder = self.encoder.as_mut().ok_or("no encoder")?;
        let yuv = YUVBuffer::from_rgba8_source(RgbaSliceU8::new(
            image.as_raw(),
            (width as usize, height as usize),
        ));
        let at_ms = at.as_millis() as u64;
        let stream = encoder
            .encode_at(&yuv, Timestamp::from_millis(at_ms))
            .map_err(|e| format!("encoding a frame: {e}"))?;
        if stream.frame_type() == FrameType::Skip {
            return Ok(());
        }
        let sync = stream.frame_type() == FrameType::IDR;
        let mut data = Vec::new();
        for unit in nal_units(&stream.to_vec()).filter(|u| !u.is_empty()) {
            match unit[0] & 0x1f {
                NAL_SPS => self.sps = unit.to_vec(),
                NAL_PPS => self.pps = unit.to_vec(),
                _ => {
                    data.extend_from_slice(&(unit.len() as u32).to_be_bytes());
                    data.extend_from_slice(unit);
                }
            }
        }
        if !data.is_empty() {
            self.samples.push(Sample { at_ms, data, sync });
        }
        Ok(())
    }

    /// The MP4 of a recording that lasted `length`. `finalised` writes the `moov` atom (the
    /// recording ended by SIGINT, SIGHUP or its time limit); without it the file is cut short,
    /// as a killed screenrecord leaves it.
    pub fn finish(self, length: Duration, finalised: bool) -> Result<Vec<u8>, String> {
        let (width, height) = self.size;
        let config = mp4::Mp4Config {
            major_brand: mp4::FourCC::from(*b"mp42"),
            minor_version: 0,
            compatible_brands: vec![mp4::FourCC::from(*b"isom"), mp4::FourCC::from(*b"mp42")],
            timescale: TIMESCALE,
        };
        let mp4_error = |e: mp4::Error| format!("writing the MP4: {e}");
        let mut writer =
            mp4::Mp4Writer::write_start(Cursor::new(Vec::new()), &config).map_err(mp4_error)?;
        if !self.samples.is_empty() {
            writer
                .add_track(&mp4::TrackConfig {
                    track_type: mp4::TrackType::Video,
                    timescale: TIMESCALE,
                    language: "und".to_string(),
                    media_conf: mp4::MediaConfig::AvcConfig(mp4::AvcConfig {
                        width: u16::try_from(width).unwrap_or(u16::MAX),
                        height: u16::try_from(height).unwrap_or(u16::MAX),
                        seq_param_set: self.sps.clone(),
                        pic_param_set: self.pps.clone(),
                    }),
                })
                .map_err(mp4_error)?;
        }
        let end_ms = (length.as_millis() as u64).max(1);
        for (i, sample) in self.samples.iter().enumerate() {
            let next = self.samples.get(i + 1).map_or(end_ms, |s| s.at_ms);
            let duration = next.saturating_sub(sample.at_ms).max(1);
            writer
                .write_sample(
                    1,
                    &mp4::Mp4Sample {
                        start_time: sample.at_ms,
                        duration: u32::try_from(duration).unwrap_or(u32::MAX),
                        rendering_offset: 0,
                        is_sync: sample.sync,
                        bytes: bytes::Bytes::copy_from_slice(&sample.data),
                    },
                )
                .map_err(mp4_error)?;
        }
        if finalised {
            writer.write_end().map_err(mp4_error)?;
        }
        Ok(writer.into_writer().into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_bit_rates_parse_as_screenrecord_takes_them() {
        assert_eq!(parse_size("1280x720"), Some((1280, 720)));
        assert_eq!(parse_size("1280"), None);
        assert_eq!(parse_size("0x720"), None);
        assert_eq!(parse_bit_rate("4M"), Some(4_000_000));
        assert_eq!(parse_bit_rate("4000000"), Some(4_000_000));
        assert_eq!(parse_bit_rate("10"), None);
        assert_eq!(parse_bit_rate("999M"), None);
    }

    #[test]
    fn start_codes_of_three_and_four_bytes_split_units() {
        let stream = [
            0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 4, 5,
        ];
        let units: Vec<&[u8]> = nal_units(&stream).collect();
        assert_eq!(units, vec![&[0x67, 1, 2][..], &[0x68, 3], &[0x65, 4, 5]]);
    }

    #[test]
    fn a_recording_is_an_mp4_with_one_sample_per_frame() {
        let mut recording = Recording::new((65, 48), 1_000_000);
        assert_eq!(recording.size, (64, 48));
        let red = RgbaImage::from_pixel(64, 48, image::Rgba([255, 0, 0, 255]));
        let blue = RgbaImage::from_pixel(64, 48, image::Rgba([0, 0, 255, 255]));
        recording.frame(&red, Duration::ZERO);
        recording.frame(&blue, Duration::from_millis(400));
        assert_eq!(recording.frames(), 2);
        let file = recording.finish(Duration::from_millis(1000), true).unwrap();
        let size = file.len() as u64;
        let reader = mp4::Mp4Reader::read_header(Cursor::new(file), size).unwrap();
        assert_eq!(reader.duration(), Duration::from_millis(1000));
        let track = reader.tracks().get(&1).unwrap();
        assert_eq!(track.sample_count(), 2);
        assert_eq!((track.width(), track.height()), (64, 48));
    }
}
