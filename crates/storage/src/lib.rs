//! The partition log on disk: segments, indexes and recovery, with every file-system call made
//! through the [`io::Fs`] trait.
//!
//! Storage is synchronous. Code in this crate never touches the standard file system module directly: it is handed an
//! `Arc<dyn io::Fs>`, which is [`io::StdFs`] in production and `io::SimFs` (feature `sim`, or in
//! tests) under simulation, where crashes and I/O faults can be injected deterministically.
//!
//! - [`io`]: the `Fs` and `File` traits, `StdFs`, and `SimFs` for simulation.
//! - [`index`]: the sparse offset index and time index of a segment.
//! - [`segment`]: one segment, Kafka's `LogSegment`: append, read, lookups, truncation, recovery.

pub mod cleaner;
pub mod config;
pub mod dirs;
pub mod error;
pub mod index;
pub mod io;
pub mod log;
pub mod manager;
pub mod segment;
pub mod splitmix;
#[cfg(any(test, feature = "sim"))]
pub mod testing;

#[cfg(test)]
mod damage_tests;
#[cfg(test)]
mod log_dirs_tests;
#[cfg(test)]
mod manager_sim_tests;
#[cfg(test)]
mod manager_tests;

pub use error::{Error, Result};
