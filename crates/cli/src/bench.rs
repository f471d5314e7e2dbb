//! `schedlab bench`: simulator throughput in scheduler events per CPU-second.
//!
//! Each case is a fixed workload on a fixed machine. An "event" is one engine event handled
//! (a step end, tick, hrtick, timer, IPI, idle exit, fork or balance kick); cancelled events
//! that were popped and dropped are counted apart as "stale". The rate divides events by the
//! CPU time of the simulating thread (`/proc/thread-self/schedstat`, in ns), which a shared,
//! noisy machine disturbs far less than wall time.
//!
//! Every case runs in a fresh child process (this binary, `bench --child-case N`), so its
//! peak RSS (`ru_maxrss` from `wait4()`) is the whole process's for that case alone, not
//! what earlier cases left in the allocator. With `--scaling`, the CPU time per event of
//! growing task counts, machines and simulated times is printed as a ratio to the smallest
//! case of its series. With `--compare-scxsim PATH`, the rt-app files of `data/bench/` run
//! under schedlab and under that scxsim in interleaved pairs, and the ratio of their CPU times
//! is printed (median over the pairs).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimSetup};
use sim::ipc::ObjectSpec;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

use crate::args::BenchArgs;

struct Case {
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
fn benchmark(topology: &str, argv: &str) -> anyhow::Result<Case> {
    let topology = Topology::by_name(topology).map_err(anyhow::Error::msg)?;
    let argv: Vec<String> = argv.split_whitespace().map(String::from).collect();
    let wl = lab::runner::resolve_workload_on(&argv, &[], topology.nr_cpus() as u32).map_err(anyhow::Error::msg)?;
    Ok(Case { topology, tasks: wl.tasks, objects: wl.objects, seconds: None, check: false })
}

/// A case as the parent knows it: built only in the child that runs it, so that no other
/// case's task programs sit in the child's memory.
struct CaseDef {
    name: String,
    /// For the scaling series: (series, size).
    series: Option<(&'static str, u32)>,
    build: Box<dyn Fn(u64) -> anyhow::Result<Case>>,
}

const TASKS_SERIES: &str = "tasks, smp:4, 10 s";
const CPUS_SERIES: &str = "CPUs, 1000 tasks, 1 s";
const TIME_SERIES: &str = "sim s, smp:4, 100 tasks";

/// Every case, the rows first, then the scaling series: tasks 10..10,000 on smp:4 (10 s),
/// 2..512 CPUs with 1000 tasks, and 1..100 simulated seconds of 100 tasks on smp:4.
fn case_defs() -> Vec<CaseDef> {
    let row = |name: &str, topology: &'static str, argv: &'static str, check: bool| CaseDef {
        name: name.to_string(),
        series: None,
        build: Box::new(move |_| {
            let mut c = benchmark(topology, argv)?;
            c.check = check;
            Ok(c)
        }),
    };
    // `seconds`: fixed, or `None` for `bench --seconds`.
    let hogs = |name: String, series, cpus: u32, n: u32, seconds: Option<u64>| CaseDef {
        name,
        series,
        build: Box::new(move |default_s| {
            let seconds = Some(seconds.unwrap_or(default_s));
            Ok(Case { topology: Topology::smp(cpus), tasks: mix(n), objects: vec![], seconds, check: false })
        }),
    };
    let scaled = |series: &'static str, size: u32, cpus: u32, n: u32, seconds: u64| {
        hogs(format!("scaling {series} {size}"), Some((series, size)), cpus, n, Some(seconds))
    };
    let mut v = vec![
        row("smp:2 pipe ping-pong", "smp:2", "pipe -l 1000000", false),
        row("smp:1 pipe pinned", "smp:1", "pipe -l 500000", false),
        hogs("smp:1 2 tasks".into(), None, 1, 2, None),
        hogs("smp:1 16 tasks".into(), None, 1, 16, None),
        hogs("smp:1 1000 tasks".into(), None, 1, 1000, None),
        row("spr-2s-192 hackbench", "spr-2s-192", "hackbench -g 8 -l 100", false),
        row("spr-2s-192 hackbench --check", "spr-2s-192", "hackbench -g 8 -l 100", true),
        row("spr-2s-192 hackbench g40", "spr-2s-192", "hackbench -g 40 -l 100", false),
        row("spr-2s-192 hb g2 plain", "spr-2s-192", "hackbench -g 2 -l 50", false),
        row("spr-2s-192 hb g2 --check", "spr-2s-192", "hackbench -g 2 -l 50", true),
    ];
    // 10 simulated seconds: in one second the 10-task case is 0.1 M events (20 ms of CPU) and
    // its CPU time, the ratio's denominator, swung by 1.5x between runs of one binary.
    v.extend([10, 100, 1000, 10_000].map(|n| scaled(TASKS_SERIES, n, 4, n, 10)));
    v.extend([2, 8, 32, 128, 512].map(|c| scaled(CPUS_SERIES, c, c, 1000, 1)));
    v.extend([1, 10, 100].map(|s| scaled(TIME_SERIES, s, 4, 100, u64::from(s))));
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
        groups: Vec::new(),
    };
    let sim = Sim::new(setup).map_err(anyhow::Error::msg)?;
    let (t0, c0) = (Instant::now(), thread_cpu_ns());
    let report = sim.run()?;
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = c0.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a) as f64 / 1e9);
    Ok(Timed { report, wall_s, cpu_s })
}

/// What a child reports of its case.
struct ChildResult {
    tasks: u64,
    simulated_ns: u64,
    events: u64,
    stale: u64,
    wall_ns: u64,
    /// CPU time of the simulating thread, if `/proc/thread-self/schedstat` was readable.
    cpu_ns: Option<u64>,
    /// Peak RSS of the child process, KiB.
    peak_kib: u64,
}

/// `bench --child-case N`: runs case N in this process and prints one line of figures.
fn child(seconds: u64, index: usize) -> anyhow::Result<()> {
    let defs = case_defs();
    let def = defs.get(index).ok_or_else(|| anyhow::anyhow!("no bench case {index}"))?;
    let case = (def.build)(seconds)?;
    let tasks = case.tasks.len();
    let t = run_case(case)?;
    println!(
        "{tasks} {} {} {} {} {}",
        t.report.simulated_ns,
        t.report.events,
        t.report.stale_events,
        (t.wall_s * 1e9) as u64,
        t.cpu_s.map_or(-1, |c| (c * 1e9) as i64)
    );
    Ok(())
}

/// A finished child process: its stdout, and its own CPU time (user + system, ns) and peak
/// RSS (KiB) as `wait4()` reports them.
struct Measured {
    stdout: String,
    stderr: String,
    success: bool,
    cpu_ns: u64,
    peak_kib: u64,
}

fn run_measured(mut cmd: Command) -> anyhow::Result<Measured> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        anyhow::bail!("no pipe to the child's output");
    };
    // stderr on a thread so that neither pipe can fill up and stall the child.
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).map(|_| s)
    });
    let mut stdout = String::new();
    out.read_to_string(&mut stdout)?;
    let stderr = err_thread.join().map_err(|_| anyhow::anyhow!("stderr reader panicked"))??;
    let (status, cpu_ns, peak_kib) = native::sys::wait_with_rusage(&child)?;
    Ok(Measured { stdout, stderr, success: status.success(), cpu_ns, peak_kib })
}

fn run_child(seconds: u64, index: usize) -> anyhow::Result<ChildResult> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["bench", "--seconds", &seconds.to_string(), "--child-case", &index.to_string()]);
    let m = run_measured(cmd)?;
    if !m.success {
        anyhow::bail!("bench case {index} failed: {}", m.stderr.trim());
    }
    let f: Vec<i64> = m.stdout.split_whitespace().map(str::parse).collect::<Result<_, _>>()?;
    anyhow::ensure!(f.len() == 6, "bench case {index}: unexpected child output {:?}", m.stdout);
    Ok(ChildResult {
        tasks: f[0] as u64,
        simulated_ns: f[1] as u64,
        events: f[2] as u64,
        stale: f[3] as u64,
        wall_ns: f[4] as u64,
        cpu_ns: (f[5] >= 0).then_some(f[5] as u64),
        peak_kib: m.peak_kib,
    })
}

/// Case `index` run `repeat` times, each in its own child: the run of median CPU time (a
/// simulation is deterministic, so the runs differ only in time), with the largest peak RSS.
fn run_repeated(seconds: u64, index: usize, repeat: u32) -> anyhow::Result<ChildResult> {
    let mut runs = (0..repeat.max(1)).map(|_| run_child(seconds, index)).collect::<anyhow::Result<Vec<_>>>()?;
    let peak_kib = runs.iter().map(|r| r.peak_kib).max().unwrap_or(0);
    runs.sort_by(|a, b| a.cpu_s().total_cmp(&b.cpu_s()));
    let mut r = runs.swap_remove(runs.len() / 2);
    r.peak_kib = peak_kib;
    Ok(r)
}

impl ChildResult {
    fn cpu_s(&self) -> f64 {
        self.cpu_ns.unwrap_or(self.wall_ns) as f64 / 1e9
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

pub fn bench(a: &BenchArgs) -> anyhow::Result<()> {
    if let Some(i) = a.child_case {
        return child(a.seconds, i);
    }
    if let Some(path) = &a.compare_scxsim
        && !path.is_file()
    {
        return crate::setup::user(format!("--compare-scxsim {}: no such executable", path.display()));
    }
    let wanted = |name: &str| a.only.as_ref().is_none_or(|o| name.contains(o.as_str()));
    let defs = case_defs();
    if a.repeat > 1 {
        println!("# each case run {} times: the run of median CPU time, the largest peak RSS", a.repeat);
    }
    println!(
        "{:<26} {:>6} {:>9} {:>10} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "case", "tasks", "sim_ms", "events", "stale", "wall_ms", "cpu_ms", "M_ev/cpu-s", "peak_MiB"
    );
    for (i, def) in defs.iter().enumerate() {
        if def.series.is_some() || !wanted(&def.name) {
            continue;
        }
        let r = run_repeated(a.seconds, i, a.repeat)?;
        println!(
            "{:<26} {:>6} {:>9.1} {:>10} {:>9} {:>9.1} {:>9} {:>10.2} {:>9}",
            def.name,
            r.tasks,
            r.simulated_ns as f64 / 1e6,
            r.events,
            r.stale,
            r.wall_ns as f64 / 1e6,
            r.cpu_ns.map_or("-".to_string(), |c| format!("{:.1}", c as f64 / 1e6)),
            r.events as f64 / r.cpu_s() / 1e6,
            mib(r.peak_kib),
        );
    }
    if a.scaling {
        scaling(a, &defs)?;
    }
    if let Some(path) = &a.compare_scxsim {
        compare_scxsim(path, a.pairs, &wanted)?;
    }
    Ok(())
}

/// Runs the scaling series and prints CPU ns per event with its ratio to the series' first
/// size, the whole process's peak RSS per case and per task, then the goals.
fn scaling(a: &BenchArgs, defs: &[CaseDef]) -> anyhow::Result<()> {
    println!("\nscaling: CPU ns per event and its ratio to the series' first size; peak RSS of the whole process");
    println!(
        "{:<24} {:>6} {:>10} {:>9} {:>7} {:>9} {:>9}",
        "series", "size", "events", "ns/event", "ratio", "peak_MiB", "KiB/task"
    );
    // (series, size, ns per event, peak KiB)
    let mut seen: Vec<(&'static str, u32, f64, u64)> = Vec::new();
    for (i, def) in defs.iter().enumerate() {
        let Some((series, size)) = def.series else { continue };
        if a.only.as_ref().is_some_and(|o| !def.name.contains(o.as_str())) {
            continue;
        }
        let r = run_repeated(a.seconds, i, a.repeat)?;
        let per_event = r.cpu_s() * 1e9 / r.events.max(1) as f64;
        let first = seen.iter().find(|s| s.0 == series).map_or(per_event, |s| s.2);
        seen.push((series, size, per_event, r.peak_kib));
        println!(
            "{series:<24} {size:>6} {:>10} {per_event:>9.1} {:>7.2} {:>9} {:>9.2}",
            r.events,
            per_event / first,
            mib(r.peak_kib),
            r.peak_kib as f64 / r.tasks.max(1) as f64,
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
    if let Some(s) = get(TASKS_SERIES, 10_000) {
        println!("goal: peak RSS at 10000 tasks = {:.2} KiB per task (<= 2)", s.3 as f64 / 10_000.0);
    }
    if let (Some(a), Some(b)) = (get(TIME_SERIES, 1), get(TIME_SERIES, 100)) {
        println!("goal: peak RSS at 100 simulated s / at 1 s = {:.2} (flat)", b.3 as f64 / a.3 as f64);
    }
    Ok(())
}

/// The rt-app inputs of the scxsim comparison (`data/bench/`), built in so that the
/// comparison runs from any directory: (name, JSON, CPUs).
const RTAPP_INPUTS: [(&str, &str, u32); 2] = [
    ("rtapp-4cpu-16t-10s", include_str!("../../../data/bench/rtapp-4cpu-16t-10s.json"), 4),
    ("rtapp-64cpu-256t-10s", include_str!("../../../data/bench/rtapp-64cpu-256t-10s.json"), 64),
];

/// The median of a non-empty list.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// schedlab (`run --topology smp:N rtapp FILE`) against scxsim (`scxsim FILE --cpus N`, its
/// default scx_simple scheduler) on the same file: `pairs` pairs per input, the two runs of a
/// pair back to back, the order alternating from pair to pair so that a drift in the machine's
/// load falls on both sides. Each side is a whole process; its CPU time and peak RSS come from
/// `wait4()`. Prints the median CPU time of each side and the median of the per-pair ratios.
fn compare_scxsim(scxsim: &std::path::Path, pairs: u32, wanted: &dyn Fn(&str) -> bool) -> anyhow::Result<()> {
    anyhow::ensure!(pairs >= 1, "--pairs: at least 1");
    let dir = std::env::temp_dir().join(format!("schedlab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = (|| {
        println!(
            "\nscxsim comparison ({}): whole-process CPU s, median of {pairs} interleaved pairs",
            scxsim.display()
        );
        println!(
            "{:<22} {:>5} {:>12} {:>12} {:>12} {:>12} {:>9}",
            "input", "CPUs", "schedlab_s", "scxsim_s", "schedlab_MiB", "scxsim_MiB", "ratio"
        );
        for (name, json, cpus) in RTAPP_INPUTS {
            if !wanted(&format!("scxsim {name}")) {
                continue;
            }
            let file = dir.join(format!("{name}.json"));
            std::fs::write(&file, json)?;
            let ours = || {
                let mut c = Command::new(std::env::current_exe()?);
                c.args(["run", "--quiet", "--topology", &format!("smp:{cpus}"), "rtapp"]).arg(&file);
                run_side("schedlab", c)
            };
            let theirs = || {
                let mut c = Command::new(scxsim);
                c.arg(&file).args(["--cpus", &cpus.to_string()]);
                run_side("scxsim", c)
            };
            let (mut a, mut b, mut ratios, mut peak) = (vec![], vec![], vec![], (0, 0));
            for k in 0..pairs {
                let (s, x) = if k % 2 == 0 {
                    let s = ours()?;
                    (s, theirs()?)
                } else {
                    let x = theirs()?;
                    (ours()?, x)
                };
                ratios.push(x.cpu_ns as f64 / s.cpu_ns.max(1) as f64);
                a.push(s.cpu_ns as f64 / 1e9);
                b.push(x.cpu_ns as f64 / 1e9);
                peak = (peak.0.max(s.peak_kib), peak.1.max(x.peak_kib));
            }
            println!(
                "{name:<22} {cpus:>5} {:>12.3} {:>12.3} {:>12} {:>12} {:>8.2}x",
                median(a),
                median(b),
                mib(peak.0),
                mib(peak.1),
                median(ratios)
            );
        }
        println!("ratio: scxsim CPU time / schedlab CPU time per pair (above 1: schedlab is faster)");
        // What each side simulates, so that the ratio is read as the cost of different models:
        // the default preset puts an rt-app file's tasks in their session's autogroup.
        println!(
            "schedlab: `run --topology smp:N rtapp FILE` (default kernel preset, EEVDF, its autogroup); \
             scxsim: `FILE --cpus N` (scx_simple, no task groups)"
        );
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// One side of a comparison pair; a failure names the side and its last line of stderr.
fn run_side(side: &str, cmd: Command) -> anyhow::Result<Measured> {
    let m = run_measured(cmd).map_err(|e| anyhow::anyhow!("{side}: cannot run: {e}"))?;
    if !m.success {
        let last = m.stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        anyhow::bail!("{side} failed: {last}");
    }
    Ok(m)
}
