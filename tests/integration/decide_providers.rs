//! droid-decide against real HTTP servers on 127.0.0.1 replaying the provider fixture bodies.

use std::io::Write;
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{droid, feed, fixtures};

pub(crate) const KEY: &str = "sk-test-7f3a9c-DO-NOT-LEAK";

/// A fixture body as the server sent it: `_`-prefixed provenance keys removed, nothing else.
pub(crate) fn fixture(path: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join("providers").join(path)).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    if let Value::Object(object) = &mut value {
        object.retain(|key, _| !key.starts_with('_'));
    }
    value
}

/// One answer of the fake server.
#[derive(Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) delay: Duration,
}

pub(crate) fn reply(status: u16, body: &Value) -> Reply {
    Reply {
        status,
        body: body.to_string(),
        headers: Vec::new(),
        delay: Duration::ZERO,
    }
}

/// A request the fake server received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

impl Seen {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Handler = Box<dyn Fn(&Seen, usize) -> Reply + Send + Sync>;

/// A real HTTP server on 127.0.0.1 answering with `handler(request, index of the request)`.
pub(crate) struct Server {
    pub(crate) base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub(crate) fn start(handler: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Server {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let handler: Arc<Handler> = Arc::new(Box::new(handler));
        thread::spawn(move || {
            for mut request in server.incoming_requests() {
                let mut text = String::new();
                let _ = request.as_reader().read_to_string(&mut text);
                let request_seen = Seen {
                    url: request.url().to_string(),
                    headers: request
                        .headers()
                        .iter()
                        .map(|h| (h.field.to_string(), h.value.to_string()))
                        .collect(),
                    body: serde_json::from_str(&text).unwrap_or(Value::Null),
                };
                let index = {
                    let mut log = log.lock().unwrap();
                    log.push(request_seen.clone());
                    log.len() - 1
                };
                let handler = Arc::clone(&handler);
                // One thread per request, so a slow answer does not hold up the next request.
                thread::spawn(move || {
                    let answer = handler(&request_seen, index);
                    thread::sleep(answer.delay);
                    let mut response = tiny_http::Response::from_string(answer.body)
                        .with_status_code(answer.status)
                        .with_header(
                            tiny_http::Header::from_bytes("Content-Type", "application/json")
                                .unwrap(),
                        );
                    for (name, value) in answer.headers {
                        response.add_header(
                            tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
                                .unwrap(),
                        );
                    }
                    let _ = request.respond(response);
                });
            }
        });
        Server {
            base: format!("http://127.0.0.1:{port}"),
            seen,
        }
    }

    pub(crate) fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// An observation with a Login button and a 1080x2400 screenshot (sent downscaled to 576x1280).
pub(crate) fn observation(dir: &std::path::Path) -> String {
    let shot = dir.join("step_001.png");
    image::RgbImage::from_pixel(1080, 2400, image::Rgb([200, 30, 30]))
        .save(&shot)
        .unwrap();
    json!({
        "type": "observation", "v": 1, "run_id": "r1", "step": 1,
        "package": "com.example.shop", "activity": "com.example.shop.MainActivity",
        "screen_size": [1080, 2400], "screenshot_path": shot.display().to_string(),
        "tree": "- Button \"Login\" [ref=1]",
        "elements": [{
            "element_id": 4, "ref": 1, "bounds": [40, 200, 1040, 320], "text": "Login",
            "class_name": "android.widget.Button", "clickable": true, "enabled": true,
            "center_x": 540, "center_y": 260
        }]
    })
    .to_string()
}

/// The decision a model gives, in screenshot pixels (the Login button at half scale... roughly).
pub(crate) fn decision_text() -> String {
    json!({"actions": [{"action": "click", "action_desc": "tap Login", "reasoning": "explore",
        "target_bounding_box": {"top_left": [25, 110], "bottom_right": [550, 168]}}]})
    .to_string()
}

/// Runs droid-decide with fast retries against `base`, feeding `lines`.
pub(crate) fn decide(decider: &str, base: &str, lines: &[String], extra: &[&str]) -> Output {
    let mut child = droid("droid-decide")
        .args(["--decider", decider, "--base-url", base, "--api-key", KEY])
        .args([
            "--retry-base-ms",
            "5",
            "--retry-max-ms",
            "20",
            "--timeout",
            "5",
        ])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// `droid-decide` on `steps` copies of [`observation`], its screenshot in a directory of its own.
pub(crate) fn decide_steps(decider: &str, base: &str, steps: usize, extra: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    decide(decider, base, &vec![observation(dir.path()); steps], extra)
}

/// The lines of stdout, parsed, after checking the key leaked nowhere.
pub(crate) fn read_events(output: &Output, server: &Server) -> Vec<Value> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY), "key leaked");
    for request in server.requests() {
        assert!(!request.url.contains(KEY), "key in a URL: {}", request.url);
        assert!(!request.body.to_string().contains(KEY), "key in a body");
    }
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn gemini_success_with_fenced_json() {
    droid::fixtures_or_skip!();
    let mut body = fixture("gemini/generateContent_response_image_cookbook.json");
    body["candidates"][0]["content"]["parts"][0]["text"] =
        Value::from(format!("```json\n{}\n```", decision_text()));
    let server = Server::start(move |_, _| reply(200, &body));
    let output = decide_steps("gemini", &server.base, 1, &[]);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let decision = of_type(&events, "decision")[0];
    let action = &decision["actions"][0];
    assert_eq!(action["ref"], 1, "snapped to the Login button: {decision}");
    assert_eq!(action["target_bounding_box"]["top_left"], json!([40, 200]));
    let ai = &decision["ai"];
    assert_eq!(
        (ai["provider"].as_str(), ai["tokens_in"].as_u64()),
        (Some("gemini"), Some(331))
    );
    assert_eq!(ai["tokens_out"], 154);
    assert_eq!(ai["retries"], 0);
    let kept = ai["request"].to_string();
    assert!(
        kept.contains("step_001.png") && !kept.contains("iVBOR"),
        "{kept}"
    );

    let request = &server.requests()[0];
    assert_eq!(request.url, "/models/gemini-2.5-flash:generateContent");
    assert_eq!(request.header("x-goog-api-key"), Some(KEY));
    let image = &request.body["contents"][0]["parts"][0]["inlineData"];
    assert_eq!(image["mimeType"], "image/png");
    assert!(image["data"].as_str().unwrap().starts_with("iVBOR"));
    assert!(request.body["generationConfig"]["responseJsonSchema"].is_object());
}

#[test]
fn a_system_prompt_file_replaces_the_default_entirely() {
    droid::fixtures_or_skip!();
    let mut body = fixture("gemini/generateContent_response_image_cookbook.json");
    body["candidates"][0]["content"]["parts"][0]["text"] = Value::from(decision_text());
    let server = Server::start(move |_, _| reply(200, &body));
    let dir = tempfile::tempdir().unwrap();
    let system_of = |extra: &[&str]| {
        let output = decide_steps("gemini", &server.base, 1, extra);
        assert!(output.status.success(), "{output:?}");
        let events = read_events(&output, &server);
        let kept = &of_type(&events, "decision")[0]["ai"]["request"];
        let sent = server.requests().last().unwrap().body.clone();
        assert_eq!(kept["systemInstruction"], sent["systemInstruction"]);
        sent["systemInstruction"]["parts"][0]["text"].clone()
    };
    let default = system_of(&[]);
    let mine = "You test a shop. Tap only what is labelled.\nNever leave the cart screen.\n";
    let file = dir.path().join("prompt.txt");
    std::fs::write(&file, mine).unwrap();
    let replaced = system_of(&["--system-prompt", file.to_str().unwrap()]);
    assert_eq!(replaced, mine, "the file's text, nothing added");
    assert_ne!(replaced, default);

    for (contents, message) in [(None, "reading --system-prompt"), (Some(" \n"), "is empty")] {
        let path = dir.path().join("other.txt");
        let _ = std::fs::remove_file(&path);
        if let Some(contents) = contents {
            std::fs::write(&path, contents).unwrap();
        }
        // No input: the stage stops before it reads any.
        let output = decide(
            "gemini",
            &server.base,
            &[],
            &["--system-prompt", path.to_str().unwrap()],
        );
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{stderr}");
    }
    assert_eq!(
        server.requests().len(),
        2,
        "nothing sent without instructions"
    );
}

#[test]
fn a_thinking_model_answer_counts_its_thoughts_and_reads_only_the_answer() {
    droid::fixtures_or_skip!();
    // As it is: a caption, not a decision; 1 294 tokens in, 125 + 1 071 thinking out.
    let thinking = fixture("gemini/generateContent_response_thinking_model_shape.json");
    let mut with_thought = thinking.clone();
    with_thought["candidates"][0]["content"]["parts"] = json!([
        {"text": "The Login button is the only way on: {\"actions\": []}", "thought": true},
        {"text": decision_text()}
    ]);
    let server = Server::start(move |_, index| match index {
        0 => reply(200, &thinking),
        _ => reply(200, &with_thought),
    });
    let output = decide_steps("gemini", &server.base, 2, &[]);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let decisions = of_type(&events, "decision");
    let tokens = |ai: &Value| (ai["tokens_in"].as_u64(), ai["tokens_out"].as_u64());
    assert_eq!(tokens(&decisions[0]["ai"]), (Some(1294), Some(1196)));
    assert!(of_type(&events, "note")
        .iter()
        .any(|n| n["kind"] == "invalid_response"));
    let answered = decisions[1];
    assert!(answered["ai"].get("error").is_none(), "{answered}");
    assert_eq!(
        answered["actions"][0]["ref"], 1,
        "the thought's JSON is ignored"
    );
}

#[test]
fn a_reasoning_model_on_openrouter_is_read_from_its_content_not_its_reasoning() {
    droid::fixtures_or_skip!();
    // As it is: a greeting in `content`, the reasoning beside it.
    let greeting = fixture("openrouter/chat_response_real_qwen3_groq_reasoning_partial.json");
    let mut answer = greeting.clone();
    let message = &mut answer["choices"][0]["message"];
    message["content"] = Value::from(decision_text());
    message["reasoning"] = Value::from(r#"Maybe {"actions": [{"action": "back"}]}?"#);
    let server = Server::start(move |_, index| match index {
        0 => reply(200, &greeting),
        _ => reply(200, &answer),
    });
    let output = decide_steps("openrouter", &api_base(&server, "openrouter"), 2, &[]);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let invalid: Vec<&Value> = of_type(&events, "note")
        .into_iter()
        .filter(|n| n["kind"] == "invalid_response")
        .collect();
    assert_eq!(invalid.len(), 1, "the greeting is not a decision");
    let decisions = of_type(&events, "decision");
    assert_eq!(decisions[0]["ai"]["model"], "qwen/qwen3-32b");
    assert_eq!(decisions[1]["actions"][0]["ref"], 1, "{}", decisions[1]);
}

#[test]
fn gemini_answer_without_actions_is_an_invalid_response_and_the_next_asks_for_one() {
    droid::fixtures_or_skip!();
    // The cookbook answer as it is: fenced JSON, but a product description, not actions.
    let body = fixture("gemini/generateContent_response_image_cookbook.json");
    let server = Server::start(move |_, _| reply(200, &body));
    let output = decide_steps("gemini", &server.base, 2, &[]);
    assert!(output.status.success());
    let events = read_events(&output, &server);
    let notes = of_type(&events, "note");
    assert!(
        notes.iter().any(|n| n["kind"] == "invalid_response"),
        "{events:?}"
    );
    let decisions = of_type(&events, "decision");
    assert_eq!(decisions.len(), 2);
    // The heuristic decided the step, and the decision says so; `ai` is the failed call.
    assert_eq!(decisions[0]["decider"], "heuristic");
    assert_eq!(decisions[0]["ai"]["provider"], "gemini");
    assert!(decisions[0]["ai"]["error"]
        .as_str()
        .unwrap()
        .contains("actions"));
    assert!(!decisions[0]["actions"].as_array().unwrap().is_empty());
    let requests = server.requests();
    let asked = |i: usize| requests[i].body["contents"][0]["parts"][1]["text"].to_string();
    assert!(!asked(0).contains("exactly ONE") && asked(1).contains("exactly ONE"));
}

#[test]
fn an_answer_with_several_actions_where_one_was_asked_for_keeps_the_first() {
    droid::fixtures_or_skip!();
    // Step 1's answer is unusable, so step 2 asks for one action; the model still sends three.
    let bad = fixture("gemini/generateContent_response_image_cookbook.json");
    let mut three = bad.clone();
    let action = |what: &str| json!({"action": what, "action_desc": what, "reasoning": "r"});
    three["candidates"][0]["content"]["parts"][0]["text"] = Value::from(
        json!({"actions": [action("back"), action("scroll_down"), action("home")]}).to_string(),
    );
    let server = Server::start(move |_, index| reply(200, if index == 0 { &bad } else { &three }));
    let output = decide_steps("gemini", &server.base, 3, &[]);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let decisions = of_type(&events, "decision");
    let kinds = |i: usize| -> Vec<&str> {
        let actions = decisions[i]["actions"].as_array().unwrap();
        actions
            .iter()
            .map(|a| a["action"].as_str().unwrap())
            .collect()
    };
    assert_eq!(kinds(1), ["back"], "{}", decisions[1]);
    assert_eq!(decisions[1]["decider"], "gemini");
    let warned = of_type(&events, "note").into_iter().any(|n| {
        n["kind"] == "warning"
            && n["message"]
                .as_str()
                .unwrap()
                .contains("3 usable actions where one was asked for, kept the first")
    });
    assert!(warned, "{events:?}");
    // The ask for one action ends with a usable answer: step 3 takes the whole batch.
    assert_eq!(kinds(2), ["back", "scroll_down", "home"]);
}

#[test]
fn openrouter_success_with_prose_wrapped_json() {
    droid::fixtures_or_skip!();
    let mut body = fixture("openrouter/chat_response_real_gpt4o-mini_azure.json");
    body["choices"][0]["message"]["content"] =
        Value::from(format!("Here is my plan: {} Good luck!", decision_text()));
    let server = Server::start(move |_, _| reply(200, &body));
    let output = decide_steps("openrouter", &api_base(&server, "openrouter"), 1, &[]);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let decision = of_type(&events, "decision")[0];
    assert_eq!(decision["actions"][0]["ref"], 1);
    assert_eq!(decision["ai"]["model"], "openai/gpt-4o-mini");
    assert_eq!(decision["ai"]["tokens_in"], 9);
    let request = &server.requests()[0];
    assert_eq!(request.url, "/api/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let url = request.body["messages"][1]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap();
    assert!(url.starts_with("data:image/png;base64,iVBOR"));
    assert_eq!(request.body["response_format"]["type"], "json_schema");
}

#[test]
fn openrouter_provider_failure_inside_a_200_is_retried_as_its_code() {
    droid::fixtures_or_skip!();
    let mut body = fixture("openrouter/chat_response_real_gpt4o-mini_azure.json");
    body["choices"][0]["message"]["content"] = Value::from(decision_text());
    // OpenRouter accepted the request, then the upstream provider failed: HTTP 200 with the
    // error in the body.
    let overloaded =
        json!({"error": {"code": 502, "message": "Upstream error from provider: overloaded"}});
    let server = Server::start(move |_, index| match index {
        0 => reply(200, &overloaded),
        _ => reply(200, &body),
    });
    let output = decide_steps("openrouter", &api_base(&server, "openrouter"), 1, &[]);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let decision = of_type(&events, "decision")[0];
    assert_eq!(decision["decider"], "openrouter", "{decision}");
    assert_eq!(decision["ai"]["retries"], 1);
    let attempts = decision["ai"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0]["http_status"], 200);
    assert!(attempts[0]["error"]
        .as_str()
        .unwrap()
        .contains("overloaded"));
    assert_eq!(server.requests().len(), 2);

    // The documented in-body failures, every answer the same: retried twice as a 502 is, then
    // the heuristic decides.
    let examples = fixture("openrouter/error_docs_examples.json");
    for (body, message) in [
        (
            &examples["non_stream_200_with_choice_error"],
            "Provider disconnected",
        ),
        (&examples["502"], "Provider returned error"),
    ] {
        let (events, code, requests, _) = failing("openrouter", 200, body.clone(), Vec::new());
        assert_eq!((code, requests), (Some(0), 3), "{message}");
        let ai = fallback_ai(&events);
        assert_eq!(ai["retries"], 2, "{ai}");
        assert!(ai["error"].as_str().unwrap().contains(message), "{ai}");
    }
}

#[test]
fn ollama_success_checks_vision_first() {
    droid::fixtures_or_skip!();
    let mut chat = fixture("ollama/chat_response_structured_schema.json");
    chat["message"]["content"] = Value::from(decision_text());
    let show = fixture("ollama/show_response_gemma4_openapi.json");
    let server = Server::start(move |seen, _| match seen.url.as_str() {
        "/api/show" => reply(200, &show),
        _ => reply(200, &chat),
    });
    let output = decide_steps("ollama", &server.base, 1, &["--model", "gemma4"]);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let decision = of_type(&events, "decision")[0];
    assert_eq!(decision["actions"][0]["ref"], 1);
    assert_eq!(
        (
            decision["ai"]["tokens_in"].as_u64(),
            decision["ai"]["tokens_out"].as_u64()
        ),
        (Some(34), Some(12))
    );
    // The vision check is one of the step's requests: its attempt is in the decision's `ai`.
    let attempts = decision["ai"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(
        (&attempts[0]["endpoint"], &attempts[0]["http_status"]),
        (&json!("/api/show"), &json!(200))
    );
    assert_eq!(attempts[1]["http_status"], 200);
    assert!(attempts[1].get("endpoint").is_none(), "the chat itself");
    let requests = server.requests();
    assert_eq!(requests[0].url, "/api/show");
    assert_eq!(requests[0].body["model"], "gemma4");
    let chat = &requests[1].body;
    assert_eq!(requests[1].url, "/api/chat");
    assert_eq!(chat["stream"], false);
    assert!(chat["format"].is_object());
    let image = chat["messages"][1]["images"][0].as_str().unwrap();
    assert!(image.starts_with("iVBOR"), "raw base64, no data: prefix");
}

/// droid-decide with `--model model` on one observation against an Ollama whose `/api/show`
/// answers `status` + `show`; its chat answers 500 (a test that reaches it fails).
fn ollama_showing(status: u16, show: Value, model: &str) -> (Output, Server) {
    let server = Server::start(move |seen, _| match seen.url.as_str() {
        "/api/show" => reply(status, &show),
        _ => reply(500, &json!({"error": "not reached"})),
    });
    let output = decide_steps("ollama", &server.base, 1, &["--model", model]);
    (output, server)
}

/// The `note` of kind `error` a stopped stage writes last.
pub(crate) fn error_note(events: &[Value]) -> &Value {
    of_type(events, "note")
        .into_iter()
        .find(|n| n["kind"] == "error")
        .expect("a note of kind error")
}

#[test]
fn a_failed_vision_check_is_kept_in_the_note_that_stops_the_stage() {
    droid::fixtures_or_skip!();
    let missing = &fixture("ollama/errors_native.json")["show_model_missing_404"];
    let status = missing["status"].as_u64().unwrap() as u16;
    let (output, server) = ollama_showing(status, missing["body"].clone(), "llava:13b");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let events = read_events(&output, &server);
    let note = error_note(&events);
    assert!(note["message"].as_str().unwrap().contains("not found"));
    let attempts = note["data"]["ai"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["endpoint"], "/api/show");
    assert_eq!(attempts[0]["http_status"], 404);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn ollama_text_only_model_refuses_images_clearly() {
    droid::fixtures_or_skip!();
    // The documented show body is a text model's but for its capabilities: with a text model's,
    // nothing says it takes images.
    let text_model = with_capabilities(llava_show(), Some(json!(["completion"])));
    let (output, server) = ollama_showing(200, text_model, "llama3");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("does not take images") && stderr.contains("--text-only"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn openai_compatible_text_mode_sends_the_tree() {
    droid::fixtures_or_skip!();
    let mut body = fixture("ollama/v1_chat_completions_response_shape.json");
    body["choices"][0]["message"]["content"] =
        Value::from(json!({"actions": [{"action": "click", "ref": 1, "action_desc": "Login", "reasoning": "r"}]}).to_string());
    let server = Server::start(move |_, _| reply(200, &body));
    let output = decide_steps(
        "openai",
        &server.base,
        1,
        &["--text-only", "--model", "qwen3-vl:8b"],
    );
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let decision = of_type(&events, "decision")[0];
    assert_eq!(
        decision["actions"][0]["target_bounding_box"]["bottom_right"],
        json!([1040, 320])
    );
    let request = &server.requests()[0];
    assert_eq!(request.url, "/v1/chat/completions");
    let content = request.body["messages"][1]["content"].as_array().unwrap();
    assert_eq!(content.len(), 1, "no image in text mode");
    assert!(content[0]["text"].as_str().unwrap().contains("[ref=1]"));
}

/// The `--base-url` of a provider served by `server`: OpenRouter's API lives under `/api/v1`
/// (`https://openrouter.ai/api/v1`), the others at the root.
pub(crate) fn api_base(server: &Server, decider: &str) -> String {
    match decider {
        "openrouter" => format!("{}/api/v1", server.base),
        _ => server.base.clone(),
    }
}

/// Runs one observation against a server replaying `status` + `body`, returning the events,
/// the exit code and how many requests were made.
pub(crate) fn failing(
    decider: &str,
    status: u16,
    body: Value,
    headers: Vec<(String, String)>,
) -> (Vec<Value>, Option<i32>, usize, String) {
    let server = Server::start(move |_, _| Reply {
        headers: headers.clone(),
        ..reply(status, &body)
    });
    let output = decide_steps(decider, &api_base(&server, decider), 1, &[]);
    let events = read_events(&output, &server);
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    (
        events,
        output.status.code(),
        server.requests().len(),
        stderr,
    )
}

#[test]
fn invalid_keys_stop_without_retry() {
    droid::fixtures_or_skip!();
    let cases = [
        (
            "gemini",
            400,
            fixture("gemini/error_400_api_key_invalid_continue8516.json"),
        ),
        (
            "openrouter",
            401,
            fixture("openrouter/error_docs_examples.json")["401"].clone(),
        ),
        (
            "gemini",
            403,
            // gemini/NOTES.md: 403 PERMISSION_DENIED for a key lacking access; the envelope is
            // Gemini's usual one.
            json!({"error": {"code": 403, "message": "Method doesn't allow unregistered callers.",
                "status": "PERMISSION_DENIED"}}),
        ),
    ];
    for (decider, status, body) in cases {
        let (events, code, requests, stderr) = failing(decider, status, body, Vec::new());
        assert_eq!(code, Some(1), "{decider} {status}");
        assert_eq!(requests, 1, "{decider} {status}: no retry");
        assert!(stderr.contains("API key was rejected"), "{stderr}");
        assert!(of_type(&events, "decision").is_empty());
    }
}

#[test]
fn missing_models_stop_with_the_server_message() {
    droid::fixtures_or_skip!();
    let cases = [
        (
            "gemini",
            fixture("gemini/error_404_model_not_found_swuecho597.json"),
            "is not found for API version",
        ),
        (
            "openrouter",
            fixture("openrouter/error_404_no_endpoints_real.json"),
            "No endpoints found",
        ),
        (
            "openrouter",
            fixture("openrouter/error_404_no_image_endpoints_shape.json"),
            "support image input",
        ),
    ];
    for (decider, body, message) in cases {
        let (_, code, requests, stderr) = failing(decider, 404, body, Vec::new());
        assert_eq!((code, requests), (Some(1), 1), "{decider}");
        assert!(
            stderr.contains(message) && stderr.contains("HTTP 404"),
            "{stderr}"
        );
    }
}

/// The decision after a failure: from the heuristic, with the model's attempts and error.
pub(crate) fn fallback_ai(events: &[Value]) -> &Value {
    let decision = of_type(events, "decision")[0];
    assert!(!decision["actions"].as_array().unwrap().is_empty());
    assert!(of_type(events, "note")
        .iter()
        .any(|n| n["kind"] == "warning"));
    &decision["ai"]
}

#[test]
fn rate_limits_without_a_hint_back_off_three_times() {
    droid::fixtures_or_skip!();
    let cases = [
        (
            "gemini",
            fixture("gemini/error_429_no_retryinfo_gke-labs1215.json"),
        ),
        (
            // Its X-RateLimit-Reset (in error.metadata.headers) has passed: no hint.
            "openrouter",
            fixture("openrouter/error_429_upstream_model_rpm_real.json"),
        ),
        (
            "openai",
            fixture("openai_compat/groq_error_rate_limit_tpm_real.json"),
        ),
    ];
    for (decider, body) in cases {
        let (events, code, requests, _) = failing(decider, 429, body, Vec::new());
        assert_eq!(
            (code, requests),
            (Some(0), 4),
            "{decider}: 1 try + 3 retries"
        );
        let ai = fallback_ai(&events);
        assert_eq!(ai["retries"], 3);
        let waits: Vec<Option<u64>> = ai["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|attempt| attempt["wait_ms"].as_u64())
            .collect();
        // --retry-base-ms 5 doubled, capped by --retry-max-ms 20; none after the last.
        assert_eq!(waits, [Some(5), Some(10), Some(20), None]);
        assert!(
            ai["error"].as_str().unwrap().contains("rate limited"),
            "{ai}"
        );
    }
}

#[test]
fn a_rate_limit_hint_longer_than_the_retries_may_wait_is_not_retried() {
    droid::fixtures_or_skip!();
    let in_30s = (std::time::SystemTime::now() + Duration::from_secs(30))
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string();
    let cases = [
        (
            "gemini",
            fixture("gemini/error_429_retryinfo_python-genai1875.json"),
            Vec::new(),
            "asks to wait 53 s",
        ),
        (
            "gemini",
            fixture("gemini/error_429_resource_exhausted_langextract50.json"),
            Vec::new(),
            "asks to wait 15 s",
        ),
        (
            "openrouter",
            fixture("openrouter/error_429_free_models_per_min_real.json"),
            vec![("X-RateLimit-Reset".to_string(), in_30s)],
            "asks to wait 2",
        ),
        (
            "openrouter",
            fixture("openrouter/error_429_upstream_model_rpm_real.json"),
            vec![("Retry-After".to_string(), "7".to_string())],
            "asks to wait 7 s",
        ),
    ];
    for (decider, body, headers, message) in cases {
        let (events, code, requests, _) = failing(decider, 429, body, headers);
        assert_eq!((code, requests), (Some(0), 1), "{message}");
        let ai = fallback_ai(&events);
        let error = ai["error"].as_str().unwrap();
        assert!(
            error.contains(message) && error.contains("longer than"),
            "{error}"
        );
        assert!(ai["attempts"][0].get("wait_ms").is_none());
    }
}

/// The wait droid-decide recorded after a 429 carrying `headers`, then a good answer (one
/// retry, no error), with retries allowed to wait 5 s.
fn wait_after_429(headers: Vec<(String, String)>) -> u64 {
    let mut ok = fixture("openrouter/chat_response_real_gpt4o-mini_azure.json");
    ok["choices"][0]["message"]["content"] = Value::from(decision_text());
    let limited = fixture("openrouter/error_429_free_models_per_min_real.json");
    let server = Server::start(move |_, index| match index {
        0 => Reply {
            headers: headers.clone(),
            ..reply(429, &limited)
        },
        _ => reply(200, &ok),
    });
    let output = decide_steps(
        "openrouter",
        &api_base(&server, "openrouter"),
        1,
        &["--retry-max-ms", "5000"],
    );
    let events = read_events(&output, &server);
    let ai = &of_type(&events, "decision")[0]["ai"];
    assert_eq!(
        (ai["retries"].as_u64(), server.requests().len()),
        (Some(1), 2)
    );
    assert_eq!(ai["attempts"][0]["http_status"], 429);
    assert_eq!(ai["attempts"][1]["http_status"], 200);
    assert!(ai.get("error").is_none() && ai["attempts"][1].get("wait_ms").is_none());
    ai["attempts"][0]["wait_ms"].as_u64().unwrap()
}

#[test]
fn rate_limit_hints_from_headers_set_the_wait() {
    droid::fixtures_or_skip!();
    // The fixture's own X-RateLimit-Reset has passed: --retry-base-ms.
    assert_eq!(wait_after_429(Vec::new()), 5);
    let header = |name: &str, value: String| vec![(name.to_string(), value)];
    assert_eq!(wait_after_429(header("Retry-After", "1".into())), 1000);

    // Hints are instants: the wait is what is left when the 429 arrives (this machine may be
    // slow to start the process), never the backoff (5 ms) and never more than asked.
    let in_2s = chrono::Utc::now() + chrono::Duration::seconds(2);
    let date = in_2s.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let waited = wait_after_429(header("Retry-After", date));
    assert!((1..=2000).contains(&waited), "HTTP-date: {waited} ms");

    // OpenRouter's X-RateLimit-Reset is epoch milliseconds.
    let reset = chrono::Utc::now().timestamp_millis() + 600;
    let waited = wait_after_429(header("X-RateLimit-Reset", reset.to_string()));
    assert!(
        (1..=600).contains(&waited),
        "X-RateLimit-Reset: {waited} ms"
    );

    // A date already passed: retry at once rather than fall back to the backoff.
    let passed = "Wed, 21 Oct 2015 07:28:00 GMT".to_string();
    assert_eq!(wait_after_429(header("Retry-After", passed)), 0);
}

#[test]
fn openrouter_daily_quota_is_not_retried() {
    droid::fixtures_or_skip!();
    for name in [
        "error_429_free_models_per_day_real.json",
        "error_429_free_daily_with_limit_source_real.json",
    ] {
        let body = fixture(&format!("openrouter/{name}"));
        let (events, code, requests, _) = failing("openrouter", 429, body, Vec::new());
        assert_eq!((code, requests), (Some(0), 1), "{name}");
        assert!(fallback_ai(&events)["error"]
            .as_str()
            .unwrap()
            .contains("free-models-per-day"));
    }
}

#[test]
fn request_errors_fall_back_without_retry() {
    droid::fixtures_or_skip!();
    let cases = [
        (
            "openai",
            413,
            fixture("openai_compat/groq_error_413_request_too_large_tpm_real.json"),
            "Request too large",
        ),
        (
            "openai",
            400,
            fixture("openai_compat/lmstudio_error_json_object_rejected_real.json")["body"].clone(),
            "must be 'json_schema'",
        ),
        (
            "openai",
            400,
            fixture("openai_compat/vllm_error_old_format_pre_0.10.1_real.json"),
            "maximum context length",
        ),
        (
            "openai",
            400,
            fixture("openai_compat/vllm_error_new_format_0.10.1plus.json"),
            "maximum context length is 32768 tokens",
        ),
        (
            "openai",
            400,
            fixture("openai_compat/groq_error_context_length_real.json"),
            "reduce the length of the messages",
        ),
        (
            "openai",
            400,
            fixture("openai_compat/groq_error_json_validate_failed_real.json"),
            "Failed to generate JSON",
        ),
        (
            // Ollama's OpenAI-compatible /v1 rejecting a message it cannot read.
            "openai",
            400,
            fixture("ollama/errors_openai_compat.json")["example_400_bad_content"].clone(),
            "invalid message content type",
        ),
        (
            // A guardrail judged this step's prompt (a screen's text), not the key.
            "openrouter",
            403,
            fixture("openrouter/error_docs_examples.json")["403_guardrail"].clone(),
            "prompt injection patterns",
        ),
    ];
    for (decider, status, body, message) in cases {
        let (events, code, requests, _) = failing(decider, status, body, Vec::new());
        assert_eq!((code, requests), (Some(0), 1), "{message}");
        let ai = fallback_ai(&events);
        assert!(ai["error"].as_str().unwrap().contains(message), "{ai}");
    }
}

#[test]
fn server_errors_and_timeouts_are_retried_twice() {
    droid::fixtures_or_skip!();
    let busy = fixture("ollama/errors_native.json")["queue_full_503"]["body"].clone();
    let show = fixture("ollama/show_response_gemma4_openapi.json");
    let server = Server::start(move |seen, _| match seen.url.as_str() {
        "/api/show" => reply(200, &show),
        _ => reply(503, &busy),
    });
    let output = decide_steps("ollama", &server.base, 1, &[]);
    let events = read_events(&output, &server);
    let ai = fallback_ai(&events);
    // The vision check, then the chat and its 2 retries.
    let attempts = ai["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 4, "{attempts:?}");
    assert_eq!(attempts[0]["endpoint"], "/api/show");
    assert!(attempts[1..].iter().all(|a| a["http_status"] == 503));
    assert_eq!(ai["retries"], 2);
    assert!(ai["error"].as_str().unwrap().contains("server busy"));

    let slow = Server::start(|_, _| Reply {
        delay: Duration::from_millis(1500),
        ..reply(200, &json!({}))
    });
    // A server that never answers in time was never reached: without the fallback asked
    // for, the stage would stop.
    let mut child_args = vec!["--timeout", "0.2", "--on-unreachable", "fallback"];
    child_args.push("--text-only");
    let output = decide_steps("openai", &slow.base, 1, &child_args);
    assert!(output.status.success());
    let events = read_events(&output, &slow);
    let ai = fallback_ai(&events);
    assert_eq!(slow.requests().len(), 3);
    assert_eq!(ai["retries"], 2);
    assert!(ai["attempts"][0].get("http_status").is_none());
    let error = ai["error"].as_str().unwrap();
    assert_eq!(error.matches(&slow.base).count(), 1, "{error}");
    assert!(error.contains("timed out"), "{error}");
}

/// Runs `droid-decide models --provider ollama` against a server and returns the listed names.
fn ollama_models(tags: Value, show: impl Fn(&str) -> Value + Send + Sync + 'static) -> Vec<String> {
    let server = Server::start(move |seen, _| match seen.url.as_str() {
        "/api/tags" => reply(200, &tags),
        _ => reply(200, &show(seen.body["model"].as_str().unwrap_or(""))),
    });
    listed_models("ollama", &server.base, &[])
}

/// The lines of a successful `droid-decide models --provider P --base-url BASE` (and `extra`).
pub(crate) fn listed_models(provider: &str, base: &str, extra: &[&str]) -> Vec<String> {
    let output = droid("droid-decide")
        .args(["models", "--provider", provider, "--base-url", base])
        .args(extra)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Ollama's documented `/api/show` answer for llava, read as the JSON5 it is. Its body is llama 3
/// 8B's (`details.families` `["llama"]`, no `projector_info`, no `.vision.` keys): only its
/// `capabilities` say vision.
fn llava_show() -> Value {
    let path = fixtures().join("providers/ollama/show_response_llava_doc.json5");
    json5::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `show` with `capabilities` as a server answers them, or without the key (`None`: before
/// 0.6.4).
fn with_capabilities(mut show: Value, capabilities: Option<Value>) -> Value {
    let object = show.as_object_mut().unwrap();
    match capabilities {
        Some(capabilities) => object.insert("capabilities".into(), capabilities),
        None => object.remove("capabilities"),
    };
    show
}

/// The mmproj of a projector model as `/api/show` reports it in `projector_info` (the keys named
/// in show_capabilities_by_version_pr10509.txt).
fn clip_projector() -> Value {
    json!({"general.architecture": "clip", "clip.has_vision_encoder": true})
}

/// Real `capabilities` of a 0.6.5-0.6.7 server, by model (show_capabilities_by_version_pr10509).
fn capabilities_before_0_6_8() -> Vec<(String, Value)> {
    let path = fixtures().join("providers/ollama/show_capabilities_by_version_pr10509.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('$') && !l.trim().is_empty())
        .map(|l| {
            let (name, caps) = l.split_once(' ').unwrap();
            (name.to_string(), serde_json::from_str(caps.trim()).unwrap())
        })
        .collect()
}

#[test]
fn ollama_vision_detection_for_each_capabilities_variant() {
    droid::fixtures_or_skip!();
    // A 0.6.5-0.6.7 server: gemma3 and mistral-small3.1 say "vision"; the projector models
    // (llava, llama3.2-vision, ...) do not, but report their mmproj in projector_info.
    let capabilities = capabilities_before_0_6_8();
    assert_eq!(capabilities.len(), 10);
    // The JSON5 read whole: a single-quoted string holding double quotes, a commented line.
    let llava = llava_show();
    assert!(llava["modelfile"]
        .as_str()
        .unwrap()
        .contains("generated by \"ollama show\""));
    assert_eq!(llava["model_info"]["tokenizer.ggml.tokens"], json!([]));
    let names: Vec<String> = capabilities.iter().map(|(n, _)| n.clone()).collect();
    let tags = json!({"models": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()});
    let listed = ollama_models(tags, move |model| {
        let caps = capabilities
            .iter()
            .find(|(n, _)| n == model)
            .unwrap()
            .1
            .clone();
        let mut show = with_capabilities(llava_show(), Some(caps.clone()));
        if !caps.as_array().unwrap().contains(&json!("vision")) {
            show["projector_info"] = clip_projector();
        }
        show
    });
    assert_eq!(listed, names, "every one takes images");

    // Each sign alone, on the real bodies.
    let mut families_clip = with_capabilities(llava_show(), None);
    families_clip["details"]["families"] = json!(["llama", "clip"]);
    let mut projector = with_capabilities(llava_show(), None);
    projector["projector_info"] = clip_projector();
    let cases = [
        // capabilities with "vision" (0.6.4+), as documented.
        ("llava-doc", llava_show(), true),
        (
            "gemma4-doc",
            fixture("ollama/show_response_gemma4_openapi.json"),
            true,
        ),
        // Before 0.6.4: no capabilities key.
        ("llava-projector", projector, true),
        ("llava-families-clip", families_clip, true),
        (
            "gemma4-vision-keys",
            with_capabilities(fixture("ollama/show_response_gemma4_openapi.json"), None),
            true,
        ),
        (
            "llama3-no-sign",
            with_capabilities(llava_show(), None),
            false,
        ),
        // A text model on 0.6.4+: no "vision", no projector, no vision keys.
        (
            "llama3-text",
            with_capabilities(llava_show(), Some(json!(["completion"]))),
            false,
        ),
    ];
    let tags =
        json!({"models": cases.iter().map(|(n, _, _)| json!({"name": n})).collect::<Vec<_>>()});
    let expected: Vec<&str> = cases.iter().filter(|c| c.2).map(|c| c.0).collect();
    let bodies: Vec<(&str, Value)> = cases.iter().map(|(n, b, _)| (*n, b.clone())).collect();
    let listed = ollama_models(tags, move |model| {
        bodies.iter().find(|(n, _)| *n == model).unwrap().1.clone()
    });
    assert_eq!(listed, expected);

    // 0.30+ lists capabilities in /api/tags: no /api/show needed.
    let tags = json!({"models": [
        {"name": "qwen3-vl:8b", "capabilities": ["completion", "vision"]},
        {"name": "llama3.2:latest", "capabilities": ["completion", "tools"]}
    ]});
    let listed = ollama_models(tags, |_| json!({"error": "not asked"}));
    assert_eq!(listed, ["qwen3-vl:8b"]);
}

#[test]
fn model_lists_show_only_vision_models() {
    droid::fixtures_or_skip!();
    let mut entries = fixture("openrouter/models_list_response_openapi_example.json");
    entries["data"].as_array_mut().unwrap().push(fixture(
        "openrouter/models_entry_vision_fixture_gpt5mini.json",
    ));
    let server = Server::start(move |_, _| reply(200, &entries));
    let output = droid("droid-decide")
        .args(["models", "--provider", "openrouter", "--api-key", KEY])
        .args(["--base-url", &api_base(&server, "openrouter")])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "openai/gpt-5-mini\n"
    );
    assert_eq!(server.requests()[0].url, "/api/v1/models");

    // The OpenAI-compatible servers: decide_openai_compat, each on the paths it serves.

    // The real first page ends in a base64 nextPageToken ("...MDE="); a second page follows.
    let gemini = fixture("gemini/models_list_response_cookbook.json");
    let last_page = json!({"models": [{"name": "models/gemini-2.5-flash",
        "supportedGenerationMethods": ["generateContent", "countTokens"]}]});
    let server = Server::start(move |seen, _| match seen.url.contains("pageToken") {
        false => reply(200, &gemini),
        true => reply(200, &last_page),
    });
    let output = droid("droid-decide")
        .args([
            "models",
            "--provider",
            "gemini",
            "--api-key",
            KEY,
            "--base-url",
            &server.base,
        ])
        .output()
        .unwrap();
    let listed = String::from_utf8(output.stdout).unwrap();
    assert!(listed.lines().all(|l| l.starts_with("gemini")), "{listed}");
    assert!(listed.lines().any(|l| l == "gemini-2.0-flash"), "{listed}");
    assert_eq!(listed.lines().last(), Some("gemini-2.5-flash"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1]
            .url
            .ends_with("&pageToken=CiRtb2RlbHMvZ2VtaW5pLTIuMC1mbGFzaC10aGlua2luZy0wMDE%3D"),
        "the token is URL-encoded: {}",
        requests[1].url
    );
    assert!(requests
        .iter()
        .all(|r| r.header("x-goog-api-key") == Some(KEY) && !r.url.contains(KEY)));

    // The deciders that ask no provider are a usage error, with the providers named.
    let output = droid("droid-decide")
        .args(["models", "--provider", "heuristic"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("gemini, openrouter, ollama, openai"),
        "{stderr}"
    );
}

#[test]
fn help_names_every_key_and_endpoint_variable() {
    for args in [&["--help"][..], &["models", "--help"]] {
        let output = droid("droid-decide").args(args).output().unwrap();
        assert!(output.status.success());
        let help = String::from_utf8(output.stdout).unwrap();
        for name in [
            "GEMINI_API_KEY",
            "OPENROUTER_API_KEY",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OLLAMA_BASE_URL",
            "TEST_PASSWORD",
            "Examples:",
        ] {
            assert!(help.contains(name), "{args:?} lacks {name}:\n{help}");
        }
    }
}

#[test]
fn keys_come_from_the_environment_and_are_required() {
    droid::fixtures_or_skip!();
    let output = droid("droid-decide")
        .args(["--decider", "gemini"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no API key"));

    let body = fixture("gemini/error_400_api_key_invalid_continue8516.json");
    let server = Server::start(move |_, _| reply(400, &body));
    let dir = tempfile::tempdir().unwrap();
    let mut child = droid("droid-decide")
        .args(["--decider", "gemini", "--base-url", &server.base])
        .env("GEMINI_API_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{}", observation(dir.path())).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    read_events(&output, &server);
    assert_eq!(server.requests()[0].header("x-goog-api-key"), Some(KEY));
}

/// Stores `value` as a secret in a user_config.db through `droid-record config`.
pub fn store_secret(config_db: &std::path::Path, key: &str, value: &str) {
    let mut set = droid("droid-record")
        .arg("config")
        .arg("--config-db")
        .arg(config_db)
        .args(["set", key, "--secret"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(set.stdin.take().unwrap(), "{value}").unwrap();
    assert!(set.wait().unwrap().success());
}

#[test]
fn keys_resolve_flag_then_user_config_then_environment() {
    droid::fixtures_or_skip!();
    const STORED: &str = "sk-stored-in-user-config-0b1c";
    const FROM_ENV: &str = "sk-from-environment-9d8e";
    let mut body = fixture("gemini/generateContent_response_image_cookbook.json");
    body["candidates"][0]["content"]["parts"][0]["text"] = Value::from(decision_text());
    let server = Server::start(move |_, _| reply(200, &body));
    let dir = tempfile::tempdir().unwrap();
    let config_db = dir.path().join("user_config.db");
    store_secret(&config_db, "gemini_api_key", STORED);
    let key_sent = |how: &dyn Fn(&mut std::process::Command)| {
        let before = server.requests().len();
        let mut cmd = droid("droid-decide");
        cmd.args(["--decider", "gemini", "--base-url", &server.base])
            .env("GEMINI_API_KEY", FROM_ENV);
        how(&mut cmd);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        writeln!(child.stdin.take().unwrap(), "{}", observation(dir.path())).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
        let out = String::from_utf8_lossy(&output.stdout).to_string()
            + &String::from_utf8_lossy(&output.stderr);
        for key in [STORED, FROM_ENV, KEY] {
            assert!(!out.contains(key), "a key leaked: {out}");
        }
        let request = &server.requests()[before];
        request.header("x-goog-api-key").unwrap().to_string()
    };
    // user_config.db beats the environment, by flag or by DROID_USER_CONFIG.
    let by_flag = key_sent(&|cmd| {
        cmd.arg("--config-db").arg(&config_db);
    });
    assert_eq!(by_flag, STORED);
    let by_env = key_sent(&|cmd| {
        cmd.env("DROID_USER_CONFIG", &config_db);
    });
    assert_eq!(by_env, STORED);
    // A flag beats user_config.db.
    let flagged = key_sent(&|cmd| {
        cmd.arg("--config-db")
            .arg(&config_db)
            .args(["--api-key", KEY]);
    });
    assert_eq!(flagged, KEY);
    // Without user_config.db the environment answers.
    assert_eq!(key_sent(&|_| {}), FROM_ENV);
}

/// droid-decide (gemini, key from the environment) on one observation against `server`.
fn decide_with_env_key(server: &Server, key: &str, dir: &std::path::Path) -> Output {
    feed(
        droid("droid-decide")
            .args(["--decider", "gemini", "--base-url", &server.base])
            .env("GEMINI_API_KEY", key),
        &observation(dir),
    )
}

#[test]
fn a_key_read_with_a_line_break_is_trimmed_and_an_unusable_one_stops_unquoted() {
    droid::fixtures_or_skip!();
    let mut body = fixture("gemini/generateContent_response_image_cookbook.json");
    body["candidates"][0]["content"]["parts"][0]["text"] = Value::from(decision_text());
    let server = Server::start(move |_, _| reply(200, &body));
    let dir = tempfile::tempdir().unwrap();
    // `GEMINI_API_KEY=$(cat key.txt)` of a file saved with Windows line endings.
    let output = decide_with_env_key(&server, &format!("{KEY}\r\n"), dir.path());
    assert!(output.status.success(), "{output:?}");
    read_events(&output, &server);
    assert_eq!(server.requests()[0].header("x-goog-api-key"), Some(KEY));

    const SPACED: &str = "sk-pasted with-a-space-4411";
    let output = decide_with_env_key(&server, SPACED, dir.path());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot go in an HTTP header"), "{stderr}");
    assert!(!stderr.contains("with-a-space"), "{stderr}");
    assert_eq!(server.requests().len(), 1, "nothing sent with the bad key");
}

#[test]
fn a_key_the_server_echoes_is_scrubbed_before_it_reaches_a_note_or_crawler_db() {
    let echo = json!({"error": {"code": 400, "message": format!("Invalid request for key {KEY}")}});
    let server = Server::start(move |_, _| reply(400, &echo));
    let dir = tempfile::tempdir().unwrap();
    let output = decide_steps("openrouter", &server.base, 1, &[]);
    assert_eq!(output.status.code(), Some(0));
    let events = read_events(&output, &server);
    let ai = fallback_ai(&events);
    assert!(
        ai["error"].as_str().unwrap().contains("key <redacted>"),
        "{ai}"
    );
    record(&dir.path().join("crawler.db"), &output);
    let stored: Vec<u8> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().contains("crawler.db"))
        .flat_map(|path| std::fs::read(path).unwrap())
        .collect();
    assert!(!stored.is_empty());
    assert!(
        !stored.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
        "the key is in crawler.db"
    );
    assert!(
        stored.windows(10).any(|w| w == b"<redacted>"),
        "the error was recorded"
    );
}

/// `droid-record --db` on a stage's output.
fn record(db: &std::path::Path, output: &Output) {
    let recorded = feed(
        droid("droid-record").arg("--db").arg(db),
        &String::from_utf8_lossy(&output.stdout),
    );
    assert!(recorded.status.success(), "{recorded:?}");
}

#[test]
fn a_one_shot_decide_keeps_the_ask_for_one_action_and_forgets_a_stuck_reason_told() {
    droid::fixtures_or_skip!();
    // Step 1's answer is unusable, step 2's too, step 3's good: a decide per step, learning
    // the run from crawler.db, asks step 2 and step 3 for one action, and step 4 for a batch.
    let mut good = fixture("gemini/generateContent_response_image_cookbook.json");
    good["candidates"][0]["content"]["parts"][0]["text"] = Value::from(decision_text());
    let bad = fixture("gemini/generateContent_response_image_cookbook.json");
    let server = Server::start(move |_, index| reply(200, if index < 2 { &bad } else { &good }));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crawler.db");
    let line = observation(dir.path());
    let stuck = json!({"type": "note", "v": 1, "run_id": "r1", "step": 1, "kind": "stuck",
        "message": "same screen 5 times"})
    .to_string();
    for step in 1..=4 {
        let observed = line.replace("\"step\":1", &format!("\"step\":{step}"));
        let lines = match step {
            1 => vec![stuck.clone(), observed],
            _ => vec![observed],
        };
        let output = decide(
            "gemini",
            &server.base,
            &lines,
            &["--db", &db.display().to_string(), "--run", "r1"],
        );
        assert!(output.status.success(), "{output:?}");
        record(&db, &output);
    }
    let requests = server.requests();
    let asked = |i: usize| requests[i].body["contents"][0]["parts"][1]["text"].to_string();
    let one: Vec<bool> = (0..4).map(|i| asked(i).contains("exactly ONE")).collect();
    assert_eq!(one, [false, true, true, false]);
    assert!(asked(0).contains("is_stuck: true"));
    for i in 1..4 {
        assert!(
            asked(i).contains("is_stuck: false"),
            "step {}: {}",
            i + 1,
            asked(i)
        );
    }
}

#[test]
fn refusals_that_asking_again_cannot_change_stop_with_a_note_of_the_attempt() {
    droid::fixtures_or_skip!();
    let examples = fixture("openrouter/error_docs_examples.json");
    let ollama_v1 = fixture("ollama/errors_openai_compat.json");
    let cases = [
        (
            "openrouter",
            402,
            examples["402"].clone(),
            "Insufficient credits",
        ),
        (
            "openrouter",
            400,
            examples["availability_model_not_found_400_NOTE_no_code_field"].clone(),
            "not a valid model ID",
        ),
        (
            // Ollama's /v1 answers 400, not 404, for a model it has not pulled.
            "openai",
            400,
            ollama_v1["example_400_from_test"].clone(),
            "model not found",
        ),
        (
            // Schemas Gemini cannot read: every request of the stage would fail the same way.
            "gemini",
            400,
            fixture("gemini/error_400_bad_request_field_violations_mscraftsman53.json"),
            "Invalid value at 'generation_config.response_schema'",
        ),
        (
            "gemini",
            400,
            fixture("gemini/error_400_unknown_field_in_response_schema_pickarecipe29.json"),
            "Unknown name",
        ),
    ];
    for (decider, status, body, message) in cases {
        let (events, code, requests, stderr) = failing(decider, status, body, Vec::new());
        assert_eq!((code, requests), (Some(1), 1), "{message}");
        assert!(
            stderr.contains("refuses the request") && stderr.contains(message),
            "{stderr}"
        );
        assert!(of_type(&events, "decision").is_empty());
        let note = error_note(&events);
        assert!(note["message"].as_str().unwrap().contains(message));
        assert_eq!(note["data"]["ai"]["attempts"][0]["http_status"], status);
    }
}

#[test]
fn the_same_refusal_three_steps_in_a_row_stops_the_stage_in_one_process_or_per_step() {
    droid::fixtures_or_skip!();
    // vLLM serving a model that takes one image per request: the same 400 on every step.
    let body = fixture("openai_compat/vllm_error_too_many_images_real.json");
    let server = Server::start(move |_, _| reply(400, &body));
    let dir = tempfile::tempdir().unwrap();
    let line = observation(dir.path());
    let lines = vec![line.clone(); 5];
    let output = decide("openai", &server.base, &lines, &[]);
    assert_eq!(output.status.code(), Some(1));
    let events = read_events(&output, &server);
    assert_eq!(
        of_type(&events, "decision").len(),
        2,
        "two steps decided by the heuristic"
    );
    let last = events.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["kind"].as_str()),
        (Some("note"), Some("error"))
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("3 steps in a row"));
    assert_eq!(server.requests().len(), 3, "a refusal is not retried");

    // The same with a decide per step learning the run from crawler.db.
    let db = dir.path().join("crawler.db");
    let codes: Vec<Option<i32>> = (1..=3)
        .map(|step| {
            let observed = line.replace("\"step\":1", &format!("\"step\":{step}"));
            let output = decide(
                "openai",
                &server.base,
                &[observed],
                &["--db", &db.display().to_string(), "--run", "r1"],
            );
            record(&db, &output);
            output.status.code()
        })
        .collect();
    assert_eq!(codes, [Some(0), Some(0), Some(1)]);
    // The call the stage stopped on is an AI interaction too, a failed one, with its request.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows: Vec<(i64, bool, Option<String>, bool)> = conn
        .prepare(
            "SELECT step_number, success, error_message, request_json IS NOT NULL
             FROM ai_interactions ORDER BY step_number",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(
        rows.iter().all(|(_, success, error, request)| !success
            && error.as_deref().is_some_and(|e| e.contains("HTTP 400"))
            && *request),
        "{rows:?}"
    );
    assert_eq!(rows[2].0, 3);
    let (calls, errors): (i64, i64) = conn
        .query_row(
            "SELECT total_ai_calls, ai_error_count FROM run_stats",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((calls, errors), (3, 3));
}

/// Every key path of `value` ("messages[]/content[]/type"), `_`-prefixed provenance left out and
/// schemas not entered (their contents are the request's own, not the API's shape).
fn key_paths(value: &Value, prefix: &str, paths: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object.iter().filter(|(key, _)| !key.starts_with('_')) {
                let path = format!("{prefix}/{key}");
                paths.insert(path.clone());
                if !matches!(key.as_str(), "schema" | "responseJsonSchema" | "format") {
                    key_paths(inner, &path, paths);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{prefix}[]"), paths);
            }
        }
        _ => {}
    }
}

#[test]
fn requests_have_the_shape_of_each_providers_documented_request() {
    droid::fixtures_or_skip!();
    let mut gemini = fixture("gemini/generateContent_response_image_cookbook.json");
    gemini["candidates"][0]["content"]["parts"][0]["text"] = Value::from(decision_text());
    let mut chat = fixture("openrouter/chat_response_real_gpt4o-mini_azure.json");
    chat["choices"][0]["message"]["content"] = Value::from(decision_text());
    let mut ollama = fixture("ollama/chat_response_structured_schema.json");
    ollama["message"]["content"] = Value::from(decision_text());
    let show = fixture("ollama/show_response_gemma4_openapi.json");
    // (decider, answer, documented requests, what droid leaves out on purpose)
    let cases = [
        (
            "gemini",
            gemini,
            vec!["gemini/generateContent_request_crawler_template.json"],
            // No output cap: a thinking model's thoughts count against it.
            vec!["/generationConfig/maxOutputTokens"],
        ),
        (
            "openrouter",
            chat.clone(),
            vec!["openrouter/chat_request_vision_json_schema.json"],
            vec!["/max_tokens", "/messages[]/content[]/image_url/detail"],
        ),
        (
            "openai",
            chat,
            vec![
                "ollama/v1_chat_completions_request_json_schema.json",
                "openai_compat/lmstudio_structured_request_doc.json",
            ],
            vec!["/max_tokens"],
        ),
        (
            "ollama",
            ollama,
            vec![
                "ollama/chat_request_images.json",
                "ollama/chat_request_structured_schema.json",
                "ollama/chat_request_nostream.json",
            ],
            vec![],
        ),
    ];
    for (decider, answer, documented, left_out) in cases {
        let show = show.clone();
        let server = Server::start(move |seen, _| match seen.url.as_str() {
            "/api/show" => reply(200, &show),
            _ => reply(200, &answer),
        });
        let base = api_base(&server, decider);
        let output = decide_steps(decider, &base, 1, &[]);
        assert!(output.status.success(), "{output:?}");
        let sent = server
            .requests()
            .into_iter()
            .find(|r| r.url != "/api/show")
            .unwrap();
        let mut ours = std::collections::BTreeSet::new();
        key_paths(&sent.body, "", &mut ours);
        for name in documented {
            let mut theirs = std::collections::BTreeSet::new();
            key_paths(&fixture(name), "", &mut theirs);
            let missing: Vec<&String> = theirs
                .iter()
                .filter(|path| !ours.contains(*path) && !left_out.contains(&path.as_str()))
                .collect();
            assert!(missing.is_empty(), "{decider} lacks {missing:?} of {name}");
        }
    }
}

#[test]
fn text_a_model_asks_to_type_reaches_the_decision_as_it_was_written() {
    droid::fixtures_or_skip!();
    // Shell in the text is text: droid-act types it (tests/integration/act.rs hostile_text).
    let hostile = "$(reboot); rm -rf / && echo \"x\" 'y' `id` | sh\n\\n%s ☃";
    let answer = json!({"actions": [{"action": "input", "action_desc": "type", "reasoning": "r",
        "ref": "[ref=1]", "input_text": hostile}]});
    let mut chat = fixture("openrouter/chat_response_real_gpt4o-mini_azure.json");
    chat["choices"][0]["message"]["content"] = Value::from(answer.to_string());
    let server = Server::start(move |_, _| reply(200, &chat));
    let output = decide_steps("openai", &server.base, 1, &["--text-only"]);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let action = &of_type(&events, "decision")[0]["actions"][0];
    assert_eq!(
        (action["input_text"].as_str(), action["ref"].as_u64()),
        (Some(hostile), Some(1))
    );
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_model_never_reached_stops_the_stage_unless_told_to_fall_back() {
    let base = format!("http://127.0.0.1:{}", closed_port());
    let dir = tempfile::tempdir().unwrap();
    let lines = vec![observation(dir.path()); 2];
    let stopped = decide("ollama", &base, &lines, &[]);
    assert_eq!(stopped.status.code(), Some(1), "{stopped:?}");
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert!(stderr.contains("the model was never reached"), "{stderr}");
    let stdout = String::from_utf8_lossy(&stopped.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(of_type(&events, "decision").is_empty(), "{stdout}");
    assert_eq!(error_note(&events)["data"]["ai"]["provider"], "ollama");

    // Told to fall back, every step says the heuristic decided it, and why.
    let fell_back = decide("ollama", &base, &lines, &["--on-unreachable", "fallback"]);
    assert!(fell_back.status.success(), "{fell_back:?}");
    let stdout = String::from_utf8_lossy(&fell_back.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decisions = of_type(&events, "decision");
    assert_eq!(decisions.len(), 2);
    for decision in decisions {
        assert_eq!(decision["decider"], "heuristic");
        assert_eq!(decision["ai"]["provider"], "ollama");
        assert!(decision["ai"]["error"].as_str().is_some());
    }
    let warnings = of_type(&events, "note")
        .into_iter()
        .filter(|n| n["kind"] == "warning")
        .count();
    assert_eq!(warnings, 2, "one note per fallback");
}

#[test]
fn a_missing_key_passes_the_stream_through_with_a_note_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let line = observation(dir.path());
    let output = crate::common::feed(
        droid("droid-decide").args(["--decider", "gemini"]),
        &format!("{line}\n"),
    );
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], line, "the input passes through");
    let note: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(
        (note["type"].as_str(), note["kind"].as_str()),
        (Some("note"), Some("error"))
    );
    assert_eq!(note["run_id"], "r1");
    assert!(
        note["message"].as_str().unwrap().contains("GEMINI_API_KEY"),
        "{note}"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("GEMINI_API_KEY"));
}
