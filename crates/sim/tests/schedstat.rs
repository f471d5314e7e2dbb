//! The `/proc/schedstat` counters (`sim::schedstat`) agree with the per-task counters they
//! share events with, and count where the kernel counts.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimReport, SimSetup};
use sim::ipc::ObjectSpec;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

fn run(sched: SchedConfig, cpus: u32, ms: u64, tasks: Vec<TaskSpec>, objects: Vec<ObjectSpec>) -> SimReport {
    let setup = SimSetup {
        sched,
        topology: Topology::smp(cpus),
        seed: 3,
        limits: Limits { max_events: 50_000_000, max_time_ns: ms * 1_000_000 },
        tasks,
        objects,
        check_invariants: true,
        groups: Vec::new(),
    };
    Sim::new(setup).expect("valid setup").run().unwrap_or_else(|v| panic!("{v}"))
}

/// `perf bench sched pipe` (one token) for `loops` round trips.
fn pipe_pair(loops: u32) -> Vec<TaskSpec> {
    let a = vec![
        Op::Read { obj: 0, bytes: 4, exact: true },
        Op::Write { obj: 1, bytes: 4 },
        Op::Loop { target: 0, slot: 0, count: loops },
        Op::Exit,
    ];
    let b = vec![
        Op::Write { obj: 0, bytes: 4 },
        Op::Read { obj: 1, bytes: 4, exact: true },
        Op::Loop { target: 0, slot: 0, count: loops },
        Op::Exit,
    ];
    vec![TaskSpec::new("a", a), TaskSpec::new("b", b)]
}

fn hog(comm: &str) -> TaskSpec {
    TaskSpec::new(comm, vec![Op::Run { ns: 10_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }])
}

/// Pinned to one CPU, every wakeup is local (`ttwu_local == ttwu_count`, no remote ones) and
/// every block of the last runnable task switches to idle; on two CPUs the same pair wakes
/// across them, each remote wakeup is counted once on the waker's domain, and
/// `ttwu_move_affine` counts exactly the wakees' `nr_wakeups_affine`.
#[test]
fn wakeups_are_counted_on_the_wakers_runqueue() {
    let pinned: Vec<TaskSpec> = pipe_pair(2_000).into_iter().map(|t| TaskSpec { cpus: Some(vec![0]), ..t }).collect();
    let r = run(SchedConfig::v7_3(), 1, 10_000, pinned, vec![ObjectSpec::Pipe { slots: 16 }; 2]);
    let t = r.schedstat.totals();
    let wakeups: u64 = r.tasks.iter().map(|t| t.stats.nr_wakeups).sum();
    assert_eq!((t.ttwu_count, t.ttwu_local, t.ttwu_wake_remote), (wakeups, wakeups, 0));
    assert!(t.sched_count >= r.counters.nr_switches && t.sched_goidle <= r.counters.nr_switches);

    let r = run(SchedConfig::v7_3(), 2, 10_000, pipe_pair(2_000), vec![ObjectSpec::Pipe { slots: 16 }; 2]);
    let t = r.schedstat.totals();
    let sum = |f: fn(&sim::task::TaskStats) -> u64| r.tasks.iter().map(|t| f(&t.stats)).sum::<u64>();
    assert_eq!(t.ttwu_count, sum(|s| s.nr_wakeups));
    assert_eq!(t.ttwu_local, sum(|s| s.nr_wakeups_local));
    assert_eq!(t.ttwu_wake_remote, sum(|s| s.nr_wakeups_remote));
    assert_eq!(t.ttwu_move_affine, sum(|s| s.nr_wakeups_affine));
    assert!(t.ttwu_wake_remote > 1_000, "the partners sit on both CPUs: {t:?}");
    // Each CPU idles while its partner runs: about one switch to idle per wakeup.
    assert!(t.sched_goidle * 10 >= t.ttwu_count * 9, "{t:?}");
}

/// Three hogs on two CPUs: only balancing moves them (no wakeups), so every migration is a
/// task `sched_balance_rq()` or the active balance gained; every pass is counted once and
/// ends balanced, failed or with tasks gained.
#[test]
fn balancing_counts_every_pass_and_every_task_it_moves() {
    for sched in [SchedConfig::v7_3(), sim::kernel::preset("v6.12").unwrap().config()] {
        let r = run(sched, 2, 2_000, vec![hog("h0"), hog("h1"), hog("h2")], vec![]);
        let t = r.schedstat.totals();
        let migrations: u64 = r.tasks.iter().map(|t| t.stats.nr_migrations).sum();
        assert!(migrations > 0, "three hogs on two CPUs migrate");
        assert_eq!(t.lb_gained(), migrations, "{t:?}");
        for (cpu, doms) in r.schedstat.domains.iter().enumerate() {
            for d in doms {
                for lb in &d.lb {
                    assert!(lb.balanced + lb.failed <= lb.count, "cpu{cpu}: {lb:?}");
                    assert!(lb.nobusyg + lb.nobusyq <= lb.balanced, "cpu{cpu}: {lb:?}");
                    assert!(lb.hot_gained <= lb.gained, "cpu{cpu}: {lb:?}");
                }
                assert_eq!(d.alb_count, d.alb_pushed + d.alb_failed);
            }
        }
        // The busy CPUs balance at their ticks: busy passes are the most.
        assert!(t.balance[0].count > 0, "{t:?}");
    }
}

/// A tick that fires into idle runs `sched_tick()` there, and its SCHED_SOFTIRQ balances the
/// CPU's domains as CPU_IDLE (the idle loop keeps the tick until one fires into it, then stops
/// it). A ping-pong pair on two CPUs leaves each CPU idle about half the time, so about half
/// the ticks of the run come into idle and balance; none finds a task to pull.
#[test]
fn ticks_into_idle_balance_the_idle_cpu() {
    let r = run(SchedConfig::v7_3(), 2, 10_000, pipe_pair(100_000), vec![ObjectSpec::Pipe { slots: 16 }; 2]);
    let t = r.schedstat.totals();
    let tick_ns = 4_000_000;
    let ticks = 2 * r.simulated_ns / tick_ns;
    // Ticks land in idle about as often as the CPUs idle.
    let into_idle = r.idle_ns_per_cpu.iter().sum::<u64>() as f64 / tick_ns as f64;
    let idle = t.balance[1];
    assert!(ticks >= 100 && into_idle >= 10.0, "the run spans {ticks} ticks, {into_idle:.1} of them idle");
    let ratio = idle.count as f64 / into_idle;
    assert!((0.5..=1.5).contains(&ratio), "{} idle passes for {into_idle:.1} idle tick periods: {t:?}", idle.count);
    assert_eq!(t.lb_gained(), 0, "{t:?}");
    assert_eq!(idle.balanced, idle.count, "{t:?}");
}
