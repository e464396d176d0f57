//! The OpenAPI 3.1 document of `hookline serve` (issue 24 item 1), served at
//! `GET /v1/openapi.json` and committed as `docs/openapi.json` (a test keeps the two equal).
//!
//! Generated, not written: the operations come from `#[utoipa::path]` on each handler (its
//! route, parameters, body and answers), the schemas from the body and answer types through
//! schemars, as the plugin protocol's schemas are (`docs/protocol/`). OpenAPI 3.1 schemas are
//! JSON Schema 2020-12, which is what schemars writes, so the two meet in `components.schemas`:
//! the operations name a schema by reference ([`components!`] makes each server type nameable),
//! and one schemars generator writes every schema under that name.

mod components;
pub(crate) mod errors;

use std::sync::LazyLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::OpenApi;

use crate::routes;

/// The schema of the `detail` query parameter: a reference to `Detail`'s.
pub(crate) fn detail() -> utoipa::openapi::Ref {
    utoipa::openapi::Ref::from_schema_name(
        <hookline_host::state::Detail as schemars::JsonSchema>::schema_name(),
    )
}

/// The operations: every route the server answers but the console's files.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "hookline serve",
        description = "Many live hookline sessions over HTTP, server-sent events and WebSocket \
            (docs/serve.md). Every route but `/healthz` needs `Authorization: Bearer <credential>` \
            (the `--token-file` token, or an API key of `hookline keys`, each a principal with a \
            tenant and a role: docs/serve.md, \"Auth\") once either is configured; on loopback \
            without any, none does. \
            Every error answer is `{\"error\": {\"code\", \"message\"}}` (`ErrorBody`)."
    ),
    paths(
        routes::healthz,
        routes::readyz,
        routes::prometheus,
        routes::plugins,
        routes::openapi,
        routes::sessions::open,
        routes::sessions::list,
        routes::sessions::show,
        routes::sessions::archive,
        routes::sessions::close,
        routes::sessions::resume,
        routes::turn::turn,
        routes::sessions::approve,
        routes::sessions::command,
        routes::socket::upgrade,
        routes::events::feed,
        routes::approvals::list,
        crate::auth::whoami::show,
        crate::auth::keys_api::list,
        crate::auth::keys_api::create,
        crate::auth::keys_api::revoke,
    ),
    modifiers(&BearerToken),
    tags(
        (name = "health", description = "Liveness, readiness and metrics."),
        (name = "sessions", description = "Open, read, resume and close sessions; run turns and commands."),
        (name = "approvals", description = "Tool calls that wait for an operator."),
        (name = "events", description = "Live events: server-sent events and the WebSocket."),
        (name = "server", description = "What the server runs and this document."),
    )
)]
struct ApiDoc;

/// Declares the bearer token as the API's optional security scheme.
struct BearerToken;

impl utoipa::Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The token of `--token-file` or an API key (`hookline keys`); a server on loopback without either needs none.",
                    ))
                    .build(),
            ),
        );
        // Either the token or nothing: which one the server takes depends on how it started.
        openapi.security = Some(vec![
            utoipa::openapi::security::SecurityRequirement::new("bearer", Vec::<String>::new()),
            utoipa::openapi::security::SecurityRequirement::default(),
        ]);
    }
}

/// The document as JSON: utoipa's operations with schemars' schemas in `components.schemas`.
fn document() -> serde_json::Value {
    let mut document = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
    let schemas = components::schemas();
    if let Some(components) = document
        .get_mut("components")
        .and_then(serde_json::Value::as_object_mut)
    {
        components.insert("schemas".into(), serde_json::Value::Object(schemas));
    }
    document
}

/// The document, pretty-printed and ending with a newline: what `GET /v1/openapi.json` answers
/// and `docs/openapi.json` holds.
pub fn openapi_json() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        let mut text = serde_json::to_string_pretty(&document()).unwrap_or_default();
        text.push('\n');
        text
    });
    &TEXT
}

/// The answer of `GET /v1/openapi.json`.
pub(crate) fn answer() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], openapi_json()).into_response()
}
