//! seglog-remote's integration tests, one binary: against moto, the S3 test bed (`moto`
//! in server mode from the Python venv that `.ci/run` makes, `SEGLOG_PYTHON`).

mod moto;
