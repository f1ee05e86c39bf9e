//! Ollama's native API: `POST /api/chat` with `stream: false`, raw base64 images and a `format`
//! schema; vision from `POST /api/show`.

use base64::Engine;
use serde_json::{json, Value};

use super::http::{Client, Request, Verdict};
use super::{
    error_message, fetch_object, join, Generation, ModelAdapter, ModelInfo, Prompt, ProviderConfig,
    ProviderError, ProviderKind, Reply,
};
use crate::events::AiMeta;

const PROVIDER: ProviderKind = ProviderKind::Ollama;

/// The vision check's endpoint, as its attempts in `ai.attempts` name it.
const SHOW: &str = "/api/show";

pub struct Ollama {
    config: ProviderConfig,
    client: Client,
    /// The model's vision capability, asked once before the first image is sent.
    vision: Option<bool>,
}

impl Ollama {
    pub fn new(config: ProviderConfig, client: Client) -> Ollama {
        Ollama {
            config,
            client,
            vision: None,
        }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        // Local servers need no key; ollama.com's cloud takes a Bearer token.
        let key = self.config.api_key.as_ref();
        key.map(|k| vec![("Authorization", format!("Bearer {}", k.expose()))])
            .unwrap_or_default()
    }

    fn object(
        &self,
        url: String,
        body: Option<&Value>,
        meta: &mut AiMeta,
    ) -> Result<Value, ProviderError> {
        let request = Request {
            url,
            headers: self.headers(),
            body,
        };
        fetch_object(&self.client, PROVIDER, &request, meta)
    }

    /// Asks `/api/show` whether a model takes images. Its attempts go into `meta`, marked with
    /// the endpoint: before a step's first image they belong to that step's decision.
    pub fn show_vision(&self, model: &str, meta: &mut AiMeta) -> Result<bool, ProviderError> {
        let body = json!({ "model": model });
        let first = meta.attempts.len();
        let shown = self.object(join(&self.config.base_url(), "api/show"), Some(&body), meta);
        for attempt in &mut meta.attempts[first..] {
            attempt.endpoint = Some(SHOW.to_string());
        }
        Ok(vision_of_show(&shown?))
    }

    /// The request body; `image` is the raw base64 PNG or, for the kept copy, the screenshot path.
    fn body(&self, prompt: &Prompt, image: Option<&str>) -> Value {
        let mut user = json!({"role": "user", "content": prompt.user});
        if let Some(image) = image {
            user["images"] = json!([image]);
        }
        json!({
            "model": self.config.model,
            "messages": [{"role": "system", "content": prompt.system}, user],
            "stream": false,
            "format": prompt.schema,
            "options": {"temperature": 0},
        })
    }
}

/// Vision from an `/api/show` answer, across versions: `capabilities` has "vision" (0.6.4+, but
/// projector models such as llava only from 0.6.8), else a non-empty `projector_info` (llava-style
/// mmproj), else `model_info` keys `<arch>.vision.*`, else `details.families` naming clip/mllama.
pub fn vision_of_show(shown: &Value) -> bool {
    let has_capability = shown
        .get("capabilities")
        .and_then(Value::as_array)
        .is_some_and(|caps| caps.iter().any(|c| c.as_str() == Some("vision")));
    let has_projector = shown
        .get("projector_info")
        .and_then(Value::as_object)
        .is_some_and(|info| !info.is_empty());
    let has_vision_tensors = shown
        .get("model_info")
        .and_then(Value::as_object)
        .is_some_and(|info| info.keys().any(|k| k.contains(".vision.")));
    let has_vision_family = shown
        .pointer("/details/families")
        .and_then(Value::as_array)
        .is_some_and(|families| {
            families
                .iter()
                .any(|f| matches!(f.as_str(), Some("clip") | Some("mllama")))
        });
    has_capability || has_projector || has_vision_tensors || has_vision_family
}

fn read_generation(body: &Value, model: &str) -> Verdict<Generation> {
    if let Some(message) = error_message(body) {
        return Verdict::Fail(ProviderError::InBody {
            provider: PROVIDER,
            message,
        });
    }
    let Some(text) = body.pointer("/message/content").and_then(Value::as_str) else {
        return Verdict::Fail(ProviderError::Malformed {
            provider: PROVIDER,
            message: "no message.content in the answer".into(),
        });
    };
    Verdict::Done(Generation {
        text: text.to_string(),
        // Metric fields are omitted when zero (a fully cached prompt).
        tokens_in: body.get("prompt_eval_count").and_then(Value::as_u64),
        tokens_out: body.get("eval_count").and_then(Value::as_u64),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(model)
            .to_string(),
    })
}

impl ModelAdapter for Ollama {
    fn info(&self) -> ModelInfo {
        ModelInfo {
            provider: PROVIDER,
            name: self.config.model.clone(),
            vision: self.vision,
        }
    }

    fn generate(&mut self, prompt: &Prompt) -> Reply {
        let mut meta = AiMeta {
            provider: PROVIDER.to_string(),
            model: Some(self.config.model.clone()),
            request: Some(self.body(prompt, prompt.image.as_ref().map(|i| i.path.as_str()))),
            ..AiMeta::default()
        };
        if prompt.image.is_some() && self.vision.is_none() {
            // Ollama does not refuse images sent to a text-only model; it ignores them.
            match self.show_vision(&self.config.model, &mut meta) {
                Ok(vision) => self.vision = Some(vision),
                Err(error) => {
                    return Reply {
                        result: Err(error),
                        meta,
                    }
                }
            }
        }
        if prompt.image.is_some() && self.vision == Some(false) {
            let error = ProviderError::NoVision {
                provider: PROVIDER,
                model: self.config.model.clone(),
            };
            meta.error = Some(error.to_string());
            return Reply {
                result: Err(error),
                meta,
            };
        }
        let encoded = prompt
            .image
            .as_ref()
            .map(|image| base64::engine::general_purpose::STANDARD.encode(&image.png));
        let sent = self.body(prompt, encoded.as_deref());
        let request = Request {
            url: join(&self.config.base_url(), "api/chat"),
            headers: self.headers(),
            body: Some(&sent),
        };
        let model = self.config.model.clone();
        let result = self.client.call(&request, &mut meta, |answer| {
            read_generation(&answer.body, &model)
        });
        Reply { result, meta }
    }

    /// `/api/tags`, with each model's vision from its `capabilities` (servers 0.30+) or
    /// `/api/show`.
    fn list_models(&mut self) -> Result<Vec<ModelInfo>, ProviderError> {
        // Listing models is no decision: its attempts are not kept.
        let mut meta = AiMeta::default();
        let tags = self.object(join(&self.config.base_url(), "api/tags"), None, &mut meta)?;
        let mut models = Vec::new();
        for entry in tags
            .get("models")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = entry
                .get("name")
                .or_else(|| entry.get("model"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let vision = if entry.get("capabilities").is_some() {
                vision_of_show(entry)
            } else {
                self.show_vision(name, &mut meta)?
            };
            models.push(ModelInfo {
                provider: PROVIDER,
                name: name.to_string(),
                vision: Some(vision),
            });
        }
        Ok(models)
    }
}
