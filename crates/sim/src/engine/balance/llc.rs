//! Cache-aware load balancing, CONFIG_SCHED_CACHE (kernel/sched/fair.c and topology.c of
//! 7.3.4; 7.2.12 computes the same: it keeps the group in the `mm` and tests asym packing in
//! another order, which no topology here has).
//!
//! Each process (`mm`, here [`crate::program::TaskSpec::mm`]) has a `sched_cache_group`: its
//! runtime per CPU, decayed by half every `llc_epoch_period` jiffies against the CPU's total
//! (`account_mm_sched`, from every `update_curr`). Once per epoch one of its threads, at a
//! tick, scans every LLC for the process's occupancy (`task_cache_work`) and names the CPU of
//! the busiest LLC its preferred CPU when that LLC holds more than twice the occupancy of the
//! current one; its threads take that LLC as `preferred_llc` when they next run. Balancing then
//! (a) classifies a remote group holding tasks that prefer the balancing CPU's LLC as
//! `group_llc_balance` and pulls them with `migrate_llc_task` (actively if they run), and
//! (b) refuses generic pulls that take a task out of its preferred LLC
//! (`migrate_degrades_llc`, `alb_break_llc`), unless both LLCs are busy by `llc_overaggr_pct`
//! or balancing keeps failing.
//!
//! No hook in the wakeup path: `select_task_rq_fair()` of 7.3.4 never reads `preferred_llc`.
//!
//! The model's deviations: the per-runqueue counters (`llc_counts`, `nr_pref_llc_running`)
//! are recomputed from the queued tasks when read, which is what the kernel's increments keep
//! them equal to (there is no hotplug here); `exceed_llc_capacity()` is always false (its
//! footprint comes from NUMA-balancing faults, which are not modelled, so it is 0);
//! `task_cache_work` runs at the tick that queues it instead of the task's next return to user
//! mode, and costs no CPU time.

use super::detach::{LBF_ACTIVE_LB_LLC, LbEnv, MigrationType};
use super::lb_stats::{SgLbStats, fits_capacity};
use crate::engine::Sim;
use crate::task::{TaskId, TaskState};
use crate::topology::{Domains, SD_ASYM_CPUCAPACITY, SD_SHARE_LLC, SpanId, Topology};

/// `NICE_0_LOAD` on 64-bit (`1 << (2 * SCHED_FIXEDPOINT_SHIFT)`).
const NICE_0_LOAD: u64 = 1 << 20;

/// `struct sched_cache_time`: one process's decayed runtime on one CPU, `[runtime, epoch]`
/// (integers only, so that a table of them is allocated zeroed and its pages become resident
/// only where written).
type CacheTime = [u64; 2];
const RUNTIME: usize = 0;
const EPOCH: usize = 1;

/// `struct sched_cache_group` of one process (plus `signal->nr_threads`).
#[derive(Clone, Copy, Debug, Default)]
struct CacheGroup {
    /// `grp->cpu`: the preferred CPU, whose LLC is the preferred LLC (`None` = -1).
    cpu: Option<u32>,
    epoch: u64,
    next_scan: u64,
    nr_running_avg: u64,
    /// Live threads of the process (`get_nr_threads()`).
    nr_threads: u32,
}

/// The `struct rq` epoch fields.
#[derive(Clone, Copy, Debug, Default)]
struct CpuEpoch {
    cpu_epoch: u64,
    cpu_epoch_next: u64,
    cpu_runtime: u64,
}

/// `enum llc_mig` (fair.c 7.3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LlcMig {
    /// Respect the LLC preference: do not migrate.
    Forbid,
    /// Migrate for the LLC preference.
    Llc,
    /// Let generic load balancing decide.
    Unrestricted,
}

/// All cache-aware state of a simulation.
pub(in crate::engine) struct CacheSched {
    /// `sched_cache_active`: built in, more than one LLC (`sched_cache_present`) and
    /// `llc_balancing/enabled`.
    active: bool,
    /// By `mm`.
    groups: Vec<CacheGroup>,
    /// By `cpu * nr_mm + mm` ([`CacheSched::pcpu_idx`]): `grp->pcpu_sched`, a per-CPU
    /// allocation, so a CPU's entries of all processes lie together as in the kernel's
    /// per-CPU areas. (By process first, a CPU running a ring of 96 processes touched 96 lines
    /// 3 KiB apart; `lat_ctx -P 192 -s 0 96` spent 8 % of its time missing them.) It holds
    /// processes x CPUs entries (56 MB for that run); an entry that never had runtime is
    /// never written ([`update_mm_sched`]), so its page stays the kernel's zero page until a
    /// process runs there.
    pcpu: Vec<CacheTime>,
    nr_mm: usize,
    rq: Vec<CpuEpoch>,
    ncpus: usize,
    /// `cpu_smt_num_threads`.
    smt_threads: u64,
    /// Scratch for `task_cache_work`: the LLCs already scanned in this pass (by `sd_llc_id`).
    scanned: Vec<u32>,
    pass: u32,
}

impl CacheSched {
    /// `sched_cache_set(has_multi_llcs)` after `build_sched_domains()` (topology.c 7.3.4): an
    /// LLC domain of more than one CPU with a larger parent makes the hardware support present.
    pub(super) fn new(domains: &Domains, topo: &Topology, built_in: bool, enabled: bool) -> CacheSched {
        let ncpus = domains.nr_cpus() as usize;
        let multi_llcs = (0..domains.nr_cpus()).any(|cpu| {
            domains.sd_llc_level(cpu).is_some_and(|l| {
                let sds = domains.of(cpu);
                sds[l].span_weight > 1 && sds[l + 1..].iter().any(|p| p.span_weight > sds[l].span_weight)
            })
        });
        let mut threads = vec![0u32; topo.cpus.iter().map(|c| c.smt_id + 1).max().unwrap_or(1) as usize];
        for c in &topo.cpus {
            threads[c.smt_id as usize] += 1;
        }
        let nllc = (0..domains.nr_cpus()).map(|c| domains.sd_llc_id(c) + 1).max().unwrap_or(0);
        CacheSched {
            active: built_in && enabled && multi_llcs,
            groups: Vec::new(),
            pcpu: Vec::new(),
            nr_mm: 0,
            rq: vec![CpuEpoch::default(); ncpus],
            ncpus,
            smt_threads: u64::from(threads.into_iter().max().unwrap_or(1).max(1)),
            scanned: vec![0; nllc as usize],
            pass: 0,
        }
    }

    /// `mm_init_sched()` for processes `0..nr_mm`: no preferred CPU, epochs 0 (every CPU's
    /// epoch at boot), first scan allowed at once.
    pub(in crate::engine) fn init_processes(&mut self, nr_mm: usize) {
        if !self.active {
            return;
        }
        self.groups = vec![CacheGroup::default(); nr_mm];
        self.pcpu = vec![[0; 2]; nr_mm * self.ncpus];
        self.nr_mm = nr_mm;
    }

    /// `per_cpu_ptr(grp->pcpu_sched, cpu)`: where process `mm`'s entry for `cpu` is.
    fn pcpu_idx(&self, mm: usize, cpu: u32) -> usize {
        cpu as usize * self.nr_mm + mm
    }

    pub(in crate::engine) fn active(&self) -> bool {
        self.active
    }

    /// `copy_process()` / `exit_notify()`: the process gains or loses a thread.
    pub(in crate::engine) fn thread_started(&mut self, mm: u32) {
        if let Some(g) = self.groups.get_mut(mm as usize) {
            g.nr_threads += 1;
        }
    }

    pub(in crate::engine) fn thread_exited(&mut self, mm: u32) {
        if let Some(g) = self.groups.get_mut(mm as usize) {
            g.nr_threads = g.nr_threads.saturating_sub(1);
        }
    }
}

/// `__update_mm_sched()` (fair.c 7.3.4): advance the CPU's epoch to `now` (jiffies), halving
/// its runtime once per epoch passed, then bring the process's per-CPU runtime to the same
/// epoch.
fn update_mm_sched(rq: &mut CpuEpoch, pcpu: &mut CacheTime, now: u64, period: u64) {
    let delta = now as i64 - rq.cpu_epoch_next as i64;
    if delta > 0 {
        let n = (delta as u64).div_ceil(period);
        rq.cpu_epoch += n;
        rq.cpu_epoch_next += n * period;
        rq.cpu_runtime = shr_u64(rq.cpu_runtime, n);
    }
    // An entry without runtime is left as it is, whatever its epoch: halving 0 gives 0, and
    // `account_mm_sched` dates it before it adds runtime. (The kernel writes the epoch; the
    // values read are the same either way.)
    let n = rq.cpu_epoch - pcpu[EPOCH];
    if n != 0 && pcpu[RUNTIME] != 0 {
        pcpu[EPOCH] += n;
        pcpu[RUNTIME] = shr_u64(pcpu[RUNTIME], n);
    }
}

/// `__shr_u64()`: a shift by 64 or more gives 0.
fn shr_u64(v: u64, n: u64) -> u64 {
    if n >= 64 { 0 } else { v >> n }
}

impl Sim {
    fn llc_period(&self) -> u64 {
        self.cfg.sysctl.llc.epoch_period(self.cfg.hz).max(1)
    }

    /// The process of `p`, or `None` for a kernel thread (no mm: `account_mm_sched()` and the
    /// scan are for tasks with an mm only).
    fn mm_of(&self, p: TaskId) -> Option<usize> {
        let mm = self.tasks[p.idx()].mm;
        (mm != crate::task::NO_MM).then_some(mm as usize)
    }

    /// `llc_id(cpu)`: `sd_llc_id`.
    fn llc_id(&self, cpu: u32) -> u32 {
        self.domains.sd_llc_id(cpu)
    }

    /// Hands the runtime `update_curr()` charged on `cpu` to `account_mm_sched()`, at the
    /// time it was charged. Called before every use of the runqueue and before cache-aware
    /// state of the CPU is read, so the kernel's order is kept.
    pub(in crate::engine) fn llc_flush(&mut self, cpu: u32) {
        let pending = &mut self.rqs[cpu as usize].cfs.mm_runtime;
        // Most calls find nothing charged: test before `take()`, which would store.
        if pending.is_none() {
            return;
        }
        let Some((p, at, delta)) = pending.take() else { return };
        if self.lb.cache.active {
            self.account_mm_sched(cpu, p, at, delta);
        }
    }

    /// `account_mm_sched()` (fair.c 7.3.4): charge `delta` ns of `p` on `cpu` at time `at`.
    fn account_mm_sched(&mut self, cpu: u32, p: TaskId, at: u64, delta: u64) {
        let Some(mm) = self.mm_of(p) else { return };
        let now = at / self.params.tick_nsec;
        let period = self.llc_period();
        let timeout = i64::from(self.cfg.sysctl.llc.epoch_affinity_timeout);
        let c = &mut self.lb.cache;
        let k = c.pcpu_idx(mm, cpu);
        let (rq, pcpu) = (&mut c.rq[cpu as usize], &mut c.pcpu[k]);
        update_mm_sched(rq, pcpu, now, period);
        if pcpu[RUNTIME] == 0 {
            pcpu[EPOCH] = rq.cpu_epoch;
        }
        pcpu[RUNTIME] += delta;
        rq.cpu_runtime += delta;
        let stale = rq.cpu_epoch as i64 - c.groups[mm].epoch as i64 > timeout;
        // A process whose threads have not scanned for a while loses its preference.
        if stale || self.invalid_llc_nr(mm, cpu) {
            self.lb.cache.groups[mm].cpu = None;
        }
        let llc = self.lb.cache.groups[mm].cpu.map(|c| self.llc_id(c));
        // task_running_on_cpu(): the task is queued on this CPU.
        if self.tasks[p.idx()].cpu == cpu && self.ents[p.idx()].on_rq {
            self.tasks[p.idx()].preferred_llc = llc;
        }
    }

    /// `invalid_llc_nr()` (fair.c 7.3.4): a single-threaded process, or more threads running
    /// on average than 80 % of an LLC's cores (`llc_aggr_tolerance` scales the LLC), has no
    /// preferred LLC.
    fn invalid_llc_nr(&self, mm: usize, cpu: u32) -> bool {
        let g = &self.lb.cache.groups[mm];
        if g.nr_threads <= 1 {
            return true;
        }
        // get_sched_cache_scale(1)
        let scale = match self.cfg.sysctl.llc.aggr_tolerance {
            0 => 0,
            t if t >= 100 => return false,
            t => u64::from(t),
        };
        let llc_size = u64::from(self.domains.sd_llc_size(cpu));
        !fits_capacity(g.nr_running_avg * self.lb.cache.smt_threads, scale * llc_size)
    }

    /// `task_tick_cache()` (fair.c 7.3.4) from the tick of `cpu` running `p`: once per epoch of
    /// that CPU, queue the process's scan on the task; the scan runs at once here.
    pub(in crate::engine) fn task_tick_cache(&mut self, cpu: u32, p: TaskId) {
        if !self.lb.cache.active {
            return;
        }
        self.llc_flush(cpu);
        let Some(mm) = self.mm_of(p) else { return };
        let epoch = self.lb.cache.rq[cpu as usize].cpu_epoch;
        let g = &mut self.lb.cache.groups[mm];
        // time_after_eq(grp->epoch, epoch): avoid moving backwards.
        if g.epoch as i64 - epoch as i64 >= 0 {
            return;
        }
        if !self.tasks[p.idx()].cache_work_pending {
            self.tasks[p.idx()].cache_work_pending = true;
            g.epoch = epoch;
        }
    }

    /// Runs a queued `task_cache_work` of `p` (the task-work of `task_tick_cache`).
    pub(in crate::engine) fn run_cache_work(&mut self, p: TaskId) {
        if std::mem::take(&mut self.tasks[p.idx()].cache_work_pending) {
            self.task_cache_work(p);
        }
    }

    /// `fraction_mm_sched()` (fair.c 7.3.4): the process's share of `cpu`'s recent runtime,
    /// in `NICE_0_LOAD` units.
    fn fraction_mm_sched(&mut self, cpu: u32, mm: usize, now: u64, period: u64) -> u64 {
        let c = &mut self.lb.cache;
        let k = c.pcpu_idx(mm, cpu);
        let (rq, pcpu) = (&mut c.rq[cpu as usize], &mut c.pcpu[k]);
        update_mm_sched(rq, pcpu, now, period);
        NICE_0_LOAD * pcpu[RUNTIME] / (rq.cpu_runtime + 1)
    }

    /// `task_cache_work()` (fair.c 7.3.4): at most once per epoch per process, sum the
    /// process's occupancy over each LLC and move the preferred CPU to the busiest LLC's
    /// busiest CPU when that LLC has more than twice the occupancy of the preferred one; count
    /// the CPUs running one of its threads into `nr_running_avg`.
    fn task_cache_work(&mut self, p: TaskId) {
        if self.tasks[p.idx()].state == TaskState::Dead {
            return;
        }
        let Some(mm) = self.mm_of(p) else { return };
        let now = self.jiffies();
        let period = self.llc_period();
        let g = &mut self.lb.cache.groups[mm];
        if (now as i64).wrapping_sub(g.next_scan as i64) < 0 {
            return;
        }
        // Only one thread scans per period.
        g.next_scan = now + period;
        let curr_cpu = self.tasks[p.idx()].cpu;
        if self.invalid_llc_nr(mm, curr_cpu) {
            self.lb.cache.groups[mm].cpu = None;
            return;
        }
        let pref_llc = self.lb.cache.groups[mm].cpu.map(|c| self.llc_id(c));
        let c = &mut self.lb.cache;
        c.pass = c.pass.wrapping_add(1).max(1);
        let pass = c.pass;
        let (mut m_a_occ, mut m_a_cpu, mut curr_m_a_occ, mut nr_running) = (0u64, None, 0u64, 0u64);
        for cpu in 0..self.rqs.len() as u32 {
            let Some(level) = self.domains.sd_llc_level(cpu) else { continue };
            let llc = self.llc_id(cpu);
            if std::mem::replace(&mut self.lb.cache.scanned[llc as usize], pass) == pass {
                continue;
            }
            let (mut a_occ, mut m_occ, mut m_cpu) = (0u64, 0u64, None);
            let span = self.domains.of(cpu)[level].span;
            for k in 0..self.domains.cpus(span).len() {
                let i = self.domains.cpus(span)[k];
                self.llc_flush(i);
                let occ = self.fraction_mm_sched(i, mm, now, period);
                a_occ += occ;
                if occ > m_occ {
                    m_occ = occ;
                    m_cpu = Some(i);
                }
                if let Some(cur) = self.rqs[i as usize].curr
                    && self.tasks[cur.idx()].state != TaskState::Dead
                    && self.mm_of(cur) == Some(mm)
                {
                    nr_running += 1;
                }
            }
            // Accumulated, not per-CPU, occupancy: it favours the LLC with more threads.
            if a_occ > m_a_occ {
                m_a_occ = a_occ;
                m_a_cpu = m_cpu;
            }
            if pref_llc == Some(llc) {
                curr_m_a_occ = a_occ;
            }
        }
        let factor = self.domains.sd_llc_size(curr_cpu);
        let g = &mut self.lb.cache.groups[mm];
        // 2x: keep the preferred LLC stable (fair.c's reasons: at least one more busy CPU).
        if m_a_occ > 2 * curr_m_a_occ {
            g.cpu = m_a_cpu;
        }
        // update_avg_scale(): an EWMA whose divisor grows with the LLC (2..8).
        let divisor = i64::from((factor >> 2).clamp(2, 8));
        let diff = nr_running.wrapping_sub(g.nr_running_avg) as i64;
        g.nr_running_avg = g.nr_running_avg.wrapping_add((diff / divisor) as u64);
    }

    /// `get_llc_stats()` (fair.c 7.3.4): the recorded utilisation and capacity of `cpu`'s LLC.
    fn llc_stats(&self, cpu: u32) -> Option<(u64, u64)> {
        self.domains.sd_llc(cpu)?;
        let s = self.llc.get(self.llc_id(cpu) as usize)?;
        Some((s.util_avg, s.capacity))
    }

    /// `fits_llc_capacity()` (fair.c 7.3.4): below `llc_overaggr_pct` of the LLC's capacity
    /// (half again as much without SMT).
    fn fits_llc_capacity(&self, util: u64, max: u64) -> bool {
        let mut pct = u64::from(self.cfg.sysctl.llc.overaggr_pct);
        if self.lb.cache.smt_threads == 1 {
            pct = pct * 3 / 2;
        }
        util * 100 < max * pct
    }

    /// `util_greater()` (fair.c 7.3.4): `a` exceeds `b` by more than `llc_imb_pct`.
    fn util_greater(&self, a: u64, b: u64) -> bool {
        a * 100 > b * (100 + u64::from(self.cfg.sysctl.llc.imb_pct))
    }

    /// `can_migrate_llc()` (fair.c 7.3.4): may a task of utilisation `tsk_util` move from
    /// `src`'s LLC to `dst`'s, towards its preferred LLC (`to_pref`) or away from it?
    pub(super) fn can_migrate_llc(&self, src: u32, dst: u32, tsk_util: u64, to_pref: bool) -> LlcMig {
        let (Some((src_util, src_cap)), Some((dst_util, dst_cap))) = (self.llc_stats(src), self.llc_stats(dst)) else {
            return LlcMig::Unrestricted;
        };
        let src_util = src_util.saturating_sub(tsk_util);
        let dst_util = dst_util + tsk_util;
        let (src_fits, dst_fits) =
            (self.fits_llc_capacity(src_util, src_cap), self.fits_llc_capacity(dst_util, dst_cap));
        if !dst_fits && !src_fits {
            return LlcMig::Unrestricted;
        }
        if to_pref {
            // Do not overload the preferred LLC far beyond the source.
            if !dst_fits && self.util_greater(dst_util, src_util) {
                return LlcMig::Forbid;
            }
        } else if src_fits || !self.util_greater(src_util, dst_util) {
            // Do not leave the preferred LLC idle, nor make the other one nearly as busy.
            return LlcMig::Forbid;
        }
        LlcMig::Llc
    }

    /// `task_fits_cpu()` without uclamp or thermal pressure: `fits_capacity(util_est)`.
    fn task_fits_cpu(&self, p: TaskId, cpu: u32) -> bool {
        fits_capacity(self.ents[p.idx()].pelt.task_util_est(), u64::from(self.topo.cpus[cpu as usize].capacity))
    }

    /// `task_misfits_asym_cpu()` (fair.c 7.3.4): on asymmetric capacity, do not make a task
    /// that fits its source a misfit at the destination.
    fn task_misfits_asym_cpu(&self, env: &LbEnv, p: Option<TaskId>) -> bool {
        let sd_flags = self.domains.of(env.this_cpu)[env.level].flags;
        p.is_some_and(|p| {
            sd_flags & SD_ASYM_CPUCAPACITY != 0
                && !self.task_fits_cpu(p, env.dst_cpu)
                && self.task_fits_cpu(p, env.src_cpu)
        })
    }

    /// `can_migrate_llc_task()` (fair.c 7.3.4). The asym-packing exception of 7.3.4 needs
    /// SD_ASYM_PACKING, which no topology here has.
    pub(super) fn can_migrate_llc_task(&mut self, env: &LbEnv, p: TaskId) -> LlcMig {
        if self.task_misfits_asym_cpu(env, Some(p)) {
            return LlcMig::Forbid;
        }
        let (src, dst) = (env.src_cpu, env.dst_cpu);
        let Some(mm) = self.mm_of(p) else { return LlcMig::Unrestricted };
        let Some(cpu) = self.lb.cache.groups[mm].cpu else { return LlcMig::Unrestricted };
        if self.topo.cpus_share_cache(src, dst) {
            return LlcMig::Unrestricted;
        }
        // Too many threads: no cache-aware balancing for this process.
        if self.invalid_llc_nr(mm, dst) {
            self.lb.cache.groups[mm].cpu = None;
            return LlcMig::Unrestricted;
        }
        let to_pref = if self.topo.cpus_share_cache(dst, cpu) {
            true
        } else if self.topo.cpus_share_cache(src, cpu) {
            false
        } else {
            return LlcMig::Unrestricted;
        };
        self.can_migrate_llc(src, dst, self.ents[p.idx()].pelt.avg.util_avg, to_pref)
    }

    /// How many of the queued tasks of `cpu` (the kernel's `cfs_tasks`: curr and the tree)
    /// satisfy `pred`. A count, not an iterator: the balancer asks it for every CPU of every
    /// group it scans, and a boxed iterator was one allocation per CPU.
    fn count_queued(&self, cpu: u32, pred: impl Fn(TaskId) -> bool) -> u32 {
        if !self.gents.is_empty() {
            // ≤7.2's levels: the root's tree holds group entities; the CPU's queued tasks
            // are found among all tasks.
            return self.queued_tasks_hier(cpu).filter(|&t| pred(t)).count() as u32;
        }
        let cfs = &self.rqs[cpu as usize].cfs;
        // An idle CPU (about half of those a 192-CPU hackbench's balancer scans).
        if cfs.curr.is_none() && cfs.timeline.is_empty() {
            return 0;
        }
        cfs.curr.into_iter().chain(cfs.timeline.iter().map(|k| TaskId(k.id))).filter(|&t| pred(t)).count() as u32
    }

    /// `rq->sd->llc_counts[llc]`: tasks queued on `cpu` that prefer `llc` (0 for a CPU without
    /// an LLC domain, which has no counts).
    pub(super) fn llc_count(&mut self, cpu: u32, llc: u32) -> u32 {
        if self.domains.sd_llc(cpu).is_none() {
            return 0;
        }
        self.llc_flush(cpu);
        self.count_queued(cpu, |t| self.tasks[t.idx()].preferred_llc == Some(llc))
    }

    /// `rq->nr_pref_llc_running`: runnable (not delayed) tasks queued on `cpu` that prefer its
    /// LLC.
    fn nr_pref_llc_running(&mut self, cpu: u32) -> u32 {
        self.llc_flush(cpu);
        let llc = self.llc_id(cpu);
        self.count_queued(cpu, |t| self.tasks[t.idx()].preferred_llc == Some(llc) && !self.ents[t.idx()].sched_delayed)
    }

    /// `alb_break_llc()` (fair.c 7.3.4): active balancing would take the only runnable task(s)
    /// of the source out of their preferred LLC against `can_migrate_llc()`.
    pub(super) fn alb_break_llc(&mut self, env: &LbEnv) -> bool {
        if !self.lb.cache.active || self.topo.cpus_share_cache(env.src_cpu, env.dst_cpu) {
            return false;
        }
        let nr_pref = self.nr_pref_llc_running(env.src_cpu);
        let src = &self.rqs[env.src_cpu as usize];
        if nr_pref == 0 || nr_pref != src.cfs.h_nr_runnable {
            return false;
        }
        if env.migration_type == MigrationType::Misfit {
            return false;
        }
        if src.cfs.h_nr_queued <= 1 {
            return true;
        }
        let cur = src.curr;
        let util = cur.map_or(0, |c| self.ents[c.idx()].pelt.avg.util_avg);
        self.task_misfits_asym_cpu(env, cur)
            || self.can_migrate_llc(env.src_cpu, env.dst_cpu, util, false) == LlcMig::Forbid
    }

    /// `migrate_llc_task_wrong_dst()` (fair.c 7.3.4): under `migrate_llc_task` (passive) or
    /// `LBF_ACTIVE_LB_LLC` (the stopper), only tasks preferring the destination's LLC move.
    pub(super) fn migrate_llc_task_wrong_dst(&self, p: TaskId, env: &LbEnv) -> bool {
        self.lb.cache.active
            && (env.migration_type == MigrationType::Llc || env.flags & LBF_ACTIVE_LB_LLC != 0)
            && self.tasks[p.idx()].preferred_llc != Some(self.llc_id(env.dst_cpu))
    }

    /// `migrate_degrades_llc()` (fair.c 7.3.4): moving `p` would break its LLC locality. Lifted
    /// once the domain has failed `cache_nice_tries + 1` times.
    pub(super) fn migrate_degrades_llc(&mut self, p: TaskId, env: &LbEnv) -> bool {
        if !self.lb.cache.active {
            return false;
        }
        let sd = &self.domains.of(env.this_cpu)[env.level];
        // The kernel writes `nr_balance_failed >= cache_nice_tries + 1`; the same for integers.
        if self.lb.cpus[env.this_cpu as usize].sd[env.level].nr_balance_failed > sd.cache_nice_tries {
            return false;
        }
        if self.migrate_llc_task_wrong_dst(p, env) {
            return true;
        }
        self.can_migrate_llc_task(env, p) == LlcMig::Forbid
    }

    /// `llc_balance()` (fair.c 7.3.4): group `span` holds tasks preferring the balancing CPU's
    /// LLC and moving one there is allowed.
    pub(super) fn llc_balance(&self, env: &LbEnv, sgs: &SgLbStats, span: SpanId) -> bool {
        if !self.lb.cache.active {
            return false;
        }
        let sd = &self.domains.of(env.this_cpu)[env.level];
        if sd.flags & SD_SHARE_LLC != 0 {
            return false;
        }
        if sd.flags & SD_ASYM_CPUCAPACITY != 0 && sgs.group_misfit_task_load != 0 {
            return false;
        }
        if self.lb.cpus[env.this_cpu as usize].sd[env.level].nr_balance_failed > sd.cache_nice_tries {
            return false;
        }
        let first = self.domains.cpus(span)[0];
        sgs.nr_pref_dst_llc != 0 && self.can_migrate_llc(first, env.dst_cpu, 0, true) == LlcMig::Llc
    }

    /// `record_sg_llc_stats()` (fair.c 7.3.4): periodic balancing of the domain just above the
    /// LLC stores each LLC group's utilisation and capacity in its `sd_llc_shared`.
    pub(super) fn record_sg_llc_stats(&mut self, env: &LbEnv, sgs: &SgLbStats, span: SpanId) {
        if !self.lb.cache.active || env.idle == super::IdleType::NewlyIdle {
            return;
        }
        if env.level == 0 || self.domains.sd_llc_level(env.dst_cpu) != Some(env.level - 1) {
            return;
        }
        let first = self.domains.cpus(span)[0];
        if self.domains.sd_llc(first).is_none() {
            return;
        }
        let i = self.llc_id(first) as usize;
        if let Some(s) = self.llc.get_mut(i) {
            s.util_avg = sgs.group_util;
            s.capacity = sgs.group_capacity;
        }
    }
}
