//! A full disk: appends fail with a clear error once space runs out, nothing already written is
//! damaged, the directory goes offline (it is not retried), and after space is freed a restart
//! accepts appends again. On `SimFs` with a capacity always; on a real tmpfs of a few MB when
//! this process may mount one.

#![allow(clippy::unwrap_used, clippy::print_stderr, clippy::pedantic)]
#![allow(
    clippy::disallowed_methods,
    reason = "the tmpfs mount point is created and removed around the mount, outside the engine"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};
use seglog_storage::config::{BrokerLogConfig, DurabilityMode, LogConfig};
use seglog_storage::error::Error;
use seglog_storage::io::{Fs, SimFs, StdFs};
use seglog_storage::log::partition_log::{Isolation, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::{LogManager, ManualClock};

fn config(dir: &Path) -> BrokerLogConfig {
    let default_log_config = LogConfig {
        segment_bytes: 256 * 1024,
        segment_index_bytes: 64 * 1024,
        durability: DurabilityMode::FsyncEveryAppend,
        ..LogConfig::default()
    };
    BrokerLogConfig {
        log_dirs: vec![dir.to_owned()],
        default_log_config,
        ..BrokerLogConfig::default()
    }
}

fn batch(idx: usize) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::None);
    builder
        .push(1_000, None, Some(format!("{idx:08}-{}", "z".repeat(900)).as_bytes()), &[])
        .unwrap();
    builder.build().unwrap()
}

fn values(manager: &LogManager, tp: &TopicPartition) -> Vec<String> {
    let log = manager.get_log(tp).unwrap();
    let mut out = Vec::new();
    let mut next = log.log_start_offset().unwrap();
    while next < log.log_end_offset().unwrap() {
        let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
        for item in Batches::new(&fetch.records) {
            let batch = item.unwrap().batch;
            batch.validate().unwrap();
            for record in &batch.records(DecodeLimits::default()).unwrap() {
                out.push(
                    String::from_utf8_lossy(&record.unwrap().value.unwrap()[..8]).into_owned(),
                );
            }
            next = batch.next_offset();
        }
    }
    out
}

/// Fills the disk, checks the failure, frees space, restarts, checks the data.
fn fill_free_restart(fs: Arc<dyn Fs>, dir: &Path, free: impl FnOnce()) {
    let tp = TopicPartition { topic: "full".into(), partition: 0 };
    let (manager, _) =
        LogManager::open(fs.clone(), Arc::new(ManualClock::new(1)), config(dir)).unwrap();
    manager.create_topic("full", 1, BTreeMap::new()).unwrap();
    let log = manager.get_log(&tp).unwrap();
    let mut acknowledged = 0;
    let error = loop {
        match log.append_as_leader(&batch(acknowledged), 0, AppendOrigin::Client, 1) {
            Ok(info) => {
                assert_eq!(info.durable_offset, info.last_offset + 1);
                acknowledged += 1;
            }
            Err(error) => break error,
        }
        assert!(acknowledged < 100_000, "the disk never filled");
    };
    assert!(acknowledged > 10, "some appends fit first ({acknowledged})");
    let Error::Io { source, .. } = &error else { panic!("not an I/O error: {error}") };
    assert!(
        source.kind() == std::io::ErrorKind::StorageFull || source.raw_os_error() == Some(28),
        "ENOSPC expected: {source}"
    );
    assert!(
        error.to_string().contains("failed on"),
        "the error names the operation and file: {error}"
    );
    // Offline: nothing is retried.
    assert!(matches!(
        log.append_as_leader(&batch(0), 0, AppendOrigin::Client, 1),
        Err(Error::Offline { .. })
    ));
    drop(log);
    drop(manager);
    free();
    let (manager, _) = LogManager::open(fs, Arc::new(ManualClock::new(2)), config(dir)).unwrap();
    let kept = values(&manager, &tp);
    let expected: Vec<String> = (0..acknowledged).map(|i| format!("{i:08}")).collect();
    assert_eq!(&kept[..acknowledged.min(kept.len())], &expected[..acknowledged.min(kept.len())]);
    assert_eq!(kept.len(), acknowledged, "every acknowledged record, and nothing else");
    let log = manager.get_log(&tp).unwrap();
    let info = log.append_as_leader(&batch(acknowledged), 0, AppendOrigin::Client, 2).unwrap();
    assert_eq!(info.first_offset, acknowledged as i64, "appends work again after space is freed");
    manager.shutdown().unwrap();
}

#[test]
fn full_simulated_disk() {
    let fs = SimFs::new();
    fs.set_capacity_bytes(Some(3 * 1024 * 1024));
    let handle = fs.clone();
    fill_free_restart(Arc::new(fs), Path::new("/disk"), move || handle.set_capacity_bytes(None));
}

#[test]
fn full_real_tmpfs_when_mountable() {
    let mount_point = PathBuf::from(format!("/tmp/seglog-tmpfs-{}", std::process::id()));
    std::fs::create_dir_all(&mount_point).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&mount_point)
        .status()
        .is_ok_and(|status| status.success());
    if !mounted {
        eprintln!("SKIPPED: cannot mount a tmpfs here; the SimFs full-disk test covers ENOSPC");
        let _ = std::fs::remove_dir(&mount_point);
        return;
    }
    let dir = mount_point.join("data");
    let remount = mount_point.clone();
    let result = std::panic::catch_unwind(|| {
        fill_free_restart(Arc::new(StdFs), &dir, move || {
            let grown = std::process::Command::new("mount")
                .args(["-o", "remount,size=64m"])
                .arg(&remount)
                .status()
                .unwrap();
            assert!(grown.success(), "remount to free space");
        });
    });
    let _ = std::process::Command::new("umount").arg(&mount_point).status();
    let _ = std::fs::remove_dir(&mount_point);
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
