//! The leader-epoch cache and `leader-epoch-checkpoint` (Kafka's `LeaderEpochFileCache`). Being
//! written.
