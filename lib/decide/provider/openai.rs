//! OpenAI-shaped chat completions: OpenRouter and any OpenAI-compatible server (vLLM, LM Studio,
//! llama.cpp, Groq, Ollama's `/v1`). `POST {base}/chat/completions`, key as a Bearer token.

use base64::Engine;
use serde_json::{json, Value};

use super::http::{answer_message, Client, Request, Verdict};
use super::{
    error_message, join, Generation, ModelAdapter, ModelInfo, Prompt, ProviderConfig,
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
/// ("text+image->text"), LM Studio's `type` (`vlm`/`llm`) and `capabilities.vision`.
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
        Some("llm") | Some("embeddings") => Some(false),
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

    fn list_models(&mut self) -> Result<Vec<ModelInfo>, ProviderError> {
        let request = Request {
            url: self.url("models"),
            headers: self.headers(),
            body: None,
        };
        let kind = self.config.kind;
        let body = self
            .client
            .call(&request, &mut AiMeta::default(), |answer| {
                if answer.body.is_object() {
                    Verdict::Done(answer.body.clone())
                } else {
                    Verdict::Fail(ProviderError::Malformed {
                        provider: kind,
                        message: answer_message(answer),
                    })
                }
            })?;
        let entries = body
            .get("data")
            .or_else(|| body.get("models"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(entries
            .iter()
            .filter_map(|entry| {
                let name = entry.get("id").or_else(|| entry.get("key"))?.as_str()?;
                Some(ModelInfo {
                    provider: kind,
                    name: name.to_string(),
                    vision: vision_of(entry),
                })
            })
            .collect())
    }
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
