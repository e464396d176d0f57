//! Automatic session resets (SPEC G5.3) and `session:patch` (G5.5).

use std::time::Duration;

use hookline_actors::events::Emitted;
use hookline_messages::event::{
    AutoResetContext, Event, ResetReason, SessionEntry, SessionPatch, SessionPatchContext,
};

use super::GatewayEvents;

const DAY_MS: u64 = 24 * 60 * 60 * 1000;
const HOUR_MS: u64 = 60 * 60 * 1000;

/// When sessions reset by themselves. Both parts are optional; with neither, never.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResetPolicy {
    /// Reset a session idle at least this long.
    pub idle_after: Option<Duration>,
    /// Reset every session once a day at this hour (0 to 23, UTC).
    pub daily_at_hour_utc: Option<u8>,
}

/// Whether a session last active at `last_active_ms` is due for a reset at `now_ms` (both in
/// milliseconds since the Unix epoch), and why. The daily reset wins when both apply: it is the
/// one the operator scheduled.
pub fn reset_due(policy: &ResetPolicy, last_active_ms: u64, now_ms: u64) -> Option<ResetReason> {
    if let Some(hour) = policy.daily_at_hour_utc {
        let today = now_ms - now_ms % DAY_MS + u64::from(hour.min(23)) * HOUR_MS;
        let boundary = if today <= now_ms {
            today
        } else {
            today.saturating_sub(DAY_MS)
        };
        if last_active_ms < boundary {
            return Some(ResetReason::Daily);
        }
    }
    let idle = policy.idle_after?;
    let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
    (now_ms.saturating_sub(last_active_ms) >= idle_ms).then_some(ResetReason::Idle)
}

/// What the reset path knows about one automatic reset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoResetFacts {
    /// The entry naming the ended session.
    pub session_entry: SessionEntry,
    /// Which policy fired.
    pub reason: Option<ResetReason>,
    /// The ended session's transcript identifier.
    pub session_file: Option<String>,
    /// Whether the transcript was archived.
    pub transcript_archived: Option<bool>,
    /// The replacing session's id.
    pub next_session_id: Option<String>,
    /// The replacing session's key.
    pub next_session_key: Option<String>,
}

impl GatewayEvents {
    /// Emits `session:auto-reset` detached: the reset path does not wait (SPEC G5.3).
    pub fn auto_reset(&self, reset: AutoResetFacts) -> Emitted {
        let context = AutoResetContext {
            cfg: self.facts.cfg.clone(),
            agent_id: self.facts.agent_id.clone(),
            workspace_dir: self.facts.workspace_dir.clone(),
            store_path: self.facts.store_path.clone(),
            session_entry: reset.session_entry,
            session_file: reset.session_file,
            reason: reset.reason,
            transcript_archived: reset.transcript_archived,
            next_session_id: reset.next_session_id,
            next_session_key: reset.next_session_key,
        };
        self.bus.detach(Event::SessionAutoReset(context))
    }

    /// Emits `session:patch` after a successful settings change (`/model`, the model picker,
    /// mode, approval mode), even when the value already held; queued, never blocking the
    /// caller (SPEC G5.5, G3.1). Read-only status queries must not call it.
    pub fn session_patched(&self, entry_after: SessionEntry, patch: SessionPatch) -> Emitted {
        let context = SessionPatchContext {
            session_entry: entry_after,
            patch,
            cfg: self.facts.cfg.clone(),
        };
        self.bus.enqueue(Event::SessionPatch(context))
    }
}
