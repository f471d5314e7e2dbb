//! Task groups: the cgroup v2 cpu controller (`cpu.weight`, `cpu.idle`) and autogroup
//! (kernel/sched/core.c, autogroup.c, fair.c; spec `kernel-fair.md` §7, errata "Task groups").
//!
//! What is kept per group and CPU is the group runqueue's bookkeeping (`cfs_rq->load`,
//! `h_nr_queued`, `h_nr_runnable`) and the weight of the group's entity on that CPU
//! (`update_cfs_group()` with the version's `calc_group_shares`). On 7.3 the EEVDF runqueue stays the
//! one per CPU: 7.3's flat runqueue holds only tasks, each with the effective weight
//! `se->h_load.weight` of [`Groups::h_weight`] (`__calc_prop_weight`), which the engine
//! refreshes at enqueue, at `set_next_task_fair` and at the tick (`reweight_eevdf`,
//! [`super::Fair::reweight_h`]).
//!
//! Up to 7.2 the kernel runs EEVDF per level (group entities in their parent's tree,
//! `find_matching_se` in wakeup preemption, group slices): `fair/hier.rs` does that, with the
//! bookkeeping here ([`Groups::update_level`], [`Groups::set_queued`], [`Groups::task_load`],
//! [`Groups::count`]) and 6.12/7.2's `calc_group_shares`; tasks keep their own weights there.
//!
//! The group's load is its queued weight (`cfs_rq->load.weight`), which the kernel's
//! `max(load.weight, avg.load_avg)` takes for a busy group; `tg->load_avg` is the sum over CPUs
//! of that, updated at every accounting step rather than through PELT and the rate limit of
//! `update_tg_load_avg()`; 7.3.4's `tg_tasks` (`runnable_avg >> 10`) is the group's runnable
//! task count.
//!
//! What the load balancer and `wake_affine_weight` read (`cpu_load()`, `task_h_load()`) is the
//! PELT load hierarchy of `group_pelt.rs`: each group cfs_rq's and group entity's `load_avg`
//! on each CPU, whose entity weights are the `se_weight` computed here.

use super::group_pelt::GroupPelt;
use super::weight::{NICE_0_LOAD, SCHED_PRIO_TO_WEIGHT, WEIGHT_IDLEPRIO, mul_div, scale_load, scale_load_down};

/// `MIN_SHARES` (kernel/sched/sched.h v7.3.4): the floor of a group entity's weight.
pub const MIN_SHARES: u64 = 2;
/// `MAX_SHARES` (sched.h), scaled: the largest `tg->shares`.
pub const MAX_SHARES: u64 = scale_load(1 << 18);
/// `CGROUP_WEIGHT_DFL` / `_MIN` / `_MAX` (include/linux/cgroup.h).
pub const CGROUP_WEIGHT_DFL: u64 = 100;
pub const CGROUP_WEIGHT_MIN: u64 = 1;
pub const CGROUP_WEIGHT_MAX: u64 = 10_000;

/// `sched_weight_from_cgroup()` (core.c v7.3.4): `cpu.weight` (1..=10000, default 100) to the
/// scaled `tg->shares` that `sched_group_set_shares()` stores.
pub fn shares_from_cpu_weight(weight: u64) -> u64 {
    scale_load((weight * 1024 + CGROUP_WEIGHT_DFL / 2) / CGROUP_WEIGHT_DFL)
}

/// `proc_sched_autogroup_set_nice()` (autogroup.c v7.3.4): an autogroup's shares are the
/// weight of its nice value (0 unless `/proc/<pid>/autogroup` was written).
pub fn shares_from_autogroup_nice(nice: i32) -> u64 {
    scale_load(SCHED_PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize])
}

/// `sched_group_set_idle()` (fair.c v7.3.4): `cpu.idle = 1` gives the group entity the
/// SCHED_IDLE weight.
pub const IDLE_GROUP_SHARES: u64 = scale_load(WEIGHT_IDLEPRIO);

/// One task group below the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSpec {
    /// The cgroup path (`/A/B`) or `/autogroup-N`, for reports.
    pub name: String,
    /// The parent's id: 0 is the root group, `i + 1` is `groups[i]` (parents come first).
    pub parent: u32,
    /// `tg->shares`, scaled (see [`shares_from_cpu_weight`], [`shares_from_autogroup_nice`]).
    pub shares: u64,
    /// `cpu.idle`.
    pub idle: bool,
}

/// How a group entity's weight follows from the group's shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharesMode {
    /// ≤7.2 `calc_group_shares()`: `tg->shares · load / tg_weight`, at most `tg->shares`.
    Smp,
    /// 7.3 default `cgroup_mode` 2, `calc_concur_shares()`: the same fraction of
    /// `min(tg_tasks, tg_cpus) · tg->shares`.
    Concur,
}

/// A group's runqueue on one CPU (`struct cfs_rq` of a task group, the fields the model keeps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupRq {
    /// `cfs_rq->load.weight`: the queued members' weights (tasks' own, child groups' entities).
    pub load_weight: u64,
    /// Queued tasks of the group and its descendants (delayed ones included).
    pub h_nr_queued: u32,
    /// Queued tasks that are not delayed.
    pub h_nr_runnable: u32,
    /// Queued tasks that are SCHED_IDLE or below an idle group under this one
    /// (`cfs_rq->h_nr_idle`, 6.12's `idle_h_nr_running`: the `h_nr_idle` of
    /// `enqueue_task_fair()`/`dequeue_entities()`, which a group's own `cpu.idle` sets for the
    /// levels above it).
    pub h_nr_idle: u32,
    /// The weight of the group's entity on this CPU (`update_cfs_group()`).
    pub se_weight: u64,
    /// What this runqueue adds to its parent's `load_weight`: `se_weight` while its entity is
    /// queued (flat: while the group has tasks; ≤7.2: `queued`).
    pub contrib: u64,
    /// ≤7.2 hierarchy: the group's entity is on its parent's runqueue (`se->on_rq`, delayed
    /// included): account_entity_enqueue()/_dequeue() add or remove its weight there.
    pub queued: bool,
    /// `cfs_rq->tg_load_avg_contrib` and 7.3's `tg_tasks_contrib`.
    tg_load_contrib: u64,
    tg_tasks_contrib: u32,
}

/// All task groups of a simulation: static specs plus per-CPU runqueues (`[cpu * n + group]`).
#[derive(Clone, Debug)]
pub struct Groups {
    pub(super) specs: Vec<GroupSpec>,
    pub(super) n: usize,
    ncpus: u32,
    mode: SharesMode,
    /// ≤7.2: group entities live in their parents' EEVDF trees (`fair/hier.rs`); an empty
    /// group's entity keeps its weight and is removed from its parent's load only when it is
    /// dequeued, which may be delayed.
    pub(super) hier: bool,
    /// `[cpu * n + g]`; slot `g = 0` keeps, in `load_weight`, the sum of the top-level group
    /// entities' weights on the root runqueue (`contrib` of the groups whose parent is 0).
    pub(super) rqs: Vec<GroupRq>,
    /// `tg->load_avg` (unscaled) and `tg->tasks`, by group.
    tg_load: Vec<u64>,
    tg_tasks: Vec<u32>,
    /// The PELT load hierarchy (`fair/group_pelt.rs`), `[cpu * n + g]`; slot 0 is the root
    /// cfs_rq as the load balancer sees it.
    pub(super) pelt: Vec<GroupPelt>,
    /// Per CPU: the own load weights of the queued tasks of groups other than the root, which
    /// the root runqueue's load holds in their groups' entities instead.
    pub(super) task_w: Vec<u64>,
}

impl Groups {
    /// Checks and builds the groups. Ids: 0 is the root, `i + 1` is `specs[i]`.
    pub fn new(specs: &[GroupSpec], ncpus: u32, mode: SharesMode) -> Result<Groups, String> {
        Groups::with_hierarchy(specs, ncpus, mode, false)
    }

    /// As [`Groups::new`]; `hier` for ≤7.2's per-level runqueues (`fair/hier.rs`).
    pub fn with_hierarchy(specs: &[GroupSpec], ncpus: u32, mode: SharesMode, hier: bool) -> Result<Groups, String> {
        for (i, g) in specs.iter().enumerate() {
            if g.parent as usize > i {
                return Err(format!("task group `{}`: its parent {} comes after it", g.name, g.parent));
            }
            if g.shares == 0 || g.shares > MAX_SHARES {
                return Err(format!("task group `{}`: shares {} out of range", g.name, g.shares));
            }
        }
        let mut all = vec![GroupSpec { name: "/".into(), parent: 0, shares: NICE_0_LOAD, idle: false }];
        all.extend(specs.iter().cloned());
        let n = all.len();
        Ok(Groups {
            specs: all,
            n,
            ncpus,
            mode,
            hier,
            rqs: vec![GroupRq::default(); n * ncpus as usize],
            tg_load: vec![0; n],
            tg_tasks: vec![0; n],
            pelt: vec![GroupPelt::default(); n * ncpus as usize],
            task_w: vec![0; ncpus as usize],
        })
    }

    /// Number of groups including the root.
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 1
    }
    /// Whether the groups run as ≤7.2's hierarchy of runqueues.
    pub fn is_hierarchy(&self) -> bool {
        self.hier
    }
    pub fn spec(&self, g: u32) -> &GroupSpec {
        &self.specs[g as usize]
    }
    pub fn rq(&self, cpu: u32, g: u32) -> &GroupRq {
        &self.rqs[cpu as usize * self.n + g as usize]
    }
    /// The own load weights of the queued tasks of groups other than the root on `cpu`.
    pub fn grouped_task_weight(&self, cpu: u32) -> u64 {
        self.task_w[cpu as usize]
    }
    fn rq_mut(&mut self, cpu: u32, g: u32) -> &mut GroupRq {
        &mut self.rqs[cpu as usize * self.n + g as usize]
    }

    /// A task of weight `w` in group `g` joined (`dq = 1`) or left (`-1`) the queue of `cpu`,
    /// or became runnable or delayed (`dr`): the counts of every level of
    /// `enqueue_task_fair()`/`dequeue_entities()` (fair.c v7.3.4; `idle`: the task is
    /// SCHED_IDLE), then `update_cfs_group()` up the hierarchy.
    pub fn account(&mut self, cpu: u32, g: u32, w: u64, dq: i32, dr: i32, idle: bool) {
        if g == 0 || (dq == 0 && dr == 0) {
            return;
        }
        self.task_load(cpu, g, w, dq);
        self.count(cpu, g, dq, dr, idle);
        self.update_chain(cpu, g);
    }

    /// `update_cfs_group()` at every level from `g` up (fair.c v7.3.4; the tick's
    /// `entity_tick()` does it for the running task's levels): see [`Groups::update_level`].
    pub fn update_chain(&mut self, cpu: u32, g: u32) {
        let mut l = g;
        while l != 0 {
            self.update_level(cpu, l);
            l = self.specs[l as usize].parent;
        }
    }

    /// `update_cfs_group()` of group `l`'s entity on `cpu` (fair.c 6.12.117 / 7.2.12 / 7.3.4):
    /// the group's contribution to `tg->load_avg` and `tg->tasks` (`update_tg_load_avg()`),
    /// then its entity's weight and the parent runqueue's load. Returns the entity's weight.
    /// In ≤7.2's hierarchy an empty group keeps its entity's weight ("When a group becomes
    /// empty, preserve its weight"), which its parent's EEVDF tree still holds while the
    /// entity is queued (delayed); the caller reweights the EEVDF entity to the result.
    pub fn update_level(&mut self, cpu: u32, l: u32) -> u64 {
        let parent = self.specs[l as usize].parent;
        let i = cpu as usize * self.n + l as usize;
        self.update_tg_load(cpu, l);
        if self.hier && self.rqs[i].load_weight == 0 {
            return self.rqs[i].se_weight;
        }
        let w = self.calc_group_shares(cpu, l);
        let rq = &mut self.rqs[i];
        rq.se_weight = w;
        let old = rq.contrib;
        let queued = if self.hier { rq.queued } else { rq.h_nr_queued > 0 };
        rq.contrib = if queued { w } else { 0 };
        let new = rq.contrib;
        // update_cfs_group() keeps an empty group's entity weight (6.12.117 / 7.2.12 /
        // 7.3.4: "When a group becomes empty, preserve its weight"), so its blocked
        // load_avg decays rather than collapsing.
        if rq.load_weight != 0 {
            self.reweight_group_pelt(cpu, l, parent, scale_load_down(w));
        }
        // The root slot holds the top-level entities' weights (the root cfs_rq's share
        // of `load.weight` that comes from groups).
        let p = self.rq_mut(cpu, parent);
        p.load_weight = p.load_weight - old + new;
        w
    }

    /// `update_tg_load_avg()` (fair.c 6.12.117 / 7.2.12 / 7.3.4) of group `l` on `cpu`: its
    /// runqueue's contribution to `tg->load_avg` (its queued load, see the module doc) and to
    /// 7.3's `tg->tasks`.
    pub fn update_tg_load(&mut self, cpu: u32, l: u32) {
        let i = cpu as usize * self.n + l as usize;
        let load = scale_load_down(self.rqs[i].load_weight);
        let tasks = self.rqs[i].h_nr_runnable;
        self.tg_load[l as usize] = self.tg_load[l as usize] - self.rqs[i].tg_load_contrib + load;
        self.tg_tasks[l as usize] = self.tg_tasks[l as usize] - self.rqs[i].tg_tasks_contrib + tasks;
        self.rqs[i].tg_load_contrib = load;
        self.rqs[i].tg_tasks_contrib = tasks;
    }

    /// ≤7.2: group `g`'s entity joined or left its parent's runqueue on `cpu`
    /// (`account_entity_enqueue()` / `account_entity_dequeue()`, fair.c 6.12.117 / 7.2.12):
    /// its weight joins or leaves the parent's `load.weight`.
    pub fn set_queued(&mut self, cpu: u32, g: u32, queued: bool) {
        let parent = self.specs[g as usize].parent;
        let rq = self.rq_mut(cpu, g);
        rq.queued = queued;
        let old = rq.contrib;
        rq.contrib = if queued { rq.se_weight } else { 0 };
        let new = rq.contrib;
        let p = self.rq_mut(cpu, parent);
        p.load_weight = p.load_weight - old + new;
    }

    /// ≤7.2: a task of weight `w` joined (`dq = 1`) or left (`-1`) group `g`'s runqueue on
    /// `cpu` (`account_entity_enqueue()` / `_dequeue()` of the task's own level).
    pub fn task_load(&mut self, cpu: u32, g: u32, w: u64, dq: i32) {
        let rq = self.rq_mut(cpu, g);
        if dq > 0 {
            rq.load_weight += w;
            self.task_w[cpu as usize] += w;
        } else if dq < 0 {
            rq.load_weight -= w;
            self.task_w[cpu as usize] -= w;
        }
    }

    /// The `h_nr_queued` (`dq`) and `h_nr_runnable` (`dr`) changes of one task at every level
    /// of group `g` on `cpu` (the `for_each_sched_entity` loops of `enqueue_task_fair()` /
    /// `dequeue_entities()`, 7.3.4's `enqueue_hierarchy()`, `set_delayed()`/`clear_delayed()`),
    /// and `h_nr_idle` with `h_nr_queued`: the task counts as idle at a level if it is
    /// SCHED_IDLE (`idle`) or a group below that level is (`cfs_rq_is_idle()` sets `h_nr_idle`
    /// for the levels above; fair.c 6.12.117 l.7050 / 7.2.12 l.8061 / 7.3.4 l.8190).
    pub fn count(&mut self, cpu: u32, g: u32, dq: i32, dr: i32, idle: bool) {
        let mut l = g;
        let mut idle = idle;
        while l != 0 {
            let rq = self.rq_mut(cpu, l);
            rq.h_nr_queued = rq.h_nr_queued.wrapping_add_signed(dq);
            rq.h_nr_runnable = rq.h_nr_runnable.wrapping_add_signed(dr);
            if idle {
                rq.h_nr_idle = rq.h_nr_idle.wrapping_add_signed(dq);
            }
            idle |= self.specs[l as usize].idle;
            l = self.specs[l as usize].parent;
        }
    }

    /// Whether a task of group `g` counts in the root's `h_nr_idle` through its groups (one of
    /// them is `cpu.idle`), whatever its own policy.
    pub fn idle_path(&self, g: u32) -> bool {
        let mut l = g;
        while l != 0 {
            if self.specs[l as usize].idle {
                return true;
            }
            l = self.specs[l as usize].parent;
        }
        false
    }

    /// The parent of group `g` (0 for a top-level group and for the root itself).
    pub fn parent(&self, g: u32) -> u32 {
        self.specs[g as usize].parent
    }

    /// `calc_group_shares()` (fair.c 6.12.117/7.2.12) or `calc_concur_shares()` (7.3.4) for
    /// group `g` on `cpu`: `shares · load / tg_weight` with `tg_weight` the group's load on all
    /// CPUs, clamped to `[MIN_SHARES, max]`.
    fn calc_group_shares(&self, cpu: u32, g: u32) -> u64 {
        let spec = &self.specs[g as usize];
        let tg_shares = if spec.idle { IDLE_GROUP_SHARES } else { spec.shares };
        let rq = self.rq(cpu, g);
        let load = scale_load_down(rq.load_weight);
        let tg_weight = self.tg_load[g as usize] - rq.tg_load_contrib + load;
        let (num, max) = match self.mode {
            SharesMode::Smp => (tg_shares, tg_shares),
            SharesMode::Concur => {
                // tg_tasks() is at least 1; tg_cpus() is the group's cpuset: every CPU here.
                let nr = u64::from(self.tg_tasks[g as usize].max(1).min(self.ncpus));
                (tg_shares * nr, scale_load(SCHED_PRIO_TO_WEIGHT[0]))
            }
        };
        let shares = if tg_weight != 0 { mul_div(num, load, tg_weight) } else { num };
        shares.clamp(MIN_SHARES, max.max(MIN_SHARES))
    }

    /// `__calc_prop_weight()` (fair.c v7.3.4 l.4993, spec §7): the effective weight of a task
    /// of weight `w` in group `g` on `cpu`, the product down the hierarchy of each entity's
    /// share of its runqueue, floored at 2 at every level. A root-group task keeps `w`.
    pub fn h_weight(&self, cpu: u32, g: u32, w: u64) -> u64 {
        if g == 0 {
            return w;
        }
        let frac = |h: u64, num: u64, den: u64| {
            if den == 0 { h } else { mul_div(h, num, den).max(2) }
        };
        let mut h = frac(NICE_0_LOAD, w, self.rq(cpu, g).load_weight);
        let mut l = g;
        while l != 0 {
            let parent = self.specs[l as usize].parent;
            let den = if parent == 0 { NICE_0_LOAD } else { self.rq(cpu, parent).load_weight };
            h = frac(h, self.rq(cpu, l).se_weight, den);
            l = parent;
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fair::weight::nice_to_weight;

    fn two_sessions(mode: SharesMode, ncpus: u32) -> Groups {
        let ag = |n: &str| GroupSpec { name: n.into(), parent: 0, shares: shares_from_autogroup_nice(0), idle: false };
        Groups::new(&[ag("/autogroup-1"), ag("/autogroup-2")], ncpus, mode).unwrap()
    }

    #[test]
    fn cpu_weight_maps_as_sched_weight_from_cgroup() {
        assert_eq!(shares_from_cpu_weight(100), NICE_0_LOAD);
        assert_eq!(shares_from_cpu_weight(1), scale_load(10));
        assert_eq!(shares_from_cpu_weight(10_000), scale_load(102_400));
        assert_eq!(shares_from_autogroup_nice(5), scale_load(335));
    }

    /// One hog in one session, four in another, one CPU: each group entity gets the full
    /// shares, so the lone hog's effective weight is NICE_0_LOAD and each of the four a quarter.
    #[test]
    fn one_cpu_two_sessions_split_per_group() {
        for mode in [SharesMode::Smp, SharesMode::Concur] {
            let mut g = two_sessions(mode, 1);
            let w = nice_to_weight(0);
            g.account(0, 1, w, 1, 1, false);
            for _ in 0..4 {
                g.account(0, 2, w, 1, 1, false);
            }
            assert_eq!(g.rq(0, 1).se_weight, NICE_0_LOAD);
            assert_eq!(g.rq(0, 2).se_weight, NICE_0_LOAD);
            assert_eq!(g.h_weight(0, 1, w), NICE_0_LOAD);
            assert_eq!(g.h_weight(0, 2, w), NICE_0_LOAD / 4);
            assert_eq!(g.rq(0, 2).h_nr_queued, 4);
        }
    }

    /// On two CPUs with everything pinned to one, 7.3's concur mode still counts both CPUs:
    /// the four-task group's entity gets min(4, 2) = 2 shares, calc_concur_shares()'s
    /// affinity edge case; ≤7.2's calc_group_shares() gives one share.
    #[test]
    fn concur_counts_cpus_not_affinity() {
        let w = nice_to_weight(0);
        let mut smp = two_sessions(SharesMode::Smp, 2);
        let mut concur = two_sessions(SharesMode::Concur, 2);
        for g in [&mut smp, &mut concur] {
            for _ in 0..4 {
                g.account(0, 2, w, 1, 1, false);
            }
        }
        assert_eq!(smp.rq(0, 2).se_weight, NICE_0_LOAD);
        assert_eq!(concur.rq(0, 2).se_weight, 2 * NICE_0_LOAD);
    }

    /// A group split over two CPUs gives each CPU's entity its load's fraction of the shares.
    #[test]
    fn shares_follow_the_load_fraction() {
        let mut g = two_sessions(SharesMode::Smp, 2);
        let w = nice_to_weight(0);
        g.account(0, 1, w, 1, 1, false);
        g.account(1, 1, w, 1, 1, false);
        g.account(1, 1, w, 1, 1, false);
        // CPU 1's update saw the whole load; CPU 0's entity is stale until its next update.
        assert_eq!(g.rq(1, 1).se_weight, NICE_0_LOAD * 2 / 3);
        g.update_chain(0, 1);
        assert_eq!(g.rq(0, 1).se_weight, NICE_0_LOAD / 3);
        // Leaving empties the runqueue and its contribution.
        g.account(0, 1, w, -1, -1, false);
        assert_eq!((g.rq(0, 1).load_weight, g.rq(0, 1).contrib), (0, 0));
    }

    #[test]
    fn nested_groups_multiply_fractions() {
        let specs = [
            GroupSpec { name: "/a".into(), parent: 0, shares: shares_from_cpu_weight(100), idle: false },
            GroupSpec { name: "/a/b".into(), parent: 1, shares: shares_from_cpu_weight(100), idle: false },
        ];
        let mut g = Groups::new(&specs, 1, SharesMode::Smp).unwrap();
        let w = nice_to_weight(0);
        g.account(0, 1, w, 1, 1, false);
        g.account(0, 2, w, 1, 1, false);
        // /a holds its own task (1024) and /a/b's entity (1024): each half of /a's 1024.
        assert_eq!(g.rq(0, 1).load_weight, 2 * NICE_0_LOAD);
        assert_eq!(g.h_weight(0, 1, w), NICE_0_LOAD / 2);
        assert_eq!(g.h_weight(0, 2, w), NICE_0_LOAD / 2);
        assert_eq!(g.rq(0, 1).h_nr_queued, 2);
        assert!(Groups::new(&[GroupSpec { parent: 2, ..specs[0].clone() }], 1, SharesMode::Smp).is_err());
    }

    /// `h_nr_idle` per level (fair.c 7.2.12 l.8061 / 7.3.4 l.8190): a group's own `cpu.idle`
    /// counts its tasks as idle at the levels above it, not at its own; a SCHED_IDLE task is
    /// idle at every level.
    #[test]
    fn h_nr_idle_counts_below_an_idle_group() {
        let specs = [
            GroupSpec { name: "/a".into(), parent: 0, shares: IDLE_GROUP_SHARES, idle: true },
            GroupSpec { name: "/a/b".into(), parent: 1, shares: shares_from_cpu_weight(100), idle: false },
        ];
        let mut g = Groups::new(&specs, 1, SharesMode::Smp).unwrap();
        let w = nice_to_weight(0);
        g.account(0, 2, w, 1, 1, false);
        assert_eq!((g.rq(0, 2).h_nr_idle, g.rq(0, 1).h_nr_idle), (0, 0));
        assert!(g.idle_path(2) && g.idle_path(1));
        g.account(0, 2, w, 1, 1, true);
        assert_eq!((g.rq(0, 2).h_nr_idle, g.rq(0, 1).h_nr_idle), (1, 1));
        g.account(0, 2, w, -1, -1, true);
        g.account(0, 2, w, -1, -1, false);
        assert_eq!((g.rq(0, 2).h_nr_idle, g.rq(0, 1).h_nr_idle, g.rq(0, 1).h_nr_queued), (0, 0, 0));
        let plain = [GroupSpec { idle: false, shares: shares_from_cpu_weight(100), ..specs[0].clone() }];
        assert!(!Groups::new(&plain, 1, SharesMode::Smp).unwrap().idle_path(1));
    }
}
