//! Per-tenant limits (issue 48, docs/configuration.md `[tenant_defaults]`, `[tenants.NAME]`):
//! turns per second (a GCRA token bucket per tenant, `governor`), open sessions, turns running
//! at once, and the request body. Each refusal is a 429 (413 for the body) naming the limit,
//! counted in `hookline_tenant_refusals_total{tenant, limit}`. Limits are per node: N nodes
//! behind a balancer let a tenant have up to N times each.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde::Deserialize;

use super::tenants::Tenants;
use crate::ApiError;

/// One tenant's limits; each absent is no limit beyond the server's own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantLimits {
    /// Turns started per second, over a bucket of `turn_burst` (default: the rate).
    pub turns_per_second: Option<NonZeroU32>,
    /// Turns that may start at once before the rate applies.
    pub turn_burst: Option<NonZeroU32>,
    /// Sessions open on this node at once.
    pub max_sessions: Option<usize>,
    /// Turns running on this node at once.
    pub max_running_turns: Option<usize>,
    /// The cap on a request body, in bytes (at most the server's `--body-limit`).
    pub body_limit: Option<usize>,
}

impl TenantLimits {
    /// These limits, each unset one taken from `base`.
    pub fn or(&self, base: &Self) -> Self {
        Self {
            turns_per_second: self.turns_per_second.or(base.turns_per_second),
            turn_burst: self.turn_burst.or(base.turn_burst),
            max_sessions: self.max_sessions.or(base.max_sessions),
            max_running_turns: self.max_running_turns.or(base.max_running_turns),
            body_limit: self.body_limit.or(base.body_limit),
        }
    }
}

/// What a tenant uses now.
struct Usage {
    bucket: Option<DefaultDirectRateLimiter>,
    running: AtomicUsize,
}

/// The refusal of a body over `tenant`'s `body_limit`.
pub(crate) fn body_refused(tenant: &str, limit: usize) -> ApiError {
    refused(
        tenant,
        "body_limit",
        format!("the request body is larger than tenant '{tenant}' may send ({limit} bytes, body_limit)"),
        1,
    )
}

/// Every tenant's usage on this node.
pub(crate) struct Limiter {
    tenants: Arc<Tenants>,
    usage: Mutex<HashMap<String, Arc<Usage>>>,
}

/// A running turn, counted until it drops.
pub(crate) struct RunningTurn(Arc<Usage>);

impl Drop for RunningTurn {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

fn refused(tenant: &str, limit: &'static str, message: String, retry_after: u64) -> ApiError {
    metrics::counter!(
        "hookline_tenant_refusals_total",
        "tenant" => crate::metrics::tenant_label(tenant).to_string(),
        "limit" => limit
    )
    .increment(1);
    ApiError::TenantLimit {
        limit,
        message,
        retry_after: retry_after.max(1),
    }
}

impl Limiter {
    pub(crate) fn new(tenants: Arc<Tenants>) -> Self {
        Self {
            tenants,
            usage: Mutex::new(HashMap::new()),
        }
    }

    fn limits(&self, tenant: &str) -> &TenantLimits {
        &self.tenants.policy(tenant).limits
    }

    fn usage(&self, tenant: &str) -> Arc<Usage> {
        let mut usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = usage.get(tenant) {
            return found.clone();
        }
        let limits = self.limits(tenant);
        let bucket = limits.turns_per_second.map(|rate| {
            let burst = limits.turn_burst.unwrap_or(rate);
            RateLimiter::direct(Quota::per_second(rate).allow_burst(burst))
        });
        let made = Arc::new(Usage {
            bucket,
            running: AtomicUsize::new(0),
        });
        usage.insert(tenant.to_owned(), made.clone());
        made
    }

    /// Admits one more session of `tenant`, which has `open` open now.
    pub(crate) fn admit_session(&self, tenant: &str, open: usize) -> Result<(), ApiError> {
        match self.limits(tenant).max_sessions {
            Some(max) if open >= max => Err(refused(
                tenant,
                "max_sessions",
                format!("tenant '{tenant}' holds its limit of {max} open sessions (max_sessions)"),
                1,
            )),
            _ => Ok(()),
        }
    }

    /// Admits a turn of `tenant`: its rate, then its turns running at once.
    pub(crate) fn admit_turn(&self, tenant: &str) -> Result<RunningTurn, ApiError> {
        let usage = self.usage(tenant);
        if let Some(bucket) = &usage.bucket {
            if let Err(not_until) = bucket.check() {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                // Rounded up: a client told 0 would retry at once (tower_governor's pitfall).
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                return Err(refused(
                    tenant,
                    "turns_per_second",
                    format!(
                        "tenant '{tenant}' starts turns faster than its limit (turns_per_second)"
                    ),
                    seconds,
                ));
            }
        }
        let max = self.limits(tenant).max_running_turns;
        let before = usage.running.fetch_add(1, Ordering::AcqRel);
        let running = RunningTurn(usage);
        match max {
            Some(max) if before >= max => Err(refused(
                tenant,
                "max_running_turns",
                format!(
                    "tenant '{tenant}' runs its limit of {max} turns at once (max_running_turns)"
                ),
                1,
            )),
            _ => Ok(running),
        }
    }

    /// The cap on `tenant`'s request bodies, when below `server`'s.
    pub(crate) fn body_limit(&self, tenant: &str, server: usize) -> Option<usize> {
        self.limits(tenant)
            .body_limit
            .filter(|limit| *limit < server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::tenants::TenantPolicy;

    fn limiter(limits: TenantLimits) -> Limiter {
        Limiter::new(Arc::new(Tenants {
            default: TenantPolicy::default(),
            named: [(
                "t".to_owned(),
                TenantPolicy {
                    limits,
                    ..TenantPolicy::default()
                },
            )]
            .into(),
        }))
    }

    #[test]
    fn a_tenant_past_its_rate_is_told_to_wait_at_least_a_second() {
        let limiter = limiter(TenantLimits {
            turns_per_second: NonZeroU32::new(1),
            ..TenantLimits::default()
        });
        assert!(limiter.admit_turn("t").is_ok());
        let Err(error) = limiter.admit_turn("t") else {
            panic!("a second turn within the second was admitted");
        };
        assert_eq!(error.status().as_u16(), 429);
        assert!(error.to_string().contains("turns_per_second"));
        // Another tenant is not limited by it.
        assert!(limiter.admit_turn("other").is_ok());
        assert!(limiter.admit_turn("other").is_ok());
    }

    #[test]
    fn running_turns_are_counted_until_they_end() {
        let limiter = limiter(TenantLimits {
            max_running_turns: Some(1),
            ..TenantLimits::default()
        });
        let first = limiter.admit_turn("t");
        assert!(first.is_ok());
        assert!(limiter.admit_turn("t").is_err());
        drop(first);
        assert!(limiter.admit_turn("t").is_ok());
    }

    #[test]
    fn open_sessions_are_capped() {
        let limiter = limiter(TenantLimits {
            max_sessions: Some(2),
            ..TenantLimits::default()
        });
        assert!(limiter.admit_session("t", 1).is_ok());
        assert!(limiter.admit_session("t", 2).is_err());
        assert!(limiter.admit_session("other", 99).is_ok());
    }
}
