//! The invariant checker: after any event, the whole scheduler state must be consistent.
//! It recomputes every aggregate from scratch, so it is slow and meant for tests and
//! `--check` runs.

use std::fmt;

use super::Sim;
use crate::fair::Fair;
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

impl Sim {
    /// Checks every invariant; the first violation found is returned.
    ///
    /// Linear in tasks + CPUs + queued entities: the per-CPU counts are tallied in one pass
    /// over the tasks, and each tree is walked once, so `--check` stays usable on machines
    /// with hundreds of CPUs.
    pub(super) fn check_invariants(&mut self) -> Result<(), InvariantViolation> {
        let now = self.now;
        let fail = |what: String| Err(InvariantViolation { at_ns: now, what });
        // Per CPU: (queued, runnable, load) of the tasks that belong to it.
        let mut tally = vec![(0u32, 0u32, 0u64); self.rqs.len()];
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
            }
        }
        // No task is current on a CPU it does not belong to.
        for (c, rq) in self.rqs.iter().enumerate() {
            for t in [self.cfs_curr_task(c as u32), rq.curr].into_iter().flatten() {
                let owner = self.tasks[t.idx()].cpu;
                if owner as usize != c {
                    return fail(format!("task {} is current on CPU {c} but belongs to CPU {owner}", t.0));
                }
            }
        }
        self.clear_touched();
        for cpu in 0..self.rqs.len() as u32 {
            self.check_rq(cpu, Some(tally[cpu as usize]))?;
        }
        self.check_groups()
    }

    /// The task groups: every group runqueue's load is the sum of its queued members' weights
    /// (its own queued tasks' load weights and its queued child groups' entity weights), and
    /// `h_nr_queued`/`h_nr_runnable` count the queued and runnable tasks of the group and its
    /// descendants on that CPU. A pass over the tasks, then one over the groups child first.
    fn check_groups(&self) -> Result<(), InvariantViolation> {
        let Some(groups) = &self.groups else { return Ok(()) };
        let now = self.now;
        let n = groups.len();
        // Per (cpu, group): (queued, runnable, own tasks' load).
        let mut tally = vec![(0u32, 0u32, 0u64); n * self.rqs.len()];
        for (task, se) in self.tasks.iter().zip(&self.ents) {
            if !se.on_rq || se.group == 0 {
                continue;
            }
            let base = task.cpu as usize * n;
            tally[base + se.group as usize].2 += se.load_weight;
            let mut g = se.group;
            while g != 0 {
                let c = &mut tally[base + g as usize];
                c.0 += 1;
                c.1 += u32::from(!se.sched_delayed);
                g = groups.spec(g).parent;
            }
        }
        // Per CPU: the queued grouped tasks' own weights, which the root holds as entities.
        let mut grouped_w = vec![0u64; self.rqs.len()];
        for (task, se) in self.tasks.iter().zip(&self.ents) {
            if se.on_rq && se.group != 0 {
                grouped_w[task.cpu as usize] += se.load_weight;
            }
        }
        for cpu in 0..self.rqs.len() as u32 {
            let base = cpu as usize * n;
            // Children's entities, parents come before children: walk backwards. Slot 0
            // collects the top-level entities, the root's share of load from groups.
            for g in (1..n as u32).rev() {
                let rq = groups.rq(cpu, g);
                let parent = groups.spec(g).parent;
                tally[base + parent as usize].2 += rq.contrib;
                let (queued, runnable, load) = tally[base + g as usize];
                let name = &groups.spec(g).name;
                let fail = |what: String| {
                    Err(InvariantViolation { at_ns: now, what: format!("CPU {cpu}: group {name}: {what}") })
                };
                if (rq.h_nr_queued, rq.h_nr_runnable) != (queued, runnable) {
                    return fail(format!(
                        "h_nr_queued/h_nr_runnable {}/{} but its tasks give {queued}/{runnable}",
                        rq.h_nr_queued, rq.h_nr_runnable
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
            // The load hierarchy's root (`fair/group_pelt.rs`): `load.weight` is the
            // root-group tasks' weights plus the top-level group entities'.
            let fail =
                |what: String| Err(InvariantViolation { at_ns: now, what: format!("CPU {cpu}: root group: {what}") });
            let (top, flat) = (tally[base].2, self.rqs[cpu as usize].cfs.load_weight);
            if groups.rq(cpu, 0).load_weight != top {
                return fail(format!(
                    "group entities weigh {} but its queued groups give {top}",
                    groups.rq(cpu, 0).load_weight
                ));
            }
            if groups.grouped_task_weight(cpu) != grouped_w[cpu as usize] {
                return fail(format!(
                    "grouped tasks weigh {} but the queued ones give {}",
                    groups.grouped_task_weight(cpu),
                    grouped_w[cpu as usize]
                ));
            }
            let Some(own) = flat.checked_sub(grouped_w[cpu as usize]) else {
                return fail(format!("flat load {flat} below its grouped tasks' {}", grouped_w[cpu as usize]));
            };
            let want = own + top;
            if groups.root_load_weight(cpu, flat) != want {
                return fail(format!(
                    "hierarchy load {} but its members weigh {want}",
                    groups.root_load_weight(cpu, flat)
                ));
            }
        }
        Ok(())
    }

    /// The invariants of the runqueues the last event touched (`Sim::touch`), between full
    /// checks: a broken state elsewhere is still caught, at the latest by the next full check.
    pub(super) fn check_touched(&mut self) -> Result<(), InvariantViolation> {
        let touched = std::mem::take(&mut self.touched);
        let mut result = Ok(());
        for &cpu in &touched {
            self.is_touched[cpu as usize] = false;
            if result.is_ok() {
                result = self.check_rq(cpu, None);
            }
        }
        self.touched = touched;
        self.touched.clear();
        result
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
    /// the tree and the running entity stand in.
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
        let (queued, runnable, load) = counts.unwrap_or_else(|| {
            let curr = cfs.curr.filter(|c| self.ents[c.idx()].on_rq).map(|c| c.0);
            cfs.timeline.iter().map(|k| k.id).chain(curr).fold((0, 0, 0), |(q, r, l), id| {
                let se = &self.ents[id as usize];
                (q + 1, r + u32::from(!se.sched_delayed), l + se.load_weight)
            })
        });
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
        // The tree holds only this CPU's tasks, never the running one; the tree's copies
        // match the entities, and the avg_vruntime sums match the tree.
        let mut sum_w = 0u64;
        let mut sum_wv = 0i64;
        for k in cfs.timeline.iter() {
            let se = &self.ents[k.id as usize];
            let owner = self.tasks[k.id as usize].cpu;
            if se.in_tree && owner != cpu {
                return fail(format!("task {} of CPU {owner} is in this tree", k.id));
            }
            if cfs.curr.is_some_and(|c| c.0 == k.id) {
                return fail("the running entity is in the tree".into());
            }
            if (se.vruntime, se.deadline, se.slice) != (k.vruntime, k.deadline, k.slice) {
                return fail(format!("tree copy of task {} is stale", k.id));
            }
            let w = if self.params.behavior.avg_full_weight {
                se.h_weight
            } else {
                crate::fair::weight::scale_load_down(se.h_weight)
            };
            sum_w += w;
            sum_wv = sum_wv.wrapping_add((se.vruntime.wrapping_sub(cfs.zero_vruntime) as i64).wrapping_mul(w as i64));
        }
        if (sum_w, sum_wv) != (cfs.sum_weight, cfs.sum_w_vruntime) {
            return fail(format!(
                "avg_vruntime sums ({sum_w}, {sum_wv}) != cfs_rq ({}, {})",
                cfs.sum_weight, cfs.sum_w_vruntime
            ));
        }
        let curr_queued = cfs.curr.filter(|c| self.ents[c.idx()].on_rq);
        if cfs.timeline.is_empty() && curr_queued.is_none() {
            return Ok(());
        }
        // The weighted lag of the queued entities sums to zero, up to V's rounding: with
        // V = floor(Σ w·v / Σ w), Σ w·(V − v) lies in (−Σ w, 0]. (Only read through `Fair`:
        // the eligibility test is `&self`.)
        let f = Fair::new(&mut self.rqs[cpu as usize].cfs, &mut self.ents, &self.params, now);
        let members: Vec<TaskId> = f.cfs.timeline.iter().map(|k| TaskId(k.id)).chain(curr_queued).collect();
        let w_of = |t: TaskId| -> i128 {
            if f.p.behavior.avg_full_weight {
                f.ents[t.idx()].h_weight as i128
            } else {
                crate::fair::weight::scale_load_down(f.ents[t.idx()].h_weight) as i128
            }
        };
        let total_w: i128 = members.iter().map(|&t| w_of(t)).sum();
        let v0 = f.cfs.zero_vruntime;
        let num: i128 =
            members.iter().map(|&t| w_of(t) * (f.ents[t.idx()].vruntime.wrapping_sub(v0) as i64 as i128)).sum();
        let v = num.div_euclid(total_w);
        let lag_sum: i128 =
            members.iter().map(|&t| w_of(t) * (v - f.ents[t.idx()].vruntime.wrapping_sub(v0) as i64 as i128)).sum();
        if lag_sum > 0 || lag_sum <= -total_w {
            return fail(format!("weighted lag sum {lag_sum} outside (-{total_w}, 0]"));
        }
        // Somebody is always eligible (the weighted mean has an entity at or below it).
        if !members.iter().any(|&t| f.entity_eligible(t)) {
            return fail("no queued entity is eligible".into());
        }
        Ok(())
    }
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
    use crate::program::{Op, TaskSpec};
    use crate::topology::Topology;

    /// `n` hogs on 4 CPUs, run for 30 ms with a partial check after every event.
    fn running_sim(n: u32) -> Sim {
        let hog = |i| {
            TaskSpec::new(
                format!("hog{i}"),
                vec![Op::Run { ns: 3_000_000 }, Op::Loop { target: 0, slot: 0, count: u32::MAX }],
            )
        };
        let setup = SimSetup {
            sched: SchedConfig::v7_3(),
            topology: Topology::smp(4),
            seed: 3,
            limits: Limits { max_events: u64::MAX, max_time_ns: u64::MAX },
            tasks: (0..n).map(hog).collect(),
            objects: vec![],
            check_invariants: true,
            groups: Vec::new(),
        };
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
}
