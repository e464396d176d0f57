//! One hook's three loops, whatever its value type: through the plugin set's pipeline, through
//! the bare pipeline (the same code with no plugin), and the direct loop (each plugin's hook
//! called in load order from a plain loop on one thread: no actor, no rule, no timeout).

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::LocalBoxFuture;
use hookline_actors::plugin::{Dispatch, PluginRegistration};
use hookline_actors::{Pipeline, PipelineError};
use hookline_messages::hook::{self, Hook, HookContext, HookKind, Reply};
use hookline_messages::session::SessionId;

use super::super::driver::{
    closed_loop, merge, nanos, new_histogram, on_shards, open_sessions, session_ids, Measured,
};
use super::values::HookValues;

/// One hook's loops.
pub(super) trait HookRun {
    /// Runs `sessions` sessions through `pipeline` for `duration`, each making its calls back to
    /// back on its shard's arbiter (the values taken in turn).
    fn closed_loop<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        sessions: usize,
        duration: Duration,
    ) -> LocalBoxFuture<'a, Result<Measured, PipelineError>>;

    /// Calls `plugins`' hook in load order, one call at a time, for `duration`.
    fn direct<'a>(
        &'a self,
        plugins: &'a [PluginRegistration],
        duration: Duration,
    ) -> LocalBoxFuture<'a, Measured>;
}

/// The loops of hook `H` over its values.
struct Typed<H: Hook> {
    values: Arc<[H::Value]>,
}

/// The loops of `hook` over `values`, each checked as a value of that hook.
///
/// # Errors
/// A value that is not one of `hook`'s, naming it and why.
pub(super) fn typed(hook: HookKind, values: &HookValues) -> Result<Box<dyn HookRun>, String> {
    use hook::*;
    match hook {
        HookKind::OnSessionStarted => Typed::<OnSessionStarted>::boxed(values),
        HookKind::OnSessionEnded => Typed::<OnSessionEnded>::boxed(values),
        HookKind::OnPrompt => Typed::<OnPrompt>::boxed(values),
        HookKind::OnUserMessage => Typed::<OnUserMessage>::boxed(values),
        HookKind::OnTurnStarted => Typed::<OnTurnStarted>::boxed(values),
        HookKind::OnTurnFinished => Typed::<OnTurnFinished>::boxed(values),
        HookKind::TransformModel => Typed::<TransformModel>::boxed(values),
        HookKind::OnModelResponse => Typed::<OnModelResponse>::boxed(values),
        HookKind::OnToolCall => Typed::<OnToolCall>::boxed(values),
        HookKind::OnToolResult => Typed::<OnToolResult>::boxed(values),
        HookKind::OnApproval => Typed::<OnApproval>::boxed(values),
        HookKind::OnCompaction => Typed::<OnCompaction>::boxed(values),
        HookKind::RebuildModel => Typed::<RebuildModel>::boxed(values),
        HookKind::RewritePrompt => Typed::<RewritePrompt>::boxed(values),
        HookKind::RewriteCompaction => Typed::<RewriteCompaction>::boxed(values),
        HookKind::RewriteApproval => Typed::<RewriteApproval>::boxed(values),
    }
}

impl<H> Typed<H>
where
    H: Dispatch,
    H::Value: Sync,
    H::Context: Default,
{
    fn boxed(values: &HookValues) -> Result<Box<dyn HookRun>, String> {
        let typed = values
            .values
            .iter()
            .enumerate()
            .map(|(index, value)| {
                serde_json::from_value::<H::Value>(value.clone()).map_err(|e| {
                    let hook = H::KIND.wire_name();
                    format!(
                        "value {} of {hook} is not a value of that hook: {e}",
                        index + 1
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if typed.is_empty() {
            return Err(format!("{} has no value", H::KIND.wire_name()));
        }
        Ok(Box::new(Self {
            values: typed.into(),
        }))
    }
}

/// The value after `at` calls.
fn take<V: Clone>(values: &[V], at: &Cell<usize>) -> V {
    let index = at.get();
    at.set(index.wrapping_add(1));
    values[index % values.len()].clone()
}

impl<H> HookRun for Typed<H>
where
    H: Dispatch,
    H::Value: Sync,
    H::Context: Default,
{
    fn closed_loop<'a>(
        &'a self,
        pipeline: &'a Pipeline,
        sessions: usize,
        duration: Duration,
    ) -> LocalBoxFuture<'a, Result<Measured, PipelineError>> {
        let (runner, values) = (pipeline.clone(), self.values.clone());
        Box::pin(async move {
            let parts = on_shards(pipeline, session_ids(sessions), move |ids| {
                let (pipeline, values) = (runner.clone(), values.clone());
                async move {
                    let keys = open_sessions(&pipeline, &ids).await?;
                    let at = Cell::new(0);
                    closed_loop(&keys, duration, &(), |key| {
                        let value = take(&values, &at);
                        let (pipeline, key) = (&pipeline, key.clone());
                        async move {
                            let cx = H::Context::default();
                            pipeline.call_with::<H>(key, cx, value).await.map(drop)
                        }
                    })
                    .await
                }
            })
            .await;
            merge(parts)
        })
    }

    fn direct<'a>(
        &'a self,
        plugins: &'a [PluginRegistration],
        duration: Duration,
    ) -> LocalBoxFuture<'a, Measured> {
        Box::pin(async move {
            let cx = HookContext {
                session_id: SessionId::new("bench-direct"),
            };
            let mine: Vec<&PluginRegistration> = plugins
                .iter()
                .filter(|p| p.implements().contains(H::KIND))
                .collect();
            let mut histogram = new_histogram();
            let (at, mut calls) = (Cell::new(0), 0u64);
            let started = Instant::now();
            let mut sent = started;
            while sent < started + duration {
                let mut value = take(&self.values, &at);
                for plugin in &mine {
                    let answer = plugin.call_direct::<H>(&cx, value.clone()).await;
                    if let Some(Ok(Reply::Replace(next))) = answer {
                        if !H::READ_ONLY {
                            value = next;
                        }
                    }
                }
                std::hint::black_box(value);
                let ended = Instant::now();
                let _ = histogram.record(nanos(ended - sent));
                sent = ended;
                calls += 1;
            }
            Measured {
                histogram,
                calls,
                shed: 0,
                elapsed: started.elapsed(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::plugin_set::Values;

    #[test]
    fn every_hooks_default_value_is_a_value_of_that_hook() {
        let values = Values::default();
        for hook in HookKind::ALL {
            let typed = typed(*hook, values.of(*hook));
            assert!(typed.is_ok(), "{hook:?}: {:?}", typed.err());
        }
    }
}
