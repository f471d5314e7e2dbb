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
    let tasks = vec![TaskSpec { slice_ns: slice_a, ..task("a", 300_000, 100_000, 1) }, task("b", 450_000, 150_000, 2)];
    let groups = if grouped { vec![top_group("/A"), top_group("/B")] } else { Vec::new() };
    one_cpu(kernel, tasks, groups)
}

/// A top-level group of the default weight.
fn top_group(name: &str) -> GroupSpec {
    GroupSpec { name: name.into(), parent: 0, shares: shares_from_cpu_weight(100), idle: false }
}

/// A hog of group `group` that runs for a second.
fn hog(name: &str, group: u32) -> TaskSpec {
    let mut t = TaskSpec::new(name, vec![Op::Run { ns: 1_000_000_000 }]);
    t.group = group;
    t
}

/// One CPU of `kernel` with these tasks and groups, every invariant checked.
fn one_cpu(kernel: &str, tasks: Vec<TaskSpec>, groups: Vec<GroupSpec>) -> Sim {
    let setup = SimSetup {
        sched: kernel::preset(kernel).expect("a preset").config(),
        topology: Topology::smp(1),
        seed: 1,
        limits: Limits { max_events: u64::MAX, max_time_ns: u64::MAX },
        tasks,
        objects: vec![],
        check_invariants: true,
        groups,
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

/// A group entity's level V, its vruntime, deadline and whether it is protected.
type EntityState = (u64, u64, u64, bool);

/// One CPU, three groups of one hog each, stopped `at_ns` in: group entity `g` (of the
/// running hog) is reweighted from 1024 to 3072 as `update_cfs_group()` would. Returns the
/// root's V and the entity's (vruntime, deadline, protected) before and after.
fn reweight_running_group(kernel: &str, at_ns: u64) -> (EntityState, EntityState) {
    let groups = vec![top_group("/A"), top_group("/B"), top_group("/C")];
    let mut s = one_cpu(kernel, vec![hog("a", 1), hog("b", 2), hog("c", 3)], groups);
    while s.queue.peek_time().is_some_and(|t| t.0 <= at_ns) {
        let (at, ev) = s.queue.pop().expect("peeked");
        s.now = at.0;
        s.dispatch(ev);
    }
    let g = s.rqs[0].curr.map(|t| s.ents[t.idx()].group).expect("a hog runs");
    let mut f = s.fair(0);
    f.update_curr_fair();
    let before = f.group_entity_state(g);
    f.reweight_group_entity(g, 3 * crate::fair::weight::NICE_0_LOAD);
    (before, f.group_entity_state(g))
}

/// `reweight_entity()` of the running group entity per version. 6.13-6.19 (6d71a9c61604;
/// 6.18.44 l.3843 still has it) place it again with `place_entity(se, 0)`, whose V already
/// includes the running entity (the bug its revert 101f3498b4bd names: "avg_vruntime() always
/// includes cfs_rq->curr"), so V moves; 6.12's `reweight_eevdf()` and 7.0+'s `rescale_entity()` keep V and put the
/// entity at `V - vlag·w/w'` (the revert's "avg_vruntime should be invariant under
/// reweight"). Up to 6.16 the protection marker (`vlag == deadline`) does not survive; 6.17+
/// keep the protected span relative to the new weight.
#[test]
fn group_reweight_forms_per_version() {
    for at in [5_300_000, 10_700_000, 21_100_000] {
        for kernel in ["v6.12", "v6.16", "v6.18", "v6.19", "v7.2"] {
            let ((v0, ve0, _, prot0), (v1, ve1, _, prot1)) = reweight_running_group(kernel, at);
            let lag0 = v0.wrapping_sub(ve0) as i64;
            let lag1 = v1.wrapping_sub(ve1) as i64;
            let dv = v1.wrapping_sub(v0) as i64;
            let placed = matches!(kernel, "v6.16" | "v6.18" | "v6.19");
            if placed {
                assert!(dv.abs() > lag0.abs() / 8, "{kernel} at {at}: V moved {dv} for a lag of {lag0}");
            } else {
                assert!(dv.abs() <= 1, "{kernel} at {at}: V moved {dv}");
                assert!((lag1 - lag0 / 3).abs() <= 2, "{kernel} at {at}: lag {lag0} -> {lag1}, want a third");
            }
            match kernel {
                "v6.12" | "v6.16" => assert!(!prot1, "{kernel} at {at}: the marker does not survive"),
                _ => assert_eq!(prot1, prot0, "{kernel} at {at}: the protection is kept"),
            }
        }
    }
}

/// `hrtick()` calls `task_tick_fair(queued = 1)`, whose `entity_tick()` runs at every level
/// (fair.c 6.12.117 l.13216 / 7.2.12 l.15166): the running task's level and each group
/// entity above it are charged up to now, and each group entity's weight refreshed. One CPU,
/// a hog in the root, one in `/a`, two in `/a/b`; the expiry is called 100 µs after the last
/// event, while an `/a/b` hog runs.
#[test]
fn hrtick_charges_every_level() {
    let b = GroupSpec { name: "/a/b".into(), parent: 1, ..top_group("/a/b") };
    let tasks = vec![hog("r", 0), hog("a", 1), hog("b1", 2), hog("b2", 2)];
    let mut s = one_cpu("v7.2", tasks, vec![top_group("/a"), b]);
    let mut checked = 0;
    while checked < 5 && s.queue.peek_time().is_some_and(|t| t.0 <= 200_000_000) {
        let (at, ev) = s.queue.pop().expect("peeked");
        s.now = at.0;
        s.dispatch(ev);
        let Some(t) = s.rqs[0].curr else { continue };
        if s.ents[t.idx()].group != 2 || s.queue.peek_time().is_none_or(|n| n.0 <= s.now + 100_000) {
            continue;
        }
        s.now += 100_000;
        s.fair(0).hrtick_tick();
        let now = s.now;
        assert_eq!(s.ents[t.idx()].exec_start, now, "the task's level is charged");
        for g in [1, 2] {
            assert_eq!(s.gents[g].exec_start, now, "group {g}'s entity is charged at the hrtick");
        }
        s.check_invariants().expect("a consistent state");
        checked += 1;
    }
    assert_eq!(checked, 5, "an /a/b hog ran mid-slice five times");
}
