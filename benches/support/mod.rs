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

/// Runs `work` to its end on a thread and current-thread runtime of its own, so what it drives
/// (clients, a stub, a flood) never shares the served runtime; its output arrives on the
/// receiver.
pub(crate) fn on_own_runtime<F, T>(
    work: impl FnOnce() -> F + Send + 'static,
) -> tokio::sync::oneshot::Receiver<T>
where
    F: std::future::Future<Output = T>,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = tx.send(runtime.block_on(work()));
    });
    rx
}

/// `hookline load`'s driver, run as the command runs it: on a runtime of its own.
pub(crate) async fn load_on_own_runtime(
    options: hookline::cli::load::LoadOptions,
) -> hookline::cli::load::LoadReport {
    on_own_runtime(move || hookline::cli::load::run(options, std::sync::Arc::new(())))
        .await
        .unwrap()
        .unwrap()
}

/// Serves `app` on a loopback port from a runtime of its own, for the rest of the process; its
/// address.
pub(crate) fn serve_on_own_runtime(app: axum::Router) -> std::net::SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    drop(on_own_runtime(move || async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        tx.send(listener.local_addr().unwrap()).unwrap();
        axum::serve(listener, app).await.unwrap();
    }));
    rx.recv().unwrap()
}
