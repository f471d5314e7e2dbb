//! schedlab workloads: descriptions of what simulated tasks do, compiled into the
//! [`sim::program::TaskSpec`] programs the simulator core runs.
//!
//! The core never reads files or JSON (it takes values); this crate is the edge where workload
//! text becomes those values. Today it has one front end, [`rtapp`], an importer for
//! [rt-app](https://github.com/scheduler-tools/rt-app) JSON files, the format scheduler
//! developers already use to describe synthetic workloads.
//!
//! # Importing an rt-app file
//!
//! [`rtapp::parse_rtapp`] takes the text and an origin (a file name, used in error messages);
//! [`rtapp::load_rtapp`] reads a file first. Both return an [`rtapp::RtApp`]: the simulated
//! duration from `global.duration` and one [`TaskSpec`](sim::program::TaskSpec) per thread.
//!
//! ```
//! use sim::program::Op;
//! use workload::rtapp::parse_rtapp;
//!
//! // rt-app accepts C comments, trailing commas and repeated keys; so does the importer.
//! let text = r#"{
//!     "global": { "duration": 2, "calibration": "CPU0" },
//!     "tasks": {
//!         "thread0": {
//!             "instance": 2,
//!             "loop": -1,            /* forever, until global.duration */
//!             "run": 10000,
//!             "timer": { "ref": "unique", "period": 100000 },
//!         }
//!     }
//! }"#;
//! let app = parse_rtapp(text, "example.json").unwrap();
//! assert_eq!(app.duration_ns, Some(2_000_000_000));
//! assert_eq!(app.tasks.len(), 2);
//! assert_eq!(app.tasks[1].comm, "thread0-1");
//! assert_eq!(
//!     app.tasks[0].ops,
//!     [
//!         Op::Run { ns: 10_000_000 },
//!         Op::Timer { slot: 0, period_ns: 100_000_000, absolute: false },
//!         Op::Loop { target: 0, slot: 0, count: u32::MAX },
//!         Op::Exit,
//!     ]
//! );
//! ```
//!
//! Errors are one line each and say where the problem is: `origin:line:column` and a JSON path
//! such as `tasks.thread0.phases.p1.lock`. Whatever the importer cannot reproduce faithfully
//! (mutexes, condition variables, real-time policies, …) is an error, never a silent
//! approximation; see the [`rtapp`] module docs for the supported subset.

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod bench;
pub mod kthreads;
pub mod ring;
pub mod rtapp;
