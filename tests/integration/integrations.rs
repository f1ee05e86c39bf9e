//! The crawl integrations end to end against droid-sim (video, PCAPdroid, declared activities)
//! and a real HTTP server on 127.0.0.1 replaying MobSF's bodies, failure paths included; and a
//! short crawl with all four whose notes land in `run_stats` under the reference's names.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use droid::adb::AdbClient;
use droid::device::{AdbDevice, DeviceConfig};
use droid::events::{Note, NoteKind};
use droid::integrations::activities::Activities;
use droid::integrations::mobsf::{self, Mobsf, MobsfConfig, MobsfIntegration};
use droid::integrations::pcap::{self, Pcap, PcapConfig};
use droid::integrations::video::{Video, VideoConfig};
use droid::integrations::{Integration, SessionDir};
use droid::secret::Secret;
use droid::sim::{Sim, SimConfig, SimHandle};
use serde_json::{json, Value};

use crate::common::{fixtures, model_with, require_tool};

const TINY: &str = "com.example.tiny";
const MOBSF_KEY: &str = "mobsf-key-5ecret-0042";
const PCAPDROID_KEY: &str = "pcapdroid-key-5ecret-0077";

/// A simulator serving `apps/tiny` with `fields` added to the model, the app launched.
struct Phone {
    dir: tempfile::TempDir,
    sim: Option<SimHandle>,
    device: AdbDevice,
}

impl Phone {
    fn new(fields: Value) -> Phone {
        Phone::with_faults(fields, Vec::new())
    }

    fn with_faults(fields: Value, faults: Vec<droid::sim::fault::Fault>) -> Phone {
        let dir = tempfile::tempdir().unwrap();
        let model = model_with(dir.path(), "tiny", fields);
        let sim = Sim::start(SimConfig {
            faults,
            ..SimConfig::new(model)
        })
        .unwrap();
        // A device that goes away fails the command at once rather than being waited for.
        let mut config = DeviceConfig::loopback(sim.port(), sim.serial());
        config.server.wait_for_device = Duration::ZERO;
        let device = AdbDevice::connect(config).unwrap();
        let phone = Phone {
            dir,
            sim: Some(sim),
            device,
        };
        phone.shell(&format!(
            "monkey -p {TINY} -c android.intent.category.LAUNCHER 1"
        ));
        phone
    }

    fn adb(&self) -> &AdbClient {
        self.device.client()
    }

    fn shell(&self, command: &str) -> String {
        self.adb().shell(command).unwrap().stdout_text()
    }

    fn session(&self) -> SessionDir {
        SessionDir::new(self.dir.path().join("session"))
    }
}

/// The `data` of the last `artifact` note of `name`.
fn artifact(notes: &[Note], name: &str) -> Value {
    notes
        .iter()
        .rev()
        .filter(|n| n.kind == NoteKind::Artifact)
        .filter_map(|n| n.data.clone())
        .find(|d| d["artifact"] == name)
        .unwrap_or_else(|| panic!("no {name} artifact in {notes:#?}"))
}

fn warnings(notes: &[Note]) -> Vec<String> {
    notes
        .iter()
        .filter(|n| n.kind == NoteKind::Warning)
        .map(|n| n.message.clone().unwrap_or_default())
        .collect()
}

fn files(session: &SessionDir, data: &Value) -> Vec<std::path::PathBuf> {
    data["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| session.root().join(f.as_str().unwrap()))
        .collect()
}

// ---------------------------------------------------------------------------------------- video

/// Waits (bounded) until screenrecord runs on the phone.
fn until_recording(phone: &Phone) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !phone.adb().shell("pidof screenrecord").unwrap().succeeded() {
        assert!(Instant::now() < deadline, "screenrecord never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn video_segments_are_pulled_playable_and_measured() {
    let phone = Phone::new(json!({}));
    let session = phone.session();
    let mut video = Video::new(VideoConfig {
        segment_secs: 1,
        bit_rate: Some(2_000_000),
        size: Some((360, 640)),
    });
    video.check(phone.adb()).unwrap();
    let started = Instant::now();
    let mut notes = video.start(phone.adb(), &session);
    until_recording(&phone);
    // The app, then the launcher, across the first segment's end, then the app again.
    std::thread::sleep(Duration::from_millis(300));
    phone.shell("input keyevent HOME");
    std::thread::sleep(Duration::from_millis(1200));
    notes.extend(video.tick(phone.adb()));
    phone.shell(&format!(
        "monkey -p {TINY} -c android.intent.category.LAUNCHER 1"
    ));
    std::thread::sleep(Duration::from_millis(500));
    notes.extend(video.finish(phone.adb(), &session));
    let elapsed = started.elapsed().as_secs_f64();
    assert!(warnings(&notes).is_empty(), "{notes:#?}");
    let data = artifact(&notes, "video");
    assert!(data.get("error").is_none(), "{data}");
    let paths = files(&session, &data);
    assert!(paths.len() >= 2, "1 s segments over 2.3 s: {data}");
    assert_eq!(data["segments"], paths.len());
    let size: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert_eq!(data["size_bytes"], size);
    let duration = data["duration_seconds"].as_f64().unwrap();
    assert!(
        duration > 0.0 && duration <= elapsed,
        "{duration} of {elapsed} s"
    );
    // Each segment decodes, frame by frame, in a real decoder.
    let mut probed = (0.0, 0);
    for path in &paths {
        let Some(probe) = crate::media::ffprobe(path) else {
            return;
        };
        let probe = probe.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            (probe.codec.as_str(), probe.width, probe.height),
            ("h264", 360, 640)
        );
        probed.0 += probe.duration;
        probed.1 += probe.frames;
    }
    assert!((probed.0 - duration).abs() < 0.05, "{probed:?} vs {data}");
    assert_eq!(probed.1, data["frames"].as_u64().unwrap());
    assert!(probed.1 >= 3, "the app, the launcher, the app again");
    assert!(
        !phone.shell("ls /sdcard").contains("droid-video"),
        "segments removed"
    );
}

#[test]
fn a_killed_segment_is_reported_and_the_recording_goes_on() {
    let phone = Phone::new(json!({}));
    let session = phone.session();
    let mut video = Video::new(VideoConfig {
        segment_secs: 30,
        bit_rate: None,
        size: Some((180, 320)),
    });
    let mut notes = video.start(phone.adb(), &session);
    until_recording(&phone);
    std::thread::sleep(Duration::from_millis(300));
    // SIGKILL: the segment's MP4 never gets its moov atom and its shell exits 137, as on a
    // device; the recorder reports the segment and starts the next one (after the pause it
    // makes after a failed segment).
    let first = phone.shell("pidof screenrecord");
    phone.shell("pkill -9 screenrecord");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = phone.shell("pidof screenrecord");
        if !now.trim().is_empty() && now != first {
            break;
        }
        assert!(Instant::now() < deadline, "no second segment started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    notes.extend(video.finish(phone.adb(), &session));
    let data = artifact(&notes, "video");
    assert_eq!(data["segments"], 2, "{data}");
    let error = data["error"].as_str().unwrap();
    assert!(
        error.contains("crawl_recording_001.mp4: not a finished MP4"),
        "{error}"
    );
    let paths = files(&session, &data);
    assert_eq!(paths.len(), 2);
    if let Some(second) = crate::media::ffprobe(&paths[1]) {
        assert_eq!(second.unwrap().codec, "h264");
        assert!(crate::media::ffprobe(&paths[0]).unwrap().is_err());
    }
    assert!(data["duration_seconds"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_device_gone_mid_recording_ends_in_notes() {
    let mut phone = Phone::new(json!({}));
    let session = phone.session();
    let mut video = Video::new(VideoConfig {
        segment_secs: 30,
        bit_rate: None,
        size: Some((180, 320)),
    });
    assert!(video.start(phone.adb(), &session).is_empty());
    std::thread::sleep(Duration::from_millis(300));
    drop(phone.sim.take());
    let notes = video.finish(phone.adb(), &session);
    let data = artifact(&notes, "video");
    assert!(
        data["error"].is_string() || !warnings(&notes).is_empty(),
        "{notes:#?}"
    );
    assert_eq!(data["size_bytes"], Value::Null, "nothing was pulled");
}

// ------------------------------------------------------------------------------------- PCAPdroid

fn pcap_config(key: Option<&str>) -> PcapConfig {
    PcapConfig {
        start_wait: Duration::from_millis(300),
        ..PcapConfig::new(TINY, key.map(Secret::new))
    }
}

#[test]
fn a_pcapdroid_capture_is_pulled_and_counted_as_tcpdump_counts_it() {
    let phone = Phone::new(json!({"pcapdroid": {"api_key": PCAPDROID_KEY}}));
    let session = phone.session();
    let mut capture = Pcap::new(pcap_config(Some(PCAPDROID_KEY)));
    capture.check(phone.adb()).unwrap();
    let mut notes = capture.start(phone.adb(), &session);
    assert!(warnings(&notes).is_empty(), "{notes:#?}");
    assert!(phone
        .adb()
        .shell(&format!("pidof {}", pcap::PACKAGE))
        .unwrap()
        .succeeded());
    std::thread::sleep(Duration::from_millis(1100));
    notes.extend(capture.tick(phone.adb()));
    notes.extend(capture.finish(phone.adb(), &session));
    assert!(warnings(&notes).is_empty(), "{notes:#?}");
    let data = artifact(&notes, "pcap");
    assert!(data.get("error").is_none(), "{data}");
    let file = &files(&session, &data)[0];
    assert!(file.ends_with("traffic_captures/session_capture.pcap"));
    assert_eq!(data["size_bytes"], std::fs::metadata(file).unwrap().len());
    let packets = data["packet_count"].as_u64().unwrap();
    assert!(
        packets >= 2 && packets.is_multiple_of(2),
        "a DNS query and answer a second: {data}"
    );
    assert_eq!(data["truncated"], false);
    if let Some(counted) = crate::media::tcpdump_count(file) {
        assert_eq!(counted, packets);
    }
    let text = serde_json::to_string(&notes).unwrap();
    assert!(!text.contains(PCAPDROID_KEY), "the key is in no note");
    assert!(phone
        .shell("ls /sdcard/Download/PCAPdroid")
        .trim()
        .is_empty());
}

#[test]
fn pcapdroid_missing_refusing_or_killed_mid_crawl_ends_in_notes() {
    // Not installed: unavailable, and a start anyway is a warning.
    let phone = Phone::new(json!({}));
    let mut capture = Pcap::new(pcap_config(None));
    let unavailable = capture.check(phone.adb()).unwrap_err();
    assert!(
        unavailable.reason.contains("not installed"),
        "{unavailable}"
    );
    let notes = capture.start(phone.adb(), &phone.session());
    assert!(warnings(&notes)[0].contains("Error type 3"), "{notes:#?}");
    assert!(capture.finish(phone.adb(), &phone.session()).is_empty());

    // Installed with a key the crawl does not have: PCAPdroid waits for consent, no file.
    let phone = Phone::new(json!({"pcapdroid": {"api_key": PCAPDROID_KEY}}));
    let mut capture = Pcap::new(pcap_config(None));
    capture.check(phone.adb()).unwrap();
    let notes = capture.start(phone.adb(), &phone.session());
    assert!(
        warnings(&notes)[0].contains("without an API key"),
        "{notes:#?}"
    );
    let notes = capture.finish(phone.adb(), &phone.session());
    let data = artifact(&notes, "pcap");
    assert!(
        data["error"].as_str().unwrap().contains("does not exist"),
        "{data}"
    );
    assert!(data.get("packet_count").is_none());

    // Killed mid-crawl: reported once, the capture so far kept, its cut record noticed.
    let mut capture = Pcap::new(pcap_config(Some(PCAPDROID_KEY)));
    let session = phone.session();
    assert!(capture.start(phone.adb(), &session).is_empty());
    std::thread::sleep(Duration::from_millis(1100));
    assert!(capture.tick(phone.adb()).is_empty());
    let pid = phone.shell(&format!("pidof {}", pcap::PACKAGE));
    phone.shell(&format!("kill {}", pid.trim()));
    let gone = capture.tick(phone.adb());
    assert!(
        warnings(&gone)[0].contains("stopped capturing"),
        "{gone:#?}"
    );
    assert!(capture.tick(phone.adb()).is_empty(), "reported once");
    let notes = capture.finish(phone.adb(), &session);
    let data = artifact(&notes, "pcap");
    assert_eq!(data["truncated"], true, "{data}");
    assert!(data["packet_count"].as_u64().unwrap() >= 1);
    assert!(data["error"].as_str().unwrap().contains("cut off"));
}

#[test]
fn a_device_gone_when_pcapdroid_starts_is_a_warning_without_the_key() {
    // The third device command (monkey, rm, am start) finds the device gone.
    let phone = Phone::with_faults(
        json!({"pcapdroid": {"api_key": PCAPDROID_KEY}}),
        vec![droid::sim::fault::Fault::DisconnectAfter {
            commands: 2,
            outage: Duration::from_millis(200),
        }],
    );
    let mut capture = Pcap::new(pcap_config(Some(PCAPDROID_KEY)));
    let notes = capture.start(phone.adb(), &phone.session());
    let said = warnings(&notes);
    assert!(said[0].contains("cannot start PCAPdroid"), "{notes:#?}");
    assert!(said[0].contains("<api key>"), "{said:?}");
    assert!(!serde_json::to_string(&notes)
        .unwrap()
        .contains(PCAPDROID_KEY));
}

#[test]
fn a_real_loopback_capture_by_tcpdump_is_counted() {
    if !require_tool("tcpdump", "tcpdump") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lo.pcap");
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = receiver.local_addr().unwrap().port();
    let mut tcpdump = Command::new("tcpdump")
        .args(["-i", "lo", "-n", "-U", "-c", "5", "-w"])
        .arg(&file)
        .args(["udp", "and", "port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // tcpdump says "listening on lo" once it captures; without the privilege it exits instead.
    let mut stderr = tcpdump.stderr.take().unwrap();
    let mut said = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&said).contains("listening on") {
        if stderr.read(&mut byte).unwrap_or(0) == 0 {
            let why = String::from_utf8_lossy(&said).into_owned();
            let _ = tcpdump.wait();
            assert!(
                std::env::var("DROID_REQUIRE_ADB").as_deref() != Ok("1"),
                "tcpdump cannot capture on lo here: {why}"
            );
            eprintln!("skipped: tcpdump cannot capture on lo (needs CAP_NET_RAW): {why}");
            return;
        }
        said.push(byte[0]);
    }
    let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    // Datagrams until tcpdump has its 5 (the first may go out before the filter is live).
    while tcpdump.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "tcpdump never saw 5 packets");
        sender
            .send_to(b"droid loopback probe", ("127.0.0.1", port))
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = pcap::read_capture_file(&file).unwrap();
    assert_eq!(
        (stats.packets, stats.truncated, stats.pcapng),
        (5, false, false)
    );
    assert_eq!(crate::media::tcpdump_count(&file), Some(5));
    // The same capture cut in the middle of its last record.
    let data = std::fs::read(&file).unwrap();
    let cut = pcap::read_capture(&data[..data.len() - 7]).unwrap();
    assert_eq!((cut.packets, cut.truncated), (4, true));
}

// ---------------------------------------------------------------------------------- activities

#[test]
fn declared_activities_come_from_the_pulled_apk_as_aapt_reads_it() {
    let phone = Phone::new(json!({"apk": {
        "extra_activities": [".SettingsActivity", "com.example.tiny.ui.HelpActivity"],
        "splits": ["config.arm64_v8a"]
    }}));
    let session = phone.session();
    let mut activities = Activities::new(TINY);
    activities.check(phone.adb()).unwrap();
    let notes = activities.start(phone.adb(), &session);
    let data = artifact(&notes, "activities");
    assert_eq!(data["split_apks"], json!(["split_config.arm64_v8a.apk"]));
    let declared: Vec<String> = serde_json::from_value(data["declared"].clone()).unwrap();
    assert_eq!(declared, activities.declared());
    let model = droid::sim::model::AppModel::load("builtin:tiny").unwrap();
    for screen in model.screens().iter().filter(|s| s.package == TINY) {
        assert!(
            declared.contains(&screen.activity),
            "{} declared",
            screen.activity
        );
    }
    assert!(declared.contains(&"com.example.tiny.SettingsActivity".to_string()));
    assert!(declared.contains(&"com.example.tiny.ui.HelpActivity".to_string()));
    // The pulled file is a real APK: Debian's aapt reads the same activities from it.
    let apk = &files(&session, &data)[0];
    assert!(apk.ends_with("extracted_apk/com.example.tiny.apk"));
    if let Some(reference) = crate::apk::aapt_elements(apk) {
        let names: Vec<String> = reference
            .iter()
            .filter(|l| l.name == "activity")
            .flat_map(|l| l.strings.clone())
            .filter(|(n, _)| n == "android:name")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(names, declared);
    }
    // Coverage: what the crawl showed against what the APK declares.
    activities.observe(&declared[0]);
    activities.observe("com.android.chrome.Main");
    assert_eq!(activities.unvisited(), declared[1..].to_vec());
    let data = artifact(&activities.finish(phone.adb(), &session), "activities");
    assert_eq!(data["visited"], json!([declared[0]]));
    assert_eq!(
        data["unvisited"].as_array().unwrap().len(),
        declared.len() - 1
    );

    let mut missing = Activities::new("com.example.absent");
    assert!(missing.check(phone.adb()).is_err());
    let notes = missing.start(phone.adb(), &session);
    assert!(
        warnings(&notes)[0].contains("cannot pull the APK"),
        "{notes:#?}"
    );
    assert!(missing.declared().is_empty() && missing.finish(phone.adb(), &session).is_empty());
}

#[test]
fn pm_path_outputs_of_real_devices_name_the_base_apk() {
    droid::fixtures_or_skip!();
    let dir = fixtures().join("device/cmd");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let (base, splits) =
        droid::integrations::activities::apk_paths(&read("pm_path_split_apks_api28_facebook.txt"))
            .unwrap();
    assert!(base.ends_with("com.facebook.katana-MmYxRVxicSrIj2RzmN0C5A==/base.apk"));
    assert_eq!(splits.len(), 3);
    let (base, splits) =
        droid::integrations::activities::apk_paths(&read("pm_path_split_apks_android11plus.txt"))
            .unwrap();
    assert!(base.ends_with("/base.apk") && splits[0].ends_with("split_config.arm64_v8a.apk"));
    let (base, splits) =
        droid::integrations::activities::apk_paths(&read("pm_path_system_app.txt")).unwrap();
    assert_eq!(
        (base.as_str(), splits.len()),
        ("/system/priv-app/TeleService/TeleService.apk", 0)
    );
}

// --------------------------------------------------------------------------------------- MobSF

/// A body from `providers/mobsf/`, provenance keys (`_source`, ...) removed.
fn mobsf_fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join("providers/mobsf").join(name)).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    if let Some(object) = value.as_object_mut() {
        object.retain(|key, _| !key.starts_with('_'));
    }
    value
}

fn mobsf_error(name: &str) -> (u16, Vec<u8>) {
    let error = &mobsf_fixture("errors.json")[name];
    let status = error["status"].as_u64().unwrap() as u16;
    let body = match &error["body"] {
        // The 405 body is empty: the fixture describes it in words.
        Value::String(_) => Vec::new(),
        body => body.to_string().into_bytes(),
    };
    (status, body)
}

/// A request the replay server received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    url: String,
    authorization: Option<String>,
    content_type: String,
    body: Vec<u8>,
}

type Reply = (u16, &'static str, Vec<u8>);
type Handler = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

/// A real HTTP server on 127.0.0.1 answering each request with `handler(request, its index)`.
struct Replay {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Replay {
    fn start(handler: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Replay {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let handler: Arc<Handler> = Arc::new(handler);
        std::thread::spawn(move || {
            for mut request in server.incoming_requests() {
                let mut body = Vec::new();
                let _ = request.as_reader().read_to_end(&mut body);
                let header = |name: &'static str| {
                    request
                        .headers()
                        .iter()
                        .find(|h| h.field.equiv(name))
                        .map(|h| h.value.to_string())
                };
                let seen = Seen {
                    method: request.method().to_string(),
                    url: request.url().to_string(),
                    authorization: header("Authorization"),
                    content_type: header("Content-Type").unwrap_or_default(),
                    body,
                };
                let index = {
                    let mut log = log.lock().unwrap();
                    log.push(seen.clone());
                    log.len() - 1
                };
                let (status, content_type, body) = handler(&seen, index);
                let response = tiny_http::Response::from_data(body)
                    .with_status_code(status)
                    .with_header(
                        tiny_http::Header::from_bytes("Content-Type", content_type).unwrap(),
                    );
                let _ = request.respond(response);
            }
        });
        Replay {
            url: format!("http://127.0.0.1:{port}"),
            seen,
        }
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// The smallest well-formed PDF: what `download_pdf` answers (MobSF renders a real report).
const PDF: &[u8] = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";

/// MobSF as its fixtures show it: the upload answer, a report embedding the scorecard under
/// `appsec` (where report_json and a synchronous scan carry it), a PDF; `fail` replaces one
/// endpoint's answer by an error body of `errors.json`.
fn mobsf_server(fail: Option<(&'static str, &'static str)>) -> Replay {
    let upload = mobsf_fixture("upload_response_real.json");
    let hash = upload["hash"].as_str().unwrap().to_string();
    let card = mobsf_fixture("scorecard_response_shape.json");
    let report = json!({"file_name": upload["file_name"], "hash": hash, "appsec": card});
    Replay::start(move |seen, _| {
        let endpoint = seen.url.trim_start_matches("/api/v1/");
        if seen.authorization.as_deref() != Some(MOBSF_KEY) {
            let (status, body) = mobsf_error("401_bad_or_missing_key");
            return (status, "application/json", body);
        }
        if let Some((failing, error)) = fail {
            if endpoint == failing {
                let (status, body) = mobsf_error(error);
                return (status, "application/json", body);
            }
        }
        let json = |v: &Value| (200, "application/json", v.to_string().into_bytes());
        let form_hash = String::from_utf8_lossy(&seen.body).contains(&format!("hash={hash}"));
        match (seen.method.as_str(), endpoint) {
            ("GET", "scans") => json(&json!({"content": [], "count": 0, "num_pages": 0})),
            ("POST", "upload") => json(&upload),
            ("POST", "scan" | "report_json") if form_hash => json(&report),
            ("POST", "scorecard") if form_hash => json(&card),
            ("POST", "download_pdf") if form_hash => (200, "application/pdf", PDF.to_vec()),
            ("POST", _) => {
                let (status, body) = mobsf_error("500_scan_bad_md5");
                (status, "application/json", body)
            }
            _ => (405, "text/html", Vec::new()),
        }
    })
}

fn mobsf_for(server: &Replay, key: &str) -> Mobsf {
    Mobsf::new(MobsfConfig {
        scan_timeout: Duration::from_secs(5),
        poll: Duration::from_millis(50),
        ..MobsfConfig::new(&server.url, Secret::new(key))
    })
}

#[test]
fn mobsf_scans_the_crawled_apk_and_saves_both_reports() {
    droid::fixtures_or_skip!();
    let phone = Phone::new(json!({"apk": {"splits": ["config.xxhdpi"]}}));
    let session = phone.session();
    let server = mobsf_server(None);
    let mobsf = mobsf_for(&server, MOBSF_KEY);
    mobsf.check().unwrap();
    let notes = mobsf::scan_session(&mobsf, &session, TINY, Some(phone.adb()));
    assert!(warnings(&notes)[0].contains("split APKs"), "{notes:#?}");
    let data = artifact(&notes, "mobsf");
    assert!(data.get("error").is_none(), "{data}");
    // The fixture's scorecard: one high, one warning (medium), one info (low), score 52.
    assert_eq!(data["security_score"], 52.0);
    assert_eq!(
        (
            &data["high_issues"],
            &data["medium_issues"],
            &data["low_issues"]
        ),
        (&json!(1), &json!(1), &json!(1))
    );
    assert_eq!(data["apk"], "extracted_apk/com.example.tiny.apk");
    let paths = files(&session, &data);
    assert!(paths[0].ends_with("mobsf_scan_results/com.example.tiny_security_report.json"));
    assert!(paths[1].ends_with("mobsf_scan_results/com.example.tiny_security_report.pdf"));
    let report: Value = serde_json::from_slice(&std::fs::read(&paths[0]).unwrap()).unwrap();
    assert_eq!(report["appsec"]["security_score"], 52);
    assert_eq!(std::fs::read(&paths[1]).unwrap(), PDF);
    // What MobSF received: the raw key in Authorization, the APK as multipart field "file".
    let requests = server.requests();
    assert!(requests
        .iter()
        .all(|r| r.authorization.as_deref() == Some(MOBSF_KEY)));
    let upload = requests.iter().find(|r| r.url == "/api/v1/upload").unwrap();
    assert!(upload
        .content_type
        .starts_with("multipart/form-data; boundary="));
    let apk = std::fs::read(session.root().join("extracted_apk/com.example.tiny.apk")).unwrap();
    let body = &upload.body;
    assert!(
        body.windows(apk.len()).any(|w| w == apk.as_slice()),
        "the APK bytes"
    );
    assert!(String::from_utf8_lossy(body).contains(
        "Content-Disposition: form-data; name=\"file\"; filename=\"com.example.tiny.apk\""
    ));
    let scan = requests.iter().find(|r| r.url == "/api/v1/scan").unwrap();
    assert_eq!(scan.content_type, "application/x-www-form-urlencoded");
    assert!(!serde_json::to_string(&notes).unwrap().contains(MOBSF_KEY));

    // A past run: the APK saved in the session folder is enough, no device needed.
    let again = mobsf::scan_session(&mobsf, &session, TINY, None);
    assert_eq!(artifact(&again, "mobsf")["security_score"], 52.0);
    let empty = SessionDir::new(phone.dir.path().join("elsewhere"));
    let data = artifact(&mobsf::scan_session(&mobsf, &empty, TINY, None), "mobsf");
    assert!(
        data["error"].as_str().unwrap().contains("no device"),
        "{data}"
    );
}

#[test]
fn mobsf_error_bodies_end_in_notes_that_say_what_mobsf_said() {
    droid::fixtures_or_skip!();
    let phone = Phone::new(json!({}));
    let session = phone.session();
    let apk = droid::integrations::activities::pull_apk(phone.adb(), TINY, &session)
        .unwrap()
        .path;
    // A wrong key: unavailable before the crawl, and an analysis that says so.
    let server = mobsf_server(None);
    let wrong = mobsf_for(&server, "not-the-key");
    let mut integration = MobsfIntegration::new(
        MobsfConfig::new(&server.url, Secret::new("not-the-key")),
        TINY,
    );
    let unavailable = integration.check(phone.adb()).unwrap_err();
    assert!(
        unavailable.reason.contains("refused the API key"),
        "{unavailable}"
    );
    let data = artifact(&[wrong.analyse(&apk, TINY, &session)], "mobsf");
    assert!(
        data["error"]
            .as_str()
            .unwrap()
            .contains("HTTP 401 on upload"),
        "{data}"
    );
    assert!(!data.to_string().contains("not-the-key"));

    for (endpoint, error, said, figures) in [
        (
            "upload",
            "400_upload_bad_type",
            "HTTP 400: File format not Supported!",
            false,
        ),
        (
            "scan",
            "500_scan_bad_md5",
            "HTTP 500: Invalid Checksum",
            false,
        ),
        (
            "scan",
            "500_scan_not_uploaded",
            "The file is not uploaded/available",
            false,
        ),
        (
            "report_json",
            "500_report_json_bad_md5",
            "HTTP 500: Invalid Hash",
            false,
        ),
        (
            "download_pdf",
            "500_download_pdf_fail",
            "PDF Generation Error",
            true,
        ),
        ("scan", "405_wrong_method", "HTTP 405: (empty body)", false),
    ] {
        let server = mobsf_server(Some((endpoint, error)));
        let note = mobsf_for(&server, MOBSF_KEY).analyse(&apk, TINY, &session);
        let data = artifact(&[note], "mobsf");
        let text = data["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{error}: {data}"));
        assert!(text.contains(said), "{error}: {text}");
        assert_eq!(
            data["security_score"].is_number(),
            figures,
            "{error}: {data}"
        );
    }

    // An analysis queued (MOBSF_ASYNC_ANALYSIS=1): the report appears after two polls.
    let polls = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&polls);
    let inner = mobsf_server(None);
    let inner_url = inner.url.clone();
    let agent = ureq::agent();
    let server = Replay::start(move |seen, _| {
        let endpoint = seen.url.trim_start_matches("/api/v1/");
        if endpoint == "scan" {
            return (
                200,
                "application/json",
                mobsf_fixture("scan_async_queued_response.json")
                    .to_string()
                    .into_bytes(),
            );
        }
        if endpoint == "report_json" {
            let mut polls = counted.lock().unwrap();
            *polls += 1;
            if *polls <= 2 {
                let (status, body) = mobsf_error("404_report_json_not_found");
                return (status, "application/json", body);
            }
        }
        // Everything else as the synchronous server answers it.
        let answer = agent
            .request(&seen.method, &format!("{inner_url}{}", seen.url))
            .set("Authorization", seen.authorization.as_deref().unwrap_or(""))
            .set("Content-Type", &seen.content_type)
            .send_bytes(&seen.body);
        let response = match answer {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{e}"),
        };
        let status = response.status();
        let content_type = if response.content_type() == "application/pdf" {
            "application/pdf"
        } else {
            "application/json"
        };
        let mut body = Vec::new();
        response.into_reader().read_to_end(&mut body).unwrap();
        (status, content_type, body)
    });
    let note = mobsf_for(&server, MOBSF_KEY).analyse(&apk, TINY, &session);
    assert_eq!(artifact(&[note], "mobsf")["security_score"], 52.0);
    assert_eq!(*polls.lock().unwrap(), 3);

    // Nothing listening: unavailable, and an analysis note, no panic.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let gone = Mobsf::new(MobsfConfig::new(&url, Secret::new(MOBSF_KEY)));
    assert!(gone
        .check()
        .unwrap_err()
        .to_string()
        .contains("not reachable"));
    let data = artifact(&[gone.analyse(&apk, TINY, &session)], "mobsf");
    assert!(data["error"].as_str().unwrap().contains("not reachable"));
}

// ------------------------------------------------------------------------------ a whole crawl

/// droid-crawl's run in `dir` on `model` with `args`: its events, stderr and exit code.
fn crawl_in(
    dir: &std::path::Path,
    model: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Vec<Value>, String, Option<i32>) {
    let output = crate::common::droid("droid-crawl")
        .args(["--sim", model, "--pause-ms", "0", "--report", "json,html"])
        .args(["--db", &dir.join("crawler.db").display().to_string()])
        .args(["--out", &dir.join("out").display().to_string()])
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let events = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        events,
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code(),
    )
}

fn noted<'e>(events: &'e [Value], kind: &str, name: &str) -> Vec<&'e Value> {
    events
        .iter()
        .filter(|e| e["type"] == "note" && e["kind"] == kind)
        .filter(|e| e["data"]["artifact"] == name || e["data"]["integration"] == name)
        .collect()
}

fn run_stats(db: &std::path::Path) -> Value {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT json_object('video_file_size_bytes', video_file_size_bytes,
           'video_duration_seconds', video_duration_seconds,
           'pcap_file_size_bytes', pcap_file_size_bytes, 'pcap_packet_count', pcap_packet_count,
           'mobsf_security_score', mobsf_security_score, 'mobsf_high_issues', mobsf_high_issues,
           'mobsf_medium_issues', mobsf_medium_issues, 'mobsf_low_issues', mobsf_low_issues,
           'unique_activities_visited', unique_activities_visited) FROM run_stats",
        [],
        |r| r.get::<_, String>(0),
    )
    .map(|text| serde_json::from_str(&text).unwrap())
    .unwrap()
}

/// Every file under `dir`, read.
fn all_bytes(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(all_bytes(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

#[test]
fn a_crawl_with_every_integration_fills_run_stats_and_the_reports() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let model = model_with(
        dir.path(),
        "tiny",
        json!({
            "pcapdroid": {"api_key": PCAPDROID_KEY},
            "apk": {"extra_activities": [".NeverShownActivity"]}
        }),
    );
    let server = mobsf_server(None);
    let (events, stderr, code) = crawl_in(
        dir.path(),
        &model,
        &[
            "--max-steps",
            "8",
            "--video",
            "--video-segment",
            "2",
            "--pcap",
            "--mobsf",
            &server.url,
        ],
        &[
            ("MOBSF_API_KEY", MOBSF_KEY),
            ("PCAPDROID_API_KEY", PCAPDROID_KEY),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let warned: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "note" && e["kind"] == "warning")
        .collect();
    assert!(warned.is_empty(), "{warned:#?}");
    let last = |name: &str| noted(&events, "artifact", name).last().copied().cloned();
    let video = last("video").expect("a video note");
    let capture = last("pcap").expect("a pcap note");
    let security = last("mobsf").expect("a mobsf note");
    let coverage = last("activities").expect("an activities note");
    for data in [&video, &capture, &security, &coverage] {
        assert!(data["data"].get("error").is_none(), "{data}");
    }
    // Every observation offers the declared activities not shown yet.
    let observed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "observation")
        .collect();
    assert!(observed.iter().all(|o| o["unvisited_activities"]
        .as_array()
        .unwrap()
        .contains(&json!("com.example.tiny.NeverShownActivity"))));

    let db = dir.path().join("crawler.db");
    let stats = run_stats(&db);
    assert_eq!(stats["video_file_size_bytes"], video["data"]["size_bytes"]);
    assert_eq!(
        stats["video_duration_seconds"],
        video["data"]["duration_seconds"]
    );
    assert!(stats["video_duration_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(stats["pcap_file_size_bytes"], capture["data"]["size_bytes"]);
    assert_eq!(stats["pcap_packet_count"], capture["data"]["packet_count"]);
    assert_eq!(stats["mobsf_security_score"], 52.0);
    assert_eq!(
        (
            &stats["mobsf_high_issues"],
            &stats["mobsf_medium_issues"],
            &stats["mobsf_low_issues"]
        ),
        (&json!(1), &json!(1), &json!(1))
    );
    // Activities the crawl showed that the APK declares: the launcher's do not count.
    let visited = coverage["data"]["visited"].as_array().unwrap().len();
    let shown: std::collections::BTreeSet<&str> = observed
        .iter()
        .filter_map(|o| o["activity"].as_str())
        .filter(|a| a.starts_with(TINY))
        .collect();
    assert_eq!(visited, shown.len());
    assert_eq!(stats["unique_activities_visited"], visited);
    assert!(coverage["data"]["unvisited"]
        .as_array()
        .unwrap()
        .contains(&json!("com.example.tiny.NeverShownActivity")));

    // The reports carry the figures and list the files.
    let session = std::path::PathBuf::from(events.last().unwrap()["session_dir"].as_str().unwrap());
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join("report.json")).unwrap())
            .unwrap();
    let text = report.to_string();
    for figure in [
        "mobsf_security_score",
        "pcap_packet_count",
        "video_duration_seconds",
    ] {
        assert!(text.contains(figure), "{figure} in report.json");
    }
    let artifacts = &report["artifacts"];
    assert!(
        !artifacts["video"].as_array().unwrap().is_empty(),
        "{artifacts}"
    );
    assert_eq!(
        artifacts["pcap"].as_array().unwrap().len(),
        1,
        "{artifacts}"
    );
    assert_eq!(
        artifacts["mobsf"].as_array().unwrap().len(),
        2,
        "{artifacts}"
    );
    let html = std::fs::read_to_string(session.join("report.html")).unwrap();
    assert!(html.contains("session_capture.pcap") && html.contains("crawl_recording"));
    assert!(
        stderr.contains("traffic_captures/session_capture.pcap"),
        "{stderr}"
    );

    // The keys are nowhere: not in events, logs, reports, crawler.db or its write-ahead log.
    for key in [MOBSF_KEY, PCAPDROID_KEY] {
        assert!(!stderr.contains(key));
        // (The model, the simulated phone's own settings, holds PCAPdroid's key.)
        let written = all_bytes(dir.path())
            .into_iter()
            .filter(|(path, _)| path != std::path::Path::new(&model));
        for (path, bytes) in written {
            assert!(
                !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
                "{key} in {}",
                path.display()
            );
        }
    }
}

#[test]
fn integrations_that_cannot_work_are_warnings_and_the_crawl_goes_on() {
    // No PCAPdroid on the device, MobSF without a key, MobSF unreachable.
    let dir = tempfile::tempdir().unwrap();
    let (events, stderr, code) = crawl_in(
        dir.path(),
        "builtin:tiny",
        &["--max-steps", "4", "--pcap", "--mobsf"],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(events.last().unwrap()["status"], "COMPLETED");
    let pcap = noted(&events, "warning", "pcap");
    assert!(pcap[0]["message"]
        .as_str()
        .unwrap()
        .contains("not installed"));
    let mobsf = noted(&events, "warning", "mobsf");
    assert!(mobsf[0]["message"].as_str().unwrap().contains("no API key"));
    assert!(stderr.contains("pcap: PCAPdroid") && stderr.contains("mobsf: no API key"));
    assert!(noted(&events, "artifact", "pcap").is_empty());

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let (events, stderr, code) = crawl_in(
        dir.path(),
        "builtin:tiny",
        &["--max-steps", "3", "--mobsf", &url],
        &[("MOBSF_API_KEY", MOBSF_KEY)],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(noted(&events, "warning", "mobsf").len(), 1, "{stderr}");
    assert!(noted(&events, "artifact", "mobsf").is_empty());
}

#[test]
fn a_past_run_is_analysed_by_mobsf_and_its_figures_join_the_run() {
    droid::fixtures_or_skip!();
    let dir = tempfile::tempdir().unwrap();
    let (events, stderr, code) = crawl_in(dir.path(), "builtin:tiny", &["--max-steps", "3"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let run = events.last().unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let db = dir.path().join("crawler.db").display().to_string();
    let analyse = |url: &str, key: &str| {
        crate::common::droid("droid-crawl")
            .args(["mobsf", "--run", &run, "--db", &db, "--url", url])
            .env("MOBSF_API_KEY", key)
            .output()
            .unwrap()
    };

    // The key is refused: a clear error, nothing recorded.
    let server = mobsf_server(None);
    let refused = analyse(&server.url, "not-the-key");
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("refused the API key"), "{said}");
    assert!(run_stats(std::path::Path::new(&db))["mobsf_security_score"].is_null());

    // The APK the crawl saved is analysed without a device (the simulator is gone).
    let done = analyse(&server.url, MOBSF_KEY);
    let said = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("droid-report {run}")), "{said}");
    let stats = run_stats(std::path::Path::new(&db));
    assert_eq!(stats["mobsf_security_score"], 52.0);
    let session = std::path::PathBuf::from(events.last().unwrap()["session_dir"].as_str().unwrap());
    let logged = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    assert!(logged
        .lines()
        .last()
        .unwrap()
        .contains("\"artifact\":\"mobsf\""));
    assert!(!logged.contains(MOBSF_KEY));
}

#[test]
fn a_recording_cut_by_a_device_that_blinks_is_a_warning_and_the_crawl_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (events, stderr, code) = crawl_in(
        dir.path(),
        "builtin:tiny",
        &[
            "--max-steps",
            "10",
            "--video",
            "--sim-fault",
            "disconnect-after:40:1",
            "--wait-for-device",
            "10",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(events.last().unwrap()["status"], "COMPLETED");
    let cut = noted(&events, "warning", "video");
    assert!(!cut.is_empty(), "{stderr}");
    assert!(cut[0]["message"]
        .as_str()
        .unwrap()
        .contains("segment 1 failed"));
    // What was recorded before and after the cut is still pulled and measured.
    let video = noted(&events, "artifact", "video");
    let data = &video.last().unwrap()["data"];
    assert!(data["segments"].as_u64().unwrap() >= 2, "{data}");
    assert!(data["size_bytes"].as_u64().unwrap() > 0, "{data}");
}
