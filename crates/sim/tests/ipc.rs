//! IPC through the engine: pipes, unix and TCP sockets, futexes, eventfds, poll/epoll, spawn and
//! wait, all with the invariant checker on.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed unwrap is a failed test")]

use sim::config::{Limits, SchedConfig};
use sim::engine::{Sim, SimReport, SimSetup, StopReason};
use sim::ipc::{IpcParams, ObjectSpec};
use sim::program::{Op, TaskSpec};
use sim::topology::Topology;

fn task(comm: &str, ops: Vec<Op>) -> TaskSpec {
    TaskSpec::new(comm, ops)
}

fn pinned(mut t: TaskSpec, cpu: u32) -> TaskSpec {
    t.cpus = Some(vec![cpu]);
    t
}

fn setup(cpus: u32, tasks: Vec<TaskSpec>, objects: Vec<ObjectSpec>) -> SimSetup {
    SimSetup {
        sched: SchedConfig::v7_3(),
        topology: Topology::smp(cpus),
        seed: 7,
        limits: Limits { max_events: 50_000_000, max_time_ns: 10_000_000_000 },
        tasks,
        objects,
        check_invariants: true,
        groups: Vec::new(),
    }
}

fn run_sim(sim: Sim) -> SimReport {
    sim.run().unwrap_or_else(|v| panic!("{v}"))
}

fn run(cpus: u32, tasks: Vec<TaskSpec>, objects: Vec<ObjectSpec>) -> SimReport {
    run_sim(Sim::new(setup(cpus, tasks, objects)).expect("valid setup"))
}

const PIPE: ObjectSpec = ObjectSpec::Pipe { slots: 16 };

fn mark(r: &SimReport, id: u16) -> u64 {
    r.marks.get(&id).unwrap_or_else(|| panic!("mark {id} not reached")).first_ns
}

/// Classic `perf bench sched pipe` (one token): A reads P0 and answers on P1, B starts.
fn classic_pipe(loops: u32) -> Vec<TaskSpec> {
    let a = task(
        "a",
        vec![
            Op::Read { obj: 0, bytes: 4, exact: true },
            Op::Write { obj: 1, bytes: 4 },
            Op::Loop { target: 0, slot: 0, count: loops },
            Op::Exit,
        ],
    );
    let b = task(
        "b",
        vec![
            Op::Write { obj: 0, bytes: 4 },
            Op::Read { obj: 1, bytes: 4, exact: true },
            Op::Loop { target: 0, slot: 0, count: loops },
            Op::Exit,
        ],
    );
    vec![a, b]
}

/// On one CPU every round trip is two context switches and (at most) two sync wakeups, as
/// `perf stat` shows for `taskset -c 0 perf bench sched pipe`; each takes a few µs.
#[test]
fn pipe_ping_pong_on_one_cpu() {
    let loops = 10_000;
    let r = run(1, classic_pipe(loops), vec![PIPE, PIPE]);
    assert_eq!(r.stop, StopReason::AllExited);
    let l = u64::from(loops);
    let switches = r.counters.nr_switches;
    assert!((2 * l - 5..=2 * l + 5).contains(&switches), "{switches} switches for {loops} round trips");
    for t in &r.tasks {
        assert!(t.stats.nr_wakeups > 0, "{} never woke", t.comm);
        assert_eq!(t.stats.nr_wakeups_sync, t.stats.nr_wakeups, "{}: pipe wakeups are sync", t.comm);
        let per_side = t.stats.nr_switches;
        assert!((l - 2..=l + 2).contains(&per_side), "{}: {per_side} switches", t.comm);
    }
    let per_op = r.simulated_ns as f64 / loops as f64;
    // §10.1 anchor: 5.34 µs per round trip (processes, one CPU).
    assert!((3_000.0..8_000.0).contains(&per_op), "{per_op} ns per round trip");
}

/// Unpinned on two CPUs the partners end up on different CPUs and the round trip is cheaper
/// than on one CPU (no context switch in the critical path once both CPUs poll in idle).
#[test]
fn pipe_ping_pong_on_two_cpus() {
    let loops = 10_000;
    let one = run(1, classic_pipe(loops), vec![PIPE, PIPE]);
    let r = run(2, classic_pipe(loops), vec![PIPE, PIPE]);
    assert_eq!(r.stop, StopReason::AllExited);
    for t in &r.tasks {
        assert_eq!(t.stats.nr_wakeups_sync, t.stats.nr_wakeups);
    }
    // Every read blocks: about one wakeup per task per loop.
    let wakeups: u64 = r.tasks.iter().map(|t| t.stats.nr_wakeups).sum();
    assert!(wakeups >= 2 * u64::from(loops) - 2, "{wakeups} wakeups");
    assert!(r.simulated_ns < one.simulated_ns, "2 CPUs {} ns vs 1 CPU {} ns", r.simulated_ns, one.simulated_ns);
    assert!(r.idle_ns_per_cpu.iter().all(|&i| i > 0));
}

/// A writer that fills a pipe sleeps until the reader has released a whole slot: 39 reads of
/// the first page wake nobody, the 40th does.
#[test]
fn pipe_writer_wakes_only_when_a_whole_slot_is_released() {
    let writer = pinned(
        task(
            "writer",
            vec![
                Op::Write { obj: 0, bytes: 100 },
                Op::Loop { target: 0, slot: 0, count: 641 },
                Op::Mark { id: 1 },
                Op::Exit,
            ],
        ),
        1,
    );
    let reader = pinned(
        task(
            "reader",
            vec![
                Op::Sleep { ns: 1_000_000 },
                Op::Read { obj: 0, bytes: 100, exact: true },
                Op::Loop { target: 1, slot: 0, count: 39 },
                Op::Sleep { ns: 5_000_000 },
                Op::Mark { id: 2 },
                Op::Read { obj: 0, bytes: 100, exact: true },
                Op::Mark { id: 3 },
                Op::Read { obj: 0, bytes: 100, exact: true },
                Op::Loop { target: 7, slot: 1, count: 601 },
                Op::Exit,
            ],
        ),
        0,
    );
    let r = run(2, vec![writer, reader], vec![PIPE]);
    assert_eq!(r.stop, StopReason::AllExited);
    let w = &r.tasks[0].stats;
    assert_eq!(w.nr_wakeups, 1, "one wakeup, when the slot was released");
    assert_eq!(w.nr_wakeups_sync, 1);
    // The 641st write completes only after the 40th read.
    assert!(mark(&r, 1) > mark(&r, 3), "writer done at {} before the 40th read at {}", mark(&r, 1), mark(&r, 3));
    assert!(mark(&r, 2) > 6_000_000);
}

/// Unix stream: senders sharing one socket block at `wmem ≥ sndbuf`; the reader wakes all of
/// them (sync) when it has freed the queue down to a quarter of sndbuf.
#[test]
fn unix_stream_wakes_all_blocked_senders_at_the_quarter_mark() {
    let sndbuf = 768 * 8; // eight 100-byte skbs
    let sender = |i: u32| {
        pinned(
            task(
                &format!("sender{i}"),
                vec![
                    Op::Write { obj: 0, bytes: 100 },
                    Op::Loop { target: 0, slot: 0, count: 4 },
                    Op::Mark { id: 1 + i as u16 },
                    Op::Exit,
                ],
            ),
            1 + i,
        )
    };
    let mut reader_ops = vec![Op::Sleep { ns: 1_000_000 }];
    for k in 1..=12u16 {
        reader_ops.push(Op::Read { obj: 0, bytes: 100, exact: true });
        reader_ops.push(Op::Mark { id: 10 + k });
        reader_ops.push(Op::Run { ns: 20_000 });
    }
    reader_ops.push(Op::Exit);
    let reader = pinned(task("reader", reader_ops), 0);
    let r = run(4, vec![sender(0), sender(1), sender(2), reader], vec![ObjectSpec::UnixStream { sndbuf }]);
    assert_eq!(r.stop, StopReason::AllExited);
    let blocked: Vec<usize> = (0..3).filter(|&i| r.tasks[i].stats.nr_wakeups > 0).collect();
    assert!(blocked.len() >= 2, "a herd of blocked senders: {blocked:?}");
    for &i in &blocked {
        let st = &r.tasks[i].stats;
        assert_eq!((st.nr_wakeups, st.nr_wakeups_sync), (1, 1), "sender{i}");
        // Woken by the 6th read (2 skbs = 1536 B ≤ 6144 / 4), not before.
        let done = mark(&r, 1 + i as u16);
        assert!(done > mark(&r, 16) && done < mark(&r, 17), "sender{i} done at {done}");
    }
}

/// TCP over loopback request/response: every wakeup is sync (from the sender's softirq).
#[test]
fn tcp_loopback_round_trips() {
    let loops = 1_000;
    let client = task(
        "netperf",
        vec![
            Op::Write { obj: 0, bytes: 1 },
            Op::Read { obj: 1, bytes: 1, exact: true },
            Op::Count { id: 1 },
            Op::Loop { target: 0, slot: 0, count: loops },
            Op::Exit,
        ],
    );
    let server = task(
        "netserver",
        vec![
            Op::Read { obj: 0, bytes: 1, exact: true },
            Op::Write { obj: 1, bytes: 1 },
            Op::Loop { target: 0, slot: 0, count: loops },
            Op::Exit,
        ],
    );
    let tcp = ObjectSpec::TcpLoopback { sndbuf: 16_384 };
    let r = run(2, vec![client, server], vec![tcp.clone(), tcp]);
    assert_eq!(r.stop, StopReason::AllExited);
    assert_eq!(r.counts[&1], u64::from(loops));
    for t in &r.tasks {
        assert!(t.stats.nr_wakeups > 0);
        assert_eq!(t.stats.nr_wakeups_sync, t.stats.nr_wakeups);
    }
    let per_txn = r.simulated_ns / u64::from(loops);
    assert!((5_000..20_000).contains(&per_txn), "{per_txn} ns per transaction");
}

/// `FUTEX_WAKE` of n wakes n waiters, without WF_SYNC; a wake with nobody waiting is kept.
#[test]
fn futex_wake_of_n() {
    let waiter = |i: u16| task(&format!("w{i}"), vec![Op::FutexWait { obj: 0 }, Op::Mark { id: 1 + i }, Op::Exit]);
    let waker = task(
        "waker",
        vec![
            Op::Sleep { ns: 1_000_000 },
            Op::FutexWake { obj: 0, n: 2 },
            Op::Sleep { ns: 1_000_000 },
            Op::Mark { id: 9 },
            Op::FutexWake { obj: 0, n: 3 },
            Op::Exit,
        ],
    );
    let late = {
        let mut t = waiter(5);
        t.start_ns = 3_000_000;
        t
    };
    let tasks = vec![waiter(0), waiter(1), waiter(2), waiter(3), waker, late];
    let r = run(4, tasks, vec![ObjectSpec::Futex]);
    assert_eq!(r.stop, StopReason::AllExited);
    let early = (1..=4).filter(|&id| mark(&r, id) < mark(&r, 9)).count();
    assert_eq!(early, 2, "the first wake(2) wakes two waiters");
    for t in &r.tasks[..4] {
        assert_eq!((t.stats.nr_wakeups, t.stats.nr_wakeups_sync), (1, 0), "{}", t.comm);
    }
    // wake(3) found two waiters: one wake stays pending, so the late waiter does not sleep.
    assert_eq!(r.tasks[5].stats.nr_wakeups, 0);
    assert!(mark(&r, 6) >= 3_000_000);
}

/// `poll()` on two pipes wakes on a write to either, with the writer's WF_SYNC; data already
/// there means no sleep.
#[test]
fn poll_on_two_pipes() {
    let mut poller = task(
        "poller",
        vec![
            Op::Poll { set: 0 },
            Op::Mark { id: 1 },
            Op::Read { obj: 1, bytes: 4, exact: true },
            Op::Poll { set: 0 },
            Op::Read { obj: 0, bytes: 4, exact: true },
            Op::Mark { id: 2 },
            Op::Exit,
        ],
    );
    poller.poll_sets = vec![vec![0, 1]];
    let writer = task(
        "writer",
        vec![Op::Sleep { ns: 1_000_000 }, Op::Write { obj: 1, bytes: 4 }, Op::Write { obj: 0, bytes: 4 }, Op::Exit],
    );
    let r = run(2, vec![poller, writer], vec![PIPE, PIPE]);
    assert_eq!(r.stop, StopReason::AllExited);
    let p = &r.tasks[0].stats;
    assert!(mark(&r, 1) > 1_000_000);
    assert_eq!(p.nr_wakeups_sync, p.nr_wakeups);
    assert!((1..=2).contains(&p.nr_wakeups), "{} wakeups", p.nr_wakeups);
}

/// The hackbench start barrier: one write to the `wake` pipe wakes every poller at once, each
/// with WF_SYNC.
#[test]
fn one_write_wakes_all_pollers() {
    let mut tasks: Vec<TaskSpec> = (0..8)
        .map(|i| {
            let mut t = task(&format!("child{i}"), vec![Op::Poll { set: 0 }, Op::Run { ns: 10_000 }, Op::Exit]);
            t.poll_sets = vec![vec![0]];
            t
        })
        .collect();
    tasks.push(task("main", vec![Op::Sleep { ns: 1_000_000 }, Op::Write { obj: 0, bytes: 1 }, Op::Exit]));
    let r = run(4, tasks, vec![PIPE]);
    assert_eq!(r.stop, StopReason::AllExited);
    for t in &r.tasks[..8] {
        assert_eq!((t.stats.nr_wakeups, t.stats.nr_wakeups_sync), (1, 1), "{}", t.comm);
    }
}

/// `epoll_wait` inherits WF_SYNC from 6.10 on; before, its wakes are never sync.
#[test]
fn epoll_sync_follows_the_kernel_version() {
    let tasks = || {
        let mut waiter =
            task("backend", vec![Op::EpollWait { set: 0 }, Op::Read { obj: 0, bytes: 10, exact: true }, Op::Exit]);
        waiter.poll_sets = vec![vec![0]];
        let client = task("client", vec![Op::Sleep { ns: 100_000 }, Op::Write { obj: 0, bytes: 10 }, Op::Exit]);
        vec![waiter, client]
    };
    let sock = ObjectSpec::UnixStream { sndbuf: 212_992 };
    let new = run(2, tasks(), vec![sock.clone()]);
    assert_eq!((new.tasks[0].stats.nr_wakeups, new.tasks[0].stats.nr_wakeups_sync), (1, 1));
    let mut sim = Sim::new(setup(2, tasks(), vec![sock])).unwrap();
    let mut p = IpcParams::v7_3();
    p.behavior.epoll_sync = false;
    sim.set_ipc_params(p);
    let old = run_sim(sim);
    assert_eq!((old.tasks[0].stats.nr_wakeups, old.tasks[0].stats.nr_wakeups_sync), (1, 0));
}

/// Spawned children run, their exits wake the parent in `wait()` (non-sync, see
/// engine/ipc.rs), and the parent continues only when all have exited.
#[test]
fn spawn_and_wait_children() {
    let main = task(
        "main",
        vec![
            Op::Spawn { spec: 1 },
            Op::Loop { target: 0, slot: 0, count: 3 },
            Op::WaitChildren,
            Op::Mark { id: 1 },
            Op::Exit,
        ],
    );
    let mut child = task("child", vec![Op::Run { ns: 1_000_000 }, Op::Mark { id: 2 }, Op::Exit]);
    child.spawned = true;
    let r = run(4, vec![main, child], vec![]);
    assert_eq!(r.stop, StopReason::AllExited);
    assert_eq!(r.tasks.len(), 4);
    let m = r.marks[&2];
    assert_eq!(m.count, 3);
    assert!(mark(&r, 1) >= m.last_ns, "the parent waited for the last child");
    // Spread over the idle CPUs by fork placement: they run in parallel.
    assert!(m.last_ns < 1_500_000, "children finished at {}", m.last_ns);
    let st = &r.tasks[0].stats;
    assert!((1..=3).contains(&st.nr_wakeups));
    assert_eq!(st.nr_wakeups_sync, 0);
}

/// eventfd: a write wakes every blocked reader (non-sync); the first consumes the count, the
/// other sleeps again until the next write.
#[test]
fn eventfd_wakes_all_readers() {
    let reader =
        |name: &str, id: u16| task(name, vec![Op::Read { obj: 0, bytes: 8, exact: true }, Op::Mark { id }, Op::Exit]);
    let writer = task(
        "writer",
        vec![
            Op::Sleep { ns: 1_000_000 },
            Op::Write { obj: 0, bytes: 8 },
            Op::Sleep { ns: 1_000_000 },
            Op::Write { obj: 0, bytes: 8 },
            Op::Exit,
        ],
    );
    let r = run(1, vec![reader("r1", 1), reader("r2", 2), writer], vec![ObjectSpec::EventFd]);
    assert_eq!(r.stop, StopReason::AllExited);
    let wakeups: u64 = r.tasks[..2].iter().map(|t| t.stats.nr_wakeups).sum();
    assert_eq!(wakeups, 3);
    assert!(r.tasks[..2].iter().all(|t| t.stats.nr_wakeups_sync == 0));
    let (a, b) = (mark(&r, 1).min(mark(&r, 2)), mark(&r, 1).max(mark(&r, 2)));
    assert!((1_000_000..2_000_000).contains(&a) && b > 2_000_000);
}

/// An exact read returns short data to user space and reads again (a new call); progress is
/// kept, nothing is counted twice.
#[test]
fn exact_read_collects_short_writes() {
    let reader = task("reader", vec![Op::Read { obj: 0, bytes: 100, exact: true }, Op::Mark { id: 1 }, Op::Exit]);
    let writer = task(
        "writer",
        vec![
            Op::Sleep { ns: 100_000 },
            Op::Write { obj: 0, bytes: 50 },
            Op::Sleep { ns: 100_000 },
            Op::Write { obj: 0, bytes: 30 },
            Op::Sleep { ns: 100_000 },
            Op::Write { obj: 0, bytes: 20 },
            Op::Mark { id: 2 },
            Op::Sleep { ns: 100_000 },
            Op::Write { obj: 0, bytes: 7 },
            Op::Exit,
        ],
    );
    let r = run(2, vec![reader, writer], vec![ObjectSpec::UnixStream { sndbuf: 212_992 }]);
    assert_eq!(r.stop, StopReason::AllExited);
    assert_eq!(r.tasks[0].stats.nr_wakeups, 3);
    // Done right after the third write (the fourth is left unread).
    let (done, third) = (mark(&r, 1), mark(&r, 2));
    assert!(done > third && done - third < 20_000, "reader done at {done}, third write at {third}");
}

/// A wake that reaches a task queued on the object but still in its system call (about to
/// sleep) is not lost: the task does not sleep and retries at once. A unix socket has no lock
/// around the whole call, so the send lands while the receiver is still in recvmsg().
#[test]
fn wake_before_sleep_is_not_lost() {
    let reader =
        pinned(task("reader", vec![Op::Read { obj: 0, bytes: 4, exact: true }, Op::Mark { id: 1 }, Op::Exit]), 0);
    let mut writer = pinned(task("writer", vec![Op::Write { obj: 0, bytes: 4 }, Op::Exit]), 1);
    writer.start_ns = 1_000;
    let sock = ObjectSpec::UnixStream { sndbuf: 212_992 };
    let mut sim = Sim::new(setup(2, vec![reader, writer], vec![sock])).unwrap();
    let mut p = IpcParams::v7_3();
    p.costs.unix_recv_ns = 5_000; // the reader is still in recvmsg() when the send lands
    sim.set_ipc_params(p);
    let r = run_sim(sim);
    assert_eq!(r.stop, StopReason::AllExited);
    assert_eq!(r.tasks[0].stats.nr_wakeups, 0);
    assert!(mark(&r, 1) < 20_000, "reader done at {}", mark(&r, 1));
}

/// A pipe's read and write run under `pipe->mutex` (fs/pipe.c 7.3.4) for their last fifth (the
/// rest runs first, unlocked: `engine/ipc.rs` `PIPE_LOCKED_PCT`): a write that arrives while the
/// reader holds it waits (spinning while the owner runs), so the reader finds the pipe empty,
/// sleeps, and the write wakes it. Reader: 40 µs unlocked, then 10 µs locked; the writer comes
/// at 45 µs and would be done within half a microsecond alone.
#[test]
fn pipe_mutex_serialises_read_and_write() {
    let reader =
        pinned(task("reader", vec![Op::Read { obj: 0, bytes: 4, exact: true }, Op::Mark { id: 1 }, Op::Exit]), 0);
    let mut writer = pinned(task("writer", vec![Op::Write { obj: 0, bytes: 4 }, Op::Mark { id: 2 }, Op::Exit]), 1);
    writer.start_ns = 45_000;
    let mut s = setup(2, vec![reader, writer], vec![PIPE]);
    s.topology.costs.set("jitter_pct", 0).unwrap();
    let mut sim = Sim::new(s).unwrap();
    let mut p = IpcParams::v7_3();
    p.costs.pipe_read_ns = 50_000;
    sim.set_ipc_params(p);
    let r = run_sim(sim);
    assert_eq!(r.stop, StopReason::AllExited);
    assert_eq!(r.tasks[0].stats.nr_wakeups, 1);
    // The write completes only after the reader's read released the lock (about 50 µs).
    assert!(mark(&r, 2) > 48_000, "write done at {}", mark(&r, 2));
    assert!(mark(&r, 1) > mark(&r, 2), "reader done at {}, write at {}", mark(&r, 1), mark(&r, 2));
}

/// Instructions that do not fit their object are rejected when the simulation is built.
#[test]
fn ipc_misuse_is_rejected() {
    let bad = |ops: Vec<Op>, objects: Vec<ObjectSpec>| Sim::new(setup(1, vec![task("t", ops)], objects)).err();
    assert!(bad(vec![Op::Read { obj: 0, bytes: 1, exact: false }], vec![ObjectSpec::Futex]).is_some());
    assert!(bad(vec![Op::FutexWait { obj: 0 }], vec![PIPE]).is_some());
    assert!(bad(vec![Op::Write { obj: 1, bytes: 1 }], vec![PIPE]).is_some());
    assert!(bad(vec![Op::Write { obj: 0, bytes: 1 }], vec![ObjectSpec::Pipe { slots: 0 }]).is_some());
    let mut t = task("t", vec![Op::Poll { set: 0 }]);
    t.poll_sets = vec![vec![0]];
    assert!(Sim::new(setup(1, vec![t], vec![ObjectSpec::Futex])).is_err());
    assert!(
        bad(vec![Op::Write { obj: 0, bytes: 1 }, Op::FutexWake { obj: 1, n: 1 }], vec![PIPE, ObjectSpec::Futex])
            .is_none()
    );
}

/// Same inputs, same report.
#[test]
fn ipc_runs_are_deterministic() {
    let a = run(2, classic_pipe(2_000), vec![PIPE, PIPE]);
    let b = run(2, classic_pipe(2_000), vec![PIPE, PIPE]);
    assert_eq!(a.simulated_ns, b.simulated_ns);
    assert_eq!(a.events, b.events);
    assert_eq!(format!("{:?}", a.counters), format!("{:?}", b.counters));
}

/// `__wake_up_common()` walks a wait queue one waiter at a time under the queue's spinlock:
/// one write to a polled pipe wakes its pollers in turn, each after the waker's
/// `try_to_wake_up` time for the one before, and the waker is not preempted inside the walk,
/// even under full preemption where a woken poller on its CPU would otherwise preempt it.
#[test]
fn a_wait_queue_walk_wakes_one_waiter_at_a_time() {
    use sim::trace::{TraceEvent, TraceSink};
    use std::{cell::RefCell, rc::Rc};
    struct Log(Rc<RefCell<Vec<(u64, String, bool)>>>);
    impl TraceSink for Log {
        fn event(&mut self, ts: u64, _cpu: u32, ev: &TraceEvent<'_>) {
            match ev {
                TraceEvent::Waking { task, .. } => self.0.borrow_mut().push((ts, task.comm.to_string(), true)),
                TraceEvent::Switch { prev, .. } => self.0.borrow_mut().push((ts, prev.comm.to_string(), false)),
                _ => {}
            }
        }
    }
    for preempt in ["lazy", "full"] {
        const N: usize = 40;
        let mut tasks: Vec<TaskSpec> = (0..N)
            .map(|i| {
                let mut t = task(&format!("child{i}"), vec![Op::Poll { set: 0 }, Op::Run { ns: 10_000 }, Op::Exit]);
                t.poll_sets = vec![vec![0]];
                pinned(t, 0)
            })
            .collect();
        tasks
            .push(pinned(task("main", vec![Op::Sleep { ns: 1_000_000 }, Op::Write { obj: 0, bytes: 1 }, Op::Exit]), 0));
        let mut s = setup(1, tasks, vec![PIPE]);
        s.sched.preempt = sim::config::PreemptModel::parse(preempt).unwrap();
        // A slow walk (250 µs per wakee, 10 ms in all) that ticks interrupt: under full
        // preemption each tick's return would preempt main for the woken pollers if the walk
        // were a preemption point.
        s.topology.costs.set("wakeup_local_ns", 250_000).unwrap();
        s.topology.costs.set("jitter_pct", 0).unwrap();
        let log = Rc::new(RefCell::new(Vec::new()));
        let (r, _) = Sim::new(s).unwrap().run_traced(Box::new(Log(log.clone())));
        assert_eq!(r.unwrap().stop, StopReason::AllExited);
        let log = log.borrow();
        let wakings: Vec<u64> = log.iter().filter(|(_, c, w)| *w && c.starts_with("child")).map(|e| e.0).collect();
        assert_eq!(wakings.len(), N, "{preempt}");
        assert!(wakings.windows(2).all(|w| w[1] > w[0]), "{preempt}: one at a time: {wakings:?}");
        // main's first switch-out after its write comes after the last waking.
        let main_out = log.iter().filter(|(t, c, w)| !w && c == "main" && *t >= wakings[0]).map(|e| e.0).next();
        assert!(
            main_out.is_none_or(|t| t >= wakings[N - 1]),
            "{preempt}: main preempted inside the walk at {main_out:?}"
        );
    }
}

/// One CPU: a reader sleeps on an empty pipe of 2 slots; a writer computes 2 ms (more than its
/// slice) and writes 3 pages at once,
/// which fills the pipe: `anon_pipe_write()` wakes the reader (the pipe was empty) and waits
/// for room in `wait_event_interruptible_exclusive()`. Returns the writer's (voluntary,
/// involuntary) switches under `preempt` on v6.12.
fn full_pipe_writer_switches(preempt: sim::config::PreemptModel) -> (u64, u64) {
    let mut sched = sim::kernel::preset("v6.12").unwrap().config();
    sched.preempt = preempt;
    let reader = pinned(
        task(
            "reader",
            vec![
                Op::Read { obj: 0, bytes: 3 * 4096, exact: true },
                Op::Loop { target: 0, slot: 0, count: 20 },
                Op::Exit,
            ],
        ),
        0,
    );
    let writer = pinned(
        task(
            "writer",
            vec![
                Op::Sleep { ns: 1_000_000 },
                // Past its slice: the reader it wakes has the earlier deadline.
                Op::Run { ns: 2_000_000 },
                Op::Write { obj: 0, bytes: 3 * 4096 },
                Op::Loop { target: 0, slot: 0, count: 20 },
                Op::Exit,
            ],
        ),
        0,
    );
    let mut s = setup(1, vec![reader, writer], vec![ObjectSpec::Pipe { slots: 2 }]);
    s.sched = sched;
    let r = run_sim(Sim::new(s).unwrap());
    assert_eq!(r.stop, StopReason::AllExited);
    let w = r.tasks.iter().find(|t| t.comm == "writer").unwrap();
    (w.stats.nr_voluntary_switches, w.stats.nr_involuntary_switches)
}

/// `none` and `voluntary` differ where the kernel's do: the woken reader preempts its writer
/// (6.12's wakeup preemption, a full request under both models), and the writer, about to
/// wait for room, passes `wait_event`'s `might_sleep()`. Under PREEMPT_VOLUNTARY that is
/// `might_resched()`: the writer is preempted still runnable (an involuntary switch) and
/// re-checks the pipe when it runs again; under `none` it sleeps and the request waits for
/// the switch. Full preemption preempts at the wait queue's unlock, as voluntary does here.
#[test]
fn a_writer_that_fills_a_pipe_is_preempted_at_might_sleep_under_voluntary_only() {
    use sim::config::PreemptModel;
    let (vol_none, invol_none) = full_pipe_writer_switches(PreemptModel::None);
    let (vol_v, invol_v) = full_pipe_writer_switches(PreemptModel::Voluntary);
    let (_, invol_full) = full_pipe_writer_switches(PreemptModel::Full);
    assert_eq!(invol_none, 0, "none: the writer always sleeps ({vol_none} voluntary switches)");
    assert!(invol_v >= 10, "voluntary: {invol_v} involuntary, {vol_v} voluntary switches");
    assert_eq!(invol_full, invol_v, "full preempts at the same point");
}

/// The waker's side of one pipe wakeup, by path: two CPUs, a reader asleep on an empty pipe, a
/// writer on CPU 0 that sleeps 1 ms and writes one byte, a hog keeping CPU 1 busy (so that
/// `ttwu_queue_cond()` enqueues directly and `select_idle_sibling()` finds no idle CPU).
/// Returns the writer's CPU time with `wakeup_select_ns` 7 µs and `wakeup_remote_enqueue_ns`
/// 50 µs, minus the same run with both at 0: the extras the waker paid.
fn waker_extra_ns(reader_cpus: Option<Vec<u32>>) -> u64 {
    let writer_time = |select_ns: u64, remote_ns: u64| {
        let mut reader = task("reader", vec![Op::Read { obj: 0, bytes: 1, exact: true }, Op::Exit]);
        reader.cpus = reader_cpus.clone();
        let writer =
            pinned(task("writer", vec![Op::Sleep { ns: 1_000_000 }, Op::Write { obj: 0, bytes: 1 }, Op::Exit]), 0);
        let hog = pinned(task("hog", vec![Op::Run { ns: 5_000_000 }, Op::Exit]), 1);
        let mut s = setup(2, vec![hog, reader, writer], vec![PIPE]);
        s.topology.costs.set("jitter_pct", 0).unwrap();
        s.topology.costs.set("wakeup_select_ns", select_ns).unwrap();
        s.topology.costs.set("wakeup_remote_enqueue_ns", remote_ns).unwrap();
        let r = run_sim(Sim::new(s).unwrap());
        assert_eq!(r.stop, StopReason::AllExited);
        r.tasks.iter().find(|t| t.comm == "writer").unwrap().sum_exec_runtime_ns
    };
    writer_time(7_000, 50_000) - writer_time(0, 0)
}

/// `select_task_rq()` (core.c v7.3.4) runs `select_task_rq_fair()` only for a wakee allowed on
/// more than one CPU, and a direct enqueue on another CPU's runqueue takes that runqueue's lock:
/// the waker pays `wakeup_select_ns` for the first and `wakeup_remote_enqueue_ns` for the second.
#[test]
fn the_waker_pays_for_selection_and_for_a_remote_runqueue() {
    // Pinned to the writer's CPU: no selection, a local enqueue.
    assert_eq!(waker_extra_ns(Some(vec![0])), 0);
    // Free to run anywhere, CPU 1 busy: selected, placed on the waker's CPU (sync wakeup).
    assert_eq!(waker_extra_ns(None), 7_000);
    // Pinned to the busy CPU 1: no selection, a direct enqueue on CPU 1's runqueue.
    assert_eq!(waker_extra_ns(Some(vec![1])), 50_000);
}

/// A token ring of one-process tasks: task `i` (address space `i`, pinned to `cpus[i]`) reads
/// pipe `i` and writes pipe `i + 1`; task 0 starts the token. Each task passes it `loops` times.
fn process_ring(cpus: &[u32], loops: u32) -> Vec<TaskSpec> {
    let n = cpus.len() as u32;
    (0..n)
        .map(|i| {
            let mut ops = Vec::new();
            if i == 0 {
                ops.push(Op::Write { obj: 1 % n, bytes: 4 });
            }
            let top = ops.len() as u32;
            ops.extend([
                Op::Read { obj: i, bytes: 4, exact: true },
                Op::Write { obj: (i + 1) % n, bytes: 4 },
                Op::Loop { target: top, slot: 0, count: loops },
                Op::Exit,
            ]);
            TaskSpec { mm: i, ..pinned(task(&format!("p{i}"), ops), cpus[i as usize]) }
        })
        .collect()
}

/// The switch-ins of a run's user tasks (each task's switch-outs, its exit included).
fn user_switch_ins(r: &SimReport) -> u64 {
    r.tasks.iter().filter(|t| !t.kthread).map(|t| t.stats.nr_switches).sum()
}

/// x86 `switch_mm_irqs_off()` reloads CR3 when the next task's mm is not the CPU's loaded mm,
/// even when idle ran in between (idle borrows the loaded mm): four processes in a ring, two
/// on each CPU, each CPU going idle between them, load another mm at every switch-in.
#[test]
fn a_process_ring_through_idle_switches_mm_at_every_switch_in() {
    let loops = 2_000;
    let r = run(2, process_ring(&[0, 1, 0, 1], loops), vec![PIPE; 4]);
    assert_eq!(r.stop, StopReason::AllExited);
    let ins = user_switch_ins(&r);
    assert!(ins >= 4 * u64::from(loops), "{ins} switch-ins");
    // A task that blocks waits for the token from the other process on its CPU, so every
    // switch-in loads another mm, but for at most a few at the start, while both of a CPU's
    // tasks are runnable and one may be switched back in.
    assert!(
        r.counters.nr_mm_switches + 4 >= ins && r.counters.nr_mm_switches <= ins,
        "{} of {ins}",
        r.counters.nr_mm_switches
    );
}

/// Each CPU only ever runs one process, going idle between its runs: its mm stays loaded
/// (lazy TLB), so only each CPU's first switch-in (from `init_mm`) loads an mm.
#[test]
fn a_ping_pong_across_two_cpus_switches_mm_only_at_each_cpus_first_switch_in() {
    let loops = 2_000;
    let r = run(2, process_ring(&[0, 1], loops), vec![PIPE; 2]);
    assert_eq!(r.stop, StopReason::AllExited);
    assert!(user_switch_ins(&r) >= 2 * u64::from(loops));
    assert_eq!(r.counters.nr_mm_switches, 2);
}

/// A kernel thread borrows the process's mm (`context_switch()` → `enter_lazy_tlb()`), so the
/// process running again after it loads nothing; a second process after it does.
#[test]
fn a_kernel_thread_between_two_runs_of_one_process_leaves_its_mm_loaded() {
    let sleeper = |comm: &str, mm: u32| TaskSpec {
        mm,
        ..task(
            comm,
            vec![
                Op::Run { ns: 50_000 },
                Op::Sleep { ns: 5_000_000 },
                Op::Loop { target: 0, slot: 0, count: 50 },
                Op::Exit,
            ],
        )
    };
    // Its timer is a timer-wheel timer: it runs at every jiffy, between the sleepers' runs.
    let kworker = TaskSpec {
        kthread: true,
        ..task(
            "kworker/0:1",
            vec![
                Op::Timer { slot: 0, period_ns: 70_000, absolute: true },
                Op::Run { ns: 5_000 },
                Op::Loop { target: 0, slot: 0, count: u32::MAX },
            ],
        )
    };
    let r = run(1, vec![sleeper("a", 1), kworker.clone()], vec![]);
    assert_eq!(r.stop, StopReason::AllExited);
    assert!(r.tasks[1].stats.nr_switches >= 40, "the kernel thread ran {} times", r.tasks[1].stats.nr_switches);
    assert!(r.tasks[0].stats.nr_switches >= 50);
    assert_eq!(r.counters.nr_mm_switches, 1);
    // Two processes, each sleeping while the other runs: the kernel thread between them does
    // not hide the change of mm.
    let b = TaskSpec { start_ns: 125_000, ..sleeper("b", 2) };
    let r = run(1, vec![sleeper("a", 1), b, kworker], vec![]);
    assert_eq!(r.stop, StopReason::AllExited);
    assert!(r.counters.nr_mm_switches >= 50, "{} mm switches", r.counters.nr_mm_switches);
}
