//! The remote layer's errors: what failed, on which object, and why.

/// A result of this crate.
pub type Result<T, E = RemoteError> = std::result::Result<T, E>;

/// Why a remote operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The object store refused or failed a request.
    #[error("object store: {op} {key}: {source}")]
    Store {
        /// The request: `put`, `get`, `delete`, `list`.
        op: &'static str,
        /// The object's key.
        key: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// A local segment file could not be read for an upload.
    #[error("local segment file: {op} {}: {source}", path.display())]
    Local {
        /// The operation: `open`, `stat`, `read`.
        op: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// A manifest that is not one this crate wrote, or breaks its rules.
    #[error("malformed manifest {key}: {reason}")]
    Malformed {
        /// The manifest's key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// Another writer took the partition: the bucket's writer epoch is above this writer's.
    #[error(
        "fenced: {key} has writer epoch {stored_epoch}, above this writer's {writer_epoch}; another broker tiers this partition"
    )]
    Fenced {
        /// The manifest's key.
        key: String,
        /// This writer's epoch.
        writer_epoch: u64,
        /// The epoch in the bucket.
        stored_epoch: u64,
    },
    /// Other writers kept changing the manifest between this writer's read and write.
    #[error("{key} changed under every one of {attempts} attempts to take the partition")]
    Contended {
        /// The manifest's key.
        key: String,
        /// The attempts made.
        attempts: u32,
    },
    /// A change that the manifest cannot take (a gap, an overlap, a log start going back).
    #[error("invalid manifest change: {reason}")]
    InvalidChange {
        /// What is wrong with it.
        reason: String,
    },
    /// The store cannot be used for tiering.
    #[error("the object store cannot be used for tiering: {reason}")]
    Unsupported {
        /// Why.
        reason: String,
    },
}

impl RemoteError {
    /// A store error for `op` on `key`.
    pub(crate) fn store(
        op: &'static str,
        key: &dyn std::fmt::Display,
        source: object_store::Error,
    ) -> Self {
        Self::Store { op, key: key.to_string(), source }
    }

    /// The error's kind, one word, for metrics' labels.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Store { .. } => "store",
            Self::Local { .. } => "local",
            Self::Malformed { .. } => "malformed",
            Self::Fenced { .. } => "fenced",
            Self::Contended { .. } => "contended",
            Self::InvalidChange { .. } => "invalid_change",
            Self::Unsupported { .. } => "unsupported",
        }
    }

    /// An invalid change, saying why.
    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        Self::InvalidChange { reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::RemoteError;

    #[test]
    fn messages_say_what_and_where() {
        let fenced = RemoteError::Fenced {
            key: "t/orders-0-abc/manifest.json".into(),
            writer_epoch: 3,
            stored_epoch: 4,
        };
        assert_eq!(
            fenced.to_string(),
            "fenced: t/orders-0-abc/manifest.json has writer epoch 4, above this writer's 3; another broker tiers this partition"
        );
        let store = RemoteError::store(
            "put",
            &"k",
            object_store::Error::NotFound { path: "k".into(), source: "gone".into() },
        );
        assert!(store.to_string().starts_with("object store: put k: "), "{store}");
    }
}
