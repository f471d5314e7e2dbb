//! Swarm simulation testing: a random machine, kernel, feature set and workload mix per seed,
//! run with every invariant checked, then run again and compared bit for bit.
//!
//! "Swarm" (Groce et al., ISSTA 2012): each seed also switches whole features on or off (the
//! preemption model, HRTICK, delayed dequeue, a background hog, patches), so that a rare
//! combination is not drowned by the common ones. A seed is its own reproducer:
//! `schedlab-fuzz swarm --first SEED --seeds 1` replays it; a failure is shrunk greedily (fewer
//! tokens, no background, fewer CPUs, a shorter run) while it keeps failing.

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};

use sim::config::Limits;
use sim::engine::{Sim, SimReport, SimSetup};
use sim::topology::Topology;

use crate::rng::Rng;

/// One random configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub seed: u64,
    pub topology: String,
    /// A SPEC: preset, then patch, feature, sysctl and `preempt=`/`hz=` tokens.
    pub spec: Vec<String>,
    /// The foreground benchmark and the background ones.
    pub workload: Vec<String>,
    pub background: Vec<Vec<String>>,
    pub max_time_ns: u64,
    pub max_events: u64,
}

/// What went wrong with a scenario.
#[derive(Clone, Debug)]
pub struct Failure {
    pub scenario: Scenario,
    pub what: String,
}

const TOPOLOGIES: &[&str] = &["smp:1", "smp:2", "smp:3", "smp:4", "smp:8", "vm-2cpu", "desktop-8c16t", "rpi5"];

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// The scenario of `seed`.
pub fn scenario(seed: u64) -> Scenario {
    let mut rng = Rng::new(seed ^ 0x5741_524d_5357_4152);
    let topology =
        if rng.chance(1, 5) { format!("smp:{}", rng.range(1, 16)) } else { rng.pick(TOPOLOGIES).to_string() };
    let mut spec = vec![rng.pick(sim::kernel::KERNELS).name.to_string()];
    for _ in 0..rng.range(0, 4) {
        let f = rng.pick(sim::features::Feature::ALL).name();
        spec.push(if rng.chance(1, 2) { f.to_string() } else { format!("NO_{f}") });
    }
    if rng.chance(1, 3) {
        spec.push(format!("+{}", rng.pick(sim::kernel::PATCHES).name));
    }
    if rng.chance(1, 2) {
        spec.push(format!("preempt={}", rng.pick(&["none", "voluntary", "full", "lazy"])));
    }
    if rng.chance(1, 4) {
        spec.push(format!("hz={}", rng.pick(&["100", "250", "300", "1000"])));
    }
    if rng.chance(1, 4) {
        let (key, value) = match rng.below(4) {
            0 => ("base_slice_ns", rng.range(100_000, 10_000_000)),
            1 => ("migration_cost_ns", *rng.pick(&[0, 500_000, 5_000_000, u64::from(u32::MAX)])),
            2 => ("nr_migrate", rng.range(1, 64)),
            _ => ("tunable_scaling", rng.range(0, 2)),
        };
        spec.push(format!("{key}={value}"));
    }
    let workload = words(&match rng.below(9) {
        0 => format!(
            "hackbench -g {} -f {} -l {}{}{}",
            rng.range(1, 3),
            rng.range(1, 4),
            rng.range(1, 20),
            if rng.chance(1, 2) { " -p" } else { "" },
            if rng.chance(1, 2) { " -T" } else { "" }
        ),
        1 => format!(
            "messaging -g {} -l {}{}",
            rng.range(1, 2),
            rng.range(1, 10),
            if rng.chance(1, 2) { " -p" } else { "" }
        ),
        2 => format!("pipe -l {}{}", rng.range(10, 500), if rng.chance(1, 2) { " -T" } else { "" }),
        3 => format!("schbench -m {} -t {} -r 1", rng.range(1, 2), rng.range(1, 4)),
        4 => format!("lat_ctx -N 2 -s {} {}", rng.pick(&["0", "16"]), rng.range(2, 4)),
        5 => format!("netperf -t TCP_RR -l -{}", rng.range(10, 200)),
        6 => format!(
            "stress-ng --cpu {} --timeout 1{}",
            rng.range(1, 4),
            if rng.chance(1, 2) { " --cpu-load 50" } else { "" }
        ),
        7 => format!("pgbench -S -c {} -j 1 -t {}", rng.range(1, 4), rng.range(5, 50)),
        _ => format!("pipe -l {} -T", rng.range(10, 200)),
    });
    let background =
        if rng.chance(1, 4) { vec![words(&format!("stress-ng --cpu {}", rng.range(1, 3)))] } else { Vec::new() };
    Scenario {
        seed,
        topology,
        spec,
        workload,
        background,
        max_time_ns: rng.range(20, 150) * 1_000_000,
        max_events: 150_000,
    }
}

/// Builds the simulation of a scenario; `Err` if some part is refused (the generator made an
/// impossible combination, e.g. a patch the preset already has).
fn setup(s: &Scenario, check: bool) -> Result<SimSetup, String> {
    let variant = sim::kernel::parse_spec(&s.spec.join(" "), None).map_err(|e| e.to_string())?;
    let topology = Topology::by_name(&s.topology)?;
    let wl = lab::runner::resolve_workload_on(&s.workload, &s.background, topology.nr_cpus() as u32)?;
    Ok(SimSetup {
        sched: variant.config,
        topology,
        seed: s.seed,
        limits: Limits { max_events: s.max_events, max_time_ns: wl.time_limit(Some(s.max_time_ns), s.max_time_ns) },
        tasks: wl.tasks,
        objects: wl.objects,
        check_invariants: check,
        groups: Vec::new(),
    })
}

/// Everything a report says, as text: two runs are identical iff their digests are.
pub fn digest(r: &SimReport) -> String {
    let mut d = format!(
        "{} {} {} {:?} {:?} {:?}\n",
        r.simulated_ns, r.events, r.stale_events, r.stop, r.counters, r.idle_ns_per_cpu
    );
    let _ = writeln!(d, "{:?}", r.wakeup_latency.percentiles());
    for t in &r.tasks {
        let _ = writeln!(
            d,
            "{} {} {} {} {} {} {} {:?} {:?}",
            t.pid,
            t.comm,
            t.nice,
            t.sum_exec_runtime_ns,
            t.vruntime,
            t.util_avg,
            t.exited,
            t.stats.nr_switches,
            t.stats.wakeup_latency.percentiles()
        );
    }
    let _ = writeln!(d, "{:?} {:?}", r.marks, r.counts);
    for (id, h) in &r.histograms {
        let _ = writeln!(d, "{id} {:?}", h.percentiles());
    }
    d
}

/// Outcome of one scenario: `Ok(None)` if the generator's combination is refused as input,
/// `Ok(Some(events))` when it ran clean, `Err` on a finding.
pub fn check(s: &Scenario) -> Result<Option<u64>, String> {
    let run = |check: bool| -> Result<Option<SimReport>, String> {
        let Ok(setup) = setup(s, check) else { return Ok(None) };
        let sim = Sim::new(setup).map_err(|e| format!("Sim::new refused a resolved workload: {e}"))?;
        match catch_unwind(AssertUnwindSafe(|| sim.run())) {
            Ok(Ok(r)) => Ok(Some(r)),
            Ok(Err(v)) => Err(format!("invariant violation: {v}")),
            Err(p) => Err(format!("panic: {}", crate::panic_message(&p))),
        }
    };
    let Some(first) = run(true)? else { return Ok(None) };
    // The re-run without the checker: same seed, same report, and checking changes nothing.
    let second = run(false)?.ok_or("the second setup was refused")?;
    let (a, b) = (digest(&first), digest(&second));
    if a != b {
        let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(0);
        return Err(format!("determinism: the re-run differs at digest line {line}"));
    }
    Ok(Some(first.events))
}

/// Smaller scenarios that might fail the same way, simplest first.
fn candidates(s: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    if !s.background.is_empty() {
        out.push(Scenario { background: Vec::new(), ..s.clone() });
    }
    for i in 1..s.spec.len() {
        let mut c = s.clone();
        c.spec.remove(i);
        out.push(c);
    }
    for t in ["smp:1", "smp:2"] {
        if s.topology != t && s.topology != "smp:1" {
            out.push(Scenario { topology: t.into(), ..s.clone() });
        }
    }
    if s.max_time_ns > 1_000_000 {
        out.push(Scenario { max_time_ns: s.max_time_ns / 2, ..s.clone() });
    }
    if s.max_events > 1_000 {
        out.push(Scenario { max_events: s.max_events / 2, ..s.clone() });
    }
    out
}

/// Shrinks a failing scenario while it keeps failing (any finding counts).
pub fn shrink(mut s: Scenario) -> Scenario {
    'outer: for _ in 0..200 {
        for c in candidates(&s) {
            if check(&c).is_err() {
                s = c;
                continue 'outer;
            }
        }
        break;
    }
    s
}

/// Totals of a swarm session.
#[derive(Clone, Debug, Default)]
pub struct SwarmStats {
    pub seeds: u64,
    pub ran: u64,
    pub refused: u64,
    pub events: u64,
    pub failures: Vec<Failure>,
}

/// Runs seeds `first..first + count` (stopping early once `deadline` passes, if given).
pub fn swarm(first: u64, count: u64, deadline: Option<std::time::Instant>) -> SwarmStats {
    let mut st = SwarmStats::default();
    for seed in first..first.saturating_add(count) {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            break;
        }
        let s = scenario(seed);
        st.seeds += 1;
        match check(&s) {
            Ok(Some(events)) => {
                st.ran += 1;
                st.events += events;
            }
            Ok(None) => st.refused += 1,
            Err(what) => st.failures.push(Failure { scenario: shrink(s), what }),
        }
    }
    st
}
