//! End-to-end behaviour of the engine: fairness by weight, determinism, invariants under mixed
//! workloads, and the preemption models.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use sim::config::{Limits, PreemptModel, SchedConfig};
use sim::engine::{Sim, SimReport, SimSetup, StopReason};
use sim::features::Feature;
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

fn task(comm: &str, nice: i32, ops: Vec<Op>) -> TaskSpec {
    TaskSpec { nice, ..TaskSpec::new(comm, ops) }
}

fn hog(comm: &str, nice: i32) -> TaskSpec {
    task(comm, nice, vec![Op::Run { ns: 10_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }])
}

fn sleeper(comm: &str, run_ns: u64, sleep_ns: u64) -> TaskSpec {
    task(
        comm,
        0,
        vec![Op::Run { ns: run_ns }, Op::Sleep { ns: sleep_ns }, Op::Loop { target: 0, slot: 0, count: u32::MAX }],
    )
}

fn run(sched: SchedConfig, cpus: u32, seconds: u64, tasks: Vec<TaskSpec>, check: bool) -> SimReport {
    let setup = SimSetup {
        sched,
        topology: Topology::smp(cpus),
        seed: 42,
        limits: Limits { max_events: 100_000_000, max_time_ns: seconds * 1_000_000_000 },
        tasks,
        objects: vec![],
        check_invariants: check,
        groups: Vec::new(),
    };
    Sim::new(setup).expect("valid setup").run().unwrap_or_else(|v| panic!("{v}"))
}

/// On one CPU, hogs of different nice values get CPU time in the ratio of their weights,
/// within 0.5 % over 10 simulated seconds.
#[test]
fn hogs_share_one_cpu_by_weight() {
    let nices = [-5, 0, 0, 3, 10];
    let r = run(
        SchedConfig::v7_3(),
        1,
        10,
        nices.iter().enumerate().map(|(i, &n)| hog(&format!("hog{i}"), n)).collect(),
        false,
    );
    assert_eq!(r.stop, StopReason::TimeLimit);
    let weights: Vec<f64> = nices.iter().map(|&n| sim::fair::weight::nice_to_weight(n) as f64).collect();
    let total_w: f64 = weights.iter().sum();
    let total_rt: f64 = r.tasks.iter().map(|t| t.sum_exec_runtime_ns as f64).sum();
    for (t, w) in r.tasks.iter().zip(&weights) {
        let share = t.sum_exec_runtime_ns as f64 / total_rt;
        let want = w / total_w;
        assert!((share / want - 1.0).abs() < 0.005, "{}: share {share:.5} want {want:.5}", t.comm);
    }
}

/// Same inputs and seed, same report, to the last counter.
#[test]
fn runs_are_deterministic() {
    let tasks = || vec![hog("a", 0), sleeper("s1", 300_000, 700_000), sleeper("s2", 50_000, 120_000), hog("b", 2)];
    let a = run(SchedConfig::v7_3(), 2, 2, tasks(), false);
    let b = run(SchedConfig::v7_3(), 2, 2, tasks(), false);
    assert_eq!(format!("{:?}", a.counters), format!("{:?}", b.counters));
    assert_eq!(a.events, b.events);
    for (x, y) in a.tasks.iter().zip(&b.tasks) {
        assert_eq!(
            (x.sum_exec_runtime_ns, x.vruntime, x.stats.nr_switches),
            (y.sum_exec_runtime_ns, y.vruntime, y.stats.nr_switches)
        );
    }
}

/// Every invariant holds after every event, for mixed workloads under every preemption model
/// and several feature combinations.
#[test]
fn invariants_hold_under_mixed_workloads() {
    let models = [PreemptModel::None, PreemptModel::Voluntary, PreemptModel::Full, PreemptModel::Lazy];
    let variants: [&[&str]; 4] = [&[], &["NO_DELAY_DEQUEUE"], &["NEXT_BUDDY"], &["NO_RUN_TO_PARITY", "NO_HRTICK"]];
    for (i, model) in models.iter().enumerate() {
        let mut cfg = SchedConfig::v7_3();
        cfg.preempt = *model;
        for f in variants[i] {
            cfg.features.apply(f).unwrap();
        }
        let mut tasks =
            vec![hog("hog", 0), hog("nice5", 5), sleeper("s1", 200_000, 300_000), sleeper("s2", 30_000, 90_000)];
        tasks.push(task(
            "yielder",
            0,
            vec![Op::Run { ns: 150_000 }, Op::Yield, Op::Loop { target: 0, slot: 0, count: u32::MAX }],
        ));
        tasks.push(task(
            "renicer",
            0,
            vec![
                Op::Run { ns: 400_000 },
                Op::SetNice { nice: 4 },
                Op::Run { ns: 400_000 },
                Op::SetNice { nice: -2 },
                Op::Sleep { ns: 250_000 },
                Op::Loop { target: 0, slot: 0, count: u32::MAX },
            ],
        ));
        tasks.push(task(
            "periodic",
            0,
            vec![
                Op::Run { ns: 100_000 },
                Op::Timer { slot: 0, period_ns: 1_000_000, absolute: true },
                Op::Loop { target: 0, slot: 0, count: 300 },
                Op::Exit,
            ],
        ));
        let mut short = sleeper("short", 100_000, 400_000);
        short.slice_ns = Some(300_000);
        tasks.push(short);
        for cpus in [1, 2, 3] {
            let r = run(cfg.clone(), cpus, 1, tasks.clone(), true);
            assert!(r.counters.nr_switches > 100, "{model:?} smp:{cpus}: {:?}", r.counters);
        }
    }
}

/// A timer wakeup onto a CPU running a user-mode hog: with lazy preemption the wakee does not
/// preempt at the timer interrupt unless it is the pick; the counters tell wakeup from tick
/// preemptions. Under `none` the same wakeup preempts at the interrupt's return as well.
#[test]
fn sleepers_get_low_latency_against_a_hog() {
    for model in [PreemptModel::None, PreemptModel::Full, PreemptModel::Lazy] {
        let mut cfg = SchedConfig::v7_3();
        cfg.preempt = model;
        let r = run(cfg, 1, 2, vec![hog("hog", 0), sleeper("lat", 50_000, 5_000_000)], false);
        let lat = &r.tasks[1];
        let p = lat.stats.wakeup_latency.percentiles();
        assert!(p.count > 300, "{model:?}: {p:?}");
        // A sleeper with positive lag is the EEVDF pick at once: it preempts at the interrupt
        // return under every model (the hog runs in user mode).
        assert!(p.p50 < 100_000, "{model:?}: p50 {} ns", p.p50);
        assert!(r.counters.nr_wakeup_preemptions > 300, "{model:?}: {:?}", r.counters);
    }
}

/// What a trace counts at a wakeup (`sched_wakeup`, then the wakee's next `sched_switch`): the
/// wakee's first switch-in replaced a running task or the idle task, whichever request made the
/// switch. Beside a user-mode hog on one CPU every such switch-in replaces the hog: with
/// WAKEUP_PREEMPTION the wakeup's own check preempts it, without it the sleeper waits for the
/// end of the hog's request (a tick or hrtick request), and the count is the same. Alone on its
/// CPU, every switch-in after a wakeup leaves idle.
#[test]
fn wakee_switch_ins_are_told_by_what_they_replace() {
    for wakeup_preemption in [true, false] {
        let mut cfg = SchedConfig::v7_3();
        if !wakeup_preemption {
            cfg.features.apply("NO_WAKEUP_PREEMPTION").unwrap();
        }
        let r = run(cfg, 1, 1, vec![hog("hog", 0), sleeper("s", 100_000, 3_000_000)], true);
        let (hog, s, w) = (&r.tasks[0].stats, &r.tasks[1].stats, r.tasks[1].wakee_switch_ins);
        assert!(s.nr_wakeups > 200, "{s:?}");
        // The run may end between the last wakeup and its switch-in.
        assert!(s.nr_wakeups - w.preempting <= 1, "{wakeup_preemption}: {s:?} {w:?}");
        assert_eq!(w.from_idle, 0, "{w:?}");
        if wakeup_preemption {
            // Some of those switches follow the enqueue's update_curr() request (the hog's
            // protection had run out), not the wakeup check's: a request is tagged once.
            assert!(hog.nr_wakeup_preemptions > 0, "{hog:?}");
            assert!(hog.nr_wakeup_preemptions <= w.preempting, "{hog:?}\n{w:?}");
        } else {
            assert_eq!(hog.nr_wakeup_preemptions, 0, "{hog:?}");
        }
    }
    let r = run(SchedConfig::v7_3(), 1, 1, vec![sleeper("s", 100_000, 3_000_000)], true);
    let (s, w) = (&r.tasks[0].stats, r.tasks[0].wakee_switch_ins);
    assert!(s.nr_wakeups > 200 && s.nr_wakeups - w.from_idle <= 1, "{s:?} {w:?}");
    assert_eq!(w.preempting, 0, "{w:?}");
}

/// Delayed dequeue keeps ineligible sleepers queued: with it, some wakeups find the task still
/// queued (no migration possible); the feature toggles it off.
#[test]
fn delay_dequeue_is_visible_in_nr_running() {
    let mk = |f: Option<&str>| {
        let mut cfg = SchedConfig::v7_3();
        if let Some(f) = f {
            cfg.features.apply(f).unwrap();
        }
        assert_eq!(cfg.features.has(Feature::DELAY_DEQUEUE), f.is_none());
        run(cfg, 1, 1, vec![hog("hog", 0), sleeper("s", 3_000_000, 200_000)], true)
    };
    let on = mk(None);
    let off = mk(Some("NO_DELAY_DEQUEUE"));
    assert!(on.counters.nr_switches > 0 && off.counters.nr_switches > 0);
    assert_ne!(on.tasks[1].sum_exec_runtime_ns, off.tasks[1].sum_exec_runtime_ns);
}

/// Two CPU hogs started on one CPU of smp:2 end on different CPUs: balancing works.
#[test]
fn balancing_spreads_two_hogs() {
    let mut a = hog("a", 0);
    let mut b = hog("b", 0);
    // A pinned blocker keeps CPU 1 busy while both hogs are forked, so fork placement puts
    // both on CPU 0; when the blocker exits after 50 ms, balancing must move one of them.
    a.start_ns = 1_000;
    b.start_ns = 2_000;
    let mut blocker = task("blocker", 0, vec![Op::Run { ns: 50_000_000 }, Op::Exit]);
    blocker.cpus = Some(vec![1]);
    let r = run(SchedConfig::v7_3(), 2, 2, vec![blocker, a, b], true);
    let (ta, tb) = (&r.tasks[1], &r.tasks[2]);
    assert_eq!(r.tasks[1].stats.nr_migrations + r.tasks[2].stats.nr_migrations, 1, "one hog moved, once");
    // Without migration both hogs would share CPU 0 for the whole run (1 s each).
    assert!(
        ta.sum_exec_runtime_ns + tb.sum_exec_runtime_ns > 3_800_000_000,
        "{} {}",
        ta.sum_exec_runtime_ns,
        tb.sum_exec_runtime_ns
    );
    assert!(r.counters.nr_migrations >= 1, "{:?}", r.counters);
}

/// PELT runs with the engine: a lone hog's utilisation saturates, a task busy a quarter of the
/// time settles near a quarter, and a hog sharing a CPU with another has full load.
#[test]
fn pelt_follows_the_tasks() {
    let r = run(SchedConfig::v7_3(), 2, 2, vec![hog("hog", 0), sleeper("quarter", 1_000_000, 3_000_000)], true);
    let hog_util = r.tasks[0].util_avg;
    let q_util = r.tasks[1].util_avg;
    assert!(hog_util >= 1000, "hog util {hog_util}");
    assert!((180..=340).contains(&q_util), "quarter-busy util {q_util}");
}

/// The whole machine model (SMT idle cores, SIS_UTIL, NUMA balancing domains) keeps every
/// invariant on real topologies.
#[test]
fn invariants_hold_on_preset_machines() {
    for name in ["desktop-8c16t", "spr-2s-192", "arm64-128"] {
        let mut tasks: Vec<TaskSpec> =
            (0..40).map(|i| sleeper(&format!("s{i}"), 20_000 + i * 3_000, 60_000 + i * 7_000)).collect();
        tasks.extend((0..6).map(|i| hog(&format!("h{i}"), 0)));
        // Separate processes: threads of one process would be aggregated into one LLC by 7.3's
        // cache-aware balancing (CONFIG_SCHED_CACHE, tested in lab/tests/balance.rs), which is
        // not what this test is about.
        for (i, t) in tasks.iter_mut().enumerate() {
            t.mm = i as u32;
        }
        let setup = SimSetup {
            sched: SchedConfig::v7_3(),
            topology: Topology::by_name(name).unwrap(),
            seed: 7,
            limits: Limits { max_events: 10_000_000, max_time_ns: 50_000_000 },
            tasks,
            objects: vec![],
            check_invariants: true,
            groups: Vec::new(),
        };
        let r = Sim::new(setup).unwrap().run().unwrap_or_else(|v| panic!("{name}: {v}"));
        assert!(r.counters.nr_wakeups > 500, "{name}: {:?}", r.counters);
        // Fork placement spreads 46 tasks over idle CPUs: no CPU runs two of them.
        if r.idle_ns_per_cpu.len() >= 46 {
            assert_eq!(r.counters.nr_involuntary_switches, 0, "{name}: {:?}", r.counters);
        }
    }
}

/// Seeds matter: cost jitter makes runs with different seeds differ (as runs on a real machine
/// do), while the same seed repeats exactly. With jitter off and NI_RANDOM (the only other
/// random stream) off, the seed no longer matters.
#[test]
fn seeds_vary_runs_through_cost_jitter() {
    let go = |seed: u64, jitter: u64| {
        let mut topology = Topology::smp(2);
        topology.costs.jitter_pct = jitter;
        let mut sched = SchedConfig::v7_3();
        sched.features.set(Feature::NI_RANDOM, jitter > 0);
        let setup = SimSetup {
            sched,
            topology,
            seed,
            limits: Limits { max_events: 10_000_000, max_time_ns: 300_000_000 },
            tasks: vec![sleeper("a", 30_000, 50_000), sleeper("b", 70_000, 20_000), hog("h", 0)],
            objects: vec![],
            check_invariants: false,
            groups: Vec::new(),
        };
        let r = Sim::new(setup).unwrap().run().unwrap();
        (r.events, r.tasks.iter().map(|t| t.sum_exec_runtime_ns).collect::<Vec<_>>())
    };
    assert_eq!(go(1, 10), go(1, 10));
    assert_ne!(go(1, 10), go(2, 10));
    assert_eq!(go(1, 0), go(2, 0));
}

#[test]
fn kernel_threads_do_not_keep_a_run_alive() {
    // A 13 ms job beside a kernel thread that wakes every 100 µs forever: the run ends when the
    // job exits, and the report marks which task was the kernel thread.
    let job = task("job", 0, vec![Op::Run { ns: 13_000_000 }, Op::Exit]);
    let kworker = TaskSpec {
        kthread: true,
        ..task(
            "kworker/0:1",
            0,
            vec![
                Op::Timer { slot: 0, period_ns: 100_000, absolute: true },
                Op::Run { ns: 5_000 },
                Op::Loop { target: 0, slot: 0, count: u32::MAX },
            ],
        )
    };
    let r = run(SchedConfig::v7_3(), 1, 1, vec![job, kworker], true);
    assert_eq!(r.stop, StopReason::AllExited);
    assert!(r.simulated_ns < 15_000_000, "ran to {} ns", r.simulated_ns);
    assert_eq!(r.tasks.iter().map(|t| t.kthread).collect::<Vec<_>>(), [false, true]);
    // The kernel thread woke meanwhile (its timer is a timer-wheel timer: at the ticks of the
    // job's CPU, 4 ms apart) and preempted the job.
    assert!(r.tasks[1].stats.nr_wakeups >= 3, "{}", r.tasks[1].stats.nr_wakeups);
    assert!(r.tasks[0].stats.nr_involuntary_switches > 0);
}

/// One 100 ms computation alone on a CPU, with a given timer-interrupt cost and no jitter:
/// (simulated ns until it exits, its `sum_exec_runtime`).
fn lone_compute(timer_irq_ns: u64) -> (u64, u64) {
    let mut topology = Topology::smp(1);
    topology.costs.timer_irq_ns = timer_irq_ns;
    topology.costs.jitter_pct = 0;
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology,
        seed: 1,
        limits: Limits { max_events: 1_000_000, max_time_ns: 1_000_000_000 },
        tasks: vec![task("calc", 0, vec![Op::Run { ns: 100_000_000 }, Op::Exit])],
        objects: vec![],
        check_invariants: true,
        groups: Vec::new(),
    };
    let r = Sim::new(setup).unwrap().run().unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(r.stop, StopReason::AllExited);
    let t = r.tasks.iter().find(|t| t.comm == "calc").unwrap();
    (r.simulated_ns, t.sum_exec_runtime_ns)
}

/// Debian's kernels have no IRQ-time accounting: a timer interrupt's time is the interrupted
/// task's runtime. 100 ms of work at HZ=250 meets 25 ticks, so with 10 µs per interrupt it
/// ends 25 x 10 µs later, and its charged runtime grows by the same (`timer_irq_time`).
#[test]
fn timer_interrupts_delay_the_interrupted_task_and_are_charged_to_it() {
    let (end0, run0) = lone_compute(0);
    let (end1, run1) = lone_compute(10_000);
    let ticks = (end1 - end0) / 10_000;
    assert!((24..=26).contains(&ticks), "the work ended {} ns later", end1 - end0);
    assert_eq!(run1 - run0, end1 - end0, "the interrupts' time is charged to the task");
}

/// The times (ns) of every `sched_waking` of `comm` and the CPU it ran on, and of every switch
/// that put `comm` on a CPU, in a traced run of `tasks` on `cpus` CPUs whose idle state halts
/// with a 50 µs exit latency (no polling, no jitter).
fn wakings_and_switch_ins(cpus: u32, tasks: Vec<TaskSpec>, comm: &str) -> (Vec<(u64, u32)>, Vec<u64>) {
    use sim::trace::{TraceEvent, TraceSink};
    use std::{cell::RefCell, rc::Rc};
    type Log = Rc<RefCell<(Vec<(u64, u32)>, Vec<u64>)>>;
    struct Sink(Log, String);
    impl TraceSink for Sink {
        fn event(&mut self, ts: u64, cpu: u32, ev: &TraceEvent<'_>) {
            match ev {
                TraceEvent::Waking { task, .. } if task.comm == self.1 => self.0.borrow_mut().0.push((ts, cpu)),
                TraceEvent::Switch { next, .. } if next.comm == self.1 => self.0.borrow_mut().1.push(ts),
                _ => {}
            }
        }
    }
    let mut topology = Topology::smp(cpus);
    for (key, ns) in
        [("idle_exit_ns_c1", 50_000), ("idle_exit_ns_deep", 50_000), ("idle_poll_ns", 0), ("jitter_pct", 0)]
    {
        topology.costs.set(key, ns).unwrap();
    }
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology,
        seed: 1,
        limits: Limits { max_events: 10_000_000, max_time_ns: 1_000_000_000 },
        tasks,
        objects: vec![],
        check_invariants: true,
        groups: Vec::new(),
    };
    let log: Log = Rc::default();
    let (r, _) = Sim::new(setup).unwrap().run_traced(Box::new(Sink(log.clone(), comm.to_string())));
    assert_eq!(r.unwrap().stop, StopReason::AllExited);
    log.borrow().clone()
}

/// A timer interrupt cannot be taken by a halted CPU: `default_idle()` halts with interrupts
/// enabled and the handler runs once the CPU executes again, so a sleeper's hrtimer wakeup on
/// an idle CPU comes one exit latency after the expiry, and its switch-in follows at once
/// (the exit is already paid). Before, the model woke the sleeper at the expiry and then paid
/// the exit latency with the sleeper queued, so the CPU looked busy to wakeups meanwhile.
#[test]
fn a_timer_on_a_halted_cpu_fires_after_the_exit_latency() {
    let sleeper = TaskSpec {
        cpus: Some(vec![0]),
        timer_slack_ns: 0,
        ..task("sleeper", 0, vec![Op::Sleep { ns: 1_000_000 }, Op::Run { ns: 10_000 }, Op::Exit])
    };
    let (wakings, ins) = wakings_and_switch_ins(1, vec![sleeper], "sleeper");
    assert_eq!(wakings.len(), 1, "{wakings:?}");
    // It went to sleep a few µs after its first switch-in (syscall entry, no jitter).
    let (started, woken) = (ins[0], wakings[0].0);
    let late = woken - started - 1_000_000;
    assert!((50_000..55_000).contains(&late), "woken {late} ns after the expiry: want the 50 µs exit latency");
    let back = ins.iter().copied().find(|&t| t >= woken).unwrap();
    assert!(back - woken < 10_000, "switched in {} ns after its wakeup", back - woken);
}

/// Timer migration (kernel/time/timer_migration.c, 6.9+): an unbound kernel thread's timeout
/// that expires while its CPU idles is run by a busy CPU from its own tick, so the thread is
/// woken there (from the busy CPU, at a jiffy boundary); a kernel thread bound to the idle
/// CPU (a per-CPU kworker's pinned timer) wakes its own CPU.
#[test]
fn an_unbound_kthread_timeout_fires_on_a_busy_cpu() {
    let busy = || TaskSpec { cpus: Some(vec![1]), ..task("busy", 0, vec![Op::Run { ns: 60_000_000 }, Op::Exit]) };
    let kthread = |cpus: Option<Vec<u32>>| TaskSpec {
        kthread: true,
        cpus,
        timer_slack_ns: 0,
        ..task(
            "kt",
            0,
            vec![
                Op::Run { ns: 5_000 },
                Op::Timer { slot: 0, period_ns: 10_001_000, absolute: true },
                Op::Run { ns: 5_000 },
                Op::Loop { target: 1, slot: 0, count: u32::MAX },
            ],
        )
    };
    let tick = SchedConfig::v7_3().tick_nsec();
    // Unbound: it first runs on the idle CPU 0 (the busy task holds CPU 1), then every timeout
    // is woken by CPU 1 at its tick.
    let (wakings, _) = wakings_and_switch_ins(2, vec![busy(), kthread(None)], "kt");
    assert!(wakings.len() >= 4, "{wakings:?}");
    for &(t, cpu) in &wakings {
        assert_eq!(cpu, 1, "woken on CPU {cpu} at {t} ns: {wakings:?}");
        assert_eq!(t % tick, 0, "woken at {t} ns, not at a tick of CPU 1");
    }
    // Bound to CPU 0: its own CPU takes the interrupt once it has left idle.
    let (wakings, _) = wakings_and_switch_ins(2, vec![busy(), kthread(Some(vec![0]))], "kt");
    assert!(wakings.len() >= 4, "{wakings:?}");
    assert!(wakings.iter().all(|&(_, cpu)| cpu == 0), "{wakings:?}");
}

/// `LoopUntil` is a busy loop on the clock: a task sharing one CPU with a hog leaves it 2 ms
/// (of time) after its own start, having run only about half of that, and its launcher's
/// `wait()` returns then.
#[test]
fn loop_until_ends_by_the_clock_not_cpu_time() {
    let mut child =
        task("clock", 0, vec![Op::Run { ns: 50_000 }, Op::LoopUntil { target: 0, slot: 0, ns: 2_000_000 }, Op::Exit]);
    child.cpus = Some(vec![0]);
    child.spawned = true;
    let mut launcher =
        task("launcher", 0, vec![Op::Run { ns: 300_000 }, Op::Spawn { spec: 1 }, Op::WaitChildren, Op::Exit]);
    launcher.cpus = Some(vec![0]);
    let mut other = hog("hog", 0);
    other.cpus = Some(vec![0]);
    let r = run(SchedConfig::v7_3(), 1, 1, vec![launcher, child, other], true);
    let c = r.tasks.iter().find(|t| t.comm == "clock").unwrap();
    let l = r.tasks.iter().find(|t| t.comm == "launcher").unwrap();
    assert!(c.exited && l.exited, "{c:?}\n{l:?}");
    // Created after the launcher's 0.3 ms of CPU (shared with the hog: about 0.6 ms of time).
    let runtime = c.sum_exec_runtime_ns;
    assert!((800_000..1_300_000).contains(&runtime), "the child ran {runtime} ns of its 2 ms");
    assert_eq!(l.stats.nr_wakeups, 1, "{l:?}");
}

/// `LoopWhileEmpty` polls without reading: a poller repeats 10 µs of work until a writer that
/// sleeps 1 ms has put a byte in the pipe, then leaves (about 100 passes, not one, not all of
/// its time limit); an empty body is rejected as `LoopUntil`'s is.
#[test]
fn loop_while_empty_polls_until_the_object_has_data() {
    use sim::ipc::ObjectSpec;
    let poller = task("poller", 0, vec![Op::Run { ns: 10_000 }, Op::LoopWhileEmpty { target: 0, obj: 0 }, Op::Exit]);
    let writer = task("writer", 0, vec![Op::Sleep { ns: 1_000_000 }, Op::Write { obj: 0, bytes: 1 }, Op::Exit]);
    let setup = |tasks: Vec<TaskSpec>| SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(2),
        seed: 1,
        limits: Limits { max_events: 1_000_000, max_time_ns: 1_000_000_000 },
        tasks,
        objects: vec![ObjectSpec::Pipe { slots: 16 }],
        check_invariants: true,
        groups: Vec::new(),
    };
    let r = Sim::new(setup(vec![poller.clone(), writer])).unwrap().run().unwrap();
    assert_eq!(r.stop, StopReason::AllExited);
    let p = r.tasks.iter().find(|t| t.comm == "poller").unwrap();
    assert!((1_000_000..1_200_000).contains(&p.sum_exec_runtime_ns), "{p:?}");
    let spin = task("spin", 0, vec![Op::LoopWhileEmpty { target: 0, obj: 0 }, Op::Exit]);
    assert!(Sim::new(setup(vec![spin])).is_err());
}

/// A `LoopUntil` whose body is empty (it jumps to itself) would spin without simulated time
/// passing: it is rejected when the simulation is built.
#[test]
fn loop_until_needs_a_body() {
    let t = task("spin", 0, vec![Op::LoopUntil { target: 0, slot: 0, ns: 1_000 }, Op::Exit]);
    let setup = SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(1),
        seed: 1,
        limits: Limits { max_events: 1_000, max_time_ns: 1_000_000 },
        tasks: vec![t],
        objects: vec![],
        check_invariants: false,
        groups: Vec::new(),
    };
    assert!(Sim::new(setup).is_err());
}
