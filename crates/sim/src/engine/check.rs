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
    pub(super) fn check_invariants(&mut self) -> Result<(), InvariantViolation> {
        let now = self.now;
        let fail = |what: String| Err(InvariantViolation { at_ns: now, what });
        // Each queued task is in exactly one place: curr of its CPU's cfs_rq or in its tree.
        for (i, (task, se)) in self.tasks.iter().zip(&self.ents).enumerate() {
            let t = TaskId(i as u32);
            let rq = &self.rqs[task.cpu as usize];
            let is_curr = rq.cfs.curr == Some(t);
            if se.on_rq && (is_curr == se.in_tree) {
                return fail(format!("task {i} queued but curr={is_curr} in_tree={}", se.in_tree));
            }
            if !se.on_rq && se.in_tree {
                return fail(format!("task {i} in a tree but not queued"));
            }
            for (c, other) in self.rqs.iter().enumerate() {
                if c as u32 != task.cpu && (other.cfs.curr == Some(t) || other.curr == Some(t)) {
                    return fail(format!("task {i} is current on CPU {c} but belongs to CPU {}", task.cpu));
                }
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
        }
        for cpu in 0..self.rqs.len() as u32 {
            self.check_rq(cpu)?;
        }
        Ok(())
    }

    fn check_rq(&mut self, cpu: u32) -> Result<(), InvariantViolation> {
        let now = self.now;
        let fail = |what: String| Err(InvariantViolation { at_ns: now, what: format!("CPU {cpu}: {what}") });
        let rq = &self.rqs[cpu as usize];
        if rq.curr != rq.cfs.curr && !(rq.curr.is_none() && rq.cfs.curr.is_none()) {
            return fail(format!("rq.curr {:?} != cfs.curr {:?}", rq.curr, rq.cfs.curr));
        }
        let mut queued = 0u32;
        let mut runnable = 0u32;
        let mut load = 0u64;
        for (i, (task, se)) in self.tasks.iter().zip(&self.ents).enumerate() {
            if task.cpu == cpu && se.on_rq {
                queued += 1;
                runnable += u32::from(!se.sched_delayed);
                load += se.load_weight;
            }
            if se.in_tree && task.cpu != cpu && rq.cfs.timeline.iter().any(|k| k.id == i as u32) {
                return fail(format!("task {i} of CPU {} is in this tree", task.cpu));
            }
        }
        let cfs = &rq.cfs;
        if (queued, runnable, load) != (cfs.h_nr_queued, cfs.h_nr_runnable, cfs.load_weight) {
            return fail(format!(
                "counts (queued, runnable, load) = ({queued}, {runnable}, {load}) but cfs_rq has ({}, {}, {})",
                cfs.h_nr_queued, cfs.h_nr_runnable, cfs.load_weight
            ));
        }
        if let Some(c) = cfs.curr
            && cfs.timeline.iter().any(|k| k.id == c.0)
        {
            return fail("the running entity is in the tree".into());
        }
        if let Some(n) = cfs.next {
            let se = &self.ents[n.idx()];
            if !se.on_rq || se.sched_delayed || self.tasks[n.idx()].cpu != cpu {
                return fail(format!("next buddy {} is not a queued, non-delayed task of this CPU", n.0));
            }
        }
        // The tree's copies match the entities, and the avg_vruntime sums match the tree.
        let mut sum_w = 0u64;
        let mut sum_wv = 0i64;
        let mut view_sums = |k: crate::fair::tree::NodeKey, ents: &[crate::fair::SchedEntity]| -> Result<(), String> {
            let se = &ents[k.id as usize];
            if (se.vruntime, se.deadline, se.slice) != (k.vruntime, k.deadline, k.slice) {
                return Err(format!("tree copy of task {} is stale", k.id));
            }
            let w = if self.params.behavior.avg_full_weight {
                se.h_weight
            } else {
                crate::fair::weight::scale_load_down(se.h_weight)
            };
            sum_w += w;
            sum_wv = sum_wv.wrapping_add((se.vruntime.wrapping_sub(cfs.zero_vruntime) as i64).wrapping_mul(w as i64));
            Ok(())
        };
        for k in cfs.timeline.iter() {
            if let Err(e) = view_sums(k, &self.ents) {
                return fail(e);
            }
        }
        if (sum_w, sum_wv) != (cfs.sum_weight, cfs.sum_w_vruntime) {
            return fail(format!(
                "avg_vruntime sums ({sum_w}, {sum_wv}) != cfs_rq ({}, {})",
                cfs.sum_weight, cfs.sum_w_vruntime
            ));
        }
        // The weighted lag of the queued entities sums to zero, up to V's rounding: with
        // V = floor(Σ w·v / Σ w), Σ w·(V − v) lies in (−Σ w, 0].
        let params = self.params.clone();
        let mut cfs_copy = self.rqs[cpu as usize].cfs.clone();
        let f = Fair::new(&mut cfs_copy, &mut self.ents, &params, now);
        let members: Vec<TaskId> =
            f.cfs.timeline.iter().map(|k| TaskId(k.id)).chain(f.cfs.curr.filter(|c| f.ents[c.idx()].on_rq)).collect();
        if !members.is_empty() {
            let w_of = |t: TaskId| -> i128 {
                if params.behavior.avg_full_weight {
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
        }
        Ok(())
    }
}
