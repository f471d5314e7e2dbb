//! Active balancing (fair.c v7.3.4): `need_active_balance()` decides that the running task
//! of the busiest CPU must move; `stop_one_cpu_nowait()` wakes that CPU's stopper, which
//! takes the CPU at its next preemption point ([`Sim::run_cpu_stopper`], called by
//! `__schedule`) and pushes one task with `detach_one_task()`.

use super::IdleType;
use super::detach::{LBF_ACTIVE_LB, LBF_ACTIVE_LB_LLC, LbEnv, MigrationType};
use crate::engine::core::Origin;
use crate::engine::{Cause, Sim};
use crate::fair::Resched;
use crate::task::TaskId;

impl Sim {
    /// `need_active_balance()` (fair.c v7.3.4). `asym_active_balance()` needs SD_ASYM_PACKING
    /// and the reduced-capacity rule a CPU that lost capacity, neither of which exists here
    /// (so 7.2.12's order, `alb_break_llc()` before the asym test, is the same).
    pub(super) fn need_active_balance(&mut self, env: &LbEnv) -> bool {
        if self.alb_break_llc(env) {
            return false;
        }
        let sd = &self.domains.of(env.this_cpu)[env.level];
        let failed = self.lb.cpus[env.this_cpu as usize].sd[env.level].nr_balance_failed;
        // imbalanced_active_balance()
        if env.migration_type == MigrationType::Task && failed > sd.cache_nice_tries + 2 {
            return true;
        }
        matches!(env.migration_type, MigrationType::Misfit | MigrationType::Llc)
    }

    /// `stop_one_cpu_nowait(busiest, active_load_balance_cpu_stop)`: mark the work and wake
    /// the stopper, which preempts whatever runs there (a full reschedule request).
    /// With `llc`, the work is `active_load_balance_llc_cpu_stop` (`alb_stop_fn()`, 7.3.4).
    pub(super) fn queue_active_balance(&mut self, busiest: u32, push_cpu: u32, llc: bool) {
        let lb = &mut self.lb.cpus[busiest as usize];
        lb.active_balance = true;
        lb.push_cpu = push_cpu;
        lb.active_balance_llc = llc;
        self.resched_request(busiest, Resched::Full, Origin::Remote, Cause::Other);
    }

    /// The CPU stopper's turn in `__schedule()` on `cpu`, before the next fair pick:
    /// `__active_load_balance_cpu_stop()` (fair.c v7.3.4). The stopper is current, so the task
    /// that was running (`prev`) is not and may be the one pushed; then it is put back here
    /// (`put_prev_task_fair`) before it leaves, and the function returns true.
    pub(in crate::engine) fn run_cpu_stopper(&mut self, cpu: u32, prev: Option<TaskId>) -> bool {
        if !self.lb.cpus[cpu as usize].active_balance {
            return false;
        }
        self.lb.cpus[cpu as usize].active_balance = false;
        let target = self.lb.cpus[cpu as usize].push_cpu;
        // Is there any task to move? (The stopper itself counts in nr_running.)
        if self.rqs[cpu as usize].cfs.h_nr_queued == 0 || target == cpu {
            return false;
        }
        let Some(level) = self.domains.of(target).iter().position(|sd| self.domains.span_contains(sd, cpu)) else {
            return false;
        };
        let mut env = LbEnv::new(target, level, IdleType::Idle);
        env.src_cpu = cpu;
        env.flags = LBF_ACTIVE_LB;
        if std::mem::take(&mut self.lb.cpus[cpu as usize].active_balance_llc) {
            env.flags |= LBF_ACTIVE_LB_LLC;
        }
        self.lb_begin_pass();
        self.schedstat.domains[target as usize][level].alb_count += 1;
        // detach_one_task(): the first movable task from the tail of cfs_tasks.
        self.fill_cfs_tasks_order(cpu);
        for k in 0..self.lb.order.len() {
            let p = self.lb.order[k].1;
            let running = prev == Some(p) && self.cfs_curr_task(cpu) == Some(p);
            if !self.can_migrate_task(p, &mut env) {
                continue;
            }
            if running {
                self.fair(cpu).put_prev_task_fair(p, None);
            }
            self.detach_task(p, cpu, target);
            let ss = &mut self.schedstat.domains[target as usize][level];
            ss.lb[IdleType::Idle as usize].gained += 1;
            ss.alb_pushed += 1;
            self.lb.cpus[target as usize].sd[level].nr_balance_failed = 0;
            self.attach_tasks(target);
            return running;
        }
        self.schedstat.domains[target as usize][level].alb_failed += 1;
        false
    }
}
