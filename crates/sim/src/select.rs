//! Wakeup CPU selection (`select_task_rq_fair()`, kernel/sched/fair.c v7.3.4, spec §5.1–§5.5)
//! for machines whose CPUs share one LLC and have no SMT — the `smp:N` machines of the core
//! model.
//!
//! What is modelled: `record_wakee`/`wake_wide`, `wake_affine_idle` (WA_IDLE, with the 6.16
//! delayed-dequeue fix as a toggle), `select_idle_sibling` steps target → prev → recent_used_cpu
//! → LLC scan, and the fork slow path's idlest-CPU choice. Not yet modelled (they need PELT and
//! sched domains): `wake_affine_weight`, SIS_UTIL scan depth, SMT/idle-core search, multi-LLC
//! and NUMA. Until then an undecided `wake_affine` keeps the previous CPU and the LLC scan is
//! unbounded.

use crate::task::{Task, TaskId};
use crate::topology::Topology;

/// The per-CPU facts CPU selection reads, captured at the wakeup.
pub struct RqView {
    cpus: Vec<CpuFacts>,
}

/// What CPU selection reads of one runqueue.
#[derive(Clone, Copy, Debug)]
pub struct CpuFacts {
    /// The idle task is running.
    pub idle: bool,
    /// `rq->nr_running`, including delayed fair entities.
    pub nr_running: u32,
    /// `cfs_h_nr_delayed()`.
    pub nr_delayed: u32,
    /// `rq->ttwu_pending`.
    pub ttwu_pending: bool,
}

impl RqView {
    pub fn new(cpus: Vec<CpuFacts>) -> RqView {
        RqView { cpus }
    }
    /// `available_idle_cpu()` (fair.c v7.3.4): idle task running, nothing queued or pending.
    pub fn available_idle(&self, cpu: u32) -> bool {
        let c = self.cpus[cpu as usize];
        c.idle && c.nr_running == 0 && !c.ttwu_pending
    }
    pub fn nr_running(&self, cpu: u32) -> u32 {
        self.cpus[cpu as usize].nr_running
    }
    pub fn nr_delayed(&self, cpu: u32) -> u32 {
        self.cpus[cpu as usize].nr_delayed
    }
}

/// Where a wakee goes, and whether `wake_affine` was tried and chose the waker's CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub cpu: u32,
    pub affine_attempt: bool,
    pub affine: bool,
}

/// `record_wakee()` (fair.c v7.3.4): on the waker; the flip count halves at most once a second.
pub fn record_wakee(waker: &mut Task, p: TaskId, jiffies: u64, hz: u64) {
    if jiffies > waker.wakee_flip_decay_ts + hz {
        waker.wakee_flips >>= 1;
        waker.wakee_flip_decay_ts = jiffies;
    }
    if waker.last_wakee != Some(p) {
        waker.last_wakee = Some(p);
        waker.wakee_flips += 1;
    }
}

/// `wake_wide()` (fair.c v7.3.4): a 1:N waker whose fan-out exceeds the LLC size goes wide.
pub fn wake_wide(waker_flips: u32, wakee_flips: u32, llc_size: u32) -> bool {
    let (master, slave) = (waker_flips.max(wakee_flips), waker_flips.min(wakee_flips));
    !(slave < llc_size || master < slave.saturating_mul(llc_size))
}

/// `select_task_rq_fair()` for a `WF_TTWU` wakeup (fair.c v7.3.4), single-LLC form.
#[allow(clippy::too_many_arguments)]
pub fn select_task_rq_fair(
    topo: &Topology,
    view: &RqView,
    tasks: &mut [Task],
    p: TaskId,
    prev_cpu: u32,
    this_cpu: u32,
    waker: Option<TaskId>,
    wake_flags: u32,
    jiffies: u64,
    hz: u64,
    wa_idle_ignore_delayed: bool,
) -> Placement {
    let llc_size = topo.llc_cpus(this_cpu).len() as u32;
    let sync = wake_flags & crate::fair::wf::SYNC != 0;
    let (waker_flips, waker_rq_alone) = match waker {
        Some(w) if w != p => {
            record_wakee(&mut tasks[w.idx()], p, jiffies, hz);
            // The sync test of wake_affine_idle(); since 6.16 delayed entities do not count.
            let delayed = if wa_idle_ignore_delayed { view.nr_delayed(this_cpu) } else { 0 };
            (tasks[w.idx()].wakee_flips, view.nr_running(this_cpu) - delayed == 1)
        }
        _ => (0, false),
    };
    let task = &tasks[p.idx()];
    let want_affine = !wake_wide(waker_flips, task.wakee_flips, llc_size) && task.allows(this_cpu);
    let mut placement = Placement { cpu: prev_cpu, affine_attempt: false, affine: false };
    let mut target = prev_cpu;
    if want_affine && this_cpu != prev_cpu && topo.cpus_share_cache(this_cpu, prev_cpu) {
        placement.affine_attempt = true;
        target = wake_affine_idle(view, topo, this_cpu, prev_cpu, sync && waker_rq_alone).unwrap_or(prev_cpu);
        placement.affine = target == this_cpu;
    }
    placement.cpu = select_idle_sibling(topo, view, &mut tasks[p.idx()], prev_cpu, target);
    placement
}

/// `wake_affine_idle()` (fair.c v7.3.4). `sync_alone` is "sync and the waker is the only
/// runnable task on this CPU", computed by the caller with or without delayed entities.
pub fn wake_affine_idle(view: &RqView, topo: &Topology, this_cpu: u32, prev_cpu: u32, sync_alone: bool) -> Option<u32> {
    if view.available_idle(this_cpu) && topo.cpus_share_cache(this_cpu, prev_cpu) {
        return Some(if view.available_idle(prev_cpu) { prev_cpu } else { this_cpu });
    }
    if sync_alone {
        return Some(this_cpu);
    }
    if view.available_idle(prev_cpu) {
        return Some(prev_cpu);
    }
    None
}

/// `select_idle_sibling()` (fair.c v7.3.4), non-SMT single-LLC steps.
pub fn select_idle_sibling(topo: &Topology, view: &RqView, p: &mut Task, prev: u32, target: u32) -> u32 {
    if view.available_idle(target) && p.allows(target) {
        return target;
    }
    if prev != target && topo.cpus_share_cache(prev, target) && view.available_idle(prev) && p.allows(prev) {
        return prev;
    }
    let recent = p.recent_used_cpu;
    p.recent_used_cpu = prev;
    if recent != prev
        && recent != target
        && topo.cpus_share_cache(recent, target)
        && view.available_idle(recent)
        && p.allows(recent)
    {
        return recent;
    }
    let llc = topo.llc_cpus(target);
    let start = llc.iter().position(|&c| c > target).unwrap_or(0);
    for &cpu in llc[start..].iter().chain(&llc[..start]) {
        if cpu != target && p.allows(cpu) && view.available_idle(cpu) {
            return cpu;
        }
    }
    target
}

/// The fork/exec slow path (`sched_balance_find_dst_cpu()`, fair.c v7.3.4) reduced to one
/// group: an idle allowed CPU (the parent's first), else the least loaded, lowest index first.
pub fn find_idlest_cpu(view: &RqView, allowed: &[u32], parent_cpu: u32) -> u32 {
    if allowed.contains(&parent_cpu) && view.available_idle(parent_cpu) {
        return parent_cpu;
    }
    if let Some(&c) = allowed.iter().find(|&&c| view.available_idle(c)) {
        return c;
    }
    *allowed.iter().min_by_key(|&&c| (view.nr_running(c), c)).expect("non-empty allowed set")
}
