//! Idempotent producers (Kafka's `ProducerStateManager` and `ProducerAppendInfo`, the
//! in-memory part): per producer id, the epoch and the last five appended batches, so that a
//! retried batch is answered with its original offsets instead of being written twice, a
//! sequence gap is refused with OUT_OF_ORDER_SEQUENCE_NUMBER and an older epoch with
//! INVALID_PRODUCER_EPOCH.
//!
//! No `.snapshot` files yet: at open the state is rebuilt from the batch headers of the active
//! segment only, so a producer whose last batches lie in older segments starts afresh (its next
//! batch is accepted whatever its sequence).

use std::collections::{BTreeMap, VecDeque};

use seglog_format::increment_sequence;

use super::validator::ValidationError;

/// Batches remembered per producer, as Kafka's `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`
/// (a producer has at most five requests in flight).
pub const BATCHES_PER_PRODUCER_MAX: usize = 5;

/// One appended batch of a producer (Kafka's `BatchMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    /// The batch's base sequence.
    pub first_seq: i32,
    /// The sequence of its last record.
    pub last_seq: i32,
    /// The offset its first record was given.
    pub first_offset: i64,
    /// The offset its last record was given.
    pub last_offset: i64,
}

/// What a producer's batch is to the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerCheck {
    /// New and in sequence: append it.
    Append,
    /// Already appended (a retry): answer with these offsets, write nothing.
    Duplicate(BatchMetadata),
}

#[derive(Debug, Clone, Default)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMetadata>,
}

/// The producers of one partition.
#[derive(Debug, Clone, Default)]
pub struct ProducerStateManager {
    producers: BTreeMap<i64, ProducerEntry>,
}

impl ProducerStateManager {
    /// Checks a batch of `producer_id` at `epoch` with sequences `first_seq..=last_seq`.
    pub fn check(
        &self,
        producer_id: i64,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
    ) -> Result<ProducerCheck, ValidationError> {
        let Some(entry) = self.producers.get(&producer_id) else {
            // Unknown here (new, or its state was lost with a restart): accepted, as Kafka
            // accepts a producer whose state expired.
            return Ok(ProducerCheck::Append);
        };
        if epoch < entry.epoch {
            return Err(ValidationError::InvalidProducerEpoch {
                producer_id,
                epoch,
                current_epoch: entry.epoch,
            });
        }
        if epoch > entry.epoch {
            // A new epoch starts its sequences again.
            return if first_seq == 0 {
                Ok(ProducerCheck::Append)
            } else {
                Err(ValidationError::OutOfOrderSequence {
                    producer_id,
                    expected: 0,
                    found: first_seq,
                })
            };
        }
        if let Some(duplicate) = entry
            .batches
            .iter()
            .find(|batch| batch.first_seq == first_seq && batch.last_seq == last_seq)
        {
            return Ok(ProducerCheck::Duplicate(*duplicate));
        }
        let expected = entry.batches.back().map_or(0, |last| increment_sequence(last.last_seq, 1));
        if first_seq == expected {
            Ok(ProducerCheck::Append)
        } else {
            Err(ValidationError::OutOfOrderSequence { producer_id, expected, found: first_seq })
        }
    }

    /// Records an appended batch.
    pub fn update(&mut self, producer_id: i64, epoch: i16, batch: BatchMetadata) {
        let entry = self.producers.entry(producer_id).or_default();
        if entry.epoch != epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry.batches.push_back(batch);
        while entry.batches.len() > BATCHES_PER_PRODUCER_MAX {
            entry.batches.pop_front();
        }
    }

    /// Forgets batches at or after `offset` (the log was truncated there).
    pub fn truncate_from(&mut self, offset: i64) {
        for entry in self.producers.values_mut() {
            entry.batches.retain(|batch| batch.last_offset < offset);
        }
        self.producers.retain(|_, entry| !entry.batches.is_empty());
    }

    /// Forgets every producer.
    pub fn clear(&mut self) {
        self.producers.clear();
    }

    /// Producers tracked.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Whether no producer is tracked.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(first_seq: i32, last_seq: i32, first_offset: i64) -> BatchMetadata {
        BatchMetadata {
            first_seq,
            last_seq,
            first_offset,
            last_offset: first_offset + i64::from(last_seq - first_seq),
        }
    }

    #[test]
    fn sequences_duplicates_and_epochs() {
        let mut state = ProducerStateManager::default();
        assert_eq!(state.check(7, 0, 0, 2), Ok(ProducerCheck::Append));
        state.update(7, 0, batch(0, 2, 100));
        // The retry of the same batch gets its offsets back.
        assert_eq!(state.check(7, 0, 0, 2), Ok(ProducerCheck::Duplicate(batch(0, 2, 100))));
        // The next batch must start at 3.
        assert_eq!(
            state.check(7, 0, 5, 6),
            Err(ValidationError::OutOfOrderSequence { producer_id: 7, expected: 3, found: 5 })
        );
        assert_eq!(state.check(7, 0, 3, 3), Ok(ProducerCheck::Append));
        state.update(7, 0, batch(3, 3, 103));
        // An older epoch is fenced; a newer one starts again at 0.
        assert_eq!(
            state.check(7, -1, 0, 0),
            Err(ValidationError::InvalidProducerEpoch {
                producer_id: 7,
                epoch: -1,
                current_epoch: 0
            })
        );
        assert_eq!(
            state.check(7, 1, 4, 4),
            Err(ValidationError::OutOfOrderSequence { producer_id: 7, expected: 0, found: 4 })
        );
        assert_eq!(state.check(7, 1, 0, 0), Ok(ProducerCheck::Append));
        state.update(7, 1, batch(0, 0, 104));
        assert_eq!(state.check(7, 1, 0, 0), Ok(ProducerCheck::Duplicate(batch(0, 0, 104))));
        // Another producer is independent.
        assert_eq!(state.check(8, 0, 0, 0), Ok(ProducerCheck::Append));
    }

    #[test]
    fn five_batches_are_remembered_and_sequences_wrap() {
        let mut state = ProducerStateManager::default();
        for i in 0..7 {
            state.update(1, 0, batch(i, i, i64::from(i)));
        }
        assert_eq!(state.check(1, 0, 2, 2), Ok(ProducerCheck::Duplicate(batch(2, 2, 2))));
        // Older than the last five: not a known duplicate, and out of sequence.
        assert_eq!(
            state.check(1, 0, 1, 1),
            Err(ValidationError::OutOfOrderSequence { producer_id: 1, expected: 7, found: 1 })
        );
        let mut wrapping = ProducerStateManager::default();
        wrapping.update(2, 0, batch(i32::MAX - 1, i32::MAX, 0));
        assert_eq!(wrapping.check(2, 0, 0, 4), Ok(ProducerCheck::Append));
    }

    #[test]
    fn truncation_forgets_what_it_removed() {
        let mut state = ProducerStateManager::default();
        state.update(1, 0, batch(0, 1, 0));
        state.update(1, 0, batch(2, 3, 2));
        state.truncate_from(2);
        assert_eq!(state.check(1, 0, 2, 3), Ok(ProducerCheck::Append));
        state.truncate_from(0);
        assert!(state.is_empty());
    }
}
