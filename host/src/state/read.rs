//! Reading a stored session back as typed values, without its file names (issue 15: the
//! records and archive through `Host::records` and `Host::archive`, not through private paths).

use hookline_messages::record::{ArchiveEntry, Record};
use hookline_messages::session::SessionId;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{HostError, ARCHIVE, RECORDS};
use crate::store::{Log, Store};

/// The stored records of session `id`, oldest first (a torn tail is left out, as on resume).
///
/// # Errors
/// [`HostError::UnknownSession`] when the store does not have it; a store failure.
pub(crate) fn records(store: &Store, id: &SessionId) -> Result<Vec<Record>, HostError> {
    read(store, id, RECORDS)
}

/// The archive of session `id`, oldest first.
///
/// # Errors
/// As [`records`].
pub(crate) fn archive(store: &Store, id: &SessionId) -> Result<Vec<ArchiveEntry>, HostError> {
    read(store, id, ARCHIVE)
}

fn read<T: Serialize + DeserializeOwned>(
    store: &Store,
    id: &SessionId,
    file: &str,
) -> Result<Vec<T>, HostError> {
    if !store.sessions()?.contains(id) {
        return Err(HostError::UnknownSession(id.to_string()));
    }
    let path = store.session_dir(id)?.join(file);
    let (_, recovered) = Log::<T>::open(&path)?;
    Ok(recovered.records)
}
