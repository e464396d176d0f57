//! What the served-turn benches share: the median of their rounds and the load average they
//! print beside the figures (docs/performance.md: ratios within one run, load beside them).
#![allow(dead_code)]

/// The median of `values` (the upper one of an even count); `values` must not be empty.
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
