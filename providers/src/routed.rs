//! [`Routed`]: several named models behind one [`Provider`] (issue 21). A session asks for a
//! model by the name the configuration gives it (`"model"` at open, `/model NAME`); each call
//! goes to that model's provider, a call with no name to the default one. A name that is not
//! configured is not served ([`Provider::serves_model`]): a resume of a session whose model is
//! gone is refused (issue 26), and a server answers 400 `unknown-model` at open.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use hookline_messages::model::{ModelRequest, ModelResponse};

use hookline_host::provider::{OnText, Provider, ProviderError};

/// One configured model: the name sessions ask for, and the provider that answers for it.
#[derive(Clone)]
pub struct RoutedModel {
    /// What a session asks for (`"model"`, `/model`).
    pub name: String,
    /// Who answers.
    pub provider: Arc<dyn Provider>,
}

impl fmt::Debug for RoutedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoutedModel")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Named models, one of them the default.
#[derive(Debug)]
pub struct Routed {
    models: Vec<RoutedModel>,
    default: usize,
}

impl Routed {
    /// The models, `default` answering calls that name none.
    ///
    /// # Errors
    /// [`ProviderError::Config`] for no models, a name given twice, or a default that is not
    /// one of them.
    pub fn new(models: Vec<RoutedModel>, default: &str) -> Result<Self, ProviderError> {
        if models.is_empty() {
            return Err(ProviderError::Config("no model is configured".into()));
        }
        for (i, model) in models.iter().enumerate() {
            if models[..i].iter().any(|m| m.name == model.name) {
                return Err(ProviderError::Config(format!(
                    "the model name {:?} is configured twice",
                    model.name
                )));
            }
        }
        let default = models
            .iter()
            .position(|m| m.name == default)
            .ok_or_else(|| {
                ProviderError::Config(format!(
                    "the default model {default:?} is not one of the configured models ({})",
                    names(&models)
                ))
            })?;
        Ok(Self { models, default })
    }

    /// The provider for `model` (`None`: the default).
    fn route(&self, model: Option<&str>) -> Result<&dyn Provider, ProviderError> {
        match model {
            None => Ok(&*self.models[self.default].provider),
            Some(name) => self
                .models
                .iter()
                .find(|m| m.name == name)
                .map(|m| &*m.provider)
                .ok_or_else(|| {
                    ProviderError::Config(format!(
                        "the model {name:?} is not configured (configured: {})",
                        names(&self.models)
                    ))
                }),
        }
    }

    /// The default model's name.
    pub fn default_name(&self) -> &str {
        &self.models[self.default].name
    }
}

fn names(models: &[RoutedModel]) -> String {
    models
        .iter()
        .map(|m| m.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[async_trait]
impl Provider for Routed {
    /// Whether the default model takes images.
    fn takes_images(&self) -> bool {
        self.models[self.default].provider.takes_images()
    }

    /// Whether the named model takes images (the default's for `None`); a name that is not
    /// configured takes none (its calls are refused anyway).
    fn takes_images_for(&self, model: Option<&str>) -> bool {
        self.route(model)
            .is_ok_and(|provider| provider.takes_images_for(None))
    }

    fn serves_model(&self, name: &str) -> bool {
        self.models.iter().any(|m| m.name == name)
    }

    fn default_model(&self) -> Option<String> {
        Some(self.default_name().to_owned())
    }

    fn model_names(&self) -> Vec<String> {
        self.models.iter().map(|m| m.name.clone()).collect()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.route(None)?.complete(request).await
    }

    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        self.route(None)?.complete_streaming(request, on_text).await
    }

    async fn complete_for(
        &self,
        model: Option<&str>,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        self.route(model)?
            .complete_streaming(request, on_text)
            .await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use hookline_host::provider::EchoProvider;
    use hookline_messages::model::{Item, ItemBody, Purpose};

    struct Named(&'static str);

    #[async_trait]
    impl Provider for Named {
        fn takes_images(&self) -> bool {
            false
        }
        async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
            let mut response = EchoProvider::new().complete(request).await?;
            response.items[0].body = ItemBody::Assistant {
                text: self.0.into(),
                images: Vec::new(),
            };
            Ok(response)
        }
    }

    fn routed() -> Routed {
        let model = |name: &str, p: &'static str| RoutedModel {
            name: name.into(),
            provider: Arc::new(Named(p)),
        };
        Routed::new(
            vec![model("gpt", "from gpt"), model("claude", "from claude")],
            "gpt",
        )
        .unwrap()
    }

    fn text(response: &ModelResponse) -> &str {
        match &response.items[0].body {
            ItemBody::Assistant { text, .. } => text,
            _ => "",
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn each_call_goes_to_the_model_it_names() {
        let routed = routed();
        let request = ModelRequest {
            purpose: Purpose::Work,
            accepts_images: false,
            items: vec![Item::new(
                "1",
                ItemBody::User {
                    text: "hi".into(),
                    images: Vec::new(),
                },
            )]
            .into_iter()
            .map(std::sync::Arc::new)
            .collect(),
        };
        let none = |_: &str| {};
        let answer = routed.complete_for(None, &request, &none).await.unwrap();
        assert_eq!(text(&answer), "from gpt");
        let answer = routed
            .complete_for(Some("claude"), &request, &none)
            .await
            .unwrap();
        assert_eq!(text(&answer), "from claude");
        let error = routed
            .complete_for(Some("llama"), &request, &none)
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the provider is misconfigured: the model \"llama\" is not configured (configured: gpt, claude)"
        );
        assert!(routed.serves_model("claude"));
        assert!(!routed.serves_model("llama"));
        assert_eq!(routed.model_names(), vec!["gpt", "claude"]);
    }

    #[test]
    fn each_model_says_whether_it_takes_images() {
        use hookline_host::provider::ScriptedProvider;
        let model = |name: &str, images: bool| RoutedModel {
            name: name.into(),
            provider: Arc::new(ScriptedProvider::new(images)),
        };
        let routed =
            Routed::new(vec![model("text", false), model("vision", true)], "text").unwrap();
        // SPEC R5.6, per model (issue 34): not the default's answer for every name.
        assert!(!routed.takes_images_for(None));
        assert!(!routed.takes_images_for(Some("text")));
        assert!(routed.takes_images_for(Some("vision")));
        assert!(!routed.takes_images_for(Some("llama")));
    }

    #[test]
    fn a_bad_default_or_a_repeated_name_is_refused() {
        let model = |name: &str| RoutedModel {
            name: name.into(),
            provider: Arc::new(EchoProvider::new()),
        };
        let error = Routed::new(vec![model("a")], "b").unwrap_err().to_string();
        assert_eq!(error, "the provider is misconfigured: the default model \"b\" is not one of the configured models (a)");
        let error = Routed::new(vec![model("a"), model("a")], "a")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "the provider is misconfigured: the model name \"a\" is configured twice"
        );
    }
}
