//! Wakeup and fork/exec CPU selection (`select_task_rq_fair()`, kernel/sched/fair.c v7.3.4,
//! spec §5.1–§5.6, with the patch toggles §6.4 and §6.5).
//!
//! Pure functions over the runqueues' facts ([`CpuFacts`], read through a [`CpuSource`]: the
//! engine computes them per CPU on demand), the sched domains of [`crate::topology`], the per-LLC
//! shared objects ([`LlcShared`]) and the tasks' wakee bookkeeping. It covers
//! `record_wakee`/`wake_wide`, the domain walk with `want_affine`, `wake_affine` (WA_IDLE,
//! WA_WEIGHT, WA_BIAS), the whole `select_idle_sibling` fast path (SMT idle cores, SIS_UTIL
//! scan depth, clusters, asymmetric capacity) and the fork/exec slow path
//! (`sched_balance_find_dst_cpu`).
//!
//! Everything is a pure function of its arguments: a [`SelectCtx`] (topology, domains, a
//! source of runqueue facts, the per-LLC shared objects, features and version toggles), the
//! task table (for `record_wakee` and `recent_used_cpu`, the only task state selection writes)
//! and a [`Waking`] describing the wakeup. The only other state written is
//! [`LlcShared::has_idle_cores`] (cleared by a failed idle-core scan, set by
//! [`update_idle_core`]) and [`LlcShared::nr_idle_scan`] (by [`update_llc_idle_scan`]).
//!
//! Simplifications (everything else follows the kernel):
//! * No energy model (`find_energy_efficient_cpu` is never taken), no core scheduling
//!   (cookies always match), no vCPU preemption, no uclamp (`util_fits_cpu` is
//!   `fits_capacity`), no NUMA balancing (no preferred node), `sg_imbalanced` is false.
//! * One shared object per LLC: on asymmetric-capacity machines the kernel may attach it to
//!   the `sd_asym_cpucapacity` domain instead; here `select_idle_capacity` reads the target's
//!   LLC object.
//! * The `*_without(p)` figures of the slow path subtract `p_h_load`, `p_util` and
//!   `p_runnable` from the CPU's figures (the kernel subtracts `util_avg` and `util_est`
//!   separately before taking their maximum).
//! * `imb_numa_nr` is reconstructed from the domains (see [`imb_numa_nr`]).
//! * `idle_exit_latency_ns` is always treated as a real idle state (the kernel treats a CPU
//!   without a cpuidle state like one of equal latency, comparing only `idle_stamp`).

use crate::config::Behavior;
use crate::cpumask::CpuMask;
use crate::fair::wf;
use crate::features::{Feature, FeatureSet};
use crate::task::{Task, TaskId};
use crate::topology::{
    Domains, SD_ASYM_CPUCAPACITY, SD_CLUSTER, SD_NUMA, SD_SHARE_CPUCAPACITY, SD_WAKE_AFFINE, SchedDomain, Topology,
};

/// `SCHED_CAPACITY_SCALE`.
const CAPACITY_SCALE: u64 = 1024;
/// `scale_load_down(NICE_0_LOAD)`.
const NICE_0_LOAD_DOWN: u64 = 1024;
/// `NUMA_IMBALANCE_MIN` (fair.c v7.3.4).
const NUMA_IMBALANCE_MIN: u32 = 2;
/// `select_idle_capacity()` ranks (`enum asym_fits_state`, fair.c v7.3.4).
const ASYM_IDLE_COMPLETE_MISFIT: i32 = -3;
const ASYM_IDLE_THREAD_FITS: i32 = -2;
const ASYM_IDLE_THREAD_MISFIT: i32 = 0;
const ASYM_IDLE_CORE_BIAS: i32 = -3;

/// What CPU selection reads of one runqueue, captured when the selection starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuFacts {
    /// The idle task is running (`rq->curr == rq->idle`).
    pub idle: bool,
    /// `rq->nr_running`, including delayed fair entities.
    pub nr_running: u32,
    /// `cfs_h_nr_delayed(rq)` = `h_nr_queued - h_nr_runnable`.
    pub nr_delayed: u32,
    /// `rq->cfs.h_nr_idle`: queued SCHED_IDLE tasks.
    pub nr_idle_policy: u32,
    /// `rq->ttwu_pending`: a queued remote wakeup is in flight.
    pub ttwu_pending: bool,
    /// `cpu_load(rq)` = `rq->cfs.avg.load_avg` (PELT).
    pub cpu_load: u64,
    /// `cpu_util_cfs(cpu)`.
    pub cpu_util: u64,
    /// `cpu_runnable(rq)` = `rq->cfs.avg.runnable_avg`.
    pub cpu_runnable: u64,
    /// `capacity_of(cpu)` = `rq->cpu_capacity` (1024 on symmetric machines).
    pub capacity: u64,
    /// Exit latency of the idle state the CPU sits in; 0 if busy or polling.
    pub idle_exit_latency_ns: u64,
    /// `rq->idle_stamp`: when the CPU went idle.
    pub idle_stamp: u64,
}

impl CpuFacts {
    /// An idle CPU of capacity 1024 with no load, polling (exit latency 0), idle since 0.
    pub const IDLE: CpuFacts = CpuFacts {
        idle: true,
        nr_running: 0,
        nr_delayed: 0,
        nr_idle_policy: 0,
        ttwu_pending: false,
        cpu_load: 0,
        cpu_util: 0,
        cpu_runnable: 0,
        capacity: CAPACITY_SCALE,
        idle_exit_latency_ns: 0,
        idle_stamp: 0,
    };

    /// A CPU running a task, with `nr_running` tasks on its runqueue (`rq->nr_running`,
    /// sched.h v7.3.4) and no PELT figures; [`CpuFacts::IDLE`] otherwise.
    pub const fn busy(nr_running: u32) -> CpuFacts {
        CpuFacts { idle: false, nr_running, ..CpuFacts::IDLE }
    }
}

/// Where CPU selection reads the runqueues: a captured snapshot (tests), or the engine's live
/// runqueues read on demand, since a wakeup looks at a few CPUs, not all of them.
///
/// Besides the whole [`CpuFacts`], narrower reads for what a scan tests on every CPU it
/// passes (idle or not, queued counts, capacity, load): the live source answers them from the
/// runqueue's counters alone, without the load-tracking figures (and, with task groups, the
/// load hierarchy's cache lines) that `facts` computes. Each must equal the same fields of
/// `facts`.
pub trait CpuSource {
    fn facts(&self, cpu: u32) -> CpuFacts;
    fn nr_cpus(&self) -> usize;
    fn occupancy(&self, cpu: u32) -> Occupancy {
        Occupancy::of(&self.facts(cpu))
    }
    fn capacity(&self, cpu: u32) -> u64 {
        self.facts(cpu).capacity
    }
    fn cpu_load(&self, cpu: u32) -> u64 {
        self.facts(cpu).cpu_load
    }
    /// (`idle_exit_latency_ns`, `idle_stamp`).
    fn idle_exit(&self, cpu: u32) -> (u64, u64) {
        let f = self.facts(cpu);
        (f.idle_exit_latency_ns, f.idle_stamp)
    }
}

/// The [`CpuFacts`] fields that say what a CPU runs: the idle tests and queued counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupancy {
    pub idle: bool,
    pub nr_running: u32,
    pub nr_delayed: u32,
    pub nr_idle_policy: u32,
    pub ttwu_pending: bool,
}

impl Occupancy {
    pub fn of(f: &CpuFacts) -> Occupancy {
        Occupancy {
            idle: f.idle,
            nr_running: f.nr_running,
            nr_delayed: f.nr_delayed,
            nr_idle_policy: f.nr_idle_policy,
            ttwu_pending: f.ttwu_pending,
        }
    }
}

impl CpuSource for Vec<CpuFacts> {
    fn facts(&self, cpu: u32) -> CpuFacts {
        self[cpu as usize]
    }
    fn nr_cpus(&self) -> usize {
        self.len()
    }
}

/// The LLC-wide `struct sched_domain_shared` fields selection uses. One per LLC, indexed
/// by `sd_llc_id`; zero-initialised at domain build like the kernel's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlcShared {
    /// Some core of the LLC may be wholly idle (a hint; see [`update_idle_core`]).
    pub has_idle_cores: bool,
    /// SIS_UTIL scan depth, refreshed by periodic balancing of the LLC domain
    /// ([`update_llc_idle_scan`]). 0 means "do not scan".
    pub nr_idle_scan: i32,
    /// CONFIG_SCHED_CACHE: the LLC's `util_avg` and `capacity` as the last periodic balance of
    /// the domain above it recorded them (`record_sg_llc_stats()`, fair.c 7.3.4); 0 before.
    pub util_avg: u64,
    pub capacity: u64,
}

impl LlcShared {
    /// One zeroed object per LLC of `domains` (index = `sd_llc_id`), as
    /// `init_sched_domain_shared()` (topology.c v7.3.4) leaves them after building the
    /// domains: no idle-core hint and `nr_idle_scan = 0`, i.e. no idle scan until the
    /// first periodic balance of the LLC domain.
    pub fn for_domains(domains: &Domains) -> Vec<LlcShared> {
        let n = (0..domains.nr_cpus()).map(|c| domains.sd_llc_id(c) + 1).max().unwrap_or(0);
        vec![LlcShared::default(); n as usize]
    }
}

/// Everything selection reads besides the tasks: the machine, the runqueues' facts (by CPU,
/// through a [`CpuSource`]), the per-LLC shared objects (indexed by `sd_llc_id`), the
/// feature flags and the version toggles.
pub struct SelectCtx<'a> {
    pub topo: &'a Topology,
    pub domains: &'a Domains,
    pub cpus: &'a dyn CpuSource,
    pub llc: &'a mut [LlcShared],
    pub features: &'a FeatureSet,
    pub behavior: &'a Behavior,
}

/// One call of `select_task_rq(p, prev_cpu, wake_flags)`, with the PELT figures it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waking {
    /// The task being placed.
    pub p: TaskId,
    /// `prev_cpu`: `p->wake_cpu` for a wakeup, `task_cpu(p)` for fork and exec.
    pub prev_cpu: u32,
    /// The CPU the selection runs on (`smp_processor_id()`): the waker's, the forking
    /// parent's, or the exec'ing task's.
    pub this_cpu: u32,
    /// `current` on `this_cpu` if it is a task of the model; `None` for the idle task
    /// (then there is no `record_wakee`, and the waker counts zero flips).
    pub waker: Option<TaskId>,
    /// `WF_*` bits; exactly one of `WF_TTWU`, `WF_FORK`, `WF_EXEC` selects the path.
    pub wake_flags: u32,
    /// `current->flags & PF_EXITING`: cancels `WF_SYNC`.
    pub waker_exiting: bool,
    /// `task_h_load(p)` on p's previous CPU.
    pub p_h_load: u64,
    /// `task_h_load(current)` on `this_cpu` (read only for sync wakeups).
    pub waker_h_load: u64,
    /// `task_util_est(p)` (asymmetric capacity fits, slow-path `cpu_util_without`).
    pub p_util: u64,
    /// `p->se.avg.runnable_avg` (slow-path `cpu_runnable_without`).
    pub p_runnable: u64,
    /// p is SCHED_IDLE (a CPU running only SCHED_IDLE tasks is then not "idle" for it).
    pub p_idle_policy: bool,
    /// `is_per_cpu_kthread(current) && in_task()`. The model has no kthreads: false.
    pub waker_percpu_kthread: bool,
    /// `jiffies` and `HZ`, for `record_wakee`'s once-a-second decay.
    pub jiffies: u64,
    pub hz: u64,
}

impl Waking {
    /// The arguments of `select_task_rq(p, prev_cpu, wake_flags)` (core.c v7.3.4) run on
    /// `this_cpu`, without PELT figures (all loads 0), at jiffy 0 with HZ=250; set the other
    /// fields with struct update syntax.
    pub fn new(p: TaskId, prev_cpu: u32, this_cpu: u32, waker: Option<TaskId>, wake_flags: u32) -> Waking {
        Waking {
            p,
            prev_cpu,
            this_cpu,
            waker,
            wake_flags,
            waker_exiting: false,
            p_h_load: 0,
            waker_h_load: 0,
            p_util: 0,
            p_runnable: 0,
            p_idle_policy: false,
            waker_percpu_kthread: false,
            jiffies: 0,
            hz: 250,
        }
    }
}

/// Which rule of `wake_affine()` (fair.c v7.3.4) decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AffineRule {
    /// WA_IDLE: this CPU idle and cache-affine with prev, prev busy → this CPU.
    IdleThis,
    /// WA_IDLE: this CPU and prev both idle and cache-affine → prev.
    IdleThisPrevIdle,
    /// WA_IDLE: sync wakeup and the waker alone on this CPU → this CPU (§6.4 toggle).
    SyncAlone,
    /// WA_IDLE: prev idle → prev.
    PrevIdle,
    /// WA_WEIGHT: this CPU's effective load is lower → this CPU.
    Weight,
    /// No rule chose: prev.
    Undecided,
}

/// The rule that decided the CPU, for traces and explanations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectReason {
    /// Set by the caller when `nr_cpus_allowed == 1` (no selection ran).
    Pinned,
    /// `WF_CURRENT_CPU` and this CPU is allowed.
    CurrentCpu,
    /// Fork/exec slow path (`sched_balance_find_dst_cpu`).
    SlowPath,
    /// Fork/exec with no domain carrying the balance flag: `prev_cpu`.
    NoBalanceDomain,
    /// §6.5: reciprocal sync pair on a non-SMT machine keeps the waker's CPU.
    SyncReciprocal,
    /// `select_idle_sibling`: the target is idle.
    SisTarget,
    /// `select_idle_sibling`: prev is idle and cache-affine.
    SisPrev,
    /// `select_idle_sibling`: a per-CPU kthread waker stacks the wakee on prev.
    SisKthreadStack,
    /// `select_idle_sibling`: `recent_used_cpu` is idle and cache-affine.
    SisRecent,
    /// `select_idle_capacity` found this CPU (asymmetric capacity).
    SisIdleCapacity(u32),
    /// `select_idle_capacity` found nothing: the target.
    SisCapacityNone,
    /// The target has no LLC domain: the target.
    SisNoLlc,
    /// `select_idle_smt`: an idle SMT sibling of prev.
    SisIdleSmt(u32),
    /// `select_idle_core`: a wholly idle core.
    SisIdleCore(u32),
    /// The idle-core scan found no idle core; an idle thread it passed.
    SisIdleThread(u32),
    /// `select_idle_cpu`: an idle CPU of the LLC within the SIS_UTIL depth.
    SisIdleCpu(u32),
    /// Cluster machines: prev was idle but in another cluster, and nothing better was found.
    SisPrevAff,
    /// Cluster machines: `recent_used_cpu` was idle but in another cluster.
    SisRecentAff,
    /// Nothing idle found: the target.
    SisNone,
}

/// Where the task goes and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub cpu: u32,
    /// `wake_affine()` ran (`nr_wakeups_affine_attempts`).
    pub affine_attempt: bool,
    /// `wake_affine()` chose the waker's CPU (`nr_wakeups_affine`).
    pub affine: bool,
    /// What `wake_affine()` decided on, if it ran.
    pub affine_rule: Option<AffineRule>,
    /// The rule that produced `cpu`.
    pub reason: SelectReason,
}

impl Placement {
    /// The placement of a task allowed on one CPU only: `select_task_rq()` (core.c v7.3.4)
    /// skips the class hook and takes that CPU.
    pub fn pinned(cpu: u32) -> Placement {
        Placement { cpu, affine_attempt: false, affine: false, affine_rule: None, reason: SelectReason::Pinned }
    }
}

/// `record_wakee()` (fair.c v7.3.4), on the waker (`current`): the flip count halves at
/// most once a second, and counts a flip whenever the wakee changes.
pub fn record_wakee(waker: &mut Task, p: TaskId, jiffies: u64, hz: u64) {
    // time_after(jiffies, decay_ts + HZ), wrap-safe as the kernel's.
    if (waker.wakee_flip_decay_ts.wrapping_add(hz).wrapping_sub(jiffies) as i64) < 0 {
        waker.wakee_flips >>= 1;
        waker.wakee_flip_decay_ts = jiffies;
    }
    if waker.last_wakee != Some(p) {
        waker.last_wakee = Some(p);
        waker.wakee_flips = waker.wakee_flips.wrapping_add(1);
    }
}

/// `wake_wide()` (fair.c v7.3.4): wide iff the less flipping partner flips at least
/// `sd_llc_size` times and the other at least `sd_llc_size` times more.
pub fn wake_wide(waker_flips: u32, wakee_flips: u32, llc_size: u32) -> bool {
    let (master, slave) = (waker_flips.max(wakee_flips), waker_flips.min(wakee_flips));
    !(slave < llc_size || master < slave.wrapping_mul(llc_size))
}

/// `select_task_rq_fair()` (fair.c v7.3.4) for `WF_TTWU`, `WF_FORK` and `WF_EXEC`. The
/// caller handles `nr_cpus_allowed == 1` ([`Placement::pinned`]) and, as core.c does, a
/// result outside `p`'s allowed CPUs (`select_fallback_rq`).
///
/// Writes the waker's wakee bookkeeping (`record_wakee`), `p.recent_used_cpu` (fast path)
/// and the target LLC's `has_idle_cores` (cleared when stale).
pub fn select_task_rq_fair(ctx: &mut SelectCtx, tasks: &mut [Task], w: &Waking) -> Placement {
    let domains = ctx.domains;
    let cpu = w.this_cpu;
    let prev_cpu = w.prev_cpu;
    let sync = w.wake_flags & wf::SYNC != 0 && !w.waker_exiting;
    // SD_BALANCE_* and WF_* share the first nibble.
    let sd_flag = w.wake_flags & 0xF;
    let mut new_cpu = prev_cpu;
    let mut want_affine = false;
    let mut placement = Placement {
        cpu: prev_cpu,
        affine_attempt: false,
        affine: false,
        affine_rule: None,
        reason: SelectReason::NoBalanceDomain,
    };

    if w.wake_flags & wf::TTWU != 0 {
        let waker_flips = match w.waker {
            Some(waker) => {
                record_wakee(&mut tasks[waker.idx()], w.p, w.jiffies, w.hz);
                tasks[waker.idx()].wakee_flips
            }
            None => 0,
        };
        let p = &tasks[w.p.idx()];
        if w.wake_flags & wf::CURRENT_CPU != 0 && p.allows(cpu) {
            return Placement { cpu, reason: SelectReason::CurrentCpu, ..placement };
        }
        want_affine = !wake_wide(waker_flips, p.wakee_flips, domains.sd_llc_size(cpu)) && p.allows(cpu);
    }

    let mut sd: Option<usize> = None;
    for (level, tmp) in domains.of(cpu).iter().enumerate() {
        if want_affine && tmp.flags & SD_WAKE_AFFINE != 0 && domains.span_contains(tmp, prev_cpu) {
            if cpu != prev_cpu {
                let (chosen, rule) = ctx.wake_affine(tmp, w, sync);
                new_cpu = chosen;
                placement.affine_attempt = true;
                placement.affine = chosen == cpu;
                placement.affine_rule = Some(rule);
            }
            // Prefer wake_affine over balance flags.
            sd = None;
            break;
        }
        if tmp.flags & sd_flag != 0 {
            sd = Some(level);
        } else if !want_affine {
            break;
        }
    }

    if let Some(level) = sd {
        let chosen = ctx.find_idlest_cpu(&tasks[w.p.idx()], w, level, sd_flag);
        return Placement { cpu: chosen, reason: SelectReason::SlowPath, ..placement };
    }

    // §6.5 (unmerged): keep the waker's CPU for a reciprocal sync pair on non-SMT machines.
    if ctx.behavior.sync_reciprocal_waker_cpu
        && sync
        && want_affine
        && !domains.sched_smt_active()
        && new_cpu == cpu
        && ctx.reciprocal_pair(tasks, w)
    {
        return Placement { cpu, reason: SelectReason::SyncReciprocal, ..placement };
    }

    if w.wake_flags & wf::TTWU != 0 {
        let (chosen, reason) = ctx.select_idle_sibling(&mut tasks[w.p.idx()], w, prev_cpu, new_cpu);
        return Placement { cpu: chosen, reason, ..placement };
    }
    Placement { cpu: new_cpu, ..placement }
}

/// `update_idle_cpu_scan()` (fair.c v7.3.4), the SIS_UTIL scan depth: with
/// `x = sum_util / llc_weight`, `t = min(1024, x²·pct² / (10000·1024))`, the depth is
/// `(1024 - t)·llc_weight / 1024`, all integer.
pub fn update_idle_cpu_scan(sum_util: u64, llc_weight: u32, imbalance_pct: u32) -> i32 {
    if llc_weight == 0 {
        return 0;
    }
    let weight = u64::from(llc_weight);
    let pct = u64::from(imbalance_pct);
    let x = sum_util / weight;
    let tmp = (x.saturating_mul(x).saturating_mul(pct * pct) / (10_000 * CAPACITY_SCALE)).min(CAPACITY_SCALE);
    ((CAPACITY_SCALE - tmp) * weight / CAPACITY_SCALE) as i32
}

/// The `update_idle_cpu_scan()` call of `update_sd_lb_stats()` (fair.c v7.3.4) for the
/// LLC of `cpu`: call it when a periodic (not newidle) balance of `cpu`'s LLC domain
/// gathers its statistics. Sums `cpu_util` over the LLC and stores the depth. No effect
/// without SIS_UTIL or without an LLC domain.
pub fn update_llc_idle_scan(ctx: &mut SelectCtx, cpu: u32) {
    if !ctx.features.has(Feature::SIS_UTIL) {
        return;
    }
    let domains = ctx.domains;
    let Some(sd) = domains.sd_llc(cpu) else { return };
    let sum_util: u64 = domains.span(sd).iter().map(|&c| ctx.cpus.facts(c).cpu_util).sum();
    let nr = update_idle_cpu_scan(sum_util, sd.span_weight, sd.imbalance_pct);
    if let Some(i) = ctx.shared_index(cpu) {
        ctx.llc[i].nr_idle_scan = nr;
    }
}

/// `update_idle_core()` / `__update_idle_core()` (fair.c v7.3.4): when `cpu` switches to
/// its idle task on an SMT machine, set the LLC's `has_idle_cores` if every SMT sibling
/// of `cpu` is idle too (`cpu` itself is not examined).
pub fn update_idle_core(ctx: &mut SelectCtx, cpu: u32) {
    if !ctx.domains.sched_smt_active() || ctx.test_idle_cores(cpu) {
        return;
    }
    if ctx.smt_mask(&cpu).iter().any(|&s| s != cpu && !ctx.available_idle_cpu(s)) {
        return;
    }
    ctx.set_idle_cores(cpu, true);
}

/// `imb_numa_nr` of a NUMA domain of `cpu` as `adjust_numa_imbalance()` (topology.c
/// v7.3.4) sets it before degenerate domains are removed. The parent of `sd_llc` then
/// spans the CPU's node (PKG spans a node, or NODE when PKG is dropped): with `n` LLCs in
/// the node, `imb = n`, or `node_weight / 8` for one LLC (at least 1); levels above get
/// `imb · max(1, span_weight / first_numa_span)`.
pub fn imb_numa_nr(topo: &Topology, domains: &Domains, cpu: u32, sd: &SchedDomain) -> u32 {
    let Some(llc) = domains.sd_llc(cpu) else { return 1 };
    let node = topo.cpus[cpu as usize].node_id;
    let node_weight = topo.cpus.iter().filter(|c| c.node_id == node).count() as u32;
    let nr_llcs = node_weight / llc.span_weight.max(1);
    let imb = if nr_llcs <= 1 { node_weight >> 3 } else { nr_llcs }.max(1);
    let imb_span = domains.sd_numa(cpu).map_or(node_weight, |numa| numa.span_weight).max(1);
    imb * (sd.span_weight / imb_span).max(1)
}

/// Group types of the slow path (`enum group_type`, fair.c v7.3.4), best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GroupType {
    HasSpare,
    FullyBusy,
    MisfitTask,
    // group_smt_balance, group_asym_packing, group_imbalanced and group_llc_balance are
    // never produced by the wakeup statistics of this model.
    Overloaded,
}

/// `struct sg_lb_stats` as `update_sg_wakeup_stats()` (fair.c v7.3.4) fills it.
#[derive(Clone, Copy, Debug)]
struct SgWakeupStats {
    group_load: u64,
    group_util: u64,
    group_runnable: u64,
    group_capacity: u64,
    max_capacity: u64,
    sum_nr_running: u32,
    idle_cpus: u32,
    group_weight: u32,
    misfit: bool,
    group_type: GroupType,
    avg_load: u64,
}

impl<'a> SelectCtx<'a> {
    /// `cpu_rq(cpu)` (sched.h v7.3.4), as captured.
    fn rq(&self, cpu: u32) -> CpuFacts {
        self.cpus.facts(cpu)
    }

    /// The idle tests and queued counts of `cpu_rq(cpu)`, without its load tracking.
    fn occ(&self, cpu: u32) -> Occupancy {
        self.cpus.occupancy(cpu)
    }

    /// `available_idle_cpu()` / `idle_cpu()` (core.c v7.3.4): the idle task runs, nothing
    /// is queued, no wakeup is pending (and the vCPU is not preempted: always true here).
    fn available_idle_cpu(&self, cpu: u32) -> bool {
        let rq = self.occ(cpu);
        rq.idle && rq.nr_running == 0 && !rq.ttwu_pending
    }

    /// `sched_idle_rq()` + `choose_sched_idle_rq()` (fair.c v7.3.4): only SCHED_IDLE
    /// tasks are queued, and p is not SCHED_IDLE itself.
    fn choose_sched_idle_rq(&self, cpu: u32, p_idle_policy: bool) -> bool {
        let rq = self.occ(cpu);
        rq.nr_running == rq.nr_idle_policy && rq.nr_running > 0 && !p_idle_policy
    }

    /// `choose_idle_cpu()` (fair.c v7.3.4).
    fn choose_idle_cpu(&self, cpu: u32, p_idle_policy: bool) -> bool {
        self.available_idle_cpu(cpu) || self.choose_sched_idle_rq(cpu, p_idle_policy)
    }

    /// `capacity_of()` (fair.c v7.3.4).
    fn capacity_of(&self, cpu: u32) -> u64 {
        self.cpus.capacity(cpu)
    }

    /// `cpus_share_cache()` (core.c v7.3.4): equal `sd_llc_id`.
    fn cpus_share_cache(&self, a: u32, b: u32) -> bool {
        a == b || self.domains.sd_llc_id(a) == self.domains.sd_llc_id(b)
    }

    /// `cpus_share_resources()` (core.c v7.3.4): equal `sd_share_id` (cluster or LLC).
    fn cpus_share_resources(&self, a: u32, b: u32) -> bool {
        a == b || self.domains.sd_share_id(a) == self.domains.sd_share_id(b)
    }

    /// `cpu_smt_mask(cpu)` (include/linux/topology.h v7.3.4): the span of the SMT domain
    /// (`SD_SHARE_CPUCAPACITY`), or just the CPU.
    fn smt_mask<'s>(&'s self, cpu: &'s u32) -> &'s [u32] {
        match self.domains.of(*cpu).first() {
            Some(sd) if sd.flags & SD_SHARE_CPUCAPACITY != 0 => self.domains.span(sd),
            _ => std::slice::from_ref(cpu),
        }
    }

    /// `is_core_idle()` (fair.c v7.3.4): every other SMT sibling is idle.
    fn is_core_idle(&self, cpu: u32) -> bool {
        self.smt_mask(&cpu).iter().all(|&s| s == cpu || self.available_idle_cpu(s))
    }

    /// `per_cpu(sd_balance_shared, cpu)` (topology.c v7.3.4): the index of the CPU's LLC
    /// object in `llc`, if it has an LLC domain.
    fn shared_index(&self, cpu: u32) -> Option<usize> {
        self.domains.sd_llc(cpu)?;
        let i = self.domains.sd_llc_id(cpu) as usize;
        (i < self.llc.len()).then_some(i)
    }

    /// `test_idle_cores()` (fair.c v7.3.4).
    fn test_idle_cores(&self, cpu: u32) -> bool {
        self.shared_index(cpu).is_some_and(|i| self.llc[i].has_idle_cores)
    }

    /// `set_idle_cores()` (fair.c v7.3.4).
    fn set_idle_cores(&mut self, cpu: u32, val: bool) {
        if let Some(i) = self.shared_index(cpu) {
            self.llc[i].has_idle_cores = val;
        }
    }

    /// `fits_capacity()` (fair.c v7.3.4): util within 80 % of the capacity.
    fn fits_capacity(util: u64, capacity: u64) -> bool {
        util.saturating_mul(1280) < capacity.saturating_mul(1024)
    }

    /// `util_fits_cpu()` (fair.c v7.3.4) without uclamp: 1 if it fits, else 0.
    fn util_fits_cpu(&self, util: u64, cpu: u32) -> i32 {
        i32::from(Self::fits_capacity(util, self.capacity_of(cpu)))
    }

    /// `asym_fits_cpu()` (fair.c v7.3.4): always true on symmetric machines; otherwise
    /// the task fits and, with SMT, the core is idle.
    fn asym_fits_cpu(&self, util: u64, cpu: u32) -> bool {
        if !self.domains.sched_asym_cpucap_active() {
            return true;
        }
        (!self.domains.sched_smt_active() || self.is_core_idle(cpu)) && self.util_fits_cpu(util, cpu) > 0
    }

    /// `wake_affine()` (fair.c v7.3.4): the waker's CPU if WA_IDLE or WA_WEIGHT pick it,
    /// else prev.
    fn wake_affine(&self, sd: &SchedDomain, w: &Waking, sync: bool) -> (u32, AffineRule) {
        let (this_cpu, prev_cpu) = (w.this_cpu, w.prev_cpu);
        let mut target = None;
        let mut rule = AffineRule::Undecided;
        if self.features.has(Feature::WA_IDLE)
            && let Some((t, r)) = self.wake_affine_idle(this_cpu, prev_cpu, sync)
        {
            target = Some(t);
            rule = r;
        }
        if self.features.has(Feature::WA_WEIGHT) && target.is_none() && self.wake_affine_weight(sd, w, sync) {
            target = Some(this_cpu);
            rule = AffineRule::Weight;
        }
        if target == Some(this_cpu) { (this_cpu, rule) } else { (prev_cpu, rule) }
    }

    /// `wake_affine_idle()` (fair.c v7.3.4). The sync rule counts delayed entities unless
    /// `behavior.wa_idle_ignore_delayed` (6.16+, spec §6.4).
    fn wake_affine_idle(&self, this_cpu: u32, prev_cpu: u32, sync: bool) -> Option<(u32, AffineRule)> {
        if self.available_idle_cpu(this_cpu) && self.cpus_share_cache(this_cpu, prev_cpu) {
            return Some(if self.available_idle_cpu(prev_cpu) {
                (prev_cpu, AffineRule::IdleThisPrevIdle)
            } else {
                (this_cpu, AffineRule::IdleThis)
            });
        }
        if sync {
            let rq = self.occ(this_cpu);
            let delayed = if self.behavior.wa_idle_ignore_delayed { rq.nr_delayed } else { 0 };
            if rq.nr_running.wrapping_sub(delayed) == 1 {
                return Some((this_cpu, AffineRule::SyncAlone));
            }
        }
        if self.available_idle_cpu(prev_cpu) {
            return Some((prev_cpu, AffineRule::PrevIdle));
        }
        None
    }

    /// `wake_affine_weight()` (fair.c v7.3.4), in the kernel's signed 64-bit arithmetic:
    /// true if the waker's CPU would carry less capacity-scaled load than prev, with the
    /// WA_BIAS margin of half the domain's imbalance percentage for prev.
    fn wake_affine_weight(&self, sd: &SchedDomain, w: &Waking, sync: bool) -> bool {
        let (this_cpu, prev_cpu) = (w.this_cpu, w.prev_cpu);
        let mut this_eff_load = self.cpus.cpu_load(this_cpu) as i64;
        if sync {
            let current_load = w.waker_h_load;
            // An unsigned comparison in the kernel; this_eff_load is not negative here.
            if current_load > this_eff_load as u64 {
                return true;
            }
            this_eff_load = this_eff_load.wrapping_sub(current_load as i64);
        }
        let task_load = w.p_h_load as i64;
        this_eff_load = this_eff_load.wrapping_add(task_load);
        if self.features.has(Feature::WA_BIAS) {
            this_eff_load = this_eff_load.wrapping_mul(100);
        }
        this_eff_load = this_eff_load.wrapping_mul(self.capacity_of(prev_cpu) as i64);

        let mut prev_eff_load = (self.cpus.cpu_load(prev_cpu) as i64).wrapping_sub(task_load);
        if self.features.has(Feature::WA_BIAS) {
            let bias = 100 + (i64::from(sd.imbalance_pct) - 100) / 2;
            prev_eff_load = prev_eff_load.wrapping_mul(bias);
        }
        prev_eff_load = prev_eff_load.wrapping_mul(self.capacity_of(this_cpu) as i64);
        if sync {
            prev_eff_load = prev_eff_load.wrapping_add(1);
        }
        this_eff_load < prev_eff_load
    }

    /// The test the unmerged §6.5 patch ("Preserve wake-affine CPU for non-SMT reciprocal
    /// sync wakeups", v5, as the spec reconstructs it) adds to `select_task_rq_fair()`
    /// (fair.c v7.3.4): the waker last woke p and p last woke the waker, the waker is the
    /// only non-delayed task on its CPU, and p fits the CPU. (`record_wakee` has just run,
    /// so the first half always holds.)
    fn reciprocal_pair(&self, tasks: &[Task], w: &Waking) -> bool {
        let Some(waker) = w.waker else { return false };
        let cpu = w.this_cpu;
        let rq = self.occ(cpu);
        tasks[waker.idx()].last_wakee == Some(w.p)
            && tasks[w.p.idx()].last_wakee == Some(waker)
            && rq.nr_running.wrapping_sub(rq.nr_delayed) == 1
            && (!self.domains.sched_asym_cpucap_active() || self.util_fits_cpu(w.p_util, cpu) > 0)
    }

    /// `select_idle_sibling()` (fair.c v7.3.4): target, prev, the per-CPU kthread rule,
    /// `recent_used_cpu` (always updated to prev once reached), the asymmetric-capacity
    /// scan, then the LLC of the target: an idle SMT sibling of prev, then
    /// `select_idle_cpu` (idle cores first while the hint is set), then on cluster
    /// machines the remembered prev or recent CPU, else the target.
    fn select_idle_sibling(&mut self, p: &mut Task, w: &Waking, prev: u32, target: u32) -> (u32, SelectReason) {
        let domains = self.domains;
        let pi = w.p_idle_policy;
        let util = w.p_util;
        let cluster_active = domains.sched_cluster_active();

        if self.choose_idle_cpu(target, pi) && self.asym_fits_cpu(util, target) {
            return (target, SelectReason::SisTarget);
        }

        // If the previous CPU is cache affine and idle, don't be stupid.
        let mut prev_aff = None;
        if prev != target
            && self.cpus_share_cache(prev, target)
            && self.choose_idle_cpu(prev, pi)
            && self.asym_fits_cpu(util, prev)
        {
            if !cluster_active || self.cpus_share_resources(prev, target) {
                return (prev, SelectReason::SisPrev);
            }
            prev_aff = Some(prev);
        }

        // A per-CPU kthread waker (e.g. an IO completion) stacks the wakee on its CPU.
        if w.waker_percpu_kthread
            && prev == w.this_cpu
            && self.occ(w.this_cpu).nr_running <= 1
            && self.asym_fits_cpu(util, prev)
        {
            return (prev, SelectReason::SisKthreadStack);
        }

        let recent = p.recent_used_cpu;
        p.recent_used_cpu = prev;
        let mut recent_aff = None;
        if (recent as usize) < self.cpus.nr_cpus()
            && recent != prev
            && recent != target
            && self.cpus_share_cache(recent, target)
            && self.choose_idle_cpu(recent, pi)
            && p.allows(recent)
            && self.asym_fits_cpu(util, recent)
        {
            if !cluster_active || self.cpus_share_resources(recent, target) {
                return (recent, SelectReason::SisRecent);
            }
            recent_aff = Some(recent);
        }

        if domains.sched_asym_cpucap_active()
            && let Some(sd) = domains.sd_asym_cpucapacity(target)
        {
            return match self.select_idle_capacity(p, w, sd, target) {
                Some(i) => (i, SelectReason::SisIdleCapacity(i)),
                None => (target, SelectReason::SisCapacityNone),
            };
        }

        let Some(sd) = domains.sd_llc(target) else { return (target, SelectReason::SisNoLlc) };

        let mut has_idle_core = false;
        if domains.sched_smt_active() {
            has_idle_core = self.test_idle_cores(target);
            if !has_idle_core
                && self.cpus_share_cache(prev, target)
                && let Some(i) = self.select_idle_smt(p, pi, sd, prev)
            {
                return (i, SelectReason::SisIdleSmt(i));
            }
        }

        if let Some(found) = self.select_idle_cpu(p, pi, sd, has_idle_core, target) {
            return found;
        }
        if let Some(c) = prev_aff {
            return (c, SelectReason::SisPrevAff);
        }
        if let Some(c) = recent_aff {
            return (c, SelectReason::SisRecentAff);
        }
        (target, SelectReason::SisNone)
    }

    /// `select_idle_smt()` (fair.c v7.3.4): an idle allowed SMT sibling of `target`
    /// inside the LLC domain.
    fn select_idle_smt(&self, p: &Task, pi: bool, sd: &SchedDomain, target: u32) -> Option<u32> {
        self.smt_mask(&target).iter().copied().find(|&cpu| {
            cpu != target && p.allows(cpu) && self.domains.span_contains(sd, cpu) && self.choose_idle_cpu(cpu, pi)
        })
    }

    /// `select_idle_cpu()` (fair.c v7.3.4): scan the LLC from `target + 1`, wrapping.
    /// With the idle-core hint every core is examined (`select_idle_core`, not limited
    /// by SIS_UTIL) and a scan that finds none clears the hint; otherwise at most
    /// `nr_idle_scan` CPUs are examined, and `nr_idle_scan == 0` means no scan at all.
    /// On cluster machines the target's cluster is scanned first.
    fn select_idle_cpu(
        &mut self,
        p: &Task,
        pi: bool,
        sd: &SchedDomain,
        has_idle_core: bool,
        target: u32,
    ) -> Option<(u32, SelectReason)> {
        let domains = self.domains;
        let mut nr = i32::MAX;
        if self.features.has(Feature::SIS_UTIL)
            && let Some(i) = self.shared_index(target)
        {
            // Incremented because the scan stops at `--nr <= 0`.
            nr = self.llc[i].nr_idle_scan.saturating_add(1);
            if nr == 1 {
                return None;
            }
        }

        let span = domains.span(sd);
        let mut cpus = CpuSet::new(span, &p.allowed);
        if cpus.is_empty() {
            return None;
        }
        let mut idle_cpu = None;

        if domains.sched_cluster_active() {
            let list = domains.of(target);
            let level = list.iter().position(|d| std::ptr::eq(d, sd));
            let child_is_cluster =
                level.and_then(|l| l.checked_sub(1)).is_some_and(|c| list[c].flags & SD_CLUSTER != 0);
            if child_is_cluster {
                #[allow(clippy::expect_used, reason = "the topology builder gives every domain at least one group")]
                let sg = domains.groups(sd).next().expect("a domain has groups");
                for cpu in wrap(sg, target.wrapping_add(1)) {
                    if !cpus.contains(cpu) {
                        continue;
                    }
                    if has_idle_core {
                        if let Some(i) = self.select_idle_core(pi, cpu, &mut cpus, &mut idle_cpu) {
                            return Some((i, SelectReason::SisIdleCore(i)));
                        }
                    } else {
                        nr -= 1;
                        if nr <= 0 {
                            return None;
                        }
                        if self.choose_idle_cpu(cpu, pi) {
                            return Some((cpu, SelectReason::SisIdleCpu(cpu)));
                        }
                    }
                }
                cpus.remove_all(sg);
            }
        }

        for cpu in wrap(span, target.wrapping_add(1)) {
            if !cpus.contains_span_cpu(cpu) {
                continue;
            }
            if has_idle_core {
                if let Some(i) = self.select_idle_core(pi, cpu, &mut cpus, &mut idle_cpu) {
                    return Some((i, SelectReason::SisIdleCore(i)));
                }
            } else {
                nr -= 1;
                if nr <= 0 {
                    return None;
                }
                if self.choose_idle_cpu(cpu, pi) {
                    idle_cpu = Some(cpu);
                    break;
                }
            }
        }

        if has_idle_core {
            // The hint was stale: no wholly idle core is left in this LLC.
            self.set_idle_cores(target, false);
            return idle_cpu.map(|c| (c, SelectReason::SisIdleThread(c)));
        }
        idle_cpu.map(|c| (c, SelectReason::SisIdleCpu(c)))
    }

    /// `select_idle_core()` (fair.c v7.3.4): `core` if all its SMT siblings are idle.
    /// Remembers in `idle_cpu` the first idle (or SCHED_IDLE-only) allowed thread met,
    /// and removes the core's siblings from `cpus` when the core is not wholly idle.
    fn select_idle_core(&self, pi: bool, core: u32, cpus: &mut CpuSet, idle_cpu: &mut Option<u32>) -> Option<u32> {
        let mut idle = true;
        for &cpu in self.smt_mask(&core) {
            if !self.available_idle_cpu(cpu) {
                idle = false;
                if idle_cpu.is_none() {
                    if self.choose_sched_idle_rq(cpu, pi) && cpus.contains(cpu) {
                        *idle_cpu = Some(cpu);
                        break;
                    }
                    continue;
                }
                break;
            }
            if idle_cpu.is_none() && cpus.contains(cpu) {
                *idle_cpu = Some(cpu);
            }
        }
        if idle {
            return Some(core);
        }
        cpus.remove_all(self.smt_mask(&core));
        None
    }

    /// `select_idle_capacity()` (fair.c v7.3.4) without uclamp: from `target`, wrapping,
    /// the first idle CPU the task fits on whose core is idle (or any fitting one when no
    /// idle core is hinted); else the best-ranked idle CPU, higher capacity first.
    fn select_idle_capacity(&mut self, p: &Task, w: &Waking, sd: &SchedDomain, target: u32) -> Option<u32> {
        let domains = self.domains;
        let pi = w.p_idle_policy;
        let has_idle_core = domains.sched_smt_active() && self.test_idle_cores(target);
        let mut best_cap = 0;
        let mut best_fits = ASYM_IDLE_THREAD_MISFIT;
        let mut best_cpu = None;
        let mut nr = i32::MAX;
        if self.features.has(Feature::SIS_UTIL)
            && let Some(i) = self.shared_index(target)
        {
            nr = self.llc[i].nr_idle_scan.saturating_add(1);
            if nr == 1 {
                return None;
            }
        }
        for cpu in wrap(domains.span(sd), target) {
            if !p.allows(cpu) {
                continue;
            }
            let preferred_core = !has_idle_core || self.is_core_idle(cpu);
            let cpu_cap = self.capacity_of(cpu);
            if !has_idle_core {
                nr -= 1;
                if nr <= 0 {
                    return best_cpu;
                }
            }
            if !self.choose_idle_cpu(cpu, pi) {
                continue;
            }
            let mut fits = self.util_fits_cpu(w.p_util, cpu);
            if fits > 0 && preferred_core {
                return Some(cpu);
            } else if fits > 0 {
                fits = ASYM_IDLE_THREAD_FITS;
            }
            if preferred_core {
                fits += ASYM_IDLE_CORE_BIAS;
            }
            if fits < best_fits || (fits == best_fits && cpu_cap > best_cap) {
                best_cap = cpu_cap;
                best_cpu = Some(cpu);
                best_fits = fits;
            }
        }
        if has_idle_core && best_fits > ASYM_IDLE_COMPLETE_MISFIT {
            self.set_idle_cores(target, false);
        }
        best_cpu
    }

    /// `sched_balance_find_dst_cpu()` (fair.c v7.3.4): from the domain `level` of
    /// `this_cpu`, repeatedly move to the idlest CPU of the idlest group and descend into
    /// that CPU's next smaller domain with `sd_flag`.
    fn find_idlest_cpu(&self, p: &Task, w: &Waking, level: usize, sd_flag: u32) -> u32 {
        let domains = self.domains;
        let mut cpu = w.this_cpu;
        let mut new_cpu = cpu;
        if !domains.span(&domains.of(cpu)[level]).iter().any(|&c| p.allows(c)) {
            return w.prev_cpu;
        }
        let mut sd = Some(level);
        while let Some(l) = sd {
            let dom = &domains.of(cpu)[l];
            if dom.flags & sd_flag == 0 {
                sd = l.checked_sub(1);
                continue;
            }
            let Some(group) = self.find_idlest_group(dom, p, w, cpu) else {
                sd = l.checked_sub(1);
                continue;
            };
            new_cpu = self.find_idlest_group_cpu(group, p, w, cpu);
            if new_cpu == cpu {
                sd = l.checked_sub(1);
                continue;
            }
            // Now balance at a lower domain level of new_cpu.
            cpu = new_cpu;
            let weight = dom.span_weight;
            sd = None;
            for (j, tmp) in domains.of(cpu).iter().enumerate() {
                if weight <= tmp.span_weight {
                    break;
                }
                if tmp.flags & sd_flag != 0 {
                    sd = Some(j);
                }
            }
        }
        new_cpu
    }

    /// The "task has no contribution or is new" test of `cpu_load_without()` and
    /// `task_running_on_cpu()` (fair.c v7.3.4): whether p's load sits on `cpu`
    /// (`task_cpu(p) == cpu` and p already attached, i.e. not a fork), and whether p is
    /// queued there (an exec: p is running).
    fn p_on(&self, w: &Waking, cpu: u32) -> (bool, bool) {
        let contributes = w.wake_flags & wf::FORK == 0 && cpu == w.prev_cpu;
        (contributes, contributes && w.wake_flags & wf::EXEC != 0)
    }

    /// `update_sg_wakeup_stats()` with `group_classify()` (fair.c v7.3.4): load, util
    /// and runnable of the group's allowed CPUs without p, running tasks without p, CPUs
    /// that would be idle without p, and the group type.
    fn update_sg_wakeup_stats(&self, sd: &SchedDomain, group: &[u32], p: &Task, w: &Waking) -> SgWakeupStats {
        let asym = sd.flags & SD_ASYM_CPUCAPACITY != 0;
        let mut sgs = SgWakeupStats {
            group_load: 0,
            group_util: 0,
            group_runnable: 0,
            group_capacity: group.iter().map(|&c| self.capacity_of(c)).sum(),
            max_capacity: group.iter().map(|&c| self.capacity_of(c)).max().unwrap_or(0),
            sum_nr_running: 0,
            idle_cpus: 0,
            group_weight: group.len() as u32,
            misfit: asym,
            group_type: GroupType::HasSpare,
            avg_load: 0,
        };
        for &i in group.iter().filter(|&&c| p.allows(c)) {
            let rq = self.rq(i);
            let (contributes, queued) = self.p_on(w, i);
            let sub = |v: u64, x: u64| if contributes { v.saturating_sub(x) } else { v };
            sgs.group_load += sub(rq.cpu_load, w.p_h_load);
            sgs.group_util += sub(rq.cpu_util, w.p_util);
            sgs.group_runnable += sub(rq.cpu_runnable, w.p_runnable);
            let nr_running = rq.nr_running.saturating_sub(u32::from(queued));
            sgs.sum_nr_running += nr_running;
            // idle_cpu_without(): the idle task or p itself is current, no pending wakeup.
            if nr_running == 0 && (rq.idle || queued) && !rq.ttwu_pending {
                sgs.idle_cpus += 1;
            }
            if asym && sgs.misfit && self.util_fits_cpu(w.p_util, i) > 0 {
                sgs.misfit = false;
            }
        }
        sgs.group_type = Self::group_classify(sd.imbalance_pct, &sgs);
        if matches!(sgs.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
            sgs.avg_load = sgs.group_load * CAPACITY_SCALE / sgs.group_capacity.max(1);
        }
        sgs
    }

    /// `group_classify()` (fair.c v7.3.4) for the wakeup statistics, with
    /// `group_is_overloaded()` and `group_has_capacity()`.
    fn group_classify(imbalance_pct: u32, sgs: &SgWakeupStats) -> GroupType {
        let pct = u64::from(imbalance_pct);
        let overloaded = sgs.sum_nr_running > sgs.group_weight
            && (sgs.group_capacity * 100 < sgs.group_util * pct || sgs.group_capacity * pct < sgs.group_runnable * 100);
        if overloaded {
            return GroupType::Overloaded;
        }
        if sgs.misfit {
            return GroupType::MisfitTask;
        }
        let has_capacity = sgs.sum_nr_running < sgs.group_weight
            || (sgs.group_capacity * pct >= sgs.group_runnable * 100
                && sgs.group_capacity * 100 > sgs.group_util * pct);
        if has_capacity { GroupType::HasSpare } else { GroupType::FullyBusy }
    }

    /// `update_pick_idlest()` (fair.c v7.3.4): is `sgs` idler than the idlest so far?
    fn update_pick_idlest(idlest: &SgWakeupStats, sgs: &SgWakeupStats) -> bool {
        if sgs.group_type != idlest.group_type {
            return sgs.group_type < idlest.group_type;
        }
        match sgs.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => idlest.avg_load > sgs.avg_load,
            GroupType::MisfitTask => idlest.max_capacity < sgs.max_capacity,
            GroupType::HasSpare => {
                idlest.idle_cpus < sgs.idle_cpus
                    || (idlest.idle_cpus == sgs.idle_cpus && idlest.group_util > sgs.group_util)
            }
        }
    }

    /// `sched_balance_find_dst_group()` (fair.c v7.3.4): the idlest non-local group of
    /// `sd`, or `None` if the local group (holding `this_cpu`) should keep the task.
    fn find_idlest_group(&self, sd: &SchedDomain, p: &Task, w: &Waking, this_cpu: u32) -> Option<&'a [u32]> {
        let domains: &'a Domains = self.domains;
        // The kernel starts from a sentinel: an overloaded group of average load UINT_MAX.
        let mut idlest: Option<&'a [u32]> = None;
        let mut idlest_sgs = SgWakeupStats {
            group_load: 0,
            group_util: 0,
            group_runnable: 0,
            group_capacity: 0,
            max_capacity: 0,
            sum_nr_running: 0,
            idle_cpus: 0,
            group_weight: 0,
            misfit: false,
            group_type: GroupType::Overloaded,
            avg_load: u64::from(u32::MAX),
        };
        let mut local: Option<(&'a [u32], SgWakeupStats)> = None;
        for group in domains.groups(sd) {
            if !group.iter().any(|&c| p.allows(c)) {
                continue;
            }
            let sgs = self.update_sg_wakeup_stats(sd, group, p, w);
            if group.binary_search(&this_cpu).is_ok() {
                local = Some((group, sgs));
            } else if Self::update_pick_idlest(&idlest_sgs, &sgs) {
                idlest = Some(group);
                idlest_sgs = sgs;
            }
        }
        let idlest = idlest?;
        let Some((local_group, local_sgs)) = local else { return Some(idlest) };
        if local_sgs.group_type < idlest_sgs.group_type {
            return None;
        }
        if local_sgs.group_type > idlest_sgs.group_type {
            return Some(idlest);
        }
        match local_sgs.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = NICE_0_LOAD_DOWN * u64::from(sd.imbalance_pct.saturating_sub(100)) / 100;
                if sd.flags & SD_NUMA != 0 && idlest_sgs.avg_load + imbalance >= local_sgs.avg_load {
                    return None;
                }
                if idlest_sgs.avg_load >= local_sgs.avg_load + imbalance {
                    return None;
                }
                if 100 * local_sgs.avg_load <= u64::from(sd.imbalance_pct) * idlest_sgs.avg_load {
                    return None;
                }
            }
            GroupType::MisfitTask => {
                if local_sgs.max_capacity >= idlest_sgs.max_capacity {
                    return None;
                }
            }
            GroupType::HasSpare => {
                if sd.flags & SD_NUMA != 0 {
                    // Keep the task near its waker while the imbalance stays small
                    // (nr_cpus_allowed is never NR_CPUS, so the allowed weight caps it).
                    let allowed_local = local_group.iter().filter(|&&c| p.allows(c)).count() as u32;
                    let imb_numa_nr = allowed_local.min(imb_numa_nr(self.topo, domains, this_cpu, sd));
                    let imbalance = local_sgs.idle_cpus.abs_diff(idlest_sgs.idle_cpus);
                    if adjust_numa_imbalance(imbalance, local_sgs.sum_nr_running + 1, imb_numa_nr) == 0 {
                        return None;
                    }
                }
                if local_sgs.idle_cpus >= idlest_sgs.idle_cpus {
                    return None;
                }
            }
        }
        Some(idlest)
    }

    /// `sched_balance_find_dst_group_cpu()` (fair.c v7.3.4): a CPU running only
    /// SCHED_IDLE tasks at once; else the idle CPU in the shallowest idle state, ties to
    /// the most recently idled; else the least loaded (`this_cpu` if none is less).
    fn find_idlest_group_cpu(&self, group: &[u32], p: &Task, w: &Waking, this_cpu: u32) -> u32 {
        if group.len() == 1 {
            return group[0];
        }
        let mut min_load = u64::MAX;
        let mut min_exit_latency = u64::MAX;
        let mut latest_idle_timestamp = 0;
        let mut least_loaded_cpu = this_cpu;
        let mut shallowest_idle_cpu = None;
        for &i in group.iter().filter(|&&c| p.allows(c)) {
            if self.choose_sched_idle_rq(i, w.p_idle_policy) {
                return i;
            }
            if self.available_idle_cpu(i) {
                let (exit_latency, idle_stamp) = self.cpus.idle_exit(i);
                if exit_latency < min_exit_latency {
                    min_exit_latency = exit_latency;
                    latest_idle_timestamp = idle_stamp;
                    shallowest_idle_cpu = Some(i);
                } else if exit_latency == min_exit_latency && idle_stamp > latest_idle_timestamp {
                    latest_idle_timestamp = idle_stamp;
                    shallowest_idle_cpu = Some(i);
                }
            } else if shallowest_idle_cpu.is_none() {
                let load = self.cpus.cpu_load(i);
                if load < min_load {
                    min_load = load;
                    least_loaded_cpu = i;
                }
            }
        }
        shallowest_idle_cpu.unwrap_or(least_loaded_cpu)
    }
}

/// `adjust_numa_imbalance()` (fair.c v7.3.4): a small imbalance (at most
/// `NUMA_IMBALANCE_MIN`) is ignored while the destination runs at most `imb_numa_nr`.
pub(crate) fn adjust_numa_imbalance(imbalance: u32, dst_running: u32, imb_numa_nr: u32) -> u32 {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imbalance
}

/// `for_each_cpu_wrap(cpu, span, start)` (include/linux/cpumask.h v7.3.4): the CPUs of
/// the ascending `span` from the first one at or after `start`, wrapping around.
fn wrap(span: &[u32], start: u32) -> impl Iterator<Item = u32> + '_ {
    let first = span.partition_point(|&c| c < start);
    span[first..].iter().chain(&span[..first]).copied()
}

/// A mutable CPU mask over one domain span (`select_rq_mask` = span & `p->cpus_ptr`): the
/// affinity bitmap read in place, and the CPUs taken out since (`cpumask_andnot`), so building
/// it costs nothing however large the span is.
struct CpuSet<'s> {
    span: &'s [u32],
    allowed: &'s CpuMask,
    /// One bit per CPU removed: CPUs below [`INLINE_CPUS`] in place (no allocation on a
    /// wakeup's scan), the others in a vector grown at their first removal.
    removed: [u64; INLINE_WORDS],
    removed_high: Vec<u64>,
}

/// Words of [`CpuSet::removed`] kept inline: CPUs 0..512.
const INLINE_WORDS: usize = 8;
const INLINE_CPUS: usize = INLINE_WORDS * 64;

impl<'s> CpuSet<'s> {
    /// `cpumask_and(cpus, span, p->cpus_ptr)` (include/linux/cpumask.h v7.3.4).
    fn new(span: &'s [u32], allowed: &'s CpuMask) -> CpuSet<'s> {
        CpuSet { span, allowed, removed: [0; INLINE_WORDS], removed_high: Vec::new() }
    }
    /// `cpumask_empty()` (include/linux/cpumask.h v7.3.4), before any removal.
    fn is_empty(&self) -> bool {
        !self.span.iter().any(|&c| self.allowed.contains(c))
    }
    fn is_removed(&self, cpu: u32) -> bool {
        let (w, bit) = (cpu as usize / 64, 1u64 << (cpu % 64));
        match self.removed.get(w) {
            Some(word) => word & bit != 0,
            None => self.removed_high.get(w - INLINE_WORDS).is_some_and(|word| word & bit != 0),
        }
    }
    /// `cpumask_test_cpu()` (include/linux/cpumask.h v7.3.4) for a CPU of the span.
    fn contains_span_cpu(&self, cpu: u32) -> bool {
        self.allowed.contains(cpu) && !self.is_removed(cpu)
    }
    /// `cpumask_test_cpu()` (include/linux/cpumask.h v7.3.4) for any CPU.
    fn contains(&self, cpu: u32) -> bool {
        self.contains_span_cpu(cpu) && self.span.binary_search(&cpu).is_ok()
    }
    /// `cpumask_andnot(self, self, cpus)` (include/linux/cpumask.h v7.3.4).
    fn remove_all(&mut self, cpus: &[u32]) {
        for &c in cpus {
            let (w, bit) = (c as usize / 64, 1u64 << (c % 64));
            if c as usize >= INLINE_CPUS {
                let hw = w - INLINE_WORDS;
                if self.removed_high.len() <= hw {
                    self.removed_high.resize(hw + 1, 0);
                }
                self.removed_high[hw] |= bit;
            } else {
                self.removed[w] |= bit;
            }
        }
    }
}
