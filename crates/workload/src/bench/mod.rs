//! Benchmark models: the scheduler benchmarks of the mailing list, parsed from their own command
//! lines and compiled into [`TaskSpec`] programs over IPC [`ObjectSpec`]s (workloads.md §2–§8).
//!
//! ```
//! use workload::bench::{parse_benchmark, Better};
//!
//! let argv: Vec<String> = ["hackbench", "-p", "-g", "4", "-f", "20", "-l", "100"].map(String::from).into();
//! let wl = parse_benchmark(&argv).unwrap();
//! assert_eq!(wl.tasks.len(), 1 + 4 * 2 * 20); // main + 160 workers
//! assert_eq!(wl.metric.name, "seconds");
//! assert_eq!(wl.metric.better, Better::Lower);
//! assert_eq!(wl.duration_ns, None); // hackbench ends by itself
//! ```
//!
//! Every benchmark takes the real tool's flags, with the real tool's defaults and parsing
//! quirks (getopt clusters and prefixes, `netperf … -- -r 1,1`, `lat_ctx … 96` positional
//! process counts). A flag that schedlab does not model is an error naming the flag, never
//! silently ignored. [`BenchWorkload::format_output`] prints what the real tool prints, from a
//! [`SimReport`]; [`BenchWorkload::metric_value`] is the number an A/B table compares.
//!
//! Measurements use the program vocabulary of [`sim::program`]: `Mark` at the start and end of
//! the measured interval, `Count` for transactions and bogo operations, `LatStart`/`LatEnd`
//! into run-wide histograms for latencies. Each benchmark's ids are small local numbers offset
//! by [`Base::id`], so several workloads can share one simulation ([`merge_workloads`]).
//!
//! Some defaults depend on the machine (`schbench -t`, `stress-ng --cpu 0`):
//! [`parse_benchmark_on`] takes the simulated CPU count; [`parse_benchmark`] reports an error
//! when such a default is needed.

mod args;
mod hist;
pub(crate) mod prog;

pub mod hackbench;
pub mod lat_ctx;
pub mod messaging;
pub mod netperf;
pub mod pgbench;
pub mod pipe;
pub mod schbench;
pub mod stressng;

use sim::engine::{MarkStat, SimReport};
use sim::ipc::ObjectSpec;
use sim::program::{Op, TaskSpec};
use sim::stats::LatencyHistogram;

/// Which direction of a metric is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Smaller is better (times, latencies).
    Lower,
    /// Larger is better (rates).
    Higher,
}

impl Better {
    /// `"lower"` or `"higher"`, as the `run --json` schema spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }
}

/// The number a benchmark reports and A/B tables compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricSpec {
    /// e.g. `seconds`, `usecs_per_op`, `transactions_per_sec`, `tps`, `bogo_ops_per_sec`,
    /// `wakeup_latency_us_p99`, `usecs_per_switch`.
    pub name: &'static str,
    /// Which direction is an improvement.
    pub better: Better,
}

/// Where a workload's tasks, objects, address spaces and measurement ids start in the
/// simulation. All zero for a workload run alone; [`merge_workloads`] sets them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Base {
    /// Index of the workload's first task in `SimSetup::tasks`.
    pub task: u32,
    /// Index of its first object in `SimSetup::objects`.
    pub object: u32,
    /// Added to every `TaskSpec::mm` of the workload.
    pub mm: u32,
    /// Added to every `Mark`/`Count` id and `LatEnd` histogram id.
    pub id: u16,
}

/// Measurement ids each workload may use (local ids are below this).
pub const IDS_PER_WORKLOAD: u16 = 1024;

/// A parsed benchmark: the tasks and objects to simulate, how long, and how to read the result.
#[derive(Clone, Debug)]
pub struct BenchWorkload {
    /// The benchmark name as given on the command line (`hackbench`, `pipe`, …, `stress-ng`).
    pub name: &'static str,
    /// The full command line, `argv[0]` being the benchmark name.
    pub argv: Vec<String>,
    /// Task programs; those with `spawned: true` are created by another task's `Spawn`.
    pub tasks: Vec<TaskSpec>,
    /// IPC objects the programs refer to by index.
    pub objects: Vec<ObjectSpec>,
    /// Simulated time bound (`-l`, `-T`, `-r`, `--timeout`), or `None` when the workload ends
    /// by itself (hackbench, pipe, lat_ctx, counted netperf/pgbench runs).
    pub duration_ns: Option<u64>,
    /// The headline metric and its direction.
    pub metric: MetricSpec,
    /// The parsed flags, defaults filled in.
    pub params: BenchParams,
    /// Offsets of this workload inside a shared simulation.
    pub base: Base,
}

/// The parsed flags of each benchmark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BenchParams {
    /// rt-tests `hackbench`.
    Hackbench(hackbench::Hackbench),
    /// `perf bench sched messaging`.
    Messaging(messaging::Messaging),
    /// `perf bench sched pipe`.
    Pipe(pipe::Pipe),
    /// schbench.
    Schbench(schbench::Schbench),
    /// lmbench `lat_ctx`.
    LatCtx(lat_ctx::LatCtx),
    /// netperf TCP_RR.
    Netperf(netperf::Netperf),
    /// stress-ng `--cpu`.
    StressNg(stressng::StressNg),
    /// pgbench `-S`.
    Pgbench(pgbench::Pgbench),
}

/// Why a benchmark command line was rejected. Messages are one line, start with the benchmark
/// name and name the offending flag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    /// No benchmark of that name.
    #[error(
        "unknown benchmark `{0}` (known: hackbench, pipe, messaging, schbench, lat_ctx, netperf, stress-ng, pgbench)"
    )]
    UnknownBenchmark(String),
    /// A malformed command line: unknown flag, missing or invalid value.
    #[error("{bench}: {message}")]
    Usage {
        /// The benchmark.
        bench: &'static str,
        /// What is wrong, naming the flag.
        message: String,
    },
    /// A real flag of the tool that schedlab does not model.
    #[error("{bench}: {flag} ({what}) is not modelled{}", if reason.is_empty() { String::new() } else { format!(": {reason}") })]
    NotModelled {
        /// The benchmark.
        bench: &'static str,
        /// The flag as given (`-F`, `--fifo`).
        flag: String,
        /// What the flag does.
        what: &'static str,
        /// Why it is not modelled, or what to use instead (may be empty).
        reason: &'static str,
    },
    /// A default that depends on the machine, without a CPU count to compute it from.
    #[error("{bench}: {what} depends on the number of CPUs; parse with parse_benchmark_on (or give {flag})")]
    NeedsCpuCount {
        /// The benchmark.
        bench: &'static str,
        /// The default in question.
        what: &'static str,
        /// The flag that sets it explicitly.
        flag: &'static str,
    },
}

pub(crate) fn usage<T>(bench: &'static str, message: impl Into<String>) -> Result<T, WorkloadError> {
    Err(WorkloadError::Usage { bench, message: message.into() })
}

pub(crate) fn not_modelled<T>(
    bench: &'static str,
    flag: &str,
    what: &'static str,
    reason: &'static str,
) -> Result<T, WorkloadError> {
    Err(WorkloadError::NotModelled { bench, flag: flag.to_owned(), what, reason })
}

/// Parses a benchmark command line (`argv[0]` is the benchmark name). Defaults that depend on
/// the machine's CPU count are errors here; use [`parse_benchmark_on`] to supply it.
pub fn parse_benchmark(argv: &[String]) -> Result<BenchWorkload, WorkloadError> {
    parse(argv, None)
}

/// Parses a benchmark command line for a simulated machine with `nr_cpus` online CPUs
/// (`get_nprocs()` for schbench, the online/configured CPU count for stress-ng).
pub fn parse_benchmark_on(argv: &[String], nr_cpus: u32) -> Result<BenchWorkload, WorkloadError> {
    parse(argv, Some(nr_cpus))
}

/// The benchmark names [`parse_benchmark`] knows.
pub const BENCHMARKS: &[&str] =
    &["hackbench", "pipe", "messaging", "schbench", "lat_ctx", "netperf", "stress-ng", "pgbench"];

fn parse(argv: &[String], nr_cpus: Option<u32>) -> Result<BenchWorkload, WorkloadError> {
    let Some(name) = argv.first() else {
        return Err(WorkloadError::UnknownBenchmark(String::new()));
    };
    let rest = &argv[1..];
    let built = match name.as_str() {
        "hackbench" => hackbench::parse(rest)?,
        "messaging" => messaging::parse(rest)?,
        "pipe" => pipe::parse(rest)?,
        "schbench" => schbench::parse(rest, nr_cpus)?,
        "lat_ctx" => lat_ctx::parse(rest)?,
        "netperf" => netperf::parse(rest)?,
        "stress-ng" => stressng::parse(rest, nr_cpus)?,
        "pgbench" => pgbench::parse(rest)?,
        other => return Err(WorkloadError::UnknownBenchmark(other.to_owned())),
    };
    Ok(BenchWorkload {
        name: built.name,
        argv: argv.to_vec(),
        tasks: built.tasks,
        objects: built.objects,
        duration_ns: built.duration_ns,
        metric: built.metric,
        params: built.params,
        base: Base::default(),
    })
}

/// What each benchmark module returns to [`parse`].
pub(crate) struct Built {
    pub(crate) name: &'static str,
    pub(crate) tasks: Vec<TaskSpec>,
    pub(crate) objects: Vec<ObjectSpec>,
    pub(crate) duration_ns: Option<u64>,
    pub(crate) metric: MetricSpec,
    pub(crate) params: BenchParams,
}

impl BenchWorkload {
    /// The benchmark's headline number from a finished run (`NaN` when the run did not reach
    /// the measured interval, e.g. it was stopped by an event limit).
    pub fn metric_value(&self, r: &SimReport) -> f64 {
        let v = View { r, base: self.base };
        match &self.params {
            BenchParams::Hackbench(p) => p.metric_value(&v),
            BenchParams::Messaging(p) => p.metric_value(&v),
            BenchParams::Pipe(p) => p.metric_value(&v),
            BenchParams::Schbench(p) => p.metric_value(&v),
            BenchParams::LatCtx(p) => p.metric_value(&v),
            BenchParams::Netperf(p) => p.metric_value(&v),
            BenchParams::StressNg(p) => p.metric_value(&v),
            BenchParams::Pgbench(p) => p.metric_value(&v),
        }
    }

    /// Whether the benchmark runs until it is stopped: stress-ng without `--timeout` and
    /// schbench with `-r 0` have no end of their own, so the run's duration is their end; every
    /// other benchmark without a duration ends when its work is done.
    pub fn runs_forever(&self) -> bool {
        self.duration_ns.is_none() && matches!(self.params, BenchParams::StressNg(_) | BenchParams::Schbench(_))
    }

    /// What the real tool prints for this run, line for line (stdout and stderr lines in the
    /// order the tool writes them), each line ending in `\n`.
    pub fn format_output(&self, r: &SimReport) -> String {
        let v = View { r, base: self.base };
        match &self.params {
            BenchParams::Hackbench(p) => p.format_output(&v),
            BenchParams::Messaging(p) => p.format_output(&v),
            BenchParams::Pipe(p) => p.format_output(&v),
            BenchParams::Schbench(p) => p.format_output(&v),
            BenchParams::LatCtx(p) => p.format_output(&v),
            BenchParams::Netperf(p) => p.format_output(&v),
            BenchParams::StressNg(p) => p.format_output(&v),
            BenchParams::Pgbench(p) => p.format_output(&v),
        }
    }

    /// Checks every program (`TaskSpec::validate`) and every reference to an object, poll set
    /// or task spec, as `Sim::new` will.
    pub fn validate(&self) -> Result<(), String> {
        validate_programs(&self.tasks, self.objects.len())
    }
}

/// `TaskSpec::validate` plus the reference checks of `Sim::new` for a set of tasks.
pub fn validate_programs(tasks: &[TaskSpec], nr_objects: usize) -> Result<(), String> {
    let nobj = nr_objects as u32;
    for t in tasks {
        t.validate()?;
        for op in &t.ops {
            let bad = match *op {
                Op::Write { obj, .. } | Op::Read { obj, .. } | Op::FutexWait { obj } | Op::FutexWake { obj, .. } => {
                    obj >= nobj
                }
                Op::Poll { set } | Op::EpollWait { set } => set as usize >= t.poll_sets.len(),
                Op::Spawn { spec } => spec as usize >= tasks.len() || !tasks[spec as usize].spawned,
                _ => false,
            };
            if bad {
                return Err(format!("task `{}`: {op:?} refers to something that does not exist", t.comm));
            }
        }
        if let Some(o) = t.poll_sets.iter().flatten().find(|&&o| o >= nobj) {
            return Err(format!("task `{}` polls object {o}, which does not exist", t.comm));
        }
    }
    Ok(())
}

/// Several workloads in one simulation, e.g. schbench with a stress-ng hog beside it.
#[derive(Clone, Debug)]
pub struct MergedWorkload {
    /// All tasks, relocated: part `k`'s tasks start at `parts[k].base.task`.
    pub tasks: Vec<TaskSpec>,
    /// All objects, relocated: part `k`'s objects start at `parts[k].base.object`.
    pub objects: Vec<ObjectSpec>,
    /// The first (foreground) workload's bound: a background hog without its own end runs as
    /// long as the foreground benchmark.
    pub duration_ns: Option<u64>,
    /// The parts with their [`Base`] set; their own `tasks`/`objects` are the relocated copies.
    /// Call `format_output`/`metric_value` on each with the common report.
    pub parts: Vec<BenchWorkload>,
}

/// Puts several workloads into one simulation: tasks, objects, address spaces (`mm`) and
/// measurement ids of each part are offset so they cannot collide.
pub fn merge_workloads(parts: Vec<BenchWorkload>) -> Result<MergedWorkload, WorkloadError> {
    if parts.is_empty() {
        return usage("merge", "no workloads to merge");
    }
    if parts.len() > usize::from(u16::MAX / IDS_PER_WORKLOAD) {
        return usage("merge", format!("at most {} workloads can share a simulation", u16::MAX / IDS_PER_WORKLOAD));
    }
    let duration_ns = parts[0].duration_ns;
    let mut tasks = Vec::new();
    let mut objects = Vec::new();
    let mut out = Vec::with_capacity(parts.len());
    let mut mm_next = 0u32;
    for (k, mut part) in parts.into_iter().enumerate() {
        let base = Base {
            task: tasks.len() as u32,
            object: objects.len() as u32,
            mm: mm_next,
            id: k as u16 * IDS_PER_WORKLOAD,
        };
        for t in &mut part.tasks {
            prog::relocate(t, base);
        }
        mm_next = part.tasks.iter().map(|t| t.mm + 1).max().unwrap_or(mm_next).max(mm_next);
        part.base = base;
        tasks.extend(part.tasks.iter().cloned());
        objects.extend(part.objects.iter().cloned());
        out.push(part);
    }
    Ok(MergedWorkload { tasks, objects, duration_ns, parts: out })
}

/// A report seen through one workload's id offsets.
pub(crate) struct View<'a> {
    pub(crate) r: &'a SimReport,
    pub(crate) base: Base,
}

impl View<'_> {
    pub(crate) fn mark(&self, local: u16) -> Option<MarkStat> {
        self.r.marks.get(&(self.base.id + local)).copied()
    }
    pub(crate) fn count(&self, local: u16) -> u64 {
        self.r.counts.get(&(self.base.id + local)).copied().unwrap_or(0)
    }
    pub(crate) fn hist(&self, local: u16) -> Option<&LatencyHistogram> {
        self.r.histograms.get(&(self.base.id + local))
    }
    /// Nanoseconds from the first `start` mark to the last `end` mark (0 if either is missing).
    pub(crate) fn span(&self, start: u16, end: u16) -> Option<u64> {
        let (s, e) = (self.mark(start)?, self.mark(end)?);
        Some(e.last_ns.saturating_sub(s.first_ns))
    }
    /// Nanoseconds from the first `start` mark to the end of the simulation.
    pub(crate) fn since(&self, start: u16) -> Option<u64> {
        Some(self.r.simulated_ns.saturating_sub(self.mark(start)?.first_ns))
    }
}

/// `%lu.%03lu` of a `timeval` difference: whole seconds, a dot and the milliseconds truncated.
pub(crate) fn secs_msecs(ns: u64) -> String {
    let us = ns / 1_000;
    format!("{}.{:03}", us / 1_000_000, (us % 1_000_000) / 1_000)
}
