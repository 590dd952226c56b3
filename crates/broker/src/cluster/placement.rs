//! Replica placement for new partitions (Kafka's `AdminUtils.assignReplicasToBrokers`, whose
//! rack-aware rule KRaft's `StripedReplicaPlacer` keeps): leaders spread round the brokers from a
//! start index, followers shifted so that no two partitions share a replica list more than they
//! must, and with racks every replica of a partition on a different rack while racks remain.

use std::collections::{BTreeMap, BTreeSet};

/// A broker that may take replicas: its id and rack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementBroker {
    pub id: i32,
    pub rack: Option<String>,
}

/// Why replicas cannot be placed (Kafka's `InvalidReplicationFactorException` texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error("Replication factor must be larger than 0.")]
    NonPositive,
    #[error("Replication factor: {replication_factor} larger than available brokers: {available}.")]
    TooFewBrokers { replication_factor: i16, available: usize },
}

/// Brokers ordered so that consecutive ones are on different racks: each rack's brokers by id,
/// racks by name, taken round-robin (Kafka's `getRackAlternatedBrokerList`).
fn rack_alternated(brokers: &[PlacementBroker]) -> Vec<&PlacementBroker> {
    let mut by_rack: BTreeMap<&str, Vec<&PlacementBroker>> = BTreeMap::new();
    for broker in brokers {
        by_rack.entry(broker.rack.as_deref().unwrap_or_default()).or_default().push(broker);
    }
    for list in by_rack.values_mut() {
        list.sort_by_key(|b| b.id);
    }
    let mut out = Vec::with_capacity(brokers.len());
    let mut round = 0;
    while out.len() < brokers.len() {
        for list in by_rack.values() {
            if let Some(broker) = list.get(round) {
                out.push(*broker);
            }
        }
        round += 1;
    }
    out
}

/// The index of the `replica_idx`-th follower after `first` (Kafka's `replicaIndex`).
fn follower_index(first: usize, shift: usize, replica_idx: usize, n: usize) -> usize {
    let step = 1 + (shift + replica_idx) % (n - 1);
    (first + step) % n
}

/// Replicas for `n_partitions` partitions numbered from `first_partition`, `start` choosing the
/// first leader and the shift (Kafka draws both at random; the controller passes a value it
/// writes into the records, so every node agrees). The first replica of each list is the
/// preferred leader.
pub fn place(
    brokers: &[PlacementBroker],
    first_partition: usize,
    n_partitions: usize,
    replication_factor: i16,
    start: usize,
) -> Result<Vec<Vec<i32>>, PlacementError> {
    let rf = usize::try_from(replication_factor)
        .ok()
        .filter(|rf| *rf > 0)
        .ok_or(PlacementError::NonPositive)?;
    if rf > brokers.len() {
        return Err(PlacementError::TooFewBrokers { replication_factor, available: brokers.len() });
    }
    let rack_aware = brokers.iter().all(|b| b.rack.is_some());
    let arranged: Vec<&PlacementBroker> = if rack_aware {
        rack_alternated(brokers)
    } else {
        let mut sorted: Vec<&PlacementBroker> = brokers.iter().collect();
        sorted.sort_by_key(|b| b.id);
        sorted
    };
    let n = arranged.len();
    let n_racks = arranged.iter().map(|b| b.rack.as_deref()).collect::<BTreeSet<_>>().len();
    let start_index = start % n;
    let mut shift = (start / n) % n.max(1);
    let mut out = Vec::with_capacity(n_partitions);
    for partition in first_partition..first_partition + n_partitions {
        if partition > 0 && partition % n == 0 {
            shift += 1;
        }
        let first = (partition + start_index) % n;
        let Some(leader) = arranged.get(first) else { break };
        let mut replicas = vec![leader.id];
        if rf > 1 && !rack_aware {
            for j in 0..rf - 1 {
                if let Some(b) = arranged.get(follower_index(first, shift, j, n)) {
                    replicas.push(b.id);
                }
            }
        } else if rf > 1 {
            let mut racks: BTreeSet<Option<&str>> = BTreeSet::from([leader.rack.as_deref()]);
            let mut k = 0;
            while replicas.len() < rf && k < n * n {
                let Some(b) = arranged.get(follower_index(first, shift * n_racks, k, n)) else {
                    break;
                };
                let rack_ok = !racks.contains(&b.rack.as_deref()) || racks.len() == n_racks;
                if rack_ok && !replicas.contains(&b.id) {
                    replicas.push(b.id);
                    racks.insert(b.rack.as_deref());
                }
                k += 1;
            }
        }
        out.push(replicas);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers(racks: &[Option<&str>]) -> Vec<PlacementBroker> {
        racks
            .iter()
            .enumerate()
            .map(|(id, rack)| PlacementBroker { id: id as i32, rack: rack.map(str::to_owned) })
            .collect()
    }

    #[test]
    fn without_racks_leaders_rotate_and_followers_shift() {
        let placed = place(&brokers(&[None; 5]), 0, 10, 3, 0).unwrap();
        // Kafka's AdminUtils example for 5 brokers, 10 partitions, 3 replicas, start 0.
        assert_eq!(
            placed,
            [
                vec![0, 1, 2],
                vec![1, 2, 3],
                vec![2, 3, 4],
                vec![3, 4, 0],
                vec![4, 0, 1],
                vec![0, 2, 3],
                vec![1, 3, 4],
                vec![2, 4, 0],
                vec![3, 0, 1],
                vec![4, 1, 2],
            ]
        );
    }

    #[test]
    fn with_racks_each_replica_is_on_another_rack() {
        let list = brokers(&[Some("a"), Some("a"), Some("b"), Some("b"), Some("c"), Some("c")]);
        for start in 0..12 {
            let placed = place(&list, 0, 12, 3, start).unwrap();
            for replicas in &placed {
                let racks: BTreeSet<_> =
                    replicas.iter().map(|id| list[*id as usize].rack.clone()).collect();
                assert_eq!(racks.len(), 3, "start {start}: {replicas:?}");
            }
            // Leaders spread evenly: each broker leads two of the twelve.
            let mut leaders = BTreeMap::new();
            for replicas in &placed {
                *leaders.entry(replicas[0]).or_insert(0) += 1;
            }
            assert!(leaders.values().all(|n| *n == 2), "start {start}: {leaders:?}");
        }
        // Two racks and three replicas: the third goes where it can.
        let two = brokers(&[Some("a"), Some("b"), Some("a"), Some("b")]);
        for replicas in place(&two, 0, 8, 3, 1).unwrap() {
            let unique: BTreeSet<_> = replicas.iter().collect();
            assert_eq!(unique.len(), 3, "{replicas:?}");
        }
    }

    #[test]
    fn too_few_brokers_is_kafkas_error() {
        assert_eq!(
            place(&brokers(&[None; 2]), 0, 1, 3, 0).unwrap_err().to_string(),
            "Replication factor: 3 larger than available brokers: 2."
        );
        assert_eq!(place(&brokers(&[None; 2]), 0, 1, 0, 0), Err(PlacementError::NonPositive));
    }
}
