//! schedlab's lab: the experiment layer above the simulator.
//!
//! A run is one (variant, topology, workload, seed) tuple; [`runner::run_one`] executes it and
//! returns a [`runner::RunRecord`]. Comparisons and sweeps are built from runs: the same seeds
//! for every variant (common random numbers), so differences are paired.

pub mod runner;
