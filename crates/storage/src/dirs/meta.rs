//! `meta.properties`, `partition.metadata` and the clean-shutdown marker. Being written.
