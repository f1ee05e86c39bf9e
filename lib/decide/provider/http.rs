//! The one HTTP loop every adapter shares: send, classify, retry, record.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{error_message, ProviderConfig, ProviderError, ProviderKind};
use crate::events::{AiAttempt, AiMeta};
use crate::secret::Secret;

/// Shorter keys are not scrubbed from answers: every "a" in a message is not a secret.
const MIN_SCRUBBED_KEY: usize = 6;

/// How often and how long to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Extra attempts after a timeout, a dropped connection or a 5xx.
    pub server_retries: u32,
    /// Extra attempts after a 429.
    pub rate_limit_retries: u32,
    /// First backoff; doubled on each retry when the server gives no hint.
    pub base_delay: Duration,
    /// No sleep is longer than this, whatever the server asks.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            server_retries: 2,
            rate_limit_retries: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// One HTTP answer, body decoded when it is JSON.
pub struct Answer {
    pub status: u16,
    /// The body as JSON, or `Value::Null` when it is not JSON.
    pub body: Value,
    /// The body as text (for messages when it is not JSON).
    pub text: String,
    retry_after: Option<Duration>,
    rate_limit_reset: Option<Duration>,
}

/// What a provider makes of an answer.
pub enum Verdict<T> {
    Done(T),
    /// Worth asking again (5xx, an error in a 200 that says it is transient).
    Retry {
        message: String,
    },
    /// Rate limited; the wait comes from the answer's hints or the exponential backoff.
    RateLimited {
        message: String,
    },
    Fail(ProviderError),
}

/// A request to send: GET when `body` is `None`, POST with JSON otherwise.
pub struct Request<'a> {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Option<&'a Value>,
}

pub struct Client {
    agent: ureq::Agent,
    retry: RetryPolicy,
    provider: ProviderKind,
    /// Scrubbed from everything the server says (an echo of the key in an error message).
    key: Option<Secret>,
}

impl Client {
    pub fn new(config: &ProviderConfig) -> Client {
        Client {
            agent: ureq::AgentBuilder::new().timeout(config.timeout).build(),
            retry: config.retry,
            provider: config.kind,
            key: config.api_key.clone(),
        }
    }

    /// Sends `request` until `read` says done or fails, or the retries run out. Every attempt is
    /// appended to `meta.attempts`; `meta.retries` and `meta.latency_ms` are updated.
    pub fn call<T>(
        &self,
        request: &Request<'_>,
        meta: &mut AiMeta,
        read: impl Fn(&Answer) -> Verdict<T>,
    ) -> Result<T, ProviderError> {
        let mut server_failures = 0;
        let mut rate_limits = 0;
        loop {
            let started = Instant::now();
            let sent = self.send(request);
            let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            meta.latency_ms = meta.latency_ms.saturating_add(latency_ms);
            let mut attempt = AiAttempt {
                latency_ms,
                ..AiAttempt::default()
            };
            let (verdict, hint) = match sent {
                Ok(answer) => {
                    attempt.http_status = Some(answer.status);
                    let verdict = match classify(self.provider, &answer) {
                        Some(verdict) => verdict,
                        None => read(&answer),
                    };
                    (verdict, rate_limit_hint(&answer))
                }
                Err(message) => (Verdict::Retry { message }, None),
            };
            let delay = match verdict {
                Verdict::Done(value) => {
                    meta.attempts.push(attempt);
                    return Ok(value);
                }
                Verdict::Fail(error) => {
                    attempt.error = Some(error.to_string());
                    meta.attempts.push(attempt);
                    return Err(error);
                }
                Verdict::Retry { message } => {
                    attempt.error = Some(message.clone());
                    if server_failures >= self.retry.server_retries {
                        meta.attempts.push(attempt.clone());
                        return Err(match attempt.http_status {
                            Some(status) => ProviderError::Http {
                                provider: self.provider,
                                status,
                                message,
                            },
                            None => ProviderError::Transport {
                                provider: self.provider,
                                url: request.url.clone(),
                                message,
                            },
                        });
                    }
                    server_failures += 1;
                    self.backoff(server_failures)
                }
                Verdict::RateLimited { message } => {
                    attempt.error = Some(message.clone());
                    let wait = match hint {
                        Some(hint) if hint > self.retry.max_delay => Err(format!(
                            "{message} (the server asks to wait {}, longer than the longest \
                             wait allowed, {}: not retried)",
                            human(hint),
                            human(self.retry.max_delay)
                        )),
                        _ if is_daily_quota(&message) => Err(message),
                        _ if rate_limits >= self.retry.rate_limit_retries => Err(message),
                        Some(hint) => Ok(hint),
                        None => Ok(self.backoff(rate_limits + 1)),
                    };
                    match wait {
                        Ok(wait) => {
                            rate_limits += 1;
                            wait
                        }
                        Err(message) => {
                            meta.attempts.push(attempt);
                            return Err(ProviderError::RateLimited {
                                provider: self.provider,
                                attempts: rate_limits + 1,
                                message,
                            });
                        }
                    }
                }
            };
            attempt.wait_ms = Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
            meta.attempts.push(attempt);
            meta.retries += 1;
            std::thread::sleep(delay);
        }
    }

    /// `text` without the key: everything that reaches an error, a note or the database from
    /// the server passes here. Keys too short to tell from ordinary text are left alone.
    fn scrub(&self, text: String) -> String {
        match &self.key {
            Some(key) if key.expose().len() >= MIN_SCRUBBED_KEY && text.contains(key.expose()) => {
                text.replace(key.expose(), "<redacted>")
            }
            _ => text,
        }
    }

    /// Exponential from the base delay, never above the cap.
    fn backoff(&self, retry: u32) -> Duration {
        self.retry
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)))
            .min(self.retry.max_delay)
    }

    fn send(&self, request: &Request<'_>) -> Result<Answer, String> {
        let method = if request.body.is_some() {
            "POST"
        } else {
            "GET"
        };
        let mut call = self.agent.request(method, &request.url);
        for (name, value) in &request.headers {
            call = call.set(name, value);
        }
        let response = match request.body {
            Some(body) => call.send_json(body),
            None => call.call(),
        };
        let response = match response {
            Ok(response) => response,
            Err(ureq::Error::Status(_, response)) => response,
            Err(ureq::Error::Transport(transport)) => return Err(self.scrub(describe(&transport))),
        };
        let status = response.status();
        let retry_after = response.header("retry-after").and_then(retry_after);
        let rate_limit_reset = response
            .header("x-ratelimit-reset")
            .and_then(until_epoch_millis);
        let text = response
            .into_string()
            .map_err(|e| self.scrub(e.to_string()))?;
        let text = self.scrub(text);
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Answer {
            status,
            body,
            text,
            retry_after,
            rate_limit_reset,
        })
    }
}

/// A transport failure without its URL (the error names it once) and without the repeats
/// ureq's own text has ("Network Error: Network Error: ...").
fn describe(transport: &ureq::Transport) -> String {
    let mut parts = vec![transport.kind().to_string()];
    parts.extend(transport.message().map(str::to_string));
    let mut source = std::error::Error::source(transport);
    while let Some(cause) = source {
        parts.push(cause.to_string());
        source = cause.source();
    }
    let mut said: Vec<&str> = Vec::new();
    for clause in parts.iter().flat_map(|part| part.split(": ")) {
        if !said.contains(&clause) {
            said.push(clause);
        }
    }
    said.join(": ")
}

/// The verdict every provider shares for a non-2xx status; `None` for 2xx (the provider reads
/// those) and for statuses a provider must look at itself (Gemini's 400 with `API_KEY_INVALID`).
fn classify<T>(provider: ProviderKind, answer: &Answer) -> Option<Verdict<T>> {
    // A failure reported inside a 2xx answer (OpenRouter's upstream provider failing after the
    // request was accepted) is what its code says it is: an overloaded provider's 502 is
    // retried as an HTTP 502 would be.
    let status = match answer.status {
        200..=299 => status_in_body(&answer.body)?,
        status => status,
    };
    let message = || answer_message(answer);
    let refused = || {
        Some(Verdict::Fail(ProviderError::Refused {
            provider,
            status,
            message: message(),
        }))
    };
    match status {
        400 if key_invalid_in_body(&answer.body) => {
            Some(Verdict::Fail(ProviderError::InvalidKey {
                provider,
                status,
                message: message(),
            }))
        }
        400 if marked_not_retryable(&answer.body) || refuses_the_setup(&answer.body) => refused(),
        402 => refused(),
        // OpenRouter's guardrails and moderation answer 403 for what the prompt holds (a
        // screen's text can look like an injection): this step's request, not the key.
        403 if is_content_block(&message()) => Some(Verdict::Fail(ProviderError::Http {
            provider,
            status,
            message: message(),
        })),
        401 | 403 => Some(Verdict::Fail(ProviderError::InvalidKey {
            provider,
            status,
            message: message(),
        })),
        429 => Some(Verdict::RateLimited { message: message() }),
        // llama.cpp without --mmproj: a 500 that no retry and no later step will change.
        500..=599 if message().contains("image input is not supported") => {
            Some(Verdict::Fail(ProviderError::ServerNoVision {
                provider,
                status,
                message: message(),
            }))
        }
        500..=599 => Some(Verdict::Retry { message: message() }),
        status => Some(Verdict::Fail(ProviderError::Http {
            provider,
            status,
            message: message(),
        })),
    }
}

/// The error status a 2xx answer's body reports: `error.code` or `error.http_status` (OpenRouter's
/// availability errors), or a choice that ended in `finish_reason: "error"` with its
/// `error.code`. Only codes of failures (4xx, 5xx) count.
fn status_in_body(body: &Value) -> Option<u16> {
    let code = |error: &Value| {
        ["code", "http_status"]
            .iter()
            .find_map(|field| error.get(field).and_then(Value::as_u64))
    };
    let failed_choice = || {
        body.get("choices")?
            .as_array()?
            .iter()
            .filter(|choice| choice.get("finish_reason").and_then(Value::as_str) == Some("error"))
            .find_map(|choice| choice.get("error").and_then(code))
    };
    body.get("error")
        .and_then(code)
        .or_else(failed_choice)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..=599).contains(code))
}

/// OpenRouter's `availability` block says asking again will not help (`model_not_found`).
fn marked_not_retryable(body: &Value) -> bool {
    body.pointer("/error/availability/retryable") == Some(&Value::Bool(false))
}

/// A 400 about what every request of this stage holds, not this step's screen: a model the
/// server lacks (Ollama's /v1 says "model not found" with 400) or Gemini's field violations in
/// the generation config or system instruction (a schema it cannot read).
fn refuses_the_setup(body: &Value) -> bool {
    let message = error_message(body).unwrap_or_default().to_ascii_lowercase();
    let model_missing = body.pointer("/error/code").and_then(Value::as_str)
        == Some("model_not_found")
        || message.contains("model not found");
    let fields = body
        .pointer("/error/details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|detail| detail.get("fieldViolations").and_then(Value::as_array))
        .flatten()
        .filter_map(|violation| violation.get("field").and_then(Value::as_str))
        .collect::<Vec<_>>();
    let setup_fields = !fields.is_empty()
        && fields.iter().all(|field| {
            ["generation_config", "system_instruction"]
                .iter()
                .any(|setup| field.starts_with(setup))
        });
    model_missing || setup_fields
}

/// A 403 about the request's content ("Request blocked: prompt injection patterns detected",
/// "input was flagged"), not about the key.
fn is_content_block(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    ["blocked", "flagged", "moderation"]
        .iter()
        .any(|word| message.contains(word))
}

/// Gemini's bad key: HTTP 400 with `details[].reason == "API_KEY_INVALID"`.
fn key_invalid_in_body(body: &Value) -> bool {
    body.pointer("/error/details")
        .and_then(Value::as_array)
        .is_some_and(|details| {
            details
                .iter()
                .any(|d| d.get("reason").and_then(Value::as_str) == Some("API_KEY_INVALID"))
        })
}

/// The error text of an answer, short enough for a log line.
pub fn answer_message(answer: &Answer) -> String {
    let text = error_message(&answer.body).unwrap_or_else(|| answer.text.trim().to_string());
    let text: String = text.chars().take(500).collect();
    if text.is_empty() {
        format!("HTTP {}", answer.status)
    } else {
        text
    }
}

/// How long the server asked to wait: `Retry-After`, OpenRouter's `X-RateLimit-Reset` (epoch
/// milliseconds, as a header or mirrored in `error.metadata.headers`), OpenRouter's
/// `availability.retry_after`, Gemini's `RetryInfo.retryDelay` ("15s", "0.5s").
fn rate_limit_hint(answer: &Answer) -> Option<Duration> {
    let body = &answer.body;
    let gemini = body
        .pointer("/error/details")
        .and_then(Value::as_array)
        .and_then(|details| {
            details
                .iter()
                .find_map(|d| d.get("retryDelay").and_then(Value::as_str))
        })
        .and_then(|delay| delay.trim().strip_suffix('s')?.parse::<f64>().ok())
        .and_then(seconds);
    let mirrored_reset = body
        .pointer("/error/metadata/headers/X-RateLimit-Reset")
        .and_then(Value::as_str)
        .and_then(until_epoch_millis);
    let availability = body
        .pointer("/error/availability/retry_after")
        .and_then(Value::as_f64)
        .and_then(seconds);
    answer
        .retry_after
        .or(gemini)
        .or(availability)
        .or(answer.rate_limit_reset)
        .or(mirrored_reset)
}

/// `Retry-After`: delay seconds ("120") or an HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT", from
/// now; a date already passed means no wait).
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(delay) = value.parse::<f64>() {
        return seconds(delay);
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = date.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// "53 s", "20 ms".
fn human(duration: Duration) -> String {
    match duration.as_secs() {
        0 => format!("{} ms", duration.as_millis()),
        secs => format!("{secs} s"),
    }
}

fn seconds(value: f64) -> Option<Duration> {
    (value.is_finite() && value >= 0.0).then(|| Duration::from_secs_f64(value.min(86_400.0)))
}

/// Time from now until an epoch-milliseconds instant; `None` when it has passed.
fn until_epoch_millis(text: &str) -> Option<Duration> {
    let reset = text.trim().parse::<u64>().ok()?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
    Duration::from_millis(reset).checked_sub(now)
}

/// OpenRouter's daily cap ("free-models-per-day"): waiting seconds will not help.
fn is_daily_quota(message: &str) -> bool {
    message.contains("per-day")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: serde_json::from_str(body).unwrap_or(Value::Null),
            text: body.to_string(),
            retry_after: None,
            rate_limit_reset: None,
        }
    }

    #[test]
    fn gemini_retry_delay_is_a_duration_string() {
        let body =
            r#"{"error":{"code":429,"details":[{"@type":"x.RetryInfo","retryDelay":"0.5s"}]}}"#;
        assert_eq!(
            rate_limit_hint(&answer(429, body)),
            Some(Duration::from_millis(500))
        );
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        assert_eq!(retry_after(" 120 "), Some(Duration::from_secs(120)));
        assert_eq!(retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(retry_after("-3"), None);
        assert_eq!(retry_after("soon"), None);
        let passed = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(retry_after(passed), Some(Duration::ZERO));
        let in_90s = chrono::Utc::now() + chrono::Duration::seconds(90);
        let date = in_90s.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        let wait = retry_after(&date).unwrap();
        assert!(wait > Duration::from_secs(85) && wait <= Duration::from_secs(90));
    }

    #[test]
    fn openrouter_reset_in_the_past_gives_no_hint() {
        let body = r#"{"error":{"code":429,"metadata":{"headers":{"X-RateLimit-Reset":"1000"}}}}"#;
        assert_eq!(rate_limit_hint(&answer(429, body)), None);
        let future =
            SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + Duration::from_secs(30);
        let body = format!(
            r#"{{"error":{{"metadata":{{"headers":{{"X-RateLimit-Reset":"{}"}}}}}}}}"#,
            future.as_millis()
        );
        let hint = rate_limit_hint(&answer(429, &body)).unwrap();
        assert!(hint > Duration::from_secs(25) && hint <= Duration::from_secs(30));
    }

    #[test]
    fn statuses_are_classified() {
        let kind = ProviderKind::Gemini;
        let verdict = |status, body| classify::<()>(kind, &answer(status, body));
        assert!(matches!(
            verdict(
                400,
                r#"{"error":{"details":[{"reason":"API_KEY_INVALID"}]}}"#
            ),
            Some(Verdict::Fail(ProviderError::InvalidKey { status: 400, .. }))
        ));
        assert!(matches!(
            verdict(400, r#"{"error":{"message":"bad schema"}}"#),
            Some(Verdict::Fail(ProviderError::Http { status: 400, .. }))
        ));
        assert!(matches!(
            verdict(401, "{}"),
            Some(Verdict::Fail(ProviderError::InvalidKey { .. }))
        ));
        assert!(matches!(
            verdict(429, "{}"),
            Some(Verdict::RateLimited { .. })
        ));
        assert!(matches!(verdict(503, "busy"), Some(Verdict::Retry { .. })));
        assert!(verdict(200, "{}").is_none());
    }

    #[test]
    fn a_failure_inside_a_200_is_classified_by_its_code() {
        let kind = ProviderKind::OpenRouter;
        let verdict = |body| classify::<()>(kind, &answer(200, body));
        let overloaded =
            r#"{"error":{"code":502,"message":"Upstream error from provider: overloaded"}}"#;
        assert!(
            matches!(verdict(overloaded), Some(Verdict::Retry { message }) if message.contains("overloaded"))
        );
        assert!(matches!(
            verdict(r#"{"error":{"code":429,"message":"rate limited upstream"}}"#),
            Some(Verdict::RateLimited { .. })
        ));
        // An availability error says its status in `http_status`.
        assert!(matches!(
            verdict(r#"{"error":{"message":"busy","http_status":503,"error_type":"x"}}"#),
            Some(Verdict::Retry { .. })
        ));
        // A choice that ended in an error.
        let choice =
            r#"{"choices":[{"finish_reason":"error","error":{"code":504,"message":"timeout"}}]}"#;
        assert!(matches!(verdict(choice), Some(Verdict::Retry { .. })));
        assert!(matches!(
            verdict(r#"{"error":{"code":400,"message":"bad"}}"#),
            Some(Verdict::Fail(ProviderError::Http { status: 400, .. }))
        ));
        // A success, or a code that is no failure, is for the provider to read.
        assert!(verdict(r#"{"choices":[{"finish_reason":"stop"}]}"#).is_none());
        assert!(verdict(r#"{"error":{"code":200}}"#).is_none());
    }
}
