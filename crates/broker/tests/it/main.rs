//! seglog-broker's integration tests, one binary (one link, as rust-analyzer has it): one
//! module per area, each starting the server in-process; helpers in `common`.

// As in the `seglog` binary: see ARCHITECTURE.md, "Hostile array counts".
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod admin;
mod authz;
mod broker_members;
mod common;
mod console;
mod fetch_files;
mod fetch_versions;
mod groups;
mod log_dirs;
mod metrics;
mod protocol;
mod quorum;
mod quorum_tls;
mod rdkafka;
mod rdkafka_groups;
mod rdkafka_security;
mod rdkafka_txn;
mod tiered;
mod txn;
