//! `sched_balance_rq()` and the moving of tasks: `detach_tasks()`, `can_migrate_task()`,
//! `task_hot()`, `detach_task()` / `attach_tasks()` (fair.c v7.3.4; 6.12.117 differences
//! under [`crate::config::BalanceVariant`]).

use super::{IdleType, MAX_PINNED_INTERVAL, SCHED_NR_MIGRATE_BREAK};
use crate::engine::Sim;
use crate::engine::core::Origin;
use crate::features::Feature;
use crate::task::TaskId;
use crate::topology::SD_SHARE_CPUCAPACITY;

/// `enum migration_type` (fair.c v7.3.4); `Llc` is CONFIG_SCHED_CACHE's `migrate_llc_task`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MigrationType {
    Load,
    Util,
    Task,
    Misfit,
    Llc,
}

/// `LBF_*` (fair.c v7.3.4).
pub(super) const LBF_ALL_PINNED: u32 = 0x01;
pub(super) const LBF_NEED_BREAK: u32 = 0x02;
pub(super) const LBF_DST_PINNED: u32 = 0x04;
pub(super) const LBF_SOME_PINNED: u32 = 0x08;
pub(super) const LBF_ACTIVE_LB: u32 = 0x10;
/// A pull was refused for LLC locality: not a failure (CONFIG_SCHED_CACHE, 7.2.12/7.3.4).
pub(super) const LBF_LLC_PINNED: u32 = 0x20;
/// The stopper pushes for `migrate_llc_task` (`active_load_balance_llc_cpu_stop`).
pub(super) const LBF_ACTIVE_LB_LLC: u32 = 0x40;

/// `struct lb_env` (fair.c v7.3.4). The domain is `domains.of(this_cpu)[level]`; its runtime
/// state (`nr_balance_failed`, intervals) belongs to `this_cpu` even after `dst_cpu` moves
/// to another CPU of the local group (LBF_DST_PINNED).
#[derive(Clone, Copy, Debug)]
pub(super) struct LbEnv {
    pub this_cpu: u32,
    pub level: usize,
    pub src_cpu: u32,
    pub dst_cpu: u32,
    pub dst_core_idle: bool,
    pub new_dst_cpu: u32,
    pub idle: IdleType,
    pub imbalance: i64,
    pub flags: u32,
    pub loop_: u32,
    pub loop_break: u32,
    pub loop_max: u32,
    pub migration_type: MigrationType,
    /// `p->sched_task_hot` of the task `can_migrate_task()` last let go: it was cache hot
    /// and taken for the failures (counted as `lb_hot_gained` if it is detached).
    pub task_hot: bool,
}

impl LbEnv {
    pub(super) fn new(this_cpu: u32, level: usize, idle: IdleType) -> LbEnv {
        LbEnv {
            this_cpu,
            level,
            src_cpu: this_cpu,
            dst_cpu: this_cpu,
            dst_core_idle: false,
            new_dst_cpu: this_cpu,
            idle,
            imbalance: 0,
            flags: 0,
            loop_: 0,
            loop_break: SCHED_NR_MIGRATE_BREAK,
            loop_max: 0,
            migration_type: MigrationType::Load,
            task_hot: false,
        }
    }
}

/// Where `sched_balance_rq()` leaves: the labels of the kernel function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    Unbalanced,
    Balanced,
    AllPinned,
    OnePinned,
}

impl Sim {
    /// `sched_balance_rq()` (fair.c v7.3.4): check that `this_cpu` is balanced within its
    /// domain at `level` and pull tasks if not. Returns the number of tasks moved.
    pub(super) fn sched_balance_rq(
        &mut self,
        this_cpu: u32,
        level: usize,
        idle: IdleType,
        continue_balancing: &mut bool,
    ) -> u32 {
        let mut env = LbEnv::new(this_cpu, level, idle);
        self.lb_begin_pass();
        let nsd = self.domains.of(this_cpu).len();
        let mut ld_moved = 0u32;
        let ty = idle as usize;
        self.schedstat.domains[this_cpu as usize][level].lb[ty].count += 1;
        let out = 'redo: loop {
            if !self.should_we_balance(&env) {
                *continue_balancing = false;
                break Out::Balanced;
            }
            // SD_SERIALIZE's `sched_balance_running` never contends: passes run one at a time.
            let Some(group) = self.find_src_group(&mut env) else {
                self.schedstat.domains[this_cpu as usize][level].lb[ty].nobusyg += 1;
                break Out::Balanced;
            };
            let Some(busiest) = self.find_src_rq(&env, group) else {
                self.schedstat.domains[this_cpu as usize][level].lb[ty].nobusyq += 1;
                break Out::Balanced;
            };
            // update_lb_imbalance_stat() (7.3.4): by migration type; none for an LLC move.
            let kind = match env.migration_type {
                MigrationType::Load => Some(0),
                MigrationType::Util => Some(1),
                MigrationType::Task => Some(2),
                MigrationType::Misfit => Some(3),
                MigrationType::Llc => None,
            };
            if let Some(k) = kind {
                let imb = &mut self.schedstat.domains[this_cpu as usize][level].lb[ty].imbalance[k];
                *imb = imb.wrapping_add(env.imbalance as u64);
            }
            env.src_cpu = busiest;
            env.flags |= LBF_ALL_PINNED;
            let nr_running = self.rqs[busiest as usize].cfs.h_nr_queued;
            if nr_running > 1 {
                env.loop_max = self.cfg.sysctl.nr_migrate.min(nr_running);
                loop {
                    let cur = self.detach_tasks(&mut env);
                    if cur > 0 {
                        self.attach_tasks(env.dst_cpu);
                        ld_moved += cur;
                    }
                    if env.flags & LBF_NEED_BREAK != 0 {
                        env.flags &= !LBF_NEED_BREAK;
                        continue;
                    }
                    if env.flags & LBF_DST_PINNED != 0 && env.imbalance > 0 {
                        self.lb_exclude(env.dst_cpu);
                        env.dst_cpu = env.new_dst_cpu;
                        env.flags &= !LBF_DST_PINNED;
                        env.loop_ = 0;
                        env.loop_break = SCHED_NR_MIGRATE_BREAK;
                        continue;
                    }
                    break;
                }
                if level + 1 < nsd && env.flags & LBF_SOME_PINNED != 0 && env.imbalance > 0 {
                    let parent_local = self.domains.group_span_at(&self.domains.of(this_cpu)[level + 1], 0);
                    self.lb.group_imbalance[parent_local.0 as usize] = true;
                }
                if env.flags & LBF_ALL_PINNED != 0 {
                    self.lb_exclude(busiest);
                    if !self.remaining_within_local_group(this_cpu, level) {
                        env.loop_ = 0;
                        env.loop_break = SCHED_NR_MIGRATE_BREAK;
                        continue 'redo;
                    }
                    break Out::AllPinned;
                }
            }
            if ld_moved > 0 {
                self.lb.cpus[this_cpu as usize].sd[level].nr_balance_failed = 0;
                break Out::Unbalanced;
            }
            self.schedstat.domains[this_cpu as usize][level].lb[ty].failed += 1;
            // Refusals for LLC locality are expected and not counted (7.2.12/7.3.4).
            if idle != IdleType::NewlyIdle
                && env.migration_type != MigrationType::Misfit
                && env.flags & LBF_LLC_PINNED == 0
            {
                self.lb.cpus[this_cpu as usize].sd[level].nr_balance_failed += 1;
            }
            if !self.need_active_balance(&env) {
                break Out::Unbalanced;
            }
            let src = &self.rqs[busiest as usize];
            let Some(curr) = src.curr else { break Out::Unbalanced };
            if !self.tasks[curr.idx()].allows(this_cpu) {
                break Out::OnePinned;
            }
            env.flags &= !LBF_ALL_PINNED;
            if self.lb.cpus[busiest as usize].active_balance {
                break Out::Unbalanced;
            }
            self.queue_active_balance(busiest, this_cpu, env.migration_type == MigrationType::Llc);
            break Out::Unbalanced;
        };
        let max_interval = u64::from(self.domains.of(this_cpu)[level].max_interval_ms);
        let min_interval = u64::from(self.domains.of(this_cpu)[level].min_interval_ms);
        if out == Out::Unbalanced {
            self.lb.cpus[this_cpu as usize].sd[level].balance_interval_ms = min_interval;
            return ld_moved;
        }
        if out != Out::OnePinned {
            // out_all_pinned: (reached from out_balanced too).
            self.schedstat.domains[this_cpu as usize][level].lb[ty].balanced += 1;
        }
        if out == Out::Balanced && level + 1 < nsd && env.flags & LBF_ALL_PINNED == 0 {
            let parent_local = self.domains.group_span_at(&self.domains.of(this_cpu)[level + 1], 0);
            self.lb.group_imbalance[parent_local.0 as usize] = false;
        }
        let st = &mut self.lb.cpus[this_cpu as usize].sd[level];
        if out != Out::OnePinned {
            st.nr_balance_failed = 0;
        }
        if env.idle == IdleType::NewlyIdle || env.migration_type == MigrationType::Misfit {
            return 0;
        }
        if (env.flags & LBF_ALL_PINNED != 0 && st.balance_interval_ms < MAX_PINNED_INTERVAL)
            || st.balance_interval_ms < max_interval
        {
            st.balance_interval_ms *= 2;
        }
        0
    }

    /// `cpumask_subset(env->cpus, env->dst_grpmask)`: every CPU still under consideration
    /// lies in the local group.
    fn remaining_within_local_group(&self, this_cpu: u32, level: usize) -> bool {
        let sd = &self.domains.of(this_cpu)[level];
        let local = self.domains.cpus(self.domains.group_span_at(sd, 0));
        self.domains.span(sd).iter().all(|&c| self.lb_excluded(c) || local.binary_search(&c).is_ok())
    }

    /// The source's `cfs_tasks` list, tail (least recently enqueued or picked) first, into the
    /// reused scratch buffer.
    pub(super) fn fill_cfs_tasks_order(&mut self, src: u32) {
        let mut order = std::mem::take(&mut self.lb.order);
        order.clear();
        if self.gents.is_empty() {
            let cfs = &self.rqs[src as usize].cfs;
            order.extend(cfs.curr.iter().map(|&t| (self.tasks[t.idx()].lb_seq, t)));
            order.extend(cfs.timeline.iter().map(|k| {
                let t = TaskId(k.id);
                (self.tasks[t.idx()].lb_seq, t)
            }));
        } else {
            // ≤7.2's levels: the CPU's queued tasks, in whatever order (sorted below).
            order.extend(self.queued_tasks_hier(src).map(|t| (self.tasks[t.idx()].lb_seq, t)));
        }
        order.sort_unstable();
        self.lb.order = order;
    }

    /// `detach_tasks()` (fair.c v7.3.4): detach up to the imbalance (load, utilisation or
    /// tasks) from `env.src_cpu`, looking at `loop_max` tasks at most. Returns the number
    /// detached.
    fn detach_tasks(&mut self, env: &mut LbEnv) -> u32 {
        let src = env.src_cpu;
        if self.rqs[src as usize].cfs.h_nr_queued <= 1 {
            env.flags &= !LBF_ALL_PINNED;
            return 0;
        }
        if env.imbalance <= 0 {
            return 0;
        }
        self.fill_cfs_tasks_order(src);
        let jiffies = self.jiffies();
        let mut detached = 0u32;
        let mut next = 0usize;
        let failed = self.lb.cpus[env.this_cpu as usize].sd[env.level].nr_balance_failed;
        while next < self.lb.order.len() {
            if env.idle.is_idle() && self.rqs[src as usize].cfs.h_nr_queued <= 1 {
                break;
            }
            env.loop_ += 1;
            if env.loop_ > env.loop_max {
                break;
            }
            if env.loop_ > env.loop_break {
                env.loop_break += SCHED_NR_MIGRATE_BREAK;
                env.flags |= LBF_NEED_BREAK;
                break;
            }
            let p = self.lb.order[next].1;
            next += 1;
            let take = self.can_migrate_task(p, env) && {
                let shift = failed.min(63);
                match env.migration_type {
                    MigrationType::Load => {
                        let load = self.task_h_load(p, src, jiffies).max(1);
                        // LB_MIN skips tiny loads until a balance failed; never take more
                        // than the imbalance, relaxed by each failure.
                        let tiny = self.params.feat(Feature::LB_MIN) && load < 16 && failed == 0;
                        if tiny || (load >> shift) as i64 > env.imbalance {
                            false
                        } else {
                            env.imbalance -= load as i64;
                            true
                        }
                    }
                    MigrationType::Util => {
                        let util = self.ents[p.idx()].pelt.task_util_est();
                        if (util >> shift) as i64 > env.imbalance {
                            false
                        } else {
                            env.imbalance -= util as i64;
                            true
                        }
                    }
                    MigrationType::Task | MigrationType::Llc => {
                        env.imbalance -= 1;
                        true
                    }
                    MigrationType::Misfit => {
                        let util = self.ents[p.idx()].pelt.task_util_est();
                        if super::lb_stats::fits_capacity(util, self.capacity_of(src)) {
                            false
                        } else {
                            env.imbalance = 0;
                            true
                        }
                    }
                }
            };
            if !take {
                // list_move(): a refused task goes to the head of the list.
                self.lb_seq += 1;
                self.tasks[p.idx()].lb_seq = self.lb_seq;
                continue;
            }
            if env.task_hot {
                self.schedstat.domains[env.this_cpu as usize][env.level].lb[env.idle as usize].hot_gained += 1;
            }
            self.detach_task(p, src, env.dst_cpu);
            detached += 1;
            // CONFIG_PREEMPTION (every PREEMPT_DYNAMIC build): one task per newidle pass.
            if env.idle == IdleType::NewlyIdle || env.imbalance <= 0 {
                break;
            }
        }
        self.schedstat.domains[env.this_cpu as usize][env.level].lb[env.idle as usize].gained += u64::from(detached);
        detached
    }

    /// `can_migrate_task()` (fair.c v7.3.4) in the kernel's order, with its `LBF_*`
    /// bookkeeping. 6.12.117 lacks the ineligibility filter and the delayed-task test
    /// (`BalanceVariant::V6_12`).
    pub(super) fn can_migrate_task(&mut self, p: TaskId, env: &mut LbEnv) -> bool {
        let src = env.src_cpu;
        let failed = self.lb.cpus[env.this_cpu as usize].sd[env.level].nr_balance_failed;
        env.task_hot = false;
        // A delayed task (asleep, still queued): 6.12.117 has no test for it and moves it like
        // any queued task; it keeps its delay on the destination (`detach_task()` dequeues
        // without DEQUEUE_SLEEP, `attach_task()` enqueues without ENQUEUE_WAKEUP), where the
        // pick dequeues it. 7.2.12 and 7.3.4 refuse it unless the pass migrates load; the
        // model refuses it there for every type (the migrate_load case is not landed:
        // docs/fidelity.md, "Busy CPUs are not rebalanced during hackbench").
        if self.ents[p.idx()].sched_delayed && self.cfg.behavior.balance >= crate::config::BalanceVariant::V7_2 {
            return false;
        }
        if self.cfg.behavior.balance >= crate::config::BalanceVariant::V7_2
            && failed == 0
            && self.params.feat(Feature::PLACE_LAG)
            && self.rqs[env.dst_cpu as usize].cfs.h_nr_queued > 0
        {
            // task_is_ineligible_on_dst_cpu(): on ≤7.2's levels the task's group runqueue of
            // the destination, and the task's eligibility on its own level.
            let dst_queued = match self.ents[p.idx()].group {
                g if g != 0 && !self.gents.is_empty() => {
                    let n = self.groups.as_ref().map_or(1, |gr| gr.len());
                    self.gcfs[env.dst_cpu as usize * n + g as usize].nr_queued > 0
                }
                _ => true,
            };
            if dst_queued && !self.fair_raw(src).task_eligible(p) {
                return false;
            }
        }
        if !self.tasks[p.idx()].allows(env.dst_cpu) {
            env.flags |= LBF_SOME_PINNED;
            if env.idle == IdleType::NewlyIdle || env.flags & (LBF_DST_PINNED | LBF_ACTIVE_LB) != 0 {
                return false;
            }
            let sd = &self.domains.of(env.this_cpu)[env.level];
            let local = self.domains.cpus(self.domains.group_span_at(sd, 0));
            if let Some(&cpu) = local.iter().find(|&&c| !self.lb_excluded(c) && self.tasks[p.idx()].allows(c)) {
                env.flags |= LBF_DST_PINNED;
                env.new_dst_cpu = cpu;
            }
            return false;
        }
        env.flags &= !LBF_ALL_PINNED;
        if env.flags & LBF_ACTIVE_LB != 0 {
            // The stopper is current: the task that was running is not (task_on_cpu false).
            return !self.migrate_llc_task_wrong_dst(p, env);
        }
        if self.rqs[src as usize].curr == Some(p) {
            return false;
        }
        // migrate_degrades_locality() is 0 without NUMA balancing; then LLC locality.
        if self.migrate_degrades_llc(p, env) {
            if env.migration_type != MigrationType::Llc {
                env.flags |= LBF_LLC_PINNED;
            }
            return false;
        }
        let cache_nice_tries = self.domains.of(env.this_cpu)[env.level].cache_nice_tries;
        let hot = self.task_hot(p, env);
        if !hot || failed > cache_nice_tries {
            env.task_hot = hot;
            return true;
        }
        false
    }

    /// `task_hot()` (fair.c v7.3.4).
    fn task_hot(&self, p: TaskId, env: &LbEnv) -> bool {
        let sd = &self.domains.of(env.this_cpu)[env.level];
        if self.ents[p.idx()].policy == crate::fair::Policy::Idle || sd.flags & SD_SHARE_CPUCAPACITY != 0 {
            return false;
        }
        let dst_busy = self.rqs[env.dst_cpu as usize].cfs.h_nr_queued > 0;
        if self.params.feat(Feature::CACHE_HOT_BUDDY) && dst_busy && self.cfs_next_of(env.src_cpu, p) == Some(p) {
            return true;
        }
        let cost = self.cfg.sysctl.migration_cost_ns;
        if cost == 0 {
            return false;
        }
        let exec_start = self.ents[p.idx()].exec_start;
        (self.now as i64).wrapping_sub(exec_start as i64) < cost as i64
    }

    /// `detach_task()` (fair.c v7.3.4): dequeue without SLEEP (lag saved, deadline made
    /// relative), PELT detached (`migrate_task_rq_fair`), `set_task_cpu(dst)`. The task
    /// waits in `env->tasks` until [`Sim::attach_tasks`].
    pub(super) fn detach_task(&mut self, p: TaskId, src: u32, dst: u32) {
        self.fair(src).dequeue_task_fair(p, crate::fair::deq::SAVE | crate::fair::deq::MIGRATING);
        let se = &mut self.ents[p.idx()];
        let w = crate::fair::weight::scale_load_down(se.load_weight);
        self.rqs[src as usize].cfs.pelt.migrate_task_rq_fair(&mut se.pelt, w, true, None);
        self.trace_migrate(dst, p, src, dst);
        let task = &mut self.tasks[p.idx()];
        task.cpu = dst;
        task.stats.nr_migrations += 1;
        self.counters.nr_migrations += 1;
        self.lb.detached.push(p);
    }

    /// `attach_tasks()` / `attach_task()` (fair.c v7.3.4): enqueue each detached task on
    /// `dst` with ENQUEUE_MIGRATED, then `wakeup_preempt(dst, p, 0)`.
    pub(super) fn attach_tasks(&mut self, dst: u32) {
        let mut detached = std::mem::take(&mut self.lb.detached);
        // list_add() at detach, list_first_entry() at attach: the last detached comes first.
        for &p in detached.iter().rev() {
            self.lb_seq += 1;
            self.tasks[p.idx()].lb_seq = self.lb_seq;
            let mut f = self.fair(dst);
            f.enqueue_task_fair(p, crate::fair::enq::MIGRATED);
            let req = f.resched;
            self.resched_request(dst, req, Origin::LocalTask, crate::engine::Cause::Other);
            self.update_overloaded(dst);
            self.wakeup_preempt(dst, p, 0, Origin::LocalTask, false);
        }
        detached.clear();
        self.lb.detached = detached;
    }
}
