//! [`Pipeline`]: a cheap, cloneable handle to a started coordinator and its plugin actors.

use std::collections::HashSet;
use std::sync::Arc;

use actix::{Actor, Addr};
use hookline_messages::event::Subscription;
use hookline_messages::hook::{HookKind, HookSet};
use hookline_messages::note::Note;
use hookline_messages::session::SessionId;

use crate::coordinator::{
    Admitted, AdmittedCalls, Call, ForgetSession, Outcome, PipelineCoordinator, Step, StopPipeline,
    DEFAULT_MAX_PENDING,
};
use crate::error::{PipelineError, StartError};
use crate::events::{EventBus, EventBusConfig};
use crate::plugin::{Dispatch, PluginActor, PluginRegistration};

/// A loaded plugin, as the pipeline reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedPlugin {
    /// The plugin's name.
    pub name: Arc<str>,
    /// The hooks it implements (ordinary and raw).
    pub implements: HookSet,
    /// Its gateway event subscriptions, as written (SPEC G1.2, G4.1).
    pub subscriptions: Arc<[Subscription]>,
}

/// Builds a [`Pipeline`].
#[derive(Debug)]
pub struct PipelineBuilder {
    plugins: Vec<PluginRegistration>,
    max_pending: usize,
    events: EventBusConfig,
}

impl PipelineBuilder {
    /// Adds a plugin. Plugins run in the order they are added: that is the load order (SPEC P1.1).
    #[must_use]
    pub fn plugin(mut self, plugin: PluginRegistration) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// Adds plugins in order.
    #[must_use]
    pub fn plugins(mut self, plugins: impl IntoIterator<Item = PluginRegistration>) -> Self {
        self.plugins.extend(plugins);
        self
    }

    /// Bounds the calls admitted at once (default [`DEFAULT_MAX_PENDING`]).
    #[must_use]
    pub fn max_pending(mut self, max_pending: usize) -> Self {
        self.max_pending = max_pending.max(1);
        self
    }

    /// Bounds the gateway event bus (queue, detached deliveries, notes).
    #[must_use]
    pub fn event_bus(mut self, config: EventBusConfig) -> Self {
        self.events = config;
        self
    }

    /// Starts the plugin actors and the coordinator on the current arbiter.
    ///
    /// Every actor of one pipeline lives on one arbiter: a hop to another thread costs tens of
    /// microseconds. To use more cores, start one pipeline per arbiter and give each its own
    /// sessions.
    ///
    /// # Errors
    /// [`StartError::DuplicateName`] when two plugins share a name.
    ///
    /// # Panics
    /// When called outside an actix system (as every `Actor::start` does).
    pub fn start(self) -> Result<Pipeline, StartError> {
        let mut names = HashSet::new();
        for plugin in &self.plugins {
            if !names.insert(plugin.name.clone()) {
                return Err(StartError::DuplicateName(plugin.name.to_string()));
            }
        }
        let actors: Vec<(PluginRegistration, Addr<PluginActor>)> = self
            .plugins
            .into_iter()
            .map(|plugin| {
                let addr = PluginActor::new(&plugin).start();
                (plugin, addr)
            })
            .collect();
        let steps = std::array::from_fn(|index| {
            let kind = HookKind::ALL[index];
            actors
                .iter()
                .filter(|(plugin, _)| plugin.implements().contains(kind))
                .map(|(plugin, addr)| Step {
                    name: plugin.name.clone(),
                    addr: addr.clone(),
                })
                .collect()
        });
        let mut load_notes: Vec<Note> = actors
            .iter()
            .filter(|(plugin, _)| plugin.has_raw_hooks())
            .map(|(plugin, _)| Note::RawHookRegistered {
                plugin: plugin.name.to_string(),
            })
            .collect();
        load_notes.extend(crate::events::unknown_subscription_notes(&actors));
        let events = EventBus::start(crate::events::subscribers(&actors), self.events);
        let plugins = actors
            .iter()
            .map(|(plugin, _)| LoadedPlugin {
                name: plugin.name.clone(),
                implements: plugin.implements(),
                subscriptions: plugin.subscriptions.clone(),
            })
            .collect();
        let coordinator = PipelineCoordinator::new(steps, self.max_pending).start();
        Ok(Pipeline {
            coordinator,
            plugins,
            load_notes: load_notes.into(),
            events,
        })
    }
}

/// A started pipeline: the coordinator's address and what was loaded.
///
/// Cloning is cheap; every clone talks to the same coordinator. An actix program may also hold
/// [`Pipeline::coordinator`] and send [`Call`] messages itself.
#[derive(Clone, Debug)]
pub struct Pipeline {
    coordinator: Addr<PipelineCoordinator>,
    plugins: Arc<[LoadedPlugin]>,
    load_notes: Arc<[Note]>,
    events: EventBus,
}

impl Pipeline {
    /// A builder with no plugins.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder {
            plugins: Vec::new(),
            max_pending: DEFAULT_MAX_PENDING,
            events: EventBusConfig::default(),
        }
    }

    /// Runs hook `H` on `value` for `session`, for hooks whose rule needs no context.
    ///
    /// # Errors
    /// [`PipelineError`] when the coordinator is stopped or overloaded. Failing plugins are not
    /// errors: they are skipped, and their notes are in the [`Outcome`].
    pub async fn call<H>(
        &self,
        session: &SessionId,
        value: H::Value,
    ) -> Result<Outcome<H::Value>, PipelineError>
    where
        H: Dispatch<Context = ()>,
    {
        self.call_with::<H>(session, (), value).await
    }

    /// Runs hook `H` on `value` for `session`, with the facts its rule needs.
    ///
    /// # Errors
    /// As [`Pipeline::call`].
    pub async fn call_with<H: Dispatch>(
        &self,
        session: &SessionId,
        context: H::Context,
        value: H::Value,
    ) -> Result<Outcome<H::Value>, PipelineError> {
        let call = Call::<H> {
            session: session.clone(),
            context,
            value,
        };
        self.coordinator
            .send(call)
            .await
            .unwrap_or(Err(PipelineError::Stopped))
    }

    /// Drops what the coordinator keeps for `session` once its calls finish.
    ///
    /// # Errors
    /// [`PipelineError::Stopped`] when the coordinator is gone.
    pub async fn forget_session(&self, session: &SessionId) -> Result<(), PipelineError> {
        self.coordinator
            .send(ForgetSession(session.clone()))
            .await
            .map_err(|_| PipelineError::Stopped)
    }

    /// How many calls the coordinator has admitted now, and its `max_pending` bound.
    ///
    /// # Errors
    /// [`PipelineError::Stopped`] when the coordinator is gone.
    pub async fn admitted(&self) -> Result<Admitted, PipelineError> {
        self.coordinator
            .send(AdmittedCalls)
            .await
            .map_err(|_| PipelineError::Stopped)
    }

    /// Stops the coordinator; later calls fail with [`PipelineError::Stopped`].
    pub async fn stop(&self) {
        // Already stopped is the goal either way.
        let _ = self.coordinator.send(StopPipeline).await;
    }

    /// The coordinator's address, for actix programs that send [`Call`] themselves.
    pub fn coordinator(&self) -> &Addr<PipelineCoordinator> {
        &self.coordinator
    }

    /// The loaded plugins, in load order.
    pub fn plugins(&self) -> &[LoadedPlugin] {
        &self.plugins
    }

    /// Notes recorded at load: `Plugin '<name>' registered a raw hook.` for each plugin with raw
    /// hooks, in load order (SPEC R0.2), then `Plugin '<name>' subscribes to '<key>', which the
    /// gateway never emits.` for each unknown event subscription (SPEC G4.1).
    pub fn load_notes(&self) -> &[Note] {
        &self.load_notes
    }

    /// The gateway event bus over this pipeline's plugin actors (SPEC G).
    pub fn events(&self) -> &EventBus {
        &self.events
    }
}
