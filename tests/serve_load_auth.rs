//! `hookline load --token-file` with a client's API key (issue 48 item 6): the turns run and are
//! counted, and `/metrics` (admins only, 403 to a client) is reported as not readable instead of
//! ending the run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use hookline::cli::load::{run as drive, LoadOptions, LoadReport};
use hookline::host::provider::EchoProvider;
use hookline::host::store::{ApiKeyRecord, ApiKeyTable, FileApiKeys, Role};
use hookline::server::KeyTable;
use serve_support::serve;

/// `hookline load` with `options`, on a thread and runtime of its own (as the command runs it),
/// so the served runtime keeps answering.
async fn load(options: LoadOptions) -> LoadReport {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = tx.send(runtime.block_on(drive(options, Arc::new(()))));
    });
    rx.await.unwrap().unwrap()
}

#[actix_rt::test]
async fn load_runs_with_a_clients_key_and_says_the_metrics_are_not_readable() {
    let dir = tempfile::tempdir().unwrap();
    let table = Arc::new(FileApiKeys::new(dir.path()));
    let now = u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let (key, record) = ApiKeyRecord::create("acme", Role::Client, None, None, now).unwrap();
    table.insert(&record).await.unwrap();
    let (admin, record) = ApiKeyRecord::create("ops", Role::Admin, None, None, now).unwrap();
    table.insert(&record).await.unwrap();
    let shared: Arc<dyn ApiKeyTable> = table;
    let served = serve(
        Arc::new(EchoProvider::new()),
        |_| {},
        move |config| config.keys = Some(KeyTable(shared)),
    )
    .await;
    let options = |token: Option<&str>| LoadOptions {
        token: token.map(str::to_owned),
        ..LoadOptions::new(format!("http://{}", served.addr), 2, 3)
    };
    let client = load(options(Some(&key))).await;
    assert_eq!(client.error_count(), 0, "{:?}", client.errors);
    assert_eq!(client.turns, 6);
    assert!(client.metrics_refused);
    assert_eq!(client.server_resident_bytes, None);
    // An admin's key reads them.
    let admin = load(options(Some(&admin))).await;
    assert_eq!(admin.error_count(), 0, "{:?}", admin.errors);
    assert!(!admin.metrics_refused);
    assert!(admin.hook_calls_per_second > 0.0);
    // Without a credential nothing runs: the driver says why.
    let refused = drive(options(None), Arc::new(())).await;
    assert!(refused.is_err(), "a run without a credential passed");
    served.shutdown().await;
}
