//! Control records (spec §1.7): the 4-byte key naming the type, and the transaction marker value.

use crate::error::{DecodeError, Result};

/// The type in a control record's key (Kafka's `ControlRecordType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// Transaction aborted.
    Abort,
    /// Transaction committed.
    Commit,
    /// KRaft leader change.
    LeaderChange,
    /// KRaft snapshot header.
    SnapshotHeader,
    /// KRaft snapshot footer.
    SnapshotFooter,
    /// KRaft version record.
    KraftVersion,
    /// KRaft voters record.
    KraftVoters,
    /// A type this reader does not know (ignored, as Kafka does).
    Unknown(i16),
}

/// The current control key version.
pub const CONTROL_KEY_VERSION: i16 = 0;

impl ControlRecordType {
    /// The type's id.
    pub const fn id(self) -> i16 {
        match self {
            Self::Abort => 0,
            Self::Commit => 1,
            Self::LeaderChange => 2,
            Self::SnapshotHeader => 3,
            Self::SnapshotFooter => 4,
            Self::KraftVersion => 5,
            Self::KraftVoters => 6,
            Self::Unknown(id) => id,
        }
    }

    /// The type with id `id`.
    pub const fn from_id(id: i16) -> Self {
        match id {
            0 => Self::Abort,
            1 => Self::Commit,
            2 => Self::LeaderChange,
            3 => Self::SnapshotHeader,
            4 => Self::SnapshotFooter,
            5 => Self::KraftVersion,
            6 => Self::KraftVoters,
            other => Self::Unknown(other),
        }
    }

    /// Kafka's enum name, as DumpLogSegments prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Abort => "ABORT",
            Self::Commit => "COMMIT",
            Self::LeaderChange => "LEADER_CHANGE",
            Self::SnapshotHeader => "SNAPSHOT_HEADER",
            Self::SnapshotFooter => "SNAPSHOT_FOOTER",
            Self::KraftVersion => "KRAFT_VERSION",
            Self::KraftVoters => "KRAFT_VOTERS",
            Self::Unknown(_) => "UNKNOWN",
        }
    }

    /// Parses a control record key: `int16 version` (>= 0) and `int16 type`.
    pub fn parse_key(key: &[u8]) -> Result<Self> {
        let Some((version, rest)) = key.split_first_chunk::<2>() else {
            return Err(DecodeError::InvalidControlRecord { reason: "key shorter than 4 bytes" });
        };
        let Some(kind) = rest.first_chunk::<2>() else {
            return Err(DecodeError::InvalidControlRecord { reason: "key shorter than 4 bytes" });
        };
        if i16::from_be_bytes(*version) < 0 {
            return Err(DecodeError::InvalidControlRecord { reason: "negative key version" });
        }
        Ok(Self::from_id(i16::from_be_bytes(*kind)))
    }

    /// The 4-byte key for this type, version 0.
    pub fn encode_key(self) -> [u8; 4] {
        let mut key = [0u8; 4];
        let (version, kind) = key.split_at_mut(2);
        version.copy_from_slice(&CONTROL_KEY_VERSION.to_be_bytes());
        kind.copy_from_slice(&self.id().to_be_bytes());
        key
    }
}

/// The value of a COMMIT or ABORT control record (Kafka's `EndTransactionMarker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTransactionMarker {
    /// The epoch of the transaction coordinator that wrote the marker.
    pub coordinator_epoch: i32,
}

impl EndTransactionMarker {
    /// Parses `int16 version` and `int32 coordinatorEpoch`; later versions read as version 0.
    pub fn parse(value: &[u8]) -> Result<Self> {
        let Some((version, rest)) = value.split_first_chunk::<2>() else {
            return Err(DecodeError::InvalidControlRecord {
                reason: "marker shorter than 6 bytes",
            });
        };
        let Some(epoch) = rest.first_chunk::<4>() else {
            return Err(DecodeError::InvalidControlRecord {
                reason: "marker shorter than 6 bytes",
            });
        };
        if i16::from_be_bytes(*version) < 0 {
            return Err(DecodeError::InvalidControlRecord { reason: "negative marker version" });
        }
        Ok(Self { coordinator_epoch: i32::from_be_bytes(*epoch) })
    }

    /// The 6-byte version 0 value.
    pub fn encode(&self) -> [u8; 6] {
        let mut value = [0u8; 6];
        let (_version, epoch) = value.split_at_mut(2);
        epoch.copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_short_keys_fail() {
        for id in -1..8 {
            let kind = ControlRecordType::from_id(id);
            assert_eq!(ControlRecordType::parse_key(&kind.encode_key()).unwrap(), kind);
        }
        assert!(ControlRecordType::parse_key(&[0, 0, 1]).is_err());
        assert!(ControlRecordType::parse_key(&[0xFF, 0xFF, 0, 1]).is_err());
        assert_eq!(ControlRecordType::Commit.encode_key(), [0, 0, 0, 1]);
    }

    #[test]
    fn marker_round_trips_and_short_values_fail() {
        let marker = EndTransactionMarker { coordinator_epoch: 77 };
        assert_eq!(marker.encode(), [0, 0, 0, 0, 0, 77]);
        assert_eq!(EndTransactionMarker::parse(&marker.encode()).unwrap(), marker);
        assert!(EndTransactionMarker::parse(&[0, 0, 0, 0, 0]).is_err());
        // A later version with extra bytes reads as version 0.
        assert_eq!(
            EndTransactionMarker::parse(&[0, 1, 0, 0, 0, 9, 42]).unwrap().coordinator_epoch,
            9
        );
    }
}
