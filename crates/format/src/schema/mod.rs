//! Every Kafka schema seglog reads or writes beyond the record batch: the records of the internal
//! topics and the KRaft control records, one module per schema, each with its reader and writer.
//!
//! - [`message`]: Kafka's schema-described messages in general (the JSON message schemas):
//!   field tables, a reader of any version (tagged fields included), Jackson's JSON.
//! - [`group`]: `__consumer_offsets`, typed, as the group coordinator reads and writes it;
//!   [`group_messages`]: the same schemas as tables, every record type and version.
//! - [`transaction`]: `__transaction_state` (`TransactionLogKey`/`Value`), typed and as tables.
//! - [`kraft`]: the KRaft control records `kafka-dump-log` prints.

pub mod group;
pub mod group_messages;
pub mod kraft;
pub mod message;
pub mod transaction;
