//! Google Gemini: `POST {base}/models/{model}:generateContent` with the key in `x-goog-api-key`.

use base64::Engine;
use serde_json::{json, Value};

use super::http::{Client, Request, Verdict};
use super::{
    fetch_object, join, Generation, ModelAdapter, ModelInfo, Prompt, ProviderConfig, ProviderError,
    ProviderKind, Reply,
};
use crate::events::AiMeta;

pub struct Gemini {
    config: ProviderConfig,
    client: Client,
}

impl Gemini {
    pub fn new(config: ProviderConfig, client: Client) -> Gemini {
        Gemini { config, client }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let key = self.config.api_key.as_ref().map(|k| k.expose().to_string());
        key.map(|k| vec![("x-goog-api-key", k)]).unwrap_or_default()
    }

    /// The model path without a leading `models/` (ListModels names include it).
    fn model_path(&self) -> String {
        let name = self.config.model.trim_start_matches("models/");
        format!("models/{name}")
    }
}

/// The request body; `image_data` is the base64 PNG or, for the kept copy, the screenshot path.
fn body(prompt: &Prompt, image_data: Option<&str>) -> Value {
    let mut parts = Vec::new();
    if let Some(data) = image_data {
        parts.push(json!({"inlineData": {"mimeType": "image/png", "data": data}}));
    }
    parts.push(json!({"text": prompt.user}));
    json!({
        "systemInstruction": {"parts": [{"text": prompt.system}]},
        "contents": [{"role": "user", "parts": parts}],
        "generationConfig": {
            "temperature": 0,
            "responseMimeType": "application/json",
            "responseJsonSchema": prompt.schema,
        },
    })
}

/// Reads a 200 answer: non-thought text parts joined; a blocked prompt or an empty candidate is
/// an error.
fn read_generation(body: &Value, model: &str) -> Verdict<Generation> {
    let provider = ProviderKind::Gemini;
    if let Some(reason) = body
        .pointer("/promptFeedback/blockReason")
        .and_then(Value::as_str)
    {
        return Verdict::Fail(ProviderError::InBody {
            provider,
            message: format!("prompt blocked: {reason}"),
        });
    }
    if body.get("error").is_some() {
        return Verdict::Fail(ProviderError::InBody {
            provider,
            message: super::error_message(body).unwrap_or_default(),
        });
    }
    let Some(candidate) = body.pointer("/candidates/0") else {
        return Verdict::Fail(ProviderError::Malformed {
            provider,
            message: "no candidates in the answer".into(),
        });
    };
    let text: String = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if text.trim().is_empty() {
        let finish = candidate
            .get("finishReason")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        return Verdict::Fail(ProviderError::InBody {
            provider,
            message: format!("no text in the answer (finishReason {finish})"),
        });
    }
    let usage = |field: &str| body.pointer(&format!("/usageMetadata/{field}"))?.as_u64();
    let tokens_out = match (usage("candidatesTokenCount"), usage("thoughtsTokenCount")) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    Verdict::Done(Generation {
        text,
        tokens_in: usage("promptTokenCount"),
        tokens_out,
        model: body
            .get("modelVersion")
            .and_then(Value::as_str)
            .unwrap_or(model)
            .to_string(),
    })
}

impl ModelAdapter for Gemini {
    fn info(&self) -> ModelInfo {
        ModelInfo {
            provider: ProviderKind::Gemini,
            name: self.config.model.clone(),
            vision: Some(true),
        }
    }

    fn generate(&mut self, prompt: &Prompt) -> Reply {
        let encoded = prompt
            .image
            .as_ref()
            .map(|image| base64::engine::general_purpose::STANDARD.encode(&image.png));
        let sent = body(prompt, encoded.as_deref());
        let mut meta = AiMeta {
            provider: ProviderKind::Gemini.to_string(),
            model: Some(self.config.model.clone()),
            request: Some(body(prompt, prompt.image.as_ref().map(|i| i.path.as_str()))),
            ..AiMeta::default()
        };
        let request = Request {
            url: join(
                &self.config.base_url(),
                &format!("{}:generateContent", self.model_path()),
            ),
            headers: self.headers(),
            body: Some(&sent),
        };
        let model = self.config.model.clone();
        let result = self.client.call(&request, &mut meta, |answer| {
            read_generation(&answer.body, &model)
        });
        Reply { result, meta }
    }

    /// Models that can `generateContent`; Gemini models are multimodal, and the list has no
    /// modality field, so embedding, TTS and image-output models are left out by name.
    fn list_models(&mut self) -> Result<Vec<ModelInfo>, ProviderError> {
        let mut models = Vec::new();
        let mut page_token: Option<String> = None;
        loop {
            let mut url = join(&self.config.base_url(), "models?pageSize=1000");
            if let Some(token) = &page_token {
                url.push_str("&pageToken=");
                // Tokens are opaque and may hold `+`, `/`, `=` or `&`.
                url.extend(percent_encoding::utf8_percent_encode(
                    token,
                    percent_encoding::NON_ALPHANUMERIC,
                ));
            }
            let request = Request {
                url,
                headers: self.headers(),
                body: None,
            };
            // Listing models is no decision: its attempts are not kept.
            let page = fetch_object(
                &self.client,
                ProviderKind::Gemini,
                &request,
                &mut AiMeta::default(),
            )?;
            for model in page
                .get("models")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(name) = model.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let generates = model
                    .get("supportedGenerationMethods")
                    .and_then(Value::as_array)
                    .is_some_and(|m| m.iter().any(|m| m.as_str() == Some("generateContent")));
                let name = name.trim_start_matches("models/");
                let text_or_media_out = ["embedding", "tts", "image-generation", "-image"]
                    .iter()
                    .any(|marker| name.contains(marker));
                if generates {
                    models.push(ModelInfo {
                        provider: ProviderKind::Gemini,
                        name: name.to_string(),
                        vision: Some(name.starts_with("gemini") && !text_or_media_out),
                    });
                }
            }
            let next = page
                .get("nextPageToken")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            // A server that hands back the token it was given would loop forever.
            if next.is_none() || next == page_token {
                return Ok(models);
            }
            page_token = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thought_parts_are_skipped_and_thinking_tokens_counted() {
        let body = json!({
            "candidates": [{"content": {"parts": [
                {"text": "thinking...", "thought": true},
                {"text": "{\"a\":"}, {"text": "1}"}
            ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 7}
        });
        let Verdict::Done(generation) = read_generation(&body, "m") else {
            panic!("not done");
        };
        assert_eq!(generation.text, "{\"a\":1}");
        assert_eq!(generation.tokens_in, Some(10));
        assert_eq!(generation.tokens_out, Some(12));
    }

    #[test]
    fn max_tokens_without_parts_is_an_error() {
        let body =
            json!({"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}]});
        let Verdict::Fail(error) = read_generation(&body, "m") else {
            panic!("not an error");
        };
        assert!(error.to_string().contains("MAX_TOKENS"), "{error}");
    }

    #[test]
    fn kept_request_has_the_path_not_the_image() {
        let prompt = Prompt {
            system: "s".into(),
            user: "u".into(),
            image: None,
            schema: json!({"type": "object"}),
        };
        let kept = body(&prompt, Some("/tmp/step_001.png"));
        assert_eq!(
            kept.pointer("/contents/0/parts/0/inlineData/data"),
            Some(&json!("/tmp/step_001.png"))
        );
    }
}
