//! A cluster's broker's security state (Kafka's `AclPublisher`, `ScramPublisher` and
//! `ClientQuotaMetadataManager`): the ACLs, SCRAM credentials and client quotas come from the
//! committed metadata, never from the local `seglog-security` file. A change made through this
//! broker is forwarded to the controller as a [`SecurityChange`] and is in effect here once
//! the broker has applied its records (the forward waits for that); every other broker applies
//! the same records.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use super::Security;
use crate::cluster::link::ClusterLink;
use crate::cluster::raft::network::AdminRequest;
use crate::cluster::records::{AclEntry, ClientQuotaEntry, ScramCredentialEntry};
use crate::cluster::security_image::{QuotaKey, SecurityChange, SecurityImage};
use crate::security::acl::{
    AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType,
};
use crate::security::quota::{ClientQuotaEntity, ClientQuotas};
use crate::security::scram::{ScramCredential, ScramMechanism};

/// Why a security change was not made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// The local store could not be written (a single node).
    #[error("{0}")]
    Storage(#[from] seglog_storage::Error),
    /// The controller refused the change or could not be reached (a cluster).
    #[error("{message}")]
    Refused { code: i16, message: String },
}

impl WriteError {
    /// Kafka's error code for the answer.
    pub(crate) fn code(&self) -> i16 {
        match self {
            Self::Storage(error) => crate::error::storage_error(error).code(),
            Self::Refused { code, .. } => *code,
        }
    }
}

/// An ACL as its metadata record has it.
pub(super) fn entry_of(binding: &AclBinding, id: [u8; 16]) -> AclEntry {
    AclEntry {
        id,
        resource_type: binding.resource_type.code(),
        resource_name: binding.resource_name.clone(),
        pattern_type: binding.pattern_type.code(),
        principal: binding.principal.clone(),
        host: binding.host.clone(),
        operation: binding.operation.code(),
        permission_type: binding.permission.code(),
    }
}

fn binding_of_entry(entry: &AclEntry) -> Option<AclBinding> {
    Some(AclBinding {
        resource_type: ResourceType::from_code(entry.resource_type)?,
        resource_name: entry.resource_name.clone(),
        pattern_type: PatternType::from_code(entry.pattern_type)?,
        principal: entry.principal.clone(),
        host: entry.host.clone(),
        operation: AclOperation::from_code(entry.operation)?,
        permission: AclPermissionType::from_code(entry.permission_type)?,
    })
}

/// A credential as its metadata record has it.
pub(super) fn credential_entry(
    user: &str,
    mechanism: ScramMechanism,
    credential: &ScramCredential,
) -> ScramCredentialEntry {
    ScramCredentialEntry {
        name: user.to_owned(),
        mechanism: mechanism.kafka_type(),
        salt: credential.salt.clone(),
        stored_key: credential.stored_key.clone(),
        server_key: credential.server_key.clone(),
        iterations: i32::try_from(credential.iterations).unwrap_or(i32::MAX),
    }
}

/// The quotas as `(entity, key) -> value bits`.
fn quota_map(quotas: &ClientQuotas) -> BTreeMap<QuotaKey, u64> {
    quotas
        .entries()
        .flat_map(|(entity, values)| {
            let entity: Vec<(String, Option<String>)> = entity
                .to_wire()
                .into_iter()
                .map(|(kind, name)| (kind.to_owned(), name.map(str::to_owned)))
                .collect();
            values.iter().map(move |(key, value)| ((entity.clone(), key.clone()), value.to_bits()))
        })
        .collect()
}

/// A fresh ACL id (Kafka's `Uuid.randomUuid`).
pub(super) fn random_id() -> Result<[u8; 16], WriteError> {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id)
        .map_err(|e| WriteError::Refused { code: -1, message: format!("no randomness: {e}") })?;
    Ok(id)
}

impl Security {
    /// From now on the ACLs, credentials and quotas are the cluster's metadata's.
    pub(crate) fn use_cluster(&self, link: Arc<ClusterLink>) {
        let _ = self.cluster.set(link);
    }

    /// Whether changes go through the cluster's controller.
    pub(super) fn in_cluster(&self) -> bool {
        self.cluster.get().is_some()
    }

    /// Sends `change` to the controller; `Ok` once this broker has applied it.
    pub(super) fn forward(&self, change: SecurityChange) -> Result<(), WriteError> {
        let Some(link) = self.cluster.get() else {
            return Err(WriteError::Refused { code: -1, message: "not in a cluster".to_owned() });
        };
        crate::handlers::cluster::forward(link, AdminRequest::Security(change))
            .map_err(|(code, message)| WriteError::Refused { code, message })
    }

    /// The quota changes that turn the current quotas into `next`.
    pub(super) fn quota_changes(&self, next: &ClientQuotas) -> Vec<ClientQuotaEntry> {
        let current = quota_map(&self.quotas.read().unwrap_or_else(PoisonError::into_inner));
        let next = quota_map(next);
        let set = next.iter().filter(|(key, bits)| current.get(*key) != Some(*bits)).map(
            |((entity, key), bits)| ClientQuotaEntry {
                entity: entity.clone(),
                key: key.clone(),
                value_bits: *bits,
                remove: false,
            },
        );
        let removed = current.keys().filter(|key| !next.contains_key(*key)).map(|(entity, key)| {
            ClientQuotaEntry {
                entity: entity.clone(),
                key: key.clone(),
                value_bits: 0,
                remove: true,
            }
        });
        set.chain(removed).collect()
    }

    /// Takes the metadata's ACLs, credentials and quotas as this broker's (the applier calls
    /// this for each image whose security part changed). A record this broker cannot read is
    /// skipped with a warning, as Kafka's publishers log and go on.
    pub(crate) fn apply_image(&self, image: &SecurityImage) {
        if let Some(authorizer) = &self.authorizer {
            let mut next = authorizer.read().unwrap_or_else(PoisonError::into_inner).emptied();
            for entry in image.acls.values() {
                if let Some(binding) = binding_of_entry(entry) {
                    next.add(binding);
                } else {
                    tracing::warn!(?entry, "an ACL record with unknown codes is skipped");
                }
            }
            *authorizer.write().unwrap_or_else(PoisonError::into_inner) = next;
        }
        let mut scram = BTreeMap::new();
        for entry in image.scram.values() {
            let Some(mechanism) = ScramMechanism::from_kafka_type(entry.mechanism) else {
                tracing::warn!(user = %entry.name, "a SCRAM record of an unknown mechanism");
                continue;
            };
            let credential = ScramCredential {
                salt: entry.salt.clone(),
                stored_key: entry.stored_key.clone(),
                server_key: entry.server_key.clone(),
                iterations: u32::try_from(entry.iterations).unwrap_or(0),
            };
            scram.insert((entry.name.clone(), mechanism), credential);
        }
        *self.scram.write().unwrap_or_else(PoisonError::into_inner) = scram;
        let mut quotas = ClientQuotas::new();
        for ((entity, key), bits) in &image.quotas {
            let parsed = ClientQuotaEntity::from_wire(
                entity.iter().map(|(kind, name)| (kind.as_str(), name.as_deref())),
            );
            let set = parsed.and_then(|e| quotas.alter(&e, key, Some(f64::from_bits(*bits))));
            if let Err(error) = set {
                tracing::warn!(%error, key, "a client quota record is skipped");
            }
        }
        self.install_quotas(quotas);
    }
}
