//! The PELT load hierarchy of task groups, for the load balancer and `wake_affine_weight`
//! (fair.c 6.12.117 / 7.2.12 / 7.3.4, `CONFIG_FAIR_GROUP_SCHED`).
//!
//! With groups the kernel's root cfs_rq does not hold the tasks of a group: it holds the
//! group's entity, whose weight is the group's shares on that CPU (`update_cfs_group()`), and
//! whose `load_avg` is propagated up from the group's cfs_rq (`propagate_entity_load_avg()`).
//! `cpu_load()` is the root's `load_avg`, so a CPU running four tasks of one session weighs
//! about one session, and `task_h_load()` scales a task's `load_avg` by its share of the
//! hierarchy (`update_cfs_rq_h_load()`). Both hold for every version: 7.3's flat runqueue
//! keeps the tasks themselves in the root's EEVDF tree, but `enqueue_hierarchy()` still
//! enqueues every level's entity in its parent cfs_rq for load and PELT (`enqueue_entity()`:
//! `update_load_avg`, `account_entity_enqueue`), and 7.3's `task_h_load` /
//! `update_cfs_rq_h_load` are 6.12's with `cfs_rq_se()` for `tg->se[cpu]`. The versions
//! differ only in the entity weight (`calc_group_shares` vs `calc_concur_shares`, in
//! [`super::group`]).
//!
//! The model keeps the flat root cfs_rq (`CfsRq::pelt`, every task attached there) for
//! `util_avg`, `runnable_avg` and `util_est`, which the kernel's propagation
//! (`update_tg_cfs_util`/`_runnable`) carries up unchanged in sum; this hierarchy is a second
//! set of cfs_rq averages used for **load** only: slot `g` of a CPU is group `g`'s cfs_rq and
//! its entity, slot 0 the root cfs_rq as the balancer sees it (root-group tasks and the
//! top-level group entities attached). Each task-level PELT update of the flat root is
//! mirrored into the task's group cfs_rq and walked up to the root, as the kernel's
//! `for_each_sched_entity` loops do (`update_load_avg(cfs_rq_of(se), se, UPDATE_TG)` per level).
//! Not modelled: `update_tg_cfs_runnable` (the hierarchy's `runnable_avg` is unused) and
//! `tg->load_avg`'s PELT form (group shares use queued weights, see `group.rs`).

use super::group::Groups;
use super::weight::{NICE_0_LOAD, scale_load_down};
use crate::pelt::{self, CfsRqPelt, RqState, SCHED_CAPACITY_SHIFT, SchedAvg, get_pelt_divider};

/// One level of the load hierarchy on one CPU: a group's cfs_rq averages and its entity's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupPelt {
    /// The group cfs_rq's `avg`, `removed`, `h_load` and `last_h_load_update`.
    pub cfs: CfsRqPelt,
    /// `cfs_rq->prop_runnable_sum` and `cfs_rq->propagate`.
    prop_runnable_sum: i64,
    propagate: bool,
    /// The group entity's `se->avg` (unused in the root slot).
    pub se: SchedAvg,
    /// `se_weight()` of the group entity as PELT knows it: the entity's `load.weight`
    /// scaled down, kept while the group is empty (`update_cfs_group()`).
    se_w: u64,
}

/// What the load hierarchy reads from the CPU's flat root runqueue, as it stands before the
/// operation that triggers the update.
#[derive(Clone, Copy, Debug)]
pub struct RootView {
    /// The flat root's `load_weight` (the queued tasks' own weights).
    pub load_weight: u64,
    /// The root's `h_nr_runnable` (every runnable task of the CPU).
    pub h_nr_runnable: u32,
    /// The running task's group, if a fair task runs (the levels whose `h_curr` is set).
    pub curr_group: Option<u32>,
}

/// `add_tg_cfs_propagate()` (fair.c 6.12.117 / 7.2.12 / 7.3.4).
fn add_tg_cfs_propagate(p: &mut GroupPelt, runnable_sum: i64) {
    p.propagate = true;
    p.prop_runnable_sum = p.prop_runnable_sum.wrapping_add(runnable_sum);
}

/// `update_tg_cfs_util()` (fair.c 6.12.117 / 7.2.12 / 7.3.4): the entity's utilization is
/// its group cfs_rq's, its sum rebuilt with the parent's divider.
fn update_tg_cfs_util(parent: &mut CfsRqPelt, se: &mut SchedAvg, gcfs_util_avg: u64) {
    let delta_avg = gcfs_util_avg as i64 - se.util_avg as i64;
    if delta_avg == 0 {
        return;
    }
    let divider = get_pelt_divider(&parent.avg);
    se.util_avg = gcfs_util_avg;
    let new_sum = (se.util_avg as u32).wrapping_mul(divider);
    let delta_sum = i64::from(new_sum) - i64::from(se.util_sum);
    se.util_sum = new_sum;
    pelt::update_sa_util(&mut parent.avg.util_avg, &mut parent.avg.util_sum, delta_avg, delta_sum as i32);
}

/// `update_tg_cfs_load()` (fair.c 6.12.117 / 7.2.12 / 7.3.4, identical in the three): apply a
/// pending `prop_runnable_sum` of the group cfs_rq to its entity. An attach adds the task's
/// runnable sum (clipped at the divider); a detach estimates the group's unweighted runnable
/// sum as `load_sum / load.weight` ("all tasks equally runnable") and never raises the
/// entity's. The entity's `load_sum` stays at least its running sum; `load_avg =
/// se_weight · runnable_sum / divider`, and the parent's averages move by the difference.
/// `gcfs_load_weight_down` is `scale_load_down(gcfs_rq->load.weight)` as it stands after the
/// triggering dequeue.
fn update_tg_cfs_load(
    parent: &mut CfsRqPelt,
    se: &mut SchedAvg,
    se_w: u64,
    gcfs: &mut GroupPelt,
    gcfs_load_weight_down: u64,
) {
    let runnable_sum = gcfs.prop_runnable_sum;
    if runnable_sum == 0 {
        return;
    }
    gcfs.prop_runnable_sum = 0;
    let divider = i64::from(get_pelt_divider(&parent.avg));
    let mut runnable_sum = if runnable_sum >= 0 {
        runnable_sum.wrapping_add(se.load_sum as i64).min(divider)
    } else {
        let mut load_sum = 0u64;
        if gcfs_load_weight_down != 0 {
            // div_u64(): a u32 divisor.
            load_sum = gcfs.cfs.avg.load_sum / u64::from(gcfs_load_weight_down as u32);
        }
        se.load_sum.min(load_sum) as i64
    };
    let running_sum = i64::from(se.util_sum >> SCHED_CAPACITY_SHIFT);
    runnable_sum = runnable_sum.max(running_sum);
    let load_sum = se_w.wrapping_mul(runnable_sum as u64);
    let load_avg = load_sum / (divider as u64);
    let delta_avg = load_avg as i64 - se.load_avg as i64;
    if delta_avg == 0 {
        return;
    }
    let delta_sum = (load_sum as i64).wrapping_sub((se_w as i64).wrapping_mul(se.load_sum as i64));
    se.load_sum = runnable_sum as u64;
    se.load_avg = load_avg;
    pelt::update_sa_u64(&mut parent.avg.load_avg, &mut parent.avg.load_sum, delta_avg, delta_sum);
}

impl Groups {
    #[inline]
    fn pidx(&self, cpu: u32, g: u32) -> usize {
        cpu as usize * self.n + g as usize
    }

    /// Group `l` is `g` or one of its ancestors (the root is everyone's).
    fn is_ancestor(&self, l: u32, mut g: u32) -> bool {
        loop {
            if g == l {
                return true;
            }
            if g == 0 {
                return false;
            }
            g = self.specs[g as usize].parent;
        }
    }

    /// The root cfs_rq's `load.weight` as the hierarchy has it: root-group tasks' weights and
    /// the top-level group entities' (`account_entity_enqueue()` at each level).
    pub fn root_load_weight(&self, cpu: u32, flat_load_weight: u64) -> u64 {
        flat_load_weight.saturating_sub(self.task_w[cpu as usize]) + self.rq(cpu, 0).load_weight
    }

    /// The `__update_load_avg_cfs_rq()` inputs of level `l` on `cpu`.
    fn level_state(&self, cpu: u32, l: u32, v: &RootView) -> RqState {
        if l == 0 {
            return RqState {
                load_weight_down: scale_load_down(self.root_load_weight(cpu, v.load_weight)),
                h_nr_runnable: v.h_nr_runnable,
                running: v.curr_group.is_some(),
            };
        }
        let rq = self.rq(cpu, l);
        RqState {
            load_weight_down: scale_load_down(rq.load_weight),
            h_nr_runnable: rq.h_nr_runnable,
            running: v.curr_group.is_some_and(|c| self.is_ancestor(l, c)),
        }
    }

    /// `update_cfs_rq_load_avg()` (fair.c 6.12.117 / 7.2.12 / 7.3.4) of level `l`, with the
    /// removed load's propagation to the parent (`-(removed_runnable · divider) >>
    /// SCHED_CAPACITY_SHIFT`, an arithmetic shift of the negative value).
    fn update_level_cfs(&mut self, cpu: u32, l: u32, now: u64, v: &RootView) -> bool {
        let st = self.level_state(cpu, l, v);
        let i = self.pidx(cpu, l);
        let p = &mut self.pelt[i];
        let removed = (p.cfs.removed.nr != 0).then(|| (p.cfs.removed.runnable_avg, get_pelt_divider(&p.cfs.avg)));
        let decayed = p.cfs.update_cfs_rq_load_avg(now, st);
        if let Some((r, divider)) = removed {
            add_tg_cfs_propagate(p, (r.wrapping_mul(u64::from(divider)) as i64).wrapping_neg() >> SCHED_CAPACITY_SHIFT);
        }
        decayed
    }

    /// `update_load_avg(cfs_rq_of(ge), ge, UPDATE_TG)` (fair.c 6.12.117 / 7.2.12 / 7.3.4) for
    /// group `l`'s entity on `cpu`: age the entity (`__update_load_avg_se`), update its
    /// parent cfs_rq, then `propagate_entity_load_avg()`. A group entity is attached when its
    /// group comes online (`attach_entity_cfs_rq()`); the model attaches it at its first
    /// update. `gcfs_w_down` is the group cfs_rq's weight for a detach's estimate.
    fn update_group_entity(&mut self, cpu: u32, l: u32, now: u64, v: &RootView, gcfs_w_down: u64) {
        let parent = self.specs[l as usize].parent;
        let (gi, pi) = (self.pidx(cpu, l), self.pidx(cpu, parent));
        let (queued, h_nr_runnable) = {
            let rq = self.rq(cpu, l);
            (rq.contrib > 0, rq.h_nr_runnable)
        };
        let running = v.curr_group.is_some_and(|c| self.is_ancestor(l, c));
        let g = &mut self.pelt[gi];
        if g.se.last_update_time != 0 {
            pelt::update_group_se(&mut g.se, now, g.se_w, queued, h_nr_runnable, running);
        }
        self.update_level_cfs(cpu, parent, now, v);
        // In place (a group and its parent are two slots of one table): the state is about
        // 220 bytes a level, and copying it in and out cost more than the updates.
        #[allow(clippy::expect_used, reason = "a group's parent is another group, so the two slots differ")]
        let [g, p] = self.pelt.get_disjoint_mut([gi, pi]).expect("a group is not its own parent");
        if g.se.last_update_time == 0 {
            if g.se_w == 0 {
                // init_tg_cfs_entry(): a new group entity weighs NICE_0_LOAD.
                g.se_w = scale_load_down(NICE_0_LOAD);
            }
            p.cfs.attach_entity_load_avg(&mut g.se, g.se_w);
            add_tg_cfs_propagate(p, g.se.load_sum as i64);
        }
        if g.propagate {
            g.propagate = false;
            add_tg_cfs_propagate(p, g.prop_runnable_sum);
            update_tg_cfs_util(&mut p.cfs, &mut g.se, g.cfs.avg.util_avg);
            let se_w = g.se_w;
            let mut se = g.se;
            update_tg_cfs_load(&mut p.cfs, &mut se, se_w, g, gcfs_w_down);
            g.se = se;
        }
    }

    /// The hierarchy's share of a task's `update_load_avg()` on `cpu` (fair.c 6.12.117 /
    /// 7.2.12 / 7.3.4): the task's group cfs_rq is updated, the task attached
    /// (`attach_entity_load_avg()`, aligned to that cfs_rq's window: done on a copy of the
    /// task's averages, which the model keeps aligned to the flat root) or detached
    /// (`detach_entity_load_avg()`), each with `add_tg_cfs_propagate()`, then every level up
    /// to the root (the `for_each_sched_entity` walk of enqueue, dequeue, `set_next_entity`
    /// and `entity_tick`). A root-group task updates only the root slot. `task` is the task's
    /// averages after the flat root's update, `w_down` its `se_weight`.
    #[allow(clippy::too_many_arguments, reason = "one kernel call's inputs")]
    pub fn pelt_task(
        &mut self,
        cpu: u32,
        g: u32,
        now: u64,
        task: &SchedAvg,
        w_down: u64,
        attach: bool,
        detach: bool,
        v: &RootView,
    ) {
        self.update_level_cfs(cpu, g, now, v);
        let i = self.pidx(cpu, g);
        if attach {
            let mut copy = *task;
            let p = &mut self.pelt[i];
            p.cfs.attach_entity_load_avg(&mut copy, w_down);
            add_tg_cfs_propagate(p, copy.load_sum as i64);
        } else if detach {
            let p = &mut self.pelt[i];
            p.cfs.detach_entity_load_avg(task, w_down);
            add_tg_cfs_propagate(p, (task.load_sum as i64).wrapping_neg());
        }
        // The kernel's propagation at the next level reads the group cfs_rq's weight after
        // `account_entity_dequeue()`; the model's group weights change after this call.
        let mut gcfs_w = scale_load_down(self.rq(cpu, g).load_weight);
        if detach {
            gcfs_w = gcfs_w.saturating_sub(w_down);
        }
        let mut l = g;
        while l != 0 {
            self.update_group_entity(cpu, l, now, v, gcfs_w);
            l = self.specs[l as usize].parent;
            gcfs_w = scale_load_down(self.rq(cpu, l).load_weight);
        }
    }

    /// `remove_entity_load_avg()` (fair.c 6.12.117 / 7.2.12 / 7.3.4) from the task's group
    /// cfs_rq on `cpu` (a wakeup migration, a task's death): synced to that cfs_rq's clock on
    /// a copy and queued in `removed`, subtracted and propagated at its next update.
    pub fn remove_task(&mut self, cpu: u32, g: u32, task: &SchedAvg, w_down: u64) {
        let i = self.pidx(cpu, g);
        let mut copy = *task;
        self.pelt[i].cfs.remove_entity_load_avg(&mut copy, w_down);
    }

    /// The PELT part of a task's `reweight_entity()` (a nice change) in its group cfs_rq.
    pub fn reweight_task(&mut self, cpu: u32, g: u32, task: &SchedAvg, old_down: u64, new_down: u64) {
        let i = self.pidx(cpu, g);
        let mut copy = *task;
        self.pelt[i].cfs.reweight_entity_load_avg(&mut copy, old_down, new_down);
    }

    /// The PELT part of `reweight_entity()` (fair.c 6.12.117 / 7.2.12 / 7.3.4) for group
    /// `l`'s entity, called by `update_cfs_group()` when its shares change: out of the
    /// parent's load, `load_avg = se_weight · load_sum / divider`, back in.
    pub(super) fn reweight_group_pelt(&mut self, cpu: u32, l: u32, parent: u32, new_down: u64) {
        let (gi, pi) = (self.pidx(cpu, l), self.pidx(cpu, parent));
        let old = self.pelt[gi].se_w;
        if old == new_down {
            return;
        }
        self.pelt[gi].se_w = new_down;
        if self.pelt[gi].se.last_update_time == 0 {
            return;
        }
        let mut se = self.pelt[gi].se;
        self.pelt[pi].cfs.reweight_entity_load_avg(&mut se, old, new_down);
        self.pelt[gi].se = se;
    }

    /// `__update_blocked_fair()` (fair.c 6.12.117 / 7.2.12 / 7.3.4) for `cpu`: every group
    /// cfs_rq bottom-up (children have larger ids), each followed by its entity's update in
    /// its parent unless `skip_blocked_update()` (entity fully decayed, nothing to
    /// propagate), the root last. Returns whether any level still has blocked load.
    pub fn update_blocked(&mut self, cpu: u32, now: u64, v: &RootView) -> bool {
        let mut blocked = false;
        for l in (1..self.n as u32).rev() {
            self.update_level_cfs(cpu, l, now, v);
            let p = &self.pelt[self.pidx(cpu, l)];
            let skip = p.se.load_avg == 0 && p.se.util_avg == 0 && !p.propagate;
            if !skip {
                let w = scale_load_down(self.rq(cpu, l).load_weight);
                self.update_group_entity(cpu, l, now, v, w);
            }
            blocked |= self.pelt[self.pidx(cpu, l)].cfs.has_blocked_load();
        }
        self.update_level_cfs(cpu, 0, now, v);
        blocked | self.pelt[self.pidx(cpu, 0)].cfs.has_blocked_load()
    }

    /// The root cfs_rq of the load hierarchy on `cpu`: `cpu_load()` and `cpu_load_without()`
    /// with groups read it.
    pub fn load_root(&self, cpu: u32) -> &CfsRqPelt {
        &self.pelt[self.pidx(cpu, 0)].cfs
    }

    /// Group `g`'s cfs_rq averages on `cpu` (slot 0: the root).
    pub fn level_pelt(&self, cpu: u32, g: u32) -> &GroupPelt {
        &self.pelt[self.pidx(cpu, g)]
    }

    /// `update_cfs_rq_h_load()` (fair.c 6.12.117 / 7.2.12 / 7.3.4): the hierarchical load
    /// factor of group `g`'s cfs_rq on `cpu`, top-down, each level at most once per jiffy:
    /// mark the path up to the first level already computed this jiffy (or the root, whose
    /// `h_load` is its `load_avg`), then walk down with `h_load · ge.load_avg /
    /// (parent.load_avg + 1)` (`div64_ul`).
    fn update_cfs_rq_h_load(&mut self, cpu: u32, g: u32, jiffies: u64) {
        let i = self.pidx(cpu, g);
        if self.pelt[i].cfs.last_h_load_update == Some(jiffies) {
            return;
        }
        if g == 0 {
            let root = &mut self.pelt[i].cfs;
            root.h_load = root.avg.load_avg;
            root.last_h_load_update = Some(jiffies);
            return;
        }
        // The kernel's upward walk with `h_load_next` stops at the first level already
        // computed this jiffy; recursing on the parent does the same, nesting-deep and
        // without allocating.
        let parent = self.specs[g as usize].parent;
        self.update_cfs_rq_h_load(cpu, parent, jiffies);
        let pi = self.pidx(cpu, parent);
        let (h, parent_load) = (self.pelt[pi].cfs.h_load, self.pelt[pi].cfs.avg.load_avg);
        let load = h.wrapping_mul(self.pelt[i].se.load_avg) / parent_load.wrapping_add(1);
        let c = &mut self.pelt[i].cfs;
        c.h_load = load;
        c.last_h_load_update = Some(jiffies);
    }

    /// `task_h_load()` (fair.c 6.12.117 / 7.2.12 / 7.3.4) of a task of group `g` on `cpu`
    /// with `load_avg` `p_load_avg`: `p_load_avg · h_load / (cfs_rq_load_avg + 1)`
    /// (`div64_ul`) with its group cfs_rq's `h_load`.
    pub fn task_h_load(&mut self, cpu: u32, g: u32, p_load_avg: u64, jiffies: u64) -> u64 {
        self.update_cfs_rq_h_load(cpu, g, jiffies);
        let c = &self.pelt[self.pidx(cpu, g)].cfs;
        p_load_avg.wrapping_mul(c.h_load) / c.avg.load_avg.wrapping_add(1)
    }
}
