//! The lifecycle actor and its [`Lifecycle`] handle.

use std::sync::Arc;

use actix::{Actor, Addr, Context, Handler, Message, ResponseFuture};
use hookline_messages::event::{Event, GatewayStartupContext};
use tokio::sync::oneshot;

use super::shutdown::{deliver_bounded, end_sessions, stop_context};
use super::{
    GatewayConfig, GatewayError, SharedState, SharedStateClosed, ShutdownReport, ShutdownRequest,
};
use crate::events::Delivery;
use crate::Pipeline;

/// The actor that owns the gateway's lifecycle phase.
pub struct GatewayLifecycle {
    pipeline: Pipeline,
    shared: Arc<dyn SharedState>,
    config: GatewayConfig,
    shutting_down: bool,
}

impl GatewayLifecycle {
    /// A lifecycle over a started pipeline (its plugins have loaded) and the host's shared state.
    pub fn new(pipeline: Pipeline, shared: Arc<dyn SharedState>, config: GatewayConfig) -> Self {
        Self {
            pipeline,
            shared,
            config,
            shutting_down: false,
        }
    }
}

impl Actor for GatewayLifecycle {
    type Context = Context<Self>;
}

/// Emits `gateway:startup`; the reply comes once every handler ran (each bounded by its event
/// timeout).
pub struct Startup(pub GatewayStartupContext);

impl Message for Startup {
    type Result = Result<Delivery, GatewayError>;
}

impl Handler<Startup> for GatewayLifecycle {
    type Result = ResponseFuture<Result<Delivery, GatewayError>>;

    fn handle(&mut self, Startup(context): Startup, _: &mut Self::Context) -> Self::Result {
        if self.shutting_down {
            return Box::pin(async { Err(GatewayError::ShuttingDown) });
        }
        let bus = self.pipeline.events().clone();
        Box::pin(async move { Ok(bus.dispatch(Event::GatewayStartup(context)).await?) })
    }
}

/// Shuts the gateway down (see the module docs for the steps). Accepted once.
pub struct Shutdown(pub ShutdownRequest);

impl Message for Shutdown {
    type Result = Result<ShutdownReport, GatewayError>;
}

impl Handler<Shutdown> for GatewayLifecycle {
    type Result = ResponseFuture<Result<ShutdownReport, GatewayError>>;

    fn handle(&mut self, Shutdown(request): Shutdown, _: &mut Self::Context) -> Self::Result {
        if std::mem::replace(&mut self.shutting_down, true) {
            return Box::pin(async { Err(GatewayError::ShuttingDown) });
        }
        let pipeline = self.pipeline.clone();
        let shared = self.shared.clone();
        let config = self.config;
        Box::pin(async move { Ok(shut_down(pipeline, shared, config, request).await) })
    }
}

async fn shut_down(
    pipeline: Pipeline,
    shared: Arc<dyn SharedState>,
    config: GatewayConfig,
    request: ShutdownRequest,
) -> ShutdownReport {
    let bus = pipeline.events();
    let context = stop_context(&request);
    let (mut notes, shutdown_finished) = deliver_bounded(
        bus,
        Event::GatewayShutdown(context.clone()),
        config.shutdown_wait,
    )
    .await;
    let mut handlers = vec![shutdown_finished];
    if request.restart_expected_ms.is_some() {
        let event = Event::GatewayPreRestart(context);
        let (more, finished) = deliver_bounded(bus, event, config.pre_restart_wait).await;
        notes.extend(more);
        handlers.push(finished);
    }
    notes.extend(
        end_sessions(
            &pipeline,
            request.active_sessions,
            config.session_end_budget,
        )
        .await,
    );
    let (closed_tx, closed_rx) = oneshot::channel();
    actix_rt::spawn(async move {
        // SPEC G2.3: shared state closes only once every handler has really finished.
        for handler in handlers {
            let _ = handler.await;
        }
        shared.close().await;
        let _ = closed_tx.send(());
    });
    ShutdownReport {
        notes,
        closed: SharedStateClosed::new(closed_rx),
    }
}

/// A cloneable handle to a started [`GatewayLifecycle`].
#[derive(Clone, Debug)]
pub struct Lifecycle {
    addr: Addr<GatewayLifecycle>,
}

impl Lifecycle {
    /// Starts the lifecycle actor on the current arbiter.
    pub fn start(pipeline: Pipeline, shared: Arc<dyn SharedState>, config: GatewayConfig) -> Self {
        Self {
            addr: GatewayLifecycle::new(pipeline, shared, config).start(),
        }
    }

    /// Emits `gateway:startup` (call it once the plugins have loaded) and waits for its handlers.
    ///
    /// # Errors
    /// [`GatewayError`] when shutting down or stopped.
    pub async fn startup(&self, context: GatewayStartupContext) -> Result<Delivery, GatewayError> {
        self.addr
            .send(Startup(context))
            .await
            .unwrap_or(Err(GatewayError::Stopped))
    }

    /// Shuts down: the returned future resolves within `shutdown_wait` (+ `pre_restart_wait`
    /// when a restart is expected) + `session_end_budget`, whatever the handlers do.
    ///
    /// # Errors
    /// [`GatewayError::ShuttingDown`] on a second call; [`GatewayError::Stopped`] when the actor
    /// is gone.
    pub async fn shutdown(&self, request: ShutdownRequest) -> Result<ShutdownReport, GatewayError> {
        self.addr
            .send(Shutdown(request))
            .await
            .unwrap_or(Err(GatewayError::Stopped))
    }

    /// The actor's address, for actix programs.
    pub fn addr(&self) -> &Addr<GatewayLifecycle> {
        &self.addr
    }
}
