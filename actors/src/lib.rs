//! hookline's actor layer: each plugin runs as a [`PluginActor`]; a [`PipelineCoordinator`] sends
//! each hook call through the plugin actors in load order, each seeing the previous accepted
//! value, and checks every reply against the hook's rule from `hookline-messages`.
//!
//! The actors own state and order only. The rules are plain functions in `hookline_messages::rules`;
//! plugin code runs under a timeout and a panic guard, so a failing plugin becomes a note, never a
//! dead actor.
//!
//! ```
//! use std::sync::Arc;
//! use async_trait::async_trait;
//! use hookline_actors::plugin::{HookResult, Plugin, PluginRegistration, Reply};
//! use hookline_actors::Pipeline;
//! use hookline_messages::hook::{HookContext, HookKind, HookSet, OnUserMessage};
//! use hookline_messages::session::SessionId;
//! use hookline_messages::user::UserMessage;
//!
//! struct Shout;
//!
//! #[async_trait]
//! impl Plugin for Shout {
//!     fn hooks(&self) -> HookSet {
//!         HookSet::of(&[HookKind::OnUserMessage])
//!     }
//!     async fn on_user_message(
//!         &self,
//!         _: &HookContext,
//!         message: UserMessage,
//!     ) -> HookResult<Reply<UserMessage>> {
//!         Ok(Reply::Replace(UserMessage::new(message.text.to_uppercase())))
//!     }
//! }
//!
//! actix::System::new().block_on(async {
//!     let pipeline = Pipeline::builder()
//!         .plugin(PluginRegistration::new("shout").with_hooks(Arc::new(Shout)))
//!         .start()
//!         .expect("one plugin, one name");
//!     let session = SessionId::new("s1");
//!     let outcome = pipeline
//!         .call::<OnUserMessage>(&session, UserMessage::new("hello"))
//!         .await
//!         .expect("the pipeline is running");
//!     assert_eq!(outcome.value.text, "HELLO");
//!     assert!(outcome.notes.is_empty());
//! });
//! ```

pub mod coordinator;
pub mod error;
pub mod events;
pub mod lifecycle;
pub mod pipeline;
pub mod plugin;
pub mod session;

pub use coordinator::{Call, Outcome, PipelineCoordinator};
pub use error::{PipelineError, StartError};
pub use pipeline::{LoadedPlugin, Pipeline, PipelineBuilder};
pub use plugin::PluginActor;
