//! ≤7.2's group levels (`fair/hier.rs`) observed event by event, with every invariant checked.

use super::{Sim, SimSetup};
use crate::config::Limits;
use crate::fair::group::{GroupSpec, shares_from_cpu_weight};
use crate::kernel;
use crate::program::{Op, TaskSpec};
use crate::task::TaskState;
use crate::topology::Topology;

/// Two tasks on one CPU, each running a while and sleeping a while, in two groups (or both in
/// the root): they alternate, and the one that ran beyond its share is ineligible when it
/// sleeps.
fn alternating(kernel: &str, grouped: bool) -> Sim {
    alternating_sliced(kernel, grouped, None)
}

/// As [`alternating`], task `a` with a custom slice.
fn alternating_sliced(kernel: &str, grouped: bool, slice_a: Option<u64>) -> Sim {
    let task = |name: &str, run: u64, sleep: u64, group: u32| {
        let mut t = TaskSpec::new(
            name,
            vec![Op::Run { ns: run }, Op::Sleep { ns: sleep }, Op::Loop { target: 0, slot: 0, count: u32::MAX }],
        );
        t.group = if grouped { group } else { 0 };
        t
    };
    let group =
        |name: &str| GroupSpec { name: name.into(), parent: 0, shares: shares_from_cpu_weight(100), idle: false };
    let setup = SimSetup {
        sched: kernel::preset(kernel).expect("a preset").config(),
        topology: Topology::smp(1),
        seed: 1,
        limits: Limits { max_events: u64::MAX, max_time_ns: u64::MAX },
        tasks: vec![TaskSpec { slice_ns: slice_a, ..task("a", 300_000, 100_000, 1) }, task("b", 450_000, 150_000, 2)],
        objects: vec![],
        check_invariants: true,
        groups: if grouped { vec![group("/A"), group("/B")] } else { Vec::new() },
    };
    Sim::new(setup).expect("valid setup")
}

/// What 50 ms of the run showed: (a sleeping task kept queued as delayed, a sleeping task's
/// group entity kept queued as delayed).
fn delayed_states(mut s: Sim) -> (bool, bool) {
    let (mut task_delayed, mut group_delayed) = (false, false);
    while s.queue.peek_time().is_some_and(|t| t.0 <= 50_000_000) {
        let (at, ev) = s.queue.pop().expect("peeked");
        s.now = at.0;
        s.dispatch(ev);
        s.check_invariants().expect("a consistent state");
        for (task, se) in s.tasks.iter().zip(&s.ents) {
            if task.state == TaskState::Blocked {
                task_delayed |= se.on_rq && se.sched_delayed;
                let g = se.group as usize;
                group_delayed |= g != 0 && !se.on_rq && s.gents[g].on_rq && s.gents[g].sched_delayed;
            }
        }
    }
    (task_delayed, group_delayed)
}

/// `dequeue_entities()` (fair.c 6.12.117 l.7161 / 7.2.12 l.8154) with DELAY_DEQUEUE: a task
/// alone in its group is eligible on its group's runqueue (its vruntime is that level's V),
/// so it is dequeued; its group's runqueue is then empty and the walk dequeues the group's
/// entity from the root, where it may be ineligible and is delayed instead. Grouped, the
/// sleeping task is never the delayed one, its group entity is; in the root group the task
/// itself is delayed.
#[test]
fn delayed_dequeue_keeps_the_group_entity_not_the_lone_task() {
    for kernel in ["v6.12", "v7.2"] {
        assert_eq!(delayed_states(alternating(kernel, false)), (true, false), "{kernel} root group");
        assert_eq!(delayed_states(alternating(kernel, true)), (false, true), "{kernel} one task per group");
    }
}

/// The group entities of a CPU carry their group's shares and the slice of their runqueue
/// (`cfs_rq_min_slice()` set as the group entity's custom slice by `enqueue_task_fair()`,
/// 6.12.117 l.7064).
#[test]
fn group_entities_take_shares_and_the_shortest_slice_below() {
    let mut s = alternating_sliced("v6.12", true, Some(200_000));
    let mut seen = false;
    while s.queue.peek_time().is_some_and(|t| t.0 <= 20_000_000) {
        let (at, ev) = s.queue.pop().expect("peeked");
        s.now = at.0;
        s.dispatch(ev);
        let (a, b) = (&s.gents[1], &s.gents[2]);
        if a.on_rq && b.on_rq && !a.sched_delayed && !b.sched_delayed {
            assert!(a.custom_slice && b.custom_slice, "group entities carry custom slices");
            assert_eq!(a.slice, 200_000, "group A's entity has its task's custom slice");
            assert_eq!(b.slice, s.params.base_slice, "group B's entity has the base slice of its task");
            // calc_group_shares(): each group's whole load is on this CPU.
            assert_eq!(a.load_weight, crate::fair::weight::NICE_0_LOAD);
            seen = true;
        }
    }
    assert!(seen, "both groups were queued at once");
}
