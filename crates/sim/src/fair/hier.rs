//! ≤7.2 task groups as those kernels run them: EEVDF on every level of the hierarchy
//! (fair.c 6.12.117 and 7.2.12, `CONFIG_FAIR_GROUP_SCHED`; spec `kernel-fair.md` §7).
//!
//! Each task group has a runqueue per CPU ([`super::Fair::gcfs`]), and on each CPU an entity
//! ([`super::Fair::gents`]) queued in its parent's runqueue with the weight
//! `calc_group_shares()` gives it (`update_cfs_group()`, [`super::group::Groups::update_level`]).
//! A group entity's id is [`GROUP_SE`] | group, a task's its index: both live in the trees.
//!
//! Modelled per level, as the kernel does it: `enqueue_task_fair()` / `dequeue_entities()`
//! walking `for_each_sched_entity` (group entities placed with their own lag, dequeued when
//! their runqueue empties — or delayed, DELAY_DEQUEUE applies to them too — and requeued when a
//! task joins a delayed one), group slices (`cfs_rq_min_slice()` propagated up as the group
//! entity's custom slice), `update_curr()` charging each level's current entity, the pick
//! walking down levels (`pick_task_fair()`), `put_prev_task_fair()` / `set_next_task_fair()`
//! per level leaving shared levels alone, the tick's and the hrtick's `entity_tick()` per
//! level, `update_cfs_group()` reweighting a group entity through `reweight_entity()` in the
//! version's form (`config::ReweightForm`: 6.12's `reweight_eevdf()`, 6.13-6.19's
//! `place_entity()`, 7.0+'s `rescale_entity()`), the
//! buddies set and cleared up the hierarchy, and wakeup preemption comparing the entities
//! `find_matching_se()` finds.
//!
//! Counts: the group runqueues' `load.weight`, `h_nr_queued`, `h_nr_runnable` and `h_nr_idle`
//! are kept in [`super::group::GroupRq`] (the same bookkeeping the flat form uses, with a group entity's
//! weight in its parent's load while it is queued, delayed included); a level's own
//! `nr_queued` and its EEVDF sums in its [`CfsRq`]. The root runqueue keeps its flat meaning
//! for the engine and PELT: `h_nr_*` count every task of the CPU, `load_weight` is the sum of
//! the queued tasks' own weights (the load hierarchy of `group_pelt.rs` derives the root's
//! real load from it), while its tree and `nr_queued` hold the root's entities.
//!
//! The operations switch levels by swapping the level's runqueue into [`super::Fair::cfs`]
//! ([`Fair::goto_level`]), so the EEVDF functions of `mod.rs` serve every level; PELT always
//! runs at the root. Every public entry point returns at the root.

use super::{CfsRq, Fair, Policy, SchedEntity, WakeupReason, WakeupVerdict, deq, enq, wf};
use crate::config::{ProtectVariant, ReweightForm, WakeupPreemptVariant};
use crate::features::Feature;
use crate::pelt;
use crate::task::TaskId;

/// The id bit of a group entity: `GROUP_SE | g` is group `g`'s entity on the view's CPU.
pub const GROUP_SE: u32 = 1 << 31;

/// Group `g`'s entity.
#[inline]
pub fn group_se(g: u32) -> TaskId {
    TaskId(GROUP_SE | g)
}

/// The group an entity id stands for, if it is a group entity.
#[inline]
pub fn se_group(e: TaskId) -> Option<u32> {
    (e.0 & GROUP_SE != 0).then_some(e.0 & !GROUP_SE)
}

/// A group's entity as `init_tg_cfs_entry()` makes it (fair.c 6.12.117 / 7.2.12): weight
/// NICE_0_LOAD, queued (when it is) on its parent's runqueue.
pub fn group_entity(parent: u32) -> SchedEntity {
    let mut se = SchedEntity::new(Policy::Normal, 0, None);
    se.group = parent;
    se
}

/// Adds runtime charged to a task to the pending `account_mm_sched()` record (one task, one
/// time: see `CfsRq::mm_runtime`).
pub(super) fn merge_mm_runtime(cur: Option<(TaskId, u64, u64)>, add: (TaskId, u64, u64)) -> Option<(TaskId, u64, u64)> {
    match cur {
        Some((t, at, d)) if t == add.0 && at == add.1 => Some((t, at, d + add.2)),
        _ => Some(add),
    }
}

/// What one pick at one level gave.
enum Pick {
    Entity(TaskId),
    /// A delayed entity was dequeued for good: `pick_task_fair()` starts again (`goto again`).
    Again,
    Empty,
}

impl Fair<'_> {
    /// The run has ≤7.2's group levels.
    #[inline]
    pub fn hier(&self) -> bool {
        !self.gents.is_empty()
    }

    /// `t` is a task of a group below the root, on ≤7.2's group levels.
    #[inline]
    pub(super) fn hier_task(&self, t: TaskId) -> bool {
        self.hier() && t.0 & GROUP_SE == 0 && self.se(t).group != 0
    }

    fn cpu(&self) -> u32 {
        self.groups.as_ref().map_or(0, |(_, c)| *c)
    }

    /// Makes `cfs` hold level `g`'s runqueue (0: the root), whose place in `gcfs` then holds
    /// the root's. Runtime a task was charged at a group level is handed to the root's
    /// `mm_runtime`, where the engine takes it.
    pub(super) fn goto_level(&mut self, g: u32) {
        if g == self.lvl {
            return;
        }
        if self.lvl != 0 {
            let l = self.lvl as usize;
            std::mem::swap(&mut *self.cfs, &mut self.gcfs[l]);
            self.lvl = 0;
            if let Some(m) = self.gcfs[l].mm_runtime.take() {
                self.cfs.mm_runtime = merge_mm_runtime(self.cfs.mm_runtime, m);
            }
        }
        if g != 0 {
            std::mem::swap(&mut *self.cfs, &mut self.gcfs[g as usize]);
            self.lvl = g;
        }
    }

    /// Level `l`'s runqueue wherever it is held now.
    fn level(&self, l: u32) -> &CfsRq {
        if l == self.lvl {
            self.cfs
        } else if l == 0 {
            &self.gcfs[self.lvl as usize]
        } else {
            &self.gcfs[l as usize]
        }
    }

    fn level_mut(&mut self, l: u32) -> &mut CfsRq {
        if l == self.lvl {
            self.cfs
        } else if l == 0 {
            &mut self.gcfs[self.lvl as usize]
        } else {
            &mut self.gcfs[l as usize]
        }
    }

    /// Runs `f` with `cfs` holding task `t`'s own runqueue (the root's without ≤7.2's levels),
    /// for readers: `f` must leave the runqueue as it found it.
    pub fn with_task_level<R>(&mut self, t: TaskId, f: impl FnOnce(&Self) -> R) -> R {
        let g = if self.hier_task(t) { self.se(t).group } else { 0 };
        self.goto_level(g);
        let r = f(self);
        self.goto_level(0);
        r
    }

    /// `entity_eligible(task_cfs_rq(p), &p->se)`: eligibility on the task's own runqueue.
    pub fn task_eligible(&mut self, t: TaskId) -> bool {
        self.with_task_level(t, |f| f.entity_eligible(t))
    }

    /// The running task (`rq->curr` when a fair task runs): each level's `curr` down from the
    /// root. On a flat runqueue the root's `curr`.
    pub fn curr_task(&self) -> Option<TaskId> {
        let mut c = self.level(0).curr?;
        while let Some(g) = se_group(c) {
            c = self.level(g).curr?;
        }
        Some(c)
    }

    /// `parent_entity()`: the entity of the group whose runqueue `e` is queued on.
    fn parent_entity(&self, e: TaskId) -> Option<TaskId> {
        let g = self.se(e).group;
        (g != 0).then(|| group_se(g))
    }

    /// `se->depth`: how many groups are above the runqueue `e` is on.
    fn depth(&self, e: TaskId) -> u32 {
        let mut d = 0;
        let mut g = self.se(e).group;
        while g != 0 {
            d += 1;
            g = self.gents[g as usize].group;
        }
        d
    }

    /// `se_is_idle()` (fair.c 6.12.117 / 7.2.12): a SCHED_IDLE task, or the entity of a
    /// `cpu.idle` group.
    pub(super) fn se_is_idle(&self, e: TaskId) -> bool {
        match se_group(e) {
            Some(g) => self.groups.as_ref().is_some_and(|(gr, _)| gr.spec(g).idle),
            None => self.se(e).policy == Policy::Idle,
        }
    }

    /// A task counts in the root's `h_nr_idle` if it is SCHED_IDLE or any of its groups is
    /// idle (`cfs_rq_is_idle()` in `enqueue_task_fair()`'s walks, 7.3.4's
    /// `enqueue_hierarchy()`).
    pub(super) fn idle_path(&self, t: TaskId) -> bool {
        let se = self.se(t);
        se.policy == Policy::Idle || self.groups.as_ref().is_some_and(|(gr, _)| gr.idle_path(se.group))
    }

    // ---- buddies up the hierarchy -------------------------------------------------------

    /// `set_next_buddy()` (fair.c 6.12.117 l.8851 / 7.2.12 l.9918): `next` at every level up
    /// from `t`, stopping at an idle entity.
    pub(super) fn set_next_buddy_hier(&mut self, t: TaskId) {
        let mut e = Some(t);
        while let Some(x) = e {
            let se = self.se(x);
            if !se.on_rq || se.sched_delayed || self.se_is_idle(x) {
                return;
            }
            let l = se.group;
            self.level_mut(l).next = Some(x);
            e = self.parent_entity(x);
        }
    }

    /// `__clear_buddies_next()` above `t`'s level (fair.c 6.12.117 / 7.2.12): each parent
    /// level's `next` while it is the entity leading to `t`.
    pub(super) fn clear_buddies_up(&mut self, t: TaskId) {
        let mut e = self.parent_entity(t);
        while let Some(x) = e {
            let l = self.se(x).group;
            if self.level(l).next != Some(x) {
                break;
            }
            self.level_mut(l).next = None;
            e = self.parent_entity(x);
        }
    }

    // ---- group entity weight -------------------------------------------------------------

    /// `update_cfs_group()` (fair.c 6.12.117 l.4072 / 7.2.12 l.5046) for entity `e` on the
    /// current level: a group entity takes its group's share (`calc_group_shares()`), kept
    /// while the group is empty; a task has none.
    fn update_cfs_group(&mut self, e: TaskId) {
        let Some(g) = se_group(e) else { return };
        let Some((groups, cpu)) = self.groups.as_mut() else { return };
        if groups.rq(*cpu, g).load_weight == 0 {
            return;
        }
        let w = groups.update_level(*cpu, g);
        if self.se(e).load_weight != w {
            self.reweight_entity(e, w);
        }
    }

    /// `reweight_entity()` of a group entity on the current level, in the version's form
    /// ([`ReweightForm`]). 6.12.117 (l.3901, with `reweight_eevdf()` l.3853): a queued entity
    /// keeps its clamped lag and its deadline's distance from V scaled by `old/new` (`div_s64`:
    /// an `s32` divisor); a dequeued one its saved lag. 6.13-6.19 (6d71a9c61604, as the diff of
    /// its revert 101f3498b4bd shows it): the lag is saved and the deadline made relative to
    /// the entity's vruntime, both (and 6.17+'s protection, relative to the vruntime) scaled,
    /// and the entity placed again by `place_entity(se, 0)`. 7.2.12 (l.4871,
    /// `rescale_entity()`): the lag is saved, and lag, deadline and a running entity's
    /// protection relative to V are scaled (`div64_long`), then the entity is put back at
    /// `V - vlag`. Up to 6.16 a running entity's protection is the marker `vlag == deadline`
    /// (here `vprot`, see `set_protect_slice`), which a reweight breaks: the 6.12 form moves the
    /// deadline, the 6.13+ form overwrites `vlag`.
    fn reweight_entity(&mut self, e: TaskId, weight: u64) {
        let is_curr = self.cfs.curr == Some(e);
        let on_rq = self.se(e).on_rq;
        let marker = self.p.behavior.protect == ProtectVariant::V6_16;
        match self.p.behavior.reweight {
            ReweightForm::Eevdf => self.reweight_eevdf_form(e, weight, is_curr, on_rq),
            ReweightForm::Place => self.reweight_place_form(e, weight, is_curr, on_rq, marker),
            ReweightForm::Rescale => self.reweight_rescale_form(e, weight, is_curr, on_rq),
        }
        let se = self.se_mut(e);
        se.load_weight = weight;
        se.h_weight = weight;
        if marker && is_curr && on_rq && se.deadline != se.vprot {
            se.vprot = se.vruntime;
        }
    }

    /// 6.12.117's `reweight_entity()` / `reweight_eevdf()` (see [`Fair::reweight_entity`]).
    fn reweight_eevdf_form(&mut self, e: TaskId, weight: u64, is_curr: bool, on_rq: bool) {
        let old = self.se(e).load_weight as i64;
        let div = i64::from(weight as i32);
        if on_rq {
            self.update_curr();
            let avruntime = self.avg_vruntime();
            if !is_curr {
                self.dequeue_tree(e);
            }
            if avruntime != self.se(e).vruntime {
                let vlag = self.entity_lag(e, avruntime).wrapping_mul(old) / div;
                self.se_mut(e).vruntime = avruntime.wrapping_sub(vlag as u64);
            }
            let se = self.se_mut(e);
            let vslice = (se.deadline.wrapping_sub(avruntime) as i64).wrapping_mul(old) / div;
            se.deadline = avruntime.wrapping_add(vslice as u64);
            se.load_weight = weight;
            se.h_weight = weight;
            if !is_curr {
                self.enqueue_tree(e);
            }
        } else {
            let se = self.se_mut(e);
            se.vlag = se.vlag.wrapping_mul(old) / div;
        }
    }

    /// 6.13-6.19's `reweight_entity()` (6d71a9c61604; see [`Fair::reweight_entity`]): the
    /// entity leaves the level, is scaled relative to its own vruntime and placed again.
    /// `place_entity()` of those versions takes a relative deadline whatever
    /// PLACE_REL_DEADLINE says (the feature test came with the revert).
    fn reweight_place_form(&mut self, e: TaskId, weight: u64, is_curr: bool, on_rq: bool, marker: bool) {
        let old = self.se(e).load_weight as i64;
        let div = weight as i64;
        let mut prot = None;
        if on_rq {
            self.update_curr();
            self.update_entity_lag(e);
            let protected = !marker && is_curr && self.protect_slice(e);
            let se = self.se_mut(e);
            se.deadline = se.deadline.wrapping_sub(se.vruntime);
            se.rel_deadline = true;
            if protected {
                prot = Some(se.vprot.wrapping_sub(se.vruntime) as i64);
            }
            self.leave_for_reweight(e, is_curr);
        }
        self.scale_lag_and_deadline(e, old, div);
        let prot = prot.map(|p| p.wrapping_mul(old) / div);
        let se = self.se_mut(e);
        se.load_weight = weight;
        se.h_weight = weight;
        if on_rq {
            self.place_entity(e, 0);
            let se = self.se_mut(e);
            if se.rel_deadline {
                se.deadline = se.deadline.wrapping_add(se.vruntime);
                se.rel_deadline = false;
            }
            if let Some(p) = prot {
                se.vprot = se.vruntime.wrapping_add(p as u64);
            }
            if !is_curr {
                self.enqueue_tree(e);
            }
            self.cfs.nr_queued += 1;
        }
    }

    /// A queued entity leaves its level for a reweight (`nr_queued--`, out of the tree unless
    /// it runs), in the 6.13+ forms.
    fn leave_for_reweight(&mut self, e: TaskId, is_curr: bool) {
        self.cfs.nr_queued -= 1;
        if !is_curr {
            self.dequeue_tree(e);
        }
    }

    /// The saved lag and a relative deadline scaled by `old / div` (6.13+ forms).
    fn scale_lag_and_deadline(&mut self, e: TaskId, old: i64, div: i64) {
        let se = self.se_mut(e);
        se.vlag = se.vlag.wrapping_mul(old) / div;
        if se.rel_deadline {
            se.deadline = ((se.deadline as i64).wrapping_mul(old) / div) as u64;
        }
    }

    /// 7.2.12's `reweight_entity()` / `rescale_entity()` (see [`Fair::reweight_entity`]): the
    /// outstanding runtime charged, then 7.3's `reweight_eevdf()` body with the group entity's
    /// load weight following.
    fn reweight_rescale_form(&mut self, e: TaskId, weight: u64, is_curr: bool, on_rq: bool) {
        if on_rq {
            self.update_curr();
        }
        self.rescale_weight(e, weight, is_curr, on_rq);
        self.se_mut(e).load_weight = weight;
    }

    /// `se->slice = slice` for a queued entity, with the tree's `min_slice` propagated
    /// (`min_vruntime_cb_propagate()`) when it is in the tree.
    fn set_entity_slice(&mut self, e: TaskId, slice: u64) {
        let se = self.se_mut(e);
        se.slice = slice;
        if se.in_tree {
            let node = se.node;
            self.cfs.timeline.set_slice(node, slice);
        }
    }

    /// The levels above a walk's last enqueue or dequeue (the second `for_each_sched_entity`
    /// loop of `enqueue_task_fair()` / `dequeue_entities()`): each entity from `from` up takes
    /// its group's new share and the slice of the level below.
    fn update_levels_above(&mut self, from: Option<TaskId>, mut slice: u64) {
        let mut cur = from;
        while let Some(e) = cur {
            let l = self.se(e).group;
            self.goto_level(l);
            self.update_cfs_group(e);
            self.set_entity_slice(e, slice);
            slice = self.min_slice();
            cur = self.parent_entity(e);
        }
    }

    // ---- enqueue ------------------------------------------------------------------------

    /// `enqueue_task_fair()` (fair.c 6.12.117 l.7019 / 7.2.12 l.8028) for a task of a group.
    pub(super) fn enqueue_task_hier(&mut self, t: TaskId, flags: u32) {
        let g = self.se(t).group;
        let cpu = self.cpu();
        let pe = self.se(t).pelt;
        self.cfs.pelt.util_est_enqueue(&pe);
        if flags & enq::DELAYED != 0 {
            // requeue_delayed_entity(&p->se): 7.2.12 charges the level's curr first.
            self.pelt_update(t, true, false, 0);
            self.goto_level(g);
            if self.p.behavior.requeue_updates_curr {
                self.update_curr();
            }
            self.requeue_delayed_core(t);
            self.goto_level(0);
            // clear_delayed(): runnable again at every level.
            self.cfs.h_nr_runnable += 1;
            if let Some((groups, _)) = self.groups.as_mut() {
                groups.count(cpu, g, 0, 1, false);
            }
            return;
        }
        self.pelt_update(t, false, false, pelt::UPDATE_TG | pelt::DO_ATTACH);
        let se = *self.se(t);
        debug_assert!(!se.on_rq);
        // A non-wakeup enqueue of a delayed task (migration) keeps it non-runnable.
        let runnable = flags & enq::WAKEUP != 0 || !se.sched_delayed;
        let idle = self.idle_path(t);
        self.cfs.load_weight += se.load_weight;
        self.cfs.h_nr_queued += 1;
        self.cfs.h_nr_idle += u32::from(idle);
        self.cfs.h_nr_runnable += u32::from(runnable);
        if let Some((groups, _)) = self.groups.as_mut() {
            groups.task_load(cpu, g, se.load_weight, 1);
            groups.count(cpu, g, 1, i32::from(runnable), se.policy == Policy::Idle);
        }
        let (mut e, mut flags, mut slice) = (t, flags, 0u64);
        let mut rest = None;
        loop {
            let l = self.se(e).group;
            if self.se(e).on_rq {
                if self.se(e).sched_delayed {
                    self.goto_level(l);
                    if self.p.behavior.requeue_updates_curr {
                        self.update_curr();
                    }
                    self.requeue_delayed_core(e);
                }
                rest = Some(e);
                break;
            }
            self.goto_level(l);
            if slice != 0 {
                // "set the slice of group entries to the min_slice of their respective
                // cfs_rq": the group serves its entities in their time-frame.
                let se = self.se_mut(e);
                se.slice = slice;
                se.custom_slice = true;
            }
            self.enqueue_entity(e, flags);
            slice = self.min_slice();
            flags = enq::WAKEUP;
            match self.parent_entity(e) {
                Some(p) => e = p,
                None => break,
            }
        }
        self.update_levels_above(rest, slice);
        self.goto_level(0);
    }

    /// `enqueue_entity()` (fair.c 6.12.117 l.5410 / 7.2.12 l.6316) on the current level.
    fn enqueue_entity(&mut self, e: TaskId, flags: u32) {
        let is_curr = self.cfs.curr == Some(e);
        if is_curr {
            self.place_entity(e, flags);
        }
        self.update_curr();
        self.update_cfs_group(e);
        if !is_curr {
            self.place_entity(e, flags);
        }
        self.cfs.nr_queued += 1;
        if let Some(g) = se_group(e)
            && let Some((groups, cpu)) = self.groups.as_mut()
        {
            groups.set_queued(*cpu, g, true);
        }
        let se = self.se_mut(e);
        if flags & enq::MIGRATED != 0 {
            se.exec_start = 0;
        }
        se.on_rq = true;
        if !is_curr {
            self.enqueue_tree(e);
        }
    }

    // ---- dequeue ------------------------------------------------------------------------

    /// `dequeue_entities()` (fair.c 6.12.117 l.7161 / 7.2.12 l.8154) for a task of a group, or
    /// for a delayed entity the pick met (`DEQUEUE_SLEEP | DEQUEUE_DELAYED`). Returns false
    /// when DELAY_DEQUEUE keeps the sleeping task queued.
    pub(super) fn dequeue_entities_hier(&mut self, e0: TaskId, flags: u32) -> bool {
        let task_sleep = flags & deq::SLEEP != 0;
        let cpu = self.cpu();
        let mut e = e0;
        if se_group(e0).is_none() {
            let g = self.se(e0).group;
            if g == 0 {
                // A root task: the flat path is the root level's.
                self.goto_level(0);
                return self.dequeue_task_fair(e0, flags);
            }
            self.goto_level(g);
            if !self.dequeue_task_entity(e0, flags) {
                self.goto_level(0);
                return false;
            }
        } else {
            let l = self.se(e0).group;
            self.goto_level(l);
            let done = self.dequeue_group_entity(e0, flags);
            debug_assert!(done, "a DEQUEUE_DELAYED dequeue is never delayed");
        }
        let mut flags = flags;
        let mut slice = 0;
        let mut rest = None;
        loop {
            let l = self.se(e).group;
            if l == 0 {
                break;
            }
            let load = self.groups.as_ref().map_or(0, |(gr, _)| gr.rq(cpu, l).load_weight);
            if load != 0 {
                // "Don't dequeue parent if it has other entities besides us."
                self.goto_level(l);
                slice = self.min_slice();
                let parent = group_se(l);
                // "Bias pick_next to pick a task from this cfs_rq."
                if task_sleep {
                    self.set_next_buddy_hier(parent);
                }
                rest = Some(parent);
                break;
            }
            flags |= deq::SLEEP;
            flags &= !(deq::DELAYED | deq::SPECIAL);
            e = group_se(l);
            let pl = self.se(e).group;
            self.goto_level(pl);
            if !self.dequeue_group_entity(e, flags) {
                slice = self.min_slice();
                rest = Some(e);
                break;
            }
        }
        self.update_levels_above(rest, slice);
        self.goto_level(0);
        true
    }

    /// `dequeue_entity()` of a task on its group's level (the current one), with the task's
    /// PELT update and counts at the root, as the flat `dequeue_task_fair()` does them.
    fn dequeue_task_entity(&mut self, t: TaskId, flags: u32) -> bool {
        let g = self.lvl;
        let cpu = self.cpu();
        self.clear_buddies(t);
        self.update_curr();
        self.update_entity_lag(t);
        if self.delays_dequeue(t, flags) {
            self.goto_level(0);
            // set_delayed(): no longer runnable at any level.
            self.set_delayed(t);
            if let Some((groups, _)) = self.groups.as_mut() {
                groups.count(cpu, g, 0, -1, false);
            }
            return false;
        }
        // Off this level first, then the PELT update and the counts at the root (PELT reads
        // neither the tree nor the entity's queued flag; it is told the task was queued).
        let se = *self.se(t);
        let rel = self.p.feat(Feature::PLACE_REL_DEADLINE);
        let is_curr = self.cfs.curr == Some(t);
        let sem = self.se_mut(t);
        sem.on_rq = false;
        if flags & deq::SLEEP == 0 && rel {
            sem.deadline = sem.deadline.wrapping_sub(sem.vruntime);
            sem.rel_deadline = true;
        }
        if flags & deq::DELAYED != 0 {
            sem.sched_delayed = false;
        }
        self.cfs.nr_queued -= 1;
        if !is_curr {
            self.dequeue_tree(t);
        }
        self.goto_level(0);
        let migrating = if flags & deq::MIGRATING != 0 { pelt::DO_DETACH } else { 0 };
        if se.sched_delayed {
            self.pelt_update(t, true, false, pelt::UPDATE_TG | migrating);
        } else {
            let pe = se.pelt;
            self.cfs.pelt.util_est_dequeue(&pe);
            let est = if flags & deq::SLEEP != 0 { pelt::UPDATE_UTIL_EST } else { 0 };
            self.pelt_update(t, true, true, pelt::UPDATE_TG | est | migrating);
        }
        let idle = self.idle_path(t);
        // As the flat path: the net change of h_nr_runnable at once (a delayed task leaving
        // for good was already not runnable).
        let runnable = flags & deq::DELAYED == 0 && (flags & deq::SLEEP != 0 || !se.sched_delayed);
        self.cfs.load_weight -= se.load_weight;
        self.cfs.h_nr_queued -= 1;
        self.cfs.h_nr_idle -= u32::from(idle);
        self.cfs.h_nr_runnable -= u32::from(runnable);
        if let Some((groups, _)) = self.groups.as_mut() {
            groups.task_load(cpu, g, se.load_weight, -1);
            groups.count(cpu, g, -1, -i32::from(runnable), se.policy == Policy::Idle);
            // update_load_avg(cfs_rq, se, UPDATE_TG) on the task's group runqueue:
            // update_tg_load_avg() of that group, also when it is now empty.
            groups.update_tg_load(cpu, g);
        }
        true
    }

    /// `dequeue_entity()` (fair.c 6.12.117 l.5541 / 7.2.12 l.6459) of a group entity on the
    /// current level: DELAY_DEQUEUE keeps an ineligible one queued (7.2.12 saves its lag
    /// first, 6.12.117 does not); otherwise it leaves with its lag, its weight kept
    /// (`update_cfs_group()` of an empty group), and a delayed one leaving for good drops a
    /// positive lag under DELAY_ZERO on 6.12 (`finish_delayed_dequeue_entity()`).
    fn dequeue_group_entity(&mut self, e: TaskId, flags: u32) -> bool {
        self.update_curr();
        self.clear_buddies(e);
        let sleep = flags & deq::SLEEP != 0;
        let lag_7_2 = self.p.behavior.delayed_lag_monotone;
        if flags & deq::DELAYED == 0 {
            let delay = sleep && flags & deq::SPECIAL == 0;
            if self.p.feat(Feature::DELAY_DEQUEUE) && delay && !self.entity_eligible(e) {
                if lag_7_2 {
                    self.update_entity_lag(e);
                }
                self.se_mut(e).sched_delayed = true;
                return false;
            }
        }
        self.update_entity_lag(e);
        let rel = self.p.feat(Feature::PLACE_REL_DEADLINE);
        let is_curr = self.cfs.curr == Some(e);
        let se = self.se_mut(e);
        if rel && !sleep {
            se.deadline = se.deadline.wrapping_sub(se.vruntime);
            se.rel_deadline = true;
        }
        if !is_curr {
            self.dequeue_tree(e);
        }
        self.se_mut(e).on_rq = false;
        self.cfs.nr_queued -= 1;
        let parent = self.lvl;
        if let Some(g) = se_group(e)
            && let Some((groups, cpu)) = self.groups.as_mut()
        {
            groups.set_queued(*cpu, g, false);
            // update_tg_load_avg() of the parent group's runqueue (the root has none).
            if parent != 0 {
                groups.update_tg_load(*cpu, parent);
            }
        }
        if flags & deq::DELAYED != 0 {
            let zero = !lag_7_2 && self.p.feat(Feature::DELAY_ZERO);
            let se = self.se_mut(e);
            se.sched_delayed = false;
            if zero && se.vlag > 0 {
                se.vlag = 0;
            }
        }
        true
    }

    // ---- pick, put, set -----------------------------------------------------------------

    /// `pick_task_fair()` (fair.c 6.12.117 l.8956 / 7.2.12 l.10138): the pick walks down
    /// from the root, each level charged and picked (`pick_next_entity()`), until a task; a
    /// delayed entity met on the way is dequeued and the walk starts again at the root.
    pub fn pick_task_fair(&mut self) -> Option<TaskId> {
        if !self.hier() {
            if self.cfs.h_nr_queued == 0 {
                return None;
            }
            if self.cfs.curr.is_some_and(|c| self.se(c).on_rq) {
                self.update_curr();
            }
            let picked = self.pick_next_entity(true);
            if let Some(t) = picked {
                debug_assert!(self.cfs.h_nr_queued == 1 || self.entity_eligible(t), "picked an ineligible entity");
            }
            return picked;
        }
        'again: loop {
            self.goto_level(0);
            let mut l = 0;
            loop {
                self.goto_level(l);
                if self.curr_on_rq().is_some() {
                    self.update_curr();
                }
                match self.pick_once() {
                    Pick::Empty => {
                        self.goto_level(0);
                        return None;
                    }
                    Pick::Again => continue 'again,
                    Pick::Entity(e) => match se_group(e) {
                        Some(g) => l = g,
                        None => {
                            self.goto_level(0);
                            return Some(e);
                        }
                    },
                }
            }
        }
    }

    /// `pick_next_entity()` once on the current level (fair.c 6.12.117 l.5671: the next buddy
    /// first; 7.2.12 l.6601: in `pick_eevdf()` with protection).
    fn pick_once(&mut self) -> Pick {
        if self.cfs.nr_queued == 0 {
            return Pick::Empty;
        }
        let mut se = None;
        if self.p.behavior.wakeup_preempt == WakeupPreemptVariant::V6_18 && self.p.feat(Feature::PICK_BUDDY) {
            se = self.cfs.next.filter(|&n| self.entity_eligible(n));
        }
        let Some(se) = se.or_else(|| self.pick_eevdf(true)) else { return Pick::Empty };
        if self.se(se).sched_delayed {
            self.dequeue_entities_hier(se, deq::SLEEP | deq::DELAYED);
            return Pick::Again;
        }
        debug_assert!(self.cfs.nr_queued == 1 || self.entity_eligible(se), "picked an ineligible entity");
        Pick::Entity(se)
    }

    /// `put_prev_task_fair()` (fair.c 7.2.12 l.10203; 6.12.117 does the same walk inside
    /// `pick_next_task_fair()`): every level from the task up is put back, except those it
    /// shares with `next`, whose `curr` stays (the walk stops at the first level both are on).
    pub(super) fn put_prev_task_hier(&mut self, prev: TaskId, next: Option<TaskId>) {
        // The task's PELT update first, at the root: it reads nothing the walk changes, and
        // put_prev_entity() charges the task's level itself.
        if self.se(prev).on_rq {
            let runnable = !self.se(prev).sched_delayed;
            self.pelt_update(prev, true, runnable, 0);
        }
        let (mut se, mut nse) = (Some(prev), next);
        while let Some(s) = se {
            let l = self.se(s).group;
            if nse.is_none() || self.level(l).curr.is_some() {
                self.goto_level(l);
                self.put_prev_entity(s);
            }
            if let Some(n) = nse {
                if self.se(n).group == l {
                    break;
                }
                let d = i64::from(self.depth(n)) - i64::from(self.depth(s));
                if d >= 0 {
                    nse = self.parent_entity(n);
                    if d > 0 {
                        continue;
                    }
                }
            }
            se = self.parent_entity(s);
        }
        self.goto_level(0);
    }

    /// `put_prev_entity()` (fair.c 6.12.117 l.5696 / 7.2.12 l.6616) on the current level.
    fn put_prev_entity(&mut self, e: TaskId) {
        debug_assert_eq!(self.cfs.curr, Some(e));
        let on_rq = self.se(e).on_rq;
        if on_rq {
            self.update_curr();
        }
        self.cfs.curr = None;
        if on_rq {
            self.enqueue_tree(e);
        }
    }

    /// `set_next_task_fair()` (fair.c 7.2.12 l.15348; 6.12.117's `pick_next_task_fair()`
    /// walk): `set_next_entity()` from the task up, stopping (for a pick, `first`) at a level
    /// whose `curr` the previous task left in place.
    pub(super) fn set_next_task_hier(&mut self, t: TaskId, first: bool) {
        if self.se(t).on_rq {
            let runnable = !self.se(t).sched_delayed;
            self.pelt_update(t, true, runnable, pelt::UPDATE_TG);
        }
        let mut e = Some(t);
        while let Some(x) = e {
            let l = self.se(x).group;
            if first && self.level(l).curr.is_some() {
                break;
            }
            self.goto_level(l);
            self.set_next_entity(x, first);
            e = self.parent_entity(x);
        }
        self.goto_level(0);
    }

    /// `set_next_entity()` (fair.c 6.12.117 l.5621 / 7.2.12 l.6550) on the current level:
    /// out of the tree, the runtime snapshot taken, slice protection armed (6.12.117 at every
    /// call, 7.2.12 for a pick).
    fn set_next_entity(&mut self, e: TaskId, first: bool) {
        self.clear_buddies(e);
        let on_rq = self.se(e).on_rq;
        if on_rq {
            self.dequeue_tree(e);
        }
        let now = self.now;
        let se = self.se_mut(e);
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
        self.cfs.curr = Some(e);
        let arm = first || self.p.behavior.protect == ProtectVariant::V6_16;
        if arm && on_rq {
            self.set_protect_slice(e);
        }
    }

    // ---- tick and runtime ---------------------------------------------------------------

    /// `task_tick_fair()` (fair.c 6.12.117 l.13216 / 7.2.12 l.15166): `entity_tick()` at every
    /// level of the running task (charge the level's curr, its PELT, its group's share). On a
    /// flat runqueue: charge, PELT and 7.3's group weights.
    pub fn task_tick(&mut self) {
        let curr = if self.hier() { self.curr_task() } else { None };
        let Some(t) = curr else {
            self.update_curr();
            self.pelt_tick();
            self.tick_groups();
            return;
        };
        // The task's PELT update first, at the root (it reads nothing the charges change).
        self.pelt_tick();
        let g = self.se(t).group;
        self.goto_level(g);
        self.update_curr();
        let mut e = self.parent_entity(t);
        while let Some(x) = e {
            let l = self.se(x).group;
            self.goto_level(l);
            self.update_curr();
            self.update_cfs_group(x);
            e = self.parent_entity(x);
        }
        self.goto_level(0);
    }

    /// `hrtick()`'s `task_tick_fair(rq, curr, queued = 1)` (fair.c 6.12.117 l.13216 / 7.2.12
    /// l.15166): on ≤7.2's levels `entity_tick()` at every level, as [`Fair::task_tick`] (the
    /// queued tick returns after the walk, before what the periodic tick does next); on a flat
    /// runqueue the running task's `update_curr()`.
    pub fn hrtick_tick(&mut self) {
        if self.hier() && self.curr_task().is_some() { self.task_tick() } else { self.update_curr_fair() }
    }

    /// `update_curr_fair()` (fair.c 6.12.117 / 7.2.12): `update_curr()` on the running task's
    /// own runqueue.
    pub fn update_curr_fair(&mut self) {
        let curr = if self.hier() { self.curr_task() } else { None };
        match curr {
            Some(t) => {
                let g = self.se(t).group;
                self.goto_level(g);
                self.update_curr();
                self.goto_level(0);
            }
            None => self.update_curr(),
        }
    }

    // ---- wakeup preemption --------------------------------------------------------------

    /// `find_matching_se()` (fair.c 6.12.117 l.423 / 7.2.12 l.431): the ancestors of `se` and
    /// `pse` that are queued on one runqueue.
    fn find_matching_se(&self, mut se: TaskId, mut pse: TaskId) -> (TaskId, TaskId) {
        let (mut sd, mut pd) = (self.depth(se), self.depth(pse));
        while sd > pd {
            sd -= 1;
            se = self.parent_entity(se).unwrap_or(se);
        }
        while pd > sd {
            pd -= 1;
            pse = self.parent_entity(pse).unwrap_or(pse);
        }
        while self.se(se).group != self.se(pse).group {
            match (self.parent_entity(se), self.parent_entity(pse)) {
                (Some(a), Some(b)) => (se, pse) = (a, b),
                _ => break,
            }
        }
        (se, pse)
    }

    /// `check_preempt_wakeup_fair()` (6.12.117 l.8865) / `wakeup_preempt_fair()` (7.2.12
    /// l.9997) with groups: the running task and the woken one are compared through the
    /// entities `find_matching_se()` finds, on their common runqueue (idle-ness, slices,
    /// buddies, the pick are those entities'; the policy test is the woken task's). 6.12
    /// nominates the woken task's entity as next buddy at every level first.
    pub(super) fn wakeup_preempt_hier(
        &mut self,
        p: TaskId,
        wake_flags: u32,
        need_resched_full: bool,
        in_task: bool,
    ) -> WakeupVerdict {
        let Some(curr) = self.curr_task() else {
            return WakeupVerdict { preempt: true, reason: WakeupReason::IdleCurr };
        };
        if curr == p {
            return WakeupVerdict { preempt: false, reason: WakeupReason::SameEntity };
        }
        let (se, pse) = self.find_matching_se(curr, p);
        if self.p.behavior.wakeup_preempt == WakeupPreemptVariant::V6_18
            && pse != p
            && self.p.feat(Feature::NEXT_BUDDY)
            && wake_flags & wf::FORK == 0
            && !self.se(p).sched_delayed
        {
            self.set_next_buddy_hier(p);
        }
        let l = self.se(se).group;
        self.goto_level(l);
        let v = self.wakeup_preempt_variant(se, pse, p, wake_flags, need_resched_full, in_task);
        self.goto_level(0);
        v
    }
}

#[cfg(test)]
impl Fair<'_> {
    /// Group `g`'s entity on its parent's level: (that level's V, its vruntime, deadline,
    /// whether its slice is protected), for tests.
    pub(crate) fn group_entity_state(&mut self, g: u32) -> (u64, u64, u64, bool) {
        let e = group_se(g);
        self.goto_level(self.se(e).group);
        self.update_curr();
        let se = *self.se(e);
        let r = (self.avg_vruntime(), se.vruntime, se.deadline, self.protect_slice(e));
        self.goto_level(0);
        r
    }

    /// `reweight_entity()` of group `g`'s entity to `weight` on its parent's level, for tests.
    pub(crate) fn reweight_group_entity(&mut self, g: u32, weight: u64) {
        let e = group_se(g);
        self.goto_level(self.se(e).group);
        self.reweight_entity(e, weight);
        self.goto_level(0);
    }
}
