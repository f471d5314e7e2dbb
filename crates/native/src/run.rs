//! `schedlab native`: a benchmark command line executed for real.
//!
//! The command line is parsed by the simulator's own benchmark parser
//! ([`workload::bench::parse_benchmark_on`]), so native and simulated runs accept exactly the
//! same flags and defaults; the parsed parameters then drive real processes (`fork`, the
//! default of both tools) or threads (`-T`), real pipes and unix socketpairs. The measured
//! interval is the tool's own (perf: from before the fork to after the wait; rt-tests: from
//! before the GO byte to after the last child), and the tool's output is printed by the
//! simulated workload's `format_output` from that interval.
//!
//! # Counters
//!
//! Every task's `/proc/<pid>/sched` and `/proc/<pid>/schedstat` are read after its work is done
//! and before it is reaped: forked children are waited for with `waitid(WEXITED | WNOWAIT)` in
//! creation order, which leaves them zombies whose counters are final (they include the switch
//! out of `do_exit`); threads wait at a gate after their loop until the main thread has read
//! `/proc/self/task/<tid>/…`, then exit. The main thread's counters are the difference of two
//! readings around the run. The run ends (t1) when the last worker is done; the reads and the
//! reaping come after t1, so they are not in the measured time (the tools include the reaping
//! of each child, a few µs).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::process::{WaitId, WaitIdOptions};
use workload::bench::hackbench::Transport;
use workload::bench::{BenchParams, BenchWorkload};

use crate::cleanup::{self, ChildGuard};
use crate::ftrace::{Captured, TraceSession};
use crate::procfs::{self, TaskSample};
use crate::tools::{Choice, ToolCommand};
use crate::workers::{self, Gate, mono_ns};

/// How to run a workload natively.
#[derive(Clone, Debug, Default)]
pub struct NativeOptions {
    /// CPUs for every task of the workload (`taskset -c`): the main thread's affinity, which
    /// every child and thread inherits. Restored after the run.
    pub pin: Option<Vec<u32>>,
    /// Record scheduler events with ftrace (`--trace`), per-CPU buffer in KiB.
    pub trace_buffer_kb: Option<u32>,
    /// Run the built-in workers even when the real tool is installed.
    pub builtin: bool,
}

/// The result of one native run.
pub struct NativeRun {
    /// The parsed benchmark (name, flags, metric).
    pub workload: BenchWorkload,
    /// The measured interval, ns.
    pub elapsed_ns: u64,
    /// Its start and end on CLOCK_MONOTONIC (the trace clock).
    pub start_mono_ns: u64,
    pub end_mono_ns: u64,
    /// The benchmark's metric, as the tool computes it.
    pub metric: f64,
    /// What the tool prints.
    pub output: String,
    /// Operations as the benchmark defines them (pipe: loops; hackbench: messages); `None`
    /// when the tool sizes its own run (lat_ctx, stress-ng, netperf): per-operation figures are
    /// then per switch.
    pub ops: Option<u64>,
    /// What one operation is.
    pub op_name: &'static str,
    /// Every task of the workload, main first, then in creation order.
    pub tasks: Vec<TaskSample>,
    /// Idle time per CPU during the run (cpuidle), when the machine has cpuidle.
    pub idle_ns_per_cpu: Option<Vec<u64>>,
    /// Rescheduling IPIs during the run, system-wide (`/proc/interrupts` RES).
    pub resched_ipis: Option<u64>,
    /// The ftrace capture (`--trace`).
    pub trace: Option<Captured>,
    /// Its analysis over the measured interval, for the workload's tasks.
    pub analysis: Option<schedtrace::Analysis>,
    /// Whether `/proc/<pid>/sched` carried schedstats counters.
    pub schedstats: bool,
    /// What ran: the real tool (`perf 6.1 bench sched pipe, the one-token worker`) or
    /// `built-in workers`.
    pub runner: String,
    /// Why the built-in workers ran instead of the real tool.
    pub note: Option<String>,
    /// A sampled real tool's whole-tree (voluntary, involuntary) switches from `getrusage`:
    /// exact, where the sampled per-task readings of `tasks` may miss a worker's last
    /// milliseconds. `None` for the built-in workers and for a tool read by the exit trap,
    /// whose per-task readings are exact (see [`crate::exit_trap`]).
    pub switch_totals: Option<(u64, u64)>,
    /// A real tool's `getrusage(RUSAGE_CHILDREN)` (voluntary, involuntary) difference around
    /// the run, whichever way its tasks were read.
    pub rusage_switches: Option<(u64, u64)>,
    /// How a real tool's tasks were read (`None`: the built-in workers, read as zombies or at
    /// their exit gate).
    pub counters: Option<crate::tools::CounterSource>,
}

impl NativeRun {
    /// (all, voluntary, involuntary) switches of the benchmark's tasks.
    pub fn switches(&self) -> (u64, u64, u64) {
        let (v, i) = self.switch_totals.unwrap_or_else(|| {
            (
                self.tasks.iter().map(|t| t.nr_voluntary_switches).sum(),
                self.tasks.iter().map(|t| t.nr_involuntary_switches).sum(),
            )
        });
        (v + i, v, i)
    }
}

/// The benchmarks native mode has built-in workers for (pgbench needs a real PostgreSQL).
pub const NATIVE_WORKLOADS: &[&str] =
    &["pipe", "hackbench", "messaging", "schbench", "lat_ctx", "netperf", "stress-ng"];

/// Parses and runs a benchmark command line natively: with the real tool when it is installed
/// and can run what was asked ([`crate::tools::choose`]), else with the built-in workers (the
/// run's `note` says why). Errors are one-line messages; a bad command line is reported as the
/// simulator would report it.
pub fn run_native(argv: &[String], opts: &NativeOptions) -> Result<NativeRun, NativeError> {
    let nr_cpus = crate::host::nr_cpus();
    let wl =
        workload::bench::parse_benchmark_on(argv, nr_cpus as u32).map_err(|e| NativeError::Usage(e.to_string()))?;
    if let Some(cpus) = &opts.pin
        && let Some(bad) = cpus.iter().find(|&&c| c as usize >= nr_cpus)
    {
        return Err(NativeError::Usage(format!("--pin: CPU {bad} is not online (this machine has {nr_cpus})")));
    }
    if let Some(why) = crate::tools::refusal(&wl) {
        return Err(NativeError::Usage(why));
    }
    let choice = if opts.builtin {
        Choice::Builtin("--builtin: the built-in workers were asked for".into())
    } else {
        crate::tools::choose(&wl, argv)
    };
    let (exec, note) = match choice {
        Choice::Real(cmd) => (Exec::Real(cmd), None),
        Choice::Builtin(why) => match builtin_plan(&wl) {
            Some(plan) => (Exec::Builtin(plan), Some(format!("built-in workers: {why}"))),
            None => {
                return Err(NativeError::Usage(format!(
                    "native mode runs `{}` only with the real tool, and {why} (built-in workers: {})",
                    wl.name,
                    NATIVE_WORKLOADS.join(", ")
                )));
            }
        },
    };
    if let Exec::Builtin(Plan::Groups { transport: Transport::TcpLoopback, .. }) = exec {
        return Err(NativeError::Usage("hackbench: -i/--inet (TCP) is not supported in native mode yet".into()));
    }
    if let Exec::Builtin(Plan::Schbench(s, _)) = &exec
        && let Some(what) = crate::builtin::schbench_unsupported(s)
    {
        return Err(NativeError::Usage(format!("schbench: {what} is not supported by the built-in worker")));
    }
    // What runs killed by SIGKILL left: tracefs instances still recording, tool workers.
    crate::ftrace::remove_stale_instances_if_mounted();
    crate::cleanup::kill_stale_tool_groups();
    crate::postgres::remove_stale_clusters();

    let trace = match opts.trace_buffer_kb {
        Some(kb) => Some(TraceSession::new(kb).map_err(NativeError::System)?),
        None => None,
    };
    let comm = match &exec {
        Exec::Builtin(plan) => plan.comm(),
        Exec::Real(cmd) => cmd.comm,
    };
    let _env = RunEnv::enter(opts.pin.as_deref(), matches!(exec, Exec::Builtin(_)).then_some(comm))
        .map_err(NativeError::System)?;
    let idle_before = crate::host::idle_ns_per_cpu(nr_cpus);
    let ipis_before = crate::host::resched_ipis();
    if let Some(t) = &trace {
        t.on().map_err(NativeError::System)?;
    }
    let mut real = None;
    let m = match &exec {
        Exec::Builtin(Plan::Pipe { loops, threads, nonblocking, size, classic }) => {
            run_pipe(*loops, *threads, *nonblocking, *size, *classic, comm)
        }
        Exec::Builtin(Plan::Groups { comm, groups, fds, loops, datasize, threads, transport }) => {
            run_groups(comm, *groups, *fds, *loops, *datasize, *threads, *transport)
        }
        Exec::Builtin(Plan::LatCtx(l)) => crate::builtin::run_lat_ctx(l),
        Exec::Builtin(Plan::Netperf(n)) => crate::builtin::run_netperf(n),
        Exec::Builtin(Plan::StressNg(s, run_ns)) => crate::builtin::run_stress(s, *run_ns),
        Exec::Builtin(Plan::Schbench(s, run_ns)) => crate::builtin::run_schbench(s, *run_ns),
        Exec::Real(cmd) => crate::tools::run_tool(cmd, &wl, opts.pin.as_deref()).map(|t| {
            let m = Measured::new(t.start_ns, t.end_ns - t.start_ns, t.tasks.clone());
            real = Some(t);
            m
        }),
    }?;
    let captured = match &trace {
        Some(t) => Some(t.stop_and_read().map_err(NativeError::System)?),
        None => None,
    };
    let idle_ns_per_cpu = match (idle_before, crate::host::idle_ns_per_cpu(nr_cpus)) {
        (Some(a), Some(b)) => Some(b.iter().zip(&a).map(|(b, a)| b.saturating_sub(*a)).collect()),
        _ => None,
    };
    let resched_ipis = match (ipis_before, crate::host::resched_ipis()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    drop(trace);

    let analysis = match &captured {
        Some(c) => Some(
            crate::trace::analyze_capture(c, &exec.trace_comms(), m.start, m.start + m.elapsed_ns)
                .map_err(NativeError::System)?,
        ),
        None => None,
    };
    let ops = operations(&wl).map(|(n, _)| n);
    let op_name = operations(&wl).map_or("switch", |(_, n)| n);
    let (metric, output, runner, switch_totals, rusage_switches, counters) = match (&exec, real) {
        (Exec::Real(cmd), Some(t)) => {
            let totals = matches!(t.counters, crate::tools::CounterSource::Sampled(_)).then_some(t.rusage_switches);
            (t.metric, t.output, cmd.describe.clone(), totals, Some(t.rusage_switches), Some(t.counters))
        }
        _ => {
            let report = measured_report(&m);
            (wl.metric_value(&report), wl.format_output(&report), "built-in workers".to_string(), None, None, None)
        }
    };
    Ok(NativeRun {
        metric,
        output,
        workload: wl,
        elapsed_ns: m.elapsed_ns,
        start_mono_ns: m.start,
        end_mono_ns: m.start + m.elapsed_ns,
        ops,
        op_name,
        schedstats: m.tasks.iter().any(|t| !t.schedstats.is_empty()),
        tasks: m.tasks,
        idle_ns_per_cpu,
        resched_ipis,
        trace: captured,
        analysis,
        runner,
        note,
        switch_totals,
        rusage_switches,
        counters,
    })
}

/// What runs.
enum Exec {
    Builtin(Plan),
    Real(ToolCommand),
}

/// The built-in workers' plan for a workload, when there are built-in workers for it.
fn builtin_plan(wl: &BenchWorkload) -> Option<Plan> {
    Some(match &wl.params {
        BenchParams::Pipe(p) => Plan::Pipe {
            loops: u64::from(p.loops),
            threads: p.threads,
            nonblocking: p.nonblocking,
            size: p.write_size as usize,
            classic: p.classic,
        },
        BenchParams::Hackbench(h) => Plan::Groups {
            comm: "hackbench",
            groups: h.groups,
            fds: h.fds,
            loops: u64::from(h.loops),
            datasize: h.datasize as usize,
            threads: h.threads,
            transport: h.transport,
        },
        BenchParams::Messaging(m) => Plan::Groups {
            comm: "sched-messaging",
            groups: m.groups,
            fds: workload::bench::messaging::FDS,
            loops: u64::from(m.loops),
            datasize: workload::bench::messaging::DATASIZE as usize,
            threads: m.threads,
            transport: if m.pipe { Transport::Pipe } else { Transport::UnixStream },
        },
        BenchParams::LatCtx(l) => Plan::LatCtx(l.clone()),
        BenchParams::Netperf(n) => Plan::Netperf(n.clone()),
        BenchParams::StressNg(s) => Plan::StressNg(s.clone(), wl.duration_ns.unwrap_or(crate::builtin::DEFAULT_RUN_NS)),
        BenchParams::Schbench(s) => Plan::Schbench(s.clone(), wl.duration_ns.unwrap_or(crate::builtin::DEFAULT_RUN_NS)),
        BenchParams::Pgbench(_) => return None,
    })
}

/// The benchmark's operations (what "per operation" means) and their name: pipe loops,
/// hackbench/messaging messages (G·F·F·L). `None` for benchmarks native mode does not run.
pub fn operations(wl: &BenchWorkload) -> Option<(u64, &'static str)> {
    match &wl.params {
        BenchParams::Pipe(p) => Some((u64::from(p.loops), "loop")),
        BenchParams::Hackbench(h) => {
            Some((u64::from(h.groups) * u64::from(h.fds) * u64::from(h.fds) * u64::from(h.loops), "message"))
        }
        BenchParams::Messaging(m) => {
            let f = u64::from(workload::bench::messaging::FDS);
            Some((u64::from(m.groups) * f * f * u64::from(m.loops), "message"))
        }
        _ => None,
    }
}

/// The report a built-in run's output is printed from: its interval (or the run time the tool
/// reports), counts, latency samples, and its tasks' names, pids and run times (stress-ng
/// prints its parent's pid and its workers' CPU time).
fn measured_report(m: &Measured) -> sim::engine::SimReport {
    let mut r = synthetic_report(m.report_ns.unwrap_or(m.elapsed_ns));
    r.counts = m.counts.clone();
    r.histograms = m.hists.clone();
    r.tasks = m
        .tasks
        .iter()
        .map(|t| sim::engine::TaskReport {
            pid: t.pid,
            comm: t.comm.clone(),
            nice: t.nice,
            sum_exec_runtime_ns: t.sum_exec_runtime_ns,
            vruntime: 0,
            util_avg: 0,
            load_avg: 0,
            exited: true,
            kthread: false,
            group: 0,
            stats: Default::default(),
            // A trace's counts, not /proc's.
            wakee_switch_ins: Default::default(),
        })
        .collect();
    r
}

/// Why a native run failed.
#[derive(Debug)]
pub enum NativeError {
    /// A bad command line (exit code 2).
    Usage(String),
    /// The host refused something (exit code 1).
    System(String),
}

impl std::fmt::Display for NativeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NativeError::Usage(m) | NativeError::System(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for NativeError {}

pub(crate) fn sys(what: &str) -> impl Fn(rustix::io::Errno) -> NativeError + '_ {
    move |e| NativeError::System(format!("{what}: {e}"))
}

/// A report carrying only the measured interval, for the workload's `metric_value` and
/// `format_output` (both read the start and end marks, ids 0 and 1, of a workload run alone).
pub fn synthetic_report(elapsed_ns: u64) -> sim::engine::SimReport {
    use sim::engine::{Counters, MarkStat, SimReport, StopReason};
    let mut marks = std::collections::BTreeMap::new();
    marks.insert(0, MarkStat { first_ns: 0, last_ns: 0, count: 1 });
    marks.insert(1, MarkStat { first_ns: elapsed_ns, last_ns: elapsed_ns, count: 1 });
    SimReport {
        simulated_ns: elapsed_ns,
        events: 0,
        stale_events: 0,
        stop: StopReason::AllExited,
        counters: Counters::default(),
        schedstat: sim::schedstat::Schedstat::default(),
        idle_ns_per_cpu: Vec::new(),
        wakeup_latency: sim::stats::LatencyHistogram::default(),
        tasks: Vec::new(),
        marks,
        counts: std::collections::BTreeMap::new(),
        histograms: std::collections::BTreeMap::new(),
    }
}

#[derive(Clone)]
enum Plan {
    Pipe {
        loops: u64,
        threads: bool,
        nonblocking: bool,
        size: usize,
        classic: bool,
    },
    Groups {
        comm: &'static str,
        groups: u32,
        fds: u32,
        loops: u64,
        datasize: usize,
        threads: bool,
        transport: Transport,
    },
    LatCtx(workload::bench::lat_ctx::LatCtx),
    Netperf(workload::bench::netperf::Netperf),
    /// stress-ng for `run_ns` (its `--timeout`, or the simulator's default duration).
    StressNg(workload::bench::stressng::StressNg, u64),
    /// schbench for `run_ns` (its `-r`, or the simulator's default duration for `-r 0`).
    Schbench(workload::bench::schbench::Schbench, u64),
}

impl Plan {
    /// The name of the main thread, which forked children inherit until they name themselves.
    fn comm(&self) -> &'static str {
        match self {
            Plan::Pipe { .. } => "sched-pipe",
            Plan::Groups { comm, .. } => comm,
            Plan::LatCtx(_) => "lat_ctx",
            Plan::Netperf(_) => "netperf",
            Plan::StressNg(..) => "stress-ng",
            Plan::Schbench(..) => "schbench",
        }
    }
}

impl Exec {
    /// The task names the ftrace analysis keeps: the benchmark's workers.
    fn trace_comms(&self) -> Vec<&'static str> {
        use crate::tools::Tool;
        match self {
            Exec::Builtin(Plan::Netperf(_)) | Exec::Real(ToolCommand { tool: Tool::Netperf, .. }) => {
                vec!["netperf", "netserver"]
            }
            Exec::Builtin(Plan::StressNg(..)) => vec!["stress-ng-cpu"],
            Exec::Builtin(Plan::Schbench(..)) => vec!["schbench-msg", "schbench-worker"],
            // The backends are all named `postgres` (its background processes too, asleep).
            Exec::Real(ToolCommand { tool: Tool::Pgbench, .. }) => vec!["pgbench", "postgres"],
            Exec::Builtin(plan) => vec![plan.comm()],
            Exec::Real(cmd) => vec![cmd.comm],
        }
    }
}

/// The calling thread's affinity and name for the run; restored on drop.
struct RunEnv {
    old_mask: Option<rustix::thread::CpuSet>,
    old_name: Option<CString>,
}

impl RunEnv {
    fn enter(pin: Option<&[u32]>, comm: Option<&str>) -> Result<RunEnv, String> {
        let old_mask = match pin {
            Some(cpus) => {
                let old = rustix::thread::sched_getaffinity(None).map_err(|e| format!("sched_getaffinity: {e}"))?;
                let mut set = rustix::thread::CpuSet::new();
                for &c in cpus {
                    set.set(c as usize);
                }
                rustix::thread::sched_setaffinity(None, &set).map_err(|e| format!("sched_setaffinity: {e}"))?;
                Some(old)
            }
            None => None,
        };
        // The built-in workers are named after the tools' tasks; children inherit it. A real
        // tool names its own (exec).
        let Some(comm) = comm else { return Ok(RunEnv { old_mask, old_name: None }) };
        let old_name = std::fs::read_to_string("/proc/thread-self/comm")
            .ok()
            .and_then(|s| CString::new(s.trim_end_matches('\n')).ok());
        if let Ok(name) = CString::new(comm) {
            let _ = rustix::thread::set_name(&name);
        }
        Ok(RunEnv { old_mask, old_name })
    }
}

impl Drop for RunEnv {
    fn drop(&mut self) {
        if let Some(m) = &self.old_mask {
            let _ = rustix::thread::sched_setaffinity(None, m);
        }
        if let Some(n) = &self.old_name {
            let _ = rustix::thread::set_name(n);
        }
    }
}

/// The measured interval, every task's counters and, for the built-in workers of the
/// benchmarks that report more than their interval, the counts and latency samples the
/// workload's output is made from (its local ids).
pub(crate) struct Measured {
    pub(crate) start: u64,
    pub(crate) elapsed_ns: u64,
    pub(crate) tasks: Vec<TaskSample>,
    pub(crate) counts: BTreeMap<u16, u64>,
    pub(crate) hists: BTreeMap<u16, sim::stats::LatencyHistogram>,
    /// The run time the tool reports, when it is not the measured interval (schbench: `-r`).
    pub(crate) report_ns: Option<u64>,
}

impl Measured {
    pub(crate) fn new(start: u64, elapsed_ns: u64, tasks: Vec<TaskSample>) -> Measured {
        Measured { start, elapsed_ns, tasks, counts: BTreeMap::new(), hists: BTreeMap::new(), report_ns: None }
    }
}

/// Forked children: waits for each (creation order) to exit without reaping it, returns the
/// time the last one was done, reads the zombies' counters, then reaps them.
pub(crate) fn finish_children(guard: &mut ChildGuard) -> Result<(u64, Vec<TaskSample>), NativeError> {
    let mut failed = None;
    for &pid in &guard.pids {
        loop {
            match rustix::process::waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT) {
                Ok(Some(st)) => {
                    if st.exit_status() != Some(0) && failed.is_none() {
                        failed = Some((pid, st.exit_status(), st.terminating_signal()));
                    }
                    break;
                }
                Ok(None) | Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(NativeError::System(format!("waitid: {e}"))),
            }
        }
    }
    let end = mono_ns();
    if let Some((pid, code, sig)) = failed {
        return Err(NativeError::System(match sig {
            Some(s) => format!("worker {} was killed by signal {s}", pid.as_raw_nonzero()),
            None => format!("worker {} failed (exit status {})", pid.as_raw_nonzero(), code.unwrap_or(-1)),
        }));
    }
    let mut tasks = Vec::with_capacity(guard.pids.len());
    for &pid in &guard.pids {
        let dir = procfs::task_dir(pid.as_raw_nonzero().get() as u32, false);
        tasks.push(procfs::read_task(&dir).map_err(NativeError::System)?);
    }
    for &pid in &guard.pids {
        let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
        cleanup::forget_child(pid);
    }
    guard.disarm();
    Ok((end, tasks))
}

/// Threads: each worker publishes its tid, runs, opens its `done` gate and waits at `release`.
struct Slot {
    tid: AtomicU32,
    done: Gate,
}

pub(crate) struct ThreadPool {
    slots: Vec<Arc<Slot>>,
    release: Arc<Gate>,
    handles: Vec<std::thread::JoinHandle<Result<(), rustix::io::Errno>>>,
}

impl ThreadPool {
    pub(crate) fn new() -> ThreadPool {
        ThreadPool { slots: Vec::new(), release: Arc::new(Gate::default()), handles: Vec::new() }
    }

    fn spawn<F>(&mut self, name: &str, work: F) -> Result<(), NativeError>
    where
        F: FnOnce() -> Result<(), rustix::io::Errno> + Send + 'static,
    {
        self.spawn_thread(name, work).map(|_| ())
    }

    /// [`ThreadPool::spawn`], returning the thread's handle (to `unpark` it).
    pub(crate) fn spawn_thread<F>(&mut self, name: &str, work: F) -> Result<std::thread::Thread, NativeError>
    where
        F: FnOnce() -> Result<(), rustix::io::Errno> + Send + 'static,
    {
        let slot = Arc::new(Slot { tid: AtomicU32::new(0), done: Gate::default() });
        let (s, release) = (slot.clone(), self.release.clone());
        let h = std::thread::Builder::new()
            .name(name.to_string())
            .stack_size(256 * 1024)
            .spawn(move || {
                s.tid.store(rustix::thread::gettid().as_raw_nonzero().get() as u32, Ordering::SeqCst);
                let r = work();
                s.done.open();
                release.wait();
                r
            })
            .map_err(|e| NativeError::System(format!("creating a thread: {e}")))?;
        let thread = h.thread().clone();
        self.slots.push(slot);
        self.handles.push(h);
        Ok(thread)
    }

    /// The workers' thread handles, in creation order.
    pub(crate) fn threads(&self) -> impl Iterator<Item = &std::thread::Thread> {
        self.handles.iter().map(|h| h.thread())
    }

    /// [`ThreadPool::finish`] for workers that end on a flag: `nudge` (which unparks them)
    /// is called every millisecond until each one is done.
    pub(crate) fn finish_with(self, nudge: impl Fn()) -> Result<(u64, Vec<TaskSample>), NativeError> {
        for s in &self.slots {
            while !s.done.wait_timeout(std::time::Duration::from_millis(1)) {
                nudge();
            }
        }
        self.finish()
    }

    /// Waits for every worker's `done` in creation order (pthread_join order), returns the end
    /// time and their counters, then lets them exit and joins them.
    pub(crate) fn finish(mut self) -> Result<(u64, Vec<TaskSample>), NativeError> {
        for s in &self.slots {
            s.done.wait();
        }
        let end = mono_ns();
        let mut tasks = Vec::new();
        let mut err = None;
        for s in &self.slots {
            let tid = s.tid.load(Ordering::SeqCst);
            match procfs::read_task(&procfs::task_dir(tid, true)) {
                Ok(t) => tasks.push(t),
                Err(e) => err = err.or(Some(e)),
            }
        }
        self.release.open();
        for h in self.handles.drain(..) {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => err = err.or(Some(format!("worker thread: {e}"))),
                Err(_) => err = err.or(Some("worker thread panicked".into())),
            }
        }
        match err {
            Some(e) => Err(NativeError::System(e)),
            None => Ok((end, tasks)),
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        // An error path: let parked workers go (blocked ones die with the process).
        self.release.open();
    }
}

pub(crate) fn main_sample() -> Result<TaskSample, NativeError> {
    procfs::read_self_thread().map_err(NativeError::System)
}

/// `perf bench sched pipe` (workloads.md §3.1, the 7.3 tree; `--classic`: the 1-token worker).
fn run_pipe(
    loops: u64,
    threads: bool,
    nonblocking: bool,
    size: usize,
    classic: bool,
    comm: &str,
) -> Result<Measured, NativeError> {
    let flags = if nonblocking {
        rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK
    } else {
        rustix::pipe::PipeFlags::CLOEXEC
    };
    // pipe_1: B -> A, pipe_2: A -> B.
    let (p1r, p1w) = rustix::pipe::pipe_with(flags).map_err(sys("pipe"))?;
    let (p2r, p2w) = rustix::pipe::pipe_with(flags).map_err(sys("pipe"))?;
    if size > 4 {
        for fd in [&p1w, &p2w] {
            rustix::pipe::fcntl_setpipe_size(fd, size).map_err(sys("F_SETPIPE_SZ"))?;
        }
    }
    let before = main_sample()?;
    let mut buf_b = vec![0u8; size];
    if threads {
        let start = mono_ns();
        let mut pool = ThreadPool::new();
        let (a_out, a_in) = (Arc::new(p2w), Arc::new(p1r));
        let (b_out, b_in) = (Arc::new(p1w), Arc::new(p2r));
        pool.spawn(comm, move || {
            let mut buf = vec![0u8; size];
            workers::pipe_worker(a_out.as_fd(), a_in.as_fd(), loops, &mut buf, classic, nonblocking)
        })?;
        pool.spawn(comm, move || {
            let mut buf = vec![0u8; size];
            workers::pipe_worker(b_out.as_fd(), b_in.as_fd(), loops, &mut buf, false, nonblocking)
        })?;
        let (end, workers) = pool.finish()?;
        let main = main_sample()?.since(&before);
        return Ok(Measured::new(start, end - start, [vec![main], workers].concat()));
    }
    let mut buf_a = vec![0u8; size];
    let mut guard = ChildGuard::new();
    let start = mono_ns();
    let (a_out, a_in) = (p2w.as_fd(), p1r.as_fd());
    let pid =
        cleanup::spawn_child(|| match workers::pipe_worker(a_out, a_in, loops, &mut buf_a, classic, nonblocking) {
            Ok(()) => 0,
            Err(_) => 1,
        })
        .map_err(|e| NativeError::System(format!("fork: {e}")))?;
    guard.pids.push(pid);
    workers::pipe_worker(p1w.as_fd(), p2r.as_fd(), loops, &mut buf_b, false, nonblocking)
        .map_err(sys("pipe worker"))?;
    let (end, children) = finish_children(&mut guard)?;
    let main = main_sample()?.since(&before);
    Ok(Measured::new(start, end - start, [vec![main], children].concat()))
}

/// One channel: (read end, write end). Unix sockets: `socketpair()`, read `fds[0]`, write
/// `fds[1]`, as rt-tests' `fdpair()`.
fn fdpair(t: Transport) -> Result<(OwnedFd, OwnedFd), NativeError> {
    match t {
        Transport::Pipe => rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(sys("pipe")),
        Transport::UnixStream => rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )
        .map_err(sys("socketpair")),
        Transport::TcpLoopback => Err(NativeError::Usage("TCP transport is not supported natively".into())),
    }
}

/// rt-tests hackbench / perf messaging (workloads.md §2.2).
#[allow(clippy::too_many_arguments)]
fn run_groups(
    comm: &str,
    groups: u32,
    fds: u32,
    loops: u64,
    datasize: usize,
    threads: bool,
    transport: Transport,
) -> Result<Measured, NativeError> {
    let f = fds as usize;
    let (ready_r, ready_w) = fdpair(transport)?;
    let (wake_r, wake_w) = fdpair(transport)?;
    let before = main_sample()?;
    let workers_total = 2 * groups as usize * f;
    let mut guard = ChildGuard::new();
    let mut pool = ThreadPool::new();
    // Thread mode shares every descriptor for the whole run.
    let ready_w = Arc::new(ready_w);
    let wake_r = Arc::new(wake_r);
    let mut keep: Vec<Arc<OwnedFd>> = Vec::new();
    let mut buf = vec![b'S'; datasize];
    for _ in 0..groups {
        let mut outs: Vec<Arc<OwnedFd>> = Vec::with_capacity(f);
        for _ in 0..f {
            let (r, w) = fdpair(transport)?;
            let (r, w) = (Arc::new(r), Arc::new(w));
            let packets = u64::from(fds) * loops;
            if threads {
                let (rc, rw, wk) = (r.clone(), ready_w.clone(), wake_r.clone());
                pool.spawn(comm, move || {
                    let mut buf = vec![0u8; datasize];
                    workers::hackbench_ready(rw.as_fd(), wk.as_fd())?;
                    workers::hackbench_receiver(rc.as_fd(), packets, &mut buf)
                })?;
                keep.push(r);
            } else {
                let (rfd, wfd, rw, wk) = (r.as_fd(), w.as_fd(), ready_w.as_fd(), wake_r.as_fd());
                let b = &mut buf;
                let pid = cleanup::spawn_child(move || {
                    // The receiver closes its copy of the write end (process mode).
                    crate::sys::close_inherited(wfd);
                    if workers::hackbench_ready(rw, wk).is_err() {
                        return 1;
                    }
                    match workers::hackbench_receiver(rfd, packets, b) {
                        Ok(()) => 0,
                        Err(_) => 1,
                    }
                })
                .map_err(|e| NativeError::System(format!("fork: {e}")))?;
                guard.pids.push(pid);
                // rt-tests closes the read end in the parent.
                drop(r);
            }
            outs.push(w);
        }
        for _ in 0..f {
            if threads {
                let (outs, rw, wk) = (outs.clone(), ready_w.clone(), wake_r.clone());
                pool.spawn(comm, move || {
                    let buf = vec![b'S'; datasize];
                    workers::hackbench_ready(rw.as_fd(), wk.as_fd())?;
                    let fds: Vec<BorrowedFd<'_>> = outs.iter().map(|o| o.as_fd()).collect();
                    workers::hackbench_sender(&fds, loops, &buf)
                })?;
            } else {
                // Built before the fork and only borrowed by the child, which must not free it.
                let fds: Vec<BorrowedFd<'_>> = outs.iter().map(|o| o.as_fd()).collect();
                let (rw, wk, b, fds) = (ready_w.as_fd(), wake_r.as_fd(), &buf, &fds);
                let pid = cleanup::spawn_child(move || {
                    if workers::hackbench_ready(rw, wk).is_err() {
                        return 1;
                    }
                    match workers::hackbench_sender(fds, loops, b) {
                        Ok(()) => 0,
                        Err(_) => 1,
                    }
                })
                .map_err(|e| NativeError::System(format!("fork: {e}")))?;
                guard.pids.push(pid);
            }
        }
        if threads {
            keep.extend(outs);
        }
        // Process mode: the parent closes the write ends it has left (`outs` dropped here).
    }
    // Wait for everyone to be ready: one byte per child.
    let mut dummy = [0u8; 1];
    for _ in 0..workers_total {
        workers::read_exact(ready_r.as_fd(), &mut dummy, None).map_err(sys("reading the ready channel"))?;
    }
    let start = mono_ns();
    workers::write_all(wake_w.as_fd(), b"G").map_err(sys("writing the wake channel"))?;
    let (end, tasks) = if threads { pool.finish()? } else { finish_children(&mut guard)? };
    let main = main_sample()?.since(&before);
    drop(keep);
    Ok(Measured::new(start, end - start, [vec![main], tasks].concat()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn sum(r: &NativeRun, f: impl Fn(&TaskSample) -> u64) -> u64 {
        r.tasks.iter().map(f).sum()
    }

    #[test]
    fn synthetic_report_drives_the_tools_output() {
        let wl = workload::bench::parse_benchmark(&argv("pipe -l 1000")).unwrap();
        let r = synthetic_report(5_340_000);
        assert!((wl.metric_value(&r) - 5.34).abs() < 1e-9);
        assert!(wl.format_output(&r).contains("       5.340000 usecs/op"), "{}", wl.format_output(&r));
        let wl = workload::bench::parse_benchmark(&argv("hackbench -g 1")).unwrap();
        assert!(wl.format_output(&synthetic_report(1_234_567_890)).ends_with("Time: 1.234\n"));
    }

    #[test]
    fn pipe_processes_and_threads() {
        for flags in ["pipe -l 2000", "pipe -l 2000 -T", "pipe -l 500 -n -s 8", "pipe -l 500 --classic"] {
            let r = run_native(&argv(flags), &NativeOptions { builtin: true, ..Default::default() }).unwrap();
            assert!(r.metric > 0.0, "{flags}");
            let workers = &r.tasks[r.tasks.len() - 2..];
            for w in workers {
                assert_eq!(w.comm, "sched-pipe", "{flags}");
                assert!(w.nr_switches >= 1, "{flags}: {w:?}");
            }
            assert_eq!(r.tasks.len(), if flags.contains("-T") { 3 } else { 2 }, "{flags}");
            // A blocking ping-pong sleeps in nearly every loop; the non-blocking one (-n) sleeps
            // in epoll_wait() only when its partner's reply is not there yet, which on two free
            // CPUs it often is, so on a busy machine it may be preempted more often than it
            // sleeps (seen once in CI beside another job).
            if !flags.contains("-n") {
                assert!(sum(&r, |t| t.nr_voluntary_switches) >= sum(&r, |t| t.nr_involuntary_switches), "{flags}");
            }
        }
    }

    #[test]
    fn hackbench_pinned() {
        let opts = NativeOptions { pin: Some(vec![0]), trace_buffer_kb: None, builtin: true };
        for flags in ["hackbench -g 1 -f 4 -l 20", "hackbench -g 1 -f 4 -l 20 -p -T", "messaging -g 1 -l 5"] {
            let r = run_native(&argv(flags), &opts).unwrap();
            assert!(r.output.contains("Time: ") || r.output.contains("Total time:"), "{}", r.output);
            let f = if flags.starts_with("messaging") { 20 } else { 4 };
            assert_eq!(r.tasks.len(), 1 + 2 * f, "{flags}");
            // Everything on CPU 0: no migrations after the fork.
            assert!(r.tasks.iter().all(|t| t.nr_migrations <= 1), "{flags}: {:?}", r.tasks);
        }
    }
}
