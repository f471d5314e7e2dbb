//! The ground truth's workloads as model runs, and its metrics computed from a run the way the
//! measurement computed them from `/proc/<tid>/sched` (summed over every task of the run).

use std::collections::BTreeMap;

use sim::engine::SimReport;
use sim::ipc::ObjectSpec;
use sim::program::TaskSpec;

use crate::runner::resolve_workload_on;

/// A benchmark's own metric computed from a finished run.
pub type ToolMetric = Box<dyn Fn(&SimReport) -> f64 + Send + Sync>;

/// What one ground-truth workload is in the model.
pub struct CaseWorkload {
    pub tasks: Vec<TaskSpec>,
    pub objects: Vec<ObjectSpec>,
    /// Simulated time bound (the fairness loops run 2 s).
    pub duration_ns: Option<u64>,
    /// The workload's command line as a user would type it (for the reproduce notes).
    pub command: String,
    pub kind: Kind,
    /// The benchmark's own metric (its printed number), for `bench_value`.
    pub tool_metric: Option<ToolMetric>,
}

/// How a workload's ops and its own number (`bench_value`) are found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A benchmark with a fixed op count; `bench_value` is the benchmark's metric.
    Bench { ops: u64 },
    /// lmbench `lat_ctx`: ops are the ring tasks' wakeups (every task but the main one).
    LatCtx,
    /// The pipe ring: µs per token pass.
    Ring { ops: u64 },
    /// Busy loops for fairness: no ops.
    Fairness,
}

/// The workloads of the ground truth's README, with their real command lines.
pub const WORKLOADS: &[(&str, &str)] = &[
    ("pp", "pipe --classic -l 5000"),
    ("ring8", "(8-process pipe ring, one token, 500 rounds)"),
    ("latctx2", "lat_ctx -s 0 2"),
    ("latctx8", "lat_ctx -s 0 8"),
    ("hb_pipe", "hackbench -p -g 1 -l 200"),
    ("hb_sock", "hackbench -g 1 -l 200"),
    ("hb_thr_pipe", "hackbench -T -p -g 2 -l 100"),
    ("fair_nice", "(two busy loops on CPU 0, nice 0 and 5, 2 s)"),
    ("fair_3on2", "(three nice-0 busy loops on CPUs 0-1, 2 s)"),
];

const FAIR_NS: u64 = 2_000_000_000;

/// Builds a workload by its ground-truth name for a machine of `nr_cpus` CPUs.
pub fn build(name: &str, nr_cpus: u32) -> Result<CaseWorkload, String> {
    let bench = |argv: &str, kind: Kind| -> Result<CaseWorkload, String> {
        let argv: Vec<String> = argv.split(' ').map(str::to_string).collect();
        let wl = resolve_workload_on(&argv, &[], nr_cpus)?;
        Ok(CaseWorkload {
            tasks: wl.tasks,
            objects: wl.objects,
            duration_ns: None,
            command: argv.join(" "),
            kind,
            tool_metric: Some(wl.metric),
        })
    };
    match name {
        "pp" => bench("pipe --classic -l 5000", Kind::Bench { ops: 5000 }),
        "latctx2" => bench("lat_ctx -s 0 2", Kind::LatCtx),
        "latctx8" => bench("lat_ctx -s 0 8", Kind::LatCtx),
        "hb_pipe" => bench("hackbench -p -g 1 -l 200", Kind::Bench { ops: 80_000 }),
        "hb_sock" => bench("hackbench -g 1 -l 200", Kind::Bench { ops: 80_000 }),
        "hb_thr_pipe" => bench("hackbench -T -p -g 2 -l 100", Kind::Bench { ops: 80_000 }),
        "ring8" => {
            let (tasks, objects) = workload::ring::pipe_ring(8, 500, 1)?;
            Ok(CaseWorkload {
                tasks,
                objects,
                duration_ns: None,
                command: "pipe ring of 8 processes, 500 rounds".into(),
                kind: Kind::Ring { ops: 4000 },
                tool_metric: None,
            })
        }
        "fair_nice" => hogs(&[(0, Some(vec![0])), (5, Some(vec![0]))], "nice 0 and nice 5 on CPU 0"),
        "fair_3on2" => {
            if nr_cpus < 2 {
                return Err("fair_3on2 needs at least 2 CPUs".into());
            }
            Ok(forked_hogs(3, vec![0, 1]))
        }
        other => Err(format!(
            "unknown ground-truth workload `{other}` (known: {})",
            WORKLOADS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// CPU hogs (rt-app busy loops) with a nice value and an affinity each, for 2 s.
fn hogs(specs: &[(i32, Option<Vec<u32>>)], what: &str) -> Result<CaseWorkload, String> {
    let mut json = String::from("{\"global\": {\"duration\": 2}, \"tasks\": {");
    for (i, (nice, cpus)) in specs.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json += &format!("\"hog{i}\": {{\"loop\": -1, \"run\": 100000, \"priority\": {nice}");
        if let Some(cpus) = cpus {
            json += &format!(", \"cpus\": {cpus:?}");
        }
        json.push('}');
    }
    json += "}}";
    let app = workload::rtapp::parse_rtapp(&json, "fairness hogs").map_err(|e| e.to_string())?;
    Ok(CaseWorkload {
        tasks: app.tasks,
        objects: Vec::new(),
        duration_ns: Some(FAIR_NS),
        command: format!("busy loops: {what}, 2 s"),
        kind: Kind::Fairness,
        tool_metric: None,
    })
}

/// The comm of a fairness case's launcher process, where it has one (`hogs.c`'s parent).
pub const LAUNCHER_COMM: &str = "hogs";

/// The ground truth's `hogs N 2` (`data/ground-truth/qemu-2vcpu/traces/hogs.c`): one process
/// forks `n` children, each a busy loop on `cpus` until 2 s after its start (the clock read
/// through the vDSO, no system call), then `_exit`; the parent sleeps in `wait()` and reaps
/// them. The parent's sleeps, its wakeups at each exit and the exits' switch-outs are the
/// voluntary switches of the real run (parent `S` 3x and `Z`, each child `Z`, in
/// `fair_3on2-7.3.4.txt.gz`), and the parent's wakeups may migrate it.
fn forked_hogs(n: u32, cpus: Vec<u32>) -> CaseWorkload {
    use sim::program::Op;
    // The launcher is address space 0 (as TaskSpec::new makes it), each child one of its own.
    let parent = TaskSpec::new(
        LAUNCHER_COMM,
        (1..=n).map(|spec| Op::Spawn { spec }).chain([Op::WaitChildren, Op::Exit]).collect(),
    );
    let mut tasks = vec![parent];
    for i in 1..=n {
        // The deadline is taken at the loop's first pass, after one chunk of the busy loop.
        const CHUNK: u64 = 100_000;
        let loop_ns = FAIR_NS - CHUNK;
        let mut child = TaskSpec::new(
            "hog",
            vec![Op::Run { ns: CHUNK }, Op::LoopUntil { target: 0, slot: 0, ns: loop_ns }, Op::Exit],
        );
        child.cpus = Some(cpus.clone());
        child.spawned = true;
        // fork(): each child is a process of its own.
        child.mm = i;
        tasks.push(child);
    }
    CaseWorkload {
        tasks,
        objects: Vec::new(),
        // The children end themselves; the bound only stops a run that would not.
        duration_ns: Some(FAIR_NS + FAIR_NS / 4),
        command: format!("hogs {n} 2 (fork {n} busy loops on CPUs {cpus:?}, 2 s each, wait)"),
        kind: Kind::Fairness,
        tool_metric: None,
    }
}

/// Per-task counters summed over the run.
#[derive(Default)]
struct Sums {
    switches: u64,
    invol: u64,
    migrations: u64,
    wakeups: u64,
    local: u64,
    affine: u64,
    attempts: u64,
    migrate: u64,
    sync: u64,
    wakee_preempting: u64,
    wakee_from_idle: u64,
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// The ground truth's metrics of one run, by their `summary.csv` names. Metrics without a
/// model counterpart are absent.
pub fn metrics(kind: Kind, report: &SimReport, bench_value: f64) -> BTreeMap<&'static str, f64> {
    let mut m = BTreeMap::new();
    let mut s = Sums::default();
    let bench_tasks = || report.tasks.iter().filter(|t| !t.kthread);
    for t in bench_tasks() {
        let st = &t.stats;
        s.switches += st.nr_switches;
        s.invol += st.nr_involuntary_switches;
        s.migrations += st.nr_migrations;
        s.wakeups += st.nr_wakeups;
        s.local += st.nr_wakeups_local;
        s.affine += st.nr_wakeups_affine;
        s.attempts += st.nr_wakeups_affine_attempts;
        s.migrate += st.nr_wakeups_migrate;
        s.sync += st.nr_wakeups_sync;
        s.wakee_preempting += t.wakee_switch_ins.preempting;
        s.wakee_from_idle += t.wakee_switch_ins.from_idle;
    }
    let mut put = |name: &'static str, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            m.insert(name, v);
        }
    };
    if kind == Kind::Fairness {
        // The shares are the hogs' (not their launcher's).
        let run: Vec<f64> =
            bench_tasks().filter(|t| t.comm != LAUNCHER_COMM).map(|t| t.sum_exec_runtime_ns as f64).collect();
        let total: f64 = run.iter().sum();
        let secs = report.simulated_ns as f64 / 1e9;
        if run.len() == 2 {
            put("fair_ratio_nice0_nice5", (run[1] > 0.0).then(|| run[0] / run[1]));
            put("fair_share_nice0", (total > 0.0).then(|| run[0] / total));
        } else {
            let (lo, hi) = run.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            put("fair_max_min_ratio", (lo > 0.0).then(|| hi / lo));
            let sq: f64 = run.iter().map(|x| x * x).sum();
            put("fair_jain", (sq > 0.0).then(|| total * total / (run.len() as f64 * sq)));
        }
        put("fair_switches_per_s", (secs > 0.0).then(|| s.switches as f64 / secs));
        put("fair_invol_share", ratio(s.invol, s.switches));
        put("fair_migrations", Some(s.migrations as f64));
        return m;
    }
    let ops = match kind {
        Kind::Bench { ops } | Kind::Ring { ops } => ops,
        // Every task but lat_ctx's main process (which only forks and waits) is a ring task
        // or the overhead process, which never blocks.
        Kind::LatCtx => s.wakeups - bench_tasks().next().map_or(0, |t| t.stats.nr_wakeups),
        Kind::Fairness => unreachable!("handled above"),
    };
    let per_op = |x: u64| ratio(x, ops);
    put("switches_per_op", per_op(s.switches));
    put("invol_share", ratio(s.invol, s.switches));
    put("migrations_per_op", per_op(s.migrations));
    put("wakeups_per_op", per_op(s.wakeups));
    put("wakeup_local_share", ratio(s.local, s.wakeups));
    put("wakeup_affine_share", ratio(s.affine, s.wakeups));
    put("affine_success", ratio(s.affine, s.attempts));
    put("wakeup_migrate_share", ratio(s.migrate, s.wakeups));
    put("wakeup_sync_share", ratio(s.sync, s.wakeups));
    put("bench_value", Some(bench_value));
    // The traced metrics the README defines from sched_switch / sched_waking / sched_wakeup /
    // sched_migrate_task lines, where they coincide with a counter: a switch-out with
    // prev_state R is an involuntary switch; the wakee's target CPU is the waker's CPU exactly
    // when the wakeup is local and its previous CPU exactly when it did not migrate; the
    // wakee's first switch-in after its wakeup replaced a running task (prev_state R) or the
    // idle task, whatever request made that switch.
    put("t_switches_per_op", per_op(s.switches));
    put("t_preempted_switch_share", ratio(s.invol, s.switches));
    put("t_migrations_per_op", per_op(s.migrations));
    put("t_target_eq_waker", ratio(s.local, s.wakeups));
    put("t_wakee_ran_on_waker_cpu", ratio(s.local, s.wakeups));
    put("t_target_eq_prev", ratio(s.wakeups - s.migrate, s.wakeups));
    put("t_migr_at_wakeup_share", ratio(s.migrate, s.migrations));
    put("t_wakeup_preempt_share", ratio(s.wakee_preempting, s.wakeups));
    put("t_wakee_onto_idle_share", ratio(s.wakee_from_idle, s.wakeups));
    // The system-wide /proc/schedstat deltas: every task's wakeups and every CPU's switches
    // to idle and balancing passes, the guest's kernel threads included, as the boots read
    // them around the run. The affine share is of remote wakeups (`ttwu_move_affine /
    // ttwu_wake_remote`: the ground truth's pair rows exceed `1 - ttwu_local share`, so it
    // cannot be of all wakeups).
    let ss = report.schedstat.totals();
    put("ss_ttwu_local_share", ratio(ss.ttwu_local, ss.ttwu_count));
    put("ss_move_affine_share", ratio(ss.ttwu_move_affine, ss.ttwu_wake_remote));
    put("ss_goidle_per_op", per_op(ss.sched_goidle));
    put("ss_lb_count", Some(ss.lb_count() as f64));
    put("ss_lb_gained", Some(ss.lb_gained() as f64));
    m
}

/// The workload's own number from a run, in the units of the ground truth's `bench_value`.
pub fn bench_value(w: &CaseWorkload, report: &SimReport) -> f64 {
    match w.kind {
        Kind::Bench { .. } | Kind::LatCtx => w.tool_metric.as_ref().map_or(f64::NAN, |f| f(report)),
        Kind::Ring { ops } => {
            let (start, end) =
                (report.marks.get(&workload::ring::MARK_START), report.marks.get(&workload::ring::MARK_END));
            match (start, end) {
                (Some(s), Some(e)) => e.last_ns.saturating_sub(s.first_ns) as f64 / 1e3 / ops as f64,
                _ => f64::NAN,
            }
        }
        Kind::Fairness => f64::NAN,
    }
}
