//! The API key tables (issue 48) and a session's owner, on both stores: `api-keys.json` under a
//! file store's root, and `hookline_api_keys` (migration 0004) in PostgreSQL (`support/pg.rs`: a
//! throwaway cluster, or `HOOKLINE_TEST_DATABASE_URL`). Each keeps the SHA-256 only, lists what
//! it holds, revokes once (the first time stays), and a session's owner reads back as written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg.rs"]
mod pg;

use hookline::host::store::{
    ApiKeyRecord, ApiKeyTable, FileApiKeys, FileStore, FileStoreOptions, NewSession, Role,
    SessionOwner, SessionStore,
};
use hookline::messages::session::ApprovalMode;
use hookline::postgres::{PgStore, PgStoreOptions};

async fn contract(table: &dyn ApiKeyTable, store: &dyn SessionStore) {
    let before = table.list().await.unwrap().len();
    let (key, record) = ApiKeyRecord::create(
        "acme",
        Role::Operator,
        Some("support".into()),
        Some(9_000),
        1,
    )
    .unwrap();
    table.insert(&record).await.unwrap();
    let listed = table.list().await.unwrap();
    assert_eq!(listed.len(), before + 1);
    let stored = listed.iter().find(|k| k.id == record.id).unwrap();
    assert_eq!(stored, &record);
    assert!(stored.matches(&key) && !stored.sha256.contains(&key));
    assert!(table.revoke(&record.id, 5).await.unwrap());
    assert!(table.revoke(&record.id, 7).await.unwrap());
    assert!(!table.revoke("k-none", 7).await.unwrap());
    let revoked = table.list().await.unwrap();
    let revoked = revoked.iter().find(|k| k.id == record.id).unwrap();
    assert_eq!(revoked.revoked_ms, Some(5));
    assert_eq!(revoked.refusal(6), Some("the key was revoked"));
    // A session's owner is stored with its facts.
    let owner = SessionOwner {
        tenant: "acme".into(),
        principal: record.id.clone(),
    };
    let (facts, writer) = store
        .create(
            NewSession {
                workspace_root: "/w".into(),
                approval_mode: ApprovalMode::AskAll,
                model: None,
                mode: None,
                owner: Some(owner.clone()),
            },
            &[],
        )
        .await
        .unwrap();
    writer.release().await.unwrap();
    let read = store.read(&facts.session_id).await.unwrap().unwrap();
    assert_eq!(read.facts.owner, Some(owner));
}

#[tokio::test]
async fn the_file_store_keeps_keys_and_owners() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path(), FileStoreOptions::default()).unwrap();
    contract(&FileApiKeys::new(dir.path()), &store).await;
}

#[tokio::test]
async fn postgresql_keeps_keys_and_owners() {
    let options = PgStoreOptions {
        node: "keys".into(),
        migrate: true,
        ..PgStoreOptions::default()
    };
    let store = PgStore::connect(&pg::database_url(), options)
        .await
        .unwrap();
    contract(&store, &store).await;
}
