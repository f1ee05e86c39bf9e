//! Static analysis of the app's APK by a MobSF server (REST API v1), after the crawl or for a
//! past run's session folder.
//!
//! The flow, as MobSF documents its API: `POST /api/v1/upload` (multipart, field `file`) gives
//! the APK's hash; `POST /api/v1/scan` (form field `hash`) analyses it, synchronously unless the
//! server runs with `MOBSF_ASYNC_ANALYSIS=1` (then it answers `task_id` and the report appears
//! later); `POST /api/v1/report_json` and `POST /api/v1/download_pdf` give the reports, saved to
//! `mobsf_scan_results/{package}_security_report.json` and `.pdf`. The figures come from the
//! report's `appsec` scorecard (or `POST /api/v1/scorecard`): `security_score`, and the lengths
//! of its `high`, `warning` and `info` lists, which `run_stats` keeps as `mobsf_high_issues`,
//! `mobsf_medium_issues` and `mobsf_low_issues` (MobSF's warning is medium, its info low).
//!
//! Every request carries the API key in the `Authorization` header (the raw key, MobSF's own
//! convention); the key is in no URL, no note, no error message.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::activities::{self, PulledApk};
use super::{artifact_note, chain, warning_note, Integration, SessionDir, Unavailable};
use crate::adb::AdbClient;
use crate::events::Note;
use crate::secret::Secret;

/// The integration's name, the `data.artifact` of its notes.
pub const NAME: &str = "mobsf";
/// Where reports go in the session folder.
pub const FOLDER: &str = "mobsf_scan_results";
/// MobSF's port when it runs from its Docker image.
pub const DEFAULT_URL: &str = "http://localhost:8000";
/// At most this much of an error body reaches a message.
const MAX_MESSAGE: usize = 300;

/// Where MobSF is and how long to wait for it.
#[derive(Debug, Clone)]
pub struct MobsfConfig {
    /// `http://host:8000`, without `/api/v1`.
    pub url: String,
    pub api_key: Secret,
    /// Each request but the scan.
    pub timeout: Duration,
    /// The analysis: synchronous scans of large APKs take minutes.
    pub scan_timeout: Duration,
    /// How often a queued analysis is asked for its report.
    pub poll: Duration,
}

impl MobsfConfig {
    pub fn new(url: impl Into<String>, api_key: Secret) -> MobsfConfig {
        MobsfConfig {
            url: url.into().trim_end_matches('/').to_string(),
            api_key,
            timeout: Duration::from_secs(60),
            scan_timeout: Duration::from_secs(900),
            poll: Duration::from_secs(2),
        }
    }
}

/// What went wrong talking to MobSF.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MobsfError {
    #[error("MobSF not reachable at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("MobSF refused the API key (HTTP 401 on {endpoint})")]
    Unauthorized { endpoint: String },
    #[error("MobSF {endpoint} answered HTTP {status}: {message}")]
    Api {
        endpoint: String,
        status: u16,
        message: String,
    },
    #[error("MobSF {endpoint} answered something unexpected: {detail}")]
    Unexpected { endpoint: String, detail: String },
    #[error("the analysis did not finish within {} s", .after.as_secs())]
    ScanTimeout { after: Duration },
    #[error("{0}")]
    Apk(String),
}

/// The figures `run_stats` keeps, from a MobSF scorecard.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scorecard {
    pub security_score: Option<f64>,
    pub high: u64,
    /// MobSF's `warning`.
    pub medium: u64,
    /// MobSF's `info`.
    pub low: u64,
}

impl Scorecard {
    /// Reads an `appsec` scorecard object (its lists counted), if it is one.
    pub fn from_json(card: &Value) -> Option<Scorecard> {
        let count = |key: &str| {
            card.get(key)
                .and_then(Value::as_array)
                .map(|a| a.len() as u64)
        };
        let score = card.get("security_score").and_then(Value::as_f64);
        if score.is_none() && count("high").is_none() {
            return None;
        }
        Some(Scorecard {
            security_score: score,
            high: count("high").unwrap_or(0),
            medium: count("warning").unwrap_or(0),
            low: count("info").unwrap_or(0),
        })
    }
}

/// An HTTP answer: status, body bytes.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// MobSF's words in an error body: `error`, or the `report` / `not_found` keys its not-found
/// answers use, else the body itself (cut short); `(empty body)` for none (a 405).
fn error_message(body: &[u8]) -> String {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let said = json.as_ref().and_then(|v| {
        ["error", "report", "not_found", "message"]
            .iter()
            .find_map(|k| v.get(*k).and_then(Value::as_str).map(str::to_string))
    });
    let text = said.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    if text.is_empty() {
        return "(empty body)".to_string();
    }
    let mut cut: String = text.chars().take(MAX_MESSAGE).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// A MobSF server.
pub struct Mobsf {
    config: MobsfConfig,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Mobsf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mobsf")
            .field("url", &self.config.url)
            .finish()
    }
}

impl Mobsf {
    pub fn new(config: MobsfConfig) -> Mobsf {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(10))
            .build();
        Mobsf { config, agent }
    }

    fn url(&self, endpoint: &str) -> String {
        format!("{}/api/v1/{endpoint}", self.config.url)
    }

    /// One request; non-2xx statuses come back as answers, transport failures as errors.
    fn send(
        &self,
        endpoint: &str,
        timeout: Duration,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<Answer, MobsfError> {
        let method = if body.is_some() { "POST" } else { "GET" };
        let request = self
            .agent
            .request(method, &self.url(endpoint))
            .timeout(timeout)
            .set("Authorization", self.config.api_key.expose());
        let response = match body {
            Some((content_type, bytes)) => {
                request.set("Content-Type", content_type).send_bytes(&bytes)
            }
            None => request.call(),
        };
        let response = match response {
            Ok(response) | Err(ureq::Error::Status(_, response)) => response,
            Err(ureq::Error::Transport(transport)) => {
                return Err(MobsfError::Unreachable {
                    url: self.config.url.clone(),
                    detail: transport_detail(&transport),
                })
            }
        };
        let status = response.status();
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut response.into_reader(), &mut body).map_err(|e| {
            MobsfError::Unreachable {
                url: self.config.url.clone(),
                detail: e.to_string(),
            }
        })?;
        match status {
            200..=299 => Ok(Answer { status, body }),
            401 => Err(MobsfError::Unauthorized {
                endpoint: endpoint.to_string(),
            }),
            _ => Ok(Answer { status, body }),
        }
    }

    /// `POST endpoint` with form fields.
    fn form(
        &self,
        endpoint: &str,
        fields: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Answer, MobsfError> {
        let body = fields
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    percent_encoding::utf8_percent_encode(k, percent_encoding::NON_ALPHANUMERIC),
                    percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)
                )
            })
            .collect::<Vec<_>>()
            .join("&");
        self.send(
            endpoint,
            timeout,
            Some(("application/x-www-form-urlencoded", body.into_bytes())),
        )
    }

    fn failed(endpoint: &str, answer: &Answer) -> MobsfError {
        MobsfError::Api {
            endpoint: endpoint.to_string(),
            status: answer.status,
            message: error_message(&answer.body),
        }
    }

    /// A 2xx JSON object, or the error the answer says.
    fn json_ok(endpoint: &str, answer: Answer) -> Result<Value, MobsfError> {
        if !(200..300).contains(&answer.status) {
            return Err(Self::failed(endpoint, &answer));
        }
        answer
            .json()
            .filter(Value::is_object)
            .ok_or_else(|| MobsfError::Unexpected {
                endpoint: endpoint.to_string(),
                detail: format!("not a JSON object: {}", error_message(&answer.body)),
            })
    }

    /// Pre-crawl validation: the server answers and takes the key (`GET /api/v1/scans`).
    pub fn check(&self) -> Result<(), MobsfError> {
        let answer = self.send("scans", self.config.timeout, None)?;
        if (200..300).contains(&answer.status) {
            Ok(())
        } else {
            Err(Self::failed("scans", &answer))
        }
    }

    /// Uploads an APK; its MobSF hash.
    pub fn upload(&self, apk: &Path) -> Result<String, MobsfError> {
        let data =
            std::fs::read(apk).map_err(|e| MobsfError::Apk(format!("{}: {e}", apk.display())))?;
        let name = apk
            .file_name()
            .map(|n| n.to_string_lossy().replace(['"', '\r', '\n'], "_"))
            .unwrap_or_else(|| "app.apk".into());
        let boundary = format!("droid-{:016x}", rand::random::<u64>());
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(&data);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let answer = self.send("upload", self.config.timeout, Some((&content_type, body)))?;
        let json = Self::json_ok("upload", answer)?;
        json.get("hash")
            .and_then(Value::as_str)
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .ok_or_else(|| MobsfError::Unexpected {
                endpoint: "upload".into(),
                detail: "no hash in the answer".into(),
            })
    }

    /// Runs the analysis and returns the JSON report (waiting for a queued analysis).
    pub fn scan(&self, hash: &str) -> Result<Value, MobsfError> {
        let started = Instant::now();
        let answer = self.form(
            "scan",
            &[("hash", hash), ("re_scan", "0")],
            self.config.scan_timeout,
        )?;
        Self::json_ok("scan", answer)?;
        loop {
            let answer = self.form("report_json", &[("hash", hash)], self.config.timeout)?;
            // A queued analysis has no report yet: 404 {"report": "Report not Found"}.
            if answer.status == 404 && started.elapsed() < self.config.scan_timeout {
                let left = self.config.scan_timeout.saturating_sub(started.elapsed());
                std::thread::sleep(self.config.poll.min(left));
                continue;
            }
            if answer.status == 404 {
                return Err(MobsfError::ScanTimeout {
                    after: self.config.scan_timeout,
                });
            }
            return Self::json_ok("report_json", answer);
        }
    }

    /// `POST /api/v1/scorecard`.
    pub fn scorecard(&self, hash: &str) -> Result<Scorecard, MobsfError> {
        let answer = self.form("scorecard", &[("hash", hash)], self.config.timeout)?;
        let json = Self::json_ok("scorecard", answer)?;
        Scorecard::from_json(&json).ok_or_else(|| MobsfError::Unexpected {
            endpoint: "scorecard".into(),
            detail: "no security_score or high list".into(),
        })
    }

    /// `POST /api/v1/download_pdf`: the PDF report.
    pub fn pdf(&self, hash: &str) -> Result<Vec<u8>, MobsfError> {
        let answer = self.form("download_pdf", &[("hash", hash)], self.config.scan_timeout)?;
        if !(200..300).contains(&answer.status) {
            return Err(Self::failed("download_pdf", &answer));
        }
        if !answer.body.starts_with(b"%PDF") {
            return Err(MobsfError::Unexpected {
                endpoint: "download_pdf".into(),
                detail: "the answer is not a PDF".into(),
            });
        }
        Ok(answer.body)
    }

    /// Uploads, scans and saves the reports of `apk` into the session folder; the `artifact`
    /// note saying what came of it (with `data.error` when something failed).
    pub fn analyse(&self, apk: &Path, package: &str, session: &SessionDir) -> Note {
        let apk_file = session.relative(apk);
        let failed = |stage: &str, err: &dyn std::error::Error, files: &[String]| {
            artifact_note(
                NAME,
                format!("MobSF analysis of {apk_file} failed at {stage}"),
                json!({"apk": apk_file, "files": files, "error": chain(err)}),
            )
        };
        let hash = match self.upload(apk) {
            Ok(hash) => hash,
            Err(err) => return failed("upload", &err, &[]),
        };
        let report = match self.scan(&hash) {
            Ok(report) => report,
            Err(err) => return failed("scan", &err, &[]),
        };
        let mut files = Vec::new();
        let mut errors = Vec::new();
        let pretty = serde_json::to_vec_pretty(&report).unwrap_or_default();
        match session.write(FOLDER, &format!("{package}_security_report.json"), &pretty) {
            Ok(path) => files.push(session.relative(&path)),
            Err(err) => errors.push(chain(&err)),
        }
        match self.pdf(&hash) {
            Ok(pdf) => match session.write(FOLDER, &format!("{package}_security_report.pdf"), &pdf)
            {
                Ok(path) => files.push(session.relative(&path)),
                Err(err) => errors.push(chain(&err)),
            },
            Err(err) => errors.push(format!("PDF report: {err}")),
        }
        let card = match report.get("appsec").and_then(Scorecard::from_json) {
            Some(card) => Ok(card),
            None => self.scorecard(&hash),
        };
        let mut fields = json!({"apk": apk_file, "hash": hash, "files": files});
        match card {
            Ok(card) => {
                fields["security_score"] = json!(card.security_score);
                fields["high_issues"] = json!(card.high);
                fields["medium_issues"] = json!(card.medium);
                fields["low_issues"] = json!(card.low);
            }
            Err(err) => errors.push(format!("scorecard: {err}")),
        }
        if !errors.is_empty() {
            fields["error"] = json!(errors.join("; "));
        }
        let score = fields["security_score"]
            .as_f64()
            .map_or("no score".to_string(), |s| format!("security score {s}"));
        artifact_note(
            NAME,
            format!("MobSF analysis of {apk_file}: {score}"),
            fields,
        )
    }
}

/// A transport failure in a few words, without the URL.
fn transport_detail(transport: &ureq::Transport) -> String {
    let mut parts = vec![transport.kind().to_string()];
    parts.extend(transport.message().map(str::to_string));
    if let Some(source) = std::error::Error::source(transport) {
        parts.push(source.to_string());
    }
    parts.dedup();
    parts.join(": ")
}

/// The MobSF analysis of a session: the APK already in `extracted_apk/` (the activities
/// integration pulls it at the start of a crawl), else pulled from `device`. This is what
/// `droid-crawl mobsf --run ID` runs for a past run's session folder.
pub fn scan_session(
    mobsf: &Mobsf,
    session: &SessionDir,
    package: &str,
    device: Option<&AdbClient>,
) -> Vec<Note> {
    let saved: PathBuf = session
        .root()
        .join(activities::FOLDER)
        .join(format!("{package}.apk"));
    let mut notes = Vec::new();
    let apk = if saved.is_file() {
        saved
    } else {
        let pulled = match device {
            Some(device) => activities::pull_apk(device, package, session).map_err(|e| chain(&e)),
            None => Err(format!(
                "no {} and no device to pull it from",
                session.relative(&saved)
            )),
        };
        match pulled {
            Ok(PulledApk { path, splits, .. }) => {
                if !splits.is_empty() {
                    notes.push(warning_note(
                        NAME,
                        &format!(
                            "{package} is installed as split APKs ({} splits): MobSF analyses the base APK only",
                            splits.len()
                        ),
                    ));
                }
                path
            }
            Err(err) => {
                notes.push(artifact_note(
                    NAME,
                    format!("MobSF analysis of {package} impossible"),
                    json!({"files": [], "error": format!("no APK: {err}")}),
                ));
                return notes;
            }
        }
    };
    notes.push(mobsf.analyse(&apk, package, session));
    notes
}

/// MobSF as a crawl integration: checked before the crawl, run when it ends.
#[derive(Debug)]
pub struct MobsfIntegration {
    mobsf: Mobsf,
    package: String,
}

impl MobsfIntegration {
    pub fn new(config: MobsfConfig, package: impl Into<String>) -> MobsfIntegration {
        MobsfIntegration {
            mobsf: Mobsf::new(config),
            package: package.into(),
        }
    }
}

impl Integration for MobsfIntegration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&mut self, _device: &AdbClient) -> Result<(), Unavailable> {
        self.mobsf.check().map_err(|err| Unavailable {
            integration: NAME,
            reason: err.to_string(),
        })
    }

    fn start(&mut self, _device: &AdbClient, _session: &SessionDir) -> Vec<Note> {
        Vec::new()
    }

    fn finish(&mut self, device: &AdbClient, session: &SessionDir) -> Vec<Note> {
        scan_session(&self.mobsf, session, &self.package, Some(device))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_say_what_mobsf_said() {
        assert_eq!(
            error_message(br#"{"error": "Invalid Hash"}"#),
            "Invalid Hash"
        );
        assert_eq!(
            error_message(br#"{"report": "Report not Found"}"#),
            "Report not Found"
        );
        assert_eq!(
            error_message(br#"{"not_found": "Report not found or supported"}"#),
            "Report not found or supported"
        );
        assert_eq!(error_message(b""), "(empty body)");
        assert!(error_message(&[b'x'; 1000]).chars().count() <= MAX_MESSAGE + 1);
    }

    #[test]
    fn scorecards_count_their_lists() {
        let card = json!({"high": [{}], "warning": [{}, {}], "info": [], "secure": [{}], "security_score": 52});
        assert_eq!(
            Scorecard::from_json(&card),
            Some(Scorecard {
                security_score: Some(52.0),
                high: 1,
                medium: 2,
                low: 0
            })
        );
        assert_eq!(Scorecard::from_json(&json!({"report": "x"})), None);
    }
}
