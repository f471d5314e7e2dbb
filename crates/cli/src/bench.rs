//! `schedlab bench`: simulator throughput in scheduler events per CPU-second.
//!
//! Each case is a fixed workload on a fixed machine. An "event" is one engine event handled
//! (a step end, tick, hrtick, timer, IPI, idle exit, fork or balance kick); cancelled events
//! that were popped and dropped are counted apart as "stale". The rate divides events by the
//! CPU time of the simulating thread (`/proc/thread-self/schedstat`, in ns), which a shared,
//! noisy machine disturbs far less than wall time. Memory is the whole process's peak resident
//! size during the case (`VmHWM` of `/proc/self/status`, reset before each case through
//! `/proc/self/clear_refs`). With `--scaling`, the CPU time per event of growing task counts,
//! machines and simulated times is printed as a ratio to the smallest case of its series.

use std::time::Instant;

use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimSetup};
use sim::ipc::ObjectSpec;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

use crate::args::BenchArgs;

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
fn benchmark(name: &'static str, topology: &str, argv: &str) -> anyhow::Result<Case> {
    let topology = Topology::by_name(topology).map_err(anyhow::Error::msg)?;
    let argv: Vec<String> = argv.split_whitespace().map(String::from).collect();
    let wl = lab::runner::resolve_workload_on(&argv, &[], topology.nr_cpus() as u32).map_err(anyhow::Error::msg)?;
    Ok(Case { name, topology, tasks: wl.tasks, objects: wl.objects, seconds: None, check: false })
}

fn cases(seconds: u64) -> anyhow::Result<Vec<Case>> {
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

/// One size of a scaling series: per-event cost is compared within a series.
struct ScalingCase {
    series: &'static str,
    size: u32,
    case: Case,
}

/// The scaling series of issue-sized machines: tasks 10..10,000 on smp:4, 2..512 CPUs with
/// 1000 tasks, and 1..100 simulated seconds of 100 tasks on smp:4 (memory must stay flat).
fn scaling_cases() -> Vec<ScalingCase> {
    let case = |cpus: u32, n: u32, seconds: u64| Case {
        name: "scaling",
        topology: Topology::smp(cpus),
        tasks: mix(n),
        objects: vec![],
        seconds: Some(seconds),
        check: false,
    };
    let mut v: Vec<ScalingCase> = [10, 100, 1000, 10_000]
        .into_iter()
        .map(|n| ScalingCase { series: TASKS_SERIES, size: n, case: case(4, n, 1) })
        .collect();
    v.extend(
        [2, 8, 32, 128, 512].into_iter().map(|c| ScalingCase { series: CPUS_SERIES, size: c, case: case(c, 1000, 1) }),
    );
    v.extend(
        [1, 10, 100].into_iter().map(|s| ScalingCase { series: TIME_SERIES, size: s as u32, case: case(4, 100, s) }),
    );
    v
}

const TASKS_SERIES: &str = "tasks, smp:4, 1 s";
const CPUS_SERIES: &str = "CPUs, 1000 tasks, 1 s";
const TIME_SERIES: &str = "sim s, smp:4, 100 tasks";

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

fn run_case(case: Case) -> anyhow::Result<Timed> {
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
    };
    let sim = Sim::new(setup).map_err(anyhow::Error::msg)?;
    let (t0, c0) = (Instant::now(), thread_cpu_ns());
    let report = sim.run()?;
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
fn memory_per_task_kib(n: u32) -> anyhow::Result<Option<f64>> {
    let before = current_rss_kib();
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(1),
        seed: 1,
        limits: Limits { max_events: u64::MAX, max_time_ns: 200_000_000 },
        tasks: mix(n),
        objects: vec![],
        check_invariants: false,
    };
    let sim = Sim::new(setup).map_err(anyhow::Error::msg)?;
    let report = sim.run()?;
    let after = current_rss_kib();
    drop(report);
    Ok(before.zip(after).map(|(b, a)| a.saturating_sub(b) as f64 / f64::from(n)))
}

/// Resets the process's peak resident size to its current size (`/proc/self/clear_refs`, "5"),
/// so that the next `peak_rss_kib` is the peak of one case. False where the kernel refuses.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn current_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub fn bench(a: &BenchArgs) -> anyhow::Result<()> {
    if a.only.is_none()
        && let Some(kib) = memory_per_task_kib(20_000)?
    {
        println!("memory: {kib:.2} KiB per simulated task (20000 tasks on smp:1, RSS growth incl. the report)");
    }
    println!(
        "{:<26} {:>6} {:>9} {:>10} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "case", "tasks", "sim_ms", "events", "stale", "wall_ms", "cpu_ms", "M_ev/cpu-s", "peak_MiB"
    );
    let per_case_peak = reset_peak_rss();
    for case in cases(a.seconds)? {
        if a.only.as_ref().is_some_and(|o| !case.name.contains(o.as_str())) {
            continue;
        }
        let (name, ntasks) = (case.name, case.tasks.len());
        reset_peak_rss();
        let t = run_case(case)?;
        let cpu = t.cpu_s.unwrap_or(t.wall_s);
        println!(
            "{:<26} {:>6} {:>9.1} {:>10} {:>9} {:>9.1} {:>9} {:>10.2} {:>9}",
            name,
            ntasks,
            t.report.simulated_ns as f64 / 1e6,
            t.report.events,
            t.report.stale_events,
            t.wall_s * 1e3,
            t.cpu_s.map_or("-".to_string(), |c| format!("{:.1}", c * 1e3)),
            t.report.events as f64 / cpu / 1e6,
            mib(peak_rss_kib()),
        );
    }
    if !per_case_peak {
        println!("(peak_MiB: /proc/self/clear_refs refused, so each figure is the peak so far)");
    }
    if a.scaling {
        scaling(a.only.as_deref())?;
    }
    Ok(())
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("-".to_string(), |k| format!("{:.1}", k as f64 / 1024.0))
}

/// Runs the scaling series and prints CPU ns per event with its ratio to the series' first
/// size, the whole process's peak RSS per case and per task, then the goals.
fn scaling(only: Option<&str>) -> anyhow::Result<()> {
    println!("\nscaling: CPU ns per event and its ratio to the series' first size; peak RSS of the whole process");
    println!(
        "{:<24} {:>6} {:>10} {:>9} {:>7} {:>9} {:>9}",
        "series", "size", "events", "ns/event", "ratio", "peak_MiB", "KiB/task"
    );
    // (series, size) -> (ns per event, peak KiB)
    let mut seen: Vec<(&'static str, u32, f64, Option<u64>)> = Vec::new();
    for ScalingCase { series, size, case } in scaling_cases() {
        if only.is_some_and(|o| !format!("{series} {size}").contains(o)) {
            continue;
        }
        let ntasks = case.tasks.len();
        reset_peak_rss();
        let t = run_case(case)?;
        let peak = peak_rss_kib();
        let per_event = t.cpu_s.unwrap_or(t.wall_s) * 1e9 / t.report.events.max(1) as f64;
        let first = seen.iter().find(|s| s.0 == series).map_or(per_event, |s| s.2);
        seen.push((series, size, per_event, peak));
        println!(
            "{series:<24} {size:>6} {:>10} {per_event:>9.1} {:>7.2} {:>9} {:>9}",
            t.report.events,
            per_event / first,
            mib(peak),
            peak.map_or("-".to_string(), |k| format!("{:.2}", k as f64 / ntasks as f64)),
        );
    }
    let get = |series: &str, size: u32| seen.iter().find(|s| s.0 == series && s.1 == size);
    let ratio = |series: &str, big: u32, small: u32| Some(get(series, big)?.2 / get(series, small)?.2);
    if let Some(r) = ratio(TASKS_SERIES, 10_000, 10) {
        println!("goal: ns/event at 10000 tasks / at 10 tasks = {r:.2} (<= 1.5)");
    }
    if let Some(r) = ratio(CPUS_SERIES, 512, 32) {
        println!("goal: ns/event at 512 CPUs / at 32 CPUs = {r:.2} (<= 2)");
    }
    if let Some(k) = get(TASKS_SERIES, 10_000).and_then(|s| s.3) {
        println!("goal: peak RSS at 10000 tasks = {:.2} KiB per task (<= 2)", k as f64 / 10_000.0);
    }
    if let (Some(a), Some(b)) = (get(TIME_SERIES, 1).and_then(|s| s.3), get(TIME_SERIES, 100).and_then(|s| s.3)) {
        println!("goal: peak RSS at 100 simulated s / at 1 s = {:.2} (flat)", b as f64 / a as f64);
    }
    Ok(())
}
