//! Balancing mechanisms that need the engine's internals: the CPU stopper, and active
//! balancing spreading two running tasks off one SMT core (the kernel's
//! `imbalanced_active_balance()` case). Every run checks the invariants after each event.

use crate::config::{Limits, SchedConfig};
use crate::engine::{Sim, SimSetup};
use crate::program::{Op, TaskSpec};
use crate::task::TaskId;
use crate::topology::Topology;

fn hog(comm: &str, cpus: Vec<u32>) -> TaskSpec {
    let ops = vec![Op::Run { ns: 10_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }];
    TaskSpec { cpus: Some(cpus), ..TaskSpec::new(comm, ops) }
}

fn sim(topology: Topology, tasks: Vec<TaskSpec>) -> Sim {
    sim_on(SchedConfig::v7_3(), topology, tasks)
}

fn sim_on(sched: SchedConfig, topology: Topology, tasks: Vec<TaskSpec>) -> Sim {
    let setup = SimSetup {
        sched,
        topology,
        seed: 7,
        limits: Limits { max_events: 10_000_000, max_time_ns: 10_000_000_000 },
        tasks,
        objects: vec![],
        check_invariants: true,
        groups: Vec::new(),
    };
    Sim::new(setup).expect("valid setup")
}

/// Runs the event loop up to `until` ns, checking every invariant.
fn run_until(s: &mut Sim, until: u64) {
    while let Some(at) = s.queue.peek_time() {
        if at.0 > until {
            break;
        }
        let (at, ev) = s.queue.pop().expect("peeked");
        s.now = at.0;
        s.dispatch(ev);
        if let Err(v) = s.check_invariants() {
            panic!("{v}");
        }
    }
    s.now = s.now.max(until);
}

/// A queued stop work takes the CPU at its next preemption point and pushes its running task
/// (`__active_load_balance_cpu_stop`): the task ends on the push CPU after one involuntary
/// switch and one migration.
#[test]
fn stopper_pushes_the_running_task() {
    let mut s = sim(Topology::smp(2), vec![hog("hog", vec![0, 1])]);
    run_until(&mut s, 20_000_000);
    let p = TaskId(0);
    let cpu = s.tasks[p.idx()].cpu;
    assert_eq!(s.rqs[cpu as usize].curr, Some(p));
    let before = s.tasks[p.idx()].stats.nr_migrations;
    s.queue_active_balance(cpu, 1 - cpu, false);
    run_until(&mut s, 40_000_000);
    assert_eq!(s.tasks[p.idx()].cpu, 1 - cpu);
    assert_eq!(s.rqs[(1 - cpu) as usize].curr, Some(p));
    assert_eq!(s.tasks[p.idx()].stats.nr_migrations, before + 1);
    assert!(s.tasks[p.idx()].stats.nr_involuntary_switches >= 1);
    assert!(!s.lb.cpus[cpu as usize].active_balance);
}

/// Two hogs on the SMT siblings 0 and 8 of one core while seven cores idle: each runs alone on
/// its CPU, so no periodic pass can detach one (`detach_tasks` needs a waiting task). After
/// `nr_balance_failed > cache_nice_tries + 2` failed `migrate_task` passes at the MC level,
/// the balancing CPU asks for active balance and the stopper pushes the movable hog to an
/// idle core. The hog pinned to CPU 8 stays.
#[test]
fn active_balance_spreads_running_tasks_off_an_smt_core() {
    let topo = Topology::preset("desktop-8c16t").expect("preset");
    let mut s = sim(topo, vec![hog("movable", vec![0]), hog("pinned", vec![8])]);
    run_until(&mut s, 10_000_000);
    assert_eq!(s.tasks[0].cpu, 0);
    assert_eq!(s.tasks[1].cpu, 8);
    // Now let the first hog go anywhere (`sched_setaffinity` without a move).
    s.tasks[0].allowed = crate::cpumask::CpuMask::full(16);
    run_until(&mut s, 2_000_000_000);
    let cpu = s.tasks[0].cpu;
    assert!(cpu != 0 && cpu != 8, "the movable hog is still on the busy core (CPU {cpu})");
    assert_eq!(s.tasks[1].cpu, 8);
    assert!(s.tasks[0].stats.nr_involuntary_switches >= 1, "moved without the stopper");
}

/// `can_migrate_task()` and a delayed task (asleep, still queued: DELAY_DEQUEUE). 6.12.117
/// has no test for it, so any pass may move it; 7.3.4 refuses it for `migrate_task` (and the
/// model, for now, for every type). The task's delayed state is set by hand on a queued task
/// (the rule only reads `sched_delayed`); the balance has failed often enough that cache
/// hotness and 7.2+'s ineligibility filter do not decide.
#[test]
fn delayed_tasks_move_on_6_12_for_any_migration_type() {
    use super::IdleType;
    use super::detach::{LbEnv, MigrationType};
    let three = || vec![hog("a", vec![0, 1]), hog("b", vec![0, 1]), hog("c", vec![0, 1])];
    let v6_12 = || crate::kernel::preset("v6.12").expect("preset").config();
    let cases = [
        (v6_12(), MigrationType::Load, true),
        (v6_12(), MigrationType::Task, true),
        (SchedConfig::v7_3(), MigrationType::Task, false),
    ];
    for (cfg, migration_type, expect) in cases {
        let mut s = sim_on(cfg, Topology::smp(2), three());
        run_until(&mut s, 50_000_000);
        let src = (0..2).find(|&c| s.rqs[c as usize].cfs.h_nr_queued == 2).expect("one CPU runs two hogs");
        let waiting = (0..3)
            .map(TaskId)
            .find(|&t| s.tasks[t.idx()].cpu == src && s.rqs[src as usize].curr != Some(t))
            .expect("a waiting hog");
        let mut env = LbEnv::new(1 - src, 0, IdleType::NotIdle);
        env.src_cpu = src;
        env.migration_type = migration_type;
        s.lb.cpus[(1 - src) as usize].sd[0].nr_balance_failed = 8;
        assert!(s.can_migrate_task(waiting, &mut env), "{}: the waiting hog itself may move", s.cfg.kernel);
        s.ents[waiting.idx()].sched_delayed = true;
        let mut env = LbEnv::new(1 - src, 0, IdleType::NotIdle);
        env.src_cpu = src;
        env.migration_type = migration_type;
        assert_eq!(
            s.can_migrate_task(waiting, &mut env),
            expect,
            "{}: a delayed task for {migration_type:?}",
            s.cfg.kernel
        );
    }
}
