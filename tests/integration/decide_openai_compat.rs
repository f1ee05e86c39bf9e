//! droid-decide against each kind of OpenAI-compatible server (vLLM, LM Studio, llama.cpp,
//! Groq-like, Ollama's `/v1`). Each fake server answers only the paths the real one serves, with
//! the fixture bodies, and 404 elsewhere: a detection that asks the wrong place finds nothing.

use serde_json::{json, Value};

use crate::decide_providers::{
    decide_steps, decision_text, error_note, fallback_ai, fixture, listed_models, of_type,
    read_events, reply, Reply, Seen, Server, KEY,
};

/// The model llama.cpp's fixtures serve, named by its path.
const MODEL_PATH: &str = "../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf";

/// A server answering each of `routes` (path, answer) and 404 for every other path.
fn serving(routes: Vec<(&str, Reply)>) -> Server {
    let routes: Vec<(String, Reply)> = routes
        .into_iter()
        .map(|(path, answer)| (path.to_string(), answer))
        .collect();
    Server::start(move |seen, _| {
        routes
            .iter()
            .find(|(path, _)| *path == seen.url)
            .map(|(_, answer)| answer.clone())
            .unwrap_or_else(|| reply(404, &json!({"error": "File Not Found"})))
    })
}

/// The paths a server was asked, in order.
fn asked(server: &Server) -> Vec<String> {
    server.requests().into_iter().map(|r| r.url).collect()
}

/// `droid-decide models --provider openai` (with `--all` when `all`) against `base`: its lines.
fn models(base: &str, all: bool) -> Vec<String> {
    listed_models("openai", base, if all { &["--all"] } else { &[] })
}

/// An OpenAI-compatible `/v1/models` listing `names`, each owned by `owner` when there is one.
fn models_owned_by(owner: Option<&str>, names: &[&str]) -> Value {
    let data: Vec<Value> = names
        .iter()
        .map(|name| match owner {
            Some(owner) => json!({"id": name, "object": "model", "owned_by": owner}),
            None => json!({"id": name, "object": "model"}),
        })
        .collect();
    json!({"object": "list", "data": data})
}

/// LM Studio's OpenAI-compatible `/v1/models`: the models' names, every one "owned by"
/// `organization_owner`, and nothing about what they take (the fixtures hold its native lists
/// only, so this one is made from their names).
fn lmstudio_v1_models(names: &[&str]) -> Value {
    models_owned_by(Some("organization_owner"), names)
}

#[test]
fn lmstudio_vision_comes_from_its_api_v0_models() {
    droid::fixtures_or_skip!();
    let native = fixture("openai_compat/lmstudio_api_v0_models_doc.json");
    let names = ["qwen2-vl-7b-instruct", "meta-llama-3.1-8b-instruct"];
    let server = serving(vec![
        ("/v1/models", reply(200, &lmstudio_v1_models(&names))),
        ("/api/v0/models", reply(200, &native)),
    ]);
    assert_eq!(models(&server.base, false), ["qwen2-vl-7b-instruct"]);
    assert_eq!(
        models(&format!("{}/v1", server.base), true),
        [
            "qwen2-vl-7b-instruct\tvision",
            "meta-llama-3.1-8b-instruct\ttext"
        ]
    );
    // LM Studio 0.4's list first (absent here), then 0.3's.
    assert_eq!(
        asked(&server)[..3],
        ["/v1/models", "/api/v1/models", "/api/v0/models"]
    );
}

#[test]
fn lmstudio_vision_comes_from_its_api_v1_models() {
    droid::fixtures_or_skip!();
    // LM Studio 0.4: `type` is "llm" for this vision model; `capabilities.vision` says it.
    let native = fixture("openai_compat/lmstudio_api_v1_models_excerpt_doc.json");
    // A server naming no owner is asked as LM Studio is.
    let listed = models_owned_by(None, &["google/gemma-4-26b-a4b"]);
    let server = serving(vec![
        ("/v1/models", reply(200, &listed)),
        ("/api/v1/models", reply(200, &native)),
    ]);
    assert_eq!(models(&server.base, false), ["google/gemma-4-26b-a4b"]);
    assert_eq!(asked(&server), ["/v1/models", "/api/v1/models"]);
}

#[test]
fn a_hosted_api_naming_its_models_makers_is_not_asked_for_local_endpoints() {
    // Groq and OpenAI name the models' makers as owners: LM Studio's and llama.cpp's own
    // endpoints are not theirs, and asking would only earn two 404s per listing.
    for owner in ["Meta", "openai", "system"] {
        let listed = models_owned_by(Some(owner), &["llama-3.3-70b-versatile"]);
        let server = serving(vec![("/v1/models", reply(200, &listed))]);
        assert_eq!(
            models(&server.base, true),
            ["llama-3.3-70b-versatile\tunknown"]
        );
        assert_eq!(asked(&server), ["/v1/models"], "{owner}");
    }
}

#[test]
fn llamacpp_vision_comes_from_its_models_list_or_its_props() {
    droid::fixtures_or_skip!();
    // A newer llama-server says it in /v1/models: this one serves a text model.
    let listed = fixture("openai_compat/llamacpp_models_response_doc.json");
    let props = fixture("openai_compat/llamacpp_props_modalities_excerpt_doc.json");
    let server = serving(vec![
        ("/v1/models", reply(200, &listed)),
        ("/props", reply(200, &props)),
    ]);
    assert!(models(&server.base, false).is_empty());
    assert_eq!(models(&server.base, true), [format!("{MODEL_PATH}\ttext")]);
    assert_eq!(
        asked(&server),
        ["/v1/models", "/v1/models"],
        "no /props needed"
    );

    // An older one lists no `architecture`: /props says it, for the model it runs.
    let mut older = listed.clone();
    older["data"][0]
        .as_object_mut()
        .unwrap()
        .remove("architecture");
    for (vision, expected) in [(false, Vec::<&str>::new()), (true, vec![MODEL_PATH])] {
        // `modalities.vision` is true when the server was started with the model's --mmproj.
        let mut props = props.clone();
        props["modalities"]["vision"] = Value::Bool(vision);
        let server = serving(vec![
            ("/v1/models", reply(200, &older)),
            ("/props", reply(200, &props)),
        ]);
        assert_eq!(models(&format!("{}/v1", server.base), false), expected);
        assert_eq!(asked(&server), ["/v1/models", "/props"]);
    }
}

#[test]
fn vllm_says_nothing_about_vision_and_is_not_probed() {
    droid::fixtures_or_skip!();
    let listed = fixture("openai_compat/vllm_models_response_real.json");
    let server = serving(vec![("/v1/models", reply(200, &listed))]);
    assert!(models(&server.base, false).is_empty());
    assert_eq!(
        models(&server.base, true),
        ["Qwen/Qwen2.5-7B-Instruct\tunknown"]
    );
    assert_eq!(asked(&server), ["/v1/models", "/v1/models"]);
    // An empty list says why, on stderr.
    let output = crate::common::droid("droid-decide")
        .args(["models", "--provider", "openai", "--base-url", &server.base])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.stdout.is_empty() && stderr.contains("1 more model(s) of unknown capability"),
        "{stderr}"
    );
}

#[test]
fn llamacpp_without_mmproj_stops_the_stage_at_once() {
    droid::fixtures_or_skip!();
    let body = fixture("openai_compat/llamacpp_error_image_without_mmproj_real.json");
    let server = serving(vec![("/v1/chat/completions", reply(500, &body))]);
    let output = decide_steps("openai", &server.base, 2, &[]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let events = read_events(&output, &server);
    assert_eq!(asked(&server), ["/v1/chat/completions"], "asked once");
    assert!(of_type(&events, "decision").is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("does not take images")
            && stderr.contains("provide the mmproj")
            && stderr.contains("--text-only"),
        "{stderr}"
    );
    let note = error_note(&events);
    assert_eq!(note["data"]["ai"]["attempts"][0]["http_status"], 500);
}

/// An answer naming the Login button by its ref (text mode).
fn ref_text() -> String {
    json!({"actions": [{"action": "click", "ref": 1, "action_desc": "tap Login",
        "reasoning": "explore"}]})
    .to_string()
}

/// `body` with its first choice's content set to `text`.
fn answering(mut body: Value, text: String) -> Value {
    body["choices"][0]["message"]["content"] = Value::from(text);
    body
}

/// One observation decided by `--decider openai` with `extra` flags, at `base_path` of a server
/// whose only path is the chat (`/v1/chat/completions` under the base's API root) answering
/// `answer`: the decision (whose first action must be the Login button) and the request.
fn decided(answer: &Value, base_path: &str, extra: &[&str]) -> (Value, Seen) {
    let root = base_path.strip_suffix("/v1").unwrap_or(base_path);
    let chat = format!("{root}/v1/chat/completions");
    let server = serving(vec![(&chat, reply(200, answer))]);
    let base = format!("{}{base_path}", server.base);
    let output = decide_steps("openai", &base, 1, extra);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    assert!(
        of_type(&events, "note").is_empty(),
        "no warning: {events:?}"
    );
    let decision = of_type(&events, "decision")[0].clone();
    assert_eq!(decision["decider"], "openai");
    assert_eq!(decision["actions"][0]["ref"], 1, "{decision}");
    assert!(decision["ai"].get("error").is_none(), "{decision}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one request, no retry");
    (decision, requests[0].clone())
}

/// The image part of a vision request: a PNG data URL.
fn sent_image(request: &Seen) -> &str {
    request.body["messages"][1]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap()
}

/// The decision's token counts, as the server reported them.
fn tokens(decision: &Value) -> (Option<u64>, Option<u64>) {
    let ai = &decision["ai"];
    (ai["tokens_in"].as_u64(), ai["tokens_out"].as_u64())
}

/// Whether the request carried the key as a Bearer token.
fn sent_key(request: &Seen) -> bool {
    request.header("authorization") == Some(format!("Bearer {KEY}").as_str())
}

#[test]
fn vllm_decides_in_text_mode_for_its_served_model() {
    droid::fixtures_or_skip!();
    // vLLM answers OpenAI's chat.completion shape (no captured vLLM body among the fixtures:
    // the Ollama /v1 shape fixture stands in, named for the model vLLM serves).
    let served = fixture("openai_compat/vllm_models_response_real.json")["data"][0]["id"].clone();
    let model = served.as_str().unwrap();
    let mut answer = answering(
        fixture("ollama/v1_chat_completions_response_shape.json"),
        ref_text(),
    );
    answer["model"] = served.clone();
    let (decision, request) = decided(&answer, "/v1", &["--text-only", "--model", model]);
    assert_eq!(decision["ai"]["model"], model);
    assert_eq!(tokens(&decision), (Some(34), Some(12)));
    assert_eq!(request.url, "/v1/chat/completions");
    assert!(
        sent_key(&request),
        "vLLM's --api-key is checked as a Bearer token"
    );
    assert_eq!(request.body["model"], model);
    let content = request.body["messages"][1]["content"].as_array().unwrap();
    assert_eq!(content.len(), 1, "no image in text mode");
}

#[test]
fn lmstudio_decides_with_a_json_schema_it_accepts() {
    droid::fixtures_or_skip!();
    let model = "qwen2-vl-7b-instruct";
    let mut answer = answering(
        fixture("ollama/v1_chat_completions_response_shape.json"),
        decision_text(),
    );
    answer["model"] = Value::from(model);
    let (decision, request) = decided(&answer, "", &["--model", model]);
    assert_eq!(decision["ai"]["model"], model);
    assert!(sent_image(&request).starts_with("data:image/png;base64,iVBOR"));
    // LM Studio refuses json_object: the request has the shape of its documented json_schema
    // request (type, and json_schema's name, strict and schema).
    let documented = fixture("openai_compat/lmstudio_structured_request_doc.json");
    let keys = |format: &Value| -> Vec<String> {
        let mut keys: Vec<String> = format["json_schema"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    };
    let sent = &request.body["response_format"];
    assert_eq!(sent["type"], documented["response_format"]["type"]);
    assert_eq!(keys(sent), keys(&documented["response_format"]));
    assert_eq!(sent["json_schema"]["schema"]["type"], "object");
}

#[test]
fn llamacpp_decides_through_its_extra_fields_and_an_empty_choice_list_is_no_answer() {
    droid::fixtures_or_skip!();
    // llama-server's answer with its timings and token details; the doc abridges `choices` to
    // [], so the choice is the Ollama /v1 fixture's, carrying the decision. It names no model.
    let documented = fixture("openai_compat/llamacpp_response_extra_fields_doc.json");
    let choice = fixture("ollama/v1_chat_completions_response_shape.json")["choices"][0].clone();
    let mut answer = documented.clone();
    answer["choices"] = json!([choice]);
    let answer = answering(answer, decision_text());
    let (decision, request) = decided(&answer, "", &["--model", MODEL_PATH]);
    assert_eq!(decision["ai"]["model"], MODEL_PATH, "the model asked for");
    assert_eq!(tokens(&decision), (Some(44), Some(48)));
    assert!(sent_image(&request).starts_with("data:image/png;base64,"));
    // llama.cpp reads a json_schema's schema only from response_format.json_schema.schema.
    assert!(request.body["response_format"]["json_schema"]["schema"].is_object());

    // The doc's answer as it is: no choice, so no answer; not retried, the heuristic decides.
    let server = serving(vec![("/v1/chat/completions", reply(200, &documented))]);
    let output = decide_steps("openai", &server.base, 1, &[]);
    assert!(output.status.success(), "{output:?}");
    let events = read_events(&output, &server);
    let ai = fallback_ai(&events);
    assert!(ai["error"].as_str().unwrap().contains("no choices"), "{ai}");
    assert_eq!(asked(&server), ["/v1/chat/completions"]);
}

#[test]
fn a_groq_like_server_decides_past_its_reasoning_fields() {
    droid::fixtures_or_skip!();
    // Groq's answer (through OpenRouter, real): reasoning fields beside the content, no usage.
    let answer = answering(
        fixture("openrouter/chat_response_real_qwen3_groq_reasoning_partial.json"),
        ref_text(),
    );
    let (decision, request) = decided(
        &answer,
        "/openai/v1",
        &["--text-only", "--model", "qwen/qwen3-32b"],
    );
    assert_eq!(decision["ai"]["model"], "qwen/qwen3-32b");
    assert_eq!(tokens(&decision), (None, None), "no usage given");
    assert_eq!(decision["ai"]["response"], ref_text());
    assert!(sent_key(&request));
}

#[test]
fn ollama_v1_decides_in_vision_mode() {
    droid::fixtures_or_skip!();
    let answer = answering(
        fixture("ollama/v1_chat_completions_response_shape.json"),
        decision_text(),
    );
    let (decision, request) = decided(&answer, "/v1", &["--model", "qwen3-vl:8b"]);
    assert_eq!(decision["ai"]["model"], "qwen3-vl:8b");
    assert_eq!(
        decision["actions"][0]["target_bounding_box"]["top_left"],
        json!([40, 200])
    );
    // Ollama's /v1 takes data URLs only (http(s) image URLs are refused).
    assert!(sent_image(&request).starts_with("data:image/png;base64,"));
    let kept = decision["ai"]["request"].to_string();
    assert!(
        kept.contains("step_001.png") && !kept.contains("iVBOR"),
        "{kept}"
    );
}
