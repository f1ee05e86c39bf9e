//! OpenAI-shaped chat completions: OpenRouter and any OpenAI-compatible server (vLLM, LM Studio,
//! llama.cpp, Groq, Ollama's `/v1`). `POST {base}/chat/completions`, key as a Bearer token.

use base64::Engine;
use serde_json::{json, Value};

use super::http::{Client, Request, Verdict};
use super::{
    error_message, fetch_object, join, Generation, ModelAdapter, ModelInfo, Prompt, ProviderConfig,
    ProviderError, ProviderKind, Reply,
};
use crate::events::AiMeta;

pub struct OpenAiChat {
    config: ProviderConfig,
    client: Client,
}

impl OpenAiChat {
    pub fn new(config: ProviderConfig, client: Client) -> OpenAiChat {
        OpenAiChat { config, client }
    }

    /// `{base}/{path}` where base is the API root: `http://host:8000` and `http://host:8000/v1`
    /// both work (`/v1` is added when the base does not end with it).
    fn url(&self, path: &str) -> String {
        let base = self.config.base_url();
        if base.ends_with("/v1") {
            join(&base, path)
        } else {
            join(&join(&base, "v1"), path)
        }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Some(key) = &self.config.api_key {
            headers.push(("Authorization", format!("Bearer {}", key.expose())));
        }
        if self.config.kind == ProviderKind::OpenRouter {
            headers.push(("X-Title", "droid".to_string()));
        }
        headers
    }

    /// The request body; `image_url` is a data URL or, for the kept copy, the screenshot path.
    fn body(&self, prompt: &Prompt, image_url: Option<&str>) -> Value {
        let mut content = vec![json!({"type": "text", "text": prompt.user})];
        if let Some(url) = image_url {
            content.push(json!({"type": "image_url", "image_url": {"url": url}}));
        }
        let mut body = json!({
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": content},
            ],
            "temperature": 0,
            "stream": false,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "decision", "strict": false, "schema": prompt.schema},
            },
        });
        if self.config.kind == ProviderKind::OpenRouter {
            // Route only to endpoints that honour response_format.
            body["provider"] = json!({"require_parameters": true});
        }
        body
    }
}

/// Reads a 200 answer; OpenRouter reports provider failures inside a 200 (`error` at the top, or
/// `finish_reason: "error"` with `choices[].error`).
fn read_generation(provider: ProviderKind, body: &Value, model: &str) -> Verdict<Generation> {
    if let Some(message) = error_message(body) {
        return Verdict::Fail(ProviderError::InBody { provider, message });
    }
    let Some(choice) = body.pointer("/choices/0") else {
        return Verdict::Fail(ProviderError::Malformed {
            provider,
            message: "no choices in the answer".into(),
        });
    };
    if choice.get("finish_reason").and_then(Value::as_str) == Some("error") {
        let message = choice
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("finish_reason \"error\"")
            .to_string();
        return Verdict::Fail(ProviderError::InBody { provider, message });
    }
    let text = match choice.pointer("/message/content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    };
    if text.trim().is_empty() {
        let refusal = choice
            .pointer("/message/refusal")
            .and_then(Value::as_str)
            .unwrap_or("empty content");
        return Verdict::Fail(ProviderError::InBody {
            provider,
            message: format!("no answer: {refusal}"),
        });
    }
    Verdict::Done(Generation {
        text,
        tokens_in: body.pointer("/usage/prompt_tokens").and_then(Value::as_u64),
        tokens_out: body
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_u64),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(model)
            .to_string(),
    })
}

/// Vision capability from whatever a server's model entry carries: OpenRouter's and llama.cpp's
/// `architecture.input_modalities`, OpenRouter's legacy `architecture.modality`
/// ("text+image->text"), LM Studio's `capabilities.vision` (`/api/v1/models`, whose `type` is
/// `llm` for a vision model too) and `type` (`/api/v0/models`: `vlm`, `llm`, `embeddings`).
/// vLLM says nothing: `None`.
fn vision_of(entry: &Value) -> Option<bool> {
    if let Some(modalities) = entry
        .pointer("/architecture/input_modalities")
        .and_then(Value::as_array)
    {
        return Some(modalities.iter().any(|m| m.as_str() == Some("image")));
    }
    if let Some(modality) = entry
        .pointer("/architecture/modality")
        .and_then(Value::as_str)
    {
        let inputs = modality.split("->").next().unwrap_or("");
        return Some(inputs.contains("image"));
    }
    if let Some(vision) = entry
        .pointer("/capabilities/vision")
        .and_then(Value::as_bool)
    {
        return Some(vision);
    }
    match entry.get("type").and_then(Value::as_str) {
        Some("vlm") => Some(true),
        Some("llm") | Some("embeddings") | Some("embedding") => Some(false),
        _ => None,
    }
}

impl ModelAdapter for OpenAiChat {
    fn info(&self) -> ModelInfo {
        ModelInfo {
            provider: self.config.kind,
            name: self.config.model.clone(),
            vision: None,
        }
    }

    fn generate(&mut self, prompt: &Prompt) -> Reply {
        let data_url = prompt.image.as_ref().map(|image| {
            let data = base64::engine::general_purpose::STANDARD.encode(&image.png);
            format!("data:image/png;base64,{data}")
        });
        let sent = self.body(prompt, data_url.as_deref());
        let mut meta = AiMeta {
            provider: self.config.kind.to_string(),
            model: Some(self.config.model.clone()),
            request: Some(self.body(prompt, prompt.image.as_ref().map(|i| i.path.as_str()))),
            ..AiMeta::default()
        };
        let request = Request {
            url: self.url("chat/completions"),
            headers: self.headers(),
            body: Some(&sent),
        };
        let (kind, model) = (self.config.kind, self.config.model.clone());
        let result = self.client.call(&request, &mut meta, |answer| {
            read_generation(kind, &answer.body, &model)
        });
        Reply { result, meta }
    }

    /// `/v1/models`, with each model's vision from its entry or, where the entry does not say,
    /// from the server's own endpoint (see [`Server`]).
    fn list_models(&mut self) -> Result<Vec<ModelInfo>, ProviderError> {
        let listed = self.get(self.url("models"))?;
        let entries = model_entries(&listed);
        let kind = self.config.kind;
        let mut models: Vec<ModelInfo> = entries
            .iter()
            .filter_map(|entry| {
                let name = entry.get("id").or_else(|| entry.get("key"))?.as_str()?;
                Some(ModelInfo {
                    provider: kind,
                    name: name.to_string(),
                    vision: vision_of(entry),
                })
            })
            .collect();
        if kind == ProviderKind::OpenAi && models.iter().any(|m| m.vision.is_none()) {
            self.ask_the_server(Server::of(entries), &mut models);
        }
        Ok(models)
    }
}

/// What serves an OpenAI-compatible `/v1/models`, as its entries' `owned_by` says; each kind
/// keeps its models' vision somewhere of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// llama.cpp's llama-server (`owned_by: "llamacpp"`): newer ones say it in
    /// `architecture.input_modalities`, every one in `GET /props` `modalities.vision` (for the
    /// model it serves).
    LlamaCpp,
    /// vLLM (`owned_by: "vllm"`): no endpoint says whether a model takes images.
    Vllm,
    /// LM Studio (`owned_by: "organization_owner"`), or a server that names no owner: its
    /// `/v1/models` names the models and nothing else. LM Studio 0.4+ says it in
    /// `GET /api/v1/models` (`capabilities.vision`), 0.3.6+ in `GET /api/v0/models`
    /// (`type: vlm`).
    LmStudio,
    /// A hosted API naming the models' makers as owners (OpenAI's "openai" or "system", Groq's
    /// "Meta" or "Alibaba Cloud"): none of the local servers' endpoints, so none is asked.
    Hosted,
}

impl Server {
    fn of(entries: &[Value]) -> Server {
        let owner = entries
            .iter()
            .find_map(|entry| entry.get("owned_by").and_then(Value::as_str));
        match owner {
            Some("llamacpp") => Server::LlamaCpp,
            Some("vllm") => Server::Vllm,
            Some("organization_owner") | None => Server::LmStudio,
            Some(_) => Server::Hosted,
        }
    }
}

/// The model entries of a list answer: `data` (OpenAI's shape) or `models` (LM Studio's
/// `/api/v1/models`).
fn model_entries(listed: &Value) -> &[Value] {
    listed
        .get("data")
        .or_else(|| listed.get("models"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

impl OpenAiChat {
    /// `{base}/{path}` at the server's root, for endpoints outside `/v1` (`/props`, `/api/v0`).
    fn root_url(&self, path: &str) -> String {
        let base = self.config.base_url();
        join(base.strip_suffix("/v1").unwrap_or(&base), path)
    }

    fn get(&self, url: String) -> Result<Value, ProviderError> {
        let request = Request {
            url,
            headers: self.headers(),
            body: None,
        };
        fetch_object(
            &self.client,
            self.config.kind,
            &request,
            &mut AiMeta::default(),
        )
    }

    /// Fills in the vision of `models` the list left unknown from the server's own endpoint;
    /// an endpoint the server does not have (404) or cannot answer leaves them unknown.
    fn ask_the_server(&self, server: Server, models: &mut [ModelInfo]) {
        match server {
            Server::Vllm | Server::Hosted => {}
            Server::LlamaCpp => {
                let Ok(props) = self.get(self.root_url("props")) else {
                    return;
                };
                let Some(vision) = props.pointer("/modalities/vision").and_then(Value::as_bool)
                else {
                    return;
                };
                // /props is about the model the server runs: the only one listed, or the one
                // listed by its path.
                let path = props.get("model_path").and_then(Value::as_str);
                let single = models.len() == 1;
                for model in models.iter_mut().filter(|m| m.vision.is_none()) {
                    if single || path == Some(model.name.as_str()) {
                        model.vision = Some(vision);
                    }
                }
            }
            Server::LmStudio => {
                let native = ["api/v1/models", "api/v0/models"]
                    .into_iter()
                    .filter_map(|path| self.get(self.root_url(path)).ok())
                    .find(|listed| !model_entries(listed).is_empty());
                let Some(native) = native else {
                    return;
                };
                for model in models.iter_mut().filter(|m| m.vision.is_none()) {
                    model.vision = model_entries(&native)
                        .iter()
                        .find(|entry| names(entry, &model.name))
                        .and_then(vision_of);
                }
            }
        }
    }
}

/// Whether an LM Studio entry is the model `/v1/models` calls `name`: its `id` (`/api/v0`), its
/// `key` or a loaded instance's `id` (`/api/v1`).
fn names(entry: &Value, name: &str) -> bool {
    let instances = entry
        .get("loaded_instances")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|instance| instance.get("id"));
    [entry.get("id"), entry.get("key")]
        .into_iter()
        .flatten()
        .chain(instances)
        .any(|id| id.as_str() == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vision_from_each_server_shape() {
        let cases = [
            (
                json!({"architecture": {"input_modalities": ["text", "image"]}}),
                Some(true),
            ),
            (
                json!({"architecture": {"input_modalities": ["text"]}}),
                Some(false),
            ),
            (
                json!({"architecture": {"modality": "text+image->text"}}),
                Some(true),
            ),
            (
                json!({"architecture": {"modality": "text->image"}}),
                Some(false),
            ),
            (json!({"type": "vlm"}), Some(true)),
            (json!({"capabilities": {"vision": false}}), Some(false)),
            // LM Studio 0.4's /api/v1/models: the capability wins over the type.
            (
                json!({"type": "llm", "capabilities": {"vision": true}}),
                Some(true),
            ),
            (json!({"id": "Qwen/Qwen2.5-7B-Instruct", "root": "x"}), None),
        ];
        for (entry, expected) in cases {
            assert_eq!(vision_of(&entry), expected, "{entry}");
        }
    }

    #[test]
    fn choice_errors_inside_200_are_errors() {
        let body = json!({"choices": [{"finish_reason": "error", "message": {"content": "partial"},
            "error": {"code": 502, "message": "Provider disconnected mid-stream"}}]});
        let Verdict::Fail(error) = read_generation(ProviderKind::OpenRouter, &body, "m") else {
            panic!("not an error");
        };
        assert!(
            error.to_string().contains("Provider disconnected"),
            "{error}"
        );
    }
}
