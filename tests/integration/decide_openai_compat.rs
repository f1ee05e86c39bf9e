//! droid-decide against each kind of OpenAI-compatible server (vLLM, LM Studio, llama.cpp,
//! Groq-like, Ollama's `/v1`). Each fake server answers only the paths the real one serves, with
//! the fixture bodies, and 404 elsewhere: a detection that asks the wrong place finds nothing.

use serde_json::json;

use crate::decide_providers::{
    decide, fixture, observation, of_type, read_events, reply, Reply, Server,
};

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
    let note = of_type(&events, "note")
        .into_iter()
        .find(|n| n["kind"] == "error")
        .expect("a note of kind error");
    assert_eq!(note["data"]["ai"]["attempts"][0]["http_status"], 500);
}
