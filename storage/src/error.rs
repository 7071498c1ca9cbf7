//! The error of a storage operation that applies business rules: either the rules refused
//! the change, or the database failed.

use crate::db::DbError;
use domain::error::Refusal;

/// Outcome of a refused or failed operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A rule refused the operation; nothing was changed.
    #[error("refused: {0:?}")]
    Refused(Refusal),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// This node no longer holds the shard it wrote for; nothing was written.
    #[error(transparent)]
    Fenced(#[from] crate::cluster::Fenced),
}

impl Error {
    /// Whether the write was refused because its shard's lease moved on.
    pub fn is_fenced(&self) -> bool {
        matches!(self, Error::Fenced(_))
    }

    /// Whether the transaction lost a lock race (`DbError::is_contention`).
    pub fn is_contention(&self) -> bool {
        matches!(self, Error::Db(e) if e.is_contention())
    }
}

impl From<Refusal> for Error {
    fn from(refusal: Refusal) -> Error {
        Error::Refused(refusal)
    }
}

impl From<tokio_postgres::Error> for Error {
    fn from(error: tokio_postgres::Error) -> Error {
        Error::Db(DbError::Query(error))
    }
}

/// Result of a storage operation.
pub type Result<T> = std::result::Result<T, Error>;
