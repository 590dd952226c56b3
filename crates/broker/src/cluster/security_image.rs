//! The security part of the metadata image (Kafka's `AclsImage`, `ScramImage` and
//! `ClientQuotasImage`): a cluster's ACLs, SCRAM credentials and client quotas live in the
//! metadata log as Kafka's records, so every broker authorizes and authenticates alike. A
//! broker forwards each change as a [`SecurityChange`]; the controller turns it into records
//! against the committed image ([`SecurityImage::records_for`]); every broker's applier gives
//! the replayed image to its `Security`.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;

use super::records::{AclEntry, ClientQuotaEntry, MetadataRecord, ScramCredentialEntry};

/// A client quota's key: its entity's `(type, name)` components and the quota's name.
pub type QuotaKey = (Vec<(String, Option<String>)>, String);

/// The cluster's ACLs, SCRAM credentials and client quotas as the records left them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecurityImage {
    /// The ACLs by their record id.
    pub acls: BTreeMap<[u8; 16], AclEntry>,
    /// The credentials by user and mechanism.
    pub scram: BTreeMap<(String, i8), ScramCredentialEntry>,
    /// The quotas' values as IEEE 754 bits.
    pub quotas: BTreeMap<QuotaKey, u64>,
    /// The metadata offset of the last security record replayed (-1: none), so that a broker
    /// sees a change without comparing the whole image.
    pub changed_at: i64,
}

/// A security change a broker forwards to the active controller.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SecurityChange {
    /// CreateAcls: the valid new ACLs, each with a fresh id; one already present (the same
    /// ACL under another id) is not added again.
    CreateAcls(Vec<AclEntry>),
    /// DeleteAcls: the ACLs the filters matched on the broker; each is removed by the id the
    /// image has it under (one gone meanwhile is nothing to remove).
    DeleteAcls(Vec<AclEntry>),
    /// AlterUserScramCredentials: `(user, mechanism)` deletions and upsertions, validated by
    /// the broker against the image it had.
    AlterScram { deletions: Vec<(String, i8)>, upsertions: Vec<ScramCredentialEntry> },
    /// AlterClientQuotas: the quotas set (`remove` false) and removed.
    AlterQuotas(Vec<ClientQuotaEntry>),
}

impl SecurityImage {
    /// An image without any security metadata.
    pub fn empty() -> Self {
        Self { changed_at: -1, ..Self::default() }
    }

    /// Replays `record` at `offset`; `false` for a record of another kind.
    pub fn replay(&mut self, offset: i64, record: &MetadataRecord) -> bool {
        match record {
            MetadataRecord::AccessControlEntry(acl) => {
                self.acls.insert(acl.id, acl.clone());
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                self.acls.remove(id);
            }
            MetadataRecord::UserScramCredential(credential) => {
                let key = (credential.name.clone(), credential.mechanism);
                self.scram.insert(key, credential.clone());
            }
            MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                self.scram.remove(&(name.clone(), *mechanism));
            }
            MetadataRecord::ClientQuota(quota) => {
                let key = (quota.entity.clone(), quota.key.clone());
                if quota.remove {
                    self.quotas.remove(&key);
                } else {
                    self.quotas.insert(key, quota.value_bits);
                }
            }
            _ => return false,
        }
        self.changed_at = offset;
        true
    }

    /// The records that rebuild this part of the image (a snapshot's).
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let acls = self.acls.values().cloned().map(MetadataRecord::AccessControlEntry);
        let scram = self.scram.values().cloned().map(MetadataRecord::UserScramCredential);
        let quotas = self.quotas.iter().map(|((entity, key), value_bits)| {
            MetadataRecord::ClientQuota(ClientQuotaEntry {
                entity: entity.clone(),
                key: key.clone(),
                value_bits: *value_bits,
                remove: false,
            })
        });
        acls.chain(scram).chain(quotas).collect()
    }

    /// The controller's decision (Kafka's `AclControlManager`, `ScramControlManager` and
    /// `ClientQuotaControlManager`): the records of `change` against this committed image.
    pub fn records_for(
        &self,
        change: &SecurityChange,
    ) -> Result<Vec<MetadataRecord>, ResponseError> {
        Ok(match change {
            SecurityChange::CreateAcls(acls) => {
                let mut records: Vec<MetadataRecord> = Vec::new();
                let mut added: Vec<&AclEntry> = Vec::new();
                for acl in acls {
                    if self.acls.contains_key(&acl.id) {
                        return Err(ResponseError::InvalidRequest);
                    }
                    if self.acls.values().chain(added.iter().copied()).any(|o| o.same_acl(acl)) {
                        continue;
                    }
                    added.push(acl);
                    records.push(MetadataRecord::AccessControlEntry(acl.clone()));
                }
                records
            }
            SecurityChange::DeleteAcls(acls) => self
                .acls
                .values()
                .filter(|known| acls.iter().any(|acl| acl.same_acl(known)))
                .map(|known| MetadataRecord::RemoveAccessControlEntry { id: known.id })
                .collect(),
            SecurityChange::AlterScram { deletions, upsertions } => deletions
                .iter()
                .filter(|key| self.scram.contains_key(*key))
                .map(|(name, mechanism)| MetadataRecord::RemoveUserScramCredential {
                    name: name.clone(),
                    mechanism: *mechanism,
                })
                .chain(upsertions.iter().cloned().map(MetadataRecord::UserScramCredential))
                .collect(),
            SecurityChange::AlterQuotas(quotas) => quotas
                .iter()
                .filter(|quota| {
                    let current = self.quotas.get(&(quota.entity.clone(), quota.key.clone()));
                    if quota.remove {
                        current.is_some()
                    } else {
                        current != Some(&quota.value_bits)
                    }
                })
                .cloned()
                .map(MetadataRecord::ClientQuota)
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(id: u8, principal: &str) -> AclEntry {
        AclEntry {
            id: [id; 16],
            resource_type: 2,
            resource_name: "orders".to_owned(),
            pattern_type: 3,
            principal: principal.to_owned(),
            host: "*".to_owned(),
            operation: 3,
            permission_type: 3,
        }
    }

    fn replay_all(image: &mut SecurityImage, records: &[MetadataRecord]) {
        for (offset, record) in (10..).zip(records) {
            assert!(image.replay(offset, record), "{record:?} is a security record");
            let bytes = record.encode();
            assert_eq!(MetadataRecord::decode(&bytes).expect("decodes"), *record, "round trip");
        }
    }

    #[test]
    fn acls_are_added_once_and_removed_by_content() {
        let mut image = SecurityImage::empty();
        let create = SecurityChange::CreateAcls(vec![acl(1, "User:alice"), acl(2, "User:alice")]);
        let records = image.records_for(&create).expect("decided");
        assert_eq!(records, vec![MetadataRecord::AccessControlEntry(acl(1, "User:alice"))]);
        replay_all(&mut image, &records);
        let again = image.records_for(&SecurityChange::CreateAcls(vec![acl(3, "User:alice")]));
        assert_eq!(again.expect("decided"), Vec::new(), "the same ACL under a new id");
        let reused = image.records_for(&SecurityChange::CreateAcls(vec![acl(1, "User:bob")]));
        assert_eq!(reused, Err(ResponseError::InvalidRequest), "an id in use");
        let delete = SecurityChange::DeleteAcls(vec![acl(0, "User:alice"), acl(0, "User:eve")]);
        let records = image.records_for(&delete).expect("decided");
        assert_eq!(records, vec![MetadataRecord::RemoveAccessControlEntry { id: [1; 16] }]);
        replay_all(&mut image, &records);
        assert!(image.acls.is_empty());
        assert_eq!(image.changed_at, 10);
    }

    #[test]
    fn credentials_and_quotas_change_only_what_differs_and_snapshot_whole() {
        let mut image = SecurityImage::empty();
        let credential = ScramCredentialEntry {
            name: "alice".to_owned(),
            mechanism: 2,
            salt: vec![1, 2],
            stored_key: vec![3; 64],
            server_key: vec![4; 64],
            iterations: 8192,
        };
        let quota = ClientQuotaEntry {
            entity: vec![("user".to_owned(), Some("alice".to_owned()))],
            key: "producer_byte_rate".to_owned(),
            value_bits: 1024f64.to_bits(),
            remove: false,
        };
        let change = SecurityChange::AlterScram {
            deletions: vec![("bob".to_owned(), 1)],
            upsertions: vec![credential.clone()],
        };
        let mut records = image.records_for(&change).expect("decided");
        records.extend(
            image.records_for(&SecurityChange::AlterQuotas(vec![quota.clone()])).expect("decided"),
        );
        assert_eq!(records.len(), 2, "nothing to delete for bob: {records:?}");
        replay_all(&mut image, &records);
        let same = image.records_for(&SecurityChange::AlterQuotas(vec![quota.clone()]));
        assert_eq!(same.expect("decided"), Vec::new(), "the same value again");
        let mut rebuilt = SecurityImage::empty();
        replay_all(&mut rebuilt, &image.to_records());
        assert_eq!(
            (rebuilt.acls, rebuilt.scram, rebuilt.quotas),
            (image.acls, image.scram, image.quotas)
        );
        let removed = SecurityChange::AlterQuotas(vec![ClientQuotaEntry { remove: true, ..quota }]);
        let mut image2 = SecurityImage::empty();
        assert_eq!(image2.records_for(&removed).expect("decided"), Vec::new(), "nothing set");
        image2.replay(1, &MetadataRecord::UserScramCredential(credential));
        assert_eq!(image2.scram.len(), 1);
    }
}
