//! The progress bar `hookline bench`, `hookline soak` and `hookline replay` draw while they run.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::bench::Progress;

/// A progress bar over a run's duration, in milliseconds.
pub(super) struct Bar(ProgressBar);

impl Bar {
    /// A bar for a run of `duration` labelled `doing` ("benchmarking"); hidden when the output is
    /// JSON.
    pub(super) fn new(doing: &str, duration: Duration, hidden: bool) -> Self {
        if hidden {
            return Self(ProgressBar::hidden());
        }
        let bar = ProgressBar::new(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
        let template = format!("{{spinner}} {doing} [{{bar:30}}] {{elapsed}}");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Self(bar)
    }

    /// A bar over `total` items labelled `doing` ("turns"); hidden when the output is JSON.
    pub(super) fn counting(doing: &str, total: u64, hidden: bool) -> Self {
        if hidden {
            return Self(ProgressBar::hidden());
        }
        let bar = ProgressBar::new(total);
        let template = format!("{{spinner}} {doing} [{{bar:30}}] {{pos}}/{{len}} {{elapsed}}");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Self(bar)
    }

    /// Moves a counting bar to `done` items.
    pub(super) fn set(&self, done: u64) {
        self.0.set_position(done);
    }

    /// Removes the bar from the terminal.
    pub(super) fn finish(&self) {
        self.0.finish_and_clear();
    }
}

impl crate::load::LoadProgress for Bar {
    fn turns(&self, done: u64, _total: u64) {
        self.0.set_position(done);
    }
}

impl Progress for Bar {
    fn tick(&self, done: Duration, _total: Duration) {
        self.0
            .set_position(u64::try_from(done.as_millis()).unwrap_or(u64::MAX));
    }
}
