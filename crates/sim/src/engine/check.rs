//! The invariant checker: after any event, the whole scheduler state must be consistent.
//! It recomputes every aggregate from scratch, so it is slow and meant for tests and
//! `--check` runs.

use std::fmt;

use super::Sim;
use crate::fair::group::Groups;
use crate::fair::{Fair, Policy};
use crate::task::{TaskId, TaskState};

/// A broken invariant, with the simulated time and a description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvariantViolation {
    pub at_ns: u64,
    pub what: String,
}

impl fmt::Display for InvariantViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invariant violated at {} ns: {}", self.at_ns, self.what)
    }
}

impl std::error::Error for InvariantViolation {}

/// The checker's buffers, kept between checks so that a `--check` run allocates nothing per
/// event (a 192-CPU full check needs a tally per CPU and, with task groups, per CPU and group).
#[derive(Default)]
pub(super) struct CheckScratch {
    /// Per CPU: (queued, runnable, load) of the tasks that belong to it.
    tally: Vec<(u32, u32, u64)>,
    /// Per (CPU, group), or per group of one CPU: (queued, runnable, own tasks' load, idle).
    groups: Vec<GroupTally>,
    /// Per CPU: the queued tasks that count in the root's `h_nr_idle`.
    idle: Vec<u32>,
    /// Per CPU: the queued grouped tasks' own weights.
    grouped_w: Vec<u64>,
}

/// One group's tally on one CPU: queued and runnable tasks of it and its descendants, its own
/// queued tasks' load, and the queued tasks that count in its `h_nr_idle`.
type GroupTally = (u32, u32, u64, u32);

/// What one walk of a runqueue's queued entities (its tree and its queued `curr`) adds up.
#[derive(Default)]
struct Walk {
    queued: u32,
    runnable: u32,
    load: u64,
    /// Σ w and Σ w·(v − zero_vruntime) of the tree alone, as the kernel keeps them (wrapping).
    tree_w: u64,
    tree_wv: i64,
    /// Σ w·(v − zero_vruntime) of every queued entity, exactly, and Σ w.
    num: i128,
    total_w: u64,
    /// The smallest key v − zero_vruntime: if that entity is not eligible, none is.
    min_key: Option<i64>,
}

impl Sim {
    /// Checks every invariant; the first violation found is returned.
    ///
    /// Linear in tasks + CPUs + queued entities (+ CPUs × groups): the per-CPU counts are
    /// tallied in one pass over the tasks, and each tree is walked once.
    pub(super) fn check_invariants(&mut self) -> Result<(), InvariantViolation> {
        let now = self.now;
        let fail = |what: String| Err(InvariantViolation { at_ns: now, what });
        // Per CPU: (queued, runnable, load) of the tasks that belong to it.
        // Taken out for the pass (which reads `self`); a violation ends the run, so only the
        // passing path puts it back.
        let mut tally = std::mem::take(&mut self.scratch.tally);
        tally.clear();
        tally.resize(self.rqs.len(), (0, 0, 0));
        let mut idle = std::mem::take(&mut self.scratch.idle);
        idle.clear();
        idle.resize(self.rqs.len(), 0);
        // Each queued task is in exactly one place: curr of its CPU's cfs_rq or in its tree.
        for (i, (task, se)) in self.tasks.iter().zip(&self.ents).enumerate() {
            let t = TaskId(i as u32);
            let rq = &self.rqs[task.cpu as usize];
            let is_curr = self.level_curr(task.cpu, se.group) == Some(t);
            if se.on_rq && (is_curr == se.in_tree) {
                return fail(format!("task {i} queued but curr={is_curr} in_tree={}", se.in_tree));
            }
            if !se.on_rq && se.in_tree {
                return fail(format!("task {i} in a tree but not queued"));
            }
            match task.state {
                TaskState::Running if !se.on_rq && rq.curr != Some(t) => {
                    return fail(format!("runnable task {i} is neither queued nor running"));
                }
                TaskState::Blocked | TaskState::Dead | TaskState::New if se.on_rq && !se.sched_delayed => {
                    return fail(format!("task {i} in state {:?} is queued and not delayed", task.state));
                }
                _ => {}
            }
            if se.sched_delayed && !se.on_rq {
                return fail(format!("task {i} delayed but not queued"));
            }
            // Balancing and CPU selection never put a task outside its affinity.
            if (se.on_rq || rq.curr == Some(t)) && !task.allows(task.cpu) {
                return fail(format!("task {i} is on CPU {} outside its affinity {:?}", task.cpu, task.allowed));
            }
            if se.on_rq {
                let c = &mut tally[task.cpu as usize];
                c.0 += 1;
                c.1 += u32::from(!se.sched_delayed);
                c.2 += se.load_weight;
                let grouped_idle = self.groups.as_ref().is_some_and(|g| g.idle_path(se.group));
                idle[task.cpu as usize] += u32::from(se.policy == Policy::Idle || grouped_idle);
            }
        }
        // The root's h_nr_idle: SCHED_IDLE tasks and those below an idle group.
        for (c, rq) in self.rqs.iter().enumerate() {
            if rq.cfs.h_nr_idle != idle[c] {
                return fail(format!("CPU {c}: h_nr_idle {} but {} queued tasks are idle", rq.cfs.h_nr_idle, idle[c]));
            }
        }
        self.scratch.idle = idle;
        // No task is current on a CPU it does not belong to.
        for (c, rq) in self.rqs.iter().enumerate() {
            for t in [self.cfs_curr_task(c as u32), rq.curr].into_iter().flatten() {
                let owner = self.tasks[t.idx()].cpu;
                if owner as usize != c {
                    return fail(format!("task {} is current on CPU {c} but belongs to CPU {owner}", t.0));
                }
            }
        }
        self.scratch.tally = tally;
        self.clear_touched();
        for cpu in 0..self.rqs.len() as u32 {
            let counts = self.scratch.tally[cpu as usize];
            self.check_rq(cpu, Some(counts))?;
        }
        self.check_groups()
    }

    /// The task groups: every group runqueue's load is the sum of its queued members' weights
    /// (its own queued tasks' load weights and its queued child groups' entity weights), and
    /// `h_nr_queued`/`h_nr_runnable` count the queued and runnable tasks of the group and its
    /// descendants on that CPU. A pass over the tasks, then one over the groups child first.
    fn check_groups(&mut self) -> Result<(), InvariantViolation> {
        let Some(groups) = &self.groups else { return Ok(()) };
        let n = groups.len();
        let ncpus = self.rqs.len();
        // Per (cpu, group): (queued, runnable, own tasks' load); per CPU: the queued grouped
        // tasks' own weights, which the root holds as entities.
        let CheckScratch { groups: tally, grouped_w, .. } = &mut self.scratch;
        tally.clear();
        tally.resize(n * ncpus, (0, 0, 0, 0));
        grouped_w.clear();
        grouped_w.resize(ncpus, 0);
        for (task, se) in self.tasks.iter().zip(&self.ents) {
            if !se.on_rq || se.group == 0 {
                continue;
            }
            let base = task.cpu as usize * n;
            add_grouped(&mut tally[base..base + n], groups, se);
            grouped_w[task.cpu as usize] += se.load_weight;
        }
        for cpu in 0..ncpus as u32 {
            let base = cpu as usize * n;
            check_cpu_groups(groups, cpu, self.now, &mut tally[base..base + n], grouped_w[cpu as usize], &self.rqs)?;
        }
        Ok(())
    }

    /// The invariants of the runqueues the last event touched (`Sim::touch`), and their task
    /// groups' accounting, between full checks: a broken state elsewhere is still caught, at
    /// the latest by the next full check.
    pub(super) fn check_touched(&mut self) -> Result<(), InvariantViolation> {
        let touched = std::mem::take(&mut self.touched);
        let mut result = Ok(());
        for &cpu in &touched {
            self.is_touched[cpu as usize] = false;
            if result.is_ok() {
                result = self.check_rq(cpu, None).and_then(|()| self.check_groups_of(cpu));
            }
        }
        self.touched = touched;
        self.touched.clear();
        result
    }

    /// The task groups' accounting on one CPU, from the entities its runqueue holds (the tree
    /// and the queued `curr`), which `check_rq` has just matched against its counts.
    fn check_groups_of(&mut self, cpu: u32) -> Result<(), InvariantViolation> {
        let Some(groups) = &self.groups else { return Ok(()) };
        // On ≤7.2's levels the root's tree holds group entities, not tasks: `check_rq_hier`
        // checks every level's load and counts of this CPU instead.
        if !self.gents.is_empty() {
            return Ok(());
        }
        let tally = &mut self.scratch.groups;
        tally.clear();
        tally.resize(groups.len(), (0, 0, 0, 0));
        let cfs = &self.rqs[cpu as usize].cfs;
        let curr = cfs.curr.filter(|c| self.ents[c.idx()].on_rq).map(|c| c.0);
        let mut grouped_w = 0;
        for id in cfs.timeline.iter().map(|k| k.id).chain(curr) {
            let se = &self.ents[id as usize];
            if se.group != 0 {
                add_grouped(tally, groups, se);
                grouped_w += se.load_weight;
            }
        }
        check_cpu_groups(groups, cpu, self.now, tally, grouped_w, &self.rqs)
    }

    /// Forgets the touched CPUs (a full check covers them all).
    fn clear_touched(&mut self) {
        for &cpu in &self.touched {
            self.is_touched[cpu as usize] = false;
        }
        self.touched.clear();
    }

    /// The invariants of one runqueue. `counts` are (queued, runnable, load) of the tasks that
    /// belong to it, from a pass over all tasks; without them (a partial check) the counts of
    /// the tree and the running entity stand in. One walk of the tree, no allocation.
    fn check_rq(&mut self, cpu: u32, counts: Option<(u32, u32, u64)>) -> Result<(), InvariantViolation> {
        if !self.gents.is_empty() {
            return self.check_rq_hier(cpu, counts);
        }
        let now = self.now;
        let fail = |what: String| Err(InvariantViolation { at_ns: now, what: format!("CPU {cpu}: {what}") });
        let rq = &self.rqs[cpu as usize];
        if rq.curr != rq.cfs.curr && !(rq.curr.is_none() && rq.cfs.curr.is_none()) {
            return fail(format!("rq.curr {:?} != cfs.curr {:?}", rq.curr, rq.cfs.curr));
        }
        let cfs = &rq.cfs;
        let full_weight = self.params.behavior.avg_full_weight;
        let avg_w = |h_weight: u64| if full_weight { h_weight } else { crate::fair::weight::scale_load_down(h_weight) };
        let v0 = cfs.zero_vruntime;
        let mut walk = Walk::default();
        let add = |walk: &mut Walk, se: &crate::fair::SchedEntity| {
            let w = avg_w(se.h_weight);
            let key = se.vruntime.wrapping_sub(v0) as i64;
            walk.queued += 1;
            walk.runnable += u32::from(!se.sched_delayed);
            walk.load += se.load_weight;
            walk.num += i128::from(w) * i128::from(key);
            walk.total_w += w;
            walk.min_key = Some(walk.min_key.map_or(key, |m| m.min(key)));
            (w, key)
        };
        // The tree holds only this CPU's tasks, never the running one; the tree's copies
        // match the entities. The first such fault is reported after the counts, which the
        // same walk adds up.
        let mut tree_fault: Option<String> = None;
        for k in cfs.timeline.iter() {
            let se = &self.ents[k.id as usize];
            if tree_fault.is_none() {
                let owner = self.tasks[k.id as usize].cpu;
                if se.in_tree && owner != cpu {
                    tree_fault = Some(format!("task {} of CPU {owner} is in this tree", k.id));
                } else if cfs.curr.is_some_and(|c| c.0 == k.id) {
                    tree_fault = Some("the running entity is in the tree".into());
                } else if (se.vruntime, se.deadline, se.slice) != (k.vruntime, k.deadline, k.slice) {
                    tree_fault = Some(format!("tree copy of task {} is stale", k.id));
                }
            }
            let (w, key) = add(&mut walk, se);
            walk.tree_w += w;
            walk.tree_wv = walk.tree_wv.wrapping_add(key.wrapping_mul(w as i64));
        }
        let curr_queued = cfs.curr.filter(|c| self.ents[c.idx()].on_rq);
        if let Some(c) = curr_queued {
            add(&mut walk, &self.ents[c.idx()]);
        }
        let (queued, runnable, load) = counts.unwrap_or((walk.queued, walk.runnable, walk.load));
        if (queued, runnable, load) != (cfs.h_nr_queued, cfs.h_nr_runnable, cfs.load_weight) {
            return fail(format!(
                "counts (queued, runnable, load) = ({queued}, {runnable}, {load}) but cfs_rq has ({}, {}, {})",
                cfs.h_nr_queued, cfs.h_nr_runnable, cfs.load_weight
            ));
        }
        if let Some(n) = cfs.next {
            let se = &self.ents[n.idx()];
            if !se.on_rq || se.sched_delayed || self.tasks[n.idx()].cpu != cpu {
                return fail(format!("next buddy {} is not a queued, non-delayed task of this CPU", n.0));
            }
        }
        if let Some(what) = tree_fault {
            return fail(what);
        }
        // The avg_vruntime sums match the tree.
        if (walk.tree_w, walk.tree_wv) != (cfs.sum_weight, cfs.sum_w_vruntime) {
            return fail(format!(
                "avg_vruntime sums ({}, {}) != cfs_rq ({}, {})",
                walk.tree_w, walk.tree_wv, cfs.sum_weight, cfs.sum_w_vruntime
            ));
        }
        let Some(min_key) = walk.min_key else { return Ok(()) };
        let f = Fair::new(&mut self.rqs[cpu as usize].cfs, &mut self.ents, &self.params, now);
        // V is the floor of the queued entities' weighted mean vruntime: then their weighted
        // lag Σ w·(V − v) lies in (−Σ w, 0]. Checked where the kernel's s64 sum holds the exact
        // Σ w·(v − zero_vruntime) (where it would wrap, the kernel's V wraps too). In full
        // checks only: with the sums matched above, this tests `avg_vruntime`'s rounding rather
        // than state an event left behind, at the price of two divisions. (Read through
        // `Fair`: `avg_vruntime_peek` and the eligibility test are `&self`.)
        if counts.is_some()
            && let (Ok(num), Ok(total_w)) = (i64::try_from(walk.num), i64::try_from(walk.total_w))
            && total_w > 0
        {
            let v = f.avg_vruntime_peek().wrapping_sub(v0) as i64;
            if v != num.div_euclid(total_w) {
                let lag_sum = i128::from(v) * i128::from(total_w) - walk.num;
                return fail(format!("weighted lag sum {lag_sum} outside (-{total_w}, 0]"));
            }
        }
        // Somebody is always eligible (the weighted mean has an entity at or below it). The
        // test is monotone in the key, so the entity with the smallest key decides.
        if !f.vruntime_eligible(v0.wrapping_add(min_key as u64)) {
            return fail("no queued entity is eligible".into());
        }
        Ok(())
    }
}

/// Adds one queued grouped task to a CPU's per-group tally: its load to its own group, and
/// one queued (and, unless delayed, runnable) task to that group and every ancestor below
/// the root; an idle one (SCHED_IDLE, or below an idle group under the level) to the idle
/// counts.
fn add_grouped(tally: &mut [GroupTally], groups: &Groups, se: &crate::fair::SchedEntity) {
    tally[se.group as usize].2 += se.load_weight;
    let mut g = se.group;
    let mut idle = se.policy == Policy::Idle;
    while g != 0 {
        let c = &mut tally[g as usize];
        c.0 += 1;
        c.1 += u32::from(!se.sched_delayed);
        c.3 += u32::from(idle);
        idle |= groups.spec(g).idle;
        g = groups.spec(g).parent;
    }
}

/// One CPU's task-group accounting against its tally (`add_grouped` per queued grouped task;
/// consumed: the child groups' entity weights are added to their parents' slots) and the
/// queued grouped tasks' own weights `grouped_w`.
fn check_cpu_groups(
    groups: &Groups,
    cpu: u32,
    now: u64,
    tally: &mut [GroupTally],
    grouped_w: u64,
    rqs: &[super::Rq],
) -> Result<(), InvariantViolation> {
    // Children's entities, parents come before children: walk backwards. Slot 0 collects the
    // top-level entities, the root's share of load from groups.
    for g in (1..groups.len() as u32).rev() {
        let rq = groups.rq(cpu, g);
        let parent = groups.spec(g).parent;
        tally[parent as usize].2 += rq.contrib;
        let (queued, runnable, load, idle) = tally[g as usize];
        let name = &groups.spec(g).name;
        let fail =
            |what: String| Err(InvariantViolation { at_ns: now, what: format!("CPU {cpu}: group {name}: {what}") });
        if (rq.h_nr_queued, rq.h_nr_runnable, rq.h_nr_idle) != (queued, runnable, idle) {
            return fail(format!(
                "h_nr_queued/h_nr_runnable/h_nr_idle {}/{}/{} but its tasks give {queued}/{runnable}/{idle}",
                rq.h_nr_queued, rq.h_nr_runnable, rq.h_nr_idle
            ));
        }
        if rq.load_weight != load {
            return fail(format!("load {} but its queued members weigh {load}", rq.load_weight));
        }
        let entity_queued = if groups.is_hierarchy() { rq.queued } else { queued > 0 };
        if rq.contrib != if entity_queued { rq.se_weight } else { 0 } {
            return fail(format!("adds {} to its parent with entity weight {}", rq.contrib, rq.se_weight));
        }
    }
    // The load hierarchy's root (`fair/group_pelt.rs`): `load.weight` is the root-group tasks'
    // weights plus the top-level group entities'.
    let fail = |what: String| Err(InvariantViolation { at_ns: now, what: format!("CPU {cpu}: root group: {what}") });
    let (top, flat) = (tally[0].2, rqs[cpu as usize].cfs.load_weight);
    if groups.rq(cpu, 0).load_weight != top {
        return fail(format!(
            "group entities weigh {} but its queued groups give {top}",
            groups.rq(cpu, 0).load_weight
        ));
    }
    if groups.grouped_task_weight(cpu) != grouped_w {
        return fail(format!(
            "grouped tasks weigh {} but the queued ones give {grouped_w}",
            groups.grouped_task_weight(cpu)
        ));
    }
    let Some(own) = flat.checked_sub(grouped_w) else {
        return fail(format!("flat load {flat} below its grouped tasks' {grouped_w}"));
    };
    let want = own + top;
    if groups.root_load_weight(cpu, flat) != want {
        return fail(format!("hierarchy load {} but its members weigh {want}", groups.root_load_weight(cpu, flat)));
    }
    Ok(())
}

impl Sim {
    /// `curr` of level `g`'s runqueue on `cpu` (the root's without ≤7.2's levels).
    fn level_curr(&self, cpu: u32, g: u32) -> Option<TaskId> {
        if self.gents.is_empty() || g == 0 {
            return self.rqs[cpu as usize].cfs.curr;
        }
        let n = self.groups.as_ref().map_or(1, |gr| gr.len());
        self.gcfs[cpu as usize * n + g as usize].curr
    }

    /// The invariants of one CPU's runqueues on ≤7.2's levels (`fair/hier.rs`): the running
    /// task is at the end of the levels' `curr` chain; the root keeps the flat counts of every
    /// task of the CPU; on every level each queued entity is in its tree or its `curr`, the
    /// tree's copies and sums match, `nr_queued` counts them, the weighted lags sum to zero
    /// and someone is eligible, the next buddy is a queued non-delayed member; a group
    /// runqueue's `load.weight` is the sum of its queued entities' weights (tasks' own,
    /// child groups' entities'); a group's entity is queued exactly while its runqueue holds
    /// entities or it is delayed (then its runqueue is empty), and while queued its weight is
    /// what `update_cfs_group()` gave it.
    fn check_rq_hier(&mut self, cpu: u32, counts: Option<(u32, u32, u64)>) -> Result<(), InvariantViolation> {
        let now = self.now;
        let fail = |what: String| Err(InvariantViolation { at_ns: now, what: format!("CPU {cpu}: {what}") });
        let curr = self.cfs_curr_task(cpu);
        let rq = &self.rqs[cpu as usize];
        if rq.curr != curr {
            return fail(format!("rq.curr {:?} != the levels' curr {curr:?}", rq.curr));
        }
        if let Some((q, r, l)) = counts
            && (q, r, l) != (rq.cfs.h_nr_queued, rq.cfs.h_nr_runnable, rq.cfs.load_weight)
        {
            return fail(format!(
                "counts (queued, runnable, load) = ({q}, {r}, {l}) but the root has ({}, {}, {})",
                rq.cfs.h_nr_queued, rq.cfs.h_nr_runnable, rq.cfs.load_weight
            ));
        }
        let Some(groups) = self.groups.as_ref() else { return Ok(()) };
        let n = groups.len();
        let base = cpu as usize * n;
        let full = self.params.behavior.avg_full_weight;
        for l in 0..n as u32 {
            let cfs = if l == 0 { &self.rqs[cpu as usize].cfs } else { &self.gcfs[base + l as usize] };
            let ent = |id: u32| -> &crate::fair::SchedEntity {
                match crate::fair::hier::se_group(TaskId(id)) {
                    Some(g) => &self.gents[base + g as usize],
                    None => &self.ents[id as usize],
                }
            };
            let name = &groups.spec(l).name;
            let lfail = |what: String| fail(format!("level {name}: {what}"));
            let curr_queued = cfs.curr.filter(|c| ent(c.0).on_rq);
            let (mut sum_w, mut sum_wv, mut load, mut members) = (0u64, 0i64, 0u64, 0u32);
            for k in cfs.timeline.iter().chain(curr_queued.map(|c| {
                let se = ent(c.0);
                crate::fair::tree::NodeKey { id: c.0, deadline: se.deadline, vruntime: se.vruntime, slice: se.slice }
            })) {
                let se = ent(k.id);
                members += 1;
                load += se.load_weight;
                if se.group != l || !se.on_rq {
                    return lfail(format!(
                        "entity {:#x} (group {}, on_rq {}) is queued here",
                        k.id, se.group, se.on_rq
                    ));
                }
                if crate::fair::hier::se_group(TaskId(k.id)).is_none() && self.tasks[k.id as usize].cpu != cpu {
                    return lfail(format!("task {} of CPU {} is queued here", k.id, self.tasks[k.id as usize].cpu));
                }
                if curr_queued == Some(TaskId(k.id)) {
                    continue;
                }
                if !se.in_tree || cfs.curr == Some(TaskId(k.id)) {
                    return lfail(format!(
                        "entity {:#x} in the tree: in_tree {}, curr {:?}",
                        k.id, se.in_tree, cfs.curr
                    ));
                }
                if (se.vruntime, se.deadline, se.slice) != (k.vruntime, k.deadline, k.slice) {
                    return lfail(format!("tree copy of entity {:#x} is stale", k.id));
                }
                let w = if full { se.h_weight } else { crate::fair::weight::scale_load_down(se.h_weight) };
                sum_w += w;
                sum_wv =
                    sum_wv.wrapping_add((se.vruntime.wrapping_sub(cfs.zero_vruntime) as i64).wrapping_mul(w as i64));
            }
            if (sum_w, sum_wv) != (cfs.sum_weight, cfs.sum_w_vruntime) {
                return lfail(format!(
                    "avg_vruntime sums ({sum_w}, {sum_wv}) != ({}, {})",
                    cfs.sum_weight, cfs.sum_w_vruntime
                ));
            }
            if members != cfs.nr_queued {
                return lfail(format!("nr_queued {} but {members} entities are queued", cfs.nr_queued));
            }
            if l != 0 && groups.rq(cpu, l).load_weight != load {
                return lfail(format!("load {} but its queued entities weigh {load}", groups.rq(cpu, l).load_weight));
            }
            if let Some(nx) = cfs.next {
                let se = ent(nx.0);
                if !se.on_rq || se.sched_delayed || se.group != l {
                    return lfail(format!("next buddy {:#x} is not a queued, non-delayed entity here", nx.0));
                }
            }
            if l != 0 {
                let gse = &self.gents[base + l as usize];
                let grq = groups.rq(cpu, l);
                let ok = if gse.sched_delayed { gse.on_rq && members == 0 } else { gse.on_rq == (members > 0) };
                if !ok {
                    return lfail(format!(
                        "group entity on_rq {} delayed {} with {members} entities queued below",
                        gse.on_rq, gse.sched_delayed
                    ));
                }
                if grq.queued != gse.on_rq || (grq.queued && grq.se_weight != gse.load_weight) {
                    return lfail(format!(
                        "group entity weight {} on_rq {}, but the group has {} queued {}",
                        gse.load_weight, gse.on_rq, grq.se_weight, grq.queued
                    ));
                }
            }
        }
        // The lag sum and eligibility of every level, read through `Fair` (`&self` tests).
        for l in 0..n as u32 {
            let (cfs, gents): (&mut crate::fair::CfsRq, &mut [crate::fair::SchedEntity]) = if l == 0 {
                (&mut self.rqs[cpu as usize].cfs, &mut self.gents[base..base + n])
            } else {
                (&mut self.gcfs[base + l as usize], &mut self.gents[base..base + n])
            };
            let mut f = Fair::new(cfs, &mut self.ents, &self.params, now);
            f.gents = gents;
            let curr_queued = f.cfs.curr.filter(|&c| f.entity_of(c).on_rq);
            let members: Vec<TaskId> = f.cfs.timeline.iter().map(|k| TaskId(k.id)).chain(curr_queued).collect();
            if members.is_empty() {
                continue;
            }
            let w_of = |t: TaskId| -> i128 {
                let h = f.entity_of(t).h_weight;
                if full { h as i128 } else { crate::fair::weight::scale_load_down(h) as i128 }
            };
            let total_w: i128 = members.iter().map(|&t| w_of(t)).sum();
            let v0 = f.cfs.zero_vruntime;
            let key = |t: TaskId| f.entity_of(t).vruntime.wrapping_sub(v0) as i64 as i128;
            let num: i128 = members.iter().map(|&t| w_of(t) * key(t)).sum();
            let v = num.div_euclid(total_w);
            let lag_sum: i128 = members.iter().map(|&t| w_of(t) * (v - key(t))).sum();
            let name = &groups_name(self.groups.as_ref(), l);
            if lag_sum > 0 || lag_sum <= -total_w {
                return fail(format!("level {name}: weighted lag sum {lag_sum} outside (-{total_w}, 0]"));
            }
            if !members.iter().any(|&t| f.entity_eligible(t)) {
                return fail(format!("level {name}: no queued entity is eligible"));
            }
        }
        Ok(())
    }
}

fn groups_name(groups: Option<&crate::fair::group::Groups>, l: u32) -> String {
    groups.map_or_else(String::new, |g| g.spec(l).name.clone())
}

#[cfg(test)]
mod tests {
    use crate::config::{Limits, SchedConfig};
    use crate::engine::{Sim, SimSetup};
    use crate::fair::group::GroupSpec;
    use crate::program::{Op, TaskSpec};
    use crate::topology::Topology;

    fn hog(i: u32) -> TaskSpec {
        TaskSpec::new(
            format!("hog{i}"),
            vec![Op::Run { ns: 3_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }],
        )
    }

    fn setup(tasks: Vec<TaskSpec>, groups: Vec<GroupSpec>, max_events: u64) -> SimSetup {
        SimSetup {
            sched: SchedConfig::v7_3(),
            topology: Topology::smp(4),
            seed: 3,
            limits: Limits { max_events, max_time_ns: u64::MAX },
            tasks,
            objects: vec![],
            check_invariants: true,
            groups,
        }
    }

    /// Runs for 30 ms with a partial check after every event.
    fn run_30ms(setup: SimSetup) -> Sim {
        let mut s = Sim::new(setup).expect("valid setup");
        while s.queue.peek_time().is_some_and(|t| t.0 <= 30_000_000) {
            let (at, ev) = s.queue.pop().expect("peeked");
            s.now = at.0;
            s.dispatch(ev);
            s.check_touched().expect("a consistent state");
        }
        s.check_invariants().expect("a consistent state");
        s
    }

    /// `n` hogs on 4 CPUs, run for 30 ms.
    fn running_sim(n: u32) -> Sim {
        run_30ms(setup((0..n).map(hog).collect(), Vec::new(), u64::MAX))
    }

    /// A corrupted count is found by the full check, and by the partial one once the CPU is
    /// touched, but not by a partial check of other CPUs.
    #[test]
    fn wrong_queued_count_is_caught_on_touched_cpu() {
        let mut s = running_sim(4);
        s.rqs[2].cfs.h_nr_queued += 1;
        assert!(s.check_invariants().unwrap_err().what.starts_with("CPU 2: counts"));
        s.touch(1);
        assert!(s.check_touched().is_ok());
        s.touch(2);
        assert!(s.check_touched().unwrap_err().what.starts_with("CPU 2: counts"));
        // The touched set is emptied by every check.
        assert!(s.touched.is_empty() && s.is_touched.iter().all(|&t| !t));
    }

    /// A task that is current on a CPU it does not belong to is found by the full check.
    #[test]
    fn current_on_foreign_cpu_is_caught() {
        let mut s = running_sim(4);
        let t = s.rqs[0].curr.expect("a hog runs on CPU 0");
        s.tasks[t.idx()].cpu = 1;
        assert!(s.check_invariants().is_err());
    }

    /// A stale tree copy is found by the partial check of its CPU (five hogs on four CPUs:
    /// one CPU has a waiting task in its tree).
    #[test]
    fn stale_tree_copy_is_caught() {
        let mut s = running_sim(5);
        let cpu = (0..4).find(|&c| s.rqs[c].cfs.timeline.iter().next().is_some()).expect("a CPU with two hogs");
        let id = s.rqs[cpu].cfs.timeline.iter().next().expect("found above").id;
        s.ents[id as usize].deadline += 1;
        s.touch(cpu as u32);
        assert!(s.check_touched().unwrap_err().what.contains("stale"));
    }

    /// A group runqueue's count that disagrees with the tasks queued on its CPU is found by
    /// the partial check of that CPU (its task groups are checked with it), not of another.
    #[test]
    fn wrong_group_count_is_caught_on_touched_cpu() {
        let groups =
            ["/a", "/b"].map(|name| GroupSpec { name: name.into(), parent: 0, shares: 1024 << 10, idle: false });
        let tasks = (0..6)
            .map(|i| {
                let mut t = hog(i);
                t.group = 1 + i % 2;
                t
            })
            .collect();
        let mut s = run_30ms(setup(tasks, groups.to_vec(), u64::MAX));
        let g = s.groups.as_mut().expect("two groups");
        // One queued task too many in group /a on CPU 1 (load and weights unchanged).
        g.account(1, 1, 0, 1, 0, false);
        s.touch(0);
        assert!(s.check_touched().is_ok());
        s.touch(1);
        let err = s.check_touched().unwrap_err().what;
        assert!(err.starts_with("CPU 1: group /a: h_nr_queued"), "{err}");
        assert!(s.check_invariants().unwrap_err().what.starts_with("CPU 1: group /a"));
    }

    /// A fault that only the full check sees (a task's state, not a runqueue's) in a run that
    /// ends before its first periodic full check is still found: by the check at the end.
    #[test]
    fn run_ends_with_a_full_check() {
        let mut late = hog(9);
        late.start_ns = 1_000_000_000;
        let tasks = vec![hog(0), hog(1), late];
        let mut s = Sim::new(setup(tasks.clone(), Vec::new(), 10)).expect("valid setup");
        // The late task is not forked within 10 events; nothing reads its entity before then.
        s.ents[2].sched_delayed = true;
        let err = s.run().unwrap_err().what;
        assert!(err.contains("task 2 delayed but not queued"), "{err}");
        // Unbroken, the same 10 events pass.
        assert!(Sim::new(setup(tasks, Vec::new(), 10)).expect("valid setup").run().is_ok());
    }
}
