//! This node's liveness, as PostgreSQL itself tracks it (issue 40 item 1).
//!
//! A store holds a session-level advisory lock on its incarnation
//! (`hookline_node_key(incarnation)`, `migrations/0003_node_liveness.sql`) on a connection of its
//! own, outside the pool, for as long as it runs. The database releases the lock the moment that
//! connection ends: when the process dies (the kernel closes its sockets), when the store is
//! dropped, or when the connection is cut. Another node taking over a session asks
//! `hookline_node_alive` about the lease's incarnation and, when it is not alive, takes the
//! session at once instead of waiting for the lease to expire.
//!
//! A node whose liveness connection is cut while it still runs is taken for dead; it reconnects
//! and locks again, and any session taken over meanwhile is fenced off it (its writes fail with
//! `LeaseLost`). A node that is stopped or partitioned from the other nodes but not from the
//! database keeps its lock: its sessions wait for the lease TTL.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::connect::Target;
use hookline_host::store::StoreError;

/// The held liveness lock; released when dropped (its task closes the connection).
pub(crate) struct Liveness {
    _stop: oneshot::Sender<()>,
}

/// One connection holding the lock.
struct Held {
    _client: tokio_postgres::Client,
    connection: JoinHandle<()>,
}

/// Connects, takes the lock on `incarnation`, and keeps it (connecting again `retry` after the
/// connection drops) until the returned [`Liveness`] is dropped.
///
/// # Errors
/// [`StoreError::Database`] when it cannot connect or the lock is held already (another store
/// with the same incarnation, which only a bug makes).
pub(crate) async fn hold(
    target: Target,
    incarnation: String,
    retry: Duration,
) -> Result<Liveness, StoreError> {
    let held = lock(&target, &incarnation).await?;
    let (stop, stopped) = oneshot::channel();
    tokio::spawn(keep(target, incarnation, held, stopped, retry));
    Ok(Liveness { _stop: stop })
}

async fn lock(target: &Target, incarnation: &str) -> Result<Held, StoreError> {
    let (client, connection) = target
        .config
        .connect(target.tls.clone())
        .await
        .map_err(|e| StoreError::db("connect", e))?;
    let connection = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!("the node's liveness connection to the database ended: {e}");
        }
    });
    let row = client
        .query_one(
            "SELECT pg_try_advisory_lock(hookline_node_key($1))",
            &[&incarnation],
        )
        .await
        .map_err(|e| StoreError::db("take the node's liveness lock", e))?;
    if !row.get::<_, bool>(0) {
        connection.abort();
        return Err(StoreError::db(
            "take the node's liveness lock",
            std::io::Error::other(format!("incarnation {incarnation} is held already")),
        ));
    }
    Ok(Held {
        _client: client,
        connection,
    })
}

/// Holds the lock until `stopped` resolves; locks again after a lost connection.
async fn keep(
    target: Target,
    incarnation: String,
    mut held: Held,
    mut stopped: oneshot::Receiver<()>,
    retry: Duration,
) {
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            _ = &mut held.connection => {}
        }
        tracing::warn!(
            "the node's liveness connection was lost: other nodes may take its sessions over \
             (their writes here are then refused); connecting again"
        );
        held = loop {
            tokio::select! {
                _ = &mut stopped => return,
                () = tokio::time::sleep(retry) => {}
            }
            match lock(&target, &incarnation).await {
                Ok(held) => break held,
                Err(e) => tracing::warn!("could not take the node's liveness lock again: {e}"),
            }
        };
    }
}
