//! The `seglog` binary's integration tests, one binary (one link, as rust-analyzer has it): one
//! module per command or area, each running `CARGO_BIN_EXE_seglog`.

mod cli;
mod cluster;
mod cluster_clients;
mod cluster_faults;
mod compact;
mod console;
mod dump;
mod hostile;
mod inspect;
mod kill;
mod readme_secure;
mod reassignment;
mod replication;
mod replication_chaos;
mod replication_clients;
mod replication_power;
mod scale;
mod security;
mod serve;
mod tiered;
mod txn;
mod txn_tools;
