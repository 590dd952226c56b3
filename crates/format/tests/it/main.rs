//! seglog-format's integration tests, one binary (one link, as rust-analyzer has it): one
//! module per area, helpers in `common`.

mod batch;
mod common;
mod fixtures;
mod kafka_python;
mod metadata;
mod proptest;
mod regressions;
mod scan;
