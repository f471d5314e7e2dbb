//! The fair scheduling class (EEVDF) on one CPU's runqueue, restated from
//! `kernel/sched/fair.c` v7.3.4 (spec `kernel-fair.md` §3), with the version switches of
//! [`Behavior`](crate::config::Behavior).
//!
//! Every function here models one kernel function and says which. Arithmetic is the kernel's:
//! `u64` virtual times compared by signed difference, `i64` lags, the `s64` sums of
//! `avg_vruntime` with wrapping adds, and the exact `__int128` eligibility comparison.
//!
//! A [`Fair`] is a short-lived view that borrows one CPU's [`CfsRq`], the entities of all tasks
//! and the parameters; the engine builds one per operation. Reschedule requests are returned in
//! [`Fair::resched`] for the engine to act on according to the preemption model.
//!
//! With ≤7.2's task-group levels (`hier.rs`) the same functions run on each level's runqueue:
//! an entity id is a task's or a group entity's, and [`Fair::cfs`] holds the level an
//! operation is on.

pub mod entity;
pub mod group;
pub mod group_pelt;
pub mod hier;
pub mod tree;
pub mod weight;

pub use entity::{Policy, SchedEntity};

use crate::config::{Behavior, LagClamp, ProtectVariant, SchedConfig, WakeupPreemptVariant};
use crate::features::{Feature, FeatureSet};
use crate::pelt::{self, CfsRqPelt, RqState, SeState};
use crate::task::TaskId;
use tree::{NodeKey, Timeline, before};
use weight::{NICE_0_LOAD, calc_delta_fair, scale_load_down};

/// Wake flags (`WF_*`, kernel/sched/sched.h v7.3.4).
pub mod wf {
    pub const EXEC: u32 = 0x02;
    pub const FORK: u32 = 0x04;
    pub const TTWU: u32 = 0x08;
    pub const SYNC: u32 = 0x10;
    pub const MIGRATED: u32 = 0x20;
    pub const CURRENT_CPU: u32 = 0x40;
    pub const RQ_SELECTED: u32 = 0x80;
}

/// Enqueue flags (`ENQUEUE_*`), the subset the fair class reads.
pub mod enq {
    pub const WAKEUP: u32 = 0x01;
    pub const RESTORE: u32 = 0x02;
    pub const MIGRATED: u32 = 0x04;
    pub const INITIAL: u32 = 0x08;
    pub const DELAYED: u32 = 0x10;
    pub const RQ_SELECTED: u32 = 0x20;
    /// 7.3: "already counted in h_nr_queued" (used by `place_entity`).
    pub const QUEUED: u32 = 0x40;
}

/// Dequeue flags (`DEQUEUE_*`).
pub mod deq {
    pub const SLEEP: u32 = 0x01;
    pub const SAVE: u32 = 0x02;
    pub const DELAYED: u32 = 0x04;
    pub const SPECIAL: u32 = 0x08;
    /// The task is being moved by load balancing (`task_on_rq_migrating()`): PELT detaches it.
    pub const MIGRATING: u32 = 0x10;
}

/// The parameters the fair class reads, resolved once from a [`SchedConfig`].
#[derive(Clone, Debug)]
pub struct FairParams {
    pub features: FeatureSet,
    pub behavior: Behavior,
    /// `sysctl_sched_base_slice` for this machine's CPU count.
    pub base_slice: u64,
    pub normalized_base_slice: u64,
    pub migration_cost: u64,
    pub tick_nsec: u64,
    /// `resched_curr_lazy()` sets the lazy flag (preempt=lazy on a kernel that has it).
    pub lazy_resched: bool,
}

impl FairParams {
    pub fn new(cfg: &SchedConfig, ncpus: u32) -> FairParams {
        FairParams {
            features: cfg.features,
            behavior: cfg.behavior,
            base_slice: cfg.sysctl.base_slice(ncpus),
            normalized_base_slice: cfg.sysctl.normalized_base_slice_ns,
            migration_cost: cfg.sysctl.migration_cost_ns,
            tick_nsec: cfg.tick_nsec(),
            lazy_resched: cfg.lazy_resched(),
        }
    }
    #[inline]
    pub fn feat(&self, f: Feature) -> bool {
        self.features.has(f)
    }
}

/// One CPU's fair runqueue (`struct cfs_rq`, root group only: spec §2.2).
///
/// In order: the counts come first, where another CPU's wakeup scan reads them (the engine's
/// `Rq` puts this struct right after its own scanned fields, in one cache line).
#[derive(Clone, Debug)]
#[repr(C)]
pub struct CfsRq {
    /// Queued tasks including curr and delayed ones (== `rq.nr_running` with only fair tasks),
    /// of this level and every level below it.
    pub h_nr_queued: u32,
    /// Queued entities of this runqueue itself (`cfs_rq->nr_queued`, 6.12 `nr_running`):
    /// the same as `h_nr_queued` on a flat runqueue; with ≤7.2's group levels
    /// (`fair/hier.rs`) a group's entity counts once here, whatever it holds.
    pub nr_queued: u32,
    /// Queued tasks that are not delayed.
    pub h_nr_runnable: u32,
    pub h_nr_idle: u32,
    /// Queued entities except `curr`, by deadline.
    pub timeline: Timeline,
    pub curr: Option<TaskId>,
    pub next: Option<TaskId>,
    /// Σ key·w over the tree (kernel `s64`, wrapping).
    pub sum_w_vruntime: i64,
    pub sum_weight: u64,
    /// `zero_vruntime` (v0), the origin of keys.
    pub zero_vruntime: u64,
    /// Σ load weight of queued entities.
    pub load_weight: u64,
    /// PELT averages of the runqueue (`cfs_rq.avg`).
    pub pelt: CfsRqPelt,
    /// Runtime charged by `update_curr()` and not yet handed to CONFIG_SCHED_CACHE's
    /// `account_mm_sched()`: (task, time, ns). The engine takes it before each use of the
    /// runqueue, so all of it was charged at one time (`engine/balance/llc.rs`).
    pub mm_runtime: Option<(TaskId, u64, u64)>,
}

impl Default for CfsRq {
    fn default() -> Self {
        CfsRq {
            timeline: Timeline::new(),
            curr: None,
            next: None,
            sum_w_vruntime: 0,
            sum_weight: 0,
            // init_cfs_rq(): deliberately near the wrap point.
            zero_vruntime: (-(1i64 << 20)) as u64,
            h_nr_queued: 0,
            nr_queued: 0,
            h_nr_runnable: 0,
            h_nr_idle: 0,
            load_weight: 0,
            pelt: CfsRqPelt::new(),
            mm_runtime: None,
        }
    }
}

impl CfsRq {
    /// `cfs_h_nr_delayed()` (fair.c v7.3.4).
    pub fn nr_delayed(&self) -> u32 {
        self.h_nr_queued - self.h_nr_runnable
    }
}

/// A reschedule request from the fair class (`resched_curr` / `resched_curr_lazy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resched {
    None,
    Lazy,
    Full,
}

/// Why `wakeup_preempt_fair` decided what it did (for traces and `explain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeupReason {
    SameEntity,
    NeedReschedPending,
    NoWakeupPreemption,
    IdleCurr,
    IdleMismatch,
    NotNormalPolicy,
    WakeeDelayed,
    Fork,
    ForcedWakerIneligible,
    PreemptSyncResched,
    PreemptSyncNone,
    PickedWakee,
    ShortEligible,
    PickedOther,
}

impl WakeupReason {
    pub fn name(self) -> &'static str {
        match self {
            WakeupReason::SameEntity => "same_entity",
            WakeupReason::NeedReschedPending => "need_resched_pending",
            WakeupReason::NoWakeupPreemption => "NO_WAKEUP_PREEMPTION",
            WakeupReason::IdleCurr => "curr_sched_idle",
            WakeupReason::IdleMismatch => "idle_mismatch",
            WakeupReason::NotNormalPolicy => "wakee_not_normal",
            WakeupReason::WakeeDelayed => "wakee_delayed",
            WakeupReason::Fork => "fork",
            WakeupReason::ForcedWakerIneligible => "force_waker_ineligible",
            WakeupReason::PreemptSyncResched => "preempt_sync_resched",
            WakeupReason::PreemptSyncNone => "preempt_sync_none",
            WakeupReason::PickedWakee => "pick_is_wakee",
            WakeupReason::ShortEligible => "short_eligible",
            WakeupReason::PickedOther => "pick_is_other",
        }
    }
}

/// The outcome of one wakeup-preemption check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeupVerdict {
    pub preempt: bool,
    pub reason: WakeupReason,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    None,
    Short,
    Pick,
    Resched,
}

/// A view of one CPU's fair class for the duration of one operation.
pub struct Fair<'a> {
    pub cfs: &'a mut CfsRq,
    pub ents: &'a mut [SchedEntity],
    pub p: &'a FairParams,
    /// `rq_clock_task()`: the simulated time of the operation.
    pub now: u64,
    /// The strongest reschedule request made during this operation.
    pub resched: Resched,
    /// The task groups and this CPU's id, when the run has groups besides the root.
    pub groups: Option<(&'a mut group::Groups, u32)>,
    /// ≤7.2's group levels on this CPU (`fair/hier.rs`), by group id (slot 0 unused): each
    /// group's runqueue and its entity in the parent's. Empty without the hierarchy.
    pub gcfs: &'a mut [CfsRq],
    pub gents: &'a mut [SchedEntity],
    /// The level whose runqueue `cfs` holds during a hierarchical operation (0: the root);
    /// see [`Fair::goto_level`]. Always 0 between operations.
    lvl: u32,
}

impl<'a> Fair<'a> {
    pub fn new(cfs: &'a mut CfsRq, ents: &'a mut [SchedEntity], p: &'a FairParams, now: u64) -> Self {
        Fair { cfs, ents, p, now, resched: Resched::None, groups: None, gcfs: &mut [], gents: &mut [], lvl: 0 }
    }

    /// A task's entity, or a group's (`hier::GROUP_SE` ids, ≤7.2's hierarchy).
    #[inline]
    fn se(&self, t: TaskId) -> &SchedEntity {
        if t.0 & hier::GROUP_SE != 0 { &self.gents[(t.0 & !hier::GROUP_SE) as usize] } else { &self.ents[t.idx()] }
    }
    /// The entity of a task or of a group (for the invariant checker).
    pub fn entity_of(&self, t: TaskId) -> &SchedEntity {
        self.se(t)
    }
    #[inline]
    fn se_mut(&mut self, t: TaskId) -> &mut SchedEntity {
        if t.0 & hier::GROUP_SE != 0 {
            &mut self.gents[(t.0 & !hier::GROUP_SE) as usize]
        } else {
            &mut self.ents[t.idx()]
        }
    }
    #[inline]
    fn delta_fair(&self, delta: u64, t: TaskId) -> u64 {
        calc_delta_fair(delta, self.se(t).h_weight, self.p.behavior.calc_delta)
    }

    /// The running entity if it is still queued (`curr && curr->on_rq`).
    #[inline]
    fn curr_on_rq(&self) -> Option<TaskId> {
        self.cfs.curr.filter(|&c| self.se(c).on_rq)
    }

    /// `resched_curr_lazy()` (core.c v7.3.4): the lazy flag only under preempt=lazy, a full
    /// request under every other model and where lazy preemption does not exist.
    fn resched_curr_lazy(&mut self) {
        let r = if self.p.lazy_resched { Resched::Lazy } else { Resched::Full };
        self.resched = self.resched.max(r);
    }
    /// `resched_curr()` (core.c v7.3.4).
    fn resched_curr(&mut self) {
        self.resched = Resched::Full;
    }

    // ---- task groups (fair/group.rs) ------------------------------------------------------

    /// The group runqueues' share of an enqueue or dequeue of `t`: its queued and runnable
    /// state went from `before` to `after` (`(on_rq, runnable)`). Root-group tasks have none.
    fn group_account(&mut self, t: TaskId, before: (bool, bool), after: (bool, bool)) {
        let se = self.se(t);
        let (g, w, idle) = (se.group, se.load_weight, se.policy == Policy::Idle);
        if g == 0 || before == after {
            return;
        }
        if let Some((groups, cpu)) = self.groups.as_mut() {
            let d = |a: bool, b: bool| i32::from(b) - i32::from(a);
            groups.account(*cpu, g, w, d(before.0, after.0), d(before.1, after.1), idle);
        }
    }

    /// `se->h_load.weight` of `t` as the group runqueues stand now (`__calc_prop_weight()`).
    fn group_h_weight(&self, t: TaskId) -> Option<u64> {
        let se = self.se(t);
        let (groups, cpu) = self.groups.as_ref()?;
        // ≤7.2's levels weigh every entity with its own weight inside its group.
        (se.group != 0 && !groups.hier).then(|| groups.h_weight(*cpu, se.group, se.load_weight))
    }

    /// Refreshes the flat effective weight of a group task (7.3 `reweight_eevdf()` at enqueue,
    /// `set_next_task_fair()` and the tick).
    fn refresh_h_weight(&mut self, t: TaskId) {
        if let Some(h) = self.group_h_weight(t) {
            self.reweight_h(t, h);
        }
    }

    /// `task_tick_fair()`'s group part (fair.c v7.3.4): `update_cfs_group()` for the running
    /// task's levels (`entity_tick()`), then its effective weight.
    pub fn tick_groups(&mut self) {
        if self.hier() {
            return;
        }
        let Some(c) = self.cfs.curr.filter(|&c| self.se(c).on_rq && self.se(c).group != 0) else { return };
        let g = self.se(c).group;
        if let Some((groups, cpu)) = self.groups.as_mut() {
            groups.update_chain(*cpu, g);
        }
        self.refresh_h_weight(c);
    }

    // ---- PELT hooks (spec §5.7; the call sites of fair.c v7.3.4) ----------------------------

    /// The runqueue as PELT sees it during the interval that ends now.
    fn pelt_rq(&self) -> RqState {
        RqState {
            load_weight_down: scale_load_down(self.cfs.load_weight),
            h_nr_runnable: self.cfs.h_nr_runnable,
            running: self.cfs.curr.is_some(),
        }
    }

    /// `update_load_avg(cfs_rq, se, flags)` (fair.c v7.3.4) for task `t` with its state so far.
    fn pelt_update(&mut self, t: TaskId, on_rq: bool, runnable: bool, flags: u32) {
        debug_assert_eq!(self.lvl, 0, "PELT runs on the root runqueue");
        let rq = self.pelt_rq();
        let view = self.groups.is_some().then(|| self.root_view());
        let running = if self.hier() { self.curr_task() == Some(t) } else { self.cfs.curr == Some(t) };
        let se = &mut self.ents[t.idx()];
        let unattached = se.pelt.avg.last_update_time == 0;
        let state = SeState { weight_down: scale_load_down(se.load_weight), on_rq, runnable, running };
        let now = pelt::pelt_clock(self.now);
        self.cfs.pelt.update_load_avg(now, rq, &mut se.pelt, state, flags);
        if let (Some((groups, cpu)), Some(view)) = (self.groups.as_mut(), view) {
            let attach = unattached && flags & pelt::DO_ATTACH != 0;
            let detach = !attach && flags & pelt::DO_DETACH != 0;
            groups.pelt_task(*cpu, se.group, now, &se.pelt.avg, state.weight_down, attach, detach, &view);
        }
    }

    /// What the task groups' load hierarchy reads from this runqueue (`fair/group_pelt.rs`).
    fn root_view(&self) -> group_pelt::RootView {
        group_pelt::RootView {
            load_weight: self.cfs.load_weight,
            h_nr_runnable: self.cfs.h_nr_runnable,
            curr_group: if self.hier() {
                self.curr_task().map(|c| self.se(c).group)
            } else {
                self.cfs.curr.map(|c| self.se(c).group)
            },
        }
    }

    /// `entity_tick()`'s PELT update of the running task (fair.c v7.3.4).
    pub fn pelt_tick(&mut self) {
        let curr = if self.hier() { self.curr_task() } else { self.cfs.curr };
        if let Some(c) = curr
            && self.se(c).on_rq
        {
            let runnable = !self.se(c).sched_delayed;
            self.pelt_update(c, true, runnable, pelt::UPDATE_TG);
        }
    }

    /// `update_cfs_rq_load_avg()` alone: the blocked-load update of load balancing.
    /// With task groups, `__update_blocked_fair()` over the load hierarchy too; returns
    /// whether any of its levels still has blocked load (`None` without groups).
    pub fn pelt_update_blocked(&mut self) -> Option<bool> {
        let rq = self.pelt_rq();
        let now = pelt::pelt_clock(self.now);
        self.cfs.pelt.update_cfs_rq_load_avg(now, rq);
        let view = self.root_view();
        let (groups, cpu) = self.groups.as_mut()?;
        Some(groups.update_blocked(*cpu, now, &view))
    }

    // ---- avg_vruntime bookkeeping (§3.2) ----------------------------------------------------

    /// `avg_vruntime_weight()` (fair.c v7.3.4; `scale_load_down` before 7.1).
    #[inline]
    fn avg_w(&self, t: TaskId) -> u64 {
        let w = self.se(t).h_weight;
        if self.p.behavior.avg_full_weight { w } else { scale_load_down(w) }
    }
    /// `entity_key()` (fair.c v7.3.4).
    #[inline]
    fn key(&self, v: u64) -> i64 {
        v.wrapping_sub(self.cfs.zero_vruntime) as i64
    }
    /// `sum_w_vruntime_add()` (fair.c v7.3.4).
    fn sum_add(&mut self, t: TaskId) {
        let w = self.avg_w(t);
        let k = self.key(self.se(t).vruntime);
        self.cfs.sum_w_vruntime = self.cfs.sum_w_vruntime.wrapping_add(k.wrapping_mul(w as i64));
        self.cfs.sum_weight += w;
    }
    /// `sum_w_vruntime_sub()` (fair.c v7.3.4).
    fn sum_sub(&mut self, t: TaskId) {
        let w = self.avg_w(t);
        let k = self.key(self.se(t).vruntime);
        self.cfs.sum_w_vruntime = self.cfs.sum_w_vruntime.wrapping_sub(k.wrapping_mul(w as i64));
        self.cfs.sum_weight -= w;
    }
    /// `update_zero_vruntime()` (fair.c v7.3.4).
    fn move_v0(&mut self, delta: i64) {
        self.cfs.sum_w_vruntime =
            self.cfs.sum_w_vruntime.wrapping_sub((self.cfs.sum_weight as i64).wrapping_mul(delta));
        self.cfs.zero_vruntime = self.cfs.zero_vruntime.wrapping_add(delta as u64);
    }

    /// `avg_vruntime()` (fair.c v7.3.4): the weighted mean vruntime V; moves v0 to it.
    pub fn avg_vruntime(&mut self) -> u64 {
        let delta = self.avg_vruntime_peek().wrapping_sub(self.cfs.zero_vruntime) as i64;
        self.move_v0(delta);
        self.cfs.zero_vruntime
    }

    /// V as `avg_vruntime()` would compute it, without moving `zero_vruntime` (for traces and
    /// checks, which must not change the run).
    pub fn avg_vruntime_peek(&self) -> u64 {
        let mut weight = self.cfs.sum_weight as i64;
        let mut delta = 0i64;
        let curr = self.curr_on_rq();
        if weight != 0 {
            let mut runtime = self.cfs.sum_w_vruntime;
            if let Some(c) = curr {
                let w = self.avg_w(c) as i64;
                runtime = runtime.wrapping_add(self.key(self.se(c).vruntime).wrapping_mul(w));
                weight += w;
            }
            // Sign flips truncation into floor.
            if runtime < 0 {
                runtime -= weight - 1;
            }
            delta = runtime / weight;
        } else if let Some(c) = curr {
            delta = self.key(self.se(c).vruntime);
        }
        self.cfs.zero_vruntime.wrapping_add(delta as u64)
    }

    /// `vruntime_eligible()` (fair.c v7.3.4): `v <= V`, exactly, in 128-bit arithmetic.
    pub fn vruntime_eligible(&self, v: u64) -> bool {
        let mut avg = self.cfs.sum_w_vruntime as i128;
        let mut load = self.cfs.sum_weight as i128;
        if let Some(c) = self.curr_on_rq() {
            let w = self.avg_w(c) as i128;
            avg += self.key(self.se(c).vruntime) as i128 * w;
            load += w;
        }
        avg >= self.key(v) as i128 * load
    }
    /// `entity_eligible()` (fair.c v7.3.4).
    pub fn entity_eligible(&self, t: TaskId) -> bool {
        self.vruntime_eligible(self.se(t).vruntime)
    }

    // ---- slices, lag (§3.4, §3.6) ------------------------------------------------------------

    /// `cfs_rq_min_slice()` (fair.c v7.3.4).
    pub fn min_slice(&self) -> u64 {
        let c = self.curr_on_rq().map_or(u64::MAX, |c| self.se(c).slice);
        c.min(self.cfs.timeline.min_slice().unwrap_or(u64::MAX))
    }
    /// `cfs_rq_max_slice()` (fair.c v7.3.4).
    pub fn max_slice(&self) -> u64 {
        let c = self.curr_on_rq().map_or(0, |c| self.se(c).slice);
        c.max(self.cfs.timeline.max_slice().unwrap_or(0))
    }

    /// `entity_lag()` (fair.c v7.3.4; the 6.1x clamp with `LagClamp::TwiceSlice`).
    pub fn entity_lag(&self, t: TaskId, avruntime: u64) -> i64 {
        let span = match self.p.behavior.lag_clamp {
            LagClamp::MaxSlicePlusTick => self.max_slice() + self.p.tick_nsec,
            LagClamp::TwiceSlice => (2 * self.se(t).slice).max(self.p.tick_nsec),
        };
        let limit = self.delta_fair(span, t) as i64;
        let vlag = avruntime.wrapping_sub(self.se(t).vruntime) as i64;
        vlag.clamp(-limit, limit)
    }

    /// `update_entity_lag()` (fair.c v7.3.4): true iff the saved lag moved the entity.
    pub fn update_entity_lag(&mut self, t: TaskId) -> bool {
        let avruntime = self.avg_vruntime();
        let mut vlag = self.entity_lag(t, avruntime);
        let se = self.se(t);
        if se.sched_delayed && self.p.behavior.delayed_lag_monotone {
            // The lag of a delayed entity may only move towards zero (it was negative).
            vlag = vlag.max(se.vlag);
            if self.p.feat(Feature::DELAY_ZERO) {
                vlag = vlag.min(0);
            }
        }
        let se = self.se_mut(t);
        se.vlag = vlag;
        avruntime.wrapping_sub(vlag as u64) != se.vruntime
    }

    /// `ineligible_vruntime()` (fair.c v7.3.4): where curr stops being eligible, others frozen.
    fn ineligible_vruntime(&self) -> u64 {
        let weight = self.cfs.sum_weight as i64;
        let mut delta = 0;
        if weight != 0 {
            let mut runtime = self.cfs.sum_w_vruntime;
            if runtime < 0 {
                runtime -= weight - 1;
            }
            delta = runtime / weight;
        }
        self.cfs.zero_vruntime.wrapping_add(delta as u64).wrapping_add(1)
    }

    /// `set_protect_slice()` (fair.c v7.3.4; 6.17 and ≤6.16 forms by `ProtectVariant`).
    pub fn set_protect_slice(&mut self, t: TaskId) {
        let se = *self.se(t);
        let vprot = match self.p.behavior.protect {
            // ≤6.16 (6.12.117 l.891): the marker `vlag = deadline` is set at every pick whatever
            // RUN_TO_PARITY says; it protects the whole request until the deadline moves or a
            // cancel. Here vprot = deadline stands for it: `vruntime < deadline` holds exactly
            // while `vlag == deadline` would (update_deadline moves both at once).
            ProtectVariant::V6_16 => se.deadline,
            variant => {
                let mut slice =
                    if self.p.feat(Feature::RUN_TO_PARITY) { self.min_slice() } else { self.p.normalized_base_slice };
                slice = slice.min(se.slice);
                let mut vprot = se.deadline;
                if slice != se.slice {
                    let bound = if variant == ProtectVariant::V7_3 && self.p.feat(Feature::PREEMPT_SHORT) {
                        self.ineligible_vruntime()
                    } else {
                        se.vruntime.wrapping_add(self.delta_fair(slice, t))
                    };
                    vprot = vmin(vprot, bound);
                }
                vprot
            }
        };
        self.se_mut(t).vprot = vprot;
    }

    /// `update_protect_slice()` (fair.c v7.3.4; 6.17–7.2 form without the lag credit; absent
    /// before 6.17).
    pub fn update_protect_slice(&mut self, t: TaskId) {
        let v = match self.p.behavior.protect {
            ProtectVariant::V6_16 => return,
            ProtectVariant::V6_17 => self.se(t).vruntime,
            ProtectVariant::V7_3 => {
                let avg = self.avg_vruntime();
                vmin(self.se(t).vruntime, avg)
            }
        };
        let bound = v.wrapping_add(self.delta_fair(self.min_slice(), t));
        let se = self.se_mut(t);
        se.vprot = vmin(se.vprot, bound);
    }

    /// `protect_slice()` (fair.c v7.3.4).
    #[inline]
    pub fn protect_slice(&self, t: TaskId) -> bool {
        let se = self.se(t);
        before(se.vruntime, se.vprot)
    }

    /// `cancel_protect_slice()` (fair.c v7.3.4).
    pub fn cancel_protect_slice(&mut self, t: TaskId) {
        if self.protect_slice(t) {
            let se = self.se_mut(t);
            se.vprot = se.vruntime;
        }
    }

    // ---- the tree (§3.5) ---------------------------------------------------------------------

    /// `__enqueue_entity()` (fair.c v7.3.4).
    fn enqueue_tree(&mut self, t: TaskId) {
        self.sum_add(t);
        let se = self.se(t);
        let key = NodeKey { id: t.0, deadline: se.deadline, vruntime: se.vruntime, slice: se.slice };
        let node = self.cfs.timeline.insert(key);
        let se = self.se_mut(t);
        debug_assert!(!se.in_tree);
        se.node = node;
        se.in_tree = true;
    }

    /// `__dequeue_entity()` (fair.c v7.3.4).
    fn dequeue_tree(&mut self, t: TaskId) {
        let se = self.se_mut(t);
        debug_assert!(se.in_tree);
        se.in_tree = false;
        let node = se.node;
        let key = self.cfs.timeline.remove(node);
        debug_assert_eq!(key.id, t.0);
        self.sum_sub(t);
    }

    /// `pick_eevdf()` (fair.c v7.3.4): the earliest eligible virtual deadline.
    pub fn pick_eevdf(&self, protect: bool) -> Option<TaskId> {
        let left = self.cfs.timeline.leftmost().map(|k| TaskId(k.id));
        if self.cfs.nr_queued == 1 {
            return self.curr_on_rq().or(left);
        }
        let buddy_in_pick = self.p.behavior.wakeup_preempt != WakeupPreemptVariant::V6_18;
        if buddy_in_pick
            && self.p.feat(Feature::PICK_BUDDY)
            && (protect || !self.p.behavior.buddy_pick_needs_protect)
            && let Some(n) = self.cfs.next
            && self.entity_eligible(n)
        {
            debug_assert!(!self.se(n).sched_delayed);
            return Some(n);
        }
        let mut curr = self.cfs.curr.filter(|&c| self.se(c).on_rq && self.entity_eligible(c));
        if let Some(c) = curr {
            let protected = match self.p.behavior.protect {
                ProtectVariant::V6_16 => self.p.feat(Feature::RUN_TO_PARITY) && self.protect_slice(c),
                _ => protect && self.protect_slice(c),
            };
            if protected {
                return Some(c);
            }
        }
        let best = self.cfs.timeline.pick_eligible(|v| self.vruntime_eligible(v)).map(|k| TaskId(k.id));
        match (best, curr.take()) {
            (None, c) => c,
            (Some(b), Some(c)) if before(self.se(c).deadline, self.se(b).deadline) => Some(c),
            (b, _) => b,
        }
    }

    /// `pick_next_entity()` (fair.c v7.3.4): the pick, with a picked delayed entity dequeued for
    /// good and the pick retried. ≤6.18 checks the buddy here rather than in `pick_eevdf`.
    pub fn pick_next_entity(&mut self, protect: bool) -> Option<TaskId> {
        loop {
            if self.cfs.nr_queued == 0 {
                return None;
            }
            let mut se = None;
            if self.p.behavior.wakeup_preempt == WakeupPreemptVariant::V6_18 && self.p.feat(Feature::PICK_BUDDY) {
                se = self.cfs.next.filter(|&n| self.entity_eligible(n));
            }
            let se = se.or_else(|| self.pick_eevdf(protect))?;
            if self.se(se).sched_delayed {
                if self.hier() {
                    // A delayed task or group entity leaves for good, possibly taking emptied
                    // levels above with it; the pick goes on at this level.
                    let lvl = self.lvl;
                    self.dequeue_entities_hier(se, deq::SLEEP | deq::DELAYED);
                    self.goto_level(lvl);
                } else {
                    self.dequeue_task_fair(se, deq::SLEEP | deq::DELAYED);
                }
                continue;
            }
            return Some(se);
        }
    }

    // ---- runtime accounting (§3.7) -----------------------------------------------------------

    /// `update_deadline()` (fair.c v7.3.4): a new request once the current one is used up.
    fn update_deadline(&mut self, t: TaskId) -> bool {
        let se = self.se(t);
        if before(se.vruntime, se.deadline) {
            return false;
        }
        if !se.custom_slice {
            self.se_mut(t).slice = self.p.base_slice;
        }
        let vslice = self.delta_fair(self.se(t).slice, t);
        let se = self.se_mut(t);
        se.deadline = se.vruntime.wrapping_add(vslice);
        self.avg_vruntime();
        true
    }

    /// `update_curr()` (fair.c v7.3.4): charge the running task up to now.
    pub fn update_curr(&mut self) {
        let Some(c) = self.cfs.curr else { return };
        let now = self.now;
        let se = self.se_mut(c);
        let delta = now as i64 - se.exec_start as i64;
        if delta <= 0 {
            return;
        }
        se.exec_start = now;
        se.sum_exec_runtime += delta as u64;
        // account_mm_sched() charges tasks, not group entities (≤7.2's levels).
        if c.0 & hier::GROUP_SE == 0 {
            self.cfs.mm_runtime = hier::merge_mm_runtime(self.cfs.mm_runtime, (c, now, delta as u64));
        }
        let vdelta = self.delta_fair(delta as u64, c);
        let se = self.se_mut(c);
        se.vruntime = se.vruntime.wrapping_add(vdelta);
        let resched = self.update_deadline(c);
        if self.cfs.nr_queued == 1 {
            return;
        }
        let preempt = match self.p.behavior.protect {
            ProtectVariant::V6_16 => resched || self.did_preempt_short(c),
            _ => resched || !self.protect_slice(c),
        };
        if preempt {
            self.resched_curr_lazy();
            self.clear_buddies(c);
        }
    }

    /// `did_preempt_short()` (fair.c 6.12.117 l.1180): after a cancelled protection, curr is
    /// rescheduled once it is no longer eligible; an intact marker never reschedules.
    fn did_preempt_short(&self, c: TaskId) -> bool {
        self.p.feat(Feature::PREEMPT_SHORT) && !self.protect_slice(c) && !self.entity_eligible(c)
    }

    /// `do_preempt_short()` (fair.c 6.12.117 l.1191): an eligible wakee with a shorter slice
    /// and an earlier deadline than curr, or curr no longer eligible.
    fn do_preempt_short(&self, pse: TaskId, se: TaskId) -> bool {
        if !self.p.feat(Feature::PREEMPT_SHORT) || self.se(pse).slice >= self.se(se).slice {
            return false;
        }
        if !self.entity_eligible(pse) {
            return false;
        }
        before(self.se(pse).deadline, self.se(se).deadline) || !self.entity_eligible(se)
    }

    // ---- placement, enqueue, dequeue (§3.8 – §3.10) ------------------------------------------

    /// `place_entity()` (fair.c v7.3.4).
    pub fn place_entity(&mut self, t: TaskId, flags: u32) {
        let vruntime = self.avg_vruntime();
        let mut nr_queued = self.cfs.nr_queued;
        if !self.se(t).custom_slice {
            self.se_mut(t).slice = self.p.base_slice;
        }
        let mut vslice = self.delta_fair(self.se(t).slice, t);
        if flags & enq::QUEUED != 0 {
            nr_queued -= 1;
        }
        let mut lag = 0i64;
        let mut update_zero = false;
        let vlag = self.se(t).vlag;
        if self.p.feat(Feature::PLACE_LAG) && nr_queued > 0 && vlag != 0 {
            lag = vlag;
            let mut load = self.cfs.sum_weight as i64;
            if let Some(c) = self.curr_on_rq() {
                load += self.avg_w(c) as i64;
            }
            if load == 0 {
                load = 1;
            }
            let weight = self.avg_w(t) as i64;
            if self.p.behavior.place_lag_split_div {
                lag += lag.wrapping_mul(weight) / load;
            } else {
                lag = lag.wrapping_mul(load + weight) / load;
            }
            if weight > load {
                update_zero = true;
            }
        }
        let se = self.se_mut(t);
        se.vruntime = vruntime.wrapping_sub(lag as u64);
        if update_zero {
            self.move_v0(-lag);
        }
        let (rel, initial) = (self.p.feat(Feature::PLACE_REL_DEADLINE), self.p.feat(Feature::PLACE_DEADLINE_INITIAL));
        let se = self.se_mut(t);
        if rel && se.rel_deadline {
            se.deadline = se.deadline.wrapping_add(se.vruntime);
            se.rel_deadline = false;
            return;
        }
        if initial && flags & enq::INITIAL != 0 {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice);
    }

    /// `enqueue_task_fair()` for a root-group task (fair.c v7.3.4, spec §3.9). Up to 6.19 the
    /// requeue of a delayed task runs before any `update_curr` (6.12.117 l.7039: the return
    /// precedes `enqueue_entity`); 7.2.12 charges curr first inside `requeue_delayed_entity`,
    /// 7.3.4 in `enqueue_task_fair` itself.
    pub fn enqueue_task_fair(&mut self, t: TaskId, flags: u32) {
        if self.hier_task(t) {
            return self.enqueue_task_hier(t, flags);
        }
        if flags & enq::DELAYED == 0 || self.p.behavior.requeue_updates_curr {
            self.update_curr();
        }
        if flags & enq::DELAYED != 0 {
            let pe = self.se(t).pelt;
            self.cfs.pelt.util_est_enqueue(&pe);
            self.pelt_update(t, true, false, 0);
            self.requeue_delayed_entity(t);
            self.group_account(t, (true, false), (true, true));
            return;
        }
        {
            let pe = self.se(t).pelt;
            self.cfs.pelt.util_est_enqueue(&pe);
            let runnable_before = self.se(t).on_rq && !self.se(t).sched_delayed;
            self.pelt_update(t, false, runnable_before, pelt::UPDATE_TG | pelt::DO_ATTACH);
        }
        let is_curr = self.cfs.curr == Some(t);
        if self.groups.is_some() {
            let delayed = self.se(t).sched_delayed;
            self.group_account(t, (false, false), (true, !delayed));
            // 7.3.4 reweights a task being placed afresh, not the running one re-entering.
            if !is_curr {
                self.refresh_h_weight(t);
            }
        }
        if is_curr {
            self.place_entity(t, flags);
        }
        let se = self.se_mut(t);
        debug_assert!(!se.on_rq);
        se.on_rq = true;
        if flags & enq::MIGRATED != 0 {
            se.exec_start = 0;
        }
        let delayed = se.sched_delayed;
        let idle = self.idle_path(t);
        self.cfs.load_weight += self.se(t).load_weight;
        self.cfs.h_nr_queued += 1;
        self.cfs.nr_queued += 1;
        self.cfs.h_nr_idle += u32::from(idle);
        // A non-wakeup enqueue of a delayed entity (migration) keeps it non-runnable.
        if flags & enq::WAKEUP != 0 || !delayed {
            self.cfs.h_nr_runnable += 1;
        }
        if !is_curr {
            self.place_entity(t, flags | enq::QUEUED);
            self.enqueue_tree(t);
        }
    }

    /// `dequeue_entities()`/`dequeue_entity()` for a root task (fair.c v7.3.4, spec §3.10).
    /// Returns false when DELAY_DEQUEUE keeps the sleeping task queued.
    pub fn dequeue_task_fair(&mut self, t: TaskId, flags: u32) -> bool {
        if self.hier_task(t) {
            return self.dequeue_entities_hier(t, flags);
        }
        let before = (true, !self.se(t).sched_delayed);
        let gone = self.dequeue_task_fair_inner(t, flags);
        let se = self.se(t);
        let after = (se.on_rq, se.on_rq && !se.sched_delayed);
        self.group_account(t, before, after);
        gone
    }

    /// DELAY_DEQUEUE in `dequeue_entity()` (fair.c v7.3.4 / 6.12.117): a task going to sleep
    /// (not a delayed task's final dequeue, not a special one) while still ineligible stays
    /// queued.
    pub(super) fn delays_dequeue(&self, t: TaskId, flags: u32) -> bool {
        let sleep = flags & deq::SLEEP != 0 && flags & (deq::SPECIAL | deq::DELAYED) == 0;
        sleep && self.p.feat(Feature::DELAY_DEQUEUE) && !self.entity_eligible(t)
    }

    /// `set_delayed()` with the dequeue's PELT and util_est updates, on the root runqueue:
    /// the task stays queued but is no longer runnable.
    pub(super) fn set_delayed(&mut self, t: TaskId) {
        debug_assert!(!self.se(t).sched_delayed);
        let pe = self.se(t).pelt;
        self.cfs.pelt.util_est_dequeue(&pe);
        self.pelt_update(t, true, true, pelt::UPDATE_UTIL_EST);
        self.se_mut(t).sched_delayed = true;
        self.cfs.h_nr_runnable -= 1;
    }

    fn dequeue_task_fair_inner(&mut self, t: TaskId, flags: u32) -> bool {
        self.clear_buddies(t);
        self.update_curr();
        self.update_entity_lag(t);
        if self.delays_dequeue(t, flags) {
            self.set_delayed(t);
            return false;
        }
        {
            let migrating = if flags & deq::MIGRATING != 0 { pelt::DO_DETACH } else { 0 };
            if self.se(t).sched_delayed {
                self.pelt_update(t, true, false, pelt::UPDATE_TG | migrating);
            } else {
                let pe = self.se(t).pelt;
                self.cfs.pelt.util_est_dequeue(&pe);
                let est = if flags & deq::SLEEP != 0 { pelt::UPDATE_UTIL_EST } else { 0 };
                self.pelt_update(t, true, true, pelt::UPDATE_TG | est | migrating);
            }
        }
        let se = *self.se(t);
        let idle = self.idle_path(t);
        self.cfs.load_weight -= se.load_weight;
        self.cfs.h_nr_queued -= 1;
        self.cfs.nr_queued -= 1;
        self.cfs.h_nr_idle -= u32::from(idle);
        // The kernel subtracts here for SLEEP/DELAYED/non-delayed dequeues and adds one back
        // below when a delayed task leaves for good (clear_delayed); the net effect is taken
        // at once so the unsigned count never wraps.
        if flags & deq::DELAYED == 0 && (flags & deq::SLEEP != 0 || !se.sched_delayed) {
            self.cfs.h_nr_runnable -= 1;
        }
        let rel = self.p.feat(Feature::PLACE_REL_DEADLINE);
        let se = self.se_mut(t);
        se.on_rq = false;
        if flags & deq::SLEEP == 0 && rel {
            se.deadline = se.deadline.wrapping_sub(se.vruntime);
            se.rel_deadline = true;
        }
        if self.cfs.curr != Some(t) {
            self.dequeue_tree(t);
        }
        if flags & deq::DELAYED != 0 {
            // finish_delayed_dequeue_entity() (fair.c 6.12.117 l.5541, 6.18.44 l.5441, 6.19.9):
            // a delayed task leaving for good drops a positive lag under DELAY_ZERO. 7.x clips
            // it in update_entity_lag() above instead (`delayed_lag_monotone`).
            let zero = !self.p.behavior.delayed_lag_monotone && self.p.feat(Feature::DELAY_ZERO);
            let se = self.se_mut(t);
            se.sched_delayed = false;
            if zero && se.vlag > 0 {
                se.vlag = 0;
            }
        }
        true
    }

    /// `requeue_delayed_entity()` (fair.c v7.3.4): the wakeup of a still-queued delayed task.
    fn requeue_delayed_entity(&mut self, t: TaskId) {
        self.requeue_delayed_core(t);
        self.cfs.h_nr_runnable += 1;
    }

    /// `requeue_delayed_entity()` on the current runqueue, without `clear_delayed()`'s counts
    /// (fair.c 6.12.117 l.6984 / 7.2.12 l.7995 / 7.3.4): the caller counts the task runnable
    /// again at every level (none for a group entity).
    pub(super) fn requeue_delayed_core(&mut self, t: TaskId) {
        debug_assert!(self.se(t).sched_delayed && self.se(t).on_rq);
        let replace = if self.p.behavior.delayed_lag_monotone {
            self.update_entity_lag(t)
        } else {
            // 6.12.117 l.6996: with DELAY_ZERO the fresh lag is saved, and a positive one is
            // dropped and the entity re-placed at V.
            if self.p.feat(Feature::DELAY_ZERO) {
                let avruntime = self.avg_vruntime();
                let lag = self.entity_lag(t, avruntime);
                self.se_mut(t).vlag = if lag > 0 { 0 } else { lag };
                lag > 0
            } else {
                false
            }
        };
        if replace {
            let is_curr = self.cfs.curr == Some(t);
            self.cfs.nr_queued -= 1;
            if !is_curr {
                self.dequeue_tree(t);
            }
            self.place_entity(t, 0);
            if !is_curr {
                self.enqueue_tree(t);
            }
            self.cfs.nr_queued += 1;
        }
        self.se_mut(t).sched_delayed = false;
    }

    // ---- buddies ------------------------------------------------------------------------------

    /// `set_next_buddy()` (fair.c v7.3.4).
    pub fn set_next_buddy(&mut self, t: TaskId) {
        if self.hier() {
            return self.set_next_buddy_hier(t);
        }
        let se = self.se(t);
        if !se.on_rq || se.sched_delayed || se.policy == Policy::Idle {
            return;
        }
        self.cfs.next = Some(t);
    }
    /// `clear_buddies()` (fair.c v7.3.4).
    pub fn clear_buddies(&mut self, t: TaskId) {
        if self.cfs.next == Some(t) {
            self.cfs.next = None;
            if self.hier() {
                self.clear_buddies_up(t);
            }
        }
    }
    /// `set_preempt_buddy()` (fair.c v7.3.4): keep an existing buddy with an earlier deadline.
    fn set_preempt_buddy(&mut self, pse: TaskId) -> bool {
        if let Some(n) = self.cfs.next
            && before(self.se(n).deadline, self.se(pse).deadline)
        {
            return false;
        }
        self.set_next_buddy(pse);
        true
    }
    /// `set_short_buddy()` (fair.c v7.3.4).
    fn set_short_buddy(&mut self, pse: TaskId) {
        if let Some(n) = self.cfs.next
            && self.se(n).slice < self.se(pse).slice
        {
            return;
        }
        self.set_next_buddy(pse);
    }

    // ---- context switch (§3.11) --------------------------------------------------------------

    /// `put_prev_task_fair()` (fair.c v7.3.4): curr goes back into the tree if still queued.
    ///
    /// `next` is the task picked to run next, if a fair one: ≤7.2's hierarchy then leaves the
    /// levels the two share alone (`put_prev_task_fair()` 7.2.12 / `pick_next_task_fair()`
    /// 6.12.117).
    pub fn put_prev_task_fair(&mut self, t: TaskId, next: Option<TaskId>) {
        if self.hier_task(t) {
            return self.put_prev_task_hier(t, next);
        }
        debug_assert_eq!(self.cfs.curr, Some(t));
        if self.se(t).on_rq {
            self.update_curr();
            let runnable = !self.se(t).sched_delayed;
            self.pelt_update(t, true, runnable, 0);
        }
        self.cfs.curr = None;
        if self.se(t).on_rq {
            self.enqueue_tree(t);
        }
    }

    /// `set_next_task_fair()` (fair.c v7.3.4). `first` is false for the save/restore bracket,
    /// which resets the runtime snapshot but keeps `vprot` and arms no hrtick.
    pub fn set_next_task_fair(&mut self, t: TaskId, first: bool) {
        if self.hier_task(t) {
            return self.set_next_task_hier(t, first);
        }
        self.clear_buddies(t);
        if self.se(t).on_rq {
            self.dequeue_tree(t);
            let runnable = !self.se(t).sched_delayed;
            self.pelt_update(t, true, runnable, pelt::UPDATE_TG);
        }
        let now = self.now;
        let se = self.se_mut(t);
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
        self.cfs.curr = Some(t);
        if self.se(t).on_rq {
            self.refresh_h_weight(t);
        }
        // ≤6.16 set_next_entity() has no `first`: the save/restore bracket re-arms the marker too.
        let arm = first || self.p.behavior.protect == ProtectVariant::V6_16;
        if arm && self.se(t).on_rq {
            self.set_protect_slice(t);
        }
    }

    /// `hrtick_start_fair()` (fair.c v7.3.4): the delay to the end of curr's request, if an
    /// hrtick should be armed; a request already overrun asks for an immediate reschedule.
    pub fn hrtick_delay(&mut self, t: TaskId) -> Option<u64> {
        if self.cfs.h_nr_queued <= 1 {
            return None;
        }
        let se = self.se(t);
        let vdelta = se.deadline.wrapping_sub(se.vruntime);
        if (vdelta as i64) < 0 {
            if self.curr_task() == Some(t) {
                self.resched_curr();
            }
            return None;
        }
        let delta = weight::mul_div(se.h_weight, vdelta, NICE_0_LOAD);
        // hrtick_start(): never closer than 10 µs.
        Some(delta.max(10_000))
    }

    // ---- wakeup preemption (§3.13) -----------------------------------------------------------

    /// `wakeup_preempt_fair()` (fair.c v7.3.4; 6.19–7.2 and ≤6.18 forms by
    /// `WakeupPreemptVariant`): should the woken `pse` preempt `se`, the running task?
    ///
    /// `need_resched_full` is whether the running task already has a full reschedule pending;
    /// `in_task` is false for wakeups from interrupt context (timers, softirq).
    pub fn wakeup_preempt_fair(
        &mut self,
        pse: TaskId,
        wake_flags: u32,
        need_resched_full: bool,
        in_task: bool,
    ) -> WakeupVerdict {
        if self.hier() {
            return self.wakeup_preempt_hier(pse, wake_flags, need_resched_full, in_task);
        }
        let Some(se) = self.cfs.curr else {
            return self.verdict(true, WakeupReason::IdleCurr);
        };
        if se == pse {
            return self.verdict(false, WakeupReason::SameEntity);
        }
        self.wakeup_preempt_variant(se, pse, pse, wake_flags, need_resched_full, in_task)
    }

    /// The version's wakeup-preemption check between `se` and `pse`, entities of the current
    /// runqueue (the tasks themselves, or ≤7.2's matching entities); `p` is the woken task.
    fn wakeup_preempt_variant(
        &mut self,
        se: TaskId,
        pse: TaskId,
        p: TaskId,
        wake_flags: u32,
        need_resched_full: bool,
        in_task: bool,
    ) -> WakeupVerdict {
        match self.p.behavior.wakeup_preempt {
            WakeupPreemptVariant::V7_3 => self.wakeup_preempt_v7_3(se, pse, wake_flags, need_resched_full, in_task),
            WakeupPreemptVariant::V7_2 => self.wakeup_preempt_v7_2(se, pse, p, wake_flags, need_resched_full, in_task),
            WakeupPreemptVariant::V6_18 => self.wakeup_preempt_v6_18(se, pse, p, wake_flags, need_resched_full),
        }
    }

    fn verdict(&self, preempt: bool, reason: WakeupReason) -> WakeupVerdict {
        WakeupVerdict { preempt, reason }
    }

    fn wakeup_preempt_v7_3(
        &mut self,
        se: TaskId,
        pse: TaskId,
        wake_flags: u32,
        need_resched_full: bool,
        in_task: bool,
    ) -> WakeupVerdict {
        if !self.p.feat(Feature::PREEMPT_SHORT) && need_resched_full {
            return self.verdict(false, WakeupReason::NeedReschedPending);
        }
        if !self.p.feat(Feature::WAKEUP_PREEMPTION) {
            return self.verdict(false, WakeupReason::NoWakeupPreemption);
        }
        let mut action = Action::Pick;
        let cse_idle = self.se(se).policy == Policy::Idle;
        let pse_idle = self.se(pse).policy == Policy::Idle;
        if cse_idle && !pse_idle {
            return self.preempt_v7_3(se, pse, action, WakeupReason::IdleCurr);
        }
        self.update_curr();
        let update_reason = if cse_idle != pse_idle {
            Some(WakeupReason::IdleMismatch)
        } else if self.se(pse).policy != Policy::Normal {
            Some(WakeupReason::NotNormalPolicy)
        } else if self.se(pse).sched_delayed {
            Some(WakeupReason::WakeeDelayed)
        } else {
            None
        };
        if let Some(reason) = update_reason {
            return self.update_v7_3(se, reason);
        }
        if self.p.feat(Feature::PREEMPT_SHORT) && self.se(pse).slice < self.se(se).slice {
            action = Action::Short;
        } else {
            if wake_flags & wf::FORK != 0 {
                return self.update_v7_3(se, WakeupReason::Fork);
            }
            if self.p.behavior.force_wakeup_preempt && in_task && !self.entity_eligible(se) {
                return self.preempt_v7_3(se, pse, Action::Resched, WakeupReason::ForcedWakerIneligible);
            }
            if self.p.feat(Feature::NEXT_BUDDY) && self.set_preempt_buddy(pse) && wake_flags & wf::SYNC != 0 {
                action = self.preempt_sync(wake_flags, pse, se);
            }
            match action {
                Action::None => return self.verdict(false, WakeupReason::PreemptSyncNone),
                Action::Resched => return self.preempt_v7_3(se, pse, action, WakeupReason::PreemptSyncResched),
                _ => {}
            }
        }
        if self.cfs.nr_queued > 0 && self.pick_next_entity(action != Action::Short) == Some(pse) {
            return self.preempt_v7_3(se, pse, action, WakeupReason::PickedWakee);
        }
        if action == Action::Short && self.entity_eligible(pse) {
            return self.preempt_v7_3(se, pse, action, WakeupReason::ShortEligible);
        }
        self.update_v7_3(se, WakeupReason::PickedOther)
    }

    fn update_v7_3(&mut self, se: TaskId, reason: WakeupReason) -> WakeupVerdict {
        if self.p.feat(Feature::RUN_TO_PARITY) {
            self.update_protect_slice(se);
        }
        self.verdict(false, reason)
    }

    fn preempt_v7_3(&mut self, se: TaskId, pse: TaskId, action: Action, reason: WakeupReason) -> WakeupVerdict {
        self.cancel_protect_slice(se);
        if action == Action::Short {
            self.set_short_buddy(pse);
        }
        self.resched_curr_lazy();
        self.verdict(true, reason)
    }

    /// 6.19 – 7.2 (spec §3.13.4): `check_preempt_wakeup_fair()` of 6.19.0 and of 6.18.33+
    /// (the NEXT_BUDDY reimplementation's backport; 6.18.44 l.8869), `wakeup_preempt_fair()` of
    /// 7.2.12 (l.9997). Their differences are `Behavior::wakeup_pick_drains_delayed`,
    /// `buddy_pick_needs_protect` and `short_preempt_clears_buddies`.
    #[allow(clippy::too_many_arguments, reason = "the kernel function's inputs")]
    fn wakeup_preempt_v7_2(
        &mut self,
        se: TaskId,
        pse: TaskId,
        p: TaskId,
        wake_flags: u32,
        need_resched_full: bool,
        in_task: bool,
    ) -> WakeupVerdict {
        if need_resched_full {
            return self.verdict(false, WakeupReason::NeedReschedPending);
        }
        if !self.p.feat(Feature::WAKEUP_PREEMPTION) {
            return self.verdict(false, WakeupReason::NoWakeupPreemption);
        }
        let cse_idle = self.se_is_idle(se);
        let pse_idle = self.se_is_idle(pse);
        if cse_idle && !pse_idle {
            return self.preempt_v7_2(se, Action::Short, WakeupReason::IdleCurr);
        }
        if cse_idle != pse_idle {
            return self.verdict(false, WakeupReason::IdleMismatch);
        }
        if self.se(p).policy != Policy::Normal {
            return self.verdict(false, WakeupReason::NotNormalPolicy);
        }
        self.update_curr();
        let mut action = Action::Pick;
        if self.p.feat(Feature::PREEMPT_SHORT) && self.se(pse).slice < self.se(se).slice {
            action = Action::Short;
        } else {
            if wake_flags & wf::FORK != 0 {
                return self.verdict(false, WakeupReason::Fork);
            }
            if self.se(pse).sched_delayed {
                return self.verdict(false, WakeupReason::WakeeDelayed);
            }
            if self.p.behavior.force_wakeup_preempt && in_task && !self.entity_eligible(se) {
                return self.preempt_v7_2(se, Action::Resched, WakeupReason::ForcedWakerIneligible);
            }
            if self.p.feat(Feature::NEXT_BUDDY) && self.set_preempt_buddy(pse) && wake_flags & wf::SYNC != 0 {
                action = self.preempt_sync(wake_flags, pse, se);
            }
            match action {
                Action::None => return self.verdict(false, WakeupReason::PreemptSyncNone),
                Action::Resched => return self.preempt_v7_2(se, action, WakeupReason::PreemptSyncResched),
                _ => {}
            }
        }
        let protect = action != Action::Short;
        let picked = if self.p.behavior.wakeup_pick_drains_delayed {
            if self.cfs.nr_queued > 0 { self.pick_next_entity(protect) } else { None }
        } else {
            // 6.19: `__pick_eevdf(cfs_rq, protect) == pse`, a delayed pick left queued.
            self.pick_eevdf(protect)
        };
        if picked == Some(pse) {
            return self.preempt_v7_2(se, action, WakeupReason::PickedWakee);
        }
        if self.p.feat(Feature::RUN_TO_PARITY) {
            self.update_protect_slice(se);
        }
        self.verdict(false, WakeupReason::PickedOther)
    }

    fn preempt_v7_2(&mut self, se: TaskId, action: Action, reason: WakeupReason) -> WakeupVerdict {
        if action == Action::Short {
            self.cancel_protect_slice(se);
            if self.p.behavior.short_preempt_clears_buddies {
                self.clear_buddies(se);
            }
        }
        self.resched_curr_lazy();
        self.verdict(true, reason)
    }

    /// ≤ 6.18 (spec §6.1 "OFF"): NEXT_BUDDY nominates unconditionally and never decides.
    fn wakeup_preempt_v6_18(
        &mut self,
        se: TaskId,
        pse: TaskId,
        p: TaskId,
        wake_flags: u32,
        need_resched_full: bool,
    ) -> WakeupVerdict {
        // 6.12.117 l.8885: the buddy is the woken task's entity, set at every level, before
        // find_matching_se() (`hier.rs` has done that walk; `p` is then not `pse`).
        if self.p.feat(Feature::NEXT_BUDDY) && wake_flags & wf::FORK == 0 && !self.se(p).sched_delayed && p == pse {
            self.set_next_buddy(pse);
        }
        if need_resched_full {
            return self.verdict(false, WakeupReason::NeedReschedPending);
        }
        if !self.p.feat(Feature::WAKEUP_PREEMPTION) {
            return self.verdict(false, WakeupReason::NoWakeupPreemption);
        }
        let cse_idle = self.se_is_idle(se);
        let pse_idle = self.se_is_idle(pse);
        if cse_idle && !pse_idle {
            self.cancel_protect_slice(se);
            self.resched_curr_lazy();
            return self.verdict(true, WakeupReason::IdleCurr);
        }
        if cse_idle != pse_idle {
            return self.verdict(false, WakeupReason::IdleMismatch);
        }
        if self.se(p).policy != Policy::Normal {
            return self.verdict(false, WakeupReason::NotNormalPolicy);
        }
        self.update_curr();
        if self.p.behavior.protect == ProtectVariant::V6_16 {
            // 6.12.117 l.8941: the protection is lost whenever do_preempt_short() holds, even
            // if the pick then chooses a third task; did_preempt_short() acts on it later.
            if self.do_preempt_short(pse, se) {
                self.cancel_protect_slice(se);
            }
            if self.pick_eevdf(true) == Some(pse) {
                self.resched_curr_lazy();
                return self.verdict(true, WakeupReason::PickedWakee);
            }
            return self.verdict(false, WakeupReason::PickedOther);
        }
        let short = self.p.feat(Feature::PREEMPT_SHORT) && self.se(pse).slice < self.se(se).slice;
        if self.pick_eevdf(!short) == Some(pse) {
            if short {
                self.cancel_protect_slice(se);
            }
            self.resched_curr_lazy();
            return self.verdict(true, WakeupReason::PickedWakee);
        }
        if self.p.feat(Feature::RUN_TO_PARITY) && short {
            self.update_protect_slice(se);
        }
        self.verdict(false, WakeupReason::PickedOther)
    }

    /// `preempt_sync()` (fair.c v7.3.4), or with the runtime fix of spec §6.3.
    fn preempt_sync(&self, wake_flags: u32, pse: TaskId, se: TaskId) -> Action {
        let mut threshold = self.p.migration_cost;
        let s = self.se(se);
        let delta = if self.p.behavior.preempt_sync_runtime_fix {
            s.sum_exec_runtime - s.prev_sum_exec_runtime
        } else {
            // Always 0 here: update_curr() has just set exec_start to the clock.
            (self.now as i64 - s.exec_start as i64).max(0) as u64
        };
        if wake_flags & wf::RQ_SELECTED != 0 {
            threshold >>= 2;
        }
        if before(self.se(pse).deadline, s.deadline) && delta >= threshold { Action::Resched } else { Action::None }
    }

    // ---- yield and reweight (§3.16, §3.17) ---------------------------------------------------

    /// `yield_task_fair()` (fair.c v7.3.4): an eligible task forfeits the rest of its request.
    pub fn yield_task_fair(&mut self, t: TaskId) {
        if self.cfs.h_nr_queued == 1 {
            return;
        }
        if self.hier_task(t) {
            // task_cfs_rq(curr): the task's own level.
            let g = self.se(t).group;
            self.goto_level(g);
            self.yield_entity(t);
            self.goto_level(0);
            return;
        }
        self.yield_entity(t);
    }

    /// The body of `yield_task_fair()` on the task's runqueue.
    fn yield_entity(&mut self, t: TaskId) {
        self.clear_buddies(t);
        self.update_curr();
        if !self.p.behavior.yield_forfeits_vruntime {
            // Before 79104becf42b (upstream 6.12.0 - 6.18.0): the deadline moves one slice on.
            let vslice = self.delta_fair(self.se(t).slice, t);
            let se = self.se_mut(t);
            se.deadline = se.deadline.wrapping_add(vslice);
            return;
        }
        if self.entity_eligible(t) {
            let se = self.se_mut(t);
            se.vruntime = se.deadline;
            self.update_deadline(t);
        }
    }

    /// `reweight_eevdf()` with `queued = false` (fair.c v7.3.4): rescale the saved lag and a
    /// relative deadline to a new weight (the running and queued cases go through the
    /// save/restore bracket in the engine).
    pub fn reweight_dequeued(&mut self, t: TaskId, w_new: u64) {
        let se = &mut self.ents[t.idx()];
        debug_assert!(!se.on_rq || !se.in_tree);
        if se.h_weight == w_new {
            return;
        }
        let w_old = se.h_weight as i64;
        let (g, avg) = (se.group, se.pelt.avg);
        let (old_down, new_down) = (scale_load_down(se.load_weight), scale_load_down(w_new));
        self.cfs.pelt.reweight_entity_load_avg(&mut se.pelt.avg, old_down, new_down);
        if let Some((groups, cpu)) = self.groups.as_mut()
            && avg.last_update_time != 0
        {
            groups.reweight_task(*cpu, g, &avg, old_down, new_down);
        }
        let se = &mut self.ents[t.idx()];
        se.vlag = (i128::from(se.vlag) * i128::from(w_old) / i128::from(w_new)) as i64;
        if se.rel_deadline {
            se.deadline = ((i128::from(se.deadline as i64) * i128::from(w_old)) / i128::from(w_new)) as i64 as u64;
        }
        se.h_weight = w_new;
        se.load_weight = w_new;
    }

    /// `reweight_eevdf()` for a task's flat effective weight (fair.c v7.3.4; spec §3.17):
    /// the weight EEVDF uses becomes `w_new` while the task's own load weight stays. The
    /// callers (enqueue, `set_next_task_fair()`, the tick after `entity_tick()`) have charged
    /// the running task already, and nothing here asks for a reschedule.
    pub fn reweight_h(&mut self, t: TaskId, w_new: u64) {
        let se = self.se(t);
        let (is_curr, on_rq) = (self.cfs.curr == Some(t), se.on_rq);
        self.rescale_weight(t, w_new, is_curr, on_rq);
    }

    /// The body of `reweight_eevdf()` (fair.c v7.3.4, with `rescale_entity()`; 7.2.12's
    /// `reweight_entity()` does the same for a group entity). A queued entity leaves the sums
    /// with its clamped lag (`entity_lag()`, no delayed-lag rule), its deadline and, while it
    /// runs protected, its protection made relative to V; lag, relative deadline and relative
    /// protection are scaled by `old/new` (`div64_long`, truncating); the entity goes back at
    /// `V - vlag`, so V does not move. A dequeued entity only has its saved lag (and a
    /// relative deadline) scaled. No `place_entity()`: its lag inflation applied at every
    /// reweight would compound (a task whose group's weight moves with its siblings' sleeps
    /// sank further behind at each one).
    pub(super) fn rescale_weight(&mut self, e: TaskId, w_new: u64, is_curr: bool, on_rq: bool) {
        let w_old = self.se(e).h_weight as i64;
        if w_old as u64 == w_new {
            return;
        }
        let div = w_new as i64;
        let scale = |x: i64| x.wrapping_mul(w_old) / div;
        let mut avruntime = 0;
        let mut rel_vprot = false;
        if on_rq {
            avruntime = self.avg_vruntime();
            let vlag = self.entity_lag(e, avruntime);
            let protected = is_curr && self.protect_slice(e);
            let se = self.se_mut(e);
            se.vlag = vlag;
            se.deadline = se.deadline.wrapping_sub(avruntime);
            se.rel_deadline = true;
            if protected {
                se.vprot = se.vprot.wrapping_sub(avruntime);
                rel_vprot = true;
            }
            self.cfs.nr_queued -= 1;
            if !is_curr {
                self.dequeue_tree(e);
            }
        }
        let se = self.se_mut(e);
        se.vlag = scale(se.vlag);
        if se.rel_deadline {
            se.deadline = scale(se.deadline as i64) as u64;
        }
        if rel_vprot {
            se.vprot = scale(se.vprot as i64) as u64;
        }
        se.h_weight = w_new;
        if on_rq {
            if rel_vprot {
                se.vprot = se.vprot.wrapping_add(avruntime);
            }
            se.deadline = se.deadline.wrapping_add(avruntime);
            se.rel_deadline = false;
            se.vruntime = avruntime.wrapping_sub(se.vlag as u64);
            if !is_curr {
                self.enqueue_tree(e);
            }
            self.cfs.nr_queued += 1;
        }
    }

    /// `prio_changed_fair()` (fair.c v7.3.4) after a nice change of a queued task.
    pub fn prio_changed_fair(&mut self, t: TaskId, weight_lowered: bool, need_resched_full: bool) {
        if !self.se(t).on_rq || self.cfs.nr_queued == 1 {
            return;
        }
        if self.curr_task() == Some(t) {
            if weight_lowered {
                self.resched_curr();
            }
        } else {
            self.wakeup_preempt_fair(t, 0, need_resched_full, true);
        }
    }
}

/// `min_vruntime()` helper (fair.c v7.3.4): the earlier of two wrapping virtual times.
#[inline]
pub fn vmin(a: u64, b: u64) -> u64 {
    if before(b, a) { b } else { a }
}

#[cfg(test)]
mod tests;
