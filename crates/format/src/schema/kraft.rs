//! The KRaft control records that `kafka-dump-log` prints as JSON (spec §1.7): the snapshot
//! header and footer, `KRaftVersionRecord` and `VotersRecord`, as their schemas in Kafka's
//! `clients/src/main/resources/common/message` describe them (all version 0, flexible). Their
//! control types (3 to 6) are in [`crate::control`].

use super::message::{Field, Message, Reader, Struct, Ty, Value, Versions, read};
use crate::control::ControlRecordType;
use crate::error::Result;

const ALL: Versions = Versions::ALL;

pub static SNAPSHOT_HEADER: Message = Message {
    root: Struct {
        name: "SnapshotHeaderRecord",
        versions: Versions::only(0),
        fields: &[
            Field::new("version", Ty::Int16, ALL),
            Field::new("lastContainedLogTimestamp", Ty::Int64, ALL),
        ],
    },
    flexible: ALL,
};

pub static SNAPSHOT_FOOTER: Message = Message {
    root: Struct {
        name: "SnapshotFooterRecord",
        versions: Versions::only(0),
        fields: &[Field::new("version", Ty::Int16, ALL)],
    },
    flexible: ALL,
};

pub static KRAFT_VERSION: Message = Message {
    root: Struct {
        name: "KRaftVersionRecord",
        versions: Versions::only(0),
        fields: &[
            Field::new("version", Ty::Int16, ALL),
            Field::new("kRaftVersion", Ty::Int16, ALL),
        ],
    },
    flexible: ALL,
};

static ENDPOINT: Struct = Struct {
    name: "Endpoint",
    versions: ALL,
    fields: &[
        Field::new("name", Ty::Str, ALL),
        Field::new("host", Ty::Str, ALL),
        Field::new("port", Ty::Uint16, ALL),
    ],
};

static KRAFT_VERSION_FEATURE: Struct = Struct {
    name: "KRaftVersionFeature",
    versions: ALL,
    fields: &[
        Field::new("minSupportedVersion", Ty::Int16, ALL),
        Field::new("maxSupportedVersion", Ty::Int16, ALL),
    ],
};

static VOTER: Struct = Struct {
    name: "Voter",
    versions: ALL,
    fields: &[
        Field::new("voterId", Ty::Int32, ALL),
        Field::new("voterDirectoryId", Ty::Uuid, ALL),
        Field::new("endpoints", Ty::Array(&Ty::Struct(&ENDPOINT)), ALL),
        Field::new("kRaftVersionFeature", Ty::Struct(&KRAFT_VERSION_FEATURE), ALL),
    ],
};

pub static VOTERS: Message = Message {
    root: Struct {
        name: "VotersRecord",
        versions: Versions::only(0),
        fields: &[
            Field::new("version", Ty::Int16, ALL),
            Field::new("voters", Ty::Array(&Ty::Struct(&VOTER)), ALL),
        ],
    },
    flexible: ALL,
};

/// The schema of a KRaft control record's value (`None`: not a KRaft record).
pub fn schema(record_type: ControlRecordType) -> Option<&'static Message> {
    match record_type {
        ControlRecordType::SnapshotHeader => Some(&SNAPSHOT_HEADER),
        ControlRecordType::SnapshotFooter => Some(&SNAPSHOT_FOOTER),
        ControlRecordType::KraftVersion => Some(&KRAFT_VERSION),
        ControlRecordType::KraftVoters => Some(&VOTERS),
        _ => None,
    }
}

/// Reads a control record value at version 0, as Kafka's `ControlRecordUtils` does (whatever
/// version the value's first field says).
pub fn decode(message: &Message, value: &[u8]) -> Result<Value> {
    read(message, &mut Reader::new(value), 0)
}
