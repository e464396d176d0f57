//! What a shard shares on its arbiter's thread (issue 23 item 4): the session table, each hook's
//! route and how many of its batches are open or travelling. The coordinator owns it and
//! registers it in a thread-local list when it starts, so a caller running on the shard's arbiter
//! admits a lone call in place (no `Admit` hop: the call goes straight to the first plugin actor)
//! and the last plugin actor frees a finished call's session before answering its caller.
//!
//! Per-session order holds: a call is admitted in place only when its session has no call running
//! or queued and no `Admit` or `AdmitMany` message is waiting in the coordinator's mailbox
//! ([`Admission::none_queued`]); otherwise it goes through the coordinator as before. Everything
//! here runs on the one thread, so a `RefCell` (borrowed briefly, never across a call out) is
//! enough.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use hookline_messages::hook::{Hook, HookKind};

use super::session::Sessions;
use super::Admission;
use crate::route::{forward, Job, Route, NO_SLOT};

/// One shard's state shared by its coordinator, the callers on its thread and its plugin actors.
pub(crate) struct Local {
    pub(crate) sessions: RefCell<Sessions>,
    /// Per hook (indexed by `HookKind`): its `Arc<Route<H>>`, once the coordinator made it.
    routes: RefCell<[Option<Box<dyn Any>>; HookKind::ALL.len()]>,
    /// Per hook: its batches open at the coordinator or travelling the plugins. A lone call is
    /// admitted in place only when none is (under load calls keep joining the coordinator's
    /// batches). A hint for speed only: order never depends on it.
    busy: [Cell<u32>; HookKind::ALL.len()],
    pub(crate) admission: Arc<Admission>,
    /// `hookline_hook_calls_total` per hook, resolved once.
    pub(crate) calls: Box<[metrics::Counter]>,
}

thread_local! {
    /// The shards whose coordinator runs on this thread, by [`Admission::uid`].
    static SHARDS: RefCell<Vec<(u64, Rc<Local>)>> = const { RefCell::new(Vec::new()) };
}

impl Local {
    pub(crate) fn new(admission: Arc<Admission>) -> Self {
        Self {
            sessions: RefCell::default(),
            routes: RefCell::new(std::array::from_fn(|_| None)),
            busy: std::array::from_fn(|_| Cell::new(0)),
            admission,
            calls: crate::metrics::pipeline_calls(),
        }
    }

    /// Registers this shard on the current thread (the coordinator's, when it starts).
    pub(crate) fn register(self: &Rc<Self>) {
        let uid = self.admission.uid();
        SHARDS.with(|shards| shards.borrow_mut().push((uid, self.clone())));
    }

    /// Removes this shard from the current thread's list (when its coordinator stops).
    pub(crate) fn unregister(&self) {
        let uid = self.admission.uid();
        // A thread being torn down has no list left to clean: nothing to do then.
        let _ = SHARDS.try_with(|shards| shards.borrow_mut().retain(|(id, _)| *id != uid));
    }

    /// Keeps hook `H`'s route for calls admitted in place.
    pub(crate) fn set_route<H: Hook>(&self, route: &Arc<Route<H>>) {
        self.routes.borrow_mut()[H::KIND as usize] = Some(Box::new(route.clone()));
    }

    fn route<H: Hook>(&self) -> Option<Arc<Route<H>>> {
        let routes = self.routes.try_borrow().ok()?;
        routes[H::KIND as usize]
            .as_ref()?
            .downcast_ref::<Arc<Route<H>>>()
            .cloned()
    }

    /// One more batch of hook `kind` open or travelling.
    pub(crate) fn batch_opened(&self, kind: usize) {
        let busy = &self.busy[kind];
        busy.set(busy.get().saturating_add(1));
    }

    /// Admits `job` (already counted in [`Admission`]) in place and sends it to the first plugin
    /// as a batch of one, or hands it back for the coordinator: when its session is busy, a batch
    /// of its hook is open or travelling, or the route is not made yet.
    // The job goes back by value when it cannot be admitted here: boxing it would cost the lone
    // call an allocation.
    #[allow(clippy::result_large_err)]
    fn admit<H: Hook>(&self, mut job: Job<H>) -> Result<(), Job<H>> {
        let kind = H::KIND as usize;
        if self.busy[kind].get() != 0 {
            return Err(job);
        }
        let Some(route) = self.route::<H>() else {
            return Err(job);
        };
        {
            let Ok(mut sessions) = self.sessions.try_borrow_mut() else {
                return Err(job);
            };
            let hint = (job.slot != NO_SLOT).then_some(job.slot);
            job.slot = sessions.slot(job.session(), hint);
            match sessions.get_mut(job.slot) {
                Some(state) if !state.running && state.queue.is_empty() => state.running = true,
                _ => return Err(job),
            }
        }
        self.batch_opened(kind);
        self.calls[kind].increment(1);
        forward(vec![job], None, route, 0);
        Ok(())
    }

    /// After the last plugin, for a batch of hook `H` whose quiet `jobs` are about to be
    /// answered: frees each of their sessions that has nothing queued (the coordinator's
    /// release, done here so the caller finds its session free for its next call) and returns
    /// the slots left to the coordinator.
    fn finish<H: Hook>(&self, jobs: &[Job<H>]) -> Vec<u32> {
        let busy = &self.busy[H::KIND as usize];
        busy.set(busy.get().saturating_sub(1));
        let Ok(mut sessions) = self.sessions.try_borrow_mut() else {
            return jobs.iter().map(|job| job.slot).collect();
        };
        let mut left = Vec::new();
        let mut freed = 0;
        for job in jobs {
            match sessions.get_mut(job.slot) {
                Some(state) if state.running && state.queue.is_empty() && !state.forget => {
                    state.running = false;
                    freed += 1;
                }
                _ => left.push(job.slot),
            }
        }
        self.admission.release_many(freed);
        left
    }
}

/// The shard `uid`'s [`Local`], when its coordinator runs on this thread.
fn local(uid: u64) -> Option<Rc<Local>> {
    SHARDS
        .try_with(|shards| {
            let shards = shards.try_borrow().ok()?;
            shards
                .iter()
                .find(|(id, _)| *id == uid)
                .map(|(_, local)| local.clone())
        })
        .ok()
        .flatten()
}

/// Admits `job` in place when the caller runs on its shard's arbiter and nothing the coordinator
/// has yet to see could be ahead of it (see the module's doc); else hands it back.
#[allow(clippy::result_large_err)] // as `Local::admit`
pub(crate) fn admit_in_place<H: Hook>(admission: &Admission, job: Job<H>) -> Result<(), Job<H>> {
    if !admission.none_queued() {
        return Err(job);
    }
    match local(admission.uid()) {
        Some(local) => local.admit(job),
        None => Err(job),
    }
}

/// Called by the last plugin of a batch of shard `uid` before it answers the quiet `jobs` in
/// it: see [`Local::finish`]; returns the slots the coordinator's report must free. Elsewhere
/// than on the shard's thread nothing is freed here and the report frees them all.
pub(crate) fn finish_in_place<H: Hook>(uid: u64, jobs: &[Job<H>]) -> Vec<u32> {
    match local(uid) {
        Some(local) => local.finish::<H>(jobs),
        None => jobs.iter().map(|job| job.slot).collect(),
    }
}
