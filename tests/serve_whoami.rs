//! `GET /v1/whoami` (issue 48): each principal is told its tenant, principal and role, and what
//! it may use: answering approvals per its tenant's setting, the admin routes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;

use hookline::host::store::{ApiKeyRecord, ApiKeyTable, FileApiKeys, Role};
use hookline::server::{ApprovalAnswerers, TenantPolicy, Tenants};
use serde_json::{json, Value};
use serve_support::{now_ms, serve_with_keys};

#[actix_rt::test]
async fn whoami_names_the_principal_and_what_it_may_use() {
    let dir = tempfile::tempdir().unwrap();
    let table = Arc::new(FileApiKeys::new(dir.path()));
    let mut keys = Vec::new();
    for (tenant, role) in [
        ("acme", Role::Client),
        ("globex", Role::Client),
        ("globex", Role::Operator),
        ("ops", Role::Admin),
    ] {
        let (key, record) = ApiKeyRecord::create(tenant, role, None, None, now_ms()).unwrap();
        table.insert(&record).await.unwrap();
        keys.push((key, record.id));
    }
    let tenants = Tenants {
        default: TenantPolicy::default(),
        named: [(
            "acme".to_owned(),
            TenantPolicy {
                approvals: ApprovalAnswerers::OwnerOrOperator,
                ..TenantPolicy::default()
            },
        )]
        .into(),
    };
    let served = serve_with_keys(table, tenants).await;
    let expected = [
        ("acme", "client", true, false),
        ("globex", "client", false, false),
        ("globex", "operator", true, false),
        ("ops", "admin", true, true),
    ];
    for ((key, id), (tenant, role, answers, admin)) in keys.iter().zip(expected) {
        let response = served
            .client
            .get(served.url("/v1/whoami"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body,
            json!({
                "tenant": tenant, "principal": id, "role": role,
                "answersApprovals": answers, "admin": admin, "authenticated": true,
            })
        );
    }
    let response = served
        .client
        .get(served.url("/v1/whoami"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    served.shutdown().await;
}
