//! Tests of SimFs: durable and live bytes, crashes, fault plans, capacity.

use crate::testing::sim_with_dir;
use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;
use crate::io::{StdFs, read_all};

const SECTOR: usize = SimFs::SECTOR_BYTES;

fn read_path(fs: &dyn Fs, path: &str) -> Option<Vec<u8>> {
    let path = Path::new(path);
    fs.exists(path)
        .unwrap()
        .then(|| read_all(fs.open(path, OpenMode::Read).unwrap().as_ref()).unwrap())
}

fn create(fs: &dyn Fs, path: &str, bytes: &[u8]) -> Box<dyn File> {
    let file = fs.open(Path::new(path), OpenMode::CreateNew).unwrap();
    file.write_all_at(bytes, 0).unwrap();
    file
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|byte_idx| seed.wrapping_add((byte_idx % 251) as u8) | 1).collect()
}

fn check_raw_os_error(result: io::Result<impl fmt::Debug>, code: i32) {
    let error = result.unwrap_err();
    assert_eq!(error.raw_os_error(), Some(code), "{error}");
}

#[test]
fn reads_see_live_bytes_and_crash_keeps_durable_bytes() {
    let fs = sim_with_dir("/d");
    let file = create(&fs, "/d/a.log", b"synced");
    fs.sync_dir(Path::new("/d")).unwrap();
    file.sync_data().unwrap();
    file.write_all_at(b" and not", 6).unwrap();
    assert_eq!(read_all(file.as_ref()).unwrap(), b"synced and not");

    // The unsynced 8 bytes end before the first sector boundary: all or nothing.
    let mut outcomes = BTreeSet::new();
    for seed in 0..64 {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"synced");
        fs.sync_dir(Path::new("/d")).unwrap();
        file.sync_data().unwrap();
        file.write_all_at(b" and not", 6).unwrap();
        fs.crash(seed);
        outcomes.insert(read_path(&fs, "/d/a.log").unwrap());
    }
    let expected: BTreeSet<Vec<u8>> = [b"synced".to_vec(), b"synced and not".to_vec()].into();
    assert_eq!(outcomes, expected);
}

#[test]
fn crash_keeps_a_sector_aligned_prefix_of_the_tail() {
    let mut lens = BTreeSet::new();
    for seed in 0..200 {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", &pattern(1, 100));
        file.sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        file.write_all_at(&pattern(2, 1100), 100).unwrap();
        fs.crash(seed);
        let bytes = read_path(&fs, "/d/a.log").unwrap();
        let mut live = pattern(1, 100);
        live.extend(pattern(2, 1100));
        assert!(live.starts_with(&bytes), "seed {seed}");
        lens.insert(bytes.len());
    }
    assert_eq!(lens, [100, 512, 1024, 1200].into());
}

#[test]
fn crash_tears_overwrites_per_sector() {
    let old = pattern(1, 4 * SECTOR);
    let new = pattern(100, 4 * SECTOR);
    let mut n_torn = 0;
    for seed in 0..32 {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.index", &old);
        file.sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        file.write_all_at(&new, 0).unwrap();
        fs.crash(seed);
        let bytes = read_path(&fs, "/d/a.index").unwrap();
        assert_eq!(bytes.len(), old.len());
        let sectors: Vec<bool> = (0..4)
            .map(|sector_idx| {
                let range = sector_idx * SECTOR..(sector_idx + 1) * SECTOR;
                if bytes[range.clone()] == new[range.clone()] {
                    true
                } else {
                    assert_eq!(bytes[range.clone()], old[range], "seed {seed}");
                    false
                }
            })
            .collect();
        if sectors.contains(&true) && sectors.contains(&false) {
            n_torn += 1;
        }
    }
    assert!(n_torn > 0, "some crash tears the overwrite");
}

#[test]
fn crash_keeps_or_drops_an_unsynced_truncation() {
    let mut lens = BTreeSet::new();
    for seed in 0..32 {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", &pattern(1, 1000));
        file.sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        file.set_len(300).unwrap();
        fs.crash(seed);
        let bytes = read_path(&fs, "/d/a.log").unwrap();
        assert!(pattern(1, 1000).starts_with(&bytes));
        lens.insert(bytes.len());
    }
    assert_eq!(lens, [300, 1000].into());
}

#[test]
fn crash_is_deterministic() {
    let run = |seed| {
        let fs = sim_with_dir("/d");
        for file_idx in 0..8u8 {
            let file = create(&fs, &format!("/d/{file_idx}.log"), &pattern(file_idx, 700));
            if file_idx % 2 == 0 {
                file.sync_data().unwrap();
            }
            file.write_all_at(&pattern(file_idx, 3000), 700).unwrap();
        }
        fs.crash(seed);
        fs.list(Path::new("/d"))
            .unwrap()
            .into_iter()
            .map(|path| (path.clone(), read_path(&fs, path.to_str().unwrap())))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn unsynced_directory_changes_may_or_may_not_survive() {
    let mut outcomes = BTreeSet::new();
    for seed in 0..32 {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/new.log", b"x");
        file.sync_data().unwrap();
        fs.crash(seed);
        outcomes.insert(fs.exists(Path::new("/d/new.log")).unwrap());
    }
    assert_eq!(outcomes, [false, true].into());

    // Once its directory is synced, a file's entry survives every crash.
    for seed in 0..32 {
        let fs = sim_with_dir("/d");
        create(&fs, "/d/new.log", b"x").sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.crash(seed);
        assert_eq!(read_path(&fs, "/d/new.log").unwrap(), b"x");
    }
}

#[test]
fn a_rename_is_atomic_on_crash() {
    let mut outcomes = BTreeSet::new();
    for seed in 0..32 {
        let fs = sim_with_dir("/d");
        create(&fs, "/d/a.cleaned", b"data").sync_data().unwrap();
        create(&fs, "/d/a.log", b"old").sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.rename(Path::new("/d/a.cleaned"), Path::new("/d/a.log")).unwrap();
        fs.crash(seed);
        let names: Vec<PathBuf> = fs.list(Path::new("/d")).unwrap();
        let log = read_path(&fs, "/d/a.log").unwrap();
        match names.len() {
            2 => assert_eq!(log, b"old"),
            1 => assert_eq!(log, b"data"),
            n_names => panic!("{n_names} entries after crash"),
        }
        outcomes.insert(names.len());
    }
    assert_eq!(outcomes, [1, 2].into());
}

#[test]
fn a_chain_of_renames_leaves_exactly_one_name() {
    // Kafka's cleaner: .cleaned -> .swap -> final name, with no directory sync between. A crash
    // leaves the file under one of the three names, never under two or none.
    let mut outcomes = BTreeSet::new();
    for seed in 0..64 {
        let fs = sim_with_dir("/d");
        create(&fs, "/d/0.log.cleaned", b"data").sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.rename(Path::new("/d/0.log.cleaned"), Path::new("/d/0.log.swap")).unwrap();
        fs.rename(Path::new("/d/0.log.swap"), Path::new("/d/0.log")).unwrap();
        fs.crash(seed);
        let names = fs.list(Path::new("/d")).unwrap();
        assert_eq!(names.len(), 1, "seed {seed}: {names:?}");
        assert_eq!(read_path(&fs, names[0].to_str().unwrap()).unwrap(), b"data");
        outcomes.insert(names[0].clone());
    }
    let expected: BTreeSet<PathBuf> =
        ["/d/0.log", "/d/0.log.cleaned", "/d/0.log.swap"].iter().map(PathBuf::from).collect();
    assert_eq!(outcomes, expected);
}

#[test]
fn a_rename_across_directories_needs_both_synced() {
    for seed in 0..32 {
        let fs = sim_with_dir("/d");
        fs.create_dir_all(Path::new("/e")).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        create(&fs, "/d/a.log", b"data").sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.rename(Path::new("/d/a.log"), Path::new("/e/a.log")).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.sync_dir(Path::new("/e")).unwrap();
        fs.crash(seed);
        assert!(!fs.exists(Path::new("/d/a.log")).unwrap());
        assert_eq!(read_path(&fs, "/e/a.log").unwrap(), b"data");
    }
}

#[test]
fn an_unsynced_directory_may_vanish_with_its_files() {
    let mut outcomes = BTreeSet::new();
    for seed in 0..32 {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        create(&fs, "/d/a.log", b"data").sync_data().unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        fs.crash(seed);
        let exists = fs.exists(Path::new("/d")).unwrap();
        if exists {
            assert_eq!(read_path(&fs, "/d/a.log").unwrap(), b"data");
        }
        outcomes.insert(exists);
    }
    assert_eq!(outcomes, [false, true].into());
}

#[test]
fn handles_from_before_a_crash_are_stale() {
    let fs = sim_with_dir("/d");
    let file = create(&fs, "/d/a.log", b"x");
    fs.crash(0);
    check_raw_os_error(file.len(), ESTALE);
    check_raw_os_error(file.write_all_at(b"y", 0), ESTALE);
}

#[test]
fn handles_follow_renames_and_outlive_removal() {
    let fs = sim_with_dir("/d");
    let file = create(&fs, "/d/a.log", b"abc");
    fs.rename(Path::new("/d/a.log"), Path::new("/d/b.log")).unwrap();
    file.write_all_at(b"d", 3).unwrap();
    assert_eq!(read_path(&fs, "/d/b.log").unwrap(), b"abcd");
    fs.remove(Path::new("/d/b.log")).unwrap();
    assert_eq!(read_all(file.as_ref()).unwrap(), b"abcd");
    assert!(fs.list(Path::new("/d")).unwrap().is_empty());
}

#[test]
fn namespace_errors_match_posix() {
    let fs = sim_with_dir("/d");
    create(&fs, "/d/a.log", b"x");
    check_raw_os_error(fs.open(Path::new("/d/missing"), OpenMode::Read), ENOENT);
    check_raw_os_error(fs.open(Path::new("/d/missing"), OpenMode::ReadWrite), ENOENT);
    check_raw_os_error(fs.open(Path::new("/d/a.log"), OpenMode::CreateNew), EEXIST);
    check_raw_os_error(fs.open(Path::new("/nope/a.log"), OpenMode::CreateOrOpen), ENOENT);
    check_raw_os_error(fs.open(Path::new("/d"), OpenMode::ReadWrite), EISDIR);
    check_raw_os_error(fs.open(Path::new("/d/a.log/x"), OpenMode::Read), ENOTDIR);
    check_raw_os_error(fs.remove(Path::new("/d")), EISDIR);
    check_raw_os_error(fs.remove(Path::new("/d/missing")), ENOENT);
    check_raw_os_error(fs.remove_dir(Path::new("/d")), ENOTEMPTY);
    check_raw_os_error(fs.remove_dir(Path::new("/d/a.log")), ENOTDIR);
    check_raw_os_error(fs.create_dir_all(Path::new("/d/a.log")), EEXIST);
    check_raw_os_error(fs.create_dir_all(Path::new("/d/a.log/x")), ENOTDIR);
    check_raw_os_error(fs.rename(Path::new("/d"), Path::new("/d/x")), EINVAL);
    check_raw_os_error(fs.rename(Path::new("/d/missing"), Path::new("/d/x")), ENOENT);
    check_raw_os_error(fs.list(Path::new("/d/a.log")), ENOTDIR);
    check_raw_os_error(fs.sync_dir(Path::new("/missing")), ENOENT);
    check_raw_os_error(fs.open(Path::new("/d/../a"), OpenMode::Read), EINVAL);

    let read_only = fs.open(Path::new("/d/a.log"), OpenMode::Read).unwrap();
    check_raw_os_error(read_only.write_all_at(b"y", 0), EBADF);
    read_only.write_all_at(b"", 0).unwrap();
    read_only.read_exact_at(&mut [], 5).unwrap();
    check_raw_os_error(read_only.set_len(0), EINVAL);
    let mut buf = [0; 2];
    let error = read_only.read_exact_at(&mut buf, 0).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);

    fs.create_dir_all(Path::new("/d/sub/deeper")).unwrap();
    fs.remove_dir(Path::new("/d/sub/deeper")).unwrap();
    fs.rename(Path::new("/d/sub"), Path::new("/d/renamed")).unwrap();
    assert_eq!(
        fs.list(Path::new("/d")).unwrap(),
        [PathBuf::from("/d/a.log"), PathBuf::from("/d/renamed")]
    );
    assert!(!fs.exists(Path::new("/d/missing/x")).unwrap());
    check_raw_os_error(fs.exists(Path::new("/d/a.log/x")), ENOTDIR);
}

#[test]
fn every_method_is_one_counted_operation() {
    let fs = sim_with_dir("/d");
    let start = fs.op_count();
    let file = fs.open(Path::new("/d/a.log"), OpenMode::CreateNew).unwrap();
    file.write_all_at(b"x", 0).unwrap();
    file.read_exact_at(&mut [0], 0).unwrap();
    file.len().unwrap();
    file.set_len(2).unwrap();
    file.sync_data().unwrap();
    file.modified_ms().unwrap();
    file.set_modified_ms(5).unwrap();
    fs.rename(Path::new("/d/a.log"), Path::new("/d/b.log")).unwrap();
    fs.list(Path::new("/d")).unwrap();
    fs.create_dir_all(Path::new("/d/sub")).unwrap();
    fs.remove_dir(Path::new("/d/sub")).unwrap();
    fs.exists(Path::new("/d/b.log")).unwrap();
    fs.sync_dir(Path::new("/d")).unwrap();
    fs.remove(Path::new("/d/b.log")).unwrap();
    assert!(fs.remove(Path::new("/d/b.log")).is_err());
    drop(file);
    assert_eq!(fs.op_count() - start, 16);
}

#[test]
fn fail_nth_fails_exactly_the_nth_operation() {
    for n in 1..=6 {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"abc");
        fs.set_fault_plan(FaultPlan::FailNth { n, kind: FaultKind::Eio });
        let results = [
            file.len().map(drop),
            file.write_all_at(b"d", 3),
            file.sync_data(),
            fs.sync_dir(Path::new("/d")),
            file.set_len(10),
            fs.list(Path::new("/d")).map(drop),
            file.len().map(drop),
        ];
        for (op_idx, result) in results.iter().enumerate() {
            let op_no = op_idx as u64 + 1;
            match result {
                Err(error) => {
                    assert_eq!(op_no, n);
                    assert_eq!(error.raw_os_error(), Some(EIO));
                }
                Ok(()) => assert_ne!(op_no, n),
            }
        }
    }
}

#[test]
fn a_failed_write_changes_nothing() {
    let fs = sim_with_dir("/d");
    let file = create(&fs, "/d/a.log", b"abc");
    fs.set_now_ms(9);
    fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
    check_raw_os_error(file.write_all_at(b"xyz", 1), EIO);
    assert_eq!(read_all(file.as_ref()).unwrap(), b"abc");
    assert_eq!(file.modified_ms().unwrap(), 0);
}

#[test]
fn fail_nth_enospc_waits_for_a_write() {
    let fs = sim_with_dir("/d");
    let file = create(&fs, "/d/a.log", b"abc");
    fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Enospc });
    file.len().unwrap();
    file.sync_data().unwrap();
    file.set_len(1).unwrap();
    check_raw_os_error(file.set_len(10), ENOSPC);
    file.set_len(10).unwrap();
    file.write_all_at(b"x", 0).unwrap();
}

#[test]
fn short_write_writes_only_a_prefix() {
    let fs = sim_with_dir("/d");
    let file = create(&fs, "/d/a.log", b"");
    fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::ShortWrite });
    file.sync_data().unwrap();
    check_raw_os_error(file.write_all_at(b"0123456789", 0), EIO);
    assert_eq!(read_all(file.as_ref()).unwrap(), b"01234");
    file.write_all_at(b"56789", 5).unwrap();
    assert_eq!(read_all(file.as_ref()).unwrap(), b"0123456789");

    fs.set_fault_plan(FaultPlan::Probability {
        per_million: 1_000_000,
        seed: 3,
        kind: FaultKind::ShortWrite,
    });
    for _ in 0..20 {
        check_raw_os_error(file.write_all_at(b"abcdefghij", 10), EIO);
        let len = file.len().unwrap();
        assert!((10..20).contains(&len), "a strict prefix: {len}");
        assert!(b"0123456789abcdefghij".starts_with(&read_all(file.as_ref()).unwrap()));
        file.set_len(10).unwrap();
    }
}

#[test]
fn probability_plan_is_seeded() {
    let pattern_of = |seed| {
        let fs = sim_with_dir("/d");
        let file = create(&fs, "/d/a.log", b"abc");
        fs.set_fault_plan(FaultPlan::Probability {
            per_million: 250_000,
            seed,
            kind: FaultKind::Eio,
        });
        (0..400).map(|_| file.len().is_err()).collect::<Vec<bool>>()
    };
    let failures = pattern_of(1);
    assert_eq!(failures, pattern_of(1));
    assert_ne!(failures, pattern_of(2));
    let n_failures = failures.iter().filter(|failed| **failed).count();
    assert!((60..140).contains(&n_failures), "{n_failures} of 400 at 25%");

    let fs = sim_with_dir("/d");
    let file = create(&fs, "/d/a.log", b"abc");
    fs.set_fault_plan(FaultPlan::Probability { per_million: 0, seed: 1, kind: FaultKind::Eio });
    assert!((0..100).all(|_| file.len().is_ok()));
}

#[test]
fn capacity_limits_growth_with_enospc() {
    let fs = sim_with_dir("/d");
    fs.set_capacity_bytes(Some(1000));
    let a = create(&fs, "/d/a.log", &[1; 600]);
    let b = create(&fs, "/d/b.log", &[2; 300]);
    assert_eq!(fs.used_bytes(), 900);

    let error = b.write_all_at(&[3; 200], 300).unwrap_err();
    assert_eq!(error.raw_os_error(), Some(ENOSPC));
    assert_eq!(error.kind(), io::ErrorKind::StorageFull);
    assert_eq!(b.len().unwrap(), 300, "nothing written");
    check_raw_os_error(b.set_len(500), ENOSPC);
    b.write_all_at(&[3; 200], 100).unwrap();
    b.write_all_at(&[3; 100], 300).unwrap();
    assert_eq!(fs.used_bytes(), 1000);

    // Space comes back when the last link and handle of a file are gone.
    fs.remove(Path::new("/d/a.log")).unwrap();
    assert_eq!(fs.used_bytes(), 1000, "a is still open");
    drop(a);
    assert_eq!(fs.used_bytes(), 400);
    b.set_len(1000).unwrap();
}

#[test]
fn modified_times_come_from_the_manual_clock() {
    let fs = sim_with_dir("/d");
    fs.set_now_ms(1_000);
    let file = create(&fs, "/d/a.log", b"");
    assert_eq!(file.modified_ms().unwrap(), 1_000);
    fs.set_now_ms(2_000);
    file.write_all_at(b"x", 0).unwrap();
    assert_eq!(file.modified_ms().unwrap(), 2_000);
    file.sync_data().unwrap();
    fs.sync_dir(Path::new("/d")).unwrap();
    file.set_modified_ms(5).unwrap();
    assert_eq!(file.modified_ms().unwrap(), 5);
    fs.crash(0);
    let file = fs.open(Path::new("/d/a.log"), OpenMode::Read).unwrap();
    assert_eq!(file.modified_ms().unwrap(), 2_000, "durable as of the last sync_data");
}

/// One step of a random history over three files in `/d`, for the crash property.
#[derive(Debug, Clone)]
enum CrashOp {
    Create(usize),
    Append(usize, usize),
    SyncData(usize),
    SyncDir,
    Remove(usize),
}

fn crash_op() -> impl Strategy<Value = CrashOp> {
    prop_oneof![
        1 => (0..3usize).prop_map(CrashOp::Create),
        4 => (0..3usize, 0..1500usize)
            .prop_map(|(file_idx, len)| CrashOp::Append(file_idx, len)),
        2 => (0..3usize).prop_map(CrashOp::SyncData),
        1 => Just(CrashOp::SyncDir),
        1 => (0..3usize).prop_map(CrashOp::Remove),
    ]
}

/// What the test knows about one file name.
#[derive(Debug, Default)]
struct ModelFile {
    handle: Option<Box<dyn File>>,
    created_op_idx: Option<usize>,
    live_exists: bool,
    durable_exists: bool,
    /// Created or removed since the last directory sync.
    entry_changed: bool,
    live: Vec<u8>,
    durable: Vec<u8>,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn crash_keeps_synced_data_and_a_sector_aligned_prefix(
        ops in proptest::collection::vec(crash_op(), 0..40),
        seed in any::<u64>(),
    ) {
        let fs = sim_with_dir("/d");
        let mut files: Vec<ModelFile> = (0..3).map(|_| ModelFile::default()).collect();
        let path = |file_idx: usize| PathBuf::from(format!("/d/{file_idx}.log"));
        for (op_idx, op) in ops.iter().enumerate() {
            match *op {
                // Each name is created at most once, so its contents have one history.
                CrashOp::Create(file_idx) if files[file_idx].created_op_idx.is_none() => {
                    let model = &mut files[file_idx];
                    let handle = fs.open(&path(file_idx), OpenMode::CreateNew).unwrap();
                    model.handle = Some(handle);
                    model.created_op_idx = Some(op_idx);
                    model.live_exists = true;
                    model.entry_changed = true;
                }
                CrashOp::Append(file_idx, len) if files[file_idx].live_exists => {
                    let model = &mut files[file_idx];
                    let bytes = pattern(op_idx as u8, len);
                    let handle = model.handle.as_ref().unwrap();
                    handle.write_all_at(&bytes, model.live.len() as u64).unwrap();
                    model.live.extend(bytes);
                }
                CrashOp::SyncData(file_idx) if files[file_idx].live_exists => {
                    let model = &mut files[file_idx];
                    model.handle.as_ref().unwrap().sync_data().unwrap();
                    model.durable.clone_from(&model.live);
                }
                CrashOp::SyncDir => {
                    fs.sync_dir(Path::new("/d")).unwrap();
                    for model in &mut files {
                        model.durable_exists = model.live_exists;
                        model.entry_changed = false;
                    }
                }
                CrashOp::Remove(file_idx) if files[file_idx].live_exists => {
                    fs.remove(&path(file_idx)).unwrap();
                    let model = &mut files[file_idx];
                    model.handle = None;
                    model.live_exists = false;
                    model.entry_changed = true;
                }
                _ => {}
            }
        }
        fs.crash(seed);
        for (file_idx, model) in files.iter().enumerate() {
            let exists = fs.exists(&path(file_idx)).unwrap();
            if !model.entry_changed {
                prop_assert_eq!(exists, model.durable_exists, "file {}", file_idx);
            }
            if !exists {
                continue;
            }
            let file = fs.open(&path(file_idx), OpenMode::Read).unwrap();
            let bytes = read_all(file.as_ref()).unwrap();
            prop_assert!(bytes.starts_with(&model.durable), "file {}: lost", file_idx);
            prop_assert!(model.live.starts_with(&bytes), "file {}: not its writes", file_idx);
            let len = bytes.len();
            prop_assert!(
                len == model.durable.len()
                    || len == model.live.len()
                    || len.is_multiple_of(SECTOR),
                "file {}: length {} is not sector-aligned",
                file_idx,
                len
            );
        }
    }
}

/// One step of a random history, run on StdFs and SimFs side by side.
#[derive(Debug, Clone)]
enum EquivalenceOp {
    Open { slot: usize, name: usize, mode: OpenMode },
    Write { slot: usize, position: u64, len: usize },
    SetLen { slot: usize, len: u64 },
    Read { slot: usize, position: u64, len: usize },
    SyncData { slot: usize },
    Rename { from: usize, to: usize },
    Remove { name: usize },
}

fn equivalence_op() -> impl Strategy<Value = EquivalenceOp> {
    let mode = prop_oneof![
        Just(OpenMode::Read),
        Just(OpenMode::ReadWrite),
        Just(OpenMode::CreateNew),
        Just(OpenMode::CreateOrOpen),
    ];
    let (slot, name) = (0..3usize, 0..3usize);
    prop_oneof![
        2 => (slot.clone(), name.clone(), mode)
            .prop_map(|(slot, name, mode)| EquivalenceOp::Open { slot, name, mode }),
        4 => (slot.clone(), 0..3000u64, 0..700usize)
            .prop_map(|(slot, position, len)| EquivalenceOp::Write { slot, position, len }),
        1 => (slot.clone(), 0..4000u64)
            .prop_map(|(slot, len)| EquivalenceOp::SetLen { slot, len }),
        1 => (slot.clone(), 0..3000u64, 0..700usize)
            .prop_map(|(slot, position, len)| EquivalenceOp::Read { slot, position, len }),
        1 => slot.clone().prop_map(|slot| EquivalenceOp::SyncData { slot }),
        1 => (name.clone(), name.clone())
            .prop_map(|(from, to)| EquivalenceOp::Rename { from, to }),
        1 => name.prop_map(|name| EquivalenceOp::Remove { name }),
    ]
}

/// The same call's outcome on both file systems: equal values, or errors of the same kind.
fn check_same<T: PartialEq + fmt::Debug>(
    op: &EquivalenceOp,
    std_result: io::Result<T>,
    sim_result: io::Result<T>,
) -> Result<(), TestCaseError> {
    match (std_result, sim_result) {
        (Ok(std_value), Ok(sim_value)) => prop_assert_eq!(std_value, sim_value, "{:?}", op),
        (Err(std_error), Err(sim_error)) => {
            prop_assert_eq!(std_error.kind(), sim_error.kind(), "{:?}", op);
        }
        (std_result, sim_result) => {
            prop_assert!(false, "{:?}: std {:?}, sim {:?}", op, std_result, sim_result);
        }
    }
    Ok(())
}

/// Runs a handle operation on the same slot of both file systems, if both have it open.
fn check_file_op(
    op: &EquivalenceOp,
    op_idx: usize,
    std_slots: &[Option<Box<dyn File>>],
    sim_slots: &[Option<Box<dyn File>>],
) -> Result<(), TestCaseError> {
    let slot = match *op {
        EquivalenceOp::Open { slot, .. }
        | EquivalenceOp::Write { slot, .. }
        | EquivalenceOp::SetLen { slot, .. }
        | EquivalenceOp::Read { slot, .. }
        | EquivalenceOp::SyncData { slot } => slot,
        EquivalenceOp::Rename { .. } | EquivalenceOp::Remove { .. } => return Ok(()),
    };
    let (Some(std_file), Some(sim_file)) = (&std_slots[slot], &sim_slots[slot]) else {
        return Ok(());
    };
    match *op {
        EquivalenceOp::Write { position, len, .. } => {
            let bytes = pattern(op_idx as u8, len);
            let std_result = std_file.write_all_at(&bytes, position);
            check_same(op, std_result, sim_file.write_all_at(&bytes, position))?;
        }
        EquivalenceOp::SetLen { len, .. } => {
            check_same(op, std_file.set_len(len), sim_file.set_len(len))?;
        }
        EquivalenceOp::Read { position, len, .. } => {
            let (mut std_buf, mut sim_buf) = (vec![0; len], vec![0; len]);
            let std_result = std_file.read_exact_at(&mut std_buf, position).map(|()| std_buf);
            let sim_result = sim_file.read_exact_at(&mut sim_buf, position).map(|()| sim_buf);
            check_same(op, std_result, sim_result)?;
        }
        EquivalenceOp::SyncData { .. } => {
            check_same(op, std_file.sync_data(), sim_file.sync_data())?;
        }
        EquivalenceOp::Open { .. }
        | EquivalenceOp::Rename { .. }
        | EquivalenceOp::Remove { .. } => {}
    }
    check_same(op, std_file.len(), sim_file.len())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn sim_fs_matches_std_fs(ops in proptest::collection::vec(equivalence_op(), 1..40)) {
        let tempdir = tempfile::tempdir().unwrap();
        let (std_fs, sim_fs) = (StdFs, sim_with_dir("/d"));
        let std_root = tempdir.path().to_path_buf();
        let sim_root = PathBuf::from("/d");
        let std_path = |name_idx: usize| std_root.join(format!("{name_idx}.log"));
        let sim_path = |name_idx: usize| sim_root.join(format!("{name_idx}.log"));
        let mut std_slots: Vec<Option<Box<dyn File>>> = vec![None, None, None];
        let mut sim_slots: Vec<Option<Box<dyn File>>> = vec![None, None, None];
        for (op_idx, op) in ops.iter().enumerate() {
            if let EquivalenceOp::Open { slot, name, mode } = *op {
                let std_file = std_fs.open(&std_path(name), mode);
                let sim_file = sim_fs.open(&sim_path(name), mode);
                match (std_file, sim_file) {
                    (Ok(std_file), Ok(sim_file)) => {
                        std_slots[slot] = Some(std_file);
                        sim_slots[slot] = Some(sim_file);
                    }
                    (Err(std_error), Err(sim_error)) => {
                        prop_assert_eq!(std_error.kind(), sim_error.kind(), "{:?}", op);
                    }
                    (std_file, sim_file) => {
                        prop_assert!(false, "{:?}: std {:?}, sim {:?}", op, std_file, sim_file);
                    }
                }
                continue;
            }
            match *op {
                EquivalenceOp::Rename { from, to } => {
                    let std_result = std_fs.rename(&std_path(from), &std_path(to));
                    let sim_result = sim_fs.rename(&sim_path(from), &sim_path(to));
                    check_same(op, std_result, sim_result)?;
                }
                EquivalenceOp::Remove { name } => {
                    let std_result = std_fs.remove(&std_path(name));
                    let sim_result = sim_fs.remove(&sim_path(name));
                    check_same(op, std_result, sim_result)?;
                }
                EquivalenceOp::Open { .. }
                | EquivalenceOp::Write { .. }
                | EquivalenceOp::SetLen { .. }
                | EquivalenceOp::Read { .. }
                | EquivalenceOp::SyncData { .. } => {
                    check_file_op(op, op_idx, &std_slots, &sim_slots)?;
                }
            }
        }
        let file_names = |fs: &dyn Fs, root: &Path| -> Vec<(OsString, Vec<u8>)> {
            fs.list(root)
                .unwrap()
                .into_iter()
                .map(|path| {
                    let file = fs.open(&path, OpenMode::Read).unwrap();
                    (path.file_name().unwrap().to_os_string(), read_all(file.as_ref()).unwrap())
                })
                .collect()
        };
        prop_assert_eq!(file_names(&std_fs, &std_root), file_names(&sim_fs, &sim_root));
    }
}
