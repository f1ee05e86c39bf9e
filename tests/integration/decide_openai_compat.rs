//! droid-decide against each kind of OpenAI-compatible server (vLLM, LM Studio, llama.cpp,
//! Groq-like, Ollama's `/v1`). Each fake server answers only the paths the real one serves, with
//! the fixture bodies, and 404 elsewhere: a detection that asks the wrong place finds nothing.

use serde_json::{json, Value};

use crate::decide_providers::{
    decide, error_note, fixture, listed_models, observation, of_type, read_events, reply, Reply,
    Server,
};

/// The model llama.cpp's fixtures serve, named by its path.
const MODEL_PATH: &str = "../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf";

/// A server answering each of `routes` (path, answer) and 404 for every other path.
fn serving(routes: Vec<(&'static str, Reply)>) -> Server {
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

/// LM Studio's OpenAI-compatible `/v1/models`: the models' names and nothing about what they
/// take (the fixtures hold its native lists only, so this one is made from their names).
fn lmstudio_v1_models(names: &[&str]) -> Value {
    let data: Vec<Value> = names
        .iter()
        .map(|name| json!({"id": name, "object": "model"}))
        .collect();
    json!({"object": "list", "data": data})
}

#[test]
fn lmstudio_vision_comes_from_its_api_v0_models() {
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
    // LM Studio 0.4: `type` is "llm" for this vision model; `capabilities.vision` says it.
    let native = fixture("openai_compat/lmstudio_api_v1_models_excerpt_doc.json");
    let server = serving(vec![
        (
            "/v1/models",
            reply(200, &lmstudio_v1_models(&["google/gemma-4-26b-a4b"])),
        ),
        ("/api/v1/models", reply(200, &native)),
    ]);
    assert_eq!(models(&server.base, false), ["google/gemma-4-26b-a4b"]);
    assert_eq!(asked(&server), ["/v1/models", "/api/v1/models"]);
}

#[test]
fn llamacpp_vision_comes_from_its_models_list_or_its_props() {
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
    let listed = fixture("openai_compat/vllm_models_response_real.json");
    let server = serving(vec![("/v1/models", reply(200, &listed))]);
    assert!(models(&server.base, false).is_empty());
    assert_eq!(
        models(&server.base, true),
        ["Qwen/Qwen2.5-7B-Instruct\tunknown"]
    );
    assert_eq!(asked(&server), ["/v1/models", "/v1/models"]);
}

#[test]
fn llamacpp_without_mmproj_stops_the_stage_at_once() {
    let body = fixture("openai_compat/llamacpp_error_image_without_mmproj_real.json");
    let server = serving(vec![("/v1/chat/completions", reply(500, &body))]);
    let dir = tempfile::tempdir().unwrap();
    let line = observation(dir.path());
    let output = decide("openai", &server.base, &[line.clone(), line], &[]);
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
