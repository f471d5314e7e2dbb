//! schedlab's simulator core: the Linux fair scheduling class (EEVDF) on simulated CPUs, in
//! deterministic virtual time.
//!
//! The core is pure: no I/O, no wall clock, no threads, no hash-order iteration. It takes
//! values ([`SimSetup`](engine::SimSetup): a kernel configuration, a topology, task programs,
//! a seed and limits) and returns values ([`SimReport`](engine::SimReport)). The same inputs
//! give the same report, bit for bit.
//!
//! ```
//! use sim::config::{Limits, SchedConfig};
//! use sim::engine::{Sim, SimSetup};
//! use sim::program::{Op, TaskSpec};
//! use sim::topology::Topology;
//!
//! // Two CPU hogs at nice 0 and nice 5 on one CPU for one simulated second.
//! let hog = |comm: &str, nice| TaskSpec {
//!     nice,
//!     ..TaskSpec::new(comm, vec![Op::Run { ns: 1_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }])
//! };
//! let setup = SimSetup {
//!     sched: SchedConfig::v7_3(),
//!     topology: Topology::smp(1),
//!     seed: 1,
//!     limits: Limits { max_events: 10_000_000, max_time_ns: 1_000_000_000 },
//!     tasks: vec![hog("a", 0), hog("b", 5)],
//!     objects: vec![],
//!     check_invariants: true,
//!     groups: Vec::new(),
//! };
//! let report = Sim::new(setup).unwrap().run().unwrap();
//! let (a, b) = (report.tasks[0].sum_exec_runtime_ns, report.tasks[1].sum_exec_runtime_ns);
//! // Weights 1024 : 335 share the CPU about 3 : 1.
//! assert!((a as f64 / b as f64 - 1024.0 / 335.0).abs() < 0.1);
//! ```

pub mod config;
pub mod cpumask;
pub mod engine;
pub mod event;
pub mod fair;
pub mod features;
pub mod ipc;
pub mod kernel;
pub mod pelt;
pub mod program;
pub mod rng;
pub mod schedstat;
pub mod select;
pub mod stats;
pub mod task;
pub mod time;
pub mod topology;
pub mod trace;
