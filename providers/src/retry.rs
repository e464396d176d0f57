//! When to try a call again, and how long to wait first (issue 12 item 4, issue 21), for every
//! provider family: 429, 529 (Anthropic's "overloaded") and the other 5xx are retried with
//! exponential back-off and jitter, a `Retry-After` the server sends is honoured up to a limit,
//! other 4xx are final. The waits are pure functions of the policy, the attempt and
//! the headers, tested without a clock.

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::StatusCode;

/// How a provider retries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The most attempts one call makes, the first included (at least 1).
    pub max_attempts: u32,
    /// The wait before the second attempt; each later wait doubles, up to `max_delay`.
    pub base_delay: Duration,
    /// The longest computed wait.
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured; a server asking for more is not retried.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// Whether an answer with `status` may succeed if tried again.
pub(crate) fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// What to do after failed attempt `attempt` (1-based).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Wait this long, then try again.
    Wait(Duration),
    /// Every attempt is spent.
    GiveUp,
    /// The server asked for a longer wait than the policy honours.
    TooLong(Duration),
}

impl RetryPolicy {
    /// The next step after attempt `attempt` failed with a retryable answer carrying `headers`
    /// (none for a transport failure). `jitter` is a number in `[0, 1)`.
    pub(crate) fn next(&self, attempt: u32, headers: Option<&HeaderMap>, jitter: f64) -> Next {
        if attempt >= self.max_attempts {
            return Next::GiveUp;
        }
        match headers.and_then(retry_after) {
            Some(wait) if wait > self.max_retry_after => Next::TooLong(wait),
            // The server said when: that, exactly.
            Some(wait) => Next::Wait(wait),
            None => Next::Wait(self.backoff(attempt, jitter)),
        }
    }

    /// Exponential back-off with "equal jitter": half the doubled delay, plus up to that half
    /// again at random, so clients that failed together do not return together.
    fn backoff(&self, attempt: u32, jitter: f64) -> Duration {
        let doubled = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        let delay = doubled.min(self.max_delay);
        let half = delay / 2;
        half + half.mul_f64(jitter.clamp(0.0, 1.0))
    }
}

/// The wait a server asks for: `retry-after-ms` (as OpenAI sends it), else `Retry-After` in
/// seconds. An HTTP-date `Retry-After` is not read; the back-off applies then.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(name: &'static str, value: &'static str) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert(name, HeaderValue::from_static(value));
        map
    }

    #[test]
    fn back_off_doubles_with_jitter_and_stops_at_the_limit() {
        let policy = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
            ..RetryPolicy::default()
        };
        assert_eq!(
            policy.next(1, None, 0.0),
            Next::Wait(Duration::from_millis(50))
        );
        assert_eq!(
            policy.next(1, None, 0.999_999),
            Next::Wait(Duration::from_nanos(99_999_950))
        );
        assert_eq!(
            policy.next(2, None, 0.0),
            Next::Wait(Duration::from_millis(100))
        );
        // Capped at max_delay.
        assert_eq!(
            policy.next(4, None, 0.0),
            Next::Wait(Duration::from_millis(150))
        );
        assert_eq!(policy.next(5, None, 0.0), Next::GiveUp);
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_limit() {
        let policy = RetryPolicy::default();
        let h = headers("retry-after", "2");
        assert_eq!(
            policy.next(1, Some(&h), 0.5),
            Next::Wait(Duration::from_secs(2))
        );
        let h = headers("retry-after-ms", "250");
        assert_eq!(
            policy.next(1, Some(&h), 0.5),
            Next::Wait(Duration::from_millis(250))
        );
        let h = headers("retry-after", "3600");
        assert_eq!(
            policy.next(1, Some(&h), 0.5),
            Next::TooLong(Duration::from_secs(3600))
        );
        // An HTTP date is not read: the back-off applies.
        let h = headers("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT");
        assert_eq!(
            policy.next(1, Some(&h), 0.0),
            Next::Wait(Duration::from_millis(250))
        );
    }

    #[test]
    fn only_429_and_5xx_are_retried() {
        assert!(retryable(StatusCode::TOO_MANY_REQUESTS));
        assert!(retryable(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(retryable(StatusCode::SERVICE_UNAVAILABLE));
        assert!(retryable(StatusCode::from_u16(529).unwrap()));
        assert!(!retryable(StatusCode::BAD_REQUEST));
        assert!(!retryable(StatusCode::UNAUTHORIZED));
        assert!(!retryable(StatusCode::NOT_FOUND));
    }
}
