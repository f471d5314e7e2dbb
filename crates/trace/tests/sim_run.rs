//! A simulated run's trace, read back, gives the run's own counters: exactly with nanosecond
//! timestamps, within the microsecond rounding with the kernel's format.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use schedtrace::{
    Analysis, Filter, FtraceTextWriter, PerfettoWriter, Precision, SharedSink, TextOptions, TraceHeader, analyze,
};
use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimReport, SimSetup};
use sim::fair::Policy;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;
use sim::trace::TraceSink;

/// Three tasks on two CPUs that run and sleep at different rhythms, then exit: switches both
/// ways, timer wakeups, migrations.
fn setup() -> SimSetup {
    let task = |comm: &str, nice, run, sleep| TaskSpec {
        comm: comm.into(),
        nice,
        policy: Policy::Normal,
        slice_ns: None,
        cpus: None,
        start_ns: 0,
        timer_slack_ns: 50_000,
        nr_slots: 1,
        nr_timers: 0,
        poll_sets: vec![],
        spawned: false,
        mm: 0,
        cgroup: None,
        group: 0,
        kthread: false,
        wakee_flips: 0,
        ops: vec![Op::Run { ns: run }, Op::Sleep { ns: sleep }, Op::Loop { target: 0, slot: 0, count: 300 }, Op::Exit],
    };
    SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(2),
        seed: 7,
        limits: Limits { max_events: 10_000_000, max_time_ns: 10_000_000_000 },
        tasks: vec![
            task("worker-a", 0, 700_000, 300_000),
            task("worker-b", 0, 400_000, 100_000),
            task("worker-c", 5, 900_000, 50_000),
        ],
        objects: vec![],
        check_invariants: false,
        groups: Vec::new(),
    }
}

fn run<T: TraceSink + 'static>(writer: T) -> (SimReport, T) {
    let (handle, sink) = SharedSink::new(writer);
    let (report, sink) = Sim::new(setup()).unwrap().run_traced(sink);
    drop(sink);
    (report.unwrap(), handle.into_inner().unwrap())
}

fn text(precision: Precision) -> (SimReport, Vec<u8>) {
    let header = TraceHeader { nr_cpus: 2, comments: vec![] };
    let w = FtraceTextWriter::with_options(Vec::new(), &header, TextOptions { precision, decisions: true }).unwrap();
    let (report, w) = run(w);
    (report, w.finish().unwrap())
}

fn check_counts(r: &SimReport, an: &Analysis) {
    let c = &r.counters;
    assert_eq!(an.nr_switches, c.nr_switches);
    assert_eq!(an.nr_voluntary_switches, c.nr_voluntary_switches);
    assert_eq!(an.nr_involuntary_switches, c.nr_involuntary_switches);
    assert_eq!(an.nr_migrations, c.nr_migrations);
    assert_eq!(an.nr_wakeups, c.nr_wakeups);
    assert_eq!(an.nr_wakeups_local, c.nr_wakeups_local);
    assert_eq!(an.nr_wakeups_remote, c.nr_wakeups_remote);
    assert_eq!(an.nr_wakeups_migrate, c.nr_wakeups_migrate);
    assert_eq!(an.tasks.len(), r.tasks.len());
    for (a, t) in an.tasks.iter().zip(&r.tasks) {
        assert_eq!((a.pid, a.comm.as_str()), (t.pid, t.comm.as_str()));
        assert_eq!(a.nr_switches, t.stats.nr_switches, "{}", t.comm);
        assert_eq!(a.nr_voluntary_switches, t.stats.nr_voluntary_switches, "{}", t.comm);
        assert_eq!(a.nr_migrations, t.stats.nr_migrations, "{}", t.comm);
        assert_eq!(a.nr_wakeups, t.stats.nr_wakeups, "{}", t.comm);
    }
}

#[test]
fn nanosecond_trace_gives_back_the_exact_figures() {
    let (r, bytes) = text(Precision::Nanos);
    assert_eq!(r.stop, sim::engine::StopReason::AllExited);
    assert!(r.counters.nr_involuntary_switches > 0 && r.counters.nr_migrations > 0, "{:?}", r.counters);
    let an = analyze(bytes.as_slice(), Filter::default()).unwrap();
    check_counts(&r, &an);
    for (a, t) in an.tasks.iter().zip(&r.tasks) {
        assert_eq!(a.runtime_ns, t.sum_exec_runtime_ns, "{}", t.comm);
    }
    assert_eq!(an.wakeup_latency_ns(), r.wakeup_latency.percentiles());
    assert_eq!(an.first_ts_ns, 0);
    assert_eq!(an.last_ts_ns, r.simulated_ns);
    assert_eq!(an.idle_ns_per_cpu, r.idle_ns_per_cpu);
    // A lag record at every wakeup and after every sleep (the three exits are not sleeps);
    // timer sleeps of tasks that ran their share leave eligible, with lag inside the clamp
    // of `entity_lag()` (the largest slice plus a tick, in the nice 5 task's virtual time).
    assert_eq!(an.wakeup_lag.len(), r.counters.nr_wakeups);
    assert_eq!(an.sleep_lag.len() + an.nr_sleeps_delayed, r.counters.nr_voluntary_switches - 3);
    let limit = (2_800_000 + 4_000_000) * 1024 / 335;
    for h in [&an.wakeup_lag, &an.sleep_lag] {
        assert!(h.quantile(0.0) >= -limit && h.quantile(1.0) <= limit, "{h:?}");
    }
}

#[test]
fn kernel_format_trace_gives_back_the_figures_within_rounding() {
    let (r, bytes) = text(Precision::Micros);
    let an = analyze(bytes.as_slice(), Filter::default()).unwrap();
    check_counts(&r, &an);
    // Each run interval's ends are rounded to the microsecond: at most 1 µs off per interval.
    for (a, t) in an.tasks.iter().zip(&r.tasks) {
        let intervals = t.stats.nr_switches;
        assert!(a.runtime_ns.abs_diff(t.sum_exec_runtime_ns) <= intervals * 1000, "{}", t.comm);
    }
    let filtered = analyze(bytes.as_slice(), Filter { comm: Some("worker-b".into()), ..Default::default() }).unwrap();
    assert_eq!(filtered.tasks.len(), 1);
    assert_eq!(filtered.nr_switches, r.tasks[1].stats.nr_switches);
    assert_eq!(filtered.nr_wakeups, r.tasks[1].stats.nr_wakeups);
}

#[test]
fn same_seed_same_bytes() {
    assert_eq!(text(Precision::Micros).1, text(Precision::Micros).1);
    let perfetto = || {
        let w = PerfettoWriter::new(Vec::new(), &TraceHeader { nr_cpus: 2, comments: vec![] }).unwrap();
        run(w).1.finish().unwrap()
    };
    assert_eq!(perfetto(), perfetto());
}

/// `prev_state` of a preempted task is `R` when it was preempted on the way back to user mode
/// (`schedule()` from `exit_to_user_mode_loop()`) and `R+` only inside the kernel
/// (`SM_PREEMPT`). These workers compute in user mode, so the tick and the hrtick preempt them
/// there: every involuntary switch prints `R`, as the real fair_3on2-7.3.4 trace's hogs show
/// (84-91 `R` each, 0-2 `R+`).
#[test]
fn user_mode_preemptions_print_r_not_r_plus() {
    let (r, bytes) = text(Precision::Nanos);
    let out = String::from_utf8(bytes).unwrap();
    let worker_out = |state: &str| {
        out.lines().filter(|l| l.contains("prev_comm=worker-") && l.contains(&format!("prev_state={state} "))).count()
            as u64
    };
    assert!(r.counters.nr_involuntary_switches > 0);
    assert_eq!(worker_out("R"), r.counters.nr_involuntary_switches);
    assert_eq!(worker_out("R+"), 0);
}
