//! Structural checks of the benchmark models against what workloads.md derives from each
//! tool's source: how many tasks, how many wakeups per operation, the WF_SYNC share, and which
//! wakes come from interrupt context. The expectations come from the spec, not from running
//! the code and copying its output.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimReport, SimSetup, StopReason};
use sim::topology::Topology;
use workload::bench::parse_benchmark_on;

fn run(cmd: &str, topology: &str) -> (SimReport, usize) {
    let topology = Topology::by_name(topology).unwrap();
    let argv: Vec<String> = cmd.split_whitespace().map(String::from).collect();
    let wl = parse_benchmark_on(&argv, topology.nr_cpus() as u32).unwrap();
    let ntasks = wl.tasks.iter().filter(|t| !t.spawned).count() + spawned_instances(&wl);
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology,
        seed: 3,
        limits: Limits { max_events: 50_000_000, max_time_ns: wl.duration_ns.unwrap_or(20_000_000_000) },
        tasks: wl.tasks,
        objects: wl.objects,
        check_invariants: false,
        groups: Vec::new(),
    };
    (Sim::new(setup).unwrap().run().unwrap(), ntasks)
}

/// Tasks created by `Spawn` instructions, counted from the programs (each spawn op creates one).
fn spawned_instances(wl: &workload::bench::BenchWorkload) -> usize {
    fn count(wl: &workload::bench::BenchWorkload, spec: usize) -> usize {
        wl.tasks[spec]
            .ops
            .iter()
            .filter_map(|op| match op {
                sim::program::Op::Spawn { spec } => Some(1 + count(wl, *spec as usize)),
                _ => None,
            })
            .sum()
    }
    (0..wl.tasks.len()).filter(|&i| !wl.tasks[i].spawned).map(|i| count(wl, i)).sum()
}

fn sync_share(r: &SimReport) -> f64 {
    r.counters.nr_wakeups_sync as f64 / r.counters.nr_wakeups.max(1) as f64
}

/// Classic pipe (§3.1): one token, so per op 2 wakeups, 2 blocking reads, and on one CPU 2
/// context switches; every wake is a sync wake from task context.
#[test]
fn pipe_classic_one_cpu() {
    let loops = 2_000.0;
    let (r, tasks) = run("pipe --classic -l 2000", "smp:1");
    assert_eq!(r.stop, StopReason::AllExited);
    assert_eq!(tasks, 2);
    let per_op = |x: u64| x as f64 / loops;
    assert!((per_op(r.counters.nr_wakeups) - 2.0).abs() < 0.01, "{:?}", r.counters);
    assert!((per_op(r.counters.nr_switches) - 2.0).abs() < 0.01, "{:?}", r.counters);
    assert!(sync_share(&r) > 0.99);
    assert_eq!(r.counters.nr_wakeups_irq, 0);
}

/// 7.3 pipe (§3.1): two tokens; on one CPU without wakeup preemption a resumed task finds a
/// second token and runs two iterations per dispatch: ≈1 switch and ≈1 wakeup per loop.
#[test]
fn pipe_two_tokens_one_cpu() {
    let (r, _) = run("pipe -l 2000", "smp:1");
    let per_op = |x: u64| x as f64 / 2000.0;
    assert!((per_op(r.counters.nr_wakeups) - 1.0).abs() < 0.1, "{:?}", r.counters);
    assert!((per_op(r.counters.nr_switches) - 1.0).abs() < 0.1, "{:?}", r.counters);
    assert!(sync_share(&r) > 0.99);
}

/// hackbench (§2.1–§2.3): 2·F·G workers plus main; data and barrier wakes are sync; only the
/// children's exit wakes of main are not.
#[test]
fn hackbench_tasks_and_sync_share() {
    let (r, tasks) = run("hackbench -p -g 2 -f 5 -l 20", "smp:4");
    assert_eq!(r.stop, StopReason::AllExited);
    assert_eq!(tasks, 2 * 5 * 2 + 1);
    let exits = 20u64;
    assert!(r.counters.nr_wakeups_sync + exits >= r.counters.nr_wakeups, "{:?}", r.counters);
    assert_eq!(r.counters.nr_wakeups_irq, 0, "pipes wake from task context");
}

/// schbench (§4): futex and timer wakes are never sync; the message threads' timed sleeps are
/// woken from the hrtimer interrupt.
#[test]
fn schbench_wakes_are_not_sync() {
    let (r, _) = run("schbench -m 1 -t 2 -r 1", "smp:4");
    assert!(r.counters.nr_wakeups > 100, "{:?}", r.counters);
    assert_eq!(r.counters.nr_wakeups_sync, 0);
}

/// netperf TCP_RR over loopback (§6.3): each direction's receive wake runs in NET_RX softirq
/// on the sender's CPU (interrupt context) and is sync.
#[test]
fn netperf_receive_wakes_are_softirq_and_sync() {
    let (r, tasks) = run("netperf -t TCP_RR -l -2000 -- -r 1,1", "smp:2");
    assert_eq!(tasks, 2);
    assert!(r.counters.nr_wakeups > 100, "{:?}", r.counters);
    assert!(sync_share(&r) > 0.95, "{:?}", r.counters);
    assert!(r.counters.nr_wakeups_irq as f64 > 0.95 * r.counters.nr_wakeups as f64, "{:?}", r.counters);
}

/// stress-ng --cpu without --cpu-load (§7): pure hogs, no wakeups after the start.
#[test]
fn stress_ng_hogs_do_not_wake() {
    let (r, _) = run("stress-ng --cpu 2 --timeout 1", "smp:2");
    assert!(r.counters.nr_wakeups <= 2, "{:?}", r.counters);
}

/// A workload whose chain is broken ends with a clear stop reason within the limits rather
/// than hanging: here a reader whose writer never writes (an rt-app-free hand-made program).
#[test]
fn broken_chain_stops_as_deadlock() {
    use sim::fair::Policy;
    use sim::ipc::ObjectSpec;
    use sim::program::{Op, TaskSpec};
    let reader = TaskSpec {
        comm: "reader".into(),
        nice: 0,
        policy: Policy::Normal,
        slice_ns: None,
        cpus: None,
        start_ns: 0,
        timer_slack_ns: 50_000,
        ops: vec![Op::Read { obj: 0, bytes: 4, exact: true }, Op::Exit],
        nr_slots: 0,
        nr_timers: 0,
        poll_sets: vec![],
        spawned: false,
        mm: 0,
        cgroup: None,
        group: 0,
        kthread: false,
        wakee_flips: 0,
    };
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(1),
        seed: 1,
        limits: Limits { max_events: 1_000_000, max_time_ns: 1_000_000_000 },
        tasks: vec![reader],
        objects: vec![ObjectSpec::Pipe { slots: 16 }],
        check_invariants: true,
        groups: Vec::new(),
    };
    let r = Sim::new(setup).unwrap().run().unwrap();
    assert_eq!(r.stop, StopReason::Deadlock);
    assert!(!r.tasks[0].exited);
}
