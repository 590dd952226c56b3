//! seglog-storage's integration tests, one binary (one link, as rust-analyzer has it): one
//! module per area.

mod checkpoints;
mod fixtures;
mod full_disk;
mod fuzz_regressions;
mod log_dirs;
