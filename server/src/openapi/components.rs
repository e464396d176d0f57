//! `components.schemas`: one schemars generator writes the schema of every body and answer
//! type, and of the types they hold, under `#/components/schemas/<name>`; the operations name
//! them by the same name.

use std::borrow::Cow;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use utoipa::openapi::{Ref, RefOr, Schema};

use crate::auth::keys_api::{KeysList, NewKeyAnswer, NewKeyBody};
use crate::auth::whoami::WhoAmI;
use crate::routes::{
    ApprovalAnswer, ApprovalBody, ApprovalsList, ArchiveView, CommandAnswer, CommandBody,
    EventsAnswer, Health, OpenBody, SessionView, SessionsList, SocketRequest, TurnAnswer, TurnBody,
    TurnDone,
};
use crate::{ErrorBody, PluginsView};
use hookline_host::gateway::SessionStatus;
use hookline_host::state::Detail;
use hookline_host::store::ApiKeyView;

/// Makes each of the server's own types nameable in `#[utoipa::path]` (`body = SessionView`) by
/// its schemars name, and lists every root type `components.schemas` is generated from (the
/// server's, then shared ones that operations name by `ref(...)` or that no answer holds).
macro_rules! components {
    (server: [$($own:ty),* $(,)?], shared: [$($shared:ty),* $(,)?] $(,)?) => {
        $(
            impl utoipa::PartialSchema for $own {
                fn schema() -> RefOr<Schema> {
                    Ref::from_schema_name(<$own as JsonSchema>::schema_name()).into()
                }
            }

            impl utoipa::ToSchema for $own {
                fn name() -> Cow<'static, str> {
                    <$own as JsonSchema>::schema_name()
                }
            }
        )*

        /// Every schema, by name.
        pub(super) fn schemas() -> serde_json::Map<String, serde_json::Value> {
            let mut generator = SchemaSettings::draft2020_12()
                .with(|settings| settings.definitions_path = "/components/schemas".into())
                .into_generator();
            $( generator.subschema_for::<$own>(); )*
            $( generator.subschema_for::<$shared>(); )*
            let mut schemas = generator.take_definitions(true);
            schemas.sort_keys();
            schemas
        }
    };
}

components! {
    server: [
        Health,
        PluginsView,
        OpenBody,
        SessionsList,
        SessionView,
        ArchiveView,
        EventsAnswer,
        TurnBody,
        TurnAnswer<'static>,
        TurnDone<'static>,
        ApprovalBody,
        ApprovalAnswer,
        CommandBody,
        CommandAnswer,
        ApprovalsList,
        WhoAmI,
        KeysList,
        NewKeyBody,
        NewKeyAnswer,
        SocketRequest,
        ErrorBody,
    ],
    shared: [SessionStatus, Detail, ApiKeyView],
}
