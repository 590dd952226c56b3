//! The transaction index, `.txnindex` (Kafka's `TransactionIndex`): the aborted transactions whose
//! ABORT marker lies in a segment, as fixed 34-byte entries with no header and no preallocation.
//! The file is created only when the first entry is appended.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::AbortedTxn;
use seglog_format::index::ABORTED_TXN_BYTES;

use crate::error::{Error, Result};
use crate::io::{File, Fs, OpenMode, read_all};

/// Aborted transactions overlapping a fetch, and whether the search may stop at this segment
/// (Kafka's `TxnIndexSearchResult`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnIndexSearchResult {
    /// The overlapping aborted transactions, in index order.
    pub aborted: Vec<AbortedTxn>,
    /// True once an entry's last stable offset reached the upper bound: later segments cannot
    /// hold transactions that overlap the fetch.
    pub is_complete: bool,
}

/// A segment's transaction index (Kafka's `TransactionIndex`).
#[derive(Debug)]
pub struct TransactionIndex {
    fs: Arc<dyn Fs>,
    path: PathBuf,
    start_offset: i64,
    entries: Vec<AbortedTxn>,
    file: Option<Arc<dyn File>>,
}

impl TransactionIndex {
    /// Opens the index at `path` if the file exists (a trailing partial entry is ignored), or
    /// an empty index whose file will be created on the first append.
    pub fn open(fs: Arc<dyn Fs>, path: &Path, start_offset: i64) -> Result<Self> {
        let exists = fs.exists(path).map_err(|e| Error::io("stat txn index", path, e))?;
        let (file, entries) = if exists {
            let file = fs
                .open(path, OpenMode::ReadWrite)
                .map_err(|e| Error::io("open txn index", path, e))?;
            let bytes =
                read_all(file.as_ref()).map_err(|e| Error::io("read txn index", path, e))?;
            let mut entries = Vec::with_capacity(bytes.len() / ABORTED_TXN_BYTES);
            for (entry_idx, chunk) in bytes.chunks_exact(ABORTED_TXN_BYTES).enumerate() {
                let chunk = <&[u8; ABORTED_TXN_BYTES]>::try_from(chunk).map_err(|_| {
                    Error::CorruptIndex {
                        path: path.to_owned(),
                        reason: format!("entry {entry_idx} is short"),
                    }
                })?;
                let entry = AbortedTxn::decode(chunk).map_err(|error| Error::CorruptIndex {
                    path: path.to_owned(),
                    reason: format!("entry {entry_idx}: {error}"),
                })?;
                entries.push(entry);
            }
            (Some(file), entries)
        } else {
            (None, Vec::new())
        };
        Ok(Self { fs, path: path.to_owned(), start_offset, entries, file: file.map(Arc::from) })
    }

    /// The entries.
    pub fn all_aborted_txns(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends an aborted transaction; its last offset must exceed the previous entry's.
    pub fn append(&mut self, txn: AbortedTxn) -> Result<()> {
        if let Some(last) = self.entries.last()
            && txn.last_offset <= last.last_offset
        {
            return Err(Error::InvalidArgument(format!(
                "the last offset of appended log entry must increase sequentially, but {} is not greater than current last offset {} of index {}",
                txn.last_offset,
                last.last_offset,
                self.path.display()
            )));
        }
        let position = (self.entries.len() * ABORTED_TXN_BYTES) as u64;
        let file = match self.file.take() {
            Some(file) => file,
            None => Arc::from(
                self.fs
                    .open(&self.path, OpenMode::CreateOrOpen)
                    .map_err(|e| Error::io("create txn index", &self.path, e))?,
            ),
        };
        let written = file.write_all_at(&txn.encode(), position);
        self.file = Some(file);
        written.map_err(|e| Error::io("append txn index", &self.path, e))?;
        self.entries.push(txn);
        Ok(())
    }

    /// The file handle, once the file exists.
    pub fn handle(&self) -> Option<Arc<dyn File>> {
        self.file.clone()
    }

    /// Fsyncs the file, if there is one.
    pub fn flush(&self) -> Result<()> {
        match &self.file {
            Some(file) => file.sync_data().map_err(|e| Error::io("fsync txn index", &self.path, e)),
            None => Ok(()),
        }
    }

    /// The aborted transactions with `last_offset >= fetch_offset` and
    /// `first_offset < upper_bound_offset` (Kafka's `collectAbortedTxns`).
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> TxnIndexSearchResult {
        let mut result = TxnIndexSearchResult::default();
        for txn in &self.entries {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound_offset {
                result.aborted.push(*txn);
            }
            if txn.last_stable_offset >= upper_bound_offset {
                result.is_complete = true;
                break;
            }
        }
        result
    }

    /// Removes every entry with `last_offset >= offset` (Kafka's `truncateTo`).
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        let keep = self
            .entries
            .iter()
            .position(|txn| txn.last_offset >= offset)
            .unwrap_or(self.entries.len());
        if keep == self.entries.len() {
            return Ok(());
        }
        if let Some(file) = &self.file {
            file.set_len((keep * ABORTED_TXN_BYTES) as u64)
                .map_err(|e| Error::io("truncate txn index", &self.path, e))?;
        }
        self.entries.truncate(keep);
        Ok(())
    }

    /// Removes every entry (Kafka's `reset`).
    pub fn reset(&mut self) -> Result<()> {
        self.truncate_to(i64::MIN)
    }

    /// Kafka's `sanityCheck`: no entry may end before the segment starts.
    pub fn sanity_check(&self) -> Result<()> {
        match self.entries.iter().find(|txn| txn.last_offset < self.start_offset) {
            Some(txn) => Err(Error::CorruptIndex {
                path: self.path.clone(),
                reason: format!(
                    "last offset of aborted transaction {txn:?} is less than the start offset {}",
                    self.start_offset
                ),
            }),
            None => Ok(()),
        }
    }

    /// Renames the file (if it exists) and keeps using it under the new name.
    pub fn rename_to(&mut self, path: &Path) -> Result<()> {
        if self.file.is_some() {
            self.fs
                .rename(&self.path, path)
                .map_err(|e| Error::io("rename txn index", &self.path, e))?;
        }
        path.clone_into(&mut self.path);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::SimFs;

    fn index(fs: &SimFs, start_offset: i64) -> TransactionIndex {
        fs.create_dir_all(Path::new("/p")).unwrap();
        TransactionIndex::open(
            Arc::new(fs.clone()),
            Path::new("/p/00000000000000000000.txnindex"),
            start_offset,
        )
        .unwrap()
    }

    fn txn(producer_id: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn { producer_id, first_offset: first, last_offset: last, last_stable_offset: lso }
    }

    fn four() -> Vec<AbortedTxn> {
        vec![txn(0, 0, 10, 11), txn(1, 5, 15, 13), txn(2, 18, 35, 25), txn(3, 32, 50, 40)]
    }

    /// `testPositionSetCorrectlyWhenOpened`, and the file is created only when needed.
    #[test]
    fn reopening_appends_after_existing_entries() {
        let fs = SimFs::new();
        let mut index = index(&fs, 0);
        assert!(!fs.exists(index.path()).unwrap(), "created lazily");
        for entry in four() {
            index.append(entry).unwrap();
        }
        let mut reopened = self::index(&fs, 0);
        assert_eq!(reopened.all_aborted_txns(), four().as_slice());
        reopened.append(txn(4, 60, 70, 65)).unwrap();
        assert_eq!(self::index(&fs, 0).all_aborted_txns().len(), 5);
    }

    /// `testSanityCheck`.
    #[test]
    fn sanity_check() {
        let fs = SimFs::new();
        let mut index = index(&fs, 0);
        index.append(txn(0, 0, 10, 11)).unwrap();
        index.append(txn(1, 5, 15, 13)).unwrap();
        index.sanity_check().unwrap();
        let reopened = TransactionIndex::open(Arc::new(fs.clone()), index.path(), 20).unwrap();
        assert!(reopened.sanity_check().is_err());
    }

    /// `testLastOffsetMustIncrease` and `testLastOffsetCannotDecrease`.
    #[test]
    fn last_offset_must_increase() {
        let fs = SimFs::new();
        let mut index = index(&fs, 0);
        index.append(txn(1, 5, 15, 13)).unwrap();
        assert!(index.append(txn(0, 0, 15, 11)).is_err());
        assert!(index.append(txn(0, 0, 14, 11)).is_err());
    }

    /// `testCollectAbortedTransactions`.
    #[test]
    fn collect_aborted_transactions() {
        let fs = SimFs::new();
        let mut index = index(&fs, 0);
        for entry in four() {
            index.append(entry).unwrap();
        }
        assert_eq!(
            index.collect_aborted_txns(0, 100),
            TxnIndexSearchResult { aborted: four(), is_complete: false }
        );
        assert_eq!(
            index.collect_aborted_txns(0, 32),
            TxnIndexSearchResult { aborted: four()[..3].to_vec(), is_complete: true }
        );
        assert_eq!(
            index.collect_aborted_txns(20, 41),
            TxnIndexSearchResult { aborted: four()[2..].to_vec(), is_complete: false }
        );
    }

    /// `testTruncate` and reset.
    #[test]
    fn truncate() {
        let fs = SimFs::new();
        let mut index = index(&fs, 0);
        for entry in four() {
            index.append(entry).unwrap();
        }
        index.truncate_to(51).unwrap();
        assert_eq!(index.all_aborted_txns().len(), 4);
        index.truncate_to(50).unwrap();
        assert_eq!(index.all_aborted_txns(), &four()[..3]);
        assert_eq!(
            self::index(&fs, 0).all_aborted_txns(),
            &four()[..3],
            "the file is truncated too"
        );
        index.reset().unwrap();
        assert!(index.all_aborted_txns().is_empty());
    }

    /// A partial trailing entry is ignored; a later version is corruption.
    #[test]
    fn partial_entries_are_ignored_and_versions_checked() {
        let fs = SimFs::new();
        let mut index = index(&fs, 0);
        index.append(txn(0, 0, 10, 11)).unwrap();
        let file = fs.open(index.path(), OpenMode::ReadWrite).unwrap();
        file.write_all_at(&[0u8; 20], 34).unwrap();
        assert_eq!(self::index(&fs, 0).all_aborted_txns().len(), 1);
        file.write_all_at(&[1u8], 0).unwrap();
        assert!(TransactionIndex::open(Arc::new(fs.clone()), index.path(), 0).is_err());
    }

    /// `testRenameIndex`, `testFlush`.
    #[test]
    fn rename_and_flush() {
        let fs = SimFs::new();
        let mut index = index(&fs, 0);
        index.flush().unwrap();
        index.append(txn(0, 0, 10, 11)).unwrap();
        index.flush().unwrap();
        let renamed = Path::new("/p/00000000000000000000.txnindex.deleted");
        index.rename_to(renamed).unwrap();
        assert!(fs.exists(renamed).unwrap());
        index.append(txn(1, 11, 20, 21)).unwrap();
        assert_eq!(
            TransactionIndex::open(Arc::new(fs.clone()), renamed, 0)
                .unwrap()
                .all_aborted_txns()
                .len(),
            2
        );
    }
}
