//! schedlab's native mode: the benchmark workloads run for real on the host kernel, measured
//! the way the real tools measure them, with per-task scheduler counters from `/proc` and,
//! optionally, an ftrace capture of the scheduler events (workloads.md §2–§3; brief: "native").
//!
//! * [`run::run_native`] parses a benchmark command line with the simulator's own parser and
//!   runs it with real processes or threads over real pipes and unix socketpairs;
//! * [`procfs`] reads `/proc/<pid>/sched` and `/proc/<pid>/schedstat`;
//! * [`ftrace`] records `sched_*` events in a private tracefs instance;
//! * [`host`] maps the running kernel onto a simulator preset (`--kernel host`) and samples
//!   system-wide idle time and IPIs;
//! * [`tools`] drives the real tools (perf, rt-tests, lmbench, netperf, stress-ng) when they
//!   are installed, their tasks read at their exits by [`exit_trap`] (a seccomp
//!   user-notification trap on `exit`/`exit_group`);
//! * [`validate`] runs a benchmark natively and in the model and compares them;
//! * [`calibrate`] measures the host's costs and writes a `--cost-file`;
//! * [`interrupt`] undoes a run in progress (the CLI calls it from its Ctrl-C handler).
//!
//! Linux only. The only `unsafe` code is in [`sys`] (`fork`, `_exit`) and [`exit_trap`] (the
//! seccomp system call and its listener's ioctls, which neither rustix nor std wrap).

pub mod builtin;
pub mod calibrate;
pub mod cleanup;
pub mod exit_trap;
pub mod ftrace;
pub mod host;
pub mod postgres;
pub mod procfs;
pub mod run;
pub mod sys;
pub mod tools;
pub mod trace;
pub mod validate;
pub mod workers;

pub use cleanup::interrupt;
pub use host::{KernelMatch, host_kernel_preset, preset_for_release};
pub use run::{NativeError, NativeOptions, NativeRun, run_native};
