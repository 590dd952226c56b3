//! The reports Kafka prints on stderr after all files, kept in maps that iterate in the order
//! Kafka's Scala hash maps do.

use std::io;

use super::Dumper;

/// How Kafka's code writes into one of its report maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum PutPolicy {
    /// `map.put(file, list)` after every new pair (index mismatches, non-consecutive offsets).
    #[default]
    EveryPair,
    /// `map.put(file, buffer)` only when the file is first seen (time index errors).
    FirstPair,
}

/// Per-file lists of pairs that Kafka keeps in a Scala 2.13 `mutable.HashMap[String, _]` and
/// prints in that map's iteration order, which [`ReportMap::in_scala_order`] reproduces.
#[derive(Debug, Default)]
pub(super) struct ReportMap {
    pub(super) entries: Vec<(String, Vec<(i64, i64)>)>,
    pub(super) policy: PutPolicy,
    /// The hash table's length: 16, doubled whenever a `put` finds it 75 % full (Scala checks
    /// before looking the key up, so updating an existing key can grow the table too).
    pub(super) table_len: usize,
}

/// Scala's `mutable.HashMap` and `HashSet` start with 16 buckets.
pub(super) const SCALA_TABLE_LEN_INITIAL: usize = 16;

/// Scala's `newThreshold`: 75 % of the table (exact in integers for powers of two).
pub(super) const fn scala_threshold(table_len: usize) -> usize {
    table_len / 4 * 3
}

impl ReportMap {
    pub(super) fn new(policy: PutPolicy) -> Self {
        Self { entries: Vec::new(), policy, table_len: SCALA_TABLE_LEN_INITIAL }
    }

    pub(super) fn push(&mut self, key: &str, pair: (i64, i64)) {
        let existing = self.entries.iter().position(|(k, _)| k == key);
        if (existing.is_none() || self.policy == PutPolicy::EveryPair)
            && self.entries.len() + 1 >= scala_threshold(self.table_len)
        {
            self.table_len *= 2;
        }
        match existing.and_then(|idx| self.entries.get_mut(idx)) {
            Some((_, pairs)) => pairs.push(pair),
            None => self.entries.push((key.to_owned(), vec![pair])),
        }
    }

    pub(super) fn in_scala_order(&self) -> impl Iterator<Item = &(String, Vec<(i64, i64)>)> {
        let mut order: Vec<(usize, i32, usize)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(idx, (key, _))| {
                let hash = scala_improve_hash(seglog_format::java::string_hash(key));
                (scala_bucket(hash, self.table_len), hash, idx)
            })
            .collect();
        order.sort_unstable();
        order.into_iter().filter_map(|(_, _, idx)| self.entries.get(idx))
    }
}

/// Scala 2.13's `improveHash`: the high 16 bits folded into the low ones.
pub(super) fn scala_improve_hash(hash: i32) -> i32 {
    hash ^ ((hash as u32) >> 16) as i32
}

/// The bucket of an improved hash. Within a bucket Scala keeps nodes sorted by hash (ties in
/// insertion order), and growing the table keeps that order, so iteration is by (bucket, hash,
/// insertion).
pub(super) fn scala_bucket(improved_hash: i32, table_len: usize) -> usize {
    (improved_hash as u32 as usize) & (table_len - 1)
}

/// Kafka's `TimeIndexDumpErrors`.
#[derive(Debug)]
pub(super) struct TimeIndexErrors {
    pub(super) mismatches: ReportMap,
    pub(super) out_of_order: ReportMap,
    pub(super) shallow_offset_not_found: ReportMap,
}

impl Dumper<'_> {
    /// The stderr reports Kafka prints after all files.
    pub(super) fn print_reports(&mut self) -> io::Result<()> {
        for (file, pairs) in self.index_mismatches.in_scala_order() {
            self.problems = true;
            writeln!(self.err, "Mismatches in :{file}")?;
            // Kafka prepends to the list, so the latest comes first.
            for (index_offset, log_offset) in pairs.iter().rev() {
                writeln!(self.err, "  Index offset: {index_offset}, log offset: {log_offset}")?;
            }
        }
        let errors = &self.time_index_errors;
        for (file, pairs) in errors.mismatches.in_scala_order() {
            self.problems = true;
            writeln!(self.err, "Found timestamp mismatch in :{file}")?;
            for (index_timestamp, log_timestamp) in pairs {
                writeln!(
                    self.err,
                    "  Index timestamp: {index_timestamp}, log timestamp: {log_timestamp}"
                )?;
            }
        }
        for (file, pairs) in errors.out_of_order.in_scala_order() {
            self.problems = true;
            writeln!(self.err, "Found out of order timestamp in :{file}")?;
            for (index_timestamp, previous) in pairs {
                writeln!(
                    self.err,
                    "  Index timestamp: {index_timestamp}, Previously indexed timestamp: {previous}"
                )?;
            }
        }
        for (_, pairs) in errors.shallow_offset_not_found.in_scala_order() {
            self.problems = true;
            writeln!(self.err, "The following indexed offsets are not found in the log.")?;
            for (indexed_offset, log_offset) in pairs {
                writeln!(
                    self.err,
                    "Indexed offset: {indexed_offset}, found log offset: {log_offset}"
                )?;
            }
        }
        for (file, pairs) in self.non_consecutive.in_scala_order() {
            writeln!(self.err, "{}{file}", self.options.format.non_consecutive_header())?;
            for (first, second) in pairs.iter().rev() {
                writeln!(self.err, "  {first} is followed by {second}")?;
            }
        }
        self.err.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_map_grows_like_scala() {
        let mut every = ReportMap::new(PutPolicy::EveryPair);
        let mut first = ReportMap::new(PutPolicy::FirstPair);
        for idx in 0..11 {
            every.push(&format!("/f{idx}"), (idx, idx));
            first.push(&format!("/f{idx}"), (idx, idx));
        }
        assert_eq!((every.table_len, first.table_len), (16, 16));
        // Scala checks the load before looking the key up: an update of the 11th entry grows.
        every.push("/f0", (1, 2));
        first.push("/f0", (1, 2));
        assert_eq!((every.table_len, first.table_len), (32, 16));
        first.push("/f11", (0, 0));
        assert_eq!(first.table_len, 32);
        // Iteration is by bucket, then hash: a key in a lower bucket comes first.
        let mut map = ReportMap::new(PutPolicy::EveryPair);
        for key in ["b", "a"] {
            map.push(key, (0, 0));
        }
        let order: Vec<&str> = map.in_scala_order().map(|(key, _)| key.as_str()).collect();
        // "a".hashCode() = 97 (bucket 1), "b" = 98 (bucket 2).
        assert_eq!(order, ["a", "b"]);
    }
}
