//! lmbench `lat_ctx` (intel/lmbench `src/lat_ctx.c`, `lib_timing.c`; workloads.md §5):
//! `lat_ctx [-P parallelism] [-W warmup] [-N repetitions] [-s kbytes] processes…`.
//!
//! # Model (§5.3)
//!
//! * `lat_ctx` main (task 0) runs the phases one after another, each as children it spawns and
//!   waits for, as `benchmp` forks its measuring children:
//!   1. overhead: one process passes a 4-byte token through its own pipe and sums its buffer
//!      (`bread`), in repetitions of k iterations;
//!   2. for each process count N on the command line, in order: P ring leaders (P = `-P`),
//!      each forking N−1 ring members (own `mm` each) connected by N pipes. The leader sends
//!      the token once around the ring (warm-up trip), then times repetitions of k trips:
//!      write `p[0]`, read `p[N−1]`, `bread`; member i reads `p[i−1]`, `bread`s, writes `p[i]`.
//! * Each repetition is one sample (`LatStart`/`LatEnd` around k iterations) in the phase's
//!   histogram; the result is lmbench's: median per-iteration time / N − overhead, printed
//!   only when positive. All P rings of a phase feed one histogram (lmbench merges the
//!   children's samples before taking the median).
//! * Each phase is one `benchmp()` call with its control pipes: every child (ring leader)
//!   writes "ready" and runs untimed trips until the parent's "start" (which the parent sends
//!   once every child is ready, `-W` µs later), times its repetitions, writes "done", and runs
//!   untimed trips until the parent, holding every child's "done", asks for the results (the
//!   cooldown: other rings may still be timing); between trips a child polls its control pipe
//!   with a zero timeout (`Op::LoopWhileEmpty`), as `benchmp_interval()` does with `select()`.
//!   The leader then tells its members to stop (the parent kills them in lmbench) and passes
//!   the token once more so that each sees it.
//! * k is sized so a repetition lasts about lmbench's `enough` (5 ms; 1 s — `SHORT` — with
//!   `-P` > 1) from an a-priori estimate of [`HOP_NS`] per token hop.
//! * `bread` of `-s` KiB costs [`BREAD_NS_PER_KIB`] per KiB of CPU time; the cache refill after
//!   a switch is the engine's migration/cache model, not part of this program.
//! * Metric: `usecs_per_switch` of the first process count.
//!
//! Approximations: the overhead phase uses one pipe, not N_max of them; the baseline
//! single-copy run that `benchmp` performs before a `-P` run is skipped; k comes from the
//! estimate, not from `benchmp`'s timing of its own first intervals; ring members stop at a
//! byte in a pipe instead of a signal.

use sim::ipc::ObjectSpec;
use sim::program::Op;

use super::args::{OptDef, Style, getopt, int, opt};
use super::hist::Quantiles;
use super::prog::Prog;
use super::{BenchParams, Better, Built, IDS_PER_WORKLOAD, MetricSpec, View, WorkloadError, usage};

const BENCH: &str = "lat_ctx";
/// Histogram of the overhead phase (local id); phase j uses `HIST_RING + j`.
pub const HIST_OVERHEAD: u16 = 0;
/// Histogram of the first process count's rings.
pub const HIST_RING: u16 = 1;
/// lmbench's `TRIES`.
pub const TRIES: u32 = 11;
/// `MAXPROC`.
pub const MAXPROC: u32 = 2048;
/// A-priori cost of one hop (pipe write + wakeup + switch + read, §10.2), used only to size
/// the repetitions **\[estimate\]**.
pub const HOP_NS: u64 = 3_000;
/// `bread` CPU time per KiB summed **\[estimate\]** (≈4 longs per ns, hot cache).
pub const BREAD_NS_PER_KIB: u64 = 32;
const ENOUGH_NS: u64 = 5_000_000;
const SHORT_NS: u64 = 1_000_000_000;

/// lat_ctx flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatCtx {
    /// `-P` (1).
    pub parallel: u32,
    /// `-W` warmup in µs (0).
    pub warmup_us: u64,
    /// `-N` repetitions (11).
    pub repetitions: u32,
    /// `-s` KiB per process (0).
    pub size_kb: u64,
    /// The process counts, in command-line order.
    pub procs: Vec<u32>,
}

impl LatCtx {
    /// Iterations per timed repetition for a ring of `n` (`n = 1` is the overhead loop).
    pub fn iterations(&self, n: u32) -> u64 {
        let enough = if self.parallel > 1 { SHORT_NS } else { ENOUGH_NS };
        enough.div_ceil(self.iteration_estimate_ns(n)).max(1)
    }

    fn iteration_estimate_ns(&self, n: u32) -> u64 {
        u64::from(n) * (HOP_NS + self.bread_ns())
    }

    fn bread_ns(&self) -> u64 {
        self.size_kb * BREAD_NS_PER_KIB
    }
}

const OPTS: &[OptDef] = &[
    opt("s", Some('s'), None, true),
    opt("P", Some('P'), None, true),
    opt("W", Some('W'), None, true),
    opt("N", Some('N'), None, true),
];

const USAGE: &str =
    "Usage: lat_ctx [-P <parallelism>] [-W <warmup>] [-N <repetitions>] [-s kbytes] processes [processes ...]";

pub(crate) fn parse(argv: &[String]) -> Result<Built, WorkloadError> {
    let parsed = getopt(BENCH, argv, OPTS, Style::default())?;
    let mut l = LatCtx { parallel: 1, warmup_us: 0, repetitions: TRIES, size_kb: 0, procs: Vec::new() };
    for f in &parsed.opts {
        let v = int(BENCH, &f.flag, f.val())?;
        match f.key {
            "P" => {
                if v <= 0 || v > 4096 {
                    return usage(BENCH, format!("-P {v}: parallelism must be in 1..=4096; {USAGE}"));
                }
                l.parallel = v as u32;
            }
            "W" => {
                if v < 0 {
                    return usage(BENCH, format!("-W {v}: warmup must not be negative"));
                }
                l.warmup_us = v as u64;
            }
            "N" => {
                if !(1..=10_000).contains(&v) {
                    return usage(BENCH, format!("-N {v}: repetitions must be in 1..=10000"));
                }
                l.repetitions = v as u32;
            }
            "s" => {
                if !(0..=1 << 30).contains(&v) {
                    return usage(BENCH, format!("-s {v}: size must be in 0..=1073741824 KiB"));
                }
                l.size_kb = v as u64;
            }
            _ => unreachable!("option table"),
        }
    }
    if parsed.operands.is_empty() {
        return usage(BENCH, USAGE);
    }
    for op in &parsed.operands {
        let n = int(BENCH, "processes", op)?;
        if !(1..=i64::from(MAXPROC)).contains(&n) {
            return usage(BENCH, format!("process count {n} is outside 1..={MAXPROC}"));
        }
        l.procs.push(n as u32);
    }
    if l.procs.len() >= usize::from(IDS_PER_WORKLOAD - HIST_RING) {
        return usage(BENCH, format!("at most {} process counts", IDS_PER_WORKLOAD - HIST_RING - 1));
    }
    let total: u64 = l.procs.iter().map(|&n| u64::from(n) * u64::from(l.parallel)).sum();
    if total > 1 << 20 {
        return usage(BENCH, format!("{total} processes are more than schedlab simulates"));
    }
    let (tasks, objects) = build(&l);
    Ok(Built {
        name: BENCH,
        tasks,
        objects,
        duration_ns: None,
        metric: MetricSpec { name: "usecs_per_switch", better: Better::Lower },
        params: BenchParams::LatCtx(l),
    })
}

/// One `benchmp()` call's control pipes (lib_timing.c): the children's "ready" and "done"
/// bytes to the parent, its "start" and "results" bytes to them.
struct Ctl {
    ready: u32,
    start: u32,
    done: u32,
    results: u32,
}

impl Ctl {
    fn new(objects: &mut Vec<ObjectSpec>) -> Ctl {
        let mut pipe = || {
            objects.push(ObjectSpec::Pipe { slots: super::hackbench::PIPE_SLOTS });
            objects.len() as u32 - 1
        };
        Ctl { ready: pipe(), start: pipe(), done: pipe(), results: pipe() }
    }
}

/// A `benchmp_child()` after its `initialize`, as `benchmp_interval()` steps it: "ready", then
/// untimed iterations until the parent's start byte (the warm-up state), `reps` timed
/// repetitions of `k` iterations (each a sample of histogram `hist`), "done", then untimed
/// iterations until the parent asks for the results (the cooldown state: other children may
/// still be timing). Between iterations the child polls its control pipe with a zero timeout.
fn benchmp_child(p: &mut Prog, ctl: &Ctl, reps: u64, k: u64, hist: u16, iteration: &dyn Fn(&mut Prog)) {
    p.op(Op::Write { obj: ctl.ready, bytes: 1 });
    p.while_empty(ctl.start, iteration);
    p.repeat(reps, &|p| {
        p.op(Op::LatStart { slot: 0 });
        p.repeat(k, iteration);
        p.op(Op::LatEnd { slot: 0, hist });
    });
    p.op(Op::Write { obj: ctl.done, bytes: 1 });
    p.while_empty(ctl.results, iteration);
}

/// `benchmp_parent()`: every child's "ready", `-W` µs of warm-up, "start" to all, every
/// child's "done", then the results asked for (and the children reaped).
fn benchmp_parent(main: &mut Prog, ctl: &Ctl, children: u32, warmup_us: u64) {
    main.op(Op::Read { obj: ctl.ready, bytes: children, exact: true });
    if warmup_us > 0 {
        main.op(Op::Sleep { ns: warmup_us * 1_000 });
    }
    main.op(Op::Write { obj: ctl.start, bytes: children });
    main.op(Op::Read { obj: ctl.done, bytes: children, exact: true });
    main.op(Op::Write { obj: ctl.results, bytes: children });
    main.op(Op::WaitChildren);
}

fn build(l: &LatCtx) -> (Vec<sim::program::TaskSpec>, Vec<ObjectSpec>) {
    let mut objects = Vec::new();
    let mut tasks = Vec::new();
    let bread = l.bread_ns();
    let reps = u64::from(l.repetitions);
    let pipe = || ObjectSpec::Pipe { slots: super::hackbench::PIPE_SLOTS };

    // Reserve task 0 (main); it is filled in last, once the phase specs are known.
    tasks.push(Prog::new().task("lat_ctx", 0, false));
    let mut main = Prog::new();
    let mut mm = 1u32;

    // Overhead phase: one process, its own pipe.
    let ctl = Ctl::new(&mut objects);
    let ovr_pipe = objects.len() as u32;
    objects.push(pipe());
    let one = |p: &mut Prog| {
        p.op(Op::Write { obj: ovr_pipe, bytes: 4 }).op(Op::Read { obj: ovr_pipe, bytes: 4, exact: true });
        p.run(bread);
    };
    let mut p = Prog::new();
    benchmp_child(&mut p, &ctl, reps, l.iterations(1), HIST_OVERHEAD, &one);
    main.op(Op::Spawn { spec: tasks.len() as u32 });
    tasks.push(p.task("lat_ctx", mm, true));
    mm += 1;
    benchmp_parent(&mut main, &ctl, 1, l.warmup_us);

    for (j, &n) in l.procs.iter().enumerate() {
        let k = l.iterations(n);
        let hist = HIST_RING + j as u16;
        let ctl = Ctl::new(&mut objects);
        for _ in 0..l.parallel {
            let first = objects.len() as u32;
            objects.extend((0..n).map(|_| pipe()));
            let p_of = |i: u32| first + i;
            // The ring's members stop when this pipe has data (lmbench's parent kills them).
            let stop = objects.len() as u32;
            objects.push(pipe());
            let leader_spec = tasks.len() as u32;
            main.op(Op::Spawn { spec: leader_spec });
            // Leader: fork the members, one warm trip, the benchmp states, then the members
            // told to stop and the token passed once more for them to see it.
            let trip = |p: &mut Prog| {
                p.op(Op::Write { obj: p_of(0), bytes: 4 }).op(Op::Read { obj: p_of(n - 1), bytes: 4, exact: true });
                p.run(bread);
            };
            let mut p = Prog::new();
            for i in 1..n {
                p.op(Op::Spawn { spec: leader_spec + i });
            }
            p.op(Op::Write { obj: p_of(0), bytes: 4 }).op(Op::Read { obj: p_of(n - 1), bytes: 4, exact: true });
            benchmp_child(&mut p, &ctl, reps, k, hist, &trip);
            if n > 1 {
                p.op(Op::Write { obj: stop, bytes: n - 1 });
                p.op(Op::Write { obj: p_of(0), bytes: 4 }).op(Op::Read { obj: p_of(n - 1), bytes: 4, exact: true });
            }
            p.op(Op::WaitChildren);
            tasks.push(p.task("lat_ctx", mm, true));
            mm += 1;
            for i in 1..n {
                // Member i: read, sum, forward. It looks at the stop pipe right after each read:
                // the leader writes it before the token of its last pass, so the member that
                // reads that token sees it, forwards it and exits (looking after the forward
                // instead could see the stop while the leader still waits for a token).
                let read = || Op::Read { obj: p_of(i - 1), bytes: 4, exact: true };
                let forward = |p: &mut Prog| {
                    p.run(bread);
                    p.op(Op::Write { obj: p_of(i), bytes: 4 });
                };
                let mut p = Prog::new();
                p.op(read());
                p.while_empty(stop, &|p| {
                    forward(p);
                    p.op(read());
                });
                forward(&mut p);
                tasks.push(p.task("lat_ctx", mm, true));
                mm += 1;
            }
        }
        benchmp_parent(&mut main, &ctl, l.parallel, l.warmup_us);
    }

    tasks[0] = main.task("lat_ctx", 0, false);
    (tasks, objects)
}

impl LatCtx {
    /// The overhead and each process count's result in µs: `(ovr, [(N, ctx)])`.
    fn results(&self, v: &View) -> Option<(f64, Vec<(u32, f64)>)> {
        let per_iter = |hist: u16, k: u64| {
            let q = Quantiles::of(v.hist(hist));
            (q.count > 0).then(|| q.p50 as f64 / 1e3 / k as f64)
        };
        let ovr = per_iter(HIST_OVERHEAD, self.iterations(1))?;
        let mut out = Vec::new();
        for (j, &n) in self.procs.iter().enumerate() {
            if let Some(t) = per_iter(HIST_RING + j as u16, self.iterations(n)) {
                out.push((n, t / f64::from(n) - ovr));
            }
        }
        Some((ovr, out))
    }

    pub(crate) fn metric_value(&self, v: &View) -> f64 {
        match self.results(v) {
            Some((_, r)) => r.first().filter(|(n, _)| *n == self.procs[0]).map_or(f64::NAN, |&(_, ctx)| ctx),
            None => f64::NAN,
        }
    }

    /// All on stderr: an empty line, `"size=<k>k ovr=<ovr>`, then `N ctx` when ctx > 0.
    pub(crate) fn format_output(&self, v: &View) -> String {
        let Some((ovr, results)) = self.results(v) else { return String::new() };
        let mut s = format!("\n\"size={}k ovr={ovr:.2}\n", self.size_kb);
        for (n, ctx) in results {
            if ctx > 0.0 {
                s += &format!("{n} {ctx:.2}\n");
            }
        }
        s
    }
}
