//! How PostgreSQL's failures read as [`StoreError`]s: a pool that gives no connection, an error
//! in one line without row values ([`describe`]). Whether the server refused a statement for a
//! foreign key is `store::sql::refused_foreign_key`, for both back ends.

use deadpool_postgres::PoolError;

use crate::store::StoreError;

impl From<PoolError> for StoreError {
    fn from(e: PoolError) -> Self {
        match e {
            PoolError::Backend(e) => StoreError::Pool(format!("connecting: {}", describe(&e))),
            other => StoreError::Pool(other.to_string()),
        }
    }
}

/// A PostgreSQL error in one line: the server's message and SQLSTATE, or what failed on the
/// client's side and why (the detail, which may quote row values, is left out).
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        );
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}
