//! The durable security metadata (what Kafka keeps in its metadata log as
//! `AccessControlEntryRecord`, `UserScramCredentialRecord` and `ClientQuotaRecord`): ACLs, SCRAM
//! credentials (salt, stored key, server key and iterations; never a password) and client
//! quotas, in one JSON file, `seglog-security`, in the first log directory.
//!
//! The file is replaced atomically and durably (through storage's `Fs`) before a change is
//! acknowledged, and read at start. `seglog acls` and `seglog users` edit it on a stopped
//! broker's directory through [`SecurityState::parse`] and [`SecurityState::to_text`].

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// The file's name in the first log directory.
pub(crate) const SECURITY_FILE: &str = "seglog-security";
/// The largest file read (a million ACLs fit).
pub(crate) const SECURITY_FILE_BYTES_MAX: u64 = 512 << 20;
/// The format version written.
const VERSION: u32 = 1;

/// One ACL as stored: Kafka's names for the enums (`Topic`, `Literal`, `Read`, `Allow`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct StoredAcl {
    pub(crate) resource_type: String,
    pub(crate) resource_name: String,
    pub(crate) pattern_type: String,
    pub(crate) principal: String,
    pub(crate) host: String,
    pub(crate) operation: String,
    pub(crate) permission: String,
}

/// A credential's salt, stored key and server key.
pub(crate) type ScramKeys = (Vec<u8>, Vec<u8>, Vec<u8>);

/// One SCRAM credential as stored (Kafka's `UserScramCredentialRecord`), binary fields in
/// base64.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredScram {
    pub(crate) user: String,
    pub(crate) mechanism: String,
    pub(crate) salt: String,
    pub(crate) stored_key: String,
    pub(crate) server_key: String,
    pub(crate) iterations: u32,
}

impl std::fmt::Debug for StoredScram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredScram")
            .field("user", &self.user)
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl StoredScram {
    /// The binary salt, stored key and server key.
    pub(crate) fn decode(&self) -> Result<ScramKeys, StoreError> {
        let field = |name: &'static str, text: &str| {
            STANDARD.decode(text).map_err(|error| StoreError::Field {
                what: format!("the SCRAM credential of {} ({})", self.user, self.mechanism),
                field: name,
                reason: error.to_string(),
            })
        };
        Ok((
            field("salt", &self.salt)?,
            field("stored_key", &self.stored_key)?,
            field("server_key", &self.server_key)?,
        ))
    }

    /// A stored credential from its parts.
    pub(crate) fn encode(
        user: &str,
        mechanism: &str,
        salt: &[u8],
        stored_key: &[u8],
        server_key: &[u8],
        iterations: u32,
    ) -> Self {
        Self {
            user: user.to_owned(),
            mechanism: mechanism.to_owned(),
            salt: STANDARD.encode(salt),
            stored_key: STANDARD.encode(stored_key),
            server_key: STANDARD.encode(server_key),
            iterations,
        }
    }
}

/// One quota entity component as on the wire: `user` or `client-id`, and a name (`None` is the
/// default entity).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct StoredEntity {
    pub(crate) entity_type: String,
    pub(crate) name: Option<String>,
}

/// One client quota value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredQuota {
    pub(crate) entity: Vec<StoredEntity>,
    pub(crate) key: String,
    pub(crate) value: f64,
}

/// Everything in the file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct SecurityState {
    #[serde(default)]
    pub(crate) version: u32,
    #[serde(default)]
    pub(crate) acls: Vec<StoredAcl>,
    #[serde(default)]
    pub(crate) scram: Vec<StoredScram>,
    #[serde(default)]
    pub(crate) quotas: Vec<StoredQuota>,
}

/// Why the security file could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// Not JSON of the expected shape.
    #[error("{SECURITY_FILE} is malformed at line {line}, column {column}: {reason}")]
    Malformed { line: usize, column: usize, reason: String },
    /// A newer format.
    #[error("{SECURITY_FILE} has format version {found}; this seglog reads version {VERSION}")]
    Version { found: u32 },
    /// A field that does not decode.
    #[error("{SECURITY_FILE}: {what}: field {field}: {reason}")]
    Field { what: String, field: &'static str, reason: String },
}

impl SecurityState {
    /// Reads the file's text.
    pub(crate) fn parse(text: &str) -> Result<Self, StoreError> {
        let state: Self = serde_json::from_str(text).map_err(|error| StoreError::Malformed {
            line: error.line(),
            column: error.column(),
            reason: error.to_string(),
        })?;
        if state.version > VERSION {
            return Err(StoreError::Version { found: state.version });
        }
        Ok(state)
    }

    /// The file's text (sorted, so that the same state is the same bytes).
    pub(crate) fn to_text(&self) -> String {
        let mut sorted = self.clone();
        sorted.version = VERSION;
        sorted.acls.sort();
        sorted.acls.dedup();
        sorted.scram.sort_by(|a, b| (&a.user, &a.mechanism).cmp(&(&b.user, &b.mechanism)));
        sorted.quotas.sort_by(|a, b| (&a.entity, &a.key).cmp(&(&b.entity, &b.key)));
        let mut text = serde_json::to_string_pretty(&sorted).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let state = SecurityState {
            version: VERSION,
            acls: vec![StoredAcl {
                resource_type: "Topic".into(),
                resource_name: "orders".into(),
                pattern_type: "Literal".into(),
                principal: "User:alice".into(),
                host: "*".into(),
                operation: "Read".into(),
                permission: "Allow".into(),
            }],
            scram: vec![StoredScram::encode(
                "alice",
                "SCRAM-SHA-256",
                b"salt",
                b"sk",
                b"svk",
                4096,
            )],
            quotas: vec![StoredQuota {
                entity: vec![StoredEntity { entity_type: "user".into(), name: None }],
                key: "producer_byte_rate".into(),
                value: 1024.0,
            }],
        };
        let text = state.to_text();
        assert_eq!(SecurityState::parse(&text).expect("parses"), state);
        assert_eq!(state.scram[0].decode().expect("decodes").0, b"salt");
        assert!(!format!("{:?}", state.scram[0]).contains(&state.scram[0].stored_key));
        let error = SecurityState::parse("{\"acls\": [1]}").expect_err("malformed").to_string();
        assert!(error.starts_with("seglog-security is malformed at line 1, column"), "{error}");
        let error = SecurityState::parse("{\"version\": 9}").expect_err("newer").to_string();
        assert_eq!(error, "seglog-security has format version 9; this seglog reads version 1");
    }
}
