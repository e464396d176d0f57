//! Turn series per tenant (issue 48, docs/observability.md "Per tenant"): a turn in a session of
//! a configured tenant is counted under its name, one of an admin (whose sessions belong to
//! `default`) under `default`, and one of a tenant named only by its key under `other`, so who
//! calls adds no series. A tenant's limit refusals carry its label too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;

use hookline::host::store::{FileApiKeys, Role};
use hookline::server::{TenantLimits, TenantPolicy, Tenants};
use serde_json::{json, Value};
use serve_support::{add_key, serve_with_keys, Served};

async fn post(served: &Served, path: &str, key: &str, body: Value) -> (u16, Value) {
    let response = served
        .client
        .post(served.url(path))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// The value of the series named `name` whose labels include every one of `labels`.
fn series(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")))
        .filter(|line| labels.iter().all(|label| line.contains(label)))
        .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

#[actix_rt::test]
async fn turns_and_refusals_are_labelled_with_configured_tenants_others_as_other() {
    let dir = tempfile::tempdir().unwrap();
    let table = Arc::new(FileApiKeys::new(dir.path()));
    let acme = add_key(&table, "acme", Role::Client).await;
    let zeta = add_key(&table, "zeta-unlisted", Role::Client).await;
    let admin = add_key(&table, "ops", Role::Admin).await;
    let one_a_second = TenantPolicy {
        limits: TenantLimits {
            turns_per_second: std::num::NonZeroU32::new(1),
            ..TenantLimits::default()
        },
        ..TenantPolicy::default()
    };
    let tenants = Tenants {
        default: one_a_second.clone(),
        named: [("acme".to_owned(), one_a_second)].into(),
    };
    let served = serve_with_keys(table, tenants).await;
    for key in [&acme, &zeta, &admin] {
        let (status, session) = post(&served, "/v1/sessions", key, json!({})).await;
        assert_eq!(status, 201, "{session}");
        let turns = format!("/v1/sessions/{}/turns", session["key"].as_str().unwrap());
        assert_eq!(
            post(&served, &turns, key, json!({ "text": "hello" }))
                .await
                .0,
            200
        );
        // The second within the second: past the bucket of one a second.
        assert_eq!(
            post(&served, &turns, key, json!({ "text": "hello" }))
                .await
                .0,
            429
        );
    }
    let text = served
        .client
        .get(served.url("/metrics"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for tenant in ["acme", "other", "default"] {
        let label = format!("tenant=\"{tenant}\"");
        assert_eq!(
            series(&text, "hookline_turns_total", &[&label]),
            1.0,
            "{tenant}:\n{text}"
        );
        assert_eq!(
            series(&text, "hookline_turn_latency_seconds_count", &[&label]),
            1.0,
            "{tenant}"
        );
        assert_eq!(
            series(
                &text,
                "hookline_tenant_refusals_total",
                &[&label, "limit=\"turns_per_second\""]
            ),
            1.0,
            "{tenant}"
        );
    }
    assert!(
        !text.contains("zeta-unlisted"),
        "an unlisted tenant named a series"
    );
    assert!(
        !text.contains("tenant=\"ops\""),
        "an admin's tenant named a series"
    );
    served.shutdown().await;
}
