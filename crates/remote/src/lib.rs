//! Tiered storage (Kafka's KIP-405 `RemoteLogManager`, with the metadata in the bucket): a
//! partition's closed segments, byte for byte, in an object store, under one manifest per
//! partition that describes them and that only one writer at a time may change.
//!
//! The bucket describes itself. Under a prefix, each partition has a folder named by its topic,
//! partition and topic id, holding the manifest and the segments' objects:
//!
//! ```text
//! <prefix>/<topic>-<partition>-<topic id>/manifest.json
//! <prefix>/<topic>-<partition>-<topic id>/segments/<base offset, 20 digits>-<segment id>.log
//!                                                  ... .index, .timeindex, .txnindex,
//!                                                  .snapshot, .leader-epoch-checkpoint
//! ```
//!
//! - Segment objects are written once, under a key no other upload uses (the segment id), with
//!   a create-only PUT; they are never overwritten.
//! - The manifest ([`Manifest`]) lists the committed segments in offset order, contiguous, with
//!   the remote log start offset. It changes only by a conditional PUT on the version read
//!   (`If-Match`), and each change raises `manifest_version` by one.
//! - A writer takes the partition by raising `writer_epoch` ([`ManifestWriter::acquire`]); a
//!   writer that finds a higher epoch in the bucket is fenced ([`RemoteError::Fenced`]) and
//!   changes nothing more.
//! - The manifest changes before objects go: an upload commits after its objects exist; an
//!   expiry or a compaction's replacement deletes the objects it dropped after it commits. A
//!   crash between the two leaves objects no manifest entry names (orphans), never an entry
//!   without its objects; [`find_orphans`] lists them for deletion.
//!
//! A store must honour conditional PUTs for any of this to hold; [`probe_conditional_put`]
//! checks that before a store is used.

mod error;
mod layout;
mod local;
mod manifest;
mod reader;
mod store;
mod verify;
mod writer;

#[cfg(any(test, feature = "sim"))]
pub mod faults;
#[cfg(test)]
mod model_tests;
#[cfg(feature = "testing")]
pub mod moto;
#[cfg(test)]
mod round_trip_tests;

pub use error::{RemoteError, Result};
pub use layout::{ObjectKind, PartitionLayout, SegmentId};
pub use local::{leader_epoch_slice, read_segment_files};
pub use manifest::{Change, MANIFEST_FORMAT, MANIFEST_FORMAT_VERSION, Manifest, SegmentEntry};
/// The object store crate this one speaks through, for callers that open or wrap a store.
pub use object_store;
pub use reader::{
    RemoteChunkCache, RemoteIndexCache, RemoteRead, RemoteReader, RemoteTimestampOffset,
};
pub use store::{S3Config, open_s3};
pub use verify::{RemoteProblem, RemoteReport, verify_remote};
pub use writer::{
    ManifestWriter, delete_manifest, delete_objects, delete_partition_objects,
    delete_segment_objects, find_orphans, list_manifests, probe_conditional_put, read_manifest,
    upload_segment,
};
