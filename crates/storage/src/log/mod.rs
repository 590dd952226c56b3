//! The partition log: the segment map ([`segments`]), the local log of segments ([`local_log`],
//! Kafka's `LocalLog`), leader-side validation ([`validator`], `LogValidator`), the leader-epoch
//! cache ([`epoch_cache`]), the partition log itself ([`partition_log`], Kafka's
//! `UnifiedLog`), and what a read_committed reader skips ([`read_committed`]).

pub mod epoch_cache;
pub mod load;
pub mod local_log;
pub mod partition_log;
mod producer_rebuild;
pub mod producer_state;
pub mod read_committed;
pub mod segments;
pub mod validator;

#[cfg(test)]
mod load_tests;
#[cfg(test)]
mod partition_log_tests;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tiered_tests;
#[cfg(test)]
mod txn_tests;
