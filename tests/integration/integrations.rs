//! The crawl integrations end to end against droid-sim (video, PCAPdroid, declared activities)
//! and a real HTTP server on 127.0.0.1 replaying MobSF's bodies, failure paths included; and a
//! short crawl with all four whose notes land in `run_stats` under the reference's names.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use droid::adb::AdbClient;
use droid::device::{AdbDevice, DeviceConfig};
use droid::events::{Event, Note, NoteKind};
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
    // SIGKILL: the segment's MP4 never gets its moov atom; the next segment starts at once.
    phone.shell("pkill -9 screenrecord");
    std::thread::sleep(Duration::from_millis(600));
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

#[test]
fn a_crawl_with_every_integration_fills_run_stats_under_the_reference_names() {
    use droid::capture::device::DeviceOptions;
    use droid::decide::Decider;
    use droid::explore::Explorer;
    use droid::store::Store;

    let phone = Phone::new(json!({
        "pcapdroid": {"api_key": PCAPDROID_KEY},
        "apk": {"extra_activities": [".NeverShownActivity"]}
    }));
    let session = phone.session();
    let server = mobsf_server(None);
    let mut integrations: Vec<Box<dyn Integration>> = vec![
        Box::new(Activities::new(TINY)),
        Box::new(Video::new(VideoConfig {
            segment_secs: 2,
            bit_rate: None,
            size: Some((360, 640)),
        })),
        Box::new(Pcap::new(pcap_config(Some(PCAPDROID_KEY)))),
        Box::new(MobsfIntegration::new(
            MobsfConfig::new(&server.url, Secret::new(MOBSF_KEY)),
            TINY,
        )),
    ];
    let mut notes = Vec::new();
    for integration in &mut integrations {
        integration.check(phone.adb()).unwrap();
        notes.extend(integration.start(phone.adb(), &session));
    }
    let capture = DeviceOptions {
        out_dir: session.root().join("screenshots"),
        screenshot: true,
        concurrent: true,
        run_id: Some("r1".into()),
        step: None,
        step_names: false,
    };
    let explorer = Explorer::new(&phone.device, capture, crate::explore::quick_act()).unwrap();
    let mut stage = crate::explore::stage_for("builtin:tiny", Decider::Heuristic, 0, Vec::new());
    let mut events = vec![Event::RunStarted(droid::events::RunStarted {
        run_id: "r1".into(),
        package: Some(TINY.into()),
        session_dir: Some(session.root().display().to_string()),
        ..Default::default()
    })];
    let mut activities_seen = std::collections::BTreeSet::new();
    for step in 1..=8 {
        let taken = explorer.step(step, &mut stage).unwrap();
        if let Some(activity) = &taken.observation.activity {
            activities_seen.insert(activity.clone());
        }
        events.extend(taken.events());
        for integration in &mut integrations {
            integration.observed(&taken.observation);
            notes.extend(integration.tick(phone.adb()));
        }
    }
    for integration in &mut integrations {
        notes.extend(integration.finish(phone.adb(), &session));
    }
    assert!(warnings(&notes).is_empty(), "{notes:#?}");
    let video = artifact(&notes, "video");
    let capture = artifact(&notes, "pcap");
    let security = artifact(&notes, "mobsf");
    let declared = artifact(&notes, "activities");
    for data in [&video, &capture, &security, &declared] {
        assert!(data.get("error").is_none(), "{data}");
    }
    events.extend(notes.into_iter().map(|mut note| {
        note.run_id = Some("r1".into());
        Event::Note(note)
    }));

    let db = phone.dir.path().join("crawler.db");
    let store = Store::open(&db).unwrap();
    let mut ingest = store.ingest();
    for event in events.clone() {
        ingest.push_event(event).unwrap();
    }
    ingest.finish().unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let stats: Value = conn
        .query_row(
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
        .unwrap();
    assert_eq!(stats["video_file_size_bytes"], video["size_bytes"]);
    assert_eq!(stats["video_duration_seconds"], video["duration_seconds"]);
    assert!(stats["video_duration_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(stats["pcap_file_size_bytes"], capture["size_bytes"]);
    assert_eq!(stats["pcap_packet_count"], capture["packet_count"]);
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
    let declared: Vec<String> = serde_json::from_value(declared["declared"].clone()).unwrap();
    let visited = activities_seen
        .iter()
        .filter(|a| declared.contains(a))
        .count();
    assert!(
        visited >= 1 && visited < declared.len(),
        "{activities_seen:?} of {declared:?}"
    );
    assert_eq!(stats["unique_activities_visited"], visited);
    let coverage = artifact(
        &events
            .iter()
            .filter_map(|e| match e {
                Event::Note(note) => Some(note.clone()),
                _ => None,
            })
            .collect::<Vec<_>>(),
        "activities",
    );
    assert_eq!(coverage["visited"].as_array().unwrap().len(), visited);
    assert!(coverage["unvisited"]
        .as_array()
        .unwrap()
        .contains(&json!("com.example.tiny.NeverShownActivity")));
    // The keys are nowhere in the database (nor in its write-ahead log).
    drop(store);
    let mut bytes = std::fs::read(&db).unwrap();
    bytes.extend(std::fs::read(db.with_extension("db-wal")).unwrap_or_default());
    for key in [MOBSF_KEY, PCAPDROID_KEY] {
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "{key} in crawler.db"
        );
    }
}
