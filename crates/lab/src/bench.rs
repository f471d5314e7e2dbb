//! The simulator benchmark behind `schedlab bench`: throughput in scheduler events per CPU-second.
//!
//! Each case is a fixed workload on a fixed machine. An "event" is one engine event handled
//! (a step end, tick, hrtick, timer, IPI, idle exit, fork or balance kick); cancelled events
//! that were popped and dropped are counted apart as "stale". The rate divides events by the
//! CPU time of the simulating thread (`/proc/thread-self/schedstat`, in ns), which a shared,
//! noisy machine disturbs far less than wall time. Memory is the process's peak resident size
//! after the case, from `/proc/self/status` (it only grows across cases). With `--scaling`,
//! the CPU time per event of growing task counts and machines is printed as a ratio to the
//! smallest case.

use std::time::Instant;

use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimSetup};
use sim::ipc::ObjectSpec;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

use crate::LabError;

struct Case {
    name: &'static str,
    topology: Topology,
    tasks: Vec<TaskSpec>,
    objects: Vec<ObjectSpec>,
    /// Simulated seconds, or `None` for workloads that end by themselves.
    seconds: Option<u64>,
    /// Run with the invariant checker after every event (`run --check`).
    check: bool,
}

/// Short bursts and sleeps: a wakeup-heavy mix (one task in four is a CPU hog).
fn mix(n: u32) -> Vec<TaskSpec> {
    (0..n)
        .map(|i| {
            if i % 4 == 0 {
                TaskSpec::new(
                    format!("hog{i}"),
                    vec![Op::Run { ns: 5_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }],
                )
            } else {
                let run = 20_000 + u64::from(i % 7) * 10_000;
                let sleep = 50_000 + u64::from(i % 5) * 40_000;
                TaskSpec::new(
                    format!("s{i}"),
                    vec![
                        Op::Run { ns: run },
                        Op::Sleep { ns: sleep },
                        Op::Loop { target: 0, slot: 0, count: u32::MAX },
                    ],
                )
            }
        })
        .collect()
}

/// A benchmark model as `schedlab run` would build it.
fn benchmark(name: &'static str, topology: &str, argv: &str) -> Result<Case, LabError> {
    let topology = Topology::by_name(topology).map_err(LabError::Internal)?;
    let argv: Vec<String> = argv.split_whitespace().map(String::from).collect();
    let wl = crate::runner::resolve_workload_on(&argv, &[], topology.nr_cpus() as u32).map_err(LabError::Internal)?;
    Ok(Case { name, topology, tasks: wl.tasks, objects: wl.objects, seconds: None, check: false })
}

fn cases(seconds: u64) -> Result<Vec<Case>, LabError> {
    let hogs = |name, cpus, n| Case {
        name,
        topology: Topology::smp(cpus),
        tasks: mix(n),
        objects: vec![],
        seconds: Some(seconds),
        check: false,
    };
    let checked = |mut c: Case| {
        c.check = true;
        c
    };
    Ok(vec![
        benchmark("smp:2 pipe ping-pong", "smp:2", "pipe -l 1000000")?,
        benchmark("smp:1 pipe pinned", "smp:1", "pipe -l 500000")?,
        hogs("smp:1 2 tasks", 1, 2),
        hogs("smp:1 16 tasks", 1, 16),
        hogs("smp:1 1000 tasks", 1, 1000),
        benchmark("spr-2s-192 hackbench", "spr-2s-192", "hackbench -g 8 -l 100")?,
        benchmark("spr-2s-192 hackbench g40", "spr-2s-192", "hackbench -g 40 -l 100")?,
        benchmark("spr-2s-192 hb g2 plain", "spr-2s-192", "hackbench -g 2 -l 50")?,
        checked(benchmark("spr-2s-192 hb g2 --check", "spr-2s-192", "hackbench -g 2 -l 50")?),
    ])
}

/// The scaling series: (series, size, case). Per-event cost is compared within a series.
fn scaling_cases() -> Vec<(&'static str, u32, Case)> {
    let case = |cpus: u32, n: u32| Case {
        name: "scaling",
        topology: Topology::smp(cpus),
        tasks: mix(n),
        objects: vec![],
        seconds: Some(1),
        check: false,
    };
    let mut v: Vec<(&'static str, u32, Case)> =
        [10, 100, 1000, 10_000].into_iter().map(|n| ("tasks on smp:4", n, case(4, n))).collect();
    v.extend([32, 128, 512].into_iter().map(|c| ("CPUs, 1000 tasks", c, case(c, 1000))));
    v
}

/// CPU time of the calling thread in ns (`/proc/thread-self/schedstat`, first field).
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// The outcome of one timed case.
struct Timed {
    report: sim::engine::SimReport,
    wall_s: f64,
    cpu_s: Option<f64>,
}

fn run_case(case: Case) -> Result<Timed, LabError> {
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology: case.topology,
        seed: 1,
        limits: Limits {
            max_events: u64::MAX,
            max_time_ns: case.seconds.map_or(60_000_000_000, |s| s * 1_000_000_000),
        },
        tasks: case.tasks,
        objects: case.objects,
        check_invariants: case.check,
        groups: Vec::new(),
    };
    let sim = Sim::new(setup).map_err(LabError::Internal)?;
    let (t0, c0) = (Instant::now(), thread_cpu_ns());
    let report = sim.run().map_err(|v| LabError::Internal(v.to_string()))?;
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = c0.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a) as f64 / 1e9);
    Ok(Timed { report, wall_s, cpu_s })
}

/// Peak resident set size of this process, in KiB (`VmHWM`), if /proc is readable.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Memory per simulated task: the growth of the resident set over a run of `n` sleepers on one
/// CPU, measured first so that the other cases do not hide it.
fn memory_per_task_kib(n: u32) -> Result<Option<f64>, LabError> {
    let before = current_rss_kib();
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(1),
        seed: 1,
        limits: Limits { max_events: u64::MAX, max_time_ns: 200_000_000 },
        tasks: mix(n),
        objects: vec![],
        check_invariants: false,
        groups: Vec::new(),
    };
    let sim = Sim::new(setup).map_err(LabError::Internal)?;
    let report = sim.run().map_err(|v| LabError::Internal(v.to_string()))?;
    let after = current_rss_kib();
    drop(report);
    Ok(before.zip(after).map(|(b, a)| a.saturating_sub(b) as f64 / f64::from(n)))
}

fn current_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Which cases `run` measures.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only the cases whose name contains this.
    pub only: Option<String>,
    /// Simulated seconds of the hog cases.
    pub seconds: u64,
    /// Also the CPU time per event of growing task counts and machines.
    pub scaling: bool,
}

/// Runs the cases, handing each line of the table to `print` as soon as it is measured.
pub fn run(a: &Options, mut print: impl FnMut(&str)) -> Result<(), LabError> {
    if a.only.is_none()
        && let Some(kib) = memory_per_task_kib(20_000)?
    {
        print(&format!("memory: {kib:.2} KiB per simulated task (20000 tasks on smp:1, RSS growth incl. the report)"));
    }
    print(&format!(
        "{:<26} {:>6} {:>9} {:>10} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "case", "tasks", "sim_ms", "events", "stale", "wall_ms", "cpu_ms", "M_ev/cpu-s", "peak_MiB"
    ));
    for case in cases(a.seconds)? {
        if a.only.as_ref().is_some_and(|o| !case.name.contains(o.as_str())) {
            continue;
        }
        let (name, ntasks) = (case.name, case.tasks.len());
        let t = run_case(case)?;
        let cpu = t.cpu_s.unwrap_or(t.wall_s);
        print(&format!(
            "{:<26} {:>6} {:>9.1} {:>10} {:>9} {:>9.1} {:>9} {:>10.2} {:>9}",
            name,
            ntasks,
            t.report.simulated_ns as f64 / 1e6,
            t.report.events,
            t.report.stale_events,
            t.wall_s * 1e3,
            t.cpu_s.map_or("-".to_string(), |c| format!("{:.1}", c * 1e3)),
            t.report.events as f64 / cpu / 1e6,
            peak_rss_kib().map_or("-".to_string(), |k| format!("{:.1}", k as f64 / 1024.0)),
        ));
    }
    if a.scaling {
        print("\nscaling (1 simulated s each): CPU ns per event, and its ratio to the series' first size");
        let mut base: Option<(&str, f64)> = None;
        for (series, size, case) in scaling_cases() {
            let t = run_case(case)?;
            let per_event = t.cpu_s.unwrap_or(t.wall_s) * 1e9 / t.report.events.max(1) as f64;
            let first = match base {
                Some((s, b)) if s == series => b,
                _ => {
                    base = Some((series, per_event));
                    per_event
                }
            };
            print(&format!(
                "{series:<18} {size:>6}: {:>10} events, {per_event:>8.1} ns/event, ratio {:.2}",
                t.report.events,
                per_event / first
            ));
        }
    }
    Ok(())
}
