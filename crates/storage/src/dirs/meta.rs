//! A log directory's `meta.properties` and clean-shutdown marker, and a partition directory's
//! `partition.metadata` (spec §3.6, §3.7), each written atomically through `Fs`, with topic and
//! directory ids in Kafka's `Uuid` text form (`seglog_format::java`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{ConfigError, parse_properties, write_properties};
use crate::dirs::checkpoint::{read_text_if_exists, write_atomically, write_replacing};
use crate::error::{Error, Result};
use crate::io::Fs;

/// The identity file of a log directory.
pub const META_PROPERTIES_FILE: &str = "meta.properties";
/// The topic-id file of a partition directory.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";
/// The value of a `partition.metadata` line `<key>:<whitespace><value>` (Kafka splits each line
/// on `":\s+"` and wants exactly two parts), or `None` if the line is not of that form.
fn metadata_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(key)?.strip_prefix(':')?;
    let value = rest.trim_start();
    let separated = value.len() < rest.len();
    (separated && !value.is_empty() && !value.contains(':')).then_some(value)
}

/// The clean-shutdown marker of a log directory.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";

/// The largest `meta.properties`, `partition.metadata` or marker file read.
pub const METADATA_FILE_BYTES_MAX: u64 = 1 << 20;

// Kafka's `Uuid` text form is written once, in format.
pub use seglog_format::java::{UUID_CHARS, uuid_from_base64, uuid_to_base64};

/// Whether `uuid` is Kafka's `Uuid.ZERO_UUID`, which is never a valid topic id.
pub fn is_zero_uuid(uuid: &[u8; 16]) -> bool {
    uuid.iter().all(|byte| *byte == 0)
}

/// The identity of a log directory, from its `meta.properties` (Kafka's `MetaProperties`).
///
/// Version 0 (ZooKeeper mode) stores the node id as `broker.id`, optional; version 1 (KRaft)
/// stores it as `node.id` and requires it and `cluster.id`. Keys other than the four below are
/// kept in `other` and written back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetaProperties {
    /// `version`: 0 or 1 (0 when the key is missing, as in Kafka).
    pub version: u32,
    /// `node.id` (v1) or `broker.id` (v0).
    pub node_id: Option<i32>,
    /// `cluster.id`.
    pub cluster_id: Option<String>,
    /// `directory.id`: a Kafka `Uuid` in its 22-character text form.
    pub directory_id: Option<String>,
    /// Every other key, as read.
    pub other: BTreeMap<String, String>,
}

const VERSION_KEY: &str = "version";
const BROKER_ID_KEY: &str = "broker.id";
const NODE_ID_KEY: &str = "node.id";
const CLUSTER_ID_KEY: &str = "cluster.id";
const DIRECTORY_ID_KEY: &str = "directory.id";

impl MetaProperties {
    /// Parses `meta.properties` text (the Java `.properties` subset of
    /// [`parse_properties`]) and validates it. Errors are [`Error::Malformed`] with the path
    /// `meta.properties`; [`MetaProperties::read`] puts the full path in.
    pub fn parse(text: &str) -> Result<Self> {
        Self::parse_at(text, Path::new(META_PROPERTIES_FILE))
    }

    fn parse_at(text: &str, path: &Path) -> Result<Self> {
        let malformed = |line: Option<usize>, reason: String| Error::Malformed {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let mut other = parse_properties(text).map_err(|error| match error {
            ConfigError::Syntax { line, reason } => malformed(Some(line), reason),
            invalid @ ConfigError::InvalidValue { .. } => malformed(None, invalid.to_string()),
        })?;
        let version = match other.remove(VERSION_KEY) {
            None => 0,
            Some(value) => value
                .parse()
                .map_err(|_| malformed(None, format!("version {value:?} is not a number")))?,
        };
        let node_id_key = if version == 0 { BROKER_ID_KEY } else { NODE_ID_KEY };
        let node_id = other
            .remove(node_id_key)
            .map(|value| {
                value.parse::<i32>().map_err(|_| {
                    malformed(None, format!("{node_id_key} {value:?} is not a 32-bit integer"))
                })
            })
            .transpose()?;
        let meta = Self {
            version,
            node_id,
            cluster_id: other.remove(CLUSTER_ID_KEY),
            directory_id: other.remove(DIRECTORY_ID_KEY),
            other,
        };
        meta.validate().map_err(|reason| malformed(None, reason))?;
        Ok(meta)
    }

    /// Kafka's `MetaProperties.Builder.build` checks: a known version; in v1, `node.id` and
    /// `cluster.id`; a `directory.id` that is a Uuid.
    fn validate(&self) -> Result<(), String> {
        match self.version {
            0 => {}
            1 => {
                if self.cluster_id.is_none() {
                    return Err("cluster.id was not found".to_owned());
                }
                if self.node_id.is_none() {
                    return Err("node.id was not found".to_owned());
                }
            }
            version => return Err(format!("unknown meta.properties version {version}")),
        }
        if let Some(directory_id) = &self.directory_id {
            uuid_from_base64(directory_id)
                .map_err(|reason| format!("unable to read directory.id as a Uuid: {reason}"))?;
        }
        Ok(())
    }

    /// The file's text: Kafka's empty comment line (without the date line Kafka's writer adds,
    /// since storage reads no clock), then `key=value` lines sorted by key.
    pub fn to_text(&self) -> String {
        let mut properties = self.other.clone();
        properties.insert(VERSION_KEY.to_owned(), self.version.to_string());
        if let Some(node_id) = self.node_id {
            let key = if self.version == 0 { BROKER_ID_KEY } else { NODE_ID_KEY };
            properties.insert(key.to_owned(), node_id.to_string());
        }
        if let Some(cluster_id) = &self.cluster_id {
            properties.insert(CLUSTER_ID_KEY.to_owned(), cluster_id.clone());
        }
        if let Some(directory_id) = &self.directory_id {
            properties.insert(DIRECTORY_ID_KEY.to_owned(), directory_id.clone());
        }
        format!("#\n{}", write_properties(&properties))
    }

    /// The `meta.properties` of the log directory `dir`, or `None` if it has none.
    pub fn read(fs: &dyn Fs, dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(META_PROPERTIES_FILE);
        let Some(text) = read_text_if_exists(fs, &path, METADATA_FILE_BYTES_MAX)? else {
            return Ok(None);
        };
        Self::parse_at(&text, &path).map(Some)
    }

    /// Writes `meta.properties` into `dir` atomically. Invalid properties (see
    /// [`MetaProperties::parse`]) are an [`Error::InvalidArgument`], and nothing is written.
    pub fn write(&self, fs: &dyn Fs, dir: &Path) -> Result<()> {
        self.validate().map_err(|reason| {
            Error::InvalidArgument(format!("cannot write meta.properties: {reason}"))
        })?;
        write_atomically(fs, &dir.join(META_PROPERTIES_FILE), self.to_text().as_bytes())
    }
}

/// A partition's topic id, from its `partition.metadata` (Kafka's `PartitionMetadata` and
/// `PartitionMetadataFile`).
///
/// The file is exactly two lines and, as Kafka writes it, no trailing newline:
///
/// ```text
/// version: 0
/// topic_id: <22-character base64url Uuid>
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartitionMetadata {
    /// The file version: Kafka writes 0 and reads any version of at least 0.
    pub version: i32,
    /// The topic id (a Kafka `Uuid`), never all zeros.
    pub topic_id: [u8; 16],
}

impl PartitionMetadata {
    /// The version Kafka writes.
    pub const CURRENT_VERSION: i32 = 0;

    /// Metadata of the current version for `topic_id`.
    pub fn new(topic_id: [u8; 16]) -> Self {
        Self { version: Self::CURRENT_VERSION, topic_id }
    }

    /// Parses the file's text as Kafka's `PartitionMetadataReadBuffer` does: two lines (a
    /// trailing newline is tolerated), each split on `":\s+"` into its key and value; the
    /// version at least 0, the topic id a Uuid that is not all zeros. Errors are
    /// [`Error::Malformed`] with the path `partition.metadata`.
    pub fn parse(text: &str) -> Result<Self> {
        Self::parse_at(text, Path::new(PARTITION_METADATA_FILE))
    }

    fn parse_at(text: &str, path: &Path) -> Result<Self> {
        let malformed = |line: usize, reason: String| Error::Malformed {
            path: path.to_path_buf(),
            line: Some(line),
            reason,
        };
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() != 2 {
            return Err(Error::Malformed {
                path: path.to_path_buf(),
                line: None,
                reason: format!("expected 2 lines, found {}", lines.len()),
            });
        }
        let field = |line_idx: usize, key: &str| {
            let line = lines[line_idx];
            metadata_value(line, key)
                .ok_or_else(|| malformed(line_idx + 1, format!("malformed line {line:?}")))
        };
        let version_text = field(0, "version")?;
        let version: i32 = version_text
            .parse()
            .map_err(|_| malformed(1, format!("version {version_text:?} is not a number")))?;
        if version < Self::CURRENT_VERSION {
            return Err(malformed(1, format!("unrecognized version {version}")));
        }
        let topic_id_text = field(1, "topic_id")?;
        let topic_id = uuid_from_base64(topic_id_text).map_err(|reason| malformed(2, reason))?;
        if is_zero_uuid(&topic_id) {
            return Err(malformed(2, "the topic id is the zero Uuid".to_owned()));
        }
        Ok(Self { version, topic_id })
    }

    /// The file's text, byte for byte as Kafka writes it.
    pub fn to_text(&self) -> String {
        format!("version: {}\ntopic_id: {}", self.version, uuid_to_base64(&self.topic_id))
    }

    /// The `partition.metadata` of the partition directory `dir`, or `None` if it has none.
    pub fn read(fs: &dyn Fs, dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(PARTITION_METADATA_FILE);
        let Some(text) = read_text_if_exists(fs, &path, METADATA_FILE_BYTES_MAX)? else {
            return Ok(None);
        };
        Self::parse_at(&text, &path).map(Some)
    }

    /// Writes `partition.metadata` into `dir` atomically. A zero topic id or a negative
    /// version is an [`Error::InvalidArgument`], and nothing is written.
    pub fn write(&self, fs: &dyn Fs, dir: &Path) -> Result<()> {
        write_atomically(fs, &dir.join(PARTITION_METADATA_FILE), self.checked_text()?.as_bytes())
    }

    /// As [`PartitionMetadata::write`] into a partition directory being created, without the
    /// directory's fsync: the file's bytes are durable before its rename, and the caller syncs
    /// `dir` once after creating the rest of it (the first segment's load does), so a new
    /// partition costs one directory fsync, not two.
    pub fn write_before_dir_sync(&self, fs: &dyn Fs, dir: &Path) -> Result<()> {
        write_replacing(fs, &dir.join(PARTITION_METADATA_FILE), self.checked_text()?.as_bytes())
    }

    /// The file's text, or [`Error::InvalidArgument`] for a zero topic id or a negative
    /// version.
    fn checked_text(&self) -> Result<String> {
        if is_zero_uuid(&self.topic_id) || self.version < 0 {
            return Err(Error::InvalidArgument(format!(
                "cannot write partition.metadata with version {} and topic id {}",
                self.version,
                uuid_to_base64(&self.topic_id)
            )));
        }
        Ok(self.to_text())
    }
}

/// The clean-shutdown marker of a log directory, `.kafka_cleanshutdown` (Kafka's
/// `CleanShutdownFileHandler`).
///
/// Its existence at startup means every log in the directory was closed cleanly, so recovery
/// can be skipped. The broker removes it as soon as it starts (a crash while loading is then
/// unclean) and writes it at the end of a clean shutdown. Kafka 3.7+ writes
/// `{"version":0,"brokerEpoch":<n>}`; older brokers wrote an empty file, so the content is
/// optional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CleanShutdownFile;

impl CleanShutdownFile {
    /// The marker's path in the log directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(CLEAN_SHUTDOWN_FILE)
    }

    /// Whether the marker exists in `dir`.
    pub fn exists(fs: &dyn Fs, dir: &Path) -> Result<bool> {
        let path = Self::path(dir);
        fs.exists(&path).map_err(|e| Error::io("exists", path, e))
    }

    /// Writes the marker into `dir` atomically, with Kafka's JSON content.
    pub fn write(fs: &dyn Fs, dir: &Path, broker_epoch: i64) -> Result<()> {
        let text = format!("{{\"version\":0,\"brokerEpoch\":{broker_epoch}}}");
        write_atomically(fs, &Self::path(dir), text.as_bytes())
    }

    /// Removes the marker from `dir` durably (the directory is synced); a missing marker is not
    /// an error, as in Kafka's `Files.deleteIfExists`.
    pub fn remove(fs: &dyn Fs, dir: &Path) -> Result<()> {
        let path = Self::path(dir);
        match fs.remove(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(Error::io("remove", path, error)),
        }
        fs.sync_dir(dir).map_err(|e| Error::io("sync_dir", dir, e))
    }

    /// The broker epoch recorded in the marker: `None` if the marker is missing, empty (Kafka
    /// before 3.7) or does not hold a `brokerEpoch` (Kafka's handler then reads -1 as well).
    pub fn broker_epoch(fs: &dyn Fs, dir: &Path) -> Result<Option<i64>> {
        let path = Self::path(dir);
        let text = match read_text_if_exists(fs, &path, METADATA_FILE_BYTES_MAX) {
            Ok(Some(text)) => text,
            Ok(None) | Err(Error::Malformed { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        Ok(json_long_field(&text, "brokerEpoch"))
    }
}

/// The integer value of `"key"` in a flat JSON object, found leniently.
fn json_long_field(text: &str, key: &str) -> Option<i64> {
    let body = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    body.split(',').find_map(|member| {
        let (name, value) = member.split_once(':')?;
        let name = name.trim().strip_prefix('"')?.strip_suffix('"')?;
        if name == key { value.trim().parse().ok() } else { None }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{FaultKind, FaultPlan, OpenMode};
    use crate::testing::sim_with_dir;

    fn create(fs: &dyn Fs, path: &str, bytes: &[u8]) {
        let file = fs.open(Path::new(path), OpenMode::CreateOrOpen).unwrap();
        file.set_len(0).unwrap();
        file.write_all_at(bytes, 0).unwrap();
    }

    fn read_text(fs: &dyn Fs, path: &str) -> String {
        read_text_if_exists(fs, Path::new(path), u64::MAX).unwrap().unwrap()
    }

    #[test]
    fn uuid_text_round_trips_with_kafkas_examples() {
        // Kafka's UuidTest: new Uuid(0L, 1L) is "AAAAAAAAAAAAAAAAAAAAAQ", and the metadata
        // topic id; the fixtures' topic ids round trip.
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(uuid_to_base64(&one), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(uuid_from_base64("AAAAAAAAAAAAAAAAAAAAAQ").unwrap(), one);
        assert_eq!(uuid_to_base64(&[0; 16]), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(uuid_to_base64(&[0xff; 16]), "_____________________w");
        for text in ["nigi0dJNRASJVYh5eRn0Vg", "f64BRmo_QQOpNWuZOGjZrA", "t3JiWVNCRMqg-QrT4JoYkg"] {
            assert_eq!(uuid_to_base64(&uuid_from_base64(text).unwrap()), text);
        }
        let bytes: [u8; 16] = std::array::from_fn(|idx| (idx as u8).wrapping_mul(37) ^ 0x5a);
        assert_eq!(uuid_from_base64(&uuid_to_base64(&bytes)).unwrap(), bytes);
    }

    #[test]
    fn uuid_text_rejects_non_canonical_forms() {
        for text in [
            "",
            "AAAAAAAAAAAAAAAAAAAAA",
            "AAAAAAAAAAAAAAAAAAAAAQ==",
            "AAAAAAAAAAAAAAAAAAAAAR",
            "AAAAAAAAAAAAAAAAAAAA+Q",
            "AAAAAAAAAAAAAAAAAAAA/Q",
            "AAAAAAAAAAAAAAAAAAAA=Q",
        ] {
            assert!(uuid_from_base64(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn meta_properties_v0_and_v1_parse_as_kafka_writes_them() {
        let v0 = MetaProperties::parse(
            "#\n#Wed Jul 10 11:13:46 CST 2024\nbroker.id=0\ncluster.id=1PEpoQSRThK-PWVK_M7NCg\n\
             version=0\n",
        )
        .unwrap();
        assert_eq!(
            v0,
            MetaProperties {
                version: 0,
                node_id: Some(0),
                cluster_id: Some("1PEpoQSRThK-PWVK_M7NCg".into()),
                directory_id: None,
                other: BTreeMap::new(),
            }
        );
        assert_eq!(
            v0.to_text(),
            "#\nbroker.id=0\ncluster.id=1PEpoQSRThK-PWVK_M7NCg\nversion=0\n",
            "a comment line, then sorted keys"
        );
        let v1 = MetaProperties::parse(
            "#\n#Mon Jan 29 10:16:22 CET 2024\nnode.id=2\ndirectory.id=H9Ogx1e_S4WGXyUnsXAtlw\n\
             version=1\ncluster.id=cmsnF94nR4SecOYk7JtYWw\n",
        )
        .unwrap();
        assert_eq!((v1.version, v1.node_id), (1, Some(2)));
        assert_eq!(v1.directory_id.as_deref(), Some("H9Ogx1e_S4WGXyUnsXAtlw"));
        assert_eq!(MetaProperties::parse(&v1.to_text()).unwrap(), v1);

        // No version is version 0; broker.id is optional there; unknown keys are kept.
        let bare = MetaProperties::parse("some.key = kept\n! comment\n\n").unwrap();
        assert_eq!((bare.version, bare.node_id, bare.cluster_id.as_deref()), (0, None, None));
        assert_eq!(bare.other.get("some.key").map(String::as_str), Some("kept"));
        assert_eq!(bare.to_text(), "#\nsome.key=kept\nversion=0\n");
        // In v1, broker.id is just another key; in v0, node.id is.
        let v1 =
            MetaProperties::parse("version=1\nnode.id=1\nbroker.id=5\ncluster.id=c\n").unwrap();
        assert_eq!(v1.node_id, Some(1));
        assert_eq!(v1.other.get("broker.id").map(String::as_str), Some("5"));
    }

    #[test]
    fn meta_properties_validation() {
        for (text, line) in [
            ("version=1\ncluster.id=c\n", None),
            ("version=1\nnode.id=1\n", None),
            ("version=2\n", None),
            ("version=x\n", None),
            ("version=0\nbroker.id=one\n", None),
            ("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=nope\n", None),
            ("version=0\njunk line\n", Some(2)),
        ] {
            match MetaProperties::parse(text) {
                Err(Error::Malformed { path, line: found, .. }) => {
                    assert_eq!(path, Path::new("meta.properties"));
                    assert_eq!(found, line, "{text:?}");
                }
                other => panic!("{text:?} gave {other:?}"),
            }
        }
        let error = MetaProperties::parse("version=1\nnode.id=1\n").unwrap_err();
        assert_eq!(error.to_string(), "malformed meta.properties: cluster.id was not found");
        let fs = sim_with_dir("/d/t-0");
        let invalid = MetaProperties { version: 1, ..MetaProperties::default() };
        let error = invalid.write(&fs, Path::new("/d")).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error:?}");
        assert!(!fs.exists(Path::new("/d/meta.properties")).unwrap());
    }

    #[test]
    fn meta_properties_files_round_trip() {
        let fs = sim_with_dir("/d/t-0");
        assert_eq!(MetaProperties::read(&fs, Path::new("/d")).unwrap(), None);
        let meta = MetaProperties {
            version: 1,
            node_id: Some(3),
            cluster_id: Some("cmsnF94nR4SecOYk7JtYWw".into()),
            directory_id: Some("H9Ogx1e_S4WGXyUnsXAtlw".into()),
            other: BTreeMap::from([("x.y".to_owned(), "a=b".to_owned())]),
        };
        meta.write(&fs, Path::new("/d")).unwrap();
        fs.crash(7);
        assert_eq!(
            read_text(&fs, "/d/meta.properties"),
            "#\ncluster.id=cmsnF94nR4SecOYk7JtYWw\ndirectory.id=H9Ogx1e_S4WGXyUnsXAtlw\n\
             node.id=3\nversion=1\nx.y=a\\=b\n"
        );
        assert_eq!(MetaProperties::read(&fs, Path::new("/d")).unwrap(), Some(meta));
        create(&fs, "/d/meta.properties", b"version=1\n");
        match MetaProperties::read(&fs, Path::new("/d")) {
            Err(Error::Malformed { path, .. }) => {
                assert_eq!(path, Path::new("/d/meta.properties"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn partition_metadata_is_byte_for_byte_kafkas() {
        let text = "version: 0\ntopic_id: vqSmEBIuSwm33bh8npzjMw";
        let metadata = PartitionMetadata::parse(text).unwrap();
        assert_eq!(metadata.version, 0);
        assert_eq!(metadata.to_text(), text);
        assert_eq!(PartitionMetadata::new(metadata.topic_id), metadata);
        // Kafka's reader (readLine) tolerates a trailing newline and any whitespace after ':'.
        assert_eq!(PartitionMetadata::parse(&format!("{text}\n")).unwrap(), metadata);
        assert_eq!(
            PartitionMetadata::parse("version:\t0\ntopic_id:  vqSmEBIuSwm33bh8npzjMw").unwrap(),
            metadata
        );
        // A later version is read (Kafka's downgrade rule).
        assert_eq!(
            PartitionMetadata::parse("version: 1\ntopic_id: vqSmEBIuSwm33bh8npzjMw")
                .unwrap()
                .version,
            1
        );

        let fs = sim_with_dir("/d/t-0");
        let dir = Path::new("/d/t-0");
        assert_eq!(PartitionMetadata::read(&fs, dir).unwrap(), None);
        metadata.write(&fs, dir).unwrap();
        fs.crash(3);
        assert_eq!(read_text(&fs, "/d/t-0/partition.metadata"), text);
        assert_eq!(PartitionMetadata::read(&fs, dir).unwrap(), Some(metadata));
    }

    #[test]
    fn partition_metadata_rejects_what_kafka_rejects() {
        for (text, line) in [
            ("", None),
            ("version: 0", None),
            ("version: 0\ntopic_id: vqSmEBIuSwm33bh8npzjMw\nextra: 1", None),
            ("version: -1\ntopic_id: vqSmEBIuSwm33bh8npzjMw", Some(1)),
            ("version: x\ntopic_id: vqSmEBIuSwm33bh8npzjMw", Some(1)),
            ("version:0\ntopic_id: vqSmEBIuSwm33bh8npzjMw", Some(1)),
            ("version 0\ntopic_id: vqSmEBIuSwm33bh8npzjMw", Some(1)),
            ("version: 0\ntopic: vqSmEBIuSwm33bh8npzjMw", Some(2)),
            ("version: 0\ntopic_id: vqSmEBIuSwm33bh8npzjM", Some(2)),
            ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", Some(2)),
            ("version: 0\ntopic_id: a: b", Some(2)),
        ] {
            match PartitionMetadata::parse(text) {
                Err(Error::Malformed { line: found, .. }) => assert_eq!(found, line, "{text:?}"),
                other => panic!("{text:?} gave {other:?}"),
            }
        }
        let fs = sim_with_dir("/d/t-0");
        let error = PartitionMetadata::new([0; 16]).write(&fs, Path::new("/d/t-0")).unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error:?}");
    }

    #[test]
    fn clean_shutdown_marker_lifecycle() {
        let fs = sim_with_dir("/d/t-0");
        let dir = Path::new("/d");
        assert!(!CleanShutdownFile::exists(&fs, dir).unwrap());
        assert_eq!(CleanShutdownFile::broker_epoch(&fs, dir).unwrap(), None);
        CleanShutdownFile::remove(&fs, dir).unwrap();

        CleanShutdownFile::write(&fs, dir, 42).unwrap();
        fs.crash(1);
        assert!(CleanShutdownFile::exists(&fs, dir).unwrap());
        assert_eq!(read_text(&fs, "/d/.kafka_cleanshutdown"), "{\"version\":0,\"brokerEpoch\":42}");
        assert_eq!(CleanShutdownFile::broker_epoch(&fs, dir).unwrap(), Some(42));

        CleanShutdownFile::remove(&fs, dir).unwrap();
        fs.crash(2);
        assert!(!CleanShutdownFile::exists(&fs, dir).unwrap(), "removal is durable");

        // Content is optional: Kafka before 3.7 wrote an empty file.
        for content in ["", "not json", "{\"version\":0}", "{\"brokerEpoch\":\"x\"}"] {
            create(&fs, "/d/.kafka_cleanshutdown", content.as_bytes());
            assert!(CleanShutdownFile::exists(&fs, dir).unwrap());
            assert_eq!(CleanShutdownFile::broker_epoch(&fs, dir).unwrap(), None, "{content:?}");
        }
        create(&fs, "/d/.kafka_cleanshutdown", b" { \"version\" : 0 , \"brokerEpoch\" : -1 }\n");
        assert_eq!(CleanShutdownFile::broker_epoch(&fs, dir).unwrap(), Some(-1));
    }

    #[test]
    fn clean_shutdown_failures_are_io_errors() {
        let fs = sim_with_dir("/d/t-0");
        let dir = Path::new("/d");
        CleanShutdownFile::write(&fs, dir, 1).unwrap();
        fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
        match CleanShutdownFile::remove(&fs, dir) {
            Err(Error::Io { op: "remove", path, .. }) => {
                assert_eq!(path, Path::new("/d/.kafka_cleanshutdown"));
            }
            other => panic!("{other:?}"),
        }
        fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
        match CleanShutdownFile::exists(&fs, dir) {
            Err(Error::Io { op: "exists", .. }) => {}
            other => panic!("{other:?}"),
        }
    }
}
