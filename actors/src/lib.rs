//! hookline's actor layer: each plugin runs as a [`PluginActor`]; a [`PipelineCoordinator`] admits
//! each hook call and sends it, batched with other sessions' calls, through the plugin actors in
//! load order (relayed from actor to actor), each seeing the previous accepted value; every reply
//! is checked against the hook's rule from `hookline-messages` where it is made. A [`Pipeline`]
//! shards its sessions over one arbiter per core.
//!
//! The actors own state and order only. The rules are plain functions in `hookline_messages::rules`;
//! plugin code runs under a timeout and a panic guard, so a failing plugin becomes a note, never a
//! dead actor.
//!
//! ```
//! use hookline_actors::plugin::{PluginRegistration, Reply};
//! use hookline_actors::Pipeline;
//! use hookline_messages::hook::OnUserMessage;
//! use hookline_messages::session::SessionId;
//! use hookline_messages::user::UserMessage;
//!
//! actix::System::new().block_on(async {
//!     // A hook that answers at once: it sees the message by reference and returns a reply.
//!     let shout = PluginRegistration::new("shout").on(OnUserMessage, |_, message| {
//!         Ok(Reply::Replace(UserMessage::new(message.text.to_uppercase())))
//!     });
//!     let pipeline = Pipeline::builder()
//!         .plugin(shout)
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
mod key;
pub mod lifecycle;
pub mod metrics;
pub mod pipeline;
mod placement;
pub mod plugin;
mod route;
pub mod session;

pub use coordinator::{Call, Outcome, PipelineCoordinator};
pub use error::{PipelineError, Readmit, StartError};
pub use key::{SessionKey, SessionRef};
pub use pipeline::{LoadedPlugin, Pipeline, PipelineBuilder};
pub use plugin::PluginActor;
pub use route::{Steps, Submitted};
