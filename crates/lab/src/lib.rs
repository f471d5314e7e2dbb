//! schedlab's lab: the experiment layer above the simulator.
//!
//! A run is one (variant, topology, workload, seed) tuple; [`runner::run_one`] executes it and
//! returns a [`runner::RunRecord`]. Comparisons and sweeps are built from runs: the same seeds
//! for every variant (common random numbers), so differences are paired.
//!
//! - [`spec`]: variant SPECs as typed (`v7.3+next-buddy-eevdf`) to full SPECs;
//! - [`plan`]: topologies × variants × workloads × seeds with run limits, from a TOML file or
//!   from `compare`'s flags; shards;
//! - [`sweep`]: running runs in parallel (rayon, results in index order) and into the store;
//! - [`store`]: the SQLite results database, one row per run, merge of shard databases;
//! - [`stats`]: medians, quantiles, paired and Welch t-tests;
//! - [`compare`]: the A/B comparison and its significance rule;
//! - [`report`]: the comparison as a terminal table, Markdown, CSV or JSON;
//! - [`explain`]: two variants' decision streams in lockstep, the first divergence and why.
//!
//! The lab touches files (plans, rt-app JSON, the database) and the wall clock (run timing);
//! nothing it computes depends on the number of threads.

pub mod compare;
pub mod explain;
pub mod fidelity;
pub mod plan;
pub mod report;
pub mod runner;
pub mod spec;
pub mod stats;
pub mod store;
pub mod sweep;
pub mod words;

/// A lab error: bad input (the message names the file, line and field, or the flag; exit code
/// 2) or an internal failure (exit code 1).
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Internal(String),
}
